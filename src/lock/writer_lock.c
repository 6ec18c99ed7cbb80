/* writer_lock.c - the writer lock of a column: one byte of a lock file
 * shared by the columns of a directory (see writer_lock.h). */
#include "writer_lock.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "error.h"
#include "fsutil.h"
#include "platform.h"

/* A locker that keeps finding its lock file replaced gives up after this
 * many tries (each replacement means another process removed or tidied it
 * in between: rare, and never for long). */
#define MAX_ATTEMPTS 64

uint64_t cf__fnv1a(const char *s, size_t n)
{
    uint64_t h = 14695981039346656037ULL;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
    return h;
}

void cf__short_leaf(const char *leaf, size_t len, char out[224])
{
    if (len <= 200) {
        memcpy(out, leaf, len);
        out[len] = '\0';
        return;
    }
    snprintf(out, 224, "%.180s~%016" PRIx64, leaf, cf__fnv1a(leaf, len));
}

/* The byte of the column's lock: 62 bits of a hash of its (short) leaf, so
 * that a one-byte lock there never reaches the end of off_t.  Two names of
 * one directory sharing a byte (a chance of 2^-62 per pair) would only
 * make one writer wait for the other (CF_EBUSY), never mix their data. */
static int64_t slot_of(const char *short_leaf)
{
    return (int64_t)(cf__fnv1a(short_leaf, strlen(short_leaf)) & ((UINT64_C(1) << 62) - 1));
}

static char *lock_path(const char *dir, const char *prefix, const char *short_leaf)
{
    size_t n = strlen(dir) + strlen(prefix) + strlen(short_leaf) + 2;
    char *p = malloc(n);
    if (p) snprintf(p, n, "%s/%s%s", dir, prefix, short_leaf);
    return p;
}

/* 1 if fd still is the file at path (no one removed or replaced it since
 * it was opened). */
static int still_there(int fd, const char *path)
{
    struct stat a, b;
    return fstat(fd, &a) == 0 && lstat(path, &b) == 0 && a.st_ino == b.st_ino && a.st_dev == b.st_dev;
}

/* Unlink path, open as fd, if no one else holds a lock in it: locked all
 * through fd first, so that no locker can take a byte until it is gone,
 * and checked to be still the file at path.  1 if removed. */
static int remove_if_unlocked(int fd, const char *path)
{
    return cf__lock_exclusive(fd) == 0 && still_there(fd, path) && unlink(path) == 0;
}

static int open_failed(const char *path, const char *column, cf_error *err)
{
    int e = errno;
    if (e == ELOOP)
        return CF_FAIL(err, CF_ENAME, "%s: symbolic link where the writer lock belongs; colfile does not "
                       "follow links next to a column", path);
    return CF_FAIL(err, cf__errno_code(e), "%s: cannot open the writer lock %s: %s", column, path, strerror(e));
}

/* 1 if errno e says the file system cannot lock at all (Lustre mounted
 * noflock: ENOSYS; NFS without its lock manager: ENOLCK). */
static int cannot_lock(int e) { return e == ENOSYS || e == ENOLCK || e == EOPNOTSUPP; }

static int lock_failed(int e, const char *path, const char *column, cf_error *err)
{
    if (cannot_lock(e))
        return CF_FAIL(err, CF_EIO, "%s: the file system cannot lock %s (%s), so colfile cannot keep a second "
                       "writer out; if you make sure that one process at a time writes this File, open it "
                       "without locking (Python: locking=False; C: CF_OPEN_NOLOCKING; CLI: --no-locking)",
                       column, path, strerror(e));
    if (e == EWOULDBLOCK || e == EAGAIN || e == EACCES)
        return CF_FAIL(err, CF_EBUSY, "%s: another writer (process or handle) is changing this column; "
                       "its lock in %s is held", column, path);
    return CF_FAIL(err, CF_EIO, "%s: cannot lock %s: %s", column, path, strerror(e));
}

/* The end of a take: on success the lock keeps fd and path, else path is
 * freed and rc returned. */
