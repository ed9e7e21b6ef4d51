/* md_parse: frontmatter, headings, code, links, tags, line/byte bookkeeping,
 * hostile bytes, and every note of the shared corpora. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "md/md.h"
#include "testutil.h"
#include "util/buf.h"
#include "util/mem.h"

static md_doc D;

static void parse_n(const char *s, size_t n)
{
    md_doc_free(&D);
    assert_int_equal(md_parse(s, n, &D), TROVE_OK);
}

static void parse(const char *s)
{
    parse_n(s, strlen(s));
}

static int teardown(void **state)
{
    (void)state;
    md_doc_free(&D);
    return 0;
}

static int has_tag(const char *t)
{
    for (size_t i = 0; i < D.n_tags; i++)
        if (strcmp(D.tags[i], t) == 0)
            return 1;
    return 0;
}

/* ---- basics ---- */

static void test_empty(void **state)
{
    (void)state;
    parse("");
    assert_int_equal(D.n_lines, 0);
    assert_int_equal(D.body_start, 0);
    assert_int_equal(D.body_line, 1);
    assert_null(D.title);
    assert_int_equal(D.has_frontmatter, 0);
    assert_int_equal(D.n_headings + D.n_links + D.n_tags + D.n_code, 0);
    assert_null(D.warning);
    parse_n(NULL, 0);
    assert_int_equal(D.n_lines, 0);
}

static void test_line_count(void **state)
{
    (void)state;
    parse("a\nb\n");
    assert_int_equal(D.n_lines, 2);
    parse("a\nb");
    assert_int_equal(D.n_lines, 2);
    parse("\n\n\n");
    assert_int_equal(D.n_lines, 3);
    parse("x");
    assert_int_equal(D.n_lines, 1);
}

static void test_bom(void **state)
{
    (void)state;
    parse("\xEF\xBB\xBF# Title\nText #t\n");
    assert_int_equal(D.body_start, 3);
    assert_int_equal(D.body_line, 1);
    assert_int_equal(D.n_headings, 1);
    assert_string_equal(D.headings[0].text, "Title");
    assert_int_equal(D.headings[0].start_byte, 3);
    assert_string_equal(D.title, "Title");
    assert_true(has_tag("t"));
    /* BOM then frontmatter */
    parse("\xEF\xBB\xBF---\ntitle: T\n---\nbody\n");
    assert_int_equal(D.has_frontmatter, 1);
    assert_string_equal(D.title, "T");
    assert_int_equal(D.body_start, strlen("\xEF\xBB\xBF---\ntitle: T\n---\n"));
    assert_int_equal(D.body_line, 4);
}

static void test_crlf(void **state)
{
    (void)state;
    const char *s = "---\r\ntitle: Win\r\ntags: [A]\r\n---\r\n# Head  \r\n\r\nSee [[Other|x]] #b\r\n\r\nPara\r\n---\r\n";
    parse(s);
    assert_int_equal(D.has_frontmatter, 1);
    assert_string_equal(D.title, "Win");
    assert_int_equal(D.body_line, 5);
    assert_int_equal(D.body_start, strlen("---\r\ntitle: Win\r\ntags: [A]\r\n---\r\n"));
    assert_int_equal(D.n_headings, 2);
    assert_string_equal(D.headings[0].text, "Head");
    assert_int_equal(D.headings[0].line, 5);
    assert_int_equal(D.headings[0].end_byte, strstr(s, "\r\n\r\nSee") - s + 2);
    assert_string_equal(D.headings[1].text, "Para");
    assert_int_equal(D.headings[1].level, 2);
    assert_int_equal(D.headings[1].line, 9);
    assert_int_equal(D.n_links, 1);
    assert_string_equal(D.links[0].display, "x");
    assert_int_equal(D.links[0].line, 7);
    assert_int_equal(D.links[0].start_byte, strstr(s, "[[") - s);
    assert_true(has_tag("a") && has_tag("b"));
    assert_int_equal(D.n_lines, 10);
}

