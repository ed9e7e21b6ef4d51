/* Unit tests for the Chinese segmenter (cjk/seg, cjk/seg_dict): jieba's
 * cuts on known sentences, search-mode sub-words, traditional characters,
 * mixed scripts through tok_run and FTS5, user words, a dictionary compiled
 * from a tiny word list, and every kind of broken dictionary and input.
 * The real dictionary is $TROVE_ZH_DICT (set by CMake to the one the build
 * compiled); tests that need it skip when it is absent. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cjk/seg.h"
#include "cjk/seg_dict.h"
#include "text/grams.h"
#include "text/query.h"
#include "text/tok.h"
#include "util/buf.h"
#include "util/mem.h"

#define JIEBA_HMM "/usr/lib/python3/dist-packages/jieba/finalseg"

static seg *g_seg;     /* the real dictionary, opened once */

static const char *real_dict(void)
{
    const char *p = getenv("TROVE_ZH_DICT");
    return p && access(p, R_OK) == 0 ? p : NULL;
}

static seg *need_seg(void)
{
    if (!g_seg) {
        const char *p = real_dict();
        if (!p)
            return NULL;
        assert_int_equal(seg_open(p, NULL, &g_seg), TROVE_OK);
    }
    return g_seg;
}

#define SKIP_WITHOUT_DICT()                                        \
    do {                                                           \
        if (!need_seg()) {                                         \
            print_message("no compiled dictionary: skipped\n");    \
            skip();                                                \
        }                                                          \
    } while (0)

/* Tokens as "term@start-end" (a '+' before colocated ones), joined by
 * spaces; checks that offsets are in bounds on the way. */
typedef struct collect {
    tbuf out;
    size_t len, n;
} collect;

static int collect_cb(void *ctx, const char *t, size_t len, size_t s, size_t e, int flags)
{
    collect *c = ctx;
    assert_true(len > 0 && s < e && e <= c->len);
    c->n++;
    if (c->out.len < 4096) {
        if (c->out.len)
            tbuf_putc(&c->out, ' ');
        tbuf_printf(&c->out, "%s%.*s@%zu-%zu", flags & TOK_COLOCATED ? "+" : "", (int)len, t,
                    s, e);
    }
    return 0;
}

static char *cut_str(const seg *s, const char *text, int flags)
{
    collect c = {.len = strlen(text)};
    assert_int_equal(seg_cut(s, text, strlen(text), flags, &c, collect_cb), 0);
    return tbuf_detach(&c.out);
}

static void check_cut(const seg *s, const char *text, int flags, const char *want)
{
    char *got = cut_str(s, text, flags);
    assert_string_equal(got ? got : "", want);
    free(got);
}

/* Words only, "/"-joined (query mode), for the jieba comparisons. */
static char *words(const seg *s, const char *text)
{
    collect c = {.len = strlen(text)};
    assert_int_equal(seg_cut(s, text, strlen(text), TOK_SEG_QUERY, &c, collect_cb), 0);
    tbuf w = {0};
    const char *p = tbuf_cstr(&c.out);
    while (*p) {
        const char *at = strchr(p, '@');
        if (w.len)
            tbuf_putc(&w, '/');
        tbuf_append(&w, p, (size_t)(at - p));
        p = strchr(at, ' ');
        if (!p)
            break;
        p++;
    }
    tbuf_free(&c.out);
    return tbuf_detach(&w);
}

static void check_words(const char *text, const char *want)
{
    char *got = words(g_seg, text);
    assert_string_equal(got, want);
    free(got);
}

/* ---- the real dictionary --------------------------------------------------- */

