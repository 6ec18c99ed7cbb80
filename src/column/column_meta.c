/* column_meta.c - a column's metadata as bytes, so that one process reads
 * the metadata files and the others build their handles from a copy.
 *
 * This keeps the metadata load of a parallel open independent of the
 * number of processes: one reads header, attribute and extension files,
 * the rest open only the blobs they touch.  Wire format (wire.h):
 *   "CFM1", u64 kind, bytes name, bytes header text, bytes colfile-v1
 *   text (its CRC part), bytes statistics text, bytes attributes (attr-v2
 *   grammar, every attribute), bytes legacy attr, bytes staging directory
 *   name (empty once the column is published), u64 committed blobs, u64
 *   device and u64 inode of the column directory the exporter holds (0 0:
 *   none), which the other processes must find at the column's name.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "catalog.h"
#include "column.h"
#include "column_index.h"
#include "column_handle.h"
#include "column_version.h"
#include "error.h"
#include "ext.h"
#include "file.h"
#include "fsutil.h"
#include "wire.h"

int cf_column_export_meta(cf_column *c, void **buf, size_t *len, cf_error *err)
{
    if (!c || !buf || !len) return CF_FAIL(err, CF_EARG, "cf_column_export_meta: NULL argument");
    c->commit.shared = 1; /* replicas built from the snapshot write its blobs too */
    int rc = cf__column_settle(c, err);
    if (rc == 0) rc = cf__column_settle_attrs(c, err);
    if (rc) return rc;
    char *header = NULL, *ext = NULL, *stats = NULL, *attrs = NULL;
    unsigned char *v1 = NULL;
    size_t hl = 0, xl = 0, sl = 0, al = 0, vl = 0;
    if (c->kind != CF_KIND_ATTRS_ONLY) {
        if ((rc = cf__header_format(&c->h, &header, &hl, c->path, err))) goto done;
        if ((rc = cf__ext_format(&c->h, c->sums.crc, c->sums.crc_known, &ext, &xl, c->path, err))) goto done;
    }
    /* A read-only handle whose statistics text is current and not parsed
     * yet sends none: each replica reads colfile-v1 when it first needs
     * them (most readers never do), so that a snapshot broadcast to every
     * rank costs per blob, not per chunk (docs/scale.md).  The stamp lets
     * the replica check that it reads the file this handle trusted. */
    int fetch = c->kind == CF_KIND_DATA && c->stat.stats_pending &&
                ((c->stat.stats_fetch && c->stat.fetch_stamp.known) ||
                 (!c->writable && c->stat.stats_text && c->ext.ext_state == CF_EXT_CURRENT &&
                  c->ext.xstamp.known && !c->ext.deferred));
    cf__hstamp fstamp = c->stat.stats_fetch ? c->stat.fetch_stamp : c->ext.xstamp;
    if (fetch) {
        sl = 0;
    } else if (c->kind == CF_KIND_DATA && c->stat.stats_pending) {
        /* not parsed yet: the text as read (the replica parses it alike) */
        if (c->stat.stats_text && !(stats = malloc(c->stat.stats_len + 1))) {
            rc = CF_FAIL(err, CF_ENOMEM, "%s: out of memory", c->path);
            goto done;
        }
        if (stats) memcpy(stats, c->stat.stats_text, c->stat.stats_len);
        sl = c->stat.stats_text ? c->stat.stats_len : 0;
    } else if (c->kind == CF_KIND_DATA && !c->sums.writes && cf__column_index_current(c)) {
        /* what the chunk index holds stays there: replicas read it (they get
         * the header's stamp below), the snapshot stays small */
        if ((rc = cf__column_stats_section(c, &stats, &sl, err))) goto done;
    } else if (c->kind == CF_KIND_DATA &&
               (rc = cf__stats_format(&c->stat.stats, &c->h, &stats, &sl, c->path, err))) {
        goto done;
    }
    if ((rc = cf__attrset_format_v2(&c->attr.attrs, NULL, &attrs, &al, err))) goto done;
    if (c->attr.attrs_v1.count && (rc = cf__attrset_format_v1(&c->attr.attrs_v1, NULL, &v1, &vl, err))) goto done;
    cf__wire_out o = { NULL, 0, 0, 0 };
    cf__wire_put(&o, "CFM1", 4);
    cf__wire_put_u64(&o, (uint64_t)c->kind);
    cf__wire_put_bytes(&o, c->name, strlen(c->name));
    cf__wire_put_bytes(&o, header, hl);
    cf__wire_put_bytes(&o, ext, xl);
    cf__wire_put_bytes(&o, stats, sl);
    cf__wire_put_bytes(&o, attrs, al);
    cf__wire_put_bytes(&o, v1, vl);
    const char *stage = cf__column_stage_leaf(c);
    cf__wire_put_bytes(&o, stage, strlen(stage));
    cf__wire_put_u64(&o, (uint64_t)c->commit.committed_nfile);
    uint64_t id[2];
    cf__version_id(c, id);
    cf__wire_put_u64(&o, id[0]);
    cf__wire_put_u64(&o, id[1]);
    /* the header's stamp, which binds the chunk index to it (format.md 8.6) */
    cf__wire_put_u64(&o, (uint64_t)c->ver.hstamp.known);
    cf__wire_put_u64(&o, (uint64_t)c->ver.hstamp.sec);
    cf__wire_put_u64(&o, (uint64_t)c->ver.hstamp.nsec);
    if (fetch) {
        cf__wire_put_u64(&o, 1);
        cf__wire_put_u64(&o, (uint64_t)fstamp.sec);
        cf__wire_put_u64(&o, (uint64_t)fstamp.nsec);
    }
    /* the chunk size, which a text of head lines alone does not carry to
     * a reader when the chunks are many (format.md 8.4) */
    if (c->kind == CF_KIND_DATA && c->writable && !c->stat.stats_pending && c->stat.stats.chunk_rows > 0) {
        cf__wire_put_u64(&o, 2);
        cf__wire_put_u64(&o, (uint64_t)c->stat.stats.chunk_rows);
    }
    if (o.failed) {
        free(o.p);
        rc = CF_FAIL(err, CF_ENOMEM, "%s: out of memory", c->path);
        goto done;
    }
    *buf = o.p;
    *len = o.len;
