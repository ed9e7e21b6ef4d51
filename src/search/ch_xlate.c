/* ch_xlate — the translation channel: the query translated with the
 * Chinese-English dictionary (xlate/xlate.h) runs as a BM25 list of its own
 * (SEARCH_CH_XLATE, through ch_bm25's search_bm25_list), counting only
 * notes in the other language than the query's. Its weight falls, per
 * query, as the original query's best same-language chunk covers more of
 * the query's words (search_xlate_weight, called before fusion). */
#include <stdlib.h>
#include <string.h>

#include "search/group.h"
#include "search/lang_pref.h"
#include "search/search_int.h"
#include "text/lang.h"
#include "text/query.h"
#include "text/tok.h"
#include "text/tok_int.h"
#include "util/buf.h"
#include "util/mem.h"
#include "util/str.h"
#include "xlate/xlate.h"

const char *const search_xlate_state_names[] = {"off", "no-dictionary", "none", "used",
                                                "other-language", "translated-vault",
                                                "no-target"};


static int cmp_xlate(const void *a, const void *b)
{
    const cand *x = *(cand *const *)a, *y = *(cand *const *)b;
    double kx = x->ch[SEARCH_CH_XLATE].score, ky = y->ch[SEARCH_CH_XLATE].score;
    if (kx != ky)
        return kx < ky ? 1 : -1;
    return x->doc_id < y->doc_id ? -1 : x->doc_id > y->doc_id;
}

static void rank_xlate(cand_set *cs)
{
    cand **order = xmalloc((cs->n ? cs->n : 1) * sizeof *order);
    size_t n = 0;
    for (size_t i = 0; i < cs->n; i++)
        if (cs->items[i].has_xlate)
            order[n++] = &cs->items[i];
    if (n > 1)
        qsort(order, n, sizeof *order, cmp_xlate);
    int rank = 0;
    for (size_t i = 0; i < n; i++) {
        rank = shared_rank(i, rank, i > 0 && same_score(order[i]->ch[SEARCH_CH_XLATE].score,
                                                        order[i - 1]->ch[SEARCH_CH_XLATE].score));
        order[i]->ch[SEARCH_CH_XLATE].rank = rank;
    }
    free(order);
}

/* ---- coverage of the query by its best same-language chunk ------------- */

typedef struct word_list {
    char *w[XLATE_MAX_WORDS];
    size_t n;
} word_list;

static int collect_word(void *ctx, const char *token, size_t len, size_t start, size_t end)
{
    (void)start, (void)end;
    word_list *wl = ctx;
    if (query_is_stopword(token, len) || query_zh_function_word(token, len))
        return 0;
    for (size_t i = 0; i < wl->n; i++)
        if (strlen(wl->w[i]) == len && memcmp(wl->w[i], token, len) == 0)
            return 0;
    wl->w[wl->n++] = xstrndup(token, len);
    return wl->n >= XLATE_MAX_WORDS;
}

int search_same_script(int cjk_query, const cand *c)
{
    int cjk_note = c->lang == LANG_ZH || c->lang == LANG_JA || c->lang == LANG_KO;
    return c->lang != LANG_UND && cjk_note == cjk_query;
}

/* The anchoring chunk of the best bm25 note in the query's script (0:
 * none): English words in the code of a Chinese note are no evidence for
 * an English reader. */
static int64_t best_same_language_chunk(const query_parsed *q, const cand_set *cs)
{
    int64_t best = 0;
    int best_rank = 0;
    int cjk = tok_has_cjk(q->plain, strlen(q->plain)) != 0;
    for (size_t i = 0; i < cs->n; i++) {
        const cand *c = &cs->items[i];
        int r = c->ch[SEARCH_CH_BM25].rank;
        if (r && (!best_rank || r < best_rank) && search_same_script(cjk, c)) {
            best_rank = r;
            best = c->chunk_id;
        }
    }
    return best;
}

/* Share of the query's content words (weighted by their IDF) that its best
 * bm25 chunk in the query's own script holds: how strong the evidence in
 * the reader's language is (0: none found). */
