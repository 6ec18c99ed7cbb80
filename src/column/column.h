/* column.h - what the files of src/column share about column handles
 * (internal); the handle's fields are in column_handle.h, for the files
 * that own some of them. */
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


#define CF__STAGE_PREFIX ".colfile-stage."
#define CF__OLD_PREFIX ".colfile-old."


/* The staging directory's name ("" once published), and setting it on a
 * replica from a metadata snapshot (validated: CF_EFORMAT if it is not a
 * plain .colfile-stage.* name). */
const char *cf__column_stage_leaf(const cf_column *c);
int cf__column_set_stage(cf_column *c, const char *leaf, size_t n, cf_error *err);

/* A replica that handed its state over (pending export): the committing
 * handle publishes the column, so from now on its files are at `path` and
 * all its blobs hold committed rows. */
int cf__column_follow_commit(cf_column *c, cf_error *err);

/* Read colfile-v1 (and an older colfile-stats-v1 beside it) again into the
 * handle: CRC32C, statistics and their state, decided anew from the files. */
int cf__column_reload_ext(cf_column *c, cf_error *err);

/* Before the first change through a handle that commits: take the writer
 * lock (CF_EBUSY when another process holds it).  Replicas and attribute
 * groups take none. */
int cf__column_begin_change(cf_column *c, cf_error *err);

/* fsync every blob written since its last fsync (when c->durable); the
 * parallel layers' replicas do this before handing over their state. */
int cf__column_sync_blobs(cf_column *c, cf_error *err);

/* The descriptors of written, unsynced blobs (column_sync.c): keep the
 * cached one instead of closing it (1 if kept), the kept one of blob b
 * (-1 if none), take it back, and close them all without syncing (a
 * discard, free). */
int cf__column_keep_fd(cf_column *c);
int cf__column_kept_fd(const cf_column *c, int64_t b);
int cf__column_take_kept(cf_column *c, int64_t b);
void cf__column_drop_kept(cf_column *c);

/* A new column's blobs are made by their writers (the first write opens
 * them with O_CREAT), not all by the creating handle: before the first
 * commit, the committing handle makes the ones nobody wrote (empty), so
 * that the header lists only files that exist. */
/* Blobs from `from` on: a staged column's first commit passes 0, a commit
 * of blobs an append added (which their writers make too) the committed
 * count. */
int cf__column_create_unwritten(cf_column *c, int64_t from, cf_error *err);

/* Before the first use of c->crc / c->crc_known or of the statistics of a
 * handle opened from the File catalog: check the stamps of colfile-v1 (and
 * of colfile-stats-v1 when it has no statistics) and apply them (the
 * catalog's bytes where the stamps still hold, the files otherwise).  Cheap
 * once done; CF_ENOMEM. */
int cf__column_settle(cf_column *c, cf_error *err);

/* A cf_chunk_stats's count, nan_count, ordered, min, max (rounded outward)
 * and sum from accumulator a (blob, rows, first_row and valid are the
 * caller's). */
void cf__column_fill_stats(const cf_column *c, const cf__acc *a, cf_chunk_stats *out);
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
/* What a handle takes from the open flags of its File f: durability,
 * verification, mmap, locking, the digest helper. */
void cf__column_take_file_options(cf_column *c, const cf_file *f);
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

/* Where the attribute files of c live (column.c). */
const char *cf__column_attr_dir(const cf_column *c);
/* 1 if c's writes skip statistics (column_stats.c). */
int cf__column_stats_off(const cf_column *c);
/* Hand c's merged attributes over to *out (c keeps none; column_attrs.c). */
void cf__column_take_attrs(cf_column *c, cf__attrset *out);

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
/* Rows per chunk a data column gets when nothing chose them: from its
 * rows as the header has them (cf__stats_chunk_rows_for). */
int64_t cf__column_default_chunk_rows(const cf_column *c);
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
