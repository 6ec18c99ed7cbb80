/* test_attrs.c - attribute sets, attr-v2 and legacy attr files (src/format/attrs.c). */
#include "harness.h"
#include "fixtures.h"

#include <dirent.h>
#include <sys/stat.h>

#include "attrs.h"

#ifndef CF_FIXTURES_DIR
#error "CF_FIXTURES_DIR must name the fixtures directory"
#endif

/* ---- helpers ---------------------------------------------------------- */

static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * UINT64_C(2685821657736338717);
}

static unsigned char *slurp(const char *path, size_t *len)
{
    return (unsigned char *)cf_test_slurp(NULL, path, len);
}

/* ---- fixture sets ------------------------------------------------------
 * A fixture set is any directory under CF_FIXTURES_DIR holding a
 * manifest.json.  Which sets exist and what their trees hold is found on
 * disk: a set generated with another seed has other names, shapes, split
 * counts and values.  Specific values are checked on the literal bigfile
 * output embedded below instead. */


/* ---- literal bigfile output --------------------------------------------
 * Lines of an attr-v2 file written by bigfile 0.1.52 (an attribute of every
 * kind set through its Python binding), copied verbatim and kept in the
 * file's (strcmp) order, so formatting the parsed set gives these bytes
 * back.  They cover big-endian complex, every #HUMANE form (numbers, the
 * <<dtype> placeholder, strings cut at a newline or NUL, UTF-8 text,
 * "... (Too Long) "), a 155-character name and one with '#', '=' and '/'. */
static const char zoo_text[] =
    "#odd=name/x.y <i8 1 0700000000000000 #HUMANE [ 7 ]\n"
    "b1 <b1 3 000001 #HUMANE [ 0 0 1 ]\n"
    "bytes_value <S15 1 7261772D62797465732D6134783779 #HUMANE [ <<S15> ]\n"
    "c16_be >c16 1 BE8024F1D54BE9393FC83666DDCAD254 #HUMANE [ 0.18916+-1.20285e-07I ]\n"
    "c8_be >c8 2 359030C6C1D0E275C49A925B3DA6665D"
    " #HUMANE [ -26.1106+1.0743e-06I 0.0812499+-1236.57I ]\n"
    "f2_le <f2 3 74A0E4E4D44E #HUMANE [ <<f2> <<f2> <<f2> ]\n"
    "f4_be >f4 2 CA721E014B02C51E #HUMANE [ -3.96685e+06 8.57014e+06 ]\n"
    "f4_special <f4 5 0000C07F000080FF01000000FFFF7F7FCDCCCC3D"
    " #HUMANE [ nan -inf 1.4013e-45 3.40282e+38 0.1 ]\n"
    "f8_long_array <f8 27 "
    "D53A0ACEF977A041CED25FE98F82C63F000000000000F07FFFFFFFFFFFFFEFFF23C1419B592C04BF"
    "000000000000F87FAACEEA62421171BE1CC6F48C5A32A3BE809D99864C2CED3F40B46E36B00E0FBF"
    "1118F70B33DC39C0BF58EBB2E12C60402EFF04C782C1FABE49680AF8EC665D3FB919538FB2F9BABE"
    "170F763BB3112AC14FB0A6813DBF8B3E86EC79A4E8F497C1FFFFFFFFFFFFEF7F9822B91EAA0882BF"
    "92D6AAA7C8DF4DC0010000000000000001749DE2227739BF57B788C0D3F2E53E000000000000F0FF"
    "000000000000008018334324613CB9BF #HUMANE [ ... (Too Long)  ]\n"
    "f8_special <f8 7 "
    "000000000000F87F000000000000F07F000000000000F0FF00000000000000800100000000000000"
    "FFFFFFFFFFFFEF7F9A9999999999B93F"
    " #HUMANE [ nan inf -inf -0 4.94066e-324 1.79769e+308 0.1 ]\n"
    "i4_be >i4 1 4F72527C #HUMANE [ 1332892284 ]\n"
    "i8_limits <i8 4 0000000000000080FFFFFFFFFFFFFF7F0000000000000000FFFFFFFFFFFFFFFF"
    " #HUMANE [ -9223372036854775808 9223372036854775807 0 -1 ]\n"
    "nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn"
    "nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn"
    " <f8 1 000000000000F43F #HUMANE [ 1.25 ]\n"
    "overwritten <a1 17 7365636F6E642076616C75652077696E73 #HUMANE [ second value wins ]\n"
    "str_empty <a1 1 00 #HUMANE [  ]\n"
    "str_list <S10 3 616C7068610000000000626574612D776B000000CEB3CEACCEBCCEBCCEB1"
    " #HUMANE [ <<S10> <<S10> <<S10> ]\n"
    "str_newline <a1 26 6669727374206C696E650A7365636F6E64206C696E6520673078"
    " #HUMANE [ first line... ]\n"
    "str_unicode <a1 41 4772C3BCC39F6520E2809420CEA9CEBCCEADCEB3CEB120E697A5E69CACE8AA9E"
    "20F09F9A8020666765 #HUMANE [ Gr\xC3\xBC\xC3\x9F" "e \xE2\x80\x94 "
    "\xCE\xA9\xCE\xBC\xCE\xAD\xCE\xB3\xCE\xB1 \xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E "
    "\xF0\x9F\x9A\x80 fge ]\n"
    "u2_be >u2 3 C5E35AC3E00B #HUMANE [ <<u2> <<u2> <<u2> ]\n"
    "u8_be >u8 3 4B7C4EE60C93EAAAF769E1C592D89F8A4F0E72E36E156016"
    " #HUMANE [ 5439309199917181610 17828028838611296138 5696616899800293398 ]\n"
    "u8_max <u8 1 FFFFFFFFFFFFFFFF #HUMANE [ 18446744073709551615 ]\n";
#define ZOO_LINES 21

/* Parse attr-v2 text given as a C string into a fresh set. */
static int parse_str(cf__attrset *s, const char *text, cf_error *err)
{
    return cf__attrset_parse_v2(s, text, strlen(text), "t/attr-v2", err);
}

/* Format s as attr-v2 and compare with `want`. */
static void check_format(const cf__attrset *s, const char *want, int line)
{
    char *text = NULL;
    size_t len = 0;
    cf_error err;
    int rc = cf__attrset_format_v2(s, NULL, &text, &len, &err);
    if (rc != 0) {
        fprintf(stderr, "%s:%d: format failed: %s\n", __FILE__, line, err.message);
        cf_test_failures++;
        return;
    }
    if (len != strlen(want) || memcmp(text, want, len) != 0 || text[len] != '\0') {
        fprintf(stderr, "%s:%d: formatted\n[%s]\nwant\n[%s]\n", __FILE__, line, text, want);
        cf_test_failures++;
    }
    free(text);
}
#define CHECK_FORMAT(s, want) check_format((s), (want), __LINE__)

/* Set one attribute in a fresh set and compare its line. */
static void check_line(const char *name, const char *dtype, int64_t nmemb, const void *data,
                       const char *want, int line)
{
    cf__attrset s;
    cf_error err;
    cf__attrset_init(&s);
    int rc = cf__attrset_set(&s, name, dtype, nmemb, data, &err);
    if (rc != 0) {
        fprintf(stderr, "%s:%d: set failed: %s\n", __FILE__, line, err.message);
        cf_test_failures++;
    } else {
        check_format(&s, want, line);
    }
    cf__attrset_free(&s);
}
#define CHECK_LINE(name, dtype, nmemb, data, want) \
    check_line((name), (dtype), (nmemb), (data), (want), __LINE__)

/* ---- the set ---------------------------------------------------------- */

