/* bigfile.h - bigfile 0.1.52's serial C API, implemented over libcolfile.
 *
 * A program written for bigfile's bigfile.h compiles against this header
 * unchanged and links with libcolfile-bigfile instead of libbigfile
 * (pkg-config colfile-bigfile).  Types, struct fields, functions and macros
 * are bigfile's; docs/bigfile-c.md lists where the behaviour differs.
 *
 * Conventions kept from bigfile:
 * - Functions that can fail return 0 on success and -1 on failure, and
 *   then set the message big_file_get_error_message returns.  Here that
 *   message is per thread, so threads that fail at once do not overwrite
 *   each other's.
 * - Every struct member is for reading only; the library fills them.
 * - Sizes and offsets count elements or rows, never bytes, unless named so.
 * - dtype strings are numpy's: an optional byte order ('<', '>', '=', '|'),
 *   a kind letter and a width in bytes, as "<f8", "i4", ">u8".
 */
#ifndef _BIGFILE_H_
#define _BIGFILE_H_
#include <stddef.h>
#include <stdio.h>
#ifdef __cplusplus
extern "C" {
#endif

/* A File: a directory holding blocks (columns). */
typedef struct BigFile {
    char * basename;          /* the directory, as given to open/create */
} BigFile;

/* One attribute, as big_block_lookup_attr and big_block_list_attrs give it. */
typedef struct BigAttr BigAttr;
struct BigAttr {
    int nmemb;                /* elements */
    char dtype[8];            /* normalised: byte order first */
    char * name;
    char * data;              /* nmemb elements of dtype, in its byte order */
};

/* Private state of a block (its attributes and the colfile handle). */
typedef struct BigAttrSet BigAttrSet;

/* A block: a table of `size` rows of `nmemb` elements of `dtype`, stored
 * in Nfile data files. */
typedef struct BigBlock {
    char dtype[8];            /* normalised dtype of the stored elements */
    int nmemb;                /* elements per row */
    char * basename;          /* the block's directory */
    size_t size;              /* rows */
    size_t * fsize;           /* Nfile + 1 entries: rows of each file */
    size_t * foffset;         /* Nfile + 1 entries: first row of each file;
                                 foffset[Nfile] == size */
    unsigned int * fchecksum; /* running byte sum of each file */
    int Nfile;                /* data files */
    BigAttrSet * attrset;     /* private */
    int dirty;                /* 1 while the header needs rewriting */
} BigBlock;

/* A position in a block: file `fileid`, row `roffset` within it, which is
 * row `aoffset` of the block. */
typedef struct BigBlockPtr BigBlockPtr;
struct BigBlockPtr {
    int fileid;
    ptrdiff_t roffset;
    ptrdiff_t aoffset;
};

/* A strided view of memory (at most 32 dimensions) that reads and writes
 * go through.  The elements are visited in C order (last index fastest)
 * and fill the block's rows nmemb elements at a time. */
typedef struct BigArray {
    int ndim;
    char dtype[8];
    ptrdiff_t dims[32];
    ptrdiff_t strides[32];    /* bytes */
    size_t size;              /* elements: the product of dims */
    void * data;
} BigArray;

/* Walks a BigArray element by element (C order). */
typedef struct BigArrayIter {
    ptrdiff_t pos[32];
    BigArray * array;
    int contiguous;           /* 1 if the elements follow each other */
    void * dataptr;           /* the current element */
} BigArrayIter;

/* Bytes a read or write converts at a time.  Here a hint only: colfile
 * moves data in pieces of its own choosing.  Returns 0. */
int big_file_set_buffer_size(size_t bytes);

/* The message of this thread's last failure (owned by the library; NULL
 * before any), and a way to set or clear (NULL) it. */
char * big_file_get_error_message(void);
void big_file_set_error_message(char * msg);

/* Open an existing File (-1 if the directory does not exist), or create
 * one (mkdir -p).  Release with big_file_close. */
int big_file_open(BigFile * bf, const char * basename);
int big_file_create(BigFile * bf, const char * basename);

/* Every block below the File (depth first, each directory's entries in
 * name order, the whole list reversed, as bigfile gives it).  *blocknames
 * and each name are malloc'd: free them. */
int big_file_list(BigFile * bf, char *** blocknames, int * Nblocks);

/* Open block `blockname` (a path below the File; "." or "group/." for the
 * attributes of the File or a group). */
int big_file_open_block(BigFile * bf, BigBlock * block, const char * blockname);

/* Create (or replace) block `blockname`: Nfile files of fsize[i] rows each
 * of nmemb elements of dtype.  dtype NULL makes a block of attributes
 * only (DTYPE <i8, no files). */
int big_file_create_block(BigFile * bf, BigBlock * block, const char * blockname,
                          const char * dtype, int nmemb, int Nfile, const size_t fsize[]);

/* Release the File.  Blocks opened from it stay usable. */
int big_file_close(BigFile * bf);

/* Commit and release a block. */
int big_block_close(BigBlock * block);

/* Add Nfile_grow files of fsize_grow[i] rows after the existing ones; the
 * new rows start at the old size. */
int big_block_grow(BigBlock * bb, int Nfile_grow, const size_t fsize_grow[]);

/* Commit what was written and the attributes; the block stays open. */
int big_block_flush(BigBlock * block);

/* Set the `dirty` members. */
void big_block_set_dirty(BigBlock * block, int value);
void big_attrset_set_dirty(BigAttrSet * attrset, int value);

/* Point *ptr at row `offset` of the block (offset < 0 counts from the end:
 * -1 is size - 1).  The end itself (size) is allowed; past it is -1. */
int big_block_seek(BigBlock * bb, BigBlockPtr * ptr, ptrdiff_t offset);
/* Move *ptr by `rel` rows. */
int big_block_seek_rel(BigBlock * bb, BigBlockPtr * ptr, ptrdiff_t rel);
/* Non-zero if *ptr is at (or past) the end. */
int big_block_eof(BigBlock * bb, BigBlockPtr * ptr);

/* Read array->size / nmemb rows from *ptr into `array`, converting to its
 * dtype, and move *ptr past them.  -1 if they run past the end. */
int big_block_read(BigBlock * bb, BigBlockPtr * ptr, BigArray * array);

/* Read up to `size` rows from row `start` into a new buffer (array->data,
 * release with free()), converted to `dtype` (NULL: the block's).  Fewer
 * rows are read when the block ends first; array->dims[0] tells. */
int big_block_read_simple(BigBlock * bb, ptrdiff_t start, ptrdiff_t size, BigArray * array,
                          const char * dtype);

/* Write the rows in `array` at *ptr and move *ptr past them.  -1 if they
 * run past the end. */
int big_block_write(BigBlock * bb, BigBlockPtr * ptr, BigArray * array);

/* Attributes: small named arrays kept with the block.  set stores nmemb
 * elements of dtype from data (replacing any of that name); get converts
 * the stored value to dtype into data and needs nmemb to be the stored
 * count; remove deletes one (-1 if absent). */
int big_block_set_attr(BigBlock * block, const char * attrname, const void * data,
                       const char * dtype, int nmemb);
int big_block_get_attr(BigBlock * block, const char * attrname, void * data,
                       const char * dtype, int nmemb);
int big_block_remove_attr(BigBlock * block, const char * attrname);

/* One attribute (NULL if absent), or all of them sorted by name (*count of
 * them).  The memory belongs to the block and is valid until its
 * attributes change. */
BigAttr * big_block_lookup_attr(BigBlock * block, const char * attrname);
BigAttr * big_block_list_attrs(BigBlock * block, size_t * count);

/* dtype helpers.  itemsize: the width in bytes; kind: the kind letter.
 * format prints one element of data into buffer (printf format `flags`, or
 * NULL for the default of the kind); parse reads one from buffer (0, or
 * -1 for a dtype it cannot parse). */
int big_file_dtype_itemsize(const char * dtype);
int big_file_dtype_kind(const char * dtype);
void big_file_dtype_format(char * buffer, const char * dtype, const void * data, const char * flags);
int big_file_dtype_parse(const char * buffer, const char * dtype, void * data, const char * fmt);

#define dtype_itemsize big_file_dtype_itemsize
#define dtype_format big_file_dtype_format
#define dtype_parse big_file_dtype_parse

/* Describe memory at buf as an ndim-dimensional array of dtype.  strides
 * (bytes) NULL means C order, packed.  Nothing is copied. */
int big_array_init(BigArray * array, void * buf, const char * dtype, int ndim,
                   const size_t dims[], const ptrdiff_t strides[]);

/* Start at the first element; step to the next (C order). */
int big_array_iter_init(BigArrayIter * iter, BigArray * array);
void big_array_iter_advance(BigArrayIter * iter);

/* Records: a row type made of named fields, each stored as a block of the
 * same name.  Build with add (or set), then complete to lay it out. */
typedef struct BigRecordField {
    char * name;
    char dtype[8];
    int nmemb;
    int offset;               /* bytes from the start of a record */
    int elsize;               /* bytes of one element */
} BigRecordField;

typedef struct BigRecordType {
    BigRecordField * fields;
    size_t nfield;
    size_t itemsize;          /* bytes of one record */
} BigRecordType;

/* Forget every field. */
void big_record_type_clear(BigRecordType * rtype);
/* Append a field; returns its index. */
int big_record_type_add(BigRecordType * rtype, const char * name, const char * dtype, int nmemb);
/* Set field i, adding empty fields up to it. */
void big_record_type_set(BigRecordType * rtype, int i, const char * name, const char * dtype,
                         int nmemb);
/* Compute offsets and itemsize; every field must be set. */
void big_record_type_complete(BigRecordType * rtype);

/* Copy field c of record i of buf from / to data. */
void big_record_set(const BigRecordType * rtype, void * buf, ptrdiff_t i, int c, const void * data);
void big_record_get(const BigRecordType * rtype, const void * buf, ptrdiff_t i, int c, void * data);

/* Describe field i of `size` records at buf as a BigArray. */
int big_record_view_field(const BigRecordType * rtype, int i, BigArray * array, size_t size,
                          void * buf);

/* Write / read `size` records at row `offset` of the field blocks. */
int big_file_write_records(BigFile * bf, const BigRecordType * rtype, ptrdiff_t offset,
                           size_t size, const void * buf);
int big_file_read_records(BigFile * bf, const BigRecordType * rtype, ptrdiff_t offset,
                          size_t size, void * buf);

/* Make the field blocks: mode "w+" creates them with Nfile files of
 * fsize[i] rows, "a+" grows existing ones by those files. */
int big_file_create_records(BigFile * bf, const BigRecordType * rtype, const char * mode,
                            int Nfile, const size_t fsize[]);

#ifdef __cplusplus
}
#endif
#endif
