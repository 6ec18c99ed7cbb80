/* file_attrs.c - the attributes of every column of a File in one call
 * (cf_file_column_attrs).
 *
 * A column's attributes are its three attribute files merged (legacy
 * `attr`, then `attr-v2`, then `colfile-attrs`; docs/format.md 7.5).  Where
 * the File's catalog proves those files current (catalog.c) their bytes come
 * from it; every other column, and every column whose cached bytes do not
 * parse, is read from its files exactly as cf_column_open reads them, so
 * the result is what cf_column_attr_get gives column by column.
 *
 * Why fewer stamps than cf_column_open checks suffice: the attribute values
 * are a function of the bytes of the three attribute files alone.  The
 * listing is taken from the catalog only when every directory stamp
 * matches (the rule of cf_file_list), and that includes each column's own
 * directory, whose unchanged stamp proves that a file recorded absent is
 * still absent; each file recorded present is then checked by its own
 * stamp.  The header, `colfile-v1`, an older `colfile-stats-v1` and
 * `colfile-torn` change nothing an attribute read returns, so their stamps
 * are not taken.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attrs.h"
#include "catalog.h"
#include "column.h"
#include "error.h"
#include "file.h"
#include "fsutil.h"
#include "names.h"

#define TOKENS_KEPT 16

/* A growing byte area. */
typedef struct heap {
    unsigned char *p;
    size_t len, cap;
} heap;

/* The packed result as it is built: the two tables and two heaps, text
 * (names, tokens) and data; offsets are into their heap until finish()
 * makes them absolute. */
typedef struct packer {
    uint64_t *cols;  /* 4 per column */
    size_t ncols, capcols;
    uint64_t *attrs; /* 7 per attribute */
    size_t nattrs, capattrs;
    heap text, data;
    int failed;
    /* dtype tokens already in the heap (a few: most Files use a handful),
     * stored once so that readers can tell them apart by offset */
    char tokens[TOKENS_KEPT][CF_DTYPE_MAX];
    uint64_t token_at[TOKENS_KEPT];
    int ntokens;
} packer;

#define COL_WORDS 4
#define ATTR_WORDS 7

static int grow(void **p, size_t *cap, size_t need, size_t unit)
{
    if (need <= *cap) return 0;
    size_t n = *cap ? *cap : 256;
    while (n < need) n *= 2;
    void *q = realloc(*p, n * unit);
    if (!q) return -1;
    *p = q;
    *cap = n;
    return 0;
}

/* Append n bytes and a NUL to heap h; the offset of the bytes in it. */
static uint64_t put_bytes(packer *k, heap *h, const void *b, size_t n)
{
    if (k->failed || grow((void **)&h->p, &h->cap, h->len + n + 1, 1)) {
        k->failed = 1;
        return 0;
    }
    uint64_t at = (uint64_t)h->len;
    if (n) memcpy(h->p + h->len, b, n);
    h->p[h->len + n] = 0;
    h->len += n + 1;
    return at;
}

/* The heap offset of dtype token t, stored once while fewer than
 * TOKENS_KEPT distinct tokens were seen. */
static uint64_t put_token(packer *k, const char *t)
{
    for (int i = 0; i < k->ntokens; i++)
        if (strcmp(k->tokens[i], t) == 0) return k->token_at[i];
    uint64_t at = put_bytes(k, &k->text, t, strlen(t));
    if (k->ntokens < TOKENS_KEPT && !k->failed) {
        snprintf(k->tokens[k->ntokens], CF_DTYPE_MAX, "%s", t);
        k->token_at[k->ntokens++] = at;
    }
    return at;
}

static void put_column(packer *k, const char *name, const cf__attrset *s)
{
    if (k->failed || grow((void **)&k->cols, &k->capcols, (k->ncols + 1) * COL_WORDS, sizeof *k->cols) ||
        grow((void **)&k->attrs, &k->capattrs, (k->nattrs + s->count) * ATTR_WORDS, sizeof *k->attrs)) {
        k->failed = 1;
        return;
    }
    size_t nl = strlen(name);
    uint64_t *c = k->cols + k->ncols * COL_WORDS;
    c[0] = put_bytes(k, &k->text, name, nl);
    c[1] = (uint64_t)nl;
    c[2] = (uint64_t)k->nattrs;
    c[3] = (uint64_t)s->count;
    k->ncols++;
    for (size_t i = 0; i < s->count; i++) {
        const cf__attr *a = &s->items[i];
        uint64_t *r = k->attrs + (k->nattrs + i) * ATTR_WORDS;
        size_t al = strlen(a->name);
        size_t bytes = (size_t)a->nmemb * (size_t)a->type.width;
        r[0] = put_bytes(k, &k->text, a->name, al);
        r[1] = (uint64_t)al;
        r[2] = put_token(k, a->dtype);
        r[3] = (uint64_t)strlen(a->dtype);
        r[4] = (uint64_t)a->nmemb;
        r[5] = put_bytes(k, &k->data, a->data, bytes);
        r[6] = (uint64_t)bytes;
    }
    k->nattrs += s->count;
}

/* The attributes of column `name` from its files, as cf_column_open reads
 * them (the same link checks, cf__column_load_attrs).  *gone is set when
 * the column's directory no longer exists (removed since the listing). */
static int read_files(cf_file *f, const char *name, cf__attrset *out, int *gone, cf_error *err)
{
    cf_column *c = NULL;
    *gone = 0;
    int rc = cf__column_new_for(&c, f, name, err);
    if (rc) return rc;
    if (!cf__is_dir(cf_column_path(c))) {
        *gone = 1;
        goto done;
    }
    if ((rc = (f->writable ? cf__name_confine : cf__name_confine_own)(f->path, name, err))) goto done;
    if ((rc = cf__column_load_attrs(c, err))) goto done;
    /* hand the merged set over */
    cf__column_take_attrs(c, out);
done:
    cf__column_free(c);
    return rc;
}

