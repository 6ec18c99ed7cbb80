/* test_catalog_build.c - building the File catalog from a fresh scan
 * (src/catalog/catalog_build.c, cf__catalog_update): the catalog lists
 * every column, holds its metadata files' bytes, leaves out what is not a
 * column, and a damaged catalog is never used. */
#include <sys/stat.h>

#include "catalog.h"
#include "fsutil.h"
#include "harness.h"

static char g_root[4200];

static void make_column(cf_file *f, const char *name, int64_t rows)
{
    cf_error err;
    cf_column *c = NULL;
    CHECK_OK(cf_column_create(&c, f, name, "i4", 1, rows, 1, &err), &err);
    int32_t buf[16];
    for (int64_t i = 0; i < rows; i++) buf[i] = (int32_t)(i * 3);
    CHECK_OK(cf_column_write(c, 0, rows, buf, NULL, 4, 4, &err), &err);
    CHECK_OK(cf_column_close(c, &err), &err);
}

static void make_file(void)
{
    snprintf(g_root, sizeof g_root, "%s/F", cf_test_dir());
    cf_error err;
    cf_file *f = NULL;
    CHECK_OK(cf_file_open(&f, g_root, CF_OPEN_WRITE | CF_OPEN_CREATE, &err), &err);
    make_column(f, "a", 4);
    make_column(f, "g/b", 7);
    cf_file_close(f);
    /* a directory without a header is not a column */
    char p[4300];
    snprintf(p, sizeof p, "%s/notes", g_root);
    CHECK(mkdir(p, 0777) == 0);
    /* stamps are trusted only once the clock has moved past them */
    sleep(3);
}

static void test_update_lists_every_column(void)
{
    make_file();
    cf_error err;
    char p[4300];
    snprintf(p, sizeof p, "%s/%s/%s", g_root, CF__CATALOG_DIR, CF__CATALOG_INDEX_NAME);
    unlink(p);
    CHECK_OK(cf__catalog_update(g_root, NULL, 0, &err), &err);
    struct stat st;
    CHECK(stat(p, &st) == 0 && st.st_size > 8);
    cf__catalog *cat = cf__catalog_load(g_root, -1);
    CHECK(cat != NULL);
    if (!cat) return;
    char **names = NULL;
    int64_t n = 0;
    CHECK_EQ_INT(cf__catalog_list(cat, g_root, &names, &n), 1);
    CHECK_EQ_INT(n, 2);
    if (n == 2) {
        CHECK_EQ_STR(names[0], "a");
        CHECK_EQ_STR(names[1], "g/b");
    }
    cf_names_free(names, n);
    /* the header's bytes are in the catalog, equal to the file's */
    cf__catalog_file files[CF__CAT_NSLOTS];
    cf__stamp dir;
    CHECK_EQ_INT(cf__catalog_column(cat, g_root, "g/b", files, &dir), 1);
    snprintf(p, sizeof p, "%s/g/b/header", g_root);
    char *want = NULL;
    size_t len = 0;
    CHECK_OK(cf__read_file(p, &want, &len, &err), &err);
    CHECK(files[CF__CAT_HEADER].present && files[CF__CAT_HEADER].inline_bytes);
    CHECK(want && files[CF__CAT_HEADER].len == len && memcmp(files[CF__CAT_HEADER].data, want, len) == 0);
    CHECK(files[CF__CAT_EXT].present);
    CHECK(!files[CF__CAT_STATS].present);
    free(want);
    CHECK_EQ_INT(cf__catalog_column(cat, g_root, "notes", files, &dir), 0);
    cf__catalog_free(cat);
}

static void test_rebuild_follows_changes(void)
{
    make_file();
    cf_error err;
    CHECK_OK(cf__catalog_update(g_root, NULL, 0, &err), &err);
    cf__catalog *old = cf__catalog_load(g_root, -1);
    CHECK(old != NULL);
    /* a column removed behind the catalog's back: the old catalog no longer
     * lists (its root's stamp changed); a rebuild from it drops the column */
    char p[4300];
    snprintf(p, sizeof p, "rm -rf '%s/a'", g_root);
    CHECK(system(p) == 0);
    sleep(3);
    char **names = NULL;
    int64_t n = 0;
    if (old) CHECK_EQ_INT(cf__catalog_list(old, g_root, &names, &n), 0);
    CHECK_OK(cf__catalog_update(g_root, old, 0, &err), &err);
    cf__catalog_free(old);
    cf__catalog *cat = cf__catalog_load(g_root, -1);
    CHECK(cat != NULL);
    if (cat) {
        CHECK_EQ_INT(cf__catalog_list(cat, g_root, &names, &n), 1);
        CHECK_EQ_INT(n, 1);
        if (n == 1) CHECK_EQ_STR(names[0], "g/b");
        cf_names_free(names, n);
        cf__catalog_free(cat);
    }
}

static void test_damaged_catalog_is_not_used(void)
{
    make_file();
    cf_error err;
    CHECK_OK(cf__catalog_update(g_root, NULL, 0, &err), &err);
    char p[4300];
    snprintf(p, sizeof p, "%s/%s/%s", g_root, CF__CATALOG_DIR, CF__CATALOG_INDEX_NAME);
    char *bytes = NULL;
    size_t len = 0;
    CHECK_OK(cf__read_file(p, &bytes, &len, &err), &err);
    if (!bytes || len < 20) return;
    bytes[len / 2] ^= 0x40; /* one bit: the CRC32C no longer matches */
    FILE *fp = fopen(p, "wb");
    CHECK(fp != NULL);
    if (fp) {
        CHECK_EQ_INT(fwrite(bytes, 1, len, fp), len);
        fclose(fp);
    }
    free(bytes);
    CHECK(cf__catalog_load(g_root, -1) == NULL);
    /* the files stay the truth: the File still lists both columns */
    cf_file *f = NULL;
    CHECK_OK(cf_file_open(&f, g_root, 0, &err), &err);
    char **names = NULL;
    int64_t n = 0;
    CHECK_OK(cf_file_list(f, &names, &n, &err), &err);
    CHECK_EQ_INT(n, 2);
    cf_names_free(names, n);
    cf_file_close(f);
}

CF_TESTS(CF_TEST(test_update_lists_every_column), CF_TEST(test_rebuild_follows_changes),
         CF_TEST(test_damaged_catalog_is_not_used))
