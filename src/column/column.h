/* column.h - the column handle (internal; shared by the files of
 * src/column). */
#ifndef CF_COLUMN_H
#define CF_COLUMN_H

#include <stdint.h>
#include <string.h>

#include "attrs.h"
#include "header.h"
#include "hstamp.h"
#include "stats.h"
#include "writer_lock.h"

/* Bytes moved per conversion/checksum pass: small enough to stay in L2. */
#define CF__CHUNK_BYTES ((int64_t)256 * 1024)
/* Write segments remembered per blob before falling back to re-reading the
 * blob at flush to compute its CRC32C. */
#define CF__MAX_SEGMENTS 1024

/* Largest blob whose CRC32C is recomputed by re-reading it at flush when
 * the writes of a session did not cover it whole. */
#define CF__RECOMPUTE_CRC_MAX ((int64_t)256 << 20)

typedef struct cf__segment {
    int64_t offset, length; /* bytes within the blob */
    uint32_t crc;
} cf__segment;

typedef struct cf__blob_writes {
    cf__segment *segments;  /* kept sorted by offset, adjacent ones merged */
    int64_t count, capacity;
    int overflow;           /* too many or overlapping segments: recompute */
} cf__blob_writes;

struct cf_column {
    char *name;
    char *path;         /* the column directory */
    char *dir;          /* where its files are now: a hidden staging directory
                           next to `path` until a new column is first
                           committed (published), then `path` */
    char *attr_dir;     /* where the attribute files live */
    int kind;
    int writable;
    int replica;        /* built by cf_column_open_meta: writes no metadata */
    cf__header h;
    char dtype_token[CF_DTYPE_MAX];
    int64_t rowbytes;   /* nmemb * width */
    int64_t size;
    int64_t *first_row; /* nfile + 1 cumulative row counts */
    uint32_t *committed_sums; /* h.sums as last read or written to disk */
    uint32_t *crc;
    unsigned char *crc_known;
    unsigned char *unsynced; /* blobs written since their last fsync */
    cf__blob_writes *writes; /* nfile entries, NULL until the first write */
    cf__stats stats;    /* per-chunk statistics (data columns) */
    int stats_pending;  /* read-only: `stats` not parsed yet from stats_text
                           (cf__column_stats_need) */
    char *stats_text;   /* the statistics text as read at open, NULL if none */
    size_t stats_len;
    struct cf__deferred *deferred; /* read-only, opened from the File catalog:
                           colfile-v1 (and colfile-stats-v1) and the attribute
                           files as the catalog knows them, checked and
                           applied when first needed (cf__column_settle,
                           cf__column_settle_attrs); NULL once both are */
    int fresh;          /* created by this handle, nothing written yet */
    int stats_off;      /* writes skip statistics (they become unknown) */
    int legacy_stats;   /* colfile-v1 had no statistics at open, so an older
                           colfile-stats-v1 may be there: the next commit
                           removes it */
    int durable;        /* fsync before each commit (no CF_OPEN_NODURABLE) */
    int64_t committed_nfile; /* blobs below this hold committed rows: writing
                               them is an in-place update (colfile-torn) */
    int torn_at_open;   /* colfile-torn was there at open: kept until repair */
    int torn_marked;    /* this handle has made sure colfile-torn exists */
    int torn_created;   /* ... and made it: none was there before */
    int inplace_written; /* bytes of committed blobs may have changed
                           through this handle */
    int64_t listed_nfile; /* blobs the last header this handle published
                           lists (0 if none): they may be committed even if
                           the rest of that commit failed */
    int shared;         /* other handles may write these blobs too (an
                           exported snapshot or merged pending state) */
    int verify;         /* reads check the CRC32C of blobs they cover whole */
    int no_mmap;        /* CF_OPEN_NOMMAP: reads never map blobs (readmap.h) */
    cf__hstamp hstamp;  /* the header's mtime: as read at open, then as this
                           handle last committed it (hstamp.h) */
    cf__hstamp xstamp;  /* colfile-v1's mtime as read, for the text being
                           applied (cf__column_apply_ext) */
    int ext_state;      /* enum cf_ext_state: whether crc/stats as read apply */
    int ext_snapshot;   /* colfile-v1 comes from another handle's snapshot
                           (cf_column_open_meta), whose trust it carries */
    int stats_damaged;  /* the statistics text, from a current colfile-v1,
                           does not parse */
    unsigned char *stats_bad; /* NULL, or nfile flags: blob b has statistics
                           in that text that are inconsistent */
    cf__lock lock;      /* the writer lock (writer_lock.h), fd -1 if not held */
    int nolock;         /* CF_OPEN_NOLOCK: take no writer lock */
    int failed;         /* a write failed or changes were discarded: the
                           handle commits nothing any more */
    int header_dirty;
    int ext_dirty;
    cf__attrset attrs;    /* merged view: attr, attr-v2, colfile-attrs */
    cf__attrset attrs_v1; /* what the legacy `attr` file holds */
    int attrs_unread;   /* read-only: attrs / attrs_v1 not loaded from the
                           files yet (cf__column_settle_attrs) */
    int dirfd;          /* the column directory of the version this handle
                           opened, held open (column_version.h); -1 if none */
    int64_t opened_header_len; /* a writable handle of an existing column:
                           the length and CRC32C of the header it read at
                           open, -1 otherwise (cf__version_check) */
    uint32_t opened_header_crc;
    int fd;             /* cached blob descriptor, -1 if none */
    int64_t fd_blob;
    int fd_writable;
    int64_t fd_blksize; /* st_blksize of the cached blob (preferred I/O size); -1 until looked up */
    unsigned char *scratch; /* CF__CHUNK_BYTES, allocated on first use */
};

