/* catalog_shard.c - the sharded catalog (docs/format.md 8.5): reading its
 * index (the File's generation, the stamps of the root and the groups, the
 * list of shards) and, on first use, the one shard a lookup needs; and
 * writing the shards that changed and the index.
 *
 * Wire format (wire.h, little endian; a text is u64 n then n bytes, the
 * last NUL; a stamp is seven u64, as in catalog.c):
 *   colfile-catalog-index: "CFIDX4\n" NUL; u64 generation; u64 the '+'
 *     open in the generation file's first `generation` bytes; u64 D, D
 *     directories in strictly increasing path order (the root "" first,
 *     then every group), each a text and a stamp; u64 S, S shards in
 *     name order, each: text file name, text first column, text last
 *     column, u64 columns, u64 size in bytes, u64 its CRC32C (the one it
 *     ends with); a file name "" (a small catalog): the shard's bytes
 *     follow;
 *     u32 CRC32C of everything before it.
 *   colfile-catalog-shard-*: "CFSHD3\n" NUL; u64 C; C columns in strictly
 *     increasing name order, each: text name, stamp of its directory, then
 *     `complete` and the slots as in the single-file catalog; u32 CRC32C.
 * A shard is used only with the index that names it, at the size and
 * CRC32C recorded there.  The index before the open marks ("CFIDX3\n",
 * no such u64) is still read; its marks are counted from the start.
 */
#include "catalog.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "checksum.h"
#include "error.h"
#include "fsutil.h"
#include "names.h"
#include "wire.h"

#include "catalog_impl.h"

/* strcmp of path with the first len bytes of key (as a string). */
static int cmp_prefix(const char *path, const char *key, size_t len)
{
    int c = strncmp(path, key, len);
    if (c) return c;
    return path[len] ? 1 : 0;
}

uint64_t cf__cat_find_dir(const cf__catalog *cat, const char *path, size_t len)
{
    size_t lo = 0, hi = cat->ndirs;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = cmp_prefix(cat->dirs[mid].path, path, len);
        if (c == 0) return mid;
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return (uint64_t)-1;
}

size_t cf__cat_shard_of(const cf__catalog *cat, const char *name)
{
    size_t lo = 0, hi = cat->nshards;
    while (lo < hi) { /* the first shard whose first name is after name */
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(cat->shards[mid].first, name) <= 0) lo = mid + 1;
        else hi = mid;
    }
    if (lo == 0 || strcmp(name, cat->shards[lo - 1].last) > 0) return (size_t)-1;
    return lo - 1;
}

/* A column or group name as a catalog may record it: valid (2.2), not "."
 * and not ending in "/.". */
static int usable_name(const char *name)
{
    cf_error ignored;
    size_t n = strlen(name);
    return cf_name_check(name, &ignored) == 0 && strcmp(name, ".") != 0 &&
           !(n >= 2 && strcmp(name + n - 2, "/.") == 0);
}

