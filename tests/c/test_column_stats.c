/* test_column_stats.c - statistics computed by writes, kept true, merged,
 * rebuilt by indexing, never trusted when stale. */
#include "harness.h"
#include "ext_text.h"

#include "column.h"
#include "column_handle.h"
#include "digest.h"
#include "fsutil.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <sys/resource.h>

static cf_column *make(cf_file *f, const char *name, const double *v, int64_t n, int64_t nfile, int64_t chunk)
{
    cf_error err;
    cf_column *c = NULL;
    CHECK_OK(cf_column_create(&c, f, name, "f8", 1, n, nfile, &err), &err);
    CHECK_OK(cf_column_set_chunk_rows(c, chunk, &err), &err);
    CHECK_OK(cf_column_write(c, 0, n, v, NULL, 8, 8, &err), &err);
    return c;
}

/* The statistics of rows [lo, hi) computed directly. */
static void expect(const cf_chunk_stats *s, const double *v, int64_t lo, int64_t hi)
{
    int64_t nan = 0;
    double mn = INFINITY, mx = -INFINITY, sum = 0;
    for (int64_t i = lo; i < hi; i++) {
        if (isnan(v[i])) { nan++; continue; }
        mn = v[i] < mn ? v[i] : mn;
        mx = v[i] > mx ? v[i] : mx;
        sum += v[i];
    }
    CHECK(s->valid);
    CHECK_EQ_INT(s->first_row, lo);
    CHECK_EQ_INT(s->rows, hi - lo);
    CHECK_EQ_INT(s->count, hi - lo);
    CHECK_EQ_INT(s->nan_count, nan);
    if (nan < hi - lo) {
        CHECK(s->min == mn);
        CHECK(s->max == mx);
        CHECK(fabs(s->sum - sum) <= 1e-9 * fabs(sum) + 1e-12);
    } else {
        CHECK(isnan(s->min) && isnan(s->max));
    }
}

/* Column `col`'s statistics section (the tail of its colfile-v1 from
 * "COLFILE-STATS:") becomes `text`; returns the old section, malloc'd. */
static char *set_statistics(const char *col, const char *text)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s/colfile-v1", cf_test_dir(), col);
    char *ext = NULL, *old = NULL;
    size_t len = 0;
    CHECK_OK(cf__read_file(path, &ext, &len, NULL), NULL);
    char *at = ext ? strstr(ext, "\nCOLFILE-STATS:") : NULL;
    CHECK(at != NULL);
    if (at) {
        old = strdup(at + 1);
        at[1] = '\0';
        /* sealed again: the edit is in the statistics, not the seal */
        size_t n = strlen(ext) + strlen(text);
        char *both = malloc(n + 1);
        strcpy(both, ext);
        strcat(both, text);
        both = cf_test_ext_reseal(both, &n);
        FILE *fp = fopen(path, "w");
        fwrite(both, 1, n, fp);
        fclose(fp);
        CHECK(cf_test_ext_match_header(path) == 0);
        free(both);
    }
    free(ext);
    return old;
}

static void check_all(cf_column *c, const double *v)
{
    cf_error err;
    int64_t n = cf_column_chunk_count(c);
    for (int64_t k = 0; k < n; k++) {
        cf_chunk_stats s;
        CHECK_OK(cf_column_chunk_stats(c, k, 0, &s, &err), &err);
        expect(&s, v, s.first_row, s.first_row + s.rows);
    }
}

