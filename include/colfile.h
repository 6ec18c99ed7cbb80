/* colfile.h - the public C API of libcolfile.
 *
 * colfile stores tables of N rows x M columns as a directory tree in the
 * bigfile format (docs/format.md): a File is a directory, a Column is a
 * directory holding a text `header`, a text `attr-v2` and raw data blobs
 * `000000`, `000001`, ...  This header is the manual: each function states
 * its contract above its declaration.  It holds what a program reading and
 * writing Files calls; colfile_mpi.h adds collective I/O over MPI, and
 * colfile_binding.h what only the layers built on the core need (the MPI
 * layer, language bindings).
 *
 * Conventions
 * -----------
 * - Handles (cf_file, cf_column) are opaque; use the accessors.
 * - Every function that can fail returns 0 on success or a negative CF_E*
 *   code (colfile_errors.h) and, when `err` is not NULL, fills *err with the
 *   code and a message naming the path and the problem.  On failure no
 *   output argument is changed unless documented.  A size that such a
 *   function computes comes through an output argument, never as the
 *   return value.
 * - Functions that take no `err` cannot fail on a valid handle and
 *   arguments in the documented range; accessors of a number return it
 *   directly (out of range: -1, never a count).
 * - Sizes, row counts and offsets are int64_t everywhere.
 * - No global mutable state: distinct handles may be used from distinct
 *   threads at once.  One handle must not be used by two threads at once.
 * - dtype strings are numpy-style: byte order `<` `>` `|` `=` (optional),
 *   kind i u f c b S, and the byte width: "<f8", ">i4", "b1", "S7".
 */
#ifndef COLFILE_H
#define COLFILE_H

#include <stddef.h>
#include <stdint.h>

#include "colfile_errors.h"

/* Symbols exported from the shared library (everything else is hidden). */
#if defined(__GNUC__)
#define CF_API __attribute__((visibility("default")))
#else
#define CF_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define CF_VERSION_MAJOR 0
#define CF_VERSION_MINOR 1
#define CF_VERSION_PATCH 0

/* "0.1.0": the version of the library actually linked. */
CF_API const char *cf_version(void);

/* ------------------------------------------------------------------ */
/* Errors                                                               */
/* ------------------------------------------------------------------ */

#define CF_ERROR_MESSAGE_MAX 1024

/* The caller-owned error record.  Zero-initialise it, or not: every failing
 * call overwrites all fields.  Successful calls leave it untouched. */
typedef struct cf_error {
    int code;                 /* a CF_E* value (negative) */
    int source_line;          /* line in the libcolfile source that failed */
    const char *source_file;  /* static string, never freed */
    char message[CF_ERROR_MESSAGE_MAX]; /* "path: what went wrong" */
} cf_error;

/* ------------------------------------------------------------------ */
/* dtypes                                                               */
/* ------------------------------------------------------------------ */

/* The longest dtype token including its NUL: "<c16" fits, "<S9999999" fits. */
#define CF_DTYPE_MAX 16

/* Normalise a dtype string for storage in a header: a missing, `|` or `=`
 * byte order becomes this machine's order.  Fails with CF_EDTYPE for kinds
 * or widths colfile does not store: i1 i2 i4 i8 u1 u2 u4 u8 f2 f4 f8 c8
 * c16 b1 and S1..S2147483647 are allowed (numpy's '?' means b1).  Columns
 * take strings up to S16 only: bigfile 0.1.52 cannot reopen wider ones. */
CF_API int cf_dtype_normalize(const char *dtype, char out[CF_DTYPE_MAX], cf_error *err);

/* The byte width of one element of `dtype` into *itemsize ("<f8": 8,
 * "S12": 12).  CF_EDTYPE, naming the dtype, for one cf_dtype_normalize
 * refuses (*itemsize unchanged); CF_EARG for a NULL itemsize. */
CF_API int cf_dtype_itemsize(const char *dtype, int64_t *itemsize, cf_error *err);

/* 1 if values of dtype `from` can be converted to dtype `to` (numpy
 * `astype(casting='unsafe')` semantics between numeric kinds i u f c b, and
 * S to S of any width); 0 if not or if either dtype is invalid. */
CF_API int cf_dtype_can_cast(const char *from, const char *to);

/* Convert `count` elements from `src` (dtype `from`, `src_stride` bytes
 * apart) to `dst` (dtype `to`, `dst_stride` bytes apart).  Strides may be
 * negative.  Byte orders are honoured on both sides; complex values keep
 * numpy's layout (real then imaginary, each in the stated byte order).
 * Returns 0, CF_EDTYPE, CF_ECAST, or CF_EARG (negative count, NULL buffer
 * with count > 0). */
CF_API int cf_dtype_convert(void *dst, int64_t dst_stride, const char *to,
                     const void *src, int64_t src_stride, const char *from,
                     int64_t count, cf_error *err);

/* ------------------------------------------------------------------ */
/* Files                                                                */
/* ------------------------------------------------------------------ */

typedef struct cf_file cf_file;

