/* mpi_column.c - Files and columns opened and created collectively, and
 * attributes set collectively: rank 0 does the metadata and the others
 * replicate its handle (include/colfile_mpi.h). */
#include "mpi_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- Files --------------------------------------------------------------- */

int cf_mpi_file_open(cf_file **out, MPI_Comm comm, const char *path, int flags, cf_error *err)
{
    if (comm == MPI_COMM_NULL) return FAIL(err, CF_EARG, "cf_mpi_file_open: MPI_COMM_NULL");
    cf_error e;
    error_init(&e);
    int rank = rank_of(comm), rc = 0;
    if (!out || !path) rc = FAIL(&e, CF_EARG, "cf_mpi_file_open: NULL argument");
    int_field ints[] = { { "flags", flags } };
    str_field strs[] = { { "path", path } };
    rc = cf__mpi_check_agree(comm, "cf_mpi_file_open", ints, 1, strs, 1, rc, &e, err);
    if (rc) return rc;
    /* The others trust rank 0, which creates or truncates once; they keep
     * the bits that change how their handle behaves (durability, torn
     * columns, verified reads, the shared lock, where writes digest). */
    cf_file *f = NULL;
    int keep = CF_OPEN_WRITE | CF_OPEN_NODURABLE | CF_OPEN_TORN_OK | CF_OPEN_VERIFY | CF_OPEN_NOLOCK | CF_OPEN_NOLOCKING |
               CF_OPEN_NOMMAP | CF_OPEN_DIGEST_INLINE | CF_OPEN_DIGEST_HELPER;
    rc = rank == 0 ? cf_file_open(&f, path, flags, &e)
                   : cf_file_open(&f, path, (flags & keep) | CF_OPEN_NOCHECK, &e);
    if ((rc = cf__mpi_agree(comm, rc, &e, err))) {
        cf_file_close(f);
        return rc;
    }
    cf__mpi_set_node(f, comm);
    *out = f;
    return 0;
}

int cf_mpi_file_list(cf_file *f, MPI_Comm comm, char ***names, int64_t *count, cf_error *err)
{
    if (comm == MPI_COMM_NULL) return FAIL(err, CF_EARG, "cf_mpi_file_list: MPI_COMM_NULL");
    cf_error e;
    error_init(&e);
    int rank = rank_of(comm), rc = 0;
    if (!f || !names || !count) rc = FAIL(&e, CF_EARG, "cf_mpi_file_list: NULL argument");
    /* Rank 0 lists; the names travel NUL-terminated, one after the other. */
    char **list = NULL;
    int64_t n = 0, len = 0;
    char *packed = NULL;
    if (rank == 0 && rc == 0 && (rc = cf_file_list(f, &list, &n, &e)) == 0) {
        for (int64_t i = 0; i < n; i++) len += (int64_t)strlen(list[i]) + 1;
        packed = malloc(len > 0 ? (size_t)len : 1);
        if (!packed) {
            rc = FAIL(&e, CF_ENOMEM, "%s: out of memory", cf_file_path(f));
        } else {
            int64_t off = 0;
            for (int64_t i = 0; i < n; i++) {
                size_t k = strlen(list[i]) + 1;
                memcpy(packed + off, list[i], k);
                off += (int64_t)k;
            }
        }
    }
    cf_names_free(list, n);
    list = NULL;
    int lrc = 0;
    if ((rc = cf__mpi_root_share(comm, rc, &e, (void **)&packed, &len, &lrc, &e, err))) goto done;
    n = 0;
    for (int64_t off = 0; lrc == 0 && off < len; off += (int64_t)strlen(packed + off) + 1) n++;
    if (lrc == 0) {
        list = calloc((size_t)n + 1, sizeof *list);
        if (!list) lrc = FAIL(&e, CF_ENOMEM, "out of memory for %lld names", (long long)n);
        int64_t off = 0;
        for (int64_t i = 0; lrc == 0 && i < n; i++) {
            list[i] = strdup(packed + off);
            if (!list[i]) lrc = FAIL(&e, CF_ENOMEM, "out of memory for %lld names", (long long)n);
            off += (int64_t)strlen(packed + off) + 1;
        }
    }
    if (lrc == 0 && (!names || !count)) lrc = FAIL(&e, CF_EARG, "cf_mpi_file_list: NULL argument");
    if ((rc = cf__mpi_agree(comm, lrc, &e, err))) {
        cf_names_free(list, n);
        goto done;
    }
    *names = list;
    *count = n;
done:
    free(packed);
    return rc;
}