static void test_clean_text(void **state)
{
    (void)state;
    char *c = md_clean_text("a\r\nb\rc", 6);
    assert_string_equal(c, "a\nb\rc");
    free(c);
    c = md_clean_text("x\xff" "y\xc3\x28z\xe2\x82", 8);
    assert_string_equal(c, "x\xEF\xBF\xBDy\xEF\xBF\xBD(z\xEF\xBF\xBD\xEF\xBF\xBD");
    free(c);
    c = md_clean_text("\xed\xa0\x80|\xc0\xaf|\xf4\x90\x80\x80", 10); /* surrogate, overlong, >10FFFF */
    assert_null(strstr(c, "\xed\xa0"));
    assert_non_null(strstr(c, "|"));
    assert_int_equal(strspn(c, "\xEF\xBF\xBD|"), strlen(c));
    free(c);
    c = md_clean_text("a\0b", 3);
    assert_string_equal(c, "a\xEF\xBF\xBD" "b");
    free(c);
    c = md_clean_text("ok \xc3\xa9 \xe4\xb8\xad \xf0\x9f\x98\x80", 14);
    assert_string_equal(c, "ok \xc3\xa9 \xe4\xb8\xad \xf0\x9f\x98\x80");
    free(c);
}

static void test_invalid_utf8(void **state)
{
    (void)state;
    parse("# Bad\xff title\n[[no\xc3te]] [t\xe9xt](f\xfe.md) #ta\xe9g\n");
    assert_string_equal(D.headings[0].text, "Bad\xEF\xBF\xBD title");
    assert_string_equal(D.title, "Bad\xEF\xBF\xBD title");
    assert_int_equal(D.n_links, 2);
    assert_string_equal(D.links[0].target, "no\xEF\xBF\xBDte");
    assert_string_equal(D.links[1].target, "f\xEF\xBF\xBD.md");
    assert_string_equal(D.links[1].display, "t\xEF\xBF\xBDxt");
    assert_true(has_tag("ta")); /* the tag stops at the bad byte */
    /* Invalid bytes in frontmatter do not lose the block. */
    parse("---\ntitle: caf\xe9\nkey: v\xff\n---\n");
    assert_null(D.warning);
    assert_string_equal(D.title, "caf\xEF\xBF\xBD");
    assert_string_equal(D.meta_json, "{\"key\":\"v\xEF\xBF\xBD\"}");
}

/* ---- frontmatter ---- */

static void test_frontmatter_fields(void **state)
{
    (void)state;
    parse("---\n"
          "title: My Note\n"
          "aliases:\n  - First\n  - Second\n  - First\n"
          "tags: [Project, '#Idea', nested/Tag]\n"
          "date: 2024-01-02\n"
          "count: 3\n"
          "empty:\n"
          "list: [a, b]\n"
          "obj: {k: v, inner: {x: [1, {y: z}]}}\n"
          "---\n"
          "# Heading H1\n"
          "text #idea #More\n");
    assert_int_equal(D.has_frontmatter, 1);
    assert_null(D.warning);
    assert_string_equal(D.title, "My Note");
    assert_int_equal(D.n_aliases, 2);
    assert_string_equal(D.aliases[0], "First");
    assert_string_equal(D.aliases[1], "Second");
    assert_int_equal(D.n_tags, 4);
    assert_string_equal(D.tags[0], "project");
    assert_string_equal(D.tags[1], "idea");
    assert_string_equal(D.tags[2], "nested/tag");
    assert_string_equal(D.tags[3], "more");
    assert_string_equal(D.meta_json,
                        "{\"date\":\"2024-01-02\",\"count\":3,\"empty\":null,\"list\":[\"a\",\"b\"],"
                        "\"obj\":{\"k\":\"v\",\"inner\":{\"x\":[1,{\"y\":\"z\"}]}}}");
    assert_int_equal(D.body_line, 14);
    assert_int_equal(D.headings[0].line, 14);
}

static void test_frontmatter_strings(void **state)
{
    (void)state;
    parse("---\nalias: Only One\ntags: \"a, #b  c,d\"\n...\nbody\n");
    assert_int_equal(D.has_frontmatter, 1);
    assert_int_equal(D.n_aliases, 1);
    assert_string_equal(D.aliases[0], "Only One");
    assert_int_equal(D.n_tags, 4);
    assert_string_equal(D.tags[0], "a");
    assert_string_equal(D.tags[1], "b");
    assert_string_equal(D.tags[2], "c");
    assert_string_equal(D.tags[3], "d");
    assert_null(D.meta_json);
    assert_null(D.title);
    assert_int_equal(D.body_line, 5);
    /* An empty title falls back to the first H1. */
    parse("---\ntitle:\n---\n## two\n# One\n");
    assert_string_equal(D.title, "One");
}