int cf__cat_parse_index(cf__catalog *cat)
{
    cf__wire_in in = { cat->buf + MAGIC_LEN, cat->buf + cat->len - 4 };
    uint64_t nd, ns;
    if (cf__wire_get_u64(&in, &cat->generation)) return -1;
    cat->marks = (cf__cat_marks){ cat->generation, 0, 0 };
    if (memcmp(cat->buf, INDEX_MAGIC, MAGIC_LEN) == 0) {
        /* the marks open at the generation: at most one per byte */
        if (cf__wire_get_u64(&in, &cat->marks.open) || cat->marks.open > cat->generation) return -1;
        cat->marks.known = 1;
    }
    if (cf__wire_get_u64(&in, &nd) || nd == 0 || nd > (uint64_t)(in.end - in.p) / 64) return -1;
    cat->dirs = calloc((size_t)nd, sizeof *cat->dirs);
    if (!cat->dirs) return -1;
    for (size_t i = 0; i < (size_t)nd; i++) {
        cat_dir *d = &cat->dirs[i];
        if (cf__cat_get_text(&in, &d->path, NULL) || cf__cat_get_stamp(&in, &d->st)) return -1;
        if ((i == 0) != (d->path[0] == '\0')) return -1; /* the root first, once */
        if (i > 0 && (strcmp(cat->dirs[i - 1].path, d->path) >= 0 || !usable_name(d->path))) return -1;
        /* its parent recorded (a prefix sorts before it) */
        cat->ndirs = i;
        const char *slash = strrchr(d->path, '/');
        if (i > 0 && cf__cat_find_dir(cat, d->path, slash ? (size_t)(slash - d->path) : 0) == (uint64_t)-1)
            return -1;
    }
    cat->ndirs = (size_t)nd;
    if (cf__wire_get_u64(&in, &ns) || ns > (uint64_t)(in.end - in.p) / 48) return -1;
    cat->shards = calloc(ns ? (size_t)ns : 1, sizeof *cat->shards);
    if (!cat->shards) return -1;
    cat->nshards = (size_t)ns;
    for (size_t i = 0; i < cat->nshards; i++) {
        cat_shard *s = &cat->shards[i];
        uint64_t crc;
        if (cf__cat_get_text(&in, &s->file, NULL) || cf__cat_get_text(&in, &s->first, NULL) ||
            cf__cat_get_text(&in, &s->last, NULL) || cf__wire_get_u64(&in, &s->count) ||
            cf__wire_get_u64(&in, &s->size) || cf__wire_get_u64(&in, &crc))
            return -1;
        size_t pl = strlen(CF__CATALOG_SHARD_PREFIX);
        if (s->file[0] && (strncmp(s->file, CF__CATALOG_SHARD_PREFIX, pl) != 0 || strchr(s->file, '/') || !s->file[pl]))
            return -1;
        if (s->count == 0 || crc > 0xffffffffu || s->size > CF__METADATA_MAX || strcmp(s->first, s->last) > 0)
            return -1;
        if (!s->file[0]) { /* its bytes follow */
            if (s->size > (uint64_t)(in.end - in.p)) return -1;
            s->buf = (unsigned char *)in.p;
            s->in_index = 1;
            in.p += s->size;
        }
        if (i > 0 && strcmp(cat->shards[i - 1].last, s->first) >= 0) return -1;
        s->crc = (uint32_t)crc;
        atomic_init(&s->state, 0);
    }
    return in.p == in.end ? 0 : -1;
}

/* Parse shard s (its bytes checked) into its columns: 0 or -1. */
static int parse_shard(const cf__catalog *cat, cat_shard *s)
{
    cf__wire_in in = { s->buf + MAGIC_LEN, s->buf + s->size - 4 };
    uint64_t nc;
    if (cf__wire_get_u64(&in, &nc) || nc != s->count || nc > (uint64_t)(in.end - in.p) / 64) return -1;
    size_t slashes = 0;
    for (size_t i = 0; i < s->size; i++) slashes += s->buf[i] == '/';
    s->cols = calloc((size_t)nc, sizeof *s->cols);
    s->dir_index = malloc((slashes + 1) * sizeof *s->dir_index);
    if (!s->cols || !s->dir_index) return -1;
    size_t used = 0;
    for (size_t i = 0; i < (size_t)nc; i++) {
        cat_col *c = &s->cols[i];
        if (cf__cat_get_text(&in, &c->name, NULL) || cf__cat_get_stamp(&in, &c->own)) return -1;
        if (i > 0 && strcmp(s->cols[i - 1].name, c->name) >= 0) return -1;
        if (!usable_name(c->name)) return -1;
        /* its groups are recorded in the index; its own directory is none of them */
        c->dirs = s->dir_index + used;
        for (const char *p = c->name; (p = strchr(p, '/')) != NULL; p++) {
            uint64_t d = cf__cat_find_dir(cat, c->name, (size_t)(p - c->name));
            if (d == (uint64_t)-1) return -1;
            c->dirs[c->ndirs++] = d;
        }
        used += c->ndirs;
        if (cf__cat_find_dir(cat, c->name, strlen(c->name)) != (uint64_t)-1) return -1;
        if (cf__cat_get_entry(&in, c)) return -1;
    }
    if (nc == 0 || strcmp(s->cols[0].name, s->first) != 0 || strcmp(s->cols[nc - 1].name, s->last) != 0) return -1;
    s->ncols = (size_t)nc;
    return in.p == in.end ? 0 : -1;
}

