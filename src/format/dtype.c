/* dtype.c - dtype tokens: parsing them under each set of rules (with hints
 * for near misses), formatting them, and the public dtype calls.  Byte
 * swapping and value conversion are in dtype_convert.c.
 */
#include "dtype.h"

#include <stdio.h>
#include <string.h>

#include "error.h"

/* ------------------------------------------------------------------ */
/* Byte order                                                           */
/* ------------------------------------------------------------------ */

char cf__dtype_native_order(void)
{
#if defined(__BYTE_ORDER__) && defined(__ORDER_LITTLE_ENDIAN__) && \
    defined(__ORDER_BIG_ENDIAN__)
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    return '<';
#elif __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    return '>';
#else
#error "mixed-endian machines are not supported"
#endif
#else
    static const union { uint16_t word; unsigned char bytes[2]; } probe = { 1 };
    return probe.bytes[0] ? '<' : '>';
#endif
}

/* ------------------------------------------------------------------ */
/* Parsing and formatting                                               */
/* ------------------------------------------------------------------ */

/* A printable, bounded rendering of (part of) a token for messages. */
static void cf__repr(const char *s, size_t len, char *out, size_t cap)
{
    size_t o = 0, shown = 0;
    for (size_t i = 0; i < len && s[i]; i++) {
        unsigned char c = (unsigned char)s[i];
        if (shown == 40 || o + 8 >= cap) {
            memcpy(out + o, "...", 4);
            return;
        }
        if (c >= 0x20 && c < 0x7f && c != '\'' && c != '\\') {
            out[o++] = (char)c;
        } else {
            snprintf(out + o, cap - o, "\\x%02x", c);
            o += 4;
        }
        shown++;
    }
    out[o] = '\0';
}

static int cf__is_order(char c)
{
    return c == '<' || c == '>' || c == '|' || c == '=';
}

