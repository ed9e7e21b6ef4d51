/* Unit tests for the query parser, and an integration test running parsed
 * queries against an FTS5 table that uses the "trove" tokenizer. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

#include "text/query.h"
#include "text/tok.h"
#include "util/buf.h"

/* Check the FTS expression (NULL = no keyword query) and `plain`. */
static void check(const char *in, const char *fts, const char *plain)
{
    query_parsed q;
    query_parse(in, &q);
    if (fts == NULL && q.fts != NULL)
        fail_msg("query '%s': fts got %s, want NULL", in, q.fts);
    if (fts != NULL && (q.fts == NULL || strcmp(q.fts, fts) != 0))
        fail_msg("query '%s'\n  fts got:  %s\n  fts want: %s", in,
                 q.fts ? q.fts : "NULL", fts);
    assert_non_null(q.plain);
    if (plain && strcmp(q.plain, plain) != 0)
        fail_msg("query '%s': plain got '%s', want '%s'", in, q.plain, plain);
    query_free(&q);
}

static void test_empty(void **state)
{
    (void)state;
    check("", NULL, "");
    check("   \t\n ", NULL, "");
    check("!!! ... +++ ?", NULL, "");
    check("*", NULL, "");
    check("* ** -", NULL, "");
    check("\"\"", NULL, "");
    check("\"", NULL, "");
    check("[[ ]]", NULL, "");
    query_parsed q;
    query_parse(NULL, &q);
    assert_null(q.fts);
    assert_string_equal(q.plain, "");
    assert_int_equal(q.n_terms, 0);
    query_free(&q);
}

static void test_words_and_phrases(void **state)
{
    (void)state;
    check("hello world", "\"hello\" OR \"world\"", "hello world");
    check("  hello\u3000world ", "\"hello\" OR \"world\"", "hello world");
    check("\"quoted phrase\" word", "\"quoted phrase\" OR \"word\"",
          "quoted phrase word");
    /* unbalanced quote: the rest of the input is one phrase */
    check("x \"unbalanced phrase here", "\"x\" OR \"unbalanced phrase here\"",
          "x unbalanced phrase here");
    check("spaced-repetition", "\"spaced-repetition\"", "spaced-repetition");
    check("C++ node.js", "\"C++\" OR \"node.js\"", "C++ node.js");
    check("foo\"bar", "\"foo\"\"bar\"", "foo\"bar");
    /* "" closes the first phrase and opens a second */
    check("\"a \"\" b\"", "\"a \" OR \" b\"", "a   b");
    check("ab\xff" "cd", "\"ab\" OR \"cd\"", "ab cd");

    query_parsed q;
    query_parse("\"quoted phrase\" word pre*", &q);
    assert_int_equal(q.n_terms, 3);
    assert_int_equal(q.terms[0].kind, QUERY_PHRASE);
    assert_string_equal(q.terms[0].text, "quoted phrase");
    assert_int_equal(q.terms[1].kind, QUERY_WORD);
    assert_string_equal(q.terms[1].text, "word");
    assert_int_equal(q.terms[2].kind, QUERY_PREFIX);
    assert_string_equal(q.terms[2].text, "pre");
    query_free(&q);
}

static void test_exclusion(void **state)
{
    (void)state;
    check("foo -bar", "(\"foo\") NOT (\"bar\")", "foo");
    check("foo -\"bad phrase\" -baz", "(\"foo\") NOT (\"bad phrase\" OR \"baz\")", "foo");
    /* nothing to exclude from: exclusions alone are read as words */
    check("-only", "\"only\"", "only");
    check("-\"only phrase\"", "\"only phrase\"", "only phrase");
    check("-rf", "\"rf\"", "rf");
    /* a double dash is a command-line flag, not an exclusion */
    check("--force", "\"--force\"", "--force");
    check("git push --force", "\"git\" OR \"push\" OR \"--force\"", "git push --force");
    check("foo - bar", "\"foo\" OR \"bar\"", "foo bar");   /* lone '-' dropped */
    check("foo -pre*", "(\"foo\") NOT (\"pre\" *)", "foo");
    check("x-y -z", "(\"x-y\") NOT (\"z\")", "x-y");
    check("a -中文检索 数据", "(\"数据\") NOT (\"中文检索\")", "a 数据");

    query_parsed q;
    query_parse("foo -bar", &q);
    assert_int_equal(q.n_terms, 2);
    assert_int_equal(q.terms[1].negated, 1);
    assert_string_equal(q.terms[1].text, "bar");
    query_free(&q);
}

static void test_prefix(void **state)
{
    (void)state;
    check("prefi*", "\"prefi\" *", "prefi");
    check("ab*", "\"ab\" *", "ab");
    check("a*", "\"a\"", "a");            /* too short: plain word */
    check("abc***", "\"abc\" *", "abc");
    check("\"exact phr\"*", "\"exact phr\" *", "exact phr");
    check("foo*bar", "\"foo*bar\"", "foo*bar");
    check("é*", "\"é\"", "é");
    check("éé*", "\"éé\" *", "éé");
    check("+a*", "\"+a\"", "+a");        /* counted in token characters */
    check("\"x\"*", "\"x\"", "x");
    check("x.ab*", "\"x.ab\" *", "x.ab");
    check("中文*", "\"中文\" *", "中文");
    check("中*", "\"中\" *", "中");
}

