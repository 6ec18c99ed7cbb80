/* column_index.c - a column's binary chunk index colfile-index-v1: written
 * by each commit of a large column, read page by page (column_index.h,
 * docs/format.md 8.6), and the chunk CRC32C values it records. */
#include "column_index.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checksum.h"
#include "column_handle.h"
#include "column_version.h"
#include "error.h"
#include "fsutil.h"
#include "stindex.h"
#include "column_index_reader.h"
#include "stindex_fine.h"
#include "wire.h"


/* Chunk CRC32C of one blob: bytes [lo, hi) of chunk k have CRC crc; a
 * chunk is known when they are all of it; lo = -1: pieces that did not
 * join (unknown until the blob is scanned again).  Held sorted by k, for
 * the chunks written or read only (a write near the end of a blob whose
 * header claims many rows holds one entry, not one per chunk before it). */
typedef struct {
    int64_t k, lo, hi;
    uint32_t crc;
} cf__ccrc_e;

typedef struct cf__ccrc_blob {
    int64_t n, cap;
    cf__ccrc_e *e;
    int lost; /* bytes were written that no entry describes (no memory
                 for them, here or in a handle whose pieces were merged):
                 every chunk unknown until the blob's next first write */
} cf__ccrc_blob;

typedef struct cf__ccrc {
    int64_t nfile;
    cf__ccrc_blob *blob;
} cf__ccrc;

static int64_t chunks_of(const cf_column *c, int64_t b, int64_t chunk_rows)
{
    return chunk_rows > 0 && c->h.rows[b] > 0 ? (c->h.rows[b] + chunk_rows - 1) / chunk_rows : 0;
}

static int64_t total_chunks(const cf_column *c)
{
    int64_t n = 0;
    for (int64_t b = 0; b < c->h.nfile; b++) n += chunks_of(c, b, c->stat.stats.chunk_rows);
    return n;
}

/* ---- the text of the statistics, and whether an index is written ------ */

/* Chunks of the column, and of its blobs with known statistics. */
static void chunk_counts(const cf_column *c, int64_t *all, int64_t *known)
{
    *all = *known = 0;
    for (int64_t b = 0; b < c->h.nfile; b++) {
        int64_t nc = chunks_of(c, b, c->stat.stats.chunk_rows);
        *all += nc;
        if (c->stat.stats.valid && c->stat.stats.valid[b]) *known += nc;
    }
}

int cf__column_index_wanted(const cf_column *c)
{
    if (c->kind != CF_KIND_DATA || !c->stat.stats.first_chunk || !c->stat.stats.valid || c->h.nmemb < 1) return 0;
    int64_t all, known;
    chunk_counts(c, &all, &known);
    /* its size follows the statistics known, never the rows a header claims */
    return known > 0 && known >= all / 4 &&
           (all >= CF__INDEX_MIN_CHUNKS || known > CF__STATS_TEXT_RECORDS_MAX / c->h.nmemb ||
            (c->stat.stats.fine_m > 0 && all >= CF__INDEX_MIN_SUBCHUNKS / c->stat.stats.fine_m));
}

int cf__column_stats_in_text(const cf_column *c)
{
    int64_t all, known;
    chunk_counts(c, &all, &known);
    return c->h.nmemb < 1 || known <= CF__STATS_TEXT_RECORDS_MAX / c->h.nmemb || !cf__column_index_wanted(c);
}

int cf__column_stats_section(cf_column *c, char **text, size_t *len, cf_error *err)
{
    if (cf__column_stats_in_text(c)) return cf__stats_format(&c->stat.stats, &c->h, text, len, c->path, err);
    /* the head lines alone: every blob unknown to a reader of the text */
    cf__stats head = c->stat.stats;
    head.valid = calloc((size_t)(c->h.nfile ? c->h.nfile : 1), 1);
    if (!head.valid) return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", c->path);
    int rc = cf__stats_format(&head, &c->h, text, len, c->path, err);
    free(head.valid);
    return rc;
}

/* ---- writing ------------------------------------------------------------ */

static void stamp_index(int fd, void *arg)
{
    cf__hstamp_apply(fd, &((cf_column *)arg)->ver.hstamp);
}

