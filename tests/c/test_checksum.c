/* test_checksum.c - the bigfile byte sum and CRC32C (src/common/checksum.c). */
#include "harness.h"
#include "fixtures.h"

#include <dirent.h>
#include <sys/stat.h>

#include "checksum.h"

#ifndef CF_FIXTURES_DIR
#error "CF_FIXTURES_DIR must name the fixtures directory"
#endif

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
    return (unsigned char *)cf_test_slurp(NULL, path, len);
}

/* ---- sysv sum -------------------------------------------------------- */

static void test_sysv_worked_examples(void)
{
    /* facts section 5, example 1: the bytes 52 B9 CD F5 of a one-row blob */
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

/* Blob 000000 of a 735-row <u1 column written by bigfile 0.1.52 (facts
 * section 5, example 2): its header line is `000000: 735 : 96585 : 31050`. */
static const unsigned char nfile1_blob[735] = {
    0xC9, 0x06, 0xDF, 0xED, 0x22, 0xF1, 0x55, 0xD3, 0x19, 0xE7, 0x87, 0x63, 0xAB, 0x48, 0xE0, 0x23,
    0x95, 0x98, 0x16, 0xBD, 0x85, 0xE6, 0x5D, 0xA5, 0x69, 0x0C, 0x3F, 0x79, 0x9F, 0xA5, 0xB1, 0x48,
    0x42, 0xB9, 0x9E, 0x63, 0x3F, 0x5E, 0xA1, 0x3A, 0x42, 0x85, 0xCB, 0x54, 0xA2, 0xB9, 0x0C, 0xE8,
    0x23, 0x1A, 0xCF, 0x9D, 0xA4, 0x3F, 0xF5, 0xB1, 0xF5, 0x97, 0x6F, 0xFF, 0x42, 0x80, 0xC8, 0xDA,
    0xB1, 0xC8, 0xBE, 0xCD, 0x92, 0xC5, 0x96, 0x39, 0x75, 0x95, 0xB9, 0xD8, 0x7A, 0x85, 0x47, 0x96,
    0x37, 0x30, 0x9B, 0xEE, 0xC3, 0xAD, 0x41, 0x1B, 0x90, 0x21, 0xE7, 0x6D, 0xF6, 0x4E, 0x3E, 0x7B,
    0x0C, 0xAF, 0x37, 0x3A, 0xED, 0x08, 0x7C, 0x10, 0x4B, 0x36, 0xBE, 0x48, 0xF1, 0x8F, 0x8B, 0xD2,
    0x41, 0x6B, 0xDB, 0xEE, 0xDD, 0x44, 0x98, 0x13, 0x2F, 0x1F, 0x88, 0x19, 0x5E, 0x7A, 0xF1, 0xF1,
    0x6D, 0xE2, 0x66, 0x29, 0x35, 0xF6, 0xAF, 0x6D, 0xAB, 0xE1, 0x29, 0xDF, 0x5C, 0xB6, 0x4A, 0xB3,
    0x92, 0xDD, 0x7F, 0x3F, 0x69, 0x1C, 0x83, 0x45, 0x81, 0x98, 0x4A, 0x9D, 0x8E, 0x9E, 0x6F, 0x2B,
    0xB8, 0xDF, 0x88, 0x97, 0x58, 0xDA, 0x82, 0x08, 0xF8, 0xF3, 0x25, 0xDF, 0x14, 0xFB, 0xBD, 0xF8,
    0x65, 0x07, 0x23, 0xE4, 0xD4, 0x50, 0x90, 0xCB, 0x2B, 0x1A, 0x79, 0x74, 0xC5, 0x45, 0x66, 0x52,
    0xBE, 0xCE, 0x59, 0x68, 0x53, 0x7B, 0xB9, 0x09, 0xCE, 0x34, 0xB6, 0x3E, 0xFC, 0x1F, 0x9E, 0x65,
    0xEF, 0x62, 0xA2, 0xCF, 0xD0, 0x96, 0xAA, 0x4A, 0x81, 0x66, 0x9C, 0xD1, 0x94, 0x79, 0xA6, 0xD8,
    0x82, 0x72, 0xEA, 0x65, 0xD4, 0xC2, 0xE3, 0x82, 0x9D, 0x99, 0x09, 0xAF, 0x33, 0xEF, 0x05, 0x53,
    0xB8, 0xE1, 0xE2, 0x86, 0x2A, 0x8F, 0xA0, 0x84, 0x1A, 0x55, 0x1D, 0x4E, 0x46, 0x87, 0x22, 0x7F,
    0x2E, 0x59, 0x7E, 0x64, 0xF8, 0xEB, 0x1C, 0xF4, 0xB6, 0x71, 0x32, 0x81, 0xEE, 0xC8, 0xF4, 0x09,
    0x40, 0xD8, 0x93, 0xC0, 0xCA, 0x44, 0x0A, 0xA9, 0x6D, 0x96, 0xB3, 0x32, 0x06, 0xE8, 0x0D, 0xA4,
    0xD0, 0x51, 0xF5, 0xDB, 0x96, 0x9A, 0x3C, 0x10, 0x5E, 0x7A, 0x4B, 0xE7, 0x2F, 0x30, 0xDD, 0xCE,
    0x54, 0x7A, 0xFD, 0x7E, 0x41, 0xFB, 0xA3, 0x3C, 0x30, 0x0F, 0x1C, 0x24, 0xD3, 0x99, 0xDD, 0x70,
    0xE0, 0xEA, 0x71, 0x00, 0x23, 0xF3, 0xAB, 0xD4, 0xB4, 0xAF, 0xD4, 0x11, 0x47, 0x3E, 0xC0, 0xB3,
    0xB3, 0x56, 0x97, 0x85, 0xF9, 0xBE, 0x18, 0x39, 0x75, 0x45, 0x3A, 0x35, 0xE6, 0xC8, 0xBF, 0x37,
    0x11, 0xF9, 0xE7, 0x7E, 0xD6, 0x0C, 0xBA, 0xD3, 0xB0, 0x07, 0xF2, 0xA2, 0x0B, 0x6E, 0xFC, 0x90,
    0x76, 0x4C, 0x21, 0xB1, 0xA0, 0x25, 0x5C, 0xC6, 0xD6, 0x91, 0x10, 0xD2, 0xF4, 0x4B, 0x64, 0xCD,
    0xF4, 0x32, 0x6F, 0x98, 0x01, 0xAC, 0xDC, 0x76, 0x2B, 0xEA, 0x79, 0xBB, 0x32, 0xD0, 0x69, 0x7D,
    0xD4, 0xCD, 0x5F, 0x1A, 0x5D, 0xCE, 0xD8, 0x28, 0x50, 0x86, 0x8D, 0x03, 0x2B, 0x34, 0x4A, 0x54,
    0x4B, 0xB0, 0x29, 0x64, 0x3C, 0x75, 0x1B, 0x4C, 0x66, 0x32, 0xA1, 0x70, 0xAD, 0x0F, 0x88, 0xA7,
    0x3D, 0x9A, 0x0C, 0xBD, 0xC5, 0x74, 0x73, 0xF2, 0xF2, 0xB1, 0xAB, 0x0E, 0x68, 0xAC, 0x83, 0xD3,
    0xB6, 0xCB, 0xBD, 0x09, 0x11, 0xF9, 0xF2, 0xD4, 0x6E, 0x6D, 0x65, 0x15, 0x33, 0xF6, 0x5D, 0x7B,
    0xB0, 0x42, 0x90, 0x3C, 0xA4, 0x48, 0x86, 0x58, 0x10, 0xE5, 0xA1, 0x71, 0x6C, 0x4E, 0xCF, 0x51,
    0xAC, 0xC1, 0xAD, 0x9D, 0x9C, 0xB4, 0x3C, 0xE7, 0x81, 0xA7, 0xCC, 0x00, 0xA7, 0xFC, 0xB0, 0x25,
    0xA0, 0x47, 0x7A, 0x80, 0x71, 0xBF, 0x3D, 0xAF, 0xBE, 0xA4, 0x05, 0xB1, 0xDE, 0xBB, 0xF0, 0x40,
    0x6D, 0xF8, 0xCA, 0x68, 0xCE, 0x92, 0x22, 0xC5, 0x4A, 0xB9, 0xB0, 0x2D, 0x04, 0x76, 0xEE, 0x3F,
    0x0F, 0xF6, 0xC0, 0xDD, 0xF0, 0x8B, 0xFF, 0x48, 0xF7, 0x5E, 0x4E, 0x90, 0x8A, 0xA2, 0xC8, 0x19,
    0xC4, 0x11, 0x56, 0xD9, 0xD7, 0x6C, 0xAF, 0xEE, 0x62, 0xA4, 0x1E, 0x5D, 0xE4, 0xA3, 0x27, 0xFE,
    0xDC, 0xB3, 0x2D, 0xF7, 0x64, 0xAF, 0x44, 0x1B, 0x44, 0x22, 0x16, 0x71, 0x78, 0xA1, 0x60, 0xBC,
    0xF9, 0x55, 0xA5, 0x3D, 0x86, 0x8E, 0xC2, 0x7C, 0x93, 0x6A, 0x6F, 0x4C, 0x19, 0x81, 0x63, 0x51,
    0x56, 0x57, 0xCC, 0xA8, 0x4E, 0xB8, 0x49, 0x9E, 0x12, 0x4D, 0x4D, 0xCC, 0xDB, 0x5A, 0xBE, 0x35,
    0x3C, 0x9B, 0xAB, 0x72, 0x9E, 0xC2, 0xC4, 0xE0, 0xD6, 0x0C, 0x23, 0xDE, 0x95, 0x60, 0xB1, 0x94,
    0x6A, 0x93, 0xE8, 0xD1, 0x7B, 0xCD, 0x01, 0xB7, 0xEB, 0xA6, 0x5B, 0x5E, 0x23, 0x5D, 0xBD, 0x25,
    0x46, 0x34, 0x04, 0x3F, 0xF0, 0x52, 0x64, 0xF4, 0x87, 0xED, 0x1D, 0xE6, 0xC2, 0x66, 0x01, 0xF4,
    0x76, 0x62, 0x39, 0x05, 0x75, 0x1C, 0x86, 0xE8, 0x37, 0x58, 0x9A, 0x97, 0x41, 0x48, 0x80, 0x86,
    0xAE, 0xBB, 0x25, 0x3A, 0xBD, 0xCA, 0x28, 0x7B, 0xA4, 0x93, 0x7E, 0x03, 0xE0, 0x96, 0x17, 0x59,
    0x43, 0x69, 0x3C, 0xC8, 0x60, 0x62, 0x06, 0x8D, 0xF9, 0xCF, 0x77, 0x8E, 0xA5, 0x3A, 0x7E, 0xF9,
    0xB5, 0x86, 0x52, 0xE0, 0x9D, 0x65, 0x53, 0x20, 0x1C, 0x15, 0x69, 0x87, 0x8B, 0xC2, 0x99, 0xFA,
    0xB4, 0xDB, 0x7C, 0x9F, 0xBD, 0x42, 0x40, 0xE8, 0xA6, 0x6C, 0x19, 0x27, 0xCD, 0x78, 0x52,
};

static void test_sysv_embedded_blobs(void)
{
    /* example 1: the only row of blob 000002 of a sparse <i4 column,
     * header line `000002: 1 : 717 : 717` */
    static const unsigned char sparse_blob[] = {0x52, 0xB9, 0xCD, 0xF5};
    CHECK_EQ_INT(sizeof sparse_blob, 4);
    CHECK_EQ_INT(cf__sysv_add(0, sparse_blob, sizeof sparse_blob), 717);
    CHECK_EQ_INT(cf__sysv_add_generic(0, sparse_blob, sizeof sparse_blob), 717);
    CHECK_EQ_INT(cf__sysv_fold(cf__sysv_add(0, sparse_blob, sizeof sparse_blob)), 717);
    /* example 2 */
    CHECK_EQ_INT(sizeof nfile1_blob, 735);
    CHECK_EQ_INT(cf__sysv_add(0, nfile1_blob, sizeof nfile1_blob), 96585);
    CHECK_EQ_INT(cf__sysv_add_generic(0, nfile1_blob, sizeof nfile1_blob), 96585);
    CHECK_EQ_INT(cf__sysv_fold(cf__sysv_add(0, nfile1_blob, sizeof nfile1_blob)), 31050);
    /* the same sum from an unaligned heap copy, whole and in two pieces */
    unsigned char *copy = malloc(sizeof nfile1_blob + 1);
    CHECK(copy != NULL);
    if (copy) {
        memcpy(copy + 1, nfile1_blob, sizeof nfile1_blob);
        CHECK_EQ_INT(cf__sysv_add(0, copy + 1, sizeof nfile1_blob), 96585);
        CHECK_EQ_INT(cf__sysv_add(cf__sysv_add(0, copy + 1, 333), copy + 334, 735 - 333), 96585);
        free(copy);
    }
}

/* ---- every fixture set ------------------------------------------------
 * A fixture set is any directory under CF_FIXTURES_DIR holding a
 * manifest.json.  Which sets exist and what their trees hold is found on
 * disk: a set generated with another seed has other names, shapes, split
 * counts and values. */


typedef struct {
    int headers, blobs, matched;
    int over_blobs;   /* header sum above the content's: bytes counted twice */
    int over_columns; /* columns holding such blobs */
    int under_blobs;  /* header sum below the content's: never */
} header_tally;

/* Check every blob line of dir/header, if there is one, against the blob. */
static void check_header(const char *dir, void *ctx)
{
    header_tally *t = ctx;
    char path[4096];
    snprintf(path, sizeof path, "%s/header", dir);
    if (!is_file(path)) return;
    size_t len = 0;
    unsigned char *text = slurp(path, &len);
    CHECK(text != NULL);
    if (!text) return;
    char *h = realloc(text, len + 1);
    if (!h) { free(text); return; }
    h[len] = 0;
    t->headers++;

    char dtype[16] = "";
    int nmemb = -1, nfile = -1, consumed = 0, over = 0;
    if (sscanf(h, " DTYPE: %15s NMEMB: %d NFILE: %d%n", dtype, &nmemb, &nfile, &consumed) != 3) {
        fprintf(stderr, "%s: header does not parse\n", path);
        cf_test_failures++;
        free(h);
        return;
    }
    long width = strtol(dtype + 2, NULL, 10);
    const char *p = h + consumed;
    for (int i = 0; i < nfile; i++) {
        unsigned id;
        unsigned long long rows;
        unsigned raw, fold;
        int used = 0;
        if (sscanf(p, " %X: %llu : %u : %u%n", &id, &rows, &raw, &fold, &used) != 4) {
            fprintf(stderr, "%s: blob line %d does not parse\n", path, i);
            cf_test_failures++;
            break;
        }
        p += used;
        t->blobs++;
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
            if (s == raw) {
                t->matched++;
            } else if (raw > s) {
                over++;
            } else {
                fprintf(stderr, "%s: header sum %u is below the content's %u\n", blob, raw,
                        (unsigned)s);
                t->under_blobs++;
            }
        }
        free(data);
    }
    if (over) {
        /* the writer's quirk: rows written twice were summed twice */
        printf("    %s: %d blob(s) with a double-counted sum\n", dir, over);
        t->over_blobs += over;
        t->over_columns++;
    }
    free(h);
}

