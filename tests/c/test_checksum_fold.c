/* test_checksum_fold.c - the carry-less folding CRC32C and byte sum of
 * src/common/checksum.c (512-bit VPCLMULQDQ where the CPU has it) against
 * the tables and a byte loop: lengths at and around its threshold and its
 * 512-byte windows, every start alignment, random running states. */
#include "harness.h"

#include "checksum.h"

static uint64_t rng(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * UINT64_C(2685821657736338717);
}

static uint32_t sysv_slow(uint32_t sum, const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++) sum += p[i];
    return sum;
}

static void check_one(const unsigned char *p, size_t len, uint32_t sum0, uint32_t crc0)
{
    uint32_t sum = sum0, crc = crc0;
    cf__sum_crc32c(&sum, &crc, p, len);
    uint32_t want = cf__crc32c_sw(crc0, p, len);
    if (sum != sysv_slow(sum0, p, len) || crc != want || cf__crc32c_update(crc0, p, len) != want ||
        cf__crc32c_hw(crc0, p, len) != want) {
        fprintf(stderr, "len %zu start %u: crc %08x want %08x\n", len, (unsigned)((uintptr_t)p % 64),
                (unsigned)crc, (unsigned)want);
        cf_test_failures++;
    }
}

static void test_fold_window_edges(void)
{
    uint64_t s = 0x5EED;
    size_t cap = (size_t)40 << 10;
    unsigned char *buf = malloc(cap + 128);
    CHECK(buf != NULL);
    if (!buf) return;
    for (size_t i = 0; i < cap + 128; i++) buf[i] = (unsigned char)(rng(&s) >> 56);
    /* around the threshold (4 KiB) and around whole windows of 512 bytes */
    for (size_t base = 4096 - 520; base <= (size_t)36 << 10; base += base < 8192 ? 512 : 4096)
        for (size_t d = 0; d < 12; d++) {
            size_t len = base - 5 + d;
            check_one(buf + (len % 61), len, (uint32_t)rng(&s), (uint32_t)rng(&s));
        }
    /* every start alignment of a cache line, state 0 and ~0 */
    for (size_t off = 0; off < 64; off++) {
        check_one(buf + off, 9000, 0, 0);
        check_one(buf + off, 9000, 0xFFFFFFFFu, 0xFFFFFFFFu);
    }
    free(buf);
}

/* Bytes all 0xFF and all 0x00 (extreme lanes, a CRC that cycles through the
 * same state), continued across calls. */
static void test_fold_uniform_bytes_and_chaining(void)
{
    size_t n = (size_t)64 << 10;
    unsigned char *buf = malloc(n);
    CHECK(buf != NULL);
    if (!buf) return;
    for (int v = 0; v < 2; v++) {
        memset(buf, v ? 0xFF : 0x00, n);
        check_one(buf, n, 0xFFFFFF00u, 0);
        uint32_t sum = 0, crc = 0;
        cf__sum_crc32c(&sum, &crc, buf, 5000);
        cf__sum_crc32c(&sum, &crc, buf + 5000, n - 5000);
        CHECK_EQ_INT(crc, cf__crc32c_sw(0, buf, n));
        CHECK_EQ_INT(sum, sysv_slow(0, buf, n));
    }
    free(buf);
}

CF_TESTS(
    CF_TEST(test_fold_window_edges),
    CF_TEST(test_fold_uniform_bytes_and_chaining)
)