static int taken(cf__lock *lk, int rc, int fd, int64_t slot, char *path)
{
    if (rc) {
        free(path);
        return rc;
    }
    lk->fd = fd;
    lk->slot = slot;
    lk->path = path;
    return 0;
}

/* Where the kernel has no open file description locks: a file per column,
 * locked whole, removed by its holder while it still holds it. */
static int take_own_file(cf__lock *lk, const char *dir, const char *short_leaf, const char *column,
                         cf_error *err)
{
    char *path = lock_path(dir, CF__LOCK_PREFIX, short_leaf);
    if (!path) return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", column);
    int rc = 0, fd = -1;
    for (int attempt = 0; rc == 0 && fd < 0; attempt++) {
        if (attempt == MAX_ATTEMPTS) {
            rc = CF_FAIL(err, CF_EBUSY, "%s: the writer lock %s keeps changing", column, path);
            break;
        }
        fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0666);
        if (fd < 0) {
            rc = open_failed(path, column, err);
        } else if ((lk->shared ? cf__lock_shared(fd) : cf__lock_exclusive(fd)) != 0) {
            rc = lock_failed(errno, path, column, err);
            close(fd);
            fd = -1;
        } else if (!still_there(fd, path)) {
            close(fd); /* removed or replaced meanwhile: try again */
            fd = -1;
        }
    }
    return taken(lk, rc, fd, -1, path);
}

/* The directory's lock file, opened for writing (which a write lock needs),
 * made if missing: -1 with errno, or -2 when another writer made it first.
 * Never through a link: a planted one could point anywhere.  Whoever may
 * write the directory may lock it: the file is made read-write for the
 * owner and for the group and others where they may write the directory,
 * whatever the umask (it holds no data; a writer that could not open it
 * could not write any column beside it). */
static int open_shared_file(const char *dir, const char *path)
{
    int fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0 || errno != ENOENT) return fd;
    fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) return errno == EEXIST ? -2 : -1;
    struct stat st;
    if (stat(dir, &st) == 0) {
        mode_t mode = 0600 | ((st.st_mode & S_IWGRP) ? 0060 : 0) | ((st.st_mode & S_IWOTH) ? 0006 : 0);
        if (mode != 0600) (void)fchmod(fd, mode);
    }
    return fd;
}

/* The byte of short leaf `sl` in dir's lock file at `path` (taken over by
 * the lock, or freed). */
static int take_shared_file(cf__lock *lk, const char *dir, char *path, const char *sl, const char *column,
                            cf_error *err)
{
    int64_t slot = slot_of(sl);
    int rc = 0, fd = -1;
    for (int attempt = 0; rc == 0 && fd < 0; attempt++) {
        if (attempt == MAX_ATTEMPTS) {
            rc = CF_FAIL(err, CF_EBUSY, "%s: the writer lock %s keeps changing, or stays locked whole "
                         "(by a process removing it)", column, path);
            break;
        }
        fd = open_shared_file(dir, path);
        if (fd == -2) continue; /* made by another writer meanwhile */
        if (fd < 0) {
            rc = open_failed(path, column, err);
            break;
        }
        if (cf__ofd_lock(fd, !lk->shared, slot) != 0) {
            int e = errno;
            int what = (e == EAGAIN || e == EACCES) ? cf__ofd_probe(fd, slot) : -1;
            close(fd);
            fd = -1;
            if (e == EINVAL || e == ENOSYS) {
                /* no open file description locks here; the empty file we
                 * may have made is tidied like any other */
                free(path);
                (void)cf__lock_tidy(dir);
                return take_own_file(lk, dir, sl, column, err);
            }
            if (what == 2 || what == 0) {
                /* being tidied away (or the conflict is gone already): the
                 * next open makes a new file.  A tidy holds the file for
                 * microseconds; the waits add up to about 40 ms. */
                struct timespec pause = { 0, 20000L * (attempt + 1) };
                nanosleep(&pause, NULL);
                continue;
            }
            rc = lock_failed(e, path, column, err);
        } else if (!still_there(fd, path)) {
            close(fd); /* tidied or replaced meanwhile: try again */
            fd = -1;
        }
    }
    return taken(lk, rc, fd, slot, path);
}

