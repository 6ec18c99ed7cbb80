/* test_stream_write.c - writing streams: one process writing several
 * tasks, uneven, empty and growing sizes, commits, crashes and the
 * hand-over of task states between writers (docs/format.md 8.7). */
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "harness.h"
#include "colfile_stream.h"
#include "stream_rows.h"

static int cf__test_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

static cf_stream_writer *new_stream(cf_file *f, const char *name, int64_t tasks, int64_t files)
{
    cf_error err;
    cf_stream_layout l;
    cf_stream_writer *w = NULL;
    CHECK_OK(cf_stream_layout_choose(&l, f, tasks, files, 4096, 4096, &err), &err);
    CHECK_OK(cf_stream_create(&w, f, name, "<i8", 1, &l, &err), &err);
    return w;
}

static void test_uneven_zero_growing(void)
{
    cf_file *f = cf_test_open_new("f");
    cf_error err;
    cf_stream_writer *w = new_stream(f, "s", 5, 2);
    cf_stream_task *t[5];
    for (int i = 0; i < 5; i++) CHECK_OK(cf_stream_task_open(&t[i], w, i, &err), &err);
    CHECK_FAILS(cf_stream_task_open(&t[0], w, 0, &err), CF_EBUSY, &err, "task 0 is already open");
    CHECK_FAILS(cf_stream_task_open(&t[0], w, 5, &err), CF_EARG, &err, "task 5 out of range");
    int64_t rows[5] = { 0, 1, 513, 0, 512 };
    stream_append_rows(t[1], 1, 0, 1, 1);
    stream_append_rows(t[2], 2, 0, 513, 100);   /* crosses a chunk in the middle of an append */
    stream_append_rows(t[4], 4, 0, 512, 512);   /* exactly one chunk */
    for (int64_t step = 1, at = 0; at < 3000; step *= 2) { /* growing appends, interleaved with the others */
        int64_t to = at + step < 3000 ? at + step : 3000;
        stream_append_rows(t[3], 3, at, to, step);
        at = to;
    }
    rows[3] = 3000;
    CHECK_EQ_INT(cf_stream_task_rows(t[3]), 3000);
    CHECK_OK(cf_stream_close(w, &err), &err);
    stream_check_rows(f, "s", 5, rows, 1);
    /* the layout on disk: file 0 holds tasks 0 1, file 1 tasks 2 3 4, and
     * task 3's sixth chunk (block 5, local task 1 of 3) is at (5*3+1)*4096 */
    char path[4200];
    snprintf(path, sizeof path, "%s/f/s/colfile-stream-data-000001", cf_test_dir());
    int fd = open(path, O_RDONLY);
    CHECK(fd >= 0);
    int64_t v = 0;
    CHECK_EQ_INT(pread(fd, &v, 8, (5 * 3 + 1) * 4096), 8);
    CHECK_EQ_INT(v, stream_row_value(3, 5 * 512));
    CHECK_EQ_INT(pread(fd, &v, 8, 2 * 4096 + 8 * 511), 8);
    CHECK_EQ_INT(v, stream_row_value(4, 511));
    struct stat st;
    CHECK(fstat(fd, &st) == 0);
    /* task 3 has 6 chunks: block 5, slot 16, ends 2624 bytes in */
    CHECK_EQ_INT(st.st_size, (5 * 3 + 1) * 4096 + (3000 - 5 * 512) * 8);
    close(fd);
    snprintf(path, sizeof path, "%s/f/s/colfile-stream-data-000000", cf_test_dir());
    CHECK(stat(path, &st) == 0 && st.st_size == 4096 + 8); /* task 1's one row, after task 0's empty chunk */
    cf_file_close(f);
}

