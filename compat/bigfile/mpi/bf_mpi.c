/* bf_mpi.c - bigfile's MPI calls over colfile_mpi.
 *
 * Rank 0 opens or creates the column with the core and hands a snapshot
 * of its metadata to the other ranks (cf_column_export_meta /
 * cf_column_open_meta), whose handles then move only their own rows.
 * Collective writes and reads are cf_mpi_column_write / _read: each rank's
 * rows follow the lower ranks' from the BigBlockPtr on.  A flush gathers
 * every rank's uncommitted write state at rank 0 (cf_column_pending_export
 * / _merge), which commits once.  Every call agrees on failure: all ranks
 * return -1 with the message of the lowest failing rank. */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bf_internal.h"
#include "colfile/bigfile/bigfile-mpi.h"
#include "colfile_mpi.h"

static size_t aggregated_threshold = 0; /* bigfile's default: never gather */
static int mpi_verbose = 0;

void big_file_mpi_set_verbose(int verbose)
{
    mpi_verbose = verbose;
}

void big_file_mpi_set_aggregated_threshold(size_t bytes)
{
    aggregated_threshold = bytes;
}

size_t big_file_mpi_get_aggregated_threshold(void)
{
    return aggregated_threshold;
}

static int comm_rank(MPI_Comm comm)
{
    int r;
    MPI_Comm_rank(comm, &r);
    return r;
}

/* 0 if rc is 0 on every rank; else -1 everywhere, every rank holding the
 * message of the lowest failing rank. */
static int agree(int rc, MPI_Comm comm)
{
    int rank = comm_rank(comm), mine = rc ? rank : INT_MAX, first;
    MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm);
    if (first == INT_MAX) return 0;
    char msg[2048] = {0};
    if (rank == first) {
        const char *m = big_file_get_error_message();
        snprintf(msg, sizeof msg, "%s", m ? m : "unknown error");
    }
    MPI_Bcast(msg, (int)sizeof msg, MPI_CHAR, first, comm);
    if (rank != first) bf__set_error("rank %d: %s", first, msg);
    return -1;
}

/* Broadcast len bytes from rank 0 in pieces MPI's int counts take. */
static void bcast_bytes(void *buf, uint64_t len, MPI_Comm comm)
{
    for (uint64_t off = 0; off < len;) {
        uint64_t n = len - off < (uint64_t)INT_MAX ? len - off : (uint64_t)INT_MAX;
        MPI_Bcast((char *)buf + off, (int)n, MPI_BYTE, 0, comm);
        off += n;
    }
}

/* Rank 0's handle *c becomes every rank's: the others build replicas of
 * it.  On failure no rank but 0 holds a handle. */
static int share_column(cf_column **c, cf_file *f, MPI_Comm comm)
{
    cf_error e;
    int rank = comm_rank(comm), rc = 0;
    void *buf = NULL;
    size_t len = 0;
    if (rank == 0 && cf_column_export_meta(*c, &buf, &len, &e)) {
        bf__set_cf_error(&e);
        rc = -1;
    }
    if (agree(rc, comm)) return -1;
    uint64_t n = len;
    MPI_Bcast(&n, 1, MPI_UINT64_T, 0, comm);
    if (rank != 0) {
        buf = malloc(n ? n : 1);
        if (!buf) {
            bf__set_error("out of memory for a block's metadata (%llu bytes)", (unsigned long long)n);
            rc = -1;
        }
    }
    if (agree(rc, comm)) {
        if (rank == 0) cf_free(buf);
        return -1;
    }
    bcast_bytes(buf, n, comm);
    if (rank == 0) {
        cf_free(buf);
    } else {
        if (cf_column_open_meta(c, f, buf, n, &e)) {
            bf__set_cf_error(&e);
            *c = NULL;
            rc = -1;
        }
        free(buf);
    }
    if (agree(rc, comm)) {
        if (rank != 0) {
            cf_column_close(*c, NULL);
            *c = NULL;
        }
        return -1;
    }
    return 0;
}

/* Move every rank's uncommitted write state to rank 0's handle.  *wrote:
 * whether this rank's handle wrote since (reset here); when no rank did,
 * there is nothing to move and one reduction decides it. */
