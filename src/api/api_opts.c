/* api_opts — the search options' defaults, config merge and bounds (api.h,
 * "search options"): the one place a tunable's default and limits are
 * written. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "api/api.h"

#define OPT(name, kind, field, def, min, max, cfg) \
    {name, kind, offsetof(search_opts, field), def, min, max, cfg}

const api_opt api_search_opt_table[] = {
    /* results to return; 0: every match (--all) */
    OPT("limit", API_OPT_SIZE, limit, 10, 0, INFINITY, -1),
    /* fused score (cosine for vsearch) below which results are dropped */
    OPT("min_score", API_OPT_REAL, min_score, 0, -INFINITY, INFINITY, -1),
    OPT("bm25_weight", API_OPT_REAL, weights[SEARCH_CH_BM25], 1.0, 0, INFINITY, CONFIG_W_BM25),
    OPT("title_weight", API_OPT_REAL, weights[SEARCH_CH_TITLE], 1.5, 0, INFINITY,
        CONFIG_W_TITLE),
    /* The hybrid fusion compares standardised scores: a vector hit must
     * stand out twice as far as a keyword hit to outvote it (docs/
     * performance.md: equal weight let a weak model reorder good keyword
     * results). */
    OPT("vector_weight", API_OPT_REAL, weights[SEARCH_CH_VECTOR], 0.5, 0, INFINITY,
        CONFIG_W_VECTOR),
    /* Times (1 - coverage)^2 per query (search.h): where the query's own
     * words find nothing in its own language, the original's lists only
     * match names and code shared by the other language's notes, and the
     * translation is the evidence (description -> note nDCG@10 on held-out
     * Obsidian sentences rose with this weight up to ~5; docs/performance.md,
     * cross-language); a same-language chunk holding the query's rare words
     * takes it below bm25's, and all of them to 0. */
    OPT("translation_weight", API_OPT_REAL, weights[SEARCH_CH_XLATE], 5.0, 0, INFINITY, -1),
    /* g of the link-graph prior 1 + g * log10(1 + in-degree) */
    OPT("graph_weight", API_OPT_REAL, graph_weight, 0.1, 0, INFINITY, CONFIG_W_GRAPH),
    OPT("lang_bonus", API_OPT_REAL, lang_bonus, 0.1, 0, INFINITY, -1),
    /* k of reciprocal rank fusion, 1 / (k + rank) */
    OPT("rrf_k", API_OPT_INT, rrf_k, 60, 1, 1000000, -1),
    OPT("with_snippet", API_OPT_INT, with_snippet, 1, 0, 1, -1),
    /* passages per result (--passages); 1: the best only */
    OPT("passages", API_OPT_SIZE, passages, 1, 1, API_MAX_PASSAGES, -1),
    /* --recent / --no-recent; unset: the config's `recency:` decides */
    OPT("recent", API_OPT_INT, recent, 0, 0, 1, -1),
    /* half-life of the recency prior in days; 0: off (search/meta.h) */
    OPT("recency_days", API_OPT_REAL, recency_days, 0, 0, 1e6, -1),
    /* --no-translate / config `translate: false` / MCP translate (its opposite) */
    OPT("no_translate", API_OPT_INT, no_translate, 0, 0, 1, -1),
    /* --vector-scan / config `vector_scan:` (search.h SEARCH_VEC_SCAN_*): auto by default,
     * two-stage from SEARCH_VEC_SCAN_AUTO_ROWS vectors over the sketches stored with the
     * segments (docs/performance.md, session 36: recall of the exact top 10 1.0000 /
     * 0.9994 and the same nDCG@10 on scifact and drcd among 1M distractors) */
    OPT("vector_scan", API_OPT_INT, vec_scan, SEARCH_VEC_SCAN_AUTO, 0, 2, -1),
    /* two-stage: rows scored exactly per note of the channel's depth */
    OPT("vector_candidates", API_OPT_INT, vec_candidates, 128, 1, 4096, -1),
};

_Static_assert(SEARCH_VEC_SCAN_EXACT == 0 && SEARCH_VEC_SCAN_TWO_STAGE == 1 &&
               SEARCH_VEC_SCAN_AUTO == 2 && CONFIG_N_VEC_SCANS == 3,
               "config_vec_scan_names follows SEARCH_VEC_SCAN_*");

const size_t api_search_n_opts = sizeof api_search_opt_table / sizeof *api_search_opt_table;

const api_opt *api_search_opt(const char *name)
{
    for (size_t i = 0; i < api_search_n_opts; i++)
        if (strcmp(api_search_opt_table[i].name, name) == 0)
            return &api_search_opt_table[i];
    return NULL;
}

