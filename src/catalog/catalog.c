/* catalog.c - the File catalog: every column's metadata files in one file
 * at the File root, trusted entry by entry only where a fresh lstat of each
 * file and directory it depends on matches the stamp recorded with it.
 *
 * The per-column files stay the truth; this is a cache whose every use is
 * checked (docs/format.md, "The catalog", states the rule and why it is
 * sound).  Wire format (wire.h, little endian):
 *   "CFCAT1\n" NUL;
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

#define MAGIC "CFCAT1\n"
#define MAGIC_LEN 8
/* Larger metadata files are stamped but not copied into the catalog. */
#define INLINE_MAX ((size_t)64 * 1024)
#define DEPTH_MAX 256

static const char *const slot_names[CF__CAT_NSLOTS] = {
    "header", "colfile-v1", "colfile-stats-v1", "attr", "attr-v2", "colfile-attrs",
};

typedef cf__stamp stamp;

typedef struct cat_dir {
    const char *path;
    stamp st;
} cat_dir;

typedef struct cat_slot {
    int state; /* 0 absent, 1 inline, 2 present not inline */
    stamp st;
    const char *data;
    size_t len;
} cat_slot;

typedef struct cat_col {
    const char *name;
    uint64_t *dirs;
    size_t ndirs;
    int complete;
    cat_slot slot[CF__CAT_NSLOTS];
} cat_col;

struct cf__catalog {
    unsigned char *buf;
    size_t len;
    cat_dir *dirs;
    size_t ndirs;
    cat_col *cols;
    size_t ncols;
    uint64_t *dir_index; /* storage of every cols[i].dirs */
    int root_fd;         /* the root directory, for short relative lookups */
};

/* ------------------------------------------------------------------ */
/* stamps and the racy-timestamp rule */

static void fill_stamp(const struct stat *st, stamp *s);

static int take_stamp(const char *path, stamp *s)
{
    struct stat st;
    if (lstat(path, &st) != 0) return -1;
    fill_stamp(&st, s);
    return 0;
}

static int same_stamp(const stamp *a, const stamp *b)
{
    return a->ino == b->ino && a->size == b->size && a->mode == b->mode && a->msec == b->msec &&
           a->mnsec == b->mnsec && a->csec == b->csec && a->cnsec == b->cnsec;
}

static void fill_stamp(const struct stat *st, stamp *s)
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
static int still(const char *path, const stamp *s)
{
    stamp now;
    return take_stamp(path, &now) == 0 && same_stamp(&now, s);
}

/* The same for rel ("" for the directory itself) below the directory open
 * as fd. */
static int still_at(int fd, const char *rel, const stamp *s)
{
    struct stat st;
    stamp now;
    if (rel[0] ? fstatat(fd, rel, &st, AT_SYMLINK_NOFOLLOW) != 0 : fstat(fd, &st) != 0) return 0;
    fill_stamp(&st, &now);
    return same_stamp(&now, s);
}

/* 1 while the root path still names the directory the catalog opened.
 * (Its identity is taken here, not when loading: a descriptor names the
 * same directory for its whole life, and opening a File for a small read
 * then makes one system call less.) */
static int same_root(const cf__catalog *cat, const char *root)
{
    struct stat st, opened;
    return stat(root, &st) == 0 && fstat(cat->root_fd, &opened) == 0 && st.st_ino == opened.st_ino &&
           st.st_dev == opened.st_dev;
}

/* The clock file timestamps are taken from (Linux: the coarse real-time
 * clock, which is what the kernel stamps inodes with). */
static void file_clock(struct timespec *t)
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
static int fine_timestamps(const char *root)
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
static int trusted(const stamp *s, const struct timespec *before, int fine)
{
    int64_t margin = (fine && s->cnsec != 0) ? 0 : 2;
    int64_t sec = s->csec + margin;
    return sec < (int64_t)before->tv_sec || (sec == (int64_t)before->tv_sec && s->cnsec < (int64_t)before->tv_nsec);
}

/* ------------------------------------------------------------------ */
/* loading */

