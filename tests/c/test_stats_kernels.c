/* test_stats_kernels.c - the statistics kernels of one value type
 * (src/stats/stats_kernels.c) and the in-place folders of rows of a few
 * floats (src/stats/stats_rows.c), called directly and compared with a
 * plain loop over the same values: count, NaN count, min, max (the sign
 * of zero included) and sum. */
#include <math.h>

#include "harness.h"
#include "stats_impl.h"

static int have_avx2(void)
{
#if defined(CF__STATS_AVX2)
    return __builtin_cpu_supports("avx2") ? 1 : 0;
#else
    return 0;
#endif
}

/* The plain fold of doubles: what every path must agree with. */
static void plain_f(cf__acc *a, const double *x, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        a->count++;
        if (x[i] != x[i]) {
            a->nan++;
            continue;
        }
        cf__xsum_add_f8(&a->xs, x[i]);
        if (x[i] < a->v.f.min || (x[i] == a->v.f.min && signbit(x[i]) && !signbit(a->v.f.min))) a->v.f.min = x[i];
        if (x[i] > a->v.f.max || (x[i] == a->v.f.max && !signbit(x[i]) && signbit(a->v.f.max))) a->v.f.max = x[i];
    }
}

/* Float kernels and row folders keep count, nan, min and max; the sums
 * are added exactly before them (cf__acc_add_simd; test_stats, test_xsum). */
static int same_f(const cf__acc *a, const cf__acc *b)
{
    return a->count == b->count && a->nan == b->nan && a->v.f.min == b->v.f.min && a->v.f.max == b->v.f.max &&
           signbit(a->v.f.min) == signbit(b->v.f.min) && signbit(a->v.f.max) == signbit(b->v.f.max);
}

