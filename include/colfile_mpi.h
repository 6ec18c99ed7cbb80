/* colfile_mpi.h - collective (MPI) I/O over libcolfile: libcolfile_mpi.
 *
 * A thin layer: it moves numbers and bytes between the ranks of a
 * communicator and calls the core (colfile.h; colfile_binding.h for the
 * replica handles and the plan), which owns the format, the checksums and
 * all planning arithmetic (cf_plan_*).  This header is the manual: each
 * function states its contract above its declaration.
 *
 * How the work is split
 * ---------------------
 * - Rank 0 of the communicator is the only rank that reads or writes
 *   metadata files (header, attr, attr-v2, colfile-*).  It opens or creates
 *   a column with the core, exports a snapshot of the metadata
 *   (cf_column_export_meta) and broadcasts it; the other ranks build replica
 *   handles from it (cf_column_open_meta), which open only the blobs their
 *   rows live in.  The metadata load of an open is therefore the same for
 *   1 rank and for 100,000.
 * - Every rank writes or reads its own range of rows with the core.  At the
 *   collective close every rank but 0 exports its uncommitted write state
 *   (cf_column_pending_export), rank 0 merges it (cf_column_pending_merge)
 *   and commits the header and checksums once.
 *
 * Two ways to write
 * -----------------
 * - Collective: cf_mpi_column_write, one call on every rank; ranges that
 *   overlap are refused before any byte is written, and throttling or
 *   aggregation is planned for the job.
 * - Independent: the handles these functions return (cf_mpi_column_create,
 *   cf_mpi_column_open, cf_mpi_column_grow) are ordinary core handles.
 *   Each rank may write its rows with cf_column_write (or
 *   cf_column_write_rows), any number of times, in any order, with no
 *   communication and no rank waiting for another, and read them back at
 *   once with cf_column_read.  The one collective step is
 *   cf_mpi_column_close (or cf_mpi_column_grow), which merges every
 *   rank's write state into one commit: the File then holds the same
 *   bytes, checksums included, as after a collective write of the same
 *   rows.  Rows of different ranks must not overlap (nothing checks it:
 *   the ranks do not talk; `colfile check` reports the sums that
 *   overlapping writes leave), and nothing is throttled.  A rank whose
 *   write failed cannot hand over its state, so the close then commits
 *   nothing (every rank gets the error).  To split a global size evenly,
 *   as the readers of cf_mpi_column_read and colfile.mpi do:
 *       int64_t first, n = cf_plan_share(total, nranks, rank, &first);
 *   (colfile_binding.h, "Planning"; the other cf_plan_* functions plan blobs,
 *   turns and groups the same way for every rank).
 *
 * Conventions
 * -----------
 * - Every function here is collective over `comm`: every rank of `comm`
 *   must call it, in the same order, with the same File/column (handles
 *   made by these functions on `comm`, or on a communicator with the same
 *   ranks in the same order).  `comm` may differ between calls: a File
 *   written by 64 ranks may be read by a communicator of 1.
 * - Every function returns the SAME value on every rank: 0, or the CF_E*
 *   code of the lowest-numbered rank that failed, and then fills each
 *   rank's *err (if not NULL) with that code and that rank's message
 *   prefixed "rank N: " (N: its rank in `comm`).  A failure on one rank
 *   (bad argument, missing blob, full disk) never leaves the others
 *   waiting.  source_file/source_line are those of the failing call on the
 *   failing rank, and point into this layer on the others.
 * - Arguments that must agree between ranks (names, dtypes, options) are
 *   compared with rank 0's; a difference fails with CF_EARG naming the rank.
 * - MPI errors themselves are handled by the communicator's error handler
 *   (MPI's default aborts); this layer does not recover from them.
 *   Point-to-point messages travel on a duplicate of `comm`, never on
 *   `comm` itself, so pending receives of the caller cannot take them.
 * - The core's conventions hold: handles are not shared between threads,
 *   sizes are int64_t, strings belong to the handle.
 */
#ifndef COLFILE_MPI_H
#define COLFILE_MPI_H

#include <mpi.h>
#include <stdint.h>

#include "colfile_binding.h" /* the core, its plan and the replica handles */
#include "colfile_stream.h"  /* task-local streams */

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ */
/* Options                                                              */
/* ------------------------------------------------------------------ */

