/* catalog.c - the File catalog: every column's metadata files in one file
 * at the File root, trusted entry by entry only where a fresh lstat of each
 * file and directory it depends on matches the stamp recorded with it.
 *
 * The per-column files stay the truth; this is a cache whose every use is
 * checked (docs/format.md, "The catalog", states the rule and why it is
 * sound).  Wire format (wire.h, little endian):
 *   "CFCAT2\n" NUL; u64 the File's generation (generation.c);
 *   u64 D; D directories: bytes path relative to the root ("" for the root,
 *     NUL included), stamp;
 *   u64 C; C columns, names strictly increasing (strcmp): bytes name (NUL
 *     included), u64 K, K u64 indices of the directories of its path (its
 *     groups, then its own directory), u64 complete; when complete, for each
 *     of the CF__CAT_NSLOTS files: u64 state (0 absent, 1 present with its
 *     bytes, 2 present, too large to keep), then for 1 and 2 its stamp, then
 *     for 1 its bytes (NUL included);
 *   u32 CRC32C of everything before it.
 * A stamp is seven u64: inode, size, mode, mtime s, mtime ns, ctime s,
 * ctime ns.
 *
 * This file loads the catalog and holds what its other files share: the
 * stamps, the racy-timestamp rule and a few helpers.  catalog_lookup.c uses
 * it, catalog_build.c writes it.
 */
/* the type of directory entries (d_type: DT_LNK, DT_UNKNOWN) */
#ifndef _DEFAULT_SOURCE
#define _DEFAULT_SOURCE 1
#endif
#include "catalog.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "checksum.h"
#include "error.h"
#include "fsutil.h"
#include "names.h"
#include "platform.h"
#include "wire.h"

#include "catalog_impl.h"

const char *const cf__cat_slot_names[CF__CAT_NSLOTS] = {
    "header", "colfile-v1", "colfile-stats-v1", "attr", "attr-v2", "colfile-attrs",
};

/* ------------------------------------------------------------------ */
/* stamps and the racy-timestamp rule */

int cf__cat_take_stamp(const char *path, stamp *s)
{
    struct stat st;
    if (lstat(path, &st) != 0) return -1;
    cf__cat_fill_stamp(&st, s);
    return 0;
}

int cf__cat_same_stamp(const stamp *a, const stamp *b)
{
    return a->ino == b->ino && a->size == b->size && a->mode == b->mode && a->msec == b->msec &&
           a->mnsec == b->mnsec && a->csec == b->csec && a->cnsec == b->cnsec;
}

void cf__cat_fill_stamp(const struct stat *st, stamp *s)
{
    s->ino = (uint64_t)st->st_ino;
    s->size = (uint64_t)st->st_size;
    s->mode = (uint64_t)st->st_mode;
    s->msec = (int64_t)st->st_mtim.tv_sec;
    s->mnsec = (int64_t)st->st_mtim.tv_nsec;
    s->csec = (int64_t)st->st_ctim.tv_sec;
    s->cnsec = (int64_t)st->st_ctim.tv_nsec;
}

/* 1 if path's current lstat equals s. */
int cf__cat_still(const char *path, const stamp *s)
{
    stamp now;
    return cf__cat_take_stamp(path, &now) == 0 && cf__cat_same_stamp(&now, s);
}

/* The same for rel ("" for the directory itself) below the directory open
 * as fd. */
int cf__cat_still_at(int fd, const char *rel, const stamp *s)
{
    struct stat st;
    stamp now;
    if (rel[0] ? fstatat(fd, rel, &st, AT_SYMLINK_NOFOLLOW) != 0 : fstat(fd, &st) != 0) return 0;
    cf__cat_fill_stamp(&st, &now);
    return cf__cat_same_stamp(&now, s);
}

/* 1 while the root path still names the directory the catalog opened.
 * (Its identity is taken here, not when loading: a descriptor names the
 * same directory for its whole life, and opening a File for a small read
 * then makes one system call less.) */
int cf__cat_same_root(const cf__catalog *cat, const char *root)
{
    struct stat st, opened;
    return stat(root, &st) == 0 && fstat(cat->root_fd, &opened) == 0 && st.st_ino == opened.st_ino &&
           st.st_dev == opened.st_dev;
}

/* The clock file timestamps are taken from (Linux: the coarse real-time
 * clock, which is what the kernel stamps inodes with). */