int cf__column_write_index(cf_column *c, int private_, int *keep, cf_error *err)
{
    if (keep) *keep = -1;
    cf__column_index_close(c);
    if (c->stat.owner_index) return cf__column_write_owner_index(c, keep, err);
    if (!cf__column_index_wanted(c)) {
        if (!c->stat.index_seen || private_) return 0;
        c->stat.index_seen = 0;
        return cf__remove_if_exists(c->dir, CF__INDEX_NAME, err);
    }
    int64_t n = total_chunks(c);
    uint32_t *crc = malloc(sizeof *crc * (size_t)(n ? n : 1));
    unsigned char *known = calloc((size_t)(n ? n : 1), 1);
    unsigned char *buf = NULL;
    size_t len = 0;
    int rc = 0;
    if (!crc || !known) {
        rc = CF_FAIL(err, CF_ENOMEM, "%s: out of memory", c->path);
        goto done;
    }
    for (int64_t b = 0, k = 0; b < c->h.nfile; b++) {
        int64_t nc = chunks_of(c, b, c->stat.stats.chunk_rows);
        for (int64_t kk = 0; kk < nc; kk++, k++) known[k] = (unsigned char)cf__column_ccrc_get(c, b, kk, &crc[k]);
    }
    rc = cf__index_build(&c->stat.stats, &c->h, c->dtype_token, NULL, crc, known, &buf, &len, c->path, err);
    if (rc == 0)
        rc = private_ ? cf__write_file_private_hook(c->dir, CF__INDEX_NAME, buf, len, keep, stamp_index, c, err)
                      : cf__write_file_atomic_hook(c->dir, CF__INDEX_NAME, buf, len, c->durable, stamp_index, c, err);
    if (rc == 0) c->stat.index_seen = 1;
done:
    free(crc);
    free(known);
    free(buf);
    return rc;
}

/* ---- reading ------------------------------------------------------------ */

void cf__column_index_close(cf_column *c)
{
    cf__index_reader *r = c->stat.index;
    if (!r) return;
    if (r->fd >= 0) close(r->fd);
    r->fd = -1;
    r->state = -1;
    free(r->first_chunk);
    r->first_chunk = NULL;
    free(r->block);
    r->block = NULL;
    r->fine = 0;
    r->fine_k = -1;
    for (int l = 0; l < CF__INDEX_LEVELS_MAX; l++) {
        free(r->page[l]);
        r->page[l] = NULL;
        r->page_no[l] = -1;
    }
}

static void index_free(cf_column *c)
{
    cf__column_index_close(c);
    free(c->stat.index);
    c->stat.index = NULL;
}

static int damaged(cf__index_reader *r, int rc, const cf_error *why)
{
    r->state = CF_INDEX_DAMAGED;
    snprintf(r->problem, sizeof r->problem, "%s", why->message);
    return rc;
}

