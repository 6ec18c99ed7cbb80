/* stats_kernels.c - the statistics kernels: one per value type, each folds
 * n <= CF__KBLOCK native-order values at an aligned address into one
 * accumulator (stats_accum.c says how values get there, and the rules
 * every path keeps bit for bit). */
#include "stats_impl.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

/* int64 from its two's complement bits, without implementation-defined
 * conversions. */
static inline int64_t cf__u2i(uint64_t u)
{
    return u <= (uint64_t)INT64_MAX ? (int64_t)u : -(int64_t)(~u) - 1;
}

/* Which zeros x[0..n) holds, when it holds one: bit 0 for +0.0, bit 1
 * for -0.0 (the search behind the signed-zero rule; runs only when a min
 * or max is 0).  The bits of the zeros are or-ed and and-ed together: a
 * sign in the OR means some -0.0, none in the AND some +0.0. */
#define CF__ZEROS(name, T, U, ones, sign)                                         \
    static unsigned name(const T *x, size_t n)                                    \
    {                                                                             \
        U zor = 0, zand = ones;                                                   \
        for (size_t i = 0; i < n; i++) {                                          \
            U b;                                                                  \
            memcpy(&b, x + i, sizeof b);                                          \
            zor |= x[i] == 0 ? b : 0;                                             \
            zand &= x[i] == 0 ? b : ones;                                         \
        }                                                                         \
        return (zand >> sign ? 0u : 1u) | (zor >> sign ? 2u : 0u);                \
    }
CF__ZEROS(cf__zeros32, float, uint32_t, UINT32_MAX, 31)
CF__ZEROS(cf__zeros64, double, uint64_t, UINT64_MAX, 63)
#undef CF__ZEROS

/* Exact block sums of integers into the exact accumulator. */
static inline void cf__kadd_i(cf__xsum *x, int64_t s)
{
    cf__xsum_add_i64(x, s);
}

static inline void cf__kadd_u(cf__xsum *x, uint64_t s)
{
    cf__xsum_add_u64(x, s);
}

/* 1-4 byte integers: one fused loop, auto-vectorised. */
/* 1 to 4 byte integers: plain loops the compiler vectorises, built twice:
 * for the baseline (SSE2, which has no 32-bit min/max or sign extension
 * to 64 bits) and for AVX2, taken when the caller says the CPU has it.
 * Integer min, max and sums are exact: both give the same bits. */
#define CF__NARROW_BODY(t, T, cls, lo, hi, S)                                     \
    __attribute__((always_inline)) static inline void cf__narrow_##t(cf__acc *a, const T *x, size_t n) \
    {                                                                             \
        T mn = hi, mx = lo;                                                       \
        S s = 0;                                                                  \
        for (size_t i = 0; i < n; i++) {                                          \
            T v = x[i];                                                           \
            mn = v < mn ? v : mn;                                                 \
            mx = v > mx ? v : mx;                                                 \
            s += (S)v;                                                            \
        }                                                                         \
        cf__acc part;                                                             \
        part.count = (int64_t)n;                                                  \
        part.nan = 0;                                                             \
        part.v.cls.min = mn;                                                      \
        part.v.cls.max = mx;                                                      \
        cf__merge_##cls(a, &part);                                                \
        cf__kadd_##cls(&a->xs, s);                                                \
    }

#if defined(CF__STATS_AVX2)
#define CF__KERNEL_NARROW(t, T, cls, lo, hi, S)                                   \
    CF__NARROW_BODY(t, T, cls, lo, hi, S)                                         \
    __attribute__((target("avx2"))) static void cf__narrow_avx2_##t(cf__acc *a, const T *x, size_t n) \
    {                                                                             \
        cf__narrow_##t(a, x, n);                                                  \
    }                                                                             \
    void cf__k_##t(cf__acc *a, const void *p, size_t n, int avx2)                 \
    {                                                                             \
        if (avx2) cf__narrow_avx2_##t(a, p, n);                                   \
        else cf__narrow_##t(a, p, n);                                             \
    }
