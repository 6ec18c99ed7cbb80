/* test_header.c - header and extension-file parsing and formatting, names. */
#include "harness.h"

#include "ext.h"
#include "header.h"

static int parse(const char *text, cf__header *h, cf_error *err)
{
    return cf__header_parse(h, text, strlen(text), "/x/header", err);
}

static void test_format_exact_bytes(void)
{
    cf_error err;
    cf__header h;
    CHECK_OK(parse("DTYPE: <i4\nNMEMB: 1\nNFILE: 7\n000000: 0 : 0 : 0\n000001: 0 : 0 : 0\n"
                   "000002: 1 : 717 : 717\n000003: 0 : 0 : 0\n000004: 1 : 764 : 764\n"
                   "000005: 0 : 0 : 0\n000006: 1 : 404 : 404\n", &h, &err), &err);
    CHECK_EQ_INT(h.nfile, 7);
    CHECK_EQ_INT(cf__header_size(&h), 3);
    CHECK_EQ_INT(h.sums[4], 764);
    char *text;
    size_t len;
    CHECK_OK(cf__header_format(&h, &text, &len, "/x/header", &err), &err);
    CHECK_EQ_STR(text, "DTYPE: <i4\nNMEMB: 1\nNFILE: 7\n000000: 0 : 0 : 0\n000001: 0 : 0 : 0\n"
                       "000002: 1 : 717 : 717\n000003: 0 : 0 : 0\n000004: 1 : 764 : 764\n"
                       "000005: 0 : 0 : 0\n000006: 1 : 404 : 404\n");
    free(text);
    cf__header_free(&h);
    /* Folded sum and hex ids past 9. */
    CHECK_OK(parse("DTYPE: <u1\nNMEMB: 1\nNFILE: 12\n", &h, &err) == CF_EFORMAT ? 0 : -1, &err);
    CHECK_OK(cf__header_alloc(&h, 12, "x", &err), &err);
    h.dtype.order = '<'; h.dtype.kind = 'u'; h.dtype.width = 1; h.nmemb = 1;
    h.rows[10] = 735; h.sums[10] = 96585;
    CHECK_OK(cf__header_format(&h, &text, &len, "x", &err), &err);
    CHECK(strstr(text, "\n00000A: 735 : 96585 : 31050\n00000B: 0 : 0 : 0\n") != NULL);
    free(text);
    cf__header_free(&h);
}

static void test_reader_tolerance(void)
{
    cf_error err;
    cf__header h;
    /* No space after DTYPE:, tabs, CR, lowercase hex, lines out of order,
     * trailing junk lines, missing final LF. */
    CHECK_OK(parse("  DTYPE:<f8\r\nNMEMB:\t3\r\nNFILE: 2\r\n1: 5 : 10 : 10\r\n0:2:4:4\r\nextra stuff", &h, &err), &err);
    CHECK_EQ_INT(h.nmemb, 3);
    CHECK_EQ_INT(h.rows[0], 2);
    CHECK_EQ_INT(h.rows[1], 5);
    CHECK_EQ_INT(h.sums[1], 10);
    cf__header_free(&h);
    CHECK_OK(parse("DTYPE: >c16\nNMEMB: 1\nNFILE: 1\n000000: 1 : 1 : 1", &h, &err), &err);
    CHECK_EQ_INT(h.dtype.order, '>');
    cf__header_free(&h);
    /* A 7-digit id, even with a leading zero, is more than the original's
     * "%6X" reads: invalid, as there. */
    CHECK_FAILS(parse("DTYPE: <f8\nNMEMB: 1\nNFILE: 1\n0000000: 1 : 1 : 1", &h, &err), CF_EFORMAT, &err, "at most 6 digits");
    /* Zero blobs. */
    CHECK_OK(parse("DTYPE: <f4\nNMEMB: 1\nNFILE: 0\n", &h, &err), &err);
    CHECK_EQ_INT(h.nfile, 0);
    CHECK_EQ_INT(cf__header_size(&h), 0);
    cf__header_free(&h);
}

