/* test_column.c - Files and columns through the public API, on real files. */
#include "harness.h"
#include "fixtures.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "checksum.h"
#include "colfile.h"

static int exists(const char *dir, const char *name)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    struct stat st;
    return stat(path, &st) == 0;
}

static void test_roundtrip_vector_column(void)
{
    cf_error err;
    cf_file *f = cf_test_open_new("snap");
    cf_column *c = NULL;
    CHECK_OK(cf_column_create(&c, f, "1/Position", "f8", 3, 5, 2, &err), &err);
    CHECK_EQ_STR(cf_column_dtype(c), "<f8");
    cf_column_desc d;
    cf_column_describe(c, &d);
    CHECK_EQ_STR(d.name, "1/Position");
    CHECK_EQ_STR(d.path, cf_column_path(c));
    CHECK_EQ_STR(d.dtype, "<f8");
    CHECK_EQ_INT(d.kind, CF_KIND_DATA);
    CHECK_EQ_INT(d.writable, 1);
    CHECK_EQ_INT(d.nmemb, 3);
    CHECK_EQ_INT(cf_column_size(c), 5);
    CHECK_EQ_INT(cf_column_blob_rows(c, 0), 2);
    CHECK_EQ_INT(cf_column_blob_rows(c, 1), 3);
    double data[15];
    for (int i = 0; i < 15; i++) data[i] = i * 0.5 - 3;
    CHECK_OK(cf_column_write(c, 0, 5, data, NULL, 24, 8, &err), &err);
    CHECK_OK(cf_column_close(c, &err), &err);

    char dir[4096];
    snprintf(dir, sizeof dir, "%s/snap/1/Position", cf_test_dir());
    size_t len;
    char *blob0 = cf_test_slurp(dir, "000000", &len);
    CHECK_EQ_INT(len, 48);
    CHECK_EQ_MEM(blob0, data, 48);
    uint32_t s0 = cf__sysv_add(0, data, 48), s1 = cf__sysv_add(0, data + 6, 72);
    char want[512];
    snprintf(want, sizeof want, "DTYPE: <f8\nNMEMB: 3\nNFILE: 2\n000000: 2 : %u : %u\n000001: 3 : %u : %u\n",
             s0, cf__sysv_fold(s0), s1, cf__sysv_fold(s1));
    char *header = cf_test_slurp(dir, "header", NULL);
    CHECK_EQ_STR(header, want);
    char *attrs = cf_test_slurp(dir, "attr-v2", &len);
    CHECK_EQ_INT(len, 0);
    char *ext = cf_test_slurp(dir, "colfile-v1", NULL);
    char line[128];
    snprintf(line, sizeof line, "000001: 3 : %u : crc32c=%08x\n", s1, cf__crc32c_update(0, data + 6, 72));
    CHECK(ext && strstr(ext, line));
    free(blob0); free(header); free(attrs); free(ext);

    CHECK_OK(cf_column_open(&c, f, "1/Position", &err), &err);
    double back[15] = { 0 };
    CHECK_OK(cf_column_read(c, 0, 5, back, NULL, 24, 8, &err), &err);
    CHECK_EQ_MEM(back, data, sizeof data);
    uint32_t crc;
    CHECK(cf_column_blob_crc32c(c, 0, &crc));
    CHECK_EQ_INT(crc, cf__crc32c_update(0, data, 48));
    /* Rows 1..3 straddle the blob boundary; read as float32, component 1 only. */
    float comp[3];
    CHECK_OK(cf_column_read(c, 1, 3, comp, "f4", 4, 0, &err), &err);
    (void)comp;
    float all[9];
    CHECK_OK(cf_column_read(c, 1, 3, all, "<f4", 12, 4, &err), &err);
    for (int i = 0; i < 9; i++) CHECK(all[i] == (float)data[3 + i]);
    /* Reversed rows: negative row stride. */
    double rev[15];
    CHECK_OK(cf_column_read(c, 0, 5, rev + 12, NULL, -24, 8, &err), &err);
    for (int r = 0; r < 5; r++) CHECK(rev[3 * (4 - r)] == data[3 * r]);
    CHECK_OK(cf_column_close(c, &err), &err);
    cf_file_close(f);
}

static void test_cast_and_strided_write(void)
{
    cf_error err;
    cf_file *f = cf_test_open_new("cast");
    cf_column *c;
    struct particle { double mass; int32_t id; int32_t flag; } p[6];
    for (int i = 0; i < 6; i++) { p[i].mass = i * 1.5; p[i].id = 100 + i; p[i].flag = i & 1; }
    CHECK_OK(cf_column_create(&c, f, "ID", "i8", 1, 6, 4, &err), &err);
    /* A field of an array of structs, without a copy, int32 -> int64. */
    CHECK_OK(cf_column_write(c, 0, 6, &p[0].id, "i4", sizeof p[0], 0, &err), &err);
    CHECK_OK(cf_column_flush(c, &err), &err);
    int64_t ids[6];
    CHECK_OK(cf_column_read(c, 0, 6, ids, NULL, 8, 8, &err), &err);
    for (int i = 0; i < 6; i++) CHECK_EQ_INT(ids[i], 100 + i);
    /* The caller's struct is untouched. */
    CHECK_EQ_INT(p[3].id, 103);
    /* Read back through a cast into doubles. */
    double d[6];
    CHECK_OK(cf_column_read(c, 0, 6, d, "f8", 8, 8, &err), &err);
    CHECK(d[5] == 105.0);
    /* Unsupported conversion: bytes to numbers. */
    CHECK_FAILS(cf_column_write(c, 0, 1, "abcdefgh", "S8", 8, 8, &err), CF_ECAST, &err, "cannot convert");
    CHECK_FAILS(cf_column_write(c, 5, 2, ids, NULL, 8, 8, &err), CF_ERANGE, &err, "outside");
    CHECK_FAILS(cf_column_read(c, -1, 1, ids, NULL, 8, 8, &err), CF_ERANGE, &err, "outside");
    CHECK_FAILS(cf_column_read(c, 0, 1, ids, "U3", 8, 8, &err), CF_EDTYPE, &err, NULL);
    CHECK_OK(cf_column_close(c, &err), &err);
    cf_file_close(f);
}

