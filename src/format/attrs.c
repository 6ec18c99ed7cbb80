/* attrs.c - attribute sets and the attr-v2 / legacy attr file formats.
 *
 * A set is a sorted array of attributes.  Parsers collect what they read in
 * a pending list first and merge it in one pass at the end, so a file with
 * many lines costs O(n log n) and a failed parse leaves the set unchanged.
 * The attr-v2 writer reproduces bigfile 0.1.52 byte for byte, including the
 * `#HUMANE [ ... ]` comment (format notes, section 6).
 */
#include "attrs.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "hex.h"

/* Above this many data bytes the comment says "... (Too Long) ". */
#define CF__HUMANE_MAX_BYTES 128

/* ------------------------------------------------------------------ */
/* the set                                                              */
/* ------------------------------------------------------------------ */

void cf__attrset_init(cf__attrset *s)
{
    s->items = NULL;
    s->count = 0;
    s->capacity = 0;
}

static void attr_release(cf__attr *a)
{
    free(a->name);
    free(a->data);
    a->name = NULL;
    a->data = NULL;
}

void cf__attrset_free(cf__attrset *s)
{
    if (!s) return;
    for (size_t i = 0; i < s->count; i++) attr_release(&s->items[i]);
    free(s->items);
    cf__attrset_init(s);
}

/* The index of the first item whose name is >= name; *found says equal. */
static size_t lower_bound(const cf__attrset *s, const char *name, int *found)
{
    size_t lo = 0, hi = s->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(s->items[mid].name, name) < 0) lo = mid + 1;
        else hi = mid;
    }
    *found = lo < s->count && strcmp(s->items[lo].name, name) == 0;
    return lo;
}

cf__attr *cf__attrset_find(const cf__attrset *s, const char *name)
{
    int found;
    size_t i = lower_bound(s, name, &found);
    return found ? &s->items[i] : NULL;
}

static int reserve(cf__attrset *s, size_t need)
{
    if (need <= s->capacity) return 0;
    size_t cap = s->capacity ? s->capacity : 8;
    while (cap < need) {
        if (cap > SIZE_MAX / 2 / sizeof(cf__attr)) return CF_ENOMEM;
        cap *= 2;
    }
    cf__attr *items = realloc(s->items, cap * sizeof *items);
    if (!items) return CF_ENOMEM;
    s->items = items;
    s->capacity = cap;
    return 0;
}

/* 1 if name is usable: non-empty, no blank, LF or CR (NUL ends it). */
static int name_valid(const char *name)
{
    return name[0] != '\0' && strpbrk(name, " \t\n\r") == NULL;
}

/* nmemb * width as a byte count, or -1 if it does not fit a size_t. */
static int64_t data_bytes(int64_t nmemb, int64_t width)
{
    if (nmemb < 0 || width <= 0) return -1;
    if (nmemb > INT64_MAX / width) return -1;
    if ((uint64_t)(nmemb * width) > (uint64_t)SIZE_MAX) return -1;
    return nmemb * width;
}

