/* query_pipe: expansion, weighted RRF with the top-rank bonus, the lexical
 * re-scorer, the blend and the search floor, on small hand-made inputs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "search/query_pipe.h"
#include "search/search.h"

static void test_keyword_form(void **state)
{
    (void)state;
    char *k = qp_keyword_form("how can I extract a tar archive");
    assert_non_null(k);
    assert_string_equal(k, "extract tar archive");
    free(k);
    /* question words go, phrases, prefixes and exclusions stay as typed */
    k = qp_keyword_form("explain \"rate limit\" retry* -http");
    assert_non_null(k);
    assert_string_equal(k, "\"rate limit\" retry* -http");
    free(k);
    k = qp_keyword_form("the tar archive");
    assert_string_equal(k, "tar archive");
    free(k);
    /* nothing dropped: no variant */
    assert_null(qp_keyword_form("tar archive"));
    /* nothing left */
    assert_null(qp_keyword_form("what is it"));
    assert_null(qp_keyword_form(""));
}

static void test_terms(void **state)
{
    (void)state;
    qp_terms t;
    qp_terms_build("How do I extract the archives? archive", &t);
    assert_int_equal(t.n, 2);   /* stemmed, deduplicated, fillers dropped */
    assert_string_equal(t.items[0], "extract");
    assert_string_equal(t.items[1], "archiv");
    qp_terms_free(&t);
    qp_terms_build("what is it", &t);   /* only fillers: all of them */
    assert_true(t.n >= 2);
    qp_terms_free(&t);
}

static void test_prf(void **state)
{
    (void)state;
    const char *docs[] = {
        "Kernel scheduling: the scheduler picks runnable threads by priority.",
        "The scheduler and preemption: priority inversion in threads.",
        "Threads wait on a mutex; the scheduler wakes them by priority.",
        "Cooking pasta: boil water, add salt.",
    };
    size_t lens[4];
    for (int i = 0; i < 4; i++)
        lens[i] = strlen(docs[i]);
    double w[] = {1.0, 0.9, 0.8, 0.1};
    char *q = qp_prf_query("scheduler", docs, lens, w, 3, 4, 2);
    assert_non_null(q);
    /* words of two or more feedback notes, not the query's own */
    assert_string_equal(q, "scheduler threads priority");
    free(q);
    /* one feedback note: any of its words; none asked: no variant */
    q = qp_prf_query("pasta", docs + 3, lens + 3, w + 3, 1, 1, 1);
    assert_non_null(q);
    assert_true(strncmp(q, "pasta ", 6) == 0);
    free(q);
    assert_null(qp_prf_query("scheduler", docs, lens, w, 3, 4, 0));
    assert_null(qp_prf_query("scheduler", docs, lens, w, 0, 4, 3));
}

static void test_rrf_bonus(void **state)
{
    (void)state;
    qp_list lists[2] = {{0, SEARCH_CH_BM25, 2.0}, {1, SEARCH_CH_BM25, 1.0}};
    qp_cand c[3];
    memset(c, 0, sizeof c);
    for (int i = 0; i < 3; i++) {
        c[i].doc_id = 10 + i;
        c[i].quality[0] = c[i].quality[1] = 1.0;
    }
    c[0].rank[0] = 1;                       /* #1 in the original list only */
    c[1].rank[0] = 2, c[1].rank[1] = 1;     /* #2 there, #1 in the variant's */
    c[2].rank[0] = 4, c[2].rank[1] = 2;
    qp_rrf(c, 3, lists, 2, 60);
    assert_int_equal(c[0].doc_id, 11);
    assert_true(fabs(c[0].rrf - (2.0 / 62 + 1.0 / 61 + QP_BONUS_FIRST)) < 1e-12);
    assert_int_equal(c[1].doc_id, 10);
    assert_true(fabs(c[1].rrf - (2.0 / 61 + QP_BONUS_FIRST)) < 1e-12);
    assert_int_equal(c[2].doc_id, 12);
    assert_true(fabs(c[2].bonus - QP_BONUS_TOP3) < 1e-12);
    assert_int_equal(c[2].rrf_rank, 3);
}

