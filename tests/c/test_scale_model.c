/* test_scale_model.c - the scale model of docs/scale.md, in process: the
 * plan functions and the metadata snapshot and pending state of a column
 * for P = 10^2 .. 10^5 simulated ranks, writing a 10^12-row f8x3 column
 * (24 TB).  It asserts the bounds the page states:
 *
 *   - every rank writes at most one blob (blob boundaries are rank
 *     boundaries) and every blob has a writer, so a rank's metadata calls
 *     on blobs (open with O_CREAT, fsync, close: test_scale_metadata.py
 *     counts them in real jobs) do not grow with P, and the committing
 *     rank makes no blob;
 *   - a column handle and each rank's replica of it (cf_column_open_meta)
 *     cost at most 80 bytes per blob, the metadata snapshot rank 0
 *     broadcasts at most 64 bytes per blob: 6.4 MB and 5.1 MB at 10^5;
 *   - creating the column makes one blob file (the creating rank's), not
 *     one per blob;
 *   - a rank's pending state grows with the chunks it wrote (what rank 0
 *     gathers at a close today is proportional to the chunks written: the
 *     page says so and gives the number per chunk);
 *   - split by chunk owner (pending_split.h, owners at the ranks' first
 *     rows: chunk_owner.h), what the committing rank would receive is a
 *     summary per rank and per blob written plus at most one chunk's
 *     statistics: it does not grow with the chunks written, and for the
 *     10^12-row layout it is O(M + P) bytes (test_chunk_owner shows rank 0
 *     owns at most one other rank's chunk there). */
#include "harness.h"

#include "chunk_owner.h"
#include "pending_split.h"

#include <dirent.h>
#include <malloc.h>

static size_t heap_used(void)
{
    struct mallinfo2 m = mallinfo2();
    return m.uordblks + m.hblkhd;
}

static const int64_t ROWS = INT64_C(1000000000000); /* 10^12 rows of f8x3 */

static void check_plan(int64_t P, const int64_t *rank_rows)
{
    int64_t total = 0;
    for (int64_t r = 0; r < P; r++) total += rank_rows[r];
    int64_t nfile = cf_plan_nfile(total * 24, P, 0);
    CHECK(nfile >= 1 && nfile <= P);
    int64_t *blob_rows = malloc((size_t)nfile * sizeof *blob_rows);
    int64_t *writers = calloc((size_t)nfile, sizeof *writers);
    cf_error err;
    CHECK_OK(cf_plan_blobs_by_rank(rank_rows, P, nfile, blob_rows, &err), &err);
    int64_t b = 0, blob_end = blob_rows[0], row = 0, most = 0;
    for (int64_t r = 0; r < P; r++) {
        int64_t first = row, last = row + rank_rows[r];
        int64_t touched = 0;
        while (b < nfile - 1 && blob_end <= first) blob_end += blob_rows[++b];
        for (int64_t k = b, end = blob_end, start = blob_end - blob_rows[b]; k < nfile && start < last;) {
            if (rank_rows[r] > 0 && end > first) {
                touched++;
                writers[k]++;
            }
            if (++k < nfile) {
                start = end;
                end += blob_rows[k];
            }
        }
        if (touched > most) most = touched;
        row = last;
    }
    /* at most one blob per rank: 3 metadata calls on blobs at most */
    CHECK_EQ_INT(most <= 1, 1);
    int64_t unwritten = 0;
    for (int64_t k = 0; k < nfile; k++) unwritten += writers[k] == 0 && blob_rows[k] > 0;
    CHECK_EQ_INT(unwritten, 0); /* the commit makes no blob */
    free(blob_rows);
    free(writers);
}

static void test_plan_one_blob_per_rank(void)
{
    for (int64_t P = 100; P <= 100000; P *= 10) {
        int64_t *rr = malloc((size_t)P * sizeof *rr);
        for (int64_t r = 0; r < P; r++) rr[r] = cf_plan_share(ROWS, P, r, NULL);
        check_plan(P, rr);
        /* uneven: every seventh rank holds nothing, others 1x..4x */
        for (int64_t r = 0; r < P; r++) rr[r] = r % 7 == 3 ? 0 : (ROWS / P / 3) * (1 + r % 4);
        check_plan(P, rr);
        free(rr);
    }
}

