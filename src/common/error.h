/* error.h - filling the caller's cf_error record (internal). */
#ifndef CF_ERROR_INTERNAL_H
#define CF_ERROR_INTERNAL_H

#include "colfile_binding.h"

/* Fill *err (if not NULL) with code, source location and a printf-style
 * message, and return code so that callers can write
 *     return CF_FAIL(err, CF_EIO, "%s: cannot open: %s", path, strerror(e)); */
int cf__fail(cf_error *err, int code, const char *source_file, int source_line,
             const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;

#define CF_FAIL(err, code, ...) cf__fail((err), (code), __FILE__, __LINE__, __VA_ARGS__)

/* Put `prefix` and `sep` before the message of the failure rc that *err
 * holds (if err is not NULL and rc is not 0), keeping its source location;
 * return rc.  For a caller that knows what the callee's message lacks:
 *     return cf__error_prefix(err, cf_name_check(name, err), root, ": "); */
int cf__error_prefix(cf_error *err, int rc, const char *prefix, const char *sep);

/* Map an errno value to the closest CF_E* code (ENOENT -> CF_ENOENT, ENOMEM ->
 * CF_ENOMEM, EEXIST -> CF_EEXIST, else CF_EIO). */
int cf__errno_code(int errnum);

#endif