static void test_passage_score(void **state)
{
    (void)state;
    qp_terms t;
    qp_terms_build("tar archive extract", &t);
    qp_passage near, far, none, part;
    const char *a = "To extract a tar archive run tar -xf.";
    qp_passage_score(&t, NULL, a, strlen(a), 256, &near);
    assert_true(fabs(near.coverage - 1.0) < 1e-12);
    /* the same words far apart: full coverage, lower proximity */
    char b[2048] = "extract ";
    for (int i = 0; i < 40; i++)
        strcat(b, "word ");
    strcat(b, "tar and then archive");
    qp_passage_score(&t, NULL, b, strlen(b), 256, &far);
    assert_true(fabs(far.coverage - 1.0) < 1e-12);
    assert_true(far.proximity < near.proximity);
    assert_true(far.score < near.score);
    const char *c = "nothing relevant here";
    qp_passage_score(&t, NULL, c, strlen(c), 256, &none);
    assert_true(none.score == 0);
    const char *d = "a tar file";
    qp_passage_score(&t, NULL, d, strlen(d), 256, &part);
    assert_true(part.score > 0 && part.score < near.score);
    assert_true(part.present == 1);   /* term 0 only */
    /* weights: a rare term counts more */
    qp_passage ps[2] = {near, part};
    double w[3];
    qp_term_weights(ps, 2, t.n, w);
    assert_true(w[1] > w[0]);   /* "archiv" in one passage, "tar" in both */
    qp_terms_free(&t);
}

static void test_passage_window(void **state)
{
    (void)state;
    qp_terms t;
    qp_terms_build("needle", &t);
    char text[8192] = "";
    for (int i = 0; i < 500; i++)
        strcat(text, i == 400 ? "needle " : "hay ");
    qp_passage p;
    qp_passage_score(&t, NULL, text, strlen(text), 100, &p);
    /* a window of 100 words centred on the match */
    size_t needle_at = (size_t)(strstr(text, "needle") - text);
    assert_true(p.start < needle_at && p.end > needle_at);
    assert_true(p.end - p.start < 100 * 4 + 10);
    assert_true(p.end - p.start > 90 * 4);
    qp_terms_free(&t);
}

static void test_blend_position_and_title(void **state)
{
    (void)state;
    qp_cand c[12];
    memset(c, 0, sizeof c);
    for (int i = 0; i < 12; i++) {
        c[i].doc_id = i;
        c[i].rrf_rank = i + 1;
        c[i].rrf = 1.0 - 0.05 * i;
        c[i].reranked = i < 11;
        c[i].rerank_raw = i;   /* the reranker prefers the fused order reversed */
    }
    assert_true(qp_retrieval_share(1) == 0.75 && qp_retrieval_share(3) == 0.75);
    assert_true(qp_retrieval_share(4) == 0.6 && qp_retrieval_share(10) == 0.6);
    assert_true(qp_retrieval_share(11) == 0.4);
    qp_blend(c, 12, -1, 1.0);
    /* #11 (rerank 1.0, retrieval 0.5) beats #1 (rerank 0, retrieval 1):
     * 0.4 * 0.5 + 0.6 = 0.8 > 0.75 */
    assert_int_equal(c[0].doc_id, 10);
    assert_true(fabs(c[0].final - 0.8) < 1e-9);
    assert_true(fabs(c[0].w_retrieval - 0.4) < 1e-12);
    /* the one not reranked stays last */
    assert_int_equal(c[11].doc_id, 11);
    assert_true(c[11].final < c[10].final);

    /* the same with #5 the title channel's best match: protected with the
     * top rank's share, it ranks by 0.75 * 0.8 + 0.25 * 0.4 = 0.7 instead
     * of 0.6 * 0.8 + 0.4 * 0.4 = 0.64 */
    for (int i = 0; i < 12; i++) {
        c[i].doc_id = i;
        c[i].rrf_rank = i + 1;
        c[i].rrf = 1.0 - 0.05 * i;
        c[i].reranked = i < 11;
        c[i].rerank_raw = i;
    }
    qp_blend(c, 12, 4, 1.0);
    for (int i = 0; i < 12; i++)
        if (c[i].doc_id == 4) {
            assert_true(c[i].title_protected);
            assert_true(fabs(c[i].w_retrieval - 0.75) < 1e-12);
            assert_true(fabs(c[i].final - 0.7) < 1e-9);
        }
    /* the lexical share: half the reranker's weight */
    for (int i = 0; i < 12; i++) {
        c[i].doc_id = i;
        c[i].rrf_rank = i + 1;
        c[i].rrf = 1.0 - 0.05 * i;
        c[i].reranked = i < 11;
        c[i].rerank_raw = i;
    }
    qp_blend(c, 12, -1, QP_LEXICAL_SHARE);
    assert_int_equal(c[0].doc_id, 0);   /* 0.875 > 0.7 * 0.5 + 0.3 = 0.65 */
    assert_true(fabs(c[0].w_retrieval - 0.875) < 1e-12);
}

