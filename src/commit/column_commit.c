/* column_commit.c - committing a column (docs/format.md 8.3): the
 * commit of a staging directory published with a rename, the commit in
 * place that removes the torn mark, and flush and close.  The staging
 * directory and the torn mark are made by column/column_stage.c. */
#include "column_stage.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "catalog.h"
#include "column_data.h"
#include "column_index.h"
#include "stindex.h"
#include "column_version.h"
#include "error.h"
#include "ext.h"
#include "file.h"
#include "fsutil.h"
#include "owner.h"
#include "platform.h"
#include "column_handle.h"

static int fsync_parent(const char *path, cf_error *err)
{
    char *parent = cf__column_parent_of(path);
    if (!parent) return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", path);
    int rc = cf__fsync_path(parent, err);
    free(parent);
    return rc;
}

/* The File's root: the column's path without its name (NULL when it
 * does not end with the name, or out of memory). */
static char *file_root(const cf_column *c)
{
    size_t pl = strlen(c->path), nl = strlen(c->name);
    if (nl + 1 >= pl || c->path[pl - nl - 1] != '/' || strcmp(c->path + pl - nl, c->name) != 0) return NULL;
    return strndup(c->path, pl - nl - 1);
}

/* The rename(s) of publish: the staging directory to the column's name,
 * swapping an old version out (*old: where it now lives, to remove). */
static int swap_in(cf_column *c, char **old, cf_error *err)
{
    int rc = 0;
    if (rename(c->dir, c->path) != 0) {
        int e = errno;
        if (e != EEXIST && e != ENOTEMPTY && e != EISDIR && e != ENOTDIR)
            return CF_FAIL(err, CF_EIO, "%s: cannot move the new column into place: %s", c->path, strerror(e));
        if (!cf__is_dir(c->path))
            return CF_FAIL(err, CF_EEXIST, "%s: exists and is not a directory", c->path);
        if ((rc = cf__column_check_replaceable(c->path, err))) return rc;
        if (cf__rename_exchange(c->dir, c->path) == 0) {
            *old = c->dir; /* the old version now lives at the staging name */
            c->dir = NULL;
        } else {
            e = errno;
            if (e != EINVAL && e != ENOSYS && e != ENOTSUP)
                return CF_FAIL(err, CF_EIO, "%s: cannot swap in the new column: %s", c->path, strerror(e));
            /* No atomic swap here: between the two renames the column is
             * absent, and `colfile repair` can bring back .colfile-old.*. */
            if ((rc = cf__column_fresh_sibling(c->path, CF__OLD_PREFIX, 0, old, err))) return rc;
            if (rename(c->path, *old) != 0) {
                e = errno;
                rc = CF_FAIL(err, CF_EIO, "%s: cannot move the old column aside: %s", c->path, strerror(e));
                free(*old);
                *old = NULL;
                return rc;
            }
            if (rename(c->dir, c->path) != 0) {
                e = errno;
                (void)rename(*old, c->path);
                rc = CF_FAIL(err, CF_EIO, "%s: cannot move the new column into place: %s", c->path, strerror(e));
                free(*old);
                *old = NULL;
                return rc;
            }
        }
    }
    return 0;
}

/* Move the staging directory, complete and durable, to the column's name:
 * the one step that makes the new version visible.  An old version is
 * swapped out in the same step where the kernel can (RENAME_EXCHANGE),
 * else moved aside first; then it is removed.  The File's generation
 * marks the change before and after it (docs/format.md 8.5). */
static int publish(cf_column *c, cf_error *err)
{
    char *old = NULL;
    /* the owner record belongs to staging only (a power loss may leave it
     * in the column, where it means nothing) */
    cf__owner_remove(c->dir);
    char *root = file_root(c);
    int gen_fd = root ? cf__catalog_begin(root, c->durable) : -1;
    int rc = swap_in(c, &old, err);
    if (root) cf__catalog_done(root, gen_fd);
    free(root);
    if (rc) return rc;
    if (c->durable) rc = fsync_parent(c->path, err);
    free(c->dir);
    c->dir = strdup(c->path);
    char *attr_dir = strdup(c->path);
    if (!c->dir || !attr_dir) {
        free(attr_dir);
        if (!c->dir) c->dir = old ? old : NULL;
        return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", c->path);
    }
    free(c->attr_dir);
    c->attr_dir = attr_dir;
    /* The new version is committed; the old one is garbage.  A failure to
     * remove it leaves a hidden directory that `colfile repair` removes. */
    if (old) (void)cf__remove_tree(old, NULL);
    free(old);
    return rc;
}