static void test_frontmatter_malformed(void **state)
{
    (void)state;
    const char *s = "---\ntitle: ok\nbad: [unclosed\nmore: x\n---\n# Body\n#tag\n";
    parse(s);
    assert_non_null(D.warning);
    assert_non_null(strstr(D.warning, "line "));
    assert_non_null(strstr(D.warning, "frontmatter"));
    assert_string_equal(D.title, "Body"); /* fields ignored, H1 used */
    assert_null(D.meta_json);
    assert_int_equal(D.n_aliases, 0);
    assert_int_equal(D.body_start, strstr(s, "# Body") - s);
    assert_int_equal(D.body_line, 6);
    assert_int_equal(D.n_tags, 1);
    assert_string_equal(D.tags[0], "tag");

    parse("---\nkey: value\n  bad indent: x\n---\n");
    assert_non_null(D.warning);
    assert_non_null(strstr(D.warning, "line 3"));

    /* A scalar or list root is not a mapping. */
    parse("---\n- a\n- b\n---\ntext\n");
    assert_non_null(D.warning);
    assert_null(D.meta_json);
    assert_int_equal(D.n_aliases, 0);

    /* A hostile alias list is capped. */
    tbuf b = {0};
    tbuf_puts(&b, "---\naliases:\n");
    for (int i = 0; i < 300; i++)
        tbuf_printf(&b, "  - a%d\n", i);
    tbuf_puts(&b, "---\n");
    parse_n(b.data, b.len);
    assert_null(D.warning);
    assert_int_equal(D.n_aliases, 256);
    tbuf_free(&b);

    /* Self-referencing anchors must not loop. */
    parse("---\na: &x [1, *x]\nb: &y {k: *y}\n---\n");
    assert_non_null(D.meta_json);
}

static void test_frontmatter_unclosed(void **state)
{
    (void)state;
    parse("---\ntitle: x\n\n# Real heading\n");
    assert_int_equal(D.has_frontmatter, 0);
    assert_non_null(D.warning);
    assert_non_null(strstr(D.warning, "unclosed"));
    assert_int_equal(D.body_start, 0);
    assert_null(D.meta_json);
    assert_int_equal(D.n_headings, 1); /* "title: x" + blank: no setext */
    assert_string_equal(D.title, "Real heading");
    /* Only a first-line fence opens frontmatter. */
    parse("\n---\ntitle: x\n---\n");
    assert_int_equal(D.has_frontmatter, 0);
    assert_int_equal(D.n_headings, 1); /* "title: x" + "---" is setext */
    assert_string_equal(D.headings[0].text, "title: x");
    parse("---");
    assert_int_equal(D.has_frontmatter, 0);
    assert_int_equal(D.n_lines, 1);
}

static void test_only_frontmatter(void **state)
{
    (void)state;
    parse("---\ntitle: Just meta\n---\n");
    assert_int_equal(D.has_frontmatter, 1);
    assert_string_equal(D.title, "Just meta");
    assert_int_equal(D.body_start, 25);
    assert_int_equal(D.n_lines, 3);
    assert_int_equal(D.n_headings, 0);
    parse("---\n---\n");
    assert_int_equal(D.has_frontmatter, 1);
    assert_null(D.warning);
    assert_null(D.meta_json);
    assert_int_equal(D.body_start, 8);
    parse("---\nk: v\n---");
    assert_int_equal(D.has_frontmatter, 1);
    assert_int_equal(D.body_start, 12);
    assert_int_equal(D.body_line, 3);
    assert_string_equal(D.meta_json, "{\"k\":\"v\"}");
}

/* ---- headings ---- */

