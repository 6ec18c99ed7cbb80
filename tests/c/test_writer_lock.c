/* The writer lock (docs/format.md 8.3): one byte per column of a lock file
 * shared by the columns of a directory, kept while the File is open,
 * removed where no one holds a lock in it. */
#define _GNU_SOURCE 1 /* F_OFD_SETLK, to stand in for a process tidying */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "lock_test.h"

static void setup(void) { use_root("F"); }

static void test_one_lock_file_per_directory(void)
{
    setup();
    cf_error err;
    cf_file *f = open_file(0);
    if (!f) return;
    cf_column *a = make(f, "a"), *b = make(f, "g/b"), *a2 = make(f, "a2");
    /* columns of one directory write side by side, each holding its byte */
    CHECK(exists(".colfile-lock") && exists("g/.colfile-lock"));
    CHECK(!exists(".colfile-lock.a") && !exists("g/.colfile-lock.b"));
    /* the same column through a second File is refused, naming the lock */
    cf_file *other = open_file(0);
    cf_column *again = NULL;
    if (other) {
        CHECK_FAILS(cf_column_create(&again, other, "a", "<i8", 1, 3, 1, &err), CF_EBUSY, &err,
                    "/F/.colfile-lock is held");
        CHECK(strstr(err.message, "/F/a: another writer") != NULL);
        cf_file_close(other); /* holds no lock: leaves the file to f's columns */
    }
    CHECK(exists(".colfile-lock"));
    CHECK_OK(cf_column_close(a, &err), &err);
    CHECK_OK(cf_column_close(b, &err), &err);
    CHECK_OK(cf_column_close(a2, &err), &err);
    /* kept while the File is open, for its next columns */
    CHECK(exists(".colfile-lock") && exists("g/.colfile-lock"));
    cf_column *c = make(f, "c");
    CHECK_OK(cf_column_close(c, &err), &err);
    /* removed before the catalog stamps the directories */
    CHECK_OK(cf_file_catalog_update(f, &err), &err);
    CHECK(!exists(".colfile-lock") && !exists("g/.colfile-lock"));
    cf_file_close(f);
    /* and the catalog still vouches for the root: listing reads it */
    cf_file *r = NULL;
    CHECK_OK(cf_file_open(&r, g_root, CF_OPEN_READ, &err), &err);
    char **names = NULL;
    int64_t n = 0;
    if (r) CHECK_OK(cf_file_list(r, &names, &n, &err), &err);
    CHECK_EQ_INT(n, 4);
    cf_names_free(names, n);
    cf_file_close(r);
}

static void test_a_held_lock_keeps_the_file(void)
{
    setup();
    cf_error err;
    cf_file *f1 = open_file(0), *f2 = open_file(0);
    if (!f1 || !f2) return;
    cf_column *x = make(f1, "x");
    cf_column *y = make(f2, "y");
    CHECK_OK(cf_column_close(y, &err), &err);
    cf_file_close(f2); /* x's byte is still held: the file stays */
    CHECK(exists(".colfile-lock"));
    /* a column outliving its File keeps its lock, and nothing else is lost */
    cf_file_close(f1);
    CHECK(exists(".colfile-lock"));
    CHECK_OK(cf_column_close(x, &err), &err);
    CHECK(exists("x/header"));
    /* the next writer that finds it idle removes it */
    cf_file *f3 = open_file(0);
    if (!f3) return;
    cf_column *z = make(f3, "z");
    CHECK_OK(cf_column_close(z, &err), &err);
    cf_file_close(f3);
    CHECK(!exists(".colfile-lock"));
}

static void test_repair_removes_an_idle_file_silently(void)
{
    setup();
    cf_error err;
    cf_file *f = open_file(0);
    if (!f) return;
    cf_column *g = make(f, "g/c");
    CHECK_OK(cf_column_close(g, &err), &err);
    cf_column *held = make(f, "held");
    cf_file *other = open_file(0);
    if (!other) return;
    char **lines = NULL;
    int64_t n = -1;
    /* g/ has an idle one, the root one is held by `held` */
    CHECK_OK(cf_file_cleanup(other, 1, &lines, &n, &err), &err);
    CHECK_EQ_INT(n, 0);
    cf_names_free(lines, n);
    CHECK(exists("g/.colfile-lock") && exists(".colfile-lock"));
    CHECK_OK(cf_file_cleanup(other, 0, &lines, &n, &err), &err);
    CHECK_EQ_INT(n, 0); /* not reported: no interrupted work */
    cf_names_free(lines, n);
    CHECK(!exists("g/.colfile-lock"));
    CHECK(exists(".colfile-lock") && exists(".colfile-stage.held") == 0);
    CHECK_OK(cf_column_close(held, &err), &err);
    cf_file_close(other);
    cf_file_close(f);
    CHECK(!exists(".colfile-lock"));
}

/* A process tidying the lock file holds all of it for a moment; a writer
 * arriving then waits and makes a new file. */
typedef struct {
    int fd;
    char path[4400];
} tidier;

static void *tidy_later(void *arg)
{
    tidier *t = arg;
    struct timespec pause = { 0, 5 * 1000 * 1000 };
    nanosleep(&pause, NULL);
    CHECK(unlink(t->path) == 0);
    close(t->fd); /* lets go */
    return NULL;
}

