/* stats_rows.c - rows of a few native floats (positions, velocities,
 * masses: most of what simulations write) folded into their components'
 * accumulators in place, without gathering (stats_accum.c decides when). */
#include "stats_impl.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#if defined(CF__STATS_SSE2)
/* Rows of 2 to 4 native doubles (positions, velocities) folded in place:
 * the component in each lane of the k-th register repeats every
 * lcm(nmemb, 2) values, so a few registers per quantity keep every
 * component apart without gathering.  Returns the values consumed (whole
 * periods, a multiple of nmemb), 0 when it leaves the work to the general
 * path: too few values, or a min or max that is a zero (whose sign the
 * general path decides exactly). */
size_t cf__f8_interleaved(cf__acc *acc, int64_t nmemb, int64_t c0, const double *x, size_t n)
{
    size_t period = nmemb % 2 ? 2 * (size_t)nmemb : (size_t)nmemb, regs = period / 2;
    size_t periods = n / period;
    if (nmemb < 2 || nmemb > 4 || periods < 16) return 0;
    __m128d vmn[4], vmx[4];
    __m128i vc[4];
    for (size_t r = 0; r < regs; r++) {
        vmn[r] = _mm_set1_pd(INFINITY);
        vmx[r] = _mm_set1_pd(-INFINITY);
        vc[r] = _mm_setzero_si128();
    }
    const double *q = x;
    for (size_t b = 0; b < periods; b++, q += period) {
        for (size_t r = 0; r < regs; r++) {
            __m128d v = _mm_loadu_pd(q + 2 * r);
            __m128d bad = _mm_cmpunord_pd(v, v);
            vc[r] = _mm_sub_epi64(vc[r], _mm_castpd_si128(bad));
            vmn[r] = _mm_min_pd(v, vmn[r]);
            vmx[r] = _mm_max_pd(v, vmx[r]);
        }
    }
    double mn[4], mx[4];
    int64_t nan[4];
    for (int64_t j = 0; j < nmemb; j++) {
        mn[j] = INFINITY;
        mx[j] = -INFINITY;
        nan[j] = 0;
    }
    for (size_t r = 0; r < regs; r++) {
        double tmn[2], tmx[2];
        int64_t tc[2];
        _mm_storeu_pd(tmn, vmn[r]);
        _mm_storeu_pd(tmx, vmx[r]);
        _mm_storeu_si128((__m128i *)(void *)tc, vc[r]);
        for (size_t l = 0; l < 2; l++) {
            size_t j = (size_t)((c0 + (int64_t)(2 * r + l)) % nmemb);
            mn[j] = tmn[l] < mn[j] ? tmn[l] : mn[j];
            mx[j] = tmx[l] > mx[j] ? tmx[l] : mx[j];
            nan[j] += tc[l];
        }
    }
    for (int64_t j = 0; j < nmemb; j++)
        if (mn[j] == 0 || mx[j] == 0) return 0;
    for (int64_t j = 0; j < nmemb; j++)
        cf__float_part(&acc[j], mn[j], mx[j], nan[j], periods * period / (size_t)nmemb, 0);
    return periods * period;
}
#endif