static int cf__is_letter(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static const char *cf__allowed_widths(char kind)
{
    switch (kind) {
    case 'i': case 'u': return "1, 2, 4 or 8";
    case 'f': return "2, 4 or 8";
    case 'c': return "8 or 16";
    case 'b': return "1";
    default: return "none";
    }
}

/* numpy's and C's type names, which newcomers try first, and the token
 * each means (names that differ between the two, such as "float", "int"
 * and "long", are left out). */
static const char *const cf__dtype_names[][2] = {
    { "float16", "f2" }, { "half", "f2" }, { "float32", "f4" }, { "single", "f4" },
    { "float64", "f8" }, { "double", "f8" }, { "int8", "i1" }, { "byte", "i1" },
    { "int16", "i2" }, { "short", "i2" }, { "int32", "i4" }, { "intc", "i4" },
    { "int64", "i8" }, { "longlong", "i8" }, { "uint8", "u1" }, { "ubyte", "u1" },
    { "uint16", "u2" }, { "ushort", "u2" }, { "uint32", "u4" }, { "uintc", "u4" },
    { "uint64", "u8" }, { "ulonglong", "u8" }, { "complex64", "c8" }, { "complex128", "c16" },
    { "bool", "b1" }, { "bool_", "b1" }, { "int8_t", "i1" }, { "int16_t", "i2" },
    { "int32_t", "i4" }, { "int64_t", "i8" }, { "uint8_t", "u1" }, { "uint16_t", "u2" },
    { "uint32_t", "u4" }, { "uint64_t", "u8" },
};

/* The token a rejected dtype text probably meant ("float64" -> "f8",
 * "<int32" -> "<i4", "np.double" -> "f8"), written into out, or 0. */
static int cf__dtype_hint(const char *text, char *out, size_t cap)
{
    char order[2] = "";
    if (cf__is_order(*text)) {
        order[0] = *text;
        text++;
    }
    if (strncmp(text, "np.", 3) == 0) text += 3;
    else if (strncmp(text, "numpy.", 6) == 0) text += 6;
    char low[16];
    size_t n = strlen(text);
    if (n == 0 || n >= sizeof low) return 0;
    for (size_t i = 0; i <= n; i++) low[i] = (char)(text[i] >= 'A' && text[i] <= 'Z' ? text[i] + 32 : text[i]);
    for (size_t i = 0; i < sizeof cf__dtype_names / sizeof cf__dtype_names[0]; i++)
        if (strcmp(low, cf__dtype_names[i][0]) == 0) {
            snprintf(out, cap, "%s%s", order, cf__dtype_names[i][1]);
            return 1;
        }
    return 0;
}

/* The error of a rejected dtype: what is wrong, and the token meant when
 * the text is a type name (found only here, off the parsing path). */
static int cf__dtype_fail(cf_error *err, const char *pre, const char *sep, const char *tok, const char *why,
                          const char *text)
{
    char meant[16];
    if (cf__dtype_hint(text, meant, sizeof meant))
        return CF_FAIL(err, CF_EDTYPE, "%s%sunreasonable dtype '%s': %s; did you mean '%s'?", pre, sep, tok, why,
                       meant);
    return CF_FAIL(err, CF_EDTYPE, "%s%sunreasonable dtype '%s': %s", pre, sep, tok, why);
}

int cf__dtype_parse(const char *text, int rules, cf__dtype *out,
                    const char *context, cf_error *err)
{
    const char *pre = context ? context : "", *sep = context ? ": " : "";
    char tok[64], part[160];

    if (!text) return CF_FAIL(err, CF_EDTYPE, "%s%smissing dtype (NULL)", pre, sep);
    cf__repr(text, SIZE_MAX, tok, sizeof tok);
#define CF__BAD(...) (snprintf(part, sizeof part, __VA_ARGS__), cf__dtype_fail(err, pre, sep, tok, part, text))

    const char *p = text;
    if (*p == '\0') return CF__BAD("empty");
    char order = cf__dtype_native_order();
    if (cf__is_order(*p)) {
        if (*p == '<' || *p == '>') order = *p;
        p++;
    } else if (rules == CF__DTYPE_HEADER) {
        return CF__BAD("no byte order (one of < > | =) before the kind");
    }
    char kind = *p;
    char kind_repr[16];
    cf__repr(p, 1, kind_repr, sizeof kind_repr);
    if (kind == '\0') return CF__BAD("no kind after the byte order");
    p++;

    /* numpy's bool spelling: '?' alone, no width. */
    if (kind == '?' && rules != CF__DTYPE_HEADER) {
        if (*p) return CF__BAD("'?' (bool) takes no width");
        out->order = order;
        out->kind = 'b';
        out->width = 1;
        return 0;
    }
    if (rules == CF__DTYPE_ATTR) {
        if (!cf__is_letter(kind)) return CF__BAD("'%s' is not a kind letter", kind_repr);
    } else {
        if (kind == 'a' && rules == CF__DTYPE_USER) kind = 'S';
        if (!strchr("iufcbS", kind) || !cf__is_letter(kind)) {
            if (kind != '\0' && strchr("UVMmOaq?ldgeFDGBhHILQpPnN", kind))
                return CF__BAD("unsupported kind '%s' (colfile stores i u f c b S)", kind_repr);
            return CF__BAD("unknown kind '%s'", kind_repr);
        }
    }

    /* The width: one or more decimal digits, nothing after them. */
    const char *digits = p;
    if (*p == '\0') return CF__BAD("no width after kind '%s'", kind_repr);
    int64_t width = 0;
    int too_large = 0;
    for (; *p; p++) {
        if (*p < '0' || *p > '9') {
            char wrepr[48];
            cf__repr(digits, SIZE_MAX, wrepr, sizeof wrepr);
            return CF__BAD("width '%s' is not a decimal number", wrepr);
        }
        width = width * 10 + (*p - '0');
        if (width > INT32_MAX) {
            too_large = 1;
            width = INT32_MAX;
        }
    }
    if (too_large) {
        char wrepr[48];
        cf__repr(digits, SIZE_MAX, wrepr, sizeof wrepr);
        return CF__BAD("width %s is too large (at most 2147483647)", wrepr);
    }
    if (width == 0) return CF__BAD("width must be at least 1");
    if (rules == CF__DTYPE_HEADER && kind == 'S' && width > CF__COLUMN_S_MAX)
        return CF__BAD("string width %lld is above %d (bigfile 0.1.52 cannot read it)", (long long)width,
                       CF__COLUMN_S_MAX);
    if (rules != CF__DTYPE_ATTR && kind != 'S' && cf__numeric_index(kind, width) < 0)
        return CF__BAD("kind '%s' has no width %lld (allowed: %s)", kind_repr,
                       (long long)width, cf__allowed_widths(kind));
#undef CF__BAD
    out->order = order;
    out->kind = kind;
    out->width = width;
    return 0;
}

void cf__dtype_format(const cf__dtype *d, char out[CF_DTYPE_MAX])
{
    snprintf(out, CF_DTYPE_MAX, "%c%c%lld", d->order, d->kind, (long long)d->width);
}

/* ------------------------------------------------------------------ */
/* Public API                                                           */
/* ------------------------------------------------------------------ */

CF_API int cf_dtype_normalize(const char *dtype, char out[CF_DTYPE_MAX], cf_error *err)
{
    cf__dtype d;
    int rc = cf__dtype_parse(dtype, CF__DTYPE_USER, &d, NULL, err);
    if (rc) return rc;
    cf__dtype_format(&d, out);
    return 0;
}

CF_API int cf_dtype_itemsize(const char *dtype, int64_t *itemsize, cf_error *err)
{
    if (!itemsize) return CF_FAIL(err, CF_EARG, "cf_dtype_itemsize: NULL itemsize");
    cf__dtype d;
    int rc = cf__dtype_parse(dtype, CF__DTYPE_USER, &d, NULL, err);
    if (rc) return rc;
    *itemsize = d.width;
    return 0;
}

CF_API int cf_dtype_can_cast(const char *from, const char *to)
{
    cf__dtype a, b;
    if (cf__dtype_parse(from, CF__DTYPE_USER, &a, NULL, NULL) ||
        cf__dtype_parse(to, CF__DTYPE_USER, &b, NULL, NULL))
        return 0;
    return cf__dtype_can_convert(&a, &b);
}

CF_API int cf_dtype_convert(void *dst, int64_t dst_stride, const char *to,
                            const void *src, int64_t src_stride, const char *from,
                            int64_t count, cf_error *err)
{
    cf__dtype a, b;
    int rc;
    if ((rc = cf__dtype_parse(from, CF__DTYPE_USER, &a, "source dtype", err))) return rc;
    if ((rc = cf__dtype_parse(to, CF__DTYPE_USER, &b, "destination dtype", err))) return rc;
    if (!cf__dtype_can_convert(&a, &b)) {
        char fa[CF_DTYPE_MAX], fb[CF_DTYPE_MAX];
        cf__dtype_format(&a, fa);
        cf__dtype_format(&b, fb);
        return CF_FAIL(err, CF_ECAST,
                       "cannot convert '%s' to '%s': numbers and byte strings (S) do not "
                       "convert into each other", fa, fb);
    }
    if (count < 0)
        return CF_FAIL(err, CF_EARG, "cf_dtype_convert: negative count %lld", (long long)count);
    if (count == 0) return 0;
    if (!dst || !src)
        return CF_FAIL(err, CF_EARG, "cf_dtype_convert: NULL %s buffer", dst ? "source" : "destination");
#if PTRDIFF_MAX < INT64_MAX
    if (dst_stride > PTRDIFF_MAX || dst_stride < PTRDIFF_MIN ||
        src_stride > PTRDIFF_MAX || src_stride < PTRDIFF_MIN || (uint64_t)count > SIZE_MAX)
        return CF_FAIL(err, CF_EARG, "cf_dtype_convert: stride or count too large for this machine");
#endif
    cf__convert(dst, (ptrdiff_t)dst_stride, &b, src, (ptrdiff_t)src_stride, &a, (size_t)count);
    return 0;
}
