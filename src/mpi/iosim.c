/* iosim.c - colfile-iosim: how fast can this machine create, write and read
 * a column with N ranks?  The successor of bigfile-iosim.
 *
 *   mpiexec -n 64 colfile-iosim --load medium --mode auto [--json] [PATH]
 *
 * Every rank holds the same number of rows; each phase is timed from a
 * barrier to the last rank's end (the maximum over ranks of MPI_Wtime), and
 * the data read back is compared with what was written.  The write phase's
 * CPU time (user + system, every thread of the process: getrusage) is summed
 * over ranks, so that the report tells how many cores the write kept busy.
 * Commits skip fsync (CF_OPEN_NODURABLE: page-cache speed) unless --durable is
 * given.  Exit status: 0, 1 on an I/O error or a mismatch, 2 on bad arguments.
 * `colfile iosim` (Python) takes the same options, prints the same report
 * and writes the same bytes.
 */
#define _XOPEN_SOURCE 700 /* nftw */
#include <dlfcn.h>
#include <errno.h>
#include <ftw.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "colfile_mpi.h"

#define COLUMN "iosim"

static const char usage[] =
    "usage: colfile-iosim [options] [PATH]\n"
    "Create, write and read one column collectively and report the time and\n"
    "throughput of each phase (the slowest rank's), then check the data.\n"
    "The write phase is the collective write and the commit (closing the\n"
    "column); the report also gives the write alone ('data') and the CPU time\n"
    "(user + system, all threads) the ranks spent in the write phase, summed\n"
    "over ranks, and that CPU time per second of the phase: the cores the\n"
    "write kept busy on average.  The Python command 'colfile iosim' takes\n"
    "the same options, prints the same report and writes the same bytes.\n"
    "\n"
    "  --load small|medium|large  rows of int32 per rank: 4Ki, 4Mi, 64Mi (default\n"
    "                             small; not with --rows, --dtype or --nmemb)\n"
    "  --rows N                   rows per rank (instead of --load)\n"
    "  --dtype D                  the column's dtype (default i4)\n"
    "  --nmemb M                  elements per row (default 1)\n"
    "  --mode throttled|aggregated|blob_owners|auto   how ranks write (default auto)\n"
    "  --nfile K                  blobs (default 0: automatic)\n"
    "  --concurrency C            ranks doing I/O at once (default 64)\n"
    "  --digest auto|inline|helper   where a write computes its sums, CRC32C\n"
    "                             and statistics: on the writing thread, on a\n"
    "                             helper thread, or (auto, the default) on a\n"
    "                             helper only when the ranks of the node leave\n"
    "                             a core free for it (JSON digest_used)\n"
    "  --durable                  fsync every commit (default: the page cache\n"
    "                             only, CF_OPEN_NODURABLE)\n"
    "  --json                     print one JSON object\n"
    "  --keep                     keep the data afterwards\n"
    "  -h, --help                 print this help and exit\n"
    "  PATH                       the File to use (created if needed; the column\n"
    "                             '" COLUMN "' in it is replaced); default: a new\n"
    "                             directory under $TMPDIR, removed afterwards\n";

typedef struct {
    int64_t rows, nmemb, nfile, concurrency;
    const char *dtype, *path, *mode_name, *digest_name;
    int mode, json, keep, durable, digest; /* digest: CF_OPEN_DIGEST_* or 0 */
    int load, shape; /* --load given; --rows, --dtype or --nmemb given */
} settings;

