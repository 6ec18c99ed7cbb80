/* stream_part.c - a stream commit written in parts (docs/format.md 8.7):
 * the owner's first lines, each task's lines written by whichever process
 * holds them, and the owner's checksum line, in a hidden temporary file
 * renamed over the table.  No process needs every task's chunk CRC32Cs and
 * statistics; the bytes are those of a whole-table commit. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checksum.h"
#include "error.h"
#include "fsutil.h"
#include "stream_writer.h"

static void task_stat(const void *arg, int64_t k, int64_t j, cf__stream_stat *s)
{
    cf__stream_task_stat(arg, k, j, s);
}

int cf_stream_task_part(cf_stream_task *t, char **text, int64_t *len, uint32_t *crc, cf_error *err)
{
    if (!t || !text || !len || !crc) return CF_FAIL(err, CF_EARG, "cf_stream_task_part: NULL argument");
    const cf_stream_writer *w = t->w;
    const char *path = w->fpaths[t->file];
    if (t->failed)
        return CF_FAIL(err, CF_EIO, "%s: task %lld: an earlier write failed; it cannot be committed", path,
                       (long long)t->task);
    int rc = cf__stream_task_drain(t, err);
    if (rc == 0 && w->durable) rc = cf__fsync_fd(w->fds[t->file], path, err);
    if (rc) return rc;
    char *p;
    size_t n;
    if ((rc = cf__stream_table_task_lines(&w->table, t->task, t->bytes, t->crcs, task_stat, t, &p, &n, w->path, err)))
        return rc;
    *text = p;
    *len = (int64_t)n;
    *crc = cf__crc32c_update(0, p, n);
    return 0;
}

int cf_stream_part_begin(cf_stream_writer *w, char **tmp, int64_t *len, uint32_t *crc, cf_error *err)
{
    if (!w || !tmp || !len || !crc) return CF_FAIL(err, CF_EARG, "cf_stream_part_begin: NULL argument");
    if (!w->owner) return CF_FAIL(err, CF_EARG, "%s: only the writer that created the stream commits it", w->path);
    char *head = NULL, path[PATH_MAX];
    size_t n = 0;
    int rc = cf__stream_table_head(&w->table, w->table.commit + 1, &head, &n, w->path, err);
    if (rc) return rc;
    int fd = cf__open_temporary(w->dir, CF__STREAM_TABLE, path, sizeof path, w->path, err);
    if (fd < 0) {
        free(head);
        return fd;
    }
    rc = cf__pwrite_all(fd, head, n, 0, path, err);
    if (close(fd) != 0 && rc == 0) {
        int e = errno;
        rc = CF_FAIL(err, CF_EIO, "%s: close failed: %s", path, strerror(e));
    }
    if (rc == 0 && !(*tmp = strdup(path))) rc = CF_FAIL(err, CF_ENOMEM, "%s: out of memory", w->path);
    if (rc) unlink(path);
    else {
        *len = (int64_t)n;
        *crc = cf__crc32c_update(0, head, n);
    }
    free(head);
    return rc;
}

/* tmp is a temporary of this stream's table: "<dir>/.colfile-stream-v1.tmp.*",
 * dir being the stream's (a joined writer's dir is still the staging
 * directory once the owner has published it) or the staging directory. */
static int in_dir(const char *tmp, const char *dir)
{
    size_t d = strlen(dir);
    const char *prefix = "/." CF__STREAM_TABLE ".tmp.";
    return strncmp(tmp, dir, d) == 0 && strncmp(tmp + d, prefix, strlen(prefix)) == 0 && !strchr(tmp + d + 1, '/');
}

static int check_tmp(const cf_stream_writer *w, const char *tmp, cf_error *err)
{
    if (!tmp || !(in_dir(tmp, w->dir) || in_dir(tmp, w->path)))
        return CF_FAIL(err, CF_EARG, "%s: '%s' is not a temporary table of this stream", w->path, tmp ? tmp : "(null)");
    return 0;
}

