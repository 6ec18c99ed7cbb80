/* test_mpi_io.c - collective create, write, read and close (run with 1, 2
 * and 4 ranks): round trips, every mode against a serial write byte for
 * byte, blob planning, readers with other rank counts, attributes. */
#include "mpi_harness.h"
#include "row_layouts.h"

#include <sys/stat.h>

/* The values of the two test columns: "g/pos" f8 x3 and "id" i4 (written
 * from a strided i8 field of a struct, so it is converted). */
static double pos_value(int64_t row, int j) { return (double)row * 10 + j + 0.5; }
static int64_t id_value(int64_t row) { return row * 7 - 3; }

typedef struct {
    double pad;
    int64_t id;
} id_record;

static double *make_pos(int64_t first, int64_t n)
{
    double *p = malloc((size_t)(n > 0 ? n : 1) * 3 * sizeof *p);
    for (int64_t i = 0; i < n; i++)
        for (int j = 0; j < 3; j++) p[i * 3 + j] = pos_value(first + i, j);
    return p;
}

static id_record *make_ids(int64_t first, int64_t n)
{
    id_record *p = calloc((size_t)(n > 0 ? n : 1), sizeof *p);
    for (int64_t i = 0; i < n; i++) p[i].id = id_value(first + i);
    return p;
}

static void path_in(char *out, size_t n, const char *name)
{
    snprintf(out, n, "%s/%s", cf_test_dir(), name);
}

/* Create options used for the File of the comparisons: pos gets 3 blobs,
 * id an automatic count from small blobs. */
static void create_options(cf_mpi_options *pos, cf_mpi_options *id)
{
    cf_mpi_options_init(pos);
    pos->nfile = 3;
    cf_mpi_options_init(id);
    id->blob_bytes = 1000;
}

/* Write the test File collectively: this rank's `local` rows of each
 * column, and attributes on a column and on the File. */
static void mpi_write(const char *dir, MPI_Comm comm, int64_t local, const cf_mpi_options *wopt)
{
    cf_error err;
    cf_file *f = NULL;
    cf_column *c = NULL;
    int64_t first = -1;
    cf_mpi_options popt, iopt;
    create_options(&popt, &iopt);
    CHECK_OK(cf_mpi_file_open(&f, comm, dir, CF_OPEN_WRITE | CF_OPEN_CREATE, &err), &err);
    CHECK_OK(cf_mpi_column_create(&c, f, comm, "g/pos", "f8", 3, local, &popt, &first, &err), &err);
    double *pos = make_pos(first, local);
    CHECK_OK(cf_mpi_column_write(c, comm, first, local, pos, NULL, 24, 8, wopt, &err), &err);
    double t = 0.5;
    CHECK_OK(cf_mpi_column_attr_set(c, comm, "Time", "f8", 1, &t, &err), &err);
    CHECK_OK(cf_mpi_column_close(c, comm, &err), &err);
    free(pos);

    c = NULL;
    CHECK_OK(cf_mpi_column_create(&c, f, comm, "id", "i4", 1, local, &iopt, &first, &err), &err);
    id_record *ids = make_ids(first, local);
    CHECK_OK(cf_mpi_column_write(c, comm, first, local, &ids[0].id, "<i8", sizeof *ids, 8, wopt, &err), &err);
    CHECK_OK(cf_mpi_column_close(c, comm, &err), &err);
    free(ids);

    c = NULL;
    CHECK_OK(cf_mpi_column_open(&c, f, comm, ".", &err), &err);
    double box = 1000.0;
    CHECK_OK(cf_mpi_column_attr_set(c, comm, "BoxSize", "f8", 1, &box, &err), &err);
    CHECK_OK(cf_mpi_column_close(c, comm, &err), &err);
    cf_file_close(f);
}

