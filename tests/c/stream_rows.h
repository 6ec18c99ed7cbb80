/* stream_rows.h - the rows the stream tests write and check (tests/c and
 * tests/mpi): row i of task t holds t * 1000000 + i as <i8; or, in the
 * tables read in slices, the pair (t * 1e5 + i, -i) as two <f8. */
#ifndef CF_TEST_STREAM_ROWS_H
#define CF_TEST_STREAM_ROWS_H

#include "harness.h"
#include "colfile_stream.h"

static int64_t stream_row_value(int64_t task, int64_t row)
{
    return task * 1000000 + row;
}

/* Append rows [from, to) of task `task` to t in pieces of `step` rows, or
 * (step 0) in growing pieces 1, 2, 4, ... 2048. */
static void stream_append_rows(cf_stream_task *t, int64_t task, int64_t from, int64_t to, int64_t step)
{
    cf_error err;
    int64_t buf[4096];
    int64_t piece = step ? step : 1;
    for (int64_t at = from; at < to;) {
        int64_t n = to - at < piece ? to - at : piece;
        for (int64_t i = 0; i < n; i++) buf[i] = stream_row_value(task, at + i);
        CHECK_OK(cf_stream_append(t, buf, n, &err), &err);
        at += n;
        if (!step && piece < 2048) piece *= 2;
    }
}

/* Read stream `name` of f back with verification: every task's size
 * (rows[t]) and rows through the global view, and (per_task) each task's
 * rows and first row read as a task. */
static void stream_check_rows(cf_file *f, const char *name, int64_t tasks, const int64_t *rows, int per_task)
{
    cf_error err;
    cf_stream_reader *r = NULL;
    CHECK_OK(cf_stream_open(&r, f, name, &err), &err);
    if (!r) return;
    cf_stream_set_verify(r, 1);
    int64_t total = 0;
    for (int64_t t = 0; t < tasks; t++) {
        CHECK_EQ_INT(cf_stream_task_size(r, t), rows[t]);
        if (per_task) {
            CHECK_EQ_INT(cf_stream_task_start(r, t), total);
            int64_t *buf = malloc((size_t)(rows[t] + 1) * 8);
            CHECK_OK(cf_stream_read_task(r, t, 0, rows[t], buf, &err), &err);
            for (int64_t i = 0; i < rows[t]; i++)
                if (buf[i] != stream_row_value(t, i)) {
                    CHECK_EQ_INT(buf[i], stream_row_value(t, i));
                    break;
                }
            free(buf);
        }
        total += rows[t];
    }
    CHECK_EQ_INT(cf_stream_size(r), total);
    int64_t *all = malloc((size_t)(total + 1) * 8);
    CHECK_OK(cf_stream_read(r, 0, total, all, &err), &err);
    int64_t k = 0;
    for (int64_t t = 0; t < tasks; t++)
        for (int64_t i = 0; i < rows[t]; i++, k++)
            if (all[k] != stream_row_value(t, i)) {
                CHECK_EQ_INT(all[k], stream_row_value(t, i));
                t = tasks;
                break;
            }
    free(all);
    cf_stream_reader_close(r);
}

/* Rows [from, to) of task `task` of a stream of pairs. */
static inline void stream_append_pairs(cf_stream_task *t, int64_t task, int64_t from, int64_t to)
{
    cf_error err;
    double buf[2 * 512];
    for (int64_t at = from; at < to;) {
        int64_t n = to - at < 512 ? to - at : 512;
        for (int64_t i = 0; i < n; i++) {
            buf[2 * i] = (double)task * 1e5 + (double)(at + i);
            buf[2 * i + 1] = -(double)(at + i);
        }
        CHECK_OK(cf_stream_append(t, buf, n, &err), &err);
        at += n;
    }
}

/* Stream `name` of f, of pairs: `tasks` tasks over 2 files, 512-byte
 * chunks (many statistics lines), `rounds` commits; round k appends rows
 * [k sizes[t], (k + 1) sizes[t]) to each task t (growing tasks), the first
 * creating the stream, the later ones reopening it (reading its table). */
static inline void stream_make_pairs(cf_file *f, const char *name, int64_t tasks, const int64_t *sizes, int rounds)
{
    cf_error err;
    cf_stream_layout l;
    cf_stream_writer *w = NULL;
    cf_stream_task *t;
    CHECK_OK(cf_stream_layout_choose(&l, f, tasks, 2, 512, 512, &err), &err);
    for (int k = 0; k < rounds; k++) {
        if (k == 0) CHECK_OK(cf_stream_create(&w, f, name, "<f8", 2, &l, &err), &err);
        else {
            CHECK_OK(cf_stream_reopen(&w, f, name, &err), &err);
            CHECK(cf_stream_writer_table_bytes(w) > 0);
        }
        if (!w) return;
        for (int64_t r = 0; r < tasks; r++) {
            CHECK_OK(cf_stream_task_open(&t, w, r, &err), &err);
            stream_append_pairs(t, r, k * sizes[r], (k + 1) * sizes[r]);
        }
        CHECK_OK(cf_stream_close(w, &err), &err);
    }
}

#endif
