/* md_create.c - the metadata create of bench/peers.py through the C API
 * alone, to tell the core's cost from the Python layer's.
 *
 * Creates N columns of 4 int64 rows with one int64 attribute each (what
 * bench/peers.py's md_create does through `File.create`, `attrs` and
 * `close`) in a new File opened with CF_OPEN_NODURABLE, then updates the
 * File's catalog, as closing a Python File does.  With deferred commits
 * (`deferred`), the creating thread hands each column to a cf_committer,
 * whose thread commits them, as `File(..., deferred=True)` does; without
 * (`immediate`), it closes each column itself.  Prints the wall time of the
 * loop and of the catalog update, and the CPU time of each thread (the
 * committer's: the process's less the creating thread's), so that one can
 * see which thread bounds the loop.
 *
 *     BUILD/md_create NEW_FILE_PATH [N (10000)] [deferred|immediate]
 *
 * CMake builds it with the tests (BUILD/md_create); by hand:
 *
 *     cc -O2 -std=gnu11 -D_GNU_SOURCE -Iinclude bench/md_create.c \
 *         -LBUILD -lcolfile -Wl,-rpath,BUILD -o BUILD/md_create
 *
 * Time it only on a settled disk: ext4 without a journal makes creates
 * slow for minutes after a large delete (docs/performance.md).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "colfile_binding.h"

static double seconds(clockid_t clock)
{
    struct timespec t;
    clock_gettime(clock, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s NEW_FILE_PATH [N] [deferred|immediate]\n", argv[0]);
        return 2;
    }
    int64_t n = argc > 2 ? strtoll(argv[2], NULL, 10) : 10000;
    int deferred = argc <= 3 || strcmp(argv[3], "immediate") != 0;
    cf_file *f = NULL;
    cf_committer *q = NULL;
    cf_error err;
    if (cf_file_open(&f, argv[1], CF_OPEN_WRITE | CF_OPEN_CREATE | CF_OPEN_EXCL | CF_OPEN_NODURABLE, &err) < 0 ||
        (deferred && cf_committer_new(&q, &err) < 0)) {
        fprintf(stderr, "md_create: %s\n", err.message);
        return 1;
    }
    int rc = 0;
    double t0 = seconds(CLOCK_MONOTONIC), cpu0 = seconds(CLOCK_THREAD_CPUTIME_ID);
    double all0 = seconds(CLOCK_PROCESS_CPUTIME_ID);
    for (int64_t i = 0; i < n && rc == 0; i++) {
        char name[32];
        snprintf(name, sizeof name, "c%05lld", (long long)i); /* as bench/peers.py's md_names */
        int64_t rows[4] = { i, i + 1, i + 2, i + 3 }, index = i;
        cf_column *c = NULL;
        if (cf_column_create(&c, f, name, "<i8", 1, 4, 1, &err) < 0 ||
            cf_column_write(c, 0, 4, rows, NULL, 8, 8, &err) < 0 ||
            cf_column_attr_set(c, "index", "<i8", 1, &index, &err) < 0) {
            fprintf(stderr, "md_create: %s\n", err.message);
            if (c) cf_column_discard(c);
            cf_column_close(c, NULL);
            rc = 1;
        } else if (deferred) {
            cf_committer_submit(q, c);
        } else if (cf_column_close(c, &err) < 0) {
            fprintf(stderr, "md_create: %s\n", err.message);
            rc = 1;
        }
    }
    double caller_cpu = seconds(CLOCK_THREAD_CPUTIME_ID) - cpu0;
    if (deferred) {
        if (cf_committer_wait(q, 0) > 0) {
            while (cf_committer_take_errors(q, &err, 1) == 1)
                fprintf(stderr, "md_create: commit failed: %s\n", err.message);
            rc = 1;
        }
        cf_committer_free(q);
    }
    double t1 = seconds(CLOCK_MONOTONIC);
    double commit_cpu = seconds(CLOCK_PROCESS_CPUTIME_ID) - all0 - caller_cpu;
    if (cf_file_catalog_update(f, &err) < 0) fprintf(stderr, "md_create: catalog: %s\n", err.message);
    double t2 = seconds(CLOCK_MONOTONIC);
    cf_file_close(f);
    printf("%s: %lld columns: loop %.3f s, catalog update %.3f s, total %.3f s; CPU: creating thread "
           "%.3f s", deferred ? "deferred" : "immediate", (long long)n, t1 - t0, t2 - t1, t2 - t0, caller_cpu);
    if (deferred) printf(", commit thread %.3f s", commit_cpu);
    printf("\n");
    return rc;
}