/* Blob rows of column `name` as stored (rank 0 reads, all get them). */
static int64_t stored_blobs(const char *dir, const char *name, int64_t *rows, int64_t max)
{
    int64_t n = 0;
    if (cf_test_rank() == 0) {
        cf_error err;
        cf_file *f;
        cf_column *c;
        CHECK_OK(cf_file_open(&f, dir, CF_OPEN_READ, &err), &err);
        CHECK_OK(cf_column_open(&c, f, name, &err), &err);
        n = cf_column_nfile(c);
        CHECK(n <= max);
        for (int64_t i = 0; i < n && i < max; i++) rows[i] = cf_column_blob_rows(c, i);
        cf_column_close(c, NULL);
        cf_file_close(f);
    }
    MPI_Bcast(&n, 1, MPI_INT64_T, 0, cf_test_comm());
    MPI_Bcast(rows, (int)max, MPI_INT64_T, 0, cf_test_comm());
    return n;
}

/* Rank 0 writes the same File with the serial core: one call per column,
 * the blobs laid out as in `like`. */
static void serial_write(const char *dir, const char *like, int64_t total)
{
    int64_t prows[64], irows[64];
    int64_t pn = stored_blobs(like, "g/pos", prows, 64), in = stored_blobs(like, "id", irows, 64);
    if (cf_test_rank() != 0) return;
    cf_error err;
    cf_file *f;
    cf_column *c;
    CHECK_OK(cf_file_open(&f, dir, CF_OPEN_WRITE | CF_OPEN_CREATE, &err), &err);
    CHECK_OK(cf_column_create_blobs(&c, f, "g/pos", "f8", 3, pn, prows, &err), &err);
    double *pos = make_pos(0, total);
    CHECK_OK(cf_column_write(c, 0, total, pos, NULL, 24, 8, &err), &err);
    double t = 0.5;
    CHECK_OK(cf_column_attr_set(c, "Time", "f8", 1, &t, &err), &err);
    CHECK_OK(cf_column_close(c, &err), &err);
    free(pos);
    CHECK_OK(cf_column_create_blobs(&c, f, "id", "i4", 1, in, irows, &err), &err);
    id_record *ids = make_ids(0, total);
    CHECK_OK(cf_column_write(c, 0, total, &ids[0].id, "<i8", sizeof *ids, 8, &err), &err);
    CHECK_OK(cf_column_close(c, &err), &err);
    free(ids);
    CHECK_OK(cf_column_open(&c, f, ".", &err), &err);
    double box = 1000.0;
    CHECK_OK(cf_column_attr_set(c, "BoxSize", "f8", 1, &box, &err), &err);
    CHECK_OK(cf_column_close(c, &err), &err);
    cf_file_close(f);
}

/* Read rows [first, first+n) of both columns collectively and compare. */
static void check_read(const char *dir, MPI_Comm comm, int64_t first, int64_t n, const cf_mpi_options *opt)
{
    cf_error err;
    cf_file *f = NULL;
    cf_column *c = NULL;
    CHECK_OK(cf_mpi_file_open(&f, comm, dir, CF_OPEN_READ, &err), &err);
    CHECK_OK(cf_mpi_column_open(&c, f, comm, "g/pos", &err), &err);
    double *pos = malloc((size_t)(n > 0 ? n : 1) * 3 * sizeof *pos), *want = make_pos(first, n);
    CHECK_OK(cf_mpi_column_read(c, comm, first, n, pos, NULL, 24, 8, opt, &err), &err);
    CHECK_EQ_MEM(pos, want, (size_t)n * 3 * sizeof *pos);
    const char *dt;
    int64_t nm;
    const void *data;
    CHECK_OK(cf_column_attr_get(c, "Time", &dt, &nm, &data, &err), &err);
    CHECK_EQ_STR(dt, "<f8");
    CHECK_OK(cf_mpi_column_close(c, comm, &err), &err);
    free(pos);
    free(want);

    c = NULL;
    CHECK_OK(cf_mpi_column_open(&c, f, comm, "id", &err), &err);
    int64_t *ids = malloc((size_t)(n > 0 ? n : 1) * sizeof *ids);
    CHECK_OK(cf_mpi_column_read(c, comm, first, n, ids, "i8", 8, 8, opt, &err), &err);
    for (int64_t i = 0; i < n; i++) CHECK_EQ_INT(ids[i], id_value(first + i));
    CHECK_OK(cf_mpi_column_close(c, comm, &err), &err);
    free(ids);
    cf_file_close(f);
}

