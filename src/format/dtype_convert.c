/* dtype_convert.c - byte swapping and value conversion between dtypes.
 *
 * Conversions follow numpy's astype(..., casting='unsafe') between the
 * numeric kinds i1 i2 i4 i8 u1 u2 u4 u8 f2 f4 f8 c8 c16 b1, and copy,
 * truncate or NUL-pad byte strings (S to S).  One loop per (source,
 * destination) pair is generated from the single type list below; each
 * loop works on native-order values, and non-native sides are swapped
 * through small stack buffers, block by block.
 *
 * Floating point to integer, out of range (undefined in C, and numpy's
 * results differ between platforms and even between its SIMD and scalar
 * loops): colfile reproduces the x86-64 scalar code a C compiler emits,
 * which is what numpy returns for single elements (its vectorised loops
 * give other u4 values for |x| >= 2^31).  No C undefined behaviour is used.
 * Let T32(x) be trunc(x) when it fits an int32 and 0x80000000 otherwise
 * (NaN and +-inf included), T64(x) likewise for int64 with 0x8000000000000000.
 *   i1 i2 u1 u2 : the low 8 or 16 bits of T32(x)   (300.7 -> i1 44, 1e10 -> 0)
 *   i4          : T32(x)                            (NaN, 3e9 -> -2147483648)
 *   i8          : T64(x)
 *   u4          : the low 32 bits of T64(x)         (-1.0 -> 4294967295)
 *   u8          : x < 2^63 (or NaN) ? T64(x) : T64(x - 2^63) + 2^63 (mod 2^64)
 *                 (NaN, -inf -> 2^63; +inf, x >= 2^64 -> 0)
 * In-range values truncate toward zero exactly as numpy does.  Half and
 * complex sources go through the same rules (half is widened to float,
 * complex uses its real part).
 *
 * IEEE 754 binary16/32/64 arithmetic is assumed (C11 Annex F): double to
 * float rounds to nearest even and overflows to infinity.
 */
#include "dtype.h"

#include <stdio.h>
#include <string.h>

#include "error.h"

/* ------------------------------------------------------------------ */
/* The numeric types                                                    */
/* ------------------------------------------------------------------ */

typedef struct { float re, im; } cf__c8;
typedef struct { double re, im; } cf__c16;

_Static_assert(sizeof(cf__c8) == 8, "complex64 must be two packed floats");
_Static_assert(sizeof(cf__c16) == 16, "complex128 must be two packed doubles");
_Static_assert(sizeof(float) == 4 && sizeof(double) == 8, "IEEE float/double expected");

/* The one list of numeric types:
 *   X(p, tag, kind char, C type, category, base type)
 * category: I integer, H IEEE half (stored as its bits), F float/double,
 * C complex, B bool.  base type: the unsigned twin of an integer, the part
 * of a complex, the type itself for float/double; for half, the float it
 * widens to.  `p` is passed through unchanged. */
#define CF__NUMERIC_TYPES(X, p)                 \
    X(p, i1,  'i', int8_t,   I, uint8_t)        \
    X(p, i2,  'i', int16_t,  I, uint16_t)       \
    X(p, i4,  'i', int32_t,  I, uint32_t)       \
    X(p, i8,  'i', int64_t,  I, uint64_t)       \
    X(p, u1,  'u', uint8_t,  I, uint8_t)        \
    X(p, u2,  'u', uint16_t, I, uint16_t)       \
    X(p, u4,  'u', uint32_t, I, uint32_t)       \
    X(p, u8,  'u', uint64_t, I, uint64_t)       \
    X(p, f2,  'f', uint16_t, H, float)          \
    X(p, f4,  'f', float,    F, float)          \
    X(p, f8,  'f', double,   F, double)         \
    X(p, c8,  'c', cf__c8,   C, float)          \
    X(p, c16, 'c', cf__c16,  C, double)         \
    X(p, b1,  'b', uint8_t,  B, uint8_t)

/* Every (source, destination) pair of the list: CF__FOR_EACH_PAIR(M) calls
 * M(s, ST, SC, SB, d, DT, DC, DB) 14 x 14 times.  A macro cannot expand
 * itself, so each row re-enters the list through CF__TYPES_AGAIN, whose
 * call is held back by CF__EMPTY until CF__EXPAND rescans the result. */
