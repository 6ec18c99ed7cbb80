/* fsutil.h - small POSIX file helpers that report through cf_error (internal). */
#ifndef CF_FSUTIL_H
#define CF_FSUTIL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "colfile.h"

/* Largest metadata file colfile will read into memory (a header or attribute
 * file): a guard against a hostile or corrupt file exhausting memory. */
#define CF__METADATA_MAX ((size_t)1 << 30)

/* malloc'd "a/b" (no doubled slash when a ends in '/'); NULL on ENOMEM. */
char *cf__path_join(const char *a, const char *b);

/* Read a whole metadata file.  *data is malloc'd and NUL terminated (the NUL
 * is not counted in *len).  CF_ENOENT if absent, CF_EIO, CF_EFORMAT if it is
 * larger than CF__METADATA_MAX, CF_ENOMEM. */
int cf__read_file(const char *path, char **data, size_t *len, cf_error *err);
/* The same, also giving the fstat of the file read. */
struct stat;
int cf__read_file_stat(const char *path, char **data, size_t *len, struct stat *st, cf_error *err);
/* The same for path below the directory open as dfd (AT_FDCWD: as
 * cf__read_file); with `nofollow`, a symbolic link is refused and the
 * open never waits (a FIFO there is refused as not a regular file). */
int cf__read_file_at(int dfd, const char *path, int nofollow, char **data, size_t *len, cf_error *err);
/* cf__read_file_at (links followed) also giving the fstat of the file read. */
int cf__read_file_at_stat(int dfd, const char *path, char **data, size_t *len, struct stat *st, cf_error *err);

/* cf__read_file_at_stat with a limit of its own instead of
 * CF__METADATA_MAX (SIZE_MAX: none but memory). */
int cf__read_file_at_stat_max(int dfd, const char *path, size_t max, char **data, size_t *len, struct stat *st,
                              cf_error *err);

/* Create a new hidden temporary file for dir/name in dir (mode 0666 minus
 * the umask, never an existing file): its descriptor (write-only), its
 * path in tmp (cap bytes), or a negative code naming `final`. */
int cf__open_temporary(const char *dir, const char *name, char *tmp, size_t cap, const char *final,
                       cf_error *err);

/* Replace dir/name with the given bytes atomically: write a hidden temporary
 * file in dir, fsync it when `durable`, then rename it over dir/name.  The
 * new name is durable only once the caller fsyncs dir (cf__fsync_path). */
int cf__write_file_atomic(const char *dir, const char *name, const void *data,
                          size_t len, int durable, cf_error *err);
/* The same, calling written(fd, arg) once the bytes are written, before
 * the fsync and the rename (to set the file's times: hstamp.h). */
int cf__write_file_atomic_hook(const char *dir, const char *name, const void *data, size_t len, int durable,
                               void (*written)(int fd, void *arg), void *arg, cf_error *err);

/* Write dir/name in place (created or truncated), without a temporary and
 * without fsync: only for files in a directory nobody else looks at yet (a
 * staging directory before it is published), which the commit then syncs
 * with cf__fsync_files.  A symbolic link at dir/name is not followed (the
 * open fails: CF_EIO naming the path). */
int cf__write_file_private(const char *dir, const char *name, const void *data,
                           size_t len, cf_error *err);
/* The same, leaving the file open: on success *keep_fd (-1 on failure) is
 * a descriptor for the caller to fsync (cf__fsync_files) and close. */
int cf__write_file_private_keep(const char *dir, const char *name, const void *data,
                                size_t len, int *keep_fd, cf_error *err);
/* The same, calling written(fd, arg) once the bytes are written. */
int cf__write_file_private_hook(const char *dir, const char *name, const void *data, size_t len, int *keep_fd,
                                void (*written)(int fd, void *arg), void *arg, cf_error *err);

/* fsync the n files dir/names[i]: the write-back of all of them (up to 64
 * at a time) is started before the first fsync waits, so that the file
 * system writes them together.  open_fds (may be NULL) holds a descriptor
 * already open on dir/names[i], used instead of opening it again and left
 * open, or -1.  The first failure is reported (naming the file); the rest
 * of that batch is still closed. */
int cf__fsync_files(const char *dir, const char *const *names, const int *open_fds, size_t n,
                    cf_error *err);

/* fsync an open descriptor / a file or directory by path.  EINVAL and EROFS
 * (file systems that cannot sync that object) count as success. */
int cf__fsync_fd(int fd, const char *path, cf_error *err);
int cf__fsync_path(const char *path, cf_error *err);

/* Random-enough bits for names that must not collide between threads and
 * processes (with the pid beside them): a seed from the clock and a stack
 * address, stepped by a 64-bit LCG; use the high 32 bits. */
uint64_t cf__unique_seed(void);
static inline uint64_t cf__unique_next(uint64_t x)
{
    return x * 6364136223846793005ULL + 1442695040888963407ULL;
}

/* Call fn(ctx, dir, path, name, err) for each entry of dir (path: dir/name),
 * but "." and "..", and every name starting with '.' when skip_hidden, in
 * readdir order, until fn returns non-zero; returns that, or the failure to
 * list dir or to join a path. */
typedef int (*cf__dir_entry_fn)(void *ctx, const char *dir, const char *path, const char *name, cf_error *err);
int cf__dir_each(const char *dir, int skip_hidden, cf__dir_entry_fn fn, void *ctx, cf_error *err);

/* rm -r path without following symbolic links (ENOENT is not an error). */
int cf__remove_tree(const char *path, cf_error *err);

/* Remove dir/name if it exists (ENOENT is not an error). */
int cf__remove_if_exists(const char *dir, const char *name, cf_error *err);

/* mkdir -p with mode 0777 (minus umask); the durable variant fsyncs the
 * parent of every directory it makes. */
int cf__mkdirs(const char *path, cf_error *err);
int cf__mkdirs_durable(const char *path, int durable, cf_error *err);

/* 1 if path exists and is a directory, 0 if it does not exist or is not a
 * directory. */
int cf__is_dir(const char *path);

/* 1 if path exists (any type). */
int cf__exists(const char *path);

/* pwrite/pread the whole range, retrying short transfers and EINTR.
 * pread returns the bytes read (less than n only at end of file) in *got. */
int cf__pwrite_all(int fd, const void *buf, size_t n, int64_t offset,
                   const char *path, cf_error *err);
/* The same, with the bytes written before a failure in *done (n on success):
 * 0 means the file's bytes are unchanged. */
int cf__pwrite_all_done(int fd, const void *buf, size_t n, int64_t offset, size_t *done,
                        const char *path, cf_error *err);
int cf__pread_all(int fd, void *buf, size_t n, int64_t offset, size_t *got,
                  const char *path, cf_error *err);

#endif
