/* platform.h - the few operating-system calls outside POSIX.1-2008 that
 * commits rely on, behind portable fallbacks (internal). */
#ifndef CF_PLATFORM_H
#define CF_PLATFORM_H

#include <stdint.h>

#include "colfile.h"

/* Swap two existing directory entries atomically (Linux renameat2 with
 * RENAME_EXCHANGE).  Returns 0, or -1 with errno set: EINVAL or ENOSYS
 * where the file system or kernel cannot exchange. */
int cf__rename_exchange(const char *a, const char *b);

/* Open the directory at path (relative to dfd, or AT_FDCWD) only as a
 * place to look files up from with the *at calls and fstat: Linux O_PATH,
 * which needs no read permission and does no I/O; O_RDONLY elsewhere.
 * Close-on-exec.  A descriptor, or -1 with errno (ENOTDIR: not a
 * directory). */
int cf__open_dir_handle(int dfd, const char *path);
/* The same, failing (ENOTDIR or ELOOP) when the last component is a
 * symbolic link. */
int cf__open_dir_handle_nofollow(int dfd, const char *path);

/* Take an exclusive, non-blocking lock on the open file fd: an open file
 * description lock (per handle, also between threads) where the kernel has
 * them, else flock.  Returns 0, or -1 with errno EWOULDBLOCK/EAGAIN/EACCES
 * when another holder has it, ENOLCK when the file system cannot lock. */
int cf__lock_exclusive(int fd);

/* The same, shared: any number of shared holders, no exclusive one.
 * On an fd that holds the shared lock, cf__lock_exclusive upgrades it when
 * no one else holds it. */
int cf__lock_shared(int fd);

/* An open file description lock, non-blocking, of the byte at `start`
 * (start >= 0) or of the whole file (start < 0): shared or exclusive.
 * Returns 0, or -1 with errno: EAGAIN/EACCES when another open file
 * description holds a conflicting lock, EINVAL or ENOSYS where the kernel
 * has no such locks, ENOLCK when the file system cannot lock. */
int cf__ofd_lock(int fd, int exclusive, int64_t start);

/* Let go of the open file description lock cf__ofd_lock took at `start`
 * through fd (other bytes locked through fd stay locked).  0, or -1 with
 * errno. */
int cf__ofd_unlock(int fd, int64_t start);

/* What holds a lock that conflicts with an exclusive cf__ofd_lock of
 * `start` (another open file description): 0 nothing, 1 a lock of part of
 * the file, 2 a lock of the whole file, -1 cannot tell (errno). */
int cf__ofd_probe(int fd, int64_t start);

/* An exclusive open file description lock, non-blocking, of the `len`
 * bytes from `start` (len > 0): every column's byte of a directory's lock
 * file at once.  Errors as cf__ofd_lock. */
int cf__ofd_lock_range(int fd, int64_t start, int64_t len);

/* Where the lock starts that conflicts with an exclusive lock of `len`
 * bytes from `start`: 1 and *at (a lock of the whole file: *at -1), 0
 * when nothing conflicts, -1 cannot tell (errno). */
int cf__ofd_probe_range(int fd, int64_t start, int64_t len, int64_t *at);

/* Whether someone holds the lock cf__lock_exclusive takes on the file open
 * as fd (which may be read-only): 1 held, 0 free, -1 cannot tell. */
int cf__lock_probe(int fd);

/* The same for the lock file at path: 0 also when it cannot be opened
 * (absent: no writer ever took it, or the last one let go). */
int cf__lock_probe_path(const char *path);

/* Start writing back the dirty pages of bytes [offset, offset + length) of
 * the open file fd without waiting (Linux sync_file_range; nothing
 * elsewhere); length 0 means to the end of the file.  A hint: a writer
 * calls it on what it has just written, so that the disk works while it
 * goes on, and a commit on each file before fsyncing them all, so that the
 * file system batches their write-back.  Never a substitute for fsync; its
 * failure is ignored. */
void cf__writeback_range(int fd, int64_t offset, int64_t length);

/* Reserve the disk blocks of bytes [offset, offset + length) of the open
 * file fd without changing its size (Linux fallocate with
 * FALLOC_FL_KEEP_SIZE; nothing elsewhere).  A hint before a large write:
 * the file system then allocates the extent once instead of block by block
 * as the page cache fills (ext4: a 384 MiB buffered write took 0.047 s
 * instead of 0.072 s).  Its failure is ignored (the write itself reports
 * a full disk). */
void cf__preallocate(int fd, int64_t offset, int64_t length);

/* Whether the page cache holds every page of bytes [offset, offset +
 * length) of the open file fd (Linux cachestat, 6.5 and later): 1 yes,
 * 0 no or cannot tell (older kernels, other systems).  One system call,
 * no map: cheap enough to ask before every large read. */
int cf__range_cached(int fd, int64_t offset, int64_t length);

/* Whether this thread may run on more than one CPU (its affinity mask;
 * a rank pinned to one core by its MPI launcher says no). */
int cf__can_run_parallel(void);

/* The statfs(2) file system name ("ext4", "nfs", ...), "other" or "unknown". */
const char *cf__fs_type(const char *path);

#endif
