/* colfile_stream.h - task-local streams (docs/format.md 8.7, docs/streams.md).
 *
 * A stream is a column whose writers do not know their sizes in advance:
 * each of its tasks (an MPI rank, or one of several tasks a serial program
 * writes for) appends rows to its own logical stream, any number of times,
 * with no communication, into a few physical files shared by neighbouring
 * tasks, in chunks aligned to the file system's block size.  A commit
 * (cf_stream_flush, cf_stream_close) records how far every task got; a
 * crash leaves the stream absent or at its last commit.  Readers read one
 * task's rows, or all rows as one column: task 0's, then task 1's, ...
 *
 * The conventions of colfile.h hold.  colfile_mpi.h has the collective
 * open, flush and close over a communicator; the functions marked
 * "binding" below are what that layer and the Python package use to move
 * task state between processes.
 */
#ifndef COLFILE_STREAM_H
#define COLFILE_STREAM_H

#include <stddef.h>
#include <stdint.h>

#include "colfile.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The largest chunk and the most files of a stream (docs/format.md 8.7). */
#define CF_STREAM_CHUNK_MAX ((int64_t)1 << 40)
#define CF_STREAM_FILES_MAX 16777216
#define CF_STREAM_TASKS_MAX 2147483647
/* The chunk a stream gets when none is asked for, rounded up to the
 * alignment. */
#define CF_STREAM_CHUNK_DEFAULT ((int64_t)1 << 20)

/* How a stream's tasks are laid out in its physical files. */
typedef struct cf_stream_layout {
    int64_t tasks;  /* P: tasks (1 .. CF_STREAM_TASKS_MAX) */
    int64_t files;  /* M: physical files (1 .. min(P, CF_STREAM_FILES_MAX)) */
    int64_t chunk;  /* C: bytes per chunk, a multiple of align */
    int64_t align;  /* A: the alignment of chunks (the file system's block) */
} cf_stream_layout;

/* ------------------------------------------------------------------ */
/* The layout arithmetic (no I/O, no communication)                    */
/* ------------------------------------------------------------------ */

/* The physical file that holds task `task` of `tasks` tasks over `files`
 * files, with the first task of that file in *first and its task count in
 * *count (either may be NULL); -1 when an argument is out of range. */
CF_API int64_t cf_stream_file_of(int64_t tasks, int64_t files, int64_t task, int64_t *first, int64_t *count);

/* The byte offset, in its physical file, of chunk `block` of task `task`:
 * (block * tasks_in_file + local_task) * chunk; -1 when out of range or
 * beyond 2^62. */
CF_API int64_t cf_stream_chunk_offset(const cf_stream_layout *layout, int64_t task, int64_t block);

/* Fill *out for `tasks` tasks: `files` (0: one), `chunk` (0:
 * CF_STREAM_CHUNK_DEFAULT) and `align` (0: st_blksize of the File's
 * directory); the chunk is rounded up to a multiple of the alignment.
 * CF_EARG naming the value out of range. */
CF_API int cf_stream_layout_choose(cf_stream_layout *out, cf_file *f, int64_t tasks, int64_t files,
                                   int64_t chunk, int64_t align, cf_error *err);

/* The physical files a stream of `tasks` tasks written from `nodes` nodes
 * gets by default: one per node on a network or parallel file system
 * (Lustre, GPFS, BeeGFS, NFS, ...: few files for its metadata servers);
 * one per task on a local one (ext4, xfs, btrfs, tmpfs, zfs, bcachefs,
 * overlayfs), where buffered writes to one file take turns on its inode
 * lock, so that the ranks of a node sharing a file would write one at a
 * time.  Within 1..min(tasks, CF_STREAM_FILES_MAX). */
CF_API int64_t cf_stream_files_default(const cf_file *f, int64_t tasks, int64_t nodes);

/* ------------------------------------------------------------------ */
/* Writing                                                             */
/* ------------------------------------------------------------------ */

