/* column_index_fine.c - the fine level of a column's chunk index as
 * readers see it: each chunk's block read and checked against its CRC32C,
 * its sub-chunks' bounds as records (docs/format.md 8.6, the fine level). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "column_index.h"
#include "column_index_reader.h"
#include "error.h"
#include "fsutil.h"

/* Chunk k's block of the fine level, read and checked against its CRC32C. */
static int fine_block(cf_column *c, cf__index_reader *r, int64_t k, const unsigned char **out, cf_error *err)
{
    if (r->fine_k == k && r->block) {
        *out = r->block;
        return 0;
    }
    size_t bytes = (size_t)r->fg.block, got = 0;
    if (!r->block && !(r->block = malloc(bytes))) return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", c->path);
    r->fine_k = -1;
    char path[CF_ERROR_MESSAGE_MAX / 2];
    snprintf(path, sizeof path, "%s/%s", c->path, CF__INDEX_NAME);
    int rc = cf__pread_all(r->fd, r->block, bytes, r->fg.offset + k * r->fg.block, &got, path, err);
    if (rc) return rc;
    r->bytes_read += (int64_t)got;
    if (got < bytes || cf__index_fine_crc(k, r->block, r->fg.block) != ((uint32_t)r->block[0] |
        (uint32_t)r->block[1] << 8 | (uint32_t)r->block[2] << 16 | (uint32_t)r->block[3] << 24)) {
        /* the fine level alone is unusable from now on; the levels are not */
        r->fine = 0;
        return CF_FAIL(err, CF_EFORMAT, "%s: the fine level's block of chunk %lld is %s (`colfile index` "
                       "rebuilds the index)", path, (long long)k, got < bytes ? "cut short" : "damaged");
    }
    r->fine_k = k;
    *out = r->block;
    return 0;
}

/* (column_index_reader.h) */
int cf__index_fine_nodes(cf_column *c, cf__index_reader *r, int64_t first, int64_t n, int64_t j, cf_chunk_stats *out,
                         cf_error *err)
{
    const cf__index_geom *g = &r->g;
    const int64_t m = r->fg.m, rb = cf__index_rec_bytes(g->nmemb);
    const char cls = cf__acc_class(&c->h.dtype);
    for (int64_t i = 0; i < n; i++) {
        int64_t q = first + i, k = q / m, sub = q % m, b;
        const unsigned char *page, *block = NULL;
        int rc = cf__index_page(c, r, 0, k / g->fanout, &page, err);
        if (rc == 0) rc = fine_block(c, r, k, &block, err);
        if (rc) return rc;
        const unsigned char *rec = page + (k % g->fanout) * rb;
        int64_t row0 = cf__index_chunk_first_row(c, r, k, &b);
        int64_t end = row0 + g->chunk_rows < c->first_row[b + 1] ? row0 + g->chunk_rows : c->first_row[b + 1];
        int64_t a = row0 + sub * r->fg.sub_rows, z = a + r->fg.sub_rows;
        a = a < end ? a : end;
        z = z < end ? z : end;
        cf__acc chunk;
        cf__index_rec_acc(rec, j, cls, end - row0, &chunk);
        /* usable where the chunk's statistics are, its block is known and
         * the chunk has no NaN (NaNs are not located within a chunk) */
        uint32_t flags = (uint32_t)block[4] | (uint32_t)block[5] << 8;
        int valid = (cf__index_rec_flags(rec) & CF__INDEX_STATS) && (flags & CF__FINE_KNOWN) && chunk.nan == 0 &&
                    z > a;
        if (valid && c->writable) valid = cf__column_first_touch(c, b) && !c->sums.unsynced[b];
        memset(&out[i], 0, sizeof out[i]);
        out[i].blob = b;
        out[i].first_row = a;
        out[i].rows = z - a;
        out[i].valid = valid;
        out[i].ordered = cls != 0;
        out[i].sum = NAN;
        out[i].min = out[i].max = NAN;
        if (valid) {
            const unsigned char *p = block + 8 + 16 * (sub * g->nmemb + j);
            uint64_t lo = 0, hi = 0;
            for (int t = 7; t >= 0; t--) {
                lo = (lo << 8) | p[t];
                hi = (hi << 8) | p[8 + t];
            }
            memcpy(&out[i].min, &lo, 8);
            memcpy(&out[i].max, &hi, 8);
            out[i].count = z - a;
        }
    }
    return 0;
}

