/* mpi_stream.c - task-local streams over a communicator (docs/format.md
 * 8.7): each rank is one task.  Rank 0 creates the stream (lock, staging
 * directory) and shares the layout and directory; every rank opens its
 * task there and appends with the core, with no communication; a flush
 * writes the table in parts (colfile_stream.h): rank 0 the head and the
 * checksum line, the last rank of each physical file its ranks' lines, so
 * that no rank receives every task's chunk CRC32Cs and statistics. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_impl.h"

struct cf_mpi_stream {
    MPI_Comm comm;           /* a duplicate of the caller's */
    cf_stream_writer *w;     /* rank 0: the owner; others: joined */
    cf_stream_task *task;    /* this rank's */
};

int64_t cf_mpi_stream_files(MPI_Comm comm)
{
    /* ranks sharing memory are a node: one file per node */
    MPI_Comm node;
    MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    int local = rank_of(node) == 0, nodes = 0;
    MPI_Allreduce(&local, &nodes, 1, MPI_INT, MPI_SUM, comm);
    MPI_Comm_free(&node);
    return nodes;
}

static void stream_free(cf_mpi_stream *s)
{
    if (!s) return;
    cf_stream_discard(s->w);
    if (s->comm != MPI_COMM_NULL) MPI_Comm_free(&s->comm);
    free(s);
}

/* Rank 0 has made (or failed to make, rc) the owner's writer s->w: it
 * shares the layout, row type and directory, the others join, and every
 * rank opens its task.  On failure s is freed on every rank. */
static int share_and_join(cf_mpi_stream *s, cf_file *f, MPI_Comm comm, const char *name, int rc, cf_error *e,
                          cf_error *err)
{
    int rank = rank_of(comm);
    unsigned char *packed = NULL;
    int64_t len = 0;
    if (rank == 0 && rc == 0) {
        cf_stream_layout l;
        char dt[CF_DTYPE_MAX] = { 0 };
        int64_t nmemb;
        cf_stream_writer_info(s->w, &l, dt, &nmemb);
        if (l.tasks != size_of(comm))
            rc = FAIL(e, CF_EARG, "%s/%s: a stream of %lld tasks, written by %d ranks (one task per rank)",
                      cf_file_path(f), name, (long long)l.tasks, size_of(comm));
        const char *dir = cf_stream_writer_dir(s->w);
        len = 40 + CF_DTYPE_MAX + (int64_t)strlen(dir) + 1;
        if (rc == 0 && !(packed = malloc((size_t)len))) rc = FAIL(e, CF_ENOMEM, "%s: out of memory", dir);
        if (rc == 0) {
            int64_t v[5] = { l.tasks, l.files, l.chunk, l.align, nmemb };
            memcpy(packed, v, 40);
            memcpy(packed + 40, dt, CF_DTYPE_MAX);
            memcpy(packed + 40 + CF_DTYPE_MAX, dir, (size_t)(len - 40 - CF_DTYPE_MAX));
        }
    }
    int got = 0;
    if ((rc = cf__mpi_root_share(comm, rc, e, (void **)&packed, &len, &got, e, err))) {
        stream_free(s);
        return rc;
    }
    rc = got;
    if (rc == 0 && rank != 0) {
        int64_t v[5];
        char dt[CF_DTYPE_MAX];
        memcpy(v, packed, 40);
        memcpy(dt, packed + 40, CF_DTYPE_MAX);
        dt[CF_DTYPE_MAX - 1] = 0;
        cf_stream_layout shared = { v[0], v[1], v[2], v[3] };
        rc = cf_stream_join(&s->w, f, name, (const char *)packed + 40 + CF_DTYPE_MAX, dt, v[4], &shared, e);
    }
    free(packed);
    if (rc == 0) rc = cf_stream_task_open(&s->task, s->w, rank, e);
    if ((rc = cf__mpi_agree(comm, rc, e, err))) {
        stream_free(s); /* rank 0's staging directory goes with it */
        return rc;
    }
    return 0;
}