struct cf__lock_dir {
    pthread_mutex_t mu; /* guards everything below but refs and pid */
    atomic_int refs;
    atomic_int pid; /* the process that opened fd; 0 before (read without
                       mu, which a forked child may have copied locked) */
    int fd;        /* the lock file, holding CF__LOCK_PRESENCE shared; -1 */
    int unusable;  /* no open file description locks here */
    char *dir, *path;
    int64_t *held; /* the bytes locked through fd */
    int64_t nheld, cap;
};

cf__lock_dir *cf__lock_dir_new(const char *dir, size_t len)
{
    cf__lock_dir *d = calloc(1, sizeof *d);
    if (!d) return NULL;
    d->dir = strndup(dir, len);
    d->path = d->dir ? cf__path_join(d->dir, CF__LOCK_NAME) : NULL;
    if (!d->path) {
        free(d->dir);
        free(d);
        return NULL;
    }
    pthread_mutex_init(&d->mu, NULL);
    atomic_init(&d->refs, 1);
    atomic_init(&d->pid, 0);
    d->fd = -1;
    return d;
}

cf__lock_dir *cf__lock_dir_ref(cf__lock_dir *d)
{
    if (d) atomic_fetch_add(&d->refs, 1);
    return d;
}

void cf__lock_dir_unref(cf__lock_dir *d)
{
    if (!d || atomic_fetch_sub(&d->refs, 1) != 1) return;
    if (d->fd >= 0) close(d->fd); /* lets go of the presence byte */
    /* (a forked child may have copied the mutex locked: left alone there) */
    int pid = atomic_load(&d->pid);
    if (pid == 0 || pid == (int)getpid()) pthread_mutex_destroy(&d->mu);
    free(d->held);
    free(d->path);
    free(d->dir);
    free(d);
}

const char *cf__lock_dir_dir(const cf__lock_dir *d) { return d->dir; }

void cf__lock_dir_idle(cf__lock_dir *d)
{
    if (!d || atomic_load(&d->pid) != (int)getpid()) return;
    pthread_mutex_lock(&d->mu);
    if (d->fd >= 0 && d->nheld == 0) {
        close(d->fd);
        d->fd = -1;
        atomic_store(&d->pid, 0);
    }
    pthread_mutex_unlock(&d->mu);
}

void cf__lock_dir_forget(cf__lock_dir *d)
{
    /* In the child, which has one thread: the mutex may have been copied
     * locked by another thread of the parent, so it is made anew (the
     * child's next columns may lock through d again). */
    if (!d) return;
    int pid = atomic_load(&d->pid);
    if (pid == 0 || pid == (int)getpid()) return;
    pthread_mutex_init(&d->mu, NULL);
    if (d->fd >= 0) close(d->fd);
    d->fd = -1;
    d->nheld = 0;
    atomic_store(&d->pid, 0);
}

int cf__lock_is_held(const cf__lock *lk) { return lk->fd >= 0 || lk->via_held || lk->claimed; }

/* Open d's lock file and take its presence byte (d->mu held): 0, 1 when
 * the kernel has no open file description locks (the column then takes
 * a lock of its own), or an error. */
static int open_via(cf__lock_dir *d, const char *column, cf_error *err)
{
    for (int attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
        int fd = open_shared_file(d->dir, d->path);
        if (fd == -2) continue; /* made by another writer meanwhile */
        if (fd < 0) return open_failed(d->path, column, err);
        if (cf__ofd_lock(fd, 0, CF__LOCK_PRESENCE) != 0) {
            int e = errno;
            close(fd);
            if (e == EINVAL || e == ENOSYS) {
                d->unusable = 1;
                return 1;
            }
            if (e != EAGAIN && e != EACCES) return lock_failed(e, d->path, column, err);
            /* a tidy holds all of the file for microseconds: the next open
             * finds it gone and makes a new one */
            struct timespec pause = { 0, 20000L * (attempt + 1) };
            nanosleep(&pause, NULL);
            continue;
        }
        if (!still_there(fd, d->path)) {
            close(fd); /* tidied or replaced meanwhile: try again */
            continue;
        }
        d->fd = fd;
        atomic_store(&d->pid, (int)getpid());
        return 0;
    }
    return CF_FAIL(err, CF_EBUSY, "%s: the writer lock %s keeps changing, or stays locked whole "
                   "(by a process removing it)", column, d->path);
}