/* 0, or 2 after printing why (rank 0 only). */
static int parse(int argc, char **argv, settings *s, int rank)
{
    s->rows = 4096;
    s->nmemb = 1;
    s->nfile = 0;
    s->concurrency = 0;
    s->dtype = "i4";
    s->path = NULL;
    s->mode = CF_IO_AUTO;
    s->mode_name = "auto";
    s->digest = 0;
    s->digest_name = "auto";
    s->json = s->keep = s->durable = 0;
    s->load = s->shape = 0;
    int64_t *target;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        target = NULL;
        if (strcmp(a, "--json") == 0) {
            s->json = 1;
        } else if (strcmp(a, "--keep") == 0) {
            s->keep = 1;
        } else if (strcmp(a, "--durable") == 0) {
            s->durable = 1;
        } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            if (rank == 0) fputs(usage, stdout);
            return 1;
        } else if (strcmp(a, "--load") == 0 && v) {
            i++;
            if (strcmp(v, "small") == 0) s->rows = (int64_t)4 << 10;
            else if (strcmp(v, "medium") == 0) s->rows = (int64_t)4 << 20;
            else if (strcmp(v, "large") == 0) s->rows = (int64_t)64 << 20;
            else goto bad;
            s->load = 1;
        } else if (strcmp(a, "--mode") == 0 && v) {
            i++;
            if (strcmp(v, "throttled") == 0) s->mode = CF_IO_THROTTLED;
            else if (strcmp(v, "aggregated") == 0) s->mode = CF_IO_AGGREGATED;
            else if (strcmp(v, "blob_owners") == 0) s->mode = CF_IO_BLOB_OWNERS;
            else if (strcmp(v, "auto") == 0) s->mode = CF_IO_AUTO;
            else goto bad;
            s->mode_name = v;
        } else if (strcmp(a, "--digest") == 0 && v) {
            i++;
            if (strcmp(v, "inline") == 0) s->digest = CF_OPEN_DIGEST_INLINE;
            else if (strcmp(v, "helper") == 0) s->digest = CF_OPEN_DIGEST_HELPER;
            else if (strcmp(v, "auto") == 0) s->digest = 0;
            else goto bad;
            s->digest_name = v;
        } else if (strcmp(a, "--dtype") == 0 && v) {
            i++;
            s->dtype = v;
            s->shape = 1;
        } else if (strcmp(a, "--rows") == 0 && v) {
            target = &s->rows;
            s->shape = 1;
        } else if (strcmp(a, "--nmemb") == 0 && v) {
            target = &s->nmemb;
            s->shape = 1;
        } else if (strcmp(a, "--nfile") == 0 && v) {
            target = &s->nfile;
        } else if (strcmp(a, "--concurrency") == 0 && v) {
            target = &s->concurrency;
        } else if (a[0] != '-' && !s->path) {
            s->path = a;
        } else {
            goto bad;
        }
        if (target) {
            char *end;
            errno = 0;
            long long n = strtoll(v, &end, 10);
            if (errno || *end || end == v || n < 0) goto bad;
            *target = n;
            i++;
        }
        continue;
    bad:
        if (rank == 0) fprintf(stderr, "colfile-iosim: bad argument '%s'%s%s\n%s", a, v ? " " : "", v ? v : "", usage);
        return 2;
    }
    if (s->load && s->shape) {
        if (rank == 0)
            fprintf(stderr, "colfile-iosim: --load means int32 rows; give --rows with --dtype/--nmemb\n");
        return 2;
    }
    if (s->nmemb < 1) {
        if (rank == 0) fprintf(stderr, "colfile-iosim: --nmemb must be at least 1\n");
        return 2;
    }
    return 0;
}

/* The bytes written: a cheap function of the byte's offset in the column,
 * so that a rank can check its share without keeping a copy. */
static unsigned char pattern(uint64_t offset)
{
    return (unsigned char)((offset * 131u) ^ (offset >> 8) ^ (offset >> 19));
}

static void fill(unsigned char *p, int64_t n, uint64_t offset)
{
    for (int64_t i = 0; i < n; i++) p[i] = pattern(offset + (uint64_t)i);
}

/* Bytes of p that differ from the pattern. */
static int64_t mismatches(const unsigned char *p, int64_t n, uint64_t offset)
{
    int64_t bad = 0;
    for (int64_t i = 0; i < n; i++) bad += p[i] != pattern(offset + (uint64_t)i);
    return bad;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

/* rm -r of the temporary directory this program made. */
static void remove_tree(const char *path)
{
    if (nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS) != 0)
        fprintf(stderr, "colfile-iosim: cannot remove %s: %s\n", path, strerror(errno));
}

