/* stream_impl.h - what the stream files share (docs/format.md 8.7;
 * internal to src/stream/). */
#ifndef CF_STREAM_IMPL_H
#define CF_STREAM_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "colfile_stream.h"

#define CF__STREAM_TABLE "colfile-stream-v1"
#define CF__STREAM_DATA_PREFIX "colfile-stream-data-"

/* What colfile-stream-v1 holds: the layout, the row type and, per task,
 * its committed bytes and the CRC32C of each of its chunks. */
typedef struct cf__stream_table {
    char dtype[CF_DTYPE_MAX]; /* normalised token, or "raw" */
    int64_t nmemb;
    int64_t width;            /* bytes per element (1 for raw) */
    int64_t rowbytes;         /* nmemb x width */
    cf_stream_layout layout;
    int64_t commit;           /* commits so far */
    int64_t *bytes;           /* [tasks] committed bytes */
    uint32_t **crcs;          /* [tasks] ceil(bytes / chunk) CRC32Cs, or NULL */
} cf__stream_table;

/* Check a layout: CF_EARG naming `context` and the value out of range. */
int cf__stream_layout_check(const cf_stream_layout *l, const char *context, cf_error *err);

/* "colfile-stream-data-%06X" of physical file `file`. */
void cf__stream_data_name(int64_t file, char out[40]);

/* Chunks of a task with `bytes` bytes: ceil(bytes / chunk). */
static inline int64_t cf__stream_chunks(int64_t bytes, int64_t chunk)
{
    return bytes / chunk + (bytes % chunk != 0);
}

/* An empty table (every task at 0 bytes) for this row type and layout,
 * checked: CF_EDTYPE, CF_EARG naming `context`. */
int cf__stream_table_init(cf__stream_table *t, const char *dtype, int64_t nmemb, const cf_stream_layout *layout,
                          const char *context, cf_error *err);
void cf__stream_table_free(cf__stream_table *t);

/* Set task `task` to `bytes` bytes with these chunk CRCs (copied). */
int cf__stream_table_set(cf__stream_table *t, int64_t task, int64_t bytes, const uint32_t *crcs,
                         const char *context, cf_error *err);

/* The bytes of colfile-stream-v1 (malloc'd) for t. */
int cf__stream_table_format(const cf__stream_table *t, char **text, size_t *len, const char *context,
                            cf_error *err);

/* Parse colfile-stream-v1 (len bytes; path for messages) into *t. */
int cf__stream_table_parse(cf__stream_table *t, const char *text, size_t len, const char *path, cf_error *err);

#endif