/* The attributes of an entry the catalog proved current, merged in the
 * order of cf__column_load_attrs.  Nonzero when something does not parse
 * or cannot be read: the caller then reads the files, for their error. */
static int from_catalog(cf_file *f, const cf__catalog_col_attrs *e, cf__attrset *out)
{
    cf__attrset v1;
    cf__attrset_init(&v1);
    int rc = 0;
    for (int s = 0; s < CF__ATTR_NFILES && rc == 0; s++) {
        const cf__catalog_file *cf = &e->files[s];
        if (!cf->present) continue;
        const char *text = cf->data;
        size_t len = cf->len;
        char *owned = NULL;
        if (!cf->inline_bytes) {
            /* too large to be kept: read from the column directory */
            char *dir = cf__path_join(f->path, e->name);
            char *p = dir ? cf__path_join(dir, cf__attr_files[s]) : NULL;
            free(dir);
            rc = p ? cf__read_file(p, &owned, &len, NULL) : CF_ENOMEM;
            free(p);
            if (rc) break;
            text = owned;
        }
        rc = cf__attrs_merge(s, text, len, e->name, &v1, out, NULL);
        free(owned);
    }
    cf__attrset_free(&v1);
    return rc;
}

/* One column into the packer: from the catalog entry e when given and
 * usable, else from its files. */
static int add_column(cf_file *f, packer *k, const char *name, const cf__catalog_col_attrs *e, cf_error *err)
{
    cf__attrset s;
    cf__attrset_init(&s);
    int rc = 0, gone = 0;
    if (!e || !e->valid || from_catalog(f, e, &s) != 0) {
        cf__attrset_free(&s);
        cf__attrset_init(&s);
        rc = read_files(f, name, &s, &gone, err);
    }
    if (rc == 0 && !gone) put_column(k, name, &s);
    cf__attrset_free(&s);
    return rc;
}

/* The final buffer: header, tables with absolute offsets, text heap, data
 * heap. */
static int finish(packer *k, void **buf, size_t *len, const char *path, cf_error *err)
{
    size_t head = 4 * sizeof(uint64_t);
    size_t tables = (k->ncols * COL_WORDS + k->nattrs * ATTR_WORDS) * sizeof(uint64_t);
    size_t total = head + tables + k->text.len + k->data.len;
    uint64_t *out = malloc(total);
    if (!out) return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", path);
    uint64_t base = (uint64_t)(head + tables), dbase = base + (uint64_t)k->text.len;
    out[0] = (uint64_t)k->ncols;
    out[1] = (uint64_t)k->nattrs;
    out[2] = base;
    out[3] = dbase;
    uint64_t *c = out + 4, *a = c + k->ncols * COL_WORDS;
    for (size_t i = 0; i < k->ncols; i++) {
        const uint64_t *src = k->cols + i * COL_WORDS;
        c[i * COL_WORDS + 0] = src[0] + base;
        c[i * COL_WORDS + 1] = src[1];
        c[i * COL_WORDS + 2] = src[2];
        c[i * COL_WORDS + 3] = src[3];
    }
    for (size_t i = 0; i < k->nattrs; i++) {
        const uint64_t *src = k->attrs + i * ATTR_WORDS;
        uint64_t *r = a + i * ATTR_WORDS;
        r[0] = src[0] + base;
        r[1] = src[1];
        r[2] = src[2] + base;
        r[3] = src[3];
        r[4] = src[4];
        r[5] = src[5] + dbase;
        r[6] = src[6];
    }
    if (k->text.len) memcpy((unsigned char *)out + base, k->text.p, k->text.len);
    if (k->data.len) memcpy((unsigned char *)out + dbase, k->data.p, k->data.len);
    *buf = out;
    *len = total;
    return 0;
}

int cf_file_column_attrs(cf_file *f, void **buf, size_t *len, cf_error *err)
{
    if (!f || !buf || !len) return CF_FAIL(err, CF_EARG, "cf_file_column_attrs: NULL argument");
    packer k;
    memset(&k, 0, sizeof k);
    cf__catalog_col_attrs *entries = NULL;
    size_t nentries = 0;
    char **names = NULL;
    int64_t nnames = 0;
    int rc = 0;
    /* the catalog under the rule cf_column_open follows: read-only Files */
    int cached = 0;
    if (!f->writable && f->catalog) {
        cached = cf__catalog_attrs(f->catalog, f->path, &entries, &nentries);
        if (cached < 0) {
            rc = CF_FAIL(err, cached, "%s: out of memory", f->path);
            goto done;
        }
    }
    if (cached) {
        for (size_t i = 0; i < nentries && rc == 0 && !k.failed; i++)
            rc = add_column(f, &k, entries[i].name, &entries[i], err);
    } else {
        if ((rc = cf_file_list(f, &names, &nnames, err))) goto done;
        for (int64_t i = 0; i < nnames && rc == 0 && !k.failed; i++) rc = add_column(f, &k, names[i], NULL, err);
    }
    if (rc) goto done;
    if (k.failed) {
        rc = CF_FAIL(err, CF_ENOMEM, "%s: out of memory", f->path);
        goto done;
    }
    rc = finish(&k, buf, len, f->path, err);
done:
    free(entries);
    cf_names_free(names, nnames);
    free(k.cols);
    free(k.attrs);
    free(k.text.p);
    free(k.data.p);
    return rc;
}
