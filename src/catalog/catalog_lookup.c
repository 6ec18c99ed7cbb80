/* catalog_lookup.c - using the catalog: listing a File, its columns'
 * attributes in bulk, and one column's metadata files, each only where
 * fresh stamps prove the entries current (docs/format.md 8.5). */
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

/* Checking the stamps of a large File whose inodes are not cached is one
 * random read each: a few threads keep several in flight.  When that first
 * pass shows the inodes were not cached, the same threads also lstat the
 * files of every column, so that the opens that usually follow a listing
 * find them cached (a warm-up only: each open still checks its stamps).
 * cf__catalog_attrs puts the directories and the attribute files of every
 * column in one such queue: on 10,000 columns with dropped caches, 8
 * threads took the bulk attribute read from about 1.0 s to 0.35 s. */
#define PAR_MIN 2048       /* fewer directories: one thread */
#define PAR_CHUNK 64
#define COLD_NS_PER_STAT 20000

typedef struct par {
    const cf__catalog *cat;
    atomic_size_t next;
    atomic_int bad;
    int warm_files; /* second pass: lstat the columns' files */
    cf__catalog_col_attrs *attrs; /* cf__catalog_attrs: items are the
                                 directories, then the columns */
} par;

static int check_attrs(const cf__catalog *cat, size_t i, cf__catalog_col_attrs *e);

/* 1 if column c's own directory still has its stamp. */
static int own_still(const cf__catalog *cat, const cat_col *c)
{
    return cf__cat_still_at(cat->root_fd, c->name, &c->own);
}

static void *par_worker(void *arg)
{
    par *p = arg;
    const cf__catalog *cat = p->cat;
    size_t n = p->warm_files ? cat->ncols : cat->ndirs + cat->ncols;
    for (;;) {
        size_t i = atomic_fetch_add(&p->next, PAR_CHUNK);
        if (i >= n || atomic_load(&p->bad)) break;
        size_t end = i + PAR_CHUNK < n ? i + PAR_CHUNK : n;
        for (; i < end; i++) {
            if (!p->warm_files) {
                /* the groups, then each column's own directory */
                int still = i < cat->ndirs ? cf__cat_still_at(cat->root_fd, cat->dirs[i].path, &cat->dirs[i].st)
                                           : own_still(cat, &cat->cols[i - cat->ndirs]);
                if (!still) {
                    atomic_store(&p->bad, 1);
                    break;
                }
                if (p->attrs && i >= cat->ndirs)
                    (void)check_attrs(cat, i - cat->ndirs, &p->attrs[i - cat->ndirs]);
                continue;
            }
            const cat_col *c = &cat->cols[i];
            char buf[PATH_MAX];
            struct stat st;
            for (int s = 0; c->complete && s < CF__CAT_NSLOTS; s++)
                if (c->slot[s].state && cf__cat_full_path(buf, sizeof buf, "", c->name, cf__cat_slot_names[s]) == 0)
                    (void)fstatat(cat->root_fd, buf, &st, AT_SYMLINK_NOFOLLOW);
        }
    }
    return NULL;
}
/* Run par_worker on PAR_THREADS threads (fewer if they cannot start). */
static void par_run(par *p) { cf__cat_run_threads(par_worker, p, PAR_THREADS); }

/* A pass over the directories (and, with attrs, the columns' attribute
 * files), not yet run. */
static void par_init(par *p, const cf__catalog *cat, cf__catalog_col_attrs *attrs)
{
    p->cat = cat;
    atomic_init(&p->next, 0);
    atomic_init(&p->bad, 0);
    p->warm_files = 0;
    p->attrs = attrs;
}

/* Are all the catalog's directories still where it saw them?  One thread. */
static int dirs_still_at(const cf__catalog *cat)
{
    for (size_t i = 0; i < cat->ndirs; i++)
        if (!cf__cat_still_at(cat->root_fd, cat->dirs[i].path, &cat->dirs[i].st)) return 0;
    for (size_t i = 0; i < cat->ncols; i++)
        if (!own_still(cat, &cat->cols[i])) return 0;
    return 1;
}