#if defined(CF__STATS_AVX2)
/* Rows of 1 to 4 native f8 or f4 values folded in place with AVX2, the
 * way most columns are written (positions, velocities, masses), in one
 * pass that also sums them exactly.
 *
 * Lane q of the k-th register holds value 4k + q (f8) or 8k + q (f4) of
 * a "round" of R registers; a round is a whole number of rows (R = 3 for
 * rows of 3, otherwise R = 4 (f8) or 2 (f4)), so lane q always meets
 * component (c0 + q) % nmemb.  Rounds are folded in blocks of at most
 * CF__AVX_BLOCK values.  Each block is first folded optimistically: min,
 * max and the exact split below, without NaN masks.  NaN propagates
 * through addition, so a block whose running sums are all numbers had no
 * NaN: its NaN count is 0.  Otherwise the block is folded again carefully
 * (NaN masks and counts) and its sums are taken by cf__float_sums_native.
 * MINPD/MAXPD return their second operand when the first is NaN, which is
 * `x < m ? x : m` exactly, as in the SSE2 kernels.
 *
 * The exact split (stats_fsum.c has the general case).  Every lane keeps
 * running sums T1 (and T2 for f8), which start at c1 = 1.5 * 2^s (c2 =
 * 1.5 * 2^s2) with 2^s chosen before the block so that, if every value of
 * the block has |x| <= 2^(s-12) (checked after it, against its min and
 * max), no lane's partial sums of at most 2^10 values leave [1.25, 1.75]
 * * 2^s: the doubles there are the multiples of g = 2^(s-52), so
 * fl(T1 + x) is T1 plus x rounded to a multiple of g, a = fl(T1 + x) - T1
 * is that rounded x exactly (Sterbenz) and r = x - a, the error of a
 * rounding to a grid no finer than x's own, is a double: exact.  So T1 -
 * c1 is exactly the sum of the a.  f8: r is a multiple of x's ulp, so
 * where every non-zero |x| >= 2^s2 (s2 = s - 51 + L, |r| <= g/2 <=
 * 2^(s2-2-L)) the r are multiples of the grid of 2^s2 and add up in T2
 * exactly, by the same argument: (T1 - c1) + (T2 - c2) is exactly the
 * lane's sum.  f4: a float x with 2^(s-29) <= |x| is a multiple of g
 * already, so T1 + x is exact and no r is needed.  The smallest non-zero
 * |x| of the block is kept (as integer bits) to check it.  A block that
 * fails a check (value too large, an f8 value more than about 2^29 below
 * the block's largest, an f4 value more than about 2^18 below it) has its
 * sums taken by cf__float_sums_native: the checks decide speed only,
 * never the bits of the result.  2^s comes from the previous block's
 * largest |x| (kept in the chunk's first accumulator between calls; a
 * chunk's first block looks at its values first), for f8 with one bit to
 * spare: a block may reach twice the previous block's binade (data whose
 * largest values sit near a power of two, as normal deviates near 4 do,
 * would otherwise cross it every other block and take the slow sums). */
#define CF__AVX_BLOCK 8192   /* values per block: 64 KiB of f8, in L2; >= 8 lanes, so <= 2^10 values per lane */

typedef struct {
    double mn[32], mx[32];          /* per lane of a round */
    double t1[32], t2[32];          /* running sums (fast only) */
    uint32_t minbits;               /* f4: the smallest |x| bits - 1; f8: the high half of the smallest
                                       (|x| bits << 1) - 1 (unsigned; zeros wrap to the top) */
    int64_t nan[32];
} cf__lanes;

__attribute__((target("avx2"), always_inline))
static inline void cf__f8_round_avx2(const double *x, size_t rounds, const int R, const int careful, double c1s,
                                     double c2s, cf__lanes *out)
{
    __m256d vmn[4], vmx[4], t1[4], t2[4];
    __m256i vc[4], minb = _mm256_set1_epi32(-1);
    const __m256i one = _mm256_set1_epi64x(1);
    for (int r = 0; r < R; r++) {
        vmn[r] = _mm256_set1_pd(INFINITY);
        vmx[r] = _mm256_set1_pd(-INFINITY);
        t1[r] = _mm256_set1_pd(c1s);
        t2[r] = _mm256_set1_pd(c2s);
        vc[r] = _mm256_setzero_si256();
    }
#pragma GCC unroll 2
    for (size_t b = 0; b < rounds; b++, x += 4 * R) {
        for (int r = 0; r < R; r++) {
            __m256d v = _mm256_loadu_pd(x + 4 * r);
            if (careful) {
                __m256d bad = _mm256_cmp_pd(v, v, _CMP_UNORD_Q);
                vc[r] = _mm256_sub_epi64(vc[r], _mm256_castpd_si256(bad));
            } else {
                __m256d u1 = _mm256_add_pd(t1[r], v);
                t2[r] = _mm256_add_pd(t2[r], _mm256_sub_pd(v, _mm256_sub_pd(u1, t1[r])));
                t1[r] = u1;
                /* (|x| bits << 1) - 1: zeros wrap to the top; the high
                 * halves' minimum bounds the smallest non-zero |x| */
                __m256i y = _mm256_sub_epi64(_mm256_slli_epi64(_mm256_castpd_si256(v), 1), one);
                minb = _mm256_min_epu32(minb, y);
            }
            vmn[r] = _mm256_min_pd(v, vmn[r]);
            vmx[r] = _mm256_max_pd(v, vmx[r]);
        }
    }
    uint32_t mb[8];
    _mm256_storeu_si256((__m256i *)(void *)mb, minb);
    out->minbits = mb[1]; /* the high halves only: lanes 1, 3, 5, 7 */
    for (int l = 3; l < 8; l += 2) out->minbits = mb[l] < out->minbits ? mb[l] : out->minbits;
    for (int r = 0; r < R; r++) {
        _mm256_storeu_pd(out->mn + 4 * r, vmn[r]);
        _mm256_storeu_pd(out->mx + 4 * r, vmx[r]);
        _mm256_storeu_pd(out->t1 + 4 * r, t1[r]);
        _mm256_storeu_pd(out->t2 + 4 * r, t2[r]);
        _mm256_storeu_si256((__m256i *)(void *)(out->nan + 4 * r), vc[r]);
    }
}

