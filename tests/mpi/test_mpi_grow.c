/* test_mpi_grow.c - collective appends (cf_mpi_column_grow): uneven and
 * empty ranks, handles from create and from open, the planned blob count,
 * blobs aligned to ranks, byte-identity with a serial cf_column_grow, the
 * previous version after a writer that never closed, and errors agreed on
 * every rank. */
#include "mpi_harness.h"

#include <sys/stat.h>

#define STEPS 5

static double value(int64_t row) { return (double)row * 0.5 - 7; }

/* Rows rank r holds in step s (0: the create): uneven, some ranks none. */
static int64_t rows_of(int s, int r) { return (int64_t)((r * 7 + s * 3) % 5) + (r == 0 && s == 0 ? 1 : 0) - (r % 2); }

static int64_t step_rows(int s, int r) { return rows_of(s, r) > 0 ? rows_of(s, r) : 0; }

static int64_t step_total(int s)
{
    int64_t t = 0;
    for (int r = 0; r < cf_test_size(); r++) t += step_rows(s, r);
    return t;
}

static void write_mine(cf_column *c, int64_t first, int64_t n)
{
    cf_error err;
    double *buf = malloc((size_t)(n > 0 ? n : 1) * sizeof *buf);
    for (int64_t i = 0; i < n; i++) buf[i] = value(first + i);
    CHECK_OK(cf_mpi_column_write(c, cf_test_comm(), first, n, buf, NULL, 8, 8, NULL, &err), &err);
    free(buf);
}

/* A new File dir (the test directory's "f", its path put in dir) with a
 * column x of `rows` f8 per rank (first row in *first), created
 * collectively and, if `write`, written (write_mine). */
static cf_column *new_x(char dir[4200], cf_file **f, int64_t rows, int write, int64_t *first)
{
    cf_error err;
    cf_column *c = NULL;
    snprintf(dir, 4200, "%s/f", cf_test_dir());
    CHECK_OK(cf_mpi_file_open(f, cf_test_comm(), dir, CF_OPEN_WRITE | CF_OPEN_CREATE, &err), &err);
    CHECK_OK(cf_mpi_column_create(&c, *f, cf_test_comm(), "x", "f8", 1, rows, NULL, first, &err), &err);
    if (write) write_mine(c, *first, rows);
    return c;
}

/* Rank 0 checks column "x" of dir: its size, nfile, values and blobs. */
static void check_column(const char *dir, int64_t size, int64_t nfile)
{
    if (cf_test_rank() != 0) return;
    cf_error err;
    cf_file *f = NULL;
    cf_column *c = NULL;
    CHECK_OK(cf_file_open(&f, dir, CF_OPEN_READ, &err), &err);
    CHECK_OK(cf_column_open(&c, f, "x", &err), &err);
    if (c) {
        CHECK_EQ_INT(cf_column_size(c), size);
        CHECK_EQ_INT(cf_column_nfile(c), nfile);
        double *got = malloc((size_t)(size > 0 ? size : 1) * sizeof *got);
        CHECK_OK(cf_column_read(c, 0, size, got, NULL, 8, 8, &err), &err);
        for (int64_t i = 0; i < size; i++) CHECK(got[i] == value(i));
        free(got);
        for (int64_t i = 0; i < cf_column_nfile(c); i++) {
            unsigned st = 99;
            CHECK_OK(cf_column_verify_blob(c, i, &st, &err), &err);
            CHECK_EQ_INT(st, 0);
        }
        cf_column_close(c, NULL);
    }
    cf_file_close(f);
}

/* Create with step 0's rows, then STEPS appends of uneven rows, each
 * written collectively; one close at the end.  The blob count is one per
 * append that adds rows; a serial write of the same blobs is identical. */
