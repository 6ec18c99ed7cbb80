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
 *
 * A writer may also post the next hand-over before it waits for the
 * previous one (two at most): then the helper goes from one to the next
 * without sleeping, and waking it up costs once per write instead of once
 * per hand-over.  Hand-overs are digested one at a time, in the order
 * posted, whoever digests them (they add to the same statistics).
 */
#include "digest.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "checksum.h"
#include "column.h"
#include "column_index.h"
#include "error.h"

/* A hand-over: QUEUED (posted) -> RUNNING (the helper or the writer has
 * it) -> DONE; then the writer's wait takes it off the queue.  States
 * change under the mutex and are read without it only to spin. */
enum { QUEUED, RUNNING, DONE };

/* How long (ns) the writer spins on a running hand-over before it sleeps:
 * about the time the helper needs for a few pieces.  Sleeping costs a
 * wake-up, which on a busy machine can be a scheduler time slice. */
#define CF__DIGEST_SPIN_NS 50000

typedef struct {
    atomic_int state;
    const unsigned char *p;
    int64_t n, blob, elem;
    uint32_t *sum, *crc;
} cf__handover;

struct cf__digester {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    cf_column *c;
    int quit;
    int busy;  /* a hand-over is RUNNING (they run one at a time, in order) */
    int head;  /* the oldest posted hand-over, q[head] */
    int count; /* posted and not yet waited for */
    cf__handover q[CF__DIGEST_QUEUE];
};

void cf__digest(cf_column *c, int64_t b, int64_t elem, const unsigned char *p, int64_t n, uint32_t *sum,
                uint32_t *crc)
{
    int64_t w = cf_column_itemsize(c);
    int64_t piece = w > 0 && CF__DIGEST_PIECE_BYTES / w > 0 ? CF__DIGEST_PIECE_BYTES / w : 1;
    while (n > 0) {
        int64_t m = n < piece ? n : piece;
        cf__column_ccrc_add(c, b, elem * w, p, m * w, sum, crc); /* and each chunk's */
        if (!cf__column_stats_off(c)) cf__column_stats_add(c, b, elem, p, m);
        p += m * w;
        elem += m;
        n -= m;
    }
}

/* The oldest hand-over not done, or NULL (under the mutex). */
static cf__handover *next_undone(cf__digester *d)
{
    for (int i = 0; i < d->count; i++) {
        cf__handover *h = &d->q[(d->head + i) % CF__DIGEST_QUEUE];
        if (h->state != DONE) return h;
    }
    return NULL;
}

/* Digest h, which the caller has just set RUNNING (and busy), then mark it
 * DONE; called and returns with the mutex held. */
static void digest_locked(cf__digester *d, cf__handover *h)
{
    pthread_mutex_unlock(&d->mu);
    cf__digest(d->c, h->blob, h->elem, h->p, h->n, h->sum, h->crc);
    pthread_mutex_lock(&d->mu);
    h->state = DONE;
    d->busy = 0;
    pthread_cond_broadcast(&d->cv);
}

static void *run(void *arg)
{
    cf__digester *d = arg;
    pthread_mutex_lock(&d->mu);
    for (;;) {
        cf__handover *h = NULL;
        while (!d->quit && (d->busy || !(h = next_undone(d)) || h->state != QUEUED))
            pthread_cond_wait(&d->cv, &d->mu);
        if (d->quit) break;
        h->state = RUNNING;
        d->busy = 1;
        digest_locked(d, h);
    }
    pthread_mutex_unlock(&d->mu);
    return NULL;
}

int cf__digester_start(cf__digester **out, cf_column *c, cf_error *err)
{
    cf__digester *d = calloc(1, sizeof *d);
    if (!d) return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", cf_column_path(c));
    d->c = c;
    for (int i = 0; i < CF__DIGEST_QUEUE; i++) atomic_init(&d->q[i].state, DONE);
    if (pthread_mutex_init(&d->mu, NULL) != 0) {
        free(d);
        return CF_FAIL(err, CF_EIO, "%s: cannot make a mutex", cf_column_path(c));
    }
    if (pthread_cond_init(&d->cv, NULL) != 0) {
        pthread_mutex_destroy(&d->mu);
        free(d);
        return CF_FAIL(err, CF_EIO, "%s: cannot make a condition variable", cf_column_path(c));
    }
    if (pthread_create(&d->thread, NULL, run, d) != 0) {
        pthread_cond_destroy(&d->cv);
        pthread_mutex_destroy(&d->mu);
        free(d);
        return CF_FAIL(err, CF_EIO, "%s: cannot start a helper thread", cf_column_path(c));
    }
    *out = d;
    return 0;
}

void cf__digester_post(cf__digester *d, const unsigned char *p, int64_t n, int64_t b, int64_t elem,
                       uint32_t *sum, uint32_t *crc)
{
    pthread_mutex_lock(&d->mu);
    if (d->count == CF__DIGEST_QUEUE) {
        /* a caller error: make room rather than overwrite posted work */
        pthread_mutex_unlock(&d->mu);
        cf__digester_wait(d);
        pthread_mutex_lock(&d->mu);
    }
    cf__handover *h = &d->q[(d->head + d->count) % CF__DIGEST_QUEUE];
    h->p = p;
    h->n = n;
    h->blob = b;
    h->elem = elem;
    h->sum = sum;
    h->crc = crc;
    h->state = QUEUED;
    d->count++;
    pthread_cond_broadcast(&d->cv);
    pthread_mutex_unlock(&d->mu);
}

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Spin until h is done or CF__DIGEST_SPIN_NS have passed. */
static void spin(cf__handover *h)
{
    int64_t until = now_ns() + CF__DIGEST_SPIN_NS;
    while (atomic_load_explicit(&h->state, memory_order_relaxed) != DONE) {
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
    if (d->count == 0) {
        pthread_mutex_unlock(&d->mu);
        return;
    }
    cf__handover *h = &d->q[d->head];
    if (h->state == QUEUED && !d->busy) {
        /* the helper has not started it: digest here rather than wait for
         * it to get a core (hand-overs still run one at a time, in order) */
        h->state = RUNNING;
        d->busy = 1;
        digest_locked(d, h);
    } else if (h->state != DONE) {
        pthread_mutex_unlock(&d->mu);
        spin(h);
        pthread_mutex_lock(&d->mu);
        while (h->state != DONE) pthread_cond_wait(&d->cv, &d->mu);
    }
    d->head = (d->head + 1) % CF__DIGEST_QUEUE;
    d->count--;
    pthread_mutex_unlock(&d->mu);
}

void cf__digester_stop(cf__digester *d)
{
    if (!d) return;
    while (d->count > 0) cf__digester_wait(d);
    pthread_mutex_lock(&d->mu);
    d->quit = 1;
    pthread_cond_broadcast(&d->cv);
    pthread_mutex_unlock(&d->mu);
    pthread_join(d->thread, NULL);
    pthread_cond_destroy(&d->cv);
    pthread_mutex_destroy(&d->mu);
    free(d);
}
