/* column_owners.c - the core's side of a collective close by chunk owners
 * (colfile_binding.h, "Closing by chunk owners"): each rank keeps the
 * statistics and chunk CRC32C of the chunks it owns (chunk_owner.h),
 * writes their records of colfile-index-v1 into the staging directory
 * itself, and hands the committing handle one summary per page above
 * them (stindex_part.h), so that the committing handle holds per-blob
 * state and the levels above the chunks, never a record per chunk. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checksum.h"
#include "chunk_owner.h"
#include "column.h"
#include "column_handle.h"
#include "column_index.h"
#include "error.h"
#include "fsutil.h"
#include "pending_split.h"
#include "stindex.h"
#include "stindex_part.h"
#include "wire.h"

/* valid[b] of a plan: blob b's records are copied from the committed
 * index (bit 0 still says whether its statistics are known) */
#define CF__OWNER_COPY 2

void cf_plan_owner_cuts(const int64_t *first, int64_t nranks, int64_t total, int64_t *cut)
{
    cf__owner_cuts(first, nranks, total, cut);
}

int64_t cf_column_pending_first_row(const cf_column *c)
{
    int64_t first = -1;
    for (int64_t b = 0; c && c->sums.writes && b < c->h.nfile; b++) {
        const cf__blob_writes *w = &c->sums.writes[b];
        int64_t row = -1;
        if (w->overflow) row = c->first_row[b]; /* somewhere in it: its start */
        for (int64_t k = 0; k < w->count; k++) {
            int64_t r = c->first_row[b] + w->segments[k].offset / c->rowbytes;
            if (row < 0 || r < row) row = r;
        }
        if (row >= 0 && (first < 0 || row < first)) first = row;
    }
    return first;
}

int cf_column_pending_split(const cf_column *c, const void *state, size_t len, const int64_t *cut, int64_t nranks,
                            void **summary, size_t *slen, void **parts, int64_t *part_len, cf_error *err)
{
    *summary = NULL;
    *parts = NULL;
    *slen = 0;
    if (!c || !cut || nranks < 1 || !part_len) return CF_FAIL(err, CF_EARG, "cf_column_pending_split: bad arguments");
    for (int64_t r = 0; r < nranks; r++) part_len[r] = 0;
    cf__pending_part *ps = NULL;
    int64_t n = 0;
    int rc = cf__pending_split(state, len, c->h.nfile, c->h.rows, c->h.nmemb, cut, nranks, c->path, summary, slen,
                               &ps, &n, err);
    if (rc) return rc;
    size_t total = 0;
    for (int64_t i = 0; i < n; i++) total += ps[i].len;
    unsigned char *out = malloc(total ? total : 1);
    if (!out) {
        cf__pending_parts_free(ps, n);
        free(*summary);
        *summary = NULL;
        return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", c->path);
    }
    size_t at = 0;
    for (int64_t i = 0; i < n; i++) { /* by rank ascending */
        memcpy(out + at, ps[i].buf, ps[i].len);
        at += ps[i].len;
        part_len[ps[i].rank] = (int64_t)ps[i].len;
    }
    cf__pending_parts_free(ps, n);
    *parts = out;
    return 0;
}

static int64_t chunks_in(const cf_column *c, int64_t b)
{
    return cf__stats_blob_chunks(&c->stat.stats, b);
}

int cf_column_owners_wanted(const cf_column *c)
{
    if (!c || c->kind != CF_KIND_DATA || !c->writable || c->h.nmemb < 1) return 0;
    /* a replica reads its statistics (their chunk size) on first use */
    if (cf__column_stats_need(c, NULL) || !c->stat.stats.first_chunk) return 0;
    int64_t all = c->stat.stats.first_chunk[c->h.nfile];
    return all > CF__STATS_TEXT_RECORDS_MAX / c->h.nmemb;
}

