/* test_mpi_stream_parts.c - the stream commit in parts (docs/format.md
 * 8.7, colfile_stream.h): the committing rank receives a few small
 * records, never the tasks' chunk CRC32Cs and statistics (counted by an
 * MPI profiling interposer around each flush), and the table is the one a
 * serial writer of the same appends writes, byte for byte, for one file,
 * two, and one per rank, with uneven, empty and growing tasks whose rows
 * straddle chunks, over several commits. */
#include <dirent.h>
#include <math.h>

#include "mpi_harness.h"

/* bytes rank 0 receives while counting (upper bounds for reductions) */
static int counting;
static long long received;

static int type_bytes(MPI_Datatype t)
{
    int n = 0;
    PMPI_Type_size(t, &n);
    return n;
}

static void count(long long n)
{
    if (counting && cf_test_rank() == 0) received += n;
}

int MPI_Recv(void *b, int n, MPI_Datatype t, int src, int tag, MPI_Comm comm, MPI_Status *st)
{
    MPI_Status mine;
    int rc = PMPI_Recv(b, n, t, src, tag, comm, st == MPI_STATUS_IGNORE ? &mine : st);
    int got = 0;
    PMPI_Get_count(st == MPI_STATUS_IGNORE ? &mine : st, t, &got);
    count((long long)got * type_bytes(t));
    return rc;
}

int MPI_Gather(const void *s, int sn, MPI_Datatype st, void *r, int rn, MPI_Datatype rt, int root, MPI_Comm comm)
{
    int size, rank;
    PMPI_Comm_size(comm, &size);
    PMPI_Comm_rank(comm, &rank);
    if (rank == root) count((long long)rn * type_bytes(rt) * size);
    return PMPI_Gather(s, sn, st, r, rn, rt, root, comm);
}

int MPI_Gatherv(const void *s, int sn, MPI_Datatype st, void *r, const int *rn, const int *d, MPI_Datatype rt,
                int root, MPI_Comm comm)
{
    int size, rank;
    PMPI_Comm_size(comm, &size);
    PMPI_Comm_rank(comm, &rank);
    if (rank == root)
        for (int i = 0; i < size; i++) count((long long)rn[i] * type_bytes(rt));
    return PMPI_Gatherv(s, sn, st, r, rn, d, rt, root, comm);
}

static void count_reduce(int n, MPI_Datatype t, MPI_Comm comm)
{
    int size;
    PMPI_Comm_size(comm, &size);
    count((long long)n * type_bytes(t) * (size - 1));
}

int MPI_Reduce(const void *s, void *r, int n, MPI_Datatype t, MPI_Op op, int root, MPI_Comm comm)
{
    count_reduce(n, t, comm);
    return PMPI_Reduce(s, r, n, t, op, root, comm);
}

int MPI_Allreduce(const void *s, void *r, int n, MPI_Datatype t, MPI_Op op, MPI_Comm comm)
{
    count_reduce(n, t, comm);
    return PMPI_Allreduce(s, r, n, t, op, comm);
}

int MPI_Exscan(const void *s, void *r, int n, MPI_Datatype t, MPI_Op op, MPI_Comm comm)
{
    count_reduce(n, t, comm);
    return PMPI_Exscan(s, r, n, t, op, comm);
}

int MPI_Allgather(const void *s, int sn, MPI_Datatype st, void *r, int rn, MPI_Datatype rt, MPI_Comm comm)
{
    int size;
    PMPI_Comm_size(comm, &size);
    count((long long)rn * type_bytes(rt) * size);
    return PMPI_Allgather(s, sn, st, r, rn, rt, comm);
}

enum { NMEMB = 3 };

/* Rows of task r at step k of 3: rank 2 none, the others uneven and growing. */
static int64_t rows_of(int64_t r, int k)
{
    return r == 2 ? 0 : (2000 * r + 171) * (k + 1);
}

