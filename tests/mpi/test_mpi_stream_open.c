/* test_mpi_stream_open.c - the collective open of a stream for reading
 * (cf_mpi_stream_open) reads its table in slices: every rank's reads of
 * the global view (its share, slices across task boundaries, chunks and
 * their statistics) equal a whole-table reader's, for uneven, empty and
 * growing tasks and more tasks than ranks; a rank reads the head and
 * checksum lines, its slice if it is a reader, and the lines of the tasks
 * it reads, never the whole table (1 rank aside); a damaged table fails
 * every rank alike, without a hang. */
#include "mpi_harness.h"

enum { NMEMB = 2 };

static int64_t rows_of(int64_t t, int k)
{
    return t % 3 == 1 ? 0 : (700 * (t % 5) + 90 + 13 * t) * (k + 1);
}

/* Rank 0 alone writes `name` for `tasks` tasks in two commits (growing). */
static void write_serial(cf_file *f, const char *name, int64_t tasks)
{
    cf_error err;
    cf_stream_layout l;
    cf_stream_writer *w = NULL;
    cf_stream_task *t;
    static double buf[2 * 3000 * NMEMB];
    CHECK_OK(cf_stream_layout_choose(&l, f, tasks, 2, 512, 512, &err), &err);
    for (int k = 0; k < 2; k++) {
        if (k == 0) CHECK_OK(cf_stream_create(&w, f, name, "<f8", NMEMB, &l, &err), &err);
        else CHECK_OK(cf_stream_reopen(&w, f, name, &err), &err);
        if (!w) return;
        for (int64_t r = 0; r < tasks; r++) {
            int64_t from = k ? rows_of(r, 0) : 0, to = rows_of(r, k);
            for (int64_t i = 0; i < (to - from) * NMEMB; i++) buf[i] = (double)r * 1e6 + (double)(from * NMEMB + i);
            CHECK_OK(cf_stream_task_open(&t, w, r, &err), &err);
            CHECK_OK(cf_stream_append(t, buf, to - from, &err), &err);
        }
        CHECK_OK(cf_stream_close(w, &err), &err);
    }
}

