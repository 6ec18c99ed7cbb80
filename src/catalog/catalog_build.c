/* catalog_build.c - building the catalog from a fresh scan of the File
 * (reusing the old catalog's bytes where their stamps still hold) and
 * writing it (docs/format.md 8.5 states the rule). */
/* the type of directory entries (d_type: DT_LNK, DT_UNKNOWN) */
#ifndef _DEFAULT_SOURCE
#define _DEFAULT_SOURCE 1
#endif
#include "catalog.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "checksum.h"
#include "error.h"
#include "fsutil.h"
#include "names.h"
#include "platform.h"
#include "wire.h"

#include "catalog_impl.h"

/* ------------------------------------------------------------------ */
/* building */


/* The clock reading a stamp is checked against (see trusted): the file
 * clock now, or the probe's reading when that is later. */
static void clock_before(const build *b, struct timespec *t)
{
    cf__cat_file_clock(t);
    if (b->probed && (b->probe.tv_sec > t->tv_sec || (b->probe.tv_sec == t->tv_sec && b->probe.tv_nsec > t->tv_nsec)))
        *t = b->probe;
}

/* cf__cat_trusted(), counting the stamps that are not (cf__catalog_update may then
 * try again after waiting for the clock) */
static int trust(build *b, const stamp *s, const struct timespec *before)
{
    if (cf__cat_trusted(s, before, b->fine)) return 1;
    atomic_fetch_add(&b->racy, 1);
    return 0;
}

static size_t add_dir(build *b, const char *rel)
{
    if (b->ndirs == b->capdirs) {
        size_t cap = b->capdirs ? b->capdirs * 2 : 256;
        build_dir *d = realloc(b->dirs, cap * sizeof *d);
        if (!d) {
            b->failed = 1;
            return (size_t)-1;
        }
        b->dirs = d;
        b->capdirs = cap;
    }
    build_dir *d = &b->dirs[b->ndirs];
    memset(d, 0, sizeof *d);
    d->path = strdup(rel);
    if (!d->path) {
        b->failed = 1;
        return (size_t)-1;
    }
    return b->ndirs++;
}

static build_col *add_col(build *b, const char *rel, int depth)
{
    if (b->ncols == b->capcols) {
        size_t cap = b->capcols ? b->capcols * 2 : 256;
        build_col *c = realloc(b->cols, cap * sizeof *c);
        if (!c) {
            b->failed = 1;
            return NULL;
        }
        b->cols = c;
        b->capcols = cap;
    }
    build_col *c = &b->cols[b->ncols];
    memset(c, 0, sizeof *c);
    c->name = strdup(rel);
    c->ndirs = (size_t)depth;
    c->dirs = malloc((size_t)depth * sizeof *c->dirs);
    if (!c->name || !c->dirs) {
        free(c->name);
        free(c->dirs);
        b->failed = 1;
        return NULL;
    }
    memcpy(c->dirs, b->chain + 1, (size_t)depth * sizeof *c->dirs);
    b->ncols++;
    return c;
}

/* 1 if the catalog copies the bytes of slot s (up to INLINE_MAX): not
 * colfile-v1 and colfile-stats-v1, whose checksums and statistics only
 * verifying reads and queries use; they are stamped, never copied (nor
 * read), which keeps the catalog, read whole by every open of the File, to
 * the size of the other metadata. */
static int copies_bytes(int s)
{
    return s != CF__CAT_EXT && s != CF__CAT_STATS;
}

/* Reuse the old entry of c if every stamp of it still holds and its
 * directory's recorded stamp is `dir`. */
static int reuse(build *b, build_col *c, const stamp *dir)
{
    if (!b->old) return 0;
    const cat_col *o = cf__cat_find(b->old, c->name);
    if (!o || !o->complete) return 0;
    if (!cf__cat_same_stamp(&o->own, dir)) return 0;
    char buf[PATH_MAX];
    for (int s = 0; s < CF__CAT_NSLOTS; s++) {
        const cat_slot *f = &o->slot[s];
        if (f->state == 0) continue;
        if (cf__cat_full_path(buf, sizeof buf, b->root, c->name, cf__cat_slot_names[s]) || !cf__cat_still(buf, &f->st)) return 0;
    }
    memcpy(c->slot, o->slot, sizeof c->slot);
    for (int s = 0; s < CF__CAT_NSLOTS; s++) {
        cat_slot *f = &c->slot[s];
        if (f->state == 1 && !copies_bytes(s)) { /* kept by an older catalog */
            f->state = 2;
            f->data = NULL;
            f->len = 0;
        }
    }
    return 1;
}

