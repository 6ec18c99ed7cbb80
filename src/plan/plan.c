/* plan.c - the arithmetic of parallel I/O, free of MPI: who writes which
 * rows into how many blobs, in which turn, through which group leader.
 * Both parallel layers (libcolfile-mpi in C, colfile.mpi in Python) call
 * these, so they make the same decisions and write the same files.
 * The defaults and the reasons for them are in docs/parallel.md. */
#include "error.h"
#include "header.h"

int64_t cf_plan_share(int64_t total, int64_t parts, int64_t i, int64_t *first)
{
    if (total < 0 || parts < 1 || i < 0 || i >= parts) {
        if (first) *first = 0;
        return 0;
    }
    /* i*total/parts without overflow: total = q*parts + r. */
    int64_t q = total / parts, r = total % parts;
    int64_t lo = i * q + (i * r) / parts, hi = (i + 1) * q + ((i + 1) * r) / parts;
    if (first) *first = lo;
    return hi - lo;
}

int64_t cf_plan_nfile(int64_t total_bytes, int64_t nranks, int64_t blob_bytes)
{
    if (blob_bytes <= 0) blob_bytes = CF_PLAN_BLOB_BYTES;
    if (nranks < 1) nranks = 1;
    if (total_bytes <= 0) return 1;
    int64_t n = total_bytes / blob_bytes + (total_bytes % blob_bytes != 0);
    if (n > nranks) n = nranks;
    if (n > CF__NFILE_MAX) n = CF__NFILE_MAX;
    return n < 1 ? 1 : n;
}

int cf_plan_blobs_by_rank(const int64_t *rank_rows, int64_t nranks, int64_t nfile, int64_t *blob_rows,
                          cf_error *err)
{
    if (!rank_rows || !blob_rows || nranks < 1 || nfile < 1 || nfile > nranks)
        return CF_FAIL(err, CF_EARG, "cf_plan_blobs_by_rank: need 1 <= nfile (%lld) <= nranks (%lld)",
                       (long long)nfile, (long long)nranks);
    int64_t total = 0;
    for (int64_t r = 0; r < nranks; r++) {
        if (rank_rows[r] < 0 || rank_rows[r] > INT64_MAX - total)
            return CF_FAIL(err, CF_EARG, "cf_plan_blobs_by_rank: bad row count %lld for rank %lld",
                           (long long)rank_rows[r], (long long)r);
        total += rank_rows[r];
    }
    /* Cut the ranks into nfile runs of consecutive ranks, each at least one
     * rank long.  Run b ends near the even split's boundary: a rank joins
     * while that brings the run's end no further from the boundary than
     * leaving it out would (2*row + rows_r <= 2*boundary).  The last run
     * takes what is left. */
    int64_t r = 0, row = 0;
    for (int64_t b = 0; b < nfile; b++) {
        int64_t rows = 0, boundary, later = nfile - 1 - b;
        cf_plan_share(total, nfile, b + 1 < nfile ? b + 1 : b, &boundary);
        if (b == nfile - 1) boundary = total;
        do {
            rows += rank_rows[r];
            row += rank_rows[r];
            r++;
        } while (r < nranks && (b == nfile - 1 ||
                 (nranks - r > later && 2 * row + rank_rows[r] <= 2 * boundary)));
        blob_rows[b] = rows;
    }
    return 0;
}

int64_t cf_plan_turn(int64_t rank, int64_t nranks, int64_t concurrency, int64_t *nturns)
{
    if (nranks < 1) nranks = 1;
    if (concurrency < 1 || concurrency > nranks) concurrency = nranks;
    int64_t turns = nranks / concurrency + (nranks % concurrency != 0);
    if (nturns) *nturns = turns;
    /* Neighbouring ranks (whose rows are neighbours in the file) go in
     * different turns, so each turn spreads over the whole file. */
    return rank < 0 ? 0 : rank % turns;
}

int cf_plan_groups(const int64_t *rank_bytes, int64_t nranks, int64_t group_bytes, int64_t *leader,
                   cf_error *err)
{
    if (!rank_bytes || !leader || nranks < 1)
        return CF_FAIL(err, CF_EARG, "cf_plan_groups: bad arguments");
    if (group_bytes <= 0) group_bytes = CF_PLAN_GROUP_BYTES;
    /* Consecutive ranks (consecutive rows) join a group until it holds
     * group_bytes; its first rank leads and writes for all. */
    int64_t lead = 0, bytes = 0;
    for (int64_t r = 0; r < nranks; r++) {
        if (rank_bytes[r] < 0) return CF_FAIL(err, CF_EARG, "cf_plan_groups: negative bytes for rank %lld", (long long)r);
        if (r > lead && bytes + rank_bytes[r] > group_bytes) {
            lead = r;
            bytes = 0;
        }
        bytes += rank_bytes[r];
        leader[r] = lead;
    }
    return 0;
}

int cf_plan_mode(int64_t total_bytes, int64_t nranks, int64_t small_bytes)
{
    if (small_bytes <= 0) small_bytes = CF_PLAN_SMALL_BYTES;
    if (nranks < 2) return CF_IO_THROTTLED; /* nothing to gather */
    return total_bytes / nranks < small_bytes ? CF_IO_AGGREGATED : CF_IO_THROTTLED;
}
