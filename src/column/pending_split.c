/* pending_split.c - one rank's pending write state cut between the
 * committing rank and the chunk owners (pending_split.h).  It works on the
 * wire format of column_pending.c alone, copying accumulators as they
 * are, so that every part merges with cf_column_pending_merge. */
#include "pending_split.h"

#include <stdlib.h>
#include <string.h>

#include "chunk_owner.h"
#include "error.h"
#include "stats_xsum.h"
#include "wire.h"

/* What one owner gets: blob entries and chunk CRC32C pieces. */
typedef struct {
    int64_t rank, nent, npcs, blob; /* blob: of its last entry (-1: none) */
    cf__wire_out ent, pcs;
} part_t;

typedef struct {
    part_t *v;
    int64_t n, cap;
} parts_t;

/* The part of rank (created in rank order), NULL out of memory. */
static part_t *part_for(parts_t *ps, int64_t rank)
{
    int64_t lo = 0, hi = ps->n;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (ps->v[mid].rank < rank) lo = mid + 1;
        else hi = mid;
    }
    if (lo < ps->n && ps->v[lo].rank == rank) return &ps->v[lo];
    if (ps->n == ps->cap) {
        int64_t cap = ps->cap ? 2 * ps->cap : 8;
        part_t *v = realloc(ps->v, (size_t)cap * sizeof *v);
        if (!v) return NULL;
        ps->v = v;
        ps->cap = cap;
    }
    memmove(&ps->v[lo + 1], &ps->v[lo], (size_t)(ps->n - lo) * sizeof *ps->v);
    ps->n++;
    memset(&ps->v[lo], 0, sizeof *ps->v);
    ps->v[lo].rank = rank;
    ps->v[lo].blob = -1;
    return &ps->v[lo];
}

/* Start an entry of blob b in part p: no byte-sum delta, no segments,
 * then nrun (the runs follow, or UINT64_MAX: statistics lost). */
static void entry_head(part_t *p, int64_t b, uint64_t nrun)
{
    unsigned char zero = 0;
    cf__wire_put_u64(&p->ent, (uint64_t)b);
    cf__wire_put_u32(&p->ent, 0);
    cf__wire_put(&p->ent, &zero, 1);
    cf__wire_put_u64(&p->ent, 0);
    cf__wire_put_u64(&p->ent, nrun);
    p->nent++;
    p->blob = b;
}

/* The byte length of the accumulator at in (count, nan, min, max, exact
 * sum), 0 when truncated or damaged. */
static size_t acc_len(cf__wire_in in)
{
    uint64_t w[5];
    for (int i = 0; i < 5; i++)
        if (cf__wire_get_u64(&in, &w[i])) return 0;
    uint64_t nw = 1 + ((w[4] >> 16) & 0xffu);
    if (nw > CF__XSUM_WIRE_WORDS || (uint64_t)(in.end - in.p) / 8 < nw - 1) return 0;
    return (size_t)(32 + 8 * nw);
}

/* Ranks owning a chunk of blob b: [*r0, *r1). */
static void blob_owners(const int64_t *cut, int64_t nranks, int64_t first, int64_t rows, int64_t *r0, int64_t *r1)
{
    *r0 = *r1 = 0;
    if (rows < 1) return;
    *r0 = cf__owner_of_row(cut, nranks, first);
    if (*r0 < 0) return;
    for (*r1 = *r0 + 1; *r1 < nranks && cut[*r1] < first + rows; ++*r1) {}
}

/* A run in progress of the owner of chunks: its runs' bytes, their number. */
typedef struct {
    int64_t owner, nrun;
    cf__wire_out runs;
} pending_owner;

static int flush_owner(parts_t *ps, pending_owner *po, int64_t b)
{
    if (po->owner < 0 || po->nrun == 0) return 0;
    part_t *p = part_for(ps, po->owner);
    if (!p) return -1;
    entry_head(p, b, (uint64_t)po->nrun);
    cf__wire_put(&p->ent, po->runs.p, po->runs.len);
    po->runs.len = 0;
    po->nrun = 0;
    return po->runs.failed || p->ent.failed ? -1 : 0;
}