__attribute__((target("avx2"), always_inline))
static inline void cf__f4_round_avx2(const float *x, size_t rounds, const int R, const int careful, double c1s,
                                     double c2s, cf__lanes *out)
{
    (void)c2s;
    __m256 vmn[3], vmx[3];
    __m256d tlo[3], thi[3];
    __m256i vc[3], minb = _mm256_set1_epi32(-1);
    const __m256i absmask = _mm256_set1_epi32(INT32_MAX), one = _mm256_set1_epi32(1);
    for (int r = 0; r < R; r++) {
        vmn[r] = _mm256_set1_ps(INFINITY);
        vmx[r] = _mm256_set1_ps(-INFINITY);
        tlo[r] = thi[r] = _mm256_set1_pd(c1s);
        vc[r] = _mm256_setzero_si256();
    }
#pragma GCC unroll 2
    for (size_t b = 0; b < rounds; b++, x += 8 * R) {
        for (int r = 0; r < R; r++) {
            __m256 v = _mm256_loadu_ps(x + 8 * r);
            if (careful) {
                __m256 bad = _mm256_cmp_ps(v, v, _CMP_UNORD_Q);
                vc[r] = _mm256_sub_epi32(vc[r], _mm256_castps_si256(bad));
            } else {
                tlo[r] = _mm256_add_pd(tlo[r], _mm256_cvtps_pd(_mm_loadu_ps(x + 8 * r)));
                thi[r] = _mm256_add_pd(thi[r], _mm256_cvtps_pd(_mm_loadu_ps(x + 8 * r + 4)));
                __m256i bits = _mm256_and_si256(_mm256_castps_si256(v), absmask);
                minb = _mm256_min_epu32(minb, _mm256_sub_epi32(bits, one));
            }
            vmn[r] = _mm256_min_ps(v, vmn[r]);
            vmx[r] = _mm256_max_ps(v, vmx[r]);
        }
    }
    uint32_t mb[8];
    _mm256_storeu_si256((__m256i *)(void *)mb, minb);
    out->minbits = mb[0];
    for (int l = 1; l < 8; l++) out->minbits = mb[l] < out->minbits ? mb[l] : out->minbits;
    for (int r = 0; r < R; r++) {
        float tmn[8], tmx[8];
        int32_t tc[8];
        _mm256_storeu_ps(tmn, vmn[r]);
        _mm256_storeu_ps(tmx, vmx[r]);
        _mm256_storeu_pd(out->t1 + 8 * r, tlo[r]);
        _mm256_storeu_pd(out->t1 + 8 * r + 4, thi[r]);
        _mm256_storeu_si256((__m256i *)(void *)tc, vc[r]);
        for (int l = 0; l < 8; l++) {
            out->mn[8 * r + l] = tmn[l];
            out->mx[8 * r + l] = tmx[l];
            out->nan[8 * r + l] = tc[l];
            out->t2[8 * r + l] = c2s;
        }
    }
}