/* Seconds since `t0` on the slowest rank. */
static double slowest(double t0, MPI_Comm comm)
{
    double t = MPI_Wtime() - t0, max;
    MPI_Allreduce(&t, &max, 1, MPI_DOUBLE, MPI_MAX, comm);
    return max;
}

/* The same for two spans measured locally (one reduction for both). */
static void slowest2(double a, double b, double *max_a, double *max_b, MPI_Comm comm)
{
    double t[2] = { a, b }, max[2];
    MPI_Allreduce(t, max, 2, MPI_DOUBLE, MPI_MAX, comm);
    *max_a = max[0];
    *max_b = max[1];
}

/* CPU seconds (user + system) this process has used so far, all its
 * threads included (a rank's write may digest on a helper thread). */
static double cpu_seconds(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0) return 0.0;
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 + (double)ru.ru_stime.tv_sec +
           (double)ru.ru_stime.tv_usec * 1e-6;
}

/* Every rank calls colfile_iosim_before_write() just before the timed
 * write if a library loaded with the program (LD_PRELOAD) defines it: the
 * benchmarks prime memory there (bench/primed_iosim.c), so that this
 * program needs no options of theirs. */
static void before_write(void)
{
    void (*hook)(void) = NULL;
    void *self = dlopen(NULL, RTLD_NOW);
    if (!self) return;
    void *sym = dlsym(self, "colfile_iosim_before_write");
    memcpy(&hook, &sym, sizeof hook); /* POSIX: a function's address */
    if (hook) hook();
    dlclose(self);
}

/* `text` as a JSON string (a path may hold quotes, backslashes and
 * control characters). */
static void print_json_string(const char *text)
{
    putchar('"');
    for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
        if (*p == '"' || *p == '\\') printf("\\%c", *p);
        else if (*p < 0x20) printf("\\u%04x", *p);
        else putchar(*p);
    }
    putchar('"');
}

/* *out = a * b for a, b >= 0; 0 if that is above INT64_MAX. */
static int product(int64_t a, int64_t b, int64_t *out)
{
    if (a != 0 && b > INT64_MAX / a) return 0;
    *out = a * b;
    return 1;
}

static double gbps(int64_t bytes, double seconds)
{
    return seconds > 0 ? (double)bytes / seconds / 1e9 : 0.0;
}

