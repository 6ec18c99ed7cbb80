/* test_chunk_owner.c - the owner rank of each statistics chunk at a
 * collective close (src/plan/chunk_owner.h): owners follow the cuts (the
 * even shares of cf_plan_share, or the first row each rank wrote), every
 * chunk of every blob has exactly one owner, and for a 10^12-row f8x3
 * column written by P = 10^2 .. 10^5 ranks at most one chunk per rank
 * moves to another rank, rank 0 receives at most one, and no rank owns
 * more chunks than it wrote a part of. */
#include "harness.h"

#include "chunk_owner.h"
#include "stats.h"

static void test_owner_of_row_matches_shares(void)
{
    /* Exhaustive for small columns, including more ranks than rows. */
    int64_t cut[200];
    for (int64_t total = 1; total <= 130; total += 3) {
        for (int64_t P = 1; P <= 150; P += 7) {
            cf__owner_cuts_even(P, total, cut);
            for (int64_t row = 0; row < total; row++) {
                int64_t o = cf__owner_of_row(cut, P, row), first = 0;
                CHECK(o >= 0 && o < P);
                int64_t n = cf_plan_share(total, P, o, &first);
                if (!(first <= row && row < first + n)) {
                    fprintf(stderr, "total %lld P %lld row %lld: owner %lld has [%lld, %lld)\n", (long long)total,
                            (long long)P, (long long)row, (long long)o, (long long)first, (long long)(first + n));
                    CHECK(0);
                }
            }
            CHECK_EQ_INT(cf__owner_of_row(cut, P, total), -1);
            CHECK_EQ_INT(cf__owner_of_row(cut, P, -1), -1);
        }
    }
    cf__owner_cuts_even(4, 0, cut);
    CHECK_EQ_INT(cf__owner_of_row(cut, 4, 0), -1);
    /* Large columns: both ends of sampled shares. */
    const int64_t totals[] = { INT64_C(1000000000000), INT64_MAX / 3, INT64_MAX };
    const int64_t ranks[] = { 1, 3, 100000 };
    int64_t *big = malloc((100000 + 1) * sizeof *big);
    for (size_t t = 0; t < sizeof totals / sizeof *totals; t++) {
        for (size_t p = 0; p < sizeof ranks / sizeof *ranks; p++) {
            int64_t total = totals[t], P = ranks[p];
            cf__owner_cuts_even(P, total, big);
            for (int64_t r = 0; r < P; r += P / 97 + 1) {
                int64_t first = 0, n = cf_plan_share(total, P, r, &first);
                CHECK_EQ_INT(cf__owner_of_row(big, P, first), r);
                CHECK_EQ_INT(cf__owner_of_row(big, P, first + n - 1), r);
            }
            CHECK_EQ_INT(cf__owner_of_row(big, P, total - 1), P - 1);
        }
    }
    free(big);
}

static void test_owner_cuts_from_first_rows(void)
{
    int64_t cut[5];
    /* Rank 2 wrote nothing: its range is empty, rank 3's starts at 25. */
    const int64_t a[] = { 0, 10, -1, 25 };
    cf__owner_cuts(a, 4, 40, cut);
    CHECK(cut[0] == 0 && cut[1] == 10 && cut[2] == 25 && cut[3] == 25 && cut[4] == 40);
    CHECK_EQ_INT(cf__owner_of_row(cut, 4, 9), 0);
    CHECK_EQ_INT(cf__owner_of_row(cut, 4, 24), 1);
    CHECK_EQ_INT(cf__owner_of_row(cut, 4, 25), 3);
    CHECK_EQ_INT(cf__owner_of_row(cut, 4, 39), 3);
    /* Rank 1 wrote after rank 2's rows: it owns nothing. Rank 0 began at
     * row 5: rows before it are still rank 0's. */
    const int64_t b[] = { 5, 30, 20, 35 };
    cf__owner_cuts(b, 4, 40, cut);
    CHECK(cut[0] == 0 && cut[1] == 20 && cut[2] == 20 && cut[3] == 35 && cut[4] == 40);
    CHECK_EQ_INT(cf__owner_of_row(cut, 4, 0), 0);
    CHECK_EQ_INT(cf__owner_of_row(cut, 4, 20), 2);
    CHECK_EQ_INT(cf__owner_of_row(cut, 4, 34), 2);
    /* Nobody wrote: rank 0 holds the (empty-handed) range. */
    const int64_t c[] = { -1, -1, -1, -1 };
    cf__owner_cuts(c, 4, 40, cut);
    CHECK(cut[0] == 0 && cut[1] == 40 && cut[4] == 40);
    CHECK_EQ_INT(cf__owner_of_row(cut, 4, 39), 0);
}

