/* column_pending.c - moving uncommitted write state between handles.
 *
 * Several handles (one per MPI rank, say) may write disjoint rows of one
 * column.  Each keeps, per blob, how much its writes added to the bigfile
 * byte sum and the CRC32C of the byte ranges it wrote.  One handle collects
 * the others' state and commits the header once: the parallel layers only
 * move these bytes, the arithmetic stays here.
 *
 * Wire format (little-endian, all fields fixed width):
 *   "CFP1", int64 nfile, int64 chunk_rows, int64 entries,
 *   entries x { int64 blob, uint32 sum_delta, uint8 overflow, int64 nseg,
 *               nseg x { int64 offset, int64 length, uint32 crc },
 *               int64 nrun, nrun x { int64 first, int64 nacc, nacc x {
 *               int64 count, int64 nan, 8 bytes min, 8 bytes max,
 *               exact sum: uint64 w0, ((w0 >> 16) & 255) x uint64 } } }
 * where each run holds the accumulators the writes held for the blob's
 * chunks first, first + 1, ... (nacc = their number x nmemb; partial
 * chunks merge with the committing handle's; chunks in no run hold
 * nothing), and nrun = 2^64 - 1 (no runs follow) when the writer ran out of
 * memory for them (the blob's statistics are then unknown).  The exact sum
 * is the accumulator's fixed point (stats_xsum.h: w0 = inf flags | first
 * digit << 8 | digits << 16 | negative << 24, then the magnitude's 32-bit
 * digits), so that sums merge without losing a bit whatever the split.
 * Then
 *   "CCR1", int64 n, n x { int64 blob, int64 k, int64 lo, int64 hi, uint32 crc }
 * the chunk CRC32C pieces of the entries' blobs: bytes [lo, hi) of chunk k
 * have CRC32C crc (lo = 2^64 - 1, hi = 0: pieces that did not join;
 * k = 2^64 - 1, lo = hi = 0: the writer lost track of the blob's).  The committing handle joins them
 * to its own in the order they come (rank order, at an MPI close), so a
 * chunk that several writers tiled ends with its CRC32C known (combined,
 * as cf__crc32c_combine does); a state without this part makes the
 * entries' chunk CRC32C unknown.
 */
#include <stdlib.h>
#include <string.h>

#include "column.h"
#include "column_index.h"
#include "column_handle.h"
#include "error.h"
#include "wire.h"

static int blob_touched(const cf_column *c, int64_t i)
{
    const cf__blob_writes *w = c->sums.writes ? &c->sums.writes[i] : NULL;
    return c->h.sums[i] != c->sums.committed_sums[i] || (w && (w->count || w->overflow));
}

/* The state's bytes into *out (the handle unchanged but for its blobs
 * made durable). */
