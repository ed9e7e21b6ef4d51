/* Unit tests for util/fmap: a file mapped whole, read-only; what each kind
 * of path that cannot be mapped says (the caller's label and the path). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/fmap.h"

static char dir[] = "/tmp/trove-fmap-XXXXXX";

static char *path_of(const char *name)
{
    char *p = malloc(strlen(dir) + strlen(name) + 2);
    sprintf(p, "%s/%s", dir, name);
    return p;
}

static void test_maps_a_file(void **state)
{
    (void)state;
    char *p = path_of("a.bin");
    FILE *f = fopen(p, "wb");
    fputs("hello\0world", f);
    fclose(f);
    fmap m;
    assert_int_equal(fmap_open(p, "test file", &m), TROVE_OK);
    assert_int_equal(m.len, 5);
    assert_memory_equal(m.data, "hello", 5);
    fmap_close(&m);
    assert_null(m.data);
    assert_int_equal(m.len, 0);
    fmap_close(&m);   /* twice: a no-op */
    free(p);
}

static void test_empty_file(void **state)
{
    (void)state;
    char *p = path_of("empty");
    fclose(fopen(p, "wb"));
    fmap m = {(const unsigned char *)"x", 1};
    assert_int_equal(fmap_open(p, NULL, &m), TROVE_OK);
    assert_null(m.data);
    assert_int_equal(m.len, 0);
    fmap_close(&m);
    free(p);
}

static void test_errors_name_the_file(void **state)
{
    (void)state;
    fmap m;
    char *missing = path_of("missing");
    assert_int_equal(fmap_open(missing, "Chinese dictionary", &m), TROVE_ENOENT);
    assert_non_null(strstr(trove_errmsg(), "Chinese dictionary"));
    assert_non_null(strstr(trove_errmsg(), missing));
    assert_null(m.data);
    assert_int_equal(fmap_open(dir, NULL, &m), TROVE_EIO);
    assert_non_null(strstr(trove_errmsg(), "not a regular file"));
    assert_true(strncmp(trove_errmsg(), dir, strlen(dir)) == 0);   /* no label: the path */
    free(missing);
}

int main(void)
{
    if (!mkdtemp(dir))
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_maps_a_file),
        cmocka_unit_test(test_empty_file),
        cmocka_unit_test(test_errors_name_the_file),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    char *a = path_of("a.bin"), *e = path_of("empty");
    unlink(a);
    unlink(e);
    rmdir(dir);
    free(a);
    free(e);
    return rc;
}
