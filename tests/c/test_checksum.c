/* test_checksum.c - the bigfile byte sum and CRC32C (src/checksum.c). */
#include "harness.h"

#include <dirent.h>
#include <sys/stat.h>

#include "checksum.h"

#ifndef CF_FIXTURES_DIR
#error "CF_FIXTURES_DIR must name the fixtures directory"
#endif
#define BIGFILE_SET CF_FIXTURES_DIR "/bigfile-0.1.52"

/* A small deterministic generator (xorshift64*), local to each test. */
static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * UINT64_C(2685821657736338717);
}

static void fill_random(unsigned char *p, size_t n, uint64_t *s)
{
    for (size_t i = 0; i < n; i++) p[i] = (unsigned char)(rng_next(s) >> 56);
}

static uint32_t sysv_slow(uint32_t sum, const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++) sum += p[i];
    return sum;
}

/* Read a whole file; NULL if it cannot be read. */
static unsigned char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 4096, n = 0;
    unsigned char *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            unsigned char *nb = realloc(buf, cap * 2);
            if (!nb) { free(buf); buf = NULL; break; }
            buf = nb;
            cap *= 2;
        }
    }
    fclose(f);
    *len = n;
    return buf;
}

/* ---- sysv sum -------------------------------------------------------- */

static void test_sysv_worked_examples(void)
{
    /* facts section 5, example 1: bytes 52 B9 CD F5 of main/split/sparse */
    static const unsigned char four[] = {0x52, 0xB9, 0xCD, 0xF5};
    CHECK_EQ_INT(cf__sysv_add(0, four, 4), 717);
    CHECK_EQ_INT(cf__sysv_fold(717), 717);
    /* example 2: 96585 = 0x17949 folds to 31050 */
    CHECK_EQ_INT(cf__sysv_fold(96585), 31050);
    CHECK_EQ_INT(cf__sysv_fold(0), 0);
    CHECK_EQ_INT(cf__sysv_fold(0xFFFFFFFFu), 0xFFFF);
    CHECK_EQ_INT(cf__sysv_fold(0xFFFF0001u), 1); /* 1 + 0xFFFF = 0x10000 -> 1 */
    CHECK_EQ_INT(cf__sysv_add(5, NULL, 0), 5);
    CHECK_EQ_INT(cf__sysv_add_generic(5, NULL, 0), 5);
}

static void test_sysv_fixture_blobs(void)
{
    size_t len = 0;
    unsigned char *b = slurp(BIGFILE_SET "/main/split/sparse/000002", &len);
    CHECK(b != NULL);
    if (b) {
        CHECK_EQ_INT(len, 4);
        CHECK_EQ_INT(cf__sysv_add(0, b, len), 717);
        free(b);
    }
    b = slurp(BIGFILE_SET "/main/split/nfile1/000000", &len);
    CHECK(b != NULL);
    if (b) {
        CHECK_EQ_INT(len, 735);
        CHECK_EQ_INT(cf__sysv_add(0, b, len), 96585);
        CHECK_EQ_INT(cf__sysv_fold(cf__sysv_add(0, b, len)), 31050);
        free(b);
    }
}

/* Check every blob line of one header against the blob's bytes.  Returns
 * the number of blobs whose sums matched; *mismatched counts the others. */
