/* stats_fine.c - the fine level of the chunk index: min and max per
 * sub-chunk and component (stats.h, cf__fine; docs/format.md 8.6).
 *
 * It runs on every write beside the chunk kernels, so it is kept to what
 * a planner needs to skip sub-chunks: no sums, no NaN counts (a sub-chunk
 * of a chunk with NaNs is not refined by readers), just min and max over
 * the non-NaN values and the count of values seen.  Native f8 and f4 rows
 * of 1 to 4 components use AVX2 min/max in lanes that each see one
 * component (as stats_rows.c does); integers are plain loops the compiler
 * vectorises; everything else is folded value by value. */
#include "stats.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "stats_impl.h"

int64_t cf__stats_fine_rows(int64_t chunk_rows, const cf__dtype *d)
{
    /* f4 and f8 only: there the row folder gives the bounds with the
     * chunk's at little cost; integer columns would need a pass of their
     * own (as costly as their chunk statistics) */
    if (d->kind != 'f' || (d->width != 4 && d->width != 8) || chunk_rows < 2) return 0;
    if (d->width > 1 && d->order != cf__dtype_native_order()) return 0;
    int64_t r = 1;
    while (r * d->width < CF__FINE_PAGE) r <<= 1;
    while (r * CF__FINE_MAX_PER_CHUNK < chunk_rows) r <<= 1;
    return r < chunk_rows ? r : 0;
}

void cf__fine_bounds(const cf__fine *f, char cls, double *mn, double *mx)
{
    double lo = f->mn, hi = f->mx;
    if (cls == 'i' || cls == 'u') {
        /* outward: the nearest doubles at or beyond the exact bounds */
        if (cls == 'i') {
            lo = (double)f->imn;
            if (lo >= 0x1p63 || (int64_t)lo > f->imn) lo = nextafter(lo, -INFINITY);
            hi = (double)f->imx;
            if (hi < 0x1p63 && (int64_t)hi < f->imx) hi = nextafter(hi, INFINITY);
        } else {
            uint64_t umn = (uint64_t)f->imn, umx = (uint64_t)f->imx;
            lo = (double)umn;
            if (lo >= 0x1p64 || (uint64_t)lo > umn) lo = nextafter(lo, -INFINITY);
            hi = (double)umx;
            if (hi < 0x1p64 && (uint64_t)hi < umx) hi = nextafter(hi, INFINITY);
        }
    }
    /* the sign of a zero bound is not tracked: widen it */
    if (lo == 0) lo = -0.0;
    if (hi == 0) hi = 0.0;
    *mn = lo;
    *mx = hi;
}

/* ---- value by value ------------------------------------------------------ */

static void fine_scalar(cf__fine *f, int64_t nmemb, int64_t c0, const unsigned char *p, int64_t n,
                        const cf__dtype *d)
{
    int64_t j = c0, w = d->width;
    for (int64_t k = 0; k < n; k++, p += w) {
        cf__fine *e = &f[j];
        if (d->kind == 'f') {
            double v;
            if (w == 8) {
                memcpy(&v, p, 8);
            } else {
                float x;
                memcpy(&x, p, 4);
                v = x;
            }
            e->mn = v < e->mn ? v : e->mn;
            e->mx = v > e->mx ? v : e->mx;
        } else if (d->kind == 'i') {
            int64_t v;
            if (w == 8) { int64_t x; memcpy(&x, p, 8); v = x; }
            else if (w == 4) { int32_t x; memcpy(&x, p, 4); v = x; }
            else if (w == 2) { int16_t x; memcpy(&x, p, 2); v = x; }
            else { v = (int8_t)p[0]; }
            e->imn = v < e->imn ? v : e->imn;
            e->imx = v > e->imx ? v : e->imx;
        } else {
            uint64_t v;
            if (d->kind == 'b') v = p[0] != 0;
            else if (w == 8) { memcpy(&v, p, 8); }
            else if (w == 4) { uint32_t x; memcpy(&x, p, 4); v = x; }
            else if (w == 2) { uint16_t x; memcpy(&x, p, 2); v = x; }
            else { v = p[0]; }
            uint64_t mn = (uint64_t)e->imn, mx = (uint64_t)e->imx;
            e->imn = (int64_t)(v < mn ? v : mn);
            e->imx = (int64_t)(v > mx ? v : mx);
        }
        e->count++;
        if (++j == nmemb) j = 0;
    }
}

/* ---- one component, native integers (auto-vectorised) ----------------- */

