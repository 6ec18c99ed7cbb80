/* column_read.c - the read paths of a column: a range of rows, listed rows
 * (sorted or not) and a strided step, each checked against the blobs' CRC32C
 * on the way. */
#include "column_data.h"
#include "column_index.h"
#include "stindex.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "checksum.h"
#include "column_version.h"
#include "error.h"
#include "ext.h"
#include "file.h"
#include "digest.h"
#include "fsutil.h"
#include "platform.h"
#include "readmap.h"
#include "readsplit.h"
#include "column_handle.h"

int64_t cf_column_row_offset(const cf_column *c, int64_t row)
{
    if (!c || row < 0 || row >= c->size) return -1;
    return (row - c->first_row[cf__column_locate(c, row)]) * c->rowbytes;
}

/* Rows past the blob file's end have no bytes: never written, or cut
 * short, which look the same, so they are an error, never zeros. */
static int short_blob_error(cf_column *c, int64_t blob, int64_t byte_end, cf_error *err)
{
    char name[32];
    cf__column_blob_name(blob, name);
    struct stat st;
    long long have = fstat(c->io.fd, &st) == 0 ? (long long)st.st_size : -1;
    long long first = (long long)c->first_row[blob], last = (long long)c->first_row[blob + 1] - 1;
    long long missing = have < 0 ? first : first + have / c->rowbytes;
    return CF_FAIL(err, CF_ESHORT,
                   "%s: column '%s': rows %lld..%lld hold no data (never written, or %s was cut short): "
                   "blob holds %lld bytes but rows up to %lld need %lld (blob rows %lld..%lld)",
                   c->path, c->name, missing, last, name, have,
                   (long long)(c->first_row[blob] + (byte_end + c->rowbytes - 1) / c->rowbytes - 1),
                   (long long)byte_end, first, last);
}

/* The rows of blob i its file holds, or a negative CF_E* code. */
static int64_t rows_held(cf_column *c, int64_t i, cf_error *err)
{
    if (c->kind != CF_KIND_DATA) return CF_FAIL(err, CF_EKIND, "%s: '%s' holds no rows", c->path, c->name);
    if (i < 0 || i >= c->h.nfile)
        return CF_FAIL(err, CF_ERANGE, "%s: no blob %lld (nfile is %lld)", c->path, (long long)i,
                       (long long)c->h.nfile);
    if (c->h.rows[i] == 0) return 0;
    /* written whole through this handle or one whose state it merged (its
     * CRC32C came from those writes): no need to ask the file system, which
     * would cost the committing MPI rank one open per blob of the column */
    if (c->sums.made && c->sums.made[i] && c->sums.crc_known[i]) return c->h.rows[i];
    /* a blob new in this version (it started empty) whose writes are all
     * known: it ends where the last of them ends */
    const cf__blob_writes *w = c->sums.writes && c->sums.made ? &c->sums.writes[i] : NULL;
    if (w && i >= c->commit.committed_nfile && c->sums.made[i] && !w->overflow && w->count > 0) {
        const cf__segment *last = &w->segments[w->count - 1];
        int64_t held = (last->offset + last->length) / c->rowbytes;
        return held < c->h.rows[i] ? held : c->h.rows[i];
    }
    int fd = cf__column_blob_fd(c, i, 0, err);
    if (fd == CF_ENOENT) return 0;
    if (fd < 0) return fd;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        char name[32];
        cf__column_blob_name(i, name);
        return CF_FAIL(err, CF_EIO, "%s/%s: cannot stat blob: %s", c->path, name, strerror(e));
    }
    int64_t held = (int64_t)st.st_size / c->rowbytes;
    return held < c->h.rows[i] ? held : c->h.rows[i];
}

int cf_column_blob_rows_held(cf_column *c, int64_t i, int64_t *rows, cf_error *err)
{
    if (!c || !rows) return CF_FAIL(err, CF_EARG, "cf_column_blob_rows_held: NULL argument");
    int64_t held = rows_held(c, i, err);
    if (held < 0) return (int)held;
    *rows = held;
    return 0;
}

