/* stindex.c - the bytes of the binary chunk index `colfile-index-v1`
 * (stindex.h; docs/format.md 8.6). */
#include "stindex.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "checksum.h"
#include "error.h"
#include "wire.h"
#include "stindex_fine.h"

static uint64_t dbits(double d)
{
    uint64_t u;
    memcpy(&u, &d, 8);
    return u;
}

static double bitsd(uint64_t u)
{
    double d;
    memcpy(&d, &u, 8);
    return d;
}

int cf__index_levels(int64_t nchunks, int64_t fanout, int64_t *count)
{
    int l = 0;
    count[0] = nchunks;
    while (count[l] > fanout && l + 1 < CF__INDEX_LEVELS_MAX) {
        count[l + 1] = (count[l] + fanout - 1) / fanout;
        l++;
    }
    return l + 1;
}

uint32_t cf__index_rec_crc(const unsigned char *rec) { return cf__le_get32(rec); }
uint32_t cf__index_rec_flags(const unsigned char *rec) { return cf__le_get32(rec + 4); }

void cf__index_rec_acc(const unsigned char *rec, int64_t j, char cls, int64_t count, cf__acc *out)
{
    const unsigned char *p = rec + 8 + 32 * j;
    memset(out, 0, sizeof *out);
    out->count = count;
    out->nan = (int64_t)cf__le_get64(p);
    uint64_t mn = cf__le_get64(p + 8), mx = cf__le_get64(p + 16);
    if (cls == 'i') {
        out->v.i.min = (int64_t)mn;
        out->v.i.max = (int64_t)mx;
    } else if (cls == 'u') {
        out->v.u.min = mn;
        out->v.u.max = mx;
    } else if (cls == 'f') {
        out->v.f.min = bitsd(mn);
        out->v.f.max = bitsd(mx);
    }
    cf__xsum_set_f8(&out->xs, bitsd(cf__le_get64(p + 24)));
}

/* (stindex.h) */
void cf__index_put_stats(unsigned char *rec, const cf__acc *a, int64_t nmemb, char cls)
{
    memset(rec + 8, 0, (size_t)(32 * nmemb));
    if (!a) return;
    for (int64_t j = 0; j < nmemb; j++) {
        unsigned char *p = rec + 8 + 32 * j;
        cf__le_put64(p, (uint64_t)a[j].nan);
        if (cls == 'i') {
            cf__le_put64(p + 8, (uint64_t)a[j].v.i.min);
            cf__le_put64(p + 16, (uint64_t)a[j].v.i.max);
        } else if (cls == 'u') {
            cf__le_put64(p + 8, a[j].v.u.min);
            cf__le_put64(p + 16, a[j].v.u.max);
        } else if (cls == 'f') {
            cf__le_put64(p + 8, dbits(a[j].v.f.min));
            cf__le_put64(p + 16, dbits(a[j].v.f.max));
        }
        cf__le_put64(p + 24, dbits(cf__acc_sum(&a[j])));
    }
}

int cf__index_layout(int64_t nchunks, int64_t nmemb, int64_t *count, int64_t *offset, int64_t *size)
{
    const int64_t rb = cf__index_rec_bytes(nmemb), f = CF__INDEX_FANOUT;
    int nl = cf__index_levels(nchunks, f, count);
    if (count[nl - 1] > f) return 0;
    int64_t at = CF__INDEX_HEAD + 16 * nl + 4;
    /* the top level first: a planner reads the coarse levels together */
    for (int l = nl - 1; l >= 0; l--) {
        offset[l] = at;
        at += count[l] * rb;
    }
    *size = at;
    return nl;
}

void cf__index_level0(const cf__stats *s, const cf__header *h, const unsigned char *ok, int64_t k0, int64_t k1,
                      const uint32_t *crc, const unsigned char *known, unsigned char *out)
{
    const int64_t nmemb = h->nmemb, rb = cf__index_rec_bytes(nmemb);
    const char cls = cf__acc_class(&h->dtype);
    int64_t lo = 0, hi = h->nfile; /* the blob of chunk k0: first_chunk[b] <= k0 < first_chunk[b + 1] */
    while (hi - lo > 1) {
        int64_t mid = lo + (hi - lo) / 2;
        if (s->first_chunk[mid] <= k0) lo = mid;
        else hi = mid;
    }
    for (int64_t b = lo, k = k0; b < h->nfile && k < k1; b++) {
        for (int64_t kk = k - s->first_chunk[b]; k < s->first_chunk[b + 1] && k < k1; kk++, k++) {
            unsigned char *rec = out + (k - k0) * rb;
            const cf__acc *a = ok[b] ? cf__stats_peek(s, b, kk) : NULL;
            int has = known && known[k - k0];
            cf__le_put32(rec, has ? crc[k - k0] : 0);
            cf__le_put32(rec + 4, (a ? CF__INDEX_STATS : 0) | (has ? CF__INDEX_CRC : 0));
            cf__index_put_stats(rec, a, nmemb, cls);
        }
    }
}

