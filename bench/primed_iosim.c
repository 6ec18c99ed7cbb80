/* primed_iosim.c - memory priming for colfile-iosim, for the benchmarks only.
 *
 * A shared library that bench/iosim_sweep.py builds and loads into
 * colfile-iosim with LD_PRELOAD.  colfile-iosim calls
 * colfile_iosim_before_write() on every rank just before its timed write;
 * here it touches and frees COLFILE_BENCH_PRIME bytes of memory in huge
 * pages, as bench/prime.py does for the Python programs: on a virtual
 * machine that hands freed memory back to its host, the write then lands on
 * memory the host still backs (docs/performance.md, "Memory priming").
 */
#define _DEFAULT_SOURCE 1 /* MAP_ANONYMOUS */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

void colfile_iosim_before_write(void);

void colfile_iosim_before_write(void)
{
    const char *text = getenv("COLFILE_BENCH_PRIME");
    char *end = NULL;
    long long nbytes = text ? strtoll(text, &end, 10) : 0;
    if (!text || *end || nbytes <= 0) return;
    unsigned char *p = mmap(NULL, (size_t)nbytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        perror("primed_iosim: mmap");
        exit(1);
    }
#ifdef MADV_HUGEPAGE
    /* The memory a guest hands back to its host is whole 2 MiB blocks,
     * which 4 KiB faults do not take back. */
    madvise(p, (size_t)nbytes, MADV_HUGEPAGE);
#endif
    long page = sysconf(_SC_PAGESIZE);
    for (long long i = 0; i < nbytes; i += page > 0 ? page : 4096) ((volatile unsigned char *)p)[i] = 1;
    munmap(p, (size_t)nbytes);
}
