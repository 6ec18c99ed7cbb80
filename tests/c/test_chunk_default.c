/* test_chunk_default.c - the rows per chunk a column gets when nothing
 * chooses them: fine enough for selective reads (2^15 chunks where the
 * size allows), never finer than 512 KiB per component (the statistics'
 * cost per chunk), never coarser than 8 MiB; chosen from the rows the
 * column is created with and kept when it grows. */
#include "harness.h"

#include "stats.h"

#include <stdio.h>
#include <unistd.h>

#define T CF__STATS_TARGET_CHUNKS

static int64_t chunks_of(int64_t rows, int64_t r)
{
    return (rows + r - 1) / r;
}

static void test_bounds(void)
{
    /* tiny columns: the finest default, 512 KiB per component */
    CHECK_EQ_INT(cf__stats_chunk_rows_for(1, 1, 8), 65536);
    CHECK_EQ_INT(cf__stats_chunk_rows_for(10, 3, 8), 65536);     /* f8 x 3: 1.5 MiB */
    CHECK_EQ_INT(cf__stats_chunk_rows_for(10, 1, 4), 131072);    /* f4 */
    CHECK_EQ_INT(cf__stats_chunk_rows_for(10, 1, 1), 1 << 19);   /* u1 */
    CHECK_EQ_INT(cf__stats_chunk_rows_for(10, 3, 4), 131072);    /* f4 x 3 */
    /* rows so wide that the coarsest default is finer: that one */
    CHECK_EQ_INT(cf__stats_chunk_rows_for(10, 1 << 20, 8), 1);
    CHECK_EQ_INT(cf__stats_chunk_rows_for(10, 64, 8), cf__stats_default_chunk_rows(64 * 8));
    /* created empty (or no size known): the coarsest, as it may grow to any size */
    CHECK_EQ_INT(cf__stats_chunk_rows_for(0, 3, 8), 1 << 18);
    CHECK_EQ_INT(cf__stats_chunk_rows_for(-1, 1, 8), 1 << 20);
    CHECK_EQ_INT(cf__stats_chunk_rows_for(5, 0, 8), cf__stats_default_chunk_rows(0));
    /* the snapshot of bench/query.py --scale: 2^24 rows of f8 x 3 */
    CHECK_EQ_INT(cf__stats_chunk_rows_for((int64_t)1 << 24, 3, 8), 65536);
    /* 2^15 chunks reached at 2^31 rows; coarser beyond, 2^15 .. 2^16 chunks */
    CHECK_EQ_INT(cf__stats_chunk_rows_for((int64_t)1 << 31, 3, 8), 65536);
    CHECK_EQ_INT(cf__stats_chunk_rows_for(((int64_t)1 << 32) - 1, 3, 8), 65536);
    CHECK_EQ_INT(cf__stats_chunk_rows_for((int64_t)1 << 32, 3, 8), 131072);
    /* huge columns: the coarsest default, 8 MiB (2^18 rows of f8 x 3) */
    CHECK_EQ_INT(cf__stats_chunk_rows_for(1000000000000LL, 3, 8), 1 << 18);
    CHECK_EQ_INT(cf__stats_chunk_rows_for(INT64_MAX, 3, 8), 1 << 18);
    CHECK_EQ_INT(cf__stats_chunk_rows_for(INT64_MAX, 1, 1), 1 << 20);

    /* For every size: a power of two between the finest and the coarsest,
     * never fewer than 2^15 chunks when the finest allows that many, never
     * more chunks than the larger of 2^16 and the coarsest gives, and
     * coarser (or equal) for larger columns. */
    static const int64_t shapes[][2] = { { 1, 1 }, { 1, 4 }, { 1, 8 }, { 3, 4 }, { 3, 8 }, { 6, 8 }, { 1, 16 } };
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int64_t nmemb = shapes[s][0], width = shapes[s][1];
        int64_t coarse = cf__stats_default_chunk_rows(nmemb * width), fine = cf__stats_chunk_rows_for(1, nmemb, width);
        int64_t prev = 0;
        for (int64_t rows = 1; rows < ((int64_t)1 << 61); rows += rows / 2 + 1) {
            int64_t r = cf__stats_chunk_rows_for(rows, nmemb, width);
            CHECK(r >= fine && r <= coarse && (r & (r - 1)) == 0);
            CHECK(r >= prev);
            prev = r;
            CHECK(fine * width >= ((int64_t)512 << 10) || fine == coarse);
            if (rows >= T * fine) CHECK(chunks_of(rows, r) >= T);
            int64_t most = chunks_of(rows, coarse) > 2 * T ? chunks_of(rows, coarse) : 2 * T;
            CHECK(chunks_of(rows, r) <= most);
        }
    }
}

