/* names.c - which column, group and attribute-block names are acceptable,
 * and keeping what they lead to inside the File.
 *
 * bigfile 0.1.52 only refused whitespace in the joined path, so `../x`
 * escaped the File and '' turned the File root into a column.  colfile
 * checks every name before anything is created (cf_name_check), and before
 * touching the disk checks that no symbolic link below the File root leads
 * the operation elsewhere (cf__name_confine). */
#if !defined(_XOPEN_SOURCE) || _XOPEN_SOURCE < 700
#undef _XOPEN_SOURCE
#define _XOPEN_SOURCE 700 /* realpath: POSIX.1-2008 with the XSI option */
#endif
/* d_type and DT_LNK: readdir tells links apart without an lstat of each of a
 * column's (possibly thousands of) blobs.  Where they are missing, each
 * colfile file of the directory is lstat'ed instead (check_entries). */
#define _DEFAULT_SOURCE 1
#include "names.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "catalog.h"
#include "error.h"
#include "fsutil.h"

/* Longest name accepted: leaves room for the File path and "/header". */
#define CF__NAME_MAX 3072
/* Longest single component most file systems accept. */
#define CF__COMPONENT_MAX 255
/* Bytes of a name or path quoted in a message: the message holds 1024. */
#define CF__SHOWN_MAX 200

/* `s` made safe for an error message: control bytes (a newline, an escape
 * sequence) are written as \xNN, and at most CF__SHOWN_MAX bytes are shown,
 * then "...".  `out` holds CF__SHOWN_MAX * 4 + 4 bytes. */
#define CF__QUOTE_BUF (CF__SHOWN_MAX * 4 + 4)
int cf__is_format_file_name(const char *name)
{
    if (strcmp(name, "header") == 0 || strcmp(name, "attr") == 0 || strcmp(name, "attr-v2") == 0)
        return 1;
    if (strncmp(name, "colfile-", 8) == 0) return 1;
    if (name[0] == '.') {
        /* our temporaries: .<metadata name>.tmp.* */
        return strstr(name, ".tmp.") != NULL || strncmp(name, ".colfile", 8) == 0;
    }
    size_t n = strlen(name);
    if (n < 6) return 0;
    for (size_t i = 0; i < n; i++)
        if (!((name[i] >= '0' && name[i] <= '9') || (name[i] >= 'A' && name[i] <= 'F'))) return 0;
    return 1;
}

static const char *quote(char out[CF__QUOTE_BUF], const char *s)
{
    size_t k = 0, i = 0;
    for (; s[i] && i < CF__SHOWN_MAX; i++) {
        unsigned char u = (unsigned char)s[i];
        if (u < 0x20 || u == 0x7f) k += (size_t)snprintf(out + k, 5, "\\x%02X", u);
        else out[k++] = (char)u;
    }
    if (s[i]) {
        memcpy(out + k, "...", 3);
        k += 3;
    }
    out[k] = '\0';
    return out;
}

static const char *forbidden_char_name(char ch)
{
    switch (ch) {
    case ' ': return "a space";
    case '\t': return "a tab";
    case '\n': return "a newline";
    case '\r': return "a carriage return";
    default: return NULL;
    }
}

/* A directory with one of these names would collide with a metadata file
 * (a directory called `header` would even make its parent a column). */
static int is_reserved_component(const char *p, size_t len)
{
    static const char *const exact[] = { "header", "attr", "attr-v2" };
    for (size_t i = 0; i < sizeof exact / sizeof *exact; i++)
        if (len == strlen(exact[i]) && memcmp(p, exact[i], len) == 0) return 1;
    return (len >= 8 && memcmp(p, "colfile-", 8) == 0) || (len >= 8 && memcmp(p, ".colfile", 8) == 0);
}

