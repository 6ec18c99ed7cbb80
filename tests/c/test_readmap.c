/* test_readmap.c - reads through a memory map of the page cache
 * (src/io/readmap.c) happen only where the caller allows them: CF_OPEN_NOMMAP
 * turns them off for a File, and no environment variable does. */
#include "harness.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "fsutil.h"
#include "readmap.h"

#define BYTES ((size_t)16 << 20)

/* A cached file of BYTES bytes of a known pattern; returns its fd. */
static int cached_file(const char *name)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", cf_test_dir(), name);
    unsigned char *data = malloc(BYTES);
    for (size_t i = 0; i < BYTES; i++) data[i] = (unsigned char)(i * 7 + (i >> 12));
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    cf_error err;
    CHECK(fd >= 0);
    CHECK_OK(cf__pwrite_all(fd, data, BYTES, 0, path, &err), &err);
    size_t got = 0;
    CHECK_OK(cf__pread_all(fd, data, BYTES, 0, &got, path, &err), &err); /* into the page cache */
    free(data);
    return fd;
}

static void test_map_range_obeys_no_mmap(void)
{
    int fd = cached_file("blob");
    cf__map m;
    CHECK_EQ_INT(cf__map_range(fd, 4096, (int64_t)BYTES - 4096, 1, &m), 0);
    CHECK(m.base == NULL && m.at == NULL);
#if defined(__linux__)
    /* allowed: a cached range is mapped (Linux has MADV_POPULATE_READ
     * since 5.14; an older kernel refuses to populate, and reads pread) */
    if (cf__map_range(fd, 4096, (int64_t)BYTES - 4096, 0, &m)) {
        CHECK(m.at != NULL);
        CHECK_EQ_INT(m.at[0], (unsigned char)(4096 * 7 + 1));
        cf__map_release(&m);
    }
#endif
    close(fd);
}

/* The library reads no environment: COLFILE_NO_MMAP set changes nothing
 * at this level (Python turns it into CF_OPEN_NOMMAP). */
static void test_environment_is_not_read(void)
{
    int fd = cached_file("blob-env");
    cf__map m;
    setenv("COLFILE_NO_MMAP", "1", 1);
    int mapped_env = cf__map_range(fd, 0, (int64_t)BYTES, 0, &m);
    if (mapped_env) cf__map_release(&m);
    unsetenv("COLFILE_NO_MMAP");
    int mapped = cf__map_range(fd, 0, (int64_t)BYTES, 0, &m);
    if (mapped) cf__map_release(&m);
    CHECK_EQ_INT(mapped_env, mapped);
    close(fd);
}

/* A File opened CF_OPEN_NOMMAP keeps the flag, and its columns read the
 * same values, through every read path (copy, conversion, steps, lists). */
static void test_nommap_file_reads(void)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/f", cf_test_dir());
    cf_error err;
    cf_file *f;
    cf_column *c;
    const int64_t n = (int64_t)(BYTES / 8);
    double *v = malloc((size_t)n * sizeof *v);
    for (int64_t i = 0; i < n; i++) v[i] = (double)i * 0.5;
    CHECK_OK(cf_file_open(&f, path, CF_OPEN_WRITE | CF_OPEN_CREATE, &err), &err);
    CHECK_OK(cf_column_create(&c, f, "x", "<f8", 1, n, 2, &err), &err);
    CHECK_OK(cf_column_write(c, 0, n, v, NULL, 8, 8, &err), &err);
    CHECK_OK(cf_column_close(c, &err), &err);
    cf_file_close(f);
    for (int nommap = 0; nommap < 2; nommap++) {
        CHECK_OK(cf_file_open(&f, path, CF_OPEN_READ | (nommap ? CF_OPEN_NOMMAP : 0), &err), &err);
        CHECK_EQ_INT((cf_file_flags(f) & CF_OPEN_NOMMAP) != 0, nommap);
        CHECK_OK(cf_column_open(&c, f, "x", &err), &err);
        double *got = malloc((size_t)n * sizeof *got);
        for (int pass = 0; pass < 2; pass++) { /* the second from the page cache, into touched memory */
            CHECK_OK(cf_column_read(c, 0, n, got, NULL, 8, 8, &err), &err);
            CHECK_EQ_MEM(got, v, (size_t)n * sizeof *got);
        }
        float *g4 = malloc((size_t)n * sizeof *g4);
        CHECK_OK(cf_column_read(c, 0, n, g4, "<f4", 4, 4, &err), &err);
        CHECK(g4[0] == 0.0f && g4[n - 1] == (float)v[n - 1]);
        CHECK_OK(cf_column_read_step(c, 1, 3, n / 3, got, NULL, 8, 8, &err), &err);
        CHECK(got[0] == v[1] && got[n / 3 - 1] == v[1 + 3 * (n / 3 - 1)]);
        int64_t rows[] = { n - 1, 0, n / 2, 7 };
        CHECK_OK(cf_column_read_rows(c, rows, 4, got, NULL, 8, 8, &err), &err);
        CHECK(got[0] == v[n - 1] && got[1] == v[0] && got[2] == v[n / 2] && got[3] == v[7]);
        free(g4);
        free(got);
        CHECK_OK(cf_column_close(c, &err), &err);
        cf_file_close(f);
    }
    free(v);
}

int main(void)
{
    static const cf_test_case cases[] = {
        CF_TEST(test_map_range_obeys_no_mmap),
        CF_TEST(test_environment_is_not_read),
        CF_TEST(test_nommap_file_reads),
    };
    return cf_test_run(cases, sizeof cases / sizeof cases[0]);
}
