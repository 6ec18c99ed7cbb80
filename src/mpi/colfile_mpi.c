/* colfile_mpi.c - collective I/O over libcolfile (include/colfile_mpi.h).
 *
 * Glue only: every decision about blobs, turns, groups and modes is made by
 * the core's cf_plan_* functions, every byte on disk is written by the core.
 * What lives here is moving numbers and bytes between ranks, and making
 * every rank return the same result.
 *
 * The pattern of each collective: every rank does its local step, then
 * they agree (agree(): the lowest failing rank's code and message go to
 * all).  A step done by rank 0 alone is followed by root_result(), a
 * broadcast of its code.  No rank leaves a collective early, and every
 * buffer a rank must receive into is allocated before the agreement that
 * precedes the exchange, or received in small pieces when allocation fails,
 * so that no failure on one rank can leave another waiting.
 */
#include "colfile_mpi.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* ---- errors ------------------------------------------------------------ */

#if defined(__GNUC__)
__attribute__((format(printf, 4, 5)))
#endif
static int fail(cf_error *e, int code, int line, const char *fmt, ...)
{
    if (e) {
        va_list ap;
        e->code = code;
        e->source_file = __FILE__;
        e->source_line = line;
        va_start(ap, fmt);
        vsnprintf(e->message, sizeof e->message, fmt, ap);
        va_end(ap);
    }
    return code;
}

#define FAIL(e, code, ...) fail((e), (code), __LINE__, __VA_ARGS__)

static void error_init(cf_error *e)
{
    e->code = 0;
    e->source_line = 0;
    e->source_file = __FILE__;
    e->message[0] = '\0';
}

static int rank_of(MPI_Comm comm)
{
    int r;
    MPI_Comm_rank(comm, &r);
    return r;
}

static int size_of(MPI_Comm comm)
{
    int n;
    MPI_Comm_size(comm, &n);
    return n;
}

/* What travels when a rank's failure is made everyone's. */
typedef struct {
    int code;
    char message[CF_ERROR_MESSAGE_MAX];
} wire_error;

/* Rank `from` failed with `rc` (its record: *local): give every rank that
 * code and the message prefixed "rank N: ".  Collective. */
static int spread_error(MPI_Comm comm, int from, int rc, const cf_error *local, cf_error *err)
{
    int rank = rank_of(comm);
    wire_error w;
    memset(&w, 0, sizeof w);
    if (rank == from) {
        int n = snprintf(w.message, sizeof w.message, "rank %d: ", rank);
        size_t room = sizeof w.message - (size_t)n - 1, len = strlen(local->message);
        memcpy(w.message + n, local->message, len < room ? len : room);
        w.code = rc;
    }
    MPI_Bcast(&w, (int)sizeof w, MPI_BYTE, from, comm);
    if (err) {
        err->code = w.code;
        err->source_file = rank == from ? local->source_file : __FILE__;
        err->source_line = rank == from ? local->source_line : __LINE__;
        memcpy(err->message, w.message, sizeof err->message);
    }
    return w.code;
}

/* Every rank has done a step with result rc: 0 if all succeeded, else the
 * code and message of the lowest failing rank, on every rank.  Collective. */
static int agree(MPI_Comm comm, int rc, const cf_error *local, cf_error *err)
{
    int rank = rank_of(comm), size = size_of(comm);
    int mine = rc ? rank : size, first;
    MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm);
    if (first == size) return 0;
    return spread_error(comm, first, rc, local, err);
}

/* Rank 0 did a step alone with result rc and produced *len bytes to send:
 * every rank gets its result and the length.  Collective. */
static int root_result(MPI_Comm comm, int rc, const cf_error *local, int64_t *len, cf_error *err)
{
    int64_t h[2] = { rc, *len };
    MPI_Bcast(h, 2, MPI_INT64_T, 0, comm);
    if (h[0] == 0) {
        *len = h[1];
        return 0;
    }
    return spread_error(comm, 0, (int)h[0], local, err);
}

/* Broadcast len bytes from rank 0.  A rank passing buf NULL takes part
 * without keeping them (it could not allocate).  Collective. */
static void bcast_bytes(MPI_Comm comm, void *buf, int64_t len)
{
    unsigned char scratch[BCAST_CHUNK];
    for (int64_t off = 0; off < len; off += BCAST_CHUNK) {
        int64_t n = len - off < BCAST_CHUNK ? len - off : BCAST_CHUNK;
        MPI_Bcast(buf ? (unsigned char *)buf + off : scratch, (int)n, MPI_BYTE, 0, comm);
    }
}

/* Send rank 0's `len` bytes (rank 0: *buf) to all: the others get a new
 * buffer in *buf (NULL and CF_ENOMEM if they cannot allocate one; they
 * still take part).  Collective. */
static int bcast_alloc(MPI_Comm comm, void **buf, int64_t len, cf_error *e)
{
    int rc = 0;
    if (rank_of(comm) != 0) {
        *buf = malloc(len > 0 ? (size_t)len : 1);
        if (!*buf) rc = FAIL(e, CF_ENOMEM, "out of memory for %lld bytes from rank 0", (long long)len);
    }
    bcast_bytes(comm, *buf, len);
    return rc;
}

