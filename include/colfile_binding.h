/* colfile_binding.h - libcolfile for the layers built on it.
 *
 * Not for programs that read and write Files: colfile.h is their manual,
 * and colfile_mpi.h the one of collective I/O.  This header declares what
 * only the layers on top of the core call: the MPI layer (libcolfile_mpi,
 * whose header includes this one) and language bindings (the Python
 * package reads it through tools/gen_ffi.py).  It holds their plumbing:
 * moving a handle's metadata and uncommitted write state between
 * processes, fork(2) helpers, deferred commits on a thread, lookups a
 * binding makes once per handle, and the arithmetic and tuning defaults
 * of the parallel plan.  The functions are exported and keep their
 * contracts as colfile.h's do; the conventions of colfile.h hold, except
 * that the cf_plan_* arithmetic answers arguments out of range as each
 * says (cf_plan_share: a share of 0), since every rank computes it alike.
 */
#ifndef COLFILE_BINDING_H
#define COLFILE_BINDING_H

#include <stddef.h>
#include <stdint.h>

#include "colfile.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ */
/* Files and handles in bindings                                      */
/* ------------------------------------------------------------------ */

/* Digest placement (CF_OPEN_DIGEST_*).  1 if a write should digest on a
 * helper thread, 0 if on the writing thread: helper only when this
 * process may run on at least 2 CPUs (own_cpus, its affinity mask) and
 * the CPUs the ranks of its node may run on together (node_cpus) are at
 * least twice those ranks (ranks_per_node), so that every rank's helper
 * finds a core no rank needs.  Arguments below 1 count as 1. */
CF_API int cf_digest_choose(int64_t own_cpus, int64_t node_cpus, int64_t ranks_per_node);

/* The parallel layers tell a File handle how many ranks share its node
 * (MPI_COMM_TYPE_SHARED) and how many CPUs those ranks may run on
 * together (the union of their affinity masks; 0 if unknown: then its
 * own CPUs); a File opened without them counts 1 rank and its own CPUs.  Decides the auto placement of
 * the columns opened or created after the call. */
CF_API void cf_file_set_node(cf_file *f, int64_t ranks_per_node, int64_t node_cpus);

/* The digest placement of the columns f opens now: "inline" or "helper"
 * (as chosen by CF_OPEN_DIGEST_* or else by cf_digest_choose; a read-only
 * f, which writes nothing, counts 1 CPU: "inline" unless
 * CF_OPEN_DIGEST_HELPER).  A static string. */
CF_API const char *cf_file_digest_placement(const cf_file *f);

/* In a child made by fork(2) while f was open in the parent: close the
 * child's copies of the writer-lock files f keeps open (one per directory
 * its columns were written in; docs/format.md 8.3) without unlocking
 * anything, since the locks are the parent's.  Otherwise, if the parent
 * died while the child lives, the locks it held would stay held.  f stays
 * usable: the child's new columns lock through descriptors of its own.
 * Call it before the child starts threads.  Accepts NULL. */
CF_API void cf_file_forget_locks(cf_file *f);

/* In a child made by fork(2) while c was open in the parent: release the
 * child's copy of the handle (its memory and descriptors) without
 * committing, unlocking or removing anything, since the column is still the
 * parent's.  The child's copy of the writer lock's descriptor would
 * otherwise keep the lock held for as long as the child lives, refusing the
 * parent's next writer of the column.  Accepts NULL. */
CF_API void cf_column_forget(cf_column *c);

/* The attributes of every column of the File, in one call: what
 * cf_file_list lists, each with exactly what cf_column_open followed by
 * cf_column_attr_names / cf_column_attr_get gives (the legacy `attr`, then
 * `attr-v2`, then `colfile-attrs`, later files winning).  On a read-only
 * File, entries of the catalog (docs/format.md 8.5) are used where fresh
 * lstats prove the attribute files current; everything else is read from
 * the files.  Only attribute files are read: a column whose header is
 * damaged, or which is marked torn, still gives its attributes (opening it
 * would fail).  Attribute blocks of groups and of the File itself are not
 * included.  A column removed while the call runs is left out.
 *
 * On success *buf (release with cf_free) holds *len bytes, every number a
 * uint64_t in the host's byte order at an 8-byte aligned offset, every
 * offset counted from the start of the buffer:
 *   [0] C, the number of columns;  [1] A, the number of attributes;
 *   [2] where the text area starts, [3] where the data area starts (the
 *     text area holds every name and token, the data area every value);
 *   then C column records of 4 words: name offset, name length, index of
 *     its first attribute record, its number of attributes; the columns in
 *     cf_file_list order (strcmp), their attributes sorted by name (strcmp);
 *   then A attribute records of 7 words: name offset, name length, dtype
 *     token offset, token length, nmemb, data offset, data length in bytes
 *     (nmemb times the token's width; the bytes in the stored byte order);
 *   then the two areas.  Every name, token and data block is followed by a
 *     NUL byte not counted in its length, so names and tokens can be used
 *     as C strings; attributes with the same token may share its bytes.
 * Errors: those of cf_file_list, and for a column whose attribute files
 * are damaged or unreadable the error cf_column_open gives for it
 * (CF_EFORMAT "<file>:<line>: ...", CF_EIO, CF_ENAME for a link), the whole
 * call then failing; CF_ENOMEM. */