static int get_stamp(cf__wire_in *in, stamp *s)
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
static int get_text(cf__wire_in *in, const char **s, size_t *len)
{
    const unsigned char *p;
    size_t n;
    if (cf__wire_get_bytes(in, &p, &n) || n == 0 || p[n - 1] != 0) return -1;
    *s = (const char *)p;
    if (len) *len = n - 1;
    return 0;
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

static int parse(cf__catalog *cat)
{
    cf__wire_in in = { cat->buf + MAGIC_LEN, cat->buf + cat->len - 4 };
    uint64_t nd, nc;
    if (cf__wire_get_u64(&in, &nd) || nd > (uint64_t)(in.end - in.p) / 64) return -1;
    cat->dirs = calloc(nd ? (size_t)nd : 1, sizeof *cat->dirs);
    if (!cat->dirs) return -1;
    cat->ndirs = (size_t)nd;
    for (size_t i = 0; i < cat->ndirs; i++)
        if (get_text(&in, &cat->dirs[i].path, NULL) || get_stamp(&in, &cat->dirs[i].st)) return -1;
    if (cf__wire_get_u64(&in, &nc) || nc > (uint64_t)(in.end - in.p) / 32) return -1;
    cat->cols = calloc(nc ? (size_t)nc : 1, sizeof *cat->cols);
    /* every index takes 8 bytes of the buffer: this bounds their number */
    cat->dir_index = malloc(((size_t)(in.end - in.p) / 8 + 1) * sizeof *cat->dir_index);
    if (!cat->cols || !cat->dir_index) return -1;
    cat->ncols = (size_t)nc;
    size_t used = 0;
    for (size_t i = 0; i < cat->ncols; i++) {
        cat_col *c = &cat->cols[i];
        uint64_t k, complete;
        if (get_text(&in, &c->name, NULL) || cf__wire_get_u64(&in, &k) || k == 0 ||
            k > (uint64_t)(in.end - in.p) / 8)
            return -1;
        if (i > 0 && strcmp(cat->cols[i - 1].name, c->name) >= 0) return -1;
        c->dirs = cat->dir_index + used;
        c->ndirs = (size_t)k;
        for (size_t j = 0; j < c->ndirs; j++)
            if (cf__wire_get_u64(&in, &c->dirs[j]) || c->dirs[j] >= nd) return -1;
        used += c->ndirs;
        if (!path_matches(cat, c)) return -1;
        if (cf__wire_get_u64(&in, &complete) || complete > 1) return -1;
        c->complete = (int)complete;
        if (!c->complete) continue;
        for (int s = 0; s < CF__CAT_NSLOTS; s++) {
            uint64_t state;
            cat_slot *f = &c->slot[s];
            if (cf__wire_get_u64(&in, &state) || state > 2) return -1;
            f->state = (int)state;
            if (state >= 1 && get_stamp(&in, &f->st)) return -1;
            if (state == 1 && get_text(&in, &f->data, &f->len)) return -1;
        }
        if (c->slot[CF__CAT_HEADER].state == 0) return -1;
    }
    return in.p == in.end ? 0 : -1;
}

void cf__catalog_free(cf__catalog *cat)
{
    if (!cat) return;
    if (cat->root_fd >= 0) close(cat->root_fd);
    free(cat->buf);
    free(cat->dirs);
    free(cat->cols);
    free(cat->dir_index);
    free(cat);
}

static char *catalog_dir(const char *root) { return cf__path_join(root, CF__CATALOG_DIR); }

/* The catalog file's bytes into a new buffer (NUL added).  Most catalogs
 * fit FIRST_READ bytes and take one read without an fstat first: opening a
 * File for a small read is a few system calls, each of which counts.  Only
 * a read that fills the buffer asks the file's size, with the checks of
 * cf__read_file_at (a regular file, at most CF__METADATA_MAX bytes).  What
 * else the name could hold reads short or fails: links are not followed, a
 * FIFO or socket does not open or cannot be pread, a directory cannot be
 * read; bytes that are not a catalog fail its magic or its CRC. */
#define FIRST_READ ((size_t)64 << 10)

static int read_catalog(int root_fd, char **text, size_t *len)
{
    /* the directory on its own, so that a link there is not followed */
    int dfd = openat(root_fd, CF__CATALOG_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd < 0) return -1;
    int fd = openat(dfd, CF__CATALOG_NAME, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
    close(dfd);
    if (fd < 0) return -1;
    size_t cap = FIRST_READ, got = 0;
    char *buf = malloc(cap + 1);
    int rc = buf ? cf__pread_all(fd, buf, cap, 0, &got, "", NULL) : -1;
    if (rc == 0 && got == cap) {
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
    if (rc != 0) {
        free(buf);
        return -1;
    }
    buf[got] = '\0';
    *text = buf;
    *len = got;
    return 0;
}

cf__catalog *cf__catalog_load(const char *root, int root_fd)
{
    if (root_fd < 0) root_fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (root_fd < 0) return NULL;
    cf__catalog *cat = calloc(1, sizeof *cat);
    if (!cat) {
        close(root_fd);
        return NULL;
    }
    cat->root_fd = root_fd;
    char *text = NULL;
    size_t len = 0;
    /* a link is never followed (docs/format.md 2.2); a non-regular file,
     * or one larger than CF__METADATA_MAX, is refused by the read */
    if (read_catalog(root_fd, &text, &len) != 0) goto bad;
    cat->buf = (unsigned char *)text;
    cat->len = len;
    if (len < MAGIC_LEN + 4 || memcmp(text, MAGIC, MAGIC_LEN) != 0) goto bad;
    cf__wire_in tail = { cat->buf + len - 4, cat->buf + len };
    uint32_t crc;
    if (cf__wire_get_u32(&tail, &crc) || cf__crc32c_update(0, cat->buf, len - 4) != crc) goto bad;
    if (parse(cat) != 0) goto bad;
    return cat;
bad:
    cf__catalog_free(cat);
    return NULL;
}

/* ------------------------------------------------------------------ */
/* using it */

/* root + "/" + rel into buf (PATH_MAX); 0, or -1 if too long. */
static int full_path(char *buf, size_t cap, const char *root, const char *rel, const char *leaf)
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

/* Checking the stamps of a large File whose inodes are not cached is one
 * random read each: a few threads keep several in flight.  When that first
 * pass shows the inodes were not cached, the same threads also lstat the
 * files of every column, so that the opens that usually follow a listing
 * find them cached (a warm-up only: each open still checks its stamps).
 * cf__catalog_attrs puts the directories and the attribute files of every
 * column in one such queue: on 10,000 columns with dropped caches, 8
 * threads took the bulk attribute read from about 1.0 s to 0.35 s. */
#define PAR_THREADS 8
#define PAR_MIN 2048       /* fewer directories: one thread */
#define PAR_CHUNK 64
#define COLD_NS_PER_STAT 20000

typedef struct par {
    const cf__catalog *cat;
    atomic_size_t next;
    atomic_int bad;
    int warm_files; /* second pass: lstat the columns' files */
    cf__catalog_col_attrs *attrs; /* cf__catalog_attrs: items are the
                                 directories, then the columns */
} par;

static int check_attrs(const cf__catalog *cat, size_t i, cf__catalog_col_attrs *e);

static void *par_worker(void *arg)
{
    par *p = arg;
    const cf__catalog *cat = p->cat;
    size_t n = p->attrs ? cat->ndirs + cat->ncols : p->warm_files ? cat->ncols : cat->ndirs;
    for (;;) {
        size_t i = atomic_fetch_add(&p->next, PAR_CHUNK);
        if (i >= n || atomic_load(&p->bad)) break;
        size_t end = i + PAR_CHUNK < n ? i + PAR_CHUNK : n;
        for (; i < end; i++) {
            if (p->attrs && i >= cat->ndirs) {
                (void)check_attrs(cat, i - cat->ndirs, &p->attrs[i - cat->ndirs]);
                continue;
            }
            if (!p->warm_files) {
                if (!still_at(cat->root_fd, cat->dirs[i].path, &cat->dirs[i].st)) {
                    atomic_store(&p->bad, 1);
                    break;
                }
                continue;
            }
            const cat_col *c = &cat->cols[i];
            char buf[PATH_MAX];
            struct stat st;
            for (int s = 0; c->complete && s < CF__CAT_NSLOTS; s++)
                if (c->slot[s].state && full_path(buf, sizeof buf, "", c->name, slot_names[s]) == 0)
                    (void)fstatat(cat->root_fd, buf, &st, AT_SYMLINK_NOFOLLOW);
        }
    }
    return NULL;
}

/* Run worker(arg) on the calling thread and on up to nthreads - 1 more
 * (fewer if they cannot start; at most PAR_THREADS in all). */
static void run_threads(void *(*worker)(void *), void *arg, int nthreads)
{
    pthread_t t[PAR_THREADS - 1];
    int started = 0;
    for (; started < nthreads - 1 && started < PAR_THREADS - 1; started++)
        if (pthread_create(&t[started], NULL, worker, arg) != 0) break;
    worker(arg);
    for (int i = 0; i < started; i++) pthread_join(t[i], NULL);
}

/* Run par_worker on PAR_THREADS threads (fewer if they cannot start). */
static void par_run(par *p) { run_threads(par_worker, p, PAR_THREADS); }

static int64_t elapsed_ns(const struct timespec *a)
{
    struct timespec b;
    clock_gettime(CLOCK_MONOTONIC, &b);
    return (int64_t)(b.tv_sec - a->tv_sec) * 1000000000 + (b.tv_nsec - a->tv_nsec);
}

int cf__catalog_list(const cf__catalog *cat, const char *root, char ***names, int64_t *count)
{
    if (!cat || !same_root(cat, root)) return 0;
    if (cat->ndirs < PAR_MIN) {
        for (size_t i = 0; i < cat->ndirs; i++)
            if (!still_at(cat->root_fd, cat->dirs[i].path, &cat->dirs[i].st)) return 0;
    } else {
        par p;
        p.cat = cat;
        atomic_init(&p.next, 0);
        atomic_init(&p.bad, 0);
        p.warm_files = 0;
        p.attrs = NULL;
        struct timespec t0;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        par_run(&p);
        if (atomic_load(&p.bad)) return 0;
        if (elapsed_ns(&t0) / (int64_t)cat->ndirs * PAR_THREADS > COLD_NS_PER_STAT) {
            atomic_init(&p.next, 0);
            p.warm_files = 1;
            par_run(&p);
        }
    }
    char **out = malloc((cat->ncols ? cat->ncols : 1) * sizeof *out);
    if (!out) return CF_ENOMEM;
    for (size_t i = 0; i < cat->ncols; i++) {
        out[i] = strdup(cat->cols[i].name);
        if (!out[i]) {
            cf_names_free(out, (int64_t)i);
            return CF_ENOMEM;
        }
    }
    *names = out;
    *count = (int64_t)cat->ncols;
    return 1;
}

/* The catalog slots of the attribute files, in cf__catalog_attrs order. */
static const int attr_slots[3] = { CF__CAT_ATTR_V1, CF__CAT_ATTR_V2, CF__CAT_ATTRS_EXT };

/* Fill e for column i: valid when its entry is complete and each attribute
 * file recorded present still has its stamp.  Its directories are checked
 * by the caller (all of them, for the listing): the column directory's
 * stamp keeps the files recorded absent absent. */
static int check_attrs(const cf__catalog *cat, size_t i, cf__catalog_col_attrs *e)
{
    const cat_col *c = &cat->cols[i];
    char buf[PATH_MAX];
    e->name = c->name;
    e->valid = 0;
    if (!c->complete) return 0;
    for (int k = 0; k < 3; k++) {
        const cat_slot *f = &c->slot[attr_slots[k]];
        e->files[k].present = f->state != 0;
        e->files[k].inline_bytes = f->state == 1;
        e->files[k].data = f->data;
        e->files[k].len = f->len;
        if (f->state == 0) continue;
        if (full_path(buf, sizeof buf, "", c->name, slot_names[attr_slots[k]]) ||
            !still_at(cat->root_fd, buf, &f->st))
            return 0;
    }
    e->valid = 1;
    return 1;
}

int cf__catalog_attrs(const cf__catalog *cat, const char *root, cf__catalog_col_attrs **out, size_t *count)
{
    if (!cat || !same_root(cat, root)) return 0;
    cf__catalog_col_attrs *e = calloc(cat->ncols ? cat->ncols : 1, sizeof *e);
    if (!e) return CF_ENOMEM;
    if (cat->ndirs + cat->ncols < PAR_MIN) {
        for (size_t i = 0; i < cat->ndirs; i++)
            if (!still_at(cat->root_fd, cat->dirs[i].path, &cat->dirs[i].st)) {
                free(e);
                return 0;
            }
        for (size_t i = 0; i < cat->ncols; i++) (void)check_attrs(cat, i, &e[i]);
    } else {
        /* one queue of directory and file stamps: on a cold cache the
         * threads keep several inode reads in flight */
        par p;
        p.cat = cat;
        atomic_init(&p.next, 0);
        atomic_init(&p.bad, 0);
        p.warm_files = 0;
        p.attrs = e;
        par_run(&p);
        if (atomic_load(&p.bad)) {
            free(e);
            return 0;
        }
    }
    *out = e;
    *count = cat->ncols;
    return 1;
}

static const cat_col *find(const cf__catalog *cat, const char *name)
{
    size_t lo = 0, hi = cat->ncols;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(cat->cols[mid].name, name);
        if (c == 0) return &cat->cols[mid];
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return NULL;
}

int cf__catalog_column(const cf__catalog *cat, const char *root, const char *name,
                       cf__catalog_file files[CF__CAT_NSLOTS], cf__stamp *dir_stamp)
{
    return cf__catalog_column_held(cat, root, name, files, dir_stamp, NULL);
}

int cf__catalog_column_held(const cf__catalog *cat, const char *root, const char *name,
                            cf__catalog_file files[CF__CAT_NSLOTS], cf__stamp *dir_stamp, int *dirfd)
{
    if (!cat) return 0;
    const cat_col *c = find(cat, name);
    if (!c || !c->complete) return 0;
    /* its own directory is the last; it must be the column's */
    const cat_dir *own = &cat->dirs[c->dirs[c->ndirs - 1]];
    if (strcmp(own->path, name) != 0) return 0;
    /* Its directories (a real directory each, no link, with the entries
     * recorded) and its header, checked by the paths the column's files are
     * read through: a stamp that matches names the recorded file, wherever
     * the root path now leads. */
    char buf[PATH_MAX];
    for (size_t j = 0; j < c->ndirs - (dirfd != NULL); j++) {
        const cat_dir *d = &cat->dirs[c->dirs[j]];
        if (full_path(buf, sizeof buf, root, d->path, NULL) || !still(buf, &d->st)) return 0;
    }
    if (dirfd) {
        /* The directory opened below the File's (a short lookup, no link
         * followed at its name) is the recorded one and holds the recorded
         * header: what the handle reads is this entry's version. */
        int fd = cf__open_dir_handle_nofollow(cat->root_fd, name);
        if (fd < 0) return 0;
        if (!still_at(fd, "", &own->st) ||
            !still_at(fd, slot_names[CF__CAT_HEADER], &c->slot[CF__CAT_HEADER].st)) {
            close(fd);
            return 0;
        }
        *dirfd = fd;
    } else if (full_path(buf, sizeof buf, root, name, slot_names[CF__CAT_HEADER]) ||
               !still(buf, &c->slot[CF__CAT_HEADER].st)) {
        return 0;
    }
    for (int s = 0; s < CF__CAT_NSLOTS; s++) {
        const cat_slot *f = &c->slot[s];
        files[s].present = f->state != 0;
        files[s].inline_bytes = f->state == 1;
        files[s].data = f->data;
        files[s].len = f->len;
        files[s].st = f->st;
    }
    *dir_stamp = own->st;
    return 1;
}

int cf__stamp_still(const char *path, const cf__stamp *s)
{
    return still(path, s);
}

int cf__stamp_still_at(int dfd, const char *rel, const cf__stamp *s)
{
    return still_at(dfd, rel, s);
}

/* ------------------------------------------------------------------ */
/* building */

typedef struct build_dir {
    char *path;
    stamp st;
} build_dir;

typedef struct build_col {
    char *name;
    uint64_t *dirs;
    size_t ndirs;
    int complete;
    cat_slot slot[CF__CAT_NSLOTS];
    char *owned[CF__CAT_NSLOTS]; /* bytes read now (else they point into old) */
} build_col;

typedef struct build {
    const char *root;
    const cf__catalog *old;
    int fine;
    int probed;            /* probe_clock gave `probe`: a reading of the file clock */
    struct timespec probe; /* ... taken after every change this update may trust */
    atomic_int racy;       /* stamps found too new to trust */
    int failed;     /* out of memory, or a directory could not be read */
    build_dir *dirs;
    size_t ndirs, capdirs;
    build_col *cols;
    size_t ncols, capcols;
    uint64_t chain[DEPTH_MAX + 2]; /* directory indices of the current path */
} build;

/* The clock reading a stamp is checked against (see trusted): the file
 * clock now, or the probe's reading when that is later. */
static void clock_before(const build *b, struct timespec *t)
{
    file_clock(t);
    if (b->probed && (b->probe.tv_sec > t->tv_sec || (b->probe.tv_sec == t->tv_sec && b->probe.tv_nsec > t->tv_nsec)))
        *t = b->probe;
}

/* trusted(), counting the stamps that are not (cf__catalog_update may then
 * try again after waiting for the clock) */
static int trust(build *b, const stamp *s, const struct timespec *before)
{
    if (trusted(s, before, b->fine)) return 1;
    atomic_fetch_add(&b->racy, 1);
    return 0;
}

static size_t add_dir(build *b, const char *rel)
{
    if (b->ndirs == b->capdirs) {
        size_t cap = b->capdirs ? b->capdirs * 2 : 256;
        build_dir *d = realloc(b->dirs, cap * sizeof *d);
        if (!d) {
            b->failed = 1;
            return (size_t)-1;
        }
        b->dirs = d;
        b->capdirs = cap;
    }
    build_dir *d = &b->dirs[b->ndirs];
    memset(d, 0, sizeof *d);
    d->path = strdup(rel);
    if (!d->path) {
        b->failed = 1;
        return (size_t)-1;
    }
    return b->ndirs++;
}

static build_col *add_col(build *b, const char *rel, int depth)
{
    if (b->ncols == b->capcols) {
        size_t cap = b->capcols ? b->capcols * 2 : 256;
        build_col *c = realloc(b->cols, cap * sizeof *c);
        if (!c) {
            b->failed = 1;
            return NULL;
        }
        b->cols = c;
        b->capcols = cap;
    }
    build_col *c = &b->cols[b->ncols];
    memset(c, 0, sizeof *c);
    c->name = strdup(rel);
    c->ndirs = (size_t)depth;
    c->dirs = malloc((size_t)depth * sizeof *c->dirs);
    if (!c->name || !c->dirs) {
        free(c->name);
        free(c->dirs);
        b->failed = 1;
        return NULL;
    }
    memcpy(c->dirs, b->chain + 1, (size_t)depth * sizeof *c->dirs);
    b->ncols++;
    return c;
}

/* 1 if the catalog copies the bytes of slot s (up to INLINE_MAX): not
 * colfile-v1 and colfile-stats-v1, whose checksums and statistics only
 * verifying reads and queries use; they are stamped, never copied (nor
 * read), which keeps the catalog, read whole by every open of the File, to
 * the size of the other metadata. */
static int copies_bytes(int s)
{
    return s != CF__CAT_EXT && s != CF__CAT_STATS;
}

/* Reuse the old entry of c if every stamp of it still holds and its
 * directory's recorded stamp is `dir`. */
static int reuse(build *b, build_col *c, const stamp *dir)
{
    if (!b->old) return 0;
    const cat_col *o = find(b->old, c->name);
    if (!o || !o->complete) return 0;
    if (!same_stamp(&b->old->dirs[o->dirs[o->ndirs - 1]].st, dir)) return 0;
    char buf[PATH_MAX];
    for (int s = 0; s < CF__CAT_NSLOTS; s++) {
        const cat_slot *f = &o->slot[s];
        if (f->state == 0) continue;
        if (full_path(buf, sizeof buf, b->root, c->name, slot_names[s]) || !still(buf, &f->st)) return 0;
    }
    memcpy(c->slot, o->slot, sizeof c->slot);
    for (int s = 0; s < CF__CAT_NSLOTS; s++) {
        cat_slot *f = &c->slot[s];
        if (f->state == 1 && !copies_bytes(s)) { /* kept by an older catalog */
            f->state = 2;
            f->data = NULL;
            f->len = 0;
        }
    }
    return 1;
}

/* Record the metadata file of slot s of the column directory open as dfd
 * in f: state 2 (its stamp) when it is larger than INLINE_MAX or not
 * copies_bytes(s), else state 1 (also its bytes).  The clock is read
 * before the file is looked at; its stamp (an fstat of the file opened
 * without following a link, or an lstat: the same) must be trusted and,
 * when read, hold after the read, which takes exactly its size.  Returns
 * 1, or 0 when the slot cannot be recorded. */
static int read_slot(build *b, int dfd, int s, cat_slot *f, char **owned)
{
    const char *name = slot_names[s];
    struct timespec before;
    clock_before(b, &before);
    struct stat st;
    stamp s1, s2;
    if (!copies_bytes(s)) {
        if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) return 0;
        fill_stamp(&st, &s1);
        if (!S_ISREG((mode_t)s1.mode) || !trust(b, &s1, &before)) return 0;
        f->st = s1;
        f->state = 2;
        return 1;
    }
    int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) return 0;
    int ok = 0;
    if (fstat(fd, &st) != 0) goto done;
    fill_stamp(&st, &s1);
    if (!S_ISREG((mode_t)s1.mode) || !trust(b, &s1, &before)) goto done;
    f->st = s1;
    if (s1.size > INLINE_MAX) {
        f->state = 2;
        ok = 1;
        goto done;
    }
    char *text = malloc((size_t)s1.size + 1);
    if (!text) goto done;
    *owned = text;
    size_t got = 0;
    while (got < (size_t)s1.size) {
        ssize_t n = pread(fd, text + got, (size_t)s1.size - got, (off_t)got);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) goto done;
        got += (size_t)n;
    }
    text[got] = '\0';
    if (fstat(fd, &st) != 0) goto done;
    fill_stamp(&st, &s2);
    if (!same_stamp(&s1, &s2)) goto done;
    f->state = 1;
    f->data = text;
    f->len = got;
    ok = 1;
done:
    close(fd);
    return ok;
}