static void test_writes_compute_statistics(void)
{
    cf_error err;
    cf_file *f;
    CHECK_OK(cf_file_open(&f, cf_test_dir(), CF_OPEN_WRITE, &err), &err);
    double v[23];
    for (int i = 0; i < 23; i++) v[i] = (i * 37 % 23) - 11.5;
    v[3] = NAN;
    for (int i = 8; i < 12; i++) v[i] = NAN; /* an all-NaN chunk */
    cf_column *c = make(f, "x", v, 23, 2, 4);   /* blobs of 11 and 12 rows: 3 + 3 chunks */
    CHECK_OK(cf_column_close(c, &err), &err);
    CHECK_OK(cf_column_open(&c, f, "x", &err), &err);
    CHECK_EQ_INT(cf_column_chunk_rows(c), 4);
    CHECK_EQ_INT(cf_column_chunk_count(c), 6);
    check_all(c, v);
    cf_chunk_stats s;
    CHECK_OK(cf_column_chunk_stats(c, 2, 0, &s, &err), &err);
    CHECK_EQ_INT(s.first_row, 8);  /* the last, short chunk of blob 0 */
    CHECK_EQ_INT(s.rows, 3);
    CHECK_FAILS(cf_column_chunk_stats(c, 6, 0, &s, &err), CF_ERANGE, &err, "no chunk 6");
    CHECK_FAILS(cf_column_set_chunk_rows(c, 8, &err), CF_EARG, &err, "right after create");

    /* A partial rewrite: the blob is re-read and its statistics stay true. */
    double w[2] = { 1000.0, -1000.0 };
    CHECK_OK(cf_column_write(c, 13, 2, w, NULL, 8, 8, &err), &err);
    CHECK_OK(cf_column_chunk_stats(c, 3, 0, &s, &err), &err);
    CHECK(!s.valid); /* unsettled writes */
    CHECK_OK(cf_column_close(c, &err), &err);
    v[13] = 1000.0;
    v[14] = -1000.0;
    CHECK_OK(cf_column_open(&c, f, "x", &err), &err);
    check_all(c, v);
    CHECK_OK(cf_column_close(c, &err), &err);
    cf_file_close(f);
}

static void test_stale_statistics_are_not_trusted(void)
{
    cf_error err;
    cf_file *f;
    CHECK_OK(cf_file_open(&f, cf_test_dir(), CF_OPEN_WRITE, &err), &err);
    double v[16];
    for (int i = 0; i < 16; i++) v[i] = i;
    cf_column *c = make(f, "x", v, 16, 2, 4);
    CHECK_OK(cf_column_close(c, &err), &err);
    /* Another tool (bigfile) rewrites blob 1 and its header sum, not our files. */
    char path[4200];
    snprintf(path, sizeof path, "%s/x/header", cf_test_dir());
    FILE *fp = fopen(path, "r");
    char text[512] = "";
    size_t n = fread(text, 1, sizeof text - 1, fp);
    fclose(fp);
    text[n] = 0;
    char *line = strstr(text, "000001: 8 : ");
    CHECK(line != NULL);
    if (line) {
        char rest[256];
        unsigned long sum = strtoul(line + 12, NULL, 10);
        snprintf(rest, sizeof rest, "000001: 8 : %lu : %lu\n", sum + 1, sum + 1);
        strcpy(line, rest);
        fp = fopen(path, "w");
        fputs(text, fp);
        fclose(fp);
    }
    CHECK_OK(cf_column_open(&c, f, "x", &err), &err);
    cf_chunk_stats s;
    /* the header was written after colfile-v1 (even within the same clock
     * tick): nothing recorded is trusted, blob 0's neither */
    CHECK_OK(cf_column_chunk_stats(c, 0, 0, &s, &err), &err);
    CHECK(!s.valid);
    CHECK_OK(cf_column_chunk_stats(c, 2, 0, &s, &err), &err);
    CHECK(!s.valid);
    uint32_t crc;
    CHECK(!cf_column_blob_crc32c(c, 0, &crc));
    CHECK(!cf_column_blob_crc32c(c, 1, &crc));
    int state;
    CHECK_OK(cf_column_ext_state(c, &state, &err), &err);
    CHECK_EQ_INT(state, CF_EXT_STALE);
    /* Indexing rebuilds both from the data. */
    CHECK_OK(cf_column_index_blob(c, 0, &err), &err);
    CHECK_OK(cf_column_index_blob(c, 1, &err), &err);
    CHECK_OK(cf_column_close(c, &err), &err);
    CHECK_OK(cf_column_open(&c, f, "x", &err), &err);
    check_all(c, v);
    CHECK(cf_column_blob_crc32c(c, 1, &crc));
    CHECK_OK(cf_column_close(c, &err), &err);
    /* Damaged statistics are no statistics, never an error. */
    free(set_statistics("x", "COLFILE-STATS: 1\nDTYPE: <f8\ngarbage\n"));
    CHECK_OK(cf_column_open(&c, f, "x", &err), &err);
    CHECK_OK(cf_column_chunk_stats(c, 0, 0, &s, &err), &err);
    CHECK(!s.valid);
    CHECK_OK(cf_column_close(c, &err), &err);
    cf_file_close(f);
}

/* Statistics not parsed yet: kept as text (opened from the files) or not
 * even looked at (opened from the catalog, cf__column_settle). */
