/* test_plan.c - the arithmetic of parallel I/O. */
#include "harness.h"

static void test_share(void)
{
    int64_t first, total = 0;
    for (int64_t i = 0; i < 7; i++) {
        int64_t n = cf_plan_share(10, 7, i, &first);
        CHECK_EQ_INT(first, total);
        total += n;
    }
    CHECK_EQ_INT(total, 10);
    CHECK_EQ_INT(cf_plan_share(10, 7, 2, NULL), 2); /* bigfile's split 1,1,2,1,2,1,2 */
    CHECK_EQ_INT(cf_plan_share(INT64_C(1) << 62, 3, 2, &first), (INT64_C(1) << 62) - first);
    CHECK_EQ_INT(cf_plan_share(10, 0, 0, &first), 0);
}

static void test_nfile(void)
{
    CHECK_EQ_INT(cf_plan_nfile(0, 4, 0), 1);
    CHECK_EQ_INT(cf_plan_nfile(100, 4, 0), 1);
    CHECK_EQ_INT(cf_plan_nfile((INT64_C(5) << 30) + 1, 4, 0), 4);   /* capped at one per rank */
    CHECK_EQ_INT(cf_plan_nfile((INT64_C(5) << 30) + 1, 100, 0), 21); /* one per 256 MiB */
    CHECK_EQ_INT(cf_plan_nfile(INT64_C(512) << 20, 2, 0), 2);        /* 256 MiB per rank: a blob each */
    CHECK_EQ_INT(cf_plan_nfile(INT64_C(256) << 20, 2, 0), 1);
    CHECK_EQ_INT(cf_plan_nfile(INT64_C(1) << 62, INT64_C(1) << 40, 1), INT64_C(1) << 24);
}

static void check_blobs(const int64_t *rank_rows, int64_t nranks, int64_t nfile)
{
    int64_t blob_rows[64];
    cf_error err;
    CHECK_OK(cf_plan_blobs_by_rank(rank_rows, nranks, nfile, blob_rows, &err), &err);
    /* Every blob boundary is a rank boundary and every blob has a rank. */
    int64_t r = 0;
    for (int64_t b = 0; b < nfile; b++) {
        int64_t rows = 0, ranks = 0;
        while (r < nranks && rows < blob_rows[b]) rows += rank_rows[r++], ranks++;
        while (r < nranks && rank_rows[r] == 0 && rows == blob_rows[b] && b == nfile - 1) r++, ranks++;
        CHECK_EQ_INT(rows, blob_rows[b]);
    }
    int64_t total = 0, sum = 0;
    for (int64_t i = 0; i < nranks; i++) total += rank_rows[i];
    for (int64_t b = 0; b < nfile; b++) sum += blob_rows[b];
    CHECK_EQ_INT(sum, total);
}

static void test_blobs_by_rank(void)
{
    int64_t even[8] = { 10, 10, 10, 10, 10, 10, 10, 10 };
    int64_t blob_rows[8];
    cf_error err;
    CHECK_OK(cf_plan_blobs_by_rank(even, 8, 4, blob_rows, &err), &err);
    for (int b = 0; b < 4; b++) CHECK_EQ_INT(blob_rows[b], 20);
    CHECK_OK(cf_plan_blobs_by_rank(even, 8, 8, blob_rows, &err), &err);
    for (int b = 0; b < 8; b++) CHECK_EQ_INT(blob_rows[b], 10);
    CHECK_OK(cf_plan_blobs_by_rank(even, 8, 3, blob_rows, &err), &err);
    CHECK_EQ_INT(blob_rows[0] + blob_rows[1] + blob_rows[2], 80);
    CHECK(blob_rows[0] >= 20 && blob_rows[0] <= 30);
    int64_t uneven[6] = { 0, 1000, 0, 1, 1, 5 };
    check_blobs(uneven, 6, 1);
    check_blobs(uneven, 6, 2);
    check_blobs(uneven, 6, 3);
    check_blobs(uneven, 6, 6);
    CHECK_OK(cf_plan_blobs_by_rank(uneven, 6, 2, blob_rows, &err), &err);
    CHECK_EQ_INT(blob_rows[0], 1000); /* ranks 0-1, then 2-5 */
    CHECK_EQ_INT(blob_rows[1], 7);
    int64_t zeros[4] = { 0, 0, 0, 0 };
    check_blobs(zeros, 4, 4);
    CHECK_FAILS(cf_plan_blobs_by_rank(even, 8, 9, blob_rows, &err), CF_EARG, &err, "nfile");
}

static void test_turns_and_groups(void)
{
    int64_t nturns;
    CHECK_EQ_INT(cf_plan_turn(5, 8, 0, &nturns), 0);
    CHECK_EQ_INT(nturns, 1);
    int count[4] = { 0 };
    for (int64_t r = 0; r < 10; r++) count[cf_plan_turn(r, 10, 3, &nturns)]++;
    CHECK_EQ_INT(nturns, 4);
    for (int t = 0; t < 4; t++) CHECK(count[t] <= 3 && count[t] >= 2);
    int64_t bytes[6] = { 10, 10, 10, 10, 100, 1 }, leader[6];
    cf_error err;
    CHECK_OK(cf_plan_groups(bytes, 6, 25, leader, &err), &err);
    int64_t want[6] = { 0, 0, 2, 2, 4, 5 };
    CHECK_EQ_MEM(leader, want, sizeof want);
    CHECK_EQ_INT(cf_plan_mode(100, 4, 0), CF_IO_AGGREGATED);
    CHECK_EQ_INT(cf_plan_mode(INT64_C(1) << 40, 4, 0), CF_IO_THROTTLED);
    CHECK_EQ_INT(cf_plan_mode(100, 1, 0), CF_IO_THROTTLED);
}

CF_TESTS(CF_TEST(test_share), CF_TEST(test_nfile), CF_TEST(test_blobs_by_rank), CF_TEST(test_turns_and_groups))
