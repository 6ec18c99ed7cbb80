/* faultshim.c - an LD_PRELOAD library that counts, fails and "crashes" the
 * file system calls a colfile writer makes (tests/crash; test-only).
 *
 * Loaded with LD_PRELOAD=faultshim.so into a writer (C or Python, serial or
 * every MPI rank), it interposes the libc calls libcolfile uses to change
 * files -- open/openat/creat (and opendir), write/pwrite/pwritev, ftruncate,
 * fallocate, fsync/fdatasync/syncfs/sync, rename/renameat/renameat2 (also
 * through syscall(SYS_renameat2)), unlink/unlinkat/remove, mkdir/mkdirat,
 * rmdir, link/linkat, close, optionally read/pread -- and malloc, calloc,
 * realloc, strdup, strndup, posix_memalign and aligned_alloc.
 *
 * Only operations on paths below the scope directory are counted (or
 * failed): CF_FAULT_SCOPE, a directory (the File).  Descriptors are tracked
 * from the open that made them, else resolved through /proc/self/fd.  Only
 * allocations whose caller lies in a loaded object whose file name contains
 * CF_FAULT_LIBS (default "libcolfile") are counted: the return address of
 * the allocation call is compared with the text segments of those objects
 * (found with dl_iterate_phdr at start and after every dlopen).  The real
 * allocator is reached through __libc_malloc & co, so there is no recursion.
 *
 * Environment (nothing set but CF_FAULT_SCOPE: count silently):
 *   CF_FAULT_SCOPE=dir        the directory whose contents are watched
 *   CF_FAULT_MODE=count       write every counted operation to the report
 *   CF_FAULT_REPORT=path      report file; "%p" is replaced by the pid.  Its
 *                             first line is "pid P rank R", then one line
 *                             per operation: "<n> <op> <path below scope>
 *                             [bytes]" for I/O, "a<n> alloc <bytes> <lib>+
 *                             <offset>" for allocations
 *   CF_FAULT_OPS=list         comma list of operation classes counted, among
 *                             open create write truncate fsync rename unlink
 *                             mkdir rmdir link close read (default: all but
 *                             read)
 *   CF_FAULT_AT=N             act at the N-th counted operation (1-based)
 *   CF_FAULT_ACTION=a         eio | enospc | short | kill | powerloss | stop: at the
 *                             N-th I/O operation; enomem: at the N-th
 *                             allocation from libcolfile
 *     eio, enospc   the call fails with that errno and does nothing
 *                   (close: the descriptor is closed, then EIO is returned,
 *                   as Linux does)
 *     short         a write moves only half its bytes (rounded down, at
 *                   least 1) and returns that count; other calls run as usual
 *     enomem        the allocation returns NULL (errno ENOMEM)
 *     kill          SIGKILL before the operation is made
 *     powerloss     before the operation is made: undo every change below the
 *                   scope not yet made durable, then SIGKILL (see below)
 *     stop          SIGSTOP before the operation is made, which is made when
 *                   the process is continued (SIGCONT): a test acts between
 *                   two of its operations
 *   CF_FAULT_STICKY=1         eio/enospc: every later counted operation of the
 *                             same class fails too (a disk that stays full)
 *   CF_FAULT_RANK=r           under MPI (PMI_RANK, PMIX_RANK or
 *                             OMPI_COMM_WORLD_RANK set) only rank r acts
 *                             (default 0); the others only count
 *   CF_FAULT_JOURNAL=dir      keep the undo journal there (needed by
 *                             powerloss; on the same file system as the
 *                             scope, outside it).  Every process of a run
 *                             (every MPI rank) shares it
 *   CF_FAULT_KEEP=p           powerloss: instead of dropping every change
 *                             that is not durable, keep each with
 *                             probability p (data of a file as one unit,
 *                             each directory operation on its own)
 *   CF_FAULT_SEED=s           the seed of those draws
 *   CF_FAULT_KEEP_NAMES=list  powerloss: the directory changes not durable
 *                             whose name matches one of these fnmatch(3)
 *                             patterns (comma list) survive as well -- the
 *                             name created, removed or made (mkdir), or
 *                             the new name of a rename (either name of an
 *                             exchange); last component only.  With the
 *                             default CF_FAULT_KEEP=0 nothing else does: a
 *                             deterministic worst case such as "the new
 *                             header's rename reached the disk, the new
 *                             blobs' names did not" (CF_FAULT_KEEP_NAMES=
 *                             header)
 *   CF_FAULT_NOSYNC=list      test-only: the counted operations with these
 *                             numbers (comma list, as CF_FAULT_AT counts),
 *                             when they are fsync/fdatasync, return 0 and
 *                             make nothing durable: a sync the writer no
 *                             longer makes, to prove that a test sees its
 *                             loss (only the rank that acts; CF_FAULT_RANK)
 *   CF_FAULT_VERBOSE=1        say on stderr what was injected
 *
 * faultshim_io.so is the same without the allocation part (-DFAULTSHIM_NO_ALLOC),
 * for writers built with AddressSanitizer, which must own malloc; run them
 * with ASAN_OPTIONS=verify_asan_link_order=0.
 *
 * The power-loss model
 * --------------------
 * While CF_FAULT_JOURNAL is set every change below the scope is journaled
 * before it is made: the bytes a write overwrites and the old size, the
 * bytes a truncate cuts, the victim of an unlink or of a rename that
 * replaces a file (kept alive by a hard link in the journal directory), and
 * every created name.  A change becomes durable:
 *   - data and size of a file: when the file is fsynced or fdatasynced
 *     (or the descriptor was opened O_SYNC/O_DSYNC);
 *   - a name created, removed or renamed in a directory: when that directory
 *     is fsynced (a rename between directories needs both);
 *   - everything: sync() or syncfs();
 *   - every change of the entries of a directory (names created, removed,
 *     renamed in or out) made before its removal, when that removal is
 *     durable (or kept): the directory was empty then, and no file system
 *     brings entries back into a directory removed for good.  Moving a
 *     tree into a trash directory, syncing that, then deleting it and
 *     syncing only the parent of the trash leaves nothing of the tree.
 * At the power loss the changes that are not durable are undone, newest
 * first (by inode and name, so renames of a parent made later do not
 * confuse it), then every process of the run is killed.  Directories are
 * found by inode number; a number that the file system gave to a
 * directory or file made later (ext4 hands out freed numbers again at
 * once) no longer names the directory an older change saw, so that
 * change is not undone into the newcomer.  Processes of an
 * MPI run take the journal lock around each change, so the process that
 * loses power first stops the others (SIGSTOP) between two changes.
 *
 * Limits of the model (it is the worst case of one simple model, not of
 * every file system):
 *   - it drops ALL changes that are not durable (or, with CF_FAULT_KEEP, an
 *     arbitrary subset; with CF_FAULT_KEEP_NAMES, a chosen one); it never
 *     tears a single write into pieces (sectors or pages persisted out of
 *     order within one write) and never keeps part of one file's unsynced
 *     data while dropping the rest;
 *   - fsync of a file does not make the file's own name durable (POSIX), and
 *     no file system journaling that would commit unrelated names together
 *     is modelled: this is stricter than ext4 or xfs;
 *   - a rename half-durable (only one of two directories synced) is undone
 *     whole;
 *   - only calls that go through the interposed libc entry points are seen
 *     (direct system calls other than syscall(SYS_renameat2), mmap writes,
 *     io_uring, copy_file_range are not); nothing outside the scope is
 *     journaled, so a File's own directory should exist (and be durable)
 *     before the run;
 *   - metadata such as modes, times and extended attributes is not restored.
 */
#define _GNU_SOURCE 1

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#endif
#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif

#define SHIM_API __attribute__((visibility("default")))

/* ---- the real functions ------------------------------------------------ */

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void __libc_free(void *);

static int (*real_open)(const char *, int, ...);
static int (*real_openat)(int, const char *, int, ...);
static ssize_t (*real_write)(int, const void *, size_t);
static ssize_t (*real_pwrite)(int, const void *, size_t, off_t);
static ssize_t (*real_writev)(int, const struct iovec *, int);
static ssize_t (*real_pwritev)(int, const struct iovec *, int, off_t);
static ssize_t (*real_pwritev2)(int, const struct iovec *, int, off_t, int);
static ssize_t (*real_read)(int, void *, size_t);
static ssize_t (*real_pread)(int, void *, size_t, off_t);
static int (*real_ftruncate)(int, off_t);
static int (*real_truncate)(const char *, off_t);
static int (*real_fallocate)(int, int, off_t, off_t);
static int (*real_posix_fallocate)(int, off_t, off_t);
static int (*real_fsync)(int);
static int (*real_fdatasync)(int);
static int (*real_syncfs)(int);
static void (*real_sync)(void);
static int (*real_rename)(const char *, const char *);
static int (*real_renameat)(int, const char *, int, const char *);
static int (*real_renameat2)(int, const char *, int, const char *, unsigned int);
static long (*real_syscall)(long, ...);
static int (*real_unlink)(const char *);
static int (*real_unlinkat)(int, const char *, int);
static int (*real_remove)(const char *);
static int (*real_mkdir)(const char *, mode_t);
static int (*real_mkdirat)(int, const char *, mode_t);
static int (*real_rmdir)(const char *);
static int (*real_link)(const char *, const char *);
static int (*real_linkat)(int, const char *, int, const char *, int);
static int (*real_close)(int);
static DIR *(*real_opendir)(const char *);
static void *(*real_dlopen)(const char *, int);

#define RESOLVE(var, name)                                              \
    do {                                                                \
        if (!(var)) *(void **)(&(var)) = dlsym(RTLD_NEXT, name);        \
    } while (0)

static void resolve_all(void)
{
    RESOLVE(real_open, "open64");
    RESOLVE(real_openat, "openat64");
    RESOLVE(real_write, "write");
    RESOLVE(real_pwrite, "pwrite64");
    RESOLVE(real_writev, "writev");
    RESOLVE(real_pwritev, "pwritev64");
    RESOLVE(real_pwritev2, "pwritev64v2");
    RESOLVE(real_read, "read");
    RESOLVE(real_pread, "pread64");
    RESOLVE(real_ftruncate, "ftruncate64");
    RESOLVE(real_truncate, "truncate64");
    RESOLVE(real_fallocate, "fallocate64");
    RESOLVE(real_posix_fallocate, "posix_fallocate64");
    RESOLVE(real_fsync, "fsync");
    RESOLVE(real_fdatasync, "fdatasync");
    RESOLVE(real_syncfs, "syncfs");
    RESOLVE(real_sync, "sync");
    RESOLVE(real_rename, "rename");
    RESOLVE(real_renameat, "renameat");
    RESOLVE(real_renameat2, "renameat2");
    RESOLVE(real_syscall, "syscall");
    RESOLVE(real_unlink, "unlink");
    RESOLVE(real_unlinkat, "unlinkat");
    RESOLVE(real_remove, "remove");
    RESOLVE(real_mkdir, "mkdir");
    RESOLVE(real_mkdirat, "mkdirat");
    RESOLVE(real_rmdir, "rmdir");
    RESOLVE(real_link, "link");
    RESOLVE(real_linkat, "linkat");
    RESOLVE(real_close, "close");
    RESOLVE(real_opendir, "opendir");
    RESOLVE(real_dlopen, "dlopen");
}

