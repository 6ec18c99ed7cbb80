/* stindex_part.h - the levels of colfile-index-v1 above the chunks, built
 * from ranges of records that different processes hold (internal).
 *
 * A parent record (docs/format.md 8.6) holds the CRC32C of its page (its
 * children's bytes), whether every child has statistics, and the children
 * merged.  All three combine: CRC32C by cf__crc32c_combine, the flag by
 * AND, the accumulators exactly (stats.h).  So each process summarises the
 * records it wrote into one piece per page it touches; pieces of one page
 * joined in order (in any grouping: a neighbour exchange, a tree, a root
 * collecting a few per process) give the parent record cf__index_build
 * writes, byte for byte. */
#ifndef CF_STINDEX_PART_H
#define CF_STINDEX_PART_H

#include <stdint.h>

#include "colfile.h"
#include "stats.h"

/* Consecutive children of one page, summarised. */
typedef struct cf__index_piece {
    int64_t page;   /* the parent: its record number one level up */
    int64_t n;      /* children (records) covered */
    int64_t rows;   /* the rows below them */
    uint32_t crc;   /* CRC32C of their bytes */
    uint32_t stats; /* CF__INDEX_STATS when every child has statistics */
    cf__acc *acc;   /* nmemb: the children merged (meaningful with stats) */
} cf__index_piece;

/* Pieces of records recs[0 .. n) of one level (each cf__index_rec_bytes
 * long, rows[i] rows below record i), the first being record number
 * `first` of its level, under pages of fanout records: one piece per page
 * touched, in order.  *pieces malloc'd (cf__index_pieces_free).  CF_EARG,
 * CF_ENOMEM; path names the column in messages. */
int cf__index_pieces(const unsigned char *recs, int64_t first, int64_t n, const int64_t *rows, int64_t nmemb,
                     const cf__dtype *dt, int64_t fanout, cf__index_piece **pieces, int64_t *npieces,
                     const char *path, cf_error *err);

/* Piece b (the children right after a's, same page) joined into a. */
void cf__index_piece_join(cf__index_piece *a, const cf__index_piece *b, int64_t nmemb, const cf__dtype *dt);

/* The parent record of a page whose pieces are all joined into p (rec:
 * cf__index_rec_bytes(nmemb) bytes). */
void cf__index_piece_record(const cf__index_piece *p, int64_t nmemb, const cf__dtype *dt, unsigned char *rec);

void cf__index_pieces_free(cf__index_piece *pieces, int64_t n);

#endif
