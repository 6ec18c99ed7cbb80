/* test_mpi_stream.c - streams written by every rank of a communicator:
 * uneven, empty and growing sizes, flushes as checkpoints, and the same
 * bytes as one serial writer of the same tasks (docs/format.md 8.7). */
#include "mpi_harness.h"
#include "stream_rows.h"

/* Rows of task r in the stream: rank 1 none, the others uneven. */
static int64_t rows_of(int64_t r)
{
    return r == 1 ? 0 : 600 * r + 7;
}

static void test_write_flush_close(void)
{
    cf_error err;
    cf_file *f = cf_test_mpi_file();
    int rank = cf_test_rank(), size = cf_test_size();
    cf_mpi_stream *s = NULL;
    CHECK_OK(cf_mpi_stream_create(&s, f, MPI_COMM_WORLD, "parts", "<i8", 1, 0, 4096, 4096, &err), &err);
    cf_stream_task *t = cf_mpi_stream_task(s);
    /* half, a checkpoint, the rest */
    stream_append_rows(t, rank, 0, rows_of(rank) / 2, 0);
    CHECK_OK(cf_mpi_stream_flush(s, &err), &err);
    int64_t half[4], full[4];
    for (int r = 0; r < size; r++) half[r] = rows_of(r) / 2, full[r] = rows_of(r);
    stream_check_rows(f, "parts", size, half, 0);
    MPI_Barrier(MPI_COMM_WORLD); /* everyone has read the checkpoint before more is committed */
    stream_append_rows(t, rank, rows_of(rank) / 2, rows_of(rank), 0);
    CHECK_EQ_INT(cf_stream_task_rows(t), rows_of(rank));
    CHECK_OK(cf_mpi_stream_close(s, &err), &err);
    stream_check_rows(f, "parts", size, full, 0);
    /* the default: one file per node (one node here), one per rank on a
     * local file system */
    if (rank == 0) {
        cf_stream_reader *r = NULL;
        CHECK_OK(cf_stream_open(&r, f, "parts", &err), &err);
        cf_stream_layout l = { 0, 0, 0, 0 };
        int64_t commit = 0;
        if (r) cf_stream_info(r, &l, NULL, NULL, &commit);
        const char *type = cf_file_fs_type(f);
        int local = 0;
        for (const char *const *k = (const char *const[]){ "ext4", "xfs", "btrfs", "tmpfs", "zfs", "bcachefs",
                                                           "overlayfs", NULL };
             *k; k++)
            local |= strcmp(type, *k) == 0;
        CHECK_EQ_INT(l.files, local ? size : cf_mpi_stream_files(MPI_COMM_SELF));
        CHECK_EQ_INT(cf_stream_files_default(f, size, 1), local ? size : 1);
        CHECK_EQ_INT(l.tasks, size);
        CHECK_EQ_INT(commit, 2);
        cf_stream_reader_close(r);
    }
    cf_file_close(f);
}

/* The same bytes as a serial writer of every task. */
static void test_same_bytes_as_serial(void)
{
    cf_error err;
    cf_file *f = cf_test_mpi_file();
    int rank = cf_test_rank(), size = cf_test_size();
    cf_mpi_stream *s = NULL;
    CHECK_OK(cf_mpi_stream_create(&s, f, MPI_COMM_WORLD, "mpi", "<i8", 1, size, 4096, 4096, &err), &err);
    stream_append_rows(cf_mpi_stream_task(s), rank, 0, rows_of(rank), 0);
    CHECK_OK(cf_mpi_stream_close(s, &err), &err);
    if (rank == 0) {
        cf_stream_layout l;
        cf_stream_writer *w = NULL;
        CHECK_OK(cf_stream_layout_choose(&l, f, size, size, 4096, 4096, &err), &err);
        CHECK_OK(cf_stream_create(&w, f, "serial", "<i8", 1, &l, &err), &err);
        for (int r = size - 1; r >= 0; r--) { /* any order of tasks */
            cf_stream_task *t;
            CHECK_OK(cf_stream_task_open(&t, w, r, &err), &err);
            stream_append_rows(t, r, 0, rows_of(r), 0);
        }
        CHECK_OK(cf_stream_close(w, &err), &err);
        const char *names[5] = { "colfile-stream-v1", "colfile-stream-data-000000", "colfile-stream-data-000001",
                                 "colfile-stream-data-000002", "colfile-stream-data-000003" };
        for (int i = 0; i <= size; i++) {
            char a[4300], b[4300];
            snprintf(a, sizeof a, "f/mpi/%s", names[i]);
            snprintf(b, sizeof b, "f/serial/%s", names[i]);
            size_t la = 0, lb = 0;
            char *x = cf_test_slurp(cf_test_dir(), a, &la), *y = cf_test_slurp(cf_test_dir(), b, &lb);
            CHECK(x && y && la == lb && memcmp(x, y, la) == 0);
            free(x);
            free(y);
        }
    }
    cf_file_close(f);
}

