/* mpi_io.c - collective writes (throttled in turns, aggregated through
 * group leaders, or through blob owners, as the options and the core's plan
 * say) and reads (include/colfile_mpi.h). */
#include "mpi_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- Columns: write and read ---------------------------------------------- */

/* Checks of one rank's write or read arguments, before any I/O. */
int cf__mpi_check_io_args(const cf_column *c, int for_write, int64_t start, int64_t count, const void *buf,
                          const char *buf_dtype, cf_error *e)
{
    const char *op = for_write ? "cf_mpi_column_write" : "cf_mpi_column_read";
    if (!c) return FAIL(e, CF_EARG, "%s: NULL column", op);
    if (for_write && !cf_column_writable(c))
        return FAIL(e, CF_EREADONLY, "%s: column is open read-only", cf_column_path(c));
    if (cf_column_kind(c) == CF_KIND_ATTRS_ONLY)
        return FAIL(e, CF_EKIND, "%s: '%s' holds only attributes, no rows", cf_column_path(c), cf_column_name(c));
    int64_t size = cf_column_size(c);
    if (start < 0 || count < 0 || start > size || count > size - start)
        return FAIL(e, CF_ERANGE, "%s: rows %lld..%lld are outside the column's %lld rows", cf_column_path(c),
                    (long long)start, (long long)(start + count - 1), (long long)size);
    if (count > 0 && !buf) return FAIL(e, CF_EARG, "%s: NULL buffer", cf_column_path(c));
    if (buf_dtype) {
        char dt[CF_DTYPE_MAX];
        int rc = cf__mpi_normalize_dtype(buf_dtype, dt, cf_column_path(c), e);
        if (rc) return rc;
        const char *from = for_write ? dt : cf_column_dtype(c), *to = for_write ? cf_column_dtype(c) : dt;
        if (!cf_dtype_can_cast(from, to))
            return FAIL(e, CF_ECAST, "%s: cannot convert %s to %s", cf_column_path(c), from, to);
    }
    return 0;
}

/* The caller's write buffer, and how to turn its rows into the column's
 * bytes for aggregation. */
typedef struct {
    const char *buf;
    const char *dtype;      /* the buffer's, never NULL */
    int64_t row_stride, elem_stride;
    int64_t nmemb, itemsize, rowbytes;
    const char *col_dtype;
    int direct;             /* rows are already the column's bytes, contiguous */
} source;

static void source_init(source *s, const cf_column *c, const void *buf, const char *buf_dtype, int64_t row_stride,
                        int64_t elem_stride)
{
    s->buf = buf;
    s->col_dtype = cf_column_dtype(c);
    s->dtype = buf_dtype ? buf_dtype : s->col_dtype;
    s->row_stride = row_stride;
    s->elem_stride = elem_stride;
    s->nmemb = cf_column_nmemb(c);
    s->itemsize = cf_column_itemsize(c);
    s->rowbytes = s->nmemb * s->itemsize;
    char dt[CF_DTYPE_MAX];
    int same = !buf_dtype || (cf_dtype_normalize(buf_dtype, dt, NULL) == 0 && strcmp(dt, s->col_dtype) == 0);
    s->direct = same && row_stride == s->rowbytes && (s->nmemb == 1 || elem_stride == s->itemsize);
}

/* Convert local rows [first, first+n) to the column's dtype into out
 * (n * rowbytes bytes), or point *p at them when no conversion is needed. */
static int source_rows(const source *s, int64_t first, int64_t n, unsigned char *out, const void **p, cf_error *e)
{
    if (s->direct) {
        *p = s->buf + first * s->rowbytes;
        return 0;
    }
    *p = out;
    const char *src = s->buf + first * s->row_stride;
    if (s->nmemb == 1)
        return cf_dtype_convert(out, s->itemsize, s->col_dtype, src, s->row_stride, s->dtype, n, e);
    if (s->row_stride == s->nmemb * s->elem_stride)
        return cf_dtype_convert(out, s->itemsize, s->col_dtype, src, s->elem_stride, s->dtype, n * s->nmemb, e);
    int rc = 0;
    for (int64_t r = 0; r < n && rc == 0; r++)
        rc = cf_dtype_convert(out + r * s->rowbytes, s->itemsize, s->col_dtype, src + r * s->row_stride,
                              s->elem_stride, s->dtype, s->nmemb, e);
    return rc;
}

/* Aggregated write (see colfile_mpi.h); `ranges` holds every rank's start
 * and count, which follow each other in rank order.  Returns the agreed
 * result. */