static uint64_t rnd(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static void test_integer_kernels(void)
{
    enum { N = 5000 };
    static int32_t i4[N];
    static uint64_t u8[N];
    static int64_t i8[N];
    uint64_t s = 88172645463325252u;
    for (int k = 0; k < N; k++) {
        i4[k] = (int32_t)(uint32_t)rnd(&s);
        u8[k] = rnd(&s);
        i8[k] = (int64_t)(rnd(&s) >> 1) * (k % 2 ? -1 : 1);
    }
    for (int avx2 = 0; avx2 <= have_avx2(); avx2++) {
        cf__acc a;
        cf__acc_init_class(&a, 'i');
        cf__k_i4(&a, i4, N, avx2);
        int64_t mn = INT64_MAX, mx = INT64_MIN;
        double sum = 0;
        for (int k = 0; k < N; k++) {
            mn = i4[k] < mn ? i4[k] : mn;
            mx = i4[k] > mx ? i4[k] : mx;
            sum += i4[k];
        }
        CHECK_EQ_INT(a.count, N);
        CHECK_EQ_INT(a.nan, 0);
        CHECK_EQ_INT(a.v.i.min, mn);
        CHECK_EQ_INT(a.v.i.max, mx);
        CHECK(cf__acc_sum(&a) == sum); /* exact: well below 2^53 */

        cf__acc_init_class(&a, 'u');
        cf__k_u8(&a, u8, N, avx2);
        uint64_t umn = UINT64_MAX, umx = 0;
        for (int k = 0; k < N; k++) {
            umn = u8[k] < umn ? u8[k] : umn;
            umx = u8[k] > umx ? u8[k] : umx;
        }
        CHECK_EQ_INT(a.count, N);
        CHECK(a.v.u.min == umn && a.v.u.max == umx);

        cf__acc_init_class(&a, 'i');
        cf__k_i8(&a, i8, N, avx2);
        mn = INT64_MAX, mx = INT64_MIN;
        for (int k = 0; k < N; k++) {
            mn = i8[k] < mn ? i8[k] : mn;
            mx = i8[k] > mx ? i8[k] : mx;
        }
        CHECK(a.v.i.min == mn && a.v.i.max == mx);
        /* a second call folds into the same accumulator */
        cf__k_i8(&a, i8, 7, avx2);
        CHECK_EQ_INT(a.count, N + 7);
    }
}

static void test_bool_and_complex(void)
{
    uint8_t b[6] = { 0, 2, 0, 1, 0, 0 };
    cf__acc a;
    cf__acc_init_class(&a, 'u');
    cf__k_b1(&a, b, 6, 0);
    CHECK_EQ_INT(a.count, 6);
    CHECK(a.v.u.min == 0 && a.v.u.max == 1);
    CHECK(cf__acc_sum(&a) == 2);
    cf__acc_init_class(&a, 'u');
    cf__k_b1(&a, b + 1, 1, 0); /* all true */
    CHECK(a.v.u.min == 1 && a.v.u.max == 1);
    cf__stats_c16 c[3] = { { 1, 2 }, { NAN, 0 }, { 0, NAN } };
    cf__acc_init_class(&a, 0);
    cf__k_c16(&a, c, 3, 0);
    CHECK_EQ_INT(a.count, 3);
    CHECK_EQ_INT(a.nan, 2);
}

static void test_float_kernels(void)
{
    enum { N = 1003 };
    static double x[N];
    static float xf[N];
    uint64_t s = 2463534242u;
    for (int k = 0; k < N; k++) {
        x[k] = (double)(int64_t)(rnd(&s) % 2000001) / 1000.0 - 1000.0;
        if (k % 97 == 5) x[k] = NAN;
        xf[k] = (float)x[k];
    }
    for (int avx2 = 0; avx2 <= have_avx2(); avx2++) {
        cf__acc a, want;
        cf__acc_init_class(&a, 'f');
        cf__acc_init_class(&want, 'f');
        cf__k_f8(&a, x, N, avx2);
        plain_f(&want, x, N);
        CHECK(same_f(&a, &want));
        CHECK_EQ_INT(a.nan, (N + 91) / 97);

        double wide[N];
        for (int k = 0; k < N; k++) wide[k] = xf[k];
        cf__acc_init_class(&a, 'f');
        cf__acc_init_class(&want, 'f');
        cf__k_f4(&a, xf, N, avx2);
        plain_f(&want, wide, N);
        CHECK(same_f(&a, &want));
    }
}

static void test_signed_zeros_and_all_nan(void)
{
    /* min and max are zeros: -0.0 below +0.0, whatever the lanes saw */
    double z[40];
    for (int avx2 = 0; avx2 <= have_avx2(); avx2++) {
        for (int k = 0; k < 40; k++) z[k] = k == 33 ? -0.0 : 0.0;
        cf__acc a;
        cf__acc_init_class(&a, 'f');
        cf__k_f8(&a, z, 40, avx2);
        CHECK(a.v.f.min == 0 && signbit(a.v.f.min));
        CHECK(a.v.f.max == 0 && !signbit(a.v.f.max));
        for (int k = 0; k < 40; k++) z[k] = -0.0;
        cf__acc_init_class(&a, 'f');
        cf__k_f8(&a, z, 40, avx2);
        CHECK(signbit(a.v.f.min) && signbit(a.v.f.max));
        for (int k = 0; k < 40; k++) z[k] = NAN;
        cf__acc_init_class(&a, 'f');
        cf__k_f8(&a, z, 40, avx2);
        CHECK_EQ_INT(a.nan, 40);
        CHECK(a.v.f.min == INFINITY && a.v.f.max == -INFINITY && cf__acc_sum(&a) == 0);
    }
}

/* Rows of nmemb doubles, the first value being component c0: what the row
 * folders give per component equals the plain loop over the values they
 * consumed. */
static void check_rows(int nmemb, int c0, int avx2_path)
{
    enum { N = 3000 };
    static double x[N];
    uint64_t s = 1234567u + (uint64_t)nmemb;
    for (int k = 0; k < N; k++) x[k] = (double)(int64_t)(rnd(&s) % 100001) - 50000.0 + (k % 3) * 0.25;
    x[17] = NAN;
    cf__acc acc[4], want[4];
    for (int j = 0; j < 4; j++) {
        cf__acc_init_class(&acc[j], 'f');
        cf__acc_init_class(&want[j], 'f');
    }
    size_t used = 0;
#if defined(CF__STATS_AVX2)
    if (avx2_path) used = cf__float_rows_avx2(acc, nmemb, c0, x, N, 0);
#endif
#if defined(CF__STATS_SSE2)
    if (!avx2_path) used = cf__f8_interleaved(acc, nmemb, c0, x, N);
#endif
    CHECK(used > 0 && used <= N);
    CHECK_EQ_INT(used % (size_t)nmemb, 0);
    for (size_t k = 0; k < used; k++) plain_f(&want[(c0 + k) % (size_t)nmemb], &x[k], 1);
    for (int j = 0; j < nmemb; j++) CHECK(same_f(&acc[j], &want[j]));
}

static void test_row_folders(void)
{
#if defined(CF__STATS_SSE2)
    for (int nmemb = 2; nmemb <= 4; nmemb++) check_rows(nmemb, nmemb - 1, 0);
#endif
    if (have_avx2())
        for (int nmemb = 1; nmemb <= 4; nmemb++) check_rows(nmemb, 0, 1);
}

CF_TESTS(CF_TEST(test_integer_kernels), CF_TEST(test_bool_and_complex), CF_TEST(test_float_kernels),
         CF_TEST(test_signed_zeros_and_all_nan), CF_TEST(test_row_folders))
