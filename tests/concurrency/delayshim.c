/* delayshim.c - LD_PRELOAD library of the concurrency harness: sleeps a
 * random few milliseconds before every unlink, rmdir, rename, open and
 * renameat2 (stat and lstat on request) below a scope directory, so that
 * the windows between the file operations of one process are wide enough
 * for another process to act in them.  It changes no result: every call is forwarded unchanged.
 *
 *   CF_DELAY_SCOPE   directory (absolute): only paths below it are delayed
 *   CF_DELAY_MAX_US  longest sleep in microseconds (default 5000)
 *   CF_DELAY_PROB    probability that a call is delayed (default 1)
 *   CF_DELAY_SEED    seed of this process's random stream (default: pid)
 *   CF_DELAY_MIN_US  shortest sleep in microseconds (default 0)
 *   CF_DELAY_MATCH   only paths whose last component contains this text
 *                    (e.g. ".colfile-v1.tmp." to hold a writer between
 *                    its header's rename and colfile-v1's)
 *   CF_DELAY_NOTE    file that gets a line with the path of each call
 *                    when its sleep begins (a test waits for it to know
 *                    that the process is held)
 *   CF_DELAY_SKIP    the first N calls that would be delayed are not (to
 *                    hold, say, the third lstat of a path)
 *   CF_DELAY_CALLS   only these calls, comma-separated names such as
 *                    "lstat" or "open,rename" (default: all but stat
 *                    and lstat; stat64 counts as stat, openat as open)
 *
 * Calls through a directory descriptor are in scope when the descriptor's
 * path (/proc/self/fd) is.  renameat2 reaches the kernel through
 * syscall(2) in libcolfile, so syscall(SYS_renameat2, ...) is delayed too.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "../shim_syscall.h"

static char g_scope[PATH_MAX];
static size_t g_scope_len;
static long g_max_us = 5000;
static long g_min_us;
static char g_match[256];
static char g_note[PATH_MAX];
static char g_calls[256];
static long g_skip;
static double g_prob = 1.0;
static uint64_t g_state;
static int g_ready;
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;

static void init(void)
{
    if (g_ready)
        return;
    const char *s = getenv("CF_DELAY_SCOPE");
    if (s && *s && strlen(s) < sizeof g_scope) {
        strcpy(g_scope, s);
        g_scope_len = strlen(g_scope);
        while (g_scope_len > 1 && g_scope[g_scope_len - 1] == '/')
            g_scope[--g_scope_len] = '\0';
    }
    if ((s = getenv("CF_DELAY_MAX_US")))
        g_max_us = strtol(s, NULL, 10);
    if ((s = getenv("CF_DELAY_MIN_US")))
        g_min_us = strtol(s, NULL, 10);
    if ((s = getenv("CF_DELAY_MATCH")) && strlen(s) < sizeof g_match)
        strcpy(g_match, s);
    if ((s = getenv("CF_DELAY_NOTE")) && strlen(s) < sizeof g_note)
        strcpy(g_note, s);
    if ((s = getenv("CF_DELAY_SKIP")))
        g_skip = strtol(s, NULL, 10);
    if ((s = getenv("CF_DELAY_CALLS")) && strlen(s) + 2 < sizeof g_calls)
        snprintf(g_calls, sizeof g_calls, ",%s,", s);
    if ((s = getenv("CF_DELAY_PROB")))
        g_prob = strtod(s, NULL);
    g_state = (s = getenv("CF_DELAY_SEED")) ? strtoull(s, NULL, 10) : 0;
    g_state = g_state * 0x9E3779B97F4A7C15ull + (uint64_t)getpid() + 1;
    g_ready = 1;
}

static uint64_t next_random(void)
{
    pthread_mutex_lock(&g_mu);
    uint64_t z = (g_state += 0x9E3779B97F4A7C15ull);
    pthread_mutex_unlock(&g_mu);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static int in_scope_path(const char *p)
{
    if (!g_scope_len || !p)
        return 0;
    return strncmp(p, g_scope, g_scope_len) == 0 && (p[g_scope_len] == '/' || p[g_scope_len] == '\0');
}

static int in_scope(int dirfd, const char *path)
{
    init();
    if (!g_scope_len || !path)
        return 0;
    if (path[0] == '/')
        return in_scope_path(path);
    char dir[PATH_MAX];
    if (dirfd == AT_FDCWD) {
        if (!getcwd(dir, sizeof dir))
            return 0;
    } else {
        char link[64];
        snprintf(link, sizeof link, "/proc/self/fd/%d", dirfd);
        ssize_t n = readlink(link, dir, sizeof dir - 1);
        if (n <= 0)
            return 0;
        dir[n] = '\0';
    }
    size_t n = strlen(dir);
    if (n + 1 + strlen(path) >= sizeof dir)
        return 0;
    dir[n] = '/';
    strcpy(dir + n + 1, path);
    return in_scope_path(dir);
}

static int matches(const char *path)
{
    if (!g_match[0])
        return 1;
    const char *leaf = strrchr(path, '/');
    return strstr(leaf ? leaf + 1 : path, g_match) != NULL;
}

/* `call` is one of the names CF_DELAY_CALLS lists (",open," in ",stat,open,") */
static int selected(const char *call)
{
    if (!g_calls[0]) /* stat and lstat are frequent: only when asked for */
        return strcmp(call, "stat") != 0 && strcmp(call, "lstat") != 0;
    char key[64];
    snprintf(key, sizeof key, ",%s,", call);
    return strstr(g_calls, key) != NULL;
}

