/* column_attrs.c - the attributes of a column, group or File: loading the
 * three attribute files and writing them back. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "column.h"
#include "column_handle.h"
#include "column_version.h"
#include "error.h"
#include "fsutil.h"

const char *const cf__attr_files[CF__ATTR_NFILES] = { "attr", "attr-v2", CF__ATTRS_EXT_NAME };

int cf__attrs_merge(int k, const char *text, size_t len, const char *path, cf__attrset *v1,
                    cf__attrset *all, cf_error *err)
{
    if (k != 0) return cf__attrset_parse_v2(all, text, len, path, err);
    int rc = cf__attrset_parse_v1(v1, (const unsigned char *)text, len, path, err);
    for (size_t i = 0; i < v1->count && rc == 0; i++) {
        const cf__attr *a = &v1->items[i];
        rc = cf__attrset_set(all, a->name, a->dtype, a->nmemb, a->data, err);
    }
    return rc;
}

int cf__column_load_attrs(cf_column *c, cf_error *err)
{
    int rc = 0;
    /* a missing file is an empty set */
    for (int k = 0; k < CF__ATTR_NFILES && rc == 0; k++) {
        char *p = cf__path_join(c->attr_dir, cf__attr_files[k]);
        if (!p) return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", c->attr_dir);
        char *text = NULL;
        size_t len = 0;
        /* a published column's files in the directory its handle holds */
        rc = c->ver.dirfd >= 0 ? cf__version_read(c, cf__attr_files[k], &text, &len, err)
                           : cf__read_file(p, &text, &len, err);
        if (rc == CF_ENOENT && c->ver.dirfd >= 0 && k == 1 && !c->writable && cf__version_gone(c)) {
            /* attr-v2, which every column has, went with the version */
            rc = cf__version_replaced(c, err);
        } else if (rc == CF_ENOENT) {
            rc = 0;
        } else if (rc == 0) {
            rc = cf__attrs_merge(k, text, len, p, &c->attr.attrs_v1, &c->attr.attrs, err);
        }
        free(text);
        free(p);
    }
    return rc;
}

/* bigfile 0.1.52 cannot read back an attribute with no elements, nor one
 * whose dtype token is longer than 7 characters (it keeps only 7), so those
 * live in colfile-attrs instead of attr-v2 (docs/format.md 8.2). */
static int bigfile_readable(const cf__attr *a) { return a->nmemb > 0 && strlen(a->dtype) <= 7; }
static int bigfile_unreadable(const cf__attr *a) { return !bigfile_readable(a); }

/* Write one attribute file: replaced atomically, or (private) written in
 * place in a staging directory nobody else sees yet.  Its name goes to
 * written[(*n)++] for the caller to sync. */
static int write_one(cf_column *c, const char *name, const void *data, size_t len, int durable, int private_,
                     const char **written, size_t *n, cf_error *err)
{
    int rc = private_ ? cf__write_file_private(c->attr_dir, name, data, len, err)
                      : cf__write_file_atomic(c->attr_dir, name, data, len, durable, err);
    if (rc == 0 && written) written[(*n)++] = name;
    return rc;
}

/* Write the attribute files: attr-v2, colfile-attrs when some attribute
 * needs it, the legacy attr when v1_changed.  Each file is replaced whole,
 * so a crash never tears one.  A column's attributes change under its
 * writer lock (cf__column_save_attrs), those of groups and of the File
 * under their block's (cf__attrs_block_lock). */
static int write_attr_files(cf_column *c, int v1_changed, int durable, int private_,
                            const char **written, size_t *n, cf_error *err)
{
    int rc;
    char *text = NULL;
    size_t len = 0;
    int empties = 0;
    for (size_t i = 0; i < c->attr.attrs.count; i++) empties += bigfile_unreadable(&c->attr.attrs.items[i]);

    if ((rc = cf__attrset_format_v2(&c->attr.attrs, bigfile_readable, &text, &len, err))) return rc;
    rc = write_one(c, "attr-v2", text, len, durable, private_, written, n, err);
    free(text);
    if (rc) return rc;
    if (empties) {
        if ((rc = cf__attrset_format_v2(&c->attr.attrs, bigfile_unreadable, &text, &len, err))) return rc;
        rc = write_one(c, CF__ATTRS_EXT_NAME, text, len, durable, private_, written, n, err);
        free(text);
    } else if (!private_) {
        rc = cf__remove_if_exists(c->attr_dir, CF__ATTRS_EXT_NAME, err);
    }
    if (rc || !v1_changed) return rc;
    /* A deleted attribute must not come back from the legacy file. */
    if (c->attr.attrs_v1.count == 0) return cf__remove_if_exists(c->attr_dir, "attr", err);
    unsigned char *bytes = NULL;
    if ((rc = cf__attrset_format_v1(&c->attr.attrs_v1, NULL, &bytes, &len, err))) return rc;
    rc = write_one(c, "attr", bytes, len, durable, private_, written, n, err);
    free(bytes);
    return rc;
}

int cf__column_write_staged_attrs(cf_column *c, const char **written, size_t *n, cf_error *err)
{
    /* A new column has no legacy attr file; colfile-attrs only if needed. */
    return write_attr_files(c, 0, 0, 1, written, n, err);
}

int cf__attrs_block_lock(const char *dir, int durable, int shared, cf__lock *lk, cf_error *err)
{
    char *name = cf__path_join(dir, ".");
    if (!name) return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", dir);
    int rc = 0;
    for (int attempt = 0;; attempt++) {
        if ((rc = cf__mkdirs_durable(dir, durable, err)) != 0) break;
        rc = cf__lock_take(lk, name, shared, err);
        if (rc != CF_ENOENT || attempt == 16 || cf__is_dir(dir)) break;
    }
    free(name);
    return rc;
}

