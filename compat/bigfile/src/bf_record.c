/* bf_record.c - record types: rows of several fields, each field stored
 * as a block of its own name. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bf_internal.h"

void big_record_type_clear(BigRecordType *rtype)
{
    for (size_t i = 0; i < rtype->nfield; i++) free(rtype->fields[i].name);
    free(rtype->fields);
    rtype->fields = NULL;
    rtype->nfield = 0;
}

void big_record_type_set(BigRecordType *rtype, int i, const char *name, const char *dtype, int nmemb)
{
    if ((size_t)i >= rtype->nfield) {
        BigRecordField *f = realloc(rtype->fields, sizeof *f * ((size_t)i + 1));
        if (!f) {
            fprintf(stderr, "big_record_type_set: out of memory for %d fields\n", i + 1);
            abort();
        }
        memset(f + rtype->nfield, 0, sizeof *f * ((size_t)i + 1 - rtype->nfield));
        rtype->fields = f;
        rtype->nfield = (size_t)i + 1;
    }
    BigRecordField *f = &rtype->fields[i];
    free(f->name);
    size_t n = strlen(name);
    f->name = malloc(n + 1);
    if (!f->name) {
        fprintf(stderr, "big_record_type_set: out of memory\n");
        abort();
    }
    memcpy(f->name, name, n + 1);
    strncpy(f->dtype, dtype, 7);
    f->dtype[7] = 0;
    f->nmemb = nmemb;
}

int big_record_type_add(BigRecordType *rtype, const char *name, const char *dtype, int nmemb)
{
    int i = (int)rtype->nfield;
    big_record_type_set(rtype, i, name, dtype, nmemb);
    return i;
}

void big_record_type_complete(BigRecordType *rtype)
{
    int offset = 0;
    for (size_t i = 0; i < rtype->nfield; i++) {
        BigRecordField *f = &rtype->fields[i];
        if (!f->name) {
            /* as bigfile: a record type with holes is a programming error */
            fprintf(stderr, "big_record_type_complete: field %zu was never set\n", i);
            abort();
        }
        f->offset = offset;
        f->elsize = big_file_dtype_itemsize(f->dtype);
        offset += f->elsize * f->nmemb;
    }
    rtype->itemsize = (size_t)offset;
}

void big_record_set(const BigRecordType *rtype, void *buf, ptrdiff_t i, int c, const void *data)
{
    const BigRecordField *f = &rtype->fields[c];
    memcpy((char *)buf + (size_t)i * rtype->itemsize + f->offset, data, (size_t)f->elsize * f->nmemb);
}

void big_record_get(const BigRecordType *rtype, const void *buf, ptrdiff_t i, int c, void *data)
{
    const BigRecordField *f = &rtype->fields[c];
    memcpy(data, (const char *)buf + (size_t)i * rtype->itemsize + f->offset, (size_t)f->elsize * f->nmemb);
}

int big_record_view_field(const BigRecordType *rtype, int i, BigArray *array, size_t size, void *buf)
{
    const BigRecordField *f = &rtype->fields[i];
    size_t dims[2] = {size, (size_t)f->nmemb};
    ptrdiff_t strides[2] = {(ptrdiff_t)rtype->itemsize, f->elsize};
    return big_array_init(array, (char *)buf + f->offset, f->dtype, 2, dims, strides);
}

int bf__create_records(BigFile *bf, const BigRecordType *rtype, const char *mode, int Nfile, const size_t fsize[],
                       const bf__block_ops *ops, void *ctx)
{
    int create = strcmp(mode, "w+") == 0;
    if (!create && strcmp(mode, "a+") != 0) {
        bf__set_error("Mode string must be `a+` or `w+`, `%s` provided", mode);
        return -1;
    }
    for (size_t i = 0; i < rtype->nfield; i++) {
        BigBlock b;
        const BigRecordField *f = &rtype->fields[i];
        if (create) {
            if (ops->create(bf, &b, f, Nfile, fsize, ctx)) return -1;
        } else {
            if (ops->open(bf, &b, f->name, ctx)) return -1;
            if (ops->grow(&b, Nfile, fsize, ctx)) {
                ops->close(&b, ctx);
                return -1;
            }
        }
        if (ops->close(&b, ctx)) return -1;
    }
    return 0;
}

static int serial_create(BigFile *bf, BigBlock *b, const BigRecordField *f, int Nfile, const size_t fsize[],
                         void *ctx)
{
    (void)ctx;
    return big_file_create_block(bf, b, f->name, f->dtype, f->nmemb, Nfile, fsize);
}

static int serial_open(BigFile *bf, BigBlock *b, const char *name, void *ctx)
{
    (void)ctx;
    return big_file_open_block(bf, b, name);
}

static int serial_grow(BigBlock *b, int Nfile, const size_t fsize[], void *ctx)
{
    (void)ctx;
    return big_block_grow(b, Nfile, fsize);
}

static int serial_close(BigBlock *b, void *ctx)
{
    (void)ctx;
    return big_block_close(b);
}

int big_file_create_records(BigFile *bf, const BigRecordType *rtype, const char *mode, int Nfile,
                            const size_t fsize[])
{
    static const bf__block_ops serial = {serial_create, serial_open, serial_grow, serial_close};
    return bf__create_records(bf, rtype, mode, Nfile, fsize, &serial, NULL);
}

/* Write (or read) one field's blocks for every field in turn. */
static int records_io(BigFile *bf, const BigRecordType *rtype, ptrdiff_t offset, size_t size, void *buf,
                      int write)
{
    for (size_t i = 0; i < rtype->nfield; i++) {
        BigArray a;
        BigBlock b;
        BigBlockPtr ptr = {0, 0, 0};
        big_record_view_field(rtype, (int)i, &a, size, buf);
        if (big_file_open_block(bf, &b, rtype->fields[i].name)) return -1;
        if (big_block_seek(&b, &ptr, offset) ||
            (write ? big_block_write(&b, &ptr, &a) : big_block_read(&b, &ptr, &a))) {
            big_block_close(&b);
            return -1;
        }
        if (big_block_close(&b)) return -1;
    }
    return 0;
}

int big_file_write_records(BigFile *bf, const BigRecordType *rtype, ptrdiff_t offset, size_t size,
                           const void *buf)
{
    return records_io(bf, rtype, offset, size, (void *)buf, 1);
}

int big_file_read_records(BigFile *bf, const BigRecordType *rtype, ptrdiff_t offset, size_t size,
                          void *buf)
{
    return records_io(bf, rtype, offset, size, buf, 0);
}