typedef struct cf_stream_writer cf_stream_writer;
typedef struct cf_stream_task cf_stream_task;

/* Create stream `name` in File f (opened for writing): rows of `dtype`
 * (a column dtype, docs/format.md 4.3) with `nmemb` elements each, or
 * opaque bytes with dtype "raw" (nmemb 1).  Takes the writer lock of the
 * name and makes a hidden staging directory; nothing is visible at `name`
 * until the first commit, which replaces an existing stream there (never a
 * column: CF_EKIND).  CF_EBUSY when another writer holds the name. */
CF_API int cf_stream_create(cf_stream_writer **out, cf_file *f, const char *name, const char *dtype,
                            int64_t nmemb, const cf_stream_layout *layout, cf_error *err);

/* Reopen the committed stream `name` of f to append more (a job that
 * restarts from its last checkpoint): the layout, dtype and nmemb are the
 * stream's (cf_stream_writer_info), and each task continues after its
 * committed rows; whatever a crash left beyond them is written over.  Takes
 * the writer lock as cf_stream_create does.  CF_ENOENT when there is no
 * stream, CF_EKIND for a column, CF_EFORMAT for a damaged table. */
CF_API int cf_stream_reopen(cf_stream_writer **out, cf_file *f, const char *name, cf_error *err);

/* The layout, dtype (normalised, or "raw") and nmemb of a writer (any
 * pointer may be NULL). */
CF_API void cf_stream_writer_info(const cf_stream_writer *w, cf_stream_layout *layout, char dtype[CF_DTYPE_MAX],
                                  int64_t *nmemb);

/* A handle for writing task `task` (0 .. tasks-1) of w: it opens (and
 * creates) the task's physical file.  A task has at most one handle; it
 * belongs to w and is freed by cf_stream_close or cf_stream_discard.  A
 * task continuing after committed rows (a reopened stream that keeps
 * statistics) reads the rows of its last chunk back to go on with that
 * chunk's statistics exactly.  CF_EARG for a task out of range, CF_EBUSY
 * for one already open, CF_ESHORT or CF_ENOENT naming the physical file
 * when those rows cannot be read. */
CF_API int cf_stream_task_open(cf_stream_task **out, cf_stream_writer *w, int64_t task, cf_error *err);

/* Append `count` rows (dtype "raw": bytes) at the end of the task's
 * stream, with no communication: chunk after chunk, each at the offset
 * cf_stream_chunk_offset gives, folded into their chunks' CRC32Cs and
 * statistics (docs/format.md 8.7) as they are written.  An append of less
 * than 64 KiB is copied into the task's buffer (growing as it fills, to
 * 256 KiB at most) and written with the next append that does not fit
 * there, a larger one, or the next commit; a task alone in its physical
 * file writes across its chunks in one call.  The rows are part of the
 * stream at the next commit.  CF_EIO naming the physical file on a failed write
 * (of this append's bytes, or of earlier ones that waited: the commit
 * reports those it writes); the task then refuses further appends (CF_EIO)
 * and its committed rows stay. */
CF_API int cf_stream_append(cf_stream_task *t, const void *rows, int64_t count, cf_error *err);

/* The rows appended to the task so far (committed or not). */
CF_API int64_t cf_stream_task_rows(const cf_stream_task *t);

/* Commit: make every task opened through w durable and record how far each
 * got in colfile-stream-v1 (docs/format.md 8.7); the first commit makes the
 * stream visible.  Tasks never opened keep their last committed rows (none
 * at first). */
CF_API int cf_stream_flush(cf_stream_writer *w, cf_error *err);

/* Commit as cf_stream_flush, then release w, its tasks and the lock.  w is
 * freed even on failure. */
CF_API int cf_stream_close(cf_stream_writer *w, cf_error *err);

/* Release w without committing: what the last commit recorded stays (a
 * stream never committed is removed).  Accepts NULL. */
