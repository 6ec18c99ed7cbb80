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

/* Map an errno value to the closest CF_E* code (ENOENT -> CF_ENOENT, ENOMEM ->
 * CF_ENOMEM, EEXIST -> CF_EEXIST, else CF_EIO). */
int cf__errno_code(int errnum);

#endif
