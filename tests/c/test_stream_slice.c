/* test_stream_slice.c - a committed table read in slices by one process
 * (colfile_stream.h, "a reopen in slices"): the owner reads the head and
 * checksum lines only; however the task lines are split into ranges, the
 * ranges give every task's lines once, in order, byte for byte those of
 * the table, and their CRC32Cs joined seal it; a task resumed from its
 * lines continues as after a whole-table reopen; damaged lines, a wrong
 * CRC32C or a missing task are refused naming the table. */
#include "harness.h"
#include "colfile_stream.h"
#include "stream_rows.h"
#include "stream_table_file.h"

enum { TASKS = 5 };
static const int64_t sizes[TASKS] = { 900, 0, 2500, 37, 1800 };

/* Stream `name` of TASKS tasks over 2 files, 512-byte chunks (many
 * statistics lines); the rows [0, sizes) committed, or [0, 2 sizes) after
 * a second round (a reopen) when `twice`. */
static void make(cf_file *f, const char *name, int twice)
{
    stream_make_pairs(f, name, TASKS, sizes, twice ? 2 : 1);
}

static void test_slices_give_the_table(void)
{
    cf_error err;
    cf_file *f = cf_test_open_new("f");
    make(f, "s", 0);
    size_t tlen = 0;
    char *table = cf_test_slurp(cf_test_dir(), "f/s/colfile-stream-v1", &tlen);
    CHECK(table != NULL);
    cf_stream_writer *w = NULL, *j = NULL;
    char *head = NULL;
    int64_t hlen = 0, size = 0;
    CHECK_OK(cf_stream_reopen_head(&w, f, "s", &head, &hlen, &size, &err), &err);
    if (!w || !table) return;
    CHECK_EQ_INT(size, (int64_t)tlen);
    CHECK(hlen > 0 && memcmp(head, table, (size_t)hlen) == 0 && strncmp(table + hlen, "0 ", 2) == 0);
    /* the head lines twice (before and after the lock) and the checksum line */
    CHECK(cf_stream_writer_table_bytes(w) <= 2 * hlen + 2 * 18 + 2 * 256);
    CHECK(cf_stream_writer_table_bytes(w) < size / 4);
    char dir[4300];
    snprintf(dir, sizeof dir, "%s/f/s", cf_test_dir());
    CHECK_OK(cf_stream_join_head(&j, f, "s", dir, head, hlen, &err), &err);
    int64_t end = size - 17, body = end - hlen;
    for (int64_t readers = 1; j && readers <= 9; readers++) {
        char *joined = malloc((size_t)body + 1);
        int64_t at = 0, next = 0, total = 0;
        uint32_t crc = 0;
        for (int64_t k = 0; k < readers; k++) {
            int64_t lo = hlen + k * body / readers, hi = hlen + (k + 1) * body / readers;
            char *text = NULL;
            int64_t len = 0, *ends = NULL, first = 0, n = 0;
            uint32_t c = 0;
            CHECK_OK(cf_stream_table_slice(j, lo, hi, end, &text, &len, &ends, &first, &n, &c, &err), &err);
            if (n > 0) {
                CHECK_EQ_INT(first, next);
                CHECK_EQ_INT(ends[n - 1], len);
                for (int64_t i = 0; i < n; i++) CHECK(text[i ? ends[i - 1] : 0] == (char)('0' + first + i));
                CHECK(at + len <= body);
                if (at + len <= body) memcpy(joined + at, text, (size_t)len);
                at += len;
                next += n;
            }
            crc = cf_stream_crc32c_join(crc, c, hi - lo);
            total += hi - lo;
            cf_free(text);
            cf_free(ends);
        }
        CHECK_EQ_INT(next, TASKS);
        CHECK(at == body && memcmp(joined, table + hlen, (size_t)body) == 0);
        CHECK_OK(cf_stream_slices_check(w, total, crc, next, &err), &err);
        CHECK_FAILS(cf_stream_slices_check(w, total, crc ^ 1, next, &err), CF_EFORMAT, &err,
                    "colfile-stream-v1: the checksum line does not match");
        CHECK_FAILS(cf_stream_slices_check(w, total, crc, -1, &err), CF_EFORMAT, &err, "out of order or missing");
        CHECK_FAILS(cf_stream_slices_check(w, total - 1, crc, next, &err), CF_EFORMAT, &err, "checksum line");
        free(joined);
    }
    char *text = NULL;
    int64_t len = 0, *ends = NULL, first = 0, n = 0;
    uint32_t c = 0;
    CHECK_FAILS(cf_stream_table_slice(j, hlen - 1, hlen, end, &text, &len, &ends, &first, &n, &c, &err), CF_EARG,
                &err, "slice");
    cf_free(head);
    free(table);
    cf_stream_discard(j);
    cf_stream_discard(w);
    cf_file_close(f);
}