#define CF__STAGE_PREFIX ".colfile-stage."
#define CF__OLD_PREFIX ".colfile-old."

/* 1 while the column's files live in a staging directory (not published). */
#define CF__STAGED(c) (strcmp((c)->dir, (c)->path) != 0)

/* The staging directory's name ("" once published), and setting it on a
 * replica from a metadata snapshot (validated: CF_EFORMAT if it is not a
 * plain .colfile-stage.* name). */
const char *cf__column_stage_leaf(const cf_column *c);
int cf__column_set_stage(cf_column *c, const char *leaf, size_t n, cf_error *err);

/* A replica that handed its state over (pending export): the committing
 * handle publishes the column, so from now on its files are at `path` and
 * all its blobs hold committed rows. */
int cf__column_follow_commit(cf_column *c, cf_error *err);

/* Before the first change through a handle that commits: take the writer
 * lock (CF_EBUSY when another process holds it).  Replicas and attribute
 * groups take none. */
int cf__column_begin_change(cf_column *c, cf_error *err);

/* fsync every blob written since its last fsync (when c->durable); the
 * parallel layers' replicas do this before handing over their state. */
int cf__column_sync_blobs(cf_column *c, cf_error *err);

/* Before the first use of c->crc / c->crc_known or of the statistics of a
 * handle opened from the File catalog: check the stamps of colfile-v1 (and
 * of colfile-stats-v1 when it has no statistics) and apply them (the
 * catalog's bytes where the stamps still hold, the files otherwise).  Cheap
 * once done; CF_ENOMEM. */
int cf__column_settle(cf_column *c, cf_error *err);
/* 1 if colfile-v1 as read (text, len; NULL: absent) is stale for the header
 * this handle read while that header is still the column's and a writer
 * holds the column's lock: a commit between renaming its header and its
 * colfile-v1.  Then it has paused a moment and the caller reads colfile-v1
 * again (at most `tries` times: 0 once they are used up). */
int cf__column_ext_wait(const cf_column *c, const char *text, size_t len, int tries);

/* The same for c->attrs / c->attrs_v1 and the attribute files (attr,
 * attr-v2, colfile-attrs), before their first use: the errors of
 * cf__column_load_attrs (a file that does not parse or cannot be read),
 * after which the next call tries again. */
int cf__column_settle_attrs(cf_column *c, cf_error *err);

/* Load the attribute files of c->attr_dir into c->attrs / c->attrs_v1. */
int cf__column_load_attrs(cf_column *c, cf_error *err);

/* Merge the bytes of attribute file k into `all`, the way every reader of
 * a column's attributes merges them (k in order, later files winning):
 * k 0, the legacy binary `attr`, whose records also go to `v1`; k 1,
 * `attr-v2`; k 2, colfile-attrs (cf__attr_files names them).  `path`
 * names the file in errors. */
#define CF__ATTR_NFILES 3
extern const char *const cf__attr_files[CF__ATTR_NFILES];
int cf__attrs_merge(int k, const char *text, size_t len, const char *path, cf__attrset *v1,
                    cf__attrset *all, cf_error *err);

/* Write c->attrs back (attr-v2, colfile-attrs; `attr` when v1_changed),
 * each file atomically and durably (when c->durable).  Nothing for a
 * column not yet published: its commit writes them. */
int cf__column_save_attrs(cf_column *c, int v1_changed, cf_error *err);

/* The attributes of a group or of the File (attribute blocks) have no
 * column lock: their writer takes the lock of leaf "." in their directory
 * `dir` (made where missing, again if a removal moves it away meanwhile)
 * while it replaces their files, so that removals exclude it and repair
 * knows its temporaries from those of a killed writer.  Shared for
 * CF_OPEN_NOLOCK handles.  Let go with cf__lock_release. */
