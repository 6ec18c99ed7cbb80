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

/* A lock file no File keeps open and no column holds a byte of is idle:
 * repair removes it without a word.  A File still open keeps its own. */
static void test_repair_removes_an_idle_file_silently(void)
{
    setup();
    cf_error err;
    cf_file *f = open_file(0);
    if (!f) return;
    cf_column *g = make(f, "g/c");
    cf_file_close(f); /* g/c holds its byte: the file in g/ stays */
    CHECK(exists("g/.colfile-lock"));
    CHECK_OK(cf_column_close(g, &err), &err); /* now idle, and left there */
    CHECK(exists("g/.colfile-lock"));
    f = open_file(0);
    if (!f) return;
    cf_column *held = make(f, "held");
    cf_file *other = open_file(0);
    if (!other) return;
    char **lines = NULL;
    int64_t n = -1;
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
    /* f keeps the root's file open for its next columns: no one removes it */
    CHECK_OK(cf_file_cleanup(other, 0, &lines, &n, &err), &err);
    cf_names_free(lines, n);
    CHECK(exists(".colfile-lock"));
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
    /* a file held whole for good: the writer gives up, saying why (f's
     * descriptor of it let go first, by the tidy of a catalog update) */
    CHECK_OK(cf_file_catalog_update(f, &err), &err);
    CHECK(!exists(".colfile-lock"));
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

/* A File locks its columns through one descriptor per directory, so it
 * keeps the list of bytes its handles hold: two handles of one column
 * through the same File exclude each other as through two Files. */
static void test_handles_of_one_file_exclude_each_other(void)
{
    setup();
    cf_error err;
    cf_file *f = open_file(0);
    if (!f) return;
    enum { MANY = 40 }; /* more than the list's first allocation */
    cf_column *cols[MANY];
    char name[32];
    for (int i = 0; i < MANY; i++) {
        snprintf(name, sizeof name, "c%02d", i);
        cols[i] = make(f, name);
    }
    cf_column *again = NULL;
    CHECK_FAILS(cf_column_create(&again, f, "c07", "<i8", 1, 3, 1, &err), CF_EBUSY, &err,
                "/F/.colfile-lock is held");
    CHECK(strstr(err.message, "/F/c07: another writer") != NULL);
    /* let go in another order than taken: each byte is released alone */
    for (int i = 1; i < MANY; i += 2) CHECK_OK(cf_column_close(cols[i], &err), &err);
    int64_t v = 9;
    cf_column *w = NULL;
    CHECK_OK(cf_column_open(&w, f, "c07", &err), &err);
    if (w) {
        CHECK_OK(cf_column_write(w, 0, 1, &v, NULL, 8, 8, &err), &err);
        cf_column *w2 = NULL;
        CHECK_OK(cf_column_open(&w2, f, "c07", &err), &err);
        if (w2) {
            CHECK_FAILS(cf_column_write(w2, 1, 1, &v, NULL, 8, 8, &err), CF_EBUSY, &err, "is held");
            (void)cf_column_close(w2, NULL);
        }
        CHECK_OK(cf_column_close(w, &err), &err);
    }
    CHECK_FAILS(cf_column_create(&again, f, "c08", "<i8", 1, 3, 1, &err), CF_EBUSY, &err, NULL);
    for (int i = 0; i < MANY; i += 2) CHECK_OK(cf_column_close(cols[i], &err), &err);
    CHECK_OK(cf_column_create(&again, f, "c08", "<i8", 1, 3, 1, &err), &err);
    CHECK_OK(cf_column_close(again, &err), &err);
    cf_file_close(f);
    CHECK(!exists(".colfile-lock"));
}

typedef struct {
    cf_file *f;
    int id, failures;
} maker;

static void *make_many(void *arg)
{
    maker *m = arg;
    for (int i = 0; i < 100; i++) {
        char name[32];
        snprintf(name, sizeof name, "t%d/c%03d", m->id % 2, m->id * 1000 + i);
        cf_error err;
        cf_column *c = NULL;
        int64_t rows[3] = { m->id, i, 3 };
        if (cf_column_create(&c, m->f, name, "<i8", 1, 3, 1, &err) != 0 ||
            cf_column_write(c, 0, 3, rows, NULL, 8, 8, &err) != 0 || cf_column_close(c, &err) != 0) {
            fprintf(stderr, "%s\n", err.message);
            m->failures++;
        }
    }
    return NULL;
}

/* Threads creating columns through one File share its descriptors. */
static void test_threads_of_one_file(void)
{
    setup();
    cf_file *f = open_file(0);
    if (!f) return;
    maker m[4];
    pthread_t th[4];
    for (int i = 0; i < 4; i++) {
        m[i] = (maker){ f, i, 0 };
        CHECK(pthread_create(&th[i], NULL, make_many, &m[i]) == 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        CHECK_EQ_INT(m[i].failures, 0);
    }
    char **names = NULL;
    int64_t n = 0;
    cf_error err;
    CHECK_OK(cf_file_list(f, &names, &n, &err), &err);
    CHECK_EQ_INT(n, 400);
    cf_names_free(names, n);
    cf_file_close(f);
    CHECK(!exists(".colfile-lock") && !exists("t0/.colfile-lock") && !exists("t1/.colfile-lock"));
}

/* The File's descriptor of a lock file holds the file against tidies, not
 * against rm: one removed behind its back is opened anew by the next
 * writer, so that it excludes writers who made a new one. */
static void test_a_lock_file_removed_behind_the_files_back(void)
{
    setup();
    cf_error err;
    cf_file *f = open_file(0), *other = open_file(0);
    if (!f || !other) return;
    CHECK_OK(cf_column_close(make(f, "a"), &err), &err); /* f keeps the file open */
    char p[4400];
    snprintf(p, sizeof p, "%s/.colfile-lock", g_root);
    CHECK(unlink(p) == 0);
    cf_column *b = make(other, "b"); /* makes a new file, holds b's byte in it */
    cf_column *b2 = NULL;
    CHECK_FAILS(cf_column_create(&b2, f, "b", "<i8", 1, 3, 1, &err), CF_EBUSY, &err, "is held");
    CHECK_OK(cf_column_close(b, &err), &err);
    CHECK_OK(cf_column_close(make(f, "b"), &err), &err);
    cf_file_close(other);
    cf_file_close(f);
    CHECK(!exists(".colfile-lock") && exists("b/header"));
}

/* A child made by fork inherits the File's descriptors of its lock files,
 * and with them the bytes its parent holds.  cf_file_forget_locks closes
 * the child's copies: a parent that dies then leaves no lock held behind,
 * however long the child lives. */
static void test_a_forked_child_forgets_the_files_locks(void)
{
    setup();
    int up[2], down[2];
    CHECK(pipe(up) == 0 && pipe(down) == 0);
    fflush(NULL);
    pid_t parent = fork();
    if (parent == 0) {
        /* the parent of the story: takes c's lock, forks, dies holding it */
        cf_file *f = open_file(0);
        cf_column *c = f ? make(f, "c") : NULL;
        if (!c) _exit(3);
        pid_t child = fork();
        if (child == 0) {
            cf_column_forget(c);
            cf_file_forget_locks(f);
            /* the File stays usable in the child, on descriptors of its own */
            cf_column *g = make(f, "g");
            cf_error e;
            char b = g && cf_column_close(g, &e) == 0 ? 1 : 0, go;
            if (write(up[1], &b, 1) != 1 || read(down[0], &go, 1) != 1) _exit(2);
            _exit(0);
        }
        char b;
        if (read(up[0], &b, 1) != 1) _exit(4);
        _exit(b == 1 ? 0 : 5); /* without closing anything: as if killed */
    }
    int status = 0;
    CHECK(waitpid(parent, &status, 0) == parent && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    /* the child lives on (it waits for `down`); c's lock is free */
    cf_error err;
    cf_file *f = open_file(0);
    if (f) {
        cf_column *c = NULL;
        CHECK_OK(cf_column_create(&c, f, "c", "<i8", 1, 3, 1, &err), &err);
        if (c) CHECK_OK(cf_column_close(c, &err), &err);
        cf_file_close(f);
    }
    char b = 0;
    CHECK(write(down[1], &b, 1) == 1);
    close(down[1]);
    close(up[0]);
    CHECK(exists("c/header") && exists("g/header"));
}

CF_TESTS(CF_TEST(test_one_lock_file_per_directory),
         CF_TEST(test_handles_of_one_file_exclude_each_other),
         CF_TEST(test_threads_of_one_file),
         CF_TEST(test_a_lock_file_removed_behind_the_files_back),
         CF_TEST(test_a_forked_child_forgets_the_files_locks),
         CF_TEST(test_a_forked_child_forgets_the_parents_lock),
         CF_TEST(test_the_lock_file_is_writable_by_the_directory_writers),
         CF_TEST(test_a_held_lock_keeps_the_file),
         CF_TEST(test_repair_removes_an_idle_file_silently),
         CF_TEST(test_a_writer_waits_out_a_tidy),
         CF_TEST(test_shared_writers_and_the_last_one_out),
         CF_TEST(test_long_names_lock_what_repair_checks))
