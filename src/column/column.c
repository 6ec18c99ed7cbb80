/* column.c - columns: create and open, the metadata files a commit writes,
 * settling the CRCs of what was written, and the accessors.  The rest of
 * the handle: column_commit.c, column_read.c, column_write.c,
 * column_verify.c and column_stats.c. */
#include "column.h"

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
#include "column_commit.h"
#include "column_data.h"
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

static int is_attrs_only_name(const char *name)
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
    if (c->fd >= 0) close(c->fd);
    c->fd = -1;
    c->fd_blob = -1;
}

static void free_writes(cf_column *c)
{
    if (!c->writes) return;
    for (int64_t i = 0; i < c->h.nfile; i++) free(c->writes[i].segments);
    free(c->writes);
    c->writes = NULL;
}

void cf__column_free(cf_column *c)
{
    if (!c) return;
    cf__column_close_fd(c);
    cf__version_release(c);
    /* A new column that was never committed leaves nothing behind. */
    if (!c->replica && c->dir && c->path && CF__STAGED(c)) (void)cf__remove_tree(c->dir, NULL);
    free_writes(c);
    free(c->name);
    cf__lock_release(&c->lock);
    free(c->path);
    free(c->dir);
    free(c->attr_dir);
    cf__header_free(&c->h);
    free(c->first_row);
    cf__stats_free(&c->stats);
    free(c->stats_text);
    free(c->stats_bad);
    free(c->deferred);
    free(c->committed_sums);
    free(c->crc);
    free(c->crc_known);
    free(c->unsynced);
    cf__attrset_free(&c->attrs);
    cf__attrset_free(&c->attrs_v1);
    free(c->scratch);
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
    uint32_t *crc = realloc(c->crc, (size_t)(n + 1) * sizeof *crc);
    if (!crc) return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", c->path);
    c->crc = crc;
    unsigned char *known = realloc(c->crc_known, (size_t)(n + 1));
    if (!known) return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", c->path);
    c->crc_known = known;
    uint32_t *committed = realloc(c->committed_sums, (size_t)(n + 1) * sizeof *committed);
    if (!committed) return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", c->path);
    c->committed_sums = committed;
    unsigned char *unsynced = realloc(c->unsynced, (size_t)(n + 1));
    if (!unsynced) return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", c->path);
    c->unsynced = unsynced;
    first[0] = 0;
    for (int64_t i = 0; i < n; i++) {
        first[i + 1] = first[i] + c->h.rows[i];
        if (i >= keep) {
            committed[i] = c->h.sums[i];
            /* An empty blob has a known CRC; others are unknown until written. */
            crc[i] = 0;
            known[i] = c->h.rows[i] == 0;
            unsynced[i] = 0;
        }
    }
    c->size = first[n];
    return 0;
}

