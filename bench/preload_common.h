/* preload_common.h - the plumbing shared by the benchmark-only LD_PRELOAD
 * libraries (bench/lustre_model.c, bench/request_cost.c): the real libc
 * functions behind the wrappers, the directory whose paths count, open's
 * optional mode argument, descriptor bounds and the per-process report file.
 *
 * Never part of colfile.  Each library is one .c file that includes this
 * header once (the definitions are static) and defines resolve(), which
 * looks up every real_* pointer it uses, these three included.  The include
 * is relative to the .c file, so the build lines need no -I. */
#ifndef COLFILE_BENCH_PRELOAD_COMMON_H
#define COLFILE_BENCH_PRELOAD_COMMON_H

#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

/* Descriptors at or above this are passed through untracked. */
#define MAX_FD 65536

/* Both libraries write their report with these. */
static int (*real_open)(const char *, int, ...);
static ssize_t (*real_write)(int, const void *, size_t);
static int (*real_close)(int);

/* Defined by each library: fills in every real_* pointer it uses. */
static void resolve(void);

#define SYM(var, name) var = (__typeof__(var))dlsym(RTLD_NEXT, name)

/* Another library's constructor may do I/O before ours runs. */
#define RESOLVE(fn) \
    do { \
        if (!(fn)) resolve(); \
    } while (0)

/* open's third argument: passed only with O_CREAT or O_TMPFILE.  Use in a
 * variadic function whose last named parameter is `flags`. */
#define OPEN_MODE(mode, flags) \
    do { \
        if ((flags) & (O_CREAT | O_TMPFILE)) { \
            va_list ap_; \
            va_start(ap_, flags); \
            (mode) = (mode_t)va_arg(ap_, int); \
            va_end(ap_); \
        } \
    } while (0)

static char prefix[4096];
static size_t prefix_len;

/* The directory named by environment variable `var`, without trailing
 * slashes; none (nothing counts) when it is unset or empty. */
static void set_prefix(const char *var)
{
    const char *d = getenv(var);
    if (d && *d) {
        snprintf(prefix, sizeof prefix, "%s", d);
        prefix_len = strlen(prefix);
        while (prefix_len > 1 && prefix[prefix_len - 1] == '/') prefix[--prefix_len] = '\0';
    }
}

static int under_prefix(const char *path)
{
    if (!prefix_len || !path) return 0;
    return strncmp(path, prefix, prefix_len) == 0 && (path[prefix_len] == '/' || path[prefix_len] == '\0');
}

static int fd_in_range(int fd)
{
    return fd >= 0 && fd < MAX_FD;
}

/* The n bytes of text as <dir>/<pid>.json. */
static void write_report(const char *dir, const char *text, int n)
{
    char path[8192];
    snprintf(path, sizeof path, "%s/%ld.json", dir, (long)getpid());
    int fd = real_open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0) return;
    if (real_write(fd, text, (size_t)n) != n) { /* nothing to do about it at exit */ }
    real_close(fd);
}

#endif