/* Read the metadata files of column directory `abs` (`rel` below the root)
 * into c, after its directory's stamp was taken; the caller checks that
 * stamp again afterwards, which keeps the listing below (files absent stay
 * absent, the names present name the files read) true for that stamp.
 * Returns 1 if every file was read with a trusted stamp that held before
 * and after; 0 (incomplete) as well for a torn column, a path too long to
 * work on, or a symbolic link among the files colfile uses in it. */
static int read_column(build *b, build_col *c, const char *abs, const char *rel)
{
    if (strlen(b->root) + 1 + strlen(rel) + CF__PATH_ROOM >= PATH_MAX) return 0;
    DIR *d = opendir(abs);
    if (!d) return 0;
    int dfd = dirfd(d);
    unsigned char present[CF__CAT_NSLOTS] = { 0 };
    int ok = 1;
    struct dirent *ent;
    while (ok && (ent = readdir(d)) != NULL) {
        const char *nm = ent->d_name;
        if (!cf__name_guarded(nm, 1)) continue;
        if (strcmp(nm, CF__TORN_NAME) == 0) {
            ok = 0;
            break;
        }
        int lnk = 0;
#if defined(DT_LNK) && defined(DT_UNKNOWN)
        if (ent->d_type == DT_LNK) lnk = 1;
        else if (ent->d_type == DT_UNKNOWN)
#endif
        {
            struct stat st;
            lnk = fstatat(dfd, nm, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode);
        }
        if (lnk) ok = 0;
        for (int s = 0; s < CF__CAT_NSLOTS; s++)
            if (strcmp(nm, slot_names[s]) == 0) present[s] = 1;
    }
    for (int s = 0; ok && s < CF__CAT_NSLOTS; s++) {
        cat_slot *f = &c->slot[s];
        if (!present[s]) {
            f->state = 0; /* the directory's stamp keeps it absent */
            continue;
        }
        ok = read_slot(b, dfd, s, f, &c->owned[s]);
    }
    closedir(d);
    return ok;
}