static void test_floor(void **state)
{
    (void)state;
    qp_cand c[5];
    memset(c, 0, sizeof c);
    /* blend order 0..4; search's top 2 are candidates 3 and 4 */
    for (int i = 0; i < 5; i++) {
        c[i].doc_id = i;
        c[i].final = 1.0 - 0.1 * i;
    }
    c[3].search_rank = 1;
    c[4].search_rank = 2;
    c[0].search_rank = 7;
    qp_floor(c, 5, 2);
    assert_int_equal(c[0].doc_id, 3);
    assert_int_equal(c[1].doc_id, 4);
    assert_int_equal(c[2].doc_id, 0);
    assert_int_equal(c[3].doc_id, 1);
    assert_int_equal(c[4].doc_id, 2);
    for (int i = 1; i < 5; i++)
        assert_true(c[i].final <= c[i - 1].final);
    /* search has fewer than the floor: the best others fill the rest */
    for (int i = 0; i < 5; i++) {
        c[i].doc_id = i;
        c[i].final = 1.0 - 0.1 * i;
        c[i].search_rank = 0;
    }
    c[4].search_rank = 1;
    qp_floor(c, 5, 3);
    assert_int_equal(c[0].doc_id, 0);
    assert_int_equal(c[1].doc_id, 1);
    assert_int_equal(c[2].doc_id, 4);
    assert_int_equal(c[3].doc_id, 2);
}

static const qp_variant three_variants[3] = {
    {QP_VAR_ORIGINAL, "how do I rotate keys", QP_ORIGINAL_WEIGHT},
    {QP_VAR_KEYWORDS, "rotate keys", 1.0},
    {QP_VAR_PRF, "how do I rotate keys secret vault", 1.0},
};

