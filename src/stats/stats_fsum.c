/* stats_fsum.c - exact sums of native f4 and f8 rows of 1 to 4 components
 * in a pass of their own: without AVX2, and for the blocks the AVX2 row
 * folder's one-pass sums refuse (stats_rows.c).  Every value is split
 * without error into parts on a few fixed grids, whose lane sums are exact
 * in double, and only those lane sums (a few per block) go to the exact
 * accumulator (stats_xsum.h).
 *
 * Why it is exact.  Take a block of at most 2^10 values per lane, all with
 * |x| <= 2^(s-11) for a power of two 2^s (2^-1022 <= 2^s <= 2^1022), and
 * c = 1.5 * 2^s.  Then c + x lies in [2^s, 2^(s+1)], whose doubles are the
 * multiples of g = 2^(s-52), so t = fl(c + x) is c plus x rounded to a
 * multiple of g, and q = t - c is exact (Sterbenz).  r = x - q is the error
 * of rounding x to a grid no finer than its own, which is a double: exact
 * too.  Every q is a multiple of g below 2^(s-11) + g in magnitude, so each
 * partial sum of at most 2^10 of them is a multiple of g below 2^s: exact.
 * The r are at most g/2 = 2^(s-53) in magnitude, and go through the same
 * step with s2 = max(s - 42, -1022); what is left after that (r2, zero for
 * values within about 2^30 of the largest of the block) is added value by
 * value.  So the exact accumulator receives the exact sum of the block,
 * however the rows were cut into blocks, calls and writes. */
#include "stats_impl.h"

#include <math.h>
#include <string.h>

/* Lanes: 12 values, a whole number of rows of 1, 2, 3 or 4 components. */
#define CF__FS_LANES 12
/* Steps of 12 values per block: at most 2^10 values per lane. */
#define CF__FS_STEPS 1024

/* Value i of the block as a double (NaN as 0: NaNs have no sum). */
static inline double cf__fs_load(const void *p, size_t i, int f4)
{
    double v;
    if (f4) {
        float f;
        memcpy(&f, (const char *)p + i * 4, sizeof f);
        v = (double)f;
    } else {
        memcpy(&v, (const char *)p + i * 8, sizeof v);
    }
    return v == v ? v : 0.0;
}

/* Value by value, exactly (a block with an infinity, or too large). */
static void cf__fs_slow(cf__acc *acc, int64_t nmemb, int64_t comp, const void *p, size_t n, int f4)
{
    for (size_t i = 0; i < n; i++) {
        double v = cf__fs_load(p, i, f4);
        if (v != 0.0) cf__xsum_add_f8(&acc[comp].xs, v);
        if (++comp == nmemb) comp = 0;
    }
}

/* The grids of a SIMD block whose largest |x| is mx: 2^s and 2^s2 (see
 * the top; CF__FS_BLOCK spells the same out, which keeps its loop as fast
 * as it was).  1 if they serve, 0 if the block sums to zero, -1 if it has an
 * infinity or values too large (then it goes value by value). */
__attribute__((always_inline)) static inline int cf__fs_grids(double mx, int *s, int *s2)
{
    if (mx == 0.0) return 0;
    int e;
    (void)frexp(mx, &e); /* mx < 2^e */
    *s = e + 11 > -1022 ? e + 11 : -1022;
    if (isinf(mx) || *s > 1022) return -1;
    *s2 = *s - 42 > -1022 ? *s - 42 : -1022;
    return 1;
}

/* The lane sums of both grids into their components' accumulators. */
static void cf__fs_lane_sums(cf__acc *acc, int64_t nmemb, int64_t c0, const double *q1, const double *q2)
{
    for (int l = 0; l < CF__FS_LANES; l++) {
        cf__xsum *xs = &acc[(c0 + l) % nmemb].xs;
        if (q1[l] != 0.0) cf__xsum_add_f8(xs, q1[l]);
        if (q2[l] != 0.0) cf__xsum_add_f8(xs, q2[l]);
    }
}

/* The values far below the block's largest: what both grids left of them
 * (their last bits), exactly, value by value. */
