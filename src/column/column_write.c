/* column_write.c - the write paths of a column: a range of rows, listed
 * rows, and growing it; the CRC32C and statistics of what is written are
 * settled at the next commit (column_commit.c). */
#include "column_data.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "checksum.h"
#include "digest.h"
#include "error.h"
#include "fsutil.h"
#include "platform.h"
#include "column_handle.h"

/* Convert n elements starting at flat element e of the caller's buffer into
 * the contiguous column-typed `out`. */
static void gather(const cf_column *c, const buffer_view *v, int64_t e, int64_t n, unsigned char *out)
{
    int64_t w = c->h.dtype.width;
    if (v->regular) {
        cf__convert(out, (ptrdiff_t)w, &c->h.dtype, v->base + e * v->stride, (ptrdiff_t)v->stride, &v->dtype, (size_t)n);
        return;
    }
    int64_t nmemb = c->h.nmemb;
    while (n > 0) {
        int64_t r = e / nmemb, j = e % nmemb;
        int64_t m = nmemb - j < n ? nmemb - j : n;
        cf__convert(out, (ptrdiff_t)w, &c->h.dtype, v->base + r * v->row_stride + j * v->elem_stride,
                    (ptrdiff_t)v->elem_stride, &v->dtype, (size_t)m);
        out += m * w;
        e += m;
        n -= m;
    }
}

/* Remember that bytes [off, off+len) of blob i were written with CRC crc. */
int cf__column_note_segment(cf_column *c, int64_t i, int64_t off, int64_t len, uint32_t crc, cf_error *err)
{
    if (!c->sums.writes) {
        c->sums.writes = calloc((size_t)c->h.nfile + 1, sizeof *c->sums.writes);
        if (!c->sums.writes) return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", c->path);
    }
    cf__blob_writes *w = &c->sums.writes[i];
    if (w->overflow) return 0;
    if (w->count > 0) {
        cf__segment *last = &w->segments[w->count - 1];
        if (last->offset + last->length == off) {
            last->crc = cf__crc32c_combine(last->crc, crc, (uint64_t)len);
            last->length += len;
            return 0;
        }
    }
    if (w->count == CF__MAX_SEGMENTS) {
        w->overflow = 1;
        free(w->segments);
        w->segments = NULL;
        w->count = w->capacity = 0;
        return 0;
    }
    if (w->count == w->capacity) {
        int64_t cap = w->capacity ? w->capacity * 2 : 4;
        cf__segment *s = realloc(w->segments, (size_t)cap * sizeof *s);
        if (!s) return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", c->path);
        w->segments = s;
        w->capacity = cap;
    }
    w->segments[w->count++] = (cf__segment){ off, len, crc };
    /* Keep sorted and merge neighbours; overlaps force a recompute. */
    for (int64_t k = w->count - 1; k > 0 && w->segments[k - 1].offset > w->segments[k].offset; k--) {
        cf__segment t = w->segments[k];
        w->segments[k] = w->segments[k - 1];
        w->segments[k - 1] = t;
    }
    int64_t out = 0;
    for (int64_t k = 0; k < w->count; k++) {
        if (out > 0) {
            cf__segment *prev = &w->segments[out - 1];
            if (prev->offset + prev->length > w->segments[k].offset) {
                w->overflow = 1;
                break;
            }
            if (prev->offset + prev->length == w->segments[k].offset) {
                prev->crc = cf__crc32c_combine(prev->crc, w->segments[k].crc, (uint64_t)w->segments[k].length);
                prev->length += w->segments[k].length;
                continue;
            }
        }
        w->segments[out++] = w->segments[k];
    }
    if (w->overflow) {
        free(w->segments);
        w->segments = NULL;
        w->count = w->capacity = 0;
    } else {
        w->count = out;
    }
    return 0;
}

/* The n elements from flat element e of the caller's buffer, column-typed
 * and contiguous: in place when the buffer is so already, else converted
 * into buf. */
static const unsigned char *piece_at(const cf_column *c, const buffer_view *v, int64_t e, int64_t n,
                                     unsigned char *buf)
{
    if (v->direct) return (const unsigned char *)v->base + e * c->h.dtype.width;
    gather(c, v, e, n, buf);
    return buf;
}

/* In durable mode, a write asks the kernel to start writing back every
 * this many bytes it has copied into a blob (cf__writeback_range): the disk
 * then works while the rest is copied, and the fsync of the commit waits
 * for the last piece rather than the whole write. */