/* How collective writes are planned.  Initialise with cf_mpi_options_init
 * and change what you need; pass NULL anywhere for the defaults.  Every
 * rank must pass the same values (CF_EARG otherwise).  Zero means "the
 * default" for every int64_t field. */
typedef struct cf_mpi_options {
    /* enum cf_io_mode.  CF_IO_THROTTLED: every rank writes its own rows,
     * `concurrency` ranks at a time.  CF_IO_AGGREGATED: groups of
     * consecutive ranks (cf_plan_groups) send their rows, converted to the
     * column's dtype, to the group's first rank, which writes them with one
     * cf_column_write per piece of at most group_bytes.
     * CF_IO_BLOB_OWNERS: each blob has one writer, its owner, which
     * receives the other ranks' rows of it (one writer per file: no extent
     * lock changes hands on Lustre or GPFS).  CF_IO_AUTO (the default):
     * cf_plan_mode of the write's total bytes (never CF_IO_BLOB_OWNERS). */
    int mode;
    /* Ranks (or, aggregated, group leaders) doing I/O at once; the turns of
     * cf_plan_turn.  0: CF_PLAN_CONCURRENCY; < 0: all at once. */
    int64_t concurrency;
    /* cf_mpi_column_create: the number of blobs; 0: cf_plan_nfile(size *
     * row bytes, ranks, blob_bytes). */
    int64_t nfile;
    /* cf_mpi_column_create with nfile 0: bytes per blob; 0: CF_PLAN_BLOB_BYTES. */
    int64_t blob_bytes;
    /* cf_mpi_column_create: 1 to put every blob boundary on a rank boundary
     * (cf_plan_blobs_by_rank), so that no two ranks write one blob; needs
     * nfile <= ranks.  0 (default): blobs split the rows evenly, as bigfile
     * and cf_column_create do. */
    int align_blobs_to_ranks;
    /* Aggregation: bytes per group (cf_plan_groups) and the most a leader
     * holds at once; 0: CF_PLAN_GROUP_BYTES. */
    int64_t group_bytes;
    /* Automatic mode aggregates below this many bytes per rank on average
     * (cf_plan_mode); 0: CF_PLAN_SMALL_BYTES. */
    int64_t small_bytes;
    /* cf_mpi_column_create and cf_mpi_column_create_many: rows per
     * statistics chunk of the columns with data (cf_column_set_chunk_rows,
     * 1 .. 2^40); 0: the core's default. */
    int64_t chunk_rows;
} cf_mpi_options;

/* Fill *o with the defaults: CF_IO_AUTO and zero everywhere else. */
CF_API void cf_mpi_options_init(cf_mpi_options *o);

/* ------------------------------------------------------------------ */
/* Files                                                                */
/* ------------------------------------------------------------------ */

/* Open the File at `path` on every rank of `comm`: rank 0 calls
 * cf_file_open with `flags` (so CREATE, EXCL and TRUNCATE act once), the
 * others open with CF_OPEN_NOCHECK and touch no file; they keep WRITE,
 * NODURABLE, TORN_OK, VERIFY, NOLOCK and NOLOCKING of `flags`.  `path` and `flags`
 * must be the same on every rank.  Release the handle with cf_file_close on
 * each rank (not collective).  On failure no rank keeps a handle. */
CF_API int cf_mpi_file_open(cf_file **out, MPI_Comm comm, const char *path, int flags, cf_error *err);

/* cf_file_list done by rank 0 alone and broadcast: every rank gets the same
 * sorted names (free with cf_names_free). */
CF_API int cf_mpi_file_list(cf_file *f, MPI_Comm comm, char ***names, int64_t *count, cf_error *err);

/* ------------------------------------------------------------------ */
/* Columns                                                              */
/* ------------------------------------------------------------------ */

