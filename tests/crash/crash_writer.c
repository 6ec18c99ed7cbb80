/* crash_writer.c - the C writer of the crash harness (tests/crash).
 *
 * Replays a plan (crashplan.py writes it) on a File through the public C
 * API, logging each operation so that the checker knows which versions of
 * each column are acceptable after a crash:
 *
 *   crash_writer FILE PLAN LOG [--start K] [--on-error close|abort]
 *                [--open-flags N] [--pids DIR]
 *
 * Built twice: crash_writer (serial, libcolfile) and, with MPI,
 * crash_writer_mpi (-DCRASH_WRITER_MPI: every operation is collective
 * through libcolfile_mpi; appends, which that layer has no call for, are
 * made by rank 0 alone between barriers).
 *
 * Log lines (rank 0 only; each written with one write() and fsynced):
 *   ready <pid>                       the File is open
 *   begin <idx> <kind> <target>       an operation starts
 *   done <idx>                        it returned, committed (closed)
 *   fail <idx> <CF_CODE> <message>    it failed with a clean error
 *   cleanup <rc> <message>            closing after the failure (--on-error
 *                                     close) returned rc
 *   end                               the File is closed, all done
 *
 * Operations rm, truncate (the File opened again with CF_OPEN_TRUNCATE)
 * and repair (cf_file_cleanup, then cf_column_repair of every column) are
 * for the serial writer only.
 * Exit status: 0 all done, 3 a clean error (logged), 2 bad usage or plan.
 *
 * Data: element e of a segment of generation g holds the bytes that
 * crashplan.element_bytes(token, gen_key(seed, g), e, 1) gives; the two
 * implementations must agree bit for bit (the clean runs check it).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "colfile.h"
#ifdef CRASH_WRITER_MPI
#include <mpi.h>

#include "colfile_mpi.h"
#endif

/* ---- the data generator (keep in step with crashplan.py) --------------- */

#define GOLDEN 0x9E3779B97F4A7C15ULL
#define IMAG 0xD1B54A32D192ED03ULL

static uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static uint64_t gen_key(uint64_t seed, uint64_t gen)
{
    return mix64(seed * 0x100000001B3ULL + gen * GOLDEN + 0x632BE59BD9B4E019ULL);
}

static double gen_float(uint64_t z)
{
    double v = (double)((z >> 12) % 1000003ULL + 1) * 0.25;
    return (z & 2) ? -v : v;
}

static void put_ordered(unsigned char *out, const void *native, int width, int big)
{
    const unsigned char *p = native;
    for (int i = 0; i < width; i++) out[i] = big ? p[width - 1 - i] : p[i];
}

static void put_float(unsigned char *out, double v, int width, int big)
{
    if (width == 4) {
        float f = (float)v;
        put_ordered(out, &f, 4, big);
    } else {
        put_ordered(out, &v, 8, big);
    }
}

/* The stored bytes of elements e0 .. e0+n-1 of dtype token. */
static void element_bytes(const char *token, uint64_t key, int64_t e0, int64_t n, unsigned char *out)
{
    int big = token[0] == '>';
    char kind = token[1];
    int width = atoi(token + 2);
    for (int64_t i = 0; i < n; i++) {
        uint64_t z = mix64(key + (uint64_t)(e0 + i + 1) * GOLDEN);
        unsigned char *o = out + i * width;
        switch (kind) {
        case 'i':
        case 'u': {
            uint64_t v = z | 1;
            for (int k = 0; k < width; k++) o[k] = (unsigned char)(v >> (8 * k));
            break;
        }
        case 'f':
            put_float(o, gen_float(z), width, big);
            break;
        case 'c':
            put_float(o, gen_float(z), width / 2, big);
            put_float(o + width / 2, gen_float(mix64(z ^ IMAG)), width / 2, big);
            break;
        case 'b':
            o[0] = (unsigned char)((z >> 7) & 1);
            break;
        case 'S':
            for (int k = 0; k < width; k++) o[k] = (unsigned char)('a' + (z >> (5 * k)) % 26);
            break;
        default:
            memset(o, 0, (size_t)width);
        }
    }
}

/* ---- the plan ------------------------------------------------------------ */

typedef struct op {
    int idx;
    char kind[16];
    char target[256];
    char dtype[16];
    char name[32];
    char type[16];
    char io[16];
    int64_t nmemb, size, nfile, gen, piece, rows, start, count;
} op;

static uint64_t g_seed;
static op *g_ops;
static int g_nops;

