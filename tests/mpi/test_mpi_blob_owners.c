/* test_mpi_blob_owners.c - blob-owner writes (CF_IO_BLOB_OWNERS, run with
 * 1, 2 and 4 ranks): the bytes of a serial write whatever the layout
 * (uneven rows, ranks with none, blobs over several ranks, ranks over
 * several blobs, ranges out of rank order, converted rows, pieces), and
 * exactly one process with each blob file open. */
#include "mpi_harness.h"

#include <dirent.h>
#include <unistd.h>

static double pos_value(int64_t row, int j) { return (double)row * 10 + j + 0.5; }

static double *make_pos(int64_t first, int64_t n)
{
    double *p = malloc((size_t)(n > 0 ? n : 1) * 3 * sizeof *p);
    for (int64_t i = 0; i < n; i++)
        for (int j = 0; j < 3; j++) p[i * 3 + j] = pos_value(first + i, j);
    return p;
}

/* i8 values in a strided record, written to an i4 column (converted). */
typedef struct {
    double pad;
    int64_t id;
} id_record;

static id_record *make_ids(int64_t first, int64_t n)
{
    id_record *p = calloc((size_t)(n > 0 ? n : 1), sizeof *p);
    for (int64_t i = 0; i < n; i++) p[i].id = (first + i) * 7 - 3;
    return p;
}

enum { EVEN, UNEVEN, ZEROS, NLAYOUTS };
static const char *layout_names[] = { "even", "uneven", "zeros" };

/* Rows of `rank`: an even split of 1000; very uneven shares; or every
 * other rank (and the last) holding none. */
static int64_t layout_rows(int layout, int rank, int size)
{
    switch (layout) {
    case EVEN: return cf_plan_share(1000, size, rank, NULL);
    case UNEVEN: return (int64_t)(rank + 1) * (rank + 1) * 37 + (rank == 0 ? 5 : 0);
    default: return (rank % 2 == 1 || (rank == size - 1 && size > 1)) ? 0 : (int64_t)(rank + 1) * 53;
    }
}

static int64_t total_of(int layout)
{
    int64_t t = 0;
    for (int r = 0; r < cf_test_size(); r++) t += layout_rows(layout, r, cf_test_size());
    return t;
}

/* Rank 0 writes columns x (f8 x3) and id (i4) of `total` rows in nfile
 * blobs with the serial core. */
static void serial_write(const char *dir, int64_t total, int64_t nfile)
{
    if (cf_test_rank() != 0) return;
    cf_error err;
    cf_file *f = NULL;
    cf_column *c = NULL;
    CHECK_OK(cf_file_open(&f, dir, CF_OPEN_WRITE | CF_OPEN_CREATE, &err), &err);
    CHECK_OK(cf_column_create(&c, f, "x", "f8", 3, total, nfile, &err), &err);
    double *pos = make_pos(0, total);
    CHECK_OK(cf_column_write(c, 0, total, pos, NULL, 24, 8, &err), &err);
    CHECK_OK(cf_column_close(c, &err), &err);
    CHECK_OK(cf_column_create(&c, f, "id", "i4", 1, total, nfile, &err), &err);
    id_record *ids = make_ids(0, total);
    CHECK_OK(cf_column_write(c, 0, total, &ids[0].id, "<i8", sizeof *ids, 8, &err), &err);
    CHECK_OK(cf_column_close(c, &err), &err);
    free(pos);
    free(ids);
    cf_file_close(f);
}

/* How many descriptors of each blob file of the File under `dir` this
 * process has open: a writer keeps the descriptor it wrote a blob with
 * (up to 8 blobs) until the close fsyncs through it. */
static int open_blobs(const char *dir, int64_t nfile, int *open)
{
    for (int64_t b = 0; b < nfile; b++) open[b] = 0;
    DIR *d = opendir("/proc/self/fd");
    if (!d) return -1;
    struct dirent *ent;
    while ((ent = readdir(d))) {
        char link[300], target[4300];
        snprintf(link, sizeof link, "/proc/self/fd/%s", ent->d_name);
        ssize_t n = readlink(link, target, sizeof target - 1);
        if (n <= 0) continue;
        target[n] = '\0';
        const char *base = strrchr(target, '/');
        if (strncmp(target, dir, strlen(dir)) != 0 || !base || strlen(base + 1) != 6) continue;
        char *end;
        long b = strtol(base + 1, &end, 16);
        if (*end == '\0' && b >= 0 && b < nfile) open[b]++;
    }
    closedir(d);
    return 0;
}

/* Write both columns collectively (rank r holds `local` rows at `first`),
 * nfile blobs, with `wopt`; the largest number of ranks holding one blob
 * of x open after the write goes to *writers (0 if no blob was written),
 * and the blobs with rows that nobody holds open to *unwritten. */