void cf__index_put_head(unsigned char *hd, const char *token, int64_t nmemb, int64_t nfile, int64_t chunk_rows,
                        int64_t nchunks, uint32_t top_crc, int64_t fine_bytes)
{
    int64_t count[CF__INDEX_LEVELS_MAX], offset[CF__INDEX_LEVELS_MAX], size = 0;
    int nl = cf__index_layout(nchunks, nmemb, count, offset, &size);
    memset(hd, 0, CF__INDEX_HEAD);
    memcpy(hd, CF__INDEX_MAGIC, 8);
    cf__le_put32(hd + 8, CF__INDEX_VERSION);
    cf__le_put32(hd + 12, CF__INDEX_HEAD);
    memcpy(hd + 16, token, strlen(token));
    cf__le_put64(hd + 32, (uint64_t)nmemb);
    cf__le_put64(hd + 40, (uint64_t)nfile);
    cf__le_put64(hd + 48, (uint64_t)chunk_rows);
    cf__le_put64(hd + 56, (uint64_t)nchunks);
    cf__le_put32(hd + 64, (uint32_t)CF__INDEX_FANOUT);
    cf__le_put32(hd + 68, (uint32_t)nl);
    cf__le_put32(hd + 72, top_crc);
    cf__le_put64(hd + 80, (uint64_t)size);
    cf__le_put64(hd + CF__INDEX_FINE_AT, (uint64_t)fine_bytes);
    cf__le_put32(hd + 124, cf__crc32c_update(0, hd, 124));
    for (int l = 0; l < nl; l++) {
        cf__le_put64(hd + CF__INDEX_HEAD + 16 * l, (uint64_t)offset[l]);
        cf__le_put64(hd + CF__INDEX_HEAD + 16 * l + 8, (uint64_t)count[l]);
    }
    cf__le_put32(hd + CF__INDEX_HEAD + 16 * nl, cf__crc32c_update(0, hd + CF__INDEX_HEAD, (size_t)(16 * nl)));
}

int cf__index_build(const cf__stats *s, const cf__header *h, const char *token, const unsigned char *usable,
                    const uint32_t *crc, const unsigned char *known, unsigned char **out, size_t *len,
                    const char *path, cf_error *err)
{
    const int64_t nmemb = h->nmemb, rb = cf__index_rec_bytes(nmemb), f = CF__INDEX_FANOUT;
    const int64_t nchunks = s->first_chunk ? s->first_chunk[h->nfile] : 0;
    const char cls = cf__acc_class(&h->dtype);
    int64_t count[CF__INDEX_LEVELS_MAX], offset[CF__INDEX_LEVELS_MAX], size = 0;
    int nl = cf__index_layout(nchunks, nmemb, count, offset, &size);
    if (nl == 0) return CF_FAIL(err, CF_EARG, "%s: too many chunks for an index", path);
    if (strlen(token) > 16) return CF_FAIL(err, CF_EARG, "%s: dtype token too long for an index", path);
    unsigned char *buf = calloc(1, (size_t)size), *ok = malloc((size_t)(h->nfile ? h->nfile : 1));
    int64_t *rows = malloc(sizeof *rows * (size_t)(count[0] ? count[0] : 1));
    cf__acc *acc = malloc(sizeof *acc * (size_t)(nmemb ? nmemb : 1));
    cf__acc *child = malloc(sizeof *child * (size_t)(nmemb ? nmemb : 1));
    if (!buf || !ok || !rows || !acc || !child) {
        free(buf);
        free(ok);
        free(rows);
        free(acc);
        free(child);
        return CF_FAIL(err, CF_ENOMEM, "%s: out of memory building an index of %lld bytes", path, (long long)size);
    }
    /* level 0: one record per chunk, blob by blob */
    for (int64_t b = 0, k = 0; b < h->nfile; b++) {
        int64_t nc = cf__stats_blob_chunks(s, b);
        ok[b] = s->valid[b] && (!usable || usable[b]) && cf__stats_blob_whole(s, b);
        for (int64_t kk = 0; kk < nc; kk++, k++) {
            int64_t r = h->rows[b] - kk * s->chunk_rows;
            rows[k] = r < s->chunk_rows ? r : s->chunk_rows;
        }
    }
    if (nchunks) cf__index_level0(s, h, ok, 0, nchunks, crc, known, buf + offset[0]);
    free(ok);
    /* each level above: merged children, and the CRC32C of their page */
    for (int l = 0; l + 1 < nl; l++) {
        for (int64_t i = 0; i < count[l + 1]; i++) {
            int64_t c0 = i * f, c1 = c0 + f < count[l] ? c0 + f : count[l], total = 0;
            unsigned char *rec = buf + offset[l + 1] + i * rb;
            uint32_t all = CF__INDEX_STATS;
            for (int64_t j = 0; j < nmemb; j++) cf__acc_init(&acc[j], &h->dtype);
            for (int64_t c = c0; c < c1; c++) {
                const unsigned char *cr = buf + offset[l] + c * rb;
                total += rows[c];
                all &= cf__index_rec_flags(cr) & CF__INDEX_STATS;
                for (int64_t j = 0; all && j < nmemb; j++) {
                    cf__index_rec_acc(cr, j, cls, rows[c], &child[j]);
                    cf__acc_merge(&acc[j], &child[j], &h->dtype);
                }
            }
            rows[i] = total; /* i <= c0: read already */
            cf__le_put32(rec, cf__crc32c_update(0, buf + offset[l] + c0 * rb, (size_t)((c1 - c0) * rb)));
            cf__le_put32(rec + 4, all);
            cf__index_put_stats(rec, all ? acc : NULL, nmemb, cls);
        }
    }
    free(rows);
    free(acc);
    free(child);
    size_t total = (size_t)size;
    int64_t fine = 0;
    int rc = cf__index_fine_append(s, h, usable, &buf, &total, &fine, path, err);
    if (rc) {
        free(buf);
        return rc;
    }
    cf__index_put_head(buf, token, nmemb, h->nfile, s->chunk_rows, nchunks,
                       cf__crc32c_update(0, buf + offset[nl - 1], (size_t)(count[nl - 1] * rb)), fine);
    *out = buf;
    *len = total;
    return 0;
}

