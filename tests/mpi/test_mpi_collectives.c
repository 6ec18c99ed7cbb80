/* test_mpi_collectives.c - how many blocking collectives the MPI layer
 * calls: an MPI profiling interposer (this program's MPI_Bcast & co. count
 * and call PMPI_*) counts them around each call, on every rank (they agree:
 * every rank makes the same collectives).  Counts, not timings: oversubscribed,
 * every agreement round costs milliseconds.  The build with tiny message
 * sizes (CF_MPI_TINY_BUILD) splits messages on purpose: it runs the same
 * calls without the bounds. */
#include "mpi_harness.h"
#include "collective_counter.h"
#include "chunked_column.h"
#include "overlap_refused.h"

#ifdef CF_MPI_TINY_BUILD
#define AT_MOST(n, bound) ((void)(n), (void)(bound))
#else
#define AT_MOST(n, bound) CHECK((n) <= (bound))
#endif

static void test_counts_per_column(void)
{
    char dir[4200];
    snprintf(dir, sizeof dir, "%s/f", cf_test_dir());
    cf_error err;
    cf_file *f = NULL;
    cf_column *c = NULL;
    int64_t first = 0, rows = 10;
    double buf[10] = { 0 };
    long n_open, n_create, n_write, n_close, n_gopen, n_attr, n_gclose;
    COUNT(n_open, CHECK_OK(cf_mpi_file_open(&f, cf_test_comm(), dir, CF_OPEN_WRITE | CF_OPEN_CREATE, &err), &err));
    report("cf_mpi_file_open", n_open);
    COUNT(n_create, CHECK_OK(cf_mpi_column_create(&c, f, cf_test_comm(), "g/x", "f8", 1, rows, NULL, &first, &err),
                             &err));
    report("cf_mpi_column_create", n_create);
    COUNT(n_write, CHECK_OK(cf_mpi_column_write(c, cf_test_comm(), first, rows, buf, NULL, 8, 8, NULL, &err), &err));
    report("cf_mpi_column_write", n_write);
    COUNT(n_close, CHECK_OK(cf_mpi_column_close(c, cf_test_comm(), &err), &err));
    report("cf_mpi_column_close", n_close);
    double v = 1;
    COUNT(n_gopen, CHECK_OK(cf_mpi_column_open(&c, f, cf_test_comm(), "g/.", &err), &err));
    report("cf_mpi_column_open (group attributes)", n_gopen);
    COUNT(n_attr, CHECK_OK(cf_mpi_column_attr_set(c, cf_test_comm(), "a", "f8", 1, &v, &err), &err));
    report("cf_mpi_column_attr_set", n_attr);
    COUNT(n_gclose, CHECK_OK(cf_mpi_column_close(c, cf_test_comm(), &err), &err));
    report("cf_mpi_column_close (group attributes)", n_gclose);
    report("one column: create + write + close", n_create + n_write + n_close);
    report("one group attribute: open + set + close", n_gopen + n_attr + n_gclose);
    /* Each agreement round costs milliseconds when ranks are
     * oversubscribed: these were 2, 7, 6, 6, 5, 6 and 2.  Opening adds
     * one round among the ranks of each node (their CPUs, for the digest
     * placement; none with CF_OPEN_DIGEST_*). */
    AT_MOST(n_open, 3);
    AT_MOST(n_create, 4);
    AT_MOST(n_write, 5);
    AT_MOST(n_close, 4);
    AT_MOST(n_gopen + n_attr + n_gclose, 7);
    /* A throttled write in one turn: the check, the ranges, the result. */
    cf_mpi_options o;
    cf_mpi_options_init(&o);
    o.mode = CF_IO_THROTTLED;
    CHECK_OK(cf_mpi_column_open(&c, f, cf_test_comm(), "g/x", &err), &err);
    long n_tw;
    COUNT(n_tw, CHECK_OK(cf_mpi_column_write(c, cf_test_comm(), first, rows, buf, NULL, 8, 8, &o, &err), &err));
    report("cf_mpi_column_write (throttled)", n_tw);
    AT_MOST(n_tw, (cf_test_size() > 1 ? 3 : 2));
    CHECK_OK(cf_mpi_column_close(c, cf_test_comm(), &err), &err);
    cf_file_close(f);
}

/* A column of more chunk records than the statistics text holds closes by
 * chunk owners (mpi_owners.c): more rounds than a gathering close (the
 * summaries, the parts to their owners, the blobs' flags, rank 0's plan
 * and the page summaries, each agreed), a constant number whatever the
 * ranks, blobs and chunks, for a rank 0 that receives no chunk's
 * statistics. */
