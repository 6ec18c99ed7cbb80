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
 * way most columns are written (positions, velocities, masses).
 *
 * Lane q of the k-th register holds value 4k + q (f8) or 8k + q (f4) of
 * a "round" of R registers; a round is a whole number of rows (R = 3 for
 * rows of 3, otherwise R = 4 (f8) or 2 (f4)), so lane q always meets
 * component (c0 + q) % nmemb.  Rounds are folded in blocks of at most
 * CF__AVX_BLOCK values; each block is first folded optimistically: min,
 * max and an unmasked sum only, which serves to find NaNs (the chunk sums
 * are exact, added by cf__float_sums_native).  NaN propagates through
 * addition, so a block whose lane sums are all numbers had no NaN: its
 * NaN count is 0.
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
        double mn[4], mx[4];
        int64_t nan[4];
        for (int64_t j = 0; j < nmemb; j++) {
            mn[j] = INFINITY;
            mx[j] = -INFINITY;
            nan[j] = 0;
        }
        for (size_t l = 0; l < lanes; l++) {
            size_t j = (size_t)((c0 + (int64_t)l) % nmemb);
            mn[j] = t.mn[l] < mn[j] ? t.mn[l] : mn[j];
            mx[j] = t.mx[l] > mx[j] ? t.mx[l] : mx[j];
            nan[j] += t.nan[l];
        }
        size_t values = rounds * lanes, per_comp = values / (size_t)nmemb;
        for (int64_t j = 0; j < nmemb; j++) {
            unsigned zeros = 0;
            if (mn[j] == 0 || mx[j] == 0)
                zeros = cf__zeros_strided(q, f4, (size_t)((j - c0 + nmemb) % nmemb), (size_t)nmemb, per_comp);
            cf__float_part(&acc[j], mn[j], mx[j], nan[j], per_comp, zeros);
        }
        used += values;
    }
    return used;
}
#endif
