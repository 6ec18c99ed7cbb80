/* test_rename.c - cf_file_rename where the kernel has no open file
 * description locks (a core built with CF_NO_OFD_LOCKS): each column has a
 * lock file of its own; a rename is refused while another handle holds the
 * lock of either name, and leaves no lock file behind. */
#include "lock_test.h"

static void test_rename_respects_lock_files_of_their_own(void)
{
    cf_error err;
    cf_file *f = file_with("F", "a", NULL);
    if (!f) return;
    cf_file_close(f);
    cf_file *w = open_file(0), *r = open_file(0);
    if (!w || !r) return;
    cf_column *a = written_in_place(w, "a", 5);
    CHECK(exists(".colfile-lock.a"));
    CHECK_FAILS(cf_file_rename(r, "a", "b", &err), CF_EBUSY, &err, ".colfile-lock.a");
    CHECK(exists("a/header") && !exists("b"));
    CHECK_OK(cf_column_close(a, &err), &err);
    /* a writer creating the new name holds its lock file */
    cf_column *c = make(w, "g/b");
    CHECK_FAILS(cf_file_rename(r, "a", "g/b", &err), CF_EBUSY, &err, ".colfile-lock.b");
    CHECK_OK(cf_column_close(c, &err), &err);
    cf_file_close(w);
    CHECK_OK(cf_file_rename(r, "a", "g/c", &err), &err);
    CHECK(exists("g/c/header") && !exists("a"));
    cf_file_close(r);
    CHECK_EQ_INT(hidden_locks(""), 0);
    CHECK_EQ_INT(hidden_locks("g"), 0);
}

CF_TESTS(CF_TEST(test_rename_respects_lock_files_of_their_own))
