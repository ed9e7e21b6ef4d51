/* search — the orchestration of one search (search.h): the channels
 * (search/ch_*.c, one interface in search_int.h) fill one candidate set in
 * one read transaction; then fusion (search/fusion.h), the query's
 * language, translations as one result (search/group.h) and the results'
 * details. */
#include "search/search.h"

#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "search/fusion.h"
#include "search/group.h"
#include "search/lang_pref.h"
#include "search/meta.h"
#include "search/search_int.h"
#include "search/snippet.h"
#include "text/date.h"
#include "text/lang.h"
#include "text/query.h"
#include "text/tok.h"
#include "util/buf.h"
#include "util/mem.h"
#include "util/str.h"

const char *const search_channel_names[SEARCH_N_CHANNELS] = {"bm25", "title", "vector",
                                                             "translation"};

const char search_vec_blank_why[] =
    "the query has no vector: none of its words is in the embedding model's vocabulary";

/* ---- fusion ----------------------------------------------------------- */

void search_opts_filters(search_opts *dst, const search_opts *src)
{
    dst->collections = src->collections;
    dst->n_collections = src->n_collections;
    dst->folder = src->folder;
    dst->path_prefix = src->path_prefix;
    dst->doc_refs = src->doc_refs;
    dst->n_doc_refs = src->n_doc_refs;
    dst->heading_contains = src->heading_contains;
    dst->where = src->where;
    dst->n_where = src->n_where;
    dst->since = src->since;
    dst->until = src->until;
    dst->tags = src->tags;
    dst->n_tags = src->n_tags;
    dst->langs = src->langs;
    dst->n_langs = src->n_langs;
}

static int vector_hits(const cand_set *cs)
{
    for (size_t i = 0; i < cs->n; i++)
        if (cs->items[i].ch[SEARCH_CH_VECTOR].rank)
            return 1;
    return 0;
}

/* A note only the vector channel found, no closer to the query than the
 * channel's average (z <= 0: no vote): it has no evidence at all, and
 * listing it at 0.00 filled `--files` with unrelated notes. Sorted last
 * (score 0, no bm25 rank), so the results stop at the first. */
static int vector_only_noise(const cand *c)
{
    return c->ch[SEARCH_CH_VECTOR].rank && !c->ch[SEARCH_CH_BM25].rank &&
           !c->ch[SEARCH_CH_TITLE].rank && c->fused <= 0;
}

/* A note that the translated query found and the original's keywords and
 * titles did not, and that weighs next to nothing: at most XLATE_NOISE_SHARE
 * of the best result. When the query's own language already answers it, the
 * translation's weight falls towards 0 and what it alone found would fill
 * the list at score 0.00 ("动态规划 递归" on the sample vault listed Home
 * and Sourdough Bread under the one note that holds both words). */
#define XLATE_NOISE_SHARE 0.05
static int translation_only_noise(const cand *c, double best)
{
    if (!c->has_xlate || c->ch[SEARCH_CH_BM25].rank || c->ch[SEARCH_CH_TITLE].rank)
        return 0;
    return c->fused <= XLATE_NOISE_SHARE * best;
}

/* How far the vector channel's best note stands above the noise floor, as
 * a share of VEC_STRENGTH_SPAN of the room above it, at most 1: the vector
 * weight is scaled by it, so notes the vector barely prefers to noise
 * weigh little however much they stand out of a flat list (their z), and
 * a real match (GloVe on SciFact: best 0.88 over a floor of 0.43) keeps
 * the full weight. 1 when no floor is known. */
#define VEC_STRENGTH_SPAN 0.5
static double vector_strength(const cand_set *cs, const search_results *out)
{
    if (!out->vec_floor_known)
        return 1.0;
    double best = -1;
    for (size_t i = 0; i < cs->n; i++)
        if (cs->items[i].ch[SEARCH_CH_VECTOR].rank)
            best = fmax(best, cs->items[i].ch[SEARCH_CH_VECTOR].score);
    double room = 1.0 - out->vec_floor;
    if (room <= 0)
        return 1.0;
    double s = (best - out->vec_floor) / (VEC_STRENGTH_SPAN * room);
    return s < 0 ? 0 : s > 1 ? 1 : s;
}

