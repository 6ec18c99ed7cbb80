/* test_pending.c - several handles write one column, one commits. */
#include "harness.h"
#include "ext_text.h"

#include "checksum.h"
#include "column.h"
#include "column_handle.h"

enum { N = 1000, NFILE = 3 };

/* Write rows [0, N) as `parts` handles each writing a contiguous share;
 * handle 0 merges the others and commits. */
static void write_in_parts(const char *dir, int parts, const double *data)
{
    cf_error err;
    cf_file *f;
    CHECK_OK(cf_file_open(&f, dir, CF_OPEN_WRITE | CF_OPEN_CREATE, &err), &err);
    cf_column *root;
    CHECK_OK(cf_column_create(&root, f, "x", "f8", 1, N, NFILE, &err), &err);
    for (int p = parts - 1; p >= 0; p--) {
        int64_t lo = (int64_t)N * p / parts, hi = (int64_t)N * (p + 1) / parts;
        if (p == 0) {
            CHECK_OK(cf_column_write(root, lo, hi - lo, data + lo, NULL, 8, 8, &err), &err);
            continue;
        }
        cf_column *other;
        void *meta;
        size_t mlen;
        CHECK_OK(cf_column_export_meta(root, &meta, &mlen, &err), &err);
        CHECK_OK(cf_column_open_meta(&other, f, meta, mlen, &err), &err);
        cf_free(meta);
        CHECK_OK(cf_column_write(other, lo, hi - lo, data + lo, NULL, 8, 8, &err), &err);
        void *buf;
        size_t len;
        CHECK_OK(cf_column_pending_export(other, &buf, &len, &err), &err);
        CHECK_OK(cf_column_close(other, &err), &err); /* commits nothing */
        CHECK_OK(cf_column_pending_merge(root, buf, len, &err), &err);
        cf_free(buf);
    }
    CHECK_OK(cf_column_close(root, &err), &err);
    cf_file_close(f);
}

static void test_parts_commit_like_one_writer(void)
{
    double data[N];
    for (int i = 0; i < N; i++) data[i] = i * 1.25 - 7;
    char one[4096], four[4096], seven[4096];
    snprintf(one, sizeof one, "%s/one", cf_test_dir());
    snprintf(four, sizeof four, "%s/four", cf_test_dir());
    snprintf(seven, sizeof seven, "%s/seven", cf_test_dir());
    write_in_parts(one, 1, data);
    write_in_parts(four, 4, data);
    write_in_parts(seven, 7, data);
    const char *files[] = { "x/header", "x/colfile-v1" };
    for (int k = 0; k < 2; k++) {
        char a[4200], b[4200], c[4200];
        snprintf(a, sizeof a, "%s/%s", one, files[k]);
        snprintf(b, sizeof b, "%s/%s", four, files[k]);
        snprintf(c, sizeof c, "%s/%s", seven, files[k]);
        char *ta = cf_test_slurp(NULL, a, NULL), *tb = cf_test_slurp(NULL, b, NULL);
        char *tc = cf_test_slurp(NULL, c, NULL);
        CHECK_EQ_STR(tb, ta);
        CHECK_EQ_STR(tc, ta);
        if (k == 1) CHECK(ta && !strstr(ta, "crc32c=-")); /* every CRC known */
        free(ta); free(tb); free(tc);
    }
}

static void test_merge_rejects_damage_and_mismatch(void)
{
    cf_error err;
    cf_file *f;
    CHECK_OK(cf_file_open(&f, cf_test_dir(), CF_OPEN_WRITE, &err), &err);
    cf_column *a, *b, *other;
    CHECK_OK(cf_column_create(&a, f, "a", "i4", 1, 10, 2, &err), &err);
    CHECK_OK(cf_column_create(&other, f, "b", "i4", 1, 10, 3, &err), &err);
    /* b is a replica of a, as another rank would hold. */
    void *meta;
    size_t mlen;
    CHECK_OK(cf_column_export_meta(a, &meta, &mlen, &err), &err);
    CHECK_OK(cf_column_open_meta(&b, f, meta, mlen, &err), &err);
    cf_free(meta);
    int32_t v[10] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 };
    CHECK_OK(cf_column_write(b, 0, 10, v, NULL, 4, 4, &err), &err);
    void *buf;
    size_t len;
    CHECK_OK(cf_column_pending_export(b, &buf, &len, &err), &err);
    CHECK_FAILS(cf_column_pending_merge(other, buf, len, &err), CF_EARG, &err, "blobs");
    CHECK_FAILS(cf_column_pending_merge(a, buf, len - 1, &err), CF_EFORMAT, &err, NULL);
    CHECK_FAILS(cf_column_pending_merge(a, "XXXX", 4, &err), CF_EFORMAT, &err, "signature");
    unsigned char *bad = malloc(len);
    memcpy(bad, buf, len);
    bad[4 + 8 + 8 + 8 + 8 + 4 + 1 + 8 + 8] = 0x7f; /* first segment length: far outside the blob */
    CHECK_FAILS(cf_column_pending_merge(a, bad, len, &err), CF_EFORMAT, &err, "outside");
    free(bad);
    CHECK_EQ_INT(cf_column_blob_sum(a, 0), 0); /* nothing applied */
    CHECK_OK(cf_column_pending_merge(a, buf, len, &err), &err);
    CHECK_EQ_INT(cf_column_blob_sum(a, 0), cf__sysv_add(0, v, 20));
    cf_free(buf);
    CHECK_OK(cf_column_close(b, &err), &err);
    CHECK_OK(cf_column_close(a, &err), &err);
    CHECK_OK(cf_column_close(other, &err), &err);
    CHECK_OK(cf_column_open(&a, f, "a", &err), &err);
    uint32_t crc;
    CHECK(cf_column_blob_crc32c(a, 1, &crc));
    CHECK_EQ_INT(crc, cf__crc32c_update(0, v + 5, 20));
    CHECK_OK(cf_column_close(a, &err), &err);
    cf_file_close(f);
}