/* Create (or replace) column `name` holding, in rank order, `local_rows`
 * rows from each rank: the column's size is their sum and *first_row (if
 * not NULL) gets the first row of this rank's share (the sum over lower
 * ranks).  Ranks may hold zero rows.  `name`, `dtype` (NULL: a header-only
 * or attribute-only block, as cf_column_create; local_rows must then be 0)
 * and `nmemb` must agree between ranks, as must opt->nfile, blob_bytes and
 * align_blobs_to_ranks, which choose the blobs:
 *   nfile      opt->nfile, or cf_plan_nfile(size * nmemb * itemsize,
 *              ranks, opt->blob_bytes) when 0;
 *   blob rows  cf_plan_blobs_by_rank over the ranks' local_rows if
 *              align_blobs_to_ranks (CF_EARG if nfile > ranks), else
 *              cf_plan_share(size, nfile, i) for blob i.
 * Rank 0 creates the column (cf_column_create_blobs: a column of that name
 * is replaced, as bigfile does, and none is made below a column; the
 * header is written before this returns), the others get replica handles.  The File must be
 * writable.  Write with cf_mpi_column_write, release with
 * cf_mpi_column_close.  On failure no handle is returned; the column may
 * then exist on disk with empty blobs. */
CF_API int cf_mpi_column_create(cf_column **out, cf_file *f, MPI_Comm comm, const char *name,
                                const char *dtype, int64_t nmemb, int64_t local_rows,
                                const cf_mpi_options *opt, int64_t *first_row, cf_error *err);

/* Open an existing column (or "." / "group/." for attributes): rank 0
 * reads the metadata files (cf_column_open) and broadcasts a snapshot, the
 * others read no metadata file.  The snapshot holds the attributes, so
 * here a read-only column's attribute files are read at open, and a
 * damaged one fails the open on every rank.  `name` must agree between
 * ranks.  The handles are writable if the File is.  Release with
 * cf_mpi_column_close. */
CF_API int cf_mpi_column_open(cf_column **out, cf_file *f, MPI_Comm comm, const char *name, cf_error *err);

/* Write rows [start, start+count) of the column from `buf` on each rank,
 * the buffer laid out as in cf_column_write (buf_dtype NULL: the column's;
 * strides in bytes).  count may be 0 (start is then only range-checked).
 * Ranges of different ranks must not overlap (they may leave gaps, and
 * come in any order): every rank learns every rank's range (one
 * MPI_Allgather), and an overlap -- usually a wrong start -- fails every
 * rank with CF_EARG and the message "rank I: <column path>: rows [a, b)
 * here overlap rows [c, d) of rank J: ..." (I < J, the first overlap in
 * the order of the starts).  Arguments are checked on every rank before
 * anything is written: if any rank's are bad, or ranges overlap, no rank
 * writes.  `opt` (NULL: defaults) chooses the mode:
 *  - throttled: each rank calls cf_column_write once; ranks take turns
 *    (cf_plan_turn over the ranks): within a run of nturns consecutive
 *    ranks, rank r+1 starts when rank r has finished, so at most
 *    `concurrency` ranks write at once and nothing else synchronises them;
 *  - aggregated: the non-empty ranges must follow each other in rank order
 *    (the rows of rank r+1 start where rank r's end; ranks with no rows are
 *    skipped) -- otherwise, or for rows wider than 1 GiB, the write falls
 *    back to throttled.  Groups of consecutive ranks holding about
 *    group_bytes (cf_plan_groups) gather their rows, converted to the
 *    column's dtype, at the group's first rank (MPI_Gatherv), which writes
 *    them with one cf_column_write per piece of at most group_bytes (and
 *    1 GiB), leaders taking turns as above.  A group of one rank writes
 *    straight from its buffer;
 *  - blob owners: each blob holding written rows has one writer, its
 *    owner: the rank that holds the blob's first written row (with ranges
 *    in rank order, the lowest of the neighbouring ranks that share it).
 *    Every other rank sends its rows of the blob, converted to the
 *    column's dtype, to the owner (point-to-point, in pieces of at most
 *    group_bytes and 1 GiB), which writes them with one cf_column_write
 *    per piece, through the one descriptor it creates, writes and fsyncs
 *    the blob with; no other rank opens the blob, and the statistics and
 *    checksums of its rows are computed by the owner alone.  Owners take
 *    turns in blob order, `concurrency` at once.  Ranges may come in any
 *    order; rows wider than 1 GiB fall back to throttled.  Memory per
 *    rank: at most one piece to receive and one to convert, plus 8 bytes
 *    per blob of the column (besides every rank's range, which every
 *    collective write gathers);
 *  - auto: aggregated if cf_plan_mode(total bytes of this write, ranks,
 *    small_bytes) says so, else throttled.
 * Every mode stores the same bytes, and so do independent writes (see
 * "Two ways to write" above).  Checksums are committed by
 * cf_mpi_column_close.  CF_EREADONLY, CF_ERANGE, CF_EDTYPE, CF_ECAST,
 * CF_EKIND (attribute-only handle), and the core's write errors. */
