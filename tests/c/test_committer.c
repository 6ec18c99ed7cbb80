/* test_committer.c - deferred commits (cf_committer): handles closed on a
 * thread of their own, in order, with failures kept until taken. */
#include "harness.h"

#include <pthread.h>
#include <sys/wait.h>
#include <time.h>

enum { ROWS = 4 };

static cf_file *open_new(const char *name)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", cf_test_dir(), name);
    cf_file *f = NULL;
    cf_error err;
    CHECK_OK(cf_file_open(&f, path, CF_OPEN_WRITE | CF_OPEN_CREATE | CF_OPEN_NODURABLE, &err), &err);
    return f;
}

static cf_committer *new_committer(void)
{
    cf_committer *q = NULL;
    cf_error err;
    CHECK_OK(cf_committer_new(&q, &err), &err);
    return q;
}

/* Column `name` with rows i..i+ROWS-1 and attribute index = i, not closed. */
static cf_column *make(cf_file *f, const char *name, int64_t i)
{
    cf_column *c = NULL;
    cf_error err;
    int64_t rows[ROWS];
    for (int k = 0; k < ROWS; k++) rows[k] = i + k;
    CHECK_OK(cf_column_create(&c, f, name, "i8", 1, ROWS, 1, &err), &err);
    if (!c) return NULL;
    CHECK_OK(cf_column_write(c, 0, ROWS, rows, "i8", 8, 8, &err), &err);
    CHECK_OK(cf_column_attr_set(c, "index", "i8", 1, &i, &err), &err);
    return c;
}

/* 1 if column `name` of f holds what make(f, name, i) wrote. */
static int holds(cf_file *f, const char *name, int64_t i)
{
    cf_column *c = NULL;
    cf_error err;
    int64_t rows[ROWS];
    const void *v = NULL;
    int ok = cf_column_open(&c, f, name, &err) == 0 && cf_column_size(c) == ROWS &&
             cf_column_read(c, 0, ROWS, rows, "i8", 8, 8, &err) == 0 &&
             cf_column_attr_get(c, "index", NULL, NULL, &v, &err) == 0 && *(const int64_t *)v == i;
    for (int k = 0; ok && k < ROWS; k++) ok = rows[k] == i + k;
    cf_column_close(c, NULL);
    return ok;
}

static int64_t count_columns(cf_file *f)
{
    char **names = NULL;
    int64_t n = -1;
    cf_error err;
    CHECK_OK(cf_file_list(f, &names, &n, &err), &err);
    cf_names_free(names, n);
    return n;
}

static void test_commits_in_order(void)
{
    cf_file *f = open_new("F");
    cf_committer *q = new_committer();
    CHECK_EQ_INT(cf_committer_wait(q, 0), 0); /* nothing handed over: no wait */
    CHECK_EQ_INT(cf_committer_done(q), 0);
    enum { N = 300 };
    for (int64_t i = 0; i < N; i++) {
        char name[32];
        snprintf(name, sizeof name, "c%03d", (int)i);
        CHECK_EQ_INT(cf_committer_submit(q, make(f, name, i)), i + 1);
        if (i == N / 2) {
            CHECK_EQ_INT(cf_committer_wait(q, i + 1), 0);
            CHECK(cf_committer_done(q) >= i + 1);
            CHECK(holds(f, name, i)); /* committed: it reads back */
        }
    }
    CHECK_EQ_INT(cf_committer_wait(q, 0), 0);
    CHECK_EQ_INT(cf_committer_done(q), N);
    CHECK_EQ_INT(count_columns(f), N);
    CHECK(holds(f, "c000", 0));
    CHECK(holds(f, "c299", 299));
    cf_committer_free(q);
    cf_file_close(f);
}

