/* test_mpi_fine_bytes.c - a write's chunk index does not depend on how its
 * rows were split over processes: f8 and f4 columns with enough sub-chunks
 * for the fine level of colfile-index-v1 (docs/format.md 8.6), written by
 * one process and by every rank in throttled, aggregated and blob-owner
 * modes (uneven shares whose boundaries fall inside chunks and sub-chunks),
 * store the same bytes, the index included.  A write's index has no fine
 * level; cf_column_index_blob (the data read back) adds it. */
#include "mpi_harness.h"
#include "chunked_column.h"

#include <math.h>
#include <sys/stat.h>

enum { NFILE = 3 };

/* f8: chunks of 2 sub-chunks of 512 rows, over 1024 chunks (a write
 * leaves an index); f4: sub-chunks of 1024 rows, likewise. */
static const struct {
    const char *name, *dtype;
    int64_t rows, chunk_rows, sub_rows;
} cols[2] = { { "x", "f8", ((int64_t)1 << 20) + 777, 1024, 512 }, { "y", "f4", ((int64_t)1 << 21) + 333, 2048, 1024 } };

static double value(int64_t r)
{
    if (r == 70001) return NAN;
    if (r % 5000 == 17) return -0.0;
    return (double)((uint64_t)r * 2654435761u % 100003u) * 0.25 - 1000.0 + (double)(r / 1024);
}

/* rows [first, first + n) of column j, in its dtype */
static void *make_rows(int j, int64_t first, int64_t n)
{
    size_t w = cols[j].dtype[1] == '8' ? 8 : 4;
    unsigned char *p = malloc((size_t)(n > 0 ? n : 1) * w);
    for (int64_t i = 0; i < n; i++) {
        double d = value(first + i);
        if (w == 8) {
            memcpy(p + i * 8, &d, 8);
        } else {
            float f = (float)d;
            memcpy(p + i * 4, &f, 4);
        }
    }
    return p;
}

/* Rank r's share of `total`: weights (r + 1)^2, so boundaries fall anywhere. */
static void share(int64_t total, int rank, int size, int64_t *first, int64_t *n)
{
    int64_t all = 0, before = 0;
    for (int r = 0; r < size; r++) {
        all += (int64_t)(r + 1) * (r + 1);
        if (r < rank) before += (int64_t)(r + 1) * (r + 1);
    }
    *first = total * before / all;
    *n = total * (before + (int64_t)(rank + 1) * (rank + 1)) / all - *first;
}

static void serial_write(const char *dir)
{
    if (cf_test_rank() != 0) return;
    cf_error err;
    cf_file *f = NULL;
    CHECK_OK(cf_file_open(&f, dir, CF_OPEN_WRITE | CF_OPEN_CREATE, &err), &err);
    for (int j = 0; j < 2; j++) {
        cf_column *c = NULL;
        CHECK_OK(cf_column_create(&c, f, cols[j].name, cols[j].dtype, 1, cols[j].rows, NFILE, &err), &err);
        CHECK_OK(cf_column_set_chunk_rows(c, cols[j].chunk_rows, &err), &err);
        void *v = make_rows(j, 0, cols[j].rows);
        /* in two calls whose boundary falls inside a sub-chunk */
        int64_t half = cols[j].rows / 2 + 3, w = cols[j].dtype[1] == '8' ? 8 : 4;
        CHECK_OK(cf_column_write(c, 0, half, v, NULL, w, w, &err), &err);
        CHECK_OK(cf_column_write(c, half, cols[j].rows - half, (unsigned char *)v + half * w, NULL, w, w, &err), &err);
        free(v);
        CHECK_OK(cf_column_close(c, &err), &err);
    }
    cf_file_close(f);
}

static void mpi_write(const char *dir, int mode)
{
    cf_error err;
    cf_file *f = NULL;
    CHECK_OK(cf_mpi_file_open(&f, cf_test_comm(), dir, CF_OPEN_WRITE | CF_OPEN_CREATE, &err), &err);
    for (int j = 0; j < 2; j++) {
        cf_column *c = create_chunked(f, cols[j].name, cols[j].dtype, 1, cols[j].rows, NFILE, cols[j].chunk_rows);
        int64_t first, n, w = cols[j].dtype[1] == '8' ? 8 : 4;
        share(cols[j].rows, cf_test_rank(), cf_test_size(), &first, &n);
        cf_mpi_options o;
        cf_mpi_options_init(&o);
        o.mode = mode;
        void *v = make_rows(j, first, n);
        CHECK_OK(cf_mpi_column_write(c, cf_test_comm(), first, n, v, NULL, w, w, &o, &err), &err);
        free(v);
        CHECK_OK(cf_mpi_column_close(c, cf_test_comm(), &err), &err);
    }
    cf_file_close(f);
}

static void test_index_bytes_whatever_the_split(void)
{
    char serial[4200];
    snprintf(serial, sizeof serial, "%s/serial", cf_test_dir());
    serial_write(serial);
    MPI_Barrier(cf_test_comm());
    const int modes[] = { CF_IO_THROTTLED, CF_IO_AGGREGATED, CF_IO_BLOB_OWNERS };
    const char *names[] = { "throttled", "aggregated", "blob_owners" };
    for (int m = 0; m < 3; m++) {
        char dir[4300];
        snprintf(dir, sizeof dir, "%s/%s", cf_test_dir(), names[m]);
        mpi_write(dir, modes[m]);
        int same = cf_test_same_tree(serial, dir);
        if (!same) fprintf(stderr, "%s, %d ranks: not the serial write's bytes\n", names[m], cf_test_size());
        CHECK(same);
    }
    if (cf_test_rank() != 0) return;
    /* the serial write has an index, without a fine level; indexing the
     * blobs gives each column two sub-chunk records per chunk */
    cf_error err;
    cf_file *f = NULL;
    cf_column *c = NULL;
    for (int j = 0; j < 2; j++) {
        char idx[4400];
        struct stat st;
        snprintf(idx, sizeof idx, "%s/%s/colfile-index-v1", serial, cols[j].name);
        CHECK(stat(idx, &st) == 0);
    }
    CHECK_OK(cf_file_open(&f, serial, CF_OPEN_WRITE, &err), &err);
    for (int j = 0; j < 2; j++) {
        CHECK_OK(cf_column_open(&c, f, cols[j].name, &err), &err);
        CHECK_EQ_INT(cf_column_index_count(c, -1), 0);
        for (int64_t b = 0; b < NFILE; b++) CHECK_OK(cf_column_index_blob(c, b, &err), &err);
        CHECK_OK(cf_column_close(c, &err), &err);
    }
    cf_file_close(f);
    CHECK_OK(cf_file_open(&f, serial, 0, &err), &err);
    for (int j = 0; j < 2; j++) {
        CHECK_OK(cf_column_open(&c, f, cols[j].name, &err), &err);
        int64_t chunks = cf_column_index_count(c, 0);
        CHECK(chunks >= 1024);
        CHECK_EQ_INT(cf_column_index_count(c, -1), chunks * (cols[j].chunk_rows / cols[j].sub_rows));
        CHECK_OK(cf_column_close(c, &err), &err);
    }
    cf_file_close(f);
}

CF_MPI_TESTS(CF_TEST(test_index_bytes_whatever_the_split))
