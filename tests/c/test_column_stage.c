/* test_column_stage.c - what a column handle does before its commit:
 * staging names beside the column, which directories a new column may
 * replace, the torn mark made before a write over committed rows, and a
 * live writer seen through its lock. */
#include <sys/stat.h>

#include "column_stage.h"
#include "harness.h"

static int is_dir(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static int exists(const char *dir, const char *leaf)
{
    char p[4400];
    snprintf(p, sizeof p, "%s/%s", dir, leaf);
    struct stat st;
    return lstat(p, &st) == 0;
}

static void test_parent_of(void)
{
    char *p = cf__column_parent_of("a/b/c");
    CHECK_EQ_STR(p, "a/b");
    free(p);
    p = cf__column_parent_of("/c");
    CHECK_EQ_STR(p, "/");
    free(p);
    p = cf__column_parent_of("c");
    CHECK_EQ_STR(p, ".");
    free(p);
}

static void test_fresh_sibling(void)
{
    char col[4400], prefix[64];
    snprintf(col, sizeof col, "%s/col", cf_test_dir());
    snprintf(prefix, sizeof prefix, "%s/.stage-col.%ld.", cf_test_dir(), (long)getpid());
    cf_error err;
    char *a = NULL, *b = NULL, *name = NULL;
    /* with make_dir: a new directory beside the column, a new one each time */
    CHECK_OK(cf__column_fresh_sibling(col, ".stage-", 1, &a, &err), &err);
    CHECK_OK(cf__column_fresh_sibling(col, ".stage-", 1, &b, &err), &err);
    CHECK(a && b && strcmp(a, b) != 0);
    CHECK(a && strncmp(a, prefix, strlen(prefix)) == 0);
    CHECK(a && is_dir(a));
    CHECK(b && is_dir(b));
    /* without: a name that does not exist, nothing made */
    CHECK_OK(cf__column_fresh_sibling(col, ".old-", 0, &name, &err), &err);
    struct stat st;
    CHECK(name && lstat(name, &st) != 0);
    free(a);
    free(b);
    free(name);
    /* a parent that is not there names the path and the problem */
    snprintf(col, sizeof col, "%s/missing/col", cf_test_dir());
    CHECK_FAILS(cf__column_fresh_sibling(col, ".stage-", 1, &a, &err), CF_ENOENT, &err, "cannot make staging directory");
}

static void test_check_replaceable(void)
{
    char dir[4400], sub[4500], file[4500];
    cf_error err;
    snprintf(dir, sizeof dir, "%s/x", cf_test_dir());
    CHECK_OK(cf__column_check_replaceable(dir, &err), &err); /* absent */
    CHECK(mkdir(dir, 0777) == 0);
    CHECK_OK(cf__column_check_replaceable(dir, &err), &err); /* empty */
    snprintf(file, sizeof file, "%s/header", dir);
    FILE *fp = fopen(file, "w");
    CHECK(fp != NULL);
    if (fp) fclose(fp);
    CHECK_OK(cf__column_check_replaceable(dir, &err), &err); /* a column's files */
    snprintf(sub, sizeof sub, "%s/inner", dir);
    CHECK(mkdir(sub, 0777) == 0);
    CHECK_FAILS(cf__column_check_replaceable(dir, &err), CF_EEXIST, &err, "is a group holding 'inner'");
}

static void test_torn_mark_and_live_writer(void)
{
    cf_file *f = cf_test_open_new("f");
    cf_error err;
    cf_column *c = NULL;
    int64_t rows[1] = { 4 }, v[4] = { 1, 2, 3, 4 }, w = 9;
    CHECK_OK(cf_column_create_ex(&c, f, "x", "i8", 1, 1, rows, 0, &err), &err);
    CHECK_OK(cf_column_write(c, 0, 4, v, NULL, 8, 8, &err), &err);
    CHECK_OK(cf_column_close(c, &err), &err);
    char dir[4400];
    snprintf(dir, sizeof dir, "%s/f/x", cf_test_dir());
    CHECK_OK(cf_column_open(&c, f, "x", &err), &err);
    CHECK(!cf__column_writer_alive(c)); /* opening takes no lock */
    CHECK(!exists(dir, "colfile-torn"));
    /* a write over a committed row marks the column torn first and holds
     * the writer lock until the commit */
    CHECK_OK(cf_column_write(c, 1, 1, &w, NULL, 8, 8, &err), &err);
    CHECK(exists(dir, "colfile-torn"));
    CHECK(cf__column_writer_alive(c));
    CHECK_OK(cf_column_flush(c, &err), &err);
    CHECK(!exists(dir, "colfile-torn"));
    CHECK_OK(cf_column_close(c, &err), &err);
    cf_file_close(f);
}

CF_TESTS(CF_TEST(test_parent_of),
         CF_TEST(test_fresh_sibling),
         CF_TEST(test_check_replaceable),
         CF_TEST(test_torn_mark_and_live_writer))
