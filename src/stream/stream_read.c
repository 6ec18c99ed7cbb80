/* stream_read.c - reading a committed stream (docs/format.md 8.7): one
 * task's rows, or the global view (task 0's rows, then task 1's, ...),
 * located by the layout arithmetic alone; and the streams of a File. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checksum.h"
#include "error.h"
#include "fsutil.h"
#include "names.h"
#include "stream_impl.h"
#include "stream_reader.h"


void cf_stream_reader_close(cf_stream_reader *r)
{
    if (!r) return;
    if (r->fds)
        for (int64_t i = 0; i < r->table.layout.files; i++)
            if (r->fds[i] >= 0) close(r->fds[i]);
    free(r->fds);
    free(r->start);
    free(r->line_at);
    free(r->head);
    if (r->table_fd >= 0) close(r->table_fd);
    cf__stream_table_free(&r->table);
    free(r->path);
    free(r);
}

int cf__stream_reader_new(cf_stream_reader **out, cf_file *f, const char *name, const char *caller,
                          int (*load)(cf_stream_reader *, cf_error *), cf_error *err)
{
    if (!out || !f || !name) return CF_FAIL(err, CF_EARG, "%s: NULL argument", caller);
    int rc;
    if ((rc = cf_name_check(name, err))) return rc;
    if ((rc = cf__name_confine(cf_file_path(f), name, err))) return rc;
    cf_stream_reader *r = calloc(1, sizeof *r);
    if (r) r->table_fd = -1;
    if (!r || !(r->path = cf__path_join(cf_file_path(f), name))) {
        free(r);
        return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", cf_file_path(f));
    }
    char *header = cf__path_join(r->path, "header");
    if (!header) rc = CF_FAIL(err, CF_ENOMEM, "%s: out of memory", r->path);
    else if (cf__exists(header)) rc = CF_FAIL(err, CF_EKIND, "%s: is a column, not a stream", r->path);
    else rc = load(r, err);
    free(header);
    if (rc == 0) {
        int64_t tasks = r->table.layout.tasks, files = r->table.layout.files;
        r->start = calloc((size_t)tasks + 1, sizeof *r->start);
        r->fds = malloc((size_t)files * sizeof *r->fds);
        if (!r->start || !r->fds) rc = CF_FAIL(err, CF_ENOMEM, "%s: out of memory", r->path);
        else
            for (int64_t i = 0; i < files; i++) r->fds[i] = -1;
    }
    if (rc) {
        cf_stream_reader_close(r);
        return rc;
    }
    *out = r;
    return 0;
}

/* The whole table, parsed. */
static int load_whole(cf_stream_reader *r, cf_error *err)
{
    char *table = cf__path_join(r->path, CF__STREAM_TABLE), *text = NULL;
    size_t len = 0;
    if (!table) return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", r->path);
    int rc = cf__read_file_at(AT_FDCWD, table, 1, &text, &len, err);
    if (rc == CF_ENOENT) rc = CF_FAIL(err, CF_ENOENT, "%s: no stream (no %s)", r->path, CF__STREAM_TABLE);
    if (rc == 0) rc = cf__stream_table_parse(&r->table, text, len, table, err);
    r->table_read = (int64_t)len;
    free(text);
    free(table);
    return rc;
}

int cf_stream_open(cf_stream_reader **out, cf_file *f, const char *name, cf_error *err)
{
    int rc = cf__stream_reader_new(out, f, name, "cf_stream_open", load_whole, err);
    if (rc) return rc;
    cf_stream_reader *r = *out;
    for (int64_t i = 0; i < r->table.layout.tasks; i++)
        r->start[i + 1] = r->start[i] + r->table.bytes[i] / r->table.rowbytes;
    return 0;
}

void cf_stream_info(const cf_stream_reader *r, cf_stream_layout *layout, char dtype[CF_DTYPE_MAX], int64_t *nmemb,
                    int64_t *commit)
{
    if (layout) *layout = r->table.layout;
    if (dtype) memcpy(dtype, r->table.dtype, CF_DTYPE_MAX);
    if (nmemb) *nmemb = r->table.nmemb;
    if (commit) *commit = r->table.commit;
}

