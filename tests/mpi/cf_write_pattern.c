/* cf_write_pattern.c - write a fixed synthetic snapshot collectively, for
 * comparing Files written with different rank counts, modes and languages
 * byte for byte (the Python MPI layer has a twin of this program).
 *
 *   mpiexec -n R cf_write_pattern DIR --total N --nfile K
 *       --mode throttled|aggregated|blob_owners|auto [--concurrency C]
 *       [--layout even|skewed|uneven] [--align] [--appends K] [--chunk-rows R]
 *
 * DIR is created (or emptied).  Columns, in this order, each created with
 * nfile K (0: automatic) and written with one cf_mpi_column_write:
 *   Position f8 x3  row + 0.25*j
 *   Velocity f4 x3  (float)(row % 1000) - 0.5f*j
 *   ID       i8     row*3 + 1
 *   Mass     f4     1.0f + (float)(row % 7)
 * and the File's attributes BoxSize = 1000.0 and Time = 0.5 (f8).  With
 * --appends K (K > 0), a fifth column Log (i8, row*5 + 1) is created empty
 * and grown by K cf_mpi_column_grow calls (default blobs), append s
 * (1..K) adding 37*s + 5 rows split over the ranks as below, each written
 * with one cf_mpi_column_write.
 * Rows per rank: even, cf_plan_share(N, R, rank); skewed, rank 0 holds
 * none and ranks 1..R-1 split N as cf_plan_share(N, R-1, rank-1) (one
 * rank: all of them); uneven, rank r's rows start at N*r^2/R^2 + r (at
 * most N).  --chunk-rows R (with K > 0): rank 0 creates each column with
 * K blobs and R rows per chunk, the others open replicas of it.  Exit status 0, 1 on an error (printed by rank 0),
 * 2 on bad arguments.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "colfile_mpi.h"
#include "mpi_program.h"

static const char usage[] =
    "usage: cf_write_pattern DIR --total N --nfile K --mode throttled|aggregated|blob_owners|auto\n"
    "                        [--concurrency C] [--layout even|skewed|uneven] [--align] [--appends K]\n"
    "                        [--chunk-rows R]\n";

typedef struct {
    const char *name, *dtype;
    int64_t nmemb;
} column_spec;

/* The values of row `row`, element j, as double (exact for every column's
 * dtype, converted by the core). */
static void fill(int col, int64_t first, int64_t n, void *out)
{
    for (int64_t i = 0; i < n; i++) {
        int64_t row = first + i;
        switch (col) {
        case 0:
            for (int j = 0; j < 3; j++) ((double *)out)[i * 3 + j] = (double)row + 0.25 * j;
            break;
        case 1:
            for (int j = 0; j < 3; j++) ((float *)out)[i * 3 + j] = (float)(row % 1000) - 0.5f * (float)j;
            break;
        case 2:
            ((int64_t *)out)[i] = row * 3 + 1;
            break;
        default:
            ((float *)out)[i] = 1.0f + (float)(row % 7);
            break;
        }
    }
}

/* Where rank r's rows start in the uneven layout: total * r^2 / n^2 + r
 * (at most total), so that the ranks' rows differ in number and their
 * boundaries fall inside chunks. */
static int64_t uneven_start(int64_t total, int nranks, int r)
{
    if (r <= 0) return 0;
    if (r >= nranks) return total;
    int64_t b = (int64_t)((double)total * r * r / ((double)nranks * nranks)) + r;
    return b < total ? b : total;
}

/* This rank's rows of `total` under the layout. */
static int64_t share_of(int64_t total, int nranks, int rank, const char *layout)
{
    if (strcmp(layout, "uneven") == 0)
        return uneven_start(total, nranks, rank + 1) - uneven_start(total, nranks, rank);
    if (strcmp(layout, "skewed") == 0 && nranks > 1)
        return rank == 0 ? 0 : cf_plan_share(total, nranks - 1, rank - 1, NULL);
    return cf_plan_share(total, nranks, rank, NULL);
}

/* As colfile.mpi creates a column with chunk_rows: rank 0 creates it
 * (nfile blobs splitting total rows evenly) and chooses the chunks, the
 * others build replicas of its snapshot. */
static int create_chunked(cf_column **c, cf_file *f, MPI_Comm comm, const column_spec *s, int64_t total,
                          int64_t nfile, int64_t chunk_rows, cf_error *err)
{
    int rank;
    MPI_Comm_rank(comm, &rank);
    void *meta = NULL;
    size_t len = 0;
    int64_t head[2] = { 0, 0 }; /* rank 0's result, the snapshot's bytes */
    if (rank == 0) {
        head[0] = cf_column_create(c, f, s->name, s->dtype, s->nmemb, total, nfile, err);
        if (head[0] == 0) head[0] = cf_column_set_chunk_rows(*c, chunk_rows, err);
        if (head[0] == 0) head[0] = cf_column_export_meta(*c, &meta, &len, err);
        head[1] = (int64_t)len;
    }
    MPI_Bcast(head, 2, MPI_INT64_T, 0, comm);
    if (head[0]) return (int)head[0];
    if (rank != 0 && !(meta = malloc((size_t)head[1] + 1))) MPI_Abort(comm, 1);
    MPI_Bcast(meta, (int)head[1], MPI_BYTE, 0, comm);
    int rc = rank == 0 ? 0 : cf_column_open_meta(c, f, meta, (size_t)head[1], err);
    if (rank == 0) cf_free(meta);
    else free(meta);
    return rc;
}

