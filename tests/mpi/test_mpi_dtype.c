/* test_mpi_dtype.c - dtype errors of collective create and write name the
 * column and suggest the token a type name means, with the message of the
 * serial core (prefixed "rank 0: ") and of colfile.mpi (the Python case
 * cases_dtype_errors.py expects the same texts). */
#include "mpi_harness.h"

static void test_create_names_column_and_hints(void)
{
    static const char *cases[][2] = {
        { "float64", "unreasonable dtype 'float64': width 'loat64' is not a decimal number; did you mean 'f8'?" },
        { "f3", "unreasonable dtype 'f3': kind 'f' has no width 3 (allowed: 2, 4 or 8)" },
        { "U4", "unreasonable dtype 'U4': unsupported kind 'U' (colfile stores i u f c b S)" },
    };
    char dir[4200];
    snprintf(dir, sizeof dir, "%s/f", cf_test_dir());
    cf_file *f = NULL;
    cf_error err;
    CHECK_OK(cf_mpi_file_open(&f, cf_test_comm(), dir, CF_OPEN_WRITE | CF_OPEN_CREATE, &err), &err);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char want[4600];
        snprintf(want, sizeof want, "rank 0: %s/x: %s", dir, cases[i][1]);
        cf_column *c = NULL;
        int rc = cf_mpi_column_create(&c, f, cf_test_comm(), "x", cases[i][0], 1, 4, NULL, NULL, &err);
        CHECK_EQ_INT(rc, CF_EDTYPE);
        CHECK_AGREED(rc, &err);
        CHECK_EQ_STR(err.message, want);
        CHECK(c == NULL);
        if (cf_test_rank() == 0) { /* the serial core says the same */
            cf_error serr;
            CHECK_EQ_INT(cf_column_create(&c, f, "x", cases[i][0], 1, 4, 1, &serr), CF_EDTYPE);
            CHECK_EQ_STR(serr.message, want + strlen("rank 0: "));
        }
    }
    cf_file_close(f);
}

static void test_write_buffer_dtype_names_column(void)
{
    char dir[4200], want[4600];
    snprintf(dir, sizeof dir, "%s/f", cf_test_dir());
    cf_file *f = NULL;
    cf_column *c = NULL;
    cf_error err;
    int64_t first = 0;
    CHECK_OK(cf_mpi_file_open(&f, cf_test_comm(), dir, CF_OPEN_WRITE | CF_OPEN_CREATE, &err), &err);
    CHECK_OK(cf_mpi_column_create(&c, f, cf_test_comm(), "x", "f8", 1, 2, NULL, &first, &err), &err);
    float v[2] = { 1.5f, 2.5f };
    int rc = cf_mpi_column_write(c, cf_test_comm(), first, 2, v, "float32", 4, 4, NULL, &err);
    CHECK_EQ_INT(rc, CF_EDTYPE);
    CHECK_AGREED(rc, &err);
    snprintf(want, sizeof want,
             "rank 0: %s/x: unreasonable dtype 'float32': width 'loat32' is not a decimal number; did you mean 'f4'?",
             dir);
    CHECK_EQ_STR(err.message, want);
    CHECK_OK(cf_mpi_column_write(c, cf_test_comm(), first, 2, v, "f4", 4, 4, NULL, &err), &err);
    CHECK_OK(cf_mpi_column_close(c, cf_test_comm(), &err), &err);
    cf_file_close(f);
}

CF_MPI_TESTS(CF_TEST(test_create_names_column_and_hints), CF_TEST(test_write_buffer_dtype_names_column))
