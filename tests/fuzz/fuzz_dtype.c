/* fuzz_dtype.c - the dtype token parser (src/format/dtype.c cf__dtype_parse).
 *
 * Input: a token (up to the first NUL, as C callers pass it).  Under each
 * rule set, an accepted token must normalise to one that fits
 * CF_DTYPE_MAX, has an explicit byte order and parses back to the same
 * dtype; the rule sets must nest (HEADER within USER within ATTR) and the
 * public wrappers must agree with the parser. */
#include "fuzz.h"

#include "dtype.h"

static const int rules[3] = { CF__DTYPE_HEADER, CF__DTYPE_USER, CF__DTYPE_ATTR };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *tok = malloc(size + 1);
    if (!tok) abort();
    memcpy(tok, data, size);
    tok[size] = '\0';

    cf__dtype d[3];
    int rc[3];
    cf_error err;
    for (int r = 0; r < 3; r++) {
        rc[r] = cf__dtype_parse(tok, rules[r], &d[r], "fuzz", &err);
        if (rc[r]) {
            FUZZ_CHECK(rc[r] == CF_EDTYPE, "rules %d: error %d: %s", r, rc[r], err.message);
            FUZZ_CHECK(memchr(err.message, '\0', sizeof err.message) != NULL, "message not terminated");
            continue;
        }
        FUZZ_CHECK(d[r].order == '<' || d[r].order == '>', "order %d", d[r].order);
        FUZZ_CHECK(d[r].width >= 1 && d[r].width <= INT32_MAX, "width %lld", (long long)d[r].width);
        char norm[CF_DTYPE_MAX + 8];
        memset(norm, 0x55, sizeof norm);
        cf__dtype_format(&d[r], norm);
        FUZZ_CHECK(memchr(norm, '\0', CF_DTYPE_MAX) != NULL, "normalised token overflows CF_DTYPE_MAX");
        for (size_t i = CF_DTYPE_MAX; i < sizeof norm; i++) FUZZ_CHECK(norm[i] == 0x55, "format wrote past the end");
        cf__dtype back;
        int rc2 = cf__dtype_parse(norm, rules[r], &back, NULL, &err);
        FUZZ_CHECK(rc2 == 0, "rules %d: normalised '%s' of '%s' does not parse: %s", r, norm, tok, err.message);
        FUZZ_CHECK(cf__dtype_equal(&back, &d[r]), "rules %d: '%s' -> '%s' changes the dtype", r, tok, norm);
    }
    /* A header token is a user token; a user token (other than numpy's
     * spellings that USER maps: 'a' -> 'S') is an attribute token. */
    if (rc[0] == 0) {
        FUZZ_CHECK(rc[1] == 0 && cf__dtype_equal(&d[0], &d[1]), "header token '%s' is not a user token", tok);
        FUZZ_CHECK(d[0].kind != 'S' || d[0].width <= CF__COLUMN_S_MAX, "header S width");
    }
    if (rc[1] == 0 && d[1].kind != 'S')
        FUZZ_CHECK(rc[2] == 0 && cf__dtype_equal(&d[1], &d[2]), "user token '%s' is not an attribute token", tok);

    char out[CF_DTYPE_MAX];
    int n = cf_dtype_normalize(tok, out, &err);
    FUZZ_CHECK((n == 0) == (rc[1] == 0), "cf_dtype_normalize disagrees on '%s'", tok);
    int64_t w = -1;
    int wrc = cf_dtype_itemsize(tok, &w, &err);
    FUZZ_CHECK(wrc == rc[1] && (wrc ? w == -1 : w == d[1].width), "cf_dtype_itemsize('%s') = %d, %lld", tok, wrc,
               (long long)w);
    if (rc[1] == 0) {
        FUZZ_CHECK(cf_dtype_can_cast(tok, tok) == cf__dtype_can_convert(&d[1], &d[1]), "can_cast to itself");
        cf__dtype f8 = { cf__dtype_native_order(), 'f', 8 };
        FUZZ_CHECK(cf_dtype_can_cast(tok, "f8") == cf__dtype_can_convert(&d[1], &f8), "can_cast to f8");
    }
    free(tok);
    return 0;
}
