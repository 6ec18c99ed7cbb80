/* test_mpi_owners.c - a large column closes by chunk owners: rank 0
 * receives per-blob summaries and one summary per page of 256 index
 * records (O(blobs + ranks + chunks / 256) bytes), never the statistics
 * of every chunk, and the column's files are byte for byte those of the
 * gathering close and of one process writing the same rows, for random
 * uneven splits whose boundaries fall inside chunks (ranks that write
 * nothing included), also for two columns closed together. */
#include "mpi_harness.h"
#include "chunked_column.h"
#include "owners_rows.h"

#include <sys/stat.h>

/* What mpi_owners.c keeps for the tests (static builds only). */
extern int64_t cf__mpi_close_root_bytes;
extern int cf__mpi_close_gather_all;

/* 3 rows a chunk, 2 components, 110001 rows in 3 blobs: 36668 chunks,
 * 73336 chunk records, more than the statistics text holds (2^16). */
enum { CHUNK = 3, TOTAL = 110001, NFILE = 3 };

/* Column name of dir, made by rank 0 with the test's chunks, replicated
 * on the others, and written by every rank (rows [lo[rank], lo[rank + 1])). */
static cf_column *write_one(cf_file *f, const char *name, const int64_t *lo, uint64_t seed)
{
    cf_error err;
    cf_column *c = NULL;
    int rank = cf_test_rank();
    int64_t first = lo[rank], n = lo[rank + 1] - lo[rank];
    cf_mpi_options o;
    cf_mpi_options_init(&o);
    o.mode = CF_IO_THROTTLED;
    c = create_chunked(f, name, "f8", NMEMB, TOTAL, NFILE, CHUNK);
    double *v = rows_of(first, n, seed);
    CHECK_OK(cf_mpi_column_write(c, cf_test_comm(), first, n, v, NULL, 8 * NMEMB, 8, &o, &err), &err);
    free(v);
    return c;
}

/* Write x (and, with two, y of the next seed, both closed by one
 * cf_mpi_column_close_many) in dir and close collectively; returns the
 * bytes rank 0 received at the close. */
static int64_t write_column(const char *dir, const int64_t *lo, uint64_t seed, int two)
{
    cf_error err;
    cf_file *f = NULL;
    CHECK_OK(cf_mpi_file_open(&f, cf_test_comm(), dir, CF_OPEN_WRITE | CF_OPEN_CREATE, &err), &err);
    cf_column *cols[2] = { write_one(f, "x", lo, seed), two ? write_one(f, "y", lo, seed + 1) : NULL };
    int64_t before = cf__mpi_close_root_bytes;
    if (two) CHECK_OK(cf_mpi_column_close_many(cols, 2, cf_test_comm(), &err), &err);
    else CHECK_OK(cf_mpi_column_close(cols[0], cf_test_comm(), &err), &err);
    int64_t got = cf__mpi_close_root_bytes - before;
    cf_file_close(f);
    return got;
}

static void test_owners_close_same_bytes_small_root(void)
{
    int size = cf_test_size();
    int64_t *lo = malloc((size_t)(size + 1) * sizeof *lo);
    for (uint64_t seed = 1; seed <= 3; seed++) {
        char own[4200], all[4200], ref[4200], a[4300], b[4300], r[4300];
        snprintf(own, sizeof own, "%s/own%d", cf_test_dir(), (int)seed);
        snprintf(all, sizeof all, "%s/all%d", cf_test_dir(), (int)seed);
        snprintf(ref, sizeof ref, "%s/ref%d", cf_test_dir(), (int)seed);
        split(seed, 0, TOTAL, lo);
        int two = seed == 3; /* two columns closed together */
        int64_t by_owners = write_column(own, lo, seed, two);
        cf__mpi_close_gather_all = 1;
        int64_t gathered = write_column(all, lo, seed, two);
        cf__mpi_close_gather_all = 0;
        if (cf_test_rank() == 0) {
            /* one process writes the same rows: the reference */
            write_serial(ref, "x", TOTAL, NFILE, CHUNK, seed);
            if (two) write_serial(ref, "y", TOTAL, NFILE, CHUNK, seed + 1);
        }
        MPI_Barrier(cf_test_comm());
        snprintf(a, sizeof a, "%s/x", own);
        snprintf(b, sizeof b, "%s/x", all);
        snprintf(r, sizeof r, "%s/x", ref);
        CHECK(cf_test_same_tree(a, b));
        CHECK(cf_test_same_tree(a, r));
        if (two) {
            snprintf(a, sizeof a, "%s/y", own);
            snprintf(b, sizeof b, "%s/y", all);
            snprintf(r, sizeof r, "%s/y", ref);
            CHECK(cf_test_same_tree(a, b));
            CHECK(cf_test_same_tree(a, r));
            snprintf(a, sizeof a, "%s/x", own);
        }
        if (cf_test_rank() == 0) {
            /* the statistics are in the index the owners wrote */
            char idx[4400];
            struct stat st;
            snprintf(idx, sizeof idx, "%s/colfile-index-v1", a);
            CHECK(stat(idx, &st) == 0 && st.st_size > (int64_t)36668 * (8 + 32 * NMEMB));
            /* summaries (a blob or two per rank), a part of one chunk per
             * rank, one flag per blob, and a page summary per 256 records
             * (plus one per rank where pages are cut) */
            int64_t pages = 36668 / 256 + 1, bound = (512 * size + 16 * NFILE + (pages + size) * 256) * (1 + two);
            fprintf(stderr, "seed %d, %d ranks: rank 0 received %lld bytes by owners, %lld gathering (bound %lld)\n",
                    (int)seed, size, (long long)by_owners, (long long)gathered, (long long)bound);
            CHECK(by_owners <= bound);
            /* the whole states: about 70 bytes per chunk and component */
            if (size > 1 && lo[1] < TOTAL / 2) CHECK(gathered > 20 * by_owners);
        }
    }
    free(lo);
}

CF_MPI_TESTS(CF_TEST(test_owners_close_same_bytes_small_root))
