/* column_open.c - opening columns: the version a handle reads is the
 * header held in its directory, retried while a commit replaces it; the
 * header and colfile-v1 applied to the handle. */
#include "column.h"
#include "column_handle.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "checksum.h"
#include "column_stage.h"
#include "column_data.h"
#include "column_version.h"
#include "error.h"
#include "ext.h"
#include "file.h"
#include "digest.h"
#include "fsutil.h"
#include "hex.h"
#include "names.h"
#include "owner.h"
#include "platform.h"
#include "readmap.h"
#include "readsplit.h"

int cf__column_apply_header(cf_column *c, const char *text, size_t len, const char *path, cf_error *err)
{
    int rc = cf__header_parse(&c->h, text, len, path, err);
    if (rc) return rc;
    c->kind = c->h.nmemb == 0 ? CF_KIND_HEADER_ONLY : CF_KIND_DATA;
    c->rowbytes = c->h.nmemb * c->h.dtype.width;
    cf__dtype_format(&c->h.dtype, c->dtype_token);
    return cf__column_layout_blobs(c, 0, err);
}

/* Whether colfile-v1's text, as read from disk with the mtime in
 * c->xstamp, applies to the header this handle read, whose mtime is in
 * c->hstamp (docs/format.md 8.1); *body: the bytes to parse. */
static int ext_state_of(const cf_column *c, const char *text, size_t len, size_t *body)
{
    *body = len;
    if (c->ext.ext_state == CF_EXT_UPDATING || c->ext.ext_state == CF_EXT_TORN) return c->ext.ext_state;
    if (!text) return CF_EXT_ABSENT;
    static const char magic[] = "COLFILE-EXT: 1\n";
    switch (cf__ext_unseal(text, len, body)) {
    case CF__SEAL_NONE:
        /* an older colfile's file, unless it is not one at all */
        return len >= sizeof magic - 1 && memcmp(text, magic, sizeof magic - 1) == 0 ? CF_EXT_UNBOUND
                                                                                   : CF_EXT_DAMAGED;
    case CF__SEAL_DAMAGED: return CF_EXT_DAMAGED;
    default: return cf__hstamp_equal(&c->ext.xstamp, &c->ver.hstamp) ? CF_EXT_CURRENT : CF_EXT_STALE;
    }
}

int cf__column_apply_ext(cf_column *c, const char *text, size_t len, const char *path, int *legacy,
                         cf_error *err)
{
    /* A snapshot of another handle carries that handle's CRCs as it
     * trusted them; from disk, the file must be current as a whole. */
    size_t body = len;
    c->ext.ext_state = c->ext.ext_snapshot ? (text ? CF_EXT_CURRENT : CF_EXT_ABSENT) : ext_state_of(c, text, len, &body);
    int trusted = c->ext.ext_state == CF_EXT_CURRENT;
    size_t at = body;
    int has_stats = text && cf__ext_stats_section(text, body, &at);
    /* CRCs are trusted only where still current; a damaged or absent file
     * leaves them unknown without keeping the column from opening. */
    cf__ext x;
    int ok = trusted && cf__ext_parse(&x, text, at, path, NULL) == 0;
    if (trusted && !ok) c->ext.ext_state = CF_EXT_DAMAGED;
    for (int64_t i = 0; i < c->h.nfile; i++) {
        c->sums.crc_known[i] = ok ? (unsigned char)cf__ext_current(&x, &c->h, i) : 0;
        c->sums.crc[i] = c->sums.crc_known[i] ? x.crc[i] : 0;
    }
    if (ok) cf__ext_free(&x);
    /* an older colfile-stats-v1 goes at the next commit; it is read only
     * beside a current colfile-v1 without statistics */
    c->commit.legacy_stats = !has_stats;
    *legacy = ok && !has_stats;
    if (*legacy) return 0;
    if (ok || !has_stats || c->ext.ext_state == CF_EXT_DAMAGED)
        return cf__column_apply_stats(c, ok && has_stats ? text + at : NULL, body - at, path, err);
    /* statistics that are not current are parsed only for their chunk
     * size (load_stats), at once: no copy of their text is kept that a
     * snapshot could hand on as if it were current */
    if (c->kind != CF_KIND_DATA) return 0;
    free(c->stat.stats_text);
    c->stat.stats_text = NULL;
    c->stat.stats_pending = 0;
    return cf__column_load_stats(c, text + at, body - at, path, err);
}

int cf_column_ext_state(cf_column *c, int *state, cf_error *err)
{
    if (!c || !state) return CF_FAIL(err, CF_EARG, "cf_column_ext_state: NULL argument");
    *state = CF_EXT_ABSENT;
    if (c->kind != CF_KIND_DATA) return 0;
    int rc = cf__column_stats_need(c, err);
    if (rc == 0) *state = c->ext.ext_state;
    return rc;
}