static void test_plan_lists(void **state)
{
    (void)state;
    qp_list l[QP_MAX_LISTS];
    /* keyword channels: bm25 per variant (the keyword variant's copy of the
     * original's expression counted once), the original's title list */
    qp_source kw[3] = {{1, 1, 0, 0}, {1, 1, 0, 0}, {1, 0, 0, 0}};
    size_t n = qp_plan_lists(three_variants, 3, kw, 1.0, 1.0, l);
    assert_int_equal(n, 3);
    assert_true(l[0].variant == 0 && l[0].channel == SEARCH_CH_BM25 && l[0].weight == 2.0);
    assert_true(l[1].variant == 0 && l[1].channel == SEARCH_CH_TITLE && l[1].weight == 2.0);
    assert_true(l[2].variant == 2 && l[2].channel == SEARCH_CH_BM25 && l[2].weight == 1.0);
    /* the user's weights scale them; 0 drops the list */
    n = qp_plan_lists(three_variants, 3, kw, 0.0, 2.0, l);
    assert_int_equal(n, 1);
    assert_true(l[0].channel == SEARCH_CH_TITLE && l[0].weight == 4.0);
    /* the original's translation list at its share of bm25's weight */
    kw[0].xlate = 0.5;
    n = qp_plan_lists(three_variants, 3, kw, 1.0, 1.0, l);
    assert_int_equal(n, 4);
    assert_true(l[2].variant == 0 && l[2].channel == SEARCH_CH_XLATE && l[2].weight == 1.0);
    assert_string_equal(qp_list_channel_name(SEARCH_CH_XLATE), "translation");
    /* vectors ran: every variant's hybrid order, never a bare vector list
     * (the hybrid order holds the translation: no list of its own) */
    qp_source hy[3] = {{1, 1, 1, 0.5}, {1, 1, 1, 0}, {1, 0, 1, 0}};
    n = qp_plan_lists(three_variants, 3, hy, 1.0, 1.0, l);
    assert_int_equal(n, 4);
    assert_true(l[0].variant == 0 && l[0].channel == QP_LIST_HYBRID && l[0].weight == 2.0);
    assert_true(l[1].variant == 0 && l[1].channel == SEARCH_CH_TITLE);
    /* the keyword variant's text differs for the vector: its own list */
    assert_true(l[2].variant == 1 && l[2].channel == QP_LIST_HYBRID && l[2].weight == 1.0);
    assert_true(l[3].variant == 2 && l[3].channel == QP_LIST_HYBRID);
    for (size_t i = 0; i < n; i++)
        assert_int_not_equal(l[i].channel, SEARCH_CH_VECTOR);
    assert_string_equal(qp_list_channel_name(QP_LIST_HYBRID), "hybrid");
    assert_string_equal(qp_list_channel_name(SEARCH_CH_VECTOR), "vector");
    assert_string_equal(qp_list_channel_name(-1), "?");
}

/* Note A is every variant's keyword #1 and the vector's #30; note B the
 * vector's #1 and keyword #2. search weighed that vector list at
 * confidence ~0 (bm25 sure of A, the vector not supporting it): its hybrid
 * order is A, B. Fused over the planned lists A must stay first; the old
 * plan (a bm25 and a vector list per variant, alike) put B first. */
static void test_zero_confidence_vector_does_not_outweigh_keywords(void **state)
{
    (void)state;
    qp_source hy[3] = {{1, 0, 1, 0}, {1, 0, 1, 0}, {1, 0, 1, 0}};
    qp_list l[QP_MAX_LISTS];
    size_t n = qp_plan_lists(three_variants, 3, hy, 1.0, 1.0, l);
    qp_cand c[2];
    memset(c, 0, sizeof c);
    c[0].doc_id = 1;   /* A */
    c[1].doc_id = 2;   /* B */
    for (size_t i = 0; i < n; i++) {
        c[0].quality[i] = c[1].quality[i] = 1.0;
        if (l[i].channel == QP_LIST_HYBRID)
            c[0].rank[i] = 1, c[1].rank[i] = 2;
        else if (l[i].channel == SEARCH_CH_VECTOR)
            c[0].rank[i] = 30, c[1].rank[i] = 1;
        else if (l[i].channel == SEARCH_CH_BM25)
            c[0].rank[i] = 1, c[1].rank[i] = 2;
    }
    qp_rrf(c, 2, l, n, QP_RRF_K);
    assert_int_equal(c[0].doc_id, 1);
    assert_true(c[0].rrf > c[1].rrf);

    /* the old plan, for contrast: B first */
    qp_list old[6] = {{0, SEARCH_CH_BM25, 2}, {0, SEARCH_CH_VECTOR, 2}, {1, SEARCH_CH_BM25, 1},
                      {1, SEARCH_CH_VECTOR, 1}, {2, SEARCH_CH_BM25, 1}, {2, SEARCH_CH_VECTOR, 1}};
    memset(c, 0, sizeof c);
    c[0].doc_id = 1, c[1].doc_id = 2;
    for (int i = 0; i < 6; i++) {
        c[0].quality[i] = c[1].quality[i] = 1.0;
        int vec = old[i].channel == SEARCH_CH_VECTOR;
        c[0].rank[i] = vec ? 30 : 1;
        c[1].rank[i] = vec ? 1 : 2;
    }
    qp_rrf(c, 2, old, 6, QP_RRF_K);
    assert_int_equal(c[0].doc_id, 2);
}

