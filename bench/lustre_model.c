/* lustre_model.c - benchmark-only LD_PRELOAD library for bench/lustre_model.py:
 * counts what a Lustre-like parallel file system would be asked to do by the
 * processes of a job under one directory, deterministically (counts, not
 * times: the machine it runs on is shared).
 *
 * The model:
 * - every call that names a path, or opens, closes, fsyncs or locks a file
 *   under the directory is one metadata-server request (open and create,
 *   close, mkdir, rename, unlink, rmdir, stat-like calls, opendir, readlink,
 *   realpath, statfs, truncate, futimens, flock and fcntl locks, fsync);
 * - fsync is a metadata request and a data sync: it writes back the dirty
 *   bytes of the calling process in that file;
 * - each file (inode) has one extent lock with one owner: the process that
 *   last wrote it.  A write by another process is a hand-off: the lock is
 *   cancelled, and the previous owner's dirty bytes (written since it took
 *   the lock or since its last fsync of the file) are written back first.
 *   That is the worst case of Lustre's extent locks (two clients writing
 *   disjoint ranges of one file in turns).
 *
 * Never linked into colfile; bench/lustre_model.py and the tests build it with
 *   cc -O2 -shared -fPIC -o lustre_model.so bench/lustre_model.c -ldl -lpthread
 * (libcolfile and bigfile call libc through the dynamic linker, so these
 * wrappers see their calls; bigfile's stdio is seen at fopen and fwrite).
 *
 * Environment:
 *   COLFILE_LUSTRE_DIR     only paths under this directory (and descriptors
 *                          and streams opened on them) count
 *   COLFILE_LUSTRE_STATE   a file shared by every process: the lock owner of
 *                          each file (created and sized by the first process)
 *   COLFILE_LUSTRE_REPORT  a directory: at exit each process that made a
 *                          request writes <pid>.json there with its counts,
 *                          and its rank (PMI_RANK, OMPI_COMM_WORLD_RANK or
 *                          COLFILE_LUSTRE_RANK; -1 without any)
 * The state file holds, per file, the owner, its dirty bytes, the hand-offs,
 * the bytes they cancelled, the writes and the distinct writers (the layout
 * is `struct file_state` below; bench/lustre_model.py reads it).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#include "preload_common.h"

enum {
    OPEN, CREATE, CLOSE, MKDIR, RENAME, UNLINK, RMDIR, STAT, READDIR, SETATTR, LOCK, FSYNC,
    WRITE, BYTES_WRITTEN, READ, BYTES_READ, HANDOFF, CANCELLED_BYTES, NCOUNTS
};
static const char *count_names[NCOUNTS] = {
    "open", "create", "close", "mkdir", "rename", "unlink", "rmdir", "stat", "readdir", "setattr", "lock", "fsync",
    "write", "bytes_written", "read", "bytes_read", "handoff", "cancelled_bytes"
};

/* One file's extent lock, shared by every process (the state file is an
 * array of these; the layout is read by bench/lustre_model.py). */
#define MAX_WRITERS 14
#define NAME_LEN 64
struct file_state {
    uint64_t dev, ino;
    int32_t used, owner;          /* owner: pid of the last writer, 0 none */
    int64_t dirty;                /* owner's bytes not yet written back */
    int64_t handoffs, cancelled;  /* owner changes, bytes they wrote back */
    int64_t writes, fsyncs;
    int32_t nwriters, pad;        /* distinct writing processes (saturates) */
    int32_t writers[MAX_WRITERS];
    char name[NAME_LEN];          /* the end of its path at first sight */
};
#define NSLOTS 32768

static char report_dir[4096];
static int state_fd = -1;
static struct file_state *table;
static pthread_mutex_t table_mutex = PTHREAD_MUTEX_INITIALIZER;
static atomic_llong counts[NCOUNTS];
static atomic_int slot_of_fd[MAX_FD]; /* slot + 1 for tracked descriptors, 0 otherwise */