done:
    free(header);
    free(ext);
    free(stats);
    free(attrs);
    free(v1);
    return rc;
}

/* The optional fields at a snapshot's end, each after its tag: 1, where
 * a read-only exporter's statistics are to be fetched (the stamp of the
 * colfile-v1 it trusted); 2, a writable exporter's rows per chunk.  0 if
 * they are damaged. */
static int snapshot_tail(cf__wire_in *in, uint64_t kind, size_t sl, uint64_t *fetch, uint64_t *fsec,
                         uint64_t *fnsec, uint64_t *chunk_rows)
{
    while (in->p != in->end) {
        uint64_t tag;
        if (cf__wire_get_u64(in, &tag) || kind != CF_KIND_DATA) return 0;
        if (tag == 1 && !*fetch && !*chunk_rows) {
            if (cf__wire_get_u64(in, fsec) || cf__wire_get_u64(in, fnsec) || *fsec > INT64_MAX ||
                *fnsec >= 1000000000u || sl)
                return 0;
            *fetch = 1;
        } else if (tag == 2 && !*chunk_rows) {
            if (cf__wire_get_u64(in, chunk_rows) || *chunk_rows < 1 || *chunk_rows > ((uint64_t)1 << 40)) return 0;
        } else {
            return 0;
        }
    }
    return 1;
}

