/* colfile_mpi.h - collective (MPI) I/O over libcolfile: libcolfile_mpi.
 *
 * A thin layer: it moves numbers and bytes between the ranks of a
 * communicator and calls the core (colfile.h), which owns the format, the
 * checksums and all planning arithmetic (cf_plan_*).  This header is the
 * manual: each function states its contract above its declaration.
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

#include "colfile.h"

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
     * cf_column_write per piece of at most group_bytes.  CF_IO_AUTO (the
     * default): cf_plan_mode of the write's total bytes. */
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
 * Rank 0 creates the column (cf_column_create_blobs: the header is written
 * before this returns), the others get replica handles.  The File must be
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
 * strides in bytes).  count may be 0 (start is then only range-checked);
 * ranges of different ranks must not overlap.  Arguments are checked on
 * every rank before anything is written: if any rank's are bad, no rank
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
 *  - auto: aggregated if cf_plan_mode(total bytes of this write, ranks,
 *    small_bytes) says so, else throttled.
 * Every mode stores the same bytes.  Checksums are committed by
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

#ifdef __cplusplus
}
#endif
#endif /* COLFILE_MPI_H */
