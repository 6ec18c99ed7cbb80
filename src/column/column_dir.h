/* column_dir.h - a column's directory taken as a whole, as removal and
 * renaming see it: whether a column is there, whether the directory holds
 * nothing but that column, and its writer lock taken through a File. */
#ifndef CF_COLUMN_DIR_H
#define CF_COLUMN_DIR_H

#include "colfile.h"
#include "writer_lock.h"

/* 1 if dir holds a `header`: a column is there (else a group, or nothing). */
int cf__column_dir_has_header(const char *dir);

/* 1 if dir holds nothing but regular format files of its own column: no
 * directory (no column below it), no foreign file, no hidden companion
 * such as the lock files of columns below it. */
int cf__column_dir_only_own(const char *dir);

/* Take the writer lock of the column at dir through f, so that f's own
 * open handles of it count as writers too. */
int cf__column_dir_lock(cf_file *f, const char *dir, cf__lock *lk, cf_error *err);

#endif