static int gather_pending(cf_column *c, int *wrote, MPI_Comm comm)
{
    cf_error e;
    int rank = comm_rank(comm), size, rc = 0, any = 0;
    MPI_Comm_size(comm, &size);
    if (size == 1 || cf_column_kind(c) != CF_KIND_DATA || !cf_column_writable(c)) return 0;
    MPI_Allreduce(wrote, &any, 1, MPI_INT, MPI_LOR, comm);
    *wrote = 0;
    if (!any) return 0;
    void *buf = NULL;
    size_t len = 0;
    if (rank != 0 && cf_column_pending_export(c, &buf, &len, &e)) {
        bf__set_cf_error(&e);
        rc = -1;
    }
    if (!rc && len > (size_t)INT_MAX) {
        bf__set_error("%s: write state of %zu bytes is too large to gather", cf_column_path(c), len);
        rc = -1;
    }
    if (agree(rc, comm)) {
        cf_free(buf);
        if (rank == 0) cf_column_discard(c); /* some rank's rows cannot be accounted for */
        return -1;
    }
    int mine = (int)len, *lens = NULL, *displs = NULL;
    char *all = NULL;
    if (rank == 0) {
        lens = calloc((size_t)size, sizeof *lens);
        displs = calloc((size_t)size, sizeof *displs);
    }
    MPI_Gather(&mine, 1, MPI_INT, lens, 1, MPI_INT, 0, comm);
    int64_t total = 0;
    if (rank == 0) {
        for (int r = 0; r < size; r++) {
            if (total + lens[r] > INT_MAX) {
                rc = -1;
                break;
            }
            displs[r] = (int)total;
            total += lens[r];
        }
        all = malloc((size_t)total + 1);
        if (rc || !all) {
            bf__set_error("%s: cannot gather %lld bytes of write state", cf_column_path(c), (long long)total);
            rc = -1;
        }
    }
    if (agree(rc, comm)) {
        free(lens);
        free(displs);
        free(all);
        cf_free(buf);
        if (rank == 0) cf_column_discard(c);
        return -1;
    }
    MPI_Gatherv(buf, mine, MPI_BYTE, all, lens, displs, MPI_BYTE, 0, comm);
    cf_free(buf);
    if (rank == 0) {
        for (int r = 1; r < size && !rc; r++) {
            if (cf_column_pending_merge(c, all + displs[r], (size_t)lens[r], &e)) {
                bf__set_cf_error(&e);
                cf_column_discard(c);
                rc = -1;
            }
        }
    }
    free(lens);
    free(displs);
    free(all);
    return agree(rc, comm);
}

/* A File handle on every rank (rank 0 checks, the others trust it). */
static int open_file(cf_file **f, const char *path, MPI_Comm comm)
{
    cf_error e;
    if (cf_mpi_file_open(f, comm, path, bf__write_flags(CF_OPEN_WRITE), &e) == 0) return 0;
    if (cf_mpi_file_open(f, comm, path, CF_OPEN_READ, &e) == 0) return 0;
    bf__set_cf_error(&e);
    return -1;
}

static char *mpi_basename(const char *file, const char *block)
{
    size_t n = strlen(file) + strlen(block) + 3;
    char *r = malloc(n);
    if (r) snprintf(r, n, "%s/%s/", file, block);
    return r;
}

static char *dup_str(const char *s)
{
    size_t n = strlen(s);
    char *r = malloc(n + 1);
    if (r) memcpy(r, s, n + 1);
    return r;
}

int big_file_mpi_open(BigFile *bf, const char *basename, MPI_Comm comm)
{
    if (comm == MPI_COMM_NULL) return 0;
    int rc = 0;
    if (comm_rank(comm) == 0) {
        rc = big_file_open(bf, basename);
    } else {
        bf->basename = dup_str(basename);
    }
    return agree(rc, comm);
}

int big_file_mpi_create(BigFile *bf, const char *basename, MPI_Comm comm)
{
    if (comm == MPI_COMM_NULL) return 0;
    int rc = 0;
    if (comm_rank(comm) == 0) {
        rc = big_file_create(bf, basename);
    } else {
        bf->basename = dup_str(basename);
    }
    return agree(rc, comm);
}

int big_file_mpi_close(BigFile *bf, MPI_Comm comm)
{
    if (comm == MPI_COMM_NULL) return 0;
    return big_file_close(bf);
}

/* Make *block of a handle every rank holds. */
static int fill_block(BigBlock *block, cf_file *f, cf_column *c, char *base, MPI_Comm comm)
{
    BigAttrSet *st = bf__state_new(f, c, 1);
    int rc = 0;
    if (!st) {
        bf__set_error("%s: out of memory", base);
        rc = -1;
    } else if (bf__block_fill(block, st, base)) {
        rc = -1;
    }
    if (agree(rc, comm)) {
        if (st) {
            st->col = NULL;
            bf__block_free(block);
        } else {
            free(base);
            cf_file_close(f);
        }
        cf_column_discard(c); /* a block just created is not published */
        cf_column_close(c, NULL);
        return -1;
    }
    return 0;
}

