/* column.c - columns: create, open, read, write, grow, flush, verify. */
#include "column.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checksum.h"
#include "error.h"
#include "ext.h"
#include "file.h"
#include "digest.h"
#include "fsutil.h"
#include "hex.h"

/* ---- small helpers ---------------------------------------------------- */

static int is_attrs_only_name(const char *name)
{
    size_t n = strlen(name);
    return strcmp(name, ".") == 0 || (n >= 2 && strcmp(name + n - 2, "/.") == 0);
}

static void blob_name(int64_t i, char out[32])
{
    snprintf(out, 32, "%06" PRIX64, (uint64_t)i);
}

/* The path of blob i (malloc'd; NULL on ENOMEM). */
static char *blob_path(const cf_column *c, int64_t i)
{
    char name[32];
    blob_name(i, name);
    return cf__path_join(c->path, name);
}

static void close_fd(cf_column *c)
{
    if (c->fd >= 0) close(c->fd);
    c->fd = -1;
    c->fd_blob = -1;
}

static void free_writes(cf_column *c)
{
    if (!c->writes) return;
    for (int64_t i = 0; i < c->h.nfile; i++) free(c->writes[i].segments);
    free(c->writes);
    c->writes = NULL;
}

void cf__column_free(cf_column *c)
{
    if (!c) return;
    close_fd(c);
    free_writes(c);
    free(c->name);
    free(c->path);
    free(c->attr_dir);
    cf__header_free(&c->h);
    free(c->first_row);
    cf__stats_free(&c->stats);
    free(c->committed_sums);
    free(c->crc);
    free(c->crc_known);
    cf__attrset_free(&c->attrs);
    cf__attrset_free(&c->attrs_v1);
    free(c->scratch);
    free(c);
}

/* (Re)build first_row, crc and crc_known for c->h.nfile blobs, keeping the
 * first `keep` entries of crc/crc_known. */
static int layout_blobs(cf_column *c, int64_t keep, cf_error *err)
{
    int64_t n = c->h.nfile;
    int64_t *first = realloc(c->first_row, (size_t)(n + 1) * sizeof *first);
    if (!first) return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", c->path);
    c->first_row = first;
    uint32_t *crc = realloc(c->crc, (size_t)(n + 1) * sizeof *crc);
    if (!crc) return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", c->path);
    c->crc = crc;
    unsigned char *known = realloc(c->crc_known, (size_t)(n + 1));
    if (!known) return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", c->path);
    c->crc_known = known;
    uint32_t *committed = realloc(c->committed_sums, (size_t)(n + 1) * sizeof *committed);
    if (!committed) return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", c->path);
    c->committed_sums = committed;
    first[0] = 0;
    for (int64_t i = 0; i < n; i++) {
        first[i + 1] = first[i] + c->h.rows[i];
        if (i >= keep) {
            committed[i] = c->h.sums[i];
            /* An empty blob has a known CRC; others are unknown until written. */
            crc[i] = 0;
            known[i] = c->h.rows[i] == 0;
        }
    }
    c->size = first[n];
    return 0;
}

static cf_column *column_new(const char *name, const char *path, const char *attr_dir)
{
    cf_column *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->fd = -1;
    c->fd_blob = -1;
    cf__attrset_init(&c->attrs);
    cf__attrset_init(&c->attrs_v1);
    c->name = strdup(name);
    c->path = strdup(path);
    c->attr_dir = strdup(attr_dir);
    if (!c->name || !c->path || !c->attr_dir) {
        cf__column_free(c);
        return NULL;
    }
    return c;
}

/* Where the attribute files of `name` live: the column directory, or for
 * "." the File root and for "g/." the directory g. */
static char *attr_dir_of(const cf_file *f, const char *name)
{
    if (strcmp(name, ".") == 0) return strdup(f->path);
    if (is_attrs_only_name(name)) {
        size_t n = strlen(name);
        char *group = strndup(name, n - 2);
        if (!group) return NULL;
        char *p = cf__path_join(f->path, group);
        free(group);
        return p;
    }
    return cf__path_join(f->path, name);
}

static int write_header(cf_column *c, cf_error *err)
{
    char *text;
    size_t len;
    int rc = cf__header_format(&c->h, &text, &len, c->path, err);
    if (rc) return rc;
    rc = cf__write_file_atomic(c->path, "header", text, len, err);
    free(text);
    return rc;
}

static int write_ext(cf_column *c, cf_error *err)
{
    char *text;
    size_t len;
    int rc = cf__ext_format(&c->h, c->crc, c->crc_known, &text, &len, c->path, err);
    if (rc) return rc;
    rc = cf__write_file_atomic(c->path, CF__EXT_NAME, text, len, err);
    free(text);
    return rc;
}

static int write_stats(cf_column *c, cf_error *err)
{
    char *text;
    size_t len;
    int rc = cf__stats_format(&c->stats, &c->h, &text, &len, c->path, err);
    if (rc) return rc;
    rc = cf__write_file_atomic(c->path, CF__STATS_NAME, text, len, err);
    free(text);
    return rc;
}

int cf__column_apply_stats(cf_column *c, const char *text, size_t len, const char *path, cf_error *err)
{
    if (c->kind != CF_KIND_DATA) return 0;
    /* Damaged statistics are no statistics: never a reason not to open. */
    if (text && cf__stats_parse(&c->stats, &c->h, text, len, path, NULL) == 0) return 0;
    cf__stats_free(&c->stats);
    return cf__stats_alloc(&c->stats, &c->h, cf__stats_default_chunk_rows(c->rowbytes), path, err);
}

int cf__column_first_touch(const cf_column *c, int64_t b)
{
    return !c->writes || (c->writes[b].count == 0 && !c->writes[b].overflow);
}

void cf__column_stats_reset_blob(cf_column *c, int64_t b)
{
    int64_t chunks = cf__stats_blob_chunks(&c->stats, b);
    for (int64_t k = 0; k < chunks; k++) {
        cf__acc *acc = cf__stats_chunk(&c->stats, b, k);
        for (int64_t j = 0; j < c->h.nmemb; j++) cf__acc_init(&acc[j], &c->h.dtype);
    }
    c->stats.valid[b] = c->h.rows[b] == 0;
}

/* Add n column-typed elements, starting at element `elem` of blob b, to
 * the statistics of the chunks they fall in. */
void cf__column_stats_add(cf_column *c, int64_t b, int64_t elem, const unsigned char *p, int64_t n)
{
    int64_t nmemb = c->h.nmemb, w = c->h.dtype.width, chunk_elems = c->stats.chunk_rows * nmemb;
    while (n > 0) {
        int64_t k = elem / chunk_elems;
        int64_t m = (k + 1) * chunk_elems - elem;
        if (m > n) m = n;
        cf__acc_add(cf__stats_chunk(&c->stats, b, k), nmemb, elem % nmemb, p, m, &c->h.dtype);
        p += m * w;
        elem += m;
        n -= m;
    }
}

/* Create or truncate blob i to zero bytes. */
static int truncate_blob(cf_column *c, int64_t i, cf_error *err)
{
    char *p = blob_path(c, i);
    if (!p) return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", c->path);
    int rc = 0;
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0) {
        int e = errno;
        rc = CF_FAIL(err, CF_EIO, "%s: cannot create blob: %s", p, strerror(e));
    } else {
        close(fd);
    }
    free(p);
    return rc;
}