int64_t cf_stream_row_bytes(const cf_stream_reader *r)
{
    return r->table.rowbytes;
}

int64_t cf_stream_size(const cf_stream_reader *r)
{
    return r->start[r->table.layout.tasks];
}

int64_t cf_stream_task_size(const cf_stream_reader *r, int64_t task)
{
    if (task < 0 || task >= r->table.layout.tasks) return -1;
    return r->start[task + 1] - r->start[task];
}

int64_t cf_stream_task_start(const cf_stream_reader *r, int64_t task)
{
    if (task < 0 || task >= r->table.layout.tasks) return -1;
    return r->start[task];
}

void cf_stream_set_verify(cf_stream_reader *r, int on)
{
    r->verify = on != 0;
}

int cf_stream_chunk(const cf_stream_reader *r, int64_t task, int64_t block, int64_t *file, int64_t *offset,
                    int64_t *bytes, uint32_t *crc, cf_error *err)
{
    if (!r) return CF_FAIL(err, CF_EARG, "cf_stream_chunk: NULL reader");
    const cf__stream_table *t = &r->table;
    if (task < 0 || task >= t->layout.tasks || block < 0 ||
        block >= cf__stream_chunks(t->bytes[task], t->layout.chunk))
        return CF_FAIL(err, CF_ERANGE, "%s: task %lld has no chunk %lld", r->path, (long long)task, (long long)block);
    /* the records an open in slices reads on demand: a cache, not a change of what r reads */
    int rc = cf__stream_reader_need((cf_stream_reader *)r, task, err);
    if (rc) return rc;
    int64_t rest = t->bytes[task] - block * t->layout.chunk;
    if (file) *file = cf_stream_file_of(t->layout.tasks, t->layout.files, task, NULL, NULL);
    if (offset) *offset = cf_stream_chunk_offset(&t->layout, task, block);
    if (bytes) *bytes = rest < t->layout.chunk ? rest : t->layout.chunk;
    if (crc) *crc = t->crcs[task][block];
    return 0;
}

int cf_stream_chunk_stats(const cf_stream_reader *r, int64_t task, int64_t block, int64_t component,
                          cf_chunk_stats *out, cf_error *err)
{
    if (!r || !out) return CF_FAIL(err, CF_EARG, "cf_stream_chunk_stats: NULL argument");
    const cf__stream_table *t = &r->table;
    int rc = cf_stream_chunk(r, task, block, NULL, NULL, NULL, NULL, err);
    if (rc) return rc;
    if (component < 0 || component >= t->nmemb)
        return CF_FAIL(err, CF_ERANGE, "%s: no component %lld (%lld components)", r->path, (long long)component,
                       (long long)t->nmemb);
    const int64_t R = t->rowbytes, C = t->layout.chunk;
    int64_t first = cf__stream_row_at(block * C, R), stop = cf__stream_row_at((block + 1) * C, R);
    int64_t rows = t->bytes[task] / R;
    if (stop > rows) stop = rows;
    memset(out, 0, sizeof *out);
    out->blob = task;
    out->first_row = r->start[task] + first;
    out->rows = stop > first ? stop - first : 0;
    out->min = out->max = NAN;
    out->ordered = t->cls != 0;
    out->valid = t->stats;
    if (t->stats) cf__stream_stat_fill(&t->st[task][block * t->nmemb + component], t->cls, out);
    return 0;
}

static int file_fd(cf_stream_reader *r, int64_t file, char path[], size_t cap, cf_error *err)
{
    char name[40];
    cf__stream_data_name(file, name);
    snprintf(path, cap, "%s/%s", r->path, name);
    if (r->fds[file] >= 0) return r->fds[file];
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
        int e = errno;
        int rc = CF_FAIL(err, cf__errno_code(e), "%s: cannot open the stream's physical file: %s", path, strerror(e));
        errno = e; /* for the caller's own message */
        return rc;
    }
    r->fds[file] = fd;
    return fd;
}

