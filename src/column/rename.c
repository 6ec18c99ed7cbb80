/* rename.c - renaming a column within a File (cf_file_rename).
 *
 * The column directory moves in one rename(2), with the writer locks of
 * both names held: no writer can be at work on the old name, nor create a
 * column at the new one, meanwhile (docs/format.md 8.3, "Renaming a
 * column").  A crash leaves the column under exactly one of the two names,
 * whole.  The catalog (8.5) needs no step of its own: the rename changes
 * the stamps of both parent directories, so an entry recorded before it is
 * not used again. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "catalog.h"
#include "column_dir.h"
#include "error.h"
#include "file.h"
#include "fsutil.h"
#include "names.h"
#include "writer_lock.h"

static int is_attr_name(const char *name)
{
    size_t n = strlen(name);
    return strcmp(name, ".") == 0 || (n >= 2 && strcmp(name + n - 2, "/.") == 0);
}

static int check_names(cf_file *f, const char *src, const char *dst, cf_error *err)
{
    int rc;
    if (!f || !src || !dst) return CF_FAIL(err, CF_EARG, "cf_file_rename: NULL argument");
    if ((rc = cf__name_check_in(f->path, src, err)) || (rc = cf__name_check_in(f->path, dst, err))) return rc;
    if (!f->writable)
        return CF_FAIL(err, CF_EREADONLY, "%s: File is open read-only; cannot rename '%s'", f->path, src);
    if (is_attr_name(src) || is_attr_name(dst))
        return CF_FAIL(err, CF_EKIND, "%s: '%s' names attributes, not a column",
                       f->path, is_attr_name(src) ? src : dst);
    if (strcmp(src, dst) == 0) return CF_FAIL(err, CF_EARG, "%s: '%s' renamed to itself", f->path, src);
    size_t sl = strlen(src);
    if (strncmp(dst, src, sl) == 0 && dst[sl] == '/')
        return CF_FAIL(err, CF_EARG, "%s: cannot rename '%s' into itself ('%s')", f->path, src, dst);
    if ((rc = cf__name_confine(f->path, src, err)) || (rc = cf__name_confine(f->path, dst, err))) return rc;
    /* a column made inside another column's directory would be invisible */
    return cf__name_outside_columns(f->path, dst, err);
}

int cf_file_rename(cf_file *f, const char *src, const char *dst, cf_error *err)
{
    int rc = check_names(f, src, dst, err);
    if (rc) return rc;
    char *from = cf__path_join(f->path, src), *to = cf__path_join(f->path, dst);
    char *to_parent = NULL, *from_parent = NULL, *first_new = NULL;
    cf__lock lk_from = CF__LOCK_NONE, lk_to = CF__LOCK_NONE;
    int made_parent = 0, renamed = 0;
    if (!from || !to) {
        rc = CF_FAIL(err, CF_ENOMEM, "%s: out of memory", f->path);
        goto done;
    }
    from_parent = strndup(from, (size_t)(strrchr(from, '/') - from));
    to_parent = strndup(to, (size_t)(strrchr(to, '/') - to));
    if (!from_parent || !to_parent) {
        rc = CF_FAIL(err, CF_ENOMEM, "%s: out of memory", f->path);
        goto done;
    }
    if (!cf__is_dir(from) || !cf__column_dir_has_header(from)) {
        rc = cf__is_dir(from) ? CF_FAIL(err, CF_EKIND, "%s: '%s' is a group, not a column (only columns are "
                                        "renamed)", f->path, src)
                              : CF_FAIL(err, CF_ENOENT, "%s: no column '%s'", f->path, src);
        goto done;
    }
    if (!cf__column_dir_only_own(from)) {
        rc = CF_FAIL(err, CF_EKIND, "%s: column '%s' has columns or other files below it; it is not renamed",
                     f->path, src);
        goto done;
    }
    struct stat st;
    if (lstat(to, &st) == 0) {
        rc = CF_FAIL(err, CF_EEXIST, "%s: '%s' already exists; nothing renamed", f->path, dst);
        goto done;
    }
    if (!cf__is_dir(to_parent)) {
        /* the highest directory made here, taken away again on failure */
        size_t root_len = strlen(f->path);
        first_new = strdup(to_parent);
        if (!first_new) {
            rc = CF_FAIL(err, CF_ENOMEM, "%s: out of memory", f->path);
            goto done;
        }
        for (;;) {
            char *slash = strrchr(first_new, '/');
            if (!slash || (size_t)(slash - first_new) <= root_len) break;
            *slash = '\0';
            if (cf__is_dir(first_new)) {
                *slash = '/';
                break;
            }
        }
        made_parent = 1;
        if ((rc = cf__mkdirs_durable(to_parent, CF__DURABLE(f), err))) goto done;
    }
    if ((rc = cf__column_dir_lock(f, from, &lk_from, err)) || (rc = cf__column_dir_lock(f, to, &lk_to, err))) goto done;
    /* under both locks: what the checks saw still holds */
    if (!cf__column_dir_has_header(from)) {
        rc = CF_FAIL(err, CF_ENOENT, "%s: no column '%s'", f->path, src);
    } else if (lstat(to, &st) == 0) {
        rc = CF_FAIL(err, CF_EEXIST, "%s: '%s' already exists; nothing renamed", f->path, dst);
    } else {
        /* the listing changes: the File's generation marks it (format.md 8.5) */
        int gen_fd = cf__catalog_begin(f->path, CF__DURABLE(f));
        renamed = rename(from, to) == 0;
        int e = errno;
        cf__catalog_done(f->path, gen_fd);
        if (!renamed)
            rc = CF_FAIL(err, cf__errno_code(e), "%s: cannot rename '%s' to '%s': %s", f->path, src, dst, strerror(e));
    }
    if (renamed) {
        if (CF__DURABLE(f)) {
            /* a rename between two directories is durable once both are */
            rc = cf__fsync_path(to_parent, err);
            if (rc == 0 && strcmp(to_parent, from_parent) != 0) rc = cf__fsync_path(from_parent, err);
        }
    }
done:
    cf__lock_release(&lk_to);
    cf__lock_release(&lk_from);
    if (rc && made_parent && first_new) {
        /* the groups made for dst, innermost first, as long as they are
         * empty (the lock file the take made in the last one goes first) */
        (void)cf__lock_tidy(to_parent);
        size_t stop = strlen(first_new);
        for (;;) {
            if (rmdir(to_parent) != 0 || strlen(to_parent) <= stop) break;
            *strrchr(to_parent, '/') = '\0';
        }
    }
    free(first_new);
    free(from);
    free(to);
    free(from_parent);
    free(to_parent);
    return rc;
}