#define CF__WRITEBACK_BYTES ((int64_t)16 << 20)
/* Writes of at least this many bytes into a blob reserve its blocks first
 * (cf__preallocate); below, the system call costs more than it saves. */
#define CF__PREALLOCATE_MIN_BYTES ((int64_t)1 << 20)

/* Write `count` rows from `start`, taken from the caller's buffer starting
 * at flat element e0 of the view.  Each piece's bytes get their byte sum,
 * CRC32C and statistics (cf__digest, one pass) while they are in cache: on
 * this thread for small writes and where the File places the digest
 * inline (placement.c), in pieces of CF__INLINE_WRITE_BYTES when the
 * caller's buffer needs no conversion, else on a helper thread (digest.h)
 * overlapping the copy into the file for large ones.  There the next piece is handed
 * over before the current one is written, so the helper goes from one to
 * the next without waiting to be woken. */
static int write_range(cf_column *c, int64_t start, int64_t count, const buffer_view *v, int64_t e0,
                       cf_error *err)
{
    int64_t w = c->h.dtype.width;
    int rc = 0;
    if (w > CF__CHUNK_BYTES && !v->direct)
        return CF_FAIL(err, CF_EDTYPE, "%s: elements of %lld bytes are too wide to convert", c->path, (long long)w);
    cf__digester *dg = NULL;
    unsigned char *pair[2] = { NULL, NULL };
    /* The running byte sum and CRC32C of the blob being written.  Posted
     * hand-overs add to them until waited for, so they live as long as
     * the helper (cf__digester_stop at `done` waits for the last ones). */
    uint32_t sum = 0, crc = 0;
    int64_t chunk_bytes = CF__CHUNK_BYTES;
    /* (placed inline, the pieces are digested here one by one: the same
     * bytes, in the same order, so the same sums, CRCs and statistics) */
    if (c->digest_helper && count * c->rowbytes >= CF__DIGEST_MIN_BYTES && cf__digester_start(&dg, c, NULL) == 0) {
        chunk_bytes = CF__DIGEST_CHUNK_BYTES;
        /* Two buffers: one being digested and written while the next is filled. */
        if (!v->direct && (!(pair[0] = malloc((size_t)chunk_bytes)) || !(pair[1] = malloc((size_t)chunk_bytes)))) {
            rc = CF_FAIL(err, CF_ENOMEM, "%s: out of memory for write buffers", c->path);
            goto done;
        }
    } else if (v->direct) {
        /* digested here, then copied into the file in pieces large
         * enough that the system call's fixed cost is lost in the copy */
        chunk_bytes = CF__INLINE_WRITE_BYTES;
    } else if ((rc = cf__column_need_scratch(c, err))) {
        goto done;
    }
    int64_t chunk_elems = chunk_bytes / w > 0 ? chunk_bytes / w : 1;
    int64_t row = start, e = e0, k = 0;
    while (count > 0) {
        int64_t b = cf__column_locate(c, row);
        int64_t in_blob = c->first_row[b + 1] - row;
        if (in_blob > count) in_blob = count;
        if (b < c->commit.committed_nfile && !CF__STAGED(c) && (rc = cf__column_mark_torn(c, err))) goto done;
        int fd = cf__column_blob_fd(c, b, 1, err);
        if (fd < 0) {
            rc = fd;
            goto done;
        }
        c->sums.unsynced[b] = 1;
        c->sums.made[b] = 1;
        int64_t off0 = (row - c->first_row[b]) * c->rowbytes, off = off0, kicked = off0;
        int64_t elems = in_blob * c->h.nmemb;
        if (in_blob * c->rowbytes >= CF__PREALLOCATE_MIN_BYTES) cf__preallocate(fd, off0, in_blob * c->rowbytes);
        sum = c->h.sums[b];
        crc = 0;
        if (cf__column_first_touch(c, b)) cf__column_stats_reset_blob(c, b);
        c->fresh = 0;
        /* End the first piece on a boundary of the piece size (of a
         * file-system block if that does not divide it) so that the rest
         * start aligned: whole blocks, no read-modify-write of a block
         * shared with a neighbouring writer's request, and page-cache
         * folios as large as the pieces (2 MiB pieces 4 KiB off their
         * boundaries cost a tenth more per byte in the kernel). */
        /* (a piece at offset 0 starts aligned whatever the block size) */
        int64_t n = elems < chunk_elems ? elems : chunk_elems, bs = off > 0 ? cf__column_fd_blksize(c) : 0;
        if (bs > 0 && chunk_bytes % bs == 0) bs = chunk_bytes;
        if (bs > 0 && bs % w == 0 && off % w == 0 && off % bs != 0 && (bs - off % bs) / w < n)
            n = (bs - off % bs) / w;
        const unsigned char *p = piece_at(c, v, e, n, dg ? pair[k & 1] : c->io.scratch);
        if (dg) cf__digester_post(dg, p, n, b, off / w, &sum, &crc);
        for (;;) {
            /* piece k: n elements at p, posted to the helper if there is one */
            int64_t next = elems - n < chunk_elems ? elems - n : chunk_elems;
            const unsigned char *q = NULL;
            if (!dg) {
                cf__digest(c, b, off / w, p, n, &sum, &crc);
            } else if (next > 0) {
                q = piece_at(c, v, e + n, next, pair[(k + 1) & 1]);
                cf__digester_post(dg, q, next, b, off / w + n, &sum, &crc);
            }
            size_t written;
            rc = cf__pwrite_all_done(fd, p, (size_t)(n * w), off, &written, c->path, err);
            if (written > 0 && b < c->commit.committed_nfile) c->commit.inplace_written = 1;
            if (dg) cf__digester_wait(dg);
            if (rc) {
                /* the next piece, posted, adds to sum and crc too */
                if (dg) cf__digester_wait(dg);
                goto done;
            }
            e += n;
            off += n * w;
            elems -= n;
            k++;
            if (c->durable && off - kicked >= CF__WRITEBACK_BYTES) {
                cf__writeback_range(fd, kicked, off - kicked);
                kicked = off;
            }
            if (elems == 0) break;
            n = next;
            p = dg ? q : piece_at(c, v, e, n, c->io.scratch);
        }
        c->h.sums[b] = sum;
        c->commit.header_dirty = 1;
        c->commit.ext_dirty = 1;
        if ((rc = cf__column_note_segment(c, b, off0, off - off0, crc, err))) goto done;
        row += in_blob;
        count -= in_blob;
    }
done:
    if (rc) {
        c->commit.failed = 1; /* bytes may be half written: never commit them */
        cf__column_unmark_torn(c); /* unless none of the committed ones changed */
        cf__column_drop_new_blobs(c, 1);
    }
    cf__digester_stop(dg);
    free(pair[0]);
    free(pair[1]);
    return rc;
}

