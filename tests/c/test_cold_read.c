/* test_cold_read.c - long reads of blobs that are not in the page cache:
 * the bytes are those written through every read path (copied, checked,
 * converted, across blobs, in part), and a blob cut short or missing is an
 * error naming its path. */
#include "harness.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

/* Rows of f8 x 3 (24 bytes): 2^20 rows are 24 MiB, over 3 blobs of 8 MiB
 * each: every whole-blob read is one checked piece or more. */
#define NROWS ((int64_t)1 << 20)
#define NMEMB 3

static double value(int64_t i) { return (double)(i * 2654435761u % 1000003u) * 0.5 - 7.25; }

static char *file_path(const char *sub)
{
    static char path[4200];
    snprintf(path, sizeof path, "%s/%s", cf_test_dir(), sub);
    return path;
}

/* fsync and drop from the page cache every blob of column `name`, so that
 * the next read comes from the disk (where the file system has a disk). */
static void drop_blobs(const char *sub, const char *name, int64_t nfile)
{
    for (int64_t i = 0; i < nfile; i++) {
        char p[4400];
        snprintf(p, sizeof p, "%s/%s/%s/%06llX", cf_test_dir(), sub, name, (long long)i);
        int fd = open(p, O_RDONLY);
        CHECK(fd >= 0);
        if (fd < 0) continue;
        CHECK(fsync(fd) == 0);
        CHECK(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0);
        close(fd);
    }
}

static void make_column(const char *sub, int64_t nfile)
{
    cf_error err;
    cf_file *f = cf_test_open_new(sub);
    cf_column *c = NULL;
    CHECK_OK(cf_column_create(&c, f, "x", "f8", NMEMB, NROWS, nfile, &err), &err);
    double *v = malloc((size_t)NROWS * NMEMB * sizeof *v);
    for (int64_t i = 0; i < NROWS * NMEMB; i++) v[i] = value(i);
    CHECK_OK(cf_column_write(c, 0, NROWS, v, NULL, NMEMB * 8, 8, &err), &err);
    CHECK_OK(cf_column_close(c, &err), &err);
    cf_file_close(f);
    free(v);
    drop_blobs(sub, "x", nfile);
}

static cf_column *open_column(const char *sub, int flags, cf_file **f)
{
    cf_error err;
    cf_column *c = NULL;
    CHECK_OK(cf_file_open(f, file_path(sub), flags, &err), &err);
    CHECK_OK(cf_column_open(&c, *f, "x", &err), &err);
    return c;
}

/* Rows [start, start + count) read cold, as f8 (copied) and as f4
 * (converted), plain and verified, equal the values written. */
static void check_cold_rows(const char *sub, int64_t nfile, int64_t start, int64_t count)
{
    static const int flag_sets[2] = { CF_OPEN_READ, CF_OPEN_READ | CF_OPEN_VERIFY };
    for (int k = 0; k < 2; k++) {
        for (int convert = 0; convert < 2; convert++) {
            drop_blobs(sub, "x", nfile);
            cf_file *f = NULL;
            cf_column *c = open_column(sub, flag_sets[k], &f);
            cf_error err;
            size_t n = (size_t)(count * NMEMB);
            if (convert) {
                float *got = malloc(n * sizeof *got);
                CHECK_OK(cf_column_read(c, start, count, got, "f4", NMEMB * 4, 4, &err), &err);
                int64_t bad = 0;
                for (size_t i = 0; i < n; i++) bad += got[i] != (float)value(start * NMEMB + (int64_t)i);
                CHECK_EQ_INT(bad, 0);
                free(got);
            } else {
                double *got = malloc(n * sizeof *got), *want = malloc(n * sizeof *want);
                for (size_t i = 0; i < n; i++) want[i] = value(start * NMEMB + (int64_t)i);
                memset(got, 0xAB, n * sizeof *got);
                CHECK_OK(cf_column_read(c, start, count, got, NULL, NMEMB * 8, 8, &err), &err);
                CHECK_EQ_MEM(got, want, n * sizeof *got);
                free(got);
                free(want);
            }
            CHECK_OK(cf_column_close(c, &err), &err);
            cf_file_close(f);
        }
    }
}

static void test_cold_whole_column(void)
{
    make_column("one", 1);
    check_cold_rows("one", 1, 0, NROWS);
}

static void test_cold_across_blobs(void)
{
    make_column("three", 3);
    check_cold_rows("three", 3, 0, NROWS);
    /* from the middle of the first blob to the middle of the last */
    check_cold_rows("three", 3, NROWS / 6, NROWS * 2 / 3);
}

/* A column handle keeps its blob open: reads after a long one (short,
 * here and there) still return the right rows. */
static void test_after_long_read(void)
{
    make_column("after", 2);
    cf_file *f = NULL;
    cf_column *c = open_column("after", CF_OPEN_READ, &f);
    cf_error err;
    double *all = malloc((size_t)NROWS * NMEMB * sizeof *all);
    CHECK_OK(cf_column_read(c, 0, NROWS, all, NULL, NMEMB * 8, 8, &err), &err);
    const int64_t rows[] = { NROWS - 1, 3, NROWS / 2, NROWS / 2 - 1, 0 };
    for (size_t k = 0; k < sizeof rows / sizeof rows[0]; k++) {
        double one[NMEMB];
        CHECK_OK(cf_column_read(c, rows[k], 1, one, NULL, NMEMB * 8, 8, &err), &err);
        for (int j = 0; j < NMEMB; j++) CHECK(one[j] == value(rows[k] * NMEMB + j));
    }
    free(all);
    CHECK_OK(cf_column_close(c, &err), &err);
    cf_file_close(f);
}

/* A blob cut short or removed after the open: a long cold read fails,
 * naming the blob's path, and writes nothing it did not read. */
static void test_cold_short_and_missing(void)
{
    make_column("cut", 2);
    char blob1[4400];
    snprintf(blob1, sizeof blob1, "%s/cut/x/000001", cf_test_dir());
    CHECK(truncate(blob1, (off_t)(NROWS / 2 * NMEMB * 8 - 4096)) == 0);
    drop_blobs("cut", "x", 2);
    cf_file *f = NULL;
    cf_column *c = open_column("cut", CF_OPEN_READ, &f);
    cf_error err;
    double *got = malloc((size_t)NROWS * NMEMB * sizeof *got);
    CHECK_FAILS(cf_column_read(c, 0, NROWS, got, NULL, NMEMB * 8, 8, &err), CF_ESHORT, &err, "cut/x");
    CHECK(strstr(err.message, "000001") != NULL);
    /* the first blob is whole: its rows read */
    CHECK_OK(cf_column_read(c, 0, NROWS / 2, got, NULL, NMEMB * 8, 8, &err), &err);
    CHECK(got[NROWS / 2 * NMEMB - 1] == value(NROWS / 2 * NMEMB - 1));
    CHECK_OK(cf_column_close(c, &err), &err);

    CHECK(unlink(blob1) == 0);
    CHECK_OK(cf_column_open(&c, f, "x", &err), &err);
    CHECK_FAILS(cf_column_read(c, 0, NROWS, got, NULL, NMEMB * 8, 8, &err), CF_ENOENT, &err, "cut/x/000001");
    CHECK_OK(cf_column_close(c, &err), &err);
    cf_file_close(f);
    free(got);
}

CF_TESTS(CF_TEST(test_cold_whole_column), CF_TEST(test_cold_across_blobs), CF_TEST(test_after_long_read),
         CF_TEST(test_cold_short_and_missing))