static int (*real_openat)(int, const char *, int, ...);
static FILE *(*real_fopen)(const char *, const char *);
static int (*real_fclose)(FILE *);
static size_t (*real_fwrite)(const void *, size_t, size_t, FILE *);
static ssize_t (*real_pwrite)(int, const void *, size_t, off_t);
static ssize_t (*real_pwritev)(int, const struct iovec *, int, off_t);
static ssize_t (*real_pread)(int, void *, size_t, off_t);
static ssize_t (*real_read)(int, void *, size_t);
static int (*real_fsync)(int);
static int (*real_fdatasync)(int);
static int (*real_rename)(const char *, const char *);
static int (*real_mkdir)(const char *, mode_t);
static int (*real_unlink)(const char *);
static int (*real_unlinkat)(int, const char *, int);
static int (*real_rmdir)(const char *);
static int (*real_stat)(const char *, struct stat *);
static int (*real_lstat)(const char *, struct stat *);
static int (*real_fstatat)(int, const char *, struct stat *, int);
static int (*real_access)(const char *, int);
static DIR *(*real_opendir)(const char *);
static ssize_t (*real_readlink)(const char *, char *, size_t);
static char *(*real_realpath)(const char *, char *);
static int (*real_statfs)(const char *, struct statfs *);
static int (*real_truncate)(const char *, off_t);
static int (*real_futimens)(int, const struct timespec[2]);
static int (*real_flock)(int, int);
static int (*real_fcntl)(int, int, ...);

static void resolve(void)
{
    SYM(real_open, "open64");
    SYM(real_openat, "openat64");
    SYM(real_fopen, "fopen64");
    SYM(real_fclose, "fclose");
    SYM(real_fwrite, "fwrite");
    SYM(real_close, "close");
    SYM(real_pwrite, "pwrite64");
    SYM(real_write, "write");
    SYM(real_pwritev, "pwritev64");
    SYM(real_pread, "pread64");
    SYM(real_read, "read");
    SYM(real_fsync, "fsync");
    SYM(real_fdatasync, "fdatasync");
    SYM(real_rename, "rename");
    SYM(real_mkdir, "mkdir");
    SYM(real_unlink, "unlink");
    SYM(real_unlinkat, "unlinkat");
    SYM(real_rmdir, "rmdir");
    SYM(real_stat, "stat64");
    SYM(real_lstat, "lstat64");
    SYM(real_fstatat, "fstatat64");
    SYM(real_access, "access");
    SYM(real_opendir, "opendir");
    SYM(real_readlink, "readlink");
    SYM(real_realpath, "realpath");
    SYM(real_statfs, "statfs64");
    SYM(real_truncate, "truncate64");
    SYM(real_futimens, "futimens");
    SYM(real_flock, "flock");
    SYM(real_fcntl, "fcntl64");
}

__attribute__((constructor)) static void setup(void)
{
    RESOLVE(real_open);
    set_prefix("COLFILE_LUSTRE_DIR");
    const char *r = getenv("COLFILE_LUSTRE_REPORT");
    if (r && *r) snprintf(report_dir, sizeof report_dir, "%s", r);
    const char *s = getenv("COLFILE_LUSTRE_STATE");
    if (!prefix_len || !s || !*s) return;
    size_t size = sizeof(struct file_state) * NSLOTS;
    state_fd = real_open(s, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (state_fd < 0) return;
    /* Every process sizes it the same; the first one's zeros stay. */
    flock(state_fd, LOCK_EX);
    struct stat st;
    if (fstat(state_fd, &st) == 0 && (size_t)st.st_size < size && ftruncate(state_fd, (off_t)size) != 0) {
        flock(state_fd, LOCK_UN);
        return;
    }
    flock(state_fd, LOCK_UN);
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, state_fd, 0);
    if (p != MAP_FAILED) table = p;
}

static const char *rank_text(void)
{
    const char *names[] = { "PMI_RANK", "OMPI_COMM_WORLD_RANK", "COLFILE_LUSTRE_RANK" };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const char *v = getenv(names[i]);
        if (v && *v) return v;
    }
    return "-1";
}

__attribute__((destructor)) static void report(void)
{
    if (!report_dir[0]) return;
    long long any = 0;
    for (int k = 0; k < NCOUNTS; k++) any += atomic_load(&counts[k]);
    if (!any) return; /* mpiexec, or a helper process that touched nothing */
    char text[4096];
    int n = snprintf(text, sizeof text, "{\"pid\": %ld, \"rank\": %ld, \"counts\": {", (long)getpid(),
                     strtol(rank_text(), NULL, 10));
    for (int k = 0; k < NCOUNTS; k++)
        n += snprintf(text + n, sizeof text - (size_t)n, "%s\"%s\": %lld", k ? ", " : "", count_names[k],
                      atomic_load(&counts[k]));
    n += snprintf(text + n, sizeof text - (size_t)n, "}}\n");
    write_report(report_dir, text, n);
}

static void count(int kind, long long n)
{
    atomic_fetch_add(&counts[kind], n);
}