/* Remove blob files numbered >= nfile left by an earlier, larger column. */
static int remove_stale_blobs(const char *dir, int64_t nfile, cf_error *err)
{
    DIR *d = opendir(dir);
    if (!d) return 0;
    int rc = 0;
    struct dirent *ent;
    while (rc == 0 && (ent = readdir(d)) != NULL) {
        const char *s = ent->d_name;
        size_t n = strlen(s);
        if (n < 6 || n > 16) continue;
        uint64_t id = 0;
        size_t k;
        for (k = 0; k < n; k++) {
            int v = cf__hex_digit(s[k]);
            if (v < 0 || (s[k] >= 'a' && s[k] <= 'f')) break; /* blob names are upper case */
            id = id * 16 + (uint64_t)v;
        }
        if (k != n || id < (uint64_t)nfile) continue;
        rc = cf__remove_if_exists(dir, s, err);
    }
    closedir(d);
    return rc;
}

/* ---- create / open / close ------------------------------------------ */

static int create_attrs_only(cf_column **out, cf_file *f, const char *name, cf_error *err)
{
    char *dir = attr_dir_of(f, name);
    if (!dir) return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", f->path);
    int rc = cf__mkdirs(dir, err);
    if (rc == 0) rc = cf__remove_if_exists(dir, "attr", err);
    if (rc == 0) rc = cf__remove_if_exists(dir, CF__ATTRS_EXT_NAME, err);
    if (rc == 0) rc = cf__write_file_atomic(dir, "attr-v2", "", 0, err);
    free(dir);
    if (rc) return rc;
    return cf_column_open(out, f, name, err);
}

int cf_column_create_blobs(cf_column **out, cf_file *f, const char *name,
                           const char *dtype, int64_t nmemb, int64_t nfile,
                           const int64_t *blob_rows, cf_error *err)
{
    int rc;
    if (!out || !f || !name) return CF_FAIL(err, CF_EARG, "cf_column_create: NULL argument");
    if ((rc = cf_name_check(name, err))) return rc;
    if (!f->writable)
        return CF_FAIL(err, CF_EREADONLY, "%s: File is open read-only; cannot create '%s'", f->path, name);
    if (is_attrs_only_name(name)) {
        if (dtype) return CF_FAIL(err, CF_EKIND, "%s: '%s' names attributes and cannot hold data", f->path, name);
        return create_attrs_only(out, f, name, err);
    }
    cf__header h = { { '<', 'i', 8 }, 0, 0, NULL, NULL };
    h.dtype.order = cf__dtype_native_order();
    char context[1100];
    snprintf(context, sizeof context, "%s/%s", f->path, name);
    if (dtype) {
        if ((rc = cf__dtype_parse(dtype, CF__DTYPE_USER, &h.dtype, context, err))) return rc;
        if (h.dtype.kind == 'S' && h.dtype.width > CF__COLUMN_S_MAX)
            return CF_FAIL(err, CF_EDTYPE, "%s: string columns can be at most S%d wide (bigfile 0.1.52 cannot "
                           "reopen S%lld)", context, CF__COLUMN_S_MAX, (long long)h.dtype.width);
        if (nmemb < 1 || nmemb > CF__NMEMB_MAX)
            return CF_FAIL(err, CF_EARG, "%s: nmemb must be in 1..%lld, got %lld", context,
                           (long long)CF__NMEMB_MAX, (long long)nmemb);
        if (nfile < 0 || nfile > CF__NFILE_MAX)
            return CF_FAIL(err, CF_EARG, "%s: nfile must be in 0..%lld (bigfile reads 6 hex digits), got %lld",
                           context, (long long)CF__NFILE_MAX, (long long)nfile);
        if (nfile > 0 && !blob_rows)
            return CF_FAIL(err, CF_EARG, "%s: blob_rows is NULL", context);
        int64_t total = 0;
        for (int64_t i = 0; i < nfile; i++) {
            if (blob_rows[i] < 0 || blob_rows[i] > INT64_MAX - total)
                return CF_FAIL(err, CF_EARG, "%s: bad row count %lld for blob %lld", context,
                               (long long)blob_rows[i], (long long)i);
            total += blob_rows[i];
        }
        if (nmemb > INT64_MAX / h.dtype.width || (total > 0 && total > INT64_MAX / (nmemb * h.dtype.width)))
            return CF_FAIL(err, CF_EARG, "%s: %lld rows of %lld elements overflow a 64-bit size",
                           context, (long long)total, (long long)nmemb);
        h.nmemb = nmemb;
    }
    cf__header stored = h;
    if ((rc = cf__header_alloc(&stored, dtype ? nfile : 0, context, err))) return rc;
    for (int64_t i = 0; i < stored.nfile; i++) stored.rows[i] = blob_rows[i];

    cf_column *c = NULL;
    char *dir = cf__path_join(f->path, name);
    if (!dir) {
        cf__header_free(&stored);
        return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", f->path);
    }
    if (cf__exists(dir) && !cf__is_dir(dir)) {
        rc = CF_FAIL(err, CF_EEXIST, "%s: exists and is not a directory", dir);
        goto fail;
    }
    c = column_new(name, dir, dir);
    if (!c) {
        rc = CF_FAIL(err, CF_ENOMEM, "%s: out of memory", dir);
        goto fail;
    }
    c->h = stored;
    stored.rows = NULL;
    stored.sums = NULL;
    c->kind = dtype ? CF_KIND_DATA : CF_KIND_HEADER_ONLY;
    c->writable = 1;
    cf__dtype_format(&c->h.dtype, c->dtype_token);
    c->rowbytes = c->h.nmemb * c->h.dtype.width;
    c->fresh = 1;
    if ((rc = layout_blobs(c, 0, err))) goto fail;
    if (c->kind == CF_KIND_DATA &&
        (rc = cf__stats_alloc(&c->stats, &c->h, cf__stats_default_chunk_rows(c->rowbytes), dir, err)))
        goto fail;

    if ((rc = cf__mkdirs(dir, err))) goto fail;
    for (int64_t i = 0; i < c->h.nfile && rc == 0; i++) rc = truncate_blob(c, i, err);
    if (rc == 0) rc = remove_stale_blobs(dir, c->h.nfile, err);
    if (rc == 0) rc = cf__remove_if_exists(dir, "attr", err);
    if (rc == 0) rc = cf__remove_if_exists(dir, CF__ATTRS_EXT_NAME, err);
    if (rc == 0) rc = cf__remove_if_exists(dir, CF__STATS_NAME, err);
    if (rc == 0) rc = cf__write_file_atomic(dir, "attr-v2", "", 0, err);
    if (rc == 0) rc = write_header(c, err);
    if (rc == 0 && c->kind == CF_KIND_DATA) rc = write_ext(c, err);
    if (rc == 0 && c->kind == CF_KIND_DATA) rc = write_stats(c, err);
    if (rc) goto fail;
    free(dir);
    *out = c;
    return 0;
fail:
    cf__header_free(&stored);
    cf__column_free(c);
    free(dir);
    return rc;
}