static int build_state(cf_column *c, cf__wire_out *out, cf_error *err)
{
    if (c->kind != CF_KIND_DATA) return CF_FAIL(err, CF_EKIND, "%s: not a data column", c->path);
    if (c->commit.failed)
        return CF_FAIL(err, CF_EIO, "%s: an earlier write through this handle failed: its rows cannot be "
                       "committed", c->path);
    /* The committing handle will describe these bytes in the header: they
     * must be durable before that. */
    int rc = cf__column_sync_blobs(c, err);
    if (rc == 0 && c->kind == CF_KIND_DATA) rc = cf__column_stats_need(c, err);
    if (rc) return rc;
    cf__wire_out o = { NULL, 0, 0, 0 };
    int64_t entries = 0;
    for (int64_t i = 0; i < c->h.nfile; i++) entries += blob_touched(c, i);
    cf__wire_put(&o, "CFP1", 4);
    cf__wire_put_u64(&o, (uint64_t)c->h.nfile);
    cf__wire_put_u64(&o, (uint64_t)c->stat.stats.chunk_rows);
    cf__wire_put_u64(&o, (uint64_t)entries);
    for (int64_t i = 0; i < c->h.nfile; i++) {
        if (!blob_touched(c, i)) continue;
        const cf__blob_writes *w = c->sums.writes ? &c->sums.writes[i] : NULL;
        int64_t nseg = w ? w->count : 0;
        unsigned char overflow = w ? (unsigned char)w->overflow : 0;
        cf__wire_put_u64(&o, (uint64_t)i);
        cf__wire_put_u32(&o, c->h.sums[i] - c->sums.committed_sums[i]);
        cf__wire_put(&o, &overflow, 1);
        cf__wire_put_u64(&o, (uint64_t)nseg);
        for (int64_t k = 0; k < nseg; k++) {
            cf__wire_put_u64(&o, (uint64_t)w->segments[k].offset);
            cf__wire_put_u64(&o, (uint64_t)w->segments[k].length);
            cf__wire_put_u32(&o, w->segments[k].crc);
        }
        const cf__blob_stats *bs = &c->stat.stats.blob[i];
        cf__wire_put_u64(&o, bs->lost ? UINT64_MAX : (uint64_t)bs->nrun);
        for (int64_t r = 0; !bs->lost && r < bs->nrun; r++) {
            int64_t nacc = bs->run[r].n * c->h.nmemb;
            cf__wire_put_u64(&o, (uint64_t)bs->run[r].lo);
            cf__wire_put_u64(&o, (uint64_t)nacc);
            for (int64_t k = 0; k < nacc; k++) cf__acc_put(&o, &bs->run[r].acc[k]);
        }
    }
    int64_t pieces = 0;
    for (int64_t i = 0; i < c->h.nfile; i++) {
        if (!blob_touched(c, i)) continue;
        int64_t n = cf__column_ccrc_npieces(c, i);
        pieces += n < 0 ? 1 : n;
    }
    cf__wire_put(&o, "CCR1", 4);
    cf__wire_put_u64(&o, (uint64_t)pieces);
    for (int64_t i = 0; i < c->h.nfile; i++) {
        if (!blob_touched(c, i)) continue;
        if (cf__column_ccrc_npieces(c, i) >= 0) {
            /* each piece: blob, then what cf__column_ccrc_put writes */
            cf__wire_out one = { NULL, 0, 0, 0 };
            cf__column_ccrc_put(c, i, &one);
            for (size_t at = 0; !one.failed && at < one.len; at += 28) {
                cf__wire_put_u64(&o, (uint64_t)i);
                cf__wire_put(&o, one.p + at, 28);
            }
            if (one.failed) o.failed = 1;
            free(one.p);
        } else {
            cf__wire_put_u64(&o, (uint64_t)i);
            cf__wire_put_u64(&o, UINT64_MAX);
            cf__wire_put_u64(&o, 0);
            cf__wire_put_u64(&o, 0);
            cf__wire_put_u32(&o, 0);
        }
    }
    if (o.failed) {
        free(o.p);
        return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", c->path);
    }
    *out = o;
    return 0;
}

int cf_column_pending_peek(cf_column *c, void **buf, size_t *len, cf_error *err)
{
    if (!c || !buf || !len) return CF_FAIL(err, CF_EARG, "cf_column_pending_peek: NULL argument");
    cf__wire_out o = { NULL, 0, 0, 0 };
    int rc = build_state(c, &o, err);
    if (rc) return rc;
    *buf = o.p;
    *len = o.len;
    return 0;
}

int cf_column_pending_export(cf_column *c, void **buf, size_t *len, cf_error *err)
{
    if (!c || !buf || !len) return CF_FAIL(err, CF_EARG, "cf_column_pending_export: NULL argument");
    cf__wire_out o = { NULL, 0, 0, 0 };
    int rc = build_state(c, &o, err);
    if (rc) return rc;
    /* The state now travels in the buffer: this handle is clean. */
    if (c->h.nfile) memcpy(c->h.sums, c->sums.committed_sums, (size_t)c->h.nfile * sizeof *c->h.sums);
    if (c->sums.writes) {
        for (int64_t i = 0; i < c->h.nfile; i++) free(c->sums.writes[i].segments);
        free(c->sums.writes);
        c->sums.writes = NULL;
    }
    c->commit.header_dirty = 0;
    c->commit.ext_dirty = 0;
    /* colfile-torn stays until the committing handle's commit removes it.
     * This handle must make it again for in-place writes after that (MPI:
     * after a collective flush), and must not remove it itself: a handle
     * that commits counts the writer lock it holds as a change, so it lets
     * go of it here (the committing handle takes it to merge these writes),
     * or its close would unmark rows not committed yet (MPI: rank 0 closing
     * a column it opened alone).  Either way a crash would leave a column
     * that passes for complete with rows of neither version. */
    c->commit.torn_marked = 0;
    if (!c->replica) cf__lock_release(&c->commit.lock);
    /* The committing handle publishes what this one handed over: later
     * writes go to the column's own directory, over committed rows. */
    if (c->replica && (rc = cf__column_follow_commit(c, err))) {
        free(o.p);
        return rc;
    }
    *buf = o.p;
    *len = o.len;
    return 0;
}

