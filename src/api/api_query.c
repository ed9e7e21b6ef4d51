/* api_query — `trove query`: the stages of search/query_pipe.h run over the
 * api's own searches (one per query variant), the notes' texts read through
 * fs_read_inside(), and the reranker model opened through embed/embed.h. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "api/api_int.h"
#include "search/qexpand.h"
#include "util/buf.h"
#include "util/fsutil.h"
#include "util/mem.h"

/* Notes per variant's search; fused candidates come from these. */
#define QP_POOL 50
/* Feedback notes and words of the pseudo-relevance variant. */
#define QP_FB_DOCS 3
#define QP_FB_POOL 20
/* Fewer notes than this in the original's results: no feedback variant. */
#define QP_FB_MIN_POOL 10

void api_query_opts_init(api_query_opts *o)
{
    memset(o, 0, sizeof *o);
    api_search_opts_init(&o->base);
}

static void set_reranker(api_query_info *info, const char *what)
{
    free(info->reranker);
    info->reranker = xstrdup(what);
}

void api_query_info_free(api_query_info *info)
{
    for (size_t i = 0; i < info->n_variants; i++)
        free(info->variants[i].text);
    free(info->rerank_warning);
    free(info->expand_note);
    free(info->reranker);
    free(info->items);
    memset(info, 0, sizeof *info);
}

/* Whether "yes" and "no" are single tokens of the model's vocabulary: a
 * decoder reranker scores with them (P(yes)); a model without them cannot
 * be one, whatever its name says. */
static int has_yes_no(const embed_model *m)
{
    int32_t ids[4];
    return embed_tokenize(m, "yes", 0, ids, 4) == 1 && embed_tokenize(m, "no", 0, ids, 4) == 1;
}

static trove_err open_reranker(const char *path, int max_tokens, embed_model **out)
{
    *out = NULL;
    trove_err err = TROVE_OK;
    embed_opts eo = {.rerank_tokens = max_tokens};
    embed_model *m = embed_open(path, &eo, &err);
    if (!m) {
        const char *d = trove_errmsg();
        tbuf b = {0};
        tbuf_printf(&b, "%s", d && *d ? d : trove_strerror(err));
        trove_err rc = trove_fail(err ? err : TROVE_EIO, "cannot use reranker %s: %s", path, b.data);
        tbuf_free(&b);
        return rc;
    }
    embed_info ei;
    embed_get_info(m, &ei);
    if (ei.n_cls_out <= 0 && !(ei.pooling && strcmp(ei.pooling, "rank") == 0)) {
        trove_err rc;
        /* decoder vocabularies (GPT-2 BPE, llama SentencePiece): say why a
         * chat model cannot stand in for a Qwen3-Reranker */
        int decoder_vocab = ei.tokenizer && (strcmp(ei.tokenizer, "gpt2") == 0 ||
                                             strcmp(ei.tokenizer, "llama") == 0);
        if (decoder_vocab && !has_yes_no(m))
            rc = trove_fail(TROVE_EINVAL, "%s is not a reranker: a %s model (pooling %s) without "
                            "a rank head, and its vocabulary has no \"yes\"/\"no\" tokens to "
                            "score with (a chat or embedding model?)", path,
                            ei.arch ? ei.arch : "?", ei.pooling ? ei.pooling : "?");
        else
            rc = trove_fail(TROVE_EINVAL, "%s is not a reranker: a %s model (pooling %s) without "
                            "a rank head (an embedding model?)", path, ei.arch ? ei.arch : "?",
                            ei.pooling ? ei.pooling : "?");
        embed_close(m);
        return rc;
    }
    *out = m;
    return TROVE_OK;
}

/* The reranker at `path`, kept open while the handle lives (or shared, see
 * api_use_models); each candidate it reads is cut to max_tokens tokens
 * (embed_opts.rerank_tokens). */
static trove_err api_reranker(api *a, const char *path, int max_tokens, embed_model **out)
{
    return api_model_get(a, APIM_RERANK, path, max_tokens, max_tokens, open_reranker, out);
}

