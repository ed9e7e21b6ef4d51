/* ch_title — the title channel: title / alias / file-name match, ranked by
 * how much of the query the name covers, exact matches first. */
#include <stdlib.h>
#include <string.h>

#include "search/search_int.h"
#include "store/store_lens.h"
#include "text/tok.h"
#include "text/tokmemo.h"
#include "util/mem.h"
#include "util/str.h"

/* Title hits weaker than this are noise for long queries and are dropped:
 * a third of a long query's words, or a short name wholly in the query. */
#define TITLE_MIN_QUALITY 0.3
/* A name wholly inside the query is evidence of its own only when it is a
 * good share of the query: "tar" in "extract tar archive", not one word of
 * a ten-word question (every passage of an article shares its title, and a
 * one-word title such as 政策 inside a long question outvoted the passage
 * that answers it). */
#define TITLE_WHOLE_NAME_MIN_COVERAGE (1.0 / 3.0)
/* Names re-scored per query, best by BM25 first. */
#define TITLE_CANDIDATES 100

typedef struct token_set {
    char **items;
    size_t n, cap;
    int skip_function_words;   /* leave out Chinese function words */
    int has_cjk;               /* the query's set: a token holds a CJK character */
    store *st;                 /* the query's set: where its notes are */
    trove_err rc;              /* ... and the first error reading them */
    tokmemo *memo;             /* the query's set: the names' and notes' terms kept by a
                                  resident process (search_opts.tok_memo); NULL: none */
} token_set;

static int token_set_has(const token_set *ts, const char *tok, size_t len)
{
    for (size_t i = 0; i < ts->n; i++)
        if (strlen(ts->items[i]) == len && memcmp(ts->items[i], tok, len) == 0)
            return 1;
    return 0;
}

static int collect_token(void *ctx, const char *token, size_t len, size_t start, size_t end)
{
    (void)start, (void)end;
    token_set *ts = ctx;
    if (ts->skip_function_words && query_zh_function_word(token, len))
        return 0;
    if (!token_set_has(ts, token, len)) {
        xgrow(&ts->items, &ts->cap, ts->n + 1, sizeof *ts->items);
        ts->items[ts->n++] = xstrndup(token, len);
    }
    return 0;
}

static void token_set_free(token_set *ts)
{
    for (size_t i = 0; i < ts->n; i++)
        free(ts->items[i]);
    free(ts->items);
    memset(ts, 0, sizeof *ts);
}

static void tokenize_into(token_set *ts, const char *text, size_t len)
{
    static const tok_opts opts = {.stem = 1, .query = 1};
    tok_run(&opts, text, len, ts, collect_token);
}

/* Which query tokens a name holds (is_hit); returns how many, and in
 * *n_name how many distinct tokens the name has. A query without CJK
 * tokens cannot match the words of a name's CJK text (every token cut
 * from CJK text holds a CJK character), so those are cut only for a name
 * that matched otherwise, where their number counts (precision).
 * Segmenting them for every candidate name loaded the Chinese dictionary
 * at every cold English search of a multilingual vault. */
static size_t name_tokens(const token_set *q, const char *name, size_t len, size_t *n_name,
                          unsigned char *is_hit)
{
    int skip = !q->has_cjk && tok_has_cjk(name, len);
    size_t hit = 0;
    if (q->memo) {
        /* the same terms, from the memo (tokmemo.h) */
        const tokmemo_set *ns = tokmemo_get(q->memo, skip, name, len);
        for (size_t i = 0; i < q->n; i++)
            if (tokmemo_has(ns, q->items[i], strlen(q->items[i])))
                hit++, is_hit[i] = 1;
        if (hit && skip)
            ns = tokmemo_get(q->memo, 0, name, len);
        *n_name = ns->n;
        return hit;
    }
    token_set nt = {0};
    tok_opts opts = {.stem = 1, .query = 1, .skip_cjk = skip};
    tok_run(&opts, name, len, &nt, collect_token);
    for (size_t i = 0; i < q->n; i++)
        if (token_set_has(&nt, q->items[i], strlen(q->items[i])))
            hit++, is_hit[i] = 1;
    if (hit && skip) {
        token_set_free(&nt);
        tokenize_into(&nt, name, len);
    }
    *n_name = nt.n;
    token_set_free(&nt);
    return hit;
}