static void test_reader_rejects(void)
{
    cf_error err;
    cf__header h;
    CHECK_FAILS(parse("", &h, &err), CF_EFORMAT, &err, "empty header");
    CHECK_FAILS(parse("dtype: <f8\n", &h, &err), CF_EFORMAT, &err, "/x/header:1: expected 'DTYPE:'");
    CHECK_FAILS(parse("DTYPE: f8\nNMEMB: 1\nNFILE: 0\n", &h, &err), CF_EDTYPE, &err, "/x/header:1");
    CHECK_FAILS(parse("DTYPE: <U3\nNMEMB: 1\nNFILE: 0\n", &h, &err), CF_EDTYPE, &err, NULL);
    CHECK_FAILS(parse("DTYPE: <f8\nNMEMB: -1\nNFILE: 0\n", &h, &err), CF_EFORMAT, &err, "NMEMB");
    CHECK_FAILS(parse("DTYPE: <f8\nNMEMB: 1\nNFILE: -1\n", &h, &err), CF_EFORMAT, &err, "out of range");
    CHECK_FAILS(parse("DTYPE: <f8\nNMEMB: 1\nNFILE: 2\n0: 1 : 0 : 0\n", &h, &err), CF_EFORMAT, &err,
                "only 1 blob lines");
    CHECK_FAILS(parse("DTYPE: <f8\nNMEMB: 1\nNFILE: 1\n1: 1 : 0 : 0\n", &h, &err), CF_EFORMAT, &err,
                "/x/header:4: blob id 1 is not below NFILE 1");
    CHECK_FAILS(parse("DTYPE: <f8\nNMEMB: 1\nNFILE: 1\n0 : 1 : 0 : 0\n", &h, &err), CF_EFORMAT, &err, ":4:");
    CHECK_FAILS(parse("DTYPE: <f8\nNMEMB: 1\nNFILE: 1\n0: 1 : 4294967296 : 0\n", &h, &err), CF_EFORMAT, &err,
                "out of range");
    CHECK_FAILS(parse("DTYPE: <f8\nNMEMB: 1\nNFILE: 2000000000\n0: 1 : 0 : 0\n", &h, &err), CF_EFORMAT, &err,
                "out of range (0..16777216)");
    CHECK_FAILS(parse("DTYPE: <f8\nNMEMB: 1\nNFILE: 16777216\n0: 1 : 0 : 0\n", &h, &err), CF_EFORMAT, &err,
                "room");
    CHECK_FAILS(parse("DTYPE: <f8\nNMEMB: 99999999999999999999\n", &h, &err), CF_EFORMAT, &err, "too large");
    CHECK_FAILS(parse("DTYPE: <f8\nNMEMB: 4611686018427387904\nNFILE: 1\n0: 4 : 0 : 0\n", &h, &err), CF_EFORMAT,
                &err, "NMEMB 4611686018427387904 is out of range");
    CHECK_FAILS(parse("DTYPE: <c16\nNMEMB: 2147483647\nNFILE: 1\n0: 4611686018427387904 : 0 : 0\n", &h, &err),
                CF_EFORMAT, &err, "overflow");
}

static void test_every_truncation_is_safe(void)
{
    const char *full = "DTYPE: <f8\nNMEMB: 3\nNFILE: 2\n000000: 2 : 5844 : 5844\n000001: 3 : 7461 : 7461\n";
    size_t n = strlen(full);
    for (size_t k = 0; k < n; k++) {
        char *copy = malloc(k ? k : 1);
        memcpy(copy, full, k);
        cf__header h;
        cf_error err;
        int rc = cf__header_parse(&h, copy, k, "t", &err);
        if (rc == 0) cf__header_free(&h);
        /* Cutting inside the last number still parses (shorter value). */
        CHECK(rc == 0 || rc == CF_EFORMAT || rc == CF_EDTYPE);
        free(copy);
    }
}

static void test_split_rows(void)
{
    int64_t rows[7];
    cf__split_rows(10, 7, rows);
    int64_t want[7] = { 1, 1, 2, 1, 2, 1, 2 };
    CHECK_EQ_MEM(rows, want, sizeof want);
    cf__split_rows(3, 7, rows);
    int64_t want3[7] = { 0, 0, 1, 0, 1, 0, 1 };
    CHECK_EQ_MEM(rows, want3, sizeof want3);
    int64_t big[3];
    cf__split_rows(INT64_C(4611686018427387904), 3, big);
    CHECK_EQ_INT(big[0] + big[1] + big[2], INT64_C(4611686018427387904));
    CHECK_EQ_INT(big[0], INT64_C(1537228672809129301));
}

static void test_ext_roundtrip_and_staleness(void)
{
    cf_error err;
    cf__header h;
    CHECK_OK(parse("DTYPE: <f8\nNMEMB: 3\nNFILE: 2\n000000: 2 : 5844 : 5844\n000001: 3 : 7461 : 7461\n", &h, &err), &err);
    uint32_t crc[2] = { 0xdeadbeef, 0 };
    unsigned char known[2] = { 1, 0 };
    char *text;
    size_t len;
    CHECK_OK(cf__ext_format(&h, crc, known, &text, &len, "x", &err), &err);
    CHECK_EQ_STR(text, "COLFILE-EXT: 1\nDTYPE: <f8\nNMEMB: 3\nNFILE: 2\n"
                       "000000: 2 : 5844 : crc32c=deadbeef\n000001: 3 : 7461 : crc32c=-\n");
    cf__ext x;
    CHECK_OK(cf__ext_parse(&x, text, len, "x", &err), &err);
    CHECK(cf__ext_current(&x, &h, 0));
    CHECK(!cf__ext_current(&x, &h, 1));
    CHECK_EQ_INT(x.crc[0], 0xdeadbeef);
    h.sums[0] += 1; /* another tool wrote to blob 0 */
    CHECK(!cf__ext_current(&x, &h, 0));
    cf__ext_free(&x);
    free(text);
    CHECK_FAILS(cf__ext_parse(&x, "COLFILE-EXT: 2\n", 15, "x", &err), CF_EFORMAT, &err, "COLFILE-EXT: 1");
    const char *bad = "COLFILE-EXT: 1\nDTYPE: <f8\nNMEMB: 3\nNFILE: 1\n000000: 2 : 5 : crc32c=12\n";
    CHECK_FAILS(cf__ext_parse(&x, bad, strlen(bad), "x", &err), CF_EFORMAT, &err, "8 hex digits");
    cf__header_free(&h);
}