/* ---- configuration ----------------------------------------------------- */

enum op_class {
    OC_OPEN, OC_CREATE, OC_WRITE, OC_TRUNCATE, OC_FSYNC, OC_RENAME, OC_UNLINK,
    OC_MKDIR, OC_RMDIR, OC_LINK, OC_CLOSE, OC_READ, OC_COUNT
};
static const char *const class_names[OC_COUNT] = {
    "open", "create", "write", "truncate", "fsync", "rename", "unlink",
    "mkdir", "rmdir", "link", "close", "read"
};

enum action { A_NONE, A_EIO, A_ENOSPC, A_SHORT, A_ENOMEM, A_KILL, A_POWERLOSS, A_STOP };

static int g_active;                 /* CF_FAULT_SCOPE given */
static char g_scope[PATH_MAX];
static size_t g_scope_len;
static int g_count_mode;
static char g_report_path[PATH_MAX];
static int g_report_fd = -1;
static unsigned g_classes = ~(1u << OC_READ);
static long long g_at;               /* 0: never */
static int g_action = A_NONE;
static int g_sticky;
static int g_rank = -1;              /* this process's MPI rank, -1 if none */
static int g_target_rank;            /* the rank that acts */
static char g_journal[PATH_MAX];
static int g_journaling;
static double g_keep;
#define MAX_KEEP_NAMES 16
static char g_keep_names[MAX_KEEP_NAMES][NAME_MAX + 1]; /* CF_FAULT_KEEP_NAMES */
static int g_nkeep_names;
#define MAX_NOSYNC 64
static long long g_nosync[MAX_NOSYNC];  /* CF_FAULT_NOSYNC */
static int g_nnosync;
static unsigned long long g_seed;
static int g_verbose;
static char g_libs[256] = "libcolfile";

static long long g_io_count;         /* counted I/O operations so far */
static long long g_alloc_count __attribute__((unused)); /* counted allocations so far */
static int g_fired;                  /* the fault was injected */
static int g_sticky_class = -1;
static int g_sticky_errno;

static pthread_mutex_t g_mutex = PTHREAD_MUTEX_INITIALIZER;
static __thread int t_busy __attribute__((tls_model("initial-exec")));

/* Text segments of the objects whose allocations are counted. */
#define MAX_RANGES 16
static struct { uintptr_t lo, hi, base; char name[64]; } g_ranges[MAX_RANGES];
static int g_nranges;
static volatile int g_ranges_ready;

static int may_act(void)
{
    return g_rank < 0 || g_rank == g_target_rank;
}

/* ---- small utilities (no allocation, no interposed calls) --------------- */

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n >= sizeof buf) n = sizeof buf - 1;
    ssize_t w = real_write(2, buf, (size_t)n);
    (void)w;
}

static void write_all_fd(int fd, const void *buf, size_t n)
{
    const char *p = buf;
    while (n > 0) {
        ssize_t w = real_write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            return;
        }
        p += w;
        n -= (size_t)w;
    }
}

/* The formatted text, cut at `cap` - 1 bytes, written whole to `fd`. */
static void write_fd_v(int fd, size_t cap, const char *fmt, va_list ap)
{
    char buf[PATH_MAX * 2 + 256];
    if (cap > sizeof buf) cap = sizeof buf;
    int n = vsnprintf(buf, cap, fmt, ap);
    if (n < 0) return;
    if ((size_t)n >= cap) n = (int)cap - 1;
    write_all_fd(fd, buf, (size_t)n);
}

/* Lexically normalise an absolute path in place: no "//", "/./", "/../". */
static void normalize(char *p)
{
    char out[PATH_MAX];
    size_t o = 0;
    const char *s = p;
    while (*s) {
        while (*s == '/') s++;
        if (!*s) break;
        const char *e = s;
        while (*e && *e != '/') e++;
        size_t len = (size_t)(e - s);
        if (len == 1 && s[0] == '.') {
            /* skip */
        } else if (len == 2 && s[0] == '.' && s[1] == '.') {
            while (o > 0 && out[o - 1] != '/') o--;
            if (o > 0) o--;
        } else {
            if (o + 1 + len >= sizeof out) break;
            out[o++] = '/';
            memcpy(out + o, s, len);
            o += len;
        }
        s = e;
    }
    if (o == 0) out[o++] = '/';
    out[o] = '\0';
    memcpy(p, out, o + 1);
}

/* The absolute path of `path` relative to dirfd; 0 on failure. */
static int abs_path(int dirfd, const char *path, char out[PATH_MAX])
{
    if (!path) return 0;
    size_t n = strlen(path);
    if (path[0] == '/') {
        if (n >= PATH_MAX) return 0;
        memcpy(out, path, n + 1);
    } else {
        char base[PATH_MAX];
        if (dirfd == AT_FDCWD) {
            if (!getcwd(base, sizeof base)) return 0;
        } else {
            char link[64];
            snprintf(link, sizeof link, "/proc/self/fd/%d", dirfd);
            ssize_t k = readlink(link, base, sizeof base - 1);
            if (k <= 0) return 0;
            base[k] = '\0';
        }
        size_t b = strlen(base);
        if (b + 1 + n >= PATH_MAX) return 0;
        memcpy(out, base, b);
        out[b] = '/';
        memcpy(out + b + 1, path, n + 1);
    }
    normalize(out);
    return 1;
}

static int in_scope(const char *abs)
{
    return strncmp(abs, g_scope, g_scope_len) == 0 &&
           (abs[g_scope_len] == '\0' || abs[g_scope_len] == '/');
}

static const char *rel(const char *abs)
{
    if (!in_scope(abs)) return abs;
    return abs[g_scope_len] == '\0' ? "." : abs + g_scope_len + 1;
}

/* Split an absolute path into its directory and last name. */
static void split(const char *abs, char dir[PATH_MAX], char name[NAME_MAX + 1])
{
    const char *slash = strrchr(abs, '/');
    size_t d = (size_t)(slash - abs);
    if (d == 0) {
        strcpy(dir, "/");
    } else {
        memcpy(dir, abs, d);
        dir[d] = '\0';
    }
    snprintf(name, NAME_MAX + 1, "%s", slash + 1);
}

/* ---- descriptor table --------------------------------------------------- */

#define FD_MAX 65536
enum { FD_UNKNOWN = 0, FD_OUT = 1, FD_IN = 2 };
static pthread_mutex_t g_fd_mutex = PTHREAD_MUTEX_INITIALIZER;
static unsigned char g_fd_state[FD_MAX];
static unsigned char g_fd_sync[FD_MAX];   /* opened O_SYNC/O_DSYNC */
static char *g_fd_path[FD_MAX];            /* relative path (in scope), __libc_malloc'd */

static void fd_forget_locked(int fd)
{
    g_fd_state[fd] = FD_UNKNOWN;
    g_fd_sync[fd] = 0;
    if (g_fd_path[fd]) {
        __libc_free(g_fd_path[fd]);
        g_fd_path[fd] = NULL;
    }
}

static void fd_forget(int fd)
{
    if (fd < 0 || fd >= FD_MAX) return;
    pthread_mutex_lock(&g_fd_mutex);
    fd_forget_locked(fd);
    pthread_mutex_unlock(&g_fd_mutex);
}

static void fd_remember(int fd, const char *abs, int flags)
{
    if (fd < 0 || fd >= FD_MAX) return;
    pthread_mutex_lock(&g_fd_mutex);
    fd_forget_locked(fd);
    if (abs && in_scope(abs)) {
        g_fd_state[fd] = FD_IN;
        const char *r = rel(abs);
        size_t n = strlen(r);
        char *p = __libc_malloc(n + 1);
        if (p) memcpy(p, r, n + 1);
        g_fd_path[fd] = p;
        g_fd_sync[fd] = (flags & (O_SYNC | O_DSYNC)) != 0;
    } else {
        g_fd_state[fd] = FD_OUT;
    }
    pthread_mutex_unlock(&g_fd_mutex);
}

/* 1 if fd refers to something below the scope; *path gets its relative
 * path (static for untracked descriptors: use at once). */
static int fd_in_scope(int fd, const char **path)
{
    static __thread char buf[PATH_MAX];
    if (fd < 0) return 0;
    if (fd < FD_MAX && g_fd_state[fd] != FD_UNKNOWN) {
        if (g_fd_state[fd] == FD_OUT) return 0;
        *path = g_fd_path[fd] ? g_fd_path[fd] : "?";
        return 1;
    }
    char link[64], target[PATH_MAX];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t k = readlink(link, target, sizeof target - 1);
    if (k <= 0) return 0;
    target[k] = '\0';
    char *del = strstr(target, " (deleted)");
    if (del) *del = '\0';
    if (target[0] != '/') {
        if (fd < FD_MAX) g_fd_state[fd] = FD_OUT;
        return 0;
    }
    normalize(target);
    int flags = fcntl(fd, F_GETFL);
    fd_remember(fd, target, flags < 0 ? 0 : flags);
    if (fd < FD_MAX) return fd_in_scope(fd, path);
    if (!in_scope(target)) return 0;
    snprintf(buf, sizeof buf, "%s", rel(target));
    *path = buf;
    return 1;
}

/* ---- the report ----------------------------------------------------------- */

