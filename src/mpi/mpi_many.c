/* mpi_many.c - snapshots: many columns created or written in one set of
 * rounds (include/colfile_mpi.h). */
#include "mpi_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- snapshots: many columns, one set of rounds ----------------------------- */

/* Fold an int64 and a string into a running FNV-1a hash. */
static uint64_t hash_i64(uint64_t h, int64_t v)
{
    for (int i = 0; i < 8; i++) h = (h ^ (uint64_t)((v >> (8 * i)) & 0xff)) * 1099511628211u;
    return h;
}

static uint64_t hash_text(uint64_t h, const char *t)
{
    return hash_i64(h, cf__mpi_text_hash(t));
}

int cf_mpi_column_create_many(cf_file *f, MPI_Comm comm, cf_mpi_column_spec *specs, int64_t n,
                              const cf_mpi_options *opt, cf_error *err)
{
    if (comm == MPI_COMM_NULL) return FAIL(err, CF_EARG, "cf_mpi_column_create_many: MPI_COMM_NULL");
    cf_error e;
    error_init(&e);
    int rank = rank_of(comm), size = size_of(comm);
    cf_mpi_options o;
    char (*dts)[CF_DTYPE_MAX] = NULL;
    int64_t *mine = NULL, *all = NULL, *col_rows = NULL;
    unsigned char *metas = NULL;
    size_t used = 0, cap = 0;
    int rc = cf__mpi_resolve_options(opt, &o, &e);
    if (rc == 0 && (n < 0 || (n > 0 && !specs))) rc = FAIL(&e, CF_EARG, "cf_mpi_column_create_many: bad list");
    int64_t k = rc == 0 ? n : 0;
    if (rc == 0 && (!(dts = calloc((size_t)(k > 0 ? k : 1), sizeof *dts)) ||
                    !(mine = malloc((size_t)(k > 0 ? k : 1) * sizeof *mine)) ||
                    !(all = malloc((size_t)(k > 0 ? k : 1) * (size_t)size * sizeof *all)) ||
                    !(col_rows = malloc((size_t)size * sizeof *col_rows))))
        rc = FAIL(&e, CF_ENOMEM, "out of memory for %lld columns", (long long)n);
    /* What must agree, folded into one hash: every column's name, dtype
     * and nmemb (a difference is named by its hash only). */
    uint64_t h = 14695981039346656037u;
    for (int64_t i = 0; i < k; i++) specs[i].column = NULL;
    for (int64_t i = 0; rc == 0 && i < k; i++) {
        cf_mpi_column_spec *sp = &specs[i];
        rc = cf__mpi_check_create_args(f, sp->name, sp->dtype, sp->nmemb, sp->local_rows, dts[i], &e);
        mine[i] = sp->local_rows;
        h = hash_text(hash_text(hash_i64(h, sp->dtype ? sp->nmemb : 0), sp->name), sp->dtype ? dts[i] : NULL);
    }
    int_field ints[] = { { "the number of columns", n }, { "the columns' names, dtypes and nmemb (hashed)", (int64_t)h },
                         { "options.nfile", o.nfile }, { "options.blob_bytes", o.blob_bytes },
                         { "options.align_blobs_to_ranks", o.align_blobs_to_ranks },
                         { "options.chunk_rows", o.chunk_rows } };
    if ((rc = cf__mpi_check_agree(comm, "cf_mpi_column_create_many", ints, 6, NULL, 0, rc, &e, err))) goto done;

    /* Every rank's rows of every column, in one exchange. */
    if (n > 0) MPI_Allgather(mine, (int)n, MPI_INT64_T, all, (int)n, MPI_INT64_T, comm);
    /* Rank 0 creates them all and packs their snapshots: per column its
     * length (8 bytes) and its bytes. */
    int64_t len = 0;
    for (int64_t i = 0; rank == 0 && rc == 0 && i < n; i++) {
        for (int r = 0; r < size; r++) col_rows[r] = all[(int64_t)r * n + i];
        rc = cf__mpi_create_planned(&specs[i].column, f, specs[i].name, dts[i], specs[i].nmemb, col_rows, size, &o, &e);
        void *meta = NULL;
        size_t mlen = 0;
        if (rc == 0) rc = cf_column_export_meta(specs[i].column, &meta, &mlen, &e);
        uint64_t m64 = (uint64_t)mlen;
        if (rc == 0 && (cf__mpi_grow_append(&metas, &used, &cap, &m64, sizeof m64) || cf__mpi_grow_append(&metas, &used, &cap, meta, mlen)))
            rc = FAIL(&e, CF_ENOMEM, "out of memory");
        cf_free(meta);
    }
    len = (int64_t)used;
    int got = 0;
    if ((rc = cf__mpi_root_share(comm, rc, &e, (void **)&metas, &len, &got, &e, err))) goto fail;
    rc = got;
    const unsigned char *p = metas;
    for (int64_t i = 0; rank != 0 && rc == 0 && i < n; i++) {
        uint64_t m64;
        memcpy(&m64, p, sizeof m64);
        rc = cf_column_open_meta(&specs[i].column, f, p + sizeof m64, (size_t)m64, &e);
        p += sizeof m64 + m64;
    }
    if ((rc = cf__mpi_agree(comm, rc, &e, err))) goto fail;
    for (int64_t i = 0; i < n; i++) {
        int64_t first = 0;
        for (int r = 0; r < rank; r++) first += all[(int64_t)r * n + i];
        specs[i].first_row = first;
    }
    goto done;
fail:
    /* Columns rank 0 created were never committed: discarded, they vanish. */
    for (int64_t i = 0; i < k; i++) {
        cf_column_discard(specs[i].column);
        cf_column_close(specs[i].column, NULL);
        specs[i].column = NULL;
    }
done:
    free(dts);
    free(mine);
    free(all);
    free(col_rows);
    free(metas);
    return rc;
}