static int stream_new(cf_mpi_stream **out, MPI_Comm comm, int rc, cf_error *e, cf_error *err)
{
    cf_mpi_stream *s = rc ? NULL : calloc(1, sizeof *s);
    if (!rc && !s) rc = FAIL(e, CF_ENOMEM, "out of memory");
    if ((rc = cf__mpi_agree(comm, rc, e, err))) {
        free(s);
        return rc;
    }
    MPI_Comm_dup(comm, &s->comm);
    *out = s;
    return 0;
}

int cf_mpi_stream_create(cf_mpi_stream **out, cf_file *f, MPI_Comm comm, const char *name, const char *dtype,
                         int64_t nmemb, int64_t files, int64_t chunk, int64_t align, cf_error *err)
{
    cf_error e;
    error_init(&e);
    int rank = rank_of(comm), size = size_of(comm), rc = 0;
    if (!out || !f || !name || !dtype) rc = FAIL(&e, CF_EARG, "cf_mpi_stream_create: NULL argument");
    cf_mpi_stream *s = rc ? NULL : calloc(1, sizeof *s);
    if (rc == 0 && !s) rc = FAIL(&e, CF_ENOMEM, "%s: out of memory", name);
    /* the nodes are counted (a collective) only when the default layout
     * depends on them: no files given, and a File on a file system that
     * is not local; every rank tells which, in the check it makes anyway */
    int64_t by_node = rc == 0 && files == 0 && cf_stream_files_default(f, size, 1) != cf_stream_files_default(f, size, size);
    int_field ints[5] = { { "nmemb", nmemb }, { "files", files }, { "chunk", chunk }, { "align", align },
                          { "one file per node (the File's file system is not local)", by_node } };
    str_field strs[2] = { { "name", name }, { "dtype", dtype } };
    if ((rc = cf__mpi_check_agree(comm, "cf_mpi_stream_create", ints, 5, strs, 2, rc, &e, err))) {
        free(s);
        return rc;
    }
    if (files == 0) files = cf_stream_files_default(f, size, by_node ? cf_mpi_stream_files(comm) : 1);
    MPI_Comm_dup(comm, &s->comm);
    /* rank 0 chooses the layout (its st_blksize) and creates */
    if (rank == 0) {
        cf_stream_layout l;
        rc = cf_stream_layout_choose(&l, f, size, files, chunk, align, &e);
        if (rc == 0) rc = cf_stream_create(&s->w, f, name, dtype, nmemb, &l, &e);
    }
    if ((rc = share_and_join(s, f, comm, name, rc, &e, err))) return rc;
    *out = s;
    return 0;
}

/* The readers of a reopen in slices: at least one per physical file, more
 * when the table is large, spread evenly over the ranks. */
#ifndef CF_MPI_SLICE_BYTES
#define CF_MPI_SLICE_BYTES ((int64_t)4 << 20)
#endif

static int64_t slice_readers(int64_t ranks, int64_t files, int64_t body)
{
    int64_t r = body / CF_MPI_SLICE_BYTES + (body % CF_MPI_SLICE_BYTES != 0);
    if (r < files) r = files;
    if (r < 1) r = 1;
    return r < ranks ? r : ranks;
}

/* Reader j of r over n ranks is rank floor(j n / r); -1 when `rank` is none. */
static int64_t reader_index(int64_t rank, int64_t ranks, int64_t r)
{
    int64_t j = (int64_t)(((unsigned __int128)rank * (unsigned __int128)r + (unsigned __int128)ranks - 1) /
                          (unsigned __int128)ranks);
    return j < r && (int64_t)((unsigned __int128)j * (unsigned __int128)ranks / (unsigned __int128)r) == rank ? j
                                                                                                          : -1;
}

/* Byte where reader j's range of the table's task lines starts. */
static int64_t slice_at(int64_t hlen, int64_t body, int64_t j, int64_t r)
{
    return hlen + (int64_t)((unsigned __int128)j * (unsigned __int128)body / (unsigned __int128)r);
}

