/* test_names.c - hostile names and paths (issue 5): a table of malicious
 * column, group and attribute names, symbolic links below the File, and odd
 * File paths.  Each goes through every entry point that takes a name; each
 * must give CF_ENAME naming the problem (or, when legal, round-trip), and
 * nothing outside the File directory may be created, changed or removed:
 * a sentinel tree next to the File, and the File's parent, are compared
 * before and after. */
#include "harness.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>

#include "colfile.h"

/* ---- snapshots of a tree ---------------------------------------------- */

typedef struct { char *p; size_t len, cap; } text;

static void text_add(text *t, const char *s, size_t n)
{
    if (t->len + n + 1 > t->cap) {
        t->cap = (t->len + n + 1) * 2;
        t->p = realloc(t->p, t->cap);
    }
    memcpy(t->p + t->len, s, n);
    t->len += n;
    t->p[t->len] = '\0';
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* One line per entry below dir (never following links): name, type, mode,
 * size, inode, mtime, and a hash of the content or the link's target.
 * `skip` (at the top level only) is left out. */
static void snap_dir(text *t, const char *dir, const char *rel, const char *skip)
{
    DIR *d = opendir(dir);
    if (!d) return;
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *ent;
    while ((ent = readdir(d)) != NULL) {
        if (!strcmp(ent->d_name, ".") || !strcmp(ent->d_name, "..")) continue;
        if (skip && !strcmp(ent->d_name, skip)) continue;
        if (n == cap) names = realloc(names, (cap = cap ? 2 * cap : 64) * sizeof *names);
        names[n++] = strdup(ent->d_name);
    }
    closedir(d);
    if (n) qsort(names, n, sizeof *names, cmp_str);
    char *p = malloc(8192), *r = malloc(8192), *line = malloc(9000); /* deep trees: small frames */
    for (size_t i = 0; i < n; i++) {
        snprintf(p, 8192, "%s/%s", dir, names[i]);
        snprintf(r, 8192, "%s%s%s", rel, rel[0] ? "/" : "", names[i]);
        struct stat st;
        if (lstat(p, &st) != 0) { free(names[i]); continue; }
        unsigned long long h = 14695981039346656037ULL;
        if (S_ISREG(st.st_mode)) {
            FILE *fp = fopen(p, "rb");
            int ch;
            while (fp && (ch = fgetc(fp)) != EOF) h = (h ^ (unsigned char)ch) * 1099511628211ULL;
            if (fp) fclose(fp);
        } else if (S_ISLNK(st.st_mode)) {
            char target[4096];
            ssize_t k = readlink(p, target, sizeof target - 1);
            for (ssize_t j = 0; j < k; j++) h = (h ^ (unsigned char)target[j]) * 1099511628211ULL;
        }
        snprintf(line, 9000, "%s mode=%o size=%lld ino=%llu mtime=%lld.%09ld hash=%llx\n", r,
                 (unsigned)st.st_mode, (long long)st.st_size, (unsigned long long)st.st_ino,
                 (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec, h);
        text_add(t, line, strlen(line));
        if (S_ISDIR(st.st_mode)) snap_dir(t, p, r, NULL);
        free(names[i]);
    }
    free(names);
    free(p);
    free(r);
    free(line);
}

static char *snapshot(const char *dir, const char *skip)
{
    text t = { NULL, 0, 0 };
    text_add(&t, "", 0);
    snap_dir(&t, dir, "", skip);
    return t.p;
}

/* ---- the world of one test -------------------------------------------- */

static char g_file[4096], g_outside[4096];

static void write_text(const char *path, const char *s)
{
    FILE *fp = fopen(path, "wb");
    CHECK(fp != NULL);
    if (!fp) return;
    fputs(s, fp);
    fclose(fp);
}

static void make_link(const char *target, const char *dir, const char *name)
{
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    if (symlink(target, p) != 0) {
        fprintf(stderr, "symlink %s -> %s: %s\n", p, target, strerror(errno));
        cf_test_failures++;
    }
}

/* <tmp>/outside: loose files and a real column "col" (a File of its own),
 * and <tmp>/F, the File under test, open for writing. */
static cf_file *world(void)
{
    cf_error err;
    snprintf(g_file, sizeof g_file, "%s/F", cf_test_dir());
    snprintf(g_outside, sizeof g_outside, "%s/outside", cf_test_dir());
    cf_file *o = NULL;
    CHECK_OK(cf_file_open(&o, g_outside, CF_OPEN_WRITE | CF_OPEN_CREATE, &err), &err);
    cf_column *c = NULL;
    CHECK_OK(cf_column_create(&c, o, "col", "i4", 1, 4, 2, &err), &err);
    int32_t v[4] = { 1, 2, 3, 4 };
    CHECK_OK(cf_column_write(c, 0, 4, v, NULL, 4, 4, &err), &err);
    CHECK_OK(cf_column_close(c, &err), &err);
    cf_file_close(o);
    char p[4096];
    snprintf(p, sizeof p, "%s/secret.txt", g_outside);
    write_text(p, "do not touch\n");
    snprintf(p, sizeof p, "%s/dir", g_outside);
    mkdir(p, 0777);
    snprintf(p, sizeof p, "%s/dir/passwd", g_outside);
    write_text(p, "root:x:0:0\n");
    cf_file *f = NULL;
    CHECK_OK(cf_file_open(&f, g_file, CF_OPEN_WRITE | CF_OPEN_CREATE, &err), &err);
    return f;
}

/* Everything next to the File (the sentinel tree included), without F. */
static char *outside_state(void) { return snapshot(cf_test_dir(), "F"); }

#define CHECK_SAME_TEXT(before, after, what) do { if (strcmp((before), (after)) != 0) { \
    fprintf(stderr, "%s:%d: %s changed:\n--- before\n%s--- after\n%s", __FILE__, __LINE__, (what), \
            (before), (after)); cf_test_failures++; } } while (0)