static void test_set_find_remove(void)
{
    cf__attrset s;
    cf_error err;
    cf__attrset_init(&s);
    int64_t v = 10;
    double d = 1.5;
    CHECK_OK(cf__attrset_set(&s, "zeta", "<i8", 1, &v, &err), &err);
    CHECK_OK(cf__attrset_set(&s, "alpha", "f8", 1, &d, &err), &err);
    CHECK_OK(cf__attrset_set(&s, "Mid", "|u1", 3, "abc", &err), &err);
    CHECK_EQ_INT(s.count, 3);
    /* sorted by strcmp: uppercase first */
    CHECK_EQ_STR(s.items[0].name, "Mid");
    CHECK_EQ_STR(s.items[1].name, "alpha");
    CHECK_EQ_STR(s.items[2].name, "zeta");
    /* tokens are normalised to an explicit machine order */
    char native = cf__dtype_native_order();
    CHECK_EQ_INT(s.items[1].dtype[0], native);
    CHECK_EQ_STR(s.items[1].dtype + 1, "f8");
    CHECK_EQ_INT(s.items[0].dtype[0], native);
    CHECK_EQ_INT(s.items[0].type.width, 1);
    cf__attr *a = cf__attrset_find(&s, "zeta");
    CHECK(a != NULL);
    if (a) {
        CHECK_EQ_INT(a->nmemb, 1);
        CHECK_EQ_MEM(a->data, &v, 8);
        CHECK_EQ_INT(a->type.kind, 'i');
    }
    CHECK(cf__attrset_find(&s, "nope") == NULL);
    CHECK(cf__attrset_find(&s, "") == NULL);

    /* replace, with data that aliases the old value */
    a = cf__attrset_find(&s, "Mid");
    CHECK_OK(cf__attrset_set(&s, "Mid", "<i1", 2, a->data + 1, &err), &err);
    a = cf__attrset_find(&s, "Mid");
    CHECK_EQ_INT(s.count, 3);
    CHECK_EQ_INT(a->nmemb, 2);
    CHECK_EQ_MEM(a->data, "bc", 2);
    CHECK_EQ_STR(a->dtype + 1, "i1");

    /* nmemb 0 is a valid attribute */
    CHECK_OK(cf__attrset_set(&s, "empty", "<f8", 0, NULL, &err), &err);
    CHECK(cf__attrset_find(&s, "empty") != NULL);

    CHECK_EQ_INT(cf__attrset_remove(&s, "alpha"), 1);
    CHECK_EQ_INT(cf__attrset_remove(&s, "alpha"), 0);
    CHECK_EQ_INT(s.count, 3);
    CHECK_EQ_STR(s.items[0].name, "Mid");
    CHECK_EQ_STR(s.items[1].name, "empty");
    CHECK_EQ_STR(s.items[2].name, "zeta");
    cf__attrset_free(&s);
    CHECK_EQ_INT(s.count, 0);
    cf__attrset_free(&s); /* twice is fine */
}

static void test_set_rejects(void)
{
    cf__attrset s;
    cf_error err;
    cf__attrset_init(&s);
    int64_t v = 1;
    CHECK_FAILS(cf__attrset_set(&s, "", "<i8", 1, &v, &err), CF_ENAME, &err, NULL);
    CHECK_FAILS(cf__attrset_set(&s, "a b", "<i8", 1, &v, &err), CF_ENAME, &err, "a b");
    CHECK_FAILS(cf__attrset_set(&s, "a\tb", "<i8", 1, &v, &err), CF_ENAME, &err, NULL);
    CHECK_FAILS(cf__attrset_set(&s, "a\nb", "<i8", 1, &v, &err), CF_ENAME, &err, NULL);
    CHECK_FAILS(cf__attrset_set(&s, "a\rb", "<i8", 1, &v, &err), CF_ENAME, &err, NULL);
    CHECK_FAILS(cf__attrset_set(&s, "x", "<i8x", 1, &v, &err), CF_EDTYPE, &err, NULL);
    CHECK_FAILS(cf__attrset_set(&s, "x", "<#8", 1, &v, &err), CF_EDTYPE, &err, NULL);
    CHECK_FAILS(cf__attrset_set(&s, "x", "", 1, &v, &err), CF_EDTYPE, &err, NULL);
    CHECK_FAILS(cf__attrset_set(&s, "x", "<i8", -1, &v, &err), CF_EARG, &err, NULL);
    CHECK_FAILS(cf__attrset_set(&s, "x", "<i8", 1, NULL, &err), CF_EARG, &err, NULL);
    CHECK_FAILS(cf__attrset_set(&s, "x", "<i8", INT64_MAX, &v, &err), CF_EARG, &err, NULL);
    CHECK_EQ_INT(s.count, 0);
    /* names bigfile allows */
    CHECK_OK(cf__attrset_set(&s, "#odd=name/x.y", "<i8", 1, &v, &err), &err);
    CHECK_OK(cf__attrset_set(&s, "Gr\xC3\xBC\xC3\x9F" "e", "<i8", 1, &v, &err), &err);
    CHECK_EQ_INT(s.count, 2);
    cf__attrset_free(&s);
}

/* ---- attr-v2 writer: #HUMANE rules ------------------------------------ */

static void test_format_examples_from_facts(void)
{
    int64_t ten = 10;
    CHECK_LINE("NumFiles", "<i8", 1, &ten, "NumFiles <i8 1 0A00000000000000 #HUMANE [ 10 ]\n");
    CHECK_LINE("Version", "a1", 3, "1.0", "Version <a1 3 312E30 #HUMANE [ 1.0 ]\n");
    CHECK_LINE("str_empty", "<a1", 1, "", "str_empty <a1 1 00 #HUMANE [  ]\n");
    CHECK_LINE("s1_chars", "|S1", 5, "68yom", "s1_chars <S1 5 3638796F6D #HUMANE [ 68yom ]\n");
    static const unsigned char f2[] = {0x53, 0x47, 0x4F, 0x5D, 0xC3, 0x09};
    CHECK_LINE("f2_le", "<f2", 3, f2, "f2_le <f2 3 53474F5DC309 #HUMANE [ <<f2> <<f2> <<f2> ]\n");
    CHECK_LINE("str_newline", "<a1", 26, "first line\nsecond line g0x",
               "str_newline <a1 26 6669727374206C696E650A7365636F6E64206C696E6520673078 "
               "#HUMANE [ first line... ]\n");
    /* nmemb 0: empty hex, empty text */
    CHECK_LINE("x", "<f8", 0, NULL, "x <f8 0  #HUMANE [  ]\n");
}