static int64_t elapsed_ns(const struct timespec *a)
{
    struct timespec b;
    clock_gettime(CLOCK_MONOTONIC, &b);
    return (int64_t)(b.tv_sec - a->tv_sec) * 1000000000 + (b.tv_nsec - a->tv_nsec);
}

/* One directory the catalog records below its parent: a group or a
 * column, by its parent's path and its own last component. */
typedef struct child {
    const char *parent;
    size_t plen;
    const char *name;
} child;

static int compare_children(const void *a, const void *b)
{
    const child *x = a, *y = b;
    size_t n = x->plen < y->plen ? x->plen : y->plen;
    int c = memcmp(x->parent, y->parent, n);
    if (c) return c;
    if (x->plen != y->plen) return x->plen < y->plen ? -1 : 1;
    return strcmp(x->name, y->name);
}

static void split_path(const char *path, child *c)
{
    const char *slash = strrchr(path, '/');
    c->parent = path;
    c->plen = slash ? (size_t)(slash - path) : 0;
    c->name = slash ? slash + 1 : path;
}

/* 1 if the subdirectories (not hidden, links not followed) of group g are
 * exactly kids[0..n), sorted by name. */
static int group_entries_match(const cf__catalog *cat, const char *g, const child *kids, size_t n)
{
    int fd = openat(cat->root_fd, g[0] ? g : ".", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0) close(fd);
        return 0;
    }
    int ok = 1;
    size_t seen = 0;
    struct dirent *ent;
    while (ok && (ent = readdir(d)) != NULL) {
        if (ent->d_name[0] == '.') continue;
        int is_dir;
#if defined(DT_DIR) && defined(DT_UNKNOWN)
        if (ent->d_type != DT_UNKNOWN) is_dir = ent->d_type == DT_DIR;
        else
#endif
        {
            struct stat st;
            is_dir = fstatat(dirfd(d), ent->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
        }
        if (!is_dir) continue;
        size_t lo = 0, hi = n;
        ok = 0;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            int c = strcmp(kids[mid].name, ent->d_name);
            if (c == 0) {
                ok = 1;
                break;
            }
            if (c < 0) lo = mid + 1;
            else hi = mid;
        }
        seen++;
    }
    closedir(d);
    return ok && seen == n;
}

/* 1 if every recorded group's subdirectories are exactly the recorded
 * groups and columns in it.  Where timestamps cannot prove freshness (a
 * group's stamp may lag behind another client's change), this shows a
 * column or group that a writer not bumping the generation (bigfile, a
 * copy by hand) added or removed anywhere: one directory read per group,
 * no stamp trusted. */
static int entries_match(const cf__catalog *cat)
{
    size_t n = cat->ndirs - 1 + cat->ncols; /* every directory but the root */
    child *kids = malloc((n ? n : 1) * sizeof *kids);
    if (!kids) return 0;
    size_t k = 0;
    for (size_t i = 0; i < cat->ndirs; i++)
        if (cat->dirs[i].path[0]) split_path(cat->dirs[i].path, &kids[k++]);
    for (size_t i = 0; i < cat->ncols; i++) split_path(cat->cols[i].name, &kids[k++]);
    qsort(kids, k, sizeof *kids, compare_children);
    int ok = 1;
    size_t at = 0;
    for (size_t i = 0; ok && i < cat->ndirs; i++) {
        /* the children of dirs[i] are the run of kids with that parent */
        const char *g = cat->dirs[i].path;
        size_t gl = strlen(g), lo = 0, hi = k;
        child key = { g, gl, "" };
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (compare_children(&kids[mid], &key) < 0) lo = mid + 1;
            else hi = mid;
        }
        at = lo;
        size_t end = at;
        while (end < k && kids[end].plen == gl && memcmp(kids[end].parent, g, gl) == 0) end++;
        ok = group_entries_match(cat, g, kids + at, end - at);
    }
    free(kids);
    return ok;
}

