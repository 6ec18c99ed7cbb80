/* stream_write.c - writing a stream (docs/format.md 8.7): the owner takes
 * the name's writer lock and a staging directory, tasks append chunk after
 * chunk at offsets they compute alone, and a commit writes the table of
 * every task's committed bytes atomically (the first commit publishes the
 * directory).  Appends never touch committed bytes, so a crash leaves the
 * last commit intact. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checksum.h"
#include "column_stage.h"
#include "column.h"
#include "error.h"
#include "file.h"
#include "fsutil.h"
#include "names.h"
#include "owner.h"
#include "platform.h"
#include "stream_impl.h"
#include "stream_writer.h"
#include "writer_lock.h"

/* Task states travel between processes little-endian. */
static void put_le(unsigned char *p, uint64_t v, int n)
{
    for (int i = 0; i < n; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get_le(const unsigned char *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

void cf__stream_writer_free(cf_stream_writer *w)
{
    if (!w) return;
    if (w->tasks)
        for (int64_t i = 0; i < w->table.layout.tasks; i++) {
            cf_stream_task *t = w->tasks[i];
            if (!t) continue;
            free(t->crcs);
            free(t->st);
            free(t->acc);
            free(t->held_buf);
            free(t);
        }
    free(w->tasks);
    if (w->fds)
        for (int64_t i = 0; i < w->table.layout.files; i++)
            if (w->fds[i] >= 0) close(w->fds[i]);
    if (w->fpaths)
        for (int64_t i = 0; i < w->table.layout.files; i++) free(w->fpaths[i]);
    free(w->fds);
    free(w->fpaths);
    cf__lock_release(&w->lock);
    free(w->lock.path);
    cf__stream_table_free(&w->table);
    free(w->path);
    free(w->dir);
    free(w);
}

int cf__stream_writer_new(cf_stream_writer **out, cf_file *f, const char *name, const char *dtype, int64_t nmemb,
                          const cf_stream_layout *layout, cf_error *err)
{
    cf_stream_writer *w = calloc(1, sizeof *w);
    if (!w) return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", cf_file_path(f));
    cf__lock none = CF__LOCK_NONE;
    w->lock = none;
    w->durable = (cf_file_flags(f) & CF_OPEN_NODURABLE) == 0;
    w->path = cf__path_join(cf_file_path(f), name);
    if (!w->path) {
        free(w);
        return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", cf_file_path(f));
    }
    int rc = cf__stream_table_init(&w->table, dtype, nmemb, layout, w->path, err);
    if (rc == 0 && (!(w->tasks = calloc((size_t)layout->tasks, sizeof *w->tasks)) ||
                    !(w->fds = malloc((size_t)layout->files * sizeof *w->fds)) ||
                    !(w->fpaths = calloc((size_t)layout->files, sizeof *w->fpaths))))
        rc = CF_FAIL(err, CF_ENOMEM, "%s: out of memory for %lld tasks", w->path, (long long)layout->tasks);
    if (w->fds)
        for (int64_t i = 0; i < layout->files; i++) w->fds[i] = -1;
    if (rc) {
        cf__stream_writer_free(w);
        return rc;
    }
    *out = w;
    return 0;
}

/* What may stand at the stream's name: nothing, or a stream to replace. */
static int check_replaceable(const char *path, cf_error *err)
{
    struct stat st;
    if (lstat(path, &st) != 0) return 0;
    if (!S_ISDIR(st.st_mode)) return CF_FAIL(err, CF_EEXIST, "%s: exists and is not a directory", path);
    char *header = cf__path_join(path, "header"), *table = cf__path_join(path, CF__STREAM_TABLE);
    int rc = 0;
    if (!header || !table) rc = CF_FAIL(err, CF_ENOMEM, "%s: out of memory", path);
    else if (cf__exists(header)) rc = CF_FAIL(err, CF_EKIND, "%s: is a column; a stream cannot replace it", path);
    else if (!cf__exists(table))
        rc = CF_FAIL(err, CF_EKIND, "%s: is a group, not a stream; a stream cannot replace it", path);
    free(header);
    free(table);
    return rc;
}

int cf_stream_create(cf_stream_writer **out, cf_file *f, const char *name, const char *dtype, int64_t nmemb,
                     const cf_stream_layout *layout, cf_error *err)
{
    if (!out || !f || !name || !dtype || !layout) return CF_FAIL(err, CF_EARG, "cf_stream_create: NULL argument");
    int rc, leaf;
    if ((rc = cf_name_check(name, err))) return rc;
    if (!cf_file_writable(f))
        return CF_FAIL(err, CF_EREADONLY, "%s: File is open read-only; cannot create stream '%s'", cf_file_path(f),
                       name);
    if ((rc = cf__name_confine_new(cf_file_path(f), name, &leaf, err))) return rc;
    if ((rc = cf__name_outside_columns(cf_file_path(f), name, err))) return rc;
    cf_stream_writer *w;
    if ((rc = cf__stream_writer_new(&w, f, name, dtype, nmemb, layout, err))) return rc;
    w->owner = 1;
    w->lock.off = (cf_file_flags(f) & CF_OPEN_NOLOCKING) != 0;
    char *parent = cf__column_parent_of(w->path);
    if (!parent) rc = CF_FAIL(err, CF_ENOMEM, "%s: out of memory", w->path);
    if (rc == 0 && strchr(name, '/')) rc = cf__mkdirs_durable(parent, w->durable, err);
    free(parent);
    if (rc == 0) rc = cf__lock_take(&w->lock, w->path, (cf_file_flags(f) & CF_OPEN_NOLOCK) != 0, err);
    if (rc == 0) rc = check_replaceable(w->path, err);
    if (rc == 0) rc = cf__column_fresh_sibling(w->path, CF__STAGE_PREFIX, 1, &w->dir, err);
    if (rc == 0) {
        w->staged = 1;
        /* who writes here, for repair on a node where the lock proves nothing */
        rc = cf__owner_write(w->dir, err);
    }
    if (rc) {
        if (w->dir) (void)cf__remove_tree(w->dir, NULL);
        cf__stream_writer_free(w);
        return rc;
    }
    *out = w;
    return 0;
}

/* Load dir's committed table into w, if there is one: it must describe
 * the same stream as w's. */
static int load_table(cf_stream_writer *w, cf_error *err)
{
    char *path = cf__path_join(w->dir, CF__STREAM_TABLE), *text = NULL;
    size_t len = 0;
    if (!path) return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", w->dir);
    int rc = cf__read_file_at(AT_FDCWD, path, 1, &text, &len, err);
    if (rc == CF_ENOENT) {
        free(path);
        return 0; /* a new stream: nothing committed */
    }
    cf__stream_table t;
    w->table_read += (int64_t)len;
    if (rc == 0) rc = cf__stream_table_parse(&t, text, len, path, err);
    free(text);
    if (rc == 0) {
        const cf_stream_layout *a = &t.layout, *b = &w->table.layout;
        if (strcmp(t.dtype, w->table.dtype) != 0 || t.nmemb != w->table.nmemb || a->tasks != b->tasks ||
            a->files != b->files || a->chunk != b->chunk || a->align != b->align) {
            rc = CF_FAIL(err, CF_EARG, "%s: holds a stream of %s x%lld, %lld tasks, %lld files, chunk %lld, not "
                         "the one given", path, t.dtype, (long long)t.nmemb, (long long)a->tasks,
                         (long long)a->files, (long long)a->chunk);
            cf__stream_table_free(&t);
        } else {
            cf__stream_table_free(&w->table);
            w->table = t;
        }
    }
    free(path);
    return rc;
}

int cf_stream_reopen(cf_stream_writer **out, cf_file *f, const char *name, cf_error *err)
{
    if (!out || !f || !name) return CF_FAIL(err, CF_EARG, "cf_stream_reopen: NULL argument");
    if (!cf_file_writable(f))
        return CF_FAIL(err, CF_EREADONLY, "%s: File is open read-only; cannot append to stream '%s'",
                       cf_file_path(f), name);
    /* the committed table gives the row type and layout; the lock is taken
     * before it is read again for good */
    cf_stream_reader *r = NULL;
    int rc = cf_stream_open(&r, f, name, err);
    if (rc) return rc;
    cf_stream_layout l;
    char dtype[CF_DTYPE_MAX];
    int64_t nmemb;
    cf_stream_info(r, &l, dtype, &nmemb, NULL);
    cf_stream_reader_close(r);
    cf_stream_writer *w;
    if ((rc = cf__stream_writer_new(&w, f, name, dtype, nmemb, &l, err))) return rc;
    w->owner = 1;
    w->lock.off = (cf_file_flags(f) & CF_OPEN_NOLOCKING) != 0;
    rc = cf__lock_take(&w->lock, w->path, (cf_file_flags(f) & CF_OPEN_NOLOCK) != 0, err);
    if (rc == 0 && !(w->dir = strdup(w->path))) rc = CF_FAIL(err, CF_ENOMEM, "%s: out of memory", w->path);
    if (rc == 0) rc = load_table(w, err);
    if (rc == 0 && w->table.commit == 0)
        rc = CF_FAIL(err, CF_ENOENT, "%s: the stream vanished while it was reopened", w->path);
    if (rc) {
        cf__stream_writer_free(w);
        return rc;
    }
    *out = w;
    return 0;
}

void cf_stream_writer_info(const cf_stream_writer *w, cf_stream_layout *layout, char dtype[CF_DTYPE_MAX],
                           int64_t *nmemb)
{
    if (layout) *layout = w->table.layout;
    if (dtype) memcpy(dtype, w->table.dtype, CF_DTYPE_MAX);
    if (nmemb) *nmemb = w->table.nmemb;
}

int cf_stream_join(cf_stream_writer **out, cf_file *f, const char *name, const char *dir, const char *dtype,
                   int64_t nmemb, const cf_stream_layout *layout, cf_error *err)
{
    if (!out || !f || !name || !dir || !dtype || !layout)
        return CF_FAIL(err, CF_EARG, "cf_stream_join: NULL argument");
    cf_stream_writer *w;
    int rc = cf__stream_writer_new(&w, f, name, dtype, nmemb, layout, err);
    if (rc) return rc;
    if (!(w->dir = strdup(dir))) {
        cf__stream_writer_free(w);
        return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", dir);
    }
    if ((rc = load_table(w, err))) {
        cf__stream_writer_free(w);
        return rc;
    }
    *out = w;
    return 0;
}

const char *cf_stream_writer_dir(const cf_stream_writer *w)
{
    return w ? w->dir : NULL;
}

/* Room for the statistics of chunks 0 .. upto-1. */
static int stats_room(cf_stream_task *t, int64_t upto, cf_error *err)
{
    const cf__stream_table *tb = &t->w->table;
    if (upto <= t->scap) return 0;
    int64_t cap = t->scap ? t->scap * 2 : 4;
    while (cap < upto) cap *= 2;
    cf__stream_stat *p = NULL;
    if ((uint64_t)cap <= SIZE_MAX / sizeof *p / (uint64_t)tb->nmemb)
        p = realloc(t->st, (size_t)cap * (size_t)tb->nmemb * sizeof *p);
    if (!p) return CF_FAIL(err, CF_ENOMEM, "%s: task %lld: out of memory for statistics", t->w->path, (long long)t->task);
    t->st = p;
    t->scap = cap;
    return 0;
}

int cf__stream_stats_add(cf_stream_task *t, int64_t at, const unsigned char *rows, int64_t count, cf_error *err)
{
    const cf__stream_table *tb = &t->w->table;
    const int64_t R = tb->rowbytes, C = tb->layout.chunk, m = tb->nmemb;
    for (int64_t i = 0; i < count;) {
        int64_t k = (at + i * R) / C;
        if (k != t->open) { /* the open chunk is final; chunks without a row start stay empty */
            int rc = stats_room(t, k, err);
            if (rc) return rc;
            for (int64_t j = 0; j < m; j++) cf__stream_stat_from_acc(&t->acc[j], &t->st[t->open * m + j]);
            memset(t->st + (t->open + 1) * m, 0, (size_t)((k - t->open - 1) * m) * sizeof *t->st);
            for (int64_t j = 0; j < m; j++) cf__acc_init(&t->acc[j], &tb->dt);
            t->open = k;
        }
        int64_t stop = cf__stream_row_at((k + 1) * C - at, R); /* the first row starting in a later chunk */
        int64_t take = (stop < count ? stop : count) - i;
        cf__acc_add(t->acc, m, 0, rows + i * R, take * m, &tb->dt);
        i += take;
    }
    return 0;
}

/* A task continuing after committed bytes: the final chunks' statistics
 * from the table, the open chunk's accumulators from its rows read back
 * (the table keeps sums rounded; the accumulators must stay exact). */
static int stats_resume(cf_stream_task *t, cf_error *err)
{
    const cf__stream_table *tb = &t->w->table;
    const int64_t R = tb->rowbytes, C = tb->layout.chunk, m = tb->nmemb;
    if (!(t->acc = malloc((size_t)m * sizeof *t->acc)))
        return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", t->w->path);
    for (int64_t j = 0; j < m; j++) cf__acc_init(&t->acc[j], &tb->dt);
    t->open = 0;
    if (t->bytes == 0) return 0;
    int64_t n = cf__stream_chunks(t->bytes, C);
    int rc = stats_room(t, n, err);
    if (rc) return rc;
    memcpy(t->st, tb->st[t->task], (size_t)(n * m) * sizeof *t->st);
    t->open = (t->bytes - R) / C;
    int64_t first = cf__stream_row_at(t->open * C, R), rows = t->bytes / R - first;
    const char *path = t->w->fpaths[t->file];
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
        int e = errno;
        return CF_FAIL(err, cf__errno_code(e), "%s: cannot read task %lld's last rows back: %s", path,
                       (long long)t->task, strerror(e));
    }
    unsigned char *row = malloc((size_t)R);
    if (!row) rc = CF_FAIL(err, CF_ENOMEM, "%s: out of memory", path);
    /* row by row: a row may run over into the next chunk, elsewhere in the file */
    for (int64_t r = first; rc == 0 && r < first + rows; r++) {
        for (int64_t done = 0; rc == 0 && done < R;) {
            int64_t at = r * R + done, within = at % C;
            int64_t take = C - within < R - done ? C - within : R - done;
            size_t got;
            rc = cf__pread_all(fd, row + done, (size_t)take,
                               cf_stream_chunk_offset(&tb->layout, t->task, at / C) + within, &got, path, err);
            if (rc == 0 && (int64_t)got < take)
                rc = CF_FAIL(err, CF_ESHORT, "%s: task %lld: the committed rows end early", path, (long long)t->task);
            done += take;
        }
        if (rc == 0) cf__acc_add(t->acc, m, 0, row, m, &tb->dt);
    }
    free(row);
    close(fd);
    return rc;
}

int cf_stream_task_open(cf_stream_task **out, cf_stream_writer *w, int64_t task, cf_error *err)
{
    if (!out || !w) return CF_FAIL(err, CF_EARG, "cf_stream_task_open: NULL argument");
    int64_t in_file = 0;
    int64_t file = cf_stream_file_of(w->table.layout.tasks, w->table.layout.files, task, NULL, &in_file);
    if (file < 0)
        return CF_FAIL(err, CF_EARG, "%s: task %lld out of range 0..%lld", w->path, (long long)task,
                       (long long)w->table.layout.tasks - 1);
    if (w->tasks[task]) return CF_FAIL(err, CF_EBUSY, "%s: task %lld is already open", w->path, (long long)task);
    if (w->fds[file] < 0) {
        /* the tasks of one file share one descriptor: a process writing many
         * tasks keeps as many files open as the stream has */
        char name[40];
        cf__stream_data_name(file, name);
        char *path = cf__path_join(w->dir, name);
        if (!path) return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", w->path);
        int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0666);
        if (fd < 0) {
            int e = errno;
            int rc = CF_FAIL(err, cf__errno_code(e), "%s: cannot open the stream's physical file: %s", path,
                             strerror(e));
            free(path);
            return rc;
        }
        free(w->fpaths[file]);
        w->fpaths[file] = path;
        w->fds[file] = fd;
    }
    cf_stream_task *t = calloc(1, sizeof *t);
    if (!t) return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", w->path);
    t->w = w;
    t->task = task;
    t->file = file;
    t->alone = in_file == 1;
    /* a task continues from what is committed (nothing in a new stream) */
    t->bytes = w->table.bytes[task];
    int64_t n = cf__stream_chunks(t->bytes, w->table.layout.chunk);
    if (n > 0) {
        t->crcs = malloc((size_t)n * sizeof *t->crcs);
        if (!t->crcs) {
            free(t);
            return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", w->path);
        }
        memcpy(t->crcs, w->table.crcs[task], (size_t)n * sizeof *t->crcs);
        t->cap = n;
    }
    int rc = w->table.stats ? stats_resume(t, err) : 0;
    if (rc) {
        free(t->crcs);
        free(t->st);
        free(t->acc);
        free(t);
        return rc;
    }
    w->tasks[task] = t;
    *out = t;
    return 0;
}

int64_t cf_stream_task_rows(const cf_stream_task *t)
{
    return t ? t->bytes / t->w->table.rowbytes : -1;
}

/* The state of t into buf (24 + 4 x chunks bytes, and 40 x chunks x nmemb
 * of statistics when the table keeps them). */
static int64_t state_stat_bytes(const cf__stream_table *tb, int64_t chunks)
{
    return tb->stats ? CF__STREAM_STAT_BYTES * chunks * tb->nmemb : 0;
}

static int64_t state_bytes(const cf_stream_task *t)
{
    int64_t n = cf__stream_chunks(t->bytes, t->w->table.layout.chunk);
    return 24 + 4 * n + state_stat_bytes(&t->w->table, n);
}

static void put_stat(unsigned char *p, const cf__stream_stat *s)
{
    uint64_t sum;
    memcpy(&sum, &s->sum, sizeof sum);
    put_le(p, (uint64_t)s->count, 8);
    put_le(p + 8, (uint64_t)s->nan, 8);
    put_le(p + 16, s->min, 8);
    put_le(p + 24, s->max, 8);
    put_le(p + 32, sum, 8);
}

static void get_stat(const unsigned char *p, cf__stream_stat *s)
{
    uint64_t sum = get_le(p + 32, 8);
    s->count = (int64_t)get_le(p, 8);
    s->nan = (int64_t)get_le(p + 8, 8);
    s->min = get_le(p + 16, 8);
    s->max = get_le(p + 24, 8);
    memcpy(&s->sum, &sum, sizeof s->sum);
}

static void pack_state(const cf_stream_task *t, unsigned char *p)
{
    int64_t n = cf__stream_chunks(t->bytes, t->w->table.layout.chunk);
    put_le(p, (uint64_t)t->task, 8);
    put_le(p + 8, (uint64_t)t->bytes, 8);
    put_le(p + 16, (uint64_t)n, 8);
    for (int64_t k = 0; k < n; k++) put_le(p + 24 + 4 * k, t->crcs[k], 4);
    const cf__stream_table *tb = &t->w->table;
    unsigned char *q = p + 24 + 4 * n;
    for (int64_t k = 0; tb->stats && k < n; k++)
        for (int64_t j = 0; j < tb->nmemb; j++, q += CF__STREAM_STAT_BYTES) {
            cf__stream_stat s;
            cf__stream_task_stat(t, k, j, &s);
            put_stat(q, &s);
        }
}

int cf_stream_task_state(cf_stream_task *t, void *buf, int64_t cap, int64_t *len, cf_error *err)
{
    if (!t || !len || cap < 0 || (cap > 0 && !buf)) return CF_FAIL(err, CF_EARG, "cf_stream_task_state: bad argument");
    int64_t need = state_bytes(t);
    *len = need;
    if (!buf) return 0;
    const char *path = t->w->fpaths[t->file];
    if (cap < need)
        return CF_FAIL(err, CF_ERANGE, "%s: task %lld: state needs %lld bytes, buffer has %lld", path,
                       (long long)t->task, (long long)need, (long long)cap);
    int rc = cf__stream_task_drain(t, err);
    if (rc == 0 && t->w->durable) rc = cf__fsync_fd(t->w->fds[t->file], path, err);
    if (rc) return rc;
    pack_state(t, buf);
    return 0;
}

/* Parse the state at *at (left bytes remain); check that it only moves its
 * task forward.  *at moves past it. */
static int take_state(const cf_stream_writer *w, const unsigned char **at, int64_t *left, int64_t *task,
                      int64_t *bytes, const unsigned char **crcs, cf_error *err)
{
    const unsigned char *p = *at;
    const cf__stream_table *t = &w->table;
    if (*left < 24) return CF_FAIL(err, CF_EARG, "%s: a task state is cut short", w->path);
    uint64_t r = get_le(p, 8), b = get_le(p + 8, 8), n = get_le(p + 16, 8);
    uint64_t per = 4 + (t->stats ? (uint64_t)CF__STREAM_STAT_BYTES * (uint64_t)t->nmemb : 0);
    if (n > (uint64_t)(*left - 24) / per) return CF_FAIL(err, CF_EARG, "%s: a task state is cut short", w->path);
    const unsigned char *raw = p + 24;
    *at = raw + per * n;
    *left -= 24 + (int64_t)(per * n);
    if (r >= (uint64_t)t->layout.tasks || b > (uint64_t)INT64_MAX || b % (uint64_t)t->rowbytes != 0 ||
        n != (uint64_t)cf__stream_chunks((int64_t)b, t->layout.chunk))
        return CF_FAIL(err, CF_EARG, "%s: a task state is not valid for this stream (task %llu, %llu bytes)", w->path,
                       (unsigned long long)r, (unsigned long long)b);
    if ((int64_t)b < t->bytes[r])
        return CF_FAIL(err, CF_EARG, "%s: task %llu would go back from %lld to %llu committed bytes", w->path,
                       (unsigned long long)r, (long long)t->bytes[r], (unsigned long long)b);
    *task = (int64_t)r;
    *bytes = (int64_t)b;
    *crcs = raw;
    int64_t whole = t->bytes[r] / t->layout.chunk;
    for (int64_t k = 0; k < whole; k++) {
        if ((uint32_t)get_le(raw + 4 * k, 4) != t->crcs[r][k])
            return CF_FAIL(err, CF_EARG, "%s: task %lld: chunk %lld, committed whole, has another CRC32C now",
                           w->path, (long long)r, (long long)k);
    }
    return 0;
}

/* Move the staging directory to the stream's name (an old stream there is
 * swapped out and removed), as a column's first commit does. */
int cf__stream_publish(cf_stream_writer *w, cf_error *err)
{
    char *old = NULL;
    int rc;
    cf__owner_remove(w->dir);
    if (rename(w->dir, w->path) != 0) {
        int e = errno;
        if (e != EEXIST && e != ENOTEMPTY && e != EISDIR && e != ENOTDIR)
            return CF_FAIL(err, CF_EIO, "%s: cannot move the new stream into place: %s", w->path, strerror(e));
        if ((rc = check_replaceable(w->path, err))) return rc;
        if (cf__rename_exchange(w->dir, w->path) == 0) {
            old = w->dir;
            w->dir = NULL;
        } else {
            if ((rc = cf__column_fresh_sibling(w->path, CF__OLD_PREFIX, 0, &old, err))) return rc;
            if (rename(w->path, old) != 0 || rename(w->dir, w->path) != 0) {
                e = errno;
                (void)rename(old, w->path);
                free(old);
                return CF_FAIL(err, CF_EIO, "%s: cannot move the new stream into place: %s", w->path, strerror(e));
            }
        }
    }
    free(w->dir);
    w->dir = strdup(w->path);
    w->staged = 0;
    rc = 0;
    if (w->durable) {
        char *parent = cf__column_parent_of(w->path);
        rc = parent ? cf__fsync_path(parent, err) : CF_FAIL(err, CF_ENOMEM, "%s: out of memory", w->path);
        free(parent);
    }
    if (old) (void)cf__remove_tree(old, NULL);
    free(old);
    if (!w->dir) return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", w->path);
    return rc;
}

static int write_table(cf_stream_writer *w, cf_error *err)
{
    char *text = NULL;
    size_t len;
    w->table.commit++;
    int rc = cf__stream_table_format(&w->table, &text, &len, w->path, err);
    if (rc == 0 && w->staged) {
        int fd = -1;
        rc = cf__write_file_private_keep(w->dir, CF__STREAM_TABLE, text, len, &fd, err);
        if (rc == 0 && w->durable) rc = cf__fsync_fd(fd, w->dir, err);
        if (fd >= 0) close(fd);
        if (rc == 0 && w->durable) rc = cf__fsync_path(w->dir, err);
        if (rc == 0) rc = cf__stream_publish(w, err);
    } else if (rc == 0) {
        /* physical files a task made since the last commit (a reopened
         * stream) are in the directory before a table that counts on them */
        if (w->durable) rc = cf__fsync_path(w->dir, err);
        if (rc == 0) rc = cf__write_file_atomic(w->dir, CF__STREAM_TABLE, text, len, w->durable, err);
        if (rc == 0 && w->durable) rc = cf__fsync_path(w->dir, err);
    }
    if (rc) w->table.commit--;
    free(text);
    return rc;
}

int cf_stream_commit_states(cf_stream_writer *w, const void *states, int64_t len, cf_error *err)
{
    if (!w || len < 0 || (len > 0 && !states)) return CF_FAIL(err, CF_EARG, "cf_stream_commit_states: bad argument");
    if (!w->owner)
        return CF_FAIL(err, CF_EARG, "%s: only the writer that created the stream commits it", w->path);
    if (w->parted)
        return CF_FAIL(err, CF_EARG, "%s: committed in parts (cf_stream_part_begin); its commits go on in parts",
                       w->path);
    /* check every state first: a bad one commits nothing */
    for (int pass = 0; pass < 2; pass++) {
        const unsigned char *at = states;
        int64_t left = len;
        while (left > 0) {
            int64_t task = 0, bytes = 0;
            const unsigned char *raw = NULL;
            int rc = take_state(w, &at, &left, &task, &bytes, &raw, err);
            if (rc) return rc;
            if (pass == 0) continue;
            int64_t n = cf__stream_chunks(bytes, w->table.layout.chunk);
            int64_t ns = w->table.stats ? n * w->table.nmemb : 0;
            uint32_t *crcs = n ? malloc((size_t)n * sizeof *crcs) : NULL;
            cf__stream_stat *st = ns ? malloc((size_t)ns * sizeof *st) : NULL;
            if ((n && !crcs) || (ns && !st)) {
                free(crcs);
                free(st);
                return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", w->path);
            }
            for (int64_t k = 0; k < n; k++)
                crcs[k] = (uint32_t)get_le(raw + 4 * k, 4);
            for (int64_t k = 0; k < ns; k++) get_stat(raw + 4 * n + CF__STREAM_STAT_BYTES * k, &st[k]);
            rc = cf__stream_table_set(&w->table, task, bytes, crcs, st, w->path, err);
            free(crcs);
            free(st);
            if (rc) return rc;
        }
    }
    return write_table(w, err);
}

int cf_stream_flush(cf_stream_writer *w, cf_error *err)
{
    if (!w) return CF_FAIL(err, CF_EARG, "cf_stream_flush: NULL writer");
    if (!w->owner)
        return CF_FAIL(err, CF_EARG, "%s: only the writer that created the stream commits it", w->path);
    int rc;
    for (int64_t i = 0; i < w->table.layout.tasks; i++)
        if (w->tasks[i] && (rc = cf__stream_task_drain(w->tasks[i], err))) return rc;
    /* each physical file made durable once, however many tasks share it */
    for (int64_t i = 0; w->durable && i < w->table.layout.files; i++)
        if (w->fds[i] >= 0 && (rc = cf__fsync_fd(w->fds[i], w->fpaths[i], err))) return rc;
    int64_t total = 0;
    for (int64_t i = 0; i < w->table.layout.tasks; i++)
        if (w->tasks[i]) total += state_bytes(w->tasks[i]);
    unsigned char *buf = total ? malloc((size_t)total) : NULL;
    if (total && !buf) return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", w->path);
    int64_t at = 0;
    for (int64_t i = 0; i < w->table.layout.tasks; i++)
        if (w->tasks[i]) {
            pack_state(w->tasks[i], buf + at);
            at += state_bytes(w->tasks[i]);
        }
    rc = cf_stream_commit_states(w, buf, total, err);
    free(buf);
    return rc;
}

void cf_stream_discard(cf_stream_writer *w)
{
    if (!w) return;
    if (w->owner && w->staged && w->dir) (void)cf__remove_tree(w->dir, NULL);
    cf__stream_writer_free(w);
}

int cf_stream_close(cf_stream_writer *w, cf_error *err)
{
    if (!w) return CF_FAIL(err, CF_EARG, "cf_stream_close: NULL writer");
    int rc = w->owner ? cf_stream_flush(w, err) : 0;
    cf_stream_discard(w);
    return rc;
}