/* The first commit of a new column, whose files are in a staging
 * directory no one else looks at: every metadata file is written in place
 * (no temporaries), then, when durable, the blobs written and every file
 * made are fsynced together (write-back of all started first, so that one
 * journal commit can cover them; the files this handle still has open are
 * synced through those descriptors, not opened again), then the directory;
 * only then is it moved into place (publish), and the parent synced. */
static int commit_staged(cf_column *c, cf_error *err)
{
    const char *meta[8];
    int kept[8];
    size_t nmeta = 0, nkept;
    int rc, *keep = c->durable ? kept : NULL;
    for (size_t j = 0; j < 8; j++) kept[j] = -1;
    if ((rc = cf__column_create_unwritten(c, 0, err))) return rc;
    /* once published (even if a later step fails) its header lists them all */
    c->commit.listed_nfile = c->h.nfile;
    meta[nmeta++] = "header";
    rc = cf__column_write_header(c, 1, keep, err);
    if (rc == 0 && c->kind == CF_KIND_DATA) {
        meta[nmeta++] = CF__EXT_NAME;
        rc = cf__column_write_ext(c, 1, keep ? &kept[1] : NULL, err);
    }
    /* the chunk index, stamped as colfile-v1 is (format.md 8.6) */
    if (rc == 0 && cf__column_index_wanted(c)) {
        meta[nmeta++] = CF__INDEX_NAME;
        rc = cf__column_write_index(c, 1, keep ? &kept[2] : NULL, err);
    }
    nkept = nmeta;
    if (rc == 0) rc = cf__column_write_staged_attrs(c, meta, &nmeta, err);
    if (rc == 0 && c->durable) {
        int64_t nblob = 0;
        for (int64_t i = 0; i < c->h.nfile; i++) nblob += c->sums.unsynced[i] != 0;
        char (*blobs)[32] = nblob ? malloc((size_t)nblob * sizeof *blobs) : NULL;
        size_t total = (size_t)nblob + nmeta;
        const char **names = malloc(total * sizeof *names);
        int *fds = malloc(total * sizeof *fds);
        if ((nblob && !blobs) || !names || !fds) {
            rc = CF_FAIL(err, CF_ENOMEM, "%s: out of memory", c->path);
        } else {
            size_t n = 0;
            for (int64_t i = 0, k = 0; i < c->h.nfile; i++) {
                if (!c->sums.unsynced[i]) continue;
                cf__column_blob_name(i, blobs[k]);
                fds[n] = c->io.fd >= 0 && c->io.fd_blob == i ? c->io.fd : cf__column_kept_fd(c, i);
                names[n++] = blobs[k++];
            }
            for (size_t j = 0; j < nmeta; j++) {
                fds[n] = j < nkept ? kept[j] : -1;
                names[n++] = meta[j];
            }
            rc = cf__fsync_files(c->dir, names, fds, n, err);
            if (rc) c->commit.failed = 1;
        }
        free(blobs);
        free(names);
        free(fds);
    }
    for (size_t j = 0; j < nkept; j++)
        if (kept[j] >= 0) close(kept[j]);
    if (rc) return rc;
    if (c->durable && (rc = cf__fsync_path(c->dir, err))) return rc;
    memset(c->sums.unsynced, 0, (size_t)c->h.nfile);
    cf__column_drop_kept(c);
    return publish(c, err);
}

/* The commit of a column already in place (cf_column_flush). */
static int commit_in_place(cf_column *c, cf_error *err)
{
    int rc;
    if ((rc = cf__column_sync_blobs(c, err))) return rc;
    /* an append's blobs are made by their writers; the header lists
     * only files that exist, so the ones nobody wrote are made here */
    if (c->h.nfile > c->commit.committed_nfile &&
        (rc = cf__column_create_unwritten(c, c->commit.committed_nfile, err)))
        return rc;
    int meta = c->commit.header_dirty || c->commit.ext_dirty;
    /* Blobs this commit adds are new directory entries: they must be
     * durable before the header that lists them can be, or a crash
     * could keep the renamed header and lose the blob files (file
     * systems need not keep the order of unsynced directory changes). */
    if (c->durable && c->h.nfile > c->commit.committed_nfile && (rc = cf__fsync_path(c->dir, err))) {
        c->commit.failed = 1;
        return rc;
    }
    /* colfile-v1 records the stamp of the header written with it: a
     * data column's commit writes both or neither */
    if (c->kind == CF_KIND_DATA && meta) c->commit.header_dirty = c->commit.ext_dirty = 1;
    if (c->commit.header_dirty && (rc = cf__column_write_header(c, 0, NULL, err))) return rc;
    if (c->commit.header_dirty) c->commit.listed_nfile = c->h.nfile;
    if (c->kind == CF_KIND_DATA && c->commit.ext_dirty) {
        if ((rc = cf__column_write_ext(c, 0, NULL, err))) return rc;
        if ((rc = cf__column_write_index(c, 0, NULL, err))) return rc;
        /* superseded by the statistics in colfile-v1 (format.md 8.4) */
        if (c->commit.legacy_stats && (rc = cf__remove_if_exists(c->dir, CF__STATS_NAME, err))) return rc;
        c->commit.legacy_stats = 0;
    }
    if (meta && c->durable && (rc = cf__fsync_path(c->dir, err))) return rc;
    return 0;
}

