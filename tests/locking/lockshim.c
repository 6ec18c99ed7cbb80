/* lockshim.c - LD_PRELOAD library for tests only: file systems whose
 * locks do not work as a local one's.
 *
 *   LOCKSHIM_MODE=noflock    every fcntl lock command and flock(2) fails
 *                            with ENOSYS (Lustre mounted -o noflock)
 *   LOCKSHIM_MODE=nodelocal  every lock is granted and every probe finds
 *                            the file free, as a process on another node
 *                            sees node-local locks (Lustre localflock,
 *                            BeeGFS, NFS nolock)
 *   LOCKSHIM_MODE=noexchange renameat2 with RENAME_EXCHANGE fails with
 *                            EINVAL (NFS, older kernels and file systems),
 *                            also through syscall(SYS_renameat2, ...)
 *   LOCKSHIM_MODE=a,b        several of these (noflock,noexchange)
 *   LOCKSHIM_LOG=file        append one line per call the shim answered
 *                            itself ("noflock fcntl", "nodelocal flock",
 *                            "noexchange renameat2"), so that a harness
 *                            can tell that its model was exercised
 *   LOCKSHIM_HOSTNAME=name   gethostname(2) answers name (a process "on
 *                            another node")
 *   LOCKSHIM_MOUNTINFO=file  opening /proc/self/mountinfo (open, open64,
 *                            fopen) opens file instead: a mount table of
 *                            Lustre, BeeGFS or NFS mounts on this machine
 *
 * Other calls are forwarded unchanged. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../shim_syscall.h"

#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif

/* Whether the comma list LOCKSHIM_MODE names `word`. */
static int has_mode(const char *word)
{
    const char *m = getenv("LOCKSHIM_MODE");
    size_t n = strlen(word);
    while (m && *m) {
        const char *end = strchr(m, ',');
        size_t len = end ? (size_t)(end - m) : strlen(m);
        if (len == n && strncmp(m, word, n) == 0) return 1;
        m = end ? end + 1 : NULL;
    }
    return 0;
}

typedef int (*open_fn)(const char *, int, ...);

static void note(const char *what)
{
    const char *log = getenv("LOCKSHIM_LOG");
    if (!log) return;
    int e = errno;
    open_fn real_open = (open_fn)dlsym(RTLD_NEXT, "open");
    int fd = real_open(log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd >= 0) {
        /* the program: its first two arguments (NULs as spaces) */
        char prog[128] = "";
        int cfd = real_open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
        if (cfd >= 0) {
            ssize_t k = read(cfd, prog, sizeof prog - 1);
            close(cfd);
            prog[k > 0 ? k : 0] = 0;
            for (ssize_t i = 0, zeros = 0; i < k; i++)
                if (prog[i] == 0 && ++zeros < 2) prog[i] = ' ';
        }
        char line[320];
        int n = snprintf(line, sizeof line, "%ld %s [%s]\n", (long)getpid(), what, prog);
        if (write(fd, line, (size_t)n) < 0) { /* a lost note only undercounts */ }
        close(fd);
    }
    errno = e;
}

/* The lock model: 1 noflock, 2 nodelocal, 0 the real locks. */
static int mode(void)
{
    if (has_mode("noflock")) return 1;
    if (has_mode("nodelocal")) return 2;
    return 0;
}

__attribute__((visibility("default"))) int renameat2(int da, const char *a, int db, const char *b, unsigned flags)
{
    if ((flags & RENAME_EXCHANGE) && has_mode("noexchange")) {
        note("noexchange renameat2");
        errno = EINVAL;
        return -1;
    }
    int (*real)(int, const char *, int, const char *, unsigned) =
        (int (*)(int, const char *, int, const char *, unsigned))dlsym(RTLD_NEXT, "renameat2");
    if (!real) {
        errno = ENOSYS;
        return -1;
    }
    return real(da, a, db, b, flags);
}

__attribute__((visibility("default"))) long syscall(long number, ...)
{
    long a[6];
    SHIM_SYSCALL_ARGS(a, number);
#ifdef SYS_renameat2
    if (number == SYS_renameat2 && (a[4] & RENAME_EXCHANGE) && has_mode("noexchange")) {
        note("noexchange renameat2");
        errno = EINVAL;
        return -1;
    }
#endif
    long (*real)(long, ...) = (long (*)(long, ...))dlsym(RTLD_NEXT, "syscall");
    return real(number, a[0], a[1], a[2], a[3], a[4], a[5]);
}

