/* test_pending_owners.c - chunk owners merging the parts of several
 * writers (src/column/pending_split.h) into a handle of their own, as an
 * owner of a collective close does: for every chunk it owns it then holds
 * the accumulators and chunk CRC32C that merging every writer's whole state
 * into one handle gives, however many writers' parts meet in one blob. */
#include "harness.h"

#include "chunk_owner.h"
#include "column.h"
#include "column_handle.h"
#include "column_index.h"
#include "pending_split.h"

enum { N = 100, NFILE = 3, NMEMB = 2, CHUNK = 8, WRITERS = 4, RANKS = WRITERS + 1 };

/* Writer w (rank w; rank 0 writes nothing) writes rows [LO[w - 1], LO[w]):
 * blob and chunk boundaries fall inside the writers' rows. */
static const int64_t LO[WRITERS + 1] = { 0, 21, 45, 70, N };

static double value(int64_t row, int j) { return (double)row * 1.25 - 31 + j * 517.5; }

static cf_column *replica(cf_column *root, cf_file *f)
{
    void *meta = NULL;
    size_t mlen = 0;
    cf_column *r = NULL;
    cf_error err;
    CHECK_OK(cf_column_export_meta(root, &meta, &mlen, &err), &err);
    CHECK_OK(cf_column_open_meta(&r, f, meta, mlen, &err), &err);
    cf_free(meta);
    return r;
}

static int same_acc(const cf__acc *a, const cf__acc *b)
{
    if (!a || !b) return a == b;
    return a->count == b->count && a->nan == b->nan && memcmp(&a->v, &b->v, sizeof a->v) == 0 &&
           cf__acc_sum(a) == cf__acc_sum(b);
}

static void test_owners_hold_their_chunks_whole(void)
{
    cf_error err;
    cf_file *f = NULL;
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/owners", cf_test_dir());
    CHECK_OK(cf_file_open(&f, dir, CF_OPEN_WRITE | CF_OPEN_CREATE, &err), &err);
    cf_column *root = NULL;
    CHECK_OK(cf_column_create(&root, f, "x", "f8", NMEMB, N, NFILE, &err), &err);
    CHECK_OK(cf_column_set_chunk_rows(root, CHUNK, &err), &err);
    void *state[RANKS] = { NULL };
    size_t len[RANKS] = { 0 };
    for (int w = 1; w <= WRITERS; w++) {
        cf_column *r = replica(root, f);
        int64_t lo = LO[w - 1], n = LO[w] - lo;
        double v[N * NMEMB];
        for (int64_t i = 0; i < n; i++)
            for (int j = 0; j < NMEMB; j++) v[i * NMEMB + j] = value(lo + i, j);
        CHECK_OK(cf_column_write(r, lo, n, v, NULL, 8 * NMEMB, 8, &err), &err);
        CHECK_OK(cf_column_pending_export(r, &state[w], &len[w], &err), &err);
        cf_column_close(r, NULL);
    }
    /* the reference: every whole state in one handle */
    cf_column *whole = replica(root, f);
    for (int w = 1; w <= WRITERS; w++) CHECK_OK(cf_column_pending_merge(whole, state[w], len[w], &err), &err);
    int64_t first[RANKS] = { -1, LO[0], LO[1], LO[2], LO[3] }, cut[RANKS + 1];
    cf__owner_cuts(first, RANKS, N, cut);
    cf_column *owner[RANKS];
    for (int o = 0; o < RANKS; o++) owner[o] = replica(root, f);
    int64_t many = 0; /* blobs where an owner merges parts of two writers */
    for (int w = 1; w <= WRITERS; w++) {
        void *sum = NULL;
        size_t slen = 0;
        cf__pending_part *parts = NULL;
        int64_t nparts = 0;
        CHECK_OK(cf__pending_split(state[w], len[w], root->h.nfile, root->h.rows, NMEMB, cut, RANKS, "x", &sum, &slen,
                                   &parts, &nparts, &err), &err);
        for (int64_t i = 0; i < nparts; i++) {
            int64_t o = parts[i].rank;
            many += o != w;
            CHECK_OK(cf_column_pending_merge(owner[o], parts[i].buf, parts[i].len, &err), &err);
        }
        free(sum);
        cf__pending_parts_free(parts, nparts);
    }
    CHECK(many >= 3); /* every writer but the first sends its first chunk on */
    int64_t checked = 0;
    for (int64_t b = 0; b < NFILE; b++) {
        int64_t bfirst = 0;
        for (int64_t i = 0; i < b; i++) bfirst += root->h.rows[i];
        for (int o = 0; o < RANKS; o++) {
            int64_t k0, k1;
            cf__owned_chunks(cut, RANKS, o, bfirst, root->h.rows[b], CHUNK, &k0, &k1);
            CHECK(cf__stats_holds(&owner[o]->stat.stats, b, k0, k1));
            for (int64_t k = k0; k < k1; k++) {
                for (int j = 0; j < NMEMB; j++) {
                    const cf__acc *a = cf__stats_peek(&owner[o]->stat.stats, b, k),
                                  *e = cf__stats_peek(&whole->stat.stats, b, k);
                    CHECK(a && e && same_acc(a + j, e + j));
                }
                uint32_t ca = 0, ce = 1;
                CHECK(cf__column_ccrc_get(owner[o], b, k, &ca));
                CHECK(cf__column_ccrc_get(whole, b, k, &ce));
                CHECK(ca == ce);
                checked++;
            }
        }
    }
    /* blobs of 34, 33, 33 rows in chunks of 8: 5 + 5 + 5 chunks */
    CHECK_EQ_INT(checked, 15);
    for (int o = 0; o < RANKS; o++) cf_column_close(owner[o], NULL);
    cf_column_close(whole, NULL);
    for (int w = 1; w <= WRITERS; w++) cf_free(state[w]);
    cf_column_discard(root);
    cf_column_close(root, NULL);
    cf_file_close(f);
}

CF_TESTS(CF_TEST(test_owners_hold_their_chunks_whole))
