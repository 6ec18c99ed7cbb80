/* stats.c - per-chunk statistics: accumulators, the chunk layout and the
 * statistics text (docs/format.md 8.4).
 *
 * Accumulating (cf__acc_add) runs on every write, so it is built for speed:
 *
 * - one kernel per numeric type, generated from the type list below, takes
 *   a contiguous run of native-order, aligned values and folds it into one
 *   accumulator.  Integer kernels are plain loops that gcc and clang
 *   auto-vectorise (integer min, max and sum reductions may be reordered).
 *   Float min/max reductions are not reorderable under IEEE rules, so no
 *   compiler vectorises `m = x < m ? x : m` without -ffast-math; on x86-64
 *   the float kernels spell the same formula with SSE2 (MINPD returns its
 *   second operand when the first is NaN: `x < m ? x : m` exactly), in
 *   independent lanes.  8-byte integer min/max need a 64-bit compare, which
 *   SSE2 lacks: those kernels use AVX2 when the CPU has it (checked per
 *   call, as checksum.c does for SSE4.2) and four scalar lanes otherwise;
 *   f4 uses AVX2 too (SSE2 spends its time widening to double for sums).
 *   Other targets (or -DCF__STATS_NO_SIMD) get portable lane loops.
 * - native f4 and f8 in rows of 1 to 4 values (masses, positions,
 *   velocities: most of what simulations write) are folded in place with
 *   AVX2 (cf__float_rows_avx2), optimistically: without NaN masks, which a
 *   block needs only when its sums come out NaN.
 * - everything else -- non-native byte order, f2, unaligned data, vectors
 *   (nmemb > 1) -- is gathered (one component at a time), byte swapped and
 *   widened into a small stack buffer, block by block, and handed to the
 *   same kernels.  Vectors with very many components, where each component
 *   sees only a few values per call, are folded value by value instead.
 *   Nothing allocates.
 *
 * Semantics (all paths agree bit for bit on count, nan, min and max):
 * - count counts every value, NaN included; nan counts NaNs (complex:
 *   either part NaN).  S columns keep count only.
 * - floats: min/max over the non-NaN values, in the order -inf < ... <
 *   -0.0 < +0.0 < ... < +inf (so merges are deterministic whatever the
 *   split); a chunk of NaNs only keeps min = +inf > max = -inf.  The sum of
 *   the non-NaN values in double (+inf and -inf together give NaN).
 * - integers: sums are exact integer sums per block of at most 2^20 values,
 *   rounded once to double; blocks, calls and merges add in double, so a
 *   sum is exact while its partial sums stay below 2^53 in magnitude.
 * - bool: min/max over 0/1 (any non-zero byte is true); sum = true count.
 */
#include "stats.h"

#include <inttypes.h>
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "hex.h"

#define CF__STATS_MAGIC_LINE "COLFILE-STATS: 1"

#if !defined(CF__STATS_NO_SIMD) && (defined(__x86_64__) || defined(_M_X64)) && defined(__SSE2__)
#define CF__STATS_SSE2 1
#include <emmintrin.h>
#if (defined(__GNUC__) || defined(__clang__)) && !defined(CF__STATS_NO_AVX2)
#define CF__STATS_AVX2 1
#include <immintrin.h>
#endif
#endif

/* ------------------------------------------------------------------ */
/* Accumulators                                                         */
/* ------------------------------------------------------------------ */

char cf__acc_class(const cf__dtype *d)
{
    switch (d->kind) {
    case 'i': return 'i';
    case 'u':
    case 'b': return 'u';
    case 'f': return 'f';
    default: return 0;
    }
}

static void cf__acc_init_class(cf__acc *a, char cls)
{
    memset(a, 0, sizeof *a);
    if (cls == 'i') {
        a->v.i.min = INT64_MAX;
        a->v.i.max = INT64_MIN;
    } else if (cls == 'u') {
        a->v.u.min = UINT64_MAX;
        a->v.u.max = 0;
    } else if (cls == 'f') {
        a->v.f.min = INFINITY;
        a->v.f.max = -INFINITY;
    }
}

void cf__acc_init(cf__acc *a, const cf__dtype *d)
{
    cf__acc_init_class(a, cf__acc_class(d));
}

/* Counts add without overflowing: no data reaches 2^63 values, but a
 * merged accumulator may come from another process (column_pending.c) in
 * damaged bytes, and merging must stay defined for those too. */
static inline int64_t cf__count_add(int64_t a, int64_t b)
{
    if (b > 0 && a > INT64_MAX - b) return INT64_MAX;
    if (b < 0 && a < INT64_MIN - b) return INT64_MIN;
    return a + b;
}

/* a < b in the order that puts -0.0 below +0.0 (never true with a NaN). */
static inline int cf__f_below(double a, double b)
{
    return a < b || (a == b && signbit(a) && !signbit(b));
}

static inline void cf__merge_i(cf__acc *into, const cf__acc *from)
{
    into->count = cf__count_add(into->count, from->count);
    into->nan = cf__count_add(into->nan, from->nan);
    into->sum += from->sum;
    if (from->v.i.min < into->v.i.min) into->v.i.min = from->v.i.min;
    if (from->v.i.max > into->v.i.max) into->v.i.max = from->v.i.max;
}

static inline void cf__merge_u(cf__acc *into, const cf__acc *from)
{
    into->count = cf__count_add(into->count, from->count);
    into->nan = cf__count_add(into->nan, from->nan);
    into->sum += from->sum;
    if (from->v.u.min < into->v.u.min) into->v.u.min = from->v.u.min;
    if (from->v.u.max > into->v.u.max) into->v.u.max = from->v.u.max;
}

static inline void cf__merge_f(cf__acc *into, const cf__acc *from)
{
    into->count = cf__count_add(into->count, from->count);
    into->nan = cf__count_add(into->nan, from->nan);
    into->sum += from->sum;
    if (cf__f_below(from->v.f.min, into->v.f.min)) into->v.f.min = from->v.f.min;
    if (cf__f_below(into->v.f.max, from->v.f.max)) into->v.f.max = from->v.f.max;
}

static inline void cf__merge_0(cf__acc *into, const cf__acc *from)
{
    into->count = cf__count_add(into->count, from->count);
    into->nan = cf__count_add(into->nan, from->nan);
}

static void cf__acc_merge_class(cf__acc *into, const cf__acc *from, char cls)
{
    switch (cls) {
    case 'i': cf__merge_i(into, from); break;
    case 'u': cf__merge_u(into, from); break;
    case 'f': cf__merge_f(into, from); break;
    default: cf__merge_0(into, from); break;
    }
}

void cf__acc_merge(cf__acc *into, const cf__acc *from, const cf__dtype *d)
{
    cf__acc_merge_class(into, from, cf__acc_class(d));
}

/* ------------------------------------------------------------------ */
/* Value helpers                                                        */
/* ------------------------------------------------------------------ */

typedef struct { float re, im; } cf__stats_c8;
typedef struct { double re, im; } cf__stats_c16;

/* IEEE binary16 -> float, exactly (NaN payloads kept); selects instead of
 * branches so that the widening loop vectorises. */