/* Bytes [at, at + n) of task `task`'s logical stream, committed. */
static int read_bytes(cf_stream_reader *r, int64_t task, int64_t at, int64_t n, unsigned char *buf, cf_error *err)
{
    const cf__stream_table *t = &r->table;
    const int64_t chunk = t->layout.chunk;
    if (n == 0) return 0; /* a task without bytes may have no file */
    int rc = cf__stream_reader_need(r, task, err);
    if (rc) return rc;
    int64_t file = cf_stream_file_of(t->layout.tasks, t->layout.files, task, NULL, NULL);
    char path[4200];
    int fd = file_fd(r, file, path, sizeof path, err);
    if (fd < 0) return fd;
    while (n > 0) {
        int64_t block = at / chunk, within = at % chunk;
        int64_t take = chunk - within < n ? chunk - within : n;
        int64_t off = cf_stream_chunk_offset(&t->layout, task, block);
        size_t got;
        rc = cf__pread_all(fd, buf, (size_t)take, off + within, &got, path, err);
        if (rc) return rc;
        if ((int64_t)got < take)
            return CF_FAIL(err, CF_ESHORT, "%s: ends at %lld, before the committed bytes of task %lld, chunk %lld "
                           "(to %lld)", path, (long long)(off + within + (int64_t)got), (long long)task,
                           (long long)block, (long long)(off + within + take));
        int64_t held = t->bytes[task] - block * chunk;
        if (r->verify && within == 0 && take == (held < chunk ? held : chunk) &&
            cf__crc32c_update(0, buf, (size_t)take) != t->crcs[task][block])
            return CF_FAIL(err, CF_ECHECKSUM, "%s: task %lld, chunk %lld (offset %lld): CRC32C mismatch", path,
                           (long long)task, (long long)block, (long long)off);
        buf += take;
        at += take;
        n -= take;
    }
    return 0;
}

int cf_stream_check_chunk(cf_stream_reader *r, int64_t task, int64_t block, cf_error *err)
{
    int64_t file, off, n;
    uint32_t want;
    int rc = cf_stream_chunk(r, task, block, &file, &off, &n, &want, err);
    if (rc) return rc;
    char path[4200];
    int fd = file_fd(r, file, path, sizeof path, NULL);
    if (fd < 0) {
        int e = errno;
        return CF_FAIL(err, fd, "%s: task %lld, chunk %lld (offset %lld, %lld bytes): cannot open the physical "
                       "file: %s", path, (long long)task, (long long)block, (long long)off, (long long)n, strerror(e));
    }
    /* in pieces: a chunk may be far larger than what is worth allocating */
    enum { PIECE = 1 << 20 };
    unsigned char *buf = malloc(n < PIECE ? (size_t)n : PIECE);
    if (!buf) return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", path);
    uint32_t crc = 0;
    for (int64_t at = 0; at < n && rc == 0;) {
        size_t take = n - at < PIECE ? (size_t)(n - at) : PIECE, got;
        if ((rc = cf__pread_all(fd, buf, take, off + at, &got, path, err))) break;
        crc = cf__crc32c_update(crc, buf, got);
        at += (int64_t)got;
        if (got < take)
            rc = CF_FAIL(err, CF_ESHORT, "%s: task %lld, chunk %lld (offset %lld, %lld bytes): the file ends at %lld",
                         path, (long long)task, (long long)block, (long long)off, (long long)n, (long long)(off + at));
    }
    free(buf);
    if (rc == 0 && crc != want)
        rc = CF_FAIL(err, CF_ECHECKSUM, "%s: task %lld, chunk %lld (offset %lld, %lld bytes): CRC32C %08x, the table "
                     "records %08x", path, (long long)task, (long long)block, (long long)off, (long long)n,
                     (unsigned)crc, (unsigned)want);
    return rc;
}

int cf_stream_read_task(cf_stream_reader *r, int64_t task, int64_t start, int64_t count, void *buf, cf_error *err)
{
    if (!r || (count > 0 && !buf)) return CF_FAIL(err, CF_EARG, "cf_stream_read_task: NULL argument");
    int64_t rows = cf_stream_task_size(r, task);
    if (rows < 0) return CF_FAIL(err, CF_ERANGE, "%s: no task %lld", r->path, (long long)task);
    if (start < 0 || count < 0 || start > rows || count > rows - start)
        return CF_FAIL(err, CF_ERANGE, "%s: task %lld: rows %lld..+%lld outside its %lld rows", r->path,
                       (long long)task, (long long)start, (long long)count, (long long)rows);
    return read_bytes(r, task, start * r->table.rowbytes, count * r->table.rowbytes, buf, err);
}