static int check_writable(const cf_column *c, cf_error *err)
{
    if (!c->writable) return CF_FAIL(err, CF_EREADONLY, "%s: column is open read-only", c->path);
    return 0;
}

int cf_column_write(cf_column *c, int64_t start, int64_t count,
                    const void *buf, const char *buf_dtype,
                    int64_t row_stride, int64_t elem_stride, cf_error *err)
{
    if (!c) return CF_FAIL(err, CF_EARG, "cf_column_write: NULL column");
    int rc = check_writable(c, err);
    if (rc == 0) rc = cf__column_check_range(c, start, count, err);
    if (rc || count == 0 || c->h.nmemb == 0) return rc;
    if (!buf) return CF_FAIL(err, CF_EARG, "%s: NULL buffer", c->path);
    buffer_view v;
    if ((rc = cf__column_make_view(c, &v, buf, buf_dtype, row_stride, elem_stride, 1, err))) return rc;
    if ((rc = cf__column_begin_change(c, err))) return rc;
    return write_range(c, start, count, &v, 0, err);
}

int cf_column_write_rows(cf_column *c, const int64_t *rows, int64_t count,
                         const void *buf, const char *buf_dtype,
                         int64_t row_stride, int64_t elem_stride, cf_error *err)
{
    if (!c) return CF_FAIL(err, CF_EARG, "cf_column_write_rows: NULL column");
    int rc = check_writable(c, err);
    if (rc == 0) rc = cf__column_check_range(c, 0, 0, err);
    if (rc || count == 0) return rc;
    if (count < 0 || !rows || !buf) return CF_FAIL(err, CF_EARG, "%s: bad row list", c->path);
    for (int64_t i = 0; i < count; i++) {
        if (rows[i] < 0 || rows[i] >= c->size)
            return CF_FAIL(err, CF_ERANGE, "%s: row %lld is outside the column's %lld rows",
                           c->path, (long long)rows[i], (long long)c->size);
        if (i > 0 && rows[i] <= rows[i - 1])
            return CF_FAIL(err, CF_EARG, "%s: row list is not strictly increasing (row %lld after %lld)",
                           c->path, (long long)rows[i], (long long)rows[i - 1]);
    }
    if (c->h.nmemb == 0) return 0;
    buffer_view v;
    if ((rc = cf__column_make_view(c, &v, buf, buf_dtype, row_stride, elem_stride, 1, err))) return rc;
    if ((rc = cf__column_begin_change(c, err))) return rc;
    /* Runs of consecutive rows are written as one range. */
    int64_t i = 0;
    while (i < count) {
        int64_t j = i + 1;
        while (j < count && rows[j] == rows[j - 1] + 1) j++;
        if ((rc = write_range(c, rows[i], j - i, &v, i * c->h.nmemb, err))) return rc;
        i = j;
    }
    return 0;
}

