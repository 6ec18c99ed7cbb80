/* remove.c - removing columns and groups, and emptying a File (mode "w").
 *
 * Every removal takes the writer locks of what it removes first (a column
 * being written is refused with CF_EBUSY, and no writer can start on it
 * meanwhile), then makes it invisible in one step, a rename out of the
 * namespace to a hidden `.colfile-trash.*` name, and only then deletes it.
 * A crash leaves the column present and whole, or absent with a hidden
 * leftover that `colfile repair` removes; never a header whose blobs are
 * gone (docs/reliability.md, "Mutations"). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "catalog.h"
#include "column_dir.h"
#include "error.h"
#include "file.h"
#include "fsutil.h"
#include "names.h"
#include "writer_lock.h"

static char *parent_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash) return strdup(".");
    if (slash == path) return strdup("/");
    return strndup(path, (size_t)(slash - path));
}

static const char *leaf_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* A fresh name <parent>/.colfile-trash.<short leaf>.<pid>.<random> that
 * does not exist yet (made as a directory with make_dir). */
static int trash_name(const char *parent, const char *leaf, int make_dir, char **out, cf_error *err)
{
    char sl[224];
    cf__short_leaf(leaf, strlen(leaf), sl);
    uint64_t seed = cf__unique_seed();
    size_t n = strlen(parent) + strlen(CF__TRASH_PREFIX) + strlen(sl) + 48;
    for (int attempt = 0; attempt < 64; attempt++) {
        seed = cf__unique_next(seed);
        char *p = malloc(n);
        if (!p) return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", parent);
        snprintf(p, n, "%s/%s%s.%ld.%08" PRIx64, parent, CF__TRASH_PREFIX, sl, (long)getpid(), seed >> 32);
        if (make_dir ? mkdir(p, 0700) == 0 : !cf__exists(p)) {
            *out = p;
            return 0;
        }
        int e = errno;
        free(p);
        if (make_dir && e != EEXIST)
            return CF_FAIL(err, cf__errno_code(e), "%s: cannot make a directory to remove into: %s", parent,
                           strerror(e));
    }
    return CF_FAIL(err, CF_EIO, "%s: cannot find a free hidden name to remove into", parent);
}

typedef struct {
    const char *root, *what;
} content_check;

/* 1 if dir is a catalog directory: root's, or one that a concurrent
 * truncation or removal moved, with the rest of its File, into its hidden
 * trash below root (the walk meets it there). */
static int is_catalog_dir(const char *dir, const char *root)
{
    size_t rl = strlen(root), dl = strlen(dir), cl = strlen(CF__CATALOG_DIR);
    while (rl > 1 && root[rl - 1] == '/') rl--;
    return strncmp(dir, root, rl) == 0 && dir[rl] == '/' && dl > rl + cl && dir[dl - cl - 1] == '/' &&
           strcmp(dir + dl - cl, CF__CATALOG_DIR) == 0;
}

static int check_entry(void *ctx, const char *dir, const char *p, const char *name, cf_error *err)
{
    const content_check *c = ctx;
    struct stat st;
    int rc = 0;
    if (lstat(p, &st) != 0) {
        int e = errno;
        if (e != ENOENT) rc = CF_FAIL(err, CF_EIO, "%s: cannot stat: %s", p, strerror(e));
    } else if (S_ISDIR(st.st_mode)) {
        rc = cf__check_only_format_content(p, c->root, c->what, err);
    } else if (S_ISLNK(st.st_mode) && strcmp(name, CF__CATALOG_DIR) == 0 && strcmp(dir, c->root) == 0) {
        /* a link where the catalog belongs: moved away, never followed */
    } else if (S_ISREG(st.st_mode) && strcmp(name, CF__GENERATION_NAME) == 0 && is_catalog_dir(dir, c->root)) {
        /* the File's generation (docs/format.md 8.5) */
    } else if (!S_ISREG(st.st_mode) || !cf__is_format_file_name(name)) {
        rc = CF_FAIL(err, CF_ENOTFILE, "%s: refusing to %s: '%s' is not part of a colfile/bigfile File", c->root,
                     c->what, p);
    }
    return rc;
}

/* Check that everything under dir looks like File content, so that neither
 * truncation nor the removal of a group deletes a user's unrelated files.
 * Symbolic links are refused too. */
int cf__check_only_format_content(const char *dir, const char *root, const char *what, cf_error *err)
{
    content_check c = { root, what };
    return cf__dir_each(dir, 0, check_entry, &c, err);
}

/* ---- the locks of every directory of a tree ------------------------------ */

typedef struct {
    cf__dir_lock *locks;
    size_t n, cap;
    int off; /* CF_OPEN_NOLOCKING: lock nothing */
} dir_locks;