/* Lock byte `slot` through lk->via: 0, 1 when the via cannot be used here
 * (the caller takes a lock of its own), or an error. */
static int take_via(cf__lock *lk, int64_t slot, const char *column, cf_error *err)
{
    cf__lock_dir *d = lk->via;
    int pid = atomic_load(&d->pid);
    if (pid != 0 && pid != (int)getpid()) return 1; /* a forked child: the descriptor is the parent's */
    pthread_mutex_lock(&d->mu);
    int rc = d->unusable ? 1 : 0;
    for (int attempt = 0; rc == 0; attempt++) {
        if (attempt == MAX_ATTEMPTS) {
            rc = CF_FAIL(err, CF_EBUSY, "%s: the writer lock %s keeps changing", column, d->path);
            break;
        }
        if (d->fd >= 0 && !still_there(d->fd, d->path)) {
            /* No longer the file at the path: a removal moved its directory
             * away (the file goes with it, still linked, until the removal
             * deletes it), or something that ignores the presence byte
             * removed it.  Locks in it no longer exclude anyone: open the
             * file at the path again, unless holders still lock through
             * this one (then the column takes a lock of its own). */
            if (d->nheld > 0) {
                rc = 1;
                break;
            }
            close(d->fd);
            d->fd = -1;
        }
        if (d->fd < 0 && (rc = open_via(d, column, err)) != 0) break;
        for (int64_t i = 0; rc == 0 && i < d->nheld; i++)
            if (d->held[i] == slot) rc = lock_failed(EAGAIN, d->path, column, err); /* another handle here */
        if (rc == 0 && d->nheld == d->cap) {
            int64_t cap = d->cap ? 2 * d->cap : 16;
            int64_t *held = realloc(d->held, (size_t)cap * sizeof *held);
            if (!held) rc = CF_FAIL(err, CF_ENOMEM, "%s: out of memory", column);
            else {
                d->held = held;
                d->cap = cap;
            }
        }
        if (rc == 0 && cf__ofd_lock(d->fd, 1, slot) != 0) rc = lock_failed(errno, d->path, column, err);
        if (rc) break;
        /* Moved away between the check and the lock: a removal held all of
         * it then, so the byte locked there guards a directory that is no
         * longer at the path.  Again, with the file at the path. */
        if (still_there(d->fd, d->path)) {
            d->held[d->nheld++] = slot;
            lk->slot = slot;
            lk->via_held = 1;
            break;
        }
        (void)cf__ofd_unlock(d->fd, slot);
    }
    pthread_mutex_unlock(&d->mu);
    return rc;
}

static void release_via(cf__lock *lk)
{
    cf__lock_dir *d = lk->via;
    lk->via_held = 0;
    if (atomic_load(&d->pid) != (int)getpid()) return; /* a forked child: the lock is the parent's */
    pthread_mutex_lock(&d->mu);
    for (int64_t i = 0; i < d->nheld; i++) {
        if (d->held[i] != lk->slot) continue;
        (void)cf__ofd_unlock(d->fd, lk->slot);
        d->held[i] = d->held[--d->nheld];
        break;
    }
    pthread_mutex_unlock(&d->mu);
}

int cf__lock_take(cf__lock *lk, const char *column, int shared, cf_error *err)
{
    const char *slash = strrchr(column, '/');
    const char *leaf = slash ? slash + 1 : column;
    char sl[224];
    cf__short_leaf(leaf, strlen(leaf), sl);
    lk->shared = shared;
    if (lk->off) {
        lk->claimed = 1; /* the caller vouches for being the only writer */
        return 0;
    }
    if (lk->via && !shared) {
        int rc = take_via(lk, slot_of(sl), column, err);
        if (rc <= 0) return rc;
    }
    char *dir = slash ? strndup(column, (size_t)(slash - column)) : strdup(".");
    char *path = dir ? cf__path_join(dir, CF__LOCK_NAME) : NULL;
    int rc = path ? take_shared_file(lk, dir, path, sl, column, err)
                  : CF_FAIL(err, CF_ENOMEM, "%s: out of memory", column);
    free(dir);
    return rc;
}

