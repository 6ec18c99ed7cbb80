/* test_stream_layout.c - a stream's layout arithmetic and its committed
 * table as bytes (docs/format.md 8.7). */
#include <string.h>

#include "harness.h"
#include "colfile_stream.h"
#include "checksum.h"
#include "stream_impl.h"
#include "stream_table_text.h"

static void test_tasks_to_files(void)
{
    /* 10 tasks over 4 files: the split of 3.5 gives runs of 2 3 2 3 */
    int64_t want_first[10] = { 0, 0, 2, 2, 2, 5, 5, 7, 7, 7 };
    int64_t want_n[10] = { 2, 2, 3, 3, 3, 2, 2, 3, 3, 3 };
    int64_t want_f[10] = { 0, 0, 1, 1, 1, 2, 2, 3, 3, 3 };
    for (int64_t r = 0; r < 10; r++) {
        int64_t first, n;
        CHECK_EQ_INT(cf_stream_file_of(10, 4, r, &first, &n), want_f[r]);
        CHECK_EQ_INT(first, want_first[r]);
        CHECK_EQ_INT(n, want_n[r]);
    }
    /* every task of every file, for many shapes: runs are contiguous and
     * cover all tasks once */
    for (int64_t p = 1; p <= 40; p++)
        for (int64_t m = 1; m <= p; m++) {
            int64_t expect = 0;
            for (int64_t f = 0; f < m; f++) {
                int64_t lo = f * p / m, hi = (f + 1) * p / m;
                for (int64_t r = lo; r < hi; r++) {
                    int64_t first, n;
                    CHECK_EQ_INT(cf_stream_file_of(p, m, r, &first, &n), f);
                    CHECK_EQ_INT(first, lo);
                    CHECK_EQ_INT(n, hi - lo);
                    CHECK_EQ_INT(r, expect);
                    expect++;
                }
            }
            CHECK_EQ_INT(expect, p);
        }
    /* the largest stream: no overflow */
    int64_t first, n;
    CHECK_EQ_INT(cf_stream_file_of(CF_STREAM_TASKS_MAX, CF_STREAM_FILES_MAX, CF_STREAM_TASKS_MAX - 1, &first, &n),
                 CF_STREAM_FILES_MAX - 1);
    CHECK_EQ_INT(first + n, CF_STREAM_TASKS_MAX);
    CHECK_EQ_INT(cf_stream_file_of(4, 5, 0, NULL, NULL), -1); /* more files than tasks */
    CHECK_EQ_INT(cf_stream_file_of(4, 2, 4, NULL, NULL), -1);
    CHECK_EQ_INT(cf_stream_file_of(4, 2, -1, NULL, NULL), -1);
    CHECK_EQ_INT(cf_stream_file_of(0, 1, 0, NULL, NULL), -1);
}

static void test_chunk_offsets(void)
{
    /* SIONlib's rule: block b of local task l among n at (b n + l) C */
    cf_stream_layout l = { 5, 2, 4096, 4096 }; /* file 0: tasks 0 1; file 1: tasks 2 3 4 */
    CHECK_EQ_INT(cf_stream_chunk_offset(&l, 0, 0), 0);
    CHECK_EQ_INT(cf_stream_chunk_offset(&l, 1, 0), 4096);
    CHECK_EQ_INT(cf_stream_chunk_offset(&l, 0, 1), 2 * 4096);
    CHECK_EQ_INT(cf_stream_chunk_offset(&l, 1, 3), (3 * 2 + 1) * 4096);
    CHECK_EQ_INT(cf_stream_chunk_offset(&l, 2, 0), 0);
    CHECK_EQ_INT(cf_stream_chunk_offset(&l, 4, 0), 2 * 4096);
    CHECK_EQ_INT(cf_stream_chunk_offset(&l, 3, 2), (2 * 3 + 1) * 4096);
    CHECK_EQ_INT(cf_stream_chunk_offset(&l, 5, 0), -1);
    CHECK_EQ_INT(cf_stream_chunk_offset(&l, 0, -1), -1);
    /* no two chunks of one file overlap */
    for (int64_t a = 0; a < 5; a++)
        for (int64_t b = 0; b < 5; b++)
            for (int64_t i = 0; i < 6; i++)
                for (int64_t j = 0; j < 6; j++) {
                    if (a == b && i == j) continue;
                    if (cf_stream_file_of(5, 2, a, NULL, NULL) != cf_stream_file_of(5, 2, b, NULL, NULL)) continue;
                    CHECK(cf_stream_chunk_offset(&l, a, i) != cf_stream_chunk_offset(&l, b, j));
                }
    /* beyond 2^62: refused, never wrapped */
    cf_stream_layout big = { 1000, 1, CF_STREAM_CHUNK_MAX, 4096 };
    CHECK_EQ_INT(cf_stream_chunk_offset(&big, 999, 4194), -1); /* slot 4194999 of 2^22 */
    CHECK_EQ_INT(cf_stream_chunk_offset(&big, 999, 4193), (4193 * INT64_C(1000) + 999) * CF_STREAM_CHUNK_MAX);
    CHECK_EQ_INT(cf_stream_chunk_offset(&big, 0, INT64_MAX / 2), -1);
}