static void *field(search_opts *s, const api_opt *r)
{
    return (char *)s + r->offset;
}

static int is_set(const search_opts *s, const api_opt *r)
{
    const void *f = (const char *)s + r->offset;
    switch (r->kind) {
    case API_OPT_REAL: return !isnan(*(const double *)f);
    case API_OPT_INT: return *(const int *)f != API_UNSET_INT;
    case API_OPT_SIZE: return *(const size_t *)f != API_UNSET_SIZE;
    }
    return 0;
}

static double value(const search_opts *s, const api_opt *r)
{
    const void *f = (const char *)s + r->offset;
    switch (r->kind) {
    case API_OPT_REAL: return *(const double *)f;
    case API_OPT_INT: return *(const int *)f;
    case API_OPT_SIZE: return (double)*(const size_t *)f;
    }
    return 0;
}

/* v is in bounds (check) or a default (in bounds by the table's test). */
static void set_value(search_opts *s, const api_opt *r, double v)
{
    switch (r->kind) {
    case API_OPT_REAL: *(double *)field(s, r) = v; break;
    case API_OPT_INT: *(int *)field(s, r) = (int)v; break;
    case API_OPT_SIZE: *(size_t *)field(s, r) = (size_t)v; break;
    }
}

static void unset(search_opts *s, const api_opt *r)
{
    switch (r->kind) {
    case API_OPT_REAL: *(double *)field(s, r) = NAN; break;
    case API_OPT_INT: *(int *)field(s, r) = API_UNSET_INT; break;
    case API_OPT_SIZE: *(size_t *)field(s, r) = API_UNSET_SIZE; break;
    }
}

void api_search_opts_init(api_search_opts *o)
{
    memset(o, 0, sizeof *o);
    for (size_t i = 0; i < api_search_n_opts; i++)
        unset(&o->search, &api_search_opt_table[i]);
}

void api_search_opts_merge_config(api_search_opts *o, const config *cfg)
{
    search_opts *s = &o->search;
    for (size_t i = 0; i < api_search_n_opts; i++) {
        const api_opt *r = &api_search_opt_table[i];
        if (r->config_weight >= 0 && cfg->has_weight[r->config_weight] && !is_set(s, r))
            set_value(s, r, cfg->weights[r->config_weight]);
    }
    /* Config keys of their own go here, one line each. */
    if (isnan(s->recency_days) && (s->recent == 1 || (s->recent == API_UNSET_INT &&
                                                      cfg->recency_days > 0)))
        s->recency_days = cfg->recency_days > 0 ? cfg->recency_days : CONFIG_RECENCY_DAYS;
    if (cfg->has_vector_scan && s->vec_scan == API_UNSET_INT)
        s->vec_scan = cfg->vector_scan;
    if (cfg->no_translate && s->no_translate == API_UNSET_INT)
        s->no_translate = 1;   /* `translate: false`, unless the request said */
    if (!s->n_prefer_langs) {
        s->prefer_langs = (const char *const *)cfg->languages;
        s->n_prefer_langs = cfg->n_languages;
    }
}

void api_search_opts_defaults(api_search_opts *o)
{
    for (size_t i = 0; i < api_search_n_opts; i++) {
        const api_opt *r = &api_search_opt_table[i];
        if (!is_set(&o->search, r))
            set_value(&o->search, r, r->def);
    }
}

trove_err api_search_opts_check(const api_search_opts *o)
{
    for (size_t i = 0; i < api_search_n_opts; i++) {
        const api_opt *r = &api_search_opt_table[i];
        if (!is_set(&o->search, r))
            continue;
        double v = value(&o->search, r);
        if ((r->kind != API_OPT_REAL || isfinite(v)) && v >= r->min && v <= r->max)
            continue;
        char bounds[64];
        if (isinf(r->max) && isinf(r->min))
            snprintf(bounds, sizeof bounds, "a finite number");
        else if (isinf(r->max))
            snprintf(bounds, sizeof bounds, "a number >= %g", r->min);
        else
            snprintf(bounds, sizeof bounds, "a number from %g to %g", r->min, r->max);
        return trove_fail(TROVE_EINVAL, "%s must be %s, not %g", r->name, bounds, v);
    }
    return TROVE_OK;
}

trove_err api_search_opts_resolve(api_search_opts *o, const config *cfg)
{
    api_search_opts_merge_config(o, cfg);
    api_search_opts_defaults(o);
    return api_search_opts_check(o);
}