int cf_column_create(cf_column **out, cf_file *f, const char *name,
                     const char *dtype, int64_t nmemb, int64_t size,
                     int64_t nfile, cf_error *err)
{
    if (!f || !name) return CF_FAIL(err, CF_EARG, "cf_column_create: NULL argument");
    if (dtype) {
        if (size < 0)
            return CF_FAIL(err, CF_EARG, "%s/%s: size must not be negative, got %lld", f->path, name, (long long)size);
        if (nfile < 0)
            return CF_FAIL(err, CF_EARG, "%s/%s: nfile must not be negative, got %lld", f->path, name, (long long)nfile);
        if (nfile == 0 && size != 0)
            return CF_FAIL(err, CF_EARG, "%s/%s: %lld rows need at least one blob (nfile 0)", f->path, name, (long long)size);
        if (nfile > CF__NFILE_MAX)
            return CF_FAIL(err, CF_EARG, "%s/%s: nfile must be in 0..%lld (bigfile reads 6 hex digits), got %lld",
                           f->path, name, (long long)CF__NFILE_MAX, (long long)nfile);
    } else {
        nfile = 0;
    }
    int64_t *rows = NULL;
    if (nfile > 0) {
        rows = malloc((size_t)nfile * sizeof *rows);
        if (!rows) return CF_FAIL(err, CF_ENOMEM, "%s/%s: out of memory", f->path, name);
        cf__split_rows(size, nfile, rows);
    }
    int rc = cf_column_create_blobs(out, f, name, dtype, nmemb, nfile, rows, err);
    free(rows);
    return rc;
}

int cf__column_apply_header(cf_column *c, const char *text, size_t len, const char *path, cf_error *err)
{
    int rc = cf__header_parse(&c->h, text, len, path, err);
    if (rc) return rc;
    c->kind = c->h.nmemb == 0 ? CF_KIND_HEADER_ONLY : CF_KIND_DATA;
    c->rowbytes = c->h.nmemb * c->h.dtype.width;
    cf__dtype_format(&c->h.dtype, c->dtype_token);
    return layout_blobs(c, 0, err);
}

void cf__column_apply_ext(cf_column *c, const char *text, size_t len, const char *path)
{
    /* CRCs are trusted only where still current; a damaged or absent file
     * leaves them unknown without keeping the column from opening. */
    cf__ext x;
    int ok = text && cf__ext_parse(&x, text, len, path, NULL) == 0;
    for (int64_t i = 0; i < c->h.nfile; i++) {
        c->crc_known[i] = ok ? (unsigned char)cf__ext_current(&x, &c->h, i) : 0;
        c->crc[i] = c->crc_known[i] ? x.crc[i] : 0;
    }
    if (ok) cf__ext_free(&x);
}

void cf__column_set_attrs_only(cf_column *c)
{
    c->kind = CF_KIND_ATTRS_ONLY;
    c->h.dtype.order = cf__dtype_native_order();
    c->h.dtype.kind = 'i';
    c->h.dtype.width = 8;
    cf__dtype_format(&c->h.dtype, c->dtype_token);
}

int cf__column_new_for(cf_column **out, cf_file *f, const char *name, cf_error *err)
{
    int rc;
    if (!out || !f || !name) return CF_FAIL(err, CF_EARG, "cf_column_open: NULL argument");
    if ((rc = cf_name_check(name, err))) return rc;
    char *dir = attr_dir_of(f, name);
    char *path = is_attrs_only_name(name) ? (dir ? strdup(dir) : NULL) : cf__path_join(f->path, name);
    cf_column *c = dir && path ? column_new(name, path, dir) : NULL;
    free(dir);
    free(path);
    if (!c) return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", f->path);
    c->writable = f->writable;
    *out = c;
    return 0;
}

int cf_column_open(cf_column **out, cf_file *f, const char *name, cf_error *err)
{
    cf_column *c;
    int rc = cf__column_new_for(&c, f, name, err);
    if (rc) return rc;
    char *text = NULL, *hp = NULL, *xp = NULL;
    size_t len;
    if (is_attrs_only_name(name)) {
        if (!cf__is_dir(c->attr_dir)) {
            rc = CF_FAIL(err, CF_ENOENT, "%s: no group '%s' in File %s", c->attr_dir, name, f->path);
            goto done;
        }
        cf__column_set_attrs_only(c);
    } else {
        hp = cf__path_join(c->path, "header");
        xp = cf__path_join(c->path, CF__EXT_NAME);
        if (!hp || !xp) {
            rc = CF_FAIL(err, CF_ENOMEM, "%s: out of memory", c->path);
            goto done;
        }
        rc = cf__read_file(hp, &text, &len, err);
        if (rc == CF_ENOENT)
            rc = CF_FAIL(err, CF_ENOENT, "%s: no column '%s' in File %s", c->path, name, f->path);
        if (rc == 0) rc = cf__column_apply_header(c, text, len, hp, err);
        if (rc) goto done;
        free(text);
        text = NULL;
        if (cf__read_file(xp, &text, &len, NULL) != 0) text = NULL;
        cf__column_apply_ext(c, text, len, xp);
        free(text);
        text = NULL;
        free(xp);
        xp = cf__path_join(c->path, CF__STATS_NAME);
        if (!xp) {
            rc = CF_FAIL(err, CF_ENOMEM, "%s: out of memory", c->path);
            goto done;
        }
        if (cf__read_file(xp, &text, &len, NULL) != 0) text = NULL;
        if ((rc = cf__column_apply_stats(c, text, len, xp, err))) goto done;
    }
    if ((rc = cf__column_load_attrs(c, err))) goto done;
    *out = c;
    c = NULL;
done:
    free(text);
    free(hp);
    free(xp);
    cf__column_free(c);
    return rc;
}

static int need_scratch(cf_column *c, cf_error *err)
{
    if (c->scratch) return 0;
    c->scratch = malloc((size_t)CF__CHUNK_BYTES);
    if (!c->scratch) return CF_FAIL(err, CF_ENOMEM, "%s: out of memory for the I/O buffer", c->path);
    return 0;
}

/* Read blob i whole and compute its CRC32C and statistics.  Returns 0 with
 * *complete 0 (nothing known) if the blob is missing or short. */
static int scan_blob(cf_column *c, int64_t i, int *complete, cf_error *err)
{
    int64_t bytes = c->h.rows[i] * c->rowbytes, w = c->h.dtype.width;
    *complete = 0;
    cf__column_stats_reset_blob(c, i);
    c->crc_known[i] = 0;
    char *p = blob_path(c, i);
    if (!p) return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", c->path);
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    int rc = 0;
    if (fd < 0) goto done;
    if ((rc = need_scratch(c, err))) goto done;
    uint32_t crc = 0;
    int64_t off = 0, step = CF__CHUNK_BYTES / w * w;
    while (off < bytes) {
        size_t want = (size_t)(bytes - off < step ? bytes - off : step);
        size_t got;
        if ((rc = cf__pread_all(fd, c->scratch, want, off, &got, p, err))) goto done;
        if (got < want) goto done; /* short: nothing known */
        crc = cf__crc32c_update(crc, c->scratch, got);
        cf__column_stats_add(c, i, off / w, c->scratch, (int64_t)got / w);
        off += (int64_t)got;
    }
    c->crc[i] = crc;
    c->crc_known[i] = 1;
    c->stats.valid[i] = 1;
    *complete = 1;
done:
    if (fd >= 0) close(fd);
    free(p);
    return rc;
}