static int check_header(const char *dir, int *mismatched)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/header", dir);
    size_t len = 0;
    unsigned char *text = slurp(path, &len);
    if (!text) return 0;
    char *t = realloc(text, len + 1);
    if (!t) { free(text); return 0; }
    t[len] = 0;

    char dtype[16] = "";
    int nmemb = -1, nfile = -1, consumed = 0, matched = 0;
    if (sscanf(t, " DTYPE: %15s NMEMB: %d NFILE: %d%n", dtype, &nmemb, &nfile, &consumed) != 3) {
        CHECK(!"header parses");
        free(t);
        return 0;
    }
    long width = strtol(dtype + 2, NULL, 10);
    const char *p = t + consumed;
    for (int i = 0; i < nfile; i++) {
        unsigned id;
        unsigned long long rows;
        unsigned raw, fold;
        int used = 0;
        if (sscanf(p, " %X: %llu : %u : %u%n", &id, &rows, &raw, &fold, &used) != 4) {
            CHECK(!"blob line parses");
            break;
        }
        p += used;
        CHECK_EQ_INT(cf__sysv_fold(raw), fold);
        char blob[4200];
        snprintf(blob, sizeof blob, "%s/%06X", dir, id);
        size_t blen = 0;
        unsigned char *data = slurp(blob, &blen);
        size_t want = (size_t)rows * (size_t)nmemb * (size_t)width;
        if (!data) {
            CHECK_EQ_INT(rows, 0); /* only empty blobs may be missing */
            continue;
        }
        CHECK(blen >= want);
        if (blen >= want) {
            uint32_t s = cf__sysv_add(0, data, want);
            CHECK_EQ_INT(cf__sysv_add_generic(0, data, want), s);
            if (s == raw) matched++;
            else (*mismatched)++;
        }
        free(data);
    }
    free(t);
    return matched;
}

static int walk_headers(const char *dir, int *mismatched, int *quirk_seen)
{
    int matched = 0;
    char path[4096];
    struct stat st;
    snprintf(path, sizeof path, "%s/header", dir);
    if (stat(path, &st) == 0) {
        int before = *mismatched;
        matched += check_header(dir, mismatched);
        size_t dl = strlen(dir);
        static const char quirk[] = "quirks/checksum_after_overwrite";
        if (dl >= sizeof quirk - 1 && strcmp(dir + dl - (sizeof quirk - 1), quirk) == 0) {
            /* the original counted rewritten rows twice: both blobs differ */
            CHECK_EQ_INT(*mismatched - before, 2);
            *mismatched = before;
            (*quirk_seen)++;
        }
    }
    DIR *d = opendir(dir);
    if (!d) return matched;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
            matched += walk_headers(path, mismatched, quirk_seen);
    }
    closedir(d);
    return matched;
}

static void test_sysv_every_fixture_header(void)
{
    int mismatched = 0, quirk_seen = 0;
    int matched = walk_headers(BIGFILE_SET, &mismatched, &quirk_seen);
    CHECK_EQ_INT(mismatched, 0);
    CHECK_EQ_INT(quirk_seen, 1);
    CHECK(matched >= 50);
}

static void test_sysv_random_lengths_and_wrap(void)
{
    uint64_t s = 0x1234567u;
    size_t n = 100000;
    unsigned char *buf = malloc(n + 64);
    CHECK(buf != NULL);
    if (!buf) return;
    fill_random(buf, n + 64, &s);
    for (int iter = 0; iter < 300; iter++) {
        size_t off = (size_t)(rng_next(&s) % 64);
        size_t len = (size_t)(rng_next(&s) % (iter < 100 ? 200 : n));
        uint32_t start = (uint32_t)rng_next(&s);
        uint32_t want = sysv_slow(start, buf + off, len);
        CHECK_EQ_INT(cf__sysv_add(start, buf + off, len), want);
        CHECK_EQ_INT(cf__sysv_add_generic(start, buf + off, len), want);
        /* split anywhere: sums of the parts chain */
        size_t cut = len ? (size_t)(rng_next(&s) % len) : 0;
        CHECK_EQ_INT(cf__sysv_add(cf__sysv_add(start, buf + off, cut), buf + off + cut, len - cut), want);
    }
    /* all 0xFF: 2^24+1 bytes of 255 wrap past 2^32 */
    size_t big = (size_t)1 << 24;
    unsigned char *ff = malloc(big + 1);
    CHECK(ff != NULL);
    if (ff) {
        memset(ff, 0xFF, big + 1);
        uint32_t want = (uint32_t)(((uint64_t)(big + 1) * 255u + 0xFFFFFF00u) & 0xFFFFFFFFu);
        CHECK_EQ_INT(cf__sysv_add(0xFFFFFF00u, ff, big + 1), want);
        CHECK_EQ_INT(cf__sysv_add_generic(0xFFFFFF00u, ff, big + 1), want);
        free(ff);
    }
    free(buf);
}