/* Expected strings are jieba 0.42.1's lcut(text) (HMM on). */
static void test_jieba_cuts(void **state)
{
    (void)state;
    SKIP_WITHOUT_DICT();
    check_words("我是中国人", "我/是/中国/人");
    check_words("我来到北京清华大学", "我/来到/北京/清华大学");
    check_words("他来到了网易杭研大厦", "他/来到/了/网易/杭研/大厦");
    check_words("小明硕士毕业于中国科学院计算所", "小明/硕士/毕业/于/中国科学院/计算所");
    check_words("研究生命的起源", "研究/生命/的/起源");
    check_words("如何提高记忆保持力", "如何/提高/记忆/保持/力");
}

static void test_search_mode(void **state)
{
    (void)state;
    SKIP_WITHOUT_DICT();
    /* jieba's cut_for_search: 中华 华人 人民 共和 共和国 中华人民共和国 */
    check_cut(g_seg, "中华人民共和国", 0,
              "中华人民共和国@0-21 +中华@0-6 +华人@3-9 +人民@6-12 +共和@12-18 +共和国@12-21");
    check_cut(g_seg, "中华人民共和国", TOK_SEG_QUERY, "中华人民共和国@0-21");
}

static void test_traditional(void **state)
{
    (void)state;
    SKIP_WITHOUT_DICT();
    /* Looked up, and indexed, in simplified form: both spellings meet. */
    check_words("西班牙將關島割讓給美國", "西班牙/将/关岛/割让/给/美国");
    check_words("西班牙将关岛割让给美国", "西班牙/将/关岛/割让/给/美国");
    /* A character valid in both scripts keeps its simplified words. */
    check_words("著名的学者", "著名/的/学者");
}

static void test_other_scripts(void **state)
{
    (void)state;
    SKIP_WITHOUT_DICT();
    /* Kana in the run: Japanese, character bigrams. */
    check_cut(g_seg, "東京都に住む", 0,
              "東京@0-6 京都@3-9 都に@6-12 に住@9-15 住む@12-18");
    /* Hangul: bigrams; a lone syllable is itself. */
    check_cut(g_seg, "한국어", 0, "한국@0-6 국어@3-9");
    check_cut(g_seg, "중", 0, "중@0-3");
    /* Han next to Hangul in one run: each piece its own way. */
    check_cut(g_seg, "中国한국", TOK_SEG_QUERY, "中国@0-6 한국@6-12");
    /* CJK extension A is outside jieba's range: bigrams. */
    check_cut(g_seg, "\xE3\x90\x80\xE3\x90\x81", 0, "\xE3\x90\x80\xE3\x90\x81@0-6");
}

/* The segmenter behind tok_run, as the CLI installs it (lazily). */
static int seg_segment(void *ud, const char *run, size_t len, int flags, void *ectx,
                       tok_emit_fn emit)
{
    return seg_cut(ud, run, len, flags, ectx, emit);
}

static const char *seg_ver(void *ud)
{
    return seg_version(ud);
}

static void install(void)
{
    tok_segmenter ts = {g_seg, seg_segment, seg_ver, NULL};
    tok_set_cjk_segmenter(&ts);
}

static char *tok_str(const char *text, int query)
{
    tok_opts o = {.stem = 1, .query = query};
    collect c = {.len = strlen(text)};
    assert_int_equal(tok_run_flags(&o, text, strlen(text), &c, collect_cb), 0);
    return tbuf_detach(&c.out);
}

static void check_tok(const char *text, int query, const char *want)
{
    char *got = tok_str(text, query);
    assert_string_equal(got ? got : "", want);
    free(got);
}

static void test_mixed_scripts(void **state)
{
    (void)state;
    SKIP_WITHOUT_DICT();
    install();
    check_tok("用Rust写的CLI工具", 1, "用@0-3 rust@3-7 写@7-10 的@10-13 cli@13-16 工具@16-22");
    check_tok("GPT-4的上下文长度", 1, "gpt@0-3 4@4-5 的@5-8 上下文@8-17 长度@17-23");
    /* Full-width Latin and digits fold to half-width; compatibility
     * ideographs (U+F9xx) to the unified ones. */
    check_tok("ＧＰＴ－４的", 1, "gpt@0-9 4@12-15 的@15-18");
    /* U+F900 -> U+8C48 豈, traditional, -> 岂 */
    check_tok("\xEF\xA4\x80", 1, "岂@0-3");
    assert_non_null(strstr(tok_version(), "jieba"));
    tok_set_cjk_segmenter(NULL);
    assert_null(strstr(tok_version(), "jieba"));
}

