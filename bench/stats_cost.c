/* stats_cost.c - what computing per-chunk statistics costs a write.
 *
 * Writes columns through the public API (create, write, close: the unit
 * bench/query.py times) with statistics on and off, alternating which goes
 * first, and reports per column the median and best wall time and process
 * CPU time (both threads: the writer and the digest helper) of each, and
 * the ratios of the medians.  Build (any build directory of the project):
 *
 *     cc -O2 -std=c11 -D_GNU_SOURCE -Iinclude bench/stats_cost.c \
 *         BUILD/libcolfile.a -lpthread -lm -o BUILD/stats_cost
 *
 *     BUILD/stats_cost [--mib 64] [--repeats 21] [--columns f8x3,f4x3,i8,f4]
 *         [--chunk-rows 65536] [--stats both|on|off|none] [--dir DIR] [--no-sync] [--durable]
 *
 * --mib is the size of each column.  Before every timed write the previous
 * copy is removed and the file system synced (syncfs: so that write-back of
 * the last run does not land in this one; --no-sync skips it).  The File is
 * opened with CF_OPEN_NODURABLE, so the writes go to the page cache and
 * what is timed is the computation; --durable times the fsyncs of every
 * commit too.  The
 * columns' values are fixed by a seed, so two runs do the same work:
 *
 *     f8x3  positions in a box of 1000 ordered along x (a sorted snapshot)
 *     f4x3  velocities, roughly normal around 0
 *     i8    IDs: a bijective hash of the row number
 *     f4    masses, positive, log-normal-like
 *
 * Instruction counts do not suffer from the noise of a shared machine:
 *
 *     valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.%p \
 *         BUILD/stats_cost --repeats 1 --stats on --no-sync
 *
 * and the same with --stats off and --stats none (generate the data, write
 * nothing); the differences of the totals (the data generation is the
 * same) are what the writes and their statistics cost (bench/stats_cost.py
 * does this).  With --stats on or off alone one write per column and
 * repeat is timed (2 writes with --repeats 1: one warm-up).
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "colfile.h"

typedef struct {
    const char *name;  /* "f8x3" */
    const char *dtype; /* "f8" */
    int64_t nmemb, width, rows;
    void *data;
} column_case;

static uint64_t rng_state = UINT64_C(0x9E3779B97F4A7C15);

