/* test_error.c - error records (src/common/error.c): what CF_FAIL fills in,
 * a failure given a prefix, errno values mapped to codes, and the names and
 * texts of every code. */
#include <errno.h>

#include "error.h"
#include "harness.h"

static void test_fail_fills_the_record(void)
{
    cf_error err;
    memset(&err, 0, sizeof err);
    int line = __LINE__ + 1;
    int rc = CF_FAIL(&err, CF_ENOENT, "%s: cannot open: %s (%d)", "/x/y", "gone", 7);
    CHECK_EQ_INT(rc, CF_ENOENT);
    CHECK_EQ_INT(err.code, CF_ENOENT);
    CHECK_EQ_STR(err.message, "/x/y: cannot open: gone (7)");
    CHECK_EQ_STR(err.source_file, __FILE__);
    CHECK_EQ_INT(err.source_line, line);
    /* no record: only the code comes back */
    CHECK_EQ_INT(CF_FAIL(NULL, CF_EIO, "%s", "ignored"), CF_EIO);
}

static void test_long_messages_are_cut(void)
{
    cf_error err;
    char path[3 * CF_ERROR_MESSAGE_MAX];
    memset(path, 'p', sizeof path - 1);
    path[sizeof path - 1] = '\0';
    CF_FAIL(&err, CF_EARG, "%s: bad", path);
    CHECK_EQ_INT(strlen(err.message), CF_ERROR_MESSAGE_MAX - 1);
    CHECK(strncmp(err.message, "ppp", 3) == 0);
}

static void test_prefix_keeps_the_failure(void)
{
    cf_error err;
    memset(&err, 0, sizeof err);
    int line = __LINE__ + 1;
    int rc = CF_FAIL(&err, CF_ENAME, "'%s': a name may not be empty", "");
    CHECK_EQ_INT(cf__error_prefix(&err, rc, "/data/run1", ": "), CF_ENAME);
    CHECK_EQ_STR(err.message, "/data/run1: '': a name may not be empty");
    CHECK_EQ_INT(err.code, CF_ENAME);
    /* the location stays the failure's */
    CHECK_EQ_STR(err.source_file, __FILE__);
    CHECK_EQ_INT(err.source_line, line);
    CHECK_EQ_INT(cf__error_prefix(&err, CF_EIO, "/data", "/"), CF_EIO);
    CHECK_EQ_STR(err.message, "/data//data/run1: '': a name may not be empty");
    CHECK_EQ_INT(err.code, CF_EIO);
    /* success and no record: nothing to do, rc comes back */
    CHECK_EQ_INT(cf__error_prefix(&err, 0, "/x", ": "), 0);
    CHECK_EQ_STR(err.message, "/data//data/run1: '': a name may not be empty");
    CHECK_EQ_INT(cf__error_prefix(NULL, CF_EIO, "/x", ": "), CF_EIO);
    /* a long prefix cuts the message, never the buffer */
    char path[2 * CF_ERROR_MESSAGE_MAX];
    memset(path, 'p', sizeof path - 1);
    path[sizeof path - 1] = '\0';
    CHECK_EQ_INT(cf__error_prefix(&err, CF_EIO, path, ": "), CF_EIO);
    CHECK_EQ_INT(strlen(err.message), CF_ERROR_MESSAGE_MAX - 1);
}

static void test_errno_codes(void)
{
    CHECK_EQ_INT(cf__errno_code(ENOENT), CF_ENOENT);
    CHECK_EQ_INT(cf__errno_code(ENOMEM), CF_ENOMEM);
    CHECK_EQ_INT(cf__errno_code(EEXIST), CF_EEXIST);
    CHECK_EQ_INT(cf__errno_code(ENOTDIR), CF_ENOTFILE);
    CHECK_EQ_INT(cf__errno_code(EACCES), CF_EIO);
    CHECK_EQ_INT(cf__errno_code(0), CF_EIO);
}

static void test_names_and_texts(void)
{
    /* every code of the list has its own name and a text; the names are
     * the macros' */
#define CHECK_CODE(name, value, text)                   \
    CHECK_EQ_STR(cf_error_name(value), #name);          \
    CHECK_EQ_STR(cf_error_text(value), text);           \
    CHECK(strcmp(cf_error_text(value), "unknown error") != 0);
    CF_ERROR_LIST(CHECK_CODE)
#undef CHECK_CODE
    CHECK_EQ_STR(cf_error_name(-12345), "CF_UNKNOWN");
    CHECK_EQ_STR(cf_error_text(-12345), "unknown error");
    CHECK_EQ_STR(cf_error_name(CF_ENOENT), "CF_ENOENT");
}

CF_TESTS(CF_TEST(test_fail_fills_the_record), CF_TEST(test_long_messages_are_cut),
         CF_TEST(test_prefix_keeps_the_failure), CF_TEST(test_errno_codes),
         CF_TEST(test_names_and_texts))
