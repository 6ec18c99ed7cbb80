/* stats_layout.c - the chunks of a column's statistics: which chunks each
 * blob has, and the accumulators held for them, in runs that follow what
 * was written and read rather than the rows a header claims. */
#include "stats.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "stats_impl.h"

int64_t cf__stats_default_chunk_rows(int64_t rowbytes)
{
    const int64_t max_rows = (int64_t)1 << 20, max_bytes = (int64_t)8 << 20;
    if (rowbytes <= 0) return max_rows;
    int64_t fit = max_bytes / rowbytes;
    int64_t r = max_rows;
    while (r > 1 && r > fit) r >>= 1;
    return r;
}

int64_t cf__stats_chunk_rows_for(int64_t rows, int64_t nmemb, int64_t width)
{
    int64_t coarse = cf__stats_default_chunk_rows(nmemb > 0 && width > 0 && nmemb <= INT64_MAX / width ? nmemb * width : 0);
    if (rows <= 0 || nmemb <= 0 || width <= 0) return coarse; /* size unknown: it may grow to any size */
    /* Each chunk costs a fixed amount at the commit (its exact sums
     * rounded, merged into the index, written as text): chunks of at
     * least CF__STATS_MIN_COMPONENT_BYTES per component keep that within
     * the write's budget. */
    int64_t r = 1;
    while (r < coarse && r * width < CF__STATS_MIN_COMPONENT_BYTES) r <<= 1;
    /* Coarser only while the column keeps CF__STATS_TARGET_CHUNKS
     * chunks: selective reads need that many, not more. */
    while (r < coarse && rows / (2 * r) >= CF__STATS_TARGET_CHUNKS) r <<= 1;
    return r;
}

/* Total accumulators for the layout of h with chunk_rows, or -1 if that
 * does not fit in memory sizes.  Nothing that size is ever allocated: it
 * bounds which CHUNK a statistics text may choose. */
int64_t cf__stats_total(const cf__header *h, int64_t chunk_rows)
{
    int64_t chunks = 0;
    for (int64_t b = 0; b < h->nfile; b++) {
        int64_t c = cf__stats_chunks_of(h->rows[b], chunk_rows);
        if (c > INT64_MAX - chunks) return -1;
        chunks += c;
    }
    if (h->nmemb > 0 && chunks > INT64_MAX / h->nmemb) return -1;
    int64_t total = chunks * (h->nmemb > 0 ? h->nmemb : 0);
    if ((uint64_t)total > SIZE_MAX / sizeof(cf__acc)) return -1;
    return total;
}

int cf__stats_alloc(cf__stats *s, const cf__header *h, int64_t chunk_rows, const char *path, cf_error *err)
{
    memset(s, 0, sizeof *s);
    if (chunk_rows < 1)
        return CF_FAIL(err, CF_EARG, "%s: chunk rows must be at least 1, not %lld", path, (long long)chunk_rows);
    if (h->nfile < 0 || h->nmemb < 0 || (uint64_t)h->nfile >= SIZE_MAX / sizeof(cf__blob_stats))
        return CF_FAIL(err, CF_EARG, "%s: bad layout for statistics", path);
    s->first_chunk = malloc(((size_t)h->nfile + 1) * sizeof *s->first_chunk);
    s->blob = calloc(h->nfile ? (size_t)h->nfile : 1, sizeof *s->blob);
    s->valid = malloc(h->nfile ? (size_t)h->nfile : 1);
    if (!s->first_chunk || !s->blob || !s->valid) {
        cf__stats_free(s);
        return CF_FAIL(err, CF_ENOMEM, "%s: out of memory for the statistics of %lld blobs", path,
                       (long long)h->nfile);
    }
    s->chunk_rows = chunk_rows; /* no fine level: cf__stats_keep_fine asks for one */
    s->nmemb = h->nmemb;
    s->nfile = h->nfile;
    s->cls = cf__acc_class(&h->dtype);
    s->first_chunk[0] = 0;
    for (int64_t b = 0; b < h->nfile; b++) {
        int64_t nc = cf__stats_chunks_of(h->rows[b], chunk_rows);
        if (nc > INT64_MAX - s->first_chunk[b]) {
            cf__stats_free(s);
            return CF_FAIL(err, CF_ENOMEM, "%s: too many statistics chunks for %lld rows per chunk", path,
                           (long long)chunk_rows);
        }
        s->first_chunk[b + 1] = s->first_chunk[b] + nc;
        s->valid[b] = h->rows[b] <= 0;
    }
    return 0;
}

static void cf__blob_stats_drop(cf__blob_stats *bs)
{
    for (int64_t i = 0; i < bs->nrun; i++) {
        free(bs->run[i].acc);
        free(bs->run[i].fine);
    }
    free(bs->run);
    memset(bs, 0, sizeof *bs);
}

void cf__stats_free(cf__stats *s)
{
    for (int64_t b = 0; s->blob && b < s->nfile; b++) cf__blob_stats_drop(&s->blob[b]);
    free(s->first_chunk);
    free(s->blob);
    free(s->valid);
    memset(s, 0, sizeof *s);
}