/* ---- arguments that must agree ------------------------------------------ */

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
static int check_same(MPI_Comm comm, const char *what, int_field *ints, int nint,
                      const str_field *strs, int nstr, int rc, cf_error *e)
{
    int64_t head[MAX_FIELDS], mine[MAX_FIELDS];
    int rank = rank_of(comm);
    for (int i = 0; i < nint; i++) mine[i] = ints[i].value;
    for (int j = 0; j < nstr; j++) mine[nint + j] = strs[j].value ? (int64_t)strlen(strs[j].value) : -1;
    memcpy(head, mine, (size_t)(nint + nstr) * sizeof *head);
    MPI_Bcast(head, nint + nstr, MPI_INT64_T, 0, comm);
    for (int i = 0; i < nint; i++) ints[i].value = head[i];
    int64_t total = 0;
    for (int j = 0; j < nstr; j++) total += head[nint + j] > 0 ? head[nint + j] : 0;
    char *text = NULL;
    if (total > 0) {
        text = malloc((size_t)total);
        if (text && rank == 0) {
            int64_t off = 0;
            for (int j = 0; j < nstr; j++) {
                if (head[nint + j] > 0) memcpy(text + off, strs[j].value, (size_t)head[nint + j]);
                off += head[nint + j] > 0 ? head[nint + j] : 0;
            }
        }
        if (!text && rc == 0) rc = FAIL(e, CF_ENOMEM, "%s: out of memory", what);
        bcast_bytes(comm, text, total);
    }
    for (int i = 0; i < nint && rc == 0; i++)
        if (head[i] != mine[i])
            rc = FAIL(e, CF_EARG, "%s: %s is %lld here but %lld on rank 0 (it must be the same on every rank)",
                      what, ints[i].name, (long long)mine[i], (long long)head[i]);
    int64_t off = 0;
    for (int j = 0; j < nstr && rc == 0; j++) {
        int64_t n = head[nint + j];
        if (n != mine[nint + j] || (n > 0 && memcmp(text + off, strs[j].value, (size_t)n) != 0)) {
            char theirs[256];
            if (n < 0) snprintf(theirs, sizeof theirs, "NULL");
            else snprintf(theirs, sizeof theirs, "'%.*s'", (int)(n < 200 ? n : 200), text + off);
            rc = FAIL(e, CF_EARG, "%s: %s is %s%.200s%s here but %s on rank 0 (it must be the same on every rank)",
                      what, strs[j].name, strs[j].value ? "'" : "", strs[j].value ? strs[j].value : "NULL",
                      strs[j].value ? "'" : "", theirs);
        }
        off += n > 0 ? n : 0;
    }
    free(text);
    return rc;
}

/* ---- options --------------------------------------------------------------- */

void cf_mpi_options_init(cf_mpi_options *o)
{
    if (!o) return;
    memset(o, 0, sizeof *o);
    o->mode = CF_IO_AUTO;
}

/* Copy *opt (NULL: defaults) with the zeros replaced by the defaults. */
static int resolve_options(const cf_mpi_options *opt, cf_mpi_options *o, cf_error *e)
{
    cf_mpi_options_init(o);
    if (opt) *o = *opt;
    if (o->mode != CF_IO_AUTO && o->mode != CF_IO_THROTTLED && o->mode != CF_IO_AGGREGATED)
        return FAIL(e, CF_EARG, "options: mode %d is not CF_IO_AUTO, CF_IO_THROTTLED or CF_IO_AGGREGATED", o->mode);
    if (o->nfile < 0 || o->blob_bytes < 0 || o->group_bytes < 0 || o->small_bytes < 0)
        return FAIL(e, CF_EARG, "options: nfile, blob_bytes, group_bytes and small_bytes must not be negative");
    if (o->align_blobs_to_ranks != 0 && o->align_blobs_to_ranks != 1)
        return FAIL(e, CF_EARG, "options: align_blobs_to_ranks must be 0 or 1, got %d", o->align_blobs_to_ranks);
    if (o->concurrency == 0) o->concurrency = CF_PLAN_CONCURRENCY;
    if (o->concurrency < 0) o->concurrency = 0; /* all at once (cf_plan_turn) */
    if (o->blob_bytes == 0) o->blob_bytes = CF_PLAN_BLOB_BYTES;
    if (o->group_bytes == 0) o->group_bytes = CF_PLAN_GROUP_BYTES;
    if (o->small_bytes == 0) o->small_bytes = CF_PLAN_SMALL_BYTES;
    return 0;
}

/* ---- taking turns ------------------------------------------------------- */

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
static void turns_open(turns *t, MPI_Comm comm, int64_t index, int64_t count, int prev, int next,
                       int64_t concurrency)
{
    t->comm = MPI_COMM_NULL;
    t->index = index;
    t->count = count;
    t->prev = prev;
    t->next = next;
    cf_plan_turn(index < 0 ? 0 : index, count, concurrency, &t->nturns);
    if (t->nturns > 1) MPI_Comm_dup(comm, &t->comm);
}

static void turn_begin(const turns *t)
{
    char token;
    if (t->comm != MPI_COMM_NULL && t->index >= 0 && t->index % t->nturns != 0)
        MPI_Recv(&token, 0, MPI_BYTE, t->prev, TAG_TURN, t->comm, MPI_STATUS_IGNORE);
}

static void turn_end(const turns *t)
{
    char token = 0;
    if (t->comm != MPI_COMM_NULL && t->index >= 0 && t->index % t->nturns != t->nturns - 1 &&
        t->index + 1 < t->count)
        MPI_Send(&token, 0, MPI_BYTE, t->next, TAG_TURN, t->comm);
}

static void turns_close(turns *t)
{
    if (t->comm != MPI_COMM_NULL) MPI_Comm_free(&t->comm);
}

/* ---- Files --------------------------------------------------------------- */

