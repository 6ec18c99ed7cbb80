/* bf_attr.c - block attributes.
 *
 * colfile writes the attribute files when an attribute is set or removed
 * (bigfile waits for the flush); big_block_lookup_attr and
 * big_block_list_attrs hand out a copy kept with the block and rebuilt
 * after every change. */
#include <stdlib.h>
#include <string.h>

#include "bf_internal.h"

static cf_column *attr_column(BigBlock *block)
{
    if (block->attrset && block->attrset->col) return block->attrset->col;
    bf__set_error("attributes of a block that is not open");
    return NULL;
}

int big_block_set_attr(BigBlock *block, const char *attrname, const void *data, const char *dtype,
                       int nmemb)
{
    cf_error e;
    cf_column *c = attr_column(block);
    if (!c) return -1;
    block->attrset->dirty = 1;
    bf__attrs_invalidate(block->attrset);
    if (strpbrk(attrname, " \t\n")) {
        bf__set_error("Attribute name cannot contain blanks (space, tab or newline): `%s'", attrname);
        return -1;
    }
    if (cf_column_attr_set(c, attrname, dtype, nmemb, data, &e)) {
        bf__set_cf_error(&e);
        return -1;
    }
    return 0;
}

int big_block_get_attr(BigBlock *block, const char *attrname, void *data, const char *dtype, int nmemb)
{
    cf_error e;
    cf_column *c = attr_column(block);
    if (!c) return -1;
    if (cf_column_attr_get_as(c, attrname, dtype, data, nmemb, NULL, &e)) {
        bf__set_cf_error(&e);
        return -1;
    }
    return 0;
}

int big_block_remove_attr(BigBlock *block, const char *attrname)
{
    cf_error e;
    cf_column *c = attr_column(block);
    if (!c) return -1;
    bf__attrs_invalidate(block->attrset);
    if (cf_column_attr_delete(c, attrname, &e)) {
        bf__set_cf_error(&e);
        return -1;
    }
    return 0;
}

/* Copy every attribute of the handle into the block's sorted list. */
static int fill_cache(BigBlock *block)
{
    cf_error e;
    BigAttrSet *st = block->attrset;
    char **names = NULL;
    int64_t n = 0;
    if (st->cache_valid) return 0;
    bf__attrs_invalidate(st);
    if (cf_column_attr_names(st->col, &names, &n, &e)) {
        bf__set_cf_error(&e);
        return -1;
    }
    st->cache = calloc((size_t)(n > 0 ? n : 1), sizeof *st->cache);
    if (!st->cache) goto oom;
    for (int64_t i = 0; i < n; i++) {
        const char *dt;
        int64_t m;
        const void *bytes;
        if (cf_column_attr_get(st->col, names[i], &dt, &m, &bytes, &e)) {
            bf__set_cf_error(&e);
            cf_names_free(names, n);
            bf__attrs_invalidate(st);
            return -1;
        }
        BigAttr *a = &st->cache[st->ncache];
        size_t len = (size_t)m * (size_t)cf_dtype_itemsize(dt);
        a->nmemb = (int)m;
        strncpy(a->dtype, dt, 7);
        a->name = malloc(strlen(names[i]) + 1);
        a->data = malloc(len + 1);
        st->ncache++;
        if (!a->name || !a->data) goto oom;
        strcpy(a->name, names[i]);
        memcpy(a->data, bytes, len);
    }
    cf_names_free(names, n);
    st->cache_valid = 1;
    return 0;
oom:
    cf_names_free(names, n);
    bf__attrs_invalidate(st);
    bf__set_error("%s: out of memory for attributes", block->basename);
    return -1;
}

BigAttr *big_block_lookup_attr(BigBlock *block, const char *attrname)
{
    if (!attr_column(block) || fill_cache(block)) return NULL;
    for (size_t i = 0; i < block->attrset->ncache; i++)
        if (strcmp(block->attrset->cache[i].name, attrname) == 0) return &block->attrset->cache[i];
    return NULL;
}

BigAttr *big_block_list_attrs(BigBlock *block, size_t *count)
{
    *count = 0;
    if (!attr_column(block) || fill_cache(block)) return NULL;
    *count = block->attrset->ncache;
    return block->attrset->cache;
}