CF_API int cf_mpi_column_write(cf_column *c, MPI_Comm comm, int64_t start, int64_t count,
                               const void *buf, const char *buf_dtype, int64_t row_stride,
                               int64_t elem_stride, const cf_mpi_options *opt, cf_error *err);

/* Read rows [start, start+count) into `buf` on each rank (any ranges,
 * overlapping allowed, count may be 0), laid out as in cf_column_read.
 * Ranks read in throttled turns (opt->concurrency; opt NULL: defaults).
 * Every rank reads; failures are agreed afterwards (CF_ERANGE, CF_ENOENT /
 * CF_ESHORT naming a missing or short blob, ...), so a rank may have
 * filled its buffer even when the call fails. */
CF_API int cf_mpi_column_read(cf_column *c, MPI_Comm comm, int64_t start, int64_t count,
                              void *buf, const char *buf_dtype, int64_t row_stride,
                              int64_t elem_stride, const cf_mpi_options *opt, cf_error *err);

/* Append: add rows at the end of a data column, `local_rows` from each
 * rank, in rank order.  The column grows by their sum and *first_row (if
 * not NULL) gets the first new row of this rank's share (the old size plus
 * the sum over lower ranks); write them with cf_mpi_column_write (or
 * cf_column_write, the independent-write mode below) and commit with
 * cf_mpi_column_close or another grow.  `c` is the address of this rank's
 * handle, opened or created on `f` with these functions: the handles of
 * ranks other than 0 are replaced by new ones (replicas of the new layout;
 * the old ones are closed), rank 0's grows in place.
 *
 * Blobs: every append with rows adds new blobs after the existing ones and
 * never rewrites a committed byte (the cost is that of writing the new
 * rows; bigfile's big_block_mpi_grow does the same).  Their count and rows
 * are planned as cf_mpi_column_create plans a new column's, from the
 * appended rows: opt->nfile, or cf_plan_nfile(appended bytes, ranks,
 * opt->blob_bytes) when 0 -- one blob per 256 MiB appended, at least one,
 * at most one per rank -- and rows split evenly (cf_column_grow) or, with
 * align_blobs_to_ranks, cut on rank boundaries.  So a column of many small
 * appends gets one blob per append (20 appends of a few MiB: 20 more
 * blobs); gather several steps into one append, or rewrite the column once
 * at the end, where fewer files matter.  An append of 0 rows in total
 * changes nothing and adds no blob, unless opt->nfile asks for (empty)
 * blobs.  nfile, blob_bytes and
 * align_blobs_to_ranks must agree between ranks (CF_EARG).
 *
 * Crash safety (docs/format.md 8.3, step 4): before the layout changes,
 * every rank's uncommitted write state moves to rank 0 (as at a close,
 * without committing); the new blobs are created empty and the header that
 * lists them is committed only by the next close, after their data.  A
 * process killed before then leaves the column at its previous committed
 * version.  On failure every rank returns the same error, rank 0 gives up
 * all uncommitted changes of the column (the close then commits nothing:
 * the column stays at its last committed version), and the handles must
 * still be closed with cf_mpi_column_close.  CF_EREADONLY, CF_EKIND (not a
 * data column), CF_EARG, and the core's cf_column_grow errors. */
CF_API int cf_mpi_column_grow(cf_column **c, cf_file *f, MPI_Comm comm, int64_t local_rows,
                              const cf_mpi_options *opt, int64_t *first_row, cf_error *err);

/* Set attribute `name` (as cf_column_attr_set) on every rank's handle:
 * rank 0's handle validates it and writes the attribute files, the other
 * handles then take rank 0's value (in memory only).  `name`, `dtype` and
 * `nmemb` must agree between ranks (CF_EARG before anything changes).  The
 * value stored is rank 0's; if another rank's `data` holds different bytes,
 * rank 0's value is still stored on every rank and the call fails with
 * CF_EARG naming that rank. */
CF_API int cf_mpi_column_attr_set(cf_column *c, MPI_Comm comm, const char *name, const char *dtype,
                                  int64_t nmemb, const void *data, cf_error *err);

