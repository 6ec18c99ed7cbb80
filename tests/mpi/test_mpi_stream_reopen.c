/* test_mpi_stream_reopen.c - the collective reopen of a stream reads its
 * table in slices (colfile_mpi.h, colfile_stream.h "a reopen in slices"):
 * each rank reads a share of the table (its range and the rest of its last
 * task's lines, rank 0 also the head and checksum lines), never the whole,
 * and the appends that follow give the bytes a serial writer that reopens
 * gives, for uneven, empty and growing tasks, typed and raw.  A stream of
 * another task count is refused naming it; a damaged table fails every
 * rank alike, without a hang. */
#include "mpi_harness.h"

enum { NMEMB = 3 };

/* Rows of task r at step k: task 1 none, the others uneven and growing. */
static int64_t rows_of(int64_t r, int k)
{
    return r % 4 == 1 ? 0 : (1500 * (r % 4) + 1200 + 31 * r) * (k + 1);
}

static void append_rows(cf_stream_task *t, int raw, int64_t r, int64_t from, int64_t to)
{
    cf_error err;
    static double buf[512 * NMEMB];
    for (int64_t at = from, step = 1; at < to; step = step < 512 ? step * 2 : step) {
        int64_t n = to - at < step ? to - at : step;
        for (int64_t i = 0; i < n * NMEMB; i++) buf[i] = (double)r * 1e6 + (double)(at * NMEMB + i) * 0.5;
        /* a raw stream takes the same bytes */
        CHECK_OK(cf_stream_append(t, buf, raw ? n * NMEMB * 8 : n, &err), &err);
        at += n;
    }
}

/* Rank 0 alone writes `name` for `tasks` tasks: steps 0 and 1, each committed. */
static void write_serial(cf_file *f, const char *name, int64_t tasks, int64_t files, int raw)
{
    cf_error err;
    cf_stream_layout l;
    cf_stream_writer *w = NULL;
    /* small chunks: many statistics lines, a table of some 200 KB */
    CHECK_OK(cf_stream_layout_choose(&l, f, tasks, files, 512, 512, &err), &err);
    CHECK_OK(cf_stream_create(&w, f, name, raw ? "raw" : "<f8", raw ? 1 : NMEMB, &l, &err), &err);
    cf_stream_task *t;
    for (int64_t r = 0; r < tasks; r++) {
        CHECK_OK(cf_stream_task_open(&t, w, r, &err), &err);
        append_rows(t, raw, r, 0, rows_of(r, 0));
    }
    CHECK_OK(cf_stream_flush(w, &err), &err);
    cf_stream_discard(w);
    CHECK_OK(cf_stream_reopen(&w, f, name, &err), &err);
    for (int64_t r = 0; r < tasks; r++) {
        CHECK_OK(cf_stream_task_open(&t, w, r, &err), &err);
        append_rows(t, raw, r, rows_of(r, 0), rows_of(r, 1));
    }
    CHECK_OK(cf_stream_close(w, &err), &err);
}

/* Bytes of the longest task's lines (its task line and statistics lines). */
static int64_t longest_task_lines(const char *table, size_t len)
{
    int64_t best = 0, start = -1;
    for (size_t i = 1; i <= len; i++) {
        int starts = i == len || (table[i - 1] == '\n' && ((table[i] >= '0' && table[i] <= '9') || table[i] == 'C'));
        if (!starts) continue;
        if (start >= 0 && (int64_t)i - start > best) best = (int64_t)i - start;
        start = i < len && table[i] != 'C' ? (int64_t)i : -1;
    }
    return best;
}

static int same_file(const char *a, const char *b)
{
    size_t la = 0, lb = 0;
    char *x = cf_test_slurp(cf_test_dir(), a, &la), *y = cf_test_slurp(cf_test_dir(), b, &lb);
    int same = x && y && la == lb && memcmp(x, y, la) == 0;
    if (!same) fprintf(stderr, "%s and %s differ (%zu and %zu bytes)\n", a, b, la, lb);
    free(x);
    free(y);
    return same;
}