int big_file_mpi_open_block(BigFile *bf, BigBlock *block, const char *blockname, MPI_Comm comm)
{
    if (comm == MPI_COMM_NULL) return 0;
    if (!bf || !bf->basename || !blockname) return 1;
    cf_error e;
    cf_file *f = NULL;
    cf_column *c = NULL;
    memset(block, 0, sizeof *block);
    char *name = bf__column_name(blockname), *base = mpi_basename(bf->basename, blockname);
    int rc = name && base ? 0 : -1;
    if (rc) bf__set_error("%s: out of memory", blockname);
    if (agree(rc, comm) || open_file(&f, bf->basename, comm)) {
        free(name);
        free(base);
        return -1;
    }
    rc = cf_mpi_column_open(&c, f, comm, name, &e);
    free(name);
    if (rc) {
        bf__set_cf_error(&e);
        cf_file_close(f);
        free(base);
        return -1;
    }
    return fill_block(block, f, c, base, comm);
}

int _big_file_mpi_create_block(BigFile *bf, BigBlock *block, const char *blockname, const char *dtype,
                               int nmemb, int Nfile, const size_t fsize[], MPI_Comm comm)
{
    if (comm == MPI_COMM_NULL) return 0;
    cf_error e;
    cf_file *f = NULL;
    cf_column *c = NULL;
    memset(block, 0, sizeof *block);
    if (open_file(&f, bf->basename, comm)) return -1;
    int rc = 0;
    if (comm_rank(comm) == 0) rc = bf__create_column(&c, f, blockname, dtype, nmemb, Nfile, fsize, &e);
    if (agree(rc, comm)) {
        cf_file_close(f);
        return -1;
    }
    if (share_column(&c, f, comm)) {
        if (comm_rank(comm) == 0) {
            cf_column_discard(c);
            cf_column_close(c, NULL);
        }
        cf_file_close(f);
        return -1;
    }
    char *base = mpi_basename(bf->basename, blockname);
    if (!base) bf__set_error("%s: out of memory", blockname);
    if (agree(base ? 0 : -1, comm)) {
        cf_column_discard(c);
        cf_column_close(c, NULL);
        cf_file_close(f);
        return -1;
    }
    return fill_block(block, f, c, base, comm);
}

/* bigfile's even split: file i of n holds (i+1)*size/n - i*size/n rows. */
static size_t *even_split(int n, size_t size)
{
    size_t *fs = malloc(sizeof *fs * (size_t)(n > 0 ? n : 1));
    if (fs)
        for (int i = 0; i < n; i++) fs[i] = size * (size_t)(i + 1) / (size_t)n - size * (size_t)i / (size_t)n;
    return fs;
}

int big_file_mpi_create_block(BigFile *bf, BigBlock *block, const char *blockname, const char *dtype,
                              int nmemb, int Nfile, size_t size, MPI_Comm comm)
{
    size_t *fs = even_split(Nfile, size);
    if (!fs) {
        bf__set_error("%s: out of memory for %d files", blockname, Nfile);
        return agree(-1, comm);
    }
    int rc = _big_file_mpi_create_block(bf, block, blockname, dtype, nmemb, Nfile, fs, comm);
    free(fs);
    return rc;
}

static cf_column *block_column(BigBlock *bb, const char *what)
{
    if (bb->attrset && bb->attrset->col) return bb->attrset->col;
    bf__set_error("%s: the block is not open", what);
    return NULL;
}

int big_block_mpi_flush(BigBlock *block, MPI_Comm comm)
{
    if (comm == MPI_COMM_NULL) return 0;
    cf_error e;
    cf_column *c = block_column(block, "big_block_mpi_flush");
    if (agree(c ? 0 : -1, comm) || gather_pending(c, &block->attrset->wrote, comm)) return -1;
    int rc = 0;
    if (comm_rank(comm) == 0 && cf_column_writable(c) && cf_column_flush(c, &e)) {
        bf__set_cf_error(&e);
        rc = -1;
    }
    if (agree(rc, comm)) return -1;
    /* every rank gets the committed sums, as bigfile's broadcast gives them */
    if (comm_rank(comm) == 0) bf__block_sums(block);
    if (block->Nfile > 0) MPI_Bcast(block->fchecksum, block->Nfile, MPI_UNSIGNED, 0, comm);
    block->dirty = 0;
    block->attrset->dirty = 0;
    return 0;
}