static void test_layout_choose(void)
{
    cf_file *f = cf_test_open_new("f");
    cf_error err;
    cf_stream_layout l;
    CHECK_OK(cf_stream_layout_choose(&l, f, 8, 0, 0, 0, &err), &err);
    CHECK_EQ_INT(l.tasks, 8);
    CHECK_EQ_INT(l.files, 1);
    CHECK(l.align >= 512);
    CHECK_EQ_INT(l.chunk % l.align, 0);
    CHECK(l.chunk >= CF_STREAM_CHUNK_DEFAULT && l.chunk < CF_STREAM_CHUNK_DEFAULT + l.align);
    CHECK_OK(cf_stream_layout_choose(&l, f, 8, 3, 5000, 4096, &err), &err);
    CHECK_EQ_INT(l.files, 3);
    CHECK_EQ_INT(l.chunk, 8192); /* rounded up to the alignment */
    CHECK_FAILS(cf_stream_layout_choose(&l, f, 8, 9, 0, 4096, &err), CF_EARG, &err, "files must be in 1..8");
    CHECK_FAILS(cf_stream_layout_choose(&l, f, 0, 1, 0, 4096, &err), CF_EARG, &err, "tasks must be");
    CHECK_FAILS(cf_stream_layout_choose(&l, f, 2, 1, -1, 4096, &err), CF_EARG, &err, "negative");
    cf_file_close(f);
}

/* One physical file per node on a network or parallel file system, one
 * per task on a local one; always within 1..tasks. */
static void test_files_default(void)
{
    cf_file *f = cf_test_open_new("f");
    const char *type = cf_file_fs_type(f);
    static const char *const local[] = { "ext4", "xfs", "btrfs", "tmpfs", "zfs", "bcachefs", "overlayfs" };
    int is_local = 0;
    for (size_t i = 0; i < sizeof local / sizeof *local; i++) is_local |= strcmp(type, local[i]) == 0;
    CHECK_EQ_INT(cf_stream_files_default(f, 8, 2), is_local ? 8 : 2);
    CHECK_EQ_INT(cf_stream_files_default(f, 1, 1), 1);
    CHECK_EQ_INT(cf_stream_files_default(f, 3, 5), 3); /* never more than the tasks */
    CHECK_EQ_INT(cf_stream_files_default(f, 4, 0), is_local ? 4 : 1);
    CHECK_EQ_INT(cf_stream_files_default(f, (int64_t)1 << 30, 1), is_local ? CF_STREAM_FILES_MAX : 1);
    /* no File: not known to be local */
    CHECK_EQ_INT(cf_stream_files_default(NULL, 8, 2), 2);
    cf_file_close(f);
}

static void test_table_bytes(void)
{
    /* the example of docs/format.md 8.7, byte for byte */
    cf_error err;
    cf__stream_table t;
    cf_stream_layout l = { 4, 2, 4096, 4096 };
    CHECK_OK(cf__stream_table_init(&t, "f8", 1, &l, "ex", &err), &err);
    t.stats = 0; /* version 1: a table written before streams kept statistics */
    uint32_t c0[1] = { 0x1b2c3d4e }, c2[2] = { 0x89abcdef, 0x01234567 }, c3[1] = { 0xfedcba98 };
    CHECK_OK(cf__stream_table_set(&t, 0, 800, c0, NULL, "ex", &err), &err);
    CHECK_OK(cf__stream_table_set(&t, 2, 5000, c2, NULL, "ex", &err), &err);
    CHECK_OK(cf__stream_table_set(&t, 3, 4096, c3, NULL, "ex", &err), &err);
    CHECK_FAILS(cf__stream_table_set(&t, 3, 4095, c3, NULL, "ex", &err), CF_EARG, &err, "not whole rows");
    t.commit = 3;
    char *text;
    size_t len;
    const char *want = "COLFILE-STREAM: 1\nDTYPE: <f8\nNMEMB: 1\nTASKS: 4\nFILES: 2\nCHUNK: 4096\nALIGN: 4096\n"
                       "COMMIT: 3\n0 800 1b2c3d4e\n1 0\n2 5000 89abcdef 01234567\n3 4096 fedcba98\n";
    stream_table_format_is(&t, want, "CRC32C: 27624833\n", &text, &len);
    /* and back */
    cf__stream_table u;
    CHECK_OK(cf__stream_table_parse(&u, text, len, "p", &err), &err);
    CHECK_EQ_STR(u.dtype, "<f8");
    CHECK_EQ_INT(u.commit, 3);
    CHECK_EQ_INT(u.layout.files, 2);
    CHECK_EQ_INT(u.bytes[2], 5000);
    CHECK_EQ_INT(u.crcs[2][1], 0x01234567);
    CHECK(u.crcs[1] == NULL);
    cf__stream_table_free(&u);
    /* damage: every byte changed is noticed by the seal */
    for (size_t i = 0; i < len; i++) {
        text[i] ^= 1;
        CHECK(cf__stream_table_parse(&u, text, len, "p", &err) == CF_EFORMAT);
        text[i] ^= 1;
    }
    CHECK_FAILS(cf__stream_table_parse(&u, text, len - 1, "p", &err), CF_EFORMAT, &err, "no checksum line");
    free(text);
    cf__stream_table_free(&t);
}

