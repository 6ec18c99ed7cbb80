/* digest_kernels.c - what each of a write's digest kernels costs per byte,
 * on the writing thread (the inline placement), in figures that other
 * processes on the machine do not move much.
 *
 * Every kernel runs over one write piece (CF__CHUNK_BYTES: what the
 * inline write digests, then copies into the file) that is already in the
 * cache, and over a large buffer walked piece by piece, as a write walks
 * the caller's array:
 *
 *     sysv      cf__sysv_add (bigfile's byte sum)
 *     crc       cf__crc32c_update
 *     sumcrc    cf__sum_crc32c (both, as the write computes them)
 *     stats     cf__column_stats_add (the chunk statistics)
 *     digest    cf__digest (all of the above: what the write adds)
 *     pwrite    pwrite(2) of the piece into a page-cache file (the floor)
 *
 * for columns f8x3 (uniform in [0, 1), as bench/pinned.py writes; f8nx3:
 * normal deviates), f8x1, f4x3, f4x1, i8x1, i4x1.  Printed: the best
 * time stamp counter ticks per byte of many repeats (in cache) or of
 * three walks (from memory), and ns per byte.  Run under callgrind, each
 * kernel's wrapper (bk_<kernel>) counts its instructions for the
 * instructions per byte: bench/digest_kernels.py does both.
 *
 *     BUILD/digest_kernels [--quick] [--only f8x3] [DIR]   (a scratch File in DIR, default /tmp)
 *     BUILD/digest_kernels --write MIB [--repeats N] [DIR]
 *
 * --quick: few repeats over 8 MiB (for callgrind); --only: one column.
 * --write: instead, whole writes of MIB MiB of f8x3 into the page cache,
 * N of each, interleaved: write(2) of the buffer after reserving its blocks
 * (what numpy.tofile does) against cf_column_write into a new File with
 * the digest inline and commits not fsynced (a pinned rank's write, without
 * Python or MPI); memory primed before each (bench/prime.py).  Printed:
 * CPU time of this thread in time stamp counter ticks per byte (median;
 * other processes move it less than elapsed time) and the median of the
 * per-repeat ratios tofile/colfile.
 */
#include <fcntl.h>
#include <sys/mman.h>
#include <ftw.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#include "checksum.h"
#include "colfile.h"
#include "column.h"
#include "column_handle.h"
#include "digest.h"

#define PIECE ((size_t)CF__CHUNK_BYTES)

static size_t big_bytes = (size_t)128 << 20;
static int hot_reps = 400, cold_walks = 3;
static int scratch_fd = -1;

/* Values like a simulation's: positions, masses, particle ids. */
static void fill(unsigned char *p, size_t n, const char *tok)
{
    uint64_t s = 0x243F6A8885A308D3u;
    for (size_t i = 0; i + 8 <= n; i += 8) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        double u = (double)(s >> 11) * 0x1p-53;
        if (!strcmp(tok, "f8")) {
            double v = u; /* bench/pinned.py's positions */
            memcpy(p + i, &v, 8);
        } else if (!strcmp(tok, "f8n")) {
            /* normal deviates (velocities), Box-Muller */
            double u2 = (double)((s * UINT64_C(0x9E3779B97F4A7C15)) >> 11) * 0x1p-53;
            double v = sqrt(-2.0 * log(1.0 - u)) * cos(6.283185307179586 * u2);
            memcpy(p + i, &v, 8);
        } else if (!strcmp(tok, "f4")) {
            float v[2] = { (float)(1000.0 * u - 100.0), (float)(1.0 + u) };
            memcpy(p + i, v, 8);
        } else if (!strcmp(tok, "i8")) {
            int64_t v = (int64_t)(i / 8) * 3 + (int64_t)(s & 1);
            memcpy(p + i, &v, 8);
        } else {
            int32_t v[2] = { (int32_t)(s & 0xfffff), (int32_t)((s >> 20) & 0xfffff) };
            memcpy(p + i, v, 8);
        }
    }
}

enum { K_SYSV, K_CRC, K_SUMCRC, K_STATS, K_DIGEST, K_PWRITE, K_COUNT };
static const char *names[K_COUNT] = { "sysv", "crc", "sumcrc", "stats", "digest", "pwrite" };

static uint32_t g_sum, g_crc;

#define BK(name, body)                                                                           \
    __attribute__((noinline)) static void bk_##name(cf_column *c, const unsigned char *p, size_t n, \
                                                    int64_t elem)                                \
    {                                                                                            \
        int64_t w = c->h.dtype.width;                                                            \
        (void)w;                                                                                 \
        (void)elem;                                                                              \
        body;                                                                                    \
    }
