/* catalog_sweep.c - removing what no reader of the catalog uses once a
 * writer's new index is in place (docs/format.md 8.5): the single-file
 * catalog it upgraded, the shards the replaced indexes named and the new
 * one does not, and what writers killed during their update left. */
/* the type of directory entries */
#ifndef _DEFAULT_SOURCE
#define _DEFAULT_SOURCE 1
#endif
#include "catalog.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "error.h"
#include "fsutil.h"

#include "catalog_impl.h"

/* Leftovers are removed only when not modified for this long, so that a
 * writer updating at the same time keeps the shards its index is about to
 * name. */
#define LEFTOVER_AGE_S 3600

static void sweep_leftovers(const char *dir, int (*kept)(const char *file, void *arg), void *arg)
{
    DIR *d = opendir(dir);
    if (!d) return;
    struct timespec now;
    cf__cat_file_clock(&now);
    size_t pl = strlen(CF__CATALOG_SHARD_PREFIX);
    struct dirent *ent;
    while ((ent = readdir(d)) != NULL) {
        const char *nm = ent->d_name;
        int shard = strncmp(nm, CF__CATALOG_SHARD_PREFIX, pl) == 0 && !kept(nm, arg);
        /* cf__open_temporary's names: ".<final name>.tmp.<pid>.<random>" */
        int temporary = strstr(nm, ".tmp.") != NULL &&
                        (strncmp(nm, ".colfile-catalog-", 17) == 0 || strncmp(nm, ".colfile-clock.", 15) == 0);
        struct stat st;
        if ((shard || temporary) && fstatat(dirfd(d), nm, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
            (int64_t)st.st_mtim.tv_sec + LEFTOVER_AGE_S < (int64_t)now.tv_sec)
            (void)unlinkat(dirfd(d), nm, 0);
    }
    closedir(d);
}

void cf__cat_remove_unused(const char *dir, const cf__catalog *const *cats, size_t n,
                           int (*kept)(const char *file, void *arg), void *arg)
{
    cf_error ignored;
    (void)cf__remove_if_exists(dir, CF__CATALOG_NAME, &ignored);
    for (size_t c = 0; c < n; c++) {
        const cf__catalog *cat = cats[c];
        for (size_t i = 0; cat && cat->sharded && i < cat->nshards; i++)
            if (cat->shards[i].file[0] && !kept(cat->shards[i].file, arg)) /* "": it was in the index */
                (void)cf__remove_if_exists(dir, cat->shards[i].file, &ignored);
    }
    sweep_leftovers(dir, kept, arg);
}
