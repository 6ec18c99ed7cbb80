/* test_readsplit.c - large reads out of the page cache on two threads
 * (src/io/readsplit.c): whatever way a read is split, the bytes, the byte
 * count at the end of the file and the CRC32C are those of one plain read. */
#include "harness.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "checksum.h"
#include "fsutil.h"
#include "platform.h"
#include "readsplit.h"

/* A file of `size` pseudo-random bytes, read once so that the page cache
 * holds it; returns its descriptor and the bytes. */
static int make_cached_file(const char *name, size_t size, unsigned char **bytes)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", cf_test_dir(), name);
    unsigned char *data = malloc(size);
    uint64_t x = 0x9E3779B97F4A7C15u;
    for (size_t i = 0; i < size; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        data[i] = (unsigned char)x;
    }
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    cf_error err;
    CHECK(fd >= 0);
    CHECK_OK(cf__pwrite_all(fd, data, size, 0, path, &err), &err);
    unsigned char *scratch = malloc(size);
    size_t got = 0;
    CHECK_OK(cf__pread_all(fd, scratch, size, 0, &got, path, &err), &err);
    free(scratch);
    *bytes = data;
    return fd;
}

/* Read [offset, offset + n) with cf__pread_split (with and without a CRC,
 * in whole and in small pieces) and compare with what the file holds. */
static void check_read(int fd, const unsigned char *data, size_t size, int64_t offset, size_t n)
{
    size_t want = offset >= (int64_t)size ? 0 : size - (size_t)offset < n ? size - (size_t)offset : n;
    size_t pieces[] = { 0, 64 << 10, 3000 };
    for (int k = 0; k < 3; k++) {
        unsigned char *dst = malloc(n ? n : 1);
        memset(dst, 0xEE, n);
        uint32_t crc = 0x1234u, expect_crc = cf__crc32c_update(0x1234u, data + offset, want);
        size_t got = (size_t)-1;
        cf_error err;
        CHECK_OK(cf__pread_split(fd, dst, n, offset, pieces[k], &crc, &got, "split", &err), &err);
        CHECK_EQ_INT(got, want);
        CHECK_EQ_MEM(dst, data + offset, want);
        CHECK_EQ_INT(crc, expect_crc);
        memset(dst, 0xEE, n);
        got = (size_t)-1;
        CHECK_OK(cf__pread_split(fd, dst, n, offset, pieces[k], NULL, &got, "split", &err), &err);
        CHECK_EQ_INT(got, want);
        CHECK_EQ_MEM(dst, data + offset, want);
        free(dst);
    }
}

static void test_split_reads_equal_plain_reads(void)
{
    const size_t min = (size_t)CF__SPLIT_MIN_BYTES;
    size_t size = 2 * min + (1u << 20) + 12345;
    unsigned char *data;
    int fd = make_cached_file("blob", size, &data);
    check_read(fd, data, size, 0, size);                     /* whole file */
    check_read(fd, data, size, 4097, min + (3u << 20));      /* unaligned start */
    check_read(fd, data, size, 1000, min - 1);               /* below the split size */
    check_read(fd, data, size, 0, min);                      /* exactly the split size */
    check_read(fd, data, size, size - min / 2, 2 * min);     /* past the end: second half empty */
    check_read(fd, data, size, size - min / 4, 2 * min);     /* past the end: first half short */
    check_read(fd, data, size, size - (min / 2 + 4096), min + 8192); /* second half short */
    check_read(fd, data, size, (int64_t)size + 10, min);     /* wholly past the end */
    close(fd);
    free(data);
}

/* The split is taken only for cached ranges: cachestat sees a file just
 * read as cached, and as not cached once its pages are dropped. */
static void test_range_cached(void)
{
    size_t size = 2u << 20;
    unsigned char *data;
    int fd = make_cached_file("cached", size, &data);
    int cached = cf__range_cached(fd, 0, (int64_t)size);
    if (cached) {
        CHECK_EQ_INT(cf__range_cached(fd, 4096, 100), 1);
        CHECK(fsync(fd) == 0);
        CHECK(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0);
        CHECK_EQ_INT(cf__range_cached(fd, 0, (int64_t)size), 0);
    } else {
        printf("  (cachestat not available: large reads stay on one thread)\n");
    }
    CHECK_EQ_INT(cf__range_cached(fd, 0, 0), 0);
    CHECK_EQ_INT(cf__range_cached(fd, -1, 10), 0);
    /* a cold read is correct too (it stays whole) */
    check_read(fd, data, size, 0, size);
    close(fd);
    free(data);
}

CF_TESTS(CF_TEST(test_split_reads_equal_plain_reads),
         CF_TEST(test_range_cached))
