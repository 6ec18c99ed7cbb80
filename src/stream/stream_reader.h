/* stream_reader.h - a stream reader's state, shared by the whole-table
 * open (stream_read.c) and the open in slices (stream_read_slice.c). */
#ifndef CF_STREAM_READER_H
#define CF_STREAM_READER_H

#include <stdint.h>

#include "stream_impl.h"

struct cf_stream_reader {
    char *path;
    cf__stream_table table;
    int64_t *start; /* [tasks + 1]: each task's first row in the global view */
    int *fds;       /* [files]: opened at first use, -1 before */
    int verify;
    /* an open in slices: every task's row count is known, its chunk
     * records are read from the table when first needed */
    int table_fd;      /* the table as read at the open, or -1 */
    char *head;        /* its head lines */
    int64_t head_len, table_len, table_read;
    uint32_t head_crc, seal_crc;
    int64_t *line_at;  /* [tasks + 1]: where each task's lines start, or NULL */
};

/* A reader of stream `name` of f: the name checked and confined to the
 * File, CF_EKIND for a column, then load(r) reads the table (whole, or its
 * ends) and r gets room for its tasks' first rows (all 0) and files (none
 * open); CF_EARG "<caller>: NULL argument".  r is freed on failure. */
int cf__stream_reader_new(cf_stream_reader **out, cf_file *f, const char *name, const char *caller,
                          int (*load)(cf_stream_reader *, cf_error *), cf_error *err);

/* Make task `task`'s chunk records present (an open in slices reads its
 * lines from the table the first time); 0 for any other reader. */
int cf__stream_reader_need(cf_stream_reader *r, int64_t task, cf_error *err);

#endif