static void test_appends_match_serial(void)
{
    char dir[4200], ref[4200];
    snprintf(dir, sizeof dir, "%s/mpi", cf_test_dir());
    snprintf(ref, sizeof ref, "%s/serial", cf_test_dir());
    int rank = cf_test_rank();
    cf_error err;
    cf_file *f = NULL;
    cf_column *c = NULL;
    int64_t first = -1, size = 0, nfile = 1;
    cf_mpi_options o;
    cf_mpi_options_init(&o);
    o.nfile = 1;
    CHECK_OK(cf_mpi_file_open(&f, cf_test_comm(), dir, CF_OPEN_WRITE | CF_OPEN_CREATE, &err), &err);
    CHECK_OK(cf_mpi_column_create(&c, f, cf_test_comm(), "x", "f8", 1, step_rows(0, rank), &o, &first, &err), &err);
    write_mine(c, first, step_rows(0, rank));
    size = step_total(0);
    for (int s = 1; s <= STEPS; s++) {
        int64_t mine = step_rows(s, rank);
        CHECK_OK(cf_mpi_column_grow(&c, f, cf_test_comm(), mine, NULL, &first, &err), &err);
        int64_t expect = size;
        for (int r = 0; r < rank; r++) expect += step_rows(s, r);
        CHECK_EQ_INT(first, expect);
        CHECK_EQ_INT(cf_column_size(c), size + step_total(s));
        write_mine(c, first, mine);
        size += step_total(s);
        nfile += step_total(s) > 0;
    }
    CHECK_OK(cf_mpi_column_close(c, cf_test_comm(), &err), &err);
    cf_file_close(f);
    check_column(dir, size, nfile);

    if (rank == 0) { /* the same appends, serially */
        CHECK_OK(cf_file_open(&f, ref, CF_OPEN_WRITE | CF_OPEN_CREATE, &err), &err);
        CHECK_OK(cf_column_create(&c, f, "x", "f8", 1, step_total(0), 1, &err), &err);
        int64_t at = 0;
        for (int s = 0; s <= STEPS; s++) {
            int64_t n = step_total(s);
            if (s > 0 && n > 0) CHECK_OK(cf_column_grow(c, n, 1, &err), &err);
            double *buf = malloc((size_t)(n > 0 ? n : 1) * sizeof *buf);
            for (int64_t i = 0; i < n; i++) buf[i] = value(at + i);
            CHECK_OK(cf_column_write(c, at, n, buf, NULL, 8, 8, &err), &err);
            free(buf);
            at += n;
        }
        CHECK_OK(cf_column_close(c, &err), &err);
        cf_file_close(f);
    }
    CHECK(cf_test_same_tree(dir, ref));
}

/* The case: grow a column opened (not created) collectively, with
 * rows on the last rank only, close, and again with an independent write. */
static void test_grow_opened_column(void)
{
    char dir[4200];
    int rank = cf_test_rank(), last = cf_test_size() - 1;
    cf_error err;
    cf_file *f = NULL;
    int64_t first = -1;
    cf_column *c = new_x(dir, &f, 3, 1, &first);
    CHECK_OK(cf_mpi_column_close(c, cf_test_comm(), &err), &err);
    int64_t size = 3 * (int64_t)cf_test_size();
    for (int round = 0; round < 2; round++) {
        c = NULL;
        CHECK_OK(cf_mpi_column_open(&c, f, cf_test_comm(), "x", &err), &err);
        int64_t mine = rank == last ? 4 : 0;
        CHECK_OK(cf_mpi_column_grow(&c, f, cf_test_comm(), mine, NULL, &first, &err), &err);
        CHECK_EQ_INT(first, size);
        if (round == 0) {
            write_mine(c, first, mine);
        } else if (mine) { /* independent: the core's write on this rank's handle */
            double buf[4];
            for (int i = 0; i < 4; i++) buf[i] = value(first + i);
            CHECK_OK(cf_column_write(c, first, 4, buf, NULL, 8, 8, &err), &err);
        }
        CHECK_OK(cf_mpi_column_close(c, cf_test_comm(), &err), &err);
        size += 4;
    }
    cf_file_close(f);
    check_column(dir, size, 3);
}