static int64_t kv_int(const char *line, const char *key, int64_t dflt)
{
    char pat[32];
    snprintf(pat, sizeof pat, " %s=", key);
    const char *p = strstr(line, pat);
    return p ? strtoll(p + strlen(pat), NULL, 10) : dflt;
}

static void kv_str(const char *line, const char *key, char *out, size_t cap)
{
    char pat[32];
    snprintf(pat, sizeof pat, " %s=", key);
    const char *p = strstr(line, pat);
    out[0] = '\0';
    if (!p) return;
    p += strlen(pat);
    size_t n = strcspn(p, " \n");
    if (n >= cap) n = cap - 1;
    memcpy(out, p, n);
    out[n] = '\0';
}

static int read_plan(const char *path)
{
    FILE *fh = fopen(path, "r");
    if (!fh) {
        fprintf(stderr, "crash_writer: cannot open plan %s: %s\n", path, strerror(errno));
        return -1;
    }
    char line[2048];
    int cap = 0;
    while (fgets(line, sizeof line, fh)) {
        if (line[0] == '#') {
            const char *s = strstr(line, "seed=");
            if (s) g_seed = strtoull(s + 5, NULL, 10);
            continue;
        }
        if (line[0] == '\n' || line[0] == '\0') continue;
        if (g_nops == cap) {
            cap = cap ? cap * 2 : 64;
            g_ops = realloc(g_ops, (size_t)cap * sizeof *g_ops);
            if (!g_ops) return -1;
        }
        op *o = &g_ops[g_nops];
        memset(o, 0, sizeof *o);
        if (sscanf(line, "%d %15s %255s", &o->idx, o->kind, o->target) != 3) {
            fprintf(stderr, "crash_writer: bad plan line: %s", line);
            fclose(fh);
            return -1;
        }
        kv_str(line, "dtype", o->dtype, sizeof o->dtype);
        kv_str(line, "name", o->name, sizeof o->name);
        kv_str(line, "type", o->type, sizeof o->type);
        kv_str(line, "io", o->io, sizeof o->io);
        o->nmemb = kv_int(line, "nmemb", 0);
        o->size = kv_int(line, "size", 0);
        o->nfile = kv_int(line, "nfile", 0);
        o->gen = kv_int(line, "gen", 0);
        o->piece = kv_int(line, "piece", 1);
        o->rows = kv_int(line, "rows", 0);
        o->start = kv_int(line, "start", 0);
        o->count = kv_int(line, "count", 0);
        if (o->piece < 1) o->piece = 1;
        g_nops++;
    }
    fclose(fh);
    return 0;
}

/* ---- the log ---------------------------------------------------------------- */

static int g_log = -1;
static int g_rank = 0;
#ifdef CRASH_WRITER_MPI
static int g_nranks = 1;
#endif

