/* mpi_stream.c - task-local streams over a communicator (docs/format.md
 * 8.7): each rank is one task.  Rank 0 creates the stream (lock, staging
 * directory) and shares the layout and directory; every rank opens its
 * task there and appends with the core, with no communication; a flush
 * gathers the ranks' task states at rank 0, which commits. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_impl.h"

struct cf_mpi_stream {
    MPI_Comm comm;           /* a duplicate of the caller's */
    cf_stream_writer *w;     /* rank 0: the owner; others: joined */
    cf_stream_task *task;    /* this rank's */
};

int64_t cf_mpi_stream_files(MPI_Comm comm)
{
    /* ranks sharing memory are a node: one file per node */
    MPI_Comm node;
    MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    int local = rank_of(node) == 0, nodes = 0;
    MPI_Allreduce(&local, &nodes, 1, MPI_INT, MPI_SUM, comm);
    MPI_Comm_free(&node);
    return nodes;
}

static void stream_free(cf_mpi_stream *s)
{
    if (!s) return;
    cf_stream_discard(s->w);
    if (s->comm != MPI_COMM_NULL) MPI_Comm_free(&s->comm);
    free(s);
}

/* Rank 0 has made (or failed to make, rc) the owner's writer s->w: it
 * shares the layout, row type and directory, the others join, and every
 * rank opens its task.  On failure s is freed on every rank. */
static int share_and_join(cf_mpi_stream *s, cf_file *f, MPI_Comm comm, const char *name, int rc, cf_error *e,
                          cf_error *err)
{
    int rank = rank_of(comm);
    unsigned char *packed = NULL;
    int64_t len = 0;
    if (rank == 0 && rc == 0) {
        cf_stream_layout l;
        char dt[CF_DTYPE_MAX] = { 0 };
        int64_t nmemb;
        cf_stream_writer_info(s->w, &l, dt, &nmemb);
        if (l.tasks != size_of(comm))
            rc = FAIL(e, CF_EARG, "%s/%s: a stream of %lld tasks, written by %d ranks (one task per rank)",
                      cf_file_path(f), name, (long long)l.tasks, size_of(comm));
        const char *dir = cf_stream_writer_dir(s->w);
        len = 40 + CF_DTYPE_MAX + (int64_t)strlen(dir) + 1;
        if (rc == 0 && !(packed = malloc((size_t)len))) rc = FAIL(e, CF_ENOMEM, "%s: out of memory", dir);
        if (rc == 0) {
            int64_t v[5] = { l.tasks, l.files, l.chunk, l.align, nmemb };
            memcpy(packed, v, 40);
            memcpy(packed + 40, dt, CF_DTYPE_MAX);
            memcpy(packed + 40 + CF_DTYPE_MAX, dir, (size_t)(len - 40 - CF_DTYPE_MAX));
        }
    }
    int got = 0;
    if ((rc = cf__mpi_root_share(comm, rc, e, (void **)&packed, &len, &got, e, err))) {
        stream_free(s);
        return rc;
    }
    rc = got;
    if (rc == 0 && rank != 0) {
        int64_t v[5];
        char dt[CF_DTYPE_MAX];
        memcpy(v, packed, 40);
        memcpy(dt, packed + 40, CF_DTYPE_MAX);
        dt[CF_DTYPE_MAX - 1] = 0;
        cf_stream_layout shared = { v[0], v[1], v[2], v[3] };
        rc = cf_stream_join(&s->w, f, name, (const char *)packed + 40 + CF_DTYPE_MAX, dt, v[4], &shared, e);
    }
    free(packed);
    if (rc == 0) rc = cf_stream_task_open(&s->task, s->w, rank, e);
    if ((rc = cf__mpi_agree(comm, rc, e, err))) {
        stream_free(s); /* rank 0's staging directory goes with it */
        return rc;
    }
    return 0;
}

static int stream_new(cf_mpi_stream **out, MPI_Comm comm, int rc, cf_error *e, cf_error *err)
{
    cf_mpi_stream *s = rc ? NULL : calloc(1, sizeof *s);
    if (!rc && !s) rc = FAIL(e, CF_ENOMEM, "out of memory");
    if ((rc = cf__mpi_agree(comm, rc, e, err))) {
        free(s);
        return rc;
    }
    MPI_Comm_dup(comm, &s->comm);
    *out = s;
    return 0;
}

