/* mpi_node.c - what a File handle learns about its node: how many ranks
 * share it (MPI_COMM_TYPE_SHARED) and how many CPUs they may run on
 * together, from which the core places the write digest (placement.c). */
#define _GNU_SOURCE /* sched_getaffinity, CPU_* */
#include <sched.h>
#include <stdint.h>
#include <string.h>

#include "mpi_impl.h"

void cf__mpi_set_node(cf_file *f, MPI_Comm comm)
{
    /* an explicit placement (the same flags on every rank) needs no count */
    if (cf_file_flags(f) & (CF_OPEN_DIGEST_INLINE | CF_OPEN_DIGEST_HELPER)) return;
    MPI_Comm node;
    if (MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) != MPI_SUCCESS) return;
    int ranks = 1;
    MPI_Comm_size(node, &ranks);
    /* The union of the ranks' affinity masks, in one round among the
     * ranks of the node: ranks pinned one per core leave no core for a
     * helper even though each may run on its own.  The last word is
     * nonzero if a rank could not read its mask. */
    enum { WORDS = sizeof(cpu_set_t) / sizeof(unsigned long) };
    union {
        cpu_set_t set;
        unsigned long w[WORDS + 1];
    } mine, all;
    memset(&mine, 0, sizeof mine);
    mine.w[WORDS] = sched_getaffinity(0, sizeof mine.set, &mine.set) != 0;
    int rc = MPI_Allreduce(mine.w, all.w, WORDS + 1, MPI_UNSIGNED_LONG, MPI_BOR, node);
    MPI_Comm_free(&node);
    /* masks beyond CPU_SETSIZE CPUs: the handle keeps its own count */
    if (rc == MPI_SUCCESS && all.w[WORDS] == 0) cf_file_set_node(f, ranks, CPU_COUNT(&all.set));
    else cf_file_set_node(f, ranks, 0);
}
