/* fuzz_attrs_common.h - checks on attribute sets shared by the attribute
 * targets (fuzz_attr_v2.c, fuzz_attr_v1.c, fuzz_colfile_attrs.c). */
#ifndef CF_FUZZ_ATTRS_COMMON_H
#define CF_FUZZ_ATTRS_COMMON_H

#include "fuzz.h"

#include "attrs.h"

/* What every set must satisfy: names valid, sorted and unique, each dtype
 * the normalised form of its parsed type, data present when non-empty. */
static inline void fuzz_attrset_check(const cf__attrset *s)
{
    for (size_t i = 0; i < s->count; i++) {
        const cf__attr *a = &s->items[i];
        FUZZ_CHECK(a->name && a->name[0] && !strpbrk(a->name, " \t\n\r"), "bad name in set");
        if (i) FUZZ_CHECK(strcmp(s->items[i - 1].name, a->name) < 0, "set not sorted/unique at `%s'", a->name);
        char token[CF_DTYPE_MAX];
        cf__dtype_format(&a->type, token);
        FUZZ_CHECK(strcmp(token, a->dtype) == 0, "dtype `%s' but type formats as `%s'", a->dtype, token);
        FUZZ_CHECK(a->type.order == '<' || a->type.order == '>', "order of `%s'", a->name);
        FUZZ_CHECK(a->nmemb >= 0 && a->type.width >= 1, "size of `%s'", a->name);
        FUZZ_CHECK(a->nmemb == 0 || a->data != NULL, "no data for `%s'", a->name);
    }
}

static inline int fuzz_attr_same(const cf__attr *a, const cf__attr *b)
{
    size_t n = (size_t)a->nmemb * (size_t)a->type.width;
    return strcmp(a->name, b->name) == 0 && strcmp(a->dtype, b->dtype) == 0 &&
           cf__dtype_equal(&a->type, &b->type) && a->nmemb == b->nmemb &&
           (n == 0 || memcmp(a->data, b->data, n) == 0);
}

static inline void fuzz_attrset_same(const cf__attrset *a, const cf__attrset *b, const char *what)
{
    FUZZ_CHECK(a->count == b->count, "%s: %zu attributes became %zu", what, a->count, b->count);
    for (size_t i = 0; i < a->count; i++)
        FUZZ_CHECK(fuzz_attr_same(&a->items[i], &b->items[i]), "%s: attribute `%s' changed", what,
                   a->items[i].name);
}

/* attr-v2 text of s must parse back to s, and format again to the same
 * bytes. */
static inline void fuzz_attrset_v2_roundtrip(const cf__attrset *s)
{
    cf_error err;
    char *text, *text2;
    size_t len, len2;
    FUZZ_CHECK(cf__attrset_format_v2(s, NULL, &text, &len, &err) == 0, "format_v2: %s", err.message);
    FUZZ_CHECK(strlen(text) == len, "format_v2 length (NUL in a name?)");
    cf__attrset back;
    cf__attrset_init(&back);
    int rc = cf__attrset_parse_v2(&back, text, len, "fuzz/formatted", &err);
    if (rc) fuzz_dump("formatted attr-v2", text, len);
    FUZZ_CHECK(rc == 0, "formatted attr-v2 does not parse: %s", err.message);
    fuzz_attrset_same(s, &back, "attr-v2 round trip");
    FUZZ_CHECK(cf__attrset_format_v2(&back, NULL, &text2, &len2, &err) == 0, "format_v2: %s", err.message);
    FUZZ_CHECK(len == len2 && memcmp(text, text2, len) == 0, "attr-v2 formats differently the second time");
    free(text);
    free(text2);
    cf__attrset_free(&back);
}

/* The attributes a v1 file can hold (bigfile reads v1 tokens like header
 * tokens: explicit order, kind S b i f u c, width 1..16). */
static inline int fuzz_v1_storable(const cf__attr *a)
{
    return strchr("Sbifuc", a->type.kind) && a->type.width <= 16 && a->nmemb <= INT32_MAX;
}

/* The v1-storable attributes of s, written as a v1 file and read back. */
static inline void fuzz_attrset_v1_roundtrip(const cf__attrset *s)
{
    cf_error err;
    unsigned char *bytes;
    size_t len;
    FUZZ_CHECK(cf__attrset_format_v1(s, fuzz_v1_storable, &bytes, &len, &err) == 0, "format_v1: %s", err.message);
    cf__attrset back;
    cf__attrset_init(&back);
    int rc = cf__attrset_parse_v1(&back, bytes, len, "fuzz/formatted", &err);
    if (rc) fuzz_dump("formatted attr", bytes, len);
    FUZZ_CHECK(rc == 0, "formatted v1 attr does not parse: %s", err.message);
    size_t k = 0;
    for (size_t i = 0; i < s->count; i++) {
        if (!fuzz_v1_storable(&s->items[i])) continue;
        FUZZ_CHECK(k < back.count && fuzz_attr_same(&s->items[i], &back.items[k]), "v1 round trip changed `%s'",
                   s->items[i].name);
        k++;
    }
    FUZZ_CHECK(k == back.count, "v1 round trip added attributes");
    free(bytes);
    cf__attrset_free(&back);
}

#endif