/* After writes to blob i: if they cover it exactly once, the CRC merged from
 * the segments and the statistics accumulated on the way are the blob's.
 * Otherwise read the blob back, unless it is so large that re-reading it
 * would dominate the write; its CRC and statistics then stay unknown until
 * a later whole write or `colfile index`. */
static int settle_blob(cf_column *c, int64_t i, cf_error *err)
{
    cf__blob_writes *w = &c->writes[i];
    int64_t bytes = c->h.rows[i] * c->rowbytes;
    if (!w->overflow && w->count == 1 && w->segments[0].offset == 0 && w->segments[0].length == bytes) {
        c->crc[i] = w->segments[0].crc;
        c->crc_known[i] = 1;
        c->stats.valid[i] = !c->stats_off;
        return 0;
    }
    c->crc_known[i] = 0;
    c->stats.valid[i] = 0;
    if (bytes > CF__RECOMPUTE_CRC_MAX) return 0;
    int complete;
    return scan_blob(c, i, &complete, err);
}

int cf_column_index_blob(cf_column *c, int64_t i, cf_error *err)
{
    if (!c) return CF_FAIL(err, CF_EARG, "cf_column_index_blob: NULL column");
    if (c->kind != CF_KIND_DATA) return CF_FAIL(err, CF_EKIND, "%s: not a data column", c->path);
    if (!c->writable) return CF_FAIL(err, CF_EREADONLY, "%s: column is open read-only", c->path);
    if (i < 0 || i >= c->h.nfile)
        return CF_FAIL(err, CF_EARG, "%s: blob %lld does not exist (NFILE %lld)", c->path, (long long)i,
                       (long long)c->h.nfile);
    int complete, rc = scan_blob(c, i, &complete, err);
    if (rc) return rc;
    if (!complete) {
        char name[32];
        blob_name(i, name);
        return CF_FAIL(err, CF_ESHORT, "%s/%s: blob is missing or shorter than its %lld rows need",
                       c->path, name, (long long)c->h.rows[i]);
    }
    /* Record it as one whole write, so that flush or a pending export
     * carries the result; the byte sums do not change. */
    if (c->writes) {
        free(c->writes[i].segments);
        c->writes[i] = (cf__blob_writes){ NULL, 0, 0, 0 };
    }
    c->fresh = 0;
    c->ext_dirty = 1;
    return cf__column_note_segment(c, i, 0, c->h.rows[i] * c->rowbytes, c->crc[i], err);
}

int cf_column_flush(cf_column *c, cf_error *err)
{
    if (!c) return CF_FAIL(err, CF_EARG, "cf_column_flush: NULL column");
    if (!c->writable || c->kind != CF_KIND_DATA || c->replica) return 0;
    int rc = 0;
    if (c->writes) {
        for (int64_t i = 0; i < c->h.nfile && rc == 0; i++)
            if (c->writes[i].count || c->writes[i].overflow) rc = settle_blob(c, i, err);
        if (rc) return rc;
        free_writes(c);
    }
    if (c->header_dirty) {
        if ((rc = write_header(c, err))) return rc;
        c->header_dirty = 0;
        if (c->h.nfile) memcpy(c->committed_sums, c->h.sums, (size_t)c->h.nfile * sizeof *c->h.sums);
    }
    if (c->ext_dirty) {
        if ((rc = write_ext(c, err))) return rc;
        if ((rc = write_stats(c, err))) return rc;
        c->ext_dirty = 0;
    }
    return 0;
}

int cf_column_close(cf_column *c, cf_error *err)
{
    if (!c) return 0;
    int rc = cf_column_flush(c, err);
    cf__column_free(c);
    return rc;
}

/* ---- accessors --------------------------------------------------------- */

const char *cf_column_name(const cf_column *c) { return c->name; }
const char *cf_column_path(const cf_column *c) { return c->path; }
const char *cf_column_dtype(const cf_column *c) { return c->dtype_token; }
int cf_column_kind(const cf_column *c) { return c->kind; }
int cf_column_writable(const cf_column *c) { return c->writable; }
int64_t cf_column_itemsize(const cf_column *c) { return c->h.dtype.width; }
int64_t cf_column_nmemb(const cf_column *c) { return c->h.nmemb; }
int64_t cf_column_size(const cf_column *c) { return c->size; }
int64_t cf_column_nfile(const cf_column *c) { return c->h.nfile; }

int64_t cf_column_blob_rows(const cf_column *c, int64_t i)
{
    return (i >= 0 && i < c->h.nfile) ? c->h.rows[i] : -1;
}

uint32_t cf_column_blob_sum(const cf_column *c, int64_t i)
{
    return (i >= 0 && i < c->h.nfile) ? c->h.sums[i] : 0;
}

uint32_t cf_checksum_fold(uint32_t raw)
{
    return cf__sysv_fold(raw);
}

int cf_column_blob_crc32c(const cf_column *c, int64_t i, uint32_t *crc)
{
    if (i < 0 || i >= c->h.nfile || !c->crc_known[i]) return 0;
    /* Writes not yet settled make the recorded value stale. */
    if (c->writes && (c->writes[i].count || c->writes[i].overflow)) return 0;
    if (crc) *crc = c->crc[i];
    return 1;
}

/* ---- data access ---------------------------------------------------- */

/* The blob holding `row` (0 <= row < size): the last blob whose first row
 * is <= row, which skips zero-row blobs. */
static int64_t locate(const cf_column *c, int64_t row)
{
    int64_t lo = 0, hi = c->h.nfile; /* invariant: first_row[lo] <= row < first_row[hi] */
    while (hi - lo > 1) {
        int64_t mid = lo + (hi - lo) / 2;
        if (c->first_row[mid] <= row) lo = mid;
        else hi = mid;
    }
    return lo;
}

static int blob_fd(cf_column *c, int64_t i, int for_write, cf_error *err)
{
    if (c->fd >= 0 && c->fd_blob == i && (c->fd_writable || !for_write)) return c->fd;
    close_fd(c);
    char *p = blob_path(c, i);
    if (!p) return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", c->path);
    int fd = for_write ? open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0666) : open(p, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        int rc = e == ENOENT
            ? CF_FAIL(err, CF_ENOENT, "%s: blob file is missing (it should hold rows %lld..%lld)", p,
                      (long long)c->first_row[i], (long long)c->first_row[i + 1] - 1)
            : CF_FAIL(err, CF_EIO, "%s: cannot open blob: %s", p, strerror(e));
        free(p);
        return rc;
    }
    free(p);
    struct stat st;
    c->fd = fd;
    c->fd_blob = i;
    c->fd_writable = for_write;
    c->fd_blksize = fstat(fd, &st) == 0 && st.st_blksize > 0 ? (int64_t)st.st_blksize : 4096;
    return fd;
}