#define CF__EMPTY()
#define CF__EXPAND(...) __VA_ARGS__
#define CF__UNPAREN(...) __VA_ARGS__
#define CF__TYPES_AGAIN() CF__NUMERIC_TYPES
#define CF__PAIR_ROW(M, s, sk, ST, SC, SB) \
    CF__TYPES_AGAIN CF__EMPTY() () (CF__PAIR_CELL, (M, s, ST, SC, SB))
#define CF__PAIR_CELL(row, d, dk, DT, DC, DB) CF__PAIR_APPLY(CF__UNPAREN row, d, DT, DC, DB)
#define CF__PAIR_APPLY(...) CF__PAIR_APPLY_(__VA_ARGS__)
#define CF__PAIR_APPLY_(M, s, ST, SC, SB, d, DT, DC, DB) M(s, ST, SC, SB, d, DT, DC, DB)
#define CF__FOR_EACH_PAIR(M) CF__EXPAND(CF__NUMERIC_TYPES(CF__PAIR_ROW, M))

enum cf__numeric_index {
#define CF__ENUM_ENTRY(p, t, k, T, C, B) CF__T_##t,
    CF__NUMERIC_TYPES(CF__ENUM_ENTRY, ~)
#undef CF__ENUM_ENTRY
    CF__NTYPES
};

/* The list index of a numeric kind and width, or -1. */
int cf__numeric_index(char kind, int64_t width)
{
#define CF__MATCH_ENTRY(p, t, k, T, C, B) \
    if (kind == (k) && width == (int64_t)sizeof(T)) return CF__T_##t;
    CF__NUMERIC_TYPES(CF__MATCH_ENTRY, ~)
#undef CF__MATCH_ENTRY
    return -1;
}

static int cf__is_bytes(const cf__dtype *d)
{
    return d->kind == 'S' || d->kind == 'a';
}

/* The size of the units that byte swapping reverses: each half of a
 * complex, nothing (1) for byte strings, else the whole element. */
static size_t cf__swap_unit(const cf__dtype *d)
{
    if (cf__is_bytes(d)) return 1;
    if (d->kind == 'c' && d->width % 2 == 0) return (size_t)d->width / 2;
    return (size_t)d->width;
}

static int cf__needs_swap(const cf__dtype *d)
{
    return d->order != cf__dtype_native_order() && cf__swap_unit(d) > 1;
}

/* ------------------------------------------------------------------ */
/* IEEE half precision                                                  */
/* ------------------------------------------------------------------ */

/* Round-to-nearest-even conversions.  NaN keeps its sign and the top ten
 * bits of its payload (forced non-zero so that it stays a NaN), like numpy. */
static inline uint16_t cf__float_to_half(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    uint32_t ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u) {                     /* inf or NaN */
        uint32_t payload = (ax >> 13) & 0x3ffu;
        if (ax != 0x7f800000u && payload == 0) payload = 1;
        return (uint16_t)(sign | 0x7c00u | payload);
    }
    if (ax >= 0x477ff000u)                       /* >= 65520 rounds to inf */
        return (uint16_t)(sign | 0x7c00u);
    if (ax >= 0x38800000u) {                     /* normal half: >= 2^-14 */
        uint32_t h = (ax >> 13) - (112u << 10);  /* rebias 127 -> 15 */
        uint32_t rest = ax & 0x1fffu;
        h += (uint32_t)((rest > 0x1000u) | ((rest == 0x1000u) & h));
        return (uint16_t)(sign | h);
    }
    if (ax <= 0x33000000u)                       /* <= 2^-25: ties to 0 */
        return sign;
    uint32_t e = ax >> 23;                       /* 102..112 */
    uint32_t mant = (ax & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126u - e;                   /* 14..24 */
    uint32_t h = mant >> shift;
    uint32_t rest = mant & ((1u << shift) - 1u);
    uint32_t halfway = 1u << (shift - 1u);
    h += (uint32_t)((rest > halfway) | ((rest == halfway) & h));
    return (uint16_t)(sign | h);
}

