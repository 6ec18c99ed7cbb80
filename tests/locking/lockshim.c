/* lockshim.c - LD_PRELOAD library for tests only: file systems whose
 * locks do not work as a local one's.
 *
 *   LOCKSHIM_MODE=noflock    every fcntl lock command and flock(2) fails
 *                            with ENOSYS (Lustre mounted -o noflock)
 *   LOCKSHIM_MODE=nodelocal  every lock is granted and every probe finds
 *                            the file free, as a process on another node
 *                            sees node-local locks (Lustre localflock,
 *                            BeeGFS, NFS nolock)
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
#include <unistd.h>

static int mode(void)
{
    const char *m = getenv("LOCKSHIM_MODE");
    if (!m) return 0;
    if (strcmp(m, "noflock") == 0) return 1;
    if (strcmp(m, "nodelocal") == 0) return 2;
    return 0;
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

typedef int (*open_fn)(const char *, int, ...);

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
