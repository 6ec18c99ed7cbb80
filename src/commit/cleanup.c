/* cleanup.c - finding and removing what interrupted writers left behind:
 * staging directories of creates that never committed, old versions a
 * commit moved aside, what removals took out of the namespace, temporary
 * metadata files and lock files, and the blobs of a column whose header
 * is gone.  Anything whose writer still holds its lock is left alone. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "catalog.h"
#include "column.h"
#include "error.h"
#include "file.h"
#include "fsutil.h"
#include "owner.h"
#include "platform.h"

typedef struct {
    char **items;
    int64_t count, capacity;
    int dry_run;
    int force;     /* CF_CLEANUP_FORCE */
    int nolocking; /* CF_OPEN_NOLOCKING: locks are not looked at */
    int noproof;   /* a free lock proves nothing: locks off, or node-local */
    int failed;
    cf_file *f;
} report;

static void note(report *r, const char *fmt, const char *a, const char *b)
{
    if (r->count == r->capacity) {
        int64_t cap = r->capacity ? r->capacity * 2 : 16;
        char **items = realloc(r->items, (size_t)cap * sizeof *items);
        if (!items) {
            r->failed = 1;
            return;
        }
        r->items = items;
        r->capacity = cap;
    }
    size_t n = strlen(fmt) + strlen(a) + (b ? strlen(b) : 0) + 32;
    char *s = malloc(n);
    if (!s) {
        r->failed = 1;
        return;
    }
    snprintf(s, n, fmt, a, b ? b : "");
    r->items[r->count++] = s;
}

/* The leaf inside ".colfile-stage.<leaf>.<pid>.<hex>": strip the prefix and
 * the last two dot-separated fields. */
static int sibling_leaf(const char *name, const char *prefix, const char **leaf, size_t *len)
{
    size_t pl = strlen(prefix);
    if (strncmp(name, prefix, pl) != 0) return 0;
    const char *s = name + pl;
    const char *last = strrchr(s, '.');
    if (!last || last == s) return 0;
    const char *second = last - 1;
    while (second > s && *second != '.') second--;
    if (second == s) return 0;
    *leaf = s;
    *len = (size_t)(second - s);
    return 1;
}

static int has_file(const char *dir, const char *name)
{
    char *p = cf__path_join(dir, name);
    int r = p && cf__exists(p);
    free(p);
    return r;
}

static int has_header(const char *dir)
{
    return has_file(dir, "header");
}

static void visit(const char *dir, report *r, int depth);

/* 1 if no writer holds the lock of leaf in dir.  With locking off nothing
 * can tell, and where locks are node-local (the mount table says so) a
 * free lock does not show a writer on another node: only a forced repair
 * goes on.  A lock held here always means a live writer. */
static int lock_free(report *r, const char *dir, const char *leaf, size_t len)
{
    if (!r->nolocking && cf__lock_held(dir, leaf, len)) return 0;
    return r->noproof ? r->force : 1;
}

/* 1 if the staging directory p (of leaf in dir) belongs to no live
 * writer.  A free lock proves little where locks are node-local (Lustre
 * localflock, BeeGFS, NFS nolock): the owner record must also show a
 * process of this host that is gone.  A writer on another host, or
 * unknown while locks are off, is reported and left unless forced. */
static int stage_abandoned(report *r, const char *dir, const char *leaf, size_t len, const char *p)
{
    if (!r->nolocking && cf__lock_held(dir, leaf, len)) return 0;
    char who[320];
    int owner = cf__owner_check(p, who, sizeof who);
    if (owner == 1) return 0;
    if (owner == 0 || r->force || (owner < 0 && !r->noproof)) return 1;
    if (owner == 2)
        note(r, "%s: staging directory of a writer on another node (%s) that this host cannot prove gone: "
             "left (repair --force removes it once that writer is known to be gone)", p, who);
    else
        note(r, "%s: staging directory whose writer cannot be checked without locks: left (repair --force "
             "removes it once no writer is running)%s", p, "");
    return 0;
}