/* One block of whole rounds; `careful` 0 or 1, R the registers per round. */
#define CF__ROUND_FN(ty, R, careful)                                                                   \
    __attribute__((target("avx2"))) static void cf__##ty##_round_##R##_##careful(const void *x, size_t rounds, \
                                                                               double c1, double c2,  \
                                                                               cf__lanes *out)        \
    {                                                                                                  \
        cf__##ty##_round_avx2(x, rounds, R, careful, c1, c2, out);                                     \
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

/* The largest |x| of n values, NaNs left out (0 if none). */
__attribute__((target("avx2")))
static double cf__absmax_avx2(const void *x, size_t n, int f4)
{
    const __m256d absmask = _mm256_castsi256_pd(_mm256_set1_epi64x(INT64_MAX));
    __m256d m = _mm256_setzero_pd();
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        __m256d v = f4 ? _mm256_cvtps_pd(_mm_loadu_ps((const float *)x + i)) : _mm256_loadu_pd((const double *)x + i);
        m = _mm256_max_pd(_mm256_and_pd(v, absmask), m); /* NaN: m kept */
    }
    double t[4], mx = 0.0;
    _mm256_storeu_pd(t, m);
    for (int l = 0; l < 4; l++) mx = t[l] > mx ? t[l] : mx;
    for (; i < n; i++) {
        double v;
        if (f4) {
            float f;
            memcpy(&f, (const unsigned char *)x + 4 * i, sizeof f);
            v = f;
        } else {
            memcpy(&v, (const unsigned char *)x + 8 * i, sizeof v);
        }
        mx = fabs(v) > mx ? fabs(v) : mx;
    }
    return mx;
}

typedef void (*cf__round_fn)(const void *x, size_t rounds, double c1, double c2, cf__lanes *out);

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

/* f4 blocks the first grid alone cannot sum (values more than about 2^19
 * below the block's largest): the sums again, on two grids as for f8,
 * without min and max; 1 if nothing was left below the second grid. */
__attribute__((target("avx2")))
static int cf__f4_sums2_avx2(const float *x, size_t rounds, const int R, double c1s, double c2s, cf__lanes *out)
{
    __m256d t1[6], t2[6], left = _mm256_setzero_pd();
    for (int r = 0; r < 2 * R; r++) {
        t1[r] = _mm256_set1_pd(c1s);
        t2[r] = _mm256_set1_pd(c2s);
    }
    for (size_t b = 0; b < rounds; b++, x += 8 * R)
        for (int r = 0; r < 2 * R; r++) {
            __m256d v = _mm256_cvtps_pd(_mm_loadu_ps(x + 4 * r));
            __m256d u1 = _mm256_add_pd(t1[r], v);
            __m256d rr = _mm256_sub_pd(v, _mm256_sub_pd(u1, t1[r]));
            __m256d u2 = _mm256_add_pd(t2[r], rr);
            left = _mm256_or_pd(left, _mm256_sub_pd(rr, _mm256_sub_pd(u2, t2[r])));
            t1[r] = u1;
            t2[r] = u2;
        }
    for (int r = 0; r < 2 * R; r++) {
        _mm256_storeu_pd(out->t1 + 4 * r, t1[r]);
        _mm256_storeu_pd(out->t2 + 4 * r, t2[r]);
    }
    double lf[4];
    _mm256_storeu_pd(lf, left);
    return lf[0] == 0.0 && lf[1] == 0.0 && lf[2] == 0.0 && lf[3] == 0.0; /* -0.0 bits: nothing left */
}

/* 2^k as a double, for -1022 <= k <= 1023 (no libm call per block). */
static inline double cf__pow2(int k)
{
    uint64_t b = (uint64_t)(k + 1023) << 52;
    double d;
    memcpy(&d, &b, sizeof d);
    return d;
}

/* Fold as many whole rounds of x[0..n) (f8, or f4 if f4) as possible into
 * acc (nmemb 1 to 4 components, the first value being component c0),
 * their exact sums included; returns the values consumed, a multiple of
 * nmemb. */