static void test_read_rows(void)
{
    cf_error err;
    cf_file *f = cf_test_open_new("rows");
    cf_column *c;
    enum { N = 100000 };
    int32_t *v = malloc(N * sizeof *v);
    for (int i = 0; i < N; i++) v[i] = i * 7;
    CHECK_OK(cf_column_create(&c, f, "v", "i4", 1, N, 7, &err), &err);
    CHECK_OK(cf_column_write(c, 0, N, v, NULL, 4, 4, &err), &err);
    int64_t rows[] = { 0, 0, 1, 5, 14285, 14286, 50000, 50000, 99999 };
    int64_t n = sizeof rows / sizeof *rows;
    int64_t out[9];
    CHECK_OK(cf_column_read_rows(c, rows, n, out, "i8", 8, 8, &err), &err);
    for (int64_t i = 0; i < n; i++) CHECK_EQ_INT(out[i], rows[i] * 7);
    /* Scattered writes: runs and single rows, int64 source into int32. */
    int64_t wrows[] = { 3, 4, 5, 14286, 99998 };
    int64_t wvals[] = { -1, -2, -3, -4, -5 };
    CHECK_OK(cf_column_write_rows(c, wrows, 5, wvals, "i8", 8, 8, &err), &err);
    CHECK_OK(cf_column_read_rows(c, wrows, 5, out, "i8", 8, 8, &err), &err);
    CHECK_EQ_MEM(out, wvals, sizeof wvals);
    CHECK_OK(cf_column_read(c, 2, 1, out, "i8", 8, 8, &err), &err);
    CHECK_EQ_INT(out[0], 14);
    int64_t repeated[] = { 3, 3 };
    CHECK_FAILS(cf_column_write_rows(c, repeated, 2, wvals, "i8", 8, 8, &err), CF_EARG, &err, "strictly");
    /* Out of order (a column this small is sorted, not mapped): as listed. */
    int64_t unsorted[] = { 99999, 5, 1, 14286, 5, 0 };
    CHECK_OK(cf_column_read_rows(c, unsorted, 6, out, "i8", 8, 8, &err), &err);
    int64_t expect[] = { 99999 * 7, -3, 7, -4, -3, 0 };
    CHECK_EQ_MEM(out, expect, sizeof expect);
    int64_t outside[] = { 1, N };
    CHECK_FAILS(cf_column_read_rows(c, outside, 2, out, "i8", 8, 8, &err), CF_ERANGE, &err, "outside");
    /* Stepped reads: the same as the listed rows, across blob boundaries,
     * with steps below and above the gap that one pread covers. */
    int64_t steps[] = { 1, 3, 16, 20000, 99999 };
    int64_t *want = malloc(N * sizeof *want), *got = malloc(N * sizeof *got), *list = malloc(N * sizeof *list);
    for (size_t t = 0; t < sizeof steps / sizeof *steps; t++) {
        int64_t start = (int64_t)t, step = steps[t], count = (N - 1 - start) / step + 1;
        for (int64_t k = 0; k < count; k++) list[k] = start + k * step;
        CHECK_OK(cf_column_read_rows(c, list, count, want, "i8", 8, 8, &err), &err);
        CHECK_OK(cf_column_read_step(c, start, step, count, got, "i8", 8, 8, &err), &err);
        CHECK_EQ_MEM(got, want, (size_t)count * sizeof *got);
    }
    CHECK_OK(cf_column_read_step(c, 7, 2, 0, got, NULL, 4, 4, &err), &err);
    CHECK_FAILS(cf_column_read_step(c, 0, 0, 2, got, NULL, 4, 4, &err), CF_EARG, &err, "step");
    CHECK_FAILS(cf_column_read_step(c, 0, 50000, 3, got, NULL, 4, 4, &err), CF_ERANGE, &err, "outside");
    CHECK_FAILS(cf_column_read_step(c, N, 1, 1, got, NULL, 4, 4, &err), CF_ERANGE, &err, "outside");
    free(want);
    free(got);
    free(list);
    CHECK_OK(cf_column_close(c, &err), &err);
    free(v);
    cf_file_close(f);
}

/* Blob files are named by six or more upper-case hex digits: blobs 10 and
 * 26 are 00000A and 00001A, and each holds its own rows. */
static void test_blob_names_are_hex(void)
{
    cf_error err;
    cf_file *f = cf_test_open_new("hexnames");
    cf_column *c;
    int64_t rows[27], v[27];
    for (int i = 0; i < 27; i++) rows[i] = 1, v[i] = 1000 + i;
    CHECK_OK(cf_column_create_blobs(&c, f, "h", "i8", 1, 27, rows, &err), &err);
    CHECK_OK(cf_column_write(c, 0, 27, v, NULL, 8, 8, &err), &err);
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", cf_column_path(c));
    CHECK_OK(cf_column_close(c, &err), &err);
    const char *names[] = { "000000", "000009", "00000A", "00000F", "000010", "00001A" };
    const int64_t blobs[] = { 0, 9, 10, 15, 16, 26 };
    for (int k = 0; k < 6; k++) {
        size_t len = 0;
        char *bytes = cf_test_slurp(dir, names[k], &len);
        CHECK(bytes != NULL);
        if (!bytes) continue;
        int64_t got;
        CHECK_EQ_INT(len, 8);
        memcpy(&got, bytes, 8);
        CHECK_EQ_INT(got, 1000 + blobs[k]);
        free(bytes);
    }
    CHECK(!exists(dir, "00000a"));
    CHECK_OK(cf_column_open(&c, f, "h", &err), &err);
    int64_t back[27];
    CHECK_OK(cf_column_read(c, 0, 27, back, NULL, 8, 8, &err), &err);
    CHECK(memcmp(back, v, sizeof v) == 0);
    CHECK_OK(cf_column_close(c, &err), &err);
    cf_file_close(f);
}

