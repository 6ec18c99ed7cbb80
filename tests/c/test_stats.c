/* test_stats.c - per-chunk statistics: accumulators against a plain
 * reference, merges, the chunk layout and the colfile-stats-v1 file. */
#include <locale.h>
#include <math.h>

#include "harness.h"

#include "checksum.h"
#include "dtype.h"
#include "header.h"
#include "stats.h"

/* ------------------------------------------------------------------ */
/* Helpers                                                              */
/* ------------------------------------------------------------------ */

static uint64_t rng = UINT64_C(0x9E3779B97F4A7C15);

static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static uint64_t rnd_below(uint64_t n)
{
    return n ? rnd() % n : 0;
}

static double rnd_unit(void)
{
    return (double)(rnd() >> 11) * 0x1p-53;
}

static cf__dtype dt(const char *tok)
{
    cf__dtype d;
    cf_error e;
    if (cf__dtype_parse(tok, CF__DTYPE_USER, &d, "test", &e)) {
        fprintf(stderr, "bad dtype %s: %s\n", tok, e.message);
        abort();
    }
    return d;
}

static double u64_as_double(uint64_t b)
{
    double v;
    memcpy(&v, &b, sizeof v);
    return v;
}

static uint64_t double_bits(double v)
{
    uint64_t b;
    memcpy(&b, &v, sizeof b);
    return b;
}

/* Same double, bit for bit; any two NaNs count as the same. */
static int same_double(double a, double b)
{
    if (a != a || b != b) return a != a && b != b;
    return double_bits(a) == double_bits(b);
}

/* binary16 -> double by arithmetic (independent of the library's code). */
static double half_ref(uint16_t h)
{
    int e = (h >> 10) & 31, m = h & 1023;
    double v;
    if (e == 31) v = m ? NAN : INFINITY;
    else if (e == 0) v = ldexp((double)m, -24);
    else v = ldexp((double)(m + 1024), e - 25);
    return h & 0x8000 ? -v : v;
}

/* Reverse each swap unit of an element in place. */
static void swap_elem(unsigned char *e, const cf__dtype *d)
{
    int64_t unit = d->kind == 'c' ? d->width / 2 : d->kind == 'S' ? 1 : d->width;
    for (int64_t o = 0; o < d->width; o += unit)
        for (int64_t i = 0; i < unit / 2; i++) {
            unsigned char t = e[o + i];
            e[o + i] = e[o + unit - 1 - i];
            e[o + unit - 1 - i] = t;
        }
}

/* ------------------------------------------------------------------ */
/* Values: generated in native layout, stored in the dtype's order      */
/* ------------------------------------------------------------------ */

/* A double with interesting values now and then (NaNs with payloads and
 * either sign, infinities, zeros of both signs, subnormals). */
static double interesting_double(int specials)
{
    switch (specials ? rnd_below(16) : 15) {
    case 0: return u64_as_double(UINT64_C(0x7ff0000000000000) | (rnd() & UINT64_C(0x000fffffffffffff)) | 1 |
                                 (rnd() & (UINT64_C(1) << 63)));
    case 1: return INFINITY;
    case 2: return -INFINITY;
    case 3: return 0.0;
    case 4: return -0.0;
    case 5: return u64_as_double(rnd() & UINT64_C(0x800fffffffffffff));   /* subnormal */
    case 6: return (rnd_unit() - 0.5) * 1e300;
    default: return (rnd_unit() - 0.5) * 200.0;
    }
}

static float interesting_float(int specials)
{
    if (specials && rnd_below(16) == 0) {
        uint32_t b = 0x7f800000u | ((uint32_t)rnd() & 0x007fffffu) | 1u | ((uint32_t)rnd() & 0x80000000u);
        float f;
        memcpy(&f, &b, sizeof f);
        return f;
    }
    if (specials && rnd_below(16) == 0) {
        uint32_t b = (uint32_t)rnd() & 0x807fffffu;   /* subnormal */
        float f;
        memcpy(&f, &b, sizeof f);
        return f;
    }
    return (float)interesting_double(specials && rnd_below(2));
}

/* Fill element e (native layout) of dtype d.  exact: integers small enough
 * that every sum stays below 2^53. */
static void gen_elem(unsigned char *e, const cf__dtype *d, int exact, int specials)
{
    uint64_t r = rnd();
    switch (d->kind) {
    case 'i':
    case 'u':
        if (exact && d->width == 8) {
            /* 40000 of them still sum below 2^53 */
            int64_t v = (int64_t)(r % (UINT64_C(1) << 37)) - ((int64_t)1 << 36);
            if (d->kind == 'u') v = (int64_t)(r % (UINT64_C(1) << 37));
            memcpy(e, &v, 8);
        } else if (!exact && rnd_below(8) == 0) {
            /* the extremes */
            uint64_t ext[4] = { 0, UINT64_MAX, UINT64_C(1) << 63, (UINT64_C(1) << 63) - 1 };
            uint64_t v = ext[rnd_below(4)];
            unsigned shift = (unsigned)(64 - 8 * d->width);
            if (d->width < 8) v = d->kind == 'i' ? (uint64_t)((int64_t)v >> shift) : v >> shift;
            for (int64_t i = 0; i < d->width; i++) e[i] = (unsigned char)(v >> (8 * i));
            if (cf__dtype_native_order() == '>') swap_elem(e, &(cf__dtype){ '<', 'u', d->width });
        } else {
            memcpy(e, &r, (size_t)d->width);
        }
        break;
    case 'b': {
        static const unsigned char vals[6] = { 0, 1, 2, 255, 0, 1 };
        e[0] = vals[rnd_below(6)];
        break;
    }
    case 'f':
        if (d->width == 2) {
            uint16_t h = (uint16_t)r;
            if (!specials && ((h >> 10) & 31) == 31) h &= 0xbfff;   /* no inf/NaN */
            memcpy(e, &h, 2);
        } else if (d->width == 4) {
            float f = interesting_float(specials);
            memcpy(e, &f, 4);
        } else {
            double v = interesting_double(specials);
            memcpy(e, &v, 8);
        }
        break;
    case 'c':
        if (d->width == 8) {
            float z[2] = { interesting_float(specials), interesting_float(specials) };
            memcpy(e, z, 8);
        } else {
            double z[2] = { interesting_double(specials), interesting_double(specials) };
            memcpy(e, z, 16);
        }
        break;
    default:
        for (int64_t i = 0; i < d->width; i++) e[i] = (unsigned char)rnd();
        break;
    }
}

/* n elements of dtype d, in d's byte order, at buf. */
static void gen(unsigned char *buf, const cf__dtype *d, int64_t n, int exact, int specials)
{
    for (int64_t k = 0; k < n; k++) {
        unsigned char *e = buf + k * d->width;
        gen_elem(e, d, exact, specials);
        if (d->order != cf__dtype_native_order()) swap_elem(e, d);
    }
}

/* ------------------------------------------------------------------ */
/* The reference: one value at a time, the simplest possible code        */
/* ------------------------------------------------------------------ */

typedef struct {
    cf__acc a;
    double abs;     /* sum of |x| over the finite values (sum tolerance) */
    int has_inf;    /* an infinity was summed: sums must match exactly */
} ref_acc;

static void ref_init(ref_acc *r, int64_t n, const cf__dtype *d)
{
    for (int64_t i = 0; i < n; i++) {
        cf__acc_init(&r[i].a, d);
        r[i].abs = 0;
        r[i].has_inf = 0;
    }
}

static int below(double a, double b)
{
    return a < b || (a == b && signbit(a) && !signbit(b));
}

static void ref_add(ref_acc *ref, int64_t nmemb, int64_t c0, const unsigned char *data, int64_t n,
                    const cf__dtype *d)
{
    for (int64_t k = 0; k < n; k++) {
        ref_acc *r = &ref[(c0 + k) % nmemb];
        cf__acc *a = &r->a;
        unsigned char e[16];
        memcpy(e, data + k * d->width, (size_t)d->width);
        if (d->order != cf__dtype_native_order()) swap_elem(e, d);
        a->count++;
        if (d->kind == 'i') {
            int64_t v;
            switch (d->width) {
            case 1: { int8_t x; memcpy(&x, e, 1); v = x; break; }
            case 2: { int16_t x; memcpy(&x, e, 2); v = x; break; }
            case 4: { int32_t x; memcpy(&x, e, 4); v = x; break; }
            default: memcpy(&v, e, 8); break;
            }
            cf__xsum_add_i64(&a->xs, v);
            r->abs += fabs((double)v);
            if (v < a->v.i.min) a->v.i.min = v;
            if (v > a->v.i.max) a->v.i.max = v;
        } else if (d->kind == 'u' || d->kind == 'b') {
            uint64_t v;
            switch (d->width) {
            case 1: v = d->kind == 'b' ? e[0] != 0 : e[0]; break;
            case 2: { uint16_t x; memcpy(&x, e, 2); v = x; break; }
            case 4: { uint32_t x; memcpy(&x, e, 4); v = x; break; }
            default: memcpy(&v, e, 8); break;
            }
            cf__xsum_add_u64(&a->xs, v);
            r->abs += (double)v;
            if (v < a->v.u.min) a->v.u.min = v;
            if (v > a->v.u.max) a->v.u.max = v;
        } else if (d->kind == 'f') {
            double v;
            if (d->width == 2) { uint16_t h; memcpy(&h, e, 2); v = half_ref(h); }
            else if (d->width == 4) { float f; memcpy(&f, e, 4); v = f; }
            else memcpy(&v, e, 8);
            if (v != v) {
                a->nan++;
                continue;
            }
            cf__xsum_add_f8(&a->xs, v);
            if (isinf(v)) r->has_inf = 1;
            else r->abs += fabs(v);
            if (below(v, a->v.f.min)) a->v.f.min = v;
            if (below(a->v.f.max, v)) a->v.f.max = v;
        } else if (d->kind == 'c') {
            double re, im;
            if (d->width == 8) { float z[2]; memcpy(z, e, 8); re = z[0]; im = z[1]; }
            else { double z[2]; memcpy(z, e, 16); re = z[0]; im = z[1]; }
            a->nan += re != re || im != im;
        }
    }
}

/* Compare an accumulator with the reference: count, nan, min and max bit
 * for bit; sums exactly (exact_sum, or an infinity involved) or within
 * rounding of the order of additions. */
