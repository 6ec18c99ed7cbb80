/* test_replica_update.c - in-place updates written through replicas (the
 * handles other MPI ranks build from a metadata snapshot) or handles that
 * hand their writes over, and committed by another handle: the torn marker
 * they make, kept until that commit, the committing handle opened over it
 * (cf_column_adopt_update), and the marker made again after a commit
 * removed it. */
#include "harness.h"

#include <sys/stat.h>

enum { ROWS = 20, NFILE = 2 };

static int64_t first_value(int64_t i) { return i * 11; }
static int64_t new_value(int64_t i) { return i * 11 + 1; }

/* Column "x" (i8, ROWS rows in NFILE blobs) of File `dir`, written with
 * first_value and committed. */
static void build(const char *dir)
{
    cf_error err;
    cf_file *f;
    cf_column *c;
    int64_t v[ROWS];
    for (int64_t i = 0; i < ROWS; i++) v[i] = first_value(i);
    CHECK_OK(cf_file_open(&f, dir, CF_OPEN_WRITE | CF_OPEN_CREATE, &err), &err);
    CHECK_OK(cf_column_create(&c, f, "x", "i8", 1, ROWS, NFILE, &err), &err);
    CHECK_OK(cf_column_write(c, 0, ROWS, v, NULL, 8, 8, &err), &err);
    CHECK_OK(cf_column_close(c, &err), &err);
    cf_file_close(f);
}

/* Rows first, first + step, ... rewritten with new_value, one by one. */
static void rewrite(cf_column *c, int64_t first, int64_t step)
{
    cf_error err;
    for (int64_t i = first; i < ROWS; i += step) {
        int64_t v = new_value(i);
        CHECK_OK(cf_column_write(c, i, 1, &v, NULL, 8, 8, &err), &err);
    }
}

/* A replica of "x" on writable File `f`, built as an MPI rank other than 0
 * that opens the column alone builds it: from the snapshot of a read-only
 * handle (which may be opened over a torn marker). */
static cf_column *replica(const char *dir, cf_file *f)
{
    cf_error err;
    cf_file *r;
    cf_column *reader = NULL, *rep = NULL;
    void *meta = NULL;
    size_t len = 0;
    CHECK_OK(cf_file_open(&r, dir, CF_OPEN_READ | CF_OPEN_TORN_OK, &err), &err);
    CHECK_OK(cf_column_open(&reader, r, "x", &err), &err);
    CHECK_OK(cf_column_export_meta(reader, &meta, &len, &err), &err);
    CHECK_OK(cf_column_open_meta(&rep, f, meta, len, &err), &err);
    cf_free(meta);
    cf_column_close(reader, NULL);
    cf_file_close(r);
    return rep;
}

/* Hand replica `rep`'s write state to `root`. */
static void hand_over(cf_column *rep, cf_column *root)
{
    cf_error err;
    void *buf = NULL;
    size_t len = 0;
    CHECK_OK(cf_column_pending_export(rep, &buf, &len, &err), &err);
    CHECK_OK(cf_column_pending_merge(root, buf, len, &err), &err);
    cf_free(buf);
}

static int marked(const char *dir)
{
    char p[4200];
    struct stat st;
    snprintf(p, sizeof p, "%s/x/colfile-torn", dir);
    return stat(p, &st) == 0;
}

/* The serial writer's column: the same rewrite through one handle. */
static void serial_reference(const char *dir)
{
    cf_error err;
    cf_file *f;
    cf_column *c;
    build(dir);
    CHECK_OK(cf_file_open(&f, dir, CF_OPEN_WRITE, &err), &err);
    CHECK_OK(cf_column_open(&c, f, "x", &err), &err);
    rewrite(c, 0, 2);
    rewrite(c, 1, 2);
    CHECK_OK(cf_column_close(c, &err), &err);
    cf_file_close(f);
}