static int unparsed(const cf_column *c)
{
    return c->stat.stats_pending || c->ext.deferred != NULL;
}

/* Read-only handles keep the statistics text and parse it when first
 * asked: every accessor, the metadata export and verification see the
 * same statistics as a writer, from the catalog or from the files. */
static void check_reader(cf_file *r, const double *v, int64_t n)
{
    cf_error err;
    cf_column *c;
    double got[32];
    CHECK_OK(cf_column_open(&c, r, "x", &err), &err);
    CHECK(unparsed(c));
    CHECK_OK(cf_column_read(c, 0, n, got, NULL, 8, 8, &err), &err);
    CHECK_EQ_MEM(got, v, (size_t)n * sizeof *v);
    CHECK(unparsed(c)); /* reading rows does not parse them */
    /* A snapshot for other ranks carries the text; the replica parses it. */
    void *meta;
    size_t len;
    CHECK_OK(cf_column_export_meta(c, &meta, &len, &err), &err);
    cf_column *rep;
    CHECK_OK(cf_column_open_meta(&rep, r, meta, len, &err), &err);
    cf_free(meta);
    CHECK_EQ_INT(cf_column_chunk_rows(rep), 4);
    check_all(rep, v);
    CHECK_OK(cf_column_close(rep, &err), &err);
    CHECK_EQ_INT(cf_column_chunk_rows(c), 4);
    CHECK(!c->stat.stats_pending);
    CHECK_EQ_INT(cf_column_chunk_count(c), 6);
    check_all(c, v);
    CHECK_OK(cf_column_close(c, &err), &err);
    /* first asked through chunk_stats or verify_blob */
    cf_chunk_stats s;
    CHECK_OK(cf_column_open(&c, r, "x", &err), &err);
    CHECK_OK(cf_column_chunk_stats(c, 2, 0, &s, &err), &err);
    expect(&s, v, 8, 11);
    CHECK_OK(cf_column_close(c, &err), &err);
    CHECK_OK(cf_column_open(&c, r, "x", &err), &err);
    unsigned st = 0;
    for (int64_t b = 0; b < 2; b++) {
        CHECK_OK(cf_column_verify_blob(c, b, &st, &err), &err);
        CHECK_EQ_INT(st, 0);
    }
    CHECK_OK(cf_column_close(c, &err), &err);
}

static void test_readers_parse_statistics_when_asked(void)
{
    cf_error err;
    cf_file *f, *r;
    CHECK_OK(cf_file_open(&f, cf_test_dir(), CF_OPEN_WRITE, &err), &err);
    double v[23];
    for (int i = 0; i < 23; i++) v[i] = (i * 29 % 23) * 0.1 - 1.0;
    v[5] = NAN;
    cf_column *c = make(f, "x", v, 23, 2, 4);
    CHECK_OK(cf_column_close(c, &err), &err);
    /* from the files */
    CHECK_OK(cf_file_open(&r, cf_test_dir(), 0, &err), &err);
    check_reader(r, v, 23);
    cf_file_close(r);
    /* from the catalog */
    CHECK_OK(cf_file_catalog_update(f, &err), &err);
    CHECK_OK(cf_file_open(&r, cf_test_dir(), 0, &err), &err);
    check_reader(r, v, 23);
    cf_file_close(r);
    cf_file_close(f);
    /* Damaged statistics: rows still read, statistics unknown (as for a writer). */
    free(set_statistics("x", "COLFILE-STATS: 1\nDTYPE: <f8\nNMEMB: 1\nNFILE: 2\nCHUNK: 4\n000000: 11 : x\n"));
    CHECK_OK(cf_file_open(&r, cf_test_dir(), 0, &err), &err);
    CHECK_OK(cf_column_open(&c, r, "x", &err), &err);
    double got[23];
    CHECK_OK(cf_column_read(c, 0, 23, got, NULL, 8, 8, &err), &err);
    CHECK_EQ_MEM(got, v, sizeof v);
    cf_chunk_stats s;
    CHECK(cf_column_chunk_count(c) > 0);
    CHECK_OK(cf_column_chunk_stats(c, 0, 0, &s, &err), &err);
    CHECK(!s.valid);
    CHECK_OK(cf_column_close(c, &err), &err);
    cf_file_close(r);
}

