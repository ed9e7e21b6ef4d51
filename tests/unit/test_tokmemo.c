/* Unit tests for tokmemo: the memo's sets are tok_run's distinct terms,
 * found again by the same bytes only, and bounded. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "text/tok.h"
#include "text/tokmemo.h"
#include "util/buf.h"

/* tok_run's terms, each once, as "a b c" in first-seen order. */
typedef struct distinct {
    tbuf out;
    char **seen;
    size_t n;
} distinct;

static int distinct_cb(void *ctx, const char *t, size_t len, size_t s, size_t e)
{
    (void)s, (void)e;
    distinct *d = ctx;
    for (size_t i = 0; i < d->n; i++)
        if (strlen(d->seen[i]) == len && memcmp(d->seen[i], t, len) == 0)
            return 0;
    d->seen = xrealloc(d->seen, (d->n + 1) * sizeof *d->seen);
    d->seen[d->n++] = xstrndup(t, len);
    if (d->out.len)
        tbuf_putc(&d->out, ' ');
    tbuf_append(&d->out, t, len);
    return 0;
}

static char *direct(int skip_cjk, const char *text)
{
    tok_opts o = {.stem = 1, .query = 1, .skip_cjk = skip_cjk};
    distinct d = {0};
    tok_run(&o, text, strlen(text), &d, distinct_cb);
    for (size_t i = 0; i < d.n; i++)
        free(d.seen[i]);
    free(d.seen);
    return d.out.data ? d.out.data : xstrdup("");
}

static char *joined(const tokmemo_set *s)
{
    tbuf b = {0};
    for (size_t i = 0; i < s->n; i++) {
        if (b.len)
            tbuf_putc(&b, ' ');
        assert_int_equal(strlen(s->term[i]), s->len[i]);
        tbuf_append(&b, s->term[i], s->len[i]);
    }
    return b.data ? b.data : xstrdup("");
}

static const char *const texts[] = {
    "",
    "tar",
    "Extract a tar archive, then extract the archives inside the archive.",
    "Café naïve résumé CAFE cafe",
    "压缩文件 and 网络端口 中文 mixed with English words",
    "ファイル 圧縮 ネットワーク 파일 압축",
    "Архив: извлечь файлы из архива (archive)",
    "tar.md",
    "a\nb\nc a b",
    "\xff\xfe broken \xc3 utf-8 bytes",
};

static void test_same_terms_as_tok_run(void **state)
{
    (void)state;
    tokmemo *m = tokmemo_new(1 << 20);
    for (int round = 0; round < 2; round++)   /* made, then found */
        for (size_t i = 0; i < sizeof texts / sizeof *texts; i++)
            for (int skip = 0; skip < 2; skip++) {
                char *want = direct(skip, texts[i]);
                char *got = joined(tokmemo_get(m, skip, texts[i], strlen(texts[i])));
                assert_string_equal(got, want);
                free(want);
                free(got);
            }
    tokmemo_stats st;
    tokmemo_stats_get(m, &st);
    size_t n = 2 * sizeof texts / sizeof *texts;
    assert_int_equal(st.misses, n);
    assert_int_equal(st.hits, n);
    assert_int_equal(st.entries, n);
    tokmemo_free(m);
}

static void test_has(void **state)
{
    (void)state;
    tokmemo *m = tokmemo_new(1 << 20);
    const char *t = "Extracting archives with tar";
    const tokmemo_set *s = tokmemo_get(m, 1, t, strlen(t));
    assert_true(tokmemo_has(s, "extract", 7));
    assert_true(tokmemo_has(s, "tar", 3));
    assert_false(tokmemo_has(s, "ta", 2));
    assert_false(tokmemo_has(s, "tarx", 3 + 1));
    assert_false(tokmemo_has(s, "zip", 3));
    tokmemo_free(m);
}

/* Found only by the same bytes: a prefix, a longer text or a text with the
 * same terms is an entry of its own. */
static void test_bytes_decide(void **state)
{
    (void)state;
    tokmemo *m = tokmemo_new(1 << 20);
    const char *a = "tar archive", *b = "TAR archive", *c = "tar archive and more";
    const tokmemo_set *sa = tokmemo_get(m, 1, a, strlen(a));
    assert_ptr_equal(tokmemo_get(m, 1, a, strlen(a)), sa);
    assert_ptr_not_equal(tokmemo_get(m, 1, b, strlen(b)), sa);
    assert_ptr_not_equal(tokmemo_get(m, 1, c, strlen(c)), tokmemo_get(m, 1, a, strlen(a)));
    assert_ptr_not_equal(tokmemo_get(m, 1, c, 3), tokmemo_get(m, 1, a, strlen(a)));
    assert_ptr_not_equal(tokmemo_get(m, 0, a, strlen(a)), tokmemo_get(m, 1, a, strlen(a)));
    tokmemo_free(m);
}

