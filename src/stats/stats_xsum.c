/* stats_xsum.c - the exact accumulator's carries, merges, rounding and
 * wire words (stats_xsum.h says what it holds and why). */
#include "stats_xsum.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#define CF__M32 UINT64_C(0xffffffff)

void cf__xsum_norm(cf__xsum *x)
{
    int64_t carry = 0;
    for (int i = 0; i < CF__XSUM_LIMBS - 1; i++) {
        int64_t v = x->limb[i] + carry;
        int64_t low = (int64_t)((uint64_t)v & CF__M32);
        x->limb[i] = low;
        carry = (v - low) / ((int64_t)1 << 32); /* exact: floor division */
    }
    x->limb[CF__XSUM_LIMBS - 1] += carry;
    x->adds = 0;
}

void cf__xsum_merge(cf__xsum *into, cf__xsum *from)
{
    cf__xsum_norm(into);
    cf__xsum_norm(from);
    for (int i = 0; i < CF__XSUM_LIMBS; i++) into->limb[i] += from->limb[i];
    into->inf |= from->inf;
    cf__xsum_norm(into);
}

double cf__xsum_round(const cf__xsum *x)
{
    if (x->inf == 3) return NAN;
    if (x->inf) return x->inf == 1 ? INFINITY : -INFINITY;
    cf__xsum t = *x;
    cf__xsum_norm(&t);
    int neg = t.limb[CF__XSUM_LIMBS - 1] < 0;
    if (neg) {
        for (int i = 0; i < CF__XSUM_LIMBS; i++) t.limb[i] = -t.limb[i];
        cf__xsum_norm(&t);
    }
    /* now digits: limb[i] in [0, 2^32) (the last below 2^17: 2^63 values
     * below 2^1024 never reach 2^2161) */
    int top = CF__XSUM_LIMBS - 1;
    while (top >= 0 && t.limb[top] == 0) top--;
    if (top < 0) return 0.0;
    int hb = 0;
    while ((uint64_t)t.limb[top] >> (hb + 1)) hb++;
    int64_t h = 32 * (int64_t)top + hb;   /* the highest set bit */
#define CF__BIT(j) (int)(((uint64_t)t.limb[(j) >> 5] >> ((j) & 31)) & 1u)
    if (h <= 52) {                        /* a multiple of 2^-1074 below 2^-1021: exact */
        uint64_t m = (uint64_t)t.limb[0] | ((uint64_t)t.limb[1] << 32);
        double r = ldexp((double)m, -1074);
        return neg ? -r : r;
    }
    int64_t lowbit = h - 52;
    uint64_t m = 0;
    for (int64_t j = h; j >= lowbit; j--) m = (m << 1) | (uint64_t)CF__BIT(j);
    int round = CF__BIT(lowbit - 1), sticky = 0;
    int64_t below = lowbit - 1;           /* bits [0, below) */
    for (int64_t i = 0; i < below >> 5 && !sticky; i++) sticky = t.limb[i] != 0;
    if (!sticky && (below & 31))
        sticky = ((uint64_t)t.limb[below >> 5] & ((UINT64_C(1) << (below & 31)) - 1)) != 0;
#undef CF__BIT
    if (round && (sticky || (m & 1u))) m++; /* 2^53 is still exact in a double */
    double r = ldexp((double)m, (int)(lowbit - 1074)); /* overflow gives inf, as rounding must */
    return neg ? -r : r;
}

int cf__xsum_to_words(const cf__xsum *x, uint64_t *w)
{
    cf__xsum t = *x;
    cf__xsum_norm(&t);
    int neg = t.limb[CF__XSUM_LIMBS - 1] < 0;
    if (neg) { /* magnitude digits: a negative value's own digits run up to the last limb */
        for (int i = 0; i < CF__XSUM_LIMBS; i++) t.limb[i] = -t.limb[i];
        cf__xsum_norm(&t);
    }
    int lo = 0, hi = CF__XSUM_LIMBS - 1;
    while (hi >= 0 && t.limb[hi] == 0) hi--;
    while (lo <= hi && t.limb[lo] == 0) lo++;
    int n = hi >= lo ? hi - lo + 1 : 0;
    if (n == 0) lo = 0;
    w[0] = (uint64_t)x->inf | (uint64_t)lo << 8 | (uint64_t)n << 16 | (uint64_t)neg << 24;
    for (int i = 0; i < n; i++) w[1 + i] = (uint64_t)t.limb[lo + i];
    return 1 + n;
}

int cf__xsum_from_words(cf__xsum *x, const uint64_t *w, int nw)
{
    if (nw < 1 || w[0] >> 25) return -1;
    unsigned inf = (unsigned)(w[0] & 0xffu), lo = (unsigned)(w[0] >> 8) & 0xffu, n = (unsigned)(w[0] >> 16) & 0xffu;
    int64_t sign = w[0] >> 24 ? -1 : 1;
    if (inf > 3 || lo + n > CF__XSUM_LIMBS || (int)n + 1 > nw) return -1;
    memset(x, 0, sizeof *x);
    x->inf = (uint8_t)inf;
    for (unsigned i = 0; i < n; i++) {
        /* 32-bit digits only: merges of any such words cannot overflow */
        if (w[1 + i] > CF__M32) return -1;
        x->limb[lo + i] = sign * (int64_t)w[1 + i];
    }
    return 0;
}
