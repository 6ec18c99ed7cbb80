/* column_version.h - the version of a column that a handle opened: its
 * directory, held open (internal).
 *
 * A new version of a column is made in a directory of its own and swapped
 * in at the column's name, and the old directory is then deleted; rm
 * deletes the column (docs/format.md 8.3).  A handle that holds the
 * directory it opened and looks every file up below it reads the files of
 * that version whatever is published at the name meanwhile, as long as
 * they exist; once one it needs is gone it says so (CF_EREPLACED) instead
 * of applying its header to the files of another version.  Descriptors
 * already open keep the old bytes (an unlinked file lives on).
 *
 * Handles of published columns hold their directory (c->dirfd); new
 * columns before their first commit, and the handles that published them,
 * hold none: they hold the writer lock, so nothing replaces them, and look
 * files up by c->dir. */
#ifndef CF_COLUMN_VERSION_H
#define CF_COLUMN_VERSION_H

#include <stddef.h>
#include <stdint.h>

#include "column.h"

struct cf__stamp;
struct stat;

/* Open the directory c->dir and hold it as c->dirfd (replacing one held).
 * CF_ENOENT if nothing is there, CF_ENOTFILE if it is not a directory,
 * CF_EIO otherwise (the message says so when descriptors ran out). */
int cf__version_hold(cf_column *c, cf_error *err);

/* Close the held directory, if any. */
void cf__version_release(cf_column *c);

/* openat(2) of `leaf` in the version (flags as open's; mode for O_CREAT):
 * a descriptor, or -1 with errno. */
int cf__version_openat(const cf_column *c, const char *leaf, int flags);

/* cf__read_file of `leaf` in the version; messages name c->dir/leaf. */
int cf__version_read(const cf_column *c, const char *leaf, char **data, size_t *len, cf_error *err);
/* The same, also giving the fstat of the file read (st may be NULL). */
int cf__version_read_stat(const cf_column *c, const char *leaf, char **data, size_t *len, struct stat *st,
                          cf_error *err);

/* 1 if `leaf` exists in the version. */
int cf__version_has(const cf_column *c, const char *leaf);
/* 1 and its stat in *st if `leaf` is in the version (no link followed). */
int cf__version_stat(const cf_column *c, const char *leaf, struct stat *st);
/* 1 if `leaf`, seen as *seen, is still that same file and the header has
 * not changed since the handle read it: a file seen before and after a
 * look at something else existed throughout it. */
int cf__version_same_file(const cf_column *c, const char *leaf, const struct stat *seen);

/* 1 if a fresh lstat of `leaf` in the version ("": the directory itself)
 * matches the catalog stamp s. */
int cf__version_still(const cf_column *c, const char *leaf, const struct cf__stamp *s);

/* 1 if the column's name no longer leads to the directory held (it leads
 * to another one or to nothing).  0 when none is held. */
int cf__version_moved(const cf_column *c);

/* 1 if the version held is no longer the column: the column's name now
 * leads to another directory or to nothing, or the version's header is
 * gone (a removal under way).  0 when no directory is held. */
int cf__version_gone(const cf_column *c);

/* 1 if the version's header is no longer the one this handle read at open
 * (or last committed itself: c->hstamp): another process committed an
 * append or an in-place update to the directory held, or removed it.  0
 * when the stamp is unknown. */
int cf__version_header_changed(const cf_column *c);
/* 1 if the rows this handle reads may have been changed by another
 * process since it opened them: cf__version_gone, cf__version_header_changed,
 * or an in-place update under way (colfile-torn present, and the handle
 * did not find it at open). */
int cf__version_changed(const cf_column *c);
/* Fill err with CF_EREPLACED for a read whose version changed in place
 * since the handle opened it (cf__version_changed): its recorded CRC32C,
 * sums and statistics describe rows that are no longer those on disk;
 * returns CF_EREPLACED.  `what` names the file read. */
int cf__version_changed_error(const cf_column *c, const char *what, cf_error *err);
/* Fill err with CF_EREPLACED for a read that needs the files of a version
 * that is gone; returns CF_EREPLACED. */
int cf__version_replaced(const cf_column *c, cf_error *err);

/* For a writer about to make its first change (its lock taken): 0 if the
 * version it opened is still the column; CF_EREPLACED if the column was
 * replaced or removed since; CF_EBUSY if another writer committed a change
 * to it since (its header differs from the one read at open; not checked
 * for writers that share the lock). */
int cf__version_check(const cf_column *c, cf_error *err);

/* The held directory's identity (device, inode) for a metadata snapshot;
 * 0, 0 when none is held. */
void cf__version_id(const cf_column *c, uint64_t id[2]);

/* Hold c->dir as cf__version_hold does, and require it to be the directory
 * whose identity is id (from cf__version_id in another process):
 * CF_EREPLACED when it is not. */
int cf__version_hold_as(cf_column *c, const uint64_t id[2], cf_error *err);

#endif
