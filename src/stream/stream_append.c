/* stream_append.c - a task's appends (docs/format.md 8.7): few system
 * calls per record.  An append smaller than CF__STREAM_SMALL is copied
 * into the task's buffer and waits there; the next append that does not
 * fit, a large append, a commit or a task state writes what waits together
 * with the new bytes, in one pwritev per run of chunks that are contiguous
 * in the file (all of a task's chunks when it is its file's only task),
 * and only then folds them into the chunk CRC32Cs and statistics.  Held
 * bytes are uncommitted bytes: a crash loses them as it loses any append
 * after the last commit, and every commit writes them first. */
#ifndef _DEFAULT_SOURCE
#define _DEFAULT_SOURCE 1 /* pwritev */
#endif
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "checksum.h"
#include "error.h"
#include "stream_writer.h"

/* The most a task's buffer grows to (from 512 bytes, as small appends
 * fill it) and the largest append copied into it: above that, a copy
 * costs more than the system call it saves. */
#ifndef CF__STREAM_HOLD
#define CF__STREAM_HOLD ((int64_t)256 << 10)
#endif
#ifndef CF__STREAM_SMALL
#define CF__STREAM_SMALL ((int64_t)64 << 10)
#endif

/* The digest's piece: well inside a core's L2 cache. */
#define CF__STREAM_PIECE ((int64_t)192 << 10)

/* Linux moves at most this many bytes per write call. */
#define IO_MAX ((int64_t)0x7ffff000)

/* Write n bytes from the two pieces at file offset `off`, all of them. */
static int pwritev_all(int fd, struct iovec *iov, int cnt, int64_t off, int64_t n, const char *path, cf_error *err)
{
    while (n > 0) {
        ssize_t w = pwritev(fd, iov, cnt, (off_t)off);
        if (w < 0) {
            if (errno == EINTR) continue;
            int e = errno;
            return CF_FAIL(err, CF_EIO, "%s: write of %lld bytes at offset %lld failed: %s", path, (long long)n,
                           (long long)off, strerror(e));
        }
        if (w == 0)
            return CF_FAIL(err, CF_EIO, "%s: write at offset %lld made no progress", path, (long long)off);
        off += w;
        n -= w;
        for (size_t left = (size_t)w; left > 0 && cnt > 0;) { /* past what was written */
            size_t k = left < iov->iov_len ? left : iov->iov_len;
            iov->iov_base = (char *)iov->iov_base + k;
            iov->iov_len -= k;
            left -= k;
            if (iov->iov_len == 0) iov++, cnt--;
        }
    }
    return 0;
}

/* Room for the CRC32Cs of chunks 0 .. upto-1. */
static int crc_room(cf_stream_task *t, int64_t upto, const char *path, cf_error *err)
{
    if (upto <= t->cap) return 0;
    int64_t cap = t->cap ? t->cap * 2 : 4;
    while (cap < upto) cap *= 2;
    uint32_t *c = (uint64_t)cap <= SIZE_MAX / sizeof *c ? realloc(t->crcs, (size_t)cap * sizeof *c) : NULL;
    if (!c) return CF_FAIL(err, CF_ENOMEM, "%s: task %lld: out of memory", path, (long long)t->task);
    t->crcs = c;
    t->cap = cap;
    return 0;
}

/* Fold n bytes at task byte `at` into the chunks' running CRC32Cs (in
 * order: every byte before `at` is folded already). */
static void crc_add(cf_stream_task *t, int64_t at, const unsigned char *p, int64_t n)
{
    const int64_t chunk = t->w->table.layout.chunk;
    while (n > 0) {
        int64_t block = at / chunk, within = at % chunk;
        int64_t take = chunk - within < n ? chunk - within : n;
        t->crcs[block] = cf__crc32c_update(within ? t->crcs[block] : 0, p, (size_t)take);
        at += take;
        p += take;
        n -= take;
    }
}

/* Fold n bytes of whole rows at task byte `at` into CRC32Cs and
 * statistics, a piece at a time: the statistics read what the CRC32C just
 * brought into the cache. */
static int digest(cf_stream_task *t, int64_t at, const unsigned char *p, int64_t n, cf_error *err)
{
    const cf__stream_table *tb = &t->w->table;
    const int64_t R = tb->rowbytes;
    const int64_t piece = CF__STREAM_PIECE > R ? CF__STREAM_PIECE / R * R : R;
    for (int64_t done = 0; done < n;) {
        int64_t k = n - done < piece ? n - done : piece;
        crc_add(t, at + done, p + done, k);
        if (tb->stats) {
            int rc = cf__stream_stats_add(t, at + done, p + done, k / R, err);
            if (rc) return rc;
        }
        done += k;
    }
    return 0;
}