static inline uint16_t cf__double_to_half(double d)
{
    uint64_t x;
    memcpy(&x, &d, sizeof x);
    uint16_t sign = (uint16_t)((x >> 48) & 0x8000u);
    uint64_t ax = x & UINT64_C(0x7fffffffffffffff);
    if (ax >= UINT64_C(0x7ff0000000000000)) {    /* inf or NaN */
        uint32_t payload = (uint32_t)(ax >> 42) & 0x3ffu;
        if (ax != UINT64_C(0x7ff0000000000000) && payload == 0) payload = 1;
        return (uint16_t)(sign | 0x7c00u | payload);
    }
    if (ax >= UINT64_C(0x40effe0000000000))      /* >= 65520 rounds to inf */
        return (uint16_t)(sign | 0x7c00u);
    if (ax >= UINT64_C(0x3f10000000000000)) {    /* normal half: >= 2^-14 */
        uint32_t h = (uint32_t)((ax >> 42) - (UINT64_C(1008) << 10));
        uint64_t rest = ax & ((UINT64_C(1) << 42) - 1u);
        uint64_t halfway = UINT64_C(1) << 41;
        h += (uint32_t)((rest > halfway) | ((rest == halfway) & h));
        return (uint16_t)(sign | h);
    }
    if (ax <= UINT64_C(0x3e60000000000000))      /* <= 2^-25: ties to 0 */
        return sign;
    uint32_t e = (uint32_t)(ax >> 52);           /* 998..1008 */
    uint64_t mant = (ax & ((UINT64_C(1) << 52) - 1u)) | (UINT64_C(1) << 52);
    uint32_t shift = 1051u - e;                  /* 43..53 */
    uint32_t h = (uint32_t)(mant >> shift);
    uint64_t rest = mant & ((UINT64_C(1) << shift) - 1u);
    uint64_t halfway = UINT64_C(1) << (shift - 1u);
    h += (uint32_t)((rest > halfway) | ((rest == halfway) & h));
    return (uint16_t)(sign | h);
}

/* Exact widenings. */
static inline float cf__half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu, bits;
    if (e == 0x1fu) {
        bits = sign | 0x7f800000u | (m << 13);
    } else if (e != 0) {
        bits = sign | ((e + 112u) << 23) | (m << 13);
    } else if (m == 0) {
        bits = sign;
    } else {                                     /* subnormal: normalise */
        e = 113u;
        while (!(m & 0x400u)) { m <<= 1; e--; }
        bits = sign | (e << 23) | ((m & 0x3ffu) << 13);
    }
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static inline double cf__half_to_double(uint16_t h)
{
    uint64_t sign = (uint64_t)(h & 0x8000u) << 48;
    uint64_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu, bits;
    if (e == 0x1fu) {
        bits = sign | UINT64_C(0x7ff0000000000000) | (m << 42);
    } else if (e != 0) {
        bits = sign | ((e + 1008u) << 52) | (m << 42);
    } else if (m == 0) {
        bits = sign;
    } else {
        e = 1009u;
        while (!(m & 0x400u)) { m <<= 1; e--; }
        bits = sign | (e << 52) | ((m & 0x3ffu) << 42);
    }
    double d;
    memcpy(&d, &bits, sizeof d);
    return d;
}

/* float or double -> half, each rounded directly from its own precision. */
#define CF__TO_HALF(x) _Generic((x), float: cf__float_to_half, double: cf__double_to_half)(x)
/* half -> T (float or double). */
#define CF__HALF_TO(T, h) _Generic((T)0, float: cf__half_to_float(h), double: cf__half_to_double(h))

/* ------------------------------------------------------------------ */
/* Floating point -> integer (see the top of the file)                  */
/* ------------------------------------------------------------------ */

/* The value converted is selected first (in range: x; else the bound whose
 * conversion gives the 0x80.. pattern), so that the loops stay branch-free
 * and vectorisable without ever converting an out-of-range value. */
