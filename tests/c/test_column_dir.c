/* test_column_dir.c - a column directory taken as a whole: a header makes
 * it a column; only its own regular format files make it removable in one
 * rename; its writer lock, taken through a File, excludes the File's own
 * writers of it and any other File's. */
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "column_dir.h"
#include "lock_test.h"

static void touch(const char *rel)
{
    char p[4400];
    snprintf(p, sizeof p, "%s/%s", g_root, rel);
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    CHECK(fd >= 0);
    if (fd >= 0) close(fd);
}

static const char *at(const char *rel)
{
    static char p[4400];
    snprintf(p, sizeof p, "%s/%s", g_root, rel);
    return p;
}

static void test_header_and_own_files(void)
{
    use_root("f");
    cf_error err;
    cf_file *f = open_file(0);
    CHECK_OK(cf_column_close(make(f, "x"), &err), &err);
    CHECK(cf__column_dir_has_header(at("x")));
    CHECK(cf__column_dir_only_own(at("x")));
    /* a group holds no header */
    CHECK_OK(cf_column_close(make(f, "g/z"), &err), &err);
    CHECK(!cf__column_dir_has_header(at("g")));
    /* a foreign file, a hidden companion, a directory inside */
    CHECK_OK(cf_column_close(make(f, "a"), &err), &err);
    touch("a/notes.txt");
    CHECK(!cf__column_dir_only_own(at("a")));
    CHECK_OK(cf_column_close(make(f, "b"), &err), &err);
    touch("b/.colfile-lock");
    CHECK(!cf__column_dir_only_own(at("b")));
    CHECK_OK(cf_column_close(make(f, "c"), &err), &err);
    CHECK(mkdir(at("c/000009"), 0755) == 0);
    CHECK(!cf__column_dir_only_own(at("c")));
    /* nothing there at all */
    CHECK(!cf__column_dir_has_header(at("none")) && !cf__column_dir_only_own(at("none")));
    cf_file_close(f);
}

static void test_lock_excludes_writers(void)
{
    use_root("g");
    cf_error err;
    cf_file *f = open_file(0), *other = open_file(0);
    CHECK_OK(cf_column_close(make(f, "x"), &err), &err);
    cf__lock lk = CF__LOCK_NONE;
    CHECK_OK(cf__column_dir_lock(f, at("x"), &lk, &err), &err);
    CHECK(cf__lock_is_held(&lk));
    /* while it is held, neither File can write the column */
    cf_column *c = NULL;
    CHECK_FAILS(cf_column_create(&c, other, "x", "<i8", 1, 3, 1, &err), CF_EBUSY, &err, "x");
    cf__lock_release(&lk);
    CHECK(!cf__lock_is_held(&lk));
    c = make(other, "x");
    CHECK(c != NULL);
    /* and a writer of the column keeps the lock from being taken */
    cf__lock lk2 = CF__LOCK_NONE;
    CHECK_FAILS(cf__column_dir_lock(f, at("x"), &lk2, &err), CF_EBUSY, &err, "x");
    cf__lock_release(&lk2); /* (what it holds of the File's lock directory) */
    CHECK_OK(cf_column_close(c, &err), &err);
    cf_file_close(other);
    cf_file_close(f);
}

CF_TESTS(CF_TEST(test_header_and_own_files),
         CF_TEST(test_lock_excludes_writers))
