/* column_dir.c - a column's directory taken as a whole (column_dir.h). */
#include "column_dir.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "file.h"
#include "fsutil.h"
#include "names.h"

int cf__column_dir_has_header(const char *dir)
{
    char *p = cf__path_join(dir, "header");
    int r = p && cf__exists(p);
    free(p);
    return r;
}

int cf__column_dir_only_own(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return 0;
    int only = 1;
    struct dirent *ent;
    while (only && (ent = readdir(d)) != NULL) {
        const char *nm = ent->d_name;
        if (strcmp(nm, ".") == 0 || strcmp(nm, "..") == 0) continue;
        struct stat st;
        only = strncmp(nm, ".colfile", 8) != 0 && cf__is_format_file_name(nm) &&
               fstatat(dirfd(d), nm, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode);
    }
    closedir(d);
    return only;
}

int cf__column_dir_lock(cf_file *f, const char *dir, cf__lock *lk, cf_error *err)
{
    const char *slash = strrchr(dir, '/');
    lk->off = (f->flags & CF_OPEN_NOLOCKING) != 0;
    if (slash && !lk->off) lk->via = cf__file_lock_dir(f, dir, (size_t)(slash - dir));
    return cf__lock_take(lk, dir, 0, err);
}