int cf_column_owner_begin(cf_column *c, const void *summary, size_t len, cf_error *err)
{
    /* the blobs the summary has entries for (cf_column_pending_split's
     * format: runs and chunk pieces left out) */
    cf__wire_in in = { summary, (const unsigned char *)summary + len };
    uint64_t nfile, chunk_rows, entries;
    if (len < 4 || memcmp(summary, "CFP1", 4) != 0)
        return CF_FAIL(err, CF_EFORMAT, "%s: pending write summary has a bad signature", c->path);
    in.p += 4;
    int bad = cf__wire_get_u64(&in, &nfile) || cf__wire_get_u64(&in, &chunk_rows) ||
              cf__wire_get_u64(&in, &entries) || nfile != (uint64_t)c->h.nfile;
    for (uint64_t e = 0; !bad && e < entries; e++) {
        uint64_t blob, nseg, nrun;
        uint32_t delta;
        unsigned char overflow;
        bad = cf__wire_get_u64(&in, &blob) || cf__wire_get_u32(&in, &delta) || cf__wire_get_u8(&in, &overflow) ||
              cf__wire_get_u64(&in, &nseg) || blob >= nfile || nseg > (uint64_t)(in.end - in.p) / 20;
        if (bad) break;
        in.p += nseg * 20;
        bad = cf__wire_get_u64(&in, &nrun) || nrun != 0;
        /* its own part brings back what it holds of the chunks it owns
         * (its parts for the others go to them), in rank order with the
         * others' parts: chunk CRC32C pieces join in the order they come */
        if (!bad) {
            cf__stats_reset_blob(&c->stat.stats, (int64_t)blob);
            cf__column_ccrc_reset_blob(c, (int64_t)blob);
        }
    }
    return bad ? CF_FAIL(err, CF_EFORMAT, "%s: pending write summary is damaged", c->path) : 0;
}

void cf_column_owner_holds(const cf_column *c, const int64_t *cut, int64_t nranks, int64_t rank, unsigned char *holds)
{
    for (int64_t b = 0; b < c->h.nfile; b++) {
        int64_t k0, k1;
        cf__owned_chunks(cut, nranks, rank, c->first_row[b], c->h.rows[b], c->stat.stats.chunk_rows, &k0, &k1);
        holds[b] = (unsigned char)(k0 == k1 || cf__stats_holds(&c->stat.stats, b, k0, k1));
    }
}

/* The geometry of the committed column's colfile-index-v1 (path) if it
 * is the one its colfile-v1 trusts and describes the committed blobs
 * (nchunks chunks, nfile blobs): its records of blobs a close does not
 * write are theirs. */
static int committed_index(const cf_column *c, const char *path, int64_t nfile, int64_t nchunks, cf__index_geom *g)
{
    unsigned char head[CF__INDEX_HEAD + 16 * CF__INDEX_LEVELS_MAX + 4];
    struct stat st;
    size_t got = 0;
    cf_error ignored;
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC), ok = 0;
    if (fd < 0) return 0;
    cf__hstamp xs;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
        cf__hstamp_of(&xs, &st);
        ok = (nfile < 0 || cf__hstamp_equal(&xs, &c->ver.hstamp)) &&
             cf__pread_all(fd, head, sizeof head, 0, &got, path, &ignored) == 0 &&
             cf__index_parse_head(g, head, got, (int64_t)st.st_size, path, &ignored) == 0 &&
             strcmp(g->token, c->dtype_token) == 0 && g->nmemb == c->h.nmemb &&
             g->chunk_rows == c->stat.stats.chunk_rows && (nfile < 0 || (g->nfile == nfile && g->nchunks == nchunks));
    }
    close(fd);
    return ok;
}

