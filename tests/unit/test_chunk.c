/* chunk_note: section boundaries, merging, splitting with overlap, code
 * atomicity, byte/line bookkeeping, and invariants over the shared corpora. */
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

#include "chunk/chunk.h"
#include "testutil.h"
#include "md/md.h"
#include "util/buf.h"
#include "util/mem.h"

static md_doc D;
static chunk_list C;
static const char *S;
static size_t N;

static void run_n(const char *s, size_t n, const chunk_opts *o)
{
    chunk_list_free(&C);
    md_doc_free(&D);
    S = s;
    N = n;
    assert_int_equal(md_parse(s, n, &D), TROVE_OK);
    assert_int_equal(chunk_note(s, n, &D, o, &C), TROVE_OK);
}

static void run(const char *s, const chunk_opts *o)
{
    run_n(s, strlen(s), o);
}

static int teardown(void **state)
{
    (void)state;
    chunk_list_free(&C);
    md_doc_free(&D);
    return 0;
}

static int is_ws(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

/* Every invariant the indexer relies on. */
static void check_invariants(const char *s, size_t n, const md_doc *d, const chunk_list *cl,
                             int target)
{
    size_t covered = d->body_start;
    for (size_t i = 0; i < cl->n; i++) {
        const chunk *c = &cl->items[i];
        assert_true(c->start_byte >= d->body_start);
        assert_true(c->start_byte < c->end_byte);
        assert_true(c->end_byte <= n);
        if (i) {
            assert_true(c->start_byte > cl->items[i - 1].start_byte);
            assert_true(c->end_byte > cl->items[i - 1].end_byte);
        }
        assert_int_equal(c->line_start, tu_line_at(s, c->start_byte));
        assert_int_equal(c->line_end, tu_line_at(s, c->end_byte - 1));
        assert_int_equal(c->tokens, chunk_estimate_tokens(s + c->start_byte, c->end_byte - c->start_byte));
        int has_code = 0;
        for (size_t k = 0; k < d->n_code; k++) {
            const md_span *sp = &d->code[k];
            assert_false(sp->start < c->start_byte && c->start_byte < sp->end);
            assert_false(sp->start < c->end_byte && c->end_byte < sp->end);
            if (sp->start >= c->start_byte && sp->end <= c->end_byte &&
                chunk_estimate_tokens(s + sp->start, sp->end - sp->start) > target / 2)
                has_code = 1;
        }
        /* Only a big code block may push a chunk over the target. */
        if (!has_code)
            assert_true(c->tokens <= target + 1);
        for (size_t k = covered; k < c->start_byte; k++)
            assert_true(is_ws(s[k]));
        if (c->end_byte > covered)
            covered = c->end_byte;
    }
    for (size_t k = covered; k < n; k++)
        assert_true(is_ws(s[k]));
}

static void check(int target)
{
    check_invariants(S, N, &D, &C, target);
}

static void assert_path(const chunk *c, int n, ...)
{
    va_list ap;
    va_start(ap, n);
    assert_int_equal(c->n_heading_path, (size_t)n);
    for (int i = 0; i < n; i++)
        assert_string_equal(c->heading_path[i], va_arg(ap, const char *));
    va_end(ap);
}

/* ---- token estimate ---- */

static void test_estimate(void **state)
{
    (void)state;
    assert_int_equal(chunk_estimate_tokens("", 0), 0);
    assert_int_equal(chunk_estimate_tokens("   \n\t", 5), 0);
    assert_int_equal(chunk_estimate_tokens("a", 1), 1);
    assert_int_equal(chunk_estimate_tokens("the cat sat on the mat", 22), 8);
    /* A long word costs about bytes/4. */
    assert_int_equal(chunk_estimate_tokens("abcdefghijklmnopqrstuvwxyz012345", 32), 7);
    /* One token per CJK character, punctuation included. */
    const char *zh = "\xe4\xb8\xad\xe6\x96\x87\xe5\xad\x97\xe3\x80\x82"; /* 中文字。 */
    assert_int_equal(chunk_estimate_tokens(zh, strlen(zh)), 4);
    const char *mixed = "Hello \xe4\xb8\x96\xe7\x95\x8c world"; /* Hello 世界 world */
    assert_int_equal(chunk_estimate_tokens(mixed, strlen(mixed)), 5);
    /* English prose: roughly 1.2-1.4 tokens per word (19 words here). */
    const char *prose = "Chunking splits long documents into passages that fit the embedding "
                        "model while keeping related sentences together for retrieval quality.";
    int t = chunk_estimate_tokens(prose, strlen(prose));
    assert_true(t >= 22 && t <= 28);
    /* Invalid bytes count, never crash. */
    assert_true(chunk_estimate_tokens("\xff\xfe\xc3", 3) >= 1);
}

/* ---- simple cases ---- */

static void test_empty_bodies(void **state)
{
    (void)state;
    run("", NULL);
    assert_int_equal(C.n, 0);
    assert_null(C.items);
    run("\n\n  \n\t\n", NULL);
    assert_int_equal(C.n, 0);
    run("---\ntitle: x\ntags: [a]\n---\n", NULL);
    assert_int_equal(C.n, 0);
    run("---\ntitle: x\n---\n\n\n", NULL);
    assert_int_equal(C.n, 0);
    run("\xEF\xBB\xBF", NULL);
    assert_int_equal(C.n, 0);
}

static void test_single_chunk(void **state)
{
    (void)state;
    const char *s = "---\ntitle: T\n---\n\n# Title\n\nSome text here.\n\n## Sub\n\nMore text.\n\n\n";
    run(s, NULL);
    check(400);
    assert_int_equal(C.n, 1);
    assert_int_equal(C.items[0].start_byte, strstr(s, "# Title") - s);
    assert_int_equal(C.items[0].end_byte, strstr(s, "More text.\n") - s + 11);
    assert_int_equal(C.items[0].line_start, 5);
    assert_int_equal(C.items[0].line_end, 11);
    assert_path(&C.items[0], 1, "Title");
    assert_true(C.items[0].tokens > 5);
}

static void test_preamble_and_paths(void **state)
{
    (void)state;
    const char *s = "Intro line before any heading.\n\n"
                    "# A\ntext a\n## B\ntext b\n### C\ntext c\n## D\ntext d\n"
                    "# E\ntext e\n";
    run(s, NULL);
    check(400);
    assert_int_equal(C.n, 3);
    assert_path(&C.items[0], 0);
    assert_int_equal(C.items[0].start_byte, 0);
    assert_int_equal(C.items[0].line_end, 1);
    /* A absorbs its descendants; the path is the common heading. */
    assert_path(&C.items[1], 1, "A");
    assert_int_equal(C.items[1].start_byte, strstr(s, "# A") - s);
    assert_int_equal(C.items[1].end_byte, strstr(s, "# E") - s);
    assert_path(&C.items[2], 1, "E");
}

static void test_merge_siblings(void **state)
{
    (void)state;
    /* Top-level siblings stay apart; small siblings under a heading merge. */
    const char *s = "## One\nalpha\n## Two\nbeta\n### Two.a\ngamma\n### Two.b\ndelta\n";
    run(s, NULL);
    check(400);
    assert_int_equal(C.n, 2);
    assert_path(&C.items[0], 1, "One");
    assert_path(&C.items[1], 1, "Two");
    run("## P\n### x\none\n### y\ntwo\n", NULL);
    assert_int_equal(C.n, 1);
    assert_path(&C.items[0], 1, "P");
    /* Starting at a subsection, merged siblings report their parent. */
    chunk_opts o = {14, 0};
    run("## P\nsome words that fill up the parent section here\n### x\none\n### y\ntwo\n", &o);
    check(14);
    assert_int_equal(C.n, 2);
    assert_path(&C.items[0], 1, "P");
    assert_path(&C.items[1], 1, "P");
    assert_int_equal(C.items[1].start_byte, strstr(S, "### x") - S);
}

/* ---- splitting ---- */

static char *make_paragraphs(int paras, int words, int crlf)
{
    tbuf b = {0};
    tbuf_puts(&b, "# Big section\n\n");
    unsigned r = 12345;
    for (int p = 0; p < paras; p++) {
        for (int w = 0; w < words; w++) {
            r = r * 1103515245u + 12345u;
            static const char *vocab[] = {"lorem", "ipsum", "dolor", "sit", "amet", "elit", "sed", "do"};
            tbuf_puts(&b, vocab[(r >> 16) % 8]);
            tbuf_puts(&b, (w % 12 == 11) ? ". " : " ");
            if (w % 25 == 24)
                tbuf_puts(&b, crlf ? "\r\n" : "\n");
        }
        tbuf_puts(&b, crlf ? "end.\r\n\r\n" : "end.\n\n");
    }
    return tbuf_detach(&b);
}

static void test_split_paragraphs(void **state)
{
    (void)state;
    char *s = make_paragraphs(20, 60, 0);
    chunk_opts o = {100, 20};
    run(s, &o);
    check(100);
    assert_true(C.n >= 10);
    int overlaps = 0;
    for (size_t i = 0; i < C.n; i++) {
        assert_path(&C.items[i], 1, "Big section");
        assert_true(C.items[i].tokens >= 30); /* no tiny fragments */
        if (i && C.items[i].start_byte < C.items[i - 1].end_byte)
            overlaps++;
    }
    assert_true(overlaps >= (int)C.n / 2);
    free(s);
}

static void test_split_crlf(void **state)
{
    (void)state;
    char *s = make_paragraphs(6, 80, 1);
    chunk_opts o = {60, 10};
    run(s, &o);
    check(60);
    assert_true(C.n >= 6);
    free(s);
}

static void test_long_line_sentences(void **state)
{
    (void)state;
    tbuf b = {0};
    tbuf_puts(&b, "# Zh\n\n");
    for (int i = 0; i < 120; i++)
        tbuf_puts(&b, "\xe8\xbf\x99\xe6\x98\xaf\xe4\xb8\x80\xe4\xb8\xaa\xe5\x8f\xa5\xe5\xad\x90\xe3\x80\x82"); /* 这是一个句子。 */
    tbuf_puts(&b, "\n\nEnglish sentence one is here. ");
    for (int i = 0; i < 80; i++)
        tbuf_puts(&b, "Another sentence follows it here! ");
    tbuf_puts(&b, "\n");
    chunk_opts o = {100, 16};
    run_n(b.data, b.len, &o);
    check(100);
    assert_true(C.n >= 8);
    /* The heading line starts the first piece instead of standing alone. */
    assert_int_equal(C.items[0].start_byte, 0);
    assert_true(C.items[0].tokens > 50);
    /* Pieces of the Chinese line end right after a full stop. */
    const char *stop = "\xe3\x80\x82";
    int at_stop = 0, pieces = 0;
    for (size_t i = 0; i + 1 < C.n; i++) {
        const chunk *c = &C.items[i];
        if (c->end_byte >= (size_t)(strstr(S, "English") - S))
            break;
        if (S[c->end_byte - 1] == '\n')
            continue; /* the line's last piece */
        pieces++;
        at_stop += memcmp(S + c->end_byte - 3, stop, 3) == 0;
    }
    assert_true(pieces >= 3);
    assert_int_equal(at_stop, pieces);
    /* English pieces start at a sentence start. */
    for (size_t i = 1; i < C.n; i++)
        if (C.items[i].start_byte > (size_t)(strstr(S, "English") - S))
            assert_true(S[C.items[i].start_byte] == 'A' || S[C.items[i].start_byte] == 'E');
    tbuf_free(&b);
}

static void test_giant_word(void **state)
{
    (void)state;
    size_t n = 5000;
    char *s = xmalloc(n + 1);
    memset(s, 'x', n);
    s[n] = '\0';
    chunk_opts o = {50, 10};
    run(s, &o);
    check(50);
    assert_true(C.n >= 20);
    free(s);
}

static void test_code_atomic(void **state)
{
    (void)state;
    tbuf b = {0};
    tbuf_puts(&b, "# Code\n\nIntro paragraph before code.\n\n```c\n");
    for (int i = 0; i < 300; i++)
        tbuf_printf(&b, "int variable_%d = compute(%d); // #notag [[nolink]]\n\n", i, i);
    tbuf_puts(&b, "```\n\nAfter the code block there is text.\n\n    indented\n    code\n\nEnd.\n");
    chunk_opts o = {100, 20};
    run_n(b.data, b.len, &o);
    check(100);
    assert_int_equal(D.n_code, 2);
    int whole = 0;
    for (size_t i = 0; i < C.n; i++)
        if (C.items[i].start_byte == D.code[0].start && C.items[i].end_byte == D.code[0].end)
            whole++;
    assert_int_equal(whole, 1); /* the giant block is exactly one chunk */
    tbuf_free(&b);
}

static void test_tiny_heading_joins_split(void **state)
{
    (void)state;
    /* "# Title" alone would be a useless chunk: it starts the first piece. */
    char *body = make_paragraphs(8, 60, 0);
    tbuf b = {0};
    tbuf_puts(&b, "# Title\n\n");
    tbuf_puts(&b, "#");
    tbuf_puts(&b, body); /* "## Big section ..." */
    chunk_opts o = {100, 20};
    run_n(b.data, b.len, &o);
    check(100);
    assert_int_equal(C.items[0].start_byte, 0);
    assert_path(&C.items[0], 1, "Title");
    assert_true(C.items[0].end_byte > (size_t)(strstr(S, "lorem") - S) ||
                C.items[0].end_byte > (size_t)(strstr(S, "ipsum") - S));
    assert_path(&C.items[C.n - 1], 2, "Title", "Big section");
    free(body);
    tbuf_free(&b);
}

static void test_lines_bom_crlf(void **state)
{
    (void)state;
    const char *s = "\xEF\xBB\xBF---\r\na: 1\r\n---\r\n\r\n# H\r\nx\r\n\r\n## I\r\ny";
    run(s, NULL);
    check(400);
    assert_int_equal(C.n, 1);
    assert_int_equal(C.items[0].line_start, 5);
    assert_int_equal(C.items[0].line_end, 9);
    assert_int_equal(C.items[0].end_byte, strlen(s));
    run("\xEF\xBB\xBFplain", NULL);
    assert_int_equal(C.n, 1);
    assert_int_equal(C.items[0].start_byte, 3);
    assert_int_equal(C.items[0].line_start, 1);
}

static void test_default_opts(void **state)
{
    (void)state;
    char *s = make_paragraphs(30, 60, 0);
    chunk_opts bad = {0, 48};
    run(s, &bad);
    check(400);
    size_t n_bad = C.n;
    run(s, NULL);
    check(400);
    assert_int_equal(C.n, n_bad);
    assert_true(C.n >= 4);
    free(s);
}

static void test_pathological_sizes(void **state)
{
    (void)state;
    /* Dense sentence starts, one giant line, many lines: all linear. */
    size_t n = 1 << 20;
    char *s = xmalloc(n + 1);
    for (size_t i = 0; i < n; i++)
        s[i] = "x. "[i % 3];
    s[n] = '\0';
    clock_t t0 = clock();
    run_n(s, n, NULL);
    assert_true(C.n > 1000);
    for (size_t i = 0; i < n; i++)
        s[i] = (i % 2) ? '\n' : 'y';
    run_n(s, n, NULL);
    assert_true(C.n > 100);
    for (size_t i = 0; i + 3 <= n; i += 3)
        memcpy(s + i, "\xe5\xad\x97", 3); /* 字 */
    run_n(s, n - n % 3, NULL);
    assert_true(C.n > 500);
    double secs = (double)(clock() - t0) / CLOCKS_PER_SEC;
    print_message("3 x 1 MiB pathological notes: %.2f s\n", secs);
    assert_true(secs < 20.0); /* generous: sanitizers and a busy machine */
    free(s);
}

/* ---- corpora ---- */

typedef struct cstats {
    size_t files, chunks, bytes;
    double secs;
} cstats;

static void chunk_one(void *ctx, const char *path, const char *s, size_t n)
{
    (void)path;
    cstats *st = ctx;
    static const chunk_opts opts[2] = {{400, 48}, {64, 12}};
    for (int k = 0; k < 2; k++) {
        clock_t t0 = clock();
        run_n(s, n, &opts[k]);
        st->secs += (double)(clock() - t0) / CLOCKS_PER_SEC;
        check_invariants(s, n, &D, &C, opts[k].target_tokens);
        if (k == 0) {
            st->chunks += C.n;
            st->files++;
            st->bytes += n;
        }
    }
}

static void corpus(const char *sub)
{
    char dir[4096];
    int have = tu_corpus_dir(sub, dir, sizeof dir);
    if (!have)
        tu_skip("corpus %s not found (neither ../shared nor fixtures/shared-mini)", sub);
    cstats st = {0};
    tu_each_note(dir, chunk_one, &st);
    print_message("%s: %zu files, %zu chunks at 400 tokens, %.1f us/file (parse + 2 chunkings)\n",
                  sub, st.files, st.chunks, st.files ? st.secs / (double)st.files * 1e6 : 0.0);
    assert_true(st.files >= (have == TU_CORPUS_FULL ? 150u : 10u));
    assert_true(st.chunks >= st.files);
}

static void test_corpus_obsidian(void **state)
{
    (void)state;
    corpus("obsidian-help/en");
}

static void test_corpus_cs_notes(void **state)
{
    (void)state;
    corpus("cs-notes-zh");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_estimate, teardown),
        cmocka_unit_test_teardown(test_empty_bodies, teardown),
        cmocka_unit_test_teardown(test_single_chunk, teardown),
        cmocka_unit_test_teardown(test_preamble_and_paths, teardown),
        cmocka_unit_test_teardown(test_merge_siblings, teardown),
        cmocka_unit_test_teardown(test_split_paragraphs, teardown),
        cmocka_unit_test_teardown(test_split_crlf, teardown),
        cmocka_unit_test_teardown(test_long_line_sentences, teardown),
        cmocka_unit_test_teardown(test_giant_word, teardown),
        cmocka_unit_test_teardown(test_code_atomic, teardown),
        cmocka_unit_test_teardown(test_tiny_heading_joins_split, teardown),
        cmocka_unit_test_teardown(test_lines_bom_crlf, teardown),
        cmocka_unit_test_teardown(test_default_opts, teardown),
        cmocka_unit_test_teardown(test_pathological_sizes, teardown),
        cmocka_unit_test_teardown(test_corpus_obsidian, teardown),
        cmocka_unit_test_teardown(test_corpus_cs_notes, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
