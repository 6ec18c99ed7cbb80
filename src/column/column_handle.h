/* column_handle.h - the column handle's fields (internal), grouped in
 * parts, each named with the file in charge of it (the commit part is the
 * commit protocol's state, column_stage.c and commit/column_commit.c; the statistics part is
 * column_stats.c's, ...).  Only the files that use the fields include this;
 * the others go through the functions of column.h. */
#ifndef CF_COLUMN_HANDLE_H
#define CF_COLUMN_HANDLE_H

#include <stdint.h>
#include <string.h>

#include "column.h"

/* Blob descriptors and buffers of the I/O paths (column.c opens blobs,
 * column_read.c and column_write.c use them). */
/* Written blobs a handle keeps open for their fsync (writers of one or two
 * blobs, as MPI ranks are, never reopen them). */
#define CF__KEPT_FDS 8

typedef struct cf__column_io {
    int fd;             /* cached blob descriptor, -1 if none */
    int64_t fd_blob;
    int fd_writable;
    int64_t fd_blksize; /* st_blksize of the cached blob (preferred I/O size); -1 until looked up */
    unsigned char *scratch; /* CF__CHUNK_BYTES, allocated on first use */
    /* descriptors of blobs written and not fsynced yet, kept when the
     * cached one moves to another blob, so that the commit syncs each
     * blob through the descriptor that wrote it (no open by path: one
     * metadata call per blob and writer); the oldest is synced and closed
     * when more are needed (column_sync.c) */
    int kept_fd[CF__KEPT_FDS];
    int64_t kept_blob[CF__KEPT_FDS];
    int nkept;
    int kept_errno;     /* a sync of an evicted descriptor failed: errno */
    int64_t kept_err_blob;
} cf__column_io;

/* The checksums of the blobs (column.c settles them, column_write.c
 * records what writes change, commit/column_commit.c publishes them). */
typedef struct cf__column_sums {
    uint32_t *committed_sums; /* h.sums as last read or written to disk */
    uint32_t *crc;
    unsigned char *crc_known;
    unsigned char *unsynced; /* blobs written since their last fsync */
    unsigned char *made; /* blobs a writer has made (this handle, or one whose
                           pending state was merged): a staged column's others
                           are made empty by its first commit */
    cf__blob_writes *writes; /* nfile entries, NULL until the first write */
} cf__column_sums;

/* The commit protocol's state (column_stage.c, commit/column_commit.c). */
typedef struct cf__column_commit {
    int legacy_stats;   /* colfile-v1 had no statistics at open, so an older
                           colfile-stats-v1 may be there: the next commit
                           removes it */
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
    cf__lock lock;      /* the writer lock (writer_lock.h), fd -1 if not held */
    int nolock;         /* CF_OPEN_NOLOCK: take no writer lock */
    int failed;         /* a write failed or changes were discarded: the
                           handle commits nothing any more */
    int header_dirty;
    int ext_dirty;
} cf__column_commit;

/* The version of the column the handle opened (column_version.c). */
typedef struct cf__column_version {
    cf__hstamp hstamp;  /* the header's mtime: as read at open, then as this
                           handle last committed it (hstamp.h) */
    int dirfd;          /* the column directory of the version this handle
                           opened, held open (column_version.h); -1 if none */
    int64_t opened_header_len; /* a writable handle of an existing column:
                           the length and CRC32C of the header it read at
                           open, -1 otherwise (cf__version_check) */
    uint32_t opened_header_crc;
} cf__column_version;

/* colfile-v1 as read, and whether it applies (column_open.c, and
 * column_meta.c for handles opened from the File catalog). */
typedef struct cf__column_ext {
    struct cf__deferred *deferred; /* read-only, opened from the File catalog:
                           colfile-v1 (and colfile-stats-v1) and the attribute
                           files as the catalog knows them, checked and
                           applied when first needed (cf__column_settle,
                           cf__column_settle_attrs); NULL once both are */
    cf__hstamp xstamp;  /* colfile-v1's mtime as read, for the text being
                           applied (cf__column_apply_ext) */
    int ext_state;      /* enum cf_ext_state: whether crc/stats as read apply */
    int ext_snapshot;   /* colfile-v1 comes from another handle's snapshot
                           (cf_column_open_meta), whose trust it carries */
    struct cf__recorded *recorded; /* colfile-v1 as cf_column_verify_blob
                           last parsed it, current or not (column_verify.c) */
} cf__column_ext;