/* Open and check the index (once per handle and commit): r->state. */
static int index_open(cf_column *c, cf__index_reader **out, cf_error *err)
{
    if (!c->stat.index) {
        c->stat.index = calloc(1, sizeof *c->stat.index);
        if (!c->stat.index) return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", c->path);
        c->stat.index->fd = -1;
        c->stat.index->fine_k = -1;
        c->stat.index->state = -1;
        for (int l = 0; l < CF__INDEX_LEVELS_MAX; l++) c->stat.index->page_no[l] = -1;
    }
    cf__index_reader *r = *out = c->stat.index;
    if (r->state >= 0) return 0;
    r->state = CF_INDEX_ABSENT;
    r->problem[0] = '\0';
    if (c->kind != CF_KIND_DATA || c->h.nmemb < 1) return 0;
    int fd = cf__version_openat(c, CF__INDEX_NAME, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) {
        int e = errno;
        if (e == ENOENT) return 0;
        r->state = -1;
        return CF_FAIL(err, CF_EIO, "%s/%s: cannot open: %s", c->path, CF__INDEX_NAME, strerror(e));
    }
    c->stat.index_seen = 1;
    r->fd = fd;
    char path[CF_ERROR_MESSAGE_MAX / 2];
    snprintf(path, sizeof path, "%s/%s", c->path, CF__INDEX_NAME);
    cf_error why;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
    {
        CF_FAIL(&why, CF_EFORMAT, "%s: not a regular file", path);
        return damaged(r, 0, &why);
    }
    /* the header's stamp, as colfile-v1 carries it (8.1): else another version */
    cf__hstamp xs;
    cf__hstamp_of(&xs, &st);
    if (c->ext.ext_state == CF_EXT_TORN || c->ext.ext_state == CF_EXT_UPDATING || !cf__hstamp_equal(&xs, &c->ver.hstamp)) {
        r->state = CF_INDEX_STALE;
        return 0;
    }
    unsigned char head[CF__INDEX_HEAD + 16 * CF__INDEX_LEVELS_MAX + 4];
    size_t got = 0;
    if (cf__pread_all(fd, head, sizeof head, 0, &got, path, &why)) return damaged(r, 0, &why);
    r->bytes_read += (int64_t)got;
    if (cf__index_parse_head(&r->g, head, got, (int64_t)st.st_size, path, &why)) return damaged(r, 0, &why);
    int64_t nch = 0;
    r->first_chunk = malloc(sizeof *r->first_chunk * (size_t)(c->h.nfile + 1));
    if (!r->first_chunk) {
        r->state = -1;
        return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", c->path);
    }
    for (int64_t b = 0; b < c->h.nfile; b++) {
        r->first_chunk[b] = nch;
        nch += chunks_of(c, b, r->g.chunk_rows);
    }
    r->first_chunk[c->h.nfile] = nch;
    if (strcmp(r->g.token, c->dtype_token) != 0 || r->g.nmemb != c->h.nmemb || r->g.nfile != c->h.nfile ||
        r->g.nchunks != nch) {
        CF_FAIL(&why, CF_EFORMAT, "%s: the index does not describe the column's header (dtype, components, "
                "blobs or chunks differ) although it carries its stamp: written wrong", path);
        return damaged(r, 0, &why);
    }
    r->state = CF_INDEX_CURRENT;
    /* the fine level, after the levels (the head records its size): one
     * that is damaged is not used, the levels still are */
    uint64_t fine_bytes = 0;
    for (int i = 7; i >= 0; i--) fine_bytes = (fine_bytes << 8) | head[CF__INDEX_FINE_AT + i];
    unsigned char fh[CF__FINE_HEAD];
    if (fine_bytes > 0 && fine_bytes <= (uint64_t)(st.st_size - r->g.size) &&
        cf__pread_all(fd, fh, sizeof fh, r->g.size, &got, path, &why) == 0 && got == sizeof fh &&
        cf__index_fine_parse(&r->fg, fh, r->g.size, (int64_t)fine_bytes, r->g.nchunks, r->g.nmemb, r->g.chunk_rows, path, &why) == 0)
        r->fine = 1;
    if (fine_bytes > 0) r->bytes_read += CF__FINE_HEAD;
    return 0;
}

/* Page p of `level` (records [p*F, ..)), read and verified against its
 * parent's CRC32C (the head's for the top level). */
int cf__index_page(cf_column *c, cf__index_reader *r, int level, int64_t p, const unsigned char **out,
                      cf_error *err)
{
    const cf__index_geom *g = &r->g;
    int64_t rb = cf__index_rec_bytes(g->nmemb), f = g->fanout;
    if (r->page_no[level] == p && r->page[level]) {
        *out = r->page[level];
        return 0;
    }
    uint32_t want;
    if (level == g->nlevels - 1) {
        want = g->top_crc;
    } else {
        const unsigned char *parent;
        int rc = cf__index_page(c, r, level + 1, p / f, &parent, err);
        if (rc) return rc;
        want = cf__index_rec_crc(parent + (p % f) * rb);
    }
    int64_t r0 = p * f, r1 = r0 + f < g->count[level] ? r0 + f : g->count[level];
    size_t bytes = (size_t)((r1 - r0) * rb), got = 0;
    unsigned char *buf = realloc(r->page[level], bytes ? bytes : 1);
    if (!buf) return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", c->path);
    r->page[level] = buf;
    r->page_no[level] = -1;
    char path[CF_ERROR_MESSAGE_MAX / 2];
    snprintf(path, sizeof path, "%s/%s", c->path, CF__INDEX_NAME);
    int rc = cf__pread_all(r->fd, buf, bytes, g->offset[level] + r0 * rb, &got, path, err);
    if (rc) return rc;
    r->bytes_read += (int64_t)got;
    if (got < bytes)
        rc = CF_FAIL(err, CF_EFORMAT, "%s: level %d records %lld..%lld are cut short (truncated; `colfile "
                     "index` rebuilds the index)", path, level, (long long)r0, (long long)r1 - 1);
    else if (cf__crc32c_update(0, buf, bytes) != want)
        rc = CF_FAIL(err, CF_EFORMAT, "%s: level %d records %lld..%lld fail their CRC32C (damaged; `colfile "
                     "index` rebuilds the index)", path, level, (long long)r0, (long long)r1 - 1);
    if (rc) return damaged(r, rc, err);
    r->page_no[level] = p;
    *out = buf;
    return 0;
}