CF_API void cf_stream_discard(cf_stream_writer *w);

/* Binding: the directory the tasks write in (the staging directory until
 * the first commit, then the stream's). */
CF_API const char *cf_stream_writer_dir(const cf_stream_writer *w);

/* Binding: a writer on another process for a stream that `owner` (made by
 * cf_stream_create) is writing in directory `dir`: it opens tasks there and
 * never commits nor locks; its tasks' states go to the owner
 * (cf_stream_task_state, cf_stream_commit_states).  Every process must
 * pass the same dtype, nmemb and layout.  When `dir` holds a committed
 * table (a stream reopened by cf_stream_reopen), its tasks continue after
 * their committed rows as the owner's do; a table of another layout or row
 * type is refused (CF_EARG). */
CF_API int cf_stream_join(cf_stream_writer **out, cf_file *f, const char *name, const char *dir, const char *dtype,
                          int64_t nmemb, const cf_stream_layout *layout, cf_error *err);

/* Binding: fsync the task's physical file (unless the File is not
 * durable) and write its state (task, bytes, chunk CRC32Cs; little-endian)
 * into buf (cap bytes; buf may be NULL with cap 0 to learn the size);
 * *len is the size.  CF_ERANGE when cap is too small. */
CF_API int cf_stream_task_state(cf_stream_task *t, void *buf, int64_t cap, int64_t *len, cf_error *err);

/* Binding: the owner records the states (concatenated results of
 * cf_stream_task_state, len bytes) and commits as cf_stream_flush.  A state
 * that would take a task backwards (fewer bytes, another CRC of a chunk
 * committed whole) is refused with CF_EARG, committing nothing. */
CF_API int cf_stream_commit_states(cf_stream_writer *w, const void *states, int64_t len, cf_error *err);

/* Binding: a commit in parts, for many processes (colfile_mpi.h), so that
 * no process holds every task's chunk CRC32Cs and statistics.  The table
 * a commit writes is the owner's first lines (cf_stream_part_begin), then
 * each task's lines in task order (cf_stream_task_part), then a checksum
 * line over all of them (cf_stream_part_end): the same bytes as
 * cf_stream_flush of the same appends.  The owner makes a hidden temporary
 * file in the stream's directory holding its lines; any writer of the
 * stream writes tasks' lines at their offsets (cf_stream_part_write); the
 * owner seals it and renames it over the table, so nothing is visible
 * before that rename (docs/format.md 8.7).  Once an owner has committed in
 * parts, cf_stream_flush and cf_stream_commit_states refuse (CF_EARG): its
 * table no longer holds the other tasks. */

/* Binding: fsync the task's physical file (unless the File is not
 * durable) and give the task's lines of the next table (malloc'd, free
 * with cf_free; *len bytes, no terminator counted) and their CRC32C. */
CF_API int cf_stream_task_part(cf_stream_task *t, char **text, int64_t *len, uint32_t *crc, cf_error *err);

/* Binding, owner only: start a commit in parts: a new hidden temporary
 * file in the stream's directory holding the table's first lines (COMMIT
 * counting on); its path (*tmp, free with cf_free), the length and CRC32C
 * of those lines. */
CF_API int cf_stream_part_begin(cf_stream_writer *w, char **tmp, int64_t *len, uint32_t *crc, cf_error *err);

/* Binding: write len bytes at offset of the temporary file `tmp` that the
 * owner's cf_stream_part_begin made (w: any writer of the stream), then
 * fsync it when `sync` (and the File is durable).  CF_EARG for a path that
 * is not such a file, CF_EIO naming it when the write fails. */
CF_API int cf_stream_part_write(cf_stream_writer *w, const char *tmp, int64_t offset, const void *bytes,
                                int64_t len, int sync, cf_error *err);

