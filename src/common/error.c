/* error.c - error records and the names of the error codes. */
#include "error.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int cf__fail(cf_error *err, int code, const char *source_file, int source_line,
             const char *fmt, ...)
{
    if (err) {
        va_list ap;
        err->code = code;
        err->source_file = source_file;
        err->source_line = source_line;
        va_start(ap, fmt);
        vsnprintf(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
    }
    return code;
}

int cf__error_prefix(cf_error *err, int rc, const char *prefix, const char *sep)
{
    if (rc && err) {
        char message[sizeof err->message];
        snprintf(message, sizeof message, "%s%s%s", prefix, sep, err->message);
        memcpy(err->message, message, sizeof message);
        err->code = rc;
    }
    return rc;
}

int cf__errno_code(int errnum)
{
    switch (errnum) {
    case ENOENT: return CF_ENOENT;
    case ENOMEM: return CF_ENOMEM;
    case EEXIST: return CF_EEXIST;
    case ENOTDIR: return CF_ENOTFILE;
    default: return CF_EIO;
    }
}

const char *cf_error_name(int code)
{
    switch (code) {
#define CF__ERROR_NAME(name, value, text) case value: return #name;
        CF_ERROR_LIST(CF__ERROR_NAME)
#undef CF__ERROR_NAME
    default: return "CF_UNKNOWN";
    }
}

const char *cf_error_text(int code)
{
    switch (code) {
#define CF__ERROR_TEXT(name, value, text) case value: return text;
        CF_ERROR_LIST(CF__ERROR_TEXT)
#undef CF__ERROR_TEXT
    default: return "unknown error";
    }
}
