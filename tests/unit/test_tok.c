/* Unit tests for the tokenizer (tok_run, CJK segmentation, FTS5 "trove"). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "testutil.h"
#include "text/tok.h"
#include "util/esc.h"
#include "util/buf.h"

/* Tokens rendered as "text@start-end" joined by spaces. */
typedef struct collect {
    tbuf out;
    int n;
    int stop_after;   /* return 7 from the callback after this many */
} collect;

static int collect_cb(void *ctx, const char *t, size_t len, size_t s, size_t e)
{
    collect *c = ctx;
    if (c->out.len)
        tbuf_putc(&c->out, ' ');
    tbuf_printf(&c->out, "%.*s@%zu-%zu", (int)len, t, s, e);
    c->n++;
    return c->stop_after && c->n >= c->stop_after ? 7 : 0;
}

static void check_tokens(int stem, const char *text, const char *want)
{
    tok_opts o = {.stem = stem};
    collect c = {0};
    int rc = tok_run(&o, text, strlen(text), &c, collect_cb);
    assert_int_equal(rc, 0);
    if (strcmp(tbuf_cstr(&c.out), want) != 0)
        fail_msg("tokens of '%s'\n  got:  %s\n  want: %s", text,
                 tbuf_cstr(&c.out), want);
    tbuf_free(&c.out);
}

static void test_ascii(void **state)
{
    (void)state;
    check_tokens(0, "Hello, World! foo_bar x2 ", "hello@0-5 world@7-12 foo@14-17 bar@18-21 x2@22-24");
    check_tokens(0, "", "");
    check_tokens(0, "  ...!!  ", "");
    check_tokens(0, "C++ node.js", "c@0-1 node@4-8 js@9-11");
    check_tokens(0, "ABCxyz09", "abcxyz09@0-8");
}

static void test_accents(void **state)
{
    (void)state;
    check_tokens(0, "Café naïve ÉCOLE", "cafe@0-5 naive@6-12 ecole@13-19");
    /* decomposed e + combining acute stays inside the word */
    check_tokens(0, "e\xcc\x81" "cole", "ecole@0-7");
    /* a stray combining mark alone yields nothing */
    check_tokens(0, " \xcc\x81 ", "");
    check_tokens(0, "Straße STRASSE", "strasse@0-7 strasse@8-15");
    check_tokens(0, "ﬁne", "fine@0-5");   /* ligature via NFKD */
}

static void test_greek_cyrillic(void **state)
{
    (void)state;
    check_tokens(0, "Ελληνικά ΣΟΦΊΑ", "ελληνικα@0-16 σοφια@17-27");
    check_tokens(0, "Привет, Мир", "привет@0-12 мир@14-20");
    /* stemming is for Latin script only */
    check_tokens(1, "книги running", "книги@0-10 run@11-18");
}

static void test_cjk(void **state)
{
    (void)state;
    check_tokens(0, "中文检索系统",
                 "中文@0-6 文检@3-9 检索@6-12 索系@9-15 系统@12-18");
    check_tokens(0, "中", "中@0-3");
    check_tokens(0, "中，文", "中@0-3 文@6-9");   /* fullwidth comma separates */
    check_tokens(0, "Redis中文检索2024",
                 "redis@0-5 中文@5-11 文检@8-14 检索@11-17 2024@17-21");
    check_tokens(0, "データ", "デー@0-6 ータ@3-9");
    check_tokens(0, "한국어 문서", "한국@0-6 국어@3-9 문서@10-16");
    check_tokens(0, "漢字・かな", "漢字@0-6 かな@9-15");
    /* combining voiced mark stays with its kana and is composed (NFKC) */
    check_tokens(0, "か\xe3\x82\x99き", "がき@0-9");
    assert_true(tok_is_cjk(0x4E2D));
    assert_true(tok_is_cjk(0x3042));
    assert_true(tok_is_cjk(0x30AB));
    assert_true(tok_is_cjk(0xD55C));
    assert_true(tok_is_cjk(0x20000));
    assert_false(tok_is_cjk(0x3001));   /* 、 */
    assert_false(tok_is_cjk(0x30FB));   /* ・ */
    assert_false(tok_is_cjk('a'));
    assert_false(tok_is_cjk(0xFF0C));   /* ， */
}

