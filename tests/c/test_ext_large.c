/* test_ext_large.c - a colfile-v1 larger than the limit for other metadata
 * files (1 GiB) still gives its CRC32C and statistics: no size makes them
 * silently unknown (docs/format.md 8.1). */
#include "harness.h"
#include "ext_text.h"

#include "fsutil.h"

#include <fcntl.h>
#include <math.h>
#include <sys/stat.h>
#include <unistd.h>

/* Grow x's colfile-v1 past `pad` bytes: a line of `pad` NUL bytes (a hole
 * of a sparse file, so the test costs no disk) before its checksum line,
 * which is made right again; then stamped with the header's time, as a
 * commit does.  Such lines are ignored by readers (8.4). */
static void pad_ext(const char *col, int64_t pad)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s/colfile-v1", cf_test_dir(), col);
    char *ext = NULL;
    size_t len = 0;
    CHECK_OK(cf__read_file(path, &ext, &len, NULL), NULL);
    if (!ext) return;
    char *seal = strstr(ext, "\nCRC32C: ");
    CHECK(seal != NULL);
    if (!seal) return;
    size_t head = (size_t)(seal + 1 - ext);
    /* CRC of head || NUL * pad || "\n" */
    uint32_t crc = cf__crc32c_update(0, ext, head);
    static unsigned char zeros[1 << 20];
    for (int64_t left = pad; left > 0;) {
        size_t n = left < (int64_t)sizeof zeros ? (size_t)left : sizeof zeros;
        crc = cf__crc32c_update(crc, zeros, n);
        left -= (int64_t)n;
    }
    crc = cf__crc32c_update(crc, "\n", 1);
    char tail[64];
    int tl = snprintf(tail, sizeof tail, "\nCRC32C: %08x\n", (unsigned)crc);
    int fd = open(path, O_WRONLY | O_TRUNC);
    CHECK(fd >= 0);
    CHECK(pwrite(fd, ext, head, 0) == (ssize_t)head);
    CHECK(pwrite(fd, tail, (size_t)tl, (off_t)head + pad) == tl);
    close(fd);
    free(ext);
    CHECK(cf_test_ext_match_header(path) == 0);
    struct stat st;
    CHECK(stat(path, &st) == 0 && (uint64_t)st.st_size > CF__METADATA_MAX);
}

static void test_large_ext_keeps_crcs_and_statistics(void)
{
    cf_error err;
    cf_file *f;
    CHECK_OK(cf_file_open(&f, cf_test_dir(), CF_OPEN_WRITE, &err), &err);
    cf_column *c = NULL;
    double v[10];
    for (int i = 0; i < 10; i++) v[i] = i * 1.5 - 3;
    CHECK_OK(cf_column_create(&c, f, "x", "f8", 1, 10, 2, &err), &err);
    CHECK_OK(cf_column_set_chunk_rows(c, 4, &err), &err);
    CHECK_OK(cf_column_write(c, 0, 10, v, NULL, 8, 8, &err), &err);
    CHECK_OK(cf_column_close(c, &err), &err);
    cf_file_close(f);
    pad_ext("x", (int64_t)CF__METADATA_MAX + 4096);

    for (int writable = 0; writable < 2; writable++) {
        CHECK_OK(cf_file_open(&f, cf_test_dir(), writable ? CF_OPEN_WRITE : 0, &err), &err);
        CHECK_OK(cf_column_open(&c, f, "x", &err), &err);
        int state = -1;
        CHECK_OK(cf_column_ext_state(c, &state, &err), &err);
        CHECK_EQ_INT(state, CF_EXT_CURRENT);
        uint32_t crc = 0;
        CHECK(cf_column_blob_crc32c(c, 0, &crc) == 1);
        CHECK(crc == cf__crc32c_update(0, v, 5 * sizeof(double)));
        CHECK_EQ_INT(cf_column_chunk_count(c), 4);
        cf_chunk_stats s;
        CHECK_OK(cf_column_chunk_stats(c, 3, 0, &s, &err), &err);
        CHECK(s.valid);
        CHECK(s.min == v[9] && s.max == v[9]);
        CHECK_OK(cf_column_close(c, &err), &err);
        cf_file_close(f);
    }
}

/* colfile-v1 there but unreadable (here: not a regular file) is an error
 * naming it, not an absent file whose CRCs are unknown. */
static void test_unreadable_ext_is_an_error(void)
{
    cf_error err;
    cf_file *f;
    CHECK_OK(cf_file_open(&f, cf_test_dir(), CF_OPEN_WRITE, &err), &err);
    cf_column *c = NULL;
    double v[3] = { 1, 2, 3 };
    CHECK_OK(cf_column_create(&c, f, "x", "f8", 1, 3, 1, &err), &err);
    CHECK_OK(cf_column_write(c, 0, 3, v, NULL, 8, 8, &err), &err);
    CHECK_OK(cf_column_close(c, &err), &err);
    cf_file_close(f);
    char path[4200];
    snprintf(path, sizeof path, "%s/x/colfile-v1", cf_test_dir());
    CHECK(unlink(path) == 0 && mkdir(path, 0777) == 0);
    CHECK_OK(cf_file_open(&f, cf_test_dir(), 0, &err), &err);
    CHECK_FAILS(cf_column_open(&c, f, "x", &err), CF_EFORMAT, &err, "x/colfile-v1: not a regular file");
    cf_file_close(f);
}

CF_TESTS(CF_TEST(test_large_ext_keeps_crcs_and_statistics), CF_TEST(test_unreadable_ext_is_an_error))
