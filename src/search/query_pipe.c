#include "search/query_pipe.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "search/search.h"
#include "text/query.h"
#include "text/tok.h"
#include "util/buf.h"
#include "util/mem.h"

const char *const qp_variant_names[QP_MAX_VARIANTS] = {"original", "keywords", "prf",
                                                         "lex", "vec", "hyde"};

/* ---- expansion -------------------------------------------------------- */

/* Words that ask rather than say what is sought (folded, unstemmed), beyond
 * the stopword list; sorted for bsearch. */
static const char *const question_words[] = {
    "can", "could", "define", "definition", "describe", "explain", "find", "give", "know",
    "list", "may", "mean", "meaning", "means", "might", "please", "shall", "show", "tell",
    "want", "whats", "whose", "would",
};

static int cmp_word(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int is_question_word(const char *t, size_t len)
{
    char buf[16];
    if (len >= sizeof buf)
        return 0;
    memcpy(buf, t, len);
    buf[len] = '\0';
    const char *k = buf;
    return bsearch(&k, question_words, sizeof question_words / sizeof *question_words,
                   sizeof *question_words, cmp_word) != NULL;
}

typedef struct filler_scan {
    size_t n, filler;
} filler_scan;

static int filler_cb(void *ctx, const char *t, size_t len, size_t s, size_t e)
{
    (void)s, (void)e;
    filler_scan *f = ctx;
    f->n++;
    f->filler += query_is_stopword(t, len) || is_question_word(t, len);
    return 0;
}

/* A plain word whose every token is a stopword or a question word. */
static int is_filler(const query_term *qt)
{
    if (qt->kind != QUERY_WORD || qt->negated)
        return 0;
    static const tok_opts opts = {.query = 1};
    filler_scan f = {0};
    tok_run(&opts, qt->text, strlen(qt->text), &f, filler_cb);
    return f.n > 0 && f.filler == f.n;
}

static void put_term(tbuf *b, const query_term *qt)
{
    if (b->len)
        tbuf_putc(b, ' ');
    if (qt->negated)
        tbuf_putc(b, '-');
    if (qt->kind == QUERY_PHRASE) {
        tbuf_putc(b, '"');
        for (const char *p = qt->text; *p; p++)
            if (*p != '"')
                tbuf_putc(b, *p);
        tbuf_putc(b, '"');
    } else {
        tbuf_puts(b, qt->text);
        if (qt->kind == QUERY_PREFIX)
            tbuf_putc(b, '*');
    }
}

char *qp_keyword_form(const char *query)
{
    query_parsed q;
    query_parse(query ? query : "", &q);
    tbuf b = {0};
    size_t kept = 0, dropped = 0;
    for (size_t i = 0; i < q.n_terms; i++) {
        const query_term *qt = &q.terms[i];
        if (is_filler(qt)) {
            dropped++;
            continue;
        }
        put_term(&b, qt);
        kept += !qt->negated;
    }
    query_free(&q);
    if (kept == 0 || dropped == 0) {
        tbuf_free(&b);
        return NULL;
    }
    return tbuf_detach(&b);
}

static int term_add(void *ctx, const char *t, size_t len, size_t s, size_t e)
{
    (void)s, (void)e;
    qp_terms *qt = ctx;
    for (size_t i = 0; i < qt->n; i++)
        if (strlen(qt->items[i]) == len && memcmp(qt->items[i], t, len) == 0)
            return 0;
    qt->items = xrealloc(qt->items, (qt->n + 1) * sizeof *qt->items);
    qt->items[qt->n++] = xstrndup(t, len);
    return 0;
}

void qp_terms_build(const char *query, qp_terms *out)
{
    memset(out, 0, sizeof *out);
    query_parsed q;
    query_parse(query ? query : "", &q);
    static const tok_opts opts = {.stem = 1, .query = 1};
    for (int pass = 0; pass < 2 && out->n == 0; pass++)
        for (size_t i = 0; i < q.n_terms; i++) {
            const query_term *qt = &q.terms[i];
            if (qt->negated || (pass == 0 && (qt->stopword || is_filler(qt))))
                continue;
            tok_run(&opts, qt->text, strlen(qt->text), out, term_add);
        }
    query_free(&q);
}

void qp_terms_free(qp_terms *t)
{
    for (size_t i = 0; i < t->n; i++)
        free(t->items[i]);
    free(t->items);
    memset(t, 0, sizeof *t);
}

/* ---- pseudo-relevance feedback ---------------------------------------- */

typedef struct fb_word {
    char *word;        /* folded, unstemmed: what goes into the variant */
    char *stem;
    double tf_w;       /* sum over feedback notes of w_d * tf / |d| */
    size_t df_fb, df_pool;
    size_t last_doc;   /* doc index + 1 that last counted it */
    size_t last_tf_doc;
    double tf;         /* count in the current note */
} fb_word;

typedef struct fb_state {
    fb_word *w;
    size_t n, cap;
    size_t *slots, n_slots;   /* index + 1, open addressing on the folded word */
    size_t doc;               /* current doc + 1 */
    size_t doc_tokens;
    int feedback;             /* the current note is a feedback note */
} fb_state;

static uint64_t hash_bytes(const char *s, size_t len)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h;
}