static void test_counts_owner_close(void)
{
    enum { ROWS = 70001 };
    char dir[4200];
    snprintf(dir, sizeof dir, "%s/f", cf_test_dir());
    cf_error err;
    cf_file *f = NULL;
    cf_column *c = NULL;
    CHECK_OK(cf_mpi_file_open(&f, cf_test_comm(), dir, CF_OPEN_WRITE | CF_OPEN_CREATE, &err), &err);
    c = create_chunked(f, "x", "f8", 1, ROWS, 2, 1);
    int64_t first = 0, n = cf_plan_share(ROWS, cf_test_size(), cf_test_rank(), &first);
    double *v = calloc((size_t)(n ? n : 1), sizeof *v);
    CHECK_OK(cf_column_write(c, first, n, v, NULL, 8, 8, &err), &err);
    free(v);
    long n_close;
    COUNT(n_close, CHECK_OK(cf_mpi_column_close(c, cf_test_comm(), &err), &err));
    report("cf_mpi_column_close (by chunk owners)", n_close);
    AT_MOST(n_close, 20);
    cf_file_close(f);
}

#define NCOL 4

static double value(int k, int64_t row) { return (double)row * 10 + k; }

/* Create NCOL columns of this rank's `rows`, write them (collectively or,
 * every other one, independently) and close them with close_many or one
 * by one; returns the collectives the close(s) made. */
static long snapshot(const char *dir, int many)
{
    static const char *names[NCOL] = { "p/a", "p/b", "p/c", "q" };
    cf_error err;
    cf_file *f = NULL;
    cf_column *cols[NCOL + 1] = { NULL };
    int64_t rows = 3 + cf_test_rank() % 3, first = 0;
    double buf[8];
    CHECK_OK(cf_mpi_file_open(&f, cf_test_comm(), dir, CF_OPEN_WRITE | CF_OPEN_CREATE, &err), &err);
    for (int k = 0; k < NCOL; k++) {
        CHECK_OK(cf_mpi_column_create(&cols[k], f, cf_test_comm(), names[k], "f8", 1, rows, NULL, &first, &err),
                 &err);
        for (int64_t i = 0; i < rows; i++) buf[i] = value(k, first + i);
        if (k % 2) CHECK_OK(cf_column_write(cols[k], first, rows, buf, NULL, 8, 8, &err), &err);
        else CHECK_OK(cf_mpi_column_write(cols[k], cf_test_comm(), first, rows, buf, NULL, 8, 8, NULL, &err), &err);
    }
    /* and the attribute block of group p, with an attribute */
    double t = 0.5;
    CHECK_OK(cf_mpi_column_open(&cols[NCOL], f, cf_test_comm(), "p/.", &err), &err);
    CHECK_OK(cf_mpi_column_attr_set(cols[NCOL], cf_test_comm(), "Time", "f8", 1, &t, &err), &err);
    long n = 0, one;
    if (many) {
        COUNT(n, CHECK_OK(cf_mpi_column_close_many(cols, NCOL + 1, cf_test_comm(), &err), &err));
        for (int k = 0; k <= NCOL; k++) CHECK(cols[k] == NULL);
    } else {
        for (int k = 0; k <= NCOL; k++) {
            COUNT(one, CHECK_OK(cf_mpi_column_close(cols[k], cf_test_comm(), &err), &err));
            n += one;
        }
    }
    cf_file_close(f);
    return n;
}

/* close_many: the rounds of one close for a snapshot, the same bytes as
 * one close per column. */
static void test_close_many(void)
{
    char a[4200], b[4200];
    snprintf(a, sizeof a, "%s/one-by-one", cf_test_dir());
    snprintf(b, sizeof b, "%s/many", cf_test_dir());
    long n_each = snapshot(a, 0), n_many = snapshot(b, 1);
    report("5 closes one by one", n_each);
    report("cf_mpi_column_close_many of the 5", n_many);
    AT_MOST(n_many, 4);
    CHECK(cf_test_same_tree(a, b));
    if (cf_test_rank() == 0) {
        cf_error err;
        cf_file *f = NULL;
        CHECK_OK(cf_file_open(&f, b, CF_OPEN_READ, &err), &err);
        static const char *names[NCOL] = { "p/a", "p/b", "p/c", "q" };
        for (int k = 0; k < NCOL; k++) {
            cf_column *c = NULL;
            CHECK_OK(cf_column_open(&c, f, names[k], &err), &err);
            int64_t n = cf_column_size(c);
            double got[64];
            CHECK(n <= 64);
            CHECK_OK(cf_column_read(c, 0, n, got, NULL, 8, 8, &err), &err);
            for (int64_t i = 0; i < n; i++) CHECK(got[i] == value(k, i));
            unsigned st = 99;
            CHECK_OK(cf_column_verify_blob(c, 0, &st, &err), &err);
            CHECK_EQ_INT(st, 0);
            cf_column_close(c, NULL);
        }
        cf_file_close(f);
    }
}