/* Record the metadata file of slot s of the column directory open as dfd
 * in f: state 2 (its stamp) when it is larger than INLINE_MAX or not
 * copies_bytes(s), else state 1 (also its bytes).  The clock is read
 * before the file is looked at; its stamp (an fstat of the file opened
 * without following a link, or an lstat: the same) must be trusted and,
 * when read, hold after the read, which takes exactly its size.  Returns
 * 1, or 0 when the slot cannot be recorded. */
static int read_slot(build *b, int dfd, int s, cat_slot *f, char **owned)
{
    const char *name = cf__cat_slot_names[s];
    struct timespec before;
    clock_before(b, &before);
    struct stat st;
    stamp s1, s2;
    if (!copies_bytes(s)) {
        if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) return 0;
        cf__cat_fill_stamp(&st, &s1);
        if (!S_ISREG((mode_t)s1.mode) || !trust(b, &s1, &before)) return 0;
        f->st = s1;
        f->state = 2;
        return 1;
    }
    int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) return 0;
    int ok = 0;
    if (fstat(fd, &st) != 0) goto done;
    cf__cat_fill_stamp(&st, &s1);
    if (!S_ISREG((mode_t)s1.mode) || !trust(b, &s1, &before)) goto done;
    f->st = s1;
    if (s1.size > INLINE_MAX) {
        f->state = 2;
        ok = 1;
        goto done;
    }
    char *text = malloc((size_t)s1.size + 1);
    if (!text) goto done;
    *owned = text;
    size_t got = 0;
    while (got < (size_t)s1.size) {
        ssize_t n = pread(fd, text + got, (size_t)s1.size - got, (off_t)got);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) goto done;
        got += (size_t)n;
    }
    text[got] = '\0';
    if (fstat(fd, &st) != 0) goto done;
    cf__cat_fill_stamp(&st, &s2);
    if (!cf__cat_same_stamp(&s1, &s2)) goto done;
    f->state = 1;
    f->data = text;
    f->len = got;
    ok = 1;
done:
    close(fd);
    return ok;
}

/* Read the metadata files of column directory `abs` (`rel` below the root)
 * into c, after its directory's stamp was taken; the caller checks that
 * stamp again afterwards, which keeps the listing below (files absent stay
 * absent, the names present name the files read) true for that stamp.
 * Returns 1 if every file was read with a trusted stamp that held before
 * and after; 0 (incomplete) as well for a torn column, a path too long to
 * work on, or a symbolic link among the files colfile uses in it. */
static int read_column(build *b, build_col *c, const char *abs, const char *rel)
{
    if (strlen(b->root) + 1 + strlen(rel) + CF__PATH_ROOM >= PATH_MAX) return 0;
    DIR *d = opendir(abs);
    if (!d) return 0;
    int dfd = dirfd(d);
    unsigned char present[CF__CAT_NSLOTS] = { 0 };
    int ok = 1;
    struct dirent *ent;
    while (ok && (ent = readdir(d)) != NULL) {
        const char *nm = ent->d_name;
        if (!cf__name_guarded(nm, 1)) continue;
        if (strcmp(nm, CF__TORN_NAME) == 0) {
            ok = 0;
            break;
        }
        int lnk = 0;
#if defined(DT_LNK) && defined(DT_UNKNOWN)
        if (ent->d_type == DT_LNK) lnk = 1;
        else if (ent->d_type == DT_UNKNOWN)
#endif
        {
            struct stat st;
            lnk = fstatat(dfd, nm, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode);
        }
        if (lnk) ok = 0;
        for (int s = 0; s < CF__CAT_NSLOTS; s++)
            if (strcmp(nm, cf__cat_slot_names[s]) == 0) present[s] = 1;
    }
    for (int s = 0; ok && s < CF__CAT_NSLOTS; s++) {
        cat_slot *f = &c->slot[s];
        if (!present[s]) {
            f->state = 0; /* the directory's stamp keeps it absent */
            continue;
        }
        ok = read_slot(b, dfd, s, f, &c->owned[s]);
    }
    closedir(d);
    return ok;
}

/* A directory holding an entry named header is a column (2.3), whatever
 * the entry is: lstat, as the listing walk, so that a dangling link there
 * still makes a column rather than an empty group. */
static int has_header(const char *dir)
{
    char buf[PATH_MAX];
    struct stat st;
    return cf__cat_full_path(buf, sizeof buf, dir, "", "header") == 0 && lstat(buf, &st) == 0;
}

