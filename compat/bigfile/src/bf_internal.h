/* bf_internal.h - what the files of the bigfile drop-in share: the private
 * block state behind BigBlock.attrset, the per-thread error message, and
 * the glue between BigBlock's fields and a colfile column handle. */
#ifndef BF_INTERNAL_H
#define BF_INTERNAL_H

#include <stdint.h>

#include "colfile.h"
#include "colfile_binding.h" /* blob sums and discarding a column's pending writes */
#include "colfile/bigfile/bigfile.h"

/* Behind BigBlock.attrset: the colfile handles of the block and the copy
 * of its attributes that big_block_lookup_attr / list_attrs hand out. */
struct BigAttrSet {
    int dirty;           /* big_attrset_set_dirty; attributes are written when set */
    int wrote;           /* this handle wrote rows not yet handed to the commit */
    cf_file *file;       /* the block's own File handle (blocks outlive BigFile) */
    cf_column *col;
    int owns_file;       /* close `file` with the block */
    BigAttr *cache;      /* sorted by name; NULL until asked for */
    size_t ncache;
    int cache_valid;
};

/* The error message of this thread (big_file_get_error_message). */
void bf__set_error(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
/* Take the message of a failed colfile call. */
void bf__set_cf_error(const cf_error *e);

/* bigfile's normalised form: byte order first ('=' and '|' become this
 * machine's), at most 7 characters. */
void bf__dtype_normalize(char dst[8], const char *src);

/* "a" + "/" + "b", or "b" when a is NULL or empty, without doubling '/'
 * (the paths bigfile's serial calls put in BigBlock.basename). */
char *bf__path_join(const char *a, const char *b);

/* The block name colfile takes for a bigfile block name: slashes
 * collapsed, none leading or trailing, "" made ".".  malloc'd. */
char *bf__column_name(const char *blockname);

/* Fill bb's members from its handle (dtype, nmemb, Nfile, fsize, foffset,
 * size, fchecksum); `basename` is taken over.  -1 on out of memory. */
int bf__block_fill(BigBlock *bb, BigAttrSet *st, char *basename);
/* Refresh fchecksum from the handle (after writes and commits). */
void bf__block_sums(BigBlock *bb);
/* Release the members and the private state; zero bb. */
void bf__block_free(BigBlock *bb);
/* A new private state owning f and c. */
BigAttrSet *bf__state_new(cf_file *f, cf_column *c, int owns_file);
/* Forget the attribute copy (after a change). */
void bf__attrs_invalidate(BigAttrSet *st);

/* Rows a BigArray holds for a block of nmemb elements per row, and how its
 * memory maps onto rows: 1 with the row and element strides when colfile
 * can read or write it in place, 0 when it must be packed first. */
int bf__array_rows_layout(const BigArray *a, int nmemb, int64_t *row_stride, int64_t *elem_stride);
/* Copy n elements between a BigArray (from its first element, C order)
 * and packed memory of the array's dtype. */
void bf__array_pack(const BigArray *a, void *packed, size_t n);
void bf__array_unpack(BigArray *a, const void *packed, size_t n);

/* The first row of *ptr. */
static inline ptrdiff_t bf__ptr_row(const BigBlock *bb, const BigBlockPtr *ptr)
{
    return (ptrdiff_t)bb->foffset[ptr->fileid] + ptr->roffset;
}

/* Check a write or read of `rows` rows at `row` against the block and the
 * dtypes (sets the message, returns -1).  `what` is "Writing" or "Reading". */
int bf__check_io(const BigBlock *bb, ptrdiff_t row, int64_t rows, const char *array_dtype,
                 const char *what);

/* Shared by the serial and MPI calls (bf_file.c, bf_io.c). */
int bf__create_column(cf_column **c, cf_file *f, const char *blockname, const char *dtype, int nmemb,
                      int Nfile, const size_t fsize[], cf_error *e);
int bf__grow_column(BigBlock *bb, int Nfile_grow, const size_t fsize_grow[]);
int bf__refill_layout(BigBlock *bb);
/* flags for a writable File handle: CF_OPEN_NODURABLE added when
 * colfile_bigfile_set_durable(0) said so. */
int bf__write_flags(int flags);
int bf__column_io(cf_column *c, int write, int64_t row, int64_t rows, int nmemb, BigArray *a);

/* How big_file_create_records and its MPI twin reach blocks: the serial
 * calls, or the collective ones over the communicator ctx points to. */
typedef struct bf__block_ops {
    int (*create)(BigFile *bf, BigBlock *b, const BigRecordField *f, int Nfile, const size_t fsize[], void *ctx);
    int (*open)(BigFile *bf, BigBlock *b, const char *name, void *ctx);
    int (*grow)(BigBlock *b, int Nfile, const size_t fsize[], void *ctx);
    int (*close)(BigBlock *b, void *ctx);
} bf__block_ops;
/* Every field's block made ("w+") or opened and grown ("a+"), then closed. */
int bf__create_records(BigFile *bf, const BigRecordType *rtype, const char *mode, int Nfile, const size_t fsize[],
                       const bf__block_ops *ops, void *ctx);

#endif
