/* header.h - the column `header` file: parse and format (internal). */
#ifndef CF_HEADER_H
#define CF_HEADER_H

#include <stddef.h>
#include <stdint.h>

#include "colfile.h"
#include "dtype.h"

/* The original reads at most 6 hex digits of a blob id. */
#define CF__NFILE_MAX ((int64_t)1 << 24)
/* NMEMB is an int in the original. */
#define CF__NMEMB_MAX ((int64_t)2147483647)

typedef struct cf__header {
    cf__dtype dtype;
    int64_t nmemb;
    int64_t nfile;
    int64_t *rows;   /* nfile entries (malloc'd; NULL when nfile == 0) */
    uint32_t *sums;  /* nfile running byte sums */
} cf__header;

/* Allocate rows/sums for nfile blobs, zeroed.  CF_ENOMEM. */
int cf__header_alloc(cf__header *h, int64_t nfile, const char *path, cf_error *err);
void cf__header_free(cf__header *h);

/* Parse header text.  Accepts what bigfile 0.1.52 accepts (leading
 * whitespace, CR, tabs, "DTYPE:<f8", blob lines in any order, lowercase
 * hex, trailing lines) and blob ids of up to 16 hex digits.  CF_EFORMAT
 * "<path>:<line>: <problem>" otherwise; CF_EDTYPE for a bad dtype.  The
 * blob count is checked against the text length before anything is
 * allocated, so a hostile NFILE cannot exhaust memory. */
int cf__header_parse(cf__header *h, const char *text, size_t len,
                     const char *path, cf_error *err);

/* Format exactly as bigfile 0.1.52 writes it.  *text malloc'd. */
int cf__header_format(const cf__header *h, char **text, size_t *len,
                      const char *path, cf_error *err);

/* Write the DTYPE, NMEMB and NFILE lines of h to buf (of cap bytes, room
 * for them assumed) and return their length: the top of a header and of an
 * extension file. */
size_t cf__header_format_top(const cf__header *h, char *buf, size_t cap);

/* Number of rows, the sum of rows[] (saturating is not needed: sizes are
 * checked at parse and create). */
int64_t cf__header_size(const cf__header *h);

/* bigfile's even split of size rows over nfile blobs into rows[]. */
void cf__split_rows(int64_t size, int64_t nfile, int64_t *rows);

#endif