/* The commit, in the order that makes a crash at any point leave the
 * previous or the new version (docs/reliability.md): blob data durable,
 * then the metadata files (each atomically), then the directory, then
 * (new columns) the move into place, and last the torn marker's removal.
 * A new column's first commit is commit_staged. */
int cf_column_flush(cf_column *c, cf_error *err)
{
    if (!c) return CF_FAIL(err, CF_EARG, "cf_column_flush: NULL column");
    if (!c->writable || c->replica) return 0;
    if (c->commit.failed) {
        cf__column_drop_new_blobs(c, 0);
        return CF_FAIL(err, CF_EIO, "%s: not committed: an earlier write through this handle failed or its "
                       "changes were discarded, so the previous version stays%s", c->path,
                       c->commit.torn_marked ? " (marked torn: rows were updated in place; see colfile repair)" : "");
    }
    int staged = CF__STAGED(c);
    if (c->kind != CF_KIND_DATA && !staged) return 0;
    int rc = 0;
    if ((rc = cf__column_settle_writes(c, err))) return rc;
    int changed = c->commit.header_dirty || c->commit.ext_dirty || cf__lock_is_held(&c->commit.lock) || c->commit.torn_marked;
    if (staged) {
        rc = commit_staged(c, err);
        /* a close by chunk owners planned this commit only */
        cf__column_owner_forget(c);
        if (rc) return rc;
    } else {
        rc = commit_in_place(c, err);
        /* a close by chunk owners planned this commit only (an index
         * they wrote that was not renamed into place goes) */
        cf__column_owner_forget(c);
        if (rc) return rc;
    }
    c->commit.header_dirty = 0;
    c->commit.ext_dirty = 0;
    c->commit.committed_nfile = c->h.nfile;
    if (c->h.nfile) memcpy(c->sums.committed_sums, c->h.sums, (size_t)c->h.nfile * sizeof *c->h.sums);
    /* This session's in-place updates (by any handle of it) are committed;
     * a marker found at open stays until `colfile repair`. */
    /* Only by a handle that changed the column (in MPI jobs: took the other
     * ranks' changes): another writer's marker is an update in progress. */
    if (!c->commit.torn_at_open && (!staged || c->commit.torn_marked) && changed) {
        char *tp = cf__path_join(c->dir, CF__TORN_NAME);
        if (!tp) return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", c->path);
        struct stat st;
        int e = 0;
        if (unlink(tp) == 0) {
            if (c->durable) rc = cf__fsync_path(c->dir, err);
        } else if ((e = errno) != ENOENT && !(lstat(tp, &st) != 0 && errno == ENOENT)) {
            /* (where nothing can be removed, a read-only file system,
             * unlink fails with EROFS even when there is no marker) */
            rc = CF_FAIL(err, CF_EIO, "%s: cannot remove the torn-update marker: %s", tp, strerror(e));
        }
        free(tp);
        c->commit.torn_marked = 0;
    }
    return rc;
}

int cf_column_close(cf_column *c, cf_error *err)
{
    if (!c) return 0;
    int rc = cf_column_flush(c, err);
    if (rc) cf__column_drop_new_blobs(c, 0); /* nothing commits them after this */
    cf__column_free(c);
    return rc;
}

int64_t cf_column_close_many(cf_column **cols, int64_t n, cf_error *errs)
{
    int64_t failed = 0;
    for (int64_t i = 0; i < n; i++) {
        cf_error *e = errs ? &errs[i] : NULL;
        if (e) e->code = 0;
        int rc = cf_column_close(cols[i], e);
        if (rc < 0) {
            failed++;
            if (e && e->code == 0) e->code = rc;
        }
    }
    return failed;
}

