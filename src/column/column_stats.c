/* column_stats.c - a column's statistics: loading their text, adding what
 * writes bring, and the per-chunk accessors of colfile.h. */
#include "column.h"
#include "column_handle.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "column_stage.h"
#include "column_index.h"
#include "hstamp.h"
#include "error.h"
#include "ext.h"

/* Blobs whose statistics the text holds but that did not load: with a
 * current colfile-v1 (whose checksum rules out a changed byte) they are
 * inconsistent as written, which `colfile check` reports as damage. */
static int note_bad_stats(cf_column *c, const char *text, size_t len, const char *path, cf_error *err)
{
    free(c->stat.stats_bad);
    c->stat.stats_bad = NULL;
    if (!text || c->h.nfile == 0) return 0;
    unsigned char *seen = calloc((size_t)c->h.nfile, 1);
    if (!seen) return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", path);
    cf__ext_stats_blob_lines(text, len, c->h.nfile, seen);
    int any = 0;
    for (int64_t b = 0; b < c->h.nfile; b++) {
        seen[b] = seen[b] && !c->stat.stats.valid[b];
        any |= seen[b];
    }
    if (any) c->stat.stats_bad = seen;
    else free(seen);
    return 0;
}

/* 1 if the statistics text has a blob line for a blob of the column. */
static int has_blob_lines(const cf_column *c, const char *text, size_t len)
{
    if (c->h.nfile == 0) return 0;
    unsigned char *seen = calloc((size_t)c->h.nfile, 1);
    if (!seen) return 1;
    cf__ext_stats_blob_lines(text, len, c->h.nfile, seen);
    int any = 0;
    for (int64_t b = 0; b < c->h.nfile && !any; b++) any = seen[b];
    free(seen);
    return any;
}

int cf__column_load_stats(cf_column *c, const char *text, size_t len, const char *path, cf_error *err)
{
    /* Damaged statistics are no statistics: never a reason not to open. */
    c->stat.stats_damaged = 0;
    if (text) {
        int rc = cf__stats_parse(&c->stat.stats, &c->h, text, len, path, NULL);
        if (rc == 0 && c->ext.ext_state == CF_EXT_CURRENT) {
            /* a large column's text has no chunk lines: the index has them */
            rc = note_bad_stats(c, text, len, path, err);
            return rc ? rc : cf__column_index_fill(c, err);
        }
        if (rc == 0) {
            /* not current (cf__column_apply_ext): only the chunk size,
             * for `colfile index` to keep */
            for (int64_t b = 0; b < c->h.nfile; b++) cf__column_stats_reset_blob(c, b);
            return 0;
        }
        c->stat.stats_damaged = rc == CF_EFORMAT && c->ext.ext_state == CF_EXT_CURRENT;
        /* head lines alone, a fine CHUNK: a large column's text, whose
         * statistics a current chunk index holds (format.md 8.4) */
        if (c->stat.stats_damaged && !has_blob_lines(c, text, len) && cf__column_index_current(c)) c->stat.stats_damaged = 0;
    }
    cf__stats_free(&c->stat.stats);
    int rc = cf__stats_alloc(&c->stat.stats, &c->h, cf__column_default_chunk_rows(c), path, err);
    return rc ? rc : cf__column_index_fill(c, err);
}

int64_t cf__column_default_chunk_rows(const cf_column *c)
{
    int64_t rows = 0;
    for (int64_t b = 0; b < c->h.nfile; b++)
        if (c->h.rows[b] > 0) rows = c->h.rows[b] > INT64_MAX - rows ? INT64_MAX : rows + c->h.rows[b];
    return cf__stats_chunk_rows_for(rows, c->h.nmemb, c->h.dtype.width);
}

int cf__column_apply_stats(cf_column *c, const char *text, size_t len, const char *path, cf_error *err)
{
    if (c->kind != CF_KIND_DATA) return 0;
    if (c->writable) return cf__column_load_stats(c, text, len, path, err);
    /* Parsing is most of the cost of opening a column from the catalog
     * (a text number per chunk and component), and reads of rows never
     * look at statistics: a reader keeps the text for when it is asked. */
    free(c->stat.stats_text);
    c->stat.stats_text = NULL;
    c->stat.stats_len = 0;
    if (text) {
        c->stat.stats_text = malloc(len + 1);
        if (!c->stat.stats_text) return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", path);
        memcpy(c->stat.stats_text, text, len);
        c->stat.stats_text[len] = '\0';
        c->stat.stats_len = len;
    }
    c->stat.stats_pending = 1;
    return 0;
}

/* A replica's statistics, left out of its snapshot: colfile-v1 of the
 * version it holds, if that is still the file the exporter trusted (same
 * mtime, its own checksum right); otherwise unknown, as for any stale
 * colfile-v1.  Only the statistics are taken: the CRC32C came with the
 * snapshot. */