static int short_blob_error(cf_column *c, int64_t blob, int64_t byte_end, cf_error *err)
{
    char name[32];
    blob_name(blob, name);
    struct stat st;
    long long have = fstat(c->fd, &st) == 0 ? (long long)st.st_size : -1;
    return CF_FAIL(err, CF_ESHORT,
                   "%s/%s: blob holds %lld bytes but rows up to %lld need %lld (blob rows %lld..%lld)",
                   c->path, name, have, (long long)(c->first_row[blob] + (byte_end + c->rowbytes - 1) / c->rowbytes - 1),
                   (long long)byte_end, (long long)c->first_row[blob], (long long)c->first_row[blob + 1] - 1);
}

/* 1 if values of a and b are stored as the same bytes: equal dtypes, or
 * equal kind and width where byte order means nothing (1-byte kinds, S). */
static int same_bytes(const cf__dtype *a, const cf__dtype *b)
{
    if (a->kind != b->kind || a->width != b->width) return 0;
    return a->order == b->order || a->width == 1 || a->kind == 'S';
}

/* How a caller's buffer is laid out. */
typedef struct {
    char *base;          /* row 0, element 0 */
    int64_t row_stride, elem_stride;
    cf__dtype dtype;
    int regular;         /* element e is at base + e * stride */
    int64_t stride;
    int direct;          /* contiguous and of the column's dtype */
} buffer_view;

static int make_view(const cf_column *c, buffer_view *v, const void *buf, const char *dtype,
                     int64_t row_stride, int64_t elem_stride, int for_write, cf_error *err)
{
    v->base = (char *)buf;
    v->row_stride = row_stride;
    v->elem_stride = elem_stride;
    if (dtype) {
        int rc = cf__dtype_parse(dtype, CF__DTYPE_USER, &v->dtype, c->path, err);
        if (rc) return rc;
    } else {
        v->dtype = c->h.dtype;
    }
    const cf__dtype *from = for_write ? &v->dtype : &c->h.dtype;
    const cf__dtype *to = for_write ? &c->h.dtype : &v->dtype;
    if (!cf__dtype_can_convert(from, to)) {
        char a[CF_DTYPE_MAX], b[CF_DTYPE_MAX];
        cf__dtype_format(from, a);
        cf__dtype_format(to, b);
        return CF_FAIL(err, CF_ECAST, "%s: cannot convert %s to %s", c->path, a, b);
    }
    v->regular = c->h.nmemb == 1 || row_stride == c->h.nmemb * elem_stride;
    v->stride = c->h.nmemb == 1 ? row_stride : elem_stride;
    v->direct = v->regular && v->stride == v->dtype.width && same_bytes(&v->dtype, &c->h.dtype);
    return 0;
}

/* Convert n elements starting at flat element e of the caller's buffer into
 * the contiguous column-typed `out`. */
static void gather(const cf_column *c, const buffer_view *v, int64_t e, int64_t n, unsigned char *out)
{
    int64_t w = c->h.dtype.width;
    if (v->regular) {
        cf__convert(out, (ptrdiff_t)w, &c->h.dtype, v->base + e * v->stride, (ptrdiff_t)v->stride, &v->dtype, (size_t)n);
        return;
    }
    int64_t nmemb = c->h.nmemb;
    while (n > 0) {
        int64_t r = e / nmemb, j = e % nmemb;
        int64_t m = nmemb - j < n ? nmemb - j : n;
        cf__convert(out, (ptrdiff_t)w, &c->h.dtype, v->base + r * v->row_stride + j * v->elem_stride,
                    (ptrdiff_t)v->elem_stride, &v->dtype, (size_t)m);
        out += m * w;
        e += m;
        n -= m;
    }
}

/* The reverse of gather: contiguous column-typed `in` to the caller's buffer. */
static void scatter(const cf_column *c, const buffer_view *v, int64_t e, int64_t n, const unsigned char *in)
{
    int64_t w = c->h.dtype.width;
    if (v->regular) {
        cf__convert(v->base + e * v->stride, (ptrdiff_t)v->stride, &v->dtype, in, (ptrdiff_t)w, &c->h.dtype, (size_t)n);
        return;
    }
    int64_t nmemb = c->h.nmemb;
    while (n > 0) {
        int64_t r = e / nmemb, j = e % nmemb;
        int64_t m = nmemb - j < n ? nmemb - j : n;
        cf__convert(v->base + r * v->row_stride + j * v->elem_stride, (ptrdiff_t)v->elem_stride, &v->dtype,
                    in, (ptrdiff_t)w, &c->h.dtype, (size_t)m);
        in += m * w;
        e += m;
        n -= m;
    }
}


static int check_range(const cf_column *c, int64_t start, int64_t count, cf_error *err)
{
    if (c->kind == CF_KIND_ATTRS_ONLY)
        return CF_FAIL(err, CF_EKIND, "%s: '%s' holds only attributes, no rows", c->path, c->name);
    if (start < 0 || count < 0 || start > c->size || count > c->size - start)
        return CF_FAIL(err, CF_ERANGE, "%s: rows %lld..%lld are outside the column's %lld rows",
                       c->path, (long long)start, (long long)(start + count - 1), (long long)c->size);
    return 0;
}

/* Read `count` rows from `start` into the caller's buffer, where the first
 * of them is flat element e0 of the view. */
static int read_range(cf_column *c, int64_t start, int64_t count, const buffer_view *v, int64_t e0, cf_error *err)
{
    int64_t w = c->h.dtype.width;
    int64_t chunk_elems = CF__CHUNK_BYTES / w > 0 ? CF__CHUNK_BYTES / w : 1;
    int rc;
    if (!v->direct && w > CF__CHUNK_BYTES)
        return CF_FAIL(err, CF_EDTYPE, "%s: elements of %lld bytes are too wide to convert", c->path, (long long)w);
    int64_t row = start, e = e0;
    while (count > 0) {
        int64_t b = locate(c, row);
        int64_t in_blob = c->first_row[b + 1] - row;
        if (in_blob > count) in_blob = count;
        int fd = blob_fd(c, b, 0, err);
        if (fd < 0) return fd;
        int64_t off = (row - c->first_row[b]) * c->rowbytes;
        int64_t nbytes = in_blob * c->rowbytes;
        if (v->direct) {
            size_t got;
            if ((rc = cf__pread_all(fd, v->base + e * w, (size_t)nbytes, off, &got, c->path, err))) return rc;
            if ((int64_t)got < nbytes) return short_blob_error(c, b, off + nbytes, err);
            e += in_blob * c->h.nmemb;
        } else {
            if ((rc = need_scratch(c, err))) return rc;
            int64_t elems = in_blob * c->h.nmemb;
            while (elems > 0) {
                int64_t n = elems < chunk_elems ? elems : chunk_elems;
                size_t got;
                if ((rc = cf__pread_all(fd, c->scratch, (size_t)(n * w), off, &got, c->path, err))) return rc;
                if ((int64_t)got < n * w) return short_blob_error(c, b, off + n * w, err);
                scatter(c, v, e, n, c->scratch);
                e += n;
                off += n * w;
                elems -= n;
            }
        }
        row += in_blob;
        count -= in_blob;
    }
    return 0;
}