static int all_valid(cf_column *c)
{
    cf_error err;
    int valid = cf_column_chunk_count(c) > 0;
    for (int64_t k = 0; k < cf_column_chunk_count(c); k++) {
        cf_chunk_stats s;
        CHECK_OK(cf_column_chunk_stats(c, k, 0, &s, &err), &err);
        valid &= s.valid;
    }
    return valid;
}

/* Columns written before the statistics moved into colfile-v1 keep them in
 * colfile-stats-v1: read from there (files and catalog) while colfile-v1
 * has none, removed by the next commit, ignored once colfile-v1 has a
 * section, even a damaged one. */
static void test_statistics_file_of_older_writers(void)
{
    cf_error err;
    cf_file *f, *r;
    cf_column *c;
    double v[16];
    for (int i = 0; i < 16; i++) v[i] = i * 0.5 - 3;
    CHECK_OK(cf_file_open(&f, cf_test_dir(), CF_OPEN_WRITE, &err), &err);
    CHECK_OK(cf_column_close(make(f, "x", v, 16, 2, 4), &err), &err);
    char legacy[4200];
    snprintf(legacy, sizeof legacy, "%s/x/colfile-stats-v1", cf_test_dir());
    char *section = set_statistics("x", "");
    FILE *fp = fopen(legacy, "w");
    fputs(section, fp);
    fclose(fp);
    for (int cataloged = 0; cataloged < 2; cataloged++) {
        if (cataloged) CHECK_OK(cf_file_catalog_update(f, &err), &err);
        CHECK_OK(cf_file_open(&r, cf_test_dir(), 0, &err), &err);
        CHECK_OK(cf_column_open(&c, r, "x", &err), &err);
        check_all(c, v);
        CHECK_OK(cf_column_close(c, &err), &err);
        cf_file_close(r);
    }
    /* a commit writes the section and removes the older file */
    CHECK_OK(cf_column_open(&c, f, "x", &err), &err);
    CHECK_OK(cf_column_write(c, 0, 4, v, NULL, 8, 8, &err), &err);
    CHECK_OK(cf_column_close(c, &err), &err);
    CHECK(access(legacy, F_OK) != 0 && errno == ENOENT);
    CHECK_OK(cf_column_open(&c, f, "x", &err), &err);
    check_all(c, v);
    CHECK_OK(cf_column_close(c, &err), &err);
    /* the section decides, even damaged: the older file, current as it is,
     * is not read */
    free(section);
    section = set_statistics("x", "COLFILE-STATS: 2\n");
    fp = fopen(legacy, "w");
    fputs(section, fp);
    fclose(fp);
    CHECK_OK(cf_column_open(&c, f, "x", &err), &err);
    CHECK(!all_valid(c));
    CHECK_OK(cf_column_close(c, &err), &err);
    free(set_statistics("x", section));
    CHECK_OK(cf_column_open(&c, f, "x", &err), &err);
    CHECK(all_valid(c));
    CHECK_OK(cf_column_close(c, &err), &err);
    free(section);
    cf_file_close(f);
}

/* Two handles write halves that split chunks; the merged statistics equal
 * a single writer's. */
static void test_partial_chunks_merge(void)
{
    cf_error err;
    cf_file *f;
    CHECK_OK(cf_file_open(&f, cf_test_dir(), CF_OPEN_WRITE, &err), &err);
    double v[30];
    for (int i = 0; i < 30; i++) v[i] = sin(i) * 100;
    cf_column *one = make(f, "one", v, 30, 3, 7);
    CHECK_OK(cf_column_close(one, &err), &err);
    cf_column *a, *b;
    CHECK_OK(cf_column_create(&a, f, "two", "f8", 1, 30, 3, &err), &err);
    CHECK_OK(cf_column_set_chunk_rows(a, 7, &err), &err);
    void *meta;
    size_t len;
    CHECK_OK(cf_column_export_meta(a, &meta, &len, &err), &err);
    CHECK_OK(cf_column_open_meta(&b, f, meta, len, &err), &err);
    cf_free(meta);
    CHECK_EQ_INT(cf_column_chunk_rows(b), 7);
    CHECK_OK(cf_column_write(a, 0, 13, v, NULL, 8, 8, &err), &err);
    CHECK_OK(cf_column_write(b, 13, 17, v + 13, NULL, 8, 8, &err), &err);
    void *pending;
    CHECK_OK(cf_column_pending_export(b, &pending, &len, &err), &err);
    CHECK_OK(cf_column_close(b, &err), &err);
    CHECK_OK(cf_column_pending_merge(a, pending, len, &err), &err);
    cf_free(pending);
    CHECK_OK(cf_column_close(a, &err), &err);
    char p1[4200], p2[4200];
    snprintf(p1, sizeof p1, "%s/one/colfile-v1", cf_test_dir());
    snprintf(p2, sizeof p2, "%s/two/colfile-v1", cf_test_dir());
    char t1[8192] = "", t2[8192] = "";
    FILE *fp = fopen(p1, "r");
    if (fp) { t1[fread(t1, 1, sizeof t1 - 1, fp)] = 0; fclose(fp); }
    fp = fopen(p2, "r");
    if (fp) { t2[fread(t2, 1, sizeof t2 - 1, fp)] = 0; fclose(fp); }
    CHECK(strlen(t1) > 100);
    CHECK_EQ_STR(t2, t1);
    CHECK_OK(cf_column_open(&a, f, "two", &err), &err);
    check_all(a, v);
    CHECK_OK(cf_column_close(a, &err), &err);
    cf_file_close(f);
}