int cf_column_owner_plan(cf_column *c, const unsigned char *holds, unsigned char *valid, int *owners_write,
                         const char **file, cf_error *err)
{
    *owners_write = 0;
    *file = c->dir;
    if (c->kind != CF_KIND_DATA || c->replica || c->stat.stats_off || c->h.nmemb < 1 || !c->stat.stats.valid ||
        !cf_column_owners_wanted(c))
        return 0;
    /* a new column's first commit: every statistic comes from this close;
     * a committed column's (an append, an update): the records of the
     * blobs it does not write are those of its current index, copied */
    int staged = CF__STAGED(c);
    int64_t committed = staged ? 0 : c->commit.committed_nfile;
    char *old = NULL, tmp[PATH_MAX];
    cf__index_geom g;
    if (!staged) {
        /* (an index a torn or updating colfile-v1 left is not trusted: a
         * serial commit would not take its records either) */
        if (c->commit.torn_at_open || c->ext.ext_state == CF_EXT_TORN || c->ext.ext_state == CF_EXT_UPDATING ||
            !(old = cf__path_join(c->dir, CF__INDEX_NAME)))
            return 0;
        int ok = committed_index(c, old, committed, c->stat.stats.first_chunk[committed], &g);
        free(old);
        if (!ok) return 0;
    }
    int64_t all = 0, known = 0, nmemb = c->h.nmemb;
    for (int64_t b = 0; b < c->h.nfile; b++) {
        const cf__blob_writes *w = c->sums.writes ? &c->sums.writes[b] : NULL;
        int v = c->stat.stats.valid[b], copy = 0;
        if (w && (w->count || w->overflow)) {
            /* a blob the commit would read back (settle_blob) keeps the
             * gathering close: its statistics would come from that read */
            int exact = !w->overflow && w->count == 1 && w->segments[0].offset == 0 &&
                        w->segments[0].length == c->h.rows[b] * c->rowbytes;
            if (!exact) return 0;
            v = holds[b];
        } else {
            copy = b < committed;
        }
        valid[b] = (unsigned char)((v != 0) | (copy ? CF__OWNER_COPY : 0));
        all += chunks_in(c, b);
        known += v ? chunks_in(c, b) : 0;
    }
    /* as cf__column_index_wanted and cf__column_stats_in_text decide: the
     * owners' way only where the index holds the statistics and the text
     * none (else the text needs every chunk here) */
    int wanted = known > 0 && known >= all / 4 &&
                 (all >= CF__INDEX_MIN_CHUNKS || known > CF__STATS_TEXT_RECORDS_MAX / nmemb);
    int64_t count[CF__INDEX_LEVELS_MAX], offset[CF__INDEX_LEVELS_MAX], size;
    if (!wanted || known <= CF__STATS_TEXT_RECORDS_MAX / nmemb || !cf__index_layout(all, nmemb, count, offset, &size))
        return 0;
    cf__column_owner_forget(c);
    char *path = NULL;
    if (staged) {
        path = cf__path_join(c->dir, CF__INDEX_NAME);
    } else {
        /* beside the index it replaces, renamed over it by the commit */
        int fd = cf__open_temporary(c->dir, CF__INDEX_NAME, tmp, sizeof tmp, c->path, err);
        if (fd < 0) return fd;
        close(fd);
        if (!(path = strdup(tmp))) unlink(tmp);
    }
    if (!path || !(c->stat.owner_valid = malloc((size_t)c->h.nfile))) {
        if (path && !staged) unlink(path);
        free(path);
        return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", c->path);
    }
    c->stat.owner_file = path;
    for (int64_t b = 0; b < c->h.nfile; b++) c->stat.owner_valid[b] = valid[b] & 1;
    *file = path;
    *owners_write = 1;
    return 0;
}

/* ---- an owner's records ------------------------------------------------- */

/* Copy the level-0 records of chunks [k0, k1) of the committed index
 * (old: its path, g: its geometry) into out. */