#else
#define CF__KERNEL_NARROW(t, T, cls, lo, hi, S)                                   \
    CF__NARROW_BODY(t, T, cls, lo, hi, S)                                         \
    void cf__k_##t(cf__acc *a, const void *p, size_t n, int avx2)                 \
    {                                                                             \
        (void)avx2;                                                               \
        cf__narrow_##t(a, p, n);                                                  \
    }
#endif

/* 8-byte integers work on unsigned keys k = bits ^ flip (flip = 2^63 for
 * i8) that order like the values; the exact sum of the keys is kept as
 * sums of their high and low 32-bit halves (each < 2^52 per block). */
typedef struct {
    uint64_t kmin, kmax, hs, ls;
} cf__wide_state;

#if defined(CF__STATS_AVX2)

/* Whole groups of 8 keys; returns how many values it consumed.  AVX2
 * compares signed 64-bit lanes, so min and max work on keys ^ 2^63 (the
 * values themselves for i8).  The sums: hs of the keys' high halves, and
 * the keys' sum modulo 2^64, from which the sum of the low halves follows
 * (ls = sum - 2^32 hs; ls < 2^52 is exact).  Inlined with a constant flip,
 * so no operation is spent on a zero mask. */
__attribute__((target("avx2"), always_inline))
static inline size_t cf__wide_avx2(const uint64_t *x, size_t n, const uint64_t flip, cf__wide_state *st)
{
    const __m256i cflip = _mm256_set1_epi64x(cf__u2i(flip ^ (UINT64_C(1) << 63)));
    const __m256i kflip = _mm256_set1_epi64x(cf__u2i(flip));
    __m256i mn[2], mx[2], hs[2], ks[2];
    for (int u = 0; u < 2; u++) {
        mn[u] = _mm256_set1_epi64x(INT64_MAX);
        mx[u] = _mm256_set1_epi64x(INT64_MIN);
        hs[u] = _mm256_setzero_si256();
        ks[u] = _mm256_setzero_si256();
    }
    size_t i = 0;
#pragma GCC unroll 2
    for (; i + 8 <= n; i += 8) {
        for (int u = 0; u < 2; u++) {
            __m256i v = _mm256_loadu_si256((const __m256i *)(const void *)(x + i + 4 * u));
            __m256i c = flip == (UINT64_C(1) << 63) ? v : _mm256_xor_si256(v, cflip);
            mn[u] = _mm256_blendv_epi8(mn[u], c, _mm256_cmpgt_epi64(mn[u], c));
            mx[u] = _mm256_blendv_epi8(mx[u], c, _mm256_cmpgt_epi64(c, mx[u]));
            __m256i k = flip ? _mm256_xor_si256(v, kflip) : v;
            hs[u] = _mm256_add_epi64(hs[u], _mm256_srli_epi64(k, 32));
            ks[u] = _mm256_add_epi64(ks[u], k);
        }
    }
    uint64_t t[4][2][4];
    for (int u = 0; u < 2; u++) {
        _mm256_storeu_si256((__m256i *)(void *)t[0][u], mn[u]);
        _mm256_storeu_si256((__m256i *)(void *)t[1][u], mx[u]);
        _mm256_storeu_si256((__m256i *)(void *)t[2][u], hs[u]);
        _mm256_storeu_si256((__m256i *)(void *)t[3][u], ks[u]);
    }
    for (int u = 0; u < 2; u++) {
        for (int l = 0; l < 4; l++) {
            uint64_t kmin = t[0][u][l] ^ (UINT64_C(1) << 63), kmax = t[1][u][l] ^ (UINT64_C(1) << 63);
            st->kmin = kmin < st->kmin ? kmin : st->kmin;
            st->kmax = kmax > st->kmax ? kmax : st->kmax;
            st->hs += t[2][u][l];
            st->ls += t[3][u][l] - (t[2][u][l] << 32); /* this lane's low halves */
        }
    }
    return i;
}

/* The same with AVX-512 (level 2): unsigned 64-bit min and max of the keys
 * themselves, 16 keys at a time. */
