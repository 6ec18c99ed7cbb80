/* mpi_agree.c - how the ranks of libcolfile_mpi's collectives agree: errors
 * made everyone's, arguments checked alike, options, and turns.  The
 * collectives themselves are in mpi_column.c, mpi_io.c, mpi_close.c and
 * mpi_many.c (include/colfile_mpi.h).
 *
 * Glue only: every decision about blobs, turns, groups and modes is made by
 * the core's cf_plan_* functions, every byte on disk is written by the core.
 * What lives here is moving numbers and bytes between ranks, and making
 * every rank return the same result.
 *
 * The pattern of each collective: every rank does its local step, then
 * they agree (cf__mpi_agree(): the lowest failing rank's code and message go to
 * all).  A step done by rank 0 alone is followed by cf__mpi_root_result(), a
 * broadcast of its code, or cf__mpi_root_share(), which also carries what rank 0
 * made.  Every round costs: arguments are checked and agreed in one
 * reduction (check_agree), and the messages that name a failure are sent
 * only when there is one (tests/mpi/test_mpi_collectives.c counts the
 * rounds of each call).  No rank leaves a collective early, and every
 * buffer a rank must receive into is allocated before the agreement that
 * precedes the exchange, or received in small pieces when allocation fails,
 * so that no failure on one rank can leave another waiting.
 */
#include "mpi_impl.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- errors ------------------------------------------------------------ */

#if defined(__GNUC__)
__attribute__((format(printf, 5, 6)))
#endif
int cf__mpi_fail(cf_error *e, int code, const char *file, int line, const char *fmt, ...)
{
    if (e) {
        va_list ap;
        e->code = code;
        e->source_file = file;
        e->source_line = line;
        va_start(ap, fmt);
        vsnprintf(e->message, sizeof e->message, fmt, ap);
        va_end(ap);
    }
    return code;
}

/* What travels when a rank's failure is made everyone's. */
typedef struct {
    int code;
    char message[CF_ERROR_MESSAGE_MAX];
} wire_error;

/* Rank `from` failed with `rc` (its record: *local): give every rank that
 * code and the message prefixed "rank N: ".  Collective. */
int cf__mpi_spread_error(MPI_Comm comm, int from, int rc, const cf_error *local, cf_error *err)
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
int cf__mpi_agree(MPI_Comm comm, int rc, const cf_error *local, cf_error *err)
{
    int rank = rank_of(comm), size = size_of(comm);
    int mine = rc ? rank : size, first;
    MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm);
    if (first == size) return 0;
    return cf__mpi_spread_error(comm, first, rc, local, err);
}

/* Rank 0 did a step alone with result rc and produced *len bytes to send:
 * every rank gets its result and the length.  Collective. */