static void test_emoji_and_invalid(void **state)
{
    (void)state;
    check_tokens(0, "I\xe2\x9d\xa4\xef\xb8\x8f" "pizza \xf0\x9f\x98\x80" "emoji",
                 "i@0-1 pizza@7-12 emoji@17-22");
    check_tokens(0, "ab\xff" "cd\xc3", "ab@0-2 cd@3-5");
    check_tokens(0, "a\xc0\xaf" "b", "a@0-1 b@3-4");          /* overlong */
    check_tokens(0, "x\xed\xa0\x80y", "x@0-1 y@4-5");        /* surrogate */
    check_tokens(0, "x\xf4\x90\x80\x80y", "x@0-1 y@5-6");    /* > U+10FFFF */
    check_tokens(0, "\xe4\xb8", "");                          /* truncated */
}

static void test_stemming(void **state)
{
    (void)state;
    check_tokens(1, "running connections runs", "run@0-7 connect@8-19 run@20-24");
    check_tokens(1, "h264 2024 x86s", "h264@0-4 2024@5-9 x86s@10-14");
    check_tokens(1, "Cafés", "cafe@0-6");
    check_tokens(0, "running", "running@0-7");
}

static void test_long_words(void **state)
{
    (void)state;
    char word[201];
    memset(word, 'A', 200);
    word[200] = '\0';
    char want[128];
    memset(want, 'a', 64);
    snprintf(want + 64, sizeof want - 64, "@0-200");
    check_tokens(1, word, want);

    /* non-ASCII: cut at a character boundary, at most 64 bytes */
    tbuf in = {0};
    for (int i = 0; i < 100; i++)
        tbuf_puts(&in, "é");
    tbuf exp = {0};
    for (int i = 0; i < 64; i++)
        tbuf_putc(&exp, 'e');
    tbuf_puts(&exp, "@0-200");
    check_tokens(1, tbuf_cstr(&in), tbuf_cstr(&exp));
    tbuf_reset(&in);
    tbuf_reset(&exp);
    for (int i = 0; i < 100; i++)
        tbuf_puts(&in, "я");
    for (int i = 0; i < 32; i++)
        tbuf_puts(&exp, "я");
    tbuf_puts(&exp, "@0-200");
    check_tokens(1, tbuf_cstr(&in), tbuf_cstr(&exp));
    tbuf_free(&in);
    tbuf_free(&exp);
}

static void test_stop(void **state)
{
    (void)state;
    tok_opts o = {0};
    collect c = {.stop_after = 2};
    const char *t = "one two three 中文检索";
    assert_int_equal(tok_run(&o, t, strlen(t), &c, collect_cb), 7);
    assert_string_equal(tbuf_cstr(&c.out), "one@0-3 two@4-7");
    tbuf_free(&c.out);
    collect d = {.stop_after = 4};
    assert_int_equal(tok_run(&o, t, strlen(t), &d, collect_cb), 7);
    assert_string_equal(tbuf_cstr(&d.out), "one@0-3 two@4-7 three@8-13 中文@14-20");
    tbuf_free(&d.out);
}

/* A segmenter that emits the whole run, plus one bogus out-of-range term
 * that tok must ignore. */
static int whole_run(void *ud, const char *run, size_t len, int flags, void *ectx,
                     tok_emit_fn emit)
{
    (void)flags;
    (*(int *)ud)++;
    int rc = emit(ectx, run, len, 0, len, 0);
    if (rc)
        return rc;
    return emit(ectx, run, len, 0, len + 5, 0);
}

