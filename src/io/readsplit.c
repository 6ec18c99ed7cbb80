/* readsplit.c - large reads out of the page cache on two threads. */
#include "readsplit.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "checksum.h"
#include "fsutil.h"
#include "platform.h"

/* Who runs the second job: nobody yet, the helper thread, or the caller. */
enum { UNCLAIMED, BY_HELPER, BY_CALLER };

typedef struct {
    void (*job)(void *);
    void *arg;
    atomic_int owner;
} second_job;

static int claim(second_job *j, int who)
{
    int expected = UNCLAIMED;
    return atomic_compare_exchange_strong(&j->owner, &expected, who);
}

static void *helper(void *arg)
{
    second_job *j = arg;
    if (claim(j, BY_HELPER)) j->job(j->arg);
    return NULL;
}

void cf__run_two(void (*job)(void *), void *a, void *b)
{
    second_job j = { job, b, UNCLAIMED };
    atomic_init(&j.owner, UNCLAIMED);
    /* the helper runs short jobs: a small stack is cheaper to set up */
    pthread_attr_t attr;
    int attr_ok = pthread_attr_init(&attr) == 0;
    if (attr_ok) pthread_attr_setstacksize(&attr, (size_t)256 << 10);
    pthread_t thread;
    int started = pthread_create(&thread, attr_ok ? &attr : NULL, helper, &j) == 0;
    if (attr_ok) pthread_attr_destroy(&attr);
    job(a);
    if (claim(&j, BY_CALLER)) job(b);
    if (started) pthread_join(thread, NULL);
}

typedef struct {
    int fd;
    unsigned char *dst;
    size_t n, piece;
    int64_t offset;
    int want_crc;
    const char *path;
    /* results */
    int rc;
    size_t got;
    uint32_t crc;
    cf_error *err; /* the caller's for the first part, so that no record is copied */
} part;

static void read_part(void *arg)
{
    part *p = arg;
    p->got = 0;
    p->crc = 0;
    p->rc = 0;
    while (p->got < p->n) {
        size_t want = p->n - p->got;
        if (p->piece && want > p->piece) want = p->piece;
        size_t got;
        p->rc = cf__pread_all(p->fd, p->dst + p->got, want, p->offset + (int64_t)p->got, &got, p->path, p->err);
        if (p->rc) return;
        if (p->want_crc) p->crc = cf__crc32c_update(p->crc, p->dst + p->got, got);
        p->got += got;
        if (got < want) return; /* end of file */
    }
}

int cf__pread_split(int fd, void *buf, size_t n, int64_t offset, size_t piece, uint32_t *crc, size_t *got,
                    const char *path, cf_error *err)
{
    /* The second half starts on a page boundary of the file, so each
     * thread copies whole cached pages. */
    size_t half = (size_t)(((offset + (int64_t)(n / 2)) & ~(int64_t)4095) - offset);
    int split = (int64_t)n >= CF__SPLIT_MIN_BYTES && half > 0 && half < n && cf__can_run_parallel() &&
                cf__range_cached(fd, offset, (int64_t)n);
    part a = { .fd = fd, .dst = buf, .n = split ? half : n, .piece = piece, .offset = offset, .want_crc = crc != NULL,
               .path = path, .err = err };
    part b;
    cf_error b_err;
    if (split) {
        b = (part){ .fd = fd, .dst = (unsigned char *)buf + half, .n = n - half, .piece = piece,
                    .offset = offset + (int64_t)half, .want_crc = crc != NULL, .path = path, .err = &b_err };
        cf__run_two(read_part, &a, &b);
    } else {
        read_part(&a);
    }
    if (a.rc) return a.rc;
    size_t total = a.got;
    uint32_t c = a.crc;
    if (split && a.got == a.n) {
        if (b.rc) {
            *err = b_err;
            return b.rc;
        }
        total += b.got;
        if (crc) c = cf__crc32c_combine(c, b.crc, b.got);
    }
    if (crc) *crc = cf__crc32c_combine(*crc, c, total);
    *got = total;
    return 0;
}