#define TAG_SLICE 0x5cf4
#define TAG_REC_LEN 0x5cf5
#define TAG_REC 0x5cf6

/* The readers' records {bytes, CRC32C, first task, tasks} of their ranges
 * (this rank's: reader j's slice of the body after hlen, its CRC32C crc and
 * tasks [first, first + n)), sent to rank 0 (reader j, of r, on rank
 * j x size / r; reader 0 is rank 0) and joined there in order: the bytes,
 * their CRC32C, and the task after a gapless run of tasks (-1: a gap or an
 * overlap).  Outputs on rank 0. */
static void join_slices(MPI_Comm comm, int me, int size, int64_t hlen, int64_t body, int64_t r, int64_t j,
                        uint32_t crc, int64_t first, int64_t n, int64_t *total, uint32_t *all, int64_t *next)
{
    int64_t mine[4] = { 0, (int64_t)crc, first, n };
    if (j >= 0) mine[0] = slice_at(hlen, body, j + 1, r) - slice_at(hlen, body, j, r);
    *total = 0, *next = 0, *all = 0;
    if (j > 0) MPI_Send(mine, 4, MPI_INT64_T, 0, TAG_SLICE, comm);
    if (me != 0) return;
    for (int64_t k = 0; k < r; k++) {
        int64_t got[4];
        if (k == 0) memcpy(got, mine, sizeof got);
        else MPI_Recv(got, 4, MPI_INT64_T, (int)(k * size / r), TAG_SLICE, comm, MPI_STATUS_IGNORE);
        *all = cf_stream_crc32c_join(*all, (uint32_t)got[1], got[0]);
        *total += got[0];
        if (got[3] > 0 && *next >= 0) *next = got[2] == *next ? *next + got[3] : -1;
    }
}

/* A reader's lines of tasks [first, first + n) in text, task i's ending at
 * ends[i - first]: each to its rank (this rank's own kept in *own), in
 * pieces of at most CF_MPI_PIECE_BYTES.  Requests in *reqs (*nreq). */
static int send_records(MPI_Comm comm, const char *text, const int64_t *ends, int64_t first, int64_t n, int me,
                        char **own, int64_t *ownlen, MPI_Request **reqs, int *nreq, int64_t *heads, cf_error *e)
{
    int64_t count = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t len = ends[i] - (i ? ends[i - 1] : 0);
        count += 1 + len / CF_MPI_PIECE_BYTES + 1;
    }
    *reqs = count ? malloc((size_t)count * sizeof **reqs) : NULL;
    if (count && !*reqs) return FAIL(e, CF_ENOMEM, "rank %d: out of memory for %lld sends", me, (long long)count);
    int k = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t at = i ? ends[i - 1] : 0, len = ends[i] - at;
        int to = (int)(first + i);
        if (to == me) {
            if (!(*own = malloc((size_t)len + 1))) return FAIL(e, CF_ENOMEM, "rank %d: out of memory", me);
            memcpy(*own, text + at, (size_t)len);
            *ownlen = len;
            continue;
        }
        heads[i] = len;
        MPI_Isend(&heads[i], 1, MPI_INT64_T, to, TAG_REC_LEN, comm, &(*reqs)[k++]);
        for (int64_t done = 0; done < len;) {
            int64_t m = len - done < CF_MPI_PIECE_BYTES ? len - done : CF_MPI_PIECE_BYTES;
            MPI_Isend(text + at + done, (int)m, MPI_BYTE, to, TAG_REC, comm, &(*reqs)[k++]);
            done += m;
        }
    }
    *nreq = k;
    return 0;
}

/* This rank's task lines from whichever reader holds them. */
static void recv_record(MPI_Comm comm, char **out, int64_t *outlen)
{
    MPI_Status st;
    int64_t len = 0;
    MPI_Recv(&len, 1, MPI_INT64_T, MPI_ANY_SOURCE, TAG_REC_LEN, comm, &st);
    char *buf = malloc((size_t)len + 1);
    if (!buf) MPI_Abort(comm, CF_ENOMEM); /* the reader waits to send: a hang is worse */
    for (int64_t done = 0; done < len;) {
        int64_t m = len - done < CF_MPI_PIECE_BYTES ? len - done : CF_MPI_PIECE_BYTES;
        MPI_Recv(buf + done, (int)m, MPI_BYTE, st.MPI_SOURCE, TAG_REC, comm, MPI_STATUS_IGNORE);
        done += m;
    }
    *out = buf;
    *outlen = len;
}

