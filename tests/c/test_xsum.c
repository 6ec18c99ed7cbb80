/* test_xsum.c - exact chunk sums (src/stats/stats_xsum.c): the sum of a
 * chunk is the correctly rounded sum of its values, the same bits whatever
 * the split of the values over calls and partial accumulators, the order
 * the partial accumulators merge in, and the trip through the bytes that
 * carry them between processes.  The reference is an independent exact
 * method (Shewchuk's non-overlapping partials with a correctly rounded
 * last step, as Python's math.fsum does it). */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "stats_impl.h"

static uint64_t rnd(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static int same_bits(double a, double b)
{
    if (a != a && b != b) return 1;
    return memcmp(&a, &b, sizeof a) == 0;
}

/* The correctly rounded sum of finite x[0..n) whose partial sums stay
 * finite. */
static double ref_sum(const double *x, size_t n)
{
    double *p = malloc((n + 1) * sizeof *p);
    size_t np = 0;
    for (size_t k = 0; k < n; k++) {
        double v = x[k];
        size_t i = 0;
        for (size_t j = 0; j < np; j++) {
            double y = p[j];
            if (fabs(v) < fabs(y)) {
                double t = v;
                v = y;
                y = t;
            }
            double hi = v + y, lo = y - (hi - v);
            if (lo != 0.0) p[i++] = lo;
            v = hi;
        }
        np = i;
        p[np++] = v;
    }
    double hi = 0.0, lo = 0.0;
    if (np > 0) {
        hi = p[--np];
        while (np > 0) {
            double v = hi, y = p[--np];
            hi = v + y;
            lo = y - (hi - v);
            if (lo != 0.0) break;
        }
        /* half-way cases: the rest of the partials decide the direction */
        if (np > 0 && ((lo < 0 && p[np - 1] < 0) || (lo > 0 && p[np - 1] > 0))) {
            double y = lo * 2, v = hi + y;
            if (y == v - hi) hi = v;
        }
    }
    free(p);
    return hi + 0.0; /* an exact zero is +0.0 */
}

static cf__dtype dtype(const char *tok)
{
    cf__dtype d;
    cf_error e;
    if (cf__dtype_parse(tok, CF__DTYPE_USER, &d, "test", &e)) abort();
    return d;
}

static double sum_of(const double *x, size_t n)
{
    cf__dtype d = dtype("f8");
    cf__acc a;
    cf__acc_init(&a, &d);
    cf__acc_add(&a, 1, 0, x, (int64_t)n, &d);
    return cf__acc_sum(&a);
}

static void test_rounding_cases(void)
{
    const double tiny = 0x1p-1074;
    struct { double x[4]; size_t n; double want; } c[] = {
        { { 1e300, 1.0, -1e300 }, 3, 1.0 },
        { { 0x1p53, 1.0 }, 2, 0x1p53 },                      /* a tie: to even */
        { { 0x1p53, 1.0, 1.0 }, 3, 0x1p53 + 2.0 },
        { { 0x1p53, 1.0, tiny }, 3, 0x1p53 + 2.0 },          /* just above the tie */
        { { 0x1p53 + 2.0, 1.0 }, 2, 0x1p53 + 4.0 },          /* a tie: to even, up */
        { { DBL_MAX, DBL_MAX }, 2, INFINITY },
        { { DBL_MAX, DBL_MAX, -DBL_MAX }, 3, DBL_MAX },
        { { DBL_MAX, 0x1p970 }, 2, INFINITY },               /* half an ulp, odd: up */
        { { DBL_MAX, 0x1p969 }, 2, DBL_MAX },
        { { -DBL_MAX, -DBL_MAX, 1.0 }, 3, -INFINITY },
        { { tiny, tiny, tiny }, 3, 3 * tiny },
        { { 0x1p1023, tiny, -0x1p1023 }, 3, tiny },
        { { 0x1p-1022, -tiny }, 2, 0x1p-1022 - tiny },       /* down to the subnormals */
        { { -1.5, 0.25 }, 2, -1.25 },
        { { -0.0 }, 1, 0.0 },
        { { -0.0, -0.0 }, 2, 0.0 },
        { { INFINITY, 1.0 }, 2, INFINITY },
        { { -INFINITY, 5.0, DBL_MAX }, 3, -INFINITY },
        { { INFINITY, -INFINITY }, 2, NAN },
        { { NAN, 2.5 }, 2, 2.5 },
        { { NAN }, 1, 0.0 },
        { { 0.1, 0.2, 0.3 }, 3, 0.6 },                      /* in order, doubles give 0.6000000000000001 */
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        double got = sum_of(c[i].x, c[i].n);
        if (!same_bits(got, c[i].want)) {
            fprintf(stderr, "case %zu: sum %a, want %a\n", i, got, c[i].want);
            cf_test_failures++;
        }
    }
    /* one value of every size, each against the reference */
    double x[2100];
    size_t n = 0;
    for (int e = -1074; e <= 1023; e++) x[n++] = ldexp(e & 1 ? -1.0 : 1.0, e);
    CHECK(same_bits(sum_of(x, n), ref_sum(x, n)));
}

/* Random doubles, partial sums finite.  specials 0: over most of the
 * exponent range (subnormals included); 1: with NaNs; 2: with infinities;
 * 3: exponents in [-20, 20] only (no value far below a block's largest);
 * 4: near 2^1011 (too large for the fast split); 5: below 2^-1000. */
static void fill(double *x, size_t n, uint64_t *s, int specials)
{
    for (size_t k = 0; k < n; k++) {
        uint64_t r = rnd(s);
        if (specials >= 3) {
            int lo = specials == 3 ? -20 : specials == 4 ? 1009 : -1074, span = specials == 3 ? 41 : specials == 4 ? 2 : 75;
            double v = ldexp((double)(r >> 11) * 0x1p-53, lo + (int)(rnd(s) % (uint64_t)span));
            x[k] = r & 1 ? -v : v;
            continue;
        }
        int e = (int)(rnd(s) % 2000) - 1000;
        double v = ldexp((double)(r >> 11) * 0x1p-53, e);
        if (rnd(s) % 50 == 0) v = ldexp((double)(r >> 20), -1074); /* subnormal */
        if (rnd(s) % 7 == 0) v = ldexp(1.0, (int)(rnd(s) % 60)) * (double)(r % 1000); /* cancels well */
        x[k] = r & 1 ? -v : v;
        if (specials == 1 && rnd(s) % 40 == 0) x[k] = NAN;
        if (specials == 2 && rnd(s) % 300 == 0) x[k] = rnd(s) & 1 ? INFINITY : -INFINITY;
    }
}

/* Split x over random pieces, each into its own accumulators (rows of
 * nmemb components), carry every piece through the wire words, merge in a
 * random order: the sums are the bits of one accumulator fed everything. */
static void split_and_merge(const double *x, size_t n, int nmemb, uint64_t *s, const double *want)
{
    cf__dtype d = dtype("f8");
    cf__acc one[4], all[4];
    for (int j = 0; j < nmemb; j++) {
        cf__acc_init(&one[j], &d);
        cf__acc_init(&all[j], &d);
    }
    cf__acc_add(one, nmemb, 0, x, (int64_t)n, &d);
    enum { MAXP = 16 };
    size_t cut[MAXP + 1];
    int np = 1 + (int)(rnd(s) % MAXP);
    cut[0] = 0;
    for (int i = 1; i < np; i++) cut[i] = rnd(s) % (n + 1);
    cut[np] = n;
    for (int i = 1; i < np; i++) /* sort the cuts */
        for (int j = i; j > 0 && cut[j - 1] > cut[j]; j--) {
            size_t t = cut[j];
            cut[j] = cut[j - 1];
            cut[j - 1] = t;
        }
    static cf__acc part[MAXP][4];
    for (int i = 0; i < np; i++) {
        cf__acc tmp[4];
        for (int j = 0; j < nmemb; j++) cf__acc_init(&tmp[j], &d);
        /* in calls of random lengths */
        for (size_t k = cut[i]; k < cut[i + 1];) {
            size_t m = 1 + rnd(s) % 300;
            if (m > cut[i + 1] - k) m = cut[i + 1] - k;
            cf__acc_add(tmp, nmemb, (int64_t)(k % (size_t)nmemb), x + k, (int64_t)m, &d);
            k += m;
        }
        for (int j = 0; j < nmemb; j++) {
            uint64_t w[CF__XSUM_WIRE_WORDS];
            int nw = cf__xsum_to_words(&tmp[j].xs, w);
            part[i][j] = tmp[j];
            memset(&part[i][j].xs, 0x5a, sizeof part[i][j].xs);
            CHECK_EQ_INT(cf__xsum_from_words(&part[i][j].xs, w, nw), 0);
        }
    }
    int order[MAXP];
    for (int i = 0; i < np; i++) order[i] = i;
    for (int i = np - 1; i > 0; i--) {
        int j = (int)(rnd(s) % (uint64_t)(i + 1)), t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    for (int i = 0; i < np; i++)
        for (int j = 0; j < nmemb; j++) cf__acc_merge(&all[j], &part[order[i]][j], &d);
    for (int j = 0; j < nmemb; j++) {
        double a = cf__acc_sum(&all[j]), b = cf__acc_sum(&one[j]);
        if (!same_bits(a, b) || !same_bits(a, want[j]) || all[j].count != one[j].count || all[j].nan != one[j].nan) {
            fprintf(stderr, "%d pieces, nmemb %d, component %d: merged %a, one call %a, reference %a\n", np, nmemb,
                    j, a, b, want[j]);
            cf_test_failures++;
        }
        /* the canonical state is the same too */
        uint64_t wa[CF__XSUM_WIRE_WORDS], wb[CF__XSUM_WIRE_WORDS];
        int na = cf__xsum_to_words(&all[j].xs, wa), nb = cf__xsum_to_words(&one[j].xs, wb);
        CHECK(na == nb && memcmp(wa, wb, (size_t)na * sizeof wa[0]) == 0);
    }
}

/* The reference for component j of rows of nmemb: NaNs skipped, +inf and
 * -inf decide alone. */
static double ref_component(const double *x, size_t n, int nmemb, int j)
{
    double *v = malloc(n * sizeof *v);
    size_t m = 0;
    int pinf = 0, ninf = 0;
    for (size_t k = (size_t)j; k < n; k += (size_t)nmemb) {
        if (x[k] != x[k]) continue;
        if (isinf(x[k])) {
            pinf |= x[k] > 0;
            ninf |= x[k] < 0;
            continue;
        }
        v[m++] = x[k];
    }
    double r = pinf && ninf ? NAN : pinf ? INFINITY : ninf ? -INFINITY : ref_sum(v, m);
    free(v);
    return r;
}

static void test_random_splits(void)
{
    uint64_t s = 88172645463325252u;
    enum { N = 40000 };
    static double x[N];
    for (int specials = 0; specials <= 5; specials++) {
        for (int trial = 0; trial < 30; trial++) {
            /* now and then more than a block of 12 x 1024 values in one call */
            size_t n = 1 + rnd(&s) % (specials == 4 ? 2000 : trial % 5 == 0 ? N : 5000);
            fill(x, n, &s, specials);
            for (int nmemb = 1; nmemb <= 4; nmemb++) {
                double want[4];
                for (int j = 0; j < nmemb; j++) want[j] = ref_component(x, n, nmemb, j);
                for (int r = 0; r < 4; r++) split_and_merge(x, n, nmemb, &s, want);
            }
        }
    }
}

/* f4 and f2 widen exactly, byte-swapped data sums the same. */
static void test_narrow_and_swapped(void)
{
    uint64_t s = 99u;
    enum { N = 3001 };
    static float f[N];
    static double wide[N];
    static unsigned char be[N * 8];
    for (int k = 0; k < N; k++) {
        f[k] = ldexpf((float)(rnd(&s) % 1000000) - 500000.0f, (int)(rnd(&s) % 200) - 100);
        wide[k] = f[k];
    }
    cf__dtype d4 = dtype("f4");
    cf__acc a;
    cf__acc_init(&a, &d4);
    cf__acc_add(&a, 1, 0, f, N, &d4);
    CHECK(same_bits(cf__acc_sum(&a), ref_sum(wide, N)));
    /* f8 in the other byte order */
    cf__dtype dsw = dtype(cf__dtype_native_order() == '<' ? ">f8" : "<f8");
    for (int k = 0; k < N; k++)
        for (int b = 0; b < 8; b++) be[k * 8 + b] = ((unsigned char *)&wide[k])[7 - b];
    cf__acc_init(&a, &dsw);
    cf__acc_add(&a, 1, 0, be, N, &dsw);
    CHECK(same_bits(cf__acc_sum(&a), ref_sum(wide, N)));
    /* f4 of a narrow range (the first grid takes every bit), with NaNs,
     * in rows of 3, in calls of random lengths */
    for (int k = 0; k < N; k++) {
        f[k] = k % 101 == 7 ? NAN : ldexpf((float)(rnd(&s) % 16777216) - 8388608.0f, (int)(rnd(&s) % 8) - 20);
        wide[k] = f[k];
    }
    cf__acc r3[3], w3[3];
    for (int j = 0; j < 3; j++) {
        cf__acc_init(&r3[j], &d4);
        cf__acc_init(&w3[j], &d4);
    }
    for (int k = 0; k < N;) {
        int m = 1 + (int)(rnd(&s) % 2000);
        if (m > N - k) m = N - k;
        cf__acc_add(r3, 3, k % 3, f + k, m, &d4);
        k += m;
    }
    cf__acc_add(w3, 3, 0, f, N, &d4);
    for (int j = 0; j < 3; j++) {
        double v[N];
        size_t m = 0;
        for (int k = j; k < N; k += 3)
            if (wide[k] == wide[k]) v[m++] = wide[k];
        CHECK(same_bits(cf__acc_sum(&r3[j]), ref_sum(v, m)));
        CHECK(same_bits(cf__acc_sum(&w3[j]), ref_sum(v, m)));
    }
}

/* 8-byte integers: exact whatever the split, rounded once. */
static void test_integers(void)
{
    uint64_t s = 7u;
    enum { N = 4000 };
    static int64_t v[N];
    __int128 exact = 0;
    for (int k = 0; k < N; k++) {
        v[k] = (int64_t)rnd(&s);
        exact += v[k];
    }
    cf__dtype d = dtype("i8");
    cf__acc one, all, part;
    cf__acc_init(&one, &d);
    cf__acc_init(&all, &d);
    cf__acc_add(&one, 1, 0, v, N, &d);
    for (int k = 0; k < N;) {
        int m = 1 + (int)(rnd(&s) % 700);
        if (m > N - k) m = N - k;
        cf__acc_init(&part, &d);
        cf__acc_add(&part, 1, 0, v + k, m, &d);
        cf__acc_merge(&all, &part, &d);
        k += m;
    }
    CHECK(same_bits(cf__acc_sum(&one), (double)exact));
    CHECK(same_bits(cf__acc_sum(&all), (double)exact));
}

/* Words no writer sends are refused, so merges of accepted ones cannot
 * overflow. */
static void test_damaged_words(void)
{
    cf__xsum x;
    uint64_t w[3] = { (uint64_t)33 << 8 | (uint64_t)1 << 16, 5, 0 };
    CHECK_EQ_INT(cf__xsum_from_words(&x, w, 2), 0);
    w[1] = UINT64_C(1) << 32; /* not a 32-bit digit */
    CHECK(cf__xsum_from_words(&x, w, 2) != 0);
    w[1] = 5;
    w[0] = (uint64_t)67 << 8 | (uint64_t)2 << 16; /* past the last limb */
    CHECK(cf__xsum_from_words(&x, w, 3) != 0);
    w[0] = (uint64_t)1 << 25; /* unknown bits */
    CHECK(cf__xsum_from_words(&x, w, 1) != 0);
    w[0] = (uint64_t)0 << 8 | (uint64_t)2 << 16; /* announces more words than there are */
    CHECK(cf__xsum_from_words(&x, w, 2) != 0);
}

/* The exact state of component sums as words, for comparing exactly. */
static int same_xsum(const cf__xsum *a, const cf__xsum *b)
{
    uint64_t wa[CF__XSUM_WIRE_WORDS], wb[CF__XSUM_WIRE_WORDS];
    cf__xsum x = *a, y = *b;
    int na = cf__xsum_to_words(&x, wa), nb = cf__xsum_to_words(&y, wb);
    return na == nb && memcmp(wa, wb, (size_t)na * sizeof wa[0]) == 0;
}

/* Data meant for each branch of the one-pass sums of the AVX2 row folder
 * (stats_rows.c) and of cf__float_sums_native (stats_fsum.c): kind 0 plain
 * (the fast split holds), 1 growing by blocks (the scale from the
 * previous block is too small), 2 a few values 2^-40 below the rest (f8:
 * the second grid leaves bits; f4: below the first grid), 3 NaN and
 * infinities, 4 zeros of both signs, subnormals and values near the
 * largest double, 5 first large then tiny (the scale carried over from a
 * previous call is far too large), 6 values at every distance up to 2^35
 * below the largest, 7 the smallest values just below where the checks
 * stop accepting. */
static void fill_kind(double *x, size_t n, int kind, int f4, int nmemb, uint64_t *s)
{
    for (size_t i = 0; i < n; i++) {
        double u = (double)(rnd(s) >> 11) * 0x1p-53 - 0.5;
        double v = 1000.0 * u;
        if (kind == 1) v = u * ldexp(1.0, (int)(i / 700 % 40) * 3); /* within the floats */
        if (kind == 2 && rnd(s) % 300 == 0) v = u * 0x1p-40;
        if (kind == 3 && rnd(s) % 500 == 0) v = rnd(s) % 3 == 0 ? NAN : rnd(s) % 2 ? INFINITY : -INFINITY;
        if (kind == 4) {
            uint64_t r = rnd(s) % 6;
            v = r == 0 ? 0.0 : r == 1 ? -0.0 : r == 2 ? u * 0x1p-1060 : r == 3 ? u * (f4 ? 0x1p-140 : 0x1p1020) : v;
        }
        if (kind == 5) v = i < n / 3 ? u * 0x1p60 : u * 0x1p-30;
        if (kind == 6) v = ldexp(v, -(int)(rnd(s) % 36)); /* every distance below the largest up to 2^-35 */
        if (kind == 7) {
            /* |x| < 2 with values near 2 in every block, the smallest in
             * the octave just below where the one-pass checks stop
             * accepting (stats_rows.c: 2^(s2-1) for f8, 2^(s-30) for f4;
             * s depends on the values per lane of a block) */
            int dmax = f4 ? 18 : nmemb == 3 ? 29 : 31;
            v = (u < 0 ? -1.0 : 1.0) * (1.0 + 2.0 * fabs(u) * (1.0 - 0x1p-20)) * ldexp(1.0, -(int)(rnd(s) % (uint64_t)(dmax + 1)));
        }
        x[i] = f4 ? (double)(float)v : v;
    }
}

static void test_one_pass_rows(void)
{
    enum { N = 40000 };
    static double x[N];
    static float xf[N];
    uint64_t s = 77;
    int have = 0;
#if defined(CF__STATS_AVX2)
    have = __builtin_cpu_supports("avx2") ? 1 : 0;
#endif
    for (int f4 = 0; f4 <= 1; f4++)
        for (int kind = 0; kind <= 7; kind++)
            for (int nmemb = 1; nmemb <= 4; nmemb++) {
                fill_kind(x, N, kind, f4, nmemb, &s);
                for (size_t i = 0; i < N; i++) xf[i] = (float)x[i];
                const void *data = f4 ? (const void *)xf : (const void *)x;
                size_t w = f4 ? 4 : 8;
                cf__acc want[4], rows[4], native[4];
                for (int j = 0; j < 4; j++) {
                    cf__acc_init_class(&want[j], 'f');
                    cf__acc_init_class(&rows[j], 'f');
                    cf__acc_init_class(&native[j], 'f');
                }
                for (size_t i = 0; i < N; i++)
                    if (x[i] == x[i]) cf__xsum_add_f8(&want[i % (size_t)nmemb].xs, x[i]);
                /* stats_fsum.c directly, in two calls */
                size_t cut = (N / 7) / (size_t)nmemb * (size_t)nmemb;
                cf__float_sums_native(native, nmemb, 0, data, cut, f4, have);
                cf__float_sums_native(native, nmemb, 0, (const char *)data + cut * w, N - cut, f4, have);
                /* the row folder, in calls of random lengths (whole rows:
                 * the scale of one call is carried to the next) */
                size_t done = 0;
                while (done < N) {
                    size_t m = (size_t)(rnd(&s) % 9000) / (size_t)nmemb * (size_t)nmemb;
                    if (m > N - done) m = N - done;
                    size_t used = 0;
#if defined(CF__STATS_AVX2)
                    if (have) used = cf__float_rows_avx2(rows, nmemb, 0, (const char *)data + done * w, m, f4);
#endif
                    CHECK(used % (size_t)nmemb == 0 && used <= m);
                    cf__float_sums_native(rows, nmemb, 0, (const char *)data + (done + used) * w, m - used, f4,
                                          have);
                    done += m;
                }
                for (int j = 0; j < nmemb; j++) {
                    if (!same_xsum(&rows[j].xs, &want[j].xs) || !same_xsum(&native[j].xs, &want[j].xs)) {
                        fprintf(stderr, "%s kind %d nmemb %d component %d: rows %a, native %a, reference %a\n",
                                f4 ? "f4" : "f8", kind, nmemb, j, cf__acc_sum(&rows[j]), cf__acc_sum(&native[j]),
                                cf__acc_sum(&want[j]));
                        cf_test_failures++;
                    }
                }
            }
}

CF_TESTS(CF_TEST(test_rounding_cases), CF_TEST(test_random_splits), CF_TEST(test_narrow_and_swapped),
         CF_TEST(test_integers), CF_TEST(test_damaged_words), CF_TEST(test_one_pass_rows))