static void test_atx(void **state)
{
    (void)state;
    parse("# One\n## Two ##\n###   Three   ###   \n   #### Four\n    ##### code\n"
          "###### Six #not-closing\n####### seven\n#5 bolt\n#\n## Trailing#\n#\tTab\n");
    assert_int_equal(D.n_headings, 8);
    assert_string_equal(D.headings[0].text, "One");
    assert_int_equal(D.headings[0].level, 1);
    assert_string_equal(D.headings[1].text, "Two");
    assert_string_equal(D.headings[2].text, "Three");
    assert_int_equal(D.headings[2].level, 3);
    assert_string_equal(D.headings[3].text, "Four");
    assert_int_equal(D.headings[3].line, 4);
    assert_string_equal(D.headings[4].text, "Six #not-closing");
    assert_int_equal(D.headings[4].level, 6);
    assert_string_equal(D.headings[5].text, "");
    assert_string_equal(D.headings[6].text, "Trailing#");
    assert_int_equal(D.headings[6].line, 10);
    assert_true(has_tag("not-closing"));
    assert_false(has_tag("5"));
    assert_string_equal(D.headings[7].text, "Tab");
    /* "    ##### code" directly after a heading is indented code. */
    assert_int_equal(D.n_code, 1);
    assert_int_equal(D.code[0].start, 50);
    parse("#\tTab\n");
    assert_int_equal(D.n_headings, 1);
    assert_string_equal(D.headings[0].text, "Tab");
    assert_int_equal(D.headings[0].start_byte, 0);
    assert_int_equal(D.headings[0].end_byte, 6);
}

static void test_setext_vs_break(void **state)
{
    (void)state;
    const char *s = "Title A\n=======\n\nSub B\n---\n\n---\n\nNot heading\n\n***\nPara\n***\n- item\n---\n> quote\n---\nTwo\nlines\n--\n";
    parse(s);
    assert_int_equal(D.n_headings, 3);
    assert_string_equal(D.headings[0].text, "Title A");
    assert_int_equal(D.headings[0].level, 1);
    assert_int_equal(D.headings[0].start_byte, 0);
    assert_int_equal(D.headings[0].end_byte, 16);
    assert_string_equal(D.headings[1].text, "Sub B");
    assert_int_equal(D.headings[1].level, 2);
    assert_int_equal(D.headings[1].line, 4);
    assert_string_equal(D.headings[2].text, "Two lines");
    assert_int_equal(D.headings[2].line, 18);
    assert_int_equal(D.headings[2].start_byte, strstr(s, "Two\n") - s);
    assert_string_equal(D.title, "Title A");
    /* "===" after a blank line or a heading is just text. */
    parse("# H\n===\n\n===\n");
    assert_int_equal(D.n_headings, 1);
    /* A setext underline cannot follow code. */
    parse("```\ncode\n```\n---\n");
    assert_int_equal(D.n_headings, 0);
}

/* ---- code ---- */

static void test_fenced_code(void **state)
{
    (void)state;
    const char *s = "```python\n# comment\n[[in code]] #notag\n```\n"
                    "~~~~\n~~~\n# still code\n~~~~~~\n"
                    "````md\n```\n# nested\n```\n````\n"
                    "  ```\n  indented fence\n  ```\n"
                    "``` not`fence\n"
                    "after #yes\n";
    parse(s);
    assert_int_equal(D.n_code, 4);
    assert_int_equal(D.code[0].start, 0);
    assert_int_equal(D.code[0].end, strstr(s, "~~~~\n") - s);
    assert_int_equal(D.code[1].start, strstr(s, "~~~~\n") - s);
    assert_int_equal(D.code[1].end, strstr(s, "````md") - s);
    assert_int_equal(D.code[2].end, strstr(s, "  ```\n  ind") - s);
    assert_int_equal(D.code[3].end, strstr(s, "``` not") - s);
    assert_int_equal(D.n_headings, 0);
    assert_int_equal(D.n_links, 0);
    assert_int_equal(D.n_tags, 1);
    assert_string_equal(D.tags[0], "yes");
}

static void test_unclosed_fence(void **state)
{
    (void)state;
    const char *s = "# H\n\n```\ncode #x\n[[y]]\n# z\n``\n";
    parse(s);
    assert_int_equal(D.n_code, 1);
    assert_int_equal(D.code[0].start, 5);
    assert_int_equal(D.code[0].end, strlen(s));
    assert_int_equal(D.n_headings, 1);
    assert_int_equal(D.n_links + D.n_tags, 0);
    parse("~~~");
    assert_int_equal(D.n_code, 1);
    assert_int_equal(D.code[0].end, 3);
}