static int copy_records(const char *old, const cf__index_geom *g, int64_t k0, int64_t k1, unsigned char *out,
                        cf_error *err)
{
    int64_t rb = cf__index_rec_bytes(g->nmemb);
    if (k1 > g->nchunks)
        return CF_FAIL(err, CF_EFORMAT, "%s: holds %lld chunks, not the %lld the column had", old,
                       (long long)g->nchunks, (long long)k1);
    int fd = open(old, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        return CF_FAIL(err, cf__errno_code(e), "%s: cannot open: %s", old, strerror(e));
    }
    size_t want = (size_t)((k1 - k0) * rb), got = 0;
    int rc = cf__pread_all(fd, out, want, g->offset[0] + k0 * rb, &got, old, err);
    if (rc == 0 && got != want) rc = CF_FAIL(err, CF_ESHORT, "%s: shorter than its head says", old);
    close(fd);
    return rc;
}

/* Chunks an owner handles at a time: whole pages, so that the pieces of
 * its slices are those of its whole range; memory O(this) per owner. */
#define CF__OWNER_SLICE ((int64_t)CF__INDEX_FANOUT * 256)

/* Records [k0, k1) into buf (valid, ok: per blob; old, g: the committed
 * index when blobs are copied), and their rows. */
static int slice_records(cf_column *c, const unsigned char *valid, const unsigned char *ok, const char *old,
                         const cf__index_geom *g, int64_t k0, int64_t k1, unsigned char *recs, uint32_t *crc,
                         unsigned char *known, int64_t *rows, cf_error *err)
{
    const cf__stats *s = &c->stat.stats;
    const int64_t rb = cf__index_rec_bytes(c->h.nmemb);
    int rc = 0;
    for (int64_t b = 0; b < c->h.nfile; b++) {
        int copy = (valid[b] & CF__OWNER_COPY) != 0;
        for (int64_t k = s->first_chunk[b] > k0 ? s->first_chunk[b] : k0; k < s->first_chunk[b + 1] && k < k1; k++) {
            int64_t kk = k - s->first_chunk[b], r = c->h.rows[b] - kk * s->chunk_rows;
            known[k - k0] = (unsigned char)(!copy && cf__column_ccrc_get(c, b, kk, &crc[k - k0]));
            rows[k - k0] = r < s->chunk_rows ? r : s->chunk_rows;
        }
    }
    cf__index_level0(s, &c->h, ok, k0, k1, crc, known, recs);
    /* the blobs this close did not write: their committed records */
    for (int64_t b = 0; b < c->h.nfile && rc == 0; b++) {
        int64_t a = s->first_chunk[b] > k0 ? s->first_chunk[b] : k0;
        int64_t z = s->first_chunk[b + 1] < k1 ? s->first_chunk[b + 1] : k1;
        if ((valid[b] & CF__OWNER_COPY) && z > a) rc = copy_records(old, g, a, z, recs + (a - k0) * rb, err);
    }
    return rc;
}