static inline int32_t cf__t32_f(float x)
{
    return (int32_t)((x >= -2147483648.0f && x < 2147483648.0f) ? x : -2147483648.0f);
}
static inline int32_t cf__t32_d(double x)
{
    return (int32_t)((x >= -2147483648.0 && x < 2147483648.0) ? x : -2147483648.0);
}
static inline int64_t cf__t64_f(float x)
{
    return (int64_t)((x >= -9223372036854775808.0f && x < 9223372036854775808.0f)
                     ? x : -9223372036854775808.0f);
}
static inline int64_t cf__t64_d(double x)
{
    return (int64_t)((x >= -9223372036854775808.0 && x < 9223372036854775808.0)
                     ? x : -9223372036854775808.0);
}
/* u8: [2^63, 2^64) through the signed range, as compilers do it. */
static inline uint64_t cf__tu64_f(float x)
{
    if (x >= 9223372036854775808.0f) {
        float y = x - 9223372036854775808.0f;
        return y < 9223372036854775808.0f ? (uint64_t)(int64_t)y ^ (UINT64_C(1) << 63) : 0;
    }
    return x >= -9223372036854775808.0f ? (uint64_t)(int64_t)x : UINT64_C(1) << 63;
}
static inline uint64_t cf__tu64_d(double x)
{
    if (x >= 9223372036854775808.0) {
        double y = x - 9223372036854775808.0;
        return y < 9223372036854775808.0 ? (uint64_t)(int64_t)y ^ (UINT64_C(1) << 63) : 0;
    }
    return x >= -9223372036854775808.0 ? (uint64_t)(int64_t)x : UINT64_C(1) << 63;
}
#define CF__T32(x) _Generic((x), float: cf__t32_f, double: cf__t32_d)(x)
#define CF__T64(x) _Generic((x), float: cf__t64_f, double: cf__t64_d)(x)
#define CF__TU64(x) _Generic((x), float: cf__tu64_f, double: cf__tu64_d)(x)

/* Integer bit patterns -> integer types: keep the low bits (two's
 * complement), without relying on implementation-defined conversions. */
#define CF__DEF_WRAP(p, t, k, T, C, B) CF__DEF_WRAP_##C(t, T, B)
#define CF__DEF_WRAP_I(t, T, B)                                  \
    static inline T cf__wrap_##t(uint64_t u)                     \
    {                                                            \
        B low = (B)u;                                            \
        T r;                                                     \
        memcpy(&r, &low, sizeof r);                              \
        return r;                                                \
    }
#define CF__DEF_WRAP_H(t, T, B)
#define CF__DEF_WRAP_F(t, T, B)
#define CF__DEF_WRAP_C(t, T, B)
#define CF__DEF_WRAP_B(t, T, B)
CF__NUMERIC_TYPES(CF__DEF_WRAP, ~)

/* float/double x -> integer type `d`. */
#define CF__FTOI_i1(x) cf__wrap_i1((uint64_t)CF__T32(x))
#define CF__FTOI_i2(x) cf__wrap_i2((uint64_t)CF__T32(x))
#define CF__FTOI_i4(x) CF__T32(x)
#define CF__FTOI_i8(x) CF__T64(x)
#define CF__FTOI_u1(x) ((uint8_t)CF__T32(x))
#define CF__FTOI_u2(x) ((uint16_t)CF__T32(x))
#define CF__FTOI_u4(x) ((uint32_t)CF__T64(x))
#define CF__FTOI_u8(x) CF__TU64(x)

/* ------------------------------------------------------------------ */
/* One value of category SC -> type DT (tag d, category DC, base DB)    */
/* ------------------------------------------------------------------ */

#define CF__CV_I_I(d, DT, DB, v) cf__wrap_##d((uint64_t)(v))
#define CF__CV_I_H(d, DT, DB, v) cf__float_to_half((float)(v))
#define CF__CV_I_F(d, DT, DB, v) ((DT)(v))
#define CF__CV_I_C(d, DT, DB, v) ((DT){ (DB)(v), (DB)0 })
#define CF__CV_I_B(d, DT, DB, v) ((uint8_t)((v) != 0))

#define CF__CV_H_I(d, DT, DB, v) CF__FTOI_##d(cf__half_to_float(v))
#define CF__CV_H_H(d, DT, DB, v) (v)
#define CF__CV_H_F(d, DT, DB, v) CF__HALF_TO(DT, v)
#define CF__CV_H_C(d, DT, DB, v) ((DT){ CF__HALF_TO(DB, v), (DB)0 })
#define CF__CV_H_B(d, DT, DB, v) ((uint8_t)(((v) & 0x7fffu) != 0))