/* ---- tests ------------------------------------------------------------ */

static void test_round_trip_layouts(void)
{
    MPI_Comm comm = cf_test_comm();
    for (int layout = 0; layout < NLAYOUTS; layout++) {
        char dir[4200];
        path_in(dir, sizeof dir, layout_names[layout]);
        int64_t local = layout_rows(layout, cf_test_rank(), cf_test_size());
        mpi_write(dir, comm, local, NULL);
        check_read(dir, comm, first_row_of(layout, cf_test_rank()), local, NULL);
        /* every rank reads everything */
        check_read(dir, comm, 0, total_rows(layout), NULL);
    }
}

/* Throttled, aggregated and automatic writes store the bytes a serial
 * writer stores, whatever the layout, concurrency and group size. */
static void test_modes_match_serial(void)
{
    MPI_Comm comm = cf_test_comm();
    struct {
        int mode;
        int64_t concurrency, group_bytes;
    } cases[] = {
        { CF_IO_THROTTLED, 0, 0 },      { CF_IO_THROTTLED, 1, 0 },     { CF_IO_THROTTLED, 3, 0 },
        { CF_IO_AGGREGATED, 0, 0 },     { CF_IO_AGGREGATED, 1, 2000 }, { CF_IO_AGGREGATED, 0, 1 },
        { CF_IO_AUTO, 0, 0 },           { CF_IO_AUTO, -1, 0 },
    };
    for (int layout = 0; layout < NLAYOUTS; layout++) {
        char serial[4200];
        snprintf(serial, sizeof serial, "%s/serial-%s", cf_test_dir(), layout_names[layout]);
        int64_t local = layout_rows(layout, cf_test_rank(), cf_test_size());
        for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
            char dir[4200];
            snprintf(dir, sizeof dir, "%s/%s-%zu", cf_test_dir(), layout_names[layout], k);
            cf_mpi_options o;
            cf_mpi_options_init(&o);
            o.mode = cases[k].mode;
            o.concurrency = cases[k].concurrency;
            o.group_bytes = cases[k].group_bytes;
            mpi_write(dir, comm, local, &o);
            if (k == 0) serial_write(serial, dir, total_rows(layout));
            int same = cf_test_same_tree(serial, dir);
            if (!same) fprintf(stderr, "layout %s, case %zu differs from the serial write\n", layout_names[layout], k);
            CHECK(same);
        }
    }
}
/* Rank 0 writes rows [0, total) of column x (f8 x3, the pos values) of a
 * new File serial with the serial core, in nfile blobs (of blob_rows rows,
 * or cf_column_create's split where NULL); then serial must equal the
 * File dir byte for byte (collective). */
static void check_same_as_serial_x(const char *serial, const char *dir, int64_t total, int64_t nfile,
                                   const int64_t *blob_rows)
{
    if (cf_test_rank() == 0) {
        cf_error err;
        cf_file *f = NULL;
        cf_column *c = NULL;
        CHECK_OK(cf_file_open(&f, serial, CF_OPEN_WRITE | CF_OPEN_CREATE, &err), &err);
        if (blob_rows) CHECK_OK(cf_column_create_blobs(&c, f, "x", "f8", 3, nfile, blob_rows, &err), &err);
        else CHECK_OK(cf_column_create(&c, f, "x", "f8", 3, total, nfile, &err), &err);
        double *pos = make_pos(0, total);
        CHECK_OK(cf_column_write(c, 0, total, pos, NULL, 24, 8, &err), &err);
        CHECK_OK(cf_column_close(c, &err), &err);
        free(pos);
        cf_file_close(f);
    }
    CHECK(cf_test_same_tree(serial, dir));
}

/* Ranks whose rows are not in rank order cannot be aggregated: the write
 * falls back to taking turns, and stores the same bytes. */