int cf__attrset_set(cf__attrset *s, const char *name, const char *dtype,
                    int64_t nmemb, const void *data, cf_error *err)
{
    if (!name || !name_valid(name)) {
        /* Attribute names are data, not paths: only what would break an
         * attr-v2 line is refused.  The name is shown with \xNN escapes. */
        char shown[4 * 40 + 4];
        size_t k = 0, at = name ? strcspn(name, " \t\n\r") : 0;
        for (size_t i = 0; name && name[i] && i < 40; i++) {
            unsigned char u = (unsigned char)name[i];
            if (u < 0x20 || u == 0x7f) k += (size_t)snprintf(shown + k, 5, "\\x%02X", u);
            else shown[k++] = (char)u;
        }
        shown[k] = '\0';
        if (!name || !name[0])
            return CF_FAIL(err, CF_ENAME, "attribute name `%s' is empty: an attribute name must be non-empty "
                           "and hold no space, tab, newline or CR", name ? "" : "(null)");
        const char *what = name[at] == ' ' ? "a space" : name[at] == '\t' ? "a tab"
                         : name[at] == '\n' ? "a newline" : "a carriage return";
        return CF_FAIL(err, CF_ENAME, "attribute name `%s' contains %s at byte %zu: an attribute name must "
                       "be non-empty and hold no space, tab, newline or CR", shown, what, at);
    }
    cf__dtype t;
    char context[96];
    snprintf(context, sizeof context, "attribute `%s'", name);
    int rc = cf__dtype_parse(dtype ? dtype : "", CF__DTYPE_ATTR, &t, context, err);
    if (rc) return rc;
    int64_t bytes = data_bytes(nmemb, t.width);
    if (bytes < 0)
        return CF_FAIL(err, CF_EARG, "attribute `%s': bad nmemb %" PRId64 " for dtype %s",
                       name, nmemb, dtype);
    if (bytes > 0 && !data)
        return CF_FAIL(err, CF_EARG, "attribute `%s': no data", name);

    /* copy first: data may point into the attribute being replaced */
    unsigned char *copy = NULL;
    if (bytes > 0) {
        copy = malloc((size_t)bytes);
        if (!copy) return CF_FAIL(err, CF_ENOMEM, "attribute `%s': out of memory", name);
        memcpy(copy, data, (size_t)bytes);
    }
    int found;
    size_t i = lower_bound(s, name, &found);
    if (found) {
        cf__attr *a = &s->items[i];
        free(a->data);
        a->data = copy;
        a->type = t;
        a->nmemb = nmemb;
        cf__dtype_format(&t, a->dtype);
        return 0;
    }
    size_t nlen = strlen(name);
    char *ncopy = malloc(nlen + 1);
    if (!ncopy || reserve(s, s->count + 1) != 0) {
        free(ncopy);
        free(copy);
        return CF_FAIL(err, CF_ENOMEM, "attribute `%s': out of memory", name);
    }
    memcpy(ncopy, name, nlen + 1);
    memmove(&s->items[i + 1], &s->items[i], (s->count - i) * sizeof *s->items);
    cf__attr *a = &s->items[i];
    a->name = ncopy;
    a->type = t;
    cf__dtype_format(&t, a->dtype);
    a->nmemb = nmemb;
    a->data = copy;
    s->count++;
    return 0;
}

int cf__attrset_remove(cf__attrset *s, const char *name)
{
    int found;
    size_t i = lower_bound(s, name, &found);
    if (!found) return 0;
    attr_release(&s->items[i]);
    memmove(&s->items[i], &s->items[i + 1], (s->count - i - 1) * sizeof *s->items);
    s->count--;
    return 1;
}

/* ------------------------------------------------------------------ */
/* pending attributes: what a parser has read, merged in one pass        */
/* ------------------------------------------------------------------ */

typedef struct pending_attr {
    cf__attr a;
    size_t seq; /* position in the file: later wins */
} pending_attr;

typedef struct pending_list {
    pending_attr *items;
    size_t count, capacity;
} pending_list;

static void pending_free(pending_list *p)
{
    for (size_t i = 0; i < p->count; i++) attr_release(&p->items[i].a);
    free(p->items);
    p->items = NULL;
    p->count = p->capacity = 0;
}

/* Append, taking ownership of name and data (freed here on failure). */
static int pending_push(pending_list *p, char *name, const cf__dtype *t, int64_t nmemb,
                        unsigned char *data)
{
    if (p->count == p->capacity) {
        size_t cap = p->capacity ? p->capacity * 2 : 16;
        pending_attr *items = NULL;
        if (cap <= SIZE_MAX / sizeof *items) items = realloc(p->items, cap * sizeof *items);
        if (!items) {
            free(name);
            free(data);
            return CF_ENOMEM;
        }
        p->items = items;
        p->capacity = cap;
    }
    pending_attr *e = &p->items[p->count];
    e->a.name = name;
    e->a.type = *t;
    cf__dtype_format(t, e->a.dtype);
    e->a.nmemb = nmemb;
    e->a.data = data;
    e->seq = p->count;
    p->count++;
    return 0;
}

static int pending_cmp(const void *x, const void *y)
{
    const pending_attr *a = x, *b = y;
    int c = strcmp(a->a.name, b->a.name);
    if (c) return c;
    return a->seq < b->seq ? -1 : a->seq > b->seq;
}

/* Merge p into s (p's entries replace equal names; among equal names in p
 * the last one wins).  p is emptied.  On CF_ENOMEM s is unchanged. */