#define CF__CV_F_I(d, DT, DB, v) CF__FTOI_##d(v)
#define CF__CV_F_H(d, DT, DB, v) CF__TO_HALF(v)
#define CF__CV_F_F(d, DT, DB, v) ((DT)(v))
#define CF__CV_F_C(d, DT, DB, v) ((DT){ (DB)(v), (DB)0 })
#define CF__CV_F_B(d, DT, DB, v) ((uint8_t)((v) != 0))

#define CF__CV_C_I(d, DT, DB, v) CF__FTOI_##d((v).re)
#define CF__CV_C_H(d, DT, DB, v) CF__TO_HALF((v).re)
#define CF__CV_C_F(d, DT, DB, v) ((DT)(v).re)
#define CF__CV_C_C(d, DT, DB, v) ((DT){ (DB)(v).re, (DB)(v).im })
#define CF__CV_C_B(d, DT, DB, v) ((uint8_t)((v).re != 0 || (v).im != 0))

#define CF__CV_B_I(d, DT, DB, v) ((DT)((v) != 0))
#define CF__CV_B_H(d, DT, DB, v) ((uint16_t)((v) ? 0x3c00u : 0u))
#define CF__CV_B_F(d, DT, DB, v) ((DT)((v) != 0))
#define CF__CV_B_C(d, DT, DB, v) ((DT){ (DB)((v) != 0), (DB)0 })
#define CF__CV_B_B(d, DT, DB, v) ((uint8_t)((v) != 0))

/* ------------------------------------------------------------------ */
/* The per-pair loops (native byte order on both sides)                 */
/* ------------------------------------------------------------------ */

typedef void cf__loop_fn(unsigned char *dst, ptrdiff_t dst_stride,
                         const unsigned char *src, ptrdiff_t src_stride, size_t n);

/* Contiguous runs get their own loop with constant strides, which the
 * compiler can vectorise; values move through memcpy (no alignment or
 * aliasing assumptions). */
#define CF__DEF_LOOP(s, ST, SC, SB, d, DT, DC, DB)                              \
    static void cf__loop_##s##_##d(unsigned char *dst, ptrdiff_t ds,            \
                                   const unsigned char *src, ptrdiff_t ss,      \
                                   size_t n)                                    \
    {                                                                           \
        if (ds == (ptrdiff_t)sizeof(DT) && ss == (ptrdiff_t)sizeof(ST)) {       \
            for (size_t i = 0; i < n; i++) {                                    \
                ST v;                                                           \
                memcpy(&v, src + i * sizeof(ST), sizeof v);                     \
                DT r = CF__CV_##SC##_##DC(d, DT, DB, v);                        \
                memcpy(dst + i * sizeof(DT), &r, sizeof r);                     \
            }                                                                   \
        } else {                                                                \
            for (size_t i = 0; i < n; i++) {                                    \
                ST v;                                                           \
                memcpy(&v, src + (ptrdiff_t)i * ss, sizeof v);                  \
                DT r = CF__CV_##SC##_##DC(d, DT, DB, v);                        \
                memcpy(dst + (ptrdiff_t)i * ds, &r, sizeof r);                  \
            }                                                                   \
        }                                                                       \
    }
CF__FOR_EACH_PAIR(CF__DEF_LOOP)