/* The walk of cf_file_list, recording every directory it depends on.
 * Returns 0, or -1 when the listing cannot be recorded (the catalog then
 * holds no listing: it is not written at all). */
static int scan(build *b, const char *rel, int depth)
{
    if (depth > DEPTH_MAX || b->failed) return -1;
    char abs[PATH_MAX];
    if (cf__cat_full_path(abs, sizeof abs, b->root, rel, NULL)) return -1;
    size_t me = add_dir(b, rel);
    if (me == (size_t)-1) return -1;
    b->chain[depth] = me;
    struct timespec before;
    clock_before(b, &before);
    stamp s1;
    if (cf__cat_take_stamp(abs, &s1) != 0 || !S_ISDIR((mode_t)s1.mode) || !trust(b, &s1, &before)) return -1;
    b->dirs[me].st = s1;
    /* its parent found no header here; one made before this stamp would
     * not change the stamp later: looked for again, after it */
    if (depth > 0 && has_header(abs)) return -1;
    DIR *d = opendir(abs);
    if (!d) return -1;
    int rc = 0;
    struct dirent *ent;
    while (rc == 0 && (ent = readdir(d)) != NULL) {
        if (ent->d_name[0] == '.') continue;
        char sub[PATH_MAX], subabs[PATH_MAX];
        if (cf__cat_full_path(sub, sizeof sub, rel, "", ent->d_name) || cf__cat_full_path(subabs, sizeof subabs, b->root, sub, NULL)) {
            rc = -1;
            break;
        }
        struct stat st;
        clock_before(b, &before);
        if (lstat(subabs, &st) != 0 || !S_ISDIR(st.st_mode)) continue;
        if (!has_header(subabs)) {
            rc = scan(b, sub, depth + 1);
            continue;
        }
        /* a column: its directory stamp serves the listing (has a header)
         * and its entry (the files recorded absent stay absent) */
        size_t ci = add_dir(b, sub);
        if (ci == (size_t)-1) {
            rc = -1;
            break;
        }
        b->chain[depth + 1] = ci;
        build_col *c = add_col(b, sub, depth + 1);
        if (!c) {
            rc = -1;
            break;
        }
        /* its stamp: the lstat above, taken after reading the clock */
        stamp c1;
        cf__cat_fill_stamp(&st, &c1);
        if (!trust(b, &c1, &before)) {
            rc = -1;
            break;
        }
        b->dirs[ci].st = c1;
        /* its files are read by read_columns, once the walk is done */
    }
    closedir(d);
    if (rc == 0 && !cf__cat_still(abs, &s1)) rc = -1;
    return rc;
}

/* The metadata files of every column the walk found: each column read
 * between its directory's stamp (taken by the walk) and a check that the
 * stamp still holds.  Columns are independent, so a File of many columns
 * reads them on a few threads: the work is system calls, and on uncached
 * inodes waits for the disk (on 10,000 small cached columns the update at
 * close went from 0.26 s to 0.17 s on two cores; two threads or four, the
 * same). */
#define BUILD_THREADS 4
#define BUILD_MIN 256      /* fewer columns: one thread */
#define BUILD_CHUNK 32

typedef struct build_par {
    build *b;
    atomic_size_t next;
    atomic_int bad;
} build_par;

static void *read_columns_worker(void *arg)
{
    build_par *p = arg;
    build *b = p->b;
    for (;;) {
        size_t i = atomic_fetch_add(&p->next, BUILD_CHUNK);
        if (i >= b->ncols || atomic_load(&p->bad)) break;
        size_t end = i + BUILD_CHUNK < b->ncols ? i + BUILD_CHUNK : b->ncols;
        for (; i < end; i++) {
            build_col *c = &b->cols[i];
            const stamp *c1 = &b->dirs[c->dirs[c->ndirs - 1]].st;
            char abs[PATH_MAX];
            if (cf__cat_full_path(abs, sizeof abs, b->root, c->name, NULL)) {
                atomic_store(&p->bad, 1);
                break;
            }
            if (reuse(b, c, c1)) c->complete = 1;
            else c->complete = read_column(b, c, abs, c->name);
            if (!cf__cat_still(abs, c1)) {
                atomic_store(&p->bad, 1);
                break;
            }
        }
    }
    return NULL;
}