int cf_column_open_meta(cf_column **out, cf_file *f, const void *buf, size_t len, cf_error *err)
{
    if (!out || !f || (!buf && len)) return CF_FAIL(err, CF_EARG, "cf_column_open_meta: NULL argument");
    cf__wire_in in = { buf, (const unsigned char *)buf + len };
    uint64_t kind;
    const unsigned char *name, *header, *ext, *stats, *attrs, *v1, *stage;
    size_t nl, hl, xl, sl, al, vl, tl;
    uint64_t committed, id[2], stamp[3], fetch = 0, fsec = 0, fnsec = 0, chunk_rows = 0;
    if (len < 4 || memcmp(buf, "CFM1", 4) != 0)
        return CF_FAIL(err, CF_EFORMAT, "%s: column metadata snapshot has a bad signature", f->path);
    in.p += 4;
    if (cf__wire_get_u64(&in, &kind) || cf__wire_get_bytes(&in, &name, &nl) ||
        cf__wire_get_bytes(&in, &header, &hl) || cf__wire_get_bytes(&in, &ext, &xl) ||
        cf__wire_get_bytes(&in, &stats, &sl) ||
        cf__wire_get_bytes(&in, &attrs, &al) || cf__wire_get_bytes(&in, &v1, &vl) ||
        cf__wire_get_bytes(&in, &stage, &tl) || cf__wire_get_u64(&in, &committed) ||
        cf__wire_get_u64(&in, &id[0]) || cf__wire_get_u64(&in, &id[1]) || cf__wire_get_u64(&in, &stamp[0]) ||
        cf__wire_get_u64(&in, &stamp[1]) || cf__wire_get_u64(&in, &stamp[2]) ||
        !snapshot_tail(&in, kind, sl, &fetch, &fsec, &fnsec, &chunk_rows) ||
        in.p != in.end ||
        kind > CF_KIND_ATTRS_ONLY || nl == 0 || memchr(name, 0, nl))
        return CF_FAIL(err, CF_EFORMAT, "%s: column metadata snapshot is damaged", f->path);
    char *cname = malloc(nl + 1);
    if (!cname) return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", f->path);
    memcpy(cname, name, nl);
    cname[nl] = '\0';
    cf_column *c = NULL;
    int rc = cf__column_new_for(&c, f, cname, err);
    free(cname);
    if (rc) return rc;
    if (kind == CF_KIND_ATTRS_ONLY) {
        cf__column_set_attrs_only(c);
    } else {
        if ((rc = cf__column_apply_header(c, (const char *)header, hl, c->path, err))) goto fail;
        c->ver.hstamp = (cf__hstamp){ stamp[0] == 1, (int64_t)stamp[1], (int64_t)stamp[2] };
        /* the exporter sends colfile-v1 without its statistics, which
         * come apart (they may be pending: unparsed text), and only what
         * it trusts */
        int legacy;
        c->ext.ext_snapshot = 1;
        if ((rc = cf__column_apply_ext(c, xl ? (const char *)ext : NULL, xl, c->path, &legacy, err))) goto fail;
        if (legacy && (rc = cf__column_apply_stats(c, sl ? (const char *)stats : NULL, sl, c->path, err)))
            goto fail;
        /* the exporter's chunks, where the text could not say them */
        if (chunk_rows && c->kind == CF_KIND_DATA && !c->stat.stats_pending &&
            c->stat.stats.chunk_rows != (int64_t)chunk_rows) {
            cf__stats fresh;
            memset(&fresh, 0, sizeof fresh);
            if ((rc = cf__stats_alloc(&fresh, &c->h, (int64_t)chunk_rows, c->path, err))) goto fail;
            cf__stats_free(&c->stat.stats);
            c->stat.stats = fresh;
        }
        c->commit.committed_nfile = committed < (uint64_t)c->h.nfile ? (int64_t)committed : c->h.nfile;
        if (fetch && c->kind == CF_KIND_DATA) {
            c->stat.stats_fetch = 1;
            c->stat.fetch_stamp = (cf__hstamp){ 1, (int64_t)fsec, (int64_t)fnsec };
        }
        if (tl && (rc = cf__column_set_stage(c, (const char *)stage, tl, err))) goto fail;
    }
    if ((rc = cf__attrset_parse_v2(&c->attr.attrs, (const char *)attrs, al, c->attr_dir, err))) goto fail;
    if (vl && (rc = cf__attrset_parse_v1(&c->attr.attrs_v1, v1, vl, c->attr_dir, err))) goto fail;
    /* the version the exporter read, or none at all: another process may
     * have replaced it since */
    if (kind != CF_KIND_ATTRS_ONLY && !tl && (id[0] || id[1]) && (rc = cf__version_hold_as(c, id, err)))
        goto fail;
    c->replica = 1;
    /* A writable replica of a read-only exporter (under MPI, a rank other
     * than 0 of a writable File reads the metadata on a read-only handle)
     * writes, and writes need the column's own chunks at once: left
     * pending, the default CHUNK would stand and its state would not
     * merge into rank 0's handle. */
    if (fetch && c->kind == CF_KIND_DATA && c->writable) {
        c->stat.stats_pending = 1;
        if ((rc = cf__column_stats_need(c, err))) goto fail;
    }
    *out = c;
    return 0;
fail:
    cf__column_free(c);
    return rc;
}

/* A read-only column's metadata files that its open left for later, as the
 * File catalog recorded them, not checked yet: most opens only read rows.
 * colfile-v1 (and colfile-stats-v1 when it has no statistics) are applied
 * by cf__column_settle, the attribute files by cf__column_settle_attrs. */
