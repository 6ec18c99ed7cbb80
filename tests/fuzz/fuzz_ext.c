/* fuzz_ext.c - the `colfile-v1` CRC file parser (src/format/ext.c).
 *
 * Input: the bytes of a colfile-v1 file.  Its checksum line is judged
 * (cf__ext_unseal): a file taken as sealed ends with the right CRC32C of
 * what precedes it.  Its CRC
 * part (before the statistics section, whose start is checked too) is
 * parsed.  An accepted file holds a valid
 * header part; each blob's CRC is the one written on the (last) line that
 * names the blob; formatted again it parses back to the same header, CRCs
 * and known flags, is current (cf__ext_current) exactly for the known blobs
 * of its own header, and formats identically the second time. */
#include "fuzz.h"

#include "checksum.h"
#include "ext.h"
#include "hex.h"

/* The CRC each line after the NFILE line writes for the blob it names,
 * read naively: blanks, hex id, and the field after "crc32c=". */
static void check_lines(const cf__ext *x, const char *text, size_t len)
{
    int64_t nfile = x->header.nfile;
    unsigned char *seen = calloc((size_t)nfile + 1, 1), *known = calloc((size_t)nfile + 1, 1);
    uint32_t *crc = calloc((size_t)nfile + 1, sizeof *crc);
    if (!seen || !known || !crc) abort();
    const char *p = text, *end = text + len;
    for (int64_t line = 1; p < end; line++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p)), *le = nl ? nl : end, *f = NULL;
        for (const char *s = p; line > 4 && s + 7 <= le && !f; s++)
            if (memcmp(s, "crc32c=", 7) == 0) f = s + 7;
        if (f) {
            const char *s = p;
            uint64_t id = 0;
            while (s < le && (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\v' || *s == '\f')) s++;
            for (int d; s < le && (d = cf__hex_digit(*s)) >= 0; s++) id = id * 16 + (uint64_t)d;
            FUZZ_CHECK(s < le && *s == ':' && id < (uint64_t)nfile, "line %lld names no blob", (long long)line);
            seen[id] = 1;
            known[id] = f < le && *f != '-';
            crc[id] = 0;
            for (int k = 0; k < 8 && f + k < le && cf__hex_digit(f[k]) >= 0; k++)
                crc[id] = crc[id] * 16 + (uint32_t)cf__hex_digit(f[k]);
        }
        p = nl ? nl + 1 : end;
    }
    for (int64_t i = 0; i < nfile; i++) {
        FUZZ_CHECK(x->known[i] == (seen[i] && known[i]), "blob %lld: known %d, its line says %d", (long long)i,
                   x->known[i], seen[i] && known[i]);
        FUZZ_CHECK(!x->known[i] || x->crc[i] == crc[i], "blob %lld: CRC %08x, its line says %08x", (long long)i,
                   x->crc[i], crc[i]);
    }
    free(seen);
    free(known);
    free(crc);
}

/* What cf__ext_unseal says about text, checked against the rules. */
static void check_seal(const char *text, size_t size)
{
    size_t body;
    enum cf__ext_seal r = cf__ext_unseal(text, size, &body);
    FUZZ_CHECK(r >= CF__SEAL_OK && r <= CF__SEAL_DAMAGED, "unseal gave %d", (int)r);
    FUZZ_CHECK(body <= size, "body %zu of %zu bytes", body, size);
    if (r != CF__SEAL_OK) {
        FUZZ_CHECK(body == size, "unsealed text cut at %zu of %zu", body, size);
        return;
    }
    char want[32];
    snprintf(want, sizeof want, "CRC32C: %08x\n", (unsigned)cf__crc32c_update(0, text, body));
    FUZZ_CHECK(size - body == 17 && memcmp(text + body, want, 17) == 0, "sealed without the right checksum line");
    FUZZ_CHECK(body == 0 || text[body - 1] == '\n', "checksum line not at a line start");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cf__ext x, y;
    cf_error err;
    char *text = fuzz_copy(data, size);
    check_seal(text, size);
    /* The statistics section: the first line that begins "COLFILE-STATS:"
     * and never the first line of the file; the CRCs are read before it. */
    size_t at = size;
    if (cf__ext_stats_section(text, size, &at)) {
        FUZZ_CHECK(at > 0 && at + 14 <= size && text[at - 1] == '\n' && memcmp(text + at, "COLFILE-STATS:", 14) == 0,
                   "section at %zu is no line beginning COLFILE-STATS:", at);
        for (size_t k = 1; k < at; k++)
            FUZZ_CHECK(text[k - 1] != '\n' || size - k < 14 || memcmp(text + k, "COLFILE-STATS:", 14) != 0,
                       "an earlier line at %zu begins COLFILE-STATS:", k);
    } else {
        for (size_t k = 1; k + 14 <= size; k++)
            FUZZ_CHECK(text[k - 1] != '\n' || memcmp(text + k, "COLFILE-STATS:", 14) != 0,
                       "section at %zu not found", k);
    }
    size = at;
    int rc = cf__ext_parse(&x, text, size, "fuzz/colfile-v1", &err);
    if (rc) {
        free(text);
        FUZZ_CHECK(fuzz_expected_error(rc), "unexpected error %d: %s", rc, err.message);
        FUZZ_CHECK(!x.crc && !x.known && !x.header.rows, "failed parse left arrays behind");
        return 0;
    }
    check_lines(&x, text, size);
    free(text);
    const cf__header *h = &x.header;
    FUZZ_CHECK(h->nfile >= 0 && h->nfile <= CF__NFILE_MAX && h->nmemb >= 0, "header part");
    FUZZ_CHECK(x.crc && x.known, "no CRC arrays");
    for (int64_t i = 0; i < h->nfile; i++) {
        FUZZ_CHECK(x.known[i] <= 1, "known[%lld] = %d", (long long)i, x.known[i]);
        FUZZ_CHECK(h->rows[i] >= 0, "rows[%lld]", (long long)i);
        FUZZ_CHECK(cf__ext_current(&x, h, i) == x.known[i], "current(%lld) != known", (long long)i);
    }
    FUZZ_CHECK(!cf__ext_current(&x, h, -1) && !cf__ext_current(&x, h, h->nfile), "current out of range");

    char *out, *out2;
    size_t len, len2;
    FUZZ_CHECK(cf__ext_format(h, x.crc, x.known, &out, &len, "fuzz", &err) == 0, "format: %s", err.message);
    rc = cf__ext_parse(&y, out, len, "fuzz/formatted", &err);
    if (rc) fuzz_dump("formatted", out, len);
    FUZZ_CHECK(rc == 0, "formatted colfile-v1 does not parse: %s", err.message);
    FUZZ_CHECK(cf__dtype_equal(&h->dtype, &y.header.dtype) && h->nmemb == y.header.nmemb &&
               h->nfile == y.header.nfile, "header part changed");
    for (int64_t i = 0; i < h->nfile; i++) {
        FUZZ_CHECK(h->rows[i] == y.header.rows[i] && h->sums[i] == y.header.sums[i], "blob %lld changed",
                   (long long)i);
        FUZZ_CHECK(x.known[i] == y.known[i] && (!x.known[i] || x.crc[i] == y.crc[i]), "CRC of blob %lld changed",
                   (long long)i);
    }
    FUZZ_CHECK(cf__ext_format(&y.header, y.crc, y.known, &out2, &len2, "fuzz", &err) == 0, "format: %s",
               err.message);
    FUZZ_CHECK(len == len2 && memcmp(out, out2, len) == 0, "second format differs");
    free(out);
    free(out2);
    cf__ext_free(&y);
    cf__ext_free(&x);
    return 0;
}
