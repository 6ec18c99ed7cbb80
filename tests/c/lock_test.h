/* lock_test.h - what the writer-lock tests share: a File directory below
 * the test's temporary directory, and columns of three rows made in it. */
#ifndef CF_LOCK_TEST_H
#define CF_LOCK_TEST_H

#include <dirent.h>
#include <stdarg.h>
#include <sys/stat.h>

#include "harness.h"

static char g_root[4200];

/* The File of the next test: <test dir>/<name>. */
static void use_root(const char *name) { snprintf(g_root, sizeof g_root, "%s/%s", cf_test_dir(), name); }

static int exists(const char *rel)
{
    char p[4400];
    snprintf(p, sizeof p, "%s/%s", g_root, rel);
    struct stat st;
    return lstat(p, &st) == 0;
}

static cf_file *open_file(int flags)
{
    cf_error err;
    cf_file *f = NULL;
    CHECK_OK(cf_file_open(&f, g_root, CF_OPEN_WRITE | CF_OPEN_CREATE | CF_OPEN_NODURABLE | flags, &err), &err);
    return f;
}

/* Column `name` created in f with rows 1, 2, 3 written: its lock taken. */
static cf_column *make(cf_file *f, const char *name)
{
    cf_error err;
    cf_column *c = NULL;
    int64_t rows[3] = { 1, 2, 3 };
    CHECK_OK(cf_column_create(&c, f, name, "<i8", 1, 3, 1, &err), &err);
    if (c) CHECK_OK(cf_column_write(c, 0, 3, rows, NULL, 8, 8, &err), &err);
    return c;
}

/* Column `name` made in f as make makes it, and committed. */
#if defined(__GNUC__)
__attribute__((unused))
#endif
static void made(cf_file *f, const char *name)
{
    cf_error err;
    CHECK_OK(cf_column_close(make(f, name), &err), &err);
}

/* Column `name` of f opened and row 0 written in place (value v): its
 * lock taken by f. */
#if defined(__GNUC__)
__attribute__((unused))
#endif
static cf_column *written_in_place(cf_file *f, const char *name, int64_t v)
{
    cf_error err;
    cf_column *c = NULL;
    CHECK_OK(cf_column_open(&c, f, name, &err), &err);
    if (c) CHECK_OK(cf_column_write(c, 0, 1, &v, NULL, 8, 8, &err), &err);
    return c;
}

/* The File of the next test (<test dir>/<root>) opened, with the columns
 * of the NULL-terminated list after root made and committed; NULL (a
 * failed check) if it cannot be opened. */
#if defined(__GNUC__)
__attribute__((unused))
#endif
static cf_file *file_with(const char *root, ...)
{
    use_root(root);
    cf_file *f = open_file(0);
    if (!f) return NULL;
    va_list ap;
    va_start(ap, root);
    for (const char *name; (name = va_arg(ap, const char *)) != NULL;) made(f, name);
    va_end(ap);
    return f;
}

/* Names in directory rel of g_root starting with prefix. */
static int count_prefixed(const char *rel, const char *prefix)
{
    char p[4400];
    snprintf(p, sizeof p, "%s/%s", g_root, rel);
    DIR *d = opendir(p);
    if (!d) return 0;
    int n = 0;
    struct dirent *ent;
    while ((ent = readdir(d)) != NULL) n += strncmp(ent->d_name, prefix, strlen(prefix)) == 0;
    closedir(d);
    return n;
}

/* Lock files (".colfile-lock*") in directory rel of g_root. */
#if defined(__GNUC__)
__attribute__((unused))
#endif
static int hidden_locks(const char *rel) { return count_prefixed(rel, ".colfile-lock"); }

/* Two CF_OPEN_NOLOCK handles write column "c" of g_root side by side and
 * share its lock, held in the file `lock` (relative to g_root); a third,
 * exclusive writer is refused; the last sharer out removes the file. */
static void check_shared_holders(const char *lock)
{
    cf_error err;
    cf_file *f = open_file(0);
    if (!f) return;
    CHECK_OK(cf_column_close(make(f, "c"), &err), &err);
    cf_file_close(f);
    cf_file *s1 = open_file(CF_OPEN_NOLOCK), *s2 = open_file(CF_OPEN_NOLOCK), *x = open_file(0);
    if (!s1 || !s2 || !x) return;
    cf_column *a = NULL, *b = NULL, *e = NULL;
    int64_t v = 7;
    CHECK_OK(cf_column_open(&a, s1, "c", &err), &err);
    CHECK_OK(cf_column_open(&b, s2, "c", &err), &err);
    if (!a || !b) return;
    CHECK_OK(cf_column_write(a, 0, 1, &v, NULL, 8, 8, &err), &err);
    CHECK_OK(cf_column_write(b, 1, 1, &v, NULL, 8, 8, &err), &err); /* both hold it, shared */
    CHECK(exists(lock));
    CHECK_OK(cf_column_open(&e, x, "c", &err), &err);
    if (e) {
        char held[64];
        snprintf(held, sizeof held, "%s is held", lock);
        CHECK_FAILS(cf_column_write(e, 2, 1, &v, NULL, 8, 8, &err), CF_EBUSY, &err, held);
        (void)cf_column_close(e, NULL); /* nothing to commit: it never locked */
    }
    cf_file_close(x);
    CHECK_OK(cf_column_close(a, &err), &err);
    CHECK(exists(lock));
    CHECK_OK(cf_column_close(b, &err), &err); /* the last one out removes it */
    CHECK(!exists(lock));
    cf_file_close(s1);
    cf_file_close(s2);
}

#endif