static int pending_merge(cf__attrset *s, pending_list *p)
{
    if (p->count == 0) return 0;
    qsort(p->items, p->count, sizeof *p->items, pending_cmp);
    /* drop all but the last of each run of equal names */
    size_t k = 0;
    for (size_t i = 0; i < p->count; i++) {
        if (i + 1 < p->count && strcmp(p->items[i].a.name, p->items[i + 1].a.name) == 0) {
            attr_release(&p->items[i].a);
            continue;
        }
        p->items[k++] = p->items[i];
    }
    p->count = k;

    if (s->count > SIZE_MAX / sizeof(cf__attr) - k) return CF_ENOMEM;
    size_t cap = s->count + k;
    cf__attr *out = malloc(cap * sizeof *out);
    if (!out) return CF_ENOMEM;
    size_t i = 0, j = 0, n = 0;
    while (i < s->count || j < k) {
        int c;
        if (i == s->count) c = 1;
        else if (j == k) c = -1;
        else c = strcmp(s->items[i].name, p->items[j].a.name);
        if (c < 0) {
            out[n++] = s->items[i++];
        } else {
            if (c == 0) attr_release(&s->items[i++]);
            out[n++] = p->items[j++].a;
        }
    }
    free(s->items);
    s->items = out;
    s->count = n;
    s->capacity = cap;
    free(p->items);
    p->items = NULL;
    p->count = p->capacity = 0;
    return 0;
}

/* The end of a parse: after a failure rc, drop what was parsed; else merge
 * it into s.  Returns rc or the merge's failure. */
static int pending_finish(cf__attrset *s, pending_list *p, int rc, const char *path, cf_error *err)
{
    if (rc == 0 && pending_merge(s, p) != 0) rc = CF_FAIL(err, CF_ENOMEM, "%s: out of memory", path);
    if (rc) pending_free(p);
    return rc;
}

/* ------------------------------------------------------------------ */
/* attr-v2 parser                                                       */
/* ------------------------------------------------------------------ */

static int is_blank(char c) { return c == ' ' || c == '\t'; }

/* The next blank-separated token of [*pos, end): sets *tok and *tlen and
 * returns 1, or returns 0 at the end of the line. */
static int next_token(const char **pos, const char *end, const char **tok, size_t *tlen)
{
    const char *p = *pos;
    while (p < end && is_blank(*p)) p++;
    if (p == end) {
        *pos = p;
        return 0;
    }
    const char *q = p;
    while (q < end && !is_blank(*q)) q++;
    *tok = p;
    *tlen = (size_t)(q - p);
    *pos = q;
    return 1;
}

/* Tokens from hostile files are quoted in messages: at most 40 bytes. */
#define TOKEN_SHOWN(len) ((int)((len) > 40 ? 40 : (len)))

