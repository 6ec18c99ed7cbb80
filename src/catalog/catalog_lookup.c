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

static void *par_worker(void *arg)
{
    par *p = arg;
    const cf__catalog *cat = p->cat;
    size_t n = p->attrs ? cat->ndirs + cat->ncols : p->warm_files ? cat->ncols : cat->ndirs;
    for (;;) {
        size_t i = atomic_fetch_add(&p->next, PAR_CHUNK);
        if (i >= n || atomic_load(&p->bad)) break;
        size_t end = i + PAR_CHUNK < n ? i + PAR_CHUNK : n;
        for (; i < end; i++) {
            if (p->attrs && i >= cat->ndirs) {
                (void)check_attrs(cat, i - cat->ndirs, &p->attrs[i - cat->ndirs]);
                continue;
            }
            if (!p->warm_files) {
                if (!cf__cat_still_at(cat->root_fd, cat->dirs[i].path, &cat->dirs[i].st)) {
                    atomic_store(&p->bad, 1);
                    break;
                }
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
    return 1;
}

static int64_t elapsed_ns(const struct timespec *a)
{
    struct timespec b;
    clock_gettime(CLOCK_MONOTONIC, &b);
    return (int64_t)(b.tv_sec - a->tv_sec) * 1000000000 + (b.tv_nsec - a->tv_nsec);
}

static int compare_strs(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* 1 if the root's subdirectories (not hidden, links not followed) are
 * exactly the top-level directories the catalog recorded.  Where
 * timestamps cannot prove freshness (the root's stamp may lag behind
 * another client's change), the entries of the root still show a
 * top-level column or group that a writer not recording the generation
 * (bigfile) added or removed: one directory read. */
static int root_entries_match(const cf__catalog *cat)
{
    size_t n = 0;
    for (size_t i = 0; i < cat->ndirs; i++)
        if (cat->dirs[i].path[0] && !strchr(cat->dirs[i].path, '/')) n++;
    const char **top = malloc((n ? n : 1) * sizeof *top);
    if (!top) return 0;
    n = 0;
    for (size_t i = 0; i < cat->ndirs; i++)
        if (cat->dirs[i].path[0] && !strchr(cat->dirs[i].path, '/')) top[n++] = cat->dirs[i].path;
    qsort(top, n, sizeof *top, compare_strs);
    int fd = openat(cat->root_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0) close(fd);
        free(top);
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
            is_dir = fstatat(cat->root_fd, ent->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
        }
        if (!is_dir) continue;
        const char *key = ent->d_name;
        ok = bsearch(&key, top, n, sizeof *top, compare_strs) != NULL;
        seen++;
    }
    closedir(d);
    free(top);
    return ok && seen == n;
}

/* Where the File's timestamps are coarse or per client (docs/format.md
 * 8.5), the root's entries too must be the recorded ones. */
static int coarse_evidence_holds(const cf__catalog *cat, const char *root)
{
    cf__catalog *mut = (cf__catalog *)cat; /* a cached answer only */
    int fine = atomic_load(&mut->fine);
    if (fine < 0) {
        fine = cf__cat_fine_timestamps(root);
        atomic_store(&mut->fine, fine);
    }
    return fine || root_entries_match(cat);
}

int cf__catalog_list(const cf__catalog *cat, const char *root, char ***names, int64_t *count)
{
    /* the generation first: a change it shows is one the stamps may not */
    if (!cat || !cf__cat_same_root(cat, root) || !cf__cat_generation_still(cat)) return 0;
    if (!coarse_evidence_holds(cat, root)) return 0;
    if (cat->ndirs < PAR_MIN) {
        if (!dirs_still_at(cat)) return 0;
    } else {
        par p;
        par_init(&p, cat, NULL);
        struct timespec t0;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        par_run(&p);
        if (atomic_load(&p.bad)) return 0;
        if (elapsed_ns(&t0) / (int64_t)cat->ndirs * PAR_THREADS > COLD_NS_PER_STAT) {
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
    if (!cat || count < 0 || !cf__cat_same_root(cat, root) || !cf__cat_generation_still(cat)) return 0;
    if ((uint64_t)count != cat->ncols) return 1;
    for (size_t i = 0; i < cat->ncols; i++)
        if (strcmp(names[i], cat->cols[i].name) != 0) return 1;
    return 0;
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
    if (!coarse_evidence_holds(cat, root)) return 0;
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
    /* its own directory is the last; it must be the column's */
    const cat_dir *own = &cat->dirs[c->dirs[c->ndirs - 1]];
    if (strcmp(own->path, name) != 0) return 0;
    /* Its directories (a real directory each, no link, with the entries
     * recorded) and its header, checked by the paths the column's files are
     * read through: a stamp that matches names the recorded file, wherever
     * the root path now leads. */
    char buf[PATH_MAX];
    for (size_t j = 0; j < c->ndirs - (dirfd != NULL); j++) {
        const cat_dir *d = &cat->dirs[c->dirs[j]];
        if (cf__cat_full_path(buf, sizeof buf, root, d->path, NULL) || !cf__cat_still(buf, &d->st)) return 0;
    }
    if (dirfd) {
        /* The directory opened below the File's (a short lookup, no link
         * followed at its name) is the recorded one and holds the recorded
         * header: what the handle reads is this entry's version. */
        int fd = cf__open_dir_handle_nofollow(cat->root_fd, name);
        if (fd < 0) return 0;
        if (!cf__cat_still_at(fd, "", &own->st) ||
            !cf__cat_still_at(fd, cf__cat_slot_names[CF__CAT_HEADER], &c->slot[CF__CAT_HEADER].st)) {
            close(fd);
            return 0;
        }
        *dirfd = fd;
    } else if (cf__cat_full_path(buf, sizeof buf, root, name, cf__cat_slot_names[CF__CAT_HEADER]) ||
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
    *dir_stamp = own->st;
    return 1;
}