int cf_column_read(cf_column *c, int64_t start, int64_t count,
                   void *buf, const char *buf_dtype,
                   int64_t row_stride, int64_t elem_stride, cf_error *err)
{
    if (!c) return CF_FAIL(err, CF_EARG, "cf_column_read: NULL column");
    int rc = check_range(c, start, count, err);
    if (rc || count == 0 || c->h.nmemb == 0) return rc;
    if (!buf) return CF_FAIL(err, CF_EARG, "%s: NULL buffer", c->path);
    buffer_view v;
    if ((rc = make_view(c, &v, buf, buf_dtype, row_stride, elem_stride, 0, err))) return rc;
    return read_range(c, start, count, &v, 0, err);
}

int cf_column_read_rows(cf_column *c, const int64_t *rows, int64_t count,
                        void *buf, const char *buf_dtype,
                        int64_t row_stride, int64_t elem_stride, cf_error *err)
{
    if (!c) return CF_FAIL(err, CF_EARG, "cf_column_read_rows: NULL column");
    int rc = check_range(c, 0, 0, err);
    if (rc || count == 0) return rc;
    if (count < 0 || !rows || !buf) return CF_FAIL(err, CF_EARG, "%s: bad row list", c->path);
    for (int64_t i = 0; i < count; i++) {
        if (rows[i] < 0 || rows[i] >= c->size)
            return CF_FAIL(err, CF_ERANGE, "%s: row %lld is outside the column's %lld rows",
                           c->path, (long long)rows[i], (long long)c->size);
        if (i > 0 && rows[i] < rows[i - 1])
            return CF_FAIL(err, CF_EARG, "%s: row list is not sorted (row %lld after %lld)",
                           c->path, (long long)rows[i], (long long)rows[i - 1]);
    }
    if (c->h.nmemb == 0) return 0;
    buffer_view v;
    if ((rc = make_view(c, &v, buf, buf_dtype, row_stride, elem_stride, 0, err))) return rc;
    int64_t rb = c->rowbytes;
    if (rb > CF__CHUNK_BYTES / 4) {
        /* Wide rows: one contiguous read per listed row. */
        for (int64_t i = 0; i < count; i++)
            if ((rc = read_range(c, rows[i], 1, &v, i * c->h.nmemb, err))) return rc;
        return 0;
    }
    if ((rc = need_scratch(c, err))) return rc;
    /* Windows: runs of listed rows in one blob whose span fits the scratch
     * buffer and whose gaps are small are read with one pread. */
    const int64_t max_gap = 64 * 1024 / rb + 1;
    const int64_t max_span = CF__CHUNK_BYTES / rb;
    int64_t i = 0;
    while (i < count) {
        int64_t r0 = rows[i];
        int64_t b = locate(c, r0);
        int64_t blob_end = c->first_row[b + 1];
        int64_t j = i + 1;
        while (j < count && rows[j] < blob_end && rows[j] - r0 < max_span && rows[j] - rows[j - 1] <= max_gap) j++;
        int64_t span = rows[j - 1] - r0 + 1;
        int fd = blob_fd(c, b, 0, err);
        if (fd < 0) return fd;
        int64_t off = (r0 - c->first_row[b]) * rb;
        size_t got;
        if ((rc = cf__pread_all(fd, c->scratch, (size_t)(span * rb), off, &got, c->path, err))) return rc;
        if ((int64_t)got < span * rb) return short_blob_error(c, b, off + span * rb, err);
        for (int64_t k = i; k < j; k++)
            scatter(c, &v, k * c->h.nmemb, c->h.nmemb, c->scratch + (rows[k] - r0) * rb);
        i = j;
    }
    return 0;
}

/* Remember that bytes [off, off+len) of blob i were written with CRC crc. */
int cf__column_note_segment(cf_column *c, int64_t i, int64_t off, int64_t len, uint32_t crc, cf_error *err)
{
    if (!c->writes) {
        c->writes = calloc((size_t)c->h.nfile + 1, sizeof *c->writes);
        if (!c->writes) return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", c->path);
    }
    cf__blob_writes *w = &c->writes[i];
    if (w->overflow) return 0;
    if (w->count > 0) {
        cf__segment *last = &w->segments[w->count - 1];
        if (last->offset + last->length == off) {
            last->crc = cf__crc32c_combine(last->crc, crc, (uint64_t)len);
            last->length += len;
            return 0;
        }
    }
    if (w->count == CF__MAX_SEGMENTS) {
        w->overflow = 1;
        free(w->segments);
        w->segments = NULL;
        w->count = w->capacity = 0;
        return 0;
    }
    if (w->count == w->capacity) {
        int64_t cap = w->capacity ? w->capacity * 2 : 4;
        cf__segment *s = realloc(w->segments, (size_t)cap * sizeof *s);
        if (!s) return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", c->path);
        w->segments = s;
        w->capacity = cap;
    }
    w->segments[w->count++] = (cf__segment){ off, len, crc };
    /* Keep sorted and merge neighbours; overlaps force a recompute. */
    for (int64_t k = w->count - 1; k > 0 && w->segments[k - 1].offset > w->segments[k].offset; k--) {
        cf__segment t = w->segments[k];
        w->segments[k] = w->segments[k - 1];
        w->segments[k - 1] = t;
    }
    int64_t out = 0;
    for (int64_t k = 0; k < w->count; k++) {
        if (out > 0) {
            cf__segment *prev = &w->segments[out - 1];
            if (prev->offset + prev->length > w->segments[k].offset) {
                w->overflow = 1;
                break;
            }
            if (prev->offset + prev->length == w->segments[k].offset) {
                prev->crc = cf__crc32c_combine(prev->crc, w->segments[k].crc, (uint64_t)w->segments[k].length);
                prev->length += w->segments[k].length;
                continue;
            }
        }
        w->segments[out++] = w->segments[k];
    }
    if (w->overflow) {
        free(w->segments);
        w->segments = NULL;
        w->count = w->capacity = 0;
    } else {
        w->count = out;
    }
    return 0;
}

/* Write `count` rows from `start`, taken from the caller's buffer starting
 * at flat element e0 of the view.  Each request's bytes get their byte sum,
 * CRC32C and statistics while they are in cache: on this thread for small
 * writes, on a helper thread (digest.h) overlapping the copy into the file
 * for large ones. */
