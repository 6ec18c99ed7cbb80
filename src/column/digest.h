/* digest.h - a helper thread that computes a write's checksums and
 * statistics while the writing thread copies the same bytes to the file
 * (internal).  On a machine with a spare core, the bigfile byte sum, the
 * CRC32C and the statistics then cost (almost) nothing next to the write. */
#ifndef CF_DIGEST_H
#define CF_DIGEST_H

#include <stdint.h>

#include "colfile.h"

struct cf_column;
typedef struct cf__digester cf__digester;

/* Writes of at least this many bytes use a helper thread. */
#define CF__DIGEST_MIN_BYTES ((int64_t)8 << 20)
/* Bytes handed over at a time: large enough that the hand-over costs
 * little, small enough that the data is still in cache for the write. */
#define CF__DIGEST_CHUNK_BYTES ((int64_t)2 << 20)

/* Bytes per pwrite(2) when the writing thread digests a caller's buffer
 * that needs no conversion (the inline placement): cf__digest reads them
 * in L2-sized pieces, then one system call copies them from the cache into
 * the file.  In 256 KiB writes, each write's fixed cost and page-cache
 * folios no larger than the write added about a seventh to the copy's
 * time per byte; from 1 MiB on it is lost in the copy. */
#define CF__INLINE_WRITE_BYTES ((int64_t)2 << 20)

/* Bytes digested at a time by cf__digest: the byte sum and CRC32C pass
 * leaves them in the L2 cache for the statistics. */
#define CF__DIGEST_PIECE_BYTES ((int64_t)192 << 10)

/* What a write computes from n elements at p, element `elem` of blob b of
 * column c, in one pass over memory: adds them to the running byte sum
 * *sum and CRC32C *crc and, unless the column's statistics are off, to
 * the statistics of the chunks they fall in.  The same for any thread;
 * writes of every size can use it. */
void cf__digest(struct cf_column *c, int64_t b, int64_t elem, const unsigned char *p, int64_t n, uint32_t *sum,
                uint32_t *crc);

/* Start a helper thread for writes to column c.  CF_ENOMEM, CF_EIO. */
int cf__digester_start(cf__digester **out, struct cf_column *c, cf_error *err);

/* Hand-overs posted and not yet waited for, at most. */
#define CF__DIGEST_QUEUE 2

/* Hand over n elements at p, element `elem` of blob b: the helper adds them
 * to *sum, *crc and (unless off) the blob's statistics, after the
 * hand-overs posted before.  The caller must not touch p's bytes, *sum,
 * *crc or the statistics until the cf__digester_wait that returns this
 * hand-over.  At most CF__DIGEST_QUEUE may be outstanding (a post beyond
 * waits for the oldest first).  Posting the next hand-over before waiting
 * for the previous one keeps the helper busy without a wake-up between
 * them:
 *
 *     post(0); for k: { post(k+1) if any; write(k); wait(); }  */
void cf__digester_post(cf__digester *d, const unsigned char *p, int64_t n, int64_t b, int64_t elem,
                       uint32_t *sum, uint32_t *crc);

/* Wait until the oldest posted hand-over is done: if the helper has not
 * started it, the caller does it (cf__digest) instead of waiting for a
 * core.  Returns at once when nothing is posted. */
void cf__digester_wait(cf__digester *d);

/* Wait for what is still posted, then stop and join the helper thread.
 * Accepts NULL. */
void cf__digester_stop(cf__digester *d);

#endif