/* Every rank's task state from the committed table, read in slices: the
 * readers read their ranges, rank 0 checks that they make the sealed
 * table, and each task's lines go to its rank, which resumes from them. */
static int resume_in_slices(cf_mpi_stream *s, int64_t hlen, int64_t tlen, cf_error *e, cf_error *err)
{
    MPI_Comm comm = s->comm;
    int me = rank_of(comm), size = size_of(comm), rc = 0;
    cf_stream_layout l;
    cf_stream_writer_info(s->w, &l, NULL, NULL);
    int64_t end = tlen - 17, body = end - hlen;
    int64_t r = slice_readers(size, l.files, body), j = reader_index(me, size, r);
    char *text = NULL;
    int64_t len = 0, *ends = NULL, first = 0, n = 0;
    uint32_t crc = 0;
    if (j >= 0)
        rc = cf_stream_table_slice(s->w, slice_at(hlen, body, j, r), slice_at(hlen, body, j + 1, r), end, &text, &len,
                                   &ends, &first, &n, &crc, e);
    if ((rc = cf__mpi_agree(comm, rc, e, err))) goto out;
    /* rank 0 checks the ranges: O(readers) small records, never lines */
    int64_t total, next;
    uint32_t all;
    join_slices(comm, me, size, hlen, body, r, j, crc, first, n, &total, &all, &next);
    if (me == 0) rc = cf_stream_slices_check(s->w, total, all, next, e);
    if ((rc = cf__mpi_agree(comm, rc, e, err))) goto out;
    /* every task's lines to its rank: each rank receives exactly one */
    MPI_Request *reqs = NULL;
    int nreq = 0;
    char *own = NULL;
    int64_t ownlen = -1;
    int64_t *heads = n ? malloc((size_t)n * sizeof *heads) : NULL;
    if (n && !heads) rc = FAIL(e, CF_ENOMEM, "rank %d: out of memory", me);
    if (rc == 0) rc = send_records(comm, text, ends, first, n, me, &own, &ownlen, &reqs, &nreq, heads, e);
    if (rc) MPI_Abort(comm, rc); /* ranks wait for these lines: a hang is worse */
    if (ownlen < 0) recv_record(comm, &own, &ownlen);
    if (nreq) MPI_Waitall(nreq, reqs, MPI_STATUSES_IGNORE);
    free(reqs);
    free(heads);
    rc = cf_stream_task_resume(s->w, me, own, ownlen, e);
    free(own);
    if (rc == 0) rc = cf_stream_task_open(&s->task, s->w, me, e);
    rc = cf__mpi_agree(comm, rc, e, err);
out:
    cf_free(text);
    cf_free(ends);
    return rc;
}

/* How reopen and open begin: their pointers checked (`ok`), and the same
 * stream name on every rank. */
static int check_name(MPI_Comm comm, const char *fn, int ok, const char *name, cf_error *e, cf_error *err)
{
    int rc = ok ? 0 : FAIL(e, CF_EARG, "%s: NULL argument", fn);
    str_field strs[1] = { { "name", name } };
    return cf__mpi_check_agree(comm, fn, NULL, 0, strs, 1, rc, e, err);
}

/* The head lines rank 0 read, packed to share: hlen and tlen, the head
 * text, then `tail` with its NUL (none when NULL).  `what` names the
 * stream in an error. */
