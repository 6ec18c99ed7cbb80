/* fstypeshim.c - LD_PRELOAD library for tests only: every statfs(2)
 * reports Lustre's magic number, so that colfile treats the File's
 * timestamps as ones that cannot prove freshness (coarse, each client's
 * clock) while the test runs on a local file system.  Everything else of
 * statfs's answer is the real one. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <sys/vfs.h>

#define LUSTRE_SUPER_MAGIC 0x0BD00BD0

int statfs(const char *path, struct statfs *buf)
{
    static int (*real)(const char *, struct statfs *);
    if (!real) real = (int (*)(const char *, struct statfs *))dlsym(RTLD_NEXT, "statfs");
    int rc = real(path, buf);
    if (rc == 0) buf->f_type = LUSTRE_SUPER_MAGIC;
    return rc;
}

int statfs64(const char *path, struct statfs64 *buf)
{
    static int (*real)(const char *, struct statfs64 *);
    if (!real) real = (int (*)(const char *, struct statfs64 *))dlsym(RTLD_NEXT, "statfs64");
    int rc = real(path, buf);
    if (rc == 0) buf->f_type = LUSTRE_SUPER_MAGIC;
    return rc;
}