static int write_aggregated(cf_column *c, MPI_Comm comm, const int64_t *ranges, const cf_mpi_options *o,
                            const source *src, cf_error *e, cf_error *err)
{
    int rank = rank_of(comm), size = size_of(comm);
    int64_t rowbytes = src->rowbytes;
    int64_t start = ranges[2 * rank], count = ranges[2 * rank + 1];
    int64_t *bytes = malloc((size_t)size * sizeof *bytes), *leader = malloc((size_t)size * sizeof *leader);
    int *counts = NULL, *displs = NULL;
    unsigned char *recv = NULL, *send = NULL;
    int rc = 0, lrc = 0;
    if (!bytes || !leader) rc = FAIL(e, CF_ENOMEM, "out of memory");
    for (int r = 0; rc == 0 && r < size; r++) bytes[r] = ranges[2 * r + 1] * rowbytes;
    if (rc == 0) rc = cf_plan_groups(bytes, size, o->group_bytes, leader, e);
    /* The group: ranks [lead, end).  Leaders take turns like ranks do. */
    int lead = 0, end = 0, biggest = 1;
    int64_t nleaders = 0, my_index = -1, g0 = -1, grows = 0;
    if (rc == 0) {
        lead = (int)leader[rank];
        for (end = lead + 1; end < size && leader[end] != end; end++) {}
        for (int r = 0; r < size; r++) {
            if (leader[r] != r) continue;
            int to = r + 1;
            while (to < size && leader[to] != to) to++;
            if (to - r > biggest) biggest = to - r;
            if (r == lead) my_index = nleaders;
            nleaders++;
        }
        for (int r = lead; r < end; r++) {
            if (ranges[2 * r + 1] == 0) continue;
            if (g0 < 0) g0 = ranges[2 * r];
            grows += ranges[2 * r + 1];
        }
    }
    /* Pieces of whole rows (the caller made sure a row fits). */
    int64_t piece_bytes = o->group_bytes < CF_MPI_PIECE_BYTES ? o->group_bytes : CF_MPI_PIECE_BYTES;
    int64_t piece_rows = piece_bytes / rowbytes > 0 ? piece_bytes / rowbytes : 1;
    int gsize = end - lead;
    /* Every buffer before the agreement: after it, nothing can fail but the
     * leader's write. */
    if (rc == 0 && gsize > 1) {
        if (rank == lead && grows > 0) {
            int64_t n = grows < piece_rows ? grows : piece_rows;
            recv = malloc((size_t)(n * rowbytes));
            counts = malloc((size_t)gsize * sizeof *counts);
            displs = malloc((size_t)gsize * sizeof *displs);
            if (!recv || !counts || !displs) rc = FAIL(e, CF_ENOMEM, "out of memory for %lld bytes", (long long)(n * rowbytes));
        }
        if (rc == 0 && count > 0 && !src->direct) {
            int64_t n = count < piece_rows ? count : piece_rows;
            if (!(send = malloc((size_t)(n * rowbytes))))
                rc = FAIL(e, CF_ENOMEM, "out of memory for %lld bytes", (long long)(n * rowbytes));
        }
    }
    if ((rc = cf__mpi_agree(comm, rc, e, err))) goto done;

    /* One group (the usual case of small writes) gathers on comm itself:
     * a split costs a collective of its own, more than a small write. */
    MPI_Comm group = nleaders == 1 ? comm : MPI_COMM_NULL;
    if (nleaders > 1 && biggest > 1) MPI_Comm_split(comm, lead, rank, &group);
    turns t;
    int next_leader = end < size ? end : -1;
    cf__mpi_turns_open(&t, comm, rank == lead ? my_index : -1, nleaders, lead > 0 ? (int)leader[lead - 1] : -1, next_leader,
                       o->concurrency);
    if (rank == lead) cf__mpi_turn_begin(&t);
    if (gsize == 1) {
        if (count > 0) lrc = cf_column_write(c, start, count, src->buf, src->dtype, src->row_stride, src->elem_stride, e);
    } else {
        for (int64_t lo = g0; grows > 0 && lo < g0 + grows; lo += piece_rows) {
            int64_t hi = lo + piece_rows < g0 + grows ? lo + piece_rows : g0 + grows;
            /* This rank's share of the piece, and (leader) everyone's. */
            int64_t a = start > lo ? start : lo, b = start + count < hi ? start + count : hi;
            const void *p = send;
            int n = 0;
            if (count > 0 && b > a) {
                int r2 = source_rows(src, a - start, b - a, send, &p, e);
                if (lrc == 0) lrc = r2;
                n = (int)((b - a) * rowbytes);
            }
            if (rank == lead) {
                for (int r = lead; r < end; r++) {
                    int64_t s = ranges[2 * r], k = ranges[2 * r + 1];
                    int64_t ra = s > lo ? s : lo, rb = s + k < hi ? s + k : hi;
                    counts[r - lead] = k > 0 && rb > ra ? (int)((rb - ra) * rowbytes) : 0;
                    displs[r - lead] = k > 0 && rb > ra ? (int)((ra - lo) * rowbytes) : 0;
                }
            }
            MPI_Gatherv(p, n, MPI_BYTE, recv, counts, displs, MPI_BYTE, 0, group);
            if (rank == lead && lrc == 0)
                lrc = cf_column_write(c, lo, hi - lo, recv, NULL, rowbytes, src->itemsize, e);
        }
    }
    if (rank == lead) cf__mpi_turn_end(&t);
    cf__mpi_turns_close(&t);
    if (group != MPI_COMM_NULL && group != comm) MPI_Comm_free(&group);
    rc = cf__mpi_agree(comm, lrc, e, err);
done:
    free(bytes);
    free(leader);
    free(counts);
    free(displs);
    free(recv);
    free(send);
    return rc;
}

