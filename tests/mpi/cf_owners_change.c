/* cf_owners_change.c - the C twin of tests/python/mpi/owners_change.py
 * (test_owners_cross_language.py): a large committed column appended to
 * and updated collectively, so that its closes run by chunk owners.
 *
 *     mpiexec -n N cf_owners_change DIR
 *
 * Rank 0 writes DIR/x alone (f8 x 2, 69999 rows in 3 blobs, 2 rows a
 * chunk: 35000 chunks, 70000 chunk records), then every rank appends its
 * rows of 9001 more in 2 blobs and closes, then rewrites its rows of
 * blob 1 and closes.  Rows are cut unevenly: rank r's start at
 * a + (b - a) * r^2 / n^2 + r (at most b), so that rank 0 writes most and
 * the cuts fall inside chunks.  Row i, component j holds
 * (2 i + j) / 2 + 10^6 g in generation g (0 the base, 1 the append, 2 the
 * update). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "colfile.h"
#include "colfile_mpi.h"
#include "mpi_program.h"

enum { NMEMB = 2, CHUNK = 2, OLD = 69999, NFILE = 3, NEW = 9001, NEW_FILES = 2 };

static int fail(const char *what, const cf_error *e)
{
    fprintf(stderr, "cf_owners_change: %s: %s\n", what, e->message);
    MPI_Abort(MPI_COMM_WORLD, 1);
    return 1;
}

static double *rows_of(int64_t first, int64_t n, int gen)
{
    double *v = malloc((size_t)(n > 0 ? n : 1) * NMEMB * sizeof *v);
    for (int64_t i = 0; i < n; i++)
        for (int j = 0; j < NMEMB; j++) v[i * NMEMB + j] = (double)(2 * (first + i) + j) / 2 + 1e6 * gen;
    return v;
}

static int64_t start(int64_t a, int64_t b, int r, int n)
{
    if (r <= 0) return a;
    if (r >= n) return b;
    int64_t s = a + (int64_t)((double)(b - a) * r * r / ((double)n * n)) + r;
    return s < b ? s : b;
}

/* One collective change of rows [a, b): an append (grow first) or an
 * update. */
static void change(const char *dir, int rank, int size, int64_t a, int64_t b, int gen, int grow)
{
    cf_error e;
    cf_file *f = NULL;
    cf_column *c = NULL;
    int64_t first = start(a, b, rank, size), n = start(a, b, rank + 1, size) - first;
    if (cf_mpi_file_open(&f, MPI_COMM_WORLD, dir, CF_OPEN_WRITE, &e)) fail("open", &e);
    if (cf_mpi_column_open(&c, f, MPI_COMM_WORLD, "x", &e)) fail("column open", &e);
    if (grow) {
        cf_mpi_options o;
        cf_mpi_options_init(&o);
        o.nfile = NEW_FILES;
        if (cf_mpi_column_grow(&c, f, MPI_COMM_WORLD, n, &o, NULL, &e)) fail("grow", &e);
    }
    double *v = rows_of(first, n, gen);
    cf_mpi_options o;
    cf_mpi_options_init(&o);
    o.mode = CF_IO_THROTTLED;
    if (cf_mpi_column_write(c, MPI_COMM_WORLD, first, n, v, NULL, 8 * NMEMB, 8, &o, &e)) fail("write", &e);
    free(v);
    if (cf_mpi_column_close(c, MPI_COMM_WORLD, &e)) fail("close", &e);
    cf_file_close(f);
}

int main(int argc, char **argv)
{
    int rank, size;
    program_start(&argc, &argv, &rank, &size);
    if (argc != 2) return program_usage("usage: cf_owners_change DIR\n", rank);
    cf_error e;
    if (rank == 0) {
        cf_file *f = NULL;
        cf_column *c = NULL;
        if (cf_file_open(&f, argv[1], CF_OPEN_WRITE | CF_OPEN_CREATE, &e)) fail("create", &e);
        if (cf_column_create(&c, f, "x", "f8", NMEMB, OLD, NFILE, &e)) fail("column create", &e);
        if (cf_column_set_chunk_rows(c, CHUNK, &e)) fail("chunk rows", &e);
        double *v = rows_of(0, OLD, 0);
        if (cf_column_write(c, 0, OLD, v, NULL, 8 * NMEMB, 8, &e)) fail("write", &e);
        free(v);
        if (cf_column_close(c, &e)) fail("close", &e);
        cf_file_close(f);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    change(argv[1], rank, size, OLD, OLD + NEW, 1, 1);
    change(argv[1], rank, size, OLD / 3, 2 * (OLD / 3), 2, 0);
    MPI_Finalize();
    return 0;
}