/* Flags for cf_file_open.  Exactly one of READ or WRITE. */
enum cf_open_flags {
    CF_OPEN_READ     = 0x0,  /* read only; the directory must exist */
    CF_OPEN_WRITE    = 0x1,  /* read and write */
    CF_OPEN_CREATE   = 0x2,  /* with WRITE: make the directory (mkdir -p) */
    CF_OPEN_EXCL     = 0x4,  /* with CREATE: fail with CF_EEXIST if it exists */
    CF_OPEN_TRUNCATE = 0x8,  /* with WRITE: empty an existing File first; refuses
                                (CF_ENOTFILE) if the directory holds anything that
                                is not a column, group or attribute file, and
                                (CF_EBUSY, removing nothing) while any writer
                                holds a lock in it; takes every writer lock of
                                the File, then moves each entry into a hidden
                                trash directory and deletes that */
    CF_OPEN_NOCHECK  = 0x10, /* touch nothing: another process has opened (or
                                created) the File and vouches for it; used by
                                the parallel layers on all but one rank.  Not
                                with CREATE, EXCL or TRUNCATE. */
    CF_OPEN_NODURABLE = 0x20,/* skip every fsync: commits stay atomic against
                                a crash of the process, but a power loss or
                                kernel crash may lose committed columns (for
                                scratch data; docs/reliability.md) */
    CF_OPEN_TORN_OK  = 0x40, /* open columns marked torn by an interrupted
                                in-place update (colfile-torn) instead of
                                failing with CF_ETORN; cf_column_torn tells */
    CF_OPEN_VERIFY   = 0x80, /* reads check the CRC32C of every blob they
                                cover whole, and of every chunk they cover
                                whole whose CRC32C the chunk index records
                                (cf_column_set_verify) */
    CF_OPEN_NOLOCK   = 0x100 /* writers share the lock (.colfile-lock)
                                instead of holding it alone, so several such
                                handles may write one column as bigfile
                                allows; exclusive writers still see them
                                (colfile.compat.bigfile) */,
    CF_OPEN_NOLOCKING = 0x200 /* take no writer lock at all, and make no lock
                                call (for file systems without locks, such as
                                Lustre mounted noflock): the caller promises
                                that one process at a time writes the File.
                                Nothing then detects a second writer, and
                                cf_file_cleanup cannot see whether a writer
                                is alive from its locks (docs/reliability.md,
                                "Locking on parallel file systems") */,
    CF_OPEN_NOMMAP   = 0x400 /* reads copy every byte with pread, never out of
                                a memory map of the page cache.  Use it where
                                another program may cut a blob short while
                                it is read (a tool rewriting blobs in place
                                with O_TRUNC): a read copying out of a map of
                                the cut range gets SIGBUS, where pread gives
                                CF_ESHORT (docs/reliability.md).  Large reads
                                of cached data are then slower. */,
    /* Where a write computes its byte sums, CRC32C and statistics (the
     * digest).  Neither flag (auto): on a helper thread beside the writing
     * one when a core is free for it, i.e. when the process may run on at
     * least 2 CPUs and the ranks of the node (the MPI layers count them;
     * serially 1) may run on at least 2 CPUs each; otherwise on the writing
     * thread, piece by piece after its copy.  The file's bytes are the same
     * either way (docs/performance.md, "Design choices"). */
    CF_OPEN_DIGEST_INLINE = 0x800, /* always on the writing thread */
    CF_OPEN_DIGEST_HELPER = 0x1000 /* on a helper thread for large writes
                                      (not with DIGEST_INLINE: CF_EARG) */
};

/* Open the File at `path` (a directory).  On success *out owns a new handle
 * to be released with cf_file_close.  Fails with CF_ENOENT if it does not
 * exist (without CREATE), CF_ENOTFILE if the path is not a directory,
 * CF_EEXIST with EXCL, CF_ENAME (nothing made) if the path is longer than
 * PATH_MAX or has a component over 255 bytes, CF_EIO on other system
 * errors.  The path may be, or pass through, a symbolic link. */
CF_API int cf_file_open(cf_file **out, const char *path, int flags, cf_error *err);

/* Release the handle.  Open columns stay valid (they hold their own paths and
 * directories).
 * The writer-lock files (.colfile-lock) of the directories this handle
 * wrote columns in are removed where no writer holds a lock in them any
 * more (docs/format.md 8.3).  Accepts NULL.  Never fails. */
CF_API void cf_file_close(cf_file *f);

/* The path the File was opened with (owned by the handle). */
CF_API const char *cf_file_path(const cf_file *f);

/* 1 if opened with CF_OPEN_WRITE. */
CF_API int cf_file_writable(const cf_file *f);

/* The cf_open_flags the File was opened with. */
CF_API int cf_file_flags(const cf_file *f);

/* Flags for cf_file_cleanup (0: remove what is found). */
enum cf_cleanup_flags {
    CF_CLEANUP_DRY_RUN = 0x1, /* only report what would be done */
    CF_CLEANUP_FORCE   = 0x2  /* also remove staging directories whose writer
                                 cannot be proved gone (another host's, or any
                                 while the File is open CF_OPEN_NOLOCKING) and,
                                 with locking off, every other leftover: only
                                 when no writer of the File is running */
};

