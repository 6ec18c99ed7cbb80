/* mpi_owners.c - closing a large column by chunk owners (colfile_binding.h,
 * "Closing by chunk owners"): rank 0 gathers per-blob summaries and the
 * summaries of index pages, each rank keeps the chunks that start in its
 * rows and writes their index records itself, so that what rank 0
 * receives and holds follows the blobs, the ranks and the pages of 256
 * chunks, never the chunks. */
#include "mpi_impl.h"

#include <stdlib.h>
#include <string.h>

int64_t cf__mpi_close_root_bytes;
int cf__mpi_close_gather_all;

/* What rank 0 does with each rank's bytes of a gather_each. */
typedef int (*take_fn)(void *arg, int from, const unsigned char *p, size_t n, cf_error *e);

/* Each rank's len bytes to rank 0, in rounds of at most
 * CF_MPI_ROUND_BYTES (cf__mpi_round_end); rank 0 calls take for each rank
 * in rank order, up to the first failure (*taken: its result, not
 * agreed).  lrc: this rank's result so far.  Returns the agreed result of
 * the steps before the gather.  Collective. */
static int gather_each(MPI_Comm comm, const void *mine, int64_t len, int lrc, take_fn take, void *arg, int *taken,
                       cf_error *e, cf_error *err)
{
    int rank = rank_of(comm), size = size_of(comm), rc;
    int64_t *lens = malloc((size_t)size * sizeof *lens);
    unsigned char *recv = NULL;
    int *counts = NULL, *displs = NULL;
    if (lrc == 0 && len > MSG_MAX) lrc = FAIL(e, CF_ENOMEM, "%lld bytes are too many to send at a close", (long long)len);
    if (lrc == 0 && !lens) lrc = FAIL(e, CF_ENOMEM, "out of memory");
    if ((rc = cf__mpi_agree(comm, lrc, e, err))) goto done;
    MPI_Allgather(&len, 1, MPI_INT64_T, lens, 1, MPI_INT64_T, comm);
    int64_t most = cf__mpi_largest_round(lens, size), unused = 0;
    if (rank == 0) {
        recv = malloc(most > 0 ? (size_t)most : 1);
        counts = malloc((size_t)size * sizeof *counts);
        displs = malloc((size_t)size * sizeof *displs);
        if (!recv || !counts || !displs) lrc = FAIL(e, CF_ENOMEM, "out of memory");
    }
    if ((rc = cf__mpi_root_result(comm, lrc, e, &unused, err))) goto done;
    for (int r0 = 0, r1; r0 < size; r0 = r1) {
        (void)cf__mpi_round_end(lens, size, r0, &r1);
        if (rank == 0) cf__mpi_round_layout(lens, size, r0, r1, counts, displs);
        int in = rank >= r0 && rank < r1;
        MPI_Gatherv(mine, in ? (int)len : 0, MPI_BYTE, recv, counts, displs, MPI_BYTE, 0, comm);
        for (int r = r0; rank == 0 && r < r1; r++) {
            if (r != 0) cf__mpi_close_root_bytes += lens[r];
            if (*taken == 0 && lens[r] > 0) *taken = take(arg, r, recv + displs[r], (size_t)lens[r], e);
        }
    }
done:
    free(lens);
    free(recv);
    free(counts);
    free(displs);
    return rc;
}

static int take_state(void *arg, int from, const unsigned char *p, size_t n, cf_error *e)
{
    (void)from;
    return cf_column_pending_merge(arg, p, n, e);
}

/* A rank's parts for several owners, each an 8-byte length and its bytes
 * (framed): merged one after the other. */
static int take_framed(void *arg, int from, const unsigned char *p, size_t n, cf_error *e)
{
    (void)from;
    int rc = 0;
    while (rc == 0 && n > 0) {
        uint64_t len;
        if (n < sizeof len) return FAIL(e, CF_EFORMAT, "%s: the chunk owners' parts are cut short", cf_column_path(arg));
        memcpy(&len, p, sizeof len);
        p += sizeof len;
        n -= sizeof len;
        if (len > n) return FAIL(e, CF_EFORMAT, "%s: the chunk owners' parts are cut short", cf_column_path(arg));
        rc = cf_column_pending_merge(arg, p, (size_t)len, e);
        p += len;
        n -= (size_t)len;
    }
    return rc;
}

