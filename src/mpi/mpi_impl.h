/* mpi_impl.h - what the files of libcolfile_mpi share (internal): errors,
 * how the ranks of a collective agree and take turns (mpi_agree.c), and
 * the steps that creating, writing and closing share (mpi_column.c,
 * mpi_io.c, mpi_close.c). */
#ifndef CF_MPI_IMPL_H
#define CF_MPI_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "colfile_mpi.h"

/* Largest message of one MPI call: counts are int. */
#define MSG_MAX ((int64_t)1 << 30)
/* The sizes below can be made tiny at compile time, so that the tests
 * exercise the paths that real runs take only at scale. */
/* Aggregation: a leader gathers and writes at most this much at once. */
#ifndef CF_MPI_PIECE_BYTES
#define CF_MPI_PIECE_BYTES MSG_MAX
#endif
/* Close: rank 0 gathers pending write state in rounds of this many bytes. */
#ifndef CF_MPI_ROUND_BYTES
#define CF_MPI_ROUND_BYTES MSG_MAX
#endif
/* Broadcasts of metadata go in pieces this size, so that a rank that
 * cannot allocate the whole can still take part (into a stack buffer). */
#ifndef CF_MPI_BCAST_CHUNK
#define CF_MPI_BCAST_CHUNK ((int64_t)16 << 10)
#endif
#define BCAST_CHUNK CF_MPI_BCAST_CHUNK
/* The tag of throttling tokens (on a duplicate of the caller's comm). */
#define TAG_TURN 0x5cf1

/* ---- errors (mpi_agree.c) ----------------------------------------------- */

/* Fill *e (if not NULL) with code and the message; returns code. */
#if defined(__GNUC__)
__attribute__((format(printf, 5, 6)))
#endif
int cf__mpi_fail(cf_error *e, int code, const char *file, int line, const char *fmt, ...);

#define FAIL(e, code, ...) cf__mpi_fail((e), (code), __FILE__, __LINE__, __VA_ARGS__)

/* An empty error record naming the file that makes it. */
static inline void cf__mpi_error_init(cf_error *e, const char *file)
{
    e->code = 0;
    e->source_line = 0;
    e->source_file = file;
    e->message[0] = '\0';
}
#define error_init(e) cf__mpi_error_init((e), __FILE__)

static inline int rank_of(MPI_Comm comm)
{
    int r;
    MPI_Comm_rank(comm, &r);
    return r;
}

static inline int size_of(MPI_Comm comm)
{
    int n;
    MPI_Comm_size(comm, &n);
    return n;
}

/* Rank `from` failed with `rc` (its record: *local): give every rank that
 * code and the message prefixed "rank N: ".  Collective. */
int cf__mpi_spread_error(MPI_Comm comm, int from, int rc, const cf_error *local, cf_error *err);

/* Every rank has done a step with result rc: 0 if all succeeded, else the
 * code and message of the lowest failing rank, on every rank.  Collective. */
int cf__mpi_agree(MPI_Comm comm, int rc, const cf_error *local, cf_error *err);

/* Rank 0 did a step alone with result rc and produced *len bytes to send:
 * every rank gets its result and the length.  Collective. */
int cf__mpi_root_result(MPI_Comm comm, int rc, const cf_error *local, int64_t *len, cf_error *err);

/* root_result and a broadcast of rank 0's bytes in one: rank 0 did a step alone with result
 * rc, producing *len bytes at *buf; every rank gets the result and, if it
 * is 0, the bytes (the others in a new buffer at *buf, NULL and CF_ENOMEM
 * if they cannot allocate one; they still take part).  The result and the
 * first FIRST_PIECE bytes go in one broadcast, so a small result costs one.
 * Returns rank 0's failure (on every rank alike); else 0, and *lrc gets
 * this rank's allocation result (not agreed).  Collective. */
int cf__mpi_root_share(MPI_Comm comm, int rc, const cf_error *local, void **buf, int64_t *len, int *lrc_out,
                       cf_error *e, cf_error *err);

/* ---- arguments that must agree (mpi_agree.c) ----------------------------- */

typedef struct {
    const char *name;
    int64_t value;
} int_field;

typedef struct {
    const char *name;
    const char *value; /* NULL allowed */
} str_field;

#define MAX_FIELDS 16

/* Compare integers and strings with rank 0's (rank 0 broadcasts its own).
 * `rc` is this rank's result so far: a failed rank takes part without
 * comparing.  Returns rc, or CF_EARG naming the first difference.  Every
 * rank's ints[i].value is replaced by rank 0's, so that what follows
 * (turns, groups) is the same everywhere even before the agreement.
 * Collective. */
int cf__mpi_check_same(MPI_Comm comm, const char *what, int_field *ints, int nint,
                       const str_field *strs, int nstr, int rc, cf_error *e);

/* cf_dtype_normalize, its error naming `where` (a column), as the core's
 * own errors for that column do. */
int cf__mpi_normalize_dtype(const char *dtype, char out[CF_DTYPE_MAX], const char *where, cf_error *e);

/* 64-bit FNV-1a of a string (NULL and "" differ). */
int64_t cf__mpi_text_hash(const char *t);