/* ---- Columns: create and open ------------------------------------------- */

/* Rank 0 has a handle (*mine, or NULL after a failure, with result rc):
 * send its metadata snapshot, and build the others' replicas from it. */
static int share_handle(cf_column **out, cf_column *mine, cf_file *f, MPI_Comm comm, int rc, int local_rc,
                        cf_error *e, cf_error *err)
{
    int rank = rank_of(comm);
    void *meta = NULL;
    size_t mlen = 0;
    if (rank == 0 && rc == 0) rc = cf_column_export_meta(mine, &meta, &mlen, e);
    int64_t len = (int64_t)mlen;
    cf_column *c = rank == 0 ? mine : NULL;
    int got = 0;
    if ((rc = cf__mpi_root_share(comm, rc, e, &meta, &len, &got, e, err))) goto fail;
    rc = got;
    if (rank != 0 && rc == 0 && local_rc == 0) rc = cf_column_open_meta(&c, f, meta, (size_t)len, e);
    if (rc == 0) rc = local_rc;
    if ((rc = cf__mpi_agree(comm, rc, e, err))) goto fail;
    if (rank == 0) cf_free(meta);
    else free(meta);
    *out = c;
    return 0;
fail:
    if (rank == 0) cf_free(meta);
    else free(meta);
    /* Another rank failed: rank 0 gives up its handle, so that a column it
     * has just created (staged, never committed) vanishes at close instead
     * of being published without its rows. */
    cf_column_discard(c);
    cf_column_close(c, NULL);
    return rc;
}

/* One rank's checks of a create's arguments; dt gets the normalised dtype. */
int cf__mpi_check_create_args(cf_file *f, const char *name, const char *dtype, int64_t nmemb, int64_t local_rows,
                              char dt[CF_DTYPE_MAX], cf_error *e)
{
    dt[0] = '\0';
    if (!f || !name) return FAIL(e, CF_EARG, "cf_mpi_column_create: NULL argument");
    if (!cf_file_writable(f))
        return FAIL(e, CF_EREADONLY, "%s: File is open read-only; cannot create '%s'", cf_file_path(f), name);
    int rc = cf_name_check(name, e);
    if (rc == 0 && dtype) {
        char where[CF_ERROR_MESSAGE_MAX];
        snprintf(where, sizeof where, "%s/%s", cf_file_path(f), name);
        rc = cf__mpi_normalize_dtype(dtype, dt, where, e);
    }
    if (rc == 0 && dtype && nmemb < 1)
        rc = FAIL(e, CF_EARG, "%s/%s: nmemb must be at least 1, got %lld", cf_file_path(f), name, (long long)nmemb);
    if (rc == 0 && (local_rows < 0 || (!dtype && local_rows != 0)))
        rc = FAIL(e, CF_EARG, "%s/%s: cannot hold %lld rows here%s", cf_file_path(f), name, (long long)local_rows,
                  dtype ? "" : " (no dtype: a block without rows)");
    return rc;
}

/* Rank 0: plan the blobs of a new column from every rank's rows and create
 * it (see cf_mpi_column_create). */
