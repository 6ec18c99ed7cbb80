/* test_ext.c - colfile-v1 as a whole (docs/format.md 8.1): the checksum
 * line colfile writes and how a reader judges it, the header's mtime a
 * commit gives colfile-v1, and what a column handle then trusts. */
#include "harness.h"
#include "ext_text.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "column.h"
#include "ext.h"
#include "fsutil.h"
#include "hstamp.h"

static const char crc_part[] = "COLFILE-EXT: 1\nDTYPE: <f8\nNMEMB: 1\nNFILE: 2\n"
                               "000000: 2 : 5844 : crc32c=08eca2d0\n000001: 3 : 7461 : crc32c=-\n";
static const char stats[] = "COLFILE-STATS: 1\nDTYPE: <f8\nNMEMB: 1\nNFILE: 2\nCHUNK: 2\n"
                            "000000: 2 : 5844\n0 0 count=2 nan=0 min=1 max=99 sum=100\n";

static char *assemble(const char *sec, size_t *len)
{
    char *text = NULL;
    cf_error err;
    CHECK_OK(cf__ext_assemble(crc_part, strlen(crc_part), sec, sec ? strlen(sec) : 0, &text, len, "x", &err),
             &err);
    return text;
}

static void test_written_form(void)
{
    size_t len, body;
    char *text = assemble(stats, &len);
    /* the CRC part, the statistics, then "CRC32C: " and the CRC32C of every
     * byte before that line; nothing that depends on when it was written */
    CHECK(strncmp(text, crc_part, strlen(crc_part)) == 0);
    CHECK(strncmp(text + strlen(crc_part), stats, strlen(stats)) == 0);
    char want[32];
    size_t before = len - 17;
    CHECK_EQ_INT(before, strlen(crc_part) + strlen(stats));
    snprintf(want, sizeof want, "CRC32C: %08x\n", (unsigned)cf__crc32c_update(0, text, before));
    CHECK_EQ_STR(text + before, want);
    CHECK_EQ_INT(cf__ext_unseal(text, len, &body), CF__SEAL_OK);
    CHECK_EQ_INT(body, before);
    /* the CRCs still parse from the part before the statistics */
    size_t at = body;
    CHECK(cf__ext_stats_section(text, body, &at));
    cf__ext x;
    cf_error err;
    CHECK_OK(cf__ext_parse(&x, text, at, "x", &err), &err);
    CHECK(x.known[0] && x.crc[0] == 0x08eca2d0u && !x.known[1]);
    cf__ext_free(&x);
    /* the same content, the same bytes */
    size_t len2;
    char *again = assemble(stats, &len2);
    CHECK(len2 == len && memcmp(again, text, len) == 0);
    free(again);
    free(text);
    text = assemble(NULL, &len);
    CHECK_EQ_INT(cf__ext_unseal(text, len, &body), CF__SEAL_OK);
    CHECK_EQ_INT(body, strlen(crc_part));
    free(text);
}

/* Every single changed byte before the checksum line, and every byte of
 * the checksum itself, is caught. */
static void test_every_changed_byte_is_damage(void)
{
    size_t len, body;
    char *text = assemble(stats, &len);
    for (size_t i = 0; i < len - 1; i++) {
        for (int bit = 0; bit < 8; bit += 3) {
            text[i] ^= (char)(1 << bit);
            if (cf__ext_unseal(text, len, &body) == CF__SEAL_OK) {
                fprintf(stderr, "byte %zu bit %d changed, still sealed\n", i, bit);
                cf_test_failures++;
            }
            text[i] ^= (char)(1 << bit);
        }
    }
    /* the case of a changed statistic: max=99 -> max=59 */
    char *m = strstr(text, "max=99");
    m[4] = '5';
    CHECK_EQ_INT(cf__ext_unseal(text, len, &body), CF__SEAL_DAMAGED);
    m[4] = '9';
    CHECK_EQ_INT(cf__ext_unseal(text, len, &body), CF__SEAL_OK);
    /* cut anywhere: never sealed */
    for (size_t cut = 0; cut < len; cut++)
        if (cf__ext_unseal(text, cut, &body) == CF__SEAL_OK) {
            fprintf(stderr, "cut at %zu still sealed\n", cut);
            cf_test_failures++;
        }
    free(text);
}

