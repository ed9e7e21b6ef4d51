/* fusion: RRF for keyword channels, standardised-score fusion with a
 * per-query vector confidence when the vector channel ran. Hand-made
 * channel lists, no index. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "search/fusion.h"

#define NC 40

static const double W[SEARCH_N_CHANNELS] = {1.0, 1.5, 0.5};   /* bm25, title, vector */

/* Candidate i gets rank i+1 in a channel whose scores are given best first. */
static void set_list(fusion_cand *c, int ch, const double *scores, size_t n, const int *who)
{
    for (size_t i = 0; i < n; i++) {
        c[who[i]].ch[ch].rank = (int)i + 1;
        c[who[i]].ch[ch].score = scores[i];
    }
}

static size_t best_of(const fusion_cand *c, size_t n)
{
    size_t b = 0;
    for (size_t i = 1; i < n; i++)
        if (c[i].fused > c[b].fused)
            b = i;
    return b;
}

static void test_rrf_keyword_only(void **state)
{
    (void)state;
    fusion_cand c[3];
    memset(c, 0, sizeof c);
    c[0].ch[SEARCH_CH_BM25] = (search_channel_hit){.rank = 1, .score = 5};
    c[0].ch[SEARCH_CH_TITLE] = (search_channel_hit){.rank = 1, .score = 1.0};
    c[1].ch[SEARCH_CH_BM25] = (search_channel_hit){.rank = 2, .score = 4};
    c[2].ch[SEARCH_CH_TITLE] = (search_channel_hit){.rank = 2, .score = 0.5};
    /* a vector hit is ignored when the vector channel did not run */
    c[2].ch[SEARCH_CH_VECTOR] = (search_channel_hit){.rank = 1, .score = 0.9};
    search_fusion info;
    fusion_run(c, 3, W, 60, 0, &info);
    assert_int_equal(info.method, SEARCH_FUSION_RRF);
    assert_true(fabs(c[0].fused - 1.0) < 1e-12);   /* first everywhere, exact name */
    double best = 2.5 / 61;
    assert_true(fabs(c[1].fused - (1.0 / 62) / best) < 1e-12);
    assert_true(fabs(c[2].fused - (0.5 * 1.5 / 62) / best) < 1e-12);
    assert_true(c[2].ch[SEARCH_CH_VECTOR].vote == 0);
    assert_true(info.weight[SEARCH_CH_VECTOR] == 0);
    for (int i = 0; i < 3; i++) {
        double sum = 0;
        for (int ch = 0; ch < SEARCH_N_CHANNELS; ch++)
            sum += c[i].ch[ch].vote;
        assert_true(fabs(sum - c[i].fused) < 1e-12);
    }
}

/* BM25 has a clear winner (note 0), the vector list is flat and puts
 * another note (1) first by a hair: RRF let the vector flip them, the
 * score fusion does not. */
static void test_flat_vector_cannot_outvote_clear_keyword_winner(void **state)
{
    (void)state;
    fusion_cand c[NC];
    memset(c, 0, sizeof c);
    double bs[NC], vs[NC];
    int bw[NC], vw[NC];
    for (int i = 0; i < NC; i++) {
        bs[i] = i == 0 ? 20.0 : 6.0 - 0.05 * i;
        bw[i] = i;
        vs[i] = 0.800 - 0.0005 * i;
        vw[i] = (i + 1) % NC;   /* vector: 1, 2, ..., 39, 0 */
    }
    set_list(c, SEARCH_CH_BM25, bs, NC, bw);
    set_list(c, SEARCH_CH_VECTOR, vs, NC, vw);
    search_fusion info;
    double equal[SEARCH_N_CHANNELS] = {1, 1.5, 1};
    fusion_run(c, NC, equal, 60, 0, &info);
    /* (RRF with the vector: note 1 has ranks 2 + 1, note 0 ranks 1 + 40.) */
    double rrf0 = 1.0 / 61 + 1.0 / 100, rrf1 = 1.0 / 62 + 1.0 / 61;
    assert_true(rrf1 > rrf0);
    fusion_run(c, NC, equal, 60, 1, &info);
    assert_int_equal(info.method, SEARCH_FUSION_Z);
    assert_int_equal(best_of(c, NC), 0);
    /* bm25 is sure of note 0, the vector does not support it */
    assert_true(info.certainty > 0.9);
    assert_true(info.agreement < 0.05);
    assert_true(info.vector_confidence < 0.15);
    assert_true(fabs(info.weight[SEARCH_CH_VECTOR] - info.vector_confidence) < 1e-12);
}

/* A paraphrase: BM25 matches many notes by common words about equally,
 * the vector channel has a note far ahead of the rest: it wins. */