/* One variant's search: the original with every channel; the others
 * without the title channel and the link prior (counted once). */
static trove_err variant_search(api *a, const api_query_opts *o, const char *text, int original,
                                search_results *res)
{
    api_search_opts so = o->base;
    so.search.query = text;
    so.search.limit = QP_POOL;
    so.search.min_score = 0;
    so.with_body = 0;
    so.local = 1;   /* the reranker reads the candidates' chunks from this index */
    if (!original) {
        so.search.weights[SEARCH_CH_TITLE] = 0;
        so.search.graph_weight = 0;
    }
    return api_search(a, &so, res);
}

static void read_body(search_result *r)
{
    if (r->body)
        return;
    if (fs_read_inside(r->root, r->path, 0, &r->body, &r->body_len) != TROVE_OK) {
        r->body = NULL;
        r->body_len = 0;
    }
}

static void add_variant(api_query_info *info, qp_variant_kind kind, char *text, double w)
{
    if (!text)
        return;
    for (size_t i = 0; i < info->n_variants; i++)
        if (strcmp(info->variants[i].text, text) == 0) {
            free(text);
            return;
        }
    info->variants[info->n_variants++] = (qp_variant){kind, text, w};
}

/* The PRF variant from the original search's best notes. */
static char *prf_variant(const char *query, search_results *orig)
{
    size_t n_pool = orig->n < QP_FB_POOL ? orig->n : QP_FB_POOL;
    /* feedback words are scored against the pool (their IDF there): with
     * a handful of notes the feedback notes are most of it, nothing marks a
     * word as theirs, and the variant re-ranks the same notes by noise */
    if (n_pool < QP_FB_MIN_POOL)
        return NULL;
    size_t n_fb = 0;
    const char *docs[QP_FB_POOL];
    size_t lens[QP_FB_POOL];
    double w[QP_FB_POOL];
    for (size_t i = 0; i < n_pool; i++) {
        search_result *r = &orig->items[i];
        read_body(r);
        docs[i] = r->body ? r->body : "";
        lens[i] = r->body ? r->body_len : 0;
        w[i] = r->score;
        /* feedback: notes the keyword channel found among the best */
        if (i < QP_FB_DOCS && r->channel[SEARCH_CH_BM25].rank)
            n_fb = i + 1;
    }
    return qp_prf_query(query, docs, lens, w, n_fb, n_pool, QP_PRF_TERMS);
}

/* The generative model's lines as variants (a variant per line type);
 * nothing when its output is unusable (info->expand_note says why). */
static void add_model_variants(api *a, const char *path, const char *query,
                               api_query_info *info)
{
    static const qp_variant_kind kinds[QX_KINDS] = {QP_VAR_LEX, QP_VAR_VEC, QP_VAR_HYDE};
    qx_result x;
    if (!api_expand_model(a, path, query, info, &x))
        return;
    for (int k = 0; k < QX_KINDS; k++) {
        add_variant(info, kinds[k], x.first[k], 1.0);
        x.first[k] = NULL; /* add_variant owns it now */
    }
    qx_result_free(&x);
}

/* Candidate pool: every note of every variant's search, ranks per list. */
typedef struct pool {
    qp_cand *c;
    size_t n, cap;
} pool;

static qp_cand *pool_get(pool *p, int64_t doc_id, size_t src)
{
    for (size_t i = 0; i < p->n; i++)
        if (p->c[i].doc_id == doc_id)
            return &p->c[i];
    xgrow(&p->c, &p->cap, p->n + 1, sizeof *p->c);
    qp_cand *c = &p->c[p->n++];
    memset(c, 0, sizeof *c);
    c->doc_id = doc_id;
    c->src = src;
    return c;
}

#define SRC(v, i) ((size_t)(v) << 32 | (size_t)(i))
#define SRC_V(s) ((size_t)(s) >> 32)
#define SRC_I(s) ((size_t)(s) & 0xffffffffu)

