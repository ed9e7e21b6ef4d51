/* Unit tests for translation keys and language markers of paths (transl). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "text/transl.h"

static void expect_key(const char *path, const char *permalink, const char *want)
{
    char *k = transl_key(path, permalink);
    assert_non_null(k);
    assert_string_equal(k, want);
    free(k);
}

static void test_keys(void **state)
{
    (void)state;
    /* sibling language folders, at the top or deeper */
    expect_key("en/Bases/Views.md", NULL, "f:Bases/Views.md");
    expect_key("de/Bases/Views.md", NULL, "f:Bases/Views.md");
    expect_key("docs/pt-BR/guide.md", NULL, "f:docs/guide.md");
    expect_key("docs/zh_TW/guide.md", "", "f:docs/guide.md");
    /* tldr: pages/ and pages.de/ */
    expect_key("pages/common/tar.md", NULL, "f:pages/common/tar.md");
    expect_key("pages.de/common/tar.md", NULL, "f:pages/common/tar.md");
    expect_key("pages.pt_BR/common/tar.md", NULL, "f:pages/common/tar.md");
    /* README.ja.md beside README.md */
    expect_key("README.ja.md", NULL, "f:README.md");
    expect_key("README.md", NULL, "f:README.md");
    /* no marker: the path itself; upper case, non-codes and files named
     * like a code are no markers */
    expect_key("IT/budget.md", NULL, "f:IT/budget.md");
    expect_key("js/index.md", NULL, "f:js/index.md");
    expect_key("notes/de.md", NULL, "f:notes/de.md");
    expect_key("v1.2/notes.md", NULL, "f:v1.2/notes.md");
    expect_key(".de/x.md", NULL, "f:.de/x.md");
    /* a permalink wins, slashes trimmed */
    expect_key("zh/Bases/公式.md", "formulas", "p:formulas");
    expect_key("x.md", "/bases/views/", "p:bases/views");
    expect_key("x.md", "//", "f:x.md");
    assert_null(transl_key("", NULL));
}

static void test_path_lang(void **state)
{
    (void)state;
    char out[16];
    assert_int_equal(transl_path_lang("de/Bases/x.md", out, sizeof out), 2);
    assert_string_equal(out, "de");
    assert_true(transl_path_lang("pages.pt_BR/common/x.md", out, sizeof out) > 0);
    assert_string_equal(out, "pt-BR");
    assert_true(transl_path_lang("docs/zh-hant/x.md", out, sizeof out) > 0);
    assert_string_equal(out, "zh-Hant");
    assert_int_equal(transl_path_lang("pages/common/x.md", out, sizeof out), 0);
    assert_string_equal(out, "");
    assert_int_equal(transl_path_lang("a/b.md", out, 8), 0);   /* too small a buffer */
}

/* The codes' bit table is the list, every byte pair asked. */
static void test_code_table(void **state)
{
    (void)state;
    assert_true(transl_iso639_1_check());
}

static void test_codes(void **state)
{
    (void)state;
    char out[16];
    assert_true(transl_code_normalise("DE", out, sizeof out));
    assert_string_equal(out, "de");
    assert_true(transl_code_normalise("pt_br", out, sizeof out));
    assert_string_equal(out, "pt-BR");
    assert_false(transl_code_normalise("xx", out, sizeof out));
    assert_false(transl_code_normalise("english", out, sizeof out));
    assert_false(transl_code_normalise("de-", out, sizeof out));
    assert_false(transl_code_normalise("", out, sizeof out));
    assert_false(transl_code_normalise(NULL, out, sizeof out));
    /* the folder's code, else the detected one; "pt" takes its regions */
    assert_true(transl_lang_matches("", "pages.ta/common/x.md", "ta"));
    assert_true(transl_lang_matches("pt", "pages.pt_BR/common/x.md", "pt"));
    assert_true(transl_lang_matches("pt", "pages.pt_BR/common/x.md", "pt-BR"));
    assert_false(transl_lang_matches("pt", "pages.pt_PT/common/x.md", "pt-BR"));
    assert_true(transl_lang_matches("de", "notes/x.md", "de"));
    assert_false(transl_lang_matches("de", "notes/x.md", "en"));
    assert_false(transl_lang_matches("", "notes/x.md", "en"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_keys),
        cmocka_unit_test(test_path_lang),
        cmocka_unit_test(test_codes),
        cmocka_unit_test(test_code_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
