/* test_stats_fine.c - the fine level (src/stats/stats_fine.c,
 * src/stats/stindex_fine.c): the sub-chunk min/max kernels, with and
 * without AVX2, against a plain loop (NaNs left out, integers bounded
 * outward); the sub-chunk size rule; and the fine section's bytes as
 * cf__index_build writes them, parsed back, a changed byte caught. */
#include <math.h>

#include "harness.h"
#include "stats_impl.h"
#include "stindex.h"
#include "stindex_fine.h"

static uint64_t rnd(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static void fine_init(cf__fine *f, int64_t n, char cls)
{
    for (int64_t i = 0; i < n; i++) {
        f[i].mn = INFINITY;
        f[i].mx = -INFINITY;
        f[i].imn = cls == 'u' ? -1 : INT64_MAX;
        f[i].imx = cls == 'u' ? 0 : INT64_MIN;
        f[i].count = 0;
    }
}

static void test_float_kernels_agree(void)
{
    enum { N = 3001 };
    static double x[N];
    static float y[N];
    uint64_t s = 12345;
    for (int k = 0; k < N; k++) {
        x[k] = (double)(int64_t)(rnd(&s) % 2000001) / 1000.0 - 1000.0;
        if (k % 97 == 5) x[k] = NAN;
        if (k % 131 == 7) x[k] = -0.0;
        y[k] = (float)x[k];
    }
    cf__dtype f8 = {cf__dtype_native_order(), 'f', 8}, f4 = {cf__dtype_native_order(), 'f', 4};
    for (int64_t nmemb = 1; nmemb <= 5; nmemb++)
        for (int64_t c0 = 0; c0 < nmemb; c0++)
            for (int64_t n = 1; n <= N; n += n < 40 ? 1 : 379) {
                for (int wide = 0; wide < 2; wide++) {
                    cf__fine a[5], b[5];
                    fine_init(a, 5, 'f');
                    fine_init(b, 5, 'f');
                    const void *p = wide ? (const void *)x : (const void *)y;
                    cf__fine_add_simd(a, nmemb, c0, p, n, wide ? &f8 : &f4, 0);
                    cf__fine_add_simd(b, nmemb, c0, p, n, wide ? &f8 : &f4, 1);
                    for (int64_t j = 0; j < nmemb; j++) {
                        double mn = INFINITY, mx = -INFINITY;
                        int64_t cnt = 0;
                        for (int64_t k = (j - c0 + nmemb) % nmemb; k < n; k += nmemb) {
                            double v = wide ? x[k] : (double)y[k];
                            cnt++;
                            if (v < mn) mn = v;
                            if (v > mx) mx = v;
                        }
                        CHECK_EQ_INT(a[j].count, cnt);
                        CHECK_EQ_INT(b[j].count, cnt);
                        CHECK(a[j].mn == mn && a[j].mx == mx);
                        CHECK(b[j].mn == mn && b[j].mx == mx);
                        double lo, hi;
                        cf__fine_bounds(&b[j], 'f', &lo, &hi);
                        /* a zero bound is widened to the zero of its side */
                        CHECK(lo == mn && (mn != 0 || signbit(lo)));
                        CHECK(hi == mx && (mx != 0 || !signbit(hi)));
                    }
                }
            }
}

static void test_integer_bounds_outward(void)
{
    enum { N = 700 };
    static int64_t i8[N * 2];
    static uint64_t u8[N];
    uint64_t s = 777;
    for (int k = 0; k < N * 2; k++) i8[k] = (int64_t)rnd(&s);
    for (int k = 0; k < N; k++) u8[k] = rnd(&s);
    i8[3] = INT64_MAX;
    i8[4] = INT64_MIN;
    u8[9] = UINT64_MAX;
    cf__dtype ti = {cf__dtype_native_order(), 'i', 8}, tu = {cf__dtype_native_order(), 'u', 8};
    for (int64_t nmemb = 1; nmemb <= 2; nmemb++) {
        cf__fine f[2];
        fine_init(f, 2, 'i');
        cf__fine_add(f, nmemb, 0, i8, N * nmemb, &ti);
        for (int64_t j = 0; j < nmemb; j++) {
            int64_t mn = INT64_MAX, mx = INT64_MIN;
            for (int64_t k = j; k < N * nmemb; k += nmemb) {
                if (i8[k] < mn) mn = i8[k];
                if (i8[k] > mx) mx = i8[k];
            }
            CHECK(f[j].imn == mn && f[j].imx == mx);
            double lo, hi;
            cf__fine_bounds(&f[j], 'i', &lo, &hi);
            CHECK(lo <= (double)mn && (lo < 0x1p63 ? (long double)lo <= (long double)mn : 1));
            CHECK((long double)hi >= (long double)mx);
        }
    }
    cf__fine g;
    fine_init(&g, 1, 'u');
    cf__fine_add(&g, 1, 0, u8, N, &tu);
    double lo, hi;
    cf__fine_bounds(&g, 'u', &lo, &hi);
    CHECK_EQ_INT(g.imx, -1); /* UINT64_MAX's bits */
    CHECK(hi >= 0x1p64);
    /* values near 2^60 differ below the double grid: bounds step outward */
    int64_t near[3] = {((int64_t)1 << 60) + 1, ((int64_t)1 << 60) + 3, ((int64_t)1 << 60) + 2};
    fine_init(&g, 1, 'i');
    cf__fine_add(&g, 1, 0, near, 3, &ti);
    cf__fine_bounds(&g, 'i', &lo, &hi);
    CHECK((long double)lo <= (long double)near[0] && (long double)hi >= (long double)near[1]);
}

static void test_sub_chunk_rule(void)
{
    char nat = cf__dtype_native_order(), other = nat == '<' ? '>' : '<';
    cf__dtype f8 = {nat, 'f', 8}, f4 = {nat, 'f', 4}, u1 = {nat, 'u', 1}, sw = {other, 'f', 8};
    cf__dtype c16 = {nat, 'c', 16}, f2 = {nat, 'f', 2};
    CHECK_EQ_INT(cf__stats_fine_rows(65536, &f8), 512);
    CHECK_EQ_INT(cf__stats_fine_rows(131072, &f4), 1024);
    CHECK_EQ_INT(cf__stats_fine_rows(512, &f8), 0);       /* one sub-chunk: none */
    CHECK_EQ_INT(cf__stats_fine_rows(1000, &f8), 512);    /* the last is short */
    CHECK_EQ_INT(cf__stats_fine_rows((int64_t)1 << 24, &f8), (int64_t)1 << 14); /* at most 1024 per chunk */
    CHECK_EQ_INT(cf__stats_fine_rows(1 << 20, &u1), 0); /* integers: none */
    CHECK_EQ_INT(cf__stats_fine_rows(65536, &sw), 0);
    CHECK_EQ_INT(cf__stats_fine_rows(65536, &c16), 0);
    CHECK_EQ_INT(cf__stats_fine_rows(65536, &f2), 0);
}

/* An index of 3 blobs of f8 x 2 (rows 2500, 0, 1100; CHUNK 1024: sub-chunks
 * of 512 rows, 2 per chunk), the last blob's statistics unknown. */
static void test_fine_section_bytes(void)
{
    enum { NMEMB = 2, CHUNK = 1024 };
    static const int64_t rows[3] = {2500, 0, 1100};
    cf__header h;
    memset(&h, 0, sizeof h);
    h.dtype = (cf__dtype){cf__dtype_native_order(), 'f', 8};
    h.nmemb = NMEMB;
    h.nfile = 3;
    h.rows = (int64_t *)rows;
    cf__stats s;
    cf_error err;
    CHECK_OK(cf__stats_alloc(&s, &h, CHUNK, "t", &err), &err);
    CHECK_EQ_INT(s.fine_m, 0); /* writes keep none */
    cf__stats_keep_fine(&s, &h.dtype);
    CHECK_EQ_INT(s.fine_m, 2);
    static double v[2500 * NMEMB];
    for (int k = 0; k < 2500 * NMEMB; k++) v[k] = (double)(k * 7 % 1001) - (k / NMEMB);
    for (int64_t b = 0; b < 3; b += 2) {
        for (int64_t e = 0; e < rows[b] * NMEMB;) {
            int64_t k = e / (CHUNK * NMEMB), end = (k + 1) * CHUNK * NMEMB;
            if (end > rows[b] * NMEMB) end = rows[b] * NMEMB;
            cf__acc *acc = cf__stats_chunk(&s, b, k);
            CHECK(acc != NULL);
            cf__acc_add(acc, NMEMB, 0, v + e, end - e, &h.dtype);
            cf__fine *f = cf__stats_fine(&s, b, k);
            for (int64_t q = e; q < end; q += 512 * NMEMB) {
                int64_t stop = q + 512 * NMEMB < end ? q + 512 * NMEMB : end;
                cf__fine_add(f + (q - e) / (512 * NMEMB) * NMEMB, NMEMB, 0, v + q, stop - q, &h.dtype);
            }
            e = end;
        }
    }
    s.valid[0] = 1;
    s.valid[2] = 0; /* unknown: its block must say so */
    unsigned char *buf = NULL;
    size_t len = 0;
    CHECK_OK(cf__index_build(&s, &h, "<f8", NULL, NULL, NULL, &buf, &len, "t", &err), &err);
    cf__index_geom g;
    CHECK_OK(cf__index_parse_head(&g, buf, len, (int64_t)len, "t", &err), &err);
    int64_t fine_bytes = 0;
    for (int i = 7; i >= 0; i--) fine_bytes = (fine_bytes << 8) | buf[CF__INDEX_FINE_AT + i];
    CHECK_EQ_INT(g.size + fine_bytes, (int64_t)len);
    cf__fine_geom fg;
    CHECK_OK(cf__index_fine_parse(&fg, buf + g.size, g.size, fine_bytes, g.nchunks, NMEMB, CHUNK, "t", &err), &err);
    CHECK_EQ_INT(fg.sub_rows, 512);
    CHECK_EQ_INT(fg.m, 2);
    CHECK_EQ_INT(g.nchunks, 5);
    for (int64_t k = 0; k < 5; k++) {
        const unsigned char *blk = buf + fg.offset + k * fg.block;
        uint32_t crc = (uint32_t)blk[0] | (uint32_t)blk[1] << 8 | (uint32_t)blk[2] << 16 | (uint32_t)blk[3] << 24;
        CHECK_EQ_INT(crc, cf__index_fine_crc(k, blk, fg.block));
        CHECK_EQ_INT(blk[4] & CF__FINE_KNOWN, k < 3 ? 1 : 0);
    }
    /* chunk 2 (rows 2048..2499 of blob 0): one sub-chunk of 452 rows, then one empty */
    const unsigned char *blk = buf + fg.offset + 2 * fg.block;
    for (int64_t j = 0; j < NMEMB; j++) {
        double mn = INFINITY, mx = -INFINITY, lo, hi, elo, ehi;
        for (int64_t r = 2048; r < 2500; r++) {
            mn = v[r * NMEMB + j] < mn ? v[r * NMEMB + j] : mn;
            mx = v[r * NMEMB + j] > mx ? v[r * NMEMB + j] : mx;
        }
        memcpy(&lo, blk + 8 + 16 * j, 8);
        memcpy(&hi, blk + 16 + 16 * j, 8);
        memcpy(&elo, blk + 8 + 16 * (NMEMB + j), 8);
        memcpy(&ehi, blk + 16 + 16 * (NMEMB + j), 8);
        CHECK(lo == mn && hi == mx);
        CHECK(elo == INFINITY && ehi == -INFINITY);
    }
    /* a changed byte fails the block's CRC32C; a changed head its own */
    buf[fg.offset + fg.block + 20] ^= 1;
    CHECK(cf__index_fine_crc(1, buf + fg.offset + fg.block, fg.block) !=
          ((uint32_t)buf[fg.offset + fg.block] | (uint32_t)buf[fg.offset + fg.block + 1] << 8 |
           (uint32_t)buf[fg.offset + fg.block + 2] << 16 | (uint32_t)buf[fg.offset + fg.block + 3] << 24));
    buf[g.size + 17] ^= 1;
    CHECK(cf__index_fine_parse(&fg, buf + g.size, g.size, fine_bytes, g.nchunks, NMEMB, CHUNK, "t", &err) == CF_EFORMAT);
    free(buf);
    cf__stats_free(&s);
}

CF_TESTS(CF_TEST(test_float_kernels_agree), CF_TEST(test_integer_bounds_outward), CF_TEST(test_sub_chunk_rule),
         CF_TEST(test_fine_section_bytes))
