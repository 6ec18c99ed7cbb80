/* fuzz_pending.c - the CFP1 pending write state (src/column/column_pending.c
 * cf_column_pending_merge), the bytes rank 0 receives from every rank at a
 * collective close.
 *
 * Input: a column header text, FUZZ_SEP, a CFP1 buffer.  The column is a
 * replica built from the header (no file is touched; the template snapshot
 * is made once, in a scratch directory).  A rejected buffer
 * changes nothing; an accepted one, exported again and merged into a fresh
 * replica, gives the same export (the first merge canonicalises segments
 * and statistics; after that it is a fixed point). */
#include "fuzz.h"

#include "fuzz_snapshot.h"

/* A replica of a column with this header and nothing else (the template's
 * statistics and CRCs are stale for it). */
static int replica(cf_column **c, const void *header, size_t hl)
{
    static void *tmpl;
    static size_t tlen;
    if (!tmpl) fuzz_template_snapshot(&tmpl, &tlen);
    size_t len;
    void *snap = fuzz_snapshot_with_header(tmpl, tlen, header, hl, &len);
    FUZZ_CHECK(snap != NULL, "the template snapshot is not framed as fuzz_snapshot.h expects");
    cf_error err;
    int rc = cf_column_open_meta(c, fuzz_file(), snap, len, &err);
    free(snap);
    return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *p = data, *end = data + size, *hp, *wp;
    size_t hl, wl;
    fuzz_next_piece(&p, end, &hp, &hl);
    wp = p;
    wl = (size_t)(end - p);
    char *header = fuzz_copy(hp, hl);
    cf_column *c = NULL, *d = NULL;
    void *wire = fuzz_copy(wp, wl), *a = NULL, *b = NULL;
    size_t al, bl;
    cf_error err;
    if (replica(&c, header, hl) != 0 || cf_column_kind(c) != CF_KIND_DATA)
        goto done;

    void *before;
    size_t before_len;
    FUZZ_CHECK(cf_column_export_meta(c, &before, &before_len, &err) == 0, "export_meta: %s", err.message);
    int rc = cf_column_pending_merge(c, wire, wl, &err);
    if (rc) {
        FUZZ_CHECK(rc == CF_EFORMAT || rc == CF_EARG, "unexpected error %d: %s", rc, err.message);
        void *after;
        size_t after_len;
        FUZZ_CHECK(cf_column_export_meta(c, &after, &after_len, &err) == 0, "export_meta: %s", err.message);
        FUZZ_CHECK(after_len == before_len && memcmp(before, after, after_len) == 0, "refused merge changed the column");
        cf_free(after);
        cf_free(before);
        goto done;
    }
    cf_free(before);
    FUZZ_CHECK(cf_column_pending_export(c, &a, &al, &err) == 0, "export: %s", err.message);
    FUZZ_CHECK(replica(&d, header, hl) == 0, "second replica");
    rc = cf_column_pending_merge(d, a, al, &err);
    if (rc) fuzz_dump("exported", a, al);
    FUZZ_CHECK(rc == 0, "own export refused: %s", err.message);
    FUZZ_CHECK(cf_column_pending_export(d, &b, &bl, &err) == 0, "export: %s", err.message);
    if (al != bl || memcmp(a, b, al) != 0) {
        fuzz_dump("first export", a, al);
        fuzz_dump("second export", b, bl);
    }
    FUZZ_CHECK(al == bl && memcmp(a, b, al) == 0, "pending state is not a fixed point");
done:
    cf_free(a);
    cf_free(b);
    if (d) FUZZ_CHECK(cf_column_close(d, &err) == 0, "close: %s", err.message);
    if (c) FUZZ_CHECK(cf_column_close(c, &err) == 0, "close: %s", err.message);
    free(wire);
    free(header);
    return 0;
}