#define CF__FINE_INT(name, T, ACC) CF__FINE_INT1(name, T, ACC, ) CF__FINE_INT1(name##_avx2, T, ACC, CF__AVX2_TARGET)
#if defined(CF__STATS_AVX2)
#define CF__AVX2_TARGET __attribute__((target("avx2")))
#else
#define CF__AVX2_TARGET
#endif
#define CF__FINE_INT1(name, T, ACC, TARGET)                                                          \
    TARGET static void name(cf__fine *e, const unsigned char *p, int64_t n)                      \
    {                                                                                              \
        T mn, mx;                                                                                  \
        memcpy(&mn, p, sizeof mn);                                                                 \
        mx = mn;                                                                                   \
        for (int64_t k = 1; k < n; k++) {                                                          \
            T v;                                                                                   \
            memcpy(&v, p + (size_t)k * sizeof v, sizeof v);                                        \
            mn = v < mn ? v : mn;                                                                  \
            mx = v > mx ? v : mx;                                                                  \
        }                                                                                          \
        ACC                                                                                        \
        e->count += n;                                                                             \
    }
#define CF__SIGNED_ACC                                                                             \
    e->imn = (int64_t)mn < e->imn ? (int64_t)mn : e->imn;                                          \
    e->imx = (int64_t)mx > e->imx ? (int64_t)mx : e->imx;
#define CF__UNSIGNED_ACC                                                                           \
    e->imn = (int64_t)((uint64_t)mn < (uint64_t)e->imn ? (uint64_t)mn : (uint64_t)e->imn);         \
    e->imx = (int64_t)((uint64_t)mx > (uint64_t)e->imx ? (uint64_t)mx : (uint64_t)e->imx);
CF__FINE_INT(fine_i1, int8_t, CF__SIGNED_ACC)
CF__FINE_INT(fine_i2, int16_t, CF__SIGNED_ACC)
CF__FINE_INT(fine_i4, int32_t, CF__SIGNED_ACC)
CF__FINE_INT(fine_i8, int64_t, CF__SIGNED_ACC)
CF__FINE_INT(fine_u1, uint8_t, CF__UNSIGNED_ACC)
CF__FINE_INT(fine_u2, uint16_t, CF__UNSIGNED_ACC)
CF__FINE_INT(fine_u4, uint32_t, CF__UNSIGNED_ACC)
CF__FINE_INT(fine_u8, uint64_t, CF__UNSIGNED_ACC)
#undef CF__FINE_INT

/* ---- rows of 1 to 4 native floats, AVX2 ----------------------------------- */

#if defined(CF__STATS_AVX2)
/* Whole rounds of R registers (R = 3 for rows of 3, else 2): lane q of a
 * round always meets component (c0 + q) % nmemb.  R is a constant in each
 * instance, so the running min and max stay in registers.  Returns the
 * values used. */
__attribute__((target("avx2"), always_inline))
static inline int64_t fine_f8_lanes(cf__fine *f, int64_t nmemb, int64_t c0, const double *x, int64_t n, const int R)
{
    const int lanes = 4 * R;
    int64_t rounds = n / lanes;
    if (rounds < 1) return 0;
    __m256d mn[3], mx[3];
    for (int r = 0; r < R; r++) {
        mn[r] = _mm256_set1_pd(INFINITY);
        mx[r] = _mm256_set1_pd(-INFINITY);
    }
    for (int64_t b = 0; b < rounds; b++, x += lanes)
        for (int r = 0; r < R; r++) {
            __m256d v = _mm256_loadu_pd(x + 4 * r);
            mn[r] = _mm256_min_pd(v, mn[r]); /* NaN: the second operand, kept */
            mx[r] = _mm256_max_pd(v, mx[r]);
        }
    double tmn[12], tmx[12];
    for (int r = 0; r < R; r++) {
        _mm256_storeu_pd(tmn + 4 * r, mn[r]);
        _mm256_storeu_pd(tmx + 4 * r, mx[r]);
    }
    for (int q = 0, j = (int)c0; q < lanes; q++, j = j + 1 == nmemb ? 0 : j + 1) {
        f[j].mn = tmn[q] < f[j].mn ? tmn[q] : f[j].mn;
        f[j].mx = tmx[q] > f[j].mx ? tmx[q] : f[j].mx;
    }
    for (int64_t j = 0; j < nmemb; j++) f[j].count += rounds * lanes / nmemb;
    return rounds * lanes;
}

