/* fuzz_stats.c - the `colfile-stats-v1` parser (src/stats/stats_text.c cf__stats_parse).
 *
 * Input: a column header text, FUZZ_SEP, the statistics file (the parser
 * reads statistics against the current header).  Whatever the parser
 * returns, the statistics have the header's layout and are valid only for
 * blobs whose records are plausible; formatted and parsed again they keep
 * the same valid blobs and values, and format identically the second
 * time. */
#include "fuzz.h"

#include "stats.h"

/* What docs/format.md 8.4 lets a writer produce for chunk k of blob b. */
static void check_chunk(const cf__acc *a, const cf__header *h, int64_t chunk_rows, int64_t b, int64_t k)
{
    int64_t rows = h->rows[b] - k * chunk_rows;
    if (rows > chunk_rows) rows = chunk_rows;
    char cls = cf__acc_class(&h->dtype);
    FUZZ_CHECK(a->count == rows && a->nan >= 0 && a->nan <= a->count, "blob %lld chunk %lld: count %lld nan %lld",
               (long long)b, (long long)k, (long long)a->count, (long long)a->nan);
    if (cls == 'i') FUZZ_CHECK(a->nan == 0 && a->v.i.min <= a->v.i.max, "int chunk");
    if (cls == 'u') FUZZ_CHECK(a->nan == 0 && a->v.u.min <= a->v.u.max, "unsigned chunk");
    if (cls == 'u' && h->dtype.kind == 'b') FUZZ_CHECK(a->v.u.max <= 1, "bool max %llu",
                                                       (unsigned long long)a->v.u.max);
    if (cls == 'f' && a->nan < a->count) FUZZ_CHECK(a->v.f.min <= a->v.f.max, "float chunk min > max");
    if (cls == 0 && h->dtype.kind != 'c') FUZZ_CHECK(a->nan == 0, "NaNs in a string chunk");
}

static int same_acc(const cf__acc *a, const cf__acc *b, char cls)
{
    if (a->count != b->count || a->nan != b->nan) return 0;
    switch (cls) {
    case 'i': return a->v.i.min == b->v.i.min && a->v.i.max == b->v.i.max && fuzz_same_double(cf__acc_sum(a), cf__acc_sum(b));
    case 'u': return a->v.u.min == b->v.u.min && a->v.u.max == b->v.u.max && fuzz_same_double(cf__acc_sum(a), cf__acc_sum(b));
    case 'f':
        return fuzz_same_double(a->v.f.min, b->v.f.min) && fuzz_same_double(a->v.f.max, b->v.f.max) &&
               fuzz_same_double(cf__acc_sum(a), cf__acc_sum(b));
    default: return 1;
    }
}

static void check_layout(cf__stats *s, const cf__header *h)
{
    FUZZ_CHECK(s->first_chunk && s->blob && s->valid, "statistics not allocated");
    FUZZ_CHECK(s->nfile == h->nfile && s->nmemb == h->nmemb && s->chunk_rows >= 1, "layout");
    for (int64_t b = 0; b < h->nfile; b++) {
        int64_t nc = cf__stats_blob_chunks(s, b);
        FUZZ_CHECK(nc == (h->rows[b] + s->chunk_rows - 1) / s->chunk_rows, "chunks of blob %lld", (long long)b);
        FUZZ_CHECK(s->valid[b] <= 1, "valid[%lld] = %d", (long long)b, s->valid[b]);
        if (h->rows[b] == 0) FUZZ_CHECK(s->valid[b], "empty blob %lld not valid", (long long)b);
        /* memory follows the text: only blobs it describes hold anything */
        if (!s->valid[b]) {
            FUZZ_CHECK(!s->blob[b].nrun, "invalid blob %lld holds statistics", (long long)b);
            continue;
        }
        FUZZ_CHECK(cf__stats_blob_whole(s, b), "valid blob %lld not held whole", (long long)b);
        for (int64_t k = 0; k < nc && h->nmemb > 0; k++) {
            const cf__acc *a = cf__stats_peek(s, b, k);
            for (int64_t j = 0; j < h->nmemb; j++) check_chunk(&a[j], h, s->chunk_rows, b, k);
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *p = data, *end = data + size, *hp, *sp;
    size_t hl, sl;
    fuzz_next_piece(&p, end, &hp, &hl);
    fuzz_next_piece(&p, end, &sp, &sl);
    cf__header h;
    cf_error err;
    char *htext = fuzz_copy(hp, hl);
    int rc = cf__header_parse(&h, htext, hl, "fuzz/header", &err);
    free(htext);
    if (rc) return 0;

    cf__stats s, s2;
    memset(&s, 0, sizeof s);
    memset(&s2, 0, sizeof s2);
    char *stext = fuzz_copy(sp, sl);
    rc = cf__stats_parse(&s, &h, stext, sl, "fuzz/colfile-stats-v1", &err);
    free(stext);
    if (rc == CF_ENOMEM) {
        /* Layouts beyond memory: refused before allocating. */
        FUZZ_CHECK(!s.first_chunk, "ENOMEM left statistics behind");
        cf__header_free(&h);
        return 0;
    }
    FUZZ_CHECK(rc == 0 || rc == CF_EFORMAT, "unexpected error %d: %s", rc, err.message);
    check_layout(&s, &h);
    if (rc) {
        for (int64_t b = 0; b < h.nfile; b++)
            FUZZ_CHECK(s.valid[b] == (h.rows[b] == 0), "damaged file left blob %lld valid", (long long)b);
    }

    char *out, *out2;
    size_t len, len2;
    FUZZ_CHECK(cf__stats_format(&s, &h, &out, &len, "fuzz", &err) == 0, "format: %s", err.message);
    rc = cf__stats_parse(&s2, &h, out, len, "fuzz/formatted", &err);
    if (rc) fuzz_dump("formatted", out, len);
    FUZZ_CHECK(rc == 0, "formatted statistics do not parse: %s", err.message);
    check_layout(&s2, &h);
    FUZZ_CHECK(s2.chunk_rows == s.chunk_rows, "CHUNK changed");
    char cls = cf__acc_class(&h.dtype);
    for (int64_t b = 0; b < h.nfile; b++) {
        FUZZ_CHECK(s.valid[b] == s2.valid[b], "validity of blob %lld changed", (long long)b);
        if (!s.valid[b]) continue;
        for (int64_t k = 0; k < cf__stats_blob_chunks(&s, b) && h.nmemb > 0; k++) {
            const cf__acc *a = cf__stats_peek(&s, b, k), *a2 = cf__stats_peek(&s2, b, k);
            for (int64_t j = 0; j < h.nmemb; j++)
                FUZZ_CHECK(same_acc(&a[j], &a2[j], cls), "blob %lld chunk %lld component %lld changed",
                           (long long)b, (long long)k, (long long)j);
        }
    }
    FUZZ_CHECK(cf__stats_format(&s2, &h, &out2, &len2, "fuzz", &err) == 0, "format: %s", err.message);
    FUZZ_CHECK(len == len2 && memcmp(out, out2, len) == 0, "second format differs");
    free(out);
    free(out2);
    cf__stats_free(&s);
    cf__stats_free(&s2);
    cf__header_free(&h);
    return 0;
}
