/* column_data.h - reading and writing a column's blobs: what the handle
 * (column.c), its commits (column_stage.c, commit/column_commit.c), the read paths
 * (column_read.c), the write paths (column_write.c) and verification
 * (column_verify.c) share (internal). */
#ifndef CF_COLUMN_DATA_H
#define CF_COLUMN_DATA_H

#include <stdint.h>
#include <sys/stat.h>

#include "column.h"
#include "column_handle.h"
#include "dtype.h"

/* How a caller's buffer is laid out. */
typedef struct {
    char *base;          /* row 0, element 0 */
    int64_t row_stride, elem_stride;
    cf__dtype dtype;
    int regular;         /* element e is at base + e * stride */
    int64_t stride;
    int direct;          /* contiguous and of the column's dtype */
} buffer_view;

/* The blob holding `row` (0 <= row < size): the last blob whose first row
 * is <= row, which skips zero-row blobs. */
static inline int64_t cf__column_locate(const cf_column *c, int64_t row)
{
    int64_t lo = 0, hi = c->h.nfile; /* invariant: first_row[lo] <= row < first_row[hi] */
    while (hi - lo > 1) {
        int64_t mid = lo + (hi - lo) / 2;
        if (c->first_row[mid] <= row) lo = mid;
        else hi = mid;
    }
    return lo;
}

/* The cached blob's preferred I/O size (st_blksize), looked up once. */
static inline int64_t cf__column_fd_blksize(cf_column *c)
{
    if (c->io.fd_blksize < 0) {
        struct stat st;
        c->io.fd_blksize = fstat(c->io.fd, &st) == 0 && st.st_blksize > 0 ? (int64_t)st.st_blksize : 4096;
    }
    return c->io.fd_blksize;
}

/* Close the handle's cached blob descriptor, if any. */
void cf__column_close_fd(cf_column *c);

/* (Re)build first_row, crc and crc_known for c->h.nfile blobs, keeping the
 * first `keep` entries of crc/crc_known. */
int cf__column_layout_blobs(cf_column *c, int64_t keep, cf_error *err);

/* Remove the blobs grow added for rows this handle will never commit now
 * (commit/column_commit.c says when; with now_only_alone, only if no other handle
 * writes them). */
void cf__column_drop_new_blobs(cf_column *c, int now_only_alone);

/* Make colfile-torn exist, durably, before the first in-place write over
 * committed rows (the commit protocol, column_stage.c). */
int cf__column_mark_torn(cf_column *c, cf_error *err);

/* Undo cf__column_mark_torn after a failure that changed no committed byte,
 * where this handle alone can know that (column_stage.c). */
void cf__column_unmark_torn(cf_column *c);

/* The file name of blob i ("%06X"). */
void cf__column_blob_name(int64_t i, char out[32]);

/* The path of blob i (malloc'd; NULL on ENOMEM). */
char *cf__column_blob_path(const cf_column *c, int64_t i);

/* Remove blob files numbered >= nfile left by an earlier, larger column. */
int cf__column_remove_stale_blobs(const char *dir, int64_t nfile, int *removed, cf_error *err);

/* Read blob i whole and compute its CRC32C, statistics and (sum not NULL)
 * bigfile byte sum.  Returns 0 with *complete 0 (nothing known) if the blob
 * is missing or short. */
int cf__column_scan_blob_sum(cf_column *c, int64_t i, uint32_t *sum, int *complete, cf_error *err);

/* Settle the CRCs and statistics of every blob written since the last
 * commit; write state is then folded into crc/stats/sums. */
int cf__column_settle_writes(cf_column *c, cf_error *err);

/* Allocate c->scratch (CF__CHUNK_BYTES) if it is not yet. */
int cf__column_need_scratch(cf_column *c, cf_error *err);

/* A descriptor of blob i, cached in the handle (c->fd): opened for writing
 * when for_write, created if need be. */
int cf__column_blob_fd(cf_column *c, int64_t i, int for_write, cf_error *err);

/* Describe the caller's buffer; CF_ECAST when its dtype and the column's
 * do not convert (for_write: from the buffer to the column, else back). */
int cf__column_make_view(const cf_column *c, buffer_view *v, const void *buf, const char *dtype,
                         int64_t row_stride, int64_t elem_stride, int for_write, cf_error *err);

/* CF_EKIND for an attribute-only column, CF_ERANGE for rows outside it. */
int cf__column_check_range(const cf_column *c, int64_t start, int64_t count, cf_error *err);

/* Frees what cf_column_verify_blob keeps of a colfile-v1 not current. */
void cf__column_recorded_free(cf_column *c);

#endif