static int load_shard(const cf__catalog *cat, cat_shard *s)
{
    size_t len = (size_t)s->size;
    if (!s->in_index && cf__cat_read(cat->root_fd, s->file, (size_t)s->size, &s->buf, &len) != 0) return -1;
    /* its CRC32C (of the bytes before it) is the one the index recorded */
    if (cf__cat_check_file(s->buf, len, SHARD_MAGIC) != 0 || cf__crc32c_update(0, s->buf, len - 4) != s->crc) return -1;
    return parse_shard(cat, s);
}

int cf__cat_load_shard(const cf__catalog *ccat, size_t i)
{
    cf__catalog *cat = (cf__catalog *)ccat; /* a cache filled once */
    cat_shard *s = &cat->shards[i];
    int state = atomic_load(&s->state);
    if (state) return state == 1;
    pthread_mutex_lock(&cat->lock);
    if (atomic_load(&s->state) == 0) {
        int ok = load_shard(cat, s) == 0;
        if (!ok) { /* unusable: what it holds is never looked at */
            free(s->cols);
            s->cols = NULL;
            s->ncols = 0;
        }
        atomic_store(&s->state, ok ? 1 : -1);
    }
    pthread_mutex_unlock(&cat->lock);
    return atomic_load(&s->state) == 1;
}

/* ------------------------------------------------------------------ */
/* writing */

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

/* ------------------------------------------------------------------ */
/* writing: the shards and their index */

static const stamp *own_stamp(const build *b, const build_col *c) { return &b->dirs[c->dirs[c->ndirs - 1]].st; }

/* The bytes column c's entry takes in a shard. */
static size_t entry_bytes(const build_col *c)
{
    size_t n = 8 + strlen(c->name) + 1 + 56 + 8;
    for (int s = 0; c->complete && s < CF__CAT_NSLOTS; s++)
        n += 8 + (c->slot[s].state ? 56 : 0) + (c->slot[s].state == 1 ? 8 + c->slot[s].len + 1 : 0);
    return n;
}

static void put_entry(cf__wire_out *o, const build *b, const build_col *c)
{
    put_text(o, c->name, strlen(c->name));
    put_stamp(o, own_stamp(b, c));
    cf__wire_put_u64(o, (uint64_t)c->complete);
    for (int s = 0; c->complete && s < CF__CAT_NSLOTS; s++) {
        const cat_slot *f = &c->slot[s];
        cf__wire_put_u64(o, (uint64_t)f->state);
        if (f->state >= 1) put_stamp(o, &f->st);
        if (f->state == 1) put_text(o, f->data, f->len);
    }
}

/* The length of the group part of a column name ("" for the root). */
static size_t parent_len(const char *name)
{
    const char *slash = strrchr(name, '/');
    return slash ? (size_t)(slash - name) : 0;
}

/* Which shard of the old (sharded) catalog would hold name: 1 + its index,
 * or 0.  New shards keep the old ones' boundaries, so that a change to one
 * column changes one shard. */
static size_t old_bucket(const cf__catalog *old, const char *name)
{
    if (!old || !old->sharded) return 0;
    size_t lo = 0, hi = old->nshards;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(old->shards[mid].first, name) <= 0) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

typedef struct shard_out {
    size_t from, to; /* its columns: b->cols[from..to) */
    char file[64];   /* "": kept in the index */
    uint64_t size;
    uint32_t crc;
    unsigned char *bytes; /* kept in the index: its bytes */
} shard_out;

/* Cut the sorted columns into shards: one group each, within the old
 * shards' boundaries, at most SHARD_COLS columns and SHARD_BYTES bytes of
 * entries (but for a single column).  NULL: out of memory. */
