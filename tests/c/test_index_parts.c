/* test_index_parts.c - the levels of colfile-index-v1 above the chunks
 * built from ranges of records held by different processes
 * (src/stats/stindex_part.h): cut each level at arbitrary points, each
 * range summarised into pieces, the pieces of a page joined (in order, or
 * as a tree): every parent record and the head's top CRC32C come out as
 * cf__index_build writes them, byte for byte, for an f8 column with NaNs,
 * partial chunks, an empty blob and a blob without statistics; and the
 * whole file assembled from owners of chunk ranges (level 0 side by side,
 * the levels above from pieces, the head from the top CRC32C) is the file
 * cf__index_build writes. */
#include "harness.h"

#include <math.h>

#include "checksum.h"
#include "stindex.h"
#include "stindex_part.h"

enum { NMEMB = 2, NFILE = 4, CHUNK = 2 };
static const int64_t ROWS[NFILE] = { 70001, 0, 60000, 1235 };

static uint32_t le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t rng = 0x9e3779b97f4a7c15u;
static uint64_t next(void)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return rng;
}

/* The statistics of the column, chunk CRC32C known for two thirds of the
 * chunks; blob 3 unusable (no statistics in the index). */
static void make(cf__stats *s, cf__header *h, uint32_t **crc, unsigned char **known, int64_t *nchunks)
{
    cf_error err;
    memset(s, 0, sizeof *s);
    memset(h, 0, sizeof *h);
    CHECK_OK(cf__header_alloc(h, NFILE, "t", &err), &err);
    CHECK_OK(cf__dtype_parse("<f8", CF__DTYPE_HEADER, &h->dtype, "t", &err), &err);
    h->nmemb = NMEMB;
    for (int b = 0; b < NFILE; b++) h->rows[b] = ROWS[b];
    CHECK_OK(cf__stats_alloc(s, h, CHUNK, "t", &err), &err);
    int64_t row = 0;
    for (int64_t b = 0; b < NFILE; b++) {
        int64_t nc = cf__stats_blob_chunks(s, b);
        cf__acc *a = nc ? cf__stats_chunks(s, b, 0, nc) : NULL;
        for (int64_t k = 0; k < nc; k++) {
            int64_t n = ROWS[b] - k * CHUNK < CHUNK ? ROWS[b] - k * CHUNK : CHUNK;
            double v[CHUNK * NMEMB];
            for (int64_t i = 0; i < n; i++, row++) {
                v[i * NMEMB] = row % 97 == 5 ? NAN : (double)row * 0.1 - 1e6;
                v[i * NMEMB + 1] = row % 1000 == 7 ? 1e300 : row % 1000 == 8 ? -1e300 : 1.0 / (double)(row + 1);
            }
            cf__acc_add(a + NMEMB * k, NMEMB, 0, v, n * NMEMB, &h->dtype);
        }
        s->valid[b] = 1;
    }
    *nchunks = s->first_chunk[NFILE];
    *crc = malloc((size_t)*nchunks * sizeof **crc);
    *known = malloc((size_t)*nchunks);
    for (int64_t k = 0; k < *nchunks; k++) {
        (*crc)[k] = (uint32_t)next();
        (*known)[k] = k % 3 != 1;
    }
}

/* Which blobs' statistics the index holds (not the last one's). */
static const unsigned char USABLE[NFILE] = { 1, 1, 1, 0 };

/* The test column's statistics, chunk CRCs and index file as
 * cf__index_build writes it. */
typedef struct {
    cf__stats s;
    cf__header h;
    uint32_t *crc;
    unsigned char *known, *buf;
    int64_t nchunks;
    size_t len;
} built_index;

static void build_index(built_index *ix)
{
    cf_error err;
    ix->buf = NULL;
    ix->len = 0;
    make(&ix->s, &ix->h, &ix->crc, &ix->known, &ix->nchunks);
    CHECK_OK(cf__index_build(&ix->s, &ix->h, "<f8", USABLE, ix->crc, ix->known, &ix->buf, &ix->len, "t", &err),
             &err);
}

static void free_index(built_index *ix)
{
    free(ix->buf);
    free(ix->crc);
    free(ix->known);
    cf__stats_free(&ix->s);
    cf__header_free(&ix->h);
}

/* Join pieces p[0 .. n) of one page: left to right, or as a tree. */
static void join(cf__index_piece *p, int64_t n, int tree, const cf__dtype *dt)
{
    if (!tree) {
        for (int64_t i = 1; i < n; i++) cf__index_piece_join(&p[0], &p[i], NMEMB, dt);
        return;
    }
    for (int64_t step = 1; step < n; step *= 2)
        for (int64_t i = 0; i + step < n; i += 2 * step) cf__index_piece_join(&p[i], &p[i + step], NMEMB, dt);
}

/* Level l (count records at rec, rows each) cut at ncut random points:
 * the parent records the pieces make, compared with want (the level above
 * as built); *up gets their rows. */