/* 0, or -1 when a column changed while it was read (as scan). */
static int read_columns(build *b)
{
    build_par p;
    p.b = b;
    atomic_init(&p.next, 0);
    atomic_init(&p.bad, 0);
    int many = b->ncols >= BUILD_MIN && cf__can_run_parallel();
    cf__cat_run_threads(read_columns_worker, &p, many ? BUILD_THREADS : 1);
    return atomic_load(&p.bad) ? -1 : 0;
}

static void build_free(build *b)
{
    for (size_t i = 0; i < b->ndirs; i++) free(b->dirs[i].path);
    for (size_t i = 0; i < b->ncols; i++) {
        free(b->cols[i].name);
        free(b->cols[i].dirs);
        for (int s = 0; s < CF__CAT_NSLOTS; s++) free(b->cols[i].owned[s]);
    }
    free(b->dirs);
    free(b->cols);
}

static int compare_cols(const void *a, const void *b)
{
    return strcmp(((const build_col *)a)->name, ((const build_col *)b)->name);
}

/* Wait until the file clock shows a time later than the present instant
 * (read from the precise clock), so that everything changed before this
 * call carries a ctime strictly older than the clock readings of the scan.
 * The coarse clock lags: it moves once per tick, and its updates can come a
 * few ms late on a busy machine; bounded at about 100 ms. */
static void wait_for_clock(void)
{
    struct timespec now, t, pause = { 0, 500000 };
    if (clock_gettime(CLOCK_REALTIME, &now) != 0) return;
    for (int i = 0; i < 200; i++) {
        cf__cat_file_clock(&t);
        if (t.tv_sec > now.tv_sec || (t.tv_sec == now.tv_sec && t.tv_nsec > now.tv_nsec)) return;
        nanosleep(&pause, NULL);
    }
}

/* A reading of the file clock later than the timestamp of every change
 * made so far, without waiting for the coarse clock, where the file system
 * has multigrain timestamps (Linux 6.13 and later; ext4, XFS, btrfs and
 * tmpfs): there, a file whose ctime was queried gets a fine-grained ctime
 * when it next changes, later than every timestamp handed out before it,
 * and no later change gets an earlier one (the kernel keeps a floor:
 * Documentation/filesystems/multigrain-ts.rst).  So a scratch file is made
 * in the catalog directory, stat'ed (the query), written and stat'ed
 * again, then removed.  Its ctime is such a reading only if it is ahead of
 * the coarse clock: where timestamps come from the coarse clock it never
 * is, and the update then waits for the clock (wait_for_clock).  1 and the
 * reading in *t, or 0. */
static int probe_clock(const char *dir, struct timespec *t)
{
    char tmp[PATH_MAX];
    int fd = cf__open_temporary(dir, "colfile-clock", tmp, sizeof tmp, dir, NULL);
    if (fd < 0) return 0;
    struct stat st;
    struct timespec coarse;
    int ok = fstat(fd, &st) == 0 && pwrite(fd, "", 1, 0) == 1 && fstat(fd, &st) == 0;
    close(fd);
    unlink(tmp);
    cf__cat_file_clock(&coarse);
    if (!ok || st.st_ctim.tv_sec < coarse.tv_sec ||
        (st.st_ctim.tv_sec == coarse.tv_sec && st.st_ctim.tv_nsec <= coarse.tv_nsec))
        return 0;
    *t = st.st_ctim;
    return 1;
}

/* Walk the File and read its columns' files into b: 0, or -1 when no
 * listing can be recorded (scan, read_columns). */
static int build_all(build *b)
{
    int scanned = scan(b, "", 0);
    if (scanned == 0 && !b->failed) scanned = read_columns(b);
    return scanned;
}

/* build_all, after reading the File's generation (before the walk: a
 * writer that changes the listing during it bumps the generation after
 * the change, so this catalog is not used; writers inside their change
 * are waited for, cf__cat_generation_settle).  Nonzero: no catalog. */
static int build_with_generation(build *b, const char *dir, int durable)
{
    /* the marks counted on from what the catalog on disk recorded (else
     * the one the writer opened with): the bytes appended since, not the
     * File's whole history */
    const cf__catalog *rec = b->disk && b->disk->marks.known ? b->disk : b->old;
    cf__cat_marks now;
    if (cf__cat_generation_settle(dir, durable, rec ? &rec->marks : NULL, &now) != 0) return -1;
    b->generation = now.at;
    b->open_marks = now.open;
    return build_all(b);
}

/* One update of the catalog in dir from a fresh walk.  *again: the File's
 * generation moved during it (or the walk saw changes under way), so that
 * the catalog now on disk may not be current. */