static trove_err query_coverage(store *st, const query_parsed *q, const cand_set *cs,
                                double *out)
{
    *out = 0;
    int64_t best = q->plain ? best_same_language_chunk(q, cs) : 0;
    if (!best)
        return TROVE_OK;
    word_list wl = {0};
    static const tok_opts opts = {.stem = 1, .query = 1};
    tok_run(&opts, q->plain, strlen(q->plain), &wl, collect_word);
    sqlite3_stmt *s = NULL, *df = NULL;
    trove_err rc = TROVE_OK;
    if (wl.n)
        rc = prepare(st, "SELECT 1 FROM chunks_fts WHERE chunks_fts MATCH ?1 AND rowid = ?2", &s);
    if (rc == TROVE_OK && wl.n)
        rc = prepare(st, "SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH ?", &df);
    /* the chunks, from FTS5's totals: count(*) walked all of them (~10%
     * of a cold keyword search at 1M chunks) */
    double n_chunks = 0;
    if (rc == TROVE_OK && wl.n)
        rc = store_rank_row_count(st, STORE_RANK_CHUNKS, &n_chunks);
    /* weighted by IDF: holding the rare words is the evidence, not 此 or 中 */
    double held = 0, all = 0;
    for (size_t i = 0; rc == TROVE_OK && i < wl.n; i++) {
        double idf = search_word_idf(st, df, n_chunks, wl.w[i], &rc);
        tbuf phrase = {0};
        tbuf_printf(&phrase, "\"%s\"", wl.w[i]);   /* a token: no quote inside */
        sqlite3_reset(s);
        sqlite3_bind_text(s, 1, tbuf_cstr(&phrase), -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(s, 2, best);
        if (rc == TROVE_OK && step_row(st, s, "keyword search", &rc) > 0)
            held += idf;
        all += idf;
        tbuf_free(&phrase);
    }
    store_stmt_put(st, s);
    store_stmt_put(st, df);
    for (size_t i = 0; i < wl.n; i++)
        free(wl.w[i]);
    *out = all > 0 ? held / all : 0;
    return rc;
}

/* Share of the query's content words that some translation was made from:
 * a translation of one word of three ("version" of "version control
 * cheatsheet", "study" of "how do I remember what I study") is evidence
 * for a third of the query, and must not weigh as if it were all of it. */
static double translated_share(const char *query, const xlate_out *xo)
{
    static const tok_opts opts = {.stem = 1, .query = 1};
    word_list qw = {0}, fw = {0};
    tok_run(&opts, query, strlen(query), &qw, collect_word);
    for (size_t i = 0; i < xo->n && fw.n < XLATE_MAX_WORDS; i++)
        tok_run(&opts, xo->from[i], strlen(xo->from[i]), &fw, collect_word);
    size_t carried = 0;
    for (size_t i = 0; i < qw.n; i++)
        for (size_t j = 0; j < fw.n; j++)
            if (strcmp(qw.w[i], fw.w[j]) == 0) {
                carried++;
                break;
            }
    double share = qw.n ? (double)carried / (double)qw.n : 1.0;
    for (size_t i = 0; i < qw.n; i++)
        free(qw.w[i]);
    for (size_t i = 0; i < fw.n; i++)
        free(fw.w[i]);
    /* a source word the tokenizer splits differently still counts */
    return carried ? share : 1.0;
}

trove_err search_xlate_weight(const search_ctx *c, const cand_set *cs, double *factor)
{
    /* an empty list weighs nothing: scores stay as without the channel */
    int hits = 0;
    for (size_t i = 0; i < cs->n && !hits; i++)
        hits = cs->items[i].has_xlate;
    *factor = 0;
    if (c->out->xlate_state != SEARCH_XLATE_USED)
        return TROVE_OK;
    trove_err rc = query_coverage(c->st, c->q, cs, &c->out->xlate_coverage);
    /* a title or alias in the query's script that the query names (the
     * title channel's score: 1 for the whole name) is evidence as strong
     * as body text holding the words: "version control cheatsheet" as a
     * note's alias must not give way to 版本 in a recipe */
    int cjk = c->q->plain && tok_has_cjk(c->q->plain, strlen(c->q->plain)) != 0;
    for (size_t i = 0; c->q->plain && i < cs->n; i++) {
        const cand *t = &cs->items[i];
        if (t->ch[SEARCH_CH_TITLE].rank && search_same_script(cjk, t) &&
            t->ch[SEARCH_CH_TITLE].score > c->out->xlate_coverage)
            c->out->xlate_coverage = t->ch[SEARCH_CH_TITLE].score;
    }
    double cov = c->out->xlate_coverage;
    *factor = hits ? (1.0 - cov) * (1.0 - cov) * c->xlate_share : 0.0;
    return rc;
}

/* ---- the translated query ---------------------------------------------- */

/* How many chunks hold a translation (up to XLATE_DF_CAP): a word the
 * vault never uses would take the place of one it does, and of a word's
 * senses the vault's own is the one it uses most. */
typedef struct held_ctx {
    store *st;
    sqlite3_stmt *s;
    trove_err rc;
} held_ctx;

/* A word of two or more CJK characters and nothing else (no ASCII: no
 * quote, space or Latin word). */
static int cjk_word(const char *text, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)text[i] < 0x80)
            return 0;
    size_t first = 0;
    tok_utf8_next(text, len, &first);
    return first < len && tok_has_cjk(text, len) != 0;
}