static int64_t count_blob_files(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return -1;
    int64_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) n += strlen(e->d_name) == 6 && strspn(e->d_name, "0123456789ABCDEF") == 6;
    closedir(d);
    return n;
}

static void test_replica_memory_and_snapshot(void)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/F", cf_test_dir());
    cf_file *f = NULL;
    cf_error err;
    CHECK_OK(cf_file_open(&f, path, CF_OPEN_WRITE | CF_OPEN_CREATE | CF_OPEN_NODURABLE, &err), &err);
    for (int64_t P = 100; P <= 100000; P *= 10) {
        int64_t nfile = cf_plan_nfile(ROWS * 24, P, 0);
        char name[32];
        snprintf(name, sizeof name, "x%lld", (long long)P);
        size_t u0 = heap_used();
        cf_column *c = NULL, *r = NULL;
        CHECK_OK(cf_column_create(&c, f, name, "f8", 3, ROWS, nfile, &err), &err);
        if (!c) continue;
        size_t u1 = heap_used();
        void *meta = NULL;
        size_t len = 0;
        CHECK_OK(cf_column_export_meta(c, &meta, &len, &err), &err);
        size_t u2 = heap_used();
        CHECK_OK(cf_column_open_meta(&r, f, meta, len, &err), &err);
        size_t u3 = heap_used();
        double per_blob_handle = (double)(u1 - u0) / (double)nfile;
        double per_blob_replica = (double)(u3 - u2) / (double)nfile;
        double per_blob_meta = (double)len / (double)nfile;
        printf("P=%lld blobs=%lld handle %.0f B/blob (%.1f MB), replica %.0f B/blob (%.1f MB), "
               "snapshot %.0f B/blob (%.1f MB)\n", (long long)P, (long long)nfile, per_blob_handle,
               (double)(u1 - u0) / 1e6, per_blob_replica, (double)(u3 - u2) / 1e6, per_blob_meta, (double)len / 1e6);
        CHECK(u1 - u0 <= 80 * (size_t)nfile + (1 << 20));
        CHECK(u3 - u2 <= 80 * (size_t)nfile + (1 << 20));
        CHECK(len <= 64 * (size_t)nfile + 4096);
        cf_free(meta);
        if (r) {
            cf_column_discard(r);
            cf_column_close(r, NULL);
        }
        cf_column_discard(c);
        cf_column_close(c, NULL);
    }
    cf_file_close(f);
}

/* Blob files made by a create, counted in its staging directory. */
static void test_create_makes_one_blob_file(void)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/G", cf_test_dir());
    cf_file *f = NULL;
    cf_error err;
    CHECK_OK(cf_file_open(&f, path, CF_OPEN_WRITE | CF_OPEN_CREATE | CF_OPEN_NODURABLE, &err), &err);
    cf_column *c = NULL;
    CHECK_OK(cf_column_create(&c, f, "y", "f8", 3, ROWS, 89407, &err), &err);
    int64_t found = 0;
    DIR *d = opendir(path);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, ".colfile-stage.y.", 17) != 0) continue;
        char stage[4200];
        snprintf(stage, sizeof stage, "%s/%s", path, e->d_name);
        found = count_blob_files(stage);
    }
    if (d) closedir(d);
    CHECK_EQ_INT(found, 1);
    cf_column_discard(c);
    cf_column_close(c, NULL);
    cf_file_close(f);
}

/* An append of the 10^12 rows in 89,407 blobs (what the plan gives at
 * P = 10^5) to a committed column of one blob: the growing handle makes
 * none of the new blob files (their writers do); the commit makes the
 * ones nobody wrote, so that the header lists only files that exist. */
