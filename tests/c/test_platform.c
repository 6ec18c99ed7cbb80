/* test_platform.c - the Linux hints of src/common/platform.c that writes rely on:
 * a preallocation reserves blocks without changing what the file holds. */
#include "harness.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsutil.h"
#include "platform.h"

static void test_preallocate_keeps_the_size(void)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/blob", cf_test_dir());
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    CHECK(fd >= 0);
    cf_error err;
    CHECK_OK(cf__pwrite_all(fd, "head", 4, 0, path, &err), &err);
    struct stat before, after;
    CHECK(fstat(fd, &before) == 0);
    const int64_t len = 8 << 20;
    cf__preallocate(fd, 4, len);
    cf__preallocate(fd, -1, len); /* refused quietly */
    cf__preallocate(fd, 0, 0);
    CHECK(fstat(fd, &after) == 0);
    CHECK_EQ_INT(after.st_size, 4); /* the size is the bytes written, as before */
#if defined(__linux__)
    /* where the file system reserves blocks, they are there now */
    if (after.st_blocks == before.st_blocks) printf("  (no preallocation on this file system)\n");
    else CHECK(after.st_blocks * 512 >= len);
#endif
    /* writing the reserved range reads back as written */
    unsigned char *data = malloc((size_t)len), *back = malloc((size_t)len);
    for (int64_t i = 0; i < len; i++) data[i] = (unsigned char)(i * 7 + 1);
    CHECK_OK(cf__pwrite_all(fd, data, (size_t)len, 4, path, &err), &err);
    size_t got = 0;
    CHECK_OK(cf__pread_all(fd, back, (size_t)len, 4, &got, path, &err), &err);
    CHECK_EQ_INT(got, len);
    CHECK_EQ_MEM(back, data, (size_t)len);
    CHECK(fstat(fd, &after) == 0);
    CHECK_EQ_INT(after.st_size, 4 + len);
    free(data);
    free(back);
    close(fd);
}

CF_TESTS(CF_TEST(test_preallocate_keeps_the_size))