/* The blob holding chunk k (first_chunk[b] <= k < first_chunk[b + 1]). */
static int64_t blob_of_chunk(const cf__index_reader *r, int64_t nfile, int64_t k)
{
    int64_t lo = 0, hi = nfile;
    while (hi - lo > 1) {
        int64_t mid = lo + (hi - lo) / 2;
        if (r->first_chunk[mid] <= k) lo = mid;
        else hi = mid;
    }
    return lo;
}

int64_t cf__index_chunk_first_row(const cf_column *c, const cf__index_reader *r, int64_t k, int64_t *b_out)
{
    int64_t b = blob_of_chunk(r, c->h.nfile, k);
    *b_out = b;
    return c->first_row[b] + (k - r->first_chunk[b]) * r->g.chunk_rows;
}

int cf__column_index_current(cf_column *c)
{
    cf__index_reader *r;
    return c->kind == CF_KIND_DATA && index_open(c, &r, NULL) == 0 && r->state == CF_INDEX_CURRENT;
}

int cf_column_index_info(cf_column *c, cf_index_info *out, cf_error *err)
{
    if (!c || !out) return CF_FAIL(err, CF_EARG, "cf_column_index_info: NULL argument");
    memset(out, 0, sizeof *out);
    cf__index_reader *r;
    int rc = cf__column_settle(c, err);
    if (rc == 0) rc = index_open(c, &r, err);
    if (rc) return rc;
    out->state = r->state;
    snprintf(out->problem, sizeof out->problem, "%s", r->state == CF_INDEX_DAMAGED ? r->problem : "");
    if (r->state == CF_INDEX_CURRENT) {
        out->levels = r->g.nlevels;
        out->fanout = r->g.fanout;
        out->chunks = r->g.nchunks;
        out->chunk_rows = r->g.chunk_rows;
    }
    return 0;
}

int64_t cf_column_index_count(cf_column *c, int64_t level)
{
    cf__index_reader *r;
    if (!c || cf__column_settle(c, NULL) || index_open(c, &r, NULL) || r->state != CF_INDEX_CURRENT) return 0;
    if (level == CF__INDEX_FINE) return r->fine ? r->g.nchunks * r->fg.m : 0;
    return level >= 0 && level < r->g.nlevels ? r->g.count[level] : 0;
}

int64_t cf_column_index_bytes_read(const cf_column *c)
{
    return c && c->stat.index ? c->stat.index->bytes_read : 0;
}

int cf_column_index_nodes(cf_column *c, int64_t level, int64_t first, int64_t n, int64_t component,
                          cf_chunk_stats *out, cf_error *err)
{
    if (!c || (!out && n > 0)) return CF_FAIL(err, CF_EARG, "cf_column_index_nodes: NULL argument");
    cf__index_reader *r;
    int rc = cf__column_settle(c, err);
    if (rc == 0) rc = index_open(c, &r, err);
    if (rc) return rc;
    if (r->state != CF_INDEX_CURRENT)
        return CF_FAIL(err, r->state == CF_INDEX_DAMAGED ? CF_EFORMAT : CF_ENOENT, "%s: no current chunk index%s%s",
                       c->path, r->state == CF_INDEX_DAMAGED ? ": " : "", r->problem);
    const cf__index_geom *g = &r->g;
    if (level == CF__INDEX_FINE && r->fine && first >= 0 && n >= 0 && first <= g->nchunks * r->fg.m - n &&
        component >= 0 && component < g->nmemb)
        return cf__index_fine_nodes(c, r, first, n, component, out, err);
    if (level < 0 || level >= g->nlevels || first < 0 || n < 0 || first > g->count[level] - n ||
        component < 0 || component >= g->nmemb)
        return CF_FAIL(err, CF_ERANGE, "%s: no index records %lld..%lld of level %lld component %lld", c->path,
                       (long long)first, (long long)(first + n - 1), (long long)level, (long long)component);
    /* chunks below one record of this level: fanout^level, capped */
    int64_t span = 1;
    for (int64_t l = 0; l < level && span <= g->nchunks; l++) span *= g->fanout;
    int64_t rb = cf__index_rec_bytes(g->nmemb);
    char cls = cf__acc_class(&c->h.dtype);
    for (int64_t i = 0; i < n; i++) {
        int64_t node = first + i;
        const unsigned char *page;
        if ((rc = cf__index_page(c, r, (int)level, node / g->fanout, &page, err))) return rc;
        const unsigned char *rec = page + (node % g->fanout) * rb;
        int64_t k0 = node * span, k1 = span > g->nchunks - k0 ? g->nchunks : k0 + span, b0, b1;
        int64_t row0 = cf__index_chunk_first_row(c, r, k0, &b0);
        int64_t last = cf__index_chunk_first_row(c, r, k1 - 1, &b1);
        int64_t end = last + g->chunk_rows < c->first_row[b1 + 1] ? last + g->chunk_rows : c->first_row[b1 + 1];
        int valid = (cf__index_rec_flags(rec) & CF__INDEX_STATS) != 0;
        /* statistics of rows this handle has written since are not the data's
         * (a read-only handle has written none) */
        for (int64_t b = b0; valid && c->writable && b <= b1; b++)
            valid = cf__column_first_touch(c, b) && !c->sums.unsynced[b];
        cf__acc a;
        cf__index_rec_acc(rec, component, cls, end - row0, &a);
        cf__column_fill_stats(c, &a, &out[i]);
        out[i].blob = b0;
        out[i].first_row = row0;
        out[i].rows = end - row0;
        out[i].valid = valid;
        if (!valid) out[i].count = out[i].nan_count = 0;
    }
    return 0;
}