static void report(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void report(const char *fmt, ...)
{
    if (g_report_fd < 0) return;
    va_list ap;
    va_start(ap, fmt);
    write_fd_v(g_report_fd, PATH_MAX + 256, fmt, ap);
    va_end(ap);
}

/* ---- the journal ------------------------------------------------------------ */

static int g_journal_fd = -1;
static long long g_journal_seq;      /* names of saved-bytes and hold files */
static int g_registered;

static void journal_open(void)
{
    if (g_journal_fd >= 0) return;
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/journal", g_journal);
    g_journal_fd = real_open(p, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0666);
    if (g_journal_fd < 0) say("faultshim: cannot open journal %s: %s\n", p, strerror(errno));
}

/* The shim's own lock, past any lock shim preloaded before this one
 * (tests/locking/lockshim.c models the writers' file system, not ours). */
static int journal_flock(int op)
{
    static int (*real_flock)(int, int);
    if (!real_flock) real_flock = (int (*)(int, int))dlsym(RTLD_NEXT, "flock");
    return real_flock ? real_flock(g_journal_fd, op) : flock(g_journal_fd, op);
}

static void journal_lock(void)
{
    if (!g_journaling) return;
    journal_open();
    if (g_journal_fd >= 0)
        while (journal_flock(LOCK_EX) != 0 && errno == EINTR) {}
}

static void journal_unlock(void)
{
    if (!g_journaling || g_journal_fd < 0) return;
    journal_flock(LOCK_UN);
}

static void journal_add(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void journal_add(const char *fmt, ...)
{
    if (!g_journaling || g_journal_fd < 0) return;
    va_list ap;
    va_start(ap, fmt);
    write_fd_v(g_journal_fd, PATH_MAX * 2 + 256, fmt, ap);
    va_end(ap);
}

static void journal_register(void)
{
    if (!g_journaling || g_registered) return;
    g_registered = 1;
    journal_add("P %ld\n", (long)getpid());
}

/* Names in the journal: bytes other than [A-Za-z0-9._-] as %XX. */
static void encode_name(const char *name, char *out, size_t cap)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t o = 0;
    for (const unsigned char *s = (const unsigned char *)name; *s && o + 4 < cap; s++) {
        if ((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
            *s == '.' || *s == '_' || *s == '-') {
            out[o++] = (char)*s;
        } else {
            out[o++] = '%';
            out[o++] = hex[*s >> 4];
            out[o++] = hex[*s & 15];
        }
    }
    if (o == 0) out[o++] = '%', out[o++] = '0', out[o++] = '0';
    out[o] = '\0';
}

static void decode_name(const char *in, char *out, size_t cap)
{
    size_t o = 0;
    for (const char *s = in; *s && o + 1 < cap; s++) {
        if (*s == '%' && s[1] && s[2]) {
            char h[3] = { s[1], s[2], 0 };
            int v = (int)strtol(h, NULL, 16);
            if (v) out[o++] = (char)v;
            s += 2;
        } else {
            out[o++] = *s;
        }
    }
    out[o] = '\0';
}

/* Copy bytes [off, off+len) of the open file fd into a new journal file;
 * its name goes to out ("-" if there is nothing to keep). */
static void save_bytes(int fd, off_t off, off_t len, char out[64])
{
    strcpy(out, "-");
    if (len <= 0) return;
    char src[64], dst[PATH_MAX];
    snprintf(src, sizeof src, "/proc/self/fd/%d", fd);
    int in = real_open(src, O_RDONLY | O_CLOEXEC);
    if (in < 0) return;
    snprintf(out, 64, "s.%ld.%lld", (long)getpid(), ++g_journal_seq);
    snprintf(dst, sizeof dst, "%s/%s", g_journal, out);
    int o = real_open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (o < 0) {
        real_close(in);
        strcpy(out, "-");
        return;
    }
    char buf[65536];
    off_t done = 0;
    while (done < len) {
        size_t want = (size_t)(len - done < (off_t)sizeof buf ? len - done : (off_t)sizeof buf);
        ssize_t r = real_pread(in, buf, want, off + done);
        if (r <= 0) break;
        write_all_fd(o, buf, (size_t)r);
        done += r;
    }
    real_close(o);
    real_close(in);
}

/* Keep the file at abs alive under a hold name; out gets the name or "-". */
static void hold_file(const char *abs, char out[64])
{
    strcpy(out, "-");
    char dst[PATH_MAX];
    snprintf(out, 64, "h.%ld.%lld", (long)getpid(), ++g_journal_seq);
    snprintf(dst, sizeof dst, "%s/%s", g_journal, out);
    if (real_link(abs, dst) != 0) strcpy(out, "-");
}

static void unhold(const char *name)
{
    if (strcmp(name, "-") == 0) return;
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/%s", g_journal, name);
    real_unlink(p);
}

/* stat of the directory holding abs, and the encoded last name. */
static int parent_of(const char *abs, struct stat *pst, char ename[3 * NAME_MAX + 4])
{
    char dir[PATH_MAX], name[NAME_MAX + 1];
    split(abs, dir, name);
    encode_name(name, ename, 3 * NAME_MAX + 4);
    return stat(dir, pst) == 0;
}

/* ---- undo at power loss ------------------------------------------------- */

typedef struct rec {
    char type;
    unsigned long long ino, dev, pino, pino2, ino2, vino;
    long long oldsize, off, len, newsize;
    char name[3 * NAME_MAX + 4], name2[3 * NAME_MAX + 4];
    char save[64];
    int isdir, vdir;
    unsigned mode;
    int durable, half_a, half_b;
    int keep;
} rec;

typedef struct { unsigned long long ino; char *path; int isdir; } tree_ent;
static tree_ent *g_tree;
static size_t g_tree_n, g_tree_cap;
static int g_tree_valid;

typedef struct { unsigned long long from, to; } remap_ent;
static remap_ent g_remap[4096];
static int g_nremap;
static struct { unsigned long long ino; size_t index; } g_dead[4096];
static int g_ndead;

static void tree_add(unsigned long long ino, const char *path, int isdir)
{
    if (g_tree_n == g_tree_cap) {
        size_t cap = g_tree_cap ? g_tree_cap * 2 : 256;
        tree_ent *t = __libc_realloc(g_tree, cap * sizeof *t);
        if (!t) return;
        g_tree = t;
        g_tree_cap = cap;
    }
    size_t n = strlen(path);
    char *p = __libc_malloc(n + 1);
    if (!p) return;
    memcpy(p, path, n + 1);
    g_tree[g_tree_n++] = (tree_ent){ ino, p, isdir };
}

static void tree_walk(const char *dir)
{
    DIR *d = real_opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        char p[PATH_MAX];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        struct stat st;
        if (lstat(p, &st) != 0) continue;
        tree_add((unsigned long long)st.st_ino, p, S_ISDIR(st.st_mode));
        if (S_ISDIR(st.st_mode)) tree_walk(p);
    }
    closedir(d);
}

static void tree_rebuild(void)
{
    for (size_t i = 0; i < g_tree_n; i++) __libc_free(g_tree[i].path);
    g_tree_n = 0;
    struct stat st;
    if (lstat(g_scope, &st) == 0) tree_add((unsigned long long)st.st_ino, g_scope, 1);
    tree_walk(g_scope);
    g_tree_valid = 1;
}

static unsigned long long remapped(unsigned long long ino)
{
    for (int i = g_nremap - 1; i >= 0; i--)
        if (g_remap[i].from == ino) return g_remap[i].to;
    return ino;
}

/* The current path of inode ino below the scope, or NULL. */
static const char *path_of(unsigned long long ino)
{
    ino = remapped(ino);
    if (!g_tree_valid) tree_rebuild();
    for (size_t i = 0; i < g_tree_n; i++)
        if (g_tree[i].ino == ino) return g_tree[i].path;
    return NULL;
}

/* The path of name `ename` in directory pino, as record `index` saw it. */
static size_t g_cur_index;
static const struct rec *g_recs;
static size_t g_nrec;
static int dir_entry_path(unsigned long long pino, const char *ename, char out[PATH_MAX])
{
    /* a directory removed for good after this record: its entries are gone */
    for (int i = 0; i < g_ndead; i++)
        if (g_dead[i].ino == pino && g_dead[i].index > g_cur_index && remapped(pino) == pino) return 0;
    /* its number given to something made after this record (and not
     * undone: that would have moved it out of the tree): the directory
     * this record saw is gone, the number names another */
    if (remapped(pino) == pino)
        for (size_t k = g_cur_index + 1; k < g_nrec; k++)
            if (g_recs[k].type == 'C' && g_recs[k].ino == pino) return 0;
    const char *d = path_of(pino);
    if (!d) return 0;
    char name[NAME_MAX + 1];
    decode_name(ename, name, sizeof name);
    snprintf(out, PATH_MAX, "%s/%s", d, name);
    return 1;
}

static unsigned long long ino_at(const char *p)
{
    struct stat st;
    if (lstat(p, &st) != 0) return 0;
    return (unsigned long long)st.st_ino;
}

static int undo_log_fd = -1;
static void undo_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void undo_note(const char *fmt, ...)
{
    if (undo_log_fd < 0) return;
    char buf[PATH_MAX * 2 + 128];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n > 0) write_all_fd(undo_log_fd, buf, (size_t)((size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1));
}

static long long g_gone_seq;

/* Move whatever is at p out of the tree (into the journal directory). */
static int move_away(const char *p)
{
    char dst[PATH_MAX];
    snprintf(dst, sizeof dst, "%s/gone.%lld", g_journal, ++g_gone_seq);
    return real_rename(p, dst);
}

static void undo_data(rec *r)
{
    const char *p = path_of(r->ino);
    if (!p) {
        undo_note("skip %c ino %llu: not in the tree\n", r->type, r->ino);
        return;
    }
    int fd = real_open(p, O_WRONLY | O_CLOEXEC);
    if (fd < 0) {
        undo_note("skip %c %s: %s\n", r->type, p, strerror(errno));
        return;
    }
    off_t restore_at = r->type == 'W' ? (off_t)r->off : (off_t)r->newsize;
    if (strcmp(r->save, "-") != 0) {
        char sp[PATH_MAX];
        snprintf(sp, sizeof sp, "%s/%s", g_journal, r->save);
        int in = real_open(sp, O_RDONLY | O_CLOEXEC);
        if (in >= 0) {
            char buf[65536];
            off_t at = restore_at;
            for (;;) {
                ssize_t k = real_read(in, buf, sizeof buf);
                if (k <= 0) break;
                ssize_t w = real_pwrite(fd, buf, (size_t)k, at);
                (void)w;
                at += k;
            }
            real_close(in);
        }
    }
    int t = real_ftruncate(fd, (off_t)r->oldsize);
    (void)t;
    real_close(fd);
    undo_note("undo %c %s: size %lld\n", r->type, p, r->oldsize);
}

static void undo_one(rec *r)
{
    char a[PATH_MAX], b[PATH_MAX];
    switch (r->type) {
    case 'W':
    case 'T':
        undo_data(r);
        return;
    case 'C':
        if (!dir_entry_path(r->pino, r->name, a) || ino_at(a) != r->ino) {
            undo_note("skip C %s: gone\n", r->name);
            return;
        }
        if (move_away(a) == 0) undo_note("undo C %s\n", a);
        g_tree_valid = 0;
        return;
    case 'U':
        if (!dir_entry_path(r->pino, r->name, a) || strcmp(r->save, "-") == 0) {
            undo_note("skip U %s\n", r->name);
            return;
        }
        snprintf(b, sizeof b, "%s/%s", g_journal, r->save);
        if (real_link(b, a) == 0) undo_note("undo U %s\n", a);
        else undo_note("fail U %s: %s\n", a, strerror(errno));
        g_tree_valid = 0;
        return;
    case 'D':
        if (!dir_entry_path(r->pino, r->name, a)) {
            undo_note("skip D %s\n", r->name);
            return;
        }
        if (real_mkdir(a, (mode_t)(r->mode & 07777)) == 0 && g_nremap < 4096) {
            g_remap[g_nremap++] = (remap_ent){ r->ino, ino_at(a) };
            undo_note("undo D %s\n", a);
        }
        g_tree_valid = 0;
        return;
    case 'R':
        if (!dir_entry_path(r->pino2, r->name2, b) || ino_at(b) != remapped(r->ino) ||
            !dir_entry_path(r->pino, r->name, a)) {
            undo_note("skip R %s -> %s\n", r->name, r->name2);
            return;
        }
        if (real_rename(b, a) != 0) {
            undo_note("fail R %s -> %s: %s\n", b, a, strerror(errno));
            return;
        }
        g_tree_valid = 0;
        if (r->vino) {
            if (r->vdir) {
                if (real_mkdir(b, 0775) == 0 && g_nremap < 4096)
                    g_remap[g_nremap++] = (remap_ent){ r->vino, ino_at(b) };
            } else if (strcmp(r->save, "-") != 0) {
                char h[PATH_MAX];
                snprintf(h, sizeof h, "%s/%s", g_journal, r->save);
                if (real_link(h, b) != 0) undo_note("fail R victim %s: %s\n", b, strerror(errno));
            }
        }
        undo_note("undo R %s <- %s\n", a, b);
        return;
    case 'X':
        if (!dir_entry_path(r->pino, r->name, a) || !dir_entry_path(r->pino2, r->name2, b) ||
            ino_at(a) != remapped(r->ino2)) {
            undo_note("skip X %s <-> %s\n", r->name, r->name2);
            return;
        }
        if (real_renameat2) {
            if (real_renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE) == 0) undo_note("undo X %s <-> %s\n", a, b);
        } else if (real_syscall(SYS_renameat2, AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE) == 0) {
            undo_note("undo X %s <-> %s\n", a, b);
        }
        g_tree_valid = 0;
        return;
    default:
        return;
    }
}