static void test_grow_makes_no_blob_file(void)
{
    char path[4096], col[4200];
    snprintf(path, sizeof path, "%s/A", cf_test_dir());
    snprintf(col, sizeof col, "%s/g", path);
    cf_file *f = NULL;
    cf_error err;
    CHECK_OK(cf_file_open(&f, path, CF_OPEN_WRITE | CF_OPEN_CREATE | CF_OPEN_NODURABLE, &err), &err);
    cf_column *c = NULL;
    CHECK_OK(cf_column_create(&c, f, "g", "f8", 3, 10, 1, &err), &err);
    CHECK_OK(cf_column_close(c, &err), &err);
    CHECK_OK(cf_column_open(&c, f, "g", &err), &err);
    CHECK_OK(cf_column_grow(c, ROWS, 89407, &err), &err);
    CHECK_EQ_INT(cf_column_nfile(c), 89408);
    CHECK_EQ_INT(count_blob_files(col), 1);
    cf_column_discard(c);
    cf_column_close(c, NULL);
    CHECK_EQ_INT(count_blob_files(col), 1);
    /* a small append of three blobs, one of them written: the commit makes
     * the two others, empty (short: their rows were never written) */
    CHECK_OK(cf_column_open(&c, f, "g", &err), &err);
    CHECK_OK(cf_column_grow(c, 30, 3, &err), &err);
    CHECK_EQ_INT(count_blob_files(col), 1);
    double v[30] = { 0 };
    CHECK_OK(cf_column_write(c, 20, 10, v, NULL, 24, 8, &err), &err);
    CHECK_EQ_INT(count_blob_files(col), 2);
    CHECK_OK(cf_column_close(c, &err), &err);
    CHECK_EQ_INT(count_blob_files(col), 4);
    CHECK_OK(cf_column_open(&c, f, "g", &err), &err);
    unsigned st = 0;
    CHECK_OK(cf_column_verify_blob(c, 2, &st, &err), &err);
    CHECK_EQ_INT(st, CF_BLOB_OK);
    CHECK_OK(cf_column_verify_blob(c, 3, &st, &err), &err);
    CHECK_EQ_INT(st & CF_BLOB_SHORT, CF_BLOB_SHORT);
    cf_column_close(c, NULL);
    cf_file_close(f);
}

/* What a rank hands to rank 0 at a close: its pending state, measured for
 * a replica that wrote 1 and 201 statistics chunks of a column. */
static void test_pending_state_per_chunk(void)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/H", cf_test_dir());
    cf_file *f = NULL;
    cf_error err;
    CHECK_OK(cf_file_open(&f, path, CF_OPEN_WRITE | CF_OPEN_CREATE | CF_OPEN_NODURABLE, &err), &err);
    size_t lens[2];
    int64_t chunks[2] = { 1, 201 };
    for (int k = 0; k < 2; k++) {
        cf_column *c = NULL, *r = NULL;
        char name[16];
        snprintf(name, sizeof name, "p%d", k);
        int64_t n = chunks[k] * 64;
        CHECK_OK(cf_column_create(&c, f, name, "f8", 3, n * 2, 2, &err), &err);
        CHECK_OK(cf_column_set_chunk_rows(c, 64, &err), &err);
        void *meta = NULL;
        size_t len = 0;
        CHECK_OK(cf_column_export_meta(c, &meta, &len, &err), &err);
        CHECK_OK(cf_column_open_meta(&r, f, meta, len, &err), &err);
        double *v = calloc((size_t)n * 3, sizeof *v);
        for (int64_t i = 0; i < n * 3; i++) v[i] = (double)i;
        CHECK_OK(cf_column_write(r, n, n, v, NULL, 24, 8, &err), &err);
        void *st = NULL;
        CHECK_OK(cf_column_pending_export(r, &st, &lens[k], &err), &err);
        cf_free(st);
        cf_free(meta);
        free(v);
        cf_column_discard(r);
        cf_column_close(r, NULL);
        cf_column_discard(c);
        cf_column_close(c, NULL);
    }
    double per_chunk = (double)(lens[1] - lens[0]) / 200.0;
    printf("pending state: %zu bytes for 1 chunk, %zu for 201: %.0f bytes per chunk of 3 components\n", lens[0],
           lens[1], per_chunk);
    CHECK(lens[0] < 1024);
    CHECK(per_chunk > 0 && per_chunk <= 256);
    cf_file_close(f);
}

/* A read-only handle's snapshot (what a collective open broadcasts) costs
 * per blob, not per chunk: the statistics stay out of it and each replica
 * reads them when it first needs them; they are the same as the
 * handle's. */
