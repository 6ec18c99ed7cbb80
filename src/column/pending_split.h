/* pending_split.h - cutting one rank's pending write state (the bytes of
 * cf_column_pending_export, column_pending.c) between the rank that
 * commits and the owners of its chunks (chunk_owner.h), so that the
 * committing rank receives per-blob summaries only and each owner the
 * statistics and chunk CRC32C pieces of its own chunks (internal). */
#ifndef CF_PENDING_SPLIT_H
#define CF_PENDING_SPLIT_H

#include <stddef.h>
#include <stdint.h>

#include "colfile_binding.h"

/* One owner's part: a pending write state in the same format, with the
 * accumulators and chunk CRC32C pieces of the chunks `rank` owns and
 * nothing else (byte-sum deltas 0, no written segments). */
typedef struct cf__pending_part {
    int64_t rank;
    void *buf; /* malloc'd */
    size_t len;
} cf__pending_part;

/* Split state (len bytes) of a column of nfile blobs of blob_rows rows and
 * nmemb components, whose chunks rank cut[] owns (nranks + 1 cuts):
 *   *summary: a pending state with each blob entry's byte-sum delta,
 *     overflow flag and written segments, no accumulators and no chunk
 *     CRC32C pieces: all the committing handle needs for the header and
 *     the blob CRC32C;
 *   *parts, *nparts: one part per owner that gets anything, by rank
 *     ascending (a blob whose statistics or chunk CRC32C the writer lost
 *     track of is marked so for every owner of its chunks).
 * Merging the summary and then the parts into one handle
 * (cf_column_pending_merge) gives what merging state would; merging each
 * part into its owner's handle gives the owner all the state holds of
 * its chunks.  CF_EFORMAT (damaged or mismatched state), CF_ENOMEM; path
 * names the column in messages.  Free with cf__pending_parts_free. */
int cf__pending_split(const void *state, size_t len, int64_t nfile, const int64_t *blob_rows, int64_t nmemb,
                      const int64_t *cut, int64_t nranks, const char *path, void **summary, size_t *slen,
                      cf__pending_part **parts, int64_t *nparts, cf_error *err);

void cf__pending_parts_free(cf__pending_part *parts, int64_t nparts);

#endif
