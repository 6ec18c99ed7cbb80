/* test_wire.c - little-endian byte buffers (src/common/wire.c): the bytes
 * written are the documented ones, they read back, and a short buffer
 * fails without consuming anything. */
#include "harness.h"
#include "wire.h"

static void test_puts_are_little_endian(void)
{
    cf__wire_out o = { 0 };
    cf__wire_put_u64(&o, UINT64_C(0x0102030405060708));
    cf__wire_put_u32(&o, UINT32_C(0xa1b2c3d4));
    cf__wire_put_bytes(&o, "xyz", 3);
    cf__wire_put(&o, "!", 1);
    static const unsigned char want[] = { 8, 7, 6, 5, 4, 3, 2, 1, 0xd4, 0xc3, 0xb2, 0xa1,
                                          3, 0, 0, 0, 0, 0, 0, 0, 'x', 'y', 'z', '!' };
    CHECK_EQ_INT(o.failed, 0);
    CHECK_EQ_INT(o.len, sizeof want);
    CHECK_EQ_MEM(o.p, want, sizeof want);
    free(o.p);
}

static void test_round_trip(void)
{
    cf__wire_out o = { 0 };
    /* enough to grow the buffer several times */
    for (uint64_t i = 0; i < 1000; i++) {
        cf__wire_put_u64(&o, i * UINT64_C(0x9e3779b97f4a7c15));
        cf__wire_put_u32(&o, (uint32_t)(i * 2654435761u));
    }
    cf__wire_put_bytes(&o, "", 0);
    CHECK_EQ_INT(o.len, 1000 * 12 + 8);
    cf__wire_in in = { o.p, o.p + o.len };
    for (uint64_t i = 0; i < 1000; i++) {
        uint64_t a = 0;
        uint32_t b = 0;
        CHECK_EQ_INT(cf__wire_get_u64(&in, &a), 0);
        CHECK_EQ_INT(cf__wire_get_u32(&in, &b), 0);
        CHECK(a == i * UINT64_C(0x9e3779b97f4a7c15));
        CHECK(b == (uint32_t)(i * 2654435761u));
    }
    const unsigned char *v = NULL;
    size_t n = 99;
    CHECK_EQ_INT(cf__wire_get_bytes(&in, &v, &n), 0);
    CHECK_EQ_INT(n, 0);
    CHECK(in.p == in.end);
    unsigned char u8;
    CHECK_EQ_INT(cf__wire_get_u8(&in, &u8), -1);
    free(o.p);
}

static void test_short_buffers_consume_nothing(void)
{
    static const unsigned char buf[] = { 5, 0, 0, 0, 0, 0, 0, 0, 'a', 'b', 'c' };
    /* a length prefix that claims more bytes than there are */
    cf__wire_in in = { buf, buf + sizeof buf };
    const unsigned char *v = NULL;
    size_t n = 0;
    CHECK_EQ_INT(cf__wire_get_bytes(&in, &v, &n), -1);
    CHECK(in.p == buf);
    /* the same bytes read as numbers: 8 for the u64, then 3 left */
    uint64_t x = 0;
    uint32_t y = 0;
    unsigned char z = 0;
    CHECK_EQ_INT(cf__wire_get_u64(&in, &x), 0);
    CHECK(x == 5);
    CHECK_EQ_INT(cf__wire_get_u32(&in, &y), -1);
    CHECK(in.p == buf + 8);
    CHECK_EQ_INT(cf__wire_get_u8(&in, &z), 0);
    CHECK_EQ_INT(z, 'a');
    /* a length prefix that fits: points into the buffer */
    static const unsigned char two[] = { 2, 0, 0, 0, 0, 0, 0, 0, 'h', 'i', 'x' };
    cf__wire_in in2 = { two, two + sizeof two };
    CHECK_EQ_INT(cf__wire_get_bytes(&in2, &v, &n), 0);
    CHECK_EQ_INT(n, 2);
    CHECK(v == two + 8);
    CHECK(in2.p == two + 10);
}

static void test_failed_buffer_ignores_puts(void)
{
    cf__wire_out o = { 0 };
    cf__wire_put_u32(&o, 7);
    o.failed = 1; /* as after an allocation failure */
    cf__wire_put_u64(&o, 9);
    cf__wire_put_bytes(&o, "abc", 3);
    CHECK_EQ_INT(o.len, 4);
    free(o.p);
}

CF_TESTS(CF_TEST(test_puts_are_little_endian), CF_TEST(test_round_trip), CF_TEST(test_short_buffers_consume_nothing),
         CF_TEST(test_failed_buffer_ignores_puts))