/* ---- CRC32C ---------------------------------------------------------- */

static void test_crc32c_vectors(void)
{
    unsigned char z[32], f[32];
    memset(z, 0, sizeof z);
    memset(f, 0xFF, sizeof f);
    uint32_t (*const fns[3])(uint32_t, const void *, size_t) = {
        cf__crc32c_update, cf__crc32c_sw, cf__crc32c_hw};
    for (int i = 0; i < 3; i++) {
        CHECK_EQ_INT(fns[i](0, "123456789", 9), 0xE3069283u);
        CHECK_EQ_INT(fns[i](0, z, 32), 0x8A9136AAu);
        CHECK_EQ_INT(fns[i](0, f, 32), 0x62A8AB43u);
        CHECK_EQ_INT(fns[i](0, "", 0), 0);
        CHECK_EQ_INT(fns[i](0, NULL, 0), 0);
        CHECK_EQ_INT(fns[i](0x12345678u, NULL, 0), 0x12345678u);
        /* "a" and the iSCSI 0..31 ascending vector (RFC 3720 B.4) */
        CHECK_EQ_INT(fns[i](0, "a", 1), 0xC1D04330u);
        unsigned char inc[32];
        for (int k = 0; k < 32; k++) inc[k] = (unsigned char)k;
        CHECK_EQ_INT(fns[i](0, inc, 32), 0x46DD794Eu);
    }
    printf("  (sse4.2 crc32c %s)\n", cf__crc32c_hw_available() ? "available" : "not available");
}

static void test_crc32c_sw_equals_hw(void)
{
    uint64_t s = 42;
    size_t n = 70000;
    unsigned char *buf = malloc(n + 64);
    CHECK(buf != NULL);
    if (!buf) return;
    fill_random(buf, n + 64, &s);
    for (int iter = 0; iter < 500; iter++) {
        size_t off = (size_t)(rng_next(&s) % 64);
        size_t len = (size_t)(rng_next(&s) % (iter < 300 ? 100 : n));
        uint32_t start = iter % 3 ? (uint32_t)rng_next(&s) : 0;
        uint32_t a = cf__crc32c_sw(start, buf + off, len);
        uint32_t b = cf__crc32c_hw(start, buf + off, len);
        CHECK_EQ_INT(a, b);
        CHECK_EQ_INT(cf__crc32c_update(start, buf + off, len), a);
    }
    free(buf);
}

static void test_crc32c_chaining(void)
{
    uint64_t s = 7;
    unsigned char buf[3000];
    fill_random(buf, sizeof buf, &s);
    uint32_t whole = cf__crc32c_update(0, buf, sizeof buf);
    for (size_t cut = 0; cut <= sizeof buf; cut += 37) {
        CHECK_EQ_INT(cf__crc32c_update(cf__crc32c_update(0, buf, cut), buf + cut, sizeof buf - cut), whole);
        CHECK_EQ_INT(cf__crc32c_sw(cf__crc32c_sw(0, buf, cut), buf + cut, sizeof buf - cut), whole);
        CHECK_EQ_INT(cf__crc32c_hw(cf__crc32c_hw(0, buf, cut), buf + cut, sizeof buf - cut), whole);
    }
}

static void test_crc32c_combine_random_splits(void)
{
    uint64_t s = 99;
    size_t n = 20000;
    unsigned char *buf = malloc(n);
    CHECK(buf != NULL);
    if (!buf) return;
    fill_random(buf, n, &s);
    for (int iter = 0; iter < 400; iter++) {
        size_t len = (size_t)(rng_next(&s) % (iter < 200 ? 64 : n + 1));
        size_t cut = len ? (size_t)(rng_next(&s) % (len + 1)) : 0;
        uint32_t whole = cf__crc32c_update(0, buf, len);
        uint32_t a = cf__crc32c_update(0, buf, cut);
        uint32_t b = cf__crc32c_update(0, buf + cut, len - cut);
        CHECK_EQ_INT(cf__crc32c_combine(a, b, len - cut), whole);
    }
    /* len 0 on either side */
    uint32_t a = cf__crc32c_update(0, buf, 100);
    CHECK_EQ_INT(cf__crc32c_combine(a, 0, 0), a);
    CHECK_EQ_INT(cf__crc32c_combine(0, a, 100), a);
    free(buf);
}