static void check_level(const unsigned char *rec, int64_t count, const int64_t *rows, int ncut, int tree,
                        const cf__dtype *dt, const unsigned char *want, int64_t fanout, int64_t *up, uint32_t *crc)
{
    const int64_t rb = cf__index_rec_bytes(NMEMB);
    int64_t cuts[66];
    cuts[0] = 0;
    for (int i = 1; i <= ncut; i++) cuts[i] = (int64_t)(next() % (uint64_t)(count + 1));
    cuts[ncut + 1] = count;
    for (int i = 1; i <= ncut + 1; i++) /* sort (insertion) */
        for (int j = i; j > 0 && cuts[j] < cuts[j - 1]; j--) {
            int64_t t = cuts[j];
            cuts[j] = cuts[j - 1];
            cuts[j - 1] = t;
        }
    /* every range's pieces, in order */
    int64_t np = 0, cap = count / fanout + ncut + 4;
    cf__index_piece *all = calloc((size_t)cap, sizeof *all);
    cf_error err;
    for (int i = 0; i <= ncut; i++) {
        cf__index_piece *p = NULL;
        int64_t n = 0, lo = cuts[i], hi = cuts[i + 1];
        CHECK_OK(cf__index_pieces(rec + lo * rb, lo, hi - lo, rows + lo, NMEMB, dt, fanout, &p, &n, "t", &err), &err);
        CHECK(np + n <= cap);
        if (n > 0) memcpy(all + np, p, (size_t)n * sizeof *p); /* (an empty range has no pieces: p may be NULL) */
        np += n;
        free(p); /* the accumulators now belong to all[] */
    }
    int64_t pages = (count + fanout - 1) / fanout, page = 0, bad = 0;
    unsigned char out[8 + 32 * NMEMB];
    for (int64_t i = 0; i < np; page++) {
        int64_t j = i;
        while (j < np && all[j].page == all[i].page) j++;
        CHECK_EQ_INT(all[i].page, page);
        join(all + i, j - i, tree, dt);
        int64_t want_n = count - page * fanout < fanout ? count - page * fanout : fanout;
        CHECK_EQ_INT(all[i].n, want_n);
        if (up) up[page] = all[i].rows;
        if (crc) *crc = all[i].crc;
        if (want) {
            cf__index_piece_record(&all[i], NMEMB, dt, out);
            bad += memcmp(out, want + page * rb, (size_t)rb) != 0;
        }
        i = j;
    }
    CHECK_EQ_INT(page, pages);
    CHECK_EQ_INT(bad, 0);
    cf__index_pieces_free(all, np);
}

static void test_upper_levels_from_pieces(void)
{
    cf_error err;
    built_index ix;
    build_index(&ix);
    cf__index_geom g;
    CHECK_OK(cf__index_parse_head(&g, ix.buf, ix.len, (int64_t)ix.len, "t", &err), &err);
    CHECK_EQ_INT(g.nlevels, 3); /* 65,619 chunks: pages of pages */
    const int64_t rb = cf__index_rec_bytes(NMEMB);
    int64_t *rows = malloc((size_t)ix.nchunks * sizeof *rows), *up = malloc((size_t)ix.nchunks * sizeof *up);
    const int cuts[] = { 0, 1, 7, 64 };
    for (size_t c = 0; c < sizeof cuts / sizeof *cuts; c++) {
        for (int tree = 0; tree < 2; tree++) {
            for (int64_t b = 0, k = 0; b < NFILE; b++)
                for (int64_t kk = 0; kk * CHUNK < ROWS[b]; kk++, k++)
                    rows[k] = ROWS[b] - kk * CHUNK < CHUNK ? ROWS[b] - kk * CHUNK : CHUNK;
            for (int l = 0; l + 1 < g.nlevels; l++) {
                check_level(ix.buf + g.offset[l], g.count[l], rows, cuts[c], tree, &ix.h.dtype, ix.buf + g.offset[l + 1],
                            g.fanout, up, NULL);
                memcpy(rows, up, (size_t)g.count[l + 1] * sizeof *rows);
            }
            /* the head's CRC32C of the top level, from pieces of it */
            uint32_t top = 0;
            int l = g.nlevels - 1;
            check_level(ix.buf + g.offset[l], g.count[l], rows, cuts[c], tree, &ix.h.dtype, NULL, g.fanout, NULL, &top);
            CHECK_EQ_INT(top, le32(ix.buf + 72));
        }
    }
    /* the blob without statistics leaves its parents without them */
    const unsigned char *last = ix.buf + g.offset[1] + (g.count[1] - 1) * rb;
    CHECK_EQ_INT(cf__index_rec_flags(last) & CF__INDEX_STATS, 0);
    CHECK_EQ_INT(cf__index_rec_flags(ix.buf + g.offset[1]) & CF__INDEX_STATS, CF__INDEX_STATS);
    CHECK_FAILS(cf__index_pieces(ix.buf, 0, 1, NULL, NMEMB, &ix.h.dtype, 256, &(cf__index_piece *){ NULL },
                                 &(int64_t){ 0 }, "col", &err), CF_EARG, &err, "col: ");
    free(rows);
    free(up);
    free_index(&ix);
}