static int pack_head(unsigned char **out, int64_t *len, const char *head, int64_t hlen, int64_t tlen,
                     const char *tail, const char *what, cf_error *e)
{
    int64_t n = 16 + hlen + (tail ? (int64_t)strlen(tail) + 1 : 0);
    unsigned char *p = malloc((size_t)n);
    if (!p) return FAIL(e, CF_ENOMEM, "%s: out of memory", what);
    int64_t v[2] = { hlen, tlen };
    memcpy(p, v, 16);
    memcpy(p + 16, head, (size_t)hlen);
    if (tail) memcpy(p + 16 + hlen, tail, (size_t)(n - 16 - hlen));
    *out = p;
    *len = n;
    return 0;
}

/* hlen and tlen of a pack_head() pack; the head text is at packed + 16. */
static void unpack_head(const unsigned char *packed, int64_t *hlen, int64_t *tlen)
{
    int64_t v[2];
    memcpy(v, packed, 16);
    *hlen = v[0];
    *tlen = v[1];
}

int cf_mpi_stream_reopen(cf_mpi_stream **out, cf_file *f, MPI_Comm comm, const char *name, cf_error *err)
{
    cf_error e;
    error_init(&e);
    int rc, rank = rank_of(comm);
    if ((rc = check_name(comm, "cf_mpi_stream_reopen", out && f && name, name, &e, err))) return rc;
    cf_mpi_stream *s;
    if ((rc = stream_new(&s, comm, 0, &e, err))) return rc;
    /* rank 0 locks and reads the head lines; the others get them */
    char *head = NULL;
    int64_t hlen = 0, tlen = 0, len = 0;
    unsigned char *packed = NULL;
    if (rank == 0) {
        rc = cf_stream_reopen_head(&s->w, f, name, &head, &hlen, &tlen, &e);
        cf_stream_layout l;
        if (rc == 0) cf_stream_writer_info(s->w, &l, NULL, NULL);
        if (rc == 0 && l.tasks != size_of(comm))
            rc = FAIL(&e, CF_EARG, "%s/%s: a stream of %lld tasks, reopened by %d ranks (appends need one task per "
                      "rank, as many as it was written with)", cf_file_path(f), name, (long long)l.tasks,
                      size_of(comm));
        if (rc == 0) {
            const char *dir = cf_stream_writer_dir(s->w);
            rc = pack_head(&packed, &len, head, hlen, tlen, dir, dir, &e);
        }
        cf_free(head);
    }
    int got = 0;
    if ((rc = cf__mpi_root_share(comm, rc, &e, (void **)&packed, &len, &got, &e, err))) {
        stream_free(s);
        return rc;
    }
    rc = got;
    if (rc == 0) {
        unpack_head(packed, &hlen, &tlen);
        if (rank != 0)
            rc = cf_stream_join_head(&s->w, f, name, (const char *)packed + 16 + hlen, (const char *)packed + 16, hlen,
                                     &e);
    }
    free(packed);
    if ((rc = cf__mpi_agree(comm, rc, &e, err))) {
        stream_free(s);
        return rc;
    }
    if ((rc = resume_in_slices(s, hlen, tlen, &e, err))) {
        stream_free(s);
        return rc;
    }
    *out = s;
    return 0;
}

int64_t cf_mpi_stream_table_bytes(const cf_mpi_stream *s)
{
    return s ? cf_stream_writer_table_bytes(s->w) : -1;
}

cf_stream_task *cf_mpi_stream_task(cf_mpi_stream *s)
{
    return s ? s->task : NULL;
}

/* {bytes, CRC32C, first failed rank} of consecutive parts of the table,
 * joined in rank order: MPI calls it with the lower ranks' triple in `in`. */
static void join_parts(void *in, void *inout, int *n, MPI_Datatype *type)
{
    (void)type;
    const int64_t *a = in;
    int64_t *b = inout;
    for (int i = 0; i < *n; i++, a += 3, b += 3) {
        b[1] = cf_stream_crc32c_join((uint32_t)a[1], (uint32_t)b[1], b[0]);
        b[0] += a[0];
        b[2] = a[2] < b[2] ? a[2] : b[2];
    }
}

#define TAG_PART_LEN 0x5cf2
#define TAG_PART 0x5cf3