/* Tasks resumed from their lines continue exactly as after cf_stream_reopen:
 * the same table and data after the same appends. */
static void test_resume_as_reopen(void)
{
    cf_error err;
    cf_file *f = cf_test_open_new("f");
    make(f, "a", 0);
    make(f, "b", 1);
    cf_stream_writer *w = NULL;
    char *head = NULL;
    int64_t hlen = 0, size = 0;
    CHECK_OK(cf_stream_reopen_head(&w, f, "a", &head, &hlen, &size, &err), &err);
    if (!w) return;
    char *text = NULL;
    int64_t len = 0, *ends = NULL, first = 0, n = 0;
    uint32_t c = 0;
    CHECK_OK(cf_stream_table_slice(w, hlen, size - 17, size - 17, &text, &len, &ends, &first, &n, &c, &err), &err);
    CHECK_EQ_INT(n, TASKS);
    CHECK_OK(cf_stream_slices_check(w, size - 17 - hlen, c, n, &err), &err);
    for (int64_t r = 0; r < n && n == TASKS; r++) {
        int64_t at = r ? ends[r - 1] : 0;
        if (r == 2) /* a statistics line short: refused, naming the task */
            CHECK_FAILS(cf_stream_task_resume(w, r, text + at, ends[r] - at - 40, &err), CF_EFORMAT, &err,
                        "task 2's lines");
        if (r + 1 < TASKS) /* another task's lines */
            CHECK_FAILS(cf_stream_task_resume(w, r + 1, text + at, ends[r] - at, &err), CF_EFORMAT, &err,
                        "out of order or missing");
        CHECK_OK(cf_stream_task_resume(w, r, text + at, ends[r] - at, &err), &err);
        cf_stream_task *t = NULL;
        CHECK_OK(cf_stream_task_open(&t, w, r, &err), &err);
        CHECK_EQ_INT(cf_stream_task_rows(t), sizes[r]);
        CHECK_FAILS(cf_stream_task_resume(w, r, text + at, ends[r] - at, &err), CF_EBUSY, &err, "already open");
        stream_append_pairs(t, r, sizes[r], 2 * sizes[r]);
    }
    /* commits in parts only: its table holds no other task */
    CHECK_FAILS(cf_stream_flush(w, &err), CF_EARG, &err, "in parts");
    char *tmp = NULL;
    int64_t at = 0;
    uint32_t crc = 0;
    CHECK_OK(cf_stream_part_begin(w, &tmp, &at, &crc, &err), &err);
    for (int64_t r = 0; r < TASKS && tmp; r++) {
        cf_stream_task *t = NULL;
        CHECK_FAILS(cf_stream_task_open(&t, w, r, &err), CF_EBUSY, &err, NULL);
    }
    cf_stream_part_end(w, tmp, 0, 0, 0, NULL);
    cf_free(tmp);
    cf_stream_discard(w);
    /* the whole commit in parts, task by task */
    cf_free(head);
    CHECK_OK(cf_stream_reopen_head(&w, f, "a", &head, &hlen, &size, &err), &err);
    cf_free(text);
    cf_free(ends);
    CHECK_OK(cf_stream_table_slice(w, hlen, size - 17, size - 17, &text, &len, &ends, &first, &n, &c, &err), &err);
    cf_stream_task *ts[TASKS] = { NULL };
    for (int64_t r = 0; r < TASKS && n == TASKS; r++) {
        int64_t from = r ? ends[r - 1] : 0;
        CHECK_OK(cf_stream_task_resume(w, r, text + from, ends[r] - from, &err), &err);
        CHECK_OK(cf_stream_task_open(&ts[r], w, r, &err), &err);
        stream_append_pairs(ts[r], r, sizes[r], 2 * sizes[r]);
    }
    tmp = NULL;
    CHECK_OK(cf_stream_part_begin(w, &tmp, &at, &crc, &err), &err);
    for (int r = 0; r < TASKS && tmp && ts[r]; r++) {
        char *lines = NULL;
        int64_t ll = 0;
        uint32_t lc = 0;
        CHECK_OK(cf_stream_task_part(ts[r], &lines, &ll, &lc, &err), &err);
        CHECK_OK(cf_stream_part_write(w, tmp, at, lines, ll, r == TASKS - 1, &err), &err);
        crc = cf_stream_crc32c_join(crc, lc, ll);
        at += ll;
        cf_free(lines);
    }
    CHECK_OK(cf_stream_part_end(w, tmp, at, crc, 1, &err), &err);
    cf_free(tmp);
    cf_stream_discard(w);
    cf_free(text);
    cf_free(ends);
    cf_free(head);
    size_t la = 0, lb = 0;
    char *x = cf_test_slurp(cf_test_dir(), "f/a/colfile-stream-v1", &la);
    char *y = cf_test_slurp(cf_test_dir(), "f/b/colfile-stream-v1", &lb);
    CHECK(x && y && la == lb && memcmp(x, y, la) == 0);
    free(x);
    free(y);
    for (int i = 0; i < 2; i++) {
        char a[64], b[64];
        snprintf(a, sizeof a, "f/a/colfile-stream-data-%06X", i);
        snprintf(b, sizeof b, "f/b/colfile-stream-data-%06X", i);
        x = cf_test_slurp(cf_test_dir(), a, &la);
        y = cf_test_slurp(cf_test_dir(), b, &lb);
        CHECK(x && y && la == lb && memcmp(x, y, la) == 0);
        free(x);
        free(y);
    }
    cf_file_close(f);
}

