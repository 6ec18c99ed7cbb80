/* writer_lock.h - the writer lock of a column (docs/format.md 8.3;
 * internal).
 *
 * A writer locks one byte of `.colfile-lock`, a file shared by every
 * column of a directory: the byte at an offset given by a hash of the
 * column's leaf name, with an open file description lock (per handle, also
 * between threads of one process).  The file stays while writers come and
 * go, so a writer adds no entry to the directory; whoever finds no lock at
 * all in it removes it (cf__lock_tidy).  Where the kernel has no open file
 * description locks, each column gets a file of its own,
 * `.colfile-lock.<leaf>`, locked whole with flock and removed by its
 * holder.
 *
 * A File keeps the lock file of each directory it writes columns in open
 * (cf__lock_dir): its columns then lock and unlock their bytes through that
 * one descriptor instead of opening the file each time.  The descriptor
 * also holds a shared lock of byte CF__LOCK_PRESENCE, beyond every column's
 * byte, so that no tidy removes the file while it is open: a tidy locks the
 * whole file.  Bytes locked through one descriptor do not exclude each
 * other, so the object also lists the bytes its holders have locked. */
#ifndef CF_WRITER_LOCK_H
#define CF_WRITER_LOCK_H

#include <stddef.h>
#include <stdint.h>

#include "colfile.h"

#define CF__LOCK_NAME ".colfile-lock"
#define CF__LOCK_PREFIX ".colfile-lock."

/* The byte every open cf__lock_dir holds shared: 2^62, just past the
 * bytes of columns (62 bits of a hash). */
#define CF__LOCK_PRESENCE ((int64_t)1 << 62)

typedef struct cf__lock_dir cf__lock_dir;

typedef struct cf__lock {
    int fd;       /* -1 when not held, or when held through `via` */
    int shared;   /* CF_OPEN_NOLOCK holders share the lock */
    int64_t slot; /* the byte locked in CF__LOCK_NAME; -1: a file of its own */
    char *path;   /* the lock file */
    cf__lock_dir *via; /* the File's descriptor of the directory's lock file
                          (a reference), or NULL: exclusive takes use it */
    int via_held; /* held as byte `slot` through via */
    int off;      /* CF_OPEN_NOLOCKING: take and release make no lock call */
    int claimed;  /* taken while off: held in name only */
} cf__lock;

#define CF__LOCK_NONE { -1, 0, -1, NULL, NULL, 0, 0, 0 }

/* A new lock-file object for directory dir (len bytes), not open yet, with
 * one reference; NULL when out of memory. */
cf__lock_dir *cf__lock_dir_new(const char *dir, size_t len);

/* Another reference to d (returned); drop it with cf__lock_dir_unref. */
cf__lock_dir *cf__lock_dir_ref(cf__lock_dir *d);

/* Drop a reference; the last closes the descriptor and frees d. */
void cf__lock_dir_unref(cf__lock_dir *d);

/* The directory d locks columns in. */
const char *cf__lock_dir_dir(const cf__lock_dir *d);

/* Close d's descriptor if no byte is locked through it, so that a tidy
 * can remove the file (the next take opens it again). */
void cf__lock_dir_idle(cf__lock_dir *d);

/* In a child made by fork(2): close the child's copy of d's descriptor
 * without unlocking anything (the locks are the parent's).  Takes in the
 * child then open their own descriptors. */
void cf__lock_dir_forget(cf__lock_dir *d);

/* 1 if lk holds its lock. */
int cf__lock_is_held(const cf__lock *lk);

/* The 64-bit FNV-1a hash of n bytes. */
uint64_t cf__fnv1a(const char *s, size_t n);

/* `leaf` as it appears in hidden sibling names (.colfile-stage.<leaf>...,
 * the lock byte): leaves longer than 200 bytes are cut to 180 and tagged
 * with "~" and 16 hex digits of their FNV-1a hash. */
void cf__short_leaf(const char *leaf, size_t len, char out[224]);

/* Take the writer lock of the column at path `column` (its directory),
 * without waiting: CF_EBUSY (naming the column and the lock) when another
 * handle holds it, CF_ENAME when a symbolic link sits where the lock file
 * belongs, CF_EIO naming the lock file and CF_OPEN_NOLOCKING when the file
 * system cannot lock at all (ENOSYS, ENOLCK, EOPNOTSUPP).  With lk->off it
 * makes no lock call and only marks the lock claimed.  An exclusive take goes through lk->via when set (and usable:
 * in the process that opened it, on a kernel with open file description
 * locks). */
int cf__lock_take(cf__lock *lk, const char *column, int shared, cf_error *err);

/* Let go (nothing if not held). */
void cf__lock_release(cf__lock *lk);

/* Close this copy of the lock's descriptor and nothing else (a forked
 * child's copy: the lock stays the parent's); drop the reference to via. */
void cf__lock_forget(cf__lock *lk);

/* 1 if a writer holds the lock of column `leaf` (len bytes; cut as in
 * cf__short_leaf when longer) in `dir`; 0 if not; 1 when it cannot tell. */
int cf__lock_held(const char *dir, const char *leaf, size_t len);

/* Remove dir/.colfile-lock when no one holds any lock in it (a writer of
 * the File at its close, and repair); 1 if removed.  Lockers that had the
 * file open find it gone and make a new one. */
int cf__lock_tidy(const char *dir);

/* Every writer lock of a directory at once, for removing everything in it
 * (a group, or the File when it is truncated): bytes 0 .. 2^62 - 1 of its
 * `.colfile-lock` (made if missing), so that no writer holds a column's
 * byte there or can take one while this is held.  Files that only keep
 * the lock file open (byte CF__LOCK_PRESENCE) are not in the way.  Where
 * the kernel has no open file description locks: every
 * `.colfile-lock.<leaf>` file in dir, one for each entry of dir and one
 * for `also_leaf` (if not NULL), made where missing, each locked whole. */
typedef struct cf__dir_lock {
    int fd;          /* dir/.colfile-lock with the bytes locked; -1 */
    char *path;
    int *own_fds;    /* .colfile-lock.<leaf> files, locked whole */
    char **own_paths;
    int64_t n_own, cap_own;
} cf__dir_lock;

#define CF__DIR_LOCK_NONE { -1, NULL, NULL, NULL, 0, 0 }

/* Take them all, without waiting: CF_EBUSY naming the column (or the
 * directory) whose lock another handle holds, nothing held then. */
int cf__lock_whole_dir(cf__dir_lock *dl, const char *dir, const char *also_leaf, cf_error *err);

/* Let go.  The column lock files are removed while still held (their
 * protocol), and `.colfile-lock` too if no one else has it open. */
void cf__dir_lock_release(cf__dir_lock *dl);

#endif