static void mpi_write(const char *dir, int64_t total, int64_t first, int64_t local, int64_t nfile,
                      const cf_mpi_options *wopt, int *writers, int *unwritten)
{
    MPI_Comm comm = cf_test_comm();
    int rank = cf_test_rank(), size = cf_test_size();
    cf_error err;
    cf_file *f = NULL;
    cf_column *c = NULL;
    cf_mpi_options copt;
    cf_mpi_options_init(&copt);
    copt.nfile = nfile;
    /* the create's shares need not be the write's: every rank creates an
     * even share, then writes its own */
    int64_t cfirst, cn = cf_plan_share(total, size, rank, &cfirst);
    (void)cfirst;
    CHECK_OK(cf_mpi_file_open(&f, comm, dir, CF_OPEN_WRITE | CF_OPEN_CREATE, &err), &err);
    CHECK_OK(cf_mpi_column_create(&c, f, comm, "x", "f8", 3, cn, &copt, NULL, &err), &err);
    double *pos = make_pos(first, local);
    CHECK_OK(cf_mpi_column_write(c, comm, first, local, pos, NULL, 24, 8, wopt, &err), &err);
    if (wopt && wopt->mode == CF_IO_BLOB_OWNERS) {
        /* What this rank hands over at the close starts at a blob's first
         * row, or there is nothing (it owns no blob): chunks restart at
         * each blob, so no chunk is written in pieces by two ranks and the
         * close merges no partial chunk. */
        int64_t fr = cf_column_pending_first_row(c), at = 0;
        int starts_blob = fr == -1;
        for (int64_t b = 0; b < nfile && !starts_blob; b++) {
            if (fr == at && cf_column_blob_rows(c, b) > 0) starts_blob = 1;
            at += cf_column_blob_rows(c, b);
        }
        if (!starts_blob) fprintf(stderr, "rank %d: pending state starts at row %lld\n", rank, (long long)fr);
        CHECK(starts_blob);
    }
    int *open = calloc((size_t)nfile, sizeof *open), *all = calloc((size_t)nfile, sizeof *all);
    CHECK(open_blobs(dir, nfile, open) == 0);
    /* the creating rank makes blob 0, empty, and keeps it open for the
     * first write (column_create.c): not a write when row 0 is not its own */
    if (rank == 0 && (local == 0 || first > 0) && open[0] > 0) open[0]--;
    MPI_Allreduce(open, all, (int)nfile, MPI_INT, MPI_SUM, comm);
    *writers = 0;
    *unwritten = 0;
    for (int64_t b = 0; b < nfile; b++) {
        if (all[b] > *writers) *writers = all[b];
        if (all[b] == 0 && cf_column_blob_rows(c, b) > 0) (*unwritten)++;
    }
    free(open);
    free(all);
    CHECK_OK(cf_mpi_column_close(c, comm, &err), &err);
    c = NULL;
    CHECK_OK(cf_mpi_column_create(&c, f, comm, "id", "i4", 1, cn, &copt, NULL, &err), &err);
    id_record *ids = make_ids(first, local);
    CHECK_OK(cf_mpi_column_write(c, comm, first, local, &ids[0].id, "<i8", sizeof *ids, 8, wopt, &err), &err);
    CHECK_OK(cf_mpi_column_close(c, comm, &err), &err);
    free(pos);
    free(ids);
    cf_file_close(f);
}

/* Every layout, blob count (blobs over several ranks, ranks over several
 * blobs), concurrency and piece size stores the serial bytes, with one
 * writer per blob; throttled writes of the same layouts share blobs (so
 * the count of writers can see a second one). */
static void test_blob_owners_match_serial(void)
{
    int rank = cf_test_rank(), size = cf_test_size();
    const int64_t nfiles[] = { 1, 3, 7, 20 };
    struct {
        int64_t concurrency, group_bytes;
    } cases[] = { { 0, 0 }, { 1, 0 }, { -1, 48 }, { 2, 1000 } };
    int shared_throttled = 0;
    for (int layout = 0; layout < NLAYOUTS; layout++) {
        int64_t total = total_of(layout), first = 0, local = layout_rows(layout, rank, size);
        for (int r = 0; r < rank; r++) first += layout_rows(layout, r, size);
        for (size_t k = 0; k < sizeof nfiles / sizeof nfiles[0]; k++) {
            char serial[4200];
            snprintf(serial, sizeof serial, "%s/serial-%s-%lld", cf_test_dir(), layout_names[layout],
                     (long long)nfiles[k]);
            serial_write(serial, total, nfiles[k]);
            for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
                char dir[4200];
                snprintf(dir, sizeof dir, "%s/%s-%lld-%zu", cf_test_dir(), layout_names[layout],
                         (long long)nfiles[k], i);
                cf_mpi_options o;
                cf_mpi_options_init(&o);
                o.mode = CF_IO_BLOB_OWNERS;
                o.concurrency = cases[i].concurrency;
                o.group_bytes = cases[i].group_bytes;
                int writers, unwritten;
                mpi_write(dir, total, first, local, nfiles[k], &o, &writers, &unwritten);
                CHECK_EQ_INT(writers, 1);
                if (nfiles[k] <= 8) CHECK_EQ_INT(unwritten, 0); /* a writer keeps 8 blobs open at most */
                int same = cf_test_same_tree(serial, dir);
                if (!same)
                    fprintf(stderr, "layout %s, nfile %lld, case %zu differs from the serial write\n",
                            layout_names[layout], (long long)nfiles[k], i);
                CHECK(same);
            }
            char dir[4200];
            snprintf(dir, sizeof dir, "%s/%s-%lld-throttled", cf_test_dir(), layout_names[layout],
                     (long long)nfiles[k]);
            cf_mpi_options o;
            cf_mpi_options_init(&o);
            o.mode = CF_IO_THROTTLED;
            int writers, unwritten;
            mpi_write(dir, total, first, local, nfiles[k], &o, &writers, &unwritten);
            if (writers > 1) shared_throttled = 1;
            CHECK(cf_test_same_tree(serial, dir));
        }
    }
    CHECK_EQ_INT(shared_throttled, size > 1);
}