/* Find what interrupted writers left in the File and (unless
 * CF_CLEANUP_DRY_RUN is in flags) remove it: staging directories of creates that never committed
 * (.colfile-stage.*), old versions moved aside by a commit (.colfile-old.*;
 * restored when the new version never arrived), what an interrupted removal
 * moved out of the File (.colfile-trash.*), the blobs and other format
 * files of a directory whose header is gone (under that name's writer
 * lock; other files stay), temporary metadata files
 * (.*.tmp.*) and lock files (.colfile-lock, .colfile-lock.*; an idle
 * .colfile-lock is removed but not reported, as it tells of no interrupted
 * work).  Anything whose writer still holds its lock is left alone.  A
 * staging directory also needs proof from its owner record (host, boot,
 * process and its start time: docs/format.md 8.3) that its writer is gone,
 * as locks may be node-local: one of a writer on another host is reported
 * ("... cannot prove gone: left") and stays unless CF_CLEANUP_FORCE;
 * without a record (older writers) the free lock decides.  With the File
 * open CF_OPEN_NOLOCKING no lock is looked at and only what the owner
 * records prove gone is removed, unless forced.  *lines
 * receives one line per item ("<path>: <what it is>: removed"), to be freed
 * with cf_names_free.  Removal failures are not errors (the item is
 * reported and stays).  CF_EREADONLY without dry_run on a read-only File,
 * CF_ENOMEM. */
CF_API int cf_file_cleanup(cf_file *f, int flags, char ***lines, int64_t *count, cf_error *err);

/* The kind of file system holding the File, from statfs(2): "ext4", "xfs",
 * "btrfs", "tmpfs", "nfs", "lustre", "gpfs", "cifs", "beegfs", "fuse", ...,
 * "other" or "unknown".  On "nfs" the writer lock (colfile-lock) needs the
 * server's lock manager, and a commit is atomic for readers on other clients
 * only after their attribute cache expires (docs/reliability.md).  A static
 * string; never fails. */
CF_API const char *cf_file_fs_type(const cf_file *f);

/* How far the writer locks of the File reach, from the mount table
 * (/proc/self/mountinfo) entry of its directory: "cluster" (every client
 * sees them; also local file systems), "node" (node-local: Lustre mounted
 * localflock, NFS nolock or local_lock=all|flock|posix, BeeGFS: no
 * exclusion between nodes), "none" (lock calls fail: Lustre without flock
 * or localflock; write with CF_OPEN_NOLOCKING) or "unknown" (no mount
 * table).  docs/reliability.md, "Locking on parallel file systems".  A
 * static string; never fails. */
CF_API const char *cf_file_lock_scope(const cf_file *f);

/* List the columns below the File, depth first, bigfile's rules: names
 * starting with `.` are skipped; a directory holding an entry named `header`
 * is a column and is not descended into; other directories are descended.
 * Symbolic links are neither listed nor entered (docs/format.md 2.2).
 * The result is sorted (strcmp).  On success *names is a malloc'd array of
 * *count malloc'd strings; free it with cf_names_free. */
CF_API int cf_file_list(cf_file *f, char ***names, int64_t *count, cf_error *err);

/* Rebuild the File's catalog (docs/format.md, "The catalog"): hidden files
 * (an index and one shard per group or range of columns) holding every
 * column's metadata files with the stamps (inode, size, mtime, ctime) that
 * prove them current, which cf_file_list and cf_column_open use instead of
 * reading the column directories wherever a fresh lstat of everything an
 * entry depends on matches its stamps.  Scans the File (reusing the entries
 * of the catalog loaded at open that still hold), then atomically replaces
 * the shards that changed and the index; removes the index if the File
 * changed during the scan.  The catalog is a cache: callers may ignore a
 * failure (CF_EREADONLY on a read-only handle; CF_EIO or CF_ENOENT where it
 * cannot be written; CF_ERANGE where the index would pass the 1 GiB a
 * reader accepts: the index is removed and listings scan; CF_ENOMEM).  Durable unless the File was
 * opened with CF_OPEN_NODURABLE.  The handle keeps using the catalog it
 * loaded at open.  Idle writer-lock files are removed first, as
 * cf_file_close does (removing one later would change a directory the
 * catalog stamps). */
CF_API int cf_file_catalog_update(cf_file *f, cf_error *err);

/* 1 once cf_file_list (or cf_file_column_attrs, which lists) of this handle
 * found the File's columns not to be those its catalog lists although the
 * File's generation is the one the catalog recorded (docs/format.md 8.5):
 * a writer that does not record generations (bigfile, a copy made by hand
 * or with cp -r, colfile before generations) changed the listing.  That
 * listing was read from the directories and is right; but on file systems
 * whose directory timestamps lag behind other clients (Lustre, GPFS,
 * BeeGFS, NFS) a later reader may still take some stale entries of it for
 * current (docs/format.md 8.5): rebuild it (`colfile index`, cf_file_catalog_update) or remove
 * .colfile-catalog/.  0 otherwise, and for NULL. */
