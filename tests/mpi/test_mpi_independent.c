/* test_mpi_independent.c - the independent-write mode of colfile_mpi.h:
 * handles from cf_mpi_column_create written by each rank alone with the
 * core's cf_column_write (several calls, any order, rows split with
 * cf_plan_share), read back alone, then one collective close: the same
 * bytes as a collective write, checksums and all. */
#include "mpi_harness.h"

#define TOTAL 1003

static void fill(int64_t first, int64_t n, double *out)
{
    for (int64_t i = 0; i < n; i++)
        for (int j = 0; j < 2; j++) out[i * 2 + j] = (double)(first + i) * 4 + j;
}

/* Column "v" (f8 x2, TOTAL rows in 3 blobs) of File dir: written with one
 * cf_mpi_column_write, or independently. */
static void write_file(const char *dir, int independent)
{
    int rank = cf_test_rank(), size = cf_test_size();
    cf_error err;
    cf_file *f = NULL;
    cf_column *c = NULL;
    int64_t first = -1;
    /* The even split of a global size, as any reader would do it. */
    int64_t mine = cf_plan_share(TOTAL, size, rank, &first), got_first = -1;
    cf_mpi_options o;
    cf_mpi_options_init(&o);
    o.nfile = 3;
    CHECK_OK(cf_mpi_file_open(&f, cf_test_comm(), dir, CF_OPEN_WRITE | CF_OPEN_CREATE, &err), &err);
    CHECK_OK(cf_mpi_column_create(&c, f, cf_test_comm(), "v", "f8", 2, mine, &o, &got_first, &err), &err);
    CHECK_EQ_INT(got_first, first);
    double *buf = malloc((size_t)(mine > 0 ? mine : 1) * 2 * sizeof *buf);
    fill(first, mine, buf);
    if (!independent) {
        CHECK_OK(cf_mpi_column_write(c, cf_test_comm(), first, mine, buf, NULL, 16, 8, NULL, &err), &err);
    } else {
        /* Second half first, then the first half; no rank waits for another. */
        int64_t half = mine / 2;
        CHECK_OK(cf_column_write(c, first + half, mine - half, buf + half * 2, NULL, 16, 8, &err), &err);
        CHECK_OK(cf_column_write(c, first, half, buf, NULL, 16, 8, &err), &err);
        /* This rank reads its rows back at once, alone. */
        double *back = malloc((size_t)(mine > 0 ? mine : 1) * 2 * sizeof *back);
        CHECK_OK(cf_column_read(c, first, mine, back, NULL, 16, 8, &err), &err);
        CHECK(mine == 0 || memcmp(back, buf, (size_t)mine * 16) == 0);
        free(back);
    }
    free(buf);
    CHECK_OK(cf_mpi_column_close(c, cf_test_comm(), &err), &err);
    cf_file_close(f);
}

static void test_independent_writes_equal_collective(void)
{
    char a[4200], b[4200];
    snprintf(a, sizeof a, "%s/collective", cf_test_dir());
    snprintf(b, sizeof b, "%s/independent", cf_test_dir());
    write_file(a, 0);
    write_file(b, 1);
    CHECK(cf_test_same_tree(a, b));
    if (cf_test_rank() == 0) {
        cf_error err;
        cf_file *f = NULL;
        cf_column *c = NULL;
        CHECK_OK(cf_file_open(&f, b, CF_OPEN_READ, &err), &err);
        CHECK_OK(cf_column_open(&c, f, "v", &err), &err);
        CHECK_EQ_INT(cf_column_size(c), TOTAL);
        for (int64_t i = 0; i < cf_column_nfile(c); i++) {
            unsigned st = 99;
            uint32_t crc;
            CHECK_OK(cf_column_verify_blob(c, i, &st, &err), &err);
            CHECK_EQ_INT(st, 0);
            CHECK(cf_column_blob_crc32c(c, i, &crc)); /* the CRC is known */
        }
        double *all = malloc(TOTAL * 2 * sizeof *all), *want = malloc(TOTAL * 2 * sizeof *want);
        fill(0, TOTAL, want);
        CHECK_OK(cf_column_read(c, 0, TOTAL, all, NULL, 16, 8, &err), &err);
        CHECK_EQ_MEM(all, want, TOTAL * 2 * sizeof *all);
        free(all);
        free(want);
        cf_column_close(c, NULL);
        cf_file_close(f);
    }
}

CF_MPI_TESTS(CF_TEST(test_independent_writes_equal_collective))