/* One process reads the metadata, the others build handles from bytes. */
static void test_metadata_snapshot(void)
{
    cf_error err;
    cf_file *f, *g;
    CHECK_OK(cf_file_open(&f, cf_test_dir(), CF_OPEN_WRITE, &err), &err);
    cf_column *c;
    int32_t v[10] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 };
    CHECK_OK(cf_column_create(&c, f, "grp/a", "i4", 2, 5, 2, &err), &err);
    CHECK_OK(cf_column_write(c, 0, 5, v, NULL, 8, 4, &err), &err);
    double zero = 0.0;
    CHECK_OK(cf_column_attr_set(c, "Time", "f8", 1, &zero, &err), &err);
    CHECK_OK(cf_column_attr_set(c, "Empty", "i4", 0, NULL, &err), &err);
    CHECK_OK(cf_column_close(c, &err), &err);
    CHECK_OK(cf_column_open(&c, f, "grp/a", &err), &err);
    void *meta;
    size_t len;
    CHECK_OK(cf_column_export_meta(c, &meta, &len, &err), &err);
    /* Another process: trusts the path, reads no metadata file. */
    char moved[4200];
    snprintf(moved, sizeof moved, "%s/grp/a/header", cf_test_dir());
    char hidden[4200];
    snprintf(hidden, sizeof hidden, "%s/grp/a/.header-away", cf_test_dir());
    CHECK(rename(moved, hidden) == 0);
    CHECK_OK(cf_file_open(&g, cf_test_dir(), CF_OPEN_WRITE | CF_OPEN_NOCHECK, &err), &err);
    cf_column *d;
    CHECK_OK(cf_column_open_meta(&d, g, meta, len, &err), &err);
    CHECK_EQ_STR(cf_column_dtype(d), "<i4");
    CHECK_EQ_INT(cf_column_nmemb(d), 2);
    CHECK_EQ_INT(cf_column_size(d), 5);
    uint32_t crc;
    CHECK(cf_column_blob_crc32c(d, 1, &crc));
    int32_t back[10];
    CHECK_OK(cf_column_read(d, 0, 5, back, NULL, 8, 4, &err), &err);
    CHECK_EQ_MEM(back, v, sizeof v);
    const void *data;
    int64_t nmemb;
    CHECK_OK(cf_column_attr_get(d, "Empty", NULL, &nmemb, &data, &err), &err);
    CHECK_EQ_INT(nmemb, 0);
    CHECK_OK(cf_column_attr_get(d, "Time", NULL, &nmemb, &data, &err), &err);
    /* A replica changes attributes in memory only. */
    CHECK_OK(cf_column_attr_set(d, "Local", "f8", 1, &zero, &err), &err);
    CHECK_OK(cf_column_attr_get(d, "Local", NULL, &nmemb, &data, &err), &err);
    char v2[4200];
    snprintf(v2, sizeof v2, "%s/grp/a/attr-v2", cf_test_dir());
    FILE *fp = fopen(v2, "r");
    char line[512] = "";
    CHECK(fp && fread(line, 1, sizeof line - 1, fp) > 0 && !strstr(line, "Local"));
    if (fp) fclose(fp);
    /* It writes; the first handle merges and commits. */
    int32_t w[2] = { -7, -8 };
    CHECK_OK(cf_column_write(d, 4, 1, w, NULL, 8, 4, &err), &err);
    void *pending;
    size_t plen;
    CHECK_OK(cf_column_pending_export(d, &pending, &plen, &err), &err);
    CHECK_OK(cf_column_close(d, &err), &err);
    CHECK(rename(hidden, moved) == 0);
    CHECK_OK(cf_column_pending_merge(c, pending, plen, &err), &err);
    CHECK_OK(cf_column_close(c, &err), &err);
    CHECK_OK(cf_column_open(&c, f, "grp/a", &err), &err);
    CHECK_OK(cf_column_read(c, 4, 1, back, NULL, 8, 4, &err), &err);
    CHECK_EQ_INT(back[1], -8);
    unsigned st;
    CHECK_OK(cf_column_verify_blob(c, 1, &st, &err), &err);
    CHECK_EQ_INT(st, CF_BLOB_SUM_MISMATCH); /* row 4 written twice: counted twice, as bigfile */
    CHECK_OK(cf_column_close(c, &err), &err);
    /* Damage is refused. */
    CHECK_FAILS(cf_column_open_meta(&d, g, meta, len - 1, &err), CF_EFORMAT, &err, "damaged");
    CHECK_FAILS(cf_column_open_meta(&d, g, "CFM2", 4, &err), CF_EFORMAT, &err, "signature");
    CHECK_FAILS(cf_file_open(&g, cf_test_dir(), CF_OPEN_WRITE | CF_OPEN_NOCHECK | CF_OPEN_CREATE, &err),
                CF_EARG, &err, "NOCHECK");
    cf_free(meta);
    cf_free(pending);
    cf_file_close(g);
    cf_file_close(f);
}

