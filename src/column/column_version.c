/* column_version.c - the version of a column that a handle opened: its
 * directory, held open (column_version.h). */
#include "column_version.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "catalog.h"
#include "checksum.h"
#include "error.h"
#include "ext.h"
#include "fsutil.h"
#include "platform.h"
#include "stats.h"
#include "column_handle.h"

int cf__version_hold(cf_column *c, cf_error *err)
{
    int fd = cf__open_dir_handle(AT_FDCWD, c->dir);
    if (fd < 0) {
        int e = errno;
        if (e == EMFILE || e == ENFILE)
            return CF_FAIL(err, CF_EIO, "%s: cannot open the column's directory: %s (each open column "
                           "holds a descriptor of its directory and one of the blob it read last: "
                           "close columns, or raise the limit with ulimit -n)", c->dir, strerror(e));
        return CF_FAIL(err, cf__errno_code(e), "%s: cannot open the column's directory: %s", c->dir, strerror(e));
    }
    cf__version_release(c);
    c->ver.dirfd = fd;
    return 0;
}

void cf__version_release(cf_column *c)
{
    if (c->ver.dirfd >= 0) close(c->ver.dirfd);
    c->ver.dirfd = -1;
}

int cf__version_openat(const cf_column *c, const char *leaf, int flags)
{
    if (c->ver.dirfd >= 0) return openat(c->ver.dirfd, leaf, flags, 0666);
    char *p = cf__path_join(c->dir, leaf);
    if (!p) {
        errno = ENOMEM;
        return -1;
    }
    int fd = open(p, flags, 0666);
    int e = errno;
    free(p);
    errno = e;
    return fd;
}

/* colfile-v1 (and an older colfile-stats-v1) grow with the blobs and the
 * statistics chunks: no size limit but memory, so that a large one is
 * never taken for an absent one (docs/format.md 8.1). */
static size_t read_limit(const char *leaf)
{
    return strcmp(leaf, CF__EXT_NAME) == 0 || strcmp(leaf, CF__STATS_NAME) == 0 ? SIZE_MAX : CF__METADATA_MAX;
}

int cf__version_read_stat(const cf_column *c, const char *leaf, char **data, size_t *len, struct stat *st,
                          cf_error *err)
{
    size_t max = read_limit(leaf);
    if (c->ver.dirfd < 0) {
        char *p = cf__path_join(c->dir, leaf);
        if (!p) return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", c->dir);
        int rc = cf__read_file_at_stat_max(AT_FDCWD, p, max, data, len, st, err);
        free(p);
        return rc;
    }
    /* its messages start with the name it was given: make it the path */
    return cf__error_prefix(err, cf__read_file_at_stat_max(c->ver.dirfd, leaf, max, data, len, st, err), c->dir,
                            "/");
}

int cf__version_read(const cf_column *c, const char *leaf, char **data, size_t *len, cf_error *err)
{
    return cf__version_read_stat(c, leaf, data, len, NULL, err);
}