static int has_header(const char *dir)
{
    char buf[PATH_MAX];
    struct stat st;
    return full_path(buf, sizeof buf, dir, "", "header") == 0 && stat(buf, &st) == 0;
}

/* The walk of cf_file_list, recording every directory it depends on.
 * Returns 0, or -1 when the listing cannot be recorded (the catalog then
 * holds no listing: it is not written at all). */
static int scan(build *b, const char *rel, int depth)
{
    if (depth > DEPTH_MAX || b->failed) return -1;
    char abs[PATH_MAX];
    if (full_path(abs, sizeof abs, b->root, rel, NULL)) return -1;
    size_t me = add_dir(b, rel);
    if (me == (size_t)-1) return -1;
    b->chain[depth] = me;
    struct timespec before;
    clock_before(b, &before);
    stamp s1;
    if (take_stamp(abs, &s1) != 0 || !S_ISDIR((mode_t)s1.mode) || !trust(b, &s1, &before)) return -1;
    b->dirs[me].st = s1;
    DIR *d = opendir(abs);
    if (!d) return -1;
    int rc = 0;
    struct dirent *ent;
    while (rc == 0 && (ent = readdir(d)) != NULL) {
        if (ent->d_name[0] == '.') continue;
        char sub[PATH_MAX], subabs[PATH_MAX];
        if (full_path(sub, sizeof sub, rel, "", ent->d_name) || full_path(subabs, sizeof subabs, b->root, sub, NULL)) {
            rc = -1;
            break;
        }
        struct stat st;
        clock_before(b, &before);
        if (lstat(subabs, &st) != 0 || !S_ISDIR(st.st_mode)) continue;
        if (!has_header(subabs)) {
            rc = scan(b, sub, depth + 1);
            continue;
        }
        /* a column: its directory stamp serves the listing (has a header)
         * and its entry (the files recorded absent stay absent) */
        size_t ci = add_dir(b, sub);
        if (ci == (size_t)-1) {
            rc = -1;
            break;
        }
        b->chain[depth + 1] = ci;
        build_col *c = add_col(b, sub, depth + 1);
        if (!c) {
            rc = -1;
            break;
        }
        /* its stamp: the lstat above, taken after reading the clock */
        stamp c1;
        fill_stamp(&st, &c1);
        if (!trust(b, &c1, &before)) {
            rc = -1;
            break;
        }
        b->dirs[ci].st = c1;
        /* its files are read by read_columns, once the walk is done */
    }
    closedir(d);
    if (rc == 0 && !still(abs, &s1)) rc = -1;
    return rc;
}