static void test_wikilinks(void **state)
{
    (void)state;
    check("[[Daily Notes]]", "\"Daily\" OR \"Notes\"", "Daily Notes");
    check("see [[Daily Notes]] -[[Old Page]]",
          "(\"see\" OR \"Daily\" OR \"Notes\") NOT (\"Old Page\")",
          "see Daily Notes");
    check("[[Note|alias]]", "\"Note|alias\"", "Note|alias");
}

static void test_operators_and_stopwords(void **state)
{
    (void)state;
    check("AND OR NOT", "\"AND\" OR \"OR\" OR \"NOT\"", "AND OR NOT");
    check("cats AND dogs", "\"cats\" OR \"dogs\"", "cats AND dogs");
    check("NEAR(a b) col:x ^y", "\"NEAR(a\" OR \"b)\" OR \"col:x\" OR \"^y\"",
          "NEAR(a b) col:x ^y");
    check("how to install node", "\"install\" OR \"node\"", "how to install node");
    check("What's new?", "\"new?\"", "What's new?");
    check("the of", "\"the\" OR \"of\"", "the of");
    check("the \"of the\"", "\"of the\"", "the of the");  /* phrases never stop */

    query_parsed q;
    query_parse("how to install", &q);
    assert_int_equal(q.n_terms, 3);
    assert_int_equal(q.terms[0].stopword, 1);
    assert_int_equal(q.terms[1].stopword, 1);
    assert_int_equal(q.terms[2].stopword, 0);
    query_free(&q);
    query_parse("the to", &q);
    assert_int_equal(q.terms[0].stopword, 0);
    assert_int_equal(q.terms[1].stopword, 0);
    query_free(&q);
}

static void test_cjk(void **state)
{
    (void)state;
    check("中文检索", "\"中文\" OR \"文检\" OR \"检索\"", "中文检索");
    check("\"中文检索\"", "\"中文检索\"", "中文检索");
    check("Redis中文检索2024",
          "\"Redis\" OR \"中文\" OR \"文检\" OR \"检索\" OR \"2024\"",
          "Redis中文检索2024");
    check("中", "\"中\" *", "中");
    check("node.js中文", "\"node.js\" OR \"中文\"", "node.js中文");
    check("中，文", "\"中\" * OR \"文\" *", "中，文");
    check("한국어", "\"한국\" OR \"국어\"", "한국어");
    check("如何 使用", "\"如何\" OR \"使用\"", "如何 使用");
}

static void test_limits(void **state)
{
    (void)state;
    tbuf in = {0};
    for (int i = 0; i < 1000; i++)
        tbuf_printf(&in, "w%d ", i);
    for (int i = 0; i < 300; i++)
        tbuf_puts(&in, "中文检索系统");
    query_parsed q;
    query_parse(tbuf_cstr(&in), &q);
    assert_true(q.n_terms <= 64);
    assert_non_null(q.fts);
    query_free(&q);
    tbuf_free(&in);
}

/* ---- against SQLite ------------------------------------------------------- */

static const char *const docs[] = {
    /* 1 */ "Visit the cafe near the station.",
    /* 2 */ "She runs every morning; running is healthy.",
    /* 3 */ "中文检索系统的设计与实现",
    /* 4 */ "Node.js event loop and C++ templates",
    /* 5 */ "Spaced repetition with Anki: spaced-repetition works.",
    /* 6 */ "Crème brûlée recipe",
    /* 7 */ "データベース設計 and 한국어 문서",
    /* 8 */ "Straße in München",
};

static sqlite3 *make_db(void)
{
    sqlite3 *db;
    assert_int_equal(sqlite3_open(":memory:", &db), SQLITE_OK);
    assert_int_equal(tok_register_fts5(db), TROVE_OK);
    assert_int_equal(sqlite3_exec(db,
        "CREATE VIRTUAL TABLE t USING fts5(body, tokenize='trove')",
        NULL, NULL, NULL), SQLITE_OK);
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(db,
        "INSERT INTO t(rowid, body) VALUES (?1, ?2)", -1, &st, NULL), SQLITE_OK);
    for (size_t i = 0; i < sizeof docs / sizeof *docs; i++) {
        sqlite3_bind_int(st, 1, (int)i + 1);
        sqlite3_bind_text(st, 2, docs[i], -1, SQLITE_STATIC);
        assert_int_equal(sqlite3_step(st), SQLITE_DONE);
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    return db;
}

/* Parse `in`, run it, and compare the matching rowids ("1,3", "" for none,
 * "-" when the parser produced no FTS expression). */