/* Chunk kk of blob b from a current index: 1 and *crc if it records one. */
static int index_chunk_crc(cf_column *c, int64_t b, int64_t kk, uint32_t *crc)
{
    cf__index_reader *r;
    if (cf__column_settle(c, NULL) || index_open(c, &r, NULL) || r->state != CF_INDEX_CURRENT ||
        (c->stat.ccrc && r->g.chunk_rows != c->stat.stats.chunk_rows))
        return 0;
    int64_t k = r->first_chunk[b] + kk, rb = cf__index_rec_bytes(r->g.nmemb);
    const unsigned char *page;
    cf_error ignored;
    if (cf__index_page(c, r, 0, k / r->g.fanout, &page, &ignored)) return 0;
    const unsigned char *rec = page + (k % r->g.fanout) * rb;
    if (!(cf__index_rec_flags(rec) & CF__INDEX_CRC)) return 0;
    *crc = cf__index_rec_crc(rec);
    return 1;
}

int64_t cf__column_crc_chunk_rows(cf_column *c)
{
    if (c->stat.ccrc) return c->stat.stats.chunk_rows;
    cf__index_reader *r;
    if (c->kind != CF_KIND_DATA || cf__column_settle(c, NULL) || index_open(c, &r, NULL) ||
        r->state != CF_INDEX_CURRENT)
        return 0;
    return r->g.chunk_rows;
}

int cf_column_chunk_crc32c(cf_column *c, int64_t k, uint32_t *crc)
{
    if (!c || !crc || c->kind != CF_KIND_DATA || cf__column_settle(c, NULL)) return 0;
    int64_t b = 0, kk = k, cr = cf__column_crc_chunk_rows(c);
    if (cr <= 0) return 0;
    for (; b < c->h.nfile; b++) {
        int64_t nc = chunks_of(c, b, cr);
        if (kk < nc) break;
        kk -= nc;
    }
    if (k < 0 || b >= c->h.nfile) return 0;
    return cf__column_chunk_crc(c, b, kk, crc);
}

int cf__column_chunk_crc(cf_column *c, int64_t b, int64_t kk, uint32_t *crc)
{
    if (cf__column_ccrc_get(c, b, kk, crc)) return 1;
    /* what the index recorded holds only for bytes this handle left alone */
    return cf__column_first_touch(c, b) && !c->sums.unsynced[b] && index_chunk_crc(c, b, kk, crc);
}

static cf__ccrc_blob *ccrc_blob(cf_column *c, int64_t b);
static cf__ccrc_e *ccrc_entry(cf__ccrc_blob *x, int64_t k);

/* The chunk CRC32C the index records, as known to the handle (a writer's
 * commit keeps those of the blobs it does not write). */
