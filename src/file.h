/* file.h - the File handle (internal). */
#ifndef CF_FILE_H
#define CF_FILE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "catalog.h"
#include "colfile.h"

struct cf_file {
    char *path;    /* as given by the caller */
    int writable;
    int flags;     /* the cf_open_flags it was opened with */
    cf__catalog *catalog; /* loaded at open (NULL: none or unusable); read only */
    /* The directories this handle's writable columns live in, each with
     * its lock file (writer_lock.h: kept open while columns lock through
     * it), tidied at the catalog update and at close.  Guarded by
     * lock_dirs_mu: opening a column only reads the handle otherwise, and
     * callers do that from several threads at once. */
    struct cf__lock_dir **lock_dirs;
    uint64_t *lock_dir_hashes;
    int64_t n_lock_dirs, cap_lock_dirs;
    pthread_mutex_t lock_dirs_mu;
};

/* The lock-file object of directory `dir` (len bytes), where a writable
 * column of f lives: a new reference (writer_lock.h), or NULL when out of
 * memory (the column then locks on its own, and the file is not tidied). */
struct cf__lock_dir *cf__file_lock_dir(cf_file *f, const char *dir, size_t len);

/* 1 unless the File was opened with CF_OPEN_NODURABLE. */
#define CF__DURABLE(f) (((f)->flags & CF_OPEN_NODURABLE) == 0)

/* 1 if `name` is a file name colfile or bigfile may keep in a column or
 * group directory: header, attr, attr-v2, a blob (6+ uppercase hex digits),
 * colfile-* extension files, or a hidden .colfile / temporary file. */
int cf__is_format_file_name(const char *name);

#endif