/* The reverse of gather: contiguous column-typed `in` to the caller's buffer. */
static void scatter(const cf_column *c, const buffer_view *v, int64_t e, int64_t n, const unsigned char *in)
{
    int64_t w = c->h.dtype.width;
    if (v->regular) {
        cf__convert(v->base + e * v->stride, (ptrdiff_t)v->stride, &v->dtype, in, (ptrdiff_t)w, &c->h.dtype, (size_t)n);
        return;
    }
    int64_t nmemb = c->h.nmemb;
    while (n > 0) {
        int64_t r = e / nmemb, j = e % nmemb;
        int64_t m = nmemb - j < n ? nmemb - j : n;
        cf__convert(v->base + r * v->row_stride + j * v->elem_stride, (ptrdiff_t)v->elem_stride, &v->dtype,
                    in, (ptrdiff_t)w, &c->h.dtype, (size_t)m);
        in += m * w;
        e += m;
        n -= m;
    }
}

static int crc_mismatch_error(cf_column *c, int64_t b, uint32_t got, cf_error *err)
{
    char name[32];
    cf__column_blob_name(b, name);
    int updating = cf__version_has(c, CF__TORN_NAME);
    if (updating)
        return CF_FAIL(err, CF_ETORN, "%s/%s: rows %lld..%lld changed since this handle opened the column: an "
                       "in-place update is in progress or was interrupted (%s)", c->path, name,
                       (long long)c->first_row[b], (long long)c->first_row[b + 1] - 1, CF__TORN_NAME);
    /* an update committed (or a replacement) since the open: the rows are
     * another version's, not damage */
    if (cf__version_changed(c)) {
        char what[64];
        snprintf(what, sizeof what, "blob %s", name);
        return cf__version_changed_error(c, what, err);
    }
    return CF_FAIL(err, CF_ECHECKSUM,
                   "%s/%s: CRC32C of the data read is %08x but %s records %08x: blob (rows %lld..%lld) is "
                   "corrupt", c->path, name, (unsigned)got, CF__EXT_NAME, (unsigned)c->sums.crc[b],
                   (long long)c->first_row[b], (long long)c->first_row[b + 1] - 1);
}

/* Copy nbytes at byte off of blob b (open as fd) to dst, adding them to
 * *crc when crc is not NULL.  On a thread limited to one CPU, ranges the
 * page cache holds are copied from a map of the blob (readmap.h), checked
 * piecewise as they are copied; otherwise, and for what is not cached, they
 * are read with pread (checked ones in pieces of CF__READ_CHECK_BYTES;
 * large cached ranges as two halves on two threads: readsplit.h). */
/* Bytes read with one pread, then checked, when a checked read is not
 * mapped: as much as the kernel reads ahead, so that the next piece is on
 * its way from disk while the CPU checks this one. */
#define CF__READ_CHECK_BYTES ((int64_t)8 << 20)

