/* stindex.h - the binary chunk index `colfile-index-v1` (internal): the
 * per-chunk statistics and chunk CRC32C of a column as fixed-size records,
 * with coarser levels over groups of `fanout` records above them, so that
 * a reader decides about many chunks from a few kilobytes and reads the
 * records below only where it must.  Every page (the records under one
 * parent) is checked against the CRC32C its parent holds, the top level
 * against the file's head: a reader that reads a slice verifies exactly
 * what it read.  Format: docs/format.md 8.6. */
#ifndef CF_STINDEX_H
#define CF_STINDEX_H

#include <stddef.h>
#include <stdint.h>

#include "colfile.h"
#include "header.h"
#include "stats.h"

#define CF__INDEX_NAME "colfile-index-v1"
/* the first 8 bytes: a byte above 0x7f, CR LF and ^Z catch text-mode copies */
#define CF__INDEX_MAGIC "\x89" "CFX\r\n\x1a\n"
#define CF__INDEX_VERSION 1u
#define CF__INDEX_HEAD 128
/* records per page (the children of one node) colfile writes */
#define CF__INDEX_FANOUT 256
/* readers accept fanouts in [CF__INDEX_FANOUT_MIN, CF__INDEX_FANOUT_MAX] */
#define CF__INDEX_FANOUT_MIN 2
#define CF__INDEX_FANOUT_MAX 65536
#define CF__INDEX_LEVELS_MAX 48

/* flags of a record */
#define CF__INDEX_STATS 1u /* statistics known for every chunk below */
#define CF__INDEX_CRC 2u   /* level 0: the chunk's CRC32C is known */

/* Bytes of one record for nmemb components. */
static inline int64_t cf__index_rec_bytes(int64_t nmemb) { return 8 + 32 * nmemb; }

/* What the head and the level table of a file say. */
typedef struct cf__index_geom {
    char token[17];          /* the header's DTYPE token, NUL ended */
    int64_t nmemb, nfile, chunk_rows, nchunks, fanout;
    int nlevels;             /* 1 + the levels above the chunks */
    int64_t count[CF__INDEX_LEVELS_MAX];  /* records of each level */
    int64_t offset[CF__INDEX_LEVELS_MAX]; /* where they start */
    uint32_t top_crc;        /* CRC32C of the top level's records */
    int64_t table_end;       /* bytes of the head and the level table */
    int64_t size;            /* the file's size as the head describes it */
} cf__index_geom;

/* Records at each level for n chunks and fanout f: count[0] = n, count[l+1]
 * = ceil(count[l] / f) while count[l] > f.  Returns the number of levels
 * (at least 1). */
int cf__index_levels(int64_t nchunks, int64_t fanout, int64_t *count);

/* Where the levels of an index of nchunks chunks of nmemb components lie:
 * count[l] records at offset[l] (the top level first, after the head and
 * the level table), *size bytes in all.  Returns the number of levels, 0
 * when the top level would hold more than a page (too many chunks). */
int cf__index_layout(int64_t nchunks, int64_t nmemb, int64_t *count, int64_t *offset, int64_t *size);

/* The level-0 records of chunks [k0, k1) (the column's chunk numbering)
 * into out ((k1 - k0) records): statistics from s where ok[b] says blob b
 * has them (per blob: valid and whole, decided by the caller, who may hold
 * only some of a blob's chunks: then the ranks holding the others agree
 * on it), CRC32C crc[k - k0] where known[k - k0] (both may be NULL).  The
 * bytes are those cf__index_build writes at offset[0] + k * record bytes,
 * so holders of disjoint ranges can write them side by side. */
void cf__index_level0(const cf__stats *s, const cf__header *h, const unsigned char *ok, int64_t k0, int64_t k1,
                      const uint32_t *crc, const unsigned char *known, unsigned char *out);

/* The head and level table (cf__index_layout's offset[nlevels - 1] bytes
 * before the top level) of an index of nchunks chunks whose top level's
 * records have CRC32C top_crc, followed by a fine level of fine_bytes
 * bytes (0: none; stindex_fine.h); token at most 16 bytes. */
void cf__index_put_head(unsigned char *hd, const char *token, int64_t nmemb, int64_t nfile, int64_t chunk_rows,
                        int64_t nchunks, uint32_t top_crc, int64_t fine_bytes);

/* The bytes of colfile-index-v1 for the statistics s of header h (token
 * its DTYPE), its fine level included when s keeps one, with chunk CRC32C values crc[k] where known[k] (both may be
 * NULL: none known; k in the column's chunk order, cf_column_chunk_stats's
 * numbering).  valid(b) is s->valid[b] and `usable`[b] when usable is not
 * NULL.  *out malloc'd.  CF_ENOMEM, CF_EARG (more levels than allowed). */
int cf__index_build(const cf__stats *s, const cf__header *h, const char *token, const unsigned char *usable,
                    const uint32_t *crc, const unsigned char *known, unsigned char **out, size_t *len,
                    const char *path, cf_error *err);

/* Parse the head and level table (the first `len` bytes of the file, at
 * least CF__INDEX_HEAD; CF__INDEX_HEAD + 16 * CF__INDEX_LEVELS_MAX + 4
 * are always enough) of a file of file_size bytes.  CF_EFORMAT naming
 * path and the problem: bad magic, version, CRC, a layout that does not
 * add up, or a file shorter than its head says (truncated). */
int cf__index_parse_head(cf__index_geom *g, const unsigned char *buf, size_t len, int64_t file_size,
                         const char *path, cf_error *err);

/* Component j of a record as an accumulator of count values (the rows
 * below it), for a column of class cls (cf__acc_class). */
void cf__index_rec_acc(const unsigned char *rec, int64_t j, char cls, int64_t count, cf__acc *out);
/* A record's statistics fields (after its CRC32C and flags) from nmemb
 * accumulators, for a column of class cls (NULL: zeros). */
void cf__index_put_stats(unsigned char *rec, const cf__acc *a, int64_t nmemb, char cls);
uint32_t cf__index_rec_crc(const unsigned char *rec);
uint32_t cf__index_rec_flags(const unsigned char *rec);

#endif
