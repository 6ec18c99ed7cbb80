/* mpi_harness.h - tests/c/harness.h for programs run under mpiexec.
 *
 * The CHECK macros are the same (each rank checks what it sees); a test
 * fails if a check failed on any rank.  Every rank runs every test, in the
 * same order, in the same fresh directory (made by rank 0, removed after).
 * Only rank 0 prints the PASS/FAIL lines and the final count; a rank whose
 * checks failed says so on stderr.
 *
 *     static void test_something(void) { ... cf_test_comm() ... }
 *     CF_MPI_TESTS(CF_TEST(test_something))
 */
#ifndef CF_MPI_TEST_HARNESS_H
#define CF_MPI_TEST_HARNESS_H

#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#endif
#include "harness.h"
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

#include <mpi.h>

#include "colfile_mpi.h"

static int cf_test_rank_, cf_test_size_;

#if defined(__GNUC__)
__attribute__((unused))
#endif
static MPI_Comm cf_test_comm(void) { return MPI_COMM_WORLD; }
#if defined(__GNUC__)
__attribute__((unused))
#endif
static int cf_test_rank(void) { return cf_test_rank_; }
#if defined(__GNUC__)
__attribute__((unused))
#endif
static int cf_test_size(void) { return cf_test_size_; }

/* File "f" in the test's directory, opened for writing (made if absent) by
 * every rank of MPI_COMM_WORLD; NULL (a failed check) if it cannot be. */
#if defined(__GNUC__)
__attribute__((unused))
#endif
static cf_file *cf_test_mpi_file(void)
{
    cf_error err;
    char path[4200];
    snprintf(path, sizeof path, "%s/f", cf_test_dir());
    cf_file *f = NULL;
    CHECK_OK(cf_mpi_file_open(&f, MPI_COMM_WORLD, path, CF_OPEN_WRITE | CF_OPEN_CREATE, &err), &err);
    return f;
}

static int cf_mpi_test_run(const cf_test_case *cases, size_t n)
{
    MPI_Comm comm = MPI_COMM_WORLD;
    MPI_Comm_rank(comm, &cf_test_rank_);
    MPI_Comm_size(comm, &cf_test_size_);
    int failed_tests = 0;
    for (size_t i = 0; i < n; i++) {
        int before = cf_test_failures;
        if (cf_test_rank_ == 0) {
            const char *base = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
            snprintf(cf_test_tmpdir, sizeof cf_test_tmpdir, "%s/cfmpitest-XXXXXX", base);
            if (!mkdtemp(cf_test_tmpdir)) {
                perror("mkdtemp");
                MPI_Abort(comm, 2);
            }
        }
        MPI_Bcast(cf_test_tmpdir, (int)sizeof cf_test_tmpdir, MPI_CHAR, 0, comm);
        cases[i].fn();
        int mine = cf_test_failures - before, total = 0;
        if (mine) fprintf(stderr, "rank %d: %d check(s) failed in %s\n", cf_test_rank_, mine, cases[i].name);
        MPI_Allreduce(&mine, &total, 1, MPI_INT, MPI_SUM, comm);
        if (cf_test_rank_ == 0) {
            char cmd[4200];
            snprintf(cmd, sizeof cmd, "rm -rf '%s'", cf_test_tmpdir);
            if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", cf_test_tmpdir);
            printf("%s %s (%d ranks)\n", total ? "FAIL" : "PASS", cases[i].name, cf_test_size_);
            fflush(stdout);
        }
        if (total) failed_tests++;
        MPI_Barrier(comm); /* the directory is gone before the next test */
    }
    if (cf_test_rank_ == 0) printf("%zu passed, %d failed\n", n - (size_t)failed_tests, failed_tests);
    return failed_tests ? 1 : 0;
}

#define CF_MPI_TESTS(...) int main(int argc, char **argv) { \
    MPI_Init(&argc, &argv); \
    static const cf_test_case cases[] = { __VA_ARGS__ }; \
    int rc_ = cf_mpi_test_run(cases, sizeof cases / sizeof cases[0]); \
    MPI_Finalize(); \
    return rc_; }

/* ---- helpers shared by the MPI tests ---------------------------------- */

/* The collective returned the same code and message on every rank. */
#define CHECK_AGREED(rc, errp) cf_test_check_agreed((rc), (errp), __FILE__, __LINE__)

#if defined(__GNUC__)
__attribute__((unused))
#endif
static void cf_test_check_agreed(int rc, const cf_error *e, const char *file, int line)
{
    MPI_Comm comm = MPI_COMM_WORLD;
    int lo, hi;
    MPI_Allreduce(&rc, &lo, 1, MPI_INT, MPI_MIN, comm);
    MPI_Allreduce(&rc, &hi, 1, MPI_INT, MPI_MAX, comm);
    if (lo != hi) {
        fprintf(stderr, "%s:%d: rank %d: codes differ between ranks (%d..%d)\n", file, line, cf_test_rank_, lo, hi);
        cf_test_failures++;
    }
    if (lo == 0 && hi == 0) return;
    char root[CF_ERROR_MESSAGE_MAX];
    memcpy(root, e->message, sizeof root);
    MPI_Bcast(root, (int)sizeof root, MPI_CHAR, 0, comm);
    if (strcmp(root, e->message) != 0) {
        fprintf(stderr, "%s:%d: rank %d: message \"%s\" differs from rank 0's \"%s\"\n", file, line, cf_test_rank_,
                e->message, root);
        cf_test_failures++;
    }
    if (strncmp(e->message, "rank ", 5) != 0) {
        fprintf(stderr, "%s:%d: rank %d: message \"%s\" does not name a rank\n", file, line, cf_test_rank_, e->message);
        cf_test_failures++;
    }
}

/* 1 if the trees under a and b hold the same names, and files with the
 * same bytes (rank 0 runs diff -r, which prints the differences; every rank
 * gets the answer). */
#if defined(__GNUC__)
__attribute__((unused))
#endif
static int cf_test_same_tree(const char *a, const char *b)
{
    int same = 0;
    if (cf_test_rank_ == 0) {
        char cmd[9000];
        snprintf(cmd, sizeof cmd, "diff -r '%s' '%s' >&2", a, b);
        same = system(cmd) == 0;
    }
    MPI_Bcast(&same, 1, MPI_INT, 0, MPI_COMM_WORLD);
    return same;
}

#endif