static inline float cf__stats_half(uint16_t h)
{
    uint32_t em = h & 0x7fffu;
    uint32_t normal = (em << 13) + (112u << 23);        /* rebias 15 -> 127 */
    uint32_t special = (em << 13) | 0x7f800000u;        /* inf, NaN */
    float small = (float)(int32_t)em * 0x1p-24f;        /* zero, subnormal: m * 2^-24 */
    uint32_t sbits, bits;
    memcpy(&sbits, &small, sizeof sbits);
    uint32_t is_special = 0u - (uint32_t)(em >= 0x7c00u), is_normal = 0u - (uint32_t)(em >= 0x0400u);
    bits = (sbits & ~is_normal) | (normal & is_normal & ~is_special) | (special & is_special);
    bits |= (uint32_t)(h & 0x8000u) << 16;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

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
static unsigned cf__zeros32(const float *x, size_t n)
{
    uint32_t zor = 0, zand = UINT32_MAX;
    for (size_t i = 0; i < n; i++) {
        uint32_t b;
        memcpy(&b, x + i, sizeof b);
        zor |= x[i] == 0 ? b : 0;
        zand &= x[i] == 0 ? b : UINT32_MAX;
    }
    return (zand >> 31 ? 0u : 1u) | (zor >> 31 ? 2u : 0u);
}

static unsigned cf__zeros64(const double *x, size_t n)
{
    uint64_t zor = 0, zand = UINT64_MAX;
    for (size_t i = 0; i < n; i++) {
        uint64_t b;
        memcpy(&b, x + i, sizeof b);
        zor |= x[i] == 0 ? b : 0;
        zand &= x[i] == 0 ? b : UINT64_MAX;
    }
    return (zand >> 63 ? 0u : 1u) | (zor >> 63 ? 2u : 0u);
}

/* ------------------------------------------------------------------ */
/* The type list                                                        */
/* ------------------------------------------------------------------ */

/* X(tag, kind, C type, category, class, lo, hi, param)
 *   category: NARROW (1-4 byte integers), WIDE (8-byte integers), HALF,
 *   FLOAT, CPLX, BOOL; class: the cf__acc union member (or 0); lo/hi: the
 *   range of the type (identities of max/min); param: for NARROW the type
 *   of exact sums of CF__KBLOCK values (32 bits suffice for 1-byte types
 *   and vectorise better); for WIDE the bits that map the values to
 *   unsigned keys in the same order; for HALF, FLOAT and CPLX the type a
 *   kernel sees (float, double). */
#define CF__STATS_TYPES(X)                                                            \
    X(i1,  'i', int8_t,        NARROW, i, INT8_MIN,  INT8_MAX,   int32_t)             \
    X(i2,  'i', int16_t,       NARROW, i, INT16_MIN, INT16_MAX,  int64_t)             \
    X(i4,  'i', int32_t,       NARROW, i, INT32_MIN, INT32_MAX,  int64_t)             \
    X(i8,  'i', int64_t,       WIDE,   i, INT64_MIN, INT64_MAX,  UINT64_C(1) << 63)   \
    X(u1,  'u', uint8_t,       NARROW, u, 0,         UINT8_MAX,  uint32_t)            \
    X(u2,  'u', uint16_t,      NARROW, u, 0,         UINT16_MAX, uint64_t)            \
    X(u4,  'u', uint32_t,      NARROW, u, 0,         UINT32_MAX, uint64_t)            \
    X(u8,  'u', uint64_t,      WIDE,   u, 0,         UINT64_MAX, UINT64_C(0))         \
    X(f2,  'f', uint16_t,      HALF,   f, 0,         0,          float)               \
    X(f4,  'f', float,         FLOAT,  f, 0,         0,          float)               \
    X(f8,  'f', double,        FLOAT,  f, 0,         0,          double)              \
    X(c8,  'c', cf__stats_c8,  CPLX,   0, 0,         0,          float)               \
    X(c16, 'c', cf__stats_c16, CPLX,   0, 0,         0,          double)              \
    X(b1,  'b', uint8_t,       BOOL,   u, 0,         1,          uint8_t)

enum {
#define CF__STATS_ENUM(t, k, T, cat, cls, lo, hi, par) CF__ST_##t,
    CF__STATS_TYPES(CF__STATS_ENUM)
#undef CF__STATS_ENUM
    CF__ST_COUNT
};

/* Values per kernel call: narrow integer sums stay exact in int64 and in
 * the final double (2^31 * 2^20 < 2^53), lane counters fit 32 bits. */
#define CF__KBLOCK ((size_t)1 << 20)

/* ------------------------------------------------------------------ */
/* Kernels: n <= CF__KBLOCK native-order values at an aligned address    */
/* ------------------------------------------------------------------ */

/* avx2: the kernel may use AVX2 (the caller checked the CPU). */
typedef void (*cf__kernel_fn)(cf__acc *a, const void *p, size_t n, int avx2);

/* 1-4 byte integers: one fused loop, auto-vectorised. */
#define CF__KERNEL_NARROW(t, T, cls, lo, hi, S)                                   \
    static void cf__k_##t(cf__acc *a, const void *p, size_t n, int avx2)          \
    {                                                                             \
        const T *x = p;                                                           \
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
        part.sum = (double)s;                                                     \
        cf__merge_##cls(a, &part);                                                \
    }

/* 8-byte integers work on unsigned keys k = bits ^ flip (flip = 2^63 for
 * i8) that order like the values; the exact sum of the keys is kept as
 * sums of their high and low 32-bit halves (each < 2^52 per block). */
typedef struct {
    uint64_t kmin, kmax, hs, ls;
} cf__wide_state;

static int cf__stats_have_avx2(void)
{
#if defined(CF__STATS_AVX2)
    return __builtin_cpu_supports("avx2") ? 1 : 0;
#else
    return 0;
#endif
}

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

__attribute__((target("avx2")))
static size_t cf__wide_avx2_i8(const uint64_t *x, size_t n, cf__wide_state *st)
{
    return cf__wide_avx2(x, n, UINT64_C(1) << 63, st);
}

__attribute__((target("avx2")))
static size_t cf__wide_avx2_u8(const uint64_t *x, size_t n, cf__wide_state *st)
{
    return cf__wide_avx2(x, n, 0, st);
}
#endif

static void cf__wide(cf__acc *a, const uint64_t *x, size_t n, uint64_t flip, char cls, int avx2)
{
    cf__wide_state st = { UINT64_MAX, 0, 0, 0 };
    size_t i = 0;
#if defined(CF__STATS_AVX2)
    if (n >= 16 && avx2) i = flip ? cf__wide_avx2_i8(x, n, &st) : cf__wide_avx2_u8(x, n, &st);
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
    /* sum of values = sum of keys - n * flip; flip is 0 or 2^63 */
    double hi = flip ? (double)cf__u2i(st.hs - (uint64_t)n * (flip >> 32)) : (double)st.hs;
    cf__acc part;
    part.count = (int64_t)n;
    part.nan = 0;
    part.sum = hi * 4294967296.0 + (double)st.ls;
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
    static void cf__k_##t(cf__acc *a, const void *p, size_t n, int avx2)          \
    {                                                                             \
        cf__wide(a, p, n, flip, #cls[0], avx2);                                   \
    }

/* Floats.  The result of the fast loops is fixed up for the sign of zero:
 * if the smallest value is a zero, it is -0.0 exactly when some value is
 * -0.0 (and the largest zero is +0.0 when some value is +0.0). */
static void cf__float_part(cf__acc *a, double mn, double mx, double s, int64_t nn, size_t n, unsigned zeros)
{
    cf__acc part;
    if (mn == 0) mn = zeros & 2u ? -0.0 : 0.0;
    if (mx == 0) mx = zeros & 1u ? 0.0 : -0.0;
    part.count = (int64_t)n;
    part.nan = nn;
    part.v.f.min = mn;
    part.v.f.max = mx;
    part.sum = s;
    cf__merge_f(a, &part);
}

static void cf__k_f8(cf__acc *a, const void *p, size_t n, int avx2)
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
    if (n >= 4) {
        double lmn[4], lmx[4], ls[4];
        int64_t lc[4];
        for (int l = 0; l < 4; l++) {
            lmn[l] = INFINITY;
            lmx[l] = -INFINITY;
            ls[l] = 0.0;
            lc[l] = 0;
        }
        for (; i + 4 <= n; i += 4) {
            for (int l = 0; l < 4; l++) {
                double v = x[i + (size_t)l];
                lc[l] += v != v;
                ls[l] += v == v ? v : 0.0;
                lmn[l] = v < lmn[l] ? v : lmn[l];
                lmx[l] = v > lmx[l] ? v : lmx[l];
            }
        }
        for (int l = 0; l < 4; l++) {
            mn = lmn[l] < mn ? lmn[l] : mn;
            mx = lmx[l] > mx ? lmx[l] : mx;
            s += ls[l];
            nn += lc[l];
        }
    }
#endif
    for (; i < n; i++) {
        double v = x[i];
        nn += v != v;
        s += v == v ? v : 0.0;
        mn = v < mn ? v : mn;
        mx = v > mx ? v : mx;
    }
    cf__float_part(a, mn, mx, s, nn, n, mn == 0 || mx == 0 ? cf__zeros64(x, n) : 0);
}

#if defined(CF__STATS_AVX2)
/* f4 with AVX2 (the SSE2 loop spends most of its time widening floats for
 * the double sum): whole groups of 16; returns how many it consumed. */
__attribute__((target("avx2")))
static size_t cf__f4_avx2(const float *x, size_t n, float *mn, float *mx, double *s, int64_t *nn)
{
    __m256 vmn[2], vmx[2];
    __m256d vs[2][2];
    __m256i vc[2];
    for (int u = 0; u < 2; u++) {
        vmn[u] = _mm256_set1_ps(INFINITY);
        vmx[u] = _mm256_set1_ps(-INFINITY);
        vs[u][0] = _mm256_setzero_pd();
        vs[u][1] = _mm256_setzero_pd();
        vc[u] = _mm256_setzero_si256();
    }
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        for (int u = 0; u < 2; u++) {
            __m256 v = _mm256_loadu_ps(x + i + 8 * u);
            __m256 bad = _mm256_cmp_ps(v, v, _CMP_UNORD_Q);
            vc[u] = _mm256_sub_epi32(vc[u], _mm256_castps_si256(bad));
            __m256 g = _mm256_andnot_ps(bad, v);
            vs[u][0] = _mm256_add_pd(vs[u][0], _mm256_cvtps_pd(_mm256_castps256_ps128(g)));
            vs[u][1] = _mm256_add_pd(vs[u][1], _mm256_cvtps_pd(_mm256_extractf128_ps(g, 1)));
            vmn[u] = _mm256_min_ps(v, vmn[u]);
            vmx[u] = _mm256_max_ps(v, vmx[u]);
        }
    }
    float t[2][2][8];
    double d[2][2][4];
    int32_t c[2][8];
    for (int u = 0; u < 2; u++) {
        _mm256_storeu_ps(t[0][u], vmn[u]);
        _mm256_storeu_ps(t[1][u], vmx[u]);
        _mm256_storeu_pd(d[u][0], vs[u][0]);
        _mm256_storeu_pd(d[u][1], vs[u][1]);
        _mm256_storeu_si256((__m256i *)(void *)c[u], vc[u]);
    }
    for (int u = 0; u < 2; u++) {
        for (int l = 0; l < 8; l++) {
            *mn = t[0][u][l] < *mn ? t[0][u][l] : *mn;
            *mx = t[1][u][l] > *mx ? t[1][u][l] : *mx;
            *nn += c[u][l];
        }
        for (int l = 0; l < 4; l++) *s += d[u][0][l] + d[u][1][l];
    }
    return i;
}
#endif

static void cf__k_f4(cf__acc *a, const void *p, size_t n, int avx2)
{
    const float *x = p;
    float mn = INFINITY, mx = -INFINITY;
    double s = 0.0;
    int64_t nn = 0;
    size_t i = 0;
#if defined(CF__STATS_AVX2)
    if (n >= 32 && avx2) i = cf__f4_avx2(x, n, &mn, &mx, &s, &nn);
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
    if (n >= 4) {
        float lmn[4], lmx[4];
        double ls[4];
        int64_t lc[4];
        for (int l = 0; l < 4; l++) {
            lmn[l] = INFINITY;
            lmx[l] = -INFINITY;
            ls[l] = 0.0;
            lc[l] = 0;
        }
        for (; i + 4 <= n; i += 4) {
            for (int l = 0; l < 4; l++) {
                float v = x[i + (size_t)l];
                lc[l] += v != v;
                ls[l] += v == v ? (double)v : 0.0;
                lmn[l] = v < lmn[l] ? v : lmn[l];
                lmx[l] = v > lmx[l] ? v : lmx[l];
            }
        }
        for (int l = 0; l < 4; l++) {
            mn = lmn[l] < mn ? lmn[l] : mn;
            mx = lmx[l] > mx ? lmx[l] : mx;
            s += ls[l];
            nn += lc[l];
        }
    }
#endif
    for (; i < n; i++) {
        float v = x[i];
        nn += v != v;
        s += v == v ? (double)v : 0.0;
        mn = v < mn ? v : mn;
        mx = v > mx ? v : mx;
    }
    cf__float_part(a, mn, mx, s, nn, n, mn == 0 || mx == 0 ? cf__zeros32(x, n) : 0);
}

#define CF__KERNEL_FLOAT(t, T, cls, lo, hi, P) /* written out above */
#define CF__KERNEL_HALF(t, T, cls, lo, hi, P)  /* widened to float, then cf__k_f4 */
#define cf__k_f2 cf__k_f4

#define CF__KERNEL_CPLX(t, T, cls, lo, hi, P)                                     \
    static void cf__k_##t(cf__acc *a, const void *p, size_t n, int avx2)          \
    {                                                                             \
        const T *x = p;                                                           \
        int64_t nn = 0;                                                           \
        for (size_t i = 0; i < n; i++)                                            \
            nn += (x[i].re != x[i].re) | (x[i].im != x[i].im);                    \
        a->count += (int64_t)n;                                                   \
        a->nan += nn;                                                             \
    }

#define CF__KERNEL_BOOL(t, T, cls, lo, hi, P)                                     \
    static void cf__k_##t(cf__acc *a, const void *p, size_t n, int avx2)          \
    {                                                                             \
        const T *x = p;                                                           \
        uint32_t ntrue = 0;                                                       \
        for (size_t i = 0; i < n; i++) ntrue += x[i] != 0;                        \
        cf__acc part;                                                             \
        part.count = (int64_t)n;                                                  \
        part.nan = 0;                                                             \
        part.v.u.min = n && ntrue == n ? 1 : 0;                                   \
        part.v.u.max = ntrue ? 1 : 0;                                             \
        part.sum = (double)ntrue;                                                 \
        if (n) cf__merge_u(a, &part);                                             \
    }

#define CF__KERNEL(t, k, T, cat, cls, lo, hi, par) CF__KERNEL_##cat(t, T, cls, lo, hi, par)
CF__STATS_TYPES(CF__KERNEL)
#undef CF__KERNEL

/* ------------------------------------------------------------------ */
/* One value at a time (vectors with very many components)              */
/* ------------------------------------------------------------------ */

static inline void cf__add1_i(cf__acc *a, int64_t v)
{
    a->count++;
    a->sum += (double)v;
    if (v < a->v.i.min) a->v.i.min = v;
    if (v > a->v.i.max) a->v.i.max = v;
}

static inline void cf__add1_u(cf__acc *a, uint64_t v)
{
    a->count++;
    a->sum += (double)v;
    if (v < a->v.u.min) a->v.u.min = v;
    if (v > a->v.u.max) a->v.u.max = v;
}

static inline void cf__add1_f(cf__acc *a, double v)
{
    a->count++;
    if (v != v) {
        a->nan++;
        return;
    }
    a->sum += v;
    if (cf__f_below(v, a->v.f.min)) a->v.f.min = v;
    if (cf__f_below(a->v.f.max, v)) a->v.f.max = v;
}

/* The value of a staged (native-order) element. */
#define CF__ADD1_NARROW(t, T, cls, P) { T v_; memcpy(&v_, p, sizeof v_); cf__add1_##cls(a, (P)v_); }
#define CF__ADD1_WIDE(t, T, cls, P) { T v_; memcpy(&v_, p, sizeof v_); cf__add1_##cls(a, v_); }
#define CF__ADD1_HALF(t, T, cls, P) { float v_; memcpy(&v_, p, sizeof v_); cf__add1_f(a, (double)v_); }
#define CF__ADD1_FLOAT(t, T, cls, P) { T v_; memcpy(&v_, p, sizeof v_); cf__add1_f(a, (double)v_); }
#define CF__ADD1_CPLX(t, T, cls, P) { T v_; memcpy(&v_, p, sizeof v_); a->count++; \
    a->nan += (v_.re != v_.re) | (v_.im != v_.im); }