int cf_mpi_file_open(cf_file **out, MPI_Comm comm, const char *path, int flags, cf_error *err)
{
    if (comm == MPI_COMM_NULL) return FAIL(err, CF_EARG, "cf_mpi_file_open: MPI_COMM_NULL");
    cf_error e;
    error_init(&e);
    int rank = rank_of(comm), rc = 0;
    if (!out || !path) rc = FAIL(&e, CF_EARG, "cf_mpi_file_open: NULL argument");
    int_field ints[] = { { "flags", flags } };
    str_field strs[] = { { "path", path } };
    rc = check_same(comm, "cf_mpi_file_open", ints, 1, strs, 1, rc, &e);
    if ((rc = agree(comm, rc, &e, err))) return rc;
    /* The others trust rank 0, which creates or truncates once; they keep
     * the bits that change how their handle behaves (durability, torn
     * columns, verified reads, the shared lock). */
    cf_file *f = NULL;
    int keep = CF_OPEN_WRITE | CF_OPEN_NODURABLE | CF_OPEN_TORN_OK | CF_OPEN_VERIFY | CF_OPEN_NOLOCK | CF_OPEN_NOLOCKING;
    rc = rank == 0 ? cf_file_open(&f, path, flags, &e)
                   : cf_file_open(&f, path, (flags & keep) | CF_OPEN_NOCHECK, &e);
    if ((rc = agree(comm, rc, &e, err))) {
        cf_file_close(f);
        return rc;
    }
    *out = f;
    return 0;
}

int cf_mpi_file_list(cf_file *f, MPI_Comm comm, char ***names, int64_t *count, cf_error *err)
{
    if (comm == MPI_COMM_NULL) return FAIL(err, CF_EARG, "cf_mpi_file_list: MPI_COMM_NULL");
    cf_error e;
    error_init(&e);
    int rank = rank_of(comm), rc = 0;
    if (!f || !names || !count) rc = FAIL(&e, CF_EARG, "cf_mpi_file_list: NULL argument");
    /* Rank 0 lists; the names travel NUL-terminated, one after the other. */
    char **list = NULL;
    int64_t n = 0, len = 0;
    char *packed = NULL;
    if (rank == 0 && rc == 0 && (rc = cf_file_list(f, &list, &n, &e)) == 0) {
        for (int64_t i = 0; i < n; i++) len += (int64_t)strlen(list[i]) + 1;
        packed = malloc(len > 0 ? (size_t)len : 1);
        if (!packed) {
            rc = FAIL(&e, CF_ENOMEM, "%s: out of memory", cf_file_path(f));
        } else {
            int64_t off = 0;
            for (int64_t i = 0; i < n; i++) {
                size_t k = strlen(list[i]) + 1;
                memcpy(packed + off, list[i], k);
                off += (int64_t)k;
            }
        }
    }
    cf_names_free(list, n);
    list = NULL;
    if ((rc = root_result(comm, rc, &e, &len, err))) goto done;
    int lrc = bcast_alloc(comm, (void **)&packed, len, &e);
    n = 0;
    for (int64_t off = 0; lrc == 0 && off < len; off += (int64_t)strlen(packed + off) + 1) n++;
    if (lrc == 0) {
        list = calloc((size_t)n + 1, sizeof *list);
        if (!list) lrc = FAIL(&e, CF_ENOMEM, "out of memory for %lld names", (long long)n);
        int64_t off = 0;
        for (int64_t i = 0; lrc == 0 && i < n; i++) {
            list[i] = strdup(packed + off);
            if (!list[i]) lrc = FAIL(&e, CF_ENOMEM, "out of memory for %lld names", (long long)n);
            off += (int64_t)strlen(packed + off) + 1;
        }
    }
    if (lrc == 0 && (!names || !count)) lrc = FAIL(&e, CF_EARG, "cf_mpi_file_list: NULL argument");
    if ((rc = agree(comm, lrc, &e, err))) {
        cf_names_free(list, n);
        goto done;
    }
    *names = list;
    *count = n;
done:
    free(packed);
    return rc;
}

/* ---- Columns: create and open ------------------------------------------- */

/* Rank 0 has a handle (*mine, or NULL after a failure, with result rc):
 * send its metadata snapshot, and build the others' replicas from it. */
static int share_handle(cf_column **out, cf_column *mine, cf_file *f, MPI_Comm comm, int rc, int local_rc,
                        cf_error *e, cf_error *err)
{
    int rank = rank_of(comm);
    void *meta = NULL;
    size_t mlen = 0;
    if (rank == 0 && rc == 0) rc = cf_column_export_meta(mine, &meta, &mlen, e);
    int64_t len = (int64_t)mlen;
    cf_column *c = rank == 0 ? mine : NULL;
    if ((rc = root_result(comm, rc, e, &len, err))) goto fail;
    rc = bcast_alloc(comm, &meta, len, e);
    if (rank != 0 && rc == 0 && local_rc == 0) rc = cf_column_open_meta(&c, f, meta, (size_t)len, e);
    if (rc == 0) rc = local_rc;
    if ((rc = agree(comm, rc, e, err))) goto fail;
    if (rank == 0) cf_free(meta);
    else free(meta);
    *out = c;
    return 0;
fail:
    if (rank == 0) cf_free(meta);
    else free(meta);
    /* Another rank failed: rank 0 gives up its handle, so that a column it
     * has just created (staged, never committed) vanishes at close instead
     * of being published without its rows. */
    cf_column_discard(c);
    cf_column_close(c, NULL);
    return rc;
}

