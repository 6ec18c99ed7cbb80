/* test_mpi_errors.c - a failure on one rank is every rank's failure: the
 * same code and the message of the lowest failing rank ("rank N: ...")
 * everywhere, and nobody waits forever (CTest's TIMEOUT catches a hang). */
#include "mpi_harness.h"

#include <sys/stat.h>

static int last(void) { return cf_test_size() - 1; }

/* The result is agreed, has the code, and names rank `rank`. */
static void expect(int rc, const cf_error *e, int code, int rank, const char *needle, int line)
{
    CHECK_AGREED(rc, e);
    if (rc != code) {
        fprintf(stderr, "line %d: returned %d (%s), expected %d (%s): %s\n", line, rc, cf_error_name(rc), code,
                cf_error_name(code), rc ? e->message : "");
        cf_test_failures++;
        return;
    }
    char prefix[32];
    snprintf(prefix, sizeof prefix, "rank %d: ", rank);
    if (strncmp(e->message, prefix, strlen(prefix)) != 0 || (needle && !strstr(e->message, needle))) {
        fprintf(stderr, "line %d: message \"%s\" lacks \"%s\" or \"%s\"\n", line, e->message, prefix,
                needle ? needle : "");
        cf_test_failures++;
    }
}

#define EXPECT(rc, errp, code, rank, needle) expect((rc), (errp), (code), (rank), (needle), __LINE__)

static cf_file *open_dir(int flags)
{
    cf_error err;
    cf_file *f = NULL;
    CHECK_OK(cf_mpi_file_open(&f, cf_test_comm(), cf_test_dir(), flags, &err), &err);
    return f;
}

/* Column "x" (f8, 1000 rows over one blob per rank, so that blob r holds
 * rank r's rows), written and closed. */
static void make_x(cf_file *f)
{
    MPI_Comm comm = cf_test_comm();
    cf_error err;
    cf_column *c = NULL;
    cf_mpi_options o;
    cf_mpi_options_init(&o);
    o.nfile = cf_test_size();
    int64_t first, n = cf_plan_share(1000, cf_test_size(), cf_test_rank(), NULL);
    CHECK_OK(cf_mpi_column_create(&c, f, comm, "x", "f8", 1, n, &o, &first, &err), &err);
    double *v = malloc((size_t)(n + 1) * sizeof *v);
    for (int64_t i = 0; i < n; i++) v[i] = (double)(first + i);
    CHECK_OK(cf_mpi_column_write(c, comm, first, n, v, NULL, 8, 8, NULL, &err), &err);
    CHECK_OK(cf_mpi_column_close(c, comm, &err), &err);
    free(v);
}

static void blob_path(char *out, size_t n, const char *column, int blob)
{
    snprintf(out, n, "%s/%s/%06X", cf_test_dir(), column, blob);
}

static void test_create_bad_dtype_on_one_rank(void)
{
    cf_file *f = open_dir(CF_OPEN_WRITE);
    cf_error err;
    cf_column *c = NULL;
    int rc = cf_mpi_column_create(&c, f, cf_test_comm(), "x", cf_test_rank() == last() ? "f9" : "f8", 1, 10, NULL,
                                  NULL, &err);
    EXPECT(rc, &err, CF_EDTYPE, last(), "f9");
    CHECK(c == NULL);
    /* Nothing was created. */
    char p[4200];
    snprintf(p, sizeof p, "%s/x", cf_test_dir());
    struct stat st;
    if (cf_test_rank() == 0) CHECK(stat(p, &st) != 0);
    /* A valid but different dtype on one rank. */
    if (cf_test_size() > 1) {
        rc = cf_mpi_column_create(&c, f, cf_test_comm(), "x", cf_test_rank() == last() ? "f4" : "f8", 1, 10, NULL,
                                  NULL, &err);
        EXPECT(rc, &err, CF_EARG, last(), "dtype");
        if (cf_test_rank() == 0) CHECK(stat(p, &st) != 0);
    }
    cf_file_close(f);
}

static void test_bad_name_on_one_rank(void)
{
    cf_file *f = open_dir(CF_OPEN_WRITE);
    cf_error err;
    cf_column *c = NULL;
    int rc = cf_mpi_column_create(&c, f, cf_test_comm(), cf_test_rank() == last() ? "a b" : "ab", "i4", 1, 1, NULL,
                                  NULL, &err);
    EXPECT(rc, &err, CF_ENAME, last(), NULL);
    if (cf_test_size() > 1) {
        rc = cf_mpi_column_create(&c, f, cf_test_comm(), cf_test_rank() == last() ? "b" : "a", "i4", 1, 1, NULL,
                                  NULL, &err);
        EXPECT(rc, &err, CF_EARG, last(), "name");
    }
    CHECK(c == NULL);
    cf_file_close(f);
}