static double value(int64_t task, int64_t row, int j)
{
    if ((row + j) % 97 == 5) return NAN;
    return (double)task * 1e6 + (double)row * 0.25 - j;
}

/* Append rows [from, to) of task r (NMEMB doubles: 24-byte rows straddle
 * 4096-byte chunks) in growing pieces. */
static void append_growing(cf_stream_task *t, int64_t r, int64_t from, int64_t to)
{
    cf_error err;
    static double buf[1024 * NMEMB];
    for (int64_t at = from, step = 1; at < to; step = step < 1024 ? step * 2 : step) {
        int64_t n = to - at < step ? to - at : step;
        for (int64_t i = 0; i < n; i++)
            for (int j = 0; j < NMEMB; j++) buf[i * NMEMB + j] = value(r, at + i, j);
        CHECK_OK(cf_stream_append(t, buf, n, &err), &err);
        at += n;
    }
}

/* The same stream from every rank (name) and from rank 0 alone (serial),
 * committed after each of 3 steps and at the close; rank 0 counts what it receives in each
 * flush. */
static void write_both(cf_file *f, const char *name, const char *serial, int64_t files)
{
    cf_error err;
    int rank = cf_test_rank(), size = cf_test_size();
    cf_mpi_stream *s = NULL;
    CHECK_OK(cf_mpi_stream_create(&s, f, MPI_COMM_WORLD, name, "<f8", NMEMB, files, 4096, 4096, &err), &err);
    for (int k = 0; k < 3; k++) {
        append_growing(cf_mpi_stream_task(s), rank, k ? rows_of(rank, k - 1) : 0, rows_of(rank, k));
        MPI_Barrier(MPI_COMM_WORLD);
        received = 0;
        counting = 1;
        CHECK_OK(cf_mpi_stream_flush(s, &err), &err);
        counting = 0;
        /* a few small records per rank and per file; every task's state
         * would be 4 + 40 x NMEMB bytes per chunk of its hundreds */
        if (rank == 0 && received > 4096 + 64 * (long long)(size + files)) {
            fprintf(stderr, "rank 0 received %lld bytes in a flush of %d ranks\n", received, size);
            CHECK(received <= 4096 + 64 * (long long)(size + files));
        }
    }
    CHECK_OK(cf_mpi_stream_close(s, &err), &err);
    if (rank != 0) return;
    cf_stream_layout l;
    cf_stream_writer *w = NULL;
    CHECK_OK(cf_stream_layout_choose(&l, f, size, files, 4096, 4096, &err), &err);
    CHECK_OK(cf_stream_create(&w, f, serial, "<f8", NMEMB, &l, &err), &err);
    cf_stream_task *t[4] = { NULL, NULL, NULL, NULL };
    for (int r = 0; r < size; r++) CHECK_OK(cf_stream_task_open(&t[r], w, r, &err), &err);
    for (int k = 0; k < 3; k++) {
        for (int r = size - 1; r >= 0; r--) append_growing(t[r], r, k ? rows_of(r, k - 1) : 0, rows_of(r, k));
        CHECK_OK(cf_stream_flush(w, &err), &err);
    }
    CHECK_OK(cf_stream_close(w, &err), &err);
}