/* Found while fuzzing colfile-v1 (tests/fuzz/fuzz_ext.c): the parser took
 * blob ids from each CRC line on its own and rows and sums from the header
 * parser, which reads records across lines, so a damaged file could give a
 * blob the CRC written next to another blob's rows and sum.  Every CRC line
 * must now be one record, matching the blob it names. */
static void test_ext_crc_lines_are_one_record(void)
{
    cf_error err;
    cf__ext x;
    const char *two_in_one = "COLFILE-EXT: 1\nDTYPE: <i4\nNMEMB: 1\nNFILE: 2\n"
                             "0: 1 : 2 : 3 1:crc32c=-\n: 4 : crc32c=0000000b\n";
    CHECK_FAILS(cf__ext_parse(&x, two_in_one, strlen(two_in_one), "x", &err), CF_EFORMAT, &err, "x:5: expected");
    const char *hidden = "COLFILE-EXT: 1\nDTYPE: <i4\nNMEMB: 1\nNFILE: 2 0: 1 : 2 : 3\n"
                         "1: 5 : 6 : crc32c=0000000a\n0: 9 : 9 : crc32c=0000000b\n";
    CHECK_FAILS(cf__ext_parse(&x, hidden, strlen(hidden), "x", &err), CF_EFORMAT, &err, "does not match");
    CHECK(x.crc == NULL && x.header.rows == NULL);
    const char *blank_id = "COLFILE-EXT: 1\nDTYPE: <i4\nNMEMB: 1\nNFILE: 1\n"
                           "0 : 1 : 2 : crc32c=-\n"; /* the colon must follow the id */
    CHECK_FAILS(cf__ext_parse(&x, blank_id, strlen(blank_id), "x", &err), CF_EFORMAT, &err, "x:5: expected");
    /* What a header may hold still parses: blanks, tabs, CRs, either case
     * of hex, lines out of order, unknown later lines. */
    const char *ok = "COLFILE-EXT: 1\nDTYPE: <i4\nNMEMB: 1\nNFILE: 2\n"
                     "\t000001:\t5 :6:  crc32c=0000000A\r\n0: 1 : 2 : crc32c=-\nLATER: crc32c\n";
    CHECK_OK(cf__ext_parse(&x, ok, strlen(ok), "x", &err), &err);
    CHECK_EQ_INT(x.header.rows[1], 5);
    CHECK_EQ_INT(x.known[1], 1);
    CHECK_EQ_INT(x.crc[1], 10);
    CHECK_EQ_INT(x.known[0], 0);
    cf__ext_free(&x);
}

static void test_names(void)
{
    cf_error err;
    const char *good[] = { ".", "a", "1/Position", "a/b/c/col", "1/.", "x.y", ".hidden", "#odd=name", "日本" };
    for (size_t i = 0; i < sizeof good / sizeof *good; i++) CHECK_OK(cf_name_check(good[i], &err), &err);
    struct { const char *name, *why; } bad[] = {
        { "", "empty" }, { "..", "'..'" }, { "../x", "'..'" }, { "a/../../x", "'..'" }, { "a/..", "'..'" },
        { "/abs", "absolute" }, { "a//b", "empty path component" }, { "a/", "empty path component" },
        { "a/./b", "'.' is only allowed" }, { "./a", "'.' is only allowed" }, { "a b", "a space" },
        { "a\tb", "a tab" }, { "a\nb", "a newline" }, { "a\rb", "carriage return" }, { "a\x01", "control" },
        { "x/header", "reserved" }, { "attr/x", "reserved" }, { "g/attr-v2", "reserved" },
        { "colfile-v1", "reserved" }, { "a/.colfile-lock", "reserved" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        CHECK_FAILS(cf_name_check(bad[i].name, &err), CF_ENAME, &err, bad[i].why);
    char longname[4000];
    memset(longname, 'a', sizeof longname - 1);
    longname[sizeof longname - 1] = 0;
    CHECK_FAILS(cf_name_check(longname, &err), CF_ENAME, &err, "longer than");
    memset(longname, 'a', 300);
    longname[300] = 0;
    CHECK_FAILS(cf_name_check(longname, &err), CF_ENAME, &err, "component");
}

CF_TESTS(CF_TEST(test_format_exact_bytes), CF_TEST(test_reader_tolerance), CF_TEST(test_reader_rejects),
         CF_TEST(test_every_truncation_is_safe), CF_TEST(test_split_rows),
         CF_TEST(test_ext_roundtrip_and_staleness),
         CF_TEST(test_ext_crc_lines_are_one_record), CF_TEST(test_names))
