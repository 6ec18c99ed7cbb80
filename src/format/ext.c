/* ext.c - the `colfile-v1` extension file. */
#include "ext.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checksum.h"
#include "error.h"
#include "hex.h"

void cf__ext_free(cf__ext *x)
{
    cf__header_free(&x->header);
    free(x->crc);
    free(x->known);
    x->crc = NULL;
    x->known = NULL;
}

static int is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

/* 0 if [s, e) is exactly one blob line up to its CRC field,
 * "<hex id>: <rows> : <rawsum> : " (blanks as the header allows them); sets
 * *id and num[0..1] (rows and rawsum, -1 if signed or too large).  A line
 * holding more or less than one record would let the header parser and
 * this file disagree about which blob a CRC is for. */
static int blob_line_prefix(const char *s, const char *e, uint64_t *id, int64_t num[2])
{
    int digits = 0;
    *id = 0;
    while (s < e && is_blank(*s)) s++;
    for (; s < e && cf__hex_digit(*s) >= 0; s++, digits++) *id = *id * 16 + (uint64_t)cf__hex_digit(*s);
    if (digits == 0 || digits > 16 || s == e || *s++ != ':') return -1;
    for (int field = 0; field < 2; field++) {
        while (s < e && is_blank(*s)) s++;
        num[field] = 0;
        if (s < e && (*s == '+' || *s == '-')) {
            num[field] = -1;
            s++;
        }
        const char *d = s;
        for (; s < e && *s >= '0' && *s <= '9'; s++)
            if (num[field] >= 0) num[field] = num[field] > (INT64_MAX - 9) / 10 ? -1 : num[field] * 10 + (*s - '0');
        if (s == d) return -1;
        while (s < e && is_blank(*s)) s++;
        if (s == e || *s++ != ':') return -1;
    }
    while (s < e && is_blank(*s)) s++;
    return s == e ? 0 : -1;
}

/* The body after the first line has the header's own grammar, except that
 * the fourth field of a blob line is "crc32c=<hex>" or "crc32c=-".  We
 * parse it line by line to stay strict about that field. */