int cf_stream_read(cf_stream_reader *r, int64_t start, int64_t count, void *buf, cf_error *err)
{
    if (!r || (count > 0 && !buf)) return CF_FAIL(err, CF_EARG, "cf_stream_read: NULL argument");
    int64_t size = cf_stream_size(r);
    if (start < 0 || count < 0 || start > size || count > size - start)
        return CF_FAIL(err, CF_ERANGE, "%s: rows %lld..+%lld outside its %lld rows", r->path, (long long)start,
                       (long long)count, (long long)size);
    /* the last task starting at or before `start` */
    int64_t lo = 0, hi = r->table.layout.tasks;
    while (hi - lo > 1) {
        int64_t mid = lo + (hi - lo) / 2;
        if (r->start[mid] <= start) lo = mid;
        else hi = mid;
    }
    unsigned char *p = buf;
    for (int64_t task = lo; count > 0; task++) {
        int64_t first = start - r->start[task], have = r->start[task + 1] - start;
        if (have <= 0) continue;
        int64_t take = have < count ? have : count;
        int rc = read_bytes(r, task, first * r->table.rowbytes, take * r->table.rowbytes, p, err);
        if (rc) return rc;
        p += take * r->table.rowbytes;
        start += take;
        count -= take;
    }
    return 0;
}

/* The listing walk of docs/format.md 2.3, keeping the directories that
 * hold a stream table and no header. */
typedef struct {
    const char *root;
    char **names;
    int64_t n, cap;
} walk;

static int visit(void *ctx, const char *dir, const char *path, const char *name, cf_error *err)
{
    (void)dir;
    (void)name;
    walk *w = ctx;
    struct stat st;
    if (lstat(path, &st) != 0 || !S_ISDIR(st.st_mode)) return 0;
    char *header = cf__path_join(path, "header"), *table = cf__path_join(path, CF__STREAM_TABLE);
    int rc = 0;
    if (!header || !table) rc = CF_FAIL(err, CF_ENOMEM, "%s: out of memory", path);
    else if (cf__exists(header)) rc = 0;
    else if (cf__exists(table)) {
        if (w->n == w->cap) {
            int64_t cap = w->cap ? 2 * w->cap : 16;
            char **p = realloc(w->names, (size_t)cap * sizeof *p);
            if (!p) rc = CF_FAIL(err, CF_ENOMEM, "%s: out of memory", path);
            else {
                w->names = p;
                w->cap = cap;
            }
        }
        if (rc == 0 && !(w->names[w->n++] = strdup(path + strlen(w->root) + 1)))
            rc = CF_FAIL(err, CF_ENOMEM, "%s: out of memory", path), w->n--;
    } else {
        rc = cf__dir_each(path, 1, visit, w, err);
        /* only opendir fails with ENOENT: removed while the walk ran
         * (and perhaps made again since) is gone, not an error */
        if (rc == CF_ENOENT) {
            if (err) err->code = 0;
            rc = 0;
        }
    }
    free(header);
    free(table);
    return rc;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int cf_file_list_streams(cf_file *f, char ***names, int64_t *count, cf_error *err)
{
    if (!f || !names || !count) return CF_FAIL(err, CF_EARG, "cf_file_list_streams: NULL argument");
    walk w = { cf_file_path(f), NULL, 0, 0 };
    size_t n = strlen(w.root);
    char *root = strdup(w.root);
    if (!root) return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", w.root);
    while (n > 1 && root[n - 1] == '/') root[--n] = 0; /* names are relative to root without its slash */
    w.root = root;
    int rc = cf__dir_each(root, 1, visit, &w, err);
    free(root);
    if (rc) {
        cf_names_free(w.names, w.n);
        return rc;
    }
    if (w.n) qsort(w.names, (size_t)w.n, sizeof *w.names, by_name);
    *names = w.names;
    *count = w.n;
    return 0;
}
