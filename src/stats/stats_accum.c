/* stats_accum.c - per-chunk statistics: accumulators, and how values of
 * every type and layout reach them (docs/format.md 8.4).  The kernels are
 * in stats_kernels.c, the in-place row folders in stats_rows.c.
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
 *   f4 uses AVX2 too.
 *   Other targets (or -DCF__STATS_NO_SIMD) get portable lane loops.
 * - native f4 and f8 in rows of 1 to 4 values (masses, positions,
 *   velocities: most of what simulations write) are folded in place with
 *   AVX2 (cf__float_rows_avx2), min, max and exact sums in one pass,
 *   optimistically: without NaN masks, which a block needs only when its
 *   sums come out NaN.
 * - everything else -- non-native byte order, f2, unaligned data, vectors
 *   (nmemb > 1) -- is gathered (one component at a time), byte swapped and
 *   widened into a small stack buffer, block by block, and handed to the
 *   same kernels.  Vectors with very many components, where each component
 *   sees only a few values per call, are folded value by value instead.
 *   Nothing allocates.
 *
 * Semantics (all paths agree bit for bit on count, nan, min, max and sum):
 * - count counts every value, NaN included; nan counts NaNs (complex:
 *   either part NaN).  S columns keep count only.
 * - floats: min/max over the non-NaN values, in the order -inf < ... <
 *   -0.0 < +0.0 < ... < +inf (so merges are deterministic whatever the
 *   split); a chunk of NaNs only keeps min = +inf > max = -inf.  The sum of
 *   the non-NaN values is kept exactly (stats_xsum.h; +inf and -inf
 *   together give NaN): by the AVX2 row folder in its one pass, otherwise
 *   by cf__float_sums before the kernels, which keep count, nan, min and
 *   max only.
 * - integers: the kernels' exact integer block sums go to the exact
 *   accumulator, so sums are exact whatever their size and split.
 * - bool: min/max over 0/1 (any non-zero byte is true); sum = true count.
 */
#include "stats.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "stats_impl.h"
#include "wire.h"

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

void cf__acc_init(cf__acc *a, const cf__dtype *d)
{
    cf__acc_init_class(a, cf__acc_class(d));
}

static void cf__acc_merge_class(cf__acc *into, const cf__acc *from, char cls)
{
    if (cls) {
        cf__xsum f = from->xs; /* normalising changes the representation, never the value */
        cf__xsum_merge(&into->xs, &f);
    }
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

double cf__acc_sum(const cf__acc *a)
{
    return cf__xsum_round(&a->xs);
}

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

int cf__stats_have_avx2(void)
{
#if defined(CF__STATS_AVX2)
    if (!__builtin_cpu_supports("avx2")) return 0;
    return __builtin_cpu_supports("avx512f") ? 2 : 1;
#else
    return 0;
#endif
}

/* ------------------------------------------------------------------ */
/* One value at a time (vectors with very many components)              */
/* ------------------------------------------------------------------ */

static inline void cf__add1_i(cf__acc *a, int64_t v)
{
    a->count++;
    cf__xsum_add_i64(&a->xs, v);
    if (v < a->v.i.min) a->v.i.min = v;
    if (v > a->v.i.max) a->v.i.max = v;
}

static inline void cf__add1_u(cf__acc *a, uint64_t v)
{
    a->count++;
    cf__xsum_add_u64(&a->xs, v);
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

/* The exact sums of float values (f2, f4, f8): every value that is not
 * NaN goes into its component's exact accumulator, one at a time (the
 * kernels and row folders keep count, nan, min and max). */
static void cf__float_sums(cf__acc *acc, int64_t nmemb, int64_t c0, const unsigned char *p, int64_t n, int type,
                           int swap, int avx2)
{
    if (!swap && (type == CF__ST_f8 || type == CF__ST_f4)) {
        cf__float_sums_native(acc, nmemb, c0, p, (size_t)n, type == CF__ST_f4, avx2);
        return;
    }
    int64_t comp = c0;
    size_t w = (size_t)cf__stats_types[type].width;
    for (int64_t k = 0; k < n; k++) {
        unsigned char e[8];
        memcpy(e, p + (size_t)k * w, w);
        if (swap) cf__swap_inplace(e, w, 1);
        double v;
        if (type == CF__ST_f8) {
            memcpy(&v, e, sizeof v);
        } else if (type == CF__ST_f4) {
            float f;
            memcpy(&f, e, sizeof f);
            v = (double)f;
        } else {
            uint16_t h;
            memcpy(&h, e, sizeof h);
            v = (double)cf__stats_half(h);
        }
        if (v == v) cf__xsum_add_f8(&acc[comp].xs, v);
        if (++comp == nmemb) comp = 0;
    }
}

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
        /* one pass: count, nan, min, max and the exact sums */
        size_t used = cf__float_rows_avx2(acc, nmemb, c0, p, (size_t)n, type == CF__ST_f4);
        p += used * w; /* whole rows: the next value is component c0 again */
        n -= (int64_t)used;
        if (n == 0) return;
    }
#endif
    if (type == CF__ST_f8 || type == CF__ST_f4 || type == CF__ST_f2) cf__float_sums(acc, nmemb, c0, p, n, type, swap, avx2);

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

/* ---- on the wire ---------------------------------------------------------- */

void cf__acc_put(cf__wire_out *o, const cf__acc *a)
{
    uint64_t v[2], w[CF__XSUM_WIRE_WORDS];
    memcpy(v, &a->v, sizeof v);
    cf__wire_put_u64(o, (uint64_t)a->count);
    cf__wire_put_u64(o, (uint64_t)a->nan);
    cf__wire_put_u64(o, v[0]);
    cf__wire_put_u64(o, v[1]);
    int nw = cf__xsum_to_words(&a->xs, w);
    for (int k = 0; k < nw; k++) cf__wire_put_u64(o, w[k]);
}

int cf__acc_get(cf__wire_in *in, cf__acc *a)
{
    uint64_t count, nan, v[2], w[CF__XSUM_WIRE_WORDS];
    if (cf__wire_get_u64(in, &count) || cf__wire_get_u64(in, &nan) || cf__wire_get_u64(in, &v[0]) ||
        cf__wire_get_u64(in, &v[1]) || cf__wire_get_u64(in, &w[0]))
        return -1;
    int nw = 1 + (int)((w[0] >> 16) & 0xffu);
    if (nw > CF__XSUM_WIRE_WORDS) return -2;
    for (int k = 1; k < nw; k++)
        if (cf__wire_get_u64(in, &w[k])) return -1;
    memset(a, 0, sizeof *a);
    a->count = (int64_t)count;
    a->nan = (int64_t)nan;
    memcpy(&a->v, v, sizeof v);
    return cf__xsum_from_words(&a->xs, w, nw) ? -2 : 0;
}