/* Parse one non-blank line into p.  Line text is [line, end), CR stripped. */
static int parse_v2_line(pending_list *p, const char *line, const char *end,
                         const char *path, size_t lineno, cf_error *err)
{
    const char *pos = line, *name, *dtok, *ntok, *hex = NULL;
    size_t name_len, dlen, nlen, hexlen = 0;

    if (!next_token(&pos, end, &name, &name_len))
        return 0; /* blank line */
    if (!next_token(&pos, end, &dtok, &dlen))
        return CF_FAIL(err, CF_EFORMAT, "%s:%zu: missing dtype", path, lineno);
    if (!next_token(&pos, end, &ntok, &nlen))
        return CF_FAIL(err, CF_EFORMAT, "%s:%zu: missing nmemb", path, lineno);
    if (next_token(&pos, end, &hex, &hexlen) && hex[0] == '#') {
        hex = NULL; /* nmemb 0 writes an empty hex field: the comment follows */
        hexlen = 0;
    }

    if (memchr(name, '\0', name_len) || memchr(name, '\r', name_len))
        return CF_FAIL(err, CF_EFORMAT, "%s:%zu: bad attribute name `%.*s'", path, lineno,
                       TOKEN_SHOWN(name_len), name);

    char dtext[CF_DTYPE_MAX];
    cf__dtype t;
    cf_error derr;
    if (dlen >= sizeof dtext)
        return CF_FAIL(err, CF_EFORMAT, "%s:%zu: bad dtype: `%.*s' is too long", path, lineno,
                       TOKEN_SHOWN(dlen), dtok);
    if (memchr(dtok, '\0', dlen))
        return CF_FAIL(err, CF_EFORMAT, "%s:%zu: bad dtype: NUL byte in it", path, lineno);
    memcpy(dtext, dtok, dlen);
    dtext[dlen] = '\0';
    if (cf__dtype_parse(dtext, CF__DTYPE_ATTR, &t, NULL, &derr) != 0)
        return CF_FAIL(err, CF_EFORMAT, "%s:%zu: bad dtype: %s", path, lineno, derr.message);

    if (ntok[0] == '-')
        return CF_FAIL(err, CF_EFORMAT, "%s:%zu: negative nmemb `%.*s'", path, lineno,
                       TOKEN_SHOWN(nlen), ntok);
    int64_t nmemb = 0;
    for (size_t i = 0; i < nlen; i++) {
        unsigned char c = (unsigned char)ntok[i];
        if (c < '0' || c > '9' || nmemb > (INT64_MAX - 9) / 10)
            return CF_FAIL(err, CF_EFORMAT, "%s:%zu: bad nmemb `%.*s'", path, lineno,
                           TOKEN_SHOWN(nlen), ntok);
        nmemb = nmemb * 10 + (c - '0');
    }

    /* hexlen == 2 * nmemb * width, without overflow */
    size_t nbytes = hexlen / 2;
    if (hexlen % 2 != 0 || nbytes % (uint64_t)t.width != 0 ||
        (uint64_t)(nbytes / (uint64_t)t.width) != (uint64_t)nmemb) {
        if (hexlen == 0)
            return CF_FAIL(err, CF_EFORMAT, "%s:%zu: missing data for nmemb %" PRId64, path,
                           lineno, nmemb);
        return CF_FAIL(err, CF_EFORMAT,
                       "%s:%zu: %zu hex digits do not hold nmemb %" PRId64 " x %" PRId64
                       " bytes", path, lineno, hexlen, nmemb, t.width);
    }

    unsigned char *data = NULL;
    if (nbytes > 0) {
        data = malloc(nbytes);
        if (!data) return CF_FAIL(err, CF_ENOMEM, "%s:%zu: out of memory", path, lineno);
        for (size_t i = 0; i < nbytes; i++) {
            int hi = cf__hex_digit((char)hex[2 * i]);
            int lo = cf__hex_digit((char)hex[2 * i + 1]);
            if (hi < 0 || lo < 0) {
                free(data);
                return CF_FAIL(err, CF_EFORMAT, "%s:%zu: bad hex digit in data of `%.*s'",
                               path, lineno, TOKEN_SHOWN(name_len), name);
            }
            data[i] = (unsigned char)(hi << 4 | lo);
        }
    }
    char *ncopy = malloc(name_len + 1);
    if (!ncopy) {
        free(data);
        return CF_FAIL(err, CF_ENOMEM, "%s:%zu: out of memory", path, lineno);
    }
    memcpy(ncopy, name, name_len);
    ncopy[name_len] = '\0';
    if (pending_push(p, ncopy, &t, nmemb, data) != 0)
        return CF_FAIL(err, CF_ENOMEM, "%s:%zu: out of memory", path, lineno);
    return 0;
}

int cf__attrset_parse_v2(cf__attrset *s, const char *text, size_t len,
                         const char *path, cf_error *err)
{
    pending_list p = {NULL, 0, 0};
    size_t lineno = 0, pos = 0;
    int rc = 0;
    if (!path) path = "attr-v2";
    if (!text) len = 0;

    while (pos < len) {
        const char *line = text + pos;
        const char *nl = memchr(line, '\n', len - pos);
        const char *end = nl ? nl : text + len;
        pos = nl ? (size_t)(nl - text) + 1 : len;
        lineno++;
        while (end > line && end[-1] == '\r') end--;
        rc = parse_v2_line(&p, line, end, path, lineno, err);
        if (rc) break;
    }
    return pending_finish(s, &p, rc, path, err);
}

/* ------------------------------------------------------------------ */
/* legacy v1 parser                                                     */
/* ------------------------------------------------------------------ */

static int32_t get_le32(const unsigned char *b)
{
    uint32_t u = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
    return u > INT32_MAX ? (int32_t)(u - UINT32_C(0x80000000)) - INT32_MAX - 1 : (int32_t)u;
}