/* Both locks: the threads of this process, then the other processes. */
static void table_lock(void)
{
    pthread_mutex_lock(&table_mutex);
    flock(state_fd, LOCK_EX);
}

static void table_unlock(void)
{
    flock(state_fd, LOCK_UN);
    pthread_mutex_unlock(&table_mutex);
}

/* The slot of fd's file (found or added by device and inode), -1 if there
 * is no table or it is full. */
static int slot_for(int fd, const char *path)
{
    struct stat st;
    if (!table || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return -1;
    uint64_t h = ((uint64_t)st.st_dev * 0x9E3779B97F4A7C15ull) ^ ((uint64_t)st.st_ino * 0xC2B2AE3D27D4EB4Full);
    int found = -1;
    table_lock();
    for (int i = 0; i < NSLOTS; i++) {
        struct file_state *f = &table[(h + (uint64_t)i) % NSLOTS];
        if (f->used && f->dev == (uint64_t)st.st_dev && f->ino == (uint64_t)st.st_ino) {
            found = (int)((h + (uint64_t)i) % NSLOTS);
            break;
        }
        if (!f->used) {
            f->used = 1;
            f->dev = (uint64_t)st.st_dev;
            f->ino = (uint64_t)st.st_ino;
            size_t len = strlen(path);
            snprintf(f->name, NAME_LEN, "%s", len >= NAME_LEN ? path + len - (NAME_LEN - 1) : path);
            found = (int)((h + (uint64_t)i) % NSLOTS);
            break;
        }
    }
    table_unlock();
    return found;
}

static void track(int fd, const char *path)
{
    if (!fd_in_range(fd)) return;
    int slot = slot_for(fd, path);
    /* directories and files the table cannot hold still count their calls */
    atomic_store(&slot_of_fd[fd], slot >= 0 ? slot + 1 : -1);
}

static int tracked(int fd)
{
    return fd_in_range(fd) && atomic_load(&slot_of_fd[fd]) != 0;
}

/* A write of n bytes by this process: the lock changes hands if another
 * process owned it, writing back that owner's dirty bytes. */
static void wrote(int fd, long long n)
{
    if (!tracked(fd)) return;
    count(WRITE, 1);
    count(BYTES_WRITTEN, n);
    int slot = atomic_load(&slot_of_fd[fd]) - 1;
    if (slot < 0) return;
    int32_t me = (int32_t)getpid();
    table_lock();
    struct file_state *f = &table[slot];
    if (f->owner != me) {
        if (f->owner != 0) {
            f->handoffs++;
            f->cancelled += f->dirty;
            count(HANDOFF, 1);
            count(CANCELLED_BYTES, f->dirty);
        }
        f->owner = me;
        f->dirty = 0;
        int seen = 0;
        for (int i = 0; i < f->nwriters && i < MAX_WRITERS; i++) seen |= f->writers[i] == me;
        if (!seen) {
            if (f->nwriters < MAX_WRITERS) f->writers[f->nwriters] = me;
            f->nwriters++;
        }
    }
    f->dirty += n;
    f->writes++;
    table_unlock();
}

/* fsync: one metadata request, and the caller's dirty bytes written back. */
static void synced(int fd)
{
    if (!tracked(fd)) return;
    count(FSYNC, 1);
    int slot = atomic_load(&slot_of_fd[fd]) - 1;
    if (slot < 0) return;
    table_lock();
    struct file_state *f = &table[slot];
    f->fsyncs++;
    if (f->owner == (int32_t)getpid()) f->dirty = 0;
    table_unlock();
}

static int opened(const char *path, int flags, mode_t mode, int dirfd, int at)
{
    int fd;
    /* Whether the open made the file: O_EXCL first, then without it. */
    if ((flags & O_CREAT) && !(flags & O_EXCL)) {
        fd = at ? real_openat(dirfd, path, flags | O_EXCL, mode) : real_open(path, flags | O_EXCL, mode);
        if (fd >= 0) {
            count(CREATE, 1);
            return fd;
        }
        if (errno != EEXIST) return fd;
        fd = at ? real_openat(dirfd, path, flags, mode) : real_open(path, flags, mode);
        if (fd >= 0) count(OPEN, 1);
        return fd;
    }
    fd = at ? real_openat(dirfd, path, flags, mode) : real_open(path, flags, mode);
    if (fd >= 0) count((flags & O_CREAT) ? CREATE : OPEN, 1);
    return fd;
}

int open(const char *path, int flags, ...)
{
    RESOLVE(real_open);
    mode_t mode = 0;
    OPEN_MODE(mode, flags);
    if (!under_prefix(path)) {
        int fd = real_open(path, flags, mode);
        if (fd_in_range(fd)) atomic_store(&slot_of_fd[fd], 0);
        return fd;
    }
    int fd = opened(path, flags, mode, AT_FDCWD, 0);
    track(fd, path);
    return fd;
}

int open64(const char *path, int flags, ...) __attribute__((alias("open")));

int openat(int dirfd, const char *path, int flags, ...)
{
    RESOLVE(real_openat);
    mode_t mode = 0;
    OPEN_MODE(mode, flags);
    /* Relative to a directory descriptor: counted when it is tracked. */
    int counted = (path[0] == '/' ? under_prefix(path) : (dirfd != AT_FDCWD && tracked(dirfd)));
    if (!counted) {
        int fd = real_openat(dirfd, path, flags, mode);
        if (fd_in_range(fd)) atomic_store(&slot_of_fd[fd], 0);
        return fd;
    }
    int fd = opened(path, flags, mode, dirfd, 1);
    track(fd, path);
    return fd;
}

int openat64(int dirfd, const char *path, int flags, ...) __attribute__((alias("openat")));

FILE *fopen(const char *path, const char *how)
{
    RESOLVE(real_fopen);
    int counted = under_prefix(path);
    int creates = counted && (how[0] == 'w' || how[0] == 'a') && real_access(path, F_OK) != 0;
    FILE *fp = real_fopen(path, how);
    if (!fp) return fp;
    int fd = fileno(fp);
    if (!counted) {
        if (fd_in_range(fd)) atomic_store(&slot_of_fd[fd], 0);
        return fp;
    }
    count(creates ? CREATE : OPEN, 1);
    track(fd, path);
    return fp;
}

FILE *fopen64(const char *path, const char *how) __attribute__((alias("fopen")));

int fclose(FILE *fp)
{
    RESOLVE(real_fclose);
    int fd = fileno(fp);
    if (tracked(fd)) {
        count(CLOSE, 1);
        atomic_store(&slot_of_fd[fd], 0);
    }
    return real_fclose(fp);
}

size_t fwrite(const void *buf, size_t size, size_t n, FILE *fp)
{
    RESOLVE(real_fwrite);
    wrote(fileno(fp), (long long)(size * n));
    return real_fwrite(buf, size, n, fp);
}

int close(int fd)
{
    RESOLVE(real_close);
    if (tracked(fd)) {
        count(CLOSE, 1);
        atomic_store(&slot_of_fd[fd], 0);
    }
    return real_close(fd);
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
    RESOLVE(real_pwrite);
    wrote(fd, (long long)n);
    return real_pwrite(fd, buf, n, off);
}

ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off) __attribute__((alias("pwrite")));