static void test_segmenter_hook(void **state)
{
    (void)state;
    int calls = 0;
    tok_segmenter seg = {&calls, whole_run, NULL, NULL};
    tok_set_cjk_segmenter(&seg);
    check_tokens(0, "ab 中文检索 cd", "ab@0-2 中文检索@3-15 cd@16-18");
    tok_set_cjk_segmenter(NULL);
    assert_int_equal(calls, 1);
    check_tokens(0, "中文检", "中文@0-6 文检@3-9");

    /* skip_cjk: CJK runs make no tokens and never reach the segmenter. */
    tok_set_cjk_segmenter(&seg);
    tok_opts o = {.skip_cjk = 1};
    collect c = {0};
    const char *text = "ab 中文检索 cd東京に";
    assert_int_equal(tok_run(&o, text, strlen(text), &c, collect_cb), 0);
    assert_string_equal(tbuf_cstr(&c.out), "ab@0-2 cd@16-18");
    tbuf_free(&c.out);
    tok_set_cjk_segmenter(NULL);
    assert_int_equal(calls, 1);
    assert_true(tok_has_cjk(text, strlen(text)));
    assert_false(tok_has_cjk("ab cd", 5));
}

/* ---- FTS5 ---------------------------------------------------------------- */

static sqlite3 *open_db(const char *tokenize)
{
    sqlite3 *db;
    assert_int_equal(sqlite3_open(":memory:", &db), SQLITE_OK);
    assert_int_equal(tok_register_fts5(db), TROVE_OK);
    char sql[256];
    snprintf(sql, sizeof sql,
             "CREATE VIRTUAL TABLE t USING fts5(body, tokenize='%s')", tokenize);
    char *err = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK)
        fail_msg("%s: %s", sql, err);
    return db;
}

static void exec_ok(sqlite3 *db, const char *sql)
{
    char *err = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK)
        fail_msg("%s: %s", sql, err);
}

/* All highlight() results of a MATCH, joined by '|'. */
static void check_highlight(sqlite3 *db, const char *match, const char *want)
{
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(db,
        "SELECT highlight(t, 0, '[', ']') FROM t WHERE t MATCH ?1 ORDER BY rowid",
        -1, &st, NULL), SQLITE_OK);
    sqlite3_bind_text(st, 1, match, -1, SQLITE_STATIC);
    tbuf got = {0};
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (got.len)
            tbuf_putc(&got, '|');
        tbuf_puts(&got, (const char *)sqlite3_column_text(st, 0));
    }
    if (rc != SQLITE_DONE)
        fail_msg("MATCH %s: %s", match, sqlite3_errmsg(sqlite3_db_handle(st)));
    sqlite3_finalize(st);
    if (strcmp(tbuf_cstr(&got), want) != 0)
        fail_msg("MATCH %s\n  got:  %s\n  want: %s", match, tbuf_cstr(&got), want);
    tbuf_free(&got);
}

/* A tape offered on the thread stands in for tokenizing a text equal to one
 * of its texts (document mode only); any other text is tokenized. The tape
 * here is made to lie ("zebra" recorded with the tokens of "apples") so the
 * test can tell a replay from a tokenizer run. */
static void test_fts5_tape_replay(void **state)
{
    (void)state;
    tok_tape t = {0};
    tok_tape_record(&t, "Running dogs", 12);
    assert_int_equal(t.n_texts, 1);
    assert_int_equal(t.texts[0].n, 2);
    assert_memory_equal(t.bytes + t.toks[0].off, "run", 3);
    assert_int_equal(t.toks[1].start, 8);
    assert_int_equal(t.toks[1].end, 12);
    tok_tape_free(&t);

    sqlite3 *db = open_db("trove");
    tok_tape_record(&t, "apples", 6);
    t.texts[0].text = "zebra";
    t.texts[0].len = 5;
    tok_tape_offer(&t);
    exec_ok(db, "INSERT INTO t(rowid, body) VALUES (1, 'zebra'), (2, 'zebras run')");
    tok_tape_offer(NULL);
    exec_ok(db, "INSERT INTO t(rowid, body) VALUES (3, 'zebra')");
    tok_tape_free(&t);
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT group_concat(rowid) FROM t WHERE t MATCH ?1",
                                        -1, &st, NULL), SQLITE_OK);
    static const char *const q[][2] = {{"apple", "1"}, {"zebra", "2,3"}, {"run", "2"}};
    for (size_t i = 0; i < sizeof q / sizeof *q; i++) {
        sqlite3_bind_text(st, 1, q[i][0], -1, SQLITE_STATIC);
        assert_int_equal(sqlite3_step(st), SQLITE_ROW);
        assert_string_equal((const char *)sqlite3_column_text(st, 0), q[i][1]);
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
}