static void test_open_missing_or_different(void)
{
    cf_file *f = open_dir(CF_OPEN_WRITE);
    make_x(f);
    cf_error err;
    cf_column *c = NULL;
    int rc = cf_mpi_column_open(&c, f, cf_test_comm(), "nope", &err);
    EXPECT(rc, &err, CF_ENOENT, 0, "nope");
    if (cf_test_size() > 1) {
        rc = cf_mpi_column_open(&c, f, cf_test_comm(), cf_test_rank() == last() ? "nope" : "x", &err);
        EXPECT(rc, &err, CF_EARG, last(), "nope");
    }
    CHECK(c == NULL);
    /* A File that does not exist. */
    cf_file *g = NULL;
    char p[4200];
    snprintf(p, sizeof p, "%s/missing", cf_test_dir());
    rc = cf_mpi_file_open(&g, cf_test_comm(), p, CF_OPEN_READ, &err);
    EXPECT(rc, &err, CF_ENOENT, 0, "missing");
    CHECK(g == NULL);
    cf_file_close(f);
}

/* Only the last rank's rows live in the missing blob. */
static void test_missing_blob_one_reader(void)
{
    cf_file *f = open_dir(CF_OPEN_WRITE);
    make_x(f);
    char p[4200];
    blob_path(p, sizeof p, "x", last());
    if (cf_test_rank() == 0) CHECK(unlink(p) == 0);
    MPI_Barrier(cf_test_comm());
    cf_error err;
    cf_column *c = NULL;
    CHECK_OK(cf_mpi_column_open(&c, f, cf_test_comm(), "x", &err), &err);
    int64_t first, n = cf_plan_share(1000, cf_test_size(), cf_test_rank(), &first);
    double *v = malloc((size_t)(n + 1) * sizeof *v);
    int rc = cf_mpi_column_read(c, cf_test_comm(), first, n, v, NULL, 8, 8, NULL, &err);
    EXPECT(rc, &err, CF_ENOENT, last(), "missing");
    /* Ranks reading other blobs did read them. */
    if (cf_test_rank() != last())
        for (int64_t i = 0; i < n; i++) CHECK_EQ_INT(v[i], first + i);
    /* A bad range on one rank. */
    rc = cf_mpi_column_read(c, cf_test_comm(), cf_test_rank() == last() ? 990 : 0, 20, v, NULL, 8, 8, NULL, &err);
    EXPECT(rc, &err, CF_ERANGE, last(), NULL);
    CHECK_OK(cf_mpi_column_close(c, cf_test_comm(), &err), &err);
    free(v);
    cf_file_close(f);
}

/* The last rank's blob cannot be opened (it is a directory): its write
 * fails, throttled and aggregated. */
static void test_write_failure_one_rank(void)
{
    MPI_Comm comm = cf_test_comm();
    cf_file *f = open_dir(CF_OPEN_WRITE);
    make_x(f);
    char p[4200];
    blob_path(p, sizeof p, "x", last());
    if (cf_test_rank() == 0) CHECK(unlink(p) == 0 && mkdir(p, 0777) == 0);
    MPI_Barrier(comm);
    cf_error err;
    cf_column *c = NULL;
    CHECK_OK(cf_mpi_column_open(&c, f, comm, "x", &err), &err);
    int64_t first, n = cf_plan_share(1000, cf_test_size(), cf_test_rank(), &first);
    double *v = calloc((size_t)(n + 1), sizeof *v);
    cf_mpi_options o;
    cf_mpi_options_init(&o);
    o.mode = CF_IO_THROTTLED;
    o.concurrency = 1;
    int rc = cf_mpi_column_write(c, comm, first, n, v, NULL, 8, 8, &o, &err);
    EXPECT(rc, &err, CF_EIO, last(), "blob");
    /* Aggregated: the leader of the last rank's group writes and fails. */
    o.mode = CF_IO_AGGREGATED;
    rc = cf_mpi_column_write(c, comm, first, n, v, NULL, 8, 8, &o, &err);
    CHECK_AGREED(rc, &err);
    CHECK_EQ_INT(rc, CF_EIO);
    rc = cf_mpi_column_close(c, comm, &err);
    CHECK_AGREED(rc, &err);
    free(v);
    cf_file_close(f);
}

