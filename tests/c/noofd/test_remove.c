/* test_remove.c - removals and truncation where the kernel has no
 * open file description locks (a core built with CF_NO_OFD_LOCKS): each
 * column has a lock file of its own, and a removal of a column, of a group
 * or of the whole File is refused while another handle holds one, with
 * nothing removed; afterwards no lock file is left behind. */
#include <sys/wait.h>

#include "lock_test.h"

static void test_removals_respect_lock_files_of_their_own(void)
{
    cf_error err;
    cf_file *f = file_with("F", "a", "g/h/b", NULL);
    if (!f) return;
    cf_file_close(f);
    /* another handle writes g/h/b in place: it holds g/h/.colfile-lock.b */
    cf_file *w = open_file(0), *r = open_file(0);
    if (!w || !r) return;
    cf_column *b = written_in_place(w, "g/h/b", 5);
    CHECK(exists("g/h/.colfile-lock.b"));
    CHECK_FAILS(cf_file_remove(r, "g/h/b", &err), CF_EBUSY, &err, ".colfile-lock.b");
    CHECK_FAILS(cf_file_remove_group(r, "g", &err), CF_EBUSY, &err, ".colfile-lock.b");
    cf_file *t = NULL;
    CHECK_FAILS(cf_file_open(&t, g_root, CF_OPEN_WRITE | CF_OPEN_TRUNCATE, &err), CF_EBUSY, &err,
                ".colfile-lock.b");
    CHECK(exists("a/header") && exists("g/h/b/header"));
    CHECK_OK(cf_column_close(b, &err), &err);
    cf_file_close(w);
    CHECK_OK(cf_file_remove_group(r, "g", &err), &err);
    CHECK(!exists("g"));
    cf_file_close(r);
    CHECK_OK(cf_file_open(&t, g_root, CF_OPEN_WRITE | CF_OPEN_TRUNCATE, &err), &err);
    CHECK(!exists("a"));
    CHECK_EQ_INT(hidden_locks(""), 0);
    cf_file_close(t);
}

CF_TESTS(CF_TEST(test_removals_respect_lock_files_of_their_own))
