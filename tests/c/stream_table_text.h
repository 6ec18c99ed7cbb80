/* stream_table_text.h - the text cf__stream_table_format gives a table
 * (docs/format.md 8.7), checked in the stream table tests (tests/c). */
#ifndef CF_TEST_STREAM_TABLE_TEXT_H
#define CF_TEST_STREAM_TABLE_TEXT_H

#include <string.h>

#include "harness.h"
#include "checksum.h"
#include "stream_impl.h"

/* Format t into *text (*len bytes) and check them: the lines `want`, then
 * the CRC32C line of those lines, which must read `seal` (the line as
 * docs/format.md 8.7 shows it). */
static inline void stream_table_format_is(const cf__stream_table *t, const char *want, const char *seal,
                                          char **text, size_t *len)
{
    cf_error err;
    CHECK_OK(cf__stream_table_format(t, text, len, "ex", &err), &err);
    CHECK_EQ_INT(*len, strlen(want) + 17);
    CHECK_EQ_MEM(*text, want, strlen(want));
    char line[32];
    snprintf(line, sizeof line, "CRC32C: %08x\n", (unsigned)cf__crc32c_update(0, want, strlen(want)));
    CHECK_EQ_STR(*text + strlen(want), line);
    CHECK_EQ_STR(line, seal);
}

#endif
