/* bf_io.c - serial reads and writes through a BigBlockPtr.
 *
 * A BigArray's elements fill the block's rows nmemb at a time, from the
 * row *ptr points at; colfile converts between the array's dtype and the
 * block's and writes the rows (checksums and statistics with them).  An
 * array colfile cannot address with a row and an element stride is packed
 * into (or unpacked from) a buffer first. */
#include <stdlib.h>
#include <string.h>

#include "bf_internal.h"

int bf__check_io(const BigBlock *bb, ptrdiff_t row, int64_t rows, const char *array_dtype,
                 const char *what)
{
    if (!bb->attrset || !bb->attrset->col) {
        bf__set_error("%s a block that is not open", what);
        return -1;
    }
    if ((size_t)row + (size_t)rows > bb->size) {
        bf__set_error("%s beyond the block `%s': rows [%td, %td) of %zu", what, bb->basename, row,
                      row + (ptrdiff_t)rows, bb->size);
        return -1;
    }
    if (rows == 0) return 0;
    int w = what[0] == 'W';
    const char *from = w ? array_dtype : bb->dtype, *to = w ? bb->dtype : array_dtype;
    if (!cf_dtype_can_cast(from, to)) {
        bf__set_error("%s block `%s': no conversion from %s to %s", what, bb->basename, from, to);
        return -1;
    }
    return 0;
}

/* Write or read `rows` rows at `row` of the handle from / into `a`. */
int bf__column_io(cf_column *c, int write, int64_t row, int64_t rows, int nmemb, BigArray *a)
{
    cf_error e;
    int64_t rs, es;
    int rc;
    if (rows == 0) return 0;
    if (bf__array_rows_layout(a, nmemb, &rs, &es)) {
        rc = write ? cf_column_write(c, row, rows, a->data, a->dtype, rs, es, &e)
                   : cf_column_read(c, row, rows, a->data, a->dtype, rs, es, &e);
    } else {
        size_t n = (size_t)rows * (size_t)(nmemb > 0 ? nmemb : 1);
        int64_t w = big_file_dtype_itemsize(a->dtype);
        void *tmp = malloc(n * (size_t)w + 1);
        if (!tmp) {
            bf__set_error("%s: out of memory for %zu elements", cf_column_path(c), n);
            return -1;
        }
        if (write) bf__array_pack(a, tmp, n);
        rc = write ? cf_column_write(c, row, rows, tmp, a->dtype, w * (nmemb > 0 ? nmemb : 1), w, &e)
                   : cf_column_read(c, row, rows, tmp, a->dtype, w * (nmemb > 0 ? nmemb : 1), w, &e);
        if (!rc && !write) bf__array_unpack(a, tmp, n);
        free(tmp);
    }
    if (rc) {
        bf__set_cf_error(&e);
        return -1;
    }
    return 0;
}

int big_block_write(BigBlock *bb, BigBlockPtr *ptr, BigArray *array)
{
    if (array->size == 0) return 0;
    bb->dirty = 1;
    int nmemb = bb->nmemb > 0 ? bb->nmemb : 1;
    int64_t rows = (int64_t)(array->size / (size_t)nmemb);
    ptrdiff_t row = bf__ptr_row(bb, ptr);
    if (bf__check_io(bb, row, rows, array->dtype, "Writing")) return -1;
    bb->attrset->wrote = 1; /* even a failed write may have changed bytes */
    if (bf__column_io(bb->attrset->col, 1, row, rows, bb->nmemb, array)) return -1;
    bf__block_sums(bb);
    return big_block_seek(bb, ptr, row + (ptrdiff_t)rows);
}

int big_block_read(BigBlock *bb, BigBlockPtr *ptr, BigArray *array)
{
    int nmemb = bb->nmemb > 0 ? bb->nmemb : 1;
    int64_t rows = (int64_t)(array->size / (size_t)nmemb);
    ptrdiff_t row = bf__ptr_row(bb, ptr);
    if (bf__check_io(bb, row, rows, array->dtype, "Reading")) return -1;
    if (rows == 0) return 0;
    if (bf__column_io(bb->attrset->col, 0, row, rows, bb->nmemb, array)) return -1;
    return big_block_seek(bb, ptr, row + (ptrdiff_t)rows);
}

int big_block_read_simple(BigBlock *bb, ptrdiff_t start, ptrdiff_t size, BigArray *array,
                          const char *dtype)
{
    BigBlockPtr ptr = {0, 0, 0};
    if (!dtype) dtype = bb->dtype;
    if (big_block_seek(bb, &ptr, start)) return -1;
    /* as bigfile: clip to the end counted from `start` as given */
    if (start + size > (ptrdiff_t)bb->size) size = (ptrdiff_t)bb->size - start;
    if (size < 0) {
        bf__set_error("%s: cannot read from row %td of %zu", bb->basename, start, bb->size);
        return -1;
    }
    size_t dims[2] = {(size_t)size, (size_t)bb->nmemb};
    void *buf = malloc((size_t)size * (size_t)big_file_dtype_itemsize(dtype) * (size_t)bb->nmemb + 1);
    if (!buf) {
        bf__set_error("%s: out of memory for %td rows", bb->basename, size);
        return -1;
    }
    big_array_init(array, buf, dtype, 2, dims, NULL);
    if (big_block_read(bb, &ptr, array)) {
        free(buf);
        array->data = NULL;
        return -1;
    }
    return 0;
}
