/* test_reader_version.c - an open read handle reads the version of the
 * column it opened, or fails with CF_EREPLACED, while other processes
 * replace or remove the column: never rows of two versions, never a false
 * checksum error. */
#define _GNU_SOURCE 1
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "column.h"
#include "column_handle.h"

static char g_root[4200];

static void setup(void) { snprintf(g_root, sizeof g_root, "%s/F", cf_test_dir()); }

/* Element i of version k: an f8 column holds k*1000 + i + 0.25, an i8
 * column k*1000 + i; a row of another version or dtype shows. */
static double f8_value(int64_t k, int64_t i) { return (double)(k * 1000 + i) + 0.25; }

/* Create (or replace) column `name` as version k: dtype "f8" or "i8",
 * `rows` rows in `nfile` blobs.  Returns 0 on success. */
static int make_version(const char *name, const char *dtype, int64_t k, int64_t rows, int64_t nfile, int flags)
{
    cf_error err;
    cf_file *f = NULL;
    int rc = cf_file_open(&f, g_root, CF_OPEN_WRITE | CF_OPEN_CREATE | flags, &err);
    if (rc) {
        fprintf(stderr, "make_version: %s\n", err.message);
        return rc;
    }
    cf_column *c = NULL;
    rc = cf_column_create(&c, f, name, dtype, 1, rows, nfile, &err);
    if (rc == 0) {
        void *buf = malloc((size_t)rows * 8 + 8);
        for (int64_t i = 0; i < rows; i++) {
            if (dtype[0] == 'f') ((double *)buf)[i] = f8_value(k, i);
            else ((int64_t *)buf)[i] = k * 1000 + i;
        }
        rc = cf_column_write(c, 0, rows, buf, NULL, 8, 8, &err);
        free(buf);
        int rc2 = cf_column_close(c, rc ? NULL : &err);
        if (rc == 0) rc = rc2;
    }
    if (rc == 0 && (flags & CF_OPEN_EXCL) == 0) rc = cf_file_catalog_update(f, &err);
    if (rc) fprintf(stderr, "make_version %s v%lld: %s\n", name, (long long)k, err.message);
    cf_file_close(f);
    return rc;
}

/* Run fn(arg) in a child process, as another program would; 0 if it
 * exited 0. */
static int in_child(int (*fn)(void *), void *arg)
{
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) _exit(fn(arg) == 0 ? 0 : 1);
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid) return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

typedef struct {
    const char *dtype;
    int64_t k, rows, nfile;
} version_args;

static int replace_x(void *arg)
{
    const version_args *a = arg;
    return make_version("x", a->dtype, a->k, a->rows, a->nfile, 0);
}

static int remove_x(void *arg)
{
    (void)arg;
    cf_error err;
    cf_file *f = NULL;
    int rc = cf_file_open(&f, g_root, CF_OPEN_WRITE, &err);
    if (rc == 0) rc = cf_file_remove(f, "x", &err);
    if (rc) fprintf(stderr, "remove_x: %s\n", err.message);
    cf_file_close(f);
    return rc;
}

/* The rows of an f8 column read as version k, rows [0, n). */
static int is_f8_version(const double *v, int64_t n, int64_t k)
{
    for (int64_t i = 0; i < n; i++)
        if (v[i] != f8_value(k, i)) return 0;
    return 1;
}

static cf_column *open_x(cf_file **f, int flags)
{
    cf_error err;
    cf_column *c = NULL;
    CHECK_OK(cf_file_open(f, g_root, CF_OPEN_READ | flags, &err), &err);
    if (*f) CHECK_OK(cf_column_open(&c, *f, "x", &err), &err);
    return c;
}

/* A fresh File holding version 1 of x (f8, 10 rows in 2 blobs), with x
 * opened in it (the File with flags): NULL where any of that failed. */
static cf_column *open_fresh_x(cf_file **f, int flags)
{
    setup();
    if (make_version("x", "f8", 1, 10, 2, 0)) return NULL;
    return open_x(f, flags);
}

/* Another process replaces the column with another dtype and layout after
 * the reader read its first blob: the blob still open reads the old bytes;
 * the next one, gone with the old version, fails naming the column. */