int cf__ext_parse(cf__ext *x, const char *text, size_t len, const char *path, cf_error *err)
{
    memset(x, 0, sizeof *x);
    const char *end = text + len;
    const char *magic = "COLFILE-EXT: 1\n";
    size_t ml = strlen(magic);
    if (len < ml || memcmp(text, magic, ml) != 0)
        return CF_FAIL(err, CF_EFORMAT, "%s:1: expected 'COLFILE-EXT: 1'", path);
    const char *p = text + ml;
    /* DTYPE/NMEMB/NFILE: three lines, in header grammar. */
    const char *q = p;
    for (int i = 0; i < 3; i++) {
        const char *nl = memchr(q, '\n', (size_t)(end - q));
        if (!nl) return CF_FAIL(err, CF_EFORMAT, "%s:%d: truncated", path, i + 2);
        q = nl + 1;
    }
    /* Blob lines: parse each "<id>: <rows> : <sum> : crc32c=<hex|->". */
    int64_t nfile_lines = 0;
    for (const char *r = q; r < end; r++) nfile_lines += *r == '\n';
    /* Build a plain header text for the shared parser: the three lines plus
     * the blob lines with their fourth field replaced by 0. */
    size_t cap = (size_t)(q - p) + (size_t)(end - q) + 16;
    char *plain = malloc(cap);
    if (!plain) return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", path);
    memcpy(plain, p, (size_t)(q - p));
    size_t n = (size_t)(q - p);
    uint32_t *crc = NULL;
    unsigned char *known = NULL;
    int64_t count = 0;
    int rc = 0;
    /* First pass: rewrite lines and remember CRCs by position. */
    crc = calloc((size_t)nfile_lines + 1, sizeof *crc);
    known = calloc((size_t)nfile_lines + 1, 1);
    uint64_t *ids = calloc((size_t)nfile_lines + 1, sizeof *ids);
    int64_t (*nums)[2] = calloc((size_t)nfile_lines + 1, sizeof *nums);
    if (!crc || !known || !ids || !nums) {
        rc = CF_FAIL(err, CF_ENOMEM, "%s: out of memory", path);
        goto done;
    }
    int64_t line = 5;
    for (const char *r = q; r < end; line++) {
        const char *nl = memchr(r, '\n', (size_t)(end - r));
        const char *le = nl ? nl : end;
        const char *field = NULL;
        /* find "crc32c=" in this line */
        for (const char *s = r; s + 7 <= le; s++)
            if (memcmp(s, "crc32c=", 7) == 0) { field = s; break; }
        if (!field) {
            /* Unknown trailing lines are allowed (room for later versions). */
            r = nl ? nl + 1 : end;
            continue;
        }
        uint64_t id;
        if (blob_line_prefix(r, field, &id, nums[count]) != 0) {
            rc = CF_FAIL(err, CF_EFORMAT, "%s:%lld: expected '<ID>: <rows> : <rawsum> : crc32c=<hex>'", path,
                         (long long)line);
            goto done;
        }
        memcpy(plain + n, r, (size_t)(field - r));
        n += (size_t)(field - r);
        plain[n++] = '0';
        plain[n++] = '\n';
        const char *v = field + 7;
        if (v < le && *v == '-') {
            known[count] = 0;
        } else {
            uint32_t value = 0;
            int digits = 0;
            while (v < le && digits < 9) {
                int d = cf__hex_digit(*v);
                if (d < 0) break;
                value = value * 16 + (unsigned)d;
                digits++;
                v++;
            }
            if (digits != 8) {
                rc = CF_FAIL(err, CF_EFORMAT, "%s:%lld: crc32c needs 8 hex digits or '-'", path, (long long)line);
                goto done;
            }
            crc[count] = value;
            known[count] = 1;
        }
        ids[count] = id;
        count++;
        r = nl ? nl + 1 : end;
    }
    plain[n] = '\0';
    rc = cf__header_parse(&x->header, plain, n, path, err);
    if (rc) goto done;
    if (count != x->header.nfile) {
        rc = CF_FAIL(err, CF_EFORMAT, "%s: NFILE %lld but %lld blob lines", path,
                     (long long)x->header.nfile, (long long)count);
        cf__header_free(&x->header);
        goto done;
    }
    x->crc = calloc((size_t)count + 1, sizeof *x->crc);
    x->known = calloc((size_t)count + 1, 1);
    if (!x->crc || !x->known) {
        rc = CF_FAIL(err, CF_ENOMEM, "%s: out of memory", path);
        cf__ext_free(x);
        goto done;
    }
    for (int64_t i = 0; i < count; i++) {
        /* The header part may hide a blob record in its first lines; then
         * some line's CRC would go with another line's rows and sum. */
        if (ids[i] >= (uint64_t)count || nums[i][0] != x->header.rows[ids[i]] ||
            nums[i][1] != (int64_t)x->header.sums[ids[i]]) {
            rc = CF_FAIL(err, CF_EFORMAT, "%s: blob line %lld does not match the blob it names", path,
                         (long long)i + 1);
            cf__ext_free(x);
            goto done;
        }
    }
    for (int64_t i = 0; i < count; i++) {
        x->crc[ids[i]] = crc[i];
        x->known[ids[i]] = known[i];
    }
done:
    free(plain);
    free(crc);
    free(known);
    free(ids);
    free(nums);
    return rc;
}