void cf__cat_file_clock(struct timespec *t)
{
#if defined(__linux__)
#ifndef CLOCK_REALTIME_COARSE
#define CLOCK_REALTIME_COARSE 5
#endif
    if (clock_gettime(CLOCK_REALTIME_COARSE, t) == 0) return;
#endif
    (void)clock_gettime(CLOCK_REALTIME, t);
}

/* Whether the file system stamps files with the clock's full resolution. */
int cf__cat_fine_timestamps(const char *root)
{
#if defined(__linux__)
    static const char *const fine[] = { "ext4", "xfs", "btrfs", "tmpfs", "zfs", "bcachefs" };
    const char *t = cf__fs_type(root);
    for (size_t i = 0; i < sizeof fine / sizeof *fine; i++)
        if (strcmp(t, fine[i]) == 0) return 1;
#else
    (void)root;
#endif
    return 0;
}

/* A stamp recorded after reading the clock as `before` can be trusted when
 * every later change is bound to give the file another ctime: its ctime is
 * strictly older than `before` (by 2 s where timestamps are coarse, or
 * where this one looks coarse: whole seconds). */
int cf__cat_trusted(const stamp *s, const struct timespec *before, int fine)
{
    int64_t margin = (fine && s->cnsec != 0) ? 0 : 2;
    int64_t sec = s->csec + margin;
    return sec < (int64_t)before->tv_sec || (sec == (int64_t)before->tv_sec && s->cnsec < (int64_t)before->tv_nsec);
}

/* ------------------------------------------------------------------ */
/* loading */

int cf__cat_get_stamp(cf__wire_in *in, stamp *s)
{
    uint64_t v[7];
    for (int i = 0; i < 7; i++)
        if (cf__wire_get_u64(in, &v[i])) return -1;
    s->ino = v[0];
    s->size = v[1];
    s->mode = v[2];
    s->msec = (int64_t)v[3];
    s->mnsec = (int64_t)v[4];
    s->csec = (int64_t)v[5];
    s->cnsec = (int64_t)v[6];
    return 0;
}

/* A NUL-terminated string stored with its NUL. */
int cf__cat_get_text(cf__wire_in *in, const char **s, size_t *len)
{
    const unsigned char *p;
    size_t n;
    if (cf__wire_get_bytes(in, &p, &n) || n == 0 || p[n - 1] != 0) return -1;
    *s = (const char *)p;
    if (len) *len = n - 1;
    return 0;
}

int cf__cat_get_entry(cf__wire_in *in, cat_col *c)
{
    uint64_t complete;
    if (cf__wire_get_u64(in, &complete) || complete > 1) return -1;
    c->complete = (int)complete;
    if (!c->complete) return 0;
    for (int s = 0; s < CF__CAT_NSLOTS; s++) {
        uint64_t state;
        cat_slot *f = &c->slot[s];
        if (cf__wire_get_u64(in, &state) || state > 2) return -1;
        f->state = (int)state;
        if (state >= 1 && cf__cat_get_stamp(in, &f->st)) return -1;
        if (state == 1 && cf__cat_get_text(in, &f->data, &f->len)) return -1;
    }
    return c->slot[CF__CAT_HEADER].state == 0 ? -1 : 0;
}

/* A column's directories must be exactly the prefixes of its valid name
 * ("a", "a/b" for "a/b"), so that checking their stamps checks its path. */
static int path_matches(const cf__catalog *cat, const cat_col *c)
{
    cf_error ignored;
    if (cf_name_check(c->name, &ignored) != 0 || strcmp(c->name, ".") == 0) return 0;
    size_t nl = strlen(c->name);
    if (nl >= 2 && strcmp(c->name + nl - 2, "/.") == 0) return 0;
    size_t j = 0;
    for (size_t i = 0; i <= nl; i++) {
        if (c->name[i] != '/' && c->name[i] != '\0') continue;
        if (j >= c->ndirs) return 0;
        const char *d = cat->dirs[c->dirs[j++]].path;
        if (strlen(d) != i || memcmp(d, c->name, i) != 0) return 0;
    }
    return j == c->ndirs;
}

/* The columns' own directories taken out of dirs (each column keeps its
 * own stamp), so that dirs holds the root and the groups, as in a sharded
 * catalog.  -1 if a column's group is another column's directory. */