CF_API int cf_file_column_attrs(cf_file *f, void **buf, size_t *len, cf_error *err);

/* What a binding reads once per handle, filled in one call by
 * cf_column_describe: the values of cf_column_name, cf_column_path,
 * cf_column_dtype, cf_column_kind, cf_column_writable and cf_column_nmemb
 * (the strings owned by the handle, valid until it is closed). */
typedef struct cf_column_desc {
    const char *name;
    const char *path;
    const char *dtype;
    int kind;
    int writable;
    int64_t nmemb;
} cf_column_desc;
/* Fill *d for c (for bindings where every call costs).  Never fails. */
CF_API void cf_column_describe(const cf_column *c, cf_column_desc *d);

/* The byte offset of row `row` (0 <= row < size) within the blob that holds
 * it, or -1 if row is out of range.  A binding that allocates the array a
 * read fills can place it at the same offset modulo 64 bytes: the kernel's
 * copy out of the page cache runs up to twice as fast when source and
 * destination agree there (docs/performance.md, "Where a new array
 * starts"). */
CF_API int64_t cf_column_row_offset(const cf_column *c, int64_t row);

/* The checksums `colfile check` prints (cf_column_verify_blob, colfile.h,
 * compares them with the data).  The bigfile running byte sum of blob i
 * as it stands in the header: */
CF_API uint32_t cf_column_blob_sum(const cf_column *c, int64_t i);
/* The SysV fold of a bigfile running byte sum (what `sum -s` prints):
 * r = (s & 0xffff) + (s >> 16); fold = (r & 0xffff) + (r >> 16). */
CF_API uint32_t cf_checksum_fold(uint32_t raw);
/* The CRC32C of blob i's data bytes: returns 1 and sets *crc if known and
 * current, 0 if unknown (file written by another tool, or stale). */
CF_API int cf_column_blob_crc32c(const cf_column *c, int64_t i, uint32_t *crc);

/* ------------------------------------------------------------------ */
/* Several writers, one commit                                        */
/* ------------------------------------------------------------------ */

/* Handles on one column (one per MPI rank, or per thread) may write disjoint
 * rows; exactly one of them commits the header.  The others export their
 * uncommitted state -- per blob, what their writes added to the bigfile
 * byte sums and the CRC32C of the byte ranges they wrote -- and the
 * committing handle merges it.  The bytes are opaque, portable (fixed
 * little-endian layout) and meant to be moved by MPI or any other channel. */

/* Serialise this handle's uncommitted write state into a new buffer (*buf,
 * *len; release with cf_free) and reset the handle to clean, so that its
 * close commits nothing: it also lets go of the writer lock, and leaves the
 * torn marker of its in-place writes to the committing handle's commit
 * (it makes it again for in-place writes after that commit).  CF_EKIND for
 * non-data columns, CF_ENOMEM. */
CF_API int cf_column_pending_export(cf_column *c, void **buf, size_t *len, cf_error *err);

/* Add the state exported by another handle of the same column (same blob
 * layout) to this one; its next flush/close commits the sum of both.
 * Writes from several handles that together cover a blob exactly give a
 * known CRC32C.  CF_EFORMAT for damaged bytes (nothing is changed),
 * CF_EARG if the blob count differs, CF_EREADONLY. */
CF_API int cf_column_pending_merge(cf_column *c, const void *buf, size_t len, cf_error *err);