/* A column's chunk rows as created with `rows` rows in one blob. */
static int64_t created(cf_file *f, const char *name, const char *dtype, int64_t nmemb, int64_t rows)
{
    cf_error err;
    cf_column *c = NULL;
    CHECK_OK(cf_column_create(&c, f, name, dtype, nmemb, rows, rows > 0, &err), &err);
    int64_t r = cf_column_chunk_rows(c);
    cf_column_discard(c);
    cf_column_close(c, NULL);
    return r;
}

static void test_columns(void)
{
    cf_error err;
    cf_file *f;
    CHECK_OK(cf_file_open(&f, cf_test_dir(), CF_OPEN_WRITE | CF_OPEN_CREATE, &err), &err);
    /* the size given at create decides; nothing is written to find out */
    CHECK_EQ_INT(created(f, "a", "<f8", 3, 1000), 65536);
    CHECK_EQ_INT(created(f, "b", "<f8", 3, (int64_t)1 << 24), 65536);
    CHECK_EQ_INT(created(f, "c", "<f8", 3, (int64_t)1 << 33), 1 << 18);
    CHECK_EQ_INT(created(f, "d", "<f4", 1, (int64_t)1 << 34), 1 << 19);
    CHECK_EQ_INT(created(f, "d2", "<f4", 1, (int64_t)1 << 35), 1 << 20);
    CHECK_EQ_INT(created(f, "e", "<f8", 3, 0), 1 << 18);

    /* grown columns keep the chunks of their first size: a column created
     * small and grown a thousandfold has chunks of 512 KiB per component,
     * not of its first size divided by 2^15 */
    cf_column *c;
    CHECK_OK(cf_column_create(&c, f, "g", "<f8", 1, 1000, 1, &err), &err);
    double v[1000];
    for (int i = 0; i < 1000; i++) v[i] = i;
    CHECK_OK(cf_column_write(c, 0, 1000, v, "<f8", 8, 8, &err), &err);
    CHECK_OK(cf_column_close(c, &err), &err);
    for (int k = 0; k < 3; k++) {
        CHECK_OK(cf_column_open(&c, f, "g", &err), &err);
        int64_t at = cf_column_size(c);
        CHECK_OK(cf_column_grow(c, (int64_t)1000000, 1, &err), &err);
        CHECK_OK(cf_column_write(c, at, 1000, v, "<f8", 8, 8, &err), &err);
        CHECK_OK(cf_column_close(c, &err), &err);
    }
    CHECK_OK(cf_column_open(&c, f, "g", &err), &err);
    CHECK_EQ_INT(cf_column_size(c), 3001000);
    CHECK_EQ_INT(cf_column_chunk_rows(c), 65536);
    /* chunks restart at every blob: 1 + 3 x 16 */
    CHECK_EQ_INT(cf_column_chunk_count(c), 1 + 3 * 16);
    CHECK_OK(cf_column_close(c, &err), &err);

    /* an explicit choice still wins */
    CHECK_OK(cf_column_create(&c, f, "h", "<f8", 3, (int64_t)1 << 24, 4, &err), &err);
    CHECK_OK(cf_column_set_chunk_rows(c, 2048, &err), &err);
    CHECK_EQ_INT(cf_column_chunk_rows(c), 2048);
    cf_column_discard(c);
    cf_column_close(c, NULL);

    /* a column without statistics (written by bigfile): the default of its
     * size, as `colfile index` would compute them */
    CHECK_OK(cf_column_create(&c, f, "i", "<f4", 1, 300000, 1, &err), &err);
    float w[1000] = { 0 };
    for (int64_t at = 0; at < 300000; at += 1000) CHECK_OK(cf_column_write(c, at, 1000, w, "<f4", 4, 4, &err), &err);
    CHECK_OK(cf_column_close(c, &err), &err);
    char p[4200];
    snprintf(p, sizeof p, "%s/i/colfile-v1", cf_test_dir());
    CHECK(unlink(p) == 0);
    CHECK_OK(cf_column_open(&c, f, "i", &err), &err);
    CHECK_EQ_INT(cf_column_chunk_rows(c), 131072);
    CHECK_EQ_INT(cf_column_chunk_count(c), 3);
    CHECK_OK(cf_column_close(c, &err), &err);
    cf_file_close(f);
}

CF_TESTS(CF_TEST(test_bounds), CF_TEST(test_columns))