/* x before y: the higher fused score, then the better bm25 rank, then
 * the lower note id */
static inline int fused_before(const cand *x, const cand *y)
{
    if (x->fused != y->fused)
        return x->fused > y->fused;
    int rx = x->ch[SEARCH_CH_BM25].rank ? x->ch[SEARCH_CH_BM25].rank : 1 << 30;
    int ry = y->ch[SEARCH_CH_BM25].rank ? y->ch[SEARCH_CH_BM25].rank : 1 << 30;
    if (rx != ry)
        return rx < ry;
    return x->doc_id < y->doc_id;
}

/* x before y: the higher fused score, then the lower note id */
static inline int fused_only_before(const cand *x, const cand *y)
{
    if (x->fused != y->fused)
        return x->fused > y->fused;
    return x->doc_id < y->doc_id;
}

SEARCH_CAND_SORT(sort_by_fused, fused_before)
SEARCH_CAND_SORT(sort_by_fused_only, fused_only_before)

/* cs->items best first (fused_before), each candidate moved once. */
static void sort_items(cand_set *cs)
{
    size_t n = cs->n;
    if (n < 2)
        return;
    const cand **order = xmalloc(n * sizeof *order);
    for (size_t i = 0; i < n; i++)
        order[i] = &cs->items[i];
    sort_by_fused(order, n);
    cand *sorted = xmalloc(n * sizeof *sorted);
    for (size_t i = 0; i < n; i++)
        sorted[i] = *order[i];
    memcpy(cs->items, sorted, n * sizeof *sorted);
    free(sorted);
    free(order);
}

/* The query's language (search/lang_pref.h), from the query and the
 * candidates best first. */
static int query_language(store *st, const cand_set *cs, const search_opts *o)
{
    const cand **order = xmalloc((cs->n ? cs->n : 1) * sizeof *order);
    for (size_t i = 0; i < cs->n; i++)
        order[i] = &cs->items[i];
    sort_by_fused_only(order, cs->n);
    langpref_vote *v = xmalloc((cs->n ? cs->n : 1) * sizeof *v);
    for (size_t i = 0; i < cs->n; i++)
        v[i] = (langpref_vote){order[i]->fused, order[i]->lang,
                               order[i]->ch[SEARCH_CH_TITLE].rank > 0, order[i]->doc_id};
    free(order);
    int l = langpref_query(st, o->query ? o->query : "", v, cs->n, o->prefer_langs,
                           o->n_prefer_langs);
    free(v);
    return l;
}

static void fuse(store *st, const query_parsed *q, cand_set *cs, const search_opts *o,
                 int vector_ran, char lang_out[8], search_fusion *info)
{
    fusion_cand *fc = xcalloc(cs->n ? cs->n : 1, sizeof *fc);
    /* same-language evidence, which the translation's weight gives way to */
    int xlate = o->weights[SEARCH_CH_XLATE] > 0 && q->plain;
    int cjk = xlate && tok_has_cjk(q->plain, strlen(q->plain)) != 0;
    for (size_t i = 0; i < cs->n; i++) {
        cand *c = &cs->items[i];
        /* Anchor: the best keyword chunk, else the best vector chunk. */
        if (!c->chunk_id)
            c->chunk_id = c->vec_chunk_id;
        memcpy(fc[i].ch, c->ch, sizeof fc[i].ch);
        fc[i].own_script = xlate && search_same_script(cjk, c);
        /* bm25 ranks by its score times the link prior: so does its z */
        if (c->has_bm25)
            fc[i].ch[SEARCH_CH_BM25].score = bm25_key(c);
    }
    if (!o->vector_only)
        fusion_run(fc, cs->n, o->weights, o->rrf_k, vector_ran, info);
    for (size_t i = 0; i < cs->n; i++) {
        cand *c = &cs->items[i];
        if (o->vector_only) {
            c->fused = c->ch[SEARCH_CH_VECTOR].score;
            continue;
        }
        c->fused = fc[i].fused;
        for (int ch = 0; ch < SEARCH_N_CHANNELS; ch++) {
            c->ch[ch].z = fc[i].ch[ch].z;
            c->ch[ch].vote = fc[i].ch[ch].vote;
        }
    }
    free(fc);
    /* Among equally good matches in several languages, the query's first:
     * notes known to be in another language lose a little. */
    int qlang = query_language(st, cs, o);
    snprintf(lang_out, 8, "%s", lang_code(qlang));
    if (qlang != LANG_UND && o->lang_bonus > 0 && !o->vector_only)
        for (size_t i = 0; i < cs->n; i++)
            if (cs->items[i].lang != LANG_UND && cs->items[i].lang != qlang)
                cs->items[i].fused /= 1.0 + o->lang_bonus;
    sort_items(cs);
}