__attribute__((target("avx512f"), always_inline))
static inline size_t cf__wide_avx512(const uint64_t *x, size_t n, const uint64_t flip, cf__wide_state *st)
{
    const __m512i kflip = _mm512_set1_epi64(cf__u2i(flip));
    __m512i mn[2], mx[2], hs[2], ks[2];
    for (int u = 0; u < 2; u++) {
        mn[u] = _mm512_set1_epi64(-1);
        mx[u] = hs[u] = ks[u] = _mm512_setzero_si512();
    }
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        for (int u = 0; u < 2; u++) {
            __m512i v = _mm512_loadu_si512((const void *)(x + i + 8 * u));
            __m512i k = flip ? _mm512_xor_si512(v, kflip) : v;
            mn[u] = _mm512_min_epu64(mn[u], k);
            mx[u] = _mm512_max_epu64(mx[u], k);
            hs[u] = _mm512_add_epi64(hs[u], _mm512_srli_epi64(k, 32));
            ks[u] = _mm512_add_epi64(ks[u], k);
        }
    }
    uint64_t t[4][2][8];
    for (int u = 0; u < 2; u++) {
        _mm512_storeu_si512((void *)t[0][u], mn[u]);
        _mm512_storeu_si512((void *)t[1][u], mx[u]);
        _mm512_storeu_si512((void *)t[2][u], hs[u]);
        _mm512_storeu_si512((void *)t[3][u], ks[u]);
    }
    for (int u = 0; u < 2; u++) {
        for (int l = 0; l < 8; l++) {
            st->kmin = t[0][u][l] < st->kmin ? t[0][u][l] : st->kmin;
            st->kmax = t[1][u][l] > st->kmax ? t[1][u][l] : st->kmax;
            st->hs += t[2][u][l];
            st->ls += t[3][u][l] - (t[2][u][l] << 32); /* this lane's low halves */
        }
    }
    return i;
}

/* The instances called, each with its flip a constant. */
#define CF__WIDE_FN(isa, target_name, t, flip)                                    \
    __attribute__((target(target_name)))                                          \
    static size_t cf__wide_##isa##_##t(const uint64_t *x, size_t n, cf__wide_state *st) \
    {                                                                             \
        return cf__wide_##isa(x, n, flip, st);                                    \
    }
CF__WIDE_FN(avx512, "avx512f", i8, UINT64_C(1) << 63)
CF__WIDE_FN(avx512, "avx512f", u8, 0)
CF__WIDE_FN(avx2, "avx2", i8, UINT64_C(1) << 63)
CF__WIDE_FN(avx2, "avx2", u8, 0)
#undef CF__WIDE_FN
#endif

static void cf__wide(cf__acc *a, const uint64_t *x, size_t n, uint64_t flip, char cls, int avx2)
{
    cf__wide_state st = { UINT64_MAX, 0, 0, 0 };
    size_t i = 0;
#if defined(CF__STATS_AVX2)
    if (n >= 32 && avx2 >= 2) i = flip ? cf__wide_avx512_i8(x, n, &st) : cf__wide_avx512_u8(x, n, &st);
    else if (n >= 16 && avx2) i = flip ? cf__wide_avx2_i8(x, n, &st) : cf__wide_avx2_u8(x, n, &st);
#endif
    /* the rest (everything without AVX2): four scalar lanes */
    size_t i0 = i;
    uint64_t mn[4], mx[4];
    for (int l = 0; l < 4; l++) {
        mn[l] = st.kmin;
        mx[l] = st.kmax;
    }
    for (; i + 4 <= n; i += 4) {
        for (int l = 0; l < 4; l++) {
            uint64_t k = x[i + (size_t)l] ^ flip;
            mn[l] = k < mn[l] ? k : mn[l];
            mx[l] = k > mx[l] ? k : mx[l];
        }
    }
    for (; i < n; i++) {
        uint64_t k = x[i] ^ flip;
        mn[0] = k < mn[0] ? k : mn[0];
        mx[0] = k > mx[0] ? k : mx[0];
    }
    for (int l = 0; l < 4; l++) {
        st.kmin = mn[l] < st.kmin ? mn[l] : st.kmin;
        st.kmax = mx[l] > st.kmax ? mx[l] : st.kmax;
    }
    for (i = i0; i < n; i++) {
        uint64_t k = x[i] ^ flip;
        st.hs += k >> 32;
        st.ls += k & UINT64_C(0xffffffff);
    }
    /* sum of values = 2^32 hs + ls - n * flip (flip is 0 or 2^63), exactly */
    cf__xsum_add_shifted(&a->xs, st.hs, CF__XSUM_ONE + 32, 0);
    cf__xsum_add_shifted(&a->xs, st.ls, CF__XSUM_ONE, 0);
    if (flip) cf__xsum_add_shifted(&a->xs, (uint64_t)n, CF__XSUM_ONE + 63, 1);
    cf__acc part;
    part.count = (int64_t)n;
    part.nan = 0;
    if (cls == 'i') {
        part.v.i.min = cf__u2i(st.kmin ^ flip);
        part.v.i.max = cf__u2i(st.kmax ^ flip);
        cf__merge_i(a, &part);
    } else {
        part.v.u.min = st.kmin ^ flip;
        part.v.u.max = st.kmax ^ flip;
        cf__merge_u(a, &part);
    }
}

