/* column.c - the column handle: making and freeing one, the metadata files
 * a commit writes, settling the CRCs of what was written, and the
 * accessors.  The rest of the handle: column_create.c, column_open.c,
 * column_stage.c, column_read.c, column_write.c, column_verify.c and
 * column_stats.c. */
#include "column.h"
#include "column_handle.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "checksum.h"
#include "column_stage.h"
#include "column_data.h"
#include "column_index.h"
#include "column_version.h"
#include "error.h"
#include "ext.h"
#include "file.h"
#include "digest.h"
#include "fsutil.h"
#include "hex.h"
#include "names.h"
#include "owner.h"
#include "platform.h"
#include "readmap.h"
#include "readsplit.h"

/* ---- small helpers ---------------------------------------------------- */

int cf__column_is_attrs_only_name(const char *name)
{
    size_t n = strlen(name);
    return strcmp(name, ".") == 0 || (n >= 2 && strcmp(name + n - 2, "/.") == 0);
}

void cf__column_blob_name(int64_t i, char out[32])
{
    snprintf(out, 32, "%06" PRIX64, (uint64_t)i);
}

/* The path of blob i (malloc'd; NULL on ENOMEM). */
char *cf__column_blob_path(const cf_column *c, int64_t i)
{
    char name[32];
    cf__column_blob_name(i, name);
    return cf__path_join(c->dir, name);
}

void cf__column_close_fd(cf_column *c)
{
    if (c->io.fd >= 0 && !cf__column_keep_fd(c)) close(c->io.fd);
    c->io.fd = -1;
    c->io.fd_blob = -1;
}

static void free_writes(cf_column *c)
{
    if (!c->sums.writes) return;
    for (int64_t i = 0; i < c->h.nfile; i++) free(c->sums.writes[i].segments);
    free(c->sums.writes);
    c->sums.writes = NULL;
}

void cf__column_free(cf_column *c)
{
    if (!c) return;
    cf__column_close_fd(c);
    cf__column_drop_kept(c);
    cf__version_release(c);
    /* A new column that was never committed leaves nothing behind. */
    if (!c->replica && c->dir && c->path && CF__STAGED(c)) (void)cf__remove_tree(c->dir, NULL);
    cf__column_owner_forget(c);
    free_writes(c);
    free(c->name);
    cf__lock_release(&c->commit.lock);
    free(c->path);
    free(c->dir);
    free(c->attr_dir);
    cf__header_free(&c->h);
    free(c->first_row);
    cf__stats_free(&c->stat.stats);
    free(c->stat.stats_text);
    free(c->stat.stats_bad);
    free(c->ext.deferred);
    free(c->sums.committed_sums);
    free(c->sums.crc);
    free(c->sums.crc_known);
    free(c->sums.unsynced);
    free(c->sums.made);
    cf__attrset_free(&c->attr.attrs);
    cf__attrset_free(&c->attr.attrs_v1);
    free(c->io.scratch);
    cf__column_ccrc_free(c);
    cf__column_recorded_free(c);
    free(c);
}

/* (Re)build first_row, crc and crc_known for c->h.nfile blobs, keeping the
 * first `keep` entries of crc/crc_known. */
int cf__column_layout_blobs(cf_column *c, int64_t keep, cf_error *err)
{
    int64_t n = c->h.nfile;
    int64_t *first = realloc(c->first_row, (size_t)(n + 1) * sizeof *first);
    if (!first) return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", c->path);
    c->first_row = first;
    uint32_t *crc = realloc(c->sums.crc, (size_t)(n + 1) * sizeof *crc);
    if (!crc) return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", c->path);
    c->sums.crc = crc;
    unsigned char *known = realloc(c->sums.crc_known, (size_t)(n + 1));
    if (!known) return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", c->path);
    c->sums.crc_known = known;
    uint32_t *committed = realloc(c->sums.committed_sums, (size_t)(n + 1) * sizeof *committed);
    if (!committed) return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", c->path);
    c->sums.committed_sums = committed;
    unsigned char *unsynced = realloc(c->sums.unsynced, (size_t)(n + 1));
    if (!unsynced) return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", c->path);
    c->sums.unsynced = unsynced;
    unsigned char *made = realloc(c->sums.made, (size_t)(n + 1));
    if (!made) return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", c->path);
    c->sums.made = made;
    first[0] = 0;
    for (int64_t i = 0; i < n; i++) {
        first[i + 1] = first[i] + c->h.rows[i];
        if (i >= keep) {
            committed[i] = c->h.sums[i];
            /* An empty blob has a known CRC; others are unknown until written. */
            crc[i] = 0;
            known[i] = c->h.rows[i] == 0;
            unsynced[i] = 0;
            made[i] = 0;
        }
    }
    c->size = first[n];
    return 0;
}