static int fetch_stats(cf_column *c, cf_error *err)
{
    char *text = NULL;
    size_t len = 0, body = 0, at = 0;
    cf__hstamp keep = c->ext.xstamp;
    int rc = cf__column_read_ext(c, &text, &len, err);
    int same = rc == 0 && text && cf__hstamp_equal(&c->ext.xstamp, &c->stat.fetch_stamp) &&
               cf__ext_unseal(text, len, &body) == CF__SEAL_OK && cf__ext_stats_section(text, body, &at);
    c->ext.xstamp = keep;
    if (rc == 0) {
        c->stat.stats_fetch = 0;
        c->stat.stats_pending = 0;
        rc = cf__column_load_stats(c, same ? text + at : NULL, same ? body - at : 0, c->path, err);
    }
    free(text);
    return rc;
}

int cf__column_stats_need(const cf_column *cc, cf_error *err)
{
    /* Filling a cache: a handle is used by one thread at a time. */
    cf_column *c = (cf_column *)cc;
    int rc = cf__column_settle(c, err);
    if (rc || !c->stat.stats_pending) return rc;
    if (c->stat.stats_fetch) return fetch_stats(c, err);
    rc = cf__column_load_stats(c, c->stat.stats_text, c->stat.stats_len, c->path, err);
    if (rc) return rc;
    free(c->stat.stats_text);
    c->stat.stats_text = NULL;
    c->stat.stats_len = 0;
    c->stat.stats_pending = 0;
    return 0;
}

void cf__column_stats_reset_blob(cf_column *c, int64_t b)
{
    cf__stats_reset_blob(&c->stat.stats, b);
    cf__column_ccrc_reset_blob(c, b);
    c->stat.stats.valid[b] = c->h.rows[b] == 0;
}

/* Add n column-typed elements, starting at element `elem` of a blob, to
 * the accumulators of the chunks they fall in: acc holds chunks from k0
 * on, nmemb accumulators each. */
void cf__column_add_to_chunks(const cf_column *c, cf__acc *acc, int64_t k0, int64_t elem, const unsigned char *p,
                              int64_t n)
{
    int64_t nmemb = c->h.nmemb, w = c->h.dtype.width, chunk_elems = c->stat.stats.chunk_rows * nmemb;
    while (n > 0) {
        int64_t k = elem / chunk_elems;
        int64_t m = (k + 1) * chunk_elems - elem;
        if (m > n) m = n;
        cf__acc *a = acc + (k - k0) * nmemb;
        /* a new chunk starts from the scale of the one before (speed only) */
        if (k > k0 && a[0].hint == 0.0) a[0].hint = a[-nmemb].hint;
        cf__acc_add(a, nmemb, elem % nmemb, p, m, &c->h.dtype);
        p += m * w;
        elem += m;
        n -= m;
    }
}

/* Add n column-typed elements, starting at element `elem` of blob b, to
 * the statistics of the chunks they fall in, held from their first write
 * on (memory follows what is written, not the blob's claimed rows).  With
 * no memory for them the blob's statistics become unknown. */
int cf__column_stats_off(const cf_column *c)
{
    return c->stat.stats_off;
}

void cf__column_stats_add(cf_column *c, int64_t b, int64_t elem, const unsigned char *p, int64_t n)
{
    if (n <= 0 || c->h.nmemb <= 0) return;
    int64_t chunk_elems = c->stat.stats.chunk_rows * c->h.nmemb;
    int64_t k0 = elem / chunk_elems, k1 = (elem + n - 1) / chunk_elems + 1;
    cf__acc *acc = cf__stats_chunks(&c->stat.stats, b, k0, k1);
    if (!acc) return;
    /* a new chunk starts from the scale of the one before (speed only) */
    const cf__acc *prev = k0 > 0 && acc[0].hint == 0.0 ? cf__stats_peek(&c->stat.stats, b, k0 - 1) : NULL;
    if (prev) acc[0].hint = prev[0].hint;
    cf__column_add_to_chunks(c, acc, k0, elem, p, n);
    const cf__stats *s = &c->stat.stats;
    if (!s->fine_m || !c->stat.reading_back) return;
    /* the fine level, from data read back only (cf_column_index_blob; a
     * later write in the same handle leaves its sub-chunks unknown): a
     * pass of its own, sub-chunk by sub-chunk */
    int64_t nmemb = c->h.nmemb, w = c->h.dtype.width, sub_elems = s->fine_rows * nmemb;
    for (int64_t e = elem, end = elem + n; e < end;) {
        int64_t k = e / chunk_elems, start = k * chunk_elems, i = (e - start) / sub_elems;
        int64_t stop = start + (i + 1) * sub_elems;
        if (stop > start + chunk_elems) stop = start + chunk_elems;
        if (stop > end) stop = end;
        cf__fine *fine = cf__stats_fine(s, b, k);
        if (fine) cf__fine_add(fine + i * nmemb, nmemb, e % nmemb, p + (e - elem) * w, stop - e, &c->h.dtype);
        e = stop;
    }
}

/* ---- statistics accessors -------------------------------------------- */

