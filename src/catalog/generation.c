/* generation.c - the File's generation (docs/format.md 8.5): the size in
 * bytes of .colfile-catalog/generation, an append-only file.  A colfile
 * writer that adds, removes or replaces a column or group appends '+'
 * before the change (fsynced when the change is durable) and '-' once it
 * is in place.  A catalog records the generation it was built at and is
 * used only while the file still has that size: file sizes are coherent
 * between the clients of Lustre and GPFS, where directory timestamps
 * (whole seconds, each client's clock; attributes cached per node) may
 * not show another node's new column.  A '+' without its '-' is a writer
 * inside its change, or one killed there: a listing that differs from a
 * catalog of the current generation is then that writer's doing, not a
 * foreign writer's.  A catalog records, beside the generation, how many
 * '+' are open at it: counting goes on from there, reading the bytes
 * appended since rather than two bytes for every change the File had. */
#include "catalog.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "catalog_impl.h"
#include "fsutil.h"

#define BEGIN_BYTE '+'
#define DONE_BYTE '-'
/* What colfile wrote before the marks, and where it cannot open the file
 * before the change: it counts for the size only. */
#define PLAIN_BYTE '\n'
/* How long an update waits for writers inside their change (a rename and
 * an fsync of the generation file) before it takes them for dead. */
#define SETTLE_WAIT_NS 1000000000LL
#define SETTLE_POLL_NS 10000000LL

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

/* The generation file of root opened for appending (made with the catalog
 * directory if needed; durable: its entry in that directory made durable),
 * or -1.  The directory's own entry in the File is not synced here: every
 * catalog file lives in it, so a power loss that takes it takes every
 * recorded generation too (and an fsync error on the File's directory
 * would be lost to the change's own sync of it). */
static int open_for_append(const char *root, int durable)
{
    char dir[PATH_MAX], path[PATH_MAX];
    if (cf__cat_full_path(dir, sizeof dir, root, CF__CATALOG_DIR, NULL) ||
        cf__cat_full_path(path, sizeof path, root, CF__CATALOG_DIR, CF__GENERATION_NAME))
        return -1;
    struct stat st;
    if (lstat(dir, &st) != 0) {
        if (mkdir(dir, 0777) != 0 && errno != EEXIST) return -1;
    } else if (!S_ISDIR(st.st_mode)) {
        return -1; /* (a link is never followed; no catalog is used then) */
    }
    int fd = open(path, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT) {
        fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0666);
        if (fd >= 0 && durable && cf__fsync_path(dir, NULL)) {
            close(fd);
            return -1;
        }
    }
    return fd;
}

static int append_bytes(int fd, const char *bytes, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, bytes, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        bytes += w;
        n -= (size_t)w;
    }
    return 0;
}

int cf__catalog_begin(const char *root, int durable)
{
    int fd = open_for_append(root, durable);
    if (fd < 0) return -1;
    /* durable: no power loss keeps the change and loses this byte, so no
     * catalog built before the change matches the generation after it */
    if (append_bytes(fd, (const char[]){ BEGIN_BYTE }, 1) != 0 || (durable && fdatasync(fd) != 0 && errno != EINVAL)) {
        close(fd);
        return -1;
    }
    return fd;
}

void cf__catalog_done(const char *root, int fd)
{
    /* after this writer's '+', its match; without one, a plain bump */
    if (fd < 0) {
        cf__catalog_bump(root);
        return;
    }
    (void)append_bytes(fd, (const char[]){ DONE_BYTE }, 1);
    close(fd);
}

void cf__catalog_bump(const char *root)
{
    int fd = open_for_append(root, 0);
    if (fd < 0) return;
    (void)append_bytes(fd, (const char[]){ PLAIN_BYTE }, 1);
    close(fd);
}

static int is_mark(char c) { return c == BEGIN_BYTE || c == DONE_BYTE || c == PLAIN_BYTE; }

/* The marks of bytes [from, to) of fd added to *open_marks, the '+' not
 * yet matched by a later '-' (a '-' without one, from a writer an update
 * took for dead, counts for nothing).  *foreign (when not NULL) is set if
 * one of them is no byte colfile appends.  0, or -1 when they cannot be
 * read. */
static int count_open(int fd, uint64_t from, uint64_t to, uint64_t *open_marks, int *foreign)
{
    char buf[65536];
    while (from < to) {
        size_t want = to - from < sizeof buf ? (size_t)(to - from) : sizeof buf, got = 0;
        if (cf__pread_all(fd, buf, want, (int64_t)from, &got, CF__GENERATION_NAME, NULL) != 0 || got == 0) return -1;
        for (size_t i = 0; i < got; i++) {
            if (buf[i] == BEGIN_BYTE) ++*open_marks;
            else if (buf[i] == DONE_BYTE && *open_marks) --*open_marks;
            else if (foreign && !is_mark(buf[i])) *foreign = 1;
        }
        from += got;
    }
    return 0;
}