/* An append of no rows at all changes nothing. */
static void test_empty_append_adds_no_blob(void)
{
    char dir[4200];
    cf_error err;
    cf_file *f = NULL;
    int64_t first = -1;
    cf_column *c = new_x(dir, &f, 2, 1, &first);
    CHECK_OK(cf_mpi_column_grow(&c, f, cf_test_comm(), 0, NULL, &first, &err), &err);
    CHECK_EQ_INT(first, 2 * (int64_t)cf_test_size());
    CHECK_EQ_INT(cf_column_nfile(c), 1);
    CHECK_OK(cf_mpi_column_close(c, cf_test_comm(), &err), &err);
    cf_file_close(f);
    check_column(dir, 2 * (int64_t)cf_test_size(), 1);
}

/* Planned blobs: nfile from the options, or one per blob_bytes of the
 * appended bytes (at most one per rank); aligned blobs follow the ranks. */
static void test_blob_plans(void)
{
    char dir[4200];
    int rank = cf_test_rank(), size = cf_test_size();
    cf_error err;
    cf_file *f = NULL;
    int64_t first = -1, total = 0;
    cf_column *c = new_x(dir, &f, 0, 0, &first);
    /* 100 rows of 8 bytes per rank, blobs of 200 bytes: min(4 * size, size). */
    cf_mpi_options o;
    cf_mpi_options_init(&o);
    o.blob_bytes = 200;
    CHECK_OK(cf_mpi_column_grow(&c, f, cf_test_comm(), 100, &o, &first, &err), &err);
    write_mine(c, first, 100);
    total += 100 * (int64_t)size;
    CHECK_EQ_INT(cf_column_nfile(c), 1 + cf_plan_nfile(800 * (int64_t)size, size, 200));
    int64_t before = cf_column_nfile(c);
    /* Aligned: rank r adds r+1 rows, one blob per rank. */
    cf_mpi_options_init(&o);
    o.nfile = size;
    o.align_blobs_to_ranks = 1;
    CHECK_OK(cf_mpi_column_grow(&c, f, cf_test_comm(), rank + 1, &o, &first, &err), &err);
    write_mine(c, first, rank + 1);
    CHECK_EQ_INT(cf_column_nfile(c), before + size);
    for (int r = 0; r < size; r++) CHECK_EQ_INT(cf_column_blob_rows(c, before + r), r + 1);
    total += (int64_t)size * (size + 1) / 2;
    /* nfile given. */
    cf_mpi_options_init(&o);
    o.nfile = 3;
    CHECK_OK(cf_mpi_column_grow(&c, f, cf_test_comm(), 1, &o, &first, &err), &err);
    write_mine(c, first, 1);
    total += size;
    CHECK_OK(cf_mpi_column_close(c, cf_test_comm(), &err), &err);
    cf_file_close(f);
    check_column(dir, total, before + size + 3);
}

/* A writer that grows and writes but never closes (its processes die)
 * leaves the previous version: readers meanwhile and afterwards see it,
 * every blob checks, and the next append works. */