/* A NULL handle on the last rank: CF_EARG from that rank, nothing
 * committed (new columns never appear), every handle freed. */
static void test_close_many_refused(void)
{
    char dir[4200];
    snprintf(dir, sizeof dir, "%s/f", cf_test_dir());
    int last = cf_test_size() - 1;
    cf_error err;
    cf_file *f = NULL;
    cf_column *cols[2] = { NULL, NULL };
    int64_t first = 0;
    double v[1] = { 1 };
    CHECK_OK(cf_mpi_file_open(&f, cf_test_comm(), dir, CF_OPEN_WRITE | CF_OPEN_CREATE, &err), &err);
    CHECK_OK(cf_mpi_column_create(&cols[0], f, cf_test_comm(), "a", "f8", 1, 1, NULL, &first, &err), &err);
    CHECK_OK(cf_mpi_column_create(&cols[1], f, cf_test_comm(), "b", "f8", 1, 1, NULL, &first, &err), &err);
    CHECK_OK(cf_column_write(cols[0], first, 1, v, NULL, 8, 8, &err), &err);
    CHECK_OK(cf_column_write(cols[1], first, 1, v, NULL, 8, 8, &err), &err);
    if (cf_test_size() > 1 && cf_test_rank() == last) {
        cf_column_close(cols[1], NULL);
        cols[1] = NULL;
    }
    int rc = cf_mpi_column_close_many(cols, 2, cf_test_comm(), &err);
    CHECK(cols[0] == NULL && cols[1] == NULL);
    if (cf_test_size() > 1) {
        CHECK_EQ_INT(rc, CF_EARG);
        CHECK_AGREED(rc, &err);
        char want[200];
        snprintf(want, sizeof want, "rank %d: cf_mpi_column_close_many: NULL or read-only columns", last);
        CHECK(strncmp(err.message, want, strlen(want)) == 0);
        char **names = NULL;
        int64_t n = -1;
        CHECK_OK(cf_mpi_file_list(f, cf_test_comm(), &names, &n, &err), &err);
        CHECK_EQ_INT(n, 0);
        cf_names_free(names, n);
    } else {
        CHECK_OK(rc, &err);
    }
    /* Different numbers of columns. */
    rc = cf_mpi_column_close_many(cols, cf_test_rank() == last ? 1 : 2, cf_test_comm(), &err);
    if (cf_test_size() > 1) {
        CHECK_EQ_INT(rc, CF_EARG);
        CHECK_AGREED(rc, &err);
        CHECK(strstr(err.message, "different numbers of columns") != NULL);
    }
    cf_file_close(f);
}

/* A snapshot of 4 columns (one a vector, one a header-only block):
 * create_many + write_many + close_many agree 4 + 3 + 4 times in all and
 * write what the calls column by column write. */
