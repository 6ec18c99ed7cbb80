/* bf_block.c - the private block state and BigBlock's members.
 *
 * A BigBlock is a colfile column handle (in BigBlock.attrset) with
 * bigfile's public members filled from it.  Each block holds a File handle
 * of its own, so that, as in bigfile, blocks stay usable after
 * big_file_close. */
#include <stdlib.h>
#include <string.h>

#include "bf_internal.h"

BigAttrSet *bf__state_new(cf_file *f, cf_column *c, int owns_file)
{
    BigAttrSet *st = calloc(1, sizeof *st);
    if (!st) return NULL;
    st->file = f;
    st->col = c;
    st->owns_file = owns_file;
    return st;
}

void bf__attrs_invalidate(BigAttrSet *st)
{
    if (!st) return;
    for (size_t i = 0; i < st->ncache; i++) {
        free(st->cache[i].name);
        free(st->cache[i].data);
    }
    free(st->cache);
    st->cache = NULL;
    st->ncache = 0;
    st->cache_valid = 0;
}

char *bf__path_join(const char *a, const char *b)
{
    size_t la = a ? strlen(a) : 0, lb = strlen(b);
    char *r = malloc(la + lb + 2);
    if (!r) return NULL;
    if (la == 0) {
        memcpy(r, b, lb + 1);
    } else {
        memcpy(r, a, la);
        size_t k = la;
        if (a[la - 1] != '/') r[k++] = '/';
        memcpy(r + k, b, lb + 1);
    }
    return r;
}

char *bf__column_name(const char *blockname)
{
    size_t n = strlen(blockname);
    char *r = malloc(n + 2);
    if (!r) return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (blockname[i] == '/' && (k == 0 || r[k - 1] == '/')) continue;
        r[k++] = blockname[i];
    }
    while (k > 0 && r[k - 1] == '/') k--;
    if (k == 0) r[k++] = '.';
    r[k] = '\0';
    return r;
}

void bf__block_sums(BigBlock *bb)
{
    cf_column *c = bb->attrset ? bb->attrset->col : NULL;
    if (!c || !bb->fchecksum) return;
    for (int i = 0; i < bb->Nfile; i++) bb->fchecksum[i] = cf_column_blob_sum(c, i);
}

int bf__block_fill(BigBlock *bb, BigAttrSet *st, char *basename)
{
    cf_column *c = st->col;
    memset(bb, 0, sizeof *bb);
    bb->attrset = st;
    bb->basename = basename;
    if (cf_column_kind(c) == CF_KIND_ATTRS_ONLY) {
        /* the attributes of a File or group: bigfile's marker dtype */
        strcpy(bb->dtype, "####");
        bb->Nfile = 0;
    } else {
        strncpy(bb->dtype, cf_column_dtype(c), 7);
        bb->nmemb = (int)cf_column_nmemb(c);
        if (cf_column_kind(c) == CF_KIND_HEADER_ONLY) bb->nmemb = 0;
        bb->Nfile = (int)cf_column_nfile(c);
    }
    bb->fsize = calloc((size_t)bb->Nfile + 1, sizeof *bb->fsize);
    bb->foffset = calloc((size_t)bb->Nfile + 1, sizeof *bb->foffset);
    bb->fchecksum = calloc((size_t)bb->Nfile + 1, sizeof *bb->fchecksum);
    if (!bb->fsize || !bb->foffset || !bb->fchecksum) {
        bf__set_error("%s: out of memory for %d files", basename, bb->Nfile);
        return -1;
    }
    for (int i = 0; i < bb->Nfile; i++) {
        bb->fsize[i] = (size_t)cf_column_blob_rows(c, i);
        bb->foffset[i + 1] = bb->foffset[i] + bb->fsize[i];
    }
    bb->size = bb->foffset[bb->Nfile];
    bf__block_sums(bb);
    return 0;
}

void bf__block_free(BigBlock *bb)
{
    BigAttrSet *st = bb->attrset;
    if (st) {
        bf__attrs_invalidate(st);
        if (st->owns_file) cf_file_close(st->file);
        free(st);
    }
    free(bb->basename);
    free(bb->fsize);
    free(bb->foffset);
    free(bb->fchecksum);
    memset(bb, 0, sizeof *bb);
}

void big_block_set_dirty(BigBlock *block, int value)
{
    block->dirty = value;
}

void big_attrset_set_dirty(BigAttrSet *attrset, int value)
{
    attrset->dirty = value;
}

int big_block_seek(BigBlock *bb, BigBlockPtr *ptr, ptrdiff_t offset)
{
    if (bb->size == 0 && offset == 0) {
        ptr->fileid = 0;
        ptr->roffset = 0;
        ptr->aoffset = 0;
        return 0;
    }
    if (offset < 0) offset += (ptrdiff_t)bb->size;
    if (offset < 0 || (size_t)offset > bb->size) {
        bf__set_error("%s: seek to row %td, past the end of the block (%zu rows)",
                      bb->basename ? bb->basename : "?", offset, bb->size);
        return -1;
    }
    /* the last file whose first row is at or before `offset` (files of
     * zero rows share their first row with the next one) */
    int lo = 0, hi = bb->Nfile;
    while (hi - lo > 1) {
        int mid = lo + (hi - lo) / 2;
        if ((ptrdiff_t)bb->foffset[mid] <= offset)
            lo = mid;
        else
            hi = mid;
    }
    ptr->fileid = lo;
    ptr->roffset = offset - (ptrdiff_t)bb->foffset[lo];
    ptr->aoffset = offset;
    return 0;
}

int big_block_seek_rel(BigBlock *bb, BigBlockPtr *ptr, ptrdiff_t rel)
{
    return big_block_seek(bb, ptr, bf__ptr_row(bb, ptr) + rel);
}

int big_block_eof(BigBlock *bb, BigBlockPtr *ptr)
{
    return (size_t)bf__ptr_row(bb, ptr) >= bb->size;
}
