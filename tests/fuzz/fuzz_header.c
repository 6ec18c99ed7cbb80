/* fuzz_header.c - the column `header` parser (src/format/header.c).
 *
 * Input: the bytes of a header file.  Whatever cf__header_parse accepts
 * must be within the limits of docs/format.md 3.3, format to text that
 * parses back to the same header, and format identically the second time. */
#include "fuzz.h"

#include "header.h"

static void check_limits(const cf__header *h)
{
    FUZZ_CHECK(h->nmemb >= 0 && h->nmemb <= CF__NMEMB_MAX, "nmemb %lld", (long long)h->nmemb);
    FUZZ_CHECK(h->nfile >= 0 && h->nfile <= CF__NFILE_MAX, "nfile %lld", (long long)h->nfile);
    FUZZ_CHECK((h->nfile == 0) == (h->rows == NULL), "rows array for nfile %lld", (long long)h->nfile);
    char token[CF_DTYPE_MAX];
    cf__dtype d;
    cf__dtype_format(&h->dtype, token);
    FUZZ_CHECK(cf__dtype_parse(token, CF__DTYPE_HEADER, &d, NULL, NULL) == 0 && cf__dtype_equal(&d, &h->dtype),
               "header dtype %s is not a header dtype", token);
    int64_t total = 0;
    for (int64_t i = 0; i < h->nfile; i++) {
        FUZZ_CHECK(h->rows[i] >= 0 && h->rows[i] <= INT64_MAX - total, "rows[%lld] %lld", (long long)i,
                   (long long)h->rows[i]);
        total += h->rows[i];
    }
    FUZZ_CHECK(cf__header_size(h) == total, "size");
    if (h->nmemb > 0) FUZZ_CHECK(total <= INT64_MAX / h->nmemb / h->dtype.width, "byte size overflows");
}

static void check_same(const cf__header *a, const cf__header *b)
{
    FUZZ_CHECK(cf__dtype_equal(&a->dtype, &b->dtype), "dtype changed");
    FUZZ_CHECK(a->nmemb == b->nmemb && a->nfile == b->nfile, "nmemb/nfile changed");
    for (int64_t i = 0; i < a->nfile; i++)
        FUZZ_CHECK(a->rows[i] == b->rows[i] && a->sums[i] == b->sums[i], "blob %lld changed", (long long)i);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cf__header h, h2;
    cf_error err;
    char *text = fuzz_copy(data, size);
    int rc = cf__header_parse(&h, text, size, "fuzz/header", &err);
    free(text);
    if (rc) {
        FUZZ_CHECK(fuzz_expected_error(rc), "unexpected error %d: %s", rc, err.message);
        FUZZ_CHECK(h.rows == NULL && h.sums == NULL, "failed parse left arrays behind");
        return 0;
    }
    check_limits(&h);

    char *out, *out2;
    size_t len, len2;
    FUZZ_CHECK(cf__header_format(&h, &out, &len, "fuzz/header", &err) == 0, "format: %s", err.message);
    FUZZ_CHECK(strlen(out) == len, "formatted length");
    rc = cf__header_parse(&h2, out, len, "fuzz/header", &err);
    if (rc) fuzz_dump("formatted", out, len);
    FUZZ_CHECK(rc == 0, "formatted header does not parse: %s", err.message);
    check_same(&h, &h2);
    FUZZ_CHECK(cf__header_format(&h2, &out2, &len2, "fuzz/header", &err) == 0, "format: %s", err.message);
    FUZZ_CHECK(len == len2 && memcmp(out, out2, len) == 0, "second format differs");
    free(out);
    free(out2);
    cf__header_free(&h2);
    cf__header_free(&h);
    return 0;
}