CF_API int cf_file_catalog_stale(const cf_file *f);

/* Free a list returned by cf_file_list or cf_column_attr_names. NULL ok. */
CF_API void cf_names_free(char **names, int64_t count);

/* Remove the column `name` (its header, attribute files, extension files and
 * blobs 000000..NFILE-1, then the directory if nothing else is in it).
 * Takes the column's writer lock first: CF_EBUSY, removing nothing, while
 * another handle (of this process too) or process writes it.  The column
 * disappears in one rename (of its directory, or of its header when
 * sub-columns or foreign files inside it are kept) to a hidden
 * .colfile-trash.* name, which is then deleted; a crash leaves the column
 * whole or absent, and `colfile repair` removes the leftover.  CF_ENOENT
 * if it is not a column (a group: cf_file_remove_group); CF_ENAME,
 * removing nothing, if a symbolic link lies on the way or among the
 * column's files (docs/format.md 2.2): no link is ever followed. */
CF_API int cf_file_remove(cf_file *f, const char *name, cf_error *err);

/* Remove the group (or column) `name` and everything below it, as rm -r.
 * Every column below must be free: the writer locks of every directory of
 * the tree are taken first (CF_EBUSY naming the busy column, nothing
 * removed); then one rename takes the whole tree out of the namespace and
 * it is deleted.  CF_ENOTFILE, removing nothing, if anything in it is not
 * a colfile/bigfile file (a user's file, a symbolic link); CF_ENOENT if
 * there is no such directory. */
CF_API int cf_file_remove_group(cf_file *f, const char *name, cf_error *err);

/* Rename column `src` to `dst` within the File, in one rename(2) of its
 * directory, with the writer locks of both names held (docs/format.md
 * 8.3): CF_EBUSY, renaming nothing, if a writer holds either.  `dst` may
 * lie in another group; groups on its way are made.  CF_EEXIST if `dst`
 * exists (a column, a group or any file), CF_ENOENT if `src` is no
 * column, CF_EKIND if `src` is a group, names attributes, or holds columns
 * or other files below it; CF_ENAME for a name that fails cf_name_check
 * or leads through a symbolic link; CF_EARG for `dst` equal to or below
 * `src`; CF_EREADONLY for a File opened read-only.  A crash leaves the
 * column whole under one of the two names. */
CF_API int cf_file_rename(cf_file *f, const char *src, const char *dst, cf_error *err);

/* Check a column or group name.  Returns 0 if `name` is a relative path of
 * components that are not empty, `.` or `..` (a final `/.` naming a group's
 * attributes, and the name "." for the File's own, are allowed), and holds
 * no NUL, newline, carriage return, tab or space; otherwise CF_ENAME with a
 * message saying which rule it breaks. */
CF_API int cf_name_check(const char *name, cf_error *err);

/* ------------------------------------------------------------------ */
/* Columns                                                              */
/* ------------------------------------------------------------------ */

typedef struct cf_column cf_column;

/* What a column handle refers to. */
enum cf_column_kind {
    CF_KIND_DATA        = 0, /* header + blobs */
    CF_KIND_HEADER_ONLY = 1, /* header with NMEMB 0, NFILE 0 (a metadata block) */
    CF_KIND_ATTRS_ONLY  = 2  /* "." or "group/.": only attribute files */
};

/* Create (or replace) a column and open it for writing.
 * `dtype` NULL makes a header-only block (DTYPE <i8, NMEMB 0, NFILE 0) or,
 * for "." and names ending in "/.", an attribute-only block.
 * Rows are spread over `nfile` blobs as bigfile does:
 * rows_i = (i+1)*size/nfile - i*size/nfile.  nfile 0 requires size 0.
 * The new column is written in a hidden staging directory and published by
 * its first commit (docs/reliability.md).  A column of that name is
 * REPLACED silently, as bigfile does (cf_column_create_ex without
 * CF_CREATE_REPLACE refuses instead).  CF_EEXIST if the name lies below a
 * column (a column cannot hold columns: nothing would list them) or names
 * a group holding other columns.  Nothing is created when the name, dtype
 * or sizes are rejected (CF_ENAME, CF_EDTYPE, CF_EARG).
 * Rows hold no data until written: reading a row past the last one
 * written in its blob fails with CF_ESHORT naming the rows (they have no
 * bytes on disk, as in a blob cut short), while rows skipped before a
 * written one read as zeros (cf_column_blob_rows_held; docs/writing.md). */
CF_API int cf_column_create(cf_column **out, cf_file *f, const char *name,
                     const char *dtype, int64_t nmemb, int64_t size,
                     int64_t nfile, cf_error *err);

/* As cf_column_create, with the rows of each of the `nfile` blobs given. */
CF_API int cf_column_create_blobs(cf_column **out, cf_file *f, const char *name,
                           const char *dtype, int64_t nmemb, int64_t nfile,
                           const int64_t *blob_rows, cf_error *err);

/* Flags of cf_column_create_ex. */
enum cf_create_flags {
    CF_CREATE_REPLACE = 1 /* replace a column of that name (else CF_EEXIST) */
};