#define CF__KERNEL_WIDE(t, T, cls, lo, hi, flip)                                  \
    void cf__k_##t(cf__acc *a, const void *p, size_t n, int avx2)                 \
    {                                                                             \
        cf__wide(a, p, n, flip, #cls[0], avx2);                                   \
    }

/* The end of the float kernels, for f8 (T double) and f4 (T float): the
 * values from i on one by one, then the part into the accumulator. */
#define CF__FLOAT_TAIL(t, T, zeros)                                               \
    __attribute__((always_inline)) static inline void cf__float_tail_##t(        \
        cf__acc *a, const T *x, size_t i, size_t n, T mn, T mx, int64_t nn)       \
    {                                                                             \
        for (; i < n; i++) {                                                      \
            T v = x[i];                                                           \
            nn += v != v;                                                         \
            mn = v < mn ? v : mn;                                                 \
            mx = v > mx ? v : mx;                                                 \
        }                                                                         \
        cf__float_part(a, mn, mx, nn, n, mn == 0 || mx == 0 ? zeros(x, n) : 0);   \
    }
CF__FLOAT_TAIL(f8, double, cf__zeros64)
CF__FLOAT_TAIL(f4, float, cf__zeros32)
#undef CF__FLOAT_TAIL

#if !defined(CF__STATS_SSE2)
/* The portable float kernels' body, for f8 (T double) and f4 (T float):
 * min, max and NaN count of whole groups of four values in four lanes;
 * returns how many it took (the caller does the rest one by one). */
#define CF__FLOAT_LANES4(t, T)                                                    \
    static size_t cf__lanes4_##t(const T *x, size_t n, T *mn, T *mx, int64_t *nn) \
    {                                                                             \
        size_t i = 0;                                                             \
        T lmn[4], lmx[4];                                                         \
        int64_t lc[4];                                                            \
        for (int l = 0; l < 4; l++) {                                             \
            lmn[l] = INFINITY;                                                    \
            lmx[l] = -INFINITY;                                                   \
            lc[l] = 0;                                                            \
        }                                                                         \
        for (; i + 4 <= n; i += 4) {                                              \
            for (int l = 0; l < 4; l++) {                                         \
                T v = x[i + (size_t)l];                                           \
                lc[l] += v != v;                                                  \
                lmn[l] = v < lmn[l] ? v : lmn[l];                                 \
                lmx[l] = v > lmx[l] ? v : lmx[l];                                 \
            }                                                                     \
        }                                                                         \
        for (int l = 0; l < 4; l++) {                                             \
            *mn = lmn[l] < *mn ? lmn[l] : *mn;                                    \
            *mx = lmx[l] > *mx ? lmx[l] : *mx;                                    \
            *nn += lc[l];                                                         \
        }                                                                         \
        return i;                                                                 \
    }
CF__FLOAT_LANES4(f8, double)
CF__FLOAT_LANES4(f4, float)
#undef CF__FLOAT_LANES4
#endif