/* The user's keyword and title weights (flags or config.yaml, as the
 * original's search applied them) scale those lists against the
 * defaults: the defaults leave the variant weights as they are, 0 drops
 * the list, --title-weight 3 doubles the title votes. (With vectors the
 * variants' hybrid lists carry them as each search applied them.) */
static double channel_scale(const search_results *orig, int ch)
{
    api_search_opts d;
    api_search_opts_init(&d);
    api_search_opts_defaults(&d);
    if (orig->fusion.method == SEARCH_FUSION_NONE || d.search.weights[ch] <= 0)
        return 1.0;
    return orig->fusion.weight[ch] / d.search.weights[ch];
}

static void build_lists(api_query_info *info, search_results *res)
{
    qp_source src[QP_MAX_VARIANTS];
    for (size_t v = 0; v < info->n_variants; v++)
        src[v] = (qp_source){
            .keywords = res[v].fts != NULL,
            .same_keywords = res[v].fts && res[0].fts && strcmp(res[v].fts, res[0].fts) == 0,
            .vector = res[v].vec_state == SEARCH_VEC_USED,
            .xlate = res[v].fusion.weight[SEARCH_CH_BM25] > 0
                         ? res[v].fusion.weight[SEARCH_CH_XLATE] / res[v].fusion.weight[SEARCH_CH_BM25]
                         : 0,
        };
    info->n_lists = qp_plan_lists(info->variants, info->n_variants, src,
                                  channel_scale(&res[0], SEARCH_CH_BM25),
                                  channel_scale(&res[0], SEARCH_CH_TITLE), info->lists);
}

static void fill_pool(const api_query_info *info, search_results *res, pool *p)
{
    /* the original query's own fused order: `trove search` */
    for (size_t i = 0; i < res[0].n; i++)
        pool_get(p, res[0].items[i].doc_id, SRC(0, i))->search_rank = (int)i + 1;
    for (size_t l = 0; l < info->n_lists; l++) {
        const qp_list *L = &info->lists[l];
        search_results *r = &res[L->variant];
        for (size_t i = 0; i < r->n; i++) {
            /* the hybrid list: the variant's own fused order */
            int hybrid = L->channel == QP_LIST_HYBRID;
            const search_channel_hit *h = hybrid ? NULL : &r->items[i].channel[L->channel];
            if (h && !h->rank)
                continue;
            qp_cand *c = pool_get(p, r->items[i].doc_id, SRC(L->variant, i));
            c->rank[l] = hybrid ? (int)i + 1 : h->rank;
            c->quality[l] = L->channel == SEARCH_CH_TITLE ? h->score : 1.0;
        }
    }
}

static search_result *cand_result(search_results *res, const qp_cand *c)
{
    return &res[SRC_V(c->src)].items[SRC_I(c->src)];
}