static int lock_whole(const char *path)
{
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    struct flock fl = { 0 };
    fl.l_type = F_WRLCK;
    fl.l_whence = SEEK_SET;
    if (fd >= 0 && fcntl(fd, F_OFD_SETLK, &fl) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static void test_a_writer_waits_out_a_tidy(void)
{
    setup();
    cf_error err;
    cf_file *f = open_file(0);
    if (!f) return;
    tidier t;
    snprintf(t.path, sizeof t.path, "%s/.colfile-lock", g_root);
    t.fd = lock_whole(t.path);
    CHECK(t.fd >= 0);
    struct stat before;
    CHECK(stat(t.path, &before) == 0);
    int keep = open(t.path, O_RDONLY | O_CLOEXEC); /* its inode number is not reused meanwhile */
    pthread_t th;
    CHECK(pthread_create(&th, NULL, tidy_later, &t) == 0);
    cf_column *c = make(f, "c"); /* retries until the tidy is done */
    pthread_join(th, NULL);
    struct stat after;
    CHECK(stat(t.path, &after) == 0);
    CHECK(after.st_ino != before.st_ino); /* made anew after the tidy */
    close(keep);
    CHECK_OK(cf_column_close(c, &err), &err);
    /* a file held whole for good: the writer gives up, saying why */
    int fd = lock_whole(t.path);
    CHECK(fd >= 0);
    cf_column *d = NULL;
    CHECK_FAILS(cf_column_create(&d, f, "d", "<i8", 1, 3, 1, &err), CF_EBUSY, &err, "stays locked whole");
    close(fd);
    cf_file_close(f);
    CHECK(!exists(".colfile-lock") && !exists("d") && exists("c/header"));
}

static void test_shared_writers_and_the_last_one_out(void)
{
    setup();
    check_shared_holders(".colfile-lock");
}

static void test_long_names_lock_what_repair_checks(void)
{
    setup();
    cf_error err;
    cf_file *f = open_file(0);
    if (!f) return;
    char name[251];
    memset(name, 'n', 250);
    name[250] = '\0';
    cf_column *c = make(f, name); /* staged under a cut, hashed leaf */
    cf_file *other = open_file(0);
    char **lines = NULL;
    int64_t n = -1;
    if (other) CHECK_OK(cf_file_cleanup(other, 0, &lines, &n, &err), &err);
    CHECK_EQ_INT(n, 0); /* its staging directory is seen as held */
    cf_names_free(lines, n);
    CHECK_OK(cf_column_close(c, &err), &err);
    CHECK(exists(name));
    cf_file_close(other);
    cf_file_close(f);
}

static int mode_of(const char *rel)
{
    char p[4400];
    snprintf(p, sizeof p, "%s/%s", g_root, rel);
    struct stat st;
    return stat(p, &st) == 0 ? (int)(st.st_mode & 0777) : -1;
}

/* Whoever may write a directory may lock its columns, whatever the umask
 * of the writer that made the lock file. */
static void test_the_lock_file_is_writable_by_the_directory_writers(void)
{
    setup();
    cf_error err;
    mode_t old = umask(022);
    cf_file *f = open_file(0);
    if (f) {
        char g[4400];
        snprintf(g, sizeof g, "%s/shared", g_root);
        CHECK(mkdir(g, 0775) == 0 && chmod(g, 02775) == 0); /* a group's directory */
        cf_column *a = make(f, "a"), *b = make(f, "shared/b");
        CHECK_EQ_INT(mode_of(".colfile-lock"), 0600); /* the root: the owner's alone (0755) */
        CHECK_EQ_INT(mode_of("shared/.colfile-lock"), 0660);
        CHECK_OK(cf_column_close(a, &err), &err);
        CHECK_OK(cf_column_close(b, &err), &err);
        cf_file_close(f);
    }
    umask(old);
}

/* A child made by fork while a column is open inherits the descriptor of
 * its lock; cf_column_forget lets go of the child's copy, so that the
 * parent's next writer of the column is not refused while the child lives. */
static void test_a_forked_child_forgets_the_parents_lock(void)
{
    setup();
    cf_error err;
    cf_file *f = open_file(0);
    if (!f) return;
    cf_column *c = make(f, "c");
    int up[2], down[2];
    CHECK(pipe(up) == 0 && pipe(down) == 0);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        cf_column_forget(c); /* nothing committed, removed or unlocked */
        char b = 1, go;
        if (write(up[1], &b, 1) != 1 || read(down[0], &go, 1) != 1) _exit(2);
        _exit(0);
    }
    char b = 0;
    CHECK(read(up[0], &b, 1) == 1 && b == 1);
    CHECK(!exists("c")); /* the child's forget published nothing */
    CHECK_OK(cf_column_close(c, &err), &err); /* the parent commits it */
    CHECK(exists("c/header"));
    cf_column *again = NULL;
    int64_t v = 42;
    CHECK_OK(cf_column_open(&again, f, "c", &err), &err);
    if (again) {
        CHECK_OK(cf_column_write(again, 0, 1, &v, NULL, 8, 8, &err), &err); /* not CF_EBUSY */
        CHECK_OK(cf_column_close(again, &err), &err);
    }
    CHECK(write(down[1], &b, 1) == 1);
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    cf_file_close(f);
    CHECK(!exists(".colfile-lock"));
}

CF_TESTS(CF_TEST(test_one_lock_file_per_directory),
         CF_TEST(test_a_forked_child_forgets_the_parents_lock),
         CF_TEST(test_the_lock_file_is_writable_by_the_directory_writers),
         CF_TEST(test_a_held_lock_keeps_the_file),
         CF_TEST(test_repair_removes_an_idle_file_silently),
         CF_TEST(test_a_writer_waits_out_a_tidy),
         CF_TEST(test_shared_writers_and_the_last_one_out),
         CF_TEST(test_long_names_lock_what_repair_checks))