static void test_grow_and_crc_after_overwrite(void)
{
    cf_error err;
    cf_file *f = cf_test_open_new("grow");
    cf_column *c;
    int32_t a[10];
    for (int i = 0; i < 10; i++) a[i] = i;
    CHECK_OK(cf_column_create(&c, f, "g", "i4", 1, 10, 1, &err), &err);
    CHECK_OK(cf_column_write(c, 0, 10, a, NULL, 4, 4, &err), &err);
    CHECK_OK(cf_column_grow(c, 5, 2, &err), &err);
    CHECK_EQ_INT(cf_column_size(c), 15);
    CHECK_EQ_INT(cf_column_nfile(c), 3);
    CHECK_EQ_INT(cf_column_blob_rows(c, 1), 2);
    CHECK_EQ_INT(cf_column_blob_rows(c, 2), 3);
    CHECK_OK(cf_column_write(c, 10, 5, a, NULL, 4, 4, &err), &err);
    CHECK_OK(cf_column_close(c, &err), &err);
    CHECK_OK(cf_column_open(&c, f, "g", &err), &err);
    uint32_t crc;
    CHECK(cf_column_blob_crc32c(c, 0, &crc));
    CHECK_EQ_INT(crc, cf__crc32c_update(0, a, 40));
    /* Overwrite the middle of blob 0: the byte sum counts the bytes twice
     * (as bigfile does) while the CRC is recomputed from the data. */
    uint32_t before = cf_column_blob_sum(c, 0);
    CHECK_OK(cf_column_write(c, 3, 2, a + 3, NULL, 4, 4, &err), &err);
    CHECK_EQ_INT(cf_column_blob_sum(c, 0), before + cf__sysv_add(0, a + 3, 8));
    CHECK(!cf_column_blob_crc32c(c, 0, &crc));
    CHECK_OK(cf_column_close(c, &err), &err);
    CHECK_OK(cf_column_open(&c, f, "g", &err), &err);
    CHECK(cf_column_blob_crc32c(c, 0, &crc));
    CHECK_EQ_INT(crc, cf__crc32c_update(0, a, 40));
    unsigned st;
    CHECK_OK(cf_column_verify_blob(c, 0, &st, &err), &err);
    CHECK_EQ_INT(st, CF_BLOB_SUM_MISMATCH); /* the double-counted sum, like bigfile */
    CHECK_OK(cf_column_verify_blob(c, 2, &st, &err), &err);
    CHECK_EQ_INT(st, CF_BLOB_OK);
    CHECK_OK(cf_column_close(c, &err), &err);
    cf_file_close(f);
}

static int blob_exists(const char *sub, const char *col, const char *blob)
{
    char p[4096];
    struct stat st;
    snprintf(p, sizeof p, "%s/%s/%s/%s", cf_test_dir(), sub, col, blob);
    return stat(p, &st) == 0;
}

/* An append that will not be committed (here: its changes discarded;
 * tests/python/test_disk_full.py fails its writes on a full disk) removes
 * the blobs it added: no header lists them, and on a
 * full disk they would keep it full.  The committed rows stay. */
static void test_uncommitted_append_leaves_no_blobs(void)
{
    cf_error err;
    cf_file *f = cf_test_open_new("drop");
    cf_column *c;
    int32_t a[10];
    for (int i = 0; i < 10; i++) a[i] = i;
    CHECK_OK(cf_column_create(&c, f, "g", "i4", 1, 10, 1, &err), &err);
    CHECK_OK(cf_column_write(c, 0, 10, a, NULL, 4, 4, &err), &err);
    CHECK_OK(cf_column_close(c, &err), &err);
    /* discarded, then closed */
    CHECK_OK(cf_column_open(&c, f, "g", &err), &err);
    CHECK_OK(cf_column_grow(c, 6, 2, &err), &err);
    CHECK_OK(cf_column_write(c, 10, 6, a, NULL, 4, 4, &err), &err);
    CHECK(blob_exists("drop", "g", "000001") && blob_exists("drop", "g", "000002"));
    cf_column_discard(c);
    CHECK(!blob_exists("drop", "g", "000001") && !blob_exists("drop", "g", "000002"));
    CHECK(cf_column_close(c, &err) == CF_EIO);
    CHECK(blob_exists("drop", "g", "000000") && !blob_exists("drop", "g", "000001"));
    CHECK_OK(cf_column_open(&c, f, "g", &err), &err);
    CHECK_EQ_INT(cf_column_size(c), 10);
    CHECK_EQ_INT(cf_column_nfile(c), 1);
    int32_t back[10];
    CHECK_OK(cf_column_read(c, 0, 10, back, NULL, 4, 4, &err), &err);
    CHECK(memcmp(back, a, sizeof a) == 0);
    /* the limits of grow name themselves */
    CHECK_FAILS(cf_column_grow(c, 1, (int64_t)1 << 24, &err), CF_EARG, &err,
                "cannot add 16777216 blobs to its 1: a column has at most 16777216");
    CHECK_FAILS(cf_column_grow(c, INT64_MAX / 4, 1, &err), CF_EARG, &err,
                "its byte count would exceed 2^63-1");
    CHECK_OK(cf_column_close(c, &err), &err);
    cf_file_close(f);
}

