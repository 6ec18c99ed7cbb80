/* mpi_stream.c - every rank appends records of unknown count to a stream,
 * with no communication, and checkpoints it; any number of ranks read it.
 *
 *   mpiexec -n 4 mpi_stream write DIR
 *   mpiexec -n 3 mpi_stream read DIR
 *
 * Writing: over 10 steps rank r finds (r * step) % 7 particles crossing the
 * light cone and appends their positions (3 doubles each; particle k of
 * rank r sits at (r, step, k)), flushing at every fifth step (a checkpoint:
 * a crash keeps what was flushed).  Reading: each rank checks an even share
 * of the global view (rank 0's records, then rank 1's, ...), rank 0 prints
 * the totals. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <colfile_mpi.h>

#define STEPS 10

static int fail(const char *what, const cf_error *err)
{
    fprintf(stderr, "mpi_stream: %s: %s\n", what, err->message);
    return 1;
}

static int write_stream(const char *dir, int rank)
{
    cf_error err;
    cf_file *f;
    cf_mpi_stream *s;
    if (cf_mpi_file_open(&f, MPI_COMM_WORLD, dir, CF_OPEN_WRITE | CF_OPEN_CREATE, &err)) return fail(dir, &err);
    /* files 0, chunk 0, align 0: one file per node (per rank on a local disk), 1 MiB chunks aligned to
     * the file system's blocks */
    if (cf_mpi_stream_create(&s, f, MPI_COMM_WORLD, "lightcone", "<f8", 3, 0, 0, 0, &err)) {
        cf_file_close(f);
        return fail("create", &err);
    }
    int rc = 0;
    for (int step = 0; step < STEPS && rc == 0; step++) {
        double pos[7][3];
        int n = (rank * step) % 7;
        for (int k = 0; k < n; k++) {
            pos[k][0] = rank;
            pos[k][1] = step;
            pos[k][2] = k;
        }
        /* no MPI call: a rank appends whenever it has something */
        if (cf_stream_append(cf_mpi_stream_task(s), pos, n, &err)) rc = fail("append", &err);
        if (step % 5 == 4 && rc == 0 && cf_mpi_stream_flush(s, &err)) rc = fail("flush", &err);
    }
    if (rc) cf_mpi_stream_discard(s); /* only a failure of this rank's append gets here alone in this example */
    else if (cf_mpi_stream_close(s, &err)) rc = fail("close", &err);
    cf_file_close(f);
    return rc;
}

static int read_stream(const char *dir, int rank, int size)
{
    cf_error err;
    cf_file *f;
    cf_stream_reader *r;
    if (cf_file_open(&f, dir, CF_OPEN_READ, &err)) return fail(dir, &err);
    if (cf_stream_open(&r, f, "lightcone", &err)) {
        cf_file_close(f);
        return fail("open", &err);
    }
    cf_stream_set_verify(r, 1);
    cf_stream_layout l;
    cf_stream_info(r, &l, NULL, NULL, NULL);
    int64_t first, n = cf_plan_share(cf_stream_size(r), size, rank, &first);
    double *rows = malloc((size_t)(n > 0 ? n : 1) * 3 * sizeof *rows);
    int64_t wrong = 0;
    int rc = 0;
    if (!rows || cf_stream_read(r, first, n, rows, &err)) rc = fail("read", &err);
    /* row i of the global view is particle k of rank t at some step: check
     * it against the task that holds it */
    for (int64_t i = 0; rc == 0 && i < n; i++) {
        int64_t t = (int64_t)rows[3 * i];
        int64_t start = cf_stream_task_start(r, t), rows_t = cf_stream_task_size(r, t);
        if (t < 0 || t >= l.tasks || first + i < start || first + i >= start + rows_t ||
            rows[3 * i + 2] >= 7 || rows[3 * i + 1] >= STEPS)
            wrong++;
    }
    int64_t totals[2] = { n, wrong }, sums[2];
    MPI_Reduce(totals, sums, 2, MPI_INT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0 && rc == 0)
        printf("read %lld records of %lld tasks in %lld files on %d ranks: %lld wrong\n", (long long)sums[0],
               (long long)l.tasks, (long long)l.files, size, (long long)sums[1]);
    free(rows);
    cf_stream_reader_close(r);
    cf_file_close(f);
    return rc || (rank == 0 && sums[1] != 0);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size, rc = 2;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc == 3 && strcmp(argv[1], "write") == 0) rc = write_stream(argv[2], rank);
    else if (argc == 3 && strcmp(argv[1], "read") == 0) rc = read_stream(argv[2], rank, size);
    else if (rank == 0) fprintf(stderr, "usage: mpi_stream write|read DIR\n");
    MPI_Finalize();
    return rc;
}