int cf__mpi_root_result(MPI_Comm comm, int rc, const cf_error *local, int64_t *len, cf_error *err)
{
    int64_t h[2] = { rc, *len };
    MPI_Bcast(h, 2, MPI_INT64_T, 0, comm);
    if (h[0] == 0) {
        *len = h[1];
        return 0;
    }
    return cf__mpi_spread_error(comm, 0, (int)h[0], local, err);
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
int cf__mpi_root_share(MPI_Comm comm, int rc, const cf_error *local, void **buf, int64_t *len, int *lrc_out,
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
    if (head.rc) return cf__mpi_spread_error(comm, 0, (int)head.rc, local, err);
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
    if (head.len - k > 0) {
        /* One broadcast (of at most 1 GiB each) when every rank has its
         * buffer; pieces through a scratch buffer only when one has none,
         * so that it still takes part. */
        int missing = p == NULL;
        MPI_Allreduce(MPI_IN_PLACE, &missing, 1, MPI_INT, MPI_MAX, comm);
        if (missing) {
            bcast_bytes(comm, p ? p + k : NULL, head.len - k);
        } else {
            const int64_t most = (int64_t)1 << 30;
            for (int64_t off = k; off < head.len; off += most)
                MPI_Bcast(p + off, (int)(head.len - off < most ? head.len - off : most), MPI_BYTE, 0, comm);
        }
    }
    *lrc_out = lrc;
    return 0;
}

/* ---- arguments that must agree ------------------------------------------ */

/* Compare integers and strings with rank 0's (rank 0 broadcasts its own).
 * `rc` is this rank's result so far: a failed rank takes part without
 * comparing.  Returns rc, or CF_EARG naming the first difference.  Every
 * rank's ints[i].value is replaced by rank 0's, so that what follows
 * (turns, groups) is the same everywhere even before the agreement.
 * Collective. */
int cf__mpi_check_same(MPI_Comm comm, const char *what, int_field *ints, int nint,
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
int cf__mpi_normalize_dtype(const char *dtype, char out[CF_DTYPE_MAX], const char *where, cf_error *e)
{
    int rc = cf_dtype_normalize(dtype, out, e);
    if (rc && e) {
        char why[CF_ERROR_MESSAGE_MAX];
        const char *file = e->source_file;
        int line = e->source_line;
        memcpy(why, e->message, sizeof why);
        cf__mpi_fail(e, rc, file, line, "%s: %s", where, why);
    }
    return rc;
}

/* 64-bit FNV-1a of a string (NULL and "" differ). */
int64_t cf__mpi_text_hash(const char *t)
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
int cf__mpi_check_agree(MPI_Comm comm, const char *what, int_field *ints, int nint, const str_field *strs, int nstr,
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
        int64_t len = strs[j].value ? (int64_t)strlen(strs[j].value) : -1, h = cf__mpi_text_hash(strs[j].value);
        v[n++] = len;
        v[n++] = ~len;
        v[n++] = h;
        v[n++] = ~h;
    }
    MPI_Allreduce(v, m, n, MPI_INT64_T, MPI_MAX, comm);
    int differ = 0;
    for (int k = 1; k < n; k += 2) differ |= m[k] != ~m[k + 1];
    if (differ) return cf__mpi_agree(comm, cf__mpi_check_same(comm, what, ints, nint, strs, nstr, rc, e), e, err);
    if (m[0] == 0) return 0;
    return cf__mpi_spread_error(comm, size - (int)m[0], rc, e, err);
}

/* ---- options --------------------------------------------------------------- */

void cf_mpi_options_init(cf_mpi_options *o)
{
    if (!o) return;
    memset(o, 0, sizeof *o);
    o->mode = CF_IO_AUTO;
}

/* Copy *opt (NULL: defaults) with the zeros replaced by the defaults. */
int cf__mpi_resolve_options(const cf_mpi_options *opt, cf_mpi_options *o, cf_error *e)
{
    cf_mpi_options_init(o);
    if (opt) *o = *opt;
    if (o->mode != CF_IO_AUTO && o->mode != CF_IO_THROTTLED && o->mode != CF_IO_AGGREGATED &&
        o->mode != CF_IO_BLOB_OWNERS)
        return FAIL(e, CF_EARG,
                    "options: mode %d is not CF_IO_AUTO, CF_IO_THROTTLED, CF_IO_AGGREGATED or CF_IO_BLOB_OWNERS",
                    o->mode);
    if (o->nfile < 0 || o->blob_bytes < 0 || o->group_bytes < 0 || o->small_bytes < 0 || o->chunk_rows < 0)
        return FAIL(e, CF_EARG,
                    "options: nfile, blob_bytes, group_bytes, small_bytes and chunk_rows must not be negative");
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

/* Collective (the duplicate is made only when there is more than one turn,
 * which every rank knows alike). */
void cf__mpi_turns_open(turns *t, MPI_Comm comm, int64_t index, int64_t count, int prev, int next,
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

void cf__mpi_turn_begin(const turns *t)
{
    char token;
    if (t->comm != MPI_COMM_NULL && t->index >= 0 && t->index % t->nturns != 0)
        MPI_Recv(&token, 0, MPI_BYTE, t->prev, TAG_TURN, t->comm, MPI_STATUS_IGNORE);
}

void cf__mpi_turn_end(const turns *t)
{
    char token = 0;
    if (t->comm != MPI_COMM_NULL && t->index >= 0 && t->index % t->nturns != t->nturns - 1 &&
        t->index + 1 < t->count)
        MPI_Send(&token, 0, MPI_BYTE, t->next, TAG_TURN, t->comm);
}

void cf__mpi_turns_close(turns *t)
{
    if (t->comm != MPI_COMM_NULL) MPI_Comm_free(&t->comm);
}
