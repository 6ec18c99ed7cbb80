/* catalog.h - the File catalog: a cache of every column's metadata files
 * in one file, used only where fresh stat()s prove it current
 * (docs/format.md, "The catalog") (internal). */
#ifndef CF_CATALOG_H
#define CF_CATALOG_H

#include <stddef.h>
#include <stdint.h>

#include "colfile.h"

/* Where the catalog lives, relative to the File root: a hidden directory
 * (so that replacing the catalog file changes the directory stamps of the
 * root, which the catalog itself records, only when it is first made). */
#define CF__CATALOG_DIR ".colfile-catalog"
/* The single-file catalog colfile wrote before shards: read, never written. */
#define CF__CATALOG_NAME "colfile-catalog-v1"
/* The sharded catalog: its index, and its shards, named by this prefix and
 * their content (docs/format.md 8.5). */
#define CF__CATALOG_INDEX_NAME "colfile-catalog-index"
#define CF__CATALOG_SHARD_PREFIX "colfile-catalog-shard-"
/* The File's generation: this file's size (generation.c). */
#define CF__GENERATION_NAME "generation"

/* The mark an interrupted commit leaves in a column directory
 * (column_commit.c writes and clears it); the catalog never caches a
 * column that has one. */
#define CF__TORN_NAME "colfile-torn"

/* The metadata files a column entry caches, in the order cf_column_open
 * reads them. */
enum {
    CF__CAT_HEADER = 0,
    CF__CAT_EXT,       /* colfile-v1 */
    CF__CAT_STATS,     /* colfile-stats-v1 (older colfile) */
    CF__CAT_ATTR_V1,   /* attr */
    CF__CAT_ATTR_V2,   /* attr-v2 */
    CF__CAT_ATTRS_EXT, /* colfile-attrs */
    CF__CAT_NSLOTS
};

/* What lstat(2) said of a file or directory when the catalog recorded it:
 * inode, size, mode, mtime, ctime (docs/format.md 8.5). */
typedef struct cf__stamp {
    uint64_t ino, size, mode;
    int64_t msec, mnsec, csec, cnsec;
} cf__stamp;

/* 1 if a fresh lstat of path equals s. */
int cf__stamp_still(const char *path, const cf__stamp *s);
/* The same for rel below the directory open as dfd ("": that directory). */
int cf__stamp_still_at(int dfd, const char *rel, const cf__stamp *s);

/* One metadata file of a column as the catalog knows it. */
typedef struct cf__catalog_file {
    int present;         /* 0: absent while the column directory keeps its stamp */
    int inline_bytes;    /* 1: `data` holds its bytes; 0: not kept, read it */
    const char *data;    /* NUL terminated copy (owned by the catalog) */
    size_t len;
    cf__stamp st;        /* its stamp when present */
} cf__catalog_file;

typedef struct cf__catalog cf__catalog;

/* Load the catalog of the File at root, whose directory is open as root_fd
 * (taken over: closed with the catalog, or at once on failure; -1: opened
 * here).  Returns NULL when there is none or it is damaged, truncated or
 * otherwise unusable (it is a cache: never an error). */
cf__catalog *cf__catalog_load(const char *root, int root_fd);
void cf__catalog_free(cf__catalog *cat);

/* 1 if `names` (count, sorted: a fresh walk of the File at root) is not
 * the catalog's listing although the File's generation is still the one
 * the catalog recorded: a writer that does not bump it (bigfile, a copy
 * made by hand, colfile before generations) changed the listing, and on
 * file systems whose directory stamps lag behind other clients the
 * catalog could have hidden that (docs/format.md 8.5). */
int cf__catalog_listing_stale(const cf__catalog *cat, const char *root, char *const *names, int64_t count);

/* The column names, sorted, if every directory stamp the listing depends on
 * matches a fresh lstat: returns 1 and a list to free with cf_names_free.
 * 0: not usable (list the directories).  CF_ENOMEM. */
int cf__catalog_list(const cf__catalog *cat, const char *root, char ***names, int64_t *count);

/* The cached metadata files of column `name`, if its entry is complete and
 * fresh lstats of its directories and of its header (by their paths below
 * root) match their stamps: returns 1, fills files[CF__CAT_NSLOTS]
 * (pointers into cat) and *dir_stamp (its own directory's).  The other
 * files are NOT checked: the caller takes each only after cf__stamp_still
 * of it (present) or of the directory (absent) holds, when first needed
 * (docs/format.md 8.5).  0: read the files. */
int cf__catalog_column(const cf__catalog *cat, const char *root, const char *name,
                       cf__catalog_file files[CF__CAT_NSLOTS], cf__stamp *dir_stamp);

/* The same, with the column's directory opened (O_PATH, below the File's
 * directory the catalog holds) as *dirfd for the caller to keep: its
 * header, checked there instead of by path, is the recorded one, so the
 * files below *dirfd are the version the entry describes.  0: nothing
 * opened. */
int cf__catalog_column_held(const cf__catalog *cat, const char *root, const char *name,
                            cf__catalog_file files[CF__CAT_NSLOTS], cf__stamp *dir_stamp, int *dirfd);

/* The attribute files of one column as cf__catalog_attrs gives them. */
typedef struct cf__catalog_col_attrs {
    const char *name;               /* the column's name (owned by the catalog) */
    int valid;                      /* 1: files[] are proven current */
    cf__catalog_file files[3];      /* attr, attr-v2, colfile-attrs */
} cf__catalog_col_attrs;

/* Every column with its attribute files, in one pass.  When every
 * directory stamp the listing depends on matches a fresh lstat (the rule
 * of cf__catalog_list), returns 1 and *out, a malloc'd array of *count
 * entries sorted by name; an entry is valid when it is complete and a
 * fresh lstat of each of its attribute files recorded present matches
 * (its header and extension files are not checked: an attribute read does
 * not depend on them; docs/format.md 8.5).  0: the listing is not usable.
 * CF_ENOMEM. */
int cf__catalog_attrs(const cf__catalog *cat, const char *root, cf__catalog_col_attrs **out, size_t *count);

/* Around adding, removing or replacing a column or group of the File at
 * root (docs/format.md 8.5): cf__catalog_begin appends '+' to its
 * generation file before the change (fsynced when `durable`, the change
 * being durable too) and returns a descriptor, or -1; cf__catalog_done
 * appends the matching '-' through it once the change is in place (or
 * failed), and closes it; with -1, a plain byte.  No catalog built before
 * the change is used again, and a listing that differs from the catalog
 * while a '+' is unmatched is not blamed on a foreign writer.  Never
 * fails the change (a cache): where no byte can be appended, the stamps
 * alone decide. */
int cf__catalog_begin(const char *root, int durable);
void cf__catalog_done(const char *root, int fd);

/* One plain byte appended to the generation file (what cf__catalog_done
 * appends without a descriptor). */
void cf__catalog_bump(const char *root);

/* Rebuild the catalog of the File at root from a fresh scan (reusing the
 * entries of `old`, which may be NULL, that still validate) and replace it
 * atomically when it differs from what is on disk.  fsyncs when `durable`. */
int cf__catalog_update(const char *root, const cf__catalog *old, int durable, cf_error *err);

#endif