/* ---- Closing by chunk owners (a collective close of a large column) ----
 * The committing handle needs per-blob facts only (header, blob CRC32C);
 * the statistics and chunk CRC32C of each chunk go to one owner among the
 * writers (the rank whose rows the chunk starts in, the ranks' rows cut
 * at the first row each wrote), which writes the chunk's record of
 * colfile-index-v1 into the staging directory itself and hands the
 * committing handle one summary per page of records above it.  These
 * calls are the steps; colfile_mpi and colfile.mpi run them. */

/* As cf_column_pending_export, leaving the handle as it is. */
CF_API int cf_column_pending_peek(cf_column *c, void **buf, size_t *len, cf_error *err);

/* The first row this handle's uncommitted writes touch (-1: none); call
 * it before cf_column_pending_export, which forgets them. */
CF_API int64_t cf_column_pending_first_row(const cf_column *c);

/* Cuts of the rows between nranks owners (nranks + 1 values) from the
 * first row each wrote (first[r] < 0: none): rank r owns the chunks that
 * start in [cut[r], cut[r + 1]). */
CF_API void cf_plan_owner_cuts(const int64_t *first, int64_t nranks, int64_t total, int64_t *cut);

/* Cut a pending state (bytes of cf_column_pending_export or _peek of a
 * handle of this column) into *summary (per blob: byte-sum delta and
 * written ranges, for the committing handle) and one part per owner
 * (accumulators and chunk CRC32C pieces of its chunks), concatenated in
 * rank order into *parts, part_len[r] bytes for rank r (nranks entries).
 * Merging the summary and then the parts (cf_column_pending_merge) gives
 * what merging the state gives.  Free both with cf_free.  CF_EFORMAT,
 * CF_EARG, CF_ENOMEM. */
CF_API int cf_column_pending_split(const cf_column *c, const void *state, size_t len, const int64_t *cut,
                                   int64_t nranks, void **summary, size_t *slen, void **parts, int64_t *part_len,
                                   cf_error *err);

/* 1 if the column has more chunk records (chunks x nmemb) than the
 * statistics text holds: the size at which a close by chunk owners pays. */
CF_API int cf_column_owners_wanted(const cf_column *c);

/* Every rank, after splitting its own state (summary: the summary the
 * split gave) and before merging the parts addressed to it, its own
 * included, in rank order: forget the statistics and chunk CRC32C this
 * handle holds of the blobs its own state wrote, which its parts carry.
 * (The committing handle takes its parts for the other owners first when
 * it gathers.)  CF_EFORMAT for a damaged summary. */
CF_API int cf_column_owner_begin(cf_column *c, const void *summary, size_t len, cf_error *err);

/* holds[b] (nfile entries): 0 where rank owns chunks of blob b whose
 * statistics this handle does not hold (after merging its parts). */
CF_API void cf_column_owner_holds(const cf_column *c, const int64_t *cut, int64_t nranks, int64_t rank,
                                  unsigned char *holds);

/* The committing handle, after merging every summary and its own parts,
 * with holds[] the minimum over the ranks: *owners_write 1 when the
 * owners write the index (statistics that go to the index alone, every
 * blob this close wrote covered exactly by its writes; for a committed
 * column, an append or an update, also a current index whose records of
 * the blobs not written the owners copy); valid[b] then says whether
 * blob b's statistics are known (bit 0) and whether its records are
 * copied from the committed index (bit 1), and *file is the file the
 * owners write into (the staging directory's index, or a temporary
 * beside the committed one that the commit renames over it).  0 leaves
 * the handle as it was (merge the parts of the other owners instead). */
CF_API int cf_column_owner_plan(cf_column *c, const unsigned char *holds, unsigned char *valid, int *owners_write,
                                const char **file, cf_error *err);

/* An owner: write the index records of the chunks it owns into file
 * (file and valid from cf_column_owner_plan) and return the summaries of
 * their pages (*pieces, *plen bytes; cf_free). */
CF_API int cf_column_owner_index_write(cf_column *c, const char *file, const unsigned char *valid, const int64_t *cut,
                                       int64_t nranks, int64_t rank, void **pieces, size_t *plen, cf_error *err);

/* The committing handle: every owner's pieces, concatenated in rank
 * order; its commit then writes the index's head and upper levels into
 * the file the owners wrote.  CF_EFORMAT when they do not cover every
 * chunk once. */
CF_API int cf_column_owner_index_finish(cf_column *c, const void *pieces, size_t len, cf_error *err);