static int span_order(const void *a, const void *b)
{
    const span *x = a, *y = b;
    if (x->start != y->start) return x->start < y->start ? -1 : 1;
    return (x->rank > y->rank) - (x->rank < y->rank);
}

/* The first overlap of the ranks' non-empty ranges (ranges: start, count
 * per rank), found the same way on every rank (and by colfile.mpi): sorted
 * by start (then rank), the first range that starts before the furthest
 * end seen so far overlaps the range of that end.  Returns 1 and the two
 * ranks (*lo < *hi) if there is one.  `spans` holds `size` entries. */
int cf__mpi_find_overlap(const int64_t *ranges, int size, span *spans, int *lo, int *hi)
{
    int n = 0, ordered = 1;
    for (int r = 0; r < size; r++) {
        if (ranges[2 * r + 1] == 0) continue;
        spans[n].start = ranges[2 * r];
        spans[n].end = ranges[2 * r] + ranges[2 * r + 1];
        spans[n].rank = r;
        if (n > 0 && spans[n].start < spans[n - 1].start) ordered = 0;
        n++;
    }
    if (!ordered) qsort(spans, (size_t)n, sizeof *spans, span_order);
    int64_t end = INT64_MIN;
    int holder = -1;
    for (int i = 0; i < n; i++) {
        if (spans[i].start < end) {
            *lo = holder < spans[i].rank ? holder : spans[i].rank;
            *hi = holder < spans[i].rank ? spans[i].rank : holder;
            return 1;
        }
        if (spans[i].end > end) {
            end = spans[i].end;
            holder = spans[i].rank;
        }
    }
    return 0;
}

/* ---- Blob-owner writes ---------------------------------------------------- */

/* Blob-owner mode (see colfile_mpi.h): each blob with written rows has one
 * writer, its owner, the rank that holds the blob's first written row.  The
 * other ranks holding rows of it send them there in pieces; so no two
 * processes write one file and no extent lock changes hands.  A rank takes
 * part only in the blobs its own rows touch, in increasing blob order;
 * every wait (a receive, a send, a turn token) is for a lower or the same
 * blob, so nothing waits in a circle. */

/* The non-empty ranges, sorted by start (they do not overlap: checked). */
static int sorted_spans(const int64_t *ranges, int size, span *spans)
{
    int n = 0, ordered = 1;
    for (int r = 0; r < size; r++) {
        if (ranges[2 * r + 1] == 0) continue;
        spans[n] = (span){ ranges[2 * r], ranges[2 * r] + ranges[2 * r + 1], r };
        if (n > 0 && spans[n].start < spans[n - 1].start) ordered = 0;
        n++;
    }
    if (!ordered) qsort(spans, (size_t)n, sizeof *spans, span_order);
    return n;
}

/* The first span ending after `row` (n if none). */
static int span_after(const span *spans, int n, int64_t row)
{
    int lo = 0, hi = n;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (spans[mid].end > row) hi = mid;
        else lo = mid + 1;
    }
    return lo;
}

