/* column_pending.c - moving uncommitted write state between handles.
 *
 * Several handles (one per MPI rank, say) may write disjoint rows of one
 * column.  Each keeps, per blob, how much its writes added to the bigfile
 * byte sum and the CRC32C of the byte ranges it wrote.  One handle collects
 * the others' state and commits the header once: the parallel layers only
 * move these bytes, the arithmetic stays here.
 *
 * Wire format (little-endian, all fields fixed width):
 *   "CFP1", int64 nfile, int64 entries,
 *   entries x { int64 blob, uint32 sum_delta, uint8 overflow, int64 nseg,
 *               nseg x { int64 offset, int64 length, uint32 crc } }
 */
#include <stdlib.h>
#include <string.h>

#include "column.h"
#include "error.h"

typedef struct {
    unsigned char *p;
    size_t len, cap;
} out_buf;

static int put(out_buf *o, const void *v, size_t n)
{
    if (o->len + n > o->cap) {
        size_t cap = o->cap ? o->cap * 2 : 256;
        while (cap < o->len + n) cap *= 2;
        unsigned char *q = realloc(o->p, cap);
        if (!q) return -1;
        o->p = q;
        o->cap = cap;
    }
    memcpy(o->p + o->len, v, n);
    o->len += n;
    return 0;
}

static int put_u64(out_buf *o, uint64_t v)
{
    unsigned char b[8];
    for (int i = 0; i < 8; i++) b[i] = (unsigned char)(v >> (8 * i));
    return put(o, b, 8);
}

static int put_u32(out_buf *o, uint32_t v)
{
    unsigned char b[4];
    for (int i = 0; i < 4; i++) b[i] = (unsigned char)(v >> (8 * i));
    return put(o, b, 4);
}

static int blob_touched(const cf_column *c, int64_t i)
{
    const cf__blob_writes *w = c->writes ? &c->writes[i] : NULL;
    return c->h.sums[i] != c->committed_sums[i] || (w && (w->count || w->overflow));
}

int cf_column_pending_export(cf_column *c, void **buf, size_t *len, cf_error *err)
{
    if (!c || !buf || !len) return CF_FAIL(err, CF_EARG, "cf_column_pending_export: NULL argument");
    if (c->kind != CF_KIND_DATA) return CF_FAIL(err, CF_EKIND, "%s: not a data column", c->path);
    out_buf o = { NULL, 0, 0 };
    int64_t entries = 0;
    for (int64_t i = 0; i < c->h.nfile; i++) entries += blob_touched(c, i);
    int bad = put(&o, "CFP1", 4) || put_u64(&o, (uint64_t)c->h.nfile) || put_u64(&o, (uint64_t)entries);
    for (int64_t i = 0; i < c->h.nfile && !bad; i++) {
        if (!blob_touched(c, i)) continue;
        const cf__blob_writes *w = c->writes ? &c->writes[i] : NULL;
        int64_t nseg = w ? w->count : 0;
        unsigned char overflow = w ? (unsigned char)w->overflow : 0;
        bad = put_u64(&o, (uint64_t)i) || put_u32(&o, c->h.sums[i] - c->committed_sums[i]) ||
              put(&o, &overflow, 1) || put_u64(&o, (uint64_t)nseg);
        for (int64_t k = 0; k < nseg && !bad; k++)
            bad = put_u64(&o, (uint64_t)w->segments[k].offset) || put_u64(&o, (uint64_t)w->segments[k].length) ||
                  put_u32(&o, w->segments[k].crc);
    }
    if (bad) {
        free(o.p);
        return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", c->path);
    }
    /* The state now travels in the buffer: this handle is clean. */
    if (c->h.nfile) memcpy(c->h.sums, c->committed_sums, (size_t)c->h.nfile * sizeof *c->h.sums);
    if (c->writes) {
        for (int64_t i = 0; i < c->h.nfile; i++) free(c->writes[i].segments);
        free(c->writes);
        c->writes = NULL;
    }
    c->header_dirty = 0;
    c->ext_dirty = 0;
    *buf = o.p;
    *len = o.len;
    return 0;
}

typedef struct {
    const unsigned char *p, *end;
} in_buf;

static int get_u64(in_buf *in, uint64_t *v)
{
    if (in->end - in->p < 8) return -1;
    uint64_t x = 0;
    for (int i = 0; i < 8; i++) x |= (uint64_t)in->p[i] << (8 * i);
    in->p += 8;
    *v = x;
    return 0;
}

