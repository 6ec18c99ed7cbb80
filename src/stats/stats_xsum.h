/* stats_xsum.h - exact sums of doubles and integers (internal): a fixed-size
 * fixed-point accumulator wide enough for every finite double, so that the
 * sum of a chunk does not depend on how its values were split over calls,
 * writes, processes or merge orders.  It is rounded to a double (correctly,
 * to nearest even) only when read.
 *
 * The value held is sum(limb[i] * 2^(32 i - 1074)) plus the infinities
 * seen.  Bit 0 of the fixed point is 2^-1074 (the smallest subnormal), so a
 * finite double is an integer m < 2^53 shifted left by at most 2045 bits,
 * and 2^63 such values stay below 2^(2098 + 63): 68 limbs of 32 bits.
 * Limbs are int64 and take 32-bit digits in carry-save form: an add puts at
 * most 2^52 into a limb, so 2^10 adds fit before carries must be resolved
 * (cf__xsum_norm), which the adders do themselves.  Exact integer
 * arithmetic is associative and commutative, hence the invariance. */
#ifndef CF_STATS_XSUM_H
#define CF_STATS_XSUM_H

#include <stdint.h>
#include <string.h>

#define CF__XSUM_LIMBS 68
#define CF__XSUM_BATCH 1024   /* adds between carry resolutions */

typedef struct cf__xsum {
    int64_t limb[CF__XSUM_LIMBS];
    int32_t adds;   /* adds since the limbs were last normalised */
    uint8_t inf;    /* bit 0: +inf seen, bit 1: -inf seen */
} cf__xsum;

/* Resolve carries: every limb but the last in [0, 2^32), the last signed
 * (the sign of the whole value).  The value does not change. */
void cf__xsum_norm(cf__xsum *x);

/* into += from (from is normalised as a side effect). */
void cf__xsum_merge(cf__xsum *into, cf__xsum *from);

/* The sum rounded to the nearest double (ties to even; beyond the double
 * range +-inf); +inf and -inf together give NaN; an exact zero is +0.0. */
double cf__xsum_round(const cf__xsum *x);

/* The bytes that carry an accumulator between processes: a count of
 * words then the words (little-endian u64): word 0 = inf | first << 8 |
 * nlimbs << 16 | negative << 24, then the nlimbs 32-bit digits of the
 * magnitude from digit `first` up (the others are zero).  At most CF__XSUM_WIRE_WORDS words. */
#define CF__XSUM_WIRE_WORDS (1 + CF__XSUM_LIMBS)
int cf__xsum_to_words(const cf__xsum *x, uint64_t *w);
/* Rebuild from words (w[0] and what it announces, at most nw words);
 * -1 if they could not have come from cf__xsum_to_words. */
int cf__xsum_from_words(cf__xsum *x, const uint64_t *w, int nw);

/* The magnitude m (< 2^64) shifted left by `bit` bits (bit + 96 <= 32 *
 * CF__XSUM_LIMBS), added (neg 0) or subtracted (neg 1). */
static inline void cf__xsum_add_shifted(cf__xsum *x, uint64_t m, unsigned bit, int neg)
{
    if (x->adds >= CF__XSUM_BATCH) cf__xsum_norm(x);
    x->adds++;
    unsigned idx = bit >> 5, sh = bit & 31u;
    uint64_t lo = m << sh, hi = sh ? m >> (64 - sh) : 0;
    int64_t s = neg ? -1 : 1;
    x->limb[idx] += s * (int64_t)(lo & 0xffffffffu);
    x->limb[idx + 1] += s * (int64_t)(lo >> 32);
    x->limb[idx + 2] += s * (int64_t)hi;
}

/* Where integer 1 sits in the fixed point. */
#define CF__XSUM_ONE 1074u

static inline void cf__xsum_add_i64(cf__xsum *x, int64_t v)
{
    uint64_t m = v < 0 ? 0u - (uint64_t)v : (uint64_t)v;
    cf__xsum_add_shifted(x, m, CF__XSUM_ONE, v < 0);
}

static inline void cf__xsum_add_u64(cf__xsum *x, uint64_t v)
{
    cf__xsum_add_shifted(x, v, CF__XSUM_ONE, 0);
}

/* Add a double; NaN must be screened out by the caller. */
static inline void cf__xsum_add_f8(cf__xsum *x, double v)
{
    uint64_t b;
    memcpy(&b, &v, sizeof b);
    unsigned e = (unsigned)(b >> 52) & 0x7ffu;
    uint64_t m = b & ((UINT64_C(1) << 52) - 1);
    if (e == 0x7ffu) {                       /* inf (NaN excluded) */
        x->inf |= (uint8_t)(b >> 63 ? 2u : 1u);
        return;
    }
    if (x->adds >= CF__XSUM_BATCH) cf__xsum_norm(x);
    x->adds++;
    unsigned pos = e ? e - 1 : 0;            /* value = m * 2^(pos - 1074) */
    m |= e ? UINT64_C(1) << 52 : 0;
    unsigned idx = pos >> 5, sh = pos & 31u;
    int64_t lo = (int64_t)((m << sh) & 0xffffffffu), hi = (int64_t)(m >> (32 - sh));
    int64_t neg = -(int64_t)(b >> 63);       /* 0 or -1 */
    x->limb[idx] += (lo ^ neg) - neg;
    x->limb[idx + 1] += (hi ^ neg) - neg;
}

/* Hold a recorded (rounded) sum exactly from here on: the statistics text
 * and the chunk index keep the rounded double only.  NaN stands for +inf
 * and -inf both seen. */
static inline void cf__xsum_set_f8(cf__xsum *x, double v)
{
    memset(x, 0, sizeof *x);
    if (v != v) x->inf = 3;
    else cf__xsum_add_f8(x, v);
}

#endif
