/* placement.c - where a write digests its bytes (byte sum, CRC32C,
 * statistics): on the writing thread or on a helper thread beside it
 * (CF_OPEN_DIGEST_*).  A helper is free speed on an idle core and a tax
 * on a full node, where every core already runs a rank. */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include <sched.h>
#include <stdint.h>
#include <unistd.h>

#include "colfile_binding.h"
#include "file.h"

int cf_digest_choose(int64_t own_cpus, int64_t node_cpus, int64_t ranks_per_node)
{
    if (own_cpus < 1) own_cpus = 1;
    if (node_cpus < 1) node_cpus = 1;
    if (ranks_per_node < 1) ranks_per_node = 1;
    /* every rank and its helper need a core each (node_cpus / 2: no overflow) */
    return own_cpus >= 2 && node_cpus / 2 >= ranks_per_node;
}

int64_t cf__cpus_allowed(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) return CPU_COUNT(&set);
    /* a mask beyond CPU_SETSIZE CPUs: count the online ones */
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int64_t)n : 1;
}

void cf__file_place_digest(cf_file *f)
{
    if (f->flags & CF_OPEN_DIGEST_INLINE) f->digest_helper = 0;
    else if (f->flags & CF_OPEN_DIGEST_HELPER) f->digest_helper = 1;
    else f->digest_helper = cf_digest_choose(f->own_cpus, f->node_cpus, f->ranks_per_node);
}

void cf_file_set_node(cf_file *f, int64_t ranks_per_node, int64_t node_cpus)
{
    if (!f) return;
    f->ranks_per_node = ranks_per_node < 1 ? 1 : ranks_per_node;
    /* unknown (0): as if the node's ranks shared this process's CPUs */
    f->node_cpus = node_cpus < 1 ? f->own_cpus : node_cpus;
    cf__file_place_digest(f);
}

const char *cf_file_digest_placement(const cf_file *f)
{
    return f && f->digest_helper ? "helper" : "inline";
}