/* Binding, owner only: end a commit in parts.  With ok, append the
 * checksum line (crc: the CRC32C of the first len bytes; the callers make
 * sure every part was written, CF_ESHORT when the file ends before len), fsync, and rename the file over the table
 * (the first commit publishes the stream).  Without ok, or on any failure,
 * remove the temporary file: the last commit stays. */
CF_API int cf_stream_part_end(cf_stream_writer *w, const char *tmp, int64_t len, uint32_t crc, int ok,
                              cf_error *err);

/* Binding: the CRC32C of A followed by B, from crc(A), crc(B) and B's
 * length (to join parts' CRCs in any grouping). */
CF_API uint32_t cf_stream_crc32c_join(uint32_t crc_a, uint32_t crc_b, int64_t len_b);

/* Binding: a reopen in slices, for many processes (colfile_mpi.h), so that
 * no process reads or holds the whole committed table.  The owner takes
 * the lock and reads only the table's head lines and checksum line
 * (cf_stream_reopen_head); the other processes make writers from those
 * head lines (cf_stream_join_head); a few readers each read the task lines
 * that start in their byte range of the table (cf_stream_table_slice) and
 * hand each task's lines to the process that writes it, which checks them
 * and continues after them (cf_stream_task_resume, then
 * cf_stream_task_open); the owner checks that the readers' ranges make the
 * table its checksum line seals (cf_stream_slices_check).  Such writers
 * commit in parts only. */

/* Binding, owner: reopen stream `name` as cf_stream_reopen does (lock,
 * errors), reading only the table's head lines (malloc'd in *head, free
 * with cf_free; *head_len bytes) and its checksum line; *table_len is the
 * table's size.  Its tasks' lines are at bytes head_len .. table_len-17. */
CF_API int cf_stream_reopen_head(cf_stream_writer **out, cf_file *f, const char *name, char **head,
                                 int64_t *head_len, int64_t *table_len, cf_error *err);

/* Binding: a writer on another process of the stream the owner reopened in
 * directory `dir`, made from the head lines cf_stream_reopen_head gave; it
 * reads no table, never commits nor locks.  CF_EFORMAT for lines that are
 * not a table's head. */
CF_API int cf_stream_join_head(cf_stream_writer **out, cf_file *f, const char *name, const char *dir,
                               const char *head, int64_t head_len, cf_error *err);

/* Binding: read the lines of the tasks whose task line starts in bytes
 * lo .. hi-1 of the committed table (head_len <= lo <= hi <= end, end =
 * table_len - 17), each with its statistics lines (read beyond hi as far
 * as the last one goes): *ntasks tasks from *first_task on, their lines
 * in *text (*len bytes, malloc'd) ending at the offsets (*ends)[i] in it
 * (malloc'd; free both with cf_free), and the CRC32C of bytes lo .. hi-1
 * in *crc.  CF_EFORMAT naming the table for task lines out of order or
 * out of range, or a first range that does not start with task 0's. */
CF_API int cf_stream_table_slice(cf_stream_writer *w, int64_t lo, int64_t hi, int64_t end, char **text,
                                 int64_t *len, int64_t **ends, int64_t *first_task, int64_t *ntasks,
                                 uint32_t *crc, cf_error *err);

/* Binding: task `task` continues after the committed state its lines give
 * (len bytes, as cf_stream_table_slice gives them), checked as a reader
 * checks a whole table (CF_EFORMAT naming the table and task); call it
 * before cf_stream_task_open of that task. */
CF_API int cf_stream_task_resume(cf_stream_writer *w, int64_t task, const char *lines, int64_t len,
                                 cf_error *err);

/* Binding, owner: the readers' ranges, in order, cover body_len bytes with
 * CRC32C body_crc and hold `tasks` task lines in order (-1: out of order):
 * CF_EFORMAT naming the table unless they make the table its checksum line
 * seals, with every task once. */
CF_API int cf_stream_slices_check(cf_stream_writer *w, int64_t body_len, uint32_t body_crc, int64_t tasks,
                                  cf_error *err);