/* Ranges out of rank order (rank r writes share size-1-r) and with a gap
 * need no fallback: the owner of a blob is the holder of its first
 * written row, whoever that is.  Unwritten rows stay unwritten. */
static void test_unordered_ranges(void)
{
    int rank = cf_test_rank(), size = cf_test_size();
    const int64_t total = 999, nfile = 3;
    char serial[4200], dir[4200];
    snprintf(serial, sizeof serial, "%s/serial", cf_test_dir());
    snprintf(dir, sizeof dir, "%s/reversed", cf_test_dir());
    serial_write(serial, total, nfile);
    int64_t first, n = cf_plan_share(total, size, size - 1 - rank, &first);
    cf_mpi_options o;
    cf_mpi_options_init(&o);
    o.mode = CF_IO_BLOB_OWNERS;
    o.group_bytes = 100;
    int writers, unwritten;
    mpi_write(dir, total, first, n, nfile, &o, &writers, &unwritten);
    CHECK_EQ_INT(writers, 1);
    CHECK_EQ_INT(unwritten, 0);
    CHECK(cf_test_same_tree(serial, dir));
}

/* Pieces of megabytes (sent by MPI's rendezvous protocol, where a send
 * waits for its receive) with owners taking turns one at a time, and
 * with every owner at once. */
static void test_large_pieces(void)
{
    int rank = cf_test_rank(), size = cf_test_size();
    const int64_t per_rank = 100003, nfile = 3;
    int64_t total = per_rank * size, first = per_rank * rank;
    char serial[4200];
    snprintf(serial, sizeof serial, "%s/serial", cf_test_dir());
    serial_write(serial, total, nfile);
    const int64_t conc[] = { 1, -1 };
    for (int k = 0; k < 2; k++) {
        char dir[4200];
        snprintf(dir, sizeof dir, "%s/large-%d", cf_test_dir(), k);
        cf_mpi_options o;
        cf_mpi_options_init(&o);
        o.mode = CF_IO_BLOB_OWNERS;
        o.concurrency = conc[k];
        int writers, unwritten;
        mpi_write(dir, total, first, per_rank, nfile, &o, &writers, &unwritten);
        CHECK_EQ_INT(writers, 1);
        CHECK_EQ_INT(unwritten, 0);
        CHECK(cf_test_same_tree(serial, dir));
    }
}

/* A mode the layer does not know is refused on every rank, naming the
 * modes it knows. */
static void test_unknown_mode_refused(void)
{
    MPI_Comm comm = cf_test_comm();
    cf_error err;
    cf_file *f = NULL;
    cf_column *c = NULL;
    char dir[4200];
    snprintf(dir, sizeof dir, "%s/bad", cf_test_dir());
    CHECK_OK(cf_mpi_file_open(&f, comm, dir, CF_OPEN_WRITE | CF_OPEN_CREATE, &err), &err);
    CHECK_OK(cf_mpi_column_create(&c, f, comm, "x", "f8", 3, 2, NULL, NULL, &err), &err);
    double *pos = make_pos(2 * cf_test_rank(), 2);
    cf_mpi_options o;
    cf_mpi_options_init(&o);
    o.mode = CF_IO_BLOB_OWNERS + 1;
    int rc = cf_mpi_column_write(c, comm, 2 * cf_test_rank(), 2, pos, NULL, 24, 8, &o, &err);
    CHECK_EQ_INT(rc, CF_EARG);
    CHECK_AGREED(rc, &err);
    CHECK(strstr(err.message, "CF_IO_BLOB_OWNERS") != NULL);
    o.mode = CF_IO_BLOB_OWNERS;
    CHECK_OK(cf_mpi_column_write(c, comm, 2 * cf_test_rank(), 2, pos, NULL, 24, 8, &o, &err), &err);
    CHECK_OK(cf_mpi_column_close(c, comm, &err), &err);
    free(pos);
    cf_file_close(f);
}

CF_MPI_TESTS(CF_TEST(test_blob_owners_match_serial), CF_TEST(test_unordered_ranges),
             CF_TEST(test_large_pieces), CF_TEST(test_unknown_mode_refused))