static void test_fts5_colocated(void **state)
{
    (void)state;
    SKIP_WITHOUT_DICT();
    install();
    sqlite3 *db;
    assert_int_equal(sqlite3_open(":memory:", &db), SQLITE_OK);
    assert_int_equal(tok_register_fts5(db), TROVE_OK);
    assert_int_equal(sqlite3_exec(db,
        "CREATE VIRTUAL TABLE t USING fts5(body, tokenize='trove');"
        "INSERT INTO t(rowid, body) VALUES (1, '中华人民共和国成立了'), (2, '人民日报'),"
        " (3, '研究生命的起源'), (4, '他是研究生');", NULL, NULL, NULL), SQLITE_OK);
    static const struct { const char *q; const char *want; } cases[] = {
        {"人民", "1,2"},            /* a word inside a long word, and alone */
        {"共和国", "1"},
        {"\"中华人民共和国 成立\"", "1"},   /* a phrase across the long word */
        {"研究生", "4"},            /* not matched by 研究/生命 */
        {"生命", "3"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        sqlite3_stmt *s;
        assert_int_equal(sqlite3_prepare_v2(db, "SELECT group_concat(rowid) FROM "
                         "(SELECT rowid FROM t WHERE t MATCH ?1 ORDER BY rowid)", -1, &s, NULL),
                         SQLITE_OK);
        sqlite3_bind_text(s, 1, cases[k].q, -1, SQLITE_STATIC);
        assert_int_equal(sqlite3_step(s), SQLITE_ROW);
        const char *got = (const char *)sqlite3_column_text(s, 0);
        if (!got || strcmp(got, cases[k].want) != 0)
            fail_msg("MATCH %s: got %s, want %s", cases[k].q, got ? got : "nothing",
                     cases[k].want);
        sqlite3_finalize(s);
    }
    /* Highlighting uses the exact byte offsets; a word found inside a long
     * word shares its position, and FTS5 highlights that whole word. */
    sqlite3_stmt *s;
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT highlight(t, 0, '[', ']') FROM t "
                     "WHERE t MATCH '共和国'", -1, &s, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(s), SQLITE_ROW);
    assert_string_equal((const char *)sqlite3_column_text(s, 0), "[中华人民共和国]成立了");
    sqlite3_finalize(s);
    sqlite3_close(db);
    tok_set_cjk_segmenter(NULL);
}

static void check_query(const char *in, const char *want)
{
    query_parsed q;
    query_parse(in, &q);
    assert_string_equal(q.fts ? q.fts : "(null)", want);
    query_free(&q);
}

static void test_query_units(void **state)
{
    (void)state;
    SKIP_WITHOUT_DICT();
    install();
    /* Words OR-ed, Chinese function words dropped while others remain. */
    check_query("如何提高记忆保持力", "\"提高\" OR \"记忆\" OR \"保持\" OR \"力\"");
    check_query("数据库的性能", "\"数据库\" OR \"性能\"");
    check_query("的", "\"的\" *");
    check_query("什么是", "\"什么\" OR \"是\"");
    /* Traditional spelling: units keep the user's text, FTS5 folds it. */
    check_query("關島", "\"關島\"");
    /* A CJK run of one character stays a prefix term (as for bigrams). */
    check_query("用Rust写的CLI工具", "\"用\" * OR \"Rust\" OR \"写\" OR \"CLI\" OR \"工具\"");
    /* Question words, open families included (哪一年, 多少年), in either
     * script; names and words that merely start like them stay. */
    check_query("元世祖在哪一年南征占城", "\"元世祖\" OR \"南征\" OR \"占城\"");
    check_query("元世祖於何時南征", "\"元世祖\" OR \"南征\"");
    check_query("几何学有多少年历史", "\"几何学\" OR \"有\" OR \"年\" OR \"历史\"");
    check_query("哪吒是谁", "\"哪吒\"");
    assert_true(query_zh_function_word("几十", strlen("几十")));
    assert_false(query_zh_function_word("几内亚", strlen("几内亚")));
    tok_set_cjk_segmenter(NULL);
}

