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
#include "hstamp.h"

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
 * (cf__ext_format), the header stamp line ("HEADER-MTIME: <sec>.<nsec>
 * <size>", or "HEADER-MTIME: -" when the stamp is unknown), the statistics
 * section (stats, sl bytes, may be empty), and last the checksum line
 * "CRC32C: <8 hex>" over every byte before it.  *text malloc'd. */
int cf__ext_assemble(const char *crc_part, size_t cl, const cf__hstamp *stamp, const char *stats, size_t sl,
                     char **text, size_t *len, const char *path, cf_error *err);

/* What the checksum line and the header stamp line of a colfile-v1 text
 * say (cf__ext_unseal). */
enum cf__ext_seal {
    CF__SEAL_OK,        /* checksum right, stamp in *stamp */
    CF__SEAL_NONE,      /* neither line: written by an older colfile */
    CF__SEAL_UNSTAMPED, /* checksum right, stamp recorded as unknown */
    CF__SEAL_DAMAGED    /* checksum absent or wrong, or stamp line garbled */
};

/* Check the text's checksum line and read its header stamp.  *body gets
 * the length of the text before the checksum line (len when it has none):
 * the part to parse for CRCs and statistics. */
enum cf__ext_seal cf__ext_unseal(const char *text, size_t len, cf__hstamp *stamp, size_t *body);

/* Mark seen[b] = 1 for every blob b < nfile that has a blob line in the
 * statistics text (docs/format.md 8.4: hex digits, then ':'). */
void cf__ext_stats_blob_lines(const char *text, size_t len, int64_t nfile, unsigned char *seen);

#endif
