/* colfile_errors.h - the numbered list of colfile error codes.
 *
 * Every libcolfile function that can fail returns 0 on success or one of the
 * negative codes below, and fills the caller's cf_error record (colfile.h).
 * The values are stable: they are part of the ABI and never renumbered.
 */
#ifndef COLFILE_ERRORS_H
#define COLFILE_ERRORS_H

#ifdef __cplusplus
extern "C" {
#endif

/* X(NAME, value, short description) -- one list gives the enum and the names. */
#define CF_ERROR_LIST(X)                                                    \
    X(CF_OK,        0,  "success")                                          \
    X(CF_EIO,      -1,  "input/output error")                               \
    X(CF_ENOENT,   -2,  "no such file, column or attribute")                \
    X(CF_EEXIST,   -3,  "already exists")                                   \
    X(CF_ENAME,    -4,  "invalid name")                                     \
    X(CF_EDTYPE,   -5,  "invalid or unsupported dtype")                     \
    X(CF_ECAST,    -6,  "unsupported conversion")                           \
    X(CF_EFORMAT,  -7,  "malformed metadata file")                          \
    X(CF_ERANGE,   -8,  "rows out of range")                                \
    X(CF_ENOMEM,   -9,  "out of memory")                                    \
    X(CF_EARG,     -10, "invalid argument")                                 \
    X(CF_ECHECKSUM,-11, "checksum mismatch")                                \
    X(CF_EREADONLY,-12, "opened read-only")                                 \
    X(CF_ESHORT,   -13, "data file shorter than its header says")          \
    X(CF_ENOTFILE, -14, "not a colfile/bigfile File")                       \
    X(CF_EKIND,    -15, "operation does not fit this kind of column")      \
    X(CF_ETORN,    -16, "column may be torn by an interrupted update")     \
    X(CF_EBUSY,    -17, "being written by another process")                \
    X(CF_EREPLACED,-18, "column replaced or removed since it was opened")

enum cf_error_code {
#define CF__ERROR_ENUM(name, value, text) name = value,
    CF_ERROR_LIST(CF__ERROR_ENUM)
#undef CF__ERROR_ENUM
    CF__ERROR_LAST = -18
};

/* The symbolic name of an error code ("CF_ENOENT"), or "CF_UNKNOWN". */
#if defined(__GNUC__)
#define CF__ERRORS_API __attribute__((visibility("default")))
#else
#define CF__ERRORS_API
#endif

CF__ERRORS_API const char *cf_error_name(int code);

/* A short description of an error code ("no such file, column or attribute"). */
CF__ERRORS_API const char *cf_error_text(int code);

#ifdef __cplusplus
}
#endif
#endif /* COLFILE_ERRORS_H */