static void test_unordered_ranges_fall_back(void)
{
    MPI_Comm comm = cf_test_comm();
    int rank = cf_test_rank(), size = cf_test_size();
    char dir[4200], serial[4200];
    path_in(dir, sizeof dir, "reversed");
    path_in(serial, sizeof serial, "serial");
    const int64_t total = 999;
    cf_error err;
    cf_file *f = NULL;
    cf_column *c = NULL;
    CHECK_OK(cf_mpi_file_open(&f, comm, dir, CF_OPEN_WRITE | CF_OPEN_CREATE, &err), &err);
    /* Rank r creates share r but writes share size-1-r. */
    cf_mpi_options o;
    cf_mpi_options_init(&o);
    o.nfile = 2;
    CHECK_OK(cf_mpi_column_create(&c, f, comm, "x", "f8", 3, cf_plan_share(total, size, rank, NULL), &o, NULL, &err), &err);
    int64_t first, n = cf_plan_share(total, size, size - 1 - rank, &first);
    double *pos = make_pos(first, n);
    o.mode = CF_IO_AGGREGATED;
    CHECK_OK(cf_mpi_column_write(c, comm, first, n, pos, NULL, 24, 8, &o, &err), &err);
    CHECK_OK(cf_mpi_column_close(c, comm, &err), &err);
    free(pos);
    cf_file_close(f);
    check_same_as_serial_x(serial, dir, total, 2, NULL);
}

/* nfile 0 is cf_plan_nfile's; an explicit nfile is kept; blobs split the
 * rows as bigfile does. */
static void test_nfile_automatic_and_explicit(void)
{
    MPI_Comm comm = cf_test_comm();
    int rank = cf_test_rank(), size = cf_test_size();
    cf_error err;
    cf_file *f = NULL;
    cf_column *c = NULL;
    int64_t local = layout_rows(UNEVEN, rank, size), total = total_rows(UNEVEN), first;
    CHECK_OK(cf_mpi_file_open(&f, comm, cf_test_dir(), CF_OPEN_WRITE, &err), &err);
    cf_mpi_options o;
    cf_mpi_options_init(&o);
    CHECK_OK(cf_mpi_column_create(&c, f, comm, "default", "f4", 2, local, &o, &first, &err), &err);
    CHECK_EQ_INT(first, first_row_of(UNEVEN, rank));
    CHECK_EQ_INT(cf_column_size(c), total);
    CHECK_EQ_INT(cf_column_nfile(c), cf_plan_nfile(total * 8, size, 0));
    CHECK_EQ_INT(cf_column_nfile(c), 1);
    CHECK_OK(cf_mpi_column_close(c, comm, &err), &err);

    o.blob_bytes = 100;
    c = NULL;
    CHECK_OK(cf_mpi_column_create(&c, f, comm, "small-blobs", "f4", 2, local, &o, NULL, &err), &err);
    CHECK_EQ_INT(cf_column_nfile(c), cf_plan_nfile(total * 8, size, 100));
    CHECK_EQ_INT(cf_column_nfile(c), size);
    CHECK_OK(cf_mpi_column_close(c, comm, &err), &err);

    o.nfile = 5;
    c = NULL;
    CHECK_OK(cf_mpi_column_create(&c, f, comm, "five", "f4", 2, local, &o, NULL, &err), &err);
    CHECK_EQ_INT(cf_column_nfile(c), 5);
    for (int64_t i = 0; i < 5; i++) CHECK_EQ_INT(cf_column_blob_rows(c, i), cf_plan_share(total, 5, i, NULL));
    CHECK_OK(cf_mpi_column_close(c, comm, &err), &err);

    /* Zero rows everywhere: one empty blob (automatic), or as many as asked. */
    o.nfile = 0;
    c = NULL;
    CHECK_OK(cf_mpi_column_create(&c, f, comm, "empty", "i8", 1, 0, &o, &first, &err), &err);
    CHECK_EQ_INT(first, 0);
    CHECK_EQ_INT(cf_column_size(c), 0);
    CHECK_EQ_INT(cf_column_nfile(c), 1);
    CHECK_OK(cf_mpi_column_write(c, comm, 0, 0, NULL, NULL, 8, 8, NULL, &err), &err);
    CHECK_OK(cf_mpi_column_close(c, comm, &err), &err);
    cf_file_close(f);
}

