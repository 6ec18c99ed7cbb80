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

/* The whole file as colfile writes it (docs/format.md 8.1): the CRC part
 * (cf__ext_format), the statistics section (stats, sl bytes, may be
 * empty), and last the checksum line "CRC32C: <8 hex>" over every byte
 * before it.  *text malloc'd. */
int cf__ext_assemble(const char *crc_part, size_t cl, const char *stats, size_t sl, char **text, size_t *len,
                     const char *path, cf_error *err);

/* What the last line of a colfile-v1 text says (cf__ext_unseal). */
enum cf__ext_seal {
    CF__SEAL_OK,        /* a checksum line, and it is right */
    CF__SEAL_NONE,      /* no checksum line: an older colfile, or damage */
    CF__SEAL_DAMAGED    /* a checksum line with a wrong or garbled value */
};

/* Check the text's checksum line.  *body gets the length of the text
 * before it (len when it has none): the part to parse for CRCs and
 * statistics. */
enum cf__ext_seal cf__ext_unseal(const char *text, size_t len, size_t *body);

/* Mark seen[b] = 1 for every blob b < nfile that has a blob line in the
 * statistics text (docs/format.md 8.4: hex digits, then ':'). */
void cf__ext_stats_blob_lines(const char *text, size_t len, int64_t nfile, unsigned char *seen);

#endif
