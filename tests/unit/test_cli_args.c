/* cli/args: the option syntax every command shares — "--name VALUE",
 * "--name=VALUE", a short option's attached value, a missing value,
 * positional-only commands (unknown options and extra arguments are usage
 * errors, `--` ends the options) and whole numbers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

static void test_opt_value_forms(void **state)
{
    (void)state;
    char *argv[] = {"trove", "--limit", "5", "--limit=7", "-n9", "-n", "3", "--limitless", "-nx",
                    "--collection=", NULL};
    int argc = 10, i;
    const char *v;

    i = 1;
    assert_int_equal(cli_opt_value(argc, argv, &i, "--limit", &v), 1);
    assert_string_equal(v, "5");
    assert_int_equal(i, 2); /* consumed the value */
    i = 3;
    assert_int_equal(cli_opt_value(argc, argv, &i, "--limit", &v), 1);
    assert_string_equal(v, "7");
    assert_int_equal(i, 3);
    i = 4;
    assert_int_equal(cli_opt_value(argc, argv, &i, "-n", &v), 1);
    assert_string_equal(v, "9");
    i = 5;
    assert_int_equal(cli_opt_value(argc, argv, &i, "-n", &v), 1);
    assert_string_equal(v, "3");
    assert_int_equal(i, 6);
    /* a longer option is not this one; a long option takes no attached value */
    i = 7;
    assert_int_equal(cli_opt_value(argc, argv, &i, "--limit", &v), 0);
    i = 8;
    assert_int_equal(cli_opt_value(argc, argv, &i, "-n", &v), 1);
    assert_string_equal(v, "x");
    i = 9; /* an empty value is a value (the caller judges it) */
    assert_int_equal(cli_opt_value(argc, argv, &i, "--collection", &v), 1);
    assert_string_equal(v, "");
    /* missing value at the end: matched, value NULL for the caller to report */
    char *tail[] = {"trove", "--limit", NULL};
    i = 1;
    assert_int_equal(cli_opt_value(2, tail, &i, "--limit", &v), 1);
    assert_null(v);
}

static void test_opt_positive(void **state)
{
    (void)state;
    long n = 0;
    assert_int_equal(cli_opt_positive("12", &n), 1);
    assert_int_equal(n, 12);
    assert_int_equal(cli_opt_positive("0", &n), 0);
    assert_int_equal(cli_opt_positive("-3", &n), 0);
    assert_int_equal(cli_opt_positive("4x", &n), 0);
    assert_int_equal(cli_opt_positive("", &n), 0);
    assert_int_equal(cli_opt_positive("99999999999999999999999", &n), 0);
    assert_int_equal(cli_opt_positive(NULL, &n), 0);
}

static int positionals(int argc, char **argv, int *json, const char **pos, size_t cap, size_t *n)
{
    /* usage errors go to stderr; keep the test output readable */
    FILE *saved = stderr;
    stderr = fopen("/dev/null", "w");
    int rc = cli_positionals("test", "usage: test\n", argc, argv, 1, json, pos, cap, n);
    fclose(stderr);
    stderr = saved;
    return rc;
}

static void test_positionals(void **state)
{
    (void)state;
    const char *pos[2];
    size_t n;
    int json = 0;

    char *ok[] = {"test", "a", "--json", "b", NULL};
    assert_int_equal(positionals(4, ok, &json, pos, 2, &n), -1);
    assert_int_equal(n, 2);
    assert_string_equal(pos[0], "a");
    assert_string_equal(pos[1], "b");
    assert_int_equal(json, 1);

    char *unknown[] = {"test", "--bogus", NULL};
    assert_int_equal(positionals(2, unknown, &json, pos, 2, &n), EXIT_USAGE);
    char *short_unknown[] = {"test", "-q", NULL};
    assert_int_equal(positionals(2, short_unknown, &json, pos, 2, &n), EXIT_USAGE);
    /* --json is an unknown option where the command has no JSON */
    char *nojson[] = {"test", "--json", NULL};
    assert_int_equal(positionals(2, nojson, NULL, pos, 2, &n), EXIT_USAGE);
    char *extra[] = {"test", "a", "b", "c", NULL};
    assert_int_equal(positionals(4, extra, &json, pos, 2, &n), EXIT_USAGE);

    /* after `--` anything is a positional; "-" and "-5" are values */
    char *dashes[] = {"test", "--", "--json", NULL};
    json = 0;
    assert_int_equal(positionals(3, dashes, &json, pos, 2, &n), -1);
    assert_int_equal(n, 1);
    assert_string_equal(pos[0], "--json");
    assert_int_equal(json, 0);
    char *values[] = {"test", "-", "-5", NULL};
    assert_int_equal(positionals(3, values, &json, pos, 2, &n), -1);
    assert_int_equal(n, 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_opt_value_forms),
        cmocka_unit_test(test_opt_positive),
        cmocka_unit_test(test_positionals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
