/* test_mpi_stream_collectives.c - how many blocking collectives a stream's
 * create, flush and close make (collective_counter.h counts them on every
 * rank): each is a wait for the slowest rank.  The appends make none.  The
 * build with tiny message sizes (CF_MPI_TINY_BUILD) splits broadcasts on
 * purpose: it runs the same calls without the bounds. */
#include "mpi_harness.h"
#include "collective_counter.h"
#include "stream_rows.h"

#ifdef CF_MPI_TINY_BUILD
#define AT_MOST(n, bound) ((void)(n), (void)(bound))
#else
#define AT_MOST(n, bound) CHECK((n) <= (bound))
#endif

/* Create (files given, or the default), append, flush twice, close: the
 * counts, and the rows that every rank reads back. */
static void stream_counts(cf_file *f, const char *name, int64_t files)
{
    cf_error err;
    cf_mpi_stream *s = NULL;
    int rank = cf_test_rank(), size = cf_test_size();
    long n_create, n_append, n_flush, n_close;
    char what[80];
    COUNT(n_create, CHECK_OK(cf_mpi_stream_create(&s, f, cf_test_comm(), name, "<i8", 1, files, 4096, 4096, &err),
                             &err));
    snprintf(what, sizeof what, "cf_mpi_stream_create (files %lld)", (long long)files);
    report(what, n_create);
    if (!s) return;
    cf_stream_task *t = cf_mpi_stream_task(s);
    COUNT(n_append, stream_append_rows(t, rank, 0, 700 + 300 * rank, 0));
    report("cf_stream_append (all of a rank's)", n_append);
    COUNT(n_flush, CHECK_OK(cf_mpi_stream_flush(s, &err), &err));
    report("cf_mpi_stream_flush", n_flush);
    stream_append_rows(t, rank, 700 + 300 * rank, 1000 + 300 * rank, 100);
    COUNT(n_close, CHECK_OK(cf_mpi_stream_close(s, &err), &err));
    report("cf_mpi_stream_close", n_close);
    /* the create: the argument check, the communicator's duplicate, rank
     * 0's layout and directory, the tasks' opening agreed (these were 5
     * with files given, 6 and a split among each node's ranks without,
     * when the nodes were counted whether or not the layout needed them);
     * a flush: the offsets of the ranks' lines, the temporary table's
     * path, the writes' result with the lines' length and CRC32C, the
     * commit's result (these were 6) */
    CHECK_EQ_INT(n_append, 0);
    AT_MOST(n_create, 4);
    AT_MOST(n_flush, 4);
    AT_MOST(n_close, 4);
    int64_t rows[64];
    for (int r = 0; r < size && r < 64; r++) rows[r] = 1000 + 300 * r;
    if (size <= 64) stream_check_rows(f, name, size, rows, 1);
}

static void test_stream_collectives(void)
{
    cf_file *f = cf_test_mpi_file();
    if (!f) return;
    stream_counts(f, "given", cf_test_size() > 1 ? 2 : 1);
    stream_counts(f, "default", 0);
    cf_file_close(f);
}

CF_MPI_TESTS(CF_TEST(test_stream_collectives))