static int split_own_dirs(cf__catalog *cat)
{
    size_t n = cat->ndirs ? cat->ndirs : 1;
    unsigned char *own = calloc(n, 1);
    uint64_t *remap = malloc(n * sizeof *remap);
    int rc = own && remap ? 0 : -1;
    for (size_t i = 0; rc == 0 && i < cat->ncols; i++) {
        cat_col *c = &cat->cols[i];
        uint64_t last = c->dirs[c->ndirs - 1];
        if (own[last]) rc = -1;
        own[last] = 1;
        c->own = cat->dirs[last].st;
        c->ndirs--;
    }
    size_t k = 0;
    for (size_t i = 0; rc == 0 && i < cat->ndirs; i++) {
        if (own[i]) continue;
        remap[i] = k;
        cat->dirs[k++] = cat->dirs[i];
    }
    for (size_t i = 0; rc == 0 && i < cat->ncols; i++) {
        cat_col *c = &cat->cols[i];
        for (size_t j = 0; j < c->ndirs; j++) {
            if (own[c->dirs[j]]) rc = -1;
            else c->dirs[j] = remap[c->dirs[j]];
        }
    }
    if (rc == 0) cat->ndirs = k;
    free(own);
    free(remap);
    return rc;
}

static int parse(cf__catalog *cat)
{
    cf__wire_in in = { cat->buf + MAGIC_LEN, cat->buf + cat->len - 4 };
    uint64_t nd, nc;
    if (cf__wire_get_u64(&in, &cat->generation)) return -1;
    if (cf__wire_get_u64(&in, &nd) || nd > (uint64_t)(in.end - in.p) / 64) return -1;
    cat->dirs = calloc(nd ? (size_t)nd : 1, sizeof *cat->dirs);
    if (!cat->dirs) return -1;
    cat->ndirs = (size_t)nd;
    for (size_t i = 0; i < cat->ndirs; i++)
        if (cf__cat_get_text(&in, &cat->dirs[i].path, NULL) || cf__cat_get_stamp(&in, &cat->dirs[i].st)) return -1;
    if (cf__wire_get_u64(&in, &nc) || nc > (uint64_t)(in.end - in.p) / 32) return -1;
    cat->cols = calloc(nc ? (size_t)nc : 1, sizeof *cat->cols);
    /* every index takes 8 bytes of the buffer: this bounds their number */
    cat->dir_index = malloc(((size_t)(in.end - in.p) / 8 + 1) * sizeof *cat->dir_index);
    if (!cat->cols || !cat->dir_index) return -1;
    cat->ncols = (size_t)nc;
    size_t used = 0;
    for (size_t i = 0; i < cat->ncols; i++) {
        cat_col *c = &cat->cols[i];
        uint64_t k;
        if (cf__cat_get_text(&in, &c->name, NULL) || cf__wire_get_u64(&in, &k) || k == 0 ||
            k > (uint64_t)(in.end - in.p) / 8)
            return -1;
        if (i > 0 && strcmp(cat->cols[i - 1].name, c->name) >= 0) return -1;
        c->dirs = cat->dir_index + used;
        c->ndirs = (size_t)k;
        for (size_t j = 0; j < c->ndirs; j++)
            if (cf__wire_get_u64(&in, &c->dirs[j]) || c->dirs[j] >= nd) return -1;
        used += c->ndirs;
        if (!path_matches(cat, c)) return -1;
        if (cf__cat_get_entry(&in, c)) return -1;
    }
    return in.p == in.end ? split_own_dirs(cat) : -1;
}

void cf__catalog_free(cf__catalog *cat)
{
    if (!cat) return;
    if (cat->root_fd >= 0) close(cat->root_fd);
    for (size_t i = 0; i < cat->nshards; i++) {
        if (!cat->shards[i].in_index) free(cat->shards[i].buf);
        free(cat->shards[i].cols);
        free(cat->shards[i].dir_index);
    }
    free(cat->shards);
    free(cat->buf);
    free(cat->dirs);
    free(cat->cols);
    free(cat->dir_index);
    pthread_mutex_destroy(&cat->lock);
    free(cat);
}

char *cf__cat_catalog_dir(const char *root) { return cf__path_join(root, CF__CATALOG_DIR); }