static void test_damaged_blobs(void)
{
    cf_error err;
    cf_file *f = cf_test_open_new("damaged");
    cf_column *c;
    int64_t a[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
    CHECK_OK(cf_column_create(&c, f, "d", "i8", 1, 8, 2, &err), &err);
    CHECK_OK(cf_column_write(c, 0, 8, a, NULL, 8, 8, &err), &err);
    CHECK_OK(cf_column_close(c, &err), &err);
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/damaged/d", cf_test_dir());
    char blob[4200];
    snprintf(blob, sizeof blob, "%s/000001", dir);
    CHECK(truncate(blob, 20) == 0);
    CHECK_OK(cf_column_open(&c, f, "d", &err), &err);
    int64_t out[8];
    CHECK_OK(cf_column_read(c, 0, 6, out, NULL, 8, 8, &err), &err); /* intact part */
    CHECK_FAILS(cf_column_read(c, 6, 2, out, NULL, 8, 8, &err), CF_ESHORT, &err, "000001");
    unsigned st;
    CHECK_OK(cf_column_verify_blob(c, 1, &st, &err), &err);
    CHECK(st & CF_BLOB_SHORT);
    CHECK_OK(cf_column_close(c, &err), &err);
    CHECK(unlink(blob) == 0);
    CHECK_OK(cf_column_open(&c, f, "d", &err), &err);
    CHECK_FAILS(cf_column_read(c, 4, 1, out, NULL, 8, 8, &err), CF_ENOENT, &err, "000001: blob file is missing");
    CHECK_OK(cf_column_verify_blob(c, 1, &st, &err), &err);
    CHECK(st & CF_BLOB_MISSING);
    CHECK_OK(cf_column_close(c, &err), &err);
    cf_file_close(f);
}

static void test_attributes(void)
{
    cf_error err;
    cf_file *f = cf_test_open_new("attrs");
    cf_column *c;
    CHECK_OK(cf_column_create(&c, f, ".", NULL, 0, 0, 0, &err), &err);
    double box = 1000.0;
    CHECK_OK(cf_column_attr_set(c, "BoxSize", "f8", 1, &box, &err), &err);
    CHECK_OK(cf_column_attr_set(c, "Version", "<a1", 3, "1.0", &err), &err);
    CHECK_OK(cf_column_attr_set(c, "Empty", "f8", 0, NULL, &err), &err);
    CHECK_FAILS(cf_column_attr_set(c, "bad name", "f8", 1, &box, &err), CF_ENAME, &err, "attrs");
    CHECK_OK(cf_column_close(c, &err), &err);
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/attrs", cf_test_dir());
    char *v2 = cf_test_slurp(dir, "attr-v2", NULL);
    CHECK_EQ_STR(v2, "BoxSize <f8 1 0000000000408F40 #HUMANE [ 1000 ]\nVersion <a1 3 312E30 #HUMANE [ 1.0 ]\n");
    free(v2);
    CHECK(exists(dir, "colfile-attrs"));
    CHECK(!exists(dir, "header"));

    CHECK_OK(cf_column_open(&c, f, ".", &err), &err);
    CHECK_EQ_INT(cf_column_kind(c), CF_KIND_ATTRS_ONLY);
    const char *dt;
    int64_t nmemb;
    const void *data;
    CHECK_OK(cf_column_attr_get(c, "Empty", &dt, &nmemb, &data, &err), &err);
    CHECK_EQ_INT(nmemb, 0);
    CHECK_EQ_STR(dt, "<f8");
    CHECK_OK(cf_column_attr_get(c, "BoxSize", &dt, &nmemb, &data, &err), &err);
    CHECK(*(const double *)data == 1000.0);
    char **names;
    int64_t n;
    CHECK_OK(cf_column_attr_names(c, &names, &n, &err), &err);
    CHECK_EQ_INT(n, 3);
    CHECK_EQ_STR(names[0], "BoxSize");
    cf_names_free(names, n);
    CHECK_OK(cf_column_attr_delete(c, "Empty", &err), &err);
    CHECK_FAILS(cf_column_attr_delete(c, "Empty", &err), CF_ENOENT, &err, "no attribute 'Empty'");
    CHECK(!exists(dir, "colfile-attrs"));
    CHECK_FAILS(cf_column_read(c, 0, 0, &box, NULL, 8, 8, &err), CF_EKIND, &err, NULL);
    CHECK_OK(cf_column_close(c, &err), &err);
    /* Group attributes do not turn the group into a column. */
    CHECK_OK(cf_column_create(&c, f, "1/.", NULL, 0, 0, 0, &err), &err);
    int64_t seven = 7;
    CHECK_OK(cf_column_attr_set(c, "N", "i8", 1, &seven, &err), &err);
    CHECK_OK(cf_column_close(c, &err), &err);
    char **list;
    CHECK_OK(cf_file_list(f, &list, &n, &err), &err);
    CHECK_EQ_INT(n, 0);
    cf_names_free(list, n);
    cf_file_close(f);
}

static void test_names_and_modes(void)
{
    cf_error err;
    cf_file *f = cf_test_open_new("modes");
    cf_column *c;
    const char *bad[] = { "../x", "/etc/x", "", "a b", "a/../../b" };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        CHECK_FAILS(cf_column_create(&c, f, bad[i], "f8", 1, 1, 1, &err), CF_ENAME, &err, NULL);
    CHECK_FAILS(cf_column_create(&c, f, "x", "U3", 1, 1, 1, &err), CF_EDTYPE, &err, NULL);
    CHECK_FAILS(cf_column_create(&c, f, "x", "S17", 1, 1, 1, &err), CF_EDTYPE, &err, "at most S16");
    CHECK_FAILS(cf_column_create(&c, f, "x", "f8", 1, 1, 16777217, &err), CF_EARG, &err, "6 hex digits");
    CHECK_FAILS(cf_column_create(&c, f, "y", "f8", 1, 5, 0, &err), CF_EARG, &err, "nfile 0");
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/modes", cf_test_dir());
    CHECK(!exists(cf_test_dir(), "x") && !exists(dir, "x") && !exists(dir, "y"));
    CHECK_OK(cf_column_create(&c, f, "meta", NULL, 0, 0, 0, &err), &err);
    CHECK_EQ_INT(cf_column_kind(c), CF_KIND_HEADER_ONLY);
    CHECK_OK(cf_column_close(c, &err), &err);
    char *header = cf_test_slurp(dir, "meta/header", NULL);
    CHECK_EQ_STR(header, "DTYPE: <i8\nNMEMB: 0\nNFILE: 0\n");
    free(header);
    CHECK_OK(cf_column_create(&c, f, "a/b/col", "u1", 1, 0, 3, &err), &err);
    CHECK_OK(cf_column_close(c, &err), &err);
    char **list;
    int64_t n;
    CHECK_OK(cf_file_list(f, &list, &n, &err), &err);
    CHECK_EQ_INT(n, 2);
    CHECK_EQ_STR(list[0], "a/b/col");
    CHECK_EQ_STR(list[1], "meta");
    cf_names_free(list, n);
    CHECK_FAILS(cf_column_open(&c, f, "nope", &err), CF_ENOENT, &err, "no column 'nope'");
    cf_file_close(f);

    /* Read-only handles refuse writes. */
    CHECK_OK(cf_file_open(&f, dir, CF_OPEN_READ, &err), &err);
    CHECK_FAILS(cf_column_create(&c, f, "z", "f8", 1, 1, 1, &err), CF_EREADONLY, &err, "read-only");
    CHECK_OK(cf_column_open(&c, f, "a/b/col", &err), &err);
    CHECK_FAILS(cf_column_write(c, 0, 0, "", NULL, 1, 1, &err), CF_EREADONLY, &err, NULL);
    CHECK_FAILS(cf_column_attr_set(c, "k", "i8", 0, NULL, &err), CF_EREADONLY, &err, NULL);
    CHECK_OK(cf_column_close(c, &err), &err);
    CHECK_FAILS(cf_file_remove(f, "meta", &err), CF_EREADONLY, &err, NULL);
    cf_file_close(f);

    /* EXCL, missing, truncate that refuses foreign files. */
    CHECK_FAILS(cf_file_open(&f, dir, CF_OPEN_WRITE | CF_OPEN_CREATE | CF_OPEN_EXCL, &err), CF_EEXIST, &err, NULL);
    char missing[4200];
    snprintf(missing, sizeof missing, "%s/none", dir);
    CHECK_FAILS(cf_file_open(&f, missing, CF_OPEN_READ, &err), CF_ENOENT, &err, "none");
    FILE *fp = fopen(missing, "w");
    fputs("precious", fp);
    fclose(fp);
    CHECK_FAILS(cf_file_open(&f, dir, CF_OPEN_WRITE | CF_OPEN_TRUNCATE, &err), CF_ENOTFILE, &err, "none");
    CHECK(exists(dir, "meta/header"));
    unlink(missing);
    CHECK_OK(cf_file_open(&f, dir, CF_OPEN_WRITE | CF_OPEN_TRUNCATE, &err), &err);
    CHECK(!exists(dir, "meta"));
    /* remove */
    CHECK_OK(cf_column_create(&c, f, "r", "f4", 1, 10, 2, &err), &err);
    CHECK_OK(cf_column_close(c, &err), &err);
    CHECK_OK(cf_file_remove(f, "r", &err), &err);
    CHECK(!exists(dir, "r"));
    CHECK_FAILS(cf_file_remove(f, "r", &err), CF_ENOENT, &err, NULL);
    cf_file_close(f);
}

/* More than 2^31 rows and more than 2 GiB in one blob, on a sparse file. */
static void test_large_sparse(void)
{
    cf_error err;
    cf_file *f = cf_test_open_new("large");
    cf_column *c;
    const int64_t rows = INT64_C(3) << 30; /* 3 Gi rows of int64: 24 GiB */
    CHECK_OK(cf_column_create(&c, f, "big", "i8", 1, rows, 1, &err), &err);
    int64_t tail[4] = { -1, INT64_MAX, 42, INT64_MIN };
    CHECK_OK(cf_column_write(c, rows - 4, 4, tail, NULL, 8, 8, &err), &err);
    CHECK_OK(cf_column_close(c, &err), &err);
    CHECK_OK(cf_column_open(&c, f, "big", &err), &err);
    CHECK_EQ_INT(cf_column_size(c), rows);
    CHECK_EQ_INT(cf_column_blob_rows(c, 0), rows);
    int64_t back[6];
    CHECK_OK(cf_column_read(c, rows - 6, 6, back, NULL, 8, 8, &err), &err);
    CHECK_EQ_INT(back[0], 0); /* a hole reads as zeros */
    CHECK_EQ_MEM(back + 2, tail, sizeof tail);
    int64_t picks[] = { INT64_C(1) << 31, rows - 2 };
    int64_t got[2];
    CHECK_OK(cf_column_read_rows(c, picks, 2, got, NULL, 8, 8, &err), &err);
    CHECK_EQ_INT(got[1], 42);
    CHECK_OK(cf_column_close(c, &err), &err);
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/large/big", cf_test_dir());
    char *header = cf_test_slurp(dir, "header", NULL);
    CHECK(header && strstr(header, "000000: 3221225472 : "));
    free(header);
    cf_file_close(f);
}

/* ---- bigfile's own layout, from literal files ---------------------------
 * Files as bigfile 0.1.52 writes them (no colfile extension, so no CRC),
 * copied into the test: a sparse <i4 column whose 3 rows are spread over 7
 * blobs, and a header-only block that hides a column below it. */

/* Write `len` bytes to tree/name, making the directories on the way. */
static void put_file(const char *tree, const char *name, const void *bytes, size_t len)
{
    char path[4096];
    int n = snprintf(path, sizeof path, "%s/%s", tree, name);
    CHECK(n > 0 && (size_t)n < sizeof path);
    for (char *p = path + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        if (mkdir(path, 0777) != 0) {
            struct stat st;
            CHECK(stat(path, &st) == 0 && S_ISDIR(st.st_mode));
        }
        *p = '/';
    }
    FILE *fp = fopen(path, "wb");
    CHECK(fp != NULL);
    if (!fp) return;
    if (len) CHECK_EQ_INT(fwrite(bytes, 1, len, fp), len);
    CHECK(fclose(fp) == 0);
}
#define PUT_TEXT(tree, name, text) put_file((tree), (name), (text), strlen(text))

static void test_reads_bigfile_layout(void)
{
    char main_tree[4096], shadow_tree[4096];
    snprintf(main_tree, sizeof main_tree, "%s/bf/main", cf_test_dir());
    snprintf(shadow_tree, sizeof shadow_tree, "%s/bf/shadow", cf_test_dir());

    PUT_TEXT(main_tree, "split/sparse/header",
             "DTYPE: <i4\nNMEMB: 1\nNFILE: 7\n"
             "000000: 0 : 0 : 0\n000001: 0 : 0 : 0\n000002: 1 : 717 : 717\n000003: 0 : 0 : 0\n"
             "000004: 1 : 764 : 764\n000005: 0 : 0 : 0\n000006: 1 : 404 : 404\n");
    PUT_TEXT(main_tree, "split/sparse/attr-v2", "");
    static const unsigned char row0[] = {0x52, 0xB9, 0xCD, 0xF5}, row1[] = {0xF9, 0x62, 0xE1, 0xC0},
                               row2[] = {0x41, 0xE4, 0x06, 0x69};
    const unsigned char *rows[7] = {NULL, NULL, row0, NULL, row1, NULL, row2};
    for (int i = 0; i < 7; i++) {
        char name[64];
        snprintf(name, sizeof name, "split/sparse/%06X", i);
        put_file(main_tree, name, rows[i], rows[i] ? 4 : 0); /* empty blobs exist, empty */
    }

    PUT_TEXT(shadow_tree, "grp/header", "DTYPE: <i8\nNMEMB: 0\nNFILE: 0\n");
    PUT_TEXT(shadow_tree, "grp/attr-v2",
             "Note <a1 47 74686973206865616465722D6F6E6C7920626C6F636B20686964657320697473207375626469"
             "726563746F72696573 #HUMANE [ this header-only block hides its subdirectories ]\n");
    static const unsigned char col_blob[] = {
        0x2A, 0xF4, 0xE6, 0xD1, 0xFF, 0xFF, 0xFF, 0x7F, 0xAB, 0xDE, 0x5A, 0xAB,
        0x5E, 0x45, 0x49, 0x9A, 0xE5, 0xB3, 0x1D, 0x46, 0x2E, 0x10, 0x88, 0x54,
        0x00, 0x00, 0x00, 0x80, 0x68, 0xEB, 0x8E, 0x18, 0x28, 0xFE, 0x87, 0x42};
    PUT_TEXT(shadow_tree, "grp/sub/col/header", "DTYPE: <i4\nNMEMB: 1\nNFILE: 1\n000000: 9 : 4578 : 4578\n");
    PUT_TEXT(shadow_tree, "grp/sub/col/attr-v2", "");
    put_file(shadow_tree, "grp/sub/col/000000", col_blob, sizeof col_blob);
    static const unsigned char other_blob[] = {
        0xF6, 0x68, 0x19, 0x4A, 0xB9, 0x3D, 0x2C, 0x3A, 0xCD, 0xDC, 0x8F, 0xB1,
        0xF7, 0x5D, 0x56, 0x38, 0x4C, 0x58, 0xEA, 0xBD, 0x84, 0xB7, 0x6B, 0xC3,
        0x90, 0x01, 0xF5, 0x32, 0x96, 0x81, 0x38, 0x3B};
    PUT_TEXT(shadow_tree, "other/header", "DTYPE: <f4\nNMEMB: 1\nNFILE: 1\n000000: 8 : 4062 : 4062\n");
    PUT_TEXT(shadow_tree, "other/attr-v2", "");
    put_file(shadow_tree, "other/000000", other_blob, sizeof other_blob);

    cf_error err;
    cf_file *f;
    CHECK_OK(cf_file_open(&f, main_tree, CF_OPEN_READ, &err), &err);
    cf_column *c;
    CHECK_OK(cf_column_open(&c, f, "split/sparse", &err), &err);
    CHECK_EQ_INT(cf_column_size(c), 3);
    CHECK_EQ_INT(cf_column_nfile(c), 7);
    CHECK_EQ_INT(cf_column_blob_rows(c, 2), 1);
    CHECK_EQ_INT(cf_column_blob_sum(c, 2), 717);
    int32_t v[3];
    CHECK_OK(cf_column_read(c, 0, 3, v, NULL, 4, 4, &err), &err);
    CHECK_EQ_INT(v[0], -171067054);
    CHECK_EQ_INT(v[1], -1058970887);
    CHECK_EQ_INT(v[2], 1762059329);
    unsigned st;
    for (int64_t i = 0; i < 7; i++) {
        CHECK_OK(cf_column_verify_blob(c, i, &st, &err), &err);
        CHECK_EQ_INT(st, CF_BLOB_CRC_UNKNOWN); /* bigfile wrote no CRC */
    }
    CHECK_OK(cf_column_close(c, &err), &err);
    CHECK_FAILS(cf_column_create(&c, f, "x", "f8", 1, 1, 1, &err), CF_EREADONLY, &err, NULL);
    cf_file_close(f);

    CHECK_OK(cf_file_open(&f, shadow_tree, CF_OPEN_READ, &err), &err);
    char **list;
    int64_t n;
    CHECK_OK(cf_file_list(f, &list, &n, &err), &err);
    CHECK_EQ_INT(n, 2); /* the header-only block hides grp/sub/col */
    if (n == 2) {
        CHECK_EQ_STR(list[0], "grp");
        CHECK_EQ_STR(list[1], "other");
    }
    cf_names_free(list, n);
    CHECK_OK(cf_column_open(&c, f, "grp", &err), &err);
    CHECK_EQ_INT(cf_column_kind(c), CF_KIND_HEADER_ONLY);
    const char *dt;
    int64_t nmemb;
    const void *data;
    CHECK_OK(cf_column_attr_get(c, "Note", &dt, &nmemb, &data, &err), &err);
    CHECK_EQ_INT(nmemb, 47);
    CHECK_OK(cf_column_close(c, &err), &err);
    CHECK_OK(cf_column_open(&c, f, "grp/sub/col", &err), &err); /* opens by name */
    CHECK_EQ_INT(cf_column_size(c), 9);
    int32_t w[9];
    CHECK_OK(cf_column_read(c, 0, 9, w, NULL, 4, 4, &err), &err);
    CHECK_EQ_MEM(w, col_blob, sizeof col_blob); /* the column's own dtype: bytes as stored */
    CHECK_OK(cf_column_verify_blob(c, 0, &st, &err), &err);
    CHECK_EQ_INT(st, CF_BLOB_CRC_UNKNOWN);
    CHECK_OK(cf_column_close(c, &err), &err);
    cf_file_close(f);
}

/* ---- every column of every fixture set -----------------------------------
 * A fixture set is any directory under CF_FIXTURES_DIR holding a
 * manifest.json; its trees are its subdirectories.  Names, shapes, split
 * counts and values differ between sets, so they are found, not assumed. */

typedef struct {
    int trees, columns, header_only, blobs, sum_mismatch_columns;
    int64_t rows;
} column_tally;

/* Open, read whole and verify one listed column. */
static void check_fixture_column(cf_file *f, const char *tree, const char *name, column_tally *t)
{
    cf_error err;
    cf_column *c = NULL;
    int rc = cf_column_open(&c, f, name, &err);
    if (rc != 0) {
        fprintf(stderr, "%s: cannot open '%s': %s\n", tree, name, err.message);
        cf_test_failures++;
        return;
    }
    t->columns++;
    if (cf_column_kind(c) == CF_KIND_HEADER_ONLY) t->header_only++;
    int64_t size = cf_column_size(c), nmemb = cf_column_nmemb(c), item = cf_column_itemsize(c);
    int64_t nfile = cf_column_nfile(c), rowbytes = nmemb * item;
    CHECK(size >= 0 && nmemb >= 0 && item > 0 && nfile >= 0);
    size_t total = (size_t)(size * rowbytes);
    unsigned char *buf = malloc(total ? total : 1);
    CHECK(buf != NULL);
    if (buf) {
        rc = cf_column_read(c, 0, size, buf, NULL, rowbytes, item, &err);
        if (rc != 0) {
            fprintf(stderr, "%s: reading '%s' failed: %s\n", tree, name, err.message);
            cf_test_failures++;
        }
        t->rows += size;
    }
    int64_t rows_seen = 0;
    int mismatch = 0;
    for (int64_t i = 0; i < nfile; i++) {
        int64_t r = cf_column_blob_rows(c, i);
        CHECK(r >= 0);
        /* read in the column's own dtype, the rows are the blob bytes */
        if (buf && rc == 0 && r > 0) {
            char blob[64];
            snprintf(blob, sizeof blob, "%06" PRIX64, i);
            size_t blen = 0;
            char *bytes = cf_test_slurp(cf_column_path(c), blob, &blen);
            size_t want = (size_t)(r * rowbytes);
            if (!bytes || blen < want || memcmp(bytes, buf + rows_seen * rowbytes, want) != 0) {
                fprintf(stderr, "%s: '%s' blob %s differs from the rows read\n", tree, name, blob);
                cf_test_failures++;
            }
            free(bytes);
        }
        rows_seen += r;
        unsigned st = 0;
        CHECK_OK(cf_column_verify_blob(c, i, &st, &err), &err);
        if (st & ~(unsigned)(CF_BLOB_CRC_UNKNOWN | CF_BLOB_SUM_MISMATCH)) {
            fprintf(stderr, "%s: '%s' blob %" PRId64 " has status 0x%x\n", tree, name, i, st);
            cf_test_failures++;
        }
        if (st & CF_BLOB_SUM_MISMATCH) mismatch = 1;
        t->blobs++;
    }
    CHECK_EQ_INT(rows_seen, size);
    if (mismatch) {
        printf("    %s: '%s' has blobs whose header sum differs from the content\n", tree, name);
        t->sum_mismatch_columns++;
    }
    free(buf);
    CHECK_OK(cf_column_close(c, &err), &err);
}

static void check_fixture_tree(const char *tree, column_tally *t)
{
    cf_error err;
    cf_file *f = NULL;
    int rc = cf_file_open(&f, tree, CF_OPEN_READ, &err);
    if (rc != 0) {
        fprintf(stderr, "%s: cf_file_open failed: %s\n", tree, err.message);
        cf_test_failures++;
        return;
    }
    t->trees++;
    cf_column *c;
    CHECK_FAILS(cf_column_create(&c, f, "x", "f8", 1, 1, 1, &err), CF_EREADONLY, &err, NULL);
    char **names = NULL;
    int64_t n = 0;
    CHECK_OK(cf_file_list(f, &names, &n, &err), &err);
    for (int64_t i = 0; i < n; i++) check_fixture_column(f, tree, names[i], t);
    cf_names_free(names, n);
    cf_file_close(f);
}

static void test_reads_every_fixture_column(void)
{
    fixture_sets sets = find_fixture_sets();
    CHECK(sets.count >= 1);
    for (size_t s = 0; s < sets.count; s++) {
        dir_list trees = {NULL, 0};
        DIR *d = opendir(sets.dirs[s]);
        CHECK(d != NULL);
        struct dirent *e;
        char path[4096];
        while (d && (e = readdir(d)) != NULL) {
            if (e->d_name[0] == '.') continue;
            snprintf(path, sizeof path, "%s/%s", sets.dirs[s], e->d_name);
            if (is_dir(path)) dir_list_add(&trees, path);
        }
        if (d) closedir(d);
        dir_list_sort(&trees);
        column_tally t = {0, 0, 0, 0, 0, 0};
        for (size_t i = 0; i < trees.count; i++) check_fixture_tree(trees.dirs[i], &t);
        printf("  (%s: %d trees, %d columns (%d header-only), %" PRId64 " rows, %d blobs verified)\n",
               sets.dirs[s], t.trees, t.columns, t.header_only, t.rows, t.blobs);
        CHECK(t.trees >= 1);
        CHECK(t.columns >= 10);
        CHECK(t.sum_mismatch_columns <= 1); /* the double-counting quirk, one column at most */
        dir_list_free(&trees);
    }
    dir_list_free(&sets);
}

/* Remove the staging directory of new column `leaf` in File directory
 * `fdir` (and the blob in it): its commit must then fail. */
static void remove_stage(const char *fdir, const char *leaf)
{
    char prefix[256], path[4096];
    snprintf(prefix, sizeof prefix, ".colfile-stage.%s.", leaf);
    DIR *d = opendir(fdir);
    CHECK(d != NULL);
    struct dirent *e;
    int found = 0;
    while (d && (e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, prefix, strlen(prefix)) != 0) continue;
        snprintf(path, sizeof path, "%s/%s/000000", fdir, e->d_name);
        CHECK(unlink(path) == 0);
        snprintf(path, sizeof path, "%s/%s/.colfile-owner", fdir, e->d_name);
        (void)unlink(path); /* the writer's owner record */
        snprintf(path, sizeof path, "%s/%s", fdir, e->d_name);
        CHECK(rmdir(path) == 0);
        found++;
    }
    if (d) closedir(d);
    CHECK_EQ_INT(found, 1);
}