static fb_word *fb_get(fb_state *st, const char *t, size_t len)
{
    if (st->n_slots == 0 || st->n * 2 >= st->n_slots) {
        size_t ns = st->n_slots ? st->n_slots * 2 : 1024;
        free(st->slots);
        st->slots = xcalloc(ns, sizeof *st->slots);
        st->n_slots = ns;
        for (size_t i = 0; i < st->n; i++) {
            size_t h = hash_bytes(st->w[i].word, strlen(st->w[i].word)) & (ns - 1);
            while (st->slots[h])
                h = (h + 1) & (ns - 1);
            st->slots[h] = i + 1;
        }
    }
    size_t h = hash_bytes(t, len) & (st->n_slots - 1);
    while (st->slots[h]) {
        fb_word *w = &st->w[st->slots[h] - 1];
        if (strlen(w->word) == len && memcmp(w->word, t, len) == 0)
            return w;
        h = (h + 1) & (st->n_slots - 1);
    }
    xgrow(&st->w, &st->cap, st->n + 1, sizeof *st->w);
    fb_word *w = &st->w[st->n];
    memset(w, 0, sizeof *w);
    w->word = xstrndup(t, len);
    st->slots[h] = ++st->n;
    return w;
}

/* A word worth feeding back: letters, three bytes or more, no stopword. */
static int fb_candidate(const char *t, size_t len)
{
    if (len < 3 || len > 40 || query_is_stopword(t, len) || is_question_word(t, len))
        return 0;
    int alpha = 0;
    for (size_t i = 0; i < len; i++)
        alpha |= ((unsigned char)t[i] >= 'a' && (unsigned char)t[i] <= 'z') ||
                 (unsigned char)t[i] >= 0x80;
    return alpha;
}

static int fb_token(void *ctx, const char *t, size_t len, size_t s, size_t e)
{
    (void)s, (void)e;
    fb_state *st = ctx;
    st->doc_tokens++;
    if (!fb_candidate(t, len))
        return 0;
    fb_word *w = fb_get(st, t, len);
    if (w->last_doc != st->doc) {
        w->last_doc = st->doc;
        w->df_pool++;
        w->df_fb += st->feedback;
        w->tf = 0;
    }
    w->tf += 1;
    return 0;
}

static int stem_cb(void *ctx, const char *t, size_t len, size_t s, size_t e)
{
    (void)s, (void)e;
    char **out = ctx;
    if (!*out)
        *out = xstrndup(t, len);
    return 0;
}

static char *stem_of(const char *word)
{
    static const tok_opts opts = {.stem = 1, .query = 1};
    char *out = NULL;
    tok_run(&opts, word, strlen(word), &out, stem_cb);
    return out ? out : xstrdup(word);
}

typedef struct fb_rank {
    double score;
    size_t idx;
} fb_rank;