int cf_column_grow(cf_column *c, int64_t rows, int64_t nfile, cf_error *err)
{
    if (!c) return CF_FAIL(err, CF_EARG, "cf_column_grow: NULL column");
    if (!c->writable) return CF_FAIL(err, CF_EREADONLY, "%s: column is open read-only", c->path);
    if (c->kind != CF_KIND_DATA)
        return CF_FAIL(err, CF_EKIND, "%s: only data columns can grow", c->path);
    if (rows < 0 || nfile < 0 || (nfile == 0 && rows != 0))
        return CF_FAIL(err, CF_EARG, "%s: cannot add %lld rows in %lld blobs", c->path, (long long)rows, (long long)nfile);
    if (nfile > CF__NFILE_MAX - c->h.nfile)
        return CF_FAIL(err, CF_EARG, "%s: cannot add %lld blobs to its %lld: a column has at most %lld "
                       "(blob names are 6 hex digits)", c->path, (long long)nfile, (long long)c->h.nfile,
                       (long long)CF__NFILE_MAX);
    if (rows > INT64_MAX / c->rowbytes - c->size)
        return CF_FAIL(err, CF_EARG, "%s: cannot add %lld rows to its %lld: its byte count would exceed "
                       "2^63-1 (at most %lld rows of %lld bytes)", c->path, (long long)rows, (long long)c->size,
                       (long long)(INT64_MAX / c->rowbytes), (long long)c->rowbytes);
    if (c->replica)
        return CF_FAIL(err, CF_EKIND, "%s: a replica handle cannot grow the column; the handle that "
                       "commits does", c->path);
    if (nfile == 0) return 0;
    int rc;
    if ((rc = cf__column_begin_change(c, err))) return rc;
    /* Settle pending CRCs while the write records match the old blobs. */
    if ((rc = cf__column_settle_writes(c, err))) return rc;
    int64_t old = c->h.nfile, n = old + nfile;
    int64_t *r = realloc(c->h.rows, (size_t)n * sizeof *r);
    if (!r) return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", c->path);
    c->h.rows = r;
    uint32_t *s = realloc(c->h.sums, (size_t)n * sizeof *s);
    if (!s) return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", c->path);
    c->h.sums = s;
    cf__split_rows(rows, nfile, r + old);
    for (int64_t i = old; i < n; i++) s[i] = 0;
    c->h.nfile = n;
    if ((rc = cf__column_layout_blobs(c, old, err))) {
        c->commit.failed = 1;
        return rc;
    }
    if ((rc = cf__stats_grow(&c->stat.stats, &c->h, old, c->path, err))) return rc;
    c->fresh = 0;
    cf__column_close_fd(c);
    /* New blobs start empty: files a crash left at their names (never
     * listed by a committed header) go, found by one listing of the
     * column directory.  Each new blob is then made by its first writer
     * (one metadata call per blob and writer, none here), and the commit
     * makes those nobody wrote (cf__column_create_unwritten).  The header
     * that covers them is committed by the next flush, after their data,
     * so until then readers see the column without them. */
    int stale = 0;
    if ((rc = cf__column_remove_stale_blobs(c->dir, old, &stale, err))) {
        c->commit.failed = 1;
        return rc;
    }
    c->commit.header_dirty = 1;
    c->commit.ext_dirty = 1;
    return 0;
}
