/* test_mpi_stream_failed.c - a commit of a stream whose task could not be
 * written fails on every rank with that rank's message, and the stream
 * stays at its last commit.  The last rank's rows wait in its task's
 * buffer until the commit writes them, past the file size limit
 * (RLIMIT_FSIZE) that rank set: the write fails inside the commit. */
#include <signal.h>
#include <sys/resource.h>

#include "mpi_harness.h"
#include "stream_rows.h"

static void commit_fails(int64_t files, const char *name)
{
    cf_error err;
    cf_file *f = cf_test_mpi_file();
    if (!f) return;
    int rank = cf_test_rank(), size = cf_test_size(), bad = size - 1;
    cf_mpi_stream *s = NULL;
    CHECK_OK(cf_mpi_stream_create(&s, f, MPI_COMM_WORLD, name, "<i8", 1, files, 4096, 4096, &err), &err);
    if (!s) return;
    cf_stream_task *t = cf_mpi_stream_task(s);
    stream_append_rows(t, rank, 0, 1000, 0); /* 8000 bytes: chunk 1 lies past 4096 in every file */
    CHECK_OK(cf_mpi_stream_flush(s, &err), &err);
    struct rlimit old;
    void (*prev)(int) = SIG_DFL;
    if (rank == bad) {
        getrlimit(RLIMIT_FSIZE, &old);
        prev = signal(SIGXFSZ, SIG_IGN);
        struct rlimit low = { 4096, old.rlim_max };
        setrlimit(RLIMIT_FSIZE, &low);
    }
    stream_append_rows(t, rank, 1000, 1010, 10); /* 80 bytes: they wait */
    int rc = cf_mpi_stream_flush(s, &err);
    if (rank == bad) {
        setrlimit(RLIMIT_FSIZE, &old);
        signal(SIGXFSZ, prev);
    }
    CHECK_EQ_INT(rc, CF_EIO);
    CHECK_AGREED(rc, &err);
    char want[32];
    snprintf(want, sizeof want, "rank %d: ", bad);
    CHECK(strncmp(err.message, want, strlen(want)) == 0);
    cf_mpi_stream_discard(s);
    MPI_Barrier(MPI_COMM_WORLD);
    /* the first commit, and no temporary table left */
    int64_t rows[64];
    for (int r = 0; r < size && r < 64; r++) rows[r] = 1000;
    if (size <= 64) stream_check_rows(f, name, size, rows, 1);
    char path[4300];
    snprintf(path, sizeof path, "%s/f/%s", cf_test_dir(), name);
    char cmd[4400];
    snprintf(cmd, sizeof cmd, "ls -a '%s' | grep -c tmp > /dev/null", path);
    if (rank == 0) CHECK(system(cmd) != 0); /* grep found none */
    cf_file_close(f);
}

/* One file for all (the last rank writes every rank's table lines, its
 * own failed), and one file per rank. */
static void test_commit_fails_every_rank(void)
{
    commit_fails(1, "one");
    commit_fails(cf_test_size(), "each");
}

CF_MPI_TESTS(CF_TEST(test_commit_fails_every_rank))
