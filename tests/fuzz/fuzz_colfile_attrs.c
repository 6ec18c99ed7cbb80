/* fuzz_colfile_attrs.c - `colfile-attrs` and the merge of the three
 * attribute files (docs/format.md 7.5, 8.2).
 *
 * Input: legacy `attr` bytes, FUZZ_SEP, attr-v2 text, FUZZ_SEP,
 * colfile-attrs text (missing pieces are empty files).  They are loaded as
 * a column loads them (src/column/column_attrs.c: attr, then attr-v2, then
 * colfile-attrs, later files winning), then saved as a column saves them:
 * what bigfile can read back to attr-v2, the rest to colfile-attrs.  The
 * two texts must hold disjoint names, attr-v2 only what bigfile can read,
 * and loading them again must give the merged set. */
#include "fuzz_attrs_common.h"

/* The rule of cf__column_save_attrs (static in src/column/column_attrs.c):
 * bigfile keeps 7 characters of a token and fails on nmemb 0. */
static int bigfile_readable(const cf__attr *a) { return a->nmemb > 0 && strlen(a->dtype) <= 7; }
static int bigfile_unreadable(const cf__attr *a) { return !bigfile_readable(a); }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *p = data, *end = data + size, *piece[3];
    size_t len[3];
    for (int i = 0; i < 3; i++) fuzz_next_piece(&p, end, &piece[i], &len[i]);
    char *file[3];
    for (int i = 0; i < 3; i++) file[i] = fuzz_copy(piece[i], len[i]);

    cf_error err;
    cf__attrset v1, merged;
    cf__attrset_init(&v1);
    cf__attrset_init(&merged);
    int rc = cf__attrset_parse_v1(&v1, (const unsigned char *)file[0], len[0], "fuzz/attr", &err);
    for (size_t i = 0; rc == 0 && i < v1.count; i++) {
        const cf__attr *a = &v1.items[i];
        rc = cf__attrset_set(&merged, a->name, a->dtype, a->nmemb, a->data, &err);
        FUZZ_CHECK(rc == 0, "v1 attribute `%s' refused by the set: %s", a->name, err.message);
    }
    if (rc == 0) rc = cf__attrset_parse_v2(&merged, file[1], len[1], "fuzz/attr-v2", &err);
    if (rc == 0) rc = cf__attrset_parse_v2(&merged, file[2], len[2], "fuzz/colfile-attrs", &err);
    if (rc) {
        FUZZ_CHECK(rc == CF_EFORMAT, "unexpected error %d: %s", rc, err.message);
        goto done;
    }
    fuzz_attrset_check(&merged);

    char *text[2];
    size_t tlen[2];
    FUZZ_CHECK(cf__attrset_format_v2(&merged, bigfile_readable, &text[0], &tlen[0], &err) == 0, "format: %s",
               err.message);
    FUZZ_CHECK(cf__attrset_format_v2(&merged, bigfile_unreadable, &text[1], &tlen[1], &err) == 0, "format: %s",
               err.message);
    cf__attrset part[2], back;
    cf__attrset_init(&back);
    for (int i = 0; i < 2; i++) {
        cf__attrset_init(&part[i]);
        FUZZ_CHECK(cf__attrset_parse_v2(&part[i], text[i], tlen[i], "fuzz/saved", &err) == 0,
                   "saved file %d does not parse: %s", i, err.message);
        FUZZ_CHECK(cf__attrset_parse_v2(&back, text[i], tlen[i], "fuzz/saved", &err) == 0,
                   "saved file %d does not parse: %s", i, err.message);
    }
    for (size_t i = 0; i < part[0].count; i++) {
        FUZZ_CHECK(bigfile_readable(&part[0].items[i]), "attr-v2 got `%s' (%s x %lld)", part[0].items[i].name,
                   part[0].items[i].dtype, (long long)part[0].items[i].nmemb);
        FUZZ_CHECK(!cf__attrset_find(&part[1], part[0].items[i].name), "`%s' saved in both files",
                   part[0].items[i].name);
    }
    FUZZ_CHECK(part[0].count + part[1].count == merged.count, "save lost attributes");
    fuzz_attrset_same(&merged, &back, "save and load");
    for (int i = 0; i < 2; i++) {
        free(text[i]);
        cf__attrset_free(&part[i]);
    }
    cf__attrset_free(&back);
done:
    for (int i = 0; i < 3; i++) free(file[i]);
    cf__attrset_free(&v1);
    cf__attrset_free(&merged);
    return 0;
}