static void dir_locks_release(dir_locks *l)
{
    for (size_t i = l->n; i > 0; i--) cf__dir_lock_release(&l->locks[i - 1]);
    free(l->locks);
    l->locks = NULL;
    l->n = l->cap = 0;
}

/* Lock every writer lock in dir and in its directories below, hidden ones
 * (staging directories, leftovers) excepted: their columns lock in the
 * directory that holds them. */
static int lock_tree(dir_locks *l, const char *dir, const char *also_leaf, int depth, cf_error *err)
{
    if (depth > 256) return CF_FAIL(err, CF_EFORMAT, "%s: directories nested too deeply", dir);
    if (l->off) return 0;
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 8;
        cf__dir_lock *locks = realloc(l->locks, cap * sizeof *locks);
        if (!locks) return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", dir);
        l->locks = locks;
        l->cap = cap;
    }
    cf__dir_lock none = CF__DIR_LOCK_NONE;
    l->locks[l->n] = none;
    int rc = cf__lock_whole_dir(&l->locks[l->n], dir, also_leaf, err);
    if (rc) return rc;
    l->n++;
    DIR *d = opendir(dir);
    if (!d) {
        int e = errno;
        return CF_FAIL(err, cf__errno_code(e), "%s: cannot list: %s", dir, strerror(e));
    }
    char **subs = NULL;
    size_t ns = 0, cap = 0;
    struct dirent *ent;
    while (rc == 0 && (ent = readdir(d)) != NULL) {
        if (ent->d_name[0] == '.') continue;
        char *p = cf__path_join(dir, ent->d_name);
        struct stat st;
        if (!p) {
            rc = CF_FAIL(err, CF_ENOMEM, "%s: out of memory", dir);
        } else if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode)) {
            if (ns == cap) {
                cap = cap ? 2 * cap : 16;
                char **s = realloc(subs, cap * sizeof *s);
                if (!s) rc = CF_FAIL(err, CF_ENOMEM, "%s: out of memory", dir);
                else subs = s;
            }
            if (rc == 0) {
                subs[ns++] = p;
                p = NULL;
            }
        }
        free(p);
    }
    closedir(d);
    for (size_t i = 0; i < ns; i++) {
        if (rc == 0) rc = lock_tree(l, subs[i], NULL, depth + 1, err);
        free(subs[i]);
    }
    free(subs);
    return rc;
}

/* ---- columns -------------------------------------------------------------- */

/* 1 if `name`, a regular file of a column directory, is the column's own:
 * a format file, but not the hidden ones of the columns below it. */
static int column_owns(const char *name)
{
    return strncmp(name, ".colfile", 8) != 0 && cf__is_format_file_name(name);
}

/* Rename dir/name to trash/name (gone already: nothing to do). */
static int move_into_trash(const char *dir, const char *name, const char *trash, cf_error *err)
{
    char *from = cf__path_join(dir, name), *to = cf__path_join(trash, name);
    int rc = 0;
    if (!from || !to) {
        rc = CF_FAIL(err, CF_ENOMEM, "%s: out of memory", dir);
    } else if (rename(from, to) != 0 && errno != ENOENT) {
        int e = errno;
        rc = CF_FAIL(err, cf__errno_code(e), "%s: cannot move out of the way: %s", from, strerror(e));
    }
    free(from);
    free(to);
    return rc;
}

/* Move the column's files out of dir, which stays (it holds columns below
 * it, or foreign files): first into a hidden trash directory beside it,
 * `header` before anything else (that one rename makes the column
 * invisible), then delete them there. */