static void test_flush_commits_what_was_written(void)
{
    cf_file *f = cf_test_open_new("f");
    cf_error err;
    cf_stream_writer *w = new_stream(f, "ckpt", 2, 1);
    cf_stream_task *a, *b;
    CHECK_OK(cf_stream_task_open(&a, w, 0, &err), &err);
    CHECK_OK(cf_stream_task_open(&b, w, 1, &err), &err);
    stream_append_rows(a, 0, 0, 700, 70);
    cf_stream_reader *r = NULL;
    CHECK_FAILS(cf_stream_open(&r, f, "ckpt", &err), CF_ENOENT, &err, "no stream");
    CHECK_OK(cf_stream_flush(w, &err), &err);
    int64_t rows[2] = { 700, 0 };
    stream_check_rows(f, "ckpt", 2, rows, 1);
    /* later appends are not part of the stream before the next commit */
    stream_append_rows(a, 0, 700, 1000, 300);
    stream_append_rows(b, 1, 0, 10, 10);
    stream_check_rows(f, "ckpt", 2, rows, 1);
    CHECK_OK(cf_stream_flush(w, &err), &err);
    rows[0] = 1000;
    rows[1] = 10;
    stream_check_rows(f, "ckpt", 2, rows, 1);
    CHECK_OK(cf_stream_open(&r, f, "ckpt", &err), &err);
    int64_t commit = 0;
    cf_stream_info(r, NULL, NULL, NULL, &commit);
    CHECK_EQ_INT(commit, 2);
    cf_stream_reader_close(r);
    /* appends then a writer dropped without a commit: the last commit stays */
    stream_append_rows(a, 0, 1000, 5000, 1000);
    cf_stream_discard(w);
    stream_check_rows(f, "ckpt", 2, rows, 1);
    cf_file_close(f);
}

/* A writer killed at each point: absent before the first commit, the last
 * commit after it. */
static void test_killed_writer(void)
{
    cf_file *f = cf_test_open_new("f");
    cf_error err;
    for (int stage = 0; stage < 2; stage++) {
        pid_t pid = fork();
        if (pid == 0) {
            cf_stream_writer *w = new_stream(f, "k", 3, 2);
            cf_stream_task *t;
            if (cf_stream_task_open(&t, w, 1, &err) != 0) _exit(3);
            int64_t rows[400];
            for (int i = 0; i < 400; i++) rows[i] = stream_row_value(1, i);
            if (cf_stream_append(t, rows, 100, &err) != 0) _exit(3);
            if (stage == 1 && cf_stream_flush(w, &err) != 0) _exit(4);
            if (cf_stream_append(t, rows + 100, 300, &err) != 0) _exit(3);
            _exit(0); /* killed: no commit, nothing cleaned up */
        }
        int status = 0;
        waitpid(pid, &status, 0);
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        cf_stream_reader *r = NULL;
        char **names = NULL;
        int64_t n = -1;
        CHECK_OK(cf_file_list_streams(f, &names, &n, &err), &err);
        if (stage == 0) {
            CHECK_FAILS(cf_stream_open(&r, f, "k", &err), CF_ENOENT, &err, "k");
            CHECK_EQ_INT(n, 0);
            /* what it left is a staging directory, which repair removes */
            char **lines = NULL;
            int64_t count = 0;
            CHECK_OK(cf_file_cleanup(f, 0, &lines, &count, &err), &err);
            CHECK_EQ_INT(count, 1);
            if (count == 1) CHECK(strstr(lines[0], ".colfile-stage.k.") != NULL);
            cf_names_free(lines, count);
        } else {
            CHECK_EQ_INT(n, 1);
            int64_t rows[3] = { 0, 100, 0 };
            stream_check_rows(f, "k", 3, rows, 1);
        }
        cf_names_free(names, n);
    }
    cf_file_close(f);
}

