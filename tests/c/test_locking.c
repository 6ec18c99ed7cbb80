/* test_locking.c - writers on file systems whose locks fail (Lustre
 * noflock) or are node-local (localflock, BeeGFS, NFS nolock), under the
 * LD_PRELOAD lock shim (tests/locking/lockshim.c): the test runs itself
 * once per shim mode. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <dirent.h>
#include <unistd.h>

#include "colfile.h"
#include "lock_test.h"

/* The one staging directory in g_root ("" if none). */
static void find_stage(char *out, size_t n)
{
    out[0] = '\0';
    DIR *d = opendir(g_root);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL)
        if (strncmp(e->d_name, ".colfile-stage.", 15) == 0) snprintf(out, n, "%s", e->d_name);
    if (d) closedir(d);
}

static int cleanup_lines(cf_file *f, int flags, const char *needle)
{
    cf_error err;
    char **lines = NULL;
    int64_t count = 0;
    int found = 0;
    CHECK_OK(cf_file_cleanup(f, flags, &lines, &count, &err), &err);
    for (int64_t i = 0; i < count; i++) {
        if (strstr(lines[i], needle)) found = 1;
    }
    cf_names_free(lines, count);
    return found;
}

/* ---- noflock: every lock call fails with ENOSYS ------------------------- */

static void test_shim_is_active_noflock(void)
{
    /* the shim must really be in place, or the tests below prove nothing */
    errno = 0;
    CHECK_EQ_INT(flock(0, LOCK_EX | LOCK_NB), -1);
    CHECK_EQ_INT(errno, ENOSYS);
}

static void test_noflock_write_names_path_and_remedy(void)
{
    use_root("f");
    cf_error err;
    int64_t rows[3] = { 1, 2, 3 };
    for (int k = 0; k < 2; k++) {
        cf_file *f = open_file(k ? CF_OPEN_NOLOCK : 0);
        cf_column *c = NULL;
        int rc = cf_column_create(&c, f, "x", "<i8", 1, 3, 1, &err);
        CHECK_EQ_INT(rc, CF_EIO);
        if (rc == CF_EIO) {
            CHECK(strstr(err.message, g_root) != NULL);
            CHECK(strstr(err.message, ".colfile-lock") != NULL);
            CHECK(strstr(err.message, "locking=False") != NULL);
            CHECK(strstr(err.message, "CF_OPEN_NOLOCKING") != NULL);
        }
        if (c) cf_column_close(c, &err);
        /* the attributes of the File lock too */
        int64_t one = 1;
        cf_column *root = NULL;
        if (cf_column_open(&root, f, ".", &err) == 0) {
            CHECK_FAILS(cf_column_attr_set(root, "a", "<i8", 1, &one, &err), CF_EIO, &err, "locking=False");
            cf_column_close(root, &err);
        }
        cf_file_close(f);
    }
    (void)rows;
}

static void test_noflock_nolocking_writes_everything(void)
{
    use_root("f");
    cf_error err;
    cf_file *f = open_file(CF_OPEN_NOLOCKING);
    cf_column *c = make(f, "g/x");
    CHECK_OK(cf_column_close(c, &err), &err);
    int64_t one = 7;
    cf_column *root = NULL;
    CHECK_OK(cf_column_open(&root, f, ".", &err), &err);
    if (root) {
        CHECK_OK(cf_column_attr_set(root, "a", "<i8", 1, &one, &err), &err);
        CHECK_OK(cf_column_close(root, &err), &err);
    }
    /* in place: reopen and overwrite a row */
    CHECK_OK(cf_column_open(&c, f, "g/x", &err), &err);
    int64_t nine = 9, back[3] = { 0 };
    if (c) {
        CHECK_OK(cf_column_write(c, 1, 1, &nine, NULL, 8, 8, &err), &err);
        CHECK_OK(cf_column_close(c, &err), &err);
    }
    CHECK_OK(cf_column_close(make(f, "y"), &err), &err);
    cf_file_close(f);
    CHECK(!exists(".colfile-lock") && !exists("g/.colfile-lock"));
    /* read back */
    cf_file *r = NULL;
    CHECK_OK(cf_file_open(&r, g_root, CF_OPEN_READ, &err), &err);
    cf_column *x = NULL;
    CHECK_OK(cf_column_open(&x, r, "g/x", &err), &err);
    if (x) {
        CHECK_OK(cf_column_read(x, 0, 3, back, NULL, 8, 8, &err), &err);
        CHECK_EQ_INT(back[0], 1);
        CHECK_EQ_INT(back[1], 9);
        CHECK_EQ_INT(back[2], 3);
        cf_column_close(x, &err);
    }
    cf_file_close(r);
    /* removal, group removal and truncation */
    f = open_file(CF_OPEN_NOLOCKING);
    CHECK_OK(cf_file_remove(f, "y", &err), &err);
    CHECK(!exists("y"));
    CHECK_OK(cf_file_remove_group(f, "g", &err), &err);
    CHECK(!exists("g"));
    CHECK_OK(cf_column_close(make(f, "z"), &err), &err);
    cf_file_close(f);
    CHECK(exists("z"));
    f = open_file(CF_OPEN_NOLOCKING | CF_OPEN_TRUNCATE);
    CHECK(!exists("z"));
    cf_file_close(f);
}

