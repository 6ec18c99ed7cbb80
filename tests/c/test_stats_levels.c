/* test_stats_levels.c - the integer statistics kernels of
 * src/stats/stats_kernels.c at every SIMD level the CPU has (none, AVX2,
 * AVX-512) give the same accumulators as a scalar reference: random
 * values, the extremes of each type, every length around the vector
 * widths. */
#include "harness.h"

#include "stats.h"
#include "stats_impl.h"

static uint64_t rnd(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * UINT64_C(2685821657736338717);
}

#define N 1000

static void test_wide_kernels_every_level(void)
{
    static uint64_t x[N];
    uint64_t s = 0xD1CE;
    for (int round = 0; round < 6; round++) {
        for (int k = 0; k < N; k++) {
            uint64_t r = rnd(&s);
            /* some rounds all extremes, some small, some full range */
            x[k] = round == 0 ? (r & 1 ? UINT64_MAX : 0)
                 : round == 1 ? (r & 1 ? UINT64_C(1) << 63 : (UINT64_C(1) << 63) - 1)
                 : round == 2 ? r % 1000 : r;
        }
        for (size_t n = 0; n <= 70; n += (n < 40 ? 1 : 7)) {
            size_t len = round >= 4 ? N - n : n;
            size_t off = (size_t)round % 3; /* unaligned for the vectors, aligned for the type */
            if (off + len > N) len = N - off;
            for (int flip = 0; flip < 2; flip++) {
                cf__acc want, got;
                cf__acc_init_class(&want, flip ? 'i' : 'u');
                cf__acc_init_class(&got, flip ? 'i' : 'u');
                /* scalar reference: the level-0 kernel, then checked by hand */
                if (flip) cf__k_i8(&want, x + off, len, 0);
                else cf__k_u8(&want, x + off, len, 0);
                int64_t imn = INT64_MAX, imx = INT64_MIN;
                uint64_t umn = UINT64_MAX, umx = 0;
                for (size_t k = 0; k < len; k++) {
                    int64_t v = (int64_t)x[off + k];
                    imn = v < imn ? v : imn;
                    imx = v > imx ? v : imx;
                    umn = x[off + k] < umn ? x[off + k] : umn;
                    umx = x[off + k] > umx ? x[off + k] : umx;
                }
                if (len && flip) CHECK(want.v.i.min == imn && want.v.i.max == imx);
                if (len && !flip) CHECK(want.v.u.min == umn && want.v.u.max == umx);
                for (int level = 1; level <= cf__stats_have_avx2(); level++) {
                    cf__acc_init_class(&got, flip ? 'i' : 'u');
                    if (flip) cf__k_i8(&got, x + off, len, level);
                    else cf__k_u8(&got, x + off, len, level);
                    CHECK_EQ_INT(got.count, want.count);
                    CHECK(memcmp(&got.v, &want.v, sizeof got.v) == 0);
                    double a = cf__acc_sum(&got), b = cf__acc_sum(&want);
                    if (memcmp(&a, &b, sizeof a) != 0) {
                        fprintf(stderr, "level %d flip %d len %zu: sum %.17g != %.17g\n", level, flip, len, a, b);
                        cf_test_failures++;
                    }
                }
            }
        }
    }
}

/* 1 to 4 byte integers: one reference loop per type. */
#define NARROW_CASE(t, T, cls, lo, hi)                                                          \
    do {                                                                                        \
        static T v[N];                                                                          \
        for (int k = 0; k < N; k++) {                                                           \
            uint64_t r = rnd(&s);                                                               \
            v[k] = round == 0 ? (T)(r & 1 ? (hi) : (lo)) : (T)r;                                \
        }                                                                                       \
        for (size_t len = 0; len <= 300; len += len < 70 ? 1 : 23) {                            \
            size_t off = (size_t)round % 3;                                                     \
            long double want_sum = 0;                                                           \
            T mn = (hi), mx = (lo);                                                             \
            for (size_t k = 0; k < len; k++) {                                                  \
                T x = v[off + k];                                                               \
                mn = x < mn ? x : mn;                                                           \
                mx = x > mx ? x : mx;                                                           \
                want_sum += (long double)x;                                                     \
            }                                                                                   \
            for (int level = 0; level <= cf__stats_have_avx2(); level++) {                                \
                cf__acc a;                                                                      \
                cf__acc_init_class(&a, #cls[0]);                                                \
                cf__k_##t(&a, v + off, len, level);                                             \
                CHECK_EQ_INT(a.count, (int64_t)len);                                            \
                if (len) CHECK(a.v.cls.min == mn && a.v.cls.max == mx);                         \
                CHECK(cf__acc_sum(&a) == (double)want_sum); /* exact: below 2^53 */             \
            }                                                                                   \
        }                                                                                       \
    } while (0)

static void test_narrow_kernels_every_level(void)
{
    uint64_t s = 0xBEEF;
    for (int round = 0; round < 3; round++) {
        NARROW_CASE(i1, int8_t, i, INT8_MIN, INT8_MAX);
        NARROW_CASE(i2, int16_t, i, INT16_MIN, INT16_MAX);
        NARROW_CASE(i4, int32_t, i, INT32_MIN, INT32_MAX);
        NARROW_CASE(u1, uint8_t, u, 0, UINT8_MAX);
        NARROW_CASE(u2, uint16_t, u, 0, UINT16_MAX);
        NARROW_CASE(u4, uint32_t, u, 0, UINT32_MAX);
    }
}

CF_TESTS(
    CF_TEST(test_wide_kernels_every_level),
    CF_TEST(test_narrow_kernels_every_level)
)
