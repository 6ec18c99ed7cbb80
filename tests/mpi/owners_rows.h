/* owners_rows.h - the rows of the chunk-owner MPI tests: seeded random
 * values of a 2-component f8 column (a NaN now and then), random uneven
 * splits of a row range between the ranks, and the one-process write that
 * is the reference. */
#ifndef CF_TEST_OWNERS_ROWS_H
#define CF_TEST_OWNERS_ROWS_H

#include "mpi_harness.h"

#include <math.h>

enum { NMEMB = 2 };

static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    return x ^ (x >> 33);
}

static double value(int64_t row, int j, uint64_t seed)
{
    uint64_t h = mix((uint64_t)row * 2 + (uint64_t)j + seed);
    if (h % 997 == 0) return NAN;
    return ((double)(h >> 11) / 9007199254740992.0 - 0.5) * 1e6 + (double)j;
}

/* Rows [a, b) cut at random between the ranks (lo[r] is rank r's first
 * row, lo[size] = b): sorted, uneven, some ranks empty (rank 1 for odd
 * seeds, with more than 2 ranks). */
static void split(uint64_t seed, int64_t a, int64_t b, int64_t *lo)
{
    int size = cf_test_size();
    lo[0] = a;
    lo[size] = b;
    for (int r = 1; r < size; r++) lo[r] = a + (int64_t)(mix(seed * 131 + (uint64_t)r) % (uint64_t)(b - a + 1));
    for (int r = 1; r < size; r++) /* insertion sort */
        for (int k = r; k > 1 && lo[k] < lo[k - 1]; k--) {
            int64_t t = lo[k];
            lo[k] = lo[k - 1];
            lo[k - 1] = t;
        }
    if (size > 2 && seed % 2) lo[2] = lo[1];
}

/* Rows [first, first + n) of the seed's values, NMEMB to a row (malloc'd). */
static double *rows_of(int64_t first, int64_t n, uint64_t seed)
{
    double *v = malloc((size_t)(n > 0 ? n : 1) * NMEMB * sizeof *v);
    for (int64_t i = 0; i < n; i++)
        for (int j = 0; j < NMEMB; j++) v[i * NMEMB + j] = value(first + i, j, seed);
    return v;
}

/* Column name of the File dir written by one process: rows [0, rows) of
 * the seed's values in nfile blobs, chunk rows a chunk, committed. */
static void write_serial(const char *dir, const char *name, int64_t rows, int64_t nfile, int64_t chunk,
                         uint64_t seed)
{
    cf_error err;
    cf_file *f = NULL;
    cf_column *c = NULL;
    CHECK_OK(cf_file_open(&f, dir, CF_OPEN_WRITE | CF_OPEN_CREATE, &err), &err);
    CHECK_OK(cf_column_create(&c, f, name, "f8", NMEMB, rows, nfile, &err), &err);
    CHECK_OK(cf_column_set_chunk_rows(c, chunk, &err), &err);
    double *v = rows_of(0, rows, seed);
    CHECK_OK(cf_column_write(c, 0, rows, v, NULL, 8 * NMEMB, 8, &err), &err);
    free(v);
    CHECK_OK(cf_column_close(c, &err), &err);
    cf_file_close(f);
}

#endif
