/* test_repair.c - cf_column_repair on what an interrupted writer leaves:
 * bytes past a blob's rows, a stray blob, a torn mark, and a blob cut
 * short, which nothing can repair. */
#include <fcntl.h>
#include <sys/stat.h>

#include "harness.h"

static char g_dir[4400];

static void make_x(cf_file *f)
{
    cf_error err;
    cf_column *c = NULL;
    int64_t rows[1] = { 4 }, v[4] = { 10, 11, 12, 13 };
    CHECK_OK(cf_column_create_ex(&c, f, "x", "i8", 1, 1, rows, 0, &err), &err);
    CHECK_OK(cf_column_write(c, 0, 4, v, NULL, 8, 8, &err), &err);
    CHECK_OK(cf_column_close(c, &err), &err);
    snprintf(g_dir, sizeof g_dir, "%s/f/x", cf_test_dir());
}

static const char *at(const char *leaf)
{
    static char p[4500];
    snprintf(p, sizeof p, "%s/%s", g_dir, leaf);
    return p;
}

static void put(const char *leaf, const char *bytes, size_t n, int flags)
{
    int fd = open(at(leaf), O_WRONLY | O_CREAT | flags, 0644);
    CHECK(fd >= 0);
    if (fd < 0) return;
    CHECK(write(fd, bytes, n) == (ssize_t)n);
    close(fd);
}

static long long size_of(const char *leaf)
{
    struct stat st;
    return stat(at(leaf), &st) == 0 ? (long long)st.st_size : -1;
}

static void test_repair_cuts_removes_and_clears(void)
{
    cf_file *f = cf_test_open_new("f");
    make_x(f);
    put("000000", "tail!", 5, O_APPEND);  /* an interrupted append */
    put("000001", "stray", 5, O_TRUNC);   /* a blob no header lists */
    put("colfile-torn", "x\n", 2, O_TRUNC);
    cf_file_close(f);
    char path[4400];
    snprintf(path, sizeof path, "%s/f", cf_test_dir());
    cf_error err;
    /* a column marked torn opens only when asked for */
    CHECK_OK(cf_file_open(&f, path, CF_OPEN_WRITE | CF_OPEN_TORN_OK, &err), &err);
    cf_column *c = NULL;
    CHECK_OK(cf_column_open(&c, f, "x", &err), &err);
    CHECK_EQ_INT(cf_column_torn(c), 1);
    unsigned fixed = 0;
    CHECK_OK(cf_column_repair(c, &fixed, &err), &err);
    CHECK(fixed & CF_REPAIR_TRUNCATED);
    CHECK(fixed & CF_REPAIR_STRAY);
    CHECK(fixed & CF_REPAIR_TORN);
    CHECK_EQ_INT(size_of("000000"), 32);
    CHECK_EQ_INT(size_of("000001"), -1);
    CHECK_EQ_INT(size_of("colfile-torn"), -1);
    CHECK_OK(cf_column_close(c, &err), &err);
    /* the rows are as written, and the column reads as whole again */
    int64_t v[4] = { 0 };
    CHECK_OK(cf_column_open(&c, f, "x", &err), &err);
    CHECK_EQ_INT(cf_column_torn(c), 0);
    CHECK_OK(cf_column_read(c, 0, 4, v, NULL, 8, 8, &err), &err);
    CHECK_EQ_INT(v[0], 10);
    CHECK_EQ_INT(v[3], 13);
    fixed = 99;
    CHECK_OK(cf_column_repair(c, &fixed, &err), &err);
    CHECK_EQ_INT(fixed & (CF_REPAIR_TRUNCATED | CF_REPAIR_STRAY | CF_REPAIR_TORN | CF_REPAIR_SUMS), 0);
    CHECK_OK(cf_column_close(c, &err), &err);
    cf_file_close(f);
}

static void test_short_blob_is_refused(void)
{
    cf_file *f = cf_test_open_new("f");
    make_x(f);
    CHECK(truncate(at("000000"), 12) == 0);
    cf_error err;
    cf_column *c = NULL;
    CHECK_OK(cf_column_open(&c, f, "x", &err), &err);
    unsigned fixed = 0;
    CHECK_FAILS(cf_column_repair(c, &fixed, &err), CF_ESHORT, &err, "000000: blob is short: rows 0..3");
    CHECK_EQ_INT(fixed, 0);
    CHECK_EQ_INT(size_of("000000"), 12);
    cf_column_close(c, NULL);
    cf_file_close(f);
}

static void test_read_only_and_null(void)
{
    cf_file *f = cf_test_open_new("f");
    make_x(f);
    cf_file_close(f);
    char path[4400];
    snprintf(path, sizeof path, "%s/f", cf_test_dir());
    cf_error err;
    CHECK_OK(cf_file_open(&f, path, 0, &err), &err);
    cf_column *c = NULL;
    CHECK_OK(cf_column_open(&c, f, "x", &err), &err);
    unsigned fixed = 0;
    CHECK_FAILS(cf_column_repair(c, &fixed, &err), CF_EREADONLY, &err, "read-only");
    CHECK_FAILS(cf_column_repair(c, NULL, &err), CF_EARG, &err, "cf_column_repair");
    cf_column_close(c, NULL);
    cf_file_close(f);
}

CF_TESTS(CF_TEST(test_repair_cuts_removes_and_clears),
         CF_TEST(test_short_blob_is_refused),
         CF_TEST(test_read_only_and_null))
