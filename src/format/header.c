/* header.c - the column `header` file. */
#include "header.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checksum.h"
#include "error.h"
#include "hex.h"

int cf__header_alloc(cf__header *h, int64_t nfile, const char *path, cf_error *err)
{
    h->nfile = nfile;
    h->rows = NULL;
    h->sums = NULL;
    if (nfile == 0) return 0;
    h->rows = calloc((size_t)nfile, sizeof *h->rows);
    h->sums = calloc((size_t)nfile, sizeof *h->sums);
    if (!h->rows || !h->sums) {
        cf__header_free(h);
        return CF_FAIL(err, CF_ENOMEM, "%s: out of memory for %lld blobs", path, (long long)nfile);
    }
    return 0;
}

void cf__header_free(cf__header *h)
{
    free(h->rows);
    free(h->sums);
    h->rows = NULL;
    h->sums = NULL;
}

int64_t cf__header_size(const cf__header *h)
{
    int64_t n = 0;
    for (int64_t i = 0; i < h->nfile; i++) n += h->rows[i];
    return n;
}

void cf__split_rows(int64_t size, int64_t nfile, int64_t *rows)
{
    /* (i+1)*size/nfile - i*size/nfile, computed without overflowing int64
     * for any size < 2^62 and nfile < 2^31 by splitting size = q*nfile + r. */
    int64_t q = nfile ? size / nfile : 0, r = nfile ? size % nfile : 0;
    for (int64_t i = 0; i < nfile; i++) {
        int64_t hi = (i + 1) * q + ((i + 1) * r) / nfile;
        int64_t lo = i * q + (i * r) / nfile;
        rows[i] = hi - lo;
    }
}

/* A cursor over the text that knows its line number. */
typedef struct {
    const char *p, *end;
    int64_t line;
    const char *path;
} cursor;

static void skip_space(cursor *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\r' ||
                             *c->p == '\n' || *c->p == '\v' || *c->p == '\f')) {
        if (*c->p == '\n') c->line++;
        c->p++;
    }
}

static int expect_keyword(cursor *c, const char *kw, cf_error *err)
{
    skip_space(c);
    size_t n = strlen(kw);
    if ((size_t)(c->end - c->p) < n || memcmp(c->p, kw, n) != 0)
        return CF_FAIL(err, CF_EFORMAT, "%s:%lld: expected '%s'", c->path, (long long)c->line, kw);
    c->p += n;
    return 0;
}

/* A decimal integer, optionally signed, that fits in int64. */
static int parse_int(cursor *c, int64_t *out, const char *what, cf_error *err)
{
    skip_space(c);
    int neg = 0;
    if (c->p < c->end && (*c->p == '-' || *c->p == '+')) neg = *c->p++ == '-';
    if (c->p >= c->end || *c->p < '0' || *c->p > '9')
        return CF_FAIL(err, CF_EFORMAT, "%s:%lld: expected a number for %s", c->path, (long long)c->line, what);
    uint64_t v = 0;
    while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
        unsigned d = (unsigned)(*c->p - '0');
        if (v > (UINT64_C(9223372036854775807) - d) / 10)
            return CF_FAIL(err, CF_EFORMAT, "%s:%lld: %s is too large", c->path, (long long)c->line, what);
        v = v * 10 + d;
        c->p++;
    }
    *out = neg ? -(int64_t)v : (int64_t)v;
    return 0;
}

static int is_space_char(char ch)
{
    return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n' || ch == '\v' || ch == '\f';
}