static int copy_blob(cf_column *c, int64_t b, int fd, int64_t off, int64_t nbytes, unsigned char *dst,
                     uint32_t *crc, cf_error *err)
{
    /* Where this thread may use two CPUs, a cached range is copied faster
     * by pread on two threads (readsplit.h) than out of a map on one:
     * 0.030 s against 0.063 s for the 805 MB peers snapshot into touched
     * buffers (np.copyto of the same bytes: 0.040 s). */
    int use_map = nbytes >= CF__MAP_MIN_BYTES && !cf__can_run_parallel();
    for (int64_t done = 0; done < nbytes;) {
        int64_t n = nbytes - done < CF__MAP_WINDOW_BYTES ? nbytes - done : CF__MAP_WINDOW_BYTES;
        cf__map m;
        /* Into untouched memory (a new array) pread is the faster copy. */
        if (use_map && cf__buffer_touched(dst + done, n) && cf__map_range(fd, off + done, n, c->no_mmap, &m)) {
            if (crc) {
                for (int64_t k = 0; k < n; k += CF__DIGEST_PIECE_BYTES) {
                    size_t piece = (size_t)(n - k < CF__DIGEST_PIECE_BYTES ? n - k : CF__DIGEST_PIECE_BYTES);
                    *crc = cf__crc32c_update(*crc, m.at + k, piece);
                    memcpy(dst + done + k, m.at + k, piece);
                }
            } else {
                memcpy(dst + done, m.at, (size_t)n);
            }
            cf__map_release(&m);
            done += n;
            continue;
        }
        /* An unchecked read asks for the whole window in one pread, as
         * numpy, h5py and dd do: the kernel's default read-ahead keeps the
         * disk busy ahead of the copy by itself.  Measured slower from
         * disk: 8 MiB pieces, and POSIX_FADV_SEQUENTIAL (twice the
         * read-ahead), which on a device that gives its bandwidth at the
         * default depth only put twice the requests in flight, each
         * waiting longer (docs/performance.md, "Reads"). */
        size_t piece = crc ? (size_t)CF__READ_CHECK_BYTES : 0, got;
        int rc = cf__pread_split(fd, dst + done, (size_t)n, off + done, piece, crc, &got, c->path, err);
        if (rc) return rc;
        if ((int64_t)got < n) return short_blob_error(c, b, off + done + n, err);
        done += n;
    }
    return 0;
}

/* Convert `elems` elements at byte off of blob b (open as fd) to the
 * caller's buffer from flat element e on, adding their bytes to *crc when
 * crc is not NULL: from a map of the blob when the page cache holds them,
 * else through the scratch buffer. */
static int convert_blob(cf_column *c, int64_t b, int fd, int64_t off, int64_t elems, const buffer_view *v,
                        int64_t e, uint32_t *crc, cf_error *err)
{
    int64_t w = c->h.dtype.width;
    int64_t chunk_elems = CF__CHUNK_BYTES / w > 0 ? CF__CHUNK_BYTES / w : 1;
    int64_t window_elems = CF__MAP_WINDOW_BYTES / w > 0 ? CF__MAP_WINDOW_BYTES / w : 1;
    int use_map = elems * w >= CF__MAP_MIN_BYTES;
    int rc;
    while (elems > 0) {
        int64_t n = elems < window_elems ? elems : window_elems;
        cf__map m;
        if (use_map && cf__map_range(fd, off, n * w, c->no_mmap, &m)) {
            for (int64_t k = 0; k < n; k += chunk_elems) {
                int64_t piece = n - k < chunk_elems ? n - k : chunk_elems;
                if (crc) *crc = cf__crc32c_update(*crc, m.at + k * w, (size_t)(piece * w));
                scatter(c, v, e + k, piece, m.at + k * w);
            }
            cf__map_release(&m);
        } else {
            if ((rc = cf__column_need_scratch(c, err))) return rc;
            for (int64_t k = 0; k < n;) {
                int64_t piece = n - k < chunk_elems ? n - k : chunk_elems;
                size_t got;
                if ((rc = cf__pread_all(fd, c->io.scratch, (size_t)(piece * w), off + k * w, &got, c->path, err)))
                    return rc;
                if ((int64_t)got < piece * w) return short_blob_error(c, b, off + (k + piece) * w, err);
                if (crc) *crc = cf__crc32c_update(*crc, c->io.scratch, (size_t)(piece * w));
                scatter(c, v, e + k, piece, c->io.scratch);
                k += piece;
            }
        }
        e += n;
        off += n * w;
        elems -= n;
    }
    return 0;
}

static int chunk_mismatch_error(cf_column *c, int64_t b, int64_t kk, uint32_t got, uint32_t want, cf_error *err)
{
    char name[32];
    cf__column_blob_name(b, name);
    if (cf__version_has(c, CF__TORN_NAME) || cf__version_changed(c)) return crc_mismatch_error(c, b, got, err);
    int64_t cr = cf__column_crc_chunk_rows(c), r0 = c->first_row[b] + kk * cr, r1 = r0 + cr;
    if (r1 > c->first_row[b + 1]) r1 = c->first_row[b + 1];
    return CF_FAIL(err, CF_ECHECKSUM,
                   "%s/%s: CRC32C of chunk %lld (rows %lld..%lld) read is %08x but %s records %08x: the chunk is "
                   "corrupt", c->path, name, (long long)kk, (long long)r0, (long long)r1 - 1, (unsigned)got,
                   CF__INDEX_NAME, (unsigned)want);
}