/* The whole file from owners of chunk ranges, each holding only its
 * chunks' statistics: the blobs' "has statistics" agreed from their
 * holders' parts (cf__stats_holds), level 0 written side by side, the
 * levels above from pieces, the head from the top level's CRC32C. */
static void test_index_from_owners(void)
{
    cf_error err;
    built_index ix;
    build_index(&ix);
    int64_t count[CF__INDEX_LEVELS_MAX], offset[CF__INDEX_LEVELS_MAX], size = 0;
    int nl = cf__index_layout(ix.nchunks, NMEMB, count, offset, &size);
    CHECK_EQ_INT(size, (int64_t)ix.len);
    const int64_t rb = cf__index_rec_bytes(NMEMB);
    enum { P = 6 };
    /* owner ranges: one inside a blob, one across the empty blob, one a single chunk */
    const int64_t cut[P + 1] = { 0, 1000, 34999, 35002, 35003, 65000, ix.nchunks };
    unsigned char ok[NFILE] = { 1, 1, 1, 1 }, *file = calloc(1, ix.len);
    cf__stats own[P];
    for (int r = 0; r < P; r++) {
        CHECK_OK(cf__stats_alloc(&own[r], &ix.h, CHUNK, "t", &err), &err);
        for (int64_t b = 0; b < NFILE; b++) {
            int64_t k0 = cut[r] - ix.s.first_chunk[b], k1 = cut[r + 1] - ix.s.first_chunk[b];
            if (k0 < 0) k0 = 0;
            if (k1 > cf__stats_blob_chunks(&ix.s, b)) k1 = cf__stats_blob_chunks(&ix.s, b);
            own[r].valid[b] = ix.s.valid[b];
            if (k1 <= k0) continue;
            cf__acc *a = cf__stats_chunks(&own[r], b, k0, k1);
            for (int64_t k = k0; k < k1; k++) memcpy(a + (k - k0) * NMEMB, cf__stats_peek(&ix.s, b, k), NMEMB * sizeof *a);
            /* this owner's part of the blob's agreement (an AND over its holders) */
            ok[b] &= own[r].valid[b] && USABLE[b] && cf__stats_holds(&own[r], b, k0, k1);
            CHECK_EQ_INT(cf__stats_holds(&own[r], b, k0, k1 + (k1 < cf__stats_blob_chunks(&ix.s, b))),
                         k1 == cf__stats_blob_chunks(&ix.s, b));
        }
    }
    for (int64_t b = 0; b < NFILE; b++) CHECK_EQ_INT(ok[b], b != 3);
    for (int r = 0; r < P; r++)
        cf__index_level0(&own[r], &ix.h, ok, cut[r], cut[r + 1], ix.crc + cut[r], ix.known + cut[r],
                         file + offset[0] + cut[r] * rb);
    CHECK(memcmp(file + offset[0], ix.buf + offset[0], (size_t)(ix.nchunks * rb)) == 0);
    /* the levels above, from each owner's pieces, joined page by page */
    int64_t *rows = malloc((size_t)ix.nchunks * sizeof *rows);
    for (int64_t b = 0, k = 0; b < NFILE; b++)
        for (int64_t kk = 0; kk * CHUNK < ROWS[b]; kk++, k++) rows[k] = ROWS[b] - kk * CHUNK < CHUNK ? ROWS[b] - kk * CHUNK : CHUNK;
    for (int l = 0; l + 1 < nl; l++) {
        cf__index_piece *all = calloc((size_t)(count[l + 1] + P), sizeof *all);
        int64_t np = 0;
        for (int r = 0; r < P; r++) {
            int64_t lo = l == 0 ? cut[r] : count[l] * r / P, hi = l == 0 ? cut[r + 1] : count[l] * (r + 1) / P, n = 0;
            cf__index_piece *p = NULL;
            CHECK_OK(cf__index_pieces(file + offset[l] + lo * rb, lo, hi - lo, rows + lo, NMEMB, &ix.h.dtype,
                                      CF__INDEX_FANOUT, &p, &n, "t", &err), &err);
            if (n > 0) memcpy(all + np, p, (size_t)n * sizeof *p);
            np += n;
            free(p);
        }
        for (int64_t i = 0, j; i < np; i = j) {
            for (j = i + 1; j < np && all[j].page == all[i].page; j++) cf__index_piece_join(&all[i], &all[j], NMEMB, &ix.h.dtype);
            cf__index_piece_record(&all[i], NMEMB, &ix.h.dtype, file + offset[l + 1] + all[i].page * rb);
            rows[all[i].page] = all[i].rows;
        }
        cf__index_pieces_free(all, np);
    }
    cf__index_put_head(file, "<f8", NMEMB, NFILE, CHUNK, ix.nchunks,
                       cf__crc32c_update(0, file + offset[nl - 1], (size_t)(count[nl - 1] * rb)), 0);
    CHECK(memcmp(file, ix.buf, ix.len) == 0);
    for (int r = 0; r < P; r++) cf__stats_free(&own[r]);
    free(rows);
    free(file);
    free_index(&ix);
}

CF_TESTS(CF_TEST(test_upper_levels_from_pieces), CF_TEST(test_index_from_owners))
