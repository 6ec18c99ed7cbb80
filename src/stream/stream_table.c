/* stream_table.c - colfile-stream-v1, a stream's committed table, as bytes
 * (docs/format.md 8.7): the layout, the row type and each task's committed
 * bytes with its chunks' CRC32C, sealed by a CRC32C line. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checksum.h"
#include "dtype.h"
#include "error.h"
#include "stream_impl.h"

int cf__stream_table_init(cf__stream_table *t, const char *dtype, int64_t nmemb, const cf_stream_layout *layout,
                          const char *context, cf_error *err)
{
    memset(t, 0, sizeof *t);
    if (!dtype || !layout) return CF_FAIL(err, CF_EARG, "%s: NULL dtype or layout", context);
    int rc;
    if (strcmp(dtype, "raw") == 0) {
        if (nmemb != 1)
            return CF_FAIL(err, CF_EARG, "%s: a raw stream has nmemb 1, got %lld", context, (long long)nmemb);
        strcpy(t->dtype, "raw");
        t->width = 1;
    } else {
        cf__dtype d;
        if ((rc = cf__dtype_parse(dtype, CF__DTYPE_USER, &d, context, err))) return rc;
        if (d.kind == 'S' && d.width > CF__COLUMN_S_MAX)
            return CF_FAIL(err, CF_EDTYPE, "%s: string streams can be at most S%d wide, got S%lld", context,
                           CF__COLUMN_S_MAX, (long long)d.width);
        cf__dtype_format(&d, t->dtype);
        t->width = d.width;
        t->dt = d;
        t->cls = cf__acc_class(&d);
        t->stats = 1; /* a new typed stream records statistics */
        if (nmemb < 1 || nmemb > 2147483647)
            return CF_FAIL(err, CF_EARG, "%s: nmemb must be in 1..2147483647, got %lld", context, (long long)nmemb);
    }
    if ((rc = cf__stream_layout_check(layout, context, err))) return rc;
    t->nmemb = nmemb;
    t->rowbytes = nmemb * t->width;
    t->layout = *layout;
    t->bytes = calloc((size_t)layout->tasks, sizeof *t->bytes);
    t->crcs = calloc((size_t)layout->tasks, sizeof *t->crcs);
    t->st = calloc((size_t)layout->tasks, sizeof *t->st);
    if (!t->bytes || !t->crcs || !t->st) {
        cf__stream_table_free(t);
        return CF_FAIL(err, CF_ENOMEM, "%s: out of memory for %lld tasks", context, (long long)layout->tasks);
    }
    return 0;
}

void cf__stream_table_free(cf__stream_table *t)
{
    if (t->crcs)
        for (int64_t i = 0; i < t->layout.tasks; i++) free(t->crcs[i]);
    if (t->st)
        for (int64_t i = 0; i < t->layout.tasks; i++) free(t->st[i]);
    free(t->st);
    t->st = NULL;
    free(t->crcs);
    free(t->bytes);
    t->crcs = NULL;
    t->bytes = NULL;
}

int cf__stream_table_set(cf__stream_table *t, int64_t task, int64_t bytes, const uint32_t *crcs,
                         const cf__stream_stat *st, const char *context, cf_error *err)
{
    if (task < 0 || task >= t->layout.tasks)
        return CF_FAIL(err, CF_EARG, "%s: task %lld out of range 0..%lld", context, (long long)task,
                       (long long)t->layout.tasks - 1);
    if (bytes < 0 || bytes % t->rowbytes != 0)
        return CF_FAIL(err, CF_EARG, "%s: task %lld: %lld bytes are not whole rows of %lld bytes", context,
                       (long long)task, (long long)bytes, (long long)t->rowbytes);
    int64_t n = cf__stream_chunks(bytes, t->layout.chunk);
    uint32_t *copy = NULL;
    if (n > 0) {
        if ((uint64_t)n > SIZE_MAX / sizeof *copy || !(copy = malloc((size_t)n * sizeof *copy)))
            return CF_FAIL(err, CF_ENOMEM, "%s: out of memory for %lld chunk CRCs", context, (long long)n);
        memcpy(copy, crcs, (size_t)n * sizeof *copy);
    }
    if (t->stats) {
        cf__stream_stat *sc = NULL;
        if (n > 0) {
            if ((uint64_t)n > SIZE_MAX / sizeof *sc / (uint64_t)t->nmemb ||
                !(sc = malloc((size_t)n * (size_t)t->nmemb * sizeof *sc))) {
                free(copy);
                return CF_FAIL(err, CF_ENOMEM, "%s: out of memory for %lld chunks' statistics", context,
                               (long long)n);
            }
            memcpy(sc, st, (size_t)n * (size_t)t->nmemb * sizeof *sc);
        }
        free(t->st[task]);
        t->st[task] = sc;
    }
    free(t->crcs[task]);
    t->crcs[task] = copy;
    t->bytes[task] = bytes;
    return 0;
}