int cf_name_check(const char *name, cf_error *err)
{
    char q[CF__QUOTE_BUF];
    if (!name) return CF_FAIL(err, CF_ENAME, "invalid name: NULL");
    size_t n = strlen(name);
    if (n == 0) return CF_FAIL(err, CF_ENAME, "invalid name '': a name must not be empty");
    if (n > CF__NAME_MAX)
        return CF_FAIL(err, CF_ENAME, "invalid name '%.40s...': longer than %d bytes", quote(q, name), CF__NAME_MAX);
    for (size_t i = 0; i < n; i++) {
        const char *what = forbidden_char_name(name[i]);
        if (what)
            return CF_FAIL(err, CF_ENAME, "invalid name '%s': contains %s at byte %zu", quote(q, name), what, i);
        if ((unsigned char)name[i] < 0x20 || name[i] == 0x7f)
            return CF_FAIL(err, CF_ENAME, "invalid name '%s': contains control character 0x%02X at byte %zu",
                           quote(q, name), (unsigned)(unsigned char)name[i], i);
    }
    if (strcmp(name, ".") == 0) return 0;      /* the File's own attributes */
    if (name[0] == '/')
        return CF_FAIL(err, CF_ENAME, "invalid name '%s': must be relative to the File, not absolute",
                       quote(q, name));
    /* Walk the components. */
    const char *p = name;
    while (1) {
        const char *slash = strchr(p, '/');
        size_t len = slash ? (size_t)(slash - p) : strlen(p);
        int last = slash == NULL;
        if (len == 0)
            return CF_FAIL(err, CF_ENAME, "invalid name '%s': empty path component (leading, trailing or doubled '/')",
                           quote(q, name));
        if (len > CF__COMPONENT_MAX)
            return CF_FAIL(err, CF_ENAME, "invalid name '%s': a component is longer than %d bytes", quote(q, name),
                           CF__COMPONENT_MAX);
        if (len == 2 && p[0] == '.' && p[1] == '.')
            return CF_FAIL(err, CF_ENAME, "invalid name '%s': '..' would leave the File", quote(q, name));
        if (len == 1 && p[0] == '.' && !last)
            return CF_FAIL(err, CF_ENAME, "invalid name '%s': '.' is only allowed as the last component (group attributes)",
                           quote(q, name));
        if (is_reserved_component(p, len))
            return CF_FAIL(err, CF_ENAME, "invalid name '%s': component '%.*s' is reserved for metadata files",
                           quote(q, name), (int)len, p);
        if (last) break;
        p = slash + 1;
    }
    return 0;
}

int cf__name_check_in(const char *root, const char *name, cf_error *err)
{
    return cf__error_prefix(err, cf_name_check(name, err), root, ": ");
}

int cf__file_path_check(const char *path, cf_error *err)
{
    char q[CF__QUOTE_BUF];
    if (strlen(path) >= PATH_MAX)
        return CF_FAIL(err, CF_ENAME, "%s: File path is longer than %d bytes", quote(q, path), PATH_MAX - 1);
    for (const char *p = path; *p;) {
        size_t len = strcspn(p, "/");
        if (len > CF__COMPONENT_MAX)
            return CF_FAIL(err, CF_ENAME, "%s: a component of the File path is longer than %d bytes", quote(q, path),
                           CF__COMPONENT_MAX);
        p += len;
        p += strspn(p, "/");
    }
    return 0;
}

/* ---- symbolic links below the File root ------------------------------- */

/* Policy: colfile follows no symbolic link below a File's directory, not
 * even one that stays inside the File.  Resolving a link to decide whether
 * it stays inside is only as good as the moment it is done, aliases would
 * let one column be reached (and removed) under two names, and a link to
 * an ancestor would make listing endless.  Links to the File itself, or
 * above it, are the caller's business and are followed. */

/* 1 if `path` (absolute, resolved) is `root` or lies below it. */
static int is_below(const char *path, const char *root)
{
    size_t k = strlen(root);
    if (k == 1 && root[0] == '/') return 1;
    return strncmp(path, root, k) == 0 && (path[k] == '/' || path[k] == '\0');
}

