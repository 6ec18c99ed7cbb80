/* stream_stats.c - a stream's per-chunk statistics (docs/format.md 8.7):
 * the rows that start in a chunk, folded by the core's accumulators
 * (src/stats) at append time, kept as count, NaN count, min, max and the
 * correctly rounded exact sum per component, and their table line. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stats.h"
#include "stream_impl.h"

void cf__stream_stat_from_acc(const cf__acc *a, cf__stream_stat *out)
{
    out->count = a->count;
    out->nan = a->nan;
    memcpy(&out->min, &a->v, sizeof out->min); /* every union member is two 8-byte values */
    memcpy(&out->max, (const char *)&a->v + 8, sizeof out->max);
    out->sum = cf__acc_sum(a);
}

static double outward(char cls, uint64_t bits, int up)
{
    if (cls == 'f') {
        double d;
        memcpy(&d, &bits, sizeof d);
        return d;
    }
    long double x = cls == 'i' ? (long double)(int64_t)bits : (long double)bits;
    double d = (double)x;
    if (up ? (long double)d < x : (long double)d > x) d = nextafter(d, up ? INFINITY : -INFINITY);
    return d;
}

void cf__stream_stat_fill(const cf__stream_stat *s, char cls, cf_chunk_stats *out)
{
    out->ordered = cls != 0;
    out->count = s->count;
    out->nan_count = s->nan;
    out->sum = s->sum;
    out->min = out->max = NAN;
    if (cls && s->count > s->nan) {
        out->min = outward(cls, s->min, 0);
        out->max = outward(cls, s->max, 1);
    }
}

/* One value of the line: decimal for integers, the statistics text's
 * double spelling for floats, '-' for kinds without an order. */
static int value(char *out, size_t cap, char cls, uint64_t bits)
{
    if (cls == 'i') return snprintf(out, cap, "%" PRId64, (int64_t)bits);
    if (cls == 'u') return snprintf(out, cap, "%" PRIu64, bits);
    if (cls == 'f') {
        double d;
        memcpy(&d, &bits, sizeof d);
        return cf__stats_fmt_double(out, cap, d);
    }
    return snprintf(out, cap, "-");
}

int cf__stream_stat_format(char *out, size_t cap, int64_t chunk, int64_t component, char cls,
                           const cf__stream_stat *s)
{
    char mn[40], mx[40], sum[40];
    /* a chunk without ordered values has no min/max: spelled '-' */
    int none = !cls || s->count == s->nan;
    if (none) strcpy(mn, "-"), strcpy(mx, "-");
    else value(mn, sizeof mn, cls, s->min), value(mx, sizeof mx, cls, s->max);
    cf__stats_fmt_double(sum, sizeof sum, s->sum);
    return snprintf(out, cap, "S %" PRId64 " %" PRId64 " count=%" PRId64 " nan=%" PRId64 " min=%s max=%s sum=%s\n",
                    chunk, component, s->count, s->nan, mn, mx, sum);
}

/* The next space- or LF-ended word of [*p, end) after `key`. */
static int word(const char **p, const char *end, const char *key, char *out, size_t cap)
{
    size_t n = strlen(key);
    if ((size_t)(end - *p) < n || memcmp(*p, key, n) != 0) return -1;
    const char *q = *p + n, *e = q;
    while (e < end && *e != ' ' && *e != '\n') e++;
    if (e == q || (size_t)(e - q) >= cap) return -1;
    memcpy(out, q, (size_t)(e - q));
    out[e - q] = 0;
    *p = e;
    return 0;
}

static int parse_value(const char *w, char cls, uint64_t *bits)
{
    char again[48];
    if (cls == 'i') {
        int64_t v = (int64_t)strtoll(w, NULL, 10);
        *bits = (uint64_t)v;
    } else if (cls == 'u') {
        *bits = (uint64_t)strtoull(w, NULL, 10);
    } else {
        double d = strcmp(w, "nan") == 0 ? NAN : strcmp(w, "inf") == 0 ? INFINITY
                 : strcmp(w, "-inf") == 0 ? -INFINITY : strtod(w, NULL);
        memcpy(bits, &d, sizeof d);
    }
    /* strict: only the spelling a writer makes */
    value(again, sizeof again, cls ? cls : 'f', *bits);
    return strcmp(again, w) == 0 ? 0 : -1;
}

int cf__stream_stat_parse(const char **p, const char *end, int64_t chunk, int64_t component, char cls,
                          cf__stream_stat *s)
{
    char head[64], w[48];
    int n = snprintf(head, sizeof head, "S %" PRId64 " %" PRId64 " ", chunk, component);
    if ((size_t)(end - *p) < (size_t)n || memcmp(*p, head, (size_t)n) != 0) return -1;
    *p += n;
    uint64_t v;
    memset(s, 0, sizeof *s);
    if (word(p, end, "count=", w, sizeof w) || parse_value(w, 'u', &v) || v > INT64_MAX) return -1;
    s->count = (int64_t)v;
    if (**p != ' ') return -1;
    (*p)++;
    if (word(p, end, "nan=", w, sizeof w) || parse_value(w, 'u', &v) || v > (uint64_t)s->count) return -1;
    s->nan = (int64_t)v;
    int none = !cls || s->count == s->nan;
    for (int m = 0; m < 2; m++) {
        if (**p != ' ') return -1;
        (*p)++;
        if (word(p, end, m ? "max=" : "min=", w, sizeof w)) return -1;
        if (none ? strcmp(w, "-") != 0 : parse_value(w, cls, m ? &s->max : &s->min) != 0) return -1;
    }
    if (none) { /* the identities an empty accumulator holds */
        cf__acc a;
        cf__dtype d = { '<', cls == 'i' ? 'i' : cls == 'u' ? 'u' : cls == 'f' ? 'f' : 'c', 8 };
        cf__acc_init(&a, &d);
        memcpy(&s->min, &a.v, 8);
        memcpy(&s->max, (const char *)&a.v + 8, 8);
    }
    if (**p != ' ') return -1;
    (*p)++;
    if (word(p, end, "sum=", w, sizeof w) || parse_value(w, 'f', &v)) return -1;
    memcpy(&s->sum, &v, sizeof s->sum);
    if (*p >= end || **p != '\n') return -1;
    (*p)++;
    return 0;
}