int cf__mpi_create_planned(cf_column **out, cf_file *f, const char *name, const char *dt, int64_t nmemb,
                           const int64_t *rank_rows, int size, const cf_mpi_options *o, cf_error *e)
{
    int64_t total = 0, *blob_rows = NULL, nfile = 0;
    int rc = 0;
    for (int r = 0; r < size; r++) total = rank_rows[r] > INT64_MAX - total ? INT64_MAX : total + rank_rows[r];
    int64_t itemsize = 0; /* a bad dtype stays 0: cf_column_create then names it */
    if (dt[0] && cf_dtype_itemsize(dt, &itemsize, NULL) != 0) itemsize = 0;
    int64_t rowbytes = nmemb * itemsize;
    if (!dt[0]) {
        nfile = 0;
    } else if (total == INT64_MAX || (rowbytes > 0 && total > INT64_MAX / rowbytes)) {
        rc = FAIL(e, CF_EARG, "%s/%s: %lld rows of %lld bytes overflow a 64-bit size", cf_file_path(f), name,
                  (long long)total, (long long)rowbytes);
    } else {
        nfile = o->nfile ? o->nfile : cf_plan_nfile(total * rowbytes, size, o->blob_bytes);
    }
    if (rc == 0 && nfile > 0 && !(blob_rows = malloc((size_t)nfile * sizeof *blob_rows)))
        rc = FAIL(e, CF_ENOMEM, "%s/%s: out of memory for %lld blobs", cf_file_path(f), name, (long long)nfile);
    if (rc == 0 && nfile > 0) {
        if (o->align_blobs_to_ranks) {
            rc = cf_plan_blobs_by_rank(rank_rows, size, nfile, blob_rows, e);
        } else {
            for (int64_t i = 0; i < nfile; i++) blob_rows[i] = cf_plan_share(total, nfile, i, NULL);
        }
    }
    if (rc == 0) rc = cf_column_create_blobs(out, f, name, dt[0] ? dt : NULL, nmemb, nfile, blob_rows, e);
    free(blob_rows);
    if (rc == 0 && dt[0] && o->chunk_rows > 0 && (rc = cf_column_set_chunk_rows(*out, o->chunk_rows, e)) != 0) {
        cf_column_discard(*out); /* staged only: nothing is published */
        cf_column_close(*out, NULL);
        *out = NULL;
    }
    return rc;
}

int cf_mpi_column_create(cf_column **out, cf_file *f, MPI_Comm comm, const char *name,
                         const char *dtype, int64_t nmemb, int64_t local_rows,
                         const cf_mpi_options *opt, int64_t *first_row, cf_error *err)
{
    if (comm == MPI_COMM_NULL) return FAIL(err, CF_EARG, "cf_mpi_column_create: MPI_COMM_NULL");
    cf_error e;
    error_init(&e);
    int rank = rank_of(comm), size = size_of(comm);
    cf_mpi_options o;
    char dt[CF_DTYPE_MAX] = "";
    int64_t *rank_rows = NULL;
    int rc = cf__mpi_resolve_options(opt, &o, &e);
    if (rc == 0 && !out) rc = FAIL(&e, CF_EARG, "cf_mpi_column_create: NULL argument");
    if (rc == 0) rc = cf__mpi_check_create_args(f, name, dtype, nmemb, local_rows, dt, &e);
    if (rc == 0 && !(rank_rows = malloc((size_t)size * sizeof *rank_rows)))
        rc = FAIL(&e, CF_ENOMEM, "out of memory");
    int_field ints[] = { { "nmemb", dtype ? nmemb : 0 }, { "options.nfile", o.nfile },
                         { "options.blob_bytes", o.blob_bytes },
                         { "options.align_blobs_to_ranks", o.align_blobs_to_ranks },
                         { "options.chunk_rows", o.chunk_rows } };
    str_field strs[] = { { "name", name }, { "dtype", dtype ? dt : NULL } };
    rc = cf__mpi_check_agree(comm, "cf_mpi_column_create", ints, 5, strs, 2, rc, &e, err);
    if (rc) goto done;

    /* The sizes: every rank learns every rank's rows. */
    MPI_Allgather(&local_rows, 1, MPI_INT64_T, rank_rows, 1, MPI_INT64_T, comm);
    int64_t first = 0;
    for (int r = 0; r < rank; r++) first += rank_rows[r];
    /* Rank 0 plans the blobs and creates the column. */
    cf_column *c = NULL;
    if (rank == 0) rc = cf__mpi_create_planned(&c, f, name, dt, nmemb, rank_rows, size, &o, &e);
    if ((rc = share_handle(&c, c, f, comm, rc, 0, &e, err))) goto done;
    *out = c;
    if (first_row) *first_row = first;
done:
    free(rank_rows);
    return rc;
}

