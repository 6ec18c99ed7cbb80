/* catalog_impl.h - what the catalog's files share (internal): the catalog
 * as loaded (catalog.c), its stamps and the racy-timestamp rule, used by
 * the lookups (catalog_lookup.c) and the builder (catalog_build.c). */
#ifndef CF_CATALOG_IMPL_H
#define CF_CATALOG_IMPL_H

#include <stddef.h>
#include <stdint.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <time.h>

#include "catalog.h"
#include "wire.h"

#define MAGIC "CFCAT2\n"
#define MAGIC_LEN 8
/* The sharded catalog (catalog_shard.c): an index and its shards. */
#define INDEX_MAGIC "CFIDX4\n"
/* The index before it recorded the open marks (read, never written). */
#define INDEX_MAGIC_V3 "CFIDX3\n"
#define SHARD_MAGIC "CFSHD3\n"
/* A shard holds the columns of one group, at most SHARD_COLS of them and
 * (but for a single column) at most SHARD_BYTES of entries. */
#define SHARD_COLS 256
#define SHARD_BYTES ((size_t)4 << 20)
/* A catalog whose shards take at most this many bytes keeps them in its
 * index: a small File's catalog stays one file, read with one pread. */
#define INLINE_SHARDS_MAX ((size_t)48 << 10)
/* Larger metadata files are stamped but not copied into the catalog. */
#define INLINE_MAX ((size_t)64 * 1024)
#define DEPTH_MAX 256
/* Most threads any pass over the catalog runs. */
#define PAR_THREADS 8

/* The file names of the slots, in cf__catalog_file order. */
extern const char *const cf__cat_slot_names[CF__CAT_NSLOTS];

typedef cf__stamp stamp;

/* What an index records of the generation file (generation.c): its size
 * `at` (the generation) and how many '+' its first `at` bytes leave open,
 * so that the next count reads only the bytes appended since.  known: 0
 * where the catalog does not record it (counted from the file's start). */
typedef struct cf__cat_marks {
    uint64_t at, open;
    int known;
} cf__cat_marks;

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
    uint64_t *dirs; /* its groups (indices into the catalog's dirs), the root first */
    size_t ndirs;
    stamp own;      /* its own directory's stamp */
    int complete;
    cat_slot slot[CF__CAT_NSLOTS];
} cat_col;

/* One shard of a sharded catalog as its index lists it, and its columns
 * once loaded (catalog_shard.c). */
typedef struct cat_shard {
    const char *file;          /* its name in .colfile-catalog */
    const char *first, *last;  /* the names of its first and last columns */
    uint64_t count, size;      /* its columns; its size in bytes */
    uint32_t crc;              /* its CRC32C (the one it ends with) */
    int in_index;              /* its bytes are in the index (buf points there) */
    atomic_int state;          /* 0 not loaded, 1 loaded, -1 unusable */
    unsigned char *buf;
    cat_col *cols;
    size_t ncols;
    uint64_t *dir_index;
} cat_shard;