/* The File's surroundings are as they were when before was taken; frees before. */
static void check_outside_unchanged(char *before)
{
    char *after = outside_state();
    CHECK_SAME_TEXT(before, after, "the File's surroundings");
    free(before);
    free(after);
}

static int listed(cf_file *f, const char *name)
{
    char **names = NULL;
    int64_t n = 0;
    cf_error err;
    int found = 0;
    CHECK_OK(cf_file_list(f, &names, &n, &err), &err);
    for (int64_t i = 0; i < n; i++) found |= strcmp(names[i], name) == 0;
    cf_names_free(names, n);
    return found;
}

/* ---- the table -------------------------------------------------------- */

enum { LEGAL, BAD, ATTRS };

typedef struct {
    const char *label;
    const char *name;
    int kind;
    const char *why;   /* BAD: in the message */
    int hidden;        /* LEGAL: not in listings (a component starts with '.') */
} hostile;

static const hostile table[] = {
    { "dotdot", "..", BAD, "'..'", 0 },
    { "dotdot-x", "../x", BAD, "'..'", 0 },
    { "a-dotdot", "a/..", BAD, "'..'", 0 },
    { "a-dotdot-dotdot-x", "a/../../x", BAD, "'..'", 0 },
    { "sibling", "../outside/col", BAD, "'..'", 0 },
    { "absolute", "/etc/passwd", BAD, "absolute", 0 },
    { "double-slash-abs", "//x", BAD, "absolute", 0 },
    { "double-slash", "a//b", BAD, "empty path component", 0 },
    { "trailing-slash", "x/", BAD, "empty path component", 0 },
    { "dot-middle", "x/./y", BAD, "'.' is only allowed", 0 },
    { "dot-first", "./x", BAD, "'.' is only allowed", 0 },
    { "empty", "", BAD, "empty", 0 },
    { "newline", "a\nb", BAD, "newline", 0 },
    { "tab", "a\tb", BAD, "tab", 0 },
    { "cr", "a\rb", BAD, "carriage return", 0 },
    { "space", "a b", BAD, "space", 0 },
    { "del", "a\x7f", BAD, "control character 0x7F", 0 },
    { "escape-seq", "a\x1b]0;owned\x07", BAD, "control character 0x1B", 0 },
    { "header", "header", BAD, "reserved", 0 },
    { "attr-v2", "g/attr-v2", BAD, "reserved", 0 },
    { "attr", "attr/x", BAD, "reserved", 0 },
    { "colfile-ext", "colfile-v1", BAD, "reserved", 0 },
    { "colfile-stage", ".colfile-stage.x", BAD, "reserved", 0 },
    { "colfile-lock", "g/.colfile-lock.x", BAD, "reserved", 0 },
    { "colfile-other", ".colfile", BAD, "reserved", 0 },
    { "file-attrs", ".", ATTRS, NULL, 0 },
    { "group-attrs", "x/.", ATTRS, NULL, 0 },
    /* legal: a correct round trip, inside the File */
    { "format-specifiers", "%s%s%s%n%n", LEGAL, NULL, 0 },
    { "more-format", "%x%p%99999999d%%", LEGAL, NULL, 0 },
    { "blob-name", "000000", LEGAL, NULL, 0 },
    { "blob-name-below", "g/00000A", LEGAL, NULL, 0 },
    { "three-dots", "...", LEGAL, NULL, 1 },
    { "three-dots-middle", "x/.../y", LEGAL, NULL, 1 },
    { "hidden", ".hidden", LEGAL, NULL, 1 },
    { "hidden-temp-like", ".header.tmp.1.2", LEGAL, NULL, 1 },
    { "division-slash", "a\xe2\x88\x95..\xe2\x88\x95x", LEGAL, NULL, 0 },     /* U+2215 */
    { "fullwidth-solidus", "..\xef\xbc\x8f..\xef\xbc\x8fx", LEGAL, NULL, 1 },  /* U+FF0F */
    { "one-dot-leaders", "\xe2\x80\xa4\xe2\x80\xa4", LEGAL, NULL, 0 },          /* U+2024 x2 */
    { "fullwidth-stops", "\xef\xbc\x8e\xef\xbc\x8e/x", LEGAL, NULL, 0 },        /* U+FF0E x2 */
    { "rtl-override", "\xe2\x80\xaetxt.exe", LEGAL, NULL, 0 },                 /* U+202E */
    { "overlong-utf8-dots", "a/\xc0\xae\xc0\xae/x", LEGAL, NULL, 0 },
    { "invalid-utf8", "bad\xff\xfe", LEGAL, NULL, 0 },
    { "backslashes", "a\\..\\..\\x", LEGAL, NULL, 0 },
    { "windows-con", "CON", LEGAL, NULL, 0 },
    { "windows-nul", "NUL/aux.txt", LEGAL, NULL, 0 },
    { "windows-com-lpt", "COM1/LPT1", LEGAL, NULL, 0 },
    { "windows-chars", "a:b*c?d<e>f|g\"", LEGAL, NULL, 0 },
    { "trailing-dot", "x.", LEGAL, NULL, 0 },
    { "nul-cuts", "nul\0/../../x", LEGAL, NULL, 0 },  /* C sees "nul" */
};