static int acc_matches(const cf__acc *got, const ref_acc *want, const cf__dtype *d, int exact_sum, const char *what)
{
    char cls = cf__acc_class(d);
    const cf__acc *w = &want->a;
    int ok = got->count == w->count && got->nan == w->nan;
    if (cls == 'i') ok = ok && got->v.i.min == w->v.i.min && got->v.i.max == w->v.i.max;
    if (cls == 'u') ok = ok && got->v.u.min == w->v.u.min && got->v.u.max == w->v.u.max;
    if (cls == 'f') ok = ok && same_double(got->v.f.min, w->v.f.min) && same_double(got->v.f.max, w->v.f.max);
    if (cls) {
        if (exact_sum || want->has_inf) ok = ok && same_double(cf__acc_sum(got), cf__acc_sum(w));
        else ok = ok && fabs(cf__acc_sum(got) - cf__acc_sum(w)) <= 1e-12 * want->abs;
    } else {
        ok = ok && cf__acc_sum(got) == 0;
    }
    if (!ok) {
        char tok[CF_DTYPE_MAX];
        cf__dtype_format(d, tok);
        fprintf(stderr, "%s %s: got count=%lld nan=%lld min=%.17g/%lld max=%.17g/%lld sum=%.17g\n"
                        "%*s want count=%lld nan=%lld min=%.17g/%lld max=%.17g/%lld sum=%.17g\n",
                what, tok, (long long)got->count, (long long)got->nan, got->v.f.min, (long long)got->v.i.min,
                got->v.f.max, (long long)got->v.i.max, cf__acc_sum(got), (int)(strlen(what) + strlen(tok) + 1), "",
                (long long)w->count, (long long)w->nan, w->v.f.min, (long long)w->v.i.min, w->v.f.max,
                (long long)w->v.i.max, cf__acc_sum(w));
    }
    return ok;
}

/* Bit for bit (sums: NaN equals NaN). */
static int acc_same(const cf__acc *a, const cf__acc *b)
{
    return a->count == b->count && a->nan == b->nan && memcmp(&a->v, &b->v, sizeof a->v) == 0 &&
           same_double(cf__acc_sum(a), cf__acc_sum(b));
}

static const char *all_dtypes[] = { "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "f2",
                                    "f4", "f8", "c8", "c16", "b1", "S1", "S3" };
#define N_DTYPES (sizeof all_dtypes / sizeof all_dtypes[0])

/* ------------------------------------------------------------------ */
/* Accumulators                                                         */
/* ------------------------------------------------------------------ */