/* align_blobs_to_ranks: every blob boundary is a rank boundary. */
static void test_align_blobs_to_ranks(void)
{
    MPI_Comm comm = cf_test_comm();
    int rank = cf_test_rank(), size = cf_test_size();
    for (int layout = UNEVEN; layout <= ZEROS; layout++) {
        int64_t nfiles[2] = { size, (size + 1) / 2 };
        for (int k = 0; k < 2; k++) {
            char dir[4200], serial[4200];
            snprintf(dir, sizeof dir, "%s/aligned-%d-%d", cf_test_dir(), layout, k);
            snprintf(serial, sizeof serial, "%s/serial-%d-%d", cf_test_dir(), layout, k);
            cf_error err;
            cf_file *f = NULL;
            cf_column *c = NULL;
            cf_mpi_options o;
            cf_mpi_options_init(&o);
            o.nfile = nfiles[k];
            o.align_blobs_to_ranks = 1;
            int64_t local = layout_rows(layout, rank, size), first;
            CHECK_OK(cf_mpi_file_open(&f, comm, dir, CF_OPEN_WRITE | CF_OPEN_CREATE, &err), &err);
            CHECK_OK(cf_mpi_column_create(&c, f, comm, "x", "f8", 3, local, &o, &first, &err), &err);
            CHECK_EQ_INT(cf_column_nfile(c), nfiles[k]);
            /* Blob boundaries are among the ranks' first rows. */
            int64_t boundary = 0;
            for (int64_t b = 0; b < cf_column_nfile(c); b++) {
                int found = boundary == 0;
                for (int r = 0; r < size && !found; r++) found = first_row_of(layout, r) == boundary;
                CHECK(found);
                boundary += cf_column_blob_rows(c, b);
            }
            CHECK_EQ_INT(boundary, total_rows(layout));
            /* ... as cf_plan_blobs_by_rank cuts them. */
            int64_t rank_rows[64], want[64];
            for (int r = 0; r < size; r++) rank_rows[r] = layout_rows(layout, r, size);
            CHECK_OK(cf_plan_blobs_by_rank(rank_rows, size, nfiles[k], want, &err), &err);
            for (int64_t b = 0; b < nfiles[k]; b++) CHECK_EQ_INT(cf_column_blob_rows(c, b), want[b]);
            double *pos = make_pos(first, local);
            CHECK_OK(cf_mpi_column_write(c, comm, first, local, pos, NULL, 24, 8, NULL, &err), &err);
            CHECK_OK(cf_mpi_column_close(c, comm, &err), &err);
            free(pos);
            cf_file_close(f);
            check_same_as_serial_x(serial, dir, total_rows(layout), nfiles[k], want);
        }
    }
}

/* Written by all ranks, read by one; written by half, read by all. */
static void test_readers_other_than_writers(void)
{
    MPI_Comm world = cf_test_comm();
    int rank = cf_test_rank(), size = cf_test_size();
    char dir[4200];
    path_in(dir, sizeof dir, "all");
    int64_t local = layout_rows(UNEVEN, rank, size), total = total_rows(UNEVEN);
    mpi_write(dir, world, local, NULL);

    MPI_Comm one;
    MPI_Comm_split(world, rank == 0 ? 0 : MPI_UNDEFINED, rank, &one);
    if (one != MPI_COMM_NULL) {
        check_read(dir, one, 0, total, NULL);
        MPI_Comm_free(&one);
    }
    /* All ranks, other shares than the writers'. */
    int64_t first, n = cf_plan_share(total, size, size - 1 - rank, &first);
    check_read(dir, world, first, n, NULL);

    int writers = (size + 1) / 2;
    MPI_Comm half;
    MPI_Comm_split(world, rank < writers ? 0 : MPI_UNDEFINED, rank, &half);
    path_in(dir, sizeof dir, "half");
    if (half != MPI_COMM_NULL) {
        mpi_write(dir, half, cf_plan_share(777, writers, rank, NULL), NULL);
        MPI_Comm_free(&half);
    }
    MPI_Barrier(world);
    n = cf_plan_share(777, size, rank, &first);
    cf_mpi_options o;
    cf_mpi_options_init(&o);
    o.concurrency = 1;
    check_read(dir, world, first, n, &o);
}