int cf_mpi_column_create(cf_column **out, cf_file *f, MPI_Comm comm, const char *name,
                         const char *dtype, int64_t nmemb, int64_t local_rows,
                         const cf_mpi_options *opt, int64_t *first_row, cf_error *err)
{
    if (comm == MPI_COMM_NULL) return FAIL(err, CF_EARG, "cf_mpi_column_create: MPI_COMM_NULL");
    cf_error e;
    error_init(&e);
    int rank = rank_of(comm), size = size_of(comm);
    cf_mpi_options o;
    char dt[CF_DTYPE_MAX] = "";
    int64_t *rank_rows = NULL, *blob_rows = NULL;
    int rc = resolve_options(opt, &o, &e);
    if (rc == 0 && (!out || !f || !name)) rc = FAIL(&e, CF_EARG, "cf_mpi_column_create: NULL argument");
    if (rc == 0 && !cf_file_writable(f))
        rc = FAIL(&e, CF_EREADONLY, "%s: File is open read-only; cannot create '%s'", cf_file_path(f), name);
    if (rc == 0) rc = cf_name_check(name, &e);
    if (rc == 0 && dtype) rc = cf_dtype_normalize(dtype, dt, &e);
    if (rc == 0 && dtype && nmemb < 1)
        rc = FAIL(&e, CF_EARG, "%s/%s: nmemb must be at least 1, got %lld", cf_file_path(f), name, (long long)nmemb);
    if (rc == 0 && (local_rows < 0 || (!dtype && local_rows != 0)))
        rc = FAIL(&e, CF_EARG, "%s/%s: cannot hold %lld rows here%s", cf_file_path(f), name, (long long)local_rows,
                  dtype ? "" : " (no dtype: a block without rows)");
    if (rc == 0 && !(rank_rows = malloc((size_t)size * sizeof *rank_rows)))
        rc = FAIL(&e, CF_ENOMEM, "out of memory");
    int_field ints[] = { { "nmemb", dtype ? nmemb : 0 }, { "options.nfile", o.nfile },
                         { "options.blob_bytes", o.blob_bytes },
                         { "options.align_blobs_to_ranks", o.align_blobs_to_ranks } };
    str_field strs[] = { { "name", name }, { "dtype", dtype ? dt : NULL } };
    rc = check_same(comm, "cf_mpi_column_create", ints, 4, strs, 2, rc, &e);
    if ((rc = agree(comm, rc, &e, err))) goto done;

    /* The sizes: every rank learns every rank's rows. */
    MPI_Allgather(&local_rows, 1, MPI_INT64_T, rank_rows, 1, MPI_INT64_T, comm);
    int64_t total = 0, first = 0;
    for (int r = 0; r < size; r++) {
        if (r == rank) first = total;
        total = rank_rows[r] > INT64_MAX - total ? INT64_MAX : total + rank_rows[r];
    }
    /* Rank 0 plans the blobs and creates the column. */
    cf_column *c = NULL;
    if (rank == 0) {
        int64_t rowbytes = dtype ? nmemb * cf_dtype_itemsize(dt) : 0;
        int64_t nfile = 0;
        if (!dtype) {
            nfile = 0;
        } else if (total == INT64_MAX || (rowbytes > 0 && total > INT64_MAX / rowbytes)) {
            rc = FAIL(&e, CF_EARG, "%s/%s: %lld rows of %lld bytes overflow a 64-bit size", cf_file_path(f), name,
                      (long long)total, (long long)rowbytes);
        } else {
            nfile = o.nfile ? o.nfile : cf_plan_nfile(total * rowbytes, size, o.blob_bytes);
        }
        if (rc == 0 && nfile > 0 && !(blob_rows = malloc((size_t)nfile * sizeof *blob_rows)))
            rc = FAIL(&e, CF_ENOMEM, "%s/%s: out of memory for %lld blobs", cf_file_path(f), name, (long long)nfile);
        if (rc == 0 && nfile > 0) {
            if (o.align_blobs_to_ranks) {
                rc = cf_plan_blobs_by_rank(rank_rows, size, nfile, blob_rows, &e);
            } else {
                for (int64_t i = 0; i < nfile; i++) blob_rows[i] = cf_plan_share(total, nfile, i, NULL);
            }
        }
        if (rc == 0) rc = cf_column_create_blobs(&c, f, name, dtype ? dt : NULL, nmemb, nfile, blob_rows, &e);
    }
    if ((rc = share_handle(&c, c, f, comm, rc, 0, &e, err))) goto done;
    *out = c;
    if (first_row) *first_row = first;
done:
    free(rank_rows);
    free(blob_rows);
    return rc;
}

int cf_mpi_column_open(cf_column **out, cf_file *f, MPI_Comm comm, const char *name, cf_error *err)
{
    if (comm == MPI_COMM_NULL) return FAIL(err, CF_EARG, "cf_mpi_column_open: MPI_COMM_NULL");
    cf_error e;
    error_init(&e);
    int rank = rank_of(comm), rc = 0;
    if (!out || !f || !name) rc = FAIL(&e, CF_EARG, "cf_mpi_column_open: NULL argument");
    if (rc == 0) rc = cf_name_check(name, &e);
    str_field strs[] = { { "name", name } };
    rc = check_same(comm, "cf_mpi_column_open", NULL, 0, strs, 1, rc, &e);
    /* Opening has no side effect: rank 0 goes ahead, and a bad argument
     * elsewhere is reported by the agreement at the end. */
    cf_column *c = NULL;
    int local_rc = rc;
    if (rank == 0 && rc == 0) rc = cf_column_open(&c, f, name, &e);
    if ((rc = share_handle(&c, c, f, comm, rank == 0 ? rc : 0, local_rc, &e, err))) return rc;
    *out = c;
    return 0;
}

/* ---- Columns: write and read ---------------------------------------------- */

