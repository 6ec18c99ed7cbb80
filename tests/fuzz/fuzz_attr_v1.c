/* fuzz_attr_v1.c - the legacy binary `attr` parser (src/format/attrs.c).
 *
 * Input: the bytes of a v1 `attr` file.  An accepted file gives a valid set
 * of v1-storable attributes that round-trips through the v1 writer and,
 * as bigfile and colfile save it, through attr-v2. */
#include "fuzz_attrs_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cf_error err;
    cf__attrset s;
    cf__attrset_init(&s);
    unsigned char *bytes = (unsigned char *)fuzz_copy(data, size);
    int rc = cf__attrset_parse_v1(&s, bytes, size, "fuzz/attr", &err);
    free(bytes);
    if (rc) {
        FUZZ_CHECK(rc == CF_EFORMAT, "unexpected error %d: %s", rc, err.message);
        FUZZ_CHECK(s.count == 0, "failed parse changed the set");
        return 0;
    }
    fuzz_attrset_check(&s);
    for (size_t i = 0; i < s.count; i++)
        FUZZ_CHECK(fuzz_v1_storable(&s.items[i]), "v1 parser accepted `%s' of dtype %s", s.items[i].name,
                   s.items[i].dtype);
    fuzz_attrset_v1_roundtrip(&s);
    fuzz_attrset_v2_roundtrip(&s);
    cf__attrset_free(&s);
    return 0;
}