/* Re-score candidates [0, n) with the model, or lexically; 1 when done. */
static void rescore(api *a, const api_query_opts *o, search_results *res, qp_cand *c, size_t n,
                    api_query_info *info)
{
    qp_terms terms;
    qp_terms_build(o->base.search.query, &terms);
    /* Without --rerank-window the engine picks the window for the model's
     * kind (256 tokens for a cross-encoder, 128 for a decoder: a decoder
     * costs ~20x more per token, docs/performance.md); the passage below is
     * cut to the same size. */
    size_t window = o->window_tokens;
    embed_model *m = NULL;
    trove_err rc = TROVE_OK;
    if (o->reranker) {
        rc = api_reranker(a, o->reranker, (int)(window < 1 << 20 ? window : 1 << 20), &m);
        if (rc == TROVE_OK && !window) {
            embed_info ei;
            embed_get_info(m, &ei);
            window = ei.rerank_tokens > 0 ? (size_t)ei.rerank_tokens : 0;
        }
    }
    if (!window)
        window = QP_WINDOW_TOKENS;
    /* the window counts the model's tokens (the engine cuts each candidate
     * there); a word is about 4/3 of a token in English WordPiece / BPE
     * vocabularies, so the passage taken around the best match is 3/4 as
     * many words */
    size_t words = window * 3 / 4 ? window * 3 / 4 : 1;
    qp_passage *ps = xcalloc(n ? n : 1, sizeof *ps);
    /* twice: which terms each candidate holds, then scored with the
     * weights that gives (a term every candidate has decides little) */
    double *weights = xcalloc(terms.n ? terms.n : 1, sizeof *weights);
    for (int pass = 0; pass < 2; pass++) {
        for (size_t i = 0; i < n; i++) {
            search_result *r = cand_result(res, &c[i]);
            read_body(r);
            qp_passage_score(&terms, pass ? weights : NULL, r->body, r->body ? r->body_len : 0,
                             words, &ps[i]);
        }
        if (pass == 0)
            qp_term_weights(ps, n, terms.n, weights);
    }
    free(weights);
    int done = 0;
    if (o->reranker) {
        if (rc == TROVE_OK) {
            char **docs = xcalloc(n ? n : 1, sizeof *docs);
            float *scores = xcalloc(n ? n : 1, sizeof *scores);
            for (size_t i = 0; i < n; i++) {
                search_result *r = cand_result(res, &c[i]);
                tbuf b = {0};
                /* the title first: a cross-encoder reads what the note is about */
                tbuf_printf(&b, "%s\n", r->title ? r->title : "");
                if (r->body)
                    tbuf_append(&b, r->body + ps[i].start, ps[i].end - ps[i].start);
                docs[i] = tbuf_detach(&b);
            }
            pthread_mutex_t *lock = api_rm_lock(a);
            if (lock)
                pthread_mutex_lock(lock);
            rc = embed_rerank(m, o->base.search.query, (const char *const *)docs, n, scores);
            if (lock)
                pthread_mutex_unlock(lock);
            for (size_t i = 0; i < n; i++)
                free(docs[i]);
            free(docs);
            done = rc == TROVE_OK;
            if (done) {
                double *lexical = xcalloc(n ? n : 1, sizeof *lexical);
                for (size_t i = 0; i < n; i++) {
                    c[i].rerank_raw = scores[i];
                    lexical[i] = ps[i].score;
                }
                info->rerank_trust = qp_rerank_trust(c, n, lexical);
                free(lexical);
            }
            free(scores);
        }
        if (!done) {
            const char *d = trove_errmsg();
            info->rerank_warning = xstrdup(d && *d ? d : trove_strerror(rc));
        } else {
            set_reranker(info, o->reranker);
        }
    }
    if (!done) {
        /* our own words-in-the-passage score: its share is fixed */
        info->rerank_trust = 1.0;
        set_reranker(info, "lexical");
        for (size_t i = 0; i < n; i++)
            c[i].rerank_raw = ps[i].score;
    }
    for (size_t i = 0; i < n; i++)
        c[i].reranked = 1;
    info->n_reranked = n;
    free(ps);
    qp_terms_free(&terms);
}

/* Move the chosen results out of the variants' result sets into `out`. */
static void take_results(const api_query_opts *o, search_results *res, qp_cand *c, size_t n,
                         search_results *out, api_query_info *info)
{
    size_t limit = o->base.search.limit;
    size_t keep = 0;
    while (keep < n && (!limit || keep < limit) && c[keep].final >= o->base.search.min_score)
        keep++;
    out->items = xcalloc(keep ? keep : 1, sizeof *out->items);
    info->items = xcalloc(keep ? keep : 1, sizeof *info->items);
    for (size_t i = 0; i < keep; i++) {
        search_result *r = cand_result(res, &c[i]);
        if (o->base.with_body) {
            read_body(r);
        } else if (r->body) {
            /* read for re-scoring only: a result carries a body when asked
             * for (a daemon's answer stays small) */
            free(r->body);
            r->body = NULL;
            r->body_len = 0;
        }
        out->items[i] = *r;
        memset(r, 0, sizeof *r);
        out->items[i].score = c[i].final;
        info->items[i] = c[i];
    }
    out->n = info->n = keep;
}

