/* test_column_index_fine.c - the fine level of a column's chunk index as
 * readers get it (src/column/column_index_fine.c): a column of f8 x 2
 * written in two blobs (no fine level), then indexed (cf_column_index_blob builds it) (the second's last chunk short), its sub-chunk
 * records through cf_column_index_count/_nodes at level -1 against the
 * data, the records past a short chunk's end empty, and a chunk with a
 * NaN not refined (its records not valid for that component). */
#include <math.h>

#include "harness.h"

enum { NMEMB = 2, CHUNK = 2048, SUB = 512, M = CHUNK / SUB };

static void test_fine_records_match_the_data(void)
{
    const int64_t rows = 523000; /* 2 blobs of 261500: 128 chunks each, the last of 1404 rows */
    double *v = malloc(sizeof *v * (size_t)(rows * NMEMB));
    CHECK(v != NULL);
    if (!v) return;
    for (int64_t r = 0; r < rows; r++) {
        v[r * NMEMB] = (double)r * 0.5;
        v[r * NMEMB + 1] = (double)((r * 7919) % 1000);
    }
    v[5000 * NMEMB + 1] = NAN; /* chunk 2 of blob 0, component 1 */
    cf_error err;
    cf_file *f;
    cf_column *c;
    CHECK_OK(cf_file_open(&f, cf_test_dir(), CF_OPEN_WRITE, &err), &err);
    CHECK_OK(cf_column_create(&c, f, "p", "f8", NMEMB, rows, 2, &err), &err);
    CHECK_OK(cf_column_set_chunk_rows(c, CHUNK, &err), &err);
    CHECK_OK(cf_column_write(c, 0, rows, v, NULL, 8 * NMEMB, 8, &err), &err);
    CHECK_OK(cf_column_close(c, &err), &err);
    cf_file_close(f);

    /* a write leaves no fine level; indexing the blobs (the data read back) builds it */
    CHECK_OK(cf_file_open(&f, cf_test_dir(), 0, &err), &err);
    CHECK_OK(cf_column_open(&c, f, "p", &err), &err);
    CHECK_EQ_INT(cf_column_index_count(c, -1), 0);
    CHECK_OK(cf_column_close(c, &err), &err);
    cf_file_close(f);
    CHECK_OK(cf_file_open(&f, cf_test_dir(), CF_OPEN_WRITE, &err), &err);
    CHECK_OK(cf_column_open(&c, f, "p", &err), &err);
    for (int64_t b = 0; b < 2; b++) CHECK_OK(cf_column_index_blob(c, b, &err), &err);
    CHECK_OK(cf_column_close(c, &err), &err);
    cf_file_close(f);

    CHECK_OK(cf_file_open(&f, cf_test_dir(), 0, &err), &err);
    CHECK_OK(cf_column_open(&c, f, "p", &err), &err);
    const int64_t chunks = 2 * ((261500 + CHUNK - 1) / CHUNK);
    CHECK_EQ_INT(cf_column_index_count(c, -1), chunks * M);
    cf_chunk_stats st[M];
    for (int64_t k = 0; k < chunks; k++)
        for (int64_t j = 0; j < NMEMB; j++) {
            CHECK_OK(cf_column_index_nodes(c, -1, k * M, M, j, st, &err), &err);
            int64_t b = k / (chunks / 2), kk = k % (chunks / 2);
            int64_t chunk0 = b * 261500 + kk * CHUNK, chunk1 = chunk0 + CHUNK < (b + 1) * 261500 ? chunk0 + CHUNK
                                                                                             : (b + 1) * 261500;
            for (int64_t i = 0; i < M; i++) {
                int64_t a = chunk0 + i * SUB < chunk1 ? chunk0 + i * SUB : chunk1;
                int64_t z = a + SUB < chunk1 ? a + SUB : chunk1;
                CHECK_EQ_INT(st[i].first_row, a);
                CHECK_EQ_INT(st[i].rows, z - a);
                if (z == a) {
                    CHECK(!st[i].valid);
                    continue;
                }
                if (k == 2 && j == 1) {
                    CHECK(!st[i].valid); /* the chunk holds a NaN of component 1 */
                    continue;
                }
                double mn = INFINITY, mx = -INFINITY;
                for (int64_t r = a; r < z; r++) {
                    double x = v[r * NMEMB + j];
                    mn = x < mn ? x : mn;
                    mx = x > mx ? x : mx;
                }
                CHECK(st[i].valid);
                CHECK(st[i].min <= mn && st[i].max >= mx);
                CHECK(st[i].min == mn || (mn == 0 && st[i].min == 0));
                CHECK(st[i].max == mx || (mx == 0 && st[i].max == 0));
            }
        }
    CHECK(cf_column_index_nodes(c, -1, chunks * M - 1, 2, 0, st, &err) == CF_ERANGE);
    CHECK_OK(cf_column_close(c, &err), &err);
    cf_file_close(f);
    free(v);
}

/* Blob 0 indexed, then blob 1 written whole in the same handle: only the
 * data read back feed the fine level, blob 1's blocks are unknown (as a
 * write by any number of processes leaves them). */
static void test_write_after_index_feeds_no_fine_level(void)
{
    const int64_t rows = 2 * 262144; /* 1024 sub-chunks: an index */
    double *v = malloc(sizeof *v * (size_t)(rows * NMEMB));
    CHECK(v != NULL);
    if (!v) return;
    for (int64_t e = 0; e < rows * NMEMB; e++) v[e] = (double)(e % 977);
    cf_error err;
    cf_file *f;
    cf_column *c;
    CHECK_OK(cf_file_open(&f, cf_test_dir(), CF_OPEN_WRITE, &err), &err);
    CHECK_OK(cf_column_create(&c, f, "q", "f8", NMEMB, rows, 2, &err), &err);
    CHECK_OK(cf_column_set_chunk_rows(c, CHUNK, &err), &err);
    CHECK_OK(cf_column_write(c, 0, rows, v, NULL, 8 * NMEMB, 8, &err), &err);
    CHECK_OK(cf_column_close(c, &err), &err);
    CHECK_OK(cf_column_open(&c, f, "q", &err), &err);
    CHECK_OK(cf_column_index_blob(c, 0, &err), &err);
    CHECK_OK(cf_column_write(c, 262144, 262144, v + 262144 * NMEMB, NULL, 8 * NMEMB, 8, &err), &err);
    CHECK_OK(cf_column_close(c, &err), &err);
    cf_file_close(f);
    CHECK_OK(cf_file_open(&f, cf_test_dir(), 0, &err), &err);
    CHECK_OK(cf_column_open(&c, f, "q", &err), &err);
    CHECK_EQ_INT(cf_column_index_count(c, -1), 256 * M); /* 128 chunks a blob */
    cf_chunk_stats st[M];
    for (int64_t k = 0; k < 256; k++) {
        CHECK_OK(cf_column_index_nodes(c, -1, k * M, M, 0, st, &err), &err);
        for (int64_t i = 0; i < M; i++) CHECK_EQ_INT(st[i].valid, k < 128);
    }
    CHECK_OK(cf_column_close(c, &err), &err);
    cf_file_close(f);
    free(v);
}

CF_TESTS(CF_TEST(test_fine_records_match_the_data), CF_TEST(test_write_after_index_feeds_no_fine_level))