/* Arguments that differ between ranks fail every rank, creating nothing. */
static void test_disagreement(void)
{
    cf_error err;
    cf_file *f = cf_test_mpi_file();
    cf_mpi_stream *s = NULL;
    int64_t chunk = cf_test_rank() == cf_test_size() - 1 && cf_test_size() > 1 ? 8192 : 4096;
    int rc = cf_mpi_stream_create(&s, f, MPI_COMM_WORLD, "x", "<i8", 1, 0, chunk, 4096, &err);
    if (cf_test_size() > 1) {
        CHECK_EQ_INT(rc, CF_EARG);
        CHECK(strstr(err.message, "chunk") != NULL);
    } else {
        CHECK_OK(rc, &err);
        CHECK_OK(cf_mpi_stream_close(s, &err), &err);
    }
    /* a bad dtype on every rank fails every rank */
    CHECK_EQ_INT(cf_mpi_stream_create(&s, f, MPI_COMM_WORLD, "y", "<f16", 1, 0, 0, 0, &err), CF_EDTYPE);
    cf_file_close(f);
}

/* A job restarting from a checkpoint appends to the committed stream. */
static void test_reopen(void)
{
    cf_error err;
    cf_file *f = cf_test_mpi_file();
    int rank = cf_test_rank(), size = cf_test_size();
    cf_mpi_stream *s = NULL;
    CHECK_OK(cf_mpi_stream_create(&s, f, MPI_COMM_WORLD, "ckpt", "<i8", 1, 0, 4096, 4096, &err), &err);
    stream_append_rows(cf_mpi_stream_task(s), rank, 0, rows_of(rank) / 3, 0);
    CHECK_OK(cf_mpi_stream_flush(s, &err), &err);
    stream_append_rows(cf_mpi_stream_task(s), rank, rows_of(rank) / 3, rows_of(rank), 0); /* lost in the crash */
    cf_mpi_stream_discard(s);
    /* the next job */
    CHECK_OK(cf_mpi_stream_reopen(&s, f, MPI_COMM_WORLD, "ckpt", &err), &err);
    CHECK_EQ_INT(cf_stream_task_rows(cf_mpi_stream_task(s)), rows_of(rank) / 3);
    stream_append_rows(cf_mpi_stream_task(s), rank, rows_of(rank) / 3, rows_of(rank), 0);
    CHECK_OK(cf_mpi_stream_close(s, &err), &err);
    int64_t full[4] = { 0, 0, 0, 0 };
    for (int r = 0; r < size; r++) full[r] = rows_of(r);
    stream_check_rows(f, "ckpt", size, full, 0);
    /* a stream of another task count cannot be appended to by this job */
    MPI_Comm alone;
    MPI_Comm_split(MPI_COMM_WORLD, rank == 0 ? 0 : MPI_UNDEFINED, 0, &alone);
    if (size > 1 && rank == 0) {
        int rc = cf_mpi_stream_reopen(&s, f, alone, "ckpt", &err);
        CHECK_EQ_INT(rc, CF_EARG);
        CHECK(strstr(err.message, "one task per rank") != NULL);
    }
    if (alone != MPI_COMM_NULL) MPI_Comm_free(&alone);
    CHECK_EQ_INT(cf_mpi_stream_reopen(&s, f, MPI_COMM_WORLD, "nothing", &err), CF_ENOENT);
    cf_file_close(f);
}

CF_MPI_TESTS(CF_TEST(test_write_flush_close), CF_TEST(test_reopen), CF_TEST(test_same_bytes_as_serial), CF_TEST(test_disagreement))
