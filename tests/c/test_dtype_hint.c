/* test_dtype_hint.c - a dtype given by its numpy or C type name is
 * rejected with the token it means ("did you mean 'f8'?"), in the
 * public parser and in the errors of a column create and write, which name
 * the column. */
#include "harness.h"

#include "colfile.h"

static void test_names_get_their_token(void)
{
    static const char *cases[][2] = {
        { "float64", "unreasonable dtype 'float64': width 'loat64' is not a decimal number; did you mean 'f8'?" },
        { "double", "unreasonable dtype 'double': unsupported kind 'd' (colfile stores i u f c b S); "
                    "did you mean 'f8'?" },
        { "<int32", "unreasonable dtype '<int32': width 'nt32' is not a decimal number; did you mean '<i4'?" },
        { "np.uint16", "unreasonable dtype 'np.uint16': unsupported kind 'n' (colfile stores i u f c b S); "
                       "did you mean 'u2'?" },
        { "Complex128", "unknown kind 'C'; did you mean 'c16'?" },
        { "int64_t", "did you mean 'i8'?" },
        { "bool", "did you mean 'b1'?" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char out[CF_DTYPE_MAX];
        cf_error err;
        CHECK_FAILS(cf_dtype_normalize(cases[i][0], out, &err), CF_EDTYPE, &err, cases[i][1]);
    }
    /* No guess for names that mean different types in numpy and C, nor for
     * plain mistakes. */
    static const char *none[] = { "float", "int", "long", "f3", "floot", "U4" };
    for (size_t i = 0; i < sizeof none / sizeof none[0]; i++) {
        char out[CF_DTYPE_MAX];
        cf_error err;
        CHECK_EQ_INT(cf_dtype_normalize(none[i], out, &err), CF_EDTYPE);
        CHECK(strstr(err.message, "did you mean") == NULL);
    }
}

static void test_create_and_write_name_the_column(void)
{
    char dir[4200], want[4400];
    snprintf(dir, sizeof dir, "%s/f", cf_test_dir());
    cf_file *f = cf_test_open_new("f");
    cf_column *c = NULL;
    cf_error err;
    snprintf(want, sizeof want, "%s/x: unreasonable dtype 'float64': width 'loat64' is not a decimal number; "
             "did you mean 'f8'?", dir);
    CHECK_EQ_INT(cf_column_create(&c, f, "x", "float64", 1, 3, 1, &err), CF_EDTYPE);
    CHECK_EQ_STR(err.message, want);
    CHECK_OK(cf_column_create(&c, f, "x", "f8", 1, 3, 1, &err), &err);
    float v[3] = { 1, 2, 3 };
    snprintf(want, sizeof want, "%s/x: unreasonable dtype 'float32': width 'loat32' is not a decimal number; "
             "did you mean 'f4'?", dir);
    CHECK_EQ_INT(cf_column_write(c, 0, 3, v, "float32", 4, 4, &err), CF_EDTYPE);
    CHECK_EQ_STR(err.message, want);
    CHECK_OK(cf_column_write(c, 0, 3, v, "f4", 4, 4, &err), &err);
    CHECK_OK(cf_column_close(c, &err), &err);
    cf_file_close(f);
}

CF_TESTS(CF_TEST(test_names_get_their_token), CF_TEST(test_create_and_write_name_the_column))