static void test_replace_and_refuse(void)
{
    cf_file *f = cf_test_open_new("f");
    cf_error err;
    cf_stream_writer *w = new_stream(f, "g/s", 1, 1);
    cf_stream_task *t;
    CHECK_OK(cf_stream_task_open(&t, w, 0, &err), &err);
    stream_append_rows(t, 0, 0, 50, 50);
    /* a second writer of the name is refused while the first holds it */
    cf_stream_layout l = { 1, 1, 4096, 4096 };
    cf_stream_writer *w2 = NULL;
    CHECK_FAILS(cf_stream_create(&w2, f, "g/s", "<i8", 1, &l, &err), CF_EBUSY, &err, "g/s");
    CHECK_OK(cf_stream_close(w, &err), &err);
    int64_t rows[2] = { 50, 0 };
    stream_check_rows(f, "g/s", 1, rows, 1);
    /* a new stream replaces it at its first commit, not before */
    w = new_stream(f, "g/s", 2, 1);
    CHECK_OK(cf_stream_task_open(&t, w, 1, &err), &err);
    stream_check_rows(f, "g/s", 1, rows, 1);
    CHECK_OK(cf_stream_close(w, &err), &err);
    rows[0] = 0;
    stream_check_rows(f, "g/s", 2, rows, 1);
    /* never a column or a group */
    cf_column *c = NULL;
    CHECK_OK(cf_column_create(&c, f, "col", "<f4", 1, 0, 1, &err), &err);
    CHECK_OK(cf_column_close(c, &err), &err);
    CHECK_FAILS(cf_stream_create(&w2, f, "col", "<i8", 1, &l, &err), CF_EKIND, &err, "is a column");
    CHECK_FAILS(cf_stream_create(&w2, f, "g", "<i8", 1, &l, &err), CF_EKIND, &err, "is a group");
    CHECK_FAILS(cf_stream_create(&w2, f, "col/x", "<i8", 1, &l, &err), CF_EEXIST, &err, NULL);
    CHECK_FAILS(cf_stream_create(&w2, f, "bad//name", "<i8", 1, &l, &err), CF_ENAME, &err, NULL);
    CHECK_FAILS(cf_stream_create(&w2, f, "x", "<f16", 1, &l, &err), CF_EDTYPE, &err, NULL);
    cf_stream_reader *r = NULL;
    CHECK_FAILS(cf_stream_open(&r, f, "col", &err), CF_EKIND, &err, "is a column");
    /* streams and columns are listed apart */
    char **names = NULL;
    int64_t n = 0;
    CHECK_OK(cf_file_list(f, &names, &n, &err), &err);
    CHECK_EQ_INT(n, 1);
    if (n == 1) CHECK_EQ_STR(names[0], "col");
    cf_names_free(names, n);
    CHECK_OK(cf_file_list_streams(f, &names, &n, &err), &err);
    CHECK_EQ_INT(n, 1);
    if (n == 1) CHECK_EQ_STR(names[0], "g/s");
    cf_names_free(names, n);
    cf_file_close(f);
    cf_file *ro = NULL;
    char path[4200];
    snprintf(path, sizeof path, "%s/f", cf_test_dir());
    CHECK_OK(cf_file_open(&ro, path, CF_OPEN_READ, &err), &err);
    CHECK_FAILS(cf_stream_create(&w2, ro, "y", "<i8", 1, &l, &err), CF_EREADONLY, &err, "read-only");
    cf_file_close(ro);
}

/* The bytes of a file in the test directory, for comparing. */
static int same_file(const char *a, const char *b)
{
    size_t la, lb;
    char *x = cf_test_slurp(cf_test_dir(), a, &la), *y = cf_test_slurp(cf_test_dir(), b, &lb);
    int same = x && y && la == lb && memcmp(x, y, la) == 0;
    free(x);
    free(y);
    return same;
}

/* Tasks written through a joined writer (as on other ranks) and their
 * states handed to the owner give the same bytes as one writer of all. */