static int is_lock_cmd(int cmd)
{
    switch (cmd) {
    case F_SETLK: case F_SETLKW: case F_GETLK:
#ifdef F_OFD_SETLK
    case F_OFD_SETLK: case F_OFD_SETLKW: case F_OFD_GETLK:
#endif
        return 1;
    default:
        return 0;
    }
}

static int is_get(int cmd)
{
#ifdef F_OFD_GETLK
    if (cmd == F_OFD_GETLK) return 1;
#endif
    return cmd == F_GETLK;
}

typedef int (*fcntl_fn)(int, int, ...);

static int shim_fcntl(const char *name, int fd, int cmd, void *arg)
{
    int m = mode();
    if (m && is_lock_cmd(cmd)) {
        note(m == 1 ? "noflock fcntl" : "nodelocal fcntl");
        if (m == 1) {
            errno = ENOSYS;
            return -1;
        }
        if (is_get(cmd)) ((struct flock *)arg)->l_type = F_UNLCK;
        return 0;
    }
    fcntl_fn real = (fcntl_fn)dlsym(RTLD_NEXT, name);
    if (!real) real = (fcntl_fn)dlsym(RTLD_NEXT, "fcntl");
    return real(fd, cmd, arg);
}

__attribute__((visibility("default"))) int fcntl(int fd, int cmd, ...)
{
    va_list ap;
    va_start(ap, cmd);
    void *arg = va_arg(ap, void *);
    va_end(ap);
    return shim_fcntl("fcntl", fd, cmd, arg);
}

__attribute__((visibility("default"))) int fcntl64(int fd, int cmd, ...)
{
    va_list ap;
    va_start(ap, cmd);
    void *arg = va_arg(ap, void *);
    va_end(ap);
    return shim_fcntl("fcntl64", fd, cmd, arg);
}

__attribute__((visibility("default"))) int flock(int fd, int op)
{
    int m = mode();
    if (m) note(m == 1 ? "noflock flock" : "nodelocal flock");
    if (m == 1) {
        errno = ENOSYS;
        return -1;
    }
    if (m == 2) return 0;
    int (*real)(int, int) = (int (*)(int, int))dlsym(RTLD_NEXT, "flock");
    return real(fd, op);
}

__attribute__((visibility("default"))) int gethostname(char *name, size_t len)
{
    const char *h = getenv("LOCKSHIM_HOSTNAME");
    if (!h) {
        int (*real)(char *, size_t) = (int (*)(char *, size_t))dlsym(RTLD_NEXT, "gethostname");
        return real(name, len);
    }
    if (strlen(h) + 1 > len) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(name, h, strlen(h) + 1);
    return 0;
}

/* /proc/self/mountinfo, or the table LOCKSHIM_MOUNTINFO names. */
static const char *table(const char *path)
{
    const char *t = getenv("LOCKSHIM_MOUNTINFO");
    return t && path && strcmp(path, "/proc/self/mountinfo") == 0 ? t : path;
}

static int shim_open(const char *name, const char *path, int flags, va_list ap)
{
    mode_t mode = (flags & (O_CREAT | O_TMPFILE)) ? (mode_t)va_arg(ap, int) : 0;
    open_fn real = (open_fn)dlsym(RTLD_NEXT, name);
    return real(table(path), flags, mode);
}

__attribute__((visibility("default"))) int open(const char *path, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    int fd = shim_open("open", path, flags, ap);
    va_end(ap);
    return fd;
}

__attribute__((visibility("default"))) int open64(const char *path, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    int fd = shim_open("open64", path, flags, ap);
    va_end(ap);
    return fd;
}

__attribute__((visibility("default"))) FILE *fopen(const char *path, const char *mode)
{
    FILE *(*real)(const char *, const char *) = (FILE * (*)(const char *, const char *))dlsym(RTLD_NEXT, "fopen");
    return real(table(path), mode);
}

__attribute__((visibility("default"))) FILE *fopen64(const char *path, const char *mode)
{
    FILE *(*real)(const char *, const char *) = (FILE * (*)(const char *, const char *))dlsym(RTLD_NEXT, "fopen64");
    return real(table(path), mode);
}
