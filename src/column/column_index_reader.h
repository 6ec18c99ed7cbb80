/* column_index_reader.h - what a handle knows of the chunk index file it
 * reads (internal to column_index.c and column_index_fine.c). */
#ifndef CF_COLUMN_INDEX_READER_H
#define CF_COLUMN_INDEX_READER_H

#include <stdint.h>

#include "column_handle.h"
#include "stindex.h"
#include "stindex_fine.h"

/* What a handle knows of the index file it reads. */
typedef struct cf__index_reader {
    int fd;
    int state;                 /* enum cf_index_state, or -1: not looked at yet */
    cf__index_geom g;
    char problem[CF_ERROR_MESSAGE_MAX];
    int64_t bytes_read;
    int64_t *first_chunk;      /* nfile + 1, from the header and g.chunk_rows */
    int64_t page_no[CF__INDEX_LEVELS_MAX]; /* the page each level has verified last (-1: none) */
    unsigned char *page[CF__INDEX_LEVELS_MAX];
    int fine;                  /* 1: the fine level is there and its head sound */
    cf__fine_geom fg;
    int64_t fine_k;            /* the chunk whose block `block` holds, verified (-1: none) */
    unsigned char *block;
} cf__index_reader;

/* Page p of `level` (records [p*F, ..)), read and verified against its
 * parent's CRC32C (the head's for the top level). */
int cf__index_page(cf_column *c, cf__index_reader *r, int level, int64_t p, const unsigned char **out,
                   cf_error *err);

/* The first row of chunk k (the column's numbering) and its blob *b_out. */
int64_t cf__index_chunk_first_row(const cf_column *c, const cf__index_reader *r, int64_t k, int64_t *b_out);

/* Records [first, first + n) of the fine level, component j
 * (cf_column_index_nodes at level -1; column_index_fine.c). */
int cf__index_fine_nodes(cf_column *c, cf__index_reader *r, int64_t first, int64_t n, int64_t j, cf_chunk_stats *out,
                         cf_error *err);

#endif
