/* stindex_fine.c - the bytes of the fine level of colfile-index-v1
 * (stindex_fine.h; docs/format.md 8.6). */
#include "stindex_fine.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "checksum.h"
#include "error.h"
#include "wire.h"

static void putd(unsigned char *p, double d)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    memcpy(p, &d, 8); /* the file's order already */
#else
    uint64_t u;
    memcpy(&u, &d, 8);
    cf__le_put64(p, u);
#endif
}

uint32_t cf__index_fine_crc(int64_t k, const unsigned char *block, int64_t bytes)
{
    unsigned char kb[8];
    cf__le_put64(kb, (uint64_t)k);
    return cf__crc32c_update(cf__crc32c_update(0, kb, 8), block + 4, (size_t)(bytes - 4));
}

/* One chunk's block: known when the blob's statistics are, the chunk's
 * accumulators count its rows, and each sub-chunk counted its own rows. */
static void fine_block(const cf__stats *s, int64_t b, int64_t kk, int64_t rows, int ok, unsigned char *out,
                       int64_t bytes)
{
    const int64_t nmemb = s->nmemb, m = s->fine_m;
    const cf__fine *f = ok ? cf__stats_fine(s, b, kk) : NULL;
    const cf__acc *a = ok ? cf__stats_peek(s, b, kk) : NULL;
    int known = f && a;
    for (int64_t j = 0; known && j < nmemb; j++) known = a[j].count == rows;
    for (int64_t i = 0; known && i < m; i++) {
        int64_t r = rows - i * s->fine_rows;
        r = r < 0 ? 0 : r < s->fine_rows ? r : s->fine_rows;
        for (int64_t j = 0; known && j < nmemb; j++) known = f[i * nmemb + j].count == r;
    }
    memset(out, 0, (size_t)bytes);
    cf__le_put32(out + 4, known ? CF__FINE_KNOWN : 0u);
    for (int64_t i = 0; known && i < m; i++)
        for (int64_t j = 0; j < nmemb; j++) {
            double lo = INFINITY, hi = -INFINITY; /* sub-chunks past the chunk's rows: empty */
            if (f[i * nmemb + j].count) cf__fine_bounds(&f[i * nmemb + j], s->cls, &lo, &hi);
            putd(out + 8 + 16 * (i * nmemb + j), lo);
            putd(out + 16 + 16 * (i * nmemb + j), hi);
        }
    cf__le_put32(out, 0); /* not covered by its own CRC32C */
}

int cf__index_fine_append(const cf__stats *s, const cf__header *h, const unsigned char *usable, unsigned char **buf,
                          size_t *len, int64_t *added, const char *path, cf_error *err)
{
    *added = 0;
    const int64_t nchunks = s->first_chunk ? s->first_chunk[h->nfile] : 0;
    if (!s->fine_m || nchunks == 0 || h->nmemb < 1) return 0;
    const int64_t block = cf__fine_block_bytes(s->fine_m, h->nmemb);
    if (nchunks > (INT64_MAX - CF__FINE_HEAD - (int64_t)*len) / block)
        return CF_FAIL(err, CF_ENOMEM, "%s: fine level too large", path);
    const int64_t bytes = CF__FINE_HEAD + nchunks * block;
    unsigned char *nb = realloc(*buf, *len + (size_t)bytes);
    if (!nb) return CF_FAIL(err, CF_ENOMEM, "%s: out of memory for the fine level (%lld bytes)", path, (long long)bytes);
    *buf = nb;
    unsigned char *hd = nb + *len, *out = hd + CF__FINE_HEAD;
    memset(hd, 0, CF__FINE_HEAD);
    memcpy(hd, CF__FINE_MAGIC, 8);
    cf__le_put32(hd + 8, CF__FINE_VERSION);
    cf__le_put32(hd + 12, CF__FINE_HEAD);
    cf__le_put64(hd + 16, (uint64_t)s->fine_rows);
    cf__le_put64(hd + 24, (uint64_t)s->fine_m);
    cf__le_put64(hd + 32, (uint64_t)nchunks);
    cf__le_put64(hd + 40, (uint64_t)block);
    cf__le_put32(hd + 60, cf__crc32c_update(0, hd, 60));
    for (int64_t b = 0, k = 0; b < h->nfile; b++) {
        int64_t nc = cf__stats_blob_chunks(s, b);
        int ok = s->valid[b] && (!usable || usable[b]) && cf__stats_blob_whole(s, b);
        for (int64_t kk = 0; kk < nc; kk++, k++, out += block) {
            int64_t r = h->rows[b] - kk * s->chunk_rows;
            fine_block(s, b, kk, r < s->chunk_rows ? r : s->chunk_rows, ok, out, block);
            cf__le_put32(out, cf__index_fine_crc(k, out, block));
        }
    }
    *len += (size_t)bytes;
    *added = bytes;
    return 0;
}

int cf__index_fine_parse(cf__fine_geom *g, const unsigned char *hd, int64_t at, int64_t bytes, int64_t nchunks,
                         int64_t nmemb, int64_t chunk_rows, const char *path, cf_error *err)
{
    memset(g, 0, sizeof *g);
    if (memcmp(hd, CF__FINE_MAGIC, 8) != 0 || cf__le_get32(hd + 60) != cf__crc32c_update(0, hd, 60))
        return CF_FAIL(err, CF_EFORMAT, "%s: the fine level's head is damaged (bad magic or CRC32C)", path);
    if (cf__le_get32(hd + 8) != CF__FINE_VERSION || cf__le_get32(hd + 12) != CF__FINE_HEAD)
        return CF_FAIL(err, CF_EFORMAT, "%s: fine level version %u is not known to this colfile", path,
                       (unsigned)cf__le_get32(hd + 8));
    uint64_t sub = cf__le_get64(hd + 16), m = cf__le_get64(hd + 24), nch = cf__le_get64(hd + 32), block = cf__le_get64(hd + 40);
    if (sub < 1 || sub > ((uint64_t)1 << 52) || m < 2 || m > CF__FINE_MAX_PER_CHUNK || nch != (uint64_t)nchunks ||
        block != (uint64_t)cf__fine_block_bytes((int64_t)m, nmemb) ||
        (nchunks > 0 && (uint64_t)(bytes - CF__FINE_HEAD) / (uint64_t)nchunks != block) ||
        bytes != CF__FINE_HEAD + nchunks * (int64_t)block || m * sub < (uint64_t)chunk_rows ||
        (m - 1) * sub >= (uint64_t)chunk_rows)
        return CF_FAIL(err, CF_EFORMAT, "%s: the fine level's head does not match the index (damaged)", path);
    g->sub_rows = (int64_t)sub;
    g->m = (int64_t)m;
    g->nchunks = nchunks;
    g->block = (int64_t)block;
    g->offset = at + CF__FINE_HEAD;
    return 0;
}
