/* test_index.c - the binary chunk index colfile-index-v1: written by the
 * commits of large columns, read page by page with a bounded number of
 * bytes, exact against the data, never trusted when stale, damaged or cut
 * short, and the chunk CRC32C that let partial reads verify. */
#include "harness.h"

#include "checksum.h"
#include "fsutil.h"

#include <fcntl.h>
#include <math.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

static char *col_file(const char *col, const char *leaf)
{
    static char path[4200];
    snprintf(path, sizeof path, "%s/%s/%s", cf_test_dir(), col, leaf);
    return path;
}

static int file_exists(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0;
}

static int64_t file_size(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 ? (int64_t)st.st_size : -1;
}

/* v[i * nmemb + j]: a pseudo-random f8 column with NaNs. */
static double *make_values(int64_t rows, int64_t nmemb, uint64_t seed)
{
    double *v = malloc(sizeof *v * (size_t)(rows * nmemb));
    for (int64_t i = 0; i < rows * nmemb; i++) {
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        v[i] = (double)(seed >> 40) / 1000.0 - 5000.0;
        if ((seed >> 20) % 97 == 0) v[i] = NAN;
    }
    return v;
}

static cf_column *write_col(cf_file *f, const char *name, const double *v, int64_t rows, int64_t nmemb,
                            int64_t nfile, int64_t chunk)
{
    cf_error err;
    cf_column *c = NULL;
    CHECK_OK(cf_column_create(&c, f, name, "f8", nmemb, rows, nfile, &err), &err);
    CHECK_OK(cf_column_set_chunk_rows(c, chunk, &err), &err);
    CHECK_OK(cf_column_write(c, 0, rows, v, NULL, 8 * nmemb, 8, &err), &err);
    return c;
}

/* The statistics of rows [r0, r1) component j of v, checked against s. */
static void expect_range(const cf_chunk_stats *s, const double *v, int64_t nmemb, int64_t j, int64_t r0, int64_t r1)
{
    int64_t nan = 0;
    double mn = INFINITY, mx = -INFINITY, sum = 0;
    for (int64_t i = r0; i < r1; i++) {
        double x = v[i * nmemb + j];
        if (isnan(x)) {
            nan++;
            continue;
        }
        mn = x < mn ? x : mn;
        mx = x > mx ? x : mx;
        sum += x;
    }
    CHECK(s->valid);
    CHECK_EQ_INT(s->first_row, r0);
    CHECK_EQ_INT(s->rows, r1 - r0);
    CHECK_EQ_INT(s->count, r1 - r0);
    CHECK_EQ_INT(s->nan_count, nan);
    if (nan < r1 - r0) {
        CHECK(s->min == mn);
        CHECK(s->max == mx);
        CHECK(fabs(s->sum - sum) <= 1e-9 * fabs(sum) + 1e-6);
    }
}