/* ---- the bigram view (text/grams) ---------------------------------------------- */

static void gram_word(void *ctx, size_t idx, const char *w, size_t len)
{
    tbuf *b = ctx;
    tbuf_printf(b, "%s%zu:%.*s", b->len ? " " : "", idx, (int)len, w);
}

static void gram_gram(void *ctx, const char *g, size_t len, size_t wa, size_t wb)
{
    tbuf *b = ctx;
    if (wa == wb)
        tbuf_printf(b, " %.*s@%zu", (int)len, g, wa);
    else
        tbuf_printf(b, " %.*s@%zu-%zu", (int)len, g, wa, wb);
}

static void check_grams(const char *text, const char *want)
{
    tbuf b = {0};
    grams_cb cb = {&b, gram_word, gram_gram};
    grams_run(text, strlen(text), &cb);
    assert_string_equal(tbuf_cstr(&b), want);
    tbuf_free(&b);
}

static void test_grams(void **state)
{
    (void)state;
    /* Without a word segmenter every run is bigrams already: nothing. */
    tok_set_cjk_segmenter(NULL);
    check_grams("东方艺术博物馆", "");
    SKIP_WITHOUT_DICT();
    install();
    /* Words, then adjacent characters with the words they come from; the
     * bigrams that span two words (术博) tie the words' order. */
    check_grams("东方艺术博物馆", "0:东方艺术 1:博物馆 东方@0 方艺@0 艺术@0 术博@0-1 博物@1 物馆@1");
    /* Traditional text gives the same (simplified) bigrams. */
    check_grams("東方藝術博物館", "0:东方艺术 1:博物馆 东方@0 方艺@0 艺术@0 术博@0-1 博物@1 物馆@1");
    /* Punctuation and other scripts end a sequence; words are numbered on. */
    check_grams("城市东方，艺术", "0:城市 1:东方 城市@0 市东@0-1 东方@1 2:艺术 艺术@2");
    check_grams("用Rust写的CLI工具", "0:用 1:写 2:的 写的@1-2 3:工具 工具@3");
    /* Kana makes a run bigrams: skipped. */
    check_grams("東京都に住む", "");
    tok_set_cjk_segmenter(NULL);
}

/* ---- bad input ------------------------------------------------------------------ */

static void cut_all_modes(const char *text, size_t len, size_t *n_out)
{
    for (int q = 0; q <= 1; q++) {
        collect c = {.len = len};
        assert_int_equal(seg_cut(g_seg, text, len, q ? TOK_SEG_QUERY : 0, &c, collect_cb), 0);
        tbuf_free(&c.out);
        if (n_out && q)
            *n_out = c.n;
    }
}