static void put_le32(unsigned char *b, uint32_t u)
{
    b[0] = (unsigned char)u;
    b[1] = (unsigned char)(u >> 8);
    b[2] = (unsigned char)(u >> 16);
    b[3] = (unsigned char)(u >> 24);
}

/* bigfile reads v1 dtypes like a header dtype: explicit byte order, kind
 * S b i f u c, width 1..16.  So kind `a` never appears in a v1 file. */
static int v1_dtype_valid(const char *token, const cf__dtype *t)
{
    return (token[0] == '<' || token[0] == '>' || token[0] == '|' || token[0] == '=') &&
           strchr("Sbifuc", t->kind) != NULL && t->kind != '\0' &&
           t->width >= 1 && t->width <= 16;
}

#define V1_RECORD_HEAD 16 /* int32 nmemb, int32 name length, char dtype[8] */

int cf__attrset_parse_v1(cf__attrset *s, const unsigned char *bytes, size_t len,
                         const char *path, cf_error *err)
{
    pending_list p = {NULL, 0, 0};
    size_t off = 0, rec = 0;
    int rc = 0;
    if (!path) path = "attr";
    if (!bytes) len = 0;

    while (off < len) {
        rec++;
        if (len - off < V1_RECORD_HEAD) {
            rc = CF_FAIL(err, CF_EFORMAT, "%s: record %zu: truncated record header", path, rec);
            goto done;
        }
        const unsigned char *r = bytes + off;
        int32_t nmemb = get_le32(r), name_len = get_le32(r + 4);
        char token[9];
        memcpy(token, r + 8, 8);
        token[8] = '\0';
        off += V1_RECORD_HEAD;
        if (nmemb < 0) {
            rc = CF_FAIL(err, CF_EFORMAT, "%s: record %zu: negative nmemb %" PRId32, path, rec, nmemb);
            goto done;
        }
        if (name_len <= 0) {
            rc = CF_FAIL(err, CF_EFORMAT, "%s: record %zu: bad name length %" PRId32, path, rec,
                         name_len);
            goto done;
        }
        cf__dtype t;
        cf_error derr;
        if (cf__dtype_parse(token, CF__DTYPE_ATTR, &t, NULL, &derr) != 0 || !v1_dtype_valid(token, &t)) {
            char shown[40];
            size_t k = 0;
            for (const char *c = token; *c && k + 5 < sizeof shown; c++) {
                unsigned char u = (unsigned char)*c;
                if (u >= 0x20 && u < 0x7F) shown[k++] = (char)u;
                else k += (size_t)snprintf(shown + k, sizeof shown - k, "\\x%02X", u);
            }
            shown[k] = '\0';
            rc = CF_FAIL(err, CF_EFORMAT, "%s: record %zu: bad dtype `%s'", path, rec, shown);
            goto done;
        }
        uint64_t nbytes = (uint64_t)nmemb * (uint64_t)t.width; /* < 2^35 */
        if ((uint64_t)name_len > len - off) {
            rc = CF_FAIL(err, CF_EFORMAT, "%s: record %zu: truncated name", path, rec);
            goto done;
        }
        const unsigned char *name = bytes + off;
        off += (size_t)name_len;
        if (nbytes > (uint64_t)(len - off)) {
            rc = CF_FAIL(err, CF_EFORMAT, "%s: record %zu: truncated data", path, rec);
            goto done;
        }
        char *ncopy = malloc((size_t)name_len + 1);
        unsigned char *data = nbytes ? malloc((size_t)nbytes) : NULL;
        if (!ncopy || (nbytes && !data)) {
            free(ncopy);
            free(data);
            rc = CF_FAIL(err, CF_ENOMEM, "%s: record %zu: out of memory", path, rec);
            goto done;
        }
        memcpy(ncopy, name, (size_t)name_len);
        ncopy[name_len] = '\0';
        if (nbytes) memcpy(data, bytes + off, (size_t)nbytes);
        off += (size_t)nbytes;
        if (strlen(ncopy) != (size_t)name_len || !name_valid(ncopy)) {
            rc = CF_FAIL(err, CF_EFORMAT, "%s: record %zu: bad attribute name", path, rec);
            free(ncopy);
            free(data);
            goto done;
        }
        if (pending_push(&p, ncopy, &t, nmemb, data) != 0) {
            rc = CF_FAIL(err, CF_ENOMEM, "%s: record %zu: out of memory", path, rec);
            goto done;
        }
    }
done:
    return pending_finish(s, &p, rc, path, err);
}