static void test_clear_vector_winner_beats_unsure_keywords(void **state)
{
    (void)state;
    fusion_cand c[NC];
    memset(c, 0, sizeof c);
    double bs[20];
    int bw[20];
    for (int i = 0; i < 20; i++) {
        bs[i] = 2.0 - 0.01 * i;
        bw[i] = 1 + i;   /* notes 1..20; note 5 is keyword rank 5 */
    }
    double vs[NC];
    int vw[NC];
    for (int i = 0; i < NC; i++) {
        vs[i] = i == 0 ? 0.9 : 0.5 - 0.002 * i;
        vw[i] = (i + 30) % NC;   /* note 30 first, which BM25 did not find */
    }
    set_list(c, SEARCH_CH_BM25, bs, 20, bw);
    set_list(c, SEARCH_CH_VECTOR, vs, NC, vw);
    search_fusion info;
    fusion_run(c, NC, W, 60, 1, &info);
    assert_int_equal(best_of(c, NC), 30);
    assert_true(info.certainty < 0.3);   /* twenty near-equal keyword hits */
    assert_true(info.vector_confidence > 0.7);
    assert_true(c[30].ch[SEARCH_CH_VECTOR].z > 5);
}

/* When the vector channel puts BM25's sure note on top too, it keeps its
 * whole weight. */
static void test_agreement_keeps_vector_weight(void **state)
{
    (void)state;
    fusion_cand c[NC];
    memset(c, 0, sizeof c);
    double bs[NC], vs[NC];
    int who[NC];
    for (int i = 0; i < NC; i++) {
        bs[i] = i == 0 ? 30.0 : 5.0 - 0.01 * i;
        vs[i] = i == 0 ? 0.9 : 0.5 - 0.001 * i;
        who[i] = i;
    }
    set_list(c, SEARCH_CH_BM25, bs, NC, who);
    set_list(c, SEARCH_CH_VECTOR, vs, NC, who);
    search_fusion info;
    fusion_run(c, NC, W, 60, 1, &info);
    assert_true(info.certainty > 0.9);
    assert_true(info.agreement > 0.9);
    assert_true(info.vector_confidence > 0.9);
    /* the same lists with the vector on another note: confidence drops */
    fusion_cand d[NC];
    memset(d, 0, sizeof d);
    int other[NC];
    for (int i = 0; i < NC; i++)
        other[i] = (i + 1) % NC;
    set_list(d, SEARCH_CH_BM25, bs, NC, who);
    set_list(d, SEARCH_CH_VECTOR, vs, NC, other);
    search_fusion disagree;
    fusion_run(d, NC, W, 60, 1, &disagree);
    assert_true(disagree.vector_confidence < 0.1);
    assert_int_equal(best_of(d, NC), 0);
    assert_int_equal(best_of(c, NC), 0);
    /* first in both channels, no title hit: everything but the title share */
    double zb = c[0].ch[SEARCH_CH_BM25].z, zv = c[0].ch[SEARCH_CH_VECTOR].z;
    double zref = fmax(zb, zv);
    double expect = (zb + 0.5 * info.vector_confidence * zv) /
                    (1.5 * zref + zb + 0.5 * info.vector_confidence * zv);
    assert_true(fabs(c[0].fused - expect) < 1e-9);
}

/* A lone hit and a list of equal scores stand one unit out; a note below
 * its channel's mean gets no vote from it; only the top FUSION_STATS_N
 * notes define the statistics. */
static void test_degenerate_lists_and_stats_window(void **state)
{
    (void)state;
    fusion_cand c[4];
    memset(c, 0, sizeof c);
    c[0].ch[SEARCH_CH_BM25] = (search_channel_hit){.rank = 1, .score = 3};
    c[1].ch[SEARCH_CH_VECTOR] = (search_channel_hit){.rank = 1, .score = 0.4};
    c[2].ch[SEARCH_CH_VECTOR] = (search_channel_hit){.rank = 1, .score = 0.4};
    search_fusion info;
    fusion_run(c, 4, W, 60, 1, &info);
    assert_true(c[0].ch[SEARCH_CH_BM25].z == 1.0);
    assert_true(c[1].ch[SEARCH_CH_VECTOR].z == 1.0);
    assert_true(c[2].ch[SEARCH_CH_VECTOR].z == 1.0);
    assert_true(c[3].fused == 0);
    assert_int_equal(info.n[SEARCH_CH_BM25], 1);
    assert_int_equal(info.n[SEARCH_CH_VECTOR], 2);

    enum { M = FUSION_STATS_N + 50 };
    static fusion_cand big[M];
    memset(big, 0, sizeof big);
    for (int i = 0; i < M; i++) {
        big[i].ch[SEARCH_CH_BM25].rank = i + 1;
        big[i].ch[SEARCH_CH_BM25].score = i < FUSION_STATS_N ? 10.0 - 0.01 * i : -1000.0;
    }
    fusion_run(big, M, W, 60, 1, &info);
    assert_int_equal(info.n[SEARCH_CH_BM25], FUSION_STATS_N);
    assert_true(info.mean[SEARCH_CH_BM25] > 9.0);   /* the outliers past the window do not count */
    assert_true(big[M - 1].ch[SEARCH_CH_BM25].vote == 0);   /* below the mean: no vote */
    assert_true(big[0].ch[SEARCH_CH_BM25].vote > 0);
}