static void test_format_kinds(void)
{
    /* b1 is printed as a signed char */
    static const unsigned char b[] = {0, 1, 0xFF, 2};
    CHECK_LINE("b", "<b1", 4, b, "b <b1 4 0001FF02 #HUMANE [ 0 1 -1 2 ]\n");
    /* big-endian integers and floats are reversed, then printed */
    static const unsigned char i4be[] = {0x4F, 0x72, 0x52, 0x7C};
    CHECK_LINE("i4_be", ">i4", 1, i4be, "i4_be >i4 1 4F72527C #HUMANE [ 1332892284 ]\n");
    static const unsigned char u8be[] = {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFE};
    CHECK_LINE("u", ">u8", 1, u8be, "u >u8 1 FFFFFFFFFFFFFFFE #HUMANE [ 18446744073709551614 ]\n");
    static const unsigned char f4be[] = {0xCA, 0x72, 0x1E, 0x01, 0x4B, 0x02, 0xC5, 0x1E};
    CHECK_LINE("f4_be", ">f4", 2, f4be,
               "f4_be >f4 2 CA721E014B02C51E #HUMANE [ -3.96685e+06 8.57014e+06 ]\n");
    /* big-endian complex: the whole element is reversed, so the parts swap */
    static const unsigned char c16be[] = {0xBE, 0x80, 0x24, 0xF1, 0xD5, 0x4B, 0xE9, 0x39,
                                          0x3F, 0xC8, 0x36, 0x66, 0xDD, 0xCA, 0xD2, 0x54};
    CHECK_LINE("c16_be", ">c16", 1, c16be,
               "c16_be >c16 1 BE8024F1D54BE9393FC83666DDCAD254 #HUMANE [ 0.18916+-1.20285e-07I ]\n");
    double c[2] = {1.0, -2.0};
    CHECK_LINE("c", "<c16", 1, c, "c <c16 1 000000000000F03F00000000000000C0 #HUMANE [ 1+-2I ]\n");
    float c8[2] = {0.5f, 3.0f};
    CHECK_LINE("c8", "<c8", 1, c8, "c8 <c8 1 0000003F00004040 #HUMANE [ 0.5+3I ]\n");
    /* other kinds and widths: the machine-order placeholder, also for '>' */
    static const unsigned char u2be[] = {0xC5, 0xE3, 0x5A, 0xC3};
    CHECK_LINE("u2_be", ">u2", 2, u2be, "u2_be >u2 2 C5E35AC3 #HUMANE [ <<u2> <<u2> ]\n");
    CHECK_LINE("bytes_value", "<S3", 1, "abc", "bytes_value <S3 1 616263 #HUMANE [ <<S3> ]\n");
    CHECK_LINE("i1", "|i1", 2, "\x01\x02", "i1 <i1 2 0102 #HUMANE [ <<i1> <<i1> ]\n");
    CHECK_LINE("i2", "<i2", 1, "\x01\x02", "i2 <i2 1 0102 #HUMANE [ <<i2> ]\n");
    /* strings stop at the first NUL */
    CHECK_LINE("s", "<a1", 5, "ab\0cd", "s <a1 5 6162006364 #HUMANE [ ab ]\n");
    /* wider `a`: one byte per element, as bigfile does */
    CHECK_LINE("a2", "<a2", 2, "wxyz", "a2 <a2 2 7778797A #HUMANE [ wx ]\n");
    /* f8 specials */
    static const unsigned char f8sp[] = {
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xF8, 0x7F, /* nan */
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xF0, 0xFF, /* -inf */
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80, /* -0 */
        0x9A, 0x99, 0x99, 0x99, 0x99, 0x99, 0xB9, 0x3F}; /* 0.1 */
    CHECK_LINE("f8_special", "<f8", 4, f8sp,
               "f8_special <f8 4 000000000000F87F000000000000F0FF00000000000000809A9999999999B93F "
               "#HUMANE [ nan -inf -0 0.1 ]\n");
}

/* The line of attribute `name` in text (up to and including its LF). */
static char *line_of(const char *text, const char *name)
{
    size_t nl = strlen(name);
    for (const char *p = text; *p; p = strchr(p, '\n') + 1) {
        if (strncmp(p, name, nl) == 0 && p[nl] == ' ') {
            size_t len = strcspn(p, "\n") + 1;
            char *out = malloc(len + 1);
            if (out) { memcpy(out, p, len); out[len] = '\0'; }
            return out;
        }
        if (!strchr(p, '\n')) break;
    }
    return NULL;
}

static int ends_with(const char *s, const char *tail)
{
    size_t a = s ? strlen(s) : 0, b = strlen(tail);
    return s && a >= b && strcmp(s + a - b, tail) == 0;
}

static void test_format_too_long_boundary(void)
{
    /* exactly 128 bytes are still printed, 129 are "Too Long" */
    double v[17];
    for (int i = 0; i < 17; i++) v[i] = i;
    char q[200];
    memset(q, 'q', sizeof q);
    char *text = NULL;
    size_t len = 0;
    cf_error err;
    cf__attrset s;
    cf__attrset_init(&s);
    CHECK_OK(cf__attrset_set(&s, "f16", "<f8", 16, v, &err), &err);
    CHECK_OK(cf__attrset_set(&s, "f17", "<f8", 17, v, &err), &err);
    CHECK_OK(cf__attrset_set(&s, "s128", "<a1", 128, q, &err), &err);
    CHECK_OK(cf__attrset_set(&s, "s129", "<a1", 129, q, &err), &err);
    CHECK_OK(cf__attrset_set(&s, "S", "<S200", 1, q, &err), &err);
    CHECK_OK(cf__attrset_set(&s, "c", "<c16", 8, q, &err), &err);
    CHECK_OK(cf__attrset_set(&s, "c9", "<c16", 9, q, &err), &err);
    CHECK_OK(cf__attrset_format_v2(&s, NULL, &text, &len, &err), &err);
    if (!text) return;
    char *l = line_of(text, "f16");
    CHECK(ends_with(l, " #HUMANE [ 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 ]\n"));
    free(l);
    l = line_of(text, "s128");
    CHECK(l && strstr(l, " #HUMANE [ qqqq") && ends_with(l, "qq ]\n"));
    free(l);
    l = line_of(text, "c");
    CHECK(l && !strstr(l, "Too Long"));
    free(l);
    const char *too_long[] = { "f17", "s129", "S", "c9" };
    for (size_t i = 0; i < sizeof too_long / sizeof *too_long; i++) {
        l = line_of(text, too_long[i]);
        CHECK(ends_with(l, " #HUMANE [ ... (Too Long)  ]\n"));
        free(l);
    }
    /* sorted by strcmp: uppercase before lowercase */
    CHECK(strncmp(text, "S <S200 1 ", 10) == 0);
    free(text);
    cf__attrset_free(&s);
}

static int keep_not_x(const cf__attr *a) { return strcmp(a->name, "x") != 0; }

static void test_format_empty_and_keep(void)
{
    cf__attrset s;
    cf_error err;
    cf__attrset_init(&s);
    CHECK_FORMAT(&s, "");
    int64_t one = 1;
    CHECK_OK(cf__attrset_set(&s, "x", "<f8", 0, NULL, &err), &err);
    CHECK_OK(cf__attrset_set(&s, "y", "<i8", 1, &one, &err), &err);
    char *text = NULL;
    size_t len = 99;
    CHECK_OK(cf__attrset_format_v2(&s, keep_not_x, &text, &len, &err), &err);
    CHECK_EQ_STR(text, "y <i8 1 0100000000000000 #HUMANE [ 1 ]\n");
    CHECK_EQ_INT(len, strlen("y <i8 1 0100000000000000 #HUMANE [ 1 ]\n"));
    free(text);
    CHECK_FORMAT(&s, "x <f8 0  #HUMANE [  ]\ny <i8 1 0100000000000000 #HUMANE [ 1 ]\n");
    cf__attrset_free(&s);
}

/* ---- THE KEY TEST: every attr-v2 of every fixture set round-trips ----- */

/* Parse `bytes`, format the set again and require the very same bytes.
 * Returns 1 if they are, and sets *count to the attributes parsed. */
static int roundtrip_bytes(const char *where, const unsigned char *bytes, size_t len, size_t *count)
{
    cf__attrset s;
    cf_error err;
    cf__attrset_init(&s);
    int ok = 0;
    int rc = cf__attrset_parse_v2(&s, (const char *)bytes, len, where, &err);
    if (rc != 0) {
        fprintf(stderr, "%s: parse failed: %s\n", where, err.message);
        cf_test_failures++;
    } else {
        char *text = NULL;
        size_t tlen = 0;
        CHECK_OK(cf__attrset_format_v2(&s, NULL, &text, &tlen, &err), &err);
        if (text && (tlen != len || memcmp(text, bytes, len) != 0)) {
            fprintf(stderr, "%s: formatted text differs from the file\n", where);
            size_t i = 0;
            while (i < len && i < tlen && text[i] == (char)bytes[i]) i++;
            size_t from = i > 60 ? i - 60 : 0;
            fprintf(stderr, "  at byte %zu: file [%.*s] ours [%.*s]\n", i,
                    (int)((len - from) > 140 ? 140 : len - from), (const char *)bytes + from,
                    (int)((tlen - from) > 140 ? 140 : tlen - from), text + from);
            cf_test_failures++;
        } else if (text) {
            ok = 1;
            if (count) *count = s.count;
        }
        free(text);
    }
    cf__attrset_free(&s);
    return ok;
}