/* Where the File's timestamps are coarse or per client (docs/format.md
 * 8.5), every group's entries too must be the recorded ones. */
static int coarse_evidence_holds(const cf__catalog *cat, const char *root)
{
    cf__catalog *mut = (cf__catalog *)cat; /* a cached answer only */
    int fine = atomic_load(&mut->fine);
    if (fine < 0) {
        fine = cf__cat_fine_timestamps(root);
        atomic_store(&mut->fine, fine);
    }
    return fine || entries_match(cat);
}

int cf__catalog_list(const cf__catalog *cat, const char *root, char ***names, int64_t *count)
{
    /* the generation first: a change it shows is one the stamps may not */
    if (!cat || !cf__cat_same_root(cat, root) || !cf__cat_generation_still(cat)) return 0;
    if (!cf__cat_load_all(cat) || !coarse_evidence_holds(cat, root)) return 0;
    if (cat->ndirs + cat->ncols < PAR_MIN) {
        if (!dirs_still_at(cat)) return 0;
    } else {
        par p;
        par_init(&p, cat, NULL);
        struct timespec t0;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        par_run(&p);
        if (atomic_load(&p.bad)) return 0;
        if (elapsed_ns(&t0) / (int64_t)(cat->ndirs + cat->ncols) * PAR_THREADS > COLD_NS_PER_STAT) {
            atomic_init(&p.next, 0);
            p.warm_files = 1;
            par_run(&p);
        }
    }
    char **out = malloc((cat->ncols ? cat->ncols : 1) * sizeof *out);
    if (!out) return CF_ENOMEM;
    for (size_t i = 0; i < cat->ncols; i++) {
        out[i] = strdup(cat->cols[i].name);
        if (!out[i]) {
            cf_names_free(out, (int64_t)i);
            return CF_ENOMEM;
        }
    }
    *names = out;
    *count = (int64_t)cat->ncols;
    return 1;
}

int cf__catalog_listing_stale(const cf__catalog *cat, const char *root, char *const *names, int64_t count)
{
    /* a changed generation is a colfile writer's change: the next one's
     * close rebuilds the catalog, nothing to say */
    if (!cat || count < 0 || !cf__cat_same_root(cat, root) || !cf__cat_generation_still(cat) ||
        !cf__cat_load_all(cat))
        return 0;
    int differs = (uint64_t)count != cat->ncols;
    for (size_t i = 0; !differs && i < cat->ncols; i++) differs = strcmp(names[i], cat->cols[i].name) != 0;
    /* a colfile writer inside its change, or killed there before its
     * '-': the change is its own (the next update matches its '+') */
    return differs && !cf__cat_generation_pending(cat);
}

/* The catalog slots of the attribute files, in cf__catalog_attrs order. */
static const int attr_slots[3] = { CF__CAT_ATTR_V1, CF__CAT_ATTR_V2, CF__CAT_ATTRS_EXT };

/* Fill e for column i: valid when its entry is complete and each attribute
 * file recorded present still has its stamp.  Its directories are checked
 * by the caller (all of them, for the listing): the column directory's
 * stamp keeps the files recorded absent absent. */
static int check_attrs(const cf__catalog *cat, size_t i, cf__catalog_col_attrs *e)
{
    const cat_col *c = &cat->cols[i];
    char buf[PATH_MAX];
    e->name = c->name;
    e->valid = 0;
    if (!c->complete) return 0;
    for (int k = 0; k < 3; k++) {
        const cat_slot *f = &c->slot[attr_slots[k]];
        e->files[k].present = f->state != 0;
        e->files[k].inline_bytes = f->state == 1;
        e->files[k].data = f->data;
        e->files[k].len = f->len;
        if (f->state == 0) continue;
        if (cf__cat_full_path(buf, sizeof buf, "", c->name, cf__cat_slot_names[attr_slots[k]]) ||
            !cf__cat_still_at(cat->root_fd, buf, &f->st))
            return 0;
    }
    e->valid = 1;
    return 1;
}