/* Rows [off/rowbytes, +in_blob) of blob b, read with verification where a
 * read covers less than the blob: every chunk it covers whole and whose
 * CRC32C is known is checked on its own; the rest is read unchecked. */
static int read_chunks_checked(cf_column *c, int64_t b, int fd, int64_t off, int64_t nbytes, const buffer_view *v,
                               int64_t e, cf_error *err)
{
    int64_t w = c->h.dtype.width, cb = cf__column_crc_chunk_rows(c) * c->rowbytes, end = off + nbytes;
    int64_t blob_bytes = c->h.rows[b] * c->rowbytes;
    while (off < end) {
        int64_t kk = off / cb, c0 = kk * cb, c1 = c0 + cb < blob_bytes ? c0 + cb : blob_bytes;
        uint32_t want = 0;
        int whole = off == c0 && c1 <= end && cf__column_chunk_crc(c, b, kk, &want);
        /* unchecked: up to the next chunk this read covers whole with a known CRC32C */
        int64_t stop = whole ? c1 : (c1 < end ? c1 : end);
        while (!whole && stop < end) {
            int64_t n1 = stop + cb < blob_bytes ? stop + cb : blob_bytes;
            if (n1 <= end && cf__column_chunk_crc(c, b, stop / cb, &want)) break;
            stop = n1 < end ? n1 : end;
        }
        uint32_t crc = 0;
        int rc = v->direct ? copy_blob(c, b, fd, off, stop - off, (unsigned char *)v->base + e * w,
                                       whole ? &crc : NULL, err)
                           : convert_blob(c, b, fd, off, (stop - off) / w, v, e, whole ? &crc : NULL, err);
        if (rc) return rc;
        if (whole && crc != want) return chunk_mismatch_error(c, b, kk, crc, want, err);
        e += (stop - off) / w;
        off = stop;
    }
    return 0;
}

/* Read `count` rows from `start` into the caller's buffer, where the first
 * of them is flat element e0 of the view.  With verification on, a blob
 * read whole with a known CRC32C is checked as its bytes pass through
 * (in cache-sized pieces, so the check costs no second trip to memory). */
static int read_range(cf_column *c, int64_t start, int64_t count, const buffer_view *v, int64_t e0, cf_error *err)
{
    int64_t w = c->h.dtype.width;
    int rc;
    if (!v->direct && w > CF__CHUNK_BYTES)
        return CF_FAIL(err, CF_EDTYPE, "%s: elements of %lld bytes are too wide to convert", c->path, (long long)w);
    if (c->verify && c->ext.deferred && (rc = cf__column_settle(c, err))) return rc; /* the CRCs */
    int64_t row = start, e = e0;
    while (count > 0) {
        int64_t b = cf__column_locate(c, row);
        int64_t in_blob = c->first_row[b + 1] - row;
        if (in_blob > count) in_blob = count;
        int fd = cf__column_blob_fd(c, b, 0, err);
        if (fd < 0) return fd;
        int64_t off = (row - c->first_row[b]) * c->rowbytes;
        int64_t nbytes = in_blob * c->rowbytes;
        /* Only a CRC that describes the bytes: none of this handle's writes
         * since it was recorded. */
        int check = c->verify && c->sums.crc_known[b] && off == 0 && in_blob == c->h.rows[b] &&
                    cf__column_first_touch(c, b) && !c->sums.unsynced[b];
        uint32_t crc = 0;
        /* a part of the blob: its chunks' CRC32C (colfile-index-v1) */
        int chunked = !check && c->verify && cf__column_first_touch(c, b) && !c->sums.unsynced[b] &&
                      cf__column_crc_chunk_rows(c) > 0;
        if (chunked)
            rc = read_chunks_checked(c, b, fd, off, nbytes, v, e, err);
        else if (v->direct)
            rc = copy_blob(c, b, fd, off, nbytes, (unsigned char *)v->base + e * w, check ? &crc : NULL, err);
        else
            rc = convert_blob(c, b, fd, off, in_blob * c->h.nmemb, v, e, check ? &crc : NULL, err);
        if (rc) return rc;
        if (check && crc != c->sums.crc[b]) return crc_mismatch_error(c, b, crc, err);
        e += in_blob * c->h.nmemb;
        row += in_blob;
        count -= in_blob;
    }
    return 0;
}

