/* request_cost.c - benchmark-only LD_PRELOAD library for bench/iosim_sweep.py:
 * counts the file-system requests a process makes under one directory and,
 * optionally, makes each of them cost time on a shared "server", as on a
 * parallel file system where opens, creates and renames go to a metadata
 * server and writes to one file need extent locks.
 *
 * Never linked into colfile; bench/iosim_sweep.py builds it with
 *   cc -O2 -shared -fPIC -o request_cost.so bench/request_cost.c -ldl -lpthread
 * and runs the iosim programs with LD_PRELOAD=request_cost.so (libcolfile
 * calls libc through the dynamic linker, so these wrappers see its calls).
 *
 * Environment:
 *   COLFILE_REQUEST_COST_DIR     only paths under this directory (and the
 *                                descriptors opened on them) count
 *   COLFILE_REQUEST_COST_US      service time of one request in
 *                                microseconds (default 0: count only)
 *   COLFILE_REQUEST_COST_LOCK    a file every process locks (flock) while
 *                                its request is served: the server handles
 *                                one request at a time, whichever process
 *                                sends it
 *   COLFILE_REQUEST_COST_REPORT  a directory: at exit each process writes
 *                                <pid>.json there with its counts and its
 *                                MPI rank (processes without PMI_RANK, such
 *                                as mpiexec, and processes that made no
 *                                request write nothing)
 *
 * Requests: open (files and directories under the prefix), pwrite/write,
 * pread/read, fsync, rename, mkdir, unlink, rmdir.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "preload_common.h"

enum { OPEN, WRITE, READ, SYNC, META, NKINDS };
static const char *kind_names[NKINDS] = { "open", "write", "read", "fsync", "metadata" };

static long cost_us;
static int lock_fd = -1;
static char report_dir[4096];
static atomic_long counts[NKINDS];
static atomic_long bytes_written, bytes_read;
static atomic_char tracked[MAX_FD];
static pthread_mutex_t serve_mutex = PTHREAD_MUTEX_INITIALIZER;

static ssize_t (*real_pwrite)(int, const void *, size_t, off_t);
static ssize_t (*real_pread)(int, void *, size_t, off_t);
static ssize_t (*real_read)(int, void *, size_t);
static int (*real_fsync)(int);
static int (*real_rename)(const char *, const char *);
static int (*real_mkdir)(const char *, mode_t);
static int (*real_unlink)(const char *);
static int (*real_rmdir)(const char *);

static void resolve(void)
{
    SYM(real_open, "open");
    SYM(real_pwrite, "pwrite");
    SYM(real_write, "write");
    SYM(real_pread, "pread");
    SYM(real_read, "read");
    SYM(real_close, "close");
    SYM(real_fsync, "fsync");
    SYM(real_rename, "rename");
    SYM(real_mkdir, "mkdir");
    SYM(real_unlink, "unlink");
    SYM(real_rmdir, "rmdir");
}

__attribute__((constructor)) static void setup(void)
{
    RESOLVE(real_open);
    set_prefix("COLFILE_REQUEST_COST_DIR");
    const char *us = getenv("COLFILE_REQUEST_COST_US");
    cost_us = us ? strtol(us, NULL, 10) : 0;
    const char *lock = getenv("COLFILE_REQUEST_COST_LOCK");
    if (cost_us > 0 && lock && *lock) lock_fd = real_open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    const char *r = getenv("COLFILE_REQUEST_COST_REPORT");
    if (r && *r) snprintf(report_dir, sizeof report_dir, "%s", r);
}

__attribute__((destructor)) static void report(void)
{
    const char *rank = getenv("PMI_RANK");
    if (!report_dir[0] || !rank || !*rank) return; /* not an MPI rank (mpiexec itself) */
    long any = 0;
    for (int k = 0; k < NKINDS; k++) any += atomic_load(&counts[k]);
    if (!any) return; /* a helper process a rank started, which touched nothing */
    char text[1024];
    int n = snprintf(text, sizeof text, "{\"pid\": %ld, \"rank\": %ld", (long)getpid(), strtol(rank, NULL, 10));
    for (int k = 0; k < NKINDS; k++)
        n += snprintf(text + n, sizeof text - (size_t)n, ", \"%s\": %ld", kind_names[k], atomic_load(&counts[k]));
    n += snprintf(text + n, sizeof text - (size_t)n, ", \"bytes_written\": %ld, \"bytes_read\": %ld}\n",
                  atomic_load(&bytes_written), atomic_load(&bytes_read));
    write_report(report_dir, text, n);
}