int cf_column_owner_index_write(cf_column *c, const char *file, const unsigned char *valid, const int64_t *cut,
                                int64_t nranks, int64_t rank, void **pieces, size_t *plen, cf_error *err)
{
    *pieces = NULL;
    *plen = 0;
    const cf__stats *s = &c->stat.stats;
    const int64_t nmemb = c->h.nmemb, rb = cf__index_rec_bytes(nmemb), all = s->first_chunk[c->h.nfile];
    int64_t count[CF__INDEX_LEVELS_MAX], offset[CF__INDEX_LEVELS_MAX], size;
    if (!cf__index_layout(all, nmemb, count, offset, &size))
        return CF_FAIL(err, CF_EARG, "%s: too many chunks for an index", c->path);
    /* the chunks this rank owns: consecutive in the column's numbering */
    int64_t g0 = -1, g1 = -1, copies = 0;
    for (int64_t b = 0; b < c->h.nfile; b++) {
        int64_t k0, k1;
        cf__owned_chunks(cut, nranks, rank, c->first_row[b], c->h.rows[b], s->chunk_rows, &k0, &k1);
        if (k0 == k1) continue;
        if (g0 < 0) g0 = s->first_chunk[b] + k0;
        g1 = s->first_chunk[b] + k1;
        copies += (valid[b] & CF__OWNER_COPY) != 0;
    }
    if (g0 < 0) return 0;
    int64_t most = g1 - g0 < CF__OWNER_SLICE ? g1 - g0 : CF__OWNER_SLICE;
    unsigned char *recs = malloc((size_t)(most * rb)), *known = calloc((size_t)most, 1);
    unsigned char *ok = malloc((size_t)c->h.nfile);
    uint32_t *crc = malloc((size_t)most * sizeof *crc);
    int64_t *rows = malloc((size_t)most * sizeof *rows);
    cf__index_piece *pc = NULL;
    int64_t npc = 0;
    int rc = 0, fd = -1;
    char *old = copies ? cf__path_join(c->dir, CF__INDEX_NAME) : NULL;
    cf__index_geom g;
    cf__wire_out o = { NULL, 0, 0, 0 };
    if (!recs || !known || !ok || !crc || !rows || (copies && !old)) {
        rc = CF_FAIL(err, CF_ENOMEM, "%s: out of memory", c->path);
        goto done;
    }
    for (int64_t b = 0; b < c->h.nfile; b++) ok[b] = (valid[b] & CF__OWNER_COPY) ? 0 : valid[b] & 1;
    if (copies && !committed_index(c, old, -1, 0, &g)) {
        rc = CF_FAIL(err, CF_EFORMAT, "%s: not the chunk index of this column", old);
        goto done;
    }
    /* into the staging directory or the temporary, where no reader looks:
     * the committing handle writes the head last, stamps, syncs and
     * publishes */
    fd = open(file, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd < 0) {
        int e = errno;
        rc = CF_FAIL(err, cf__errno_code(e), "%s: cannot open: %s", file, strerror(e));
        goto done;
    }
    for (int64_t k0 = g0, k1; k0 < g1 && rc == 0; k0 = k1) {
        k1 = (k0 / CF__OWNER_SLICE + 1) * CF__OWNER_SLICE;
        if (k1 > g1) k1 = g1;
        int64_t n = k1 - k0;
        memset(known, 0, (size_t)n);
        if ((rc = slice_records(c, valid, ok, old, &g, k0, k1, recs, crc, known, rows, err))) break;
        if ((rc = cf__pwrite_all(fd, recs, (size_t)(n * rb), offset[0] + k0 * rb, file, err))) break;
        if ((rc = cf__index_pieces(recs, k0, n, rows, nmemb, &c->h.dtype, CF__INDEX_FANOUT, &pc, &npc, c->path,
                                   err)))
            break;
        for (int64_t i = 0; i < npc; i++) {
            cf__wire_put_u64(&o, (uint64_t)pc[i].page);
            cf__wire_put_u64(&o, (uint64_t)pc[i].n);
            cf__wire_put_u64(&o, (uint64_t)pc[i].rows);
            cf__wire_put_u32(&o, pc[i].crc);
            cf__wire_put_u32(&o, pc[i].stats);
            for (int64_t j = 0; j < nmemb; j++) cf__acc_put(&o, &pc[i].acc[j]);
        }
        cf__index_pieces_free(pc, npc);
        pc = NULL;
        npc = 0;
        if (o.failed) rc = CF_FAIL(err, CF_ENOMEM, "%s: out of memory", c->path);
    }
    if (rc == 0 && c->durable) rc = cf__fsync_fd(fd, file, err);
    if (rc == 0) {
        *pieces = o.p;
        *plen = o.len;
        o.p = NULL;
    }
done:
    if (fd >= 0 && close(fd) != 0 && rc == 0) {
        int e = errno;
        rc = CF_FAIL(err, CF_EIO, "%s: close failed: %s", file, strerror(e));
    }
    if (rc) {
        free(*pieces);
        *pieces = NULL;
        *plen = 0;
    }
    free(o.p);
    cf__index_pieces_free(pc, npc);
    free(old);
    free(ok);
    free(recs);
    free(known);
    free(crc);
    free(rows);
    return rc;
}

