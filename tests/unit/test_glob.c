/* glob_match: table tests of every syntax element, plus the bounds that
 * keep adversarial patterns linear. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "fs/glob.h"
#include "fs/walk.h"
#include "util/mem.h"

typedef struct gcase {
    const char *pat, *path;
    int want;
} gcase;

static void run_table(const gcase *t, size_t n)
{
    int bad = 0;
    for (size_t i = 0; i < n; i++) {
        int got = glob_match(t[i].pat, t[i].path);
        /* The same answer from the NFA when a compare fast path exists. */
        tglob *g = tglob_compile(t[i].pat, strlen(t[i].pat), GLOB_NOFAST);
        int nfa = tglob_match(g, t[i].path, strlen(t[i].path));
        tglob_free(g);
        if (got != t[i].want || nfa != t[i].want) {
            print_error("glob_match(\"%s\", \"%s\") = %d (nfa %d), want %d\n", t[i].pat,
                        t[i].path, got, nfa, t[i].want);
            bad++;
        }
    }
    assert_int_equal(bad, 0);
}

#define RUN(t) run_table(t, sizeof t / sizeof t[0])

static void test_literal_star_question(void **state)
{
    (void)state;
    static const gcase t[] = {
        {"", "", 1},
        {"", "a", 0},
        {"a", "", 0},
        {"abc", "abc", 1},
        {"abc", "abd", 0},
        {"abc", "ab", 0},
        {"abc", "abcd", 0},
        {"ABC", "abc", 0}, /* case-sensitive */
        {"*", "", 1},
        {"*", "abc", 1},
        {"*", "a/b", 0},
        {"*.md", "note.md", 1},
        {"*.md", ".md", 1},
        {"*.md", "note.mdx", 0},
        {"*.md", "dir/note.md", 0},
        {"a*", "a", 1},
        {"a*b*c", "aXXbYYc", 1},
        {"a*b*c", "aXXbYY", 0},
        {"a*b", "a/b", 0},
        {"*/*", "a/b", 1},
        {"*/*", "a/b/c", 0},
        {"?", "a", 1},
        {"?", "", 0},
        {"?", "/", 0},
        {"??", "ab", 1},
        {"a?c", "abc", 1},
        {"a?c", "a/c", 0},
        {"a**b", "aXb", 1},       /* not a whole segment: plain star */
        {"a**b", "a/b", 0},
        {"x/**y", "x/ay", 1},
        {"x/**y", "x/a/y", 0},
        /* the literal head an NFA pattern checks first */
        {"scripts/pdf/*.html", "scripts/pdf/a.html", 1},
        {"scripts/pdf/*.html", "scripts/pdf/.html", 1},
        {"scripts/pdf/*.html", "scripts/pd", 0},
        {"scripts/pdf/*.html", "scripts/pdfx/a.html", 0},
        {"scripts/pdf/*.html", "x/scripts/pdf/a.html", 0},
        {"a/**/b?", "a/bc", 1},
        {"a/**/b?", "a/x/y/bc", 1},
        {"a/**/b?", "ab/bc", 0},
    };
    RUN(t);
}

static void test_globstar(void **state)
{
    (void)state;
    static const gcase t[] = {
        {"**/*.md", "a.md", 1},   /* zero folders */
        {"**/*.md", "x/a.md", 1},
        {"**/*.md", "x/y/z/a.md", 1},
        {"**/*.md", "x/y/z/a.txt", 0},
        {"**/*.md", "x/y/a.md/b", 0},
        {"**", "", 1},
        {"**", "a", 1},
        {"**", "a/b/c", 1},
        {"a/**", "a/b", 1},
        {"a/**", "a/b/c", 1},
        {"a/**", "a", 0},
        {"a/**", "b/c", 0},
        {"a/**/b", "a/b", 1},
        {"a/**/b", "a/x/b", 1},
        {"a/**/b", "a/x/y/b", 1},
        {"a/**/b", "a/xb", 0},
        {"a/**/b", "ab", 0},
        {"**/drafts/**", "drafts/x.md", 1},
        {"**/drafts/**", "p/q/drafts/x/y.md", 1},
        {"**/drafts/**", "p/q/mydrafts/y.md", 0},
        {"**/**/*.md", "a.md", 1},
        {"**/**/*.md", "a/b/c.md", 1},
        {"***/x", "a/b/x", 1},
        {"**/*.md", ".md", 1},
        {"**/*.md", "a/.md", 1},
        {"**/*.md", "md", 0},
        {"**/venv", "venv", 1},
        {"**/venv", "a/b/venv", 1},
        {"**/venv", "a/bvenv", 0},
        {"**/venv", "venv/x", 0},
        {"**/a/b", "x/a/b", 1},
        {"**/a/b", "xa/b", 0},
    };
    RUN(t);
}

