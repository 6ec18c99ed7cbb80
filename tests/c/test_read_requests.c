/* test_read_requests.c - the preads a long read from disk makes: an
 * unchecked read asks for each 64 MiB window of a blob in one pread (the
 * kernel's own read-ahead keeps the disk busy), a checked read in 8 MiB
 * pieces (the check of one overlaps the read-ahead of the next); both
 * return the bytes written.  pread is interposed by this program (the
 * tests link the static library), recording each request and passing it
 * on to the kernel. */
#define _GNU_SOURCE 1
#include "harness.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "platform.h"

/* 12 Mi rows of f8: 96 MiB in one blob, two map windows (64 + 32 MiB). */
#define NROWS ((int64_t)12 << 20)
#define MIB ((int64_t)1 << 20)

typedef struct {
    int64_t offset, size;
} request;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static request seen[4096];
static int nseen, recording;

ssize_t pread(int fd, void *buf, size_t n, off_t offset)
{
    pthread_mutex_lock(&lock);
    /* the blob's reads; the header and checksum files are far smaller */
    if (recording && n >= (size_t)MIB && nseen < (int)(sizeof seen / sizeof seen[0]))
        seen[nseen++] = (request){ (int64_t)offset, (int64_t)n };
    pthread_mutex_unlock(&lock);
    return (ssize_t)syscall(SYS_pread64, fd, buf, n, offset);
}

static double value(int64_t i) { return (double)(i * 2654435761u % 1000003u) * 0.25 + 3.5; }

static void blob_path(char *p, size_t cap)
{
    snprintf(p, cap, "%s/f/x/000000", cf_test_dir());
}

/* Write the column, then fsync and drop its blob from the page cache.
 * 1 if the blob is not cached afterwards (else the file system keeps it,
 * a tmpfs: the read would be a cached one). */
static int make_cold_column(void)
{
    cf_error err;
    cf_file *f = cf_test_open_new("f");
    cf_column *c = NULL;
    CHECK_OK(cf_column_create(&c, f, "x", "f8", 1, NROWS, 1, &err), &err);
    double *v = malloc((size_t)NROWS * sizeof *v);
    for (int64_t i = 0; i < NROWS; i++) v[i] = value(i);
    CHECK_OK(cf_column_write(c, 0, NROWS, v, NULL, 8, 8, &err), &err);
    CHECK_OK(cf_column_close(c, &err), &err);
    cf_file_close(f);
    free(v);
    char p[4400];
    blob_path(p, sizeof p);
    int fd = open(p, O_RDONLY);
    CHECK(fd >= 0);
    if (fd < 0) return 0;
    CHECK(fsync(fd) == 0);
    CHECK(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0);
    int cold = !cf__range_cached(fd, 0, NROWS * 8);
    close(fd);
    return cold;
}

/* Read the column whole, cold, into a new (untouched) buffer, recording
 * the blob's preads; check the values. */
static void read_cold(int flags)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/f", cf_test_dir());
    cf_error err;
    cf_file *f = NULL;
    cf_column *c = NULL;
    CHECK_OK(cf_file_open(&f, path, flags, &err), &err);
    CHECK_OK(cf_column_open(&c, f, "x", &err), &err);
    double *got = malloc((size_t)NROWS * sizeof *got);
    nseen = 0;
    recording = 1;
    CHECK_OK(cf_column_read(c, 0, NROWS, got, NULL, 8, 8, &err), &err);
    recording = 0;
    int64_t bad = 0;
    for (int64_t i = 0; i < NROWS; i++) bad += got[i] != value(i);
    CHECK_EQ_INT(bad, 0);
    free(got);
    CHECK_OK(cf_column_close(c, &err), &err);
    cf_file_close(f);
}

static void test_unchecked_cold_read_asks_per_window(void)
{
    if (!make_cold_column()) {
        printf("  (the blob stays cached after POSIX_FADV_DONTNEED here: no cold read to look at)\n");
        return;
    }
    read_cold(CF_OPEN_READ);
    CHECK_EQ_INT(nseen, 2);
    CHECK_EQ_INT(seen[0].offset, 0);
    CHECK_EQ_INT(seen[0].size, 64 * MIB);
    CHECK_EQ_INT(seen[1].offset, 64 * MIB);
    CHECK_EQ_INT(seen[1].size, 32 * MIB);
}

static void test_checked_cold_read_asks_in_pieces(void)
{
    if (!make_cold_column()) {
        printf("  (the blob stays cached after POSIX_FADV_DONTNEED here: no cold read to look at)\n");
        return;
    }
    read_cold(CF_OPEN_READ | CF_OPEN_VERIFY);
    CHECK_EQ_INT(nseen, 12);
    int64_t at = 0;
    for (int i = 0; i < nseen; i++) {
        CHECK_EQ_INT(seen[i].offset, at);
        CHECK_EQ_INT(seen[i].size, 8 * MIB);
        at += seen[i].size;
    }
    CHECK_EQ_INT(at, NROWS * 8);
}

CF_TESTS(CF_TEST(test_unchecked_cold_read_asks_per_window), CF_TEST(test_checked_cold_read_asks_in_pieces))
