/* hstamp.h - the header stamp: the modification time of a column's
 * `header`, which colfile gives to the `colfile-v1` it commits with it, so
 * that its CRCs and statistics are trusted only while the header is the
 * one they were committed with (internal; docs/format.md 8.1).
 *
 * Every bigfile write session ends by rewriting `header` in place, which
 * sets its mtime to the time of that write.  colfile sets the mtime of the
 * header it commits one nanosecond back before publishing it, and the
 * mtime of colfile-v1 to the same value: no later write of the header,
 * even within the same clock tick, can give it that value again.  The
 * stamp lives in the files' times, not in their bytes, so the bytes of a
 * File stay the same from run to run. */
#ifndef CF_HSTAMP_H
#define CF_HSTAMP_H

#include <stdint.h>
#include <sys/stat.h>

#include "colfile.h"

typedef struct cf__hstamp {
    int known;          /* 0: no usable stamp */
    int64_t sec, nsec;  /* st_mtim */
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

/* Give the file open as fd the mtime s (a stamp the file system stored
 * before, so it keeps it exactly).  Nothing when s is unknown or the call
 * fails: readers then find the two times unequal, never equal wrongly. */
void cf__hstamp_apply(int fd, const cf__hstamp *s);

#endif