static void test_states_between_writers(void)
{
    cf_file *f = cf_test_open_new("f");
    cf_error err;
    cf_stream_writer *one = new_stream(f, "one", 4, 2);
    cf_stream_task *t;
    for (int i = 0; i < 4; i++) {
        CHECK_OK(cf_stream_task_open(&t, one, i, &err), &err);
        stream_append_rows(t, i, 0, 300 * i, 77);
    }
    CHECK_OK(cf_stream_close(one, &err), &err);

    cf_stream_writer *owner = new_stream(f, "two", 4, 2), *other = NULL;
    cf_stream_layout l;
    CHECK_OK(cf_stream_layout_choose(&l, f, 4, 2, 4096, 4096, &err), &err);
    CHECK_OK(cf_stream_join(&other, f, "two", cf_stream_writer_dir(owner), "<i8", 1, &l, &err), &err);
    unsigned char states[4096];
    int64_t at = 0, n;
    for (int i = 0; i < 4; i++) {
        CHECK_OK(cf_stream_task_open(&t, i % 2 ? other : owner, i, &err), &err);
        stream_append_rows(t, i, 0, 300 * i, 77);
        /* every task's state goes to the owner, as a gather would bring it */
        CHECK_OK(cf_stream_task_state(t, NULL, 0, &n, &err), &err);
        CHECK_FAILS(cf_stream_task_state(t, states + at, n - 1, &n, &err), CF_ERANGE, &err, "state needs");
        CHECK_OK(cf_stream_task_state(t, states + at, (int64_t)sizeof states - at, &n, &err), &err);
        at += n;
    }
    CHECK_FAILS(cf_stream_flush(other, &err), CF_EARG, &err, "only the writer that created");
    CHECK_FAILS(cf_stream_commit_states(owner, states, at - 1, &err), CF_EARG, &err, "cut short");
    CHECK_OK(cf_stream_commit_states(owner, states, at, &err), &err);
    cf_stream_discard(other);
    cf_stream_discard(owner); /* committed once, as `one` was at its close */
    CHECK(same_file("f/one/colfile-stream-v1", "f/two/colfile-stream-v1"));
    CHECK(same_file("f/one/colfile-stream-data-000000", "f/two/colfile-stream-data-000000"));
    CHECK(same_file("f/one/colfile-stream-data-000001", "f/two/colfile-stream-data-000001"));
    int64_t rows[4] = { 0, 300, 600, 900 };
    stream_check_rows(f, "two", 4, rows, 1);

    /* a state that would take a task back is refused, committing nothing */
    owner = new_stream(f, "three", 1, 1);
    CHECK_OK(cf_stream_task_open(&t, owner, 0, &err), &err);
    stream_append_rows(t, 0, 0, 600, 600);
    unsigned char early[256]; /* 24 + a CRC and the statistics of each chunk */
    CHECK_OK(cf_stream_task_state(t, early, sizeof early, &n, &err), &err);
    CHECK_OK(cf_stream_flush(owner, &err), &err);
    stream_append_rows(t, 0, 600, 700, 100);
    CHECK_OK(cf_stream_flush(owner, &err), &err);
    CHECK_FAILS(cf_stream_commit_states(owner, early, n, &err), CF_EARG, &err, "would go back");
    CHECK_OK(cf_stream_close(owner, &err), &err);
    int64_t rows3[1] = { 700 };
    stream_check_rows(f, "three", 1, rows3, 1);
    cf_file_close(f);
}

/* A restarted job appends to the stream it committed before. */
static void test_reopen(void)
{
    cf_file *f = cf_test_open_new("f");
    cf_error err;
    cf_stream_writer *w = new_stream(f, "r", 3, 2);
    cf_stream_task *t;
    CHECK_OK(cf_stream_task_open(&t, w, 0, &err), &err);
    stream_append_rows(t, 0, 0, 700, 700);
    CHECK_OK(cf_stream_task_open(&t, w, 2, &err), &err);
    stream_append_rows(t, 2, 0, 10, 10);
    CHECK_OK(cf_stream_flush(w, &err), &err);
    stream_append_rows(t, 2, 10, 600, 590); /* never committed: a crash */
    cf_stream_discard(w);

    CHECK_OK(cf_stream_reopen(&w, f, "r", &err), &err);
    cf_stream_layout l;
    char dt[CF_DTYPE_MAX];
    int64_t nmemb;
    cf_stream_writer_info(w, &l, dt, &nmemb);
    CHECK_EQ_INT(l.tasks, 3);
    CHECK_EQ_INT(l.files, 2);
    CHECK_EQ_STR(dt, "<i8");
    cf_stream_writer *w2 = NULL;
    CHECK_FAILS(cf_stream_reopen(&w2, f, "r", &err), CF_EBUSY, &err, "r");
    /* a second process's tasks continue too (the parallel layers' join) */
    cf_stream_writer *other = NULL;
    CHECK_OK(cf_stream_join(&other, f, "r", cf_stream_writer_dir(w), "<i8", 1, &l, &err), &err);
    cf_stream_layout wrong = l;
    wrong.chunk *= 2;
    CHECK_FAILS(cf_stream_join(&w2, f, "r", cf_stream_writer_dir(w), "<i8", 1, &wrong, &err), CF_EARG, &err,
                "not the one given");
    CHECK_OK(cf_stream_task_open(&t, w, 2, &err), &err);
    CHECK_EQ_INT(cf_stream_task_rows(t), 10); /* after its committed rows, over what the crash left */
    stream_append_rows(t, 2, 10, 20, 5);
    cf_stream_task *t0;
    CHECK_OK(cf_stream_task_open(&t0, other, 0, &err), &err);
    CHECK_EQ_INT(cf_stream_task_rows(t0), 700);
    stream_append_rows(t0, 0, 700, 1200, 100); /* crosses into its second chunk */
    unsigned char state[256];
    int64_t n;
    CHECK_OK(cf_stream_task_state(t0, state, sizeof state, &n, &err), &err);
    cf_stream_discard(other);
    CHECK_OK(cf_stream_commit_states(w, state, n, &err), &err);
    CHECK_OK(cf_stream_close(w, &err), &err);
    int64_t rows[3] = { 1200, 0, 20 };
    stream_check_rows(f, "r", 3, rows, 1);
    cf_stream_reader *r = NULL;
    int64_t commit = 0;
    CHECK_OK(cf_stream_open(&r, f, "r", &err), &err);
    if (r) cf_stream_info(r, NULL, NULL, NULL, &commit);
    CHECK_EQ_INT(commit, 3);
    cf_stream_reader_close(r);
    /* nothing to reopen */
    CHECK_FAILS(cf_stream_reopen(&w2, f, "none", &err), CF_ENOENT, &err, "none");
    cf_column *c = NULL;
    CHECK_OK(cf_column_create(&c, f, "col", "<f4", 1, 0, 1, &err), &err);
    CHECK_OK(cf_column_close(c, &err), &err);
    CHECK_FAILS(cf_stream_reopen(&w2, f, "col", &err), CF_EKIND, &err, "is a column");
    cf_file_close(f);
}