/* Whether the text of note doc_id (its first SEARCH_NOTE_CHUNKS chunks) holds
 * one of the query tokens the name left out. */
typedef struct rest_ctx {
    const char **tok;      /* the query tokens the name left out */
    size_t *len;
    size_t n;
    int found;
} rest_ctx;

static int rest_token(void *ctx, const char *t, size_t len, size_t start, size_t end)
{
    (void)start, (void)end;
    rest_ctx *r = ctx;
    for (size_t i = 0; i < r->n; i++)
        if (r->len[i] == len && memcmp(r->tok[i], t, len) == 0)
            return r->found = 1;
    return 0;
}

static int note_has_rest(token_set *q, const unsigned char *is_hit, int64_t doc_id)
{
    sqlite3_stmt *s;
    /* seq numbers a note's chunks from 0: `seq < N` is its first N, with
     * no ORDER BY ... LIMIT, whose IN list SQLite builds as a temporary
     * table per note (~60,000 instructions; docs/performance.md, session
     * 29); any of them may hold the token, in whatever order read. */
    if (q->rc || (q->rc = prepare(q->st, "SELECT f.c1 FROM chunks c CROSS JOIN "
                                  SEARCH_CHUNKS_CONTENT " f ON f.id = c.id"
                                  " WHERE c.doc_id = ? AND c.seq < "
                                  TROVE_STR(SEARCH_NOTE_CHUNKS), &s)))
        return 0;
    /* A query whose other words are not CJK need not segment the note's
     * CJK text (nor load a segmenter for it). */
    tok_first first = {0};   /* rest_token compares with these terms alone */
    tok_opts opts = {.stem = 1, .query = 1, .skip_cjk = 1, .stem_only = &first};
    for (size_t i = 0; i < q->n; i++) {
        if (!is_hit[i] && tok_has_cjk(q->items[i], strlen(q->items[i])))
            opts.skip_cjk = 0;
        if (!is_hit[i])
            tok_first_add(&first, q->items[i]);
    }
    /* nor fold a Russian word for "archive" (tok_opts.ascii_first) */
    opts.ascii_first = tok_first_ascii(&first);
    rest_ctx r = {0};
    r.tok = xmalloc((q->n ? q->n : 1) * sizeof *r.tok);
    r.len = xmalloc((q->n ? q->n : 1) * sizeof *r.len);
    for (size_t i = 0; i < q->n; i++)
        if (!is_hit[i]) {
            r.tok[r.n] = q->items[i];
            r.len[r.n++] = strlen(q->items[i]);
        }
    sqlite3_bind_int64(s, 1, doc_id);
    while (!r.found && step_row(q->st, s, "title search", &q->rc) > 0) {
        const char *body = (const char *)sqlite3_column_text(s, 0);
        size_t len = (size_t)sqlite3_column_bytes(s, 0);
        if (body && q->memo) {
            /* the chunk's terms from the memo (tokmemo_holds): the same
             * answer, as stem_only and ascii_first only leave out terms
             * that cannot be one of r's (tok.h) */
            r.found = tokmemo_holds(q->memo, opts.skip_cjk, body, len,
                                    (const char *const *)r.tok, r.len, r.n);
        } else if (body) {
            tok_run(&opts, body, len, &r, rest_token);
        }
    }
    store_stmt_put(q->st, s);
    free(r.tok);
    free(r.len);
    return r.found;
}

/* note_has_rest's answers for one note, by the query tokens the name left
 * out: a note's title and file name are often one name ("tar", tar.md),
 * and reading the note's text twice for one question cost ~9% of a cold
 * search's instructions on the tldr pages (docs/performance.md, session
 * 31). */
typedef struct rest_memo {
    int64_t doc_id;
    struct rest_answer {
        unsigned char *hit;   /* the is_hit array asked (q->n bytes) */
        int found;
    } *ans;
    size_t n, cap;
} rest_memo;

