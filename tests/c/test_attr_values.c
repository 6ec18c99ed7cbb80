/* test_attr_values.c - string attributes (cf_column_attr_set_string /
 * get_string) and converting reads (cf_column_attr_get_as) on a column, a
 * group and the File, read back through fresh handles. */
#include "harness.h"

#include "fsutil.h"

static cf_file *open_file(int flags)
{
    cf_error err;
    cf_file *f = NULL;
    char root[4200];
    snprintf(root, sizeof root, "%s/F", cf_test_dir());
    CHECK_OK(cf_file_open(&f, root, flags | CF_OPEN_CREATE * !!(flags & CF_OPEN_WRITE), &err), &err);
    return f;
}

static cf_column *open_block(cf_file *f, const char *name)
{
    cf_error err;
    cf_column *c = NULL;
    CHECK_OK(cf_column_open(&c, f, name, &err), &err);
    return c;
}

/* A column, a group's attributes and the File's: the string goes in and
 * comes back through a new handle, stored as Python stores a str. */
static void test_string_round_trip_everywhere(void)
{
    cf_error err;
    cf_file *f = open_file(CF_OPEN_WRITE);
    cf_column *c;
    CHECK_OK(cf_column_create(&c, f, "g/x", "i4", 1, 3, 1, &err), &err);
    CHECK_OK(cf_column_attr_set_string(c, "Version", "1.0", &err), &err);
    CHECK_OK(cf_column_close(c, &err), &err);
    const char *blocks[] = { "g/.", "." };
    for (int i = 0; i < 2; i++) {
        c = open_block(f, blocks[i]);
        CHECK_OK(cf_column_attr_set_string(c, "Version", "1.0", &err), &err);
        CHECK_OK(cf_column_attr_set_string(c, "Empty", "", &err), &err);
        CHECK_OK(cf_column_attr_set_string(c, "Lines", "first line\nsecond", &err), &err);
        CHECK_OK(cf_column_close(c, &err), &err);
    }
    cf_file_close(f);

    f = open_file(0);
    const char *names[] = { "g/x", "g/.", "." };
    for (int i = 0; i < 3; i++) {
        c = open_block(f, names[i]);
        char *s = NULL;
        size_t len = 99;
        CHECK_OK(cf_column_attr_get_string(c, "Version", &s, &len, &err), &err);
        CHECK_EQ_STR(s, "1.0");
        CHECK_EQ_INT(len, 3);
        cf_free(s);
        const char *dtype;
        int64_t nmemb;
        const void *data;
        CHECK_OK(cf_column_attr_get(c, "Version", &dtype, &nmemb, &data, &err), &err);
        CHECK_EQ_STR(dtype, "<a1");
        CHECK_EQ_INT(nmemb, 3);
        if (i > 0) {
            CHECK_OK(cf_column_attr_get_string(c, "Empty", &s, &len, &err), &err);
            CHECK_EQ_STR(s, "");
            CHECK_EQ_INT(len, 0);
            cf_free(s);
            CHECK_OK(cf_column_attr_get(c, "Empty", &dtype, &nmemb, &data, &err), &err);
            CHECK_EQ_INT(nmemb, 1); /* one NUL byte: bigfile reads it */
            CHECK_OK(cf_column_attr_get_string(c, "Lines", &s, NULL, &err), &err);
            CHECK_EQ_STR(s, "first line\nsecond");
            cf_free(s);
        }
        CHECK_OK(cf_column_close(c, &err), &err);
    }
    cf_file_close(f);

    /* The line bigfile's Python binding writes for the str "1.0". */
    char path[4300], *text = NULL;
    size_t len = 0;
    snprintf(path, sizeof path, "%s/F/attr-v2", cf_test_dir());
    CHECK_OK(cf__read_file(path, &text, &len, &err), &err);
    CHECK(text && strstr(text, "Version <a1 3 312E30 #HUMANE [ 1.0 ]\n"));
    free(text);
}

/* S1 arrays and one padded S<width> element read as one string; several
 * wide strings and numbers are not one string. */