int cf__header_parse(cf__header *h, const char *text, size_t len,
                     const char *path, cf_error *err)
{
    cursor c = { text, text + len, 1, path };
    int rc;
    memset(h, 0, sizeof *h);

    if ((rc = expect_keyword(&c, "DTYPE:", err))) {
        if (len == 0) return CF_FAIL(err, CF_EFORMAT, "%s: empty header", path);
        return rc;
    }
    while (c.p < c.end && (*c.p == ' ' || *c.p == '\t')) c.p++;
    char token[CF_DTYPE_MAX];
    size_t tl = 0;
    while (c.p < c.end && !is_space_char(*c.p)) {
        if (tl + 1 >= sizeof token)
            return CF_FAIL(err, CF_EDTYPE, "%s:%lld: dtype token is too long", path, (long long)c.line);
        token[tl++] = *c.p++;
    }
    token[tl] = '\0';
    char context[1100];
    snprintf(context, sizeof context, "%s:%lld", path, (long long)c.line);
    if ((rc = cf__dtype_parse(token, CF__DTYPE_HEADER, &h->dtype, context, err))) return rc;

    int64_t nmemb, nfile;
    if ((rc = expect_keyword(&c, "NMEMB:", err))) return rc;
    if ((rc = parse_int(&c, &nmemb, "NMEMB", err))) return rc;
    if (nmemb < 0 || nmemb > CF__NMEMB_MAX)
        return CF_FAIL(err, CF_EFORMAT, "%s:%lld: NMEMB %lld is out of range (0..%lld)", path, (long long)c.line,
                       (long long)nmemb, (long long)CF__NMEMB_MAX);
    if ((rc = expect_keyword(&c, "NFILE:", err))) return rc;
    if ((rc = parse_int(&c, &nfile, "NFILE", err))) return rc;
    if (nfile < 0 || nfile > CF__NFILE_MAX)
        return CF_FAIL(err, CF_EFORMAT, "%s:%lld: NFILE %lld is out of range (0..%lld)", path, (long long)c.line,
                       (long long)nfile, (long long)CF__NFILE_MAX);
    /* Every blob line takes at least 8 bytes ("0:0:0:0\n" minus slack):
     * refuse counts the text cannot hold before allocating for them. */
    if ((uint64_t)nfile > (uint64_t)(c.end - c.p) / 7 + 1)
        return CF_FAIL(err, CF_EFORMAT, "%s:%lld: NFILE %lld but the header has room for far fewer blob lines",
                       path, (long long)c.line, (long long)nfile);
    h->nmemb = nmemb;
    if ((rc = cf__header_alloc(h, nfile, path, err))) return rc;

    for (int64_t k = 0; k < nfile; k++) {
        skip_space(&c);
        int64_t line = c.line;
        if (c.p >= c.end) {
            rc = CF_FAIL(err, CF_EFORMAT, "%s:%lld: NFILE is %lld but only %lld blob lines follow",
                         path, (long long)line, (long long)nfile, (long long)k);
            goto fail;
        }
        uint64_t id = 0;
        int digits = 0;
        /* At most 6 digits, as the original's "%6X" reads: a longer id
         * (even "0000001") is invalid there, so it is invalid here. */
        while (c.p < c.end && digits < 7) {
            int d = cf__hex_digit(*c.p);
            if (d < 0) break;
            id = id * 16 + (unsigned)d;
            digits++;
            c.p++;
        }
        if (digits == 0 || digits > 6 || c.p >= c.end || *c.p != ':') {
            rc = CF_FAIL(err, CF_EFORMAT, "%s:%lld: expected a blob line '<hex id, at most 6 digits>: <rows> : <sum> : <fold>'",
                         path, (long long)line);
            goto fail;
        }
        c.p++;
        if (id >= (uint64_t)nfile) {
            rc = CF_FAIL(err, CF_EFORMAT, "%s:%lld: blob id %llX is not below NFILE %lld",
                         path, (long long)line, (unsigned long long)id, (long long)nfile);
            goto fail;
        }
        int64_t rows, sum, fold;
        if ((rc = parse_int(&c, &rows, "blob rows", err))) goto fail;
        if ((rc = expect_keyword(&c, ":", err))) goto fail;
        if ((rc = parse_int(&c, &sum, "blob checksum", err))) goto fail;
        if ((rc = expect_keyword(&c, ":", err))) goto fail;
        if ((rc = parse_int(&c, &fold, "blob folded checksum", err))) goto fail;
        if (rows < 0 || sum < 0 || sum > (int64_t)UINT32_MAX) {
            rc = CF_FAIL(err, CF_EFORMAT, "%s:%lld: blob %06llX has rows %lld / checksum %lld out of range",
                         path, (long long)line, (unsigned long long)id, (long long)rows, (long long)sum);
            goto fail;
        }
        h->rows[id] = rows;
        h->sums[id] = (uint32_t)sum;
    }
    /* Total size and byte extents must fit in int64. */
    int64_t total = 0;
    int64_t width = h->dtype.width;
    for (int64_t i = 0; i < nfile; i++) {
        if (h->rows[i] > INT64_MAX - total) {
            rc = CF_FAIL(err, CF_EFORMAT, "%s: total rows overflow", path);
            goto fail;
        }
        total += h->rows[i];
    }
    if (nmemb > 0 && width > 0 && total > INT64_MAX / nmemb / width) {
        rc = CF_FAIL(err, CF_EFORMAT, "%s: %lld rows of %lld x %lld bytes overflow a 64-bit size",
                     path, (long long)total, (long long)nmemb, (long long)width);
        goto fail;
    }
    return 0;
fail:
    cf__header_free(h);
    return rc;
}

size_t cf__header_format_top(const cf__header *h, char *buf, size_t cap)
{
    char token[CF_DTYPE_MAX];
    cf__dtype_format(&h->dtype, token);
    return (size_t)snprintf(buf, cap, "DTYPE: %s\nNMEMB: %" PRId64 "\nNFILE: %" PRId64 "\n", token, h->nmemb,
                            h->nfile);
}

int cf__header_format(const cf__header *h, char **text, size_t *len,
                      const char *path, cf_error *err)
{
    /* Each blob line is at most 16 + 2 + 20 + 3 + 10 + 3 + 10 + 1 bytes. */
    size_t cap = 128 + (size_t)h->nfile * 72;
    char *buf = malloc(cap);
    if (!buf) return CF_FAIL(err, CF_ENOMEM, "%s: out of memory formatting header", path);
    size_t n = cf__header_format_top(h, buf, cap);
    for (int64_t i = 0; i < h->nfile; i++) {
        n += (size_t)snprintf(buf + n, cap - n, "%06" PRIX64 ": %" PRId64 " : %" PRIu32 " : %" PRIu32 "\n",
                              (uint64_t)i, h->rows[i], h->sums[i], cf__sysv_fold(h->sums[i]));
    }
    *text = buf;
    *len = n;
    return 0;
}