/* ---- the committing handle: the levels above the chunks ----------------- */

int cf_column_owner_index_finish(cf_column *c, const void *buf, size_t len, cf_error *err)
{
    const int64_t nmemb = c->h.nmemb, rb = cf__index_rec_bytes(nmemb), f = CF__INDEX_FANOUT;
    const int64_t all = c->stat.stats.first_chunk[c->h.nfile];
    int64_t count[CF__INDEX_LEVELS_MAX], offset[CF__INDEX_LEVELS_MAX], size;
    int nl = cf__index_layout(all, nmemb, count, offset, &size);
    if (!c->stat.owner_valid || !nl) return CF_FAIL(err, CF_EARG, "%s: no index by chunk owners planned", c->path);
    int64_t npages = nl > 1 ? count[1] : 1;
    cf__index_piece *page = calloc((size_t)npages, sizeof *page);
    cf__acc *accs = malloc((size_t)(npages * nmemb) * sizeof *accs);
    unsigned char *prefix = calloc(1, (size_t)offset[0]);
    int64_t *rows = malloc((size_t)npages * sizeof *rows);
    cf__index_piece *up = NULL;
    int64_t nup = 0;
    int rc = 0;
    if (!page || !accs || !prefix || !rows) {
        rc = CF_FAIL(err, CF_ENOMEM, "%s: out of memory", c->path);
        goto done;
    }
    /* pieces in rank order: pages ascending, each page's pieces in order */
    cf__wire_in in = { buf, (const unsigned char *)buf + len };
    int64_t covered = 0, at = -1;
    while (in.p < in.end) {
        uint64_t pg, n, r;
        uint32_t crc, st;
        cf__index_piece x = { 0 };
        cf__acc a[64];
        cf__acc *xa = nmemb <= 64 ? a : malloc((size_t)nmemb * sizeof *xa);
        if (!xa) {
            rc = CF_FAIL(err, CF_ENOMEM, "%s: out of memory", c->path);
            goto done;
        }
        int bad = cf__wire_get_u64(&in, &pg) || cf__wire_get_u64(&in, &n) || cf__wire_get_u64(&in, &r) ||
                  cf__wire_get_u32(&in, &crc) || cf__wire_get_u32(&in, &st);
        for (int64_t j = 0; !bad && j < nmemb; j++) bad = cf__acc_get(&in, &xa[j]) != 0;
        bad = bad || (int64_t)pg < at || pg >= (uint64_t)npages || n == 0 || n > (uint64_t)f;
        if (!bad) {
            x.page = (int64_t)pg;
            x.n = (int64_t)n;
            x.rows = (int64_t)r;
            x.crc = crc;
            x.stats = st;
            x.acc = xa;
            if ((int64_t)pg == at) {
                cf__index_piece_join(&page[at], &x, nmemb, &c->h.dtype);
            } else {
                at = (int64_t)pg;
                page[at] = x;
                page[at].acc = accs + at * nmemb;
                memcpy(page[at].acc, xa, (size_t)nmemb * sizeof *xa);
            }
            covered += (int64_t)n;
        }
        if (xa != a) free(xa);
        if (bad) {
            rc = CF_FAIL(err, CF_EFORMAT, "%s: the chunk owners' index pieces are damaged", c->path);
            goto done;
        }
    }
    if (covered != all) {
        rc = CF_FAIL(err, CF_EFORMAT, "%s: the chunk owners' index pieces cover %lld of %lld chunks", c->path,
                     (long long)covered, (long long)all);
        goto done;
    }
    uint32_t top;
    if (nl == 1) {
        top = page[0].crc;
    } else {
        /* level 1 from the pages' pieces, the levels above as cf__index_build */
        unsigned char *l1 = prefix + offset[1];
        for (int64_t i = 0; i < count[1]; i++) {
            cf__index_piece_record(&page[i], nmemb, &c->h.dtype, l1 + i * rb);
            rows[i] = page[i].rows;
        }
        for (int l = 1; l + 1 < nl; l++) {
            if ((rc = cf__index_pieces(prefix + offset[l], 0, count[l], rows, nmemb, &c->h.dtype, f, &up, &nup,
                                       c->path, err)))
                goto done;
            for (int64_t i = 0; i < nup; i++) {
                cf__index_piece_record(&up[i], nmemb, &c->h.dtype, prefix + offset[l + 1] + i * rb);
                rows[i] = up[i].rows;
            }
            cf__index_pieces_free(up, nup);
            up = NULL;
        }
        top = cf__crc32c_update(0, prefix + offset[nl - 1], (size_t)(count[nl - 1] * rb));
    }
    cf__index_put_head(prefix, c->dtype_token, nmemb, c->h.nfile, c->stat.stats.chunk_rows, all, top, 0);
    free(c->stat.owner_index);
    c->stat.owner_index = prefix;
    c->stat.owner_index_len = (size_t)offset[0];
    c->stat.owner_index_size = size;
    prefix = NULL;
done:
    cf__index_pieces_free(up, nup);
    free(page);
    free(accs);
    free(prefix);
    free(rows);
    return rc;
}

