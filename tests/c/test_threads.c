/* test_threads.c - distinct handles used from several threads at once (the
 * library keeps no global mutable state). */
#include "harness.h"

#include <pthread.h>

enum { THREADS = 4, ROWS = 50000, ROUNDS = 20 };

typedef struct {
    int id;
    int failures;
    char path[4096];
    char first[512]; /* the first failure, for the report */
} job;

static void failed(job *j, int line, const cf_error *err)
{
    if (j->failures++ == 0)
        snprintf(j->first, sizeof j->first, "thread %d, line %d: %s", j->id, line,
                 err ? err->message : "wrong data");
}

static void *work(void *arg)
{
    job *j = arg;
    cf_error err;
    cf_file *f = NULL;
    if (cf_file_open(&f, j->path, CF_OPEN_WRITE | CF_OPEN_CREATE, &err)) { failed(j, __LINE__, &err); return NULL; }
    char name[64];
    snprintf(name, sizeof name, "t%d/col", j->id);
    double *a = malloc(ROWS * sizeof *a), *b = malloc(ROWS * sizeof *b);
    for (int r = 0; r < ROUNDS; r++) {
        cf_column *c = NULL;
        for (int i = 0; i < ROWS; i++) a[i] = j->id * 1e6 + r * 1e3 + i;
        if (cf_column_create(&c, f, name, "f8", 1, ROWS, 3, &err) ||
            cf_column_write(c, 0, ROWS, a, "f8", 8, 8, &err) ||
            cf_column_attr_set(c, "round", "i4", 1, &r, &err) ||
            cf_column_close(c, &err)) { failed(j, __LINE__, &err); break; }
        if (cf_column_open(&c, f, name, &err) ||
            cf_column_read(c, 0, ROWS, b, "f8", 8, 8, &err)) { failed(j, __LINE__, &err); cf_column_close(c, NULL); break; }
        if (memcmp(a, b, ROWS * sizeof *a) != 0) failed(j, __LINE__, NULL);
        const void *v;
        if (cf_column_attr_get(c, "round", NULL, NULL, &v, &err) || *(const int *)v != r) failed(j, __LINE__, &err);
        /* An error record per thread: a failing call must not disturb others. */
        cf_error mine;
        if (cf_column_read(c, ROWS, 1, b, NULL, 8, 8, &mine) != CF_ERANGE || !strstr(mine.message, name))
            failed(j, __LINE__, &mine);
        cf_column_close(c, NULL);
    }
    free(a);
    free(b);
    cf_file_close(f);
    return NULL;
}

static void test_threads_on_distinct_handles(void)
{
    pthread_t t[THREADS];
    job jobs[THREADS];
    for (int i = 0; i < THREADS; i++) {
        jobs[i].id = i;
        jobs[i].failures = 0;
        snprintf(jobs[i].path, sizeof jobs[i].path, "%s/shared", cf_test_dir());
        CHECK(pthread_create(&t[i], NULL, work, &jobs[i]) == 0);
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        if (jobs[i].failures) fprintf(stderr, "%s\n", jobs[i].first);
        CHECK_EQ_INT(jobs[i].failures, 0);
    }
    cf_error err;
    cf_file *f;
    CHECK_OK(cf_file_open(&f, jobs[0].path, CF_OPEN_READ, &err), &err);
    char **names;
    int64_t n;
    CHECK_OK(cf_file_list(f, &names, &n, &err), &err);
    CHECK_EQ_INT(n, THREADS);
    cf_names_free(names, n);
    cf_file_close(f);
}

CF_TESTS(CF_TEST(test_threads_on_distinct_handles))