typedef struct {
    unsigned char *p;
    size_t used, cap;
} bytes;

static int take_bytes(void *arg, int from, const unsigned char *p, size_t n, cf_error *e)
{
    (void)from;
    bytes *b = arg;
    return cf__mpi_grow_append(&b->p, &b->used, &b->cap, p, n) ? FAIL(e, CF_ENOMEM, "out of memory") : 0;
}

int cf__mpi_owner_close(cf_column *c, MPI_Comm comm, int lrc, int *merged, cf_error *e, cf_error *err)
{
    int rank = rank_of(comm), size = size_of(comm), rc = 0, got = 0;
    int64_t first = cf_column_pending_first_row(c), nfile = cf_column_nfile(c), share_len = 0;
    void *state = NULL, *summary = NULL, *parts = NULL, *pieces = NULL, *share = NULL;
    size_t len = 0, slen = 0, plen = 0;
    int64_t *firsts = malloc((size_t)size * sizeof *firsts), *cut = malloc((size_t)(size + 1) * sizeof *cut),
            *part_len = malloc((size_t)size * sizeof *part_len);
    int *cnt = malloc(4 * (size_t)size * sizeof *cnt);
    unsigned char *holds = malloc((size_t)(nfile ? nfile : 1)), *least = NULL, *recv = NULL;
    bytes pcs = { NULL, 0, 0 };
    *merged = 0;
    if (rank == 0 && !(least = malloc((size_t)(nfile ? nfile : 1)))) lrc = FAIL(e, CF_ENOMEM, "out of memory");
    if (lrc == 0 && (!firsts || !cut || !part_len || !cnt || !holds)) lrc = FAIL(e, CF_ENOMEM, "out of memory");
    /* rank 0's state stays in its handle; the others hand theirs over */
    if (lrc == 0) lrc = rank == 0 ? cf_column_pending_peek(c, &state, &len, e)
                                  : cf_column_pending_export(c, &state, &len, e);
    if ((rc = cf__mpi_agree(comm, lrc, e, err))) goto done;
    MPI_Allgather(&first, 1, MPI_INT64_T, firsts, 1, MPI_INT64_T, comm);
    cf_plan_owner_cuts(firsts, size, cf_column_size(c), cut);
    lrc = cf_column_pending_split(c, state, len, cut, size, &summary, &slen, &parts, part_len, e);
    cf_free(state);
    state = NULL;
    int64_t total = 0;
    for (int r = 0; lrc == 0 && r < size; r++) total += part_len[r];
    if (lrc == 0 && total > MSG_MAX)
        lrc = FAIL(e, CF_ENOMEM, "%s: %lld bytes of chunk statistics are too many to send", cf_column_path(c),
                   (long long)total);

    /* 1. the summaries to rank 0, in rank order (its own is in its handle) */
    if ((rc = gather_each(comm, summary, rank == 0 ? 0 : (int64_t)slen, lrc, take_state, c, merged, e, err)))
        goto done;

    /* 2. the parts to their owners, each rank's own included, all merged
     * in rank order (as the gathering close merges whole states) */
    int *scount = cnt, *sdispl = cnt + size, *rcount = cnt + 2 * size, *rdispl = cnt + 3 * size;
    int64_t at = 0, in = 0;
    for (int r = 0; r < size; r++) {
        scount[r] = (int)part_len[r];
        sdispl[r] = (int)at;
        at += part_len[r];
    }
    MPI_Alltoall(scount, 1, MPI_INT, rcount, 1, MPI_INT, comm);
    for (int r = 0; r < size; r++) {
        rdispl[r] = (int)in;
        in += rcount[r];
    }
    if (in > MSG_MAX) lrc = FAIL(e, CF_ENOMEM, "%s: %lld bytes of chunk statistics are too many to receive",
                                 cf_column_path(c), (long long)in);
    else if (!(recv = malloc(in > 0 ? (size_t)in : 1))) lrc = FAIL(e, CF_ENOMEM, "out of memory");
    if ((rc = cf__mpi_agree(comm, lrc, e, err))) goto done;
    MPI_Alltoallv(parts, scount, sdispl, MPI_BYTE, recv, rcount, rdispl, MPI_BYTE, comm);
    if (rank == 0) cf__mpi_close_root_bytes += in - rcount[0];
    lrc = cf_column_owner_begin(c, summary, slen, e);
    for (int r = 0; r < size && lrc == 0; r++)
        if (rcount[r] > 0) lrc = cf_column_pending_merge(c, recv + rdispl[r], (size_t)rcount[r], e);
    if (rank == 0 && lrc == 0) lrc = *merged;
    *merged = 0;

    /* 3. whose statistics the owners hold whole, and rank 0's plan */
    if (lrc == 0) cf_column_owner_holds(c, cut, size, rank, holds);
    if ((rc = cf__mpi_agree(comm, lrc, e, err))) goto done;
    if (nfile > 0) MPI_Reduce(holds, least, (int)nfile, MPI_UNSIGNED_CHAR, MPI_MIN, 0, comm);
    if (rank == 0) {
        cf__mpi_close_root_bytes += nfile;
        int owners = 0;
        const char *dir = NULL;
        /* the plan: [owners write the index], valid[nfile], the staging directory */
        lrc = cf_column_owner_plan(c, least, holds, &owners, &dir, e);
        size_t dl = strlen(dir);
        share_len = 1 + nfile + (int64_t)dl + 1;
        if (lrc == 0 && !(share = malloc((size_t)share_len))) lrc = FAIL(e, CF_ENOMEM, "out of memory");
        if (lrc == 0) {
            unsigned char *s = share;
            s[0] = (unsigned char)owners;
            memcpy(s + 1, holds, (size_t)nfile);
            memcpy(s + 1 + nfile, dir, dl + 1);
        }
    }
    if ((rc = cf__mpi_root_share(comm, lrc, e, &share, &share_len, &got, e, err))) goto done;
    if ((rc = cf__mpi_agree(comm, got, e, err))) goto done;
    const unsigned char *plan = share;
    if (plan[0]) {
        /* 4a. each owner writes its records; rank 0 joins the pages above */
        lrc = cf_column_owner_index_write(c, (const char *)plan + 1 + nfile, plan + 1, cut, size, rank, &pieces,
                                          &plen, e);
        if ((rc = gather_each(comm, pieces, (int64_t)plen, lrc, take_bytes, &pcs, merged, e, err))) goto done;
        if (rank == 0 && *merged == 0) *merged = cf_column_owner_index_finish(c, pcs.p, pcs.used, e);
    } else {
        /* 4b. a column whose statistics the text holds (or that the commit
         * reads back): rank 0 takes every other owner's parts, each
         * rank's (its own first) in rank order, as the gathering close
         * does, each part on its own */
        bytes fr = { NULL, 0, 0 };
        const unsigned char *at_part = (const unsigned char *)parts + part_len[0];
        for (int r = 1; r < size && lrc == 0; r++) {
            uint64_t plen_r = (uint64_t)part_len[r];
            if (plen_r && (cf__mpi_grow_append(&fr.p, &fr.used, &fr.cap, &plen_r, sizeof plen_r) ||
                        cf__mpi_grow_append(&fr.p, &fr.used, &fr.cap, at_part, (size_t)plen_r)))
                lrc = FAIL(e, CF_ENOMEM, "out of memory");
            at_part += plen_r;
        }
        rc = gather_each(comm, fr.p, (int64_t)fr.used, lrc, take_framed, c, merged, e, err);
        free(fr.p);
        if (rc) goto done;
    }
done:
    cf_free(state);
    cf_free(summary);
    cf_free(parts);
    cf_free(pieces);
    free(share);
    free(firsts);
    free(cut);
    free(part_len);
    free(cnt);
    free(holds);
    free(least);
    free(recv);
    free(pcs.p);
    return rc;
}