static void test_indented_code(void **state)
{
    (void)state;
    const char *s = "Para\n    not code #a\n\n    code #b\n\n    more [[c]]\n\nText\n"
                    "- item\n\n    list continuation #d\n\n# H\n    code again #e\n";
    parse(s);
    assert_int_equal(D.n_code, 2);
    assert_int_equal(D.code[0].start, strstr(s, "    code #b") - s);
    assert_int_equal(D.code[0].end, strstr(s, "\nText") - s); /* ends after "[[c]]\n", not blank lines */
    assert_int_equal(D.code[1].start, strstr(s, "    code again") - s);
    assert_int_equal(D.code[1].end, strlen(s));
    assert_true(has_tag("a"));
    assert_false(has_tag("b"));
    assert_true(has_tag("d"));
    assert_false(has_tag("e"));
    assert_int_equal(D.n_links, 0);
    /* A tab counts as four columns. */
    parse("\tcode #t\n");
    assert_int_equal(D.n_code, 1);
    assert_int_equal(D.n_tags, 0);
}

static void test_inline_code(void **state)
{
    (void)state;
    parse("a `[[no]] #no` b ``x ` [[no2]]`` c `#no3` d ` unmatched [[yes]] #yes ``\n"
          "`open on one line\n#tag2 [[also]]` \\`[[esc]]\n");
    assert_int_equal(D.n_links, 3);
    assert_string_equal(D.links[0].target, "yes");
    assert_string_equal(D.links[1].target, "also");
    assert_string_equal(D.links[2].target, "esc");
    assert_int_equal(D.n_tags, 2);
    assert_string_equal(D.tags[0], "yes");
    assert_string_equal(D.tags[1], "tag2");
}

/* ---- links ---- */

static void test_wiki_links(void **state)
{
    (void)state;
    const char *s = "[[Note]] [[folder/Note B|Shown text]] [[N#Heading]] [[N#^block-1]] [[#Local]]\n"
                    "![[Embed]] ![[pic.png|200]] ![[N#^b]] [[ spaced | d ]] [[a\\|b]] [[]] [[x [[inner]]\n";
    parse(s);
    assert_int_equal(D.n_links, 11);
    md_link *l = D.links;
    assert_int_equal(l[0].kind, MD_LINK_WIKI);
    assert_string_equal(l[0].target, "Note");
    assert_null(l[0].fragment);
    assert_null(l[0].display);
    assert_int_equal(l[0].start_byte, 0);
    assert_int_equal(l[0].line, 1);
    assert_string_equal(l[1].target, "folder/Note B");
    assert_string_equal(l[1].display, "Shown text");
    assert_string_equal(l[2].target, "N");
    assert_string_equal(l[2].fragment, "Heading");
    assert_string_equal(l[3].fragment, "^block-1");
    assert_string_equal(l[4].target, "");
    assert_string_equal(l[4].fragment, "Local");
    assert_int_equal(l[5].kind, MD_LINK_EMBED);
    assert_string_equal(l[5].target, "Embed");
    assert_int_equal(l[5].start_byte, strstr(s, "![[Embed") - s);
    assert_int_equal(l[5].line, 2);
    assert_int_equal(l[6].kind, MD_LINK_EMBED);
    assert_string_equal(l[6].target, "pic.png");
    assert_string_equal(l[6].display, "200");
    assert_string_equal(l[7].fragment, "^b");
    assert_string_equal(l[8].target, "spaced");
    assert_string_equal(l[8].display, "d");
    assert_string_equal(l[9].target, "a");
    assert_string_equal(l[9].display, "b");
    assert_string_equal(l[10].target, "inner");
    assert_int_equal(D.n_tags, 0); /* '#' inside links is not a tag */
}