cf_column *cf__column_new(const char *name, const char *path, const char *attr_dir)
{
    cf_column *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->io.fd = -1;
    c->io.fd_blob = -1;
    c->ver.dirfd = -1;
    c->ver.opened_header_len = -1;
    c->commit.lock = (cf__lock)CF__LOCK_NONE;
    c->durable = 1;
    cf__attrset_init(&c->attr.attrs);
    cf__attrset_init(&c->attr.attrs_v1);
    c->name = strdup(name);
    c->path = strdup(path);
    c->dir = strdup(path);
    c->attr_dir = strdup(attr_dir);
    if (!c->name || !c->path || !c->dir || !c->attr_dir) {
        cf__column_free(c);
        return NULL;
    }
    return c;
}

void cf__column_take_file_options(cf_column *c, const cf_file *f)
{
    c->durable = CF__DURABLE(f);
    c->verify = (f->flags & CF_OPEN_VERIFY) != 0;
    c->no_mmap = (f->flags & CF_OPEN_NOMMAP) != 0;
    c->digest_helper = f->digest_helper;
    c->commit.nolock = (f->flags & CF_OPEN_NOLOCK) != 0;
    c->commit.lock.off = (f->flags & CF_OPEN_NOLOCKING) != 0;
}

/* Where the attribute files of `name` live: the column directory, or for
 * "." the File root and for "g/." the directory g. */
char *cf__column_attr_dir_of(const cf_file *f, const char *name)
{
    if (strcmp(name, ".") == 0) return strdup(f->path);
    if (cf__column_is_attrs_only_name(name)) {
        size_t n = strlen(name);
        char *group = strndup(name, n - 2);
        if (!group) return NULL;
        char *p = cf__path_join(f->path, group);
        free(group);
        return p;
    }
    return cf__path_join(f->path, name);
}

/* Write a metadata file of the column: replaced atomically (and fsynced
 * when durable), or, in a staging directory nobody else sees yet, written
 * in place for the commit to sync (private_). */
/* keep (private_ only; may be NULL): leave the file open there (-1 on
 * failure), for the commit to fsync without opening it again. */
/* written (may be NULL) is called with the file's descriptor once its
 * bytes are written (cf__write_file_atomic_hook). */
static int write_meta_hook(cf_column *c, const char *name, char *text, size_t len, int private_, int *keep,
                           void (*written)(int, void *), cf_error *err)
{
    int rc = private_ ? cf__write_file_private_hook(c->dir, name, text, len, keep, written, c, err)
                      : cf__write_file_atomic_hook(c->dir, name, text, len, c->durable, written, c, err);
    free(text);
    return rc;
}

/* The header this commit writes: its mtime set back so that any later
 * write of it changes it, and colfile-v1 then gets the same mtime
 * (hstamp.h, docs/format.md 8.1). */
static void stamp_header(int fd, void *arg)
{
    cf__hstamp_backdate(fd, &((cf_column *)arg)->ver.hstamp);
}

static void stamp_ext(int fd, void *arg)
{
    cf__hstamp_apply(fd, &((cf_column *)arg)->ver.hstamp);
}

int cf__column_write_header(cf_column *c, int private_, int *keep, cf_error *err)
{
    char *text;
    size_t len;
    c->ver.hstamp.known = 0; /* until this write gives it */
    int rc = cf__header_format(&c->h, &text, &len, c->path, err);
    return rc ? rc : write_meta_hook(c, "header", text, len, private_, keep, stamp_header, err);
}