void cf__lock_release(cf__lock *lk)
{
    lk->claimed = 0;
    if (lk->via_held) release_via(lk);
    if (lk->fd >= 0) {
        /* A file of its own is removed while still held (a locker checks
         * that the file it locked is still there); a shared holder removes
         * it only if it is the last one.  The file of a directory stays for
         * the next writer (the File tidies it at its close), except after
         * shared holders (CF_OPEN_NOLOCK, bigfile's API, whose Files are
         * often never closed): the last one removes it, as if tidying, by
         * locking all of it through its own descriptor. */
        if (lk->slot < 0 && (!lk->shared || cf__lock_exclusive(lk->fd) == 0))
            (void)unlink(lk->path);
        else if (lk->slot >= 0 && lk->shared)
            (void)remove_if_unlocked(lk->fd, lk->path);
    }
    cf__lock_forget(lk); /* closing the descriptor lets go of the lock */
}

void cf__lock_forget(cf__lock *lk)
{
    if (lk->fd >= 0) close(lk->fd);
    free(lk->path);
    lk->fd = -1;
    lk->path = NULL;
    lk->via_held = 0; /* (through via: unlocked by release, or the parent's) */
    lk->claimed = 0;
    cf__lock_dir_unref(lk->via);
    lk->via = NULL;
}

int cf__lock_held(const char *dir, const char *leaf, size_t len)
{
    char sl[224];
    cf__short_leaf(leaf, len, sl);
    char *own = lock_path(dir, CF__LOCK_PREFIX, sl);
    char *shared = cf__path_join(dir, CF__LOCK_NAME);
    int held = 1; /* cannot tell: held */
    if (own && shared) {
        held = cf__lock_probe_path(own) != 0;
        if (!held) {
            int fd = open(shared, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
            if (fd >= 0) {
                /* a lock of the whole file is a tidy, which finds no writer */
                int what = cf__ofd_probe(fd, slot_of(sl));
                held = what == 1 || (what < 0 && errno != EINVAL && errno != ENOSYS);
                close(fd);
            } else {
                held = errno != ENOENT && errno != ENOTDIR;
            }
        }
    }
    free(own);
    free(shared);
    return held;
}

int cf__lock_tidy(const char *dir)
{
    char *path = cf__path_join(dir, CF__LOCK_NAME);
    if (!path) return 0;
    int removed = 0;
    int fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0) {
        removed = remove_if_unlocked(fd, path);
        close(fd);
    }
    free(path);
    return removed;
}

/* ---- all the locks of a directory --------------------------------------- */

/* The leaf of a directory entry as its lock knows it: the name itself, or
 * the leaf inside a staging or old-version name. */
static void entry_leaf(const char *name, char out[224])
{
    static const char *const prefixes[] = { ".colfile-stage.", ".colfile-old." };
    for (size_t k = 0; k < sizeof prefixes / sizeof *prefixes; k++) {
        size_t pl = strlen(prefixes[k]);
        if (strncmp(name, prefixes[k], pl) != 0) continue;
        const char *s = name + pl, *last = strrchr(s, '.');
        const char *second = last;
        while (second && second > s && *--second != '.') {}
        if (last && second && second > s) {
            size_t n = (size_t)(second - s);
            if (n > 223) n = 223;
            memcpy(out, s, n);
            out[n] = '\0';
            return;
        }
    }
    cf__short_leaf(name, strlen(name), out);
}

/* The CF_EBUSY error of a directory whose lock file has byte `at` locked
 * by someone: names the column whose byte it is, when an entry has it. */