enum { DEFERRED_EXT, DEFERRED_STATS, DEFERRED_ATTR_V1, DEFERRED_ATTR_V2, DEFERRED_ATTRS_EXT, DEFERRED_N };

typedef struct cf__deferred {
    cf__catalog_file files[DEFERRED_N]; /* data point into `bytes` */
    cf__stamp dir;                      /* the column directory's: keeps absent absent */
    int ext_pending, attrs_pending;
    char bytes[];
} cf__deferred;

static const int deferred_slot[DEFERRED_N] = {
    CF__CAT_EXT, CF__CAT_STATS, CF__CAT_ATTR_V1, CF__CAT_ATTR_V2, CF__CAT_ATTRS_EXT,
};
/* The file of deferred slot k; the attribute files in cf__attr_files'
 * order, as cf__column_settle_attrs walks them. */
static const char *deferred_leaf(int k)
{
    if (k >= DEFERRED_ATTR_V1) return cf__attr_files[k - DEFERRED_ATTR_V1];
    return k == DEFERRED_EXT ? CF__EXT_NAME : CF__STATS_NAME;
}

int cf__column_apply_cached(cf_column *c, const cf__catalog_file *files, const cf__stamp *dir,
                            cf_error *err)
{
    /* The header now (its stamp was checked by the catalog); the other
     * files when first needed.  What a header without the rest gives is
     * what cf_column_open gives before it reads them. */
    const cf__catalog_file *h = &files[CF__CAT_HEADER];
    char *owned = NULL;
    const char *text = h->data;
    size_t len = h->len;
    int rc = 0;
    if (!h->present) return CF_FAIL(err, CF_ENOENT, "%s: no header", c->path);
    /* the header's stamp, which colfile-v1 must have recorded (8.1) */
    c->ver.hstamp = (cf__hstamp){ 1, h->st.msec, h->st.mnsec };
    if (!h->inline_bytes) {
        struct stat st;
        if ((rc = cf__version_read_stat(c, "header", &owned, &len, &st, err))) return rc;
        cf__hstamp_of(&c->ver.hstamp, &st);
        text = owned;
    }
    rc = cf__column_apply_header(c, text, len, c->path, err);
    free(owned);
    if (rc) return rc;
    c->commit.committed_nfile = c->h.nfile;
    size_t extra = 0;
    for (int k = 0; k < DEFERRED_N; k++)
        if (files[deferred_slot[k]].inline_bytes) extra += files[deferred_slot[k]].len + 1;
    cf__deferred *d = malloc(sizeof *d + extra);
    if (!d) return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", c->path);
    d->dir = *dir;
    d->ext_pending = d->attrs_pending = 1;
    char *at = d->bytes;
    for (int k = 0; k < DEFERRED_N; k++) {
        d->files[k] = files[deferred_slot[k]];
        if (!d->files[k].inline_bytes) continue;
        memcpy(at, d->files[k].data, d->files[k].len + 1);
        d->files[k].data = at;
        at += d->files[k].len + 1;
    }
    c->ext.deferred = d;
    return 0;
}

/* The text of the deferred file k as cf_column_open would read it now:
 * the catalog's bytes while its stamps hold, else the file (absent: none).
 * *dir_still caches the directory's stamp check (-1: not yet).  With
 * `strict`, a file that is there but cannot be read is an error (the
 * attribute files, as cf__column_load_attrs has it); otherwise an
 * attribute file counts as absent.  colfile-v1 and the statistics count
 * as absent only when they are (unknown, as at open): one that cannot be
 * read is an error, as at open. */