static void cf__fs_rest(cf__acc *acc, int64_t nmemb, int64_t c0, const void *x, size_t steps, int f4, double c1,
                        double c2)
{
    for (size_t k = 0; k < steps; k++)
        for (int l = 0; l < CF__FS_LANES; l++) {
            double v = cf__fs_load(x, k * CF__FS_LANES + (size_t)l, f4);
            double r = v - ((c1 + v) - c1);
            double r2 = r - ((c2 + r) - c2);
            if (r2 != 0.0) cf__xsum_add_f8(&acc[(c0 + l) % nmemb].xs, r2);
        }
}

/* One block of `steps` whole steps of 12 values, the first of component c0. */
#define CF__FS_BLOCK(NAME, T)                                                                     \
    static void NAME(cf__acc *acc, int64_t nmemb, int64_t c0, const T *x, size_t steps)          \
    {                                                                                            \
        double m[CF__FS_LANES] = { 0 };                                                          \
        for (size_t k = 0; k < steps; k++)                                                       \
            for (int l = 0; l < CF__FS_LANES; l++) {                                             \
                double a = fabs((double)x[k * CF__FS_LANES + (size_t)l]);                        \
                m[l] = a > m[l] ? a : m[l]; /* NaN: kept out */                                  \
            }                                                                                    \
        double mx = 0.0;                                                                         \
        for (int l = 0; l < CF__FS_LANES; l++) mx = m[l] > mx ? m[l] : mx;                       \
        if (mx == 0.0) return;                                                                   \
        int e;                                                                                   \
        (void)frexp(mx, &e); /* mx < 2^e */                                                      \
        int s = e + 11 > -1022 ? e + 11 : -1022;                                                 \
        if (isinf(mx) || s > 1022) {                                                             \
            cf__fs_slow(acc, nmemb, c0, x, steps * CF__FS_LANES, sizeof(T) == 4);                \
            return;                                                                              \
        }                                                                                        \
        int s2 = s - 42 > -1022 ? s - 42 : -1022;                                                \
        const double c1 = ldexp(1.5, s), c2 = ldexp(1.5, s2);                                    \
        double q1[CF__FS_LANES] = { 0 }, q2[CF__FS_LANES] = { 0 }, left[CF__FS_LANES] = { 0 };   \
        for (size_t k = 0; k < steps; k++)                                                       \
            for (int l = 0; l < CF__FS_LANES; l++) {                                             \
                double v = (double)x[k * CF__FS_LANES + (size_t)l];                              \
                v = v == v ? v : 0.0;                                                            \
                double a = (c1 + v) - c1, r = v - a;                                             \
                double b = (c2 + r) - c2, r2 = r - b;                                            \
                q1[l] += a;                                                                      \
                q2[l] += b;                                                                      \
                left[l] = fabs(r2) > left[l] ? fabs(r2) : left[l];                               \
            }                                                                                    \
        double any = 0.0;                                                                        \
        for (int l = 0; l < CF__FS_LANES; l++) {                                                 \
            cf__xsum *xs = &acc[(c0 + l) % nmemb].xs;                                            \
            if (q1[l] != 0.0) cf__xsum_add_f8(xs, q1[l]);                                        \
            if (q2[l] != 0.0) cf__xsum_add_f8(xs, q2[l]);                                        \
            any = left[l] > any ? left[l] : any;                                                 \
        }                                                                                        \
        if (any != 0.0) cf__fs_rest(acc, nmemb, c0, x, steps, sizeof(T) == 4, c1, c2);           \
    }
#if !defined(CF__STATS_SSE2)
CF__FS_BLOCK(cf__fs_block_f8, double)
#endif
CF__FS_BLOCK(cf__fs_block_f4, float)

#if defined(CF__STATS_SSE2)
/* The f8 block of CF__FS_BLOCK with SSE2, six lanes of two: the same
 * operations on the same values, so the same parts (only the order of the
 * exact lane sums changes, which exactness makes irrelevant). */
