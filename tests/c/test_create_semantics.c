/* test_create_semantics.c - what creating a column may replace or hide:
 * cf_column_create_ex refuses an existing column unless asked to replace
 * it, no column is made below a column, and rows past a blob's last
 * written byte are reported, never read as data. */
#include "harness.h"

#include <sys/stat.h>

#include "colfile.h"

static int has_file(cf_file *f, const char *rel)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", cf_file_path(f), rel);
    struct stat st;
    return stat(path, &st) == 0;
}

/* Make column `name` of 4 int64 rows 0..3 (its values + base) and commit it. */
static void make_i8(cf_file *f, const char *name, int64_t base)
{
    cf_error err;
    cf_column *c = NULL;
    int64_t rows[1] = { 4 }, v[4] = { base, base + 1, base + 2, base + 3 };
    CHECK_OK(cf_column_create_ex(&c, f, name, "i8", 1, 1, rows, 0, &err), &err);
    CHECK_OK(cf_column_write(c, 0, 4, v, NULL, 8, 8, &err), &err);
    CHECK_OK(cf_column_close(c, &err), &err);
}

static int64_t first_value(cf_file *f, const char *name)
{
    cf_error err;
    cf_column *c = NULL;
    int64_t v = -1;
    CHECK_OK(cf_column_open(&c, f, name, &err), &err);
    CHECK_OK(cf_column_read(c, 0, 1, &v, NULL, 8, 8, &err), &err);
    cf_column_close(c, NULL);
    return v;
}

static void test_create_ex_refuses_an_existing_column(void)
{
    cf_error err;
    cf_file *f = cf_test_open_new("exists");
    make_i8(f, "x", 10);
    cf_column *c = NULL;
    int64_t rows[1] = { 2 };
    CHECK_FAILS(cf_column_create_ex(&c, f, "x", "f4", 1, 1, rows, 0, &err), CF_EEXIST, &err, "'x' exists");
    CHECK(c == NULL);
    CHECK(strstr(err.message, cf_file_path(f)) != NULL);
    /* nothing changed, and the refused create left no lock or stage behind */
    CHECK_EQ_INT(first_value(f, "x"), 10);
    /* a header-only block is a column too */
    CHECK_OK(cf_column_create_ex(&c, f, "meta", NULL, 0, 0, NULL, 0, &err), &err);
    CHECK_OK(cf_column_close(c, &err), &err);
    CHECK_FAILS(cf_column_create_ex(&c, f, "meta", NULL, 0, 0, NULL, 0, &err), CF_EEXIST, &err, "meta");
    /* replacing is explicit */
    CHECK_OK(cf_column_create_ex(&c, f, "x", "i8", 1, 1, rows, CF_CREATE_REPLACE, &err), &err);
    int64_t v[2] = { 7, 8 };
    CHECK_OK(cf_column_write(c, 0, 2, v, NULL, 8, 8, &err), &err);
    CHECK_OK(cf_column_close(c, &err), &err);
    CHECK_EQ_INT(first_value(f, "x"), 7);
    /* the older entry points keep replacing (bigfile's behaviour) */
    CHECK_OK(cf_column_create(&c, f, "x", "i8", 1, 4, 1, &err), &err);
    int64_t w[4] = { 3, 3, 3, 3 };
    CHECK_OK(cf_column_write(c, 0, 4, w, NULL, 8, 8, &err), &err);
    CHECK_OK(cf_column_close(c, &err), &err);
    CHECK_EQ_INT(first_value(f, "x"), 3);
    CHECK_FAILS(cf_column_create_ex(&c, f, "y", "i8", 1, 1, rows, 0x80, &err), CF_EARG, &err, "flags");
    /* a group (a directory without a header, here an empty one) is a taken
     * name too, as in h5py; replacing it is explicit */
    char grp[4096];
    snprintf(grp, sizeof grp, "%s/grp", cf_file_path(f));
    CHECK(mkdir(grp, 0755) == 0);
    CHECK_FAILS(cf_column_create_ex(&c, f, "grp", "i8", 1, 1, rows, 0, &err), CF_EEXIST, &err,
                "group named 'grp' exists");
    CHECK_OK(cf_column_create_ex(&c, f, "grp", "i8", 1, 1, rows, CF_CREATE_REPLACE, &err), &err);
    CHECK_OK(cf_column_write(c, 0, 2, v, NULL, 8, 8, &err), &err);
    CHECK_OK(cf_column_close(c, &err), &err);
    CHECK_EQ_INT(first_value(f, "grp"), 7);
    cf_file_close(f);
}