int cf__stats_grow(cf__stats *s, const cf__header *h, int64_t old_nfile, const char *path, cf_error *err)
{
    if (!s->first_chunk || s->chunk_rows < 1 || s->nmemb != h->nmemb)
        return CF_FAIL(err, CF_EARG, "%s: statistics do not match the column", path);
    cf__stats n;
    int rc = cf__stats_alloc(&n, h, s->chunk_rows, path, err);
    if (rc) return rc;
    int64_t keep = old_nfile;
    if (keep > s->nfile) keep = s->nfile;
    if (keep > h->nfile) keep = h->nfile;
    for (int64_t b = 0; b < keep; b++) {
        int64_t nc = n.first_chunk[b + 1] - n.first_chunk[b];
        if (nc != s->first_chunk[b + 1] - s->first_chunk[b]) continue;   /* blob changed size */
        n.blob[b] = s->blob[b];   /* the accumulators move over */
        memset(&s->blob[b], 0, sizeof s->blob[b]);
        n.valid[b] = s->valid[b];
    }
    n.fine_rows = s->fine_rows; /* the blobs kept keep their fine entries */
    n.fine_m = s->fine_m;
    cf__stats_free(s);
    *s = n;
    return 0;
}

int64_t cf__stats_blob_chunks(const cf__stats *s, int64_t b)
{
    if (!s->first_chunk || b < 0 || b >= s->nfile) return 0;
    return s->first_chunk[b + 1] - s->first_chunk[b];
}