static void test_markdown_links(void **state)
{
    (void)state;
    const char *s = "[One](one.md) [Two](sub/My%20Note.md#Some%20Heading) [Three](<with space.MD>) "
                    "[Web](https://example.com/x.md) [Mail](mailto:a@b.md) [Anchor](#local) "
                    "[Pic](pic.png) ![Img](img.md) [Titled](t.md \"title\") [par](a(b).md) "
                    "[x](http://e.com/#anchor) [nested [br]](n.md) [bad](no-close.md\n";
    parse(s);
    assert_int_equal(D.n_links, 6);
    md_link *l = D.links;
    assert_int_equal(l[0].kind, MD_LINK_MARKDOWN);
    assert_string_equal(l[0].target, "one.md");
    assert_string_equal(l[0].display, "One");
    assert_null(l[0].fragment);
    assert_int_equal(l[0].start_byte, 0);
    assert_string_equal(l[1].target, "sub/My Note.md");
    assert_string_equal(l[1].fragment, "Some Heading");
    assert_string_equal(l[2].target, "with space.MD");
    assert_string_equal(l[3].target, "t.md");
    assert_string_equal(l[4].target, "a(b).md");
    assert_string_equal(l[5].target, "n.md");
    assert_string_equal(l[5].display, "nested [br]");
    assert_int_equal(D.n_tags, 0);
}

/* ---- tags ---- */

static void test_tags(void **state)
{
    (void)state;
    parse("#start #nested/tag #tag-with_dash, (#paren) #123 #1a C#sharp a#b\n"
          "https://x.org/#frag www #Ok/ &#39; ## notheading #UPPER #upper \\#escaped\n"
          "#中文 ，#全角 中#不是 #tag.end #/slash #-\n"
          "<a href=\"#anchor\" style='color:#fff'>x</a> a=#b\n");
    const char *want[] = {"start", "nested/tag", "tag-with_dash", "paren", "1a",
                          "ok", "upper", "中文", "全角", "tag", "-"};
    assert_int_equal(D.n_tags, sizeof want / sizeof want[0]);
    for (size_t i = 0; i < D.n_tags; i++)
        assert_string_equal(D.tags[i], want[i]);
}

static void test_tag_dedupe_many(void **state)
{
    (void)state;
    /* Enough tags to exercise the hash set growth. */
    char *buf = xmalloc(200 * 16);
    size_t n = 0;
    for (int r = 0; r < 2; r++)
        for (int i = 0; i < 90; i++)
            n += (size_t)sprintf(buf + n, r ? "#T%d " : "#t%d ", i);
    parse_n(buf, n);
    assert_int_equal(D.n_tags, 90);
    assert_string_equal(D.tags[0], "t0");
    assert_string_equal(D.tags[89], "t89");
    free(buf);
}

/* ---- title ---- */

static void test_title(void **state)
{
    (void)state;
    parse("## Sub\n# First H1\n# Second H1\n");
    assert_string_equal(D.title, "First H1");
    parse("---\ntitle: FM\n---\n# H1\n");
    assert_string_equal(D.title, "FM");
    parse("## Only sub\ntext\n");
    assert_null(D.title);
}

/* ---- hostile input ---- */

static void test_pathological_lines(void **state)
{
    (void)state;
    /* Long runs of openers must stay fast (bounded searches). */
    size_t n = 1 << 18;
    char *s = xmalloc(n);
    const char pat[] = "[[[`` ``` #![](<";
    for (size_t i = 0; i < n; i++)
        s[i] = pat[i % (sizeof pat - 1)];
    clock_t t0 = clock();
    parse_n(s, n);
    double secs = (double)(clock() - t0) / CLOCKS_PER_SEC;
    assert_true(secs < 5.0);
    memset(s, '[', n);
    parse_n(s, n);
    memset(s, '`', n);
    parse_n(s, n);
    for (size_t i = 0; i < n; i++)
        s[i] = (i % 3) ? '`' : ' ';
    parse_n(s, n);
    assert_int_equal(D.n_links, 0);
    free(s);
}

/* ---- corpora ---- */

typedef struct corpus_stats {
    size_t files, bytes, headings, links, tags, fm;
    double secs;
} corpus_stats;