static void test_no_column_below_a_column(void)
{
    cf_error err;
    cf_file *f = cf_test_open_new("nested");
    make_i8(f, "P", 0);
    make_i8(f, "g/Q", 0);
    cf_column *c = NULL;
    int64_t rows[1] = { 4 };
    CHECK_FAILS(cf_column_create_ex(&c, f, "P/sub", "i8", 1, 1, rows, 0, &err), CF_EEXIST, &err,
                "is a column");
    CHECK(strstr(err.message, "P/sub") != NULL);
    CHECK_FAILS(cf_column_create(&c, f, "P/sub", "i8", 1, 4, 1, &err), CF_EEXIST, &err, "cannot hold columns");
    CHECK_FAILS(cf_column_create_blobs(&c, f, "g/Q/deep/er", "i8", 1, 1, rows, &err), CF_EEXIST, &err, "'g/Q'");
    CHECK(!has_file(f, "P/sub"));
    CHECK(!has_file(f, "g/Q/deep"));
    /* a group holding columns is not replaced by a column, even when asked */
    CHECK_FAILS(cf_column_create_ex(&c, f, "g", "i8", 1, 1, rows, CF_CREATE_REPLACE, &err), CF_EEXIST, &err,
                "group");
    CHECK_EQ_INT(first_value(f, "g/Q"), 0);
    /* a sibling whose name starts like the column is fine */
    CHECK_OK(cf_column_create_ex(&c, f, "Px/sub", "i8", 1, 1, rows, 0, &err), &err);
    CHECK_OK(cf_column_close(c, &err), &err);
    char **names = NULL;
    int64_t n = 0;
    CHECK_OK(cf_file_list(f, &names, &n, &err), &err);
    CHECK_EQ_INT(n, 3);
    cf_names_free(names, n);
    cf_file_close(f);
}

static void test_rows_never_written_are_reported(void)
{
    cf_error err;
    cf_file *f = cf_test_open_new("unwritten");
    cf_column *c = NULL;
    int64_t rows[2] = { 5, 5 };
    CHECK_OK(cf_column_create_ex(&c, f, "v", "f8", 3, 2, rows, 0, &err), &err);
    double ones[9] = { 1, 1, 1, 1, 1, 1, 1, 1, 1 };
    CHECK_OK(cf_column_write(c, 2, 3, ones, NULL, 24, 8, &err), &err); /* rows 2..4 */
    int64_t held = -1;
    CHECK_OK(cf_column_blob_rows_held(c, 0, &held, &err), &err);
    CHECK_EQ_INT(held, 5);
    CHECK_OK(cf_column_blob_rows_held(c, 1, &held, &err), &err);
    CHECK_EQ_INT(held, 0);
    CHECK_OK(cf_column_write(c, 5, 1, ones, NULL, 24, 8, &err), &err); /* row 5 */
    CHECK_OK(cf_column_blob_rows_held(c, 1, &held, &err), &err);
    CHECK_EQ_INT(held, 1);
    held = 99;
    CHECK_FAILS(cf_column_blob_rows_held(c, 2, &held, &err), CF_ERANGE, &err, "no blob 2");
    CHECK_EQ_INT(held, 99); /* an error is never a row count */
    CHECK_FAILS(cf_column_blob_rows_held(c, 0, NULL, &err), CF_EARG, &err, "NULL");
    CHECK_OK(cf_column_close(c, &err), &err);
    CHECK_OK(cf_column_open(&c, f, "v", &err), &err);
    double got[30];
    /* skipped rows before a written one read as zeros */
    CHECK_OK(cf_column_read(c, 0, 6, got, NULL, 24, 8, &err), &err);
    CHECK(got[0] == 0.0 && got[5] == 0.0 && got[6] == 1.0 && got[17] == 1.0);
    /* rows past the last written one are an error naming them */
    CHECK_FAILS(cf_column_read(c, 0, 10, got, NULL, 24, 8, &err), CF_ESHORT, &err, "rows 6..9 hold no data");
    CHECK(strstr(err.message, "'v'") != NULL);
    CHECK_OK(cf_column_blob_rows_held(c, 1, &held, &err), &err);
    CHECK_EQ_INT(held, 1);
    cf_column_close(c, NULL);
    cf_file_close(f);
}

CF_TESTS(CF_TEST(test_create_ex_refuses_an_existing_column),
         CF_TEST(test_no_column_below_a_column),
         CF_TEST(test_rows_never_written_are_reported))
