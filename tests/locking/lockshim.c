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