static size_t index_df(void *ctx, const char *text, size_t len)
{
    held_ctx *h = ctx;
    if (h->rc)
        return 0;
    query_parsed q = {0};
    tbuf phrase = {0};
    const char *fts;
    if (cjk_word(text, len)) {
        /* a Chinese word as one phrase: the index's tokenizer cuts it as it
         * cut the notes (no parse of our own first), and a word the
         * segmenter splits (什么样) counts where its pieces stand together,
         * not wherever one of them does. A single character stays the
         * parsed query's prefix: it heads the words it is part of (丑 of
         * 丑数 for "ugly numbers") */
        tbuf_printf(&phrase, "\"%.*s\"", (int)len, text);
        fts = phrase.data;
    } else {
        /* any content word of it: "suffer from insomnia" is kept for "insomnia" */
        char *t = xstrndup(text, len);
        query_parse(t, &q);
        free(t);
        fts = q.fts;
    }
    size_t found = 0;
    if (fts) {
        sqlite3_reset(h->s);
        sqlite3_bind_text(h->s, 1, fts, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int(h->s, 2, XLATE_DF_CAP);
        if (step_row(h->st, h->s, "keyword search", &h->rc) > 0)
            found = (size_t)sqlite3_column_int64(h->s, 0);
    }
    query_free(&q);
    tbuf_free(&phrase);
    return found;
}

/* "SOURCE=TRANSLATION ..." for --explain. */
static char *xlate_display(const xlate_out *xo)
{
    tbuf b = {0};
    for (size_t i = 0; i < xo->n; i++)
        tbuf_printf(&b, "%s%s=%s", i ? " " : "", xo->from[i], xo->to[i]);
    return tbuf_detach(&b);
}

/* Whether the vault has notes the translation could find (meta.lang_counts,
 * kept by every update): Chinese ones for a query without Chinese, others
 * for one with Chinese. A one-language vault then pays nothing for the
 * channel: no dictionary, no segmenter for the translated words. */
static int has_target_notes(store *st, int zh_query)
{
    langpref_count *vc;
    size_t n;
    if (langpref_vault_counts(st, &vc, &n) < 0)
        return 1;   /* unknown: let the channel look */
    int found = 0;
    for (size_t i = 0; i < n && !found; i++)
        found = vc[i].notes > 0 && (strcmp(vc[i].code, "zh") == 0) != zh_query;
    langpref_counts_free(vc, n);
    return found;
}

/* Why the channel does not run for this query (out->xlate_state), or
 * SEARCH_XLATE_USED when it may. */
static search_xlate_state xlate_applies(const search_ctx *c)
{
    const search_opts *o = c->o;
    /* Only a Chinese or English query (or one too short to tell): the
     * dictionary's glosses are English, and a German word that is spelt
     * like an English one, or Japanese kanji, would pull in notes the
     * reader did not ask for (in a vault of translations, the copies in
     * other languages of other notes). */
    int ql = lang_detect(o->query, strlen(o->query));
    if (ql != LANG_UND && ql != LANG_EN && ql != LANG_ZH)
        return SEARCH_XLATE_OTHER;
    /* A vault of translations has the note in the reader's language: the
     * dictionary's votes for other notes' copies only blurred that order
     * (description -> note MRR@10 on the six-language Obsidian help vault
     * 0.847 -> 0.794 for English) */
    if (!o->each_translation && group_depth_factor(c->st) > 1)
        return SEARCH_XLATE_TRANSLATED;
    if (!has_target_notes(c->st, tok_has_cjk(o->query, strlen(o->query)) != 0))
        return SEARCH_XLATE_NO_TARGET;
    return SEARCH_XLATE_USED;
}

static int xlate_wanted(const search_ctx *c)
{
    const search_opts *o = c->o;
    return c->q->fts && o->query && !o->vector_only && !o->no_translate &&
           o->weights[SEARCH_CH_XLATE] > 0;
}

/* The translated query as a BM25 list of its own; its parsed form goes to
 * c->xq (for snippets) when it ran. */
static trove_err xlate_run(search_ctx *c, cand_set *cs)
{
    search_results *out = c->out;
    out->xlate_state = xlate_applies(c);
    if (out->xlate_state != SEARCH_XLATE_USED)
        return TROVE_OK;
    const xdict *d = xlate_dict();
    out->xlate_state = d ? SEARCH_XLATE_NONE : SEARCH_XLATE_NODICT;
    if (!d)
        return TROVE_OK;
    held_ctx held = {c->st, NULL, TROVE_OK};
    held.rc = prepare(c->st, "SELECT count(*) FROM (SELECT 1 FROM chunks_fts WHERE chunks_fts "
                      "MATCH ?1 LIMIT ?2)", &held.s);
    if (held.rc)
        return held.rc;
    xlate_out xo;
    xlate_query(d, c->o->query, index_df, &held, &xo);
    store_stmt_put(c->st, held.s);
    if (xdict_damage(d))
        out->xlate_state = SEARCH_XLATE_NODICT;   /* told once by xlate */
    trove_err rc = held.rc;
    if (rc == TROVE_OK && xo.n) {
        query_parse(xo.text, c->xq);
        out->xlate = xlate_display(&xo);
        out->xlate_state = SEARCH_XLATE_USED;
        c->xlate_share = translated_share(c->o->query, &xo);
        /* a query with Chinese words looks for other-language notes, an
         * English one for Chinese notes */
        int zh = tok_has_cjk(c->o->query, strlen(c->o->query)) != 0;
        if (c->xq->fts)
            rc = search_bm25_list(c->st, c->xq->fts, c->f, c->depth, cs, SEARCH_CH_XLATE, zh);
        if (rc == TROVE_OK)
            rank_xlate(cs);
    }
    xlate_out_free(&xo);
    return rc;
}

const search_channel search_ch_xlate = {.name = "translation", .wanted = xlate_wanted,
                                       .run = xlate_run};
