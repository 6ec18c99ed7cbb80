/* harness.h - a small test harness: a table of tests, checks that print both
 * operands, a temporary directory per test.  Each test file is one program:
 *
 *     static void test_something(void) { CHECK_EQ_INT(1 + 1, 2); }
 *     CF_TESTS(CF_TEST(test_something))
 */
#ifndef CF_TEST_HARNESS_H
#define CF_TEST_HARNESS_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "colfile_binding.h"

static int cf_test_failures;
static char cf_test_tmpdir[4096];

#define CHECK(cond) do { if (!(cond)) { \
    fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond); \
    cf_test_failures++; } } while (0)

#define CHECK_EQ_INT(a, b) do { long long cf_a_ = (long long)(a), cf_b_ = (long long)(b); \
    if (cf_a_ != cf_b_) { fprintf(stderr, "%s:%d: %s == %s failed: %lld != %lld\n", \
        __FILE__, __LINE__, #a, #b, cf_a_, cf_b_); cf_test_failures++; } } while (0)

#define CHECK_EQ_STR(a, b) do { const char *cf_a_ = (a), *cf_b_ = (b); \
    if (!cf_a_ || !cf_b_ || strcmp(cf_a_, cf_b_) != 0) { \
        fprintf(stderr, "%s:%d: %s == %s failed: \"%s\" != \"%s\"\n", __FILE__, __LINE__, \
            #a, #b, cf_a_ ? cf_a_ : "(null)", cf_b_ ? cf_b_ : "(null)"); cf_test_failures++; } } while (0)

#define CHECK_EQ_MEM(a, b, n) do { if (memcmp((a), (b), (n)) != 0) { \
    fprintf(stderr, "%s:%d: memcmp(%s, %s, %s) != 0\n", __FILE__, __LINE__, #a, #b, #n); \
    cf_test_failures++; } } while (0)

/* A call returning a cf error code must succeed; prints the error record. */
#define CHECK_OK(call, errp) do { int cf_rc_ = (call); const cf_error *cf_e_ = (errp); \
    if (cf_rc_ != 0) { fprintf(stderr, "%s:%d: %s failed: %d %s\n", __FILE__, __LINE__, #call, cf_rc_, \
        cf_e_ ? cf_e_->message : ""); cf_test_failures++; } } while (0)

/* A call must fail with the given code, and the message must contain `needle`. */
#define CHECK_FAILS(call, code, errp, needle) do { int cf_rc_ = (call); \
    const cf_error *cf_e_ = (errp); const char *cf_n_ = (needle); \
    if (cf_rc_ != (code)) { fprintf(stderr, "%s:%d: %s returned %d, expected %s (%d)\n", \
        __FILE__, __LINE__, #call, cf_rc_, #code, (int)(code)); cf_test_failures++; } \
    else if (cf_n_ && !strstr(cf_e_->message, cf_n_)) { \
        fprintf(stderr, "%s:%d: %s: message \"%s\" lacks \"%s\"\n", __FILE__, __LINE__, \
            #call, cf_e_->message, cf_n_); cf_test_failures++; } } while (0)

typedef struct { const char *name; void (*fn)(void); } cf_test_case;
#define CF_TEST(fn) { #fn, fn }

/* A fresh empty directory for the running test (removed afterwards). */
#if defined(__GNUC__)
__attribute__((unused))
#endif
static const char *cf_test_dir(void) { return cf_test_tmpdir; }

static int cf_test_run(const cf_test_case *cases, size_t n)
{
    int failed_tests = 0;
    for (size_t i = 0; i < n; i++) {
        int before = cf_test_failures;
        const char *base = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
        snprintf(cf_test_tmpdir, sizeof cf_test_tmpdir, "%s/cftest-XXXXXX", base);
        if (!mkdtemp(cf_test_tmpdir)) { perror("mkdtemp"); return 2; }
        cases[i].fn();
        char cmd[4200];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", cf_test_tmpdir);
        if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", cf_test_tmpdir);
        int ok = cf_test_failures == before;
        printf("%s %s\n", ok ? "PASS" : "FAIL", cases[i].name);
        if (!ok) failed_tests++;
    }
    printf("%zu passed, %d failed\n", n - (size_t)failed_tests, failed_tests);
    return failed_tests ? 1 : 0;
}

#define CF_TESTS(...) int main(void) { \
    static const cf_test_case cases[] = { __VA_ARGS__ }; \
    return cf_test_run(cases, sizeof cases / sizeof cases[0]); }

#endif