trove_err api_query(api *a, const api_query_opts *opts, search_results *out,
                    api_query_info *info)
{
    memset(out, 0, sizeof *out);
    memset(info, 0, sizeof *info);
    api_query_opts resolved = *opts;
    const api_query_opts *o = &resolved;
    trove_err orc = api_search_opts_resolve(&resolved.base, api_config(a));
    if (orc)
        return orc;
    const char *query = o->base.search.query ? o->base.search.query : "";
    search_results res[QP_MAX_VARIANTS];
    memset(res, 0, sizeof res);
    add_variant(info, QP_VAR_ORIGINAL, xstrdup(query), QP_ORIGINAL_WEIGHT);
    trove_err rc = variant_search(a, o, query, 1, &res[0]);
    if (rc) {
        api_query_info_free(info);
        return rc;
    }
    if (!o->no_expand) {
        add_variant(info, QP_VAR_KEYWORDS, qp_keyword_form(query), 1.0);
        add_variant(info, QP_VAR_PRF, prf_variant(query, &res[0]), 1.0);
        if (o->expand_model)
            add_model_variants(a, o->expand_model, query, info);
    }
    for (size_t v = 1; rc == TROVE_OK && v < info->n_variants; v++)
        rc = variant_search(a, o, info->variants[v].text, 0, &res[v]);
    pool p = {0};
    if (rc == TROVE_OK) {
        build_lists(info, res);
        fill_pool(info, res, &p);
        qp_rrf(p.c, p.n, info->lists, info->n_lists, QP_RRF_K);
        size_t keep = o->base.search.limit == 0 ? p.n
                      : o->base.search.limit > QP_KEEP ? o->base.search.limit : QP_KEEP;
        if (keep > p.n)
            keep = p.n;
        info->n_fused = keep;
        size_t n_rr = o->candidates ? o->candidates : QP_RERANK_DEFAULT;
        if (n_rr > keep)
            n_rr = keep;
        long protect = -1;
        for (size_t i = 0; i < n_rr && protect < 0; i++)
            for (size_t l = 0; l < info->n_lists; l++)
                if (info->lists[l].channel == SEARCH_CH_TITLE && p.c[i].rank[l] == 1)
                    protect = (long)i;
        if (o->no_rerank) {
            set_reranker(info, "none");
            n_rr = 0;
        } else {
            rescore(a, o, res, p.c, n_rr, info);
        }
        int lexical = info->reranker && strcmp(info->reranker, "lexical") == 0;
        /* a reranker model's share as far as it earns it on this query */
        qp_blend(p.c, keep, protect, lexical ? QP_LEXICAL_SHARE : info->rerank_trust);
        /* Nothing outweighs search's own top 10, whatever re-scored: a
         * reranker that knows nothing (a random-weight model, another
         * language's) would otherwise swap notes of search's top 10 for
         * ranks 11-20 on several queries in a hundred; with the floor it
         * reorders that top and fills only the places search leaves free. */
        qp_floor(p.c, keep, QP_SEARCH_FLOOR);
        take_results(o, res, p.c, keep, out, info);
        out->fts = res[0].fts;
        res[0].fts = NULL;
        out->vec_state = res[0].vec_state;
        out->vec_missing = res[0].vec_missing;
        out->n_vec_missing = res[0].n_vec_missing;
        res[0].vec_missing = NULL;
        res[0].n_vec_missing = 0;
        out->vec_error = res[0].vec_error;
        res[0].vec_error = NULL;
        out->vec_floor_known = res[0].vec_floor_known;
        out->vec_floor = res[0].vec_floor;
        out->vec_strength = res[0].vec_strength;
        memcpy(out->lang, res[0].lang, sizeof out->lang);
        out->fusion = res[0].fusion;
    }
    free(p.c);
    for (size_t v = 0; v < QP_MAX_VARIANTS; v++)
        search_results_free(&res[v]);
    if (rc) {
        search_results_free(out);
        api_query_info_free(info);
    }
    return rc;
}