static void test_replace_with_another_dtype(void)
{
    cf_file *f = NULL;
    cf_column *c = open_fresh_x(&f, 0);
    if (!c) return;
    double v[10];
    cf_error err;
    CHECK_OK(cf_column_read(c, 0, 5, v, NULL, 8, 8, &err), &err);
    CHECK(is_f8_version(v, 5, 1));
    version_args a = { "i8", 2, 12, 3 };
    CHECK_EQ_INT(in_child(replace_x, &a), 0);
    memset(v, 0, sizeof v);
    int rc = cf_column_read(c, 0, 10, v, NULL, 8, 8, &err);
    if (rc == 0) {
        CHECK(is_f8_version(v, 10, 1)); /* the old version entirely, or: */
    } else {
        CHECK_EQ_INT(rc, CF_EREPLACED);
        CHECK(strstr(err.message, "/F/x") != NULL);
        CHECK(strstr(err.message, "replaced or removed") != NULL);
        CHECK(strstr(err.message, "reopen") != NULL);
    }
    /* the blob the handle has open is still the old version's */
    CHECK_OK(cf_column_read(c, 0, 5, v, NULL, 8, 8, &err), &err);
    CHECK(is_f8_version(v, 5, 1));
    CHECK_OK(cf_column_close(c, &err), &err);
    /* a new handle reads the new version */
    int64_t w[12];
    CHECK_OK(cf_column_open(&c, f, "x", &err), &err);
    CHECK_EQ_STR(cf_column_dtype(c), "<i8");
    CHECK_OK(cf_column_read(c, 0, 12, w, NULL, 8, 8, &err), &err);
    CHECK_EQ_INT(w[11], 2011);
    CHECK_OK(cf_column_close(c, &err), &err);
    cf_file_close(f);
}

/* The same dtype and layout, other values, read with verification: the
 * old version or CF_EREPLACED, never a checksum error. */
static void test_replace_same_dtype_verified(void)
{
    setup();
    if (make_version("x", "f8", 1, 10, 2, 0)) return;
    for (int from_catalog = 0; from_catalog < 2; from_catalog++) {
        cf_file *f = NULL;
        cf_column *c = open_x(&f, CF_OPEN_VERIFY | (from_catalog ? 0 : CF_OPEN_NOCHECK));
        if (!c) return;
        /* the catalog the File loaded served the column, or it did not */
        CHECK_EQ_INT(c->ext.deferred != NULL, from_catalog);
        double v[10];
        cf_error err;
        CHECK_OK(cf_column_read(c, 0, 5, v, NULL, 8, 8, &err), &err);
        version_args a = { "f8", 2 + from_catalog, 10, 2 };
        CHECK_EQ_INT(in_child(replace_x, &a), 0);
        int rc = cf_column_read(c, 0, 10, v, NULL, 8, 8, &err);
        if (rc == 0) CHECK(is_f8_version(v, 10, 1 + from_catalog));
        else CHECK_FAILS(rc, CF_EREPLACED, &err, "replaced or removed since this handle opened it");
        CHECK_OK(cf_column_close(c, &err), &err);
        cf_file_close(f);
    }
}

/* A swap whose old version is not removed yet (as a remover that has not
 * got to it): the handle reads the old version, whole and verified. */
static int swap_in_y(void *arg)
{
    (void)arg;
    if (make_version("y", "i8", 7, 12, 3, 0)) return 1;
    char x[4300], y[4300];
    snprintf(x, sizeof x, "%s/x", g_root);
    snprintf(y, sizeof y, "%s/y", g_root);
    return (int)syscall(SYS_renameat2, AT_FDCWD, y, AT_FDCWD, x, 2 /* RENAME_EXCHANGE */);
}

static void test_swapped_old_version_still_read(void)
{
    cf_file *f = NULL;
    cf_column *c = open_fresh_x(&f, CF_OPEN_VERIFY);
    if (!c) return;
    if (in_child(swap_in_y, NULL) != 0) {
        printf("(no RENAME_EXCHANGE here: swap test skipped)\n");
    } else {
        double v[10];
        cf_error err;
        CHECK_OK(cf_column_read(c, 0, 10, v, NULL, 8, 8, &err), &err);
        CHECK(is_f8_version(v, 10, 1));
        int64_t rows[3] = { 9, 0, 6 };
        CHECK_OK(cf_column_read_rows(c, rows, 3, v, NULL, 8, 8, &err), &err);
        CHECK(v[0] == f8_value(1, 9) && v[1] == f8_value(1, 0) && v[2] == f8_value(1, 6));
        unsigned st = 99;
        CHECK_OK(cf_column_verify_blob(c, 1, &st, &err), &err);
        CHECK_EQ_INT(st, 0);
    }
    cf_error err;
    CHECK_OK(cf_column_close(c, &err), &err);
    cf_file_close(f);
}

