/* row_layouts.h - how the collective write tests share rows between the
 * ranks: an even split of 1000, very uneven shares, or shares where every
 * other rank (and the last) holds none. */
#ifndef CF_TEST_ROW_LAYOUTS_H
#define CF_TEST_ROW_LAYOUTS_H

#include "mpi_harness.h"

enum { EVEN, UNEVEN, ZEROS, NLAYOUTS };
static const char *const layout_names[] = { "even", "uneven", "zeros" };

/* Rows of `rank` of `size` ranks under `layout`. */
static inline int64_t layout_rows(int layout, int rank, int size)
{
    switch (layout) {
    case EVEN: return cf_plan_share(1000, size, rank, NULL);
    case UNEVEN: return (int64_t)(rank + 1) * (rank + 1) * 37 + (rank == 0 ? 5 : 0);
    default: return (rank % 2 == 1 || (rank == size - 1 && size > 1)) ? 0 : (int64_t)(rank + 1) * 53;
    }
}

/* Rows of all the ranks of this run under `layout`. */
static inline int64_t total_rows(int layout)
{
    int64_t t = 0;
    for (int r = 0; r < cf_test_size(); r++) t += layout_rows(layout, r, cf_test_size());
    return t;
}

/* The first row of `rank` of this run under `layout`: the rows of the
 * ranks before it. */
static inline int64_t first_row_of(int layout, int rank)
{
    int64_t t = 0;
    for (int r = 0; r < rank; r++) t += layout_rows(layout, r, cf_test_size());
    return t;
}

#endif