static void fused_order(qp_cand *c, int n)
{
    memset(c, 0, (size_t)n * sizeof *c);
    for (int i = 0; i < n; i++) {
        c[i].doc_id = i;
        c[i].rrf_rank = i + 1;
        c[i].rrf = 1.0 - 0.04 * i;
        c[i].reranked = 1;
    }
}

static void test_rerank_trust(void **state)
{
    (void)state;
    qp_cand c[12];
    double lex[12];
    /* agrees with the retrieval and the words: full trust */
    fused_order(c, 12);
    for (int i = 0; i < 12; i++)
        c[i].rerank_raw = 12 - i, lex[i] = 1.0 - 0.05 * i;
    assert_true(fabs(qp_rerank_trust(c, 12, lex) - 1.0) < 1e-12);
    /* against both: none */
    for (int i = 0; i < 12; i++)
        c[i].rerank_raw = i;
    assert_true(qp_rerank_trust(c, 12, lex) == 0.0);
    /* against the retrieval, with the words: the mean of +1 and -1 */
    for (int i = 0; i < 12; i++)
        lex[i] = 0.05 * i;
    assert_true(qp_rerank_trust(c, 12, lex) == 0.0);
    /* agreement no better than chance (rho 0.24 < 1 / sqrt(11) = 0.30) earns
     * nothing: ranks 1..12 against a shuffle with that rho */
    {
        static const int shuffled[12] = {3, 9, 1, 12, 5, 2, 8, 11, 6, 4, 10, 7};
        for (int i = 0; i < 12; i++)
            c[i].rerank_raw = 13 - shuffled[i];
        assert_true(qp_rerank_trust(c, 12, NULL) == 0.0);
    }
    /* flat lexical scores say nothing: the retrieval's rho alone */
    for (int i = 0; i < 12; i++)
        lex[i] = 0.5, c[i].rerank_raw = 12 - i;
    assert_true(fabs(qp_rerank_trust(c, 12, lex) - 1.0) < 1e-12);
    assert_true(fabs(qp_rerank_trust(c, 12, NULL) - 1.0) < 1e-12);
    /* a flat reranker: nothing earned */
    for (int i = 0; i < 12; i++)
        c[i].rerank_raw = 0.3;
    assert_true(qp_rerank_trust(c, 12, lex) == 0.0);
    /* too few to judge: the fused order stands */
    assert_true(qp_rerank_trust(c, 2, lex) == 0.0);

    /* at trust 0 a reranker that reverses everything moves nothing */
    fused_order(c, 12);
    for (int i = 0; i < 12; i++)
        c[i].rerank_raw = i, lex[i] = 0.05 * (11 - i);
    double t = qp_rerank_trust(c, 12, lex);
    assert_true(t == 0.0);
    qp_blend(c, 12, -1, t);
    for (int i = 0; i < 12; i++) {
        assert_int_equal(c[i].doc_id, i);
        assert_true(c[i].w_retrieval == 1.0);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_keyword_form),
        cmocka_unit_test(test_terms),
        cmocka_unit_test(test_prf),
        cmocka_unit_test(test_rrf_bonus),
        cmocka_unit_test(test_passage_score),
        cmocka_unit_test(test_passage_window),
        cmocka_unit_test(test_blend_position_and_title),
        cmocka_unit_test(test_floor),
        cmocka_unit_test(test_plan_lists),
        cmocka_unit_test(test_zero_confidence_vector_does_not_outweigh_keywords),
        cmocka_unit_test(test_rerank_trust),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