static void check_same_files(const char *par, const char *ser)
{
    static const char *const leaves[] = { "x/header", "x/colfile-v1", "x/000000", "x/000001" };
    for (size_t k = 0; k < sizeof leaves / sizeof *leaves; k++) {
        size_t pl = 0, sl = 0;
        char *p = cf_test_slurp(par, leaves[k], &pl), *s = cf_test_slurp(ser, leaves[k], &sl);
        CHECK(p && s);
        if (p && s) {
            CHECK_EQ_INT(pl, sl);
            if (pl == sl) CHECK_EQ_MEM(p, s, pl);
            if (pl != sl || memcmp(p, s, pl) != 0) fprintf(stderr, "%s differs:\n%s\n--- serial:\n%s\n", leaves[k], p, s);
        }
        free(p);
        free(s);
    }
}

/* The column built in the test directory's par (its path put in par), the
 * serial writer's reference in ser; par opened for writing. */
static cf_file *open_built(char par[4096], char ser[4096])
{
    cf_error err;
    cf_file *f = NULL;
    snprintf(par, 4096, "%s/par", cf_test_dir());
    snprintf(ser, 4096, "%s/ser", cf_test_dir());
    build(par);
    serial_reference(ser);
    CHECK_OK(cf_file_open(&f, par, CF_OPEN_WRITE, &err), &err);
    return f;
}

/* A replica rewrites rows in place before the committing handle opens the
 * column: that handle finds the replica's marker (CF_ETORN, or torn with
 * CF_OPEN_TORN_OK), adopts the update, and commits the column exactly as
 * a serial writer does, the byte sums counting the replaced bytes too. */
static void test_adopted_update_commits_like_one_writer(void)
{
    char par[4096], ser[4096];
    cf_error err;
    cf_file *f = open_built(par, ser), *ft;
    cf_column *root = NULL;
    cf_column *rep = replica(par, f);
    rewrite(rep, 0, 2);
    CHECK(marked(par));
    CHECK_FAILS(cf_column_open(&root, f, "x", &err), CF_ETORN, &err, "colfile-torn");
    CHECK_OK(cf_file_open(&ft, par, CF_OPEN_WRITE | CF_OPEN_TORN_OK | CF_OPEN_NOCHECK, &err), &err);
    CHECK_OK(cf_column_open(&root, ft, "x", &err), &err);
    CHECK_EQ_INT(cf_column_torn(root), 1);
    CHECK_OK(cf_column_adopt_update(root, &err), &err);
    CHECK_EQ_INT(cf_column_torn(root), 0);
    int state = -1;
    CHECK_OK(cf_column_ext_state(root, &state, &err), &err);
    CHECK_EQ_INT(state, CF_EXT_CURRENT);
    rewrite(root, 1, 2);
    hand_over(rep, root);
    CHECK_OK(cf_column_close(rep, &err), &err); /* commits nothing */
    CHECK_OK(cf_column_close(root, &err), &err);
    CHECK(!marked(par));
    check_same_files(par, ser);
    cf_file_close(ft);
    cf_file_close(f);
    /* the committed column is whole: opens without CF_OPEN_TORN_OK, every
     * blob as recorded */
    CHECK_OK(cf_file_open(&f, par, CF_OPEN_READ, &err), &err);
    CHECK_OK(cf_column_open(&root, f, "x", &err), &err);
    for (int64_t b = 0; b < NFILE; b++) {
        unsigned status = 0;
        CHECK_OK(cf_column_verify_blob(root, b, &status, &err), &err);
        CHECK_EQ_INT(status & ~(unsigned)CF_BLOB_SUM_MISMATCH, CF_BLOB_OK);
    }
    cf_column_close(root, NULL);
    cf_file_close(f);
}

/* Only before the handle's own writes; a handle opened over no marker is
 * left as it is. */