static unsigned long long splitmix(unsigned long long *s)
{
    unsigned long long z = (*s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static double unit(unsigned long long x)
{
    return (double)(x >> 11) / 9007199254740992.0;
}

/* A directory change that CF_FAULT_KEEP_NAMES keeps. */
static int name_listed(const char *encoded)
{
    char name[NAME_MAX + 1];
    decode_name(encoded, name, sizeof name);
    for (int i = 0; i < g_nkeep_names; i++)
        if (fnmatch(g_keep_names[i], name, FNM_PERIOD) == 0) return 1;
    return 0;
}

static int keep_by_name(const rec *r)
{
    switch (r->type) {
    case 'C': case 'U': case 'D':
        return name_listed(r->name);
    case 'R':
        return name_listed(r->name2);
    case 'X':
        return name_listed(r->name) || name_listed(r->name2);
    default:
        return 0;
    }
}

/* A directory whose removal survives (durable or kept) was empty when it
 * was removed, so every earlier change of its entries survives with it:
 * names created, removed or renamed in or out of it, and so the removals
 * of the directories below it (newest first, so that those carry it on).
 * No file system brings entries back into a directory removed for good --
 * least of all into another that got its inode number. */
static size_t settle_removed_dirs(rec *recs, size_t nrec)
{
    size_t settled = 0;
    for (size_t i = nrec; i-- > 0;) {
        if (recs[i].type != 'D' || !(recs[i].durable || recs[i].keep)) continue;
        unsigned long long x = recs[i].ino;
        /* from the directory's making (or the removal of an older one with
         * its number) on */
        size_t lb = 0;
        for (size_t j = i; j-- > 0;)
            if ((recs[j].type == 'D' || recs[j].type == 'C') && recs[j].ino == x) {
                lb = j + 1;
                break;
            }
        for (size_t j = lb; j < i; j++) {
            rec *r = &recs[j];
            int in_x = 0;
            switch (r->type) {
            case 'C': case 'U': case 'D':
                in_x = r->pino == x;
                break;
            case 'R': case 'X':
                in_x = r->pino == x || r->pino2 == x;
                break;
            default:
                break;
            }
            if (in_x && !r->durable) {
                r->durable = 1;
                settled++;
            }
        }
    }
    return settled;
}

/* Read the journal, decide what survives, undo the rest (newest first). */
static void power_loss(void)
{
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/undo.log", g_journal);
    undo_log_fd = real_open(p, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0666);

    snprintf(p, sizeof p, "%s/journal", g_journal);
    int fd = real_open(p, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    struct stat st;
    fstat(fd, &st);
    size_t len = (size_t)st.st_size;
    char *text = __libc_malloc(len + 1);
    if (!text) {
        real_close(fd);
        return;
    }
    size_t got = 0;
    while (got < len) {
        ssize_t k = real_read(fd, text + got, len - got);
        if (k <= 0) break;
        got += (size_t)k;
    }
    text[got] = '\0';
    real_close(fd);

    size_t nrec = 0, cap = 256;
    rec *recs = __libc_calloc(cap, sizeof *recs);
    if (!recs) {
        __libc_free(text);
        return;
    }
    long pids[256];
    int npids = 0;
    for (char *line = text; line && *line;) {
        char *nl = strchr(line, '\n');
        if (nl) *nl = '\0';
        if (nrec == cap) {
            rec *n2 = __libc_realloc(recs, cap * 2 * sizeof *recs);
            if (!n2) break;
            memset(n2 + cap, 0, cap * sizeof *recs);
            recs = n2;
            cap *= 2;
        }
        rec *r = &recs[nrec];
        memset(r, 0, sizeof *r);
        int ok = 0;
        switch (line[0]) {
        case 'P':
            if (npids < 256) pids[npids++] = atol(line + 2);
            break;
        case 'W':
            ok = sscanf(line, "W %llu %llu %lld %lld %lld %63s", &r->dev, &r->ino, &r->oldsize, &r->off,
                        &r->len, r->save) == 6;
            break;
        case 'T':
            ok = sscanf(line, "T %llu %llu %lld %lld %63s", &r->dev, &r->ino, &r->oldsize, &r->newsize,
                        r->save) == 5;
            break;
        case 'C':
            ok = sscanf(line, "C %llu %767s %llu %d", &r->pino, r->name, &r->ino, &r->isdir) == 4;
            break;
        case 'U':
            ok = sscanf(line, "U %llu %767s %llu %63s", &r->pino, r->name, &r->ino, r->save) == 4;
            break;
        case 'D':
            ok = sscanf(line, "D %llu %767s %llu %o", &r->pino, r->name, &r->ino, &r->mode) == 4;
            break;
        case 'R':
            ok = sscanf(line, "R %llu %767s %llu %767s %llu %llu %d %63s", &r->pino, r->name, &r->pino2,
                        r->name2, &r->ino, &r->vino, &r->vdir, r->save) == 8;
            break;
        case 'X':
            ok = sscanf(line, "X %llu %767s %llu %767s %llu %llu", &r->pino, r->name, &r->pino2, r->name2,
                        &r->ino, &r->ino2) == 6;
            break;
        case 'S':
            ok = sscanf(line, "S %llu %llu", &r->dev, &r->ino) == 2;
            break;
        case 'Y':
            ok = 1;
            break;
        default:
            break;
        }
        if (ok) {
            r->type = line[0];
            nrec++;
        }
        line = nl ? nl + 1 : NULL;
    }

    /* Durability: a sync marks what came before it. */
    for (size_t i = 0; i < nrec; i++) {
        rec *s = &recs[i];
        if (s->type == 'Y') {
            for (size_t j = 0; j < i; j++) recs[j].durable = 1;
            continue;
        }
        if (s->type != 'S') continue;
        unsigned long long x = s->ino;
        /* records naming an older directory with this (reused) inode number
         * are not covered */
        size_t lb = 0;
        for (size_t j = i; j-- > 0;)
            if (recs[j].type == 'D' && recs[j].ino == x) { lb = j + 1; break; }
        for (size_t j = lb; j < i; j++) {
            rec *r = &recs[j];
            if (r->durable) continue;
            switch (r->type) {
            case 'W': case 'T':
                if (r->ino == x) r->durable = 1;
                break;
            case 'C': case 'U': case 'D':
                if (r->pino == x) r->durable = 1;
                break;
            case 'R': case 'X':
                if (r->pino == x) r->half_a = 1;
                if (r->pino2 == x) r->half_b = 1;
                if (r->half_a && r->half_b) r->durable = 1;
                break;
            default:
                break;
            }
        }
    }
    size_t settled = settle_removed_dirs(recs, nrec);
    /* What survives although not durable (CF_FAULT_KEEP, CF_FAULT_KEEP_NAMES). */
    unsigned long long rs = g_seed ^ 0x5DEECE66DULL;
    size_t nondurable = 0, kept = 0;
    for (size_t i = 0; i < nrec; i++) {
        rec *r = &recs[i];
        if (r->type == 'S' || r->type == 'Y' || r->durable) continue;
        nondurable++;
        if (g_keep > 0) {
            if (r->type == 'W' || r->type == 'T') {
                unsigned long long h = g_seed ^ (r->ino * 0x9E3779B97F4A7C15ULL);
                r->keep = unit(splitmix(&h)) < g_keep;
            } else {
                r->keep = unit(splitmix(&rs)) < g_keep;
            }
        }
        if (!r->keep && keep_by_name(r)) {
            r->keep = 1;
            undo_note("keep %c %s%s%s (CF_FAULT_KEEP_NAMES)\n", r->type, r->name, r->type == 'R' ? " -> " : "",
                      r->type == 'R' ? r->name2 : "");
        }
        kept += (size_t)r->keep;
    }
    if (kept) settled += settle_removed_dirs(recs, nrec);
    /* Directories removed for good: their old records must not touch a new
     * directory that got the same inode number. */
    for (size_t i = 0; i < nrec; i++)
        if (recs[i].type == 'D' && (recs[i].durable || recs[i].keep) && g_ndead < 4096)
            g_dead[g_ndead].ino = recs[i].ino, g_dead[g_ndead++].index = i;

    g_recs = recs;
    g_nrec = nrec;
    undo_note("power loss: %zu records, %zu not durable, %zu of them kept; %zu more settled by the "
              "removal of their directory\n", nrec, nondurable, kept, settled);
    size_t undone = 0;
    for (size_t i = nrec; i-- > 0;) {
        rec *r = &recs[i];
        if (r->type == 'S' || r->type == 'Y' || r->durable || r->keep) continue;
        g_cur_index = i;
        undo_one(r);
        undone++;
    }
    snprintf(p, sizeof p, "%s/powerloss.txt", g_journal);
    int out = real_open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (out >= 0) {
        char buf[256];
        int n = snprintf(buf, sizeof buf, "records %zu nondurable %zu kept %zu undone %zu pid %ld rank %d\n",
                         nrec, nondurable, kept, undone, (long)getpid(), g_rank);
        write_all_fd(out, buf, (size_t)n);
        real_close(out);
    }
    if (g_verbose) say("faultshim[%ld]: power loss: undid %zu of %zu changes\n", (long)getpid(), undone, nrec);
    /* Kill the other processes of the run (stopped already), then this one. */
    for (int i = 0; i < npids; i++)
        if (pids[i] != (long)getpid()) kill((pid_t)pids[i], SIGKILL);
}

static void stop_others(void)
{
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/journal", g_journal);
    int fd = real_open(p, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    char buf[4096];
    /* P lines come first in practice but may be anywhere: scan it all. */
    char carry[64] = "";
    for (;;) {
        ssize_t k = real_read(fd, buf, sizeof buf - 1);
        if (k <= 0) break;
        buf[k] = '\0';
        char *s = buf;
        char line[128];
        while (*s) {
            char *nl = strchr(s, '\n');
            if (!nl) {
                snprintf(carry, sizeof carry, "%s", s);
                break;
            }
            *nl = '\0';
            snprintf(line, sizeof line, "%s%s", carry, s);
            carry[0] = '\0';
            if (line[0] == 'P') {
                long pid = atol(line + 2);
                if (pid > 0 && pid != (long)getpid()) kill((pid_t)pid, SIGSTOP);
            }
            s = nl + 1;
        }
    }
    real_close(fd);
}

/* ---- counting and acting ------------------------------------------------- */

static _Noreturn void die_now(void)
{
    kill(getpid(), SIGKILL);
    for (;;) pause();
}

/* Count an I/O operation (mutex held); returns the action for this call
 * (A_NONE, A_EIO, A_ENOSPC, A_SHORT).  Kill and power loss do not return; stop returns once continued. */
static int count_io(int cls, const char *relpath, long long bytes)
{
    if (!(g_classes & (1u << cls))) return A_NONE;
    long long n = ++g_io_count;
    if (g_count_mode) {
        if (bytes >= 0) report("%lld %s %s %lld\n", n, class_names[cls], relpath, bytes);
        else report("%lld %s %s\n", n, class_names[cls], relpath);
    }
    if (g_sticky_class == cls) {
        errno = g_sticky_errno;
        return g_sticky_errno == ENOSPC ? A_ENOSPC : A_EIO;
    }
    if (g_fired || n != g_at || !may_act()) return A_NONE;
    switch (g_action) {
    case A_EIO:
    case A_ENOSPC:
    case A_SHORT:
        g_fired = 1;
        if (g_verbose) say("faultshim[%ld]: %s at I/O op %lld (%s %s)\n", (long)getpid(),
                           g_action == A_EIO ? "EIO" : g_action == A_ENOSPC ? "ENOSPC" : "short write",
                           n, class_names[cls], relpath);
        if (g_sticky && g_action != A_SHORT) {
            g_sticky_class = cls;
            g_sticky_errno = g_action == A_EIO ? EIO : ENOSPC;
        }
        return g_action;
    case A_STOP:
        g_fired = 1;
        if (g_verbose) say("faultshim[%ld]: SIGSTOP at I/O op %lld (%s %s)\n", (long)getpid(), n,
                           class_names[cls], relpath);
        kill(getpid(), SIGSTOP);
        return A_NONE;
    case A_KILL:
        if (g_verbose) say("faultshim[%ld]: SIGKILL at I/O op %lld (%s %s)\n", (long)getpid(), n,
                           class_names[cls], relpath);
        die_now();
    case A_POWERLOSS:
        if (g_verbose) say("faultshim[%ld]: power loss at I/O op %lld (%s %s)\n", (long)getpid(), n,
                           class_names[cls], relpath);
        journal_lock();
        stop_others();
        power_loss();
        die_now();
    default:
        return A_NONE;
    }
}

static int fail_errno(int action)
{
    errno = action == A_ENOSPC ? ENOSPC : EIO;
    return -1;
}

/* The planned failure of an I/O operation (EIO or ENOSPC): the wrapper
 * returns -1 with that errno, leaving the shim's bookkeeping. */
#define FAIL_IF_INJECTED(action)                                   \
    do {                                                           \
        if ((action) == A_EIO || (action) == A_ENOSPC) {           \
            int failed_ = fail_errno(action);                      \
            leave();                                               \
            return failed_;                                        \
        }                                                          \
    } while (0)

/* Enter/leave the shim's bookkeeping: no recursion into it, one thread at
 * a time, and (journaling) one process at a time. */
static void enter(void)
{
    t_busy = 1;
    pthread_mutex_lock(&g_mutex);
    if (g_journaling) {
        journal_lock();
        /* The power went out (another process of the run saw it first):
         * nothing more reaches the disk. */
        char p[PATH_MAX];
        struct stat st;
        snprintf(p, sizeof p, "%s/powerloss.txt", g_journal);
        if (stat(p, &st) == 0) {
            kill(getpid(), SIGKILL);
            for (;;) pause();
        }
        journal_register();
    }
}

static void leave(void)
{
    if (g_journaling) journal_unlock();
    pthread_mutex_unlock(&g_mutex);
    t_busy = 0;
}

static int passthrough(void)
{
    if (!real_open) resolve_all();
    return !g_active || t_busy;
}

/* ---- initialisation ------------------------------------------------------ */

static int phdr_cb(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    (void)data;
    const char *name = info->dlpi_name;
    if (!name || !*name || !strstr(name, g_libs)) return 0;
    if (strstr(name, "faultshim")) return 0;
    for (int i = 0; i < info->dlpi_phnum && g_nranges < MAX_RANGES; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X)) continue;
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        uintptr_t hi = lo + ph->p_memsz;
        int dup = 0;
        for (int k = 0; k < g_nranges; k++)
            if (g_ranges[k].lo == lo) dup = 1;
        if (dup) continue;
        const char *base = strrchr(name, '/');
        snprintf(g_ranges[g_nranges].name, sizeof g_ranges[g_nranges].name, "%s", base ? base + 1 : name);
        g_ranges[g_nranges].base = info->dlpi_addr;
        g_ranges[g_nranges].lo = lo;
        g_ranges[g_nranges].hi = hi;
        g_nranges++;
    }
    return 0;
}

static void refresh_ranges(void)
{
    if (!g_active) return;
    int busy = t_busy;
    t_busy = 1;
    dl_iterate_phdr(phdr_cb, NULL);
    g_ranges_ready = g_nranges > 0;
    t_busy = busy;
}

static int env_rank(void)
{
    const char *names[] = { "PMI_RANK", "PMIX_RANK", "OMPI_COMM_WORLD_RANK", NULL };
    for (int i = 0; names[i]; i++) {
        const char *v = getenv(names[i]);
        if (v && *v) return atoi(v);
    }
    return -1;
}


/* Each comma-separated item of `v` (the value of `var`) passed to `take`,
 * which counts it in *count: at most `max` of them. */
static void each_item(const char *v, const char *var, const char *what, int max, int *count,
                      void (*take)(const char *))
{
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", v);
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (*count == max) {
            say("faultshim: %s: more than %d %s\n", var, max, what);
            break;
        }
        take(tok);
    }
}

static void take_keep_name(const char *tok)
{
    snprintf(g_keep_names[g_nkeep_names++], NAME_MAX + 1, "%s", tok);
}

static void take_nosync(const char *tok)
{
    g_nosync[g_nnosync++] = atoll(tok);
}

__attribute__((constructor)) static void shim_init(void)
{
    resolve_all();
    const char *scope = getenv("CF_FAULT_SCOPE");
    if (!scope || !*scope) return;
    t_busy = 1;
    char abs[PATH_MAX];
    if (!realpath(scope, abs)) {
        /* The scope may not exist yet: normalise it as given. */
        if (!abs_path(AT_FDCWD, scope, abs)) {
            t_busy = 0;
            return;
        }
    }
    snprintf(g_scope, sizeof g_scope, "%s", abs);
    g_scope_len = strlen(g_scope);
    while (g_scope_len > 1 && g_scope[g_scope_len - 1] == '/') g_scope[--g_scope_len] = '\0';

    const char *v;
    if ((v = getenv("CF_FAULT_MODE")) && strcmp(v, "count") == 0) g_count_mode = 1;
    if ((v = getenv("CF_FAULT_VERBOSE")) && *v && strcmp(v, "0") != 0) g_verbose = 1;
    if ((v = getenv("CF_FAULT_LIBS")) && *v) snprintf(g_libs, sizeof g_libs, "%s", v);
    if ((v = getenv("CF_FAULT_AT")) && *v) g_at = atoll(v);
    if ((v = getenv("CF_FAULT_STICKY")) && *v && strcmp(v, "0") != 0) g_sticky = 1;
    if ((v = getenv("CF_FAULT_KEEP")) && *v) g_keep = atof(v);
    if ((v = getenv("CF_FAULT_SEED")) && *v) g_seed = strtoull(v, NULL, 10);
    if ((v = getenv("CF_FAULT_KEEP_NAMES")) && *v)
        each_item(v, "CF_FAULT_KEEP_NAMES", "patterns", MAX_KEEP_NAMES, &g_nkeep_names, take_keep_name);
    if ((v = getenv("CF_FAULT_NOSYNC")) && *v)
        each_item(v, "CF_FAULT_NOSYNC", "operations", MAX_NOSYNC, &g_nnosync, take_nosync);
    if ((v = getenv("CF_FAULT_RANK")) && *v) g_target_rank = atoi(v);
    if ((v = getenv("CF_FAULT_ACTION")) && *v) {
        if (strcmp(v, "eio") == 0) g_action = A_EIO;
        else if (strcmp(v, "enospc") == 0) g_action = A_ENOSPC;
        else if (strcmp(v, "short") == 0) g_action = A_SHORT;
        else if (strcmp(v, "enomem") == 0) g_action = A_ENOMEM;
        else if (strcmp(v, "kill") == 0) g_action = A_KILL;
        else if (strcmp(v, "powerloss") == 0) g_action = A_POWERLOSS;
        else if (strcmp(v, "stop") == 0) g_action = A_STOP;
        else say("faultshim: unknown CF_FAULT_ACTION '%s' (eio enospc short enomem kill powerloss stop)\n", v);
    }
    if ((v = getenv("CF_FAULT_OPS")) && *v) {
        g_classes = 0;
        char buf[256];
        snprintf(buf, sizeof buf, "%s", v);
        for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
            int found = 0;
            for (int c = 0; c < OC_COUNT; c++)
                if (strcmp(tok, class_names[c]) == 0) g_classes |= 1u << c, found = 1;
            if (strcmp(tok, "all") == 0) g_classes = ~0u, found = 1;
            if (!found) say("faultshim: unknown operation class '%s'\n", tok);
        }
    }
    g_rank = env_rank();
    if ((v = getenv("CF_FAULT_JOURNAL")) && *v) {
        snprintf(g_journal, sizeof g_journal, "%s", v);
        g_journaling = 1;
    } else if (g_action == A_POWERLOSS) {
        say("faultshim: CF_FAULT_ACTION=powerloss needs CF_FAULT_JOURNAL\n");
    }
    if ((v = getenv("CF_FAULT_REPORT")) && *v) {
        /* "%p" -> pid */
        char *o = g_report_path;
        size_t room = sizeof g_report_path - 1;
        for (const char *s = v; *s && room > 0; s++) {
            if (s[0] == '%' && s[1] == 'p') {
                int n = snprintf(o, room + 1, "%ld", (long)getpid());
                if (n < 0 || (size_t)n > room) break;
                o += n;
                room -= (size_t)n;
                s++;
            } else {
                *o++ = *s;
                room--;
            }
        }
        *o = '\0';
        g_report_fd = real_open(g_report_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
        report("pid %ld rank %d\n", (long)getpid(), g_rank);
    }
    g_active = 1;
    refresh_ranges();
    t_busy = 0;
}

/* ---- allocation --------------------------------------------------------- */

#ifndef FAULTSHIM_NO_ALLOC
/* Built with -DFAULTSHIM_NO_ALLOC (faultshim_io.so) the shim leaves
 * allocation alone: for processes with a sanitizer, which owns malloc. */

static int from_lib(uintptr_t ra)
{
    for (int i = 0; i < g_nranges; i++)
        if (ra >= g_ranges[i].lo && ra < g_ranges[i].hi) return i;
    return -1;
}

/* 1 if this allocation must fail. */
static int count_alloc(uintptr_t ra, size_t bytes)
{
    if (!g_active || t_busy || !g_ranges_ready) return 0;
    int which = from_lib(ra);
    if (which < 0) return 0;
    t_busy = 1;
    pthread_mutex_lock(&g_mutex);
    long long n = ++g_alloc_count;
    int fail = 0;
    if (g_count_mode)
        report("a%lld alloc %zu %s+0x%lx\n", n, bytes, g_ranges[which].name,
               (unsigned long)(ra - g_ranges[which].base));
    if (!g_fired && g_action == A_ENOMEM && n == g_at && may_act()) {
        g_fired = 1;
        fail = 1;
        if (g_verbose) say("faultshim[%ld]: NULL from allocation %lld (%zu bytes, %s+0x%lx)\n",
                           (long)getpid(), n, bytes, g_ranges[which].name,
                           (unsigned long)(ra - g_ranges[which].base));
    }
    pthread_mutex_unlock(&g_mutex);
    t_busy = 0;
    return fail;
}

#define CALLER ((uintptr_t)__builtin_return_address(0))

SHIM_API void *malloc(size_t n)
{
    if (count_alloc(CALLER, n)) {
        errno = ENOMEM;
        return NULL;
    }
    return __libc_malloc(n);
}

SHIM_API void *calloc(size_t n, size_t m)
{
    if (count_alloc(CALLER, n * m)) {
        errno = ENOMEM;
        return NULL;
    }
    return __libc_calloc(n, m);
}

SHIM_API void *realloc(void *p, size_t n)
{
    if (count_alloc(CALLER, n)) {
        errno = ENOMEM;
        return NULL;
    }
    return __libc_realloc(p, n);
}

SHIM_API void *reallocarray(void *p, size_t n, size_t m)
{
    if (count_alloc(CALLER, n * m)) {
        errno = ENOMEM;
        return NULL;
    }
    if (m && n > SIZE_MAX / m) {
        errno = ENOMEM;
        return NULL;
    }
    return __libc_realloc(p, n * m);
}

SHIM_API char *strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    if (count_alloc(CALLER, n)) {
        errno = ENOMEM;
        return NULL;
    }
    char *p = __libc_malloc(n);
    if (p) memcpy(p, s, n);
    return p;
}