static void test_read_only_file(void)
{
    MPI_Comm comm = cf_test_comm();
    cf_file *w = open_dir(CF_OPEN_WRITE);
    make_x(w);
    cf_file_close(w);
    cf_file *f = open_dir(CF_OPEN_READ);
    cf_error err;
    cf_column *c = NULL;
    int rc = cf_mpi_column_create(&c, f, comm, "y", "f8", 1, 1, NULL, NULL, &err);
    EXPECT(rc, &err, CF_EREADONLY, 0, "read-only");
    CHECK_OK(cf_mpi_column_open(&c, f, comm, "x", &err), &err);
    double v[1] = { 0 };
    rc = cf_mpi_column_write(c, comm, 0, cf_test_rank() == last() ? 1 : 0, v, NULL, 8, 8, NULL, &err);
    EXPECT(rc, &err, CF_EREADONLY, 0, "read-only");
    rc = cf_mpi_column_attr_set(c, comm, "a", "f8", 1, v, &err);
    EXPECT(rc, &err, CF_EREADONLY, 0, "read-only");
    CHECK_OK(cf_mpi_column_close(c, comm, &err), &err);
    cf_file_close(f);
}

static void test_options_differ_or_bad(void)
{
    MPI_Comm comm = cf_test_comm();
    cf_file *f = open_dir(CF_OPEN_WRITE);
    make_x(f);
    cf_error err;
    cf_column *c = NULL;
    cf_mpi_options o;
    cf_mpi_options_init(&o);
    /* More blobs than ranks cannot be aligned to ranks. */
    o.align_blobs_to_ranks = 1;
    o.nfile = cf_test_size() + 1;
    int rc = cf_mpi_column_create(&c, f, comm, "y", "f8", 1, 1, &o, NULL, &err);
    EXPECT(rc, &err, CF_EARG, 0, "nfile");
    CHECK_OK(cf_mpi_column_open(&c, f, comm, "x", &err), &err);
    int64_t first, n = cf_plan_share(1000, cf_test_size(), cf_test_rank(), &first);
    double *v = calloc((size_t)(n + 1), sizeof *v);
    cf_mpi_options_init(&o);
    o.mode = 7;
    rc = cf_mpi_column_write(c, comm, first, n, v, NULL, 8, 8, &o, &err);
    EXPECT(rc, &err, CF_EARG, 0, "mode");
    if (cf_test_size() > 1) {
        cf_mpi_options_init(&o);
        if (cf_test_rank() == last()) o.concurrency = 3;
        rc = cf_mpi_column_write(c, comm, first, n, v, NULL, 8, 8, &o, &err);
        EXPECT(rc, &err, CF_EARG, last(), "concurrency");
        rc = cf_mpi_column_read(c, comm, first, n, v, NULL, 8, 8, &o, &err);
        EXPECT(rc, &err, CF_EARG, last(), "concurrency");
    }
    CHECK_OK(cf_mpi_column_close(c, comm, &err), &err);
    free(v);
    cf_file_close(f);
}

/* A column z of 100 i8 created collectively in `f`, the ranks holding
 * plan_share's rows: this rank's count (its first row in *first). */
static int64_t new_z(cf_file *f, cf_column **c, int64_t *first)
{
    cf_error err;
    int64_t n = cf_plan_share(100, cf_test_size(), cf_test_rank(), NULL);
    CHECK_OK(cf_mpi_column_create(c, f, cf_test_comm(), "z", "i8", 1, n, NULL, first, &err), &err);
    return n;
}

/* A bad range on one rank: no rank writes anything. */
static void test_range_error_writes_nothing(void)
{
    MPI_Comm comm = cf_test_comm();
    cf_file *f = open_dir(CF_OPEN_WRITE);
    cf_error err;
    cf_column *c = NULL;
    int64_t first, n = new_z(f, &c, &first);
    int64_t v[200] = { 0 };
    for (int k = 0; k < 200; k++) v[k] = 1;
    int bad = cf_test_rank() == last();
    int rc = cf_mpi_column_write(c, comm, bad ? 50 : first, bad ? 100 : n, v, NULL, 8, 8, NULL, &err);
    EXPECT(rc, &err, CF_ERANGE, last(), NULL);
    /* A buffer dtype that cannot be converted, on one rank. */
    rc = cf_mpi_column_write(c, comm, first, n, v, bad ? "S3" : NULL, 8, 8, NULL, &err);
    EXPECT(rc, &err, CF_ECAST, last(), NULL);
    CHECK_OK(cf_mpi_column_close(c, comm, &err), &err);
    if (cf_test_rank() == 0) {
        cf_file *g;
        CHECK_OK(cf_file_open(&g, cf_test_dir(), CF_OPEN_READ, &err), &err);
        CHECK_OK(cf_column_open(&c, g, "z", &err), &err);
        CHECK_EQ_INT(cf_column_blob_sum(c, 0), 0);
        char p[4200];
        blob_path(p, sizeof p, "z", 0);
        struct stat st;
        CHECK(stat(p, &st) == 0 && st.st_size == 0);
        cf_column_close(c, NULL);
        cf_file_close(g);
    }
    cf_file_close(f);
}

