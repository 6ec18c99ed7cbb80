/* ext.h - colfile's extension file `colfile-v1` in a column directory
 * (internal).  It records the CRC32C of each blob together with the header
 * facts it was computed for, so a later write by a tool that does not know
 * this file (bigfile) makes the record stale instead of wrong.  Its tail
 * may hold the column's statistics (stats.h), so that a column has one
 * extension file, not two.  Format: docs/format.md, "colfile-v1". */
#ifndef CF_EXT_H
#define CF_EXT_H

#include <stdint.h>

#include "header.h"

#define CF__EXT_NAME "colfile-v1"

typedef struct cf__ext {
    cf__header header;    /* what the header said when the CRCs were taken */
    uint32_t *crc;        /* header.nfile entries */
    unsigned char *known; /* 1 if crc[i] was recorded */
} cf__ext;

void cf__ext_free(cf__ext *x);

/* Parse the extension file text.  CF_EFORMAT "<path>:<line>: ..." when damaged. */
int cf__ext_parse(cf__ext *x, const char *text, size_t len, const char *path, cf_error *err);

/* Format for the given header, CRCs and known flags.  *text malloc'd. */
int cf__ext_format(const cf__header *h, const uint32_t *crc, const unsigned char *known,
                   char **text, size_t *len, const char *path, cf_error *err);

/* 1 if the record for blob i is current for header h: same dtype, nmemb
 * and nfile, and blob i has the same rows and running sum. */
int cf__ext_current(const cf__ext *x, const cf__header *h, int64_t i);

/* 1 if the text has a statistics section (its first line that begins with
 * "COLFILE-STATS:"; docs/format.md 8.4), which then runs from *off to the
 * end; 0 if it has none. */
int cf__ext_stats_section(const char *text, size_t len, size_t *off);

#endif
