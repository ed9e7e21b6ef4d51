/* qexpand: the prompt of qmd's expansion model and the parser of its
 * typed lines — order, case, bullets, think blocks, repeats of the query,
 * garbage, empty output, long and odd lines. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "search/qexpand.h"

static qx_result parse(const char *text, const char *query)
{
    qx_result r;
    qx_parse(text, strlen(text), query, &r);
    return r;
}

static void test_prompt(void **state)
{
    (void)state;
    tbuf b = {0};
    qx_prompt("auth config", &b);
    assert_string_equal(tbuf_cstr(&b), "<|im_start|>user\n/no_think Expand this search query: "
                                       "auth config<|im_end|>\n<|im_start|>assistant\n");
    tbuf_free(&b);
}

static void test_typed_lines_first_of_each(void **state)
{
    (void)state;
    qx_result r = parse("hyde: Authentication is set in config.yaml.\n"
                        "lex: authentication configuration\nlex: auth settings\n"
                        "vec: how to configure authentication\n", "auth config");
    assert_string_equal(r.first[QX_LEX], "authentication configuration");
    assert_string_equal(r.first[QX_VEC], "how to configure authentication");
    assert_string_equal(r.first[QX_HYDE], "Authentication is set in config.yaml.");
    assert_int_equal(r.n[QX_LEX], 2);
    assert_int_equal(r.n_bad, 0);
    assert_true(qx_usable(&r));
    qx_result_free(&r);
}

static void test_tolerates_case_bullets_and_think(void **state)
{
    (void)state;
    qx_result r = parse("<think>\n\n</think>\n\n - LEX:  tar extract \r\n* Vec: unpack a tar file\n"
                        "<|im_end|>", "tar");
    assert_string_equal(r.first[QX_LEX], "tar extract");
    assert_string_equal(r.first[QX_VEC], "unpack a tar file");
    assert_null(r.first[QX_HYDE]);
    assert_int_equal(r.n_bad, 0);
    qx_result_free(&r);
}

static void test_garbage_empty_and_repeats_are_unusable(void **state)
{
    (void)state;
    qx_result r = parse("OfSizeOfSizeOfSize celona稱slow", "q");
    assert_false(qx_usable(&r));
    assert_int_equal(r.n_bad, 1);
    qx_result_free(&r);
    r = parse("", "q");
    assert_false(qx_usable(&r));
    assert_int_equal(r.n_bad, 0);
    qx_result_free(&r);
    /* a line that only repeats the query, an empty one, hyde alone */
    r = parse("lex: Auth Config\nvec:   \nhyde: a passage", "auth config");
    assert_false(qx_usable(&r));
    assert_int_equal(r.n_same, 1);
    assert_int_equal(r.n_bad, 1);
    assert_string_equal(r.first[QX_HYDE], "a passage");
    qx_result_free(&r);
    /* "lexicon:" is not "lex:" */
    r = parse("lexicon: words\nvector: x", "q");
    assert_false(qx_usable(&r));
    assert_int_equal(r.n_bad, 2);
    qx_result_free(&r);
}

static void test_long_lines_cut_at_utf8_boundary(void **state)
{
    (void)state;
    size_t n = 5 + 3 * 600;
    char *t = malloc(n + 1);
    memcpy(t, "hyde:", 5);
    for (size_t i = 0; i < 600; i++)
        memcpy(t + 5 + 3 * i, "\xe4\xb8\xad", 3); /* 中 */
    t[n] = '\0';
    qx_result r;
    qx_parse(t, n, "q", &r);
    size_t len = strlen(r.first[QX_HYDE]);
    assert_true(len <= QX_MAX_LINE);
    assert_int_equal(len % 3, 0);
    qx_result_free(&r);
    free(t);
    /* control characters inside a line, NUL too, become spaces */
    const char odd[] = "lex: a\x01" "b\x00" "c\nvec: d";
    qx_parse(odd, sizeof odd - 1, "q", &r);
    assert_string_equal(r.first[QX_LEX], "a b c");
    assert_string_equal(r.first[QX_VEC], "d");
    qx_result_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_prompt),
        cmocka_unit_test(test_typed_lines_first_of_each),
        cmocka_unit_test(test_tolerates_case_bullets_and_think),
        cmocka_unit_test(test_garbage_empty_and_repeats_are_unusable),
        cmocka_unit_test(test_long_lines_cut_at_utf8_boundary),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
