/* stream_slice.c - a committed table read in slices by many processes
 * (docs/format.md 8.7; colfile_stream.h, "a reopen in slices"): the owner
 * reads the head lines and the checksum line, each reader the task lines
 * that start in its byte range of the table, and each task's writer parses
 * only its own task's lines.  No process reads or holds the whole table;
 * the slices' CRC32Cs, joined in order, must give the checksum line's. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checksum.h"
#include "error.h"
#include "file.h"
#include "fsutil.h"
#include "names.h"
#include "stream_impl.h"
#include "stream_writer.h"

/* The head lines are far shorter: 8 lines of a token and numbers, read
 * in a first piece, and up to the most when that is not enough. */
#define HEAD_FIRST 256
#define HEAD_MAX 4096
/* A reader continues past its range to the end of its last task's lines
 * in pieces of a quarter of what it has read beyond the range (at least
 * the first size, at most the last): it reads little more than those
 * lines, in few calls. */
#define MORE_FIRST ((int64_t)4 << 10)
#define MORE_MAX ((int64_t)1 << 20)

static int open_table(const char *dir, char **path, int *fd, int64_t *size, cf_error *err)
{
    if (!(*path = cf__path_join(dir, CF__STREAM_TABLE))) return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", dir);
    *fd = open(*path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (*fd < 0) {
        int e = errno;
        if (e == ENOENT) return CF_FAIL(err, CF_ENOENT, "%s: no stream (no %s)", dir, CF__STREAM_TABLE);
        return CF_FAIL(err, cf__errno_code(e), "%s: cannot open: %s", *path, strerror(e));
    }
    struct stat st;
    if (fstat(*fd, &st) != 0) {
        int e = errno;
        return CF_FAIL(err, cf__errno_code(e), "%s: cannot stat: %s", *path, strerror(e));
    }
    *size = (int64_t)st.st_size;
    return 0;
}

static int read_at(int fd, char *buf, int64_t n, int64_t at, const char *path, int64_t *counted, cf_error *err)
{
    size_t got = 0;
    int rc = cf__pread_all(fd, buf, (size_t)n, at, &got, path, err);
    *counted += (int64_t)got;
    if (rc == 0 && (int64_t)got < n) rc = CF_FAIL(err, CF_EFORMAT, "%s: ends at byte %lld, cut short", path,
                                                  (long long)(at + (int64_t)got));
    return rc;
}

/* The committed table's head lines (malloc'd, *hlen bytes) parsed into
 * *t, its size, the CRC32C its checksum line gives and the head's. */
int cf__stream_read_ends(const char *dir, cf__stream_table *t, char **head, int64_t *hlen, int64_t *size,
                         uint32_t *seal, uint32_t *hcrc, int64_t *counted, int *keep_fd, cf_error *err)
{
    char *path = NULL, *buf = NULL;
    int fd = -1;
    int rc = open_table(dir, &path, &fd, size, err);
    int64_t n = 0, end = 0;
    int lines = 0;
    if (rc == 0 && !(buf = malloc(HEAD_MAX))) rc = CF_FAIL(err, CF_ENOMEM, "%s: out of memory", path);
    for (int64_t want = HEAD_FIRST; rc == 0 && lines < 8 && n < *size && n < HEAD_MAX; want = HEAD_MAX) {
        int64_t more = (*size < want ? *size : want) - n;
        rc = read_at(fd, buf + n, more, n, path, counted, err);
        for (n += more; rc == 0 && end < n && lines < 8; end++)
            if (buf[end] == '\n') lines++;
    }
    if (rc == 0 && (end == 0 || buf[end - 1] != '\n' || *size < end + 17))
        rc = CF_FAIL(err, CF_EFORMAT, "%s: no head lines and checksum line (cut short or not a stream table)", path);
    if (rc == 0) rc = cf__stream_table_parse_head(t, buf, (size_t)end, path, err);
    char last[18];
    if (rc == 0 && (rc = read_at(fd, last, 18, *size - 18, path, counted, err))) cf__stream_table_free(t);
    if (rc == 0) {
        uint32_t v = 0;
        int ok = last[0] == '\n' && memcmp(last + 1, "CRC32C: ", 8) == 0 && last[17] == '\n';
        for (int i = 9; ok && i < 17; i++) {
            char h = last[i];
            int d = h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10 : -1;
            ok = d >= 0;
            v = v << 4 | (uint32_t)(d & 15);
        }
        if (!ok) {
            cf__stream_table_free(t);
            rc = CF_FAIL(err, CF_EFORMAT, "%s: no checksum line at the end (cut short or not a stream table)", path);
        }
        *seal = v;
        *hcrc = cf__crc32c_update(0, buf, (size_t)end);
        *hlen = end;
    }
    if (rc == 0 && keep_fd) *keep_fd = fd;
    else if (fd >= 0) close(fd);
    free(path);
    if (rc) free(buf);
    else *head = buf;
    return rc;
}

int cf_stream_reopen_head(cf_stream_writer **out, cf_file *f, const char *name, char **head, int64_t *head_len,
                          int64_t *table_len, cf_error *err)
{
    if (!out || !f || !name || !head || !head_len || !table_len)
        return CF_FAIL(err, CF_EARG, "cf_stream_reopen_head: NULL argument");
    if (!cf_file_writable(f))
        return CF_FAIL(err, CF_EREADONLY, "%s: File is open read-only; cannot append to stream '%s'",
                       cf_file_path(f), name);
    int rc;
    if ((rc = cf_name_check(name, err))) return rc;
    if ((rc = cf__name_confine(cf_file_path(f), name, err))) return rc;
    char *dir = cf__path_join(cf_file_path(f), name), *header = dir ? cf__path_join(dir, "header") : NULL;
    if (!header) rc = CF_FAIL(err, CF_ENOMEM, "%s: out of memory", cf_file_path(f));
    else if (cf__exists(header)) rc = CF_FAIL(err, CF_EKIND, "%s: is a column, not a stream", dir);
    free(header);
    /* the head gives the row type and layout; read again under the lock */
    cf__stream_table t;
    char *text = NULL;
    int64_t hlen = 0, size = 0, counted = 0;
    uint32_t seal = 0, hcrc = 0;
    if (rc == 0) rc = cf__stream_read_ends(dir, &t, &text, &hlen, &size, &seal, &hcrc, &counted, NULL, err);
    free(dir);
    if (rc) return rc;
    free(text);
    cf_stream_writer *w;
    rc = cf__stream_writer_new(&w, f, name, t.dtype, t.nmemb, &t.layout, err);
    cf__stream_table_free(&t);
    if (rc) return rc;
    w->owner = 1;
    w->lock.off = (cf_file_flags(f) & CF_OPEN_NOLOCKING) != 0;
    rc = cf__lock_take(&w->lock, w->path, (cf_file_flags(f) & CF_OPEN_NOLOCK) != 0, err);
    if (rc == 0 && !(w->dir = strdup(w->path))) rc = CF_FAIL(err, CF_ENOMEM, "%s: out of memory", w->path);
    if (rc == 0 && (rc = cf__stream_read_ends(w->dir, &t, &text, &hlen, &size, &seal, &hcrc, &counted, NULL, err)) == CF_ENOENT)
        rc = CF_FAIL(err, CF_ENOENT, "%s: the stream vanished while it was reopened", w->path);
    if (rc == 0) {
        const cf_stream_layout *a = &t.layout, *b = &w->table.layout;
        if (strcmp(t.dtype, w->table.dtype) != 0 || t.nmemb != w->table.nmemb || a->tasks != b->tasks ||
            a->files != b->files || a->chunk != b->chunk || a->align != b->align) {
            rc = CF_FAIL(err, CF_EARG, "%s: was replaced by another stream while it was reopened", w->path);
            cf__stream_table_free(&t);
            free(text);
        } else {
            cf__stream_table_free(&w->table);
            w->table = t;
        }
    }
    if (rc) {
        cf__stream_writer_free(w);
        return rc;
    }
    w->head_len = hlen;
    w->table_len = size;
    w->head_crc = hcrc;
    w->seal_crc = seal;
    w->table_read = counted;
    w->parted = 1; /* its table holds no other task: it commits in parts */
    *head = text;
    *head_len = hlen;
    *table_len = size;
    *out = w;
    return 0;
}

int cf_stream_join_head(cf_stream_writer **out, cf_file *f, const char *name, const char *dir, const char *head,
                        int64_t head_len, cf_error *err)
{
    if (!out || !f || !name || !dir || !head || head_len <= 0)
        return CF_FAIL(err, CF_EARG, "cf_stream_join_head: bad argument");
    cf__stream_table t;
    char context[1200];
    snprintf(context, sizeof context, "%s/%s (head lines)", dir, CF__STREAM_TABLE);
    int rc = cf__stream_table_parse_head(&t, head, (size_t)head_len, context, err);
    if (rc) return rc;
    cf_stream_writer *w;
    rc = cf__stream_writer_new(&w, f, name, t.dtype, t.nmemb, &t.layout, err);
    if (rc == 0 && !(w->dir = strdup(dir))) {
        cf__stream_writer_free(w);
        rc = CF_FAIL(err, CF_ENOMEM, "%s: out of memory", dir);
    }
    if (rc) {
        cf__stream_table_free(&t);
        return rc;
    }
    cf__stream_table_free(&w->table);
    w->table = t;
    w->head_len = head_len;
    *out = w;
    return 0;
}

static int is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* The task number that starts the line at p (a digit), or -1. */
static int64_t task_number(const char *p, const char *end)
{
    int64_t v = 0;
    for (; p < end && is_digit(*p); p++) {
        if (v > (CF_STREAM_TASKS_MAX - (*p - '0')) / 10) return -1;
        v = v * 10 + (*p - '0');
    }
    return p < end && *p == ' ' ? v : -1;
}

int cf_stream_table_slice(cf_stream_writer *w, int64_t lo, int64_t hi, int64_t end, char **text, int64_t *len,
                          int64_t **ends, int64_t *first_task, int64_t *ntasks, uint32_t *crc, cf_error *err)
{
    if (!w || !text || !len || !ends || !first_task || !ntasks || !crc)
        return CF_FAIL(err, CF_EARG, "cf_stream_table_slice: NULL argument");
    if (w->head_len <= 0)
        return CF_FAIL(err, CF_EARG, "%s: not a writer of a reopen in slices (cf_stream_reopen_head, "
                       "cf_stream_join_head)", w->path);
    char *path = NULL;
    int fd = -1;
    int64_t size = 0, at = 0;
    int rc = open_table(w->dir, &path, &fd, &size, err);
    if (rc == 0)
        rc = cf__stream_slice_scan(fd, path, size, w->head_len, w->table.layout.tasks, lo, hi, end, &w->table_read,
                                   text, len, ends, first_task, ntasks, &at, crc, err);
    if (fd >= 0) close(fd);
    free(path);
    return rc;
}

int cf__stream_slice_scan(int fd, const char *path, int64_t size, int64_t head_len, int64_t tasks, int64_t lo,
                          int64_t hi, int64_t end, int64_t *counted, char **text, int64_t *len, int64_t **ends,
                          int64_t *first_task, int64_t *ntasks, int64_t *text_at, uint32_t *crc, cf_error *err)
{
    if (lo < head_len || lo > hi || hi > end)
        return CF_FAIL(err, CF_EARG, "%s: slice %lld..%lld of a table whose tasks' lines are at %lld..%lld", path,
                       (long long)lo, (long long)hi, (long long)head_len, (long long)end);
    *text = NULL;
    *ends = NULL;
    *len = *first_task = *ntasks = 0;
    *text_at = lo;
    char *buf = NULL;
    int rc = 0;
    if (size < end + 17)
        rc = CF_FAIL(err, CF_EFORMAT, "%s: holds %lld bytes, the table read at the reopen %lld", path, (long long)size,
                     (long long)end + 17);
    /* buf[i] is byte lo - 1 + i: the byte before the range tells whether
     * its first byte starts a line */
    int64_t have = hi - lo + 1, cap = have;
    if (rc == 0 && !(buf = malloc((size_t)cap))) rc = CF_FAIL(err, CF_ENOMEM, "%s: out of memory", path);
    if (rc == 0) rc = read_at(fd, buf, have, lo - 1, path, counted, err);
    if (rc == 0) *crc = cf__crc32c_update(0, buf + 1, (size_t)(hi - lo));
    /* task lines starting in the range: after a line end, with a digit */
    int64_t first = -1, count = 0;
    for (int64_t i = 1; rc == 0 && i < have; i++)
        if (buf[i - 1] == '\n' && is_digit(buf[i])) {
            if (first < 0) first = i;
            count++;
        }
    if (rc == 0 && lo == head_len && hi > lo && first != 1)
        rc = CF_FAIL(err, CF_EFORMAT, "%s: byte %lld: task 0's line expected after the head lines", path,
                     (long long)lo);
    int64_t stop = have; /* the end of the range's last task's lines */
    if (rc == 0 && count > 0) {
        /* continue beyond the range to the next task line or the checksum line */
        int found = 0;
        while (rc == 0 && !found && lo - 1 + have < end) {
            int64_t beyond = have - (hi - lo + 1), piece = beyond / 4;
            piece = piece < MORE_FIRST ? MORE_FIRST : piece > MORE_MAX ? MORE_MAX : piece;
            int64_t more = end - (lo - 1 + have) < piece ? end - (lo - 1 + have) : piece;
            if (have + more > cap) {
                int64_t want = cap * 2 > have + more ? cap * 2 : have + more;
                char *p = realloc(buf, (size_t)want);
                if (!p) {
                    rc = CF_FAIL(err, CF_ENOMEM, "%s: out of memory", path);
                    break;
                }
                buf = p;
                cap = want;
            }
            rc = read_at(fd, buf + have, more, lo - 1 + have, path, counted, err);
            for (int64_t i = have; rc == 0 && i < have + more; i++)
                if (buf[i - 1] == '\n' && is_digit(buf[i])) {
                    stop = i;
                    found = 1;
                    break;
                }
            have += more;
        }
        if (!found) stop = have;
    }
    int64_t *e = NULL, task0 = -1;
    if (rc == 0 && count > 0) {
        if (!(e = malloc((size_t)count * sizeof *e))) rc = CF_FAIL(err, CF_ENOMEM, "%s: out of memory", path);
        task0 = task_number(buf + first, buf + stop);
        int64_t k = 0;
        for (int64_t i = first + 1; rc == 0 && i < stop; i++)
            if (buf[i - 1] == '\n' && is_digit(buf[i])) {
                if (task_number(buf + i, buf + stop) != task0 + k + 1)
                    rc = CF_FAIL(err, CF_EFORMAT, "%s: byte %lld: task lines out of order or missing", path,
                                 (long long)(lo - 1 + i));
                e[k++] = i - first;
            }
        if (rc == 0) e[count - 1] = stop - first;
        if (rc == 0 && (task0 < 0 || task0 + count > tasks))
            rc = CF_FAIL(err, CF_EFORMAT, "%s: byte %lld: a task line out of range 0..%lld", path,
                         (long long)(lo - 1 + first), (long long)tasks - 1);
    }
    if (rc) {
        free(buf);
        free(e);
        return rc;
    }
    if (count > 0) memmove(buf, buf + first, (size_t)(stop - first));
    *text = buf;
    *len = count > 0 ? stop - first : 0;
    *ends = e;
    *first_task = count > 0 ? task0 : 0;
    if (count > 0) *text_at = lo - 1 + first;
    *ntasks = count;
    return 0;
}

int cf_stream_task_resume(cf_stream_writer *w, int64_t task, const char *lines, int64_t len, cf_error *err)
{
    if (!w || len < 0 || (len > 0 && !lines)) return CF_FAIL(err, CF_EARG, "cf_stream_task_resume: bad argument");
    if (task < 0 || task >= w->table.layout.tasks)
        return CF_FAIL(err, CF_EARG, "%s: task %lld out of range 0..%lld", w->path, (long long)task,
                       (long long)w->table.layout.tasks - 1);
    if (w->tasks[task]) return CF_FAIL(err, CF_EBUSY, "%s: task %lld is already open", w->path, (long long)task);
    char context[1200];
    snprintf(context, sizeof context, "%s/%s, task %lld's lines", w->dir, CF__STREAM_TABLE, (long long)task);
    return cf__stream_table_parse_task(&w->table, task, lines, (size_t)len, context, err);
}

int cf_stream_slices_check(cf_stream_writer *w, int64_t body_len, uint32_t body_crc, int64_t tasks, cf_error *err)
{
    if (!w) return CF_FAIL(err, CF_EARG, "cf_stream_slices_check: NULL writer");
    if (!w->owner || w->head_len <= 0)
        return CF_FAIL(err, CF_EARG, "%s: not the owner of a reopen in slices (cf_stream_reopen_head)", w->path);
    char table[1200];
    snprintf(table, sizeof table, "%s/%s", w->dir, CF__STREAM_TABLE);
    if (tasks != w->table.layout.tasks)
        return CF_FAIL(err, CF_EFORMAT, "%s: task lines out of order or missing (%lld in order of %lld)", table,
                       (long long)(tasks < 0 ? 0 : tasks), (long long)w->table.layout.tasks);
    if (body_len != w->table_len - w->head_len - 17 ||
        cf__crc32c_combine(w->head_crc, body_crc, (uint64_t)body_len) != w->seal_crc)
        return CF_FAIL(err, CF_EFORMAT, "%s: the checksum line does not match the table", table);
    return 0;
}

int64_t cf_stream_writer_table_bytes(const cf_stream_writer *w)
{
    return w ? w->table_read : -1;
}