/* A growing text buffer. */
typedef struct {
    char *p;
    size_t len, cap;
    int failed;
} text_buf;

static void put(text_buf *b, const char *s, size_t n)
{
    if (b->failed) return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n + 1) cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) {
            b->failed = 1;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = 0;
}

static void putf(text_buf *b, const char *fmt, long long v)
{
    char tmp[64];
    int n = snprintf(tmp, sizeof tmp, fmt, v);
    put(b, tmp, (size_t)n);
}

static void put_head(text_buf *b, const cf__stream_table *t, int64_t commit)
{
    put(b, t->stats ? "COLFILE-STREAM: 2\nDTYPE: " : "COLFILE-STREAM: 1\nDTYPE: ", 25);
    put(b, t->dtype, strlen(t->dtype));
    putf(b, "\nNMEMB: %lld\n", t->nmemb);
    putf(b, "TASKS: %lld\n", t->layout.tasks);
    putf(b, "FILES: %lld\n", t->layout.files);
    putf(b, "CHUNK: %lld\n", t->layout.chunk);
    putf(b, "ALIGN: %lld\n", t->layout.align);
    putf(b, "COMMIT: %lld\n", commit);
}

/* Task r's line and its chunks' statistics lines (st: chunks x nmemb, or
 * a function of (chunk, component) when st is NULL and stat is not). */
static void put_task(text_buf *b, const cf__stream_table *t, int64_t r, int64_t bytes, const uint32_t *crcs,
                     const cf__stream_stat *st, void (*stat)(const void *, int64_t, int64_t, cf__stream_stat *),
                     const void *arg)
{
    char tmp[64];
    int n = snprintf(tmp, sizeof tmp, "%lld %lld", (long long)r, (long long)bytes);
    put(b, tmp, (size_t)n);
    int64_t chunks = cf__stream_chunks(bytes, t->layout.chunk);
    for (int64_t k = 0; k < chunks; k++) {
        n = snprintf(tmp, sizeof tmp, " %08" PRIx32, crcs[k]);
        put(b, tmp, (size_t)n);
    }
    put(b, "\n", 1);
    for (int64_t k = 0; t->stats && k < chunks; k++)
        for (int64_t j = 0; j < t->nmemb; j++) {
            char line[256];
            cf__stream_stat one;
            if (st) one = st[k * t->nmemb + j];
            else stat(arg, k, j, &one);
            n = cf__stream_stat_format(line, sizeof line, k, j, t->cls, &one);
            put(b, line, (size_t)n);
        }
}

static int text_done(text_buf *b, char **text, size_t *len, const char *context, cf_error *err)
{
    if (!b->failed && !b->p) put(b, "", 0); /* an empty text is still a string */
    if (b->failed) {
        free(b->p);
        return CF_FAIL(err, CF_ENOMEM, "%s: out of memory for the stream table", context);
    }
    *text = b->p;
    *len = b->len;
    return 0;
}

void cf__stream_table_seal(uint32_t crc, char out[18])
{
    snprintf(out, 18, "CRC32C: %08" PRIx32 "\n", crc);
}

int cf__stream_table_format(const cf__stream_table *t, char **text, size_t *len, const char *context, cf_error *err)
{
    text_buf b = { NULL, 0, 0, 0 };
    put_head(&b, t, t->commit);
    for (int64_t r = 0; r < t->layout.tasks && !b.failed; r++)
        put_task(&b, t, r, t->bytes[r], t->crcs[r], t->stats ? t->st[r] : NULL, NULL, NULL);
    if (!b.failed) {
        char seal[18];
        cf__stream_table_seal(cf__crc32c_update(0, b.p, b.len), seal);
        put(&b, seal, 17);
    }
    return text_done(&b, text, len, context, err);
}

int cf__stream_table_head(const cf__stream_table *t, int64_t commit, char **text, size_t *len, const char *context,
                          cf_error *err)
{
    text_buf b = { NULL, 0, 0, 0 };
    put_head(&b, t, commit);
    return text_done(&b, text, len, context, err);
}

int cf__stream_table_task_lines(const cf__stream_table *t, int64_t task, int64_t bytes, const uint32_t *crcs,
                                void (*stat)(const void *, int64_t, int64_t, cf__stream_stat *), const void *arg,
                                char **text, size_t *len, const char *context, cf_error *err)
{
    text_buf b = { NULL, 0, 0, 0 };
    put_task(&b, t, task, bytes, crcs, NULL, stat, arg);
    return text_done(&b, text, len, context, err);
}