static int rest_memo_has(token_set *q, const unsigned char *is_hit, rest_memo *m)
{
    for (size_t i = 0; i < m->n; i++)
        if (memcmp(m->ans[i].hit, is_hit, q->n) == 0)
            return m->ans[i].found;
    int found = note_has_rest(q, is_hit, m->doc_id);
    if (q->rc)
        return found;   /* an error is not an answer to keep */
    xgrow(&m->ans, &m->cap, m->n + 1, sizeof *m->ans);
    m->ans[m->n].hit = xmalloc(q->n ? q->n : 1);
    memcpy(m->ans[m->n].hit, is_hit, q->n);
    m->ans[m->n++].found = found;
    return found;
}

static void rest_memo_free(rest_memo *m)
{
    for (size_t i = 0; i < m->n; i++)
        free(m->ans[i].hit);
    free(m->ans);
}

/* How well one name (title, alias or file name) matches the query, in
 * [0, 1]: the share of query terms the name contains, squared so that a
 * name sharing a word or two with a long question counts little, times a
 * factor for how little else the name holds. An exact (folded) match is 1. */
static double name_score(token_set *q, const char *name, size_t len, const char *q_folded,
                         rest_memo *memo)
{
    size_t n_name = 0;
    unsigned char *is_hit = xcalloc(q->n ? q->n : 1, 1);
    size_t hit = name_tokens(q, name, len, &n_name, is_hit);
    double score = 0;
    if (hit && n_name) {
        double coverage = (double)hit / (double)q->n;
        double precision = (double)hit / (double)n_name;
        score = coverage * coverage * (0.5 + 0.5 * precision);
        /* A whole name inside the query ("tar" for "extract tar archive")
         * is good evidence even when it covers a third of the query only,
         * when the note also speaks of the rest of the query (tar.md of
         * extracting archives). A note named after one thing a question
         * mentions, that holds none of its other words, is about that
         * thing but not about the question (元世祖 for "in which year did
         * 元世祖 campaign against 占城"). */
        if (precision == 1.0 && coverage >= TITLE_WHOLE_NAME_MIN_COVERAGE - 1e-9 &&
            score < 0.5 * coverage + 0.25 && rest_memo_has(q, is_hit, memo))
            score = 0.5 * coverage + 0.25;
    }
    free(is_hit);
    if (score > 0) {
        char *n = xstrndup(name, len);
        char *folded = str_fold(n);
        if (strcmp(folded, q_folded) == 0)
            score = 1.0;
        free(folded);
        free(n);
    }
    return score;
}

static double best_name_score(token_set *q, sqlite3_stmt *s, const char *q_folded)
{
    double best = 0;
    rest_memo memo = {.doc_id = sqlite3_column_int64(s, 0)};
    for (int col = 1; col <= 3; col++) {
        const char *text = (const char *)sqlite3_column_text(s, col);
        if (!text)
            continue;
        /* aliases are stored one per line */
        for (const char *line = text; *line;) {
            const char *nl = strchr(line, '\n');
            size_t len = nl ? (size_t)(nl - line) : strlen(line);
            double sc = name_score(q, line, len, q_folded, &memo);
            if (sc > best)
                best = sc;
            if (!nl)
                break;
            line = nl + 1;
        }
    }
    rest_memo_free(&memo);
    return best;
}

typedef struct title_hit {
    int64_t doc_id;
    double score, bm25;
} title_hit;

static int cmp_title_hit(const void *a, const void *b)
{
    const title_hit *x = a, *y = b;
    if (x->score != y->score)
        return x->score < y->score ? 1 : -1;
    if (x->bm25 != y->bm25)
        return x->bm25 < y->bm25 ? 1 : -1;
    return x->doc_id < y->doc_id ? -1 : x->doc_id > y->doc_id;
}

