#include "search/fusion.h"

#include <math.h>
#include <string.h>

/* ---- reciprocal rank fusion (keyword channels) ----------------------- */

static void fuse_rrf(fusion_cand *c, size_t n, const double w[SEARCH_N_CHANNELS], int k,
                     int vector_ran, search_fusion *info)
{
    double best = 0;
    for (int ch = 0; ch < SEARCH_N_CHANNELS; ch++) {
        if (ch == SEARCH_CH_VECTOR && !vector_ran)
            continue;
        info->weight[ch] = w[ch];
        best += w[ch] / (k + 1);
    }
    for (size_t i = 0; i < n; i++) {
        double sum = 0;
        for (int ch = 0; ch < SEARCH_N_CHANNELS; ch++) {
            search_channel_hit *h = &c[i].ch[ch];
            h->z = 0;
            h->vote = 0;
            if (!h->rank || (ch == SEARCH_CH_VECTOR && !vector_ran))
                continue;
            /* The title channel's vote counts as much as its match is good. */
            double quality = ch == SEARCH_CH_TITLE ? h->score : 1.0;
            h->vote = best > 0 ? quality * w[ch] / (k + h->rank) / best : 0;
            sum += h->vote;
        }
        c[i].fused = sum;
    }
}

/* ---- distribution-based score fusion (hybrid) ------------------------ */

static int in_stats(const search_channel_hit *h)
{
    return h->rank > 0 && h->rank <= FUSION_STATS_N;
}

/* Mean and spread of a channel's scores over its top FUSION_STATS_N notes. */
static void channel_stats(const fusion_cand *c, size_t n, int ch, search_fusion *info)
{
    double sum = 0, sq = 0;
    int m = 0;
    for (size_t i = 0; i < n; i++)
        if (in_stats(&c[i].ch[ch])) {
            sum += c[i].ch[ch].score;
            m++;
        }
    double mean = m ? sum / m : 0;
    for (size_t i = 0; i < n; i++)
        if (in_stats(&c[i].ch[ch])) {
            double d = c[i].ch[ch].score - mean;
            sq += d * d;
        }
    info->n[ch] = m;
    info->mean[ch] = mean;
    info->sd[ch] = m > 1 ? sqrt(sq / m) : 0;
}

/* Whether a channel's list has no spread: a lone hit, or equal scores (a
 * relative tolerance: equal scores may differ in the last bits). */
static int no_spread(const search_fusion *info, int ch)
{
    double sd = info->sd[ch];
    return sd <= 1e-12 * fabs(info->mean[ch]) || sd == 0;
}

/* The standardised score; a list without spread gives 1. */
static double zscore(const search_fusion *info, int ch, double s)
{
    return no_spread(info, ch) ? 1.0 : (s - info->mean[ch]) / info->sd[ch];
}

/* certainty: the largest softmax(z) over bm25's list; agreement: how much
 * of the vector channel's top z the notes bm25 puts its mass on carry. */
static void vector_confidence(const fusion_cand *c, size_t n, double zb_top, double zv_top,
                              search_fusion *info)
{
    info->certainty = 0;
    info->agreement = 1;
    info->vector_confidence = 1;
    if (info->n[SEARCH_CH_BM25] == 0 || info->n[SEARCH_CH_VECTOR] == 0)
        return;
    double mass = 0, support = 0;
    for (size_t i = 0; i < n; i++) {
        const search_channel_hit *b = &c[i].ch[SEARCH_CH_BM25];
        if (!in_stats(b))
            continue;
        double p = exp(b->z - zb_top);   /* <= 1: no overflow */
        mass += p;
        const search_channel_hit *v = &c[i].ch[SEARCH_CH_VECTOR];
        if (v->rank)
            support += p * fmax(0.0, v->z);
    }
    info->certainty = 1.0 / mass;   /* the top note's share: exp(0) / mass */
    double a = zv_top > 0 ? support / mass / zv_top : 0;
    info->agreement = a < 0 ? 0 : a > 1 ? 1 : a;
    info->vector_confidence = 1.0 - info->certainty * (1.0 - info->agreement);
}

/* How sure bm25 is of a note in the reader's own script: the largest
 * softmax(z) share of bm25's list that such a note holds (0: bm25 found
 * none, or only notes in the other language, whose words are names and
 * code). The translated list counts only notes in the other language, so
 * it can never support that note: no agreement term as for vectors. */
static double own_script_certainty(const fusion_cand *c, size_t n, double zb_top)
{
    double mass = 0, own = 0;
    for (size_t i = 0; i < n; i++) {
        const search_channel_hit *b = &c[i].ch[SEARCH_CH_BM25];
        if (!in_stats(b))
            continue;
        double p = exp(b->z - zb_top);   /* <= 1: no overflow */
        mass += p;
        if (c[i].own_script && p > own)
            own = p;
    }
    return mass > 0 ? own / mass : 0;
}