/* Checks of one rank's write or read arguments, before any I/O. */
static int check_io_args(const cf_column *c, int for_write, int64_t start, int64_t count, const void *buf,
                         const char *buf_dtype, cf_error *e)
{
    const char *op = for_write ? "cf_mpi_column_write" : "cf_mpi_column_read";
    if (!c) return FAIL(e, CF_EARG, "%s: NULL column", op);
    if (for_write && !cf_column_writable(c))
        return FAIL(e, CF_EREADONLY, "%s: column is open read-only", cf_column_path(c));
    if (cf_column_kind(c) == CF_KIND_ATTRS_ONLY)
        return FAIL(e, CF_EKIND, "%s: '%s' holds only attributes, no rows", cf_column_path(c), cf_column_name(c));
    int64_t size = cf_column_size(c);
    if (start < 0 || count < 0 || start > size || count > size - start)
        return FAIL(e, CF_ERANGE, "%s: rows %lld..%lld are outside the column's %lld rows", cf_column_path(c),
                    (long long)start, (long long)(start + count - 1), (long long)size);
    if (count > 0 && !buf) return FAIL(e, CF_EARG, "%s: NULL buffer", cf_column_path(c));
    if (buf_dtype) {
        char dt[CF_DTYPE_MAX];
        int rc = cf_dtype_normalize(buf_dtype, dt, e);
        if (rc) return rc;
        const char *from = for_write ? dt : cf_column_dtype(c), *to = for_write ? cf_column_dtype(c) : dt;
        if (!cf_dtype_can_cast(from, to))
            return FAIL(e, CF_ECAST, "%s: cannot convert %s to %s", cf_column_path(c), from, to);
    }
    return 0;
}

/* The caller's write buffer, and how to turn its rows into the column's
 * bytes for aggregation. */
typedef struct {
    const char *buf;
    const char *dtype;      /* the buffer's, never NULL */
    int64_t row_stride, elem_stride;
    int64_t nmemb, itemsize, rowbytes;
    const char *col_dtype;
    int direct;             /* rows are already the column's bytes, contiguous */
} source;

static void source_init(source *s, const cf_column *c, const void *buf, const char *buf_dtype, int64_t row_stride,
                        int64_t elem_stride)
{
    s->buf = buf;
    s->col_dtype = cf_column_dtype(c);
    s->dtype = buf_dtype ? buf_dtype : s->col_dtype;
    s->row_stride = row_stride;
    s->elem_stride = elem_stride;
    s->nmemb = cf_column_nmemb(c);
    s->itemsize = cf_column_itemsize(c);
    s->rowbytes = s->nmemb * s->itemsize;
    char dt[CF_DTYPE_MAX];
    int same = !buf_dtype || (cf_dtype_normalize(buf_dtype, dt, NULL) == 0 && strcmp(dt, s->col_dtype) == 0);
    s->direct = same && row_stride == s->rowbytes && (s->nmemb == 1 || elem_stride == s->itemsize);
}

/* Convert local rows [first, first+n) to the column's dtype into out
 * (n * rowbytes bytes), or point *p at them when no conversion is needed. */
static int source_rows(const source *s, int64_t first, int64_t n, unsigned char *out, const void **p, cf_error *e)
{
    if (s->direct) {
        *p = s->buf + first * s->rowbytes;
        return 0;
    }
    *p = out;
    const char *src = s->buf + first * s->row_stride;
    if (s->nmemb == 1)
        return cf_dtype_convert(out, s->itemsize, s->col_dtype, src, s->row_stride, s->dtype, n, e);
    if (s->row_stride == s->nmemb * s->elem_stride)
        return cf_dtype_convert(out, s->itemsize, s->col_dtype, src, s->elem_stride, s->dtype, n * s->nmemb, e);
    int rc = 0;
    for (int64_t r = 0; r < n && rc == 0; r++)
        rc = cf_dtype_convert(out + r * s->rowbytes, s->itemsize, s->col_dtype, src + r * s->row_stride,
                              s->elem_stride, s->dtype, s->nmemb, e);
    return rc;
}

/* Aggregated write (see colfile_mpi.h); `ranges` holds every rank's start
 * and count, which follow each other in rank order.  Returns the agreed
 * result. */