/* A recycled tape records the next text as a fresh one would, on its old
 * arrays when they are small enough, else on new ones. */
static void test_tape_recycle(void **state)
{
    (void)state;
    tok_tape fresh = {0}, t = {0};
    tok_tape_record(&fresh, "zebras run fast", 15);
    tok_tape_record(&t, "Running dogs and many other words", 33);
    tok_tape_tok *toks = t.toks;
    tok_tape_recycle(&t, 64 << 10);
    assert_int_equal(t.n_texts + t.n_toks + t.n_bytes, 0);
    assert_ptr_equal(t.toks, toks);   /* kept */
    tok_tape_record(&t, "zebras run fast", 15);
    assert_int_equal(t.n_texts, 1);
    assert_int_equal(t.n_toks, fresh.n_toks);
    assert_int_equal(t.n_bytes, fresh.n_bytes);
    assert_memory_equal(t.bytes, fresh.bytes, fresh.n_bytes);
    assert_memory_equal(t.toks, fresh.toks, fresh.n_toks * sizeof *t.toks);
    tok_tape_recycle(&t, 0);   /* too large to keep: freed */
    assert_null(t.toks);
    assert_null(t.bytes);
    assert_null(t.texts);
    tok_tape_record(&t, "zebras run fast", 15);
    assert_int_equal(t.n_toks, fresh.n_toks);
    tok_tape_free(&t);
    tok_tape_free(&fresh);
}

