/* cf_open_listing.c - open a File collectively, read every attribute of
 * every column (and of the File) and one row of each column per rank.
 * tests/mpi/metadata_calls.sh runs it under strace with 1 and 4 ranks: the
 * metadata files must be opened as often with 4 ranks as with 1.
 *
 *   mpiexec -n R cf_open_listing DIR
 */
#include <stdio.h>
#include <stdlib.h>

#include "colfile_mpi.h"
#include "mpi_program.h"

/* Read every attribute of c (from memory: the open loaded them). */
static int read_attrs(cf_column *c, int64_t *seen, cf_error *err)
{
    char **names = NULL;
    int64_t n = 0;
    int rc = cf_column_attr_names(c, &names, &n, err);
    for (int64_t i = 0; rc == 0 && i < n; i++) {
        const char *dtype;
        int64_t nmemb;
        const void *data;
        rc = cf_column_attr_get(c, names[i], &dtype, &nmemb, &data, err);
        (*seen)++;
    }
    cf_names_free(names, n);
    return rc;
}

int main(int argc, char **argv)
{
    int rank, nranks;
    MPI_Comm comm = program_start(&argc, &argv, &rank, &nranks);
    if (argc != 2) return program_usage("usage: cf_open_listing DIR\n", rank);
    cf_error err;
    cf_file *f = NULL;
    cf_column *c = NULL;
    char **names = NULL;
    int64_t ncol = 0, attrs = 0, rows = 0;
    int rc = cf_mpi_file_open(&f, comm, argv[1], CF_OPEN_READ, &err);
    if (rc == 0) rc = cf_mpi_file_list(f, comm, &names, &ncol, &err);
    if (rc == 0 && (rc = cf_mpi_column_open(&c, f, comm, ".", &err)) == 0) {
        rc = read_attrs(c, &attrs, &err);
        int rc2 = cf_mpi_column_close(c, comm, &err);
        if (rc == 0) rc = rc2;
    }
    for (int64_t i = 0; rc == 0 && i < ncol; i++) {
        c = NULL;
        if ((rc = cf_mpi_column_open(&c, f, comm, names[i], &err))) break;
        int lrc = read_attrs(c, &attrs, &err);
        /* One row per rank, spread over the column (each rank touches the
         * blob of its row only). */
        int64_t size = cf_column_size(c), want = size > 0 ? 1 : 0;
        int64_t row = size > 0 ? (int64_t)rank * size / nranks : 0;
        unsigned char *buf = malloc((size_t)(cf_column_nmemb(c) * cf_column_itemsize(c) + 1));
        rc = cf_mpi_column_read(c, comm, row, want, buf, NULL, cf_column_nmemb(c) * cf_column_itemsize(c),
                                cf_column_itemsize(c), NULL, &err);
        free(buf);
        rows += want;
        if (rc == 0) rc = lrc;
        int rc2 = cf_mpi_column_close(c, comm, &err);
        if (rc == 0) rc = rc2;
    }
    if (rank == 0 && rc == 0)
        printf("%lld columns, %lld attributes, %lld rows read per rank\n", (long long)ncol, (long long)attrs,
               (long long)rows);
    cf_names_free(names, ncol);
    cf_file_close(f);
    return program_end("cf_open_listing", rank, rc, &err);
}
