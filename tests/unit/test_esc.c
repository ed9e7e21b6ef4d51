/* esc: output escaping for any input bytes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "util/esc.h"

typedef void (*esc_fn)(tbuf *b, const char *s);

static void check(esc_fn fn, const char *in, const char *want)
{
    tbuf b = {0};
    fn(&b, in);
    assert_string_equal(tbuf_cstr(&b), want);
    tbuf_free(&b);
}

static void utf8_all(tbuf *b, const char *s) { esc_utf8(b, s, strlen(s)); }
static void xml_text(tbuf *b, const char *s) { esc_xml(b, s, strlen(s), 0); }
static void xml_attr(tbuf *b, const char *s) { esc_xml(b, s, strlen(s), 1); }
static void path(tbuf *b, const char *s) { esc_path(b, s); }

static void test_decode_strict(void **state)
{
    (void)state;
    uint32_t cp;
    assert_int_equal(esc_utf8_decode((const unsigned char *)"\xC3\xA9", 2, &cp), 2);
    assert_int_equal(cp, 0xE9);
    assert_int_equal(esc_utf8_decode((const unsigned char *)"\xF0\x9F\x98\x80", 4, &cp), 4);
    assert_int_equal(cp, 0x1F600);
    /* overlong, surrogate, above U+10FFFF, truncated, lone continuation */
    assert_int_equal(esc_utf8_decode((const unsigned char *)"\xC0\xAF", 2, &cp), 0);
    assert_int_equal(esc_utf8_decode((const unsigned char *)"\xE0\x80\xAF", 3, &cp), 0);
    assert_int_equal(esc_utf8_decode((const unsigned char *)"\xED\xA0\x80", 3, &cp), 0);
    assert_int_equal(esc_utf8_decode((const unsigned char *)"\xF4\x90\x80\x80", 4, &cp), 0);
    assert_int_equal(esc_utf8_decode((const unsigned char *)"\xE2\x82", 2, &cp), 0);
    assert_int_equal(esc_utf8_decode((const unsigned char *)"\x80", 1, &cp), 0);
    assert_true(esc_utf8_valid("caf\xC3\xA9", 5));
    assert_false(esc_utf8_valid("caf\xE9", 4));
}

/* Every scalar value encodes to a sequence the strict decoder gives back. */
static void test_encode_round_trip(void **state)
{
    (void)state;
    for (uint32_t cp = 0; cp <= 0x10FFFF; cp += cp < 0x3000 ? 1 : 97) {
        if (cp >= 0xD800 && cp < 0xE000)
            continue;
        char b[4];
        uint32_t back = 0;
        size_t n = esc_utf8_encode(cp, b);
        assert_int_equal(n, cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4);
        assert_int_equal(esc_utf8_decode((const unsigned char *)b, n, &back), n);
        assert_int_equal(back, cp);
    }
}

static void test_utf8_replaces_each_bad_byte(void **state)
{
    (void)state;
    check(utf8_all, "ok caf\xC3\xA9", "ok caf\xC3\xA9");
    check(utf8_all, "a\xFF" "b", "a\xEF\xBF\xBD" "b");
    check(utf8_all, "\xE2\x82", "\xEF\xBF\xBD\xEF\xBF\xBD");
    check(utf8_all, "x\xED\xA0\x80", "x\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
    /* NUL bytes inside a length-delimited string are kept */
    tbuf b = {0};
    esc_utf8(&b, "a\0\xFF", 3);
    assert_int_equal(b.len, 5);
    assert_memory_equal(b.data, "a\0\xEF\xBF\xBD", 5);
    tbuf_free(&b);
}

static void test_line_has_no_breaks(void **state)
{
    (void)state;
    check(esc_line, "a\nb\tc\rd", "a b c d");
    check(esc_line, "x\xC2\x85y\xE2\x80\xA8z\xE2\x80\xA9!", "x y z !");
    check(esc_line, "\x1B[31mred\x7F", " [31mred ");
    check(esc_line, "bad\xE9", "bad\xEF\xBF\xBD");
}

static void test_xml(void **state)
{
    (void)state;
    check(xml_text, "<a href=\"x\">&</a>", "&lt;a href=&quot;x&quot;&gt;&amp;&lt;/a&gt;");
    check(xml_text, "t\ta\nb\rc", "t\ta\nb&#13;c");
    check(xml_attr, "t\ta\nb", "t&#9;a&#10;b");
    check(xml_text, "\x01\x1B\xEF\xBF\xBE\xEF\xBF\xBF\xFF", /* C0, U+FFFE, U+FFFF, bad byte */
          "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
    check(xml_text, "\xC2\x85 \xE4\xB8\xAD", "\xC2\x85 \xE4\xB8\xAD"); /* allowed in XML 1.0 */
}

static void test_path_quoting(void **state)
{
    (void)state;
    check(path, "/notes/caf\xC3\xA9 x.md", "/notes/caf\xC3\xA9 x.md");
    check(path, "a\nb.md", "\"a\\nb.md\"");
    check(path, "a\tb\r.md", "\"a\\tb\\r.md\"");
    check(path, "caf\xE9.md", "\"caf\\351.md\"");
    check(path, "say \"hi\".md", "\"say \\\"hi\\\".md\"");
    check(path, "back\\slash", "\"back\\\\slash\"");
    check(path, "c1\xC2\x85.md", "\"c1\\302\\205.md\"");
    check(path, "\x1B[0m", "\"\\033[0m\"");
    tbuf b = {0};
    assert_int_equal(esc_path(&b, "plain"), 0);
    assert_int_equal(esc_path(&b, "a\nb"), 1);
    tbuf_free(&b);
}

static void test_csv(void **state)
{
    (void)state;
    check(esc_csv, "plain", "\"plain\"");
    check(esc_csv, "say \"hi\",\r\nnext", "\"say \"\"hi\"\",\r\nnext\"");
    check(esc_csv, "bad\xFF", "\"bad\xEF\xBF\xBD\"");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decode_strict),
        cmocka_unit_test(test_encode_round_trip),
        cmocka_unit_test(test_utf8_replaces_each_bad_byte),
        cmocka_unit_test(test_line_has_no_breaks),
        cmocka_unit_test(test_xml),
        cmocka_unit_test(test_path_quoting),
        cmocka_unit_test(test_csv),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
