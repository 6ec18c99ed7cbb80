/* test_column_stats.c - statistics computed by writes, kept true, merged,
 * rebuilt by indexing, never trusted when stale. */
#include "harness.h"

#include <math.h>

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
    CHECK_OK(cf_column_chunk_stats(c, 0, 0, &s, &err), &err);
    CHECK(s.valid);  /* blob 0 untouched */
    CHECK_OK(cf_column_chunk_stats(c, 2, 0, &s, &err), &err);
    CHECK(!s.valid); /* blob 1 stale */
    uint32_t crc;
    CHECK(!cf_column_blob_crc32c(c, 1, &crc));
    /* Indexing rebuilds both from the data. */
    CHECK_OK(cf_column_index_blob(c, 1, &err), &err);
    CHECK_OK(cf_column_close(c, &err), &err);
    CHECK_OK(cf_column_open(&c, f, "x", &err), &err);
    check_all(c, v);
    CHECK(cf_column_blob_crc32c(c, 1, &crc));
    CHECK_OK(cf_column_close(c, &err), &err);
    /* A damaged statistics file is no statistics, never an error. */
    snprintf(path, sizeof path, "%s/x/colfile-stats-v1", cf_test_dir());
    fp = fopen(path, "w");
    fputs("COLFILE-STATS: 1\nDTYPE: <f8\ngarbage\n", fp);
    fclose(fp);
    CHECK_OK(cf_column_open(&c, f, "x", &err), &err);
    CHECK_OK(cf_column_chunk_stats(c, 0, 0, &s, &err), &err);
    CHECK(!s.valid);
    CHECK_OK(cf_column_close(c, &err), &err);
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
    snprintf(p1, sizeof p1, "%s/one/colfile-stats-v1", cf_test_dir());
    snprintf(p2, sizeof p2, "%s/two/colfile-stats-v1", cf_test_dir());
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
    CHECK_OK(cf_column_set_statistics(c, 0, &err), &err);
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

static char *slurp_file(const char *dir, const char *name)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *fp = fopen(path, "rb");
    if (!fp) return NULL;
    fseek(fp, 0, SEEK_END);
    long n = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    buf[fread(buf, 1, (size_t)n, fp)] = 0;
    fclose(fp);
    return buf;
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
    const char *files[] = { "header", "colfile-v1", "colfile-stats-v1", "000001" };
    char a[4200], b[4200];
    snprintf(a, sizeof a, "%s/big", cf_test_dir());
    snprintf(b, sizeof b, "%s/small", cf_test_dir());
    for (int k = 0; k < 4; k++) {
        char *ta = slurp_file(a, files[k]), *tb = slurp_file(b, files[k]);
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
    for (int k = 0; k < 3; k++) {
        char *ta = slurp_file(a, files[k]), *tb = slurp_file(b, files[k]);
        CHECK(ta && tb && strcmp(ta, tb) == 0);
        free(ta);
        free(tb);
    }
    free(d);
    free(src);
    cf_file_close(f);
}

CF_TESTS(CF_TEST(test_large_writes_match_small_ones), CF_TEST(test_statistics_switched_off), CF_TEST(test_writes_compute_statistics), CF_TEST(test_stale_statistics_are_not_trusted),
         CF_TEST(test_partial_chunks_merge), CF_TEST(test_integer_bounds_round_outward))