/* The translated list's weight for this query. A list without spread (a
 * lone hit, most often: one translated word that a single note holds)
 * gets z = 1 by convention, not because its hit stands out; where bm25 is
 * sure of a note in the reader's language, that convention made it weigh
 * as that note ("how do I remember what I study" with the GloVe model:
 * study=研究 in a travel note came 2nd, above Git Basics, which holds
 * "remember"). Such a list is doubted as far as bm25 is sure of a
 * same-language note, where that is measured: bm25's own list has spread
 * (a lone bm25 hit is "sure" by the same convention: doubting a lone
 * translated hit by it dropped the right Chinese note of "binary tree
 * traversal" out of the mixed vault's top 10). A list with spread keeps
 * its weight: its z measures how far its hit stands out. Capping the
 * weight at bm25's lost 0.027-0.032 on dev en>zh with the GloVe model
 * (docs/performance.md, session 28). */
static void xlate_confidence(const fusion_cand *c, size_t n, const double w[SEARCH_N_CHANNELS],
                             double zb_top, search_fusion *info)
{
    int measured = info->n[SEARCH_CH_BM25] > 1 && !no_spread(info, SEARCH_CH_BM25);
    info->xlate_certainty = measured ? own_script_certainty(c, n, zb_top) : 0;
    info->xlate_confidence =
        info->n[SEARCH_CH_XLATE] && no_spread(info, SEARCH_CH_XLATE) ? 1.0 - info->xlate_certainty
                                                                      : 1.0;
    info->weight[SEARCH_CH_XLATE] = w[SEARCH_CH_XLATE] * info->xlate_confidence;
}

static void fuse_z(fusion_cand *c, size_t n, const double w[SEARCH_N_CHANNELS], search_fusion *info)
{
    static const int scored[] = {SEARCH_CH_BM25, SEARCH_CH_VECTOR, SEARCH_CH_XLATE};
    double top[SEARCH_N_CHANNELS] = {0};
    for (size_t s = 0; s < sizeof scored / sizeof *scored; s++) {
        int ch = scored[s];
        channel_stats(c, n, ch, info);
        int any = 0;
        for (size_t i = 0; i < n; i++) {
            search_channel_hit *h = &c[i].ch[ch];
            h->z = h->rank ? zscore(info, ch, h->score) : 0;
            if (h->rank && (!any || h->z > top[ch]))
                top[ch] = h->z;
            any |= h->rank != 0;
        }
    }
    vector_confidence(c, n, top[SEARCH_CH_BM25], top[SEARCH_CH_VECTOR], info);
    info->weight[SEARCH_CH_BM25] = w[SEARCH_CH_BM25];
    info->weight[SEARCH_CH_TITLE] = w[SEARCH_CH_TITLE];
    info->weight[SEARCH_CH_VECTOR] = w[SEARCH_CH_VECTOR] * info->vector_confidence;
    xlate_confidence(c, n, w, top[SEARCH_CH_BM25], info);
    /* An exact name is worth the clearest hit of any channel. */
    double z_ref = fmax(1.0, fmax(top[SEARCH_CH_BM25], top[SEARCH_CH_VECTOR]));
    double best = w[SEARCH_CH_TITLE] * z_ref;
    for (size_t s = 0; s < sizeof scored / sizeof *scored; s++)
        if (info->n[scored[s]])
            best += info->weight[scored[s]] * fmax(0.0, top[scored[s]]);
    for (size_t i = 0; i < n; i++) {
        double sum = 0;
        for (int ch = 0; ch < SEARCH_N_CHANNELS; ch++) {
            search_channel_hit *h = &c[i].ch[ch];
            h->vote = 0;
            if (!h->rank)
                continue;
            double v = ch == SEARCH_CH_TITLE ? h->score * z_ref : fmax(0.0, h->z);
            h->vote = best > 0 ? info->weight[ch] * v / best : 0;
            sum += h->vote;
        }
        c[i].fused = sum;
    }
}

void fusion_run(fusion_cand *c, size_t n, const double weights[SEARCH_N_CHANNELS], int rrf_k,
                int vector_ran, search_fusion *info)
{
    memset(info, 0, sizeof *info);
    if (vector_ran) {
        info->method = SEARCH_FUSION_Z;
        fuse_z(c, n, weights, info);
    } else {
        info->method = SEARCH_FUSION_RRF;
        fuse_rrf(c, n, weights, rrf_k, vector_ran, info);
    }
}
