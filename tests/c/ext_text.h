/* ext_text.h - colfile-v1 texts in the tests: compared without the lines
 * that differ between two commits of the same data, and sealed again after
 * a test edits one (docs/format.md 8.1). */
#ifndef CF_TEST_EXT_TEXT_H
#define CF_TEST_EXT_TEXT_H

#include <stdlib.h>
#include <string.h>

#include "checksum.h"

/* Remove, in place, the lines beginning with "HEADER-MTIME: " (a time) and
 * "CRC32C: " (the checksum covering it).  Returns text (NULL stays NULL). */
static char *cf_test_ext_unstamped(char *text)
{
    if (!text) return NULL;
    char *out = text;
    for (const char *p = text; *p;) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl + 1 - p) : strlen(p);
        if (strncmp(p, "HEADER-MTIME: ", 14) != 0 && strncmp(p, "CRC32C: ", 8) != 0) {
            memmove(out, p, n);
            out += n;
        }
        p += n;
    }
    *out = '\0';
    return text;
}

/* text (len bytes, malloc'd) with its checksum line, if any, replaced by
 * the right one for what now precedes it; *len updated. */
static char *cf_test_ext_reseal(char *text, size_t *len)
{
    size_t body = *len;
    if (body > 0 && text[body - 1] == '\n') {
        size_t ls = body - 1;
        while (ls > 0 && text[ls - 1] != '\n') ls--;
        if (strncmp(text + ls, "CRC32C: ", 8) == 0) body = ls;
    }
    char *out = realloc(text, body + 32);
    if (!out) abort();
    *len = body + (size_t)snprintf(out + body, 32, "CRC32C: %08x\n", (unsigned)cf__crc32c_update(0, out, body));
    return out;
}

#endif