static void test_index_round_trip(void)
{
    cf_error err;
    cf_file *f;
    const int64_t rows = 70000, nmemb = 3, chunk = 1; /* 70000 chunks: two levels above them */
    double *v = make_values(rows, nmemb, 7);
    CHECK_OK(cf_file_open(&f, cf_test_dir(), CF_OPEN_WRITE, &err), &err);
    CHECK_OK(cf_column_close(write_col(f, "p", v, rows, nmemb, 3, chunk), &err), &err);
    cf_file_close(f);
    CHECK(file_exists(col_file("p", "colfile-index-v1")));

    CHECK_OK(cf_file_open(&f, cf_test_dir(), 0, &err), &err);
    cf_column *c;
    CHECK_OK(cf_column_open(&c, f, "p", &err), &err);
    cf_index_info info;
    CHECK_OK(cf_column_index_info(c, &info, &err), &err);
    CHECK_EQ_INT(info.state, CF_INDEX_CURRENT);
    CHECK_EQ_INT(info.chunk_rows, chunk);
    CHECK_EQ_INT(info.fanout, 256);
    CHECK_EQ_INT(info.levels, 3);
    int64_t n0 = cf_column_index_count(c, 0), n1 = cf_column_index_count(c, 1), n2 = cf_column_index_count(c, 2);
    CHECK_EQ_INT(n0, info.chunks);
    CHECK_EQ_INT(n1, (n0 + 255) / 256);
    CHECK_EQ_INT(n2, (n1 + 255) / 256);
    /* the top records cover the column */
    cf_chunk_stats top[2];
    CHECK_EQ_INT(n2, 2);
    for (int64_t j = 0; j < nmemb; j++) {
        CHECK_OK(cf_column_index_nodes(c, 2, 0, 2, j, top, &err), &err);
        expect_range(&top[0], v, nmemb, j, 0, top[0].rows);
        expect_range(&top[1], v, nmemb, j, top[0].rows, rows);
    }
    /* every chunk record, and every record of level 1, against the data */
    cf_chunk_stats *s = malloc(sizeof *s * (size_t)n0);
    for (int64_t j = 0; j < nmemb; j++) {
        CHECK_OK(cf_column_index_nodes(c, 0, 0, n0, j, s, &err), &err);
        for (int64_t k = 0; k < n0; k++) expect_range(&s[k], v, nmemb, j, s[k].first_row, s[k].first_row + s[k].rows);
        CHECK_OK(cf_column_index_nodes(c, 1, 0, n1, j, s, &err), &err);
        int64_t at = 0;
        for (int64_t k = 0; k < n1; k++) {
            CHECK_EQ_INT(s[k].first_row, at);
            expect_range(&s[k], v, nmemb, j, at, at + s[k].rows);
            at += s[k].rows;
        }
        CHECK_EQ_INT(at, rows);
    }
    /* chunk CRC32C of the bytes */
    for (int64_t k = 0; k < n0; k += 97) {
        cf_chunk_stats one;
        uint32_t crc = 0;
        CHECK_OK(cf_column_index_nodes(c, 0, k, 1, 0, &one, &err), &err);
        CHECK(cf_column_chunk_crc32c(c, k, &crc) == 1);
        CHECK(crc == cf__crc32c_update(0, v + one.first_row * nmemb, (size_t)(one.rows * nmemb * 8)));
    }
    CHECK_FAILS(cf_column_index_nodes(c, 0, n0, 1, 0, s, &err), CF_ERANGE, &err, "no index records");
    free(s);
    CHECK_OK(cf_column_close(c, &err), &err);

    /* planning-sized reads: the top and one path down read a few pages */
    CHECK_OK(cf_column_open(&c, f, "p", &err), &err);
    cf_chunk_stats one[256];
    CHECK_OK(cf_column_index_nodes(c, 2, 0, 1, 0, one, &err), &err);
    CHECK_OK(cf_column_index_nodes(c, 1, 5, 1, 0, one, &err), &err);
    CHECK_OK(cf_column_index_nodes(c, 0, 5 * 256, 256, 0, one, &err), &err);
    int64_t rb = 8 + 32 * nmemb;
    CHECK(cf_column_index_bytes_read(c) <= 1024 + rb * (2 + 256 + 256));
    CHECK(cf_column_index_bytes_read(c) < file_size(col_file("p", "colfile-index-v1")) / 10);
    /* the per-chunk accessor agrees with the index */
    cf_chunk_stats a;
    CHECK_OK(cf_column_chunk_stats(c, 5 * 256 + 3, 1, &a, &err), &err);
    CHECK_OK(cf_column_index_nodes(c, 0, 5 * 256 + 3, 1, 1, one, &err), &err);
    CHECK(a.valid && one[0].valid && a.min == one[0].min && a.max == one[0].max && a.nan_count == one[0].nan_count);
    CHECK_OK(cf_column_close(c, &err), &err);
    cf_file_close(f);
    free(v);
}