int64_t cf_column_chunk_rows(const cf_column *c)
{
    return c->kind == CF_KIND_DATA && cf__column_stats_need(c, NULL) == 0 ? c->stat.stats.chunk_rows : 0;
}

int cf_column_set_chunk_rows(cf_column *c, int64_t rows, cf_error *err)
{
    if (!c) return CF_FAIL(err, CF_EARG, "cf_column_set_chunk_rows: NULL column");
    if (c->kind != CF_KIND_DATA) return CF_FAIL(err, CF_EKIND, "%s: not a data column", c->path);
    if (rows < 1 || rows > ((int64_t)1 << 40))
        return CF_FAIL(err, CF_EARG, "%s: rows per chunk must be in 1..2^40, got %lld", c->path, (long long)rows);
    if (!c->fresh)
        return CF_FAIL(err, CF_EARG, "%s: rows per chunk can only be chosen right after create, before any write",
                       c->path);
    cf__stats fresh;
    memset(&fresh, 0, sizeof fresh);
    int rc = cf__stats_alloc(&fresh, &c->h, rows, c->path, err);
    if (rc) return rc;
    cf__stats_free(&c->stat.stats);
    c->stat.stats = fresh;
    c->commit.ext_dirty = 1;
    return 0;
}

void cf_column_set_statistics(cf_column *c, int enabled)
{
    if (c) c->stat.stats_off = !enabled;
}

int64_t cf_column_chunk_count(const cf_column *c)
{
    return c->kind == CF_KIND_DATA && cf__column_stats_need(c, NULL) == 0 && c->stat.stats.first_chunk
        ? c->stat.stats.first_chunk[c->h.nfile] : 0;
}

/* x as a double no greater (down) or no smaller (up) than x. */
static double outward_i64(int64_t x, int up)
{
    double d = (double)x;
    if (up ? (long double)d < (long double)x : (long double)d > (long double)x) d = nextafter(d, up ? INFINITY : -INFINITY);
    return d;
}

static double outward_u64(uint64_t x, int up)
{
    double d = (double)x;
    if (up ? (long double)d < (long double)x : (long double)d > (long double)x) d = nextafter(d, up ? INFINITY : -INFINITY);
    return d;
}

void cf__column_fill_stats(const cf_column *c, const cf__acc *a, cf_chunk_stats *out)
{
    char cls = cf__acc_class(&c->h.dtype);
    out->ordered = cls != 0;
    out->count = a->count;
    out->nan_count = a->nan;
    out->sum = cf__acc_sum(a);
    out->min = out->max = NAN;
    if (a->count > a->nan) {
        if (cls == 'i') {
            out->min = outward_i64(a->v.i.min, 0);
            out->max = outward_i64(a->v.i.max, 1);
        } else if (cls == 'u') {
            out->min = outward_u64(a->v.u.min, 0);
            out->max = outward_u64(a->v.u.max, 1);
        } else if (cls == 'f') {
            out->min = a->v.f.min;
            out->max = a->v.f.max;
        }
    }
}

int cf_column_chunk_stats(const cf_column *c, int64_t k, int64_t component, cf_chunk_stats *out, cf_error *err)
{
    if (!c || !out) return CF_FAIL(err, CF_EARG, "cf_column_chunk_stats: NULL argument");
    int rc = c->kind == CF_KIND_DATA ? cf__column_stats_need(c, err) : 0;
    if (rc) return rc;
    int64_t n = cf_column_chunk_count(c);
    if (k < 0 || k >= n || component < 0 || component >= c->h.nmemb)
        return CF_FAIL(err, CF_ERANGE, "%s: no chunk %lld component %lld (%lld chunks, %lld components)", c->path,
                       (long long)k, (long long)component, (long long)n, (long long)c->h.nmemb);
    /* The blob: the last whose first chunk is <= k (skips blobs without chunks). */
    int64_t lo = 0, hi = c->h.nfile;
    while (hi - lo > 1) {
        int64_t mid = lo + (hi - lo) / 2;
        if (c->stat.stats.first_chunk[mid] <= k) lo = mid;
        else hi = mid;
    }
    int64_t b = lo, kk = k - c->stat.stats.first_chunk[b];
    /* Chunks nothing was written to or read for hold nothing: empty. */
    cf__acc empty;
    const cf__acc *a = cf__stats_peek(&c->stat.stats, b, kk);
    if (a) {
        a += component;
    } else {
        cf__acc_init(&empty, &c->h.dtype);
        a = &empty;
    }
    out->blob = b;
    out->first_row = c->first_row[b] + kk * c->stat.stats.chunk_rows;
    out->rows = c->h.rows[b] - kk * c->stat.stats.chunk_rows;
    if (out->rows > c->stat.stats.chunk_rows) out->rows = c->stat.stats.chunk_rows;
    out->valid = c->stat.stats.valid[b] && cf__column_first_touch(c, b);
    cf__column_fill_stats(c, a, out);
    return 0;
}