static void test_snapshot_many(void)
{
    static const char *names[] = { "p/Position", "p/Mass", "p/ID", "Header" };
    static const char *dtypes[] = { "f8", "f4", "i8", NULL };
    static const int64_t nmemb[] = { 3, 1, 1, 0 };
    char a[4200], b[4200];
    snprintf(a, sizeof a, "%s/each", cf_test_dir());
    snprintf(b, sizeof b, "%s/many", cf_test_dir());
    int rank = cf_test_rank();
    int64_t rows = 2 + (rank * 5) % 4;
    double pos[6 * 3], mass[6], id[6];
    cf_error err;
    for (int many = 0; many < 2; many++) {
        cf_file *f = NULL;
        CHECK_OK(cf_mpi_file_open(&f, cf_test_comm(), many ? b : a, CF_OPEN_WRITE | CF_OPEN_CREATE, &err), &err);
        cf_mpi_column_spec specs[4];
        for (int k = 0; k < 4; k++) {
            specs[k].name = names[k];
            specs[k].dtype = dtypes[k];
            specs[k].nmemb = nmemb[k];
            specs[k].local_rows = dtypes[k] ? rows : 0;
        }
        long n_c = 0, n_w = 0, n_x = 0, one;
        if (many) {
            COUNT(n_c, CHECK_OK(cf_mpi_column_create_many(f, cf_test_comm(), specs, 4, NULL, &err), &err));
        } else {
            for (int k = 0; k < 4; k++) {
                COUNT(one, CHECK_OK(cf_mpi_column_create(&specs[k].column, f, cf_test_comm(), names[k], dtypes[k],
                                                         nmemb[k], specs[k].local_rows, NULL, &specs[k].first_row,
                                                         &err), &err));
                n_c += one;
            }
        }
        int64_t first = specs[0].first_row;
        for (int k = 0; k < 3; k++) CHECK_EQ_INT(specs[k].first_row, first);
        for (int64_t i = 0; i < rows; i++) {
            for (int j = 0; j < 3; j++) pos[i * 3 + j] = (double)(first + i) + 0.25 * j;
            mass[i] = 1.0 + (double)((first + i) % 7);
            id[i] = (double)(first + i) * 3 + 1;
        }
        cf_mpi_write_spec w[3] = {
            { specs[0].column, first, rows, pos, NULL, 24, 8 },
            { specs[1].column, first, rows, mass, "f8", 8, 8 },
            { specs[2].column, first, rows, id, "f8", 8, 8 },
        };
        cf_mpi_options o;
        cf_mpi_options_init(&o);
        o.mode = CF_IO_THROTTLED;
        if (many) {
            COUNT(n_w, CHECK_OK(cf_mpi_column_write_many(w, 3, cf_test_comm(), &o, &err), &err));
        } else {
            for (int k = 0; k < 3; k++) {
                COUNT(one, CHECK_OK(cf_mpi_column_write(w[k].column, cf_test_comm(), w[k].start, w[k].count, w[k].buf,
                                                        w[k].buf_dtype, w[k].row_stride, w[k].elem_stride, &o, &err),
                                    &err));
                n_w += one;
            }
        }
        cf_column *cols[4] = { specs[0].column, specs[1].column, specs[2].column, specs[3].column };
        if (many) {
            COUNT(n_x, CHECK_OK(cf_mpi_column_close_many(cols, 4, cf_test_comm(), &err), &err));
        } else {
            for (int k = 0; k < 4; k++) {
                COUNT(one, CHECK_OK(cf_mpi_column_close(cols[k], cf_test_comm(), &err), &err));
                n_x += one;
            }
        }
        cf_file_close(f);
        report(many ? "snapshot of 4: create_many" : "snapshot of 4: creates", n_c);
        report(many ? "snapshot of 4: write_many" : "snapshot of 4: writes", n_w);
        report(many ? "snapshot of 4: close_many" : "snapshot of 4: closes", n_x);
        if (many) {
            AT_MOST(n_c, 4);
            AT_MOST(n_w, (cf_test_size() > 1 ? 3 : 2));
            AT_MOST(n_x, 4);
        }
    }
    CHECK(cf_test_same_tree(a, b));
}

/* Errors of the list calls: a different list on the last rank (nothing
 * created), an overlap in one column (named as cf_mpi_column_write names
 * it, nothing written). */
static void test_many_refused(void)
{
    char dir[4200];
    snprintf(dir, sizeof dir, "%s/f", cf_test_dir());
    int rank = cf_test_rank(), last = cf_test_size() - 1;
    cf_error err;
    cf_file *f = NULL;
    CHECK_OK(cf_mpi_file_open(&f, cf_test_comm(), dir, CF_OPEN_WRITE | CF_OPEN_CREATE, &err), &err);
    cf_mpi_column_spec specs[2] = { { "a", "f8", 1, 2, NULL, 0 }, { "b", "i4", 1, 2, NULL, 0 } };
    if (cf_test_size() > 1) {
        if (rank == last) specs[1].name = "c";
        int rc = cf_mpi_column_create_many(f, cf_test_comm(), specs, 2, NULL, &err);
        CHECK_EQ_INT(rc, CF_EARG);
        CHECK_AGREED(rc, &err);
        CHECK(strstr(err.message, "names, dtypes and nmemb") != NULL);
        CHECK(specs[0].column == NULL && specs[1].column == NULL);
        specs[1].name = "b";
    }
    CHECK_OK(cf_mpi_column_create_many(f, cf_test_comm(), specs, 2, NULL, &err), &err);
    double v[2] = { 1, 2 };
    int32_t iv[2] = { 1, 2 };
    cf_mpi_write_spec w[2] = { { specs[0].column, specs[0].first_row, 2, v, NULL, 8, 8 },
                               { specs[1].column, 0, 2, iv, NULL, 4, 4 } }; /* b: all at row 0 */
    int rc = cf_mpi_column_write_many(w, 2, cf_test_comm(), NULL, &err);
    if (cf_test_size() > 1) {
        check_overlap_refused(rc, &err, dir, "b", 0, 0, 2, 1, 0, 2);
    } else {
        CHECK_OK(rc, &err);
    }
    cf_column *cols[2] = { specs[0].column, specs[1].column };
    CHECK_OK(cf_mpi_column_close_many(cols, 2, cf_test_comm(), &err), &err);
    cf_file_close(f);
}

CF_MPI_TESTS(CF_TEST(test_counts_per_column), CF_TEST(test_counts_owner_close), CF_TEST(test_close_many), CF_TEST(test_close_many_refused),
             CF_TEST(test_snapshot_many), CF_TEST(test_many_refused))