static int is_hidden(const char *name)
{
    for (const char *p = name; p; p = strchr(p, '/') ? strchr(p, '/') + 1 : NULL)
        if (p[0] == '.') return 1;
    return 0;
}

static void run_legal(cf_file *f, const char *name, int hidden, const char *label)
{
    cf_error err;
    cf_column *c = NULL;
    int32_t v[3] = { 7, -8, 9 }, back[3] = { 0, 0, 0 };
    CHECK_OK(cf_name_check(name, &err), &err);
    /* a data column: create, write, reopen, read, list, remove */
    int rc = cf_column_create(&c, f, name, "i4", 1, 3, 2, &err);
    CHECK_OK(rc, &err);
    if (rc) { fprintf(stderr, "  (%s)\n", label); return; }
    CHECK_OK(cf_column_write(c, 0, 3, v, NULL, 4, 4, &err), &err);
    int32_t one = 1;
    CHECK_OK(cf_column_attr_set(c, "k", "i4", 1, &one, &err), &err);
    CHECK_OK(cf_column_close(c, &err), &err);
    CHECK_OK(cf_column_open(&c, f, name, &err), &err);
    if (c) {
        CHECK_EQ_STR(cf_column_name(c), name);
        CHECK_OK(cf_column_read(c, 0, 3, back, NULL, 4, 4, &err), &err);
        CHECK_EQ_MEM(back, v, sizeof v);
        CHECK_OK(cf_column_attr_get(c, "k", NULL, NULL, NULL, &err), &err);
        CHECK_OK(cf_column_close(c, &err), &err);
    }
    CHECK_EQ_INT(listed(f, name), !hidden);
    CHECK_OK(cf_file_remove(f, name, &err), &err);
    CHECK_FAILS(cf_column_open(&c, f, name, &err), CF_ENOENT, &err, NULL);
    CHECK_EQ_INT(listed(f, name), 0);
    /* the same name as a group: its attributes, and a column inside it */
    char group[4200], inner[4200];
    snprintf(group, sizeof group, "%s/.", name);
    snprintf(inner, sizeof inner, "%s/inner", name);
    CHECK_OK(cf_column_create(&c, f, group, NULL, 0, 0, 0, &err), &err);
    if (c) {
        CHECK_EQ_INT(cf_column_kind(c), CF_KIND_ATTRS_ONLY);
        CHECK_OK(cf_column_attr_set(c, "g", "i4", 1, &one, &err), &err);
        CHECK_OK(cf_column_close(c, &err), &err);
    }
    CHECK_OK(cf_column_open(&c, f, group, &err), &err);
    if (c) {
        CHECK_OK(cf_column_attr_get(c, "g", NULL, NULL, NULL, &err), &err);
        CHECK_OK(cf_column_close(c, &err), &err);
    }
    CHECK_OK(cf_column_create(&c, f, inner, "u1", 1, 0, 1, &err), &err);
    CHECK_OK(cf_column_close(c, &err), &err);
    CHECK_EQ_INT(listed(f, inner), !hidden);
    CHECK_OK(cf_file_remove(f, inner, &err), &err);
    /* a header-only block of that name */
    CHECK_OK(cf_column_create(&c, f, name, NULL, 0, 0, 0, &err), &err);
    if (c) {
        CHECK_EQ_INT(cf_column_kind(c), CF_KIND_HEADER_ONLY);
        CHECK_OK(cf_column_close(c, &err), &err);
    }
    CHECK_OK(cf_file_remove(f, name, &err), &err);
}

static void run_bad(cf_file *f, cf_file *ro, const char *name, const char *why)
{
    cf_error err;
    cf_column *c = NULL;
    char group[4200];
    snprintf(group, sizeof group, "%s/.", name);
    CHECK_FAILS(cf_name_check(name, &err), CF_ENAME, &err, why);
    CHECK(strchr(err.message, '\n') == NULL && strchr(err.message, '\x1b') == NULL); /* escaped */
    CHECK_FAILS(cf_column_create(&c, f, name, "i4", 1, 3, 1, &err), CF_ENAME, &err, why);
    CHECK_FAILS(cf_column_create(&c, f, name, NULL, 0, 0, 0, &err), CF_ENAME, &err, why);
    CHECK_FAILS(cf_column_open(&c, f, name, &err), CF_ENAME, &err, why);
    CHECK_FAILS(cf_column_open(&c, ro, name, &err), CF_ENAME, &err, why);
    CHECK_FAILS(cf_file_remove(f, name, &err), CF_ENAME, &err, why);
    /* as a group: "<name>/." is no better */
    CHECK_FAILS(cf_column_create(&c, f, group, NULL, 0, 0, 0, &err), CF_ENAME, &err, NULL);
    CHECK_FAILS(cf_column_open(&c, f, group, &err), CF_ENAME, &err, NULL);
}

