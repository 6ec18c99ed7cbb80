/* test_mpi_independent_reads.c - reading metadata and rows needs no other
 * rank (run with 1, 2 and 4 ranks): on the handle of cf_mpi_file_open,
 * read-only or writable, the core's cf_file_list, cf_column_open,
 * cf_column_attr_get and cf_column_read work on one rank alone, on some
 * ranks and on all, and see what the collectives before them committed. */
#include "mpi_harness.h"

/* The File: column "g/x" (i8, 4 rows per rank, rank order) with attribute
 * "unit", and the File attribute "BoxSize", written collectively. */
static void write_file(const char *dir, MPI_Comm comm)
{
    cf_error err;
    cf_file *f = NULL;
    cf_column *c = NULL, *a = NULL;
    int64_t first = -1;
    int rank;
    MPI_Comm_rank(comm, &rank);
    CHECK_OK(cf_mpi_file_open(&f, comm, dir, CF_OPEN_WRITE | CF_OPEN_CREATE, &err), &err);
    CHECK_OK(cf_mpi_column_create(&c, f, comm, "g/x", "i8", 1, 4, NULL, &first, &err), &err);
    int64_t rows[4];
    for (int i = 0; i < 4; i++) rows[i] = first + i;
    CHECK_OK(cf_mpi_column_write(c, comm, first, 4, rows, NULL, 8, 8, NULL, &err), &err);
    CHECK_OK(cf_mpi_column_attr_set(c, comm, "unit", "S1", 3, "kpc", &err), &err);
    CHECK_OK(cf_mpi_column_close(c, comm, &err), &err);
    CHECK_OK(cf_mpi_column_open(&a, f, comm, ".", &err), &err);
    double box = 1000.0;
    CHECK_OK(cf_mpi_column_attr_set(a, comm, "BoxSize", "f8", 1, &box, &err), &err);
    CHECK_OK(cf_mpi_column_close(a, comm, &err), &err);
    cf_file_close(f);
}

/* Every metadata read of the File, and every row, by this rank alone. */
static void read_alone(cf_file *f, int size)
{
    cf_error err;
    char **names = NULL;
    int64_t count = 0;
    CHECK_OK(cf_file_list(f, &names, &count, &err), &err);
    CHECK_EQ_INT(count, 1);
    if (count == 1) CHECK_EQ_STR(names[0], "g/x");
    cf_names_free(names, count);

    cf_column *c = NULL;
    CHECK_OK(cf_column_open(&c, f, "g/x", &err), &err);
    if (!c) return;
    CHECK_EQ_INT(cf_column_size(c), 4 * (int64_t)size);
    const char *dtype = NULL;
    int64_t nmemb = 0;
    const void *data = NULL;
    CHECK_OK(cf_column_attr_get(c, "unit", &dtype, &nmemb, &data, &err), &err);
    CHECK_EQ_INT(nmemb, 3);
    CHECK(data && memcmp(data, "kpc", 3) == 0);
    int64_t *got = malloc((size_t)size * 4 * sizeof *got);
    CHECK_OK(cf_column_read(c, 0, 4 * (int64_t)size, got, NULL, 8, 8, &err), &err);
    for (int64_t i = 0; i < 4 * (int64_t)size; i++) CHECK_EQ_INT(got[i], i);
    free(got);
    CHECK_OK(cf_column_close(c, &err), &err);

    cf_column *a = NULL;
    CHECK_OK(cf_column_open(&a, f, ".", &err), &err);
    if (!a) return;
    CHECK_OK(cf_column_attr_get(a, "BoxSize", &dtype, &nmemb, &data, &err), &err);
    double box = 0;
    if (data) memcpy(&box, data, sizeof box);
    CHECK(box == 1000.0);
    CHECK_OK(cf_column_close(a, &err), &err);
}

static void reads_on_subsets(int flags)
{
    MPI_Comm comm = cf_test_comm();
    int rank = cf_test_rank(), size = cf_test_size();
    char dir[4200];
    snprintf(dir, sizeof dir, "%s/f", cf_test_dir());
    write_file(dir, comm);
    cf_error err;
    cf_file *f = NULL;
    CHECK_OK(cf_mpi_file_open(&f, comm, dir, flags, &err), &err);
    if (!f) return;
    /* rank 0 alone, the last rank alone, the odd ranks, then all */
    for (int round = 0; round < 4; round++) {
        int mine = round == 0 ? rank == 0 : round == 1 ? rank == size - 1 :
                   round == 2 ? rank % 2 == 1 : 1;
        if (mine) read_alone(f, size);
        MPI_Barrier(comm); /* the others went on meanwhile: nothing waited for them */
    }
    /* and the File's collectives still work: a collective column open */
    cf_column *c = NULL;
    CHECK_OK(cf_mpi_column_open(&c, f, comm, "g/x", &err), &err);
    CHECK_OK(cf_mpi_column_close(c, comm, &err), &err);
    cf_file_close(f);
}

static void test_reads_read_only(void) { reads_on_subsets(CF_OPEN_READ); }
static void test_reads_writable(void) { reads_on_subsets(CF_OPEN_WRITE); }

CF_MPI_TESTS(CF_TEST(test_reads_read_only), CF_TEST(test_reads_writable))
