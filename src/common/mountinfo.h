/* mountinfo.h - how far the file system's locks reach at a path, from the
 * mount table (/proc/self/mountinfo): the scope behind cf_file_lock_scope
 * (internal). */
#ifndef CF_MOUNTINFO_H
#define CF_MOUNTINFO_H

#include <stddef.h>

/* The scope of locks at absolute, resolved path `abs` according to the
 * mountinfo text (NUL-terminated): "cluster" (every client sees them, and
 * local file systems), "node" (node-local: Lustre localflock, NFS nolock
 * or local_lock=all|flock|posix, BeeGFS), "none" (lock calls fail: Lustre
 * without flock or localflock), or "unknown" when no mount holds it.  The
 * mount's type goes to fstype (n bytes, "" if none). */
const char *cf__lock_scope_in(const char *mountinfo, const char *abs, char *fstype, size_t n);

/* The same for `path` and this process's mount table ("unknown" where it
 * cannot be read). */
const char *cf__lock_scope(const char *path);

#endif