static void maybe_delay(const char *call, int dirfd, const char *path)
{
    if (!in_scope(dirfd, path) || g_max_us <= 0 || !matches(path) || !selected(call))
        return;
    pthread_mutex_lock(&g_mu);
    int skip = g_skip > 0 && g_skip--;
    pthread_mutex_unlock(&g_mu);
    if (skip)
        return;
    uint64_t r = next_random();
    if ((double)(r >> 11) * 0x1.0p-53 >= g_prob)
        return;
    long lo = g_min_us < g_max_us ? g_min_us : g_max_us;
    long us = lo + (long)(next_random() % (uint64_t)(g_max_us - lo + 1));
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    if (g_note[0]) {
        /* (fopen reaches the kernel without the wrappers below) */
        FILE *note = fopen(g_note, "a");
        if (note) {
            fprintf(note, "%s\n", path);
            fclose(note);
        }
    }
    while (nanosleep(&ts, &ts) != 0)
        ;
}

#define REAL(name) \
    static __typeof__(name) *real_##name; \
    if (!real_##name) real_##name = (__typeof__(name) *)dlsym(RTLD_NEXT, #name)

int unlink(const char *path)
{
    REAL(unlink);
    maybe_delay("unlink", AT_FDCWD, path);
    return real_unlink(path);
}

int unlinkat(int dirfd, const char *path, int flags)
{
    REAL(unlinkat);
    maybe_delay("unlink", dirfd, path);
    return real_unlinkat(dirfd, path, flags);
}

int rmdir(const char *path)
{
    REAL(rmdir);
    maybe_delay("rmdir", AT_FDCWD, path);
    return real_rmdir(path);
}

int rename(const char *a, const char *b)
{
    REAL(rename);
    maybe_delay("rename", AT_FDCWD, a);
    return real_rename(a, b);
}

int renameat(int da, const char *a, int db, const char *b)
{
    REAL(renameat);
    maybe_delay("rename", da, a);
    return real_renameat(da, a, db, b);
}

int renameat2(int da, const char *a, int db, const char *b, unsigned flags)
{
    REAL(renameat2);
    maybe_delay("rename", da, a);
    return real_renameat2(da, a, db, b, flags);
}

static mode_t mode_arg(int flags, va_list ap)
{
    return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? (mode_t)va_arg(ap, int) : 0;
}

/* open, open64, openat and openat64: one body (the mode argument is there
 * only with O_CREAT or O_TMPFILE: mode_arg) */
#define DELAYED_OPEN(name, params, dir, ...)       \
    int name params                                \
    {                                              \
        REAL(name);                                \
        va_list ap;                                \
        va_start(ap, flags);                       \
        mode_t m = mode_arg(flags, ap);            \
        va_end(ap);                                \
        maybe_delay("open", dir, path);            \
        return real_##name(__VA_ARGS__, m);        \
    }
DELAYED_OPEN(open, (const char *path, int flags, ...), AT_FDCWD, path, flags)
DELAYED_OPEN(open64, (const char *path, int flags, ...), AT_FDCWD, path, flags)
DELAYED_OPEN(openat, (int dirfd, const char *path, int flags, ...), dirfd, dirfd, path, flags)
DELAYED_OPEN(openat64, (int dirfd, const char *path, int flags, ...), dirfd, dirfd, path, flags)

long syscall(long number, ...)
{
    REAL(syscall);
    long a[6];
    SHIM_SYSCALL_ARGS(a, number);
#ifdef SYS_renameat2
    if (number == SYS_renameat2)
        maybe_delay("rename", (int)a[0], (const char *)a[1]);
#endif
    return real_syscall(number, a[0], a[1], a[2], a[3], a[4], a[5]);
}

/* stat and lstat (and their 64-bit names, which libcolfile calls) */
#define DELAYED_STAT(name, call)                          \
    int name(const char *path, struct stat *st)           \
    {                                                     \
        REAL(name);                                       \
        maybe_delay(call, AT_FDCWD, path);                \
        return real_##name(path, st);                     \
    }
DELAYED_STAT(stat, "stat")
DELAYED_STAT(lstat, "lstat")
#undef stat64
#undef lstat64
int stat64(const char *path, struct stat64 *st)
{
    REAL(stat64);
    maybe_delay("stat", AT_FDCWD, path);
    return real_stat64(path, st);
}

int lstat64(const char *path, struct stat64 *st)
{
    REAL(lstat64);
    maybe_delay("lstat", AT_FDCWD, path);
    return real_lstat64(path, st);
}
