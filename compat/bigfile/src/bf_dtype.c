/* bf_dtype.c - bigfile's dtype helpers and BigArray / BigArrayIter.
 *
 * Conversions of block data go through colfile (cf_dtype_convert inside
 * cf_column_read/write); what is here is the arithmetic on dtype strings
 * and array descriptors that bigfile's callers use directly. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bf_internal.h"

static char native_order(void)
{
    const uint16_t probe = 1;
    return *(const unsigned char *)&probe ? '<' : '>';
}

void bf__dtype_normalize(char dst[8], const char *src)
{
    memset(dst, 0, 8);
    if (src[0] == '<' || src[0] == '>' || src[0] == '=' || src[0] == '|') {
        strncpy(dst, src, 7);
    } else {
        dst[0] = '=';
        strncpy(dst + 1, src, 6);
    }
    if (dst[0] == '=' || dst[0] == '|') dst[0] = native_order();
}

int big_file_dtype_itemsize(const char *dtype)
{
    char n[8];
    bf__dtype_normalize(n, dtype);
    return atoi(n + 2);
}

int big_file_dtype_kind(const char *dtype)
{
    char n[8];
    bf__dtype_normalize(n, dtype);
    return n[1];
}

/* Reverse the bytes of each `part`-byte piece of one element of `size`
 * bytes (complex numbers swap their halves separately). */
static void swap_element(unsigned char *p, int size, int part)
{
    for (int o = 0; part > 1 && o + part <= size; o += part)
        for (int i = 0; i < part / 2; i++) {
            unsigned char t = p[o + i];
            p[o + i] = p[o + part - 1 - i];
            p[o + part - 1 - i] = t;
        }
}

/* The kind+width of a normalised dtype, and the bytes of one element in
 * this machine's order copied to `native` (at most 64 bytes). */
static const char *to_native(const char *dtype, const void *data, unsigned char native[64], char n[8])
{
    bf__dtype_normalize(n, dtype);
    int size = atoi(n + 2);
    if (size < 0 || size > 64) size = 0;
    memset(native, 0, 64);
    if (data) memcpy(native, data, (size_t)size);
    if (n[0] != native_order()) swap_element(native, size, n[1] == 'c' ? size / 2 : size);
    return n + 1;
}

/* The kinds with a text form: name, C type, components, printf and scanf
 * forms (b1 prints but does not parse, as in bigfile).  The printf
 * arguments and scanf addresses of x[] by components: complex parts go to
 * printf as doubles. */
#define BF_VALUES_1(x) x[0]
#define BF_VALUES_2(x) (double)x[0], (double)x[1]
#define BF_ADDRS_1(x) &x[0]
#define BF_ADDRS_2(x) &x[0], &x[1]
#define BF_TEXT_KINDS(X)                                                            \
    X("a1", char, 1, "%c", "%c")                                                    \
    X("b1", char, 1, "%d", NULL)                                                    \
    X("i8", int64_t, 1, "%ld", "%ld")                                               \
    X("i4", int32_t, 1, "%d", "%d")                                                 \
    X("u8", uint64_t, 1, "%lu", "%lu")                                              \
    X("u4", uint32_t, 1, "%u", "%u")                                                \
    X("f8", double, 1, "%g", "%lf")                                                 \
    X("f4", float, 1, "%g", "%f")                                                   \
    X("c8", float, 2, "%g+%gI", "%f + %f I")                                        \
    X("c16", double, 2, "%g+%gI", "%lf + %lf I")