static void test_get_string_kinds(void)
{
    cf_error err;
    cf_file *f = open_file(CF_OPEN_WRITE);
    cf_column *c = open_block(f, ".");
    char padded[10] = "hi";
    double x = 1.5;
    CHECK_OK(cf_column_attr_set(c, "chars", "S1", 5, "68yom", &err), &err);
    CHECK_OK(cf_column_attr_set(c, "padded", "S10", 1, padded, &err), &err);
    CHECK_OK(cf_column_attr_set(c, "two", "S3", 2, "abcdef", &err), &err);
    CHECK_OK(cf_column_attr_set(c, "x", "f8", 1, &x, &err), &err);
    char *s = NULL;
    size_t len = 0;
    CHECK_OK(cf_column_attr_get_string(c, "chars", &s, &len, &err), &err);
    CHECK_EQ_STR(s, "68yom");
    cf_free(s);
    CHECK_OK(cf_column_attr_get_string(c, "padded", &s, &len, &err), &err);
    CHECK_EQ_STR(s, "hi");
    CHECK_EQ_INT(len, 2);
    cf_free(s);
    s = NULL;
    CHECK_FAILS(cf_column_attr_get_string(c, "two", &s, &len, &err), CF_EDTYPE, &err,
                "attribute 'two' is 2 element(s) of <S3, not a string");
    CHECK_FAILS(cf_column_attr_get_string(c, "x", &s, &len, &err), CF_EDTYPE, &err, "cf_column_attr_get_as");
    CHECK(s == NULL);
    CHECK_FAILS(cf_column_attr_get_string(c, "nope", &s, &len, &err), CF_ENOENT, &err, "no attribute 'nope'");
    /* "a" needs its width, as the header says; "a1" is the string kind. */
    CHECK_FAILS(cf_column_attr_set(c, "bad", "a", 3, "abc", &err), CF_EDTYPE, &err, "no width after kind 'a'");
    CHECK_OK(cf_column_attr_set(c, "good", "a1", 3, "abc", &err), &err);
    CHECK_OK(cf_column_close(c, &err), &err);
    cf_file_close(f);
}

/* Numbers come back in the dtype asked for, whatever their stored dtype
 * and byte order; counts and impossible conversions fail by name. */
static void test_get_as_converts(void)
{
    cf_error err;
    cf_file *f = open_file(CF_OPEN_WRITE);
    cf_column *c = open_block(f, ".");
    unsigned char be[16] = { 0x3f, 0xf8, 0, 0, 0, 0, 0, 0, 0xc0, 0x24, 0, 0, 0, 0, 0, 0 }; /* >f8 1.5, -10 */
    int32_t n = 7;
    CHECK_OK(cf_column_attr_set(c, "Big", ">f8", 2, be, &err), &err);
    CHECK_OK(cf_column_attr_set(c, "N", "<i4", 1, &n, &err), &err);
    CHECK_OK(cf_column_attr_set_string(c, "Name", "box", &err), &err);
    CHECK_OK(cf_column_close(c, &err), &err);
    cf_file_close(f);

    f = open_file(0);
    c = open_block(f, ".");
    double d[4] = { 0, 0, 0, 0 };
    int64_t count = -1;
    CHECK_OK(cf_column_attr_get_as(c, "Big", "f8", d, 2, NULL, &err), &err);
    CHECK(d[0] == 1.5 && d[1] == -10.0);
    int32_t i4[4];
    CHECK_OK(cf_column_attr_get_as(c, "Big", "i4", i4, 4, &count, &err), &err);
    CHECK_EQ_INT(count, 2);
    CHECK_EQ_INT(i4[0], 1);
    CHECK_EQ_INT(i4[1], -10);
    double box = 0;
    CHECK_OK(cf_column_attr_get_as(c, "N", "f8", &box, 1, NULL, &err), &err);
    CHECK(box == 7.0);
    char name[8];
    memset(name, 'x', sizeof name);
    CHECK_OK(cf_column_attr_get_as(c, "Name", "S1", name, 8, &count, &err), &err);
    CHECK_EQ_INT(count, 3);
    CHECK_EQ_MEM(name, "box", 3);

    CHECK_FAILS(cf_column_attr_get_as(c, "Big", "f8", d, 1, NULL, &err), CF_ERANGE, &err,
                "attribute 'Big' has 2 element(s) (>f8); the buffer expects exactly 1");
    CHECK_FAILS(cf_column_attr_get_as(c, "Big", "f8", d, 1, &count, &err), CF_ERANGE, &err,
                "the buffer holds only 1");
    CHECK_FAILS(cf_column_attr_get_as(c, "Name", "f8", d, 3, NULL, &err), CF_ECAST, &err,
                "attribute 'Name' is <a1 and cannot be converted to <f8");
    CHECK_FAILS(cf_column_attr_get_as(c, "N", "float64", d, 1, NULL, &err), CF_EDTYPE, &err, "attribute 'N'");
    CHECK_FAILS(cf_column_attr_get_as(c, "M", "f8", d, 1, NULL, &err), CF_ENOENT, &err, "no attribute 'M'");
    CHECK_FAILS(cf_column_attr_get_as(c, "N", "f8", d, -1, &count, &err), CF_EARG, &err, "negative capacity");
    CHECK_OK(cf_column_close(c, &err), &err);
    cf_file_close(f);
}

CF_TESTS(CF_TEST(test_string_round_trip_everywhere), CF_TEST(test_get_string_kinds),
         CF_TEST(test_get_as_converts))
