/* file.h - the File handle (internal). */
#ifndef CF_FILE_H
#define CF_FILE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "catalog.h"
#include "colfile.h"

struct cf_file {
    char *path;    /* as given by the caller */
    int writable;
    int flags;     /* the cf_open_flags it was opened with */
    cf__catalog *catalog; /* loaded at open (NULL: none or unusable); read only */
    /* 1 once a listing found the catalog's listing changed without the
     * File's generation (cf_file_catalog_stale) */
    atomic_int catalog_stale;
    /* The directories this handle's writable columns live in, each with
     * its lock file (writer_lock.h: kept open while columns lock through
     * it), tidied at the catalog update and at close.  Guarded by
     * lock_dirs_mu: opening a column only reads the handle otherwise, and
     * callers do that from several threads at once. */
    struct cf__lock_dir **lock_dirs;
    uint64_t *lock_dir_hashes;
    int64_t n_lock_dirs, cap_lock_dirs;
    pthread_mutex_t lock_dirs_mu;
    /* Digest placement (placement.c): the CPUs this process may run on,
     * the ranks sharing its node and the CPUs they may run on together
     * (cf_file_set_node; serially 1 and own_cpus), and the choice: 1 if
     * large writes digest on a helper thread. */
    int64_t own_cpus, node_cpus, ranks_per_node;
    int digest_helper;
};

/* The CPUs the calling thread may run on (its affinity mask). */
int64_t cf__cpus_allowed(void);

/* Set f->digest_helper from f's flags and counts. */
void cf__file_place_digest(cf_file *f);

/* The lock-file object of directory `dir` (len bytes), where a writable
 * column of f lives: a new reference (writer_lock.h), or NULL when out of
 * memory (the column then locks on its own, and the file is not tidied). */
struct cf__lock_dir *cf__file_lock_dir(cf_file *f, const char *dir, size_t len);

/* 1 unless the File was opened with CF_OPEN_NODURABLE. */
#define CF__DURABLE(f) (((f)->flags & CF_OPEN_NODURABLE) == 0)

/* Hidden names of what a removal takes out of the namespace before it
 * deletes it: <dir>/.colfile-trash.<short leaf>.<pid>.<random>, next to
 * the column or group removed (its lock, held until the name is gone,
 * marks it live), or in the root for a truncation, whose leaf is
 * CF__TRUNCATE_LEAF (a reserved name no column can have). */
#define CF__TRASH_PREFIX ".colfile-trash."
#define CF__TRUNCATE_LEAF "colfile-truncate"

/* Empty the File at path for mode "w" (remove.c): refused (CF_ENOTFILE)
 * if it holds anything but colfile/bigfile files, or (CF_EBUSY) while a
 * writer holds a lock in it; else every entry is moved into a hidden
 * trash directory of the root, which is then deleted.  With nolocking
 * (CF_OPEN_NOLOCKING) it takes no lock: the caller vouches for being alone. */
int cf__file_truncate(const char *path, int durable, int nolocking, cf_error *err);

/* 1 if dir, a directory without a header, holds blob files (named as
 * bigfile names blobs): the data of a column whose header is gone. */
int cf__has_stray_blobs(const char *dir);

/* Remove them, with the other format files of the column they were
 * (colfile-v1, statistics, torn marker, attribute files, temporaries):
 * under the writer lock of the name (CF_EBUSY if held), moved into a
 * hidden trash directory, then deleted; the directory too when nothing
 * else (a foreign file, a directory) is left in it. */
int cf__discard_stray_blobs(cf_file *f, const char *dir, cf_error *err);

/* CF_ENOTFILE "refusing to <what>" if anything under dir is not a regular
 * colfile/bigfile file or a directory (root: the path named). */
int cf__check_only_format_content(const char *dir, const char *root, const char *what, cf_error *err);

#endif
