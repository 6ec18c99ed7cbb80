/* mpi_node.c - what a File handle learns about its node: how many ranks
 * share it (MPI_COMM_TYPE_SHARED) and how many CPUs they may run on
 * together, from which the core places the write digest (placement.c). */
#define _GNU_SOURCE /* sched_getaffinity, CPU_* */
#include <sched.h>
#include <stdint.h>

#include "mpi_impl.h"

void cf__mpi_set_node(cf_file *f, MPI_Comm comm)
{
    MPI_Comm node;
    if (MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) != MPI_SUCCESS) return;
    int ranks = 1;
    MPI_Comm_size(node, &ranks);
    /* the union of the ranks' affinity masks: ranks pinned one per core
     * leave no core for a helper even when each may use its own */
    cpu_set_t mine, all;
    CPU_ZERO(&mine);
    int known = sched_getaffinity(0, sizeof mine, &mine) == 0, all_known = 0;
    MPI_Allreduce(&known, &all_known, 1, MPI_INT, MPI_MIN, node);
    enum { WORDS = sizeof(cpu_set_t) / sizeof(unsigned long) };
    int64_t cpus = 0;
    if (all_known) {
        MPI_Allreduce((unsigned long *)(void *)&mine, (unsigned long *)(void *)&all, WORDS, MPI_UNSIGNED_LONG,
                      MPI_BOR, node);
        cpus = CPU_COUNT(&all);
    }
    MPI_Comm_free(&node);
    /* masks beyond CPU_SETSIZE CPUs: the handle keeps its own count */
    cf_file_set_node(f, ranks, all_known ? cpus : 0);
}
