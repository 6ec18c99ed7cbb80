/* test_stream_read_slice.c - a stream opened for reading in slices by one
 * process playing every rank (colfile_stream.h, "an open in slices"):
 * however the task lines are split among readers, every reader's global
 * view, tasks, chunks and statistics equal a whole-table reader's; a
 * reader reads only the head and checksum lines, its slice and the lines
 * of the tasks it reads; a damaged table is refused by the check, a table
 * replaced by a commit in between by the joining reader. */
#include "harness.h"
#include "colfile_stream.h"
#include "stream_rows.h"
#include "stream_table_file.h"

enum { TASKS = 7, RANKS = 4 };
static const int64_t sizes[TASKS] = { 900, 0, 2500, 37, 0, 1800, 5 };

static void make(cf_file *f, const char *name, int rounds)
{
    stream_make_pairs(f, name, TASKS, sizes, rounds);
}

/* RANKS readers of stream `name` opened in slices by `nreaders` of them;
 * 0, or the code the first failing step returned (message in err). */
static int open_all(cf_file *f, const char *name, int64_t nreaders, cf_stream_reader *r[RANKS], cf_error *err)
{
    const char *head = NULL;
    int64_t hlen = 0, tlen = 0;
    memset(r, 0, RANKS * sizeof *r);
    int rc = cf_stream_open_head(&r[0], f, name, &head, &hlen, &tlen, err);
    for (int k = 1; rc == 0 && k < RANKS; k++) rc = cf_stream_join_reader(&r[k], f, name, head, hlen, tlen, err);
    int64_t end = tlen - 17, body = end - hlen, total = 0, next = 0, at = 0;
    int64_t all_bytes[TASKS], all_at[TASKS + 1];
    uint32_t crc = 0;
    for (int64_t j = 0; rc == 0 && j < nreaders; j++) {
        int64_t lo = hlen + j * body / nreaders, hi = hlen + (j + 1) * body / nreaders, first = 0, n = 0;
        int64_t *lines = NULL, *bytes = NULL;
        uint32_t c = 0;
        rc = cf_stream_reader_slice(r[j * RANKS / nreaders], lo, hi, &first, &n, &lines, &bytes, &c, err);
        if (rc) break;
        crc = cf_stream_crc32c_join(crc, c, hi - lo);
        total += hi - lo;
        if (n > 0 && next >= 0) next = first == next ? next + n : -1;
        for (int64_t i = 0; i < n && at < TASKS; i++, at++) {
            all_bytes[at] = bytes[i];
            all_at[at] = lines[i];
        }
        cf_free(lines);
        cf_free(bytes);
    }
    if (rc == 0) rc = cf_stream_reader_slices_check(r[0], total, crc, next, err);
    all_at[TASKS] = end;
    for (int k = 0; rc == 0 && k < RANKS; k++) rc = cf_stream_reader_index(r[k], all_bytes, all_at, err);
    if (rc)
        for (int k = 0; k < RANKS; k++) cf_stream_reader_close(r[k]), r[k] = NULL;
    return rc;
}