/* A table whose first line after the head is not task 0's, or whose task
 * lines skip one, is refused by the reader of that range. */
static void test_damaged_ranges(void)
{
    cf_error err;
    cf_file *f = cf_test_open_new("f");
    make(f, "s", 0);
    stream_table_file table;
    stream_table_read(&table, "f", "s");
    char *line3 = stream_table_line(&table, 3);
    for (int k = 0; k < 2 && line3; k++) {
        /* k 0: task 0's line made a statistics line; 1: task 3's numbered 4 */
        char *at = k == 0 ? strchr(strstr(table.text, "COMMIT: "), '\n') : line3;
        if (stream_table_poke(&table, at + 1, k == 0 ? 'S' : '4')) break;
        cf_stream_writer *w = NULL;
        char *head = NULL, *text = NULL;
        int64_t hlen = 0, size = 0, len = 0, *ends = NULL, first = 0, n = 0;
        uint32_t c = 0;
        CHECK_OK(cf_stream_reopen_head(&w, f, "s", &head, &hlen, &size, &err), &err);
        if (!w) break;
        CHECK_FAILS(cf_stream_table_slice(w, hlen, size - 17, size - 17, &text, &len, &ends, &first, &n, &c, &err),
                    CF_EFORMAT, &err, k == 0 ? "task 0's line expected" : "out of order or missing");
        CHECK(strstr(err.message, "colfile-stream-v1") != NULL);
        cf_free(head);
        cf_stream_discard(w);
        /* put the byte back */
        stream_table_poke(&table, NULL, 0);
    }
    free(table.text);
    cf_file_close(f);
}

CF_TESTS(CF_TEST(test_slices_give_the_table), CF_TEST(test_resume_as_reopen), CF_TEST(test_damaged_ranges))