static void test_uncommitted_append_leaves_previous_version(void)
{
    char dir[4200];
    int rank = cf_test_rank();
    cf_error err;
    cf_file *f = NULL;
    int64_t first = -1;
    cf_column *c = new_x(dir, &f, 2, 1, &first);
    CHECK_OK(cf_mpi_column_close(c, cf_test_comm(), &err), &err);
    int64_t size = 2 * (int64_t)cf_test_size();
    c = NULL;
    CHECK_OK(cf_mpi_column_open(&c, f, cf_test_comm(), "x", &err), &err);
    CHECK_OK(cf_mpi_column_grow(&c, f, cf_test_comm(), 3, NULL, &first, &err), &err);
    write_mine(c, first, 3);
    MPI_Barrier(cf_test_comm());
    check_column(dir, size, 1); /* a reader sees the committed version */
    /* The processes "die": their handles go without a commit. */
    cf_column_forget(c);
    cf_file_close(f);
    MPI_Barrier(cf_test_comm());
    check_column(dir, size, 1);
    if (rank == 0) { /* the new blob was written, but no header lists it */
        char blob[4300];
        struct stat st;
        snprintf(blob, sizeof blob, "%s/x/000001", dir);
        CHECK(stat(blob, &st) == 0 && st.st_size == 3 * 8 * (int64_t)cf_test_size());
    }
    /* A new writer appends as if nothing had happened. */
    CHECK_OK(cf_mpi_file_open(&f, cf_test_comm(), dir, CF_OPEN_WRITE, &err), &err);
    c = NULL;
    CHECK_OK(cf_mpi_column_open(&c, f, cf_test_comm(), "x", &err), &err);
    CHECK_OK(cf_mpi_column_grow(&c, f, cf_test_comm(), 1, NULL, &first, &err), &err);
    CHECK_EQ_INT(first, size + rank);
    write_mine(c, first, 1);
    CHECK_OK(cf_mpi_column_close(c, cf_test_comm(), &err), &err);
    cf_file_close(f);
    check_column(dir, size + cf_test_size(), 2);
}

/* Errors are agreed, and change nothing. */
static void test_grow_errors(void)
{
    char dir[4200];
    int rank = cf_test_rank(), last = cf_test_size() - 1;
    cf_error err;
    cf_file *f = NULL;
    int64_t first = -1;
    cf_column *c = new_x(dir, &f, 2, 1, &first);
    int rc = cf_mpi_column_grow(&c, f, cf_test_comm(), rank == last ? -1 : 1, NULL, &first, &err);
    CHECK_EQ_INT(rc, CF_EARG);
    CHECK_AGREED(rc, &err);
    char want[4400];
    snprintf(want, sizeof want, "rank %d: %s/x: cannot add -1 rows here", last, dir);
    CHECK_EQ_STR(err.message, want);
    if (cf_test_size() > 1) {
        cf_mpi_options o;
        cf_mpi_options_init(&o);
        o.nfile = rank == last ? 2 : 1;
        rc = cf_mpi_column_grow(&c, f, cf_test_comm(), 1, &o, &first, &err);
        CHECK_EQ_INT(rc, CF_EARG);
        CHECK_AGREED(rc, &err);
        CHECK(strstr(err.message, "options.nfile is 2 here but 1 on rank 0") != NULL);
    }
    /* The earlier writes were not lost by the refused calls. */
    CHECK_EQ_INT(cf_column_nfile(c), 1);
    CHECK_OK(cf_mpi_column_close(c, cf_test_comm(), &err), &err);
    cf_file_close(f);
    check_column(dir, 2 * (int64_t)cf_test_size(), 1);

    /* Read-only handles cannot grow. */
    CHECK_OK(cf_mpi_file_open(&f, cf_test_comm(), dir, CF_OPEN_READ, &err), &err);
    c = NULL;
    CHECK_OK(cf_mpi_column_open(&c, f, cf_test_comm(), "x", &err), &err);
    rc = cf_mpi_column_grow(&c, f, cf_test_comm(), 1, NULL, &first, &err);
    CHECK_EQ_INT(rc, CF_EREADONLY);
    CHECK_AGREED(rc, &err);
    CHECK_OK(cf_mpi_column_close(c, cf_test_comm(), &err), &err);
    cf_file_close(f);
}

CF_MPI_TESTS(CF_TEST(test_appends_match_serial), CF_TEST(test_grow_opened_column),
             CF_TEST(test_empty_append_adds_no_blob), CF_TEST(test_blob_plans),
             CF_TEST(test_uncommitted_append_leaves_previous_version), CF_TEST(test_grow_errors))
