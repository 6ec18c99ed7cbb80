/* catalog_impl.h - what the catalog's files share (internal): the catalog
 * as loaded (catalog.c), its stamps and the racy-timestamp rule, used by
 * the lookups (catalog_lookup.c) and the builder (catalog_build.c). */
#ifndef CF_CATALOG_IMPL_H
#define CF_CATALOG_IMPL_H

#include <stddef.h>
#include <stdint.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <time.h>

#include "catalog.h"

#define MAGIC "CFCAT2\n"
#define MAGIC_LEN 8
/* Larger metadata files are stamped but not copied into the catalog. */
#define INLINE_MAX ((size_t)64 * 1024)
#define DEPTH_MAX 256
/* Most threads any pass over the catalog runs. */
#define PAR_THREADS 8

/* The file names of the slots, in cf__catalog_file order. */
extern const char *const cf__cat_slot_names[CF__CAT_NSLOTS];

typedef cf__stamp stamp;

typedef struct cat_dir {
    const char *path;
    stamp st;
} cat_dir;

typedef struct cat_slot {
    int state; /* 0 absent, 1 inline, 2 present not inline */
    stamp st;
    const char *data;
    size_t len;
} cat_slot;

typedef struct cat_col {
    const char *name;
    uint64_t *dirs;
    size_t ndirs;
    int complete;
    cat_slot slot[CF__CAT_NSLOTS];
} cat_col;

struct cf__catalog {
    unsigned char *buf;
    size_t len;
    cat_dir *dirs;
    size_t ndirs;
    cat_col *cols;
    size_t ncols;
    uint64_t *dir_index; /* storage of every cols[i].dirs */
    uint64_t generation; /* the File's generation when it was built */
    int root_fd;         /* the root directory, for short relative lookups */
    /* whether the File's file system gives timestamps fine enough to
     * prove freshness (cf__cat_fine_timestamps): -1 not asked yet */
    atomic_int fine;
};

/* ---- stamps and the racy-timestamp rule (catalog.c) ---------------------- */

int cf__cat_take_stamp(const char *path, stamp *s);
int cf__cat_same_stamp(const stamp *a, const stamp *b);
void cf__cat_fill_stamp(const struct stat *st, stamp *s);

/* 1 if path's current lstat equals s. */
int cf__cat_still(const char *path, const stamp *s);

/* The same for rel ("" for the directory itself) below the directory open
 * as fd. */
int cf__cat_still_at(int fd, const char *rel, const stamp *s);

/* 1 while the root path still names the directory the catalog opened.
 * (Its identity is taken here, not when loading: a descriptor names the
 * same directory for its whole life, and opening a File for a small read
 * then makes one system call less.) */
int cf__cat_same_root(const cf__catalog *cat, const char *root);

/* The clock file timestamps are taken from (Linux: the coarse real-time
 * clock, which is what the kernel stamps inodes with). */
void cf__cat_file_clock(struct timespec *t);

/* Whether the file system stamps files with the clock's full resolution. */
int cf__cat_fine_timestamps(const char *root);

/* A stamp recorded after reading the clock as `before` can be trusted when
 * every later change is bound to give the file another ctime: its ctime is
 * strictly older than `before` (by 2 s where timestamps are coarse, or
 * where this one looks coarse: whole seconds). */
int cf__cat_trusted(const stamp *s, const struct timespec *before, int fine);

/* ---- the File's generation (generation.c) -------------------------------- */

/* The generation (the size of the generation file at path below dfd; 0
 * when there is none): 0, or -1 when it is not a regular file or cannot
 * be looked at. */
int cf__cat_generation_at(int dfd, const char *path, uint64_t *gen);

/* 1 if the File's generation is still the one the catalog was built at. */
int cf__cat_generation_still(const cf__catalog *cat);

/* ---- shared helpers (catalog.c) ------------------------------------------ */

/* The directory of the catalog file below root (malloc'ed), or NULL. */
char *cf__cat_catalog_dir(const char *root);

/* root + "/" + rel into buf (PATH_MAX); 0, or -1 if too long. */
int cf__cat_full_path(char *buf, size_t cap, const char *root, const char *rel, const char *leaf);

/* Run worker(arg) on the calling thread and on up to nthreads - 1 more
 * (fewer if they cannot start; at most PAR_THREADS in all). */
void cf__cat_run_threads(void *(*worker)(void *), void *arg, int nthreads);

/* The entry of column name, or NULL (binary search: names are sorted). */
const cat_col *cf__cat_find(const cf__catalog *cat, const char *name);

#endif