static void check_match(sqlite3 *db, const char *in, const char *want)
{
    query_parsed q;
    query_parse(in, &q);
    tbuf got = {0};
    if (!q.fts) {
        tbuf_puts(&got, "-");
    } else {
        sqlite3_stmt *st;
        int rc = sqlite3_prepare_v2(db,
            "SELECT rowid FROM t WHERE t MATCH ?1 ORDER BY rowid", -1, &st, NULL);
        assert_int_equal(rc, SQLITE_OK);
        sqlite3_bind_text(st, 1, q.fts, -1, SQLITE_STATIC);
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
            if (got.len)
                tbuf_putc(&got, ',');
            tbuf_printf(&got, "%lld", (long long)sqlite3_column_int64(st, 0));
        }
        if (rc != SQLITE_DONE)
            fail_msg("query '%s' -> MATCH %s: SQL error %s", in, q.fts,
                     sqlite3_errmsg(db));
        sqlite3_finalize(st);
    }
    if (want && strcmp(tbuf_cstr(&got), want) != 0)
        fail_msg("query '%s' (MATCH %s)\n  got:  %s\n  want: %s", in,
                 q.fts ? q.fts : "NULL", tbuf_cstr(&got), want);
    tbuf_free(&got);
    query_free(&q);
}

static void test_sqlite_expected(void **state)
{
    (void)state;
    sqlite3 *db = make_db();
    check_match(db, "Café", "1");
    check_match(db, "CAFE", "1");
    check_match(db, "running", "2");
    check_match(db, "run", "2");
    check_match(db, "中文检索", "3");
    check_match(db, "\"中文检索\"", "3");
    check_match(db, "设计", "3");
    check_match(db, "中", "3");
    check_match(db, "检索的设计方法", "3");
    check_match(db, "node.js", "4");
    check_match(db, "NodeJS", "");
    check_match(db, "C++", "4");
    check_match(db, "nod*", "4");
    check_match(db, "creme brulee", "6");
    check_match(db, "spaced-repetition", "5");
    check_match(db, "\"spaced repetition\"", "5");
    check_match(db, "repet*", "5");
    check_match(db, "runs -cafe", "2");
    check_match(db, "the station -running", "1");
    check_match(db, "-cafe", "1");
    check_match(db, "データベース", "7");
    check_match(db, "한국어", "7");
    check_match(db, "strasse munchen", "8");
    check_match(db, "how do I visit the station", "1");
    check_match(db, "AND OR NOT", "4,7");
    check_match(db, "\"unbalanced", "");
    check_match(db, "\"running is", "2");
    check_match(db, "[[Spaced Repetition]]", "5");
    check_match(db, "-[[Spaced Repetition]] anki", "");
    check_match(db, "\"repetition with\"*", "5");
    sqlite3_close(db);
}

static void test_sqlite_nasty(void **state)
{
    (void)state;
    static const char *const nasty[] = {
        "\"", "\"\"", "\"\"\"", "'", "''", "\\", "\\\"", "(", ")", "()", "((x",
        "x)", "{body}: x", "body:x", "body : x", "-body:x", "x AND", "AND x",
        "NOT x", "x NOT", "x OR", "OR", "NEAR", "NEAR(x y, 3)", "x + y", "+",
        "^", "^x", "x*", "*x", "**", "* *", "-*", "-\"", "-\"\"", "--x",
        "- -", "x -", "\"x\"*", "\"x*\"", "x\"*", "[[", "]]", "[[x", "x]]",
        "-[[x", "-[[x]]", "-[[]]", "[[\"]]", "%", "_", "x:y:z", "a.b.c.",
        "...", ("\xef\xbb\xbf" "bom"), "\xc0\x80", "\xed\xa0\x80", "\xf4\x90\x80\x80",
        "\xe4\xb8", "中\"文", "中*", "中文*", "-中", "\u3000", "x\u00a0y",
        "\xe2\x80\x8b", "e\xcc\x81", "\xcc\x81", "😀", "😀*", "-😀 x",
        "a\tb\nc\rd", "x\x01y", "TRUE", "NULL", "rowid", "t", "MATCH",
        "x' OR 1=1 --", "\"a\" \"b\" -\"c\"", "-a -b -c", "x -\"", "x -[[",
    };
    sqlite3 *db = make_db();
    for (size_t i = 0; i < sizeof nasty / sizeof *nasty; i++)
        check_match(db, nasty[i], NULL);
    /* and a huge query */
    tbuf in = {0};
    for (int i = 0; i < 2000; i++)
        tbuf_printf(&in, "w%d -x%d \"p %d\" 中文%d ", i, i, i, i);
    check_match(db, tbuf_cstr(&in), NULL);
    tbuf_free(&in);
    sqlite3_close(db);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_empty),
        cmocka_unit_test(test_words_and_phrases),
        cmocka_unit_test(test_exclusion),
        cmocka_unit_test(test_prefix),
        cmocka_unit_test(test_wikilinks),
        cmocka_unit_test(test_operators_and_stopwords),
        cmocka_unit_test(test_cjk),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_sqlite_expected),
        cmocka_unit_test(test_sqlite_nasty),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
