/* fuzz_meta.c - the CFM1 column metadata snapshot (src/column/column_meta.c
 * cf_column_open_meta), the bytes an MPI rank receives from rank 0.
 *
 * Input: a snapshot.  An accepted snapshot builds a replica handle whose
 * own snapshot builds a second replica with the same snapshot (the first
 * export canonicalises; after that it is a fixed point).  Replicas touch no
 * file: the File is opened with CF_OPEN_NOCHECK on a path that does not
 * exist. */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cf_file *f = fuzz_file();

    cf_column *c, *d;
    cf_error err;
    void *snap = fuzz_copy(data, size);
    int rc = cf_column_open_meta(&c, f, snap, size, &err);
    free(snap);
    if (rc) {
        /* CF_EREPLACED: a snapshot that names a directory (device, inode)
         * other than the one at the column's path */
        FUZZ_CHECK(rc == CF_EFORMAT || rc == CF_EDTYPE || rc == CF_ENAME || rc == CF_EREPLACED,
                   "unexpected error %d: %s", rc, err.message);
        return 0;
    }
    FUZZ_CHECK(cf_column_writable(c) && cf_column_size(c) >= 0, "replica");
    void *a, *b;
    size_t al, bl;
    FUZZ_CHECK(cf_column_export_meta(c, &a, &al, &err) == 0, "export: %s", err.message);
    rc = cf_column_open_meta(&d, f, a, al, &err);
    FUZZ_CHECK(rc == 0, "own snapshot refused: %s", err.message);
    FUZZ_CHECK(strcmp(cf_column_name(c), cf_column_name(d)) == 0 && cf_column_kind(c) == cf_column_kind(d) &&
               strcmp(cf_column_dtype(c), cf_column_dtype(d)) == 0 && cf_column_nmemb(c) == cf_column_nmemb(d) &&
               cf_column_size(c) == cf_column_size(d) && cf_column_nfile(c) == cf_column_nfile(d),
               "replica of the replica differs");
    for (int64_t i = 0; i < cf_column_nfile(c); i++) {
        uint32_t x = 0, y = 0;
        int kx = cf_column_blob_crc32c(c, i, &x), ky = cf_column_blob_crc32c(d, i, &y);
        FUZZ_CHECK(kx == ky && x == y && cf_column_blob_rows(c, i) == cf_column_blob_rows(d, i) &&
                   cf_column_blob_sum(c, i) == cf_column_blob_sum(d, i), "blob %lld differs", (long long)i);
    }
    FUZZ_CHECK(cf_column_export_meta(d, &b, &bl, &err) == 0, "export: %s", err.message);
    if (al != bl || memcmp(a, b, al) != 0) {
        fuzz_dump("first snapshot", a, al);
        fuzz_dump("second snapshot", b, bl);
    }
    FUZZ_CHECK(al == bl && memcmp(a, b, al) == 0, "snapshot is not a fixed point");
    cf_free(a);
    cf_free(b);
    FUZZ_CHECK(cf_column_close(d, &err) == 0, "close: %s", err.message);
    FUZZ_CHECK(cf_column_close(c, &err) == 0, "close: %s", err.message);
    return 0;
}