void big_file_dtype_format(char *buffer, const char *dtype, const void *data, const char *flags)
{
    unsigned char v[64];
    char n[8];
    const char *t = to_native(dtype, data, v, n);
#define BF_FORMAT(name, type, comps, pfmt, sfmt)                                    \
    if (strcmp(t, name) == 0) {                                                     \
        type x[2];                                                                  \
        memcpy(x, v, sizeof x);                                                     \
        sprintf(buffer, flags ? flags : pfmt, BF_VALUES_##comps(x));                \
        return;                                                                     \
    }
    BF_TEXT_KINDS(BF_FORMAT)
#undef BF_FORMAT
    /* a kind without a printed form: its normalised name, in this machine's order */
    n[0] = native_order();
    sprintf(buffer, "<%s>", n);
}

int big_file_dtype_parse(const char *buffer, const char *dtype, void *data, const char *fmt)
{
    unsigned char v[64];
    char n[8];
    const char *t = to_native(dtype, NULL, v, n);
    int size = atoi(n + 2);
    const char *form = NULL;
#define BF_PARSE(name, type, comps, pfmt, sfmt)                                     \
    if (strcmp(t, name) == 0 && sfmt != NULL) {                                     \
        type x[2] = {0, 0};                                                         \
        form = fmt ? fmt : sfmt;                                                    \
        sscanf(buffer, form, BF_ADDRS_##comps(x));                                  \
        memcpy(v, x, comps * sizeof x[0]);                                          \
    }
    BF_TEXT_KINDS(BF_PARSE)
#undef BF_PARSE
    if (form == NULL) return -1;
    if (n[0] != native_order()) swap_element(v, size, n[1] == 'c' ? size / 2 : size);
    memcpy(data, v, (size_t)size);
    return 0;
}

int big_array_init(BigArray *array, void *buf, const char *dtype, int ndim, const size_t dims[],
                   const ptrdiff_t strides[])
{
    memset(array, 0, sizeof *array);
    bf__dtype_normalize(array->dtype, dtype);
    array->data = buf;
    array->ndim = ndim;
    array->size = 1;
    for (int i = 0; i < ndim; i++) {
        array->dims[i] = (ptrdiff_t)dims[i];
        array->size *= dims[i];
    }
    if (ndim <= 0) return 0;
    if (strides) {
        for (int i = 0; i < ndim; i++) array->strides[i] = strides[i];
    } else {
        ptrdiff_t s = big_file_dtype_itemsize(dtype);
        for (int i = ndim - 1; i >= 0; i--) {
            array->strides[i] = s;
            s *= array->dims[i];
        }
    }
    return 0;
}

int big_array_iter_init(BigArrayIter *iter, BigArray *array)
{
    memset(iter, 0, sizeof *iter);
    iter->array = array;
    iter->dataptr = array->data;
    /* contiguous: the strides of a packed C-order array */
    ptrdiff_t expect = big_file_dtype_itemsize(array->dtype);
    iter->contiguous = 1;
    for (int i = array->ndim - 1; i >= 0; i--) {
        if (array->strides[i] != expect) {
            iter->contiguous = 0;
            break;
        }
        expect *= array->dims[i];
    }
    return 0;
}

void big_array_iter_advance(BigArrayIter *iter)
{
    BigArray *a = iter->array;
    int last = a->ndim - 1;
    if (last < 0) return;
    char *p = (char *)iter->dataptr + a->strides[last];
    if (!iter->contiguous) {
        /* odometer: carry into the next slower index at each wrap */
        iter->pos[last]++;
        for (int k = last; k >= 0 && iter->pos[k] == a->dims[k]; k--) {
            p -= a->strides[k] * iter->pos[k];
            iter->pos[k] = 0;
            if (k > 0) {
                iter->pos[k - 1]++;
                p += a->strides[k - 1];
            }
        }
    }
    iter->dataptr = p;
}

int bf__array_rows_layout(const BigArray *a, int nmemb, int64_t *row_stride, int64_t *elem_stride)
{
    int64_t item = big_file_dtype_itemsize(a->dtype);
    if (nmemb < 1) nmemb = 1;
    if (a->ndim == 2 && a->dims[1] == nmemb) {
        *row_stride = a->strides[0];
        *elem_stride = a->strides[1];
        return 1;
    }
    if (a->ndim == 1 && nmemb == 1) {
        *row_stride = *elem_stride = a->strides[0];
        return 1;
    }
    if (a->ndim == 1 && a->strides[0] == item) {
        *row_stride = item * nmemb;
        *elem_stride = item;
        return 1;
    }
    return 0;
}

void bf__array_pack(const BigArray *a, void *packed, size_t n)
{
    BigArrayIter it;
    size_t w = (size_t)big_file_dtype_itemsize(a->dtype);
    big_array_iter_init(&it, (BigArray *)a);
    for (size_t i = 0; i < n; i++) {
        memcpy((char *)packed + i * w, it.dataptr, w);
        big_array_iter_advance(&it);
    }
}

void bf__array_unpack(BigArray *a, const void *packed, size_t n)
{
    BigArrayIter it;
    size_t w = (size_t)big_file_dtype_itemsize(a->dtype);
    big_array_iter_init(&it, a);
    for (size_t i = 0; i < n; i++) {
        memcpy(it.dataptr, (const char *)packed + i * w, w);
        big_array_iter_advance(&it);
    }
}
