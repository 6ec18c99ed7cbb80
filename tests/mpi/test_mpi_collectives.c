/* test_mpi_collectives.c - how many blocking collectives the MPI layer
 * calls: an MPI profiling interposer (this program's MPI_Bcast & co. count
 * and call PMPI_*) counts them around each call, on every rank (they agree:
 * every rank makes the same collectives).  Counts, not timings: oversubscribed,
 * every agreement round costs milliseconds.  The build with tiny message
 * sizes (CF_MPI_TINY_BUILD) splits messages on purpose: it runs the same
 * calls without the bounds. */
#include "mpi_harness.h"

static int counting;
static long ncoll;

#define COUNTED(call) do { if (counting) ncoll++; } while (0); return call

int MPI_Bcast(void *b, int n, MPI_Datatype t, int root, MPI_Comm comm) { COUNTED(PMPI_Bcast(b, n, t, root, comm)); }
int MPI_Barrier(MPI_Comm comm) { COUNTED(PMPI_Barrier(comm)); }
int MPI_Allreduce(const void *s, void *r, int n, MPI_Datatype t, MPI_Op op, MPI_Comm comm)
{
    COUNTED(PMPI_Allreduce(s, r, n, t, op, comm));
}
int MPI_Reduce(const void *s, void *r, int n, MPI_Datatype t, MPI_Op op, int root, MPI_Comm comm)
{
    COUNTED(PMPI_Reduce(s, r, n, t, op, root, comm));
}
int MPI_Scan(const void *s, void *r, int n, MPI_Datatype t, MPI_Op op, MPI_Comm comm)
{
    COUNTED(PMPI_Scan(s, r, n, t, op, comm));
}
int MPI_Exscan(const void *s, void *r, int n, MPI_Datatype t, MPI_Op op, MPI_Comm comm)
{
    COUNTED(PMPI_Exscan(s, r, n, t, op, comm));
}
int MPI_Allgather(const void *s, int sn, MPI_Datatype st, void *r, int rn, MPI_Datatype rt, MPI_Comm comm)
{
    COUNTED(PMPI_Allgather(s, sn, st, r, rn, rt, comm));
}
int MPI_Allgatherv(const void *s, int sn, MPI_Datatype st, void *r, const int rn[], const int d[], MPI_Datatype rt,
                   MPI_Comm comm)
{
    COUNTED(PMPI_Allgatherv(s, sn, st, r, rn, d, rt, comm));
}
int MPI_Gather(const void *s, int sn, MPI_Datatype st, void *r, int rn, MPI_Datatype rt, int root, MPI_Comm comm)
{
    COUNTED(PMPI_Gather(s, sn, st, r, rn, rt, root, comm));
}
int MPI_Gatherv(const void *s, int sn, MPI_Datatype st, void *r, const int rn[], const int d[], MPI_Datatype rt,
                int root, MPI_Comm comm)
{
    COUNTED(PMPI_Gatherv(s, sn, st, r, rn, d, rt, root, comm));
}
int MPI_Scatter(const void *s, int sn, MPI_Datatype st, void *r, int rn, MPI_Datatype rt, int root, MPI_Comm comm)
{
    COUNTED(PMPI_Scatter(s, sn, st, r, rn, rt, root, comm));
}
int MPI_Alltoall(const void *s, int sn, MPI_Datatype st, void *r, int rn, MPI_Datatype rt, MPI_Comm comm)
{
    COUNTED(PMPI_Alltoall(s, sn, st, r, rn, rt, comm));
}
int MPI_Comm_dup(MPI_Comm comm, MPI_Comm *out) { COUNTED(PMPI_Comm_dup(comm, out)); }
int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm *out) { COUNTED(PMPI_Comm_split(comm, color, key, out)); }

#ifdef CF_MPI_TINY_BUILD
#define AT_MOST(n, bound) ((void)(n), (void)(bound))
#else
#define AT_MOST(n, bound) CHECK((n) <= (bound))
#endif

/* Run `stmt` and leave the number of collectives it made in *n. */
#define COUNT(n, stmt) do { ncoll = 0; counting = 1; stmt; counting = 0; (n) = ncoll; } while (0)

static void report(const char *what, long n)
{
    if (cf_test_rank() == 0) printf("  %-40s %ld collectives\n", what, n);
    long lo, hi;
    PMPI_Allreduce(&n, &lo, 1, MPI_LONG, MPI_MIN, MPI_COMM_WORLD);
    PMPI_Allreduce(&n, &hi, 1, MPI_LONG, MPI_MAX, MPI_COMM_WORLD);
    CHECK_EQ_INT(lo, hi); /* the same on every rank */
}

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
     * oversubscribed: these were 2, 7, 6, 6, 5, 6 and 2. */
    AT_MOST(n_open, 2);
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

CF_MPI_TESTS(CF_TEST(test_counts_per_column), CF_TEST(test_close_many), CF_TEST(test_close_many_refused))
