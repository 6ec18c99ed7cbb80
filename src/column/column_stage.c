/* column_stage.c - what a column handle does before its commit
 * (docs/format.md 8.3): the writer lock taken before a change, staging
 * names beside the column, the torn mark before writes over committed
 * rows, and the metadata files a version holds read back.  The commit
 * itself (publish, flush, close) is commit/column_commit.c. */
#include "column_stage.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "catalog.h"
#include "column_data.h"
#include "column_version.h"
#include "error.h"
#include "ext.h"
#include "fsutil.h"
#include "platform.h"
#include "column_handle.h"

/* ---- staging, writer lock, torn marker ---------------------------------- */

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