/* An independent x^k mod P: non-reflected polynomials in 64-bit words,
 * multiply with carry-less shifts and reduce by P = 0x11EDC6F41. */
static uint64_t ref_mulmod(uint64_t a, uint64_t b)
{
    uint64_t prod = 0;
    for (int i = 0; i < 32; i++)
        if (a >> i & 1) prod ^= b << i;
    for (int i = 62; i >= 32; i--)
        if (prod >> i & 1) prod ^= UINT64_C(0x11EDC6F41) << (i - 32);
    return prod;
}

static uint64_t ref_xpow(uint64_t k) /* x^k mod P, normal bit order */
{
    uint64_t result = 1, base = 2; /* x */
    while (k) {
        if (k & 1) result = ref_mulmod(result, base);
        base = ref_mulmod(base, base);
        k >>= 1;
    }
    return result;
}

static uint32_t reflect32(uint32_t v)
{
    uint32_t r = 0;
    for (int i = 0; i < 32; i++) r |= ((v >> i) & 1u) << (31 - i);
    return r;
}

static void test_crc32c_combine_huge_lengths(void)
{
    uint64_t s = 2024;
    /* combine(x, 0, n) multiplies x by x^(8n) mod P: check it against the
     * independent reference for lengths up to 2^61 (8n must fit 64 bits). */
    for (int iter = 0; iter < 200; iter++) {
        uint64_t n = rng_next(&s) >> (3 + (iter % 40));
        uint32_t crc = (uint32_t)rng_next(&s);
        uint64_t shift = ref_xpow(8 * n);
        /* reflected crc  -> normal polynomial, multiply, back */
        uint32_t want = reflect32((uint32_t)ref_mulmod(reflect32(crc), shift));
        CHECK_EQ_INT(cf__crc32c_combine(crc, 0, n), want);
    }
    /* associativity for lengths beyond 4 GiB, up to 2^63 */
    for (int iter = 0; iter < 200; iter++) {
        uint32_t a = (uint32_t)rng_next(&s), b = (uint32_t)rng_next(&s), c = (uint32_t)rng_next(&s);
        uint64_t n = (rng_next(&s) >> (1 + iter % 30)) | (UINT64_C(1) << 32);
        uint64_t m = rng_next(&s) >> (1 + iter % 30); /* n + m < 2^64 */
        uint32_t left = cf__crc32c_combine(cf__crc32c_combine(a, b, n), c, m);
        uint32_t right = cf__crc32c_combine(a, cf__crc32c_combine(b, c, m), n + m);
        CHECK_EQ_INT(left, right);
    }
    /* doubling runs of zero bytes: Z(2k) = combine(Z(k), Z(k), k) */
    unsigned char zeros[4096];
    memset(zeros, 0, sizeof zeros);
    uint32_t z = cf__crc32c_update(0, zeros, 1);
    uint64_t k = 1;
    while (k < sizeof zeros) {
        z = cf__crc32c_combine(z, z, k);
        k *= 2;
        CHECK_EQ_INT(z, cf__crc32c_update(0, zeros, (size_t)k));
    }
}

CF_TESTS(
    CF_TEST(test_sysv_worked_examples),
    CF_TEST(test_sysv_fixture_blobs),
    CF_TEST(test_sysv_every_fixture_header),
    CF_TEST(test_sysv_random_lengths_and_wrap),
    CF_TEST(test_crc32c_vectors),
    CF_TEST(test_crc32c_sw_equals_hw),
    CF_TEST(test_crc32c_chaining),
    CF_TEST(test_crc32c_combine_random_splits),
    CF_TEST(test_crc32c_combine_huge_lengths)
)
