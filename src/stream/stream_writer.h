/* stream_writer.h - a stream's writer and its tasks (internal to
 * src/stream/): stream_write.c appends and commits whole tables,
 * stream_part.c commits in parts written by many processes. */
#ifndef CF_STREAM_WRITER_H
#define CF_STREAM_WRITER_H

#include "stats.h"
#include "stream_impl.h"
#include "writer_lock.h"

struct cf_stream_task {
    cf_stream_writer *w;
    int64_t task;
    int64_t file;     /* its physical file: w->fds[file], w->fpaths[file] */
    int64_t bytes;    /* appended so far (held bytes included) */
    int alone;        /* the only task of its file: its chunks follow each other */
    /* small appends wait here (stream_append.c): the last `held` bytes of
     * the task, not yet written nor in crcs and statistics */
    unsigned char *held_buf;
    int64_t held, held_cap;
    uint32_t *crcs;   /* running CRC32C of each chunk */
    int64_t cap;
    int failed;       /* a write failed: no more appends */
    /* statistics (tables that keep them): the chunks before `open` are
     * final in st (scap chunks x nmemb); the rows starting in chunk `open`
     * are folded into acc (nmemb accumulators) */
    cf__stream_stat *st;
    int64_t scap, open;
    cf__acc *acc;
};

struct cf_stream_writer {
    char *path;       /* File path / name: where the stream is published */
    char *dir;        /* where the tasks write: staging until published */
    int owner;        /* made by cf_stream_create: locks and commits */
    int staged;       /* not yet published */
    int durable;
    int parted;       /* committed in parts: the table holds only the owner's tasks */
    cf__lock lock;
    cf__stream_table table;
    cf_stream_task **tasks; /* [tasks]: opened through this handle */
    int *fds;               /* [files]: opened at a first task, shared by its tasks */
    char **fpaths;          /* [files]: their paths as opened */
    /* a reopen in slices (stream_slice.c): no process reads the table whole */
    int64_t head_len;       /* > 0: this writer was made from the table's head lines */
    int64_t table_len;      /* owner: the committed table's bytes */
    uint32_t head_crc, seal_crc; /* owner: of the head lines; the checksum line's */
    int64_t table_read;     /* bytes of the committed table this writer read */
};

/* Statistics of component j of chunk k of t as the next commit records
 * them: final chunks from st, the open chunk from its accumulators, none
 * beyond. */
static inline void cf__stream_task_stat(const cf_stream_task *t, int64_t k, int64_t j, cf__stream_stat *s)
{
    const cf__stream_table *tb = &t->w->table;
    cf__stream_stat none = { 0, 0, 0, 0, 0.0 };
    *s = none;
    if (k < t->open) *s = t->st[k * tb->nmemb + j];
    else if (k == t->open) cf__stream_stat_from_acc(&t->acc[j], s);
}

/* Fold `count` rows that start at task byte `at` into the statistics:
 * each row to the chunk its first byte lies in (stream_write.c). */
int cf__stream_stats_add(cf_stream_task *t, int64_t at, const unsigned char *rows, int64_t count, cf_error *err);

/* Write the task's held bytes (stream_append.c): what a commit or a task
 * state counts is then in its file, its CRC32Cs and statistics.  A failed
 * write fails the task. */
int cf__stream_task_drain(cf_stream_task *t, cf_error *err);

/* A writer for this row type and layout, every task at 0 bytes; and its
 * release (stream_write.c). */
int cf__stream_writer_new(cf_stream_writer **out, cf_file *f, const char *name, const char *dtype, int64_t nmemb,
                          const cf_stream_layout *layout, cf_error *err);
void cf__stream_writer_free(cf_stream_writer *w);

/* Publish the staging directory at the stream's name (stream_write.c). */
int cf__stream_publish(cf_stream_writer *w, cf_error *err);

#endif
