/* file.c - Files: open, list columns (removal: remove.c). */
#include "file.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"
#include "fsutil.h"
#include "mountinfo.h"
#include "writer_lock.h"
#include "header.h"
#include "names.h"
#include "platform.h"

const char *cf_version(void)
{
    return "0.1.0";
}

int cf_file_open(cf_file **out, const char *path, int flags, cf_error *err)
{
    if (!out || !path) return CF_FAIL(err, CF_EARG, "cf_file_open: NULL argument");
    if (path[0] == '\0') return CF_FAIL(err, CF_EARG, "cf_file_open: empty path");
    int writable = (flags & CF_OPEN_WRITE) != 0;
    if (!writable && (flags & (CF_OPEN_CREATE | CF_OPEN_EXCL | CF_OPEN_TRUNCATE)))
        return CF_FAIL(err, CF_EARG, "%s: CREATE, EXCL and TRUNCATE need CF_OPEN_WRITE", path);
    if ((flags & CF_OPEN_NOCHECK) && (flags & (CF_OPEN_CREATE | CF_OPEN_EXCL | CF_OPEN_TRUNCATE)))
        return CF_FAIL(err, CF_EARG, "%s: NOCHECK cannot be combined with CREATE, EXCL or TRUNCATE", path);
    if ((flags & CF_OPEN_DIGEST_INLINE) && (flags & CF_OPEN_DIGEST_HELPER))
        return CF_FAIL(err, CF_EARG, "%s: DIGEST_INLINE and DIGEST_HELPER exclude each other", path);
    int rc;
    if ((rc = cf__file_path_check(path, err))) return rc;
    /* The directory opened in the common case (it exists): the catalog is
     * read through it.  Else a stat (a directory we may not read), and
     * lstat tells a dangling link (there, but not a directory) from
     * nothing. */
    struct stat st;
    int dfd = (flags & CF_OPEN_NOCHECK) ? -1 : open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int is_dir = (flags & CF_OPEN_NOCHECK) || dfd >= 0 || (stat(path, &st) == 0 && S_ISDIR(st.st_mode));
    int exists = is_dir || cf__exists(path);
    /* made a directory by another process between the looks above (many
     * ranks or jobs creating one File at once): a directory after all */
    if (exists && !is_dir && stat(path, &st) == 0 && S_ISDIR(st.st_mode)) is_dir = 1;
    int durable = !(flags & CF_OPEN_NODURABLE);
    cf_file *f = NULL;
    if (exists && !is_dir) {
        rc = CF_FAIL(err, CF_ENOTFILE, "%s: exists and is not a directory", path);
    } else if (exists && (flags & CF_OPEN_EXCL)) {
        rc = CF_FAIL(err, CF_EEXIST, "%s: File already exists", path);
    } else if (!exists) {
        rc = !(flags & CF_OPEN_CREATE) ? CF_FAIL(err, CF_ENOENT, "%s: no such File", path)
                                       : cf__mkdirs_durable(path, durable, err);
    } else if (flags & CF_OPEN_TRUNCATE) {
        rc = cf__file_truncate(path, durable, (flags & CF_OPEN_NOLOCKING) != 0, err);
    }
    if (rc == 0 && (!(f = calloc(1, sizeof *f)) || !(f->path = strdup(path))))
        rc = CF_FAIL(err, CF_ENOMEM, "%s: out of memory", path);
    if (rc) {
        free(f);
        if (dfd >= 0) close(dfd);
        return rc;
    }
    f->writable = writable;
    f->flags = flags;
    /* only a writer digests: a read-only open (part of every small read)
     * makes no system call to place it */
    f->own_cpus = f->node_cpus = writable ? cf__cpus_allowed() : 1;
    f->ranks_per_node = 1;
    cf__file_place_digest(f);
    pthread_mutex_init(&f->lock_dirs_mu, NULL);
    /* the catalog of what is there (not where we just emptied or made the
     * directory, nor on the ranks that only vouch for rank 0's open) */
    if (exists && !(flags & (CF_OPEN_TRUNCATE | CF_OPEN_NOCHECK))) {
        f->catalog = cf__catalog_load(path, dfd);
        dfd = -1;
    }
    if (dfd >= 0) close(dfd);
    *out = f;
    return 0;
}

