/* lustre_model_write.c - one snapshot-like column written collectively and
 * nothing else, for bench/lustre_model.py: the same source built against
 * colfile (libcolfile-mpi) and, with -DBIGFILE, against bigfile 0.1.52.
 *
 *   mpiexec -n P lustre_model_write DIR ROWS MODE NFILE CONCURRENCY SCALE [CHUNK_ROWS]
 *
 * Every rank writes ROWS rows of f8 x 3 into the column "Position" of DIR
 * (created), durably (colfile fsyncs at its commit; bigfile never does).
 * colfile: MODE is throttled, aggregated, blob_owners (CF_IO_BLOB_OWNERS: one
 * writer per blob) or aligned (throttled, with every blob
 * boundary on a rank boundary: align_blobs_to_ranks); NFILE 0 leaves the blob count to
 * the plan; the plan's byte sizes (blob and group bytes) are divided by
 * SCALE, so that a run with ROWS divided by SCALE has the plan of the full
 * size.  bigfile: MODE is ignored; NFILE blobs (bigfile has no plan: the
 * caller chooses); its write buffer (64 MiB a chunk, one fopen per chunk and
 * file) is divided by SCALE.  CONCURRENCY is the ranks writing at once (1:
 * one after another in rank order).  CHUNK_ROWS (colfile; default 0: the
 * column's default) sets the rows per statistics chunk: few enough rows
 * make a column of more than 2^16 chunks, which closes by chunk owners
 * (each rank writes its chunks' records into one chunk-index file) as the
 * full-size column does.  Rank 0 prints "nfile N" (the blobs made). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef BIGFILE
#include "bigfile-mpi.h"
#else
#include "colfile_mpi.h"
#endif

#ifndef BIGFILE
/* As colfile.mpi creates a column with chunk_rows: rank 0 creates it
 * (the plan's blob count, rows split evenly) and chooses the chunks, the
 * others build replicas of its snapshot. */
static int create_chunked(cf_column **c, cf_file *f, int64_t rows, int64_t chunk_rows, const cf_mpi_options *o,
                          cf_error *err)
{
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int64_t total = 0;
    MPI_Allreduce(&rows, &total, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    int64_t *rank_rows = malloc((size_t)size * sizeof *rank_rows);
    int64_t nfile = o->nfile ? o->nfile : cf_plan_nfile(total * 24, size, o->blob_bytes);
    int64_t *blob_rows = malloc((size_t)nfile * sizeof *blob_rows);
    if (!rank_rows || !blob_rows) MPI_Abort(MPI_COMM_WORLD, 1);
    MPI_Gather(&rows, 1, MPI_INT64_T, rank_rows, 1, MPI_INT64_T, 0, MPI_COMM_WORLD);
    void *meta = NULL;
    size_t len = 0;
    int64_t head[2] = { 0, 0 }; /* rank 0's result, the snapshot's bytes */
    if (rank == 0) {
        if (o->align_blobs_to_ranks) head[0] = cf_plan_blobs_by_rank(rank_rows, size, nfile, blob_rows, err);
        else
            for (int64_t b = 0; b < nfile; b++) blob_rows[b] = cf_plan_share(total, nfile, b, NULL);
        if (head[0] == 0) head[0] = cf_column_create_blobs(c, f, "Position", "f8", 3, nfile, blob_rows, err);
        if (head[0] == 0) head[0] = cf_column_set_chunk_rows(*c, chunk_rows, err);
        if (head[0] == 0) head[0] = cf_column_export_meta(*c, &meta, &len, err);
        head[1] = (int64_t)len;
    }
    MPI_Bcast(head, 2, MPI_INT64_T, 0, MPI_COMM_WORLD);
    if (head[0]) {
        free(rank_rows);
        free(blob_rows);
        return (int)head[0];
    }
    if (rank != 0 && !(meta = malloc((size_t)head[1] + 1))) MPI_Abort(MPI_COMM_WORLD, 1);
    MPI_Bcast(meta, (int)head[1], MPI_BYTE, 0, MPI_COMM_WORLD);
    int rc = rank == 0 ? 0 : cf_column_open_meta(c, f, meta, (size_t)head[1], err);
    if (rank == 0) cf_free(meta);
    else free(meta);
    free(rank_rows);
    free(blob_rows);
    return rc;
}
#endif

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, ntask;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ntask);
    if (argc != 7 && argc != 8) {
        if (rank == 0) fprintf(stderr, "usage: lustre_model_write DIR ROWS MODE NFILE CONCURRENCY SCALE [CHUNK_ROWS]\n");
        MPI_Finalize();
        return 2;
    }
    const char *dir = argv[1], *mode = argv[3];
    int64_t rows = atoll(argv[2]), nfile = atoll(argv[4]), concurrency = atoll(argv[5]), scale = atoll(argv[6]);
    int64_t chunk_rows = argc > 7 ? atoll(argv[7]) : 0;
    double *data = malloc((size_t)(rows > 0 ? rows : 1) * 3 * sizeof *data);
    if (!data || scale < 1) MPI_Abort(MPI_COMM_WORLD, 2);
    for (int64_t i = 0; i < rows * 3; i++) data[i] = (double)(rank * rows * 3 + i);
    int64_t made = 0;
