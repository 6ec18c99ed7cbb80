/* test_mpi_chunk_rows.c - cf_mpi_options.chunk_rows: a collective create
 * chooses the statistics chunks of the new column, every rank's handle
 * agrees, and the committed column is the one a serial create with
 * cf_column_set_chunk_rows writes, byte for byte; ranks that disagree, or
 * a bad value, fail on every rank and leave no column. */
#include "mpi_harness.h"

#include <sys/stat.h>

enum { TOTAL = 1001, CHUNK = 7 };

static double value(int64_t row) { return (double)(row * 37 % 101) - 50.5; }

/* The File at <test dir>/<name>, written by every rank with `o`. */
static void write_collective(const char *name, const cf_mpi_options *o)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", cf_test_dir(), name);
    cf_error err;
    cf_file *f = NULL;
    cf_column *c = NULL;
    int64_t first = 0, n = cf_plan_share(TOTAL, cf_test_size(), cf_test_rank(), &first), got = -1;
    CHECK_OK(cf_mpi_file_open(&f, cf_test_comm(), path, CF_OPEN_WRITE | CF_OPEN_CREATE, &err), &err);
    CHECK_OK(cf_mpi_column_create(&c, f, cf_test_comm(), "x", "f8", 1, n, o, &got, &err), &err);
    CHECK(got == first);
    CHECK(cf_column_chunk_rows(c) == CHUNK);
    double *v = malloc((size_t)(n > 0 ? n : 1) * sizeof *v);
    for (int64_t i = 0; i < n; i++) v[i] = value(first + i);
    CHECK_OK(cf_mpi_column_write(c, cf_test_comm(), first, n, v, NULL, 8, 8, o, &err), &err);
    free(v);
    CHECK_OK(cf_mpi_column_close(c, cf_test_comm(), &err), &err);
    cf_file_close(f);
}

/* The same column written by one handle on rank 0, chunks chosen with
 * cf_column_set_chunk_rows, blobs as the collective plan makes them. */
static void write_serial(const char *name, int64_t nfile)
{
    if (cf_test_rank() != 0) return;
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", cf_test_dir(), name);
    cf_error err;
    cf_file *f = NULL;
    cf_column *c = NULL;
    CHECK_OK(cf_file_open(&f, path, CF_OPEN_WRITE | CF_OPEN_CREATE, &err), &err);
    CHECK_OK(cf_column_create(&c, f, "x", "f8", 1, TOTAL, nfile, &err), &err);
    CHECK_OK(cf_column_set_chunk_rows(c, CHUNK, &err), &err);
    double *v = malloc(TOTAL * sizeof *v);
    for (int64_t i = 0; i < TOTAL; i++) v[i] = value(i);
    CHECK_OK(cf_column_write(c, 0, TOTAL, v, NULL, 8, 8, &err), &err);
    free(v);
    CHECK_OK(cf_column_close(c, &err), &err);
    cf_file_close(f);
}

static void test_create_chooses_chunks(void)
{
    cf_mpi_options o;
    cf_mpi_options_init(&o);
    o.chunk_rows = CHUNK;
    o.mode = CF_IO_THROTTLED;
    write_collective("mpi", &o);
    write_serial("serial", cf_plan_nfile(TOTAL * 8, cf_test_size(), 0));
    MPI_Barrier(cf_test_comm());

    /* reopened by every rank: the chunks are the chosen ones */
    char path[4200];
    snprintf(path, sizeof path, "%s/mpi", cf_test_dir());
    cf_error err;
    cf_file *f = NULL;
    cf_column *c = NULL;
    CHECK_OK(cf_mpi_file_open(&f, cf_test_comm(), path, CF_OPEN_READ, &err), &err);
    CHECK_OK(cf_mpi_column_open(&c, f, cf_test_comm(), "x", &err), &err);
    CHECK(cf_column_chunk_rows(c) == CHUNK);
    CHECK(cf_column_chunk_count(c) == (TOTAL + CHUNK - 1) / CHUNK);
    cf_column_close(c, NULL);
    cf_file_close(f);

    /* byte for byte the serial column (the catalog's stamps aside) */
    char a[4200], b[4200];
    snprintf(a, sizeof a, "%s/mpi/x", cf_test_dir());
    snprintf(b, sizeof b, "%s/serial/x", cf_test_dir());
    CHECK(cf_test_same_tree(a, b));
}

