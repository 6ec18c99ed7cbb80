/* fuzz_convert.c - value conversion between dtypes (src/format/dtype_convert.c cf__convert).
 *
 * Not a parser, but it turns file bytes into values: NaN, infinities and
 * out-of-range floats meet integer conversions whose C form is undefined,
 * which UBSan reports.  Input: byte 0 picks the source dtype, byte 1 the
 * destination, byte 2 the strides, the rest is source data.  Checks: a
 * conversion to the same dtype copies, swapping the byte order twice gives
 * the bytes back, and an in-place conversion (same width and stride)
 * equals the out-of-place one. */
#include "fuzz.h"

#include "dtype.h"

static const char *const tokens[] = {
    "<i1", "<i2", "<i4", "<i8", "<u1", "<u2", "<u4", "<u8", "<f2", "<f4", "<f8", "<c8", "<c16", "<b1",
    ">i1", ">i2", ">i4", ">i8", ">u1", ">u2", ">u4", ">u8", ">f2", ">f4", ">f8", ">c8", ">c16", ">b1",
    "<S1", "<S3", "<S8", "<S16", "<S17",
};
#define NTOKENS (sizeof tokens / sizeof *tokens)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 3) return 0;
    cf__dtype from, to;
    FUZZ_CHECK(cf__dtype_parse(tokens[data[0] % NTOKENS], CF__DTYPE_USER, &from, NULL, NULL) == 0, "token");
    FUZZ_CHECK(cf__dtype_parse(tokens[data[1] % NTOKENS], CF__DTYPE_USER, &to, NULL, NULL) == 0, "token");
    if (!cf__dtype_can_convert(&from, &to)) return 0;
    /* Strides of one element, or with a gap of up to 7 bytes. */
    size_t sgap = data[2] & 7, dgap = (data[2] >> 3) & 7;
    size_t ss = (size_t)from.width + sgap, ds = (size_t)to.width + dgap;
    data += 3;
    size -= 3;
    size_t n = size / ss;
    if (n == 0) return 0;

    unsigned char *src = (unsigned char *)fuzz_copy(data, n * ss);
    unsigned char *dst = calloc(n, ds);
    unsigned char *back = calloc(n, ss);
    if (!dst || !back) abort();
    cf__convert(dst, (ptrdiff_t)ds, &to, src, (ptrdiff_t)ss, &from, n);

    if (cf__dtype_equal(&from, &to)) {
        for (size_t i = 0; i < n; i++)
            FUZZ_CHECK(memcmp(dst + i * ds, src + i * ss, (size_t)to.width) == 0, "same dtype changed element %zu", i);
    }
    if (from.kind == to.kind && from.width == to.width) {
        /* The other byte order and back. */
        cf__convert(back, (ptrdiff_t)ss, &from, dst, (ptrdiff_t)ds, &to, n);
        for (size_t i = 0; i < n; i++)
            FUZZ_CHECK(memcmp(back + i * ss, src + i * ss, (size_t)from.width) == 0,
                       "%s -> %s -> %s changed element %zu", tokens[data[-3] % NTOKENS],
                       tokens[data[-2] % NTOKENS], tokens[data[-3] % NTOKENS], i);
    }
    if (from.width == to.width) {
        memcpy(back, src, n * ss);
        cf__convert(back, (ptrdiff_t)ss, &to, back, (ptrdiff_t)ss, &from, n);
        unsigned char *ref = calloc(n, ss);
        if (!ref) abort();
        cf__convert(ref, (ptrdiff_t)ss, &to, src, (ptrdiff_t)ss, &from, n);
        for (size_t i = 0; i < n; i++)
            FUZZ_CHECK(memcmp(back + i * ss, ref + i * ss, (size_t)to.width) == 0, "in-place differs at %zu", i);
        free(ref);
    }
    free(src);
    free(dst);
    free(back);
    return 0;
}
