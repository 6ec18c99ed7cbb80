/* stream_impl.h - what the stream files share (docs/format.md 8.7;
 * internal to src/stream/). */
#ifndef CF_STREAM_IMPL_H
#define CF_STREAM_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "colfile_stream.h"
#include "dtype.h"
#include "stats.h"

#define CF__STREAM_TABLE "colfile-stream-v1"
#define CF__STREAM_DATA_PREFIX "colfile-stream-data-"

/* The statistics of one component of one chunk: the elements of the rows
 * that start in the chunk.  min/max hold the bits of the accumulator's
 * union member (int64, uint64 or double by the dtype's class); sum is the
 * exact sum correctly rounded. */
typedef struct cf__stream_stat {
    int64_t count, nan;
    uint64_t min, max;
    double sum;
} cf__stream_stat;

/* Bytes of one cf__stream_stat in a task state. */
#define CF__STREAM_STAT_BYTES 40

/* What colfile-stream-v1 holds: the layout, the row type and, per task,
 * its committed bytes and the CRC32C of each of its chunks; from version
 * 2 on also each chunk's statistics. */
typedef struct cf__stream_table {
    char dtype[CF_DTYPE_MAX]; /* normalised token, or "raw" */
    int64_t nmemb;
    int64_t width;            /* bytes per element (1 for raw) */
    int64_t rowbytes;         /* nmemb x width */
    cf_stream_layout layout;
    int64_t commit;           /* commits so far */
    int64_t *bytes;           /* [tasks] committed bytes */
    uint32_t **crcs;          /* [tasks] ceil(bytes / chunk) CRC32Cs, or NULL */
    int stats;                /* 1: per-chunk statistics recorded (version 2; never for raw) */
    char cls;                 /* cf__acc_class of the dtype (0 for raw) */
    cf__dtype dt;             /* the dtype parsed (not for raw) */
    cf__stream_stat **st;     /* [tasks] chunks x nmemb statistics, or NULL (stats only) */
} cf__stream_table;

/* The first row of task-local rows starting at or after byte `at`. */
static inline int64_t cf__stream_row_at(int64_t at, int64_t rowbytes)
{
    return at / rowbytes + (at % rowbytes != 0);
}

void cf__stream_stat_from_acc(const cf__acc *a, cf__stream_stat *out);
/* min/max rounded outward to doubles, as cf_column_chunk_stats gives them. */
void cf__stream_stat_fill(const cf__stream_stat *s, char cls, cf_chunk_stats *out);
/* The table line "S <chunk> <component> count= nan= min= max= sum=\n"
 * into out; its length. */
int cf__stream_stat_format(char *out, size_t cap, int64_t chunk, int64_t component, char cls,
                           const cf__stream_stat *s);
/* Parse that line at *p (moved past it); -1 unless exactly as written. */
int cf__stream_stat_parse(const char **p, const char *end, int64_t chunk, int64_t component, char cls,
                          cf__stream_stat *s);

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

/* Set task `task` to `bytes` bytes with these chunk CRCs and, when the
 * table has statistics, chunks x nmemb statistics (both copied). */
int cf__stream_table_set(cf__stream_table *t, int64_t task, int64_t bytes, const uint32_t *crcs,
                         const cf__stream_stat *st, const char *context, cf_error *err);

/* The bytes of colfile-stream-v1 (malloc'd) for t. */
int cf__stream_table_format(const cf__stream_table *t, char **text, size_t *len, const char *context,
                            cf_error *err);

/* The pieces of those bytes, for a table written in parts: the lines
 * before the tasks' (with COMMIT `commit`), the lines of one task (its
 * line, then stat(arg, chunk, component, &s) for each statistics line of
 * a table that keeps them), and the checksum line over all bytes before it
 * (17 bytes and a NUL).  Head, every task's lines in task order and the
 * seal are cf__stream_table_format's bytes. */
int cf__stream_table_head(const cf__stream_table *t, int64_t commit, char **text, size_t *len, const char *context,
                          cf_error *err);
int cf__stream_table_task_lines(const cf__stream_table *t, int64_t task, int64_t bytes, const uint32_t *crcs,
                                void (*stat)(const void *, int64_t, int64_t, cf__stream_stat *), const void *arg,
                                char **text, size_t *len, const char *context, cf_error *err);
void cf__stream_table_seal(uint32_t crc, char out[18]);

/* Parse colfile-stream-v1 (len bytes; path for messages) into *t. */
int cf__stream_table_parse(cf__stream_table *t, const char *text, size_t len, const char *path, cf_error *err);
/* Only the head lines (version to COMMIT, exactly len bytes) into a fresh
 * *t, every task at 0 bytes; then one task's lines (its task line and its
 * statistics lines, exactly len bytes) into t, checked as a whole-table
 * parse checks them.  path names the text in messages. */
int cf__stream_table_parse_head(cf__stream_table *t, const char *text, size_t len, const char *path, cf_error *err);
int cf__stream_table_parse_task(cf__stream_table *t, int64_t task, const char *text, size_t len, const char *path,
                                cf_error *err);

/* The committed table's head lines (malloc'd, *hlen bytes) parsed into
 * *t, its size, the CRC32C its checksum line gives and the head's; bytes
 * read added to *counted.  With keep_fd, the table stays open there (the
 * same file for later slices, whatever commits replace it meanwhile). */
int cf__stream_read_ends(const char *dir, cf__stream_table *t, char **head, int64_t *hlen, int64_t *size,
                         uint32_t *seal, uint32_t *hcrc, int64_t *counted, int *keep_fd, cf_error *err);

/* The task lines that start in bytes [lo, hi) of the table open at fd
 * (size bytes, task lines at head_len..end), read on to the end of the
 * last one's lines: as cf_stream_table_slice gives them, and *text_at the
 * table offset of text's first byte. */
int cf__stream_slice_scan(int fd, const char *path, int64_t size, int64_t head_len, int64_t tasks, int64_t lo,
                          int64_t hi, int64_t end, int64_t *counted, char **text, int64_t *len, int64_t **ends,
                          int64_t *first_task, int64_t *ntasks, int64_t *text_at, uint32_t *crc, cf_error *err);

#endif
