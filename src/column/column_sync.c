/* column_sync.c - making written blobs durable through the descriptors
 * that wrote them.  A handle caches one blob descriptor; when it moves to
 * another blob, the descriptor of a written, unsynced blob is kept (up to
 * CF__KEPT_FDS of them) instead of closed, and the commit fsyncs each blob
 * through it: a writer opens each blob it writes once, and no one opens a
 * blob by its path only to fsync it (on Lustre or GPFS each open is a
 * metadata-server call; docs/scale.md). */
#include "column.h"
#include "column_data.h"
#include "error.h"
#include "fsutil.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int sync_fd(int fd)
{
    int rc;
    do rc = fsync(fd); while (rc != 0 && errno == EINTR);
    return rc;
}

int cf__column_kept_fd(const cf_column *c, int64_t b)
{
    for (int k = 0; k < c->io.nkept; k++)
        if (c->io.kept_blob[k] == b) return c->io.kept_fd[k];
    return -1;
}

static void forget_kept(cf_column *c, int k)
{
    memmove(&c->io.kept_fd[k], &c->io.kept_fd[k + 1], (size_t)(c->io.nkept - k - 1) * sizeof c->io.kept_fd[0]);
    memmove(&c->io.kept_blob[k], &c->io.kept_blob[k + 1], (size_t)(c->io.nkept - k - 1) * sizeof c->io.kept_blob[0]);
    c->io.nkept--;
}

/* Sync and close the oldest kept descriptor, to make room.  A failed sync
 * fails the handle; the commit reports it (cf__column_sync_blobs). */
static void evict_oldest(cf_column *c)
{
    int fd = c->io.kept_fd[0];
    int64_t b = c->io.kept_blob[0];
    if (sync_fd(fd) != 0) {
        if (!c->io.kept_errno) {
            c->io.kept_errno = errno ? errno : EIO;
            c->io.kept_err_blob = b;
        }
        c->commit.failed = 1;
    } else if (c->sums.unsynced && b < c->h.nfile) {
        c->sums.unsynced[b] = 0;
    }
    close(fd);
    forget_kept(c, 0);
}

int cf__column_keep_fd(cf_column *c)
{
    int64_t b = c->io.fd_blob;
    if (c->io.fd < 0 || !c->io.fd_writable || !c->durable || c->commit.failed || !c->sums.unsynced || b < 0 || b >= c->h.nfile ||
        !c->sums.unsynced[b] || cf__column_kept_fd(c, b) >= 0)
        return 0;
    if (c->io.nkept == CF__KEPT_FDS) evict_oldest(c);
    c->io.kept_fd[c->io.nkept] = c->io.fd;
    c->io.kept_blob[c->io.nkept] = b;
    c->io.nkept++;
    return 1;
}

/* The kept descriptor of blob b, handed back to the caller (who caches
 * it again), or -1. */
int cf__column_take_kept(cf_column *c, int64_t b)
{
    for (int k = 0; k < c->io.nkept; k++) {
        if (c->io.kept_blob[k] != b) continue;
        int fd = c->io.kept_fd[k];
        forget_kept(c, k);
        return fd;
    }
    return -1;
}

void cf__column_drop_kept(cf_column *c)
{
    for (int k = 0; k < c->io.nkept; k++) close(c->io.kept_fd[k]);
    c->io.nkept = 0;
}

int cf__column_sync_blobs(cf_column *c, cf_error *err)
{
    if (c->io.kept_errno) {
        char *p = cf__column_blob_path(c, c->io.kept_err_blob);
        int rc = CF_FAIL(err, CF_EIO, "%s: cannot fsync blob: %s", p ? p : c->path, strerror(c->io.kept_errno));
        free(p);
        c->commit.failed = 1;
        return rc;
    }
    if (!c->sums.unsynced) {
        cf__column_drop_kept(c);
        return 0;
    }
    for (int64_t i = 0; i < c->h.nfile; i++) {
        if (!c->sums.unsynced[i]) continue;
        if (c->durable) {
            int fd = c->io.fd >= 0 && c->io.fd_blob == i ? c->io.fd : cf__column_kept_fd(c, i);
            int rc = 0;
            if (fd >= 0) {
                if (sync_fd(fd) != 0) {
                    int e = errno;
                    char *p = cf__column_blob_path(c, i);
                    rc = CF_FAIL(err, CF_EIO, "%s: cannot fsync blob: %s", p ? p : c->path, strerror(e));
                    free(p);
                }
            } else {
                /* written through a handle that no longer holds it (a
                 * pending state merged from another handle) */
                char *p = cf__column_blob_path(c, i);
                if (!p) return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", c->path);
                rc = cf__fsync_path(p, err);
                free(p);
            }
            if (rc) {
                c->commit.failed = 1;
                return rc;
            }
        }
        c->sums.unsynced[i] = 0;
    }
    cf__column_drop_kept(c);
    return 0;
}

int cf__column_create_unwritten(cf_column *c, int64_t from, cf_error *err)
{
    for (int64_t i = from; i < c->h.nfile; i++) {
        if ((c->sums.made && c->sums.made[i]) || (c->io.fd >= 0 && c->io.fd_blob == i)) continue;
        char *p = cf__column_blob_path(c, i);
        if (!p) return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", c->path);
        /* no O_TRUNC: a writer whose pending state carried no segment may
         * have made it already */
        int fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0666);
        if (fd < 0) {
            int e = errno;
            int rc = CF_FAIL(err, CF_EIO, "%s: cannot create blob: %s", p, strerror(e));
            free(p);
            c->commit.failed = 1;
            return rc;
        }
        close(fd);
        free(p);
    }
    return 0;
}
