/* bigfile_snapshot.c - a simulation's snapshot writer written for
 * bigfile's C API, built unchanged against colfile's drop-in.
 *
 *   mpiexec -n 4 bigfile_snapshot write DIR
 *   mpiexec -n 3 bigfile_snapshot read DIR
 *
 * Build: cc $(pkg-config --cflags colfile-bigfile-mpi) bigfile_snapshot.c \
 *           $(pkg-config --libs colfile-bigfile-mpi)
 * (with bigfile itself: -I<bigfile>/src ... -lbigfile-mpi -lbigfile).
 *
 * write: every rank holds its own particles (rank 1 none), in an array of
 * structs as simulation codes keep them.  The snapshot is a Header block
 * of attributes and one block per particle property under "1/", each
 * written collectively from a strided view of the structs
 * (big_file_mpi_create_block + big_block_mpi_write).
 * read: any number of ranks split the rows evenly, read them back
 * collectively and check every value. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bigfile-mpi.h"

struct particle {
    double pos[3];
    float vel[3];
    float mass;
    uint64_t id;
};

/* The particle of global row i: what writers store and readers expect. */
static void make_particle(int64_t i, struct particle *p)
{
    for (int k = 0; k < 3; k++) {
        p->pos[k] = 0.001 * (double)i + k;
        p->vel[k] = (float)(i % 97) - k;
    }
    p->mass = 1.0f + (float)(i % 3);
    p->id = 1000000 + (uint64_t)i;
}

/* One block per property: name, dtype on disk, elements per row, where
 * the property sits in the struct and its dtype there. */
static const struct property {
    const char *name, *dtype;
    int nmemb;
    size_t offset;
    const char *mem_dtype;
} props[] = {
    {"1/Position", "f8", 3, offsetof(struct particle, pos), "f8"},
    {"1/Velocity", "f4", 3, offsetof(struct particle, vel), "f4"},
    {"1/Mass", "f4", 1, offsetof(struct particle, mass), "f4"},
    {"1/ID", "u8", 1, offsetof(struct particle, id), "u8"},
};
#define NPROPS (sizeof props / sizeof *props)
#define NFILE 2        /* files per block, whatever the rank count */
#define CONCURRENCY 2  /* ranks writing at once */

static int fail(const char *what)
{
    const char *m = big_file_get_error_message();
    fprintf(stderr, "%s failed: %s\n", what, m ? m : "(no message)");
    return 1;
}

