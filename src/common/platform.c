/* platform.c - renameat2, O_PATH, open file description locks, sync_file_range,
 * fallocate, cachestat, sched_getaffinity and statfs: Linux calls with
 * fallbacks elsewhere.  This is the one file built with the GNU feature
 * set; the rest of the core sticks to POSIX.1-2008. */
#undef _POSIX_C_SOURCE
#define _GNU_SOURCE 1
#include "platform.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>
#if defined(__linux__)
#include <sys/syscall.h>
#include <sys/vfs.h>
#endif

int cf__rename_exchange(const char *a, const char *b)
{
#if defined(__linux__) && defined(SYS_renameat2)
    /* Through syscall(): older C libraries lack the renameat2 wrapper. */
    return (int)syscall(SYS_renameat2, AT_FDCWD, a, AT_FDCWD, b, 2 /* RENAME_EXCHANGE */);
#else
    (void)a;
    (void)b;
    errno = ENOSYS;
    return -1;
#endif
}

int cf__open_dir_handle(int dfd, const char *path)
{
#if defined(O_PATH)
    return openat(dfd, path, O_PATH | O_DIRECTORY | O_CLOEXEC);
#else
    return openat(dfd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
#endif
}

int cf__open_dir_handle_nofollow(int dfd, const char *path)
{
#if defined(O_PATH)
    return openat(dfd, path, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
#else
    return openat(dfd, path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
#endif
}

/* CF_NO_OFD_LOCKS builds a core that behaves as on a kernel without open
 * file description locks (ENOSYS), so that tests run that path on Linux. */
#if defined(CF_NO_OFD_LOCKS)
#undef F_OFD_SETLK
#undef F_OFD_GETLK
#endif

#if defined(F_OFD_SETLK) || defined(F_OFD_GETLK)
/* len bytes from start (len 0: to the end of the file, and beyond) */
static void ofd_span(struct flock *fl, short type, int64_t start, int64_t len)
{
    memset(fl, 0, sizeof *fl);
    fl->l_type = type;
    fl->l_whence = SEEK_SET;
    fl->l_start = (off_t)start;
    fl->l_len = (off_t)len;
}
#endif

/* F_OFD_SETLK of type (F_RDLCK, F_WRLCK or F_UNLCK) over len bytes from
 * start. */
static int ofd_set(int fd, short type, int64_t start, int64_t len)
{
#if defined(F_OFD_SETLK)
    struct flock fl;
    ofd_span(&fl, type, start, len);
    return fcntl(fd, F_OFD_SETLK, &fl);
#else
    (void)fd;
    (void)type;
    (void)start;
    (void)len;
    errno = ENOSYS;
    return -1;
#endif
}

/* F_OFD_GETLK of a write lock over len bytes from start: 0 if free, 1 if
 * held (*holder filled), -1 with errno. */
static int ofd_get(int fd, int64_t start, int64_t len, struct flock *holder)
{
#if defined(F_OFD_GETLK)
    ofd_span(holder, F_WRLCK, start, len);
    if (fcntl(fd, F_OFD_GETLK, holder) != 0) return -1;
    return holder->l_type != F_UNLCK;
#else
    (void)fd;
    (void)start;
    (void)len;
    (void)holder;
    errno = ENOSYS;
    return -1;
#endif
}

/* One byte at start; start < 0: all of the file. */
#define BYTE_OR_ALL(start) ((start) < 0 ? 0 : (start)), ((start) < 0 ? 0 : 1)

int cf__ofd_lock(int fd, int exclusive, int64_t start)
{
    return ofd_set(fd, exclusive ? F_WRLCK : F_RDLCK, BYTE_OR_ALL(start));
}

int cf__ofd_unlock(int fd, int64_t start) { return ofd_set(fd, F_UNLCK, BYTE_OR_ALL(start)); }

int cf__ofd_probe(int fd, int64_t start)
{
    struct flock fl;
    int r = ofd_get(fd, BYTE_OR_ALL(start), &fl);
    if (r <= 0) return r;
    return fl.l_start == 0 && fl.l_len == 0 ? 2 : 1;
}

int cf__ofd_lock_range(int fd, int64_t start, int64_t len) { return ofd_set(fd, F_WRLCK, start, len); }

int cf__ofd_probe_range(int fd, int64_t start, int64_t len, int64_t *at)
{
    struct flock fl;
    int r = ofd_get(fd, start, len, &fl);
    if (r == 1) *at = fl.l_start == 0 && fl.l_len == 0 ? -1 : (int64_t)fl.l_start;
    return r;
}

/* 1 if errno says the kernel or file system has no OFD locks. */
static int no_ofd_locks(void) { return errno == EINVAL || errno == ENOSYS; }

/* An OFD lock of all of the file, else flock(2) with flock_op where the
 * kernel has no OFD locks. */
static int take_lock(int fd, int exclusive, int flock_op)
{
    if (cf__ofd_lock(fd, exclusive, -1) == 0) return 0;
    if (!no_ofd_locks()) return -1;
    return flock(fd, flock_op | LOCK_NB);
}

int cf__lock_shared(int fd)
{
    return take_lock(fd, 0, LOCK_SH);
}

int cf__lock_exclusive(int fd)
{
    return take_lock(fd, 1, LOCK_EX);
}

int cf__lock_probe(int fd)
{
    int what = cf__ofd_probe(fd, -1);
    if (what >= 0) return what != 0;
    if (!no_ofd_locks()) return -1;
    if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
        flock(fd, LOCK_UN);
        return 0;
    }
    return errno == EWOULDBLOCK ? 1 : -1;
}

int cf__lock_probe_path(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    int held = cf__lock_probe(fd);
    close(fd);
    return held;
}

void cf__writeback_range(int fd, int64_t offset, int64_t length)
{
#if defined(__linux__) && defined(SYNC_FILE_RANGE_WRITE)
    (void)sync_file_range(fd, (off_t)offset, (off_t)length, SYNC_FILE_RANGE_WRITE);
#else
    (void)fd;
    (void)offset;
    (void)length;
#endif
}

void cf__preallocate(int fd, int64_t offset, int64_t length)
{
#if defined(__linux__) && defined(FALLOC_FL_KEEP_SIZE)
    if (offset >= 0 && length > 0) (void)fallocate(fd, FALLOC_FL_KEEP_SIZE, (off_t)offset, (off_t)length);
#else
    (void)fd;
    (void)offset;
    (void)length;
#endif
}

#if defined(__linux__)
/* cachestat(2) (Linux 6.5): the same number on every architecture; the C
 * library may predate it. */
#ifndef SYS_cachestat
#define SYS_cachestat 451
#endif
struct cf__cachestat_range {
    uint64_t off, len;
};
struct cf__cachestat {
    uint64_t nr_cache, nr_dirty, nr_writeback, nr_evicted, nr_recently_evicted;
};
#endif

int cf__range_cached(int fd, int64_t offset, int64_t length)
{
#if defined(__linux__)
    if (offset < 0 || length <= 0) return 0;
    int64_t page = sysconf(_SC_PAGESIZE);
    if (page <= 0) return 0;
    struct cf__cachestat_range r = { (uint64_t)offset, (uint64_t)length };
    struct cf__cachestat cs;
    if (syscall(SYS_cachestat, fd, &r, &cs, 0) != 0) return 0;
    uint64_t pages = (uint64_t)((offset + length - 1) / page - offset / page + 1);
    return cs.nr_cache >= pages;
#else
    (void)fd;
    (void)offset;
    (void)length;
    return 0;
#endif
}

int cf__can_run_parallel(void)
{
#if defined(__linux__)
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0) return 0;
    return CPU_COUNT(&set) > 1;
#else
    return 0;
#endif
}

const char *cf__fs_type(const char *path)
{
#if defined(__linux__)
    struct statfs sf;
    if (statfs(path, &sf) != 0) return "unknown";
    /* Magic numbers from statfs(2); the network and parallel file systems
     * are the ones where colfile's guarantees differ. */
    static const struct { unsigned long magic; const char *name; } known[] = {
        { 0x6969UL, "nfs" },        { 0x0BD00BD0UL, "lustre" }, { 0x47504653UL, "gpfs" },
        { 0xFF534D42UL, "cifs" },   { 0xFE534D42UL, "smb2" },   { 0x19830326UL, "beegfs" },
        { 0x65735546UL, "fuse" },   { 0x01021994UL, "tmpfs" },  { 0xEF53UL, "ext4" },
        { 0x58465342UL, "xfs" },    { 0x9123683EUL, "btrfs" },  { 0x794C7630UL, "overlayfs" },
        { 0x2FC12FC1UL, "zfs" },    { 0xCA451A4EUL, "bcachefs" },
    };
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if ((unsigned long)sf.f_type == known[i].magic) return known[i].name;
    return "other";
#else
    (void)path;
    return "unknown";
#endif
}