/* The recency prior (search/meta.h): each candidate's fused score times
 * its factor, then the order again. Off (factor 1) without a half-life. */
static trove_err apply_recency(const search_ctx *c, cand_set *cs)
{
    double half_life = c->o->recency_days;
    trove_err rc = TROVE_OK;
    for (size_t i = 0; i < cs->n; i++) {
        cand *x = &cs->items[i];
        x->recency = 1.0;
        if (!(half_life > 0) || rc)
            continue;
        double date;
        const char *source;
        rc = meta_note_date(c->st, c->mf, x->doc_id, &date, &source);
        x->recency = meta_recency(c->now - date, half_life);
        x->fused *= x->recency;
    }
    if (half_life > 0)
        sort_items(cs);
    return rc;
}

/* ---- translations as one result ---------------------------------------- */

/* Translations of one note become one result (search/group.h): the copy
 * in the reader's language, in the place of the group's best copy. */
static trove_err collapse_translations(store *st, cand_set *cs, const search_opts *o,
                                       const search_filter *f, int qlang)
{
    group_in *in = xmalloc((cs->n ? cs->n : 1) * sizeof *in);
    for (size_t i = 0; i < cs->n; i++)
        in[i] = (group_in){cs->items[i].doc_id, cs->items[i].lang};
    group_prefs p = {qlang, o->prefer_langs, o->n_prefer_langs, tbuf_cstr(&f->sql), f->binds,
                     f->n_binds, tbuf_cstr(&f->hide), f->hide_binds, f->n_hide_binds};
    group_out *g;
    size_t n;
    trove_err rc = group_collapse(st, in, cs->n, o->limit, &p, &g, &n);
    free(in);
    if (rc)
        return rc;
    cand *kept = xcalloc(n ? n : 1, sizeof *kept);
    for (size_t i = 0; i < n; i++) {
        if (g[i].shown != GROUP_NOT_CANDIDATE) {
            kept[i] = cs->items[g[i].shown];
        } else {   /* a copy no channel found: its note's opening chunk */
            kept[i].doc_id = g[i].shown_doc;
            kept[i].prior = 1.0;
            kept[i].recency = 1.0;
        }
        kept[i].fused = cs->items[g[i].from].fused;
        kept[i].recency = cs->items[g[i].from].recency;
        kept[i].alts = g[i].alts;
        kept[i].n_alts = g[i].n_alts;
        g[i].alts = NULL;
        g[i].n_alts = 0;
    }
    group_out_free(g, n);
    free(cs->items);
    free(cs->slots);
    cs->slots = NULL;
    cs->n_slots = 0;
    cs->items = kept;
    cs->n = cs->cap = n;
    return TROVE_OK;
}

/* ---- result details --------------------------------------------------- */

static char **split_heading(const char *joined, size_t *n)
{
    *n = 0;
    if (!joined || !*joined)
        return NULL;
    char **out = NULL;
    size_t cap = 0;
    for (const char *p = joined;;) {
        const char *sep = strchr(p, '\x1f');
        size_t len = sep ? (size_t)(sep - p) : strlen(p);
        xgrow(&out, &cap, *n + 1, sizeof *out);
        out[(*n)++] = xstrndup(p, len);
        if (!sep)
            break;
        p = sep + 1;
    }
    return out;
}

