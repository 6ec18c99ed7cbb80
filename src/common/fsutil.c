/* fsutil.c - small POSIX file helpers. */
#include "fsutil.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "error.h"
#include "platform.h"

char *cf__path_join(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    int slash = la > 0 && a[la - 1] != '/';
    char *p = malloc(la + lb + 2);
    if (!p) return NULL;
    memcpy(p, a, la);
    if (slash) p[la++] = '/';
    memcpy(p + la, b, lb + 1);
    return p;
}

static int read_file_at(int dfd, const char *path, int nofollow, size_t max, char **data, size_t *len,
                        struct stat *st_out, cf_error *err);

int cf__read_file(const char *path, char **data, size_t *len, cf_error *err)
{
    return read_file_at(AT_FDCWD, path, 0, CF__METADATA_MAX, data, len, NULL, err);
}

int cf__read_file_stat(const char *path, char **data, size_t *len, struct stat *st, cf_error *err)
{
    return read_file_at(AT_FDCWD, path, 0, CF__METADATA_MAX, data, len, st, err);
}

int cf__read_file_at(int dfd, const char *path, int nofollow, char **data, size_t *len, cf_error *err)
{
    return read_file_at(dfd, path, nofollow, CF__METADATA_MAX, data, len, NULL, err);
}

int cf__read_file_at_stat(int dfd, const char *path, char **data, size_t *len, struct stat *st, cf_error *err)
{
    return read_file_at(dfd, path, 0, CF__METADATA_MAX, data, len, st, err);
}

int cf__read_file_at_stat_max(int dfd, const char *path, size_t max, char **data, size_t *len, struct stat *st,
                              cf_error *err)
{
    return read_file_at(dfd, path, 0, max, data, len, st, err);
}

static int read_file_at(int dfd, const char *path, int nofollow, size_t max, char **data, size_t *len,
                        struct stat *st_out, cf_error *err)
{
    /* careful mode: no link, and no open that waits (a FIFO planted there) */
    int fd = openat(dfd, path, O_RDONLY | O_CLOEXEC | (nofollow ? O_NOFOLLOW | O_NONBLOCK | O_NOCTTY : 0));
    if (fd < 0) {
        int e = errno;
        return CF_FAIL(err, cf__errno_code(e), "%s: cannot open: %s", path, strerror(e));
    }
    struct stat st;
    int rc = 0;
    char *buf = NULL;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        rc = CF_FAIL(err, CF_EIO, "%s: cannot stat: %s", path, strerror(e));
        goto done;
    }
    if (!S_ISREG(st.st_mode)) {
        rc = CF_FAIL(err, CF_EFORMAT, "%s: not a regular file", path);
        goto done;
    }
    if ((uint64_t)st.st_size > max || (uint64_t)st.st_size >= SIZE_MAX) {
        rc = CF_FAIL(err, CF_EFORMAT, "%s: metadata file of %lld bytes is larger than the %zu byte limit",
                     path, (long long)st.st_size, max);
        goto done;
    }
    size_t cap = (size_t)st.st_size;
    buf = malloc(cap + 1);
    if (!buf) {
        rc = CF_FAIL(err, CF_ENOMEM, "%s: out of memory reading %zu bytes", path, cap);
        goto done;
    }
    size_t got = 0;
    /* Read until EOF: the file may have grown since fstat, but never past cap. */
    rc = cf__pread_all(fd, buf, cap, 0, &got, path, err);
    if (rc) goto done;
    buf[got] = '\0';
    if (st_out) *st_out = st;
    *data = buf;
    *len = got;
    buf = NULL;
done:
    free(buf);
    close(fd);
    return rc;
}

uint64_t cf__unique_seed(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20) ^ (uint64_t)(uintptr_t)&ts;
}

/* The name mixes pid, time and a stack address so that concurrent writers
 * in other threads or processes do not collide; EEXIST retries. */
int cf__open_temporary(const char *dir, const char *name, char *tmp, size_t cap, const char *final,
                       cf_error *err)
{
    uint64_t seed = cf__unique_seed();
    for (int attempt = 0; attempt < 64; attempt++) {
        seed = cf__unique_next(seed);
        int n = snprintf(tmp, cap, "%s/.%s.tmp.%ld.%08llx", dir, name, (long)getpid(),
                         (unsigned long long)(seed >> 32));
        if (n < 0 || (size_t)n >= cap)
            return CF_FAIL(err, CF_ENAME, "%s: path too long", final);
        int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd >= 0) return fd;
        if (errno != EEXIST) {
            int e = errno;
            return CF_FAIL(err, cf__errno_code(e), "%s: cannot create temporary file: %s",
                           final, strerror(e));
        }
    }
    return CF_FAIL(err, CF_EIO, "%s: cannot find a free temporary file name", final);
}