#define CF__ADD1_BOOL(t, T, cls, P) { T v_; memcpy(&v_, p, sizeof v_); cf__add1_u(a, v_ != 0); }

static void cf__add1(cf__acc *a, int type, const void *p)
{
    switch (type) {
#define CF__ADD1_CASE(t, k, T, cat, cls, lo, hi, par) \
    case CF__ST_##t: CF__ADD1_##cat(t, T, cls, par) break;
    CF__STATS_TYPES(CF__ADD1_CASE)
#undef CF__ADD1_CASE
    default: break;
    }
}

/* ------------------------------------------------------------------ */
/* Staging: gather, swap, widen                                         */
/* ------------------------------------------------------------------ */

typedef struct {
    char kind;
    int64_t width;       /* bytes of a stored element */
    size_t swap_unit;    /* bytes each swap reverses (complex: a part) */
    size_t align;        /* alignment the kernel needs */
    cf__kernel_fn kernel;
} cf__stats_type;

static const cf__stats_type cf__stats_types[CF__ST_COUNT] = {
#define CF__TYPE_ENTRY(t, k, T, cat, cls, lo, hi, par) \
    { k, (int64_t)sizeof(T), k == 'c' ? sizeof(T) / 2 : sizeof(T), _Alignof(T), cf__k_##t },
    CF__STATS_TYPES(CF__TYPE_ENTRY)
#undef CF__TYPE_ENTRY
};

static int cf__stats_type_index(const cf__dtype *d)
{
    for (int t = 0; t < CF__ST_COUNT; t++)
        if (cf__stats_types[t].kind == d->kind && cf__stats_types[t].width == d->width) return t;
    return -1;
}

/* The stage: 8 KiB of elements, aligned for every type and accessed only
 * through member types, plus the floats that f2 widens to. */
#define CF__STAGE_BYTES 8192
typedef struct {
    union {
        unsigned char b[CF__STAGE_BYTES];
        int16_t i2[CF__STAGE_BYTES / 2];
        int32_t i4[CF__STAGE_BYTES / 4];
        int64_t i8[CF__STAGE_BYTES / 8];
        float f4[CF__STAGE_BYTES / 4];
        double f8[CF__STAGE_BYTES / 8];
        cf__stats_c8 c8[CF__STAGE_BYTES / 8];
        cf__stats_c16 c16[CF__STAGE_BYTES / 16];
    } u;
    float wide[CF__STAGE_BYTES / 8];
} cf__stage_buf;

/* Copy cnt elements of `width` bytes, `stride` bytes apart, to dst. */
static void cf__gather(unsigned char *dst, const unsigned char *src, size_t stride, size_t width, size_t cnt)
{
    if (stride == width) {
        memcpy(dst, src, cnt * width);
        return;
    }
    switch (width) {
#define CF__GATHER_W(w) \
    case w: for (size_t i = 0; i < cnt; i++) memcpy(dst + i * w, src + i * stride, w); break;
    CF__GATHER_W(1)
    CF__GATHER_W(2)
    CF__GATHER_W(4)
    CF__GATHER_W(8)
    CF__GATHER_W(16)
#undef CF__GATHER_W
    default:
        for (size_t i = 0; i < cnt; i++) memcpy(dst + i * width, src + i * stride, width);
        break;
    }
}

/* Fold cnt elements, `stride` bytes apart, into one accumulator, through
 * the stage (block by block). */
static void cf__stage_run(cf__acc *a, int type, const unsigned char *src, size_t stride, size_t cnt, int swap,
                          int avx2)
{
    const cf__stats_type *ty = &cf__stats_types[type];
    size_t w = (size_t)ty->width;
    cf__stage_buf buf;
    size_t cap = type == CF__ST_f2 ? sizeof buf.wide / sizeof buf.wide[0] : CF__STAGE_BYTES / w;
    while (cnt) {
        size_t m = cnt < cap ? cnt : cap;
        cf__gather(buf.u.b, src, stride, w, m);
        if (swap) cf__swap_inplace(buf.u.b, ty->swap_unit, m * (w / ty->swap_unit));
        if (type == CF__ST_f2) {
            for (size_t i = 0; i < m; i++) buf.wide[i] = cf__stats_half((uint16_t)buf.u.i2[i]);
            cf__k_f4(a, buf.wide, m, avx2);
        } else {
            ty->kernel(a, buf.u.b, m, avx2);
        }
        cnt -= m;
        if (cnt) src += m * stride;   /* never past the caller's data */
    }
}

/* One element through a small aligned stage. */
static void cf__stage_one(cf__acc *a, int type, const unsigned char *src, int swap)
{
    const cf__stats_type *ty = &cf__stats_types[type];
    union {
        unsigned char b[16];
        int16_t i2;
        int32_t i4;
        int64_t i8;
        float f4;
        double f8;
        cf__stats_c8 c8;
        cf__stats_c16 c16;
    } e;
    memcpy(e.b, src, (size_t)ty->width);
    if (swap) cf__swap_inplace(e.b, ty->swap_unit, (size_t)ty->width / ty->swap_unit);
    if (type == CF__ST_f2) e.f4 = cf__stats_half((uint16_t)e.i2);
    cf__add1(a, type, e.b);
}

#if defined(CF__STATS_SSE2)
/* Rows of 2 to 4 native doubles (positions, velocities) folded in place:
 * the component in each lane of the k-th register repeats every
 * lcm(nmemb, 2) values, so a few registers per quantity keep every
 * component apart without gathering.  Returns the values consumed (whole
 * periods, a multiple of nmemb), 0 when it leaves the work to the general
 * path: too few values, or a min or max that is a zero (whose sign the
 * general path decides exactly). */
static size_t cf__f8_interleaved(cf__acc *acc, int64_t nmemb, int64_t c0, const double *x, size_t n)
{
    size_t period = nmemb % 2 ? 2 * (size_t)nmemb : (size_t)nmemb, regs = period / 2;
    size_t periods = n / period;
    if (nmemb < 2 || nmemb > 4 || periods < 16) return 0;
    __m128d vmn[4], vmx[4], vs[4];
    __m128i vc[4];
    for (size_t r = 0; r < regs; r++) {
        vmn[r] = _mm_set1_pd(INFINITY);
        vmx[r] = _mm_set1_pd(-INFINITY);
        vs[r] = _mm_setzero_pd();
        vc[r] = _mm_setzero_si128();
    }
    const double *q = x;
    for (size_t b = 0; b < periods; b++, q += period) {
        for (size_t r = 0; r < regs; r++) {
            __m128d v = _mm_loadu_pd(q + 2 * r);
            __m128d bad = _mm_cmpunord_pd(v, v);
            vc[r] = _mm_sub_epi64(vc[r], _mm_castpd_si128(bad));
            vs[r] = _mm_add_pd(vs[r], _mm_andnot_pd(bad, v));
            vmn[r] = _mm_min_pd(v, vmn[r]);
            vmx[r] = _mm_max_pd(v, vmx[r]);
        }
    }
    double mn[4], mx[4], sum[4];
    int64_t nan[4];
    for (int64_t j = 0; j < nmemb; j++) {
        mn[j] = INFINITY;
        mx[j] = -INFINITY;
        sum[j] = 0.0;
        nan[j] = 0;
    }
    for (size_t r = 0; r < regs; r++) {
        double tmn[2], tmx[2], ts[2];
        int64_t tc[2];
        _mm_storeu_pd(tmn, vmn[r]);
        _mm_storeu_pd(tmx, vmx[r]);
        _mm_storeu_pd(ts, vs[r]);
        _mm_storeu_si128((__m128i *)(void *)tc, vc[r]);
        for (size_t l = 0; l < 2; l++) {
            size_t j = (size_t)((c0 + (int64_t)(2 * r + l)) % nmemb);
            mn[j] = tmn[l] < mn[j] ? tmn[l] : mn[j];
            mx[j] = tmx[l] > mx[j] ? tmx[l] : mx[j];
            sum[j] += ts[l];
            nan[j] += tc[l];
        }
    }
    for (int64_t j = 0; j < nmemb; j++)
        if (mn[j] == 0 || mx[j] == 0) return 0;
    for (int64_t j = 0; j < nmemb; j++)
        cf__float_part(&acc[j], mn[j], mx[j], sum[j], nan[j], periods * period / (size_t)nmemb, 0);
    return periods * period;
}
#endif


#if defined(CF__STATS_AVX2)
/* Rows of 1 to 4 native f8 or f4 values folded in place with AVX2, the
 * way most columns are written (positions, velocities, masses).
 *
 * Lane q of the k-th register holds value 4k + q (f8) or 8k + q (f4) of
 * a "round" of R registers; a round is a whole number of rows (R = 3 for
 * rows of 3, otherwise R = 4 (f8) or 2 (f4)), so lane q always meets
 * component (c0 + q) % nmemb.  Rounds are folded in blocks of at most
 * CF__AVX_BLOCK values; each block is first folded optimistically: min,
 * max and an unmasked sum only.  NaN propagates through addition, so a
 * block whose lane sums are all numbers had no NaN (and no inf next to
 * -inf): its NaN count is 0 and its sums are the masked sums bit for bit.
 * Otherwise the block is folded again carefully (NaN masks and counts).
 * MINPD/MAXPD return their second operand when the first is NaN, which is
 * `x < m ? x : m` exactly, as in the SSE2 kernels.  f4 sums are in double:
 * each half of a register's floats is widened as it is loaded.
 *
 * Lane results go to the components in lane order, so the sums depend only
 * on the data and the split of the calls.  A component whose min or max is
 * a zero has its zeros looked up (the sign rule), in that block only. */
#define CF__AVX_BLOCK 8192   /* values per block: 64 KiB of f8, in L2 */

typedef struct {
    double mn[32], mx[32], sum[32]; /* per lane of a round */
    int64_t nan[32];
} cf__lanes;

__attribute__((target("avx2"), always_inline))
static inline void cf__f8_round_avx2(const double *x, size_t rounds, const int R, const int careful, cf__lanes *out)
{
    __m256d vmn[4], vmx[4], vs[4];
    __m256i vc[4];
    for (int r = 0; r < R; r++) {
        vmn[r] = _mm256_set1_pd(INFINITY);
        vmx[r] = _mm256_set1_pd(-INFINITY);
        vs[r] = _mm256_setzero_pd();
        vc[r] = _mm256_setzero_si256();
    }
#pragma GCC unroll 2
    for (size_t b = 0; b < rounds; b++, x += 4 * R) {
        for (int r = 0; r < R; r++) {
            __m256d v = _mm256_loadu_pd(x + 4 * r);
            if (careful) {
                __m256d bad = _mm256_cmp_pd(v, v, _CMP_UNORD_Q);
                vc[r] = _mm256_sub_epi64(vc[r], _mm256_castpd_si256(bad));
                vs[r] = _mm256_add_pd(vs[r], _mm256_andnot_pd(bad, v));
            } else {
                vs[r] = _mm256_add_pd(vs[r], v);
            }
            vmn[r] = _mm256_min_pd(v, vmn[r]);
            vmx[r] = _mm256_max_pd(v, vmx[r]);
        }
    }
    for (int r = 0; r < R; r++) {
        _mm256_storeu_pd(out->mn + 4 * r, vmn[r]);
        _mm256_storeu_pd(out->mx + 4 * r, vmx[r]);
        _mm256_storeu_pd(out->sum + 4 * r, vs[r]);
        _mm256_storeu_si256((__m256i *)(void *)(out->nan + 4 * r), vc[r]);
    }
}

__attribute__((target("avx2"), always_inline))
static inline void cf__f4_round_avx2(const float *x, size_t rounds, const int R, const int careful, cf__lanes *out)
{
    __m256 vmn[3], vmx[3];
    __m256d vlo[3], vhi[3];
    __m256i vc[3];
    for (int r = 0; r < R; r++) {
        vmn[r] = _mm256_set1_ps(INFINITY);
        vmx[r] = _mm256_set1_ps(-INFINITY);
        vlo[r] = _mm256_setzero_pd();
        vhi[r] = _mm256_setzero_pd();
        vc[r] = _mm256_setzero_si256();
    }
#pragma GCC unroll 2
    for (size_t b = 0; b < rounds; b++, x += 8 * R) {
        for (int r = 0; r < R; r++) {
            __m256 v = _mm256_loadu_ps(x + 8 * r);
            if (careful) {
                __m256 bad = _mm256_cmp_ps(v, v, _CMP_UNORD_Q);
                vc[r] = _mm256_sub_epi32(vc[r], _mm256_castps_si256(bad));
                __m256 g = _mm256_andnot_ps(bad, v);
                vlo[r] = _mm256_add_pd(vlo[r], _mm256_cvtps_pd(_mm256_castps256_ps128(g)));
                vhi[r] = _mm256_add_pd(vhi[r], _mm256_cvtps_pd(_mm256_extractf128_ps(g, 1)));
            } else {
                vlo[r] = _mm256_add_pd(vlo[r], _mm256_cvtps_pd(_mm_loadu_ps(x + 8 * r)));
                vhi[r] = _mm256_add_pd(vhi[r], _mm256_cvtps_pd(_mm_loadu_ps(x + 8 * r + 4)));
            }
            vmn[r] = _mm256_min_ps(v, vmn[r]);
            vmx[r] = _mm256_max_ps(v, vmx[r]);
        }
    }
    for (int r = 0; r < R; r++) {
        float tmn[8], tmx[8];
        int32_t tc[8];
        _mm256_storeu_ps(tmn, vmn[r]);
        _mm256_storeu_ps(tmx, vmx[r]);
        _mm256_storeu_pd(out->sum + 8 * r, vlo[r]);
        _mm256_storeu_pd(out->sum + 8 * r + 4, vhi[r]);
        _mm256_storeu_si256((__m256i *)(void *)tc, vc[r]);
        for (int l = 0; l < 8; l++) {
            out->mn[8 * r + l] = tmn[l];
            out->mx[8 * r + l] = tmx[l];
            out->nan[8 * r + l] = tc[l];
        }
    }
}

/* One block of whole rounds; `careful` 0 or 1, R the registers per round. */
#define CF__ROUND_FN(ty, R, careful)                                                                   \
    __attribute__((target("avx2"))) static void cf__##ty##_round_##R##_##careful(const void *x, size_t rounds, \
                                                                               cf__lanes *out)        \
    {                                                                                                  \
        cf__##ty##_round_avx2(x, rounds, R, careful, out);                                             \
    }