int cf__index_parse_head(cf__index_geom *g, const unsigned char *buf, size_t len, int64_t file_size,
                         const char *path, cf_error *err)
{
    memset(g, 0, sizeof *g);
    if (len < CF__INDEX_HEAD || memcmp(buf, CF__INDEX_MAGIC, 8) != 0)
        return CF_FAIL(err, CF_EFORMAT, "%s: not a colfile chunk index (bad magic or shorter than its head)", path);
    if (cf__le_get32(buf + 124) != cf__crc32c_update(0, buf, 124))
        return CF_FAIL(err, CF_EFORMAT, "%s: the index head fails its CRC32C (damaged)", path);
    if (cf__le_get32(buf + 8) != CF__INDEX_VERSION || cf__le_get32(buf + 12) != CF__INDEX_HEAD)
        return CF_FAIL(err, CF_EFORMAT, "%s: index version %u is not known to this colfile", path,
                       (unsigned)cf__le_get32(buf + 8));
    memcpy(g->token, buf + 16, 16);
    g->token[16] = '\0';
    uint64_t nmemb = cf__le_get64(buf + 32), nfile = cf__le_get64(buf + 40), crows = cf__le_get64(buf + 48), nch = cf__le_get64(buf + 56);
    g->fanout = cf__le_get32(buf + 64);
    g->nlevels = (int)cf__le_get32(buf + 68);
    g->top_crc = cf__le_get32(buf + 72);
    uint64_t size = cf__le_get64(buf + 80);
    if (nmemb < 1 || nmemb > (uint64_t)CF__NMEMB_MAX || nfile > (uint64_t)CF__NFILE_MAX || crows < 1 ||
        crows > ((uint64_t)1 << 62) || nch > ((uint64_t)1 << 62) || g->fanout < CF__INDEX_FANOUT_MIN ||
        g->fanout > CF__INDEX_FANOUT_MAX || g->nlevels < 1 || g->nlevels > CF__INDEX_LEVELS_MAX)
        return CF_FAIL(err, CF_EFORMAT, "%s: index head out of range (damaged)", path);
    g->nmemb = (int64_t)nmemb;
    g->nfile = (int64_t)nfile;
    g->chunk_rows = (int64_t)crows;
    g->nchunks = (int64_t)nch;
    g->table_end = CF__INDEX_HEAD + 16 * g->nlevels + 4;
    if ((int64_t)len < g->table_end)
        return CF_FAIL(err, CF_EFORMAT, "%s: index shorter than its level table (truncated)", path);
    if (cf__le_get32(buf + g->table_end - 4) != cf__crc32c_update(0, buf + CF__INDEX_HEAD, (size_t)(16 * g->nlevels)))
        return CF_FAIL(err, CF_EFORMAT, "%s: the index level table fails its CRC32C (damaged)", path);
    int64_t want[CF__INDEX_LEVELS_MAX];
    int nl = cf__index_levels(g->nchunks, g->fanout, want);
    if (nl != g->nlevels || want[nl - 1] > g->fanout)
        return CF_FAIL(err, CF_EFORMAT, "%s: index levels do not match its chunk count (damaged)", path);
    /* records must fit the file: no level overlaps the head, none ends past it */
    int64_t rb = cf__index_rec_bytes(g->nmemb);
    for (int l = 0; l < nl; l++) {
        g->offset[l] = (int64_t)cf__le_get64(buf + CF__INDEX_HEAD + 16 * l);
        g->count[l] = (int64_t)cf__le_get64(buf + CF__INDEX_HEAD + 16 * l + 8);
        if (g->count[l] != want[l] || g->offset[l] < g->table_end || g->offset[l] > (int64_t)size ||
            (g->count[l] > 0 && ((int64_t)size - g->offset[l]) / g->count[l] < rb))
            return CF_FAIL(err, CF_EFORMAT, "%s: index level %d lies outside the file (damaged)", path, l);
    }
    g->size = (int64_t)size;
    if (file_size < g->size)
        return CF_FAIL(err, CF_EFORMAT, "%s: index of %lld bytes where its head says %lld (truncated)", path,
                       (long long)file_size, (long long)g->size);
    return 0;
}