int cf_column_read(cf_column *c, int64_t start, int64_t count,
                   void *buf, const char *buf_dtype,
                   int64_t row_stride, int64_t elem_stride, cf_error *err)
{
    if (!c) return CF_FAIL(err, CF_EARG, "cf_column_read: NULL column");
    int rc = cf__column_check_range(c, start, count, err);
    if (rc || count == 0 || c->h.nmemb == 0) return rc;
    if (!buf) return CF_FAIL(err, CF_EARG, "%s: NULL buffer", c->path);
    buffer_view v;
    if ((rc = cf__column_make_view(c, &v, buf, buf_dtype, row_stride, elem_stride, 0, err))) return rc;
    return read_range(c, start, count, &v, 0, err);
}

/* Rows to read: the list `list` (sorted), or when it is NULL the
 * progression start, start+step, ...  Row k goes to destination row
 * dst[k], or k when dst is NULL. */
typedef struct {
    const int64_t *list;
    int64_t start, step;
    const int64_t *dst;
} row_source;

static inline int64_t row_at(const row_source *s, int64_t k)
{
    return s->list ? s->list[k] : s->start + k * s->step;
}

/* The end of the run of listed rows from i on (i < count) that lie in
 * [.., lim): rows i..j-1 with row_at(j-1) < lim <= row_at(j). */
static int64_t run_end(const row_source *s, int64_t i, int64_t count, int64_t lim)
{
    if (!s->list) {
        int64_t j = i + 1 + (lim - 1 - row_at(s, i)) / s->step;
        return j < count ? j : count;
    }
    int64_t j = i + 1;
    while (j < count && s->list[j] < lim) j++;
    return j;
}

/* Copy listed rows i..j-1 (all in [r0, ..)) from `src`, which holds row r0
 * first, to destination rows i..j-1.  Rows of common widths are copied
 * with fixed-size copies the compiler inlines. */
static void gather_rows(const cf_column *c, const buffer_view *v, const row_source *s, int64_t i, int64_t j,
                        int64_t r0, const unsigned char *src)
{
    int64_t rb = c->rowbytes, nmemb = c->h.nmemb;
    if (!v->direct) {
        for (int64_t k = i; k < j; k++)
            scatter(c, v, (s->dst ? s->dst[k] : k) * nmemb, nmemb, src + (row_at(s, k) - r0) * rb);
        return;
    }
    unsigned char *dst = (unsigned char *)v->base;
#define CF__GATHER(W)                                                                           \
    do {                                                                                        \
        if (s->dst)                                                                             \
            for (int64_t k = i; k < j; k++) memcpy(dst + s->dst[k] * (W), src + (row_at(s, k) - r0) * (W), (W)); \
        else if (s->list)                                                                       \
            for (int64_t k = i; k < j; k++) memcpy(dst + k * (W), src + (s->list[k] - r0) * (W), (W)); \
        else                                                                                    \
            for (int64_t k = i; k < j; k++)                                                     \
                memcpy(dst + k * (W), src + (k - i) * s->step * (W) + (row_at(s, i) - r0) * (W), (W)); \
    } while (0)
    switch (rb) {
    case 1: CF__GATHER(1); break;
    case 2: CF__GATHER(2); break;
    case 4: CF__GATHER(4); break;
    case 8: CF__GATHER(8); break;
    case 12: CF__GATHER(12); break;
    case 16: CF__GATHER(16); break;
    case 24: CF__GATHER(24); break;
    case 32: CF__GATHER(32); break;
    default: CF__GATHER(rb); break;
    }
#undef CF__GATHER
}