static cf_column *column_new(const char *name, const char *path, const char *attr_dir)
{
    cf_column *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->fd = -1;
    c->fd_blob = -1;
    c->dirfd = -1;
    c->opened_header_len = -1;
    c->lock = (cf__lock)CF__LOCK_NONE;
    c->durable = 1;
    cf__attrset_init(&c->attrs);
    cf__attrset_init(&c->attrs_v1);
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

/* Where the attribute files of `name` live: the column directory, or for
 * "." the File root and for "g/." the directory g. */
static char *attr_dir_of(const cf_file *f, const char *name)
{
    if (strcmp(name, ".") == 0) return strdup(f->path);
    if (is_attrs_only_name(name)) {
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
    cf__hstamp_backdate(fd, &((cf_column *)arg)->hstamp);
}

static void stamp_ext(int fd, void *arg)
{
    cf__hstamp_apply(fd, &((cf_column *)arg)->hstamp);
}

int cf__column_write_header(cf_column *c, int private_, int *keep, cf_error *err)
{
    char *text;
    size_t len;
    c->hstamp.known = 0; /* until this write gives it */
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
    int rc = cf__ext_format(&c->h, c->crc, c->crc_known, &crcs, &cl, c->path, err);
    if (rc == 0) rc = cf__stats_format(&c->stats, &c->h, &stats, &sl, c->path, err);
    if (rc == 0) rc = cf__ext_assemble(crcs, cl, stats, sl, &text, &len, c->path, err);
    free(crcs);
    free(stats);
    if (rc == 0) rc = write_meta_hook(c, CF__EXT_NAME, text, len, private_, keep, stamp_ext, err);
    if (rc == 0) {
        /* what this handle holds is now what is recorded */
        c->ext_state = CF_EXT_CURRENT;
        c->stats_damaged = 0;
        free(c->stats_bad);
        c->stats_bad = NULL;
    }
    return rc;
}

int cf__column_first_touch(const cf_column *c, int64_t b)
{
    return !c->writes || (c->writes[b].count == 0 && !c->writes[b].overflow);
}

/* Create or truncate blob i to zero bytes.  With `keep`, the blob stays
 * open for writing as the handle's cached descriptor (what blob_fd would
 * open for the first write of it). */
static int truncate_blob_keep(cf_column *c, int64_t i, int keep, cf_error *err)
{
    char *p = cf__column_blob_path(c, i);
    if (!p) return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", c->path);
    int rc = 0;
    int fd = open(p, (keep ? O_RDWR : O_WRONLY) | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0) {
        int e = errno;
        rc = CF_FAIL(err, CF_EIO, "%s: cannot create blob: %s", p, strerror(e));
    } else if (keep) {
        cf__column_close_fd(c);
        c->fd = fd;
        c->fd_blob = i;
        c->fd_writable = 1;
        c->fd_blksize = -1; /* looked up by the first write that needs it */
    } else {
        close(fd);
    }
    free(p);
    return rc;
}

int cf__column_truncate_blob(cf_column *c, int64_t i, cf_error *err) { return truncate_blob_keep(c, i, 0, err); }

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


/* ---- create / open / close ------------------------------------------ */

/* A column this File may lock: it locks through the File's descriptor of
 * its directory's lock file, which the File tidies at its catalog update
 * and close (writer_lock.h). */
static void note_lock_dir(cf_file *f, cf_column *c)
{
    const char *slash = strrchr(c->path, '/');
    if (slash && !c->lock.via && !c->lock.off) c->lock.via = cf__file_lock_dir(f, c->path, (size_t)(slash - c->path));
}

static int create_attrs_only(cf_column **out, cf_file *f, const char *name, cf_error *err)
{
    char *dir = attr_dir_of(f, name);
    if (!dir) return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", f->path);
    cf__lock lk = CF__LOCK_NONE;
    lk.off = (f->flags & CF_OPEN_NOLOCKING) != 0;
    int rc = cf__attrs_block_lock(dir, CF__DURABLE(f), (f->flags & CF_OPEN_NOLOCK) != 0, &lk, err);
    if (rc == 0) rc = cf__remove_if_exists(dir, "attr", err);
    if (rc == 0) rc = cf__remove_if_exists(dir, CF__ATTRS_EXT_NAME, err);
    if (rc == 0) rc = cf__write_file_atomic(dir, "attr-v2", "", 0, CF__DURABLE(f), err);
    if (rc == 0 && CF__DURABLE(f)) rc = cf__fsync_path(dir, err);
    if (cf__lock_is_held(&lk)) {
        cf__lock_release(&lk);
        if (!lk.off) (void)cf__lock_tidy(dir);
    }
    free(dir);
    if (rc) return rc;
    return cf_column_open(out, f, name, err);
}

/* Without CF_CREATE_REPLACE: CF_EEXIST if dir (locked by the caller, so
 * no other creator can publish meanwhile) holds a column, or is a group
 * (a directory without a header: its attributes would become the
 * column's), as h5py refuses a dataset over a group's name. */
static int check_new(const cf_column *c, unsigned flags, cf_error *err)
{
    if (flags & CF_CREATE_REPLACE) return 0;
    char *header = cf__path_join(c->path, "header");
    if (!header) return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", c->path);
    int there = cf__exists(header);
    free(header);
    if (there)
        return CF_FAIL(err, CF_EEXIST, "%s: column '%s' exists; replacing it must be asked for "
                       "(CF_CREATE_REPLACE; Python: overwrite=True)", c->path, c->name);
    if (cf__is_dir(c->path))
        return CF_FAIL(err, CF_EEXIST, "%s: a group named '%s' exists; a column replaces it only "
                       "when asked (CF_CREATE_REPLACE; Python: overwrite=True)", c->path, c->name);
    return 0;
}

int cf_column_create_blobs(cf_column **out, cf_file *f, const char *name,
                           const char *dtype, int64_t nmemb, int64_t nfile,
                           const int64_t *blob_rows, cf_error *err)
{
    return cf_column_create_ex(out, f, name, dtype, nmemb, nfile, blob_rows, CF_CREATE_REPLACE, err);
}

int cf_column_create_ex(cf_column **out, cf_file *f, const char *name,
                        const char *dtype, int64_t nmemb, int64_t nfile,
                        const int64_t *blob_rows, unsigned flags, cf_error *err)
{
    int rc;
    if (!out || !f || !name) return CF_FAIL(err, CF_EARG, "cf_column_create: NULL argument");
    if ((rc = cf_name_check(name, err))) return rc;
    if (!f->writable)
        return CF_FAIL(err, CF_EREADONLY, "%s: File is open read-only; cannot create '%s'", f->path, name);
    if (flags & ~(unsigned)CF_CREATE_REPLACE)
        return CF_FAIL(err, CF_EARG, "%s/%s: unknown create flags 0x%x", f->path, name, flags);
    /* The parent's hidden names are not listed (a cost growing with the
     * columns beside it): create makes fresh ones and takes the lock
     * without following links. */
    int leaf;
    if ((rc = cf__name_confine_new(f->path, name, &leaf, err))) return rc;
    if (is_attrs_only_name(name)) {
        if (dtype) return CF_FAIL(err, CF_EKIND, "%s: '%s' names attributes and cannot hold data", f->path, name);
        return create_attrs_only(out, f, name, err);
    }
    if ((rc = cf__name_outside_columns(f->path, name, err))) return rc;
    cf__header h = { { '<', 'i', 8 }, 0, 0, NULL, NULL };
    h.dtype.order = cf__dtype_native_order();
    char context[1100];
    snprintf(context, sizeof context, "%s/%s", f->path, name);
    if (dtype) {
        if ((rc = cf__dtype_parse(dtype, CF__DTYPE_USER, &h.dtype, context, err))) return rc;
        if (h.dtype.kind == 'S' && h.dtype.width > CF__COLUMN_S_MAX)
            return CF_FAIL(err, CF_EDTYPE, "%s: string columns can be at most S%d wide (bigfile 0.1.52 cannot "
                           "reopen S%lld)", context, CF__COLUMN_S_MAX, (long long)h.dtype.width);
        if (nmemb < 1 || nmemb > CF__NMEMB_MAX)
            return CF_FAIL(err, CF_EARG, "%s: nmemb must be in 1..%lld, got %lld", context,
                           (long long)CF__NMEMB_MAX, (long long)nmemb);
        if (nfile < 0 || nfile > CF__NFILE_MAX)
            return CF_FAIL(err, CF_EARG, "%s: nfile must be in 0..%lld (bigfile reads 6 hex digits), got %lld",
                           context, (long long)CF__NFILE_MAX, (long long)nfile);
        if (nfile > 0 && !blob_rows)
            return CF_FAIL(err, CF_EARG, "%s: blob_rows is NULL", context);
        int64_t total = 0;
        for (int64_t i = 0; i < nfile; i++) {
            if (blob_rows[i] < 0 || blob_rows[i] > INT64_MAX - total)
                return CF_FAIL(err, CF_EARG, "%s: bad row count %lld for blob %lld", context,
                               (long long)blob_rows[i], (long long)i);
            total += blob_rows[i];
        }
        if (nmemb > INT64_MAX / h.dtype.width || (total > 0 && total > INT64_MAX / (nmemb * h.dtype.width)))
            return CF_FAIL(err, CF_EARG, "%s: %lld rows of %lld elements overflow a 64-bit size",
                           context, (long long)total, (long long)nmemb);
        h.nmemb = nmemb;
    }
    cf__header stored = h;
    if ((rc = cf__header_alloc(&stored, dtype ? nfile : 0, context, err))) return rc;
    for (int64_t i = 0; i < stored.nfile; i++) stored.rows[i] = blob_rows[i];

    cf_column *c = NULL;
    char *dir = cf__path_join(f->path, name);
    if (!dir) {
        cf__header_free(&stored);
        return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", f->path);
    }
    if (leaf == CF__LEAF_UNKNOWN) leaf = !cf__exists(dir) ? CF__LEAF_ABSENT : cf__is_dir(dir) ? CF__LEAF_DIR : CF__LEAF_OTHER;
    if (leaf != CF__LEAF_ABSENT) {
        if (leaf != CF__LEAF_DIR) {
            rc = CF_FAIL(err, CF_EEXIST, "%s: exists and is not a directory", dir);
            goto fail;
        }
        if ((rc = cf__column_check_replaceable(dir, err))) goto fail;
    }
    c = column_new(name, dir, dir);
    if (!c) {
        rc = CF_FAIL(err, CF_ENOMEM, "%s: out of memory", dir);
        goto fail;
    }
    c->h = stored;
    stored.rows = NULL;
    stored.sums = NULL;
    c->kind = dtype ? CF_KIND_DATA : CF_KIND_HEADER_ONLY;
    c->writable = 1;
    c->durable = CF__DURABLE(f);
    c->verify = (f->flags & CF_OPEN_VERIFY) != 0;
    c->no_mmap = (f->flags & CF_OPEN_NOMMAP) != 0;
    c->nolock = (f->flags & CF_OPEN_NOLOCK) != 0;
    c->lock.off = (f->flags & CF_OPEN_NOLOCKING) != 0;
    cf__dtype_format(&c->h.dtype, c->dtype_token);
    c->rowbytes = c->h.nmemb * c->h.dtype.width;
    c->fresh = 1;
    if ((rc = cf__column_layout_blobs(c, 0, err))) goto fail;
    if (c->kind == CF_KIND_DATA &&
        (rc = cf__stats_alloc(&c->stats, &c->h, cf__stats_default_chunk_rows(c->rowbytes), dir, err)))
        goto fail;
    /* Everything goes into a hidden staging directory next to the final
     * name; the first commit moves it into place (publish), so that until
     * then readers see the previous version or no column at all. */
    note_lock_dir(f, c);
    if (!strchr(name, '/')) {
        rc = cf__column_begin_change(c, err); /* the File's own directory is there: it is open */
    } else {
        /* The group directory may be moved away (a removal of the group, a
         * truncation) between its making and the lock taken in it: made
         * again then.  Once the lock is held no removal can move it. */
        char *parent = cf__column_parent_of(dir);
        if (!parent) rc = CF_FAIL(err, CF_ENOMEM, "%s: out of memory", dir);
        for (int attempt = 0; rc == 0; attempt++) {
            if ((rc = cf__mkdirs_durable(parent, c->durable, err)) != 0) break;
            rc = cf__column_begin_change(c, err);
            if (rc != CF_ENOENT || attempt == 16 || cf__is_dir(parent)) break;
            rc = 0;
        }
        free(parent);
    }
    if (rc == 0) rc = check_new(c, flags, err);
    char *stage = NULL;
    if (rc == 0) rc = cf__column_fresh_sibling(dir, CF__STAGE_PREFIX, 1, &stage, err);
    /* who is writing here, for repair on a node where the lock proves nothing */
    if (rc == 0 && (rc = cf__owner_write(stage, err)) != 0) (void)cf__remove_tree(stage, NULL);
    if (rc) {
        free(stage);
        goto fail;
    }
    free(c->dir);
    free(c->attr_dir);
    c->dir = stage;
    c->attr_dir = strdup(stage);
    if (!c->attr_dir) {
        rc = CF_FAIL(err, CF_ENOMEM, "%s: out of memory", dir);
        goto fail;
    }
    /* The metadata files, attr-v2 included, are written by the commit.
     * Blob 0 stays open for the first write, which usually starts there. */
    for (int64_t i = 0; i < c->h.nfile && rc == 0; i++) rc = truncate_blob_keep(c, i, i == 0, err);
    if (rc) goto fail;
    free(dir);
    *out = c;
    return 0;
fail:
    if (c && CF__STAGED(c)) (void)cf__remove_tree(c->dir, NULL);
    cf__header_free(&stored);
    cf__column_free(c);
    free(dir);
    return rc;
}

int cf_column_create(cf_column **out, cf_file *f, const char *name,
                     const char *dtype, int64_t nmemb, int64_t size,
                     int64_t nfile, cf_error *err)
{
    if (!f || !name) return CF_FAIL(err, CF_EARG, "cf_column_create: NULL argument");
    if (dtype) {
        if (size < 0)
            return CF_FAIL(err, CF_EARG, "%s/%s: size must not be negative, got %lld", f->path, name, (long long)size);
        if (nfile < 0)
            return CF_FAIL(err, CF_EARG, "%s/%s: nfile must not be negative, got %lld", f->path, name, (long long)nfile);
        if (nfile == 0 && size != 0)
            return CF_FAIL(err, CF_EARG, "%s/%s: %lld rows need at least one blob (nfile 0)", f->path, name, (long long)size);
        if (nfile > CF__NFILE_MAX)
            return CF_FAIL(err, CF_EARG, "%s/%s: nfile must be in 0..%lld (bigfile reads 6 hex digits), got %lld",
                           f->path, name, (long long)CF__NFILE_MAX, (long long)nfile);
    } else {
        nfile = 0;
    }
    int64_t *rows = NULL;
    if (nfile > 0) {
        rows = malloc((size_t)nfile * sizeof *rows);
        if (!rows) return CF_FAIL(err, CF_ENOMEM, "%s/%s: out of memory", f->path, name);
        cf__split_rows(size, nfile, rows);
    }
    int rc = cf_column_create_blobs(out, f, name, dtype, nmemb, nfile, rows, err);
    free(rows);
    return rc;
}

int cf__column_apply_header(cf_column *c, const char *text, size_t len, const char *path, cf_error *err)
{
    int rc = cf__header_parse(&c->h, text, len, path, err);
    if (rc) return rc;
    c->kind = c->h.nmemb == 0 ? CF_KIND_HEADER_ONLY : CF_KIND_DATA;
    c->rowbytes = c->h.nmemb * c->h.dtype.width;
    cf__dtype_format(&c->h.dtype, c->dtype_token);
    return cf__column_layout_blobs(c, 0, err);
}

/* Whether colfile-v1's text, as read from disk with the mtime in
 * c->xstamp, applies to the header this handle read, whose mtime is in
 * c->hstamp (docs/format.md 8.1); *body: the bytes to parse. */
static int ext_state_of(const cf_column *c, const char *text, size_t len, size_t *body)
{
    *body = len;
    if (c->ext_state == CF_EXT_UPDATING || c->ext_state == CF_EXT_TORN) return c->ext_state;
    if (!text) return CF_EXT_ABSENT;
    static const char magic[] = "COLFILE-EXT: 1\n";
    switch (cf__ext_unseal(text, len, body)) {
    case CF__SEAL_NONE:
        /* an older colfile's file, unless it is not one at all */
        return len >= sizeof magic - 1 && memcmp(text, magic, sizeof magic - 1) == 0 ? CF_EXT_UNBOUND
                                                                                   : CF_EXT_DAMAGED;
    case CF__SEAL_DAMAGED: return CF_EXT_DAMAGED;
    default: return cf__hstamp_equal(&c->xstamp, &c->hstamp) ? CF_EXT_CURRENT : CF_EXT_STALE;
    }
}

int cf__column_apply_ext(cf_column *c, const char *text, size_t len, const char *path, int *legacy,
                         cf_error *err)
{
    /* A snapshot of another handle carries that handle's CRCs as it
     * trusted them; from disk, the file must be current as a whole. */
    size_t body = len;
    c->ext_state = c->ext_snapshot ? (text ? CF_EXT_CURRENT : CF_EXT_ABSENT) : ext_state_of(c, text, len, &body);
    int trusted = c->ext_state == CF_EXT_CURRENT;
    size_t at = body;
    int has_stats = text && cf__ext_stats_section(text, body, &at);
    /* CRCs are trusted only where still current; a damaged or absent file
     * leaves them unknown without keeping the column from opening. */
    cf__ext x;
    int ok = trusted && cf__ext_parse(&x, text, at, path, NULL) == 0;
    if (trusted && !ok) c->ext_state = CF_EXT_DAMAGED;
    for (int64_t i = 0; i < c->h.nfile; i++) {
        c->crc_known[i] = ok ? (unsigned char)cf__ext_current(&x, &c->h, i) : 0;
        c->crc[i] = c->crc_known[i] ? x.crc[i] : 0;
    }
    if (ok) cf__ext_free(&x);
    /* an older colfile-stats-v1 goes at the next commit; it is read only
     * beside a current colfile-v1 without statistics */
    c->legacy_stats = !has_stats;
    *legacy = ok && !has_stats;
    if (*legacy) return 0;
    if (ok || !has_stats || c->ext_state == CF_EXT_DAMAGED)
        return cf__column_apply_stats(c, ok && has_stats ? text + at : NULL, body - at, path, err);
    /* statistics that are not current are parsed only for their chunk
     * size (load_stats), at once: no copy of their text is kept that a
     * snapshot could hand on as if it were current */
    if (c->kind != CF_KIND_DATA) return 0;
    free(c->stats_text);
    c->stats_text = NULL;
    c->stats_pending = 0;
    return cf__column_load_stats(c, text + at, body - at, path, err);
}

int cf_column_ext_state(cf_column *c, int *state, cf_error *err)
{
    if (!c || !state) return CF_FAIL(err, CF_EARG, "cf_column_ext_state: NULL argument");
    *state = CF_EXT_ABSENT;
    if (c->kind != CF_KIND_DATA) return 0;
    int rc = cf__column_stats_need(c, err);
    if (rc == 0) *state = c->ext_state;
    return rc;
}

void cf__column_set_attrs_only(cf_column *c)
{
    c->kind = CF_KIND_ATTRS_ONLY;
    c->h.dtype.order = cf__dtype_native_order();
    c->h.dtype.kind = 'i';
    c->h.dtype.width = 8;
    cf__dtype_format(&c->h.dtype, c->dtype_token);
}

int cf__column_new_for(cf_column **out, cf_file *f, const char *name, cf_error *err)
{
    int rc;
    if (!out || !f || !name) return CF_FAIL(err, CF_EARG, "cf_column_open: NULL argument");
    if ((rc = cf_name_check(name, err))) return rc;
    char *dir = attr_dir_of(f, name);
    char *path = is_attrs_only_name(name) ? (dir ? strdup(dir) : NULL) : cf__path_join(f->path, name);
    cf_column *c = dir && path ? column_new(name, path, dir) : NULL;
    free(dir);
    free(path);
    if (!c) return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", f->path);
    c->writable = f->writable;
    c->durable = CF__DURABLE(f);
    c->verify = (f->flags & CF_OPEN_VERIFY) != 0;
    c->no_mmap = (f->flags & CF_OPEN_NOMMAP) != 0;
    c->nolock = (f->flags & CF_OPEN_NOLOCK) != 0;
    c->lock.off = (f->flags & CF_OPEN_NOLOCKING) != 0;
    *out = c;
    return 0;
}

/* An open that must start again: the column changed while it was being
 * opened (not an error code: cf_column_open handles it). */
#define CF__OPEN_AGAIN 1

/* Times cf_column_open looks again when the directory it opened lost its
 * header to a replacement published meanwhile. */
#define CF__OPEN_TRIES 8

/* Hold the column's directory and read its header there (*text, *len):
 * the version the handle reads from now on (column_version.h). */
static int open_version(cf_column *c, const cf_file *f, const char *name, char **text, size_t *len,
                        struct stat *hst, cf_error *err)
{
    for (int tries = 1;; tries++) {
        int rc = cf__version_hold(c, err);
        if (rc == 0) rc = cf__version_read_stat(c, "header", text, len, hst, err);
        if (rc != CF_ENOENT) return rc;
        if (cf__version_moved(c)) {
            if (tries < CF__OPEN_TRIES) continue;
            return CF_FAIL(err, CF_EREPLACED, "%s: column '%s' was replaced %d times while it was being "
                           "opened (other processes keep publishing new versions): try again", c->path, name,
                           CF__OPEN_TRIES);
        }
        return CF_FAIL(err, CF_ENOENT, "%s: no column '%s' in File %s", c->path, name, f->path);
    }
}

static int open_once(cf_column **out, cf_file *f, const char *name, cf_error *err)
{
    cf_column *c;
    int rc = cf__column_new_for(&c, f, name, err);
    if (rc) return rc;
    if (f->writable && !is_attrs_only_name(name)) note_lock_dir(f, c);
    /* A read-only handle takes the metadata files from the File's catalog
     * where fresh stamps prove them current (catalog.c); anything unexpected
     * there, and the files themselves decide, with their own errors. */
    cf__catalog_file cached[CF__CAT_NSLOTS];
    cf__stamp dir_stamp;
    /* (the directory it holds is the one whose header the catalog vouched
     * for, not a version swapped in since) */
    if (!f->writable && f->catalog && !is_attrs_only_name(name) &&
        cf__catalog_column_held(f->catalog, f->path, name, cached, &dir_stamp, &c->dirfd)) {
        if (cf__column_apply_cached(c, cached, &dir_stamp, NULL) == 0) {
            *out = c;
            return 0;
        }
        cf__column_free(c);
        if ((rc = cf__column_new_for(&c, f, name, err))) return rc;
    }
    char *text = NULL, *hp = NULL, *xp = NULL;
    size_t len;
    /* Readers touch nothing beside the column directory, except the writer
     * lock probed below when the column is marked torn; listing the parent
     * for links among the hidden companions (a cost that grows with the
     * columns beside it) is left to writers and to that case. */
    if ((rc = (f->writable ? cf__name_confine : cf__name_confine_own)(f->path, name, err))) goto done;
    if (is_attrs_only_name(name)) {
        if (!cf__is_dir(c->attr_dir)) {
            rc = CF_FAIL(err, CF_ENOENT, "%s: no group '%s' in File %s", c->attr_dir, name, f->path);
            goto done;
        }
        cf__column_set_attrs_only(c);
    } else {
        /* the paths name the files in messages */
        hp = cf__path_join(c->path, "header");
        xp = cf__path_join(c->path, CF__EXT_NAME);
        if (!hp || !xp) {
            rc = CF_FAIL(err, CF_ENOMEM, "%s: out of memory", c->path);
            goto done;
        }
        struct stat hst;
        if ((rc = open_version(c, f, name, &text, &len, &hst, err))) goto done;
        cf__hstamp_of(&c->hstamp, &hst);
        if ((rc = cf__column_apply_header(c, text, len, hp, err))) goto done;
        if (f->writable) {
            c->opened_header_len = (int64_t)len;
            c->opened_header_crc = cf__crc32c_update(0, text, len);
        }
        c->committed_nfile = c->h.nfile;
        struct stat mst;
        int marked = cf__version_stat(c, CF__TORN_NAME, &mst);
        if (marked && !f->writable && (rc = cf__name_confine(f->path, name, err))) goto done;
        c->torn_at_open = marked && !cf__column_writer_alive(c);
        if (c->torn_at_open && !cf__version_same_file(c, CF__TORN_NAME, &mst)) {
            /* the marker went (or was made anew) after it was seen: an
             * update committed and let go of its lock between the two looks,
             * which is no interruption; the header read may predate it */
            rc = CF__OPEN_AGAIN;
            goto done;
        }
        /* its recorded CRCs and statistics may describe rows that the
         * update has changed since: all unknown for this handle */
        if (marked) {
            c->verify = 0;
            c->ext_state = c->torn_at_open ? CF_EXT_TORN : CF_EXT_UPDATING;
        }
        if (c->torn_at_open && !(f->flags & CF_OPEN_TORN_OK)) {
            rc = CF_FAIL(err, CF_ETORN, "%s: an in-place update of this column was interrupted (%s is "
                         "present): its rows may mix old and new values; `colfile repair` makes it "
                         "consistent, or open with CF_OPEN_TORN_OK (Python: torn='warn') to read it anyway",
                         c->path, CF__TORN_NAME);
            goto done;
        }
        free(text);
        text = NULL;
        for (int tries = 1;; tries++) {
            text = cf__column_read_ext(c, &len);
            if (!cf__column_ext_wait(c, text, len, tries)) break;
            free(text);
            text = NULL;
        }
        int legacy;
        if ((rc = cf__column_apply_ext(c, text, len, xp, &legacy, err))) goto done;
        free(text);
        text = NULL;
        if (legacy) {
            free(xp);
            xp = cf__path_join(c->path, CF__STATS_NAME);
            if (!xp) {
                rc = CF_FAIL(err, CF_ENOMEM, "%s: out of memory", c->path);
                goto done;
            }
            if (cf__version_read(c, CF__STATS_NAME, &text, &len, NULL) != 0) text = NULL;
            if ((rc = cf__column_apply_stats(c, text, len, xp, err))) goto done;
        }
    }
    /* a read-only handle reads its attributes when they are first used,
     * as when it is opened from the catalog (cf__column_settle_attrs) */
    if (f->writable || is_attrs_only_name(name)) {
        if ((rc = cf__column_load_attrs(c, err))) goto done;
    } else {
        c->attrs_unread = 1;
    }
    *out = c;
    c = NULL;
done:
    free(text);
    free(hp);
    free(xp);
    cf__column_free(c);
    return rc;
}

/* Times, and the pause between them, that a handle reads colfile-v1 again
 * when a commit under way left it stale (cf__column_ext_wait). */
#define CF__EXT_TRIES 40
#define CF__EXT_PAUSE_US 500

int cf__column_ext_wait(const cf_column *c, const char *text, size_t len, int tries)
{
    size_t body;
    if (tries >= CF__EXT_TRIES || c->ext_snapshot || ext_state_of(c, text, len, &body) != CF_EXT_STALE ||
        cf__version_header_changed(c) || !cf__column_writer_alive(c))
        return 0;
    struct timespec pause = { 0, CF__EXT_PAUSE_US * 1000L };
    nanosleep(&pause, NULL);
    return 1;
}

int cf_column_open(cf_column **out, cf_file *f, const char *name, cf_error *err)
{
    /* A commit writes the header, then colfile-v1 (each atomically): an
     * open that read the header before and colfile-v1 after them finds
     * colfile-v1 stale and would take the CRC32C and statistics for
     * unknown: it reads the pair again.  (One between the two waits for
     * colfile-v1: cf__column_ext_wait.) */
    for (int tries = 1;; tries++) {
        cf_column *c = NULL;
        int rc = open_once(&c, f, name, err);
        if (rc == CF__OPEN_AGAIN) {
            if (tries < CF__EXT_TRIES) continue;
            return CF_FAIL(err, CF_EREPLACED, "%s/%s: column '%s' was updated in place %d times while it "
                           "was being opened (other processes keep committing updates): try again",
                           f->path, name, name, CF__EXT_TRIES);
        }
        if (rc || c->ext_state != CF_EXT_STALE || tries >= CF__EXT_TRIES ||
            !(cf__version_moved(c) || cf__version_header_changed(c))) {
            if (rc == 0) *out = c;
            return rc;
        }
        cf__column_free(c);
    }
}

int cf__column_need_scratch(cf_column *c, cf_error *err)
{
    if (c->scratch) return 0;
    c->scratch = malloc((size_t)CF__CHUNK_BYTES);
    if (!c->scratch) return CF_FAIL(err, CF_ENOMEM, "%s: out of memory for the I/O buffer", c->path);
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
    c->crc_known[i] = 0;
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
        if ((rc = cf__pread_all(fd, c->scratch, want, off, &got, p, err))) goto done;
        if (got < want) goto done; /* short: nothing known */
        crc = cf__crc32c_update(crc, c->scratch, got);
        if (sum) *sum = cf__sysv_add(*sum, c->scratch, got);
        cf__column_stats_add(c, i, off / w, c->scratch, (int64_t)got / w);
        off += (int64_t)got;
    }
    c->crc[i] = crc;
    c->crc_known[i] = 1;
    c->stats.valid[i] = cf__stats_blob_whole(&c->stats, i);
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
    cf__blob_writes *w = &c->writes[i];
    int64_t bytes = c->h.rows[i] * c->rowbytes;
    if (!w->overflow && w->count == 1 && w->segments[0].offset == 0 && w->segments[0].length == bytes) {
        c->crc[i] = w->segments[0].crc;
        c->crc_known[i] = 1;
        c->stats.valid[i] = !c->stats_off && cf__stats_blob_whole(&c->stats, i);
        return 0;
    }
    c->crc_known[i] = 0;
    c->stats.valid[i] = 0;
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
    if (rc == 0) rc = scan_blob(c, i, &complete, err);
    if (rc) return rc;
    if (!complete) {
        char name[32];
        cf__column_blob_name(i, name);
        return CF_FAIL(err, CF_ESHORT, "%s/%s: blob is missing or shorter than its %lld rows need",
                       c->path, name, (long long)c->h.rows[i]);
    }
    /* Record it as one whole write, so that flush or a pending export
     * carries the result; the byte sums do not change. */
    if (c->writes) {
        free(c->writes[i].segments);
        c->writes[i] = (cf__blob_writes){ NULL, 0, 0, 0 };
    }
    c->fresh = 0;
    c->ext_dirty = 1;
    return cf__column_note_segment(c, i, 0, c->h.rows[i] * c->rowbytes, c->crc[i], err);
}

/* Settle the CRCs and statistics of every blob written since the last
 * commit; write state is then folded into crc/stats/sums. */
int cf__column_settle_writes(cf_column *c, cf_error *err)
{
    if (!c->writes) return 0;
    int rc = 0;
    for (int64_t i = 0; i < c->h.nfile && rc == 0; i++)
        if (c->writes[i].count || c->writes[i].overflow) rc = settle_blob(c, i, err);
    if (rc == 0) free_writes(c);
    return rc;
}

/* ---- accessors --------------------------------------------------------- */

const char *cf_column_name(const cf_column *c) { return c->name; }
const char *cf_column_path(const cf_column *c) { return c->path; }
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
    if (c->deferred && cf__column_settle((cf_column *)c, NULL) != 0) return 0;
    if (i < 0 || i >= c->h.nfile || !c->crc_known[i]) return 0;
    /* Writes not yet settled make the recorded value stale. */
    if (c->writes && (c->writes[i].count || c->writes[i].overflow)) return 0;
    if (crc) *crc = c->crc[i];
    return 1;
}

/* ---- data access ---------------------------------------------------- */

int cf__column_blob_fd(cf_column *c, int64_t i, int for_write, cf_error *err)
{
    if (c->fd >= 0 && c->fd_blob == i && (c->fd_writable || !for_write)) return c->fd;
    char name[32];
    cf__column_blob_name(i, name);
    /* below the directory held: the blobs of the version this handle
     * opened, whatever has been published at its name since (the cached
     * descriptor is kept until this one opens: its bytes stay readable) */
    int fd = cf__version_openat(c, name, for_write ? O_RDWR | O_CREAT | O_CLOEXEC : O_RDONLY | O_CLOEXEC);
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
    c->fd = fd;
    c->fd_blob = i;
    c->fd_writable = for_write;
    /* only writes align to it (looked up by the first one that needs it);
     * a read descriptor is never reused to write */
    c->fd_blksize = for_write ? -1 : 0;
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
    cf__lock_forget(&c->lock);
    cf__column_free(c);
}

void cf_column_discard(cf_column *c)
{
    if (!c) return;
    c->failed = 1;
    cf__column_drop_new_blobs(c, 0);
}