/* Runs of blob bs starting before chunk k. */
static int64_t cf__runs_before(const cf__blob_stats *bs, int64_t k)
{
    int64_t lo = 0, hi = bs->nrun;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (bs->run[mid].lo < k) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

const cf__acc *cf__stats_peek(const cf__stats *s, int64_t b, int64_t k)
{
    if (k < 0 || k >= cf__stats_blob_chunks(s, b)) return NULL;
    const cf__blob_stats *bs = &s->blob[b];
    int64_t i = cf__runs_before(bs, k + 1) - 1;
    if (i < 0 || k >= bs->run[i].lo + bs->run[i].n) return NULL;
    return bs->run[i].acc + (k - bs->run[i].lo) * s->nmemb;
}

/* Is run r within its own length of chunks [lo, hi)?  Such runs are
 * merged with it: filling the gap at most doubles what they hold. */
static int cf__run_near(const cf__acc_run *r, int64_t lo, int64_t hi)
{
    int64_t gap = r->lo >= hi ? r->lo - hi : lo >= r->lo + r->n ? lo - (r->lo + r->n) : 0;
    return gap <= r->n;
}

cf__acc *cf__stats_chunks(cf__stats *s, int64_t b, int64_t k0, int64_t k1)
{
    int64_t nc = cf__stats_blob_chunks(s, b);
    if (k0 < 0 || k1 <= k0 || k1 > nc) return NULL;
    cf__blob_stats *bs = &s->blob[b];
    if (bs->lost) return NULL;
    int64_t pos = cf__runs_before(bs, k0 + 1);
    if (pos > 0 && k1 <= bs->run[pos - 1].lo + bs->run[pos - 1].n)
        return bs->run[pos - 1].acc + (k0 - bs->run[pos - 1].lo) * s->nmemb;
    /* The new run: [k0, k1) and the runs near it, and, when it grows one,
     * room for as much again in the direction it grows (clamped to the
     * blob), so that writes walking through a blob cost amortized constant
     * time per chunk.  What is held stays within a small multiple of the
     * chunks actually written, wherever in the blob they are. */
    int64_t lo = k0, hi = k1, a = cf__runs_before(bs, k1), z = a, held = 0;
    for (int pass = 0; pass < 2; pass++) {
        for (int moved = 1; moved;) {
            moved = 0;
            while (a > 0 && cf__run_near(&bs->run[a - 1], lo, hi)) {
                a--;
                if (bs->run[a].lo < lo) lo = bs->run[a].lo;
                if (bs->run[a].lo + bs->run[a].n > hi) hi = bs->run[a].lo + bs->run[a].n;
                held += bs->run[a].n;
                moved = 1;
            }
            while (z < bs->nrun && cf__run_near(&bs->run[z], lo, hi)) {
                if (bs->run[z].lo < lo) lo = bs->run[z].lo;
                if (bs->run[z].lo + bs->run[z].n > hi) hi = bs->run[z].lo + bs->run[z].n;
                held += bs->run[z].n;
                z++;
                moved = 1;
            }
        }
        if (pass || held == 0) break;
        if (k0 < bs->run[a].lo) lo = lo > held ? lo - held : 0;
        if (k1 > bs->run[z - 1].lo + bs->run[z - 1].n) hi = held < nc - hi ? hi + held : nc;
    }
    int64_t count = (hi - lo) * s->nmemb;
    cf__acc *acc = NULL;
    if ((uint64_t)count <= SIZE_MAX / sizeof *acc) acc = malloc(count ? (size_t)count * sizeof *acc : 1);
    int64_t fcount = s->fine_m * count; /* fine_m <= CF__FINE_MAX_PER_CHUNK: no overflow where acc fits */
    cf__fine *fine = NULL;
    if (acc && fcount && (uint64_t)fcount <= SIZE_MAX / sizeof *fine) fine = malloc((size_t)fcount * sizeof *fine);
    if (fcount && !fine) {
        free(acc);
        acc = NULL;
    }
    cf__acc_run *runs = bs->run;
    if (acc && z - a == 0 && bs->nrun == bs->cap) {
        int64_t cap = bs->cap ? 2 * bs->cap : 4;
        runs = realloc(bs->run, (size_t)cap * sizeof *runs);
        if (runs) {
            bs->run = runs;
            bs->cap = cap;
        }
    }
    if (!acc || !runs) {
        /* No room: this blob's statistics are unknown until it is reset. */
        free(acc);
        free(fine);
        cf__blob_stats_drop(bs);
        bs->lost = 1;
        return NULL;
    }
    for (int64_t i = 0; i < count; i++) cf__acc_init_class(&acc[i], s->cls);
    for (int64_t i = 0; i < fcount; i++) {
        fine[i].mn = INFINITY;
        fine[i].mx = -INFINITY;
        fine[i].imn = s->cls == 'u' ? -1 : INT64_MAX; /* unsigned: all bits set */
        fine[i].imx = s->cls == 'u' ? 0 : INT64_MIN;
        fine[i].count = 0;
    }
    for (int64_t i = a; i < z; i++) {
        if (bs->run[i].n && s->nmemb)
            memcpy(acc + (bs->run[i].lo - lo) * s->nmemb, bs->run[i].acc,
                   (size_t)(bs->run[i].n * s->nmemb) * sizeof *acc);
        if (fine && bs->run[i].n && bs->run[i].fine)
            memcpy(fine + (bs->run[i].lo - lo) * s->nmemb * s->fine_m, bs->run[i].fine,
                   (size_t)(bs->run[i].n * s->nmemb * s->fine_m) * sizeof *fine);
        free(bs->run[i].acc);
        free(bs->run[i].fine);
    }
    /* runs [a, z) become the one new run at a */
    if (z - a != 1)
        memmove(&bs->run[a + 1], &bs->run[z], (size_t)(bs->nrun - z) * sizeof *bs->run);
    bs->nrun += 1 - (z - a);
    bs->run[a].lo = lo;
    bs->run[a].n = hi - lo;
    bs->run[a].acc = acc;
    bs->run[a].fine = fine;
    return acc + (k0 - lo) * s->nmemb;
}

void cf__stats_keep_fine(cf__stats *s, const cf__dtype *d)
{
    if (s->fine_m) return;
    s->fine_rows = cf__stats_fine_rows(s->chunk_rows, d);
    s->fine_m = s->fine_rows ? (s->chunk_rows + s->fine_rows - 1) / s->fine_rows : 0;
}

cf__fine *cf__stats_fine(const cf__stats *s, int64_t b, int64_t k)
{
    if (!s->fine_m || k < 0 || k >= cf__stats_blob_chunks(s, b)) return NULL;
    const cf__blob_stats *bs = &s->blob[b];
    int64_t i = cf__runs_before(bs, k + 1) - 1;
    if (i < 0 || k >= bs->run[i].lo + bs->run[i].n || !bs->run[i].fine) return NULL;
    return bs->run[i].fine + (k - bs->run[i].lo) * s->nmemb * s->fine_m;
}

cf__acc *cf__stats_chunk(cf__stats *s, int64_t b, int64_t k)
{
    return cf__stats_chunks(s, b, k, k + 1);
}

void cf__stats_reset_blob(cf__stats *s, int64_t b)
{
    if (b >= 0 && b < s->nfile && s->blob) cf__blob_stats_drop(&s->blob[b]);
}

void cf__stats_lose_blob(cf__stats *s, int64_t b)
{
    if (b < 0 || b >= s->nfile || !s->blob) return;
    cf__blob_stats_drop(&s->blob[b]);
    s->blob[b].lost = 1;
}

int cf__stats_holds(const cf__stats *s, int64_t b, int64_t k0, int64_t k1)
{
    if (b < 0 || b >= s->nfile || s->blob[b].lost || k0 < 0 || k1 > cf__stats_blob_chunks(s, b)) return 0;
    if (k1 <= k0 || s->nmemb == 0) return 1;
    /* runs are sorted, disjoint and never adjacent: one must cover it all */
    const cf__blob_stats *bs = &s->blob[b];
    for (int64_t r = 0; r < bs->nrun; r++)
        if (bs->run[r].lo <= k0 && k1 <= bs->run[r].lo + bs->run[r].n) return 1;
    return 0;
}

int cf__stats_blob_whole(const cf__stats *s, int64_t b)
{
    int64_t nc = cf__stats_blob_chunks(s, b);
    if (b < 0 || b >= s->nfile || s->blob[b].lost) return 0;
    const cf__blob_stats *bs = &s->blob[b];
    return nc == 0 || s->nmemb == 0 || (bs->nrun == 1 && bs->run[0].lo == 0 && bs->run[0].n == nc);
}
