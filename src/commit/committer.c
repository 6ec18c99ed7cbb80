/* committer.c - deferred commits: column handles closed on a thread of
 * their own, in the order they were handed over (colfile.h, "Deferred
 * commits"). */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "colfile_binding.h"
#include "error.h"

/* Handles waiting at most: a caller faster than the commits then waits for
 * room, so the memory the handles hold stays bounded. */
#define QUEUE_MAX 64

/* The thread waits up to LINGER_NS for BATCH handles before it commits
 * fewer: one wake-up then serves a batch, instead of one per handle (a
 * loop making small columns spent about 5% of its time on them). */
#define BATCH 8
#define LINGER_NS 1000000

struct cf_committer {
    pthread_mutex_t mu;
    pthread_cond_t changed;      /* queue, done or inflight moved */
    cf_column *queue[QUEUE_MAX]; /* waiting, oldest first */
    int queued;
    int64_t submitted;           /* sequence number of the last handle in */
    int64_t done;                /* ... of the last one closed */
    int inflight;                /* the thread is closing a batch */
    int paused;                  /* a fork is under way: start no batch */
    int held;                    /* cf_committer_hold: start no batch */
    int wanted;                  /* callers waiting in cf_committer_wait */
    int sleeping;                /* the thread waits without a timeout */
    int stopping;
    int started;
    pthread_t thread;
    cf_error *failed;            /* failures not yet taken, oldest first */
    int64_t nfailed, capfailed;
    cf_column *batch[QUEUE_MAX]; /* the thread's: the batch being closed */
    cf_error errs[QUEUE_MAX];
};

/* Keep the failure of one close (mu held).  Out of memory, the newest
 * kept failure is overwritten: room for 8 is made with the committer, so
 * failures are always reported. */
static void record(cf_committer *q, const cf_error *e)
{
    if (q->nfailed == q->capfailed) {
        int64_t cap = 2 * q->capfailed;
        cf_error *grown = realloc(q->failed, (size_t)cap * sizeof *grown);
        if (!grown) {
            q->failed[q->nfailed - 1] = *e;
            return;
        }
        q->failed = grown;
        q->capfailed = cap;
    }
    q->failed[q->nfailed++] = *e;
}

/* The condition variable, on the monotonic clock (its timed waits). */
static int init_changed(cf_committer *q)
{
    pthread_condattr_t a;
    if (pthread_condattr_init(&a) != 0) return -1;
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    int rc = pthread_cond_init(&q->changed, &a);
    pthread_condattr_destroy(&a);
    return rc == 0 ? 0 : -1;
}

/* Wait on changed (mu held) for at most LINGER_NS; 1 if the time ran out. */
static int linger(cf_committer *q)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    t.tv_nsec += LINGER_NS;
    if (t.tv_nsec >= 1000000000) {
        t.tv_sec++;
        t.tv_nsec -= 1000000000;
    }
    return pthread_cond_timedwait(&q->changed, &q->mu, &t) == ETIMEDOUT;
}

static void *commit_loop(void *arg)
{
    cf_committer *q = arg;
    int lingered = 0; /* a linger ran out since the last batch */
    pthread_mutex_lock(&q->mu);
    for (;;) {
        if (q->stopping && !q->queued) break;
        if (q->paused || (q->held && !q->stopping)) {
            pthread_cond_wait(&q->changed, &q->mu);
            continue;
        }
        if (!q->queued && lingered) { /* idle: the next submit wakes it */
            q->sleeping = 1;
            pthread_cond_wait(&q->changed, &q->mu);
            q->sleeping = 0;
            lingered = 0;
            continue;
        }
        if (q->queued < BATCH && !q->wanted && !q->stopping && !lingered) {
            lingered = linger(q); /* a BATCHth handle or a waiter ends it early */
            continue;
        }
        int n = q->queued;
        memcpy(q->batch, q->queue, (size_t)n * sizeof *q->batch);
        q->queued = 0;
        q->inflight = 1;
        pthread_cond_broadcast(&q->changed); /* room for waiting submits */
        pthread_mutex_unlock(&q->mu);
        /* the commits' system calls, with nothing held */
        int64_t bad = cf_column_close_many(q->batch, n, q->errs);
        pthread_mutex_lock(&q->mu);
        for (int i = 0; bad && i < n; i++)
            if (q->errs[i].code) record(q, &q->errs[i]);
        q->done += n;
        q->inflight = 0;
        lingered = 0;
        pthread_cond_broadcast(&q->changed);
    }
    pthread_mutex_unlock(&q->mu);
    return NULL;
}

int cf_committer_new(cf_committer **out, cf_error *err)
{
    cf_committer *q = calloc(1, sizeof *q);
    if (q) q->failed = malloc(8 * sizeof *q->failed);
    if (!q || !q->failed) {
        free(q);
        return CF_FAIL(err, CF_ENOMEM, "deferred commits: out of memory");
    }
    q->capfailed = 8;
    if (pthread_mutex_init(&q->mu, NULL) != 0) {
        free(q->failed);
        free(q);
        return CF_FAIL(err, CF_ENOMEM, "deferred commits: cannot make a mutex");
    }
    if (init_changed(q) != 0) {
        pthread_mutex_destroy(&q->mu);
        free(q->failed);
        free(q);
        return CF_FAIL(err, CF_ENOMEM, "deferred commits: cannot make a condition variable");
    }
    *out = q;
    return 0;
}