int cf_column_pending_merge(cf_column *c, const void *buf, size_t len, cf_error *err)
{
    if (!c || (!buf && len)) return CF_FAIL(err, CF_EARG, "cf_column_pending_merge: NULL argument");
    if (c->kind != CF_KIND_DATA) return CF_FAIL(err, CF_EKIND, "%s: not a data column", c->path);
    if (!c->writable) return CF_FAIL(err, CF_EREADONLY, "%s: column is open read-only", c->path);
    c->commit.shared = 1; /* another handle wrote these blobs */
    cf__wire_in in = { buf, (const unsigned char *)buf + len };
    uint64_t nfile, chunk_rows, entries;
    if (len < 4 || memcmp(buf, "CFP1", 4) != 0)
        return CF_FAIL(err, CF_EFORMAT, "%s: pending write state has a bad signature", c->path);
    in.p += 4;
    if (cf__wire_get_u64(&in, &nfile) || cf__wire_get_u64(&in, &chunk_rows) || cf__wire_get_u64(&in, &entries))
        return CF_FAIL(err, CF_EFORMAT, "%s: pending write state is truncated", c->path);
    if (nfile != (uint64_t)c->h.nfile || chunk_rows != (uint64_t)c->stat.stats.chunk_rows)
        return CF_FAIL(err, CF_EARG, "%s: pending write state is for %llu blobs of %llu-row chunks, the column has "
                       "%lld blobs of %lld-row chunks", c->path, (unsigned long long)nfile,
                       (unsigned long long)chunk_rows, (long long)c->h.nfile, (long long)c->stat.stats.chunk_rows);
    /* Validate everything before changing anything. */
    cf__wire_in scan = in;
    for (uint64_t e = 0; e < entries; e++) {
        uint64_t blob, nseg;
        uint32_t delta;
        unsigned char overflow;
        if (cf__wire_get_u64(&scan, &blob) || cf__wire_get_u32(&scan, &delta) || cf__wire_get_u8(&scan, &overflow) ||
            cf__wire_get_u64(&scan, &nseg))
            return CF_FAIL(err, CF_EFORMAT, "%s: pending write state is truncated", c->path);
        int64_t bytes = blob < nfile ? c->h.rows[blob] * c->rowbytes : 0;
        if (blob >= nfile || nseg > (uint64_t)(scan.end - scan.p) / 20)
            return CF_FAIL(err, CF_EFORMAT, "%s: pending write state is damaged", c->path);
        for (uint64_t k = 0; k < nseg; k++) {
            uint64_t off, length;
            uint32_t crc;
            cf__wire_get_u64(&scan, &off);
            cf__wire_get_u64(&scan, &length);
            cf__wire_get_u32(&scan, &crc);
            if (off > (uint64_t)bytes || length > (uint64_t)bytes - off)
                return CF_FAIL(err, CF_EFORMAT, "%s: pending write state names bytes outside blob %llu",
                               c->path, (unsigned long long)blob);
        }
        uint64_t nrun, first, nacc = 0;
        cf__acc a;
        if (cf__wire_get_u64(&scan, &nrun))
            return CF_FAIL(err, CF_EFORMAT, "%s: pending write state is truncated", c->path);
        uint64_t chunks = (uint64_t)cf__stats_blob_chunks(&c->stat.stats, (int64_t)blob),
                 nmemb = (uint64_t)c->h.nmemb;
        if (nrun != UINT64_MAX && nrun > (uint64_t)(scan.end - scan.p) / 16)
            return CF_FAIL(err, CF_EFORMAT, "%s: pending write state is truncated", c->path);
        for (uint64_t r = 0; nrun != UINT64_MAX && r < nrun; r++) {
            if (cf__wire_get_u64(&scan, &first) || cf__wire_get_u64(&scan, &nacc))
                return CF_FAIL(err, CF_EFORMAT, "%s: pending write state is truncated", c->path);
            int fits = nmemb == 0 ? nacc == 0 && first <= chunks
                     : nacc % nmemb == 0 && nacc > 0 && first < chunks && nacc / nmemb <= chunks - first &&
                           nacc <= (uint64_t)(scan.end - scan.p) / 40;
            if (!fits)
                return CF_FAIL(err, CF_EFORMAT, "%s: pending write state has the wrong number of statistics "
                               "for blob %llu", c->path, (unsigned long long)blob);
            for (uint64_t k = 0; k < nacc; k++) {
                int got = cf__acc_get(&scan, &a);
                if (got == -1) return CF_FAIL(err, CF_EFORMAT, "%s: pending write state is truncated", c->path);
                if (got)
                    return CF_FAIL(err, CF_EFORMAT, "%s: pending write state has a damaged exact sum for blob %llu",
                                   c->path, (unsigned long long)blob);
                /* No writer counts less than nothing, or more NaNs than values. */
                if (a.count < 0 || a.nan < 0 || a.nan > a.count)
                    return CF_FAIL(err, CF_EFORMAT, "%s: pending write state has impossible statistics for "
                                   "blob %llu (count %lld, nan %lld)", c->path, (unsigned long long)blob,
                                   (long long)a.count, (long long)a.nan);
            }
        }
    }
    /* the chunk CRC32C pieces, if any */
    uint64_t npieces = 0;
    int with_pieces = scan.end - scan.p >= 4 && memcmp(scan.p, "CCR1", 4) == 0;
    if (with_pieces) {
        scan.p += 4;
        if (cf__wire_get_u64(&scan, &npieces) || npieces > (uint64_t)(scan.end - scan.p) / 36)
            return CF_FAIL(err, CF_EFORMAT, "%s: pending write state is truncated", c->path);
        for (uint64_t q = 0; q < npieces; q++) {
            uint64_t blob, k, lo, hi;
            uint32_t crc;
            cf__wire_get_u64(&scan, &blob);
            cf__wire_get_u64(&scan, &k);
            cf__wire_get_u64(&scan, &lo);
            cf__wire_get_u64(&scan, &hi);
            cf__wire_get_u32(&scan, &crc);
            int64_t bytes = blob < nfile && k != UINT64_MAX && k <= INT64_MAX
                ? cf__column_ccrc_chunk_bytes(c, (int64_t)blob, (int64_t)k) : -1;
            int fits = blob < nfile && (k == UINT64_MAX ? lo == 0 && hi == 0
                     : bytes >= 0 && hi <= (uint64_t)bytes && (lo == UINT64_MAX ? hi == 0 : lo < hi));
            if (!fits)
                return CF_FAIL(err, CF_EFORMAT, "%s: pending write state names chunk bytes outside blob %llu",
                               c->path, (unsigned long long)blob);
        }
    }
    if (scan.p != scan.end)
        return CF_FAIL(err, CF_EFORMAT, "%s: pending write state has trailing bytes", c->path);
    int rc;
    /* Taking other handles' writes is a change, as a write of this handle
     * is: the writer lock first (and the check that the column is still the
     * version opened), so that the commit holds it and this handle's own
     * later writes find the header that commit wrote. */
    if (entries && !c->replica && (rc = cf__column_begin_change(c, err))) return rc;
    for (uint64_t e = 0; e < entries; e++) {
        uint64_t blob, nseg;
        uint32_t delta;
        cf__wire_get_u64(&in, &blob);
        cf__wire_get_u32(&in, &delta);
        unsigned char overflow;
        cf__wire_get_u8(&in, &overflow);
        cf__wire_get_u64(&in, &nseg);
        /* The first news of a blob since the last commit replaces its
         * statistics, as a local first write would.  An entry without
         * writes (no segments, no byte-sum delta: a chunk owner's part,
         * pending_split.h) carries accumulators of chunks only and adds
         * to what the handle holds, however many parts of a blob come. */
        int news = nseg > 0 || delta != 0 || overflow;
        if (news && cf__column_first_touch(c, (int64_t)blob)) cf__column_stats_reset_blob(c, (int64_t)blob);
        /* another handle's bytes, whose chunk CRC32C pieces follow (a
         * state without them: the chunks this one knows may not be theirs,
         * known again from a scan) */
        if (!with_pieces) cf__column_ccrc_reset_blob(c, (int64_t)blob);
        c->h.sums[blob] += delta;
        if (c->sums.made) c->sums.made[blob] = 1;   /* its writer made it */
        c->commit.header_dirty = 1;
        c->commit.ext_dirty = 1;
        if (overflow) {
            /* Scattered writes elsewhere: this blob's CRC must be recomputed.
             * (An empty segment allocates the bookkeeping and changes nothing.) */
            if ((rc = cf__column_note_segment(c, (int64_t)blob, 0, 0, 0, err))) return rc;
            cf__blob_writes *w = &c->sums.writes[blob];
            free(w->segments);
            w->segments = NULL;
            w->count = w->capacity = 0;
            w->overflow = 1;
        }
        for (uint64_t k = 0; k < nseg; k++) {
            uint64_t off, length;
            uint32_t crc;
            cf__wire_get_u64(&in, &off);
            cf__wire_get_u64(&in, &length);
            cf__wire_get_u32(&in, &crc);
            if ((rc = cf__column_note_segment(c, (int64_t)blob, (int64_t)off, (int64_t)length, crc, err))) return rc;
        }
        uint64_t nrun, first, nacc;
        cf__wire_get_u64(&in, &nrun);
        if (nrun == UINT64_MAX) cf__stats_lose_blob(&c->stat.stats, (int64_t)blob);
        for (uint64_t r = 0; nrun != UINT64_MAX && r < nrun; r++) {
            cf__wire_get_u64(&in, &first);
            cf__wire_get_u64(&in, &nacc);
            int64_t n = c->h.nmemb > 0 ? (int64_t)(nacc / (uint64_t)c->h.nmemb) : 0;
            /* No memory for them here: the blob's statistics become unknown. */
            cf__acc *acc = n ? cf__stats_chunks(&c->stat.stats, (int64_t)blob, (int64_t)first, (int64_t)first + n) : NULL;
            for (uint64_t k = 0; k < nacc; k++) {
                cf__acc a;
                cf__acc_get(&in, &a);
                if (acc) cf__acc_merge(&acc[k], &a, &c->h.dtype);
            }
        }
    }
    if (with_pieces) {
        in.p += 12;
        for (uint64_t q = 0; q < npieces; q++) {
            uint64_t blob, k, lo, hi;
            uint32_t crc;
            cf__wire_get_u64(&in, &blob);
            cf__wire_get_u64(&in, &k);
            cf__wire_get_u64(&in, &lo);
            cf__wire_get_u64(&in, &hi);
            cf__wire_get_u32(&in, &crc);
            if (k == UINT64_MAX) cf__column_ccrc_join(c, (int64_t)blob, 0, -2, 0, 0);
            else cf__column_ccrc_join(c, (int64_t)blob, (int64_t)k, lo == UINT64_MAX ? -1 : (int64_t)lo, (int64_t)hi, crc);
        }
    }
    return 0;
}

int cf_column_adopt_update(cf_column *c, cf_error *err)
{
    if (!c) return CF_FAIL(err, CF_EARG, "cf_column_adopt_update: NULL column");
    if (!c->commit.torn_at_open) return 0;
    if (c->kind != CF_KIND_DATA || !c->writable || c->replica)
        return CF_FAIL(err, CF_EKIND, "%s: only a writable data column that commits can adopt an update", c->path);
    /* Before anything of its own: what it wrote would describe the torn
     * state, and merged states replace what this reads. */
    if (c->sums.writes || c->commit.header_dirty || c->commit.ext_dirty || c->commit.shared)
        return CF_FAIL(err, CF_EARG, "%s: an update can only be adopted before anything is written or merged "
                       "through the handle", c->path);
    /* The update's writers write blobs, never metadata: the header (its
     * byte sums, which count every byte ever written: format.md 6) and
     * colfile-v1 are still the committed version's, and their merged states
     * replace what they recorded for the blobs they wrote.  Recomputing
     * everything from the blobs instead (a repair) would lose that count
     * and make the result depend on which rank opened first. */
    c->commit.torn_at_open = 0; /* the commit removes the marker */
    return cf__column_reload_ext(c, err);
}

void cf_free(void *p)
{
    free(p);
}
