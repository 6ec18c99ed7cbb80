/* test_remove.c - removing columns and groups, and truncating a File: the
 * writer lock is respected, what is removed disappears in one rename, a
 * kill at any moment leaves every column whole or absent, and repair
 * removes the leftovers (of this code and of older removals). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "column.h"
#include "file.h"
#include "lock_test.h"

/* Column `name` of `nfile` blobs of one row each (value i in blob i). */
static void make_blobs(cf_file *f, const char *name, int64_t nfile)
{
    cf_error err;
    cf_column *c = NULL;
    int64_t *rows = malloc((size_t)nfile * sizeof *rows), *vals = malloc((size_t)nfile * sizeof *vals);
    for (int64_t i = 0; i < nfile; i++) {
        rows[i] = 1;
        vals[i] = i;
    }
    CHECK_OK(cf_column_create_blobs(&c, f, name, "<i8", 1, nfile, rows, &err), &err);
    if (c) CHECK_OK(cf_column_write(c, 0, nfile, vals, NULL, 8, 8, &err), &err);
    CHECK_OK(cf_column_close(c, &err), &err);
    free(rows);
    free(vals);
}

/* Move every entry of directory `from` into `to` (both below g_root),
 * then remove `from`. */
static void move_entries(const char *from, const char *to)
{
    char src[4400], dst[4400], path[4400];
    snprintf(src, sizeof src, "%s/%s", g_root, from);
    snprintf(dst, sizeof dst, "%s/%s", g_root, to);
    DIR *d = opendir(src);
    CHECK(d != NULL);
    if (!d) return;
    struct dirent *ent;
    while ((ent = readdir(d)) != NULL) {
        if (strcmp(ent->d_name, ".") == 0 || strcmp(ent->d_name, "..") == 0) continue;
        snprintf(path, sizeof path, "%s/%s", src, ent->d_name);
        char target[4400];
        snprintf(target, sizeof target, "%s/%s", dst, ent->d_name);
        CHECK_EQ_INT(rename(path, target), 0);
    }
    closedir(d);
    CHECK_EQ_INT(rmdir(src), 0);
}

/* 1 if column `name` opens and reads all its rows (blob i holding i when
 * `pattern`); 0 if it is absent; -1 (and a failed check) otherwise. */
static int whole_or_absent(cf_file *f, const char *name, int pattern)
{
    char hp[4400];
    snprintf(hp, sizeof hp, "%s/%s/header", g_root, name);
    struct stat st;
    if (lstat(hp, &st) != 0) return 0;
    cf_error err;
    cf_column *c = NULL;
    int rc = cf_column_open(&c, f, name, &err);
    if (rc != 0) {
        fprintf(stderr, "%s: has a header but does not open: %s\n", name, err.message);
        CHECK(0);
        return -1;
    }
    int64_t n = cf_column_size(c);
    int64_t *v = malloc((size_t)(n ? n : 1) * sizeof *v);
    rc = cf_column_read(c, 0, n, v, NULL, 8, 8, &err);
    if (rc != 0) fprintf(stderr, "%s: has a header but does not read: %s\n", name, err.message);
    CHECK_OK(rc, &err);
    for (int64_t i = 0; rc == 0 && pattern && i < n; i++)
        if (v[i] != i) {
            CHECK_EQ_INT(v[i], i);
            break;
        }
    free(v);
    cf_column_close(c, NULL);
    return rc == 0 ? 1 : -1;
}

/* A child process holding the writer lock of column `name`: it opens the
 * File and the column for writing and writes one row in place, then waits
 * until end_holder closes its pipe, and closes the column (committing) and
 * the File. */
typedef struct {
    pid_t pid;
    int hold; /* closing it ends the holder */
} holder;