static void logf_(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void logf_(const char *fmt, ...)
{
    if (g_log < 0) return;
    char buf[2048];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf - 1, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if (n > (int)sizeof buf - 2) n = (int)sizeof buf - 2;
    /* one line: no newline inside a message */
    for (int i = 0; i < n; i++)
        if (buf[i] == '\n') buf[i] = ' ';
    buf[n++] = '\n';
    ssize_t w = write(g_log, buf, (size_t)n);
    (void)w;
    fsync(g_log);
}

/* ---- operations ------------------------------------------------------------- */

#ifdef CRASH_WRITER_MPI
#define COMM MPI_COMM_WORLD
#endif

static cf_file *g_file;
static cf_column *g_col;     /* the column of the operation in progress */
static int g_on_error_close = 1;
static const char *g_path;   /* the File, for a truncation (mode "w") */
static int g_open_flags;

static int64_t rowbytes_of(const char *dtype, int64_t nmemb)
{
    int64_t itemsize = 0;
    if (cf_dtype_itemsize(dtype, &itemsize, NULL) != 0) return 0;
    return itemsize * nmemb;
}

/* Rows [first, first+n) of a segment starting at row `seg0`... all rows of
 * a plan are absolute: element index = row * nmemb + j. */
static unsigned char *make_rows(const char *dtype, int64_t nmemb, uint64_t key, int64_t row0, int64_t n)
{
    int64_t rb = rowbytes_of(dtype, nmemb);
    unsigned char *buf = malloc((size_t)(n * rb) + 1);
    if (!buf) {
        fprintf(stderr, "crash_writer: out of memory\n");
        exit(2);
    }
    element_bytes(dtype, key, row0 * nmemb, n * nmemb, buf);
    return buf;
}

/* Write rows [row0, row0+n) of generation key to the open column, in
 * pieces (serial) or as one collective write of this rank's share. */
static int write_rows(cf_column *c, uint64_t key, int64_t row0, int64_t n, int64_t piece, const char *io,
                      cf_error *err)
{
    const char *dtype = cf_column_dtype(c);
    int64_t nmemb = cf_column_nmemb(c);
    int64_t width = cf_column_itemsize(c);
    int64_t rb = width * nmemb;
#ifdef CRASH_WRITER_MPI
    (void)piece;
    cf_mpi_options opt;
    cf_mpi_options_init(&opt);
    opt.mode = strcmp(io, "throttled") == 0 ? CF_IO_THROTTLED
             : strcmp(io, "aggregated") == 0 ? CF_IO_AGGREGATED : CF_IO_AUTO;
    int64_t first = 0;
    int64_t mine = cf_plan_share(n, g_nranks, g_rank, &first);
    unsigned char *buf = make_rows(dtype, nmemb, key, row0 + first, mine);
    int rc = cf_mpi_column_write(c, COMM, row0 + first, mine, buf, NULL, rb, width, &opt, err);
    free(buf);
    return rc;
#else
    (void)io;
    for (int64_t r = 0; r < n; r += piece) {
        int64_t k = n - r < piece ? n - r : piece;
        unsigned char *buf = make_rows(dtype, nmemb, key, row0 + r, k);
        int rc = cf_column_write(c, row0 + r, k, buf, NULL, rb, width, err);
        free(buf);
        if (rc) return rc;
    }
    return 0;
#endif
}

static int close_col(cf_error *err)
{
    cf_column *c = g_col;
    g_col = NULL;
#ifdef CRASH_WRITER_MPI
    return cf_mpi_column_close(c, COMM, err);
#else
    return cf_column_close(c, err);
#endif
}

static int open_col(const char *name, cf_error *err)
{
#ifdef CRASH_WRITER_MPI
    return cf_mpi_column_open(&g_col, g_file, COMM, name, err);
#else
    return cf_column_open(&g_col, g_file, name, err);
#endif
}

static int do_create(const op *o, cf_error *err)
{
    int rc;
#ifdef CRASH_WRITER_MPI
    cf_mpi_options opt;
    cf_mpi_options_init(&opt);
    opt.nfile = o->nfile;
    int64_t local = cf_plan_share(o->size, g_nranks, g_rank, NULL);
    rc = cf_mpi_column_create(&g_col, g_file, COMM, o->target, o->dtype, o->nmemb, local, &opt, NULL, err);
#else
    rc = cf_column_create(&g_col, g_file, o->target, o->dtype, o->nmemb, o->size, o->nfile, err);
#endif
    if (rc) return rc;
    if ((rc = write_rows(g_col, gen_key(g_seed, (uint64_t)o->gen), 0, o->size, o->piece, o->io, err))) return rc;
    return close_col(err);
}

static int do_append(const op *o, cf_error *err)
{
    int rc = 0;
#ifdef CRASH_WRITER_MPI
    /* libcolfile_mpi has no collective grow: rank 0 appends alone. */
    if (g_rank == 0) {
        cf_column *c = NULL;
        rc = cf_column_open(&c, g_file, o->target, err);
        int64_t old = rc ? 0 : cf_column_size(c);
        if (rc == 0) rc = cf_column_grow(c, o->rows, o->nfile, err);
        int64_t rb = rc ? 0 : cf_column_itemsize(c) * cf_column_nmemb(c);
        for (int64_t r = 0; rc == 0 && r < o->rows; r += o->piece) {
            int64_t k = o->rows - r < o->piece ? o->rows - r : o->piece;
            unsigned char *buf = make_rows(cf_column_dtype(c), cf_column_nmemb(c),
                                           gen_key(g_seed, (uint64_t)o->gen), old + r, k);
            rc = cf_column_write(c, old + r, k, buf, NULL, rb, cf_column_itemsize(c), err);
            free(buf);
        }
        if (c && (rc == 0 || g_on_error_close)) {
            cf_error e2;
            int rc2 = cf_column_close(c, rc ? &e2 : err);
            if (rc == 0) rc = rc2;
        }
    }
    /* every rank gets rank 0's verdict */
    int buf[2] = { rc, 0 };
    MPI_Bcast(buf, 1, MPI_INT, 0, COMM);
    rc = buf[0];
    if (rc && g_rank != 0) {
        err->code = rc;
        snprintf(err->message, sizeof err->message, "rank 0 failed the append");
    }
    return rc;
#else
    int rc2;
    if ((rc = open_col(o->target, err))) return rc;
    int64_t old = cf_column_size(g_col);
    if ((rc = cf_column_grow(g_col, o->rows, o->nfile, err))) return rc;
    if ((rc = write_rows(g_col, gen_key(g_seed, (uint64_t)o->gen), old, o->rows, o->piece, o->io, err))) return rc;
    rc2 = close_col(err);
    return rc2;
#endif
}

static int do_update(const op *o, cf_error *err)
{
    int rc;
    if ((rc = open_col(o->target, err))) return rc;
    if ((rc = write_rows(g_col, gen_key(g_seed, (uint64_t)o->gen), o->start, o->count, o->piece, o->io, err)))
        return rc;
    return close_col(err);
}

static int do_attr(const op *o, cf_error *err)
{
    int rc;
    if ((rc = open_col(o->target, err))) return rc;
    const char *dtype;
    int64_t nmemb;
    unsigned char data[64];
    int64_t g = o->gen;
    if (strcmp(o->type, "f8") == 0) {
        double v = (double)g + 0.5;
        memcpy(data, &v, 8);
        dtype = "<f8";
        nmemb = 1;
    } else if (strcmp(o->type, "i8x3") == 0) {
        int64_t v[3] = { g, -g, 7 * g };
        memcpy(data, v, sizeof v);
        dtype = "<i8";
        nmemb = 3;
    } else {
        int n = snprintf((char *)data, sizeof data, "v%" PRId64 "-", g);
        for (int k = 0; k < (int)(g % 5); k++) data[n++] = 'x';
        dtype = "<a1";
        nmemb = n;
    }
#ifdef CRASH_WRITER_MPI
    rc = cf_mpi_column_attr_set(g_col, COMM, o->name, dtype, nmemb, data, err);
#else
    rc = cf_column_attr_set(g_col, o->name, dtype, nmemb, data, err);
#endif
    if (rc) return rc;
    return close_col(err);
}

#ifdef CRASH_WRITER_MPI
static int serial_only(const op *o, cf_error *err)
{
    err->code = CF_EARG;
    snprintf(err->message, sizeof err->message, "crash_writer_mpi: %s is for serial writers", o->kind);
    return CF_EARG;
}
#define do_rm serial_only
#define do_truncate serial_only
#define do_repair serial_only
#else
static int do_rm(const op *o, cf_error *err)
{
    return cf_file_remove(g_file, o->target, err);
}

/* Mode "w": close the File and open it again emptied. */
static int do_truncate(const op *o, cf_error *err)
{
    (void)o;
    cf_file_close(g_file);
    g_file = NULL;
    return cf_file_open(&g_file, g_path, g_open_flags | CF_OPEN_TRUNCATE, err);
}

/* What `colfile repair` does: remove leftovers, then repair every column
 * (a column that needs nothing is left as it is). */
static int do_repair(const op *o, cf_error *err)
{
    (void)o;
    char **lines = NULL, **names = NULL;
    int64_t nlines = 0, nnames = 0;
    int rc = cf_file_cleanup(g_file, 0, &lines, &nlines, err);
    cf_names_free(lines, nlines);
    if (rc == 0) rc = cf_file_list(g_file, &names, &nnames, err);
    for (int64_t i = 0; rc == 0 && i < nnames; i++) {
        cf_column *c = NULL;
        unsigned fixed = 0;
        if ((rc = cf_column_open(&c, g_file, names[i], err))) break;
        rc = cf_column_repair(c, &fixed, err);
        cf_error e2;
        memset(&e2, 0, sizeof e2);
        int rc2 = cf_column_close(c, rc ? &e2 : err);
        if (!rc) rc = rc2;
    }
    cf_names_free(names, nnames);
    return rc;
}
#endif

static int run_op(const op *o, cf_error *err)
{
    if (strcmp(o->kind, "rm") == 0) return do_rm(o, err);
    if (strcmp(o->kind, "truncate") == 0) return do_truncate(o, err);
    if (strcmp(o->kind, "repair") == 0) return do_repair(o, err);
    if (strcmp(o->kind, "create") == 0 || strcmp(o->kind, "replace") == 0) return do_create(o, err);
    if (strcmp(o->kind, "append") == 0) return do_append(o, err);
    if (strcmp(o->kind, "update") == 0) return do_update(o, err);
    if (strcmp(o->kind, "attr") == 0) return do_attr(o, err);
    err->code = CF_EARG;
    snprintf(err->message, sizeof err->message, "crash_writer: unknown operation %s", o->kind);
    return CF_EARG;
}

/* ---- main ------------------------------------------------------------------- */

static void usage(void)
{
    fprintf(stderr, "usage: crash_writer FILE PLAN LOG [--start K] [--on-error close|abort] "
                    "[--open-flags N] [--pids DIR]\n");
    exit(2);
}

/* Only rank 0 logs, and mpiexec tears a job down at its first exit, which
 * could kill rank 0 before its "fail" line is written: before exiting
 * where it failed (--on-error abort), every rank waits, 5 s at most, until
 * all have come that far (rank 0 after logging). */
static void wait_for_log(void)
{
#ifdef CRASH_WRITER_MPI
    MPI_Request r;
    if (g_nranks < 2 || MPI_Ibarrier(COMM, &r) != MPI_SUCCESS) return;
    for (int i = 0; i < 5000; i++) {
        int done = 0;
        MPI_Test(&r, &done, MPI_STATUS_IGNORE);
        if (done) return;
        struct timespec t = { 0, 1000000 };
        nanosleep(&t, NULL);
    }
#endif
}

static void finish(int status)
{
#ifdef CRASH_WRITER_MPI
    MPI_Finalize();
#endif
    exit(status);
}

int main(int argc, char **argv)
{
#ifdef CRASH_WRITER_MPI
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(COMM, &g_rank);
    MPI_Comm_size(COMM, &g_nranks);
#endif
    if (argc < 4) usage();
    const char *path = argv[1], *plan = argv[2], *logpath = argv[3];
    int start = 0, extra_flags = 0;
    const char *pids = NULL;
    for (int i = 4; i < argc; i++) {
        if (strcmp(argv[i], "--start") == 0 && i + 1 < argc) start = atoi(argv[++i]);
        else if (strcmp(argv[i], "--on-error") == 0 && i + 1 < argc) g_on_error_close = strcmp(argv[++i], "abort") != 0;
        else if (strcmp(argv[i], "--open-flags") == 0 && i + 1 < argc) extra_flags = (int)strtol(argv[++i], NULL, 0);
        else if (strcmp(argv[i], "--pids") == 0 && i + 1 < argc) pids = argv[++i];
        else usage();
    }
    if (pids) {
        char p[4096];
        snprintf(p, sizeof p, "%s/%d", pids, g_rank);
        FILE *fh = fopen(p, "w");
        if (fh) {
            fprintf(fh, "%ld\n", (long)getpid());
            fclose(fh);
        }
    }
    if (read_plan(plan)) finish(2);
    if (g_rank == 0) {
        g_log = open(logpath, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0666);
        if (g_log < 0) {
            fprintf(stderr, "crash_writer: cannot open log %s: %s\n", logpath, strerror(errno));
            finish(2);
        }
    }
    cf_error err;
    memset(&err, 0, sizeof err);
    int flags = CF_OPEN_WRITE | CF_OPEN_CREATE | extra_flags;
    g_path = path;
    g_open_flags = flags;
#ifdef CRASH_WRITER_MPI
    int rc = cf_mpi_file_open(&g_file, COMM, path, flags, &err);
#else
    int rc = cf_file_open(&g_file, path, flags, &err);
#endif
    if (rc) {
        logf_("fail -1 %s %s", cf_error_name(rc), err.message[0] ? err.message : "<no message>");
        fprintf(stderr, "crash_writer: %s\n", err.message);
        finish(3);
    }
    logf_("ready %ld", (long)getpid());
    for (int k = 0; k < g_nops; k++) {
        const op *o = &g_ops[k];
        if (o->idx < start) continue;
        logf_("begin %d %s %s", o->idx, o->kind, o->target);
#ifdef CRASH_WRITER_MPI
        MPI_Barrier(COMM);
#endif
        memset(&err, 0, sizeof err);
        rc = run_op(o, &err);
        if (rc) {
            logf_("fail %d %s %s", o->idx, cf_error_name(rc), err.message[0] ? err.message : "<no message>");
            fprintf(stderr, "crash_writer: operation %d (%s %s) failed: %s\n", o->idx, o->kind, o->target,
                    err.message);
            if (!g_on_error_close) {
                wait_for_log();
                _exit(3);
            }
            cf_error e2;
            memset(&e2, 0, sizeof e2);
            int rc2 = 0;
            if (g_col) rc2 = close_col(&e2);
            if (g_file) cf_file_close(g_file);
            logf_("cleanup %d %s", rc2, rc2 ? e2.message : "");
            finish(3);
        }
        logf_("done %d", o->idx);
    }
    if (g_file) cf_file_close(g_file);
    logf_("end");
    free(g_ops);
    finish(0);
}