struct cf__catalog {
    unsigned char *buf;  /* the index, or the whole single-file catalog */
    size_t len;
    int sharded;         /* 1: index and shards; 0: the single file (CFCAT2) */
    cat_dir *dirs;       /* the directories that are not columns: the root, the groups */
    size_t ndirs;
    cat_shard *shards;   /* sharded: in name order */
    size_t nshards;
    cat_col *cols;       /* every column: the single file's, or (sharded) set by
                          * cf__cat_load_all once every shard is loaded */
    size_t ncols;
    atomic_int all;      /* cols holds every column: 1; cannot: -1; not yet: 0 */
    uint64_t *dir_index; /* storage of every cols[i].dirs (single file) */
    uint64_t generation; /* the File's generation when it was built */
    cf__cat_marks marks; /* the marks open at it (known: CFIDX4 only) */
    int root_fd;         /* the root directory, for short relative lookups */
    pthread_mutex_t lock; /* loading shards */
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

/* The catalog on disk whatever the File's generation (NULL: none usable):
 * for a writer's update, which reuses its entries only where their stamps
 * hold and removes the shards it named once they are replaced. */
cf__catalog *cf__cat_load_any_generation(const char *root);

/* Once a writer's new index is in place in the catalog directory dir:
 * remove the single-file catalog, the shards of cats[0..n) (NULL entries
 * skipped) that kept(file, arg) says the new index does not name, and,
 * once not modified for an hour, any other such shard and the
 * temporaries a killed update left (catalog_sweep.c). */
void cf__cat_remove_unused(const char *dir, const cf__catalog *const *cats, size_t n,
                           int (*kept)(const char *file, void *arg), void *arg);

/* ---- the File's generation (generation.c) -------------------------------- */

/* The generation (the size of the generation file at path below dfd; 0
 * when there is none): 0, or -1 when it is not a regular file or cannot
 * be looked at. */
int cf__cat_generation_at(int dfd, const char *path, uint64_t *gen);

/* 1 if the File's generation is still the one the catalog was built at. */
int cf__cat_generation_still(const cf__catalog *cat);

/* 1 if the File's generation is still the catalog's and its file holds a
 * '+' no '-' matched: a colfile writer inside its change, or killed there
 * (a listing that differs from the catalog is then its change). */
int cf__cat_generation_pending(const cf__catalog *cat);

/* The generation for an update to record, and the marks open at it, read
 * from the file in the catalog directory dir before the walk: once the
 * writers inside their change (an unmatched '+') have finished or, after
 * a second, are taken for dead (their '+' matched here); made durable
 * first when `durable`, so that the file never ends up shorter than a
 * recorded generation.  The count continues from `from` (a catalog's
 * record; NULL or unknown: from the start), reading only the bytes after
 * it, when the file still agrees with it (docs/format.md 8.5); else it
 * starts again from byte 0.  0, or -1 when it is not a regular file or
 * cannot be read. */
int cf__cat_generation_settle(const char *dir, int durable, const cf__cat_marks *from, cf__cat_marks *out);

/* ---- shared helpers (catalog.c) ------------------------------------------ */

/* The directory of the catalog file below root (malloc'ed), or NULL. */
char *cf__cat_catalog_dir(const char *root);

/* root + "/" + rel into buf (PATH_MAX); 0, or -1 if too long. */
int cf__cat_full_path(char *buf, size_t cap, const char *root, const char *rel, const char *leaf);

/* Run worker(arg) on the calling thread and on up to nthreads - 1 more
 * (fewer if they cannot start; at most PAR_THREADS in all). */
void cf__cat_run_threads(void *(*worker)(void *), void *arg, int nthreads);

/* The entry of column name, or NULL (binary search: names are sorted;
 * sharded: loads the one shard that would hold it). */
const cat_col *cf__cat_find(const cf__catalog *cat, const char *name);

/* 1 once cat->cols holds every column (sharded: every shard loaded and
 * valid); 0 when it cannot: the listing is then not usable. */
int cf__cat_load_all(const cf__catalog *cat);

/* Reading a catalog's bytes (catalog.c): a stamp; a text stored with its
 * NUL; a column's `complete` and, when complete, its slots. 0 or -1. */
int cf__cat_get_stamp(cf__wire_in *in, stamp *s);
int cf__cat_get_text(cf__wire_in *in, const char **s, size_t *len);
int cf__cat_get_entry(cf__wire_in *in, cat_col *c);

/* The magic and the trailing CRC32C of a catalog file's bytes: 0 or -1. */
int cf__cat_check_file(const unsigned char *buf, size_t len, const char *magic);

/* ---- the builder's state (catalog_build.c; written by catalog_shard.c) -- */

typedef struct build_dir {
    char *path;
    stamp st;
} build_dir;

typedef struct build_col {
    char *name;
    uint64_t *dirs;
    size_t ndirs;
    int complete;
    cat_slot slot[CF__CAT_NSLOTS];
    char *owned[CF__CAT_NSLOTS]; /* bytes read now (else they point into old) */
} build_col;

typedef struct build {
    const char *root;
    const cf__catalog *old;  /* the one the writer opened with, else the one on disk */
    const cf__catalog *disk; /* the one on disk now, whatever its generation */
    int fine;
    uint64_t generation;   /* the File's, read before the walk */
    uint64_t open_marks;   /* the '+' open in its first `generation` bytes */
    int probed;            /* probe_clock gave `probe`: a reading of the file clock */
    struct timespec probe; /* ... taken after every change this update may trust */
    atomic_int racy;       /* stamps found too new to trust */
    int failed;     /* out of memory, or a directory could not be read */
    build_dir *dirs;
    size_t ndirs, capdirs;
    build_col *cols;
    size_t ncols, capcols;
    uint64_t chain[DEPTH_MAX + 2]; /* directory indices of the current path */
} build;

/* Write the catalog of the walk in b (its columns sorted) into the catalog
 * directory dir: the shards that changed, then the index when it changed
 * (catalog_shard.c). */
int cf__cat_write(build *b, const char *dir, int durable, cf_error *err);

/* ---- the sharded catalog (catalog_shard.c) ------------------------------- */

/* A sharded catalog from the index's bytes (cat->buf, checked for its
 * magic and CRC): 0, or -1 when it is not one. */
int cf__cat_parse_index(cf__catalog *cat);

/* Shard i loaded (its file read, checked against the index and parsed):
 * 1, or 0 when it is unusable. */
int cf__cat_load_shard(const cf__catalog *cat, size_t i);

/* The index of the directory `path` (its first len bytes) in cat->dirs,
 * which a sharded catalog keeps sorted, or (uint64_t)-1. */
uint64_t cf__cat_find_dir(const cf__catalog *cat, const char *path, size_t len);

/* The shard of cat (sharded) whose range would hold name: its index, or
 * (size_t)-1. */
size_t cf__cat_shard_of(const cf__catalog *cat, const char *name);

/* Read the file `name` of the catalog directory below root_fd, not
 * following a link, whole (NUL added): 0; -2 when it (or the catalog
 * directory) does not exist; -1 otherwise.  `expect`: its size must be
 * exactly that (SIZE_MAX: any up to CF__METADATA_MAX). */
int cf__cat_read(int root_fd, const char *name, size_t expect, unsigned char **buf, size_t *len);

#endif