/* A member of a physical file's ranks hands its lines and where they go
 * (bytes before them in the table's body) to the file's last rank, in
 * pieces of at most CF_MPI_PIECE_BYTES. */
static void send_part(MPI_Comm comm, int leader, const char *text, int64_t len, int64_t before)
{
    int64_t head[2] = { len, before };
    MPI_Send(head, 2, MPI_INT64_T, leader, TAG_PART_LEN, comm);
    for (int64_t at = 0; at < len;) {
        int64_t n = len - at < CF_MPI_PIECE_BYTES ? len - at : CF_MPI_PIECE_BYTES;
        MPI_Send(text + at, (int)n, MPI_BYTE, leader, TAG_PART, comm);
        at += n;
    }
}

/* The last rank of a physical file's ranks [first, me] writes their lines,
 * in rank order, to the temporary table after its `hlen` bytes of head,
 * through a buffer that grows to at most CF_MPI_PIECE_BYTES.  With rc != 0
 * (no table to write to, or a write failed) the members' pieces are still
 * received, and dropped.  Returns rc or the first failure. */
static int write_parts(cf_mpi_stream *s, const char *tmp, int64_t hlen, int first, const char *mine, int64_t mylen,
                       int64_t mybefore, int rc, cf_error *e)
{
    MPI_Comm comm = s->comm;
    int me = rank_of(comm);
    char *buf = NULL;
    int64_t cap = 0, used = 0, at = -1;
    for (int from = first; from <= me; from++) {
        int64_t head[2] = { mylen, mybefore };
        if (from < me) MPI_Recv(head, 2, MPI_INT64_T, from, TAG_PART_LEN, comm, MPI_STATUS_IGNORE);
        if (at < 0) at = hlen + head[1];
        for (int64_t done = 0; done < head[0];) {
            int64_t n = head[0] - done < CF_MPI_PIECE_BYTES ? head[0] - done : CF_MPI_PIECE_BYTES;
            if (rc == 0 && used + n > CF_MPI_PIECE_BYTES) {
                rc = cf_stream_part_write(s->w, tmp, at, buf, used, 0, e);
                at += used;
                used = 0;
            }
            if (used + n > cap) {
                int64_t want = cap ? cap : 4096;
                while (want < used + n) want *= 2;
                if (want > CF_MPI_PIECE_BYTES) want = CF_MPI_PIECE_BYTES;
                char *p = realloc(buf, (size_t)want);
                if (p) buf = p, cap = want;
                else if (rc == 0) rc = FAIL(e, CF_ENOMEM, "rank %d: out of memory for %lld bytes of the table", me,
                                            (long long)want);
            }
            if (from == me) {
                if (rc == 0) memcpy(buf + used, mine + done, (size_t)n);
            } else if (used + n <= cap) {
                MPI_Recv(buf + used, (int)n, MPI_BYTE, from, TAG_PART, comm, MPI_STATUS_IGNORE);
            } else { /* no room even to drop it, and the member waits to send: a hang is worse */
                MPI_Abort(comm, CF_ENOMEM);
            }
            if (rc == 0) used += n;
            done += n;
        }
    }
    if (rc == 0) rc = cf_stream_part_write(s->w, tmp, at, buf, used, 1, e);
    free(buf);
    return rc;
}