static int discard_files_keep_dir(const char *dir, const char *parent, const char *leaf, int durable, cf_error *err)
{
    char *trash = NULL;
    int rc = trash_name(parent, leaf, 1, &trash, err);
    if (rc) return rc;
    rc = move_into_trash(dir, "header", trash, err);
    /* a rename between two directories is durable once both are */
    if (rc == 0 && durable) rc = cf__fsync_path(trash, err);
    if (rc == 0 && durable) rc = cf__fsync_path(dir, err);
    DIR *d = rc == 0 ? opendir(dir) : NULL;
    if (rc == 0 && !d) {
        int e = errno;
        rc = CF_FAIL(err, cf__errno_code(e), "%s: cannot list: %s", dir, strerror(e));
    }
    struct dirent *ent;
    while (rc == 0 && (ent = readdir(d)) != NULL) {
        struct stat st;
        if (!column_owns(ent->d_name) || fstatat(dirfd(d), ent->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
            !S_ISREG(st.st_mode))
            continue;
        rc = move_into_trash(dir, ent->d_name, trash, err);
    }
    if (d) closedir(d);
    if (rc == 0 && durable) rc = cf__fsync_path(trash, err);
    if (rc == 0 && durable) rc = cf__fsync_path(dir, err);
    /* Invisible now; a failure to delete leaves a hidden leftover that
     * repair removes. */
    (void)cf__remove_tree(trash, NULL);
    free(trash);
    return rc;
}

/* Remove the column at dir of the File at root (its lock held): one
 * rename of the whole directory when it holds nothing else, else
 * discard_files_keep_dir; the File's generation marks the change before
 * and once it is made (format.md 8.5). */
static int discard_column(const char *root, const char *dir, int durable, int nolocking, cf_error *err)
{
    char *parent = parent_of(dir);
    if (!parent) return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", dir);
    const char *leaf = leaf_of(dir);
    int rc = 0;
    if (cf__column_dir_only_own(dir)) {
        char *trash = NULL;
        rc = trash_name(parent, leaf, 0, &trash, err);
        if (rc == 0) {
            int gen_fd = cf__catalog_begin(root, durable);
            if (rename(dir, trash) != 0) {
                int e = errno;
                rc = CF_FAIL(err, cf__errno_code(e), "%s: cannot move the column out of the way: %s", dir, strerror(e));
            }
            cf__catalog_done(root, gen_fd);
        }
        if (rc == 0 && durable) rc = cf__fsync_path(parent, err);
        if (rc == 0) (void)cf__remove_tree(trash, NULL);
        free(trash);
    } else {
        int gen_fd = cf__catalog_begin(root, durable);
        rc = discard_files_keep_dir(dir, parent, leaf, durable, err);
        cf__catalog_done(root, gen_fd);
        /* an idle lock file of columns once below it, and then the
         * directory, go if nothing else is left */
        if (rc == 0) {
            if (!nolocking) (void)cf__lock_tidy(dir);
            (void)rmdir(dir);
        }
    }
    free(parent);
    return rc;
}

/* The checks every removal of `name` makes first. */
static int check_removable(cf_file *f, const char *name, char **dir, cf_error *err)
{
    int rc;
    if (!f || !name) return CF_FAIL(err, CF_EARG, "cf_file_remove: NULL argument");
    if ((rc = cf__name_check_in(f->path, name, err))) return rc;
    if (!f->writable) return CF_FAIL(err, CF_EREADONLY, "%s: File is open read-only; cannot remove '%s'", f->path, name);
    size_t nl = strlen(name);
    if (strcmp(name, ".") == 0 || (nl >= 2 && strcmp(name + nl - 2, "/.") == 0))
        return CF_FAIL(err, CF_EKIND, "%s: '%s' names attributes, not a column", f->path, name);
    if ((rc = cf__name_confine(f->path, name, err))) return rc;
    if (!(*dir = cf__path_join(f->path, name))) return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", f->path);
    return 0;
}

int cf_file_remove(cf_file *f, const char *name, cf_error *err)
{
    char *dir = NULL;
    int rc = check_removable(f, name, &dir, err);
    if (rc) return rc;
    cf__lock lk = CF__LOCK_NONE;
    if (!cf__is_dir(dir) || !cf__column_dir_has_header(dir)) {
        rc = cf__is_dir(dir) ? CF_FAIL(err, CF_ENOENT, "%s: no column '%s' ('%s' is a group: remove it with everything "
                                       "below it with cf_file_remove_group, del f['%s/'] in Python, "
                                       "colfile rm -r)", f->path, name, name, name)
                             : CF_FAIL(err, CF_ENOENT, "%s: no column '%s'", f->path, name);
    } else if ((rc = cf__column_dir_lock(f, dir, &lk, err)) == 0) {
        /* with the lock held no writer can publish a new version here */
        if (!cf__column_dir_has_header(dir)) {
            rc = CF_FAIL(err, CF_ENOENT, "%s: no column '%s'", f->path, name);
        } else {
            rc = discard_column(f->path, dir, CF__DURABLE(f), (f->flags & CF_OPEN_NOLOCKING) != 0, err);
        }
    }
    cf__lock_release(&lk);
    free(dir);
    return rc;
}

int cf_file_remove_group(cf_file *f, const char *name, cf_error *err)
{
    char *dir = NULL;
    int rc = check_removable(f, name, &dir, err);
    if (rc) return rc;
    cf__lock lk = CF__LOCK_NONE;
    dir_locks locks = { NULL, 0, 0, (f->flags & CF_OPEN_NOLOCKING) != 0 };
    char *parent = parent_of(dir), *trash = NULL;
    if (!parent) {
        rc = CF_FAIL(err, CF_ENOMEM, "%s: out of memory", dir);
    } else if (!cf__is_dir(dir)) {
        rc = CF_FAIL(err, CF_ENOENT, "%s: no group or column '%s'", f->path, name);
    } else if ((rc = cf__check_only_format_content(dir, dir, "remove it", err)) == 0 &&
               (rc = cf__column_dir_lock(f, dir, &lk, err)) == 0 && (rc = lock_tree(&locks, dir, NULL, 0, err)) == 0 &&
               (rc = trash_name(parent, leaf_of(dir), 0, &trash, err)) == 0) {
        /* every writer below is excluded: one rename takes it all away
         * (the File's generation marks the change, format.md 8.5) */
        int gen_fd = cf__catalog_begin(f->path, CF__DURABLE(f));
        if (rename(dir, trash) != 0) {
            int e = errno;
            rc = CF_FAIL(err, cf__errno_code(e), "%s: cannot move the group out of the way: %s", dir, strerror(e));
        }
        cf__catalog_done(f->path, gen_fd);
        if (rc == 0 && CF__DURABLE(f)) rc = cf__fsync_path(parent, err);
        /* the lock files below went with it: let go before deleting them
         * (the leaf's lock in the parent marks the leftover as live) */
        dir_locks_release(&locks);
        if (rc == 0) (void)cf__remove_tree(trash, NULL);
    }
    dir_locks_release(&locks);
    cf__lock_release(&lk);
    free(trash);
    free(parent);
    free(dir);
    return rc;
}

/* ---- truncation ------------------------------------------------------------ */

int cf__file_truncate(const char *path, int durable, int nolocking, cf_error *err)
{
    int rc = cf__check_only_format_content(path, path, "truncate", err);
    if (rc) return rc;
    dir_locks locks = { NULL, 0, 0, nolocking };
    char *trash = NULL;
    if ((rc = lock_tree(&locks, path, CF__TRUNCATE_LEAF, 0, err)) == 0 &&
        (rc = trash_name(path, CF__TRUNCATE_LEAF, 1, &trash, err)) == 0) {
        const char *trash_leaf = leaf_of(trash);
        DIR *d = opendir(path);
        if (!d) {
            int e = errno;
            rc = CF_FAIL(err, cf__errno_code(e), "%s: cannot list: %s", path, strerror(e));
        }
        struct dirent *ent;
        /* Each entry leaves in one rename; the lock files of the root stay
         * (they are held, and keep writers out until the end). */
        while (rc == 0 && (ent = readdir(d)) != NULL) {
            const char *nm = ent->d_name;
            if (strcmp(nm, ".") == 0 || strcmp(nm, "..") == 0 || strcmp(nm, trash_leaf) == 0 ||
                strcmp(nm, CF__LOCK_NAME) == 0 || strncmp(nm, CF__LOCK_PREFIX, strlen(CF__LOCK_PREFIX)) == 0)
                continue;
            rc = move_into_trash(path, nm, trash, err);
        }
        if (d) closedir(d);
        /* a rename between two directories is durable once both are */
        if (rc == 0 && durable) rc = cf__fsync_path(trash, err);
        if (rc == 0 && durable) rc = cf__fsync_path(path, err);
        /* the root's locks, held until the trash is gone (its name marks
         * it live); the others went with it */
        while (locks.n > 1) cf__dir_lock_release(&locks.locks[--locks.n]);
        (void)cf__remove_tree(trash, NULL);
    }
    dir_locks_release(&locks);
    free(trash);
    return rc;
}

/* ---- blobs left without a header ------------------------------------------ */

static int is_blob_name(const char *name)
{
    size_t n = strlen(name);
    if (n < 6) return 0;
    for (size_t i = 0; i < n; i++)
        if (!((name[i] >= '0' && name[i] <= '9') || (name[i] >= 'A' && name[i] <= 'F'))) return 0;
    return 1;
}

int cf__has_stray_blobs(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return 0;
    int found = 0;
    struct dirent *ent;
    while (!found && (ent = readdir(d)) != NULL) {
        struct stat st;
        found = is_blob_name(ent->d_name) && fstatat(dirfd(d), ent->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                S_ISREG(st.st_mode);
    }
    closedir(d);
    return found;
}

int cf__discard_stray_blobs(cf_file *f, const char *dir, cf_error *err)
{
    cf__lock lk = CF__LOCK_NONE;
    int rc = cf__column_dir_lock(f, dir, &lk, err);
    /* under the lock: a writer may have published a column here since */
    if (rc == 0 && !cf__column_dir_has_header(dir)) {
        char *parent = parent_of(dir);
        if (!parent) rc = CF_FAIL(err, CF_ENOMEM, "%s: out of memory", dir);
        else rc = discard_files_keep_dir(dir, parent, leaf_of(dir), CF__DURABLE(f), err);
        free(parent);
        if (rc == 0) (void)rmdir(dir); /* only if nothing else is left */
    }
    cf__lock_release(&lk);
    return rc;
}
