/* digest.c - checksums and statistics on a helper thread. */
#include "digest.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "checksum.h"
#include "column.h"
#include "error.h"

enum { IDLE, POSTED, DONE, QUIT };

struct cf__digester {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int state;
    cf_column *c;
    /* the posted work */
    const unsigned char *p;
    int64_t n, blob, elem;
    uint32_t *sum, *crc;
};

static void *run(void *arg)
{
    cf__digester *d = arg;
    pthread_mutex_lock(&d->mu);
    for (;;) {
        while (d->state != POSTED && d->state != QUIT) pthread_cond_wait(&d->cv, &d->mu);
        if (d->state == QUIT) break;
        pthread_mutex_unlock(&d->mu);
        size_t bytes = (size_t)(d->n * d->c->h.dtype.width);
        *d->sum = cf__sysv_add(*d->sum, d->p, bytes);
        *d->crc = cf__crc32c_update(*d->crc, d->p, bytes);
        if (!d->c->stats_off) cf__column_stats_add(d->c, d->blob, d->elem, d->p, d->n);
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
    d->state = IDLE;
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

void cf__digester_wait(cf__digester *d)
{
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
