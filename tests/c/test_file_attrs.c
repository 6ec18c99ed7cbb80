/* test_file_attrs.c - cf_file_column_attrs: the packed buffer holds, column
 * by column, what cf_column_open + cf_column_attr_get give; which catalog
 * entries it trusts (cf__catalog_attrs). */
#include "harness.h"

#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include "catalog.h"
#include "file.h"

static void path_of(char *out, size_t cap, const char *rel)
{
    snprintf(out, cap, "%s/F%s%s", cf_test_dir(), rel[0] ? "/" : "", rel);
}

static cf_file *open_file(int flags)
{
    cf_error err;
    cf_file *f = NULL;
    char root[4200];
    path_of(root, sizeof root, "");
    CHECK_OK(cf_file_open(&f, root, flags, &err), &err);
    return f;
}

/* Columns a, g/b, g/h/c with attributes in attr-v2 and colfile-attrs, one
 * column (none) without attributes, and a catalog. */
static void make_file(void)
{
    cf_error err;
    cf_file *f = open_file(CF_OPEN_WRITE | CF_OPEN_CREATE);
    const char *names[] = { "a", "g/b", "g/h/c", "none" };
    for (int i = 0; i < 4; i++) {
        cf_column *c;
        CHECK_OK(cf_column_create(&c, f, names[i], "i4", 1, 2, 1, &err), &err);
        if (i < 3) {
            int64_t idx = i;
            double xs[2] = { 0.5, -1.0 };
            CHECK_OK(cf_column_attr_set(c, "index", "<i8", 1, &idx, &err), &err);
            CHECK_OK(cf_column_attr_set(c, "xs", ">f8", 2, xs, &err), &err);
            CHECK_OK(cf_column_attr_set(c, "empty", "<f4", 0, NULL, &err), &err); /* colfile-attrs */
            CHECK_OK(cf_column_attr_set(c, "s", "<a1", 5, "hello", &err), &err);
        }
        CHECK_OK(cf_column_close(c, &err), &err);
    }
    CHECK_OK(cf_file_catalog_update(f, &err), &err);
    cf_file_close(f);
}

static uint64_t word(const unsigned char *b, size_t i)
{
    uint64_t v;
    memcpy(&v, b + 8 * i, 8);
    return v;
}

/* Compare the packed buffer of f with cf_column_open + attr_get. */
static void check_matches(cf_file *f, int64_t want_cols)
{
    cf_error err;
    void *buf = NULL;
    size_t len = 0;
    CHECK_OK(cf_file_column_attrs(f, &buf, &len, &err), &err);
    if (!buf) return;
    const unsigned char *b = buf;
    CHECK(((uintptr_t)b & 7) == 0);
    uint64_t nc = word(b, 0), na = word(b, 1), text = word(b, 2), data = word(b, 3);
    CHECK_EQ_INT(nc, want_cols);
    CHECK_EQ_INT(text, 32 + 32 * nc + 56 * na);
    CHECK(text <= data && data <= len);
    char **names = NULL;
    int64_t count = 0;
    CHECK_OK(cf_file_list(f, &names, &count, &err), &err);
    CHECK_EQ_INT(count, nc);
    for (uint64_t i = 0; i < nc && (int64_t)i < count; i++) {
        const unsigned char *cr = b + 32 + 32 * i;
        const char *name = (const char *)b + word(cr, 0);
        CHECK_EQ_STR(name, names[i]);
        CHECK_EQ_INT(strlen(name), word(cr, 1));
        cf_column *c = NULL;
        CHECK_OK(cf_column_open(&c, f, name, &err), &err);
        char **an = NULL;
        int64_t nan = 0;
        CHECK_OK(cf_column_attr_names(c, &an, &nan, &err), &err);
        CHECK_EQ_INT(word(cr, 3), nan);
        for (int64_t k = 0; k < nan && k < (int64_t)word(cr, 3); k++) {
            const unsigned char *ar = b + 32 + 32 * nc + 56 * (word(cr, 2) + (uint64_t)k);
            const char *dtype;
            int64_t nmemb;
            const void *d;
            CHECK_EQ_STR((const char *)b + word(ar, 0), an[k]);
            CHECK_OK(cf_column_attr_get(c, an[k], &dtype, &nmemb, &d, &err), &err);
            CHECK_EQ_STR((const char *)b + word(ar, 2), dtype);
            CHECK_EQ_INT(word(ar, 3), strlen(dtype));
            CHECK_EQ_INT(word(ar, 4), nmemb);
            CHECK(word(ar, 5) >= data && word(ar, 5) + word(ar, 6) < len);
            int64_t itemsize = 0;
            CHECK_OK(cf_dtype_itemsize(dtype, &itemsize, &err), &err);
            CHECK_EQ_INT(word(ar, 6), nmemb * itemsize);
            if (word(ar, 6)) CHECK_EQ_MEM(b + word(ar, 5), d, word(ar, 6));
            CHECK_EQ_INT(b[word(ar, 5) + word(ar, 6)], 0);
        }
        cf_names_free(an, nan);
        cf_column_close(c, NULL);
    }
    cf_names_free(names, count);
    cf_free(buf);
}