/* Gathering a window on two threads (cf__run_two): each maps the span of
 * its half of the listed rows and gathers them.  Maps and gathers touch no
 * handle state, so the halves are independent. */
typedef struct {
    const cf_column *c;
    const buffer_view *v;
    const row_source *s;
    int fd;
    int64_t i, j, blob_first; /* listed rows i..j-1 of blob rows from blob_first */
    int done;
} gather_half;

static void gather_half_job(void *arg)
{
    gather_half *h = arg;
    int64_t rb = h->c->rowbytes, r0 = row_at(h->s, h->i);
    cf__map m;
    h->done = cf__map_range(h->fd, (r0 - h->blob_first) * rb, (row_at(h->s, h->j - 1) - r0 + 1) * rb, h->c->no_mmap,
                            &m);
    if (!h->done) return;
    gather_rows(h->c, h->v, h->s, h->i, h->j, r0, m.at);
    cf__map_release(&m);
}

/* Windows of at least this many bytes are gathered on two threads where
 * the thread may use two CPUs. */
#define CF__GATHER_SPLIT_BYTES ((int64_t)16 << 20)

/* Gather listed rows i..end-1 of blob b (open as fd, spanning span_bytes)
 * on two threads; 0 if a half could not be mapped (the caller then reads
 * the window its own way, writing the same bytes again). */
static int gather_split(const cf_column *c, const buffer_view *v, const row_source *s, int fd, int64_t b,
                        int64_t i, int64_t end, int64_t span_bytes)
{
    if (!v->direct || end - i < 2 || span_bytes < CF__GATHER_SPLIT_BYTES || !cf__can_run_parallel()) return 0;
    int64_t mid = i + (end - i) / 2;
    gather_half lo = { c, v, s, fd, i, mid, c->first_row[b], 0 };
    gather_half hi = { c, v, s, fd, mid, end, c->first_row[b], 0 };
    cf__run_two(gather_half_job, &lo, &hi);
    return lo.done && hi.done;
}

/* Read the `count` rows of s (sorted, in range) into consecutive
 * destination rows of v.  Within one blob, the rows of a window of
 * CF__MAP_WINDOW_BYTES are gathered from a map of the blob when the page
 * cache holds them and they are not too sparse; otherwise runs of rows
 * whose span fits the scratch buffer and whose gaps are small are read with
 * one pread each. */
static int read_listed(cf_column *c, const row_source *s, int64_t count, const buffer_view *v, cf_error *err)
{
    int64_t rb = c->rowbytes, nmemb = c->h.nmemb;
    int rc;
    if (rb > CF__CHUNK_BYTES / 4) {
        /* Wide rows: one contiguous read per listed row. */
        for (int64_t i = 0; i < count; i++)
            if ((rc = read_range(c, row_at(s, i), 1, v, (s->dst ? s->dst[i] : i) * nmemb, err))) return rc;
        return 0;
    }
    const int64_t max_gap = 64 * 1024 / rb + 1;
    const int64_t max_span = CF__CHUNK_BYTES / rb;
    const int64_t map_span = CF__MAP_WINDOW_BYTES / rb;
    int64_t i = 0;
    while (i < count) {
        int64_t r0 = row_at(s, i);
        int64_t b = cf__column_locate(c, r0);
        int64_t blob_end = c->first_row[b + 1];
        int fd = cf__column_blob_fd(c, b, 0, err);
        if (fd < 0) return fd;
        int64_t lim = r0 + map_span < blob_end ? r0 + map_span : blob_end;
        int64_t end = run_end(s, i, count, lim);
        int64_t span_bytes = (row_at(s, end - 1) - r0 + 1) * rb;
        /* Mapped: at least one listed row per 64 KiB on average. */
        cf__map m;
        int dense = span_bytes >= CF__MAP_MIN_BYTES && (end - i) * 65536 >= span_bytes;
        if (dense && gather_split(c, v, s, fd, b, i, end, span_bytes)) {
            i = end;
            continue;
        }
        if (dense && cf__map_range(fd, (r0 - c->first_row[b]) * rb, span_bytes, c->no_mmap, &m)) {
            gather_rows(c, v, s, i, end, r0, m.at);
            cf__map_release(&m);
            i = end;
            continue;
        }
        if ((rc = cf__column_need_scratch(c, err))) return rc;
        while (i < end) {
            r0 = row_at(s, i);
            int64_t j = i + 1;
            if (s->list) {
                while (j < end && s->list[j] - r0 < max_span && s->list[j] - s->list[j - 1] <= max_gap) j++;
            } else if (s->step <= max_gap) {
                j = run_end(s, i, end, r0 + max_span);
            }
            int64_t span = row_at(s, j - 1) - r0 + 1;
            int64_t off = (r0 - c->first_row[b]) * rb;
            size_t got;
            if ((rc = cf__pread_all(fd, c->io.scratch, (size_t)(span * rb), off, &got, c->path, err))) return rc;
            if ((int64_t)got < span * rb) return short_blob_error(c, b, off + span * rb, err);
            gather_rows(c, v, s, i, j, r0, c->io.scratch);
            i = j;
        }
    }
    return 0;
}

