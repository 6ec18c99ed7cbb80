/* names.h - keeping names and paths inside the File (internal).
 *
 * cf_name_check (colfile.h) judges a name by its bytes alone.  The checks
 * here also look at the disk: what the name leads to below a File root. */
#ifndef CF_NAMES_H
#define CF_NAMES_H

#include "colfile.h"

/* 1 if `name` is a file name colfile or bigfile may keep in a column or
 * group directory: header, attr, attr-v2, a blob (6+ uppercase hex digits),
 * colfile-* extension files, or a hidden .colfile / temporary file. */
int cf__is_format_file_name(const char *name);

/* Room kept beyond a column directory's path for the longest file colfile
 * puts in it (".colfile-v1.tmp.<pid>.<8 hex>" and the like). */
#define CF__PATH_ROOM 96

/* cf_name_check of a name given for the File at `root`, the message
 * starting with root: which File the name was refused in. */
int cf__name_check_in(const char *root, const char *name, cf_error *err);

/* Check that the column, group or attribute-block `name` (already accepted
 * by cf_name_check) stays inside the File whose directory is `root`:
 *  - root/name plus CF__PATH_ROOM fits PATH_MAX;
 *  - no component below root that exists is a symbolic link (components
 *    that do not exist yet are fine: colfile makes them as directories);
 *  - in the directory `name` leads to, if it exists, no file colfile reads
 *    or writes (header, attribute files, blobs, colfile-*) is a symbolic
 *    link.
 * The root itself may be, or lie below, a symbolic link.  CF_ENAME naming
 * the path and the link's target ("symbolic link leads outside the File"
 * when it resolves outside root, or cannot be resolved). */
int cf__name_confine(const char *root, const char *name, cf_error *err);

/* The same without listing the parent directory for hidden companions
 * (.colfile-lock, staging and old versions), a cost that grows with
 * the number of columns beside it: for cf_column_create, which makes its
 * staging directory and old-version names fresh (mkdir and rename never
 * follow a link) and opens the lock with O_NOFOLLOW. */
int cf__name_confine_own(const char *root, const char *name, cf_error *err);

/* cf__name_confine_own, also saying what the checks found at the name
 * itself (root/name), so that cf_column_create need not look again:
 * CF__LEAF_ABSENT, CF__LEAF_DIR, CF__LEAF_OTHER (a file, a device...), or
 * CF__LEAF_UNKNOWN when the walk stopped before it or it could not tell. */
enum { CF__LEAF_UNKNOWN = -1, CF__LEAF_ABSENT = 0, CF__LEAF_DIR = 1, CF__LEAF_OTHER = 2 };
int cf__name_confine_new(const char *root, const char *name, int *leaf, cf_error *err);

/* CF_EEXIST if a directory above `name` (below root) is a column (holds a
 * `header`): listings, bigfile and `colfile check` never look inside a
 * column's directory, so a column made there would be invisible. */
int cf__name_outside_columns(const char *root, const char *name, cf_error *err);

/* 1 if `entry`, an entry of a column directory (`column`) or of a group or
 * File directory, is one colfile reads or writes there, so that it must not
 * be a symbolic link (what cf__name_confine checks in the directory). */
int cf__name_guarded(const char *entry, int column);

/* Check a File path given to cf_file_open before anything is made: shorter
 * than PATH_MAX, no component longer than 255 bytes.  CF_ENAME. */
int cf__file_path_check(const char *path, cf_error *err);

#endif