static void test_open_in_slices(void)
{
    cf_error err;
    char path[4200];
    snprintf(path, sizeof path, "%s/f", cf_test_dir());
    cf_file *f = NULL;
    CHECK_OK(cf_mpi_file_open(&f, MPI_COMM_WORLD, path, CF_OPEN_WRITE | CF_OPEN_CREATE, &err), &err);
    if (!f) return;
    int me = cf_test_rank(), size = cf_test_size();
    int64_t tasks = 2 * size + 1;
    if (me == 0) write_serial(f, "s", tasks);
    MPI_Barrier(MPI_COMM_WORLD);
    size_t tlen = 0;
    char *table = cf_test_slurp(cf_test_dir(), "f/s/colfile-stream-v1", &tlen);
    cf_stream_reader *whole = NULL, *r = NULL;
    CHECK_OK(cf_stream_open(&whole, f, "s", &err), &err);
    int rc = cf_mpi_stream_open(&r, f, MPI_COMM_WORLD, "s", &err);
    CHECK_AGREED(rc, &err);
    if (rc || !whole || !table) return;
    int64_t opened = cf_stream_reader_table_bytes(r), rows = cf_stream_size(whole);
    CHECK_EQ_INT(cf_stream_size(r), rows);
    /* the readers: one per physical file (2) at most as many as ranks; ranks j * size / readers */
    int readers = size < 2 ? size : 2, reader = 0;
    for (int j = 0; j < readers; j++) reader |= j * size / readers == me;
    if (!reader) CHECK(opened <= 256 + 18);
    /* a reader: its range and the rest of its last task's lines, read in growing pieces */
    int64_t longest = 0, last = -1;
    for (size_t i = 1; i + 17 < tlen; i++)
        if (table[i - 1] == '\n' && table[i] >= '0' && table[i] <= '9') {
            if (last >= 0 && (int64_t)i - last > longest) longest = (int64_t)i - last;
            last = (int64_t)i;
        }
    if ((int64_t)tlen - 17 - last > longest) longest = (int64_t)tlen - 17 - last;
    if (reader) CHECK(opened <= 256 + 18 + (int64_t)tlen / readers + 1 + longest * 5 / 4 + 4096);
    /* this rank's share, crossing task boundaries */
    int64_t first = rows * me / size, n = rows * (me + 1) / size - first;
    double *a = malloc((size_t)(n + 2) * NMEMB * 8), *b = malloc((size_t)(n + 2) * NMEMB * 8);
    CHECK_OK(cf_stream_read(r, first, n, a, &err), &err);
    CHECK_OK(cf_stream_read(whole, first, n, b, &err), &err);
    CHECK(memcmp(a, b, (size_t)n * NMEMB * 8) == 0);
    if (!reader && size > 1) CHECK(cf_stream_reader_table_bytes(r) < (int64_t)tlen);
    for (int64_t t = 0; t < tasks; t++) {
        CHECK_EQ_INT(cf_stream_task_size(r, t), rows_of(t, 1));
        CHECK_EQ_INT(cf_stream_task_start(r, t), cf_stream_task_start(whole, t));
        int64_t at = cf_stream_task_start(r, t) - 1;
        if (at >= 0 && at + 2 <= rows) { /* the last row of a task and the next's first */
            CHECK_OK(cf_stream_read(r, at, 2, a, &err), &err);
            CHECK_OK(cf_stream_read(whole, at, 2, b, &err), &err);
            CHECK(memcmp(a, b, 2 * NMEMB * 8) == 0);
        }
        if (rows_of(t, 1) > 0) {
            cf_chunk_stats s1, s2;
            uint32_t c1 = 0, c2 = 1;
            CHECK_OK(cf_stream_chunk(r, t, 0, NULL, NULL, NULL, &c1, &err), &err);
            CHECK_OK(cf_stream_chunk(whole, t, 0, NULL, NULL, NULL, &c2, &err), &err);
            CHECK_EQ_INT(c1, c2);
            CHECK_OK(cf_stream_chunk_stats(r, t, 0, 1, &s1, &err), &err);
            CHECK_OK(cf_stream_chunk_stats(whole, t, 0, 1, &s2, &err), &err);
            CHECK(memcmp(&s1, &s2, sizeof s1) == 0);
        }
    }
    free(a);
    free(b);
    free(table);
    cf_stream_reader_close(r);
    cf_stream_reader_close(whole);
    cf_file_close(f);
}

static void test_damaged_table(void)
{
    cf_error err;
    char path[4200], table[4300];
    snprintf(path, sizeof path, "%s/f", cf_test_dir());
    snprintf(table, sizeof table, "%s/f/s/colfile-stream-v1", cf_test_dir());
    cf_file *f = NULL;
    CHECK_OK(cf_mpi_file_open(&f, MPI_COMM_WORLD, path, CF_OPEN_WRITE | CF_OPEN_CREATE, &err), &err);
    if (!f) return;
    int size = cf_test_size();
    /* a CRC digit of the last task's; a table cut short; task 0's line made a statistics line */
    for (int i = 0; i < 3; i++) {
        if (cf_test_rank() == 0) {
            write_serial(f, "s", 2 * size + 1);
            size_t len = 0;
            char *t = cf_test_slurp(cf_test_dir(), "f/s/colfile-stream-v1", &len);
            FILE *fp = fopen(table, "r+b");
            CHECK(t && fp);
            if (t && fp) {
                long pos = i == 0 ? (long)len - 17 - 30 : (long)(strstr(t, "\n0 ") + 1 - t);
                if (i == 1) {
                    fclose(fp);
                    fp = NULL;
                    CHECK(truncate(table, (off_t)len - 100) == 0);
                } else {
                    fseek(fp, pos, SEEK_SET);
                    fputc(i == 0 ? (t[pos] == 'f' ? 'e' : 'f') : 'S', fp);
                }
            }
            if (fp) fclose(fp);
            free(t);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        cf_stream_reader *r = NULL;
        int rc = cf_mpi_stream_open(&r, f, MPI_COMM_WORLD, "s", &err);
        CHECK_AGREED(rc, &err);
        CHECK_EQ_INT(rc, CF_EFORMAT);
        CHECK(strstr(err.message, "colfile-stream-v1") != NULL);
        if (rc == 0) cf_stream_reader_close(r);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    cf_file_close(f);
}

CF_MPI_TESTS(CF_TEST(test_open_in_slices), CF_TEST(test_damaged_table))