static int write_aggregated(cf_column *c, MPI_Comm comm, const int64_t *ranges, const cf_mpi_options *o,
                            const source *src, cf_error *e, cf_error *err)
{
    int rank = rank_of(comm), size = size_of(comm);
    int64_t rowbytes = src->rowbytes;
    int64_t start = ranges[2 * rank], count = ranges[2 * rank + 1];
    int64_t *bytes = malloc((size_t)size * sizeof *bytes), *leader = malloc((size_t)size * sizeof *leader);
    int *counts = NULL, *displs = NULL;
    unsigned char *recv = NULL, *send = NULL;
    int rc = 0, lrc = 0;
    if (!bytes || !leader) rc = FAIL(e, CF_ENOMEM, "out of memory");
    for (int r = 0; rc == 0 && r < size; r++) bytes[r] = ranges[2 * r + 1] * rowbytes;
    if (rc == 0) rc = cf_plan_groups(bytes, size, o->group_bytes, leader, e);
    /* The group: ranks [lead, end).  Leaders take turns like ranks do. */
    int lead = 0, end = 0, biggest = 1;
    int64_t nleaders = 0, my_index = -1, g0 = -1, grows = 0;
    if (rc == 0) {
        lead = (int)leader[rank];
        for (end = lead + 1; end < size && leader[end] != end; end++) {}
        for (int r = 0; r < size; r++) {
            if (leader[r] != r) continue;
            int to = r + 1;
            while (to < size && leader[to] != to) to++;
            if (to - r > biggest) biggest = to - r;
            if (r == lead) my_index = nleaders;
            nleaders++;
        }
        for (int r = lead; r < end; r++) {
            if (ranges[2 * r + 1] == 0) continue;
            if (g0 < 0) g0 = ranges[2 * r];
            grows += ranges[2 * r + 1];
        }
    }
    /* Pieces of whole rows (the caller made sure a row fits). */
    int64_t piece_bytes = o->group_bytes < CF_MPI_PIECE_BYTES ? o->group_bytes : CF_MPI_PIECE_BYTES;
    int64_t piece_rows = piece_bytes / rowbytes > 0 ? piece_bytes / rowbytes : 1;
    int gsize = end - lead;
    /* Every buffer before the agreement: after it, nothing can fail but the
     * leader's write. */
    if (rc == 0 && gsize > 1) {
        if (rank == lead && grows > 0) {
            int64_t n = grows < piece_rows ? grows : piece_rows;
            recv = malloc((size_t)(n * rowbytes));
            counts = malloc((size_t)gsize * sizeof *counts);
            displs = malloc((size_t)gsize * sizeof *displs);
            if (!recv || !counts || !displs) rc = FAIL(e, CF_ENOMEM, "out of memory for %lld bytes", (long long)(n * rowbytes));
        }
        if (rc == 0 && count > 0 && !src->direct) {
            int64_t n = count < piece_rows ? count : piece_rows;
            if (!(send = malloc((size_t)(n * rowbytes))))
                rc = FAIL(e, CF_ENOMEM, "out of memory for %lld bytes", (long long)(n * rowbytes));
        }
    }
    if ((rc = agree(comm, rc, e, err))) goto done;

    /* One group (the usual case of small writes) gathers on comm itself:
     * a split costs a collective of its own, more than a small write. */
    MPI_Comm group = nleaders == 1 ? comm : MPI_COMM_NULL;
    if (nleaders > 1 && biggest > 1) MPI_Comm_split(comm, lead, rank, &group);
    turns t;
    int next_leader = end < size ? end : -1;
    turns_open(&t, comm, rank == lead ? my_index : -1, nleaders, lead > 0 ? (int)leader[lead - 1] : -1, next_leader,
               o->concurrency);
    if (rank == lead) turn_begin(&t);
    if (gsize == 1) {
        if (count > 0) lrc = cf_column_write(c, start, count, src->buf, src->dtype, src->row_stride, src->elem_stride, e);
    } else {
        for (int64_t lo = g0; grows > 0 && lo < g0 + grows; lo += piece_rows) {
            int64_t hi = lo + piece_rows < g0 + grows ? lo + piece_rows : g0 + grows;
            /* This rank's share of the piece, and (leader) everyone's. */
            int64_t a = start > lo ? start : lo, b = start + count < hi ? start + count : hi;
            const void *p = send;
            int n = 0;
            if (count > 0 && b > a) {
                int r2 = source_rows(src, a - start, b - a, send, &p, e);
                if (lrc == 0) lrc = r2;
                n = (int)((b - a) * rowbytes);
            }
            if (rank == lead) {
                for (int r = lead; r < end; r++) {
                    int64_t s = ranges[2 * r], k = ranges[2 * r + 1];
                    int64_t ra = s > lo ? s : lo, rb = s + k < hi ? s + k : hi;
                    counts[r - lead] = k > 0 && rb > ra ? (int)((rb - ra) * rowbytes) : 0;
                    displs[r - lead] = k > 0 && rb > ra ? (int)((ra - lo) * rowbytes) : 0;
                }
            }
            MPI_Gatherv(p, n, MPI_BYTE, recv, counts, displs, MPI_BYTE, 0, group);
            if (rank == lead && lrc == 0)
                lrc = cf_column_write(c, lo, hi - lo, recv, NULL, rowbytes, src->itemsize, e);
        }
    }
    if (rank == lead) turn_end(&t);
    turns_close(&t);
    if (group != MPI_COMM_NULL && group != comm) MPI_Comm_free(&group);
    rc = agree(comm, lrc, e, err);
done:
    free(bytes);
    free(leader);
    free(counts);
    free(displs);
    free(recv);
    free(send);
    return rc;
}

int cf_mpi_column_write(cf_column *c, MPI_Comm comm, int64_t start, int64_t count, const void *buf,
                        const char *buf_dtype, int64_t row_stride, int64_t elem_stride,
                        const cf_mpi_options *opt, cf_error *err)
{
    if (comm == MPI_COMM_NULL) return FAIL(err, CF_EARG, "cf_mpi_column_write: MPI_COMM_NULL");
    cf_error e;
    error_init(&e);
    int rank = rank_of(comm), size = size_of(comm);
    cf_mpi_options o;
    int64_t *ranges = NULL;
    int rc = resolve_options(opt, &o, &e);
    if (rc == 0) rc = check_io_args(c, 1, start, count, buf, buf_dtype, &e);
    if (rc == 0 && o.mode != CF_IO_THROTTLED && size > 1 && !(ranges = malloc((size_t)size * 2 * sizeof *ranges)))
        rc = FAIL(&e, CF_ENOMEM, "out of memory");
    /* The options and the column must be the same everywhere; from here on
     * the values are rank 0's on every rank, so the plans agree. */
    int_field ints[] = { { "options.mode", o.mode }, { "options.concurrency", o.concurrency },
                         { "options.group_bytes", o.group_bytes }, { "options.small_bytes", o.small_bytes },
                         { "the column's size", c ? cf_column_size(c) : -1 },
                         { "the column's nfile", c ? cf_column_nfile(c) : -1 } };
    rc = check_same(comm, "cf_mpi_column_write", ints, 6, NULL, 0, rc, &e);
    o.mode = (int)ints[0].value;
    o.concurrency = ints[1].value;
    o.group_bytes = ints[2].value;
    o.small_bytes = ints[3].value;
    if ((rc = agree(comm, rc, &e, err))) goto done;

    source src;
    source_init(&src, c, buf, buf_dtype, row_stride, elem_stride);
    int mode = size > 1 ? o.mode : CF_IO_THROTTLED;
    if (mode != CF_IO_THROTTLED) {
        int64_t mine[2] = { start, count }, total = 0, next = -1;
        MPI_Allgather(mine, 2, MPI_INT64_T, ranges, 2, MPI_INT64_T, comm);
        int consecutive = 1;
        for (int r = 0; r < size; r++) {
            int64_t s = ranges[2 * r], k = ranges[2 * r + 1];
            int64_t rb = src.rowbytes > 0 ? src.rowbytes : 1;
            total = k > (INT64_MAX - total) / rb ? INT64_MAX : total + k * src.rowbytes;
            if (k == 0) continue;
            if (next >= 0 && s != next) consecutive = 0;
            next = s + k;
        }
        if (mode == CF_IO_AUTO) mode = cf_plan_mode(total, size, o.small_bytes);
        /* Aggregation needs the rows of a group to be one range, and rows
         * that fit a message. */
        if (!consecutive || src.rowbytes <= 0 || src.rowbytes > CF_MPI_PIECE_BYTES) mode = CF_IO_THROTTLED;
    }
    if (mode == CF_IO_AGGREGATED) {
        rc = write_aggregated(c, comm, ranges, &o, &src, &e, err);
        goto done;
    }
    turns t;
    turns_open(&t, comm, rank, size, rank - 1, rank + 1, o.concurrency);
    turn_begin(&t);
    if (count > 0) rc = cf_column_write(c, start, count, buf, buf_dtype, row_stride, elem_stride, &e);
    turn_end(&t);
    turns_close(&t);
    rc = agree(comm, rc, &e, err);
done:
    free(ranges);
    return rc;
}

