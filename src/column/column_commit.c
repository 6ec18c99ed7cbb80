/* column_commit.c - committing a column (docs/format.md 8.3): staging
 * directories, the torn mark, publishing a new version with a rename, and
 * flush and close. */
#include "column_commit.h"

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

/* ---- commits: staging, writer lock, torn marker, fsync ----------------- */

/* "<parent of path>/<prefix><leaf><suffix>", malloc'd (NULL on ENOMEM). */
static char *sibling_path(const char *path, const char *prefix, const char *suffix)
{
    const char *slash = strrchr(path, '/');
    size_t dl = slash ? (size_t)(slash - path + 1) : 0;
    char leaf[224];
    cf__short_leaf(path + dl, strlen(path + dl), leaf);
    size_t n = dl + strlen(prefix) + strlen(leaf) + strlen(suffix) + 1;
    char *p = malloc(n);
    if (p) snprintf(p, n, "%.*s%s%s%s", (int)dl, path, prefix, leaf, suffix);
    return p;
}

/* The directory holding path (malloc'd; "." for a bare name). */
char *cf__column_parent_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash) return strdup(".");
    if (slash == path) return strdup("/");
    return strndup(path, (size_t)(slash - path));
}

static int fsync_parent(const char *path, cf_error *err)
{
    char *parent = cf__column_parent_of(path);
    if (!parent) return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", path);
    int rc = cf__fsync_path(parent, err);
    free(parent);
    return rc;
}

/* A new hidden sibling directory or name that does not exist yet:
 * <prefix><leaf>.<pid>.<random>.  With make_dir the directory is made. */
int cf__column_fresh_sibling(const char *path, const char *prefix, int make_dir, char **out, cf_error *err)
{
    uint64_t seed = cf__unique_seed();
    for (int attempt = 0; attempt < 64; attempt++) {
        char suffix[64];
        seed = cf__unique_next(seed);
        snprintf(suffix, sizeof suffix, ".%ld.%08" PRIx64, (long)getpid(), seed >> 32);
        char *p = sibling_path(path, prefix, suffix);
        if (!p) return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", path);
        if (!make_dir) {
            if (!cf__exists(p)) {
                *out = p;
                return 0;
            }
        } else if (mkdir(p, 0777) == 0) {
            *out = p;
            return 0;
        } else if (errno != EEXIST) {
            int e = errno;
            int rc = CF_FAIL(err, cf__errno_code(e), "%s: cannot make staging directory %s: %s", path, p, strerror(e));
            free(p);
            return rc;
        }
        free(p);
    }
    return CF_FAIL(err, CF_EIO, "%s: cannot find a free staging name", path);
}

int cf__column_read_ext(cf_column *c, char **text, size_t *len, cf_error *err)
{
    struct stat xst;
    c->ext.xstamp.known = 0;
    *text = NULL;
    *len = 0;
    cf_error mine;
    int rc = cf__version_read_stat(c, CF__EXT_NAME, text, len, &xst, &mine);
    if (rc == CF_ENOENT) return 0;
    if (rc) return CF_FAIL(err, rc, "%s", mine.message);
    cf__hstamp_of(&c->ext.xstamp, &xst);
    return 0;
}

int cf__column_read_optional(cf_column *c, const char *leaf, char **text, size_t *len, cf_error *err)
{
    *text = NULL;
    *len = 0;
    cf_error mine;
    int rc = cf__version_read_stat(c, leaf, text, len, NULL, &mine);
    if (rc == CF_ENOENT) return 0;
    return rc ? CF_FAIL(err, rc, "%s", mine.message) : 0;
}

/* A writer that opened the column while another's in-place update was
 * live (colfile-torn there, its lock held) took the CRC32C and statistics
 * for unknown.  If that update has committed since -- the header is still
 * the one this handle read (cf__version_check) and the marker is gone --
 * colfile-v1 now describes that header: read it again, or this handle's
 * commit would record the blobs it does not write as unknown for good. */
static int reread_ext(cf_column *c, cf_error *err)
{
    if (c->ext.ext_state != CF_EXT_UPDATING || c->commit.torn_at_open || c->kind != CF_KIND_DATA || c->ext.ext_snapshot ||
        cf__version_has(c, CF__TORN_NAME))
        return 0;
    return cf__column_reload_ext(c, err);
}

