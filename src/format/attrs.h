/* attrs.h - attribute sets and the attr-v2 / legacy attr file formats (internal).
 *
 * An attribute is a name, a dtype token, nmemb and nmemb*width raw bytes in
 * the token's byte order.  A set keeps its attributes sorted by name
 * (strcmp), as bigfile does, so that formatting is deterministic.
 */
#ifndef CF_ATTRS_H
#define CF_ATTRS_H

#include <stddef.h>
#include <stdint.h>

#include "colfile.h"
#include "dtype.h"

typedef struct cf__attr {
    char *name;                  /* malloc'd */
    char dtype[CF_DTYPE_MAX];    /* normalised token, e.g. "<a1", ">f8" */
    cf__dtype type;              /* parsed form of dtype */
    int64_t nmemb;
    unsigned char *data;         /* malloc'd, nmemb * type.width bytes (may be NULL if 0) */
} cf__attr;

typedef struct cf__attrset {
    cf__attr *items;             /* sorted by name */
    size_t count, capacity;
} cf__attrset;

void cf__attrset_init(cf__attrset *s);
void cf__attrset_free(cf__attrset *s);

/* The attribute called name, or NULL. */
cf__attr *cf__attrset_find(const cf__attrset *s, const char *name);

/* Insert or replace (copying name and data).  The name must be non-empty
 * and hold no space, tab, newline, CR or NUL (CF_ENAME); the dtype is parsed
 * with CF__DTYPE_ATTR rules (CF_EDTYPE).  CF_ENOMEM. */
int cf__attrset_set(cf__attrset *s, const char *name, const char *dtype,
                    int64_t nmemb, const void *data, cf_error *err);

/* Remove; returns 1 if it was there, 0 if not. */
int cf__attrset_remove(cf__attrset *s, const char *name);

/* Parse attr-v2 text (len bytes, need not be NUL terminated) and merge it
 * into s (later lines replace earlier ones and existing entries).  Accepts
 * what bigfile 0.1.52 accepts (lowercase hex, CRLF, missing final LF,
 * space or tab separators) and, unlike it, nmemb 0 lines, blank lines and
 * a line ending right after the hex.  Rejects with CF_EFORMAT a message
 * "<path>:<line>: <problem>" for: missing fields, a bad dtype, a negative
 * or non-numeric nmemb, hex of the wrong length or with non-hex digits.
 * Never reads outside text[0..len). */
int cf__attrset_parse_v2(cf__attrset *s, const char *text, size_t len,
                         const char *path, cf_error *err);

/* Parse a legacy binary `attr` file (records of int32 nmemb, int32 name
 * length, char dtype[8], name, data; little-endian as written on x86) and
 * merge it into s.  CF_EFORMAT "<path>: record N: <problem>" on truncation,
 * negative lengths or a bad dtype. */
int cf__attrset_parse_v1(cf__attrset *s, const unsigned char *bytes, size_t len,
                         const char *path, cf_error *err);

/* Format the attributes of s for which keep(attr) is true (keep NULL: all)
 * as attr-v2 text, byte-identical to what bigfile 0.1.52 writes for the
 * same attributes (including the #HUMANE comment).  *text is malloc'd
 * (NUL terminated, *len bytes without the NUL).  CF_ENOMEM. */
int cf__attrset_format_v2(const cf__attrset *s, int (*keep)(const cf__attr *),
                          char **text, size_t *len, cf_error *err);

/* Format the attributes for which keep(attr) is true as a legacy v1 `attr`
 * file (used only to rewrite an existing one without deleted entries). */
int cf__attrset_format_v1(const cf__attrset *s, int (*keep)(const cf__attr *),
                          unsigned char **bytes, size_t *len, cf_error *err);

#endif
