/* hstamp.c - the header stamp (hstamp.h). */
#include "hstamp.h"

#include <fcntl.h>
#include <sys/stat.h>

void cf__hstamp_of(cf__hstamp *s, const struct stat *st)
{
    s->known = 1;
    s->sec = (int64_t)st->st_mtim.tv_sec;
    s->nsec = (int64_t)st->st_mtim.tv_nsec;
}

int cf__hstamp_equal(const cf__hstamp *a, const cf__hstamp *b)
{
    return a->known && b->known && a->sec == b->sec && a->nsec == b->nsec;
}

/* t1 < t0 */
static int earlier(const struct timespec *t1, const struct timespec *t0)
{
    return t1->tv_sec < t0->tv_sec || (t1->tv_sec == t0->tv_sec && t1->tv_nsec < t0->tv_nsec);
}

void cf__hstamp_backdate(int fd, cf__hstamp *out)
{
    struct stat st;
    out->known = 0;
    if (fstat(fd, &st) != 0) return;
    const struct timespec t0 = st.st_mtim;
    /* One nanosecond back; a file system that keeps coarser times floors
     * it to its granularity, which is still below t0.  One that rounds
     * instead gets a second try a whole second back. */
    for (int attempt = 0; attempt < 2; attempt++) {
        struct timespec ts[2];
        ts[0].tv_sec = 0;
        ts[0].tv_nsec = UTIME_OMIT;
        ts[1] = t0;
        if (attempt == 0) {
            if (ts[1].tv_nsec > 0) {
                ts[1].tv_nsec--;
            } else {
                ts[1].tv_sec--;
                ts[1].tv_nsec = 999999999;
            }
        } else {
            ts[1].tv_sec--;
        }
        if (futimens(fd, ts) != 0 || fstat(fd, &st) != 0) return;
        if (earlier(&st.st_mtim, &t0)) {
            cf__hstamp_of(out, &st);
            return;
        }
    }
}

void cf__hstamp_apply(int fd, const cf__hstamp *s)
{
    if (!s->known) return;
    struct timespec ts[2];
    ts[0].tv_sec = 0;
    ts[0].tv_nsec = UTIME_OMIT;
    ts[1].tv_sec = (time_t)s->sec;
    ts[1].tv_nsec = (long)s->nsec;
    (void)futimens(fd, ts);
}
