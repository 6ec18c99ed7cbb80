/* bf_file.c - BigFile and the serial block calls: open, create, list,
 * flush, close, grow. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bf_internal.h"
#include "colfile/bigfile/colfile-bigfile.h"

static char *dup_str(const char *s)
{
    size_t n = strlen(s);
    char *r = malloc(n + 1);
    if (r) memcpy(r, s, n + 1);
    return r;
}

static int durable = 1;

int colfile_bigfile_set_durable(int on)
{
    int was = durable;
    durable = on != 0;
    return was;
}

int bf__write_flags(int flags)
{
    return durable ? flags : flags | CF_OPEN_NODURABLE;
}

int big_file_set_buffer_size(size_t bytes)
{
    (void)bytes; /* colfile sizes its own pieces */
    return 0;
}

int big_file_open(BigFile *bf, const char *basename)
{
    struct stat st;
    if (stat(basename, &st) != 0) {
        bf__set_error("%s: no such File (%s)", basename, strerror(errno));
        return -1;
    }
    bf->basename = dup_str(basename);
    return 0;
}

int big_file_create(BigFile *bf, const char *basename)
{
    cf_error e;
    cf_file *f;
    bf->basename = dup_str(basename);
    if (cf_file_open(&f, basename, bf__write_flags(CF_OPEN_WRITE | CF_OPEN_CREATE), &e)) {
        bf__set_cf_error(&e);
        return -1;
    }
    cf_file_close(f);
    return 0;
}

int big_file_close(BigFile *bf)
{
    free(bf->basename);
    bf->basename = NULL;
    return 0;
}

/* Depth-first order with each directory's entries sorted: compare the
 * names component by component, a name before the names below it. */
static int depth_first_cmp(const void *pa, const void *pb)
{
    const char *a = *(char *const *)pa, *b = *(char *const *)pb;
    for (;;) {
        size_t la = strcspn(a, "/"), lb = strcspn(b, "/");
        size_t n = la < lb ? la : lb;
        int c = memcmp(a, b, n);
        if (c) return c;
        if (la != lb) return la < lb ? -1 : 1;
        if (!a[la] || !b[lb]) return (a[la] != 0) - (b[lb] != 0);
        a += la + 1;
        b += lb + 1;
    }
}

int big_file_list(BigFile *bf, char ***blocknames, int *Nblocks)
{
    cf_error e;
    cf_file *f;
    char **names = NULL;
    int64_t n = 0;
    *Nblocks = 0;
    *blocknames = NULL;
    if (cf_file_open(&f, bf->basename, CF_OPEN_READ, &e) == 0) {
        int rc = cf_file_list(f, &names, &n, &e);
        cf_file_close(f);
        if (rc) {
            bf__set_cf_error(&e);
            return -1;
        }
    }
    qsort(names, (size_t)n, sizeof *names, depth_first_cmp);
    char **out = malloc(sizeof *out * (size_t)(n > 0 ? n : 1));
    if (!out) {
        cf_names_free(names, n);
        bf__set_error("%s: out of memory listing blocks", bf->basename);
        return -1;
    }
    /* bigfile hands the list out last found first */
    for (int64_t i = 0; i < n; i++) out[i] = dup_str(names[n - 1 - i]);
    cf_names_free(names, n);
    *blocknames = out;
    *Nblocks = (int)n;
    return 0;
}

/* A File handle for a block: writable where the File is. */
static int open_file(cf_file **f, const char *path, cf_error *e)
{
    if (cf_file_open(f, path, bf__write_flags(CF_OPEN_WRITE), e) == 0) return 0;
    return cf_file_open(f, path, CF_OPEN_READ, e);
}

int big_file_open_block(BigFile *bf, BigBlock *block, const char *blockname)
{
    cf_error e;
    cf_file *f = NULL;
    cf_column *c = NULL;
    char *name = bf__column_name(blockname);
    char *base = bf__path_join(bf->basename, blockname);
    memset(block, 0, sizeof *block);
    if (!name || !base) {
        bf__set_error("%s: out of memory", blockname);
        goto fail;
    }
    if (open_file(&f, bf->basename, &e) || cf_column_open(&c, f, name, &e)) {
        bf__set_cf_error(&e);
        goto fail;
    }
    BigAttrSet *st = bf__state_new(f, c, 1);
    if (!st) {
        bf__set_error("%s: out of memory", base);
        goto fail;
    }
    free(name);
    if (bf__block_fill(block, st, base)) {
        cf_column_close(c, NULL);
        st->col = NULL;
        bf__block_free(block);
        return -1;
    }
    return 0;
fail:
    cf_column_close(c, NULL);
    cf_file_close(f);
    free(name);
    free(base);
    return -1;
}

/* The rows of each file as colfile takes them. */
static int64_t *rows_of(int Nfile, const size_t fsize[])
{
    int64_t *r = malloc(sizeof *r * (size_t)(Nfile > 0 ? Nfile : 1));
    if (r)
        for (int i = 0; i < Nfile; i++) r[i] = (int64_t)fsize[i];
    return r;
}

