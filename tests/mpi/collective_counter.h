/* collective_counter.h - an MPI profiling interposer for the tests that
 * count the blocking collectives of the MPI layer: this program's
 * MPI_Bcast & co. count and call PMPI_*; COUNT(n, stmt) leaves the number
 * stmt made in n, and report() prints it and checks that every rank made
 * as many.  Include it in one test program only (it defines the MPI
 * functions). */
#ifndef CF_TEST_COLLECTIVE_COUNTER_H
#define CF_TEST_COLLECTIVE_COUNTER_H

#include "mpi_harness.h"

static int counting;
static long ncoll;

#define COUNTED(call) do { if (counting) ncoll++; } while (0); return call

int MPI_Bcast(void *b, int n, MPI_Datatype t, int root, MPI_Comm comm) { COUNTED(PMPI_Bcast(b, n, t, root, comm)); }
int MPI_Barrier(MPI_Comm comm) { COUNTED(PMPI_Barrier(comm)); }
int MPI_Allreduce(const void *s, void *r, int n, MPI_Datatype t, MPI_Op op, MPI_Comm comm)
{
    COUNTED(PMPI_Allreduce(s, r, n, t, op, comm));
}
int MPI_Reduce(const void *s, void *r, int n, MPI_Datatype t, MPI_Op op, int root, MPI_Comm comm)
{
    COUNTED(PMPI_Reduce(s, r, n, t, op, root, comm));
}
int MPI_Scan(const void *s, void *r, int n, MPI_Datatype t, MPI_Op op, MPI_Comm comm)
{
    COUNTED(PMPI_Scan(s, r, n, t, op, comm));
}
int MPI_Exscan(const void *s, void *r, int n, MPI_Datatype t, MPI_Op op, MPI_Comm comm)
{
    COUNTED(PMPI_Exscan(s, r, n, t, op, comm));
}
int MPI_Allgather(const void *s, int sn, MPI_Datatype st, void *r, int rn, MPI_Datatype rt, MPI_Comm comm)
{
    COUNTED(PMPI_Allgather(s, sn, st, r, rn, rt, comm));
}
int MPI_Allgatherv(const void *s, int sn, MPI_Datatype st, void *r, const int rn[], const int d[], MPI_Datatype rt,
                   MPI_Comm comm)
{
    COUNTED(PMPI_Allgatherv(s, sn, st, r, rn, d, rt, comm));
}
int MPI_Gather(const void *s, int sn, MPI_Datatype st, void *r, int rn, MPI_Datatype rt, int root, MPI_Comm comm)
{
    COUNTED(PMPI_Gather(s, sn, st, r, rn, rt, root, comm));
}
int MPI_Gatherv(const void *s, int sn, MPI_Datatype st, void *r, const int rn[], const int d[], MPI_Datatype rt,
                int root, MPI_Comm comm)
{
    COUNTED(PMPI_Gatherv(s, sn, st, r, rn, d, rt, root, comm));
}
int MPI_Scatter(const void *s, int sn, MPI_Datatype st, void *r, int rn, MPI_Datatype rt, int root, MPI_Comm comm)
{
    COUNTED(PMPI_Scatter(s, sn, st, r, rn, rt, root, comm));
}
int MPI_Alltoall(const void *s, int sn, MPI_Datatype st, void *r, int rn, MPI_Datatype rt, MPI_Comm comm)
{
    COUNTED(PMPI_Alltoall(s, sn, st, r, rn, rt, comm));
}
int MPI_Alltoallv(const void *s, const int sn[], const int sd[], MPI_Datatype st, void *r, const int rn[],
                  const int rd[], MPI_Datatype rt, MPI_Comm comm)
{
    COUNTED(PMPI_Alltoallv(s, sn, sd, st, r, rn, rd, rt, comm));
}
int MPI_Comm_dup(MPI_Comm comm, MPI_Comm *out) { COUNTED(PMPI_Comm_dup(comm, out)); }
int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm *out) { COUNTED(PMPI_Comm_split(comm, color, key, out)); }

/* Run `stmt` and leave the number of collectives it made in *n. */
#define COUNT(n, stmt) do { ncoll = 0; counting = 1; stmt; counting = 0; (n) = ncoll; } while (0)

static void report(const char *what, long n)
{
    if (cf_test_rank() == 0) printf("  %-40s %ld collectives\n", what, n);
    long lo, hi;
    PMPI_Allreduce(&n, &lo, 1, MPI_LONG, MPI_MIN, MPI_COMM_WORLD);
    PMPI_Allreduce(&n, &hi, 1, MPI_LONG, MPI_MAX, MPI_COMM_WORLD);
    CHECK_EQ_INT(lo, hi); /* the same on every rank */
}

#endif
