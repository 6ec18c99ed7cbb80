/* test_mpi_overlap.c - a collective write whose ranks' rows overlap (a
 * wrong start, usually) fails on every rank with one message naming the
 * column, the two ranks and their rows, before any byte is written, in
 * every mode; gaps and empty ranges are fine. */
#include "mpi_harness.h"
#include "overlap_refused.h"

#include <sys/stat.h>

static const int modes[] = { CF_IO_THROTTLED, CF_IO_AGGREGATED, CF_IO_AUTO };
static const char *mode_names[] = { "throttled", "aggregated", "auto" };

#define ROWS 5 /* per rank */

static double value(int64_t row) { return (double)row * 3 + 0.5; }

/* A File named after write mode m (its path put in dir) with column "x" of
 * ROWS rows per rank in one blob per rank. */
static cf_column *create_x(cf_file **f, char dir[4200], int m)
{
    cf_error err;
    cf_column *c = NULL;
    snprintf(dir, 4200, "%s/%s", cf_test_dir(), mode_names[m]);
    cf_mpi_options o;
    cf_mpi_options_init(&o);
    o.nfile = cf_test_size();
    CHECK_OK(cf_mpi_file_open(f, cf_test_comm(), dir, CF_OPEN_WRITE | CF_OPEN_CREATE | CF_OPEN_TRUNCATE, &err),
             &err);
    CHECK_OK(cf_mpi_column_create(&c, *f, cf_test_comm(), "x", "f8", 1, ROWS, &o, NULL, &err), &err);
    return c;
}

/* Every blob file of x is still empty (rank 0 looks; all get the answer). */
static int blobs_empty(const char *dir)
{
    int empty = 1;
    if (cf_test_rank() == 0) {
        for (int i = 0; i < cf_test_size(); i++) {
            char p[4200];
            struct stat st;
            snprintf(p, sizeof p, "%s/x/%06X", dir, i);
            if (stat(p, &st) == 0 && st.st_size != 0) empty = 0;
        }
    }
    MPI_Bcast(&empty, 1, MPI_INT, 0, cf_test_comm());
    return empty;
}

/* Write [start, start+count) of values on this rank in `mode`. */
static int write_rows(cf_column *c, int mode, int64_t start, int64_t count, cf_error *err)
{
    double buf[4 * ROWS];
    for (int64_t i = 0; i < count; i++) buf[i] = value(start + i);
    cf_mpi_options o;
    cf_mpi_options_init(&o);
    o.mode = mode;
    return cf_mpi_column_write(c, cf_test_comm(), start, count, buf, NULL, 8, 8, &o, err);
}

/* The classic mistake: every rank passes start 0 for its ROWS rows. */
static void test_same_start_everywhere(void)
{
    if (cf_test_size() < 2) return; /* one rank cannot overlap itself */
    for (int m = 0; m < 3; m++) {
        char dir[4200];
        cf_file *f = NULL;
        cf_error err;
        cf_column *c = create_x(&f, dir, m);
        int rc = write_rows(c, modes[m], 0, ROWS, &err);
        check_overlap_refused(rc, &err, dir, "x", 0, 0, 5, 1, 0, 5);
        CHECK(blobs_empty(dir)); /* nothing was written */
        /* The File stays usable: the right starts succeed. */
        int64_t first = (int64_t)cf_test_rank() * ROWS;
        CHECK_OK(write_rows(c, modes[m], first, ROWS, &err), &err);
        CHECK_OK(cf_mpi_column_close(c, cf_test_comm(), &err), &err);
        cf_file_close(f);
        if (cf_test_rank() == 0) {
            cf_column *r = NULL;
            CHECK_OK(cf_file_open(&f, dir, CF_OPEN_READ, &err), &err);
            CHECK_OK(cf_column_open(&r, f, "x", &err), &err);
            int64_t n = cf_column_size(r);
            double *got = malloc((size_t)n * sizeof *got);
            CHECK_OK(cf_column_read(r, 0, n, got, NULL, 8, 8, &err), &err);
            for (int64_t i = 0; i < n; i++) CHECK(got[i] == value(i));
            for (int64_t i = 0; i < cf_column_nfile(r); i++) {
                unsigned st = 99;
                CHECK_OK(cf_column_verify_blob(r, i, &st, &err), &err);
                CHECK_EQ_INT(st, 0);
            }
            free(got);
            cf_column_close(r, NULL);
            cf_file_close(f);
        }
    }
}

/* An overlap between the last two ranks only, out of rank order, and rows
 * of a rank that reach into a later rank's: named exactly. */
static void test_partial_overlap_named(void)
{
    int size = cf_test_size(), rank = cf_test_rank();
    if (size < 2) return;
    for (int m = 0; m < 3; m++) {
        char dir[4200];
        cf_file *f = NULL;
        cf_error err;
        cf_column *c = create_x(&f, dir, m);
        /* The last rank writes first (rows 0..1), the one before it writes
         * rows 1..5: they share row 1.  The others write their own rows
         * after them. */
        int64_t start = (int64_t)rank * ROWS, count = ROWS;
        if (rank == size - 1) start = 0, count = 2;
        if (rank == size - 2) start = 1, count = 4;
        if (rank < size - 2) start = (int64_t)(rank + 1) * ROWS;
        int rc = write_rows(c, modes[m], start, count, &err);
        check_overlap_refused(rc, &err, dir, "x", size - 2, 1, 5, size - 1, 0, 2);
        CHECK(blobs_empty(dir));
        CHECK_OK(cf_mpi_column_close(c, cf_test_comm(), &err), &err);
        cf_file_close(f);
    }
}

/* Gaps, ranges out of rank order that do not meet, and empty ranges
 * anywhere (even inside another rank's rows) are fine. */
static void test_gaps_and_empty_ranges_pass(void)
{
    int size = cf_test_size(), rank = cf_test_rank();
    for (int m = 0; m < 3; m++) {
        char dir[4200];
        cf_file *f = NULL;
        cf_error err;
        cf_column *c = create_x(&f, dir, m);
        /* Rank r writes the first 3 rows of rank (size-1-r)'s share; the
         * last rank also writes nothing at row 1. */
        int64_t start = (int64_t)(size - 1 - rank) * ROWS;
        CHECK_OK(write_rows(c, modes[m], start, 3, &err), &err);
        CHECK_OK(write_rows(c, modes[m], rank == size - 1 ? 1 : start + 3, rank == size - 1 ? 0 : 2, &err), &err);
        CHECK_OK(cf_mpi_column_close(c, cf_test_comm(), &err), &err);
        cf_file_close(f);
        if (rank == 0) {
            cf_column *r = NULL;
            CHECK_OK(cf_file_open(&f, dir, CF_OPEN_READ, &err), &err);
            CHECK_OK(cf_column_open(&r, f, "x", &err), &err);
            /* Every rank's first 3 rows, and rows 3..4 of all but the last
             * rank's share (written by rank 0 ... size-2 in reverse). */
            for (int s = 0; s < size; s++) {
                double got[ROWS];
                int64_t n = s == 0 ? 3 : ROWS;
                CHECK_OK(cf_column_read(r, (int64_t)s * ROWS, n, got, NULL, 8, 8, &err), &err);
                for (int64_t i = 0; i < n; i++) CHECK(got[i] == value((int64_t)s * ROWS + i));
            }
            cf_column_close(r, NULL);
            cf_file_close(f);
        }
    }
}

CF_MPI_TESTS(CF_TEST(test_same_start_everywhere), CF_TEST(test_partial_overlap_named),
             CF_TEST(test_gaps_and_empty_ranges_pass))