static void reopen_and_append(int raw)
{
    cf_error err;
    char path[4200];
    snprintf(path, sizeof path, "%s/f", cf_test_dir());
    cf_file *f = NULL;
    CHECK_OK(cf_mpi_file_open(&f, MPI_COMM_WORLD, path, CF_OPEN_WRITE | CF_OPEN_CREATE, &err), &err);
    int rank = cf_test_rank(), size = cf_test_size();
    int64_t files = size; /* one reader per physical file: each reads a quarter under 4 ranks */
    if (rank == 0) {
        write_serial(f, "par", size, files, raw);
        write_serial(f, "ser", size, files, raw);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    size_t tlen = 0;
    char *before = rank == 0 ? cf_test_slurp(cf_test_dir(), "f/par/colfile-stream-v1", &tlen) : NULL;
    int64_t whole = (int64_t)tlen, longest = before ? longest_task_lines(before, tlen) : 0;
    free(before);
    MPI_Bcast(&whole, 1, MPI_INT64_T, 0, MPI_COMM_WORLD);
    MPI_Bcast(&longest, 1, MPI_INT64_T, 0, MPI_COMM_WORLD);

    cf_mpi_stream *s = NULL;
    int rc = cf_mpi_stream_reopen(&s, f, MPI_COMM_WORLD, "par", &err);
    CHECK_AGREED(rc, &err);
    CHECK_OK(rc, &err);
    if (rc) {
        cf_file_close(f);
        return;
    }
    /* what this rank read of the table: its range of a table split over
     * `files` readers and the rest of its last task's lines (read on in
     * pieces of a quarter of what it read beyond its range, at least 4096
     * bytes); rank 0 also the head lines (twice: before and after it takes
     * the lock) and the checksum line */
    int64_t read = cf_mpi_stream_table_bytes(s);
    int64_t bound = whole / files + 2 + longest + longest / 4 + 4096 + (rank == 0 ? 2 * 256 + 2 * 18 : 0);
    if (read > bound || (size == 4 && !raw && read >= whole * 3 / 4)) {
        fprintf(stderr, "rank %d read %lld bytes of a %lld-byte table (bound %lld)\n", rank, (long long)read,
                (long long)whole, (long long)bound);
        CHECK(0);
    }
    CHECK(read > 0); /* every rank here reads a range: one reader per file */
    int64_t total = 0;
    MPI_Allreduce(&read, &total, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        if (size > 1) CHECK(total < whole + size * (2 * longest + 4096) + 4096 + 18);
        printf("  %s: a %lld-byte table, longest task lines %lld bytes; %d ranks read %lld bytes in all\n",
               raw ? "raw" : "typed", (long long)whole, (long long)longest, size, (long long)total);
    }
    CHECK(cf_stream_task_rows(cf_mpi_stream_task(s)) == rows_of(rank, 1) * (raw ? NMEMB * 8 : 1));
    append_rows(cf_mpi_stream_task(s), raw, rank, rows_of(rank, 1), rows_of(rank, 2));
    CHECK_OK(cf_mpi_stream_flush(s, &err), &err);
    append_rows(cf_mpi_stream_task(s), raw, rank, rows_of(rank, 2), rows_of(rank, 3));
    CHECK_OK(cf_mpi_stream_close(s, &err), &err);
    if (rank == 0) {
        cf_stream_writer *w = NULL;
        cf_stream_task *t;
        for (int k = 2; k <= 3; k++) {
            CHECK_OK(cf_stream_reopen(&w, f, "ser", &err), &err);
            for (int64_t r = 0; r < size; r++) {
                CHECK_OK(cf_stream_task_open(&t, w, r, &err), &err);
                append_rows(t, raw, r, rows_of(r, k - 1), rows_of(r, k));
            }
            CHECK_OK(cf_stream_close(w, &err), &err);
        }
        CHECK(same_file("f/par/colfile-stream-v1", "f/ser/colfile-stream-v1"));
        for (int64_t i = 0; i < files; i++) {
            char a[64], b[64];
            snprintf(a, sizeof a, "f/par/colfile-stream-data-%06llX", (long long)i);
            snprintf(b, sizeof b, "f/ser/colfile-stream-data-%06llX", (long long)i);
            CHECK(same_file(a, b));
        }
        /* the data: every task's rows, as appended */
        cf_stream_reader *r = NULL;
        CHECK_OK(cf_stream_open(&r, f, "par", &err), &err);
        if (r) {
            cf_stream_set_verify(r, 1);
            for (int64_t task = 0; task < size; task++) {
                int64_t n = cf_stream_task_size(r, task), want = rows_of(task, 3) * (raw ? NMEMB * 8 : 1);
                CHECK(n == want);
                int64_t rb = cf_stream_row_bytes(r);
                double *got = malloc((size_t)(n * rb) + 8);
                CHECK_OK(cf_stream_read_task(r, task, 0, n, got, &err), &err);
                for (int64_t i = 0; got && i < n * rb / 8; i++)
                    if (got[i] != (double)task * 1e6 + (double)i * 0.5) {
                        CHECK(0);
                        break;
                    }
                free(got);
            }
        }
        cf_stream_reader_close(r);
    }
    cf_file_close(f);
}

static void test_reopen_typed(void)
{
    reopen_and_append(0);
}

static void test_reopen_raw(void)
{
    reopen_and_append(1);
}

/* Appends need as many ranks as the stream has tasks: refused, naming it. */
static void test_other_task_count(void)
{
    cf_error err;
    char path[4200];
    snprintf(path, sizeof path, "%s/f", cf_test_dir());
    cf_file *f = NULL;
    CHECK_OK(cf_mpi_file_open(&f, MPI_COMM_WORLD, path, CF_OPEN_WRITE | CF_OPEN_CREATE, &err), &err);
    int size = cf_test_size(), tasks = size == 4 ? 3 : 4;
    if (cf_test_rank() == 0) write_serial(f, "other", tasks, 2, 0);
    MPI_Barrier(MPI_COMM_WORLD);
    cf_mpi_stream *s = NULL;
    int rc = cf_mpi_stream_reopen(&s, f, MPI_COMM_WORLD, "other", &err);
    CHECK_AGREED(rc, &err);
    CHECK_EQ_INT(rc, CF_EARG);
    char want[4300];
    snprintf(want, sizeof want, "%s/other: a stream of %d tasks, reopened by %d ranks", path, tasks, size);
    CHECK(strstr(err.message, want) != NULL);
    /* the lock went with the failed reopen: a serial reopen takes it */
    if (cf_test_rank() == 0) {
        cf_stream_writer *w = NULL;
        CHECK_OK(cf_stream_reopen(&w, f, "other", &err), &err);
        cf_stream_discard(w);
    }
    cf_file_close(f);
}

/* Rank 0 changes byte `at` (from the end when negative) of name's table
 * to c, or cuts the table there when c is 0. */
static void damage(const char *name, int64_t at, char c)
{
    char path[4300];
    snprintf(path, sizeof path, "%s/f/%s/colfile-stream-v1", cf_test_dir(), name);
    FILE *fp = fopen(path, "r+b");
    CHECK(fp != NULL);
    if (!fp) return;
    fseek(fp, 0, SEEK_END);
    long len = ftell(fp);
    long pos = at < 0 ? len + (long)at : (long)at;
    if (c) {
        fseek(fp, pos, SEEK_SET);
        int old = fgetc(fp);
        fseek(fp, pos, SEEK_SET);
        fputc(old == c ? c + 1 : c, fp);
        fclose(fp);
    } else {
        fclose(fp);
        CHECK(truncate(path, pos) == 0);
    }
}

static void test_damaged_table(void)
{
    cf_error err;
    char path[4200];
    snprintf(path, sizeof path, "%s/f", cf_test_dir());
    cf_file *f = NULL;
    CHECK_OK(cf_mpi_file_open(&f, MPI_COMM_WORLD, path, CF_OPEN_WRITE | CF_OPEN_CREATE, &err), &err);
    int size = cf_test_size();
    /* a CRC digit in the last task's lines; a table cut short; a task line
     * made a statistics line */
    const char *names[3] = { "crc", "cut", "gone" };
    for (int i = 0; i < 3; i++) {
        if (cf_test_rank() == 0) {
            write_serial(f, names[i], size, size, 0);
            if (i == 0) damage(names[i], -30 - 17, 'f');
            if (i == 1) damage(names[i], -100, 0);
            if (i == 2) {
                size_t len = 0;
                char *t = cf_test_slurp(cf_test_dir(), "f/gone/colfile-stream-v1", &len);
                char *line = t ? strstr(t, "\n0 ") : NULL; /* task 0's line */
                CHECK(line != NULL);
                if (line) damage(names[i], (int64_t)(line + 1 - t), 'S');
                free(t);
            }
        }
        MPI_Barrier(MPI_COMM_WORLD);
        cf_mpi_stream *s = NULL;
        int rc = cf_mpi_stream_reopen(&s, f, MPI_COMM_WORLD, names[i], &err);
        CHECK_AGREED(rc, &err);
        CHECK_EQ_INT(rc, CF_EFORMAT);
        CHECK(strstr(err.message, "colfile-stream-v1") != NULL);
        if (rc == 0) cf_mpi_stream_discard(s);
    }
    cf_file_close(f);
}

CF_MPI_TESTS(CF_TEST(test_reopen_typed), CF_TEST(test_reopen_raw), CF_TEST(test_other_task_count),
             CF_TEST(test_damaged_table))