static void test_attributes(void)
{
    MPI_Comm comm = cf_test_comm();
    cf_error err;
    cf_file *f = NULL;
    cf_column *c = NULL;
    CHECK_OK(cf_mpi_file_open(&f, comm, cf_test_dir(), CF_OPEN_WRITE, &err), &err);
    CHECK_OK(cf_mpi_column_create(&c, f, comm, "x", "i8", 1, 2, NULL, NULL, &err), &err);
    int32_t v[3] = { 1, -2, 3 };
    CHECK_OK(cf_mpi_column_attr_set(c, comm, "ints", "i4", 3, v, &err), &err);
    CHECK_OK(cf_mpi_column_attr_set(c, comm, "name", "a1", 5, "hello", &err), &err);
    CHECK_OK(cf_mpi_column_attr_set(c, comm, "none", "f8", 0, NULL, &err), &err);
    /* Every rank's handle has them. */
    const char *dt;
    int64_t n;
    const void *data;
    CHECK_OK(cf_column_attr_get(c, "ints", &dt, &n, &data, &err), &err);
    CHECK_EQ_STR(dt, "<i4");
    CHECK_EQ_INT(n, 3);
    CHECK_EQ_MEM(data, v, sizeof v);
    CHECK_OK(cf_column_attr_get(c, "name", &dt, &n, &data, &err), &err);
    CHECK_EQ_INT(n, 5);
    CHECK_EQ_MEM(data, "hello", 5);
    CHECK_OK(cf_column_attr_get(c, "none", &dt, &n, &data, &err), &err);
    CHECK_EQ_INT(n, 0);
    CHECK_OK(cf_mpi_column_close(c, comm, &err), &err);
    /* The files hold them: a collective open reads them back (rank 0 from
     * disk, the others from its snapshot). */
    c = NULL;
    CHECK_OK(cf_mpi_column_open(&c, f, comm, "x", &err), &err);
    CHECK_OK(cf_column_attr_get(c, "ints", &dt, &n, &data, &err), &err);
    CHECK_EQ_MEM(data, v, sizeof v);
    CHECK_OK(cf_column_attr_get(c, "none", &dt, &n, &data, &err), &err);
    CHECK_OK(cf_mpi_column_close(c, comm, &err), &err);
    /* Header-only and group attribute blocks. */
    c = NULL;
    CHECK_OK(cf_mpi_column_create(&c, f, comm, "meta", NULL, 0, 0, NULL, NULL, &err), &err);
    CHECK_EQ_INT(cf_column_kind(c), CF_KIND_HEADER_ONLY);
    double z = 2.5;
    CHECK_OK(cf_mpi_column_attr_set(c, comm, "Redshift", "f8", 1, &z, &err), &err);
    CHECK_OK(cf_mpi_column_close(c, comm, &err), &err);
    c = NULL;
    CHECK_OK(cf_mpi_column_create(&c, f, comm, "grp/.", NULL, 0, 0, NULL, NULL, &err), &err);
    CHECK_EQ_INT(cf_column_kind(c), CF_KIND_ATTRS_ONLY);
    CHECK_OK(cf_mpi_column_attr_set(c, comm, "Redshift", "f8", 1, &z, &err), &err);
    CHECK_OK(cf_mpi_column_close(c, comm, &err), &err);
    if (cf_test_rank() == 0) {
        cf_file *g;
        CHECK_OK(cf_file_open(&g, cf_test_dir(), CF_OPEN_READ, &err), &err);
        const char *names[] = { "meta", "grp/." };
        for (int k = 0; k < 2; k++) {
            CHECK_OK(cf_column_open(&c, g, names[k], &err), &err);
            CHECK_OK(cf_column_attr_get(c, "Redshift", &dt, &n, &data, &err), &err);
            CHECK_EQ_MEM(data, &z, sizeof z);
            cf_column_close(c, NULL);
        }
        cf_file_close(g);
    }
    cf_file_close(f);
}