int cf__column_write_owner_index(cf_column *c, int *keep, cf_error *err)
{
    if (keep) *keep = -1;
    const char *p = c->stat.owner_file;
    int staged = CF__STAGED(c);
    if (!p) return CF_FAIL(err, CF_EARG, "%s: no index by chunk owners planned", c->path);
    int rc = 0, fd = open(p, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (fd < 0) {
        int e = errno;
        rc = CF_FAIL(err, cf__errno_code(e), "%s: cannot open: %s", p, strerror(e));
    } else if (fstat(fd, &st) != 0 || (int64_t)st.st_size != c->stat.owner_index_size) {
        /* every chunk's record must be there before the head that covers it */
        rc = CF_FAIL(err, CF_EIO, "%s: the chunk owners left %lld of %lld bytes", p,
                     (long long)st.st_size, (long long)c->stat.owner_index_size);
    } else if ((rc = cf__pwrite_all(fd, c->stat.owner_index, c->stat.owner_index_len, 0, p, err)) == 0) {
        cf__hstamp_apply(fd, &c->ver.hstamp);
        /* a committed column's: on disk before its name points at it */
        if (!staged && c->durable) rc = cf__fsync_fd(fd, p, err);
    }
    if (fd >= 0) {
        if (rc == 0 && keep) {
            *keep = fd;
        } else if (close(fd) != 0 && rc == 0) {
            int e = errno;
            rc = CF_FAIL(err, CF_EIO, "%s: close failed: %s", p, strerror(e));
        }
    }
    if (rc == 0 && !staged) {
        char *final = cf__path_join(c->dir, CF__INDEX_NAME);
        if (!final) rc = CF_FAIL(err, CF_ENOMEM, "%s: out of memory", c->path);
        else if (rename(p, final) != 0) {
            int e = errno;
            rc = CF_FAIL(err, CF_EIO, "%s: cannot rename the chunk owners' index into place: %s", final,
                         strerror(e));
        } else {
            free(c->stat.owner_file); /* nothing left to remove */
            c->stat.owner_file = NULL;
        }
        free(final);
    }
    if (rc == 0) c->stat.index_seen = 1;
    return rc;
}

void cf__column_owner_forget(cf_column *c)
{
    /* a committed column's temporary the commit did not rename */
    if (c->stat.owner_file && c->dir && !CF__STAGED(c)) unlink(c->stat.owner_file);
    free(c->stat.owner_file);
    free(c->stat.owner_valid);
    free(c->stat.owner_index);
    c->stat.owner_file = NULL;
    c->stat.owner_valid = NULL;
    c->stat.owner_index = NULL;
    c->stat.owner_index_len = 0;
    c->stat.owner_index_size = 0;
}
