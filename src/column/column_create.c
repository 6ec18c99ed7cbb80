/* column_create.c - creating columns: data columns with their blobs
 * staged for the first commit, and attribute blocks ("." and "g/."). */
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

/* ---- create --------------------------------------------------------- */

/* A column this File may lock: it locks through the File's descriptor of
 * its directory's lock file, which the File tidies at its catalog update
 * and close (writer_lock.h). */
void cf__column_note_lock_dir(cf_file *f, cf_column *c)
{
    const char *slash = strrchr(c->path, '/');
    if (slash && !c->commit.lock.via && !c->commit.lock.off) c->commit.lock.via = cf__file_lock_dir(f, c->path, (size_t)(slash - c->path));
}

static int create_attrs_only(cf_column **out, cf_file *f, const char *name, cf_error *err)
{
    char *dir = cf__column_attr_dir_of(f, name);
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
    if ((rc = cf__name_check_in(f->path, name, err))) return rc;
    if (!f->writable)
        return CF_FAIL(err, CF_EREADONLY, "%s: File is open read-only; cannot create '%s'", f->path, name);
    if (flags & ~(unsigned)CF_CREATE_REPLACE)
        return CF_FAIL(err, CF_EARG, "%s/%s: unknown create flags 0x%x", f->path, name, flags);
    /* The parent's hidden names are not listed (a cost growing with the
     * columns beside it): create makes fresh ones and takes the lock
     * without following links. */
    int leaf;
    if ((rc = cf__name_confine_new(f->path, name, &leaf, err))) return rc;
    if (cf__column_is_attrs_only_name(name)) {
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
    c = cf__column_new(name, dir, dir);
    if (!c) {
        rc = CF_FAIL(err, CF_ENOMEM, "%s: out of memory", dir);
        goto fail;
    }
    c->h = stored;
    stored.rows = NULL;
    stored.sums = NULL;
    c->kind = dtype ? CF_KIND_DATA : CF_KIND_HEADER_ONLY;
    c->writable = 1;
    cf__column_take_file_options(c, f);
    cf__dtype_format(&c->h.dtype, c->dtype_token);
    c->rowbytes = c->h.nmemb * c->h.dtype.width;
    c->fresh = 1;
    if ((rc = cf__column_layout_blobs(c, 0, err))) goto fail;
    if (c->kind == CF_KIND_DATA &&
        (rc = cf__stats_alloc(&c->stat.stats, &c->h, cf__column_default_chunk_rows(c), dir, err)))
        goto fail;
    /* Everything goes into a hidden staging directory next to the final
     * name; the first commit moves it into place (publish), so that until
     * then readers see the previous version or no column at all. */
    cf__column_note_lock_dir(f, c);
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
     * Blob 0 is made and stays open for the first write, which usually
     * starts there; every other blob is made by its first writer, and the
     * first commit makes those nobody wrote (cf__column_create_unwritten):
     * no one handle makes all blobs of a column written by many. */
    if (c->h.nfile > 0) rc = cf__column_truncate_blob_keep(c, 0, 1, err);
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