/* The blob holding `row` (first[] holds the nfile + 1 blob starts). */
static int64_t blob_of(const int64_t *first, int64_t nfile, int64_t row)
{
    int64_t lo = 0, hi = nfile - 1;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo + 1) / 2;
        if (first[mid] <= row) lo = mid;
        else hi = mid - 1;
    }
    return lo;
}

/* The owner of blob b, or -1 if no rank writes a row of it. */
static int blob_owner(const span *spans, int n, const int64_t *first, int64_t b)
{
    if (first[b] == first[b + 1]) return -1;
    int i = span_after(spans, n, first[b]);
    return i < n && spans[i].start < first[b + 1] ? spans[i].rank : -1;
}

#define TAG_BLOB 0x5cf2

/* Returns the agreed result. */
static int write_blob_owners(cf_column *c, MPI_Comm comm, const int64_t *ranges, span *spans,
                             const cf_mpi_options *o, const source *src, cf_error *e, cf_error *err)
{
    int rank = rank_of(comm), size = size_of(comm);
    int64_t rowbytes = src->rowbytes, nfile = cf_column_nfile(c);
    int64_t start = ranges[2 * rank], count = ranges[2 * rank + 1], end = start + count;
    int n = sorted_spans(ranges, size, spans);
    int64_t *first = malloc((size_t)(nfile + 1) * sizeof *first);
    unsigned char *recv = NULL, *send = NULL;
    int rc = 0, lrc = 0;
    if (!first) rc = FAIL(e, CF_ENOMEM, "out of memory for %lld blob offsets", (long long)nfile);
    for (int64_t b = 0; rc == 0 && b <= nfile; b++) first[b] = b == 0 ? 0 : first[b - 1] + cf_column_blob_rows(c, b - 1);
    int64_t piece_bytes = o->group_bytes < CF_MPI_PIECE_BYTES ? o->group_bytes : CF_MPI_PIECE_BYTES;
    int64_t piece_rows = piece_bytes / rowbytes > 0 ? piece_bytes / rowbytes : 1;
    /* This rank's blobs [b0, b1], and its buffers: for receiving, if it
     * owns a blob another rank writes to, and for converting rows it sends
     * to another owner; each at most one piece. */
    int64_t b0 = 0, b1 = -1, recv_rows = 0, send_rows = 0;
    if (rc == 0 && count > 0) {
        b0 = blob_of(first, nfile, start);
        b1 = blob_of(first, nfile, end - 1);
        for (int64_t b = b0; b <= b1; b++) {
            int64_t lo = first[b], hi = first[b + 1];
            if (blob_owner(spans, n, first, b) != rank) {
                int64_t k = (end < hi ? end : hi) - (start > lo ? start : lo);
                if (k > send_rows) send_rows = k;
                continue;
            }
            for (int i = span_after(spans, n, lo); i < n && spans[i].start < hi; i++) {
                int64_t k = (spans[i].end < hi ? spans[i].end : hi) - (spans[i].start > lo ? spans[i].start : lo);
                if (spans[i].rank != rank && k > recv_rows) recv_rows = k;
            }
        }
    }
    if (recv_rows > piece_rows) recv_rows = piece_rows;
    if (send_rows > piece_rows) send_rows = piece_rows;
    if (src->direct) send_rows = 0;
    if (rc == 0 && recv_rows > 0 && !(recv = malloc((size_t)(recv_rows * rowbytes))))
        rc = FAIL(e, CF_ENOMEM, "out of memory for %lld bytes", (long long)(recv_rows * rowbytes));
    if (rc == 0 && send_rows > 0 && !(send = malloc((size_t)(send_rows * rowbytes))))
        rc = FAIL(e, CF_ENOMEM, "out of memory for %lld bytes", (long long)(send_rows * rowbytes));
    if ((rc = cf__mpi_agree(comm, rc, e, err))) goto done;

    /* Owners take turns in blob order, as group leaders do: an owner's
     * blobs follow each other (its range is one run of rows). */
    int64_t owners = 0, my_index = -1;
    int prev = -1, next = -1, last = -1;
    for (int64_t b = 0; b < nfile; b++) {
        int ow = blob_owner(spans, n, first, b);
        if (ow < 0 || ow == last) continue;
        if (ow == rank) {
            my_index = owners;
            prev = last;
        } else if (last == rank) {
            next = ow;
        }
        last = ow;
        owners++;
    }
    MPI_Comm data;
    MPI_Comm_dup(comm, &data);
    turns t;
    cf__mpi_turns_open(&t, comm, my_index, owners, prev, next, o->concurrency);
    int in_turn = 0;
    for (int64_t b = b0; b <= b1; b++) {
        int64_t lo = first[b], hi = first[b + 1];
        int ow = blob_owner(spans, n, first, b);
        if (ow != rank) {
            /* my rows of b, to its owner */
            int64_t a = start > lo ? start : lo, z = end < hi ? end : hi;
            for (int64_t p = a; p < z; p += piece_rows) {
                int64_t k = z - p < piece_rows ? z - p : piece_rows;
                const void *buf = send;
                int r2 = source_rows(src, p - start, k, send, &buf, e);
                if (lrc == 0) lrc = r2;
                MPI_Send(buf, (int)(k * rowbytes), MPI_BYTE, ow, TAG_BLOB, data);
            }
            continue;
        }
        if (!in_turn) {
            cf__mpi_turn_begin(&t);
            in_turn = 1;
        }
        for (int i = span_after(spans, n, lo); i < n && spans[i].start < hi; i++) {
            int64_t a = spans[i].start > lo ? spans[i].start : lo, z = spans[i].end < hi ? spans[i].end : hi;
            if (spans[i].rank == rank) {
                if (lrc == 0)
                    lrc = cf_column_write(c, a, z - a, src->buf + (a - start) * src->row_stride, src->dtype,
                                          src->row_stride, src->elem_stride, e);
                continue;
            }
            for (int64_t p = a; p < z; p += piece_rows) {
                int64_t k = z - p < piece_rows ? z - p : piece_rows;
                MPI_Recv(recv, (int)(k * rowbytes), MPI_BYTE, spans[i].rank, TAG_BLOB, data, MPI_STATUS_IGNORE);
                if (lrc == 0) lrc = cf_column_write(c, p, k, recv, NULL, rowbytes, src->itemsize, e);
            }
        }
    }
    if (in_turn) cf__mpi_turn_end(&t);
    cf__mpi_turns_close(&t);
    MPI_Comm_free(&data);
    rc = cf__mpi_agree(comm, lrc, e, err);
done:
    free(first);
    free(recv);
    free(send);
    return rc;
}