static uint64_t next_u64(void)
{
    /* splitmix64 */
    uint64_t z = (rng_state += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

static double uniform(void)
{
    return (double)(next_u64() >> 11) * 0x1p-53;
}

static void fill(column_case *cc)
{
    int64_t n = cc->rows;
    if (!strcmp(cc->name, "f8x3")) {
        double *x = cc->data;
        for (int64_t i = 0; i < n; i++) {
            x[3 * i] = (1000.0 * ((double)i + uniform())) / (double)n;
            x[3 * i + 1] = 1000.0 * uniform();
            x[3 * i + 2] = 1000.0 * uniform();
        }
    } else if (!strcmp(cc->name, "f4x3")) {
        float *x = cc->data;
        for (int64_t i = 0; i < 3 * n; i++)
            x[i] = (float)(300.0 * (uniform() + uniform() + uniform() - 1.5));
    } else if (!strcmp(cc->name, "i8")) {
        int64_t *x = cc->data;
        for (int64_t i = 0; i < n; i++) {
            uint64_t h = (uint64_t)i * UINT64_C(0x9E3779B97F4A7C15);
            x[i] = (int64_t)((h ^ (h >> 29)) >> 20);
        }
    } else {
        float *x = cc->data;
        for (int64_t i = 0; i < n; i++) x[i] = (float)exp(4.0 * (uniform() - 0.5));
    }
}

static double now(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static double best(const double *v, int n)
{
    double m = v[0];
    for (int i = 1; i < n; i++) m = v[i] < m ? v[i] : m;
    return m;
}

/* Create, write and close one column; wall and CPU seconds. */
static int timed_write(cf_file *f, const column_case *cc, int64_t chunk_rows, int stats, int sync_first,
                       double *wall, double *cpu)
{
    cf_error err;
    cf_column *c = NULL;
    cf_file_remove(f, cc->name, &err); /* absent the first time */
    if (sync_first) {
        int fd = open(cf_file_path(f), O_RDONLY | O_DIRECTORY);
        if (fd >= 0) {
            syncfs(fd);
            close(fd);
        }
    }
    double w0 = now(CLOCK_MONOTONIC), c0 = now(CLOCK_PROCESS_CPUTIME_ID);
    int rc = cf_column_create(&c, f, cc->name, cc->dtype, cc->nmemb, cc->rows, 1, &err);
    if (!rc && chunk_rows > 0) rc = cf_column_set_chunk_rows(c, chunk_rows, &err);
    if (!rc) cf_column_set_statistics(c, stats);
    if (!rc)
        rc = cf_column_write(c, 0, cc->rows, cc->data, NULL, cc->nmemb * cc->width, cc->width, &err);
    int rc2 = c ? cf_column_close(c, rc ? NULL : &err) : 0;
    if (!rc) rc = rc2;
    *wall = now(CLOCK_MONOTONIC) - w0;
    *cpu = now(CLOCK_PROCESS_CPUTIME_ID) - c0;
    if (rc) fprintf(stderr, "stats_cost: %s: %s\n", cc->name, err.message);
    return rc;
}

static void usage(void)
{
    fprintf(stderr, "usage: stats_cost [--mib N] [--repeats N] [--columns f8x3,f4x3,i8,f4] "
                    "[--chunk-rows N] [--stats both|on|off|none] [--dir DIR] [--no-sync] [--durable]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    int64_t mib = 64, chunk_rows = 65536;
    int repeats = 21, sync_first = 1, modes = 3; /* bit 0: on, bit 1: off */
    int open_flags = CF_OPEN_WRITE | CF_OPEN_NODURABLE;
    const char *columns = "f8x3,f4x3,i8,f4", *dir = getenv("TMPDIR");
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--no-sync")) { sync_first = 0; continue; }
        if (!strcmp(a, "--durable")) { open_flags &= ~CF_OPEN_NODURABLE; continue; }
        if (!v) usage();
        if (!strcmp(a, "--mib")) mib = atoll(v);
        else if (!strcmp(a, "--repeats")) repeats = atoi(v);
        else if (!strcmp(a, "--columns")) columns = v;
        else if (!strcmp(a, "--chunk-rows")) chunk_rows = atoll(v);
        else if (!strcmp(a, "--dir")) dir = v;
        else if (!strcmp(a, "--stats"))
            modes = !strcmp(v, "on") ? 1 : !strcmp(v, "off") ? 2 : !strcmp(v, "none") ? 0 : 3;
        else usage();
        i++;
    }
    if (mib < 1 || repeats < 1 || chunk_rows < 0) usage();

    column_case cases[8];
    int ncases = 0;
    char list[256];
    snprintf(list, sizeof list, "%s", columns);
    for (char *save = NULL, *tok = strtok_r(list, ",", &save); tok && ncases < 8;
         tok = strtok_r(NULL, ",", &save)) {
        column_case cc = { 0 };
        if (!strcmp(tok, "f8x3")) cc = (column_case){ "f8x3", "f8", 3, 8, 0, NULL };
        else if (!strcmp(tok, "f4x3")) cc = (column_case){ "f4x3", "f4", 3, 4, 0, NULL };
        else if (!strcmp(tok, "i8")) cc = (column_case){ "i8", "i8", 1, 8, 0, NULL };
        else if (!strcmp(tok, "f4")) cc = (column_case){ "f4", "f4", 1, 4, 0, NULL };
        else usage();
        cc.rows = (mib << 20) / (cc.nmemb * cc.width);
        if (!(cc.data = malloc((size_t)(cc.rows * cc.nmemb * cc.width)))) {
            fprintf(stderr, "stats_cost: out of memory\n");
            return 1;
        }
        fill(&cc);
        cases[ncases++] = cc;
    }

    char path[4096];
    snprintf(path, sizeof path, "%s/stats-cost-XXXXXX", dir ? dir : "/tmp");
    if (!mkdtemp(path)) {
        fprintf(stderr, "stats_cost: cannot make a directory under %s: %s\n", dir ? dir : "/tmp",
                strerror(errno));
        return 1;
    }
    cf_error err;
    cf_file *f = NULL;
    if (cf_file_open(&f, path, open_flags, &err)) {
        fprintf(stderr, "stats_cost: %s\n", err.message);
        return 1;
    }

    /* [case][on/off][repeat] */
    double *wall = calloc((size_t)(ncases * 2 * repeats), sizeof *wall);
    double *cpu = calloc((size_t)(ncases * 2 * repeats), sizeof *cpu);
    int rc = 0;
    double w, c;
    for (int k = 0; k < ncases && !rc; k++) /* warm-up */
        for (int s = 0; s < 2 && !rc; s++)
            if (modes & (1 << s)) rc = timed_write(f, &cases[k], chunk_rows, s == 0, sync_first, &w, &c);
    for (int r = 0; r < repeats && !rc; r++) {
        for (int k = 0; k < ncases && !rc; k++) {
            for (int q = 0; q < 2 && !rc; q++) {
                int s = (r + k) % 2 ? 1 - q : q; /* alternate which goes first */
                if (!(modes & (1 << s))) continue;
                size_t at = ((size_t)k * 2 + (size_t)s) * (size_t)repeats + (size_t)r;
                rc = timed_write(f, &cases[k], chunk_rows, s == 0, sync_first, &wall[at], &cpu[at]);
            }
        }
    }
    for (int k = 0; k < ncases; k++) cf_file_remove(f, cases[k].name, &err);
    cf_file_close(f);
    rmdir(path);
    if (rc) return 1;
    if (!modes) {
        printf("stats_cost: generated the data, wrote nothing (--stats none)\n");
        return 0;
    }

    printf("stats_cost: %lld MiB per column, %d repeats (alternating), chunk rows %lld, %s, %s\n",
           (long long)mib, repeats, (long long)chunk_rows, sync_first ? "syncfs before each" : "no sync",
           open_flags & CF_OPEN_NODURABLE ? "page cache (no fsync)" : "fsync at every commit");
    printf("%-6s %-4s %10s %10s %10s %8s %10s %10s\n", "column", "stat", "wall med", "wall best", "GB/s med",
           "", "cpu med", "cpu best");
    double tot[2][2] = { { 0, 0 }, { 0, 0 } }; /* [on/off][wall/cpu] medians */
    for (int k = 0; k < ncases; k++) {
        double mw[2] = { 0, 0 }, mc[2] = { 0, 0 }, bw[2] = { 0, 0 };
        for (int s = 0; s < 2; s++) {
            if (!(modes & (1 << s))) continue;
            double *wv = &wall[((size_t)k * 2 + (size_t)s) * (size_t)repeats];
            double *cv = &cpu[((size_t)k * 2 + (size_t)s) * (size_t)repeats];
            bw[s] = best(wv, repeats);
            double bc = best(cv, repeats);
            mw[s] = median(wv, repeats);
            mc[s] = median(cv, repeats);
            tot[s][0] += mw[s];
            tot[s][1] += mc[s];
            double bytes = (double)(cases[k].rows * cases[k].nmemb * cases[k].width);
            printf("%-6s %-4s %9.4fs %9.4fs %10.2f %8s %9.4fs %9.4fs\n", cases[k].name, s ? "off" : "on",
                   mw[s], bw[s], bytes / mw[s] / 1e9, "", mc[s], bc);
        }
        if (modes == 3)
            printf("%-6s ratio on/off: wall median %.3f, wall best %.3f, cpu median %.3f\n", cases[k].name,
                   mw[0] / mw[1], bw[0] / bw[1], mc[0] / mc[1]);
    }
    if (modes == 3)
        printf("all    ratio on/off of the summed medians: wall %.3f, cpu %.3f\n", tot[0][0] / tot[1][0],
               tot[0][1] / tot[1][1]);
    for (int k = 0; k < ncases; k++) free(cases[k].data);
    free(wall);
    free(cpu);
    return 0;
}