static void test_classes(void **state)
{
    (void)state;
    static const gcase t[] = {
        {"[abc]", "a", 1},
        {"[abc]", "c", 1},
        {"[abc]", "d", 0},
        {"[abc]", "", 0},
        {"[a-z]x", "qx", 1},
        {"[a-z]x", "Qx", 0},
        {"[!a-z]", "Q", 1},
        {"[!a-z]", "q", 0},
        {"[^a-z]", "Q", 1},
        {"[!x]", "/", 0},        /* classes never match '/' */
        {"a[/]b", "a/b", 0},
        {"[]]", "]", 1},         /* leading ']' is literal */
        {"[!]]", "a", 1},
        {"[!]]", "]", 0},
        {"[a-]", "-", 1},        /* trailing '-' is literal */
        {"[a\\]]", "]", 1},      /* escaped ']' inside a class */
        {"[z-a]", "m", 0},       /* reversed range is empty */
        {"[", "[", 1},           /* unclosed: literal */
        {"[abc", "[abc", 1},
        {"[abc", "a", 0},
        {"note[0-9][0-9].md", "note42.md", 1},
        {"note[0-9][0-9].md", "note4x.md", 0},
        {"[\xc3\xa9]", "\xc3", 1}, /* bytes, not characters */
    };
    RUN(t);
}

static void test_braces(void **state)
{
    (void)state;
    static const gcase t[] = {
        {"*.{md,markdown}", "a.md", 1},
        {"*.{md,markdown}", "a.markdown", 1},
        {"*.{md,markdown}", "a.mdx", 0},
        {"*.{md,markdown}", "a.", 0},
        {"{a,b}/{c,d}", "b/c", 1},
        {"{a,b}/{c,d}", "b/e", 0},
        {"{a,}x", "x", 1},        /* empty alternative */
        {"{a,}x", "ax", 1},
        {"{a,{b,c}d}", "cd", 1},  /* nested */
        {"{a,{b,c}d}", "c", 0},
        {"{a,{b,c}d}", "a", 1},
        {"{md}", "md", 1},
        {"{", "{", 1},            /* unbalanced: literal */
        {"{a,b", "{a,b", 1},
        {"{a,b", "a", 0},
        {"a}", "a}", 1},
        {"{[},]x,y}", "}x", 1},   /* ',' and '}' inside a class are not structure */
        {"{[},]x,y}", "y", 1},
        {"{**/,}*.md", "a/b/c.md", 1},
        {"{**/,}*.md", "c.md", 1},
        {"x/{**/,}*.md", "x/c.md", 1},
    };
    RUN(t);
}

static void test_escapes(void **state)
{
    (void)state;
    static const gcase t[] = {
        {"\\*", "*", 1},
        {"\\*", "a", 0},
        {"\\?", "?", 1},
        {"\\[a]", "[a]", 1},
        {"\\{a,b}", "{a,b}", 1},
        {"\\{a,b}", "a", 0},
        {"a\\\\b", "a\\b", 1},
        {"a\\", "a\\", 1},      /* trailing backslash: literal */
        {"\\#x", "#x", 1},
    };
    RUN(t);
}