/* Write the held bytes and then n more from p (whole rows, n may be 0) at
 * the task's end, and fold them into CRC32Cs and statistics.  On a failed
 * write the task fails and goes back to the bytes before the held ones
 * (what it wrote before stays committable). */
static int emit(cf_stream_task *t, const unsigned char *p, int64_t n, cf_error *err)
{
    const cf_stream_writer *w = t->w;
    const cf_stream_layout *l = &w->table.layout;
    const char *path = w->fpaths[t->file];
    const int64_t chunk = l->chunk;
    const int64_t start = t->bytes - t->held, total = t->held + n, end = start + total;
    if (total == 0) return 0;
    int rc = crc_room(t, cf__stream_chunks(end, chunk), path, err);
    if (rc) return rc;
    if (cf_stream_chunk_offset(l, t->task, (end - 1) / chunk) < 0) {
        rc = CF_FAIL(err, CF_ERANGE, "%s: task %lld: chunk %lld lies beyond 2^62 bytes", path, (long long)t->task,
                     (long long)((end - 1) / chunk));
        goto failed;
    }
    for (int64_t pos = start; pos < end;) {
        /* a run: to the chunk's end, or to the end when the chunks follow each other */
        int64_t block = pos / chunk, within = pos % chunk;
        int64_t len = end - pos;
        if (!t->alone && len > chunk - within) len = chunk - within;
        if (len > IO_MAX) len = IO_MAX;
        struct iovec iov[2];
        int cnt = 0;
        int64_t rel = pos - start; /* into held bytes, then p */
        if (rel < t->held) {
            int64_t k = t->held - rel < len ? t->held - rel : len;
            iov[cnt++] = (struct iovec){ t->held_buf + rel, (size_t)k };
            if (k < len) iov[cnt++] = (struct iovec){ (void *)p, (size_t)(len - k) };
        } else {
            iov[cnt++] = (struct iovec){ (void *)(p + (rel - t->held)), (size_t)len };
        }
        rc = pwritev_all(w->fds[t->file], iov, cnt, cf_stream_chunk_offset(l, t->task, block) + within, len, path,
                         err);
        if (rc) goto failed;
        pos += len;
    }
    if ((rc = digest(t, start, t->held_buf, t->held, err)) || (rc = digest(t, start + t->held, p, n, err)))
        goto failed;
    t->bytes = end;
    t->held = 0;
    return 0;
failed:
    t->failed = 1;
    t->bytes = start;
    t->held = 0;
    return rc;
}

int cf__stream_task_drain(cf_stream_task *t, cf_error *err)
{
    if (t->held == 0) return 0;
    return emit(t, NULL, 0, err);
}

int cf_stream_append(cf_stream_task *t, const void *rows, int64_t count, cf_error *err)
{
    if (!t || (count > 0 && !rows)) return CF_FAIL(err, CF_EARG, "cf_stream_append: NULL argument");
    const cf_stream_writer *w = t->w;
    const char *path = w->fpaths[t->file];
    if (t->failed)
        return CF_FAIL(err, CF_EIO, "%s: task %lld: an earlier write failed; its committed rows stay", path,
                       (long long)t->task);
    if (count < 0 || count > (INT64_MAX - t->bytes) / w->table.rowbytes)
        return CF_FAIL(err, CF_EARG, "%s: task %lld: cannot append %lld rows", path, (long long)t->task,
                       (long long)count);
    int64_t n = count * w->table.rowbytes;
    if (n == 0) return 0;
    if (n < CF__STREAM_SMALL) {
        if (t->held + n > CF__STREAM_HOLD) {
            int rc = cf__stream_task_drain(t, err);
            if (rc) return rc;
        }
        if (t->held + n > t->held_cap) { /* grows as it is used: a process may write many tasks */
            int64_t cap = t->held_cap ? t->held_cap : 512;
            while (cap < t->held + n) cap *= 2;
            unsigned char *b = realloc(t->held_buf, (size_t)(cap < CF__STREAM_HOLD ? cap : CF__STREAM_HOLD));
            if (b) t->held_buf = b, t->held_cap = cap < CF__STREAM_HOLD ? cap : CF__STREAM_HOLD;
        }
        if (t->held + n <= t->held_cap) { /* without room the bytes are written at once */
            memcpy(t->held_buf + t->held, rows, (size_t)n);
            t->held += n;
            t->bytes += n;
            return 0;
        }
    }
    return emit(t, rows, n, err);
}
