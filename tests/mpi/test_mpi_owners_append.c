/* test_mpi_owners_append.c - appends to and updates of a committed large
 * column close by chunk owners: rank 0 receives per-blob summaries, one
 * summary per page of 256 index records and the empty write states of the
 * append's gather (O(blobs + ranks + chunks / 256) bytes), the owners copy
 * the committed records of the blobs not written, and the column's files
 * are byte for byte those of the gathering close and of one process
 * making the same changes: random uneven splits whose boundaries fall
 * inside chunks, ranks that write nothing, an update that rewrites a
 * blob in pieces, and an update of part of a blob (which the commit reads
 * back: it closes the gathering way, with the same bytes). */
#include "mpi_harness.h"
#include "owners_rows.h"

#include <sys/stat.h>

/* What mpi_owners.c keeps for the tests (static builds only). */
extern int64_t cf__mpi_close_root_bytes;
extern int cf__mpi_close_gather_all;

/* 2 rows a chunk, 2 components: 150001 rows in 3 blobs are 75001 chunks
 * (more than an owner's slice of 65536), the append adds 20001 rows in 2
 * blobs. */
enum { CHUNK = 2, OLD = 150001, NFILE = 3, NEW = 20001, NEW_FILES = 2 };
enum { APPEND, UPDATE_BLOB, UPDATE_PART };

/* Rows [a, b) of the change: an append's new rows, or an update's. */
static void change_range(int kind, int64_t *a, int64_t *b)
{
    /* blob 1 holds rows [50000, 100000) of the base (cf_column_create's
     * split of 150001 rows in 3 blobs: 50000, 50000, 50001) */
    *a = kind == APPEND ? OLD : kind == UPDATE_BLOB ? 50000 : 60001;
    *b = kind == APPEND ? OLD + NEW : kind == UPDATE_BLOB ? 100000 : 70000;
}

/* The change made collectively in dir; the bytes rank 0 received from
 * the append's gather to the close. */
static int64_t change_mpi(const char *dir, int kind, const int64_t *lo, uint64_t seed)
{
    cf_error err;
    cf_file *f = NULL;
    cf_column *c = NULL;
    int rank = cf_test_rank();
    cf_mpi_options o;
    cf_mpi_options_init(&o);
    o.mode = CF_IO_THROTTLED;
    CHECK_OK(cf_mpi_file_open(&f, cf_test_comm(), dir, CF_OPEN_WRITE, &err), &err);
    CHECK_OK(cf_mpi_column_open(&c, f, cf_test_comm(), "x", &err), &err);
    int64_t before = cf__mpi_close_root_bytes, first = lo[rank], n = lo[rank + 1] - lo[rank];
    if (kind == APPEND) {
        cf_mpi_options g;
        cf_mpi_options_init(&g);
        g.nfile = NEW_FILES;
        int64_t at = -1;
        CHECK_OK(cf_mpi_column_grow(&c, f, cf_test_comm(), n, &g, &at, &err), &err);
        CHECK(at == first);
    }
    double *v = rows_of(first, n, seed + 7);
    CHECK_OK(cf_mpi_column_write(c, cf_test_comm(), first, n, v, NULL, 8 * NMEMB, 8, &o, &err), &err);
    free(v);
    CHECK_OK(cf_mpi_column_close(c, cf_test_comm(), &err), &err);
    int64_t got = cf__mpi_close_root_bytes - before;
    cf_file_close(f);
    return got;
}

/* One process makes the same change: the reference. */
static void change_serial(const char *dir, int kind, uint64_t seed)
{
    cf_error err;
    cf_file *f = NULL;
    cf_column *c = NULL;
    int64_t a, b;
    change_range(kind, &a, &b);
    CHECK_OK(cf_file_open(&f, dir, CF_OPEN_WRITE, &err), &err);
    CHECK_OK(cf_column_open(&c, f, "x", &err), &err);
    if (kind == APPEND) CHECK_OK(cf_column_grow(c, NEW, NEW_FILES, &err), &err);
    double *v = rows_of(a, b - a, seed + 7);
    CHECK_OK(cf_column_write(c, a, b - a, v, NULL, 8 * NMEMB, 8, &err), &err);
    free(v);
    CHECK_OK(cf_column_close(c, &err), &err);
    cf_file_close(f);
}