/* The CF_ENAME error for the symbolic link at `path` below `root`, saying
 * where it leads. */
static int refuse_link(const char *root, const char *path, cf_error *err)
{
    char target[CF__SHOWN_MAX + 1], qt[CF__QUOTE_BUF], qp[CF__QUOTE_BUF], qr[CF__QUOTE_BUF];
    ssize_t n = readlink(path, target, sizeof target - 1);
    target[n > 0 ? n : 0] = '\0';
    quote(qt, target);
    quote(qp, path);
    quote(qr, root);
    char *real_root = realpath(root, NULL);
    errno = 0;
    char *real = realpath(path, NULL);
    int e = errno;
    int rc;
    if (real && real_root && is_below(real, real_root))
        rc = CF_FAIL(err, CF_ENAME, "%s: symbolic link (to '%s') inside the File: colfile follows no symbolic "
                     "links below a File's directory", qp, qt);
    else if (!real && e == ELOOP)
        rc = CF_FAIL(err, CF_ENAME, "%s: symbolic link (to '%s') is part of a loop: colfile follows no symbolic "
                     "links below a File's directory", qp, qt);
    else if (!real && e == ENOENT)
        rc = CF_FAIL(err, CF_ENAME, "%s: dangling symbolic link (to '%s'): colfile follows no symbolic links "
                     "below a File's directory", qp, qt);
    else
        rc = CF_FAIL(err, CF_ENAME, "%s: symbolic link (to '%s') leads outside the File %s", qp, qt, qr);
    free(real);
    free(real_root);
    return rc;
}

/* Files colfile reads or writes in a column directory (`column`), or only
 * the attribute files of a group or File directory.  Hidden names starting
 * with `.colfile` are colfile's own next to a column as well. */
static int is_guarded_name(const char *name, int column)
{
    /* The catalog is no companion of a column, and is never reached
     * through a link (catalog.c replaces one where it belongs). */
    if (strcmp(name, CF__CATALOG_DIR) == 0) return 0;
    if (strncmp(name, ".colfile", 8) == 0) return 1;
    if (column) return cf__is_format_file_name(name);
    return strcmp(name, "attr") == 0 || strcmp(name, "attr-v2") == 0 || strncmp(name, "colfile-", 8) == 0;
}

/* Refuse a symbolic link among the entries of `dir` that colfile may open,
 * create, replace or remove: is_guarded_name(name, column), or with
 * `hidden_only` only the `.colfile*` ones. */
static int check_entries(const char *root, const char *dir, int column, int hidden_only, cf_error *err)
{
    DIR *d = opendir(dir);
    if (!d) return 0; /* the operation itself reports what is wrong */
    int rc = 0;
    struct dirent *ent;
    while (rc == 0 && (ent = readdir(d)) != NULL) {
        const char *nm = ent->d_name;
        if (!is_guarded_name(nm, column) || (hidden_only && strncmp(nm, ".colfile", 8) != 0)) continue;
#if defined(DT_LNK) && defined(DT_UNKNOWN)
        if (ent->d_type != DT_LNK && ent->d_type != DT_UNKNOWN) continue;
#endif
        char *p = cf__path_join(dir, nm);
        if (!p) {
            rc = CF_FAIL(err, CF_ENOMEM, "%s: out of memory", dir);
            break;
        }
        struct stat st;
        if (lstat(p, &st) == 0 && S_ISLNK(st.st_mode)) rc = refuse_link(root, p, err);
        free(p);
    }
    closedir(d);
    return rc;
}