int cf__fsync_fd(int fd, const char *path, cf_error *err)
{
    if (fsync(fd) == 0) return 0;
    int e = errno;
    /* Some file systems cannot sync directories (EINVAL): nothing more can
     * be done there, and it is not a failure of the data. */
    if (e == EINVAL || e == EROFS) return 0;
    return CF_FAIL(err, CF_EIO, "%s: fsync failed: %s", path, strerror(e));
}

int cf__fsync_path(const char *path, cf_error *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        return CF_FAIL(err, cf__errno_code(e), "%s: cannot open to fsync: %s", path, strerror(e));
    }
    int rc = cf__fsync_fd(fd, path, err);
    close(fd);
    return rc;
}

int cf__write_file_atomic(const char *dir, const char *name, const void *data,
                          size_t len, int durable, cf_error *err)
{
    return cf__write_file_atomic_hook(dir, name, data, len, durable, NULL, NULL, err);
}

int cf__write_file_atomic_hook(const char *dir, const char *name, const void *data, size_t len, int durable,
                               void (*written)(int fd, void *arg), void *arg, cf_error *err)
{
    char tmp[PATH_MAX];
    char *final = cf__path_join(dir, name);
    if (!final) return CF_FAIL(err, CF_ENOMEM, "%s/%s: out of memory", dir, name);
    int fd = cf__open_temporary(dir, name, tmp, sizeof tmp, final, err);
    int rc = fd < 0 ? fd : 0;
    if (rc) goto done;
    rc = cf__pwrite_all(fd, data, len, 0, tmp, err);
    if (rc == 0 && written) written(fd, arg);
    /* The bytes must be on disk before the name points at them. */
    if (rc == 0 && durable) rc = cf__fsync_fd(fd, tmp, err);
    if (close(fd) != 0 && rc == 0) {
        int e = errno;
        rc = CF_FAIL(err, CF_EIO, "%s: close failed: %s", tmp, strerror(e));
    }
    if (rc == 0 && rename(tmp, final) != 0) {
        int e = errno;
        rc = CF_FAIL(err, CF_EIO, "%s: cannot rename temporary file into place: %s", final, strerror(e));
    }
    if (rc != 0) unlink(tmp);
done:
    free(final);
    return rc;
}

int cf__write_file_private_keep(const char *dir, const char *name, const void *data,
                                size_t len, int *keep_fd, cf_error *err)
{
    return cf__write_file_private_hook(dir, name, data, len, keep_fd, NULL, NULL, err);
}

int cf__write_file_private_hook(const char *dir, const char *name, const void *data, size_t len, int *keep_fd,
                                void (*written)(int fd, void *arg), void *arg, cf_error *err)
{
    if (keep_fd) *keep_fd = -1;
    char *p = cf__path_join(dir, name);
    if (!p) return CF_FAIL(err, CF_ENOMEM, "%s/%s: out of memory", dir, name);
    int rc = 0;
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd < 0) {
        int e = errno;
        rc = CF_FAIL(err, cf__errno_code(e), "%s: cannot create: %s", p, strerror(e));
    } else {
        rc = cf__pwrite_all(fd, data, len, 0, p, err);
        if (rc == 0 && written) written(fd, arg);
        if (rc == 0 && keep_fd) {
            *keep_fd = fd;
        } else if (close(fd) != 0 && rc == 0) {
            int e = errno;
            rc = CF_FAIL(err, CF_EIO, "%s: close failed: %s", p, strerror(e));
        }
    }
    free(p);
    return rc;
}

int cf__write_file_private(const char *dir, const char *name, const void *data,
                           size_t len, cf_error *err)
{
    return cf__write_file_private_keep(dir, name, data, len, NULL, err);
}

/* Descriptors held open at once by cf__fsync_files. */
#define CF__SYNC_BATCH 64