int cf_mpi_column_write_many(const cf_mpi_write_spec *w, int64_t n, MPI_Comm comm, const cf_mpi_options *opt,
                             cf_error *err)
{
    if (comm == MPI_COMM_NULL) return FAIL(err, CF_EARG, "cf_mpi_column_write_many: MPI_COMM_NULL");
    cf_error e;
    error_init(&e);
    int rank = rank_of(comm), size = size_of(comm);
    cf_mpi_options o;
    int64_t *mine = NULL, *all = NULL, *ranges = NULL;
    span *spans = NULL;
    int rc = cf__mpi_resolve_options(opt, &o, &e);
    if (rc == 0 && (n < 0 || (n > 0 && !w))) rc = FAIL(&e, CF_EARG, "cf_mpi_column_write_many: bad list");
    int64_t k = rc == 0 ? n : 0;
    if (rc == 0 && (!(mine = malloc((size_t)(k > 0 ? 2 * k : 1) * sizeof *mine)) ||
                    !(all = malloc((size_t)(k > 0 ? 2 * k : 1) * (size_t)size * sizeof *all)) ||
                    !(ranges = malloc((size_t)size * 2 * sizeof *ranges)) ||
                    !(spans = malloc((size_t)size * sizeof *spans))))
        rc = FAIL(&e, CF_ENOMEM, "out of memory for %lld columns", (long long)n);
    uint64_t h = 14695981039346656037u;
    for (int64_t i = 0; i < k; i++) {
        if (rc == 0) rc = cf__mpi_check_io_args(w[i].column, 1, w[i].start, w[i].count, w[i].buf, w[i].buf_dtype, &e);
        mine[2 * i] = w[i].start;
        mine[2 * i + 1] = w[i].count;
        h = hash_i64(hash_i64(h, w[i].column ? cf_column_size(w[i].column) : -1),
                     w[i].column ? cf_column_nfile(w[i].column) : -1);
    }
    int_field ints[] = { { "the number of columns", n }, { "the columns' sizes and nfile (hashed)", (int64_t)h },
                         { "options.concurrency", o.concurrency } };
    rc = cf__mpi_check_agree(comm, "cf_mpi_column_write_many", ints, 3, NULL, 0, rc, &e, err);
    o.concurrency = ints[2].value;
    if (rc) goto done;

    /* Every rank's rows of every column in one exchange; an overlap in any
     * column fails every rank before any byte is written. */
    if (n > 0 && size > 1) MPI_Allgather(mine, (int)(2 * n), MPI_INT64_T, all, (int)(2 * n), MPI_INT64_T, comm);
    for (int64_t i = 0; i < n && size > 1; i++) {
        for (int r = 0; r < size; r++) {
            ranges[2 * r] = all[(int64_t)r * 2 * n + 2 * i];
            ranges[2 * r + 1] = all[(int64_t)r * 2 * n + 2 * i + 1];
        }
        if ((rc = cf__mpi_overlap_error(comm, ranges, size, spans, cf_column_path(w[i].column), &e, err)))
            goto done;
    }
    /* Throttled turns: each rank writes all its columns in its turn. */
    turns t;
    cf__mpi_turns_open(&t, comm, rank, size, rank - 1, rank + 1, o.concurrency);
    cf__mpi_turn_begin(&t);
    for (int64_t i = 0; i < n && rc == 0; i++)
        if (w[i].count > 0)
            rc = cf_column_write(w[i].column, w[i].start, w[i].count, w[i].buf, w[i].buf_dtype, w[i].row_stride,
                                 w[i].elem_stride, &e);
    cf__mpi_turn_end(&t);
    cf__mpi_turns_close(&t);
    rc = cf__mpi_agree(comm, rc, &e, err);
done:
    free(mine);
    free(all);
    free(ranges);
    free(spans);
    return rc;
}