static void test_read_only_snapshot_leaves_statistics_out(void)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/R", cf_test_dir());
    cf_file *f = NULL;
    cf_error err;
    CHECK_OK(cf_file_open(&f, path, CF_OPEN_WRITE | CF_OPEN_CREATE | CF_OPEN_NODURABLE, &err), &err);
    enum { N = 200000, NFILE = 4 };
    cf_column *c = NULL;
    CHECK_OK(cf_column_create(&c, f, "s", "f8", 1, N, NFILE, &err), &err);
    CHECK_OK(cf_column_set_chunk_rows(c, 16, &err), &err);
    double *v = malloc(N * sizeof *v);
    for (int64_t i = 0; i < N; i++) v[i] = (double)((i * 7919) % 1000) - 500.0;
    CHECK_OK(cf_column_write(c, 0, N, v, NULL, 8, 8, &err), &err);
    free(v);
    CHECK_OK(cf_column_close(c, &err), &err);
    cf_file_close(f);
    CHECK_OK(cf_file_open(&f, path, 0, &err), &err);
    CHECK_OK(cf_column_open(&c, f, "s", &err), &err);
    void *meta = NULL;
    size_t len = 0;
    CHECK_OK(cf_column_export_meta(c, &meta, &len, &err), &err);
    printf("read-only snapshot of %lld chunks: %zu bytes\n", (long long)cf_column_chunk_count(c), len);
    CHECK(len <= 64 * NFILE + 4096);
    for (int round = 0; round < 1; round++) {
        cf_column *r = NULL;
        CHECK_OK(cf_column_open_meta(&r, f, meta, len, &err), &err);
        if (!r) break;
        if (round == 0) {
            /* a replica of the replica: the same bytes */
            void *again = NULL;
            size_t alen = 0;
            CHECK_OK(cf_column_export_meta(r, &again, &alen, &err), &err);
            CHECK(alen == len && memcmp(again, meta, len) == 0);
            cf_free(again);
            CHECK_EQ_INT(cf_column_chunk_count(r), cf_column_chunk_count(c));
            for (int64_t k = 0; k < cf_column_chunk_count(c); k += 997) {
                cf_chunk_stats a, b;
                CHECK_OK(cf_column_chunk_stats(c, k, 0, &a, &err), &err);
                CHECK_OK(cf_column_chunk_stats(r, k, 0, &b, &err), &err);
                CHECK(a.valid && b.valid && a.min == b.min && a.max == b.max && a.sum == b.sum &&
                      a.count == b.count);
            }
        }
        cf_column_close(r, NULL);
    }
    cf_free(meta);
    cf_column_close(c, NULL);
    cf_file_close(f);
}

/* Writers 0..W-1 (rank w writes rows [w * R, (w + 1) * R) of an f8x3
 * column of 4 blobs, 64-row chunks); ranks 1.. send to rank 0 either their
 * whole pending states (*whole) or, split by owner, their summaries and
 * the parts rank 0 owns (*to0); *entries: blob entries summarised, *parts0:
 * parts rank 0 receives. */