/* A table re-sealed after an edit: the strict grammar still refuses it. */
static int parse_sealed(const char *body, cf_error *err)
{
    char buf[2048];
    snprintf(buf, sizeof buf, "%sCRC32C: %08x\n", body, (unsigned)cf__crc32c_update(0, body, strlen(body)));
    cf__stream_table t;
    int rc = cf__stream_table_parse(&t, buf, strlen(buf), "tbl", err);
    if (rc == 0) cf__stream_table_free(&t);
    return rc;
}

static void test_table_grammar(void)
{
    cf_error err;
    const char *head = "COLFILE-STREAM: 1\nDTYPE: <i4\nNMEMB: 2\nTASKS: 2\nFILES: 1\nCHUNK: 16\nALIGN: 8\nCOMMIT: 1\n";
    char body[1024];
    snprintf(body, sizeof body, "%s0 8 00000001\n1 40 00000002 00000003 00000004\n", head);
    CHECK_OK(parse_sealed(body, &err), &err);
    snprintf(body, sizeof body, "%s0 8 00000001\n", head);
    CHECK_FAILS(parse_sealed(body, &err), CF_EFORMAT, &err, "line 10");
    snprintf(body, sizeof body, "%s1 8 00000001\n0 0\n", head);
    CHECK_FAILS(parse_sealed(body, &err), CF_EFORMAT, &err, "out of order");
    snprintf(body, sizeof body, "%s0 4 00000001\n1 0\n", head);
    CHECK_FAILS(parse_sealed(body, &err), CF_EFORMAT, &err, "whole rows");
    snprintf(body, sizeof body, "%s0 8\n1 0\n", head);
    CHECK_FAILS(parse_sealed(body, &err), CF_EFORMAT, &err, "CRC");
    snprintf(body, sizeof body, "%s0 8 00000001 00000002\n1 0\n", head);
    CHECK_FAILS(parse_sealed(body, &err), CF_EFORMAT, &err, "line 9");
    snprintf(body, sizeof body, "%s0 8 0000000A\n1 0\n", head);
    CHECK_FAILS(parse_sealed(body, &err), CF_EFORMAT, &err, "lowercase");
    snprintf(body, sizeof body, "%s0 08 00000001\n1 0\n", head);
    CHECK_FAILS(parse_sealed(body, &err), CF_EFORMAT, &err, "leading zero");
    snprintf(body, sizeof body, "%s0 0\n1 0\n2 0\n", head);
    CHECK_FAILS(parse_sealed(body, &err), CF_EFORMAT, &err, "more lines than tasks");
    /* a hostile byte count does not allocate its CRCs */
    snprintf(body, sizeof body, "%s0 9223372036854775800 00000001\n1 0\n", head);
    CHECK_FAILS(parse_sealed(body, &err), CF_EFORMAT, &err, "fewer chunk CRCs");
    CHECK_FAILS(parse_sealed("COLFILE-STREAM: 1\nDTYPE: <i4\nNMEMB: 1\nTASKS: 2\nFILES: 3\nCHUNK: 16\nALIGN: 8\n"
                             "COMMIT: 1\n0 0\n1 0\n", &err), CF_EFORMAT, &err, "files must be");
    CHECK_FAILS(parse_sealed("COLFILE-STREAM: 1\nDTYPE: <i4\nNMEMB: 1\nTASKS: 1\nFILES: 1\nCHUNK: 12\nALIGN: 8\n"
                             "COMMIT: 1\n0 0\n", &err), CF_EFORMAT, &err, "multiple of align");
    CHECK_FAILS(parse_sealed("COLFILE-STREAM: 1\nDTYPE: i4\nNMEMB: 1\nTASKS: 1\nFILES: 1\nCHUNK: 8\nALIGN: 8\n"
                             "COMMIT: 1\n0 0\n", &err), CF_EFORMAT, &err, "byte order");
    CHECK_FAILS(parse_sealed("COLFILE-STREAM: 1\nDTYPE: raw\nNMEMB: 2\nTASKS: 1\nFILES: 1\nCHUNK: 8\nALIGN: 8\n"
                             "COMMIT: 1\n0 0\n", &err), CF_EFORMAT, &err, "raw stream has nmemb 1");
    CHECK_OK(parse_sealed("COLFILE-STREAM: 1\nDTYPE: raw\nNMEMB: 1\nTASKS: 1\nFILES: 1\nCHUNK: 8\nALIGN: 8\n"
                          "COMMIT: 1\n0 3 00000000\n", &err), &err);
}

CF_TESTS(CF_TEST(test_tasks_to_files), CF_TEST(test_chunk_offsets), CF_TEST(test_layout_choose),
         CF_TEST(test_files_default), CF_TEST(test_table_bytes), CF_TEST(test_table_grammar))