/* colfile-v1: the CRCs, the statistics and the file's own checksum
 * (format.md 8.1 and 8.4): one file per column for all, written once per
 * commit, after the header, whose mtime it is given. */
int cf__column_write_ext(cf_column *c, int private_, int *keep, cf_error *err)
{
    char *crcs = NULL, *stats = NULL, *text = NULL;
    size_t cl, sl = 0, len;
    int rc = cf__ext_format(&c->h, c->sums.crc, c->sums.crc_known, &crcs, &cl, c->path, err);
    if (rc == 0) rc = cf__column_stats_section(c, &stats, &sl, err);
    if (rc == 0) rc = cf__ext_assemble(crcs, cl, stats, sl, &text, &len, c->path, err);
    free(crcs);
    free(stats);
    if (rc == 0) rc = write_meta_hook(c, CF__EXT_NAME, text, len, private_, keep, stamp_ext, err);
    if (rc == 0) {
        /* what this handle holds is now what is recorded */
        c->ext.ext_state = CF_EXT_CURRENT;
        c->stat.stats_damaged = 0;
        free(c->stat.stats_bad);
        c->stat.stats_bad = NULL;
    }
    return rc;
}

int cf__column_first_touch(const cf_column *c, int64_t b)
{
    return !c->sums.writes || (c->sums.writes[b].count == 0 && !c->sums.writes[b].overflow);
}

/* Create or truncate blob i to zero bytes.  With `keep`, the blob stays
 * open for writing as the handle's cached descriptor (what blob_fd would
 * open for the first write of it). */
int cf__column_truncate_blob_keep(cf_column *c, int64_t i, int keep, cf_error *err)
{
    char *p = cf__column_blob_path(c, i);
    if (!p) return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", c->path);
    int rc = 0;
    int fd = open(p, (keep ? O_RDWR : O_WRONLY) | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0) {
        int e = errno;
        rc = CF_FAIL(err, CF_EIO, "%s: cannot create blob: %s", p, strerror(e));
    } else if (keep) {
        if (c->sums.made) c->sums.made[i] = 1;
        cf__column_close_fd(c);
        c->io.fd = fd;
        c->io.fd_blob = i;
        c->io.fd_writable = 1;
        c->io.fd_blksize = -1; /* looked up by the first write that needs it */
    } else {
        close(fd);
    }
    free(p);
    return rc;
}


/* Remove blob files numbered >= nfile left by an earlier, larger column. */
int cf__column_remove_stale_blobs(const char *dir, int64_t nfile, int *removed, cf_error *err)
{
    DIR *d = opendir(dir);
    if (!d) return 0;
    int rc = 0;
    struct dirent *ent;
    while (rc == 0 && (ent = readdir(d)) != NULL) {
        const char *s = ent->d_name;
        size_t n = strlen(s);
        if (n < 6 || n > 16) continue;
        uint64_t id = 0;
        size_t k;
        for (k = 0; k < n; k++) {
            int v = cf__hex_digit(s[k]);
            if (v < 0 || (s[k] >= 'a' && s[k] <= 'f')) break; /* blob names are upper case */
            id = id * 16 + (uint64_t)v;
        }
        if (k != n || id < (uint64_t)nfile) continue;
        rc = cf__remove_if_exists(dir, s, err);
        if (rc == 0) (*removed)++;
    }
    closedir(d);
    return rc;
}

int cf__column_need_scratch(cf_column *c, cf_error *err)
{
    if (c->io.scratch) return 0;
    c->io.scratch = malloc((size_t)CF__CHUNK_BYTES);
    if (!c->io.scratch) return CF_FAIL(err, CF_ENOMEM, "%s: out of memory for the I/O buffer", c->path);
    return 0;
}

/* Read blob i whole and compute its CRC32C, statistics and (sum not NULL)
 * bigfile byte sum.  Returns 0 with *complete 0 (nothing known) if the blob
 * is missing or short. */
