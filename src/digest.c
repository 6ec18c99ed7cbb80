/* digest.c - checksums and statistics on a helper thread.
 *
 * The writing thread posts a hand-over (2 MiB), copies it into the file and
 * waits; meanwhile the helper digests the same bytes (cf__digest).  Two
 * things keep the digest off the writer's critical path:
 *
 * - cf__digest makes one pass over memory: it works in pieces small
 *   enough to stay in the helper's L2 cache, and for each piece computes
 *   the byte sum and CRC32C together (cf__sum_crc32c), then the statistics
 *   from the cached bytes.
 * - a hand-over the helper has not started when the writer is done with
 *   its copy (the helper was not scheduled: other processes hold the
 *   cores) is taken back and digested by the writer, instead of waiting
 *   for the helper to get a core.  Who digests a hand-over never changes
 *   the result: it is the same function on the same bytes.
 */
#include "digest.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "checksum.h"
#include "column.h"
#include "error.h"

/* IDLE -> POSTED (writer) -> RUNNING (helper) -> DONE (helper) -> IDLE
 * (writer), or POSTED -> IDLE when the writer takes the work back.  Changed
 * under the mutex; read without it only to spin. */
enum { IDLE, POSTED, RUNNING, DONE, QUIT };

/* How long (ns) the writer spins on a running hand-over before it sleeps:
 * about the time the helper needs for a few pieces.  Sleeping costs a
 * wake-up, which on a busy machine can be a scheduler time slice. */
#define CF__DIGEST_SPIN_NS 50000

struct cf__digester {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    atomic_int state;
    cf_column *c;
    /* the posted work */
    const unsigned char *p;
    int64_t n, blob, elem;
    uint32_t *sum, *crc;
};

void cf__digest(cf_column *c, int64_t b, int64_t elem, const unsigned char *p, int64_t n, uint32_t *sum,
                uint32_t *crc)
{
    int64_t w = c->h.dtype.width;
    int64_t piece = w > 0 && CF__DIGEST_PIECE_BYTES / w > 0 ? CF__DIGEST_PIECE_BYTES / w : 1;
    while (n > 0) {
        int64_t m = n < piece ? n : piece;
        cf__sum_crc32c(sum, crc, p, (size_t)(m * w));
        if (!c->stats_off) cf__column_stats_add(c, b, elem, p, m);
        p += m * w;
        elem += m;
        n -= m;
    }
}

static void digest_posted(cf__digester *d)
{
    cf__digest(d->c, d->blob, d->elem, d->p, d->n, d->sum, d->crc);
}

static void *run(void *arg)
{
    cf__digester *d = arg;
    pthread_mutex_lock(&d->mu);
    for (;;) {
        while (d->state != POSTED && d->state != QUIT) pthread_cond_wait(&d->cv, &d->mu);
        if (d->state == QUIT) break;
        d->state = RUNNING;
        pthread_mutex_unlock(&d->mu);
        digest_posted(d);
        pthread_mutex_lock(&d->mu);
        d->state = DONE;
        pthread_cond_broadcast(&d->cv);
    }
    pthread_mutex_unlock(&d->mu);
    return NULL;
}

int cf__digester_start(cf__digester **out, cf_column *c, cf_error *err)
{
    cf__digester *d = calloc(1, sizeof *d);
    if (!d) return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", c->path);
    d->c = c;
    atomic_init(&d->state, IDLE);
    if (pthread_mutex_init(&d->mu, NULL) != 0) {
        free(d);
        return CF_FAIL(err, CF_EIO, "%s: cannot make a mutex", c->path);
    }
    if (pthread_cond_init(&d->cv, NULL) != 0) {
        pthread_mutex_destroy(&d->mu);
        free(d);
        return CF_FAIL(err, CF_EIO, "%s: cannot make a condition variable", c->path);
    }
    if (pthread_create(&d->thread, NULL, run, d) != 0) {
        pthread_cond_destroy(&d->cv);
        pthread_mutex_destroy(&d->mu);
        free(d);
        return CF_FAIL(err, CF_EIO, "%s: cannot start a helper thread", c->path);
    }
    *out = d;
    return 0;
}

void cf__digester_post(cf__digester *d, const unsigned char *p, int64_t n, int64_t b, int64_t elem,
                       uint32_t *sum, uint32_t *crc)
{
    pthread_mutex_lock(&d->mu);
    d->p = p;
    d->n = n;
    d->blob = b;
    d->elem = elem;
    d->sum = sum;
    d->crc = crc;
    d->state = POSTED;
    pthread_cond_broadcast(&d->cv);
    pthread_mutex_unlock(&d->mu);
}

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Spin until the helper is done or CF__DIGEST_SPIN_NS have passed. */
static void spin(cf__digester *d)
{
    int64_t until = now_ns() + CF__DIGEST_SPIN_NS;
    while (atomic_load_explicit(&d->state, memory_order_relaxed) != DONE) {
        for (int i = 0; i < 16; i++) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
            __builtin_ia32_pause();
#endif
        }
        if (now_ns() > until) return;
    }
}

void cf__digester_wait(cf__digester *d)
{
    pthread_mutex_lock(&d->mu);
    if (d->state == POSTED) {
        /* the helper has not started: digest here rather than wait for it */
        d->state = IDLE;
        pthread_mutex_unlock(&d->mu);
        digest_posted(d);
        return;
    }
    pthread_mutex_unlock(&d->mu);
    spin(d);
    pthread_mutex_lock(&d->mu);
    while (d->state != DONE) pthread_cond_wait(&d->cv, &d->mu);
    d->state = IDLE;
    pthread_mutex_unlock(&d->mu);
}

void cf__digester_stop(cf__digester *d)
{
    if (!d) return;
    pthread_mutex_lock(&d->mu);
    d->state = QUIT;
    pthread_cond_broadcast(&d->cv);
    pthread_mutex_unlock(&d->mu);
    pthread_join(d->thread, NULL);
    pthread_cond_destroy(&d->cv);
    pthread_mutex_destroy(&d->mu);
    free(d);
}
