/* test_memory_bounds.c - a header claiming 2^46 or 2^62 rows costs memory
 * for what is on disk only: columns open for reading and writing, their
 * statistics are asked for, written, committed, exported to other ranks
 * (CFM1, CFP1) and verified, all in a forked child whose address space is
 * limited to 256 MiB (the old layout needed gigabytes). */
#include "harness.h"
#include "ext_text.h"

#include "column.h"

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#define AS_LIMIT ((rlim_t)256 << 20)

/* A File with column "x" of `dtype` x nmemb whose blob 0 holds 4 real rows
 * and whose blob 1 claims `claim` rows but holds `have` bytes (-1: no
 * file).  The header is written by hand, as another tool could. */
static void hostile(const char *dtype, int64_t nmemb, int64_t claim, int64_t have)
{
    cf_error err;
    cf_file *f;
    CHECK_OK(cf_file_open(&f, cf_test_dir(), CF_OPEN_WRITE, &err), &err);
    cf_column *c;
    CHECK_OK(cf_column_create(&c, f, "x", dtype, nmemb, 4, 1, &err), &err);
    double v[4 * 3] = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11 };
    CHECK_OK(cf_column_write(c, 0, 4, v, "<f8", 8 * nmemb, 8, &err), &err);
    CHECK_OK(cf_column_close(c, &err), &err);
    cf_file_close(f);
    char p[4200], text[512], line0[128];
    snprintf(p, sizeof p, "%s/x/header", cf_test_dir());
    FILE *h = fopen(p, "r");
    CHECK(h != NULL);
    for (int i = 0; i < 4; i++) CHECK(fgets(line0, sizeof line0, h) != NULL);   /* blob 0's line */
    fclose(h);
    snprintf(text, sizeof text, "DTYPE: %s\nNMEMB: %lld\nNFILE: 2\n%s000001: %lld : 0 : 0\n", dtype,
             (long long)nmemb, line0, (long long)(claim - 4));
    h = fopen(p, "w");
    CHECK(h != NULL);
    fputs(text, h);
    fclose(h);
    /* colfile-v1 keeps vouching for blob 0: given the new header's mtime,
     * as if colfile had committed it (docs/format.md 8.1) */
    snprintf(p, sizeof p, "%s/x/colfile-v1", cf_test_dir());
    CHECK(cf_test_ext_match_header(p) == 0);
    snprintf(p, sizeof p, "%s/x/000001", cf_test_dir());
    unlink(p);
    if (have >= 0) {
        h = fopen(p, "w");
        CHECK(h != NULL);
        for (int64_t i = 0; i < have; i++) fputc(0, h);
        fclose(h);
    }
}