int cf_stream_part_write(cf_stream_writer *w, const char *tmp, int64_t offset, const void *bytes, int64_t len,
                         int sync, cf_error *err)
{
    if (!w || offset < 0 || len < 0 || (len > 0 && !bytes))
        return CF_FAIL(err, CF_EARG, "cf_stream_part_write: bad argument");
    int rc = check_tmp(w, tmp, err);
    if (rc) return rc;
    int fd = open(tmp, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
        int e = errno;
        return CF_FAIL(err, cf__errno_code(e), "%s: cannot open the stream's temporary table: %s", tmp, strerror(e));
    }
    rc = cf__pwrite_all(fd, bytes, (size_t)len, offset, tmp, err);
    if (rc == 0 && sync && w->durable) rc = cf__fsync_fd(fd, tmp, err);
    if (close(fd) != 0 && rc == 0) {
        int e = errno;
        rc = CF_FAIL(err, CF_EIO, "%s: close failed: %s", tmp, strerror(e));
    }
    return rc;
}

/* Seal tmp (len bytes before the checksum line) and make it durable. */
static int seal(cf_stream_writer *w, const char *tmp, int64_t len, uint32_t crc, cf_error *err)
{
    int fd = open(tmp, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
        int e = errno;
        return CF_FAIL(err, cf__errno_code(e), "%s: cannot open the stream's temporary table: %s", tmp, strerror(e));
    }
    char line[18];
    cf__stream_table_seal(crc, line);
    struct stat st;
    int rc = 0;
    /* every part must be in: a missing one leaves the file short of len */
    if (fstat(fd, &st) != 0 || (int64_t)st.st_size != len)
        rc = CF_FAIL(err, CF_ESHORT, "%s: holds %lld bytes of the table's %lld before its checksum line", tmp,
                     (long long)st.st_size, (long long)len);
    if (rc == 0) rc = cf__pwrite_all(fd, line, 17, len, tmp, err);
    if (rc == 0 && w->durable) rc = cf__fsync_fd(fd, tmp, err);
    if (close(fd) != 0 && rc == 0) {
        int e = errno;
        rc = CF_FAIL(err, CF_EIO, "%s: close failed: %s", tmp, strerror(e));
    }
    return rc;
}

int cf_stream_part_end(cf_stream_writer *w, const char *tmp, int64_t len, uint32_t crc, int ok, cf_error *err)
{
    if (!w || len < 0) return CF_FAIL(err, CF_EARG, "cf_stream_part_end: bad argument");
    if (!w->owner) return CF_FAIL(err, CF_EARG, "%s: only the writer that created the stream commits it", w->path);
    int rc = check_tmp(w, tmp, err);
    if (rc) return rc;
    if (!ok) {
        unlink(tmp);
        return 0;
    }
    char *table = cf__path_join(w->dir, CF__STREAM_TABLE);
    if (!table) rc = CF_FAIL(err, CF_ENOMEM, "%s: out of memory", w->path);
    if (rc == 0) rc = seal(w, tmp, len, crc, err);
    /* physical files made since the last commit are in the directory
     * before a table that counts on them */
    if (rc == 0 && w->durable && !w->staged) rc = cf__fsync_path(w->dir, err);
    if (rc == 0 && rename(tmp, table) != 0) {
        int e = errno;
        rc = CF_FAIL(err, CF_EIO, "%s: cannot rename the new table into place: %s", table, strerror(e));
    }
    if (rc) unlink(tmp);
    free(table);
    if (rc == 0 && w->durable) rc = cf__fsync_path(w->dir, err);
    if (rc == 0 && w->staged) rc = cf__stream_publish(w, err);
    if (rc == 0) {
        w->table.commit++;
        w->parted = 1;
    }
    return rc;
}

uint32_t cf_stream_crc32c_join(uint32_t crc_a, uint32_t crc_b, int64_t len_b)
{
    return cf__crc32c_combine(crc_a, crc_b, (uint64_t)len_b);
}