/* Take the torn marker a writable handle was opened over (with
 * CF_OPEN_TORN_OK) for an in-place update under way by this caller's own
 * writers, not for an interrupted one: writers whose write states will all
 * be merged into this handle (cf_column_pending_merge) before it commits,
 * such as the other ranks of an MPI job that opened the column alone.  The
 * handle then reads the CRC32C and statistics recorded in colfile-v1 as
 * for an unmarked column (the merged states replace those of the blobs the
 * writers wrote), cf_column_torn gives 0, and its commit removes the
 * marker; read verification stays off.  Call it before anything is written
 * or merged through the handle (CF_EARG otherwise); a handle not opened
 * over a marker is left as it is.  Only the caller can know the marker is
 * its writers': a marker left by a crash must be repaired instead. */
CF_API int cf_column_adopt_update(cf_column *c, cf_error *err);

/* Serialise what cf_column_open read from disk (header, extension file,
 * attributes) into a new buffer (*buf, *len; release with cf_free), so that
 * other processes can build handles without reading the metadata files
 * themselves.  The bytes reflect the handle's state, pending writes
 * included.  A read-only handle leaves statistics it has not parsed out
 * (they grow with the chunks): a handle built from the bytes reads them
 * from colfile-v1 when it first needs them, and takes them as unknown if
 * that file is no longer the one this handle trusted.  CF_ENOMEM. */
CF_API int cf_column_export_meta(cf_column *c, void **buf, size_t *len, cf_error *err);

/* Build a handle on the column of File `f` from bytes made by
 * cf_column_export_meta, touching no file (blobs are opened on first I/O).
 * Writable if `f` is.  Such a handle is a replica: it writes blobs but
 * never metadata files -- flush and close commit nothing (export its
 * pending state to the handle that commits), attribute changes stay in its
 * memory (the handle that exported the snapshot writes them).  CF_EFORMAT
 * for damaged bytes.  The handle reads the version the exporting handle
 * opened (its directory, identified in the bytes, is held as
 * cf_column_open holds it): CF_EREPLACED if the column's name leads
 * elsewhere now. */
CF_API int cf_column_open_meta(cf_column **out, cf_file *f, const void *buf, size_t len, cf_error *err);

/* Give up the handle's uncommitted changes: from now on flush and close
 * commit nothing (they fail with CF_EIO saying so) and a new column that was
 * never committed vanishes at close.  The parallel layers call it on the
 * committing rank when another rank failed.  A write that fails does the
 * same by itself, so that a half-written range is never committed; rows
 * already updated in place stay marked torn.  Accepts NULL. */
CF_API void cf_column_discard(cf_column *c);

/* ------------------------------------------------------------------ */
/* Deferred commits                                                   */
/* ------------------------------------------------------------------ */

/* cf_column_close of cols[0], ..., cols[n - 1] in turn, in one call: for a
 * thread that commits handles others hand it (cf_committer's does).  errs, when
 * not NULL, holds n records: errs[i].code is 0 if cols[i] closed cleanly,
 * else its error.  Every handle is released.  Returns how many failed. */
CF_API int64_t cf_column_close_many(cf_column **cols, int64_t n, cf_error *errs);

/* Deferred commits.  A committer closes (commits and releases) the column
 * handles handed to it on a thread of its own, in the order they were
 * handed over, so that a program making many small columns need not wait
 * for each commit: the commits' system calls run beside its next columns
 * (Python's File(deferred=True) keeps one per File).  The thread starts a
 * batch when 8 handles wait, a millisecond after the first came, or at once
 * for cf_committer_wait and cf_committer_free.  A handle handed over
 * belongs to the committer.  Each gets a sequence number, 1, 2, ..., in
 * order; cf_committer_wait(q, s) returns once handles 1..s are closed.
 *
 * The committer knows no names: before opening, listing, removing or
 * creating again a column handed over, or a name above or below it, wait
 * for it.  Until then the File looks as if the column was not closed yet
 * (a new column is still staged out of sight).  Failed commits are kept,
 * oldest first, with the message cf_column_close would have returned, until
 * taken.  One committer may be used from several threads. */
typedef struct cf_committer cf_committer;

/* A new committer.  Its thread starts with the first handle handed over.
 * CF_ENOMEM. */
CF_API int cf_committer_new(cf_committer **out, cf_error *err);

/* Hand c over to be closed; returns its sequence number (> 0).  Waits while
 * 64 handles are waiting, so that the memory they hold stays bounded.  If
 * no thread can be started, c is closed here, its failure kept as any. */
CF_API int64_t cf_committer_submit(cf_committer *q, cf_column *c);

/* The sequence number up to which every handle handed over is closed. */
CF_API int64_t cf_committer_done(cf_committer *q);