int cf__column_scan_blob_sum(cf_column *c, int64_t i, uint32_t *sum, int *complete, cf_error *err)
{
    int64_t bytes = c->h.rows[i] * c->rowbytes, w = c->h.dtype.width;
    *complete = 0;
    cf__column_stats_reset_blob(c, i);
    c->sums.crc_known[i] = 0;
    char *p = cf__column_blob_path(c, i);
    if (!p) return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", c->path);
    char name[32];
    cf__column_blob_name(i, name);
    int fd = cf__version_openat(c, name, O_RDONLY | O_CLOEXEC);
    int rc = 0;
    if (fd < 0) goto done;
    if ((rc = cf__column_need_scratch(c, err))) goto done;
    uint32_t crc = 0;
    int64_t off = 0, step = CF__CHUNK_BYTES / w * w;
    while (off < bytes) {
        size_t want = (size_t)(bytes - off < step ? bytes - off : step);
        size_t got;
        if ((rc = cf__pread_all(fd, c->io.scratch, want, off, &got, p, err))) goto done;
        if (got < want) goto done; /* short: nothing known */
        /* the CRC32C of the blob and of each of its chunks */
        cf__column_ccrc_add(c, i, off, c->io.scratch, (int64_t)got, sum, &crc);
        cf__column_stats_add(c, i, off / w, c->io.scratch, (int64_t)got / w);
        off += (int64_t)got;
    }
    c->sums.crc[i] = crc;
    c->sums.crc_known[i] = 1;
    c->stat.stats.valid[i] = cf__stats_blob_whole(&c->stat.stats, i);
    *complete = 1;
done:
    if (fd >= 0) close(fd);
    free(p);
    return rc;
}

static int scan_blob(cf_column *c, int64_t i, int *complete, cf_error *err)
{
    return cf__column_scan_blob_sum(c, i, NULL, complete, err);
}

/* After writes to blob i: if they cover it exactly once, the CRC merged from
 * the segments and the statistics accumulated on the way are the blob's.
 * Otherwise read the blob back, unless it is so large that re-reading it
 * would dominate the write; its CRC and statistics then stay unknown until
 * a later whole write or `colfile index`. */
static int settle_blob(cf_column *c, int64_t i, cf_error *err)
{
    cf__blob_writes *w = &c->sums.writes[i];
    int64_t bytes = c->h.rows[i] * c->rowbytes;
    if (!w->overflow && w->count == 1 && w->segments[0].offset == 0 && w->segments[0].length == bytes) {
        c->sums.crc[i] = w->segments[0].crc;
        c->sums.crc_known[i] = 1;
        /* at a close by chunk owners, they hold the statistics */
        c->stat.stats.valid[i] = !c->stat.stats_off && (c->stat.owner_valid ? (c->stat.owner_valid[i] & 1) != 0
                                                         : cf__stats_blob_whole(&c->stat.stats, i));
        return 0;
    }
    c->sums.crc_known[i] = 0;
    c->stat.stats.valid[i] = 0;
    if (bytes > CF__RECOMPUTE_CRC_MAX) return 0;
    int complete;
    return scan_blob(c, i, &complete, err);
}

int cf_column_index_blob(cf_column *c, int64_t i, cf_error *err)
{
    if (!c) return CF_FAIL(err, CF_EARG, "cf_column_index_blob: NULL column");
    if (c->kind != CF_KIND_DATA) return CF_FAIL(err, CF_EKIND, "%s: not a data column", c->path);
    if (!c->writable) return CF_FAIL(err, CF_EREADONLY, "%s: column is open read-only", c->path);
    if (i < 0 || i >= c->h.nfile)
        return CF_FAIL(err, CF_EARG, "%s: blob %lld does not exist (NFILE %lld)", c->path, (long long)i,
                       (long long)c->h.nfile);
    int complete, rc = cf__column_begin_change(c, err);
    /* data read back whole: the index's fine level is built here, never by writes */
    if (rc == 0) cf__stats_keep_fine(&c->stat.stats, &c->h.dtype);
    c->stat.reading_back = 1;
    if (rc == 0) rc = scan_blob(c, i, &complete, err);
    c->stat.reading_back = 0;
    if (rc) return rc;
    if (!complete) {
        char name[32];
        cf__column_blob_name(i, name);
        return CF_FAIL(err, CF_ESHORT, "%s/%s: blob is missing or shorter than its %lld rows need",
                       c->path, name, (long long)c->h.rows[i]);
    }
    /* Record it as one whole write, so that flush or a pending export
     * carries the result; the byte sums do not change. */
    if (c->sums.writes) {
        free(c->sums.writes[i].segments);
        c->sums.writes[i] = (cf__blob_writes){ NULL, 0, 0, 0 };
    }
    c->fresh = 0;
    c->commit.ext_dirty = 1;
    return cf__column_note_segment(c, i, 0, c->h.rows[i] * c->rowbytes, c->sums.crc[i], err);
}