int cf_mpi_stream_create(cf_mpi_stream **out, cf_file *f, MPI_Comm comm, const char *name, const char *dtype,
                         int64_t nmemb, int64_t files, int64_t chunk, int64_t align, cf_error *err)
{
    cf_error e;
    error_init(&e);
    int rank = rank_of(comm), size = size_of(comm), rc = 0;
    if (!out || !f || !name || !dtype) rc = FAIL(&e, CF_EARG, "cf_mpi_stream_create: NULL argument");
    int_field ints[4] = { { "nmemb", nmemb }, { "files", files }, { "chunk", chunk }, { "align", align } };
    str_field strs[2] = { { "name", name }, { "dtype", dtype } };
    if ((rc = cf__mpi_check_agree(comm, "cf_mpi_stream_create", ints, 4, strs, 2, rc, &e, err))) return rc;
    if (files == 0) files = cf_mpi_stream_files(comm);
    cf_mpi_stream *s;
    if ((rc = stream_new(&s, comm, 0, &e, err))) return rc;
    /* rank 0 chooses the layout (its st_blksize) and creates */
    if (rank == 0) {
        cf_stream_layout l;
        rc = cf_stream_layout_choose(&l, f, size, files, chunk, align, &e);
        if (rc == 0) rc = cf_stream_create(&s->w, f, name, dtype, nmemb, &l, &e);
    }
    if ((rc = share_and_join(s, f, comm, name, rc, &e, err))) return rc;
    *out = s;
    return 0;
}

int cf_mpi_stream_reopen(cf_mpi_stream **out, cf_file *f, MPI_Comm comm, const char *name, cf_error *err)
{
    cf_error e;
    error_init(&e);
    int rc = 0;
    if (!out || !f || !name) rc = FAIL(&e, CF_EARG, "cf_mpi_stream_reopen: NULL argument");
    str_field strs[1] = { { "name", name } };
    if ((rc = cf__mpi_check_agree(comm, "cf_mpi_stream_reopen", NULL, 0, strs, 1, rc, &e, err))) return rc;
    cf_mpi_stream *s;
    if ((rc = stream_new(&s, comm, 0, &e, err))) return rc;
    if (rank_of(comm) == 0) rc = cf_stream_reopen(&s->w, f, name, &e);
    if ((rc = share_and_join(s, f, comm, name, rc, &e, err))) return rc;
    *out = s;
    return 0;
}

cf_stream_task *cf_mpi_stream_task(cf_mpi_stream *s)
{
    return s ? s->task : NULL;
}

int cf_mpi_stream_flush(cf_mpi_stream *s, cf_error *err)
{
    cf_error e;
    error_init(&e);
    MPI_Comm comm = s->comm;
    int rank = rank_of(comm), size = size_of(comm), rc;
    /* each rank: its file made durable and its state */
    int64_t len = 0;
    unsigned char *state = NULL;
    rc = cf_stream_task_state(s->task, NULL, 0, &len, &e);
    if (rc == 0 && len > MSG_MAX) rc = FAIL(&e, CF_ERANGE, "task %d: a state of %lld bytes", rank, (long long)len);
    if (rc == 0 && !(state = malloc((size_t)len))) rc = FAIL(&e, CF_ENOMEM, "task %d: out of memory", rank);
    if (rc == 0) rc = cf_stream_task_state(s->task, state, len, &len, &e);
    if ((rc = cf__mpi_agree(comm, rc, &e, err))) {
        free(state);
        return rc;
    }
    /* rank 0 gathers them all and commits */
    int n = (int)len, *counts = NULL, *displs = NULL;
    unsigned char *all = NULL;
    if (rank == 0) {
        counts = malloc((size_t)size * sizeof *counts);
        displs = malloc((size_t)size * sizeof *displs);
    }
    MPI_Gather(&n, 1, MPI_INT, counts, 1, MPI_INT, 0, comm);
    int64_t total = 0;
    if (rank == 0) {
        if (!counts || !displs) rc = FAIL(&e, CF_ENOMEM, "out of memory for %d task states", size);
        for (int r = 0; rc == 0 && r < size; r++) {
            displs[r] = (int)total;
            total += counts[r];
            if (total > MSG_MAX) rc = FAIL(&e, CF_ERANGE, "task states of %lld bytes and more", (long long)total);
        }
        if (rc == 0 && !(all = malloc((size_t)total + 1))) rc = FAIL(&e, CF_ENOMEM, "out of memory");
    }
    /* every rank learns whether rank 0 can take the states */
    int64_t unused = 0;
    if ((rc = cf__mpi_root_result(comm, rc, &e, &unused, err))) goto done;
    MPI_Gatherv(state, n, MPI_BYTE, all, counts, displs, MPI_BYTE, 0, comm);
    if (rank == 0) rc = cf_stream_commit_states(s->w, all, total, &e);
    rc = cf__mpi_root_result(comm, rc, &e, &unused, err);
done:
    free(state);
    free(all);
    free(counts);
    free(displs);
    return rc;
}

int cf_mpi_stream_close(cf_mpi_stream *s, cf_error *err)
{
    int rc = cf_mpi_stream_flush(s, err);
    stream_free(s);
    return rc;
}

void cf_mpi_stream_discard(cf_mpi_stream *s)
{
    stream_free(s);
}
