/* stats_impl.h - what the statistics files share, and nothing outside
 * src/stats uses (internal): how accumulators merge, the list of value
 * types and their kernels (stats_kernels.c), the in-place row folders
 * (stats_rows.c) and the chunk arithmetic (stats_layout.c). */
#ifndef CF_STATS_IMPL_H
#define CF_STATS_IMPL_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "stats.h"

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
/* Merging accumulators                                                 */
/* ------------------------------------------------------------------ */

/* An empty accumulator of class cls (cf__acc_class). */
static inline void cf__acc_init_class(cf__acc *a, char cls)
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

/* The merges below leave the sums alone: kernels add theirs to the
 * exact accumulator directly, and cf__acc_merge merges those. */

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

/* The counts every kind merges alike: a macro, so that the merges compile
 * to the same code as when each spelled them out. */
#define CF__MERGE_COUNTS(into, from)                                \
    do {                                                            \
        (into)->count = cf__count_add((into)->count, (from)->count); \
        (into)->nan = cf__count_add((into)->nan, (from)->nan);       \
    } while (0)

static inline void cf__merge_i(cf__acc *into, const cf__acc *from)
{
    CF__MERGE_COUNTS(into, from);
    if (from->v.i.min < into->v.i.min) into->v.i.min = from->v.i.min;
    if (from->v.i.max > into->v.i.max) into->v.i.max = from->v.i.max;
}

static inline void cf__merge_u(cf__acc *into, const cf__acc *from)
{
    CF__MERGE_COUNTS(into, from);
    if (from->v.u.min < into->v.u.min) into->v.u.min = from->v.u.min;
    if (from->v.u.max > into->v.u.max) into->v.u.max = from->v.u.max;
}

static inline void cf__merge_f(cf__acc *into, const cf__acc *from)
{
    CF__MERGE_COUNTS(into, from);
    if (cf__f_below(from->v.f.min, into->v.f.min)) into->v.f.min = from->v.f.min;
    if (cf__f_below(into->v.f.max, from->v.f.max)) into->v.f.max = from->v.f.max;
}

static inline void cf__merge_0(cf__acc *into, const cf__acc *from)
{
    CF__MERGE_COUNTS(into, from);
}

/* ------------------------------------------------------------------ */
/* The type list                                                        */
/* ------------------------------------------------------------------ */

typedef struct { float re, im; } cf__stats_c8;
typedef struct { double re, im; } cf__stats_c16;

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
/* (stats_kernels.c)                                                    */
/* ------------------------------------------------------------------ */

/* The kernels' avx2 argument for this CPU: 2 with AVX-512 (F) as well,
 * 1 with AVX2, else 0 (stats_accum.c). */
int cf__stats_have_avx2(void);

/* avx2: the kernel may use AVX2 (1), AVX2 and AVX-512F (2), neither (0);
 * the caller checked the CPU. */
typedef void (*cf__kernel_fn)(cf__acc *a, const void *p, size_t n, int avx2);

/* f2 is widened to float by the caller, then folded by cf__k_f4. */
#define cf__k_f2 cf__k_f4
#define CF__KERNEL_DECL(t, k, T, cat, cls, lo, hi, par) void cf__k_##t(cf__acc *a, const void *p, size_t n, int avx2);
CF__STATS_TYPES(CF__KERNEL_DECL)
#undef CF__KERNEL_DECL

/* Floats (count, nan, min, max: their sums are added exactly, value by
 * value, by cf__acc_add_simd before the kernels run).  The result of the fast loops is fixed up for the sign of zero:
 * if the smallest value is a zero, it is -0.0 exactly when some value is
 * -0.0 (and the largest zero is +0.0 when some value is +0.0). */
static inline void cf__float_part(cf__acc *a, double mn, double mx, int64_t nn, size_t n, unsigned zeros)
{
    cf__acc part;
    if (mn == 0) mn = zeros & 2u ? -0.0 : 0.0;
    if (mx == 0) mx = zeros & 1u ? 0.0 : -0.0;
    part.count = (int64_t)n;
    part.nan = nn;
    part.v.f.min = mn;
    part.v.f.max = mx;
    cf__merge_f(a, &part);
}

/* ------------------------------------------------------------------ */
/* Rows of a few floats folded in place (stats_rows.c)                  */
/* ------------------------------------------------------------------ */

#if defined(CF__STATS_SSE2)
/* Rows of 2 to 4 native doubles at an aligned address; returns the values
 * consumed (whole periods), 0 when it leaves the work to the caller. */
size_t cf__f8_interleaved(cf__acc *acc, int64_t nmemb, int64_t c0, const double *x, size_t n);
#endif
#if defined(CF__STATS_AVX2)
/* Rows of 1 to 4 native f8 (or f4 if f4) at an aligned address, with
 * AVX2, exact sums included (one pass); returns the values consumed, a
 * multiple of nmemb. */
size_t cf__float_rows_avx2(cf__acc *acc, int64_t nmemb, int64_t c0, const void *x, size_t n, int f4);
#endif

/* The exact sums of n native f4 (f4 1) or f8 values, rows of nmemb
 * components, the first value being component c0 (stats_fsum.c); avx2:
 * the CPU has AVX2. */
void cf__float_sums_native(cf__acc *acc, int64_t nmemb, int64_t c0, const void *p, size_t n, int f4, int avx2);

/* ------------------------------------------------------------------ */
/* Chunk layout (stats_layout.c)                                        */
/* ------------------------------------------------------------------ */

/* Chunks of a blob of `rows` rows. */
static inline int64_t cf__stats_chunks_of(int64_t rows, int64_t chunk_rows)
{
    return rows <= 0 ? 0 : (rows - 1) / chunk_rows + 1;
}

/* Total accumulators for the layout of h with chunk_rows, or -1 if that
 * does not fit in memory sizes. */
int64_t cf__stats_total(const cf__header *h, int64_t chunk_rows);

#endif
