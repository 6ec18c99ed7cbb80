/* generation.c - the File's generation (docs/format.md 8.5): the size in
 * bytes of .colfile-catalog/generation, an append-only file to which every
 * colfile writer that adds, removes or replaces a column or group appends
 * one byte once the change is in place.  A catalog records the generation
 * it was built at and is used only while the file still has that size:
 * file sizes are coherent between the clients of Lustre and GPFS, where
 * directory timestamps (whole seconds, each client's clock; attributes
 * cached per node) may not show another node's new column. */
#include "catalog.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "catalog_impl.h"

int cf__cat_generation_at(int dfd, const char *path, uint64_t *gen)
{
    struct stat st;
    if (fstatat(dfd, path, &st, AT_SYMLINK_NOFOLLOW) != 0) {
        if (errno != ENOENT) return -1;
        *gen = 0; /* no writer has bumped it yet */
        return 0;
    }
    if (!S_ISREG(st.st_mode)) return -1;
    *gen = (uint64_t)st.st_size;
    return 0;
}

void cf__catalog_bump(const char *root)
{
    char dir[PATH_MAX], path[PATH_MAX];
    if (cf__cat_full_path(dir, sizeof dir, root, CF__CATALOG_DIR, NULL) ||
        cf__cat_full_path(path, sizeof path, root, CF__CATALOG_DIR, CF__GENERATION_NAME))
        return;
    struct stat st;
    if (lstat(dir, &st) != 0) {
        if (mkdir(dir, 0777) != 0 && errno != EEXIST) return;
    } else if (!S_ISDIR(st.st_mode)) {
        return; /* (a link is never followed; no catalog is used then) */
    }
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd < 0) return;
    ssize_t n;
    do n = write(fd, "\n", 1); while (n < 0 && errno == EINTR);
    close(fd);
}