ssize_t write(int fd, const void *buf, size_t n)
{
    RESOLVE(real_write);
    wrote(fd, (long long)n);
    return real_write(fd, buf, n);
}

ssize_t pwritev(int fd, const struct iovec *iov, int n, off_t off)
{
    RESOLVE(real_pwritev);
    long long bytes = 0;
    for (int i = 0; i < n; i++) bytes += (long long)iov[i].iov_len;
    wrote(fd, bytes);
    return real_pwritev(fd, iov, n, off);
}

ssize_t pwritev64(int fd, const struct iovec *iov, int n, off_t off) __attribute__((alias("pwritev")));

ssize_t pread(int fd, void *buf, size_t n, off_t off)
{
    RESOLVE(real_pread);
    if (tracked(fd)) {
        count(READ, 1);
        count(BYTES_READ, (long long)n);
    }
    return real_pread(fd, buf, n, off);
}

ssize_t pread64(int fd, void *buf, size_t n, off_t off) __attribute__((alias("pread")));

ssize_t read(int fd, void *buf, size_t n)
{
    RESOLVE(real_read);
    if (tracked(fd)) {
        count(READ, 1);
        count(BYTES_READ, (long long)n);
    }
    return real_read(fd, buf, n);
}

int fsync(int fd)
{
    RESOLVE(real_fsync);
    synced(fd);
    return real_fsync(fd);
}

int fdatasync(int fd)
{
    RESOLVE(real_fdatasync);
    synced(fd);
    return real_fdatasync(fd);
}

#define PATH_CALL(kind, test, call) \
    do { \
        if (test) count(kind, 1); \
        return call; \
    } while (0)

