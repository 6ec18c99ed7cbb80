/* readsplit.h - large reads out of the page cache on two threads
 * (internal).
 *
 * Why: reading cached bytes into a new array is bound by the CPU, not the
 * disk: the kernel copies page by page and the destination's pages fault
 * in as they are first written.  Both halves of that work run on separate
 * cores at once; on the 2-core benchmark machine a 16 MiB pread into
 * fresh memory took 6.2 ms alone and 3.4 ms as two halves on two threads,
 * and the 805 MB peers snapshot read into touched buffers 0.063 s out of
 * memory maps, 0.032 s this way.  Reads from disk are left whole: two threads
 * sharing one descriptor would split its sequential read-ahead. */
#ifndef CF_READSPLIT_H
#define CF_READSPLIT_H

#include <stddef.h>
#include <stdint.h>

#include "colfile.h"

/* Reads shorter than this stay on the calling thread.  Starting and
 * joining a thread costs 30-80 us on the benchmark machine, and waking the
 * other CPU more: with memory primed (docs/performance.md), 1% of the peers
 * snapshot's rows (four reads of 0.7-4 MB) took 1.1-1.4 ms split at 1 MiB
 * and 0.8-0.9 ms whole, where a copy runs at about 10 GB/s.  A second
 * thread kept per File (started once, woken for each read of 1 MiB or
 * more) was tried as well (2026-11-25): those four reads took as long as
 * whole ones, and stopping the thread added about 80 us to each File
 * close. */
#define CF__SPLIT_MIN_BYTES ((int64_t)8 << 20)

/* Run job(a) on this thread and job(b) on a helper thread at the same
 * time; if the helper has not started job(b) by the time job(a) is done
 * (no free core), this thread runs it too rather than wait.  Returns when
 * both are done.  The jobs must not share mutable state. */
void cf__run_two(void (*job)(void *), void *a, void *b);

/* Read n bytes at `offset` of fd into buf, as cf__pread_all does, in
 * requests of at most `piece` bytes (0: no limit), adding each to *crc
 * after it is read when crc is not NULL.  When n >= CF__SPLIT_MIN_BYTES,
 * this thread may run on more than one CPU and the page cache holds the
 * whole range, a helper thread reads the second half meanwhile (if the
 * helper has not started by the time the first half is done, the caller
 * reads it too, rather than wait for a core).  The result is the same
 * either way: *got is the number of bytes read before the end of the file,
 * *crc covers exactly those bytes.  CF_EIO naming `path`. */
int cf__pread_split(int fd, void *buf, size_t n, int64_t offset, size_t piece, uint32_t *crc, size_t *got,
                    const char *path, cf_error *err);

#endif