int cf__ext_format(const cf__header *h, const uint32_t *crc, const unsigned char *known,
                   char **text, size_t *len, const char *path, cf_error *err)
{
    size_t cap = 160 + (size_t)h->nfile * 80;
    char *buf = malloc(cap);
    if (!buf) return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", path);
    size_t n = (size_t)snprintf(buf, cap, "COLFILE-EXT: 1\n");
    n += cf__header_format_top(h, buf + n, cap - n);
    for (int64_t i = 0; i < h->nfile; i++) {
        if (known[i])
            n += (size_t)snprintf(buf + n, cap - n, "%06" PRIX64 ": %" PRId64 " : %" PRIu32 " : crc32c=%08" PRIx32 "\n",
                                  (uint64_t)i, h->rows[i], h->sums[i], crc[i]);
        else
            n += (size_t)snprintf(buf + n, cap - n, "%06" PRIX64 ": %" PRId64 " : %" PRIu32 " : crc32c=-\n",
                                  (uint64_t)i, h->rows[i], h->sums[i]);
    }
    *text = buf;
    *len = n;
    return 0;
}

int cf__ext_current(const cf__ext *x, const cf__header *h, int64_t i)
{
    if (!x->crc || !cf__dtype_equal(&x->header.dtype, &h->dtype)) return 0;
    if (x->header.nmemb != h->nmemb || x->header.nfile != h->nfile) return 0;
    if (i < 0 || i >= h->nfile || !x->known[i]) return 0;
    return x->header.rows[i] == h->rows[i] && x->header.sums[i] == h->sums[i];
}

int cf__ext_stats_section(const char *text, size_t len, size_t *off)
{
    /* the file's first line is "COLFILE-EXT: 1", so the section's is never
     * the first */
    static const char mark[] = "\nCOLFILE-STATS:";
    const size_t ml = sizeof mark - 1;
    for (const char *p = text, *end = text + len; (size_t)(end - p) >= ml; p++) {
        p = memchr(p, '\n', (size_t)(end - p) - ml + 1);
        if (!p) break;
        if (memcmp(p, mark, ml) == 0) {
            *off = (size_t)(p + 1 - text);
            return 1;
        }
    }
    return 0;
}

#define SEAL_KEY "CRC32C: "

int cf__ext_assemble(const char *crc_part, size_t cl, const char *stats, size_t sl, char **text, size_t *len,
                     const char *path, cf_error *err)
{
    size_t n = cl + sl;
    char *buf = malloc(n + sizeof SEAL_KEY + 10);
    if (!buf) return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", path);
    memcpy(buf, crc_part, cl);
    if (sl) memcpy(buf + cl, stats, sl);
    n += (size_t)sprintf(buf + n, SEAL_KEY "%08" PRIx32 "\n", cf__crc32c_update(0, buf, n));
    *text = buf;
    *len = n;
    return 0;
}

enum cf__ext_seal cf__ext_unseal(const char *text, size_t len, size_t *body)
{
    *body = len;
    /* the last line, which must end with LF */
    if (len == 0 || text[len - 1] != '\n') return CF__SEAL_NONE;
    size_t ls = len - 1;
    while (ls > 0 && text[ls - 1] != '\n') ls--;
    if (len - 1 - ls != sizeof SEAL_KEY - 1 + 8 || memcmp(text + ls, SEAL_KEY, sizeof SEAL_KEY - 1) != 0)
        return CF__SEAL_NONE;
    uint32_t want = 0;
    for (int k = 0; k < 8; k++) {
        char ch = text[ls + sizeof SEAL_KEY - 1 + (size_t)k];
        int d = cf__hex_digit(ch);
        if (d < 0 || (ch >= 'A' && ch <= 'F')) return CF__SEAL_DAMAGED;
        want = want * 16 + (uint32_t)d;
    }
    if (cf__crc32c_update(0, text, ls) != want) return CF__SEAL_DAMAGED;
    *body = ls;
    return CF__SEAL_OK;
}

void cf__ext_stats_blob_lines(const char *text, size_t len, int64_t nfile, unsigned char *seen)
{
    for (const char *p = text, *end = text + len; p < end;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end, *q = p;
        uint64_t id = 0;
        int nd = 0;
        for (int d; q < le && (d = cf__hex_digit(*q)) >= 0; q++, nd++) id = id * 16 + (uint64_t)d;
        if (nd > 0 && nd <= 16 && q < le && *q == ':' && id < (uint64_t)nfile) seen[id] = 1;
        p = nl ? nl + 1 : end;
    }
}