static void test_adopt_only_first(void)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/f", cf_test_dir());
    build(dir);
    cf_error err;
    cf_file *f, *ft;
    cf_column *root = NULL, *plain = NULL;
    CHECK_OK(cf_file_open(&f, dir, CF_OPEN_WRITE, &err), &err);
    CHECK_OK(cf_column_open(&plain, f, "x", &err), &err);
    CHECK_OK(cf_column_adopt_update(plain, &err), &err);
    CHECK_EQ_INT(cf_column_torn(plain), 0);
    cf_column *rep = replica(dir, f);
    rewrite(rep, 0, 2);
    CHECK_OK(cf_file_open(&ft, dir, CF_OPEN_WRITE | CF_OPEN_TORN_OK | CF_OPEN_NOCHECK, &err), &err);
    CHECK_OK(cf_column_open(&root, ft, "x", &err), &err);
    rewrite(root, 1, 2);
    CHECK_FAILS(cf_column_adopt_update(root, &err), CF_EARG, &err, "before anything is written");
    CHECK_EQ_INT(cf_column_torn(root), 1);
    CHECK_FAILS(cf_column_adopt_update(NULL, &err), CF_EARG, &err, "NULL");
    cf_column_discard(root);
    cf_column_close(root, NULL);
    cf_column_discard(rep);
    cf_column_close(rep, NULL);
    cf_column_close(plain, NULL);
    cf_file_close(ft);
    cf_file_close(f);
}

/* A commit removes the marker the replicas made; a replica that goes on
 * rewriting rows in place after it (MPI: after a collective flush) must
 * make the marker again, or a crash then would leave a column that passes
 * for complete with rows of neither version. */
static void test_replica_marks_again_after_a_commit(void)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/f", cf_test_dir());
    build(dir);
    cf_error err;
    cf_file *f;
    cf_column *root = NULL;
    CHECK_OK(cf_file_open(&f, dir, CF_OPEN_WRITE, &err), &err);
    CHECK_OK(cf_column_open(&root, f, "x", &err), &err);
    cf_column *rep = replica(dir, f);
    int64_t v = 5;
    CHECK_OK(cf_column_write(rep, 0, 1, &v, NULL, 8, 8, &err), &err);
    CHECK(marked(dir));
    hand_over(rep, root);
    CHECK_OK(cf_column_flush(root, &err), &err);
    CHECK(!marked(dir));
    v = 6;
    CHECK_OK(cf_column_write(rep, 0, 1, &v, NULL, 8, 8, &err), &err);
    CHECK(marked(dir));
    hand_over(rep, root);
    CHECK_OK(cf_column_close(rep, &err), &err);
    CHECK_OK(cf_column_close(root, &err), &err);
    CHECK(!marked(dir));
    cf_file_close(f);
}

/* A handle that could commit hands its in-place writes over and closes
 * (MPI: rank 0 closing a column it opened alone): the rows are committed
 * only by the handle that merges them, so the marker stays until then. */
static void test_handed_over_writes_stay_marked(void)
{
    char par[4096], ser[4096];
    cf_error err;
    cf_file *f = open_built(par, ser), *ft;
    cf_column *first = NULL, *root = NULL;
    CHECK_OK(cf_column_open(&first, f, "x", &err), &err);
    rewrite(first, 0, 2);
    void *buf = NULL;
    size_t len = 0;
    CHECK_OK(cf_column_pending_export(first, &buf, &len, &err), &err);
    CHECK_OK(cf_column_close(first, &err), &err); /* commits nothing */
    CHECK(marked(par));
    cf_column *rep = replica(par, f);
    rewrite(rep, 1, 2);
    CHECK_OK(cf_file_open(&ft, par, CF_OPEN_WRITE | CF_OPEN_TORN_OK | CF_OPEN_NOCHECK, &err), &err);
    CHECK_OK(cf_column_open(&root, ft, "x", &err), &err);
    CHECK_OK(cf_column_adopt_update(root, &err), &err);
    CHECK_OK(cf_column_pending_merge(root, buf, len, &err), &err);
    cf_free(buf);
    hand_over(rep, root);
    CHECK_OK(cf_column_close(rep, &err), &err);
    CHECK(marked(par));
    CHECK_OK(cf_column_close(root, &err), &err);
    CHECK(!marked(par));
    check_same_files(par, ser);
    cf_file_close(ft);
    cf_file_close(f);
}

CF_TESTS(CF_TEST(test_adopted_update_commits_like_one_writer), CF_TEST(test_adopt_only_first),
         CF_TEST(test_replica_marks_again_after_a_commit), CF_TEST(test_handed_over_writes_stay_marked))
