/* test_pending_split.c - a rank's pending write state cut between the
 * committing rank (per-blob summaries) and the owners of its chunks
 * (src/column/pending_split.h): merged back into one handle the pieces
 * commit byte-identical files to the whole states; the summaries alone
 * give the same header; each part holds only its owner's chunks; a writer
 * that lost track of a blob's statistics tells every owner of the blob;
 * damaged states are refused. */
#include "harness.h"

#include "chunk_owner.h"
#include "column.h"
#include "column_handle.h"
#include "pending_split.h"

enum { N = 100, NFILE = 3, NMEMB = 3, CHUNK = 8, WRITERS = 4 };
enum { WHOLE, SPLIT, SUMMARY };

/* Writer w (1..WRITERS, rank w of WRITERS + 1; rank 0 commits and writes
 * nothing) writes rows [lo[w - 1], lo[w]): across blob and chunk
 * boundaries. */
static const int64_t LO[WRITERS + 1] = { 0, 20, 45, 70, N };

static double value(int64_t row, int j) { return (double)row * 0.75 - 20 + j * 1000.5; }

static uint64_t get64(const unsigned char **p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v |= (uint64_t)(*p)[i] << (8 * i);
    *p += 8;
    return v;
}

/* Chunks whose accumulators or CRC32C pieces a part holds that its rank
 * does not own (read from the wire format, column_pending.c). */
static int64_t foreign_chunks(const cf__pending_part *part, const int64_t *rows, const int64_t *cut, int64_t nranks)
{
    const unsigned char *p = (const unsigned char *)part->buf + 4;
    int64_t foreign = 0, first[NFILE + 1] = { 0 };
    for (int b = 0; b < NFILE; b++) first[b + 1] = first[b] + rows[b];
    get64(&p);
    int64_t cr = (int64_t)get64(&p), entries = (int64_t)get64(&p);
    for (int64_t e = 0; e < entries; e++) {
        int64_t b = (int64_t)get64(&p);
        p += 5;
        uint64_t nseg = get64(&p);
        p += nseg * 20;
        uint64_t nrun = get64(&p);
        for (uint64_t r = 0; nrun != UINT64_MAX && r < nrun; r++) {
            int64_t k0 = (int64_t)get64(&p), nacc = (int64_t)get64(&p);
            for (int64_t k = 0; k < nacc; k++) {
                if (k % NMEMB == 0)
                    foreign += cf__owner_of_chunk(cut, nranks, first[b], cr, k0 + k / NMEMB) != part->rank;
                p += 32; /* count, nan, min, max */
                uint64_t w0 = get64(&p);
                p += 8 * ((w0 >> 16) & 0xffu);
            }
        }
    }
    if (p < (const unsigned char *)part->buf + part->len) {
        p += 4;
        uint64_t n = get64(&p);
        for (uint64_t q = 0; q < n; q++) {
            int64_t b = (int64_t)get64(&p);
            uint64_t k = get64(&p);
            p += 20;
            if (k != UINT64_MAX) foreign += cf__owner_of_chunk(cut, nranks, first[b], cr, (int64_t)k) != part->rank;
        }
    }
    return foreign;
}

/* Column x of dir written by the writers and merged into rank 0's handle:
 * whole states, or split (by cut, nranks) and merged summary then parts,
 * or only the summaries. */