static void test_fts5_offsets(void **state)
{
    (void)state;
    sqlite3 *db = open_db("trove");
    exec_ok(db, "INSERT INTO t(rowid, body) VALUES "
                "(1, 'Le Café est ouvert, running fast.'),"
                "(2, 'Redis中文检索2024 works'),"
                "(3, 'Straße und STRASSE')");
    check_highlight(db, "\"cafe\"", "Le [Café] est ouvert, running fast.");
    check_highlight(db, "\"runs\"", "Le Café est ouvert, [running] fast.");
    check_highlight(db, "\"检索\"", "Redis中文[检索]2024 works");
    check_highlight(db, "\"中文检索\"", "Redis[中文检索]2024 works");
    check_highlight(db, "\"2024\"", "Redis中文检索[2024] works");
    check_highlight(db, "\"strasse\"", "[Straße] und [STRASSE]");
    check_highlight(db, "\"caf\" *", "Le [Café] est ouvert, running fast.");
    sqlite3_close(db);

    db = open_db("trove nostem");
    exec_ok(db, "INSERT INTO t(rowid, body) VALUES (1, 'running'), (2, 'runs')");
    check_highlight(db, "\"running\"", "[running]");
    sqlite3_close(db);

    /* an unknown argument is an error, not silently ignored */
    assert_int_equal(sqlite3_open(":memory:", &db), SQLITE_OK);
    assert_int_equal(tok_register_fts5(db), TROVE_OK);
    assert_int_not_equal(sqlite3_exec(db,
        "CREATE VIRTUAL TABLE t USING fts5(body, tokenize='trove bogus')",
        NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
}

/* ---- threads: one stemmer and cache per thread --------------------------- */

static const char thread_text[] =
    "Running connections, generously configured databases; nationalization "
    "of 中文检索 and Cafés. The runner runs quickly through repeated runs.";

static void *thread_main(void *arg)
{
    tok_opts o = {.stem = 1};
    for (int r = 0; r < 200; r++) {
        collect c = {0};
        tok_run(&o, thread_text, sizeof thread_text - 1, &c, collect_cb);
        int same = strcmp(tbuf_cstr(&c.out), (const char *)arg) == 0;
        tbuf_free(&c.out);
        if (!same)
            return (void *)1;
    }
    return NULL;
}

static void test_threads(void **state)
{
    (void)state;
    tok_opts o = {.stem = 1};
    collect ref = {0};
    tok_run(&o, thread_text, sizeof thread_text - 1, &ref, collect_cb);
    assert_non_null(strstr(tbuf_cstr(&ref.out), "run@0-7 connect@8-19"));
    pthread_t th[4];
    for (int i = 0; i < 4; i++)
        assert_int_equal(pthread_create(&th[i], NULL, thread_main, ref.out.data), 0);
    for (int i = 0; i < 4; i++) {
        void *ret;
        pthread_join(th[i], &ret);
        assert_null(ret);
    }
    tbuf_free(&ref.out);
}

/* ---- stem_only: the stemmer keeps a word's first byte ----------------------- */

/* Words of every shape Snowball English treats specially (its exception
 * lists, y -> i, suffixes of steps 1-5), then generated ones: more distinct
 * words than the stem cache's first size, so the run crosses its growth. */
static const char stem_words[] =
    "dying lying tying skies skis ugly early only singly idly gently news howe atlas "
    "cosmos bias andes inning innings outing outings canning cannings herring herrings "
    "earring earrings proceed exceed succeed generously communism arsenal yelling "
    "Yesterday 'tis ties cries cry by happy conditional rational hopeful goodness "
    "électricité façades Œuvres";
static const char *const stem_roots[] = {
    "connect", "relat", "hop", "run", "general", "nation", "cry", "happ", "electr", "form",
    "organ", "univers", "emerg", "past", "later", "sens", "adjust", "depend", "communic",
    "activ", "valu", "argu", "abl", "fall", "control", "engin", "comput", "design", "stat",
    "posit", "lin", "link", "intern", "embed", "fil", "not", "search", "index", "tag", "vault",
};
static const char *const stem_ends[] = {
    "", "s", "es", "ing", "ed", "ly", "ness", "ation", "ational", "ies", "y", "ful",
    "ize", "izer", "ement", "ible", "ous", "ive", "er", "ability",
};

typedef struct toks {
    char **t;
    size_t *start;
    size_t n, cap, scap;
} toks;

static int toks_cb(void *ctx, const char *t, size_t len, size_t s, size_t e)
{
    (void)e;
    toks *k = ctx;
    xgrow(&k->t, &k->cap, k->n + 1, sizeof *k->t);
    xgrow(&k->start, &k->scap, k->n + 1, sizeof *k->start);
    k->t[k->n] = xstrndup(t, len);
    k->start[k->n++] = s;
    return 0;
}

static void toks_free(toks *k)
{
    for (size_t i = 0; i < k->n; i++)
        free(k->t[i]);
    free(k->t);
    free(k->start);
}

/* Checks, in a thread of its own (a fresh stem cache), that stemming keeps
 * every word's first byte and that a run crossing the cache's growth stems
 * as a second run over the full cache does. NULL when all held. */
static void *stem_first_main(void *arg)
{
    const tbuf *text = arg;
    tok_opts stem = {.stem = 1}, plain = {0};
    toks a = {0}, b = {0}, c = {0};
    tok_run(&stem, text->data, text->len, &a, toks_cb);
    tok_run(&stem, text->data, text->len, &b, toks_cb);
    tok_run(&plain, text->data, text->len, &c, toks_cb);
    const char *bad = NULL;
    if (a.n != b.n || a.n != c.n || a.n < 800)
        bad = "token counts differ";
    for (size_t i = 0; !bad && i < a.n; i++) {
        if (strcmp(a.t[i], b.t[i]) != 0)
            bad = a.t[i];   /* the growing cache gave another stem */
        else if (a.start[i] != c.start[i] || a.t[i][0] != c.t[i][0])
            bad = c.t[i];   /* the stem starts with another byte */
    }
    static char msg[256];
    if (bad)
        snprintf(msg, sizeof msg, "%s", bad);
    toks_free(&a);
    toks_free(&b);
    toks_free(&c);
    return bad ? msg : NULL;
}

static void test_stem_keeps_first_byte(void **state)
{
    (void)state;
    tbuf text = {0};
    tbuf_puts(&text, stem_words);
    for (size_t r = 0; r < sizeof stem_roots / sizeof *stem_roots; r++)
        for (size_t e = 0; e < sizeof stem_ends / sizeof *stem_ends; e++)
            tbuf_printf(&text, " %s%s", stem_roots[r], stem_ends[e]);
    char path[1024];
    if (tu_corpus_dir("obsidian-help/en", path, sizeof path)) {
        char cmd[1100];
        snprintf(cmd, sizeof cmd, "cat '%s'/*.md 2>/dev/null", path);
        FILE *p = popen(cmd, "r");
        char chunk[65536];
        size_t got;
        while (p && (got = fread(chunk, 1, sizeof chunk, p)) > 0) {
            tbuf_putc(&text, ' ');
            tbuf_append(&text, chunk, got);
        }
        if (p)
            pclose(p);
    }
    pthread_t th;
    void *ret;
    assert_int_equal(pthread_create(&th, NULL, stem_first_main, &text), 0);
    pthread_join(th, &ret);
    if (ret)
        fail_msg("stemming: %s", (const char *)ret);
    tbuf_free(&text);
}

static void test_stem_only(void **state)
{
    (void)state;
    tok_first first = {0};
    tok_first_add(&first, "run");   /* a folded word's first byte: "É" is 'e' */
    tok_first_add(&first, "\xc3\xa9");
    tok_opts o = {.stem = 1, .stem_only = &first};
    collect c = {0};
    const char *text = "running connections Électricités runs";
    tok_run(&o, text, strlen(text), &c, collect_cb);
    assert_string_equal(tbuf_cstr(&c.out),
                        "run@0-7 connections@8-19 electricites@20-34 run@35-39");
    tbuf_free(&c.out);
    /* an empty term: every word is stemmed */
    tok_first all = {0};
    tok_first_add(&all, "");
    o.stem_only = &all;
    collect d = {0};
    tok_run(&o, text, strlen(text), &d, collect_cb);
    assert_string_equal(tbuf_cstr(&d.out), "run@0-7 connect@8-19 electricit@20-34 run@35-39");
    tbuf_free(&d.out);
}

/* Tokens that start with an ASCII byte, as collect_cb renders them. */
static int ascii_first_cb(void *ctx, const char *t, size_t len, size_t s, size_t e)
{
    return len && (unsigned char)t[0] < 0x80 ? collect_cb(ctx, t, len, s, e) : 0;
}

/* ascii_first leaves out no token that starts with an ASCII byte: for
 * every character below U+20000 at the start of a word (followed by a
 * combining mark and ASCII letters, then the same word twice more, so the
 * per-thread answers are used too), the tokens that start with ASCII are
 * those of a full run; words it skips are those whose tokens start
 * otherwise. */
static void test_ascii_first(void **state)
{
    (void)state;
    const tok_opts full = {.stem = 1}, cut = {.stem = 1, .ascii_first = 1};
    size_t skipped = 0;
    for (uint32_t cp = 0x80; cp < 0x20000; cp++) {
        if (cp >= 0xD800 && cp <= 0xDFFF)
            continue;
        char w[16], text[64];
        size_t n = esc_utf8_encode(cp, w);
        memcpy(w + n, "\xcc\x81" "ab", 4);
        n += 4;
        size_t len = 0;
        for (int k = 0; k < 3; k++) {
            memcpy(text + len, w, n);
            len += n;
            text[len++] = ' ';
        }
        collect a = {0}, b = {0}, all = {0}, f = {0};
        tok_run(&full, text, len, &a, ascii_first_cb);
        tok_run(&cut, text, len, &b, ascii_first_cb);
        if (strcmp(tbuf_cstr(&a.out), tbuf_cstr(&b.out)) != 0)
            fail_msg("U+%04X: full run %s, ascii_first %s", (unsigned)cp, tbuf_cstr(&a.out),
                     tbuf_cstr(&b.out));
        tok_run(&cut, text, len, &all, collect_cb);
        tok_run(&full, text, len, &f, collect_cb);
        skipped += f.n > all.n;
        tbuf_free(&a.out);
        tbuf_free(&b.out);
        tbuf_free(&all.out);
        tbuf_free(&f.out);
    }
    assert_true(skipped > 1000);   /* Greek, Cyrillic, Arabic, ... words are skipped */
    /* Latin letters that fold to ASCII are kept */
    collect c = {0};
    const char *text = "\xc3\x89lectricit\xc3\xa9s \xd0\x90\xd1\x80\xd1\x85\xd0\xb8\xd0\xb2 ok";
    tok_run(&cut, text, strlen(text), &c, collect_cb);
    assert_string_equal(tbuf_cstr(&c.out), "electricit@0-14 ok@26-28");
    tbuf_free(&c.out);
}

/* ---- speed (reported, loosely bounded) ------------------------------------- */

static int count_cb(void *ctx, const char *t, size_t len, size_t s, size_t e)
{
    (void)t, (void)len, (void)s, (void)e;
    (*(size_t *)ctx)++;
    return 0;
}

static void test_speed(void **state)
{
    (void)state;
    char path[1024];
    if (!tu_corpus_dir("obsidian-help/en", path, sizeof path))
        tu_skip("no English corpus (neither ../shared nor fixtures/shared-mini)");
    char cmd[2200];
    snprintf(cmd, sizeof cmd, "cat '%s'/*.md '%s'/*/*.md 2>/dev/null", path, path);
    FILE *p = popen(cmd, "r");
    if (!p)
        skip();
    tbuf text = {0};
    char chunk[65536];
    size_t got;
    while ((got = fread(chunk, 1, sizeof chunk, p)) > 0)
        tbuf_append(&text, chunk, got);
    pclose(p);
    if (text.len < 10000) {
        tbuf_free(&text);
        skip();
    }
    tok_opts o = {.stem = 1};
    size_t n = 0;
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (int r = 0; r < 3; r++)
        tok_run(&o, text.data, text.len, &n, count_cb);
    clock_gettime(CLOCK_MONOTONIC, &b);
    double s = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
    printf("tok speed: %zu tokens, %.1f MB in %.3f s: %.2f Mtokens/s, %.1f MB/s\n",
           n, 3.0 * (double)text.len / 1e6, s, (double)n / s / 1e6,
           3.0 * (double)text.len / 1e6 / s);
    assert_true(n > 1000);
    tbuf_free(&text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ascii),
        cmocka_unit_test(test_accents),
        cmocka_unit_test(test_greek_cyrillic),
        cmocka_unit_test(test_cjk),
        cmocka_unit_test(test_emoji_and_invalid),
        cmocka_unit_test(test_stemming),
        cmocka_unit_test(test_long_words),
        cmocka_unit_test(test_stop),
        cmocka_unit_test(test_segmenter_hook),
        cmocka_unit_test(test_fts5_offsets),
        cmocka_unit_test(test_threads),
        cmocka_unit_test(test_stem_keeps_first_byte),
        cmocka_unit_test(test_stem_only),
        cmocka_unit_test(test_ascii_first),
        cmocka_unit_test(test_fts5_tape_replay),
        cmocka_unit_test(test_tape_recycle),
        cmocka_unit_test(test_speed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