/* Settle the CRCs and statistics of every blob written since the last
 * commit; write state is then folded into crc/stats/sums. */
int cf__column_settle_writes(cf_column *c, cf_error *err)
{
    if (!c->sums.writes) return 0;
    int rc = 0;
    for (int64_t i = 0; i < c->h.nfile && rc == 0; i++)
        if (c->sums.writes[i].count || c->sums.writes[i].overflow) rc = settle_blob(c, i, err);
    if (rc == 0) free_writes(c);
    return rc;
}

/* ---- accessors --------------------------------------------------------- */

const char *cf_column_name(const cf_column *c) { return c->name; }
const char *cf_column_path(const cf_column *c) { return c->path; }
const char *cf__column_attr_dir(const cf_column *c) { return c->attr_dir; }
const char *cf_column_dtype(const cf_column *c) { return c->dtype_token; }
int cf_column_kind(const cf_column *c) { return c->kind; }
int cf_column_writable(const cf_column *c) { return c->writable; }
int64_t cf_column_itemsize(const cf_column *c) { return c->h.dtype.width; }
int64_t cf_column_nmemb(const cf_column *c) { return c->h.nmemb; }
int64_t cf_column_size(const cf_column *c) { return c->size; }
int64_t cf_column_nfile(const cf_column *c) { return c->h.nfile; }

void cf_column_describe(const cf_column *c, cf_column_desc *d)
{
    d->name = c->name;
    d->path = c->path;
    d->dtype = c->dtype_token;
    d->kind = c->kind;
    d->writable = c->writable;
    d->nmemb = c->h.nmemb;
}

int64_t cf_column_blob_rows(const cf_column *c, int64_t i)
{
    return (i >= 0 && i < c->h.nfile) ? c->h.rows[i] : -1;
}

uint32_t cf_column_blob_sum(const cf_column *c, int64_t i)
{
    return (i >= 0 && i < c->h.nfile) ? c->h.sums[i] : 0;
}

uint32_t cf_checksum_fold(uint32_t raw)
{
    return cf__sysv_fold(raw);
}

int cf_column_blob_crc32c(const cf_column *c, int64_t i, uint32_t *crc)
{
    /* not settled for want of memory: unknown */
    if (c->ext.deferred && cf__column_settle((cf_column *)c, NULL) != 0) return 0;
    if (i < 0 || i >= c->h.nfile || !c->sums.crc_known[i]) return 0;
    /* Writes not yet settled make the recorded value stale. */
    if (c->sums.writes && (c->sums.writes[i].count || c->sums.writes[i].overflow)) return 0;
    if (crc) *crc = c->sums.crc[i];
    return 1;
}

/* ---- data access ---------------------------------------------------- */

