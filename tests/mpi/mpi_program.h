/* mpi_program.h - the frame of the MPI programs the cross-language tests
 * launch (cf_write_pattern, cf_write_random, cf_open_listing,
 * cf_owners_change, cf_stream_pattern): MPI started with this rank and the
 * number of ranks, and ended with the program's exit status. */
#ifndef CF_TEST_MPI_PROGRAM_H
#define CF_TEST_MPI_PROGRAM_H

#include <mpi.h>
#include <stdio.h>

#include "colfile.h"

/* MPI_Init; the world communicator, *rank in it and *nranks. */
static inline MPI_Comm program_start(int *argc, char ***argv, int *rank, int *nranks)
{
    MPI_Init(argc, argv);
    MPI_Comm_rank(MPI_COMM_WORLD, rank);
    MPI_Comm_size(MPI_COMM_WORLD, nranks);
    return MPI_COMM_WORLD;
}

/* MPI_Finalize; exit status 0 if rc is 0, else 1 (rank 0 prints
 * "prog: <err's message>" first). */
static inline int program_end(const char *prog, int rank, int rc, const cf_error *err)
{
    if (rc && rank == 0) fprintf(stderr, "%s: %s\n", prog, err->message);
    MPI_Finalize();
    return rc ? 1 : 0;
}

/* MPI_Finalize after rank 0 printed usage; exit status 2. */
static inline int program_usage(const char *usage, int rank)
{
    if (rank == 0) fputs(usage, stderr);
    MPI_Finalize();
    return 2;
}

#endif