/* Small columns keep their statistics in the text alone. */
static void test_small_column_has_no_index(void)
{
    cf_error err;
    cf_file *f;
    double *v = make_values(1000, 1, 3);
    CHECK_OK(cf_file_open(&f, cf_test_dir(), CF_OPEN_WRITE, &err), &err);
    CHECK_OK(cf_column_close(write_col(f, "s", v, 1000, 1, 1, 16), &err), &err);
    CHECK(!file_exists(col_file("s", "colfile-index-v1")));
    cf_column *c;
    CHECK_OK(cf_column_open(&c, f, "s", &err), &err);
    cf_index_info info;
    CHECK_OK(cf_column_index_info(c, &info, &err), &err);
    CHECK_EQ_INT(info.state, CF_INDEX_ABSENT);
    cf_chunk_stats one;
    CHECK_FAILS(cf_column_index_nodes(c, 0, 0, 1, 0, &one, &err), CF_ENOENT, &err, "no current chunk index");
    CHECK_OK(cf_column_close(c, &err), &err);
    cf_file_close(f);
    free(v);
}

/* Flip one byte of the file at `at` (from the end when negative). */
static void flip(const char *path, int64_t at)
{
    int fd = open(path, O_RDWR);
    struct stat st;
    CHECK(fd >= 0 && fstat(fd, &st) == 0);
    off_t pos = at >= 0 ? (off_t)at : st.st_size + at;
    unsigned char b;
    CHECK(pread(fd, &b, 1, pos) == 1);
    b ^= 0x10;
    CHECK(pwrite(fd, &b, 1, pos) == 1);
    close(fd);
    /* the mtime the commit gave it (the header's), as a silent corruption keeps it */
    struct timespec t[2] = { st.st_atim, st.st_mtim };
    CHECK(utimensat(AT_FDCWD, path, t, 0) == 0);
}

static void test_damaged_and_truncated_index(void)
{
    cf_error err;
    cf_file *f;
    const int64_t rows = 20000;
    double *v = make_values(rows, 1, 11);
    CHECK_OK(cf_file_open(&f, cf_test_dir(), CF_OPEN_WRITE, &err), &err);
    CHECK_OK(cf_column_close(write_col(f, "d", v, rows, 1, 2, 8), &err), &err);
    cf_file_close(f);
    char ip[4200];
    snprintf(ip, sizeof ip, "%s", col_file("d", "colfile-index-v1"));

    /* a byte of a chunk record: the page fails its CRC32C when read */
    flip(ip, -100);
    CHECK_OK(cf_file_open(&f, cf_test_dir(), 0, &err), &err);
    cf_column *c;
    CHECK_OK(cf_column_open(&c, f, "d", &err), &err);
    cf_index_info info;
    CHECK_OK(cf_column_index_info(c, &info, &err), &err);
    CHECK_EQ_INT(info.state, CF_INDEX_CURRENT); /* only the head read so far */
    int64_t n0 = cf_column_index_count(c, 0);
    cf_chunk_stats *s = malloc(sizeof *s * (size_t)n0);
    CHECK_OK(cf_column_index_nodes(c, 0, 0, 256, 0, s, &err), &err); /* another page: fine */
    CHECK_FAILS(cf_column_index_nodes(c, 0, n0 - 1, 1, 0, s, &err), CF_EFORMAT, &err, "fail their CRC32C");
    CHECK(strstr(err.message, "colfile-index-v1") != NULL);
    CHECK_OK(cf_column_index_info(c, &info, &err), &err);
    CHECK_EQ_INT(info.state, CF_INDEX_DAMAGED);
    CHECK(strstr(info.problem, "fail their CRC32C") != NULL);
    CHECK_OK(cf_column_close(c, &err), &err);
    /* the per-chunk accessor: the damaged blob's statistics unknown, never wrong */
    CHECK_OK(cf_column_open(&c, f, "d", &err), &err);
    for (int64_t k = 0; k < cf_column_chunk_count(c); k++) {
        cf_chunk_stats one;
        CHECK_OK(cf_column_chunk_stats(c, k, 0, &one, &err), &err);
        if (one.valid) expect_range(&one, v, 1, 0, one.first_row, one.first_row + one.rows);
    }
    CHECK_OK(cf_column_close(c, &err), &err);
    cf_file_close(f);

    /* the head */
    flip(ip, -100);
    flip(ip, 20);
    CHECK_OK(cf_file_open(&f, cf_test_dir(), 0, &err), &err);
    CHECK_OK(cf_column_open(&c, f, "d", &err), &err);
    CHECK_OK(cf_column_index_info(c, &info, &err), &err);
    CHECK_EQ_INT(info.state, CF_INDEX_DAMAGED);
    CHECK(strstr(info.problem, "head fails its CRC32C") != NULL);
    CHECK_OK(cf_column_close(c, &err), &err);
    cf_file_close(f);

    /* cut short */
    flip(ip, 20);
    struct stat st;
    CHECK(stat(ip, &st) == 0 && truncate(ip, st.st_size - 1000) == 0);
    struct timespec t[2] = { st.st_atim, st.st_mtim };
    CHECK(utimensat(AT_FDCWD, ip, t, 0) == 0);
    CHECK_OK(cf_file_open(&f, cf_test_dir(), 0, &err), &err);
    CHECK_OK(cf_column_open(&c, f, "d", &err), &err);
    CHECK_OK(cf_column_index_info(c, &info, &err), &err);
    CHECK_EQ_INT(info.state, CF_INDEX_DAMAGED);
    CHECK(strstr(info.problem, "truncated") != NULL);
    CHECK_OK(cf_column_close(c, &err), &err);

    /* a header written since (another tool, or touch): stale, not used */
    CHECK(utimensat(AT_FDCWD, col_file("d", "header"), NULL, 0) == 0);
    CHECK_OK(cf_column_open(&c, f, "d", &err), &err);
    CHECK_OK(cf_column_index_info(c, &info, &err), &err);
    CHECK_EQ_INT(info.state, CF_INDEX_STALE);
    CHECK_OK(cf_column_close(c, &err), &err);
    cf_file_close(f);
    free(s);
    free(v);
}