/* A strict reader of the table: each line exactly as written. */
typedef struct {
    const char *p, *end, *path;
    int64_t line;
    cf_error *err;
} cursor;

static int bad(cursor *c, const char *what)
{
    return CF_FAIL(c->err, CF_EFORMAT, "%s: line %lld: %s", c->path, (long long)c->line, what);
}

/* A decimal without sign or leading zero, at most `max`. */
static int number(cursor *c, int64_t max, int64_t *out)
{
    const char *p = c->p;
    if (p >= c->end || *p < '0' || *p > '9') return bad(c, "a number expected");
    if (*p == '0' && p + 1 < c->end && p[1] >= '0' && p[1] <= '9') return bad(c, "a number with a leading zero");
    int64_t v = 0;
    for (; p < c->end && *p >= '0' && *p <= '9'; p++) {
        if (v > (max - (*p - '0')) / 10) return bad(c, "a number out of range");
        v = v * 10 + (*p - '0');
    }
    c->p = p;
    *out = v;
    return 0;
}

static int literal(cursor *c, const char *s)
{
    size_t n = strlen(s);
    if ((size_t)(c->end - c->p) < n || memcmp(c->p, s, n) != 0) return bad(c, s[0] == '\n' ? "line too long" : s);
    c->p += n;
    if (s[n - 1] == '\n') c->line++;
    return 0;
}

static int keyed(cursor *c, const char *key, int64_t max, int64_t *out)
{
    int rc;
    if ((rc = literal(c, key))) return rc;
    if ((rc = number(c, max, out))) return rc;
    return literal(c, "\n");
}

static int hex8(cursor *c, uint32_t *out)
{
    if (c->end - c->p < 8) return bad(c, "a CRC32C of 8 hex digits expected");
    uint32_t v = 0;
    for (int i = 0; i < 8; i++) {
        char h = c->p[i];
        int d = h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10 : -1;
        if (d < 0) return bad(c, "a CRC32C of 8 lowercase hex digits expected");
        v = v << 4 | (uint32_t)d;
    }
    c->p += 8;
    *out = v;
    return 0;
}

/* The head lines at c (version to COMMIT) into a fresh *t. */
static int parse_head(cursor *c, cf__stream_table *t)
{
    cf_error *err = c->err;
    int rc;
    /* version 1: no statistics; 2: each chunk's after its task line */
    int version = c->end - c->p > 17 && memcmp(c->p, "COLFILE-STREAM: 2\n", 18) == 0 ? 2 : 1;
    if ((rc = literal(c, version == 2 ? "COLFILE-STREAM: 2\n" : "COLFILE-STREAM: 1\n")) ||
        (rc = literal(c, "DTYPE: ")))
        return rc;
    const char *eol = memchr(c->p, '\n', (size_t)(c->end - c->p));
    if (!eol || eol - c->p >= CF_DTYPE_MAX) return bad(c, "a DTYPE token expected");
    char token[CF_DTYPE_MAX];
    memcpy(token, c->p, (size_t)(eol - c->p));
    token[eol - c->p] = 0;
    c->p = eol + 1;
    c->line++;
    int64_t nmemb, commit;
    cf_stream_layout l;
    if ((rc = keyed(c, "NMEMB: ", 2147483647, &nmemb)) || (rc = keyed(c, "TASKS: ", CF_STREAM_TASKS_MAX, &l.tasks)) ||
        (rc = keyed(c, "FILES: ", CF_STREAM_FILES_MAX, &l.files)) ||
        (rc = keyed(c, "CHUNK: ", CF_STREAM_CHUNK_MAX, &l.chunk)) ||
        (rc = keyed(c, "ALIGN: ", CF_STREAM_CHUNK_MAX, &l.align)) || (rc = keyed(c, "COMMIT: ", INT64_MAX, &commit)))
        return rc;
    char context[1200];
    snprintf(context, sizeof context, "%s: line %lld", c->path, (long long)c->line);
    if (token[0] != 'r' && token[0] != '<' && token[0] != '>') return bad(c, "DTYPE without a byte order");
    if ((rc = cf__stream_table_init(t, token, nmemb, &l, context, err))) {
        if (err) err->code = CF_EFORMAT;
        return CF_EFORMAT;
    }
    if (strcmp(t->dtype, token) != 0) {
        cf__stream_table_free(t);
        return bad(c, "DTYPE not normalised");
    }
    t->commit = commit;
    if (version == 2 && !t->stats) {
        cf__stream_table_free(t);
        return bad(c, "statistics for a raw stream");
    }
    t->stats = version == 2;
    return 0;
}

