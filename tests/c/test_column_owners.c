/* test_column_owners.c - the steps of a close by chunk owners
 * (colfile_binding.h, "Closing by chunk owners") run in one process, as
 * libcolfile-mpi and colfile.mpi run them over ranks: four writers' states
 * are split, the committing handle merges the summaries, each owner the
 * parts of its chunks, the owners write the chunk-index records of their
 * chunks and the committing handle joins their pages: header, colfile-v1
 * and colfile-index-v1 equal a serial write's byte for byte.  Pieces that
 * miss an owner's chunks are refused. */
#include "harness.h"

#include "colfile_binding.h"
#include "owners_column.h"

/* Writer w writes [LO[w - 1], LO[w]) of the column (owners_column.h),
 * across chunk and blob boundaries. */
enum { WRITERS = 4, RANKS = WRITERS + 1 };
static const int64_t LO[WRITERS + 1] = { 0, 30001, 46667, 100003, N };
/* which range of LO each writer writes: in rank order, or not */
static const int IN_ORDER[WRITERS + 1] = { 0, 1, 2, 3, 4 }, SHUFFLED[WRITERS + 1] = { 0, 4, 1, 3, 2 };

static double value(int64_t row) { return (double)((row * 7919) % 10007) * 0.5 - 1000; }

static void same_file(const char *a, const char *b, const char *name)
{
    char pa[4300], pb[4300];
    snprintf(pa, sizeof pa, "%s/x/%s", a, name);
    snprintf(pb, sizeof pb, "%s/x/%s", b, name);
    size_t la = 0, lb = 0;
    char *x = cf_test_slurp(NULL, pa, &la), *y = cf_test_slurp(NULL, pb, &lb);
    CHECK(x && y && la == lb && memcmp(x, y, la) == 0);
    free(x);
    free(y);
}

/* Rank 0 (the committing handle, h[0]) creates x in dir; writer w (rank
 * w) writes range order[w] of LO and exports its state. */
static void write_states(const char *dir, const int *order, cf_file **f, cf_column **h, void **state, size_t *len,
                         int64_t *first)
{
    cf_error err;
    CHECK_OK(cf_file_open(f, dir, CF_OPEN_WRITE | CF_OPEN_CREATE, &err), &err);
    CHECK_OK(cf_column_create(&h[0], *f, "x", "f8", 1, N, NFILE, &err), &err);
    CHECK_OK(cf_column_set_chunk_rows(h[0], CHUNK, &err), &err);
    CHECK(cf_column_owners_wanted(h[0]));
    void *meta = NULL;
    size_t mlen = 0;
    first[0] = -1;
    CHECK_OK(cf_column_export_meta(h[0], &meta, &mlen, &err), &err);
    for (int w = 1; w <= WRITERS; w++) {
        CHECK_OK(cf_column_open_meta(&h[w], *f, meta, mlen, &err), &err);
        CHECK(cf_column_owners_wanted(h[w])); /* the chunk size came with the snapshot */
        int64_t lo = LO[order[w] - 1], n = LO[order[w]] - lo;
        double *v = malloc((size_t)n * sizeof *v);
        for (int64_t i = 0; i < n; i++) v[i] = value(lo + i);
        CHECK_OK(cf_column_write(h[w], lo, n, v, NULL, 8, 8, &err), &err);
        free(v);
        first[w] = cf_column_pending_first_row(h[w]);
        CHECK_EQ_INT(first[w], lo);
        CHECK_OK(cf_column_pending_export(h[w], &state[w], &len[w], &err), &err);
    }
    cf_free(meta);
}

/* The gathering close: every state merged into h[0] in rank order. */
static void write_gathered(const char *dir, const int *order)
{
    cf_error err;
    cf_file *f = NULL;
    cf_column *h[RANKS] = { NULL };
    void *state[RANKS] = { NULL };
    size_t len[RANKS] = { 0 };
    int64_t first[RANKS];
    write_states(dir, order, &f, h, state, len, first);
    for (int w = 1; w <= WRITERS; w++) {
        CHECK_OK(cf_column_pending_merge(h[0], state[w], len[w], &err), &err);
        cf_free(state[w]);
        cf_column_close(h[w], NULL);
    }
    CHECK_OK(cf_column_close(h[0], &err), &err);
    cf_file_close(f);
}

/* Close x in dir by owners; drop: an owner whose pieces are left out
 * (-1: none); *owners: whether the owners wrote the index. */