int cf__mpi_overlap_error(MPI_Comm comm, const int64_t *ranges, int size, span *spans, const char *path, cf_error *e,
                          cf_error *err)
{
    int lo, hi;
    if (!cf__mpi_find_overlap(ranges, size, spans, &lo, &hi)) return 0;
    if (rank_of(comm) == lo)
        FAIL(e, CF_EARG,
             "%s: rows [%lld, %lld) here overlap rows [%lld, %lld) of rank %d: each row may be written "
             "by one rank only (is start right on every rank?)",
             path, (long long)ranges[2 * lo], (long long)(ranges[2 * lo] + ranges[2 * lo + 1]),
             (long long)ranges[2 * hi], (long long)(ranges[2 * hi] + ranges[2 * hi + 1]), hi);
    return cf__mpi_spread_error(comm, lo, CF_EARG, e, err);
}

int cf_mpi_column_write(cf_column *c, MPI_Comm comm, int64_t start, int64_t count, const void *buf,
                        const char *buf_dtype, int64_t row_stride, int64_t elem_stride,
                        const cf_mpi_options *opt, cf_error *err)
{
    if (comm == MPI_COMM_NULL) return FAIL(err, CF_EARG, "cf_mpi_column_write: MPI_COMM_NULL");
    cf_error e;
    error_init(&e);
    int rank = rank_of(comm), size = size_of(comm);
    cf_mpi_options o;
    int64_t *ranges = NULL;
    span *spans = NULL;
    int rc = cf__mpi_resolve_options(opt, &o, &e);
    if (rc == 0) rc = cf__mpi_check_io_args(c, 1, start, count, buf, buf_dtype, &e);
    if (rc == 0 && size > 1 && (!(ranges = malloc((size_t)size * 2 * sizeof *ranges)) ||
                                !(spans = malloc((size_t)size * sizeof *spans))))
        rc = FAIL(&e, CF_ENOMEM, "out of memory");
    /* The options and the column must be the same everywhere; from here on
     * the values are rank 0's on every rank, so the plans agree. */
    int_field ints[] = { { "options.mode", o.mode }, { "options.concurrency", o.concurrency },
                         { "options.group_bytes", o.group_bytes }, { "options.small_bytes", o.small_bytes },
                         { "the column's size", c ? cf_column_size(c) : -1 },
                         { "the column's nfile", c ? cf_column_nfile(c) : -1 } };
    rc = cf__mpi_check_agree(comm, "cf_mpi_column_write", ints, 6, NULL, 0, rc, &e, err);
    o.mode = (int)ints[0].value;
    o.concurrency = ints[1].value;
    o.group_bytes = ints[2].value;
    o.small_bytes = ints[3].value;
    if (rc) goto done;

    source src;
    source_init(&src, c, buf, buf_dtype, row_stride, elem_stride);
    int mode = size > 1 ? o.mode : CF_IO_THROTTLED;
    if (size > 1) {
        /* Every rank learns every rank's rows: two ranks writing one row
         * would leave checksums that match neither's bytes, so an overlap
         * (a wrong start, usually) fails every rank before any byte is
         * written.  Gaps are fine: a write need not cover the column. */
        int64_t mine[2] = { start, count }, total = 0, next = -1;
        MPI_Allgather(mine, 2, MPI_INT64_T, ranges, 2, MPI_INT64_T, comm);
        if ((rc = cf__mpi_overlap_error(comm, ranges, size, spans, cf_column_path(c), &e, err))) goto done;
        int consecutive = 1;
        for (int r = 0; r < size; r++) {
            int64_t s = ranges[2 * r], k = ranges[2 * r + 1];
            int64_t rb = src.rowbytes > 0 ? src.rowbytes : 1;
            total = k > (INT64_MAX - total) / rb ? INT64_MAX : total + k * src.rowbytes;
            if (k == 0) continue;
            if (next >= 0 && s != next) consecutive = 0;
            next = s + k;
        }
        if (mode == CF_IO_AUTO) mode = cf_plan_mode(total, size, o.small_bytes);
        /* Both kinds of aggregation need rows that fit a message; groups
         * need the rows of a group to be one range. */
        if (src.rowbytes <= 0 || src.rowbytes > CF_MPI_PIECE_BYTES) mode = CF_IO_THROTTLED;
        if (mode == CF_IO_AGGREGATED && !consecutive) mode = CF_IO_THROTTLED;
    }
    if (mode == CF_IO_AGGREGATED) {
        rc = write_aggregated(c, comm, ranges, &o, &src, &e, err);
        goto done;
    }
    if (mode == CF_IO_BLOB_OWNERS) {
        rc = write_blob_owners(c, comm, ranges, spans, &o, &src, &e, err);
        goto done;
    }
    turns t;
    cf__mpi_turns_open(&t, comm, rank, size, rank - 1, rank + 1, o.concurrency);
    cf__mpi_turn_begin(&t);
    if (count > 0) rc = cf_column_write(c, start, count, buf, buf_dtype, row_stride, elem_stride, &e);
    cf__mpi_turn_end(&t);
    cf__mpi_turns_close(&t);
    rc = cf__mpi_agree(comm, rc, &e, err);
done:
    free(ranges);
    free(spans);
    return rc;
}