/* What create finds at the name decides: nothing (made), a column
 * (replaced), a file or a group (refused, left as it was). */
static void test_create_over_what_is_there(void)
{
    cf_error err;
    cf_file *f = cf_test_open_new("over");
    char fdir[4096], p[4200];
    snprintf(fdir, sizeof fdir, "%s/over", cf_test_dir());
    snprintf(p, sizeof p, "%s/plain", fdir);
    FILE *fp = fopen(p, "w");
    fputs("precious", fp);
    fclose(fp);
    snprintf(p, sizeof p, "%s/g/sub", fdir);
    CHECK(mkdir(p, 0777) != 0); /* g is missing: made below */
    cf_column *c;
    int32_t v[2] = { 1, 2 };
    CHECK_OK(cf_column_create(&c, f, "g/sub/x", "i4", 1, 2, 1, &err), &err);
    CHECK_OK(cf_column_write(c, 0, 2, v, NULL, 4, 4, &err), &err);
    CHECK_OK(cf_column_close(c, &err), &err);
    CHECK_FAILS(cf_column_create(&c, f, "plain", "i4", 1, 2, 1, &err), CF_EEXIST, &err,
                "exists and is not a directory");
    CHECK_FAILS(cf_column_create(&c, f, "g", "i4", 1, 2, 1, &err), CF_EEXIST, &err, "is a group");
    CHECK_FAILS(cf_column_create(&c, f, "plain/y", "i4", 1, 2, 1, &err), CF_ENOTFILE, &err, "plain");
    size_t n = 0;
    char *text = cf_test_slurp(fdir, "plain", &n);
    CHECK(text && strcmp(text, "precious") == 0);
    free(text);
    CHECK(exists(fdir, "g/sub/x/header"));
    /* a column is replaced */
    v[0] = 7;
    CHECK_OK(cf_column_create(&c, f, "g/sub/x", "i4", 1, 2, 1, &err), &err);
    CHECK_OK(cf_column_write(c, 0, 2, v, NULL, 4, 4, &err), &err);
    CHECK_OK(cf_column_close(c, &err), &err);
    int32_t back[2] = { 0, 0 };
    CHECK_OK(cf_column_open(&c, f, "g/sub/x", &err), &err);
    CHECK_OK(cf_column_read(c, 0, 2, back, NULL, 4, 4, &err), &err);
    CHECK_EQ_INT(back[0], 7);
    CHECK_OK(cf_column_close(c, &err), &err);
    cf_file_close(f);
}

