/* ext_text.h - colfile-v1 texts in the tests: without their checksum line
 * (as an older colfile wrote them), or sealed again after a test edits one
 * (docs/format.md 8.1). */
#ifndef CF_TEST_EXT_TEXT_H
#define CF_TEST_EXT_TEXT_H

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "checksum.h"

/* Remove, in place, the checksum line "CRC32C: ..." (what a colfile-v1 of
 * an older colfile lacks).  Returns text (NULL stays NULL). */
static char *cf_test_ext_unsealed(char *text)
{
    if (!text) return NULL;
    char *out = text;
    for (const char *p = text; *p;) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl + 1 - p) : strlen(p);
        if (strncmp(p, "CRC32C: ", 8) != 0) {
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

/* Give the colfile-v1 at ext_path the mtime of the header beside it, as a
 * commit does (docs/format.md 8.1): a test that rewrites the file as a
 * writer would keeps it current.  0 on success. */
static int cf_test_ext_match_header(const char *ext_path)
{
    char hp[8192];
    const char *slash = strrchr(ext_path, '/');
    int dl = slash ? (int)(slash - ext_path) : 0;
    snprintf(hp, sizeof hp, "%.*s%sheader", dl, ext_path, slash ? "/" : "");
    struct stat st;
    if (stat(hp, &st) != 0) return -1;
    struct timespec ts[2] = { { 0, UTIME_OMIT }, st.st_mtim };
    return utimensat(AT_FDCWD, ext_path, ts, 0);
}

#endif