static void write_column(const char *dir, int mode, const int64_t *cut, int64_t nranks)
{
    cf_error err;
    cf_file *f = NULL;
    CHECK_OK(cf_file_open(&f, dir, CF_OPEN_WRITE | CF_OPEN_CREATE, &err), &err);
    cf_column *root = NULL;
    CHECK_OK(cf_column_create(&root, f, "x", "f8", NMEMB, N, NFILE, &err), &err);
    CHECK_OK(cf_column_set_chunk_rows(root, CHUNK, &err), &err);
    for (int w = 1; w <= WRITERS; w++) {
        void *meta = NULL, *st = NULL;
        size_t mlen = 0, len = 0;
        cf_column *r = NULL;
        CHECK_OK(cf_column_export_meta(root, &meta, &mlen, &err), &err);
        CHECK_OK(cf_column_open_meta(&r, f, meta, mlen, &err), &err);
        cf_free(meta);
        int64_t lo = LO[w - 1], n = LO[w] - lo;
        double v[N * NMEMB];
        for (int64_t i = 0; i < n; i++)
            for (int j = 0; j < NMEMB; j++) v[i * NMEMB + j] = value(lo + i, j);
        CHECK_OK(cf_column_write(r, lo, n, v, NULL, 8 * NMEMB, 8, &err), &err);
        CHECK_OK(cf_column_pending_export(r, &st, &len, &err), &err);
        cf_column_close(r, NULL);
        if (mode == WHOLE) {
            CHECK_OK(cf_column_pending_merge(root, st, len, &err), &err);
            cf_free(st);
            continue;
        }
        void *sum = NULL;
        size_t slen = 0;
        cf__pending_part *parts = NULL;
        int64_t nparts = 0;
        CHECK_OK(cf__pending_split(st, len, root->h.nfile, root->h.rows, NMEMB, cut, nranks, "x", &sum, &slen, &parts,
                                   &nparts, &err), &err);
        /* The summary: per blob touched (two at most here, one segment
         * each), no statistics: far less than the state. */
        CHECK(slen <= 28 + 2 * (29 + 20) + 12);
        CHECK(slen < len);
        CHECK_OK(cf_column_pending_merge(root, sum, slen, &err), &err);
        for (int64_t i = 0; i < nparts; i++) {
            CHECK(parts[i].rank >= 0 && parts[i].rank < nranks);
            if (i) CHECK(parts[i].rank > parts[i - 1].rank);
            /* a part holds its owner's chunks only */
            CHECK_EQ_INT(foreign_chunks(&parts[i], root->h.rows, cut, nranks), 0);
            if (mode == SPLIT) CHECK_OK(cf_column_pending_merge(root, parts[i].buf, parts[i].len, &err), &err);
        }
        free(sum);
        cf__pending_parts_free(parts, nparts);
        cf_free(st);
    }
    CHECK_OK(cf_column_close(root, &err), &err);
    cf_file_close(f);
}

static char *column_file(const char *dir, const char *name)
{
    char p[4200];
    snprintf(p, sizeof p, "%s/x/%s", dir, name);
    return cf_test_slurp(NULL, p, NULL);
}

static void check_split(const char *tag, const int64_t *cut, int64_t nranks)
{
    char whole[4096], split[4096], summary[4096];
    snprintf(whole, sizeof whole, "%s/%s-whole", cf_test_dir(), tag);
    snprintf(split, sizeof split, "%s/%s-split", cf_test_dir(), tag);
    snprintf(summary, sizeof summary, "%s/%s-summary", cf_test_dir(), tag);
    write_column(whole, WHOLE, cut, nranks);
    write_column(split, SPLIT, cut, nranks);
    write_column(summary, SUMMARY, cut, nranks);
    char *hw = column_file(whole, "header"), *hs = column_file(split, "header"), *hm = column_file(summary, "header");
    char *sw = column_file(whole, "colfile-v1"), *ss = column_file(split, "colfile-v1"),
         *sm = column_file(summary, "colfile-v1");
    CHECK_EQ_STR(hs, hw);
    CHECK_EQ_STR(ss, sw);
    CHECK(sw && !strstr(sw, "crc32c=-")); /* every chunk CRC32C known */
    CHECK_EQ_STR(hm, hw); /* the header needs the summaries alone */
    CHECK(sm && sw && strcmp(sm, sw) != 0); /* the statistics travel in the parts */
    free(hw), free(hs), free(hm), free(sw), free(ss), free(sm);
}

static void test_split_then_merge_commits_the_same_files(void)
{
    int64_t cut[WRITERS + 2];
    /* cuts at the first row each rank wrote (rank 0 wrote nothing) */
    int64_t first[WRITERS + 1] = { -1, LO[0], LO[1], LO[2], LO[3] };
    cf__owner_cuts(first, WRITERS + 1, N, cut);
    check_split("first", cut, WRITERS + 1);
    cf__owner_cuts_even(3, N, cut); /* owners that are not the writers */
    check_split("even3", cut, 3);
    cf__owner_cuts_even(1, N, cut); /* one owner for everything */
    check_split("one", cut, 1);
}

/* A state by hand: blob 1 of rows {40, 40, 40} with its statistics lost
 * (nrun 2^64 - 1) and a chunk CRC32C piece of blob 0, chunk 4. */