static void test_close_many(void)
{
    cf_error err, errs[3];
    cf_file *f = cf_test_open_new("many");
    char fdir[4096];
    snprintf(fdir, sizeof fdir, "%s/many", cf_test_dir());
    cf_column *cols[3];
    const char *names[3] = { "a", "b", "c" };
    for (int i = 0; i < 3; i++) {
        int32_t v[3] = { i, i + 1, i + 2 };
        CHECK_OK(cf_column_create(&cols[i], f, names[i], "i4", 1, 3, 1, &err), &err);
        CHECK_OK(cf_column_write(cols[i], 0, 3, v, NULL, 4, 4, &err), &err);
    }
    remove_stage(fdir, "b");
    memset(errs, 0x55, sizeof errs); /* codes must be set, not left as found */
    CHECK_EQ_INT(cf_column_close_many(cols, 3, errs), 1);
    CHECK_EQ_INT(errs[0].code, 0);
    CHECK(errs[1].code < 0);
    CHECK(strstr(errs[1].message, "/.colfile-stage.b.") != NULL);
    CHECK_EQ_INT(errs[2].code, 0);
    CHECK_EQ_INT(cf_column_close_many(NULL, 0, NULL), 0);
    cf_column *c;
    for (int i = 0; i < 3; i += 2) {
        int32_t back[3];
        CHECK_OK(cf_column_open(&c, f, names[i], &err), &err);
        CHECK_OK(cf_column_read(c, 0, 3, back, NULL, 4, 4, &err), &err);
        CHECK_EQ_INT(back[2], i + 2);
        CHECK_OK(cf_column_close(c, &err), &err);
    }
    CHECK_FAILS(cf_column_open(&c, f, "b", &err), CF_ENOENT, &err, NULL);
    cf_file_close(f);
}