__attribute__((target("avx2"), always_inline))
static inline int64_t fine_f4_lanes(cf__fine *f, int64_t nmemb, int64_t c0, const float *x, int64_t n, const int R)
{
    const int lanes = 8 * R;
    int64_t rounds = n / lanes;
    if (rounds < 1) return 0;
    __m256 mn[3], mx[3];
    for (int r = 0; r < R; r++) {
        mn[r] = _mm256_set1_ps(INFINITY);
        mx[r] = _mm256_set1_ps(-INFINITY);
    }
    for (int64_t b = 0; b < rounds; b++, x += lanes)
        for (int r = 0; r < R; r++) {
            __m256 v = _mm256_loadu_ps(x + 8 * r);
            mn[r] = _mm256_min_ps(v, mn[r]);
            mx[r] = _mm256_max_ps(v, mx[r]);
        }
    float tmn[24], tmx[24];
    for (int r = 0; r < R; r++) {
        _mm256_storeu_ps(tmn + 8 * r, mn[r]);
        _mm256_storeu_ps(tmx + 8 * r, mx[r]);
    }
    for (int q = 0, j = (int)c0; q < lanes; q++, j = j + 1 == nmemb ? 0 : j + 1) {
        f[j].mn = tmn[q] < f[j].mn ? tmn[q] : f[j].mn;
        f[j].mx = tmx[q] > f[j].mx ? tmx[q] : f[j].mx;
    }
    for (int64_t j = 0; j < nmemb; j++) f[j].count += rounds * lanes / nmemb;
    return rounds * lanes;
}

__attribute__((target("avx2")))
static int64_t fine_f8_avx2(cf__fine *f, int64_t nmemb, int64_t c0, const double *x, int64_t n)
{
    return nmemb == 3 ? fine_f8_lanes(f, nmemb, c0, x, n, 3) : fine_f8_lanes(f, nmemb, c0, x, n, 2);
}

__attribute__((target("avx2")))
static int64_t fine_f4_avx2(cf__fine *f, int64_t nmemb, int64_t c0, const float *x, int64_t n)
{
    return nmemb == 3 ? fine_f4_lanes(f, nmemb, c0, x, n, 3) : fine_f4_lanes(f, nmemb, c0, x, n, 2);
}
#endif

void cf__fine_add_simd(cf__fine *f, int64_t nmemb, int64_t c0, const void *data, int64_t n, const cf__dtype *d,
                       int avx2)
{
    if (n <= 0 || nmemb <= 0 || !f || !data) return;
    const unsigned char *p = data;
    c0 %= nmemb;
#if defined(CF__STATS_AVX2)
    if (avx2 && d->kind == 'f' && nmemb <= 4) {
        int64_t used = d->width == 8 ? fine_f8_avx2(f, nmemb, c0, (const double *)data, n)
                                     : fine_f4_avx2(f, nmemb, c0, (const float *)data, n);
        p += used * d->width; /* whole rounds: whole rows, component c0 again */
        n -= used;
    }
#else
    (void)avx2;
#endif
    if (nmemb == 1 && n > 0 && d->kind != 'f' && d->kind != 'b') {
        void (*k)(cf__fine *, const unsigned char *, int64_t) = NULL;
        switch (d->width * (d->kind == 'i' ? 1 : -1)) {
        case 1: k = fine_i1; break;
        case 2: k = fine_i2; break;
        case 4: k = fine_i4; break;
        case 8: k = fine_i8; break;
        case -1: k = fine_u1; break;
        case -2: k = fine_u2; break;
        case -4: k = fine_u4; break;
        case -8: k = fine_u8; break;
        default: break;
        }
        if (k && avx2) {
            /* the same loops built for AVX2 (64-bit compares, wider lanes) */
            switch (d->width * (d->kind == 'i' ? 1 : -1)) {
            case 1: k = fine_i1_avx2; break;
            case 2: k = fine_i2_avx2; break;
            case 4: k = fine_i4_avx2; break;
            case 8: k = fine_i8_avx2; break;
            case -1: k = fine_u1_avx2; break;
            case -2: k = fine_u2_avx2; break;
            case -4: k = fine_u4_avx2; break;
            default: k = fine_u8_avx2; break;
            }
        }
        if (k) {
            k(f, p, n);
            return;
        }
    }
    if (n > 0) fine_scalar(f, nmemb, c0, p, n, d);
}

void cf__fine_add(cf__fine *f, int64_t nmemb, int64_t c0, const void *data, int64_t n, const cf__dtype *d)
{
    cf__fine_add_simd(f, nmemb, c0, data, n, d, cf__stats_have_avx2());
}