static holder fork_holder(const char *name)
{
    holder h = { -1, -1 };
    int ready[2], hold[2];
    if (pipe(ready) != 0 || pipe(hold) != 0) return h;
    pid_t pid = fork();
    if (pid == 0) {
        close(ready[0]);
        close(hold[1]);
        cf_error err;
        cf_file *f = NULL;
        cf_column *c = NULL;
        int64_t v = 1;
        char ok = 'n';
        if (cf_file_open(&f, g_root, CF_OPEN_WRITE | CF_OPEN_NODURABLE, &err) == 0 &&
            cf_column_open(&c, f, name, &err) == 0 && cf_column_write(c, 0, 1, &v, NULL, 8, 8, &err) == 0)
            ok = 'y';
        if (write(ready[1], &ok, 1) != 1) _exit(3);
        char x;
        while (read(hold[0], &x, 1) > 0) {}
        int rc = cf_column_close(c, &err);
        cf_file_close(f);
        _exit(rc != 0);
    }
    close(ready[1]);
    close(hold[0]);
    char ok = 'n';
    h.pid = pid;
    h.hold = hold[1];
    if (read(ready[0], &ok, 1) != 1 || ok != 'y') CHECK(!"the holder could not take the lock");
    close(ready[0]);
    return h;
}

static void end_holder(holder h)
{
    if (h.pid <= 0) return;
    close(h.hold);
    int status = 0;
    waitpid(h.pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static void test_rm_refused_while_another_process_writes(void)
{
    cf_error err;
    cf_file *f = file_with("f", "x", "g/y", NULL);
    if (!f) return;
    holder hd = fork_holder("g/y");
    CHECK_FAILS(cf_file_remove(f, "g/y", &err), CF_EBUSY, &err, "g/y");
    CHECK(strstr(err.message, ".colfile-lock") != NULL);
    CHECK_FAILS(cf_file_remove_group(f, "g", &err), CF_EBUSY, &err, "y");
    CHECK_EQ_INT(whole_or_absent(f, "g/y", 0), 1);
    CHECK_OK(cf_file_remove(f, "x", &err), &err); /* another column is free */
    CHECK(!exists("x"));
    end_holder(hd);
    CHECK_OK(cf_file_remove(f, "g/y", &err), &err);
    CHECK(!exists("g/y"));
    CHECK_EQ_INT(count_prefixed("g", CF__TRASH_PREFIX), 0);
    cf_file_close(f);
}

/* This process's own handles count: a column open for writing through
 * the same File, or another File, is not removed under it. */
static void test_rm_refused_while_this_process_writes(void)
{
    use_root("f");
    cf_error err;
    cf_file *f = open_file(0), *other = open_file(0);
    if (!f || !other) return;
    made(f, "x");
    cf_column *c = make(other, "x"); /* a replacement, staged */
    CHECK_FAILS(cf_file_remove(f, "x", &err), CF_EBUSY, &err, "x");
    CHECK_OK(cf_column_close(c, &err), &err);
    c = written_in_place(other, "x", 9); /* the lock of `other` */
    CHECK_FAILS(cf_file_remove(f, "x", &err), CF_EBUSY, &err, "x");
    CHECK_OK(cf_column_close(c, &err), &err);
    c = written_in_place(f, "x", 9); /* the lock of f itself */
    CHECK_FAILS(cf_file_remove(f, "x", &err), CF_EBUSY, &err, "x");
    CHECK_OK(cf_column_close(c, &err), &err);
    CHECK_OK(cf_file_remove(f, "x", &err), &err);
    CHECK(!exists("x"));
    cf_file_close(other);
    cf_file_close(f);
}

/* Mode "w" takes every lock of the File first: refused with nothing
 * removed while a column is written in place or created (staged) by
 * another process. */
static void test_truncate_refused_while_a_writer_holds_a_lock(void)
{
    cf_error err;
    cf_file *f = file_with("f", "x", "g/h/y", NULL);
    if (!f) return;
    cf_file_close(f);
    holder hd = fork_holder("g/h/y");
    cf_file *t = NULL;
    CHECK_FAILS(cf_file_open(&t, g_root, CF_OPEN_WRITE | CF_OPEN_TRUNCATE, &err), CF_EBUSY, &err, "g/h/y");
    end_holder(hd);
    f = open_file(0);
    if (!f) return;
    CHECK_EQ_INT(whole_or_absent(f, "x", 0), 1);
    CHECK_EQ_INT(whole_or_absent(f, "g/h/y", 0), 1);
    /* a create in progress (staging directory, lock held) in this process */
    cf_column *c = make(f, "g/z");
    CHECK_EQ_INT(count_prefixed("g", ".colfile-stage."), 1);
    CHECK_FAILS(cf_file_open(&t, g_root, CF_OPEN_WRITE | CF_OPEN_TRUNCATE, &err), CF_EBUSY, &err, "g/z");
    CHECK_EQ_INT(count_prefixed("g", ".colfile-stage."), 1);
    CHECK_OK(cf_column_close(c, &err), &err);
    cf_file_close(f);
    CHECK_OK(cf_file_open(&t, g_root, CF_OPEN_WRITE | CF_OPEN_TRUNCATE, &err), &err);
    char **names = NULL;
    int64_t n = -1;
    if (t) CHECK_OK(cf_file_list(t, &names, &n, &err), &err);
    CHECK_EQ_INT(n, 0);
    cf_names_free(names, n);
    CHECK(!exists("g") && !exists("x"));
    CHECK_EQ_INT(count_prefixed("", CF__TRASH_PREFIX), 0);
    cf_file_close(t);
}

/* A column directory that also holds columns below it (a header-only
 * block with sub-columns) and a foreign file: the column goes, the rest
 * stays. */
static void test_rm_keeps_sub_columns_and_foreign_files(void)
{
    cf_error err;
    cf_file *f = file_with("f", NULL);
    if (!f) return;
    /* bigfile may leave a column below another; colfile's create refuses
     * to make one, so a's files are moved in beside a/b */
    make_blobs(f, "a/b", 3);
    make_blobs(f, "a_made", 4);
    move_entries("a_made", "a");
    char p[4400];
    snprintf(p, sizeof p, "%s/a/notes.txt", g_root);
    FILE *fp = fopen(p, "w");
    if (fp) {
        fputs("mine\n", fp);
        fclose(fp);
    }
    CHECK_OK(cf_file_remove(f, "a", &err), &err);
    CHECK(!exists("a/header") && !exists("a/000000") && !exists("a/colfile-v1"));
    CHECK(exists("a/notes.txt"));
    CHECK_EQ_INT(whole_or_absent(f, "a/b", 1), 1);
    CHECK_EQ_INT(count_prefixed("", CF__TRASH_PREFIX), 0);
    /* rm -r refuses to take a foreign file with it */
    CHECK_FAILS(cf_file_remove_group(f, "a", &err), CF_ENOTFILE, &err, "notes.txt");
    CHECK_EQ_INT(whole_or_absent(f, "a/b", 1), 1);
    unlink(p);
    CHECK_OK(cf_file_remove_group(f, "a", &err), &err);
    CHECK(!exists("a"));
    CHECK_FAILS(cf_file_remove(f, "a", &err), CF_ENOENT, &err, "no column");
    cf_file_close(f);
}

/* SIGKILL at a random moment during the removal of a column of many blobs,
 * or during a truncation: each column is whole or absent (never a header
 * with blobs missing), and repair removes what is left. */
static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void kill_during(int truncate, int trials)
{
    cf_error err;
    int interrupted = 0;
    double took = 0.0; /* of the first, uninterrupted, run: the window */
    for (int t = 0; t <= trials; t++) {
        char name[32];
        snprintf(name, sizeof name, "f%d", t);
        use_root(name);
        cf_file *f = open_file(0);
        if (!f) return;
        make_blobs(f, "big", 1500);
        make_blobs(f, "c2", 40);
        make_blobs(f, "g/c3", 40);
        cf_file_close(f);
        double start = now_s();
        pid_t pid = fork();
        if (pid == 0) {
            cf_file *g = NULL;
            if (truncate) _exit(cf_file_open(&g, g_root, CF_OPEN_WRITE | CF_OPEN_TRUNCATE, NULL) != 0);
            if (cf_file_open(&g, g_root, CF_OPEN_WRITE, NULL) != 0) _exit(2);
            _exit(cf_file_remove(g, "big", NULL) != 0);
        }
        int status = 0;
        if (t == 0) {
            waitpid(pid, &status, 0);
            CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
            took = now_s() - start;
        } else {
            /* anywhere in the time a removal takes, fork included */
            double at = took * (double)((unsigned)rand() % 1000u) / 1000.0;
            struct timespec pause = { (time_t)at, (long)((at - (double)(time_t)at) * 1e9) };
            nanosleep(&pause, NULL);
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            interrupted += WIFSIGNALED(status);
        }
        f = open_file(0);
        if (!f) return;
        const char *cols[] = { "big", "c2", "g/c3" };
        for (int i = 0; i < 3; i++) CHECK(whole_or_absent(f, cols[i], 1) >= 0);
        char **lines = NULL;
        int64_t n = 0;
        CHECK_OK(cf_file_cleanup(f, 0, &lines, &n, &err), &err);
        cf_names_free(lines, n);
        CHECK_EQ_INT(count_prefixed("", CF__TRASH_PREFIX), 0);
        CHECK_EQ_INT(count_prefixed("big", "00"), exists("big/header") ? 1500 : 0);
        for (int i = 0; i < 3; i++) CHECK(whole_or_absent(f, cols[i], 1) >= 0);
        cf_file_close(f);
        char cmd[4400];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_root);
        if (system(cmd) != 0) CHECK(!"cannot clean up");
    }
    printf("  %d of %d %s killed before they ended (%.1f ms each)\n", interrupted, trials,
           truncate ? "truncations" : "removals", 1e3 * took);
}

static void test_a_killed_rm_leaves_the_column_whole_or_absent(void) { kill_during(0, 10); }

static void test_a_killed_truncation_leaves_columns_whole_or_absent(void) { kill_during(1, 10); }

/* Blobs in a directory without a header (what removals by older code left
 * when killed) are reported by a dry run and removed by repair; the
 * group's attributes and foreign files in it stay. */
static void test_repair_removes_blobs_without_a_header(void)
{
    cf_error err;
    cf_file *f = file_with("f", NULL);
    if (!f) return;
    make_blobs(f, "g/c", 5);
    make_blobs(f, "d", 5);
    char p[4400];
    snprintf(p, sizeof p, "%s/g/c/header", g_root);
    unlink(p);
    snprintf(p, sizeof p, "%s/d/header", g_root);
    unlink(p);
    snprintf(p, sizeof p, "%s/d/attr-v2", g_root);
    FILE *fp = fopen(p, "w");
    if (fp) fclose(fp);
    snprintf(p, sizeof p, "%s/d/README", g_root);
    fp = fopen(p, "w");
    if (fp) fclose(fp);
    char **lines = NULL;
    int64_t n = 0;
    CHECK_OK(cf_file_cleanup(f, 1, &lines, &n, &err), &err);
    CHECK_EQ_INT(n, 2);
    for (int64_t i = 0; i < n; i++) CHECK(strstr(lines[i], "whose header is gone") && strstr(lines[i], "would remove"));
    cf_names_free(lines, n);
    CHECK(exists("g/c/000000") && exists("d/000004"));
    CHECK_OK(cf_file_cleanup(f, 0, &lines, &n, &err), &err);
    CHECK_EQ_INT(n, 2);
    cf_names_free(lines, n);
    CHECK(!exists("g/c"));
    CHECK(!exists("d/000000") && !exists("d/000004") && !exists("d/colfile-v1"));
    CHECK(exists("d/README") && !exists("d/attr-v2"));
    CHECK_EQ_INT(count_prefixed("", CF__TRASH_PREFIX) + count_prefixed("g", CF__TRASH_PREFIX), 0);
    CHECK_OK(cf_file_cleanup(f, 1, &lines, &n, &err), &err);
    CHECK_EQ_INT(n, 0);
    cf_names_free(lines, n);
    cf_file_close(f);
}

/* A trash directory left by a killed removal is repair's; one whose
 * remover still holds the lock is not. */
static void test_repair_removes_trash_of_a_dead_remover_only(void)
{
    cf_error err;
    cf_file *f = file_with("f", NULL);
    if (!f) return;
    char p[4400];
    snprintf(p, sizeof p, "%s/.colfile-trash.x.1.0badf00d", g_root);
    CHECK(mkdir(p, 0777) == 0);
    snprintf(p, sizeof p, "%s/.colfile-trash.x.1.0badf00d/000000", g_root);
    FILE *fp = fopen(p, "w");
    if (fp) fclose(fp);
    snprintf(p, sizeof p, "%s/.colfile-trash.y.1.0badf00d", g_root);
    CHECK(mkdir(p, 0777) == 0);
    make_blobs(f, "y", 2);
    holder hd = fork_holder("y"); /* y's lock is held: its trash is live */
    char **lines = NULL;
    int64_t n = 0;
    CHECK_OK(cf_file_cleanup(f, 0, &lines, &n, &err), &err);
    CHECK_EQ_INT(n, 1);
    if (n == 1) CHECK(strstr(lines[0], ".colfile-trash.x.") && strstr(lines[0], "interrupted removal"));
    cf_names_free(lines, n);
    CHECK(!exists(".colfile-trash.x.1.0badf00d") && exists(".colfile-trash.y.1.0badf00d"));
    end_holder(hd);
    CHECK_OK(cf_file_cleanup(f, 0, &lines, &n, &err), &err);
    cf_names_free(lines, n);
    CHECK(!exists(".colfile-trash.y.1.0badf00d"));
    cf_file_close(f);
}

/* The temporary a writer of the File's attributes leaves when killed is
 * repair's at once; one whose writer holds the attribute block's lock is
 * not.  The block's lock also keeps truncation out. */
static void test_repair_removes_attribute_temporaries_of_dead_writers_only(void)
{
    cf_error err;
    cf_file *f = file_with("f", NULL);
    if (!f) return;
    make_blobs(f, "x", 1);
    char p[4400];
    snprintf(p, sizeof p, "%s/.attr-v2.tmp.1.0badf00d", g_root);
    FILE *fp = fopen(p, "w");
    if (fp) fclose(fp);
    cf__lock lk = CF__LOCK_NONE;
    CHECK_OK(cf__attrs_block_lock(g_root, 0, 0, &lk, &err), &err);
    char **lines = NULL;
    int64_t n = 0;
    CHECK_OK(cf_file_cleanup(f, 0, &lines, &n, &err), &err);
    CHECK_EQ_INT(n, 0);
    cf_names_free(lines, n);
    CHECK(exists(".attr-v2.tmp.1.0badf00d"));
    cf_file *t = NULL;
    CHECK_FAILS(cf_file_open(&t, g_root, CF_OPEN_WRITE | CF_OPEN_TRUNCATE, &err), CF_EBUSY, &err, "lock");
    cf__lock_release(&lk);
    CHECK_OK(cf_file_cleanup(f, 0, &lines, &n, &err), &err);
    CHECK_EQ_INT(n, 1);
    if (n == 1) CHECK(strstr(lines[0], ".attr-v2.tmp.1.0badf00d") && strstr(lines[0], "temporary file"));
    cf_names_free(lines, n);
    CHECK(!exists(".attr-v2.tmp.1.0badf00d"));
    CHECK(exists("x/header"));
    cf_file_close(f);
}

CF_TESTS(CF_TEST(test_rm_refused_while_another_process_writes),
         CF_TEST(test_rm_refused_while_this_process_writes),
         CF_TEST(test_truncate_refused_while_a_writer_holds_a_lock),
         CF_TEST(test_rm_keeps_sub_columns_and_foreign_files),
         CF_TEST(test_a_killed_rm_leaves_the_column_whole_or_absent),
         CF_TEST(test_a_killed_truncation_leaves_columns_whole_or_absent),
         CF_TEST(test_repair_removes_blobs_without_a_header),
         CF_TEST(test_repair_removes_trash_of_a_dead_remover_only),
         CF_TEST(test_repair_removes_attribute_temporaries_of_dead_writers_only))