static shard_out *cut_shards(const build *b, size_t *count)
{
    shard_out *out = calloc(b->ncols ? b->ncols : 1, sizeof *out);
    if (!out) return NULL;
    size_t n = 0, i = 0;
    while (i < b->ncols) {
        const char *n0 = b->cols[i].name;
        size_t start = i, bytes = 0, pl = parent_len(n0), bucket = old_bucket(b->old, n0);
        for (; i < b->ncols; i++) {
            const char *nm = b->cols[i].name;
            size_t e = entry_bytes(&b->cols[i]);
            if (i > start && (parent_len(nm) != pl || memcmp(nm, n0, pl) != 0 || old_bucket(b->old, nm) != bucket ||
                              i - start >= SHARD_COLS || bytes + e > SHARD_BYTES))
                break;
            bytes += e;
        }
        out[n].from = start;
        out[n].to = i;
        out[n].size = (uint64_t)(2 * MAGIC_LEN + bytes + 4); /* magic, count, entries, CRC32C */
        n++;
    }
    *count = n;
    return out;
}

/* 1 if the old index lists a shard of this name and size (which its name,
 * made of its CRC32C and size, says is these bytes) and the file is there
 * with that size. */
static int shard_kept(const build *b, const char *dir, const shard_out *s)
{
    if (!b->old || !b->old->sharded) return 0;
    for (size_t i = 0; i < b->old->nshards; i++) {
        const cat_shard *o = &b->old->shards[i];
        if (strcmp(o->file, s->file) != 0 || o->size != s->size || o->crc != s->crc) continue;
        char path[PATH_MAX];
        struct stat st;
        return cf__cat_full_path(path, sizeof path, dir, s->file, NULL) == 0 && lstat(path, &st) == 0 &&
               S_ISREG(st.st_mode) && (uint64_t)st.st_size == s->size;
    }
    return 0;
}

/* Write the shards that are not on disk already (each named by its CRC32C
 * and size), filling sh[].file and crc; or, `in_index`, keep their bytes
 * for the index. */
static int write_shards(const build *b, const char *dir, shard_out *sh, size_t n, int in_index, int durable,
                        cf_error *err)
{
    for (size_t k = 0; k < n; k++) {
        cf__wire_out o = { NULL, 0, 0, 0 };
        cf__wire_put(&o, SHARD_MAGIC, MAGIC_LEN);
        cf__wire_put_u64(&o, (uint64_t)(sh[k].to - sh[k].from));
        for (size_t i = sh[k].from; i < sh[k].to; i++) put_entry(&o, b, &b->cols[i]);
        sh[k].crc = o.failed ? 0 : cf__crc32c_update(0, o.p, o.len);
        cf__wire_put_u32(&o, sh[k].crc);
        if (o.failed) {
            free(o.p);
            return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", b->root);
        }
        sh[k].size = (uint64_t)o.len;
        if (in_index) {
            sh[k].file[0] = '\0';
            sh[k].bytes = o.p;
            continue;
        }
        snprintf(sh[k].file, sizeof sh[k].file, "%s%08x-%llx", CF__CATALOG_SHARD_PREFIX, (unsigned)sh[k].crc,
                 (unsigned long long)sh[k].size);
        int rc = shard_kept(b, dir, &sh[k]) ? 0 : cf__write_file_atomic(dir, sh[k].file, o.p, o.len, durable, err);
        free(o.p);
        if (rc) return rc;
    }
    return 0;
}

static int compare_dir_ptrs(const void *a, const void *b)
{
    return strcmp((*(const build_dir *const *)a)->path, (*(const build_dir *const *)b)->path);
}

/* The index: the generation, the root and the groups (every directory of
 * the walk that is no column's own), sorted, and the shards. */
