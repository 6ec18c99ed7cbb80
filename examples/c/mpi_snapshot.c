/* mpi_snapshot.c - write a particle snapshot from many MPI ranks, read it
 * back on any number of ranks.
 *
 *   mpiexec -n 4 mpi_snapshot write DIR
 *   mpiexec -n 3 mpi_snapshot read DIR
 *
 * write: each rank holds its own number of particles (rank 1 none) and
 * states it; colfile gives each rank its first row.  Position is a vector
 * column (3 doubles per row), ID is written from int32 into an int64
 * column.  The File gets the attributes BoxSize, Time and a string.
 * read: the ranks split the rows evenly (cf_plan_share) and check them.
 *
 * Every cf_mpi_* call is collective and returns the same code on every
 * rank, so one `if (rc) goto done` keeps all ranks on the same path. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <colfile_mpi.h>

struct particle {
    double pos[3];
    int32_t id;
};

/* The particle in global row i: what writers store and readers expect. */
static void make_particle(int64_t i, struct particle *p)
{
    for (int k = 0; k < 3; k++) p->pos[k] = 0.5 * (double)i + k;
    p->id = (int32_t)(1000 + i);
}

/* Close the three columns (collective): a close commits; NULL handles (on
 * every rank alike) are no-ops.  Returns rc, or the first close's failure
 * when rc is 0; after a failure the closes keep its message. */
static int close_columns(cf_column *attrs, cf_column *id, cf_column *pos, int rc, cf_error *err)
{
    cf_column *cols[3] = { attrs, id, pos };
    for (int k = 0; k < 3; k++) {
        int rc2 = cf_mpi_column_close(cols[k], MPI_COMM_WORLD, rc ? NULL : err);
        if (!rc) rc = rc2;
    }
    return rc;
}

static int write_snapshot(const char *dir, int rank, cf_error *err)
{
    cf_file *f = NULL;
    cf_column *pos = NULL, *id = NULL, *attrs = NULL;
    int64_t n = rank == 1 ? 0 : 1000 + 250 * rank, first = 0, total = 0;
    struct particle *p = malloc((size_t)(n ? n : 1) * sizeof *p);
    const size_t row = sizeof *p;
    double box = 100.0, time = 0.25;
    const char *generator = "examples/c/mpi_snapshot.c";

    if (!p) MPI_Abort(MPI_COMM_WORLD, 1);
    int rc = cf_mpi_file_open(&f, MPI_COMM_WORLD, dir, CF_OPEN_WRITE | CF_OPEN_CREATE | CF_OPEN_TRUNCATE, err);
    if (rc) goto done;
    rc = cf_mpi_column_create(&pos, f, MPI_COMM_WORLD, "1/Position", "f8", 3, n, NULL, &first, err);
    if (rc) goto done;
    total = cf_column_size(pos); /* the sum of every rank's n */
    rc = cf_mpi_column_create(&id, f, MPI_COMM_WORLD, "1/ID", "i8", 1, n, NULL, NULL, err);
    if (rc) goto done;
    for (int64_t i = 0; i < n; i++) make_particle(first + i, &p[i]);
    /* Fields of an array of structs, written in place: row stride, element stride. */
    rc = cf_mpi_column_write(pos, MPI_COMM_WORLD, first, n, p[0].pos, NULL, row, sizeof(double), NULL, err);
    if (rc) goto done;
    rc = cf_mpi_column_write(id, MPI_COMM_WORLD, first, n, &p[0].id, "i4", row, 0, NULL, err);
    if (rc) goto done;
    /* The File's own attributes live in the block "." (a group's in "group/."). */
    rc = cf_mpi_column_open(&attrs, f, MPI_COMM_WORLD, ".", err);
    if (rc) goto done;
    if ((rc = cf_mpi_column_attr_set(attrs, MPI_COMM_WORLD, "BoxSize", "f8", 1, &box, err)) ||
        (rc = cf_mpi_column_attr_set(attrs, MPI_COMM_WORLD, "Time", "f8", 1, &time, err)) ||
        /* a string: kind a1, one byte per element, as Python stores a str */
        (rc = cf_mpi_column_attr_set(attrs, MPI_COMM_WORLD, "Generator", "a1", (int64_t)strlen(generator),
                                     generator, err)))
        goto done;
done:
    rc = close_columns(attrs, id, pos, rc, err);
    cf_file_close(f);
    free(p);
    if (rc == 0 && rank == 0) printf("wrote %lld particles to %s\n", (long long)total, dir);
    return rc;
}

static int read_snapshot(const char *dir, int rank, int nranks, cf_error *err)
{
    cf_file *f = NULL;
    cf_column *pos = NULL, *id = NULL, *attrs = NULL;
    struct particle *p = NULL;
    double box = 0;
    char *generator = NULL;
    long long bad = 0;

    int rc = cf_mpi_file_open(&f, MPI_COMM_WORLD, dir, CF_OPEN_READ, err);
    if (rc) goto done;
    if ((rc = cf_mpi_column_open(&attrs, f, MPI_COMM_WORLD, ".", err)) ||
        (rc = cf_mpi_column_open(&pos, f, MPI_COMM_WORLD, "1/Position", err)) ||
        (rc = cf_mpi_column_open(&id, f, MPI_COMM_WORLD, "1/ID", err)))
        goto done;
    /* Every rank holds the same attributes: these calls agree without MPI. */
    if ((rc = cf_column_attr_get_as(attrs, "BoxSize", "f8", &box, 1, NULL, err)) ||
        (rc = cf_column_attr_get_string(attrs, "Generator", &generator, NULL, err)))
        goto done;
    int64_t first, n = cf_plan_share(cf_column_size(id), nranks, rank, &first);
    p = malloc((size_t)(n ? n : 1) * sizeof *p);
    if (!p) MPI_Abort(MPI_COMM_WORLD, 1);
    const size_t row = sizeof *p;
    if ((rc = cf_mpi_column_read(pos, MPI_COMM_WORLD, first, n, p[0].pos, "f8", row, sizeof(double), NULL, err)) ||
        (rc = cf_mpi_column_read(id, MPI_COMM_WORLD, first, n, &p[0].id, "i4", row, 0, NULL, err)))
        goto done;
    for (int64_t i = 0; i < n; i++) {
        struct particle want;
        make_particle(first + i, &want);
        bad += p[i].id != want.id || p[i].pos[0] != want.pos[0] || p[i].pos[2] != want.pos[2];
    }
    MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("read %lld particles on %d ranks (BoxSize %g, written by %s): %lld wrong\n",
               (long long)cf_column_size(id), nranks, box, generator, bad);
done:
    rc = close_columns(attrs, id, pos, rc, err);
    cf_file_close(f);
    cf_free(generator);
    free(p);
    return rc ? rc : bad != 0;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, nranks, rc = 2;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    cf_error err;
    if (argc == 3 && strcmp(argv[1], "write") == 0) {
        rc = write_snapshot(argv[2], rank, &err);
    } else if (argc == 3 && strcmp(argv[1], "read") == 0) {
        rc = read_snapshot(argv[2], rank, nranks, &err);
    } else if (rank == 0) {
        fprintf(stderr, "usage: %s write|read DIR\n", argv[0]);
    }
    /* The code is the same on every rank; rank 0 reports it. */
    if (rc < 0 && rank == 0) fprintf(stderr, "colfile error %s: %s\n", cf_error_name(err.code), err.message);
    MPI_Finalize();
    return rc != 0;
}
