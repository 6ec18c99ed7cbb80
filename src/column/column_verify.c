/* column_verify.c - checking a column's blobs against their recorded
 * checksums and statistics (repairing what an interrupted writer left is
 * commit/repair.c). */
#include "column_data.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "checksum.h"
#include "column_version.h"
#include "error.h"
#include "ext.h"
#include "fsutil.h"
#include "column_handle.h"

/* Recorded and recomputed statistics agree: counts and extremes exactly,
 * sums up to the last bits (older colfile rounded its sums in the order
 * the values came). */
static int same_acc(const cf__acc *a, const cf__acc *b, const cf__dtype *d)
{
    if (a->count != b->count || a->nan != b->nan) return 0;
    char k = cf__acc_class(d);
    if (k && a->count > a->nan && memcmp(&a->v, &b->v, sizeof a->v) != 0) {
        if (k != 'f' || a->v.f.min != b->v.f.min || a->v.f.max != b->v.f.max) return 0;
    }
    double x = cf__acc_sum(a), y = cf__acc_sum(b);
    if (x == y || (isnan(x) && isnan(y))) return 1;
    double scale = fabs(x) > fabs(y) ? fabs(x) : fabs(y);
    return fabs(x - y) <= 1e-9 * scale + 1e-300 || (isinf(x) && isinf(y) && (x > 0) == (y > 0));
}

/* colfile-v1 as last parsed for recorded_crc, and which file it was: a
 * column with many blobs to look up parses it once, and again only when
 * another commit replaced it. */
struct cf__recorded {
    dev_t dev;
    ino_t ino;
    struct timespec mtime;
    off_t size;
    int ok;   /* sealed and parsed: x holds it */
    cf__ext x;
};

void cf__column_recorded_free(cf_column *c)
{
    if (!c || !c->ext.recorded) return;
    if (c->ext.recorded->ok) cf__ext_free(&c->ext.recorded->x);
    free(c->ext.recorded);
    c->ext.recorded = NULL;
}

static int same_file(const struct cf__recorded *r, const struct stat *st)
{
    return r->dev == st->st_dev && r->ino == st->st_ino && r->size == st->st_size &&
           r->mtime.tv_sec == st->st_mtim.tv_sec && r->mtime.tv_nsec == st->st_mtim.tv_nsec;
}

/* colfile-v1 of this version's directory as it is now, parsed when sealed
 * (NULL when absent, unreadable or out of memory). */
static const struct cf__recorded *recorded_now(cf_column *c)
{
    struct stat st;
    if (!cf__version_stat(c, CF__EXT_NAME, &st)) return NULL;
    if (c->ext.recorded && same_file(c->ext.recorded, &st)) return c->ext.recorded;
    cf__column_recorded_free(c);
    char *text = NULL;
    size_t len = 0, body = 0;
    cf_error mine;
    struct cf__recorded *r = calloc(1, sizeof *r);
    if (!r || cf__version_read_stat(c, CF__EXT_NAME, &text, &len, &st, &mine) || !text) {
        free(r);
        free(text);
        return NULL;
    }
    r->dev = st.st_dev;
    r->ino = st.st_ino;
    r->size = st.st_size;
    r->mtime = st.st_mtim;
    if (cf__ext_unseal(text, len, &body) == CF__SEAL_OK) {
        size_t at = body;
        (void)cf__ext_stats_section(text, body, &at);
        r->ok = cf__ext_parse(&r->x, text, at, c->path, NULL) == 0;
    }
    free(text);
    c->ext.recorded = r;
    return r;
}

/* The CRC32C that colfile-v1, as it is now in this version's directory,
 * records for blob i with exactly the rows and byte sum the header gives
 * it (same dtype and nmemb), current or not: 1 and *crc, else 0.  A commit
 * renames its header, then its colfile-v1 (format.md 8.3): a reader between
 * the two finds the file stale, while the lines of the blobs that commit
 * kept are the same in both.  Evidence only for: a stale record that the
 * bytes match proves them committed with that line; one they do not match
 * proves nothing (a foreign write may have changed them since). */
static int recorded_crc(cf_column *c, int64_t i, uint32_t *crc)
{
    const struct cf__recorded *r = recorded_now(c);
    if (!r || !r->ok) return 0;
    const cf__ext *x = &r->x;
    if (!x->crc || !cf__dtype_equal(&x->header.dtype, &c->h.dtype) || x->header.nmemb != c->h.nmemb ||
        i >= x->header.nfile || !x->known[i] || x->header.rows[i] != c->h.rows[i] ||
        x->header.sums[i] != c->h.sums[i])
        return 0;
    *crc = x->crc[i];
    return 1;
}