/* cf_column_row_offset: the byte offset of a row within its blob, past
 * blobs of no rows, -1 outside the column; the same after reopening. */
static void test_row_offset(void)
{
    cf_error err;
    cf_file *f = cf_test_open_new("rowoff");
    cf_column *c;
    const int64_t rows[4] = { 3, 0, 5, 2 };
    CHECK_OK(cf_column_create_blobs(&c, f, "v", "f4", 3, 4, rows, &err), &err);
    for (int pass = 0; pass < 2; pass++) {
        const int64_t want[10] = { 0, 12, 24, 0, 12, 24, 36, 48, 0, 12 };
        for (int64_t r = 0; r < 10; r++) CHECK_EQ_INT(cf_column_row_offset(c, r), want[r]);
        CHECK_EQ_INT(cf_column_row_offset(c, -1), -1);
        CHECK_EQ_INT(cf_column_row_offset(c, 10), -1);
        CHECK_OK(cf_column_close(c, &err), &err);
        if (pass == 0) CHECK_OK(cf_column_open(&c, f, "v", &err), &err);
    }
    CHECK_OK(cf_column_open(&c, f, ".", &err), &err); /* attributes only: no rows */
    CHECK_EQ_INT(cf_column_row_offset(c, 0), -1);
    CHECK_OK(cf_column_close(c, &err), &err);
    CHECK_EQ_INT(cf_column_row_offset(NULL, 0), -1);
    cf_file_close(f);
}

CF_TESTS(CF_TEST(test_roundtrip_vector_column), CF_TEST(test_row_offset), CF_TEST(test_close_many), CF_TEST(test_create_over_what_is_there), CF_TEST(test_blob_names_are_hex), CF_TEST(test_cast_and_strided_write), CF_TEST(test_read_rows),
         CF_TEST(test_grow_and_crc_after_overwrite), CF_TEST(test_uncommitted_append_leaves_no_blobs), CF_TEST(test_damaged_blobs), CF_TEST(test_attributes),
         CF_TEST(test_names_and_modes), CF_TEST(test_large_sparse), CF_TEST(test_reads_bigfile_layout),
         CF_TEST(test_reads_every_fixture_column))