static const char *mode_text(int mode)
{
    return mode == CF_IO_AGGREGATED    ? "aggregated"
           : mode == CF_IO_BLOB_OWNERS ? "blob_owners"
           : mode == CF_IO_THROTTLED   ? "throttled"
                                       : "auto";
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm comm = MPI_COMM_WORLD;
    int rank, nranks;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &nranks);
    settings s;
    int status = parse(argc, argv, &s, rank);
    if (status) {
        MPI_Finalize();
        return status == 1 ? 0 : status;
    }
    cf_error err;
    char dtype[CF_DTYPE_MAX];
    if (cf_dtype_normalize(s.dtype, dtype, &err)) {
        if (rank == 0) fprintf(stderr, "colfile-iosim: %s\n", err.message);
        MPI_Finalize();
        return 2;
    }
    int64_t itemsize = 0, rowbytes = 0, local_bytes = 0, total_bytes = 0;
    cf_dtype_itemsize(dtype, &itemsize, NULL); /* cannot fail: normalised above */
    if (!product(s.nmemb, itemsize, &rowbytes) || !product(s.rows, rowbytes, &local_bytes) ||
        !product(local_bytes, nranks, &total_bytes)) {
        if (rank == 0)
            fprintf(stderr,
                    "colfile-iosim: --rows %" PRId64 " x %d rank(s) of %" PRId64 " x %" PRId64 " bytes is above the "
                    "largest column, 2**63-1 bytes\n",
                    s.rows, nranks, s.nmemb, itemsize);
        MPI_Finalize();
        return 2;
    }

    /* The File: the given path, or a new temporary directory (rank 0
     * makes it, everyone uses its name). */
    char path[4096] = "";
    int temporary = !s.path;
    if (s.path) {
        snprintf(path, sizeof path, "%s", s.path);
    } else if (rank == 0) {
        const char *base = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
        snprintf(path, sizeof path, "%s/colfile-iosim-XXXXXX", base);
        if (!mkdtemp(path)) {
            fprintf(stderr, "colfile-iosim: cannot make a directory under %s: %s\n", base, strerror(errno));
            path[0] = '\0';
        }
    }
    MPI_Bcast(path, (int)sizeof path, MPI_CHAR, 0, comm);
    if (!path[0]) {
        MPI_Finalize();
        return 1;
    }

    unsigned char *data = malloc(local_bytes > 0 ? (size_t)local_bytes : 1);
    int ok = data != NULL, all_ok;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, comm);
    if (!all_ok) {
        if (rank == 0) fprintf(stderr, "colfile-iosim: cannot allocate %" PRId64 " bytes per rank\n", local_bytes);
        free(data);
        MPI_Finalize();
        return 1;
    }

    cf_mpi_options opt;
    cf_mpi_options_init(&opt);
    opt.mode = s.mode;
    opt.nfile = s.nfile;
    opt.concurrency = s.concurrency;
    cf_file *f = NULL;
    cf_column *c = NULL;
    int64_t first = 0, nfile = 0, bad = 0, bad_total = 0;
    double t_create = 0, t_write = 0, t_data = 0, t_read = 0, cpu_write = 0;
    int rc, helper = 0, helpers = 0;
    const char *digest_used = "inline";

    /* create */
    MPI_Barrier(comm);
    double t0 = MPI_Wtime();
    rc = cf_mpi_file_open(&f, comm, path, CF_OPEN_WRITE | CF_OPEN_CREATE | s.digest | (s.durable ? 0 : CF_OPEN_NODURABLE),
                          &err);
    if (rc == 0) rc = cf_mpi_column_create(&c, f, comm, COLUMN, dtype, s.nmemb, s.rows, &opt, &first, &err);
    t_create = slowest(t0, comm);
    if (rc) goto fail;
    nfile = cf_column_nfile(c);
    /* each rank's placement (its own CPUs may differ): "mixed" if they do */
    helper = strcmp(cf_file_digest_placement(f), "helper") == 0;
    MPI_Allreduce(&helper, &helpers, 1, MPI_INT, MPI_SUM, comm);
    digest_used = helpers == nranks ? "helper" : helpers == 0 ? "inline" : "mixed";

    /* write (and commit) */
    fill(data, local_bytes, (uint64_t)(first * rowbytes));
    before_write();
    MPI_Barrier(comm);
    t0 = MPI_Wtime();
    double cpu0 = cpu_seconds();
    rc = cf_mpi_column_write(c, comm, first, s.rows, data, NULL, rowbytes, rowbytes / s.nmemb, &opt, &err);
    double t1 = MPI_Wtime();
    int rc2 = cf_mpi_column_close(c, comm, &err);
    double t2 = MPI_Wtime(), cpu = cpu_seconds() - cpu0;
    c = NULL;
    if (rc == 0) rc = rc2;
    slowest2(t1 - t0, t2 - t0, &t_data, &t_write, comm);
    MPI_Allreduce(&cpu, &cpu_write, 1, MPI_DOUBLE, MPI_SUM, comm);
    if (rc) goto fail;

    /* read */
    memset(data, 0, (size_t)local_bytes);
    MPI_Barrier(comm);
    t0 = MPI_Wtime();
    rc = cf_mpi_column_open(&c, f, comm, COLUMN, &err);
    if (rc == 0) rc = cf_mpi_column_read(c, comm, first, s.rows, data, NULL, rowbytes, rowbytes / s.nmemb, &opt, &err);
    rc2 = cf_mpi_column_close(c, comm, &err);
    c = NULL;
    if (rc == 0) rc = rc2;
    t_read = slowest(t0, comm);
    if (rc) goto fail;

    bad = mismatches(data, local_bytes, (uint64_t)(first * rowbytes));
    MPI_Allreduce(&bad, &bad_total, 1, MPI_INT64_T, MPI_SUM, comm);

    if (!s.keep && rank == 0) {
        if (temporary) remove_tree(path);
        else if (cf_file_remove(f, COLUMN, &err) != 0) fprintf(stderr, "colfile-iosim: %s\n", err.message);
    }
    const char *used = mode_text(nranks < 2 ? CF_IO_THROTTLED
                                 : s.mode == CF_IO_AUTO ? cf_plan_mode(total_bytes, nranks, 0) : s.mode);
    int64_t conc = s.concurrency ? s.concurrency : CF_PLAN_CONCURRENCY;
    double cpu_per_wall = t_write > 0 ? cpu_write / t_write : 0.0;
    if (rank == 0 && s.json) {
        printf("{\"ranks\": %d, \"rows_per_rank\": %" PRId64 ", \"rows\": %" PRId64 ", \"dtype\": \"%s\", "
               "\"nmemb\": %" PRId64 ", \"bytes\": %" PRId64 ", \"mode\": \"%s\", \"mode_used\": \"%s\", "
               "\"nfile\": %" PRId64 ", \"concurrency\": %" PRId64 ", \"digest\": \"%s\", \"digest_used\": \"%s\", "
               "\"durable\": %s, \"path\": ",
               nranks, s.rows, s.rows * nranks, dtype, s.nmemb, total_bytes, s.mode_name, used, nfile, conc,
               s.digest_name, digest_used, s.durable ? "true" : "false");
        print_json_string(path);
        printf(", \"kept\": %s, "
               "\"create_seconds\": %.6f, \"write_seconds\": %.6f, \"write_data_seconds\": %.6f, \"write_GBps\": %.6f, "
               "\"write_cpu_seconds\": %.6f, \"write_cpu_per_wall\": %.6f, "
               "\"read_seconds\": %.6f, \"read_GBps\": %.6f, \"mismatched_bytes\": %" PRId64 ", \"verified\": %s}\n",
               s.keep ? "true" : "false", t_create, t_write, t_data, gbps(total_bytes, t_write), cpu_write,
               cpu_per_wall, t_read, gbps(total_bytes, t_read), bad_total, bad_total ? "false" : "true");
    } else if (rank == 0) {
        printf("colfile-iosim: %d ranks x %" PRId64 " rows of %s x %" PRId64 " = %" PRId64 " bytes\n", nranks, s.rows,
               dtype, s.nmemb, total_bytes);
        printf("  mode %s (%s), nfile %" PRId64 ", concurrency %" PRId64 ", digest %s (%s), %s, File %s%s\n",
               s.mode_name, used, nfile, conc, s.digest_name, digest_used, s.durable ? "durable" : "page cache", path,
               s.keep ? " (kept)" : "");
        printf("  create %10.4f s\n", t_create);
        printf("  write  %10.4f s %10.3f GB/s (data %.4f s, then the commit)\n", t_write, gbps(total_bytes, t_write),
               t_data);
        printf("  cpu    %10.4f s %10.2f cores busy writing (user+system, all ranks and threads)\n", cpu_write,
               cpu_per_wall);
        printf("  read   %10.4f s %10.3f GB/s\n", t_read, gbps(total_bytes, t_read));
        printf("  verify %s\n", bad_total ? "FAILED" : "ok");
        if (bad_total) printf("  %" PRId64 " bytes read back differ from those written\n", bad_total);
    }
    cf_file_close(f);
    free(data);
    MPI_Finalize();
    return bad_total ? 1 : 0;

fail:
    /* Every rank has the same code and message: rank 0 prints it. */
    if (rank == 0) fprintf(stderr, "colfile-iosim: %s (%s)\n", err.message, cf_error_name(rc));
    cf_mpi_column_close(c, comm, NULL);
    cf_file_close(f);
    if (rank == 0 && temporary && !s.keep) remove_tree(path);
    free(data);
    MPI_Finalize();
    return 1;
}