/* Create a column for big_file_create_block / its MPI twin, on rank 0:
 * bigfile's dtype NULL is DTYPE i8 without files. */
int bf__create_column(cf_column **c, cf_file *f, const char *blockname, const char *dtype, int nmemb,
                      int Nfile, const size_t fsize[], cf_error *e)
{
    char *name = bf__column_name(blockname);
    if (!name) {
        bf__set_error("%s: out of memory", blockname);
        return -1;
    }
    size_t ln = strlen(name);
    int attrs_only = strcmp(name, ".") == 0 || (ln >= 2 && strcmp(name + ln - 2, "/.") == 0);
    int rc;
    if (attrs_only || (!dtype && nmemb == 0)) {
        rc = cf_column_create(c, f, name, NULL, 0, 0, 0, e);
    } else if (!dtype) {
        rc = cf_column_create_blobs(c, f, name, "i8", nmemb, 0, NULL, e);
    } else if (nmemb < 1) {
        cf_error *x = e;
        snprintf(x->message, sizeof x->message,
                 "%s: nmemb must be at least 1 for a block with a dtype, got %d", name, nmemb);
        x->code = CF_EARG;
        rc = CF_EARG;
    } else {
        int64_t *rows = rows_of(Nfile, fsize);
        rc = rows ? cf_column_create_blobs(c, f, name, dtype, nmemb, Nfile, rows, e) : CF_ENOMEM;
        if (!rows) snprintf(e->message, sizeof e->message, "%s: out of memory", name);
        free(rows);
    }
    free(name);
    if (rc) bf__set_cf_error(e);
    return rc ? -1 : 0;
}

int big_file_create_block(BigFile *bf, BigBlock *block, const char *blockname, const char *dtype,
                          int nmemb, int Nfile, const size_t fsize[])
{
    cf_error e;
    cf_file *f = NULL;
    cf_column *c = NULL;
    memset(block, 0, sizeof *block);
    if (cf_file_open(&f, bf->basename, bf__write_flags(CF_OPEN_WRITE | CF_OPEN_CREATE), &e)) {
        bf__set_cf_error(&e);
        return -1;
    }
    if (bf__create_column(&c, f, blockname, dtype, nmemb, Nfile, fsize, &e)) {
        cf_file_close(f);
        return -1;
    }
    char *base = bf__path_join(bf->basename, blockname);
    BigAttrSet *st = base ? bf__state_new(f, c, 1) : NULL;
    if (!st) {
        bf__set_error("%s: out of memory", blockname);
        cf_column_discard(c);
        cf_column_close(c, NULL);
        cf_file_close(f);
        free(base);
        return -1;
    }
    if (bf__block_fill(block, st, base)) {
        cf_column_discard(c);
        cf_column_close(c, NULL);
        st->col = NULL;
        bf__block_free(block);
        return -1;
    }
    return 0;
}

int big_block_flush(BigBlock *block)
{
    cf_error e;
    BigAttrSet *st = block->attrset;
    if (!st || !st->col) {
        bf__set_error("big_block_flush: the block is not open");
        return -1;
    }
    if (cf_column_writable(st->col) && cf_column_flush(st->col, &e)) {
        bf__set_cf_error(&e);
        return -1;
    }
    block->dirty = 0;
    st->dirty = 0;
    bf__block_sums(block);
    return 0;
}

int big_block_close(BigBlock *block)
{
    cf_error e;
    int rc = 0;
    BigAttrSet *st = block->attrset;
    if (!st) {
        bf__set_error("big_block_close: the block is not open");
        return -1;
    }
    if (st->col && cf_column_close(st->col, &e)) {
        bf__set_cf_error(&e);
        rc = -1;
    }
    st->col = NULL;
    bf__block_free(block);
    return rc;
}

/* Append files to the handle and to the members; shared with MPI grow. */
int bf__grow_column(BigBlock *bb, int Nfile_grow, const size_t fsize_grow[])
{
    cf_error e;
    cf_column *c = bb->attrset->col;
    for (int i = 0; i < Nfile_grow; i++) {
        if (cf_column_grow(c, (int64_t)fsize_grow[i], 1, &e)) {
            bf__set_cf_error(&e);
            return -1;
        }
    }
    return 0;
}

/* Re-read the layout members from the handle after a grow. */
int bf__refill_layout(BigBlock *bb)
{
    char *base = bb->basename;
    BigAttrSet *st = bb->attrset;
    int dirty = bb->dirty;
    free(bb->fsize);
    free(bb->foffset);
    free(bb->fchecksum);
    int rc = bf__block_fill(bb, st, base);
    bb->dirty = dirty;
    return rc;
}

int big_block_grow(BigBlock *bb, int Nfile_grow, const size_t fsize_grow[])
{
    if (!bb->attrset || !bb->attrset->col) {
        bf__set_error("big_block_grow: the block is not open");
        return -1;
    }
    int rc = bf__grow_column(bb, Nfile_grow, fsize_grow);
    if (bf__refill_layout(bb)) return -1;
    bb->dirty = 1;
    return rc;
}