/* The metadata files of every column the walk found: each column read
 * between its directory's stamp (taken by the walk) and a check that the
 * stamp still holds.  Columns are independent, so a File of many columns
 * reads them on a few threads: the work is system calls, and on uncached
 * inodes waits for the disk (on 10,000 small cached columns the update at
 * close went from 0.26 s to 0.17 s on two cores; two threads or four, the
 * same). */
#define BUILD_THREADS 4
#define BUILD_MIN 256      /* fewer columns: one thread */
#define BUILD_CHUNK 32

typedef struct build_par {
    build *b;
    atomic_size_t next;
    atomic_int bad;
} build_par;

static void *read_columns_worker(void *arg)
{
    build_par *p = arg;
    build *b = p->b;
    for (;;) {
        size_t i = atomic_fetch_add(&p->next, BUILD_CHUNK);
        if (i >= b->ncols || atomic_load(&p->bad)) break;
        size_t end = i + BUILD_CHUNK < b->ncols ? i + BUILD_CHUNK : b->ncols;
        for (; i < end; i++) {
            build_col *c = &b->cols[i];
            const stamp *c1 = &b->dirs[c->dirs[c->ndirs - 1]].st;
            char abs[PATH_MAX];
            if (full_path(abs, sizeof abs, b->root, c->name, NULL)) {
                atomic_store(&p->bad, 1);
                break;
            }
            if (reuse(b, c, c1)) c->complete = 1;
            else c->complete = read_column(b, c, abs, c->name);
            if (!still(abs, c1)) {
                atomic_store(&p->bad, 1);
                break;
            }
        }
    }
    return NULL;
}