int cf__version_has(const cf_column *c, const char *leaf)
{
    if (c->ver.dirfd < 0) {
        char *p = cf__path_join(c->dir, leaf);
        int there = p && cf__exists(p);
        free(p);
        return there;
    }
    struct stat st;
    return fstatat(c->ver.dirfd, leaf, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

int cf__version_stat(const cf_column *c, const char *leaf, struct stat *st)
{
    if (c->ver.dirfd >= 0) return fstatat(c->ver.dirfd, leaf, st, AT_SYMLINK_NOFOLLOW) == 0;
    char *p = cf__path_join(c->dir, leaf);
    int there = p && lstat(p, st) == 0;
    free(p);
    return there;
}

int cf__version_same_file(const cf_column *c, const char *leaf, const struct stat *seen)
{
    struct stat now;
    return cf__version_stat(c, leaf, &now) && now.st_dev == seen->st_dev && now.st_ino == seen->st_ino &&
           now.st_mtim.tv_sec == seen->st_mtim.tv_sec && now.st_mtim.tv_nsec == seen->st_mtim.tv_nsec &&
           !cf__version_header_changed(c);
}

int cf__version_still(const cf_column *c, const char *leaf, const cf__stamp *s)
{
    if (c->ver.dirfd >= 0) return cf__stamp_still_at(c->ver.dirfd, leaf, s);
    if (!leaf[0]) return cf__stamp_still(c->dir, s);
    char *p = cf__path_join(c->dir, leaf);
    int still = p && cf__stamp_still(p, s);
    free(p);
    return still;
}

int cf__version_moved(const cf_column *c)
{
    if (c->ver.dirfd < 0) return 0;
    struct stat held, now;
    if (fstat(c->ver.dirfd, &held) != 0) return 0;
    if (held.st_nlink == 0) return 1; /* removed */
    if (stat(c->path, &now) != 0) return errno == ENOENT || errno == ENOTDIR;
    return now.st_dev != held.st_dev || now.st_ino != held.st_ino;
}

int cf__version_gone(const cf_column *c)
{
    if (c->ver.dirfd < 0) return 0;
    if (cf__version_moved(c)) return 1;
    /* still at its name, but being deleted in place */
    struct stat st;
    return fstatat(c->ver.dirfd, "header", &st, AT_SYMLINK_NOFOLLOW) != 0 && errno == ENOENT;
}

int cf__version_header_changed(const cf_column *c)
{
    if (!c->ver.hstamp.known) return 0;
    struct stat st;
    int r;
    if (c->ver.dirfd >= 0) {
        r = fstatat(c->ver.dirfd, "header", &st, AT_SYMLINK_NOFOLLOW);
    } else {
        char *p = cf__path_join(c->dir, "header");
        if (!p) return 0;
        r = lstat(p, &st);
        free(p);
    }
    if (r != 0) return errno == ENOENT;
    cf__hstamp now;
    cf__hstamp_of(&now, &st);
    return !cf__hstamp_equal(&now, &c->ver.hstamp);
}

int cf__version_changed(const cf_column *c)
{
    if (cf__version_gone(c) || cf__version_header_changed(c)) return 1;
    /* a marker found at open is the handle's own business (torn="warn") */
    return !c->commit.torn_marked && c->ext.ext_state != CF_EXT_TORN && c->ext.ext_state != CF_EXT_UPDATING &&
           cf__version_has(c, CF__TORN_NAME);
}

int cf__version_changed_error(const cf_column *c, const char *what, cf_error *err)
{
    return CF_FAIL(err, CF_EREPLACED, "%s: column '%s' was changed by another process since this handle "
                   "opened it (it committed or is making an append, an in-place update or a replacement "
                   "there), so %s no longer holds the rows its recorded sums and CRC32C describe: reopen "
                   "the column to read the version there now", c->path, c->name, what);
}

int cf__version_replaced(const cf_column *c, cf_error *err)
{
    return CF_FAIL(err, CF_EREPLACED, "%s: column '%s' was replaced or removed since this handle opened it "
                   "(another process published a new version or removed it, and the files of the version "
                   "this handle reads are gone): reopen the column to read what is there now",
                   c->path, c->name);
}

int cf__version_check(const cf_column *c, cf_error *err)
{
    if (cf__version_gone(c))
        return CF_FAIL(err, CF_EREPLACED, "%s: column '%s' was replaced or removed since this handle opened "
                       "it (another process published a new version or removed it): its changes would go "
                       "to a version that is no longer the column's, so none are made; reopen the column",
                       c->path, c->name);
    /* Another writer's commit since the open (an append, an update) left
     * this handle's header stale: committing it would drop that commit.
     * Writers sharing the lock (CF_OPEN_NOLOCK, as bigfile) accept that. */
    if (c->ver.opened_header_len < 0 || c->commit.nolock || c->ver.dirfd < 0) return 0;
    char *text = NULL;
    size_t len = 0;
    int rc = cf__version_read(c, "header", &text, &len, err);
    if (rc == CF_ENOENT) return cf__version_replaced(c, err);
    if (rc) return rc;
    int same = (int64_t)len == c->ver.opened_header_len && cf__crc32c_update(0, text, len) == c->ver.opened_header_crc;
    free(text);
    if (same) return 0;
    return CF_FAIL(err, CF_EBUSY, "%s: column '%s' was changed by another writer since this handle opened it "
                   "(its header is no longer the one this handle read): its changes would be made over "
                   "another version, so none are made; reopen the column", c->path, c->name);
}

void cf__version_id(const cf_column *c, uint64_t id[2])
{
    struct stat st;
    id[0] = id[1] = 0;
    if (c->ver.dirfd >= 0 && fstat(c->ver.dirfd, &st) == 0) {
        id[0] = (uint64_t)st.st_dev;
        id[1] = (uint64_t)st.st_ino;
    }
}

int cf__version_hold_as(cf_column *c, const uint64_t id[2], cf_error *err)
{
    int rc = cf__version_hold(c, err);
    if (rc == CF_ENOENT) return cf__version_replaced(c, err);
    if (rc) return rc;
    uint64_t now[2];
    cf__version_id(c, now);
    if (now[0] != id[0] || now[1] != id[1]) {
        cf__version_release(c);
        return cf__version_replaced(c, err);
    }
    return 0;
}