static void same(const char *x, const char *y)
{
    char a[4300], b[4300];
    snprintf(a, sizeof a, "%s/x", x);
    snprintf(b, sizeof b, "%s/x", y);
    CHECK(cf_test_same_tree(a, b));
}

static void run(int kind, uint64_t seed)
{
    int size = cf_test_size();
    int64_t *lo = malloc((size_t)(size + 1) * sizeof *lo), a, b;
    char own[4200], all[4200], ref[4200];
    snprintf(own, sizeof own, "%s/own%d_%d", cf_test_dir(), kind, (int)seed);
    snprintf(all, sizeof all, "%s/all%d_%d", cf_test_dir(), kind, (int)seed);
    snprintf(ref, sizeof ref, "%s/ref%d_%d", cf_test_dir(), kind, (int)seed);
    change_range(kind, &a, &b);
    split(seed, a, b, lo);
    if (cf_test_rank() == 0) {
        /* the committed column x, written by one process */
        write_serial(own, "x", OLD, NFILE, CHUNK, seed);
        write_serial(all, "x", OLD, NFILE, CHUNK, seed);
        write_serial(ref, "x", OLD, NFILE, CHUNK, seed);
        change_serial(ref, kind, seed);
    }
    MPI_Barrier(cf_test_comm());
    int64_t by_owners = change_mpi(own, kind, lo, seed);
    cf__mpi_close_gather_all = 1;
    int64_t gathered = change_mpi(all, kind, lo, seed);
    cf__mpi_close_gather_all = 0;
    same(own, ref); /* collective */
    same(all, ref);
    if (cf_test_rank() == 0) {
        char idx[4400];
        struct stat st;
        snprintf(idx, sizeof idx, "%s/x/colfile-index-v1", own);
        int64_t chunks = (kind == APPEND ? 75001 + 10001 : 75001);
        CHECK(stat(idx, &st) == 0 && st.st_size > chunks * (8 + 32 * NMEMB));
        /* summaries (a blob or two per rank), the empty states of the
         * append's gather, a part of one chunk per rank, a flag per blob,
         * and a page summary per 256 records (one per rank more) */
        int64_t pages = chunks / 256 + 1, bound = 512 * size + 16 * (NFILE + NEW_FILES) + (pages + size) * 256;
        fprintf(stderr, "change %d seed %d, %d ranks: rank 0 received %lld bytes by owners, %lld gathering "
                "(bound %lld)\n", kind, (int)seed, size, (long long)by_owners, (long long)gathered,
                (long long)bound);
        if (kind != UPDATE_PART) {
            CHECK(by_owners <= bound);
            /* the whole states: about 70 bytes per chunk and component */
            if (size > 1 && lo[1] < (a + b) / 2) CHECK(gathered > 8 * by_owners);
        }
    }
    MPI_Barrier(cf_test_comm());
    free(lo);
}

static void test_append_closes_by_owners(void)
{
    for (uint64_t seed = 1; seed <= 2; seed++) run(APPEND, seed);
}

static void test_update_of_a_blob_closes_by_owners(void)
{
    for (uint64_t seed = 1; seed <= 2; seed++) run(UPDATE_BLOB, seed);
}

static void test_update_of_part_of_a_blob_same_bytes(void)
{
    run(UPDATE_PART, 3);
}

CF_MPI_TESTS(CF_TEST(test_append_closes_by_owners), CF_TEST(test_update_of_a_blob_closes_by_owners),
             CF_TEST(test_update_of_part_of_a_blob_same_bytes))