static int dir_busy(const char *dir, const char *path, int64_t at, cf_error *err)
{
    DIR *d = at >= 0 ? opendir(dir) : NULL;
    struct dirent *ent;
    char sl[224];
    while (d && (ent = readdir(d)) != NULL) {
        if (strcmp(ent->d_name, ".") == 0 || strcmp(ent->d_name, "..") == 0) continue;
        entry_leaf(ent->d_name, sl);
        if (slot_of(sl) != at) continue;
        int rc = CF_FAIL(err, CF_EBUSY, "%s/%s: another writer (process or handle) is changing this column; "
                         "its lock in %s is held", dir, sl, path);
        closedir(d);
        return rc;
    }
    if (d) closedir(d);
    return CF_FAIL(err, CF_EBUSY, "%s: another writer (process or handle) holds a lock in %s", dir, path);
}

/* Lock `path`, a column's own lock file, whole (made if missing) and keep
 * it in dl. */
static int add_own(cf__dir_lock *dl, const char *dir, char *path, const char *leaf, cf_error *err)
{
    if (dl->n_own == dl->cap_own) {
        int64_t cap = dl->cap_own ? 2 * dl->cap_own : 16;
        int *fds = realloc(dl->own_fds, (size_t)cap * sizeof *fds);
        if (fds) dl->own_fds = fds;
        char **paths = fds ? realloc(dl->own_paths, (size_t)cap * sizeof *paths) : NULL;
        if (!paths) {
            free(path);
            return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", dir);
        }
        dl->own_paths = paths;
        dl->cap_own = cap;
    }
    for (int attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
        int fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0666);
        if (fd < 0) {
            int rc = open_failed(path, dir, err);
            free(path);
            return rc;
        }
        if (cf__lock_exclusive(fd) != 0) {
            int e = errno;
            close(fd);
            char column[PATH_MAX];
            snprintf(column, sizeof column, "%s/%s", dir, leaf);
            int rc = lock_failed(e, path, column, err);
            free(path);
            return rc;
        }
        if (still_there(fd, path)) {
            dl->own_fds[dl->n_own] = fd;
            dl->own_paths[dl->n_own++] = path;
            return 0;
        }
        close(fd); /* removed by its holder meanwhile: again */
    }
    int rc = CF_FAIL(err, CF_EBUSY, "%s: the writer lock %s keeps changing", dir, path);
    free(path);
    return rc;
}

/* Lock the column lock files of their own in dir; with `every`, where the
 * kernel has no open file description locks, also one (made) for each
 * directory in dir and for also_leaf. */
static int lock_own_files(cf__dir_lock *dl, const char *dir, int every, const char *also_leaf, cf_error *err)
{
    DIR *d = opendir(dir);
    if (!d) {
        int e = errno;
        return CF_FAIL(err, cf__errno_code(e), "%s: cannot list: %s", dir, strerror(e));
    }
    /* the names first: the locks add entries to dir */
    char **leaves = NULL;
    size_t n = 0, cap = 0;
    int rc = 0;
    struct dirent *ent;
    size_t pl = strlen(CF__LOCK_PREFIX);
    while (rc == 0 && (ent = readdir(d)) != NULL) {
        const char *nm = ent->d_name;
        if (strcmp(nm, ".") == 0 || strcmp(nm, "..") == 0 || strcmp(nm, CF__LOCK_NAME) == 0) continue;
        char sl[224];
        if (strncmp(nm, CF__LOCK_PREFIX, pl) == 0) {
            snprintf(sl, sizeof sl, "%s", nm + pl);
        } else {
            if (!every) continue;
            struct stat st;
            if (fstatat(dirfd(d), nm, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode)) continue;
            entry_leaf(nm, sl);
        }
        if (n == cap) {
            cap = cap ? 2 * cap : 32;
            char **l = realloc(leaves, cap * sizeof *l);
            if (!l) {
                rc = CF_FAIL(err, CF_ENOMEM, "%s: out of memory", dir);
                break;
            }
            leaves = l;
        }
        if (!(leaves[n] = strdup(sl))) rc = CF_FAIL(err, CF_ENOMEM, "%s: out of memory", dir);
        else n++;
    }
    closedir(d);
    if (rc == 0 && every && also_leaf) {
        char *l = strdup(also_leaf);
        char **grown = n == cap ? realloc(leaves, (cap + 1) * sizeof *leaves) : leaves;
        if (!l || !grown) {
            free(l);
            if (grown) leaves = grown;
            rc = CF_FAIL(err, CF_ENOMEM, "%s: out of memory", dir);
        } else {
            leaves = grown;
            leaves[n++] = l;
        }
    }
    for (size_t i = 0; i < n; i++) {
        int dup = 0;
        for (int64_t j = 0; j < dl->n_own && !dup; j++)
            dup = strcmp(dl->own_paths[j] + strlen(dir) + 1 + pl, leaves[i]) == 0;
        if (rc == 0 && !dup) {
            char *path = lock_path(dir, CF__LOCK_PREFIX, leaves[i]);
            rc = path ? add_own(dl, dir, path, leaves[i], err) : CF_FAIL(err, CF_ENOMEM, "%s: out of memory", dir);
        }
        free(leaves[i]);
    }
    free(leaves);
    return rc;
}