/* Binding: bytes of the committed table this writer has read (whole by
 * cf_stream_reopen and cf_stream_join; head lines, checksum line and slices
 * by a reopen in slices); -1 for NULL. */
CF_API int64_t cf_stream_writer_table_bytes(const cf_stream_writer *w);

/* ------------------------------------------------------------------ */
/* Reading                                                             */
/* ------------------------------------------------------------------ */

typedef struct cf_stream_reader cf_stream_reader;

/* Open the committed stream `name` of f for reading.  CF_ENOENT when there
 * is none, CF_EKIND when `name` is a column, CF_EFORMAT naming the file and
 * line when its table is damaged. */
CF_API int cf_stream_open(cf_stream_reader **out, cf_file *f, const char *name, cf_error *err);

/* Release a reader.  Accepts NULL. */
CF_API void cf_stream_reader_close(cf_stream_reader *r);

/* The stream's layout, dtype (normalised, or "raw"), elements per row and
 * commit count (any pointer may be NULL). */
CF_API void cf_stream_info(const cf_stream_reader *r, cf_stream_layout *layout, char dtype[CF_DTYPE_MAX],
                           int64_t *nmemb, int64_t *commit);

/* The bytes of one row (nmemb x width; 1 for "raw"). */
CF_API int64_t cf_stream_row_bytes(const cf_stream_reader *r);

/* Rows of the whole stream (every task's). */
CF_API int64_t cf_stream_size(const cf_stream_reader *r);

/* Committed rows of task `task`, and its first row in the global view;
 * -1 for a task out of range. */
CF_API int64_t cf_stream_task_size(const cf_stream_reader *r, int64_t task);
CF_API int64_t cf_stream_task_start(const cf_stream_reader *r, int64_t task);

/* Check each chunk's CRC32C when a read covers all its committed bytes
 * (CF_ECHECKSUM naming the file, task and chunk on a mismatch). */
CF_API void cf_stream_set_verify(cf_stream_reader *r, int on);

/* Read rows start .. start+count-1 of task `task` into buf (count x
 * row bytes, the stream's dtype).  CF_ERANGE beyond the task's rows,
 * CF_ESHORT/CF_ENOENT naming a physical file that lacks committed bytes. */
CF_API int cf_stream_read_task(cf_stream_reader *r, int64_t task, int64_t start, int64_t count, void *buf,
                               cf_error *err);

/* Read rows start .. start+count-1 of the global view (task 0's rows, then
 * task 1's, ...) into buf, as cf_stream_read_task. */
CF_API int cf_stream_read(cf_stream_reader *r, int64_t start, int64_t count, void *buf, cf_error *err);

/* Where chunk `block` of task `task` is: its physical file, offset, the
 * committed bytes in it and their CRC32C.  CF_ERANGE when the task has no
 * such chunk. */
CF_API int cf_stream_chunk(const cf_stream_reader *r, int64_t task, int64_t block, int64_t *file,
                           int64_t *offset, int64_t *bytes, uint32_t *crc, cf_error *err);

/* Statistics of component `component` of chunk `block` of task `task`,
 * computed as the task appended: the elements of the rows that start in
 * the chunk (blob: the task, first_row: the first of those rows in the
 * global view, rows: how many, possibly 0), as cf_column_chunk_stats gives
 * a column's.  valid is 0 when the stream records none (a raw stream, or
 * one written before streams kept statistics).  CF_ERANGE when there is no
 * such chunk or component. */
CF_API int cf_stream_chunk_stats(const cf_stream_reader *r, int64_t task, int64_t block, int64_t component,
                                 cf_chunk_stats *out, cf_error *err);

/* Verify chunk `block` of task `task`: read its committed bytes and
 * compare their CRC32C with the one the table records.  0 when intact;
 * CF_ECHECKSUM on a mismatch, CF_ESHORT when the physical file ends before
 * them, CF_ENOENT when the file is missing, each naming the file, task,
 * chunk and offset (colfile check).  CF_ERANGE when there is no such chunk. */