/* check_same followed by agree, in one MPI_Allreduce when all is well:
 * every rank contributes, per field, its value and the value's complement
 * (strings: their length and hash), and whether it failed; the maxima tell
 * whether every rank holds the same values (max(v) == ~max(~v)) and which
 * rank failed first.  Only on a difference do the broadcasts of check_same
 * follow, to name it.  Returns the agreed result; on success every rank's
 * ints hold rank 0's values.  Collective. */
int cf__mpi_check_agree(MPI_Comm comm, const char *what, int_field *ints, int nint, const str_field *strs, int nstr,
                        int rc, cf_error *e, cf_error *err);

/* ---- options and turns (mpi_agree.c) -------------------------------------- */

/* Copy *opt (NULL: defaults) with the zeros replaced by the defaults. */
int cf__mpi_resolve_options(const cf_mpi_options *opt, cf_mpi_options *o, cf_error *e);

/* The turns of cf_plan_turn over `count` participants (all ranks, or the
 * group leaders), this rank being participant `index` (-1: not one).
 * Participant i is in turn i % nturns; each run of nturns consecutive
 * participants goes one after the other, passing a token, so at most
 * `concurrency` are busy at once and nothing else waits. */
typedef struct {
    MPI_Comm comm;  /* a duplicate of the caller's; MPI_COMM_NULL for one turn */
    int64_t index, count, nturns;
    int prev, next; /* ranks of participants index-1 and index+1 */
} turns;

/* Collective (the duplicate is made only when there is more than one turn,
 * which every rank knows alike). */
void cf__mpi_turns_open(turns *t, MPI_Comm comm, int64_t index, int64_t count, int prev, int next,
                        int64_t concurrency);
void cf__mpi_turn_begin(const turns *t);
void cf__mpi_turn_end(const turns *t);
void cf__mpi_turns_close(turns *t);

/* ---- steps that several calls share ---------------------------------------- */

/* One rank's checks of a create's arguments; dt gets the normalised dtype. */
int cf__mpi_check_create_args(cf_file *f, const char *name, const char *dtype, int64_t nmemb, int64_t local_rows,
                              char dt[CF_DTYPE_MAX], cf_error *e);

/* Rank 0: plan the blobs of a new column from every rank's rows and create
 * it (see cf_mpi_column_create). */
int cf__mpi_create_planned(cf_column **out, cf_file *f, const char *name, const char *dt, int64_t nmemb,
                           const int64_t *rank_rows, int size, const cf_mpi_options *o, cf_error *e);

/* Checks of one rank's write or read arguments, before any I/O. */
int cf__mpi_check_io_args(const cf_column *c, int for_write, int64_t start, int64_t count, const void *buf,
                          const char *buf_dtype, cf_error *e);

/* One rank's rows in a write, for finding overlaps. */
typedef struct {
    int64_t start, end;
    int rank;
} span;

/* The first overlap of the ranks' non-empty ranges (ranges: start, count
 * per rank), found the same way on every rank (and by colfile.mpi): sorted
 * by start (then rank), the first range that starts before the furthest
 * end seen so far overlaps the range of that end.  Returns 1 and the two
 * ranks (*lo < *hi) if there is one.  `spans` holds `size` entries. */
int cf__mpi_find_overlap(const int64_t *ranges, int size, span *spans, int *lo, int *hi);
/* The same as every rank's answer for column `path`: 0 without an overlap,
 * else CF_EARG on every rank, the lower rank of the first overlapping pair
 * naming both ranges (collective; e is this rank's scratch record). */
int cf__mpi_overlap_error(MPI_Comm comm, const int64_t *ranges, int size, span *spans, const char *path, cf_error *e,
                          cf_error *err);

/* Append len bytes to the growing buffer *buf (*used of *cap). */
int cf__mpi_grow_append(unsigned char **buf, size_t *used, size_t *cap, const void *p, size_t len);

/* Gathers to rank 0 in rounds (mpi_close.c): where the round of ranks
 * [r0, *r1) ends and its bytes (lens: each rank's, at least one rank a
 * round, at most CF_MPI_ROUND_BYTES together otherwise); the bytes of the
 * largest round; rank 0's MPI_Gatherv counts and displacements for one. */
int64_t cf__mpi_round_end(const int64_t *lens, int size, int r0, int *r1);
int64_t cf__mpi_largest_round(const int64_t *lens, int size);
void cf__mpi_round_layout(const int64_t *lens, int size, int r0, int r1, int *counts, int *displs);

/* Close a large writable data column by chunk owners (mpi_owners.c):
 * the steps before rank 0's commit.  lrc: this rank's result so far.
 * Returns the agreed result of the steps (nonzero: nothing was moved,
 * some rank's state may be lost); then *merged is rank 0's result of what
 * it took in (0 elsewhere), not yet agreed.  Collective. */
int cf__mpi_owner_close(cf_column *c, MPI_Comm comm, int lrc, int *merged, cf_error *e, cf_error *err);

/* For the tests (tests/mpi/test_mpi_owners*.c): the bytes rank 0 received
 * in closes and in the gathers of appends so far, and, when set, every
 * column closes the gathering way. */
extern int64_t cf__mpi_close_root_bytes;
extern int cf__mpi_close_gather_all;

/* Tell f how many ranks of comm share this node and the CPUs they may
 * run on together (cf_file_set_node).  Collective over comm. */
void cf__mpi_set_node(cf_file *f, MPI_Comm comm);

#endif