static void test_class_and_init(void)
{
    static const struct { const char *tok; char cls; } cases[] = {
        { "<i1", 'i' }, { ">i8", 'i' }, { "<u2", 'u' }, { "<u8", 'u' }, { "|b1", 'u' }, { "<f2", 'f' },
        { ">f4", 'f' }, { "<f8", 'f' }, { "<c8", 0 }, { "<c16", 0 }, { "|S5", 0 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cf__dtype d = dt(cases[i].tok);
        CHECK_EQ_INT(cf__acc_class(&d), cases[i].cls);
        cf__acc a;
        memset(&a, 0x5a, sizeof a);
        cf__acc_init(&a, &d);
        CHECK_EQ_INT(a.count, 0);
        CHECK_EQ_INT(a.nan, 0);
        CHECK(cf__acc_sum(&a) == 0);
        if (cases[i].cls == 'i') {
            CHECK(a.v.i.min == INT64_MAX && a.v.i.max == INT64_MIN);
        } else if (cases[i].cls == 'u') {
            CHECK(a.v.u.min == UINT64_MAX && a.v.u.max == 0);
        } else if (cases[i].cls == 'f') {
            CHECK(a.v.f.min == INFINITY && a.v.f.max == -INFINITY);
        }
        /* adding nothing changes nothing */
        cf__acc b = a;
        unsigned char byte = 0;
        cf__acc_add(&b, 1, 0, &byte, 0, &d);
        CHECK(acc_same(&a, &b));
        /* merging an empty accumulator changes nothing */
        cf__acc_merge(&b, &a, &d);
        CHECK(acc_same(&a, &b));
    }
}

/* Every dtype, both byte orders, nmemb 1, 3 (and others), first component
 * 0..2, many lengths, aligned and unaligned data: equal to the reference. */
static void test_every_dtype(void)
{
    static const int64_t lens[] = { 1, 2, 3, 7, 8, 15, 16, 17, 31, 33, 64, 100, 1000, 4099, 40000 };
    static const int64_t nmembs[] = { 1, 3, 2, 7 };
    const char orders[2] = { '<', '>' };
    unsigned char *raw = malloc(16 * 40000 + 16);
    for (size_t t = 0; t < N_DTYPES; t++) {
        for (int o = 0; o < 2; o++) {
            char tok[16];
            snprintf(tok, sizeof tok, "%c%s", orders[o], all_dtypes[t]);
            cf__dtype d = dt(tok);
            for (size_t m = 0; m < sizeof nmembs / sizeof nmembs[0]; m++) {
                int64_t nmemb = nmembs[m];
                if (nmemb > 3 && t % 3) continue;   /* the odd widths for a few types */
                for (size_t l = 0; l < sizeof lens / sizeof lens[0]; l++) {
                    int64_t n = lens[l];
                    for (int variant = 0; variant < 3; variant++) {
                        int exact = variant != 2, specials = variant != 0;
                        int64_t c0 = variant % nmemb;
                        size_t misalign = variant == 1 ? 1 : 0;
                        unsigned char *buf = raw + misalign;
                        gen(buf, &d, n, exact, specials);
                        cf__acc acc[7];
                        ref_acc ref[7];
                        for (int64_t j = 0; j < nmemb; j++) cf__acc_init(&acc[j], &d);
                        ref_init(ref, nmemb, &d);
                        cf__acc_add(acc, nmemb, c0, buf, n, &d);
                        ref_add(ref, nmemb, c0, buf, n, &d);
                        for (int64_t j = 0; j < nmemb; j++) {
                            char what[96];
                            snprintf(what, sizeof what, "n=%lld nmemb=%lld c0=%lld variant=%d comp=%lld",
                                     (long long)n, (long long)nmemb, (long long)c0, variant, (long long)j);
                            int exact_sum = exact && d.kind != 'f';
                            if (!acc_matches(&acc[j], &ref[j], &d, exact_sum, what)) {
                                cf_test_failures++;
                                goto next;
                            }
                        }
                    }
                }
            next:;
            }
        }
    }
    free(raw);
}

/* Vectors with many components go value by value; the boundary between
 * the two vector paths is at 2048 components. */
static void test_wide_vectors(void)
{
    static const int64_t nmembs[] = { 2047, 2048, 2049, 5000 };
    static const char *toks[] = { "<f8", ">f4", "<i8", "<u2", ">f2", "<c8", "<b1", "<S2" };
    unsigned char *buf = malloc(8 * 12000);
    cf__acc *acc = malloc(5000 * sizeof *acc);
    ref_acc *ref = malloc(5000 * sizeof *ref);
    for (size_t t = 0; t < sizeof toks / sizeof toks[0]; t++) {
        cf__dtype d = dt(toks[t]);
        for (size_t m = 0; m < sizeof nmembs / sizeof nmembs[0]; m++) {
            int64_t nmemb = nmembs[m], n = 11000, c0 = 17;
            gen(buf, &d, n, 1, 1);
            for (int64_t j = 0; j < nmemb; j++) cf__acc_init(&acc[j], &d);
            ref_init(ref, nmemb, &d);
            /* in two calls, the second continuing the vector */
            cf__acc_add(acc, nmemb, c0, buf, 4321, &d);
            cf__acc_add(acc, nmemb, c0 + 4321, buf + 4321 * d.width, n - 4321, &d);
            ref_add(ref, nmemb, c0, buf, n, &d);
            for (int64_t j = 0; j < nmemb; j++)
                if (!acc_matches(&acc[j], &ref[j], &d, d.kind != 'f', toks[t])) {
                    cf_test_failures++;
                    break;
                }
        }
    }
    free(buf);
    free(acc);
    free(ref);
}

/* component0 is taken modulo nmemb. */
static void test_component_offset(void)
{
    cf__dtype d = dt("<i4");
    int32_t v[10];
    for (int i = 0; i < 10; i++) v[i] = i * 10 - 30;
    cf__acc a[3], b[3];
    for (int j = 0; j < 3; j++) {
        cf__acc_init(&a[j], &d);
        cf__acc_init(&b[j], &d);
    }
    cf__acc_add(a, 3, 1, v, 10, &d);
    cf__acc_add(b, 3, 7, v, 10, &d);
    for (int j = 0; j < 3; j++) CHECK(acc_same(&a[j], &b[j]));
    /* element k goes to component (1 + k) % 3: component 1 gets v[0], v[3], v[6], v[9] */
    CHECK_EQ_INT(a[1].count, 4);
    CHECK_EQ_INT(a[1].v.i.min, -30);
    CHECK_EQ_INT(a[1].v.i.max, 60);
    CHECK(cf__acc_sum(&a[1]) == -30 + 0 + 30 + 60);
    CHECK_EQ_INT(a[0].count, 3);
    CHECK_EQ_INT(a[2].count, 3);
    CHECK_EQ_INT(a[2].v.i.min, -20);
}

/* Float edge cases, in short runs (scalar code) and long ones (SIMD
 * lanes), in f2, f4 and f8. */
static void put_float(unsigned char *buf, const cf__dtype *d, int64_t k, double v)
{
    if (d->width == 8) {
        memcpy(buf + 8 * k, &v, 8);
    } else if (d->width == 4) {
        float f = (float)v;
        memcpy(buf + 4 * k, &f, 4);
    } else {
        /* the few values used here are exact halves */
        uint16_t h;
        if (v != v) h = 0x7e00;
        else if (isinf(v)) h = v > 0 ? 0x7c00 : 0xfc00;
        else if (v == 0) h = signbit(v) ? 0x8000 : 0;
        else {
            int e;
            double m = frexp(fabs(v), &e);   /* v = m 2^e, m in [0.5, 1) */
            h = (uint16_t)(((e + 14) << 10) | (uint16_t)((m * 2 - 1) * 1024));
            if (v < 0) h |= 0x8000;
        }
        memcpy(buf + 2 * k, &h, 2);
    }
}

static void float_case(const cf__dtype *d, const double *vals, int nv, int64_t n, double want_min, double want_max,
                       int64_t want_nan, double want_sum, const char *what)
{
    unsigned char *buf = malloc((size_t)(n * 8));
    /* the values spread over a long run of 1.0 (or the first value) */
    for (int64_t k = 0; k < n; k++) put_float(buf, d, k, vals[0]);
    for (int i = 0; i < nv; i++) put_float(buf, d, (int64_t)(((uint64_t)i * 7919u) % (uint64_t)n), vals[i]);
    if (d->order != cf__dtype_native_order())
        for (int64_t k = 0; k < n; k++) swap_elem(buf + k * d->width, d);
    cf__acc a;
    cf__acc_init(&a, d);
    cf__acc_add(&a, 1, 0, buf, n, d);
    int ok = a.count == n && a.nan == want_nan && same_double(a.v.f.min, want_min) &&
             same_double(a.v.f.max, want_max) && same_double(cf__acc_sum(&a), want_sum);
    if (!ok) {
        fprintf(stderr, "%s (w%lld, n=%lld): count=%lld nan=%lld min=%g(%d) max=%g(%d) sum=%g\n", what,
                (long long)d->width, (long long)n, (long long)a.count, (long long)a.nan, a.v.f.min,
                signbit(a.v.f.min) != 0, a.v.f.max, signbit(a.v.f.max) != 0, cf__acc_sum(&a));
        cf_test_failures++;
    }
    free(buf);
}

static void test_float_specials(void)
{
    const char *toks[] = { "<f8", "<f4", "<f2", ">f8", ">f4", ">f2" };
    static const int64_t lens[] = { 3, 9, 1000, 4097 };
    for (size_t t = 0; t < sizeof toks / sizeof toks[0]; t++) {
        cf__dtype d = dt(toks[t]);
        for (size_t l = 0; l < sizeof lens / sizeof lens[0]; l++) {
            int64_t n = lens[l];
            /* the sign of zero: -0.0 < +0.0 whatever the positions */
            double z1[2] = { 0.0, -0.0 };
            float_case(&d, z1, 2, n, -0.0, 0.0, 0, 0.0, "+0 and -0");
            double z2[2] = { -0.0, 0.0 };
            float_case(&d, z2, 2, n, -0.0, 0.0, 0, 0.0, "-0 and +0");
            double z3[1] = { 0.0 };
            float_case(&d, z3, 1, n, 0.0, 0.0, 0, 0.0, "only +0");
            double z4[1] = { -0.0 };
            float_case(&d, z4, 1, n, -0.0, -0.0, 0, -0.0 + 0.0, "only -0");
            double z5[2] = { -2.0, -0.0 };   /* max is -0.0: no +0.0 anywhere */
            float_case(&d, z5, 2, n, -2.0, -0.0, 0, -2.0 * (double)(n - 1), "max -0");
            double z6[3] = { 4.0, 0.0, -0.0 };   /* min is -0.0 among zeros */
            float_case(&d, z6, 3, n, -0.0, 4.0, 0, 4.0 * (double)(n - 2), "min -0");
            /* NaN everywhere: no min/max (+inf > -inf), sum 0 */
            double a1[1] = { NAN };
            float_case(&d, a1, 1, n, INFINITY, -INFINITY, n, 0.0, "all NaN");
            /* infinities: in min/max and in the sum */
            double i1[3] = { 1.0, INFINITY, NAN };
            float_case(&d, i1, 3, n, 1.0, INFINITY, 1, INFINITY, "+inf");
            double i2[3] = { 1.0, INFINITY, -INFINITY };
            float_case(&d, i2, 3, n, -INFINITY, INFINITY, 0, NAN, "+inf and -inf");
            double i3[2] = { -1.5, -INFINITY };
            float_case(&d, i3, 2, n, -INFINITY, -1.5, 0, -INFINITY, "-inf");
            double i4[2] = { 2.0, NAN };
            float_case(&d, i4, 2, n, 2.0, 2.0, 1, 2.0 * (double)(n - 1), "one NaN");
        }
    }
    /* a NaN never becomes the min or max, whatever its sign and payload */
    cf__dtype d = dt("<f8");
    double v[5] = { u64_as_double(UINT64_C(0xfff8000000000001)), 3.0, u64_as_double(UINT64_C(0x7ff0000000000001)),
                    -1.0, NAN };
    for (int64_t n = 1; n <= 5; n++) {
        cf__acc a;
        cf__acc_init(&a, &d);
        cf__acc_add(&a, 1, 0, v, n, &d);
        CHECK(a.v.f.min == a.v.f.min && a.v.f.max == a.v.f.max);
    }
}

/* f2 is widened exactly: every half value against the reference. */
static void test_every_half(void)
{
    uint16_t *h = malloc(65536 * sizeof *h);
    for (uint32_t i = 0; i < 65536; i++) h[i] = (uint16_t)i;
    cf__dtype d = dt("<f2");
    for (uint32_t i = 0; i < 65536; i++) {
        cf__acc a;
        ref_acc r;
        cf__acc_init(&a, &d);
        ref_init(&r, 1, &d);
        cf__acc_add(&a, 1, 0, &h[i], 1, &d);
        ref_add(&r, 1, 0, (const unsigned char *)&h[i], 1, &d);
        if (!acc_matches(&a, &r, &d, 1, "one half")) {
            cf_test_failures++;
            break;
        }
    }
    cf__acc a;
    ref_acc r;
    cf__acc_init(&a, &d);
    ref_init(&r, 1, &d);
    cf__acc_add(&a, 1, 0, h, 65536, &d);
    ref_add(&r, 1, 0, (const unsigned char *)h, 65536, &d);
    CHECK(acc_matches(&a, &r, &d, 0, "all halves"));
    CHECK_EQ_INT(a.nan, 2 * 1023);
    CHECK(a.v.f.min == -INFINITY && a.v.f.max == INFINITY);
    free(h);
}


/* The in-place AVX2 paths for rows of 1 to 4 f4 or f8 values (blocks of
 * 8192 values folded optimistically, again carefully when a lane sum is
 * NaN, zeros looked up for the sign rule) agree with the reference and with
 * the paths without AVX2: every first component, lengths across block
 * boundaries, one NaN, inf next to -inf, signed zeros at the extremes, a
 * component of zeros only, NaNs only. */
static void test_float_rows(void)
{
    static const int64_t lens[] = { 64, 100, 1000, 8191, 8192, 8193, 20000, 40000 };
    static const char *toks[] = { "<f4", "<f8" };
    unsigned char *buf = malloc(8 * 40000);
    for (size_t t = 0; t < 2; t++) {
        cf__dtype d = dt(toks[t]);
        for (int64_t nmemb = 1; nmemb <= 4; nmemb++) {
            for (size_t l = 0; l < sizeof lens / sizeof lens[0]; l++) {
                int64_t n = lens[l];
                for (int variant = 0; variant < 6; variant++) {
                    int64_t c0 = (variant + l) % nmemb;
                    for (int64_t k = 0; k < n; k++) {
                        double v = (rnd_unit() - 0.3) * 1000.0;
                        int64_t comp = (c0 + k) % nmemb;
                        if (variant == 3 && comp == 0) v = (double)rnd_below(3) - 2.0;  /* max 0 */
                        if (variant == 3 && comp == nmemb - 1) v = rnd_unit() * 5.0;    /* min 0 */
                        if (variant == 4 && comp == 0) v = rnd() & 1 ? 0.0 : -0.0;
                        if (variant == 5) v = NAN;
                        put_float(buf, &d, k, v);
                    }
                    if (variant == 1) put_float(buf, &d, (int64_t)rnd_below((uint64_t)n), NAN);
                    if (variant == 2) {
                        put_float(buf, &d, (int64_t)rnd_below((uint64_t)n), INFINITY);
                        put_float(buf, &d, (int64_t)rnd_below((uint64_t)n), -INFINITY);
                    }
                    if (variant == 3) {
                        put_float(buf, &d, (int64_t)rnd_below((uint64_t)n / 2) * 2, -0.0);
                        put_float(buf, &d, (int64_t)rnd_below((uint64_t)n / 2) * 2 + 1, 0.0);
                    }
                    ref_acc ref[4];
                    ref_init(ref, nmemb, &d);
                    ref_add(ref, nmemb, c0, buf, n, &d);
                    for (int avx2 = 0; avx2 < 2; avx2++) {
                        cf__acc acc[4];
                        for (int64_t j = 0; j < nmemb; j++) cf__acc_init(&acc[j], &d);
                        cf__acc_add_simd(acc, nmemb, c0, buf, n, &d, avx2);
                        for (int64_t j = 0; j < nmemb; j++) {
                            char what[96];
                            snprintf(what, sizeof what, "%s n=%lld nmemb=%lld c0=%lld variant=%d avx2=%d comp=%lld",
                                     toks[t], (long long)n, (long long)nmemb, (long long)c0, variant, avx2,
                                     (long long)j);
                            if (!acc_matches(&acc[j], &ref[j], &d, 0, what)) cf_test_failures++;
                        }
                    }
                }
            }
        }
    }
    free(buf);
}

/* Integer sums are exact within a block, whatever the magnitudes. */
static void test_int_sums(void)
{
    cf__dtype d = dt("<i8");
    int64_t v[40];
    for (int i = 0; i < 40; i++) v[i] = i % 2 ? INT64_MIN : INT64_MAX;
    v[39] = 5;
    cf__acc a;
    cf__acc_init(&a, &d);
    cf__acc_add(&a, 1, 0, v, 39, &d);   /* 20 x MAX + 19 x MIN = 20 * MAX - 19 * MAX - 19 */
    CHECK(cf__acc_sum(&a) == (double)INT64_MAX - 19.0);
    CHECK_EQ_INT(a.v.i.min, INT64_MIN);
    CHECK_EQ_INT(a.v.i.max, INT64_MAX);
    cf__acc_init(&a, &d);
    cf__acc_add(&a, 1, 0, v + 1, 38, &d);   /* 19 x (MIN + MAX) = -19 */
    CHECK(cf__acc_sum(&a) == -19.0);

    cf__dtype du = dt(">u8");
    uint64_t u[33];
    for (int i = 0; i < 33; i++) u[i] = UINT64_MAX;   /* the same either order */
    cf__acc_init(&a, &du);
    cf__acc_add(&a, 1, 0, u, 33, &du);
    CHECK(cf__acc_sum(&a) == 33.0 * 18446744073709551616.0);   /* exact sum 33 * 2^64 - 33, rounded once */
    CHECK(a.v.u.min == UINT64_MAX && a.v.u.max == UINT64_MAX);

    /* bool: true bytes, min/max over 0/1 */
    cf__dtype b = dt("|b1");
    unsigned char bits[100];
    for (int i = 0; i < 100; i++) bits[i] = (unsigned char)(i % 4 == 0 ? 0 : i);
    cf__acc_init(&a, &b);
    cf__acc_add(&a, 1, 0, bits, 100, &b);
    CHECK(cf__acc_sum(&a) == 75);
    CHECK(a.v.u.min == 0 && a.v.u.max == 1);
    cf__acc_init(&a, &b);
    cf__acc_add(&a, 1, 0, bits + 1, 3, &b);
    CHECK(a.v.u.min == 1 && a.v.u.max == 1 && cf__acc_sum(&a) == 3);
    cf__acc_init(&a, &b);
    cf__acc_add(&a, 1, 0, bits, 1, &b);
    CHECK(a.v.u.min == 0 && a.v.u.max == 0 && cf__acc_sum(&a) == 0);

    /* S: count only */
    cf__dtype s = dt("|S4");
    cf__acc sa[3];
    for (int j = 0; j < 3; j++) cf__acc_init(&sa[j], &s);
    cf__acc_add(sa, 3, 2, "abcdefghijklmnopqrst", 5, &s);
    CHECK_EQ_INT(sa[2].count, 2);
    CHECK_EQ_INT(sa[0].count, 2);
    CHECK_EQ_INT(sa[1].count, 1);
    CHECK_EQ_INT(sa[0].nan, 0);
}

/* Splitting the data anywhere, accumulating the parts and merging them
 * in any order gives what one pass gives. */
/* Found by tests/fuzz/fuzz_pending: counts merged from damaged state of
 * another process overflowed int64.  They saturate instead. */
static void test_merge_counts_saturate(void)
{
    static const char *toks[] = { "<i4", "<u8", "<b1", "<f8", "<c8", "<S3" };
    for (size_t t = 0; t < sizeof toks / sizeof toks[0]; t++) {
        cf__dtype d = dt(toks[t]);
        cf__acc a, b;
        cf__acc_init(&a, &d);
        cf__acc_init(&b, &d);
        a.count = b.count = INT64_MAX - 1;
        a.nan = b.nan = INT64_MAX / 2 + 1;
        cf__acc_merge(&a, &b, &d);
        CHECK_EQ_INT(a.count, INT64_MAX);
        CHECK_EQ_INT(a.nan, INT64_MAX);
        a.count = 5;
        b.count = 7;
        a.nan = b.nan = 1;
        cf__acc_merge(&a, &b, &d);
        CHECK_EQ_INT(a.count, 12);
        CHECK_EQ_INT(a.nan, 2);
    }
}

static void test_merge_associativity(void)
{
    static const char *toks[] = { "<i1", "<i2", ">i4", "<i8", ">u8", "<u1", "<u4", "|b1", "<f2",
                                  "<f4", ">f8", "<f8", "<c16", "<S2" };
    unsigned char *buf = malloc(16 * 5000);
    for (size_t t = 0; t < sizeof toks / sizeof toks[0]; t++) {
        cf__dtype d = dt(toks[t]);
        char cls = cf__acc_class(&d);
        for (int64_t nmemb = 1; nmemb <= 3; nmemb += 2) {
            for (int trial = 0; trial < 20; trial++) {
                int64_t n = (int64_t)rnd_below(5000) + 1;
                gen(buf, &d, n, 1, trial % 2);
                cf__acc one[3];
                for (int j = 0; j < 3; j++) cf__acc_init(&one[j], &d);
                cf__acc_add(one, nmemb, 0, buf, n, &d);
                /* cut points */
                int np = (int)rnd_below(8) + 1;
                int64_t cut[10];
                cut[0] = 0;
                for (int i = 1; i < np; i++) cut[i] = (int64_t)rnd_below((uint64_t)n + 1);
                cut[np] = n;
                for (int i = 1; i < np; i++)   /* sort */
                    for (int k = i; k > 0 && cut[k] < cut[k - 1]; k--) {
                        int64_t x = cut[k];
                        cut[k] = cut[k - 1];
                        cut[k - 1] = x;
                    }
                cf__acc part[9][3];
                for (int i = 0; i < np; i++) {
                    for (int j = 0; j < 3; j++) cf__acc_init(&part[i][j], &d);
                    cf__acc_add(part[i], nmemb, cut[i] % nmemb, buf + cut[i] * d.width, cut[i + 1] - cut[i], &d);
                }
                /* merge in a random order, and pairwise as a tree */
                int order[9];
                for (int i = 0; i < np; i++) order[i] = i;
                for (int i = np - 1; i > 0; i--) {
                    int k = (int)rnd_below((uint64_t)i + 1), x = order[i];
                    order[i] = order[k];
                    order[k] = x;
                }
                cf__acc lin[3], tree[9][3];
                for (int j = 0; j < nmemb; j++) {
                    cf__acc_init(&lin[j], &d);
                    for (int i = 0; i < np; i++) cf__acc_merge(&lin[j], &part[order[i]][j], &d);
                    for (int i = 0; i < np; i++) tree[i][j] = part[i][j];
                    for (int step = 1; step < np; step *= 2)
                        for (int i = 0; i + step < np; i += 2 * step) cf__acc_merge(&tree[i][j], &tree[i + step][j], &d);
                }
                for (int j = 0; j < nmemb; j++) {
                    const cf__acc *ms[2] = { &lin[j], &tree[0][j] };
                    for (int m = 0; m < 2; m++) {
                        const cf__acc *x = ms[m];
                        int ok = x->count == one[j].count && x->nan == one[j].nan &&
                                 memcmp(&x->v, &one[j].v, sizeof x->v) == 0;
                        if (cls && cls != 'f') ok = ok && cf__acc_sum(x) == cf__acc_sum(&one[j]);   /* exact */
                        if (cls == 'f' && !same_double(cf__acc_sum(x), cf__acc_sum(&one[j])))
                            ok = ok && fabs(cf__acc_sum(x) - cf__acc_sum(&one[j])) <= 1e-12 * (fabs(cf__acc_sum(&one[j])) + 1e3 * (double)n);
                        if (!ok) {
                            fprintf(stderr, "merge %s nmemb %lld n %lld parts %d comp %d (%s): sum %.17g vs %.17g\n",
                                    toks[t], (long long)nmemb, (long long)n, np, j, m ? "tree" : "linear",
                                    cf__acc_sum(x), cf__acc_sum(&one[j]));
                            cf_test_failures++;
                        }
                    }
                }
            }
        }
    }
    free(buf);
}

/* ------------------------------------------------------------------ */
/* Layout                                                               */
/* ------------------------------------------------------------------ */

static void test_default_chunk_rows(void)
{
    CHECK_EQ_INT(cf__stats_default_chunk_rows(0), 1 << 20);
    CHECK_EQ_INT(cf__stats_default_chunk_rows(-5), 1 << 20);
    CHECK_EQ_INT(cf__stats_default_chunk_rows(1), 1 << 20);
    CHECK_EQ_INT(cf__stats_default_chunk_rows(8), 1 << 20);     /* exactly 8 MiB */
    CHECK_EQ_INT(cf__stats_default_chunk_rows(9), 1 << 19);
    CHECK_EQ_INT(cf__stats_default_chunk_rows(16), 1 << 19);
    CHECK_EQ_INT(cf__stats_default_chunk_rows(24), 1 << 18);    /* f8 x 3 */
    CHECK_EQ_INT(cf__stats_default_chunk_rows(12), 1 << 19);    /* f4 x 3 */
    CHECK_EQ_INT(cf__stats_default_chunk_rows(1 << 23), 1);
    CHECK_EQ_INT(cf__stats_default_chunk_rows((1 << 23) - 1), 1);
    CHECK_EQ_INT(cf__stats_default_chunk_rows(1 << 22), 2);
    CHECK_EQ_INT(cf__stats_default_chunk_rows(INT64_MAX), 1);
    for (int64_t rb = 1; rb < 100000; rb = rb * 3 + 1) {
        int64_t r = cf__stats_default_chunk_rows(rb);
        CHECK(r >= 1 && r <= (1 << 20) && (r & (r - 1)) == 0);
        CHECK(r == 1 || r * rb <= (8 << 20));
        CHECK(r == (1 << 20) || 2 * r * rb > (8 << 20));
    }
}

static void make_header(cf__header *h, const char *tok, int64_t nmemb, int64_t nfile, const int64_t *rows)
{
    cf_error e;
    memset(h, 0, sizeof *h);
    h->dtype = dt(tok);
    h->nmemb = nmemb;
    if (cf__header_alloc(h, nfile, "hdr", &e)) abort();
    for (int64_t b = 0; b < nfile; b++) {
        h->rows[b] = rows[b];
        h->sums[b] = (uint32_t)(1000 + 17 * b);
    }
}

static void test_layout_and_grow(void)
{
    cf_error err;
    cf__header h;
    int64_t rows[6] = { 0, 5, 10, 3, 0, 4 };
    make_header(&h, "<f8", 3, 4, rows);
    cf__stats s;
    CHECK_OK(cf__stats_alloc(&s, &h, 4, "col", &err), &err);
    CHECK_EQ_INT(s.chunk_rows, 4);
    CHECK_EQ_INT(s.nmemb, 3);
    CHECK_EQ_INT(s.nfile, 4);
    CHECK_EQ_INT(cf__stats_blob_chunks(&s, 0), 0);
    CHECK_EQ_INT(cf__stats_blob_chunks(&s, 1), 2);   /* 4 + 1 rows: partial last chunk */
    CHECK_EQ_INT(cf__stats_blob_chunks(&s, 2), 3);
    CHECK_EQ_INT(cf__stats_blob_chunks(&s, 3), 1);
    CHECK_EQ_INT(cf__stats_blob_chunks(&s, 4), 0);   /* out of range */
    CHECK_EQ_INT(cf__stats_blob_chunks(&s, -1), 0);
    CHECK_EQ_INT(s.first_chunk[0], 0);
    CHECK_EQ_INT(s.first_chunk[1], 0);
    CHECK_EQ_INT(s.first_chunk[2], 2);
    CHECK_EQ_INT(s.first_chunk[3], 5);
    CHECK_EQ_INT(s.first_chunk[4], 6);
    CHECK(s.valid[0] == 1 && s.valid[1] == 0 && s.valid[2] == 0 && s.valid[3] == 0);
    /* nothing is held until asked for */
    for (int64_t b = 0; b < 4; b++) CHECK(s.blob[b].nrun == 0 && cf__stats_peek(&s, b, 0) == NULL);
    CHECK(cf__stats_blob_whole(&s, 0) && !cf__stats_blob_whole(&s, 1));
    CHECK(cf__stats_chunk(&s, 0, 0) == NULL);
    CHECK(cf__stats_chunk(&s, 3, 1) == NULL);
    CHECK(cf__stats_chunk(&s, 2, -1) == NULL);
    CHECK(cf__stats_chunk(&s, 2, 3) == NULL);
    CHECK(cf__stats_chunks(&s, 2, 1, 1) == NULL);
    /* chunk 1 of blob 1: its window is that chunk alone, empty */
    cf__acc *a = cf__stats_chunk(&s, 1, 1);
    CHECK(a != NULL && s.blob[1].nrun == 1 && s.blob[1].run[0].lo == 1 && s.blob[1].run[0].n == 1);
    CHECK(cf__stats_peek(&s, 1, 1) == a);
    CHECK(cf__stats_peek(&s, 1, 0) == NULL && !cf__stats_blob_whole(&s, 1));
    for (int j = 0; j < 3; j++) CHECK(a[j].count == 0 && a[j].v.f.min == INFINITY);
    a[2].count = 7;
    /* growing down to chunk 0 keeps chunk 1's accumulators */
    CHECK(cf__stats_chunk(&s, 1, 0) != NULL && s.blob[1].nrun == 1 && s.blob[1].run[0].lo == 0 &&
          s.blob[1].run[0].n == 2);
    CHECK(cf__stats_peek(&s, 1, 1)[2].count == 7 && cf__stats_peek(&s, 1, 0)[2].count == 0);
    CHECK(cf__stats_blob_whole(&s, 1));
    cf__stats_reset_blob(&s, 1);
    CHECK(s.blob[1].nrun == 0 && cf__stats_peek(&s, 1, 1) == NULL);
    /* a window grows by its own size, within the blob */
    CHECK(cf__stats_chunk(&s, 2, 0) != NULL && s.blob[2].run[0].n == 1);
    CHECK(cf__stats_chunk(&s, 2, 1) != NULL && s.blob[2].nrun == 1 && s.blob[2].run[0].n == 3);
    cf__stats_lose_blob(&s, 3);
    CHECK(cf__stats_chunk(&s, 3, 0) == NULL && !cf__stats_blob_whole(&s, 3));
    cf__stats_reset_blob(&s, 3);
    CHECK(cf__stats_chunk(&s, 3, 0) != NULL && cf__stats_blob_whole(&s, 3));
    cf__stats_reset_blob(&s, 2);
    cf__stats_reset_blob(&s, 3);

    /* fill blob 2 and mark it valid; grow by two blobs */
    double data[12];
    for (int i = 0; i < 12; i++) data[i] = i;
    for (int64_t k = 0; k < 3; k++) cf__acc_add(cf__stats_chunk(&s, 2, k), 3, 0, data, 12, &h.dtype);
    s.valid[2] = 1;
    cf__acc keep[9];
    memcpy(keep, cf__stats_chunk(&s, 2, 0), sizeof keep);
    cf__header h2;
    make_header(&h2, "<f8", 3, 6, rows);
    CHECK_OK(cf__stats_grow(&s, &h2, 4, "col", &err), &err);
    CHECK_EQ_INT(s.nfile, 6);
    CHECK_EQ_INT(cf__stats_blob_chunks(&s, 5), 1);
    CHECK(memcmp(cf__stats_chunk(&s, 2, 0), keep, sizeof keep) == 0);
    CHECK(s.valid[0] == 1 && s.valid[1] == 0 && s.valid[2] == 1 && s.valid[3] == 0);
    CHECK(s.valid[4] == 1 && s.valid[5] == 0);   /* new: empty blob valid, others not */
    CHECK(cf__stats_chunk(&s, 5, 0)->count == 0);

    /* a blob whose size changed under the statistics loses them */
    h2.rows[2] = 20;
    CHECK_OK(cf__stats_grow(&s, &h2, 6, "col", &err), &err);
    CHECK_EQ_INT(cf__stats_blob_chunks(&s, 2), 5);
    CHECK(s.valid[2] == 0);
    CHECK(cf__stats_chunk(&s, 2, 0)->count == 0);
    cf__stats_free(&s);
    cf__stats_free(&s);   /* idempotent */

    /* nmemb 0 and nfile 0 columns */
    cf__header_free(&h2);
    make_header(&h2, "<i8", 0, 2, rows + 1);
    CHECK_OK(cf__stats_alloc(&s, &h2, 2, "col", &err), &err);
    CHECK_EQ_INT(cf__stats_blob_chunks(&s, 0), 3);
    CHECK(cf__stats_chunk(&s, 0, 1) != NULL);
    cf__stats_free(&s);
    cf__header_free(&h2);
    make_header(&h2, "<i8", 1, 0, rows);
    CHECK_OK(cf__stats_alloc(&s, &h2, 2, "col", &err), &err);
    CHECK_EQ_INT(s.first_chunk[0], 0);
    char *text;
    size_t len;
    CHECK_OK(cf__stats_format(&s, &h2, &text, &len, "col", &err), &err);
    CHECK_EQ_STR(text, "COLFILE-STATS: 1\nDTYPE: <i8\nNMEMB: 1\nNFILE: 0\nCHUNK: 2\n");
    cf__stats_free(&s);
    CHECK_OK(cf__stats_parse(&s, &h2, text, len, "col", &err), &err);
    CHECK_EQ_INT(s.chunk_rows, 2);
    free(text);
    cf__stats_free(&s);
    cf__header_free(&h2);

    CHECK_FAILS(cf__stats_alloc(&s, &h, 0, "col", &err), CF_EARG, &err, "col");
    /* too many chunks to count */
    int64_t big[2] = { INT64_MAX, INT64_MAX };
    make_header(&h2, "<f8", 3, 2, big);
    CHECK_FAILS(cf__stats_alloc(&s, &h2, 1, "col", &err), CF_ENOMEM, &err, "col");
    cf__header_free(&h2);
    /* a layout of 2^62 chunks costs nothing until chunks are written, and
     * then only those */
    int64_t huge[2] = { (int64_t)1 << 62, 5 };
    make_header(&h2, "<f8", 1, 2, huge);
    CHECK_OK(cf__stats_alloc(&s, &h2, 1, "col", &err), &err);
    CHECK_EQ_INT(cf__stats_blob_chunks(&s, 0), (int64_t)1 << 62);
    int64_t last = ((int64_t)1 << 62) - 1;
    CHECK(cf__stats_chunk(&s, 0, last) != NULL && s.blob[0].nrun == 1 && s.blob[0].run[0].n == 1);
    CHECK(cf__stats_chunk(&s, 1, 0) != NULL && s.blob[1].run[0].n == 1);
    /* chunks far apart are held apart: the first, the last, one between */
    CHECK(cf__stats_chunk(&s, 0, 0) != NULL && s.blob[0].nrun == 2);
    CHECK(cf__stats_chunk(&s, 0, (int64_t)1 << 40) != NULL && s.blob[0].nrun == 3);
    CHECK(s.blob[0].run[0].lo == 0 && s.blob[0].run[1].lo == (int64_t)1 << 40 && s.blob[0].run[2].lo == last);
    cf__stats_chunk(&s, 0, 0)->count = 11;
    cf__stats_chunk(&s, 0, last)->count = 12;
    /* a walk up from chunk 0 grows one run, by doubling */
    for (int64_t k = 1; k < 1000; k++) {
        cf__acc *x = cf__stats_chunk(&s, 0, k);
        CHECK(x != NULL);
        if (x) x->count = k;
    }
    CHECK(s.blob[0].nrun == 3 && s.blob[0].run[0].n >= 1000 && s.blob[0].run[0].n <= 2048);
    CHECK(cf__stats_peek(&s, 0, 0)->count == 11 && cf__stats_peek(&s, 0, 999)->count == 999);
    CHECK(cf__stats_peek(&s, 0, last)->count == 12 && cf__stats_peek(&s, 0, last - 1) == NULL);
    /* a walk down from the last chunk too */
    for (int64_t k = last - 1; k > last - 1000; k--) CHECK(cf__stats_chunk(&s, 0, k) != NULL);
    CHECK(s.blob[0].nrun == 3 && s.blob[0].run[2].n <= 2048 && s.blob[0].run[2].lo + s.blob[0].run[2].n == last + 1);
    CHECK(cf__stats_peek(&s, 0, last)->count == 12);
    /* a run of 2^62 chunks cannot be held: refused before any allocation,
     * and the blob's statistics are lost (unknown) */
    CHECK(cf__stats_chunks(&s, 0, 500, last) == NULL);
    CHECK(s.blob[0].lost && s.blob[0].nrun == 0 && !cf__stats_blob_whole(&s, 0));
    cf__stats_reset_blob(&s, 0);
    /* a range joining two runs merges them, keeping both */
    CHECK(cf__stats_chunk(&s, 0, 10) != NULL && cf__stats_chunk(&s, 0, 30) != NULL && s.blob[0].nrun == 2);
    cf__stats_chunk(&s, 0, 10)->count = 1;
    cf__stats_chunk(&s, 0, 30)->count = 3;
    CHECK(cf__stats_chunks(&s, 0, 5, 40) != NULL && s.blob[0].nrun == 1);
    CHECK(cf__stats_peek(&s, 0, 10)->count == 1 && cf__stats_peek(&s, 0, 30)->count == 3);
    CHECK(cf__stats_peek(&s, 0, 20)->count == 0);
    /* adjacent runs merge, so a blob covered is whole */
    cf__stats_reset_blob(&s, 1);
    CHECK(cf__stats_chunk(&s, 1, 4) != NULL && cf__stats_chunk(&s, 1, 0) != NULL);
    CHECK(cf__stats_chunks(&s, 1, 1, 4) != NULL && s.blob[1].nrun == 1 && cf__stats_blob_whole(&s, 1));
    CHECK(!cf__stats_blob_whole(&s, 0));
    cf__stats_free(&s);
    cf__header_free(&h2);
    cf__header_free(&h);
}

/* ------------------------------------------------------------------ */
/* The file                                                             */
/* ------------------------------------------------------------------ */

/* The example of docs/format.md 8.4: <f8 x 3, 5 rows in blobs of 2 and
 * 3, CHUNK 2, with a NaN, an infinity and zeros of both signs. */
static void golden_setup(cf__header *h, cf__stats *s, double rowsdata[5][3])
{
    cf_error err;
    static const double r[5][3] = {
        { 1.5, 2.0, -0.0 }, { 0.25, NAN, 0.0 }, { 10, 20, 30 }, { 11, 21, 31 }, { 12, INFINITY, 32.5 },
    };
    memcpy(rowsdata, r, sizeof r);
    int64_t rows[2] = { 2, 3 };
    make_header(h, "<f8", 3, 2, rows);
    /* the real byte sums of the little-endian bytes */
    unsigned char le[5][3][8];
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 3; j++) {
            uint64_t b = double_bits(r[i][j]);
            for (int k = 0; k < 8; k++) le[i][j][k] = (unsigned char)(b >> (8 * k));
        }
    h->sums[0] = cf__sysv_add(0, le[0], 2 * 24);
    h->sums[1] = cf__sysv_add(0, le[2], 3 * 24);
    if (cf__stats_alloc(s, h, 2, "col", &err)) abort();
    cf__dtype d = dt("<f8");
    cf__acc_add(cf__stats_chunk(s, 0, 0), 3, 0, le[0], 6, &d);
    cf__acc_add(cf__stats_chunk(s, 1, 0), 3, 0, le[2], 6, &d);
    cf__acc_add(cf__stats_chunk(s, 1, 1), 3, 0, le[4], 3, &d);
    s->valid[0] = s->valid[1] = 1;
}