/* The bytes of the fixture file `dir`/`name` (its path in `path`), counted
 * in *files; NULL if there is none (or, a failed check, if it cannot be
 * read). */
static unsigned char *fixture_file(const char *dir, const char *name, char path[4096], int *files,
                                   size_t *len)
{
    snprintf(path, 4096, "%s/%s", dir, name);
    if (!is_file(path)) return NULL;
    (*files)++;
    unsigned char *bytes = slurp(path, len);
    CHECK(bytes != NULL);
    return bytes;
}

/* Checks one fixture file (its bytes, read from path in directory dir):
 * 1 if it passed; adds to *more a count of the check's own. */
typedef int (*fixture_check)(const char *dir, char path[4096], const unsigned char *bytes, size_t len, int *more);

/* A walk over a fixture set's files of one name, and what it counted. */
typedef struct {
    const char *name;
    fixture_check check;
    int files, ok, more;
} fixture_walk;

static void visit_fixture_file(const char *dir, void *ctx)
{
    fixture_walk *w = ctx;
    char path[4096];
    size_t len = 0;
    unsigned char *bytes = fixture_file(dir, w->name, path, &w->files, &len);
    if (!bytes) return;
    if (w->check(dir, path, bytes, len, &w->more)) w->ok++;
    free(bytes);
}

/* Checks every file called name in every fixture set; each set holds at
 * least min_files, every one passes, and the checks count at least
 * min_more.  Prints "<files> <name> files, <ok> <passed>, <more> <more_what>". */
static void check_fixture_sets(const char *name, fixture_check check, int min_files, int min_more,
                               const char *passed, const char *more_what)
{
    fixture_sets sets = find_fixture_sets();
    CHECK(sets.count >= 1);
    for (size_t i = 0; i < sets.count; i++) {
        fixture_walk t = {name, check, 0, 0, 0};
        walk_dirs(sets.dirs[i], visit_fixture_file, &t, 0);
        printf("  (%s: %d %s files, %d %s, %d %s)\n", sets.dirs[i], t.files, name, t.ok, passed, t.more,
               more_what);
        CHECK_EQ_INT(t.ok, t.files);
        CHECK(t.files >= min_files);
        CHECK(t.more >= min_more);
    }
    free_fixture_sets(&sets);
}

/* more: the files with attributes */
static int roundtrip_file(const char *dir, char path[4096], const unsigned char *bytes, size_t len, int *more)
{
    size_t count = 0;
    if (!roundtrip_bytes(path, bytes, len, &count)) return 0;
    if (count) (*more)++;
    return 1;
}

static void test_every_fixture_attr_v2_roundtrips(void)
{
    check_fixture_sets("attr-v2", roundtrip_file, 10, 1, "round-tripped byte for byte", "with attributes");
}

static void test_embedded_zoo_roundtrip_and_values(void)
{
    size_t count = 0;
    CHECK(roundtrip_bytes("zoo", (const unsigned char *)zoo_text, strlen(zoo_text), &count));
    CHECK_EQ_INT(count, ZOO_LINES);
    cf__attrset s;
    cf_error err;
    cf__attrset_init(&s);
    CHECK_OK(cf__attrset_parse_v2(&s, zoo_text, strlen(zoo_text), "zoo", &err), &err);
    CHECK_EQ_INT(s.count, ZOO_LINES);
    cf__attr *a = cf__attrset_find(&s, "u8_max");
    CHECK(a != NULL);
    if (a) {
        CHECK_EQ_STR(a->dtype, "<u8");
        CHECK_EQ_INT(a->nmemb, 1);
        CHECK_EQ_MEM(a->data, "\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF", 8);
    }
    a = cf__attrset_find(&s, "str_empty");
    CHECK(a && a->nmemb == 1 && a->data[0] == 0 && a->type.kind == 'a');
    a = cf__attrset_find(&s, "overwritten");
    CHECK(a && a->nmemb == 17 && memcmp(a->data, "second value wins", 17) == 0);
    a = cf__attrset_find(&s, "c16_be");
    CHECK(a && a->type.order == '>' && a->type.kind == 'c' && a->type.width == 16);
    if (a) CHECK_EQ_MEM(a->data, "\xBE\x80\x24\xF1\xD5\x4B\xE9\x39\x3F\xC8\x36\x66\xDD\xCA\xD2\x54", 16);
    a = cf__attrset_find(&s, "f8_long_array");
    CHECK(a && a->nmemb == 27 && a->type.kind == 'f' && a->type.width == 8);
    a = cf__attrset_find(&s, "str_list");
    CHECK(a && a->nmemb == 3 && a->type.kind == 'S' && a->type.width == 10);
    if (a) CHECK_EQ_MEM(a->data + 10, "beta-wk\0\0\0", 10);
    a = cf__attrset_find(&s, "str_unicode");
    CHECK(a && a->nmemb == 41 && memcmp(a->data, "Gr\xC3\xBC\xC3\x9F" "e", 7) == 0);
    a = cf__attrset_find(&s, "#odd=name/x.y");
    CHECK(a && a->nmemb == 1 && a->data[0] == 7);
    char longname[156];
    memset(longname, 'n', 155);
    longname[155] = '\0';
    a = cf__attrset_find(&s, longname);
    CHECK(a && a->nmemb == 1 && memcmp(a->data, "\0\0\0\0\0\0\xF4\x3F", 8) == 0);
    for (size_t i = 1; i < s.count; i++) CHECK(strcmp(s.items[i - 1].name, s.items[i].name) < 0);
    cf__attrset_free(&s);
}

/* ---- attr-v2 parser leniency ------------------------------------------ */

static void test_parse_lenient_forms(void)
{
    static const char *const accepted[] = {
        "a <i8 1 0A00000000000000 #HUMANE [ 10 ]\n",      /* canonical */
        "a <i8 1 0a00000000000000 #HUMANE [ 10 ]\n",      /* lowercase hex */
        "a <i8 1 0A00000000000000 #HUMANE [ 10 ]\r\n",    /* CRLF */
        "a\t<i8\t1\t0A00000000000000\t#HUMANE [ 10 ]\n",  /* tabs */
        "  a  <i8   1 \t 0A00000000000000   #x\n",        /* runs of blanks */
        "a <i8 1 0A00000000000000 #HUMANE [ 10 ]",        /* no final LF */
        "\na <i8 1 0A00000000000000 #HUMANE [ 10 ]\n\n",  /* blank lines */
        "\r\n \t\r\na <i8 1 0A00000000000000\n   \n",      /* blank-ish lines, ends after hex */
        "a <i8 1 0A00000000000000",                        /* ends after hex, no LF */
        "a <i8 1 0A00000000000000\r\n",                    /* ends after hex, CRLF */
        "a i8 1 0A00000000000000 x\n",                     /* no byte order: machine */
        "a =i8 1 0A00000000000000 x\n",
        "a <i8 1 FFFFFFFFFFFFFFFF x\na <i8 1 0A00000000000000 x\n", /* later line wins */
        "a <f8 0  #HUMANE [  ]\na <i8 1 0A00000000000000 x\n",
    };
    for (size_t i = 0; i < sizeof accepted / sizeof accepted[0]; i++) {
        cf__attrset s;
        cf_error err;
        cf__attrset_init(&s);
        int rc = parse_str(&s, accepted[i], &err);
        if (rc != 0) {
            fprintf(stderr, "case %zu [%s]: %s\n", i, accepted[i], err.message);
            cf_test_failures++;
        }
        CHECK_EQ_INT(s.count, 1);
        cf__attr *a = cf__attrset_find(&s, "a");
        CHECK(a != NULL);
        if (a) {
            CHECK_EQ_INT(a->nmemb, 1);
            CHECK_EQ_INT(a->type.kind, 'i');
            CHECK_EQ_INT(a->type.width, 8);
            CHECK_EQ_MEM(a->data, "\x0A\0\0\0\0\0\0\0", 8);
        }
        cf__attrset_free(&s);
    }
}