void cf__k_f8(cf__acc *a, const void *p, size_t n, int avx2)
{
    const double *x = p;
    double mn = INFINITY, mx = -INFINITY, s = 0.0;
    int64_t nn = 0;
    size_t i = 0;
#if defined(CF__STATS_SSE2)
    if (n >= 8) {
        __m128d vmn[4], vmx[4], vs[4];
        __m128i vc[4];
        for (int u = 0; u < 4; u++) {
            vmn[u] = _mm_set1_pd(INFINITY);
            vmx[u] = _mm_set1_pd(-INFINITY);
            vs[u] = _mm_setzero_pd();
            vc[u] = _mm_setzero_si128();
        }
        for (; i + 8 <= n; i += 8) {
            for (int u = 0; u < 4; u++) {
                __m128d v = _mm_loadu_pd(x + i + 2 * u);
                __m128d bad = _mm_cmpunord_pd(v, v);                 /* x != x */
                vc[u] = _mm_sub_epi64(vc[u], _mm_castpd_si128(bad));
                vs[u] = _mm_add_pd(vs[u], _mm_andnot_pd(bad, v));    /* x == x ? x : 0 */
                vmn[u] = _mm_min_pd(v, vmn[u]);                      /* x < m ? x : m */
                vmx[u] = _mm_max_pd(v, vmx[u]);                      /* x > m ? x : m */
            }
        }
        double t[3][4][2];
        int64_t c[4][2];
        for (int u = 0; u < 4; u++) {
            _mm_storeu_pd(t[0][u], vmn[u]);
            _mm_storeu_pd(t[1][u], vmx[u]);
            _mm_storeu_pd(t[2][u], vs[u]);
            _mm_storeu_si128((__m128i *)(void *)c[u], vc[u]);
        }
        for (int u = 0; u < 4; u++) {
            for (int l = 0; l < 2; l++) {
                mn = t[0][u][l] < mn ? t[0][u][l] : mn;
                mx = t[1][u][l] > mx ? t[1][u][l] : mx;
                s += t[2][u][l];
                nn += c[u][l];
            }
        }
    }
#else
    i = cf__lanes4_f8(x, n, &mn, &mx, &nn);
#endif
    (void)s; /* the sum is added exactly elsewhere */
    cf__float_tail_f8(a, x, i, n, mn, mx, nn);
}

#if defined(CF__STATS_AVX2)
/* f4 with AVX2 (min, max and NaNs of eight floats at a time, without
 * widening: the sums are added exactly elsewhere): whole groups of 16;
 * returns how many it consumed. */
__attribute__((target("avx2")))
static size_t cf__f4_avx2(const float *x, size_t n, float *mn, float *mx, int64_t *nn)
{
    __m256 vmn[2], vmx[2];
    __m256i vc[2];
    for (int u = 0; u < 2; u++) {
        vmn[u] = _mm256_set1_ps(INFINITY);
        vmx[u] = _mm256_set1_ps(-INFINITY);
        vc[u] = _mm256_setzero_si256();
    }
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        for (int u = 0; u < 2; u++) {
            __m256 v = _mm256_loadu_ps(x + i + 8 * u);
            __m256 bad = _mm256_cmp_ps(v, v, _CMP_UNORD_Q);
            vc[u] = _mm256_sub_epi32(vc[u], _mm256_castps_si256(bad));
            vmn[u] = _mm256_min_ps(v, vmn[u]);
            vmx[u] = _mm256_max_ps(v, vmx[u]);
        }
    }
    float t[2][2][8];
    int32_t c[2][8];
    for (int u = 0; u < 2; u++) {
        _mm256_storeu_ps(t[0][u], vmn[u]);
        _mm256_storeu_ps(t[1][u], vmx[u]);
        _mm256_storeu_si256((__m256i *)(void *)c[u], vc[u]);
    }
    for (int u = 0; u < 2; u++) {
        for (int l = 0; l < 8; l++) {
            *mn = t[0][u][l] < *mn ? t[0][u][l] : *mn;
            *mx = t[1][u][l] > *mx ? t[1][u][l] : *mx;
            *nn += c[u][l];
        }
    }
    return i;
}
#endif

