/* test_column.c - Files and columns through the public API, on real files. */
#include "harness.h"

#include <fcntl.h>
#include <sys/stat.h>

#include "checksum.h"
#include "colfile.h"

static char *slurp(const char *dir, const char *name, size_t *len)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *fp = fopen(path, "rb");
    if (!fp) return NULL;
    fseek(fp, 0, SEEK_END);
    long n = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    size_t got = fread(buf, 1, (size_t)n, fp);
    buf[got] = 0;
    fclose(fp);
    if (len) *len = got;
    return buf;
}

static int exists(const char *dir, const char *name)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    struct stat st;
    return stat(path, &st) == 0;
}

static cf_file *open_new(const char *sub)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", cf_test_dir(), sub);
    cf_file *f = NULL;
    cf_error err;
    CHECK_OK(cf_file_open(&f, path, CF_OPEN_WRITE | CF_OPEN_CREATE, &err), &err);
    return f;
}

static void test_roundtrip_vector_column(void)
{
    cf_error err;
    cf_file *f = open_new("snap");
    cf_column *c = NULL;
    CHECK_OK(cf_column_create(&c, f, "1/Position", "f8", 3, 5, 2, &err), &err);
    CHECK_EQ_STR(cf_column_dtype(c), "<f8");
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
    char *blob0 = slurp(dir, "000000", &len);
    CHECK_EQ_INT(len, 48);
    CHECK_EQ_MEM(blob0, data, 48);
    uint32_t s0 = cf__sysv_add(0, data, 48), s1 = cf__sysv_add(0, data + 6, 72);
    char want[512];
    snprintf(want, sizeof want, "DTYPE: <f8\nNMEMB: 3\nNFILE: 2\n000000: 2 : %u : %u\n000001: 3 : %u : %u\n",
             s0, cf__sysv_fold(s0), s1, cf__sysv_fold(s1));
    char *header = slurp(dir, "header", NULL);
    CHECK_EQ_STR(header, want);
    char *attrs = slurp(dir, "attr-v2", &len);
    CHECK_EQ_INT(len, 0);
    char *ext = slurp(dir, "colfile-v1", NULL);
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
    cf_file *f = open_new("cast");
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
    cf_file *f = open_new("rows");
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
    int64_t unsorted[] = { 5, 1 };
    CHECK_FAILS(cf_column_read_rows(c, unsorted, 2, out, "i8", 8, 8, &err), CF_EARG, &err, "not sorted");
    int64_t outside[] = { 1, N };
    CHECK_FAILS(cf_column_read_rows(c, outside, 2, out, "i8", 8, 8, &err), CF_ERANGE, &err, "outside");
    CHECK_OK(cf_column_close(c, &err), &err);
    free(v);
    cf_file_close(f);
}

static void test_grow_and_crc_after_overwrite(void)
{
    cf_error err;
    cf_file *f = open_new("grow");
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

static void test_damaged_blobs(void)
{
    cf_error err;
    cf_file *f = open_new("damaged");
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
    cf_file *f = open_new("attrs");
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
    char *v2 = slurp(dir, "attr-v2", NULL);
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
    cf_file *f = open_new("modes");
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
    char *header = slurp(dir, "meta/header", NULL);
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
    cf_file *f = open_new("large");
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
    char *header = slurp(dir, "header", NULL);
    CHECK(header && strstr(header, "000000: 3221225472 : "));
    free(header);
    cf_file_close(f);
}

static void test_reads_bigfile_fixture(void)
{
    cf_error err;
    cf_file *f;
    CHECK_OK(cf_file_open(&f, CF_FIXTURES_DIR "/bigfile-0.1.52/main", CF_OPEN_READ, &err), &err);
    cf_column *c;
    CHECK_OK(cf_column_open(&c, f, "split/sparse", &err), &err);
    CHECK_EQ_INT(cf_column_size(c), 3);
    CHECK_EQ_INT(cf_column_nfile(c), 7);
    int32_t v[3];
    CHECK_OK(cf_column_read(c, 0, 3, v, NULL, 4, 4, &err), &err);
    CHECK_EQ_INT(v[0], -171067054);
    unsigned st;
    for (int64_t i = 0; i < 7; i++) {
        CHECK_OK(cf_column_verify_blob(c, i, &st, &err), &err);
        CHECK_EQ_INT(st, CF_BLOB_CRC_UNKNOWN); /* bigfile wrote no CRC */
    }
    CHECK_OK(cf_column_close(c, &err), &err);
    CHECK_FAILS(cf_column_create(&c, f, "x", "f8", 1, 1, 1, &err), CF_EREADONLY, &err, NULL);
    cf_file_close(f);
    CHECK_OK(cf_file_open(&f, CF_FIXTURES_DIR "/bigfile-0.1.52/shadow", CF_OPEN_READ, &err), &err);
    char **list;
    int64_t n;
    CHECK_OK(cf_file_list(f, &list, &n, &err), &err);
    CHECK_EQ_INT(n, 2);
    CHECK_EQ_STR(list[0], "grp");
    cf_names_free(list, n);
    CHECK_OK(cf_column_open(&c, f, "grp/sub/col", &err), &err);
    CHECK_OK(cf_column_close(c, &err), &err);
    cf_file_close(f);
}

CF_TESTS(CF_TEST(test_roundtrip_vector_column), CF_TEST(test_cast_and_strided_write), CF_TEST(test_read_rows),
         CF_TEST(test_grow_and_crc_after_overwrite), CF_TEST(test_damaged_blobs), CF_TEST(test_attributes),
         CF_TEST(test_names_and_modes), CF_TEST(test_large_sparse), CF_TEST(test_reads_bigfile_fixture))
