/* test_stindex.c - the bytes of colfile-index-v1 as docs/format.md 8.6
 * specifies them: head fields at their offsets, levels top first, records
 * of 8 + 32 x NMEMB bytes, page CRC32C in the parents, and a head parser
 * that refuses every damage it can see. */
#include "harness.h"

#include "checksum.h"
#include "stindex.h"

#include <math.h>

static uint64_t le64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

static uint32_t le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Statistics of an i8 column of 2 components in blobs of 700 and 0 and
 * 300 rows, 1 row per chunk: chunk k of blob b holds (v, -v) with v the
 * row's number in the column; blob 2 unknown. */
static void make(cf__stats *s, cf__header *h)
{
    cf_error err;
    memset(s, 0, sizeof *s);
    memset(h, 0, sizeof *h);
    CHECK_OK(cf__header_alloc(h, 3, "t", &err), &err);
    CHECK_OK(cf__dtype_parse("<i8", CF__DTYPE_HEADER, &h->dtype, "t", &err), &err);
    h->nmemb = 2;
    h->rows[0] = 700;
    h->rows[1] = 0;
    h->rows[2] = 300;
    CHECK_OK(cf__stats_alloc(s, h, 1, "t", &err), &err);
    int64_t row = 0;
    for (int64_t b = 0; b < 3; b++) {
        int64_t nc = cf__stats_blob_chunks(s, b);
        cf__acc *a = nc ? cf__stats_chunks(s, b, 0, nc) : NULL;
        for (int64_t k = 0; k < nc; k++, row++) {
            int64_t v[2] = { row, -row };
            cf__acc_add(a + 2 * k, 2, 0, v, 2, &h->dtype);
        }
        s->valid[b] = b != 2;
    }
}

/* The test column's statistics (make) and the index file built from them. */
typedef struct {
    cf__stats s;
    cf__header h;
    unsigned char *buf;
    size_t len;
} made_index;

static void made_init(made_index *m)
{
    make(&m->s, &m->h);
    m->buf = NULL;
    m->len = 0;
}

static void made_free(made_index *m)
{
    free(m->buf);
    cf__stats_free(&m->s);
    cf__header_free(&m->h);
}

static void test_bytes_as_specified(void)
{
    made_index mi;
    made_init(&mi);
    cf_error err;
    uint32_t crc[1000];
    unsigned char known[1000] = { 0 };
    for (int k = 0; k < 1000; k++) crc[k] = 0xabc00000u + (uint32_t)k;
    known[5] = 1;
    CHECK_OK(cf__index_build(&mi.s, &mi.h, "<i8", NULL, crc, known, &mi.buf, &mi.len, "t", &err), &err);
    /* 1000 chunks, fanout 256: 4 records above them, 2 levels */
    const int64_t rb = 8 + 32 * 2, table_end = 128 + 2 * 16 + 4;
    CHECK_EQ_INT(mi.len, table_end + 4 * rb + 1000 * rb);
    CHECK(memcmp(mi.buf, "\x89" "CFX\r\n\x1a\n", 8) == 0);
    CHECK_EQ_INT(le32(mi.buf + 8), 1);
    CHECK_EQ_INT(le32(mi.buf + 12), 128);
    CHECK(strcmp((const char *)mi.buf + 16, "<i8") == 0);
    CHECK_EQ_INT(le64(mi.buf + 32), 2);
    CHECK_EQ_INT(le64(mi.buf + 40), 3);
    CHECK_EQ_INT(le64(mi.buf + 48), 1);
    CHECK_EQ_INT(le64(mi.buf + 56), 1000);
    CHECK_EQ_INT(le32(mi.buf + 64), 256);
    CHECK_EQ_INT(le32(mi.buf + 68), 2);
    CHECK_EQ_INT(le64(mi.buf + 80), (int64_t)mi.len);
    CHECK_EQ_INT(le32(mi.buf + 124), cf__crc32c_update(0, mi.buf, 124));
    /* level table: level 0 last in the file, the top first */
    CHECK_EQ_INT(le64(mi.buf + 128), table_end + 4 * rb);
    CHECK_EQ_INT(le64(mi.buf + 136), 1000);
    CHECK_EQ_INT(le64(mi.buf + 144), table_end);
    CHECK_EQ_INT(le64(mi.buf + 152), 4);
    CHECK_EQ_INT(le32(mi.buf + 160), cf__crc32c_update(0, mi.buf + 128, 32));
    CHECK_EQ_INT(le32(mi.buf + 72), cf__crc32c_update(0, mi.buf + table_end, (size_t)(4 * rb)));
    /* chunk 5: (5, -5), its CRC known */
    const unsigned char *r5 = mi.buf + table_end + 4 * rb + 5 * rb;
    CHECK_EQ_INT(le32(r5), 0xabc00005u);
    CHECK_EQ_INT(le32(r5 + 4), 3);
    CHECK_EQ_INT((int64_t)le64(r5 + 8), 0);
    CHECK_EQ_INT((int64_t)le64(r5 + 16), 5);
    CHECK_EQ_INT((int64_t)le64(r5 + 24), 5);
    double sum;
    uint64_t bits = le64(r5 + 32);
    memcpy(&sum, &bits, 8);
    CHECK(sum == 5.0);
    CHECK_EQ_INT((int64_t)le64(r5 + 48), -5); /* component 1's minimum */
    /* chunk 6: statistics, no CRC; chunk 800 (blob 2, unknown): zeros */
    CHECK_EQ_INT(le32(mi.buf + table_end + 4 * rb + 6 * rb + 4), 1);
    const unsigned char *r800 = mi.buf + table_end + 4 * rb + 800 * rb;
    CHECK_EQ_INT(le32(r800 + 4), 0);
    for (int64_t i = 8; i < rb; i++) CHECK(r800[i] == 0);
    /* level 1: record 0 covers chunks 0..255, its CRC is their page's */
    const unsigned char *t0 = mi.buf + table_end;
    CHECK_EQ_INT(le32(t0), cf__crc32c_update(0, mi.buf + table_end + 4 * rb, (size_t)(256 * rb)));
    CHECK_EQ_INT(le32(t0 + 4), 1);
    CHECK_EQ_INT((int64_t)le64(t0 + 16), 0);
    CHECK_EQ_INT((int64_t)le64(t0 + 24), 255);
    CHECK_EQ_INT((int64_t)le64(t0 + 48), -255);
    CHECK_EQ_INT((int64_t)le64(t0 + 56), 0);
    /* record 3 covers chunks 768..999, some in blob 2: no statistics */
    CHECK_EQ_INT(le32(t0 + 3 * rb + 4), 0);
    /* the accumulator view of a record */
    cf__acc a;
    cf__index_rec_acc(t0, 1, 'i', 256, &a);
    CHECK(a.count == 256 && a.nan == 0 && a.v.i.min == -255 && a.v.i.max == 0 && cf__acc_sum(&a) == -(255.0 * 256 / 2));

    cf__index_geom g;
    CHECK_OK(cf__index_parse_head(&g, mi.buf, mi.len, (int64_t)mi.len, "t", &err), &err);
    CHECK_EQ_INT(g.nlevels, 2);
    CHECK_EQ_INT(g.count[1], 4);
    CHECK(strcmp(g.token, "<i8") == 0);
    made_free(&mi);
}