struct cf__lock_dir *cf__file_lock_dir(cf_file *f, const char *dir, size_t len)
{
    uint64_t h = cf__fnv1a(dir, len);
    cf__lock_dir *found = NULL;
    pthread_mutex_lock(&f->lock_dirs_mu);
    /* newest first: the columns of one directory usually come together */
    for (int64_t i = f->n_lock_dirs; i > 0 && !found; i--) {
        const char *d = cf__lock_dir_dir(f->lock_dirs[i - 1]);
        if (f->lock_dir_hashes[i - 1] == h && strlen(d) == len && memcmp(d, dir, len) == 0)
            found = f->lock_dirs[i - 1];
    }
    if (!found) {
        if (f->n_lock_dirs == f->cap_lock_dirs) {
            int64_t cap = f->cap_lock_dirs ? f->cap_lock_dirs * 2 : 8;
            cf__lock_dir **dirs = realloc(f->lock_dirs, (size_t)cap * sizeof *dirs);
            if (dirs) f->lock_dirs = dirs;
            uint64_t *hashes = dirs ? realloc(f->lock_dir_hashes, (size_t)cap * sizeof *hashes) : NULL;
            if (hashes) {
                f->lock_dir_hashes = hashes;
                f->cap_lock_dirs = cap;
            }
        }
        found = f->n_lock_dirs < f->cap_lock_dirs ? cf__lock_dir_new(dir, len) : NULL;
        if (found) {
            f->lock_dirs[f->n_lock_dirs] = found;
            f->lock_dir_hashes[f->n_lock_dirs++] = h;
        }
    }
    cf__lock_dir *ref = cf__lock_dir_ref(found);
    pthread_mutex_unlock(&f->lock_dirs_mu);
    return ref;
}

/* Remove the writer-lock files this handle's columns left in their
 * directories, where no one holds a lock any more (writer_lock.h). */
static void tidy_lock_dirs(cf_file *f)
{
    pthread_mutex_lock(&f->lock_dirs_mu);
    for (int64_t i = 0; i < f->n_lock_dirs; i++) {
        /* this handle's own descriptor first: it keeps the file (columns
         * still open and holding their locks keep theirs) */
        cf__lock_dir_idle(f->lock_dirs[i]);
        (void)cf__lock_tidy(cf__lock_dir_dir(f->lock_dirs[i]));
        cf__lock_dir_unref(f->lock_dirs[i]);
    }
    f->n_lock_dirs = 0;
    pthread_mutex_unlock(&f->lock_dirs_mu);
}

void cf_file_close(cf_file *f)
{
    if (!f) return;
    tidy_lock_dirs(f);
    free(f->lock_dirs);
    free(f->lock_dir_hashes);
    pthread_mutex_destroy(&f->lock_dirs_mu);
    cf__catalog_free(f->catalog);
    free(f->path);
    free(f);
}

void cf_file_forget_locks(cf_file *f)
{
    if (!f) return;
    /* The child runs one thread here, and the mutexes may be copies that
     * another thread of the parent held: made anew. */
    pthread_mutex_init(&f->lock_dirs_mu, NULL);
    for (int64_t i = 0; i < f->n_lock_dirs; i++) cf__lock_dir_forget(f->lock_dirs[i]);
}

const char *cf_file_path(const cf_file *f) { return f->path; }
int cf_file_writable(const cf_file *f) { return f->writable; }
int cf_file_flags(const cf_file *f) { return f->flags; }

const char *cf_file_fs_type(const cf_file *f) { return f ? cf__fs_type(f->path) : "unknown"; }

const char *cf_file_lock_scope(const cf_file *f) { return f ? cf__lock_scope(f->path) : "unknown"; }

/* A growable list of names. */
typedef struct {
    char **items;
    int64_t count, capacity;
} name_list;