int cf_mpi_stream_flush(cf_mpi_stream *s, cf_error *err)
{
    cf_error e;
    error_init(&e);
    MPI_Comm comm = s->comm;
    int rank = rank_of(comm), size = size_of(comm), rc;
    /* each rank: its file made durable and its task's lines of the table;
     * a rank that failed goes on with no lines, and the agreement after
     * the writes reports it (before anything is renamed) */
    char *text = NULL, *tmp = NULL;
    int64_t len = 0, before = 0;
    uint32_t crc = 0;
    int mine = cf_stream_task_part(s->task, &text, &len, &crc, &e);
    if (mine) len = 0;
    /* where each rank's lines go: after the head and the lower ranks' lines */
    MPI_Exscan(&len, &before, 1, MPI_INT64_T, MPI_SUM, comm);
    if (rank == 0) before = 0; /* Exscan leaves rank 0's undefined */
    /* rank 0 starts the temporary table with the head; every rank learns
     * its path and the head's length */
    int64_t hlen = 0, shared_len = 0;
    uint32_t hcrc = 0;
    unsigned char *packed = NULL;
    if (rank == 0) {
        rc = mine;
        if (rc == 0) rc = cf_stream_part_begin(s->w, &tmp, &hlen, &hcrc, &e);
        if (rc == 0) {
            shared_len = 8 + (int64_t)strlen(tmp) + 1;
            if (!(packed = malloc((size_t)shared_len))) rc = FAIL(&e, CF_ENOMEM, "out of memory");
            else {
                memcpy(packed, &hlen, 8);
                memcpy(packed + 8, tmp, (size_t)shared_len - 8);
            }
            if (rc) cf_stream_part_end(s->w, tmp, 0, 0, 0, NULL);
        }
    }
    int got = 0;
    if ((rc = cf__mpi_root_share(comm, rank == 0 ? rc : 0, &e, (void **)&packed, &shared_len, &got, &e, err))) {
        cf_free(text);
        cf_free(tmp);
        return rc;
    }
    rc = mine ? mine : got;
    const char *path = NULL;
    if (got == 0) {
        memcpy(&hlen, packed, 8);
        path = (const char *)packed + 8;
    }
    /* the ranks of one physical file are neighbours: its last rank writes
     * their lines, so the temporary table is opened once per file */
    int64_t first = 0, count = 0;
    cf_stream_layout l;
    cf_stream_writer_info(s->w, &l, NULL, NULL);
    cf_stream_file_of(l.tasks, l.files, rank, &first, &count);
    int leader = (int)(first + count - 1);
    if (rank != leader) send_part(comm, leader, text, len, before);
    else rc = write_parts(s, path, hlen, (int)first, text, len, before, rc, &e);
    cf_free(text);
    /* one reduction: whether every rank succeeded and, in rank order, the
     * length and CRC32C of all the lines (rank 0 needs them to seal) */
    MPI_Datatype triple;
    MPI_Op op;
    MPI_Type_contiguous(3, MPI_INT64_T, &triple);
    MPI_Type_commit(&triple);
    MPI_Op_create(join_parts, 0, &op);
    int64_t part[3] = { len, (int64_t)crc, rc ? rank : size }, body[3] = { 0, 0, size };
    MPI_Allreduce(part, body, 1, triple, op, comm);
    MPI_Op_free(&op);
    MPI_Type_free(&triple);
    /* rank 0 seals and renames, or removes the temporary table */
    int64_t unused = 0;
    int failed = (int)body[2] < size, end = 0;
    if (rank == 0) {
        uint32_t all = cf_stream_crc32c_join(hcrc, (uint32_t)body[1], body[0]);
        end = cf_stream_part_end(s->w, tmp, hlen + body[0], all, !failed, failed ? NULL : &e);
    }
    free(packed);
    cf_free(tmp);
    if (failed) return cf__mpi_spread_error(comm, (int)body[2], rc, &e, err);
    return cf__mpi_root_result(comm, end, &e, &unused, err);
}

int cf_mpi_stream_close(cf_mpi_stream *s, cf_error *err)
{
    int rc = cf_mpi_stream_flush(s, err);
    stream_free(s);
    return rc;
}

void cf_mpi_stream_discard(cf_mpi_stream *s)
{
    stream_free(s);
}

/* Global view, read: readers' slices give every task's bytes and where its
 * lines are; rank 0 checks the slices make the sealed table, and every rank
 * gets the bytes and offsets of all tasks (16 bytes a task, no lines). */