/* As cf_column_create_blobs, but a column of that name (or a group: a
 * directory without a header) is replaced only with CF_CREATE_REPLACE in
 * `flags`; without it CF_EEXIST names it and nothing changes.  The check is made under the column's writer lock,
 * so of two processes creating one name, one gets CF_EEXIST (or CF_EBUSY
 * while the other still writes it), never a silent replace.  CF_EARG for
 * unknown flags. */
CF_API int cf_column_create_ex(cf_column **out, cf_file *f, const char *name,
                               const char *dtype, int64_t nmemb, int64_t nfile,
                               const int64_t *blob_rows, unsigned flags, cf_error *err);

/* Open an existing column (or "." / "group/." for attributes).  Writable if
 * the File is.  Reads the header, the attribute files (legacy `attr`, then
 * `attr-v2`, then colfile's own) and the extension file.  CF_ENOENT if the
 * column has no header (attribute-only names need only the directory),
 * CF_EFORMAT naming file and line for damaged metadata.  A read-only handle
 * of a column reads its attribute files when its attributes are first used
 * (cf_column_attr_get, cf_column_attr_names), which then give the errors of
 * a damaged or unreadable attribute file (each use tries again).  CF_ENAME, here and
 * in cf_column_create, if a component of the name below the File, or a file
 * colfile would read or write in the column's directory, is a symbolic link
 * (docs/format.md 2.2; the message says where it leads), or if the path
 * would not fit PATH_MAX.
 *
 * The handle reads the version of the column it opened, whatever other
 * processes do meanwhile: it holds the column's directory open (one file
 * descriptor for the handle's life, besides the one of the blob it read
 * last) and looks every file up below it.  A replacement published at the
 * name, or an rm, does not change what it reads; once a file it needs is
 * gone with the old version, reads fail with CF_EREPLACED naming the
 * column (reopen it), never with rows of two versions or a false
 * CF_ECHECKSUM.  A writable handle whose column was replaced or removed
 * before its first change fails that change with CF_EREPLACED and writes
 * nothing; one whose column another writer committed a change to in that
 * time fails it with CF_EBUSY (except with CF_OPEN_NOLOCK)
 * (docs/reliability.md, "Readers see one version"). */
CF_API int cf_column_open(cf_column **out, cf_file *f, const char *name, cf_error *err);

/* Commit pending metadata (header checksums, extension file) to disk.
 * A no-op for read-only handles and clean handles. */
CF_API int cf_column_flush(cf_column *c, cf_error *err);

/* Flush and release.  The handle is freed even when the flush fails (the
 * error is returned).  Accepts NULL. */
CF_API int cf_column_close(cf_column *c, cf_error *err);

/* Accessors.  Strings are owned by the handle. */
CF_API const char *cf_column_name(const cf_column *c);
CF_API const char *cf_column_path(const cf_column *c);   /* directory on disk */
CF_API const char *cf_column_dtype(const cf_column *c);  /* normalised, e.g. "<f8" */
CF_API int cf_column_kind(const cf_column *c);
CF_API int cf_column_writable(const cf_column *c);
CF_API int64_t cf_column_itemsize(const cf_column *c);   /* bytes of one element */
CF_API int64_t cf_column_nmemb(const cf_column *c);      /* elements per row */
CF_API int64_t cf_column_size(const cf_column *c);       /* rows */
CF_API int64_t cf_column_nfile(const cf_column *c);      /* blobs */
/* Rows held by blob i (0 <= i < nfile), or -1 if i is out of range. */
CF_API int64_t cf_column_blob_rows(const cf_column *c, int64_t i);
/* *rows receives the rows of blob i whose bytes its file holds, counted
 * from the blob's first row: cf_column_blob_rows(c, i) when the blob is
 * complete, fewer when rows
 * after these were never written (or the file was cut short: the two look
 * the same), 0 for a missing file.  A read of the other rows fails with
 * CF_ESHORT.  Looks at the file as it is now (fstat).  CF_ERANGE if i is
 * out of range, CF_EKIND for columns without data, CF_EIO (*rows then
 * unchanged). */
CF_API int cf_column_blob_rows_held(cf_column *c, int64_t i, int64_t *rows, cf_error *err);

/* Read rows [start, start+count) into `buf`.
 * `buf` points at row 0, element 0 of the destination; element j of row r
 * is at buf + r*row_stride + j*elem_stride (bytes, may be negative).  The
 * buffer holds cf_column_nmemb() elements per row of dtype `buf_dtype`
 * (NULL: the column's dtype); values are converted as cf_dtype_convert
 * does.  CF_ERANGE if the rows are outside [0, size); CF_ESHORT or CF_ENOENT
 * naming the blob if data is missing on disk; CF_EREPLACED if another
 * process replaced or removed the column since the handle opened it and
 * the blob is gone with that version (cf_column_open), or, on a verifying
 * handle, if a blob's CRC32C differs because another process committed an
 * append or an in-place update to the column since the handle opened it
 * (CF_ETORN while that update is still under way); CF_ECHECKSUM only
 * when the column is still the one opened.  Nothing is allocated in
 * proportion to count. */