static int crcs_fill(cf_column *c, cf__index_reader *r)
{
    if (r->g.chunk_rows != c->stat.stats.chunk_rows) return 0;
    int64_t rb = cf__index_rec_bytes(r->g.nmemb);
    cf_error ignored;
    for (int64_t b = 0; b < c->h.nfile; b++) {
        int64_t nc = chunks_of(c, b, r->g.chunk_rows), k0 = r->first_chunk[b];
        cf__ccrc_blob *e = nc ? ccrc_blob(c, b) : NULL;
        for (int64_t kk = 0; e && kk < nc; kk++) {
            const unsigned char *page;
            int64_t k = k0 + kk, rows = c->h.rows[b] - kk * r->g.chunk_rows;
            if (rows > r->g.chunk_rows) rows = r->g.chunk_rows;
            if (cf__index_page(c, r, 0, k / r->g.fanout, &page, &ignored)) {
                cf__column_ccrc_reset_blob(c, b);
                return 0; /* damaged: unknown */
            }
            const unsigned char *rec = page + (k % r->g.fanout) * rb;
            if (!(cf__index_rec_flags(rec) & CF__INDEX_CRC)) continue;
            cf__ccrc_e *x = ccrc_entry(e, kk);
            if (!x) {
                cf__column_ccrc_reset_blob(c, b);
                break;
            }
            *x = (cf__ccrc_e){ kk, 0, rows * c->rowbytes, cf__index_rec_crc(rec) };
        }
    }
    return 0;
}

int cf__column_index_fill(cf_column *c, cf_error *err)
{
    if (c->kind != CF_KIND_DATA || !c->stat.stats.valid) return 0;
    int need = 0, any = 0;
    for (int64_t b = 0; b < c->h.nfile; b++) {
        need |= !c->stat.stats.valid[b] && c->h.rows[b] > 0;
        any |= c->stat.stats.valid[b] && c->h.rows[b] > 0;
    }
    /* a writer carries the chunk CRC32C of the blobs it leaves alone into
     * its commit's index */
    if (!need && !c->writable) return 0;
    cf__index_reader *r;
    int rc = index_open(c, &r, err);
    if (rc || r->state != CF_INDEX_CURRENT) return rc;
    if (!need) return crcs_fill(c, r);
    if (r->g.chunk_rows != c->stat.stats.chunk_rows) {
        if (any) return 0; /* statistics of two chunkings: keep the text's */
        cf__stats_free(&c->stat.stats);
        if ((rc = cf__stats_alloc(&c->stat.stats, &c->h, r->g.chunk_rows, c->path, err))) return rc;
    }
    int64_t nmemb = c->h.nmemb, rb = cf__index_rec_bytes(nmemb);
    char cls = cf__acc_class(&c->h.dtype);
    cf_error ignored;
    for (int64_t b = 0; b < c->h.nfile; b++) {
        int64_t nc = chunks_of(c, b, r->g.chunk_rows), k0 = r->first_chunk[b];
        if (c->stat.stats.valid[b] || nc == 0) continue;
        int ok = 1;
        for (int64_t kk = 0; ok && kk < nc; kk++) {
            const unsigned char *page;
            int64_t k = k0 + kk;
            if (cf__index_page(c, r, 0, k / r->g.fanout, &page, &ignored)) return 0; /* damaged: unknown */
            ok = (cf__index_rec_flags(page + (k % r->g.fanout) * rb) & CF__INDEX_STATS) != 0;
        }
        cf__acc *acc = ok ? cf__stats_chunks(&c->stat.stats, b, 0, nc) : NULL;
        for (int64_t kk = 0; acc && kk < nc; kk++) {
            const unsigned char *page;
            int64_t k = k0 + kk, rows = c->h.rows[b] - kk * r->g.chunk_rows;
            if (rows > r->g.chunk_rows) rows = r->g.chunk_rows;
            if (cf__index_page(c, r, 0, k / r->g.fanout, &page, &ignored)) {
                cf__stats_reset_blob(&c->stat.stats, b);
                return 0;
            }
            for (int64_t j = 0; j < nmemb; j++)
                cf__index_rec_acc(page + (k % r->g.fanout) * rb, j, cls, rows, &acc[kk * nmemb + j]);
        }
        if (acc) c->stat.stats.valid[b] = 1;
    }
    return c->writable ? crcs_fill(c, r) : 0;
}

/* ---- chunk CRC32C ------------------------------------------------------- */

void cf__column_ccrc_free(cf_column *c)
{
    index_free(c);
    cf__ccrc *t = c->stat.ccrc;
    if (!t) return;
    for (int64_t b = 0; b < t->nfile; b++) free(t->blob[b].e);
    free(t->blob);
    free(t);
    c->stat.ccrc = NULL;
}