static int write_snapshot(const char *dir, int rank, int ntask)
{
    int64_t n = rank == 1 ? 0 : 1000 + 250 * rank, first = 0, total = 0;
    MPI_Exscan(&n, &first, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) first = 0;
    MPI_Allreduce(&n, &total, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    struct particle *p = malloc(sizeof *p * (size_t)(n > 0 ? n : 1));
    for (int64_t i = 0; i < n; i++) make_particle(first + i, &p[i]);

    BigFile bf;
    BigBlock b;
    BigBlockPtr ptr;
    BigArray a;
    if (big_file_mpi_create(&bf, dir, MPI_COMM_WORLD)) return fail("create the snapshot");
    if (big_file_mpi_create_block(&bf, &b, "Header", NULL, 0, 0, 0, MPI_COMM_WORLD))
        return fail("create Header");
    double time = 0.5, box = 250.0;
    int64_t npart[6] = {0, total, 0, 0, 0, 0};
    big_block_set_attr(&b, "Time", &time, "f8", 1);
    big_block_set_attr(&b, "BoxSize", &box, "f8", 1);
    big_block_set_attr(&b, "TotNumPart", npart, "i8", 6);
    big_block_set_attr(&b, "NTask", &ntask, "i4", 1);
    if (big_block_mpi_close(&b, MPI_COMM_WORLD)) return fail("close Header");

    for (size_t k = 0; k < NPROPS; k++) {
        const struct property *q = &props[k];
        if (big_file_mpi_create_block(&bf, &b, q->name, q->dtype, q->nmemb, NFILE, (size_t)total,
                                      MPI_COMM_WORLD))
            return fail(q->name);
        size_t dims[2] = {(size_t)n, (size_t)q->nmemb};
        ptrdiff_t strides[2] = {sizeof *p, big_file_dtype_itemsize(q->mem_dtype)};
        big_array_init(&a, (char *)p + q->offset, q->mem_dtype, 2, dims, strides);
        if (big_block_seek(&b, &ptr, 0) || big_block_mpi_write(&b, &ptr, &a, CONCURRENCY, MPI_COMM_WORLD))
            return fail(q->name);
        if (big_block_mpi_close(&b, MPI_COMM_WORLD)) return fail(q->name);
    }
    if (big_file_mpi_close(&bf, MPI_COMM_WORLD)) return fail("close the snapshot");
    if (rank == 0) printf("wrote %lld particles from %d ranks\n", (long long)total, ntask);
    free(p);
    return 0;
}

static int read_snapshot(const char *dir, int rank, int ntask)
{
    BigFile bf;
    BigBlock b;
    BigBlockPtr ptr;
    BigArray a;
    int64_t npart[6];
    int writers = 0;
    if (big_file_mpi_open(&bf, dir, MPI_COMM_WORLD)) return fail("open the snapshot");
    if (big_file_mpi_open_block(&bf, &b, "Header", MPI_COMM_WORLD)) return fail("open Header");
    if (big_block_get_attr(&b, "TotNumPart", npart, "i8", 6) || big_block_get_attr(&b, "NTask", &writers, "i4", 1))
        return fail("Header attributes");
    big_block_mpi_close(&b, MPI_COMM_WORLD);
    int64_t total = npart[1];
    /* this rank's even share of the rows */
    int64_t lo = total * rank / ntask, n = total * (rank + 1) / ntask - lo;
    struct particle *p = calloc((size_t)(n > 0 ? n : 1), sizeof *p);
    for (size_t k = 0; k < NPROPS; k++) {
        const struct property *q = &props[k];
        if (big_file_mpi_open_block(&bf, &b, q->name, MPI_COMM_WORLD)) return fail(q->name);
        if ((int64_t)b.size != total) {
            fprintf(stderr, "%s: %zu rows, the header says %lld\n", q->name, b.size, (long long)total);
            return 1;
        }
        size_t dims[2] = {(size_t)n, (size_t)q->nmemb};
        ptrdiff_t strides[2] = {sizeof *p, big_file_dtype_itemsize(q->mem_dtype)};
        big_array_init(&a, (char *)p + q->offset, q->mem_dtype, 2, dims, strides);
        /* collective: each rank's rows follow the lower ranks' from row 0 */
        if (big_block_seek(&b, &ptr, 0) || big_block_mpi_read(&b, &ptr, &a, CONCURRENCY, MPI_COMM_WORLD))
            return fail(q->name);
        big_block_mpi_close(&b, MPI_COMM_WORLD);
    }
    long long wrong = 0, all_wrong = 0;
    for (int64_t i = 0; i < n; i++) {
        struct particle e;
        make_particle(lo + i, &e);
        wrong += memcmp(e.pos, p[i].pos, sizeof e.pos) || memcmp(e.vel, p[i].vel, sizeof e.vel) ||
                 e.mass != p[i].mass || e.id != p[i].id;
    }
    MPI_Allreduce(&wrong, &all_wrong, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    big_file_mpi_close(&bf, MPI_COMM_WORLD);
    if (rank == 0)
        printf("read %lld particles on %d ranks (written on %d): %lld wrong\n", (long long)total, ntask, writers,
               all_wrong);
    free(p);
    return all_wrong != 0;
}

int main(int argc, char **argv)
{
    int rank, ntask, rc = 2;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ntask);
    if (argc == 3 && strcmp(argv[1], "write") == 0)
        rc = write_snapshot(argv[2], rank, ntask);
    else if (argc == 3 && strcmp(argv[1], "read") == 0)
        rc = read_snapshot(argv[2], rank, ntask);
    else if (rank == 0)
        fprintf(stderr, "usage: %s write|read DIR\n", argv[0]);
    MPI_Finalize();
    return rc;
}