static void run_attrs_block(cf_file *f, const char *name)
{
    cf_error err;
    cf_column *c = NULL;
    CHECK_OK(cf_name_check(name, &err), &err);
    CHECK_FAILS(cf_column_create(&c, f, name, "i4", 1, 3, 1, &err), CF_EKIND, &err, "names attributes");
    CHECK_OK(cf_column_create(&c, f, name, NULL, 0, 0, 0, &err), &err);
    CHECK_OK(cf_column_close(c, &err), &err);
    CHECK_OK(cf_column_open(&c, f, name, &err), &err);
    if (c) {
        CHECK_EQ_INT(cf_column_kind(c), CF_KIND_ATTRS_ONLY);
        CHECK_OK(cf_column_close(c, &err), &err);
    }
    CHECK_FAILS(cf_file_remove(f, name, &err), CF_EKIND, &err, "names attributes");
}

static void test_name_table(void)
{
    cf_error err;
    cf_file *f = world();
    cf_file *ro = NULL;
    CHECK_OK(cf_file_open(&ro, g_file, CF_OPEN_READ, &err), &err);
    /* names built at run time: too long, or long and legal */
    static char long_component[300], long_path[5000], deep_ok[3000], long_ok[256];
    memset(long_component, 'c', 256);
    for (size_t i = 0; i + 2 < sizeof long_path; i += 2) memcpy(long_path + i, "a/", 2);
    long_path[sizeof long_path - 2] = 'z';
    for (size_t i = 0; i + 100 < sizeof deep_ok; i += 100) {
        memset(deep_ok + i, 'd', 99);
        deep_ok[i + 99] = '/';
    }
    deep_ok[sizeof deep_ok - 101] = '\0'; /* 28 components of 99 bytes */
    memset(long_ok, 'L', 255);
    const hostile extra[] = {
        { "component-256", long_component, BAD, "longer than 255", 0 },
        { "path-5000", long_path, BAD, "longer than 3072", 0 },
        { "component-255", long_ok, LEGAL, NULL, 0 },
        { "deep-2800", deep_ok, LEGAL, NULL, 0 },
    };
    size_t n1 = sizeof table / sizeof *table, n2 = sizeof extra / sizeof *extra;
    CHECK(n1 + n2 >= 30);
    char *before = outside_state();
    for (size_t i = 0; i < n1 + n2; i++) {
        const hostile *h = i < n1 ? &table[i] : &extra[i - n1];
        int failures = cf_test_failures;
        char *file_before = snapshot(g_file, NULL);
        if (h->kind == LEGAL) {
            CHECK_EQ_INT(h->hidden, is_hidden(h->name));
            run_legal(f, h->name, h->hidden, h->label);
        } else if (h->kind == BAD) {
            run_bad(f, ro, h->name, h->why);
            char *file_after = snapshot(g_file, NULL);
            CHECK_SAME_TEXT(file_before, file_after, "the File (a refused name created something)");
            free(file_after);
        } else {
            run_attrs_block(f, h->name);
        }
        free(file_before);
        char *after = outside_state();
        CHECK_SAME_TEXT(before, after, "the File's surroundings");
        free(after);
        if (cf_test_failures != failures) fprintf(stderr, "  ^ name '%s'\n", h->label);
    }
    free(before);
    cf_file_close(ro);
    cf_file_close(f);
}

/* Attribute names are data, not paths: only empty names and SP, HT, LF, CR
 * (which would break an attr-v2 line) are refused. */
