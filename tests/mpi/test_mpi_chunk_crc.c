/* test_mpi_chunk_crc.c - chunks that several ranks wrote end with a known
 * CRC32C: the close combines the ranks' pieces of each chunk (in rank
 * order), the chunk index records it, and a verifying read of part of a
 * blob checks a chunk split between ranks, and detects a flipped byte in
 * it (docs/format.md 8.6). */
#include "mpi_harness.h"
#include "chunked_column.h"

#include <fcntl.h>
#include <unistd.h>

/* 4 rows a chunk, 4099 rows: 1025 chunks or more (enough for the chunk
 * index); rank boundaries at 2050 (2 ranks) and 1025, 2050, 3075 (4
 * ranks) fall inside chunks, of one blob or of three. */
enum { CHUNK = 4, TOTAL = 4099 };

static double value(int64_t row) { return (double)row * 1.25 - 3; }

/* The first rank boundary inside a chunk (chunks restart at each of the
 * nfile blobs), *b its blob and *b0 the blob's first row; one rank: row
 * 2050. */
static int64_t split_row(int nfile, int64_t *b, int64_t *b0)
{
    int64_t s = 2050;
    for (int r = 1; r < cf_test_size(); r++) {
        cf_plan_share(TOTAL, cf_test_size(), r, &s);
        *b = 0;
        *b0 = 0;
        while (*b0 + cf_plan_share(TOTAL, nfile, *b, NULL) <= s) *b0 += cf_plan_share(TOTAL, nfile, (*b)++, NULL);
        if ((s - *b0) % CHUNK) return s;
    }
    *b = 0;
    *b0 = 0;
    while (*b0 + cf_plan_share(TOTAL, nfile, *b, NULL) <= s) *b0 += cf_plan_share(TOTAL, nfile, (*b)++, NULL);
    return s;
}

static void write_column(const char *dir, int nfile)
{
    cf_error err;
    cf_file *f = NULL;
    cf_column *c = NULL;
    int64_t first = 0, n = cf_plan_share(TOTAL, cf_test_size(), cf_test_rank(), &first);
    cf_mpi_options o;
    cf_mpi_options_init(&o);
    o.mode = CF_IO_THROTTLED; /* every rank writes its own rows */
    CHECK_OK(cf_mpi_file_open(&f, cf_test_comm(), dir, CF_OPEN_WRITE | CF_OPEN_CREATE, &err), &err);
    c = create_chunked(f, "x", "f8", 1, TOTAL, nfile, CHUNK);
    double *v = malloc((size_t)(n > 0 ? n : 1) * sizeof *v);
    for (int64_t i = 0; i < n; i++) v[i] = value(first + i);
    CHECK_OK(cf_mpi_column_write(c, cf_test_comm(), first, n, v, NULL, 8, 8, &o, &err), &err);
    free(v);
    CHECK_OK(cf_mpi_column_close(c, cf_test_comm(), &err), &err);
    cf_file_close(f);
}

/* Read rows [r0, r0 + n) of x in dir with verification; returns the read's
 * result (values checked when it succeeds). */
static int read_verified(const char *dir, int64_t r0, int64_t n, cf_error *err)
{
    cf_file *f = NULL;
    cf_column *c = NULL;
    int rc = cf_file_open(&f, dir, CF_OPEN_READ | CF_OPEN_VERIFY, err);
    if (rc == 0) rc = cf_column_open(&c, f, "x", err);
    double got[16];
    if (rc == 0) rc = cf_column_read(c, r0, n, got, NULL, 8, 8, err);
    for (int64_t i = 0; rc == 0 && i < n; i++) CHECK(got[i] == value(r0 + i));
    cf_column_close(c, NULL);
    cf_file_close(f);
    return rc;
}

static void check_split_chunks(int nfile)
{
    char dir[4200];
    snprintf(dir, sizeof dir, "%s/F%d", cf_test_dir(), nfile);
    write_column(dir, nfile);
    MPI_Barrier(cf_test_comm());
    if (cf_test_rank() == 0) {
        cf_error err;
        cf_file *f = NULL;
        cf_column *c = NULL;
        CHECK_OK(cf_file_open(&f, dir, CF_OPEN_READ, &err), &err);
        CHECK_OK(cf_column_open(&c, f, "x", &err), &err);
        cf_index_info info;
        CHECK_OK(cf_column_index_info(c, &info, &err), &err);
        CHECK_EQ_INT(info.state, CF_INDEX_CURRENT);
        /* every chunk's CRC32C is known, the split ones included */
        int64_t known = 0, chunks = cf_column_chunk_count(c), want = 0;
        for (int i = 0; i < nfile; i++) want += (cf_plan_share(TOTAL, nfile, i, NULL) + CHUNK - 1) / CHUNK;
        CHECK_EQ_INT(chunks, want);
        for (int64_t k = 0; k < chunks; k++) {
            uint32_t crc;
            known += cf_column_chunk_crc32c(c, k, &crc) == 1;
        }
        CHECK_EQ_INT(known, chunks);
        cf_column_close(c, NULL);
        cf_file_close(f);

        /* the blob of the first rank boundary, and the chunk around it
         * (chunks restart at every blob) */
        int64_t b = 0, b0 = 0, s = split_row(nfile, &b, &b0);
        int64_t k0 = b0 + (s - b0) / CHUNK * CHUNK;
        if (cf_test_size() > 1) CHECK(k0 < s); /* a chunk split between two ranks */
        CHECK_OK(read_verified(dir, k0, CHUNK, &err), &err);
        /* flip one byte of the split chunk, at the row just after the
         * rank boundary (the second rank's piece) */
        char blob[4300], name[24];
        snprintf(name, sizeof name, "%06llX", (long long)b);
        snprintf(blob, sizeof blob, "%s/x/%s", dir, name);
        int fd = open(blob, O_RDWR);
        CHECK(fd >= 0);
        unsigned char byte = 0;
        CHECK(pread(fd, &byte, 1, (s - b0) * 8 + 3) == 1);
        byte ^= 0x10;
        CHECK(pwrite(fd, &byte, 1, (s - b0) * 8 + 3) == 1);
        close(fd);
        int rc = read_verified(dir, k0, CHUNK, &err);
        CHECK_EQ_INT(rc, CF_ECHECKSUM);
        CHECK(strstr(err.message, name) != NULL);
        /* the chunk before and the one after still read, verified */
        CHECK_OK(read_verified(dir, k0 - CHUNK, CHUNK, &err), &err);
        CHECK_OK(read_verified(dir, k0 + CHUNK, CHUNK, &err), &err);
    }
    MPI_Barrier(cf_test_comm());
}

static void test_one_blob_split_between_ranks(void) { check_split_chunks(1); }

static void test_three_blobs_split_between_ranks(void) { check_split_chunks(3); }

CF_MPI_TESTS(CF_TEST(test_one_blob_split_between_ranks), CF_TEST(test_three_blobs_split_between_ranks))
