/* fuzz_attr_v2.c - the attr-v2 attribute parser (src/format/attrs.c).
 *
 * Input: the bytes of an attr-v2 file.  An accepted file gives a valid
 * set; parsing it a second time into the same set changes nothing (later
 * lines win, so merging a file with itself is idempotent); the set formats
 * to attr-v2 text that parses back to it, and its v1-storable part does the
 * same through the legacy format.  A rejected file leaves the set as it
 * was. */
#include "fuzz_attrs_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cf_error err;
    cf__attrset s, again;
    cf__attrset_init(&s);
    cf__attrset_init(&again);
    char *text = fuzz_copy(data, size);

    /* A set that already holds something, to exercise the merge. */
    static const unsigned char one[8] = { 1 };
    FUZZ_CHECK(cf__attrset_set(&s, "Old", "<i8", 1, one, &err) == 0, "set: %s", err.message);
    int rc = cf__attrset_parse_v2(&s, text, size, "fuzz/attr-v2", &err);
    if (rc) {
        FUZZ_CHECK(rc == CF_EFORMAT, "unexpected error %d: %s", rc, err.message);
        FUZZ_CHECK(s.count == 1 && strcmp(s.items[0].name, "Old") == 0, "failed parse changed the set");
        goto done;
    }
    fuzz_attrset_check(&s);
    for (size_t i = 0; i < s.count; i++) {
        const cf__attr *a = &s.items[i];
        FUZZ_CHECK(cf__attrset_set(&again, a->name, a->dtype, a->nmemb, a->data, &err) == 0, "set `%s': %s",
                   a->name, err.message);
    }
    FUZZ_CHECK(cf__attrset_parse_v2(&again, text, size, "fuzz/attr-v2", &err) == 0, "second parse: %s",
               err.message);
    fuzz_attrset_same(&s, &again, "parsing twice");
    fuzz_attrset_v2_roundtrip(&s);
    fuzz_attrset_v1_roundtrip(&s);
done:
    free(text);
    cf__attrset_free(&s);
    cf__attrset_free(&again);
    return 0;
}
