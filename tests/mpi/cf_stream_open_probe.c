/* cf_stream_open_probe.c - a stream opened for reading by every rank, for
 * comparing the C and Python MPI opens in slices (tests/python/mpi/
 * test_stream_open_twins.py; stream_open_probe.py is the Python twin).
 *
 *     mpiexec -n N cf_stream_open_probe FILE NAME OUT
 *
 * Every rank opens stream NAME of FILE with cf_mpi_stream_open and writes
 * its share of the global view (rows size r / N .. size (r + 1) / N) to
 * OUT.<r>; rank 0 prints, in rank order, "rank R opened B read C": the
 * bytes of the table rank R read at the open and after reading its share.
 * A failure prints "error CODE MESSAGE" on every rank and exits 1. */
#include <stdio.h>
#include <stdlib.h>

#include "colfile_mpi.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc != 4) {
        if (rank == 0) fprintf(stderr, "usage: cf_stream_open_probe FILE NAME OUT\n");
        MPI_Finalize();
        return 2;
    }
    cf_error err;
    cf_file *f = NULL;
    cf_stream_reader *r = NULL;
    int rc = cf_mpi_file_open(&f, MPI_COMM_WORLD, argv[1], CF_OPEN_READ, &err);
    if (rc == 0) rc = cf_mpi_stream_open(&r, f, MPI_COMM_WORLD, argv[2], &err);
    int64_t counts[2] = { 0, 0 };
    if (rc == 0) {
        counts[0] = cf_stream_reader_table_bytes(r);
        int64_t rows = cf_stream_size(r), rb = cf_stream_row_bytes(r);
        int64_t first = rows * rank / size, n = rows * (rank + 1) / size - first;
        unsigned char *buf = malloc((size_t)(n * rb) + 1);
        rc = buf ? cf_stream_read(r, first, n, buf, &err) : CF_ENOMEM;
        char out[4200];
        snprintf(out, sizeof out, "%s.%d", argv[3], rank);
        FILE *fp = rc == 0 ? fopen(out, "wb") : NULL;
        if (fp) {
            fwrite(buf, 1, (size_t)(n * rb), fp);
            fclose(fp);
        } else if (rc == 0) {
            rc = CF_EIO;
        }
        free(buf);
        counts[1] = cf_stream_reader_table_bytes(r);
    }
    if (rc) {
        printf("error %d %s\n", rc, err.message);
        fflush(stdout);
    }
    int64_t *all = rank == 0 ? malloc((size_t)size * sizeof counts) : NULL;
    MPI_Gather(counts, 2, MPI_INT64_T, all, 2, MPI_INT64_T, 0, MPI_COMM_WORLD);
    if (rank == 0 && rc == 0)
        for (int k = 0; k < size; k++)
            printf("rank %d opened %lld read %lld\n", k, (long long)all[2 * k], (long long)all[2 * k + 1]);
    free(all);
    cf_stream_reader_close(r);
    cf_file_close(f);
    MPI_Finalize();
    return rc ? 1 : 0;
}