static int index_in_slices(MPI_Comm comm, cf_stream_reader *r, int64_t hlen, int64_t tlen, cf_error *e,
                           cf_error *err)
{
    int me = rank_of(comm), size = size_of(comm), rc = 0;
    cf_stream_layout l;
    cf_stream_info(r, &l, NULL, NULL, NULL);
    int64_t end = tlen - 17, body = end - hlen;
    int64_t nr = slice_readers(size, l.files, body), j = reader_index(me, size, nr);
    int64_t first = 0, n = 0, *lines = NULL, *bytes = NULL, *all_bytes = NULL, *all_at = NULL;
    int *counts = NULL, *displs = NULL;
    uint32_t crc = 0;
    if (j >= 0)
        rc = cf_stream_reader_slice(r, slice_at(hlen, body, j, nr), slice_at(hlen, body, j + 1, nr), &first, &n,
                                    &lines, &bytes, &crc, e);
    if ((rc = cf__mpi_agree(comm, rc, e, err))) goto out;
    int64_t total, next;
    uint32_t all;
    join_slices(comm, me, size, hlen, body, nr, j, crc, first, n, &total, &all, &next);
    if (me == 0) rc = cf_stream_reader_slices_check(r, total, all, next, e);
    if ((rc = cf__mpi_agree(comm, rc, e, err))) goto out;
    /* the slices hold every task once, in rank order: gathered in that order */
    counts = malloc((size_t)size * sizeof *counts);
    displs = malloc((size_t)size * sizeof *displs);
    all_bytes = malloc(((size_t)l.tasks + 1) * sizeof *all_bytes);
    all_at = malloc(((size_t)l.tasks + 1) * sizeof *all_at);
    if (!counts || !displs || !all_bytes || !all_at) rc = FAIL(e, CF_ENOMEM, "rank %d: out of memory", me);
    if ((rc = cf__mpi_agree(comm, rc, e, err))) goto out;
    int cnt = (int)n;
    MPI_Allgather(&cnt, 1, MPI_INT, counts, 1, MPI_INT, comm);
    for (int k = 0, at = 0; k < size; at += counts[k], k++) displs[k] = at;
    MPI_Allgatherv(bytes, cnt, MPI_INT64_T, all_bytes, counts, displs, MPI_INT64_T, comm);
    MPI_Allgatherv(lines, cnt, MPI_INT64_T, all_at, counts, displs, MPI_INT64_T, comm);
    all_at[l.tasks] = end;
    rc = cf_stream_reader_index(r, all_bytes, all_at, e);
    rc = cf__mpi_agree(comm, rc, e, err);
out:
    cf_free(lines);
    cf_free(bytes);
    free(counts);
    free(displs);
    free(all_bytes);
    free(all_at);
    return rc;
}

int cf_mpi_stream_open(cf_stream_reader **out, cf_file *f, MPI_Comm comm, const char *name, cf_error *err)
{
    cf_error e;
    error_init(&e);
    int rc, rank = rank_of(comm);
    if ((rc = check_name(comm, "cf_mpi_stream_open", out && f && name, name, &e, err))) return rc;
    MPI_Comm own; /* its own tags' space */
    MPI_Comm_dup(comm, &own);
    cf_stream_reader *r = NULL;
    const char *head = NULL;
    int64_t hlen = 0, tlen = 0, len = 0;
    unsigned char *packed = NULL;
    if (rank == 0) {
        rc = cf_stream_open_head(&r, f, name, &head, &hlen, &tlen, &e);
        if (rc == 0) rc = pack_head(&packed, &len, head, hlen, tlen, NULL, name, &e);
    }
    int got = 0;
    if ((rc = cf__mpi_root_share(own, rc, &e, (void **)&packed, &len, &got, &e, err)) == 0) {
        rc = got;
        if (rc == 0) {
            unpack_head(packed, &hlen, &tlen);
            if (rank != 0) rc = cf_stream_join_reader(&r, f, name, (const char *)packed + 16, hlen, tlen, &e);
        }
        free(packed);
        if ((rc = cf__mpi_agree(own, rc, &e, err)) == 0) rc = index_in_slices(own, r, hlen, tlen, &e, err);
    }
    MPI_Comm_free(&own);
    if (rc) {
        cf_stream_reader_close(r);
        return rc;
    }
    *out = r;
    return 0;
}
