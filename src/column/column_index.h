/* column_index.h - a column's binary chunk index (colfile-index-v1,
 * stindex.h) and its chunk CRC32C values (internal): what a commit writes,
 * what a reader reads from it page by page, and the statistics a handle
 * takes from it when the text holds none. */
#ifndef CF_COLUMN_INDEX_H
#define CF_COLUMN_INDEX_H

#include <stddef.h>
#include <stdint.h>

#include "column.h"

struct cf__wire_out;

/* Chunks from which a commit writes the index (smaller columns have their
 * statistics in the text alone: one file less per commit). */
#define CF__INDEX_MIN_CHUNKS 1024
/* ... or, with a fine level, from this many sub-chunks (2^19 rows of f8):
 * the fine level is what lets a selective query on a column of few chunks
 * read less than its chunks. */
#define CF__INDEX_MIN_SUBCHUNKS 1024
/* the level number of the fine level in cf_column_index_count/_nodes */
#define CF__INDEX_FINE (-1)
/* Chunk records (chunks x components) above which the statistics text of
 * colfile-v1 holds no chunk lines (about 100 bytes each, read whole
 * before planning): the index has them. */
#define CF__STATS_TEXT_RECORDS_MAX ((int64_t)1 << 16)

/* 1 if the statistics text of c, as a commit writes it now, holds its
 * chunk lines: not more than CF__STATS_TEXT_RECORDS_MAX of them, or no
 * index to hold them instead. */
int cf__column_stats_in_text(const cf_column *c);

/* The statistics section a commit writes (docs/format.md 8.4: without
 * chunk lines when there are too many).  *text malloc'd. */
int cf__column_stats_section(cf_column *c, char **text, size_t *len, cf_error *err);

/* 1 if a commit of c writes colfile-index-v1: statistics are known for
 * at least a quarter of its chunks (so that its size follows what is
 * known, not the rows a header claims), and it has CF__INDEX_MIN_CHUNKS
 * chunks or more chunk records than the text holds. */
int cf__column_index_wanted(const cf_column *c);

/* Write colfile-index-v1 after colfile-v1 (given the header's stamp, as
 * colfile-v1 is), or, when none is wanted, remove one this handle knows
 * of.  private_ and keep as for the other metadata files of a commit
 * (in a staging directory: written in place, *keep its descriptor). */
int cf__column_write_index(cf_column *c, int private_, int *keep, cf_error *err);

/* The index whose chunk records the owners of a collective close wrote
 * (column_owners.c): its head and upper levels, stamped as
 * cf__column_write_index stamps; in the staging directory, or, for a
 * committed column, into the temporary then renamed over the index. */
int cf__column_write_owner_index(cf_column *c, int *keep, cf_error *err);

/* Forget what a close by chunk owners planned (after the commit, or
 * when the handle goes): a temporary index not renamed is removed. */
void cf__column_owner_forget(cf_column *c);

/* Take the statistics (and chunk CRC32C) of blobs that have none from a
 * current index, if there is one: a text without chunk lines (a large
 * column) leaves them to it.  Never an error for a damaged index (its
 * blobs stay unknown); CF_ENOMEM, CF_EIO. */
int cf__column_index_fill(cf_column *c, cf_error *err);

/* 1 if the column has a current index (opened on first use). */
int cf__column_index_current(cf_column *c);

/* Forget the open index (after a commit replaced it, at free). */
void cf__column_index_close(cf_column *c);

/* ---- chunk CRC32C as writes and scans compute them ------------------- */

/* Note that bytes [off, off + n) of blob b (p) were written or read: adds
 * their CRC32C to *crc (which covers what came before them in the same
 * piece) and the CRC32C of each chunk piece to the chunk's record. */
void cf__column_ccrc_add(cf_column *c, int64_t b, int64_t off, const unsigned char *p, int64_t n, uint32_t *sum,
                         uint32_t *crc);

/* Forget the chunk CRC32C of blob b (its bytes change). */
void cf__column_ccrc_reset_blob(cf_column *c, int64_t b);

/* Rows per chunk of the chunk CRC32C this handle knows (its statistics'
 * chunks when its writes or scans hold any, else the index's), 0: none. */
int64_t cf__column_crc_chunk_rows(cf_column *c);

/* Chunk kk (of cf__column_crc_chunk_rows rows) of blob b: 1 and *crc when
 * its CRC32C is known to this handle's writes and scans, or to the index
 * for bytes it left alone. */
int cf__column_chunk_crc(cf_column *c, int64_t b, int64_t kk, uint32_t *crc);

/* Chunk kk of blob b: 1 and *crc when this handle's writes and scans (or
 * the index it loaded) know its CRC32C. */
int cf__column_ccrc_get(const cf_column *c, int64_t b, int64_t kk, uint32_t *crc);

void cf__column_ccrc_free(cf_column *c);

/* The chunk CRC32C pieces of a pending write state (column_pending.c):
 * those blob b's writes (and scans) gave this handle, -1 when it lost
 * track of some (then none are sent and the receiver forgets the blob's);
 * put them (k, lo, hi, crc each; lo 2^64 - 1 and hi 0 for pieces that
 * did not join); the bytes of chunk k of blob b (-1: no such chunk); and join one
 * piece to the receiving handle's, as a write of those bytes would (lo -1:
 * pieces that did not join, -2: the sender lost track of blob b). */
int64_t cf__column_ccrc_npieces(const cf_column *c, int64_t b);
void cf__column_ccrc_put(const cf_column *c, int64_t b, struct cf__wire_out *o);
int64_t cf__column_ccrc_chunk_bytes(const cf_column *c, int64_t b, int64_t k);
void cf__column_ccrc_join(cf_column *c, int64_t b, int64_t k, int64_t lo, int64_t hi, uint32_t crc);

#endif