SHIM_API char *strndup(const char *s, size_t max)
{
    size_t n = strnlen(s, max);
    if (count_alloc(CALLER, n + 1)) {
        errno = ENOMEM;
        return NULL;
    }
    char *p = __libc_malloc(n + 1);
    if (p) {
        memcpy(p, s, n);
        p[n] = '\0';
    }
    return p;
}

SHIM_API int posix_memalign(void **out, size_t align, size_t n)
{
    if (count_alloc(CALLER, n)) return ENOMEM;
    if (align < sizeof(void *) || (align & (align - 1))) return EINVAL;
    void *p = __libc_memalign(align, n);
    if (!p) return ENOMEM;
    *out = p;
    return 0;
}

SHIM_API void *aligned_alloc(size_t align, size_t n)
{
    if (count_alloc(CALLER, n)) {
        errno = ENOMEM;
        return NULL;
    }
    return __libc_memalign(align, n);
}

#endif /* FAULTSHIM_NO_ALLOC */

SHIM_API void *dlopen(const char *file, int mode)
{
    if (!real_dlopen) resolve_all();
    void *h = real_dlopen(file, mode);
    if (h && g_active) refresh_ranges();
    return h;
}

/* ---- opening ----------------------------------------------------------------- */

/* Journal that `abs` (a directory if `isdir`; open as `fd` if that is not
 * -1) was just created: its parent's inode, its escaped name and its own
 * inode. */