CF_API int cf_column_read(cf_column *c, int64_t start, int64_t count,
                   void *buf, const char *buf_dtype,
                   int64_t row_stride, int64_t elem_stride, cf_error *err);

/* Read the `count` rows listed in `rows` (each in [0, size), in any order,
 * repeats allowed) into consecutive destination rows, laid out as in
 * cf_column_read.  Sorted lists are read in windows of nearby rows; a list
 * out of order is gathered as listed when the column is in the page cache,
 * else sorted first (O(count log count) time, 32 bytes of temporary memory
 * per row: CF_ENOMEM).  CF_ERANGE if a row is out of range. */
CF_API int cf_column_read_rows(cf_column *c, const int64_t *rows, int64_t count,
                        void *buf, const char *buf_dtype,
                        int64_t row_stride, int64_t elem_stride, cf_error *err);

/* Read the `count` rows start, start+step, ..., start+(count-1)*step
 * (step >= 1) into consecutive destination rows, laid out as in
 * cf_column_read: cf_column_read_rows of that list, without the list.
 * CF_EARG if step < 1, CF_ERANGE if a row is outside [0, size). */
CF_API int cf_column_read_step(cf_column *c, int64_t start, int64_t step, int64_t count,
                        void *buf, const char *buf_dtype,
                        int64_t row_stride, int64_t elem_stride, cf_error *err);

/* Write rows [start, start+count) from `buf`, laid out as in
 * cf_column_read, converting from `buf_dtype` (NULL: the column's dtype) to
 * the column's dtype.  The caller's buffer is never modified.  The bigfile
 * checksums and the CRC32C are updated from the bytes as stored; the header
 * is committed by cf_column_flush/close.  CF_EREADONLY, CF_ERANGE, CF_ECAST. */
CF_API int cf_column_write(cf_column *c, int64_t start, int64_t count,
                    const void *buf, const char *buf_dtype,
                    int64_t row_stride, int64_t elem_stride, cf_error *err);

/* Write the `count` rows listed in `rows` (strictly increasing, each in
 * [0, size)) from consecutive source rows laid out as in cf_column_read.
 * Runs of consecutive rows are written as single ranges.  CF_EARG if the
 * list is not strictly increasing, CF_ERANGE if a row is out of range. */
CF_API int cf_column_write_rows(cf_column *c, const int64_t *rows, int64_t count,
                         const void *buf, const char *buf_dtype,
                         int64_t row_stride, int64_t elem_stride, cf_error *err);

/* Add `nfile` new blobs after the existing ones holding `rows` rows split
 * as in cf_column_create (nfile >= 1, or nfile 0 with rows 0).  Existing
 * blobs and their header lines are untouched; the header is rewritten
 * before this returns.  The new rows start at the old size. */
CF_API int cf_column_grow(cf_column *c, int64_t rows, int64_t nfile, cf_error *err);

/* Release memory returned by libcolfile (cf_column_attr_get_string, and
 * the buffers of colfile_binding.h).  Accepts NULL. */
CF_API void cf_free(void *p);

/* Verification of one blob against the metadata (for `colfile check`). */
enum cf_blob_status {
    CF_BLOB_OK            = 0,
    CF_BLOB_MISSING       = 0x01, /* file absent while rows > 0 */
    CF_BLOB_SHORT         = 0x02, /* fewer bytes than rows say */
    CF_BLOB_LONG          = 0x04, /* more bytes than rows say (ignored data) */
    CF_BLOB_SUM_MISMATCH  = 0x08, /* bigfile byte sum differs */
    CF_BLOB_CRC_MISMATCH  = 0x10, /* CRC32C differs */
    CF_BLOB_CRC_UNKNOWN   = 0x20, /* no current CRC32C recorded */
    CF_BLOB_STATS_MISMATCH = 0x40, /* recorded statistics disagree with the data */
    CF_BLOB_STATS_DAMAGED = 0x80  /* recorded statistics are inconsistent (min above
                                     max, counts that do not fit the rows, ...): unusable */
};

/* Read blob i whole and compare it with the header and extension file.
 * *status receives CF_BLOB_* bits.  Returns an error only for failures of
 * the check itself (CF_EIO, CF_EARG), not for a damaged blob; a blob gone
 * because another process replaced or removed the column since the handle
 * opened it is CF_EREPLACED, not CF_BLOB_MISSING; so is a blob that
 * disagrees with the metadata read at open after another process changed
 * the column since (committed an append or an in-place update, or is
 * updating it in place): reopen the column and check it again.  A blob
 * whose byte sum differs while no current CRC32C is known is compared with
 * the CRC32C colfile-v1 records for its rows and byte sum, current or not:
 * a match clears CF_BLOB_CRC_UNKNOWN (docs/format.md 8.1, "Checking"). */
CF_API int cf_column_verify_blob(cf_column *c, int64_t i, unsigned *status,
                          cf_error *err);

/* Whether the CRC32C values and statistics recorded for a column (in its
 * `colfile-v1`) apply to its data: cf_column_ext_state.  Only CURRENT lets
 * reads, checks and queries use them; in every other state they are all
 * unknown, which never changes an answer (docs/format.md 8.1). */
