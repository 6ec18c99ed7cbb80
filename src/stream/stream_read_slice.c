/* stream_read_slice.c - a committed stream opened for reading by many
 * processes, none of which reads the whole table (docs/streams.md,
 * "Reading under MPI"): each process reads the head lines and the checksum
 * line and keeps the table open; a few readers each read the task lines
 * that start in their byte range; every process then learns each task's
 * committed bytes and where its lines are (16 bytes a task), and reads a
 * task's chunk records from the table only when it first reads that task. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "checksum.h"
#include "error.h"
#include "fsutil.h"
#include "stream_reader.h"

/* The head lines and the checksum line, the table kept open. */
static int load_ends(cf_stream_reader *r, cf_error *err)
{
    return cf__stream_read_ends(r->path, &r->table, &r->head, &r->head_len, &r->table_len, &r->seal_crc,
                                &r->head_crc, &r->table_read, &r->table_fd, err);
}

static int open_ends(cf_stream_reader **out, cf_file *f, const char *name, cf_error *err)
{
    return cf__stream_reader_new(out, f, name, "cf_stream_open_head", load_ends, err);
}

int cf_stream_open_head(cf_stream_reader **out, cf_file *f, const char *name, const char **head, int64_t *head_len,
                        int64_t *table_len, cf_error *err)
{
    if (!head || !head_len || !table_len) return CF_FAIL(err, CF_EARG, "cf_stream_open_head: NULL argument");
    int rc = open_ends(out, f, name, err);
    if (rc) return rc;
    *head = (*out)->head;
    *head_len = (*out)->head_len;
    *table_len = (*out)->table_len;
    return 0;
}

int cf_stream_join_reader(cf_stream_reader **out, cf_file *f, const char *name, const char *head, int64_t head_len,
                          int64_t table_len, cf_error *err)
{
    if (!head || head_len <= 0) return CF_FAIL(err, CF_EARG, "cf_stream_join_reader: bad argument");
    cf_stream_reader *r;
    int rc = open_ends(&r, f, name, err);
    if (rc) return rc;
    /* the same table as the owner's: a commit in between changes its COMMIT line */
    if (r->head_len != head_len || r->table_len != table_len || memcmp(r->head, head, (size_t)head_len) != 0) {
        rc = CF_FAIL(err, CF_EREPLACED, "%s/%s: replaced by a commit while the stream was opened", r->path,
                     CF__STREAM_TABLE);
        cf_stream_reader_close(r);
        return rc;
    }
    *out = r;
    return 0;
}

int cf_stream_reader_slice(cf_stream_reader *r, int64_t lo, int64_t hi, int64_t *first_task, int64_t *ntasks,
                           int64_t **line_at, int64_t **bytes, uint32_t *crc, cf_error *err)
{
    if (!r || !first_task || !ntasks || !line_at || !bytes || !crc)
        return CF_FAIL(err, CF_EARG, "cf_stream_reader_slice: NULL argument");
    if (r->table_fd < 0)
        return CF_FAIL(err, CF_EARG, "%s: not a reader of an open in slices (cf_stream_open_head, "
                       "cf_stream_join_reader)", r->path);
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", r->path, CF__STREAM_TABLE);
    char *text = NULL;
    int64_t len = 0, *ends = NULL, first = 0, count = 0, at = 0;
    int rc = cf__stream_slice_scan(r->table_fd, path, r->table_len, r->head_len, r->table.layout.tasks, lo, hi,
                                   r->table_len - 17, &r->table_read, &text, &len, &ends, &first, &count, &at, crc,
                                   err);
    if (rc) return rc;
    int64_t *a = malloc(((size_t)count + 1) * sizeof *a), *b = malloc(((size_t)count + 1) * sizeof *b);
    if (!a || !b) rc = CF_FAIL(err, CF_ENOMEM, "%s: out of memory", path);
    for (int64_t i = 0; rc == 0 && i < count; i++) {
        int64_t from = i ? ends[i - 1] : 0;
        char context[1300];
        snprintf(context, sizeof context, "%s, task %lld's lines (byte %lld)", path, (long long)(first + i),
                 (long long)(at + from));
        rc = cf__stream_table_parse_task(&r->table, first + i, text + from, (size_t)(ends[i] - from), context, err);
        a[i] = at + from;
        b[i] = rc ? 0 : r->table.bytes[first + i];
    }
    if (rc == 0) a[count] = at + len;
    free(text);
    free(ends);
    if (rc) {
        free(a);
        free(b);
        return rc;
    }
    *first_task = first;
    *ntasks = count;
    *line_at = a;
    *bytes = b;
    return 0;
}