int cf_mpi_column_read(cf_column *c, MPI_Comm comm, int64_t start, int64_t count, void *buf,
                       const char *buf_dtype, int64_t row_stride, int64_t elem_stride,
                       const cf_mpi_options *opt, cf_error *err)
{
    if (comm == MPI_COMM_NULL) return FAIL(err, CF_EARG, "cf_mpi_column_read: MPI_COMM_NULL");
    cf_error e;
    error_init(&e);
    int rank = rank_of(comm), size = size_of(comm);
    cf_mpi_options o;
    int rc = resolve_options(opt, &o, &e);
    if (rc == 0) rc = check_io_args(c, 0, start, count, buf, buf_dtype, &e);
    /* Reading changes nothing: every rank goes ahead and the agreement
     * comes at the end; the turns use rank 0's concurrency. */
    int_field ints[] = { { "options.concurrency", o.concurrency } };
    rc = check_same(comm, "cf_mpi_column_read", ints, 1, NULL, 0, rc, &e);
    turns t;
    turns_open(&t, comm, rank, size, rank - 1, rank + 1, ints[0].value);
    turn_begin(&t);
    if (rc == 0) rc = cf_column_read(c, start, count, buf, buf_dtype, row_stride, elem_stride, &e);
    turn_end(&t);
    turns_close(&t);
    return agree(comm, rc, &e, err);
}

/* ---- attributes ------------------------------------------------------------ */

/* The byte width of a normalised attribute dtype token ("<f8", "<a1", "<S12"). */
static int64_t token_width(const char *token)
{
    return strtoll(token + 2, NULL, 10);
}

int cf_mpi_column_attr_set(cf_column *c, MPI_Comm comm, const char *name, const char *dtype,
                           int64_t nmemb, const void *data, cf_error *err)
{
    if (comm == MPI_COMM_NULL) return FAIL(err, CF_EARG, "cf_mpi_column_attr_set: MPI_COMM_NULL");
    cf_error e;
    error_init(&e);
    int rank = rank_of(comm), rc = 0;
    if (!c || !name || !dtype) rc = FAIL(&e, CF_EARG, "cf_mpi_column_attr_set: NULL argument");
    else if (nmemb < 0) rc = FAIL(&e, CF_EARG, "%s: attribute '%s' with negative nmemb", cf_column_path(c), name);
    else if (nmemb > 0 && !data) rc = FAIL(&e, CF_EARG, "%s: attribute '%s' has no data", cf_column_path(c), name);
    int_field ints[] = { { "nmemb", nmemb } };
    str_field strs[] = { { "attribute name", name }, { "dtype", dtype } };
    rc = check_same(comm, "cf_mpi_column_attr_set", ints, 1, strs, 2, rc, &e);
    if ((rc = agree(comm, rc, &e, err))) return rc;

    /* Rank 0 validates and writes; its stored value (normalised dtype and
     * bytes) then goes to the replicas. */
    unsigned char *value = NULL;
    int64_t len = 0;
    if (rank == 0 && (rc = cf_column_attr_set(c, name, dtype, nmemb, data, &e)) == 0) {
        const char *stored;
        const void *bytes;
        int64_t n;
        rc = cf_column_attr_get(c, name, &stored, &n, &bytes, &e);
        int64_t nb = rc == 0 ? n * token_width(stored) : 0;
        if (rc == 0 && !(value = calloc(1, (size_t)(CF_DTYPE_MAX + nb))))
            rc = FAIL(&e, CF_ENOMEM, "%s: out of memory", cf_column_path(c));
        if (rc == 0) {
            snprintf((char *)value, CF_DTYPE_MAX, "%s", stored);
            if (nb > 0) memcpy(value + CF_DTYPE_MAX, bytes, (size_t)nb);
            len = CF_DTYPE_MAX + nb;
        }
    }
    if ((rc = root_result(comm, rc, &e, &len, err))) goto done;
    rc = bcast_alloc(comm, (void **)&value, len, &e);
    if (rank != 0 && rc == 0) {
        const char *stored = (const char *)value;
        int64_t nb = len - CF_DTYPE_MAX;
        int64_t width = token_width(stored);
        int64_t n = width > 0 ? nb / width : 0;
        rc = cf_column_attr_set(c, name, stored, n, value + CF_DTYPE_MAX, &e);
        /* Rank 0's value is stored everywhere; a different one here (same
         * dtype token, so the same width) is a caller's bug worth reporting. */
        if (rc == 0 && nb > 0 && memcmp(data, value + CF_DTYPE_MAX, (size_t)nb) != 0)
            rc = FAIL(&e, CF_EARG, "%s: attribute '%s': the value differs from rank 0's (rank 0's is stored)",
                      cf_column_path(c), name);
    }
    rc = agree(comm, rc, &e, err);
done:
    free(value);
    return rc;
}