enum { SPLIT_W = 8 };
static void split_close(cf_file *f, const char *name, int64_t R, size_t *whole, size_t *to0, int64_t *entries,
                        int64_t *parts0)
{
    cf_error err;
    cf_column *c = NULL;
    *whole = *to0 = 0;
    *entries = *parts0 = 0;
    CHECK_OK(cf_column_create(&c, f, name, "f8", 3, SPLIT_W * R, 4, &err), &err);
    if (!c) return;
    CHECK_OK(cf_column_set_chunk_rows(c, 64, &err), &err);
    void *meta = NULL;
    size_t mlen = 0;
    CHECK_OK(cf_column_export_meta(c, &meta, &mlen, &err), &err);
    int64_t first[SPLIT_W], cut[SPLIT_W + 1], blob_rows[4];
    for (int w = 0; w < SPLIT_W; w++) first[w] = w * R;
    cf__owner_cuts(first, SPLIT_W, SPLIT_W * R, cut);
    for (int b = 0; b < 4; b++) blob_rows[b] = cf_plan_share(SPLIT_W * R, 4, b, NULL);
    double *v = malloc((size_t)R * 3 * sizeof *v);
    for (int w = 1; w < SPLIT_W; w++) {
        cf_column *r = NULL;
        CHECK_OK(cf_column_open_meta(&r, f, meta, mlen, &err), &err);
        for (int64_t i = 0; i < R * 3; i++) v[i] = (double)(w * R * 3 + i) * 0.37;
        CHECK_OK(cf_column_write(r, w * R, R, v, NULL, 24, 8, &err), &err);
        void *st = NULL, *sum = NULL;
        size_t len = 0, slen = 0;
        cf__pending_part *parts = NULL;
        int64_t n = 0;
        CHECK_OK(cf_column_pending_export(r, &st, &len, &err), &err);
        CHECK_OK(cf__pending_split(st, len, 4, blob_rows, 3, cut, SPLIT_W, name, &sum, &slen, &parts, &n, &err), &err);
        *whole += len;
        *to0 += slen;
        *entries += (int64_t)((slen - 40) / 49); /* one segment per blob here */
        for (int64_t i = 0; i < n; i++)
            if (parts[i].rank == 0) {
                *to0 += parts[i].len;
                ++*parts0;
            }
        cf__pending_parts_free(parts, n);
        free(sum);
        cf_free(st);
        cf_column_discard(r);
        cf_column_close(r, NULL);
    }
    free(v);
    cf_free(meta);
    cf_column_discard(c);
    cf_column_close(c, NULL);
}

static void test_split_close_rank0_bytes(void)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/S", cf_test_dir());
    cf_file *f = NULL;
    cf_error err;
    CHECK_OK(cf_file_open(&f, path, CF_OPEN_WRITE | CF_OPEN_CREATE | CF_OPEN_NODURABLE, &err), &err);
    size_t whole[2], to0[2];
    int64_t entries[2], parts0[2];
    /* 1000 and 16,040 rows per rank: 16 and 251 chunks, neither rank
     * boundary on a chunk boundary */
    split_close(f, "s0", 1000, &whole[0], &to0[0], &entries[0], &parts0[0]);
    split_close(f, "s1", 16040, &whole[1], &to0[1], &entries[1], &parts0[1]);
    printf("split close: whole states %zu -> %zu bytes, rank 0 receives %zu -> %zu bytes (%lld blob entries, "
           "%lld parts)\n", whole[0], whole[1], to0[0], to0[1], (long long)entries[1], (long long)parts0[1]);
    CHECK(whole[1] > 10 * whole[0]); /* today's gather follows the chunks */
    CHECK(parts0[0] <= 1 && parts0[1] <= 1);
    CHECK(entries[0] == entries[1] && entries[1] <= SPLIT_W); /* each rank writes one blob or two */
    /* summaries (40 bytes a rank, 49 a blob entry) and one chunk's part */
    CHECK(to0[1] <= (size_t)(40 * (SPLIT_W - 1) + 49 * entries[1]) + 512);
    CHECK(to0[1] <= to0[0] + 64);
    /* The 10^12-row layout (P = 10^5 ranks, M = 89,407 blobs, one blob
     * per rank, one segment each): at most one chunk from another rank
     * for rank 0 (test_chunk_owner). */
    const int64_t P = 100000, M = cf_plan_nfile(ROWS * 24, P, 0);
    double bound = 40.0 * (double)P + 49.0 * (double)P + 512.0;
    printf("split close at 10^12 rows: rank 0 receives at most %.1f MB (P = %lld, M = %lld)\n", bound / 1e6,
           (long long)P, (long long)M);
    CHECK(M <= P && bound < 16e6);
    cf_file_close(f);
}

CF_TESTS(CF_TEST(test_read_only_snapshot_leaves_statistics_out), CF_TEST(test_plan_one_blob_per_rank), CF_TEST(test_replica_memory_and_snapshot),
         CF_TEST(test_create_makes_one_blob_file), CF_TEST(test_grow_makes_no_blob_file),
         CF_TEST(test_pending_state_per_chunk), CF_TEST(test_split_close_rank0_bytes))
