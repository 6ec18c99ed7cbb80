/* cf_stream_reopen_probe.c - a stream reopened by every rank and appended
 * to, for comparing the C and Python MPI reopens (tests/python/mpi/
 * test_stream_reopen_twins.py; stream_reopen_probe.py is the Python twin).
 *
 *     mpiexec -n N cf_stream_reopen_probe FILE NAME
 *
 * Rank r reopens stream NAME of FILE (<f8 rows of 3), appends 40 r + 3
 * rows (row i of the task: r * 1e6 + i, -i, i / 2) and closes it; rank 0
 * prints, in rank order, "rank R read B rows N": the bytes of the table
 * rank R read at the reopen and the rows its task had then. */
#include <stdio.h>
#include <stdlib.h>

#include "colfile_mpi.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc != 3) {
        if (rank == 0) fprintf(stderr, "usage: cf_stream_reopen_probe FILE NAME\n");
        MPI_Finalize();
        return 2;
    }
    cf_error err;
    cf_file *f = NULL;
    cf_mpi_stream *s = NULL;
    int rc = cf_mpi_file_open(&f, MPI_COMM_WORLD, argv[1], CF_OPEN_WRITE, &err);
    if (rc == 0) rc = cf_mpi_stream_reopen(&s, f, MPI_COMM_WORLD, argv[2], &err);
    int64_t mine[2] = { -1, -1 }, *all = rank == 0 ? malloc(2 * (size_t)size * sizeof *all) : NULL;
    if (rc == 0) {
        cf_stream_task *t = cf_mpi_stream_task(s);
        int64_t have = cf_stream_task_rows(t), n = 40 * rank + 3;
        mine[0] = cf_mpi_stream_table_bytes(s);
        mine[1] = have;
        double *buf = malloc(3 * (size_t)n * sizeof *buf);
        for (int64_t i = 0; buf && i < n; i++) {
            buf[3 * i] = rank * 1e6 + (double)(have + i);
            buf[3 * i + 1] = -(double)(have + i);
            buf[3 * i + 2] = (double)(have + i) / 2;
        }
        rc = buf ? cf_stream_append(t, buf, n, &err) : CF_ENOMEM;
        free(buf);
        int crc = cf_mpi_stream_close(s, &err);
        if (rc == 0) rc = crc;
    }
    MPI_Gather(mine, 2, MPI_INT64_T, all, 2, MPI_INT64_T, 0, MPI_COMM_WORLD);
    for (int r = 0; rank == 0 && r < size; r++)
        printf("rank %d read %lld rows %lld\n", r, (long long)all[2 * r], (long long)all[2 * r + 1]);
    free(all);
    if (rc) fprintf(stderr, "rank %d: %s\n", rank, err.message);
    if (f) cf_file_close(f);
    MPI_Finalize();
    return rc ? 1 : 0;
}