/* 0, or -1 when a column changed while it was read (as scan). */
static int read_columns(build *b)
{
    build_par p;
    p.b = b;
    atomic_init(&p.next, 0);
    atomic_init(&p.bad, 0);
    int many = b->ncols >= BUILD_MIN && cf__can_run_parallel();
    run_threads(read_columns_worker, &p, many ? BUILD_THREADS : 1);
    return atomic_load(&p.bad) ? -1 : 0;
}

static void build_free(build *b)
{
    for (size_t i = 0; i < b->ndirs; i++) free(b->dirs[i].path);
    for (size_t i = 0; i < b->ncols; i++) {
        free(b->cols[i].name);
        free(b->cols[i].dirs);
        for (int s = 0; s < CF__CAT_NSLOTS; s++) free(b->cols[i].owned[s]);
    }
    free(b->dirs);
    free(b->cols);
}

static int compare_cols(const void *a, const void *b)
{
    return strcmp(((const build_col *)a)->name, ((const build_col *)b)->name);
}

static void put_stamp(cf__wire_out *o, const stamp *s)
{
    cf__wire_put_u64(o, s->ino);
    cf__wire_put_u64(o, s->size);
    cf__wire_put_u64(o, s->mode);
    cf__wire_put_u64(o, (uint64_t)s->msec);
    cf__wire_put_u64(o, (uint64_t)s->mnsec);
    cf__wire_put_u64(o, (uint64_t)s->csec);
    cf__wire_put_u64(o, (uint64_t)s->cnsec);
}