void cf__k_f4(cf__acc *a, const void *p, size_t n, int avx2)
{
    const float *x = p;
    float mn = INFINITY, mx = -INFINITY;
    double s = 0.0;
    int64_t nn = 0;
    size_t i = 0;
#if defined(CF__STATS_AVX2)
    if (n >= 32 && avx2) i = cf__f4_avx2(x, n, &mn, &mx, &nn);
#endif
#if defined(CF__STATS_SSE2)
    if (n - i >= 8) {
        __m128 vmn[2], vmx[2];
        __m128d vs[2][2];
        __m128i vc[2];
        for (int u = 0; u < 2; u++) {
            vmn[u] = _mm_set1_ps(INFINITY);
            vmx[u] = _mm_set1_ps(-INFINITY);
            vs[u][0] = _mm_setzero_pd();
            vs[u][1] = _mm_setzero_pd();
            vc[u] = _mm_setzero_si128();
        }
        for (; i + 8 <= n; i += 8) {
            for (int u = 0; u < 2; u++) {
                __m128 v = _mm_loadu_ps(x + i + 4 * u);
                __m128 bad = _mm_cmpunord_ps(v, v);
                vc[u] = _mm_sub_epi32(vc[u], _mm_castps_si128(bad));
                __m128 g = _mm_andnot_ps(bad, v);
                vs[u][0] = _mm_add_pd(vs[u][0], _mm_cvtps_pd(g));
                vs[u][1] = _mm_add_pd(vs[u][1], _mm_cvtps_pd(_mm_movehl_ps(g, g)));
                vmn[u] = _mm_min_ps(v, vmn[u]);
                vmx[u] = _mm_max_ps(v, vmx[u]);
            }
        }
        float t[2][2][4];
        double d[2][2][2];
        int32_t c[2][4];
        for (int u = 0; u < 2; u++) {
            _mm_storeu_ps(t[0][u], vmn[u]);
            _mm_storeu_ps(t[1][u], vmx[u]);
            _mm_storeu_pd(d[u][0], vs[u][0]);
            _mm_storeu_pd(d[u][1], vs[u][1]);
            _mm_storeu_si128((__m128i *)(void *)c[u], vc[u]);
        }
        for (int u = 0; u < 2; u++) {
            for (int l = 0; l < 4; l++) {
                mn = t[0][u][l] < mn ? t[0][u][l] : mn;
                mx = t[1][u][l] > mx ? t[1][u][l] : mx;
                nn += c[u][l];
            }
            s += (d[u][0][0] + d[u][0][1]) + (d[u][1][0] + d[u][1][1]);
        }
    }
#else
    i = cf__lanes4_f4(x, n, &mn, &mx, &nn);
#endif
    (void)s; /* the sum is added exactly elsewhere */
    cf__float_tail_f4(a, x, i, n, mn, mx, nn);
}

#define CF__KERNEL_FLOAT(t, T, cls, lo, hi, P) /* written out above */
#define CF__KERNEL_HALF(t, T, cls, lo, hi, P)  /* widened to float, then cf__k_f4 */

#define CF__KERNEL_CPLX(t, T, cls, lo, hi, P)                                     \
    void cf__k_##t(cf__acc *a, const void *p, size_t n, int avx2)                 \
    {                                                                             \
        const T *x = p;                                                           \
        int64_t nn = 0;                                                           \
        for (size_t i = 0; i < n; i++)                                            \
            nn += (x[i].re != x[i].re) | (x[i].im != x[i].im);                    \
        a->count += (int64_t)n;                                                   \
        a->nan += nn;                                                             \
    }

#define CF__KERNEL_BOOL(t, T, cls, lo, hi, P)                                     \
    void cf__k_##t(cf__acc *a, const void *p, size_t n, int avx2)                 \
    {                                                                             \
        const T *x = p;                                                           \
        uint32_t ntrue = 0;                                                       \
        for (size_t i = 0; i < n; i++) ntrue += x[i] != 0;                        \
        cf__acc part;                                                             \
        part.count = (int64_t)n;                                                  \
        part.nan = 0;                                                             \
        part.v.u.min = n && ntrue == n ? 1 : 0;                                   \
        part.v.u.max = ntrue ? 1 : 0;                                             \
        if (n) cf__merge_u(a, &part);                                             \
        cf__xsum_add_u64(&a->xs, ntrue);                                          \
    }

#define CF__KERNEL(t, k, T, cat, cls, lo, hi, par) CF__KERNEL_##cat(t, T, cls, lo, hi, par)
CF__STATS_TYPES(CF__KERNEL)
#undef CF__KERNEL