static void check_doc(const char *s, size_t n, const char *path)
{
    if (D.warning)
        print_message("note: %s: %s\n", path, D.warning);
    assert_true(D.body_start <= n);
    assert_int_equal(D.body_line, tu_line_at(s, D.body_start));
    for (size_t i = 0; i < D.n_headings; i++) {
        assert_int_equal(D.headings[i].line, tu_line_at(s, D.headings[i].start_byte));
        assert_true(D.headings[i].start_byte >= D.body_start);
        assert_true(D.headings[i].end_byte <= n);
        for (size_t c = 0; c < D.n_code; c++)
            assert_false(D.headings[i].start_byte >= D.code[c].start &&
                         D.headings[i].start_byte < D.code[c].end);
    }
    for (size_t i = 0; i < D.n_links; i++) {
        assert_int_equal(D.links[i].line, tu_line_at(s, D.links[i].start_byte));
        for (size_t c = 0; c < D.n_code; c++)
            assert_false(D.links[i].start_byte >= D.code[c].start &&
                         D.links[i].start_byte < D.code[c].end);
    }
    for (size_t c = 1; c < D.n_code; c++)
        assert_true(D.code[c].start >= D.code[c - 1].end);
}

static void parse_one(void *ctx, const char *path, const char *s, size_t n)
{
    corpus_stats *st = ctx;
    clock_t t0 = clock();
    parse_n(s, n);
    st->secs += (double)(clock() - t0) / CLOCKS_PER_SEC;
    check_doc(s, n, path);
    st->files++;
    st->bytes += n;
    st->headings += D.n_headings;
    st->links += D.n_links;
    st->tags += D.n_tags;
    st->fm += (size_t)D.has_frontmatter;
}

static void corpus(const char *sub, size_t min_files)
{
    char dir[4096];
    int have = tu_corpus_dir(sub, dir, sizeof dir);
    if (!have)
        tu_skip("corpus %s not found (neither ../shared nor fixtures/shared-mini)", sub);
    if (have == TU_CORPUS_MINI)
        min_files = 10;
    corpus_stats st = {0};
    tu_each_note(dir, parse_one, &st);
    print_message("%s: %zu files, %zu KB, %zu frontmatter, %zu headings, %zu links, %zu tags, "
                  "%.1f us/file\n",
                  sub, st.files, st.bytes / 1024, st.fm, st.headings, st.links, st.tags,
                  st.files ? st.secs / (double)st.files * 1e6 : 0.0);
    assert_true(st.files >= min_files);
    assert_true(st.headings > st.files); /* real notes have headings */
}

static void test_corpus_obsidian(void **state)
{
    (void)state;
    corpus("obsidian-help/en", 150);
}

static void test_corpus_cs_notes(void **state)
{
    (void)state;
    corpus("cs-notes-zh", 150);
}

/* Spot checks of known notes in the Obsidian help vault. */
static void test_corpus_known_note(void **state)
{
    (void)state;
    char path[4096];
    if (tu_corpus_dir("obsidian-help/en/Editing and formatting/Basic formatting syntax.md", path,
                      sizeof path) != TU_CORPUS_FULL)
        tu_skip("../shared/corpora/obsidian-help is not here (TROVE_SHARED_DIR)");
    size_t n = 0;
    char *s = tu_slurp(path, &n);
    assert_non_null(s);
    parse_n(s, n);
    assert_int_equal(D.has_frontmatter, 1);
    assert_true(D.n_aliases >= 1);
    assert_non_null(D.meta_json);
    int found = 0;
    for (size_t i = 0; i < D.n_headings; i++)
        found += strcmp(D.headings[i].text, "Nesting code blocks") == 0 && D.headings[i].level == 4;
    assert_int_equal(found, 1);
    /* Headings shown inside code examples ("# Heading 1") are not headings. */
    for (size_t i = 0; i < D.n_headings; i++)
        assert_true(strcmp(D.headings[i].text, "This is a heading 1") != 0);
    free(s);
}

/* ---- blockquotes and callouts ---- */

static void test_blockquote_fence_is_code(void **state)
{
    (void)state;
    const char *s = "> [!example] Colours\n> ```css\n> a { color: #ff0000; }\n> # not a heading\n"
                    "> ```\n\nafter #real\n";
    parse(s);
    assert_int_equal(D.n_code, 1);
    assert_int_equal(D.code[0].start, strstr(s, "> ```css") - s);
    assert_int_equal(D.code[0].end, strstr(s, "\nafter") - s);
    assert_false(has_tag("ff0000"));
    assert_true(has_tag("real"));
    assert_int_equal(D.n_headings, 0);
    /* Nested quotes, a blank quoted line inside the fence, '>' without a
     * space. */
    s = "> > ~~~\n> >\n> > #x0 [[no link]]\n> > ~~~\n>```\n>#y1\n>```\n";
    parse(s);
    assert_int_equal(D.n_code, 2);
    assert_int_equal(D.n_tags + D.n_links + D.n_headings, 0);
}

