/* stindex_part.c - parent records of colfile-index-v1 from pieces
 * (stindex_part.h). */
#include "stindex_part.h"

#include <stdlib.h>
#include <string.h>

#include "checksum.h"
#include "error.h"
#include "stindex.h"

void cf__index_pieces_free(cf__index_piece *pieces, int64_t n)
{
    for (int64_t i = 0; pieces && i < n; i++) free(pieces[i].acc);
    free(pieces);
}

int cf__index_pieces(const unsigned char *recs, int64_t first, int64_t n, const int64_t *rows, int64_t nmemb,
                     const cf__dtype *dt, int64_t fanout, cf__index_piece **pieces, int64_t *npieces,
                     const char *path, cf_error *err)
{
    *pieces = NULL;
    *npieces = 0;
    if (n < 0 || first < 0 || nmemb < 1 || fanout < 2 || (n && (!recs || !rows)))
        return CF_FAIL(err, CF_EARG, "%s: cf__index_pieces: bad arguments", path);
    if (n == 0) return 0;
    const int64_t rb = cf__index_rec_bytes(nmemb), np = (first + n - 1) / fanout - first / fanout + 1;
    const char cls = cf__acc_class(dt);
    cf__index_piece *out = calloc((size_t)np, sizeof *out);
    cf__acc child;
    if (!out) return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", path);
    for (int64_t i = 0, at = 0; i < np; i++) {
        cf__index_piece *p = &out[i];
        int64_t page = first / fanout + i, end = (page + 1) * fanout - first;
        if (end > n) end = n;
        if (!(p->acc = malloc((size_t)nmemb * sizeof *p->acc))) {
            cf__index_pieces_free(out, np);
            return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", path);
        }
        p->page = page;
        p->n = end - at;
        p->stats = CF__INDEX_STATS;
        p->crc = cf__crc32c_update(0, recs + at * rb, (size_t)(p->n * rb));
        for (int64_t j = 0; j < nmemb; j++) cf__acc_init(&p->acc[j], dt);
        /* as cf__index_build: children read back from their records */
        for (; at < end; at++) {
            const unsigned char *rec = recs + at * rb;
            p->rows += rows[at];
            p->stats &= cf__index_rec_flags(rec) & CF__INDEX_STATS;
            for (int64_t j = 0; p->stats && j < nmemb; j++) {
                cf__index_rec_acc(rec, j, cls, rows[at], &child);
                cf__acc_merge(&p->acc[j], &child, dt);
            }
        }
    }
    *pieces = out;
    *npieces = np;
    return 0;
}

void cf__index_piece_join(cf__index_piece *a, const cf__index_piece *b, int64_t nmemb, const cf__dtype *dt)
{
    a->crc = cf__crc32c_combine(a->crc, b->crc, (uint64_t)(b->n * cf__index_rec_bytes(nmemb)));
    a->n += b->n;
    a->rows += b->rows;
    a->stats &= b->stats;
    for (int64_t j = 0; a->stats && j < nmemb; j++) cf__acc_merge(&a->acc[j], &b->acc[j], dt);
}

void cf__index_piece_record(const cf__index_piece *p, int64_t nmemb, const cf__dtype *dt, unsigned char *rec)
{
    for (int i = 0; i < 4; i++) rec[i] = (unsigned char)(p->crc >> (8 * i));
    for (int i = 0; i < 4; i++) rec[4 + i] = (unsigned char)(p->stats >> (8 * i));
    cf__index_put_stats(rec, p->stats ? p->acc : NULL, nmemb, cf__acc_class(dt));
}