static void test_integer_bounds_round_outward(void)
{
    cf_error err;
    cf_file *f;
    CHECK_OK(cf_file_open(&f, cf_test_dir(), CF_OPEN_WRITE, &err), &err);
    cf_column *c;
    int64_t v[2] = { (INT64_C(1) << 53) + 1, (INT64_C(1) << 53) + 3 };
    CHECK_OK(cf_column_create(&c, f, "i", "i8", 1, 2, 1, &err), &err);
    CHECK_OK(cf_column_write(c, 0, 2, v, NULL, 8, 8, &err), &err);
    CHECK_OK(cf_column_close(c, &err), &err);
    CHECK_OK(cf_column_open(&c, f, "i", &err), &err);
    cf_chunk_stats s;
    CHECK_OK(cf_column_chunk_stats(c, 0, 0, &s, &err), &err);
    CHECK(s.valid && s.ordered);
    CHECK((long double)s.min <= (long double)v[0]);
    CHECK((long double)s.max >= (long double)v[1]);
    CHECK_OK(cf_column_close(c, &err), &err);
    cf_file_close(f);
}

static void test_statistics_switched_off(void)
{
    cf_error err;
    cf_file *f;
    CHECK_OK(cf_file_open(&f, cf_test_dir(), CF_OPEN_WRITE, &err), &err);
    double v[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
    cf_column *c;
    CHECK_OK(cf_column_create(&c, f, "x", "f8", 1, 8, 1, &err), &err);
    cf_column_set_statistics(c, 0);
    CHECK_OK(cf_column_write(c, 0, 8, v, NULL, 8, 8, &err), &err);
    CHECK_OK(cf_column_close(c, &err), &err);
    CHECK_OK(cf_column_open(&c, f, "x", &err), &err);
    cf_chunk_stats s;
    CHECK_OK(cf_column_chunk_stats(c, 0, 0, &s, &err), &err);
    CHECK(!s.valid);
    uint32_t crc;
    CHECK(cf_column_blob_crc32c(c, 0, &crc)); /* the CRC is still computed */
    CHECK_OK(cf_column_close(c, &err), &err);
    cf_file_close(f);
}

/* Large writes digest on a helper thread: the files must be the same as
 * when the same data arrives in small writes digested inline. */
static void test_large_writes_match_small_ones(void)
{
    enum { N = 1 << 21 }; /* 2 Mi rows x 3: 48 MiB of f8, 24 MiB of f4 source */
    float *src = malloc((size_t)N * 3 * sizeof *src);
    for (int64_t i = 0; i < (int64_t)N * 3; i++) src[i] = (float)((i * 7919) % 100003) * 0.25f - 5000.0f;
    src[12345] = NAN;
    cf_error err;
    cf_file *f;
    CHECK_OK(cf_file_open(&f, cf_test_dir(), CF_OPEN_WRITE, &err), &err);
    const char *names[2] = { "big", "small" };
    for (int m = 0; m < 2; m++) {
        cf_column *c;
        CHECK_OK(cf_column_create(&c, f, names[m], "f8", 3, N, 3, &err), &err);
        if (m == 0) {
            CHECK_OK(cf_column_write(c, 0, N, src, "f4", 12, 4, &err), &err); /* converted, pipelined */
        } else {
            for (int64_t r = 0; r < N; r += 100000) {
                int64_t n = N - r < 100000 ? N - r : 100000;
                CHECK_OK(cf_column_write(c, r, n, src + r * 3, "f4", 12, 4, &err), &err);
            }
        }
        CHECK_OK(cf_column_close(c, &err), &err);
    }
    const char *files[] = { "header", "colfile-v1", "000001" };
    char a[4200], b[4200];
    snprintf(a, sizeof a, "%s/big", cf_test_dir());
    snprintf(b, sizeof b, "%s/small", cf_test_dir());
    for (int k = 0; k < 3; k++) {
        char *ta = cf_test_slurp(a, files[k], NULL), *tb = cf_test_slurp(b, files[k], NULL);
        CHECK(ta && tb && strcmp(ta, tb) == 0);
        free(ta);
        free(tb);
    }
    /* And a direct (same dtype, contiguous) large write of the stored bytes. */
    double *d = malloc((size_t)N * 3 * sizeof *d);
    cf_column *c;
    CHECK_OK(cf_column_open(&c, f, "big", &err), &err);
    CHECK_OK(cf_column_read(c, 0, N, d, NULL, 24, 8, &err), &err);
    CHECK_OK(cf_column_close(c, &err), &err);
    CHECK_OK(cf_column_create(&c, f, "direct", "f8", 3, N, 3, &err), &err);
    CHECK_OK(cf_column_write(c, 0, N, d, NULL, 24, 8, &err), &err);
    CHECK_OK(cf_column_close(c, &err), &err);
    snprintf(b, sizeof b, "%s/direct", cf_test_dir());
    for (int k = 0; k < 2; k++) {
        char *ta = cf_test_slurp(a, files[k], NULL), *tb = cf_test_slurp(b, files[k], NULL);
        CHECK(ta && tb && strcmp(ta, tb) == 0);
        free(ta);
        free(tb);
    }
    free(d);
    free(src);
    cf_file_close(f);
}

/* Every way write_range cuts a write -- digested inline below
 * CF__DIGEST_MIN_BYTES, on the helper with the next hand-over posted ahead
 * above it, hand-overs of CF__DIGEST_CHUNK_BYTES and the short last one,
 * write-back started every 16 MiB of a durable write, requests crossing a
 * blob boundary, in place or converted from a strided buffer -- gives the
 * files that one write of everything gives, and blobs whose recorded byte
 * sums, CRC32C and statistics a fresh read of the data confirms. */
static void test_write_sizes_around_the_thresholds(void)
{
    const int64_t w = 8, rows = 5 * CF__DIGEST_MIN_BYTES / w + 12345; /* about 40 MiB */
    const int64_t nfile = 2;                                            /* blobs of about 20 MiB */
    double *v = malloc((size_t)rows * sizeof *v);
    double *wide = malloc((size_t)rows * 2 * sizeof *wide); /* v at a stride of 16 bytes */
    for (int64_t i = 0; i < rows; i++) {
        /* multiples of 1/8: every partial sum is exact, whatever the order */
        v[i] = (double)((i * 2654435761u) % 1000003) * 0.125 - 60000.0;
        if (i % 1000001 == 77) v[i] = NAN;
        wide[2 * i] = v[i];
        wide[2 * i + 1] = -1.0;
    }
    /* The requests' sizes in rows, cycled through until the column is full:
     * just under, at and just over the helper's threshold and hand-over, a
     * few rows, the inline pieces. */
    const int64_t m = CF__DIGEST_MIN_BYTES / w, h = CF__DIGEST_CHUNK_BYTES / w;
    const int64_t sizes[] = { m - 1, m, m + 1, 3, h + 1, 2 * m + 5, CF__CHUNK_BYTES / w + 1, h - 1, m + h };
    const int nsizes = (int)(sizeof sizes / sizeof sizes[0]);
    cf_error err;
    cf_file *f;
    CHECK_OK(cf_file_open(&f, cf_test_dir(), CF_OPEN_WRITE, &err), &err);
    const char *names[3] = { "whole", "pieces", "pieces-converted" };
    for (int t = 0; t < 3; t++) {
        cf_column *c;
        CHECK_OK(cf_column_create(&c, f, names[t], "f8", 1, rows, nfile, &err), &err);
        CHECK_OK(cf_column_set_chunk_rows(c, 100000, &err), &err);
        if (t == 0) {
            CHECK_OK(cf_column_write(c, 0, rows, v, NULL, 8, 8, &err), &err);
        } else {
            int64_t r = 0;
            for (int k = 0; r < rows; k++) {
                int64_t n = sizes[k % nsizes] < rows - r ? sizes[k % nsizes] : rows - r;
                if (t == 1) CHECK_OK(cf_column_write(c, r, n, v + r, NULL, 8, 8, &err), &err);
                else CHECK_OK(cf_column_write(c, r, n, wide + 2 * r, NULL, 16, 16, &err), &err);
                r += n;
            }
        }
        CHECK_OK(cf_column_close(c, &err), &err);
    }
    const char *files[] = { "header", "colfile-v1", "000000", "000001" };
    char a[4200], b[4200];
    snprintf(a, sizeof a, "%s/whole", cf_test_dir());
    for (int t = 1; t < 3; t++) {
        snprintf(b, sizeof b, "%s/%s", cf_test_dir(), names[t]);
        for (int k = 0; k < 4; k++) {
            char *ta = cf_test_slurp(a, files[k], NULL), *tb = cf_test_slurp(b, files[k], NULL);
            CHECK(ta && tb);
            if (ta && tb) {
                if (k < 2) CHECK_EQ_STR(ta, tb);
                else CHECK(memcmp(ta, tb, (size_t)(rows / nfile) * 8) == 0);
            }
            free(ta);
            free(tb);
        }
    }
    for (int t = 0; t < 3; t++) {
        cf_column *c;
        CHECK_OK(cf_column_open(&c, f, names[t], &err), &err);
        for (int64_t i = 0; i < nfile; i++) {
            unsigned status = 99;
            CHECK_OK(cf_column_verify_blob(c, i, &status, &err), &err);
            CHECK_EQ_INT(status, CF_BLOB_OK);
        }
        check_all(c, v);
        CHECK_OK(cf_column_close(c, &err), &err);
    }
    free(wide);
    free(v);
    cf_file_close(f);
}

/* A large write whose copy into the file fails (the file size limit) while
 * the helper holds the next hand-over: the write fails with CF_EIO, returns
 * only once the helper is done with the caller's bytes and the writer's
 * running sums, and the handle commits nothing. */
static void test_failed_large_write(void)
{
    const int64_t rows = 3 * CF__DIGEST_MIN_BYTES / 8;
    double *v = malloc((size_t)rows * sizeof *v);
    for (int64_t i = 0; i < rows; i++) v[i] = (double)i;
    struct rlimit old, lim;
    CHECK(getrlimit(RLIMIT_FSIZE, &old) == 0);
    void (*old_handler)(int) = signal(SIGXFSZ, SIG_IGN); /* EFBIG instead of the signal */
    cf_error err;
    cf_file *f;
    CHECK_OK(cf_file_open(&f, cf_test_dir(), CF_OPEN_WRITE, &err), &err);
    cf_column *c;
    CHECK_OK(cf_column_create(&c, f, "x", "f8", 1, rows, 1, &err), &err);
    lim = old;
    lim.rlim_cur = (rlim_t)(CF__DIGEST_MIN_BYTES + CF__DIGEST_CHUNK_BYTES / 2);
    CHECK(setrlimit(RLIMIT_FSIZE, &lim) == 0);
    CHECK_FAILS(cf_column_write(c, 0, rows, v, NULL, 8, 8, &err), CF_EIO, &err, "write of");
    CHECK(setrlimit(RLIMIT_FSIZE, &old) == 0);
    signal(SIGXFSZ, old_handler);
    CHECK_FAILS(cf_column_close(c, &err), CF_EIO, &err, "not committed");
    CHECK_FAILS(cf_column_open(&c, f, "x", &err), CF_ENOENT, &err, NULL);
    cf_file_close(f);
    free(v);
}

CF_TESTS(CF_TEST(test_readers_parse_statistics_when_asked), CF_TEST(test_large_writes_match_small_ones), CF_TEST(test_write_sizes_around_the_thresholds),
         CF_TEST(test_failed_large_write), CF_TEST(test_statistics_switched_off), CF_TEST(test_writes_compute_statistics), CF_TEST(test_stale_statistics_are_not_trusted),
         CF_TEST(test_partial_chunks_merge), CF_TEST(test_integer_bounds_round_outward),
         CF_TEST(test_statistics_file_of_older_writers))