/* dir/name of both streams hold the same bytes; no temporary is left. */
static void same_files(const char *a, const char *b, int64_t files)
{
    char names[5][64];
    snprintf(names[0], sizeof names[0], "colfile-stream-v1");
    for (int64_t i = 0; i < files; i++) snprintf(names[i + 1], sizeof names[i + 1], "colfile-stream-data-%06llX", (long long)i);
    for (int64_t i = 0; i <= files; i++) {
        char pa[4300], pb[4300];
        snprintf(pa, sizeof pa, "f/%s/%s", a, names[i]);
        snprintf(pb, sizeof pb, "f/%s/%s", b, names[i]);
        size_t la = 0, lb = 0;
        char *x = cf_test_slurp(cf_test_dir(), pa, &la), *y = cf_test_slurp(cf_test_dir(), pb, &lb);
        CHECK(x && y && la == lb && memcmp(x, y, la) == 0);
        if (i == 0 && x) CHECK(strncmp(x, "COLFILE-STREAM: 2\n", 18) == 0 && strstr(x, "COMMIT: 4\n") != NULL);
        free(x);
        free(y);
    }
    char dir[4300];
    snprintf(dir, sizeof dir, "%s/f/%s", cf_test_dir(), a);
    DIR *d = opendir(dir);
    CHECK(d != NULL);
    for (struct dirent *e; d && (e = readdir(d));)
        CHECK(strncmp(e->d_name, ".colfile-stream-v1.tmp", 22) != 0);
    if (d) closedir(d);
}

static void test_parts_equal_serial(void)
{
    cf_file *f = cf_test_mpi_file();
    int size = cf_test_size();
    int64_t layouts[3] = { 1, size > 1 ? 2 : 1, size };
    for (int i = 0; i < 3; i++) {
        char a[32], b[32];
        snprintf(a, sizeof a, "mpi%d", i);
        snprintf(b, sizeof b, "serial%d", i);
        write_both(f, a, b, layouts[i]);
        MPI_Barrier(MPI_COMM_WORLD);
        if (cf_test_rank() == 0) same_files(a, b, layouts[i]);
    }
    cf_file_close(f);
}

/* A reopened stream goes on committing in parts: the same bytes as a
 * serial writer that reopens too. */
static void test_parts_after_reopen(void)
{
    cf_error err;
    cf_file *f = cf_test_mpi_file();
    int rank = cf_test_rank(), size = cf_test_size();
    cf_mpi_stream *s = NULL;
    CHECK_OK(cf_mpi_stream_create(&s, f, MPI_COMM_WORLD, "re", "<f8", NMEMB, 1, 4096, 4096, &err), &err);
    append_growing(cf_mpi_stream_task(s), rank, 0, rows_of(rank, 0));
    CHECK_OK(cf_mpi_stream_close(s, &err), &err);
    CHECK_OK(cf_mpi_stream_reopen(&s, f, MPI_COMM_WORLD, "re", &err), &err);
    append_growing(cf_mpi_stream_task(s), rank, rows_of(rank, 0), rows_of(rank, 1));
    CHECK_OK(cf_mpi_stream_close(s, &err), &err);
    if (rank == 0) {
        cf_stream_layout l;
        cf_stream_writer *w = NULL;
        cf_stream_task *t;
        CHECK_OK(cf_stream_layout_choose(&l, f, size, 1, 4096, 4096, &err), &err);
        CHECK_OK(cf_stream_create(&w, f, "se", "<f8", NMEMB, &l, &err), &err);
        for (int r = 0; r < size; r++) {
            CHECK_OK(cf_stream_task_open(&t, w, r, &err), &err);
            append_growing(t, r, 0, rows_of(r, 0));
        }
        CHECK_OK(cf_stream_close(w, &err), &err);
        CHECK_OK(cf_stream_reopen(&w, f, "se", &err), &err);
        for (int r = 0; r < size; r++) {
            CHECK_OK(cf_stream_task_open(&t, w, r, &err), &err);
            append_growing(t, r, rows_of(r, 0), rows_of(r, 1));
        }
        CHECK_OK(cf_stream_close(w, &err), &err);
        size_t la = 0, lb = 0;
        char *x = cf_test_slurp(cf_test_dir(), "f/re/colfile-stream-v1", &la);
        char *y = cf_test_slurp(cf_test_dir(), "f/se/colfile-stream-v1", &lb);
        CHECK(x && y && la == lb && memcmp(x, y, la) == 0);
        free(x);
        free(y);
    }
    cf_file_close(f);
}

CF_MPI_TESTS(CF_TEST(test_parts_equal_serial), CF_TEST(test_parts_after_reopen))