/* Rank 0 cannot commit (a group holding another column appeared at the
 * new column's name): every rank gets its error, every handle is freed. */
static void test_commit_failure_on_rank_0(void)
{
    MPI_Comm comm = cf_test_comm();
    cf_file *f = open_dir(CF_OPEN_WRITE);
    cf_error err;
    cf_column *c = NULL;
    int64_t first, n = new_z(f, &c, &first);
    int64_t v[100] = { 0 };
    CHECK_OK(cf_mpi_column_write(c, comm, first, n, v, NULL, 8, 8, NULL, &err), &err);
    if (cf_test_rank() == 0) {
        char p[4200];
        snprintf(p, sizeof p, "%s/z", cf_test_dir());
        CHECK(mkdir(p, 0777) == 0);
        snprintf(p, sizeof p, "%s/z/other", cf_test_dir());
        CHECK(mkdir(p, 0777) == 0);
    }
    MPI_Barrier(comm);
    int rc = cf_mpi_column_close(c, comm, &err);
    EXPECT(rc, &err, CF_EEXIST, 0, "group");
    cf_file_close(f);
}

static void test_attribute_disagreement(void)
{
    MPI_Comm comm = cf_test_comm();
    cf_file *f = open_dir(CF_OPEN_WRITE);
    cf_error err;
    cf_column *c = NULL;
    CHECK_OK(cf_mpi_column_open(&c, f, comm, ".", &err), &err);
    int rc = cf_mpi_column_attr_set(c, comm, "a b", "f8", 0, NULL, &err);
    EXPECT(rc, &err, CF_ENAME, 0, NULL);
    rc = cf_mpi_column_attr_set(c, comm, "x", "f8", cf_test_rank() == last() ? -1 : 0, NULL, &err);
    EXPECT(rc, &err, CF_EARG, last(), NULL);
    if (cf_test_size() > 1) {
        rc = cf_mpi_column_attr_set(c, comm, cf_test_rank() == last() ? "y" : "x", "f8", 0, NULL, &err);
        EXPECT(rc, &err, CF_EARG, last(), "name");
        double t = cf_test_rank() == last() ? 2.0 : 1.0;
        rc = cf_mpi_column_attr_set(c, comm, "Time", "f8", 1, &t, &err);
        EXPECT(rc, &err, CF_EARG, last(), "differs");
        /* Rank 0's value is everywhere. */
        const void *data;
        CHECK_OK(cf_column_attr_get(c, "Time", NULL, NULL, &data, &err), &err);
        double got;
        memcpy(&got, data, sizeof got);
        CHECK(got == 1.0);
    }
    CHECK_OK(cf_mpi_column_close(c, comm, &err), &err);
    cf_file_close(f);
}

/* A NULL handle on one rank: an error, and every other handle is freed
 * (the sanitizer build checks for leaks). */
static void test_close_null_on_one_rank(void)
{
    MPI_Comm comm = cf_test_comm();
    cf_file *f = open_dir(CF_OPEN_WRITE);
    make_x(f);
    cf_error err;
    cf_column *c = NULL;
    CHECK_OK(cf_mpi_column_open(&c, f, comm, "x", &err), &err);
    int bad = cf_test_rank() == last() && cf_test_size() > 1;
    if (bad) {
        cf_column_close(c, NULL);
        c = NULL;
    }
    int rc = cf_mpi_column_close(c, comm, &err);
    if (cf_test_size() > 1) EXPECT(rc, &err, CF_EARG, last(), "NULL");
    else CHECK_EQ_INT(rc, 0);
    /* NULL everywhere is fine. */
    CHECK_OK(cf_mpi_column_close(NULL, comm, &err), &err);
    cf_file_close(f);
}

CF_MPI_TESTS(CF_TEST(test_create_bad_dtype_on_one_rank), CF_TEST(test_bad_name_on_one_rank),
             CF_TEST(test_open_missing_or_different), CF_TEST(test_missing_blob_one_reader),
             CF_TEST(test_write_failure_one_rank), CF_TEST(test_read_only_file),
             CF_TEST(test_options_differ_or_bad), CF_TEST(test_range_error_writes_nothing),
             CF_TEST(test_commit_failure_on_rank_0), CF_TEST(test_attribute_disagreement),
             CF_TEST(test_close_null_on_one_rank))
