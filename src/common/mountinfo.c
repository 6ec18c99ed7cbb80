/* mountinfo.c - the scope of locks at a path, from the mount table (see
 * mountinfo.h). */
#if !defined(_XOPEN_SOURCE) || _XOPEN_SOURCE < 700
#undef _XOPEN_SOURCE
#define _XOPEN_SOURCE 700 /* realpath */
#endif
#include "mountinfo.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Copy field s (n bytes) to out (cap bytes), decoding mountinfo's \ooo
 * escapes (space, tab, newline, backslash). */
static void unescape(const char *s, size_t n, char *out, size_t cap)
{
    size_t o = 0;
    for (size_t i = 0; i < n && o + 1 < cap; i++) {
        if (s[i] == '\\' && i + 3 < n && s[i + 1] >= '0' && s[i + 1] <= '7' &&
            s[i + 2] >= '0' && s[i + 2] <= '7' && s[i + 3] >= '0' && s[i + 3] <= '7') {
            out[o++] = (char)(((s[i + 1] - '0') << 6) | ((s[i + 2] - '0') << 3) | (s[i + 3] - '0'));
            i += 3;
        } else {
            out[o++] = s[i];
        }
    }
    out[o] = '\0';
}

/* 1 if the comma-separated list (n bytes) holds option opt exactly. */
static int has_option(const char *list, size_t n, const char *opt)
{
    size_t ol = strlen(opt);
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && list[j] != ',') j++;
        if (j - i == ol && memcmp(list + i, opt, ol) == 0) return 1;
        i = j + 1;
    }
    return 0;
}

static const char *scope_of(const char *fs, const char *opts, size_t n)
{
    if (strcmp(fs, "lustre") == 0) {
        if (has_option(opts, n, "localflock")) return "node";
        return has_option(opts, n, "flock") ? "cluster" : "none";
    }
    if (strcmp(fs, "nfs") == 0 || strcmp(fs, "nfs4") == 0) {
        if (has_option(opts, n, "nolock") || has_option(opts, n, "local_lock=all") ||
            has_option(opts, n, "local_lock=flock") || has_option(opts, n, "local_lock=posix"))
            return "node";
        return "cluster";
    }
    if (strcmp(fs, "beegfs") == 0) return "node";
    return "cluster";
}

const char *cf__lock_scope_in(const char *text, const char *abs, char *fstype, size_t n)
{
    const char *best = "unknown";
    size_t best_len = 0;
    int found = 0;
    if (n) fstype[0] = '\0';
    size_t plen = strlen(abs);
    for (const char *line = text; line && *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        /* fields: id parent major:minor root mount-point options [tags...] - type source super-options */
        const char *f[6];
        size_t fl[6];
        const char *p = line, *stop = line + len;
        int k = 0;
        for (; k < 6 && p < stop; k++) {
            const char *q = memchr(p, ' ', (size_t)(stop - p));
            f[k] = p;
            fl[k] = q ? (size_t)(q - p) : (size_t)(stop - p);
            p = q ? q + 1 : stop;
        }
        const char *sep = k == 6 ? p : NULL;
        while (sep && sep < stop && !(sep[0] == '-' && (sep + 1 == stop || sep[1] == ' ') &&
                                      (sep == line || sep[-1] == ' '))) {
            const char *q = memchr(sep, ' ', (size_t)(stop - sep));
            sep = q ? q + 1 : NULL;
        }
        if (sep && sep + 2 < stop) {
            const char *type = sep + 2;
            const char *te = memchr(type, ' ', (size_t)(stop - type));
            const char *src = te ? te + 1 : stop;
            const char *se = src < stop ? memchr(src, ' ', (size_t)(stop - src)) : NULL;
            const char *sopts = se ? se + 1 : stop;
            char mp[PATH_MAX], fs[64], opts[4096];
            unescape(f[4], fl[4], mp, sizeof mp);
            size_t ml = strlen(mp);
            while (ml > 1 && mp[ml - 1] == '/') mp[--ml] = '\0';
            snprintf(fs, sizeof fs, "%.*s", (int)(te ? (size_t)(te - type) : (size_t)(stop - type)), type);
            snprintf(opts, sizeof opts, "%.*s,%.*s", (int)fl[5], f[5], (int)(stop - sopts), sopts);
            int inside = strcmp(mp, "/") == 0 ||
                         (plen >= ml && memcmp(abs, mp, ml) == 0 && (abs[ml] == '\0' || abs[ml] == '/'));
            if (inside && (!found || ml >= best_len)) {
                found = 1;
                best_len = ml;
                best = scope_of(fs, opts, strlen(opts));
                if (n) snprintf(fstype, n, "%s", fs);
            }
        }
        line = end ? end + 1 : NULL;
    }
    return best;
}

const char *cf__lock_scope(const char *path)
{
    char abs[PATH_MAX];
    if (!realpath(path, abs)) return "unknown";
    FILE *fp = fopen("/proc/self/mountinfo", "re");
    if (!fp) return "unknown";
    size_t cap = 1 << 16, len = 0;
    char *text = malloc(cap);
    size_t got;
    while (text && (got = fread(text + len, 1, cap - len - 1, fp)) > 0) {
        len += got;
        if (len + 1 == cap) {
            char *t = realloc(text, cap * 2);
            if (!t) {
                free(text);
                text = NULL;
                break;
            }
            text = t;
            cap *= 2;
        }
    }
    fclose(fp);
    if (!text) return "unknown";
    text[len] = '\0';
    char fs[64];
    const char *scope = cf__lock_scope_in(text, abs, fs, sizeof fs);
    free(text);
    return scope;
}