CF__ROUND_FN(f8, 3, 0)
CF__ROUND_FN(f8, 3, 1)
CF__ROUND_FN(f8, 4, 0)
CF__ROUND_FN(f8, 4, 1)
CF__ROUND_FN(f4, 2, 0)
CF__ROUND_FN(f4, 2, 1)
CF__ROUND_FN(f4, 3, 0)
CF__ROUND_FN(f4, 3, 1)
#undef CF__ROUND_FN

typedef void (*cf__round_fn)(const void *x, size_t rounds, cf__lanes *out);

/* Which zeros component values x[first + k*stride] (k < cnt) hold, as
 * cf__zeros64 / cf__zeros32 say. */
static unsigned cf__zeros_strided(const void *p, int f4, size_t first, size_t stride, size_t cnt)
{
    unsigned z = 0;
    for (size_t k = 0, i = first; k < cnt && z != 3u; k++, i += stride) {
        double v;
        if (f4) {
            float f;
            memcpy(&f, (const unsigned char *)p + 4 * i, sizeof f);
            v = f;
        } else {
            memcpy(&v, (const unsigned char *)p + 8 * i, sizeof v);
        }
        if (v == 0) z |= signbit(v) ? 2u : 1u;
    }
    return z;
}

/* Fold as many whole rounds of x[0..n) (f8, or f4 if f4) as possible into
 * acc (nmemb 1 to 4 components, the first value being component c0);
 * returns the values consumed, a multiple of nmemb. */
static size_t cf__float_rows_avx2(cf__acc *acc, int64_t nmemb, int64_t c0, const void *x, size_t n, int f4)
{
    int R = nmemb == 3 ? 3 : f4 ? 2 : 4;
    size_t lanes = (size_t)R * (f4 ? 8 : 4), w = f4 ? 4 : 8;
    cf__round_fn fast, careful;
    if (f4) {
        fast = R == 3 ? cf__f4_round_3_0 : cf__f4_round_2_0;
        careful = R == 3 ? cf__f4_round_3_1 : cf__f4_round_2_1;
    } else {
        fast = R == 3 ? cf__f8_round_3_0 : cf__f8_round_4_0;
        careful = R == 3 ? cf__f8_round_3_1 : cf__f8_round_4_1;
    }
    size_t per_block = CF__AVX_BLOCK / lanes, used = 0;
    const unsigned char *p = x;
    while (n - used >= lanes) {
        size_t rounds = (n - used) / lanes;
        if (rounds > per_block) rounds = per_block;
        const unsigned char *q = p + used * w;
        cf__lanes t;
        fast(q, rounds, &t);
        int again = 0;
        for (size_t l = 0; l < lanes; l++) again |= t.sum[l] != t.sum[l];
        if (again) careful(q, rounds, &t);
        double mn[4], mx[4], sum[4];
        int64_t nan[4];
        for (int64_t j = 0; j < nmemb; j++) {
            mn[j] = INFINITY;
            mx[j] = -INFINITY;
            sum[j] = 0.0;
            nan[j] = 0;
        }
        for (size_t l = 0; l < lanes; l++) {
            size_t j = (size_t)((c0 + (int64_t)l) % nmemb);
            mn[j] = t.mn[l] < mn[j] ? t.mn[l] : mn[j];
            mx[j] = t.mx[l] > mx[j] ? t.mx[l] : mx[j];
            sum[j] += t.sum[l];
            nan[j] += t.nan[l];
        }
        size_t values = rounds * lanes, per_comp = values / (size_t)nmemb;
        for (int64_t j = 0; j < nmemb; j++) {
            unsigned zeros = 0;
            if (mn[j] == 0 || mx[j] == 0)
                zeros = cf__zeros_strided(q, f4, (size_t)((j - c0 + nmemb) % nmemb), (size_t)nmemb, per_comp);
            cf__float_part(&acc[j], mn[j], mx[j], sum[j], nan[j], per_comp, zeros);
        }
        used += values;
    }
    return used;
}
#endif

/* Elements per span of the vector path: each component of a span is
 * gathered and folded as one run. */
#define CF__SPAN ((int64_t)1 << 15)

void cf__acc_add(cf__acc *acc, int64_t nmemb, int64_t component0, const void *data, int64_t n,
                 const cf__dtype *d)
{
    cf__acc_add_simd(acc, nmemb, component0, data, n, d, cf__stats_have_avx2());
}

