/* column_stage.h - the commit protocol of a column (docs/format.md 8.3):
 * what creating and opening (column_create.c, column_open.c), staging
 * (column_stage.c) and committing (commit/column_commit.c) share
 * (internal). */
#ifndef CF_COLUMN_STAGE_H
#define CF_COLUMN_STAGE_H

#include "column.h"

/* The directory holding path (malloc'd; "." for a bare name). */
char *cf__column_parent_of(const char *path);

/* A new hidden sibling directory or name that does not exist yet:
 * <prefix><leaf>.<pid>.<random>.  With make_dir the directory is made. */
int cf__column_fresh_sibling(const char *path, const char *prefix, int make_dir, char **out, cf_error *err);

/* colfile-v1 of the version the handle holds into *text (NULL when
 * absent: unknown), its mtime in c->ext.xstamp.  A file that is there but
 * cannot be read (I/O error, memory) is an error naming it, never taken
 * for an absent one. */
int cf__column_read_ext(cf_column *c, char **text, size_t *len, cf_error *err);

/* The same for `leaf` (an older colfile-stats-v1): NULL when absent. */
int cf__column_read_optional(cf_column *c, const char *leaf, char **text, size_t *len, cf_error *err);

/* 1 if a live writer holds the column's lock: a torn marker is then an
 * update in progress (its rows are being written, as with bigfile), not
 * the trace of a crash. */
int cf__column_writer_alive(const cf_column *c);

/* A directory that a new column may replace: a column or an empty
 * directory, never a group holding other columns. */
int cf__column_check_replaceable(const char *dir, cf_error *err);

/* Write the column's `header`, its mtime set back (hstamp.h): replaced
 * atomically, or (private_) in place in a staging directory, *keep then
 * its open descriptor for the commit to fsync. */
int cf__column_write_header(cf_column *c, int private_, int *keep, cf_error *err);

/* colfile-v1: the CRCs, the statistics and the file's own checksum
 * (format.md 8.1 and 8.4): one file per column for all, written once per
 * commit, after the header, whose mtime it is given. */
int cf__column_write_ext(cf_column *c, int private_, int *keep, cf_error *err);

#endif