static const char golden[] =
    "COLFILE-STATS: 1\n"
    "DTYPE: <f8\n"
    "NMEMB: 3\n"
    "NFILE: 2\n"
    "CHUNK: 2\n"
    "000000: 2 : %u\n"
    "0 0 count=2 nan=0 min=0.25 max=1.5 sum=1.75\n"
    "0 1 count=2 nan=1 min=2 max=2 sum=2\n"
    "0 2 count=2 nan=0 min=-0 max=0 sum=0\n"
    "000001: 3 : %u\n"
    "0 0 count=2 nan=0 min=10 max=11 sum=21\n"
    "0 1 count=2 nan=0 min=20 max=21 sum=41\n"
    "0 2 count=2 nan=0 min=30 max=31 sum=61\n"
    "1 0 count=1 nan=0 min=12 max=12 sum=12\n"
    "1 1 count=1 nan=0 min=inf max=inf sum=inf\n"
    "1 2 count=1 nan=0 min=32.5 max=32.5 sum=32.5\n";


/* The golden column (golden_setup) and its statistics text, formatted. */
static void golden_text(cf__header *h, cf__stats *s, double r[5][3], char **text, size_t *len)
{
    cf_error err;
    golden_setup(h, s, r);
    *text = NULL;
    CHECK_OK(cf__stats_format(s, h, text, len, "col", &err), &err);
}