static void test_attribute_names(void)
{
    cf_error err;
    cf_file *f = world();
    static char long_name[5001];
    memset(long_name, 'n', 5000);
    const struct { const char *name, *why; } attrs[] = {
        { "..", NULL }, { "../../outside/secret.txt", NULL }, { "/etc/passwd", NULL }, { "a/../../x", NULL },
        { "header", NULL }, { "attr-v2", NULL }, { "000000", NULL }, { ".colfile-stage.x", NULL },
        { "%s%n%x", NULL }, { "\xe2\x88\x95\xef\xbc\x8f", NULL }, { "\xe2\x80\xaertl", NULL },
        { "bad\xff\xfe", NULL }, { "esc\x1b[31m", NULL }, { "del\x7f", NULL }, { "vt\x0b" "ff\x0c", NULL },
        { "#comment", NULL }, { long_name, NULL },
        { "", "empty" }, { "a b", "a space at byte 1" }, { "a\tb", "a tab" }, { "a\nb", "a newline" },
        { "a\rb", "a carriage return" }, { " lead", "a space at byte 0" },
    };
    char *before = outside_state();
    const char *blocks[] = { ".", "col", "g/." };
    cf_column *c = NULL;
    CHECK_OK(cf_column_create(&c, f, "col", "f8", 1, 1, 1, &err), &err);
    CHECK_OK(cf_column_close(c, &err), &err);
    for (size_t b = 0; b < 3; b++) {
        if (b == 2) {
            CHECK_OK(cf_column_create(&c, f, blocks[b], NULL, 0, 0, 0, &err), &err);
            CHECK_OK(cf_column_close(c, &err), &err);
        }
        for (size_t i = 0; i < sizeof attrs / sizeof *attrs; i++) {
            const char *name = attrs[i].name;
            int64_t value = (int64_t)i * 1000 + 7;
            CHECK_OK(cf_column_open(&c, f, blocks[b], &err), &err);
            if (!c) continue;
            if (attrs[i].why) {
                CHECK_FAILS(cf_column_attr_set(c, name, "i8", 1, &value, &err), CF_ENAME, &err, attrs[i].why);
                CHECK(strchr(err.message, '\n') == NULL);
                CHECK_FAILS(cf_column_attr_get(c, name, NULL, NULL, NULL, &err), CF_ENOENT, &err, NULL);
                CHECK_FAILS(cf_column_attr_delete(c, name, &err), CF_ENOENT, &err, NULL);
                CHECK_OK(cf_column_close(c, &err), &err);
                continue;
            }
            CHECK_OK(cf_column_attr_set(c, name, "i8", 1, &value, &err), &err);
            CHECK_OK(cf_column_close(c, &err), &err);
            /* back from disk */
            CHECK_OK(cf_column_open(&c, f, blocks[b], &err), &err);
            const void *data = NULL;
            int64_t nmemb = 0;
            CHECK_OK(cf_column_attr_get(c, name, NULL, &nmemb, &data, &err), &err);
            CHECK_EQ_INT(nmemb, 1);
            if (data) CHECK_EQ_MEM(data, &value, sizeof value);
            CHECK_OK(cf_column_attr_delete(c, name, &err), &err);
            CHECK_FAILS(cf_column_attr_get(c, name, NULL, NULL, NULL, &err), CF_ENOENT, &err, NULL);
            CHECK_OK(cf_column_close(c, &err), &err);
        }
    }
    check_outside_unchanged(before);
    cf_file_close(f);
}

/* (i) a directory below the File that is a link to one outside it. */
static void test_link_to_outside_directory(void)
{
    cf_error err;
    cf_file *f = world();
    make_link(g_outside, g_file, "abs");     /* absolute target */
    make_link("../outside", g_file, "rel");  /* relative target */
    cf_file *ro = NULL;
    CHECK_OK(cf_file_open(&ro, g_file, CF_OPEN_READ, &err), &err);
    char *before = outside_state();
    const char *links[] = { "abs", "rel" };
    for (size_t i = 0; i < 2; i++) {
        char x[64], col[64], grp[64], sub[64];
        snprintf(x, sizeof x, "%s/x", links[i]);
        snprintf(col, sizeof col, "%s/col", links[i]);
        snprintf(grp, sizeof grp, "%s/.", links[i]);
        snprintf(sub, sizeof sub, "%s/dir/new", links[i]);
        cf_column *c = NULL;
        CHECK_FAILS(cf_column_create(&c, f, x, "i4", 1, 1, 1, &err), CF_ENAME, &err, "leads outside the File");
        CHECK(strstr(err.message, links[i]) != NULL);
        CHECK_FAILS(cf_column_create(&c, f, col, "i4", 1, 1, 1, &err), CF_ENAME, &err, "leads outside the File");
        CHECK_FAILS(cf_column_create(&c, f, sub, NULL, 0, 0, 0, &err), CF_ENAME, &err, "leads outside the File");
        CHECK_FAILS(cf_column_create(&c, f, grp, NULL, 0, 0, 0, &err), CF_ENAME, &err, "leads outside the File");
        CHECK_FAILS(cf_column_open(&c, f, col, &err), CF_ENAME, &err, "leads outside the File");
        CHECK_FAILS(cf_column_open(&c, ro, col, &err), CF_ENAME, &err, "leads outside the File");
        CHECK_FAILS(cf_column_open(&c, f, grp, &err), CF_ENAME, &err, "leads outside the File");
        CHECK_FAILS(cf_file_remove(f, col, &err), CF_ENAME, &err, "leads outside the File");
        CHECK_EQ_INT(listed(f, col), 0);
        /* a link itself is not a column either */
        CHECK_FAILS(cf_file_remove(f, links[i], &err), CF_ENAME, &err, "leads outside the File");
    }
    check_outside_unchanged(before);
    cf_file_close(ro);
    cf_file_close(f);
}

/* (ii) a column directory that is itself a link to a column outside. */
static void test_column_directory_link(void)
{
    cf_error err;
    cf_file *f = world();
    char target[4200];
    snprintf(target, sizeof target, "%s/col", g_outside);
    make_link(target, g_file, "col");
    char *before = outside_state();
    cf_column *c = NULL;
    CHECK_FAILS(cf_column_open(&c, f, "col", &err), CF_ENAME, &err, "leads outside the File");
    CHECK_FAILS(cf_column_open(&c, f, "col/.", &err), CF_ENAME, &err, "leads outside the File");
    CHECK_FAILS(cf_column_create(&c, f, "col", "i4", 1, 9, 3, &err), CF_ENAME, &err, "leads outside the File");
    CHECK_FAILS(cf_column_create(&c, f, "col", NULL, 0, 0, 0, &err), CF_ENAME, &err, "leads outside the File");
    CHECK_FAILS(cf_column_create(&c, f, "col/sub", "i4", 1, 9, 3, &err), CF_ENAME, &err, "leads outside");
    CHECK_FAILS(cf_file_remove(f, "col", &err), CF_ENAME, &err, "leads outside the File");
    CHECK_EQ_INT(listed(f, "col"), 0);
    check_outside_unchanged(before);
    /* the link is still there, untouched */
    char p[4200];
    struct stat st;
    snprintf(p, sizeof p, "%s/col", g_file);
    CHECK(lstat(p, &st) == 0 && S_ISLNK(st.st_mode));
    cf_file_close(f);
}

