/* test_digest.c - what a write computes from its bytes (src/column/digest.c): the
 * one-pass digest against the byte sum, CRC32C and statistics computed
 * apart, and the helper thread giving the same results whoever ends up
 * digesting a hand-over. */
#include "harness.h"

#include <math.h>
#include <time.h>

#include "checksum.h"
#include "column.h"
#include "column_handle.h"
#include "digest.h"

static uint64_t rng = UINT64_C(0x2545F4914F6CDD1D);

static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* A column of `rows` rows of nmemb values of dtype tok, one blob, chunks of
 * chunk_rows rows, nothing written. */
static cf_column *make(cf_file *f, const char *name, const char *tok, int64_t nmemb, int64_t rows,
                       int64_t chunk_rows)
{
    cf_error err;
    cf_column *c = NULL;
    CHECK_OK(cf_column_create(&c, f, name, tok, nmemb, rows, 1, &err), &err);
    if (c) CHECK_OK(cf_column_set_chunk_rows(c, chunk_rows, &err), &err);
    return c;
}

static void fill(unsigned char *p, const char *tok, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        double v = (double)(rnd() >> 11) * 0x1p-53 * 2000.0 - 700.0;
        if (i % 9973 == 17) v = NAN;
        if (!strcmp(tok, "f8")) {
            memcpy(p + 8 * i, &v, 8);
        } else if (!strcmp(tok, "f4")) {
            float x = (float)v;
            memcpy(p + 4 * i, &x, 4);
        } else {
            int64_t x = (int64_t)(rnd() >> 3) - ((int64_t)1 << 59);
            memcpy(p + 8 * i, &x, 8);
        }
    }
}

static int same_double(double a, double b)
{
    return (a != a && b != b) || memcmp(&a, &b, sizeof a) == 0;
}

/* Statistics of every chunk and component of a and b: counts, NaNs,
 * minima and maxima equal; sums equal bit for bit (exact) or within a
 * relative 1e-12 of the sum of magnitudes. */
static void compare_stats(cf_column *a, cf_column *b, int exact, const char *what)
{
    int64_t chunks = cf__stats_blob_chunks(&a->stat.stats, 0);
    CHECK_EQ_INT(chunks, cf__stats_blob_chunks(&b->stat.stats, 0));
    for (int64_t k = 0; k < chunks; k++) {
        const cf__acc *x = cf__stats_chunk(&a->stat.stats, 0, k), *y = cf__stats_chunk(&b->stat.stats, 0, k);
        for (int64_t j = 0; j < a->h.nmemb; j++) {
            int ok = x[j].count == y[j].count && x[j].nan == y[j].nan &&
                     memcmp(&x[j].v, &y[j].v, sizeof x[j].v) == 0;
            if (exact) ok = ok && same_double(cf__acc_sum(&x[j]), cf__acc_sum(&y[j]));
            else ok = ok && fabs(cf__acc_sum(&x[j]) - cf__acc_sum(&y[j])) <= 1e-12 * (fabs(cf__acc_sum(&x[j])) + 1e3 * (double)x[j].count);
            if (!ok) {
                fprintf(stderr, "%s: chunk %lld component %lld: count %lld/%lld nan %lld/%lld sum %.17g/%.17g\n",
                        what, (long long)k, (long long)j, (long long)x[j].count, (long long)y[j].count,
                        (long long)x[j].nan, (long long)y[j].nan, cf__acc_sum(&x[j]), cf__acc_sum(&y[j]));
                cf_test_failures++;
                return;
            }
        }
    }
}

/* cf__digest equals the byte sum, the CRC32C and the statistics computed
 * one after the other, for hand-overs of any size starting anywhere, and
 * adds nothing to the statistics when they are off. */