static void put_text(cf__wire_out *o, const char *s, size_t n)
{
    cf__wire_put_u64(o, (uint64_t)n + 1);
    cf__wire_put(o, s, n);
    cf__wire_put(o, "", 1);
}

static void serialize(build *b, cf__wire_out *o)
{
    cf__wire_put(o, MAGIC, MAGIC_LEN);
    cf__wire_put_u64(o, (uint64_t)b->ndirs);
    for (size_t i = 0; i < b->ndirs; i++) {
        put_text(o, b->dirs[i].path, strlen(b->dirs[i].path));
        put_stamp(o, &b->dirs[i].st);
    }
    cf__wire_put_u64(o, (uint64_t)b->ncols);
    for (size_t i = 0; i < b->ncols; i++) {
        const build_col *c = &b->cols[i];
        put_text(o, c->name, strlen(c->name));
        cf__wire_put_u64(o, (uint64_t)c->ndirs);
        for (size_t j = 0; j < c->ndirs; j++) cf__wire_put_u64(o, c->dirs[j]);
        cf__wire_put_u64(o, (uint64_t)c->complete);
        if (!c->complete) continue;
        for (int s = 0; s < CF__CAT_NSLOTS; s++) {
            const cat_slot *f = &c->slot[s];
            cf__wire_put_u64(o, (uint64_t)f->state);
            if (f->state >= 1) put_stamp(o, &f->st);
            if (f->state == 1) put_text(o, f->data, f->len);
        }
    }
    if (o->failed) return;
    cf__wire_put_u32(o, cf__crc32c_update(0, o->p, o->len));
}

/* Wait until the file clock shows a time later than the present instant
 * (read from the precise clock), so that everything changed before this
 * call carries a ctime strictly older than the clock readings of the scan.
 * The coarse clock lags: it moves once per tick, and its updates can come a
 * few ms late on a busy machine; bounded at about 100 ms. */
static void wait_for_clock(void)
{
    struct timespec now, t, pause = { 0, 500000 };
    if (clock_gettime(CLOCK_REALTIME, &now) != 0) return;
    for (int i = 0; i < 200; i++) {
        file_clock(&t);
        if (t.tv_sec > now.tv_sec || (t.tv_sec == now.tv_sec && t.tv_nsec > now.tv_nsec)) return;
        nanosleep(&pause, NULL);
    }
}