static void cf__fs_block_f8_sse2(cf__acc *acc, int64_t nmemb, int64_t c0, const double *x, size_t steps)
{
    const __m128d absmask = _mm_castsi128_pd(_mm_set1_epi64x(INT64_MAX));
    __m128d m[6];
    for (int u = 0; u < 6; u++) m[u] = _mm_setzero_pd();
    for (size_t k = 0; k < steps; k++)
        for (int u = 0; u < 6; u++) {
            __m128d v = _mm_loadu_pd(x + k * CF__FS_LANES + 2 * (size_t)u);
            m[u] = _mm_max_pd(_mm_and_pd(v, absmask), m[u]); /* NaN: m kept */
        }
    double t[CF__FS_LANES];
    for (int u = 0; u < 6; u++) _mm_storeu_pd(t + 2 * u, m[u]);
    double mx = 0.0;
    for (int l = 0; l < CF__FS_LANES; l++) mx = t[l] > mx ? t[l] : mx;
    int s = 0, s2 = 0, grids = cf__fs_grids(mx, &s, &s2);
    if (grids < 0) cf__fs_slow(acc, nmemb, c0, x, steps * CF__FS_LANES, 0);
    if (grids <= 0) return;
    const double c1s = ldexp(1.5, s), c2s = ldexp(1.5, s2);
    const __m128d c1 = _mm_set1_pd(c1s), c2 = _mm_set1_pd(c2s);
    __m128d q1[6], q2[6], left = _mm_setzero_pd();
    for (int u = 0; u < 6; u++) q1[u] = q2[u] = _mm_setzero_pd();
    for (size_t k = 0; k < steps; k++)
        for (int u = 0; u < 6; u++) {
            __m128d v = _mm_loadu_pd(x + k * CF__FS_LANES + 2 * (size_t)u);
            v = _mm_andnot_pd(_mm_cmpunord_pd(v, v), v);
            __m128d a = _mm_sub_pd(_mm_add_pd(c1, v), c1), r = _mm_sub_pd(v, a);
            __m128d b = _mm_sub_pd(_mm_add_pd(c2, r), c2), r2 = _mm_sub_pd(r, b);
            q1[u] = _mm_add_pd(q1[u], a);
            q2[u] = _mm_add_pd(q2[u], b);
            left = _mm_or_pd(left, r2);
        }
    double t1[CF__FS_LANES], t2[CF__FS_LANES], lf[2];
    for (int u = 0; u < 6; u++) {
        _mm_storeu_pd(t1 + 2 * u, q1[u]);
        _mm_storeu_pd(t2 + 2 * u, q2[u]);
    }
    _mm_storeu_pd(lf, left);
    cf__fs_lane_sums(acc, nmemb, c0, t1, t2);
    if (lf[0] != 0.0 || lf[1] != 0.0) /* or-ed bits: any r2 not +-0 shows */
        cf__fs_rest(acc, nmemb, c0, x, steps, 0, c1s, c2s);
}
#endif

#if defined(CF__STATS_AVX2)
/* Four doubles of the block at step k, vector u (f4: widened exactly). */
__attribute__((target("avx2"), always_inline))
static inline __m256d cf__fs_load4(const void *x, size_t k, int u, const int f4)
{
    size_t i = k * CF__FS_LANES + 4 * (size_t)u;
    if (f4) return _mm256_cvtps_pd(_mm_loadu_ps((const float *)x + i));
    return _mm256_loadu_pd((const double *)x + i);
}

/* The block of CF__FS_BLOCK with AVX2, three lanes of four: the same
 * operations on the same values, so the same parts. */
