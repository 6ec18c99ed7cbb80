/* test_column_owners_committed.c - the plan of a close by chunk owners
 * for a committed large column (an update here; colfile_binding.h,
 * "Closing by chunk owners"): the owners write into a hidden temporary
 * beside colfile-index-v1 and copy the records of the blobs not written
 * (valid bit 1); a handle that gives up its changes removes the
 * temporary and leaves the committed index as it was; a column whose
 * index is gone, or a blob written in part, keeps the gathering close. */
#include "harness.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include "colfile_binding.h"
#include "owners_column.h"

/* The committed column (owners_column.h): blobs of 46667 rows each. */
static double committed(int64_t i) { return (double)(i % 1009) - 3.5; }

static void make(const char *dir) { owners_write_column(dir, committed); }

/* Hidden files in the column directory whose names start with
 * ".colfile-index-v1". */
static int temporaries(const char *dir)
{
    char p[4300];
    snprintf(p, sizeof p, "%s/x", dir);
    DIR *d = opendir(p);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        n += strncmp(e->d_name, ".colfile-index-v1", 17) == 0;
    if (d) closedir(d);
    return n;
}

/* Open x, rewrite rows [a, b), and plan: *owners, valid[] and the file. */
static cf_column *plan(cf_file *f, int64_t a, int64_t b, int *owners, unsigned char *valid, char *file, size_t cap)
{
    cf_error err;
    cf_column *c = NULL;
    CHECK_OK(cf_column_open(&c, f, "x", &err), &err);
    double *v = malloc((size_t)(b - a) * sizeof *v);
    for (int64_t i = 0; i < b - a; i++) v[i] = (double)i * 0.25;
    CHECK_OK(cf_column_write(c, a, b - a, v, NULL, 8, 8, &err), &err);
    free(v);
    unsigned char holds[NFILE] = { 1, 1, 1 };
    const char *where = NULL;
    CHECK_OK(cf_column_owner_plan(c, holds, valid, owners, &where, &err), &err);
    snprintf(file, cap, "%s", where);
    return c;
}

static void test_committed_column_plan_and_temporary(void)
{
    char dir[4200], idx[4300], file[4300];
    snprintf(dir, sizeof dir, "%s/f", cf_test_dir());
    snprintf(idx, sizeof idx, "%s/x/colfile-index-v1", dir);
    make(dir);
    size_t n0 = 0, n1 = 0;
    char *before = cf_test_slurp(NULL, idx, &n0);
    CHECK(before != NULL);

    cf_error err;
    cf_file *f = NULL;
    CHECK_OK(cf_file_open(&f, dir, CF_OPEN_WRITE, &err), &err);
    int owners = 0;
    unsigned char valid[NFILE];
    /* blob 1 rewritten whole: the owners write, blobs 0 and 2 copied */
    cf_column *c = plan(f, 46667, 2 * 46667, &owners, valid, file, sizeof file);
    CHECK(owners == 1);
    CHECK(valid[0] == 3 && valid[1] == 1 && valid[2] == 3);
    CHECK(strstr(file, "/x/.colfile-index-v1") != NULL && access(file, F_OK) == 0);
    CHECK(temporaries(dir) == 1);
    /* given up: the temporary goes, the committed index stays */
    cf_column_discard(c);
    CHECK(cf_column_close(c, &err) == CF_EIO);
    CHECK(temporaries(dir) == 0);
    char *after = cf_test_slurp(NULL, idx, &n1);
    CHECK(after && n0 == n1 && memcmp(before, after, n0) == 0);
    free(after);

    cf_file_close(f);
    free(before);

    /* part of a blob: the commit reads it back, no owners (a discarded
     * update leaves its torn marker: a new File each time) */
    snprintf(dir, sizeof dir, "%s/g", cf_test_dir());
    make(dir);
    CHECK_OK(cf_file_open(&f, dir, CF_OPEN_WRITE, &err), &err);
    c = plan(f, 100, 5000, &owners, valid, file, sizeof file);
    CHECK(owners == 0);
    CHECK(temporaries(dir) == 0);
    cf_column_discard(c);
    cf_column_close(c, NULL);
    cf_file_close(f);

    /* no committed index to copy from: no owners */
    snprintf(dir, sizeof dir, "%s/h", cf_test_dir());
    snprintf(idx, sizeof idx, "%s/x/colfile-index-v1", dir);
    make(dir);
    CHECK(unlink(idx) == 0);
    CHECK_OK(cf_file_open(&f, dir, CF_OPEN_WRITE, &err), &err);
    c = plan(f, 46667, 2 * 46667, &owners, valid, file, sizeof file);
    CHECK(owners == 0);
    CHECK(temporaries(dir) == 0);
    cf_column_discard(c);
    cf_column_close(c, NULL);
    cf_file_close(f);
}

CF_TESTS(CF_TEST(test_committed_column_plan_and_temporary))
