/* test_dtype.c - dtype parsing, formatting and conversions (src/format/dtype.c, dtype_convert.c).
 *
 * Expected conversion results are worked out by hand (and agree with numpy
 * astype(casting='unsafe')); byte patterns are built in this file so that
 * the tests hold on machines of either byte order.
 */
#include <math.h>
#include <stdint.h>

#include "dtype.h"
#include "harness.h"

typedef struct { float re, im; } c8_t;
typedef struct { double re, im; } c16_t;

static cf_error err_;

static void reverse(void *p, size_t n)
{
    unsigned char *b = p;
    for (size_t i = 0, j = n - 1; i < j; i++, j--) {
        unsigned char t = b[i];
        b[i] = b[j];
        b[j] = t;
    }
}

/* Put the native bytes of each `unit` in order `order` ('<' or '>'). */
static void to_order(void *p, size_t width, size_t unit, char order)
{
    if (order == cf__dtype_native_order()) return;
    for (size_t i = 0; i < width; i += unit) reverse((unsigned char *)p + i, unit);
}

static void check_bytes(int line, const char *from, const char *to, const char *what,
                        const void *got, const void *want, size_t n)
{
    if (memcmp(got, want, n) == 0) return;
    fprintf(stderr, "%s:%d: %s -> %s of %s: got", __FILE__, line, from, to, what);
    for (size_t i = 0; i < n; i++) fprintf(stderr, " %02x", ((const unsigned char *)got)[i]);
    fprintf(stderr, ", want");
    for (size_t i = 0; i < n; i++) fprintf(stderr, " %02x", ((const unsigned char *)want)[i]);
    fprintf(stderr, "\n");
    cf_test_failures++;
}

/* Convert one native value of C type FT (dtype `from`) to TT (dtype `to`)
 * and compare the bytes with `want`. */