static void test_unsealed_and_garbled(void)
{
    size_t body;
    /* an older writer: no checksum line */
    char older[512];
    snprintf(older, sizeof older, "%s%s", crc_part, stats);
    CHECK_EQ_INT(cf__ext_unseal(older, strlen(older), &body), CF__SEAL_NONE);
    CHECK_EQ_INT(body, strlen(older));
    CHECK_EQ_INT(cf__ext_unseal("", 0, &body), CF__SEAL_NONE);
    /* a checksum in upper case, or with a stray character */
    size_t n;
    char *t = assemble(stats, &n);
    char *seal = t + n - 9;
    for (char *p = seal; p < t + n - 1; p++)
        if (*p >= 'a' && *p <= 'f') *p = (char)(*p - 'a' + 'A');
    if (strpbrk(seal, "ABCDEF")) CHECK_EQ_INT(cf__ext_unseal(t, n, &body), CF__SEAL_DAMAGED);
    t[n - 2] = 'g';
    CHECK_EQ_INT(cf__ext_unseal(t, n, &body), CF__SEAL_DAMAGED);
    free(t);
}

static void test_stats_blob_lines(void)
{
    unsigned char seen[4] = { 0, 0, 0, 0 };
    const char *text = "COLFILE-STATS: 1\nDTYPE: <f8\nNMEMB: 1\nNFILE: 4\nCHUNK: 2\n000000: 2 : 1\n"
                       "0 0 count=2 nan=0 min=1 max=2 sum=3\n3: 0 : 0\n00000000000000002 : 1 : 1\n"
                       "CRC32C: 01234567\n000009: 1 : 1\n";
    cf__ext_stats_blob_lines(text, strlen(text), 4, seen);
    CHECK(seen[0] && !seen[1] && !seen[2] && seen[3]);
}

/* The stamp a commit takes: strictly below the mtime its write gave, so a
 * write right after (the same clock tick) changes it. */
static void test_backdate(void)
{
    char p[4200];
    snprintf(p, sizeof p, "%s/h", cf_test_dir());
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0666);
    CHECK(fd >= 0);
    CHECK(write(fd, "abc\n", 4) == 4);
    struct stat before, after;
    CHECK(fstat(fd, &before) == 0);
    cf__hstamp st;
    cf__hstamp_backdate(fd, &st);
    close(fd);
    CHECK(st.known);
    CHECK(stat(p, &after) == 0);
    CHECK(st.sec == after.st_mtim.tv_sec && st.nsec == after.st_mtim.tv_nsec);
    CHECK(st.sec < before.st_mtim.tv_sec ||
          (st.sec == before.st_mtim.tv_sec && st.nsec < before.st_mtim.tv_nsec));
    /* rewritten in place at once, same bytes: another stamp */
    FILE *fp = fopen(p, "w");
    fputs("abc\n", fp);
    fclose(fp);
    cf__hstamp now;
    CHECK(stat(p, &after) == 0);
    cf__hstamp_of(&now, &after);
    CHECK(!cf__hstamp_equal(&now, &st));
}

/* A column's handle: current after a commit; stale once the header is
 * written again, however soon; damaged when a byte of colfile-v1 changes;
 * unbound without the stamp line. */