void cf__column_set_attrs_only(cf_column *c)
{
    c->kind = CF_KIND_ATTRS_ONLY;
    c->h.dtype.order = cf__dtype_native_order();
    c->h.dtype.kind = 'i';
    c->h.dtype.width = 8;
    cf__dtype_format(&c->h.dtype, c->dtype_token);
}

int cf__column_new_for(cf_column **out, cf_file *f, const char *name, cf_error *err)
{
    int rc;
    if (!out || !f || !name) return CF_FAIL(err, CF_EARG, "cf_column_open: NULL argument");
    if ((rc = cf__name_check_in(f->path, name, err))) return rc;
    char *dir = cf__column_attr_dir_of(f, name);
    char *path = cf__column_is_attrs_only_name(name) ? (dir ? strdup(dir) : NULL) : cf__path_join(f->path, name);
    cf_column *c = dir && path ? cf__column_new(name, path, dir) : NULL;
    free(dir);
    free(path);
    if (!c) return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", f->path);
    c->writable = f->writable;
    cf__column_take_file_options(c, f);
    *out = c;
    return 0;
}

/* An open that must start again: the column changed while it was being
 * opened (not an error code: cf_column_open handles it). */
#define CF__OPEN_AGAIN 1

/* Times cf_column_open looks again when the directory it opened lost its
 * header to a replacement published meanwhile. */
#define CF__OPEN_TRIES 8

/* Hold the column's directory and read its header there (*text, *len):
 * the version the handle reads from now on (column_version.h).  A
 * directory that lost its header because it was taken away from the name
 * sends it back to the name: a new version there is opened, nothing there
 * (removed meanwhile) is no column. */
static int open_version(cf_column *c, const cf_file *f, const char *name, char **text, size_t *len,
                        struct stat *hst, cf_error *err)
{
    for (int tries = 1;; tries++) {
        int rc = cf__version_hold(c, err);
        if (rc == CF_ENOENT) break;
        if (rc == 0) rc = cf__version_read_stat(c, "header", text, len, hst, err);
        if (rc != CF_ENOENT) return rc;
        if (!cf__version_moved(c)) break;
        if (tries == CF__OPEN_TRIES)
            return CF_FAIL(err, CF_EREPLACED, "%s: column '%s' was replaced %d times while it was being "
                           "opened (other processes keep publishing new versions): try again", c->path, name,
                           CF__OPEN_TRIES);
    }
    return CF_FAIL(err, CF_ENOENT, "%s: no column '%s' in File %s", c->path, name, f->path);
}