/* Scratch for one task's chunk CRCs and statistics while parsing. */
typedef struct {
    uint32_t *crcs;
    cf__stream_stat *st;
    size_t cap;
} task_scratch;

/* Task r's line and statistics lines at c, into t. */
static int parse_task(cursor *c, cf__stream_table *t, int64_t r, task_scratch *s)
{
    const int64_t nmemb = t->nmemb;
    int64_t task, bytes;
    int rc;
    if ((rc = number(c, INT64_MAX, &task))) return rc;
    if (task != r) return bad(c, "task lines out of order or missing");
    if ((rc = literal(c, " ")) || (rc = number(c, INT64_MAX, &bytes))) return rc;
    if (bytes % t->rowbytes != 0) return bad(c, "a byte count that is not whole rows");
    int64_t n = cf__stream_chunks(bytes, t->layout.chunk);
    if (n > (c->end - c->p) / 9) /* each CRC takes 9 bytes: no huge allocation for a hostile count */
        return bad(c, "fewer chunk CRCs than the byte count needs");
    if (t->stats && n > 0 && nmemb > (c->end - c->p) / 32 / n) /* a statistics line takes more than 32 bytes */
        return bad(c, "fewer statistics lines than the chunks need");
    if ((size_t)n > s->cap) {
        uint32_t *p = realloc(s->crcs, (size_t)n * sizeof *p);
        if (p) s->crcs = p;
        cf__stream_stat *q = p && t->stats ? realloc(s->st, (size_t)n * (size_t)nmemb * sizeof *q) : NULL;
        if (q) s->st = q;
        if (!p || (t->stats && !q)) return CF_FAIL(c->err, CF_ENOMEM, "%s: out of memory", c->path);
        s->cap = (size_t)n;
    }
    for (int64_t k = 0; k < n; k++)
        if ((rc = literal(c, " ")) || (rc = hex8(c, &s->crcs[k]))) return rc;
    if ((rc = literal(c, "\n"))) return rc;
    for (int64_t k = 0; t->stats && k < n; k++)
        for (int64_t j = 0; j < nmemb; j++) {
            if (cf__stream_stat_parse(&c->p, c->end, k, j, t->cls, &s->st[k * nmemb + j]))
                return bad(c, "a chunk's statistics line expected, as colfile writes it");
            c->line++;
        }
    return cf__stream_table_set(t, r, bytes, s->crcs, s->st, c->path, c->err);
}

int cf__stream_table_parse(cf__stream_table *t, const char *text, size_t len, const char *path, cf_error *err)
{
    memset(t, 0, sizeof *t);
    cursor c = { text, text + len, path, 1, err };
    /* the seal first: the last line covers every byte before it */
    const char *seal = NULL;
    if (len >= 17 && text[len - 1] == '\n') {
        seal = text + len - 17;
        if (memcmp(seal, "CRC32C: ", 8) != 0 || (seal > text && seal[-1] != '\n')) seal = NULL;
    }
    if (!seal)
        return CF_FAIL(err, CF_EFORMAT, "%s: no checksum line at the end (cut short or not a stream table)", path);
    cursor s = { seal + 8, text + len, path, 0, err };
    uint32_t want;
    if (hex8(&s, &want) || cf__crc32c_update(0, text, (size_t)(seal - text)) != want)
        return CF_FAIL(err, CF_EFORMAT, "%s: the checksum line does not match the table", path);
    c.end = seal;
    int rc = parse_head(&c, t);
    if (rc) return rc;
    task_scratch scratch = { NULL, NULL, 0 };
    for (int64_t r = 0; rc == 0 && r < t->layout.tasks; r++) rc = parse_task(&c, t, r, &scratch);
    if (rc == 0 && c.p != c.end) rc = bad(&c, "more lines than tasks");
    free(scratch.crcs);
    free(scratch.st);
    if (rc) cf__stream_table_free(t);
    return rc;
}

int cf__stream_table_parse_head(cf__stream_table *t, const char *text, size_t len, const char *path, cf_error *err)
{
    memset(t, 0, sizeof *t);
    cursor c = { text, text + len, path, 1, err };
    int rc = parse_head(&c, t);
    if (rc == 0 && c.p != c.end) {
        cf__stream_table_free(t);
        rc = bad(&c, "more lines than the head's");
    }
    return rc;
}

int cf__stream_table_parse_task(cf__stream_table *t, int64_t task, const char *text, size_t len, const char *path,
                                cf_error *err)
{
    cursor c = { text, text + len, path, 1, err };
    task_scratch scratch = { NULL, NULL, 0 };
    int rc = parse_task(&c, t, task, &scratch);
    if (rc == 0 && c.p != c.end) rc = bad(&c, "more lines than the task's");
    free(scratch.crcs);
    free(scratch.st);
    return rc;
}
