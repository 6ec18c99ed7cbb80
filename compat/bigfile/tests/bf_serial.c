/* bf_serial.c DIR - exercises bigfile's serial C API (bigfile.h only) and
 * prints what it sees.  Built twice, against bigfile 0.1.52 and against
 * colfile's drop-in: both must print the same and leave the same tree. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bigfile.h"

static BigFile bf;

#define SAY(...) printf(__VA_ARGS__)
/* Print a call's return code and whether an error message is set. */
#define RC(call)                                                                  \
    do {                                                                          \
        big_file_set_error_message(NULL);                                         \
        int rc_ = (call);                                                         \
        SAY("%-44.44s rc=%d msg=%d\n", #call, rc_, big_file_get_error_message() != NULL); \
    } while (0)

static void show_block(const char *what, BigBlock *b)
{
    SAY("%s: dtype=%s nmemb=%d size=%zu Nfile=%d dirty=%d fsize=[", what, b->dtype, b->nmemb, b->size,
        b->Nfile, b->dirty);
    for (int i = 0; i < b->Nfile; i++) SAY("%s%zu", i ? " " : "", b->fsize[i]);
    SAY("] foffset=[");
    for (int i = 0; i <= b->Nfile; i++) SAY("%s%zu", i ? " " : "", b->foffset[i]);
    SAY("]\n");
}

static void show_sums(const char *what, BigBlock *b)
{
    SAY("%s: sums=[", what);
    for (int i = 0; i < b->Nfile; i++) SAY("%s%u", i ? " " : "", b->fchecksum[i]);
    SAY("]\n");
}

static void show_ptr(const char *what, BigBlockPtr *p)
{
    SAY("%s: fileid=%d roffset=%td aoffset=%td\n", what, p->fileid, p->roffset, p->aoffset);
}

/* A simulation-like particle struct: the pos member is a strided view. */
struct particle {
    double pos[3];
    int32_t id;
    float mass;
};

static void write_particles(void)
{
    struct particle p[9];
    for (int i = 0; i < 9; i++) {
        for (int k = 0; k < 3; k++) p[i].pos[k] = i + 0.25 * k;
        p[i].id = 100 + i;
        p[i].mass = 0.5f * i;
    }
    BigBlock b;
    BigBlockPtr ptr;
    BigArray a;
    size_t fsize[3] = {4, 0, 5};
    RC(big_file_create_block(&bf, &b, "pos", "f8", 3, 3, fsize));
    show_block("pos created", &b);
    size_t dims[2] = {5, 3};
    ptrdiff_t strides[2] = {sizeof(struct particle), sizeof(double)};
    big_array_init(&a, &p[0].pos[0], "f8", 2, dims, strides);
    RC(big_block_seek(&b, &ptr, 0));
    RC(big_block_write(&b, &ptr, &a));
    show_ptr("after write 5", &ptr);
    big_array_init(&a, &p[5].pos[0], "f8", 2, (size_t[]){4, 3}, strides);
    RC(big_block_write(&b, &ptr, &a));
    show_ptr("after write 9", &ptr);
    SAY("eof=%d dirty=%d\n", big_block_eof(&b, &ptr), b.dirty);
    /* errors: past the end, a dtype nobody converts */
    RC(big_block_write(&b, &ptr, &a));
    RC(big_block_seek(&b, &ptr, 2));
    big_array_init(&a, &p[0].pos[0], "x8", 2, (size_t[]){1, 3}, strides);
    RC(big_block_write(&b, &ptr, &a));
    RC(big_block_flush(&b));
    show_sums("pos flushed", &b);
    RC(big_block_close(&b));

    /* a converted, non-contiguous write: int32 ids into an i8 block, 1-D */
    RC(big_file_create_block(&bf, &b, "id", "i8", 1, 2, (size_t[]){5, 4}));
    big_array_init(&a, &p[0].id, "i4", 1, (size_t[]){9}, (ptrdiff_t[]){sizeof(struct particle)});
    RC(big_block_seek(&b, &ptr, 0));
    RC(big_block_write(&b, &ptr, &a));
    RC(big_block_close(&b));
    /* float masses into a big-endian f8 block */
    RC(big_file_create_block(&bf, &b, "mass", ">f8", 1, 1, (size_t[]){9}));
    big_array_init(&a, &p[0].mass, "f4", 1, (size_t[]){9}, (ptrdiff_t[]){sizeof(struct particle)});
    RC(big_block_seek(&b, &ptr, 0));
    RC(big_block_write(&b, &ptr, &a));
    show_block("mass", &b);
    RC(big_block_close(&b));
}

static void read_back(void)
{
    BigBlock b;
    BigBlockPtr ptr;
    BigArray a;
    RC(big_file_open_block(&bf, &b, "pos"));
    show_block("pos opened", &b);
    show_sums("pos opened", &b);
    RC(big_block_read_simple(&b, 2, 4, &a, "f4"));
    SAY("read_simple dims=%td,%td dtype=%s:", a.dims[0], a.dims[1], a.dtype + 1);
    for (size_t i = 0; i < a.size; i++) SAY(" %g", ((float *)a.data)[i]);
    SAY("\n");
    free(a.data);
    /* clipped at the end */
    RC(big_block_read_simple(&b, 7, 10, &a, NULL));
    SAY("clipped dims=%td:", a.dims[0]);
    for (size_t i = 0; i < a.size; i++) SAY(" %g", ((double *)a.data)[i]);
    SAY("\n");
    free(a.data);
    RC(big_block_read_simple(&b, 10, 1, &a, NULL));
    /* negative seeks, strided reads into a transposed array */
    double t[3][2];
    RC(big_block_seek(&b, &ptr, -2));
    show_ptr("seek -2", &ptr);
    big_array_init(&a, t, "f8", 2, (size_t[]){2, 3}, (ptrdiff_t[]){sizeof(double), 2 * sizeof(double)});
    RC(big_block_read(&b, &ptr, &a));
    SAY("transposed: %g %g %g / %g %g %g\n", t[0][0], t[1][0], t[2][0], t[0][1], t[1][1], t[2][1]);
    show_ptr("after read", &ptr);
    RC(big_block_read(&b, &ptr, &a));
    RC(big_block_seek(&b, &ptr, 10));
    RC(big_block_seek(&b, &ptr, -10));
    RC(big_block_seek(&b, &ptr, 4));
    show_ptr("seek 4 (zero-row file)", &ptr);
    RC(big_block_seek_rel(&b, &ptr, 1));
    show_ptr("seek_rel 1", &ptr);
    RC(big_block_close(&b));

    RC(big_file_open_block(&bf, &b, "id"));
    int64_t ids[9];
    big_array_init(&a, ids, "i8", 1, (size_t[]){9}, NULL);
    RC(big_block_seek(&b, &ptr, 0));
    RC(big_block_read(&b, &ptr, &a));
    SAY("ids:");
    for (int i = 0; i < 9; i++) SAY(" %ld", (long)ids[i]);
    SAY("\n");
    RC(big_block_close(&b));
    RC(big_file_open_block(&bf, &b, "mass"));
    float m[9];
    big_array_init(&a, m, "f4", 1, (size_t[]){9}, NULL);
    RC(big_block_seek(&b, &ptr, 0));
    RC(big_block_read(&b, &ptr, &a));
    SAY("mass:");
    for (int i = 0; i < 9; i++) SAY(" %g", m[i]);
    SAY("\n");
    RC(big_block_close(&b));
    RC(big_file_open_block(&bf, &b, "missing"));
}

static void attributes(void)
{
    BigBlock b;
    RC(big_file_create_block(&bf, &b, "Header", NULL, 0, 0, NULL));
    show_block("Header", &b);
    int32_t i3[3] = {1, -2, 3};
    double f = 0.1;
    uint64_t u = 1ull << 40;
    double c[2] = {1.5, -2.5};
    /* 3.25 and 4.5 as big-endian float32 */
    unsigned char be[8] = {0x40, 0x50, 0, 0, 0x40, 0x90, 0, 0};
    const char *s = "hello world";
    RC(big_block_set_attr(&b, "Ints", i3, "i4", 3));
    RC(big_block_set_attr(&b, "Time", &f, "f8", 1));
    RC(big_block_set_attr(&b, "Big", &u, "u8", 1));
    RC(big_block_set_attr(&b, "Cplx", c, "c16", 1));
    RC(big_block_set_attr(&b, "BE", be, ">f4", 2));
    RC(big_block_set_attr(&b, "Name", s, "a1", (int)strlen(s)));
    RC(big_block_set_attr(&b, "Gone", &f, "f8", 1));
    float f4 = 0.25f;
    RC(big_block_set_attr(&b, "Time", &f4, "f4", 1)); /* replaced, as f4 */
    RC(big_block_set_attr(&b, "has space", &f, "f8", 1));
    RC(big_block_remove_attr(&b, "Gone"));
    RC(big_block_remove_attr(&b, "Gone"));
    SAY("lookup Gone: %s\n", big_block_lookup_attr(&b, "Gone") ? "found" : "NULL");
    RC(big_block_close(&b));

    RC(big_file_open_block(&bf, &b, "Header"));
    size_t n;
    BigAttr *list = big_block_list_attrs(&b, &n);
    for (size_t i = 0; i < n; i++) {
        char buf[128];
        big_file_dtype_format(buf, list[i].dtype, list[i].data, NULL);
        SAY("attr %s %s %d first=%s\n", list[i].name, list[i].dtype, list[i].nmemb, buf);
    }
    double d3[3];
    RC(big_block_get_attr(&b, "Ints", d3, "f8", 3));
    SAY("Ints as f8: %g %g %g\n", d3[0], d3[1], d3[2]);
    RC(big_block_get_attr(&b, "Ints", d3, "f8", 2));
    RC(big_block_get_attr(&b, "Nope", d3, "f8", 1));
    float ft;
    RC(big_block_get_attr(&b, "Time", &ft, "f4", 1));
    SAY("Time %g\n", ft);
    BigAttr *a = big_block_lookup_attr(&b, "Name");
    SAY("Name: %.*s\n", a ? a->nmemb : 0, a ? a->data : "");
    RC(big_block_close(&b));

    /* attributes of the File itself and of a group */
    RC(big_file_open_block(&bf, &b, "."));
    SAY("root dtype=%s Nfile=%d\n", b.dtype, b.Nfile);
    int64_t v = 42;
    RC(big_block_set_attr(&b, "Root", &v, "i8", 1));
    RC(big_block_close(&b));
    RC(big_file_create_block(&bf, &b, "grp/sub", "u4", 2, 2, (size_t[]){1, 2}));
    uint32_t w[6] = {1, 2, 3, 4, 5, 6};
    BigArray arr;
    BigBlockPtr ptr;
    big_array_init(&arr, w, "u4", 2, (size_t[]){3, 2}, NULL);
    RC(big_block_seek(&b, &ptr, 0));
    RC(big_block_write(&b, &ptr, &arr));
    RC(big_block_close(&b));
    RC(big_file_open_block(&bf, &b, "grp/."));
    RC(big_block_set_attr(&b, "G", &v, "i8", 1));
    RC(big_block_close(&b));
}

static void layouts(void)
{
    BigBlock b;
    BigBlockPtr ptr;
    BigArray a;
    /* zero rows: no files, and files of no rows */
    RC(big_file_create_block(&bf, &b, "empty0", "i4", 1, 0, NULL));
    show_block("empty0", &b);
    RC(big_block_seek(&b, &ptr, 0));
    show_ptr("empty0 seek 0", &ptr);
    SAY("eof=%d\n", big_block_eof(&b, &ptr));
    RC(big_block_close(&b));
    RC(big_file_create_block(&bf, &b, "empty3", "f4", 2, 3, (size_t[]){0, 0, 0}));
    RC(big_block_close(&b));
    /* many files, some empty */
    size_t fs[40];
    size_t total = 0;
    for (int i = 0; i < 40; i++) total += fs[i] = (size_t)(i % 3);
    RC(big_file_create_block(&bf, &b, "many", "i8", 1, 40, fs));
    int64_t *v = malloc(sizeof *v * total);
    for (size_t i = 0; i < total; i++) v[i] = (int64_t)(i * i);
    big_array_init(&a, v, "i8", 1, (size_t[]){total}, NULL);
    RC(big_block_seek(&b, &ptr, 0));
    RC(big_block_write(&b, &ptr, &a));
    RC(big_block_close(&b));
    RC(big_file_open_block(&bf, &b, "many"));
    show_block("many", &b);
    show_sums("many", &b);
    RC(big_block_seek(&b, &ptr, 13));
    show_ptr("many seek 13", &ptr);
    RC(big_block_read_simple(&b, 11, 5, &a, "f8"));
    SAY("many[11:16] as f8:");
    for (size_t i = 0; i < a.size; i++) SAY(" %g", ((double *)a.data)[i]);
    SAY("\n");
    free(a.data);
    RC(big_block_close(&b));
    free(v);
    /* grow: two more files, written, then read across the boundary */
    RC(big_file_open_block(&bf, &b, "id"));
    RC(big_block_grow(&b, 2, (size_t[]){2, 0}));
    show_block("id grown", &b);
    int64_t more[2] = {7, 8};
    big_array_init(&a, more, "i8", 1, (size_t[]){2}, NULL);
    RC(big_block_seek(&b, &ptr, 9));
    RC(big_block_write(&b, &ptr, &a));
    RC(big_block_close(&b));
    RC(big_file_open_block(&bf, &b, "id"));
    show_block("id reopened", &b);
    show_sums("id reopened", &b);
    RC(big_block_read_simple(&b, 7, 10, &a, NULL));
    SAY("id[7:]:");
    for (size_t i = 0; i < a.size; i++) SAY(" %ld", (long)((int64_t *)a.data)[i]);
    SAY("\n");
    free(a.data);
    RC(big_block_close(&b));
}

static void helpers(void)
{
    const char *dts[] = {"f8", "<i4", ">u8", "=c16", "|b1", "a1", "S7", "f4"};
    for (size_t i = 0; i < sizeof dts / sizeof *dts; i++)
        SAY("dtype %s itemsize=%d kind=%c\n", dts[i], big_file_dtype_itemsize(dts[i]),
            big_file_dtype_kind(dts[i]));
    char buf[128];
    double d;
    int32_t i4;
    uint64_t u8;
    float cf[2];
    RC(big_file_dtype_parse("2.5", "f8", &d, NULL));
    big_file_dtype_format(buf, "f8", &d, NULL);
    SAY("f8 %s\n", buf);
    RC(big_file_dtype_parse("-17", ">i4", &i4, NULL));
    big_file_dtype_format(buf, ">i4", &i4, NULL);
    SAY(">i4 %s\n", buf);
    RC(big_file_dtype_parse("-17", ">i4", &i4, NULL));
    big_file_dtype_format(buf, ">i4", &i4, "[%05d]");
    SAY(">i4 fmt %s\n", buf);
    RC(big_file_dtype_parse("18446744073709551615", "u8", &u8, NULL));
    big_file_dtype_format(buf, "u8", &u8, NULL);
    SAY("u8 %s\n", buf);
    RC(big_file_dtype_parse("1.5 + 2.5 I", "c8", cf, NULL));
    big_file_dtype_format(buf, "c8", cf, NULL);
    SAY("c8 %s\n", buf);
    RC(big_file_dtype_parse("1", "b1", &d, NULL));
    big_file_dtype_format(buf, "i2", &i4, NULL);
    SAY("i2 %s\n", buf);
    /* the iterator over a 3-d strided view */
    int32_t grid[2][3][4];
    for (int i = 0; i < 24; i++) ((int32_t *)grid)[i] = i;
    BigArray a;
    BigArrayIter it;
    big_array_init(&a, &grid[0][0][1], "i4", 3, (size_t[]){2, 2, 3},
                   (ptrdiff_t[]){sizeof grid[0], 2 * sizeof grid[0][0], sizeof(int32_t)});
    big_array_iter_init(&it, &a);
    SAY("iter contiguous=%d size=%zu:", it.contiguous, a.size);
    for (size_t i = 0; i < a.size; i++) {
        SAY(" %d", *(int32_t *)it.dataptr);
        big_array_iter_advance(&it);
    }
    SAY("\n");
    big_array_init(&a, grid, "i4", 2, (size_t[]){6, 4}, NULL);
    big_array_iter_init(&it, &a);
    SAY("packed contiguous=%d strides=%td,%td\n", it.contiguous, a.strides[0], a.strides[1]);
}

static void records(void)
{
    BigRecordType rt = {0};
    SAY("add %d\n", big_record_type_add(&rt, "r/x", "f8", 2));
    SAY("add %d\n", big_record_type_add(&rt, "r/n", "i4", 1));
    big_record_type_set(&rt, 2, "r/c", "u1", 3);
    big_record_type_set(&rt, 2, "r/c", "c8", 1); /* set again: replaced */
    big_record_type_complete(&rt);
    SAY("itemsize %zu nfield %zu:", rt.itemsize, rt.nfield);
    for (size_t i = 0; i < rt.nfield; i++)
        SAY(" %s/%s/%d@%d+%d", rt.fields[i].name, rt.fields[i].dtype, rt.fields[i].nmemb, rt.fields[i].offset,
            rt.fields[i].elsize);
    SAY("\n");
    char *buf = calloc(6, rt.itemsize);
    for (int i = 0; i < 6; i++) {
        double x[2] = {i, -i};
        int32_t n = 10 * i;
        float c[2] = {(float)i, 0.5f};
        big_record_set(&rt, buf, i, 0, x);
        big_record_set(&rt, buf, i, 1, &n);
        big_record_set(&rt, buf, i, 2, c);
    }
    RC(big_file_create_records(&bf, &rt, "w+", 2, (size_t[]){2, 2}));
    RC(big_file_write_records(&bf, &rt, 0, 4, buf));
    RC(big_file_create_records(&bf, &rt, "a+", 1, (size_t[]){2}));
    RC(big_file_write_records(&bf, &rt, 4, 2, buf + 4 * rt.itemsize));
    RC(big_file_write_records(&bf, &rt, 5, 2, buf));
    RC(big_file_create_records(&bf, &rt, "x", 1, (size_t[]){2}));
    char *back = calloc(6, rt.itemsize);
    RC(big_file_read_records(&bf, &rt, 1, 5, back));
    for (int i = 0; i < 5; i++) {
        double x[2];
        int32_t n;
        float c[2];
        big_record_get(&rt, back, i, 0, x);
        big_record_get(&rt, back, i, 1, &n);
        big_record_get(&rt, back, i, 2, c);
        SAY("record %d: %g %g %d %g%+gi\n", i, x[0], x[1], n, c[0], c[1]);
    }
    RC(big_file_read_records(&bf, &rt, 3, 5, back));
    BigArray a;
    RC(big_record_view_field(&rt, 0, &a, 6, buf));
    SAY("view: ndim=%d dims=%td,%td strides=%td,%td dtype=%s\n", a.ndim, a.dims[0], a.dims[1], a.strides[0],
        a.strides[1], a.dtype + 1);
    free(buf);
    free(back);
    big_record_type_clear(&rt);
    SAY("cleared nfield=%zu\n", rt.nfield);
}

static void listing(void)
{
    char **names;
    int n;
    RC(big_file_list(&bf, &names, &n));
    SAY("list:");
    for (int i = 0; i < n; i++) {
        SAY(" %s", names[i]);
        free(names[i]);
    }
    SAY("\n");
    free(names);
}

int main(int argc, char **argv)
{
    if (argc != 2) return 2;
    RC(big_file_open(&bf, argv[1]));
    RC(big_file_create(&bf, argv[1]));
    big_file_set_buffer_size(64);
    write_particles();
    read_back();
    attributes();
    layouts();
    helpers();
    records();
    listing();
    RC(big_file_close(&bf));
    BigFile other;
    RC(big_file_open(&other, argv[1]));
    RC(big_file_close(&other));
    return 0;
}