static int cmp_fb_rank(const void *a, const void *b)
{
    const fb_rank *x = a, *y = b;
    if (x->score != y->score)
        return x->score < y->score ? 1 : -1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

char *qp_prf_query(const char *query, const char *const *docs, const size_t *lens,
                   const double *fb_weight, size_t n_fb, size_t n_pool, size_t max_terms)
{
    if (n_fb == 0 || max_terms == 0)
        return NULL;
    if (n_pool < n_fb)
        n_pool = n_fb;
    static const tok_opts opts = {.query = 1};
    fb_state st = {0};
    for (size_t d = 0; d < n_pool; d++) {
        st.doc = d + 1;
        st.doc_tokens = 0;
        st.feedback = d < n_fb;
        tok_run(&opts, docs[d] ? docs[d] : "", docs[d] ? lens[d] : 0, &st, fb_token);
        if (!st.feedback || st.doc_tokens == 0)
            continue;
        for (size_t i = 0; i < st.n; i++)
            if (st.w[i].last_doc == st.doc)
                st.w[i].tf_w += fb_weight[d] * st.w[i].tf / (double)st.doc_tokens;
    }
    qp_terms qt;
    qp_terms_build(query, &qt);
    size_t min_df = n_fb >= 3 ? 2 : 1;
    fb_rank *rank = xcalloc(st.n ? st.n : 1, sizeof *rank);
    size_t n_rank = 0;
    for (size_t i = 0; i < st.n; i++) {
        fb_word *w = &st.w[i];
        if (w->df_fb < min_df)
            continue;
        w->stem = stem_of(w->word);
        int in_query = 0;
        for (size_t k = 0; k < qt.n && !in_query; k++)
            in_query = strcmp(qt.items[k], w->stem) == 0;
        if (in_query)
            continue;
        double idf = log(1.0 + (double)n_pool / (double)w->df_pool);
        rank[n_rank++] = (fb_rank){w->tf_w * idf, i};
    }
    if (n_rank > 1)
        qsort(rank, n_rank, sizeof *rank, cmp_fb_rank);
    tbuf b = {0};
    tbuf_puts(&b, query ? query : "");
    size_t added = 0;
    for (size_t r = 0; r < n_rank && added < max_terms; r++) {
        fb_word *w = &st.w[rank[r].idx];
        /* one surface form per stem */
        int dup = 0;
        for (size_t p = 0; p < r && !dup; p++)
            dup = strcmp(st.w[rank[p].idx].stem, w->stem) == 0;
        if (dup)
            continue;
        tbuf_putc(&b, ' ');
        tbuf_puts(&b, w->word);
        added++;
    }
    for (size_t i = 0; i < st.n; i++) {
        free(st.w[i].word);
        free(st.w[i].stem);
    }
    free(st.w);
    free(st.slots);
    free(rank);
    qp_terms_free(&qt);
    if (added == 0) {
        tbuf_free(&b);
        return NULL;
    }
    return tbuf_detach(&b);
}

/* ---- fusion ----------------------------------------------------------- */

static int cmp_rrf(const void *a, const void *b)
{
    const qp_cand *x = a, *y = b;
    if (x->rrf != y->rrf)
        return x->rrf < y->rrf ? 1 : -1;
    return x->doc_id < y->doc_id ? -1 : x->doc_id > y->doc_id;
}

void qp_rrf(qp_cand *c, size_t n, const qp_list *lists, size_t n_lists, int k)
{
    for (size_t i = 0; i < n; i++) {
        double sum = 0;
        int best = 0;
        for (size_t l = 0; l < n_lists && l < QP_MAX_LISTS; l++) {
            int r = c[i].rank[l];
            if (r <= 0)
                continue;
            sum += lists[l].weight * c[i].quality[l] / (double)(k + r);
            if (!best || r < best)
                best = r;
        }
        c[i].bonus = best == 1 ? QP_BONUS_FIRST : best >= 2 && best <= 3 ? QP_BONUS_TOP3 : 0;
        c[i].rrf = sum + c[i].bonus;
    }
    if (n > 1)
        qsort(c, n, sizeof *c, cmp_rrf);
    for (size_t i = 0; i < n; i++)
        c[i].rrf_rank = (int)i + 1;
}

/* ---- which lists are fused -------------------------------------------- */

_Static_assert(QP_LIST_HYBRID == SEARCH_N_CHANNELS, "the hybrid list is one past the channels");

const char *qp_list_channel_name(int channel)
{
    if (channel >= 0 && channel < SEARCH_N_CHANNELS)
        return search_channel_names[channel];
    return channel == QP_LIST_HYBRID ? "hybrid" : "?";
}

static size_t plan_add(qp_list *out, size_t n, int variant, int channel, double w)
{
    if (n < QP_MAX_LISTS && w > 0)
        out[n++] = (qp_list){variant, channel, w};
    return n;
}

size_t qp_plan_lists(const qp_variant *v, size_t n, const qp_source *src, double bm25_scale,
                     double title_scale, qp_list *out)
{
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        double w = v[i].weight;
        if (src[i].vector) {
            /* search's own fusion of this variant: bm25 by its z, the
             * vector by its z times the per-query confidence; ranking its
             * vector list apart would give a flat GloVe list the votes of
             * a keyword list */
            m = plan_add(out, m, (int)i, QP_LIST_HYBRID, w);
        } else if (src[i].keywords && !(i > 0 && src[i].same_keywords)) {
            m = plan_add(out, m, (int)i, SEARCH_CH_BM25, w * bm25_scale);
        }
        /* the title list also picks the note a reranker must not bury */
        if (i == 0 && src[i].keywords)
            m = plan_add(out, m, 0, SEARCH_CH_TITLE, w * title_scale);
        /* the original's translation at the weight search gave it (a hybrid
         * order holds it already) */
        if (i == 0 && src[i].keywords && !src[i].vector && src[i].xlate > 0)
            m = plan_add(out, m, 0, SEARCH_CH_XLATE, w * bm25_scale * src[i].xlate);
    }
    return m;
}