int cf__catalog_attrs(const cf__catalog *cat, const char *root, cf__catalog_col_attrs **out, size_t *count)
{
    if (!cat || !cf__cat_same_root(cat, root) || !cf__cat_generation_still(cat)) return 0;
    if (!cf__cat_load_all(cat) || !coarse_evidence_holds(cat, root)) return 0;
    cf__catalog_col_attrs *e = calloc(cat->ncols ? cat->ncols : 1, sizeof *e);
    if (!e) return CF_ENOMEM;
    if (cat->ndirs + cat->ncols < PAR_MIN) {
        if (!dirs_still_at(cat)) {
            free(e);
            return 0;
        }
        for (size_t i = 0; i < cat->ncols; i++) (void)check_attrs(cat, i, &e[i]);
    } else {
        /* one queue of directory and file stamps: on a cold cache the
         * threads keep several inode reads in flight */
        par p;
        par_init(&p, cat, e);
        par_run(&p);
        if (atomic_load(&p.bad)) {
            free(e);
            return 0;
        }
    }
    *out = e;
    *count = cat->ncols;
    return 1;
}
int cf__catalog_column(const cf__catalog *cat, const char *root, const char *name,
                       cf__catalog_file files[CF__CAT_NSLOTS], cf__stamp *dir_stamp)
{
    return cf__catalog_column_held(cat, root, name, files, dir_stamp, NULL);
}

int cf__catalog_column_held(const cf__catalog *cat, const char *root, const char *name,
                            cf__catalog_file files[CF__CAT_NSLOTS], cf__stamp *dir_stamp, int *dirfd)
{
    if (!cat) return 0;
    const cat_col *c = cf__cat_find(cat, name);
    if (!c || !c->complete) return 0;
    /* Its groups (a real directory each, no link, with the entries
     * recorded), its own directory and its header, checked by the paths
     * the column's files are read through: a stamp that matches names the
     * recorded file, wherever the root path now leads. */
    char buf[PATH_MAX];
    for (size_t j = 0; j < c->ndirs; j++) {
        const cat_dir *d = &cat->dirs[c->dirs[j]];
        if (cf__cat_full_path(buf, sizeof buf, root, d->path, NULL) || !cf__cat_still(buf, &d->st)) return 0;
    }
    if (dirfd) {
        /* The directory opened below the File's (a short lookup, no link
         * followed at its name) is the recorded one and holds the recorded
         * header: what the handle reads is this entry's version. */
        int fd = cf__open_dir_handle_nofollow(cat->root_fd, name);
        if (fd < 0) return 0;
        if (!cf__cat_still_at(fd, "", &c->own) ||
            !cf__cat_still_at(fd, cf__cat_slot_names[CF__CAT_HEADER], &c->slot[CF__CAT_HEADER].st)) {
            close(fd);
            return 0;
        }
        *dirfd = fd;
    } else if (cf__cat_full_path(buf, sizeof buf, root, name, NULL) || !cf__cat_still(buf, &c->own) ||
               cf__cat_full_path(buf, sizeof buf, root, name, cf__cat_slot_names[CF__CAT_HEADER]) ||
               !cf__cat_still(buf, &c->slot[CF__CAT_HEADER].st)) {
        return 0;
    }
    for (int s = 0; s < CF__CAT_NSLOTS; s++) {
        const cat_slot *f = &c->slot[s];
        files[s].present = f->state != 0;
        files[s].inline_bytes = f->state == 1;
        files[s].data = f->data;
        files[s].len = f->len;
        files[s].st = f->st;
    }
    *dir_stamp = c->own;
    return 1;
}
