/* stindex_fine.h - the fine level of colfile-index-v1 (internal): min and
 * max per sub-chunk and component, in one block per chunk after the
 * levels, so that a planner refines exactly the chunks the levels above
 * could not decide, reading their blocks alone.  Format: docs/format.md
 * 8.6, "The fine level". */
#ifndef CF_STINDEX_FINE_H
#define CF_STINDEX_FINE_H

#include <stddef.h>
#include <stdint.h>

#include "colfile.h"
#include "header.h"
#include "stats.h"

#define CF__FINE_MAGIC "\x89" "CFF\r\n\x1a\n"
#define CF__FINE_VERSION 1u
#define CF__FINE_HEAD 64
/* where the index head records the fine section's size (0: none) */
#define CF__INDEX_FINE_AT 88

/* flags of a block */
#define CF__FINE_KNOWN 1u /* every value of the chunk went into its sub-chunks */

/* Bytes of one chunk's block: CRC32C, flags, then min and max (8 + 8) per
 * sub-chunk i and component j, i major. */
static inline int64_t cf__fine_block_bytes(int64_t m, int64_t nmemb) { return 8 + 16 * m * nmemb; }

/* What a fine section's head says. */
typedef struct cf__fine_geom {
    int64_t sub_rows, m, nchunks, block; /* rows per sub-chunk, sub-chunks per chunk, chunks, block bytes */
    int64_t offset;                       /* of the first block in the file */
} cf__fine_geom;

/* The fine section for the statistics s of header h (blobs usable as
 * cf__index_build decides), appended to *buf (of *len bytes, realloc'd);
 * *added its bytes, 0 when the column has no fine level.  CF_ENOMEM. */
int cf__index_fine_append(const cf__stats *s, const cf__header *h, const unsigned char *usable, unsigned char **buf,
                          size_t *len, int64_t *added, const char *path, cf_error *err);

/* Parse a fine section's head (CF__FINE_HEAD bytes at `at`, the index's
 * size) for an index of nchunks chunks of chunk_rows rows and nmemb
 * components whose head
 * says it has `bytes` bytes.  CF_EFORMAT naming path and the problem. */
int cf__index_fine_parse(cf__fine_geom *g, const unsigned char *hd, int64_t at, int64_t bytes, int64_t nchunks,
                         int64_t nmemb, int64_t chunk_rows, const char *path, cf_error *err);

/* The CRC32C a block of chunk k holds (over k and the rest of it). */
uint32_t cf__index_fine_crc(int64_t k, const unsigned char *block, int64_t bytes);

#endif