static void test_blockquote_end_closes_fence(void **state)
{
    (void)state;
    /* A fence left open inside a quote ends with the quote. */
    const char *s = "> ```\n> code #a\n\nout #b\n# Heading\n";
    parse(s);
    assert_int_equal(D.n_code, 1);
    assert_int_equal(D.code[0].end, strstr(s, "\nout") - s);
    assert_false(has_tag("a"));
    assert_true(has_tag("b"));
    assert_int_equal(D.n_headings, 1);
    /* A fence outside a quote keeps "> " lines as code. */
    parse("```\n> # in code #c\n```\n");
    assert_int_equal(D.n_headings + D.n_tags, 0);
}

static void test_blockquote_headings(void **state)
{
    (void)state;
    const char *s = "# Top\n\n> [!note] Title\n> ## Inside #t1\n> text\n>\n> Setext\n> ---\n\n"
                    "> >     indented code #t2\n";
    parse(s);
    assert_int_equal(D.n_headings, 3);
    assert_string_equal(D.headings[1].text, "Inside #t1");
    assert_int_equal(D.headings[1].level, 2);
    assert_int_equal(D.headings[1].line, 4);
    assert_int_equal(D.headings[1].start_byte, strstr(s, "> ## Inside") - s);
    assert_string_equal(D.headings[2].text, "Setext");
    assert_int_equal(D.headings[2].level, 2);
    assert_int_equal(D.headings[2].line, 7);
    assert_true(has_tag("t1"));
    assert_false(has_tag("t2"));
    assert_int_equal(D.n_code, 1);
    /* "> quote" then "---" outside the quote is a break, not a heading. */
    parse("> quote\n---\n");
    assert_int_equal(D.n_headings, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_empty, teardown),
        cmocka_unit_test_teardown(test_line_count, teardown),
        cmocka_unit_test_teardown(test_bom, teardown),
        cmocka_unit_test_teardown(test_crlf, teardown),
        cmocka_unit_test_teardown(test_clean_text, teardown),
        cmocka_unit_test_teardown(test_invalid_utf8, teardown),
        cmocka_unit_test_teardown(test_frontmatter_fields, teardown),
        cmocka_unit_test_teardown(test_frontmatter_strings, teardown),
        cmocka_unit_test_teardown(test_frontmatter_malformed, teardown),
        cmocka_unit_test_teardown(test_frontmatter_unclosed, teardown),
        cmocka_unit_test_teardown(test_only_frontmatter, teardown),
        cmocka_unit_test_teardown(test_atx, teardown),
        cmocka_unit_test_teardown(test_setext_vs_break, teardown),
        cmocka_unit_test_teardown(test_fenced_code, teardown),
        cmocka_unit_test_teardown(test_unclosed_fence, teardown),
        cmocka_unit_test_teardown(test_indented_code, teardown),
        cmocka_unit_test_teardown(test_blockquote_fence_is_code, teardown),
        cmocka_unit_test_teardown(test_blockquote_end_closes_fence, teardown),
        cmocka_unit_test_teardown(test_blockquote_headings, teardown),
        cmocka_unit_test_teardown(test_inline_code, teardown),
        cmocka_unit_test_teardown(test_wiki_links, teardown),
        cmocka_unit_test_teardown(test_markdown_links, teardown),
        cmocka_unit_test_teardown(test_tags, teardown),
        cmocka_unit_test_teardown(test_tag_dedupe_many, teardown),
        cmocka_unit_test_teardown(test_title, teardown),
        cmocka_unit_test_teardown(test_pathological_lines, teardown),
        cmocka_unit_test_teardown(test_corpus_obsidian, teardown),
        cmocka_unit_test_teardown(test_corpus_cs_notes, teardown),
        cmocka_unit_test_teardown(test_corpus_known_note, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