/* The golden column with its statistics s and their text, and an empty
 * cf__stats p to parse that text into. */
typedef struct {
    cf__header h;
    cf__stats s, p;
    double r[5][3];
    char *text;
    size_t len;
} golden_parse;

static void golden_parse_setup(golden_parse *g)
{
    golden_text(&g->h, &g->s, g->r, &g->text, &g->len);
    memset(&g->p, 0, sizeof g->p);
}
static void test_format_golden(void)
{
    cf_error err;
    cf__header h;
    cf__stats s;
    double r[5][3];
    char *text;
    size_t len;
    golden_text(&h, &s, r, &text, &len);
    char want[1024];
    snprintf(want, sizeof want, golden, (unsigned)h.sums[0], (unsigned)h.sums[1]);
    CHECK_EQ_STR(text, want);
    CHECK_EQ_INT(len, strlen(want));
    if (getenv("CF_PRINT_GOLDEN")) fputs(text, stdout);

    /* a blob that is not valid is left out; so is one whose chunk count no
     * longer fits the header */
    s.valid[0] = 0;
    free(text);
    CHECK_OK(cf__stats_format(&s, &h, &text, &len, "col", &err), &err);
    CHECK(strstr(text, "000000:") == NULL && strstr(text, "000001: 3 :") != NULL);
    free(text);
    h.rows[1] = 7;
    CHECK_OK(cf__stats_format(&s, &h, &text, &len, "col", &err), &err);
    CHECK(strstr(text, "000001:") == NULL);
    free(text);
    h.rows[1] = 3;
    /* statistics of another layout */
    h.nmemb = 2;
    CHECK_FAILS(cf__stats_format(&s, &h, &text, &len, "col", &err), CF_EARG, &err, "col");
    h.nmemb = 3;
    cf__stats_free(&s);
    cf__header_free(&h);
}