static int name_list_add(name_list *l, const char *prefix, const char *name)
{
    if (l->count == l->capacity) {
        int64_t cap = l->capacity ? l->capacity * 2 : 64;
        char **items = realloc(l->items, (size_t)cap * sizeof *items);
        if (!items) return -1;
        l->items = items;
        l->capacity = cap;
    }
    char *s = prefix[0] ? cf__path_join(prefix, name) : strdup(name);
    if (!s) return -1;
    l->items[l->count++] = s;
    return 0;
}

static int has_header(const char *dir)
{
    char *p = cf__path_join(dir, "header");
    if (!p) return 0;
    int r = cf__exists(p);
    free(p);
    return r;
}

typedef struct {
    const char *prefix; /* the names of the groups walked into, or "" */
    name_list *out;
    int depth;
} list_walk;

static int list_dir(const char *dir, const char *prefix, name_list *out, int depth, cf_error *err);

static int list_entry(void *ctx, const char *dir, const char *p, const char *name, cf_error *err)
{
    const list_walk *w = ctx;
    struct stat st;
    int rc = 0;
    /* lstat: a symbolic link is neither listed nor entered (names.c) */
    if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode)) {
        if (has_header(p)) {
            if (name_list_add(w->out, w->prefix, name)) rc = CF_FAIL(err, CF_ENOMEM, "%s: out of memory", dir);
        } else {
            char *sub = w->prefix[0] ? cf__path_join(w->prefix, name) : strdup(name);
            if (!sub) rc = CF_FAIL(err, CF_ENOMEM, "%s: out of memory", dir);
            else rc = list_dir(p, sub, w->out, w->depth + 1, err);
            free(sub);
            /* only opendir fails with ENOENT here: a group removed while
             * the walk ran (rm -r by another process; it may even be made
             * again since) is gone, not an error: list what is still there */
            if (rc == CF_ENOENT) {
                if (err) err->code = 0;
                rc = 0;
            }
        }
    }
    return rc;
}

/* Depth-first walk with bigfile's rules (see cf_file_list). */
static int list_dir(const char *dir, const char *prefix, name_list *out, int depth, cf_error *err)
{
    if (depth > 256) return CF_FAIL(err, CF_EFORMAT, "%s: directories nested too deeply", dir);
    list_walk w = { prefix, out, depth };
    return cf__dir_each(dir, 1, list_entry, &w, err);
}

static int compare_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int cf_file_list(cf_file *f, char ***names, int64_t *count, cf_error *err)
{
    if (!f || !names || !count) return CF_FAIL(err, CF_EARG, "cf_file_list: NULL argument");
    int rc = cf__catalog_list(f->catalog, f->path, names, count);
    if (rc == 1) return 0;
    if (rc < 0) return CF_FAIL(err, rc, "%s: out of memory", f->path);
    name_list l = { NULL, 0, 0 };
    rc = list_dir(f->path, "", &l, 0, err);
    if (rc) {
        cf_names_free(l.items, l.count);
        return rc;
    }
    if (l.count) qsort(l.items, (size_t)l.count, sizeof *l.items, compare_names);
    if (cf__catalog_listing_stale(f->catalog, f->path, l.items, l.count)) atomic_store(&f->catalog_stale, 1);
    *names = l.items;
    *count = l.count;
    return 0;
}

int cf_file_catalog_stale(const cf_file *f)
{
    return f ? atomic_load(&((cf_file *)f)->catalog_stale) : 0;
}

int cf_file_catalog_update(cf_file *f, cf_error *err)
{
    if (!f) return CF_FAIL(err, CF_EARG, "cf_file_catalog_update: NULL argument");
    if (!f->writable)
        return CF_FAIL(err, CF_EREADONLY, "%s: File is open read-only; readers never write the catalog", f->path);
    /* first: removing a lock file changes its directory, which the
     * catalog stamps */
    tidy_lock_dirs(f);
    return cf__catalog_update(f->path, f->catalog, CF__DURABLE(f), err);
}

void cf_names_free(char **names, int64_t count)
{
    if (!names) return;
    for (int64_t i = 0; i < count; i++) free(names[i]);
    free(names);
}