void cf__acc_add_simd(cf__acc *acc, int64_t nmemb, int64_t component0, const void *data, int64_t n,
                      const cf__dtype *d, int avx2)
{
    if (n <= 0 || nmemb <= 0 || !acc || !data) return;
    int64_t c0 = component0 % nmemb;
    if (c0 < 0) c0 += nmemb;
    int type = cf__stats_type_index(d);
    if (type < 0) {
        /* S (and anything without values we understand): count only */
        int64_t ncomp = n < nmemb ? n : nmemb;
        for (int64_t q = 0; q < ncomp; q++) {
            int64_t comp = (c0 + q) % nmemb;
            acc[comp].count += (n - q - 1) / nmemb + 1;
        }
        return;
    }
    const cf__stats_type *ty = &cf__stats_types[type];
    const unsigned char *p = data;
    size_t w = (size_t)ty->width;
    int swap = d->order != cf__dtype_native_order() && ty->swap_unit > 1;

#if defined(CF__STATS_AVX2)
    if (avx2 && nmemb <= 4 && (type == CF__ST_f8 || type == CF__ST_f4) && !swap && (uintptr_t)p % w == 0 &&
        n >= 64) {
        size_t used = cf__float_rows_avx2(acc, nmemb, c0, p, (size_t)n, type == CF__ST_f4);
        p += used * w; /* whole rows: the next value is component c0 again */
        n -= (int64_t)used;
        if (n == 0) return;
    }
#endif

    if (nmemb == 1) {
        if (!swap && type != CF__ST_f2 && (uintptr_t)p % ty->align == 0) {
            for (int64_t done = 0; done < n;) {
                size_t m = (uint64_t)(n - done) < CF__KBLOCK ? (size_t)(n - done) : CF__KBLOCK;
                ty->kernel(acc, p + (size_t)done * w, m, avx2);
                done += (int64_t)m;
            }
        } else {
            cf__stage_run(acc, type, p, w, (size_t)n, swap, avx2);
        }
        return;
    }

    if (CF__SPAN / nmemb < 16) {
        /* few values per component and span: fold value by value */
        int64_t comp = c0;
        for (int64_t k = 0; k < n; k++) {
            cf__stage_one(&acc[comp], type, p + (size_t)k * w, swap);
            if (++comp == nmemb) comp = 0;
        }
        return;
    }

#if defined(CF__STATS_SSE2)
    if (type == CF__ST_f8 && !swap && (uintptr_t)p % sizeof(double) == 0) {
        size_t used = cf__f8_interleaved(acc, nmemb, c0, (const double *)(const void *)p, (size_t)n);
        p += used * w; /* whole periods: the next value is component c0 again */
        n -= (int64_t)used;
        if (n == 0) return;
    }
#endif

    /* whole spans of rows: each component gathered with stride nmemb */
    size_t stride = (size_t)nmemb * w;
    for (int64_t done = 0; done < n;) {
        int64_t span = n - done < CF__SPAN ? n - done : CF__SPAN;
        int64_t cstart = (c0 + done % nmemb) % nmemb;
        int64_t ncomp = span < nmemb ? span : nmemb;
        for (int64_t q = 0; q < ncomp; q++) {
            int64_t comp = (cstart + q) % nmemb;
            size_t cnt = (size_t)((span - q - 1) / nmemb + 1);
            cf__stage_run(&acc[comp], type, p + (size_t)(done + q) * w, stride, cnt, swap, avx2);
        }
        done += span;
    }
}

/* ------------------------------------------------------------------ */
/* Chunk layout                                                         */
/* ------------------------------------------------------------------ */

int64_t cf__stats_default_chunk_rows(int64_t rowbytes)
{
    const int64_t max_rows = (int64_t)1 << 20, max_bytes = (int64_t)8 << 20;
    if (rowbytes <= 0) return max_rows;
    int64_t fit = max_bytes / rowbytes;
    int64_t r = max_rows;
    while (r > 1 && r > fit) r >>= 1;
    return r;
}

static int64_t cf__chunks_of(int64_t rows, int64_t chunk_rows)
{
    return rows <= 0 ? 0 : (rows - 1) / chunk_rows + 1;
}

/* Total accumulators for the layout of h with chunk_rows, or -1 if that
 * does not fit in memory sizes.  Nothing that size is ever allocated: it
 * bounds which CHUNK a statistics text may choose. */
static int64_t cf__stats_total(const cf__header *h, int64_t chunk_rows)
{
    int64_t chunks = 0;
    for (int64_t b = 0; b < h->nfile; b++) {
        int64_t c = cf__chunks_of(h->rows[b], chunk_rows);
        if (c > INT64_MAX - chunks) return -1;
        chunks += c;
    }
    if (h->nmemb > 0 && chunks > INT64_MAX / h->nmemb) return -1;
    int64_t total = chunks * (h->nmemb > 0 ? h->nmemb : 0);
    if ((uint64_t)total > SIZE_MAX / sizeof(cf__acc)) return -1;
    return total;
}

int cf__stats_alloc(cf__stats *s, const cf__header *h, int64_t chunk_rows, const char *path, cf_error *err)
{
    memset(s, 0, sizeof *s);
    if (chunk_rows < 1)
        return CF_FAIL(err, CF_EARG, "%s: chunk rows must be at least 1, not %lld", path, (long long)chunk_rows);
    if (h->nfile < 0 || h->nmemb < 0 || (uint64_t)h->nfile >= SIZE_MAX / sizeof(cf__blob_stats))
        return CF_FAIL(err, CF_EARG, "%s: bad layout for statistics", path);
    s->first_chunk = malloc(((size_t)h->nfile + 1) * sizeof *s->first_chunk);
    s->blob = calloc(h->nfile ? (size_t)h->nfile : 1, sizeof *s->blob);
    s->valid = malloc(h->nfile ? (size_t)h->nfile : 1);
    if (!s->first_chunk || !s->blob || !s->valid) {
        cf__stats_free(s);
        return CF_FAIL(err, CF_ENOMEM, "%s: out of memory for the statistics of %lld blobs", path,
                       (long long)h->nfile);
    }
    s->chunk_rows = chunk_rows;
    s->nmemb = h->nmemb;
    s->nfile = h->nfile;
    s->cls = cf__acc_class(&h->dtype);
    s->first_chunk[0] = 0;
    for (int64_t b = 0; b < h->nfile; b++) {
        int64_t nc = cf__chunks_of(h->rows[b], chunk_rows);
        if (nc > INT64_MAX - s->first_chunk[b]) {
            cf__stats_free(s);
            return CF_FAIL(err, CF_ENOMEM, "%s: too many statistics chunks for %lld rows per chunk", path,
                           (long long)chunk_rows);
        }
        s->first_chunk[b + 1] = s->first_chunk[b] + nc;
        s->valid[b] = h->rows[b] <= 0;
    }
    return 0;
}

static void cf__blob_stats_drop(cf__blob_stats *bs)
{
    for (int64_t i = 0; i < bs->nrun; i++) free(bs->run[i].acc);
    free(bs->run);
    memset(bs, 0, sizeof *bs);
}

void cf__stats_free(cf__stats *s)
{
    for (int64_t b = 0; s->blob && b < s->nfile; b++) cf__blob_stats_drop(&s->blob[b]);
    free(s->first_chunk);
    free(s->blob);
    free(s->valid);
    memset(s, 0, sizeof *s);
}

int cf__stats_grow(cf__stats *s, const cf__header *h, int64_t old_nfile, const char *path, cf_error *err)
{
    if (!s->first_chunk || s->chunk_rows < 1 || s->nmemb != h->nmemb)
        return CF_FAIL(err, CF_EARG, "%s: statistics do not match the column", path);
    cf__stats n;
    int rc = cf__stats_alloc(&n, h, s->chunk_rows, path, err);
    if (rc) return rc;
    int64_t keep = old_nfile;
    if (keep > s->nfile) keep = s->nfile;
    if (keep > h->nfile) keep = h->nfile;
    for (int64_t b = 0; b < keep; b++) {
        int64_t nc = n.first_chunk[b + 1] - n.first_chunk[b];
        if (nc != s->first_chunk[b + 1] - s->first_chunk[b]) continue;   /* blob changed size */
        n.blob[b] = s->blob[b];   /* the accumulators move over */
        memset(&s->blob[b], 0, sizeof s->blob[b]);
        n.valid[b] = s->valid[b];
    }
    cf__stats_free(s);
    *s = n;
    return 0;
}

int64_t cf__stats_blob_chunks(const cf__stats *s, int64_t b)
{
    if (!s->first_chunk || b < 0 || b >= s->nfile) return 0;
    return s->first_chunk[b + 1] - s->first_chunk[b];
}