static void test_parse_nmemb_zero_and_empty(void)
{
    cf__attrset s;
    cf_error err;
    cf__attrset_init(&s);
    CHECK_OK(parse_str(&s, "x <f8 0  #HUMANE [  ]\n", &err), &err);
    CHECK_EQ_INT(s.count, 1);
    CHECK(s.count == 1 && s.items[0].nmemb == 0);
    CHECK_FORMAT(&s, "x <f8 0  #HUMANE [  ]\n");
    CHECK_OK(parse_str(&s, "y <f8 0\n", &err), &err); /* nothing after nmemb */
    CHECK_OK(parse_str(&s, "z <a1 0 \r\n", &err), &err);
    CHECK_EQ_INT(s.count, 3);
    cf__attrset_free(&s);
    CHECK_OK(cf__attrset_parse_v2(&s, "", 0, "p", &err), &err);
    CHECK_OK(cf__attrset_parse_v2(&s, NULL, 0, "p", &err), &err);
    CHECK_OK(cf__attrset_parse_v2(&s, "\n\n\r\n", 4, NULL, &err), &err);
    CHECK_EQ_INT(s.count, 0);
}

static void test_parse_merges_into_existing(void)
{
    cf__attrset s;
    cf_error err;
    cf__attrset_init(&s);
    int64_t v = 5;
    CHECK_OK(cf__attrset_set(&s, "keep", "<i8", 1, &v, &err), &err);
    CHECK_OK(cf__attrset_set(&s, "both", "<i8", 1, &v, &err), &err);
    CHECK_OK(parse_str(&s, "zz <u1 1 07 x\nboth <a1 2 6869 x\nb0 <u1 1 01 x\nzz <u1 1 08 x\n", &err),
             &err);
    CHECK_EQ_INT(s.count, 4);
    CHECK_EQ_STR(s.items[0].name, "b0");
    CHECK_EQ_STR(s.items[1].name, "both");
    CHECK_EQ_STR(s.items[2].name, "keep");
    CHECK_EQ_STR(s.items[3].name, "zz");
    cf__attr *a = cf__attrset_find(&s, "both");
    CHECK(a && a->type.kind == 'a' && a->nmemb == 2 && memcmp(a->data, "hi", 2) == 0);
    a = cf__attrset_find(&s, "zz");
    CHECK(a && a->data[0] == 8);
    cf__attrset_free(&s);
}

static void test_parse_many_lines_reverse_order(void)
{
    /* 20000 names in descending order: the merge must stay fast and sorted */
    size_t n = 20000, cap = n * 40, len = 0;
    char *text = malloc(cap);
    CHECK(text != NULL);
    if (!text) return;
    for (size_t i = 0; i < n; i++)
        len += (size_t)snprintf(text + len, cap - len, "n%06zu <u1 1 %02X x\n", n - i, (unsigned)(i & 0xFF));
    cf__attrset s;
    cf_error err;
    cf__attrset_init(&s);
    CHECK_OK(cf__attrset_parse_v2(&s, text, len, "many", &err), &err);
    CHECK_EQ_INT(s.count, n);
    for (size_t i = 1; i < s.count; i++) CHECK(strcmp(s.items[i - 1].name, s.items[i].name) < 0);
    cf__attrset_free(&s);
    free(text);
}

/* ---- attr-v2 parser rejections ---------------------------------------- */

