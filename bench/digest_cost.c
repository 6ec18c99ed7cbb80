/* digest_cost.c - the digest helper's work per 2 MiB hand-over, timed.
 *
 * What a large write's helper thread computes while the writer copies a
 * hand-over into the file (src/column/digest.h): the byte sum, the CRC32C and the
 * statistics of CF__DIGEST_CHUNK_BYTES, from memory that is not in the
 * cache (a 256 MiB buffer walked once per repeat), with statistics on and
 * off.  Each hand-over is timed alone and the best of all is kept, which
 * is the machine's speed when nothing else runs on the core; compare it
 * with the time the writer needs to copy 2 MiB into the page cache
 * (bench/stats_cost.c: megabytes per second of a write).  Two ways:
 *
 *     passes  cf__sysv_add, cf__crc32c_update, cf__column_stats_add, one
 *             after the other over the whole hand-over (the digest before
 *             cf__digest existed)
 *     digest  cf__digest (one pass over memory), when built with -DCF_DIGEST
 *
 * It uses the library's internals, so it is built against the sources:
 *
 *     cc -O2 -std=gnu11 -D_GNU_SOURCE [-DCF_DIGEST] -Iinclude -Isrc \
 *         bench/digest_cost.c BUILD/libcolfile.a -lpthread -lm -o BUILD/digest_cost
 *     BUILD/digest_cost [DIR]      (a scratch File is made in DIR, default /tmp)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "checksum.h"
#include "colfile.h"
#include "column.h"
#include "column_handle.h"
#include "digest.h"

#define BIG ((size_t)256 << 20)

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void fill(unsigned char *p, const char *tok)
{
    for (size_t i = 0; i < BIG / 8; i++) {
        if (!strcmp(tok, "f4")) {
            float v[2] = { (float)(i % 1000) - 400.25f, (float)(i % 777) * 0.5f + 1.0f };
            memcpy(p + 8 * i, v, 8);
        } else if (!strcmp(tok, "i8")) {
            int64_t v = (int64_t)((uint64_t)i * UINT64_C(0x9E3779B97F4A7C15) >> 20);
            memcpy(p + 8 * i, &v, 8);
        } else {
            double v = (double)(i % 1000) + 0.5 + 1e-3 * (double)(i % 7);
            memcpy(p + 8 * i, &v, 8);
        }
    }
}

int main(int argc, char **argv)
{
    static const struct { const char *tok; int64_t nmemb, width; } types[] = {
        { "f8", 3, 8 }, { "f4", 3, 4 }, { "i8", 1, 8 }, { "f4", 1, 4 },
    };
    const char *dir = argc > 1 ? argv[1] : "/tmp";
    char path[4096];
    snprintf(path, sizeof path, "%s/digest-cost-XXXXXX", dir);
    if (!mkdtemp(path)) return 1;
    unsigned char *big = malloc(BIG);
    if (!big) return 1;
    cf_error err;
    cf_file *f = NULL;
    if (cf_file_open(&f, path, CF_OPEN_WRITE | CF_OPEN_NODURABLE, &err)) {
        fprintf(stderr, "digest_cost: %s\n", err.message);
        return 1;
    }
    const int64_t hand = CF__DIGEST_CHUNK_BYTES;
    printf("digest_cost: microseconds per %lld KiB hand-over (not in cache), best of %d\n",
           (long long)(hand >> 10), 3 * (int)(BIG / (size_t)hand));
    printf("%-6s %-7s %12s %12s\n", "column", "way", "stats off", "stats on");
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
        int64_t w = types[t].width, rows = (int64_t)BIG / (w * types[t].nmemb);
        fill(big, types[t].tok);
        cf_column *c = NULL;
        if (cf_column_create(&c, f, "x", types[t].tok, types[t].nmemb, rows, 1, &err) ||
            cf_column_set_chunk_rows(c, 65536, &err)) {
            fprintf(stderr, "digest_cost: %s\n", err.message);
            return 1;
        }
#ifdef CF_DIGEST
        const int ways = 2;
#else
        const int ways = 1;
#endif
        for (int way = 0; way < ways; way++) {
            double best[2] = { 1e9, 1e9 };
            for (int off = 1; off >= 0; off--) {
                c->stat.stats_off = off;
                for (int rep = 0; rep < 3; rep++) {
                    uint32_t sum = 0, crc = 0;
                    for (size_t at = 0; at < BIG; at += (size_t)hand) {
                        const unsigned char *p = big + at;
                        int64_t n = hand / w, elem = (int64_t)at / w;
                        double t0 = now();
                        if (way == 0) {
                            sum = cf__sysv_add(sum, p, (size_t)hand);
                            crc = cf__crc32c_update(crc, p, (size_t)hand);
                            if (!off) cf__column_stats_add(c, 0, elem, p, n);
                        } else {
#ifdef CF_DIGEST
                            cf__digest(c, 0, elem, p, n, &sum, &crc);
#endif
                        }
                        double dt = now() - t0;
                        if (dt < best[off]) best[off] = dt;
                    }
                }
            }
            printf("%sx%-4lld %-7s %12.1f %12.1f\n", types[t].tok, (long long)types[t].nmemb,
                   way ? "digest" : "passes", best[1] * 1e6, best[0] * 1e6);
        }
        c->stat.stats_off = 1;
        cf_column_close(c, NULL);
        cf_file_remove(f, "x", &err);
    }
    cf_file_close(f);
    rmdir(path);
    free(big);
    return 0;
}
