/* colfile_mpi_f.c - the C side of the Fortran module colfile_mpi: the
 * collective functions of colfile_mpi.h with the communicator as a Fortran
 * handle (MPI_Fint, what `use mpi` and mpif.h give), converted here with
 * MPI_Comm_f2c, so that the module needs no MPI Fortran bindings. */
#include <stdio.h>
#include <string.h>

#include <mpi.h>

#include "colfile_mpi.h"

/* Exported for the Fortran module only; not part of the C API. */
#define CF_F_API __attribute__((visibility("default")))

CF_F_API int cf_f_mpi_file_open(cf_file **out, MPI_Fint comm, const char *path, int flags, cf_error *err)
{
    return cf_mpi_file_open(out, MPI_Comm_f2c(comm), path, flags, err);
}

CF_F_API int cf_f_mpi_file_list(cf_file *f, MPI_Fint comm, char ***names, int64_t *count, cf_error *err)
{
    return cf_mpi_file_list(f, MPI_Comm_f2c(comm), names, count, err);
}

CF_F_API int cf_f_mpi_column_create(cf_column **out, cf_file *f, MPI_Fint comm, const char *name,
                                    const char *dtype, int64_t nmemb, int64_t local_rows,
                                    const cf_mpi_options *opt, int64_t *first_row, cf_error *err)
{
    return cf_mpi_column_create(out, f, MPI_Comm_f2c(comm), name, dtype, nmemb, local_rows, opt,
                                first_row, err);
}

CF_F_API int cf_f_mpi_column_open(cf_column **out, cf_file *f, MPI_Fint comm, const char *name, cf_error *err)
{
    return cf_mpi_column_open(out, f, MPI_Comm_f2c(comm), name, err);
}

CF_F_API int cf_f_mpi_column_write(cf_column *c, MPI_Fint comm, int64_t start, int64_t count,
                                   const void *buf, const char *buf_dtype, int64_t row_stride,
                                   int64_t elem_stride, const cf_mpi_options *opt, cf_error *err)
{
    return cf_mpi_column_write(c, MPI_Comm_f2c(comm), start, count, buf, buf_dtype, row_stride,
                               elem_stride, opt, err);
}

CF_F_API int cf_f_mpi_column_read(cf_column *c, MPI_Fint comm, int64_t start, int64_t count, void *buf,
                                  const char *buf_dtype, int64_t row_stride, int64_t elem_stride,
                                  const cf_mpi_options *opt, cf_error *err)
{
    return cf_mpi_column_read(c, MPI_Comm_f2c(comm), start, count, buf, buf_dtype, row_stride,
                              elem_stride, opt, err);
}

CF_F_API int cf_f_mpi_column_grow(cf_column **c, cf_file *f, MPI_Fint comm, int64_t local_rows,
                                  const cf_mpi_options *opt, int64_t *first_row, cf_error *err)
{
    return cf_mpi_column_grow(c, f, MPI_Comm_f2c(comm), local_rows, opt, first_row, err);
}

CF_F_API int cf_f_mpi_column_attr_set(cf_column *c, MPI_Fint comm, const char *name, const char *dtype,
                                      int64_t nmemb, const void *data, cf_error *err)
{
    return cf_mpi_column_attr_set(c, MPI_Comm_f2c(comm), name, dtype, nmemb, data, err);
}

CF_F_API int cf_f_mpi_column_close(cf_column *c, MPI_Fint comm, cf_error *err)
{
    return cf_mpi_column_close(c, MPI_Comm_f2c(comm), err);
}

CF_F_API int cf_f_mpi_column_create_many(cf_file *f, MPI_Fint comm, cf_mpi_column_spec *specs, int64_t n,
                                         const cf_mpi_options *opt, cf_error *err)
{
    return cf_mpi_column_create_many(f, MPI_Comm_f2c(comm), specs, n, opt, err);
}

CF_F_API int cf_f_mpi_column_write_many(const cf_mpi_write_spec *w, int64_t n, MPI_Fint comm,
                                        const cf_mpi_options *opt, cf_error *err)
{
    return cf_mpi_column_write_many(w, n, MPI_Comm_f2c(comm), opt, err);
}

CF_F_API int cf_f_mpi_column_close_many(cf_column **cols, int64_t n, MPI_Fint comm, cf_error *err)
{
    return cf_mpi_column_close_many(cols, n, MPI_Comm_f2c(comm), err);
}

/* Streams: the handle, this rank's task, and the stream's dtype (normalised,
 * or "raw") and nmemb, which the Fortran side needs to convert arrays. */
static int stream_row_type(cf_file *f, const char *name, char dtype[CF_DTYPE_MAX], int64_t *nmemb, cf_error *err)
{
    cf_stream_reader *r = NULL;
    int rc = cf_stream_open(&r, f, name, err);
    if (rc == 0) cf_stream_info(r, NULL, dtype, nmemb, NULL);
    cf_stream_reader_close(r);
    return rc;
}

CF_F_API int cf_f_mpi_stream_create(cf_mpi_stream **out, cf_stream_task **task, char dtype_out[CF_DTYPE_MAX],
                                    cf_file *f, MPI_Fint comm, const char *name, const char *dtype, int64_t nmemb,
                                    int64_t files, int64_t chunk, int64_t align, cf_error *err)
{
    int rc = cf_mpi_stream_create(out, f, MPI_Comm_f2c(comm), name, dtype, nmemb, files, chunk, align, err);
    if (rc) return rc;
    *task = cf_mpi_stream_task(*out);
    if (strcmp(dtype, "raw") == 0) {
        strcpy(dtype_out, "raw");
        return 0;
    }
    /* the stream took this dtype, so it normalises */
    return cf_dtype_normalize(dtype, dtype_out, err);
}

CF_F_API int cf_f_mpi_stream_reopen(cf_mpi_stream **out, cf_stream_task **task, char dtype_out[CF_DTYPE_MAX],
                                    int64_t *nmemb, cf_file *f, MPI_Fint comm, const char *name, cf_error *err)
{
    int rc = cf_mpi_stream_reopen(out, f, MPI_Comm_f2c(comm), name, err);
    if (rc) return rc;
    *task = cf_mpi_stream_task(*out);
    /* reopened streams are committed: their table has the row type; every
     * rank reads it, and a failure here fails every rank (none can go on) */
    cf_error e;
    int mine = stream_row_type(f, name, dtype_out, nmemb, &e), worst = 0;
    MPI_Allreduce(&mine, &worst, 1, MPI_INT, MPI_MIN, MPI_Comm_f2c(comm));
    if (worst) {
        cf_mpi_stream_discard(*out);
        *out = NULL;
        *task = NULL;
        if (mine) *err = e;
        else {
            err->code = worst;
            snprintf(err->message, sizeof err->message, "%s/%s: another rank could not read the stream's row type",
                     cf_file_path(f), name);
        }
        return worst;
    }
    return 0;
}