static void test_failures_are_kept_in_order(void)
{
    cf_file *f = open_new("F");
    cf_committer *q = new_committer();
    const char *names[] = { "ok1", "bad1", "ok2", "bad2", "ok3" };
    for (int i = 0; i < 5; i++) {
        cf_column *c = make(f, names[i], i);
        if (names[i][0] == 'b') cf_column_discard(c); /* its close then fails */
        cf_committer_submit(q, c);
    }
    CHECK_EQ_INT(cf_committer_wait(q, 0), 2);
    cf_error got[4];
    CHECK_EQ_INT(cf_committer_take_errors(q, got, 1), 1);
    CHECK_EQ_INT(got[0].code, CF_EIO);
    CHECK(strstr(got[0].message, "bad1") != NULL);
    CHECK_EQ_INT(cf_committer_take_errors(q, got, 4), 1);
    CHECK(strstr(got[0].message, "bad2") != NULL);
    CHECK_EQ_INT(cf_committer_take_errors(q, got, 4), 0);
    CHECK_EQ_INT(cf_committer_wait(q, 0), 0);
    /* the others are there, the discarded ones are not */
    CHECK_EQ_INT(count_columns(f), 3);
    CHECK(holds(f, "ok1", 0) && holds(f, "ok2", 2) && holds(f, "ok3", 4));
    /* more failures than the room made at first: all kept, in order */
    for (int i = 0; i < 20; i++) {
        char name[32];
        snprintf(name, sizeof name, "gone%02d", i);
        cf_column *c = make(f, name, i);
        cf_column_discard(c);
        cf_committer_submit(q, c);
    }
    CHECK_EQ_INT(cf_committer_wait(q, 0), 20);
    for (int i = 0; i < 20; i++) {
        char name[32];
        snprintf(name, sizeof name, "gone%02d", i);
        CHECK_EQ_INT(cf_committer_take_errors(q, got, 1), 1);
        CHECK(strstr(got[0].message, name) != NULL);
    }
    cf_committer_free(q);
    cf_file_close(f);
}

/* Failures left untaken are dropped by free; pending handles are closed. */
static void test_free_waits_for_everything(void)
{
    cf_file *f = open_new("F");
    cf_committer *q = new_committer();
    for (int64_t i = 0; i < 200; i++) {
        char name[32];
        snprintf(name, sizeof name, "c%03d", (int)i);
        cf_column *c = make(f, name, i);
        if (i == 7) cf_column_discard(c);
        cf_committer_submit(q, c);
    }
    cf_committer_free(q);
    CHECK_EQ_INT(count_columns(f), 199);
    CHECK(holds(f, "c199", 199));
    cf_committer_free(NULL);
    cf_file_close(f);
}

/* Fewer handles than a batch are committed without anyone waiting, and
 * again after the thread went to sleep. */
static void test_a_few_handles_need_no_wait(void)
{
    cf_file *f = open_new("F");
    cf_committer *q = new_committer();
    for (int round = 0; round < 2; round++) {
        char name[32];
        snprintf(name, sizeof name, "lone%d", round);
        cf_committer_submit(q, make(f, name, round));
        int waited_ms = 0;
        while (cf_committer_done(q) < round + 1 && waited_ms < 5000) {
            nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
            waited_ms++;
        }
        CHECK_EQ_INT(cf_committer_done(q), round + 1);
        nanosleep(&(struct timespec){ 0, 20000000 }, NULL); /* the thread sleeps */
    }
    cf_committer_free(q);
    CHECK(holds(f, "lone1", 1));
    cf_file_close(f);
}

/* Held: handles queue and none is committed until the release. */
static void test_hold(void)
{
    cf_file *f = open_new("F");
    cf_committer *q = new_committer();
    CHECK_EQ_INT(cf_committer_submit(q, make(f, "before", 0)), 1);
    CHECK_EQ_INT(cf_committer_wait(q, 0), 0);
    cf_committer_hold(q, 1);
    for (int64_t i = 0; i < 10; i++) {
        char name[32];
        snprintf(name, sizeof name, "c%d", (int)i);
        cf_committer_submit(q, make(f, name, i));
    }
    nanosleep(&(struct timespec){ 0, 20000000 }, NULL); /* time the thread would need */
    CHECK_EQ_INT(cf_committer_done(q), 1);
    CHECK_EQ_INT(count_columns(f), 1);
    cf_committer_hold(q, 0);
    CHECK_EQ_INT(cf_committer_wait(q, 0), 0);
    CHECK_EQ_INT(cf_committer_done(q), 11);
    CHECK(holds(f, "c9", 9));
    /* free commits what is held */
    cf_committer_hold(q, 1);
    cf_committer_submit(q, make(f, "last", 7));
    cf_committer_free(q);
    CHECK(holds(f, "last", 7));
    cf_file_close(f);
}