/* Wait until handles 1..seq are closed (seq <= 0, or past the last one
 * handed over: all of them).  Returns how many failures are kept. */
CF_API int64_t cf_committer_wait(cf_committer *q, int64_t seq);

/* Move up to n kept failures, oldest first, into errs[0..]; returns how
 * many were moved. */
CF_API int64_t cf_committer_take_errors(cf_committer *q, cf_error *errs, int64_t n);

/* hold 1: start no batch until cf_committer_hold(q, 0), as during a phase
 * whose timing the commits' I/O must not disturb; handles still queue (at
 * the 64th, cf_committer_submit waits), and a wait for one of them waits
 * for the release.  cf_committer_free commits them anyway. */
CF_API void cf_committer_hold(cf_committer *q, int hold);

/* Around fork(2), from the thread that forks: cf_committer_pause waits
 * until no batch is being closed and holds the committer still (its lock
 * held), so that a child never inherits a handle half released; the
 * pausing thread calls nothing else of q before the fork.  In the
 * parent, cf_committer_resume lets it go on.  In the child,
 * cf_committer_forget_after_fork releases the child's copies of the
 * waiting handles without committing them (cf_column_forget: they are the
 * parent's to commit) and drops the parent's counts, failures and hold; the
 * child's own handles get a thread of their own. */
CF_API void cf_committer_pause(cf_committer *q);
CF_API void cf_committer_resume(cf_committer *q);
CF_API void cf_committer_forget_after_fork(cf_committer *q);

/* Wait for every handle handed over, end the thread and free q.  Failures
 * not taken are dropped.  Accepts NULL. */
CF_API void cf_committer_free(cf_committer *q);

/* ------------------------------------------------------------------ */
/* Planning parallel I/O (no MPI: both parallel layers call these)   */
/* ------------------------------------------------------------------ */

/* Default blob size for cf_plan_nfile: large enough that opening, locking
 * and listing blobs costs nothing next to moving their bytes, small enough
 * that ranks writing hundreds of MiB each get files of their own (writes
 * into one file serialize on its inode lock: docs/parallel.md). */
#define CF_PLAN_BLOB_BYTES ((int64_t)256 << 20)
/* Default data per aggregation group leader. */
#define CF_PLAN_GROUP_BYTES ((int64_t)64 << 20)
/* Below this many bytes per rank, automatic mode aggregates. */
#define CF_PLAN_SMALL_BYTES ((int64_t)4 << 20)
/* Default number of ranks doing I/O at once (gang throttling). */
#define CF_PLAN_CONCURRENCY 64

enum cf_io_mode {
    CF_IO_AUTO       = 0, /* cf_plan_mode decides */
    CF_IO_THROTTLED  = 1, /* every rank writes its rows, `concurrency` at a time */
    CF_IO_AGGREGATED = 2, /* group leaders gather their group's rows and write them */
    CF_IO_BLOB_OWNERS = 3 /* each blob's owner receives its rows and is its one writer */
};

/* Share i of `total` items split over `parts` (bigfile's even split): the
 * count is (i+1)*total/parts - i*total/parts, and *first (if not NULL)
 * gets i*total/parts.  0 for arguments out of range. */
CF_API int64_t cf_plan_share(int64_t total, int64_t parts, int64_t i, int64_t *first);

/* How many blobs a column of `total_bytes` written by `nranks` ranks gets:
 * one per `blob_bytes` (<= 0: CF_PLAN_BLOB_BYTES), at least 1, at most one
 * per rank (more blobs than writers add files without adding bandwidth)
 * and at most 2^24. */
CF_API int64_t cf_plan_nfile(int64_t total_bytes, int64_t nranks, int64_t blob_bytes);

/* Rows per blob such that every blob boundary is a rank boundary (no two
 * ranks write one blob... unless they share a blob whole): the ranks are
 * cut into `nfile` runs of consecutive ranks, as balanced as the ranks'
 * `rank_rows` allow.  1 <= nfile <= nranks.  CF_EARG. */
CF_API int cf_plan_blobs_by_rank(const int64_t *rank_rows, int64_t nranks, int64_t nfile,
                                 int64_t *blob_rows, cf_error *err);

/* Gang throttling: the turn (0 .. *nturns-1) in which `rank` does its I/O
 * when at most `concurrency` (< 1: all) of `nranks` ranks may at once. */
CF_API int64_t cf_plan_turn(int64_t rank, int64_t nranks, int64_t concurrency, int64_t *nturns);

