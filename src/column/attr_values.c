/* attr_values.c - attribute values as C types: strings, and numbers
 * converted to the dtype the caller asks for.  Built on cf_column_attr_set
 * and cf_column_attr_get; the stored bytes are exactly theirs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "column.h"
#include "dtype.h"
#include "error.h"

int cf_column_attr_set_string(cf_column *c, const char *name, const char *value, cf_error *err)
{
    if (!c || !name || !value) return CF_FAIL(err, CF_EARG, "cf_column_attr_set_string: NULL argument");
    size_t n = strlen(value);
    /* As Python's str: <a1, one element per byte.  The empty string is one
     * NUL byte, because bigfile cannot read an attribute of 0 elements. */
    return cf_column_attr_set(c, name, "a1", n ? (int64_t)n : 1, n ? value : "", err);
}

int cf_column_attr_get_string(cf_column *c, const char *name, char **value, size_t *len, cf_error *err)
{
    if (!c || !name || !value) return CF_FAIL(err, CF_EARG, "cf_column_attr_get_string: NULL argument");
    const char *dtype;
    int64_t nmemb;
    const void *data;
    int rc = cf_column_attr_get(c, name, &dtype, &nmemb, &data, err);
    if (rc) return rc;
    cf__dtype t;
    if ((rc = cf__dtype_parse(dtype, CF__DTYPE_ATTR, &t, cf__column_attr_dir(c), err))) return rc;
    /* One string: a byte string of any count (a1 x n, S1 x n: the
     * characters), or a single fixed-width S element. */
    if (!(t.kind == 'a' || (t.kind == 'S' && (t.width == 1 || nmemb == 1))))
        return CF_FAIL(err, CF_EDTYPE,
                       "%s: attribute '%s' is %lld element(s) of %s, not a string; read it with "
                       "cf_column_attr_get or cf_column_attr_get_as",
                       cf__column_attr_dir(c), name, (long long)nmemb, dtype);
    size_t n = (size_t)(nmemb * t.width);
    while (n > 0 && ((const char *)data)[n - 1] == '\0') n--; /* NUL padding, and "" stored as one NUL */
    char *s = malloc(n + 1);
    if (!s) return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", cf__column_attr_dir(c));
    if (n) memcpy(s, data, n);
    s[n] = '\0';
    *value = s;
    if (len) *len = n;
    return 0;
}

int cf_column_attr_get_as(cf_column *c, const char *name, const char *dtype, void *buf, int64_t capacity,
                          int64_t *nmemb, cf_error *err)
{
    if (!c || !name || !dtype || (capacity > 0 && !buf))
        return CF_FAIL(err, CF_EARG, "cf_column_attr_get_as: NULL argument");
    if (capacity < 0)
        return CF_FAIL(err, CF_EARG, "%s: attribute '%s': negative capacity %lld", cf__column_attr_dir(c), name,
                       (long long)capacity);
    const char *stored;
    int64_t count;
    const void *data;
    int rc = cf_column_attr_get(c, name, &stored, &count, &data, err);
    if (rc) return rc;
    cf__dtype from, to;
    char ctx[CF_ERROR_MESSAGE_MAX / 2]; /* "<dir>: attribute '<name>'", cut if very long */
    snprintf(ctx, sizeof ctx, "%s: attribute '%s'", cf__column_attr_dir(c), name);
    if ((rc = cf__dtype_parse(dtype, CF__DTYPE_USER, &to, ctx, err))) return rc;
    if ((rc = cf__dtype_parse(stored, CF__DTYPE_ATTR, &from, ctx, err))) return rc;
    if (nmemb ? count > capacity : count != capacity)
        return CF_FAIL(err, CF_ERANGE, "%s has %lld element(s) (%s); the buffer %s %lld", ctx, (long long)count,
                       stored, nmemb ? "holds only" : "expects exactly", (long long)capacity);
    if (!cf__dtype_can_convert(&from, &to)) {
        char want[CF_DTYPE_MAX];
        cf__dtype_format(&to, want);
        return CF_FAIL(err, CF_ECAST, "%s is %s and cannot be converted to %s", ctx, stored, want);
    }
    cf__convert(buf, (ptrdiff_t)to.width, &to, data, (ptrdiff_t)from.width, &from, (size_t)count);
    if (nmemb) *nmemb = count;
    return 0;
}