size_t cf__float_rows_avx2(cf__acc *acc, int64_t nmemb, int64_t c0, const void *x, size_t n, int f4)
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
    int L = 0; /* at most 2^L values per lane and block */
    while (((size_t)1 << L) < per_block) L++;
    unsigned char comp[32]; /* the component of each lane */
    for (size_t l = 0; l < lanes; l++) comp[l] = (unsigned char)((c0 + (int64_t)l) % nmemb);
    const unsigned char *p = x;
    double hint = acc[0].hint > 0.0 ? acc[0].hint : -1.0; /* the previous block's largest |x|; < 0: none */
    /* f8: one bit to spare (see above); f4 keeps none, since every bit
     * of s raises the first grid, below which f4 blocks take a second pass */
    const int spare = f4 ? 2 : 3;
    while (n - used >= lanes) {
        size_t rounds = (n - used) / lanes;
        if (rounds > per_block) rounds = per_block;
        size_t values = rounds * lanes, per_comp = values / (size_t)nmemb;
        const unsigned char *q = p + used * w;
        if (hint < 0.0) hint = cf__absmax_avx2(q, values, f4);
        int e;
        (void)frexp(hint, &e); /* hint < 2^e (inf, NaN: e unspecified, s checked below) */
        int s = e + spare + L > -1022 ? e + spare + L : -1022, s2 = s - 51 + L > -1022 ? s - 51 + L : -1022;
        int split = isfinite(hint) && s <= 1022;
        double c1 = split ? 1.5 * cf__pow2(s) : 0.0, c2 = split ? 1.5 * cf__pow2(s2) : 0.0;
        cf__lanes t;
        fast(q, rounds, c1, c2, &t);
        int again = 0;
        for (size_t l = 0; l < lanes; l++) again |= t.t1[l] != t.t1[l];
        if (again) careful(q, rounds, c1, c2, &t);
        double mn[4], mx[4], big = 0.0;
        int64_t nan[4];
        for (int64_t j = 0; j < nmemb; j++) {
            mn[j] = INFINITY;
            mx[j] = -INFINITY;
            nan[j] = 0;
        }
        for (size_t l = 0; l < lanes; l++) {
            size_t j = comp[l];
            mn[j] = t.mn[l] < mn[j] ? t.mn[l] : mn[j];
            mx[j] = t.mx[l] > mx[j] ? t.mx[l] : mx[j];
            nan[j] += t.nan[l];
        }
        for (int64_t j = 0; j < nmemb; j++) {
            big = -mn[j] > big ? -mn[j] : big;
            big = mx[j] > big ? mx[j] : big;
        }
        /* the checks of the exact split (see above) */
        int exact = split && !again && big <= (s - 2 - L >= -1022 ? cf__pow2(s - 2 - L) : ldexp(1.0, s - 2 - L));
        if (exact && f4) {
            /* 2^(s-29) as a float, 0 below the floats (every float is then on the grid) */
            int k = s - 29;
            uint32_t tb = k > 127 ? 0x7f800000u : k >= -126 ? (uint32_t)(k + 127) << 23 : k >= -149 ? 1u << (k + 149) : 0u;
            if (tb != 0 && t.minbits < tb - 1)
                exact = cf__f4_sums2_avx2((const float *)(const void *)q, rounds, R, c1, c2, &t);
        } else if (exact && s2 > -1022) {
            /* every non-zero |x| >= 2^s2 (ulp >= the second grid): high
             * half of (2^s2 bits << 1) is its biased exponent << 21 */
            exact = t.minbits >= (uint32_t)(s2 + 1023) << 21;
        }
        if (exact) {
            /* T - c is exact (same binade); a component's lanes add up
             * exactly in double 8 at a time: each is a multiple of the
             * grid below 2^50 grid steps. */
            for (int64_t j = 0; j < nmemb; j++) {
                double a = 0.0, b = 0.0;
                int k = 0;
                for (size_t l = (size_t)((j - c0 + nmemb) % nmemb); l < lanes; l += (size_t)nmemb) {
                    a += t.t1[l] - c1;
                    b += t.t2[l] - c2;
                    if (++k == 8 || l + (size_t)nmemb >= lanes) {
                        if (a != 0.0) cf__xsum_add_f8(&acc[j].xs, a);
                        if (b != 0.0) cf__xsum_add_f8(&acc[j].xs, b);
                        a = b = 0.0;
                        k = 0;
                    }
                }
            }
        } else {
            cf__float_sums_native(acc, nmemb, c0, q, values, f4, 1);
        }
        for (int64_t j = 0; j < nmemb; j++) {
            unsigned zeros = 0;
            if (mn[j] == 0 || mx[j] == 0)
                zeros = cf__zeros_strided(q, f4, (size_t)((j - c0 + nmemb) % nmemb), (size_t)nmemb, per_comp);
            cf__float_part(&acc[j], mn[j], mx[j], nan[j], per_comp, zeros);
        }
        if (isfinite(big) && big >= 0.0) hint = big;
        used += values;
    }
    if (hint > 0.0) acc[0].hint = hint;
    return used;
}
#endif