static void journal_created(const char *abs, int fd, int isdir)
{
    struct stat pst, st;
    char ename[3 * NAME_MAX + 4];
    if (parent_of(abs, &pst, ename) && (fd >= 0 ? fstat(fd, &st) : lstat(abs, &st)) == 0)
        journal_add("C %llu %s %llu %d\n", (unsigned long long)pst.st_ino, ename, (unsigned long long)st.st_ino,
                    isdir);
}

static int do_open(int dirfd, const char *path, int flags, mode_t mode)
{
    if (passthrough()) return real_openat(dirfd, path, flags, mode);
    char abs[PATH_MAX];
    int known = abs_path(dirfd, path, abs);
    if (!known || !in_scope(abs)) {
        int fd = real_openat(dirfd, path, flags, mode);
        int e = errno;
        if (fd >= 0) fd_remember(fd, known ? abs : NULL, flags);
        errno = e;
        return fd;
    }
    enter();
    struct stat before;
    int existed = lstat(abs, &before) == 0;
    int creating = (flags & O_CREAT) && !existed;
    int action = count_io((flags & O_CREAT) ? OC_CREATE : OC_OPEN, rel(abs), -1);
    FAIL_IF_INJECTED(action);
    int fd;
    /* O_TRUNC of a file with bytes: journal what is cut. */
    if (g_journaling && existed && (flags & O_TRUNC) && S_ISREG(before.st_mode) && before.st_size > 0 &&
        (flags & O_ACCMODE) != O_RDONLY) {
        int rfd = real_open(abs, O_RDONLY | O_CLOEXEC);
        if (rfd >= 0) {
            char save[64];
            save_bytes(rfd, 0, before.st_size, save);
            real_close(rfd);
            journal_add("T %llu %llu %lld 0 %s\n", (unsigned long long)before.st_dev,
                        (unsigned long long)before.st_ino, (long long)before.st_size, save);
        }
    }
    fd = real_openat(dirfd, path, flags, mode);
    int e = errno;
    if (fd >= 0) {
        fd_remember(fd, abs, flags);
        if (g_journaling && creating) journal_created(abs, fd, 0);
    }
    leave();
    errno = e;
    return fd;
}

static mode_t open_mode(int flags, va_list ap)
{
    if ((flags & O_CREAT) || (flags & __O_TMPFILE) == __O_TMPFILE) return (mode_t)va_arg(ap, int);
    return 0;
}

/* open, open64, openat and openat64: one body (the mode argument is there
 * only with O_CREAT or O_TMPFILE: open_mode) */
#define SHIM_OPEN(name, params, dir)               \
    SHIM_API int name params                       \
    {                                              \
        va_list ap;                                \
        va_start(ap, flags);                       \
        mode_t m = open_mode(flags, ap);           \
        va_end(ap);                                \
        return do_open(dir, path, flags, m);       \
    }
SHIM_OPEN(open, (const char *path, int flags, ...), AT_FDCWD)
SHIM_OPEN(open64, (const char *path, int flags, ...), AT_FDCWD)
SHIM_OPEN(openat, (int dirfd, const char *path, int flags, ...), dirfd)
SHIM_OPEN(openat64, (int dirfd, const char *path, int flags, ...), dirfd)

SHIM_API int __open_2(const char *path, int flags) { return do_open(AT_FDCWD, path, flags, 0); }
SHIM_API int __open64_2(const char *path, int flags) { return do_open(AT_FDCWD, path, flags, 0); }
SHIM_API int __openat_2(int dirfd, const char *path, int flags) { return do_open(dirfd, path, flags, 0); }
SHIM_API int __openat64_2(int dirfd, const char *path, int flags) { return do_open(dirfd, path, flags, 0); }

SHIM_API int creat(const char *path, mode_t mode)
{
    return do_open(AT_FDCWD, path, O_WRONLY | O_CREAT | O_TRUNC, mode);
}

SHIM_API int creat64(const char *path, mode_t mode)
{
    return do_open(AT_FDCWD, path, O_WRONLY | O_CREAT | O_TRUNC, mode);
}