/* Partial reads with verification check the chunks they read whole. */
static void test_partial_reads_verify_chunks(void)
{
    cf_error err;
    cf_file *f;
    const int64_t rows = 40000, chunk = 32;
    double *v = make_values(rows, 1, 5);
    CHECK_OK(cf_file_open(&f, cf_test_dir(), CF_OPEN_WRITE, &err), &err);
    CHECK_OK(cf_column_close(write_col(f, "x", v, rows, 1, 1, chunk), &err), &err);
    cf_file_close(f);
    /* one bit of row 1000 (chunk 31) goes bad on disk */
    flip(col_file("x", "000000"), 1000 * 8 + 3);
    CHECK_OK(cf_file_open(&f, cf_test_dir(), CF_OPEN_VERIFY, &err), &err);
    cf_column *c;
    CHECK_OK(cf_column_open(&c, f, "x", &err), &err);
    double *out = malloc(sizeof *out * (size_t)rows);
    /* rows 990..1009 cover no chunk whole: unchecked */
    CHECK_OK(cf_column_read(c, 990, 20, out, NULL, 8, 8, &err), &err);
    /* rows 960..1023 are chunks 30 and 31: checked */
    CHECK_FAILS(cf_column_read(c, 960, 64, out, NULL, 8, 8, &err), CF_ECHECKSUM, &err, "chunk 31 (rows 992..1023)");
    CHECK_FAILS(cf_column_read(c, 100, 5000, out, NULL, 8, 8, &err), CF_ECHECKSUM, &err, "chunk 31");
    /* converted reads too */
    float *fl = malloc(sizeof *fl * (size_t)rows);
    CHECK_FAILS(cf_column_read(c, 992, 32, fl, "f4", 4, 4, &err), CF_ECHECKSUM, &err, "chunk 31");
    /* chunks elsewhere read and check fine */
    CHECK_OK(cf_column_read(c, 1024, 20000, out, NULL, 8, 8, &err), &err);
    CHECK(memcmp(out, v + 1024, 20000 * 8) == 0);
    cf_column_set_verify(c, 0);
    CHECK_OK(cf_column_read(c, 960, 64, out, NULL, 8, 8, &err), &err);
    CHECK_OK(cf_column_close(c, &err), &err);
    cf_file_close(f);
    free(out);
    free(fl);
    free(v);
}

