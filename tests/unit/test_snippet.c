/* snippet: window choice, match marks, CJK overlaps, cuts at UTF-8 bounds. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "search/snippet.h"
#include "util/str.h"

static char *snip(const char *text, const snippet_term *terms, size_t n, size_t max)
{
    char *s = snippet_make(text, strlen(text), terms, n, max);
    assert_non_null(s);
    assert_int_equal(str_utf8_invalid_at(s, strlen(s)), (size_t)-1);
    return s;
}

static void test_marks_and_whitespace(void **state)
{
    (void)state;
    snippet_term t[] = {{"bread", 0}, {"dens", 0}};   /* stemmed, as the tokenizer emits */
    char *s = snip("Why is my  Bread\n\ndense?", t, 2, 200);
    assert_string_equal(s, "Why is my \x02" "Bread\x03 \x02" "dense\x03?");
    free(s);
}

static void test_best_window_wins(void **state)
{
    (void)state;
    char text[2048];
    memset(text, 'x', sizeof text);
    for (size_t i = 80; i < sizeof text; i += 80)
        text[i] = ' ';
    memcpy(text + 100, " alpha ", 7);
    memcpy(text + 1500, " alpha beta ", 12);
    text[sizeof text - 1] = '\0';
    snippet_term t[] = {{"alpha", 0}, {"beta", 0}};
    char *s = snip(text, t, 2, 120);
    /* the window holding both terms, cut with ellipses on both sides */
    assert_non_null(strstr(s, "\x02" "alpha\x03 \x02" "beta\x03"));
    assert_true(strncmp(s, "…", strlen("…")) == 0);
    assert_true(strlen(s) < 160);
    free(s);
}

static void test_prefix_terms(void **state)
{
    (void)state;
    snippet_term t[] = {{"comp", 1}};
    char *s = snip("compress and compile, but not decompress", t, 1, 200);
    assert_string_equal(s, "\x02" "compress\x03 and \x02" "compile\x03, but not decompress");
    free(s);
}

static void test_cjk_bigrams_merge(void **state)
{
    (void)state;
    snippet_term t[] = {{"压缩", 0}, {"缩文", 0}, {"文件", 0}};
    char *s = snip("使用 gzip 压缩文件，保留原始文件。", t, 3, 200);
    assert_string_equal(s, "使用 gzip \x02压缩文件\x03，保留原始\x02文件\x03。");
    free(s);
}

static void test_no_match_is_the_start(void **state)
{
    (void)state;
    char *s = snip("第一行文字，后面还有很多很多很多很多很多内容", NULL, 0, 16);
    assert_true(strncmp(s, "第一行文字", strlen("第一行文字")) == 0);
    assert_non_null(strstr(s, "…"));
    free(s);
    s = snip("", NULL, 0, 16);
    assert_string_equal(s, "");
    free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_marks_and_whitespace),
        cmocka_unit_test(test_best_window_wins),
        cmocka_unit_test(test_prefix_terms),
        cmocka_unit_test(test_cjk_bigrams_merge),
        cmocka_unit_test(test_no_match_is_the_start),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