/* A catalog file's bytes into a new buffer (NUL added).  Most fit
 * FIRST_READ bytes and take one read without an fstat first: opening a File
 * for a small read is a few system calls, each of which counts.  Only a
 * read that fills the buffer asks the file's size, with the checks of
 * cf__read_file_at (a regular file, at most CF__METADATA_MAX bytes).  What
 * else the name could hold reads short or fails: links are not followed, a
 * FIFO or socket does not open or cannot be pread, a directory cannot be
 * read; bytes that are not a catalog fail its magic or its CRC. */
#define FIRST_READ ((size_t)64 << 10)

int cf__cat_read(int root_fd, const char *name, size_t expect, unsigned char **text, size_t *len)
{
    /* the directory on its own, so that a link there is not followed */
    int dfd = openat(root_fd, CF__CATALOG_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd < 0) return errno == ENOENT ? -2 : -1;
    int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
    int e = errno;
    close(dfd);
    if (fd < 0) return e == ENOENT ? -2 : -1;
    /* a known size: one byte more shows a longer file */
    size_t cap = expect != SIZE_MAX ? expect + 1 : FIRST_READ, got = 0;
    char *buf = expect <= CF__METADATA_MAX || expect == SIZE_MAX ? malloc(cap + 1) : NULL;
    int rc = buf ? cf__pread_all(fd, buf, cap, 0, &got, "", NULL) : -1;
    if (rc == 0 && expect == SIZE_MAX && got == cap) {
        struct stat st;
        char *grown = NULL;
        size_t more = 0;
        if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size > CF__METADATA_MAX ||
            (size_t)st.st_size < cap || !(grown = realloc(buf, (size_t)st.st_size + 1)))
            rc = -1;
        else {
            buf = grown;
            /* to the size fstat gave: a file that grew since is read short and fails its CRC */
            rc = cf__pread_all(fd, buf + cap, (size_t)st.st_size - cap, (int64_t)cap, &more, "", NULL);
            got += more;
        }
    }
    close(fd);
    if (rc != 0 || (expect != SIZE_MAX && got != expect)) {
        free(buf);
        return -1;
    }
    buf[got] = '\0';
    *text = (unsigned char *)buf;
    *len = got;
    return 0;
}

/* The magic and the trailing CRC32C of a catalog file's bytes: 0 or -1. */
int cf__cat_check_file(const unsigned char *buf, size_t len, const char *magic)
{
    if (len < MAGIC_LEN + 4 || memcmp(buf, magic, MAGIC_LEN) != 0) return -1;
    cf__wire_in tail = { buf + len - 4, buf + len };
    uint32_t crc;
    return cf__wire_get_u32(&tail, &crc) || cf__crc32c_update(0, buf, len - 4) != crc ? -1 : 0;
}

static cf__catalog *load(const char *root, int root_fd, int any_generation);

cf__catalog *cf__catalog_load(const char *root, int root_fd) { return load(root, root_fd, 0); }

cf__catalog *cf__cat_load_any_generation(const char *root) { return load(root, -1, 1); }

static cf__catalog *load(const char *root, int root_fd, int any_generation)
{
    if (root_fd < 0) root_fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (root_fd < 0) return NULL;
    cf__catalog *cat = calloc(1, sizeof *cat);
    if (!cat) {
        close(root_fd);
        return NULL;
    }
    cat->root_fd = root_fd;
    atomic_init(&cat->fine, -1);
    atomic_init(&cat->all, 0);
    pthread_mutex_init(&cat->lock, NULL);
    size_t len = 0;
    /* a link is never followed (docs/format.md 2.2); a non-regular file,
     * or one larger than CF__METADATA_MAX, is refused by the read.  The
     * sharded catalog's index first; without one, the single file colfile
     * wrote before shards. */
    int got = cf__cat_read(root_fd, CF__CATALOG_INDEX_NAME, SIZE_MAX, &cat->buf, &len);
    if (got == 0) {
        cat->len = len;
        cat->sharded = 1;
        const char *magic = len >= MAGIC_LEN && memcmp(cat->buf, INDEX_MAGIC_V3, MAGIC_LEN) == 0 ? INDEX_MAGIC_V3
                                                                                              : INDEX_MAGIC;
        if (cf__cat_check_file(cat->buf, len, magic) != 0 || cf__cat_parse_index(cat) != 0) goto bad;
    } else {
        if (got != -2) goto bad; /* an index that cannot be read: no catalog */
        if (cf__cat_read(root_fd, CF__CATALOG_NAME, SIZE_MAX, &cat->buf, &len) != 0) goto bad;
        cat->len = len;
        if (cf__cat_check_file(cat->buf, len, MAGIC) != 0 || parse(cat) != 0) goto bad;
        atomic_store(&cat->all, 1);
    }
    /* a writer changed the File's listing since it was built */
    if (!any_generation && !cf__cat_generation_still(cat)) goto bad;
    return cat;
bad:
    cf__catalog_free(cat);
    return NULL;
}