/* GLOB_NOBRACE (gitignore) treats braces as literal bytes. */
static void test_nobrace(void **state)
{
    (void)state;
    const char *pat = "*.{md,txt}";
    tglob *g = tglob_compile(pat, strlen(pat), GLOB_NOBRACE);
    assert_int_equal(tglob_match(g, "a.md", 4), 0);
    assert_int_equal(tglob_match(g, "a.{md,txt}", 10), 1);
    tglob_free(g);
    g = tglob_compile(pat, strlen(pat), 0);
    assert_int_equal(tglob_match(g, "a.md", 4), 1);
    /* A compiled glob is reusable and keeps giving the same answer. */
    for (int i = 0; i < 1000; i++)
        assert_int_equal(tglob_match(g, "x.txt", 5), 1);
    tglob_free(g);
}

/* tglob_last_byte: the byte every match ends with, or -1; and every
 * string the pattern matches does end with it. */
static void test_last_byte(void **state)
{
    (void)state;
    static const struct {
        const char *pat, *match;
        int last;
    } t[] = {
        {"*.md", "a.md", 'd'},        {"**/*.md", "x/y.md", 'd'},   {"venv", "venv", 'v'},
        {"a[bc]d", "abd", 'd'},       {"a[bc]", "ab", -1},          {"a?", "ab", -1},
        {"a*", "abc", -1},            {"x/**", "x/y", -1},          {"a\\*", "a*", -1},
        {"a\\d", "ad", -1},           {"{a,b}", "a", -1},           {"x{a,b}c", "xac", 'c'},
        {"a/", "a/", -1},             {"\xc3\xa9", "\xc3\xa9", 0xa9},
    };
    for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
        tglob *g = tglob_compile(t[i].pat, strlen(t[i].pat), 0);
        assert_int_equal(tglob_last_byte(g), t[i].last);
        assert_int_equal(tglob_match(g, t[i].match, strlen(t[i].match)), 1);
        tglob_free(g);
    }
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Patterns that make a backtracking matcher exponential must stay linear. */
static void test_adversarial(void **state)
{
    (void)state;
    char pat[4096], path[4096];
    size_t n = 0;
    for (int i = 0; i < 40; i++)
        pat[n++] = '*', pat[n++] = 'a';
    pat[n++] = 'b';
    pat[n] = '\0';
    memset(path, 'a', 2000);
    path[2000] = '\0';
    double t0 = now_s();
    assert_int_equal(glob_match(pat, path), 0);
    /* "**" segments that can each absorb any run of folders. */
    n = 0;
    for (int i = 0; i < 60; i++)
        memcpy(pat + n, "**/a/", 5), n += 5;
    memcpy(pat + n, "b", 2);
    n = 0;
    for (int i = 0; i < 400; i++)
        memcpy(path + n, "a/", 2), n += 2;
    memcpy(path + n, "c", 2);
    assert_int_equal(glob_match(pat, path), 0);
    path[n] = 'b';
    assert_int_equal(glob_match(pat, path), 1);
    /* Deeply nested braces: beyond the depth bound they are literal. */
    n = 0;
    for (int i = 0; i < 1000; i++)
        pat[n++] = '{';
    pat[n++] = 'x';
    for (int i = 0; i < 1000; i++)
        pat[n++] = '}';
    pat[n] = '\0';
    assert_int_equal(glob_match(pat, "x"), 0);
    assert_int_equal(glob_match(pat, pat), 0);
    /* Many alternatives. */
    n = 0;
    pat[n++] = '{';
    for (int i = 0; i < 500; i++)
        n += (size_t)snprintf(pat + n, sizeof pat - n, "a%d,", i);
    pat[n - 1] = '}';
    pat[n] = '\0';
    assert_int_equal(glob_match(pat, "a499"), 1);
    assert_int_equal(glob_match(pat, "a500"), 0);
    assert_true(now_s() - t0 < 2.0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_literal_star_question),
        cmocka_unit_test(test_globstar),
        cmocka_unit_test(test_classes),
        cmocka_unit_test(test_braces),
        cmocka_unit_test(test_escapes),
        cmocka_unit_test(test_nobrace),
        cmocka_unit_test(test_last_byte),
        cmocka_unit_test(test_adversarial),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