int cf_mpi_column_open(cf_column **out, cf_file *f, MPI_Comm comm, const char *name, cf_error *err)
{
    if (comm == MPI_COMM_NULL) return FAIL(err, CF_EARG, "cf_mpi_column_open: MPI_COMM_NULL");
    cf_error e;
    error_init(&e);
    int rank = rank_of(comm), rc = 0;
    if (!out || !f || !name) rc = FAIL(&e, CF_EARG, "cf_mpi_column_open: NULL argument");
    if (rc == 0) rc = cf_name_check(name, &e);
    str_field strs[] = { { "name", name } };
    if ((rc = cf__mpi_check_agree(comm, "cf_mpi_column_open", NULL, 0, strs, 1, rc, &e, err))) return rc;
    cf_column *c = NULL;
    if (rank == 0) rc = cf_column_open(&c, f, name, &e);
    if ((rc = share_handle(&c, c, f, comm, rc, 0, &e, err))) return rc;
    *out = c;
    return 0;
}

/* ---- attributes ------------------------------------------------------------ */

/* The byte width of a normalised attribute dtype token ("<f8", "<a1", "<S12"). */
static int64_t token_width(const char *token)
{
    return strtoll(token + 2, NULL, 10);
}

int cf_mpi_column_attr_set(cf_column *c, MPI_Comm comm, const char *name, const char *dtype,
                           int64_t nmemb, const void *data, cf_error *err)
{
    if (comm == MPI_COMM_NULL) return FAIL(err, CF_EARG, "cf_mpi_column_attr_set: MPI_COMM_NULL");
    cf_error e;
    error_init(&e);
    int rank = rank_of(comm), rc = 0;
    if (!c || !name || !dtype) rc = FAIL(&e, CF_EARG, "cf_mpi_column_attr_set: NULL argument");
    else if (nmemb < 0) rc = FAIL(&e, CF_EARG, "%s: attribute '%s' with negative nmemb", cf_column_path(c), name);
    else if (nmemb > 0 && !data) rc = FAIL(&e, CF_EARG, "%s: attribute '%s' has no data", cf_column_path(c), name);
    int_field ints[] = { { "nmemb", nmemb } };
    str_field strs[] = { { "attribute name", name }, { "dtype", dtype } };
    rc = cf__mpi_check_agree(comm, "cf_mpi_column_attr_set", ints, 1, strs, 2, rc, &e, err);
    if (rc) return rc;

    /* Rank 0 validates and writes; its stored value (normalised dtype and
     * bytes) then goes to the replicas. */
    unsigned char *value = NULL;
    int64_t len = 0;
    if (rank == 0 && (rc = cf_column_attr_set(c, name, dtype, nmemb, data, &e)) == 0) {
        const char *stored;
        const void *bytes;
        int64_t n;
        rc = cf_column_attr_get(c, name, &stored, &n, &bytes, &e);
        int64_t nb = rc == 0 ? n * token_width(stored) : 0;
        if (rc == 0 && !(value = calloc(1, (size_t)(CF_DTYPE_MAX + nb))))
            rc = FAIL(&e, CF_ENOMEM, "%s: out of memory", cf_column_path(c));
        if (rc == 0) {
            snprintf((char *)value, CF_DTYPE_MAX, "%s", stored);
            if (nb > 0) memcpy(value + CF_DTYPE_MAX, bytes, (size_t)nb);
            len = CF_DTYPE_MAX + nb;
        }
    }
    int got = 0;
    if ((rc = cf__mpi_root_share(comm, rc, &e, (void **)&value, &len, &got, &e, err))) goto done;
    rc = got;
    if (rank != 0 && rc == 0) {
        const char *stored = (const char *)value;
        int64_t nb = len - CF_DTYPE_MAX;
        int64_t width = token_width(stored);
        int64_t n = width > 0 ? nb / width : 0;
        rc = cf_column_attr_set(c, name, stored, n, value + CF_DTYPE_MAX, &e);
        /* Rank 0's value is stored everywhere; a different one here (same
         * dtype token, so the same width) is a caller's bug worth reporting. */
        if (rc == 0 && nb > 0 && memcmp(data, value + CF_DTYPE_MAX, (size_t)nb) != 0)
            rc = FAIL(&e, CF_EARG, "%s: attribute '%s': the value differs from rank 0's (rank 0's is stored)",
                      cf_column_path(c), name);
    }
    rc = cf__mpi_agree(comm, rc, &e, err);
done:
    free(value);
    return rc;
}