int big_block_mpi_close(BigBlock *block, MPI_Comm comm)
{
    if (comm == MPI_COMM_NULL) return 0;
    cf_error e;
    int rc = big_block_mpi_flush(block, comm);
    BigAttrSet *st = block->attrset;
    int closed = 0;
    if (st && st->col) {
        closed = cf_column_close(st->col, &e);
        if (closed) bf__set_cf_error(&e);
        st->col = NULL;
    }
    bf__block_free(block);
    if (agree(closed ? -1 : 0, comm)) return -1;
    return rc;
}

int big_block_mpi_grow(BigBlock *bb, int Nfile_grow, const size_t fsize_grow[], MPI_Comm comm)
{
    if (comm == MPI_COMM_NULL) return 0;
    cf_column *c = block_column(bb, "big_block_mpi_grow");
    if (agree(c ? 0 : -1, comm) || gather_pending(c, &bb->attrset->wrote, comm)) return -1;
    int rank = comm_rank(comm), rc = 0;
    if (rank == 0) rc = bf__grow_column(bb, Nfile_grow, fsize_grow);
    if (agree(rc, comm)) return -1;
    /* the other ranks' handles hold the old layout: replace them */
    if (rank != 0) {
        cf_column_close(c, NULL);
        bb->attrset->col = NULL;
    }
    if (share_column(&bb->attrset->col, bb->attrset->file, comm)) return -1;
    rc = bf__refill_layout(bb);
    bb->dirty = 1;
    return agree(rc, comm);
}

int big_block_mpi_grow_simple(BigBlock *bb, int Nfile_grow, size_t size_grow, MPI_Comm comm)
{
    if (comm == MPI_COMM_NULL) return 0;
    size_t *fs = even_split(Nfile_grow, size_grow);
    if (!fs) bf__set_error("out of memory for %d files", Nfile_grow);
    if (agree(fs ? 0 : -1, comm)) {
        free(fs);
        return -1;
    }
    int rc = big_block_mpi_grow(bb, Nfile_grow, fs, comm);
    free(fs);
    return rc;
}

/* The collective write or read: this rank's rows follow the lower ranks'. */
static int mpi_io(BigBlock *bb, BigBlockPtr *ptr, BigArray *array, int concurrency, MPI_Comm comm, int write)
{
    if (comm == MPI_COMM_NULL) return 0;
    cf_error e;
    const char *what = write ? "Writing" : "Reading";
    cf_column *c = block_column(bb, what);
    int64_t rows = array->ndim > 0 ? (int64_t)array->dims[0] : 0;
    int nmemb = bb->nmemb > 0 ? bb->nmemb : 1;
    int rc = c ? 0 : -1;
    if (!rc && array->size != (size_t)rows * (size_t)nmemb) {
        bf__set_error("%s block `%s': the array holds %zu elements, not %lld rows of %d", what, bb->basename,
                      array->size, (long long)rows, nmemb);
        rc = -1;
    }
    const char *from = write ? array->dtype : bb->dtype, *to = write ? bb->dtype : array->dtype;
    if (!rc && rows > 0 && !cf_dtype_can_cast(from, to)) {
        bf__set_error("%s block `%s': no conversion from %s to %s", what, bb->basename, from, to);
        rc = -1;
    }
    if (agree(rc, comm)) return -1;
    int64_t before = 0, total = 0;
    MPI_Exscan(&rows, &before, 1, MPI_INT64_T, MPI_SUM, comm);
    if (comm_rank(comm) == 0) before = 0;
    MPI_Allreduce(&rows, &total, 1, MPI_INT64_T, MPI_SUM, comm);
    /* a rank without rows touches nothing (bigfile checks no range there) */
    int64_t start = rows > 0 ? (int64_t)bf__ptr_row(bb, ptr) + before : 0;

    int64_t rs, es, w = big_file_dtype_itemsize(array->dtype);
    void *data = array->data, *tmp = NULL;
    size_t n = (size_t)rows * (size_t)nmemb;
    if (!bf__array_rows_layout(array, bb->nmemb, &rs, &es)) {
        tmp = malloc(n * (size_t)w + 1);
        if (!tmp) {
            bf__set_error("%s block `%s': out of memory for %zu elements", what, bb->basename, n);
            rc = -1;
        } else if (write) {
            bf__array_pack(array, tmp, n);
        }
        data = tmp;
        rs = w * nmemb;
        es = w;
    }
    if (agree(rc, comm)) return -1;
    cf_mpi_options opt;
    cf_mpi_options_init(&opt);
    opt.concurrency = concurrency > 0 ? concurrency : -1;
    if (write && aggregated_threshold > 0) {
        opt.mode = CF_IO_AGGREGATED;
        opt.group_bytes = (int64_t)aggregated_threshold;
    } else {
        opt.mode = CF_IO_THROTTLED;
    }
    if (write) bb->attrset->wrote = 1;
    rc = write ? cf_mpi_column_write(c, comm, start, rows, data, array->dtype, rs, es, &opt, &e)
               : cf_mpi_column_read(c, comm, start, rows, data, array->dtype, rs, es, &opt, &e);
    if (!rc && !write && tmp) bf__array_unpack(array, tmp, n);
    free(tmp);
    if (rc) {
        bf__set_cf_error(&e);
        return -1;
    }
    if (write && rows > 0) {
        bb->dirty = 1;
        bf__block_sums(bb);
    }
    if (mpi_verbose && comm_rank(comm) == 0)
        fprintf(stderr, "bigfile: %s %lld rows of `%s'\n", what, (long long)total, bb->basename);
    return big_block_seek_rel(bb, ptr, (ptrdiff_t)total);
}

