/* test_column_version.c - the version a handle opened
 * (src/column/column_version.c): files are looked up in the directory the
 * handle holds, whatever is published at the column's name meanwhile, and
 * the handle tells when its version moved, is gone, or was changed by
 * another writer. */
#include <fcntl.h>
#include <sys/stat.h>

#include "column.h"
#include "column_version.h"
#include "fsutil.h"
#include "harness.h"

static char g_root[4200];

/* A File with column "x": `rows` f8 rows of value v + i. */
static void make_x(int64_t rows, double v)
{
    cf_error err;
    cf_file *f = NULL;
    CHECK_OK(cf_file_open(&f, g_root, CF_OPEN_WRITE | CF_OPEN_CREATE, &err), &err);
    cf_column *c = NULL;
    CHECK_OK(cf_column_create(&c, f, "x", "f8", 1, rows, 1, &err), &err);
    double buf[64];
    for (int64_t i = 0; i < rows; i++) buf[i] = v + (double)i;
    CHECK_OK(cf_column_write(c, 0, rows, buf, NULL, 8, 8, &err), &err);
    CHECK_OK(cf_column_close(c, &err), &err);
    cf_file_close(f);
}

static char *read_all(const char *path, size_t *len)
{
    char *data = NULL;
    cf_error err;
    if (cf__read_file(path, &data, len, &err)) return NULL;
    return data;
}

static void test_reads_in_the_held_directory(void)
{
    snprintf(g_root, sizeof g_root, "%s/F", cf_test_dir());
    make_x(10, 0.5);
    cf_error err;
    cf_file *f = NULL;
    CHECK_OK(cf_file_open(&f, g_root, 0, &err), &err);
    cf_column *c = NULL;
    CHECK_OK(cf_column_open(&c, f, "x", &err), &err);
    if (!c) {
        cf_file_close(f);
        return;
    }
    char path[4300];
    snprintf(path, sizeof path, "%s/x/header", g_root);
    size_t want_len = 0, len = 0;
    char *want = read_all(path, &want_len), *got = NULL;
    CHECK(want != NULL);
    CHECK_OK(cf__version_read(c, "header", &got, &len, &err), &err);
    CHECK(got && want && len == want_len && memcmp(got, want, len) == 0);
    free(got);
    CHECK_EQ_INT(cf__version_has(c, "header"), 1);
    CHECK_EQ_INT(cf__version_has(c, "no-such-file"), 0);
    CHECK_FAILS(cf__version_read(c, "no-such-file", &got, &len, &err), CF_ENOENT, &err, "no-such-file");
    uint64_t id[2];
    cf__version_id(c, id);
    struct stat st;
    snprintf(path, sizeof path, "%s/x", g_root);
    CHECK(stat(path, &st) == 0 && id[1] == (uint64_t)st.st_ino && id[0] == (uint64_t)st.st_dev);
    CHECK_EQ_INT(cf__version_moved(c), 0);
    CHECK_EQ_INT(cf__version_gone(c), 0);
    CHECK_EQ_INT(cf__version_changed(c), 0);

    /* The column is replaced: a new version at the name, the old one moved
     * aside.  The handle still reads its own version's files. */
    char aside[4300];
    snprintf(aside, sizeof aside, "%s/.old-x", g_root);
    CHECK(rename(path, aside) == 0);
    make_x(20, 100.0);
    CHECK_EQ_INT(cf__version_moved(c), 1);
    CHECK_EQ_INT(cf__version_gone(c), 1);
    CHECK_EQ_INT(cf__version_changed(c), 1);
    CHECK_OK(cf__version_read(c, "header", &got, &len, &err), &err);
    CHECK(got && want && len == want_len && memcmp(got, want, len) == 0);
    free(got);
    CHECK_EQ_INT(cf__version_replaced(c, &err), CF_EREPLACED);
    CHECK(strstr(err.message, "x") != NULL);
    /* a fresh open sees the new version */
    cf_column *c2 = NULL;
    CHECK_OK(cf_column_open(&c2, f, "x", &err), &err);
    if (c2) CHECK_EQ_INT(cf_column_size(c2), 20);
    cf_column_close(c2, NULL);
    free(want);
    cf_column_close(c, NULL);
    cf_file_close(f);
}

static void test_writer_sees_another_commit(void)
{
    snprintf(g_root, sizeof g_root, "%s/F", cf_test_dir());
    make_x(10, 0.5);
    cf_error err;
    cf_file *f = NULL, *g = NULL;
    CHECK_OK(cf_file_open(&f, g_root, CF_OPEN_WRITE, &err), &err);
    CHECK_OK(cf_file_open(&g, g_root, CF_OPEN_WRITE, &err), &err);
    cf_column *a = NULL, *b = NULL;
    CHECK_OK(cf_column_open(&a, f, "x", &err), &err);
    CHECK_OK(cf_column_open(&b, g, "x", &err), &err);
    if (!a || !b) goto done;
    CHECK_OK(cf__version_check(a, &err), &err);
    CHECK_EQ_INT(cf__version_header_changed(a), 0);
    /* b appends and commits: a's header is no longer the column's */
    CHECK_OK(cf_column_grow(b, 5, 1, &err), &err);
    double five[5] = { 1, 2, 3, 4, 5 };
    CHECK_OK(cf_column_write(b, 10, 5, five, NULL, 8, 8, &err), &err);
    CHECK_OK(cf_column_close(b, &err), &err);
    b = NULL;
    CHECK_EQ_INT(cf__version_header_changed(a), 1);
    CHECK_EQ_INT(cf__version_moved(a), 0);
    CHECK_FAILS(cf__version_check(a, &err), CF_EBUSY, &err, NULL);
done:
    cf_column_close(b, NULL);
    cf_column_close(a, NULL);
    cf_file_close(g);
    cf_file_close(f);
}

CF_TESTS(CF_TEST(test_reads_in_the_held_directory), CF_TEST(test_writer_sees_another_commit))