int cf_mpi_column_read(cf_column *c, MPI_Comm comm, int64_t start, int64_t count, void *buf,
                       const char *buf_dtype, int64_t row_stride, int64_t elem_stride,
                       const cf_mpi_options *opt, cf_error *err)
{
    if (comm == MPI_COMM_NULL) return FAIL(err, CF_EARG, "cf_mpi_column_read: MPI_COMM_NULL");
    cf_error e;
    error_init(&e);
    int rank = rank_of(comm), size = size_of(comm);
    cf_mpi_options o;
    int rc = cf__mpi_resolve_options(opt, &o, &e);
    if (rc == 0) rc = cf__mpi_check_io_args(c, 0, start, count, buf, buf_dtype, &e);
    /* Reading changes nothing: every rank goes ahead and the agreement
     * comes at the end; the turns use rank 0's concurrency. */
    int_field ints[] = { { "options.concurrency", o.concurrency } };
    rc = cf__mpi_check_same(comm, "cf_mpi_column_read", ints, 1, NULL, 0, rc, &e);
    turns t;
    cf__mpi_turns_open(&t, comm, rank, size, rank - 1, rank + 1, ints[0].value);
    cf__mpi_turn_begin(&t);
    if (rc == 0) rc = cf_column_read(c, start, count, buf, buf_dtype, row_stride, elem_stride, &e);
    cf__mpi_turn_end(&t);
    cf__mpi_turns_close(&t);
    return cf__mpi_agree(comm, rc, &e, err);
}
