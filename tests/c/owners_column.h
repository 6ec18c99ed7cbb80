/* owners_column.h - the large column the chunk-owner tests close: 140001
 * f8 rows in 3 blobs, 2 rows a chunk (70002 chunk records, more than the
 * statistics text holds). */
#ifndef CF_TEST_OWNERS_COLUMN_H
#define CF_TEST_OWNERS_COLUMN_H

#include "harness.h"

enum { N = 140001, NFILE = 3, CHUNK = 2 };

/* Column x of the File dir (created if missing) written by one handle,
 * row i holding value(i), and committed. */
static void owners_write_column(const char *dir, double (*value)(int64_t))
{
    cf_error err;
    cf_file *f = NULL;
    cf_column *c = NULL;
    CHECK_OK(cf_file_open(&f, dir, CF_OPEN_WRITE | CF_OPEN_CREATE, &err), &err);
    CHECK_OK(cf_column_create(&c, f, "x", "f8", 1, N, NFILE, &err), &err);
    CHECK_OK(cf_column_set_chunk_rows(c, CHUNK, &err), &err);
    double *v = malloc(N * sizeof *v);
    for (int64_t i = 0; i < N; i++) v[i] = value(i);
    CHECK_OK(cf_column_write(c, 0, N, v, NULL, 8, 8, &err), &err);
    free(v);
    CHECK_OK(cf_column_close(c, &err), &err);
    cf_file_close(f);
}

#endif