/* root + "/" + rel into buf (PATH_MAX); 0, or -1 if too long. */
int cf__cat_full_path(char *buf, size_t cap, const char *root, const char *rel, const char *leaf)
{
    size_t rl = strlen(root), nl = strlen(rel), ll = leaf ? strlen(leaf) : 0;
    if (rl + nl + ll + 3 > cap) return -1;
    memcpy(buf, root, rl);
    size_t k = rl;
    if (nl) {
        if (k && buf[k - 1] != '/') buf[k++] = '/';
        memcpy(buf + k, rel, nl);
        k += nl;
    }
    if (ll) {
        if (k && buf[k - 1] != '/') buf[k++] = '/';
        memcpy(buf + k, leaf, ll);
        k += ll;
    }
    buf[k] = '\0';
    return 0;
}

/* Run worker(arg) on the calling thread and on up to nthreads - 1 more
 * (fewer if they cannot start; at most PAR_THREADS in all). */
void cf__cat_run_threads(void *(*worker)(void *), void *arg, int nthreads)
{
    pthread_t t[PAR_THREADS - 1];
    int started = 0;
    for (; started < nthreads - 1 && started < PAR_THREADS - 1; started++)
        if (pthread_create(&t[started], NULL, worker, arg) != 0) break;
    worker(arg);
    for (int i = 0; i < started; i++) pthread_join(t[i], NULL);
}

static const cat_col *find_in(const cat_col *cols, size_t n, const char *name)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(cols[mid].name, name);
        if (c == 0) return &cols[mid];
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return NULL;
}

const cat_col *cf__cat_find(const cf__catalog *cat, const char *name)
{
    if (atomic_load(&((cf__catalog *)cat)->all) == 1) return find_in(cat->cols, cat->ncols, name);
    if (!cat->sharded) return NULL;
    size_t i = cf__cat_shard_of(cat, name);
    if (i == (size_t)-1 || !cf__cat_load_shard(cat, i)) return NULL;
    return find_in(cat->shards[i].cols, cat->shards[i].ncols, name);
}

int cf__cat_load_all(const cf__catalog *ccat)
{
    cf__catalog *cat = (cf__catalog *)ccat; /* a cache filled once */
    int all = atomic_load(&cat->all);
    if (all) return all == 1;
    size_t n = 0;
    for (size_t i = 0; i < cat->nshards; i++) {
        if (!cf__cat_load_shard(cat, i)) {
            atomic_store(&cat->all, -1);
            return 0;
        }
        n += cat->shards[i].ncols;
    }
    pthread_mutex_lock(&cat->lock);
    if (atomic_load(&cat->all) == 0) {
        cat_col *cols = malloc((n ? n : 1) * sizeof *cols);
        if (cols) {
            size_t k = 0;
            for (size_t i = 0; i < cat->nshards; i++) {
                memcpy(cols + k, cat->shards[i].cols, cat->shards[i].ncols * sizeof *cols);
                k += cat->shards[i].ncols;
            }
            cat->cols = cols;
            cat->ncols = n;
            atomic_store(&cat->all, 1);
        }
    }
    pthread_mutex_unlock(&cat->lock);
    return atomic_load(&cat->all) == 1;
}

int cf__cat_generation_still(const cf__catalog *cat)
{
    uint64_t now;
    return cf__cat_generation_at(cat->root_fd, CF__CATALOG_DIR "/" CF__GENERATION_NAME, &now) == 0 &&
           now == cat->generation;
}

int cf__stamp_still(const char *path, const cf__stamp *s)
{
    return cf__cat_still(path, s);
}

int cf__stamp_still_at(int dfd, const char *rel, const cf__stamp *s)
{
    return cf__cat_still_at(dfd, rel, s);
}
