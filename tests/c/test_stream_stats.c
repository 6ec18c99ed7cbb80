/* test_stream_stats.c - a stream's per-chunk statistics: the version 2
 * table as bytes (docs/format.md 8.7) and cf_stream_chunk_stats after
 * appends that cut rows across chunks. */
#include <math.h>

#include "harness.h"
#include "checksum.h"
#include "colfile_stream.h"
#include "stream_impl.h"
#include "stream_table_text.h"

static cf__stream_stat fstat_of(int64_t count, int64_t nan, double mn, double mx, double sum)
{
    cf__stream_stat s = { count, nan, 0, 0, sum };
    memcpy(&s.min, &mn, 8);
    memcpy(&s.max, &mx, 8);
    return s;
}

static void test_table_v2_bytes(void)
{
    /* the example of docs/format.md 8.7, byte for byte */
    cf_error err;
    cf__stream_table t;
    cf_stream_layout l = { 4, 2, 4096, 4096 };
    CHECK_OK(cf__stream_table_init(&t, "f8", 1, &l, "ex", &err), &err);
    CHECK_EQ_INT(t.stats, 1);
    uint32_t c0[1] = { 0x1b2c3d4e }, c2[2] = { 0x89abcdef, 0x01234567 }, c3[1] = { 0xfedcba98 };
    cf__stream_stat s0[1] = { fstat_of(100, 0, 0.0, 99.0, 4950.0) };
    cf__stream_stat s2[2] = { fstat_of(512, 2, -1.5, 2.25, 17.75), fstat_of(113, 113, 0, 0, 0.0) };
    cf__stream_stat s3[1] = { fstat_of(512, 0, 0.1, 1e300, 1e300) };
    CHECK_OK(cf__stream_table_set(&t, 0, 800, c0, s0, "ex", &err), &err);
    CHECK_OK(cf__stream_table_set(&t, 2, 5000, c2, s2, "ex", &err), &err);
    CHECK_OK(cf__stream_table_set(&t, 3, 4096, c3, s3, "ex", &err), &err);
    t.commit = 3;
    char *text;
    size_t len;
    const char *want = "COLFILE-STREAM: 2\nDTYPE: <f8\nNMEMB: 1\nTASKS: 4\nFILES: 2\nCHUNK: 4096\nALIGN: 4096\n"
                       "COMMIT: 3\n0 800 1b2c3d4e\nS 0 0 count=100 nan=0 min=0 max=99 sum=4950\n1 0\n"
                       "2 5000 89abcdef 01234567\nS 0 0 count=512 nan=2 min=-1.5 max=2.25 sum=17.75\n"
                       "S 1 0 count=113 nan=113 min=- max=- sum=0\n3 4096 fedcba98\n"
                       "S 0 0 count=512 nan=0 min=0.10000000000000001 max=1.0000000000000001e+300 "
                       "sum=1.0000000000000001e+300\n";
    stream_table_format_is(&t, want, "CRC32C: ab941c93\n", &text, &len);
    /* and back: the same statistics, the same bytes */
    cf__stream_table u;
    CHECK_OK(cf__stream_table_parse(&u, text, len, "p", &err), &err);
    CHECK_EQ_INT(u.stats, 1);
    CHECK_EQ_INT(u.st[2][1].count, 113);
    CHECK_EQ_INT(u.st[2][0].nan, 2);
    CHECK(u.st[2][0].sum == 17.75);
    char *again;
    size_t len2;
    CHECK_OK(cf__stream_table_format(&u, &again, &len2, "p", &err), &err);
    CHECK_EQ_INT(len2, len);
    CHECK_EQ_MEM(again, text, len);
    free(again);
    cf__stream_table_free(&u);
    /* every byte changed is noticed */
    for (size_t i = 0; i < len; i++) {
        text[i] ^= 1;
        CHECK(cf__stream_table_parse(&u, text, len, "p", &err) == CF_EFORMAT);
        text[i] ^= 1;
    }
    free(text);
    cf__stream_table_free(&t);
}

/* <i4 rows of 2 (8 bytes) in chunks of 512: rows never straddle; task 1
 * appends 150 rows (k, -k) in pieces. */
static void test_chunk_stats_of_appends(void)
{
    cf_file *f = cf_test_open_new("f");
    cf_error err;
    cf_stream_layout l;
    cf_stream_writer *w = NULL;
    cf_stream_task *t;
    CHECK_OK(cf_stream_layout_choose(&l, f, 2, 1, 512, 512, &err), &err);
    CHECK_OK(cf_stream_create(&w, f, "s", "<i4", 2, &l, &err), &err);
    CHECK_OK(cf_stream_task_open(&t, w, 1, &err), &err);
    int32_t rows[300];
    for (int k = 0; k < 150; k++) rows[2 * k] = k, rows[2 * k + 1] = -k;
    CHECK_OK(cf_stream_append(t, rows, 7, &err), &err);
    CHECK_OK(cf_stream_append(t, rows + 14, 143, &err), &err);
    CHECK_OK(cf_stream_close(w, &err), &err);
    cf_stream_reader *r;
    CHECK_OK(cf_stream_open(&r, f, "s", &err), &err);
    cf_chunk_stats s;
    CHECK_OK(cf_stream_chunk_stats(r, 1, 0, 0, &s, &err), &err);
    CHECK_EQ_INT(s.blob, 1);
    CHECK_EQ_INT(s.first_row, 0);
    CHECK_EQ_INT(s.rows, 64);
    CHECK(s.valid && s.ordered && s.count == 64 && s.nan_count == 0);
    CHECK(s.min == 0 && s.max == 63 && s.sum == 63 * 64 / 2);
    CHECK_OK(cf_stream_chunk_stats(r, 1, 2, 1, &s, &err), &err);
    CHECK_EQ_INT(s.first_row, 128);
    CHECK_EQ_INT(s.rows, 22);
    CHECK(s.min == -149 && s.max == -128 && s.sum == -(128 + 149) * 22 / 2);
    CHECK_FAILS(cf_stream_chunk_stats(r, 1, 3, 0, &s, &err), CF_ERANGE, &err, "no chunk 3");
    CHECK_FAILS(cf_stream_chunk_stats(r, 1, 0, 2, &s, &err), CF_ERANGE, &err, "no component 2");
    CHECK_FAILS(cf_stream_chunk_stats(r, 0, 0, 0, &s, &err), CF_ERANGE, &err, "task 0 has no chunk 0");
    cf_stream_reader_close(r);
    cf_file_close(f);
}

CF_TESTS(CF_TEST(test_table_v2_bytes), CF_TEST(test_chunk_stats_of_appends))