/* (iii) files colfile opens in a column or group directory that are links:
 * a blob, a header, the File's attr-v2, and a lock file next to a column.
 * Writing must not reach the target; reading is refused as well. */
static void test_links_among_column_files(void)
{
    cf_error err;
    cf_file *f = world();
    cf_column *c = NULL;
    int32_t v[6] = { 1, 2, 3, 4, 5, 6 };
    CHECK_OK(cf_column_create(&c, f, "b", "i4", 1, 6, 2, &err), &err);
    CHECK_OK(cf_column_write(c, 0, 6, v, NULL, 4, 4, &err), &err);
    CHECK_OK(cf_column_close(c, &err), &err);
    CHECK_OK(cf_column_create(&c, f, "h", "i4", 1, 0, 1, &err), &err);
    CHECK_OK(cf_column_close(c, &err), &err);
    char p[4200], target[4200];
    snprintf(p, sizeof p, "%s/b/000001", g_file);
    CHECK(unlink(p) == 0);
    snprintf(target, sizeof target, "%s/secret.txt", g_outside);
    make_link(target, g_file, "b/000001");
    snprintf(p, sizeof p, "%s/h/header", g_file);
    CHECK(unlink(p) == 0);
    snprintf(target, sizeof target, "%s/col/header", g_outside);
    make_link(target, g_file, "h/header");
    cf_file *ro = NULL;
    CHECK_OK(cf_file_open(&ro, g_file, CF_OPEN_READ, &err), &err);
    char *before = outside_state();

    CHECK_FAILS(cf_column_open(&c, f, "b", &err), CF_ENAME, &err, "000001: symbolic link");
    CHECK(strstr(err.message, "leads outside the File") != NULL);
    CHECK_FAILS(cf_column_open(&c, ro, "b", &err), CF_ENAME, &err, "leads outside the File");
    CHECK_FAILS(cf_column_create(&c, f, "b", "i4", 1, 6, 2, &err), CF_ENAME, &err, "leads outside the File");
    CHECK_FAILS(cf_column_create(&c, f, "b", "i4", 1, 0, 0, &err), CF_ENAME, &err, "leads outside the File");
    CHECK_OK(cf_column_open(&c, f, "b/.", &err), &err); /* its attribute files are fine */
    if (c) CHECK_OK(cf_column_close(c, &err), &err);
    CHECK_FAILS(cf_file_remove(f, "b", &err), CF_ENAME, &err, "leads outside the File");
    CHECK_FAILS(cf_column_open(&c, ro, "h", &err), CF_ENAME, &err, "header: symbolic link");
    CHECK_FAILS(cf_column_create(&c, f, "h", NULL, 0, 0, 0, &err), CF_ENAME, &err, "leads outside the File");
    CHECK_FAILS(cf_file_remove(f, "h", &err), CF_ENAME, &err, "leads outside the File");
    /* listed: each holds an entry named header, and opening says why not */
    CHECK_EQ_INT(listed(f, "b"), 1);

    /* the File's own attribute file */
    snprintf(target, sizeof target, "%s/secret.txt", g_outside);
    make_link(target, g_file, "attr-v2");
    CHECK_FAILS(cf_column_open(&c, f, ".", &err), CF_ENAME, &err, "attr-v2: symbolic link");
    CHECK_FAILS(cf_column_create(&c, f, ".", NULL, 0, 0, 0, &err), CF_ENAME, &err, "leads outside the File");
    /* a lock or staging name next to a column */
    snprintf(target, sizeof target, "%s/dir/passwd", g_outside);
    snprintf(p, sizeof p, "%s/.colfile-lock", g_file);
    (void)unlink(p); /* the lock file of this File's earlier columns */
    make_link(target, g_file, ".colfile-lock");
    CHECK_FAILS(cf_column_create(&c, f, "n", "i4", 1, 1, 1, &err), CF_ENAME, &err, ".colfile-lock: symbolic link");

    check_outside_unchanged(before);
    cf_file_close(ro);
    cf_file_close(f);
}