static void test_create_many_chooses_chunks(void)
{
    cf_mpi_options o;
    cf_mpi_options_init(&o);
    o.chunk_rows = CHUNK;
    cf_error err;
    cf_file *f = cf_test_mpi_file();
    int64_t first = 0, n = cf_plan_share(TOTAL, cf_test_size(), cf_test_rank(), &first);
    cf_mpi_column_spec specs[2] = { { .name = "a", .dtype = "f8", .nmemb = 1, .local_rows = n },
                                    { .name = "b", .dtype = "i4", .nmemb = 2, .local_rows = n } };
    CHECK_OK(cf_mpi_column_create_many(f, cf_test_comm(), specs, 2, &o, &err), &err);
    for (int i = 0; i < 2; i++) {
        CHECK(specs[i].column && cf_column_chunk_rows(specs[i].column) == CHUNK);
        CHECK_OK(cf_mpi_column_close(specs[i].column, cf_test_comm(), &err), &err);
    }
    cf_file_close(f);
}

/* A column named `name` exists in the test's File, as rank 0 sees it. */
static int column_exists(const char *name)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/f/%s", cf_test_dir(), name);
    struct stat st;
    int here = cf_test_rank() == 0 ? stat(path, &st) == 0 : 0;
    MPI_Bcast(&here, 1, MPI_INT, 0, cf_test_comm());
    return here;
}

/* Creating column "x" (f8, 10 rows) with options.chunk_rows `rows` (this
 * rank's) is refused with CF_EARG, alike on every rank, naming `what`. */
static void create_refused(cf_file *f, int64_t rows, const char *what)
{
    cf_mpi_options o;
    cf_mpi_options_init(&o);
    o.chunk_rows = rows;
    cf_error err;
    cf_column *c = NULL;
    int rc = cf_mpi_column_create(&c, f, cf_test_comm(), "x", "f8", 1, 10, &o, NULL, &err);
    CHECK(rc == CF_EARG);
    CHECK_AGREED(rc, &err);
    CHECK(strstr(err.message, what) != NULL);
    CHECK(c == NULL);
}

static void test_disagreeing_ranks_fail_everywhere(void)
{
    if (cf_test_size() < 2) return; /* one rank always agrees */
    cf_file *f = cf_test_mpi_file();
    create_refused(f, cf_test_rank() == 0 ? CHUNK : CHUNK + 1, "options.chunk_rows");
    cf_file_close(f);
    CHECK(!column_exists("x"));
}

static void test_bad_chunk_rows_refused(void)
{
    cf_file *f = cf_test_mpi_file();
    create_refused(f, -3, "chunk_rows");
    /* more than a chunk may hold: refused by rank 0's core, on every rank */
    create_refused(f, ((int64_t)1 << 40) + 1, "rows per chunk");
    CHECK(!column_exists("x"));
    /* a column without data has no chunks: the option does not apply */
    cf_mpi_options o;
    cf_mpi_options_init(&o);
    o.chunk_rows = CHUNK;
    cf_error err;
    cf_column *c = NULL;
    CHECK_OK(cf_mpi_column_create(&c, f, cf_test_comm(), "meta", NULL, 0, 0, &o, NULL, &err), &err);
    CHECK_OK(cf_mpi_column_close(c, cf_test_comm(), &err), &err);
    cf_file_close(f);
    CHECK(column_exists("meta"));
}

CF_MPI_TESTS(CF_TEST(test_create_chooses_chunks), CF_TEST(test_create_many_chooses_chunks),
             CF_TEST(test_disagreeing_ranks_fail_everywhere), CF_TEST(test_bad_chunk_rows_refused))