typedef struct {
    cf_file *f;
    cf_committer *q;
    int id;
    int64_t last_seq;
} submitter;

static void *submit_many(void *arg)
{
    submitter *s = arg;
    for (int64_t i = 0; i < 150; i++) {
        char name[32];
        snprintf(name, sizeof name, "t%d/c%03d", s->id, (int)i);
        int64_t seq = cf_committer_submit(s->q, make(s->f, name, i));
        if (seq <= s->last_seq) s->last_seq = INT64_MAX; /* out of order: seen below */
        else s->last_seq = seq;
    }
    return NULL;
}

static void test_threads_share_one_committer(void)
{
    cf_file *f = open_new("F");
    cf_committer *q = new_committer();
    pthread_t t[4];
    submitter s[4];
    for (int i = 0; i < 4; i++) {
        s[i] = (submitter){ f, q, i, 0 };
        CHECK(pthread_create(&t[i], NULL, submit_many, &s[i]) == 0);
    }
    for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
    for (int i = 0; i < 4; i++) CHECK(s[i].last_seq > 0 && s[i].last_seq <= 600);
    CHECK_EQ_INT(cf_committer_wait(q, 0), 0);
    CHECK_EQ_INT(cf_committer_done(q), 600);
    CHECK_EQ_INT(count_columns(f), 600);
    CHECK(holds(f, "t3/c149", 149));
    cf_committer_free(q);
    cf_file_close(f);
}

/* A fork while handles wait: the parent commits each once, the child none
 * of them, and the child's own handles are committed by a thread of its
 * own. */
static void test_fork(void)
{
    cf_file *f = open_new("F");
    cf_committer *q = new_committer();
    enum { N = 200 };
    for (int64_t i = 0; i < N; i++) {
        char name[32];
        snprintf(name, sizeof name, "p%03d", (int)i);
        cf_committer_submit(q, make(f, name, i));
    }
    cf_committer_pause(q);
    pid_t pid = fork();
    if (pid == 0) {
        cf_committer_forget_after_fork(q);
        cf_file_forget_locks(f);
        int bad = cf_committer_done(q) != 0;
        bad |= cf_committer_wait(q, 0) != 0;
        cf_column *c = NULL;
        int64_t rows[ROWS] = { 0, 1, 2, 3 };
        cf_error e;
        bad |= cf_column_create(&c, f, "child", "i8", 1, ROWS, 1, &e) != 0;
        if (c) bad |= cf_column_write(c, 0, ROWS, rows, "i8", 8, 8, &e) != 0;
        if (c) bad |= cf_committer_submit(q, c) != 1;
        bad |= cf_committer_wait(q, 0) != 0;
        bad |= cf_committer_done(q) != 1;
        _exit(bad ? 3 : 0);
    }
    cf_committer_resume(q);
    CHECK(pid > 0);
    int status = -1;
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK_EQ_INT(cf_committer_wait(q, 0), 0);
    CHECK_EQ_INT(cf_committer_done(q), N);
    CHECK_EQ_INT(count_columns(f), N + 1); /* the parent's, and the child's */
    for (int64_t i = 0; i < N; i += 37) {
        char name[32];
        snprintf(name, sizeof name, "p%03d", (int)i);
        CHECK(holds(f, name, i));
    }
    cf_committer_free(q);
    cf_file_close(f);
}

CF_TESTS(CF_TEST(test_commits_in_order), CF_TEST(test_failures_are_kept_in_order),
         CF_TEST(test_free_waits_for_everything), CF_TEST(test_hold), CF_TEST(test_a_few_handles_need_no_wait), CF_TEST(test_threads_share_one_committer),
         CF_TEST(test_fork))
