/* fixtures.h - finding the golden fixture sets and walking their trees.
 *
 * A fixture set is any directory under CF_FIXTURES_DIR holding a
 * manifest.json; its trees are its subdirectories.  A set generated with
 * another seed has other names, shapes, split counts and values, so tests
 * find what exists instead of assuming it. */
#ifndef CF_TEST_FIXTURES_H
#define CF_TEST_FIXTURES_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "harness.h"

static inline int is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static inline int is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

typedef struct {
    char **dirs;
    size_t count;
} dir_list;

static inline void dir_list_add(dir_list *l, const char *dir)
{
    char **nd = realloc(l->dirs, (l->count + 1) * sizeof *nd);
    char *copy = malloc(strlen(dir) + 1);
    if (nd) l->dirs = nd;
    if (!nd || !copy) { free(copy); CHECK(!"out of memory"); return; }
    strcpy(copy, dir);
    l->dirs[l->count++] = copy;
}

static inline int dir_list_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static inline void dir_list_sort(dir_list *l)
{
    if (l->count > 1) qsort(l->dirs, l->count, sizeof *l->dirs, dir_list_cmp);
}

static inline void dir_list_free(dir_list *l)
{
    for (size_t i = 0; i < l->count; i++) free(l->dirs[i]);
    free(l->dirs);
    l->dirs = NULL;
    l->count = 0;
}

static inline void find_sets_below(const char *dir, int depth, dir_list *sets)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/manifest.json", dir);
    if (is_file(path)) {
        dir_list_add(sets, dir);
        return; /* the trees of a set hold no further sets */
    }
    if (depth >= 8) return;
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (is_dir(path)) find_sets_below(path, depth + 1, sets);
    }
    closedir(d);
}

typedef dir_list fixture_sets;

/* Every fixture set, sorted. */
static inline fixture_sets find_fixture_sets(void)
{
    fixture_sets s = {NULL, 0};
    find_sets_below(CF_FIXTURES_DIR, 0, &s);
    dir_list_sort(&s);
    printf("  (%zu fixture set(s) under %s)\n", s.count, CF_FIXTURES_DIR);
    return s;
}

static inline void free_fixture_sets(fixture_sets *s)
{
    dir_list_free(s);
}

/* Call visit(dir, ctx) for `dir` and every directory below it. */
static inline void walk_dirs(const char *dir, void (*visit)(const char *, void *), void *ctx, int depth)
{
    visit(dir, ctx);
    if (depth >= 64) return;
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    char path[4096];
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (is_dir(path)) walk_dirs(path, visit, ctx, depth + 1);
    }
    closedir(d);
}

#endif