int cf__fsync_files(const char *dir, const char *const *names, const int *open_fds, size_t n, cf_error *err)
{
    int rc = 0;
    for (size_t i0 = 0; i0 < n && rc == 0; i0 += CF__SYNC_BATCH) {
        size_t m = n - i0 < CF__SYNC_BATCH ? n - i0 : CF__SYNC_BATCH, k = 0;
        int fds[CF__SYNC_BATCH], own[CF__SYNC_BATCH];
        char *paths[CF__SYNC_BATCH];
        /* Start every file's write-back before waiting for any: the file
         * system then allocates and writes them together, and one journal
         * commit can cover them all. */
        for (; k < m; k++) {
            paths[k] = cf__path_join(dir, names[i0 + k]);
            if (!paths[k]) {
                rc = CF_FAIL(err, CF_ENOMEM, "%s: out of memory", dir);
                break;
            }
            own[k] = !open_fds || open_fds[i0 + k] < 0;
            fds[k] = own[k] ? open(paths[k], O_RDONLY | O_CLOEXEC) : open_fds[i0 + k];
            if (fds[k] < 0) {
                int e = errno;
                rc = CF_FAIL(err, cf__errno_code(e), "%s: cannot open to fsync: %s", paths[k], strerror(e));
                free(paths[k]);
                break;
            }
            cf__writeback_range(fds[k], 0, 0);
        }
        for (size_t j = 0; j < k; j++) {
            if (rc == 0) rc = cf__fsync_fd(fds[j], paths[j], err);
            if (own[j]) close(fds[j]);
            free(paths[j]);
        }
    }
    return rc;
}

int cf__dir_each(const char *dir, int skip_hidden, cf__dir_entry_fn fn, void *ctx, cf_error *err)
{
    DIR *d = opendir(dir);
    if (!d) {
        int e = errno;
        return CF_FAIL(err, cf__errno_code(e), "%s: cannot list: %s", dir, strerror(e));
    }
    int rc = 0;
    struct dirent *ent;
    while (rc == 0 && (ent = readdir(d)) != NULL) {
        const char *name = ent->d_name;
        if (skip_hidden ? name[0] == '.' : strcmp(name, ".") == 0 || strcmp(name, "..") == 0) continue;
        char *p = cf__path_join(dir, name);
        if (!p) {
            rc = CF_FAIL(err, CF_ENOMEM, "%s: out of memory", dir);
            break;
        }
        rc = fn(ctx, dir, p, name, err);
        free(p);
    }
    closedir(d);
    return rc;
}

int cf__remove_tree(const char *path, cf_error *err)
{
    struct stat st;
    if (lstat(path, &st) != 0) {
        if (errno == ENOENT) return 0;
        int e = errno;
        return CF_FAIL(err, CF_EIO, "%s: cannot stat: %s", path, strerror(e));
    }
    if (!S_ISDIR(st.st_mode)) {
        if (unlink(path) == 0 || errno == ENOENT) return 0;
        int e = errno;
        return CF_FAIL(err, CF_EIO, "%s: cannot remove: %s", path, strerror(e));
    }
    DIR *d = opendir(path);
    if (!d) {
        int e = errno;
        return CF_FAIL(err, CF_EIO, "%s: cannot list: %s", path, strerror(e));
    }
    int rc = 0;
    struct dirent *ent;
    while (rc == 0 && (ent = readdir(d)) != NULL) {
        if (strcmp(ent->d_name, ".") == 0 || strcmp(ent->d_name, "..") == 0) continue;
        char *p = cf__path_join(path, ent->d_name);
        if (!p) {
            rc = CF_FAIL(err, CF_ENOMEM, "%s: out of memory", path);
            break;
        }
        rc = cf__remove_tree(p, err);
        free(p);
    }
    closedir(d);
    if (rc == 0 && rmdir(path) != 0 && errno != ENOENT) {
        int e = errno;
        rc = CF_FAIL(err, CF_EIO, "%s: cannot remove directory: %s", path, strerror(e));
    }
    return rc;
}

int cf__remove_if_exists(const char *dir, const char *name, cf_error *err)
{
    char *p = cf__path_join(dir, name);
    if (!p) return CF_FAIL(err, CF_ENOMEM, "%s/%s: out of memory", dir, name);
    int rc = 0;
    if (unlink(p) != 0 && errno != ENOENT) {
        int e = errno;
        rc = CF_FAIL(err, CF_EIO, "%s: cannot remove: %s", p, strerror(e));
    }
    free(p);
    return rc;
}