static int get_u32(in_buf *in, uint32_t *v)
{
    if (in->end - in->p < 4) return -1;
    uint32_t x = 0;
    for (int i = 0; i < 4; i++) x |= (uint32_t)in->p[i] << (8 * i);
    in->p += 4;
    *v = x;
    return 0;
}

int cf_column_pending_merge(cf_column *c, const void *buf, size_t len, cf_error *err)
{
    if (!c || (!buf && len)) return CF_FAIL(err, CF_EARG, "cf_column_pending_merge: NULL argument");
    if (c->kind != CF_KIND_DATA) return CF_FAIL(err, CF_EKIND, "%s: not a data column", c->path);
    if (!c->writable) return CF_FAIL(err, CF_EREADONLY, "%s: column is open read-only", c->path);
    in_buf in = { buf, (const unsigned char *)buf + len };
    uint64_t nfile, entries;
    if (len < 4 || memcmp(buf, "CFP1", 4) != 0)
        return CF_FAIL(err, CF_EFORMAT, "%s: pending write state has a bad signature", c->path);
    in.p += 4;
    if (get_u64(&in, &nfile) || get_u64(&in, &entries))
        return CF_FAIL(err, CF_EFORMAT, "%s: pending write state is truncated", c->path);
    if (nfile != (uint64_t)c->h.nfile)
        return CF_FAIL(err, CF_EARG, "%s: pending write state is for %llu blobs, the column has %lld", c->path,
                       (unsigned long long)nfile, (long long)c->h.nfile);
    /* Validate everything before changing anything. */
    in_buf scan = in;
    for (uint64_t e = 0; e < entries; e++) {
        uint64_t blob, nseg;
        uint32_t delta;
        if (get_u64(&scan, &blob) || get_u32(&scan, &delta) || scan.p >= scan.end || (scan.p++, 0) ||
            get_u64(&scan, &nseg))
            return CF_FAIL(err, CF_EFORMAT, "%s: pending write state is truncated", c->path);
        int64_t bytes = blob < nfile ? c->h.rows[blob] * c->rowbytes : 0;
        if (blob >= nfile || nseg > (uint64_t)(scan.end - scan.p) / 20)
            return CF_FAIL(err, CF_EFORMAT, "%s: pending write state is damaged", c->path);
        for (uint64_t k = 0; k < nseg; k++) {
            uint64_t off, length;
            uint32_t crc;
            get_u64(&scan, &off);
            get_u64(&scan, &length);
            get_u32(&scan, &crc);
            if (off > (uint64_t)bytes || length > (uint64_t)bytes - off)
                return CF_FAIL(err, CF_EFORMAT, "%s: pending write state names bytes outside blob %llu",
                               c->path, (unsigned long long)blob);
        }
    }
    if (scan.p != scan.end)
        return CF_FAIL(err, CF_EFORMAT, "%s: pending write state has trailing bytes", c->path);
    int rc;
    for (uint64_t e = 0; e < entries; e++) {
        uint64_t blob, nseg;
        uint32_t delta;
        get_u64(&in, &blob);
        get_u32(&in, &delta);
        unsigned char overflow = *in.p++;
        get_u64(&in, &nseg);
        c->h.sums[blob] += delta;
        c->header_dirty = 1;
        c->ext_dirty = 1;
        if (overflow) {
            /* Scattered writes elsewhere: this blob's CRC must be recomputed.
             * (An empty segment allocates the bookkeeping and changes nothing.) */
            if ((rc = cf__column_note_segment(c, (int64_t)blob, 0, 0, 0, err))) return rc;
            cf__blob_writes *w = &c->writes[blob];
            free(w->segments);
            w->segments = NULL;
            w->count = w->capacity = 0;
            w->overflow = 1;
        }
        for (uint64_t k = 0; k < nseg; k++) {
            uint64_t off, length;
            uint32_t crc;
            get_u64(&in, &off);
            get_u64(&in, &length);
            get_u32(&in, &crc);
            if ((rc = cf__column_note_segment(c, (int64_t)blob, (int64_t)off, (int64_t)length, crc, err))) return rc;
        }
    }
    return 0;
}

void cf_free(void *p)
{
    free(p);
}