/* Replace the files of an attribute block under its lock. */
static int save_block_attrs(cf_column *c, int v1_changed, cf_error *err)
{
    cf__lock lk = CF__LOCK_NONE;
    lk.off = c->commit.lock.off;
    int rc = cf__attrs_block_lock(c->attr_dir, c->durable, c->commit.nolock, &lk, err);
    if (rc) return rc;
    rc = write_attr_files(c, v1_changed, c->durable, 0, NULL, NULL, err);
    if (rc == 0 && c->durable) rc = cf__fsync_path(c->attr_dir, err);
    cf__lock_release(&lk);
    if (!lk.off) (void)cf__lock_tidy(c->attr_dir); /* no lock file left behind if no one else has it */
    return rc;
}

int cf__column_save_attrs(cf_column *c, int v1_changed, cf_error *err)
{
    int rc;
    if (!c->writable)
        return CF_FAIL(err, CF_EREADONLY, "%s: opened read-only; attributes cannot change", c->attr_dir);
    if (c->replica) return 0; /* the handle that read the files writes them */
    /* A column not yet published keeps its attributes in memory: its
     * commit writes them with the rest (cf_column_flush). */
    if (CF__STAGED(c)) return 0;
    if (c->kind == CF_KIND_ATTRS_ONLY) return save_block_attrs(c, v1_changed, err);
    /* a change like any other: the column's writer lock */
    if ((rc = cf__column_begin_change(c, err))) return rc;
    if ((rc = cf__mkdirs_durable(c->attr_dir, c->durable, err))) return rc;
    if ((rc = write_attr_files(c, v1_changed, c->durable, 0, NULL, NULL, err))) return rc;
    return c->durable ? cf__fsync_path(c->attr_dir, err) : 0;
}

int cf_column_attr_set(cf_column *c, const char *name, const char *dtype,
                       int64_t nmemb, const void *data, cf_error *err)
{
    if (!c || !name || !dtype) return CF_FAIL(err, CF_EARG, "cf_column_attr_set: NULL argument");
    if (!c->writable)
        return CF_FAIL(err, CF_EREADONLY, "%s: opened read-only; cannot set attribute '%s'", c->attr_dir, name);
    if (nmemb < 0) return CF_FAIL(err, CF_EARG, "%s: attribute '%s' with negative nmemb", c->attr_dir, name);
    if (nmemb > 0 && !data) return CF_FAIL(err, CF_EARG, "%s: attribute '%s' has no data", c->attr_dir, name);
    int rc = cf__attrset_set(&c->attr.attrs, name, dtype, nmemb, data, err);
    /* Name the directory too: the set does not know it. */
    if (rc) return cf__error_prefix(err, rc, c->attr_dir, ": ");
    /* An attribute moving to colfile-attrs must not be shadowed by an old
     * record in the legacy file when bigfile reads it. */
    int v1_changed = bigfile_unreadable(cf__attrset_find(&c->attr.attrs, name)) && cf__attrset_remove(&c->attr.attrs_v1, name);
    return cf__column_save_attrs(c, v1_changed, err);
}

int cf_column_attr_get(cf_column *c, const char *name, const char **dtype,
                       int64_t *nmemb, const void **data, cf_error *err)
{
    if (!c || !name) return CF_FAIL(err, CF_EARG, "cf_column_attr_get: NULL argument");
    int rc = cf__column_settle_attrs(c, err);
    if (rc) return rc;
    const cf__attr *a = cf__attrset_find(&c->attr.attrs, name);
    if (!a) return CF_FAIL(err, CF_ENOENT, "%s: no attribute '%s'", c->attr_dir, name);
    if (dtype) *dtype = a->dtype;
    if (nmemb) *nmemb = a->nmemb;
    if (data) *data = a->data;
    return 0;
}

int cf_column_attr_delete(cf_column *c, const char *name, cf_error *err)
{
    if (!c || !name) return CF_FAIL(err, CF_EARG, "cf_column_attr_delete: NULL argument");
    if (!c->writable)
        return CF_FAIL(err, CF_EREADONLY, "%s: opened read-only; cannot delete attribute '%s'", c->attr_dir, name);
    if (!cf__attrset_remove(&c->attr.attrs, name))
        return CF_FAIL(err, CF_ENOENT, "%s: no attribute '%s'", c->attr_dir, name);
    int v1_changed = cf__attrset_remove(&c->attr.attrs_v1, name);
    return cf__column_save_attrs(c, v1_changed, err);
}

int cf_column_attr_names(cf_column *c, char ***names, int64_t *count, cf_error *err)
{
    if (!c || !names || !count) return CF_FAIL(err, CF_EARG, "cf_column_attr_names: NULL argument");
    int rc = cf__column_settle_attrs(c, err);
    if (rc) return rc;
    char **out = calloc(c->attr.attrs.count + 1, sizeof *out);
    if (!out) return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", c->attr_dir);
    for (size_t i = 0; i < c->attr.attrs.count; i++) {
        out[i] = strdup(c->attr.attrs.items[i].name);
        if (!out[i]) {
            cf_names_free(out, (int64_t)i);
            return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", c->attr_dir);
        }
    }
    *names = out;
    *count = (int64_t)c->attr.attrs.count;
    return 0;
}

void cf__column_take_attrs(cf_column *c, cf__attrset *out)
{
    *out = c->attr.attrs;
    cf__attrset_init(&c->attr.attrs);
}