/* Close the column on every rank: the ranks but 0 export their uncommitted
 * write state, rank 0 gathers and merges it and commits the header and the
 * checksums once (cf_column_close); the others commit nothing.  Always
 * frees the handle on every rank.  NULL on every rank is a no-op; NULL on
 * some ranks only is CF_EARG (the other handles are still freed, nothing is
 * committed).  If a rank cannot export its state, nothing is committed
 * either (the header keeps its earlier checksums, which `colfile check`
 * reports).  Read-only handles and attribute blocks just close. */
CF_API int cf_mpi_column_close(cf_column *c, MPI_Comm comm, cf_error *err);

/* cf_mpi_column_close of cols[0], ..., cols[n-1] in one collective, for a
 * snapshot's columns: the same columns in the same order on every rank
 * (NULL where every rank has NULL).  The agreement rounds are those of one
 * close, whatever n: one MPI_Allreduce, one agreement that the buffers
 * are there, one MPI_Gather of every rank's write state for all columns
 * (rounds of MPI_Gatherv when the states are large) and one agreement at
 * the end -- against four per column closed one by one.  Rank 0 then
 * commits each column in turn; the first failure is returned on every
 * rank (the other columns are still committed).  If a rank's state cannot
 * be handed over, or the ranks hold different handles (CF_EARG), none of
 * the written columns is committed (handles that need no gathering --
 * read-only ones, attribute and header-only blocks -- close first, as
 * cf_mpi_column_close closes them).  Every handle is freed and every entry
 * set to NULL. */
CF_API int cf_mpi_column_close_many(cf_column **cols, int64_t n, MPI_Comm comm, cf_error *err);

/* ------------------------------------------------------------------ */
/* Snapshots: many columns with the rounds of one                       */
/* ------------------------------------------------------------------ */

/* A snapshot writes several columns of the same ranks at once.  Called
 * column by column, each call agrees on its own; these calls take a list
 * and agree once for all of it (docs/parallel.md, "Rounds"), writing the
 * same bytes.  With cf_mpi_column_close_many: 4 + 3 + 4 collectives for a
 * snapshot of any number of columns. */

/* One column of cf_mpi_column_create_many: what cf_mpi_column_create takes
 * (name, dtype, nmemb, local_rows) and what it returns (column, first_row). */
typedef struct cf_mpi_column_spec {
    const char *name;
    const char *dtype;
    int64_t nmemb;
    int64_t local_rows;
    cf_column *column;  /* out: this rank's handle (NULL on failure) */
    int64_t first_row;  /* out: this rank's first row */
} cf_mpi_column_spec;

/* cf_mpi_column_create of specs[0..n-1] (the same names, dtypes and nmemb
 * in the same order on every rank; local_rows per rank), with the options
 * of all of them in `opt`, in four collectives whatever n: one agreement
 * on the arguments (a difference is reported by the hash of the list, then
 * compare the lists), one MPI_Allgather of every rank's rows of every
 * column, one broadcast of the columns' metadata, one agreement.  Rank 0
 * creates the columns in order.  On failure no handle is returned and no
 * column is published (those created are discarded). */
CF_API int cf_mpi_column_create_many(cf_file *f, MPI_Comm comm, cf_mpi_column_spec *specs, int64_t n,
                                     const cf_mpi_options *opt, cf_error *err);

/* One column of cf_mpi_column_write_many: the arguments of
 * cf_mpi_column_write for it. */
typedef struct cf_mpi_write_spec {
    cf_column *column;
    int64_t start, count;
    const void *buf;
    const char *buf_dtype;
    int64_t row_stride, elem_stride;
} cf_mpi_write_spec;

/* cf_mpi_column_write of w[0..n-1] (the same columns in the same order on
 * every rank) in throttled mode, in three collectives whatever n: one
 * agreement on the arguments, one MPI_Allgather of every rank's ranges of
 * every column (an overlap in any column fails every rank, before any
 * byte is written, with cf_mpi_column_write's message), one agreement at
 * the end.  Each rank writes all its columns in its turn (opt->concurrency
 * ranks at once; opt->mode is not used: rows are never aggregated here). */
CF_API int cf_mpi_column_write_many(const cf_mpi_write_spec *w, int64_t n, MPI_Comm comm,
                                    const cf_mpi_options *opt, cf_error *err);