int cf__column_blob_fd(cf_column *c, int64_t i, int for_write, cf_error *err)
{
    if (c->io.fd >= 0 && c->io.fd_blob == i && (c->io.fd_writable || !for_write)) return c->io.fd;
    int kept = cf__column_take_kept(c, i);   /* written by this handle: open for writing */
    if (kept >= 0) {
        cf__column_close_fd(c);
        c->io.fd = kept;
        c->io.fd_blob = i;
        c->io.fd_writable = 1;
        c->io.fd_blksize = -1;
        return kept;
    }
    char name[32];
    cf__column_blob_name(i, name);
    /* below the directory held: the blobs of the version this handle
     * opened, whatever has been published at its name since (the cached
     * descriptor is kept until this one opens: its bytes stay readable) */
    int fd = cf__version_openat(c, name, for_write ? O_RDWR | O_CREAT | O_CLOEXEC : O_RDONLY | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT && CF__STAGED(c))
        fd = cf__version_openat(c, name, O_RDWR | O_CREAT | O_CLOEXEC); /* not written yet: empty */
    if (fd < 0) {
        int e = errno;
        if (e == ENOENT && cf__version_gone(c)) return cf__version_replaced(c, err);
        char *p = cf__column_blob_path(c, i);
        if (!p) return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", c->path);
        int rc = e == ENOENT
            ? CF_FAIL(err, CF_ENOENT, "%s: blob file is missing (it should hold rows %lld..%lld)", p,
                      (long long)c->first_row[i], (long long)c->first_row[i + 1] - 1)
            : CF_FAIL(err, CF_EIO, "%s: cannot open blob: %s", p, strerror(e));
        free(p);
        return rc;
    }
    cf__column_close_fd(c);
    c->io.fd = fd;
    c->io.fd_blob = i;
    c->io.fd_writable = for_write;
    /* only writes align to it (looked up by the first one that needs it);
     * a read descriptor is never reused to write */
    c->io.fd_blksize = for_write ? -1 : 0;
    return fd;
}

/* 1 if values of a and b are stored as the same bytes: equal dtypes, or
 * equal kind and width where byte order means nothing (1-byte kinds, S). */
static int same_bytes(const cf__dtype *a, const cf__dtype *b)
{
    if (a->kind != b->kind || a->width != b->width) return 0;
    return a->order == b->order || a->width == 1 || a->kind == 'S';
}

int cf__column_make_view(const cf_column *c, buffer_view *v, const void *buf, const char *dtype,
                     int64_t row_stride, int64_t elem_stride, int for_write, cf_error *err)
{
    v->base = (char *)buf;
    v->row_stride = row_stride;
    v->elem_stride = elem_stride;
    if (dtype) {
        int rc = cf__dtype_parse(dtype, CF__DTYPE_USER, &v->dtype, c->path, err);
        if (rc) return rc;
    } else {
        v->dtype = c->h.dtype;
    }
    const cf__dtype *from = for_write ? &v->dtype : &c->h.dtype;
    const cf__dtype *to = for_write ? &c->h.dtype : &v->dtype;
    if (!cf__dtype_can_convert(from, to)) {
        char a[CF_DTYPE_MAX], b[CF_DTYPE_MAX];
        cf__dtype_format(from, a);
        cf__dtype_format(to, b);
        return CF_FAIL(err, CF_ECAST, "%s: cannot convert %s to %s", c->path, a, b);
    }
    v->regular = c->h.nmemb == 1 || row_stride == c->h.nmemb * elem_stride;
    v->stride = c->h.nmemb == 1 ? row_stride : elem_stride;
    v->direct = v->regular && v->stride == v->dtype.width && same_bytes(&v->dtype, &c->h.dtype);
    return 0;
}


int cf__column_check_range(const cf_column *c, int64_t start, int64_t count, cf_error *err)
{
    if (c->kind == CF_KIND_ATTRS_ONLY)
        return CF_FAIL(err, CF_EKIND, "%s: '%s' holds only attributes, no rows", c->path, c->name);
    if (start < 0 || count < 0 || start > c->size || count > c->size - start)
        return CF_FAIL(err, CF_ERANGE, "%s: rows %lld..%lld are outside the column's %lld rows",
                       c->path, (long long)start, (long long)(start + count - 1), (long long)c->size);
    return 0;
}

void cf_column_forget(cf_column *c)
{
    if (!c) return;
    c->replica = 1; /* leaves a staging directory alone */
    cf__lock_forget(&c->commit.lock);
    cf__column_free(c);
}

void cf_column_discard(cf_column *c)
{
    if (!c) return;
    c->commit.failed = 1;
    cf__column_drop_new_blobs(c, 0);
}