static int deferred_text(cf_column *c, const cf__deferred *d, int k, int *dir_still, int strict,
                         const char **text, size_t *len, char **owned, char **path, cf__hstamp *mtime,
                         cf_error *err)
{
    const cf__catalog_file *f = &d->files[k];
    struct stat st;
    if (mtime) mtime->known = 0;
    *text = NULL;
    *len = 0;
    *owned = NULL;
    char *p = cf__path_join(c->path, deferred_leaf(k));
    if (!p) return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", c->path);
    /* in the directory the handle holds: the version it opened */
    int fresh, rc = 0;
    if (f->present) {
        fresh = cf__version_still(c, deferred_leaf(k), &f->st);
    } else {
        if (*dir_still < 0) *dir_still = cf__version_still(c, "", &d->dir);
        fresh = *dir_still;
    }
    if (fresh && (!f->present || f->inline_bytes)) {
        *text = f->present ? f->data : NULL;
        *len = f->len;
        if (mtime && f->present) *mtime = (cf__hstamp){ 1, f->st.msec, f->st.mnsec };
    } else if ((rc = cf__version_read_stat(c, deferred_leaf(k), owned, len, &st,
                                           strict || k < DEFERRED_ATTR_V1 ? err : NULL)) == 0) {
        *text = *owned;
        if (mtime) cf__hstamp_of(mtime, &st);
    } else if (rc == CF_ENOENT && f->present && strict && cf__version_gone(c)) {
        /* its attributes went with the version, not out of it */
        rc = cf__version_replaced(c, err);
    } else if ((!strict && k >= DEFERRED_ATTR_V1) || rc == CF_ENOENT) {
        /* an attribute file that cannot be read is skipped here; colfile-v1
         * and the statistics are never taken for absent when they are there */
        rc = 0;
    }
    if (path && rc == 0) {
        *path = p;
    } else {
        free(p);
    }
    return rc;
}

/* The deferred struct once nothing is left in it. */
static void drop_settled(cf_column *c)
{
    cf__deferred *d = c->ext.deferred;
    if (d && !d->ext_pending && !d->attrs_pending) {
        free(d);
        c->ext.deferred = NULL;
    }
}

int cf__column_settle(cf_column *c, cf_error *err)
{
    cf__deferred *d = c->ext.deferred;
    if (!d || !d->ext_pending) return 0;
    const char *text;
    size_t len;
    char *owned = NULL;
    int dir_still = -1, legacy = 0;
    /* damaged or stale: unknown, never an error (as at open) */
    int rc;
    for (int tries = 1;; tries++) {
        rc = deferred_text(c, d, DEFERRED_EXT, &dir_still, 0, &text, &len, &owned, NULL, &c->ext.xstamp, err);
        if (rc || !cf__column_ext_wait(c, text, len, tries)) break;
        free(owned);
        owned = NULL;
    }
    if (rc == 0) rc = cf__column_apply_ext(c, text, len, c->path, &legacy, err);
    free(owned);
    owned = NULL;
    if (rc == 0 && legacy) {
        rc = deferred_text(c, d, DEFERRED_STATS, &dir_still, 0, &text, &len, &owned, NULL, NULL, err);
        if (rc == 0) rc = cf__column_apply_stats(c, text, len, c->path, err);
        free(owned);
    }
    if (rc == 0) {
        d->ext_pending = 0;
        drop_settled(c);
    }
    return rc;
}

int cf__column_settle_attrs(cf_column *c, cf_error *err)
{
    if (c->attr.attrs_unread) {
        /* opened without the catalog: the files, as a writer's open reads
         * them; a failure leaves nothing half loaded */
        int rc = cf__column_load_attrs(c, err);
        if (rc) {
            cf__attrset_free(&c->attr.attrs_v1);
            cf__attrset_free(&c->attr.attrs);
            return rc;
        }
        c->attr.attrs_unread = 0;
        return 0;
    }
    cf__deferred *d = c->ext.deferred;
    if (!d || !d->attrs_pending) return 0;
    /* the rules of cf__column_load_attrs (cf__attrs_merge) */
    cf__attrset v1, all;
    cf__attrset_init(&v1);
    cf__attrset_init(&all);
    int dir_still = -1, rc = 0;
    for (int k = 0; k < CF__ATTR_NFILES && rc == 0; k++) {
        const char *text;
        size_t len;
        char *owned = NULL, *p = NULL;
        rc = deferred_text(c, d, DEFERRED_ATTR_V1 + k, &dir_still, 1, &text, &len, &owned, &p, NULL, err);
        if (rc == 0 && text) rc = cf__attrs_merge(k, text, len, p, &v1, &all, err);
        free(owned);
        free(p);
    }
    if (rc) {
        /* tried again on the next use: the files may be mended by then */
        cf__attrset_free(&v1);
        cf__attrset_free(&all);
        return rc;
    }
    cf__attrset_free(&c->attr.attrs_v1);
    cf__attrset_free(&c->attr.attrs);
    c->attr.attrs_v1 = v1;
    c->attr.attrs = all;
    d->attrs_pending = 0;
    drop_settled(c);
    return 0;
}