/* Every chunk of blobs of rows[] (consecutive, chunks restarting at each
 * blob) has one owner, and cf__owned_chunks gives each rank exactly the
 * chunks cf__owner_of_chunk gives it, in rank order. */
static void check_partition(const int64_t *rows, int64_t nfile, const int64_t *cut, int64_t P, int64_t chunk_rows)
{
    for (int64_t b = 0, bf = 0; b < nfile; bf += rows[b], b++) {
        int64_t nchunks = (rows[b] + chunk_rows - 1) / chunk_rows, next = 0;
        for (int64_t r = 0; r < P; r++) {
            int64_t k0, k1;
            cf__owned_chunks(cut, P, r, bf, rows[b], chunk_rows, &k0, &k1);
            if (k1 == k0) continue;
            CHECK_EQ_INT(k0, next); /* consecutive, in rank order, no gap */
            for (int64_t k = k0; k < k1; k++) CHECK_EQ_INT(cf__owner_of_chunk(cut, P, bf, chunk_rows, k), r);
            next = k1;
        }
        CHECK_EQ_INT(next, nchunks);
    }
}

static void test_owned_chunks_partition_blobs(void)
{
    uint64_t s = 88172645463325252u;
    int64_t cut[41], first[40];
    for (int iter = 0; iter < 300; iter++) {
        int64_t rows[12], nfile = 1 + iter % 12;
        for (int64_t b = 0; b < nfile; b++) {
            s ^= s << 13, s ^= s >> 7, s ^= s << 17;
            rows[b] = (int64_t)(s % 5 == 0 ? 0 : s % 400);
        }
        int64_t total = 0;
        for (int64_t b = 0; b < nfile; b++) total += rows[b];
        if (total == 0) continue;
        const int64_t chunk_rows[] = { 1, 3, 16, 64, 1000 };
        for (int64_t P = 1; P <= 40; P += 13) {
            for (int way = 0; way < 2; way++) {
                if (way == 0) {
                    cf__owner_cuts_even(P, total, cut);
                } else { /* random first rows, some ranks idle, out of order */
                    for (int64_t r = 0; r < P; r++) {
                        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
                        first[r] = s % 4 == 0 ? -1 : (int64_t)(s % (uint64_t)total);
                    }
                    cf__owner_cuts(first, P, total, cut);
                }
                for (size_t c = 0; c < sizeof chunk_rows / sizeof *chunk_rows; c++)
                    check_partition(rows, nfile, cut, P, chunk_rows[c]);
            }
        }
    }
    cf__owner_cuts_even(4, 100, cut);
    int64_t k0 = 7, k1 = 9;
    cf__owned_chunks(cut, 4, 4, 0, 100, 10, &k0, &k1); /* no rank 4 */
    CHECK(k0 == 0 && k1 == 0);
    cf__owned_chunks(cut, 4, 0, 90, 20, 10, &k0, &k1); /* past the end */
    CHECK(k0 == 0 && k1 == 0);
    CHECK_EQ_INT(cf__owner_of_chunk(cut, 4, 90, 10, 1), -1);
}

static const int64_t ROWS = INT64_C(1000000000000); /* 10^12 rows of f8x3 */

/* A collective write of rank_rows (blob boundaries on rank boundaries, the
 * default plan), chunks owned by the cuts at the first row each rank
 * wrote: *most_sent, the most chunks a rank wrote a part of that another
 * rank owns; *recv0, the chunks rank 0 gets pieces of from other ranks;
 * *most_owned, the most chunks a rank owns.  Checks that no rank owns a
 * chunk it wrote no part of. */