int64_t cf_committer_submit(cf_committer *q, cf_column *c)
{
    pthread_mutex_lock(&q->mu);
    if (!q->started && !q->stopping) {
        /* the thread is started by the first handle: a File that never
         * closes a column makes none */
        q->started = pthread_create(&q->thread, NULL, commit_loop, q) == 0;
    }
    if (!q->started) {
        /* no thread (or freed): close it here, counted and reported the same */
        int64_t seq = ++q->submitted;
        while (q->done < seq - 1) pthread_cond_wait(&q->changed, &q->mu);
        pthread_mutex_unlock(&q->mu);
        cf_error e;
        e.code = 0;
        int rc = cf_column_close(c, &e);
        pthread_mutex_lock(&q->mu);
        if (rc < 0) {
            if (e.code == 0) e.code = rc;
            record(q, &e);
        }
        q->done = seq;
        pthread_cond_broadcast(&q->changed);
        pthread_mutex_unlock(&q->mu);
        return seq;
    }
    while (q->queued == QUEUE_MAX) pthread_cond_wait(&q->changed, &q->mu);
    q->queue[q->queued++] = c;
    int64_t seq = ++q->submitted;
    if (q->sleeping || q->queued == BATCH) pthread_cond_broadcast(&q->changed);
    pthread_mutex_unlock(&q->mu);
    return seq;
}

int64_t cf_committer_done(cf_committer *q)
{
    pthread_mutex_lock(&q->mu);
    int64_t done = q->done;
    pthread_mutex_unlock(&q->mu);
    return done;
}

int64_t cf_committer_wait(cf_committer *q, int64_t seq)
{
    pthread_mutex_lock(&q->mu);
    if (seq <= 0 || seq > q->submitted) seq = q->submitted;
    if (q->done < seq) {
        q->wanted++; /* commit now, without lingering */
        pthread_cond_broadcast(&q->changed);
        while (q->done < seq) pthread_cond_wait(&q->changed, &q->mu);
        q->wanted--;
    }
    int64_t failed = q->nfailed;
    pthread_mutex_unlock(&q->mu);
    return failed;
}

int64_t cf_committer_take_errors(cf_committer *q, cf_error *errs, int64_t n)
{
    pthread_mutex_lock(&q->mu);
    int64_t k = n < q->nfailed ? n : q->nfailed;
    if (k > 0) {
        memcpy(errs, q->failed, (size_t)k * sizeof *errs);
        memmove(q->failed, q->failed + k, (size_t)(q->nfailed - k) * sizeof *q->failed);
        q->nfailed -= k;
    }
    pthread_mutex_unlock(&q->mu);
    return k > 0 ? k : 0;
}

void cf_committer_hold(cf_committer *q, int hold)
{
    pthread_mutex_lock(&q->mu);
    q->held = hold != 0;
    pthread_cond_broadcast(&q->changed);
    pthread_mutex_unlock(&q->mu);
}

void cf_committer_pause(cf_committer *q)
{
    pthread_mutex_lock(&q->mu);
    q->paused++;
    while (q->inflight) pthread_cond_wait(&q->changed, &q->mu);
    /* returns holding mu: the thread cannot be inside it at the fork */
}

void cf_committer_resume(cf_committer *q)
{
    q->paused--;
    pthread_cond_broadcast(&q->changed);
    pthread_mutex_unlock(&q->mu);
}

void cf_committer_forget_after_fork(cf_committer *q)
{
    /* The child's only thread is the one that paused: mu is its own.  The
     * waiting handles are the parent's to commit; the child releases its
     * copies only.  Its next handles get a thread of their own. */
    for (int i = 0; i < q->queued; i++) cf_column_forget(q->queue[i]);
    q->queued = 0;
    q->submitted = q->done = 0;
    q->inflight = 0;
    q->paused = 0;
    q->held = 0;
    q->wanted = 0;
    q->sleeping = 0;
    q->started = 0;
    q->nfailed = 0;
    pthread_mutex_unlock(&q->mu);
    /* made anew, not destroyed: destroying waits for the parent thread's
     * wait, which in the child never ends */
    memset(&q->changed, 0, sizeof q->changed);
    init_changed(q);
}

void cf_committer_free(cf_committer *q)
{
    if (!q) return;
    pthread_mutex_lock(&q->mu);
    q->stopping = 1;
    int started = q->started;
    pthread_cond_broadcast(&q->changed);
    pthread_mutex_unlock(&q->mu);
    if (started) pthread_join(q->thread, NULL); /* after the last batch */
    pthread_cond_destroy(&q->changed);
    pthread_mutex_destroy(&q->mu);
    free(q->failed);
    free(q);
}
