/* test_rename.c - cf_file_rename: the column moves whole in one step,
 * within and across groups; an existing destination, a group, hostile
 * names and a column being written are refused with nothing changed; the
 * catalog written before the rename is not trusted after it. */
#include <fcntl.h>
#include <sys/stat.h>

#include "column.h"
#include "file.h"
#include "lock_test.h"

/* 1 if column `name` of f opens and holds rows 1, 2, 3. */
static int holds_123(cf_file *f, const char *name)
{
    cf_error err;
    cf_column *c = NULL;
    if (cf_column_open(&c, f, name, &err) != 0) return 0;
    int64_t v[3] = { 0, 0, 0 };
    int ok = cf_column_size(c) == 3 && cf_column_read(c, 0, 3, v, NULL, 8, 8, &err) == 0 && v[0] == 1 &&
             v[1] == 2 && v[2] == 3;
    (void)cf_column_close(c, NULL);
    return ok;
}

static int listed(cf_file *f, const char *name)
{
    cf_error err;
    char **names = NULL;
    int64_t n = 0;
    int found = 0;
    CHECK_OK(cf_file_list(f, &names, &n, &err), &err);
    for (int64_t i = 0; i < n; i++) found |= strcmp(names[i], name) == 0;
    cf_names_free(names, n);
    return found;
}

static void test_rename_within_and_across_groups(void)
{
    cf_error err;
    cf_file *f = file_with("f", "x", "g/y", NULL);
    if (!f) return;
    CHECK(listed(f, "x")); /* the catalog has seen x */
    CHECK_OK(cf_file_rename(f, "x", "z", &err), &err);
    CHECK(!exists("x") && exists("z/header"));
    CHECK(holds_123(f, "z") && !listed(f, "x") && listed(f, "z"));
    CHECK_OK(cf_file_rename(f, "z", "a/b/w", &err), &err); /* groups made on the way */
    CHECK(holds_123(f, "a/b/w") && !exists("z"));
    CHECK_OK(cf_file_rename(f, "g/y", "y", &err), &err);
    CHECK(holds_123(f, "y") && exists("g")); /* the group stays */
    cf_file_close(f);
    /* another handle opened afterwards sees the same */
    f = open_file(0);
    if (!f) return;
    CHECK(listed(f, "a/b/w") && listed(f, "y") && !listed(f, "x") && !listed(f, "g/y"));
    cf_file_close(f);
}

static void test_rename_refusals_change_nothing(void)
{
    cf_error err;
    cf_file *f = file_with("f", "x", "y", "g/h", NULL);
    if (!f) return;
    CHECK_FAILS(cf_file_rename(f, "x", "y", &err), CF_EEXIST, &err, "'y' already exists");
    CHECK_FAILS(cf_file_rename(f, "x", "g", &err), CF_EEXIST, &err, "'g' already exists");
    CHECK_FAILS(cf_file_rename(f, "nope", "w", &err), CF_ENOENT, &err, "no column 'nope'");
    CHECK_FAILS(cf_file_rename(f, "g", "w", &err), CF_EKIND, &err, "is a group");
    CHECK_FAILS(cf_file_rename(f, "x", "../x", &err), CF_ENAME, &err, "..");
    CHECK_FAILS(cf_file_rename(f, "../f/x", "w", &err), CF_ENAME, &err, "..");
    CHECK_FAILS(cf_file_rename(f, "x", "/tmp/x", &err), CF_ENAME, &err, "");
    CHECK_FAILS(cf_file_rename(f, "x", "a b", &err), CF_ENAME, &err, "");
    CHECK_FAILS(cf_file_rename(f, "x", "x/in", &err), CF_EARG, &err, "into itself");
    CHECK_FAILS(cf_file_rename(f, "x", "y/in", &err), CF_EEXIST, &err, "");  /* inside a column */
    CHECK_FAILS(cf_file_rename(f, "x", ".", &err), CF_EKIND, &err, "attributes");
    CHECK(holds_123(f, "x") && holds_123(f, "y") && holds_123(f, "g/h") && !exists("w") && !exists("y/in"));
    /* a symbolic link on the way is not followed */
    char link[4400];
    snprintf(link, sizeof link, "%s/ln", g_root);
    CHECK_EQ_INT(symlink(cf_test_dir(), link), 0);
    CHECK_FAILS(cf_file_rename(f, "x", "ln/x", &err), CF_ENAME, &err, "symbolic link");
    CHECK(holds_123(f, "x"));
    cf_file_close(f);
    cf_file *r = NULL;
    CHECK_OK(cf_file_open(&r, g_root, 0, &err), &err);
    CHECK_FAILS(cf_file_rename(r, "x", "w", &err), CF_EREADONLY, &err, "read-only");
    cf_file_close(r);
}

static void test_rename_refused_while_written(void)
{
    use_root("f");
    cf_error err;
    cf_file *f = open_file(0), *other = open_file(0);
    if (!f || !other) return;
    made(f, "x");
    cf_column *c = written_in_place(other, "x", 1); /* other holds x's lock */
    CHECK_FAILS(cf_file_rename(f, "x", "w", &err), CF_EBUSY, &err, "x");
    CHECK(exists("x/header") && !exists("w"));
    /* the groups made for a new name are taken away again */
    made(f, "old/y");
    CHECK_FAILS(cf_file_rename(f, "x", "n1/n2/w", &err), CF_EBUSY, &err, "x");
    CHECK(!exists("n1"));
    CHECK_FAILS(cf_file_rename(f, "x", "old/n2/w", &err), CF_EBUSY, &err, "x");
    CHECK(!exists("old/n2") && exists("old/y/header"));
    CHECK_OK(cf_column_close(c, &err), &err);
    /* a writer creating the destination holds its lock too */
    c = make(other, "w");
    CHECK_FAILS(cf_file_rename(f, "x", "w", &err), CF_EBUSY, &err, "w");
    CHECK_OK(cf_column_close(c, &err), &err);
    CHECK_FAILS(cf_file_rename(f, "x", "w", &err), CF_EEXIST, &err, "already exists");
    CHECK_OK(cf_file_rename(f, "x", "v", &err), &err);
    CHECK(holds_123(f, "v") && holds_123(other, "v"));
    cf_file_close(other);
    cf_file_close(f);
}

CF_TESTS(CF_TEST(test_rename_within_and_across_groups),
         CF_TEST(test_rename_refusals_change_nothing),
         CF_TEST(test_rename_refused_while_written))