static void test_bad_input(void **state)
{
    (void)state;
    SKIP_WITHOUT_DICT();
    /* One megabyte of Han text without punctuation: a long chain of words. */
    static const char *const words3[] = {"中国", "研究", "的", "生命", "数据库", "啊"};
    tbuf big = {0};
    for (size_t k = 0; big.len < (1u << 20); k++)
        tbuf_puts(&big, words3[(k * 7 + k / 3) % 6]);
    size_t n = 0;
    cut_all_modes(big.data, big.len, &n);
    assert_true(n > big.len / 12);
    /* A long run of one character, known and unknown to the dictionary
     * (the HMM sees all of it as one piece). */
    for (int which = 0; which < 2; which++) {
        tbuf one = {0};
        while (one.len < (1u << 19))
            tbuf_puts(&one, which ? "啊" : "\xE9\xBE\x98");   /* 啊, 龘 */
        cut_all_modes(one.data, one.len, NULL);
        tbuf_free(&one);
    }
    tbuf_free(&big);
    /* The run tok hands over is valid UTF-8, but seg_cut is public: invalid
     * bytes, lone surrogates (CESU-8), truncation and emoji ZWJ sequences
     * must only be skipped. */
    static const char *const bad[] = {
        "中\xFF国\xC0\x80人", "\xED\xA0\x80中\xED\xBF\xBF国", "中国\xE4\xB8",
        "中\xF0\x9F\x91\xA8\xE2\x80\x8D\xF0\x9F\x91\xA9\xE2\x80\x8D\xF0\x9F\x91\xA7国",
        "\xE4", "",
    };
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++)
        cut_all_modes(bad[k], strlen(bad[k]), NULL);
}

/* ---- a dictionary compiled here -------------------------------------------------- */

static char tmpdir[64];

static char *tmp_file(const char *name, const char *text)
{
    tbuf p = {0};
    tbuf_printf(&p, "%s/%s", tmpdir, name);
    if (text) {
        FILE *f = fopen(tbuf_cstr(&p), "wb");
        assert_non_null(f);
        fputs(text, f);
        fclose(f);
    }
    return tbuf_detach(&p);
}

static int setup_tmp(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/trove-seg-XXXXXX");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown_tmp(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0)
        return -1;
    seg_free(g_seg);
    g_seg = NULL;
    return 0;
}

static void test_compile_tiny(void **state)
{
    (void)state;
    if (access(JIEBA_HMM "/prob_emit.py", R_OK) != 0)
        skip();
    char *txt = tmp_file("tiny.txt",
                         "中国 1000 ns\n中国人 500 n\n人民 800 n\n研究 900 v\n研究生 300 n\n"
                         "生命 700 n\nAT&T 3 nz\n中国 1200 ns\n\n");
    char *out = tmp_file("tiny.dict", NULL);
    assert_int_equal(seg_dict_compile(txt, JIEBA_HMM, NULL, NULL, out), TROVE_OK);
    seg *s;
    assert_int_equal(seg_open(out, NULL, &s), TROVE_OK);
    check_cut(s, "中国人民", TOK_SEG_QUERY, "中国@0-6 人民@6-12");
    check_cut(s, "研究生命", TOK_SEG_QUERY, "研究@0-6 生命@6-12");
    check_cut(s, "中国人", 0, "中国人@0-9 +中国@0-6");
    seg_free(s);

    /* Errors name the file and line. */
    char *bad = tmp_file("bad.txt", "中国 1000\n人民 lots\n");
    assert_int_equal(seg_dict_compile(bad, JIEBA_HMM, NULL, NULL, out), TROVE_EPARSE);
    assert_non_null(strstr(trove_errmsg(), "bad.txt:2"));
    char *nohmm = tmp_file("nohmm", NULL);
    assert_int_not_equal(seg_dict_compile(txt, nohmm, NULL, NULL, out), TROVE_OK);
    assert_non_null(strstr(trove_errmsg(), "nohmm/prob_start.py"));
    free(txt), free(out), free(bad), free(nohmm);
}

static void copy_file(const char *from, const char *to, long truncate_to, long flip_at)
{
    FILE *f = fopen(from, "rb"), *g = fopen(to, "wb");
    assert_non_null(f);
    assert_non_null(g);
    long pos = 0;
    int ch;
    while ((ch = fgetc(f)) != EOF && (truncate_to < 0 || pos < truncate_to)) {
        fputc(pos == flip_at ? ch ^ 0x40 : ch, g);
        pos++;
    }
    fclose(f);
    fclose(g);
}