static void close_traffic(int64_t P, const int64_t *rank_rows, int64_t *most_sent, int64_t *recv0, int64_t *most_owned)
{
    int64_t nfile = cf_plan_nfile(ROWS * 24, P, 0), chunk_rows = cf__stats_default_chunk_rows(24);
    int64_t *blob_rows = malloc((size_t)nfile * sizeof *blob_rows), *owned = calloc((size_t)P, sizeof *owned);
    int64_t *first = malloc((size_t)P * sizeof *first), *cut = malloc((size_t)(P + 1) * sizeof *cut);
    int64_t *touched = calloc((size_t)P, sizeof *touched);
    cf_error err;
    CHECK_OK(cf_plan_blobs_by_rank(rank_rows, P, nfile, blob_rows, &err), &err);
    for (int64_t r = 0, row = 0; r < P; row += rank_rows[r], r++) first[r] = rank_rows[r] ? row : -1;
    cf__owner_cuts(first, P, ROWS, cut);
    *most_sent = *recv0 = *most_owned = 0;
    int64_t b = 0, bf = 0, row = 0;
    for (int64_t r = 0; r < P; row += rank_rows[r], r++) {
        if (rank_rows[r] == 0) continue;
        while (bf + blob_rows[b] <= row) bf += blob_rows[b++];
        CHECK(row + rank_rows[r] <= bf + blob_rows[b]); /* one blob per rank */
        int64_t sent = 0, k0 = (row - bf) / chunk_rows, k1 = (row + rank_rows[r] - 1 - bf) / chunk_rows + 1;
        touched[r] = k1 - k0;
        for (int64_t k = k0; k < k1; k++) {
            int64_t o = cf__owner_of_chunk(cut, P, bf, chunk_rows, k);
            CHECK(o >= 0 && o < P);
            sent += o != r;
            *recv0 += o == 0 && r != 0;
        }
        if (sent > *most_sent) *most_sent = sent;
    }
    for (b = 0, bf = 0; b < nfile; bf += blob_rows[b], b++) {
        if (blob_rows[b] == 0) continue;
        for (int64_t r = cf__owner_of_row(cut, P, bf); r < P && cut[r] < bf + blob_rows[b]; r++) {
            int64_t k0, k1;
            cf__owned_chunks(cut, P, r, bf, blob_rows[b], chunk_rows, &k0, &k1);
            owned[r] += k1 - k0;
        }
    }
    int64_t over = 0;
    for (int64_t r = 0; r < P; r++) {
        if (owned[r] > *most_owned) *most_owned = owned[r];
        over += owned[r] > touched[r];
    }
    CHECK_EQ_INT(over, 0);
    free(blob_rows);
    free(owned);
    free(first);
    free(cut);
    free(touched);
}

static void test_close_traffic_at_scale(void)
{
    int64_t chunk_rows = cf__stats_default_chunk_rows(24);
    for (int64_t P = 100; P <= 100000; P *= 10) {
        int64_t *rr = malloc((size_t)P * sizeof *rr);
        int64_t sent, recv0, most_owned;
        for (int64_t r = 0; r < P; r++) rr[r] = cf_plan_share(ROWS, P, r, NULL);
        close_traffic(P, rr, &sent, &recv0, &most_owned);
        printf("P=%lld even shares: most chunks a rank sends %lld, rank 0 receives %lld, most owned %lld\n",
               (long long)P, (long long)sent, (long long)recv0, (long long)most_owned);
        CHECK(sent <= 1);  /* only the chunk its first row falls inside */
        CHECK(recv0 <= 1); /* from rank 1 */
        CHECK(most_owned <= (ROWS / P + 1) / chunk_rows + 2);
        /* Uneven: every seventh rank holds nothing, others 1x..4x, the
         * last the rest. */
        int64_t total = 0;
        for (int64_t r = 0; r < P; r++) total += rr[r] = r % 7 == 3 ? 0 : (ROWS / P / 3) * (1 + r % 4);
        rr[P - 1] += ROWS - total;
        close_traffic(P, rr, &sent, &recv0, &most_owned);
        printf("P=%lld uneven: most chunks a rank sends %lld, rank 0 receives %lld, most owned %lld\n", (long long)P,
               (long long)sent, (long long)recv0, (long long)most_owned);
        CHECK(sent <= 1);
        CHECK(recv0 <= 1);
        free(rr);
    }
}

CF_TESTS(CF_TEST(test_owner_of_row_matches_shares), CF_TEST(test_owner_cuts_from_first_rows),
         CF_TEST(test_owned_chunks_partition_blobs), CF_TEST(test_close_traffic_at_scale))