static size_t lost_state(unsigned char *p)
{
    size_t at = 0;
#define PUT64(v) do { uint64_t x_ = (v); for (int i_ = 0; i_ < 8; i_++) p[at++] = (unsigned char)(x_ >> (8 * i_)); } while (0)
#define PUT32(v) do { uint32_t x_ = (v); for (int i_ = 0; i_ < 4; i_++) p[at++] = (unsigned char)(x_ >> (8 * i_)); } while (0)
    memcpy(p, "CFP1", 4);
    at = 4;
    PUT64(3);
    PUT64(CHUNK);
    PUT64(1);
    PUT64(1);
    PUT32(77);
    p[at++] = 0;
    PUT64(0);
    PUT64(UINT64_MAX);
    memcpy(p + at, "CCR1", 4);
    at += 4;
    PUT64(1);
    PUT64(0);
    PUT64(4);
    PUT64(0);
    PUT64(8);
    PUT32(0x1234);
#undef PUT64
#undef PUT32
    return at;
}

static void test_lost_statistics_reach_every_owner(void)
{
    unsigned char st[256];
    size_t len = lost_state(st);
    const int64_t rows[NFILE] = { 40, 40, 40 };
    int64_t cut[5];
    cf__owner_cuts_even(4, 120, cut); /* 0, 30, 60, 90, 120: blob 1 (rows 40..80) meets ranks 1 and 2 */
    void *sum = NULL;
    size_t slen = 0;
    cf__pending_part *parts = NULL;
    int64_t n = 0;
    cf_error err;
    CHECK_OK(cf__pending_split(st, len, NFILE, rows, NMEMB, cut, 4, "x", &sum, &slen, &parts, &n, &err), &err);
    /* rank 1 owns chunk 4 of blob 0 (row 32) and chunks 0..2 of blob 1
     * (rows 40, 48, 56); rank 2 chunks 3..4 (rows 64, 72) */
    CHECK_EQ_INT(n, 2);
    if (n == 2) {
        CHECK_EQ_INT(parts[0].rank, 1);
        CHECK_EQ_INT(parts[1].rank, 2);
        /* rank 1: the lost entry of blob 1, an entry of blob 0, the piece */
        CHECK_EQ_INT(parts[0].len, 28 + 2 * 29 + 12 + 36);
        CHECK_EQ_INT(parts[1].len, 28 + 29 + 12);
        const unsigned char *q = (const unsigned char *)parts[1].buf + 28 + 21;
        uint64_t nrun = 0;
        for (int i = 0; i < 8; i++) nrun |= (uint64_t)q[i] << (8 * i);
        CHECK(nrun == UINT64_MAX);
    }
    CHECK_EQ_INT(slen, 28 + 29 + 12); /* the byte-sum delta, no statistics */
    CHECK(sum && memcmp((const unsigned char *)sum + 36, "\x4d\0\0\0", 4) == 0);
    free(sum);
    cf__pending_parts_free(parts, n);
}

static void test_split_refuses_damage(void)
{
    unsigned char st[256];
    size_t len = lost_state(st);
    const int64_t rows[NFILE] = { 40, 40, 40 };
    int64_t cut[3];
    cf__owner_cuts_even(2, 120, cut);
    void *sum = NULL;
    size_t slen = 0;
    cf__pending_part *parts = NULL;
    int64_t n = 0;
    cf_error err;
    CHECK_FAILS(cf__pending_split(st, len - 1, NFILE, rows, NMEMB, cut, 2, "col", &sum, &slen, &parts, &n, &err),
                CF_EFORMAT, &err, "col: pending write state is truncated");
    CHECK_FAILS(cf__pending_split(st, len, 2, rows, NMEMB, cut, 2, "col", &sum, &slen, &parts, &n, &err), CF_EARG,
                &err, "col: pending write state is for 3 blobs");
    unsigned char bad[256];
    memcpy(bad, st, len);
    bad[len - 36 + 8] = 9; /* chunk 9 of a 40-row blob of 8-row chunks */
    CHECK_FAILS(cf__pending_split(bad, len, NFILE, rows, NMEMB, cut, 2, "col", &sum, &slen, &parts, &n, &err),
                CF_EFORMAT, &err, "outside the column");
    memcpy(bad, st, len);
    bad[len] = 0;
    CHECK_FAILS(cf__pending_split(bad, len + 1, NFILE, rows, NMEMB, cut, 2, "col", &sum, &slen, &parts, &n, &err),
                CF_EFORMAT, &err, "trailing bytes");
    bad[0] = 'X';
    CHECK_FAILS(cf__pending_split(bad, len, NFILE, rows, NMEMB, cut, 2, "col", &sum, &slen, &parts, &n, &err),
                CF_EFORMAT, &err, "bad signature");
    CHECK(sum == NULL && parts == NULL && n == 0);
}

CF_TESTS(CF_TEST(test_split_then_merge_commits_the_same_files), CF_TEST(test_lost_statistics_reach_every_owner),
         CF_TEST(test_split_refuses_damage))