static int open_once(cf_column **out, cf_file *f, const char *name, cf_error *err)
{
    cf_column *c;
    int rc = cf__column_new_for(&c, f, name, err);
    if (rc) return rc;
    if (f->writable && !cf__column_is_attrs_only_name(name)) cf__column_note_lock_dir(f, c);
    /* A read-only handle takes the metadata files from the File's catalog
     * where fresh stamps prove them current (catalog.c); anything unexpected
     * there, and the files themselves decide, with their own errors. */
    cf__catalog_file cached[CF__CAT_NSLOTS];
    cf__stamp dir_stamp;
    /* (the directory it holds is the one whose header the catalog vouched
     * for, not a version swapped in since) */
    if (!f->writable && f->catalog && !cf__column_is_attrs_only_name(name) &&
        cf__catalog_column_held(f->catalog, f->path, name, cached, &dir_stamp, &c->ver.dirfd)) {
        if (cf__column_apply_cached(c, cached, &dir_stamp, NULL) == 0) {
            *out = c;
            return 0;
        }
        cf__column_free(c);
        if ((rc = cf__column_new_for(&c, f, name, err))) return rc;
    }
    char *text = NULL, *hp = NULL, *xp = NULL;
    size_t len;
    /* Readers touch nothing beside the column directory, except the writer
     * lock probed below when the column is marked torn; listing the parent
     * for links among the hidden companions (a cost that grows with the
     * columns beside it) is left to writers and to that case. */
    if ((rc = (f->writable ? cf__name_confine : cf__name_confine_own)(f->path, name, err))) goto done;
    if (cf__column_is_attrs_only_name(name)) {
        if (!cf__is_dir(c->attr_dir)) {
            rc = CF_FAIL(err, CF_ENOENT, "%s: no group '%s' in File %s", c->attr_dir, name, f->path);
            goto done;
        }
        cf__column_set_attrs_only(c);
    } else {
        /* the paths name the files in messages */
        hp = cf__path_join(c->path, "header");
        xp = cf__path_join(c->path, CF__EXT_NAME);
        if (!hp || !xp) {
            rc = CF_FAIL(err, CF_ENOMEM, "%s: out of memory", c->path);
            goto done;
        }
        struct stat hst;
        if ((rc = open_version(c, f, name, &text, &len, &hst, err))) goto done;
        cf__hstamp_of(&c->ver.hstamp, &hst);
        if ((rc = cf__column_apply_header(c, text, len, hp, err))) goto done;
        if (f->writable) {
            c->ver.opened_header_len = (int64_t)len;
            c->ver.opened_header_crc = cf__crc32c_update(0, text, len);
        }
        c->commit.committed_nfile = c->h.nfile;
        struct stat mst;
        int marked = cf__version_stat(c, CF__TORN_NAME, &mst);
        if (marked && !f->writable && (rc = cf__name_confine(f->path, name, err))) goto done;
        c->commit.torn_at_open = marked && !cf__column_writer_alive(c);
        if (c->commit.torn_at_open && !cf__version_same_file(c, CF__TORN_NAME, &mst)) {
            /* the marker went (or was made anew) after it was seen: an
             * update committed and let go of its lock between the two looks,
             * which is no interruption; the header read may predate it */
            rc = CF__OPEN_AGAIN;
            goto done;
        }
        /* its recorded CRCs and statistics may describe rows that the
         * update has changed since: all unknown for this handle */
        if (marked) {
            c->verify = 0;
            c->ext.ext_state = c->commit.torn_at_open ? CF_EXT_TORN : CF_EXT_UPDATING;
        }
        if (c->commit.torn_at_open && !(f->flags & CF_OPEN_TORN_OK)) {
            rc = CF_FAIL(err, CF_ETORN, "%s: an in-place update of this column was interrupted (%s is "
                         "present): its rows may mix old and new values; `colfile repair` makes it "
                         "consistent, or open with CF_OPEN_TORN_OK (Python: torn='warn') to read it anyway",
                         c->path, CF__TORN_NAME);
            goto done;
        }
        free(text);
        text = NULL;
        for (int tries = 1;; tries++) {
            if ((rc = cf__column_read_ext(c, &text, &len, err))) goto done;
            if (!cf__column_ext_wait(c, text, len, tries)) break;
            free(text);
            text = NULL;
        }
        int legacy;
        if ((rc = cf__column_apply_ext(c, text, len, xp, &legacy, err))) goto done;
        free(text);
        text = NULL;
        if (legacy) {
            free(xp);
            xp = cf__path_join(c->path, CF__STATS_NAME);
            if (!xp) {
                rc = CF_FAIL(err, CF_ENOMEM, "%s: out of memory", c->path);
                goto done;
            }
            if ((rc = cf__column_read_optional(c, CF__STATS_NAME, &text, &len, err))) goto done;
            if ((rc = cf__column_apply_stats(c, text, len, xp, err))) goto done;
        }
    }
    /* a read-only handle reads its attributes when they are first used,
     * as when it is opened from the catalog (cf__column_settle_attrs) */
    if (f->writable || cf__column_is_attrs_only_name(name)) {
        if ((rc = cf__column_load_attrs(c, err))) goto done;
    } else {
        c->attr.attrs_unread = 1;
    }
    *out = c;
    c = NULL;
done:
    free(text);
    free(hp);
    free(xp);
    cf__column_free(c);
    return rc;
}

/* Times, and the pause between them, that a handle reads colfile-v1 again
 * when a commit under way left it stale (cf__column_ext_wait). */
#define CF__EXT_TRIES 40
#define CF__EXT_PAUSE_US 500

int cf__column_ext_wait(const cf_column *c, const char *text, size_t len, int tries)
{
    size_t body;
    if (tries >= CF__EXT_TRIES || c->ext.ext_snapshot || ext_state_of(c, text, len, &body) != CF_EXT_STALE ||
        cf__version_header_changed(c) || !cf__column_writer_alive(c))
        return 0;
    struct timespec pause = { 0, CF__EXT_PAUSE_US * 1000L };
    nanosleep(&pause, NULL);
    return 1;
}

int cf_column_open(cf_column **out, cf_file *f, const char *name, cf_error *err)
{
    /* A commit writes the header, then colfile-v1 (each atomically): an
     * open that read the header before and colfile-v1 after them finds
     * colfile-v1 stale and would take the CRC32C and statistics for
     * unknown: it reads the pair again.  (One between the two waits for
     * colfile-v1: cf__column_ext_wait.) */
    for (int tries = 1;; tries++) {
        cf_column *c = NULL;
        int rc = open_once(&c, f, name, err);
        if (rc == CF__OPEN_AGAIN) {
            if (tries < CF__EXT_TRIES) continue;
            return CF_FAIL(err, CF_EREPLACED, "%s/%s: column '%s' was updated in place %d times while it "
                           "was being opened (other processes keep committing updates): try again",
                           f->path, name, name, CF__EXT_TRIES);
        }
        if (rc || c->ext.ext_state != CF_EXT_STALE || tries >= CF__EXT_TRIES ||
            !(cf__version_moved(c) || cf__version_header_changed(c))) {
            if (rc == 0) *out = c;
            return rc;
        }
        cf__column_free(c);
    }
}