enum cf_ext_state {
    CF_EXT_CURRENT  = 0, /* recorded for the header as it is now */
    CF_EXT_ABSENT   = 1, /* none recorded (written by another tool) */
    CF_EXT_UNBOUND  = 2, /* recorded by an older colfile (colfile-v1 has
                            no checksum line) */
    CF_EXT_STALE    = 3, /* the header changed since they were recorded (a
                            write by another tool, a copy that did not keep
                            modification times, or a file system that cannot
                            set them): `colfile index` */
    CF_EXT_DAMAGED  = 4, /* colfile-v1 fails its own checksum or does not
                            parse: `colfile repair` */
    CF_EXT_UPDATING = 5, /* another process is updating rows in place */
    CF_EXT_TORN     = 6  /* an in-place update was interrupted (colfile-torn) */
};

/* *state receives a CF_EXT_* value (CF_EXT_ABSENT for columns without
 * data).  A handle built by cf_column_open_meta (colfile_binding.h)
 * trusts what the handle that exported its snapshot trusted, and says
 * CF_EXT_CURRENT (or CF_EXT_ABSENT when the snapshot has no colfile-v1):
 * ask the exporting handle for the state of the files.  CF_ENOMEM. */
CF_API int cf_column_ext_state(cf_column *c, int *state, cf_error *err);

/* ------------------------------------------------------------------ */
/* Attributes                                                           */
/* ------------------------------------------------------------------ */

/* Attributes belong to a column, a group or the File: open "group/." or
 * "." (cf_column_open) for those of a group or of the File.  Setting one
 * writes the attribute files before returning. */

/* Set attribute `name` to `nmemb` elements of `dtype` (kinds i u f c b S,
 * and `a1`: one byte of a byte string per element, as Python stores a str;
 * cf_column_attr_set_string does that for a C string) from `data`, and
 * write the attribute files atomically before returning (on a new column
 * not yet committed, its first commit writes them).  Every kind needs a
 * width ("a" alone is CF_EDTYPE).  nmemb 0 is allowed.
 * CF_ENAME for names with space, tab, newline, NUL or empty; CF_EDTYPE. */
CF_API int cf_column_attr_set(cf_column *c, const char *name, const char *dtype,
                       int64_t nmemb, const void *data, cf_error *err);

/* Look up attribute `name`.  On success *dtype points at its normalised
 * dtype token, *nmemb gets the element count and *data the raw bytes (in
 * the stored byte order), all owned by the handle and valid until the next
 * attribute change on it.  CF_ENOENT if absent. */
CF_API int cf_column_attr_get(cf_column *c, const char *name, const char **dtype,
                       int64_t *nmemb, const void **data, cf_error *err);

/* Set attribute `name` to the C string `value`: dtype <a1, one element
 * per byte, no terminator (what Python stores for a str).  The empty
 * string is stored as one NUL byte (bigfile cannot read an attribute of
 * no elements).  Errors as cf_column_attr_set. */
CF_API int cf_column_attr_set_string(cf_column *c, const char *name, const char *value, cf_error *err);

/* Attribute `name` as one C string in a new buffer (*value, release with
 * cf_free); *len (if not NULL) gets its length without the terminator.
 * Trailing NUL bytes are dropped.  Works for kind `a` (any count), S1 of
 * any count (the characters of one string) and one element of S<width>.
 * CF_EDTYPE for any other dtype (a number, or several S<width> strings:
 * read those with cf_column_attr_get); CF_ENOENT if absent; CF_ENOMEM. */
CF_API int cf_column_attr_get_string(cf_column *c, const char *name, char **value, size_t *len,
                                     cf_error *err);

/* Attribute `name` converted to `dtype` (e.g. "f8": machine byte order)
 * into `buf`, which has room for `capacity` elements, as cf_dtype_convert
 * does (numbers between numeric kinds, byte strings to S of any width).
 * With nmemb NULL the attribute must have exactly `capacity` elements
 * (a scalar: capacity 1); otherwise at most `capacity`, and *nmemb gets
 * the count.  CF_ENOENT if absent, CF_ERANGE for a count that does not
 * fit, CF_ECAST for a conversion that does not exist (a string to f8),
 * CF_EDTYPE for a bad `dtype`; the message names the attribute. */
CF_API int cf_column_attr_get_as(cf_column *c, const char *name, const char *dtype, void *buf,
                                 int64_t capacity, int64_t *nmemb, cf_error *err);

/* Delete attribute `name` from every attribute file.  CF_ENOENT if absent. */
CF_API int cf_column_attr_delete(cf_column *c, const char *name, cf_error *err);

/* The sorted attribute names; free with cf_names_free. */
CF_API int cf_column_attr_names(cf_column *c, char ***names, int64_t *count,
                         cf_error *err);

