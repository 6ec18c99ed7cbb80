/* chunk_owner.c - the owner rank of each statistics chunk (chunk_owner.h). */
#include "chunk_owner.h"

#include "colfile_binding.h"

void cf__owner_cuts(const int64_t *first, int64_t nranks, int64_t total, int64_t *cut)
{
    cut[nranks] = total;
    for (int64_t r = nranks - 1; r >= 0; r--) {
        int64_t x = first[r] < 0 || first[r] > total ? total : first[r];
        cut[r] = x < cut[r + 1] ? x : cut[r + 1];
    }
    /* Rows before every writer's first (a chunk that starts there and
     * holds a writer's first rows) need an owner too. */
    cut[0] = 0;
}

void cf__owner_cuts_even(int64_t nranks, int64_t total, int64_t *cut)
{
    for (int64_t r = 0; r < nranks; r++) cf_plan_share(total, nranks, r, &cut[r]);
    cut[nranks] = total;
}

int64_t cf__owner_of_row(const int64_t *cut, int64_t nranks, int64_t row)
{
    if (nranks < 1 || row < 0 || row >= cut[nranks]) return -1;
    /* The last r with cut[r] <= row: cut[lo] <= row < cut[hi]. */
    int64_t lo = 0, hi = nranks;
    while (hi - lo > 1) {
        int64_t mid = lo + (hi - lo) / 2;
        if (cut[mid] <= row) lo = mid;
        else hi = mid;
    }
    return lo;
}

int64_t cf__owner_of_chunk(const int64_t *cut, int64_t nranks, int64_t blob_first, int64_t chunk_rows, int64_t k)
{
    if (nranks < 1 || chunk_rows < 1 || k < 0 || blob_first < 0 || blob_first >= cut[nranks] ||
        k > (cut[nranks] - blob_first) / chunk_rows)
        return -1;
    return cf__owner_of_row(cut, nranks, blob_first + k * chunk_rows);
}

/* ceil(a / b) for b > 0 and any a. */
static int64_t div_up(int64_t a, int64_t b) { return a <= 0 ? -((-a) / b) : (a - 1) / b + 1; }

void cf__owned_chunks(const int64_t *cut, int64_t nranks, int64_t r, int64_t blob_first, int64_t blob_rows,
                      int64_t chunk_rows, int64_t *k0, int64_t *k1)
{
    *k0 = *k1 = 0;
    if (nranks < 1 || r < 0 || r >= nranks || chunk_rows < 1 || blob_first < 0 || blob_rows < 1 ||
        blob_rows > cut[nranks] - blob_first)
        return;
    /* Chunk k starts at blob_first + k * chunk_rows: rank r's when that
     * lies in [cut[r], cut[r + 1]). */
    int64_t nchunks = div_up(blob_rows, chunk_rows);
    int64_t a = div_up(cut[r] - blob_first, chunk_rows), b = div_up(cut[r + 1] - blob_first, chunk_rows);
    if (a < 0) a = 0;
    if (b > nchunks) b = nchunks;
    if (b > a) {
        *k0 = a;
        *k1 = b;
    }
}