static void test_slices_read_as_the_whole(void)
{
    cf_error err;
    cf_file *f = cf_test_open_new("f");
    make(f, "s", 2);
    size_t tlen = 0;
    char *table = cf_test_slurp(cf_test_dir(), "f/s/colfile-stream-v1", &tlen);
    cf_stream_reader *whole = NULL;
    CHECK_OK(cf_stream_open(&whole, f, "s", &err), &err);
    if (!whole || !table) return;
    CHECK_EQ_INT(cf_stream_reader_table_bytes(whole), (int64_t)tlen);
    int64_t size = cf_stream_size(whole), longest = 0, line_at[TASKS + 1], nt = 0;
    for (size_t i = 1; i + 17 < tlen && nt < TASKS; i++) /* where each task's lines start */
        if (table[i - 1] == '\n' && table[i] >= '0' && table[i] <= '9') line_at[nt++] = (int64_t)i;
    CHECK_EQ_INT(nt, TASKS);
    line_at[TASKS] = (int64_t)tlen - 17;
    for (int t = 0; t < TASKS; t++)
        if (line_at[t + 1] - line_at[t] > longest) longest = line_at[t + 1] - line_at[t];
    double *a = malloc((size_t)size * 16 + 16), *b = malloc((size_t)size * 16 + 16);
    for (int64_t nreaders = 1; nreaders <= RANKS; nreaders++) {
        cf_stream_reader *r[RANKS];
        CHECK_OK(open_all(f, "s", nreaders, r, &err), &err);
        if (!r[0]) break;
        for (int k = 0; k < RANKS; k++) {
            CHECK_EQ_INT(cf_stream_size(r[k]), size);
            int reader = 0;
            for (int64_t j = 0; j < nreaders; j++) reader |= j * RANKS / nreaders == k;
            int64_t opened = cf_stream_reader_table_bytes(r[k]);
            /* the head lines (read in one first piece) and the checksum line, and a reader's slice
             * with the rest of its last task's lines */
            CHECK(opened <= 256 + 18 + (reader ? (int64_t)tlen / nreaders + 1 + longest * 5 / 4 + 4096 : 0));
            /* rank k's share of the global view, across task boundaries */
            int64_t first = size * k / RANKS, n = size * (k + 1) / RANKS - first;
            CHECK_OK(cf_stream_read(r[k], first, n, a, &err), &err);
            CHECK_OK(cf_stream_read(whole, first, n, b, &err), &err);
            CHECK(memcmp(a, b, (size_t)n * 16) == 0);
            /* and then only the lines of the tasks that share holds rows of */
            int64_t more = 0;
            for (int64_t t = 0; t < TASKS; t++)
                if (sizes[t] && cf_stream_task_start(whole, t) < first + n &&
                    cf_stream_task_start(whole, t) + 2 * sizes[t] > first)
                    more += line_at[t + 1] - line_at[t];
            CHECK(cf_stream_reader_table_bytes(r[k]) - opened <= more);
            if (!reader) CHECK(cf_stream_reader_table_bytes(r[k]) < (int64_t)tlen);
            for (int64_t t = 0; t < TASKS; t++) {
                CHECK_EQ_INT(cf_stream_task_start(r[k], t), cf_stream_task_start(whole, t));
                CHECK_EQ_INT(cf_stream_task_size(r[k], t), 2 * sizes[t]);
                for (int64_t c = 0; c < (2 * sizes[t] * 16 + 511) / 512; c++) {
                    int64_t f1, o1, n1, f2, o2, n2;
                    uint32_t c1, c2;
                    cf_chunk_stats s1, s2;
                    CHECK_OK(cf_stream_chunk(r[k], t, c, &f1, &o1, &n1, &c1, &err), &err);
                    CHECK_OK(cf_stream_chunk(whole, t, c, &f2, &o2, &n2, &c2, &err), &err);
                    CHECK(f1 == f2 && o1 == o2 && n1 == n2 && c1 == c2);
                    CHECK_OK(cf_stream_chunk_stats(r[k], t, c, 1, &s1, &err), &err);
                    CHECK_OK(cf_stream_chunk_stats(whole, t, c, 1, &s2, &err), &err);
                    CHECK(memcmp(&s1, &s2, sizeof s1) == 0);
                }
            }
            /* every task's lines at most once more */
            CHECK(cf_stream_reader_table_bytes(r[k]) <= opened + (int64_t)tlen);
            cf_stream_reader_close(r[k]);
        }
    }
    free(a);
    free(b);
    free(table);
    cf_stream_reader_close(whole);
    cf_file_close(f);
}

static void test_damaged_or_replaced(void)
{
    cf_error err;
    cf_file *f = cf_test_open_new("f");
    make(f, "s", 1);
    stream_table_file table;
    stream_table_read(&table, "f", "s");
    char *line5 = stream_table_line(&table, 5);
    if (!line5) return;
    /* a CRC digit of task 5's first chunk changed: lines as written, a checksum line that does not match */
    char *digit = strchr(strchr(line5 + 1, ' ') + 1, ' ') + 1;
    if (stream_table_poke(&table, digit, *digit == '0' ? '1' : '0')) return;
    cf_stream_reader *r[RANKS];
    for (int64_t n = 1; n <= RANKS; n++)
        CHECK_FAILS(open_all(f, "s", n, r, &err), CF_EFORMAT, &err, "checksum line does not match");
    /* task 5's line numbered 6: refused by the reader of its range */
    stream_table_poke(&table, line5 + 1, '6');
    for (int64_t n = 1; n <= RANKS; n++) {
        CHECK_FAILS(open_all(f, "s", n, r, &err), CF_EFORMAT, &err, "colfile-stream-v1");
    }
    stream_table_poke(&table, NULL, 0);
    /* a commit between the owner's read and another reader's */
    const char *head = NULL;
    int64_t hlen = 0, size = 0;
    cf_stream_reader *owner = NULL, *late = NULL;
    CHECK_OK(cf_stream_open_head(&owner, f, "s", &head, &hlen, &size, &err), &err);
    make(f, "s", 2);
    if (owner)
        CHECK_FAILS(cf_stream_join_reader(&late, f, "s", head, hlen, size, &err), CF_EREPLACED, &err,
                    "replaced by a commit");
    cf_stream_reader_close(owner);
    free(table.text);
    cf_file_close(f);
}

CF_TESTS(CF_TEST(test_slices_read_as_the_whole), CF_TEST(test_damaged_or_replaced))