static void test_column_trust(void)
{
    cf_error err;
    cf_file *f;
    CHECK_OK(cf_file_open(&f, cf_test_dir(), CF_OPEN_WRITE, &err), &err);
    double v[20];
    for (int i = 0; i < 20; i++) v[i] = i;
    cf_column *c;
    CHECK_OK(cf_column_create(&c, f, "x", "f8", 1, 20, 2, &err), &err);
    CHECK_OK(cf_column_write(c, 0, 20, v, NULL, 8, 8, &err), &err);
    CHECK_OK(cf_column_close(c, &err), &err);
    char hp[4200], xp[4200];
    snprintf(hp, sizeof hp, "%s/x/header", cf_test_dir());
    snprintf(xp, sizeof xp, "%s/x/colfile-v1", cf_test_dir());
    int state = -1;
    uint32_t crc;
    cf_chunk_stats s;

    CHECK_OK(cf_column_open(&c, f, "x", &err), &err);
    CHECK_OK(cf_column_ext_state(c, &state, &err), &err);
    CHECK_EQ_INT(state, CF_EXT_CURRENT);
    CHECK(cf_column_blob_crc32c(c, 1, &crc));
    CHECK_OK(cf_column_close(c, &err), &err);

    char *ext = NULL, *hdr = NULL;
    size_t xl, hl;
    CHECK_OK(cf__read_file(xp, &ext, &xl, &err), &err);
    CHECK_OK(cf__read_file(hp, &hdr, &hl, &err), &err);
    /* one byte of the statistics */
    char *m = strstr(ext, "max=9 ");
    CHECK(m != NULL);
    m[4] = '5';
    FILE *fp = fopen(xp, "w");
    fwrite(ext, 1, xl, fp);
    fclose(fp);
    CHECK_OK(cf_column_open(&c, f, "x", &err), &err);
    CHECK_OK(cf_column_ext_state(c, &state, &err), &err);
    CHECK_EQ_INT(state, CF_EXT_DAMAGED);
    CHECK(!cf_column_blob_crc32c(c, 0, &crc));
    CHECK_OK(cf_column_chunk_stats(c, 0, 0, &s, &err), &err);
    CHECK(!s.valid);
    CHECK_OK(cf_column_close(c, &err), &err);
    /* without the seal: an older colfile's file */
    m[4] = '9';
    fp = fopen(xp, "w");
    fwrite(ext, 1, xl, fp);
    fclose(fp);
    cf_test_ext_unsealed(ext);
    fp = fopen(xp, "w");
    fputs(ext, fp);
    fclose(fp);
    CHECK_OK(cf_column_open(&c, f, "x", &err), &err);
    CHECK_OK(cf_column_ext_state(c, &state, &err), &err);
    CHECK_EQ_INT(state, CF_EXT_UNBOUND);
    CHECK(!cf_column_blob_crc32c(c, 0, &crc));
    CHECK_OK(cf_column_close(c, &err), &err);
    /* not a colfile-v1 at all: damaged */
    ext[0] = 'X';
    fp = fopen(xp, "w");
    fputs(ext, fp);
    fclose(fp);
    ext[0] = 'C';
    CHECK_OK(cf_column_open(&c, f, "x", &err), &err);
    CHECK_OK(cf_column_ext_state(c, &state, &err), &err);
    CHECK_EQ_INT(state, CF_EXT_DAMAGED);
    /* a commit (index) makes it current again */
    CHECK_OK(cf_column_close(c, &err), &err);
    CHECK_OK(cf_column_open(&c, f, "x", &err), &err);
    CHECK_OK(cf_column_index_blob(c, 0, &err), &err);
    CHECK_OK(cf_column_index_blob(c, 1, &err), &err);
    CHECK_OK(cf_column_close(c, &err), &err);
    CHECK_OK(cf_column_open(&c, f, "x", &err), &err);
    CHECK_OK(cf_column_ext_state(c, &state, &err), &err);
    CHECK_EQ_INT(state, CF_EXT_CURRENT);
    CHECK_OK(cf_column_close(c, &err), &err);
    /* the header written again in place, same bytes, right away */
    free(hdr);
    CHECK_OK(cf__read_file(hp, &hdr, &hl, &err), &err);
    fp = fopen(hp, "w");
    fwrite(hdr, 1, hl, fp);
    fclose(fp);
    cf_file *r;
    CHECK_OK(cf_file_open(&r, cf_test_dir(), CF_OPEN_READ, &err), &err);
    CHECK_OK(cf_column_open(&c, r, "x", &err), &err);
    /* a snapshot of this handle (what other MPI ranks get), taken before
     * anything asked for its statistics, hands on nothing as current */
    void *snap;
    size_t snap_len;
    cf_column *replica;
    CHECK_OK(cf_column_export_meta(c, &snap, &snap_len, &err), &err);
    CHECK_OK(cf_column_ext_state(c, &state, &err), &err);
    CHECK_EQ_INT(state, CF_EXT_STALE);
    CHECK_OK(cf_column_open_meta(&replica, r, snap, snap_len, &err), &err);
    cf_free(snap);
    CHECK_OK(cf_column_chunk_stats(replica, 0, 0, &s, &err), &err);
    CHECK(!s.valid);
    CHECK(!cf_column_blob_crc32c(replica, 0, &crc));
    CHECK_OK(cf_column_close(replica, &err), &err);
    CHECK(!cf_column_blob_crc32c(c, 0, &crc));
    CHECK_OK(cf_column_chunk_stats(c, 0, 0, &s, &err), &err);
    CHECK(!s.valid);
    CHECK_OK(cf_column_close(c, &err), &err);
    cf_file_close(r);
    free(ext);
    free(hdr);
    cf_file_close(f);
}

CF_TESTS(
    CF_TEST(test_written_form),
    CF_TEST(test_every_changed_byte_is_damage),
    CF_TEST(test_unsealed_and_garbled),
    CF_TEST(test_stats_blob_lines),
    CF_TEST(test_backdate),
    CF_TEST(test_column_trust)
)
