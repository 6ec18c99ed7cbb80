/* cf_stream_pattern.c - a stream written by every rank, for comparing the
 * C and Python MPI layers byte for byte (tests/python/mpi/
 * test_stream_cross_language.py; stream_pattern.py is the Python twin).
 *
 *     mpiexec -n N cf_stream_pattern FILE
 *
 * Stream "s" of <f8 rows of 3; rank r appends rows_of(r) rows, value
 * r * 1e6 + i, -i, i / 2 for row i, in growing pieces 1, 2, 4, ...; a
 * flush after half of them; chunks of 4096 bytes, 2 files (1 on 1 rank). */
#include <stdio.h>
#include <stdlib.h>

#include "colfile_mpi.h"
#include "mpi_program.h"

static int64_t rows_of(int r)
{
    return r == 1 ? 0 : 500 * r + 7;
}

static int append_rows(cf_stream_task *t, int r, int64_t from, int64_t to, cf_error *err)
{
    static double buf[3 * 4096];
    for (int64_t at = from, step = 1; at < to; step *= 2) {
        int64_t n = to - at < step ? to - at : step;
        for (int64_t i = 0; i < n; i++) {
            buf[3 * i] = r * 1e6 + (double)(at + i);
            buf[3 * i + 1] = -(double)(at + i);
            buf[3 * i + 2] = (double)(at + i) / 2;
        }
        int rc = cf_stream_append(t, buf, n, err);
        if (rc) return rc;
        at += n;
    }
    return 0;
}

int main(int argc, char **argv)
{
    int rank, size;
    program_start(&argc, &argv, &rank, &size);
    if (argc != 2) return program_usage("usage: cf_stream_pattern FILE\n", rank);
    cf_error err;
    cf_file *f = NULL;
    cf_mpi_stream *s = NULL;
    int rc = cf_mpi_file_open(&f, MPI_COMM_WORLD, argv[1], CF_OPEN_WRITE | CF_OPEN_CREATE, &err);
    if (rc == 0) rc = cf_mpi_stream_create(&s, f, MPI_COMM_WORLD, "s", "<f8", 3, size > 1 ? 2 : 1, 4096, 4096, &err);
    int arc = rc == 0 ? append_rows(cf_mpi_stream_task(s), rank, 0, rows_of(rank) / 2, &err) : 0;
    if (rc == 0) rc = cf_mpi_stream_flush(s, &err); /* collective even if this rank's append failed */
    if (rc == 0) arc = arc ? arc : append_rows(cf_mpi_stream_task(s), rank, rows_of(rank) / 2, rows_of(rank), &err);
    if (rc == 0) rc = cf_mpi_stream_close(s, &err);
    if (rc == 0) rc = arc;
    if (rc) fprintf(stderr, "rank %d: %s\n", rank, err.message);
    cf_file_close(f);
    MPI_Finalize();
    return rc ? 1 : 0;
}