static void test_digest_equals_the_parts(void)
{
    static const struct { const char *tok; int64_t nmemb, width; } types[] = {
        { "f8", 3, 8 }, { "f4", 3, 4 }, { "i8", 1, 8 }, { "f4", 1, 4 }, { "f8", 2, 8 },
    };
    cf_error err;
    cf_file *f;
    CHECK_OK(cf_file_open(&f, cf_test_dir(), CF_OPEN_WRITE, &err), &err);
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
        int64_t rows = 300000, nmemb = types[t].nmemb, w = types[t].width, n = rows * nmemb;
        unsigned char *data = malloc((size_t)(n * w));
        fill(data, types[t].tok, n);
        cf_column *a = make(f, "a", types[t].tok, nmemb, rows, 40000);
        cf_column *b = make(f, "b", types[t].tok, nmemb, rows, 40000);
        uint32_t sa = 17, ca = 0, sb = 17, cb = 0;
        for (int64_t e = 0; e < n;) {
            int64_t m = (int64_t)(rnd() % (uint64_t)(1 << 20)) + 1;
            if (m > n - e) m = n - e;
            cf__digest(a, 0, e, data + e * w, m, &sa, &ca);
            sb = cf__sysv_add(sb, data + e * w, (size_t)(m * w));
            cb = cf__crc32c_update(cb, data + e * w, (size_t)(m * w));
            cf__column_stats_add(b, 0, e, data + e * w, m);
            e += m;
        }
        CHECK_EQ_INT(sa, sb);
        CHECK_EQ_INT(ca, cb);
        compare_stats(a, b, types[t].tok[0] == 'i', types[t].tok);

        /* statistics off: sums and CRC only */
        cf_column *z = make(f, "z", types[t].tok, nmemb, rows, 40000);
        z->stat.stats_off = 1;
        uint32_t sz = 17, cz = 0;
        cf__digest(z, 0, 0, data, n, &sz, &cz);
        CHECK_EQ_INT(sz, sb);
        CHECK_EQ_INT(cz, cb);
        for (int64_t k = 0; k < cf__stats_blob_chunks(&z->stat.stats, 0); k++)
            for (int64_t j = 0; j < nmemb; j++) CHECK_EQ_INT(cf__stats_chunk(&z->stat.stats, 0, k)[j].count, 0);
        z->stat.stats_off = 0;
        cf_column_close(a, NULL);
        cf_column_close(b, NULL);
        cf_column_close(z, NULL);
        free(data);
    }
    cf_file_close(f);
}

static void pause_us(long us)
{
    struct timespec ts = { 0, us * 1000L };
    nanosleep(&ts, NULL);
}

/* The helper thread and the writer taking a hand-over back compute the
 * same bits: hand-overs waited for at once (the helper has probably not
 * started), after a pause (it has finished) and at random, one posted at a
 * time or the next posted before the wait, against cf__digest on this
 * thread. */
static void test_digester_whoever_digests(void)
{
    cf_error err;
    cf_file *f;
    CHECK_OK(cf_file_open(&f, cf_test_dir(), CF_OPEN_WRITE, &err), &err);
    int64_t rows = 1 << 20, nmemb = 3, n = rows * nmemb;
    double *data = malloc((size_t)n * sizeof *data);
    fill((unsigned char *)data, "f8", n);
    cf_column *ref = make(f, "ref", "f8", nmemb, rows, 100000);
    uint32_t sr = 0, cr = 0;
    int64_t step = CF__DIGEST_CHUNK_BYTES / 8;
    for (int64_t e = 0; e < n; e += step)
        cf__digest(ref, 0, e, (const unsigned char *)(data + e), n - e < step ? n - e : step, &sr, &cr);
    static const char *modes[6] = { "at once", "after a pause", "at random", "queued, at once",
                                    "queued, after a pause", "queued, at random" };
    for (int mode = 0; mode < 6; mode++) {
        int queued = mode >= 3, m = mode % 3;
        cf_column *c = make(f, "c", "f8", nmemb, rows, 100000);
        cf__digester *dg = NULL;
        CHECK_OK(cf__digester_start(&dg, c, &err), &err);
        if (!dg) break;
        uint32_t s = 0, crc = 0;
        if (queued) cf__digester_post(dg, (const unsigned char *)data, step, 0, 0, &s, &crc);
        for (int64_t e = 0; e < n; e += step) {
            int64_t next = e + (queued ? step : 0);
            if (next < n)
                cf__digester_post(dg, (const unsigned char *)(data + next), n - next < step ? n - next : step, 0,
                                  next, &s, &crc);
            if (m == 1 || (m == 2 && rnd() % 2)) pause_us(3000);
            cf__digester_wait(dg);
        }
        cf__digester_wait(dg); /* nothing left: returns at once */
        cf__digester_stop(dg);
        CHECK_EQ_INT(s, sr);
        CHECK_EQ_INT(crc, cr);
        compare_stats(c, ref, 1, modes[mode]);
        cf_column_close(c, NULL);
    }
    /* stop waits for what is still posted */
    cf_column *c = make(f, "c", "f8", nmemb, rows, 100000);
    cf__digester *dg = NULL;
    CHECK_OK(cf__digester_start(&dg, c, &err), &err);
    uint32_t s = 0, crc = 0;
    if (dg) {
        cf__digester_post(dg, (const unsigned char *)data, step, 0, 0, &s, &crc);
        cf__digester_post(dg, (const unsigned char *)(data + step), step, 0, step, &s, &crc);
        cf__digester_stop(dg);
        uint32_t s2 = 0, c2 = 0;
        cf__sum_crc32c(&s2, &c2, data, (size_t)(2 * step) * sizeof *data);
        CHECK_EQ_INT(s, s2);
        CHECK_EQ_INT(crc, c2);
    }
    cf_column_close(c, NULL);
    cf_column_close(ref, NULL);
    free(data);
    cf_file_close(f);
}

CF_TESTS(CF_TEST(test_digest_equals_the_parts), CF_TEST(test_digester_whoever_digests))