/* ------------------------------------------------------------------ */
/* Data characteristics: per-chunk statistics                           */
/* ------------------------------------------------------------------ */
/* Every write computes, in the same pass as the checksums, for each chunk
 * of rows (chunks restart at every blob) and each vector component: the
 * count of values, the NaN count, min, max and sum.  They are committed
 * with the header, in the `colfile-v1` file, and trusted only while that
 * file passes its own checksum and records the stamp of the header as it is
 * now, and no in-place update is in progress or was interrupted
 * (cf_column_ext_state; docs/format.md 8.1, 8.4). */

typedef struct cf_chunk_stats {
    int64_t blob;        /* the blob holding the chunk */
    int64_t first_row;   /* its first row, counted in the column */
    int64_t rows;        /* its rows */
    int valid;           /* 1 if current; 0: unknown (never computed, stale) */
    int ordered;         /* 1 if min/max exist (not complex, not S) */
    int64_t count;       /* values (rows), NaNs included */
    int64_t nan_count;   /* NaN values (complex: either part) */
    double min, max;     /* over non-NaN values, rounded outward to double
                            (so integer ranges are never understated); NaN
                            if not ordered or no non-NaN value */
    double sum;          /* exact sum of the non-NaN values (bool: true values), correctly rounded */
} cf_chunk_stats;

/* Rows per chunk (0 for columns without data). */
CF_API int64_t cf_column_chunk_rows(const cf_column *c);

/* Choose rows per chunk for a column just created, before anything is
 * written to it.  CF_EARG if rows < 1 or data was written already. */
CF_API int cf_column_set_chunk_rows(cf_column *c, int64_t rows, cf_error *err);

/* Switch the statistics computation of this handle's writes on (the
 * default) or off.  Blobs written while it is off get no statistics (they
 * are recorded as unknown and never used to skip data) until `colfile
 * index` or a later whole write computes them.  For measuring what they
 * cost, and for scratch data nobody will query.  Accepts NULL. */
CF_API void cf_column_set_statistics(cf_column *c, int enabled);

/* 1 if the column was marked torn (colfile-torn) when opened: an in-place
 * update was interrupted, so rows may mix old and new values and the
 * checksums may not match.  Only with CF_OPEN_TORN_OK; otherwise opening
 * such a column fails with CF_ETORN. */
CF_API int cf_column_torn(const cf_column *c);

/* Switch read verification on (1) or off (0) for this handle (initially on
 * with CF_OPEN_VERIFY): every blob a read covers whole, and whose CRC32C is
 * recorded, is checked as its bytes pass; a mismatch fails the read with
 * CF_ECHECKSUM naming the blob and its rows (the buffer then holds the bad
 * bytes).  A read that covers part of a blob checks each chunk it covers
 * whole whose CRC32C is known (the chunk index of large columns, or this
 * handle's own writes; cf_column_chunk_crc32c), failing with CF_ECHECKSUM
 * naming the chunk and its rows; the rest of it is not checked.  Accepts
 * NULL. */
CF_API void cf_column_set_verify(cf_column *c, int enabled);
CF_API int cf_column_verify_enabled(const cf_column *c);

/* What cf_column_repair changed (bits of *fixed). */
enum cf_repair_bits {
    CF_REPAIR_SUMS      = 0x01, /* bigfile byte sums recomputed from the data */
    CF_REPAIR_CRC       = 0x02, /* CRC32C values that were wrong or unknown */
    CF_REPAIR_TRUNCATED = 0x04, /* bytes past a blob's rows cut off */
    CF_REPAIR_STRAY     = 0x08, /* blob files numbered >= NFILE removed */
    CF_REPAIR_TORN      = 0x10  /* the torn-update marker cleared */
};

/* Make a column consistent with the data its blobs hold: recompute every
 * blob's bigfile sum, CRC32C and statistics, cut bytes past each blob's
 * rows, remove blobs numbered >= NFILE, clear the torn marker, and commit.
 * The rows themselves are not changed: after an interrupted in-place update
 * they may mix old and new values, which no check can tell apart.  Fails
 * with CF_ESHORT (changing nothing) if a blob is missing or shorter than
 * its rows; CF_EBUSY if another writer holds the column. */
CF_API int cf_column_repair(cf_column *c, unsigned *fixed, cf_error *err);

/* Number of chunks of the column (all blobs), in row order. */
CF_API int64_t cf_column_chunk_count(const cf_column *c);

/* Statistics of chunk k (0 <= k < cf_column_chunk_count) for vector
 * component `component` (0 <= component < nmemb).  Statistics of blobs
 * with unsettled writes in this handle are reported invalid.  CF_ERANGE. */
CF_API int cf_column_chunk_stats(const cf_column *c, int64_t k, int64_t component, cf_chunk_stats *out,
                                 cf_error *err);

/* Read blob i and compute its CRC32C and statistics, as if it had just been
 * written whole (for Files written by other tools, or stale statistics);
 * committed by the next flush (or exported as pending state).  Changes no
 * data and no byte sum.  For native f4 and f8 columns it also computes
 * the chunk index's fine level (min and max per sub-chunk; writes never
 * do).  CF_ESHORT / CF_ENOENT if the blob is damaged. */
CF_API int cf_column_index_blob(cf_column *c, int64_t i, cf_error *err);

#ifdef __cplusplus
}
#endif
#endif /* COLFILE_H */
