/* readmap.h - reading blob bytes the page cache already holds through a
 * short-lived memory map instead of pread (internal).
 *
 * Why: pread copies page-cache bytes in the kernel, a page at a time, at
 * about 60% of the speed of a user-space memcpy; a map of the same pages
 * (populated in one call: large page-cache folios map cheaply) lets the
 * reader copy, checksum or gather straight from the cache.  Gathers
 * (strided and listed rows) then touch only the cache lines they need.
 *
 * When a map is not used, and the caller falls back to pread:
 * - the range is not entirely in the page cache (a cold read: pread's
 *   sequential read-ahead overlaps the disk with the copy, faults do not);
 * - mmap or populating fails, or the platform has no MADV_POPULATE_READ
 *   and mincore (only Linux is supported);
 * - the File was opened with CF_OPEN_NOMMAP (the caller passes no_mmap 1;
 *   Python sets it when COLFILE_NO_MMAP is neither unset, "" nor "0").
 *
 * Truncation (SIGBUS): a map covers only bytes that fstat shows the blob
 * holds, and populating reports a range that has gone since as an error
 * (not a signal), so a blob found short is CF_ESHORT as with pread.  What
 * remains is a blob cut shorter by another process *while* bytes are being
 * copied from its map (one window of at most CF__MAP_WINDOW_BYTES, or the
 * gather of a list of rows out of order): the process then gets SIGBUS.  colfile never shortens committed blob bytes
 * (new versions are written aside and renamed in, appends add blobs, repair
 * cuts only bytes beyond the header's rows); a tool that rewrites blobs in
 * place with O_TRUNC (bigfile recreating a column) while colfile reads it
 * can.  Open with CF_OPEN_NOMMAP where that may happen (docs/performance.md). */
#ifndef CF_READMAP_H
#define CF_READMAP_H

#include <stddef.h>
#include <stdint.h>

/* Ranges shorter than this are read with pread: a map costs two system
 * calls and a TLB flush. */
#define CF__MAP_MIN_BYTES ((int64_t)8 << 20)
/* Bytes mapped at a time.  Mapped pages count in the reader's resident set
 * while mapped (64 MiB: 8% of the 805 MB peers snapshot); 32 MiB windows
 * copied at 0.7x of this speed on the benchmark machine. */
#define CF__MAP_WINDOW_BYTES ((int64_t)64 << 20)

typedef struct {
    void *base;        /* what mmap returned, NULL when nothing is mapped */
    size_t len;
    const unsigned char *at; /* the first byte asked for */
} cf__map;

/* Map bytes [off, off+n) of the open file fd read-only and populate them
 * (readers map at most CF__MAP_WINDOW_BYTES at a time, except unsorted
 * gathers, which map a whole column).  Returns 1 with m->at pointing at byte off
 * when done, else 0 with nothing mapped: the caller should pread instead
 * (see above), which also reports a file that holds fewer than off+n
 * bytes.  With no_mmap (CF_OPEN_NOMMAP) always 0.  Never fails otherwise;
 * errno may change. */
int cf__map_range(int fd, int64_t off, int64_t n, int no_mmap, cf__map *m);

/* 1 if the probed pages of the caller's buffer [p, p+n) (its first, middle
 * and last page) are resident, i.e. already touched.  A plain copy into
 * untouched memory is faster through pread, which fills each fresh page as
 * it faults it in, than out of a map, which first populates the map's page
 * table and then faults the destination page by page (warm reads into new
 * arrays: about 0.8x of pread here); into touched buffers the map wins. */
int cf__buffer_touched(const void *p, int64_t n);

/* Undo cf__map_range (nothing when nothing is mapped). */
void cf__map_release(cf__map *m);

#endif