/* The per-chunk statistics (column_stats.c). */
typedef struct cf__column_stat {
    cf__stats stats;    /* per-chunk statistics (data columns) */
    int stats_pending;  /* read-only: `stats` not parsed yet from stats_text
                           (cf__column_stats_need) */
    char *stats_text;   /* the statistics text as read at open, NULL if none */
    size_t stats_len;
    int stats_fetch;    /* a replica of a read-only handle: its statistics were
                           not in the snapshot; read colfile-v1 when first
                           needed (a writable replica: at open, its writes
                           need the column's CHUNK), trusted only if it is
                           still the file the exporter trusted (fetch_stamp:
                           its mtime) */
    cf__hstamp fetch_stamp;
    int stats_off;      /* writes skip statistics (they become unknown) */
    int reading_back;   /* cf_column_index_blob's scan: the fine level is fed (never by writes) */
    int stats_damaged;  /* the statistics text, from a current colfile-v1,
                           does not parse */
    unsigned char *stats_bad; /* NULL, or nfile flags: blob b has statistics
                           in that text that are inconsistent */
    struct cf__index_reader *index; /* colfile-index-v1 as read (column_index.c),
                           NULL until first used */
    int index_seen;     /* an index file is known to be there: a commit
                           that writes none removes it */
    struct cf__ccrc *ccrc; /* chunk CRC32C known to this handle
                           (column_index.c), NULL until any */
    int ccrc_nomem;     /* no memory to record that a blob's were lost:
                           every chunk CRC32C of the handle is unknown */
    /* a collective close by chunk owners (column_owners.c): */
    unsigned char *owner_valid; /* NULL, or nfile flags: blob b's statistics
                           are whole, as its owners hold them */
    unsigned char *owner_index; /* NULL, or the index's head and the levels
                           above the chunks, whose records the owners wrote */
    size_t owner_index_len;
    int64_t owner_index_size; /* the whole file's bytes */
    char *owner_file;   /* NULL, or the file the owners write: the staging
                           directory's index, or (a committed column) a
                           temporary beside colfile-index-v1 that the
                           commit renames over it */
} cf__column_stat;

/* The attributes (column_attrs.c). */
typedef struct cf__column_attrs {
    cf__attrset attrs;    /* merged view: attr, attr-v2, colfile-attrs */
    cf__attrset attrs_v1; /* what the legacy `attr` file holds */
    int attrs_unread;   /* read-only: attrs / attrs_v1 not loaded from the
                           files yet (cf__column_settle_attrs) */
} cf__column_attrs;

struct cf_column {
    /* What the column is and where (column.c, column_create.c, column_open.c). */
    char *name;
    char *path;         /* the column directory */
    char *dir;          /* where its files are now: a hidden staging directory
                           next to `path` until a new column is first
                           committed (published), then `path` */
    char *attr_dir;     /* where the attribute files live */
    int kind;
    int writable;
    int replica;        /* built by cf_column_open_meta: writes no metadata */
    int fresh;          /* created by this handle, nothing written yet */
    int durable;        /* fsync before each commit (no CF_OPEN_NODURABLE) */
    int verify;         /* reads check the CRC32C of blobs they cover whole */
    int no_mmap;        /* CF_OPEN_NOMMAP: reads never map blobs (readmap.h) */
    int digest_helper;  /* large writes digest on a helper thread (placement.c) */
    cf__header h;
    char dtype_token[CF_DTYPE_MAX];
    int64_t rowbytes;   /* nmemb * width */
    int64_t size;
    int64_t *first_row; /* nfile + 1 cumulative row counts */

    cf__column_io io;
    cf__column_sums sums;
    cf__column_commit commit;
    cf__column_version ver;
    cf__column_ext ext;
    cf__column_stat stat;
    cf__column_attrs attr;
};

/* 1 while the column's files live in a staging directory (not published). */
#define CF__STAGED(c) (strcmp((c)->dir, (c)->path) != 0)

#endif
