/* names.c - which column, group and attribute-block names are acceptable.
 *
 * bigfile 0.1.52 only refused whitespace in the joined path, so `../x`
 * escaped the File and '' turned the File root into a column.  colfile
 * checks every name before anything is created. */
#include <limits.h>
#include <string.h>

#include "error.h"

/* Longest name accepted: leaves room for the File path and "/header". */
#define CF__NAME_MAX 3072
/* Longest single component most file systems accept. */
#define CF__COMPONENT_MAX 255

static const char *forbidden_char_name(char ch)
{
    switch (ch) {
    case ' ': return "a space";
    case '\t': return "a tab";
    case '\n': return "a newline";
    case '\r': return "a carriage return";
    default: return NULL;
    }
}

/* A directory with one of these names would collide with a metadata file
 * (a directory called `header` would even make its parent a column). */
static int is_reserved_component(const char *p, size_t len)
{
    static const char *const exact[] = { "header", "attr", "attr-v2" };
    for (size_t i = 0; i < sizeof exact / sizeof *exact; i++)
        if (len == strlen(exact[i]) && memcmp(p, exact[i], len) == 0) return 1;
    return (len >= 8 && memcmp(p, "colfile-", 8) == 0) || (len >= 8 && memcmp(p, ".colfile", 8) == 0);
}

int cf_name_check(const char *name, cf_error *err)
{
    if (!name) return CF_FAIL(err, CF_ENAME, "invalid name: NULL");
    size_t n = strlen(name);
    if (n == 0) return CF_FAIL(err, CF_ENAME, "invalid name '': a name must not be empty");
    if (n > CF__NAME_MAX)
        return CF_FAIL(err, CF_ENAME, "invalid name '%.40s...': longer than %d bytes", name, CF__NAME_MAX);
    for (size_t i = 0; i < n; i++) {
        const char *what = forbidden_char_name(name[i]);
        if (what)
            return CF_FAIL(err, CF_ENAME, "invalid name '%s': contains %s at byte %zu", name, what, i);
        if ((unsigned char)name[i] < 0x20 || name[i] == 0x7f)
            return CF_FAIL(err, CF_ENAME, "invalid name '%s': contains control character 0x%02X at byte %zu",
                           name, (unsigned)(unsigned char)name[i], i);
    }
    if (strcmp(name, ".") == 0) return 0;      /* the File's own attributes */
    if (name[0] == '/')
        return CF_FAIL(err, CF_ENAME, "invalid name '%s': must be relative to the File, not absolute", name);
    /* Walk the components. */
    const char *p = name;
    while (1) {
        const char *slash = strchr(p, '/');
        size_t len = slash ? (size_t)(slash - p) : strlen(p);
        int last = slash == NULL;
        if (len == 0)
            return CF_FAIL(err, CF_ENAME, "invalid name '%s': empty path component (leading, trailing or doubled '/')", name);
        if (len > CF__COMPONENT_MAX)
            return CF_FAIL(err, CF_ENAME, "invalid name '%s': a component is longer than %d bytes", name, CF__COMPONENT_MAX);
        if (len == 2 && p[0] == '.' && p[1] == '.')
            return CF_FAIL(err, CF_ENAME, "invalid name '%s': '..' would leave the File", name);
        if (len == 1 && p[0] == '.' && !last)
            return CF_FAIL(err, CF_ENAME, "invalid name '%s': '.' is only allowed as the last component (group attributes)", name);
        if (is_reserved_component(p, len))
            return CF_FAIL(err, CF_ENAME, "invalid name '%s': component '%.*s' is reserved for metadata files",
                           name, (int)len, p);
        if (last) break;
        p = slash + 1;
    }
    return 0;
}