/* ---- close ------------------------------------------------------------------ */

/* Give up rank 0's uncommitted state so that closing commits nothing. */
static void discard_pending(cf_column *c)
{
    cf_column_discard(c);
    void *p = NULL;
    size_t n = 0;
    if (cf_column_kind(c) == CF_KIND_DATA && cf_column_writable(c) && cf_column_pending_export(c, &p, &n, NULL) == 0)
        cf_free(p);
}

int cf_mpi_column_close(cf_column *c, MPI_Comm comm, cf_error *err)
{
    if (comm == MPI_COMM_NULL) {
        cf_column_close(c, NULL);
        return FAIL(err, CF_EARG, "cf_mpi_column_close: MPI_COMM_NULL");
    }
    cf_error e;
    error_init(&e);
    int rank = rank_of(comm), size = size_of(comm);
    int need = c && cf_column_kind(c) == CF_KIND_DATA && cf_column_writable(c);
    int have = c != NULL, lrc = 0, rc;
    void *pending = NULL;
    size_t plen = 0;
    int64_t *lens = NULL;
    unsigned char *recv = NULL;
    /* First: does any rank have a handle, and write state to move? */
    int flags[2] = { have, need }, any[2];
    MPI_Allreduce(flags, any, 2, MPI_INT, MPI_MAX, comm);
    if (!any[0]) return 0; /* NULL everywhere */
    if (!have) lrc = FAIL(&e, CF_EARG, "cf_mpi_column_close: NULL column while other ranks close one");
    if (!any[1]) {
        /* Read-only or not data: nothing to gather. */
        int r2 = cf_column_close(c, &e);
        return agree(comm, lrc ? lrc : r2, &e, err);
    }
    if (rank != 0 && need && lrc == 0) {
        lrc = cf_column_pending_export(c, &pending, &plen, &e);
        if (lrc == 0 && (int64_t)plen > MSG_MAX)
            lrc = FAIL(&e, CF_ENOMEM, "%s: pending write state of %zu bytes is too large to send", cf_column_path(c), plen);
    }
    if (lrc == 0 && !(lens = malloc((size_t)size * sizeof *lens))) lrc = FAIL(&e, CF_ENOMEM, "out of memory");
    if ((rc = agree(comm, lrc, &e, err))) goto fail;

    /* Gather to rank 0 in rounds of consecutive ranks holding at most
     * CF_MPI_ROUND_BYTES (MPI counts are int), merging after each round. */
    int64_t mine = (int64_t)plen, biggest = 0;
    MPI_Allgather(&mine, 1, MPI_INT64_T, lens, 1, MPI_INT64_T, comm);
    int *counts = NULL, *displs = NULL;
    for (int r0 = 0, r1; r0 < size; r0 = r1) {
        int64_t bytes = 0;
        for (r1 = r0; r1 < size && (r1 == r0 || bytes + lens[r1] <= CF_MPI_ROUND_BYTES); r1++) bytes += lens[r1];
        if (bytes > biggest) biggest = bytes;
    }
    if (rank == 0) {
        recv = malloc(biggest > 0 ? (size_t)biggest : 1);
        counts = malloc((size_t)size * sizeof *counts);
        displs = malloc((size_t)size * sizeof *displs);
        if (!recv || !counts || !displs) lrc = FAIL(&e, CF_ENOMEM, "out of memory");
    }
    int64_t unused = 0;
    if ((rc = root_result(comm, lrc, &e, &unused, err))) {
        free(counts);
        free(displs);
        goto fail;
    }
    for (int r0 = 0, r1; r0 < size; r0 = r1) {
        int64_t bytes = 0;
        for (r1 = r0; r1 < size && (r1 == r0 || bytes + lens[r1] <= CF_MPI_ROUND_BYTES); r1++) bytes += lens[r1];
        if (rank == 0) {
            int64_t off = 0;
            for (int r = 0; r < size; r++) {
                int in = r >= r0 && r < r1;
                counts[r] = in ? (int)lens[r] : 0;
                displs[r] = in ? (int)off : 0;
                off += in ? lens[r] : 0;
            }
        }
        int in = rank >= r0 && rank < r1;
        MPI_Gatherv(pending, in ? (int)plen : 0, MPI_BYTE, recv, counts, displs, MPI_BYTE, 0, comm);
        if (rank == 0)
            for (int r = r0; r < r1 && lrc == 0; r++)
                if (r != 0) lrc = cf_column_pending_merge(c, recv + displs[r], (size_t)lens[r], &e);
    }
    free(counts);
    free(displs);
    /* Rank 0 commits once; the replicas commit nothing. */
    if (lrc) discard_pending(c);
    {
        int r2 = cf_column_close(c, &e);
        if (lrc == 0) lrc = r2;
    }
    c = NULL;
    rc = agree(comm, lrc, &e, err);
    goto done;
fail:
    if (rank == 0 && c) discard_pending(c);
    cf_column_close(c, NULL);
done:
    cf_free(pending);
    free(lens);
    free(recv);
    return rc;
}