/* One request: counted, then served (one at a time over all processes). */
static void request(int kind)
{
    atomic_fetch_add(&counts[kind], 1);
    if (cost_us <= 0) return;
    struct timespec ts = { cost_us / 1000000, (cost_us % 1000000) * 1000 };
    pthread_mutex_lock(&serve_mutex);
    if (lock_fd >= 0) flock(lock_fd, LOCK_EX);
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
    if (lock_fd >= 0) flock(lock_fd, LOCK_UN);
    pthread_mutex_unlock(&serve_mutex);
}

static int is_tracked(int fd)
{
    return fd_in_range(fd) && atomic_load(&tracked[fd]);
}

int open(const char *path, int flags, ...)
{
    RESOLVE(real_open);
    mode_t mode = 0;
    OPEN_MODE(mode, flags);
    int counted = under_prefix(path);
    if (counted) request(OPEN);
    int fd = real_open(path, flags, mode);
    if (fd_in_range(fd)) atomic_store(&tracked[fd], (char)counted);
    return fd;
}

int open64(const char *path, int flags, ...) __attribute__((alias("open")));

int close(int fd)
{
    RESOLVE(real_close);
    if (fd_in_range(fd)) atomic_store(&tracked[fd], 0);
    return real_close(fd);
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
    RESOLVE(real_pwrite);
    if (is_tracked(fd)) {
        request(WRITE);
        atomic_fetch_add(&bytes_written, (long)n);
    }
    return real_pwrite(fd, buf, n, off);
}

ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off) __attribute__((alias("pwrite")));

ssize_t write(int fd, const void *buf, size_t n)
{
    RESOLVE(real_write);
    if (is_tracked(fd)) {
        request(WRITE);
        atomic_fetch_add(&bytes_written, (long)n);
    }
    return real_write(fd, buf, n);
}

ssize_t pread(int fd, void *buf, size_t n, off_t off)
{
    RESOLVE(real_pread);
    if (is_tracked(fd)) {
        request(READ);
        atomic_fetch_add(&bytes_read, (long)n);
    }
    return real_pread(fd, buf, n, off);
}

ssize_t pread64(int fd, void *buf, size_t n, off_t off) __attribute__((alias("pread")));

ssize_t read(int fd, void *buf, size_t n)
{
    RESOLVE(real_read);
    if (is_tracked(fd)) {
        request(READ);
        atomic_fetch_add(&bytes_read, (long)n);
    }
    return real_read(fd, buf, n);
}

int fsync(int fd)
{
    RESOLVE(real_fsync);
    if (is_tracked(fd)) request(SYNC);
    return real_fsync(fd);
}

int rename(const char *from, const char *to)
{
    RESOLVE(real_rename);
    if (under_prefix(from) || under_prefix(to)) request(META);
    return real_rename(from, to);
}

int mkdir(const char *path, mode_t mode)
{
    RESOLVE(real_mkdir);
    if (under_prefix(path)) request(META);
    return real_mkdir(path, mode);
}

int unlink(const char *path)
{
    RESOLVE(real_unlink);
    if (under_prefix(path)) request(META);
    return real_unlink(path);
}

int rmdir(const char *path)
{
    RESOLVE(real_rmdir);
    if (under_prefix(path)) request(META);
    return real_rmdir(path);
}