/* ------------------------------------------------------------------ */
/* output buffer                                                        */
/* ------------------------------------------------------------------ */

typedef struct outbuf {
    char *p;
    size_t len, cap;
    int failed;
} outbuf;

static int out_reserve(outbuf *b, size_t extra)
{
    if (b->failed) return -1;
    if (extra > SIZE_MAX - 1 - b->len) {
        b->failed = 1;
        return -1;
    }
    size_t need = b->len + extra + 1; /* keep room for the final NUL */
    if (need <= b->cap) return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < need) cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    char *np = realloc(b->p, cap);
    if (!np) {
        b->failed = 1;
        return -1;
    }
    b->p = np;
    b->cap = cap;
    return 0;
}

static void out_mem(outbuf *b, const void *m, size_t n)
{
    if (n == 0 || out_reserve(b, n) != 0) return;
    memcpy(b->p + b->len, m, n);
    b->len += n;
}

static void out_str(outbuf *b, const char *s) { out_mem(b, s, strlen(s)); }

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void out_printf(outbuf *b, const char *fmt, ...)
{
    char small[128];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->failed = 1;
        return;
    }
    if ((size_t)n < sizeof small) {
        out_mem(b, small, (size_t)n);
        return;
    }
    if (out_reserve(b, (size_t)n) != 0) return;
    va_start(ap, fmt);
    vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

/* ------------------------------------------------------------------ */
/* attr-v2 writer                                                       */
/* ------------------------------------------------------------------ */

/* One element in machine order: bigfile reverses the whole element when
 * the attribute's order is not the machine's (so a big-endian complex
 * shows its parts exchanged) and then prints the native value. */
static void native_element(const cf__dtype *t, const unsigned char *src, unsigned char out[16])
{
    size_t w = (size_t)t->width;
    if (t->order == cf__dtype_native_order()) {
        memcpy(out, src, w);
    } else {
        for (size_t i = 0; i < w; i++) out[i] = src[w - 1 - i];
    }
}

static void humane_element(outbuf *b, const cf__dtype *t, const unsigned char *src)
{
    unsigned char v[16];
    char k = t->kind;
    int64_t w = t->width;

    if (k == 'b' && w == 1) {
        /* bigfile prints the byte as a (signed on x86) char */
        out_printf(b, "%d", (int)(signed char)src[0]);
        return;
    }
    if ((k == 'i' || k == 'u' || k == 'f') && (w == 4 || w == 8)) {
        native_element(t, src, v);
        if (k == 'i' && w == 4) { int32_t x; memcpy(&x, v, 4); out_printf(b, "%" PRId32, x); }
        else if (k == 'i') { int64_t x; memcpy(&x, v, 8); out_printf(b, "%" PRId64, x); }
        else if (k == 'u' && w == 4) { uint32_t x; memcpy(&x, v, 4); out_printf(b, "%" PRIu32, x); }
        else if (k == 'u') { uint64_t x; memcpy(&x, v, 8); out_printf(b, "%" PRIu64, x); }
        else if (w == 4) { float x; memcpy(&x, v, 4); out_printf(b, "%g", (double)x); }
        else { double x; memcpy(&x, v, 8); out_printf(b, "%g", x); }
        return;
    }
    if (k == 'c' && (w == 8 || w == 16)) {
        native_element(t, src, v);
        if (w == 8) {
            float re, im;
            memcpy(&re, v, 4);
            memcpy(&im, v + 4, 4);
            out_printf(b, "%g+%gI", (double)re, (double)im);
        } else {
            double re, im;
            memcpy(&re, v, 8);
            memcpy(&im, v + 8, 8);
            out_printf(b, "%g+%gI", re, im);
        }
        return;
    }
    /* anything else: a placeholder naming the machine-order dtype */
    cf__dtype native = *t;
    char tok[CF_DTYPE_MAX];
    native.order = cf__dtype_native_order();
    cf__dtype_format(&native, tok);
    out_printf(b, "<%s>", tok);
}