/* The test File written collectively as `name` (local rows a rank), then
 * opened on every rank with flags. */
static cf_file *open_written(const char *name, int64_t local, int flags)
{
    char dir[4200];
    cf_error err;
    cf_file *f = NULL;
    path_in(dir, sizeof dir, name);
    mpi_write(dir, cf_test_comm(), local, NULL);
    CHECK_OK(cf_mpi_file_open(&f, cf_test_comm(), dir, flags, &err), &err);
    return f;
}

/* What cf_mpi_file_list lists in f: *n names, for cf_names_free. */
static char **mpi_names(cf_file *f, int64_t *n)
{
    cf_error err;
    char **names = NULL;
    *n = -1;
    CHECK_OK(cf_mpi_file_list(f, cf_test_comm(), &names, n, &err), &err);
    return names;
}

static void test_file_list(void)
{
    MPI_Comm comm = cf_test_comm();
    char dir[4200];
    cf_error err;
    int64_t n;
    cf_file *f = open_written("f", 3, CF_OPEN_READ);
    char **names = mpi_names(f, &n);
    CHECK_EQ_INT(n, 2);
    if (n == 2) {
        CHECK_EQ_STR(names[0], "g/pos");
        CHECK_EQ_STR(names[1], "id");
    }
    cf_names_free(names, n);
    /* An empty File lists nothing. */
    cf_file *g = NULL;
    path_in(dir, sizeof dir, "empty");
    CHECK_OK(cf_mpi_file_open(&g, comm, dir, CF_OPEN_WRITE | CF_OPEN_CREATE | CF_OPEN_EXCL, &err), &err);
    names = mpi_names(g, &n);
    CHECK_EQ_INT(n, 0);
    cf_names_free(names, n);
    cf_file_close(g);
    cf_file_close(f);
}

/* A File opened with TRUNCATE on rank 0 is emptied once, before the
 * others use it. */
static void test_truncate_once(void)
{
    int64_t n;
    cf_file *f = open_written("t", 10, CF_OPEN_WRITE | CF_OPEN_TRUNCATE);
    char **names = mpi_names(f, &n);
    CHECK_EQ_INT(n, 0);
    cf_names_free(names, n);
    cf_file_close(f);
}

/* Every rank's handle keeps the flags that change its behaviour (an
 * iosim run without fsync must skip it on every rank, not only rank 0). */
static void test_open_keeps_behaviour_flags(void)
{
    MPI_Comm comm = cf_test_comm();
    char dir[4200];
    path_in(dir, sizeof dir, "flags");
    cf_error err;
    cf_file *f = NULL;
    int keep = CF_OPEN_NODURABLE | CF_OPEN_VERIFY | CF_OPEN_TORN_OK;
    CHECK_OK(cf_mpi_file_open(&f, comm, dir, CF_OPEN_WRITE | CF_OPEN_CREATE | keep, &err), &err);
    CHECK_EQ_INT(cf_file_flags(f) & keep, keep);
    CHECK_EQ_INT(cf_file_writable(f), 1);
    cf_file_close(f);
    CHECK_OK(cf_mpi_file_open(&f, comm, dir, CF_OPEN_READ, &err), &err);
    CHECK_EQ_INT(cf_file_flags(f) & keep, 0);
    cf_file_close(f);
}

CF_MPI_TESTS(CF_TEST(test_open_keeps_behaviour_flags), CF_TEST(test_round_trip_layouts), CF_TEST(test_modes_match_serial),
             CF_TEST(test_unordered_ranges_fall_back), CF_TEST(test_nfile_automatic_and_explicit),
             CF_TEST(test_align_blobs_to_ranks), CF_TEST(test_readers_other_than_writers),
             CF_TEST(test_attributes), CF_TEST(test_file_list), CF_TEST(test_truncate_once))