/* ---- lexical re-scorer -------------------------------------------------- */

typedef struct ptok {
    int term;          /* index into the terms, -1 none */
    size_t start, end;
} ptok;

typedef struct ptok_list {
    const qp_terms *t;
    ptok *items;
    size_t n, cap;
} ptok_list;

/* Notes longer than this many tokens are scored on their beginning. */
#define QP_MAX_SCAN_TOKENS 200000

static int ptok_cb(void *ctx, const char *tk, size_t len, size_t s, size_t e)
{
    ptok_list *pl = ctx;
    if (pl->n >= QP_MAX_SCAN_TOKENS)
        return 1;
    int term = -1;
    for (size_t i = 0; i < pl->t->n && term < 0; i++)
        if (strlen(pl->t->items[i]) == len && memcmp(pl->t->items[i], tk, len) == 0)
            term = (int)i;
    xgrow(&pl->items, &pl->cap, pl->n + 1, sizeof *pl->items);
    pl->items[pl->n++] = (ptok){term, s, e};
    return 0;
}

static double term_weight(const double *weights, int i)
{
    return weights ? weights[i] : 1.0;
}

void qp_passage_score(const qp_terms *t, const double *weights, const char *text, size_t len,
                      size_t window_tokens, qp_passage *out)
{
    memset(out, 0, sizeof *out);
    out->end = len;
    if (!text || len == 0 || t->n == 0)
        return;
    static const tok_opts opts = {.stem = 1, .query = 1};
    ptok_list pl = {.t = t};
    tok_run(&opts, text, len, &pl, ptok_cb);
    double total = 0;
    for (size_t i = 0; i < t->n; i++)
        total += term_weight(weights, (int)i);
    size_t *count = xcalloc(t->n, sizeof *count);
    double have = 0, best = -1;
    size_t best_at = 0;
    /* sliding window [i - QP_PASSAGE_TOKENS + 1, i]: weight of distinct terms */
    for (size_t i = 0; i < pl.n; i++) {
        int a = pl.items[i].term;
        if (a >= 0 && a < 64)
            out->present |= (uint64_t)1 << a;
        if (a >= 0 && count[a]++ == 0)
            have += term_weight(weights, a);
        if (i >= QP_PASSAGE_TOKENS) {
            int d = pl.items[i - QP_PASSAGE_TOKENS].term;
            if (d >= 0 && --count[d] == 0)
                have -= term_weight(weights, d);
        }
        if (have > best + 1e-12) {
            best = have;
            best_at = i;
        }
    }
    if (pl.n == 0 || best <= 0) {
        free(count);
        free(pl.items);
        out->start = 0;
        out->end = len < window_tokens * 8 ? len : window_tokens * 8;
        while (out->end < len && ((unsigned char)text[out->end] & 0xC0) == 0x80)
            out->end++;
        return;
    }
    size_t from = best_at + 1 > QP_PASSAGE_TOKENS ? best_at + 1 - QP_PASSAGE_TOKENS : 0;
    /* proximity: distinct terms over the span of their first matches */
    memset(count, 0, t->n * sizeof *count);
    size_t first = (size_t)-1, last = 0, distinct = 0;
    for (size_t i = from; i <= best_at; i++) {
        int a = pl.items[i].term;
        if (a < 0)
            continue;
        if (count[a]++ == 0)
            distinct++;
        if (first == (size_t)-1)
            first = i;
        last = i;
    }
    /* trim the front: the window was found at its right edge */
    out->coverage = total > 0 ? best / total : 0;
    size_t span = last - first + 1;
    out->proximity = distinct <= 1 ? 1.0 : fmin(1.0, (double)distinct / (double)span);
    out->score = 0.7 * out->coverage + 0.3 * out->coverage * out->proximity;
    size_t centre = (first + last) / 2;
    size_t half = window_tokens / 2;
    size_t ws = centre > half ? centre - half : 0;
    size_t we = ws + window_tokens < pl.n ? ws + window_tokens : pl.n;
    if (we - ws < window_tokens && pl.n > window_tokens)
        ws = pl.n - window_tokens;
    out->start = pl.n > window_tokens ? pl.items[ws].start : 0;
    out->end = pl.n > window_tokens ? pl.items[we - 1].end : len;
    free(count);
    free(pl.items);
}