int cf__attrs_block_lock(const char *dir, int durable, int shared, cf__lock *lk, cf_error *err);

/* The commit of a staged column: write its attribute files in place in the
 * staging directory, unsynced, and append their names (static strings, at
 * most 3) to written[], counted by *n, for the commit to fsync. */
int cf__column_write_staged_attrs(cf_column *c, const char **written, size_t *n, cf_error *err);

#define CF__ATTRS_EXT_NAME "colfile-attrs"

/* A handle for column `name` at `path` whose attribute files are in
 * attr_dir, nothing opened yet; NULL without memory (column.c). */
cf_column *cf__column_new(const char *name, const char *path, const char *attr_dir);
/* 1 if name is an attribute block ("." or "g/."). */
int cf__column_is_attrs_only_name(const char *name);
/* Where the attribute files of `name` live: the column directory, or for
 * "." the File root and for "g/." the directory g (malloc'ed; NULL). */
char *cf__column_attr_dir_of(const cf_file *f, const char *name);
/* Create or truncate blob i to zero bytes; with `keep`, it stays open for
 * writing as the handle's cached descriptor. */
int cf__column_truncate_blob_keep(cf_column *c, int64_t i, int keep, cf_error *err);
/* Let c lock through the File's descriptor of its directory's lock file
 * (column_create.c). */
void cf__column_note_lock_dir(cf_file *f, cf_column *c);

/* Pieces of cf_column_open shared with cf_column_open_meta (column_open.c). */
int cf__column_new_for(cf_column **out, cf_file *f, const char *name, cf_error *err);
int cf__column_apply_header(cf_column *c, const char *text, size_t len, const char *path, cf_error *err);
/* Apply colfile-v1's text (NULL: absent or unreadable): its CRCs, and its
 * statistics section when it has one.  *legacy is set to 1 when it has
 * none: the caller then applies colfile-stats-v1 (docs/format.md 8.4). */
int cf__column_apply_ext(cf_column *c, const char *text, size_t len, const char *path, int *legacy,
                         cf_error *err);
void cf__column_set_attrs_only(cf_column *c);
void cf__column_free(cf_column *c);

/* Fill a column just made by cf__column_new_for from its metadata files as
 * the File's catalog holds them (column_meta.c): what cf_column_open does
 * with the files themselves, no colfile-torn being there.  The header's
 * stamp is checked by the catalog and the header applied here; colfile-v1
 * and the statistics are kept for cf__column_settle, the attribute files
 * for cf__column_settle_attrs, with `dir`, the column directory's stamp. */
struct cf__catalog_file;
struct cf__stamp;
int cf__column_apply_cached(cf_column *c, const struct cf__catalog_file *files,
                            const struct cf__stamp *dir, cf_error *err);

/* 1 if blob b has no write recorded since the last commit (column.c). */
int cf__column_first_touch(const cf_column *c, int64_t b);
/* Empty blob b's statistics and mark them invalid (column_stats.c). */
void cf__column_stats_reset_blob(cf_column *c, int64_t b);
/* Add n column-typed elements, from element `elem` of blob b, to the
 * statistics of the chunks they fall in (column_stats.c). */
void cf__column_stats_add(cf_column *c, int64_t b, int64_t elem, const unsigned char *p, int64_t n);
/* Add n column-typed elements, starting at element `elem` of a blob, to
 * the accumulators acc of the chunks from k0 on (nmemb each). */
void cf__column_add_to_chunks(const cf_column *c, cf__acc *acc, int64_t k0, int64_t elem, const unsigned char *p,
                              int64_t n);
/* Parse the statistics text into c->stats now (column_stats.c). */
int cf__column_load_stats(cf_column *c, const char *text, size_t len, const char *path, cf_error *err);
/* Load statistics from their text (NULL: none).  A
 * read-only handle keeps a copy of the text and parses it only when
 * cf__column_stats_need is first called (most readers never ask). */
int cf__column_apply_stats(cf_column *c, const char *text, size_t len, const char *path, cf_error *err);
/* Make c->stats hold the column's statistics (parse a read-only handle's
 * deferred text): call before any use of c->stats.  Fails only for lack of
 * memory; damaged statistics load as unknown, as at open (column_stats.c). */
int cf__column_stats_need(const cf_column *c, cf_error *err);

/* Remember that bytes [off, off+len) of blob i were written with CRC crc
 * (column_write.c). */
int cf__column_note_segment(cf_column *c, int64_t i, int64_t off, int64_t len, uint32_t crc, cf_error *err);

#endif
