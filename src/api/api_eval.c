/* api_eval: `trove eval` — a test set from the vault itself, run through
 * search under each channel mix or each compared setting (api.h). */
#include "api/api.h"
#include "api/api_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/buf.h"
#include "util/mem.h"
#include "util/str.h"

const char *const api_eval_mix_names[API_EVAL_N_MIXES + 1] = {"hybrid", "bm25", "title", "vector",
                                                              "query", NULL};

#define EVAL_DEFAULT_PER_KIND 100
#define EVAL_K 10

/* "NAME=VALUE,..." onto o: rows of api_search_opt_table, and model=PATH
 * (the path is borrowed from `copy`, which the caller frees after use). */
static trove_err apply_setting(char *copy, api_search_opts *o)
{
    for (char *save = NULL, *kv = strtok_r(copy, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
        while (*kv == ' ')
            kv++;
        char *eq = strchr(kv, '=');
        if (!eq)
            return trove_fail(TROVE_EINVAL, "setting '%s': NAME=VALUE expected (e.g. "
                              "vector_weight=0.3, model=PATH)", kv);
        *eq = '\0';
        const char *val = eq + 1;
        if (strcmp(kv, "model") == 0) {
            o->model = *val ? val : NULL;
            continue;
        }
        const api_opt *opt = api_search_opt(kv);
        double d;
        if (!opt)
            return trove_fail(TROVE_EINVAL, "setting '%s': no such search option (one of the "
                              "api_search_opt_table names, e.g. vector_weight, or model)", kv);
        if (!str_to_double(val, &d))
            return trove_fail(TROVE_EINVAL, "setting %s=%s: not a number", kv, val);
        char *field = (char *)&o->search + opt->offset;
        if (opt->kind == API_OPT_REAL)
            *(double *)field = d;
        else if (opt->kind == API_OPT_INT)
            *(int *)field = (int)d;
        else
            *(size_t *)field = d < 0 ? 0 : (size_t)d;
    }
    return api_search_opts_check(o);
}

/* Whether result x is the answer's note, or shows it as a translation
 * (search groups the copies of a note into one result). */
static int is_answer_note(const search_result *x, const evalset_item *it)
{
    if (x->doc_id == it->doc_id)
        return 1;
    for (size_t k = 0; k < x->n_also_in && it->kind != EVAL_HEADING; k++)
        if (strcmp(x->also_in[k].docid, it->docid) == 0)
            return 1;
    return 0;
}

/* 1-based rank of the answer among the results, 0 when absent. */
static size_t answer_rank(const search_results *r, const evalset_item *it)
{
    for (size_t i = 0; i < r->n; i++) {
        const search_result *x = &r->items[i];
        if (!is_answer_note(x, it))
            continue;
        if (it->kind == EVAL_HEADING &&
            !(x->line_start <= it->line_end && x->line_end >= it->line_start))
            continue;
        return i + 1;
    }
    return 0;
}

typedef struct sums {
    double ndcg, recall, mrr;
    size_t n;
} sums;

static void add_rank(sums *s, size_t rank)
{
    s->n++;
    if (!rank || rank > EVAL_K)
        return;
    s->ndcg += 1.0 / log2((double)rank + 1.0);
    s->recall += 1;
    s->mrr += 1.0 / (double)rank;
}

/* One query through search, or through the query pipeline. */
static trove_err run_one(api *a, const api_search_opts *o, int pipeline, search_results *r)
{
    if (!pipeline)
        return api_search(a, o, r);
    api_query_opts qo;
    api_query_opts_init(&qo);
    qo.base = *o;
    api_query_info info;
    trove_err rc = api_query(a, &qo, r, &info);
    if (rc == TROVE_OK)
        api_query_info_free(&info);
    return rc;
}

/* Every query of the set under one search setting (pipeline: through
 * api_query); per kind and all. */
static trove_err run_setting(api *a, const evalset *set, const api_search_opts *base,
                             int pipeline, sums per[EVAL_N_KINDS + 1])
{
    memset(per, 0, (EVAL_N_KINDS + 1) * sizeof *per);
    for (size_t i = 0; i < set->n; i++) {
        api_search_opts o = *base;
        o.search.query = set->items[i].query;
        o.search.limit = EVAL_K;
        o.local = 1;   /* eval measures this index */
        search_results r;
        trove_err rc = run_one(a, &o, pipeline, &r);
        if (rc)
            return rc;
        size_t rank = answer_rank(&r, &set->items[i]);
        search_results_free(&r);
        add_rank(&per[set->items[i].kind], rank);
        add_rank(&per[EVAL_N_KINDS], rank);
    }
    return TROVE_OK;
}

static void add_rows(api_eval_result *out, size_t *cap, const sums *per, const char *mix,
                     const char *setting)
{
    for (int k = 0; k <= EVAL_N_KINDS; k++) {
        if (!per[k].n)
            continue;
        xgrow(&out->rows, cap, out->n + 1, sizeof *out->rows);
        double n = (double)per[k].n;
        out->rows[out->n++] = (api_eval_row){k < EVAL_N_KINDS ? evalset_kind_names[k] : "all", mix,
                                             setting ? xstrdup(setting) : NULL, per[k].n,
                                             per[k].ndcg / n, per[k].recall / n, per[k].mrr / n};
    }
}

static trove_err has_vectors(store *st, int *any)
{
    int64_t id;
    int dim;
    char *name = NULL;
    trove_err rc = store_vec_model_pick(st, NULL, &id, &dim, &name);
    free(name);
    *any = rc == TROVE_OK && id != 0;
    return rc;
}

trove_err api_eval(api *a, const api_eval_opts *o, api_eval_result *out)
{
    memset(out, 0, sizeof *out);
    if (a->boundary)   /* its test set is read from every note */
        return trove_fail(TROVE_EACCES, "eval is not offered past the agent boundary");
    trove_err krc = api_collections_known(a, o->collections, o->n_collections);
    if (krc)
        return krc;
    store *st;
    trove_err rc = api_reader(a, &st);
    evalset set;
    if (rc == TROVE_OK)
        rc = evalset_build(st, o->per_kind ? o->per_kind : EVAL_DEFAULT_PER_KIND, o->collections,
                           o->n_collections, &set);
    if (rc)
        return rc;
    memcpy(out->queries, set.per_kind, sizeof out->queries);
    memcpy(out->found, set.found, sizeof out->found);
    api_search_opts base;
    api_search_opts_init(&base);
    base.search.collections = o->collections;
    base.search.n_collections = o->n_collections;
    base.model = o->model;
    size_t cap = 0;
    sums per[EVAL_N_KINDS + 1];
    if (o->compare[0] || o->compare[1]) {
        for (int k = 0; k < 2 && rc == TROVE_OK; k++) {
            api_search_opts s = base;
            char *copy = xstrdup(o->compare[k] ? o->compare[k] : "");
            rc = apply_setting(copy, &s);
            if (rc == TROVE_OK)
                rc = run_setting(a, &set, &s, 0, per);
            if (rc == TROVE_OK)
                add_rows(out, &cap, per, api_eval_mix_names[API_EVAL_HYBRID],
                         o->compare[k] ? o->compare[k] : "");
            free(copy);
        }
    } else {
        int vectors = 0;
        if (o->model)
            rc = has_vectors(st, &vectors);
        for (int m = 0; m < API_EVAL_N_MIXES && rc == TROVE_OK; m++) {
            api_search_opts s = base;
            if (m == API_EVAL_BM25 || m == API_EVAL_TITLE) {
                s.model = NULL;
                s.search.weights[m == API_EVAL_BM25 ? SEARCH_CH_TITLE : SEARCH_CH_BM25] = 0;
            }
            if (m == API_EVAL_VECTOR) {
                if (!vectors)
                    continue;
                s.search.vector_only = 1;
            }
            rc = run_setting(a, &set, &s, m == API_EVAL_QUERY, per);
            if (rc == TROVE_OK)
                add_rows(out, &cap, per, api_eval_mix_names[m], NULL);
        }
    }
    evalset_free(&set);
    if (rc)
        api_eval_result_free(out);
    return rc;
}

void api_eval_result_free(api_eval_result *r)
{
    for (size_t i = 0; i < r->n; i++)
        free(r->rows[i].setting);
    free(r->rows);
    memset(r, 0, sizeof *r);
}
