/* bf_differences.c DIR - the rows of docs/bigfile-c.md's table of
 * differences that a program can observe, checked against the drop-in
 * (bigfile 0.1.52 fails each of them: that is the difference). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bigfile.h"

static int failures;

#define EXPECT(cond, what)                                                        \
    do {                                                                          \
        if (!(cond)) {                                                            \
            const char *m_ = big_file_get_error_message();                        \
            fprintf(stderr, "FAILED: %s (message: %s)\n", what, m_ ? m_ : "none"); \
            failures++;                                                           \
        } else {                                                                  \
            printf("ok: %s\n", what);                                             \
        }                                                                         \
    } while (0)

static int listed(BigFile *bf, const char *name)
{
    char **names;
    int n, found = 0;
    if (big_file_list(bf, &names, &n)) return -1;
    for (int i = 0; i < n; i++) {
        found |= strcmp(names[i], name) == 0;
        free(names[i]);
    }
    free(names);
    return found;
}

int main(int argc, char **argv)
{
    BigFile bf, other;
    BigBlock b, b2;
    BigBlockPtr ptr;
    BigArray a;
    if (argc != 2 || big_file_create(&bf, argv[1]) || big_file_open(&other, argv[1])) return 2;

    /* a new block appears at its first flush */
    EXPECT(big_file_create_block(&bf, &b, "x", "f8", 1, 1, (size_t[]){4}) == 0, "create x");
    EXPECT(listed(&other, "x") == 0, "a new block is not listed before its first flush");
    EXPECT(big_file_open_block(&other, &b2, "x") == -1, "nor opened");
    double v[4] = {1, 2, 3, 4};
    big_array_init(&a, v, "f8", 1, (size_t[]){4}, NULL);
    big_block_seek(&b, &ptr, 0);
    EXPECT(big_block_write(&b, &ptr, &a) == 0, "write x");
    EXPECT(big_block_flush(&b) == 0, "flush x");
    EXPECT(listed(&other, "x") == 1, "after the flush it is listed");

    /* attributes reach the disk when set */
    double t = 2.5, back = 0;
    EXPECT(big_block_set_attr(&b, "T", &t, "f8", 1) == 0, "set T");
    EXPECT(big_file_open_block(&other, &b2, "x") == 0, "open x again");
    EXPECT(big_block_get_attr(&b2, "T", &back, "f8", 1) == 0 && back == 2.5,
           "an attribute is on disk as soon as it is set");

    /* a second handle cannot write while the first holds changes */
    EXPECT(big_block_write(&b, &ptr, &a) == -1, "writing past the end fails");
    big_block_seek(&b, &ptr, 0);
    EXPECT(big_block_write(&b, &ptr, &a) == 0, "the first handle rewrites x");
    big_block_seek(&b2, &ptr, 0);
    EXPECT(big_block_write(&b2, &ptr, &a) == -1, "a second handle writing x meanwhile is refused");
    big_block_close(&b2);
    EXPECT(big_block_close(&b) == 0, "the first handle commits");

    /* dtypes colfile does not store, nmemb 0 with a dtype */
    EXPECT(big_file_create_block(&bf, &b, "bad", "x4", 1, 1, (size_t[]){1}) == -1, "dtype x4 is refused");
    EXPECT(big_file_create_block(&bf, &b, "zero", "f8", 0, 1, (size_t[]){1}) == -1,
           "nmemb 0 with a dtype is refused");

    /* conversions of big-endian values leave the input alone */
    unsigned char be[4] = {0x40, 0x50, 0, 0}; /* 3.25 as >f4 */
    char buf[64];
    big_file_dtype_format(buf, ">f4", be, NULL);
    EXPECT(strcmp(buf, "3.25") == 0 && be[0] == 0x40, "format reads >f4 without swapping the buffer");
    big_file_dtype_format(buf, ">f4", be, NULL);
    EXPECT(strcmp(buf, "3.25") == 0, "and reads the same the second time");
    EXPECT(big_file_create_block(&bf, &b, "h", NULL, 0, 0, NULL) == 0, "create h");
    EXPECT(big_block_set_attr(&b, "BE", be, ">f4", 1) == 0, "set a >f4 attribute");
    float f = 0;
    EXPECT(big_block_get_attr(&b, "BE", &f, "f4", 1) == 0 && f == 3.25f, "get it as f4");
    EXPECT(big_block_get_attr(&b, "BE", &f, "f4", 1) == 0 && f == 3.25f, "and again: the stored value is unchanged");
    big_block_close(&b);

    big_file_close(&bf);
    big_file_close(&other);
    if (failures) fprintf(stderr, "%d differences not as documented\n", failures);
    return failures != 0;
}
