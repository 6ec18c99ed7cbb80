/* readmap.c - page-cache reads through a short-lived memory map (see
 * readmap.h for when and why, and what is left of the SIGBUS risk). */
#undef _POSIX_C_SOURCE
#define _DEFAULT_SOURCE 1
#include "readmap.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#if defined(__linux__)
#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22 /* Linux 5.14 */
#endif
#define CF__CAN_MAP 1
#else
#define CF__CAN_MAP 0
#endif

/* One page in this many bytes is probed for residency: large enough that
 * probing costs microseconds per window, small enough to catch a range
 * that was never read or was evicted (the cache drops whole runs). */
#define CF__MAP_PROBE_BYTES ((int64_t)2 << 20)

#if CF__CAN_MAP
/* 1 if the probed pages of [p, p+len) are all in the page cache. */
static int resident(unsigned char *p, size_t len, size_t page)
{
    unsigned char v;
    size_t last = (len - 1) / page * page;
    for (size_t at = 0;; at += (size_t)CF__MAP_PROBE_BYTES) {
        if (at > last) at = last; /* the last page too */
        if (mincore(p + at, page, &v) != 0 || !(v & 1)) return 0;
        if (at == last) return 1;
    }
}
#endif

int cf__map_range(int fd, int64_t off, int64_t n, int no_mmap, cf__map *m)
{
    m->base = NULL;
    m->len = 0;
    m->at = NULL;
#if CF__CAN_MAP
    if (n <= 0 || no_mmap) return 0;
    struct stat st;
    if (fstat(fd, &st) != 0 || (int64_t)st.st_size < off + n) return 0;
    long pg = sysconf(_SC_PAGESIZE);
    if (pg <= 0) return 0;
    int64_t start = off - off % pg;
    size_t len = (size_t)(off + n - start);
    void *p = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, (off_t)start);
    if (p == MAP_FAILED) return 0;
    /* Cold ranges go to pread; populating reports a range cut short since
     * fstat as EFAULT instead of a signal. */
    if (!resident(p, len, (size_t)pg) || madvise(p, len, MADV_POPULATE_READ) != 0) {
        munmap(p, len);
        return 0;
    }
    m->base = p;
    m->len = len;
    m->at = (const unsigned char *)p + (off - start);
    return 1;
#else
    (void)fd;
    (void)off;
    (void)n;
    (void)no_mmap;
    return 0;
#endif
}

int cf__buffer_touched(const void *p, int64_t n)
{
#if CF__CAN_MAP
    if (n <= 0) return 1;
    long pg = sysconf(_SC_PAGESIZE);
    if (pg <= 0) return 1;
    const int64_t probes[3] = {0, n / 2, n - 1};
    for (int i = 0; i < 3; i++) {
        uintptr_t at = (uintptr_t)p + (uintptr_t)probes[i];
        unsigned char v;
        if (mincore((void *)(at - at % (uintptr_t)pg), (size_t)pg, &v) != 0 || !(v & 1)) return 0;
    }
    return 1;
#else
    (void)p;
    (void)n;
    return 1;
#endif
}

void cf__map_release(cf__map *m)
{
#if CF__CAN_MAP
    if (m->base) munmap(m->base, m->len);
#endif
    m->base = NULL;
    m->len = 0;
    m->at = NULL;
}