/* Snippet terms: the tokens of the positive query terms. */
typedef struct snip_terms {
    snippet_term *items;
    size_t n, cap;
    int prefix_next;   /* mark tokens of the term being added as prefixes */
} snip_terms;

static int add_snip_token(void *ctx, const char *token, size_t len, size_t start, size_t end)
{
    (void)start, (void)end;
    snip_terms *t = ctx;
    for (size_t i = 0; i < t->n; i++)
        if (strlen(t->items[i].token) == len && memcmp(t->items[i].token, token, len) == 0)
            return 0;
    xgrow(&t->items, &t->cap, t->n + 1, sizeof *t->items);
    t->items[t->n++] = (snippet_term){xstrndup(token, len), t->prefix_next};
    return 0;
}

/* Adds to what t holds (a second call: the translated query's terms). */
static void snip_terms_build(snip_terms *t, const query_parsed *q)
{
    static const tok_opts opts = {.stem = 1};
    size_t before = t->n;
    for (int pass = 0; pass < 2 && t->n == before; pass++) {
        for (size_t i = 0; i < q->n_terms; i++) {
            const query_term *qt = &q->terms[i];
            if (qt->negated || (qt->stopword && pass == 0))
                continue;
            t->prefix_next = qt->kind == QUERY_PREFIX;
            tok_run(&opts, qt->text, strlen(qt->text), t, add_snip_token);
        }
    }
}

static void snip_terms_free(snip_terms *t)
{
    for (size_t i = 0; i < t->n; i++)
        free((char *)t->items[i].token);
    free(t->items);
}

static char *chunk_snippet(store *st, const snip_terms *terms, int64_t chunk_id, trove_err *rc)
{
    sqlite3_stmt *s;
    char *out = NULL;
    if ((*rc = prepare(st, "SELECT c1 FROM " SEARCH_CHUNKS_CONTENT " WHERE id = ?", &s)) ==
        TROVE_OK) {
        sqlite3_bind_int64(s, 1, chunk_id);
        if (step_row(st, s, "reading a snippet", rc) > 0) {
            const char *body = (const char *)sqlite3_column_text(s, 0);
            size_t len = (size_t)sqlite3_column_bytes(s, 0);
            out = snippet_make(body ? body : "", body ? len : 0, terms->items, terms->n, 200);
        }
        store_stmt_put(st, s);
    }
    return out ? out : xstrdup("");
}

static trove_err load_tags(store *st, search_result *r)
{
    sqlite3_stmt *s;
    trove_err rc = prepare(st, "SELECT tag FROM tags WHERE doc_id = ? ORDER BY tag", &s);
    if (rc)
        return rc;
    sqlite3_bind_int64(s, 1, r->doc_id);
    size_t cap = 0;
    while (step_row(st, s, "reading tags", &rc) > 0) {
        xgrow(&r->tags, &cap, r->n_tags + 1, sizeof *r->tags);
        r->tags[r->n_tags++] = xstrdup((const char *)sqlite3_column_text(s, 0));
    }
    store_stmt_put(st, s);
    return rc;
}

/* ---- passages (--passages) -------------------------------------------- */

typedef struct passage_row {
    int64_t chunk_id;
    int seq;
    double score;
} passage_row;

static int cmp_passage(const void *a, const void *b)
{
    const passage_row *x = a, *y = b;
    if (x->score != y->score)
        return x->score < y->score ? 1 : -1;
    return x->seq - y->seq;
}

