/* repair.c - repairing what an interrupted writer left in a column
 * (docs/format.md 8.3, docs/reliability.md): every blob checked, bytes
 * past its rows cut, the sums and colfile-v1 recomputed, stray blobs
 * removed, and the torn mark removed by a commit. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "column_data.h"
#include "error.h"
#include "column_handle.h"

int cf_column_repair(cf_column *c, unsigned *fixed, cf_error *err)
{
    if (!c || !fixed) return CF_FAIL(err, CF_EARG, "cf_column_repair: NULL argument");
    *fixed = 0;
    if (c->kind != CF_KIND_DATA) return 0;
    if (!c->writable) return CF_FAIL(err, CF_EREADONLY, "%s: column is open read-only", c->path);
    if (c->replica) return CF_FAIL(err, CF_EKIND, "%s: a replica handle cannot repair", c->path);
    int rc = cf__column_begin_change(c, err);
    if (rc == 0) rc = cf__column_settle_writes(c, err);
    if (rc) return rc;
    unsigned found = 0;
    /* Every blob must hold its rows: nothing can make up missing data. */
    for (int64_t i = 0; i < c->h.nfile; i++) {
        unsigned st;
        if ((rc = cf_column_verify_blob(c, i, &st, err))) return rc;
        uint32_t known;
        if (!cf_column_blob_crc32c(c, i, &known)) st |= CF_BLOB_CRC_UNKNOWN; /* to be recomputed */
        if (st & (CF_BLOB_MISSING | CF_BLOB_SHORT)) {
            char name[32];
            cf__column_blob_name(i, name);
            return CF_FAIL(err, CF_ESHORT, "%s/%s: blob is %s: rows %lld..%lld cannot be recovered; rewrite or "
                           "remove the column", c->path, name, (st & CF_BLOB_MISSING) ? "missing" : "short",
                           (long long)c->first_row[i], (long long)c->first_row[i + 1] - 1);
        }
        found |= st;
    }
    for (int64_t i = 0; i < c->h.nfile; i++) {
        char *p = cf__column_blob_path(c, i);
        if (!p) return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", c->path);
        int64_t bytes = c->h.rows[i] * c->rowbytes;
        struct stat sb;
        if (stat(p, &sb) == 0 && sb.st_size > bytes) {
            /* Bytes past the rows: left by an interrupted append. */
            if (truncate(p, (off_t)bytes) != 0) {
                int e = errno;
                rc = CF_FAIL(err, CF_EIO, "%s: cannot cut the blob to its %lld bytes: %s", p, (long long)bytes, strerror(e));
            }
            c->sums.unsynced[i] = 1;
            *fixed |= CF_REPAIR_TRUNCATED;
        }
        free(p);
        if (rc) return rc;
        uint32_t sum = 0;
        int complete;
        if ((rc = cf__column_scan_blob_sum(c, i, &sum, &complete, err))) return rc;
        if (sum != c->h.sums[i]) {
            c->h.sums[i] = sum;
            c->commit.header_dirty = 1;
            *fixed |= CF_REPAIR_SUMS;
        }
    }
    if (found & (CF_BLOB_CRC_MISMATCH | CF_BLOB_CRC_UNKNOWN)) *fixed |= CF_REPAIR_CRC;
    c->commit.ext_dirty = 1;
    int stray = 0;
    if ((rc = cf__column_remove_stale_blobs(c->dir, c->h.nfile, &stray, err))) return rc;
    if (stray) *fixed |= CF_REPAIR_STRAY;
    if (c->commit.torn_at_open) {
        c->commit.torn_at_open = 0; /* the commit below removes the marker */
        *fixed |= CF_REPAIR_TORN;
    }
    return cf_column_flush(c, err);
}