static void test_broken_dictionary(void **state)
{
    (void)state;
    SKIP_WITHOUT_DICT();
    const char *real = real_dict();
    seg *s = NULL;
    char *missing = tmp_file("missing.dict", NULL);
    assert_int_equal(seg_open(missing, NULL, &s), TROVE_ENOENT);
    assert_non_null(strstr(trove_errmsg(), missing));
    static const struct { long trunc, flip; const char *why; } cases[] = {
        {100, -1, "truncated"},
        {-1, 0, "bad magic"},
        {-1, 5000000, "checksum"},
        {-1, 12, "version"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        char *p = tmp_file("broken.dict", NULL);
        copy_file(real, p, cases[k].trunc, cases[k].flip);
        assert_int_equal(seg_open(p, NULL, &s), TROVE_ECORRUPT);
        if (!strstr(trove_errmsg(), cases[k].why) || !strstr(trove_errmsg(), p))
            fail_msg("%s: %s", cases[k].why, trove_errmsg());
        /* mapped without the payload's checksum, a damaged payload opens
         * and seg_dict_verify finds it; every other case is refused */
        seg_dict *dm = NULL;
        int payload = strcmp(cases[k].why, "checksum") == 0;
        assert_int_equal(seg_dict_map(p, &dm), payload ? TROVE_OK : TROVE_ECORRUPT);
        if (payload) {
            assert_int_equal(seg_dict_verify(dm, p), TROVE_ECORRUPT);
            assert_non_null(strstr(trove_errmsg(), "checksum"));
            assert_non_null(strstr(trove_errmsg(), p));
            seg_dict_close(dm);
        }
        free(p);
    }
    char *garbage = tmp_file("garbage.dict", "not a dictionary\n");
    assert_int_equal(seg_open(garbage, NULL, &s), TROVE_ECORRUPT);
    assert_null(s);
    free(missing);
    free(garbage);
}

static void test_user_dictionary(void **state)
{
    (void)state;
    SKIP_WITHOUT_DICT();
    const char *real = real_dict();
    char *user = tmp_file("user.txt", "\xEF\xBB\xBF# my words\n记忆保持力\n杭研大厦 5 nz\n\n");
    seg *s;
    assert_int_equal(seg_open(real, user, &s), TROVE_OK);
    check_cut(s, "如何提高记忆保持力", TOK_SEG_QUERY, "如何@0-6 提高@6-12 记忆保持力@12-27");
    check_cut(s, "网易杭研大厦", TOK_SEG_QUERY, "网易@0-6 杭研大厦@6-18");
    /* The user words change the recorded version. */
    assert_string_not_equal(seg_version(s), seg_version(g_seg));
    seg_free(s);
    char *bad = tmp_file("user-bad.txt", "好词\nhello 3\n");
    assert_int_equal(seg_open(real, bad, &s), TROVE_EPARSE);
    assert_non_null(strstr(trove_errmsg(), "user-bad.txt:2"));
    char *missing = tmp_file("no-user.txt", NULL);
    assert_int_not_equal(seg_open(real, missing, &s), TROVE_OK);
    assert_non_null(strstr(trove_errmsg(), "no-user.txt"));
    free(user), free(bad), free(missing);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_jieba_cuts),
        cmocka_unit_test(test_search_mode),
        cmocka_unit_test(test_traditional),
        cmocka_unit_test(test_other_scripts),
        cmocka_unit_test(test_mixed_scripts),
        cmocka_unit_test(test_fts5_colocated),
        cmocka_unit_test(test_query_units),
        cmocka_unit_test(test_grams),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_compile_tiny),
        cmocka_unit_test(test_broken_dictionary),
        cmocka_unit_test(test_user_dictionary),
    };
    return cmocka_run_group_tests(tests, setup_tmp, teardown_tmp);
}
