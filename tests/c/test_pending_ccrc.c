/* test_pending_ccrc.c - the chunk CRC32C pieces of several handles' pending
 * write states: pieces that tile a chunk join (in either order) into the
 * CRC32C one writer of the whole chunk would have; overlapping pieces, a
 * writer that lost track of its pieces and a state without pieces leave
 * the chunk unknown, never wrong. */
#include "harness.h"

#include <string.h>

enum { ROWS = 16, CHUNK = 8 };

static double value(int64_t row) { return (double)row * 0.75 + 1; }

/* The chunk CRC32C of rows [0, ROWS) written by one handle. */
static void reference(cf_file *f, uint32_t crc[2])
{
    cf_error err;
    cf_column *c = NULL;
    CHECK_OK(cf_column_create(&c, f, "ref", "f8", 1, ROWS, 1, &err), &err);
    CHECK_OK(cf_column_set_chunk_rows(c, CHUNK, &err), &err);
    double v[ROWS];
    for (int i = 0; i < ROWS; i++) v[i] = value(i);
    CHECK_OK(cf_column_write(c, 0, ROWS, v, NULL, 8, 8, &err), &err);
    for (int k = 0; k < 2; k++) CHECK_EQ_INT(cf_column_chunk_crc32c(c, k, &crc[k]), 1);
    cf_column_discard(c);
    cf_column_close(c, NULL);
}

/* A replica of root that wrote rows [lo, hi): its pending state. */
static void *piece_state(cf_file *f, cf_column *root, int64_t lo, int64_t hi, size_t *len)
{
    cf_error err;
    void *meta = NULL, *st = NULL;
    size_t mlen = 0;
    cf_column *r = NULL;
    CHECK_OK(cf_column_export_meta(root, &meta, &mlen, &err), &err);
    CHECK_OK(cf_column_open_meta(&r, f, meta, mlen, &err), &err);
    double v[ROWS];
    for (int64_t i = lo; i < hi; i++) v[i - lo] = value(i);
    CHECK_OK(cf_column_write(r, lo, hi - lo, v, NULL, 8, 8, &err), &err);
    CHECK_OK(cf_column_pending_export(r, &st, len, &err), &err);
    cf_column_close(r, NULL);
    cf_free(meta);
    return st;
}

/* Root writes rows [0, 3); two replicas rows [a0, a1) and [b0, b1),
 * merged in that order; then chunk k of root is known (1) or not (0), and
 * when known equals ref[k]. */
static void check_merge(const char *name, int64_t a0, int64_t a1, int64_t b0, int64_t b1, int strip,
                        const int want[2])
{
    cf_error err;
    cf_file *f = NULL;
    CHECK_OK(cf_file_open(&f, cf_test_dir(), CF_OPEN_WRITE | CF_OPEN_CREATE, &err), &err);
    uint32_t ref[2] = { 0, 0 };
    reference(f, ref);
    cf_column *root = NULL;
    CHECK_OK(cf_column_create(&root, f, name, "f8", 1, ROWS, 1, &err), &err);
    CHECK_OK(cf_column_set_chunk_rows(root, CHUNK, &err), &err);
    double v[3] = { value(0), value(1), value(2) };
    CHECK_OK(cf_column_write(root, 0, 3, v, NULL, 8, 8, &err), &err);
    size_t la = 0, lb = 0;
    void *sa = piece_state(f, root, a0, a1, &la), *sb = piece_state(f, root, b0, b1, &lb);
    if (strip && lb > 16) {
        /* a state of a writer that sends no chunk pieces: cut them off */
        unsigned char *p = sb;
        for (size_t at = lb - 12; at > 0; at--)
            if (memcmp(p + at, "CCR1", 4) == 0) {
                lb = at;
                break;
            }
    }
    CHECK_OK(cf_column_pending_merge(root, sa, la, &err), &err);
    CHECK_OK(cf_column_pending_merge(root, sb, lb, &err), &err);
    for (int k = 0; k < 2; k++) {
        uint32_t crc = 0;
        int known = cf_column_chunk_crc32c(root, k, &crc);
        if (known != want[k]) fprintf(stderr, "%s: chunk %d known %d, want %d\n", name, k, known, want[k]);
        CHECK_EQ_INT(known, want[k]);
        if (known) CHECK_EQ_INT(crc, ref[k]);
    }
    cf_free(sa);
    cf_free(sb);
    /* the commit and a read of each chunk, verified where known */
    CHECK_OK(cf_column_close(root, &err), &err);
    cf_file_close(f);
    CHECK_OK(cf_file_open(&f, cf_test_dir(), CF_OPEN_READ | CF_OPEN_VERIFY, &err), &err);
    CHECK_OK(cf_column_open(&root, f, name, &err), &err);
    double got[CHUNK];
    for (int k = 0; k < 2; k++) {
        CHECK_OK(cf_column_read(root, k * CHUNK, CHUNK, got, NULL, 8, 8, &err), &err);
        for (int i = 0; i < CHUNK; i++) CHECK(got[i] == value(k * CHUNK + i));
    }
    cf_column_close(root, NULL);
    cf_file_close(f);
}

static void test_pieces_in_order_join(void)
{
    const int want[2] = { 1, 1 };
    check_merge("in_order", 3, 11, 11, 16, 0, want);
}

static void test_pieces_out_of_order_join(void)
{
    const int want[2] = { 1, 1 };
    check_merge("out_of_order", 11, 16, 3, 11, 0, want);
}

static void test_overlapping_pieces_are_unknown(void)
{
    /* the second replica writes rows 0..10: in chunk 0 over the root's
     * rows (unknown); in chunk 1 the rows before the first replica's */
    const int want[2] = { 0, 1 };
    check_merge("overlap", 11, 16, 0, 11, 0, want);
    const int want2[2] = { 0, 1 };
    check_merge("overlap_first", 8, 16, 1, 8, 0, want2);
}

static void test_state_without_pieces_leaves_chunks_unknown(void)
{
    const int want[2] = { 0, 0 };
    check_merge("stripped", 11, 16, 3, 11, 1, want);
}

CF_TESTS(CF_TEST(test_pieces_in_order_join), CF_TEST(test_pieces_out_of_order_join),
         CF_TEST(test_overlapping_pieces_are_unknown), CF_TEST(test_state_without_pieces_leaves_chunks_unknown))
