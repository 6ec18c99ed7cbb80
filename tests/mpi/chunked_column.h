/* chunked_column.h - a column with chunk_rows made collectively as
 * colfile.mpi makes one: rank 0 creates it and chooses the chunks, the
 * other ranks build replicas from its exported snapshot. */
#ifndef CF_TEST_CHUNKED_COLUMN_H
#define CF_TEST_CHUNKED_COLUMN_H

#include "mpi_harness.h"

/* Column name of f (rows rows of dtype x nmemb in nfile blobs, chunk_rows
 * rows a chunk), this rank's handle. */
static cf_column *create_chunked(cf_file *f, const char *name, const char *dtype, int64_t nmemb, int64_t rows,
                                 int64_t nfile, int64_t chunk_rows)
{
    cf_error err;
    cf_column *c = NULL;
    void *meta = NULL;
    size_t len = 0;
    if (cf_test_rank() == 0) {
        CHECK_OK(cf_column_create(&c, f, name, dtype, nmemb, rows, nfile, &err), &err);
        CHECK_OK(cf_column_set_chunk_rows(c, chunk_rows, &err), &err);
        CHECK_OK(cf_column_export_meta(c, &meta, &len, &err), &err);
    }
    uint64_t len64 = len;
    MPI_Bcast(&len64, 1, MPI_UINT64_T, 0, cf_test_comm());
    if (cf_test_rank() != 0) meta = malloc((size_t)len64);
    MPI_Bcast(meta, (int)len64, MPI_BYTE, 0, cf_test_comm());
    if (cf_test_rank() != 0) {
        CHECK_OK(cf_column_open_meta(&c, f, meta, (size_t)len64, &err), &err);
        free(meta);
    } else {
        cf_free(meta);
    }
    return c;
}

#endif