static void put_le64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}

/* Found by tests/fuzz/fuzz_pending: statistics counts from damaged state
 * overflowed int64 when merged (undefined behaviour), and a count below 0
 * or NaNs above the count were taken as they came. */
static void test_merge_damaged_statistics(void)
{
    cf_error err;
    cf_file *f;
    CHECK_OK(cf_file_open(&f, cf_test_dir(), CF_OPEN_WRITE, &err), &err);
    cf_column *a, *b;
    CHECK_OK(cf_column_create(&a, f, "a", "i8", 1, 2, 1, &err), &err);
    void *meta;
    size_t mlen;
    CHECK_OK(cf_column_export_meta(a, &meta, &mlen, &err), &err);
    CHECK_OK(cf_column_open_meta(&b, f, meta, mlen, &err), &err);
    cf_free(meta);
    int64_t v[2] = { 3, -4 };
    CHECK_OK(cf_column_write(b, 0, 2, v, NULL, 8, 8, &err), &err);
    void *buf;
    size_t len;
    CHECK_OK(cf_column_pending_export(b, &buf, &len, &err), &err);
    CHECK_OK(cf_column_close(b, &err), &err);
    /* "CFP1", nfile, chunk rows, entries; blob, sum, overflow, 1 segment;
     * one run: first chunk, nacc; then the first accumulator: count, nan,
     * min, max, then the exact sum -1: a header word and one digit; then
     * "CCR1" and the one chunk's CRC32C piece. */
    size_t count_at = 4 + 8 + 8 + 8 + 8 + 4 + 1 + 8 + 20 + 8 + 8 + 8;
    CHECK(len == count_at + 48 + 4 + 8 + 36);
    unsigned char *bad = malloc(len);
    memcpy(bad, buf, len);
    put_le64(bad + count_at, UINT64_MAX); /* count -1 */
    CHECK_FAILS(cf_column_pending_merge(a, bad, len, &err), CF_EFORMAT, &err, "impossible statistics");
    put_le64(bad + count_at, 2);
    put_le64(bad + count_at + 8, 3); /* 3 NaNs in 2 values */
    CHECK_FAILS(cf_column_pending_merge(a, bad, len, &err), CF_EFORMAT, &err, "impossible statistics");
    /* Twice 2^62 + 1 values: the merged count saturates instead of
     * overflowing (UBSan reports the overflow). */
    put_le64(bad + count_at, (UINT64_C(1) << 62) + 1);
    put_le64(bad + count_at + 8, 0);
    CHECK_OK(cf_column_pending_merge(a, bad, len, &err), &err);
    CHECK_OK(cf_column_pending_merge(a, bad, len, &err), &err);
    const cf__acc *acc = cf__stats_chunk(&a->stat.stats, 0, 0);
    CHECK(acc != NULL);
    if (acc) CHECK_EQ_INT(acc->count, INT64_MAX);
    free(bad);
    cf_free(buf);
    CHECK_OK(cf_column_close(a, &err), &err);
    cf_file_close(f);
}

CF_TESTS(CF_TEST(test_parts_commit_like_one_writer), CF_TEST(test_merge_rejects_damage_and_mismatch),
         CF_TEST(test_metadata_snapshot), CF_TEST(test_merge_damaged_statistics))