/* (iv) the File itself reached through a link: legitimate, it works. */
static void test_file_path_through_link(void)
{
    cf_error err;
    cf_file *f = world();
    cf_file_close(f);
    make_link(g_file, cf_test_dir(), "alias");
    make_link("F", cf_test_dir(), "alias-rel");
    const char *forms[] = { "alias", "alias-rel", "alias/", "F/.", "outside/../F", "alias//" };
    for (size_t i = 0; i < sizeof forms / sizeof *forms; i++) {
        char path[4200];
        snprintf(path, sizeof path, "%s/%s", cf_test_dir(), forms[i]);
        char *before = snapshot(cf_test_dir(), "F");
        CHECK_OK(cf_file_open(&f, path, CF_OPEN_WRITE | CF_OPEN_CREATE, &err), &err);
        if (!f) continue;
        cf_column *c = NULL;
        int64_t v[2] = { 5, 6 }, back[2] = { 0, 0 };
        CHECK_OK(cf_column_create(&c, f, "g/x", "i8", 1, 2, 1, &err), &err);
        CHECK_OK(cf_column_write(c, 0, 2, v, NULL, 8, 8, &err), &err);
        CHECK_OK(cf_column_close(c, &err), &err);
        CHECK_OK(cf_column_open(&c, f, "g/x", &err), &err);
        CHECK_OK(cf_column_read(c, 0, 2, back, NULL, 8, 8, &err), &err);
        CHECK_EQ_MEM(back, v, sizeof v);
        CHECK_OK(cf_column_close(c, &err), &err);
        CHECK_OK(cf_column_open(&c, f, ".", &err), &err);
        CHECK_OK(cf_column_close(c, &err), &err);
        CHECK_EQ_INT(listed(f, "g/x"), 1);
        char real[4200];
        snprintf(real, sizeof real, "%s/g/x/header", g_file);
        CHECK(access(real, F_OK) == 0);
        CHECK_OK(cf_file_remove(f, "g/x", &err), &err);
        CHECK(access(real, F_OK) != 0);
        cf_file_close(f);
        char *after = snapshot(cf_test_dir(), "F");
        CHECK_SAME_TEXT(before, after, "the File's surroundings");
        free(before);
        free(after);
    }
}

/* Odd File paths: refused cleanly, nothing made where it should not be. */
static void test_file_paths(void)
{
    cf_error err;
    cf_file *f = NULL;
    char path[8200], target[4200];
    snprintf(target, sizeof target, "%s/regular", cf_test_dir());
    write_text(target, "x");
    make_link(target, cf_test_dir(), "to-regular");
    make_link("nowhere/new", cf_test_dir(), "dangling");
    make_link("loop", cf_test_dir(), "loop");
    char *before = snapshot(cf_test_dir(), NULL);
    CHECK_FAILS(cf_file_open(&f, "", CF_OPEN_WRITE | CF_OPEN_CREATE, &err), CF_EARG, &err, "empty");
    snprintf(path, sizeof path, "%s/to-regular", cf_test_dir());
    CHECK_FAILS(cf_file_open(&f, path, CF_OPEN_WRITE | CF_OPEN_CREATE, &err), CF_ENOTFILE, &err, "not a directory");
    snprintf(path, sizeof path, "%s/dangling", cf_test_dir());
    CHECK_FAILS(cf_file_open(&f, path, CF_OPEN_WRITE | CF_OPEN_CREATE, &err), CF_ENOTFILE, &err, NULL);
    snprintf(path, sizeof path, "%s/loop", cf_test_dir());
    CHECK_FAILS(cf_file_open(&f, path, CF_OPEN_WRITE | CF_OPEN_CREATE, &err), CF_ENOTFILE, &err, NULL);
    CHECK_FAILS(cf_file_open(&f, path, CF_OPEN_READ, &err), CF_ENOTFILE, &err, NULL);
    /* a component of 300 bytes, and a path beyond PATH_MAX: nothing made */
    int k = snprintf(path, sizeof path, "%s/ok/", cf_test_dir());
    memset(path + k, 'p', 300);
    path[k + 300] = '\0';
    CHECK_FAILS(cf_file_open(&f, path, CF_OPEN_WRITE | CF_OPEN_CREATE, &err), CF_ENAME, &err, "longer than 255");
    k = snprintf(path, sizeof path, "%s/", cf_test_dir());
    while (k < PATH_MAX + 100) k += snprintf(path + k, sizeof path - (size_t)k, "dir/");
    CHECK_FAILS(cf_file_open(&f, path, CF_OPEN_WRITE | CF_OPEN_CREATE, &err), CF_ENAME, &err, "longer than");
    char *after = snapshot(cf_test_dir(), NULL);
    CHECK_SAME_TEXT(before, after, "the test directory");
    free(before);
    free(after);
    /* a path with a newline or a space is the caller's business: it works */
    snprintf(path, sizeof path, "%s/odd name\nwith newline", cf_test_dir());
    CHECK_OK(cf_file_open(&f, path, CF_OPEN_WRITE | CF_OPEN_CREATE, &err), &err);
    cf_column *c = NULL;
    CHECK_OK(cf_column_create(&c, f, "x", "i4", 1, 0, 1, &err), &err);
    CHECK_OK(cf_column_close(c, &err), &err);
    CHECK_EQ_INT(listed(f, "x"), 1);
    cf_file_close(f);
    /* a File root too long to hold its own files */
    k = snprintf(path, sizeof path, "%s/", cf_test_dir());
    while (k < PATH_MAX - 150) k += snprintf(path + k, sizeof path - (size_t)k, "deep/");
    path[k - 1] = '\0';
    f = NULL;
    CHECK_OK(cf_file_open(&f, path, CF_OPEN_WRITE | CF_OPEN_CREATE, &err), &err);
    if (f) {
        char *inside = snapshot(path, NULL);
        CHECK_FAILS(cf_column_create(&c, f, "a-long-enough-name/for-the-path-to-overflow/with-its-files",
                                     "i4", 1, 0, 1, &err), CF_ENAME, &err, "path too long");
        char *inside_after = snapshot(path, NULL);
        CHECK_SAME_TEXT(inside, inside_after, "the deep File");
        free(inside);
        free(inside_after);
        cf_file_close(f);
    }
}