/* A reading of the file clock later than the timestamp of every change
 * made so far, without waiting for the coarse clock, where the file system
 * has multigrain timestamps (Linux 6.13 and later; ext4, XFS, btrfs and
 * tmpfs): there, a file whose ctime was queried gets a fine-grained ctime
 * when it next changes, later than every timestamp handed out before it,
 * and no later change gets an earlier one (the kernel keeps a floor:
 * Documentation/filesystems/multigrain-ts.rst).  So a scratch file is made
 * in the catalog directory, stat'ed (the query), written and stat'ed
 * again, then removed.  Its ctime is such a reading only if it is ahead of
 * the coarse clock: where timestamps come from the coarse clock it never
 * is, and the update then waits for the clock (wait_for_clock).  1 and the
 * reading in *t, or 0. */
static int probe_clock(const char *dir, struct timespec *t)
{
    char tmp[PATH_MAX];
    int fd = cf__open_temporary(dir, "colfile-clock", tmp, sizeof tmp, dir, NULL);
    if (fd < 0) return 0;
    struct stat st;
    struct timespec coarse;
    int ok = fstat(fd, &st) == 0 && pwrite(fd, "", 1, 0) == 1 && fstat(fd, &st) == 0;
    close(fd);
    unlink(tmp);
    file_clock(&coarse);
    if (!ok || st.st_ctim.tv_sec < coarse.tv_sec ||
        (st.st_ctim.tv_sec == coarse.tv_sec && st.st_ctim.tv_nsec <= coarse.tv_nsec))
        return 0;
    *t = st.st_ctim;
    return 1;
}

/* Walk the File and read its columns' files into b: 0, or -1 when no
 * listing can be recorded (scan, read_columns). */
static int build_all(build *b)
{
    int scanned = scan(b, "", 0);
    if (scanned == 0 && !b->failed) scanned = read_columns(b);
    return scanned;
}

int cf__catalog_update(const char *root, const cf__catalog *old, int durable, cf_error *err)
{
    char *dir = catalog_dir(root);
    if (!dir) return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", root);
    struct stat st;
    int rc = 0;
    if (lstat(dir, &st) == 0 && S_ISLNK(st.st_mode)) {
        /* A symbolic link where the catalog belongs (a reserved name) is
         * never followed: removed, and a directory made in its place. */
        if (unlink(dir) != 0 && errno != ENOENT) {
            int e = errno;
            rc = CF_FAIL(err, cf__errno_code(e), "%s: symbolic link where the catalog belongs, cannot remove it: %s",
                         dir, strerror(e));
            free(dir);
            return rc;
        }
    }
    if (lstat(dir, &st) != 0) {
        /* made before the scan, so that the root's stamp includes it */
        if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
            int e = errno;
            rc = CF_FAIL(err, cf__errno_code(e), "%s: cannot make the catalog directory: %s", dir, strerror(e));
            free(dir);
            return rc;
        }
        if (durable && (rc = cf__fsync_path(root, err))) {
            free(dir);
            return rc;
        }
    } else if (!S_ISDIR(st.st_mode)) {
        rc = CF_FAIL(err, CF_ENOTFILE, "%s: not a directory; no catalog is kept", dir);
        free(dir);
        return rc;
    }
    build b;
    memset(&b, 0, sizeof b);
    b.root = root;
    b.old = old;
    b.fine = fine_timestamps(root);
    atomic_init(&b.racy, 0);
    /* The writer's own last changes are trusted once the file clock is
     * past them: read through a probe where the file system allows, else
     * waited for (a few ms: one tick of the coarse clock and its lag). */
    b.probed = b.fine && probe_clock(dir, &b.probe);
    if (b.fine && !b.probed) wait_for_clock();
    int scanned = build_all(&b);
    if (b.probed && atomic_load(&b.racy) && !b.failed) {
        /* stamps newer than the probe (changes during the update): again,
         * after the wait, as without a probe */
        build_free(&b);
        memset(&b, 0, sizeof b);
        b.root = root;
        b.old = old;
        b.fine = 1;
        atomic_init(&b.racy, 0);
        wait_for_clock();
        scanned = build_all(&b);
    }
    cf__wire_out o = { NULL, 0, 0, 0 };
    if (b.failed) {
        rc = CF_FAIL(err, CF_ENOMEM, "%s: out of memory", root);
    } else if (scanned != 0) {
        /* changing under us, or not readable: leave no stale listing */
        rc = cf__remove_if_exists(dir, CF__CATALOG_NAME, err);
    } else {
        if (b.ncols) qsort(b.cols, b.ncols, sizeof *b.cols, compare_cols);
        serialize(&b, &o);
        if (o.failed) rc = CF_FAIL(err, CF_ENOMEM, "%s: out of memory", root);
        else if (old && old->len == o.len && memcmp(old->buf, o.p, o.len) == 0) rc = 0; /* unchanged */
        else if ((rc = cf__write_file_atomic(dir, CF__CATALOG_NAME, o.p, o.len, durable, err)) == 0 && durable)
            rc = cf__fsync_path(dir, err);
    }
    free(o.p);
    build_free(&b);
    free(dir);
    return rc;
}
