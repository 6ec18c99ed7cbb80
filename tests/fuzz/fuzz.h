/* fuzz.h - helpers shared by the libFuzzer targets of tests/fuzz.
 *
 * Each target is one LLVMFuzzerTestOneInput that feeds its input to one
 * parser, then checks what the parser accepted: format it, parse the text
 * again and compare, so that the fuzzer finds logic errors as well as
 * crashes.  A failed check prints what differs and aborts, which libFuzzer
 * reports as a crash with its reproducer.  Every target frees what it
 * allocated: LeakSanitizer runs after each input.
 */
#ifndef CF_FUZZ_H
#define CF_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "colfile_binding.h"
#include "header.h"
#include "stats.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A check that holds in every build (NDEBUG does not remove it). */
#define FUZZ_CHECK(cond, ...) do { if (!(cond)) { \
    fprintf(stderr, "%s:%d: FUZZ_CHECK(%s) failed: ", __FILE__, __LINE__, #cond); \
    fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); abort(); } } while (0)

/* An error code the parsers may return for bad input; anything else (a
 * positive value, CF_EIO, ...) is a bug. */
static inline int fuzz_expected_error(int rc)
{
    return rc == CF_EFORMAT || rc == CF_EDTYPE;
}

/* Inputs made of several files put this line between them: text parsers
 * meet it as ordinary text, so the fuzzer can also move or cut it. */
#define FUZZ_SEP "\n%%%%\n"
#define FUZZ_SEP_LEN 6

/* Split [*p, end) at the next separator: the piece before it goes to
 * *piece and *len, and *p moves past the separator (to end if there is none). */
static inline void fuzz_next_piece(const uint8_t **p, const uint8_t *end, const uint8_t **piece, size_t *len)
{
    const uint8_t *s = *p;
    size_t n = (size_t)(end - s);
    *piece = s;
    for (size_t i = 0; i + FUZZ_SEP_LEN <= n; i++) {
        if (memcmp(s + i, FUZZ_SEP, FUZZ_SEP_LEN) == 0) {
            *len = i;
            *p = s + i + FUZZ_SEP_LEN;
            return;
        }
    }
    *len = n;
    *p = end;
}

/* An exact-size heap copy, so that AddressSanitizer sees any read past the
 * end (libFuzzer's own buffer is exact too; pieces of it are not). */
static inline char *fuzz_copy(const uint8_t *data, size_t len)
{
    char *p = malloc(len ? len : 1);
    if (!p) abort();
    if (len) memcpy(p, data, len);
    return p;
}

/* Bytes as a C string literal on stderr, for failure messages. */
static inline void fuzz_dump(const char *what, const void *data, size_t len)
{
    const unsigned char *p = data;
    fprintf(stderr, "%s (%zu bytes): \"", what, len);
    for (size_t i = 0; i < len && i < 4096; i++) {
        if (p[i] == '\n') fputs("\\n", stderr);
        else if (p[i] == '"' || p[i] == '\\') fprintf(stderr, "\\%c", p[i]);
        else if (p[i] >= 0x20 && p[i] < 0x7f) fputc(p[i], stderr);
        else fprintf(stderr, "\\x%02x", p[i]);
    }
    fputs(len > 4096 ? "\"...\n" : "\"\n", stderr);
}

/* Two doubles are the same value: equal bits, or both NaN (the file
 * formats spell every NaN "nan"). */
static inline int fuzz_same_double(double a, double b)
{
    if (a != a && b != b) return 1;
    return memcmp(&a, &b, sizeof a) == 0;
}

#endif