/* scripts/demo.sh's "how do I remember what I study" with the GloVe model:
 * bm25 holds two English notes (0: Spaced Repetition, 1: Git Basics, both
 * with "remember"), the translated list one Chinese note (2: study=研究),
 * the vector channel prefers 1 and 0 and puts 2 low. The lone translated
 * hit gets z = 1 like any list without spread; at its weight above bm25's
 * it came second. A list without spread is doubted as far as bm25 is sure
 * of a note in the query's own script: it comes below the notes that hold
 * the query's words. */
static void demo_lists(fusion_cand *c, int own)
{
    memset(c, 0, 6 * sizeof *c);
    c[0].ch[SEARCH_CH_BM25] = (search_channel_hit){.rank = 1, .score = 2.439};
    c[1].ch[SEARCH_CH_BM25] = (search_channel_hit){.rank = 2, .score = 1.993};
    c[2].ch[SEARCH_CH_XLATE] = (search_channel_hit){.rank = 1, .score = 3.602};
    static const double vs[6] = {0.856, 0.847, 0.839, 0.70, 0.62, 0.55};
    static const int vw[6] = {1, 3, 0, 4, 5, 2};
    set_list(c, SEARCH_CH_VECTOR, vs, 6, vw);
    c[0].own_script = c[1].own_script = own;
}

static void test_lone_translated_hit_gives_way_to_sure_same_language_notes(void **state)
{
    (void)state;
    double w[SEARCH_N_CHANNELS] = {1.0, 1.5, 0.443};
    w[SEARCH_CH_XLATE] = 1.01;   /* 5 x (1 - 0.37)^2 x 1/2 */
    fusion_cand c[6];
    search_fusion info;

    demo_lists(c, 1);
    fusion_run(c, 6, w, 60, 1, &info);
    double sure = 1.0 / (1.0 + exp(-2.0));   /* bm25 z = +1, -1 */
    assert_true(fabs(info.xlate_certainty - sure) < 1e-9);
    assert_true(fabs(info.xlate_confidence - (1 - sure)) < 1e-9);
    assert_true(fabs(info.weight[SEARCH_CH_XLATE] - 1.01 * (1 - sure)) < 1e-9);
    assert_true(c[2].ch[SEARCH_CH_XLATE].z == 1.0);   /* still a lone hit's z */
    assert_true(c[0].fused > c[1].fused && c[1].fused > c[2].fused);
    assert_true(c[2].fused > 0);   /* doubted, not dropped */

    /* a translated list with spread: its z says how far its best stands
     * out, and it keeps its weight */
    demo_lists(c, 1);
    c[3].ch[SEARCH_CH_XLATE] = (search_channel_hit){.rank = 2, .score = 1.2};
    w[SEARCH_CH_XLATE] = 5.0;
    fusion_run(c, 6, w, 60, 1, &info);
    assert_true(fabs(info.xlate_certainty - sure) < 1e-9);
    assert_true(info.xlate_confidence == 1 && info.weight[SEARCH_CH_XLATE] == 5.0);

    /* a lone bm25 hit is "sure" only by the convention that makes a lone
     * translated hit z = 1: nothing measured, no doubt */
    demo_lists(c, 1);
    c[1].ch[SEARCH_CH_BM25] = (search_channel_hit){0};
    fusion_run(c, 6, w, 60, 1, &info);
    assert_true(info.xlate_certainty == 0 && info.xlate_confidence == 1);
    assert_true(info.weight[SEARCH_CH_XLATE] == 5.0);

    /* bm25 found only notes in the other language (names, code): nothing
     * to give way to, the translation decides */
    demo_lists(c, 0);
    fusion_run(c, 6, w, 60, 1, &info);
    assert_true(info.xlate_certainty == 0 && info.xlate_confidence == 1);
    assert_true(info.weight[SEARCH_CH_XLATE] == 5.0);
    assert_true(c[2].fused > c[0].fused);

    /* keyword channels only (RRF): the weight as given */
    fusion_run(c, 6, w, 60, 0, &info);
    assert_true(info.weight[SEARCH_CH_XLATE] == 5.0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rrf_keyword_only),
        cmocka_unit_test(test_flat_vector_cannot_outvote_clear_keyword_winner),
        cmocka_unit_test(test_clear_vector_winner_beats_unsure_keywords),
        cmocka_unit_test(test_agreement_keeps_vector_weight),
        cmocka_unit_test(test_degenerate_lists_and_stats_window),
        cmocka_unit_test(test_lone_translated_hit_gives_way_to_sure_same_language_notes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
