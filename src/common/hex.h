/* hex.h - hexadecimal digits, as blob ids, attribute bytes and CRCs are
 * written (internal). */
#ifndef CF_HEX_H
#define CF_HEX_H

/* The value 0..15 of a hex digit (either case), or -1. */
static inline int cf__hex_digit(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

#endif