/* Whether the file (size bytes) may still be the one rec was counted on:
 * at least that long, and (a cheap check for a tail lost with the power,
 * which reads back as zeros or as other bytes) its byte before rec->at
 * one that colfile appends.  The protocol keeps a recorded prefix as it
 * was read (durable: fsynced before the catalog records it). */
static int record_holds(int fd, const cf__cat_marks *rec, uint64_t size)
{
    if (!rec || !rec->known || rec->at > size || rec->open > rec->at) return 0;
    if (rec->at == 0) return 1;
    char last = 0;
    size_t got = 0;
    return cf__pread_all(fd, &last, 1, (int64_t)(rec->at - 1), &got, CF__GENERATION_NAME, NULL) == 0 && got == 1 &&
           is_mark(last);
}

/* The marks open in the first size bytes of fd: continued from rec when
 * the file agrees with it and every byte after it is one colfile appends
 * (reading only those), else counted from byte 0.  0 or -1. */
static int open_marks_at(int fd, const cf__cat_marks *rec, uint64_t size, uint64_t *open_marks)
{
    if (record_holds(fd, rec, size)) {
        uint64_t n = rec->open;
        int foreign = 0;
        if (count_open(fd, rec->at, size, &n, &foreign) != 0) return -1;
        if (!foreign) {
            *open_marks = n;
            return 0;
        }
    }
    *open_marks = 0;
    return count_open(fd, 0, size, open_marks, NULL);
}

int cf__cat_generation_pending(const cf__catalog *cat)
{
    int fd = openat(cat->root_fd, CF__CATALOG_DIR "/" CF__GENERATION_NAME, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return 0;
    struct stat st;
    uint64_t open_marks = 0;
    /* at the catalog's own generation its record is the count: nothing to read but a byte */
    int pending = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size == cat->generation &&
                  open_marks_at(fd, &cat->marks, cat->generation, &open_marks) == 0 && open_marks > 0;
    close(fd);
    return pending;
}

int cf__cat_generation_settle(const char *dir, int durable, const cf__cat_marks *from, cf__cat_marks *out)
{
    char path[PATH_MAX];
    if (cf__cat_full_path(path, sizeof path, dir, CF__GENERATION_NAME, NULL)) return -1;
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        if (errno != ENOENT) return -1;
        *out = (cf__cat_marks){ 0, 0, 1 };
        return 0;
    }
    struct stat st;
    uint64_t open_marks = 0, seen = 0;
    int rc = -1;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) goto out;
    seen = (uint64_t)st.st_size;
    if (open_marks_at(fd, from, seen, &open_marks)) goto out;
    /* writers inside their change finish within a rename and an fsync */
    for (long long waited = 0; open_marks > 0 && waited < SETTLE_WAIT_NS; waited += SETTLE_POLL_NS) {
        struct timespec ts = { 0, SETTLE_POLL_NS };
        nanosleep(&ts, NULL);
        if (fstat(fd, &st) != 0) goto out;
        if ((uint64_t)st.st_size > seen) {
            if (count_open(fd, seen, (uint64_t)st.st_size, &open_marks, NULL)) goto out;
            seen = (uint64_t)st.st_size;
        }
    }
    if (open_marks > 0) {
        /* killed inside their change: matched here, so that they do not
         * excuse a foreign writer's change forever (the walk that follows
         * sees whatever they did) */
        int wfd = open(path, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
        char done[256];
        memset(done, DONE_BYTE, sizeof done);
        for (uint64_t left = open_marks; wfd >= 0 && left > 0;) {
            size_t n = left < sizeof done ? (size_t)left : sizeof done;
            if (append_bytes(wfd, done, n) != 0) break;
            left -= n;
        }
        if (wfd >= 0) close(wfd);
        /* what is recorded is the count at the size recorded: these '-'
         * and whatever other writers appended meanwhile, read back */
        if (fstat(fd, &st) != 0) goto out;
        if ((uint64_t)st.st_size > seen) {
            if (count_open(fd, seen, (uint64_t)st.st_size, &open_marks, NULL)) goto out;
            seen = (uint64_t)st.st_size;
        }
    }
    *out = (cf__cat_marks){ seen, open_marks, 1 };
    /* the generation a catalog records is durable before the catalog is:
     * after a power loss the file is never shorter than a recorded value */
    if (durable && fdatasync(fd) != 0 && errno != EINVAL) goto out;
    rc = 0;
out:
    close(fd);
    return rc;
}