SHIM_API DIR *opendir(const char *path)
{
    if (passthrough()) return real_opendir(path);
    char abs[PATH_MAX];
    if (!abs_path(AT_FDCWD, path, abs) || !in_scope(abs)) return real_opendir(path);
    enter();
    int action = count_io(OC_OPEN, rel(abs), -1);
    DIR *d = NULL;
    if (action == A_EIO || action == A_ENOSPC) errno = EIO;
    else d = real_opendir(path);
    int e = errno;
    leave();
    errno = e;
    return d;
}

SHIM_API int closedir(DIR *d)
{
    static int (*real_closedir)(DIR *);
    RESOLVE(real_closedir, "closedir");
    if (g_active && !t_busy) fd_forget(dirfd(d));
    return real_closedir(d);
}

/* ---- writing ----------------------------------------------------------------- */

/* Journal the bytes [off, off+n) of fd that a write is about to replace. */
static void journal_write(int fd, off_t off, size_t n, int append)
{
    if (!g_journaling) return;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return;
    if (append) off = st.st_size;
    char save[64] = "-";
    if (off < st.st_size) {
        off_t end = off + (off_t)n < st.st_size ? off + (off_t)n : st.st_size;
        save_bytes(fd, off, end - off, save);
    }
    journal_add("W %llu %llu %lld %lld %lld %s\n", (unsigned long long)st.st_dev,
                (unsigned long long)st.st_ino, (long long)st.st_size, (long long)off, (long long)n, save);
}

static void journal_sync_fd(int fd)
{
    if (!g_journaling) return;
    struct stat st;
    if (fstat(fd, &st) == 0)
        journal_add("S %llu %llu\n", (unsigned long long)st.st_dev, (unsigned long long)st.st_ino);
}

static size_t short_len(size_t n)
{
    return n / 2 > 0 ? n / 2 : n;
}

/* kind: 0 write (file offset), 1 pwrite (off) */
static ssize_t do_write(int fd, const void *buf, size_t n, off_t off, int positioned)
{
    const char *path = NULL;
    if (passthrough() || n == 0 || !fd_in_scope(fd, &path))
        return positioned ? real_pwrite(fd, buf, n, off) : real_write(fd, buf, n);
    enter();
    int action = count_io(OC_WRITE, path, (long long)n);
    FAIL_IF_INJECTED(action);
    ssize_t w;
    if (action == A_SHORT) n = short_len(n);
    if (g_journaling) {
        int fl = fcntl(fd, F_GETFL);
        off_t at = positioned ? off : lseek(fd, 0, SEEK_CUR);
        journal_write(fd, at, n, !positioned && fl >= 0 && (fl & O_APPEND));
    }
    w = positioned ? real_pwrite(fd, buf, n, off) : real_write(fd, buf, n);
    int e = errno;
    if (w > 0 && fd < FD_MAX && g_fd_sync[fd]) journal_sync_fd(fd);
    leave();
    errno = e;
    return w;
}

SHIM_API ssize_t write(int fd, const void *buf, size_t n) { return do_write(fd, buf, n, 0, 0); }
SHIM_API ssize_t pwrite(int fd, const void *buf, size_t n, off_t off) { return do_write(fd, buf, n, off, 1); }
SHIM_API ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off) { return do_write(fd, buf, n, off, 1); }

/* Vectored writes: mode 0 writev, 1 pwritev, 2 pwritev2 */
static ssize_t do_writev(int fd, const struct iovec *iov, int cnt, off_t off, int mode, int flags)
{
    const char *path = NULL;
#define CALL_REAL(v, c)                                                                \
    (mode == 0 ? real_writev(fd, (v), (c))                                             \
               : mode == 1 ? real_pwritev(fd, (v), (c), off) : real_pwritev2(fd, (v), (c), off, flags))
    size_t total = 0;
    for (int i = 0; i < cnt; i++) total += iov[i].iov_len;
    if (passthrough() || total == 0 || !fd_in_scope(fd, &path)) return CALL_REAL(iov, cnt);
    enter();
    int action = count_io(OC_WRITE, path, (long long)total);
    FAIL_IF_INJECTED(action);
    ssize_t w;
    struct iovec local[64];
    const struct iovec *use = iov;
    int ucnt = cnt;
    if (action == A_SHORT && cnt <= 64) {
        size_t want = short_len(total);
        ucnt = 0;
        for (int i = 0; i < cnt && want > 0; i++) {
            local[ucnt] = iov[i];
            if (local[ucnt].iov_len > want) local[ucnt].iov_len = want;
            want -= local[ucnt].iov_len;
            ucnt++;
        }
        use = local;
        total = short_len(total);
    }
    if (g_journaling) {
        int fl = fcntl(fd, F_GETFL);
        off_t at = (mode == 0 || off == -1) ? lseek(fd, 0, SEEK_CUR) : off;
        journal_write(fd, at, total, mode == 0 && fl >= 0 && (fl & O_APPEND));
    }
    w = CALL_REAL(use, ucnt);
    int e = errno;
    if (w > 0 && fd < FD_MAX && g_fd_sync[fd]) journal_sync_fd(fd);
    leave();
    errno = e;
    return w;
#undef CALL_REAL
}

SHIM_API ssize_t writev(int fd, const struct iovec *iov, int cnt) { return do_writev(fd, iov, cnt, 0, 0, 0); }
SHIM_API ssize_t pwritev(int fd, const struct iovec *iov, int cnt, off_t off)
{
    return do_writev(fd, iov, cnt, off, 1, 0);
}
SHIM_API ssize_t pwritev64(int fd, const struct iovec *iov, int cnt, off_t off)
{
    return do_writev(fd, iov, cnt, off, 1, 0);
}
SHIM_API ssize_t pwritev2(int fd, const struct iovec *iov, int cnt, off_t off, int flags)
{
    return do_writev(fd, iov, cnt, off, 2, flags);
}
SHIM_API ssize_t pwritev64v2(int fd, const struct iovec *iov, int cnt, off_t off, int flags)
{
    return do_writev(fd, iov, cnt, off, 2, flags);
}

/* ---- reading (counted only with CF_FAULT_OPS=...,read) ----------------------- */

static ssize_t do_read(int fd, void *buf, size_t n, off_t off, int positioned)
{
    const char *path = NULL;
    if (passthrough() || !(g_classes & (1u << OC_READ)) || !fd_in_scope(fd, &path))
        return positioned ? real_pread(fd, buf, n, off) : real_read(fd, buf, n);
    enter();
    int action = count_io(OC_READ, path, (long long)n);
    ssize_t r;
    if (action == A_EIO || action == A_ENOSPC) r = fail_errno(A_EIO);
    else r = positioned ? real_pread(fd, buf, action == A_SHORT ? short_len(n) : n, off)
                        : real_read(fd, buf, action == A_SHORT ? short_len(n) : n);
    int e = errno;
    leave();
    errno = e;
    return r;
}

SHIM_API ssize_t read(int fd, void *buf, size_t n) { return do_read(fd, buf, n, 0, 0); }
SHIM_API ssize_t pread(int fd, void *buf, size_t n, off_t off) { return do_read(fd, buf, n, off, 1); }
SHIM_API ssize_t pread64(int fd, void *buf, size_t n, off_t off) { return do_read(fd, buf, n, off, 1); }

/* ---- sizes --------------------------------------------------------------------- */

static void journal_truncate(int fd, off_t newsize)
{
    if (!g_journaling) return;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return;
    char save[64] = "-";
    if (newsize < st.st_size) save_bytes(fd, newsize, st.st_size - newsize, save);
    journal_add("T %llu %llu %lld %lld %s\n", (unsigned long long)st.st_dev, (unsigned long long)st.st_ino,
                (long long)st.st_size, (long long)newsize, save);
}

static int do_ftruncate(int fd, off_t len)
{
    const char *path = NULL;
    if (passthrough() || !fd_in_scope(fd, &path)) return real_ftruncate(fd, len);
    enter();
    int action = count_io(OC_TRUNCATE, path, (long long)len);
    int rc;
    if (action == A_EIO || action == A_ENOSPC) {
        rc = fail_errno(action);
    } else {
        journal_truncate(fd, len);
        rc = real_ftruncate(fd, len);
    }
    int e = errno;
    leave();
    errno = e;
    return rc;
}

SHIM_API int ftruncate(int fd, off_t len) { return do_ftruncate(fd, len); }
SHIM_API int ftruncate64(int fd, off_t len) { return do_ftruncate(fd, len); }

static int do_truncate(const char *path, off_t len)
{
    if (passthrough()) return real_truncate(path, len);
    char abs[PATH_MAX];
    if (!abs_path(AT_FDCWD, path, abs) || !in_scope(abs)) return real_truncate(path, len);
    int fd = real_open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    fd_remember(fd, abs, 0);
    int rc = do_ftruncate(fd, len);
    int e = errno;
    fd_forget(fd);
    real_close(fd);
    errno = e;
    return rc;
}

SHIM_API int truncate(const char *path, off_t len) { return do_truncate(path, len); }
SHIM_API int truncate64(const char *path, off_t len) { return do_truncate(path, len); }

static int do_fallocate(int fd, int mode, off_t off, off_t len, int posix)
{
    const char *path = NULL;
    if (passthrough() || !fd_in_scope(fd, &path))
        return posix ? real_posix_fallocate(fd, off, len) : real_fallocate(fd, mode, off, len);
    enter();
    int action = count_io(OC_TRUNCATE, path, (long long)(off + len));
    int rc;
    if (action == A_EIO || action == A_ENOSPC) {
        rc = posix ? (action == A_ENOSPC ? ENOSPC : EIO) : fail_errno(action);
    } else {
        struct stat st;
        if (g_journaling && fstat(fd, &st) == 0 && off + len > st.st_size && !(mode & 0x01 /* KEEP_SIZE */))
            journal_add("T %llu %llu %lld %lld -\n", (unsigned long long)st.st_dev,
                        (unsigned long long)st.st_ino, (long long)st.st_size, (long long)(off + len));
        rc = posix ? real_posix_fallocate(fd, off, len) : real_fallocate(fd, mode, off, len);
    }
    int e = errno;
    leave();
    errno = e;
    return rc;
}

SHIM_API int fallocate(int fd, int mode, off_t off, off_t len) { return do_fallocate(fd, mode, off, len, 0); }
SHIM_API int fallocate64(int fd, int mode, off_t off, off_t len) { return do_fallocate(fd, mode, off, len, 0); }
SHIM_API int posix_fallocate(int fd, off_t off, off_t len) { return do_fallocate(fd, 0, off, len, 1); }
SHIM_API int posix_fallocate64(int fd, off_t off, off_t len) { return do_fallocate(fd, 0, off, len, 1); }

/* ---- durability ------------------------------------------------------------------ */

