/* file.h - the File handle (internal). */
#ifndef CF_FILE_H
#define CF_FILE_H

#include "catalog.h"
#include "colfile.h"

struct cf_file {
    char *path;    /* as given by the caller */
    int writable;
    int flags;     /* the cf_open_flags it was opened with */
    cf__catalog *catalog; /* loaded at open (NULL: none or unusable); read only */
};

/* 1 unless the File was opened with CF_OPEN_NODURABLE. */
#define CF__DURABLE(f) (((f)->flags & CF_OPEN_NODURABLE) == 0)

/* 1 if `name` is a file name colfile or bigfile may keep in a column or
 * group directory: header, attr, attr-v2, a blob (6+ uppercase hex digits),
 * colfile-* extension files, or a hidden .colfile / temporary file. */
int cf__is_format_file_name(const char *name);

#endif