/* The column removed by another process under an open handle. */
static void test_removed_under_the_reader(void)
{
    cf_file *f = NULL;
    cf_column *c = open_fresh_x(&f, CF_OPEN_VERIFY);
    if (!c) return;
    double v[10];
    cf_error err;
    CHECK_OK(cf_column_read(c, 0, 5, v, NULL, 8, 8, &err), &err);
    CHECK_EQ_INT(in_child(remove_x, NULL), 0);
    CHECK_FAILS(cf_column_read(c, 5, 5, v, NULL, 8, 8, &err), CF_EREPLACED, &err,
                "replaced or removed since this handle opened it");
    CHECK(strstr(err.message, "/F/x") != NULL);
    /* check, too, calls it what it is, not a missing blob */
    unsigned st = 0;
    CHECK_FAILS(cf_column_verify_blob(c, 1, &st, &err), CF_EREPLACED, &err, "/F/x");
    CHECK_OK(cf_column_close(c, &err), &err);
    cf_column *again = NULL;
    CHECK_FAILS(cf_column_open(&again, f, "x", &err), CF_ENOENT, &err, "no column 'x'");
    cf_file_close(f);
}

/* A writable handle opened before another process replaced the column
 * must not write into the new version. */
static void test_writer_opened_before_a_replace(void)
{
    cf_error err;
    cf_file *f = NULL;
    cf_column *c = open_fresh_x(&f, CF_OPEN_WRITE);
    if (!c) return;
    version_args a = { "i8", 2, 12, 3 };
    CHECK_EQ_INT(in_child(replace_x, &a), 0);
    double v[10] = { 0 };
    int rc = cf_column_write(c, 0, 10, v, NULL, 8, 8, &err);
    CHECK(rc == CF_EREPLACED || rc == CF_EBUSY);
    if (rc) CHECK(strstr(err.message, "/F/x") != NULL && strstr(err.message, "reopen") != NULL);
    cf_column_close(c, NULL);
    /* the new version is untouched */
    int64_t w[12];
    CHECK_OK(cf_column_open(&c, f, "x", &err), &err);
    if (c) {
        CHECK_EQ_STR(cf_column_dtype(c), "<i8");
        CHECK_OK(cf_column_read(c, 0, 12, w, NULL, 8, 8, &err), &err);
        for (int i = 0; i < 12; i++) CHECK_EQ_INT(w[i], 2000 + i);
        unsigned st = 99;
        for (int64_t b = 0; b < 3; b++) {
            CHECK_OK(cf_column_verify_blob(c, b, &st, &err), &err);
            CHECK_EQ_INT(st, 0);
        }
        CHECK_OK(cf_column_close(c, &err), &err);
    }
    cf_file_close(f);
}

/* Another process updates the rows in place (a commit in the same
 * directory) between a writer's open and its first change: the writer's
 * header is stale, and committing it would record old byte sums for the
 * other's rows. */
static int update_x_in_place(void *arg)
{
    (void)arg;
    cf_error err;
    cf_file *f = NULL;
    cf_column *c = NULL;
    int rc = cf_file_open(&f, g_root, CF_OPEN_WRITE, &err);
    if (rc == 0) rc = cf_column_open(&c, f, "x", &err);
    if (rc == 0) {
        double v[10];
        for (int i = 0; i < 10; i++) v[i] = f8_value(5, i);
        rc = cf_column_write(c, 0, 10, v, NULL, 8, 8, &err);
        int rc2 = cf_column_close(c, rc ? NULL : &err);
        if (rc == 0) rc = rc2;
    }
    if (rc) fprintf(stderr, "update_x_in_place: %s\n", err.message);
    cf_file_close(f);
    return rc;
}