static int update_once(const char *root, const char *dir, const cf__catalog *old, int durable, int *again,
                       cf_error *err)
{
    int rc = 0;
    /* The catalog on disk, even at another generation (a writer killed
     * before its update, a C writer that never updates it): its entries
     * are reused where their stamps hold, and its shards go once replaced. */
    cf__catalog *disk = cf__cat_load_any_generation(root);
    if (!old) old = disk;
    build b;
    memset(&b, 0, sizeof b);
    b.root = root;
    b.old = old;
    b.disk = disk;
    b.fine = cf__cat_fine_timestamps(root);
    atomic_init(&b.racy, 0);
    /* The writer's own last changes are trusted once the file clock is
     * past them: read through a probe where the file system allows, else
     * waited for (a few ms: one tick of the coarse clock and its lag). */
    b.probed = b.fine && probe_clock(dir, &b.probe);
    if (b.fine && !b.probed) wait_for_clock();
    int scanned = build_with_generation(&b, dir, durable);
    if (b.probed && atomic_load(&b.racy) && !b.failed) {
        /* stamps newer than the probe (changes during the update): again,
         * after the wait, as without a probe */
        build_free(&b);
        memset(&b, 0, sizeof b);
        b.root = root;
        b.old = old;
        b.disk = disk;
        b.fine = 1;
        atomic_init(&b.racy, 0);
        wait_for_clock();
        scanned = build_with_generation(&b, dir, durable);
    }
    if (b.failed) {
        rc = CF_FAIL(err, CF_ENOMEM, "%s: out of memory", root);
    } else if (scanned != 0) {
        /* changing under us, or not readable: leave no stale listing */
        rc = cf__remove_if_exists(dir, CF__CATALOG_INDEX_NAME, err);
        if (rc == 0) rc = cf__remove_if_exists(dir, CF__CATALOG_NAME, err);
    } else {
        if (b.ncols) qsort(b.cols, b.ncols, sizeof *b.cols, compare_cols);
        rc = cf__cat_write(&b, dir, durable, err);
    }
    /* another colfile writer changed the File since the generation was
     * read: what was written is stale (or there is none), and the other
     * writer's own update may have come first and been replaced */
    uint64_t now;
    char gen[PATH_MAX];
    *again = !b.failed && (rc == 0 || scanned != 0) &&
             (cf__cat_full_path(gen, sizeof gen, dir, CF__GENERATION_NAME, NULL) != 0 ||
              cf__cat_generation_at(AT_FDCWD, gen, &now) != 0 || now != b.generation);
    build_free(&b);
    cf__catalog_free(disk);
    return rc;
}

/* Rounds of update_once while other writers change the File under it: the
 * last writer to finish leaves a current catalog, not the one it built
 * before another's change (readers would scan every directory until the
 * next writable close). */
#define UPDATE_ROUNDS 3

int cf__catalog_update(const char *root, const cf__catalog *old, int durable, cf_error *err)
{
    char *dir = cf__cat_catalog_dir(root);
    if (!dir) return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", root);
    struct stat st;
    int rc = 0;
    if (lstat(dir, &st) == 0 && S_ISLNK(st.st_mode)) {
        /* A symbolic link where the catalog belongs (a reserved name) is
         * never followed: removed, and a directory made in its place. */
        if (unlink(dir) != 0 && errno != ENOENT) {
            int e = errno;
            rc = CF_FAIL(err, cf__errno_code(e), "%s: symbolic link where the catalog belongs, cannot remove it: %s",
                         dir, strerror(e));
            free(dir);
            return rc;
        }
    }
    if (lstat(dir, &st) != 0) {
        /* made before the scan, so that the root's stamp includes it */
        if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
            int e = errno;
            rc = CF_FAIL(err, cf__errno_code(e), "%s: cannot make the catalog directory: %s", dir, strerror(e));
            free(dir);
            return rc;
        }
        if (durable && (rc = cf__fsync_path(root, err))) {
            free(dir);
            return rc;
        }
    } else if (!S_ISDIR(st.st_mode)) {
        rc = CF_FAIL(err, CF_ENOTFILE, "%s: not a directory; no catalog is kept", dir);
        free(dir);
        return rc;
    }
    for (int round = 0; round < UPDATE_ROUNDS; round++) {
        int again = 0;
        /* a later round reuses what is on disk then, not the catalog opened with */
        rc = update_once(root, dir, round ? NULL : old, durable, &again, err);
        if (rc != 0 || !again) break;
    }
    free(dir);
    return rc;
}