void cf__column_ccrc_reset_blob(cf_column *c, int64_t b)
{
    cf__ccrc *t = c->stat.ccrc;
    if (!t || b >= t->nfile) return;
    free(t->blob[b].e);
    t->blob[b] = (cf__ccrc_blob){ 0, 0, NULL, 0 };
}

/* The entries of blob b, held from now on; NULL without memory. */
static cf__ccrc_blob *ccrc_blob(cf_column *c, int64_t b)
{
    cf__ccrc *t = c->stat.ccrc;
    if (!t && !(t = c->stat.ccrc = calloc(1, sizeof *t))) return NULL;
    if (b >= t->nfile) {
        int64_t nf = c->h.nfile > b ? c->h.nfile : b + 1;
        cf__ccrc_blob *nb = realloc(t->blob, sizeof *nb * (size_t)nf);
        if (!nb) return NULL;
        for (int64_t i = t->nfile; i < nf; i++) nb[i] = (cf__ccrc_blob){ 0, 0, NULL, 0 };
        t->blob = nb;
        t->nfile = nf;
    }
    return &t->blob[b];
}

/* The entry of chunk k (its position when absent: *found 0). */
static int64_t ccrc_find(const cf__ccrc_blob *x, int64_t k, int *found)
{
    int64_t lo = 0, hi = x->n;
    if (hi > 0 && x->e[hi - 1].k < k) lo = hi; /* appending: the common case */
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (x->e[mid].k < k) lo = mid + 1;
        else hi = mid;
    }
    *found = lo < x->n && x->e[lo].k == k;
    return lo;
}

/* The entry of chunk k, made empty where there was none; NULL without memory. */
static cf__ccrc_e *ccrc_entry(cf__ccrc_blob *x, int64_t k)
{
    int found;
    int64_t i = ccrc_find(x, k, &found);
    if (found) return &x->e[i];
    if (x->n == x->cap) {
        int64_t cap = x->cap ? 2 * x->cap : 16;
        cf__ccrc_e *e = realloc(x->e, sizeof *e * (size_t)cap);
        if (!e) return NULL;
        x->e = e;
        x->cap = cap;
    }
    memmove(&x->e[i + 1], &x->e[i], sizeof *x->e * (size_t)(x->n - i));
    x->n++;
    x->e[i] = (cf__ccrc_e){ k, 0, 0, 0 };
    return &x->e[i];
}

/* Blob b's chunk CRC32C unknown until its next first write: entries
 * dropped, later pieces (merged from other handles) ignored.  Without
 * memory even for that, every chunk of the handle is unknown (ccrc_nomem). */
static void lose_blob(cf_column *c, int64_t b)
{
    cf__column_ccrc_reset_blob(c, b);
    cf__ccrc_blob *x = ccrc_blob(c, b);
    if (x) x->lost = 1;
    else c->stat.ccrc_nomem = 1;
}

void cf__column_ccrc_add(cf_column *c, int64_t b, int64_t off, const unsigned char *p, int64_t n, uint32_t *sum,
                         uint32_t *crc)
{
    int64_t cb = c->stat.stats.chunk_rows * c->rowbytes;
    cf__ccrc_blob *blob = cb > 0 ? ccrc_blob(c, b) : NULL;
    if (!blob) {
        if (sum) cf__sum_crc32c(sum, crc, p, (size_t)n);
        else *crc = cf__crc32c_update(*crc, p, (size_t)n);
        if (cb > 0) lose_blob(c, b);
        return;
    }
    while (n > 0) {
        int64_t k = off / cb, in = off - k * cb, m = cb - in < n ? cb - in : n;
        uint32_t pc = 0;
        if (sum) cf__sum_crc32c(sum, &pc, p, (size_t)m);
        else pc = cf__crc32c_update(0, p, (size_t)m);
        *crc = cf__crc32c_combine(*crc, pc, (uint64_t)m);
        cf__ccrc_e *x = ccrc_entry(blob, k);
        if (!x) {
            /* no memory: this blob's chunks unknown, never wrong */
            lose_blob(c, b);
            blob = NULL;
        } else if (x->lo < 0) {
            /* pieces that did not join: unknown */
        } else if (x->lo == x->hi) {
            x->lo = in;
            x->hi = in + m;
            x->crc = pc;
        } else if (x->hi == in) {
            x->crc = cf__crc32c_combine(x->crc, pc, (uint64_t)m);
            x->hi = in + m;
        } else if (in + m == x->lo) {
            x->crc = cf__crc32c_combine(pc, x->crc, (uint64_t)(x->hi - x->lo));
            x->lo = in;
        } else {
            x->lo = -1;
        }
        p += m;
        off += m;
        n -= m;
        if (!blob && n > 0) {
            if (sum) cf__sum_crc32c(sum, crc, p, (size_t)n);
            else *crc = cf__crc32c_update(*crc, p, (size_t)n);
            return;
        }
    }
}