/* Random statistics for the layout of h, every second blob valid. */
static void fill_random(cf__stats *s, const cf__header *h, int specials)
{
    const cf__dtype *d = &h->dtype;
    unsigned char *buf = malloc((size_t)(s->chunk_rows * h->nmemb * d->width) + 1);
    for (int64_t b = 0; b < h->nfile; b++) {
        int64_t nc = cf__stats_blob_chunks(s, b);
        for (int64_t k = 0; k < nc; k++) {
            int64_t r = h->rows[b] - k * s->chunk_rows;
            if (r > s->chunk_rows) r = s->chunk_rows;
            gen(buf, d, r * h->nmemb, 0, specials);
            cf__acc_add(cf__stats_chunk(s, b, k), h->nmemb, 0, buf, r * h->nmemb, d);
        }
        if (h->rows[b]) s->valid[b] = b % 2 == 0;
    }
    free(buf);
}

static int blob_same(cf__stats *a, cf__stats *b, int64_t blob)
{
    int64_t nc = cf__stats_blob_chunks(a, blob);
    if (nc != cf__stats_blob_chunks(b, blob)) return 0;
    for (int64_t k = 0; k < nc; k++)
        for (int64_t j = 0; j < a->nmemb; j++)
            if (!acc_same(&cf__stats_chunk(a, blob, k)[j], &cf__stats_chunk(b, blob, k)[j])) return 0;
    return 1;
}

static int blob_empty(cf__stats *s, const cf__dtype *d, int64_t blob)
{
    cf__acc e;
    cf__acc_init(&e, d);
    for (int64_t k = 0; k < cf__stats_blob_chunks(s, blob); k++)
        for (int64_t j = 0; j < s->nmemb; j++)
            if (!acc_same(&cf__stats_chunk(s, blob, k)[j], &e)) return 0;
    return 1;
}

static void test_round_trip(void)
{
    static const char *toks[] = { "<i1", ">i2", "<i4", "<i8", "<u1", ">u2", "<u4", ">u8", "<f2", "<f4",
                                  ">f8", "<c8", ">c16", "|b1", "|S3" };
    int64_t rows[5] = { 7, 0, 16, 1, 33 };
    for (size_t t = 0; t < sizeof toks / sizeof toks[0]; t++) {
        for (int64_t nmemb = 1; nmemb <= 3; nmemb += 2) {
            cf_error err;
            cf__header h;
            make_header(&h, toks[t], nmemb, 5, rows);
            cf__stats s, p;
            memset(&p, 0, sizeof p);
            CHECK_OK(cf__stats_alloc(&s, &h, 4, "col", &err), &err);
            fill_random(&s, &h, 1);
            char *text;
            size_t len;
            CHECK_OK(cf__stats_format(&s, &h, &text, &len, "col", &err), &err);
            CHECK_OK(cf__stats_parse(&p, &h, text, len, "col", &err), &err);
            CHECK_EQ_INT(p.chunk_rows, 4);
            CHECK_EQ_INT(p.nfile, 5);
            for (int64_t b = 0; b < 5; b++) {
                CHECK_EQ_INT(p.valid[b], s.valid[b]);
                if (s.valid[b]) CHECK(blob_same(&s, &p, b));
                else CHECK(blob_empty(&p, &h.dtype, b));
            }
            /* format(parse(format(s))) == format(s) */
            char *text2;
            size_t len2;
            CHECK_OK(cf__stats_format(&p, &h, &text2, &len2, "col", &err), &err);
            CHECK(len2 == len && memcmp(text, text2, len) == 0);
            /* parsing into statistics that are already allocated */
            CHECK_OK(cf__stats_parse(&p, &h, text2, len2, "col", &err), &err);
            CHECK(blob_same(&s, &p, 0));
            free(text);
            free(text2);
            cf__stats_free(&s);
            cf__stats_free(&p);
            cf__header_free(&h);
        }
    }
}

static void test_staleness(void)
{
    cf_error err;
    golden_parse gold;
    golden_parse_setup(&gold);

    /* blob 1's rawsum moved on (another tool wrote it) */
    gold.h.sums[1] += 1;
    CHECK_OK(cf__stats_parse(&gold.p, &gold.h, gold.text, gold.len, "col", &err), &err);
    CHECK(gold.p.valid[0] == 1 && gold.p.valid[1] == 0);
    CHECK(blob_same(&gold.s, &gold.p, 0));
    CHECK(blob_empty(&gold.p, &gold.h.dtype, 1));
    gold.h.sums[1] -= 1;

    /* blob 0 has another row count */
    gold.h.rows[0] = 3;
    CHECK_OK(cf__stats_parse(&gold.p, &gold.h, gold.text, gold.len, "col", &err), &err);
    CHECK(gold.p.valid[0] == 0 && gold.p.valid[1] == 1);
    CHECK_EQ_INT(cf__stats_blob_chunks(&gold.p, 0), 2);
    CHECK(blob_same(&gold.s, &gold.p, 1));
    gold.h.rows[0] = 2;

    /* the column grew by a blob: the old ones stay current */
    cf__header g;
    int64_t rows3[3] = { 2, 3, 4 };
    make_header(&g, "<f8", 3, 3, rows3);
    g.sums[0] = gold.h.sums[0];
    g.sums[1] = gold.h.sums[1];
    CHECK_OK(cf__stats_parse(&gold.p, &g, gold.text, gold.len, "col", &err), &err);
    CHECK(gold.p.valid[0] == 1 && gold.p.valid[1] == 1 && gold.p.valid[2] == 0);
    CHECK(blob_same(&gold.s, &gold.p, 1));
    cf__header_free(&g);

    /* another dtype or nmemb: everything invalid, not an error */
    static const char *other[] = { ">f8", "<f4", "<i8" };
    for (int i = 0; i < 3; i++) {
        int64_t rows2[2] = { 2, 3 };
        make_header(&g, other[i], 3, 2, rows2);
        g.sums[0] = gold.h.sums[0];
        g.sums[1] = gold.h.sums[1];
        CHECK_OK(cf__stats_parse(&gold.p, &g, gold.text, gold.len, "col", &err), &err);
        CHECK(gold.p.valid[0] == 0 && gold.p.valid[1] == 0 && gold.p.first_chunk != NULL);
        CHECK_EQ_INT(gold.p.chunk_rows, cf__stats_chunk_rows_for(5, 3, g.dtype.width)); /* the column's default */
        cf__header_free(&g);
    }
    gold.h.nmemb = 2;
    CHECK_OK(cf__stats_parse(&gold.p, &gold.h, gold.text, gold.len, "col", &err), &err);
    CHECK(gold.p.valid[0] == 0 && gold.p.valid[1] == 0 && gold.p.nmemb == 2);
    gold.h.nmemb = 3;

    free(gold.text);
    cf__stats_free(&gold.p);
    cf__stats_free(&gold.s);
    cf__header_free(&gold.h);
}

/* Parse `body` (after the five fixed lines of the golden column) and
 * return the rc; *p holds the result. */
static int parse_body(cf__stats *p, const cf__header *h, const char *head, const char *body, cf_error *err)
{
    char text[4096];
    snprintf(text, sizeof text, "%s%s", head, body);
    size_t n = strlen(text);
    char *exact = malloc(n ? n : 1);   /* exactly sized: ASan sees any overread */
    memcpy(exact, text, n);
    int rc = cf__stats_parse(p, h, exact, n, "dir/col/colfile-stats-v1", err);
    free(exact);
    return rc;
}

static int all_invalid(const cf__stats *p, const cf__header *h)
{
    if (!p->first_chunk || p->nfile != h->nfile || p->nmemb != h->nmemb) return 0;
    for (int64_t b = 0; b < h->nfile; b++)
        if (p->valid[b] != (h->rows[b] == 0)) return 0;
    for (int64_t b = 0; b < h->nfile; b++)
        if (p->blob[b].nrun) return 0;
    return 1;
}