static int nosync_listed(long long n)
{
    if (!may_act()) return 0;
    for (int i = 0; i < g_nnosync; i++)
        if (g_nosync[i] == n) return 1;
    return 0;
}

static int do_fsync(int fd, int data)
{
    const char *path = NULL;
    if (passthrough() || !fd_in_scope(fd, &path)) return data ? real_fdatasync(fd) : real_fsync(fd);
    enter();
    long long before = g_io_count;
    int action = count_io(OC_FSYNC, path, -1);
    int rc;
    if (action == A_EIO || action == A_ENOSPC) {
        rc = fail_errno(action);
    } else if (g_io_count != before && nosync_listed(g_io_count)) {
        /* CF_FAULT_NOSYNC: as if the writer had not called it */
        if (g_verbose) say("faultshim[%ld]: no sync at I/O op %lld (fsync %s)\n", (long)getpid(), g_io_count, path);
        rc = 0;
    } else {
        rc = data ? real_fdatasync(fd) : real_fsync(fd);
        if (rc == 0) journal_sync_fd(fd);
    }
    int e = errno;
    leave();
    errno = e;
    return rc;
}

SHIM_API int fsync(int fd) { return do_fsync(fd, 0); }
SHIM_API int fdatasync(int fd) { return do_fsync(fd, 1); }

SHIM_API int syncfs(int fd)
{
    if (passthrough()) return real_syncfs(fd);
    enter();
    int rc = real_syncfs(fd);
    if (rc == 0) journal_add("Y\n");
    int e = errno;
    leave();
    errno = e;
    return rc;
}

SHIM_API void sync(void)
{
    if (passthrough()) {
        real_sync();
        return;
    }
    enter();
    real_sync();
    journal_add("Y\n");
    leave();
}

/* ---- names ----------------------------------------------------------------------- */

static int do_rename(int olddirfd, const char *oldp, int newdirfd, const char *newp, unsigned flags, int how)
{
    /* how: 0 rename, 1 renameat, 2 renameat2, 3 syscall */
#define REAL_RENAME()                                                                           \
    (how == 0 ? real_rename(oldp, newp)                                                         \
              : how == 1 ? real_renameat(olddirfd, oldp, newdirfd, newp)                        \
                         : how == 2 ? real_renameat2(olddirfd, oldp, newdirfd, newp, flags)     \
                                    : (int)real_syscall(SYS_renameat2, olddirfd, oldp, newdirfd, newp, flags))
    if (passthrough()) return REAL_RENAME();
    char a[PATH_MAX], b[PATH_MAX];
    if (!abs_path(olddirfd, oldp, a) || !abs_path(newdirfd, newp, b) || (!in_scope(a) && !in_scope(b)))
        return REAL_RENAME();
    enter();
    char what[2 * PATH_MAX + 8];
    snprintf(what, sizeof what, "%s -> %s", rel(a), rel(b));
    int action = count_io(OC_RENAME, what, -1);
    FAIL_IF_INJECTED(action);
    int rc;
    struct stat sa, sb, pa, pb;
    char ea[3 * NAME_MAX + 4], eb[3 * NAME_MAX + 4];
    int have_a = lstat(a, &sa) == 0;
    int have_b = lstat(b, &sb) == 0;
    char hold[64] = "-";
    int exchange = (flags & RENAME_EXCHANGE) != 0;
    if (g_journaling && have_a && have_b && !exchange && !S_ISDIR(sb.st_mode)) hold_file(b, hold);
    rc = REAL_RENAME();
    int e = errno;
    if (g_journaling) {
        if (rc == 0 && have_a && parent_of(a, &pa, ea) && parent_of(b, &pb, eb)) {
            if (exchange && have_b)
                journal_add("X %llu %s %llu %s %llu %llu\n", (unsigned long long)pa.st_ino, ea,
                            (unsigned long long)pb.st_ino, eb, (unsigned long long)sa.st_ino,
                            (unsigned long long)sb.st_ino);
            else
                journal_add("R %llu %s %llu %s %llu %llu %d %s\n", (unsigned long long)pa.st_ino, ea,
                            (unsigned long long)pb.st_ino, eb, (unsigned long long)sa.st_ino,
                            have_b ? (unsigned long long)sb.st_ino : 0ULL, have_b && S_ISDIR(sb.st_mode), hold);
        } else {
            unhold(hold);
        }
    }
    leave();
    errno = e;
    return rc;
#undef REAL_RENAME
}

SHIM_API int rename(const char *a, const char *b) { return do_rename(AT_FDCWD, a, AT_FDCWD, b, 0, 0); }
SHIM_API int renameat(int da, const char *a, int db, const char *b) { return do_rename(da, a, db, b, 0, 1); }
SHIM_API int renameat2(int da, const char *a, int db, const char *b, unsigned flags)
{
    if (!real_renameat2) resolve_all();
    if (!real_renameat2) return do_rename(da, a, db, b, flags, 3);
    return do_rename(da, a, db, b, flags, 2);
}

SHIM_API long syscall(long number, ...)
{
    va_list ap;
    va_start(ap, number);
    long a1 = va_arg(ap, long), a2 = va_arg(ap, long), a3 = va_arg(ap, long);
    long a4 = va_arg(ap, long), a5 = va_arg(ap, long), a6 = va_arg(ap, long);
    va_end(ap);
    if (!real_syscall) resolve_all();
#ifdef SYS_renameat2
    if (number == SYS_renameat2)
        return do_rename((int)a1, (const char *)a2, (int)a3, (const char *)a4, (unsigned)a5, 3);
#endif
    return real_syscall(number, a1, a2, a3, a4, a5, a6);
}

static int do_unlink(int dirfd, const char *path, int flags, int how)
{
    /* how: 0 unlink, 1 unlinkat, 2 rmdir, 3 remove */
#define REAL_UNLINK()                                                                       \
    (how == 0 ? real_unlink(path)                                                           \
              : how == 1 ? real_unlinkat(dirfd, path, flags) : how == 2 ? real_rmdir(path) : real_remove(path))
    if (passthrough()) return REAL_UNLINK();
    char abs[PATH_MAX];
    if (!abs_path(dirfd, path, abs) || !in_scope(abs)) return REAL_UNLINK();
    enter();
    struct stat st;
    int have = lstat(abs, &st) == 0;
    int isdir = have && S_ISDIR(st.st_mode);
    int cls = (how == 2 || (how == 1 && (flags & AT_REMOVEDIR)) || (how == 3 && isdir)) ? OC_RMDIR : OC_UNLINK;
    int action = count_io(cls, rel(abs), -1);
    FAIL_IF_INJECTED(action);
    int rc;
    char hold[64] = "-";
    if (g_journaling && have && !isdir) hold_file(abs, hold);
    struct stat pst;
    char ename[3 * NAME_MAX + 4];
    int have_parent = parent_of(abs, &pst, ename);
    rc = REAL_UNLINK();
    int e = errno;
    if (g_journaling) {
        if (rc == 0 && have && have_parent) {
            if (isdir)
                journal_add("D %llu %s %llu %o\n", (unsigned long long)pst.st_ino, ename,
                            (unsigned long long)st.st_ino, (unsigned)(st.st_mode & 07777));
            else
                journal_add("U %llu %s %llu %s\n", (unsigned long long)pst.st_ino, ename,
                            (unsigned long long)st.st_ino, hold);
        } else {
            unhold(hold);
        }
    }
    leave();
    errno = e;
    return rc;
#undef REAL_UNLINK
}

SHIM_API int unlink(const char *p) { return do_unlink(AT_FDCWD, p, 0, 0); }
SHIM_API int unlinkat(int d, const char *p, int flags) { return do_unlink(d, p, flags, 1); }
SHIM_API int rmdir(const char *p) { return do_unlink(AT_FDCWD, p, 0, 2); }
SHIM_API int remove(const char *p) { return do_unlink(AT_FDCWD, p, 0, 3); }

static int do_mkdir(int dirfd, const char *path, mode_t mode, int at)
{
    if (passthrough()) return at ? real_mkdirat(dirfd, path, mode) : real_mkdir(path, mode);
    char abs[PATH_MAX];
    if (!abs_path(dirfd, path, abs) || !in_scope(abs))
        return at ? real_mkdirat(dirfd, path, mode) : real_mkdir(path, mode);
    enter();
    int action = count_io(OC_MKDIR, rel(abs), -1);
    FAIL_IF_INJECTED(action);
    int rc;
    rc = at ? real_mkdirat(dirfd, path, mode) : real_mkdir(path, mode);
    int e = errno;
    if (rc == 0 && g_journaling) journal_created(abs, -1, 1);
    leave();
    errno = e;
    return rc;
}

SHIM_API int mkdir(const char *p, mode_t m) { return do_mkdir(AT_FDCWD, p, m, 0); }
SHIM_API int mkdirat(int d, const char *p, mode_t m) { return do_mkdir(d, p, m, 1); }

static int do_link(int da, const char *a, int db, const char *b, int flags, int at)
{
    if (passthrough()) return at ? real_linkat(da, a, db, b, flags) : real_link(a, b);
    char pa[PATH_MAX], pb[PATH_MAX];
    if (!abs_path(da, a, pa) || !abs_path(db, b, pb) || !in_scope(pb))
        return at ? real_linkat(da, a, db, b, flags) : real_link(a, b);
    enter();
    int action = count_io(OC_LINK, rel(pb), -1);
    FAIL_IF_INJECTED(action);
    int rc;
    rc = at ? real_linkat(da, a, db, b, flags) : real_link(a, b);
    int e = errno;
    if (rc == 0 && g_journaling) journal_created(pb, -1, 0);
    leave();
    errno = e;
    return rc;
}

SHIM_API int link(const char *a, const char *b) { return do_link(AT_FDCWD, a, AT_FDCWD, b, 0, 0); }
SHIM_API int linkat(int da, const char *a, int db, const char *b, int flags) { return do_link(da, a, db, b, flags, 1); }

SHIM_API int close(int fd)
{
    const char *path = NULL;
    if (passthrough()) {
        if (g_active && !t_busy) fd_forget(fd);
        return real_close(fd);
    }
    if (!fd_in_scope(fd, &path)) {
        fd_forget(fd);
        return real_close(fd);
    }
    enter();
    int action = count_io(OC_CLOSE, path, -1);
    fd_forget(fd);
    int rc = real_close(fd);
    int e = errno;
    if (action == A_EIO || action == A_ENOSPC) {
        rc = -1;
        e = action == A_ENOSPC ? ENOSPC : EIO;
    }
    leave();
    errno = e;
    return rc;
}