static trove_err channel_title(store *st, const query_parsed *q, const search_filter *f, size_t depth,
                               tokmemo *memo, cand_set *cs)
{
    /* Coverage counts the words that carry meaning: stopwords and Chinese
     * function words only when the query has nothing else ("The The"). */
    token_set qt = {.st = st, .memo = memo};
    for (int pass = 0; pass < 2 && qt.n == 0; pass++) {
        qt.skip_function_words = pass == 0;
        for (size_t i = 0; i < q->n_terms; i++)
            if (!q->terms[i].negated && (pass || !q->terms[i].stopword))
                tokenize_into(&qt, q->terms[i].text, strlen(q->terms[i].text));
    }
    qt.skip_function_words = 0;
    if (qt.n == 0)
        return TROVE_OK;
    for (size_t i = 0; i < qt.n && !qt.has_cjk; i++)
        qt.has_cjk = tok_has_cjk(qt.items[i], strlen(qt.items[i]));
    /* The best names by BM25 are re-scored by query coverage; an exact or
     * near-exact name is always among them. */
    topk top = {.cap = TITLE_CANDIDATES};
    /* -bm25(titles_fts, 3.0, 2.0, 1.0): trove_rank's bits with these
     * weights and FTS5's lengths (store_rank.h) */
    store_rank names = {.weight = {3.0, 2.0}, .lens = store_lens_current(st)};
    trove_err rc = TROVE_OK;
    size_t matches;
    if (f->sql.len || !search_keep_best_or(st, &names, STORE_RANK_TITLES, q->fts, &top, &matches,
                                           &rc))
        rc = search_keep_best(st,
        "SELECT rowid, -bm25(titles_fts, 3.0, 2.0, 1.0) FROM titles_fts WHERE titles_fts MATCH ?1",
        "SELECT t.rowid, -bm25(titles_fts, 3.0, 2.0, 1.0) FROM titles_fts t"
        " JOIN docs d ON d.id = t.rowid WHERE titles_fts MATCH ?1",
        "SELECT 1 FROM docs d WHERE d.id = ?1", q->fts, f, NULL, &top);
    sqlite3_stmt *s = NULL;
    if (rc == TROVE_OK && top.n)
        rc = prepare(st, "SELECT id, c0, c1, c2 FROM " SEARCH_TITLES_CONTENT " WHERE id = ?", &s);
    /* Every kept name is scored, in the order they lie in top.h (the hits
     * are sorted below): no need to order them first. */
    char *q_folded = str_fold(q->plain);
    title_hit *hits = xmalloc((top.n ? top.n : 1) * sizeof *hits);
    size_t n = 0;
    for (size_t i = 0; rc == TROVE_OK && i < top.n; i++) {
        sqlite3_reset(s);
        sqlite3_bind_int64(s, 1, top.h[i].chunk_id);
        if (step_row(st, s, "title search", &rc) <= 0)
            continue;
        double sc = best_name_score(&qt, s, q_folded);
        if (qt.rc)
            rc = qt.rc;
        if (sc >= TITLE_MIN_QUALITY)
            hits[n++] = (title_hit){top.h[i].chunk_id, sc, top.h[i].score};
    }
    store_stmt_put(st, s);
    if (n > 1)
        qsort(hits, n, sizeof *hits, cmp_title_hit);
    /* Equal quality, equal rank: sixteen translations of "tar" all match
     * "extract a tar archive" equally well by name. */
    int rank = 0;
    for (size_t i = 0; i < n; i++) {
        rank = shared_rank(i, rank, i > 0 && same_score(hits[i].score, hits[i - 1].score));
        if (depth && (size_t)rank > depth)
            break;
        cand *c = search_cand_get(cs, hits[i].doc_id, 1);
        c->ch[SEARCH_CH_TITLE].rank = rank;
        c->ch[SEARCH_CH_TITLE].score = hits[i].score;
    }
    free(hits);
    free(top.h);
    store_rank_free(&names);
    free(q_folded);
    token_set_free(&qt);
    return rc;
}

static int title_wanted(const search_ctx *c)
{
    return c->q->fts && !c->o->vector_only && c->o->weights[SEARCH_CH_TITLE] > 0;
}

static trove_err title_run(search_ctx *c, cand_set *cs)
{
    return channel_title(c->st, c->q, c->f, c->depth, c->o->tok_memo, cs);
}

const search_channel search_ch_title = {.name = "title", .wanted = title_wanted, .run = title_run};