static void test_parse_errors(void)
{
    cf_error err;
    cf__header h;
    cf__stats s, p;
    double r[5][3];
    golden_setup(&h, &s, r);
    memset(&p, 0, sizeof p);
    char head[256], b0[64], b1[64];
    snprintf(head, sizeof head, "COLFILE-STATS: 1\nDTYPE: <f8\nNMEMB: 3\nNFILE: 2\nCHUNK: 2\n");
    snprintf(b0, sizeof b0, "000000: 2 : %u\n", (unsigned)h.sums[0]);
    snprintf(b1, sizeof b1, "000001: 3 : %u\n", (unsigned)h.sums[1]);
    const char *c00 = "0 0 count=2 nan=0 min=0.25 max=1.5 sum=1.75\n";
    const char *c01 = "0 1 count=2 nan=1 min=2 max=2 sum=2\n";
    const char *c02 = "0 2 count=2 nan=0 min=-0 max=0 sum=0\n";
    char good0[512];
    snprintf(good0, sizeof good0, "%s%s%s%s", b0, c00, c01, c02);

    /* malformed: CF_EFORMAT naming the path and line, all invalid */
    static const struct { const char *text; const char *where; } bad[] = {
        { "", "colfile-stats-v1:1:" },
        { "COLFILE-STATS: 2\n", ":1:" },
        { "COLFILE-STATS: 1", ":1:" },
        { "COLFILE-STATS: 1\nDTYPE: <f8\n", ":3:" },
        { "COLFILE-STATS: 1\nDTYPE: <f8\nNMEMB: x\nNFILE: 2\nCHUNK: 2\n", ":3:" },
        { "COLFILE-STATS: 1\nDTYPE: <f8\nNMEMB: 3\nNFILE: 99999999\nCHUNK: 2\n", ":4:" },
        { "COLFILE-STATS: 1\nDTYPE: <f8\nNMEMB: 3\nNFILE: 2\nCHUNK: 0\n", ":5:" },
        { "COLFILE-STATS: 1\nDTYPE: <f8\nNMEMB: 3\nNFILE: 2\nCHUNK: 99999999999999999999\n", ":5:" },
        { "COLFILE-STATS: 1\nDTYPE: <f8\nNMEMB: 3\nNFILE: 2\nCHUNK: -2\n", ":5:" },
        { "COLFILE-STATS: 1\nDTYPE: <f8\nNMEMB: 3\nNFILE: 2\nCHUNK: 2 \n", ":5:" },
        { "COLFILE-STATS: 1\nNMEMB: 3\nNFILE: 2\nCHUNK: 2\n", ":2:" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK_FAILS(parse_body(&p, &h, bad[i].text, "", &err), CF_EFORMAT, &err, bad[i].where);
        CHECK(all_invalid(&p, &h));
    }
    static const struct { const char *body; const char *where; } badbody[] = {
        { "0 0 count=2 nan=0 min=0.25 max=1.5 sum=1.75\n", ":6: chunk line before" },
        { "000002: 1 : 0\n", ":6: blob 2 is not below NFILE" },
        { "000000: 2 : x\n", ":6: bad blob line" },
        { "000000: 2\n", ":6: bad blob line" },
        { "000000: 2 : 4294967296\n", ":6: bad blob line" },
        { "000000: 2 : 5 : 6\n", ":6: bad blob line" },
        { "00000000000000000: 2 : 5\n", ":6: bad blob line" },
        { "000000: 2 : 5\n0 3 count=2 nan=0 min=1 max=1 sum=2\n", ":7: chunk 0 component 3" },
        { "000000: 2 : 5\n1 0 count=2 nan=0 min=1 max=1 sum=2\n", ":7: chunk 1 component 0" },
        { "000000: 2 : 5\n0 0 count=2 nan=0 min=1 max=1\n", ":7: missing field" },
        { "000000: 2 : 5\n0 0 count=2 nan=0 min=1 max=1 sum=2 sum=2\n", ":7: repeated field" },
        { "000000: 2 : 5\n0 0 count=2 nan=0 min=- max=1 sum=2\n", ":7: bad float" },
        { "000000: 2 : 5\n0 0 count=2 nan=0 min=nan max=1 sum=2\n", ":7: bad float" },
        { "000000: 2 : 5\n0 0 count=2 nan=0 min=0x1p3 max=1 sum=2\n", ":7: bad float" },
        { "000000: 2 : 5\n0 0 count=2 nan=0 min=1,5 max=1 sum=2\n", ":7: bad float" },
        { "000000: 2 : 5\n0 0 count=-2 nan=0 min=1 max=1 sum=2\n", ":7: bad count" },
        { "000000: 2 : 5\n0 0 count=2 nan=0 min=1 max=1 sum=2x\n", ":7: bad sum" },
        { "000000: 2 : 5\n0 0 count=2 nan=0 min=1 max=1 sum=\n", ":7: empty value" },
        { "000000: 2 : 5\n0 0 count=2 nan=0 min=1 max=1 junk\n", ":7: expected name=value" },
        { "000000: 2 : 5\n0 0count=2 nan=0 min=1 max=1 sum=1\n", ":7:" },
        { "000000: 2 : 5\n0 0 count=2 nan=0 min=1 max=1 sum=1\n0 x\n", ":8: bad component" },
        { "000000: 2 : 5\n0 0 count=99999999999999999999 nan=0 min=1 max=1 sum=1\n", ":7: bad count" },
    };
    for (size_t i = 0; i < sizeof badbody / sizeof badbody[0]; i++) {
        CHECK_FAILS(parse_body(&p, &h, head, badbody[i].body, &err), CF_EFORMAT, &err, badbody[i].where);
        CHECK(all_invalid(&p, &h));
        CHECK_EQ_INT(p.chunk_rows, 2);
    }
    /* an error after a good blob still leaves everything invalid */
    char text[1024];
    snprintf(text, sizeof text, "%s0 0 x\n", good0);
    CHECK_FAILS(parse_body(&p, &h, head, text, &err), CF_EFORMAT, &err, ":10:");
    CHECK(all_invalid(&p, &h));
    /* integer kinds: values out of range */
    cf__header hi;
    int64_t one = 1;
    make_header(&hi, "<i1", 1, 1, &one);
    char ihead[128];
    snprintf(ihead, sizeof ihead, "COLFILE-STATS: 1\nDTYPE: <i1\nNMEMB: 1\nNFILE: 1\nCHUNK: 4\n000000: 1 : %u\n",
             (unsigned)hi.sums[0]);
    CHECK_OK(parse_body(&p, &hi, ihead, "0 0 count=1 nan=0 min=-9223372036854775808 max=-5 sum=-5\n", &err), &err);
    CHECK(p.valid[0] == 1 && cf__stats_peek(&p, 0, 0)->v.i.min == INT64_MIN);
    CHECK_FAILS(parse_body(&p, &hi, ihead, "0 0 count=1 nan=0 min=-9223372036854775809 max=-5 sum=-5\n", &err),
                CF_EFORMAT, &err, ":7: bad integer");
    CHECK_FAILS(parse_body(&p, &hi, ihead, "0 0 count=1 nan=0 min=1.5 max=2 sum=3\n", &err), CF_EFORMAT, &err,
                ":7: bad integer");
    cf__header_free(&hi);

    /* handled without an error: the blob concerned is not trusted */
    const char *bodies[8];
    char bufs[8][1024];
    snprintf(bufs[0], sizeof bufs[0], "%s%s%s", b0, c00, c01);                     /* missing */
    snprintf(bufs[1], sizeof bufs[1], "%s%s%s%s%s", b0, c00, c01, c02, c02);       /* repeated */
    snprintf(bufs[2], sizeof bufs[2], "%s%s%s%s", b0, c01, c00, c02);               /* out of order */
    snprintf(bufs[3], sizeof bufs[3], "%s%s", good0, good0);                        /* blob twice */
    snprintf(bufs[4], sizeof bufs[4], "%s0 0 count=3 nan=0 min=0.25 max=1.5 sum=1.75\n%s%s", b0, c01, c02);
    snprintf(bufs[5], sizeof bufs[5], "%s0 0 count=2 nan=3 min=0.25 max=1.5 sum=1.75\n%s%s", b0, c01, c02);
    snprintf(bufs[6], sizeof bufs[6], "%s0 0 count=2 nan=0 min=2 max=1.5 sum=1.75\n%s%s", b0, c01, c02);
    snprintf(bufs[7], sizeof bufs[7], "%s0 0 count=2 nan=2 min=0 max=0 sum=0\n%s%s", b0, c01, c02);
    for (int i = 0; i < 8; i++) bodies[i] = bufs[i];
    for (int i = 0; i < 8; i++) {
        CHECK_OK(parse_body(&p, &h, head, bodies[i], &err), &err);
        if (p.valid[0] != 0 || !blob_empty(&p, &h.dtype, 0)) {
            fprintf(stderr, "dodgy body %d was trusted\n", i);
            cf_test_failures++;
        }
    }

    /* tolerated: unknown lines and fields, CRLF, blobs in any order, blobs
     * beyond the header, blank lines, a torn last line */
    {
        char *full;
        size_t len;
        CHECK_OK(cf__stats_format(&s, &h, &full, &len, "col", &err), &err);
        /* reorder: blob 1 first, blob 0 second, CRLF everywhere, extras */
        const char *at1 = strstr(full, "000001:");
        const char *body0 = strstr(full, "000000:");
        char reordered[2048];
        size_t n = 0;
        n += (size_t)snprintf(reordered + n, sizeof reordered - n, "%.*s", (int)(body0 - full), full);
        n += (size_t)snprintf(reordered + n, sizeof reordered - n, "FUTURE-KEY: yes\n\n%s", at1);
        n += (size_t)snprintf(reordered + n, sizeof reordered - n, "%.*s", (int)(at1 - body0), body0);
        n += (size_t)snprintf(reordered + n, sizeof reordered - n, "zz unknown\n0 0 count=2 nan=0 min=0.25");
        char crlf[4096];
        size_t m = 0;
        for (size_t i = 0; i < n; i++) {
            if (reordered[i] == '\n') crlf[m++] = '\r';
            crlf[m++] = reordered[i];
        }
        char *exact = malloc(m);
        memcpy(exact, crlf, m);
        CHECK_OK(cf__stats_parse(&p, &h, exact, m, "col", &err), &err);
        CHECK(p.valid[0] == 1 && p.valid[1] == 1);
        CHECK(blob_same(&s, &p, 0) && blob_same(&s, &p, 1));
        free(exact);
        /* unknown fields are skipped */
        char *f = strstr(full, "0 1 count=2 nan=1");
        char withextra[2048];
        snprintf(withextra, sizeof withextra, "%.*s0 1 p99=7 count=2 nan=1%s", (int)(f - full), full,
                 f + strlen("0 1 count=2 nan=1"));
        CHECK_OK(cf__stats_parse(&p, &h, withextra, strlen(withextra), "col", &err), &err);
        CHECK(p.valid[0] == 1 && blob_same(&s, &p, 0));
        /* a file of a wider column (NFILE 3, blob 2 unknown to h) */
        char wider[2048];
        char *nf = strstr(full, "NFILE: 2");
        snprintf(wider, sizeof wider, "%.*sNFILE: 3%s000002: 1 : 7\n0 0 count=1 nan=0 min=1 max=1 sum=1\n"
                 "0 1 count=1 nan=0 min=1 max=1 sum=1\n0 2 count=1 nan=0 min=1 max=1 sum=1\n",
                 (int)(nf - full), full, nf + strlen("NFILE: 2"));
        CHECK_OK(cf__stats_parse(&p, &h, wider, strlen(wider), "col", &err), &err);
        CHECK(p.valid[0] == 1 && p.valid[1] == 1 && p.nfile == 2);
        free(full);
    }

    /* a CHUNK that would need far more statistics than the text holds is
     * refused before anything that size is allocated */
    cf__header big;
    int64_t bigrows = (int64_t)1 << 30;
    make_header(&big, "<f8", 3, 1, &bigrows);
    CHECK_FAILS(parse_body(&p, &big, "COLFILE-STATS: 1\nDTYPE: <f8\nNMEMB: 3\nNFILE: 1\nCHUNK: 1\n", "", &err),
                CF_EFORMAT, &err, ":5: CHUNK 1");
    CHECK(p.first_chunk != NULL && p.valid[0] == 0);
    CHECK_EQ_INT(p.chunk_rows, 1 << 16);   /* the default layout instead */
    CHECK_EQ_INT(cf__stats_blob_chunks(&p, 0), 1 << 14);
    /* a CHUNK smaller than the default is fine when the layout is small */
    CHECK_OK(parse_body(&p, &h, "COLFILE-STATS: 1\nDTYPE: <f8\nNMEMB: 3\nNFILE: 2\nCHUNK: 1\n", "", &err), &err);
    CHECK_EQ_INT(p.chunk_rows, 1);
    cf__header_free(&big);

    /* NULL text */
    CHECK_FAILS(cf__stats_parse(&p, &h, NULL, 0, "col", &err), CF_EFORMAT, &err, "col:1:");
    CHECK(all_invalid(&p, &h));

    cf__stats_free(&p);
    cf__stats_free(&s);
    cf__header_free(&h);
}

/* Every prefix of a file parses without reading past it, and whatever is
 * trusted afterwards is exactly what was written. */
static void truncations(const cf__header *h, cf__stats *s)
{
    cf_error err;
    char *text;
    size_t len;
    CHECK_OK(cf__stats_format(s, h, &text, &len, "col", &err), &err);
    cf__stats p;
    memset(&p, 0, sizeof p);
    int trusted_full = 0;
    for (size_t l = 0; l <= len; l++) {
        char *cut = malloc(l ? l : 1);
        memcpy(cut, text, l);
        int rc = cf__stats_parse(&p, h, cut, l, "col", &err);
        if (rc != 0 && rc != CF_EFORMAT) {
            fprintf(stderr, "prefix %zu: rc %d\n", l, rc);
            cf_test_failures++;
        }
        if (!p.first_chunk || p.nfile != h->nfile) {
            fprintf(stderr, "prefix %zu: statistics not allocated\n", l);
            cf_test_failures++;
        }
        for (int64_t b = 0; p.first_chunk && b < h->nfile; b++) {
            if (p.valid[b] && h->rows[b] && (!s->valid[b] || !blob_same(s, &p, b))) {
                fprintf(stderr, "prefix %zu: blob %lld trusted but wrong\n", l, (long long)b);
                cf_test_failures++;
            }
            if (l == len && p.valid[b] != s->valid[b]) cf_test_failures++;
            trusted_full += l == len && p.valid[b];
        }
        free(cut);
    }
    CHECK(trusted_full > 0);
    free(text);
    cf__stats_free(&p);
}

static void test_truncations(void)
{
    cf__header h;
    cf__stats s;
    double r[5][3];
    golden_setup(&h, &s, r);
    truncations(&h, &s);
    cf__stats_free(&s);
    cf__header_free(&h);

    static const char *toks[] = { "<i8", ">u1", "<f4", "<c16", "|S2" };
    int64_t rows[4] = { 5, 0, 9, 2 };
    for (size_t t = 0; t < sizeof toks / sizeof toks[0]; t++) {
        cf_error err;
        make_header(&h, toks[t], 2, 4, rows);
        CHECK_OK(cf__stats_alloc(&s, &h, 4, "col", &err), &err);
        fill_random(&s, &h, 1);
        truncations(&h, &s);
        cf__stats_free(&s);
        cf__header_free(&h);
    }
}

/* Garbage, and damaged files, never crash; the answer is always an
 * allocated, usable cf__stats. */
static void test_random_bytes(void)
{
    cf_error err;
    golden_parse gold;
    golden_parse_setup(&gold);
    static const char alphabet[] = "0123456789abcdefABCDEF:- .=\n\r\tcountnasumixCOLFIE-STAT:DYPMBNKH1";
    for (int iter = 0; iter < 20000; iter++) {
        size_t n;
        char *buf;
        if (iter % 2) {
            /* pure noise, sometimes behind the real fixed lines */
            n = (size_t)rnd_below(300);
            size_t headlen = iter % 4 == 1 ? (size_t)(strstr(gold.text, "000000") - gold.text) : 0;
            buf = malloc(headlen + n + 1);
            memcpy(buf, gold.text, headlen);
            for (size_t i = 0; i < n; i++)
                buf[headlen + i] = iter % 8 == 1 ? (char)rnd() : alphabet[rnd_below(sizeof alphabet - 1)];
            n += headlen;
        } else {
            /* the real file with a few bytes changed, inserted or removed */
            buf = malloc(gold.len + 8);
            memcpy(buf, gold.text, gold.len);
            n = gold.len;
            int edits = (int)rnd_below(4) + 1;
            for (int e = 0; e < edits; e++) {
                size_t at = (size_t)rnd_below(n ? n : 1);
                char c = rnd_below(3) ? alphabet[rnd_below(sizeof alphabet - 1)] : (char)rnd();
                switch (rnd_below(3)) {
                case 0: if (n) buf[at] = c; break;
                case 1: memmove(buf + at + 1, buf + at, n - at); buf[at] = c; n++; break;
                default: if (n) { memmove(buf + at, buf + at + 1, n - at - 1); n--; } break;
                }
            }
        }
        char *exact = malloc(n ? n : 1);
        memcpy(exact, buf, n);
        free(buf);
        int rc = cf__stats_parse(&gold.p, &gold.h, exact, n, "col", &err);
        free(exact);
        if ((rc != 0 && rc != CF_EFORMAT) || !gold.p.first_chunk || gold.p.nfile != 2) {
            fprintf(stderr, "iteration %d: rc %d\n", iter, rc);
            cf_test_failures++;
            break;
        }
        if (rc == CF_EFORMAT && (strncmp(err.message, "col:", 4) != 0 || !all_invalid(&gold.p, &gold.h))) {
            fprintf(stderr, "iteration %d: %s\n", iter, err.message);
            cf_test_failures++;
            break;
        }
    }
    free(gold.text);
    cf__stats_free(&gold.p);
    cf__stats_free(&gold.s);
    cf__header_free(&gold.h);
}

/* Numbers in the file do not follow the program's locale. */
static void test_locale_independent(void)
{
    const char *names[] = { "de_DE.UTF-8", "de_DE.utf8", "fr_FR.UTF-8", "fr_FR.utf8", "de_DE", NULL };
    const char *got = NULL;
    for (int i = 0; names[i] && !got; i++) got = setlocale(LC_NUMERIC, names[i]);
    cf_error err;
    golden_parse gold;
    golden_parse_setup(&gold);
    CHECK(strstr(gold.text, "sum=1.75") != NULL);
    CHECK_OK(cf__stats_parse(&gold.p, &gold.h, gold.text, gold.len, "col", &err), &err);
    CHECK(gold.p.valid[0] && blob_same(&gold.s, &gold.p, 0));
    setlocale(LC_NUMERIC, "C");
    if (!got) printf("(no comma-decimal locale installed: ran under C only)\n");
    free(gold.text);
    cf__stats_free(&gold.p);
    cf__stats_free(&gold.s);
    cf__header_free(&gold.h);
}

/* The file's doubles are printf's "%.17g" (C locale), also where stats_text.c
 * computes the digits itself: every magnitude, integers, values next to
 * powers of ten, ties (short binary fractions), floats widened. */
static void check_fmt(double v, int *bad)
{
    char got[40], want[40];
    cf__stats_fmt_double(got, 32, v);
    if (v != v) snprintf(want, sizeof want, "nan");
    else if (isinf(v)) snprintf(want, sizeof want, v > 0 ? "inf" : "-inf");
    else snprintf(want, sizeof want, "%.17g", v);
    if (strcmp(got, want) != 0 && (*bad)++ < 10) {
        fprintf(stderr, "fmt %a: got %s, want %s\n", v, got, want);
        cf_test_failures++;
    }
}

static void test_fmt_double(void)
{
    int bad = 0;
    static const double fixed[] = { 0.0, -0.0, 1.0, -1.0, 0.1, 0.25, 1.5, 1e-11, 9.9999999999999994e-12, 1e-5,
                                    1e-4, 0.001, 1e16, 1e17, 99999999999999999.0, 9007199254740993.0,
                                    123456789012345678.0, 1e300, 5e-324, 2.2250738585072014e-308, NAN, INFINITY,
                                    -INFINITY, 0.30000000000000004, 1.0000000000000001e+300, 32.5, 1149.0 };
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) {
        check_fmt(fixed[i], &bad);
        check_fmt(-fixed[i], &bad);
    }
    for (int e = -330; e <= 310; e++) {
        double p = pow(10.0, e);
        check_fmt(p, &bad);
        check_fmt(nextafter(p, 0), &bad);
        check_fmt(nextafter(p, INFINITY), &bad);
        check_fmt(-nextafter(p, INFINITY), &bad);
    }
    for (int i = 0; i < 400000; i++) {
        double v;
        switch (i % 6) {
        case 0: v = u64_as_double(rnd()); break;                                  /* any bits */
        case 1: v = ldexp(rnd_unit() + 0.5, (int)rnd_below(140) - 70); break;     /* stats' range */
        case 2: /* integers, up to 2^64 */
            v = i % 4 ? (double)(int64_t)(rnd() >> rnd_below(64)) : (double)(rnd() >> rnd_below(12));
            break;
        case 3: v = ldexp((double)(rnd() >> (11 + rnd_below(50))), -(int)rnd_below(60)); break; /* ties */
        case 4: v = (double)(float)((rnd_unit() - 0.5) * pow(10.0, (double)rnd_below(30) - 12)); break;
        default: v = (rnd_unit() - 0.5) * pow(10.0, (double)rnd_below(40) - 15); break;
        }
        if (rnd() & 1) v = -v;
        check_fmt(v, &bad);
    }
}

CF_TESTS(CF_TEST(test_class_and_init), CF_TEST(test_every_dtype), CF_TEST(test_wide_vectors),
         CF_TEST(test_component_offset), CF_TEST(test_float_specials), CF_TEST(test_float_rows), CF_TEST(test_every_half),
         CF_TEST(test_int_sums), CF_TEST(test_merge_associativity), CF_TEST(test_merge_counts_saturate),
         CF_TEST(test_default_chunk_rows),
         CF_TEST(test_layout_and_grow), CF_TEST(test_format_golden), CF_TEST(test_round_trip),
         CF_TEST(test_staleness), CF_TEST(test_parse_errors), CF_TEST(test_truncations),
         CF_TEST(test_random_bytes), CF_TEST(test_locale_independent), CF_TEST(test_fmt_double))