int cf_stream_reader_slices_check(cf_stream_reader *r, int64_t body_len, uint32_t body_crc, int64_t tasks,
                                  cf_error *err)
{
    if (!r) return CF_FAIL(err, CF_EARG, "cf_stream_reader_slices_check: NULL reader");
    if (r->table_fd < 0) return CF_FAIL(err, CF_EARG, "%s: not a reader of an open in slices", r->path);
    if (tasks != r->table.layout.tasks)
        return CF_FAIL(err, CF_EFORMAT, "%s/%s: task lines out of order or missing (%lld in order of %lld)", r->path,
                       CF__STREAM_TABLE, (long long)(tasks < 0 ? 0 : tasks), (long long)r->table.layout.tasks);
    if (body_len != r->table_len - r->head_len - 17 ||
        cf__crc32c_combine(r->head_crc, body_crc, (uint64_t)body_len) != r->seal_crc)
        return CF_FAIL(err, CF_EFORMAT, "%s/%s: the checksum line does not match the table", r->path,
                       CF__STREAM_TABLE);
    return 0;
}

int cf_stream_reader_index(cf_stream_reader *r, const int64_t *bytes, const int64_t *line_at, cf_error *err)
{
    if (!r || !bytes || !line_at) return CF_FAIL(err, CF_EARG, "cf_stream_reader_index: NULL argument");
    if (r->table_fd < 0) return CF_FAIL(err, CF_EARG, "%s: not a reader of an open in slices", r->path);
    cf__stream_table *t = &r->table;
    const int64_t tasks = t->layout.tasks;
    if (line_at[0] != r->head_len || line_at[tasks] != r->table_len - 17)
        return CF_FAIL(err, CF_EFORMAT, "%s/%s: the task lines are not at %lld..%lld", r->path, CF__STREAM_TABLE,
                       (long long)r->head_len, (long long)(r->table_len - 17));
    for (int64_t i = 0; i < tasks; i++) {
        if (line_at[i + 1] <= line_at[i] || bytes[i] < 0 || bytes[i] % t->rowbytes != 0 ||
            (t->bytes[i] != 0 && t->bytes[i] != bytes[i]))
            return CF_FAIL(err, CF_EFORMAT, "%s/%s: task %lld: %lld bytes with lines at %lld..%lld, not a task's",
                           r->path, CF__STREAM_TABLE, (long long)i, (long long)bytes[i], (long long)line_at[i],
                           (long long)line_at[i + 1]);
        if (r->start[i] > INT64_MAX - bytes[i] / t->rowbytes)
            return CF_FAIL(err, CF_EFORMAT, "%s/%s: more rows than 64 bits count", r->path, CF__STREAM_TABLE);
        r->start[i + 1] = r->start[i] + bytes[i] / t->rowbytes;
    }
    int64_t *copy = malloc(((size_t)tasks + 1) * sizeof *copy);
    if (!copy) return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", r->path);
    memcpy(copy, line_at, ((size_t)tasks + 1) * sizeof *copy);
    for (int64_t i = 0; i < tasks; i++) t->bytes[i] = bytes[i];
    free(r->line_at);
    r->line_at = copy;
    return 0;
}

int cf__stream_reader_need(cf_stream_reader *r, int64_t task, cf_error *err)
{
    cf__stream_table *t = &r->table;
    if (!r->line_at || t->bytes[task] == 0 || t->crcs[task]) return 0;
    int64_t want = t->bytes[task], at = r->line_at[task], n = r->line_at[task + 1] - at;
    char path[1200], context[1300];
    snprintf(path, sizeof path, "%s/%s", r->path, CF__STREAM_TABLE);
    snprintf(context, sizeof context, "%s, task %lld's lines (byte %lld)", path, (long long)task, (long long)at);
    char *buf = malloc((size_t)n);
    if (!buf) return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", path);
    size_t got = 0;
    int rc = cf__pread_all(r->table_fd, buf, (size_t)n, at, &got, path, err);
    r->table_read += (int64_t)got;
    if (rc == 0 && (int64_t)got < n)
        rc = CF_FAIL(err, CF_EFORMAT, "%s: ends at byte %lld, cut short", path, (long long)(at + (int64_t)got));
    if (rc == 0) rc = cf__stream_table_parse_task(t, task, buf, (size_t)n, context, err);
    free(buf);
    if (rc == 0 && t->bytes[task] != want) {
        rc = CF_FAIL(err, CF_EFORMAT, "%s: %lld bytes, %lld when the stream was opened", context,
                     (long long)t->bytes[task], (long long)want);
        t->bytes[task] = want;
    }
    return rc;
}

int64_t cf_stream_reader_table_bytes(const cf_stream_reader *r)
{
    return r ? r->table_read : -1;
}