int cf__lock_whole_dir(cf__dir_lock *dl, const char *dir, const char *also_leaf, cf_error *err)
{
    char *path = cf__path_join(dir, CF__LOCK_NAME);
    if (!path) return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", dir);
    int rc = 0, fd = -1, no_ofd = 0;
    for (int attempt = 0; rc == 0 && fd < 0 && !no_ofd; attempt++) {
        if (attempt == MAX_ATTEMPTS) {
            rc = CF_FAIL(err, CF_EBUSY, "%s: the writer lock %s keeps changing, or stays locked whole "
                         "(by a process removing it)", dir, path);
            break;
        }
        fd = open_shared_file(dir, path);
        if (fd == -2) continue;
        if (fd < 0) {
            rc = open_failed(path, dir, err);
            break;
        }
        if (cf__ofd_lock_range(fd, 0, CF__LOCK_PRESENCE) != 0) {
            int e = errno;
            int64_t at = -1;
            int what = (e == EAGAIN || e == EACCES) ? cf__ofd_probe_range(fd, 0, CF__LOCK_PRESENCE, &at) : -1;
            close(fd);
            fd = -1;
            if (e == EINVAL || e == ENOSYS) {
                no_ofd = 1;
                (void)cf__lock_tidy(dir);
            } else if (what == 0 || (what == 1 && at < 0)) {
                /* being tidied away, or the conflict is gone: again */
                struct timespec pause = { 0, 20000L * (attempt + 1) };
                nanosleep(&pause, NULL);
            } else if (e == EAGAIN || e == EACCES) {
                rc = dir_busy(dir, path, at, err);
            } else {
                rc = lock_failed(e, path, dir, err);
            }
        } else if (!still_there(fd, path)) {
            close(fd);
            fd = -1;
        }
    }
    if (rc) {
        free(path);
        return rc;
    }
    dl->fd = fd;
    dl->path = path;
    /* Files of their own exist only where there are no OFD locks, or
     * were left by such a kernel (a file system shared with one): both. */
    rc = lock_own_files(dl, dir, no_ofd, also_leaf, err);
    if (rc) cf__dir_lock_release(dl);
    return rc;
}

void cf__dir_lock_release(cf__dir_lock *dl)
{
    for (int64_t i = 0; i < dl->n_own; i++) {
        if (still_there(dl->own_fds[i], dl->own_paths[i])) (void)unlink(dl->own_paths[i]);
        close(dl->own_fds[i]);
        free(dl->own_paths[i]);
    }
    free(dl->own_fds);
    free(dl->own_paths);
    dl->own_fds = NULL;
    dl->own_paths = NULL;
    dl->n_own = dl->cap_own = 0;
    if (dl->fd >= 0) {
        (void)remove_if_unlocked(dl->fd, dl->path); /* tidy, unless others keep it open */
        close(dl->fd);
    }
    free(dl->path);
    dl->fd = -1;
    dl->path = NULL;
}