int cf__column_reload_ext(cf_column *c, cf_error *err)
{
    char *text = NULL, *xp = cf__path_join(c->path, CF__EXT_NAME);
    if (!xp) return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", c->path);
    size_t len = 0;
    int legacy = 0, rc = cf__column_read_ext(c, &text, &len, err);
    c->ext.ext_state = CF_EXT_ABSENT; /* decided anew from the file */
    if (rc == 0) rc = cf__column_apply_ext(c, text, len, xp, &legacy, err);
    free(text);
    text = NULL;
    if (rc == 0 && legacy) {
        free(xp);
        xp = cf__path_join(c->path, CF__STATS_NAME);
        if (!xp) rc = CF_FAIL(err, CF_ENOMEM, "%s: out of memory", c->path);
        else rc = cf__column_read_optional(c, CF__STATS_NAME, &text, &len, err);
        if (rc == 0) rc = cf__column_apply_stats(c, text, len, xp, err);
        free(text);
    }
    free(xp);
    return rc;
}

int cf__column_begin_change(cf_column *c, cf_error *err)
{
    if (cf__lock_is_held(&c->commit.lock) || c->replica || c->kind == CF_KIND_ATTRS_ONLY) return 0;
    int rc = cf__lock_take(&c->commit.lock, c->path, c->commit.nolock, err);
    /* Replacing, removing or committing the column takes the lock too:
     * holding it, the writer sees whether that happened since it opened
     * the column. */
    if (rc == 0 && ((rc = cf__version_check(c, err)) || (rc = reread_ext(c, err)))) cf__lock_release(&c->commit.lock);
    /* no lock file to open: its group was removed with the column */
    else if (rc == CF_ENOENT && cf__version_gone(c)) rc = cf__version_check(c, err);
    return rc;
}

/* 1 if a live writer holds the column's lock: a torn marker is then an
 * update in progress (its rows are being written, as with bigfile), not
 * the trace of a crash. */
int cf__column_writer_alive(const cf_column *c)
{
    char *parent = cf__column_parent_of(c->path);
    const char *slash = strrchr(c->path, '/');
    const char *leaf = slash ? slash + 1 : c->path;
    int held = parent && cf__lock_held(parent, leaf, strlen(leaf));
    free(parent);
    return held;
}


/* Blobs that grow added for rows this handle will never commit now (a
 * write failed, changes were discarded, the commit failed): remove them, so
 * that a failed append on a full disk gives its space back.  No header on
 * disk lists them: neither the committed one nor one this handle published
 * in a commit that failed later.  With `now_only_alone`, only a handle that
 * no other writes the blobs with (others may still be writing them; their
 * commit fails anyway and the last close removes them). */
void cf__column_drop_new_blobs(cf_column *c, int now_only_alone)
{
    /* (dir is NULL after an allocation failure in publish) */
    if (c->replica || c->kind != CF_KIND_DATA || !c->writable || !c->dir || CF__STAGED(c)) return;
    if (now_only_alone && c->commit.shared) return;
    int64_t first = c->commit.committed_nfile > c->commit.listed_nfile ? c->commit.committed_nfile : c->commit.listed_nfile;
    if (first >= c->h.nfile) return;
    cf__column_close_fd(c);
    cf__column_drop_kept(c); /* an open descriptor would keep a removed blob's space */
    int removed = 0;
    for (int64_t i = first; i < c->h.nfile; i++) {
        char *p = cf__column_blob_path(c, i);
        if (p && unlink(p) == 0) removed = 1;
        free(p);
    }
    if (removed && c->durable) (void)cf__fsync_path(c->dir, NULL);
}

/* Undo mark_torn after a failure that changed no committed byte: the
 * column is still its committed version and must not read as torn.  Only
 * a handle that made the marker and writes these blobs alone can know
 * that; otherwise (replicas, snapshots handed to other writers, handles
 * sharing the column without the writer lock) the marker stays for
 * `colfile repair`.  If the removal fails the column stays marked,
 * which is safe. */
void cf__column_unmark_torn(cf_column *c)
{
    if (!c->commit.torn_created || c->commit.inplace_written || c->replica || c->commit.shared || c->commit.nolock || c->commit.torn_at_open ||
        !c->dir)
        return;
    char *p = cf__path_join(c->dir, CF__TORN_NAME);
    if (p && unlink(p) == 0) {
        c->commit.torn_marked = 0;
        c->commit.torn_created = 0;
        if (c->durable) (void)cf__fsync_path(c->dir, NULL);
    }
    free(p);
}