CF_API int cf_stream_check_chunk(cf_stream_reader *r, int64_t task, int64_t block, cf_error *err);

/* Binding: an open in slices, for many processes reading the global view
 * (colfile_mpi.h's cf_mpi_stream_open), so that no process reads or holds
 * the whole committed table.  The owner reads the table's head lines and
 * checksum line (cf_stream_open_head); the others do the same and check
 * they got the owner's head (cf_stream_join_reader); every process keeps
 * the table open.  A few readers each read the task lines that start in
 * their byte range (cf_stream_reader_slice); the owner checks that the
 * ranges make the sealed table (cf_stream_reader_slices_check); every
 * process then gets each task's committed bytes and where its lines start
 * (cf_stream_reader_index: 16 bytes a task) and reads a task's chunk
 * records from the open table when it first reads or asks about that task.
 * Until cf_stream_reader_index every task has 0 rows. */

/* Binding: open stream `name` as cf_stream_open does (errors alike),
 * reading only the table's head lines (*head, *head_len bytes, held by the
 * reader) and its checksum line; *table_len is the table's size.  Its
 * tasks' lines are at bytes head_len .. table_len-17. */
CF_API int cf_stream_open_head(cf_stream_reader **out, cf_file *f, const char *name, const char **head,
                               int64_t *head_len, int64_t *table_len, cf_error *err);

/* Binding: as cf_stream_open_head, on another process: CF_EREPLACED naming
 * the table unless it reads the same head lines and table size the owner
 * read (a commit came in between). */
CF_API int cf_stream_join_reader(cf_stream_reader **out, cf_file *f, const char *name, const char *head,
                                 int64_t head_len, int64_t table_len, cf_error *err);

/* Binding: read the lines of the tasks whose task line starts in bytes
 * lo .. hi-1 of the table (head_len <= lo <= hi <= table_len - 17), as
 * cf_stream_table_slice does, and keep their chunk records: *ntasks tasks
 * from *first_task on, where each one's lines start ((*line_at)[i], and
 * [*ntasks] where the last one's end), their committed bytes (*bytes)[i]
 * (both malloc'd: free with cf_free), the CRC32C of bytes lo .. hi-1 in
 * *crc.  CF_EFORMAT naming the table and task for damaged lines. */
CF_API int cf_stream_reader_slice(cf_stream_reader *r, int64_t lo, int64_t hi, int64_t *first_task,
                                  int64_t *ntasks, int64_t **line_at, int64_t **bytes, uint32_t *crc,
                                  cf_error *err);

/* Binding, owner: as cf_stream_slices_check, for an open in slices. */
CF_API int cf_stream_reader_slices_check(cf_stream_reader *r, int64_t body_len, uint32_t body_crc, int64_t tasks,
                                         cf_error *err);

/* Binding: every task's committed bytes (bytes[tasks]) and where its lines
 * start (line_at[tasks + 1], the last at table_len - 17), as the readers'
 * slices gave them: the global view's row counts.  CF_EFORMAT naming the
 * table for offsets out of order or bytes not whole rows. */
CF_API int cf_stream_reader_index(cf_stream_reader *r, const int64_t *bytes, const int64_t *line_at,
                                  cf_error *err);

/* Bytes of the committed table this reader has read (the whole table by
 * cf_stream_open; by an open in slices its head and checksum lines, its
 * slice and the lines of the tasks it has read); -1 for NULL. */
CF_API int64_t cf_stream_reader_table_bytes(const cf_stream_reader *r);

/* The streams of File f (directories holding colfile-stream-v1 and no
 * header, found by the listing walk of docs/format.md 2.3), sorted; free
 * with cf_names_free. */
CF_API int cf_file_list_streams(cf_file *f, char ***names, int64_t *count, cf_error *err);

#ifdef __cplusplus
}
#endif

#endif