/* Columns of at most this many bytes, all in the page cache, are mapped
 * whole to gather rows listed out of order. */
#define CF__GATHER_MAP_MAX ((int64_t)16 << 30)

/* Rows listed out of order, gathered in that order from maps of every
 * blob: no sort.  *done is 0 (nothing read) when the column is small,
 * large, not all in the page cache or a blob cannot be opened: the caller
 * then sorts. */
static void gather_mapped(cf_column *c, const int64_t *rows, int64_t count, const buffer_view *v, int *done)
{
    int64_t nfile = c->h.nfile, rb = c->rowbytes, nmemb = c->h.nmemb;
    *done = 0;
    if (c->size * rb < CF__MAP_MIN_BYTES || c->size * rb > CF__GATHER_MAP_MAX || rb > CF__CHUNK_BYTES) return;
    cf__map *maps = calloc((size_t)nfile, sizeof *maps);
    if (!maps) return;
    int64_t b = 0;
    for (; b < nfile; b++) {
        if (c->h.rows[b] == 0) continue;
        cf_error ignored;
        int fd = cf__column_blob_fd(c, b, 0, &ignored);
        if (fd < 0 || !cf__map_range(fd, 0, c->h.rows[b] * rb, c->no_mmap, &maps[b])) break;
    }
    if (b == nfile) {
        unsigned char *dst = (unsigned char *)v->base;
#define CF__GATHER_ANY(W)                                                                       \
    for (int64_t k = 0; k < count; k++) {                                                       \
        int64_t r = rows[k], i = nfile == 1 ? 0 : cf__column_locate(c, r);                                 \
        memcpy(dst + k * (W), maps[i].at + (r - c->first_row[i]) * (W), (W));                   \
    }
        if (!v->direct) {
            for (int64_t k = 0; k < count; k++) {
                int64_t r = rows[k], i = nfile == 1 ? 0 : cf__column_locate(c, r);
                scatter(c, v, k * nmemb, nmemb, maps[i].at + (r - c->first_row[i]) * rb);
            }
        } else {
            switch (rb) {
            case 4: CF__GATHER_ANY(4); break;
            case 8: CF__GATHER_ANY(8); break;
            case 12: CF__GATHER_ANY(12); break;
            case 16: CF__GATHER_ANY(16); break;
            case 24: CF__GATHER_ANY(24); break;
            default: CF__GATHER_ANY(rb); break;
            }
        }
#undef CF__GATHER_ANY
        *done = 1;
    }
    for (int64_t i = 0; i < nfile; i++) cf__map_release(&maps[i]);
    free(maps);
}

typedef struct {
    int64_t row, pos;
} row_pos;