static int write_range(cf_column *c, int64_t start, int64_t count, const buffer_view *v, int64_t e0,
                       cf_error *err)
{
    int64_t w = c->h.dtype.width;
    int rc = 0;
    if (w > CF__CHUNK_BYTES && !v->direct)
        return CF_FAIL(err, CF_EDTYPE, "%s: elements of %lld bytes are too wide to convert", c->path, (long long)w);
    cf__digester *dg = NULL;
    unsigned char *pair[2] = { NULL, NULL };
    int64_t chunk_bytes = CF__CHUNK_BYTES;
    if (count * c->rowbytes >= CF__DIGEST_MIN_BYTES && cf__digester_start(&dg, c, NULL) == 0) {
        chunk_bytes = CF__DIGEST_CHUNK_BYTES;
        /* Two buffers: one being digested and written while the next is filled. */
        if (!v->direct && (!(pair[0] = malloc((size_t)chunk_bytes)) || !(pair[1] = malloc((size_t)chunk_bytes)))) {
            rc = CF_FAIL(err, CF_ENOMEM, "%s: out of memory for write buffers", c->path);
            goto done;
        }
    } else if (!v->direct && (rc = need_scratch(c, err))) {
        goto done;
    }
    int64_t chunk_elems = chunk_bytes / w > 0 ? chunk_bytes / w : 1;
    int64_t row = start, e = e0, k = 0;
    while (count > 0) {
        int64_t b = locate(c, row);
        int64_t in_blob = c->first_row[b + 1] - row;
        if (in_blob > count) in_blob = count;
        int fd = blob_fd(c, b, 1, err);
        if (fd < 0) {
            rc = fd;
            goto done;
        }
        int64_t off0 = (row - c->first_row[b]) * c->rowbytes, off = off0;
        int64_t elems = in_blob * c->h.nmemb;
        uint32_t sum = c->h.sums[b], crc = 0;
        if (cf__column_first_touch(c, b)) cf__column_stats_reset_blob(c, b);
        c->fresh = 0;
        /* End the first request on a file-system block boundary so that the
         * rest start aligned (whole blocks, no read-modify-write of a block
         * shared with a neighbouring writer's request). */
        int64_t head = 0, bs = c->fd_blksize;
        if (bs > 0 && bs % w == 0 && off % w == 0 && off % bs != 0) head = (bs - off % bs) / w;
        while (elems > 0) {
            int64_t n = elems < chunk_elems ? elems : chunk_elems;
            if (head > 0 && head < n) n = head;
            head = 0;
            const unsigned char *p;
            if (v->direct) {
                p = (const unsigned char *)v->base + e * w;
            } else {
                unsigned char *buf = dg ? pair[k & 1] : c->scratch;
                gather(c, v, e, n, buf);
                p = buf;
            }
            if (dg) {
                cf__digester_post(dg, p, n, b, off / w, &sum, &crc);
                rc = cf__pwrite_all(fd, p, (size_t)(n * w), off, c->path, err);
                cf__digester_wait(dg);
            } else {
                sum = cf__sysv_add(sum, p, (size_t)(n * w));
                crc = cf__crc32c_update(crc, p, (size_t)(n * w));
                if (!c->stats_off) cf__column_stats_add(c, b, off / w, p, n);
                rc = cf__pwrite_all(fd, p, (size_t)(n * w), off, c->path, err);
            }
            if (rc) goto done;
            e += n;
            off += n * w;
            elems -= n;
            k++;
        }
        c->h.sums[b] = sum;
        c->header_dirty = 1;
        c->ext_dirty = 1;
        if ((rc = cf__column_note_segment(c, b, off0, off - off0, crc, err))) goto done;
        row += in_blob;
        count -= in_blob;
    }
done:
    cf__digester_stop(dg);
    free(pair[0]);
    free(pair[1]);
    return rc;
}

static int check_writable(const cf_column *c, cf_error *err)
{
    if (!c->writable) return CF_FAIL(err, CF_EREADONLY, "%s: column is open read-only", c->path);
    return 0;
}

int cf_column_write(cf_column *c, int64_t start, int64_t count,
                    const void *buf, const char *buf_dtype,
                    int64_t row_stride, int64_t elem_stride, cf_error *err)
{
    if (!c) return CF_FAIL(err, CF_EARG, "cf_column_write: NULL column");
    int rc = check_writable(c, err);
    if (rc == 0) rc = check_range(c, start, count, err);
    if (rc || count == 0 || c->h.nmemb == 0) return rc;
    if (!buf) return CF_FAIL(err, CF_EARG, "%s: NULL buffer", c->path);
    buffer_view v;
    if ((rc = make_view(c, &v, buf, buf_dtype, row_stride, elem_stride, 1, err))) return rc;
    return write_range(c, start, count, &v, 0, err);
}

int cf_column_write_rows(cf_column *c, const int64_t *rows, int64_t count,
                         const void *buf, const char *buf_dtype,
                         int64_t row_stride, int64_t elem_stride, cf_error *err)
{
    if (!c) return CF_FAIL(err, CF_EARG, "cf_column_write_rows: NULL column");
    int rc = check_writable(c, err);
    if (rc == 0) rc = check_range(c, 0, 0, err);
    if (rc || count == 0) return rc;
    if (count < 0 || !rows || !buf) return CF_FAIL(err, CF_EARG, "%s: bad row list", c->path);
    for (int64_t i = 0; i < count; i++) {
        if (rows[i] < 0 || rows[i] >= c->size)
            return CF_FAIL(err, CF_ERANGE, "%s: row %lld is outside the column's %lld rows",
                           c->path, (long long)rows[i], (long long)c->size);
        if (i > 0 && rows[i] <= rows[i - 1])
            return CF_FAIL(err, CF_EARG, "%s: row list is not strictly increasing (row %lld after %lld)",
                           c->path, (long long)rows[i], (long long)rows[i - 1]);
    }
    if (c->h.nmemb == 0) return 0;
    buffer_view v;
    if ((rc = make_view(c, &v, buf, buf_dtype, row_stride, elem_stride, 1, err))) return rc;
    /* Runs of consecutive rows are written as one range. */
    int64_t i = 0;
    while (i < count) {
        int64_t j = i + 1;
        while (j < count && rows[j] == rows[j - 1] + 1) j++;
        if ((rc = write_range(c, rows[i], j - i, &v, i * c->h.nmemb, err))) return rc;
        i = j;
    }
    return 0;
}

int cf_column_grow(cf_column *c, int64_t rows, int64_t nfile, cf_error *err)
{
    if (!c) return CF_FAIL(err, CF_EARG, "cf_column_grow: NULL column");
    if (!c->writable) return CF_FAIL(err, CF_EREADONLY, "%s: column is open read-only", c->path);
    if (c->kind != CF_KIND_DATA)
        return CF_FAIL(err, CF_EKIND, "%s: only data columns can grow", c->path);
    if (rows < 0 || nfile < 0 || (nfile == 0 && rows != 0))
        return CF_FAIL(err, CF_EARG, "%s: cannot add %lld rows in %lld blobs", c->path, (long long)rows, (long long)nfile);
    if (nfile > CF__NFILE_MAX - c->h.nfile || rows > INT64_MAX / c->rowbytes - c->size)
        return CF_FAIL(err, CF_EARG, "%s: growing by %lld rows / %lld blobs overflows", c->path,
                       (long long)rows, (long long)nfile);
    if (c->replica)
        return CF_FAIL(err, CF_EKIND, "%s: a replica handle cannot grow the column; the handle that "
                       "commits does", c->path);
    if (nfile == 0) return 0;
    int rc;
    /* Settle pending CRCs while blob numbering is still the old one. */
    if ((rc = cf_column_flush(c, err))) return rc;
    int64_t old = c->h.nfile, n = old + nfile;
    int64_t *r = realloc(c->h.rows, (size_t)n * sizeof *r);
    if (!r) return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", c->path);
    c->h.rows = r;
    uint32_t *s = realloc(c->h.sums, (size_t)n * sizeof *s);
    if (!s) return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", c->path);
    c->h.sums = s;
    cf__split_rows(rows, nfile, r + old);
    for (int64_t i = old; i < n; i++) s[i] = 0;
    c->h.nfile = n;
    if ((rc = layout_blobs(c, old, err))) return rc;
    if ((rc = cf__stats_grow(&c->stats, &c->h, old, c->path, err))) return rc;
    c->fresh = 0;
    close_fd(c);
    for (int64_t i = old; i < n; i++)
        if ((rc = truncate_blob(c, i, err))) return rc;
    if ((rc = write_header(c, err))) return rc;
    c->ext_dirty = 1;
    return 0;
}

