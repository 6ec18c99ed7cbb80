/* hstamp.h - the header stamp: the modification time and size of a
 * column's `header` file, which colfile records in `colfile-v1` so that
 * its CRCs and statistics are trusted only for the header version they
 * were committed with (internal; docs/format.md 8.1).
 *
 * Every bigfile write session ends by rewriting `header` in place, which
 * sets its mtime to the time of that write.  colfile sets the mtime of the
 * header it commits one nanosecond back before publishing it, so no later
 * write, even within the same clock tick, can leave the recorded value. */
#ifndef CF_HSTAMP_H
#define CF_HSTAMP_H

#include <stdint.h>
#include <sys/stat.h>

#include "colfile.h"

typedef struct cf__hstamp {
    int known;          /* 0: no usable stamp */
    int64_t sec, nsec;  /* st_mtim */
    int64_t size;       /* st_size */
} cf__hstamp;

/* The stamp of a file as fstat/lstat describe it. */
void cf__hstamp_of(cf__hstamp *s, const struct stat *st);

/* 1 if both are known and equal. */
int cf__hstamp_equal(const cf__hstamp *a, const cf__hstamp *b);

/* On the freshly written file open as fd (nothing is written through it
 * afterwards): set its mtime strictly below the one the write gave it and
 * return in *out the stamp the file system stored (floored to its
 * granularity).  *out is unknown (known 0) when the file system will not
 * take an earlier mtime; never an error: the CRCs and statistics recorded
 * with it are then merely unknown to readers. */
void cf__hstamp_backdate(int fd, cf__hstamp *out);

#endif