static trove_err passage_fill(store *st, const snip_terms *terms, const search_opts *o,
                              int64_t chunk_id, double score, search_passage *p)
{
    sqlite3_stmt *s;
    trove_err rc = prepare(st, "SELECT heading, start_byte, end_byte, line_start, line_end"
                               " FROM chunks WHERE id = ?", &s);
    if (rc)
        return rc;
    sqlite3_bind_int64(s, 1, chunk_id);
    if (step_row(st, s, "reading a passage", &rc) > 0) {
        p->heading_path = split_heading((const char *)sqlite3_column_text(s, 0), &p->n_heading_path);
        p->start_byte = sqlite3_column_int64(s, 1);
        p->end_byte = sqlite3_column_int64(s, 2);
        p->line_start = sqlite3_column_int(s, 3);
        p->line_end = sqlite3_column_int(s, 4);
    }
    store_stmt_put(st, s);
    p->score = score;
    p->snippet = rc == TROVE_OK && o->with_snippet ? chunk_snippet(st, terms, chunk_id, &rc)
                                                   : xstrdup("");
    return rc;
}

/* Up to o->passages chunks of the result's note: its anchor first (the
 * result's own fields), then the note's other chunks that match the query
 * words, by BM25 score (under the --heading filter, when given). The
 * note's rank is not touched. */
static trove_err load_passages(store *st, const search_opts *o, const query_parsed *q,
                               const snip_terms *terms, int64_t anchor, search_result *r)
{
    if (o->passages <= 1 || !anchor)
        return TROVE_OK;
    passage_row *rows = NULL;
    size_t n = 0, cap = 0;
    double anchor_score = 0;
    trove_err rc = TROVE_OK;
    if (q->fts) {
        char sql[384];
        snprintf(sql, sizeof sql, "SELECT c.id, c.seq, -bm25(chunks_fts, %g, %g) FROM chunks_fts"
                 " JOIN chunks c ON c.id = chunks_fts.rowid WHERE chunks_fts MATCH ?1"
                 " AND c.doc_id = ?2%s", BM25_HEADING_WEIGHT, BM25_BODY_WEIGHT,
                 o->heading_contains && *o->heading_contains
                     ? " AND instr(lower(c.heading), lower(?3)) > 0" : "");
        sqlite3_stmt *s;
        if ((rc = prepare(st, sql, &s)) != TROVE_OK)
            return rc;
        sqlite3_bind_text(s, 1, q->fts, -1, SQLITE_STATIC);
        sqlite3_bind_int64(s, 2, r->doc_id);
        if (o->heading_contains && *o->heading_contains)
            sqlite3_bind_text(s, 3, o->heading_contains, -1, SQLITE_STATIC);
        while (step_row(st, s, "ranking passages", &rc) > 0) {
            passage_row pr = {sqlite3_column_int64(s, 0), sqlite3_column_int(s, 1),
                              sqlite3_column_double(s, 2)};
            if (pr.chunk_id == anchor) {
                anchor_score = pr.score;
                continue;
            }
            xgrow(&rows, &cap, n + 1, sizeof *rows);
            rows[n++] = pr;
        }
        store_stmt_put(st, s);
    }
    if (n > 1)
        qsort(rows, n, sizeof *rows, cmp_passage);
    size_t keep = 1 + (n < o->passages - 1 ? n : o->passages - 1);
    r->passages = xcalloc(keep, sizeof *r->passages);
    if (rc == TROVE_OK) {
        rc = passage_fill(st, terms, o, anchor, anchor_score, &r->passages[0]);
        r->n_passages = 1;
    }
    for (size_t i = 0; rc == TROVE_OK && i + 1 < keep; i++) {
        rc = passage_fill(st, terms, o, rows[i].chunk_id, rows[i].score, &r->passages[i + 1]);
        r->n_passages++;
    }
    free(rows);
    return rc;
}