/* Runs of blob bs starting before chunk k. */
static int64_t cf__runs_before(const cf__blob_stats *bs, int64_t k)
{
    int64_t lo = 0, hi = bs->nrun;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (bs->run[mid].lo < k) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

const cf__acc *cf__stats_peek(const cf__stats *s, int64_t b, int64_t k)
{
    if (k < 0 || k >= cf__stats_blob_chunks(s, b)) return NULL;
    const cf__blob_stats *bs = &s->blob[b];
    int64_t i = cf__runs_before(bs, k + 1) - 1;
    if (i < 0 || k >= bs->run[i].lo + bs->run[i].n) return NULL;
    return bs->run[i].acc + (k - bs->run[i].lo) * s->nmemb;
}

/* Is run r within its own length of chunks [lo, hi)?  Such runs are
 * merged with it: filling the gap at most doubles what they hold. */
static int cf__run_near(const cf__acc_run *r, int64_t lo, int64_t hi)
{
    int64_t gap = r->lo >= hi ? r->lo - hi : lo >= r->lo + r->n ? lo - (r->lo + r->n) : 0;
    return gap <= r->n;
}

cf__acc *cf__stats_chunks(cf__stats *s, int64_t b, int64_t k0, int64_t k1)
{
    int64_t nc = cf__stats_blob_chunks(s, b);
    if (k0 < 0 || k1 <= k0 || k1 > nc) return NULL;
    cf__blob_stats *bs = &s->blob[b];
    if (bs->lost) return NULL;
    int64_t pos = cf__runs_before(bs, k0 + 1);
    if (pos > 0 && k1 <= bs->run[pos - 1].lo + bs->run[pos - 1].n)
        return bs->run[pos - 1].acc + (k0 - bs->run[pos - 1].lo) * s->nmemb;
    /* The new run: [k0, k1) and the runs near it, and, when it grows one,
     * room for as much again in the direction it grows (clamped to the
     * blob), so that writes walking through a blob cost amortized constant
     * time per chunk.  What is held stays within a small multiple of the
     * chunks actually written, wherever in the blob they are. */
    int64_t lo = k0, hi = k1, a = cf__runs_before(bs, k1), z = a, held = 0;
    for (int pass = 0; pass < 2; pass++) {
        for (int moved = 1; moved;) {
            moved = 0;
            while (a > 0 && cf__run_near(&bs->run[a - 1], lo, hi)) {
                a--;
                if (bs->run[a].lo < lo) lo = bs->run[a].lo;
                if (bs->run[a].lo + bs->run[a].n > hi) hi = bs->run[a].lo + bs->run[a].n;
                held += bs->run[a].n;
                moved = 1;
            }
            while (z < bs->nrun && cf__run_near(&bs->run[z], lo, hi)) {
                if (bs->run[z].lo < lo) lo = bs->run[z].lo;
                if (bs->run[z].lo + bs->run[z].n > hi) hi = bs->run[z].lo + bs->run[z].n;
                held += bs->run[z].n;
                z++;
                moved = 1;
            }
        }
        if (pass || held == 0) break;
        if (k0 < bs->run[a].lo) lo = lo > held ? lo - held : 0;
        if (k1 > bs->run[z - 1].lo + bs->run[z - 1].n) hi = held < nc - hi ? hi + held : nc;
    }
    int64_t count = (hi - lo) * s->nmemb;
    cf__acc *acc = NULL;
    if ((uint64_t)count <= SIZE_MAX / sizeof *acc) acc = malloc(count ? (size_t)count * sizeof *acc : 1);
    cf__acc_run *runs = bs->run;
    if (acc && z - a == 0 && bs->nrun == bs->cap) {
        int64_t cap = bs->cap ? 2 * bs->cap : 4;
        runs = realloc(bs->run, (size_t)cap * sizeof *runs);
        if (runs) {
            bs->run = runs;
            bs->cap = cap;
        }
    }
    if (!acc || !runs) {
        /* No room: this blob's statistics are unknown until it is reset. */
        free(acc);
        cf__blob_stats_drop(bs);
        bs->lost = 1;
        return NULL;
    }
    for (int64_t i = 0; i < count; i++) cf__acc_init_class(&acc[i], s->cls);
    for (int64_t i = a; i < z; i++) {
        if (bs->run[i].n && s->nmemb)
            memcpy(acc + (bs->run[i].lo - lo) * s->nmemb, bs->run[i].acc,
                   (size_t)(bs->run[i].n * s->nmemb) * sizeof *acc);
        free(bs->run[i].acc);
    }
    /* runs [a, z) become the one new run at a */
    if (z - a != 1)
        memmove(&bs->run[a + 1], &bs->run[z], (size_t)(bs->nrun - z) * sizeof *bs->run);
    bs->nrun += 1 - (z - a);
    bs->run[a].lo = lo;
    bs->run[a].n = hi - lo;
    bs->run[a].acc = acc;
    return acc + (k0 - lo) * s->nmemb;
}

cf__acc *cf__stats_chunk(cf__stats *s, int64_t b, int64_t k)
{
    return cf__stats_chunks(s, b, k, k + 1);
}

void cf__stats_reset_blob(cf__stats *s, int64_t b)
{
    if (b >= 0 && b < s->nfile && s->blob) cf__blob_stats_drop(&s->blob[b]);
}

void cf__stats_lose_blob(cf__stats *s, int64_t b)
{
    if (b < 0 || b >= s->nfile || !s->blob) return;
    cf__blob_stats_drop(&s->blob[b]);
    s->blob[b].lost = 1;
}

int cf__stats_blob_whole(const cf__stats *s, int64_t b)
{
    int64_t nc = cf__stats_blob_chunks(s, b);
    if (b < 0 || b >= s->nfile || s->blob[b].lost) return 0;
    const cf__blob_stats *bs = &s->blob[b];
    return nc == 0 || s->nmemb == 0 || (bs->nrun == 1 && bs->run[0].lo == 0 && bs->run[0].n == nc);
}

/* ------------------------------------------------------------------ */
/* The file                                                             */
/* ------------------------------------------------------------------ */

/* Numbers in the file never depend on the caller's locale: formatting and
 * parsing run under the "C" LC_NUMERIC of this thread (POSIX uselocale). */
typedef struct {
    locale_t c, old;
} cf__c_numeric;

static int cf__c_numeric_enter(cf__c_numeric *l)
{
    l->c = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
    if (l->c == (locale_t)0) return -1;
    l->old = uselocale(l->c);
    return 0;
}

static void cf__c_numeric_leave(cf__c_numeric *l)
{
    uselocale(l->old);
    freelocale(l->c);
}

/* Decimal digits of u at out (no terminator); returns their number. */
static size_t cf__fmt_u64(char *out, uint64_t u)
{
    char tmp[20];
    size_t n = 0;
    do {
        tmp[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    for (size_t i = 0; i < n; i++) out[i] = tmp[n - 1 - i];
    return n;
}

static size_t cf__fmt_i64(char *out, int64_t v)
{
    if (v >= 0) return cf__fmt_u64(out, (uint64_t)v);
    out[0] = '-';
    return 1 + cf__fmt_u64(out + 1, 0u - (uint64_t)v);
}

#if defined(__SIZEOF_INT128__)
__extension__ typedef unsigned __int128 cf__u128;

static int cf__fmt_digits(char *out, int neg, uint64_t d, int x);

/* printf("%.17g", v) for finite v with 1e-11 <= |v| < 2^64, the range
 * statistics live in, exactly as the C library prints it (17 significant
 * digits of the exact binary value, rounded half to even, then the %g
 * rules); -1 elsewhere.  v = m 2^e, so v 10^k = m 5^k 2^(e+k): with
 * k <= 27, m 5^k < 2^116 and the digits come from one 128-bit product
 * and a shift whose remainder decides the rounding.  printf's general
 * conversion is a multi-precision one, about 40 times slower, and a
 * statistics file formats three doubles per chunk and component. */
static int cf__fmt_g17_fast(char *out, double v)
{
    static const uint64_t pow5[28] = {
        UINT64_C(1), UINT64_C(5), UINT64_C(25), UINT64_C(125), UINT64_C(625), UINT64_C(3125),
        UINT64_C(15625), UINT64_C(78125), UINT64_C(390625), UINT64_C(1953125), UINT64_C(9765625),
        UINT64_C(48828125), UINT64_C(244140625), UINT64_C(1220703125), UINT64_C(6103515625),
        UINT64_C(30517578125), UINT64_C(152587890625), UINT64_C(762939453125), UINT64_C(3814697265625),
        UINT64_C(19073486328125), UINT64_C(95367431640625), UINT64_C(476837158203125),
        UINT64_C(2384185791015625), UINT64_C(11920928955078125), UINT64_C(59604644775390625),
        UINT64_C(298023223876953125), UINT64_C(1490116119384765625), UINT64_C(7450580596923828125),
    };
    const uint64_t lo = UINT64_C(10000000000000000), hi = UINT64_C(100000000000000000); /* 1e16, 1e17 */
    double av = fabs(v);
    if (av >= 1e17 && av < 18446744073709551616.0) {
        /* an integer of 18 to 20 digits (integer sums): drop 1 to 3 of them */
        uint64_t u = (uint64_t)av, p = 10;
        int x = 17;
        while (x < 19 && u / p >= hi) {
            p *= 10;
            x++;
        }
        uint64_t q = u / p, rem = u % p, d = q + (rem > p / 2 || (rem == p / 2 && (q & 1u)));
        if (d == hi) {
            d = lo;
            x++;
        }
        return cf__fmt_digits(out, v < 0, d, x);
    }
    if (!(av >= 1e-11 && av < 1e17)) return -1;
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    int be = (int)((bits >> 52) & 0x7ffu);
    if (be == 0) return -1; /* subnormal: not in range anyway */
    uint64_t m = (bits & ((UINT64_C(1) << 52) - 1)) | (UINT64_C(1) << 52);
    int e = be - 1075;
    int x = (int)floor(log10(av)); /* the decimal exponent, maybe off by one */
    /* x is right when 1e16 <= v 10^(16-x) < 1e17 before rounding; d is
     * that number's integer part, then rounded */
    uint64_t d = 0;
    for (int tries = 0;; tries++) {
        int k = 16 - x;
        if (k < 0 || k > 27 || tries > 3) return -1;
        cf__u128 nn = (cf__u128)m * pow5[k];
        int sh = e + k, up = 0;
        if (sh >= 0) {
            if (sh >= 64 || nn > (cf__u128)(UINT64_MAX >> sh)) {
                x++;
                continue;
            }
            d = (uint64_t)(nn << sh);
        } else if (-sh >= 128) {
            d = 0;
        } else {
            int r = -sh;
            cf__u128 q = nn >> r, rem = nn - (q << r), half = (cf__u128)1 << (r - 1);
            if (q >= (cf__u128)hi) {
                x++;
                continue;
            }
            d = (uint64_t)q;
            up = rem > half || (rem == half && (d & 1u));
        }
        if (d >= hi) {
            x++;
        } else if (d < lo) {
            x--;
        } else {
            d += (uint64_t)up;
            if (d == hi) { /* 9.99..95 rounded up to 10.0 */
                d = lo;
                x++;
            }
            break;
        }
    }
    return cf__fmt_digits(out, v < 0, d, x);
}

/* The %.17g spelling of (-1)^neg d 10^(x-16), d 17 digits (1e16 <= d < 1e17). */
static int cf__fmt_digits(char *out, int neg, uint64_t d, int x)
{
    char dig[17];
    for (int i = 16; i >= 0; i--) {
        dig[i] = (char)('0' + d % 10);
        d /= 10;
    }
    int nd = 17;
    while (nd > 1 && dig[nd - 1] == '0') nd--;
    size_t n = 0;
    if (neg) out[n++] = '-';
    if (x < -4 || x >= 17) {
        out[n++] = dig[0];
        if (nd > 1) {
            out[n++] = '.';
            for (int i = 1; i < nd; i++) out[n++] = dig[i];
        }
        out[n++] = 'e';
        out[n++] = x < 0 ? '-' : '+';
        int ax = x < 0 ? -x : x;
        if (ax < 10) out[n++] = '0';
        n += cf__fmt_u64(out + n, (uint64_t)ax);
    } else if (x >= 0) {
        for (int i = 0; i <= x; i++) out[n++] = dig[i];
        if (nd > x + 1) {
            out[n++] = '.';
            for (int i = x + 1; i < nd; i++) out[n++] = dig[i];
        }
    } else {
        out[n++] = '0';
        out[n++] = '.';
        for (int i = 0; i < -x - 1; i++) out[n++] = '0';
        for (int i = 0; i < nd; i++) out[n++] = dig[i];
    }
    out[n] = '\0';
    return (int)n;
}
#endif

/* A double as the file spells it: nan, inf, -inf or %.17g (round-trips).
 * out has room for 32 characters. */
static int cf__fmt_double(char *out, size_t cap, double v)
{
    if (v != v) return snprintf(out, cap, "nan");
    if (isinf(v)) return snprintf(out, cap, v > 0 ? "inf" : "-inf");
    if (v == 0) return snprintf(out, cap, signbit(v) ? "-0" : "0");
#if defined(__SIZEOF_INT128__)
    if (cap >= 32) {
        int n = cf__fmt_g17_fast(out, v);
        if (n >= 0) return n;
    }
#endif
    return snprintf(out, cap, "%.17g", v);
}

/* For the tests: cf__fmt_double. */
int cf__stats_fmt_double(char *out, size_t cap, double v)
{
    return cf__fmt_double(out, cap, v);
}

/* Upper bounds of the line lengths (numbers: 20 digits and a sign; doubles
 * at most 24 characters). */
#define CF__HEAD_MAX 160
#define CF__BLOB_LINE_MAX 64
#define CF__CHUNK_LINE_MAX 200

int cf__stats_format(const cf__stats *s, const cf__header *h, char **text, size_t *len, const char *path,
                     cf_error *err)
{
    *text = NULL;
    *len = 0;
    if (s->nmemb != h->nmemb || s->nfile != h->nfile || s->chunk_rows < 1 || !s->first_chunk)
        return CF_FAIL(err, CF_EARG, "%s: statistics do not match the header (NMEMB %lld/%lld, NFILE %lld/%lld)",
                       path, (long long)s->nmemb, (long long)h->nmemb, (long long)s->nfile,
                       (long long)h->nfile);
    /* which blobs go out, and how long the text can get */
    uint64_t cap = CF__HEAD_MAX;
    for (int64_t b = 0; b < h->nfile; b++) {
        int64_t nc = s->first_chunk[b + 1] - s->first_chunk[b];
        if (!s->valid[b] || nc != cf__chunks_of(h->rows[b], s->chunk_rows) || !cf__stats_blob_whole(s, b)) continue;
        uint64_t lines = (uint64_t)nc * (uint64_t)s->nmemb;
        if (lines > (SIZE_MAX / 2 - cap) / CF__CHUNK_LINE_MAX)
            return CF_FAIL(err, CF_ENOMEM, "%s: statistics too large to format", path);
        cap += CF__BLOB_LINE_MAX + lines * CF__CHUNK_LINE_MAX;
    }
    char *buf = malloc((size_t)cap);
    if (!buf) return CF_FAIL(err, CF_ENOMEM, "%s: out of memory formatting statistics", path);
    cf__c_numeric loc;
    if (cf__c_numeric_enter(&loc)) {
        free(buf);
        return CF_FAIL(err, CF_ENOMEM, "%s: cannot create the C locale", path);
    }
    char token[CF_DTYPE_MAX];
    cf__dtype_format(&h->dtype, token);
    size_t n = (size_t)snprintf(buf, (size_t)cap,
                                CF__STATS_MAGIC_LINE "\nDTYPE: %s\nNMEMB: %" PRId64 "\nNFILE: %" PRId64
                                "\nCHUNK: %" PRId64 "\n",
                                token, h->nmemb, h->nfile, s->chunk_rows);
    char cls = cf__acc_class(&h->dtype);
    for (int64_t b = 0; b < h->nfile; b++) {
        int64_t nc = s->first_chunk[b + 1] - s->first_chunk[b];
        if (!s->valid[b] || nc != cf__chunks_of(h->rows[b], s->chunk_rows) || !cf__stats_blob_whole(s, b)) continue;
        n += (size_t)snprintf(buf + n, (size_t)cap - n, "%06" PRIX64 ": %" PRId64 " : %" PRIu32 "\n",
                              (uint64_t)b, h->rows[b], h->sums[b]);
        for (int64_t k = 0; k < nc; k++) {
            for (int64_t j = 0; j < s->nmemb; j++) {
                const cf__acc *a = &s->blob[b].run[0].acc[k * s->nmemb + j];
                /* "<k> <j> count=<n> nan=<n> min=<v> max=<v> sum=<v>\n", at
                 * most CF__CHUNK_LINE_MAX bytes, by hand: this runs for
                 * every chunk and component at every commit */
                char *o = buf + n;
                o += cf__fmt_i64(o, k);
                *o++ = ' ';
                o += cf__fmt_i64(o, j);
                memcpy(o, " count=", 7);
                o += 7;
                o += cf__fmt_i64(o, a->count);
                memcpy(o, " nan=", 5);
                o += 5;
                o += cf__fmt_i64(o, a->nan);
                memcpy(o, " min=", 5);
                o += 5;
                switch (cls) {
                case 'i': o += cf__fmt_i64(o, a->v.i.min); break;
                case 'u': o += cf__fmt_u64(o, a->v.u.min); break;
                case 'f': o += cf__fmt_double(o, 32, a->v.f.min); break;
                default: *o++ = '-'; break;
                }
                memcpy(o, " max=", 5);
                o += 5;
                switch (cls) {
                case 'i': o += cf__fmt_i64(o, a->v.i.max); break;
                case 'u': o += cf__fmt_u64(o, a->v.u.max); break;
                case 'f': o += cf__fmt_double(o, 32, a->v.f.max); break;
                default: *o++ = '-'; break;
                }
                memcpy(o, " sum=", 5);
                o += 5;
                if (cls) o += cf__fmt_double(o, 32, a->sum);
                else *o++ = '-';
                *o++ = '\n';
                *o = '\0';
                n = (size_t)(o - buf);
            }
        }
    }
    cf__c_numeric_leave(&loc);
    *text = buf;
    *len = n;
    return 0;
}

/* --- parsing ------------------------------------------------------- */

/* A line of the text without its LF (and a CR before it).  Returns 0 when
 * no complete line is left: a final piece without LF is a torn write and
 * is never used (it could be a number cut short). */
static int cf__next_line(const char **p, const char *end, const char **ls, const char **le)
{
    if (*p >= end) return 0;
    const char *nl = memchr(*p, '\n', (size_t)(end - *p));
    if (!nl) return 0;
    *ls = *p;
    *le = nl > *p && nl[-1] == '\r' ? nl - 1 : nl;
    *p = nl + 1;
    return 1;
}

static int cf__is_blank(char c)
{
    return c == ' ' || c == '\t';
}

static void cf__skip_blank(const char **p, const char *e)
{
    while (*p < e && cf__is_blank(**p)) (*p)++;
}

/* Decimal digits into a uint64 (at least one digit, no overflow). */
static int cf__lex_u64(const char **p, const char *e, uint64_t *out)
{
    const char *q = *p;
    uint64_t v = 0;
    if (q >= e || *q < '0' || *q > '9') return -1;
    while (q < e && *q >= '0' && *q <= '9') {
        unsigned dg = (unsigned)(*q - '0');
        if (v > (UINT64_MAX - dg) / 10) return -1;
        v = v * 10 + dg;
        q++;
    }
    *p = q;
    *out = v;
    return 0;
}

/* A non-negative decimal that fits int64. */
static int cf__lex_count(const char **p, const char *e, int64_t *out)
{
    uint64_t v;
    if (cf__lex_u64(p, e, &v) || v > (uint64_t)INT64_MAX) return -1;
    *out = (int64_t)v;
    return 0;
}

static int cf__lex_i64(const char **p, const char *e, int64_t *out)
{
    const char *q = *p;
    int neg = q < e && *q == '-';
    uint64_t v;
    q += neg;
    if (cf__lex_u64(&q, e, &v)) return -1;
    if (neg ? v > (uint64_t)INT64_MAX + 1 : v > (uint64_t)INT64_MAX) return -1;
    *out = neg ? (v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v) : (int64_t)v;
    *p = q;
    return 0;
}

/* A whole token [p, e) as a double: nan, inf, -inf, or a decimal number
 * (digits, '.', exponent; strtod under the C locale). */
static int cf__parse_double(const char *p, const char *e, double *out)
{
    size_t n = (size_t)(e - p);
    if (n == 3 && memcmp(p, "nan", 3) == 0) { *out = NAN; return 0; }
    if (n == 3 && memcmp(p, "inf", 3) == 0) { *out = INFINITY; return 0; }
    if (n == 4 && memcmp(p, "-inf", 4) == 0) { *out = -INFINITY; return 0; }
    char tmp[64];
    if (n == 0 || n >= sizeof tmp) return -1;
    int digits = 0;
    for (size_t i = 0; i < n; i++) {
        char c = p[i];
        if (c >= '0' && c <= '9') digits = 1;
        else if (c != '.' && c != '-' && c != '+' && c != 'e' && c != 'E') return -1;
    }
    if (!digits) return -1;
    memcpy(tmp, p, n);
    tmp[n] = '\0';
    char *stop = NULL;
    double v = strtod(tmp, &stop);
    if (stop != tmp + n) return -1;
    *out = v;
    return 0;
}

/* What the chunk line gave, before it is checked against the blob. */
typedef struct {
    int64_t k, j;
    cf__acc a;
} cf__chunk_rec;

/* The fields of a chunk line "<k> <j> name=value ...": count, nan, min,
 * max and sum exactly once each; other names are skipped (later
 * versions).  Returns NULL or what is wrong. */
static const char *cf__parse_chunk_line(const char *p, const char *e, char cls, cf__chunk_rec *r)
{
    if (cf__lex_count(&p, e, &r->k)) return "bad chunk index";
    if (p >= e || !cf__is_blank(*p)) return "bad chunk index";
    cf__skip_blank(&p, e);
    if (cf__lex_count(&p, e, &r->j)) return "bad component index";
    cf__acc_init_class(&r->a, cls);
    unsigned seen = 0;
    for (;;) {
        int had_blank = p < e && cf__is_blank(*p);
        cf__skip_blank(&p, e);
        if (p >= e) break;
        if (!had_blank) return "fields must be separated by spaces";
        const char *ns = p;
        while (p < e && *p != '=' && !cf__is_blank(*p)) p++;
        if (p >= e || *p != '=' || p == ns) return "expected name=value";
        size_t nl = (size_t)(p - ns);
        const char *vs = ++p;
        while (p < e && !cf__is_blank(*p)) p++;
        const char *ve = p;
        if (vs == ve) return "empty value";
        const char *q = vs;
#define CF__NAME_IS(s) (nl == sizeof(s) - 1 && memcmp(ns, s, nl) == 0)
        unsigned bit;
        if (CF__NAME_IS("count")) {
            bit = 1;
            if (cf__lex_count(&q, ve, &r->a.count) || q != ve) return "bad count";
        } else if (CF__NAME_IS("nan")) {
            bit = 2;
            if (cf__lex_count(&q, ve, &r->a.nan) || q != ve) return "bad nan count";
        } else if (CF__NAME_IS("min") || CF__NAME_IS("max")) {
            int is_min = ns[1] == 'i';
            bit = is_min ? 4 : 8;
            if (cls == 'i') {
                if (cf__lex_i64(&q, ve, is_min ? &r->a.v.i.min : &r->a.v.i.max) || q != ve)
                    return "bad integer min/max";
            } else if (cls == 'u') {
                if (cf__lex_u64(&q, ve, is_min ? &r->a.v.u.min : &r->a.v.u.max) || q != ve)
                    return "bad unsigned min/max";
            } else if (cls == 'f') {
                double v;
                if (cf__parse_double(vs, ve, &v) || v != v) return "bad float min/max";
                if (is_min) r->a.v.f.min = v;
                else r->a.v.f.max = v;
            } else if (ve - vs != 1 || *vs != '-') {
                return "min/max must be '-' for this dtype";
            }
        } else if (CF__NAME_IS("sum")) {
            bit = 16;
            if (cls) {
                if (cf__parse_double(vs, ve, &r->a.sum)) return "bad sum";
            } else if (ve - vs != 1 || *vs != '-') {
                return "sum must be '-' for this dtype";
            }
        } else {
            continue;   /* a field of a later version */
        }
#undef CF__NAME_IS
        if (seen & bit) return "repeated field";
        seen |= bit;
    }
    if (seen != 31) return "missing field (count, nan, min, max and sum are required)";
    return NULL;
}

/* Is the record of chunk k (of a blob with `rows` rows) what a writer
 * can produce? */
static int cf__chunk_plausible(const cf__acc *a, char cls, char kind, int64_t rows, int64_t chunk, int64_t k)
{
    int64_t r = rows - k * chunk;
    if (r > chunk) r = chunk;
    if (a->count != r || a->nan > a->count) return 0;
    switch (cls) {
    case 'i': return a->nan == 0 && a->v.i.min <= a->v.i.max;
    case 'u': return a->nan == 0 && a->v.u.min <= a->v.u.max && (kind != 'b' || a->v.u.max <= 1);
    case 'f':
        if (a->nan == a->count) return a->v.f.min == INFINITY && a->v.f.max == -INFINITY;
        return a->v.f.min <= a->v.f.max;
    default: return kind == 'c' || a->nan == 0;
    }
}

/* Blob states while parsing (in s->valid). */
enum { CF__B_UNSEEN = 0, CF__B_GOOD = 1, CF__B_BAD = 2, CF__B_STALE = 3 };

static void cf__blob_reset(cf__stats *s, int64_t b, char cls)
{
    (void)cls;
    cf__stats_reset_blob(s, b);
}

/* Everything invalid (and empty) again, in place. */
static void cf__stats_reset(cf__stats *s, const cf__header *h, char cls)
{
    (void)cls;
    for (int64_t b = 0; b < s->nfile; b++) {
        cf__stats_reset_blob(s, b);
        s->valid[b] = h->rows[b] <= 0;
    }
}

/* Minimal bytes of a chunk line ("0 0 count=1 nan=0 min=0 max=0 sum=0\n"),
 * to bound what a text of a given length can describe. */
#define CF__CHUNK_LINE_MIN 32
/* Accumulators any file may ask for (2.5 MiB). */
#define CF__PARSE_FREE_ACCS ((int64_t)1 << 16)

int cf__stats_parse(cf__stats *s, const cf__header *h, const char *text, size_t len, const char *path,
                    cf_error *err)
{
    cf__stats_free(s);
    const char *p = text ? text : "", *end = text ? text + len : p;
    const char *ls, *le;
    int64_t line = 0;
    int rc = 0;
    char cls = cf__acc_class(&h->dtype);
    int64_t def_chunk = cf__stats_default_chunk_rows(h->dtype.width * (h->nmemb > 0 ? h->nmemb : 0));
    int64_t nmemb = 0, nfile = 0, chunk = 0;
    cf__c_numeric loc;
    int have_loc = 0;

    /* the five fixed lines */
    static const char *const keys[5] = { CF__STATS_MAGIC_LINE, "DTYPE: ", "NMEMB: ", "NFILE: ", "CHUNK: " };
    char token[CF_DTYPE_MAX], want[CF_DTYPE_MAX];
    int dtype_match = 0;
    for (int i = 0; i < 5; i++) {
        line++;
        if (!cf__next_line(&p, end, &ls, &le)) {
            rc = CF_FAIL(err, CF_EFORMAT, "%s:%lld: truncated before the %s line", path, (long long)line,
                         i ? keys[i] : "first");
            goto fail;
        }
        size_t kl = strlen(keys[i]);
        if ((size_t)(le - ls) < kl || memcmp(ls, keys[i], kl) != 0) {
            rc = CF_FAIL(err, CF_EFORMAT, "%s:%lld: expected '%s'", path, (long long)line,
                         i ? keys[i] : CF__STATS_MAGIC_LINE);
            goto fail;
        }
        const char *v = ls + kl;
        if (i == 0) {
            if (v != le) {
                rc = CF_FAIL(err, CF_EFORMAT, "%s:1: expected '%s'", path, CF__STATS_MAGIC_LINE);
                goto fail;
            }
        } else if (i == 1) {
            size_t tl = (size_t)(le - v);
            cf__dtype_format(&h->dtype, want);
            dtype_match = tl < sizeof token && tl > 0;
            if (dtype_match) {
                memcpy(token, v, tl);
                token[tl] = '\0';
                dtype_match = strcmp(token, want) == 0;
            }
        } else {
            int64_t x;
            const int64_t maxv[5] = { 0, 0, CF__NMEMB_MAX, CF__NFILE_MAX, INT64_MAX };
            if (cf__lex_count(&v, le, &x) || v != le || x > maxv[i] || (i == 4 && x < 1)) {
                rc = CF_FAIL(err, CF_EFORMAT, "%s:%lld: bad %.5s value", path, (long long)line, keys[i]);
                goto fail;
            }
            if (i == 2) nmemb = x;
            else if (i == 3) nfile = x;
            else chunk = x;
        }
    }
    if (!dtype_match || nmemb != h->nmemb) {
        /* statistics of another column (re-created by another tool) */
        return cf__stats_alloc(s, h, def_chunk, path, err);
    }
    {
        /* The layout the file's CHUNK implies must be no finer than the
         * default one, than what this text could hold, or than a small
         * fixed amount: writes through this handle accumulate per chunk,
         * and a CHUNK of 1 row would make them hold one accumulator per
         * value written. */
        int64_t total = cf__stats_total(h, chunk), dtotal = cf__stats_total(h, def_chunk);
        int64_t bound = (int64_t)(len / CF__CHUNK_LINE_MIN);
        if (dtotal > bound) bound = dtotal;
        if (bound < CF__PARSE_FREE_ACCS) bound = CF__PARSE_FREE_ACCS;
        if (total < 0 || total > bound) {
            rc = CF_FAIL(err, CF_EFORMAT, "%s:5: CHUNK %lld needs more statistics than the file can hold",
                         path, (long long)chunk);
            goto fail;
        }
    }
    rc = cf__stats_alloc(s, h, chunk, path, err);
    if (rc) return rc;
    if (cf__c_numeric_enter(&loc)) {
        cf__stats_free(s);
        return CF_FAIL(err, CF_ENOMEM, "%s: cannot create the C locale", path);
    }
    have_loc = 1;
    for (int64_t b = 0; b < s->nfile; b++) s->valid[b] = CF__B_UNSEEN;

    {
        int64_t cur = -1;          /* blob whose chunk lines follow */
        int64_t cur_rows = 0, cur_chunks = 0, expect = 0;
        int tracked = 0;           /* cur is current: its records are kept */
        for (;;) {
            int more = cf__next_line(&p, end, &ls, &le);
            line++;
            int is_blob = 0, is_chunk = 0;
            if (more) {
                const char *q = ls;
                int dec = 1;
                while (q < le && cf__hex_digit(*q) >= 0) {
                    dec &= *q <= '9';
                    q++;
                }
                is_blob = q > ls && q < le && *q == ':';
                is_chunk = q > ls && dec && q < le && cf__is_blank(*q);
            }
            if (!more || is_blob) {
                /* close the previous blob */
                if (tracked) {
                    int ok = s->valid[cur] == CF__B_UNSEEN && expect == cur_chunks * nmemb;
                    s->valid[cur] = ok ? CF__B_GOOD : CF__B_BAD;
                    if (!ok) cf__blob_reset(s, cur, cls);
                }
                tracked = 0;
            }
            if (!more) break;
            if (is_blob) {
                const char *q = ls;
                uint64_t id = 0;
                int nd = 0;
                while (*q != ':') {
                    id = id * 16 + (uint64_t)cf__hex_digit(*q++);
                    if (++nd > 16) break;
                }
                uint64_t rows, sum;
                q++;
                cf__skip_blank(&q, le);
                int bad = nd > 16 || cf__lex_u64(&q, le, &rows) || rows > (uint64_t)INT64_MAX;
                if (!bad) {
                    cf__skip_blank(&q, le);
                    bad = q >= le || *q++ != ':';
                }
                if (!bad) {
                    cf__skip_blank(&q, le);
                    bad = cf__lex_u64(&q, le, &sum) || sum > UINT32_MAX;
                }
                if (!bad) {
                    cf__skip_blank(&q, le);
                    bad = q != le;
                }
                if (bad) {
                    rc = CF_FAIL(err, CF_EFORMAT, "%s:%lld: bad blob line (expected '<ID>: <rows> : <rawsum>')",
                                 path, (long long)line);
                    goto fail;
                }
                if (id >= (uint64_t)nfile) {
                    rc = CF_FAIL(err, CF_EFORMAT, "%s:%lld: blob %llX is not below NFILE %lld", path,
                                 (long long)line, (unsigned long long)id, (long long)nfile);
                    goto fail;
                }
                cur = (int64_t)id;
                cur_rows = (int64_t)rows;
                cur_chunks = cf__chunks_of(cur_rows, chunk);
                expect = 0;
                tracked = 0;
                if (cur < h->nfile) {
                    unsigned char st = s->valid[cur];
                    if (st != CF__B_UNSEEN) {
                        /* recorded twice: trust neither */
                        if (st == CF__B_GOOD) cf__blob_reset(s, cur, cls);
                        s->valid[cur] = CF__B_BAD;
                    } else if (cur_rows == h->rows[cur] && sum == h->sums[cur]) {
                        tracked = 1;
                    } else {
                        s->valid[cur] = CF__B_STALE;
                    }
                }
                continue;
            }
            if (!is_chunk) continue;   /* a line of a later version */
            if (cur < 0) {
                rc = CF_FAIL(err, CF_EFORMAT, "%s:%lld: chunk line before any blob line", path, (long long)line);
                goto fail;
            }
            cf__chunk_rec r;
            const char *why = cf__parse_chunk_line(ls, le, cls, &r);
            if (why) {
                rc = CF_FAIL(err, CF_EFORMAT, "%s:%lld: %s", path, (long long)line, why);
                goto fail;
            }
            if (r.k >= cur_chunks || r.j >= nmemb) {
                rc = CF_FAIL(err, CF_EFORMAT, "%s:%lld: chunk %lld component %lld is outside blob %llX", path,
                             (long long)line, (long long)r.k, (long long)r.j, (unsigned long long)cur);
                goto fail;
            }
            if (!tracked) continue;
            if (r.k * nmemb + r.j != expect ||
                !cf__chunk_plausible(&r.a, cls, h->dtype.kind, cur_rows, chunk, r.k)) {
                /* out of order, repeated or impossible: the blob is not trusted */
                tracked = 0;
                s->valid[cur] = CF__B_BAD;
                cf__blob_reset(s, cur, cls);
                continue;
            }
            /* held as the lines come: memory follows the text, not the
             * rows the header claims */
            cf__acc *slot = cf__stats_chunk(s, cur, r.k);
            if (!slot) {
                tracked = 0;
                s->valid[cur] = CF__B_BAD;
                cf__blob_reset(s, cur, cls);
                continue;
            }
            slot[r.j] = r.a;
            expect++;
        }
    }
    for (int64_t b = 0; b < s->nfile; b++) s->valid[b] = s->valid[b] == CF__B_GOOD || h->rows[b] <= 0;
    cf__c_numeric_leave(&loc);
    return 0;

fail:
    if (have_loc) cf__c_numeric_leave(&loc);
    if (s->first_chunk) {
        cf__stats_reset(s, h, cls);
    } else {
        cf_error keep;
        if (err) keep = *err;
        if (cf__stats_alloc(s, h, def_chunk, path, err)) return CF_ENOMEM;
        if (err) *err = keep;
    }
    return rc;
}
