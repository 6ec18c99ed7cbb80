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
 * broadcast of its code, or root_share(), which also carries what rank 0
 * made.  Every round costs: arguments are checked and agreed in one
 * reduction (check_agree), and the messages that name a failure are sent
 * only when there is one (tests/mpi/test_mpi_collectives.c counts the
 * rounds of each call).  No rank leaves a collective early, and every
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

/* The first piece of a result sent by root_share travels with the result
 * itself. */
#define FIRST_PIECE (BCAST_CHUNK < 4096 ? BCAST_CHUNK : 4096)

/* root_result and a broadcast of rank 0's bytes in one: rank 0 did a step alone with result
 * rc, producing *len bytes at *buf; every rank gets the result and, if it
 * is 0, the bytes (the others in a new buffer at *buf, NULL and CF_ENOMEM
 * if they cannot allocate one; they still take part).  The result and the
 * first FIRST_PIECE bytes go in one broadcast, so a small result costs one.
 * Returns rank 0's failure (on every rank alike); else 0, and *lrc gets
 * this rank's allocation result (not agreed).  Collective. */
static int root_share(MPI_Comm comm, int rc, const cf_error *local, void **buf, int64_t *len, int *lrc_out,
                      cf_error *e, cf_error *err)
{
    int rank = rank_of(comm);
    struct {
        int64_t rc, len;
        unsigned char bytes[FIRST_PIECE];
    } head;
    head.rc = rc;
    head.len = rc == 0 ? *len : 0;
    int64_t k = head.len < FIRST_PIECE ? head.len : FIRST_PIECE;
    if (rank == 0 && k > 0) memcpy(head.bytes, *buf, (size_t)k);
    MPI_Bcast(&head, (int)(2 * sizeof(int64_t) + (size_t)FIRST_PIECE), MPI_BYTE, 0, comm);
    if (head.rc) return spread_error(comm, 0, (int)head.rc, local, err);
    *len = head.len;
    k = head.len < FIRST_PIECE ? head.len : FIRST_PIECE;
    int lrc = 0;
    unsigned char *p = NULL;
    if (rank == 0) {
        p = *buf;
    } else {
        p = *buf = malloc(head.len > 0 ? (size_t)head.len : 1);
        if (!p) lrc = FAIL(e, CF_ENOMEM, "out of memory for %lld bytes from rank 0", (long long)head.len);
        else if (k > 0) memcpy(p, head.bytes, (size_t)k);
    }
    bcast_bytes(comm, p ? p + k : NULL, head.len - k);
    *lrc_out = lrc;
    return 0;
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

/* cf_dtype_normalize, its error naming `where` (a column), as the core's
 * own errors for that column do. */
static int normalize_dtype(const char *dtype, char out[CF_DTYPE_MAX], const char *where, cf_error *e)
{
    int rc = cf_dtype_normalize(dtype, out, e);
    if (rc && e) {
        char why[CF_ERROR_MESSAGE_MAX];
        const char *file = e->source_file;
        int line = e->source_line;
        memcpy(why, e->message, sizeof why);
        fail(e, rc, line, "%s: %s", where, why);
        e->source_file = file;
    }
    return rc;
}

/* 64-bit FNV-1a of a string (NULL and "" differ). */
static int64_t text_hash(const char *t)
{
    if (!t) return 0x5cf1;
    uint64_t h = 14695981039346656037u;
    for (; *t; t++) h = (h ^ (unsigned char)*t) * 1099511628211u;
    return (int64_t)(h ^ 1);
}

/* check_same followed by agree, in one MPI_Allreduce when all is well:
 * every rank contributes, per field, its value and the value's complement
 * (strings: their length and hash), and whether it failed; the maxima tell
 * whether every rank holds the same values (max(v) == ~max(~v)) and which
 * rank failed first.  Only on a difference do the broadcasts of check_same
 * follow, to name it.  Returns the agreed result; on success every rank's
 * ints hold rank 0's values.  Collective. */
static int check_agree(MPI_Comm comm, const char *what, int_field *ints, int nint, const str_field *strs, int nstr,
                       int rc, cf_error *e, cf_error *err)
{
    int rank = rank_of(comm), size = size_of(comm);
    int64_t v[1 + 4 * MAX_FIELDS], m[1 + 4 * MAX_FIELDS];
    int n = 1;
    v[0] = rc ? size - rank : 0;
    for (int i = 0; i < nint; i++) {
        v[n++] = ints[i].value;
        v[n++] = ~ints[i].value;
    }
    for (int j = 0; j < nstr; j++) {
        int64_t len = strs[j].value ? (int64_t)strlen(strs[j].value) : -1, h = text_hash(strs[j].value);
        v[n++] = len;
        v[n++] = ~len;
        v[n++] = h;
        v[n++] = ~h;
    }
    MPI_Allreduce(v, m, n, MPI_INT64_T, MPI_MAX, comm);
    int differ = 0;
    for (int k = 1; k < n; k += 2) differ |= m[k] != ~m[k + 1];
    if (differ) return agree(comm, check_same(comm, what, ints, nint, strs, nstr, rc, e), e, err);
    if (m[0] == 0) return 0;
    return spread_error(comm, size - (int)m[0], rc, e, err);
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
    rc = check_agree(comm, "cf_mpi_file_open", ints, 1, strs, 1, rc, &e, err);
    if (rc) return rc;
    /* The others trust rank 0, which creates or truncates once; they keep
     * the bits that change how their handle behaves (durability, torn
     * columns, verified reads, the shared lock). */
    cf_file *f = NULL;
    int keep = CF_OPEN_WRITE | CF_OPEN_NODURABLE | CF_OPEN_TORN_OK | CF_OPEN_VERIFY | CF_OPEN_NOLOCK | CF_OPEN_NOLOCKING |
               CF_OPEN_NOMMAP;
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
    int lrc = 0;
    if ((rc = root_share(comm, rc, &e, (void **)&packed, &len, &lrc, &e, err))) goto done;
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
    int got = 0;
    if ((rc = root_share(comm, rc, e, &meta, &len, &got, e, err))) goto fail;
    rc = got;
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

/* One rank's checks of a create's arguments; dt gets the normalised dtype. */
static int check_create_args(cf_file *f, const char *name, const char *dtype, int64_t nmemb, int64_t local_rows,
                             char dt[CF_DTYPE_MAX], cf_error *e)
{
    dt[0] = '\0';
    if (!f || !name) return FAIL(e, CF_EARG, "cf_mpi_column_create: NULL argument");
    if (!cf_file_writable(f))
        return FAIL(e, CF_EREADONLY, "%s: File is open read-only; cannot create '%s'", cf_file_path(f), name);
    int rc = cf_name_check(name, e);
    if (rc == 0 && dtype) {
        char where[CF_ERROR_MESSAGE_MAX];
        snprintf(where, sizeof where, "%s/%s", cf_file_path(f), name);
        rc = normalize_dtype(dtype, dt, where, e);
    }
    if (rc == 0 && dtype && nmemb < 1)
        rc = FAIL(e, CF_EARG, "%s/%s: nmemb must be at least 1, got %lld", cf_file_path(f), name, (long long)nmemb);
    if (rc == 0 && (local_rows < 0 || (!dtype && local_rows != 0)))
        rc = FAIL(e, CF_EARG, "%s/%s: cannot hold %lld rows here%s", cf_file_path(f), name, (long long)local_rows,
                  dtype ? "" : " (no dtype: a block without rows)");
    return rc;
}

/* Rank 0: plan the blobs of a new column from every rank's rows and create
 * it (see cf_mpi_column_create). */
static int create_planned(cf_column **out, cf_file *f, const char *name, const char *dt, int64_t nmemb,
                          const int64_t *rank_rows, int size, const cf_mpi_options *o, cf_error *e)
{
    int64_t total = 0, *blob_rows = NULL, nfile = 0;
    int rc = 0;
    for (int r = 0; r < size; r++) total = rank_rows[r] > INT64_MAX - total ? INT64_MAX : total + rank_rows[r];
    int64_t rowbytes = dt[0] ? nmemb * cf_dtype_itemsize(dt) : 0;
    if (!dt[0]) {
        nfile = 0;
    } else if (total == INT64_MAX || (rowbytes > 0 && total > INT64_MAX / rowbytes)) {
        rc = FAIL(e, CF_EARG, "%s/%s: %lld rows of %lld bytes overflow a 64-bit size", cf_file_path(f), name,
                  (long long)total, (long long)rowbytes);
    } else {
        nfile = o->nfile ? o->nfile : cf_plan_nfile(total * rowbytes, size, o->blob_bytes);
    }
    if (rc == 0 && nfile > 0 && !(blob_rows = malloc((size_t)nfile * sizeof *blob_rows)))
        rc = FAIL(e, CF_ENOMEM, "%s/%s: out of memory for %lld blobs", cf_file_path(f), name, (long long)nfile);
    if (rc == 0 && nfile > 0) {
        if (o->align_blobs_to_ranks) {
            rc = cf_plan_blobs_by_rank(rank_rows, size, nfile, blob_rows, e);
        } else {
            for (int64_t i = 0; i < nfile; i++) blob_rows[i] = cf_plan_share(total, nfile, i, NULL);
        }
    }
    if (rc == 0) rc = cf_column_create_blobs(out, f, name, dt[0] ? dt : NULL, nmemb, nfile, blob_rows, e);
    free(blob_rows);
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
    int64_t *rank_rows = NULL;
    int rc = resolve_options(opt, &o, &e);
    if (rc == 0 && !out) rc = FAIL(&e, CF_EARG, "cf_mpi_column_create: NULL argument");
    if (rc == 0) rc = check_create_args(f, name, dtype, nmemb, local_rows, dt, &e);
    if (rc == 0 && !(rank_rows = malloc((size_t)size * sizeof *rank_rows)))
        rc = FAIL(&e, CF_ENOMEM, "out of memory");
    int_field ints[] = { { "nmemb", dtype ? nmemb : 0 }, { "options.nfile", o.nfile },
                         { "options.blob_bytes", o.blob_bytes },
                         { "options.align_blobs_to_ranks", o.align_blobs_to_ranks } };
    str_field strs[] = { { "name", name }, { "dtype", dtype ? dt : NULL } };
    rc = check_agree(comm, "cf_mpi_column_create", ints, 4, strs, 2, rc, &e, err);
    if (rc) goto done;

    /* The sizes: every rank learns every rank's rows. */
    MPI_Allgather(&local_rows, 1, MPI_INT64_T, rank_rows, 1, MPI_INT64_T, comm);
    int64_t first = 0;
    for (int r = 0; r < rank; r++) first += rank_rows[r];
    /* Rank 0 plans the blobs and creates the column. */
    cf_column *c = NULL;
    if (rank == 0) rc = create_planned(&c, f, name, dt, nmemb, rank_rows, size, &o, &e);
    if ((rc = share_handle(&c, c, f, comm, rc, 0, &e, err))) goto done;
    *out = c;
    if (first_row) *first_row = first;
done:
    free(rank_rows);
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
    if ((rc = check_agree(comm, "cf_mpi_column_open", NULL, 0, strs, 1, rc, &e, err))) return rc;
    cf_column *c = NULL;
    if (rank == 0) rc = cf_column_open(&c, f, name, &e);
    if ((rc = share_handle(&c, c, f, comm, rc, 0, &e, err))) return rc;
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
        int rc = normalize_dtype(buf_dtype, dt, cf_column_path(c), e);
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

/* One rank's rows in a write, for finding overlaps. */
typedef struct {
    int64_t start, end;
    int rank;
} span;

static int span_order(const void *a, const void *b)
{
    const span *x = a, *y = b;
    if (x->start != y->start) return x->start < y->start ? -1 : 1;
    return (x->rank > y->rank) - (x->rank < y->rank);
}

/* The first overlap of the ranks' non-empty ranges (ranges: start, count
 * per rank), found the same way on every rank (and by colfile.mpi): sorted
 * by start (then rank), the first range that starts before the furthest
 * end seen so far overlaps the range of that end.  Returns 1 and the two
 * ranks (*lo < *hi) if there is one.  `spans` holds `size` entries. */
static int find_overlap(const int64_t *ranges, int size, span *spans, int *lo, int *hi)
{
    int n = 0, ordered = 1;
    for (int r = 0; r < size; r++) {
        if (ranges[2 * r + 1] == 0) continue;
        spans[n].start = ranges[2 * r];
        spans[n].end = ranges[2 * r] + ranges[2 * r + 1];
        spans[n].rank = r;
        if (n > 0 && spans[n].start < spans[n - 1].start) ordered = 0;
        n++;
    }
    if (!ordered) qsort(spans, (size_t)n, sizeof *spans, span_order);
    int64_t end = INT64_MIN;
    int holder = -1;
    for (int i = 0; i < n; i++) {
        if (spans[i].start < end) {
            *lo = holder < spans[i].rank ? holder : spans[i].rank;
            *hi = holder < spans[i].rank ? spans[i].rank : holder;
            return 1;
        }
        if (spans[i].end > end) {
            end = spans[i].end;
            holder = spans[i].rank;
        }
    }
    return 0;
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
    span *spans = NULL;
    int rc = resolve_options(opt, &o, &e);
    if (rc == 0) rc = check_io_args(c, 1, start, count, buf, buf_dtype, &e);
    if (rc == 0 && size > 1 && (!(ranges = malloc((size_t)size * 2 * sizeof *ranges)) ||
                                !(spans = malloc((size_t)size * sizeof *spans))))
        rc = FAIL(&e, CF_ENOMEM, "out of memory");
    /* The options and the column must be the same everywhere; from here on
     * the values are rank 0's on every rank, so the plans agree. */
    int_field ints[] = { { "options.mode", o.mode }, { "options.concurrency", o.concurrency },
                         { "options.group_bytes", o.group_bytes }, { "options.small_bytes", o.small_bytes },
                         { "the column's size", c ? cf_column_size(c) : -1 },
                         { "the column's nfile", c ? cf_column_nfile(c) : -1 } };
    rc = check_agree(comm, "cf_mpi_column_write", ints, 6, NULL, 0, rc, &e, err);
    o.mode = (int)ints[0].value;
    o.concurrency = ints[1].value;
    o.group_bytes = ints[2].value;
    o.small_bytes = ints[3].value;
    if (rc) goto done;

    source src;
    source_init(&src, c, buf, buf_dtype, row_stride, elem_stride);
    int mode = size > 1 ? o.mode : CF_IO_THROTTLED;
    if (size > 1) {
        /* Every rank learns every rank's rows: two ranks writing one row
         * would leave checksums that match neither's bytes, so an overlap
         * (a wrong start, usually) fails every rank before any byte is
         * written.  Gaps are fine: a write need not cover the column. */
        int64_t mine[2] = { start, count }, total = 0, next = -1;
        MPI_Allgather(mine, 2, MPI_INT64_T, ranges, 2, MPI_INT64_T, comm);
        int lo, hi;
        if (find_overlap(ranges, size, spans, &lo, &hi)) {
            if (rank == lo)
                FAIL(&e, CF_EARG,
                     "%s: rows [%lld, %lld) here overlap rows [%lld, %lld) of rank %d: each row may be written "
                     "by one rank only (is start right on every rank?)",
                     cf_column_path(c), (long long)ranges[2 * lo], (long long)(ranges[2 * lo] + ranges[2 * lo + 1]),
                     (long long)ranges[2 * hi], (long long)(ranges[2 * hi] + ranges[2 * hi + 1]), hi);
            rc = spread_error(comm, lo, CF_EARG, &e, err);
            goto done;
        }
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
    free(spans);
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
    rc = check_agree(comm, "cf_mpi_column_attr_set", ints, 1, strs, 2, rc, &e, err);
    if (rc) return rc;

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
    int got = 0;
    if ((rc = root_share(comm, rc, &e, (void **)&value, &len, &got, &e, err))) goto done;
    rc = got;
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

/* Gathers of byte strings of ranks' own lengths (lens) run in rounds of
 * consecutive ranks holding at most CF_MPI_ROUND_BYTES together (MPI
 * counts are int), at least one rank each.  round_end: where the round
 * starting at r0 ends (*r1), and its bytes. */
static int64_t round_end(const int64_t *lens, int size, int r0, int *r1)
{
    int64_t bytes = 0;
    int r = r0;
    for (; r < size && (r == r0 || bytes + lens[r] <= CF_MPI_ROUND_BYTES); r++) bytes += lens[r];
    *r1 = r;
    return bytes;
}

/* The bytes of the largest round: what rank 0's receive buffer holds. */
static int64_t largest_round(const int64_t *lens, int size)
{
    int64_t most = 0;
    for (int r0 = 0, r1; r0 < size; r0 = r1) {
        int64_t bytes = round_end(lens, size, r0, &r1);
        if (bytes > most) most = bytes;
    }
    return most;
}

/* Rank 0's MPI_Gatherv layout of round [r0, r1): the ranks of the round
 * packed from offset 0, every other rank sending nothing. */
static void round_layout(const int64_t *lens, int size, int r0, int r1, int *counts, int *displs)
{
    int64_t off = 0;
    for (int r = 0; r < size; r++) {
        int in = r >= r0 && r < r1;
        counts[r] = in ? (int)lens[r] : 0;
        displs[r] = in ? (int)off : 0;
        off += in ? lens[r] : 0;
    }
}

/* Every rank but 0 exports its uncommitted write state (need: it has a
 * writable data handle; lrc: this rank's result so far) and rank 0 gathers
 * and merges it, in rounds (round_end).  Returns the agreed result of
 * the steps before the gather (nonzero: nothing was moved, and a rank's
 * state may be lost); then *merged is rank 0's merge result (0 elsewhere),
 * not yet agreed.  Collective. */
static int gather_pending(cf_column *c, MPI_Comm comm, int need, int lrc, int *merged, cf_error *e, cf_error *err)
{
    int rank = rank_of(comm), size = size_of(comm), rc;
    void *pending = NULL;
    size_t plen = 0;
    int64_t *lens = NULL;
    unsigned char *recv = NULL;
    int *counts = NULL, *displs = NULL;
    *merged = 0;
    if (rank != 0 && need && lrc == 0) {
        lrc = cf_column_pending_export(c, &pending, &plen, e);
        if (lrc == 0 && (int64_t)plen > MSG_MAX)
            lrc = FAIL(e, CF_ENOMEM, "%s: pending write state of %zu bytes is too large to send", cf_column_path(c), plen);
    }
    if (lrc == 0 && !(lens = malloc((size_t)size * sizeof *lens))) lrc = FAIL(e, CF_ENOMEM, "out of memory");
    if ((rc = agree(comm, lrc, e, err))) goto done;

    int64_t mine = (int64_t)plen;
    MPI_Allgather(&mine, 1, MPI_INT64_T, lens, 1, MPI_INT64_T, comm);
    int64_t biggest = largest_round(lens, size);
    if (rank == 0) {
        recv = malloc(biggest > 0 ? (size_t)biggest : 1);
        counts = malloc((size_t)size * sizeof *counts);
        displs = malloc((size_t)size * sizeof *displs);
        if (!recv || !counts || !displs) lrc = FAIL(e, CF_ENOMEM, "out of memory");
    }
    int64_t unused = 0;
    if ((rc = root_result(comm, lrc, e, &unused, err))) goto done;
    for (int r0 = 0, r1; r0 < size; r0 = r1) {
        (void)round_end(lens, size, r0, &r1);
        if (rank == 0) round_layout(lens, size, r0, r1, counts, displs);
        int in = rank >= r0 && rank < r1;
        MPI_Gatherv(pending, in ? (int)plen : 0, MPI_BYTE, recv, counts, displs, MPI_BYTE, 0, comm);
        if (rank == 0)
            for (int r = r0; r < r1 && *merged == 0; r++)
                if (r != 0) *merged = cf_column_pending_merge(c, recv + displs[r], (size_t)lens[r], e);
    }
done:
    cf_free(pending);
    free(lens);
    free(recv);
    free(counts);
    free(displs);
    return rc;
}

/* Append len bytes to the growing buffer *buf (*used of *cap). */
static int grow_append(unsigned char **buf, size_t *used, size_t *cap, const void *p, size_t len)
{
    if (*used + len > *cap) {
        size_t want = *cap ? *cap : 256;
        while (want < *used + len) want *= 2;
        unsigned char *q = realloc(*buf, want);
        if (!q) return -1;
        *buf = q;
        *cap = want;
    }
    memcpy(*buf + *used, p, len);
    *used += len;
    return 0;
}

static uint64_t mix_flag(uint64_t h, int flag) { return (h ^ (uint64_t)(flag + 1)) * 1099511628211u; }

/* What a rank holds for column i of a close: a handle (HAVE) that needs
 * its write state gathered (NEED). */
enum { HAVE = 1, NEED = 2 };

static int handle_flags(const cf_column *c)
{
    if (!c) return 0;
    return HAVE | (cf_column_kind(c) == CF_KIND_DATA && cf_column_writable(c) ? NEED : 0);
}

/* Does this rank hold a NULL handle (or one that needs no gathering) where
 * another rank holds one (that does)?  flags: per column, as handle_flags
 * gave before any was closed (NULL: the handles are all still open).
 * Compared 64 columns at a time, after the summaries showed a difference;
 * every rank calls it with the same n.  Collective. */
static int handles_differ_here(cf_column *const *cols, const int *flags, int64_t n, MPI_Comm comm)
{
    int bad = 0;
    for (int64_t i0 = 0; i0 < n; i0 += 64) {
        int mine[128], any[128], k = (int)(n - i0 < 64 ? n - i0 : 64);
        for (int i = 0; i < k; i++) {
            int fl = flags ? flags[i0 + i] : handle_flags(cols[i0 + i]);
            mine[2 * i] = (fl & HAVE) != 0;
            mine[2 * i + 1] = (fl & NEED) != 0;
        }
        MPI_Allreduce(mine, any, 2 * k, MPI_INT, MPI_MAX, comm);
        for (int i = 0; i < 2 * k; i++) bad |= any[i] && !mine[i];
    }
    return bad;
}

/* Close n columns collectively (cf_mpi_column_close_many).  Handles that
 * need no gathering (read-only, attribute blocks) close at once; the
 * others export their write state (all but rank 0), concatenated: per
 * writable data column, in order, its length (8 bytes) and its bytes.  One
 * MPI_Allreduce then tells every rank whether all hold the same kinds of
 * handles, which rank failed first and the largest state; when every
 * state fits one round, the states travel in one MPI_Gather (each padded
 * to the largest, after one agreement that every buffer was allocated),
 * else in rounds (gather_pending's way).  Rank 0 merges and commits each
 * column; a last agreement returns the first failure. */
static int close_columns(cf_column **cols, int64_t n, MPI_Comm comm, const char *what, cf_error *err)
{
    cf_error e;
    error_init(&e);
    int rank = rank_of(comm), size = size_of(comm), lrc = 0, rc = 0;
    int *flags = calloc((size_t)(n > 0 ? n : 1), sizeof *flags);
    unsigned char *state = NULL, *recv = NULL;
    size_t used = 0, cap = 0;
    int64_t nhave = 0, nneed = 0;
    uint64_t have_h = 14695981039346656037u, need_h = have_h;
    for (int64_t i = 0; i < n; i++) {
        int fl = handle_flags(cols[i]);
        if (flags) flags[i] = fl;
        have_h = mix_flag(have_h, (fl & HAVE) != 0);
        need_h = mix_flag(need_h, (fl & NEED) != 0);
        nhave += (fl & HAVE) != 0;
        nneed += (fl & NEED) != 0;
    }
    /* Without the flags nothing closes early (handles_differ_here reads
     * the handles instead). */
    if (!flags) lrc = FAIL(&e, CF_ENOMEM, "%s: out of memory", what);
    for (int64_t i = 0; flags && i < n; i++) {
        if (flags[i] != HAVE) continue;
        int r2 = cf_column_close(cols[i], &e); /* nothing to gather */
        cols[i] = NULL;
        if (lrc == 0) lrc = r2;
    }
    for (int64_t i = 0; flags && rank != 0 && lrc == 0 && i < n; i++) {
        if (!(flags[i] & NEED)) continue;
        void *p = NULL;
        size_t len = 0;
        uint64_t len64;
        lrc = cf_column_pending_export(cols[i], &p, &len, &e);
        len64 = (uint64_t)len;
        if (lrc == 0 && (grow_append(&state, &used, &cap, &len64, sizeof len64) ||
                         grow_append(&state, &used, &cap, p, len)))
            lrc = FAIL(&e, CF_ENOMEM, "%s: out of memory", cf_column_path(cols[i]));
        if (lrc == 0 && (int64_t)used > MSG_MAX)
            lrc = FAIL(&e, CF_ENOMEM, "%s: pending write state of %zu bytes is too large to send",
                       cf_column_path(cols[i]), used);
        cf_free(p);
    }
    int64_t v[10] = { lrc ? size - rank : 0, (int64_t)have_h, ~(int64_t)have_h, (int64_t)need_h, ~(int64_t)need_h,
                      nhave, nneed, (int64_t)used, n, ~n }, m[10];
    MPI_Allreduce(v, m, 10, MPI_INT64_T, MPI_MAX, comm);
    if (m[8] != ~m[9]) {
        if (lrc == 0) lrc = FAIL(&e, CF_EARG, "%s: the ranks close different numbers of columns", what);
        rc = agree(comm, lrc, &e, err);
        goto fail;
    }
    if (m[5] == 0) goto done; /* NULL everywhere */
    if (m[1] != ~m[2] || m[3] != ~m[4]) {
        /* Different handles on different ranks: the ranks that lack one
         * (there is one) fail. */
        int bad = handles_differ_here(cols, flags, n, comm);
        if (bad && lrc == 0)
            lrc = FAIL(&e, CF_EARG, "%s: %s while other ranks close %s", what,
                       n == 1 ? "NULL column" : "NULL or read-only columns",
                       n == 1 ? "one" : "writable ones");
        rc = agree(comm, lrc, &e, err);
        goto fail;
    }
    if (m[0]) {
        rc = spread_error(comm, size - (int)m[0], lrc, &e, err);
        goto fail;
    }
    if (m[6] == 0) goto done; /* nothing written through a handle that commits */

    int64_t biggest = m[7];
    if (biggest * size <= CF_MPI_ROUND_BYTES) {
        /* One round: every state padded to the largest. */
        if (used < (size_t)biggest && biggest > 0) {
            unsigned char *q = realloc(state, (size_t)biggest);
            if (!q) lrc = FAIL(&e, CF_ENOMEM, "out of memory");
            else memset((state = q) + used, 0, (size_t)biggest - used);
        }
        if (rank == 0 && biggest > 0 && !(recv = malloc((size_t)(biggest * size))))
            lrc = FAIL(&e, CF_ENOMEM, "out of memory");
        if ((rc = agree(comm, lrc, &e, err))) goto fail;
        if (biggest > 0)
            MPI_Gather(state, (int)biggest, MPI_BYTE, recv, (int)biggest, MPI_BYTE, 0, comm);
        for (int r = 1; rank == 0 && r < size && lrc == 0; r++) {
            const unsigned char *p = recv + (size_t)r * (size_t)biggest;
            for (int64_t i = 0; i < n && lrc == 0; i++) {
                if (!(flags[i] & NEED)) continue;
                uint64_t len;
                memcpy(&len, p, sizeof len);
                lrc = cf_column_pending_merge(cols[i], p + sizeof len, (size_t)len, &e);
                p += sizeof len + len;
            }
        }
    } else {
        /* Rounds: the exact sizes first. */
        int64_t *lens = malloc((size_t)size * sizeof *lens);
        if (!lens) lrc = FAIL(&e, CF_ENOMEM, "out of memory");
        if ((rc = agree(comm, lrc, &e, err))) {
            free(lens);
            goto fail;
        }
        int64_t mine = (int64_t)used;
        MPI_Allgather(&mine, 1, MPI_INT64_T, lens, 1, MPI_INT64_T, comm);
        int *counts = NULL, *displs = NULL;
        int64_t most = largest_round(lens, size);
        if (rank == 0) {
            recv = malloc(most > 0 ? (size_t)most : 1);
            counts = malloc((size_t)size * sizeof *counts);
            displs = malloc((size_t)size * sizeof *displs);
            if (!recv || !counts || !displs) lrc = FAIL(&e, CF_ENOMEM, "out of memory");
        }
        int64_t unused = 0;
        if ((rc = root_result(comm, lrc, &e, &unused, err))) {
            free(lens);
            free(counts);
            free(displs);
            goto fail;
        }
        for (int r0 = 0, r1; r0 < size; r0 = r1) {
            (void)round_end(lens, size, r0, &r1);
            if (rank == 0) round_layout(lens, size, r0, r1, counts, displs);
            int in = rank >= r0 && rank < r1;
            MPI_Gatherv(state, in ? (int)used : 0, MPI_BYTE, recv, counts, displs, MPI_BYTE, 0, comm);
            for (int r = r0; rank == 0 && r < r1 && lrc == 0; r++) {
                if (r == 0) continue;
                const unsigned char *p = recv + displs[r];
                for (int64_t i = 0; i < n && lrc == 0; i++) {
                    if (!(flags[i] & NEED)) continue;
                    uint64_t len;
                    memcpy(&len, p, sizeof len);
                    lrc = cf_column_pending_merge(cols[i], p + sizeof len, (size_t)len, &e);
                    p += sizeof len + len;
                }
            }
        }
        free(lens);
        free(counts);
        free(displs);
    }
    /* Rank 0 commits each column once; the replicas commit nothing. */
    for (int64_t i = 0; i < n; i++) {
        if (!cols[i]) continue;
        if (lrc) discard_pending(cols[i]);
        int r2 = cf_column_close(cols[i], &e);
        cols[i] = NULL;
        if (lrc == 0) lrc = r2;
    }
    rc = agree(comm, lrc, &e, err);
    goto done;
fail:
    for (int64_t i = 0; i < n; i++) {
        if (!cols[i]) continue;
        if (rank == 0) discard_pending(cols[i]);
        cf_column_close(cols[i], NULL);
        cols[i] = NULL;
    }
done:
    free(flags);
    free(state);
    free(recv);
    return rc;
}

int cf_mpi_column_close(cf_column *c, MPI_Comm comm, cf_error *err)
{
    if (comm == MPI_COMM_NULL) {
        cf_column_close(c, NULL);
        return FAIL(err, CF_EARG, "cf_mpi_column_close: MPI_COMM_NULL");
    }
    return close_columns(&c, 1, comm, "cf_mpi_column_close", err);
}

int cf_mpi_column_close_many(cf_column **cols, int64_t n, MPI_Comm comm, cf_error *err)
{
    if (comm == MPI_COMM_NULL || n < 0 || (n > 0 && !cols)) {
        for (int64_t i = 0; cols && i < n; i++) {
            cf_column_close(cols[i], NULL);
            cols[i] = NULL;
        }
        return FAIL(err, CF_EARG, "cf_mpi_column_close_many: %s", comm == MPI_COMM_NULL ? "MPI_COMM_NULL" : "bad list");
    }
    return close_columns(cols, n, comm, "cf_mpi_column_close_many", err);
}

/* ---- appends ---------------------------------------------------------------- */

int cf_mpi_column_grow(cf_column **cp, cf_file *f, MPI_Comm comm, int64_t local_rows, const cf_mpi_options *opt,
                       int64_t *first_row, cf_error *err)
{
    if (comm == MPI_COMM_NULL) return FAIL(err, CF_EARG, "cf_mpi_column_grow: MPI_COMM_NULL");
    cf_error e;
    error_init(&e);
    int rank = rank_of(comm), size = size_of(comm);
    cf_mpi_options o;
    int64_t *rank_rows = NULL, *blob_rows = NULL;
    void *meta = NULL;
    cf_column *c = cp ? *cp : NULL, *fresh = NULL;
    int rc = resolve_options(opt, &o, &e);
    if (rc == 0 && (!c || !f)) rc = FAIL(&e, CF_EARG, "cf_mpi_column_grow: NULL argument");
    if (rc == 0 && !cf_column_writable(c))
        rc = FAIL(&e, CF_EREADONLY, "%s: column is open read-only; cannot grow", cf_column_path(c));
    if (rc == 0 && cf_column_kind(c) != CF_KIND_DATA)
        rc = FAIL(&e, CF_EKIND, "%s: only data columns can grow", cf_column_path(c));
    if (rc == 0 && local_rows < 0)
        rc = FAIL(&e, CF_EARG, "%s: cannot add %lld rows here", cf_column_path(c), (long long)local_rows);
    if (rc == 0 && !(rank_rows = malloc((size_t)size * sizeof *rank_rows))) rc = FAIL(&e, CF_ENOMEM, "out of memory");
    int_field ints[] = { { "options.nfile", o.nfile }, { "options.blob_bytes", o.blob_bytes },
                         { "options.align_blobs_to_ranks", o.align_blobs_to_ranks },
                         { "the column's size", c ? cf_column_size(c) : -1 },
                         { "the column's nfile", c ? cf_column_nfile(c) : -1 } };
    rc = check_agree(comm, "cf_mpi_column_grow", ints, 5, NULL, 0, rc, &e, err);
    if (rc) goto done;

    /* Every rank learns every rank's new rows (the same sums everywhere). */
    MPI_Allgather(&local_rows, 1, MPI_INT64_T, rank_rows, 1, MPI_INT64_T, comm);
    int64_t old = cf_column_size(c), total = 0, first = 0;
    for (int r = 0; r < size; r++) {
        if (r == rank) first = old + total;
        total = rank_rows[r] > INT64_MAX - total ? INT64_MAX : total + rank_rows[r];
    }
    if (total == 0 && o.nfile == 0) { /* nothing to add: no blob either */
        if (first_row) *first_row = old;
        goto done;
    }
    /* The layout is about to change: the replicas' uncommitted writes move
     * to rank 0 first (as at a close, without committing), so that nothing
     * is held against the old blobs but by the handle that grows. */
    int merged = 0;
    if ((rc = gather_pending(c, comm, 1, 0, &merged, &e, err))) goto fail;
    int64_t len = 0;
    if (rank == 0) {
        rc = merged;
        int64_t rowbytes = cf_column_nmemb(c) * cf_column_itemsize(c), nfile = o.nfile;
        if (rc == 0 && total > (INT64_MAX - old * rowbytes) / rowbytes)
            rc = FAIL(&e, CF_EARG, "%s: %lld more rows of %lld bytes overflow a 64-bit size", cf_column_path(c),
                      (long long)total, (long long)rowbytes);
        if (rc == 0 && nfile == 0) nfile = cf_plan_nfile(total * rowbytes, size, o.blob_bytes);
        if (rc == 0 && o.align_blobs_to_ranks) {
            /* One blob per run of ranks, each added on its own (a grow of
             * one blob takes exactly the rows given). */
            if (!(blob_rows = malloc((size_t)nfile * sizeof *blob_rows)))
                rc = FAIL(&e, CF_ENOMEM, "%s: out of memory for %lld blobs", cf_column_path(c), (long long)nfile);
            if (rc == 0) rc = cf_plan_blobs_by_rank(rank_rows, size, nfile, blob_rows, &e);
            for (int64_t i = 0; rc == 0 && i < nfile; i++) rc = cf_column_grow(c, blob_rows[i], 1, &e);
        } else if (rc == 0) {
            rc = cf_column_grow(c, total, nfile, &e);
        }
        size_t mlen = 0;
        if (rc == 0) rc = cf_column_export_meta(c, &meta, &mlen, &e);
        len = (int64_t)mlen;
    }
    int got = 0;
    if ((rc = root_share(comm, rc, &e, &meta, &len, &got, &e, err))) goto fail;
    rc = got;
    if (rank != 0 && rc == 0) rc = cf_column_open_meta(&fresh, f, meta, (size_t)len, &e);
    if ((rc = agree(comm, rc, &e, err))) goto fail;
    /* The replicas' old handles hold nothing uncommitted any more. */
    if (rank != 0) {
        cf_column_close(c, NULL);
        *cp = fresh;
        fresh = NULL;
    }
    if (first_row) *first_row = first;
    goto done;
fail:
    /* Some rank's state may be lost, or rank 0's layout changed without
     * the others: give up every uncommitted change, so that the close
     * commits nothing and the column stays at its last committed version. */
    if (rank == 0) discard_pending(c);
    cf_column_close(fresh, NULL);
done:
    if (rank == 0) cf_free(meta);
    else free(meta);
    free(rank_rows);
    free(blob_rows);
    return rc;
}

/* ---- snapshots: many columns, one set of rounds ----------------------------- */

/* Fold an int64 and a string into a running FNV-1a hash. */
static uint64_t hash_i64(uint64_t h, int64_t v)
{
    for (int i = 0; i < 8; i++) h = (h ^ (uint64_t)((v >> (8 * i)) & 0xff)) * 1099511628211u;
    return h;
}

static uint64_t hash_text(uint64_t h, const char *t)
{
    return hash_i64(h, text_hash(t));
}

int cf_mpi_column_create_many(cf_file *f, MPI_Comm comm, cf_mpi_column_spec *specs, int64_t n,
                              const cf_mpi_options *opt, cf_error *err)
{
    if (comm == MPI_COMM_NULL) return FAIL(err, CF_EARG, "cf_mpi_column_create_many: MPI_COMM_NULL");
    cf_error e;
    error_init(&e);
    int rank = rank_of(comm), size = size_of(comm);
    cf_mpi_options o;
    char (*dts)[CF_DTYPE_MAX] = NULL;
    int64_t *mine = NULL, *all = NULL, *col_rows = NULL;
    unsigned char *metas = NULL;
    size_t used = 0, cap = 0;
    int rc = resolve_options(opt, &o, &e);
    if (rc == 0 && (n < 0 || (n > 0 && !specs))) rc = FAIL(&e, CF_EARG, "cf_mpi_column_create_many: bad list");
    int64_t k = rc == 0 ? n : 0;
    if (rc == 0 && (!(dts = calloc((size_t)(k > 0 ? k : 1), sizeof *dts)) ||
                    !(mine = malloc((size_t)(k > 0 ? k : 1) * sizeof *mine)) ||
                    !(all = malloc((size_t)(k > 0 ? k : 1) * (size_t)size * sizeof *all)) ||
                    !(col_rows = malloc((size_t)size * sizeof *col_rows))))
        rc = FAIL(&e, CF_ENOMEM, "out of memory for %lld columns", (long long)n);
    /* What must agree, folded into one hash: every column's name, dtype
     * and nmemb (a difference is named by its hash only). */
    uint64_t h = 14695981039346656037u;
    for (int64_t i = 0; i < k; i++) specs[i].column = NULL;
    for (int64_t i = 0; rc == 0 && i < k; i++) {
        cf_mpi_column_spec *sp = &specs[i];
        rc = check_create_args(f, sp->name, sp->dtype, sp->nmemb, sp->local_rows, dts[i], &e);
        mine[i] = sp->local_rows;
        h = hash_text(hash_text(hash_i64(h, sp->dtype ? sp->nmemb : 0), sp->name), sp->dtype ? dts[i] : NULL);
    }
    int_field ints[] = { { "the number of columns", n }, { "the columns' names, dtypes and nmemb (hashed)", (int64_t)h },
                         { "options.nfile", o.nfile }, { "options.blob_bytes", o.blob_bytes },
                         { "options.align_blobs_to_ranks", o.align_blobs_to_ranks } };
    if ((rc = check_agree(comm, "cf_mpi_column_create_many", ints, 5, NULL, 0, rc, &e, err))) goto done;

    /* Every rank's rows of every column, in one exchange. */
    if (n > 0) MPI_Allgather(mine, (int)n, MPI_INT64_T, all, (int)n, MPI_INT64_T, comm);
    /* Rank 0 creates them all and packs their snapshots: per column its
     * length (8 bytes) and its bytes. */
    int64_t len = 0;
    for (int64_t i = 0; rank == 0 && rc == 0 && i < n; i++) {
        for (int r = 0; r < size; r++) col_rows[r] = all[(int64_t)r * n + i];
        rc = create_planned(&specs[i].column, f, specs[i].name, dts[i], specs[i].nmemb, col_rows, size, &o, &e);
        void *meta = NULL;
        size_t mlen = 0;
        if (rc == 0) rc = cf_column_export_meta(specs[i].column, &meta, &mlen, &e);
        uint64_t m64 = (uint64_t)mlen;
        if (rc == 0 && (grow_append(&metas, &used, &cap, &m64, sizeof m64) || grow_append(&metas, &used, &cap, meta, mlen)))
            rc = FAIL(&e, CF_ENOMEM, "out of memory");
        cf_free(meta);
    }
    len = (int64_t)used;
    int got = 0;
    if ((rc = root_share(comm, rc, &e, (void **)&metas, &len, &got, &e, err))) goto fail;
    rc = got;
    const unsigned char *p = metas;
    for (int64_t i = 0; rank != 0 && rc == 0 && i < n; i++) {
        uint64_t m64;
        memcpy(&m64, p, sizeof m64);
        rc = cf_column_open_meta(&specs[i].column, f, p + sizeof m64, (size_t)m64, &e);
        p += sizeof m64 + m64;
    }
    if ((rc = agree(comm, rc, &e, err))) goto fail;
    for (int64_t i = 0; i < n; i++) {
        int64_t first = 0;
        for (int r = 0; r < rank; r++) first += all[(int64_t)r * n + i];
        specs[i].first_row = first;
    }
    goto done;
fail:
    /* Columns rank 0 created were never committed: discarded, they vanish. */
    for (int64_t i = 0; i < k; i++) {
        cf_column_discard(specs[i].column);
        cf_column_close(specs[i].column, NULL);
        specs[i].column = NULL;
    }
done:
    free(dts);
    free(mine);
    free(all);
    free(col_rows);
    free(metas);
    return rc;
}

int cf_mpi_column_write_many(const cf_mpi_write_spec *w, int64_t n, MPI_Comm comm, const cf_mpi_options *opt,
                             cf_error *err)
{
    if (comm == MPI_COMM_NULL) return FAIL(err, CF_EARG, "cf_mpi_column_write_many: MPI_COMM_NULL");
    cf_error e;
    error_init(&e);
    int rank = rank_of(comm), size = size_of(comm);
    cf_mpi_options o;
    int64_t *mine = NULL, *all = NULL, *ranges = NULL;
    span *spans = NULL;
    int rc = resolve_options(opt, &o, &e);
    if (rc == 0 && (n < 0 || (n > 0 && !w))) rc = FAIL(&e, CF_EARG, "cf_mpi_column_write_many: bad list");
    int64_t k = rc == 0 ? n : 0;
    if (rc == 0 && (!(mine = malloc((size_t)(k > 0 ? 2 * k : 1) * sizeof *mine)) ||
                    !(all = malloc((size_t)(k > 0 ? 2 * k : 1) * (size_t)size * sizeof *all)) ||
                    !(ranges = malloc((size_t)size * 2 * sizeof *ranges)) ||
                    !(spans = malloc((size_t)size * sizeof *spans))))
        rc = FAIL(&e, CF_ENOMEM, "out of memory for %lld columns", (long long)n);
    uint64_t h = 14695981039346656037u;
    for (int64_t i = 0; i < k; i++) {
        if (rc == 0) rc = check_io_args(w[i].column, 1, w[i].start, w[i].count, w[i].buf, w[i].buf_dtype, &e);
        mine[2 * i] = w[i].start;
        mine[2 * i + 1] = w[i].count;
        h = hash_i64(hash_i64(h, w[i].column ? cf_column_size(w[i].column) : -1),
                     w[i].column ? cf_column_nfile(w[i].column) : -1);
    }
    int_field ints[] = { { "the number of columns", n }, { "the columns' sizes and nfile (hashed)", (int64_t)h },
                         { "options.concurrency", o.concurrency } };
    rc = check_agree(comm, "cf_mpi_column_write_many", ints, 3, NULL, 0, rc, &e, err);
    o.concurrency = ints[2].value;
    if (rc) goto done;

    /* Every rank's rows of every column in one exchange; an overlap in any
     * column fails every rank before any byte is written. */
    if (n > 0 && size > 1) MPI_Allgather(mine, (int)(2 * n), MPI_INT64_T, all, (int)(2 * n), MPI_INT64_T, comm);
    for (int64_t i = 0; i < n && size > 1; i++) {
        for (int r = 0; r < size; r++) {
            ranges[2 * r] = all[(int64_t)r * 2 * n + 2 * i];
            ranges[2 * r + 1] = all[(int64_t)r * 2 * n + 2 * i + 1];
        }
        int lo, hi;
        if (find_overlap(ranges, size, spans, &lo, &hi)) {
            if (rank == lo)
                FAIL(&e, CF_EARG,
                     "%s: rows [%lld, %lld) here overlap rows [%lld, %lld) of rank %d: each row may be written "
                     "by one rank only (is start right on every rank?)",
                     cf_column_path(w[i].column), (long long)ranges[2 * lo],
                     (long long)(ranges[2 * lo] + ranges[2 * lo + 1]), (long long)ranges[2 * hi],
                     (long long)(ranges[2 * hi] + ranges[2 * hi + 1]), hi);
            rc = spread_error(comm, lo, CF_EARG, &e, err);
            goto done;
        }
    }
    /* Throttled turns: each rank writes all its columns in its turn. */
    turns t;
    turns_open(&t, comm, rank, size, rank - 1, rank + 1, o.concurrency);
    turn_begin(&t);
    for (int64_t i = 0; i < n && rc == 0; i++)
        if (w[i].count > 0)
            rc = cf_column_write(w[i].column, w[i].start, w[i].count, w[i].buf, w[i].buf_dtype, w[i].row_stride,
                                 w[i].elem_stride, &e);
    turn_end(&t);
    turns_close(&t);
    rc = agree(comm, rc, &e, err);
done:
    free(mine);
    free(all);
    free(ranges);
    free(spans);
    return rc;
}
