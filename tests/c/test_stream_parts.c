/* test_stream_parts.c - a stream commit written in parts by one process
 * (colfile_stream.h, docs/format.md 8.7): the owner's head, each task's
 * lines written at their offsets, the checksum line; the same bytes as a
 * whole-table commit; a commit given up or missing a part leaves the last
 * commit and no temporary file. */
#include <dirent.h>

#include "harness.h"
#include "colfile_stream.h"

static void append_rows(cf_stream_task *t, int64_t task, int64_t n)
{
    cf_error err;
    int32_t buf[5000];
    for (int64_t i = 0; i < n; i++) buf[i] = (int32_t)(task * 100000 + i);
    CHECK_OK(cf_stream_append(t, buf, n, &err), &err);
}

static int temporaries(const char *dir)
{
    int n = 0;
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));) n += strncmp(e->d_name, ".colfile-stream-v1.tmp", 22) == 0;
    if (d) closedir(d);
    return n;
}

static const int64_t sizes[3] = { 3000, 0, 1111 };

/* A stream of 3 tasks over 2 files, the tasks' rows appended. */
static cf_stream_writer *make(cf_file *f, const char *name, cf_stream_task *t[3])
{
    cf_error err;
    cf_stream_layout l;
    cf_stream_writer *w = NULL;
    CHECK_OK(cf_stream_layout_choose(&l, f, 3, 2, 4096, 4096, &err), &err);
    CHECK_OK(cf_stream_create(&w, f, name, "<i4", 1, &l, &err), &err);
    for (int r = 0; r < 3; r++) {
        CHECK_OK(cf_stream_task_open(&t[r], w, r, &err), &err);
        append_rows(t[r], r, sizes[r]);
    }
    return w;
}

/* Commit w in parts, skipping task `skip`'s lines (-1: none); ok as given. */
static int commit_parts(cf_stream_writer *w, cf_stream_task *t[3], int skip, int ok, cf_error *err)
{
    char *tmp = NULL;
    int64_t at = 0;
    uint32_t crc = 0;
    int rc = cf_stream_part_begin(w, &tmp, &at, &crc, err);
    if (rc) return rc;
    for (int r = 0; r < 3; r++) {
        char *text = NULL;
        int64_t len = 0;
        uint32_t c = 0;
        CHECK_OK(cf_stream_task_part(t[r], &text, &len, &c, err), err);
        if (r != skip) CHECK_OK(cf_stream_part_write(w, tmp, at, text, len, r == 2, err), err);
        crc = cf_stream_crc32c_join(crc, c, len);
        at += len;
        cf_free(text);
    }
    rc = cf_stream_part_end(w, tmp, at, crc, ok, err);
    cf_free(tmp);
    return rc;
}

static void test_parts_same_bytes(void)
{
    cf_error err;
    cf_file *f = cf_test_open_new("f");
    cf_stream_task *t[3];
    cf_stream_writer *a = make(f, "whole", t);
    CHECK_OK(cf_stream_flush(a, &err), &err);
    append_rows(t[1], 1, 7);
    CHECK_OK(cf_stream_close(a, &err), &err);
    cf_stream_writer *b = make(f, "parts", t);
    CHECK_OK(commit_parts(b, t, -1, 1, &err), &err);
    append_rows(t[1], 1, 7);
    CHECK_OK(commit_parts(b, t, -1, 1, &err), &err);
    /* the owner's table no longer holds every task: whole commits refuse */
    CHECK_FAILS(cf_stream_flush(b, &err), CF_EARG, &err, "in parts");
    cf_stream_discard(b);
    size_t la = 0, lb = 0;
    char *x = cf_test_slurp(cf_test_dir(), "f/whole/colfile-stream-v1", &la);
    char *y = cf_test_slurp(cf_test_dir(), "f/parts/colfile-stream-v1", &lb);
    CHECK(x && y && la == lb && memcmp(x, y, la) == 0);
    free(x);
    free(y);
    char dir[4300];
    snprintf(dir, sizeof dir, "%s/f/parts", cf_test_dir());
    CHECK_EQ_INT(temporaries(dir), 0);
    cf_file_close(f);
}

static void test_parts_failed(void)
{
    cf_error err;
    cf_file *f = cf_test_open_new("f");
    cf_stream_task *t[3];
    cf_stream_writer *w = make(f, "s", t);
    char dir[4300], *tmp = NULL;
    snprintf(dir, sizeof dir, "%s/f/s", cf_test_dir());
    /* a first commit given up, or missing its last part: nothing is visible */
    CHECK_OK(commit_parts(w, t, -1, 0, &err), &err);
    CHECK_FAILS(commit_parts(w, t, 2, 1, &err), CF_ESHORT, &err, "bytes of the table");
    cf_stream_reader *r = NULL;
    CHECK_EQ_INT(cf_stream_open(&r, f, "s", &err), CF_ENOENT);
    /* committed, then a commit that fails keeps the last one */
    CHECK_OK(commit_parts(w, t, -1, 1, &err), &err);
    size_t la = 0, lb = 0;
    char *before = cf_test_slurp(cf_test_dir(), "f/s/colfile-stream-v1", &la);
    append_rows(t[0], 0, 10);
    CHECK_FAILS(commit_parts(w, t, 2, 1, &err), CF_ESHORT, &err, "bytes of the table");
    CHECK_OK(commit_parts(w, t, -1, 0, &err), &err);
    char *after = cf_test_slurp(cf_test_dir(), "f/s/colfile-stream-v1", &lb);
    CHECK(before && after && la == lb && memcmp(before, after, la) == 0);
    free(before);
    free(after);
    CHECK_EQ_INT(temporaries(dir), 0);
    /* only this stream's temporaries are written to */
    CHECK_FAILS(cf_stream_part_write(w, "/tmp/x", 0, "x", 1, 0, &err), CF_EARG, &err, "not a temporary table");
    char other[4400];
    snprintf(other, sizeof other, "%s/../.colfile-stream-v1.tmp.1", dir);
    CHECK_FAILS(cf_stream_part_write(w, other, 0, "x", 1, 0, &err), CF_EARG, &err, "not a temporary table");
    int64_t len;
    uint32_t crc;
    CHECK_OK(cf_stream_part_begin(w, &tmp, &len, &crc, &err), &err);
    CHECK_EQ_INT(temporaries(dir), 1);
    CHECK_OK(cf_stream_part_end(w, tmp, len, crc, 0, &err), &err);
    CHECK_EQ_INT(temporaries(dir), 0);
    cf_free(tmp);
    cf_stream_discard(w);
    CHECK_OK(cf_stream_open(&r, f, "s", &err), &err);
    CHECK_EQ_INT(cf_stream_size(r), 4111);
    cf_stream_reader_close(r);
    cf_file_close(f);
}

CF_TESTS(CF_TEST(test_parts_same_bytes), CF_TEST(test_parts_failed))