static void test_writer_opened_before_another_commit(void)
{
    cf_error err;
    cf_file *f = NULL;
    cf_column *c = open_fresh_x(&f, CF_OPEN_WRITE);
    if (!c) return;
    CHECK_EQ_INT(in_child(update_x_in_place, NULL), 0);
    double v[5] = { 0 };
    CHECK_FAILS(cf_column_write(c, 0, 5, v, NULL, 8, 8, &err), CF_EBUSY, &err, "changed by another writer");
    CHECK(strstr(err.message, "/F/x") != NULL && strstr(err.message, "reopen") != NULL);
    cf_column_close(c, NULL);
    /* the other writer's version, consistent */
    CHECK_OK(cf_column_open(&c, f, "x", &err), &err);
    if (c) {
        double w[10];
        CHECK_OK(cf_column_read(c, 0, 10, w, NULL, 8, 8, &err), &err);
        CHECK(is_f8_version(w, 10, 5));
        /* (the byte sums of an in-place update are another matter) */
        unsigned st = 99;
        for (int64_t b = 0; b < 2; b++) {
            CHECK_OK(cf_column_verify_blob(c, b, &st, &err), &err);
            CHECK_EQ_INT(st & (CF_BLOB_CRC_MISMATCH | CF_BLOB_CRC_UNKNOWN | CF_BLOB_SHORT | CF_BLOB_LONG), 0);
        }
        CHECK_OK(cf_column_close(c, &err), &err);
    }
    cf_file_close(f);
}

/* A metadata snapshot (what MPI ranks send each other) names the version
 * its exporter opened: a handle built from it after a replace reads that
 * version, or fails, instead of applying it to the new one's blobs. */
static void test_snapshot_of_a_replaced_column(void)
{
    cf_file *f = NULL;
    cf_column *c = open_fresh_x(&f, CF_OPEN_VERIFY);
    if (!c) return;
    cf_error err;
    void *buf = NULL;
    size_t len = 0;
    CHECK_OK(cf_column_export_meta(c, &buf, &len, &err), &err);
    /* before the replace: the replica reads the column */
    cf_column *r = NULL;
    double v[10];
    CHECK_OK(cf_column_open_meta(&r, f, buf, len, &err), &err);
    if (r) {
        CHECK_OK(cf_column_read(r, 0, 10, v, NULL, 8, 8, &err), &err);
        CHECK(is_f8_version(v, 10, 1));
        CHECK_OK(cf_column_close(r, &err), &err);
    }
    version_args a = { "i8", 2, 12, 3 };
    CHECK_EQ_INT(in_child(replace_x, &a), 0);
    r = NULL;
    int rc = cf_column_open_meta(&r, f, buf, len, &err);
    if (rc == 0) {
        rc = cf_column_read(r, 0, 10, v, NULL, 8, 8, &err);
        if (rc == 0) CHECK(is_f8_version(v, 10, 1));
        cf_column_close(r, NULL);
    }
    CHECK_EQ_INT(rc, CF_EREPLACED);
    CHECK(strstr(err.message, "/F/x") != NULL);
    cf_free(buf);
    CHECK_OK(cf_column_close(c, &err), &err);
    cf_file_close(f);
}

/* Every open column holds a descriptor of its directory: when they run
 * out, opening one says why. */
static void test_descriptor_limit_is_explained(void)
{
    setup();
    if (make_version("x", "f8", 1, 10, 2, 0)) return;
    cf_file *f = NULL;
    cf_error err;
    CHECK_OK(cf_file_open(&f, g_root, CF_OPEN_READ, &err), &err);
    if (!f) return;
    struct rlimit old, low;
    CHECK(getrlimit(RLIMIT_NOFILE, &old) == 0);
    low = old;
    low.rlim_cur = 64;
    CHECK(setrlimit(RLIMIT_NOFILE, &low) == 0);
    cf_column *cols[100];
    int n = 0, rc = 0;
    while (n < 100 && (rc = cf_column_open(&cols[n], f, "x", &err)) == 0) n++;
    CHECK(setrlimit(RLIMIT_NOFILE, &old) == 0);
    CHECK(n > 10 && n < 64);
    CHECK_FAILS(rc, CF_EIO, &err, "ulimit -n");
    CHECK(strstr(err.message, "/F/x") != NULL);
    for (int i = 0; i < n; i++) CHECK_OK(cf_column_close(cols[i], &err), &err);
    cf_file_close(f);
}