static int by_row(const void *a, const void *b)
{
    const row_pos *x = a, *y = b;
    return x->row < y->row ? -1 : x->row > y->row ? 1 : (x->pos > y->pos) - (x->pos < y->pos);
}

/* Rows listed out of order: gathered from maps of the column when it can
 * (gather_mapped), else sorted (O(n log n), 32 bytes per row of temporary
 * memory), read in row order and put in place. */
static int read_unsorted(cf_column *c, const int64_t *rows, int64_t count, const buffer_view *v, cf_error *err)
{
    int done;
    gather_mapped(c, rows, count, v, &done);
    if (done) return 0;
    row_pos *pairs = malloc((size_t)count * sizeof *pairs);
    int64_t *sorted = malloc((size_t)count * 2 * sizeof *sorted);
    int rc = 0;
    if (!pairs || !sorted) {
        rc = CF_FAIL(err, CF_ENOMEM, "%s: out of memory to sort %lld rows", c->path, (long long)count);
        goto done;
    }
    for (int64_t k = 0; k < count; k++) pairs[k] = (row_pos){rows[k], k};
    qsort(pairs, (size_t)count, sizeof *pairs, by_row);
    for (int64_t k = 0; k < count; k++) {
        sorted[k] = pairs[k].row;
        sorted[count + k] = pairs[k].pos;
    }
    row_source s = {sorted, 0, 0, sorted + count};
    rc = read_listed(c, &s, count, v, err);
done:
    free(pairs);
    free(sorted);
    return rc;
}

int cf_column_read_rows(cf_column *c, const int64_t *rows, int64_t count,
                        void *buf, const char *buf_dtype,
                        int64_t row_stride, int64_t elem_stride, cf_error *err)
{
    if (!c) return CF_FAIL(err, CF_EARG, "cf_column_read_rows: NULL column");
    int rc = cf__column_check_range(c, 0, 0, err);
    if (rc || count == 0) return rc;
    if (count < 0 || !rows || !buf) return CF_FAIL(err, CF_EARG, "%s: bad row list", c->path);
    int is_sorted = 1;
    for (int64_t i = 0; i < count; i++) {
        if (rows[i] < 0 || rows[i] >= c->size)
            return CF_FAIL(err, CF_ERANGE, "%s: row %lld is outside the column's %lld rows",
                           c->path, (long long)rows[i], (long long)c->size);
        if (i > 0 && rows[i] < rows[i - 1]) is_sorted = 0;
    }
    if (c->h.nmemb == 0) return 0;
    buffer_view v;
    if ((rc = cf__column_make_view(c, &v, buf, buf_dtype, row_stride, elem_stride, 0, err))) return rc;
    if (!is_sorted) return read_unsorted(c, rows, count, &v, err);
    row_source s = {rows, 0, 0, NULL};
    return read_listed(c, &s, count, &v, err);
}

int cf_column_read_step(cf_column *c, int64_t start, int64_t step, int64_t count,
                        void *buf, const char *buf_dtype,
                        int64_t row_stride, int64_t elem_stride, cf_error *err)
{
    if (!c) return CF_FAIL(err, CF_EARG, "cf_column_read_step: NULL column");
    int rc = cf__column_check_range(c, 0, 0, err);
    if (rc || count == 0) return rc;
    if (step < 1 || count < 0 || !buf)
        return CF_FAIL(err, CF_EARG, "%s: bad stepped read (step %lld, count %lld)", c->path, (long long)step,
                       (long long)count);
    if (start < 0 || start >= c->size || (count - 1) > (c->size - 1 - start) / step)
        return CF_FAIL(err, CF_ERANGE, "%s: rows %lld, %lld, ... (%lld of them) are outside the column's %lld rows",
                       c->path, (long long)start, (long long)start + step, (long long)count, (long long)c->size);
    if (c->h.nmemb == 0) return 0;
    buffer_view v;
    if ((rc = cf__column_make_view(c, &v, buf, buf_dtype, row_stride, elem_stride, 0, err))) return rc;
    row_source s = {NULL, start, step, NULL};
    return read_listed(c, &s, count, &v, err);
}