static void test_head_parser_refuses_damage(void)
{
    made_index mi;
    made_init(&mi);
    cf_error err;
    CHECK_OK(cf__index_build(&mi.s, &mi.h, "<i8", NULL, NULL, NULL, &mi.buf, &mi.len, "t", &err), &err);
    cf__index_geom g;
    /* every single flipped bit of the head and the level table is caught */
    for (size_t i = 0; i < 128 + 2 * 16 + 4; i++) {
        for (int bit = 0; bit < 8; bit++) {
            mi.buf[i] ^= (unsigned char)(1u << bit);
            int rc = cf__index_parse_head(&g, mi.buf, mi.len, (int64_t)mi.len, "t", &err);
            if (rc != CF_EFORMAT) {
                fprintf(stderr, "byte %zu bit %d not caught\n", i, bit);
                CHECK(0);
            }
            mi.buf[i] ^= (unsigned char)(1u << bit);
        }
    }
    CHECK_FAILS(cf__index_parse_head(&g, mi.buf, mi.len, (int64_t)mi.len - 1, "t", &err), CF_EFORMAT, &err, "truncated");
    CHECK_FAILS(cf__index_parse_head(&g, mi.buf, 100, (int64_t)mi.len, "t", &err), CF_EFORMAT, &err, "bad magic");
    mi.buf[8] = 2; /* a later version, head CRC made right */
    mi.buf[124] = mi.buf[125] = mi.buf[126] = mi.buf[127] = 0;
    uint32_t c = cf__crc32c_update(0, mi.buf, 124);
    for (int i = 0; i < 4; i++) mi.buf[124 + i] = (unsigned char)(c >> (8 * i));
    CHECK_FAILS(cf__index_parse_head(&g, mi.buf, mi.len, (int64_t)mi.len, "t", &err), CF_EFORMAT, &err, "version 2");
    made_free(&mi);
}

static void test_levels(void)
{
    int64_t count[CF__INDEX_LEVELS_MAX];
    CHECK_EQ_INT(cf__index_levels(0, 256, count), 1);
    CHECK_EQ_INT(cf__index_levels(256, 256, count), 1);
    CHECK_EQ_INT(cf__index_levels(257, 256, count), 2);
    CHECK_EQ_INT(count[1], 2);
    CHECK_EQ_INT(cf__index_levels((int64_t)1 << 40, 256, count), 5);
    CHECK_EQ_INT(count[4], 256);
}

CF_TESTS(CF_TEST(test_bytes_as_specified), CF_TEST(test_head_parser_refuses_damage), CF_TEST(test_levels))