/* Aggregation: groups of consecutive ranks holding about `group_bytes`
 * (<= 0: CF_PLAN_GROUP_BYTES) each; leader[r] gets the first rank of r's
 * group, which gathers and writes the group's rows.  CF_EARG. */
CF_API int cf_plan_groups(const int64_t *rank_bytes, int64_t nranks, int64_t group_bytes,
                          int64_t *leader, cf_error *err);

/* The mode automatic I/O uses: CF_IO_AGGREGATED when ranks hold on average
 * less than `small_bytes` (<= 0: CF_PLAN_SMALL_BYTES), else
 * CF_IO_THROTTLED (always for one rank). */
CF_API int cf_plan_mode(int64_t total_bytes, int64_t nranks, int64_t small_bytes);

/* ---- The chunk index of large columns, for query planners -------------- */

/* The binary chunk index `colfile-index-v1` (docs/format.md 8.6): the
 * statistics and chunk CRC32C of large columns as records, with coarser
 * levels over groups of `fanout` records above them.  Level 0 holds one
 * record per chunk (cf_column_chunk_stats's numbering); a record of level
 * l+1 covers `fanout` records of level l, and the top level at most
 * `fanout`.  Readers read pages of records with pread, verified against
 * the CRC32C their parent holds, and never the whole file: a planner
 * decides about groups of chunks from the coarse levels and reads the
 * records below only where they cannot decide. */
enum cf_index_state {
    CF_INDEX_ABSENT  = 0, /* no index: use cf_column_chunk_stats */
    CF_INDEX_CURRENT = 1, /* it describes the data as committed */
    CF_INDEX_STALE   = 2, /* it describes another version (the header changed
                             since, or an in-place update is in progress or
                             was interrupted): not used */
    CF_INDEX_DAMAGED = 3  /* it fails its checks: not used; `problem` says why */
};

typedef struct cf_index_info {
    int state;            /* enum cf_index_state */
    int64_t levels;       /* levels, chunks included (0 unless CURRENT) */
    int64_t fanout;       /* records per page */
    int64_t chunks;       /* records of level 0 */
    int64_t chunk_rows;   /* rows per chunk */
    char problem[CF_ERROR_MESSAGE_MAX]; /* DAMAGED: what is wrong, naming the file */
} cf_index_info;

/* What the column's index is (opened on first use: a pread of its head).
 * CF_EIO when the file is there but cannot be opened (never taken for an
 * absent one). */
CF_API int cf_column_index_info(cf_column *c, cf_index_info *out, cf_error *err);

/* Records of `level` (0 when there is no current index).  Level -1 is
 * the fine level: `m` sub-chunk records per chunk (chunk k's are k*m ..
 * k*m + m - 1), 0 when the index has none. */
CF_API int64_t cf_column_index_count(cf_column *c, int64_t level);

/* Records [first, first + n) of `level`, component `component`, into
 * out[0..n): `blob` and `first_row` of the first chunk below the record,
 * `rows` below it, `valid` (statistics known for every chunk below and no
 * unsettled write of this handle there), and count, nan_count, min, max,
 * sum over those rows as cf_column_chunk_stats gives them.  Reads only the
 * pages holding them (and, once, the pages above them that vouch for
 * them).  CF_ERANGE; CF_EFORMAT naming the file when a page fails its
 * CRC32C or the file is cut short (the index is then taken as DAMAGED);
 * CF_ENOENT when there is no current index.  Level -1 (the fine level):
 * min and max of each sub-chunk (`sum` NaN, `nan_count` 0); `valid` only
 * where its chunk has statistics and no NaN of the component and its
 * block is known; `rows` 0 for the records past a short chunk's end.  A
 * block that fails its CRC32C gives CF_EFORMAT and leaves the fine level
 * unused (the levels stay CURRENT). */
CF_API int cf_column_index_nodes(cf_column *c, int64_t level, int64_t first, int64_t n, int64_t component,
                                 cf_chunk_stats *out, cf_error *err);

/* Bytes of the index this handle has read so far (heads and pages). */
CF_API int64_t cf_column_index_bytes_read(const cf_column *c);

/* The CRC32C of chunk k's bytes (rows x nmemb x width), when the index or
 * this handle's writes know it: 1 and *crc, else 0. */
CF_API int cf_column_chunk_crc32c(cf_column *c, int64_t k, uint32_t *crc);

#ifdef __cplusplus
}
#endif
#endif /* COLFILE_BINDING_H */