/* Many texts through a small memo: it starts again when full, and every
 * answer stays tok_run's. */
static void test_bound(void **state)
{
    (void)state;
    tokmemo *m = tokmemo_new(16 << 10);
    for (int i = 0; i < 3000; i++) {
        char text[128];
        snprintf(text, sizeof text, "note %d about archives %d and tar %d", i % 700, i * 7, i);
        char *want = direct(1, text);
        char *got = joined(tokmemo_get(m, 1, text, strlen(text)));
        assert_string_equal(got, want);
        free(want);
        free(got);
        tokmemo_stats st;
        tokmemo_stats_get(m, &st);
        assert_true(st.bytes <= 16 << 10);
    }
    tokmemo_free(m);
}

/* tokmemo_holds answers as tok_run's terms would, for terms asked in any
 * order over several calls (each call stems the words of new first bytes
 * only), CJK skipped or cut, empty terms included. */
static void test_holds(void **state)
{
    (void)state;
    static const char *const asks[] = {"extract", "archiv", "tar", "zip", "cafe", "caf",
                                       "\xe5\x8e\x8b\xe7\xbc\xa9", "english", "word", "mix",
                                       "file", "archive", "x", "port", "network", "", "utf",
                                       "\xd0\xb0\xd1\x80\xd1\x85\xd0\xb8\xd0\xb2"};
    size_t n_asks = sizeof asks / sizeof *asks;
    tokmemo *m = tokmemo_new(1 << 20);
    for (int round = 0; round < 3; round++)
        for (size_t i = 0; i < sizeof texts / sizeof *texts; i++)
            for (int skip = 0; skip < 2; skip++) {
                char *want = direct(skip, texts[i]);
                /* one term, then pairs, in an order that differs by round */
                for (size_t a = 0; a < n_asks; a++) {
                    const char *t[2] = {asks[(a * (round + 1)) % n_asks],
                                        asks[(a * 7 + round) % n_asks]};
                    size_t l[2] = {strlen(t[0]), strlen(t[1])};
                    size_t k = round == 0 ? 1 : 2;
                    int expect = 0;
                    for (size_t j = 0; j < k; j++) {
                        /* in want's space-separated list */
                        const char *p = want;
                        while (*p && !expect) {
                            const char *e = strchr(p, ' ');
                            size_t len = e ? (size_t)(e - p) : strlen(p);
                            expect = len == l[j] && memcmp(p, t[j], len) == 0;
                            p = e ? e + 1 : p + len;
                        }
                    }
                    assert_int_equal(tokmemo_holds(m, skip, texts[i], strlen(texts[i]), t, l, k),
                                     expect);
                }
                free(want);
            }
    tokmemo_free(m);
}

/* A text whose first tokmemo_holds pass keeps many terms (200 words that
 * start with 'a'), asked again for terms of other first bytes: the second
 * pass starts with those 200 in the set (its index once held 64 slots, and
 * the pass never ended). */
static void test_holds_second_pass_of_many_terms(void **state)
{
    (void)state;
    tbuf text = {0};
    for (int i = 0; i < 200; i++) {
        char w[32];
        snprintf(w, sizeof w, "alpha%03dq bravo%03dq ", i, i);
        tbuf_append(&text, w, strlen(w));
    }
    tokmemo *m = tokmemo_new(1 << 20);
    const char *t[1] = {"alpha007q"};
    size_t l[1] = {strlen(t[0])};
    assert_int_equal(tokmemo_holds(m, 0, text.data, text.len, t, l, 1), 1);
    t[0] = "bravo199q", l[0] = strlen(t[0]);
    assert_int_equal(tokmemo_holds(m, 0, text.data, text.len, t, l, 1), 1);
    t[0] = "charlie", l[0] = strlen(t[0]);
    assert_int_equal(tokmemo_holds(m, 0, text.data, text.len, t, l, 1), 0);
    char *want = direct(0, text.data);
    const tokmemo_set *all = tokmemo_get(m, 0, text.data, text.len);
    char *got = joined(all);
    assert_string_equal(got, want);
    free(got);
    free(want);
    tokmemo_free(m);
    free(text.data);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_terms_as_tok_run),
        cmocka_unit_test(test_has),
        cmocka_unit_test(test_bytes_decide),
        cmocka_unit_test(test_bound),
        cmocka_unit_test(test_holds),
        cmocka_unit_test(test_holds_second_pass_of_many_terms),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