/* An append keeps the statistics and chunk CRC32C of the blobs it leaves
 * alone, through the index (the text holds the small ones too). */
static void test_append_keeps_index(void)
{
    cf_error err;
    cf_file *f;
    const int64_t rows = 30000, chunk = 8;
    double *v = make_values(rows + 5000, 1, 9);
    CHECK_OK(cf_file_open(&f, cf_test_dir(), CF_OPEN_WRITE, &err), &err);
    CHECK_OK(cf_column_close(write_col(f, "a", v, rows, 1, 2, chunk), &err), &err);
    cf_column *c;
    CHECK_OK(cf_column_open(&c, f, "a", &err), &err);
    CHECK_OK(cf_column_grow(c, 5000, 1, &err), &err);
    CHECK_OK(cf_column_write(c, rows, 5000, v + rows, NULL, 8, 8, &err), &err);
    CHECK_OK(cf_column_close(c, &err), &err);
    cf_file_close(f);
    CHECK_OK(cf_file_open(&f, cf_test_dir(), 0, &err), &err);
    CHECK_OK(cf_column_open(&c, f, "a", &err), &err);
    int64_t n0 = cf_column_index_count(c, 0);
    CHECK_EQ_INT(n0, (rows + 5000) / chunk);
    cf_chunk_stats *s = malloc(sizeof *s * (size_t)n0);
    CHECK_OK(cf_column_index_nodes(c, 0, 0, n0, 0, s, &err), &err);
    for (int64_t k = 0; k < n0; k++) {
        expect_range(&s[k], v, 1, 0, s[k].first_row, s[k].first_row + s[k].rows);
        uint32_t crc = 0;
        CHECK(cf_column_chunk_crc32c(c, k, &crc) == 1);
        CHECK(crc == cf__crc32c_update(0, v + s[k].first_row, (size_t)s[k].rows * 8));
    }
    CHECK_OK(cf_column_close(c, &err), &err);
    cf_file_close(f);
    free(s);
    free(v);
}

/* More than 2^22 statistics chunks: the text holds only its head lines,
 * the index holds the chunks, and statistics and CRC32C survive a reopen. */
static void test_over_4m_chunks(void)
{
    cf_error err;
    cf_file *f;
    const int64_t rows = ((int64_t)1 << 22) + 1000;
    int32_t *v = malloc(sizeof *v * (size_t)rows);
    for (int64_t i = 0; i < rows; i++) v[i] = (int32_t)((uint32_t)((uint64_t)i * 2654435761u) >> 8) - (1 << 23);
    CHECK_OK(cf_file_open(&f, cf_test_dir(), CF_OPEN_WRITE, &err), &err);
    cf_column *c;
    CHECK_OK(cf_column_create(&c, f, "big", "i4", 1, rows, 4, &err), &err);
    CHECK_OK(cf_column_set_chunk_rows(c, 1, &err), &err);
    CHECK_OK(cf_column_write(c, 0, rows, v, NULL, 4, 4, &err), &err);
    CHECK_OK(cf_column_close(c, &err), &err);
    cf_file_close(f);
    CHECK(file_size(col_file("big", "colfile-v1")) < 4096); /* no chunk lines */
    for (int writable = 0; writable < 2; writable++) {
        CHECK_OK(cf_file_open(&f, cf_test_dir(), writable ? CF_OPEN_WRITE : 0, &err), &err);
        CHECK_OK(cf_column_open(&c, f, "big", &err), &err);
        CHECK_EQ_INT(cf_column_index_count(c, 0), rows);
        if (!writable) {
            /* a planner's walk from the top: the top level, then the
             * records under one of its records, twice down: kilobytes */
            cf_index_info info;
            CHECK_OK(cf_column_index_info(c, &info, &err), &err);
            CHECK_EQ_INT(info.levels, 3);
            int64_t nt = cf_column_index_count(c, 2);
            CHECK_EQ_INT(nt, 65);
            cf_chunk_stats walk[256];
            CHECK_OK(cf_column_index_nodes(c, 2, 0, nt, 0, walk, &err), &err);
            CHECK_OK(cf_column_index_nodes(c, 1, 768, 256, 0, walk, &err), &err);
            CHECK_OK(cf_column_index_nodes(c, 0, 800 * 256, 256, 0, walk, &err), &err);
            CHECK(walk[0].valid && walk[0].min == v[800 * 256]);
            CHECK(cf_column_index_bytes_read(c) < 48 * 1024);
        }
        for (int64_t k = 0; k < rows; k += rows / 37) {
            cf_chunk_stats s;
            CHECK_OK(cf_column_index_nodes(c, 0, k, 1, 0, &s, &err), &err);
            CHECK(s.valid && s.min == v[k] && s.max == v[k] && s.count == 1);
            uint32_t crc = 0;
            CHECK(cf_column_chunk_crc32c(c, k, &crc) == 1 && crc == cf__crc32c_update(0, &v[k], 4));
        }
        cf_chunk_stats s;
        CHECK_OK(cf_column_chunk_stats(c, rows - 1, 0, &s, &err), &err);
        CHECK(s.valid && s.min == v[rows - 1]);
        CHECK_OK(cf_column_close(c, &err), &err);
        cf_file_close(f);
    }
    free(v);
}