static void humane_text(outbuf *b, const cf__attr *a)
{
    const cf__dtype *t = &a->type;
    if (a->nmemb > CF__HUMANE_MAX_BYTES / t->width) {
        out_str(b, "... (Too Long) ");
        return;
    }
    if (t->kind == 'a' || (t->kind == 'S' && t->width == 1)) {
        /* text: one byte per element (bigfile reads data[j] even for
         * wider `a`), up to a NUL; a newline becomes "..." and ends it */
        for (int64_t j = 0; j < a->nmemb; j++) {
            unsigned char c = a->data[j];
            if (c == '\n') {
                out_str(b, "...");
                break;
            }
            if (c == '\0') break;
            out_mem(b, &c, 1);
        }
        return;
    }
    for (int64_t j = 0; j < a->nmemb; j++) {
        if (j) out_mem(b, " ", 1);
        humane_element(b, t, a->data + j * t->width);
    }
}

static void format_v2_line(outbuf *b, const cf__attr *a)
{
    static const char digits[] = "0123456789ABCDEF";
    size_t nbytes = (size_t)a->nmemb * (size_t)a->type.width;

    out_printf(b, "%s %s %" PRId64 " ", a->name, a->dtype, a->nmemb);
    if (nbytes > (SIZE_MAX - 2) / 2) {
        b->failed = 1;
        return;
    }
    if (out_reserve(b, 2 * nbytes) != 0) return;
    char *h = b->p + b->len;
    for (size_t i = 0; i < nbytes; i++) {
        h[2 * i] = digits[a->data[i] >> 4];
        h[2 * i + 1] = digits[a->data[i] & 15];
    }
    b->len += 2 * nbytes;
    out_str(b, " #HUMANE [ ");
    humane_text(b, a);
    out_str(b, " ]\n");
}

int cf__attrset_format_v2(const cf__attrset *s, int (*keep)(const cf__attr *),
                          char **text, size_t *len, cf_error *err)
{
    outbuf b = {NULL, 0, 0, 0};
    out_reserve(&b, 0);
    for (size_t i = 0; i < s->count; i++)
        if (!keep || keep(&s->items[i])) format_v2_line(&b, &s->items[i]);
    if (b.failed) {
        free(b.p);
        return CF_FAIL(err, CF_ENOMEM, "attr-v2: out of memory formatting %zu attributes",
                       s->count);
    }
    b.p[b.len] = '\0';
    *text = b.p;
    *len = b.len;
    return 0;
}

/* ------------------------------------------------------------------ */
/* legacy v1 writer                                                     */
/* ------------------------------------------------------------------ */

int cf__attrset_format_v1(const cf__attrset *s, int (*keep)(const cf__attr *),
                          unsigned char **bytes, size_t *len, cf_error *err)
{
    outbuf b = {NULL, 0, 0, 0};
    out_reserve(&b, 0);
    for (size_t i = 0; i < s->count; i++) {
        const cf__attr *a = &s->items[i];
        if (keep && !keep(a)) continue;
        size_t tlen = strlen(a->dtype), nlen = strlen(a->name);
        if (!v1_dtype_valid(a->dtype, &a->type) || tlen > 8) {
            free(b.p);
            return CF_FAIL(err, CF_EDTYPE,
                           "attribute `%s': dtype %s cannot be stored in a v1 attr file",
                           a->name, a->dtype);
        }
        if (a->nmemb > INT32_MAX || nlen > INT32_MAX) {
            free(b.p);
            return CF_FAIL(err, CF_EARG, "attribute `%s' is too large for a v1 attr file",
                           a->name);
        }
        unsigned char head[V1_RECORD_HEAD];
        put_le32(head, (uint32_t)a->nmemb);
        put_le32(head + 4, (uint32_t)nlen);
        memset(head + 8, 0, 8);
        memcpy(head + 8, a->dtype, tlen);
        out_mem(&b, head, sizeof head);
        out_mem(&b, a->name, nlen);
        out_mem(&b, a->data, (size_t)a->nmemb * (size_t)a->type.width);
    }
    if (b.failed) {
        free(b.p);
        return CF_FAIL(err, CF_ENOMEM, "attr: out of memory formatting %zu attributes", s->count);
    }
    *bytes = (unsigned char *)b.p;
    *len = b.len;
    return 0;
}