#define CF__LOOP_ENTRY(s, ST, SC, SB, d, DT, DC, DB) \
    [CF__T_##s][CF__T_##d] = cf__loop_##s##_##d,
static cf__loop_fn *const cf__loops[CF__NTYPES][CF__NTYPES] = {
    CF__FOR_EACH_PAIR(CF__LOOP_ENTRY)
};

/* ------------------------------------------------------------------ */
/* Copying and swapping                                                 */
/* ------------------------------------------------------------------ */

static inline uint16_t cf__bswap16(uint16_t x)
{
    return (uint16_t)((x >> 8) | (x << 8));
}
static inline uint32_t cf__bswap32(uint32_t x)
{
#if defined(__GNUC__)
    return __builtin_bswap32(x);
#else
    return (x >> 24) | ((x >> 8) & 0xff00u) | ((x << 8) & 0xff0000u) | (x << 24);
#endif
}
static inline uint64_t cf__bswap64(uint64_t x)
{
#if defined(__GNUC__)
    return __builtin_bswap64(x);
#else
    return ((uint64_t)cf__bswap32((uint32_t)x) << 32) | cf__bswap32((uint32_t)(x >> 32));
#endif
}

/* n elements of `width` bytes from src to dst, strides in bytes.  dst may
 * equal src (with the same stride); other overlaps are not supported. */
static void cf__copy(unsigned char *dst, ptrdiff_t ds, const unsigned char *src,
                     ptrdiff_t ss, size_t width, size_t n)
{
    if (dst == src && ds == ss) return;
    if (ds == (ptrdiff_t)width && ss == (ptrdiff_t)width) {
        memmove(dst, src, width * n);
        return;
    }
#define CF__COPY_LOOP(W)                                                      \
    for (size_t i = 0; i < n; i++)                                            \
        memcpy(dst + (ptrdiff_t)i * ds, src + (ptrdiff_t)i * ss, (W));        \
    break;
    switch (width) {
    case 1: CF__COPY_LOOP(1)
    case 2: CF__COPY_LOOP(2)
    case 4: CF__COPY_LOOP(4)
    case 8: CF__COPY_LOOP(8)
    case 16: CF__COPY_LOOP(16)
    default: CF__COPY_LOOP(width)
    }
#undef CF__COPY_LOOP
}

/* Copy n elements of `width` bytes reversing the bytes of each `unit`
 * (width is a multiple of unit).  dst may equal src with the same stride. */
static void cf__swap_copy(unsigned char *dst, ptrdiff_t ds, const unsigned char *src,
                          ptrdiff_t ss, size_t width, size_t unit, size_t n)
{
    size_t parts = width / unit;
#define CF__SWAP_LOOP(T, SWAP)                                                \
    if (ds == (ptrdiff_t)width && ss == (ptrdiff_t)width) {                   \
        for (size_t i = 0; i < n * parts; i++) {                              \
            T x;                                                              \
            memcpy(&x, src + i * sizeof x, sizeof x);                         \
            x = SWAP(x);                                                      \
            memcpy(dst + i * sizeof x, &x, sizeof x);                         \
        }                                                                     \
    } else {                                                                  \
        for (size_t i = 0; i < n; i++) {                                      \
            for (size_t j = 0; j < parts; j++) {                              \
                T x;                                                          \
                memcpy(&x, src + (ptrdiff_t)i * ss + j * sizeof x, sizeof x); \
                x = SWAP(x);                                                  \
                memcpy(dst + (ptrdiff_t)i * ds + j * sizeof x, &x, sizeof x); \
            }                                                                 \
        }                                                                     \
    }                                                                         \
    break;
    switch (unit) {
    case 1: cf__copy(dst, ds, src, ss, width, n); break;
    case 2: CF__SWAP_LOOP(uint16_t, cf__bswap16)
    case 4: CF__SWAP_LOOP(uint32_t, cf__bswap32)
    case 8: CF__SWAP_LOOP(uint64_t, cf__bswap64)
    default:
        for (size_t i = 0; i < n; i++) {
            for (size_t j = 0; j < parts; j++) {
                const unsigned char *s = src + (ptrdiff_t)i * ss + j * unit;
                unsigned char *d = dst + (ptrdiff_t)i * ds + j * unit;
                if (d == s) {
                    for (size_t a = 0, b = unit - 1; a < b; a++, b--) {
                        unsigned char t = d[a];
                        d[a] = d[b];
                        d[b] = t;
                    }
                } else {
                    for (size_t a = 0; a < unit; a++) d[a] = s[unit - 1 - a];
                }
            }
        }
        break;
    }
#undef CF__SWAP_LOOP
}

void cf__swap_inplace(void *data, size_t width, size_t n)
{
    if (width <= 1 || n == 0) return;
    cf__swap_copy(data, (ptrdiff_t)width, data, (ptrdiff_t)width, width, width, n);
}

/* S -> S: copy the common prefix, NUL-pad or truncate the rest. */
static void cf__copy_bytes(unsigned char *dst, ptrdiff_t ds, size_t dw,
                           const unsigned char *src, ptrdiff_t ss, size_t sw, size_t n)
{
    if (dw == sw) {
        cf__copy(dst, ds, src, ss, dw, n);
        return;
    }
    size_t common = dw < sw ? dw : sw;
    for (size_t i = 0; i < n; i++) {
        unsigned char *d = dst + (ptrdiff_t)i * ds;
        memmove(d, src + (ptrdiff_t)i * ss, common);
        if (dw > common) memset(d + common, 0, dw - common);
    }
}

/* ------------------------------------------------------------------ */
/* Conversion                                                           */
/* ------------------------------------------------------------------ */

int cf__dtype_equal(const cf__dtype *a, const cf__dtype *b)
{
    return a->kind == b->kind && a->width == b->width && a->order == b->order;
}

int cf__dtype_can_convert(const cf__dtype *from, const cf__dtype *to)
{
    if (from->width < 1 || to->width < 1) return 0;
    if (cf__is_bytes(from) && cf__is_bytes(to)) return 1;
    if (cf__is_bytes(from) || cf__is_bytes(to)) return 0;
    if (cf__numeric_index(from->kind, from->width) >= 0 &&
        cf__numeric_index(to->kind, to->width) >= 0)
        return 1;
    /* Raw attribute kinds: only to themselves (copied, or swapped). */
    return from->kind == to->kind && from->width == to->width;
}

/* Elements per block when a side needs swapping (stack buffers). */
#define CF__BLOCK 1024

/* dst and src must not overlap, except that they may be the same
 * elements (same pointer and stride) when both widths are equal. */
void cf__convert(void *dst, ptrdiff_t dst_stride, const cf__dtype *to,
                 const void *src, ptrdiff_t src_stride, const cf__dtype *from,
                 size_t n)
{
    unsigned char *d = dst;
    const unsigned char *s = src;
    if (n == 0) return;

    if (cf__is_bytes(from) || cf__is_bytes(to)) {
        if (cf__is_bytes(from) && cf__is_bytes(to))
            cf__copy_bytes(d, dst_stride, (size_t)to->width, s, src_stride,
                           (size_t)from->width, n);
        return;
    }
    if (from->kind == to->kind && from->width == to->width) {
        size_t unit = cf__swap_unit(from);
        if (from->order == to->order || unit <= 1)
            cf__copy(d, dst_stride, s, src_stride, (size_t)from->width, n);
        else
            cf__swap_copy(d, dst_stride, s, src_stride, (size_t)from->width, unit, n);
        return;
    }

    int si = cf__numeric_index(from->kind, from->width);
    int di = cf__numeric_index(to->kind, to->width);
    if (si < 0 || di < 0) return;                /* precondition violated */
    cf__loop_fn *loop = cf__loops[si][di];
    int swap_src = cf__needs_swap(from), swap_dst = cf__needs_swap(to);
    if (!swap_src && !swap_dst) {
        loop(d, dst_stride, s, src_stride, n);
        return;
    }

    /* Swap the source into a native buffer and/or convert into a native
     * buffer that is then swapped out, CF__BLOCK elements at a time. */
    unsigned char sbuf[CF__BLOCK * 16], dbuf[CF__BLOCK * 16];
    size_t sw = (size_t)from->width, dw = (size_t)to->width;
    size_t sunit = cf__swap_unit(from), dunit = cf__swap_unit(to);
    for (size_t done = 0; done < n;) {
        size_t m = n - done < CF__BLOCK ? n - done : CF__BLOCK;
        const unsigned char *sp = s + (ptrdiff_t)done * src_stride;
        unsigned char *dp = d + (ptrdiff_t)done * dst_stride;
        const unsigned char *in = sp;
        ptrdiff_t in_stride = src_stride;
        if (swap_src) {
            cf__swap_copy(sbuf, (ptrdiff_t)sw, sp, src_stride, sw, sunit, m);
            in = sbuf;
            in_stride = (ptrdiff_t)sw;
        }
        if (swap_dst) {
            loop(dbuf, (ptrdiff_t)dw, in, in_stride, m);
            cf__swap_copy(dp, dst_stride, dbuf, (ptrdiff_t)dw, dw, dunit, m);
        } else {
            loop(dp, dst_stride, in, in_stride, m);
        }
        done += m;
    }
}
