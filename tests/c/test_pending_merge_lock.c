/* test_pending_merge_lock.c - a handle that commits what other handles
 * wrote (cf_column_pending_merge, as rank 0 does under MPI) and then
 * writes rows of its own: the commit took the writer lock, so its own
 * later writes find the header that commit wrote. */
#include "harness.h"

static void test_write_after_merged_commit(void)
{
    char dir[4200];
    snprintf(dir, sizeof dir, "%s/f", cf_test_dir());
    cf_error err;
    cf_file *f;
    cf_column *c;
    double zeros[4] = { 0, 0, 0, 0 };
    CHECK_OK(cf_file_open(&f, dir, CF_OPEN_WRITE | CF_OPEN_CREATE, &err), &err);
    CHECK_OK(cf_column_create(&c, f, "x", "f8", 1, 4, 1, &err), &err);
    CHECK_OK(cf_column_write(c, 0, 4, zeros, NULL, 8, 8, &err), &err);
    CHECK_OK(cf_column_close(c, &err), &err);

    /* root opens the committed column and writes nothing; a replica of it
     * writes row 1 and hands its state over */
    cf_column *root, *other;
    CHECK_OK(cf_column_open(&root, f, "x", &err), &err);
    void *meta, *state;
    size_t mlen, slen;
    CHECK_OK(cf_column_export_meta(root, &meta, &mlen, &err), &err);
    CHECK_OK(cf_column_open_meta(&other, f, meta, mlen, &err), &err);
    cf_free(meta);
    double v = 7.5;
    CHECK_OK(cf_column_write(other, 1, 1, &v, NULL, 8, 8, &err), &err);
    CHECK_OK(cf_column_pending_export(other, &state, &slen, &err), &err);
    CHECK_OK(cf_column_close(other, &err), &err);
    CHECK_OK(cf_column_pending_merge(root, state, slen, &err), &err);
    cf_free(state);
    CHECK_OK(cf_column_flush(root, &err), &err);
    /* then root writes a row itself */
    double w = 1.5;
    CHECK_OK(cf_column_write(root, 0, 1, &w, NULL, 8, 8, &err), &err);
    CHECK_OK(cf_column_close(root, &err), &err);

    CHECK_OK(cf_column_open(&c, f, "x", &err), &err);
    double got[4] = { -1, -1, -1, -1 };
    CHECK_OK(cf_column_read(c, 0, 4, got, NULL, 8, 8, &err), &err);
    CHECK(got[0] == 1.5 && got[1] == 7.5 && got[2] == 0 && got[3] == 0);
    unsigned st = 0xff;
    CHECK_OK(cf_column_verify_blob(c, 0, &st, &err), &err);
    CHECK_EQ_INT(st & ~(unsigned)CF_BLOB_SUM_MISMATCH, CF_BLOB_OK);
    CHECK_OK(cf_column_close(c, &err), &err);
    cf_file_close(f);
}

CF_TESTS(CF_TEST(test_write_after_merged_commit))