static trove_err fill_result(const search_ctx *x, const config *cfg, const cand *c,
                             const snip_terms *terms, search_result *r)
{
    store *st = x->st;
    const search_opts *o = x->o;
    r->also_in = c->alts;   /* taken first: the result frees them on any return */
    r->n_also_in = c->n_alts;
    sqlite3_stmt *s;
    /* The anchoring chunk: the best BM25 chunk, else the note's first (the
     * first under the --heading filter, when given). */
    trove_err rc = prepare(st,
        "SELECT d.docid, col.name, col.root, d.path, d.title, d.in_degree,"
        "       c.id, c.heading, c.start_byte, c.end_byte, c.line_start, c.line_end, d.lang"
        " FROM docs d JOIN collections col ON col.id = d.collection_id"
        " LEFT JOIN chunks c ON c.id = (CASE WHEN ?2 THEN ?2 ELSE"
        "   (SELECT id FROM chunks WHERE doc_id = d.id ORDER BY"
        "    (?3 IS NOT NULL AND instr(lower(heading), lower(?3)) = 0), seq LIMIT 1) END)"
        " WHERE d.id = ?1", &s);
    if (rc)
        return rc;
    sqlite3_bind_int64(s, 1, c->doc_id);
    sqlite3_bind_int64(s, 2, c->chunk_id);
    if (o->heading_contains && *o->heading_contains)
        sqlite3_bind_text(s, 3, o->heading_contains, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(s, 3);
    int row = step_row(st, s, "reading result", &rc);
    if (row <= 0) {
        if (row == 0)
            rc = store_fail(st, "reading result");
        store_stmt_put(st, s);
        return rc;
    }
    r->doc_id = c->doc_id;
    snprintf(r->docid, sizeof r->docid, "%s", (const char *)sqlite3_column_text(s, 0));
    r->collection = xstrdup((const char *)sqlite3_column_text(s, 1));
    r->root = xstrdup((const char *)sqlite3_column_text(s, 2));
    r->path = xstrdup((const char *)sqlite3_column_text(s, 3));
    r->title = xstrdup((const char *)sqlite3_column_text(s, 4));
    r->in_degree = sqlite3_column_int(s, 5);
    r->score = c->fused;
    r->prior = c->prior;
    r->recency = c->recency > 0 ? c->recency : 1.0;
    r->via_translation = c->has_xlate && !c->ch[SEARCH_CH_BM25].rank && !c->ch[SEARCH_CH_TITLE].rank;
    snprintf(r->lang, sizeof r->lang, "%s", (const char *)sqlite3_column_text(s, 12));
    memcpy(r->channel, c->ch, sizeof r->channel);
    int64_t chunk_id = sqlite3_column_int64(s, 6);
    if (sqlite3_column_type(s, 6) != SQLITE_NULL) {
        r->heading_path = split_heading((const char *)sqlite3_column_text(s, 7), &r->n_heading_path);
        r->start_byte = sqlite3_column_int64(s, 8);
        r->end_byte = sqlite3_column_int64(s, 9);
        r->line_start = sqlite3_column_int(s, 10);
        r->line_end = sqlite3_column_int(s, 11);
        r->snippet = o->with_snippet ? chunk_snippet(st, terms, chunk_id, &rc) : xstrdup("");
    } else {
        r->line_start = r->line_end = 1;
        r->snippet = xstrdup("");
    }
    store_stmt_put(st, s);
    const char **ctx = config_contexts_for(cfg, r->collection, r->path, &r->n_context);
    r->context = r->n_context ? xmalloc(r->n_context * sizeof *r->context) : NULL;
    for (size_t k = 0; k < r->n_context; k++)
        r->context[k] = xstrdup(ctx[k]);
    free(ctx);
    if (rc == TROVE_OK)
        rc = load_tags(st, r);
    const char *source = "mtime";
    if (rc == TROVE_OK)
        rc = meta_note_date(st, x->mf, r->doc_id, &r->date, &source);
    r->date_source = xstrdup(source);
    if (rc == TROVE_OK && chunk_id)
        rc = load_passages(st, o, x->q, terms, chunk_id, r);
    return rc;
}

/* The channels, in the order they run (search_int.h: a new channel is a
 * file of its own and a row here). The vector channel comes first (its
 * candidates first in the set; its scan goes on while the keyword channels
 * run, run_channels) and the graph last: it ranks bm25 over every
 * candidate the others found. */
static const search_channel *const channels[] = {
    &search_ch_vector, &search_ch_bm25, &search_ch_title, &search_ch_xlate, &search_ch_graph,
};
#define N_CHANNELS (sizeof channels / sizeof *channels)

/* Past ~100 ranks a channel's reciprocal-rank share is negligible. */
static size_t channel_depth(store *st, const search_opts *o)
{
    size_t depth = o->limit ? (o->limit * 3 > 100 ? o->limit * 3 : 100) : 0;
    if (depth && !o->each_translation)
        depth *= group_depth_factor(st);   /* copies of one note collapse into one */
    return depth;
}

/* The channels started earlier (start()), latest first: each one's
 * candidates go in front of what the others found, so the first started
 * ends first in the set, as had they run in the table's order. */
static trove_err join_started(search_ctx *c, cand_set *cs, int *started)
{
    trove_err rc = TROVE_OK;
    for (size_t i = N_CHANNELS; rc == TROVE_OK && i-- > 0;) {
        if (!started[i])
            continue;
        started[i] = 0;
        cand_set front = {0};
        rc = channels[i]->run(c, &front);
        if (rc == TROVE_OK && front.n)
            search_cand_front(cs, &front);
        free(front.items);
        free(front.slots);
    }
    return rc;
}

/* Every wanted channel's candidates, in one read transaction. A channel
 * with start() goes on meanwhile (the vector scan on a pool's worker
 * while the keyword channels read the index): joined before a channel
 * that reads every candidate (`joins`), and at the end. */
static trove_err run_channels(search_ctx *c, cand_set *cs)
{
    int wanted[N_CHANNELS], started[N_CHANNELS] = {0};
    trove_err rc = TROVE_OK;
    for (size_t i = 0; i < N_CHANNELS; i++)
        wanted[i] = channels[i]->wanted(c);
    for (size_t i = 0; rc == TROVE_OK && i < N_CHANNELS; i++)
        if (wanted[i] && channels[i]->before)
            rc = channels[i]->before(c);
    /* One read transaction for every statement below: otherwise SQLite takes
     * and drops its locks and re-checks the WAL files per statement. */
    if (rc == TROVE_OK)
        rc = store_read_begin(c->st);
    if (rc == TROVE_OK)
        c->depth = channel_depth(c->st, c->o);
    for (size_t i = 0; rc == TROVE_OK && i < N_CHANNELS; i++) {
        if (!wanted[i])
            continue;
        if (channels[i]->start) {
            rc = channels[i]->start(c);
            started[i] = rc == TROVE_OK;
            continue;
        }
        if (channels[i]->joins)
            rc = join_started(c, cs, started);
        if (rc == TROVE_OK)
            rc = channels[i]->run(c, cs);
    }
    if (rc == TROVE_OK)
        rc = join_started(c, cs, started);
    return rc;
}

/* What a started channel left (start()), on every path. */
static void end_channels(search_ctx *c)
{
    for (size_t i = 0; i < N_CHANNELS; i++)
        if (channels[i]->end)
            channels[i]->end(c);
}

/* The fused, collapsed candidates best first, into out->items (as many as
 * limit and min_score let through). */
static trove_err fuse_and_fill(search_ctx *c, const config *cfg, cand_set *cs)
{
    const search_opts *o = c->o;
    search_results *out = c->out;
    store *st = c->st;
    /* No note above the floor: the vector has nothing to say, and the
     * keyword channels are fused as without a model. */
    int vector_ran = out->vec_state == SEARCH_VEC_USED && vector_hits(cs);
    search_opts fo = *o;
    out->vec_strength = vector_ran ? vector_strength(cs, out) : 0;
    if (vector_ran)
        fo.weights[SEARCH_CH_VECTOR] *= out->vec_strength;
    double xlate_share = 0;
    trove_err rc = search_xlate_weight(c, cs, &xlate_share);
    fo.weights[SEARCH_CH_XLATE] *= xlate_share;
    if (rc)
        return rc;
    fuse(st, c->q, cs, &fo, vector_ran, out->lang, &out->fusion);
    rc = apply_recency(c, cs);
    if (rc == TROVE_OK && !o->each_translation && group_possible(st))
        rc = collapse_translations(st, cs, o, c->f, lang_from_code(out->lang));
    if (rc)
        return rc;
    size_t keep = 0, *pick = xmalloc((cs->n ? cs->n : 1) * sizeof *pick);
    double best = cs->n ? cs->items[0].fused : 0;
    for (size_t i = 0; i < cs->n && (!o->limit || keep < o->limit); i++) {
        const cand *ci = &cs->items[i];
        if (ci->fused < o->min_score || (vector_ran && !o->vector_only && vector_only_noise(ci)))
            break;
        if (!translation_only_noise(ci, best))
            pick[keep++] = i;
    }
    out->items = xcalloc(keep ? keep : 1, sizeof *out->items);
    snip_terms terms = {0};
    snip_terms_build(&terms, c->q);
    snip_terms_build(&terms, c->xq);
    for (size_t k = 0; k < keep && rc == TROVE_OK; k++) {
        cand *ci = &cs->items[pick[k]];
        /* counted even when it failed part way: freed with the rest */
        rc = fill_result(c, cfg, ci, &terms, &out->items[k]);
        out->n++;
        ci->alts = NULL;   /* the result's now (fill_result takes them first) */
        ci->n_alts = 0;
    }
    free(pick);
    snip_terms_free(&terms);
    return rc;
}

trove_err search_run(store *st, const config *cfg, const search_opts *o, search_results *out)
{
    memset(out, 0, sizeof *out);
    query_parsed q, xq = {0};
    query_parse(o->query ? o->query : "", &q);
    if (q.fts)
        out->fts = xstrdup(q.fts);
    search_filter f = {0};
    meta_filter mf = {0};
    double now = date_now();
    /* The --where/--since/--until conditions first: a bad one is reported
     * before a model embeds the query. */
    trove_err rc = meta_filter_prepare(st, cfg, o->where, o->n_where, o->since, o->until, now,
                                       &mf);
    if (rc == TROVE_OK)
        search_filter_build(&f, o, &mf);
    f.nmap = mf.nmap = store_nmap_reader_new(st);
    cand_set cs = {0};
    search_ctx c = {.st = st, .o = o, .q = &q, .xq = &xq, .f = &f, .out = out, .mf = &mf,
                    .now = now};
    if (rc == TROVE_OK)
        rc = run_channels(&c, &cs);
    end_channels(&c);
    if (rc == TROVE_OK)
        rc = fuse_and_fill(&c, cfg, &cs);
    meta_filter_close(&mf);
    store_nmap_reader_close(f.nmap);
    store_read_end(st);
    free(c.qvec);
    for (size_t i = 0; i < cs.n; i++)
        search_alts_free(cs.items[i].alts, cs.items[i].n_alts);
    free(cs.items);
    free(cs.slots);
    search_filter_free(&f);
    meta_filter_free(&mf);
    store_nmap_reader_free(f.nmap);
    query_free(&q);
    query_free(&xq);
    if (rc)
        search_results_free(out);
    return rc;
}

void search_alts_free(search_alt *a, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(a[i].path);
    free(a);
}

static void free_strs(char **a, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(a[i]);
    free(a);
}

void search_passages_free(search_passage *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free_strs(p[i].heading_path, p[i].n_heading_path);
        free(p[i].snippet);
    }
    free(p);
}

void search_results_free(search_results *r)
{
    for (size_t i = 0; i < r->n; i++)
        search_result_clear(&r->items[i]);
    free(r->items);
    free(r->fts);
    free_strs(r->vec_missing, r->n_vec_missing);
    free(r->vec_error);
    free(r->xlate);
    memset(r, 0, sizeof *r);
}

void search_result_clear(search_result *x)
{
    free(x->collection);
    free(x->root);
    free(x->path);
    free(x->title);
    free_strs(x->heading_path, x->n_heading_path);
    free(x->snippet);
    free(x->body);
    free_strs(x->context, x->n_context);
    free_strs(x->tags, x->n_tags);
    search_alts_free(x->also_in, x->n_also_in);
    free(x->date_source);
    search_passages_free(x->passages, x->n_passages);
    memset(x, 0, sizeof *x);
}