/* Everything a reader and a writer do with the column; run in the child. */
static void exercise(int64_t nmemb, int64_t claim)
{
    cf_error err;
    cf_file *f;
    cf_column *c;
    double got[4 * 3];

    /* read only: real rows read, statistics asked for, the missing rows a
     * clean error naming the blob */
    CHECK_OK(cf_file_open(&f, cf_test_dir(), CF_OPEN_READ, &err), &err);
    CHECK_OK(cf_column_open(&c, f, "x", &err), &err);
    CHECK_EQ_INT(cf_column_size(c), claim);
    CHECK_OK(cf_column_read(c, 0, 4, got, "<f8", 8 * nmemb, 8, &err), &err);
    CHECK(got[0] == 0 && got[4 * nmemb - 1] == 4 * nmemb - 1);
    int64_t n = cf_column_chunk_count(c);
    CHECK(n > ((int64_t)1 << 20));   /* the layout the header claims: counted, not held */
    cf_chunk_stats st;
    CHECK_OK(cf_column_chunk_stats(c, 0, 0, &st, &err), &err);
    CHECK(st.valid && st.count == 4 && st.min == 0);
    CHECK_OK(cf_column_chunk_stats(c, n - 1, nmemb - 1, &st, &err), &err);
    CHECK(!st.valid && st.blob == 1 && st.count == 0);
    CHECK_OK(cf_column_chunk_stats(c, 1, 0, &st, &err), &err);
    CHECK(!st.valid && st.blob == 1 && st.first_row == 4);
    unsigned status;
    CHECK_OK(cf_column_verify_blob(c, 1, &status, &err), &err);
    CHECK(status & (CF_BLOB_MISSING | CF_BLOB_SHORT));
    CHECK_OK(cf_column_verify_blob(c, 0, &status, &err), &err);
    CHECK(!(status & ~(unsigned)CF_BLOB_CRC_UNKNOWN));
    int rc = cf_column_read(c, 4, 4, got, "<f8", 8 * nmemb, 8, &err);
    CHECK(rc != 0 && strstr(err.message, "000001") != NULL);
    CHECK_OK(cf_column_close(c, &err), &err);
    cf_file_close(f);

    /* read and write, as rank 0 does: the snapshot it sends carries the
     * statistics text, not a layout */
    CHECK_OK(cf_file_open(&f, cf_test_dir(), CF_OPEN_WRITE, &err), &err);
    CHECK_OK(cf_column_open(&c, f, "x", &err), &err);
    void *meta;
    size_t mlen;
    CHECK_OK(cf_column_export_meta(c, &meta, &mlen, &err), &err);
    CHECK(mlen < 4096);
    /* a replica built from it, as on another rank, writes a row of blob 1
     * and hands its state over: one chunk's accumulators, not the blob's */
    cf_column *r;
    CHECK_OK(cf_column_open_meta(&r, f, meta, mlen, &err), &err);
    cf_free(meta);
    CHECK_OK(cf_column_write(r, ((int64_t)1 << 24) + 5, 1, got, "<f8", 8 * nmemb, 8, &err), &err);
    void *pend;
    size_t plen;
    CHECK_OK(cf_column_pending_export(r, &pend, &plen, &err), &err);
    CHECK(plen < 4096);
    cf_column_forget(r);

    /* rank 0 merges that state, writes blob 0 whole and a row far into
     * blob 1, commits; blob 0's statistics are current, blob 1's unknown,
     * and nothing the size of the layout was needed */
    CHECK_OK(cf_column_pending_merge(c, pend, plen, &err), &err);
    cf_free(pend);
    double w[4 * 3] = { 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };
    CHECK_OK(cf_column_write(c, 0, 4, w, "<f8", 8 * nmemb, 8, &err), &err);
    CHECK_OK(cf_column_write(c, ((int64_t)1 << 25) + 3, 1, w, "<f8", 8 * nmemb, 8, &err), &err);
    CHECK_OK(cf_column_flush(c, &err), &err);
    CHECK_OK(cf_column_chunk_stats(c, 0, 0, &st, &err), &err);
    CHECK(st.valid && st.count == 4 && st.min == 5);
    CHECK_OK(cf_column_chunk_stats(c, cf_column_chunk_count(c) - 1, 0, &st, &err), &err);
    CHECK(!st.valid);
    CHECK_OK(cf_column_close(c, &err), &err);
    cf_file_close(f);

    /* and read back: the committed statistics are blob 0's alone */
    CHECK_OK(cf_file_open(&f, cf_test_dir(), CF_OPEN_READ, &err), &err);
    CHECK_OK(cf_column_open(&c, f, "x", &err), &err);
    CHECK_OK(cf_column_read(c, 0, 4, got, "<f8", 8 * nmemb, 8, &err), &err);
    CHECK(got[0] == 5);
    CHECK_OK(cf_column_chunk_stats(c, 0, 0, &st, &err), &err);
    CHECK(st.valid && st.count == 4 && st.min == 5);
    CHECK_OK(cf_column_close(c, &err), &err);
    cf_file_close(f);
}

/* AddressSanitizer reserves terabytes of address space for its shadow
 * memory, so under it the child cannot limit its address space: it is
 * judged by its peak resident memory instead. */
#if defined(__SANITIZE_ADDRESS__)
#define CF_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CF_TEST_ASAN 1
#endif
#endif

/* Fork; the child limits its address space, then exercises the column. */
static void in_limited_child(int64_t nmemb, int64_t claim)
{
    fflush(stdout);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
#if !defined(CF_TEST_ASAN)
        struct rlimit lim = { AS_LIMIT, AS_LIMIT };
        if (setrlimit(RLIMIT_AS, &lim) != 0) _exit(3);
#endif
        exercise(nmemb, claim);
        fflush(stdout);
        _exit(cf_test_failures ? 1 : 0);
    }
    int status;
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status));
    CHECK_EQ_INT(WEXITSTATUS(status), 0);
    /* the largest of the children waited for so far; ru_maxrss is in KiB
     * (the old layout needed gigabytes) */
    struct rusage ru;
    CHECK(getrusage(RUSAGE_CHILDREN, &ru) == 0);
    CHECK((rlim_t)ru.ru_maxrss * 1024 < AS_LIMIT);
}

static void test_u1_2p46_absent(void)
{
    hostile("<u1", 1, (int64_t)1 << 46, -1);
    in_limited_child(1, (int64_t)1 << 46);
}

static void test_f8_2p46_empty(void)
{
    hostile("<f8", 1, (int64_t)1 << 46, 0);
    in_limited_child(1, (int64_t)1 << 46);
}

static void test_f4x3_2p46_short(void)
{
    hostile("<f4", 3, (int64_t)1 << 46, 13);
    in_limited_child(3, (int64_t)1 << 46);
}

static void test_u1_2p62_absent(void)
{
    hostile("<u1", 1, (int64_t)1 << 62, -1);
    in_limited_child(1, (int64_t)1 << 62);
}

static void test_f8_2p62_short(void)
{
    int64_t most = INT64_MAX / 8;   /* rows x 8 bytes must fit in 2^63 */
    hostile("<f8", 1, most, 7);
    in_limited_child(1, most);
}

CF_TESTS({ "test_u1_2p46_absent", test_u1_2p46_absent }, { "test_f8_2p46_empty", test_f8_2p46_empty },
         { "test_f4x3_2p46_short", test_f4x3_2p46_short }, { "test_u1_2p62_absent", test_u1_2p62_absent },
         { "test_f8_2p62_short", test_f8_2p62_short })
