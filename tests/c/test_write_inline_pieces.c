/* test_write_inline_pieces.c - a write digested on the writing thread (the
 * inline placement) copies a caller's buffer that needs no conversion into
 * the file in large pieces (CF__INLINE_WRITE_BYTES), not one system call per
 * 256 KiB; and the bytes on disk (data, header sums, CRC32C and chunk
 * statistics) are the same whatever the piece size, the placement or a
 * conversion buffer in between.
 *
 * The pwrite64 below stands in front of the C library's for the library
 * linked into this program: it counts the calls and their bytes and makes
 * the same system call, so the files are real. */
#define _DEFAULT_SOURCE /* syscall() */
#include "harness.h"

#include <math.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "digest.h"


static int64_t g_calls, g_bytes, g_unaligned;

ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off);
ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off)
{
    /* pieces after the first of a write start on a piece boundary */
    if (g_calls++ > 0 && off % CF__INLINE_WRITE_BYTES != 0) g_unaligned++;
    g_bytes += (int64_t)n;
    return (ssize_t)syscall(SYS_pwrite64, fd, buf, n, off);
}

static uint64_t rng = UINT64_C(0x9E3779B97F4A7C15);

static double rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (double)(rng >> 11) * 0x1p-53;
}

#define ROWS ((int64_t)700001) /* 16 MiB of f8x3 and a bit */
#define HEAD ((int64_t)3)      /* written last: the big write starts unaligned */

/* Write the rows of `rows` (ROWS x 3 doubles, row r at rows + r*stride
 * doubles) into column Position of a new File `name`, opened with `flags`;
 * *calls and *bytes: the pwrite calls of the big write and their bytes. */
static void write_file(const char *name, int flags, const double *rows, int64_t stride, int64_t *calls,
                       int64_t *bytes, int64_t *unaligned)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", cf_test_dir(), name);
    cf_error err;
    cf_file *f = NULL;
    CHECK_OK(cf_file_open(&f, path, CF_OPEN_WRITE | CF_OPEN_CREATE | CF_OPEN_NODURABLE | flags, &err), &err);
    if (!f) return;
    cf_column *c = NULL;
    CHECK_OK(cf_column_create(&c, f, "Position", "f8", 3, ROWS, 1, &err), &err);
    /* chunks that pieces of any size cut across */
    if (c) CHECK_OK(cf_column_set_chunk_rows(c, 50000, &err), &err);
    int64_t rs = stride * (int64_t)sizeof(double);
    g_calls = g_bytes = g_unaligned = 0;
    if (c) CHECK_OK(cf_column_write(c, HEAD, ROWS - HEAD, rows + HEAD * stride, NULL, rs, 8, &err), &err);
    *calls = g_calls;
    *bytes = g_bytes;
    *unaligned = g_unaligned;
    if (c) CHECK_OK(cf_column_write(c, 0, HEAD, rows, NULL, rs, 8, &err), &err);
    if (c) CHECK_OK(cf_column_close(c, &err), &err);
    cf_file_close(f);
}

static void same_file(const char *a, const char *b, const char *leaf)
{
    char pa[4300], pb[4300];
    snprintf(pa, sizeof pa, "%s/Position/%s", a, leaf);
    snprintf(pb, sizeof pb, "%s/Position/%s", b, leaf);
    size_t na = 0, nb = 0;
    char *x = cf_test_slurp(cf_test_dir(), pa, &na), *y = cf_test_slurp(cf_test_dir(), pb, &nb);
    CHECK(x != NULL && y != NULL);
    if (x && y) {
        CHECK_EQ_INT(na, nb);
        if (na == nb) CHECK_EQ_MEM(x, y, na);
    }
    free(x);
    free(y);
}

static void test_inline_pieces_are_large_and_bytes_the_same(void)
{
    double *packed = malloc((size_t)ROWS * 3 * sizeof *packed);
    double *wide = malloc((size_t)ROWS * 4 * sizeof *wide); /* a fourth value per row: converted */
    CHECK(packed && wide);
    if (!packed || !wide) return;
    for (int64_t r = 0; r < ROWS; r++) {
        for (int j = 0; j < 3; j++) {
            double v = rnd() * 2000.0 - 700.0;
            if (r % 9973 == 5 && j == 1) v = NAN;
            packed[r * 3 + j] = wide[r * 4 + j] = v;
        }
        wide[r * 4 + 3] = -1.0;
    }
    int64_t big = (ROWS - HEAD) * 24, calls = 0, bytes = 0, unaligned = 0, c2 = 0, b2 = 0, c3 = 0, b3 = 0, u;

    write_file("inline", CF_OPEN_DIGEST_INLINE, packed, 3, &calls, &bytes, &unaligned);
    CHECK_EQ_INT(bytes, big); /* every byte went through the counted calls */
    /* at least 1 MiB per call on average, against 64 calls of 256 KiB */
    CHECK(calls >= 1 && calls <= 1 + big / ((int64_t)1 << 20));
    if (calls > 1 + big / ((int64_t)1 << 20))
        fprintf(stderr, "inline write of %lld bytes took %lld pwrite calls\n", (long long)big, (long long)calls);
    /* the write starts 72 bytes into the blob: its first piece ends on a
     * 2 MiB boundary, so that the page cache can hold the rest in folios
     * as large as the pieces */
    CHECK_EQ_INT(unaligned, 0);

    write_file("converted", CF_OPEN_DIGEST_INLINE, wide, 4, &c2, &b2, &u);
    CHECK_EQ_INT(b2, big);
    write_file("helper", CF_OPEN_DIGEST_HELPER, packed, 3, &c3, &b3, &u);
    CHECK_EQ_INT(b3, big);
    CHECK_EQ_INT(u, 0); /* the helper's hand-overs are 2 MiB too */

    /* the same bytes on disk, sums and statistics included */
    static const char *leaves[] = { "000000", "header", "colfile-v1" };
    for (size_t i = 0; i < sizeof leaves / sizeof leaves[0]; i++) {
        same_file("inline", "converted", leaves[i]);
        same_file("inline", "helper", leaves[i]);
    }
    size_t n = 0;
    char *blob = cf_test_slurp(cf_test_dir(), "inline/Position/000000", &n);
    CHECK(blob != NULL);
    CHECK_EQ_INT(n, ROWS * 24);
    if (blob && n == (size_t)(ROWS * 24)) CHECK_EQ_MEM(blob, packed, n);
    free(blob);
    free(packed);
    free(wide);
}

CF_TESTS(CF_TEST(test_inline_pieces_are_large_and_bytes_the_same))
