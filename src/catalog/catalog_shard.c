/* catalog_shard.c - reading the sharded catalog (docs/format.md 8.5): its
 * index (the File's generation, the stamps of the root and the groups, the
 * list of shards) and, on first use, the one shard a lookup needs.
 *
 * Wire format (wire.h, little endian; a text is u64 n then n bytes, the
 * last NUL; a stamp is seven u64, as in catalog.c):
 *   colfile-catalog-index: "CFIDX3\n" NUL; u64 generation; u64 D, D
 *     directories in strictly increasing path order (the root "" first,
 *     then every group), each a text and a stamp; u64 S, S shards in
 *     name order, each: text file name, text first column, text last
 *     column, u64 columns, u64 size in bytes, u64 its CRC32C (the one it
 *     ends with);
 *     u32 CRC32C of everything before it.
 *   colfile-catalog-shard-*: "CFSHD3\n" NUL; u64 C; C columns in strictly
 *     increasing name order, each: text name, stamp of its directory, then
 *     `complete` and the slots as in the single-file catalog; u32 CRC32C.
 * A shard is used only with the index that names it, at the size and
 * CRC32C recorded there.
 */
#include "catalog.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "checksum.h"
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
    if (cf__wire_get_u64(&in, &ns) || ns > (uint64_t)(in.end - in.p) / 64) return -1;
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
        if (strncmp(s->file, CF__CATALOG_SHARD_PREFIX, pl) != 0 || strchr(s->file, '/') || !s->file[pl]) return -1;
        if (s->count == 0 || crc > 0xffffffffu || s->size > CF__METADATA_MAX || strcmp(s->first, s->last) > 0)
            return -1;
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
    size_t len = 0;
    if (cf__cat_read(cat->root_fd, s->file, (size_t)s->size, &s->buf, &len) != 0) return -1;
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