static void test_matches_per_column(void)
{
    make_file();
    cf_file *f = open_file(CF_OPEN_READ);
    check_matches(f, 4);
    cf_file_close(f);
    f = open_file(CF_OPEN_WRITE); /* the files, not the catalog */
    check_matches(f, 4);
    cf_file_close(f);
}

static void test_arguments(void)
{
    cf_error err;
    void *buf;
    size_t len;
    make_file();
    cf_file *f = open_file(CF_OPEN_READ);
    CHECK_FAILS(cf_file_column_attrs(NULL, &buf, &len, &err), CF_EARG, &err, "NULL");
    CHECK_FAILS(cf_file_column_attrs(f, NULL, &len, &err), CF_EARG, &err, "NULL");
    CHECK_FAILS(cf_file_column_attrs(f, &buf, NULL, &err), CF_EARG, &err, "NULL");
    cf_file_close(f);
}

/* Which entries the catalog vouches for: all while nothing changed; not a
 * column whose attr-v2 was rewritten; none when a directory changed. */
static void test_catalog_entries(void)
{
    make_file();
    cf_file *f = open_file(CF_OPEN_READ);
    cf__catalog_col_attrs *e = NULL;
    size_t n = 0;
    CHECK(f->catalog != NULL);
    CHECK_EQ_INT(cf__catalog_attrs(f->catalog, f->path, &e, &n), 1);
    CHECK_EQ_INT(n, 4);
    for (size_t i = 0; e && i < n; i++) CHECK_EQ_INT(e[i].valid, 1);
    free(e);
    /* rewritten in place, same size: its entry no longer holds */
    char p[4200];
    path_of(p, sizeof p, "g/b/attr-v2");
    struct stat st;
    CHECK(stat(p, &st) == 0);
    FILE *fp = fopen(p, "r+b");
    CHECK(fp != NULL);
    if (fp) {
        fputc('i', fp);
        fclose(fp);
    }
    CHECK_EQ_INT(cf__catalog_attrs(f->catalog, f->path, &e, &n), 1);
    for (size_t i = 0; e && i < n; i++) CHECK_EQ_INT(e[i].valid, strcmp(e[i].name, "g/b") != 0);
    free(e);
    check_matches(f, 4);
    /* a file appears in a column directory: the listing no longer holds */
    path_of(p, sizeof p, "a/attr");
    fp = fopen(p, "wb");
    CHECK(fp != NULL);
    if (fp) fclose(fp);
    CHECK_EQ_INT(cf__catalog_attrs(f->catalog, f->path, &e, &n), 0);
    check_matches(f, 4);
    cf_file_close(f);
}

/* An attribute file damaged after the catalog was made (with_catalog: the
 * catalog's copy is stale) or with no catalog at all. */
static void damaged_attribute_file(int with_catalog)
{
    cf_error err;
    void *buf = NULL;
    size_t len;
    make_file();
    char p[4200];
    if (!with_catalog) {
        path_of(p, sizeof p, CF__CATALOG_DIR "/" CF__CATALOG_INDEX_NAME);
        CHECK(unlink(p) == 0);
    }
    path_of(p, sizeof p, "g/h/c/attr-v2");
    FILE *fp = fopen(p, "wb");
    CHECK(fp != NULL);
    if (fp) {
        fputs("index <i8 1 zz\n", fp);
        fclose(fp);
    }
    cf_file *f = open_file(CF_OPEN_READ);
    cf_column *c = NULL;
    /* a read-only handle opens, reads its rows, and reports the damage when
     * its attributes are first used, naming the file; again on each use */
    CHECK_OK(cf_column_open(&c, f, "g/h/c", &err), &err);
    const char *dtype;
    int64_t nmemb;
    const void *data;
    char **names = NULL;
    int64_t count = -1;
    CHECK_FAILS(cf_column_attr_get(c, "index", &dtype, &nmemb, &data, &err), CF_EFORMAT, &err, p);
    CHECK_FAILS(cf_column_attr_names(c, &names, &count, &err), CF_EFORMAT, &err, p);
    CHECK(names == NULL && count == -1);
    CHECK_FAILS(cf_file_column_attrs(f, &buf, &len, &err), CF_EFORMAT, &err, p);
    CHECK(buf == NULL);
    /* mended: the same handle now reads the file as it is */
    fp = fopen(p, "wb");
    CHECK(fp != NULL);
    if (fp) {
        fputs("index <i8 1 2a00000000000000\n", fp);
        fclose(fp);
    }
    CHECK_OK(cf_column_attr_get(c, "index", &dtype, &nmemb, &data, &err), &err);
    CHECK(nmemb == 1 && strcmp(dtype, "<i8") == 0 && data && *(const int64_t *)data == 42);
    CHECK_OK(cf_column_close(c, &err), &err);
    cf_file_close(f);
}

static void test_damaged_attribute_file(void) { damaged_attribute_file(1); }
static void test_damaged_attribute_file_no_catalog(void) { damaged_attribute_file(0); }

CF_TESTS(CF_TEST(test_matches_per_column), CF_TEST(test_arguments), CF_TEST(test_catalog_entries),
         CF_TEST(test_damaged_attribute_file), CF_TEST(test_damaged_attribute_file_no_catalog))