/* One process replaces the column over and over, alternating dtype and
 * layout (and updating the catalog each time), removing it now and then;
 * this one opens it (through the catalog or the files) and reads it
 * verified, in a loop: every open finds a version or no column, and every
 * read gives one version whole, or CF_EREPLACED. */
#define RACE_VERSIONS 300

static int replace_loop(void *arg)
{
    (void)arg;
    for (int64_t k = 2; k < 2 + RACE_VERSIONS; k++) {
        /* now and then removed first: absent for a while */
        if (k % 5 == 0 && remove_x(NULL)) return 1;
        int rc = k % 2 ? make_version("x", "f8", k, 10, 2, CF_OPEN_NODURABLE)
                       : make_version("x", "i8", k, 12, 3, CF_OPEN_NODURABLE);
        if (rc) return 1;
    }
    return 0;
}

static void test_racing_replace_loop(void)
{
    setup();
    if (make_version("x", "f8", 1, 10, 2, 0)) return;
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) _exit(replace_loop(NULL) ? 1 : 0);
    int64_t reads = 0, whole = 0, replaced = 0, absent = 0, bad = 0;
    int status = 0;
    for (;;) {
        int done = waitpid(pid, &status, WNOHANG) == pid;
        cf_error err;
        cf_file *f = NULL;
        if (cf_file_open(&f, g_root, CF_OPEN_READ | CF_OPEN_VERIFY | (reads % 3 == 2 ? CF_OPEN_NOCHECK : 0),
                         &err)) {
            fprintf(stderr, "file open: %s\n", err.message);
            bad++;
            break;
        }
        cf_column *c = NULL;
        int rc = cf_column_open(&c, f, "x", &err);
        if (rc == CF_ENOENT && strstr(err.message, "no column 'x'")) {
            absent++;
            rc = 0;
        } else if (rc == 0) {
            union { double d[12]; int64_t i[12]; } v;
            int64_t n = cf_column_size(c);
            int is_f8 = strcmp(cf_column_dtype(c), "<f8") == 0;
            /* a first blob, then the rest: the window of the original report */
            rc = cf_column_read(c, 0, 1, &v, NULL, 8, 8, &err);
            if (rc == 0) rc = cf_column_read(c, 0, n, &v, NULL, 8, 8, &err);
            if (rc == 0) {
                int64_t k = is_f8 ? (int64_t)(v.d[0] / 1000) : v.i[0] / 1000;
                int ok = n == (is_f8 ? 10 : 12) && (k % 2 == is_f8 || k == 1);
                for (int64_t i = 0; ok && i < n; i++)
                    ok = is_f8 ? v.d[i] == f8_value(k, i) : v.i[i] == k * 1000 + i;
                if (!ok) {
                    fprintf(stderr, "read %lld: rows mix versions (dtype %s, %lld rows)\n", (long long)reads,
                            cf_column_dtype(c), (long long)n);
                    bad++;
                }
                whole++;
            }
            cf_column_close(c, NULL);
        }
        if (rc == CF_EREPLACED) {
            replaced++;
        } else if (rc != 0) {
            fprintf(stderr, "read %lld: %s (%s)\n", (long long)reads, err.message, cf_error_name(rc));
            bad++;
        }
        cf_file_close(f);
        reads++;
        if (done || bad > 5) break;
    }
    if (bad > 5) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
    }
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    printf("racing loop: %lld reads (%lld whole, %lld CF_EREPLACED, %lld absent) during %d replaces\n",
           (long long)reads, (long long)whole, (long long)replaced, (long long)absent, RACE_VERSIONS);
    CHECK_EQ_INT(bad, 0);
    CHECK(reads > 20);
}

int main(void)
{
    static const cf_test_case cases[] = {
        CF_TEST(test_replace_with_another_dtype),
        CF_TEST(test_replace_same_dtype_verified),
        CF_TEST(test_swapped_old_version_still_read),
        CF_TEST(test_removed_under_the_reader),
        CF_TEST(test_writer_opened_before_a_replace),
        CF_TEST(test_writer_opened_before_another_commit),
        CF_TEST(test_snapshot_of_a_replaced_column),
        CF_TEST(test_descriptor_limit_is_explained),
        CF_TEST(test_racing_replace_loop),
    };
    return cf_test_run(cases, sizeof cases / sizeof cases[0]);
}