static void test_noflock_cleanup_without_locks(void)
{
    use_root("f");
    cf_error err;
    /* a staging directory of a writer that died here: its record proves it */
    pid_t child = fork();
    if (child == 0) {
        cf_file *f = open_file(CF_OPEN_NOLOCKING);
        (void)make(f, "dead");
        _exit(0); /* no commit */
    }
    int status = 0;
    waitpid(child, &status, 0);
    char stage[300];
    find_stage(stage, sizeof stage);
    CHECK(stage[0] != '\0');
    /* one without a record (an older writer): cannot be checked */
    char old[4400];
    snprintf(old, sizeof old, "%s/.colfile-stage.old.4242.0badc0de", g_root);
    CHECK_EQ_INT(mkdir(old, 0777), 0);
    cf_file *f = open_file(CF_OPEN_NOLOCKING);
    CHECK(cleanup_lines(f, 0, "never committed: removed"));
    CHECK(stage[0] && !exists(stage));
    CHECK(exists(".colfile-stage.old.4242.0badc0de"));
    CHECK(cleanup_lines(f, CF_CLEANUP_DRY_RUN, "cannot be checked without locks: left"));
    CHECK(cleanup_lines(f, CF_CLEANUP_FORCE, "never committed: removed"));
    CHECK(!exists(".colfile-stage.old.4242.0badc0de"));
    cf_file_close(f);
}

/* ---- node-local locks seen from another node ----------------------------- */

/* A writer in a child process, "on host" host (NULL: this one), with a
 * column created and written but not committed; returns its pid and the
 * pipe end that lets it go (closing it). */
static pid_t live_writer(const char *host, int *release)
{
    int ready[2], go[2];
    if (pipe(ready) != 0 || pipe(go) != 0) return -1;
    pid_t child = fork();
    if (child == 0) {
        if (host) setenv("LOCKSHIM_HOSTNAME", host, 1);
        close(ready[0]);
        close(go[1]);
        cf_file *f = open_file(0);
        (void)make(f, "x");
        char b = 1;
        if (write(ready[1], &b, 1) != 1) _exit(3);
        (void)read(go[0], &b, 1);
        _exit(0);
    }
    close(ready[1]);
    close(go[0]);
    char b;
    if (read(ready[0], &b, 1) != 1) CHECK(!"the writer did not start");
    close(ready[0]);
    *release = go[1];
    return child;
}

static void test_nodelocal_other_host_staging_kept(void)
{
    use_root("f");
    int release = -1;
    pid_t child = live_writer("othernode", &release);
    char stage[300];
    find_stage(stage, sizeof stage);
    CHECK(stage[0] != '\0');
    cf_file *f = open_file(0);
    /* the lock looks free from here; the record says another host */
    CHECK(cleanup_lines(f, 0, "another node (host othernode"));
    CHECK(stage[0] && exists(stage));
    CHECK(cleanup_lines(f, CF_CLEANUP_FORCE, "never committed: removed"));
    CHECK(stage[0] && !exists(stage));
    cf_file_close(f);
    close(release);
    int status;
    waitpid(child, &status, 0);
}

