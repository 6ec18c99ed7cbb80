/* test_lock_files.c - the writer lock where the kernel has no open file
 * description locks (docs/format.md 8.3): a file of its own per column,
 * `.colfile-lock.<leaf>`, locked whole with flock and removed by its
 * holder.  Linux has OFD locks, so this test links a core built with
 * CF_NO_OFD_LOCKS, where they report ENOSYS as such a kernel would. */
#include <errno.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "harness.h"
#include "platform.h"
#include "writer_lock.h"

static char g_root[4200];

static int exists(const char *rel)
{
    char p[4400];
    snprintf(p, sizeof p, "%s/%s", g_root, rel);
    struct stat st;
    return lstat(p, &st) == 0;
}

static cf_file *open_file(int flags)
{
    cf_error err;
    cf_file *f = NULL;
    CHECK_OK(cf_file_open(&f, g_root, CF_OPEN_WRITE | CF_OPEN_CREATE | CF_OPEN_NODURABLE | flags, &err), &err);
    return f;
}

static cf_column *make(cf_file *f, const char *name)
{
    cf_error err;
    cf_column *c = NULL;
    int64_t rows[3] = { 1, 2, 3 };
    CHECK_OK(cf_column_create(&c, f, name, "<i8", 1, 3, 1, &err), &err);
    if (c) CHECK_OK(cf_column_write(c, 0, 3, rows, NULL, 8, 8, &err), &err);
    return c;
}

static void setup(const char *name) { snprintf(g_root, sizeof g_root, "%s/%s", cf_test_dir(), name); }

/* The build stands in for such a kernel. */
static void test_no_ofd_locks_here(void)
{
    setup("probe");
    CHECK(cf__ofd_lock(0, 1, 0) != 0 && errno == ENOSYS);
    CHECK(cf__ofd_probe(0, 0) < 0 && errno == ENOSYS);
}

static void test_a_file_per_column_held_and_removed(void)
{
    setup("F");
    cf_error err;
    cf_file *f = open_file(0);
    if (!f) return;
    cf_column *a = make(f, "a"), *b = make(f, "g/b");
    CHECK(exists(".colfile-lock.a") && exists("g/.colfile-lock.b"));
    CHECK(!exists(".colfile-lock") && !exists("g/.colfile-lock"));
    /* the same column through a second File is refused, naming the lock */
    cf_file *other = open_file(0);
    cf_column *again = NULL;
    if (other) {
        CHECK_FAILS(cf_column_create(&again, other, "a", "<i8", 1, 3, 1, &err), CF_EBUSY, &err,
                    "/F/.colfile-lock.a is held");
        cf_file_close(other);
    }
    /* a crash would leave a marked column; its writer is seen alive */
    CHECK_EQ_INT(cf__lock_held(g_root, "a", 1), 1);
    CHECK_EQ_INT(cf__lock_held(g_root, "a2", 2), 0);
    CHECK_OK(cf_column_close(a, &err), &err);
    CHECK_OK(cf_column_close(b, &err), &err);
    /* each holder removes its file as it lets go */
    CHECK(!exists(".colfile-lock.a") && !exists("g/.colfile-lock.b"));
    CHECK_EQ_INT(cf__lock_held(g_root, "a", 1), 0);
    CHECK(exists("a/header") && exists("g/b/header"));
    cf_file_close(f);
}

static void test_shared_holders_and_the_last_one_out(void)
{
    setup("S");
    cf_error err;
    cf_file *f = open_file(0);
    if (!f) return;
    CHECK_OK(cf_column_close(make(f, "c"), &err), &err);
    cf_file_close(f);
    cf_file *s1 = open_file(CF_OPEN_NOLOCK), *s2 = open_file(CF_OPEN_NOLOCK), *x = open_file(0);
    if (!s1 || !s2 || !x) return;
    cf_column *a = NULL, *b = NULL, *e = NULL;
    int64_t v = 7;
    CHECK_OK(cf_column_open(&a, s1, "c", &err), &err);
    CHECK_OK(cf_column_open(&b, s2, "c", &err), &err);
    if (!a || !b) return;
    CHECK_OK(cf_column_write(a, 0, 1, &v, NULL, 8, 8, &err), &err);
    CHECK_OK(cf_column_write(b, 1, 1, &v, NULL, 8, 8, &err), &err); /* both hold it, shared */
    CHECK(exists(".colfile-lock.c") && !exists(".colfile-lock"));
    CHECK_OK(cf_column_open(&e, x, "c", &err), &err);
    if (e) {
        CHECK_FAILS(cf_column_write(e, 2, 1, &v, NULL, 8, 8, &err), CF_EBUSY, &err, ".colfile-lock.c is held");
        (void)cf_column_close(e, NULL); /* nothing to commit: it never locked */
    }
    cf_file_close(x);
    CHECK_OK(cf_column_close(a, &err), &err);
    CHECK(exists(".colfile-lock.c"));
    CHECK_OK(cf_column_close(b, &err), &err); /* the last one out removes it */
    CHECK(!exists(".colfile-lock.c"));
    cf_file_close(s1);
    cf_file_close(s2);
}

/* A stale lock file (its writer gone) does not stop the next writer, and
 * repair removes one nobody holds. */
static void test_stale_files_neither_block_nor_stay(void)
{
    setup("R");
    cf_error err;
    cf_file *f = open_file(0);
    if (!f) return;
    CHECK_OK(cf_column_close(make(f, "c"), &err), &err);
    char p[4400];
    snprintf(p, sizeof p, "%s/.colfile-lock.c", g_root);
    FILE *fp = fopen(p, "w"); /* left by a writer killed while it held it */
    if (fp) fclose(fp);
    cf_column *c = NULL;
    CHECK_OK(cf_column_open(&c, f, "c", &err), &err);
    int64_t v[3] = { 7, 8, 9 };
    if (c) CHECK_OK(cf_column_write(c, 0, 3, v, NULL, 8, 8, &err), &err);
    CHECK_OK(cf_column_close(c, &err), &err);
    CHECK(!exists(".colfile-lock.c"));
    fp = fopen(p, "w");
    if (fp) fclose(fp);
    char **lines = NULL;
    int64_t n = -1;
    CHECK_OK(cf_file_cleanup(f, 0, &lines, &n, &err), &err);
    cf_names_free(lines, n);
    CHECK(!exists(".colfile-lock.c"));
    cf_file_close(f);
}

/* A forked child's copy of the descriptor neither holds nor removes the
 * parent's lock (cf_column_forget). */
static void test_a_forked_child_forgets_the_parents_lock(void)
{
    setup("K");
    cf_error err;
    cf_file *f = open_file(0);
    if (!f) return;
    cf_column *c = make(f, "c");
    pid_t pid = fork();
    if (pid == 0) {
        cf_column_forget(c);
        _exit(exists(".colfile-lock.c") ? 0 : 1);
    }
    int status = 0;
    CHECK(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK(exists(".colfile-lock.c"));
    CHECK_EQ_INT(cf__lock_held(g_root, "c", 1), 1);
    CHECK_OK(cf_column_close(c, &err), &err);
    CHECK(!exists(".colfile-lock.c") && exists("c/header"));
    cf_file_close(f);
}

CF_TESTS(CF_TEST(test_no_ofd_locks_here), CF_TEST(test_a_file_per_column_held_and_removed),
         CF_TEST(test_shared_holders_and_the_last_one_out), CF_TEST(test_stale_files_neither_block_nor_stay),
         CF_TEST(test_a_forked_child_forgets_the_parents_lock))