#define CONV(FT, from, fval, TT, to, want)                                         \
    do {                                                                           \
        FT src_ = (fval);                                                          \
        TT got_, want_ = (want);                                                   \
        memset(&got_, 0xa5, sizeof got_);                                          \
        CHECK_OK(cf_dtype_convert(&got_, 0, to, &src_, 0, from, 1, &err_), &err_); \
        check_bytes(__LINE__, from, to, #fval, &got_, &want_, sizeof got_);        \
    } while (0)

static double f8_from(uint64_t u)
{
    double d;
    memcpy(&d, &u, 8);
    return d;
}

/* ------------------------------------------------------------------ */
/* Parsing                                                              */
/* ------------------------------------------------------------------ */

static const char *const valid_tokens[] = {
    "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "f2", "f4", "f8",
    "c8", "c16", "b1", "S1", "S7", "S12", "S16",
};

/* Header dtypes stop at S16 (bigfile 0.1.52 reopens no wider strings);
 * callers' buffers and attributes take any width. */
static void test_string_width_limits(void)
{
    cf__dtype d;
    CHECK_OK(cf__dtype_parse("<S2147483647", CF__DTYPE_USER, &d, NULL, &err_), &err_);
    CHECK_EQ_INT(d.width, 2147483647);
    CHECK_OK(cf__dtype_parse("<S100000", CF__DTYPE_ATTR, &d, NULL, &err_), &err_);
    CHECK_FAILS(cf__dtype_parse("<S17", CF__DTYPE_HEADER, &d, "h", &err_), CF_EDTYPE, &err_, "above 16");
}

static void test_parse_every_valid_kind(void)
{
    static const char orders[] = "<>|=";
    char native = cf__dtype_native_order();
    for (size_t i = 0; i < sizeof valid_tokens / sizeof *valid_tokens; i++) {
        const char *tok = valid_tokens[i];
        int64_t width = atoll(tok + 1);
        for (int o = 0; o < 4; o++) {
            char text[32];
            snprintf(text, sizeof text, "%c%s", orders[o], tok);
            char want_order = (orders[o] == '<' || orders[o] == '>') ? orders[o] : native;
            for (int rules = CF__DTYPE_HEADER; rules <= CF__DTYPE_ATTR; rules++) {
                cf__dtype d = { 0, 0, 0 };
                CHECK_OK(cf__dtype_parse(text, rules, &d, NULL, &err_), &err_);
                CHECK_EQ_INT(d.kind, tok[0]);
                CHECK_EQ_INT(d.width, width);
                CHECK_EQ_INT(d.order, want_order);
            }
        }
        /* Without an order char: fine for callers and attributes. */
        cf__dtype d;
        CHECK_OK(cf__dtype_parse(tok, CF__DTYPE_USER, &d, NULL, &err_), &err_);
        CHECK_EQ_INT(d.order, native);
        CHECK_EQ_INT(d.width, width);
        CHECK_OK(cf__dtype_parse(tok, CF__DTYPE_ATTR, &d, NULL, &err_), &err_);
        CHECK_EQ_INT(d.order, native);
    }
}

static void test_parse_header_needs_order(void)
{
    cf__dtype d;
    CHECK_FAILS(cf__dtype_parse("f8", CF__DTYPE_HEADER, &d, NULL, &err_), CF_EDTYPE, &err_,
                "unreasonable dtype 'f8': no byte order");
    CHECK_FAILS(cf__dtype_parse("S5", CF__DTYPE_HEADER, &d, "/x/header", &err_), CF_EDTYPE,
                &err_, "/x/header: unreasonable dtype 'S5'");
    CHECK_OK(cf__dtype_parse("|S5", CF__DTYPE_HEADER, &d, NULL, &err_), &err_);
    CHECK_EQ_INT(d.order, cf__dtype_native_order());
    CHECK_OK(cf__dtype_parse("=i4", CF__DTYPE_HEADER, &d, NULL, &err_), &err_);
    CHECK_EQ_INT(d.order, cf__dtype_native_order());
}

static void test_parse_user_aliases(void)
{
    cf__dtype d;
    const char *bools[] = { "?", "<?", ">?", "|?", "=?" };
    for (size_t i = 0; i < 5; i++) {
        CHECK_OK(cf__dtype_parse(bools[i], CF__DTYPE_USER, &d, NULL, &err_), &err_);
        CHECK_EQ_INT(d.kind, 'b');
        CHECK_EQ_INT(d.width, 1);
    }
    CHECK_OK(cf__dtype_parse("a5", CF__DTYPE_USER, &d, NULL, &err_), &err_);
    CHECK_EQ_INT(d.kind, 'S');
    CHECK_EQ_INT(d.width, 5);
    CHECK_OK(cf__dtype_parse("|a12", CF__DTYPE_USER, &d, NULL, &err_), &err_);
    CHECK_EQ_INT(d.kind, 'S');
    CHECK_EQ_INT(d.width, 12);
    /* Leading zeros are decimal digits like numpy's "S08". */
    CHECK_OK(cf__dtype_parse("<S08", CF__DTYPE_HEADER, &d, NULL, &err_), &err_);
    CHECK_EQ_INT(d.width, 8);
    CHECK_FAILS(cf__dtype_parse("?1", CF__DTYPE_USER, &d, NULL, &err_), CF_EDTYPE, &err_,
                "'?1': '?' (bool) takes no width");
    /* Headers hold only the canonical spellings. */
    CHECK_FAILS(cf__dtype_parse("<a5", CF__DTYPE_HEADER, &d, NULL, &err_), CF_EDTYPE, &err_,
                "unsupported kind 'a'");
    CHECK_FAILS(cf__dtype_parse("<?", CF__DTYPE_HEADER, &d, NULL, &err_), CF_EDTYPE, &err_,
                "unsupported kind '?'");
}

static void test_parse_rejects(void)
{
    static const struct { const char *text, *needle; } bad[] = {
        { "<f16", "unreasonable dtype '<f16': kind 'f' has no width 16 (allowed: 2, 4 or 8)" },
        { "<c32", "kind 'c' has no width 32 (allowed: 8 or 16)" },
        { "<U3", "unreasonable dtype '<U3': unsupported kind 'U'" },
        { "|V4", "unsupported kind 'V'" },
        { "<M8[s]", "unsupported kind 'M'" },
        { "<m8", "unsupported kind 'm'" },
        { "|O8", "unsupported kind 'O'" },
        { "<i3", "kind 'i' has no width 3 (allowed: 1, 2, 4 or 8)" },
        { "<u16", "kind 'u' has no width 16" },
        { "<b2", "kind 'b' has no width 2 (allowed: 1)" },
        { "<c4", "kind 'c' has no width 4" },
        { "<f1", "kind 'f' has no width 1" },
        { "|S0", "unreasonable dtype '|S0': width must be at least 1" },
        { "<i0", "width must be at least 1" },
        { "<f8x", "unreasonable dtype '<f8x': width '8x' is not a decimal number" },
        { "<f+8", "width '+8' is not a decimal number" },
        { "<f-8", "width '-8' is not a decimal number" },
        { "<f 8", "width ' 8' is not a decimal number" },
        { "<f8 ", "width '8 ' is not a decimal number" },
        { "<S2147483648", "width 2147483648 is too large (at most 2147483647)" },
        { "<S99999999999999999999999", "is too large" },
        { "<x8", "unreasonable dtype '<x8': unknown kind 'x'" },
        { "<z1", "unknown kind 'z'" },
        { "!f8", "unknown kind '!'" },
        { " f8", "unknown kind ' '" },
        { "+f8", "unknown kind '+'" },
        { "<<f8", "unknown kind '<'" },
        { "<8", "unknown kind '8'" },
        { "", "unreasonable dtype '': empty" },
        { "<", "unreasonable dtype '<': no kind after the byte order" },
        { "|", "no kind after the byte order" },
        { "<f", "unreasonable dtype '<f': no width after kind 'f'" },
        { "S", "no width after kind 'S'" },
        { "i", "no width after kind 'i'" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        for (int rules = CF__DTYPE_HEADER; rules <= CF__DTYPE_USER; rules++) {
            cf__dtype d = { 'Q', 'Q', 77 };
            memset(&err_, 0, sizeof err_);
            int rc = cf__dtype_parse(bad[i].text, rules, &d, NULL, &err_);
            if (rules == CF__DTYPE_HEADER && bad[i].text[0] != '<' && bad[i].text[0] != '|' &&
                bad[i].text[0] != '>' && bad[i].text[0] != '=' && bad[i].text[0] != '\0') {
                CHECK_EQ_INT(rc, CF_EDTYPE); /* fails on the missing order first */
                continue;
            }
            CHECK_EQ_INT(rc, CF_EDTYPE);
            CHECK_EQ_INT(err_.code, CF_EDTYPE);
            CHECK(err_.source_file != NULL && err_.source_line > 0);
            if (!strstr(err_.message, bad[i].needle)) {
                fprintf(stderr, "%s:%d: '%s' (rules %d): message \"%s\" lacks \"%s\"\n", __FILE__,
                        __LINE__, bad[i].text, rules, err_.message, bad[i].needle);
                cf_test_failures++;
            }
            /* The output is untouched on failure. */
            CHECK_EQ_INT(d.order, 'Q');
            CHECK_EQ_INT(d.width, 77);
        }
    }
}

static void test_parse_messages(void)
{
    cf__dtype d;
    CHECK_FAILS(cf__dtype_parse("x8", CF__DTYPE_USER, &d, "/data/snap/1/ID/header", &err_),
                CF_EDTYPE, &err_, "/data/snap/1/ID/header: unreasonable dtype 'x8': unknown kind 'x'");
    CHECK_EQ_STR(err_.message, "/data/snap/1/ID/header: unreasonable dtype 'x8': unknown kind 'x'");
    CHECK_FAILS(cf__dtype_parse("<x8", CF__DTYPE_HEADER, &d, NULL, &err_), CF_EDTYPE, &err_, NULL);
    CHECK_EQ_STR(err_.message, "unreasonable dtype '<x8': unknown kind 'x'");
    CHECK_FAILS(cf__dtype_parse(NULL, CF__DTYPE_USER, &d, "ctx", &err_), CF_EDTYPE, &err_,
                "ctx: missing dtype");
    /* Control characters are shown escaped; long tokens are cut. */
    CHECK_FAILS(cf__dtype_parse("<f8\n", CF__DTYPE_HEADER, &d, NULL, &err_), CF_EDTYPE, &err_,
                "'<f8\\x0a': width '8\\x0a' is not a decimal number");
    CHECK_FAILS(cf__dtype_parse("<\x01", CF__DTYPE_USER, &d, NULL, &err_), CF_EDTYPE, &err_,
                "unknown kind '\\x01'");
    char longtok[300];
    memset(longtok, '9', sizeof longtok);
    longtok[0] = '<';
    longtok[1] = 'S';
    longtok[sizeof longtok - 1] = '\0';
    CHECK_FAILS(cf__dtype_parse(longtok, CF__DTYPE_USER, &d, NULL, &err_), CF_EDTYPE, &err_,
                "... is too large");
    CHECK(strlen(err_.message) < 200);
    /* A NULL error record is allowed. */
    CHECK_EQ_INT(cf__dtype_parse("<x8", CF__DTYPE_USER, &d, NULL, NULL), CF_EDTYPE);
}

static void test_parse_attr_rules(void)
{
    cf__dtype d;
    CHECK_OK(cf__dtype_parse("<a1", CF__DTYPE_ATTR, &d, NULL, &err_), &err_);
    CHECK_EQ_INT(d.kind, 'a');
    CHECK_EQ_INT(d.width, 1);
    CHECK_OK(cf__dtype_parse("a3", CF__DTYPE_ATTR, &d, NULL, &err_), &err_);
    CHECK_EQ_INT(d.kind, 'a');
    CHECK_EQ_INT(d.order, cf__dtype_native_order());
    /* Any kind letter and width are kept as raw bytes. */
    const char *raw[] = { "<f16", "<i3", "<U3", "|V4", ">x7", "<c32", "<S2147483647", "b2" };
    for (size_t i = 0; i < sizeof raw / sizeof *raw; i++)
        CHECK_OK(cf__dtype_parse(raw[i], CF__DTYPE_ATTR, &d, NULL, &err_), &err_);
    CHECK_OK(cf__dtype_parse(">f16", CF__DTYPE_ATTR, &d, NULL, &err_), &err_);
    CHECK_EQ_INT(d.order, '>');
    CHECK_EQ_INT(d.kind, 'f');
    CHECK_EQ_INT(d.width, 16);
    CHECK_OK(cf__dtype_parse("?", CF__DTYPE_ATTR, &d, NULL, &err_), &err_);
    CHECK_EQ_INT(d.kind, 'b');
    /* The width must still parse. */
    CHECK_FAILS(cf__dtype_parse("<M8[s]", CF__DTYPE_ATTR, &d, "name", &err_), CF_EDTYPE, &err_,
                "name: unreasonable dtype '<M8[s]': width '8[s]' is not a decimal number");
    CHECK_FAILS(cf__dtype_parse("<f", CF__DTYPE_ATTR, &d, NULL, &err_), CF_EDTYPE, &err_,
                "no width");
    CHECK_FAILS(cf__dtype_parse("<x0", CF__DTYPE_ATTR, &d, NULL, &err_), CF_EDTYPE, &err_,
                "width must be at least 1");
    CHECK_FAILS(cf__dtype_parse("<S2147483648", CF__DTYPE_ATTR, &d, NULL, &err_), CF_EDTYPE,
                &err_, "too large");
    CHECK_FAILS(cf__dtype_parse("<8", CF__DTYPE_ATTR, &d, NULL, &err_), CF_EDTYPE, &err_,
                "'8' is not a kind letter");
    CHECK_FAILS(cf__dtype_parse("", CF__DTYPE_ATTR, &d, NULL, &err_), CF_EDTYPE, &err_, "empty");
}

/* ------------------------------------------------------------------ */
/* Formatting and the public helpers                                    */
/* ------------------------------------------------------------------ */

static void test_format_round_trip(void)
{
    char out[CF_DTYPE_MAX];
    cf__dtype d = { '<', 'f', 8 };
    cf__dtype_format(&d, out);
    CHECK_EQ_STR(out, "<f8");
    d = (cf__dtype){ '>', 'i', 4 };
    cf__dtype_format(&d, out);
    CHECK_EQ_STR(out, ">i4");
    d = (cf__dtype){ '<', 'S', 12 };
    cf__dtype_format(&d, out);
    CHECK_EQ_STR(out, "<S12");
    d = (cf__dtype){ '>', 'c', 16 };
    cf__dtype_format(&d, out);
    CHECK_EQ_STR(out, ">c16");
    d = (cf__dtype){ '<', 'a', 1 };
    cf__dtype_format(&d, out);
    CHECK_EQ_STR(out, "<a1");
    d = (cf__dtype){ '>', 'S', 2147483647 };
    cf__dtype_format(&d, out);
    CHECK_EQ_STR(out, ">S2147483647");

    for (size_t i = 0; i < sizeof valid_tokens / sizeof *valid_tokens; i++) {
        for (int o = 0; o < 2; o++) {
            char text[32];
            snprintf(text, sizeof text, "%c%s", o ? '>' : '<', valid_tokens[i]);
            cf__dtype a, b;
            CHECK_OK(cf__dtype_parse(text, CF__DTYPE_HEADER, &a, NULL, &err_), &err_);
            cf__dtype_format(&a, out);
            CHECK_EQ_STR(out, text);
            CHECK_OK(cf__dtype_parse(out, CF__DTYPE_HEADER, &b, NULL, &err_), &err_);
            CHECK(cf__dtype_equal(&a, &b));
        }
    }
}

static void test_native_order_and_equal(void)
{
    union { uint32_t u; unsigned char c[4]; } probe = { 0x01020304u };
    CHECK_EQ_INT(cf__dtype_native_order(), probe.c[0] == 4 ? '<' : '>');
    cf__dtype a = { '<', 'f', 8 }, b = { '<', 'f', 8 }, c = { '>', 'f', 8 }, e = { '<', 'f', 4 },
              f = { '<', 'i', 8 };
    CHECK(cf__dtype_equal(&a, &b));
    CHECK(!cf__dtype_equal(&a, &c));
    CHECK(!cf__dtype_equal(&a, &e));
    CHECK(!cf__dtype_equal(&a, &f));
}

static void test_normalize(void)
{
    char out[CF_DTYPE_MAX], n = cf__dtype_native_order();
    char want[CF_DTYPE_MAX];
    static const struct { const char *in, *body; } cases[] = {
        { "f8", "f8" }, { "=i4", "i4" }, { "|u1", "u1" }, { "?", "b1" }, { "|b1", "b1" },
        { "a3", "S3" }, { "S7", "S7" }, { "c16", "c16" }, { "f2", "f2" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        CHECK_OK(cf_dtype_normalize(cases[i].in, out, &err_), &err_);
        snprintf(want, sizeof want, "%c%s", n, cases[i].body);
        CHECK_EQ_STR(out, want);
    }
    CHECK_OK(cf_dtype_normalize(">c16", out, &err_), &err_);
    CHECK_EQ_STR(out, ">c16");
    CHECK_OK(cf_dtype_normalize("<S2147483647", out, &err_), &err_);
    CHECK_EQ_STR(out, "<S2147483647");
    strcpy(out, "keep");
    CHECK_FAILS(cf_dtype_normalize("<U3", out, &err_), CF_EDTYPE, &err_, "unsupported kind 'U'");
    CHECK_EQ_STR(out, "keep");
    CHECK_FAILS(cf_dtype_normalize("<f16", out, NULL), CF_EDTYPE, &err_, NULL);
    CHECK_EQ_STR(out, "keep");
}

static int64_t itemsize_of(const char *dtype)
{
    int64_t w = -1;
    cf_error err;
    CHECK_OK(cf_dtype_itemsize(dtype, &w, &err), &err);
    return w;
}

static void test_itemsize(void)
{
    CHECK_EQ_INT(itemsize_of("<f8"), 8);
    CHECK_EQ_INT(itemsize_of("i1"), 1);
    CHECK_EQ_INT(itemsize_of(">c16"), 16);
    CHECK_EQ_INT(itemsize_of("c8"), 8);
    CHECK_EQ_INT(itemsize_of("f2"), 2);
    CHECK_EQ_INT(itemsize_of("?"), 1);
    CHECK_EQ_INT(itemsize_of("|S12"), 12);
    CHECK_EQ_INT(itemsize_of("a2147483647"), 2147483647);
}

/* A dtype that is not one is an error with a message, never a size: the
 * output is left alone. */
static void test_itemsize_errors(void)
{
    cf_error err;
    int64_t w = 77;
    CHECK_FAILS(cf_dtype_itemsize("<f16", &w, &err), CF_EDTYPE, &err, "f16");
    CHECK_FAILS(cf_dtype_itemsize("U3", &w, &err), CF_EDTYPE, &err, "U3");
    CHECK_FAILS(cf_dtype_itemsize("", &w, &err), CF_EDTYPE, &err, "");
    CHECK_FAILS(cf_dtype_itemsize(NULL, &w, &err), CF_EDTYPE, &err, "");
    CHECK_EQ_INT(w, 77);
    CHECK_FAILS(cf_dtype_itemsize("<f8", NULL, &err), CF_EARG, &err, "NULL itemsize");
    CHECK_EQ_INT(cf_dtype_itemsize("U3", &w, NULL), CF_EDTYPE); /* err may be NULL */
}

static const char *const numeric[] = {
    "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "f2", "f4", "f8", "c8", "c16", "b1",
};
#define NNUM (sizeof numeric / sizeof *numeric)

static void test_can_cast(void)
{
    for (size_t i = 0; i < NNUM; i++) {
        for (size_t j = 0; j < NNUM; j++) {
            char a[8], b[8];
            snprintf(a, sizeof a, "<%s", numeric[i]);
            snprintf(b, sizeof b, ">%s", numeric[j]);
            CHECK_EQ_INT(cf_dtype_can_cast(a, b), 1);
        }
        CHECK_EQ_INT(cf_dtype_can_cast(numeric[i], "S8"), 0);
        CHECK_EQ_INT(cf_dtype_can_cast("S8", numeric[i]), 0);
    }
    CHECK_EQ_INT(cf_dtype_can_cast("S3", "S8"), 1);
    CHECK_EQ_INT(cf_dtype_can_cast("a3", "|S1"), 1);
    CHECK_EQ_INT(cf_dtype_can_cast("f16", "f8"), 0);
    CHECK_EQ_INT(cf_dtype_can_cast("f8", "U3"), 0);
    CHECK_EQ_INT(cf_dtype_can_cast(NULL, "f8"), 0);

    /* Internal: raw attribute kinds convert only to themselves. */
    cf__dtype x16 = { '<', 'f', 16 }, y16 = { '>', 'f', 16 }, f8 = { '<', 'f', 8 },
              a3 = { '<', 'a', 3 }, s5 = { '>', 'S', 5 }, u3 = { '<', 'U', 3 };
    CHECK(cf__dtype_can_convert(&x16, &y16));
    CHECK(!cf__dtype_can_convert(&x16, &f8));
    CHECK(!cf__dtype_can_convert(&f8, &x16));
    CHECK(cf__dtype_can_convert(&a3, &s5));
    CHECK(!cf__dtype_can_convert(&u3, &a3));
    CHECK(cf__dtype_can_convert(&u3, &u3));
}

/* ------------------------------------------------------------------ */
/* Conversions                                                          */
/* ------------------------------------------------------------------ */

static void test_convert_int_to_int(void)
{
    CONV(int64_t, "i8", 300, int8_t, "i1", 44);
    CONV(int64_t, "i8", -129, int8_t, "i1", 127);
    CONV(int64_t, "i8", 4294967297LL, int32_t, "i4", 1);
    CONV(int64_t, "i8", INT64_MIN, int16_t, "i2", 0);
    CONV(int32_t, "i4", -1, uint64_t, "u8", UINT64_MAX);
    CONV(int8_t, "i1", -1, uint16_t, "u2", 65535);
    CONV(int8_t, "i1", -128, int64_t, "i8", -128);
    CONV(uint64_t, "u8", UINT64_MAX, int32_t, "i4", -1);
    CONV(uint64_t, "u8", UINT64_MAX, int64_t, "i8", -1);
    CONV(uint32_t, "u4", 40000, int16_t, "i2", -25536);
    CONV(uint16_t, "u2", 65535, uint8_t, "u1", 255);
    CONV(uint8_t, "u1", 200, int8_t, "i1", -56);
    CONV(uint8_t, "u1", 200, int32_t, "i4", 200);
    CONV(int16_t, "i2", -2, uint32_t, "u4", 4294967294u);
    CONV(uint32_t, "u4", 4294967295u, uint64_t, "u8", 4294967295u);
}

static void test_convert_float_to_int(void)
{
    /* In range: truncation toward zero. */
    CONV(double, "f8", 2.9, int32_t, "i4", 2);
    CONV(double, "f8", -2.9, int32_t, "i4", -2);
    CONV(double, "f8", -0.99, int64_t, "i8", 0);
    CONV(double, "f8", 127.99, int8_t, "i1", 127);
    CONV(double, "f8", -128.5, int8_t, "i1", -128);
    CONV(double, "f8", 255.9, uint8_t, "u1", 255);
    CONV(double, "f8", 2147483647.9, int32_t, "i4", 2147483647);
    CONV(double, "f8", -2147483648.9, int32_t, "i4", INT32_MIN);
    CONV(double, "f8", 4294967295.5, uint32_t, "u4", 4294967295u);
    CONV(double, "f8", 9007199254740993.0, int64_t, "i8", 9007199254740992LL);
    CONV(double, "f8", 18446744073709549568.0, uint64_t, "u8", 18446744073709549568ULL);
    CONV(double, "f8", 9223372036854775808.0, uint64_t, "u8", 9223372036854775808ULL);
    CONV(double, "f8", -9223372036854775808.0, int64_t, "i8", INT64_MIN);
    CONV(float, "f4", -3.75f, int16_t, "i2", -3);
    CONV(float, "f4", 16777217.0f, int32_t, "i4", 16777216);
    CONV(float, "f4", 1e19f, uint64_t, "u8", 9999999980506447872ULL);

    /* Out of range and NaN: the x86-64 scalar pattern (see dtype_convert.c). */
    CONV(double, "f8", 300.7, int8_t, "i1", 44);
    CONV(double, "f8", -200.5, int8_t, "i1", 56);
    CONV(double, "f8", 70000.5, int16_t, "i2", 4464);
    CONV(double, "f8", -40000.5, int16_t, "i2", 25536);
    CONV(double, "f8", -200.5, uint16_t, "u2", 65336);
    CONV(double, "f8", -1.0, uint8_t, "u1", 255);
    CONV(double, "f8", 1e10, int8_t, "i1", 0);
    CONV(double, "f8", NAN, int16_t, "i2", 0);
    CONV(double, "f8", 1e10, int32_t, "i4", INT32_MIN);
    CONV(double, "f8", 3e9, int32_t, "i4", INT32_MIN);
    CONV(double, "f8", NAN, int32_t, "i4", INT32_MIN);
    CONV(double, "f8", INFINITY, int32_t, "i4", INT32_MIN);
    CONV(double, "f8", -INFINITY, int64_t, "i8", INT64_MIN);
    CONV(double, "f8", 1e19, int64_t, "i8", INT64_MIN);
    CONV(double, "f8", NAN, int64_t, "i8", INT64_MIN);
    CONV(double, "f8", -1.0, uint32_t, "u4", 4294967295u);
    CONV(double, "f8", -1e10, uint32_t, "u4", 2884901888u);
    CONV(double, "f8", 1e10, uint32_t, "u4", 1410065408u);
    CONV(double, "f8", NAN, uint32_t, "u4", 0);
    CONV(double, "f8", -1.0, uint64_t, "u8", UINT64_MAX);
    CONV(double, "f8", -1e10, uint64_t, "u8", 18446744063709551616ULL);
    CONV(double, "f8", 1e19, uint64_t, "u8", 10000000000000000000ULL);
    CONV(double, "f8", 2e19, uint64_t, "u8", 0);
    CONV(double, "f8", -1e19, uint64_t, "u8", 9223372036854775808ULL);
    CONV(double, "f8", NAN, uint64_t, "u8", 9223372036854775808ULL);
    CONV(double, "f8", INFINITY, uint64_t, "u8", 0);
    CONV(double, "f8", -INFINITY, uint64_t, "u8", 9223372036854775808ULL);
    CONV(float, "f4", 300.75f, int8_t, "i1", 44);
    CONV(float, "f4", NAN, int32_t, "i4", INT32_MIN);
    CONV(float, "f4", 3e38f, int64_t, "i8", INT64_MIN);
    CONV(float, "f4", NAN, uint64_t, "u8", 9223372036854775808ULL);
    CONV(float, "f4", 2e19f, uint64_t, "u8", 0);
}

static void test_convert_to_float(void)
{
    /* u8 max rounds up to 2^64. */
    CONV(uint64_t, "u8", UINT64_MAX, float, "f4", 18446744073709551616.0f);
    CONV(uint64_t, "u8", UINT64_MAX, double, "f8", 18446744073709551616.0);
    CONV(int64_t, "i8", INT64_MIN, double, "f8", -9223372036854775808.0);
    CONV(int64_t, "i8", 9007199254740993LL, double, "f8", 9007199254740992.0);
    CONV(int64_t, "i8", 9007199254740995LL, double, "f8", 9007199254740996.0);
    /* int64 -> float32 rounds once: 2^60 + 2^36 + 1 is just above the
     * midpoint of 2^60 and 2^60 + 2^37; through double it would be a tie
     * and round to 2^60. */
    CONV(int64_t, "i8", 1152921573326323713LL, float, "f4", 1152921642045800448.0f);
    CONV(int32_t, "i4", 16777217, float, "f4", 16777216.0f);
    CONV(int32_t, "i4", 16777219, float, "f4", 16777220.0f);
    CONV(int8_t, "i1", -128, double, "f8", -128.0);

    /* f8 -> f4: round to nearest even, keep inf/NaN/signed zero, subnormals. */
    CONV(double, "f8", 0.1, uint32_t, "f4", 0x3dcccccdu);
    CONV(double, "f8", 1.0 + 0x1p-24, uint32_t, "f4", 0x3f800000u);
    CONV(double, "f8", 1.0 + 3 * 0x1p-24, uint32_t, "f4", 0x3f800002u);
    CONV(double, "f8", 1e-40, uint32_t, "f4", 0x000116c2u);
    CONV(double, "f8", 1e-50, uint32_t, "f4", 0);
    CONV(double, "f8", -0.0, uint32_t, "f4", 0x80000000u);
    CONV(double, "f8", 1e39, uint32_t, "f4", 0x7f800000u);
    CONV(double, "f8", -1e300, uint32_t, "f4", 0xff800000u);
    CONV(double, "f8", INFINITY, uint32_t, "f4", 0x7f800000u);
    CONV(double, "f8", 3.4028235677973366e38, uint32_t, "f4", 0x7f800000u);
    CONV(double, "f8", 3.4028235677973362e38, uint32_t, "f4", 0x7f7fffffu);
    float f = 0;
    double nan_in = -NAN;
    CHECK_OK(cf_dtype_convert(&f, 4, "f4", &nan_in, 8, "f8", 1, &err_), &err_);
    CHECK(isnan(f) && signbit(f));
    double d = 0;
    float fnan = NAN;
    CHECK_OK(cf_dtype_convert(&d, 8, "f8", &fnan, 4, "f4", 1, &err_), &err_);
    CHECK(isnan(d) && !signbit(d));
    CONV(float, "f4", 0.1f, double, "f8", (double)0.1f);
    CONV(float, "f4", 1e-45f, double, "f8", 0x1p-149);
}

/* Half bits from f8, from f4 and from i8. */
static void test_convert_to_half(void)
{
    static const struct { double v; uint16_t h; } cases[] = {
        { 1.0, 0x3c00 },          { -2.0, 0xc000 },         { 0.1, 0x2e66 },
        { 0.333333333, 0x3555 },  { 65504, 0x7bff },        { 65519.99, 0x7bff },
        { 65520, 0x7c00 },        { -65520, 0xfc00 },       { 1e6, 0x7c00 },
        { 0x1p-14, 0x0400 },      { 0x1p-14 - 0x1p-24, 0x03ff },
        { 0x1p-24, 0x0001 },      { 0x1p-25, 0x0000 },      /* tie -> even (0) */
        { 0x1.000002p-25, 0x0001 }, { 3 * 0x1p-25, 0x0002 }, /* tie 1|2 -> 2 */
        { 5 * 0x1p-25, 0x0002 },  /* tie 2|3 -> 2 */
        { 1e-10, 0x0000 },        { -1e-10, 0x8000 },       { -0.0, 0x8000 },
        { 1.0 + 0x1p-11, 0x3c00 },      /* tie -> even */
        { 1.0 + 3 * 0x1p-11, 0x3c02 },  /* tie -> even, up */
        { 1.0 + 0x1p-11 + 0x1p-20, 0x3c01 },
        { 2048 + 1, 0x6800 },     { 2048 + 3, 0x6802 },
        { INFINITY, 0x7c00 },     { -INFINITY, 0xfc00 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        uint16_t h = 0;
        double v = cases[i].v;
        CHECK_OK(cf_dtype_convert(&h, 2, "f2", &v, 8, "f8", 1, &err_), &err_);
        if (h != cases[i].h) {
            fprintf(stderr, "%s:%d: f8 %.17g -> f2 0x%04x, want 0x%04x\n", __FILE__, __LINE__, v,
                    h, cases[i].h);
            cf_test_failures++;
        }
        float fv = (float)v;
        if ((double)fv == v) { /* exactly representable: f4 gives the same */
            CHECK_OK(cf_dtype_convert(&h, 2, "f2", &fv, 4, "f4", 1, &err_), &err_);
            if (h != cases[i].h) {
                fprintf(stderr, "%s:%d: f4 %.9g -> f2 0x%04x, want 0x%04x\n", __FILE__, __LINE__,
                        (double)fv, h, cases[i].h);
                cf_test_failures++;
            }
        }
    }
    /* Double rounding: 1 + 2^-11 + 2^-40 rounds up from f8 (and from c16,
     * which numpy rounds from double too), but as f4 it is already the tie
     * 1 + 2^-11, which goes to even. */
    CONV(double, "f8", 1.0 + 0x1p-11 + 0x1p-40, uint16_t, "f2", 0x3c01);
    CONV(float, "f4", (float)(1.0 + 0x1p-11 + 0x1p-40), uint16_t, "f2", 0x3c00);
    CONV(c16_t, "c16", ((c16_t){ 1.0 + 0x1p-11 + 0x1p-40, 5.0 }), uint16_t, "f2", 0x3c01);
    CONV(c8_t, "c8", ((c8_t){ 1.5f, 5.0f }), uint16_t, "f2", 0x3e00);

    /* NaN: keeps its sign and the top of its payload, never becomes inf. */
    CONV(double, "f8", NAN, uint16_t, "f2", 0x7e00);
    CONV(double, "f8", -NAN, uint16_t, "f2", 0xfe00);
    CONV(double, "f8", f8_from(0x7ff0000000000001ULL), uint16_t, "f2", 0x7c01);
    CONV(double, "f8", f8_from(0x7ff4000000000000ULL), uint16_t, "f2", 0x7d00);
    uint32_t snan = 0x7f800001u, payload = 0xff812345u;
    uint16_t h;
    CHECK_OK(cf_dtype_convert(&h, 2, "f2", &snan, 4, "f4", 1, &err_), &err_);
    CHECK_EQ_INT(h, 0x7c01);
    CHECK_OK(cf_dtype_convert(&h, 2, "f2", &payload, 4, "f4", 1, &err_), &err_);
    CHECK_EQ_INT(h, 0xfc09);

    /* Integers go through float (exact for every value that fits a half). */
    CONV(int64_t, "i8", 2049, uint16_t, "f2", 0x6800);
    CONV(int64_t, "i8", 2051, uint16_t, "f2", 0x6802);
    CONV(int64_t, "i8", -2051, uint16_t, "f2", 0xe802);
    CONV(int32_t, "i4", 65519, uint16_t, "f2", 0x7bff);
    CONV(int32_t, "i4", 65520, uint16_t, "f2", 0x7c00);
    CONV(uint64_t, "u8", UINT64_MAX, uint16_t, "f2", 0x7c00);
    CONV(int8_t, "i1", -1, uint16_t, "f2", 0xbc00);
    CONV(uint8_t, "b1", 1, uint16_t, "f2", 0x3c00);
    CONV(uint8_t, "b1", 0, uint16_t, "f2", 0x0000);
}

static void test_convert_from_half(void)
{
    CONV(uint16_t, "f2", 0x0001, float, "f4", 0x1p-24f);
    CONV(uint16_t, "f2", 0x0001, double, "f8", 0x1p-24);
    CONV(uint16_t, "f2", 0x8001, double, "f8", -0x1p-24);
    CONV(uint16_t, "f2", 0x03ff, double, "f8", 6.097555160522461e-05);
    CONV(uint16_t, "f2", 0x0200, float, "f4", 0x1p-15f);
    CONV(uint16_t, "f2", 0x0400, float, "f4", 0x1p-14f);
    CONV(uint16_t, "f2", 0x3555, double, "f8", 0.333251953125);
    CONV(uint16_t, "f2", 0x7bff, float, "f4", 65504.0f);
    CONV(uint16_t, "f2", 0xc000, double, "f8", -2.0);
    CONV(uint16_t, "f2", 0x8000, uint32_t, "f4", 0x80000000u);
    CONV(uint16_t, "f2", 0x7c00, double, "f8", INFINITY);
    CONV(uint16_t, "f2", 0xfc00, float, "f4", -INFINITY);
    CONV(uint16_t, "f2", 0x7e00, uint32_t, "f4", 0x7fc00000u);
    CONV(uint16_t, "f2", 0xfe00, uint64_t, "f8", 0xfff8000000000000ULL);
    CONV(uint16_t, "f2", 0x7c01, uint32_t, "f4", 0x7f802000u);
    CONV(uint16_t, "f2", 0x7d23, uint64_t, "f8", 0x7ff48c0000000000ULL);
    /* To integers: through float, truncating. */
    CONV(uint16_t, "f2", 0xbe00, int16_t, "i2", -1);      /* -1.5 */
    CONV(uint16_t, "f2", 0x7bff, int32_t, "i4", 65504);
    CONV(uint16_t, "f2", 0x7bff, int16_t, "i2", -32);     /* wraps */
    CONV(uint16_t, "f2", 0xfbff, uint32_t, "u4", 4294901792u);
    CONV(uint16_t, "f2", 0x7c00, int32_t, "i4", INT32_MIN);
    CONV(uint16_t, "f2", 0x7e00, uint64_t, "u8", 9223372036854775808ULL);
    CONV(uint16_t, "f2", 0xfc00, uint32_t, "u4", 0);
    CONV(uint16_t, "f2", 0x3e00, c8_t, "c8", ((c8_t){ 1.5f, 0.0f }));
    CONV(uint16_t, "f2", 0xc000, c16_t, "c16", ((c16_t){ -2.0, 0.0 }));
    CONV(uint16_t, "f2", 0x0000, uint8_t, "b1", 0);
    CONV(uint16_t, "f2", 0x8000, uint8_t, "b1", 0);
    CONV(uint16_t, "f2", 0x0001, uint8_t, "b1", 1);
    CONV(uint16_t, "f2", 0x7e00, uint8_t, "b1", 1);

    /* Every half survives f2 -> f4 -> f2 and f2 -> f8 -> f2 exactly. */
    static uint16_t hs[65536], back[65536];
    static float fs[65536];
    static double ds[65536];
    for (uint32_t i = 0; i < 65536; i++) hs[i] = (uint16_t)i;
    CHECK_OK(cf_dtype_convert(fs, 4, "f4", hs, 2, "f2", 65536, &err_), &err_);
    CHECK_OK(cf_dtype_convert(back, 2, "f2", fs, 4, "f4", 65536, &err_), &err_);
    CHECK_EQ_MEM(hs, back, sizeof hs);
    CHECK_OK(cf_dtype_convert(ds, 8, "f8", hs, 2, "f2", 65536, &err_), &err_);
    memset(back, 0, sizeof back);
    CHECK_OK(cf_dtype_convert(back, 2, "f2", ds, 8, "f8", 65536, &err_), &err_);
    CHECK_EQ_MEM(hs, back, sizeof hs);
    for (uint32_t i = 0; i < 65536; i++) {
        if ((i & 0x7c00u) == 0x7c00u) continue;
        if ((double)fs[i] != ds[i]) {
            fprintf(stderr, "%s:%d: half 0x%04x: f4 %g, f8 %g\n", __FILE__, __LINE__, i,
                    (double)fs[i], ds[i]);
            cf_test_failures++;
            break;
        }
    }
    /* Halfway between two neighbouring halves rounds to the even one. */
    int bad = 0;
    for (uint32_t i = 0x0000; i < 0x7bff && !bad; i++) {
        double mid = (ds[i] + ds[i + 1]) / 2;
        uint16_t got;
        CHECK_OK(cf_dtype_convert(&got, 2, "f2", &mid, 8, "f8", 1, &err_), &err_);
        uint16_t want = (uint16_t)((i & 1u) ? i + 1 : i);
        if (got != want) {
            fprintf(stderr, "%s:%d: midpoint after 0x%04x -> 0x%04x, want 0x%04x\n", __FILE__,
                    __LINE__, i, got, want);
            cf_test_failures++;
            bad = 1;
        }
    }
}

static void test_convert_complex(void)
{
    c16_t z = { 1.5, -2.5 };
    CONV(c16_t, "c16", z, double, "f8", 1.5);
    CONV(c16_t, "c16", z, float, "f4", 1.5f);
    CONV(c16_t, "c16", z, int32_t, "i4", 1);
    CONV(c16_t, "c16", ((c16_t){ -2.5, 7 }), int8_t, "i1", -2);
    CONV(c16_t, "c16", ((c16_t){ 3e9, 1 }), uint32_t, "u4", 3000000000u);
    CONV(c16_t, "c16", ((c16_t){ NAN, 0 }), int32_t, "i4", INT32_MIN);
    CONV(c16_t, "c16", z, c8_t, "c8", ((c8_t){ 1.5f, -2.5f }));
    CONV(c16_t, "c16", ((c16_t){ 0.1, 1e300 }), c8_t, "c8", ((c8_t){ 0.1f, INFINITY }));
    CONV(c8_t, "c8", ((c8_t){ 0.1f, -3.0f }), c16_t, "c16", ((c16_t){ (double)0.1f, -3.0 }));
    CONV(c16_t, "c16", ((c16_t){ 0, 0 }), uint8_t, "b1", 0);
    CONV(c16_t, "c16", ((c16_t){ -0.0, -0.0 }), uint8_t, "b1", 0);
    CONV(c16_t, "c16", ((c16_t){ 0, 1 }), uint8_t, "b1", 1);
    CONV(c16_t, "c16", ((c16_t){ 2, 0 }), uint8_t, "b1", 1);
    CONV(c16_t, "c16", ((c16_t){ 0, NAN }), uint8_t, "b1", 1);
    CONV(c8_t, "c8", ((c8_t){ 0, 1e-45f }), uint8_t, "b1", 1);
    CONV(double, "f8", 3.0, c16_t, "c16", ((c16_t){ 3.0, 0.0 }));
    CONV(double, "f8", 0.1, c8_t, "c8", ((c8_t){ 0.1f, 0.0f }));
    CONV(float, "f4", -0.5f, c16_t, "c16", ((c16_t){ -0.5, 0.0 }));
    CONV(int64_t, "i8", 1152921573326323713LL, c8_t, "c8",
         ((c8_t){ 1152921642045800448.0f, 0.0f }));
    CONV(int32_t, "i4", -7, c16_t, "c16", ((c16_t){ -7.0, 0.0 }));
    CONV(uint64_t, "u8", UINT64_MAX, c16_t, "c16", ((c16_t){ 18446744073709551616.0, 0.0 }));
    CONV(uint8_t, "b1", 1, c8_t, "c8", ((c8_t){ 1.0f, 0.0f }));
}

static void test_convert_bool(void)
{
    unsigned char b[4] = { 0, 1, 2, 255 };
    int32_t i4[4];
    double f8[4];
    uint16_t f2[4];
    CHECK_OK(cf_dtype_convert(i4, 4, "i4", b, 1, "b1", 4, &err_), &err_);
    CHECK(i4[0] == 0 && i4[1] == 1 && i4[2] == 1 && i4[3] == 1);
    CHECK_OK(cf_dtype_convert(f8, 8, "f8", b, 1, "?", 4, &err_), &err_);
    CHECK(f8[0] == 0.0 && f8[1] == 1.0 && f8[2] == 1.0 && f8[3] == 1.0);
    CHECK_OK(cf_dtype_convert(f2, 2, ">f2", b, 1, "b1", 4, &err_), &err_);
    uint16_t one_be = 0x3c00;
    to_order(&one_be, 2, 2, '>');
    CHECK(f2[0] == 0 && f2[1] == one_be && f2[3] == one_be);
    /* b1 -> b1 is a plain copy of the bytes. */
    unsigned char copy[4];
    CHECK_OK(cf_dtype_convert(copy, 1, "b1", b, 1, "|b1", 4, &err_), &err_);
    CHECK_EQ_MEM(copy, b, 4);

    CONV(int32_t, "i4", 0, uint8_t, "b1", 0);
    CONV(int32_t, "i4", -5, uint8_t, "b1", 1);
    CONV(uint64_t, "u8", 1ULL << 63, uint8_t, "b1", 1);
    CONV(int8_t, "i1", 256 - 256, uint8_t, "b1", 0);
    CONV(uint16_t, "u2", 256, uint8_t, "b1", 1); /* not truncated to a zero byte */
    CONV(double, "f8", 0.0, uint8_t, "b1", 0);
    CONV(double, "f8", -0.0, uint8_t, "b1", 0);
    CONV(double, "f8", 1e-300, uint8_t, "b1", 1);
    CONV(double, "f8", NAN, uint8_t, "b1", 1);
    CONV(float, "f4", -INFINITY, uint8_t, "b1", 1);
    CONV(uint8_t, "b1", 1, uint64_t, "u8", 1);
    CONV(uint8_t, "b1", 7, int8_t, "i1", 1);
    CONV(uint8_t, "b1", 1, float, "f4", 1.0f);
}

/* One, in every numeric type (native order). */
static size_t one_of(size_t t, unsigned char out[16])
{
    memset(out, 0, 16);
    switch (t) {
    case 0: case 4: case 13: out[0] = 1; return 1;                             /* i1 u1 b1 */
    case 1: case 5: { uint16_t v = 1; memcpy(out, &v, 2); return 2; }           /* i2 u2 */
    case 2: case 6: { uint32_t v = 1; memcpy(out, &v, 4); return 4; }           /* i4 u4 */
    case 3: case 7: { uint64_t v = 1; memcpy(out, &v, 8); return 8; }           /* i8 u8 */
    case 8: { uint16_t v = 0x3c00; memcpy(out, &v, 2); return 2; }              /* f2 */
    case 9: { float v = 1; memcpy(out, &v, 4); return 4; }                      /* f4 */
    case 10: { double v = 1; memcpy(out, &v, 8); return 8; }                    /* f8 */
    case 11: { c8_t v = { 1, 0 }; memcpy(out, &v, 8); return 8; }              /* c8 */
    default: { c16_t v = { 1, 0 }; memcpy(out, &v, 16); return 16; }           /* c16 */
    }
}

/* Every pair, every byte order, with the values 0 and 1 and strides that
 * skip elements: catches a table entry pointing at the wrong loop. */
static void test_convert_every_pair(void)
{
    static const char orders[2] = { '<', '>' };
    for (size_t s = 0; s < NNUM; s++) {
        for (size_t t = 0; t < NNUM; t++) {
            for (int so = 0; so < 2; so++) {
                for (int to = 0; to < 2; to++) {
                    unsigned char one_s[16], one_t[16], src[5][32], dst[5][32], want[5][32];
                    size_t sw = one_of(s, one_s), tw = one_of(t, one_t);
                    size_t sunit = s == 11 || s == 12 ? sw / 2 : sw;
                    size_t tunit = t == 11 || t == 12 ? tw / 2 : tw;
                    to_order(one_s, sw, sunit, orders[so]);
                    to_order(one_t, tw, tunit, orders[to]);
                    memset(src, 0, sizeof src);
                    memset(dst, 0xee, sizeof dst);
                    memset(want, 0xee, sizeof want);
                    for (int k = 0; k < 5; k++) {
                        if (k % 2) memcpy(src[k], one_s, sw);
                        memset(want[k], 0, tw);
                        if (k % 2) memcpy(want[k], one_t, tw);
                    }
                    char from[8], to_[8];
                    snprintf(from, sizeof from, "%c%s", orders[so], numeric[s]);
                    snprintf(to_, sizeof to_, "%c%s", orders[to], numeric[t]);
                    CHECK_OK(cf_dtype_convert(dst, 32, to_, src, 32, from, 5, &err_), &err_);
                    check_bytes(__LINE__, from, to_, "0/1", dst, want, sizeof dst);
                }
            }
        }
    }
}

static void test_convert_big_endian(void)
{
    /* >i4 -> <i8 */
    unsigned char be_i4[4] = { 0xff, 0xff, 0xfe, 0xd4 }; /* -300 */
    unsigned char le_i8[8];
    unsigned char want_i8[8] = { 0xd4, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
    CHECK_OK(cf_dtype_convert(le_i8, 8, "<i8", be_i4, 4, ">i4", 1, &err_), &err_);
    CHECK_EQ_MEM(le_i8, want_i8, 8);
    /* <f8 1.5 -> >f4 */
    unsigned char le_f8[8] = { 0, 0, 0, 0, 0, 0, 0xf8, 0x3f };
    unsigned char be_f4[4], want_f4[4] = { 0x3f, 0xc0, 0, 0 };
    CHECK_OK(cf_dtype_convert(be_f4, 4, ">f4", le_f8, 8, "<f8", 1, &err_), &err_);
    CHECK_EQ_MEM(be_f4, want_f4, 4);
    /* >f8 -> >f4 */
    unsigned char be_f8[8] = { 0x3f, 0xf8, 0, 0, 0, 0, 0, 0 };
    memset(be_f4, 0, 4);
    CHECK_OK(cf_dtype_convert(be_f4, 4, ">f4", be_f8, 8, ">f8", 1, &err_), &err_);
    CHECK_EQ_MEM(be_f4, want_f4, 4);
    /* Same kind, other order: a swap. */
    unsigned char back[8];
    CHECK_OK(cf_dtype_convert(back, 8, "<f8", be_f8, 8, ">f8", 1, &err_), &err_);
    CHECK_EQ_MEM(back, le_f8, 8);
    unsigned char be_i2[2] = { 0x12, 0x34 }, le_i2[2], want_i2[2] = { 0x34, 0x12 };
    CHECK_OK(cf_dtype_convert(le_i2, 2, "<i2", be_i2, 2, ">i2", 1, &err_), &err_);
    CHECK_EQ_MEM(le_i2, want_i2, 2);
    CHECK_OK(cf_dtype_convert(le_i2, 2, ">i2", be_i2, 2, ">i2", 1, &err_), &err_);
    CHECK_EQ_MEM(le_i2, be_i2, 2);
    /* >u8 -> <f2, >f2 -> >f8 */
    unsigned char be_u8[8] = { 0, 0, 0, 0, 0, 0, 0x08, 0x03 }; /* 2051 */
    unsigned char le_f2[2], want_f2[2] = { 0x02, 0x68 };
    CHECK_OK(cf_dtype_convert(le_f2, 2, "<f2", be_u8, 8, ">u8", 1, &err_), &err_);
    CHECK_EQ_MEM(le_f2, want_f2, 2);
    unsigned char be_f2[2] = { 0xbe, 0x00 }, out8[8], want8[8] = { 0xbf, 0xf8, 0, 0, 0, 0, 0, 0 };
    CHECK_OK(cf_dtype_convert(out8, 8, ">f8", be_f2, 2, ">f2", 1, &err_), &err_);
    CHECK_EQ_MEM(out8, want8, 8);
    /* 1-byte kinds have no order: '>i1' and '<u1' copy/convert as is. */
    unsigned char b1 = 0xff, b2 = 0;
    CHECK_OK(cf_dtype_convert(&b2, 1, "<i1", &b1, 1, ">i1", 1, &err_), &err_);
    CHECK_EQ_INT(b2, 0xff);
    int16_t i2 = 0;
    CHECK_OK(cf_dtype_convert(&i2, 2, "=i2", &b1, 1, ">i1", 1, &err_), &err_);
    CHECK_EQ_INT(i2, -1);
}

static void test_convert_complex_big_endian_layout(void)
{
    /* numpy's >c16: real then imaginary, each big-endian. */
    c16_t z = { 1.0, 2.0 };
    unsigned char be[16], want[16];
    double re = 1.0, im = 2.0;
    memcpy(want, &re, 8);
    memcpy(want + 8, &im, 8);
    to_order(want, 16, 8, '>');
    CHECK(want[0] == 0x3f && want[1] == 0xf0 && want[8] == 0x40 && want[9] == 0x00);
    CHECK_OK(cf_dtype_convert(be, 16, ">c16", &z, 16, "=c16", 1, &err_), &err_);
    CHECK_EQ_MEM(be, want, 16);
    /* and back, to either order and width */
    c16_t back;
    CHECK_OK(cf_dtype_convert(&back, 16, "=c16", be, 16, ">c16", 1, &err_), &err_);
    CHECK(back.re == 1.0 && back.im == 2.0);
    c8_t small;
    CHECK_OK(cf_dtype_convert(&small, 8, "=c8", be, 16, ">c16", 1, &err_), &err_);
    CHECK(small.re == 1.0f && small.im == 2.0f);
    unsigned char be8[8], want8[8] = { 0x3f, 0x80, 0, 0, 0x40, 0, 0, 0 };
    CHECK_OK(cf_dtype_convert(be8, 8, ">c8", be, 16, ">c16", 1, &err_), &err_);
    CHECK_EQ_MEM(be8, want8, 8);
    CHECK_OK(cf_dtype_convert(be8, 8, ">c8", &z, 16, "c16", 1, &err_), &err_);
    CHECK_EQ_MEM(be8, want8, 8);
    double r = 0;
    CHECK_OK(cf_dtype_convert(&r, 8, "f8", be8, 8, ">c8", 1, &err_), &err_);
    CHECK(r == 1.0);
    /* >c8 -> <c8: each part swapped, parts not exchanged. */
    unsigned char le8[8], want_le8[8] = { 0, 0, 0x80, 0x3f, 0, 0, 0, 0x40 };
    CHECK_OK(cf_dtype_convert(le8, 8, "<c8", be8, 8, ">c8", 1, &err_), &err_);
    CHECK_EQ_MEM(le8, want_le8, 8);
    /* >f4 -> >c16: real part set, imaginary zero */
    unsigned char be_f4[4] = { 0xc0, 0x20, 0, 0 }; /* -2.5 */
    unsigned char out[16], want_c[16] = { 0xc0, 0x04, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 };
    CHECK_OK(cf_dtype_convert(out, 16, ">c16", be_f4, 4, ">f4", 1, &err_), &err_);
    CHECK_EQ_MEM(out, want_c, 16);
}

static void test_strides(void)
{
    /* Negative source stride reverses; gaps in the destination stay. */
    int32_t src[6] = { 1, -2, 3, -4, 5, -6 };
    int64_t dst[12];
    for (int i = 0; i < 12; i++) dst[i] = 99;
    CHECK_OK(cf_dtype_convert(dst, 16, "i8", src + 5, -4, "i4", 6, &err_), &err_);
    for (int i = 0; i < 6; i++) {
        CHECK_EQ_INT(dst[2 * i], src[5 - i]);
        CHECK_EQ_INT(dst[2 * i + 1], 99);
    }
    /* Negative destination stride. */
    double dd[6];
    CHECK_OK(cf_dtype_convert(dd + 5, -8, "f8", src, 4, "i4", 6, &err_), &err_);
    for (int i = 0; i < 6; i++) CHECK(dd[5 - i] == (double)src[i]);
    /* Zero source stride broadcasts one value. */
    float f = 2.5f;
    double bc[5];
    CHECK_OK(cf_dtype_convert(bc, 8, "f8", &f, 0, "f4", 5, &err_), &err_);
    for (int i = 0; i < 5; i++) CHECK(bc[i] == 2.5);
    /* Identical dtypes, strided: copy. */
    int32_t picked[3];
    CHECK_OK(cf_dtype_convert(picked, 4, "i4", src, 8, "=i4", 3, &err_), &err_);
    CHECK(picked[0] == 1 && picked[1] == 3 && picked[2] == 5);
    CHECK_OK(cf_dtype_convert(picked, -4, "i4", src, 8, "=i4", 1, &err_), &err_);
    /* Many elements through the swapping path, crossing block boundaries,
     * with negative strides on both sides. */
    enum { N = 1000 };
    static unsigned char be[N][8];
    static float out[2 * N];
    for (int i = 0; i < N; i++) {
        double v = i * 0.5 - 100;
        memcpy(be[i], &v, 8);
        to_order(be[i], 8, 8, '>');
    }
    for (int i = 0; i < 2 * N; i++) out[i] = -1;
    CHECK_OK(cf_dtype_convert(&out[2 * N - 1], -8, "f4", be[N - 1], -8, ">f8", N, &err_), &err_);
    int bad = 0;
    for (int i = 0; i < N; i++) {
        /* element k of the run: source be[N-1-k], destination out[2N-1-2k] */
        float want = (float)((N - 1 - i) * 0.5 - 100);
        if (out[2 * N - 1 - 2 * i] != want || out[2 * N - 2 - 2 * i] != -1) bad++;
    }
    CHECK_EQ_INT(bad, 0);
    /* And into a big-endian destination, strided. */
    static unsigned char be4[2 * N][4];
    static int16_t small[N];
    for (int i = 0; i < N; i++) small[i] = (int16_t)(i * 37 - 5000);
    memset(be4, 0x77, sizeof be4);
    CHECK_OK(cf_dtype_convert(be4, 8, ">f4", small, 2, "i2", N, &err_), &err_);
    bad = 0;
    for (int i = 0; i < N; i++) {
        float v = (float)small[i];
        unsigned char w[4];
        memcpy(w, &v, 4);
        to_order(w, 4, 4, '>');
        if (memcmp(be4[2 * i], w, 4) != 0 || be4[2 * i + 1][0] != 0x77) bad++;
    }
    CHECK_EQ_INT(bad, 0);
    /* In place, same width and stride: i8 -> f8, then swap. */
    int64_t inplace[4] = { -3, 0, 7, 1LL << 40 };
    CHECK_OK(cf_dtype_convert(inplace, 8, "f8", inplace, 8, "i8", 4, &err_), &err_);
    double as_d[4];
    memcpy(as_d, inplace, sizeof as_d);
    CHECK(as_d[0] == -3.0 && as_d[1] == 0.0 && as_d[2] == 7.0 && as_d[3] == 1099511627776.0);
    CHECK_OK(cf_dtype_convert(inplace, 8, ">f8", inplace, 8, "=f8", 4, &err_), &err_);
    double v;
    memcpy(&v, &inplace[2], 8);
    to_order(&v, 8, 8, '>');
    CHECK(v == 7.0);
}

static void test_bytes(void)
{
    const char src[3][5] = { { 'h', 'e', 'l', 'l', 'o' }, { 'a', 'b', 0, 0, 0 }, { 'x', 0, 'y', 'z', 0 } };
    char dst3[3][3], dst7[3][7], dst5[3][5];
    CHECK_OK(cf_dtype_convert(dst3, 3, "S3", src, 5, "S5", 3, &err_), &err_);
    CHECK_EQ_MEM(dst3[0], "hel", 3);
    CHECK_EQ_MEM(dst3[1], "ab\0", 3);
    CHECK_EQ_MEM(dst3[2], "x\0y", 3);
    memset(dst7, 'Q', sizeof dst7);
    CHECK_OK(cf_dtype_convert(dst7, 7, "|S7", src, 5, "a5", 3, &err_), &err_);
    CHECK_EQ_MEM(dst7[0], "hello\0\0", 7);
    CHECK_EQ_MEM(dst7[2], "x\0yz\0\0\0", 7);
    CHECK_OK(cf_dtype_convert(dst5, 5, ">S5", src, 5, "<S5", 3, &err_), &err_);
    CHECK_EQ_MEM(dst5, src, sizeof src);
    /* reversed, strided */
    char rev[3][5];
    CHECK_OK(cf_dtype_convert(rev, 5, "S5", src[2], -5, "S5", 3, &err_), &err_);
    CHECK_EQ_MEM(rev[0], src[2], 5);
    CHECK_EQ_MEM(rev[2], src[0], 5);
    char one[2][2];
    memset(one, 'Q', sizeof one);
    CHECK_OK(cf_dtype_convert(one, 2, "S2", src, 5, "S1", 2, &err_), &err_);
    CHECK_EQ_MEM(one[0], "h\0", 2);
    CHECK_EQ_MEM(one[1], "a\0", 2);

    /* Numbers and byte strings do not mix. */
    double d = 1;
    CHECK_FAILS(cf_dtype_convert(dst5, 5, "S5", &d, 8, "f8", 1, &err_), CF_ECAST, &err_,
                "cannot convert '");
    CHECK(strstr(err_.message, "f8") && strstr(err_.message, "S5"));
    CHECK_FAILS(cf_dtype_convert(&d, 8, "<f8", src, 5, "|S5", 1, &err_), CF_ECAST, &err_, "S5' to '<f8'");
}

static void test_convert_errors(void)
{
    double d = 0;
    CHECK_FAILS(cf_dtype_convert(&d, 8, "f8", &d, 8, "x8", 1, &err_), CF_EDTYPE, &err_,
                "source dtype: unreasonable dtype 'x8': unknown kind 'x'");
    CHECK_FAILS(cf_dtype_convert(&d, 8, "f16", &d, 8, "f8", 1, &err_), CF_EDTYPE, &err_,
                "destination dtype: unreasonable dtype 'f16'");
    CHECK_FAILS(cf_dtype_convert(&d, 8, "f8", &d, 8, "f8", -1, &err_), CF_EARG, &err_,
                "negative count -1");
    CHECK_FAILS(cf_dtype_convert(NULL, 8, "f8", &d, 8, "f8", 1, &err_), CF_EARG, &err_, "NULL");
    CHECK_OK(cf_dtype_convert(NULL, 8, "f8", NULL, 8, "i4", 0, &err_), &err_);
    CHECK_EQ_INT(cf_dtype_convert(&d, 8, "f8", &d, 8, "U1", 1, NULL), CF_EDTYPE);
}

static void test_swap_inplace(void)
{
    unsigned char b[24];
    for (int i = 0; i < 24; i++) b[i] = (unsigned char)i;
    cf__swap_inplace(b, 1, 24);
    for (int i = 0; i < 24; i++) CHECK_EQ_INT(b[i], i);
    cf__swap_inplace(b, 2, 3);
    CHECK(b[0] == 1 && b[1] == 0 && b[4] == 5 && b[5] == 4 && b[6] == 6);
    cf__swap_inplace(b, 2, 3);
    cf__swap_inplace(b, 4, 6);
    CHECK(b[0] == 3 && b[3] == 0 && b[20] == 23 && b[23] == 20);
    cf__swap_inplace(b, 4, 6);
    cf__swap_inplace(b, 8, 3);
    CHECK(b[0] == 7 && b[7] == 0 && b[16] == 23);
    cf__swap_inplace(b, 8, 3);
    cf__swap_inplace(b, 3, 8);
    CHECK(b[0] == 2 && b[1] == 1 && b[2] == 0 && b[21] == 23 && b[23] == 21);
    cf__swap_inplace(b, 3, 8);
    cf__swap_inplace(b, 12, 2);
    CHECK(b[0] == 11 && b[11] == 0 && b[12] == 23);
    cf__swap_inplace(b, 12, 2);
    for (int i = 0; i < 24; i++) CHECK_EQ_INT(b[i], i);
    /* complex: callers pass width/2 and 2n */
    c16_t z = { 1.0, -2.0 };
    cf__swap_inplace(&z, 8, 2);
    unsigned char want[16];
    c16_t w = { 1.0, -2.0 };
    memcpy(want, &w, 16);
    reverse(want, 8);
    reverse(want + 8, 8);
    CHECK_EQ_MEM(&z, want, 16);
}

static void test_raw_kinds(void)
{
    /* Attribute kinds colfile does not interpret: copy or swap whole. */
    cf__dtype le = { '<', 'f', 16 }, be = { '>', 'f', 16 };
    unsigned char src[2][16], dst[2][16];
    for (int i = 0; i < 32; i++) src[i / 16][i % 16] = (unsigned char)i;
    cf__convert(dst, 16, &be, src, 16, &le, 2);
    for (int i = 0; i < 16; i++) {
        CHECK_EQ_INT(dst[0][i], 15 - i);
        CHECK_EQ_INT(dst[1][i], 31 - i);
    }
    cf__convert(dst, 16, &le, src, 16, &le, 2);
    CHECK_EQ_MEM(dst, src, 32);
    cf__dtype a3 = { '<', 'a', 3 }, s2 = { '>', 'S', 2 };
    memset(dst, 9, sizeof dst);
    cf__convert(dst, 2, &s2, src, 3, &a3, 2);
    CHECK(dst[0][0] == 0 && dst[0][1] == 1 && dst[0][2] == 3 && dst[0][3] == 4 && dst[0][4] == 9);
    /* odd-width complex-like raw kinds swap whole */
    cf__dtype x3 = { '<', 'x', 3 }, y3 = { '>', 'x', 3 };
    unsigned char r[3] = { 1, 2, 3 }, o[3];
    cf__convert(o, 3, &y3, r, 3, &x3, 1);
    CHECK(o[0] == 3 && o[1] == 2 && o[2] == 1);
}

CF_TESTS(CF_TEST(test_parse_every_valid_kind), CF_TEST(test_string_width_limits),
         CF_TEST(test_parse_header_needs_order),
         CF_TEST(test_parse_user_aliases),
         CF_TEST(test_parse_rejects),
         CF_TEST(test_parse_messages),
         CF_TEST(test_parse_attr_rules),
         CF_TEST(test_format_round_trip),
         CF_TEST(test_native_order_and_equal),
         CF_TEST(test_normalize),
         CF_TEST(test_itemsize),
         CF_TEST(test_itemsize_errors),
         CF_TEST(test_can_cast),
         CF_TEST(test_convert_int_to_int),
         CF_TEST(test_convert_float_to_int),
         CF_TEST(test_convert_to_float),
         CF_TEST(test_convert_to_half),
         CF_TEST(test_convert_from_half),
         CF_TEST(test_convert_complex),
         CF_TEST(test_convert_bool),
         CF_TEST(test_convert_every_pair),
         CF_TEST(test_convert_big_endian),
         CF_TEST(test_convert_complex_big_endian_layout),
         CF_TEST(test_strides),
         CF_TEST(test_bytes),
         CF_TEST(test_convert_errors),
         CF_TEST(test_swap_inplace),
         CF_TEST(test_raw_kinds))