int cf__column_ccrc_get(const cf_column *c, int64_t b, int64_t kk, uint32_t *crc)
{
    const cf__ccrc *t = c->stat.ccrc;
    if (!t || c->stat.ccrc_nomem || b >= t->nfile || t->blob[b].lost ||
        kk >= chunks_of(c, b, c->stat.stats.chunk_rows))
        return 0;
    int found;
    int64_t i = ccrc_find(&t->blob[b], kk, &found);
    if (!found) return 0;
    int64_t rows = c->h.rows[b] - kk * c->stat.stats.chunk_rows;
    if (rows > c->stat.stats.chunk_rows) rows = c->stat.stats.chunk_rows;
    const cf__ccrc_e *x = &t->blob[b].e[i];
    if (x->lo != 0 || x->hi != rows * c->rowbytes) return 0;
    *crc = x->crc;
    return 1;
}

/* ---- chunk CRC32C pieces in the pending write state ------------------ */

int64_t cf__column_ccrc_npieces(const cf_column *c, int64_t b)
{
    const cf__ccrc *t = c->stat.ccrc;
    if (c->stat.ccrc_nomem) return -1;
    if (!t || b >= t->nfile) return 0;
    if (t->blob[b].lost) return -1;
    int64_t n = 0;
    for (int64_t i = 0; i < t->blob[b].n; i++) n += t->blob[b].e[i].lo != t->blob[b].e[i].hi;
    return n;
}

void cf__column_ccrc_put(const cf_column *c, int64_t b, cf__wire_out *o)
{
    const cf__ccrc *t = c->stat.ccrc;
    if (!t || b >= t->nfile || c->stat.ccrc_nomem || t->blob[b].lost) return;
    for (int64_t i = 0; i < t->blob[b].n; i++) {
        const cf__ccrc_e *x = &t->blob[b].e[i];
        if (x->lo == x->hi) continue;
        cf__wire_put_u64(o, (uint64_t)x->k);
        cf__wire_put_u64(o, x->lo < 0 ? UINT64_MAX : (uint64_t)x->lo);
        cf__wire_put_u64(o, x->lo < 0 ? 0 : (uint64_t)x->hi); /* (one form for unknown) */
        cf__wire_put_u32(o, x->crc);
    }
}

int64_t cf__column_ccrc_chunk_bytes(const cf_column *c, int64_t b, int64_t k)
{
    int64_t cr = c->stat.stats.chunk_rows;
    if (k < 0 || k >= chunks_of(c, b, cr)) return -1;
    int64_t rows = c->h.rows[b] - k * cr;
    return (rows < cr ? rows : cr) * c->rowbytes;
}

void cf__column_ccrc_join(cf_column *c, int64_t b, int64_t k, int64_t lo, int64_t hi, uint32_t crc)
{
    cf__ccrc_blob *blob = c->stat.ccrc_nomem ? NULL : ccrc_blob(c, b);
    if (!blob) {
        c->stat.ccrc_nomem = 1;
        return;
    }
    if (blob->lost) return;
    if (lo == -2) { /* the other handle lost them */
        lose_blob(c, b);
        return;
    }
    cf__ccrc_e *x = ccrc_entry(blob, k);
    if (!x) {
        lose_blob(c, b);
    } else if (x->lo < 0) {
        /* pieces that did not join: unknown */
    } else if (lo < 0) {
        x->lo = -1;
    } else if (x->lo == x->hi) {
        x->lo = lo;
        x->hi = hi;
        x->crc = crc;
    } else if (x->hi == lo) {
        x->crc = cf__crc32c_combine(x->crc, crc, (uint64_t)(hi - lo));
        x->hi = hi;
    } else if (hi == x->lo) {
        x->crc = cf__crc32c_combine(crc, x->crc, (uint64_t)(x->hi - x->lo));
        x->lo = lo;
    } else {
        x->lo = -1; /* overlapping or apart: unknown, never wrong */
    }
}
