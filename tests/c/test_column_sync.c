/* test_column_sync.c - written blobs made durable through the descriptors
 * that wrote them (column_sync.c), and a new column's blobs made by their
 * writers, the unwritten ones by the first commit. */
#include "harness.h"

#include <sys/stat.h>

static cf_file *open_new(const char *sub)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", cf_test_dir(), sub);
    cf_file *f = NULL;
    cf_error err;
    CHECK_OK(cf_file_open(&f, path, CF_OPEN_WRITE | CF_OPEN_CREATE, &err), &err);
    return f;
}

static long long blob_size(const cf_column *c, int64_t i)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%06llX", cf_column_path(c), (long long)i);
    struct stat st;
    return stat(path, &st) == 0 ? (long long)st.st_size : -1;
}

/* Twenty blobs written in an order that visits each twice, more than the
 * descriptors a handle keeps: every row reads back after the commit. */
static void test_many_blobs_written_twice(void)
{
    cf_error err;
    cf_file *f = open_new("many");
    cf_column *c = NULL;
    enum { NFILE = 20, ROWS = 10 };
    CHECK_OK(cf_column_create(&c, f, "x", "i8", 1, NFILE * ROWS, NFILE, &err), &err);
    int64_t v[ROWS / 2];
    for (int pass = 0; pass < 2; pass++)
        for (int64_t b = NFILE - 1; b >= 0; b--) {
            for (int64_t k = 0; k < ROWS / 2; k++) v[k] = b * ROWS + pass * (ROWS / 2) + k;
            CHECK_OK(cf_column_write(c, b * ROWS + pass * (ROWS / 2), ROWS / 2, v, NULL, 8, 8, &err), &err);
        }
    CHECK_OK(cf_column_close(c, &err), &err);
    CHECK_OK(cf_column_open(&c, f, "x", &err), &err);
    int64_t all[NFILE * ROWS];
    CHECK_OK(cf_column_read(c, 0, NFILE * ROWS, all, NULL, 8, 8, &err), &err);
    for (int64_t i = 0; i < NFILE * ROWS; i++) CHECK_EQ_INT(all[i], i);
    for (int64_t b = 0; b < NFILE; b++) CHECK_EQ_INT(blob_size(c, b), ROWS * 8);
    CHECK_OK(cf_column_close(c, &err), &err);
    cf_file_close(f);
}

/* Only blob 1 of 3 written: the commit makes blobs 0 and 2 (empty), so the
 * header lists only files that exist, and their rows read as never
 * written (CF_ESHORT), as before. */
static void test_unwritten_blobs_made_by_the_commit(void)
{
    cf_error err;
    cf_file *f = open_new("holes");
    cf_column *c = NULL;
    CHECK_OK(cf_column_create(&c, f, "y", "i4", 1, 30, 3, &err), &err);
    int32_t v[10];
    for (int i = 0; i < 10; i++) v[i] = 100 + i;
    CHECK_OK(cf_column_write(c, 10, 10, v, NULL, 4, 4, &err), &err);
    CHECK_OK(cf_column_close(c, &err), &err);
    CHECK_OK(cf_column_open(&c, f, "y", &err), &err);
    CHECK_EQ_INT(blob_size(c, 0), 0);
    CHECK_EQ_INT(blob_size(c, 1), 40);
    CHECK_EQ_INT(blob_size(c, 2), 0);
    int32_t got[10];
    CHECK_OK(cf_column_read(c, 10, 10, got, NULL, 4, 4, &err), &err);
    CHECK_EQ_MEM(got, v, sizeof v);
    CHECK_FAILS(cf_column_read(c, 20, 10, got, NULL, 4, 4, &err), CF_ESHORT, &err, "never written");
    int64_t held = -1;
    CHECK_OK(cf_column_blob_rows_held(c, 2, &held, &err), &err);
    CHECK_EQ_INT(held, 0);
    CHECK_OK(cf_column_close(c, &err), &err);
    cf_file_close(f);
}

/* Rows held of blobs a handle wrote, before its commit, from its writes
 * alone: a blob written up to row 7 of 10 holds 7. */
static void test_rows_held_from_the_writes(void)
{
    cf_error err;
    cf_file *f = open_new("held");
    cf_column *c = NULL;
    CHECK_OK(cf_column_create(&c, f, "z", "f8", 1, 20, 2, &err), &err);
    double v[7] = { 1, 2, 3, 4, 5, 6, 7 };
    CHECK_OK(cf_column_write(c, 10, 7, v, NULL, 8, 8, &err), &err);
    int64_t held = -1;
    CHECK_OK(cf_column_blob_rows_held(c, 1, &held, &err), &err);
    CHECK_EQ_INT(held, 7);
    CHECK_OK(cf_column_blob_rows_held(c, 0, &held, &err), &err);
    CHECK_EQ_INT(held, 0);
    CHECK_OK(cf_column_close(c, &err), &err);
    cf_file_close(f);
}

CF_TESTS(CF_TEST(test_many_blobs_written_twice), CF_TEST(test_unwritten_blobs_made_by_the_commit),
         CF_TEST(test_rows_held_from_the_writes))