static void test_sysv_every_fixture_header(void)
{
    fixture_sets sets = find_fixture_sets();
    CHECK(sets.count >= 1);
    for (size_t i = 0; i < sets.count; i++) {
        header_tally t = {0, 0, 0, 0, 0, 0};
        walk_dirs(sets.dirs[i], check_header, &t, 0);
        printf("  (%s: %d headers, %d blobs, %d sums match, %d double-counted in %d column(s))\n",
               sets.dirs[i], t.headers, t.blobs, t.matched, t.over_blobs, t.over_columns);
        CHECK(t.headers >= 10);
        CHECK(t.matched >= 10);
        CHECK_EQ_INT(t.under_blobs, 0);
        CHECK(t.over_columns <= 1); /* the quirk is one column of a set at most */
    }
    free_fixture_sets(&sets);
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
    size_t n = (1 << 20) + 100; /* long inputs take the three-stream path */
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
    /* Around the three-stream threshold and block rounding. */
    for (size_t len = (64 << 10) - 9; len < (64 << 10) + 40; len++)
        CHECK_EQ_INT(cf__crc32c_hw(7, buf + 3, len), cf__crc32c_sw(7, buf + 3, len));
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

/* ---- both in one pass ------------------------------------------------ */

/* cf__sum_crc32c equals the byte sum and the CRC32C computed apart, for
 * lengths around its round sizes (three blocks of 4 KiB .. 256 KiB),
 * any alignment and any running values; the all-0xFF sum wraps. */
static void test_sum_crc32c_equals_both(void)
{
    uint64_t s = 0xC0FFEEu;
    size_t n = ((size_t)3 << 20) + 100;
    unsigned char *buf = malloc(n + 64);
    CHECK(buf != NULL);
    if (!buf) return;
    fill_random(buf, n + 64, &s);
    static const size_t lens[] = { 0, 1, 7, 8, 31, 32, 33, 12287, 12288, 12289, 24576, 24600, 65536,
                                   196608, 196609, 786431, 786432, 786433, (size_t)2 << 20, ((size_t)3 << 20) + 100 };
    for (int iter = 0; iter < 140; iter++) {
        size_t len = iter < 40 ? lens[iter % 20] : (size_t)(rng_next(&s) % (iter < 100 ? 100000 : n));
        size_t off = (size_t)(rng_next(&s) % 64);
        uint32_t sum0 = (uint32_t)rng_next(&s), crc0 = (uint32_t)rng_next(&s);
        uint32_t sum = sum0, crc = crc0;
        cf__sum_crc32c(&sum, &crc, buf + off, len);
        uint32_t want_sum = sysv_slow(sum0, buf + off, len);
        uint32_t want_crc = cf__crc32c_sw(crc0, buf + off, len);
        if (sum != want_sum || crc != want_crc) {
            fprintf(stderr, "sum_crc32c len %zu off %zu: sum %08x/%08x crc %08x/%08x\n", len, off,
                    (unsigned)sum, (unsigned)want_sum, (unsigned)crc, (unsigned)want_crc);
            cf_test_failures++;
        }
    }
    /* the lanes of the vector sum do not wrap before the 32-bit total does */
    memset(buf, 0xFF, n);
    uint32_t sum = 0xFFFFFF00u, crc = 0;
    cf__sum_crc32c(&sum, &crc, buf, n);
    CHECK_EQ_INT(sum, (uint32_t)(((uint64_t)n * 255u + 0xFFFFFF00u) & 0xFFFFFFFFu));
    CHECK_EQ_INT(crc, cf__crc32c_sw(0, buf, n));
    free(buf);
}

CF_TESTS(
    CF_TEST(test_sysv_worked_examples),
    CF_TEST(test_sysv_embedded_blobs),
    CF_TEST(test_sysv_every_fixture_header),
    CF_TEST(test_sysv_random_lengths_and_wrap),
    CF_TEST(test_crc32c_vectors),
    CF_TEST(test_crc32c_sw_equals_hw),
    CF_TEST(test_crc32c_chaining),
    CF_TEST(test_crc32c_combine_random_splits),
    CF_TEST(test_crc32c_combine_huge_lengths),
    CF_TEST(test_sum_crc32c_equals_both)
)