int cf_column_verify_blob(cf_column *c, int64_t i, unsigned *status, cf_error *err)
{
    if (!c || !status) return CF_FAIL(err, CF_EARG, "cf_column_verify_blob: NULL argument");
    cf__acc *acc = NULL;
    if (i < 0 || i >= c->h.nfile)
        return CF_FAIL(err, CF_EARG, "%s: blob %lld does not exist (NFILE %lld)", c->path, (long long)i,
                       (long long)c->h.nfile);
    int rc = cf__column_need_scratch(c, err);
    if (rc == 0 && c->kind == CF_KIND_DATA) rc = cf__column_stats_need(c, err);
    if (rc) return rc;
    unsigned st = 0;
    char *p = cf__column_blob_path(c, i);
    if (!p) return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", c->path);
    int64_t bytes = c->h.rows[i] * c->rowbytes;
    uint32_t crc_known = 0; /* read only when has_crc */
    int has_crc = cf_column_blob_crc32c(c, i, &crc_known);
    if (!has_crc) st |= CF_BLOB_CRC_UNKNOWN;
    if (c->kind == CF_KIND_DATA && (c->stat.stats_damaged || (c->stat.stats_bad && c->stat.stats_bad[i])))
        st |= CF_BLOB_STATS_DAMAGED;
    char name[32];
    cf__column_blob_name(i, name);
    int fd = cf__version_openat(c, name, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno != ENOENT) {
            int e = errno;
            rc = CF_FAIL(err, CF_EIO, "%s: cannot open: %s", p, strerror(e));
        } else if (cf__version_gone(c)) {
            rc = cf__version_replaced(c, err); /* not damage: another version's business */
        } else if (bytes > 0) {
            st |= CF_BLOB_MISSING;
        }
        goto done;
    }
    struct stat sb;
    if (fstat(fd, &sb) == 0 && sb.st_size > bytes) st |= CF_BLOB_LONG;
    uint32_t sum = 0, crc = 0;
    int64_t off = 0;
    /* Recorded statistics are recomputed alongside, into scratch
     * accumulators laid out like the blob's chunks. */
    int64_t nmemb = c->h.nmemb,
            chunks = c->stat.stats.valid && c->stat.stats.valid[i] && cf__stats_blob_whole(&c->stat.stats, i)
                ? cf__stats_blob_chunks(&c->stat.stats, i) : 0;
    int64_t w = c->h.dtype.width;
    if (chunks > 0 && bytes % w == 0) {
        acc = malloc((size_t)(chunks * nmemb) * sizeof *acc);
        if (!acc) {
            close(fd);
            rc = CF_FAIL(err, CF_ENOMEM, "%s: out of memory", p);
            goto done;
        }
        for (int64_t k = 0; k < chunks * nmemb; k++) cf__acc_init(&acc[k], &c->h.dtype);
    }
    while (off < bytes) {
        size_t want = (size_t)(bytes - off < CF__CHUNK_BYTES ? bytes - off : CF__CHUNK_BYTES);
        size_t got;
        if ((rc = cf__pread_all(fd, c->io.scratch, want, off, &got, p, err))) break;
        sum = cf__sysv_add(sum, c->io.scratch, got);
        crc = cf__crc32c_update(crc, c->io.scratch, got);
        if (acc && got % (size_t)w == 0)
            cf__column_add_to_chunks(c, acc, 0, off / w, c->io.scratch, (int64_t)got / w);
        off += (int64_t)got;
        if (got < want) {
            st |= CF_BLOB_SHORT;
            break;
        }
    }
    close(fd);
    if (rc) goto done;
    if (!(st & CF_BLOB_SHORT)) {
        if (sum != c->h.sums[i]) st |= CF_BLOB_SUM_MISMATCH;
        if (has_crc && crc != crc_known) st |= CF_BLOB_CRC_MISMATCH;
        /* A byte sum that differs, no current CRC32C: bytes that match the
         * one recorded for this very header line are intact (rows rewritten
         * in place count twice in the sum), e.g. seen inside another
         * process's commit that no lock shows. */
        if (!has_crc && (st & CF_BLOB_SUM_MISMATCH) && recorded_crc(c, i, &crc_known) && crc == crc_known) {
            has_crc = 1;
            st &= ~(unsigned)CF_BLOB_CRC_UNKNOWN;
        }
        for (int64_t k = 0; acc && k < chunks * nmemb; k++)
            if (!same_acc(&acc[k], cf__stats_peek(&c->stat.stats, i, k / nmemb) + k % nmemb, &c->h.dtype)) {
                st |= CF_BLOB_STATS_MISMATCH;
                break;
            }
    }
    /* What disagrees with the metadata this handle read is no damage if
     * another process changed the column since (an append, an in-place
     * update, a replacement or removal): the caller reopens it. */
    unsigned bad = st & ~(unsigned)(CF_BLOB_CRC_UNKNOWN | CF_BLOB_LONG);
    if (has_crc && !(st & CF_BLOB_CRC_MISMATCH)) bad &= ~(unsigned)CF_BLOB_SUM_MISMATCH; /* format.md 6 */
    if (bad && cf__version_changed(c)) {
        char what[64];
        snprintf(what, sizeof what, "blob %s", name);
        rc = cf__version_changed_error(c, what, err);
        st = 0;
    }
done:
    free(acc);
    free(p);
    *status = st;
    return rc;
}

int cf_column_torn(const cf_column *c) { return c ? c->commit.torn_at_open : 0; }

void cf_column_set_verify(cf_column *c, int enabled)
{
    if (c) c->verify = enabled != 0;
}

int cf_column_verify_enabled(const cf_column *c) { return c ? c->verify : 0; }