static int confine(const char *root, const char *name, int companions, int *leaf, cf_error *err)
{
    char qr[CF__QUOTE_BUF], qn[CF__QUOTE_BUF];
    size_t rl = strlen(root), nl = strlen(name);
    if (rl + 1 + nl + CF__PATH_ROOM >= PATH_MAX)
        return CF_FAIL(err, CF_ENAME, "%s: name '%s': path too long (%zu bytes, with the files colfile keeps "
                       "in it more than %d)", quote(qr, root), quote(qn, name), rl + 1 + nl, PATH_MAX - 1);
    /* "." and "g/." name the attribute files of the File and of g. */
    size_t walk = nl;
    int attrs_only = 0;
    if (strcmp(name, ".") == 0) {
        walk = 0;
        attrs_only = 1;
    } else if (nl >= 2 && strcmp(name + nl - 2, "/.") == 0) {
        walk = nl - 2;
        attrs_only = 1;
    }
    char *path = malloc(rl + nl + 2);
    if (!path) return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", root);
    memcpy(path, root, rl + 1);
    size_t end = rl, parent_end = rl;
    int rc = 0, exists = 1;
    if (leaf) *leaf = CF__LEAF_UNKNOWN;
    for (size_t i = 0; i < walk && exists;) {
        size_t len = strcspn(name + i, "/");
        if (len > walk - i) len = walk - i;
        parent_end = end;
        if (end > 0 && path[end - 1] != '/') path[end++] = '/';
        memcpy(path + end, name + i, len);
        end += len;
        path[end] = '\0';
        i += len + 1;
        struct stat st;
        int at_leaf = i >= walk && !attrs_only;
        if (lstat(path, &st) != 0) {
            /* Absent: made as a real directory by the operation, or its
             * error (permission, not a directory) is reported by it. */
            exists = 0;
            if (leaf && at_leaf && errno == ENOENT) *leaf = CF__LEAF_ABSENT;
        } else if (S_ISLNK(st.st_mode)) {
            rc = refuse_link(root, path, err);
        } else if (!S_ISDIR(st.st_mode)) {
            exists = 0; /* a file where a directory should be: the operation says so */
            if (leaf && at_leaf) *leaf = CF__LEAF_OTHER;
        } else if (leaf && at_leaf) {
            *leaf = CF__LEAF_DIR;
        }
        if (rc) break;
        if (companions && at_leaf) {
            /* The parent of a column's directory holds colfile's hidden
             * companions of it (.colfile-*): none may be a link. */
            char saved = path[parent_end];
            path[parent_end] = '\0';
            rc = check_entries(root, path, 0, 1, err);
            path[parent_end] = saved;
        }
    }
    if (rc == 0 && exists) rc = check_entries(root, path, !attrs_only, 0, err);
    free(path);
    return rc;
}

int cf__name_confine(const char *root, const char *name, cf_error *err)
{
    return confine(root, name, 1, NULL, err);
}

int cf__name_confine_own(const char *root, const char *name, cf_error *err)
{
    return confine(root, name, 0, NULL, err);
}

int cf__name_confine_new(const char *root, const char *name, int *leaf, cf_error *err)
{
    return confine(root, name, 0, leaf, err);
}

int cf__name_outside_columns(const char *root, const char *name, cf_error *err)
{
    char qr[CF__QUOTE_BUF], qn[CF__QUOTE_BUF], qf[CF__QUOTE_BUF];
    size_t rl = strlen(root), nl = strlen(name);
    char *path = malloc(rl + nl + sizeof "/header" + 1);
    if (!path) return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", root);
    int rc = 0;
    for (const char *slash = strchr(name, '/'); slash && rc == 0; slash = strchr(slash + 1, '/')) {
        size_t len = (size_t)(slash - name);
        memcpy(path, root, rl);
        path[rl] = '/';
        memcpy(path + rl + 1, name, len);
        memcpy(path + rl + 1 + len, "/header", sizeof "/header");
        struct stat st;
        if (lstat(path, &st) == 0 && !S_ISDIR(st.st_mode)) {
            path[rl + 1 + len] = '\0';
            rc = CF_FAIL(err, CF_EEXIST, "%s: '%s' is a column, which cannot hold columns: '%s' would not be listed",
                         quote(qr, path), quote(qn, path + rl + 1), quote(qf, name));
        }
    }
    free(path);
    return rc;
}

int cf__name_guarded(const char *entry, int column) { return is_guarded_name(entry, column); }
