/* minhash: signatures estimate Jaccard similarity, LSH finds the close
 * pairs, union-find groups them. Hand-made texts, no index. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text/minhash.h"
#include "util/buf.h"

/* The text "word<from> ... word<to - 1>", so that overlaps are known
 * exactly. */
static char *words(int from, int to)
{
    tbuf b = {0};
    for (int i = from; i < to; i++)
        tbuf_printf(&b, "%sword%d", i > from ? " " : "", i);
    return tbuf_detach(&b);
}

static void sig_of(const char *s, minhash_sig *out)
{
    minhash_text(s, strlen(s), out);
}

static void test_identical_and_disjoint(void **state)
{
    (void)state;
    char *a = words(0, 200), *b = words(0, 200), *c = words(1000, 1200);
    minhash_sig sa, sb, sc;
    sig_of(a, &sa);
    sig_of(b, &sb);
    sig_of(c, &sc);
    assert_true(sa.shingles == 200 - MINHASH_SHINGLE + 1);
    assert_true(minhash_similarity(&sa, &sb) == 1.0);
    assert_true(minhash_similarity(&sa, &sc) < 0.1);
    free(a);
    free(b);
    free(c);
}

static void test_folding_and_stemming_do_not_matter(void **state)
{
    (void)state;
    minhash_sig a, b;
    sig_of("Running the Tests, then fixing bugs quickly", &a);
    sig_of("running the test then fixing the BUG quickly", &b);
    /* "the" is a token, so the second differs by one inserted word */
    assert_true(minhash_similarity(&a, &b) > 0.2);
    sig_of("Running the Tests, then fixing bugs quickly", &b);
    assert_true(minhash_similarity(&a, &b) == 1.0);
}

static void test_estimate_tracks_jaccard(void **state)
{
    (void)state;
    /* words 0..299 against 100..399: of 297 4-shingles each, the 197 of
     * words 100..299 are shared, J = 197 / 397 ~ 0.5; the estimate is
     * within 4 standard errors. */
    char *a = words(0, 300), *b = words(100, 400);
    minhash_sig sa, sb;
    sig_of(a, &sa);
    sig_of(b, &sb);
    double j = 197.0 / 397.0, est = minhash_similarity(&sa, &sb);
    assert_true(est > j - 0.25 && est < j + 0.25);
    free(a);
    free(b);
}

static void test_short_and_empty_texts(void **state)
{
    (void)state;
    minhash_sig a, b, e;
    sig_of("two words", &a);
    sig_of("two words", &b);
    sig_of(" ,.; ", &e);
    assert_int_equal(a.shingles, 1);
    assert_true(minhash_similarity(&a, &b) == 1.0);
    assert_int_equal(e.shingles, 0);
    assert_true(minhash_similarity(&e, &e) == 0.0);   /* empty texts are no duplicates */
}

static void test_pairs_and_groups(void **state)
{
    (void)state;
    /* 0,1,2 near-identical; 3 alone; 4,5 identical; 6 empty */
    char *t[7];
    t[0] = words(0, 100);
    t[1] = words(0, 100);
    t[2] = words(0, 99);
    t[3] = words(500, 600);
    t[4] = words(700, 760);
    t[5] = words(700, 760);
    t[6] = strdup("");
    minhash_sig s[7];
    for (int i = 0; i < 7; i++)
        sig_of(t[i], &s[i]);
    minhash_pair *p;
    size_t n;
    minhash_pairs(s, 7, 0.8, &p, &n);
    long g[7];
    size_t groups = minhash_group(7, p, n, NULL, g);
    assert_int_equal(groups, 2);
    assert_true(g[0] == 0 && g[1] == 0 && g[2] == 0);
    assert_true(g[4] == 1 && g[5] == 1);
    assert_true(g[3] == -1 && g[6] == -1);
    for (size_t i = 0; i < n; i++) {
        assert_true(p[i].a < p[i].b);
        assert_true(p[i].similarity >= 0.8);
        if (i)
            assert_true(p[i - 1].a < p[i].a || (p[i - 1].a == p[i].a && p[i - 1].b < p[i].b));
    }
    /* Dropping the pairs of 4-5 leaves one group. */
    unsigned char keep[64];
    for (size_t i = 0; i < n; i++)
        keep[i] = p[i].a != 4;
    groups = minhash_group(7, p, n, keep, g);
    assert_int_equal(groups, 1);
    assert_true(g[4] == -1 && g[5] == -1);
    minhash_pairs_free(p);
    for (int i = 0; i < 7; i++)
        free(t[i]);
}

static void test_flood_of_one_text(void **state)
{
    (void)state;
    /* 300 copies of one boilerplate: one group of all of them, though each
     * band run is compared only with its first members. */
    enum { N = 300 };
    minhash_sig *s = calloc(N, sizeof *s);
    char *t = words(0, 50);
    for (int i = 0; i < N; i++)
        sig_of(t, &s[i]);
    minhash_pair *p;
    size_t n;
    minhash_pairs(s, N, 0.9, &p, &n);
    long *g = calloc(N, sizeof *g);
    assert_int_equal(minhash_group(N, p, n, NULL, g), 1);
    for (int i = 0; i < N; i++)
        assert_int_equal(g[i], 0);
    assert_true(n < (size_t)N * 70);   /* not N^2 / 2 */
    minhash_pairs_free(p);
    free(g);
    free(s);
    free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_identical_and_disjoint),
        cmocka_unit_test(test_folding_and_stemming_do_not_matter),
        cmocka_unit_test(test_estimate_tracks_jaccard),
        cmocka_unit_test(test_short_and_empty_texts),
        cmocka_unit_test(test_pairs_and_groups),
        cmocka_unit_test(test_flood_of_one_text),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
