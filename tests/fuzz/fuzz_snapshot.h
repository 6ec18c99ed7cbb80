/* fuzz_snapshot.h - CFM1 column snapshots for the fuzz targets, made by the
 * library's own exporter so that they follow src/column/column_meta.c when its
 * wire format grows.
 *
 * fuzz_snapshot_of_dir() opens a column directory that a caller has
 * written by hand (read only) and exports it.  fuzz_snapshot_with_header()
 * takes such a snapshot and puts another header text in it: the fields
 * before the header are framed as "CFM1", u64 kind, bytes name, bytes
 * header; everything after it is copied unchanged (its colfile-v1 and
 * statistics are then stale for the new header, which readers accept).
 */
#ifndef CF_FUZZ_SNAPSHOT_H
#define CF_FUZZ_SNAPSHOT_H

#include <errno.h>
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz.h"

#include "wire.h"

static inline int fuzz_write_file(const char *dir, const char *name, const void *p, size_t n)
{
    char path[8192];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *fp = fopen(path, "wb");
    if (!fp) return -1;
    int ok = fwrite(p, 1, n, fp) == n;
    return (fclose(fp) == 0 && ok) ? 0 : -1;
}

static inline int fuzz_rm_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    return type == FTW_DP ? rmdir(path) : unlink(path);
}

/* Remove a scratch tree made by fuzz_scratch_dir. */
static inline void fuzz_rm_tree(const char *dir)
{
    nftw(dir, fuzz_rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* A fresh directory below $TMPDIR (or /tmp) holding an empty column
 * directory `col`: the File is `dir`, the column `dir`/col. */
static inline int fuzz_scratch_dir(char *dir, size_t cap, char *col, size_t colcap)
{
    const char *base = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    snprintf(dir, cap, "%s/colfile-fuzz-XXXXXX", base);
    if (!mkdtemp(dir)) return -1;
    snprintf(col, colcap, "%s/col", dir);
    return mkdir(col, 0775);
}

/* Export column `col` of File `dir`.  *buf malloc'd.  0 or a CF_E* code. */
static inline int fuzz_snapshot_of_dir(const char *dir, void **buf, size_t *len, cf_error *err)
{
    cf_file *f;
    cf_column *c;
    int rc = cf_file_open(&f, dir, CF_OPEN_READ, err);
    if (rc) return rc;
    rc = cf_column_open(&c, f, "col", err);
    if (rc == 0) {
        rc = cf_column_export_meta(c, buf, len, err);
        cf_column_close(c, NULL);
    }
    cf_file_close(f);
    return rc;
}

/* A snapshot of a column <i4 x 1 with no blobs, to be given other headers
 * with fuzz_snapshot_with_header.  Aborts if the library cannot make it. */
static inline void fuzz_template_snapshot(void **buf, size_t *len)
{
    char dir[4096], col[4200];
    static const char header[] = "DTYPE: <i4\nNMEMB: 1\nNFILE: 0\n";
    cf_error err;
    if (fuzz_scratch_dir(dir, sizeof dir, col, sizeof col) || fuzz_write_file(col, "header", header, sizeof header - 1) ||
        fuzz_write_file(col, "attr-v2", "", 0)) {
        perror("fuzz: scratch column");
        abort();
    }
    int rc = fuzz_snapshot_of_dir(dir, buf, len, &err);
    fuzz_rm_tree(dir);
    if (rc) {
        fprintf(stderr, "fuzz: cannot export a template snapshot: %s\n", err.message);
        abort();
    }
}

/* template with its header field replaced by [header, header + hl).
 * Returns a malloc'd buffer, or NULL if template is not framed as above. */
static inline void *fuzz_snapshot_with_header(const void *tmpl, size_t tlen, const void *header, size_t hl,
                                              size_t *len)
{
    cf__wire_in in = { tmpl, (const unsigned char *)tmpl + tlen };
    uint64_t kind;
    const unsigned char *name, *old;
    size_t nl, ol;
    if (tlen < 4 || memcmp(tmpl, "CFM1", 4) != 0) return NULL;
    in.p += 4;
    if (cf__wire_get_u64(&in, &kind) || cf__wire_get_bytes(&in, &name, &nl) || cf__wire_get_bytes(&in, &old, &ol))
        return NULL;
    cf__wire_out o = { NULL, 0, 0, 0 };
    cf__wire_put(&o, "CFM1", 4);
    cf__wire_put_u64(&o, kind);
    cf__wire_put_bytes(&o, name, nl);
    cf__wire_put_bytes(&o, header, hl);
    cf__wire_put(&o, in.p, (size_t)(in.end - in.p));
    if (o.failed) abort();
    *len = o.len;
    return o.p;
}

#endif