static void test_parse_rejects(void)
{
    static const struct { const char *text; const char *needle; } bad[] = {
        {"a\n", "t/attr-v2:1: missing dtype"},
        {"a <i8\n", "t/attr-v2:1: missing nmemb"},
        {"a <i8 1\n", "t/attr-v2:1: missing data"},
        {"a <i8 1 #HUMANE [ 10 ]\n", "t/attr-v2:1: missing data"},
        {"\n\nok <u1 1 01\nb <#8 1 0A00000000000000 x\n", "t/attr-v2:4: bad dtype"},
        {"a <i8x 1 0A00000000000000 x\n", "bad dtype"},
        {"a <i 1 0A x\n", "bad dtype"},
        {"a <i8888888888888888888 1 0A x\n", "bad dtype"},
        {"a <i8 -1 0A00000000000000 x\n", "negative nmemb"},
        {"a <i8 x1 0A00000000000000 x\n", "bad nmemb"},
        {"a <i8 1x 0A00000000000000 x\n", "bad nmemb"},
        {"a <i8 +1 0A00000000000000 x\n", "bad nmemb"},
        {"a <i8 99999999999999999999999 0A x\n", "bad nmemb"},
        {"a <i8 9999999999999 0A00000000000000 x\n", "do not hold"},
        {"a <i8 1 0A000000000000 x\n", "do not hold"},
        {"a <i8 1 0A0000000000000000 x\n", "do not hold"},
        {"a <i8 1 0A0000000000000 x\n", "do not hold"},
        {"a <i8 1 0G00000000000000 x\n", "bad hex digit"},
        {"a <i8 1 0x00000000000000 x\n", "bad hex digit"},
        {"a <f8 0 00 x\n", "do not hold"},
        {"a\r <u1 1 01 x\n", "bad attribute name"},
        {"a <i8 1 0A00000000000000\n\nb <i4 2 00 x", "t/attr-v2:3:"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cf__attrset s;
        cf_error err;
        cf__attrset_init(&s);
        int64_t v = 3;
        CHECK_OK(cf__attrset_set(&s, "pre", "<i8", 1, &v, &err), &err);
        int rc = parse_str(&s, bad[i].text, &err);
        if (rc != CF_EFORMAT) {
            fprintf(stderr, "case %zu [%s]: rc %d, expected CF_EFORMAT\n", i, bad[i].text, rc);
            cf_test_failures++;
        } else if (!strstr(err.message, bad[i].needle)) {
            fprintf(stderr, "case %zu: message \"%s\" lacks \"%s\"\n", i, err.message, bad[i].needle);
            cf_test_failures++;
        }
        /* a failed parse leaves the set as it was */
        CHECK_EQ_INT(s.count, 1);
        CHECK(cf__attrset_find(&s, "pre") != NULL);
        cf__attrset_free(&s);
    }
    /* a NUL inside the text is an error, not an end */
    cf__attrset s;
    cf_error err;
    cf__attrset_init(&s);
    CHECK_FAILS(cf__attrset_parse_v2(&s, "a\0b <u1 1 01 x\n", 15, "p", &err), CF_EFORMAT, &err,
                "p:1: bad attribute name");
    CHECK_FAILS(cf__attrset_parse_v2(&s, "a <u\0 1 01 x\n", 13, "p", &err), CF_EFORMAT, &err,
                "p:1: bad dtype");
    CHECK_EQ_INT(s.count, 0);
}

/* ---- robustness: hostile input never crashes -------------------------- */

static void parse_any(const char *text, size_t len)
{
    cf__attrset s;
    cf_error err;
    cf__attrset_init(&s);
    /* copy into an exact-size heap block so ASan sees any overread */
    char *copy = malloc(len ? len : 1);
    if (!copy) return;
    if (len) memcpy(copy, text, len);
    int rc = cf__attrset_parse_v2(&s, copy, len, "fuzz", &err);
    CHECK(rc == 0 || rc == CF_EFORMAT);
    if (rc == 0) {
        char *out = NULL;
        size_t olen = 0;
        CHECK_OK(cf__attrset_format_v2(&s, NULL, &out, &olen, &err), &err);
        /* what we write, we read back */
        cf__attrset t;
        cf__attrset_init(&t);
        if (out) CHECK_OK(cf__attrset_parse_v2(&t, out, olen, "again", &err), &err);
        CHECK_EQ_INT(t.count, s.count);
        cf__attrset_free(&t);
        free(out);
    }
    cf__attrset_free(&s);
    free(copy);
}

static void test_parse_every_truncation_of_zoo(void)
{
    size_t len = strlen(zoo_text);
    for (size_t n = 0; n <= len; n++) parse_any(zoo_text, n);
    /* and every suffix */
    for (size_t n = 0; n <= len; n += 7) parse_any(zoo_text + n, len - n);
}

static void test_parse_random_bytes(void)
{
    static const char alphabet[] = " \t\n\r<>|=iufcbSa0123456789ABCDEFabcdef#-+\0";
    uint64_t s = 77;
    char buf[256];
    for (int iter = 0; iter < 20000; iter++) {
        size_t len = (size_t)(rng_next(&s) % sizeof buf);
        for (size_t i = 0; i < len; i++) {
            uint64_t r = rng_next(&s);
            buf[i] = (iter & 1) ? (char)(r >> 56) : alphabet[(r >> 32) % (sizeof alphabet - 1)];
        }
        parse_any(buf, len);
    }
    /* mutations of real bigfile output */
    size_t flen = strlen(zoo_text);
    for (int iter = 0; iter < 3000; iter++) {
        unsigned char *m = malloc(flen);
        if (!m) break;
        memcpy(m, zoo_text, flen);
        int flips = 1 + (int)(rng_next(&s) % 4);
        for (int f = 0; f < flips && flen; f++) {
            uint64_t r = rng_next(&s);
            m[r % flen] = (iter & 1) ? (unsigned char)(r >> 56)
                                     : (unsigned char)alphabet[(r >> 40) % (sizeof alphabet - 1)];
        }
        parse_any((const char *)m, flen);
        free(m);
    }
}

/* ---- legacy v1 -------------------------------------------------------- */

static void check_attr(const cf__attrset *s, const char *name, const char *dtype, int64_t nmemb,
                       const char *hex, int line)
{
    cf__attr *a = cf__attrset_find(s, name);
    if (!a) {
        fprintf(stderr, "%s:%d: attribute %s missing\n", __FILE__, line, name);
        cf_test_failures++;
        return;
    }
    char got[512] = "";
    int64_t nbytes = a->nmemb * a->type.width;
    for (int64_t i = 0; i < nbytes && 2 * i + 2 < (int64_t)sizeof got; i++)
        snprintf(got + 2 * i, 3, "%02X", a->data[i]);
    if (strcmp(a->dtype, dtype) != 0 || a->nmemb != nmemb || strcmp(got, hex) != 0) {
        fprintf(stderr, "%s:%d: %s is %s %lld %s, want %s %lld %s\n", __FILE__, line, name,
                a->dtype, (long long)a->nmemb, got, dtype, (long long)nmemb, hex);
        cf_test_failures++;
    }
}
#define CHECK_ATTR(s, name, dtype, nmemb, hex) check_attr((s), (name), (dtype), (nmemb), (hex), __LINE__)

/* A legacy binary `attr` file as the fixture generator assembles it: per
 * record int32 nmemb, int32 name length (little-endian here), the dtype
 * token NUL-padded to 8 bytes, the name, then the data.  The records are
 * not in name order.  Next to it, the column's attr-v2 as bigfile wrote it:
 * `both` is in both files and attr-v2 wins. */
static const unsigned char v1_col_attr[] = {
    /* v1only <f8 2 */
    0x02, 0x00, 0x00, 0x00, 0x06, 0x00, 0x00, 0x00, '<', 'f', '8', 0, 0, 0, 0, 0,
    'v', '1', 'o', 'n', 'l', 'y',
    0xBB, 0x79, 0x96, 0x81, 0x92, 0x6C, 0x21, 0xC1, 0x20, 0x77, 0xDF, 0xF8, 0x1F, 0x10, 0xB1, 0xC0,
    /* both <S1 7 "from-v1" */
    0x07, 0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00, '<', 'S', '1', 0, 0, 0, 0, 0,
    'b', 'o', 't', 'h',
    'f', 'r', 'o', 'm', '-', 'v', '1',
    /* v1be >i2 2 */
    0x02, 0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00, '>', 'i', '2', 0, 0, 0, 0, 0,
    'v', '1', 'b', 'e',
    0xD4, 0x04, 0xD9, 0x2A,
    /* v1s3 <S3 2 "abc" "de" */
    0x02, 0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00, '<', 'S', '3', 0, 0, 0, 0, 0,
    'v', '1', 's', '3',
    'a', 'b', 'c', 'd', 'e', 0x00,
    /* v1c16 <c16 1 1.5-2j */
    0x01, 0x00, 0x00, 0x00, 0x05, 0x00, 0x00, 0x00, '<', 'c', '1', '6', 0, 0, 0, 0,
    'v', '1', 'c', '1', '6',
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xF8, 0x3F, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xC0,
    /* v1b1 <b1 2 */
    0x02, 0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00, '<', 'b', '1', 0, 0, 0, 0, 0,
    'v', '1', 'b', '1',
    0x01, 0x00,
};

static const char v1_col_attr_v2[] =
    "both <a1 7 66726F6D2D7632 #HUMANE [ from-v2 ]\n"
    "v2only <f8 1 CEA1A5F369C0CEBF #HUMANE [ -0.240247 ]\n";

/* A root `attr` on its own, its records already in name order. */
static const unsigned char v1_root_attr[] = {
    /* rootv1 <i8 1 350 */
    0x01, 0x00, 0x00, 0x00, 0x06, 0x00, 0x00, 0x00, '<', 'i', '8', 0, 0, 0, 0, 0,
    'r', 'o', 'o', 't', 'v', '1',
    0x5E, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    /* title <S1 6 "legacy" */
    0x06, 0x00, 0x00, 0x00, 0x05, 0x00, 0x00, 0x00, '<', 'S', '1', 0, 0, 0, 0, 0,
    't', 'i', 't', 'l', 'e',
    'l', 'e', 'g', 'a', 'c', 'y',
};

static void test_v1_embedded_col_merge(void)
{
    CHECK_EQ_INT(sizeof v1_col_attr, 174);
    /* exact-size heap copies, so ASan sees any overread */
    unsigned char *v1 = malloc(sizeof v1_col_attr);
    size_t l2 = strlen(v1_col_attr_v2);
    char *v2 = malloc(l2);
    CHECK(v1 && v2);
    cf__attrset s;
    cf_error err;
    cf__attrset_init(&s);
    if (v1 && v2) {
        memcpy(v1, v1_col_attr, sizeof v1_col_attr);
        memcpy(v2, v1_col_attr_v2, l2);
        CHECK_OK(cf__attrset_parse_v1(&s, v1, sizeof v1_col_attr, "col/attr", &err), &err);
        CHECK_EQ_INT(s.count, 6);
        cf__attr *both = cf__attrset_find(&s, "both");
        CHECK(both && strcmp(both->dtype, "<S1") == 0 && memcmp(both->data, "from-v1", 7) == 0);
        CHECK_OK(cf__attrset_parse_v2(&s, v2, l2, "col/attr-v2", &err), &err);
        CHECK_EQ_INT(s.count, 7);
        CHECK_ATTR(&s, "both", "<a1", 7, "66726F6D2D7632");
        CHECK_ATTR(&s, "v1b1", "<b1", 2, "0100");
        CHECK_ATTR(&s, "v1be", ">i2", 2, "D404D92A");
        CHECK_ATTR(&s, "v1c16", "<c16", 1, "000000000000F83F00000000000000C0");
        CHECK_ATTR(&s, "v1only", "<f8", 2, "BB799681926C21C12077DFF81F10B1C0");
        CHECK_ATTR(&s, "v1s3", "<S3", 2, "616263646500");
        CHECK_ATTR(&s, "v2only", "<f8", 1, "CEA1A5F369C0CEBF");
    }
    cf__attrset_free(&s);
    free(v1);
    free(v2);
}

static void test_v1_embedded_root(void)
{
    size_t len = sizeof v1_root_attr;
    CHECK_EQ_INT(len, 57);
    unsigned char *v1 = malloc(len);
    CHECK(v1 != NULL);
    if (!v1) return;
    memcpy(v1, v1_root_attr, len);
    cf__attrset s;
    cf_error err;
    cf__attrset_init(&s);
    CHECK_OK(cf__attrset_parse_v1(&s, v1, len, "attr", &err), &err);
    CHECK_EQ_INT(s.count, 2);
    CHECK_ATTR(&s, "rootv1", "<i8", 1, "5E01000000000000");
    CHECK_ATTR(&s, "title", "<S1", 6, "6C6567616379");
    /* v1 -> format -> v1 gives the same set */
    unsigned char *out = NULL;
    size_t olen = 0;
    CHECK_OK(cf__attrset_format_v1(&s, NULL, &out, &olen, &err), &err);
    CHECK_EQ_INT(olen, len); /* records were already in name order */
    if (out && olen == len) CHECK_EQ_MEM(out, v1, len);
    free(out);
    cf__attrset_free(&s);
    free(v1);
}

/* cf__attrset_parse_v1 of a copy of b exactly len bytes long, so that
 * ASan sees any overread; CF_ENOMEM if no copy could be made. */
static int parse_v1_copy(cf__attrset *s, const unsigned char *b, size_t len, const char *path, cf_error *err)
{
    unsigned char *copy = malloc(len ? len : 1);
    if (!copy) return CF_ENOMEM;
    if (len) memcpy(copy, b, len);
    int rc = cf__attrset_parse_v1(s, copy, len, path, err);
    free(copy);
    return rc;
}

/* Build one v1 record. */
static size_t v1_record(unsigned char *out, int32_t nmemb, int32_t name_len, const char *dtype,
                        const char *name, const void *data, size_t data_len)
{
    uint32_t n = (uint32_t)nmemb, l = (uint32_t)name_len;
    for (int i = 0; i < 4; i++) {
        out[i] = (unsigned char)(n >> (8 * i));
        out[4 + i] = (unsigned char)(l >> (8 * i));
    }
    memset(out + 8, 0, 8);
    memcpy(out + 8, dtype, strlen(dtype) < 8 ? strlen(dtype) : 8);
    size_t nl = strlen(name);
    memcpy(out + 16, name, nl);
    if (data_len) memcpy(out + 16 + nl, data, data_len);
    return 16 + nl + data_len;
}

static void parse_v1_exact(const unsigned char *b, size_t len, int want_rc, const char *needle,
                           int line)
{
    cf__attrset s;
    cf_error err;
    cf__attrset_init(&s);
    int rc = parse_v1_copy(&s, b, len, "v1", &err);
    if (rc != want_rc || (rc && needle && !strstr(err.message, needle))) {
        fprintf(stderr, "%s:%d: parse_v1 rc %d (%s), want %d \"%s\"\n", __FILE__, line, rc,
                rc ? err.message : "", want_rc, needle ? needle : "");
        cf_test_failures++;
    }
    if (rc) CHECK_EQ_INT(s.count, 0);
    cf__attrset_free(&s);
}
#define CHECK_V1(b, len, rc, needle) parse_v1_exact((b), (len), (rc), (needle), __LINE__)

static void test_v1_rejects(void)
{
    unsigned char buf[256];
    int64_t v = 42;
    size_t n = v1_record(buf, 1, 3, "<i8", "abc", &v, 8);
    CHECK_V1(buf, n, 0, NULL);
    /* every truncation of a valid record fails, except the empty file */
    for (size_t k = 1; k < n; k++) CHECK_V1(buf, k, CF_EFORMAT, "v1: record 1: truncated");
    CHECK_V1(buf, 0, 0, NULL);
    /* a second record with damage is reported as record 2 */
    size_t m = n + v1_record(buf + n, -1, 1, "<i8", "b", NULL, 0);
    CHECK_V1(buf, m, CF_EFORMAT, "v1: record 2: negative nmemb");
    /* one record each: the fields, and what parsing it gives */
    const struct {
        int32_t nmemb, name_len;
        const char *dtype, *name;
        const void *data;
        size_t data_len;
        int rc;
        const char *needle;
    } records[] = {
        { 1, -5, "<i8", "", NULL, 0, CF_EFORMAT, "record 1: bad name length" },
        { 1, 0, "<i8", "", &v, 8, CF_EFORMAT, "record 1: bad name length" },
        { 1, 0x7FFFFFFF, "<i8", "abc", &v, 8, CF_EFORMAT, "truncated name" },
        { 0x7FFFFFFF, 1, "<c16", "a", &v, 8, CF_EFORMAT, "truncated data" },
        /* dtypes a header would refuse */
        { 3, 1, "<a1", "s", "abc", 3, CF_EFORMAT, "bad dtype `<a1'" },
        { 1, 1, "i8", "s", &v, 8, CF_EFORMAT, "bad dtype" },
        { 1, 1, "<S17", "s", "aaaaaaaaaaaaaaaaa", 17, CF_EFORMAT, "bad dtype" },
        { 1, 1, "<q8", "s", &v, 8, CF_EFORMAT, "bad dtype" },
        { 1, 1, "\x01\xFF", "s", &v, 8, CF_EFORMAT, "bad dtype `\\x01\\xFF'" },
        /* accepted: '|' and '=' orders become the machine order; nmemb 0 */
        { 2, 1, "|b1", "s", "\x01\x00", 2, 0, NULL },
        { 0, 1, "<f8", "z", NULL, 0, 0, NULL },
        /* a name with a blank */
        { 1, 3, "<u1", "a b", "x", 1, CF_EFORMAT, "bad attribute name" },
    };
    for (size_t i = 0; i < sizeof records / sizeof *records; i++) {
        n = v1_record(buf, records[i].nmemb, records[i].name_len, records[i].dtype, records[i].name,
                      records[i].data, records[i].data_len);
        CHECK_V1(buf, n, records[i].rc, records[i].needle);
    }
    /* a name with a NUL */
    n = v1_record(buf, 1, 3, "<u1", "a\0b", "x", 1);
    memcpy(buf + 16, "a\0b", 3);
    buf[19] = 'x';
    CHECK_V1(buf, 20, CF_EFORMAT, "bad attribute name");
}

static void test_v1_random_bytes(void)
{
    uint64_t s = 5;
    unsigned char buf[200];
    for (int iter = 0; iter < 20000; iter++) {
        size_t len = (size_t)(rng_next(&s) % sizeof buf);
        for (size_t i = 0; i < len; i++) buf[i] = (unsigned char)(rng_next(&s) >> 56);
        if (len >= 16 && (iter & 1)) { /* plausible header, random lengths */
            buf[0] = (unsigned char)(rng_next(&s) % 6);
            buf[1] = buf[2] = buf[3] = 0;
            buf[4] = (unsigned char)(rng_next(&s) % 8);
            buf[5] = buf[6] = buf[7] = 0;
            memcpy(buf + 8, "<u2\0\0\0\0\0", 8);
        }
        cf__attrset set;
        cf_error err;
        cf__attrset_init(&set);
        int rc = parse_v1_copy(&set, buf, len, "rnd", &err);
        CHECK(rc == 0 || rc == CF_EFORMAT);
        cf__attrset_free(&set);
    }
}

static void test_v1_format(void)
{
    cf__attrset s, t;
    cf_error err;
    cf__attrset_init(&s);
    cf__attrset_init(&t);
    int16_t be[2] = {0x1234, 0x5678};
    CHECK_OK(cf__attrset_set(&s, "b", ">i2", 2, be, &err), &err);
    CHECK_OK(cf__attrset_set(&s, "a", "<S3", 1, "xyz", &err), &err);
    CHECK_OK(cf__attrset_set(&s, "e", "<f8", 0, NULL, &err), &err);
    unsigned char *out = NULL;
    size_t len = 0;
    CHECK_OK(cf__attrset_format_v1(&s, NULL, &out, &len, &err), &err);
    CHECK_EQ_INT(len, (16 + 1 + 3) + (16 + 1 + 4) + (16 + 1));
    if (out) {
        CHECK_EQ_MEM(out, "\x01\0\0\0\x01\0\0\0<S3\0\0\0\0\0axyz", 20);
        CHECK_OK(cf__attrset_parse_v1(&t, out, len, "again", &err), &err);
        CHECK_EQ_INT(t.count, 3);
        CHECK_ATTR(&t, "b", ">i2", 2, "34127856");
    }
    free(out);
    /* keep filters; kind `a` cannot be written in v1 */
    CHECK_OK(cf__attrset_set(&s, "str", "<a1", 2, "hi", &err), &err);
    CHECK_FAILS(cf__attrset_format_v1(&s, NULL, &out, &len, &err), CF_EDTYPE, &err, "str");
    cf__attrset_free(&s);
    cf__attrset_free(&t);
}

/* ---- every legacy attr file of every fixture set parses ---------------- */

/* more: the records parsed */
static int legacy_file(const char *dir, char path[4096], const unsigned char *bytes, size_t len, int *more)
{
    int passed = 0;

    cf__attrset s, t2;
    cf_error err;
    cf__attrset_init(&s);
    cf__attrset_init(&t2);
    int rc = parse_v1_copy(&s, bytes, len, path, &err);
    if (rc != 0) {
        fprintf(stderr, "%s: parse failed: %s\n", path, err.message);
        cf_test_failures++;
    } else {
        int good = 1;
        *more += (int)s.count;
        /* format as v1 and parse again: the same attributes */
        unsigned char *out = NULL;
        size_t olen = 0;
        CHECK_OK(cf__attrset_format_v1(&s, NULL, &out, &olen, &err), &err);
        CHECK_OK(cf__attrset_parse_v1(&t2, out, olen, "again", &err), &err);
        if (t2.count != s.count) good = 0;
        for (size_t i = 0; good && i < s.count; i++) {
            const cf__attr *a = &s.items[i];
            const cf__attr *b = cf__attrset_find(&t2, a->name);
            if (!b || strcmp(a->dtype, b->dtype) != 0 || a->nmemb != b->nmemb ||
                memcmp(a->data, b->data, (size_t)(a->nmemb * a->type.width)) != 0)
                good = 0;
        }
        free(out);
        if (!good) {
            fprintf(stderr, "%s: v1 -> format -> v1 changed the attributes\n", path);
            cf_test_failures++;
        }
        /* a reader takes the legacy file first, then attr-v2 over it */
        snprintf(path, 4096, "%s/attr-v2", dir);
        size_t l2 = 0;
        unsigned char *v2 = is_file(path) ? slurp(path, &l2) : NULL;
        if (v2) {
            size_t before = s.count;
            CHECK_OK(cf__attrset_parse_v2(&s, (const char *)v2, l2, path, &err), &err);
            CHECK(s.count >= before);
            free(v2);
        }
        passed = good;
    }
    cf__attrset_free(&s);
    cf__attrset_free(&t2);
    return passed;
}

static void test_every_fixture_legacy_attr_parses(void)
{
    check_fixture_sets("attr", legacy_file, 1, 0, "parsed", "records");
}

/* Kinds other tools write (numpy's U, M, O, V, and unknown letters) are
 * kept as opaque bytes of the token's width -- <U4 is 4 bytes, not numpy's
 * 16 -- and formatting keeps their token, nmemb and bytes (format.md 7.3). */
static void test_parse_other_tools_kinds_opaque(void)
{
    static const char text[] =
        "m8 <M8 1 0100000000000000 #HUMANE [ ]\n"
        "o8 <O8 1 0000000000000000 #HUMANE [ ]\n"
        "u1 <U1 2 4142 #HUMANE [ ]\n"
        "u4 <U4 1 41000000 #HUMANE [ ]\n"
        "v4 <V4 1 01020304 #HUMANE [ ]\n"
        "x2 <x2 1 0102 #HUMANE [ ]\n";
    static const struct { const char *name, *tok; int64_t nmemb, width; const char *bytes; } want[] = {
        {"m8", "<M8", 1, 8, "\x01\0\0\0\0\0\0\0"}, {"o8", "<O8", 1, 8, "\0\0\0\0\0\0\0\0"},
        {"u1", "<U1", 2, 1, "AB"}, {"u4", "<U4", 1, 4, "A\0\0\0"},
        {"v4", "<V4", 1, 4, "\x01\x02\x03\x04"}, {"x2", "<x2", 1, 2, "\x01\x02"},
    };
    cf__attrset s;
    cf_error err;
    cf__attrset_init(&s);
    CHECK_OK(parse_str(&s, text, &err), &err);
    CHECK_EQ_INT(s.count, 6);
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const cf__attr *a = cf__attrset_find(&s, want[i].name);
        CHECK(a != NULL);
        if (!a) continue;
        CHECK_EQ_STR(a->dtype, want[i].tok);
        CHECK_EQ_INT(a->nmemb, want[i].nmemb);
        CHECK_EQ_INT(a->type.width, want[i].width);
        CHECK_EQ_MEM(a->data, want[i].bytes, (size_t)(want[i].nmemb * want[i].width));
    }
    /* rewritten (here with one more attribute): the same lines, with the
     * placeholder text bigfile prints for kinds it cannot show */
    int32_t one = 1;
    CHECK_OK(cf__attrset_set(&s, "n", "<i4", 1, &one, &err), &err);
    CHECK_FORMAT(&s, "m8 <M8 1 0100000000000000 #HUMANE [ <<M8> ]\n"
                     "n <i4 1 01000000 #HUMANE [ 1 ]\n"
                     "o8 <O8 1 0000000000000000 #HUMANE [ <<O8> ]\n"
                     "u1 <U1 2 4142 #HUMANE [ <<U1> <<U1> ]\n"
                     "u4 <U4 1 41000000 #HUMANE [ <<U4> ]\n"
                     "v4 <V4 1 01020304 #HUMANE [ <<V4> ]\n"
                     "x2 <x2 1 0102 #HUMANE [ <<x2> ]\n");
    /* the width is the token's: 16 bytes for one <U4 are refused */
    cf__attrset t;
    cf__attrset_init(&t);
    CHECK_FAILS(parse_str(&t, "u <U4 1 41000000000000000000000000000000\n", &err), CF_EFORMAT, &err, "t/attr-v2:1");
    cf__attrset_free(&t);
    cf__attrset_free(&s);
}

CF_TESTS(
    CF_TEST(test_set_find_remove),
    CF_TEST(test_set_rejects),
    CF_TEST(test_format_examples_from_facts),
    CF_TEST(test_format_kinds),
    CF_TEST(test_format_too_long_boundary),
    CF_TEST(test_format_empty_and_keep),
    CF_TEST(test_every_fixture_attr_v2_roundtrips),
    CF_TEST(test_embedded_zoo_roundtrip_and_values),
    CF_TEST(test_parse_lenient_forms),
    CF_TEST(test_parse_nmemb_zero_and_empty),
    CF_TEST(test_parse_merges_into_existing),
    CF_TEST(test_parse_many_lines_reverse_order),
    CF_TEST(test_parse_rejects),
    CF_TEST(test_parse_other_tools_kinds_opaque),
    CF_TEST(test_parse_every_truncation_of_zoo),
    CF_TEST(test_parse_random_bytes),
    CF_TEST(test_v1_embedded_col_merge),
    CF_TEST(test_v1_embedded_root),
    CF_TEST(test_v1_rejects),
    CF_TEST(test_v1_random_bytes),
    CF_TEST(test_v1_format),
    CF_TEST(test_every_fixture_legacy_attr_parses)
)
