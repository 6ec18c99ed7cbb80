/* test_lock_files.c - the writer lock where the kernel has no open file
 * description locks (docs/format.md 8.3): a file of its own per column,
 * `.colfile-lock.<leaf>`, locked whole with flock and removed by its
 * holder.  Linux has OFD locks, so this test links a core built with
 * CF_NO_OFD_LOCKS, where they report ENOSYS as such a kernel would. */
#include <errno.h>
#include <sys/wait.h>

#include "lock_test.h"
#include "platform.h"
#include "writer_lock.h"

/* The build stands in for such a kernel. */
static void test_no_ofd_locks_here(void)
{
    CHECK(cf__ofd_lock(0, 1, 0) != 0 && errno == ENOSYS);
    CHECK(cf__ofd_probe(0, 0) < 0 && errno == ENOSYS);
}

static void test_a_file_per_column_held_and_removed(void)
{
    use_root("F");
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
    use_root("S");
    check_shared_holders(".colfile-lock.c");
    CHECK(!exists(".colfile-lock"));
}

/* A stale lock file (its writer gone) does not stop the next writer, and
 * repair removes one nobody holds. */
static void test_stale_files_neither_block_nor_stay(void)
{
    use_root("R");
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
    use_root("K");
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