/* A replica built from another handle's metadata snapshot (as the ranks of
 * an MPI job get their columns) gets the header's stamp, not the
 * statistics: it reads the index itself, and its partial reads verify
 * chunks, also with more ranks than blobs. */
static void test_replicas_read_the_index(void)
{
    cf_error err;
    cf_file *f;
    const int64_t rows = 300000, chunk = 2; /* 150000 chunk records: none in the text */
    double *v = make_values(rows, 1, 13);
    for (int64_t i = 0; i < rows; i++) v[i] = (double)i;
    CHECK_OK(cf_file_open(&f, cf_test_dir(), CF_OPEN_WRITE, &err), &err);
    CHECK_OK(cf_column_close(write_col(f, "r", v, rows, 1, 1, chunk), &err), &err);
    cf_file_close(f);
    flip(col_file("r", "000000"), 123456 * 8 + 1); /* row 123456: chunk 61728 */
    for (int writable = 0; writable < 2; writable++) {
        CHECK_OK(cf_file_open(&f, cf_test_dir(), (writable ? CF_OPEN_WRITE : 0) | CF_OPEN_VERIFY, &err), &err);
        cf_column *c, *r;
        CHECK_OK(cf_column_open(&c, f, "r", &err), &err);
        void *meta;
        size_t mlen;
        CHECK_OK(cf_column_export_meta(c, &meta, &mlen, &err), &err);
        CHECK(mlen < 4096);
        CHECK_OK(cf_column_open_meta(&r, f, meta, mlen, &err), &err);
        cf_free(meta);
        cf_index_info info;
        CHECK_OK(cf_column_index_info(r, &info, &err), &err);
        CHECK_EQ_INT(info.state, CF_INDEX_CURRENT);
        cf_chunk_stats s;
        CHECK_OK(cf_column_chunk_stats(r, 1000, 0, &s, &err), &err);
        CHECK(s.valid && s.min == 2000 && s.max == 2001);
        double out[64];
        CHECK_OK(cf_column_read(r, 100000, 64, out, NULL, 8, 8, &err), &err);
        CHECK_FAILS(cf_column_read(r, 123440, 32, out, NULL, 8, 8, &err), CF_ECHECKSUM, &err,
                    "chunk 61728 (rows 123456..123457)");
        cf_column_forget(r);
        CHECK_OK(cf_column_close(c, &err), &err);
        cf_file_close(f);
    }
    free(v);
}

CF_TESTS(CF_TEST(test_replicas_read_the_index), CF_TEST(test_index_round_trip), CF_TEST(test_small_column_has_no_index),
         CF_TEST(test_damaged_and_truncated_index), CF_TEST(test_partial_reads_verify_chunks),
         CF_TEST(test_append_keeps_index), CF_TEST(test_over_4m_chunks))