void qp_term_weights(const qp_passage *ps, size_t n, size_t n_terms, double *weights)
{
    for (size_t t = 0; t < n_terms; t++) {
        size_t df = 0;
        for (size_t i = 0; i < n && t < 64; i++)
            df += (ps[i].present >> t) & 1;
        weights[t] = log(1.0 + (double)(n ? n : 1) / (double)(df ? df : 1));
    }
}

/* ---- blend -------------------------------------------------------------- */

double qp_retrieval_share(int rrf_rank)
{
    return rrf_rank <= 3 ? 0.75 : rrf_rank <= 10 ? 0.6 : 0.4;
}

static int cmp_final(const void *a, const void *b)
{
    const qp_cand *x = a, *y = b;
    if (x->final != y->final)
        return x->final < y->final ? 1 : -1;
    return x->rrf_rank - y->rrf_rank;
}

void qp_blend(qp_cand *c, size_t n, long protect, double rerank_share)
{
    double rmax = -INFINITY, smin = INFINITY, smax = -INFINITY;
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (!c[i].reranked)
            continue;
        m++;
        rmax = fmax(rmax, c[i].rrf);
        smin = fmin(smin, c[i].rerank_raw), smax = fmax(smax, c[i].rerank_raw);
    }
    double lowest = 1.0;
    for (size_t i = 0; i < n; i++) {
        qp_cand *x = &c[i];
        x->title_protected = (long)i == protect;
        if (!x->reranked)
            continue;
        /* a flat list says nothing: every candidate gets the top value */
        /* retrieval by the top fused score: min-max would stretch the
         * top-rank bonus over the whole range and flatten ranks 4-20 */
        x->retrieval_norm = rmax > 0 ? x->rrf / rmax : 1.0;
        x->rerank_norm = smax - smin > 1e-12 ? (x->rerank_raw - smin) / (smax - smin) : 1.0;
        double w = qp_retrieval_share(x->rrf_rank);
        if (x->title_protected && w < qp_retrieval_share(1))
            w = qp_retrieval_share(1);
        w = 1 - (1 - w) * rerank_share;
        x->w_retrieval = w;
        x->final = w * x->retrieval_norm + (1 - w) * x->rerank_norm;
        lowest = fmin(lowest, x->final);
    }
    /* Candidates past the reranked ones stay in fused order below them. */
    double ref = 0;
    for (size_t i = 0; i < n; i++)
        if (!c[i].reranked && c[i].rrf > ref)
            ref = c[i].rrf;
    for (size_t i = 0; i < n; i++) {
        qp_cand *x = &c[i];
        if (x->reranked)
            continue;
        x->w_retrieval = 1.0;
        double base = m ? lowest * 0.99 : 1.0;
        x->final = ref > 0 ? base * x->rrf / ref : 0;
        x->retrieval_norm = ref > 0 ? x->rrf / ref : 0;
    }
    if (n > 1)
        qsort(c, n, sizeof *c, cmp_final);
}