static void test_nodelocal_same_host_live_then_dead(void)
{
    use_root("f");
    int release = -1;
    pid_t child = live_writer(NULL, &release);
    char stage[300], rec[4700];
    find_stage(stage, sizeof stage);
    CHECK(stage[0] != '\0');
    snprintf(rec, sizeof rec, "%s/.colfile-owner", stage);
    CHECK(exists(rec));
    cf_file *f = open_file(0);
    CHECK(!cleanup_lines(f, 0, stage));
    CHECK(exists(stage));
    kill(child, SIGKILL);
    /* dead but not reaped yet (a zombie): gone all the same */
    for (int i = 0; i < 2000; i++) {
        char st[64], buf[512];
        snprintf(st, sizeof st, "/proc/%ld/stat", (long)child);
        FILE *fp = fopen(st, "r");
        size_t got = fp ? fread(buf, 1, sizeof buf - 1, fp) : 0;
        if (fp) fclose(fp);
        buf[got] = '\0';
        char *rp = strrchr(buf, ')');
        if (!rp || rp[2] == 'Z') break;
        usleep(1000);
    }
    CHECK(cleanup_lines(f, 0, "never committed: removed"));
    CHECK(!exists(stage));
    int status;
    waitpid(child, &status, 0);
    close(release);
    cf_file_close(f);
}

static void test_owner_record_left_by_power_loss_is_tidied(void)
{
    use_root("f");
    cf_error err;
    cf_file *f = open_file(0);
    CHECK_OK(cf_column_close(make(f, "x"), &err), &err);
    char rec[4400];
    snprintf(rec, sizeof rec, "%s/x/.colfile-owner", g_root);
    FILE *fp = fopen(rec, "w"); /* as a lost unlink leaves it */
    if (fp) fclose(fp);
    CHECK(!cleanup_lines(f, CF_CLEANUP_DRY_RUN, "colfile-owner"));
    CHECK(exists("x/.colfile-owner"));
    CHECK(!cleanup_lines(f, 0, "colfile-owner"));
    CHECK(!exists("x/.colfile-owner"));
    cf_file_close(f);
}

static void test_owner_record_gone_after_commit(void)
{
    use_root("f");
    cf_error err;
    cf_file *f = open_file(0);
    cf_column *c = make(f, "x");
    CHECK_OK(cf_column_close(c, &err), &err);
    CHECK(!exists("x/.colfile-owner"));
    char stage[300];
    find_stage(stage, sizeof stage);
    CHECK_EQ_INT(stage[0], '\0');
    cf_file_close(f);
}

/* ---- driver --------------------------------------------------------------- */

static const cf_test_case noflock_cases[] = {
    CF_TEST(test_shim_is_active_noflock),
    CF_TEST(test_noflock_write_names_path_and_remedy),
    CF_TEST(test_noflock_nolocking_writes_everything),
    CF_TEST(test_noflock_cleanup_without_locks),
};

static const cf_test_case nodelocal_cases[] = {
    CF_TEST(test_nodelocal_other_host_staging_kept),
    CF_TEST(test_nodelocal_same_host_live_then_dead),
    CF_TEST(test_owner_record_gone_after_commit),
    CF_TEST(test_owner_record_left_by_power_loss_is_tidied),
};

static int run_under(const char *self, const char *mode)
{
    pid_t child = fork();
    if (child == 0) {
        setenv("LD_PRELOAD", LOCKSHIM_PATH, 1);
        setenv("LOCKSHIM_MODE", mode, 1);
        setenv("ASAN_OPTIONS", "verify_asan_link_order=0", 1);
        execl(self, self, mode, (char *)NULL);
        _exit(127);
    }
    int status = 0;
    waitpid(child, &status, 0);
    printf("%s %s (shim mode)\n", WIFEXITED(status) && WEXITSTATUS(status) == 0 ? "PASS" : "FAIL", mode);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc > 1 && strcmp(argv[1], "noflock") == 0)
        return cf_test_run(noflock_cases, sizeof noflock_cases / sizeof *noflock_cases);
    if (argc > 1 && strcmp(argv[1], "nodelocal") == 0)
        return cf_test_run(nodelocal_cases, sizeof nodelocal_cases / sizeof *nodelocal_cases);
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) return 2;
    self[n] = '\0';
    int a = run_under(self, "noflock"), b = run_under(self, "nodelocal");
    return a || b ? 1 : 0;
}
