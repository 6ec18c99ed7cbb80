/* dtype.h - parsed dtypes, byte swapping and value conversion (internal).
 *
 * A dtype is parsed once into a cf__dtype and then used by value.  The
 * conversion routines work on short runs of elements (the callers process
 * data in cache-sized chunks) and never allocate.
 */
#ifndef CF_DTYPE_H
#define CF_DTYPE_H

#include <stddef.h>
#include <stdint.h>

#include "colfile.h"

/* The widest string column bigfile 0.1.52 can reopen. */
#define CF__COLUMN_S_MAX 16

typedef struct cf__dtype {
    char order;    /* '<' or '>' after normalisation (never '|' or '=') */
    char kind;     /* 'i' 'u' 'f' 'c' 'b' 'S', and 'a' for attributes */
    int64_t width; /* bytes per element */
} cf__dtype;

/* Where the order char may be missing. */
enum cf__dtype_rules {
    CF__DTYPE_HEADER = 0, /* as in a header: order char required; kinds and
                             widths must be ones colfile can store (S up to
                             CF__COLUMN_S_MAX) */
    CF__DTYPE_USER   = 1, /* from an API caller (buffers, create): order optional
                             ('|','=' or none -> machine order; '?' is b1, 'a'
                             is S), same kinds, any S width */
    CF__DTYPE_ATTR   = 2  /* attribute token: order optional, any ASCII letter as
                             kind with width 1..2^31-1 (kinds other than
                             i u f c b S a are kept as raw bytes) */
};

/* Parse `text` under `rules`.  Returns 0 or CF_EDTYPE (message names the
 * token and what is wrong; `context` -- e.g. a path -- prefixes it). */
int cf__dtype_parse(const char *text, int rules, cf__dtype *out,
                    const char *context, cf_error *err);

/* Write the normalised token ("<f8", "<S12") into out. */
void cf__dtype_format(const cf__dtype *d, char out[CF_DTYPE_MAX]);

/* This machine's byte order char: '<' or '>'. */
char cf__dtype_native_order(void);

/* 1 if the two dtypes are the same kind, width and order. */
int cf__dtype_equal(const cf__dtype *a, const cf__dtype *b);

/* 1 if cf__convert supports from -> to. */
int cf__dtype_can_convert(const cf__dtype *from, const cf__dtype *to);

/* The index of a numeric kind and width in dtype_convert.c's type list,
 * or -1 (not a numeric dtype). */
int cf__numeric_index(char kind, int64_t width);

/* Convert n elements (see cf_dtype_convert in colfile.h for semantics).
 * Precondition: cf__dtype_can_convert(from, to) (otherwise nothing is
 * done).  Strides in bytes.  dst may equal src with the same stride and
 * width (in place); other overlaps are not allowed.
 * Fast paths: identical dtypes copy, same kind+width swap bytes. */
void cf__convert(void *dst, ptrdiff_t dst_stride, const cf__dtype *to,
                 const void *src, ptrdiff_t src_stride, const cf__dtype *from,
                 size_t n);

/* Reverse the bytes of each of n elements of `width` bytes in place
 * (complex: callers pass width/2 and 2n so each part swaps on its own). */
void cf__swap_inplace(void *data, size_t width, size_t n);

#endif