/* (v) loops, and links that stay inside the File (refused too). */
static void test_link_loops_and_inside_links(void)
{
    cf_error err;
    cf_file *f = world();
    cf_column *c = NULL;
    CHECK_OK(cf_column_create(&c, f, "real/c", "i4", 1, 1, 1, &err), &err);
    CHECK_OK(cf_column_close(c, &err), &err);
    make_link("loop", g_file, "loop");
    make_link("pong", g_file, "ping");
    make_link("ping", g_file, "pong");
    make_link(".", g_file, "self");
    make_link("..", g_file, "up");
    make_link("real", g_file, "alias");
    char *before = outside_state();
    CHECK_FAILS(cf_column_create(&c, f, "loop/x", "i4", 1, 1, 1, &err), CF_ENAME, &err, "loop");
    CHECK_FAILS(cf_column_open(&c, f, "loop", &err), CF_ENAME, &err, "loop");
    CHECK_FAILS(cf_column_open(&c, f, "ping/x", &err), CF_ENAME, &err, "loop");
    CHECK_FAILS(cf_file_remove(f, "pong/x", &err), CF_ENAME, &err, "loop");
    CHECK_FAILS(cf_column_create(&c, f, "self/x", "i4", 1, 1, 1, &err), CF_ENAME, &err, "inside the File");
    CHECK_FAILS(cf_column_open(&c, f, "self/real/c", &err), CF_ENAME, &err, "inside the File");
    CHECK_FAILS(cf_column_create(&c, f, "up/F/x", "i4", 1, 1, 1, &err), CF_ENAME, &err, "leads outside the File");
    CHECK_FAILS(cf_column_create(&c, f, "up/outside/col", "i4", 1, 1, 1, &err), CF_ENAME, &err, "leads outside");
    CHECK_FAILS(cf_column_open(&c, f, "alias/c", &err), CF_ENAME, &err, "inside the File");
    CHECK_FAILS(cf_file_remove(f, "alias/c", &err), CF_ENAME, &err, "inside the File");
    /* the listing ends, and shows only the real column */
    char **names = NULL;
    int64_t n = 0;
    CHECK_OK(cf_file_list(f, &names, &n, &err), &err);
    CHECK_EQ_INT(n, 1);
    if (n == 1) CHECK_EQ_STR(names[0], "real/c");
    cf_names_free(names, n);
    CHECK_OK(cf_column_open(&c, f, "real/c", &err), &err);
    CHECK_OK(cf_column_close(c, &err), &err);
    check_outside_unchanged(before);
    cf_file_close(f);
    /* emptying a File that holds links is refused (they are not File content) */
    CHECK_FAILS(cf_file_open(&f, g_file, CF_OPEN_WRITE | CF_OPEN_TRUNCATE, &err), CF_ENOTFILE, &err, "refusing");
}

/* Blob-like names are legal: where one collides with a blob, the operation
 * fails or stays inside; nothing is followed. */
static void test_blob_name_collisions(void)
{
    cf_error err;
    cf_file *f = world();
    cf_column *c = NULL;
    int32_t v[2] = { 4, 5 }, back[2] = { 0, 0 };
    CHECK_OK(cf_column_create(&c, f, "c", "i4", 1, 2, 1, &err), &err);
    CHECK_OK(cf_column_write(c, 0, 2, v, NULL, 4, 4, &err), &err);
    CHECK_OK(cf_column_close(c, &err), &err);
    char *before = outside_state();
    int rc = cf_column_create(&c, f, "c/000000", "i4", 1, 1, 1, &err);
    CHECK(rc != 0); /* a blob file is where the directory would go */
    if (rc == 0) cf_column_close(c, NULL);
    CHECK_OK(cf_column_open(&c, f, "c", &err), &err);
    CHECK_OK(cf_column_read(c, 0, 2, back, NULL, 4, 4, &err), &err);
    CHECK_EQ_MEM(back, v, sizeof v);
    CHECK_OK(cf_column_close(c, &err), &err);
    /* a column named like a blob below a plain group is fine */
    CHECK_OK(cf_column_create(&c, f, "d/000000", "i4", 1, 2, 1, &err), &err);
    CHECK_OK(cf_column_write(c, 0, 2, v, NULL, 4, 4, &err), &err);
    CHECK_OK(cf_column_close(c, &err), &err);
    CHECK_EQ_INT(listed(f, "d/000000"), 1);
    check_outside_unchanged(before);
    cf_file_close(f);
}

CF_TESTS(CF_TEST(test_name_table), CF_TEST(test_attribute_names), CF_TEST(test_link_to_outside_directory),
         CF_TEST(test_column_directory_link), CF_TEST(test_links_among_column_files),
         CF_TEST(test_file_path_through_link), CF_TEST(test_file_paths),
         CF_TEST(test_link_loops_and_inside_links), CF_TEST(test_blob_name_collisions))