static void handle_entry(const char *dir, const char *name, const struct stat *st, report *r, int depth)
{
    char *p = cf__path_join(dir, name);
    if (!p) {
        r->failed = 1;
        return;
    }
    const char *leaf;
    size_t len;
    const char *verb = r->dry_run ? "would remove" : "removed";
    if (S_ISDIR(st->st_mode) && sibling_leaf(name, CF__STAGE_PREFIX, &leaf, &len)) {
        if (stage_abandoned(r, dir, leaf, len, p)) {
            note(r, "%s: staging directory of a create that never committed: %s", p, verb);
            if (!r->dry_run) (void)cf__remove_tree(p, NULL);
        }
    } else if (S_ISDIR(st->st_mode) && sibling_leaf(name, CF__OLD_PREFIX, &leaf, &len)) {
        if (lock_free(r, dir, leaf, len)) {
            /* Moved aside by a commit that could not swap atomically: if the
             * new version never arrived, the old one is the column. */
            char *final = malloc(strlen(dir) + len + 2);
            if (final) snprintf(final, strlen(dir) + len + 2, "%s/%.*s", dir, (int)len, leaf);
            if (final && !cf__exists(final) && memchr(leaf, '~', len) == NULL) {
                note(r, "%s: previous version of a column whose replacement never arrived: %s", p,
                     r->dry_run ? "would restore it" : "restored it");
                if (!r->dry_run) {
                    /* the File's generation marks the change (format.md 8.5) */
                    int gen_fd = cf__catalog_begin(r->f->path, CF__DURABLE(r->f));
                    (void)rename(p, final);
                    cf__catalog_done(r->f->path, gen_fd);
                }
            } else {
                note(r, "%s: previous version of a replaced column: %s", p, verb);
                if (!r->dry_run) (void)cf__remove_tree(p, NULL);
            }
            free(final);
        }
    } else if (S_ISDIR(st->st_mode) && sibling_leaf(name, CF__TRASH_PREFIX, &leaf, &len)) {
        if (lock_free(r, dir, leaf, len)) {
            note(r, "%s: what an interrupted removal took out of the File: %s", p, verb);
            if (!r->dry_run) (void)cf__remove_tree(p, NULL);
        }
    } else if (S_ISREG(st->st_mode) && strcmp(name, CF__OWNER_NAME) == 0) {
        /* An owner record outside staging (the walk does not enter staging
         * directories): its removal before the publishing rename was lost
         * to a power loss.  It tells of no interrupted work. */
        if (!r->dry_run) (void)unlink(p);
    } else if (S_ISREG(st->st_mode) && strcmp(name, CF__LOCK_NAME) == 0) {
        /* The writers' shared lock file, left where no writer holds a lock
         * in it by one that did not close its File (or died).  It tells of
         * no interrupted work, so it is not reported, only removed. */
        if (!r->dry_run && !r->nolocking) (void)cf__lock_tidy(dir);
    } else if (S_ISREG(st->st_mode) && strncmp(name, CF__LOCK_PREFIX, strlen(CF__LOCK_PREFIX)) == 0) {
        const char *l = name + strlen(CF__LOCK_PREFIX);
        if (lock_free(r, dir, l, strlen(l))) {
            note(r, "%s: lock file of a writer that is gone: %s", p, verb);
            if (!r->dry_run) (void)unlink(p);
        }
    } else if (S_ISREG(st->st_mode) && name[0] == '.' && strstr(name, ".tmp.")) {
        /* .<metadata name>.tmp.<pid>.<hex> inside a column, stream or
         * group; a column's or stream's writer holds the lock of its name */
        int live;
        if (has_header(dir) || has_file(dir, "colfile-stream-v1")) {
            const char *slash = strrchr(dir, '/');
            char *parent = slash ? strndup(dir, (size_t)(slash - dir)) : strdup(".");
            const char *col = slash ? slash + 1 : dir;
            live = !parent || !lock_free(r, parent, col, strlen(col));
            free(parent);
        } else {
            /* an attribute block's: its writer holds the block's lock */
            live = !lock_free(r, dir, ".", 1);
        }
        if (!live) {
            note(r, "%s: temporary file of an interrupted metadata update: %s", p, verb);
            if (!r->dry_run) (void)unlink(p);
        }
    } else if (S_ISDIR(st->st_mode) && name[0] != '.') {
        if (!has_header(p) && cf__has_stray_blobs(p) && lock_free(r, dir, name, strlen(name))) {
            note(r, "%s: blobs of a column whose header is gone (an interrupted removal): %s", p, verb);
            if (!r->dry_run) (void)cf__discard_stray_blobs(r->f, p, NULL);
        }
        visit(p, r, depth + 1);
    }
    free(p);
}

static void visit(const char *dir, report *r, int depth)
{
    if (depth > 256) return;
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *ent;
    /* Collect first: the walk removes and renames entries. */
    char **names = NULL;
    size_t count = 0, cap = 0;
    while ((ent = readdir(d)) != NULL) {
        if (strcmp(ent->d_name, ".") == 0 || strcmp(ent->d_name, "..") == 0) continue;
        if (count == cap) {
            cap = cap ? cap * 2 : 32;
            char **nn = realloc(names, cap * sizeof *nn);
            if (!nn) {
                r->failed = 1;
                break;
            }
            names = nn;
        }
        if (!(names[count] = strdup(ent->d_name))) {
            r->failed = 1;
            break;
        }
        count++;
    }
    closedir(d);
    for (size_t i = 0; i < count; i++) {
        char *p = cf__path_join(dir, names[i]);
        struct stat st;
        if (p && lstat(p, &st) == 0) handle_entry(dir, names[i], &st, r, depth);
        free(p);
        free(names[i]);
    }
    free(names);
}

int cf_file_cleanup(cf_file *f, int flags, char ***lines, int64_t *count, cf_error *err)
{
    if (!f || !lines || !count) return CF_FAIL(err, CF_EARG, "cf_file_cleanup: NULL argument");
    int dry_run = (flags & CF_CLEANUP_DRY_RUN) != 0;
    if (!dry_run && !f->writable)
        return CF_FAIL(err, CF_EREADONLY, "%s: File is open read-only; cleanup needs write access", f->path);
    int nolocking = (f->flags & CF_OPEN_NOLOCKING) != 0;
    int noproof = nolocking || strcmp(cf_file_lock_scope(f), "node") == 0;
    report r = { NULL, 0, 0, dry_run, (flags & CF_CLEANUP_FORCE) != 0, nolocking, noproof, 0, f };
    visit(f->path, &r, 0);
    if (r.failed) {
        cf_names_free(r.items, r.count);
        return CF_FAIL(err, CF_ENOMEM, "%s: out of memory while cleaning up", f->path);
    }
    *lines = r.items;
    *count = r.count;
    return 0;
}
