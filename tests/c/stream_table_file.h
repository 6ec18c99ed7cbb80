/* stream_table_file.h - the committed table file of a stream in the
 * stream tests (tests/c): read whole, damaged one byte at a time in
 * place, and put back as it was. */
#ifndef CF_TEST_STREAM_TABLE_FILE_H
#define CF_TEST_STREAM_TABLE_FILE_H

#include "harness.h"

typedef struct {
    char path[4300]; /* <test dir>/<file>/<stream>/colfile-stream-v1 */
    char *text;      /* its bytes as read (NUL after them); NULL if unread */
    size_t len;
} stream_table_file;

/* Read the table of stream `stream` of file `file` of the test directory
 * into t (free t->text). */
static inline void stream_table_read(stream_table_file *t, const char *file, const char *stream)
{
    char name[512];
    snprintf(name, sizeof name, "%s/%s/colfile-stream-v1", file, stream);
    snprintf(t->path, sizeof t->path, "%s/%s", cf_test_dir(), name);
    t->len = 0;
    t->text = cf_test_slurp(cf_test_dir(), name, &t->len);
}

/* Task `task`'s line in the table as read, from the newline before it;
 * NULL if missing (checked). */
static inline char *stream_table_line(const stream_table_file *t, int task)
{
    char key[32];
    snprintf(key, sizeof key, "\n%d ", task);
    char *line = t->text ? strstr(t->text, key) : NULL;
    CHECK(line != NULL);
    return line;
}

/* Put the table back as read, then (at non-NULL, a place in t->text) the
 * byte at that offset of the file made `c`; 0, or -1 if the file would
 * not open (checked). */
static inline int stream_table_poke(const stream_table_file *t, const char *at, char c)
{
    FILE *fp = fopen(t->path, "r+b");
    CHECK(fp != NULL);
    if (!fp) return -1;
    fwrite(t->text, 1, t->len, fp);
    if (at) {
        fseek(fp, (long)(at - t->text), SEEK_SET);
        fputc(c, fp);
    }
    fclose(fp);
    return 0;
}

#endif