/* Ranks 1..n of x (1 = largest), ties sharing their mean rank. */
static void ranks_of(const double *x, size_t n, double *rank)
{
    for (size_t i = 0; i < n; i++) {
        size_t above = 0, equal = 0;
        for (size_t j = 0; j < n; j++) {
            above += x[j] > x[i];
            equal += x[j] == x[i];
        }
        rank[i] = (double)above + (double)(equal + 1) / 2.0;
    }
}

/* Spearman's rho (Pearson over the ranks); 0 when either side is flat. */
static double spearman(const double *a, const double *b, size_t n, int *flat)
{
    double *ra = xcalloc(2 * n, sizeof *ra), *rb = ra + n;
    ranks_of(a, n, ra);
    ranks_of(b, n, rb);
    double ma = 0, mb = 0;
    for (size_t i = 0; i < n; i++)
        ma += ra[i], mb += rb[i];
    ma /= (double)n, mb /= (double)n;
    double sab = 0, saa = 0, sbb = 0;
    for (size_t i = 0; i < n; i++) {
        sab += (ra[i] - ma) * (rb[i] - mb);
        saa += (ra[i] - ma) * (ra[i] - ma);
        sbb += (rb[i] - mb) * (rb[i] - mb);
    }
    free(ra);
    *flat = saa <= 0 || sbb <= 0;
    return *flat ? 0.0 : sab / sqrt(saa * sbb);
}

double qp_rerank_trust(const qp_cand *c, size_t n, const double *lexical)
{
    /* Two candidates give a correlation of +1 or -1 by construction: no
     * evidence that the reranker read the query, so the fused order stands
     * (a random-weight model put the wrong one of two first). */
    if (n < 3)
        return 0.0;
    double *rr = xcalloc(2 * n, sizeof *rr), *fused = rr + n;
    for (size_t i = 0; i < n; i++)
        rr[i] = c[i].rerank_raw, fused[i] = c[i].rrf;
    int flat_r, flat_l = 1;
    double sum = spearman(rr, fused, n, &flat_r);
    int parts = 1;
    if (lexical) {
        double rho = spearman(rr, lexical, n, &flat_l);
        /* equal lexical scores (no query word in any window, or in all
         * alike) say nothing about the reranker */
        if (!flat_l)
            sum += rho, parts++;
    }
    free(rr);
    /* Only agreement beyond chance counts: over n candidates in random
     * order rho has a standard error of 1 / sqrt(n - 1) (0.23 at 20), and
     * a reranker that knows nothing reaches 0.2-0.4 by luck on a good
     * share of queries. Above that floor the trust rises linearly to 1. */
    double floor = 1.0 / sqrt((double)(n - 1));
    double t = (sum / parts - floor) / (1.0 - floor);
    return t < 0 ? 0 : t > 1 ? 1 : t;
}

void qp_floor(qp_cand *c, size_t n, int floor)
{
    if (floor <= 0 || n == 0)
        return;
    size_t slots = (size_t)floor < n ? (size_t)floor : n;
    size_t kept = 0;
    for (size_t i = 0; i < n; i++)
        kept += c[i].search_rank >= 1 && c[i].search_rank <= floor;
    if (kept > slots)
        kept = slots;
    size_t others = slots - kept;
    /* stable partition: the top `slots` first, in blend order */
    qp_cand *tmp = xmalloc(n * sizeof *tmp);
    unsigned char *taken = xcalloc(n, 1);
    size_t out = 0, o_used = 0;
    for (size_t i = 0; i < n; i++) {
        int protected_ = c[i].search_rank >= 1 && c[i].search_rank <= floor;
        if (protected_ || o_used < others) {
            o_used += !protected_;
            tmp[out++] = c[i];
            taken[i] = 1;
            if (out == slots)
                break;
        }
    }
    for (size_t i = 0; i < n; i++)
        if (!taken[i])
            tmp[out++] = c[i];
    for (size_t i = 1; i < n; i++)
        if (tmp[i].final > tmp[i - 1].final)
            tmp[i].final = tmp[i - 1].final;
    memcpy(c, tmp, n * sizeof *c);
    free(taken);
    free(tmp);
}
