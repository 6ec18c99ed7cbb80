/* owner.c - the owner record of a staging directory (see owner.h). */
#include "owner.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "error.h"
#include "fsutil.h"

#ifndef HOST_NAME_MAX
#define HOST_NAME_MAX 255
#endif

/* The first line of a file, newline stripped; "" if unreadable. */
static void first_line(const char *path, char *out, size_t n)
{
    out[0] = '\0';
    FILE *fp = fopen(path, "re");
    if (!fp) return;
    if (!fgets(out, (int)n, fp)) out[0] = '\0';
    fclose(fp);
    out[strcspn(out, "\n")] = '\0';
}

/* This boot's id (Linux), "-" where unknown. */
static void boot_id(char *out, size_t n)
{
    first_line("/proc/sys/kernel/random/boot_id", out, n);
    if (!out[0] || strchr(out, ' ')) snprintf(out, n, "-");
}

/* The start time of process pid in clock ticks since boot (field 22 of
 * /proc/<pid>/stat), 0 where unknown; *state gets its state letter (field
 * 3; '?' where unknown) when state is not NULL. */
static uint64_t proc_stat(long pid, char *state)
{
    if (state) *state = '?';
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    ssize_t got = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (got <= 0) return 0;
    buf[got] = '\0';
    /* the command name (field 2) may hold spaces and ')': count from the last ')' */
    char *p = strrchr(buf, ')');
    if (!p) return 0;
    p++;
    if (state && p[0] == ' ' && p[1]) *state = p[1];
    for (int field = 2; field < 21 && p; field++) p = strchr(p + 1, ' ');
    return p ? strtoull(p + 1, NULL, 10) : 0;
}

static void host_name(char *out, size_t n)
{
    if (gethostname(out, n) != 0) out[0] = '\0';
    out[n - 1] = '\0';
    for (char *c = out; *c; c++)
        if (*c == ' ' || *c == '\n') *c = '_';
    if (!out[0]) snprintf(out, n, "-");
}

int cf__owner_write(const char *dir, cf_error *err)
{
    char host[HOST_NAME_MAX + 1], boot[64], text[HOST_NAME_MAX + 256];
    host_name(host, sizeof host);
    boot_id(boot, sizeof boot);
    long pid = (long)getpid();
    int len = snprintf(text, sizeof text, "colfile-owner 1\nhost %s\nboot %s\npid %ld\nstart %" PRIu64 "\n", host,
                       boot, pid, proc_stat(pid, NULL));
    char *path = cf__path_join(dir, CF__OWNER_NAME);
    if (!path) return CF_FAIL(err, CF_ENOMEM, "%s: out of memory", dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    int rc = 0;
    if (fd < 0 || write(fd, text, (size_t)len) != len) {
        int e = errno;
        rc = CF_FAIL(err, cf__errno_code(e), "%s: cannot write the staging directory's owner record: %s", path,
                     strerror(e));
    }
    if (fd >= 0) close(fd);
    free(path);
    return rc;
}

void cf__owner_remove(const char *dir)
{
    char *path = cf__path_join(dir, CF__OWNER_NAME);
    if (path) (void)unlink(path);
    free(path);
}

int cf__owner_check(const char *dir, char *who, size_t n)
{
    if (n) who[0] = '\0';
    char *path = cf__path_join(dir, CF__OWNER_NAME);
    FILE *fp = path ? fopen(path, "re") : NULL;
    free(path);
    if (!fp) return -1;
    char line[HOST_NAME_MAX + 64], host[sizeof line] = "", boot[sizeof line] = "";
    long pid = 0;
    uint64_t start = 0;
    int version = 0;
    while (fgets(line, sizeof line, fp)) {
        line[strcspn(line, "\n")] = '\0';
        if (strncmp(line, "colfile-owner ", 14) == 0) version = atoi(line + 14);
        else if (strncmp(line, "host ", 5) == 0) snprintf(host, sizeof host, "%s", line + 5);
        else if (strncmp(line, "boot ", 5) == 0) snprintf(boot, sizeof boot, "%s", line + 5);
        else if (strncmp(line, "pid ", 4) == 0) pid = strtol(line + 4, NULL, 10);
        else if (strncmp(line, "start ", 6) == 0) start = strtoull(line + 6, NULL, 10);
    }
    fclose(fp);
    if (version != 1 || !host[0] || pid <= 0) return -1;
    if (n) snprintf(who, n, "host %s, process %ld", host, pid);
    char my_host[HOST_NAME_MAX + 1], my_boot[sizeof line];
    host_name(my_host, sizeof my_host);
    if (strcmp(host, my_host) != 0 || strcmp(host, "-") == 0) return 2;
    boot_id(my_boot, sizeof my_boot);
    if (strcmp(boot, "-") != 0 && strcmp(my_boot, "-") != 0 && strcmp(boot, my_boot) != 0)
        return 0; /* this host has rebooted since */
    if (kill((pid_t)pid, 0) != 0 && errno == ESRCH) return 0;
    char state;
    uint64_t now = proc_stat(pid, &state);
    if (state == 'Z' || state == 'X') return 0; /* died, not yet reaped by its parent */
    if (start != 0 && now != 0 && now != start) return 0; /* the pid was reused */
    return 1;
}