#ifdef BIGFILE
    (void)mode;
    (void)chunk_rows;
    BigFile bf;
    BigBlock b;
    BigBlockPtr ptr;
    BigArray a;
    int64_t total = 0;
    MPI_Allreduce(&rows, &total, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    big_file_set_buffer_size((size_t)((64 << 20) / scale));
    if (big_file_mpi_create(&bf, dir, MPI_COMM_WORLD) ||
        big_file_mpi_create_block(&bf, &b, "Position", "f8", 3, (int)nfile, (size_t)total, MPI_COMM_WORLD)) {
        fprintf(stderr, "bigfile: %s\n", big_file_get_error_message());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    size_t dims[2] = { (size_t)rows, 3 };
    big_array_init(&a, data, "f8", 2, dims, NULL);
    big_block_seek(&b, &ptr, 0);
    /* each rank's rows follow the previous ranks' (the write is collective) */
    if (big_block_mpi_write(&b, &ptr, &a, (int)concurrency, MPI_COMM_WORLD) ||
        big_block_mpi_close(&b, MPI_COMM_WORLD) || big_file_mpi_close(&bf, MPI_COMM_WORLD)) {
        fprintf(stderr, "bigfile: %s\n", big_file_get_error_message());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    made = nfile;
#else
    cf_error err;
    cf_mpi_options opt;
    cf_mpi_options_init(&opt);
    opt.mode = strcmp(mode, "aggregated") == 0    ? CF_IO_AGGREGATED
               : strcmp(mode, "blob_owners") == 0 ? CF_IO_BLOB_OWNERS
                                                  : CF_IO_THROTTLED;
    opt.align_blobs_to_ranks = strcmp(mode, "aligned") == 0;
    opt.nfile = nfile;
    opt.concurrency = concurrency;
    opt.blob_bytes = CF_PLAN_BLOB_BYTES / scale;
    opt.group_bytes = CF_PLAN_GROUP_BYTES / scale;
    cf_file *f = NULL;
    cf_column *c = NULL;
    int64_t first = 0;
    int rc = cf_mpi_file_open(&f, MPI_COMM_WORLD, dir, CF_OPEN_WRITE | CF_OPEN_CREATE, &err);
    if (rc == 0 && chunk_rows > 0) {
        rc = create_chunked(&c, f, rows, chunk_rows, &opt, &err);
        MPI_Exscan(&rows, &first, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
        if (rank == 0) first = 0;
    } else if (rc == 0) {
        rc = cf_mpi_column_create(&c, f, MPI_COMM_WORLD, "Position", "f8", 3, rows, &opt, &first, &err);
    }
    if (rc == 0) made = cf_column_nfile(c);
    if (rc == 0)
        rc = cf_mpi_column_write(c, MPI_COMM_WORLD, first, rows, data, NULL, 3 * sizeof *data, sizeof *data, &opt,
                                 &err);
    if (c) {
        int rc2 = cf_mpi_column_close(c, MPI_COMM_WORLD, rc ? NULL : &err);
        if (rc == 0) rc = rc2;
    }
    cf_file_close(f);
    if (rc) {
        if (rank == 0) fprintf(stderr, "colfile: %s\n", err.message);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
#endif
    if (rank == 0) printf("nfile %lld\n", (long long)made);
    free(data);
    MPI_Finalize();
    return 0;
}
