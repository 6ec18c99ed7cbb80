/* test_fsutil.c - the small file helpers of src/common/fsutil.c that the commit of
 * a new column relies on: private writes that keep their descriptor, and
 * fsync of a set of files through descriptors already open or by name. */
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "fsutil.h"

static char *read_all(const char *path, size_t *len)
{
    char *data = NULL;
    cf_error err;
    if (cf__read_file(path, &data, len, &err) != 0) return NULL;
    return data;
}

static int fd_is_open(int fd)
{
    return fcntl(fd, F_GETFD) != -1 || errno != EBADF;
}

static void test_private_write_keeps_its_descriptor(void)
{
    cf_error err;
    char path[4200];
    int fd = -2;
    CHECK_OK(cf__write_file_private_keep(cf_test_dir(), "meta", "abc\n", 4, &fd, &err), &err);
    CHECK(fd >= 0);
    if (fd >= 0) {
        /* the descriptor is the file just written: a write through it shows */
        CHECK_OK(cf__pwrite_all(fd, "xyz", 3, 4, "meta", &err), &err);
        close(fd);
    }
    snprintf(path, sizeof path, "%s/meta", cf_test_dir());
    size_t len = 0;
    char *data = read_all(path, &len);
    CHECK(data != NULL);
    CHECK_EQ_INT(len, 7);
    if (data) CHECK_EQ_MEM(data, "abc\nxyz", 7);
    free(data);

    /* rewritten in place (truncated), without keeping the descriptor */
    CHECK_OK(cf__write_file_private(cf_test_dir(), "meta", "q", 1, &err), &err);
    data = read_all(path, &len);
    CHECK_EQ_INT(len, 1);
    if (data) CHECK_EQ_MEM(data, "q", 1);
    free(data);

    /* failure: -1, and the message names the path */
    char missing[4200];
    snprintf(missing, sizeof missing, "%s/no-such-dir", cf_test_dir());
    fd = 7;
    CHECK_FAILS(cf__write_file_private_keep(missing, "meta", "a", 1, &fd, &err), CF_ENOENT, &err, "no-such-dir/meta");
    CHECK_EQ_INT(fd, -1);
}

static void test_fsync_files_mixes_open_and_named(void)
{
    cf_error err;
    int kept[3] = { -1, -1, -1 };
    const char *names[3] = { "a", "b", "c" };
    CHECK_OK(cf__write_file_private_keep(cf_test_dir(), "a", "1", 1, &kept[0], &err), &err);
    CHECK_OK(cf__write_file_private(cf_test_dir(), "b", "2", 1, &err), &err);
    CHECK_OK(cf__write_file_private_keep(cf_test_dir(), "c", "3", 1, &kept[2], &err), &err);
    CHECK_OK(cf__fsync_files(cf_test_dir(), names, kept, 3, &err), &err);
    /* the caller's descriptors stay open: closing them is the caller's job */
    CHECK(fd_is_open(kept[0]));
    CHECK(fd_is_open(kept[2]));
    /* every name may also be opened here (no descriptors at all) */
    CHECK_OK(cf__fsync_files(cf_test_dir(), names, NULL, 3, &err), &err);
    CHECK(fd_is_open(kept[0]));
    close(kept[0]);
    close(kept[2]);

    /* a named file that is missing fails, naming it */
    const char *bad[2] = { "a", "gone" };
    int fds[2] = { -1, -1 };
    CHECK_FAILS(cf__fsync_files(cf_test_dir(), bad, fds, 2, &err), CF_ENOENT, &err, "gone");
}

static void test_durable_create_commits_through_kept_descriptors(void)
{
    /* A durable first commit syncs the files it wrote through the
     * descriptors it kept: the column reads back whole, and nothing of the
     * staging is left beside it (the directory's writer-lock file, kept
     * while the File is open, is no leftover: cleanup does not report it). */
    cf_error err;
    char root[4200];
    snprintf(root, sizeof root, "%s/f", cf_test_dir());
    cf_file *f = NULL;
    CHECK_OK(cf_file_open(&f, root, CF_OPEN_WRITE | CF_OPEN_CREATE, &err), &err);
    if (!f) return;
    for (int i = 0; i < 3; i++) {
        char name[16];
        snprintf(name, sizeof name, "c%d", i);
        cf_column *c = NULL;
        int64_t rows[4] = { i, i + 1, i + 2, i + 3 }, v = 10 * i;
        CHECK_OK(cf_column_create(&c, f, name, "<i8", 1, 4, 1, &err), &err);
        if (!c) continue;
        CHECK_OK(cf_column_write(c, 0, 4, rows, NULL, 8, 8, &err), &err);
        CHECK_OK(cf_column_attr_set(c, "index", "<i8", 1, &v, &err), &err);
        CHECK_OK(cf_column_close(c, &err), &err);
    }
    for (int i = 0; i < 3; i++) {
        char name[16];
        snprintf(name, sizeof name, "c%d", i);
        cf_column *c = NULL;
        CHECK_OK(cf_column_open(&c, f, name, &err), &err);
        if (!c) continue;
        int64_t got[4] = { 0 };
        CHECK_OK(cf_column_read(c, 0, 4, got, NULL, 8, 8, &err), &err);
        for (int k = 0; k < 4; k++) CHECK_EQ_INT(got[k], i + k);
        const char *dt = NULL;
        int64_t n = 0;
        const void *data = NULL;
        CHECK_OK(cf_column_attr_get(c, "index", &dt, &n, &data, &err), &err);
        CHECK_EQ_INT(n, 1);
        if (data) {
            int64_t v;
            memcpy(&v, data, sizeof v);
            CHECK_EQ_INT(v, 10 * i);
        }
        CHECK_OK(cf_column_close(c, &err), &err);
    }
    char **names = NULL;
    int64_t count = 0;
    CHECK_OK(cf_file_cleanup(f, 1, &names, &count, &err), &err);
    CHECK_EQ_INT(count, 0);
    cf_names_free(names, count);
    cf_file_close(f);
}

CF_TESTS(CF_TEST(test_private_write_keeps_its_descriptor),
         CF_TEST(test_fsync_files_mixes_open_and_named),
         CF_TEST(test_durable_create_commits_through_kept_descriptors))