static int write_by_owners(const char *dir, const int *order, int drop, int *owners, cf_error *out)
{
    cf_error err;
    cf_file *f = NULL;
    cf_column *h[RANKS] = { NULL };
    void *state[RANKS] = { NULL };
    size_t len[RANKS] = { 0 };
    int64_t first[RANKS], cut[RANKS + 1];
    write_states(dir, order, &f, h, state, len, first);
    cf_plan_owner_cuts(first, RANKS, N, cut);
    /* the summaries to the committing handle, the parts to their owners */
    void *parts[RANKS] = { NULL }, *sum[RANKS] = { NULL };
    size_t slen[RANKS] = { 0 };
    int64_t plen[RANKS][RANKS];
    for (int w = 1; w <= WRITERS; w++) {
        CHECK_OK(cf_column_pending_split(h[w], state[w], len[w], cut, RANKS, &sum[w], &slen[w], &parts[w], plen[w],
                                         &err), &err);
        CHECK_OK(cf_column_pending_merge(h[0], sum[w], slen[w], &err), &err);
        cf_free(state[w]);
    }
    for (int o = 0; o < RANKS; o++) {
        if (o > 0) CHECK_OK(cf_column_owner_begin(h[o], sum[o], slen[o], &err), &err);
        for (int w = 1; w <= WRITERS; w++) { /* rank order, its own part included */
            int64_t at = 0;
            for (int r = 0; r < o; r++) at += plen[w][r];
            if (plen[w][o]) CHECK_OK(cf_column_pending_merge(h[o], (char *)parts[w] + at, (size_t)plen[w][o], &err), &err);
        }
    }
    unsigned char least[NFILE], holds[NFILE], valid[NFILE];
    memset(least, 1, sizeof least);
    for (int o = 0; o < RANKS; o++) {
        cf_column_owner_holds(h[o], cut, RANKS, o, holds);
        for (int b = 0; b < NFILE; b++) least[b] = least[b] < holds[b] ? least[b] : holds[b];
    }
    const char *stage = NULL;
    CHECK_OK(cf_column_owner_plan(h[0], least, valid, owners, &stage, &err), &err);
    int rc = 0;
    if (*owners) {
        char *where = strdup(stage);
        unsigned char *all = NULL;
        size_t used = 0;
        for (int o = 0; o < RANKS; o++) {
            void *pc = NULL;
            size_t pl = 0;
            CHECK_OK(cf_column_owner_index_write(h[o], where, valid, cut, RANKS, o, &pc, &pl, &err), &err);
            if (o != drop) {
                all = realloc(all, used + pl + 1);
                if (pl > 0) memcpy(all + used, pc, pl); /* (an owner of no page sends nothing: pc may be NULL) */
                used += pl;
            }
            cf_free(pc);
        }
        free(where);
        rc = cf_column_owner_index_finish(h[0], all, used, out);
        free(all);
    }
    for (int w = 1; w <= WRITERS; w++) {
        cf_free(parts[w]);
        cf_free(sum[w]);
        cf_column_close(h[w], NULL);
    }
    if (rc == 0) {
        rc = cf_column_close(h[0], out);
    } else {
        cf_column_discard(h[0]);
        cf_column_close(h[0], NULL);
    }
    cf_file_close(f);
    return rc;
}

static void test_owners_write_the_serial_bytes(void)
{
    char ref[4200], own[4200], all[4200], mix[4200], bad[4200];
    snprintf(ref, sizeof ref, "%s/ref", cf_test_dir());
    snprintf(own, sizeof own, "%s/own", cf_test_dir());
    snprintf(all, sizeof all, "%s/all", cf_test_dir());
    snprintf(mix, sizeof mix, "%s/mix", cf_test_dir());
    snprintf(bad, sizeof bad, "%s/bad", cf_test_dir());
    owners_write_column(ref, value);
    cf_error err;
    int owners = 0;
    CHECK_OK(write_by_owners(own, IN_ORDER, -1, &owners, &err), &err);
    CHECK(owners);
    same_file(own, ref, "header");
    same_file(own, ref, "colfile-v1");
    same_file(own, ref, "colfile-index-v1");
    /* writers out of rank order: the gathering close's bytes (chunk CRC32C
     * pieces joined in rank order) */
    write_gathered(all, SHUFFLED);
    CHECK_OK(write_by_owners(mix, SHUFFLED, -1, &owners, &err), &err);
    CHECK(owners);
    same_file(mix, all, "header");
    same_file(mix, all, "colfile-v1");
    same_file(mix, all, "colfile-index-v1");
    /* an owner's pages missing: refused, nothing published */
    CHECK_FAILS(write_by_owners(bad, IN_ORDER, 2, &owners, &err), CF_EFORMAT, &err, "index pieces cover");
    char hp[4300];
    snprintf(hp, sizeof hp, "%s/x/header", bad);
    FILE *fp = fopen(hp, "rb");
    CHECK(fp == NULL);
    if (fp) fclose(fp);
}

CF_TESTS(CF_TEST(test_owners_write_the_serial_bytes))