int big_block_mpi_write(BigBlock *bb, BigBlockPtr *ptr, BigArray *array, int concurrency, MPI_Comm comm)
{
    return mpi_io(bb, ptr, array, concurrency, comm, 1);
}

int big_block_mpi_read(BigBlock *bb, BigBlockPtr *ptr, BigArray *array, int concurrency, MPI_Comm comm)
{
    return mpi_io(bb, ptr, array, concurrency, comm, 0);
}

static int mpi_create(BigFile *bf, BigBlock *b, const BigRecordField *f, int Nfile, const size_t fsize[], void *ctx)
{
    return _big_file_mpi_create_block(bf, b, f->name, f->dtype, f->nmemb, Nfile, fsize, *(MPI_Comm *)ctx);
}

static int mpi_open(BigFile *bf, BigBlock *b, const char *name, void *ctx)
{
    return big_file_mpi_open_block(bf, b, name, *(MPI_Comm *)ctx);
}

static int mpi_grow(BigBlock *b, int Nfile, const size_t fsize[], void *ctx)
{
    return big_block_mpi_grow(b, Nfile, fsize, *(MPI_Comm *)ctx);
}

static int mpi_close(BigBlock *b, void *ctx)
{
    return big_block_mpi_close(b, *(MPI_Comm *)ctx);
}

int big_file_mpi_create_records(BigFile *bf, const BigRecordType *rtype, const char *mode, int Nfile,
                                const size_t fsize[], MPI_Comm comm)
{
    static const bf__block_ops collective = {mpi_create, mpi_open, mpi_grow, mpi_close};
    return bf__create_records(bf, rtype, mode, Nfile, fsize, &collective, &comm);
}

static int mpi_records_io(BigFile *bf, const BigRecordType *rtype, ptrdiff_t offset, size_t size, void *buf,
                          int concurrency, MPI_Comm comm, int write)
{
    for (size_t i = 0; i < rtype->nfield; i++) {
        BigArray a;
        BigBlock b;
        BigBlockPtr ptr = {0, 0, 0};
        big_record_view_field(rtype, (int)i, &a, size, buf);
        if (big_file_mpi_open_block(bf, &b, rtype->fields[i].name, comm)) return -1;
        int rc = agree(big_block_seek(&b, &ptr, offset), comm);
        if (!rc) rc = mpi_io(&b, &ptr, &a, concurrency, comm, write);
        if (rc) {
            big_block_mpi_close(&b, comm);
            return -1;
        }
        if (big_block_mpi_close(&b, comm)) return -1;
    }
    return 0;
}

int big_file_mpi_write_records(BigFile *bf, const BigRecordType *rtype, ptrdiff_t offset, size_t size,
                               const void *buf, int concurrency, MPI_Comm comm)
{
    return mpi_records_io(bf, rtype, offset, size, (void *)buf, concurrency, comm, 1);
}

int big_file_mpi_read_records(BigFile *bf, const BigRecordType *rtype, ptrdiff_t offset, size_t size,
                              void *buf, int concurrency, MPI_Comm comm)
{
    return mpi_records_io(bf, rtype, offset, size, buf, concurrency, comm, 0);
}
