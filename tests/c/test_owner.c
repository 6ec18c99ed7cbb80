/* test_owner.c - the owner record of a staging directory
 * (src/common/owner.c): what it holds, and how it tells a live writer
 * from a dead one, another host's, and a record it cannot use. */
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "fsutil.h"
#include "harness.h"
#include "owner.h"

static char *record_path(const char *dir)
{
    return cf__path_join(dir, CF__OWNER_NAME);
}

static void write_record(const char *dir, const char *text)
{
    char *p = record_path(dir);
    FILE *fp = fopen(p, "w");
    CHECK(fp != NULL);
    if (fp) {
        fputs(text, fp);
        fclose(fp);
    }
    free(p);
}

static void test_this_process_is_alive(void)
{
    cf_error err;
    const char *dir = cf_test_dir();
    CHECK_OK(cf__owner_write(dir, &err), &err);
    char who[256];
    CHECK_EQ_INT(cf__owner_check(dir, who, sizeof who), 1);
    char want[64];
    snprintf(want, sizeof want, ", process %ld", (long)getpid());
    CHECK(strncmp(who, "host ", 5) == 0 && strstr(who, want) != NULL);
    /* the record names this process */
    char *p = record_path(dir);
    FILE *fp = fopen(p, "r");
    char text[512] = "";
    CHECK(fp != NULL);
    if (fp) {
        size_t got = fread(text, 1, sizeof text - 1, fp);
        text[got] = '\0';
        fclose(fp);
    }
    CHECK(strncmp(text, "colfile-owner 1\nhost ", 21) == 0);
    snprintf(want, sizeof want, "\npid %ld\n", (long)getpid());
    CHECK(strstr(text, want) != NULL);
    /* a second record is not written over the first */
    CHECK_FAILS(cf__owner_write(dir, &err), CF_EEXIST, &err, CF__OWNER_NAME);
    cf__owner_remove(dir);
    struct stat st;
    CHECK(lstat(p, &st) != 0);
    CHECK_EQ_INT(cf__owner_check(dir, who, sizeof who), -1);
    free(p);
}

static void test_dead_writer(void)
{
    const char *dir = cf_test_dir();
    pid_t pid = fork();
    if (pid == 0) {
        cf_error e;
        _exit(cf__owner_write(dir, &e) == 0 ? 0 : 1);
    }
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    char who[256];
    CHECK_EQ_INT(cf__owner_check(dir, who, sizeof who), 0);
    char want[64];
    snprintf(want, sizeof want, ", process %ld", (long)pid);
    CHECK(strstr(who, want) != NULL);
}

static void test_pid_reused(void)
{
    /* this process's pid with another start time: a dead writer whose pid
     * now belongs to someone else */
    cf_error err;
    const char *dir = cf_test_dir();
    CHECK_OK(cf__owner_write(dir, &err), &err);
    char *p = record_path(dir);
    FILE *fp = fopen(p, "r");
    char text[512] = "";
    if (fp) {
        size_t got = fread(text, 1, sizeof text - 1, fp);
        text[got] = '\0';
        fclose(fp);
    }
    char *start = strstr(text, "\nstart ");
    CHECK(start != NULL);
    if (start && strtoull(start + 7, NULL, 10) != 0) {
        snprintf(start, sizeof text - (size_t)(start - text), "\nstart 1\n");
        unlink(p);
        write_record(dir, text);
        CHECK_EQ_INT(cf__owner_check(dir, NULL, 0), 0);
    }
    free(p);
}

static void test_other_host_and_bad_records(void)
{
    const char *dir = cf_test_dir();
    char who[256];
    write_record(dir, "colfile-owner 1\nhost no-such-host.invalid\nboot -\npid 1\nstart 5\n");
    CHECK_EQ_INT(cf__owner_check(dir, who, sizeof who), 2);
    CHECK_EQ_STR(who, "host no-such-host.invalid, process 1");
    char *p = record_path(dir);
    static const char *const bad[] = {
        "colfile-owner 2\nhost h\nboot -\npid 1\nstart 5\n", /* a later version */
        "colfile-owner 1\nboot -\npid 1\nstart 5\n",         /* no host */
        "colfile-owner 1\nhost h\nboot -\npid 0\nstart 5\n", /* no process */
        "",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        unlink(p);
        write_record(dir, bad[i]);
        CHECK_EQ_INT(cf__owner_check(dir, who, sizeof who), -1);
        CHECK_EQ_STR(who, "");
    }
    free(p);
}

CF_TESTS(CF_TEST(test_this_process_is_alive), CF_TEST(test_dead_writer), CF_TEST(test_pid_reused),
         CF_TEST(test_other_host_and_bad_records))