__attribute__((target("avx2"), always_inline))
static inline void cf__fs_block_avx2(cf__acc *acc, int64_t nmemb, int64_t c0, const void *x, size_t steps,
                                     const int f4)
{
    const __m256d absmask = _mm256_castsi256_pd(_mm256_set1_epi64x(INT64_MAX));
    __m256d m[3];
    for (int u = 0; u < 3; u++) m[u] = _mm256_setzero_pd();
    for (size_t k = 0; k < steps; k++)
        for (int u = 0; u < 3; u++)
            m[u] = _mm256_max_pd(_mm256_and_pd(cf__fs_load4(x, k, u, f4), absmask), m[u]); /* NaN: m kept */
    double t[CF__FS_LANES];
    for (int u = 0; u < 3; u++) _mm256_storeu_pd(t + 4 * u, m[u]);
    double mx = 0.0;
    for (int l = 0; l < CF__FS_LANES; l++) mx = t[l] > mx ? t[l] : mx;
    int s = 0, s2 = 0, grids = cf__fs_grids(mx, &s, &s2);
    if (grids < 0) cf__fs_slow(acc, nmemb, c0, x, steps * CF__FS_LANES, f4);
    if (grids <= 0) return;
    const double c1s = ldexp(1.5, s), c2s = ldexp(1.5, s2);
    const __m256d c1 = _mm256_set1_pd(c1s), c2 = _mm256_set1_pd(c2s);
    __m256d q1[3], q2[3], left = _mm256_setzero_pd();
    for (int u = 0; u < 3; u++) q1[u] = q2[u] = _mm256_setzero_pd();
    /* f4: floats have 24-bit significands, so the first grid (41 bits
     * below the block's largest) usually leaves nothing: the second grid
     * runs only when something was left. */
    for (int pass = f4 ? 0 : 1; pass < 2; pass++) {
        for (size_t k = 0; k < steps; k++)
            for (int u = 0; u < 3; u++) {
                __m256d v = cf__fs_load4(x, k, u, f4);
                v = _mm256_andnot_pd(_mm256_cmp_pd(v, v, _CMP_UNORD_Q), v);
                __m256d a = _mm256_sub_pd(_mm256_add_pd(c1, v), c1), r = _mm256_sub_pd(v, a);
                if (pass == 0) {
                    q1[u] = _mm256_add_pd(q1[u], a);
                    left = _mm256_or_pd(left, r);
                    continue;
                }
                __m256d b = _mm256_sub_pd(_mm256_add_pd(c2, r), c2), r2 = _mm256_sub_pd(r, b);
                if (!f4) q1[u] = _mm256_add_pd(q1[u], a); /* f4: added in pass 0 */
                q2[u] = _mm256_add_pd(q2[u], b);
                left = _mm256_or_pd(left, r2);
            }
        if (pass == 0) {
            double l0[4];
            _mm256_storeu_pd(l0, left);
            if (l0[0] == 0.0 && l0[1] == 0.0 && l0[2] == 0.0 && l0[3] == 0.0) break;
            left = _mm256_setzero_pd();
        }
    }
    double t1[CF__FS_LANES], t2[CF__FS_LANES], lf[4];
    for (int u = 0; u < 3; u++) {
        _mm256_storeu_pd(t1 + 4 * u, q1[u]);
        _mm256_storeu_pd(t2 + 4 * u, q2[u]);
    }
    _mm256_storeu_pd(lf, left);
    cf__fs_lane_sums(acc, nmemb, c0, t1, t2);
    if (lf[0] != 0.0 || lf[1] != 0.0 || lf[2] != 0.0 || lf[3] != 0.0)
        cf__fs_rest(acc, nmemb, c0, x, steps, f4, c1s, c2s);
}

__attribute__((target("avx2")))
static void cf__fs_block_f8_avx2(cf__acc *acc, int64_t nmemb, int64_t c0, const void *x, size_t steps)
{
    cf__fs_block_avx2(acc, nmemb, c0, x, steps, 0);
}

__attribute__((target("avx2")))
static void cf__fs_block_f4_avx2(cf__acc *acc, int64_t nmemb, int64_t c0, const void *x, size_t steps)
{
    cf__fs_block_avx2(acc, nmemb, c0, x, steps, 1);
}
#endif

void cf__float_sums_native(cf__acc *acc, int64_t nmemb, int64_t c0, const void *p, size_t n, int f4, int avx2)
{
    (void)avx2;
    size_t w = f4 ? 4 : 8, done = 0;
    if (nmemb <= 4 && (uintptr_t)p % w == 0) {
        while (n - done >= CF__FS_LANES) {
            size_t steps = (n - done) / CF__FS_LANES;
            if (steps > CF__FS_STEPS) steps = CF__FS_STEPS;
            const char *q = (const char *)p + done * w;
            /* 12 values are whole rows: every block starts at component c0 */
#if defined(CF__STATS_AVX2)
            if (avx2 && f4) cf__fs_block_f4_avx2(acc, nmemb, c0, q, steps);
            else if (avx2) cf__fs_block_f8_avx2(acc, nmemb, c0, q, steps);
            else
#endif
            if (f4) cf__fs_block_f4(acc, nmemb, c0, (const float *)(const void *)q, steps);
#if defined(CF__STATS_SSE2)
            else cf__fs_block_f8_sse2(acc, nmemb, c0, (const double *)(const void *)q, steps);
#else
            else cf__fs_block_f8(acc, nmemb, c0, (const double *)(const void *)q, steps);
#endif
            done += steps * CF__FS_LANES;
        }
    }
    cf__fs_slow(acc, nmemb, c0, (const char *)p + done * w, n - done, f4);
}
