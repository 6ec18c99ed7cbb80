/* mpi_close.c - closing columns collectively and growing them: the other
 * ranks' uncommitted write state moves to rank 0, which merges and commits
 * it (include/colfile_mpi.h). */
#include "mpi_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
int64_t cf__mpi_round_end(const int64_t *lens, int size, int r0, int *r1)
{
    int64_t bytes = 0;
    int r = r0;
    for (; r < size && (r == r0 || bytes + lens[r] <= CF_MPI_ROUND_BYTES); r++) bytes += lens[r];
    *r1 = r;
    return bytes;
}

/* The bytes of the largest round: what rank 0's receive buffer holds. */
int64_t cf__mpi_largest_round(const int64_t *lens, int size)
{
    int64_t most = 0;
    for (int r0 = 0, r1; r0 < size; r0 = r1) {
        int64_t bytes = cf__mpi_round_end(lens, size, r0, &r1);
        if (bytes > most) most = bytes;
    }
    return most;
}

/* Rank 0's MPI_Gatherv layout of round [r0, r1): the ranks of the round
 * packed from offset 0, every other rank sending nothing. */
void cf__mpi_round_layout(const int64_t *lens, int size, int r0, int r1, int *counts, int *displs)
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
    if ((rc = cf__mpi_agree(comm, lrc, e, err))) goto done;

    int64_t mine = (int64_t)plen;
    MPI_Allgather(&mine, 1, MPI_INT64_T, lens, 1, MPI_INT64_T, comm);
    int64_t biggest = cf__mpi_largest_round(lens, size);
    if (rank == 0) {
        recv = malloc(biggest > 0 ? (size_t)biggest : 1);
        counts = malloc((size_t)size * sizeof *counts);
        displs = malloc((size_t)size * sizeof *displs);
        if (!recv || !counts || !displs) lrc = FAIL(e, CF_ENOMEM, "out of memory");
    }
    int64_t unused = 0;
    if ((rc = cf__mpi_root_result(comm, lrc, e, &unused, err))) goto done;
    for (int r0 = 0, r1; r0 < size; r0 = r1) {
        (void)cf__mpi_round_end(lens, size, r0, &r1);
        if (rank == 0) cf__mpi_round_layout(lens, size, r0, r1, counts, displs);
        int in = rank >= r0 && rank < r1;
        MPI_Gatherv(pending, in ? (int)plen : 0, MPI_BYTE, recv, counts, displs, MPI_BYTE, 0, comm);
        for (int r = r0; rank == 0 && r < r1; r++) cf__mpi_close_root_bytes += r ? lens[r] : 0;
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
int cf__mpi_grow_append(unsigned char **buf, size_t *used, size_t *cap, const void *p, size_t len)
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
enum { HAVE = 1, NEED = 2, OWNERS = 4 };

static int handle_flags(const cf_column *c)
{
    if (!c) return 0;
    if (cf_column_kind(c) != CF_KIND_DATA || !cf_column_writable(c)) return HAVE;
    /* large columns close by chunk owners (mpi_owners.c) */
    return HAVE | NEED | (cf_column_owners_wanted(c) && !cf__mpi_close_gather_all ? OWNERS : 0);
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

/* Merge one rank's exported write states (p: per column that NEEDs it, in
 * order, its 8-byte length and its bytes) into rank 0's handles; stops at
 * the first failure. */
static int merge_states(cf_column **cols, const int *flags, int64_t n, const unsigned char *p, cf_error *e)
{
    int lrc = 0;
    for (int64_t i = 0; i < n && lrc == 0; i++) {
        if ((flags[i] & (NEED | OWNERS)) != NEED) continue;
        uint64_t len;
        memcpy(&len, p, sizeof len);
        lrc = cf_column_pending_merge(cols[i], p + sizeof len, (size_t)len, e);
        p += sizeof len + len;
    }
    return lrc;
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
    uint64_t have_h = 14695981039346656037u, need_h = have_h, own_h = have_h;
    for (int64_t i = 0; i < n; i++) {
        int fl = handle_flags(cols[i]);
        if (flags) flags[i] = fl;
        have_h = mix_flag(have_h, (fl & HAVE) != 0);
        need_h = mix_flag(need_h, (fl & NEED) != 0);
        own_h = mix_flag(own_h, (fl & OWNERS) != 0);
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
        if ((flags[i] & (NEED | OWNERS)) != NEED) continue;
        void *p = NULL;
        size_t len = 0;
        uint64_t len64;
        lrc = cf_column_pending_export(cols[i], &p, &len, &e);
        len64 = (uint64_t)len;
        if (lrc == 0 && (cf__mpi_grow_append(&state, &used, &cap, &len64, sizeof len64) ||
                         cf__mpi_grow_append(&state, &used, &cap, p, len)))
            lrc = FAIL(&e, CF_ENOMEM, "%s: out of memory", cf_column_path(cols[i]));
        if (lrc == 0 && (int64_t)used > MSG_MAX)
            lrc = FAIL(&e, CF_ENOMEM, "%s: pending write state of %zu bytes is too large to send",
                       cf_column_path(cols[i]), used);
        cf_free(p);
    }
    int64_t v[12] = { lrc ? size - rank : 0, (int64_t)have_h, ~(int64_t)have_h, (int64_t)need_h, ~(int64_t)need_h,
                      nhave, nneed, (int64_t)used, n, ~n, (int64_t)own_h, ~(int64_t)own_h }, m[12];
    MPI_Allreduce(v, m, 12, MPI_INT64_T, MPI_MAX, comm);
    if (m[8] != ~m[9]) {
        if (lrc == 0) lrc = FAIL(&e, CF_EARG, "%s: the ranks close different numbers of columns", what);
        rc = cf__mpi_agree(comm, lrc, &e, err);
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
        rc = cf__mpi_agree(comm, lrc, &e, err);
        goto fail;
    }
    if (m[10] != ~m[11]) {
        /* the same handles everywhere, with different chunks: the ranks
         * would not agree on how to close */
        if (lrc == 0) lrc = FAIL(&e, CF_EARG, "%s: the ranks' handles of a column differ in their chunk layout", what);
        rc = cf__mpi_agree(comm, lrc, &e, err);
        goto fail;
    }
    if (m[0]) {
        rc = cf__mpi_spread_error(comm, size - (int)m[0], lrc, &e, err);
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
        if ((rc = cf__mpi_agree(comm, lrc, &e, err))) goto fail;
        if (biggest > 0)
            MPI_Gather(state, (int)biggest, MPI_BYTE, recv, (int)biggest, MPI_BYTE, 0, comm);
        if (rank == 0) cf__mpi_close_root_bytes += biggest * size;
        for (int r = 1; rank == 0 && r < size && lrc == 0; r++) {
            lrc = merge_states(cols, flags, n, recv + (size_t)r * (size_t)biggest, &e);
        }
    } else {
        /* Rounds: the exact sizes first. */
        int64_t *lens = malloc((size_t)size * sizeof *lens);
        if (!lens) lrc = FAIL(&e, CF_ENOMEM, "out of memory");
        if ((rc = cf__mpi_agree(comm, lrc, &e, err))) {
            free(lens);
            goto fail;
        }
        int64_t mine = (int64_t)used;
        MPI_Allgather(&mine, 1, MPI_INT64_T, lens, 1, MPI_INT64_T, comm);
        int *counts = NULL, *displs = NULL;
        int64_t most = cf__mpi_largest_round(lens, size);
        if (rank == 0) {
            recv = malloc(most > 0 ? (size_t)most : 1);
            counts = malloc((size_t)size * sizeof *counts);
            displs = malloc((size_t)size * sizeof *displs);
            if (!recv || !counts || !displs) lrc = FAIL(&e, CF_ENOMEM, "out of memory");
        }
        int64_t unused = 0;
        if ((rc = cf__mpi_root_result(comm, lrc, &e, &unused, err))) {
            free(lens);
            free(counts);
            free(displs);
            goto fail;
        }
        for (int r0 = 0, r1; r0 < size; r0 = r1) {
            (void)cf__mpi_round_end(lens, size, r0, &r1);
            if (rank == 0) cf__mpi_round_layout(lens, size, r0, r1, counts, displs);
            int in = rank >= r0 && rank < r1;
            MPI_Gatherv(state, in ? (int)used : 0, MPI_BYTE, recv, counts, displs, MPI_BYTE, 0, comm);
            for (int r = r0; rank == 0 && r < r1; r++) cf__mpi_close_root_bytes += lens[r];
            for (int r = r0; rank == 0 && r < r1 && lrc == 0; r++) {
                if (r == 0) continue;
                lrc = merge_states(cols, flags, n, recv + displs[r], &e);
            }
        }
        free(lens);
        free(counts);
        free(displs);
    }
    /* Large columns: their owners, one column after the other. */
    for (int64_t i = 0; i < n; i++) {
        if (!cols[i] || !(flags[i] & OWNERS)) continue;
        int merged = 0;
        if ((rc = cf__mpi_owner_close(cols[i], comm, lrc, &merged, &e, err))) goto fail;
        if (lrc == 0) lrc = merged;
    }
    /* Rank 0 commits each column once; the replicas commit nothing. */
    for (int64_t i = 0; i < n; i++) {
        if (!cols[i]) continue;
        if (lrc) discard_pending(cols[i]);
        int r2 = cf_column_close(cols[i], &e);
        cols[i] = NULL;
        if (lrc == 0) lrc = r2;
    }
    rc = cf__mpi_agree(comm, lrc, &e, err);
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
    int rc = cf__mpi_resolve_options(opt, &o, &e);
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
    rc = cf__mpi_check_agree(comm, "cf_mpi_column_grow", ints, 5, NULL, 0, rc, &e, err);
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
    if ((rc = cf__mpi_root_share(comm, rc, &e, &meta, &len, &got, &e, err))) goto fail;
    rc = got;
    if (rank != 0 && rc == 0) rc = cf_column_open_meta(&fresh, f, meta, (size_t)len, &e);
    if ((rc = cf__mpi_agree(comm, rc, &e, err))) goto fail;
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