int rename(const char *from, const char *to)
{
    RESOLVE(real_rename);
    PATH_CALL(RENAME, under_prefix(from) || under_prefix(to), real_rename(from, to));
}

int mkdir(const char *path, mode_t mode)
{
    RESOLVE(real_mkdir);
    PATH_CALL(MKDIR, under_prefix(path), real_mkdir(path, mode));
}

int unlink(const char *path)
{
    RESOLVE(real_unlink);
    PATH_CALL(UNLINK, under_prefix(path), real_unlink(path));
}

int unlinkat(int dirfd, const char *path, int flags)
{
    RESOLVE(real_unlinkat);
    int counted = (path[0] == '/' ? under_prefix(path) : (dirfd != AT_FDCWD && tracked(dirfd)));
    PATH_CALL((flags & AT_REMOVEDIR) ? RMDIR : UNLINK, counted, real_unlinkat(dirfd, path, flags));
}

int rmdir(const char *path)
{
    RESOLVE(real_rmdir);
    PATH_CALL(RMDIR, under_prefix(path), real_rmdir(path));
}

int stat(const char *path, struct stat *st)
{
    RESOLVE(real_stat);
    PATH_CALL(STAT, under_prefix(path), real_stat(path, st));
}

/* The 64-bit names take struct stat64 (the same layout on 64-bit Linux). */
int stat64(const char *path, struct stat64 *st)
{
    return stat(path, (struct stat *)st);
}

int lstat(const char *path, struct stat *st)
{
    RESOLVE(real_lstat);
    PATH_CALL(STAT, under_prefix(path), real_lstat(path, st));
}

int lstat64(const char *path, struct stat64 *st)
{
    return lstat(path, (struct stat *)st);
}

int fstatat(int dirfd, const char *path, struct stat *st, int flags)
{
    RESOLVE(real_fstatat);
    int counted = (path[0] == '/' ? under_prefix(path) : (dirfd != AT_FDCWD && tracked(dirfd)));
    PATH_CALL(STAT, counted, real_fstatat(dirfd, path, st, flags));
}

int fstatat64(int dirfd, const char *path, struct stat64 *st, int flags)
{
    return fstatat(dirfd, path, (struct stat *)st, flags);
}

int access(const char *path, int how)
{
    RESOLVE(real_access);
    PATH_CALL(STAT, under_prefix(path), real_access(path, how));
}

DIR *opendir(const char *path)
{
    RESOLVE(real_opendir);
    PATH_CALL(READDIR, under_prefix(path), real_opendir(path));
}

ssize_t readlink(const char *path, char *buf, size_t n)
{
    RESOLVE(real_readlink);
    PATH_CALL(STAT, under_prefix(path), real_readlink(path, buf, n));
}

char *realpath(const char *path, char *out)
{
    RESOLVE(real_realpath);
    PATH_CALL(STAT, under_prefix(path), real_realpath(path, out));
}

int statfs(const char *path, struct statfs *out)
{
    RESOLVE(real_statfs);
    PATH_CALL(STAT, under_prefix(path), real_statfs(path, out));
}

int statfs64(const char *path, struct statfs64 *out)
{
    return statfs(path, (struct statfs *)out);
}

int truncate(const char *path, off_t len)
{
    RESOLVE(real_truncate);
    PATH_CALL(SETATTR, under_prefix(path), real_truncate(path, len));
}

int truncate64(const char *path, off_t len) __attribute__((alias("truncate")));

int futimens(int fd, const struct timespec times[2])
{
    RESOLVE(real_futimens);
    PATH_CALL(SETATTR, tracked(fd), real_futimens(fd, times));
}

int flock(int fd, int how)
{
    RESOLVE(real_flock);
    if (fd != state_fd && tracked(fd)) count(LOCK, 1);
    return real_flock(fd, how);
}

int fcntl(int fd, int cmd, ...)
{
    RESOLVE(real_fcntl);
    va_list ap;
    va_start(ap, cmd);
    void *arg = va_arg(ap, void *); /* an int or a pointer: passed on as it came */
    va_end(ap);
    if (tracked(fd) && (cmd == F_SETLK || cmd == F_SETLKW || cmd == F_GETLK || cmd == F_OFD_SETLK ||
                        cmd == F_OFD_SETLKW || cmd == F_OFD_GETLK))
        count(LOCK, 1);
    return real_fcntl(fd, cmd, arg);
}

int fcntl64(int fd, int cmd, ...) __attribute__((alias("fcntl")));
