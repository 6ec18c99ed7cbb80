/* bigfile_c.c - one snapshot written and read through bigfile's C API,
 * timed: the same source built against bigfile 0.1.52 and against
 * colfile's drop-in (bench/bigfile_c.py builds both and compares).
 *
 *     mpiexec -n R bigfile_c write DIR PARTICLES_PER_RANK [nodurable]
 *     mpiexec -n R bigfile_c read DIR
 *
 * A snapshot: Position (3 x f8), Velocity (3 x f4), ID (u8) and Mass (f4)
 * per particle, written from an array of structs with
 * big_file_mpi_create_block + big_block_mpi_write, then closed (the
 * commit).  `read` reads every block back, the rows split evenly.  Rank 0
 * prints "write|read SECONDS BYTES" (the slowest rank's wall time).
 * `nodurable` (drop-in only, built with -DCOLFILE_DROPIN) skips colfile's
 * fsyncs, as bigfile does: the same durability as bigfile. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bigfile-mpi.h"
#ifdef COLFILE_DROPIN
#include "colfile-bigfile.h"
#endif

struct particle {
    double pos[3];
    float vel[3];
    float mass;
    uint64_t id;
};

static const struct {
    const char *name, *dtype;
    int nmemb;
    size_t offset;
} props[] = {
    {"1/Position", "f8", 3, offsetof(struct particle, pos)},
    {"1/Velocity", "f4", 3, offsetof(struct particle, vel)},
    {"1/Mass", "f4", 1, offsetof(struct particle, mass)},
    {"1/ID", "u8", 1, offsetof(struct particle, id)},
};
#define NPROPS 4

static int die(const char *what)
{
    const char *m = big_file_get_error_message();
    fprintf(stderr, "%s: %s\n", what, m ? m : "failed");
    MPI_Abort(MPI_COMM_WORLD, 1);
    return 1;
}

int main(int argc, char **argv)
{
    int rank, ntask;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ntask);
    if (argc < 3) return die("usage: write|read DIR [PARTICLES_PER_RANK [nodurable]]");
    int writing = strcmp(argv[1], "write") == 0;
#ifdef COLFILE_DROPIN
    if (argc > 4 && strcmp(argv[4], "nodurable") == 0) colfile_bigfile_set_durable(0);
#endif
    BigFile bf;
    BigBlock b;
    BigBlockPtr ptr;
    BigArray a;
    int64_t n = argc > 3 ? atoll(argv[3]) : 0, total = 0;
    if (!writing) {
        if (big_file_mpi_open(&bf, argv[2], MPI_COMM_WORLD) || big_file_mpi_open_block(&bf, &b, "1/ID", MPI_COMM_WORLD))
            return die("open");
        total = (int64_t)b.size;
        big_block_mpi_close(&b, MPI_COMM_WORLD);
        n = total * (rank + 1) / ntask - total * rank / ntask;
    }
    struct particle *p = calloc((size_t)n + 1, sizeof *p);
    for (int64_t i = 0; i < n; i++) {
        p[i].id = (uint64_t)(rank * n + i);
        for (int k = 0; k < 3; k++) p[i].pos[k] = p[i].vel[k] = (float)i;
    }
    MPI_Allreduce(&n, &total, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    if (writing && big_file_mpi_create(&bf, argv[2], MPI_COMM_WORLD)) return die("create");
    for (int k = 0; k < NPROPS; k++) {
        if (writing ? big_file_mpi_create_block(&bf, &b, props[k].name, props[k].dtype, props[k].nmemb, ntask,
                                                (size_t)total, MPI_COMM_WORLD)
                    : big_file_mpi_open_block(&bf, &b, props[k].name, MPI_COMM_WORLD))
            return die(props[k].name);
        size_t dims[2] = {(size_t)n, (size_t)props[k].nmemb};
        ptrdiff_t strides[2] = {sizeof *p, big_file_dtype_itemsize(props[k].dtype)};
        big_array_init(&a, (char *)p + props[k].offset, props[k].dtype, 2, dims, strides);
        big_block_seek(&b, &ptr, 0);
        if ((writing ? big_block_mpi_write : big_block_mpi_read)(&b, &ptr, &a, 0, MPI_COMM_WORLD))
            return die(props[k].name);
        if (big_block_mpi_close(&b, MPI_COMM_WORLD)) return die(props[k].name);
    }
    big_file_mpi_close(&bf, MPI_COMM_WORLD);
    double dt = MPI_Wtime() - t0, slowest;
    MPI_Reduce(&dt, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) printf("%s %.6f %lld\n", argv[1], slowest, (long long)(total * (24 + 12 + 4 + 8)));
    free(p);
    MPI_Finalize();
    return 0;
}