BK(sysv, g_sum = cf__sysv_add(g_sum, p, n))
BK(crc, g_crc = cf__crc32c_update(g_crc, p, n))
BK(sumcrc, cf__sum_crc32c(&g_sum, &g_crc, p, n))
BK(stats, cf__column_stats_add(c, 0, elem, p, (int64_t)n / w))
BK(digest, cf__digest(c, 0, elem, p, (int64_t)n / w, &g_sum, &g_crc))
BK(pwrite, if (pwrite(scratch_fd, p, n, 0) != (ssize_t)n) abort())

static void run(int k, cf_column *c, const unsigned char *p, size_t n, int64_t elem)
{
    switch (k) {
    case K_SYSV: bk_sysv(c, p, n, elem); break;
    case K_CRC: bk_crc(c, p, n, elem); break;
    case K_SUMCRC: bk_sumcrc(c, p, n, elem); break;
    case K_STATS: bk_stats(c, p, n, elem); break;
    case K_DIGEST: bk_digest(c, p, n, elem); break;
    default: bk_pwrite(c, p, n, elem); break;
    }
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static double tsc_ns(void)
{
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    uint64_t t0 = __rdtsc();
    do clock_gettime(CLOCK_MONOTONIC, &b);
    while ((double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec) < 2e7);
    uint64_t t1 = __rdtsc();
    return ((double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec)) / (double)(t1 - t0);
}

/* Touch n bytes of fresh memory in huge pages, then free them
 * (bench/prime.py: the next allocations get memory the host backs). */
static void prime(size_t n)
{
    unsigned char *m = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return;
    madvise(m, n, MADV_HUGEPAGE);
    for (size_t i = 0; i < n; i += 4096) m[i] = 1;
    munmap(m, n);
}

static double cpu_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* --write: see the top of the file. */
static int write_compare(const char *dir, size_t mib, int reps, double ns)
{
    size_t bytes = mib << 20;
    bytes -= bytes % 24;
    unsigned char *buf = aligned_alloc(4096, (bytes + 4095) / 4096 * 4096);
    double *t = calloc((size_t)reps * 3, sizeof *t);
    if (!buf || !t) return 1;
    fill(buf, bytes, "f8");
    char root[4096], raw[4200], fpath[4200];
    snprintf(root, sizeof root, "%s/digest-kernels-XXXXXX", dir);
    if (!mkdtemp(root)) return 1;
    snprintf(raw, sizeof raw, "%s/raw", root);
    snprintf(fpath, sizeof fpath, "%s/file", root);
    for (int r = 0; r < reps; r++) {
        for (int k = 0; k < 2; k++) {
            prime(bytes + bytes / 4);
            double c0 = cpu_ns();
            if (k == 0) {
                int fd = open(raw, O_WRONLY | O_CREAT | O_TRUNC, 0600);
                if (fd < 0 || posix_fallocate(fd, 0, (off_t)bytes) != 0) return 1;
                for (size_t at = 0; at < bytes;) {
                    ssize_t w = write(fd, buf + at, bytes - at);
                    if (w <= 0) return 1;
                    at += (size_t)w;
                }
                close(fd);
            } else {
                cf_error err;
                cf_file *f = NULL;
                cf_column *c = NULL;
                int64_t rows = (int64_t)(bytes / 24);
                if (cf_file_open(&f, fpath, CF_OPEN_WRITE | CF_OPEN_CREATE | CF_OPEN_NODURABLE | CF_OPEN_DIGEST_INLINE,
                                 &err) ||
                    cf_column_create(&c, f, "Position", "f8", 3, rows, 1, &err) ||
                    cf_column_write(c, 0, rows, buf, NULL, 24, 8, &err) || cf_column_close(c, &err)) {
                    fprintf(stderr, "digest_kernels: %s\n", err.message);
                    return 1;
                }
                cf_file_close(f);
            }
            t[(size_t)k * reps + r] = (cpu_ns() - c0) / ns / (double)bytes;
            if (k == 0) unlink(raw);
            else nftw(fpath, remove_one, 16, FTW_DEPTH | FTW_PHYS);
        }
        t[(size_t)2 * reps + r] = t[r] / t[(size_t)reps + r];
    }
    for (int k = 0; k < 3; k++) qsort(t + (size_t)k * reps, (size_t)reps, sizeof *t, by_value);
    printf("write %zu MiB of f8x3 into the page cache, %d repeats: CPU ticks per byte (medians)\n", bytes >> 20, reps);
    printf("write tofile %.4f colfile %.4f ratio %.3f\n", t[reps / 2], t[reps + reps / 2], t[2 * reps + reps / 2]);
    nftw(root, remove_one, 16, FTW_DEPTH | FTW_PHYS);
    free(t);
    free(buf);
    return 0;
}

int main(int argc, char **argv)
{
    static const struct { const char *tok; int64_t nmemb, width; } types[] = {
        { "f8", 3, 8 }, { "f8n", 3, 8 }, { "f8", 1, 8 }, { "f4", 3, 4 }, { "f4", 1, 4 }, { "i8", 1, 8 },
        { "i4", 1, 4 },
    };
    const char *dir = "/tmp", *only = NULL;
    size_t write_mib = 0;
    int write_reps = 5;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--only") && i + 1 < argc) {
            only = argv[++i];
        } else if (!strcmp(argv[i], "--write") && i + 1 < argc) {
            write_mib = (size_t)atol(argv[++i]);
        } else if (!strcmp(argv[i], "--repeats") && i + 1 < argc) {
            write_reps = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--quick")) {
            big_bytes = (size_t)8 << 20;
            hot_reps = 4;
            cold_walks = 1;
        } else {
            dir = argv[i];
        }
    }
    if (write_mib > 0) return write_compare(dir, write_mib, write_reps > 0 ? write_reps : 1, tsc_ns());
    char path[4096], fpath[4200];
    snprintf(path, sizeof path, "%s/digest-kernels-XXXXXX", dir);
    if (!mkdtemp(path)) return 1;
    snprintf(fpath, sizeof fpath, "%s/scratch", path);
    scratch_fd = open(fpath, O_RDWR | O_CREAT | O_TRUNC, 0600);
    unsigned char *big = aligned_alloc(4096, big_bytes);
    if (!big || scratch_fd < 0) return 1;
    cf_error err;
    cf_file *f = NULL;
    if (cf_file_open(&f, path, CF_OPEN_WRITE | CF_OPEN_NODURABLE | CF_OPEN_DIGEST_INLINE, &err)) {
        fprintf(stderr, "digest_kernels: %s\n", err.message);
        return 1;
    }
    double ns = tsc_ns();
    printf("digest_kernels: per byte of a %zu KiB piece; hot: in cache, best of %d; cold: walking %zu MiB, best "
           "of %d; 1 tick = %.3f ns\n",
           PIECE >> 10, hot_reps, big_bytes >> 20, cold_walks, ns);
    printf("%-6s %-7s %12s %12s %12s %12s\n", "column", "kernel", "hot tick/B", "hot ns/B", "cold tick/B",
           "cold ns/B");
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
        char label[32];
        snprintf(label, sizeof label, "%sx%lld", types[t].tok, (long long)types[t].nmemb);
        if (only && strcmp(only, label)) continue;
        int64_t w = types[t].width, rows = (int64_t)big_bytes / (w * types[t].nmemb);
        fill(big, big_bytes, types[t].tok);
        cf_column *c = NULL;
        const char *dtype = strcmp(types[t].tok, "f8n") ? types[t].tok : "f8";
        if (cf_column_create(&c, f, "x", dtype, types[t].nmemb, rows, 1, &err)) {
            fprintf(stderr, "digest_kernels: %s\n", err.message);
            return 1;
        }
        for (int k = 0; k < K_COUNT; k++) {
            if (k == K_PWRITE && t > 0 && !only) continue; /* the same for every column */
            double hot = 1e30, cold = 1e30;
            for (int r = 0; r < hot_reps; r++) {
                uint64_t t0 = __rdtsc();
                run(k, c, big, PIECE, 0);
                uint64_t dt = __rdtsc() - t0;
                if ((double)dt < hot) hot = (double)dt;
            }
            for (int r = 0; r < cold_walks; r++) {
                uint64_t t0 = __rdtsc();
                for (size_t at = 0; at + PIECE <= big_bytes; at += PIECE)
                    run(k, c, big + at, PIECE, (int64_t)(at / (size_t)w));
                uint64_t dt = __rdtsc() - t0;
                if ((double)dt < cold) cold = (double)dt;
            }
            hot /= (double)PIECE;
            cold /= (double)big_bytes;
            printf("%-6s %-7s %12.4f %12.4f %12.4f %12.4f\n", label, names[k], hot, hot * ns, cold, cold * ns);
        }
        c->stat.stats_off = 1;
        cf_column_close(c, NULL);
        cf_file_remove(f, "x", &err);
    }
    printf("checks %08x %08x\n", g_sum, g_crc);
    cf_file_close(f);
    close(scratch_fd);
    unlink(fpath);
    nftw(path, remove_one, 16, FTW_DEPTH | FTW_PHYS); /* the File and its catalog */
    free(big);
    return 0;
}
