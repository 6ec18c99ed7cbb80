/* stats_text.c - the statistics text that ends `colfile-v1` (and the older
 * file colfile-stats-v1): formatting it at a commit and parsing it at open
 * (docs/format.md 8.4; stats.h gives the grammar). */
#include "stats.h"

#include <inttypes.h>
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "hex.h"
#include "stats_impl.h"


/* Numbers in the file never depend on the caller's locale: formatting and
 * parsing run under the "C" LC_NUMERIC of this thread (POSIX uselocale). */
typedef struct {
    locale_t c, old;
} cf__c_numeric;

static int cf__c_numeric_enter(cf__c_numeric *l)
{
    l->c = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
    if (l->c == (locale_t)0) return -1;
    l->old = uselocale(l->c);
    return 0;
}

static void cf__c_numeric_leave(cf__c_numeric *l)
{
    uselocale(l->old);
    freelocale(l->c);
}

/* Decimal digits of u at out (no terminator); returns their number. */
static size_t cf__fmt_u64(char *out, uint64_t u)
{
    char tmp[20];
    size_t n = 0;
    do {
        tmp[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    for (size_t i = 0; i < n; i++) out[i] = tmp[n - 1 - i];
    return n;
}

static size_t cf__fmt_i64(char *out, int64_t v)
{
    if (v >= 0) return cf__fmt_u64(out, (uint64_t)v);
    out[0] = '-';
    return 1 + cf__fmt_u64(out + 1, 0u - (uint64_t)v);
}

#if defined(__SIZEOF_INT128__)
__extension__ typedef unsigned __int128 cf__u128;

static int cf__fmt_digits(char *out, int neg, uint64_t d, int x);

/* printf("%.17g", v) for finite v with 1e-11 <= |v| < 2^64, the range
 * statistics live in, exactly as the C library prints it (17 significant
 * digits of the exact binary value, rounded half to even, then the %g
 * rules); -1 elsewhere.  v = m 2^e, so v 10^k = m 5^k 2^(e+k): with
 * k <= 27, m 5^k < 2^116 and the digits come from one 128-bit product
 * and a shift whose remainder decides the rounding.  printf's general
 * conversion is a multi-precision one, about 40 times slower, and a
 * statistics file formats three doubles per chunk and component. */
static int cf__fmt_g17_fast(char *out, double v)
{
    static const uint64_t pow5[28] = {
        UINT64_C(1), UINT64_C(5), UINT64_C(25), UINT64_C(125), UINT64_C(625), UINT64_C(3125),
        UINT64_C(15625), UINT64_C(78125), UINT64_C(390625), UINT64_C(1953125), UINT64_C(9765625),
        UINT64_C(48828125), UINT64_C(244140625), UINT64_C(1220703125), UINT64_C(6103515625),
        UINT64_C(30517578125), UINT64_C(152587890625), UINT64_C(762939453125), UINT64_C(3814697265625),
        UINT64_C(19073486328125), UINT64_C(95367431640625), UINT64_C(476837158203125),
        UINT64_C(2384185791015625), UINT64_C(11920928955078125), UINT64_C(59604644775390625),
        UINT64_C(298023223876953125), UINT64_C(1490116119384765625), UINT64_C(7450580596923828125),
    };
    const uint64_t lo = UINT64_C(10000000000000000), hi = UINT64_C(100000000000000000); /* 1e16, 1e17 */
    double av = fabs(v);
    if (av >= 1e17 && av < 18446744073709551616.0) {
        /* an integer of 18 to 20 digits (integer sums): drop 1 to 3 of them */
        uint64_t u = (uint64_t)av, p = 10;
        int x = 17;
        while (x < 19 && u / p >= hi) {
            p *= 10;
            x++;
        }
        uint64_t q = u / p, rem = u % p, d = q + (rem > p / 2 || (rem == p / 2 && (q & 1u)));
        if (d == hi) {
            d = lo;
            x++;
        }
        return cf__fmt_digits(out, v < 0, d, x);
    }
    if (!(av >= 1e-11 && av < 1e17)) return -1;
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    int be = (int)((bits >> 52) & 0x7ffu);
    if (be == 0) return -1; /* subnormal: not in range anyway */
    uint64_t m = (bits & ((UINT64_C(1) << 52) - 1)) | (UINT64_C(1) << 52);
    int e = be - 1075;
    int x = (int)floor(log10(av)); /* the decimal exponent, maybe off by one */
    /* x is right when 1e16 <= v 10^(16-x) < 1e17 before rounding; d is
     * that number's integer part, then rounded */
    uint64_t d = 0;
    for (int tries = 0;; tries++) {
        int k = 16 - x;
        if (k < 0 || k > 27 || tries > 3) return -1;
        cf__u128 nn = (cf__u128)m * pow5[k];
        int sh = e + k, up = 0;
        if (sh >= 0) {
            if (sh >= 64 || nn > (cf__u128)(UINT64_MAX >> sh)) {
                x++;
                continue;
            }
            d = (uint64_t)(nn << sh);
        } else if (-sh >= 128) {
            d = 0;
        } else {
            int r = -sh;
            cf__u128 q = nn >> r, rem = nn - (q << r), half = (cf__u128)1 << (r - 1);
            if (q >= (cf__u128)hi) {
                x++;
                continue;
            }
            d = (uint64_t)q;
            up = rem > half || (rem == half && (d & 1u));
        }
        if (d >= hi) {
            x++;
        } else if (d < lo) {
            x--;
        } else {
            d += (uint64_t)up;
            if (d == hi) { /* 9.99..95 rounded up to 10.0 */
                d = lo;
                x++;
            }
            break;
        }
    }
    return cf__fmt_digits(out, v < 0, d, x);
}

/* The %.17g spelling of (-1)^neg d 10^(x-16), d 17 digits (1e16 <= d < 1e17). */
static int cf__fmt_digits(char *out, int neg, uint64_t d, int x)
{
    char dig[17];
    for (int i = 16; i >= 0; i--) {
        dig[i] = (char)('0' + d % 10);
        d /= 10;
    }
    int nd = 17;
    while (nd > 1 && dig[nd - 1] == '0') nd--;
    size_t n = 0;
    if (neg) out[n++] = '-';
    if (x < -4 || x >= 17) {
        out[n++] = dig[0];
        if (nd > 1) {
            out[n++] = '.';
            for (int i = 1; i < nd; i++) out[n++] = dig[i];
        }
        out[n++] = 'e';
        out[n++] = x < 0 ? '-' : '+';
        int ax = x < 0 ? -x : x;
        if (ax < 10) out[n++] = '0';
        n += cf__fmt_u64(out + n, (uint64_t)ax);
    } else if (x >= 0) {
        for (int i = 0; i <= x; i++) out[n++] = dig[i];
        if (nd > x + 1) {
            out[n++] = '.';
            for (int i = x + 1; i < nd; i++) out[n++] = dig[i];
        }
    } else {
        out[n++] = '0';
        out[n++] = '.';
        for (int i = 0; i < -x - 1; i++) out[n++] = '0';
        for (int i = 0; i < nd; i++) out[n++] = dig[i];
    }
    out[n] = '\0';
    return (int)n;
}
#endif

/* A double as the file spells it: nan, inf, -inf or %.17g (round-trips).
 * out has room for 32 characters. */
static int cf__fmt_double(char *out, size_t cap, double v)
{
    if (v != v) return snprintf(out, cap, "nan");
    if (isinf(v)) return snprintf(out, cap, v > 0 ? "inf" : "-inf");
    if (v == 0) return snprintf(out, cap, signbit(v) ? "-0" : "0");
#if defined(__SIZEOF_INT128__)
    if (cap >= 32) {
        int n = cf__fmt_g17_fast(out, v);
        if (n >= 0) return n;
    }
#endif
    return snprintf(out, cap, "%.17g", v);
}

/* For the tests: cf__fmt_double. */
int cf__stats_fmt_double(char *out, size_t cap, double v)
{
    return cf__fmt_double(out, cap, v);
}

/* Upper bounds of the line lengths (numbers: 20 digits and a sign; doubles
 * at most 24 characters). */
#define CF__HEAD_MAX 160
#define CF__BLOB_LINE_MAX 64
#define CF__CHUNK_LINE_MAX 200

int cf__stats_format(const cf__stats *s, const cf__header *h, char **text, size_t *len, const char *path,
                     cf_error *err)
{
    *text = NULL;
    *len = 0;
    if (s->nmemb != h->nmemb || s->nfile != h->nfile || s->chunk_rows < 1 || !s->first_chunk)
        return CF_FAIL(err, CF_EARG, "%s: statistics do not match the header (NMEMB %lld/%lld, NFILE %lld/%lld)",
                       path, (long long)s->nmemb, (long long)h->nmemb, (long long)s->nfile,
                       (long long)h->nfile);
    /* which blobs go out, and how long the text can get */
    uint64_t cap = CF__HEAD_MAX;
    for (int64_t b = 0; b < h->nfile; b++) {
        int64_t nc = s->first_chunk[b + 1] - s->first_chunk[b];
        if (!s->valid[b] || nc != cf__stats_chunks_of(h->rows[b], s->chunk_rows) || !cf__stats_blob_whole(s, b)) continue;
        uint64_t lines = (uint64_t)nc * (uint64_t)s->nmemb;
        if (lines > (SIZE_MAX / 2 - cap) / CF__CHUNK_LINE_MAX)
            return CF_FAIL(err, CF_ENOMEM, "%s: statistics too large to format", path);
        cap += CF__BLOB_LINE_MAX + lines * CF__CHUNK_LINE_MAX;
    }
    char *buf = malloc((size_t)cap);
    if (!buf) return CF_FAIL(err, CF_ENOMEM, "%s: out of memory formatting statistics", path);
    cf__c_numeric loc;
    if (cf__c_numeric_enter(&loc)) {
        free(buf);
        return CF_FAIL(err, CF_ENOMEM, "%s: cannot create the C locale", path);
    }
    char token[CF_DTYPE_MAX];
    cf__dtype_format(&h->dtype, token);
    size_t n = (size_t)snprintf(buf, (size_t)cap,
                                CF__STATS_MAGIC_LINE "\nDTYPE: %s\nNMEMB: %" PRId64 "\nNFILE: %" PRId64
                                "\nCHUNK: %" PRId64 "\n",
                                token, h->nmemb, h->nfile, s->chunk_rows);
    char cls = cf__acc_class(&h->dtype);
    for (int64_t b = 0; b < h->nfile; b++) {
        int64_t nc = s->first_chunk[b + 1] - s->first_chunk[b];
        if (!s->valid[b] || nc != cf__stats_chunks_of(h->rows[b], s->chunk_rows) || !cf__stats_blob_whole(s, b)) continue;
        n += (size_t)snprintf(buf + n, (size_t)cap - n, "%06" PRIX64 ": %" PRId64 " : %" PRIu32 "\n",
                              (uint64_t)b, h->rows[b], h->sums[b]);
        for (int64_t k = 0; k < nc; k++) {
            for (int64_t j = 0; j < s->nmemb; j++) {
                const cf__acc *a = &s->blob[b].run[0].acc[k * s->nmemb + j];
                /* "<k> <j> count=<n> nan=<n> min=<v> max=<v> sum=<v>\n", at
                 * most CF__CHUNK_LINE_MAX bytes, by hand: this runs for
                 * every chunk and component at every commit */
                char *o = buf + n;
                o += cf__fmt_i64(o, k);
                *o++ = ' ';
                o += cf__fmt_i64(o, j);
                memcpy(o, " count=", 7);
                o += 7;
                o += cf__fmt_i64(o, a->count);
                memcpy(o, " nan=", 5);
                o += 5;
                o += cf__fmt_i64(o, a->nan);
                memcpy(o, " min=", 5);
                o += 5;
                switch (cls) {
                case 'i': o += cf__fmt_i64(o, a->v.i.min); break;
                case 'u': o += cf__fmt_u64(o, a->v.u.min); break;
                case 'f': o += cf__fmt_double(o, 32, a->v.f.min); break;
                default: *o++ = '-'; break;
                }
                memcpy(o, " max=", 5);
                o += 5;
                switch (cls) {
                case 'i': o += cf__fmt_i64(o, a->v.i.max); break;
                case 'u': o += cf__fmt_u64(o, a->v.u.max); break;
                case 'f': o += cf__fmt_double(o, 32, a->v.f.max); break;
                default: *o++ = '-'; break;
                }
                memcpy(o, " sum=", 5);
                o += 5;
                if (cls) o += cf__fmt_double(o, 32, cf__acc_sum(a));
                else *o++ = '-';
                *o++ = '\n';
                *o = '\0';
                n = (size_t)(o - buf);
            }
        }
    }
    cf__c_numeric_leave(&loc);
    *text = buf;
    *len = n;
    return 0;
}

/* --- parsing ------------------------------------------------------- */

/* A line of the text without its LF (and a CR before it).  Returns 0 when
 * no complete line is left: a final piece without LF is a torn write and
 * is never used (it could be a number cut short). */
static int cf__next_line(const char **p, const char *end, const char **ls, const char **le)
{
    if (*p >= end) return 0;
    const char *nl = memchr(*p, '\n', (size_t)(end - *p));
    if (!nl) return 0;
    *ls = *p;
    *le = nl > *p && nl[-1] == '\r' ? nl - 1 : nl;
    *p = nl + 1;
    return 1;
}

static int cf__is_blank(char c)
{
    return c == ' ' || c == '\t';
}

static void cf__skip_blank(const char **p, const char *e)
{
    while (*p < e && cf__is_blank(**p)) (*p)++;
}

/* Decimal digits into a uint64 (at least one digit, no overflow). */
static int cf__lex_u64(const char **p, const char *e, uint64_t *out)
{
    const char *q = *p;
    uint64_t v = 0;
    if (q >= e || *q < '0' || *q > '9') return -1;
    while (q < e && *q >= '0' && *q <= '9') {
        unsigned dg = (unsigned)(*q - '0');
        if (v > (UINT64_MAX - dg) / 10) return -1;
        v = v * 10 + dg;
        q++;
    }
    *p = q;
    *out = v;
    return 0;
}

/* A non-negative decimal that fits int64. */
static int cf__lex_count(const char **p, const char *e, int64_t *out)
{
    uint64_t v;
    if (cf__lex_u64(p, e, &v) || v > (uint64_t)INT64_MAX) return -1;
    *out = (int64_t)v;
    return 0;
}

static int cf__lex_i64(const char **p, const char *e, int64_t *out)
{
    const char *q = *p;
    int neg = q < e && *q == '-';
    uint64_t v;
    q += neg;
    if (cf__lex_u64(&q, e, &v)) return -1;
    if (neg ? v > (uint64_t)INT64_MAX + 1 : v > (uint64_t)INT64_MAX) return -1;
    *out = neg ? (v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v) : (int64_t)v;
    *p = q;
    return 0;
}

/* A whole token [p, e) as a double: nan, inf, -inf, or a decimal number
 * (digits, '.', exponent; strtod under the C locale). */
static int cf__parse_double(const char *p, const char *e, double *out)
{
    size_t n = (size_t)(e - p);
    if (n == 3 && memcmp(p, "nan", 3) == 0) { *out = NAN; return 0; }
    if (n == 3 && memcmp(p, "inf", 3) == 0) { *out = INFINITY; return 0; }
    if (n == 4 && memcmp(p, "-inf", 4) == 0) { *out = -INFINITY; return 0; }
    char tmp[64];
    if (n == 0 || n >= sizeof tmp) return -1;
    int digits = 0;
    for (size_t i = 0; i < n; i++) {
        char c = p[i];
        if (c >= '0' && c <= '9') digits = 1;
        else if (c != '.' && c != '-' && c != '+' && c != 'e' && c != 'E') return -1;
    }
    if (!digits) return -1;
    memcpy(tmp, p, n);
    tmp[n] = '\0';
    char *stop = NULL;
    double v = strtod(tmp, &stop);
    if (stop != tmp + n) return -1;
    *out = v;
    return 0;
}

/* What the chunk line gave, before it is checked against the blob. */
typedef struct {
    int64_t k, j;
    cf__acc a;
} cf__chunk_rec;

/* The fields of a chunk line "<k> <j> name=value ...": count, nan, min,
 * max and sum exactly once each; other names are skipped (later
 * versions).  Returns NULL or what is wrong. */
static const char *cf__parse_chunk_line(const char *p, const char *e, char cls, cf__chunk_rec *r)
{
    if (cf__lex_count(&p, e, &r->k)) return "bad chunk index";
    if (p >= e || !cf__is_blank(*p)) return "bad chunk index";
    cf__skip_blank(&p, e);
    if (cf__lex_count(&p, e, &r->j)) return "bad component index";
    cf__acc_init_class(&r->a, cls);
    unsigned seen = 0;
    for (;;) {
        int had_blank = p < e && cf__is_blank(*p);
        cf__skip_blank(&p, e);
        if (p >= e) break;
        if (!had_blank) return "fields must be separated by spaces";
        const char *ns = p;
        while (p < e && *p != '=' && !cf__is_blank(*p)) p++;
        if (p >= e || *p != '=' || p == ns) return "expected name=value";
        size_t nl = (size_t)(p - ns);
        const char *vs = ++p;
        while (p < e && !cf__is_blank(*p)) p++;
        const char *ve = p;
        if (vs == ve) return "empty value";
        const char *q = vs;
#define CF__NAME_IS(s) (nl == sizeof(s) - 1 && memcmp(ns, s, nl) == 0)
        unsigned bit;
        if (CF__NAME_IS("count")) {
            bit = 1;
            if (cf__lex_count(&q, ve, &r->a.count) || q != ve) return "bad count";
        } else if (CF__NAME_IS("nan")) {
            bit = 2;
            if (cf__lex_count(&q, ve, &r->a.nan) || q != ve) return "bad nan count";
        } else if (CF__NAME_IS("min") || CF__NAME_IS("max")) {
            int is_min = ns[1] == 'i';
            bit = is_min ? 4 : 8;
            if (cls == 'i') {
                if (cf__lex_i64(&q, ve, is_min ? &r->a.v.i.min : &r->a.v.i.max) || q != ve)
                    return "bad integer min/max";
            } else if (cls == 'u') {
                if (cf__lex_u64(&q, ve, is_min ? &r->a.v.u.min : &r->a.v.u.max) || q != ve)
                    return "bad unsigned min/max";
            } else if (cls == 'f') {
                double v;
                if (cf__parse_double(vs, ve, &v) || v != v) return "bad float min/max";
                if (is_min) r->a.v.f.min = v;
                else r->a.v.f.max = v;
            } else if (ve - vs != 1 || *vs != '-') {
                return "min/max must be '-' for this dtype";
            }
        } else if (CF__NAME_IS("sum")) {
            bit = 16;
            if (cls) {
                double v;
                if (cf__parse_double(vs, ve, &v)) return "bad sum";
                cf__xsum_set_f8(&r->a.xs, v);
            } else if (ve - vs != 1 || *vs != '-') {
                return "sum must be '-' for this dtype";
            }
        } else {
            continue;   /* a field of a later version */
        }
#undef CF__NAME_IS
        if (seen & bit) return "repeated field";
        seen |= bit;
    }
    if (seen != 31) return "missing field (count, nan, min, max and sum are required)";
    return NULL;
}

/* Is the record of chunk k (of a blob with `rows` rows) what a writer
 * can produce? */
static int cf__chunk_plausible(const cf__acc *a, char cls, char kind, int64_t rows, int64_t chunk, int64_t k)
{
    int64_t r = rows - k * chunk;
    if (r > chunk) r = chunk;
    if (a->count != r || a->nan > a->count) return 0;
    switch (cls) {
    case 'i': return a->nan == 0 && a->v.i.min <= a->v.i.max;
    case 'u': return a->nan == 0 && a->v.u.min <= a->v.u.max && (kind != 'b' || a->v.u.max <= 1);
    case 'f':
        if (a->nan == a->count) return a->v.f.min == INFINITY && a->v.f.max == -INFINITY;
        return a->v.f.min <= a->v.f.max;
    default: return kind == 'c' || a->nan == 0;
    }
}

/* Blob states while parsing (in s->valid). */
enum { CF__B_UNSEEN = 0, CF__B_GOOD = 1, CF__B_BAD = 2, CF__B_STALE = 3 };

static void cf__blob_reset(cf__stats *s, int64_t b, char cls)
{
    (void)cls;
    cf__stats_reset_blob(s, b);
}

/* Everything invalid (and empty) again, in place. */
static void cf__stats_reset(cf__stats *s, const cf__header *h, char cls)
{
    (void)cls;
    for (int64_t b = 0; b < s->nfile; b++) {
        cf__stats_reset_blob(s, b);
        s->valid[b] = h->rows[b] <= 0;
    }
}

/* Minimal bytes of a chunk line ("0 0 count=1 nan=0 min=0 max=0 sum=0\n"),
 * to bound what a text of a given length can describe. */
#define CF__CHUNK_LINE_MIN 32
/* Accumulators any file may ask for (2.5 MiB). */
#define CF__PARSE_FREE_ACCS ((int64_t)1 << 16)

int cf__stats_parse(cf__stats *s, const cf__header *h, const char *text, size_t len, const char *path,
                    cf_error *err)
{
    cf__stats_free(s);
    const char *p = text ? text : "", *end = text ? text + len : p;
    const char *ls, *le;
    int64_t line = 0;
    int rc = 0;
    char cls = cf__acc_class(&h->dtype);
    int64_t hrows = 0;
    for (int64_t b = 0; b < h->nfile; b++)
        if (h->rows[b] > 0) hrows = h->rows[b] > INT64_MAX - hrows ? INT64_MAX : hrows + h->rows[b];
    int64_t def_chunk = cf__stats_chunk_rows_for(hrows, h->nmemb, h->dtype.width);
    int64_t nmemb = 0, nfile = 0, chunk = 0;
    cf__c_numeric loc;
    int have_loc = 0;

    /* the five fixed lines */
    static const char *const keys[5] = { CF__STATS_MAGIC_LINE, "DTYPE: ", "NMEMB: ", "NFILE: ", "CHUNK: " };
    char token[CF_DTYPE_MAX], want[CF_DTYPE_MAX];
    int dtype_match = 0;
    for (int i = 0; i < 5; i++) {
        line++;
        if (!cf__next_line(&p, end, &ls, &le)) {
            rc = CF_FAIL(err, CF_EFORMAT, "%s:%lld: truncated before the %s line", path, (long long)line,
                         i ? keys[i] : "first");
            goto fail;
        }
        size_t kl = strlen(keys[i]);
        if ((size_t)(le - ls) < kl || memcmp(ls, keys[i], kl) != 0) {
            rc = CF_FAIL(err, CF_EFORMAT, "%s:%lld: expected '%s'", path, (long long)line,
                         i ? keys[i] : CF__STATS_MAGIC_LINE);
            goto fail;
        }
        const char *v = ls + kl;
        if (i == 0) {
            if (v != le) {
                rc = CF_FAIL(err, CF_EFORMAT, "%s:1: expected '%s'", path, CF__STATS_MAGIC_LINE);
                goto fail;
            }
        } else if (i == 1) {
            size_t tl = (size_t)(le - v);
            cf__dtype_format(&h->dtype, want);
            dtype_match = tl < sizeof token && tl > 0;
            if (dtype_match) {
                memcpy(token, v, tl);
                token[tl] = '\0';
                dtype_match = strcmp(token, want) == 0;
            }
        } else {
            int64_t x;
            const int64_t maxv[5] = { 0, 0, CF__NMEMB_MAX, CF__NFILE_MAX, INT64_MAX };
            if (cf__lex_count(&v, le, &x) || v != le || x > maxv[i] || (i == 4 && x < 1)) {
                rc = CF_FAIL(err, CF_EFORMAT, "%s:%lld: bad %.5s value", path, (long long)line, keys[i]);
                goto fail;
            }
            if (i == 2) nmemb = x;
            else if (i == 3) nfile = x;
            else chunk = x;
        }
    }
    if (!dtype_match || nmemb != h->nmemb) {
        /* statistics of another column (re-created by another tool) */
        return cf__stats_alloc(s, h, def_chunk, path, err);
    }
    {
        /* The layout the file's CHUNK implies must be no finer than the
         * finest default one, than what this text could hold, or than a small
         * fixed amount: writes through this handle accumulate per chunk,
         * and a CHUNK of 1 row would make them hold one accumulator per
         * value written. */
        int64_t total = cf__stats_total(h, chunk);
        /* the finest CHUNK colfile chooses by default: a one-row column's */
        int64_t dtotal = cf__stats_total(h, cf__stats_chunk_rows_for(1, h->nmemb, h->dtype.width));
        int64_t bound = (int64_t)(len / CF__CHUNK_LINE_MIN);
        if (dtotal > bound) bound = dtotal;
        if (bound < CF__PARSE_FREE_ACCS) bound = CF__PARSE_FREE_ACCS;
        if (total < 0 || total > bound) {
            rc = CF_FAIL(err, CF_EFORMAT, "%s:5: CHUNK %lld needs more statistics than the file can hold",
                         path, (long long)chunk);
            goto fail;
        }
    }
    rc = cf__stats_alloc(s, h, chunk, path, err);
    if (rc) return rc;
    if (cf__c_numeric_enter(&loc)) {
        cf__stats_free(s);
        return CF_FAIL(err, CF_ENOMEM, "%s: cannot create the C locale", path);
    }
    have_loc = 1;
    for (int64_t b = 0; b < s->nfile; b++) s->valid[b] = CF__B_UNSEEN;

    {
        int64_t cur = -1;          /* blob whose chunk lines follow */
        int64_t cur_rows = 0, cur_chunks = 0, expect = 0;
        int tracked = 0;           /* cur is current: its records are kept */
        for (;;) {
            int more = cf__next_line(&p, end, &ls, &le);
            line++;
            int is_blob = 0, is_chunk = 0;
            if (more) {
                const char *q = ls;
                int dec = 1;
                while (q < le && cf__hex_digit(*q) >= 0) {
                    dec &= *q <= '9';
                    q++;
                }
                is_blob = q > ls && q < le && *q == ':';
                is_chunk = q > ls && dec && q < le && cf__is_blank(*q);
            }
            if (!more || is_blob) {
                /* close the previous blob */
                if (tracked) {
                    int ok = s->valid[cur] == CF__B_UNSEEN && expect == cur_chunks * nmemb;
                    s->valid[cur] = ok ? CF__B_GOOD : CF__B_BAD;
                    if (!ok) cf__blob_reset(s, cur, cls);
                }
                tracked = 0;
            }
            if (!more) break;
            if (is_blob) {
                const char *q = ls;
                uint64_t id = 0;
                int nd = 0;
                while (*q != ':') {
                    id = id * 16 + (uint64_t)cf__hex_digit(*q++);
                    if (++nd > 16) break;
                }
                uint64_t rows, sum;
                q++;
                cf__skip_blank(&q, le);
                int bad = nd > 16 || cf__lex_u64(&q, le, &rows) || rows > (uint64_t)INT64_MAX;
                if (!bad) {
                    cf__skip_blank(&q, le);
                    bad = q >= le || *q++ != ':';
                }
                if (!bad) {
                    cf__skip_blank(&q, le);
                    bad = cf__lex_u64(&q, le, &sum) || sum > UINT32_MAX;
                }
                if (!bad) {
                    cf__skip_blank(&q, le);
                    bad = q != le;
                }
                if (bad) {
                    rc = CF_FAIL(err, CF_EFORMAT, "%s:%lld: bad blob line (expected '<ID>: <rows> : <rawsum>')",
                                 path, (long long)line);
                    goto fail;
                }
                if (id >= (uint64_t)nfile) {
                    rc = CF_FAIL(err, CF_EFORMAT, "%s:%lld: blob %llX is not below NFILE %lld", path,
                                 (long long)line, (unsigned long long)id, (long long)nfile);
                    goto fail;
                }
                cur = (int64_t)id;
                cur_rows = (int64_t)rows;
                cur_chunks = cf__stats_chunks_of(cur_rows, chunk);
                expect = 0;
                tracked = 0;
                if (cur < h->nfile) {
                    unsigned char st = s->valid[cur];
                    if (st != CF__B_UNSEEN) {
                        /* recorded twice: trust neither */
                        if (st == CF__B_GOOD) cf__blob_reset(s, cur, cls);
                        s->valid[cur] = CF__B_BAD;
                    } else if (cur_rows == h->rows[cur] && sum == h->sums[cur]) {
                        tracked = 1;
                    } else {
                        s->valid[cur] = CF__B_STALE;
                    }
                }
                continue;
            }
            if (!is_chunk) continue;   /* a line of a later version */
            if (cur < 0) {
                rc = CF_FAIL(err, CF_EFORMAT, "%s:%lld: chunk line before any blob line", path, (long long)line);
                goto fail;
            }
            cf__chunk_rec r;
            const char *why = cf__parse_chunk_line(ls, le, cls, &r);
            if (why) {
                rc = CF_FAIL(err, CF_EFORMAT, "%s:%lld: %s", path, (long long)line, why);
                goto fail;
            }
            if (r.k >= cur_chunks || r.j >= nmemb) {
                rc = CF_FAIL(err, CF_EFORMAT, "%s:%lld: chunk %lld component %lld is outside blob %llX", path,
                             (long long)line, (long long)r.k, (long long)r.j, (unsigned long long)cur);
                goto fail;
            }
            if (!tracked) continue;
            if (r.k * nmemb + r.j != expect ||
                !cf__chunk_plausible(&r.a, cls, h->dtype.kind, cur_rows, chunk, r.k)) {
                /* out of order, repeated or impossible: the blob is not trusted */
                tracked = 0;
                s->valid[cur] = CF__B_BAD;
                cf__blob_reset(s, cur, cls);
                continue;
            }
            /* held as the lines come: memory follows the text, not the
             * rows the header claims */
            cf__acc *slot = cf__stats_chunk(s, cur, r.k);
            if (!slot) {
                tracked = 0;
                s->valid[cur] = CF__B_BAD;
                cf__blob_reset(s, cur, cls);
                continue;
            }
            slot[r.j] = r.a;
            expect++;
        }
    }
    for (int64_t b = 0; b < s->nfile; b++) s->valid[b] = s->valid[b] == CF__B_GOOD || h->rows[b] <= 0;
    cf__c_numeric_leave(&loc);
    return 0;

fail:
    if (have_loc) cf__c_numeric_leave(&loc);
    if (s->first_chunk) {
        cf__stats_reset(s, h, cls);
    } else {
        cf_error keep;
        if (err) keep = *err;
        if (cf__stats_alloc(s, h, def_chunk, path, err)) return CF_ENOMEM;
        if (err) *err = keep;
    }
    return rc;
}