/* ------------------------------------------------------------------ */
/* Streams (colfile_stream.h, docs/format.md 8.7)                      */
/* ------------------------------------------------------------------ */

typedef struct cf_mpi_stream cf_mpi_stream;

/* The nodes of `comm`: the groups of ranks that share memory
 * (MPI_COMM_TYPE_SHARED), the `nodes` of cf_stream_files_default.
 * Collective. */
CF_API int64_t cf_mpi_stream_files(MPI_Comm comm);

/* Create stream `name` with one task per rank (task = rank in `comm`):
 * rank 0 chooses the layout (cf_stream_layout_choose with `files`, 0:
 * cf_stream_files_default for the nodes of `comm`, counted only on a file
 * system where that default depends on them; `chunk` and `align`, 0: the
 * defaults, its own st_blksize) and creates the stream
 * (cf_stream_create); every rank then opens its task.  `name`, `dtype`, `nmemb`, `files`, `chunk` and `align`
 * must agree.  Each rank appends with cf_stream_append on
 * cf_mpi_stream_task(s), any number of times, with no communication. */
CF_API int cf_mpi_stream_create(cf_mpi_stream **out, cf_file *f, MPI_Comm comm, const char *name, const char *dtype,
                                int64_t nmemb, int64_t files, int64_t chunk, int64_t align, cf_error *err);

/* Reopen the committed stream `name` to append more (a job restarting
 * from its last checkpoint): every rank continues its task after its
 * committed rows.  The table is read in slices (colfile_stream.h, "a
 * reopen in slices"): rank 0 takes the lock and reads the table's head
 * lines and checksum line; a few ranks (one per physical file, more for a
 * table over 4 MiB a rank) read a range of its task lines each and send
 * each task's lines to its rank; rank 0 checks that the ranges make the
 * sealed table from O(readers) small records.  No rank reads or receives
 * every task's lines.  The stream must have one task per rank of `comm`
 * (CF_EARG naming the stream otherwise). */
CF_API int cf_mpi_stream_reopen(cf_mpi_stream **out, cf_file *f, MPI_Comm comm, const char *name, cf_error *err);

/* This rank's task (owned by s; not collective). */
CF_API cf_stream_task *cf_mpi_stream_task(cf_mpi_stream *s);

/* Bytes of the stream's committed table this rank read when it was
 * reopened (0 for a created stream); -1 for NULL. */
CF_API int64_t cf_mpi_stream_table_bytes(const cf_mpi_stream *s);

/* Commit what every rank has appended: each rank makes its physical file
 * durable and gives its task's lines of the table (cf_stream_task_part);
 * the last rank of each physical file writes its ranks' lines into rank
 * 0's temporary table (cf_stream_part_begin, cf_stream_part_write), and
 * rank 0, which receives only O(log P) (length, CRC32C) pairs, seals and
 * renames it (cf_stream_part_end): the bytes of a serial commit, nothing
 * visible before the rename.  The first commit makes the stream visible.
 * A checkpoint: the stream stays open. */
CF_API int cf_mpi_stream_flush(cf_mpi_stream *s, cf_error *err);

/* cf_mpi_stream_flush, then release s on every rank (also on failure). */
CF_API int cf_mpi_stream_close(cf_mpi_stream *s, cf_error *err);

/* Release s on every rank without committing: the stream stays at its last
 * commit (absent if never committed).  Collective.  Accepts NULL on every
 * rank. */
CF_API void cf_mpi_stream_discard(cf_mpi_stream *s);

/* Open the committed stream `name` for reading on every rank of `comm`
 * (any number of ranks, any number of tasks): a reader of the whole global
 * view on each rank, as cf_stream_open gives, but no rank reads or holds
 * the whole table (colfile_stream.h, "an open in slices"): rank 0 reads
 * its head and checksum lines, a few ranks (one per physical file, more
 * for a large table) a byte range each, every rank gets each task's row
 * count and where its lines are (16 bytes a task), and reads a task's
 * chunk records only when it reads that task (cf_stream_reader_table_bytes
 * counts what it read).  A damaged table, or one replaced by a commit in
 * between, fails every rank alike.  Release with cf_stream_reader_close. */
CF_API int cf_mpi_stream_open(cf_stream_reader **out, cf_file *f, MPI_Comm comm, const char *name, cf_error *err);

#ifdef __cplusplus
}
#endif
#endif /* COLFILE_MPI_H */