int cf__pending_split(const void *state, size_t len, int64_t nfile, const int64_t *blob_rows, int64_t nmemb,
                      const int64_t *cut, int64_t nranks, const char *path, void **summary, size_t *slen,
                      cf__pending_part **parts, int64_t *nparts, cf_error *err)
{
    *summary = NULL;
    *slen = 0;
    *parts = NULL;
    *nparts = 0;
    if (!state || nfile < 0 || (nfile && !blob_rows) || nmemb < 0 || !cut || nranks < 1)
        return CF_FAIL(err, CF_EARG, "%s: cf__pending_split: bad arguments", path);
    cf__wire_in in = { state, (const unsigned char *)state + len };
    uint64_t wfile, chunk_rows, entries;
    if (len < 4 || memcmp(state, "CFP1", 4) != 0)
        return CF_FAIL(err, CF_EFORMAT, "%s: pending write state has a bad signature", path);
    in.p += 4;
    if (cf__wire_get_u64(&in, &wfile) || cf__wire_get_u64(&in, &chunk_rows) || cf__wire_get_u64(&in, &entries))
        return CF_FAIL(err, CF_EFORMAT, "%s: pending write state is truncated", path);
    if (wfile != (uint64_t)nfile || chunk_rows < 1 || chunk_rows > INT64_MAX)
        return CF_FAIL(err, CF_EARG, "%s: pending write state is for %llu blobs of %llu-row chunks, the column has "
                       "%lld blobs", path, (unsigned long long)wfile, (unsigned long long)chunk_rows, (long long)nfile);
    int64_t cr = (int64_t)chunk_rows;
    int64_t *first = malloc((size_t)(nfile + 1) * sizeof *first);
    parts_t ps = { NULL, 0, 0 };
    pending_owner po = { -1, 0, { NULL, 0, 0, 0 } };
    cf__wire_out sum = { NULL, 0, 0, 0 };
    int rc = 0, bad = 0; /* bad: 1 truncated, 2 out of range */
    if (!first) return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", path);
    first[0] = 0;
    for (int64_t b = 0; b < nfile; b++) first[b + 1] = first[b] + blob_rows[b];
    cf__wire_put(&sum, "CFP1", 4);
    cf__wire_put_u64(&sum, (uint64_t)nfile);
    cf__wire_put_u64(&sum, chunk_rows);
    cf__wire_put_u64(&sum, entries);
    for (uint64_t e = 0; e < entries && !bad && rc == 0; e++) {
        uint64_t blob, nseg, nrun;
        uint32_t delta;
        unsigned char overflow;
        if (cf__wire_get_u64(&in, &blob) || cf__wire_get_u32(&in, &delta) || cf__wire_get_u8(&in, &overflow) ||
            cf__wire_get_u64(&in, &nseg)) {
            bad = 1;
            break;
        }
        if (blob >= (uint64_t)nfile || nseg > (uint64_t)(in.end - in.p) / 20) {
            bad = 2;
            break;
        }
        /* the summary: the entry up to its runs, which it leaves out */
        cf__wire_put_u64(&sum, blob);
        cf__wire_put_u32(&sum, delta);
        cf__wire_put(&sum, &overflow, 1);
        cf__wire_put_u64(&sum, nseg);
        cf__wire_put(&sum, in.p, (size_t)nseg * 20);
        cf__wire_put_u64(&sum, 0);
        in.p += nseg * 20;
        int64_t b = (int64_t)blob, bf = first[b], rows = blob_rows[b];
        int64_t chunks = rows > 0 ? (rows - 1) / cr + 1 : 0;
        if (cf__wire_get_u64(&in, &nrun)) {
            bad = 1;
            break;
        }
        if (nrun == UINT64_MAX) { /* statistics lost: every owner of the blob's chunks learns it */
            int64_t r0, r1;
            blob_owners(cut, nranks, bf, rows, &r0, &r1);
            for (int64_t r = r0; r < r1 && rc == 0; r++) {
                int64_t k0, k1;
                cf__owned_chunks(cut, nranks, r, bf, rows, cr, &k0, &k1);
                part_t *p = k1 > k0 ? part_for(&ps, r) : NULL;
                if (k1 > k0 && !p) rc = -1;
                else if (p) entry_head(p, b, UINT64_MAX);
            }
            continue;
        }
        if (nrun > (uint64_t)(in.end - in.p) / 16) {
            bad = 1;
            break;
        }
        po.owner = -1;
        for (uint64_t q = 0; q < nrun && !bad && rc == 0; q++) {
            uint64_t k0, nacc;
            if (cf__wire_get_u64(&in, &k0) || cf__wire_get_u64(&in, &nacc)) {
                bad = 1;
                break;
            }
            if (nmemb == 0) { /* no components: nothing to own */
                if (nacc != 0) bad = 2;
                continue;
            }
            if (nacc == 0 || nacc % (uint64_t)nmemb || k0 >= (uint64_t)chunks ||
                nacc / (uint64_t)nmemb > (uint64_t)chunks - k0 || nacc > (uint64_t)(in.end - in.p) / 40) {
                bad = 2;
                break;
            }
            /* chunk by chunk, a new run where the owner changes */
            int64_t n = (int64_t)(nacc / (uint64_t)nmemb), run_at = -1, run_n = 0;
            size_t run_count_at = 0;
            for (int64_t k = (int64_t)k0; k < (int64_t)k0 + n && rc == 0; k++) {
                int64_t o = cf__owner_of_chunk(cut, nranks, bf, cr, k);
                if (o < 0) {
                    bad = 2;
                    break;
                }
                if (o != po.owner) {
                    if (flush_owner(&ps, &po, b)) rc = -1;
                    po.owner = o;
                    run_at = -1;
                }
                if (run_at < 0) { /* open a run: first chunk, count patched below */
                    cf__wire_put_u64(&po.runs, (uint64_t)k);
                    run_count_at = po.runs.len;
                    cf__wire_put_u64(&po.runs, 0);
                    run_at = k;
                    run_n = 0;
                    po.nrun++;
                }
                for (int64_t j = 0; j < nmemb; j++) {
                    size_t al = acc_len(in);
                    if (!al) {
                        bad = 1;
                        break;
                    }
                    cf__wire_put(&po.runs, in.p, al);
                    in.p += al;
                }
                if (bad) break;
                run_n += nmemb;
                if (!po.runs.failed) {
                    uint64_t v = (uint64_t)run_n;
                    for (int i = 0; i < 8; i++) po.runs.p[run_count_at + (size_t)i] = (unsigned char)(v >> (8 * i));
                }
            }
        }
        if (!bad && rc == 0 && flush_owner(&ps, &po, b)) rc = -1;
    }
    /* the chunk CRC32C pieces, if any */
    int with_pieces = !bad && in.end - in.p >= 4 && memcmp(in.p, "CCR1", 4) == 0;
    uint64_t npieces = 0;
    if (with_pieces) {
        in.p += 4;
        if (cf__wire_get_u64(&in, &npieces) || npieces > (uint64_t)(in.end - in.p) / 36) bad = 1;
        cf__wire_put(&sum, "CCR1", 4);
        cf__wire_put_u64(&sum, 0);
    }
    for (uint64_t q = 0; with_pieces && q < npieces && !bad && rc == 0; q++) {
        const unsigned char *piece = in.p;
        uint64_t blob, k;
        cf__wire_get_u64(&in, &blob);
        cf__wire_get_u64(&in, &k);
        in.p += 20; /* lo, hi, crc */
        if (blob >= (uint64_t)nfile) {
            bad = 2;
            break;
        }
        int64_t b = (int64_t)blob, r0, r1;
        if (k == UINT64_MAX) { /* lost track: every owner of the blob's chunks */
            blob_owners(cut, nranks, first[b], blob_rows[b], &r0, &r1);
        } else {
            r0 = k <= INT64_MAX ? cf__owner_of_chunk(cut, nranks, first[b], cr, (int64_t)k) : -1;
            if (r0 < 0 || (int64_t)k * cr >= blob_rows[b]) {
                bad = 2;
                break;
            }
            r1 = r0 + 1;
        }
        for (int64_t r = r0; r < r1 && rc == 0; r++) {
            int64_t k0 = 0, k1 = 1;
            if (k == UINT64_MAX) cf__owned_chunks(cut, nranks, r, first[b], blob_rows[b], cr, &k0, &k1);
            if (k1 == k0) continue;
            part_t *p = part_for(&ps, r);
            if (!p) {
                rc = -1;
                break;
            }
            if (p->blob != b) entry_head(p, b, 0); /* the owner hears of the blob */
            cf__wire_put(&p->pcs, piece, 36);
            p->npcs++;
        }
    }
    if (!bad && rc == 0 && in.p != in.end) bad = 3;
    cf__pending_part *out = NULL;
    if (!bad && rc == 0 && ps.n && !(out = calloc((size_t)ps.n, sizeof *out))) rc = -1;
    for (int64_t i = 0; !bad && rc == 0 && i < ps.n; i++) {
        part_t *p = &ps.v[i];
        cf__wire_out o = { NULL, 0, 0, 0 };
        cf__wire_put(&o, "CFP1", 4);
        cf__wire_put_u64(&o, (uint64_t)nfile);
        cf__wire_put_u64(&o, chunk_rows);
        cf__wire_put_u64(&o, (uint64_t)p->nent);
        cf__wire_put(&o, p->ent.p, p->ent.len);
        if (with_pieces) {
            cf__wire_put(&o, "CCR1", 4);
            cf__wire_put_u64(&o, (uint64_t)p->npcs);
            cf__wire_put(&o, p->pcs.p, p->pcs.len);
        }
        out[i].rank = p->rank;
        out[i].buf = o.p;
        out[i].len = o.len;
        if (o.failed || p->ent.failed || p->pcs.failed) rc = -1;
    }
    if (sum.failed || po.runs.failed) rc = -1;
    for (int64_t i = 0; i < ps.n; i++) {
        free(ps.v[i].ent.p);
        free(ps.v[i].pcs.p);
    }
    int64_t n = ps.n;
    free(ps.v);
    free(po.runs.p);
    free(first);
    if (bad || rc) {
        cf__pending_parts_free(out, out ? n : 0);
        free(sum.p);
        if (bad == 1) return CF_FAIL(err, CF_EFORMAT, "%s: pending write state is truncated", path);
        if (bad == 2) return CF_FAIL(err, CF_EFORMAT, "%s: pending write state names chunks outside the column", path);
        if (bad == 3) return CF_FAIL(err, CF_EFORMAT, "%s: pending write state has trailing bytes", path);
        return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", path);
    }
    *summary = sum.p;
    *slen = sum.len;
    *parts = out;
    *nparts = n;
    return 0;
}

void cf__pending_parts_free(cf__pending_part *parts, int64_t nparts)
{
    for (int64_t i = 0; parts && i < nparts; i++) free(parts[i].buf);
    free(parts);
}