int cf__mkdirs(const char *path, cf_error *err)
{
    return cf__mkdirs_durable(path, 0, err);
}

static int mkdirs_once(char *p, size_t n, int durable, cf_error *err);

int cf__mkdirs_durable(const char *path, int durable, cf_error *err)
{
    /* Mostly the directory is there already: one stat, no failing mkdirs. */
    if (cf__is_dir(path)) return 0;
    size_t n = strlen(path);
    char *p = malloc(n + 1);
    if (!p) return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", path);
    memcpy(p, path, n + 1);
    int rc = 0;
    /* A directory of the path moved away (removed) between its mkdir and
     * the next: made again, a few times. */
    for (int attempt = 0; attempt < 16; attempt++) {
        rc = mkdirs_once(p, n, durable, err);
        if (rc == CF_ENOENT && attempt < 15) continue; /* a parent just made is gone */
        if (rc != 0 || cf__is_dir(path)) break;
        struct stat st;
        if (lstat(path, &st) == 0 || errno != ENOENT) break;
    }
    if (rc == 0 && !cf__is_dir(path))
        rc = CF_FAIL(err, CF_ENOTFILE, "%s: exists and is not a directory", path);
    free(p);
    return rc;
}

static int mkdirs_once(char *p, size_t n, int durable, cf_error *err)
{
    int rc = 0;
    for (size_t i = 1; i <= n; i++) {
        if (p[i] != '/' && p[i] != '\0') continue;
        char saved = p[i];
        p[i] = '\0';
        if (mkdir(p, 0777) != 0) {
            if (errno != EEXIST) {
                int e = errno;
                rc = CF_FAIL(err, cf__errno_code(e), "%s: cannot make directory: %s", p, strerror(e));
                p[i] = saved;
                break;
            }
        } else if (durable) {
            /* A new directory's name lives in its parent: sync that. */
            char *slash = strrchr(p, '/');
            if (slash && slash != p) {
                *slash = '\0';
                rc = cf__fsync_path(p, err);
                *slash = '/';
            } else {
                rc = cf__fsync_path(slash ? "/" : ".", err);
            }
            p[i] = saved;
            if (rc) break;
            continue;
        }
        p[i] = saved;
    }
    return rc;
}

int cf__is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

int cf__exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

/* Linux moves at most this many bytes per read/write call. */
#define CF__IO_MAX ((size_t)1 << 30)

int cf__pwrite_all(int fd, const void *buf, size_t n, int64_t offset,
                   const char *path, cf_error *err)
{
    size_t done;
    return cf__pwrite_all_done(fd, buf, n, offset, &done, path, err);
}

int cf__pwrite_all_done(int fd, const void *buf, size_t n, int64_t offset, size_t *done,
                        const char *path, cf_error *err)
{
    const char *p = buf;
    *done = 0;
    while (n > 0) {
        size_t want = n < CF__IO_MAX ? n : CF__IO_MAX;
        ssize_t w = pwrite(fd, p, want, (off_t)offset);
        if (w < 0) {
            if (errno == EINTR) continue;
            int e = errno;
            return CF_FAIL(err, CF_EIO, "%s: write of %zu bytes at offset %lld failed: %s",
                           path, want, (long long)offset, strerror(e));
        }
        if (w == 0)
            return CF_FAIL(err, CF_EIO, "%s: write at offset %lld made no progress",
                           path, (long long)offset);
        p += w;
        n -= (size_t)w;
        offset += w;
        *done += (size_t)w;
    }
    return 0;
}

int cf__pread_all(int fd, void *buf, size_t n, int64_t offset, size_t *got,
                  const char *path, cf_error *err)
{
    char *p = buf;
    size_t total = 0;
    while (n > 0) {
        size_t want = n < CF__IO_MAX ? n : CF__IO_MAX;
        ssize_t r = pread(fd, p, want, (off_t)offset);
        if (r < 0) {
            if (errno == EINTR) continue;
            int e = errno;
            return CF_FAIL(err, CF_EIO, "%s: read of %zu bytes at offset %lld failed: %s",
                           path, want, (long long)offset, strerror(e));
        }
        if (r == 0) break;
        p += r;
        n -= (size_t)r;
        offset += r;
        total += (size_t)r;
    }
    *got = total;
    return 0;
}