/* Before the first in-place write over committed rows: make colfile-torn
 * exist, durably, so that a crash in the middle is never mistaken for a
 * complete column.  The marker is written as a temporary and renamed into
 * place, so it never appears half written (a full disk fails the
 * temporary, leaving no marker); if it cannot be made durable it is
 * removed again before the write fails.  Replicas may do this too; the
 * committing handle removes the marker once the new header is durable. */
int cf__column_mark_torn(cf_column *c, cf_error *err)
{
    if (c->commit.torn_marked) return 0;
    char *p = cf__path_join(c->dir, CF__TORN_NAME);
    if (!p) return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", c->path);
    char tmp[PATH_MAX];
    int rc = 0;
    int fd = cf__open_temporary(c->dir, CF__TORN_NAME, tmp, sizeof tmp, p, err);
    if (fd < 0) {
        free(p);
        return fd;
    }
    char line[96];
    int n = snprintf(line, sizeof line, "in-place update by pid %ld\n", (long)getpid());
    rc = cf__pwrite_all(fd, line, (size_t)n, 0, tmp, err);
    if (rc == 0 && c->durable) rc = cf__fsync_fd(fd, tmp, err);
    if (close(fd) != 0 && rc == 0) {
        int e = errno;
        rc = CF_FAIL(err, CF_EIO, "%s: close failed: %s", tmp, strerror(e));
    }
    int existed = cf__exists(p);
    if (rc == 0 && rename(tmp, p) != 0) {
        int e = errno;
        rc = CF_FAIL(err, cf__errno_code(e), "%s: cannot create the torn-update marker: %s", p, strerror(e));
    }
    if (rc) {
        unlink(tmp);
        if (err) {
            char why[CF_ERROR_MESSAGE_MAX];
            snprintf(why, sizeof why, "%s", err->message);
            rc = CF_FAIL(err, rc, "%s: cannot create the torn-update marker, so no row was changed: %s", p, why);
        }
    } else {
        c->commit.torn_marked = 1;
        c->commit.torn_created = !existed;
        if (c->durable && (rc = cf__fsync_path(c->dir, err))) cf__column_unmark_torn(c);
    }
    free(p);
    return rc;
}


/* A directory that a new column may replace: a column or an empty
 * directory, never a group holding other columns. */
int cf__column_check_replaceable(const char *dir, cf_error *err)
{
    DIR *d = opendir(dir);
    if (!d) return 0;
    int rc = 0;
    struct dirent *ent;
    while (rc == 0 && (ent = readdir(d)) != NULL) {
        if (ent->d_name[0] == '.') continue;
        char *p = cf__path_join(dir, ent->d_name);
        if (!p) {
            rc = CF_FAIL(err, CF_ENOMEM, "%s: out of memory", dir);
            break;
        }
        if (cf__is_dir(p))
            rc = CF_FAIL(err, CF_EEXIST, "%s: is a group holding '%s'; a column cannot replace it", dir, ent->d_name);
        free(p);
    }
    closedir(d);
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

const char *cf__column_stage_leaf(const cf_column *c)
{
    if (!CF__STAGED(c)) return "";
    const char *slash = strrchr(c->dir, '/');
    return slash ? slash + 1 : c->dir;
}

int cf__column_set_stage(cf_column *c, const char *leaf, size_t n, cf_error *err)
{
    size_t pl = strlen(CF__STAGE_PREFIX);
    if (n <= pl || memcmp(leaf, CF__STAGE_PREFIX, pl) != 0 || memchr(leaf, '/', n) || memchr(leaf, 0, n))
        return CF_FAIL(err, CF_EFORMAT, "%s: bad staging directory name in a metadata snapshot", c->path);
    char *parent = cf__column_parent_of(c->path);
    char *name = strndup(leaf, n);
    char *dir = parent && name ? cf__path_join(parent, name) : NULL;
    char *attr_dir = dir ? strdup(dir) : NULL;
    free(parent);
    free(name);
    if (!attr_dir) {
        free(dir);
        return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", c->path);
    }
    free(c->dir);
    free(c->attr_dir);
    c->dir = dir;
    c->attr_dir = attr_dir;
    return 0;
}

int cf__column_follow_commit(cf_column *c, cf_error *err)
{
    c->commit.committed_nfile = c->h.nfile;
    if (!CF__STAGED(c)) return 0;
    char *dir = strdup(c->path), *attr_dir = strdup(c->path);
    if (!dir || !attr_dir) {
        free(dir);
        free(attr_dir);
        return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", c->path);
    }
    cf__column_close_fd(c);
    free(c->dir);
    free(c->attr_dir);
    c->dir = dir;
    c->attr_dir = attr_dir;
    return 0;
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