static int serialize_index(const build *b, const shard_out *sh, size_t n, cf__wire_out *o)
{
    unsigned char *own = calloc(b->ndirs ? b->ndirs : 1, 1);
    const build_dir **groups = malloc((b->ndirs ? b->ndirs : 1) * sizeof *groups);
    if (!own || !groups) {
        free(own);
        free(groups);
        return -1;
    }
    for (size_t i = 0; i < b->ncols; i++) own[b->cols[i].dirs[b->cols[i].ndirs - 1]] = 1;
    size_t ng = 0;
    for (size_t i = 0; i < b->ndirs; i++)
        if (!own[i]) groups[ng++] = &b->dirs[i];
    qsort(groups, ng, sizeof *groups, compare_dir_ptrs);
    cf__wire_put(o, INDEX_MAGIC, MAGIC_LEN);
    cf__wire_put_u64(o, b->generation);
    cf__wire_put_u64(o, b->open_marks);
    cf__wire_put_u64(o, (uint64_t)ng);
    for (size_t i = 0; i < ng; i++) {
        put_text(o, groups[i]->path, strlen(groups[i]->path));
        put_stamp(o, &groups[i]->st);
    }
    cf__wire_put_u64(o, (uint64_t)n);
    for (size_t k = 0; k < n; k++) {
        const char *first = b->cols[sh[k].from].name, *last = b->cols[sh[k].to - 1].name;
        put_text(o, sh[k].file, strlen(sh[k].file));
        put_text(o, first, strlen(first));
        put_text(o, last, strlen(last));
        cf__wire_put_u64(o, (uint64_t)(sh[k].to - sh[k].from));
        cf__wire_put_u64(o, sh[k].size);
        cf__wire_put_u64(o, (uint64_t)sh[k].crc);
        if (!sh[k].file[0]) cf__wire_put(o, sh[k].bytes, (size_t)sh[k].size);
    }
    if (!o->failed) cf__wire_put_u32(o, cf__crc32c_update(0, o->p, o->len));
    free(own);
    free(groups);
    return o->failed ? -1 : 0;
}

/* Whether the new index (arg: the shards written, then their count)
 * names shard file f. */
typedef struct new_shards {
    const shard_out *sh;
    size_t n;
} new_shards;

static int names_shard(const char *f, void *arg)
{
    const new_shards *ns = arg;
    for (size_t k = 0; k < ns->n; k++)
        if (ns->sh[k].file[0] && strcmp(ns->sh[k].file, f) == 0) return 1;
    return 0;
}

/* After the index is replaced: what no reader of it uses (catalog_sweep.c). */
static void remove_old(const build *b, const char *dir, const shard_out *sh, size_t n)
{
    new_shards ns = { sh, n };
    const cf__catalog *cats[2] = { b->old, b->disk != b->old ? b->disk : NULL };
    cf__cat_remove_unused(dir, cats, 2, names_shard, &ns);
}

int cf__cat_write(build *b, const char *dir, int durable, cf_error *err)
{
    size_t n = 0;
    shard_out *sh = cut_shards(b, &n);
    if (!sh) return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", b->root);
    uint64_t total = 0;
    for (size_t k = 0; k < n; k++) total += sh[k].size;
    int rc = write_shards(b, dir, sh, n, total <= INLINE_SHARDS_MAX, durable, err);
    cf__wire_out o = { NULL, 0, 0, 0 };
    if (rc == 0 && serialize_index(b, sh, n, &o) != 0) rc = CF_FAIL(err, CF_ENOMEM, "%s: out of memory", b->root);
    if (rc == 0 && o.len > CF__METADATA_MAX) {
        /* readers would refuse it: no catalog, so that they scan */
        (void)cf__remove_if_exists(dir, CF__CATALOG_INDEX_NAME, err);
        rc = CF_FAIL(err, CF_ERANGE, "%s: the catalog index would take %zu bytes, more than the %zu a reader accepts "
                                     "(too many groups): no catalog is kept, listings scan the directories",
                     dir, o.len, (size_t)CF__METADATA_MAX);
    } else if (rc == 0) {
        int same = b->old && b->old->sharded && b->old->len == o.len && memcmp(b->old->buf, o.p, o.len) == 0;
        if (!same && (rc = cf__write_file_atomic(dir, CF__CATALOG_INDEX_NAME, o.p, o.len, durable, err)) == 0 &&
            durable)
            rc = cf__fsync_path(dir, err);
        if (rc == 0) remove_old(b, dir, sh, n);
    }
    free(o.p);
    for (size_t k = 0; k < n; k++) free(sh[k].bytes);
    free(sh);
    return rc;
}