int cf_column_verify_blob(cf_column *c, int64_t i, unsigned *status, cf_error *err)
{
    if (!c || !status) return CF_FAIL(err, CF_EARG, "cf_column_verify_blob: NULL argument");
    if (i < 0 || i >= c->h.nfile)
        return CF_FAIL(err, CF_EARG, "%s: blob %lld does not exist (NFILE %lld)", c->path, (long long)i,
                       (long long)c->h.nfile);
    int rc = need_scratch(c, err);
    if (rc) return rc;
    unsigned st = 0;
    char *p = blob_path(c, i);
    if (!p) return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", c->path);
    int64_t bytes = c->h.rows[i] * c->rowbytes;
    uint32_t crc_known;
    int has_crc = cf_column_blob_crc32c(c, i, &crc_known);
    if (!has_crc) st |= CF_BLOB_CRC_UNKNOWN;
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno != ENOENT) {
            int e = errno;
            rc = CF_FAIL(err, CF_EIO, "%s: cannot open: %s", p, strerror(e));
        } else if (bytes > 0) {
            st |= CF_BLOB_MISSING;
        }
        goto done;
    }
    struct stat sb;
    if (fstat(fd, &sb) == 0 && sb.st_size > bytes) st |= CF_BLOB_LONG;
    uint32_t sum = 0, crc = 0;
    int64_t off = 0;
    while (off < bytes) {
        size_t want = (size_t)(bytes - off < CF__CHUNK_BYTES ? bytes - off : CF__CHUNK_BYTES);
        size_t got;
        if ((rc = cf__pread_all(fd, c->scratch, want, off, &got, p, err))) break;
        sum = cf__sysv_add(sum, c->scratch, got);
        crc = cf__crc32c_update(crc, c->scratch, got);
        off += (int64_t)got;
        if (got < want) {
            st |= CF_BLOB_SHORT;
            break;
        }
    }
    close(fd);
    if (rc) goto done;
    if (!(st & CF_BLOB_SHORT)) {
        if (sum != c->h.sums[i]) st |= CF_BLOB_SUM_MISMATCH;
        if (has_crc && crc != crc_known) st |= CF_BLOB_CRC_MISMATCH;
    }
done:
    free(p);
    *status = st;
    return rc;
}

/* ---- statistics accessors -------------------------------------------- */

int64_t cf_column_chunk_rows(const cf_column *c)
{
    return c->kind == CF_KIND_DATA ? c->stats.chunk_rows : 0;
}

int cf_column_set_chunk_rows(cf_column *c, int64_t rows, cf_error *err)
{
    if (!c) return CF_FAIL(err, CF_EARG, "cf_column_set_chunk_rows: NULL column");
    if (c->kind != CF_KIND_DATA) return CF_FAIL(err, CF_EKIND, "%s: not a data column", c->path);
    if (rows < 1 || rows > ((int64_t)1 << 40))
        return CF_FAIL(err, CF_EARG, "%s: rows per chunk must be in 1..2^40, got %lld", c->path, (long long)rows);
    if (!c->fresh)
        return CF_FAIL(err, CF_EARG, "%s: rows per chunk can only be chosen right after create, before any write",
                       c->path);
    cf__stats fresh;
    memset(&fresh, 0, sizeof fresh);
    int rc = cf__stats_alloc(&fresh, &c->h, rows, c->path, err);
    if (rc) return rc;
    cf__stats_free(&c->stats);
    c->stats = fresh;
    c->ext_dirty = 1;
    return 0;
}

int cf_column_set_statistics(cf_column *c, int enabled, cf_error *err)
{
    if (!c) return CF_FAIL(err, CF_EARG, "cf_column_set_statistics: NULL column");
    c->stats_off = !enabled;
    return 0;
}

int64_t cf_column_chunk_count(const cf_column *c)
{
    return c->kind == CF_KIND_DATA && c->stats.first_chunk ? c->stats.first_chunk[c->h.nfile] : 0;
}

/* x as a double no greater (down) or no smaller (up) than x. */
static double outward_i64(int64_t x, int up)
{
    double d = (double)x;
    if (up ? (long double)d < (long double)x : (long double)d > (long double)x) d = nextafter(d, up ? INFINITY : -INFINITY);
    return d;
}

static double outward_u64(uint64_t x, int up)
{
    double d = (double)x;
    if (up ? (long double)d < (long double)x : (long double)d > (long double)x) d = nextafter(d, up ? INFINITY : -INFINITY);
    return d;
}

int cf_column_chunk_stats(const cf_column *c, int64_t k, int64_t component, cf_chunk_stats *out, cf_error *err)
{
    if (!c || !out) return CF_FAIL(err, CF_EARG, "cf_column_chunk_stats: NULL argument");
    int64_t n = cf_column_chunk_count(c);
    if (k < 0 || k >= n || component < 0 || component >= c->h.nmemb)
        return CF_FAIL(err, CF_ERANGE, "%s: no chunk %lld component %lld (%lld chunks, %lld components)", c->path,
                       (long long)k, (long long)component, (long long)n, (long long)c->h.nmemb);
    /* The blob: the last whose first chunk is <= k (skips blobs without chunks). */
    int64_t lo = 0, hi = c->h.nfile;
    while (hi - lo > 1) {
        int64_t mid = lo + (hi - lo) / 2;
        if (c->stats.first_chunk[mid] <= k) lo = mid;
        else hi = mid;
    }
    int64_t b = lo, kk = k - c->stats.first_chunk[b];
    const cf__acc *a = &((cf_column *)c)->stats.acc[k * c->h.nmemb + component];
    out->blob = b;
    out->first_row = c->first_row[b] + kk * c->stats.chunk_rows;
    out->rows = c->h.rows[b] - kk * c->stats.chunk_rows;
    if (out->rows > c->stats.chunk_rows) out->rows = c->stats.chunk_rows;
    out->valid = c->stats.valid[b] && cf__column_first_touch(c, b);
    char cls = cf__acc_class(&c->h.dtype);
    out->ordered = cls != 0;
    out->count = a->count;
    out->nan_count = a->nan;
    out->sum = a->sum;
    out->min = out->max = NAN;
    if (a->count > a->nan) {
        if (cls == 'i') {
            out->min = outward_i64(a->v.i.min, 0);
            out->max = outward_i64(a->v.i.max, 1);
        } else if (cls == 'u') {
            out->min = outward_u64(a->v.u.min, 0);
            out->max = outward_u64(a->v.u.max, 1);
        } else if (cls == 'f') {
            out->min = a->v.f.min;
            out->max = a->v.f.max;
        }
    }
    return 0;
}