int main(int argc, char **argv)
{
    int rank, nranks;
    MPI_Comm comm = program_start(&argc, &argv, &rank, &nranks);
    const char *dir = NULL, *layout = "even";
    long long total = -1, nfile = -1, concurrency = 0, appends = 0, chunk_rows = 0;
    int mode = -1, align = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--align") == 0) { align = 1; continue; }
        if (a[0] != '-' && !dir) { dir = a; continue; }
        if (!v) goto bad;
        i++;
        if (strcmp(a, "--total") == 0) total = atoll(v);
        else if (strcmp(a, "--nfile") == 0) nfile = atoll(v);
        else if (strcmp(a, "--concurrency") == 0) concurrency = atoll(v);
        else if (strcmp(a, "--appends") == 0) appends = atoll(v);
        else if (strcmp(a, "--chunk-rows") == 0) chunk_rows = atoll(v);
        else if (strcmp(a, "--layout") == 0 &&
                 (strcmp(v, "even") == 0 || strcmp(v, "skewed") == 0 || strcmp(v, "uneven") == 0))
            layout = v;
        else if (strcmp(a, "--mode") == 0 && strcmp(v, "throttled") == 0) mode = CF_IO_THROTTLED;
        else if (strcmp(a, "--mode") == 0 && strcmp(v, "aggregated") == 0) mode = CF_IO_AGGREGATED;
        else if (strcmp(a, "--mode") == 0 && strcmp(v, "blob_owners") == 0) mode = CF_IO_BLOB_OWNERS;
        else if (strcmp(a, "--mode") == 0 && strcmp(v, "auto") == 0) mode = CF_IO_AUTO;
        else goto bad;
    }
    if (!dir || total < 0 || nfile < 0 || mode < 0 || chunk_rows < 0 || (chunk_rows && !nfile)) goto bad;

    int64_t local = share_of(total, nranks, rank, layout);

    static const column_spec columns[] = {
        { "Position", "f8", 3 }, { "Velocity", "f4", 3 }, { "ID", "i8", 1 }, { "Mass", "f4", 1 }
    };
    cf_mpi_options opt;
    cf_mpi_options_init(&opt);
    opt.mode = mode;
    opt.nfile = nfile;
    opt.concurrency = concurrency;
    opt.align_blobs_to_ranks = align;
    /* Log: created empty, so its blobs are planned (no --nfile). */
    cf_mpi_options opt_log;
    cf_mpi_options_init(&opt_log);
    cf_error err;
    cf_file *f = NULL;
    cf_column *c = NULL;
    int rc = cf_mpi_file_open(&f, comm, dir, CF_OPEN_WRITE | CF_OPEN_CREATE | CF_OPEN_TRUNCATE, &err);
    for (int k = 0; k < 4 && rc == 0; k++) {
        const column_spec *s = &columns[k];
        int64_t itemsize = 0, first = 0;
        if (cf_dtype_itemsize(s->dtype, &itemsize, &err) != 0) MPI_Abort(comm, 1);
        void *buf = malloc((size_t)((local > 0 ? local : 1) * s->nmemb * itemsize));
        if (!buf) MPI_Abort(comm, 1);
        if (chunk_rows)
            rc = create_chunked(&c, f, comm, s, total, nfile, chunk_rows, &err);
        else
            rc = cf_mpi_column_create(&c, f, comm, s->name, s->dtype, s->nmemb, local, &opt, &first, &err);
        if (chunk_rows) { /* this rank's first row: the others' before it */
            int64_t below = 0;
            MPI_Exscan(&local, &below, 1, MPI_INT64_T, MPI_SUM, comm);
            first = rank == 0 ? 0 : below;
        }
        if (rc == 0) {
            fill(k, first, local, buf);
            rc = cf_mpi_column_write(c, comm, first, local, buf, NULL, s->nmemb * itemsize, itemsize, &opt, &err);
            int rc2 = cf_mpi_column_close(c, comm, &err);
            if (rc == 0) rc = rc2;
            c = NULL;
        }
        free(buf);
    }
    if (rc == 0 && appends > 0) {
        int64_t first = 0;
        rc = cf_mpi_column_create(&c, f, comm, "Log", "i8", 1, 0, &opt_log, &first, &err);
        for (long long s = 1; s <= appends && rc == 0; s++) {
            int64_t n = share_of(37 * s + 5, nranks, rank, layout);
            int64_t *buf = malloc((size_t)(n > 0 ? n : 1) * sizeof *buf);
            if (!buf) MPI_Abort(comm, 1);
            rc = cf_mpi_column_grow(&c, f, comm, n, NULL, &first, &err);
            for (int64_t i = 0; i < n; i++) buf[i] = (first + i) * 5 + 1;
            if (rc == 0) rc = cf_mpi_column_write(c, comm, first, n, buf, NULL, 8, 8, &opt, &err);
            free(buf);
        }
        if (c) {
            int rc2 = cf_mpi_column_close(c, comm, &err);
            if (rc == 0) rc = rc2;
            c = NULL;
        }
    }
    if (rc == 0) rc = cf_mpi_column_open(&c, f, comm, ".", &err);
    if (rc == 0) {
        double box = 1000.0, time = 0.5;
        rc = cf_mpi_column_attr_set(c, comm, "BoxSize", "f8", 1, &box, &err);
        if (rc == 0) rc = cf_mpi_column_attr_set(c, comm, "Time", "f8", 1, &time, &err);
        int rc2 = cf_mpi_column_close(c, comm, &err);
        if (rc == 0) rc = rc2;
    }
    cf_file_close(f);
    return program_end("cf_write_pattern", rank, rc, &err);
bad:
    return program_usage(usage, rank);
}