static int open_descriptors(void)
{
    int n = 0;
    for (int fd = 0; fd < 65536; fd++)
        if (fcntl(fd, F_GETFD) != -1) n++;
    return n;
}

/* 10^5 tasks in one process: as many descriptors and files as the stream
 * has physical files, whatever the task count. */
static void test_many_tasks(void)
{
    cf_file *f = cf_test_open_new("f");
    cf_error err;
    const int64_t tasks = 100000;
    int before = open_descriptors();
    cf_stream_writer *w = new_stream(f, "many", tasks, 4);
    for (int64_t i = 0; i < tasks; i++) {
        cf_stream_task *t;
        CHECK_OK(cf_stream_task_open(&t, w, i, &err), &err);
        int64_t v = stream_row_value(i, 0);
        if (i % 3) CHECK_OK(cf_stream_append(t, &v, 1, &err), &err);
        if (cf_test_failures) break;
    }
    CHECK(open_descriptors() <= before + 4 + 2);
    CHECK_OK(cf_stream_close(w, &err), &err);
    char path[4200];
    for (int i = 0; i < 5; i++) {
        snprintf(path, sizeof path, "%s/f/many/colfile-stream-data-%06X", cf_test_dir(), i);
        CHECK(cf__test_exists(path) == (i < 4));
    }
    cf_stream_reader *r = NULL;
    CHECK_OK(cf_stream_open(&r, f, "many", &err), &err);
    if (r) {
        CHECK_EQ_INT(cf_stream_size(r), tasks - (tasks + 2) / 3);
        for (int64_t i = 0; i < tasks; i += 7919) {
            int64_t v = -1;
            CHECK_EQ_INT(cf_stream_task_size(r, i), i % 3 ? 1 : 0);
            if (i % 3) {
                CHECK_OK(cf_stream_read_task(r, i, 0, 1, &v, &err), &err);
                CHECK_EQ_INT(v, stream_row_value(i, 0));
            }
        }
        cf_stream_reader_close(r);
    }
    cf_file_close(f);
}

CF_TESTS(CF_TEST(test_uneven_zero_growing), CF_TEST(test_reopen), CF_TEST(test_many_tasks), CF_TEST(test_flush_commits_what_was_written), CF_TEST(test_killed_writer),
         CF_TEST(test_replace_and_refuse), CF_TEST(test_states_between_writers))
