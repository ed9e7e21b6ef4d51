/* ch_bm25 — the keyword channel: FTS5 BM25 over chunks (heading column
 * weighted above body); a note ranks by its best chunk, which also anchors
 * the result. Its list (search_bm25_list) also runs the translated query
 * for ch_xlate.c. Chinese queries are re-scored with their character bigrams
 * (below). The notes are ranked once their link priors are known
 * (ch_graph.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "search/search_int.h"
#include "text/query.h"
#include "store/store_rank.h"
#include "text/grams.h"
#include "text/lang.h"
#include "util/mem.h"

/* The rows of top, best first, into cs as list ch until depth notes (0:
 * all) or `most` rows that pass: `s` gives a row's note and language, or no
 * row when the filters refuse it; mf (or NULL) then decides on the note.
 * nmap (or NULL, when s asks more than the note) answers for s where the
 * note map has the chunk: an array index instead of a statement run.
 * *notes counts on; returns the rows that passed. */
static size_t walk_rows(store *st, sqlite3_stmt *s, store_nmap_reader *nmap,
                        const meta_filter *mf, topk *top, size_t most, size_t depth,
                        cand_set *cs, int ch, int skip_zh, size_t *notes, trove_err *rc)
{
    size_t passed = 0;
    scored row;
    for (size_t i = 0; *rc == TROVE_OK && (!most || passed < most) && search_topk_get(top, i, &row);
         i++) {
        if (depth && *notes >= depth)
            break;
        int64_t doc_id;
        int mapped = nmap ? store_nmap_chunk_note(nmap, row.chunk_id, &doc_id, rc) : 0;
        if (mapped < 0)
            break;
        if (!mapped) {
            sqlite3_reset(s);
            sqlite3_bind_int64(s, 1, row.chunk_id);
            if (step_row(st, s, "keyword search", rc) <= 0)
                continue;
            doc_id = sqlite3_column_int64(s, 0);
        }
        if (mf && meta_note_ok(st, mf, doc_id, rc) <= 0)
            continue;
        passed++;
        if (skip_zh >= 0) {
            /* the translation's evidence is in the other language only: a
             * Chinese note holding the English words of a Chinese query's
             * translation (its code, a name) says nothing new */
            int lang = lang_from_code((const char *)sqlite3_column_text(s, 1));
            if (lang != LANG_UND && (lang == LANG_ZH) == (skip_zh == 1))
                continue;
        }
        cand *c = search_cand_get(cs, doc_id, 1);
        int *has = ch == SEARCH_CH_BM25 ? &c->has_bm25 : &c->has_xlate;
        if (*has)
            continue;   /* a better chunk of this note came first */
        *has = 1;
        c->ch[ch].score = row.score;
        if (ch == SEARCH_CH_BM25 || !c->chunk_id)
            c->chunk_id = row.chunk_id;
        ++*notes;
    }
    return passed;
}

/* ---- the rows that can reach the top (MaxScore) ------------------------ */

/* A row's score is a sum over the query's phrases, and phrase i adds at
 * most its bound b_i = IDF_i x (k1 + 1) (store_rank_bound). Once `cap` rows
 * are known with scores >= t, a row matching only phrases whose bounds sum
 * below t cannot be among the best `cap`: so the query runs restricted to
 * the rows of its rarer phrases, "(rare OR ...) AND (query)", which FTS5
 * answers by walking the rare doclists and seeking in the common ones, and
 * the rows of common words alone are neither read nor scored. t comes from
 * a first run restricted to the rarest phrase (its rows, scored in full,
 * are real rows of the query: the cap-th of them is a floor for the
 * cap-th of all); a second run, with the phrases that t does not rule
 * out, is needed when the first did not rule out all but the rarest.
 * Exact: the rows kept are the query's best `cap` (ties included: a row
 * ruled out scores strictly below t, with a margin for rounding), scored
 * by the same function. */
#define PRUNE_MAX 128          /* phrases; more: no pruning */
#define PRUNE_MARGIN 1e-9      /* relative, far above a sum's rounding */
#define PRUNE_MIN_ROWS 16      /* x cap: fewer rows in all, no pruning */

typedef struct prune {
    query_span sp[PRUNE_MAX];
    size_t order[PRUNE_MAX];   /* positive phrases, fewest rows first */
    size_t n_pos, n_neg;
    const int64_t *hits;
} prune;

/* p->order[0..n_pos) by rows, fewest first (ties: query order). An
 * insertion sort: at most PRUNE_MAX phrases, and no global context for
 * qsort, so that concurrent searches (the daemon's threads) stay apart. */
static void order_rarest_first(prune *p)
{
    for (size_t i = 0; i < p->n_pos; i++) {
        size_t x = i, j = i;
        for (; j > 0 && p->hits[p->order[j - 1]] > p->hits[x]; j--)
            p->order[j] = p->order[j - 1];
        p->order[j] = x;
    }
}

/* Runs the query's first row through trove_rank() for its statistics:
 * 1 when p then holds the phrases rarest first, 0 when the query has a
 * shape this does not prune, 2 when it has no row, -1 on an error.
 * p->sp, n_pos, n_neg: query_fts_phrases' answer. */
static int prune_plan(store *st, const char *fts, store_rank *rank, prune *p, trove_err *rc)
{
    if (p->n_pos < 2)
        return 0;
    sqlite3_stmt *s;
    if ((*rc = prepare(st, "SELECT trove_rank(chunks_fts) FROM chunks_fts"
                           " WHERE chunks_fts MATCH ?1 LIMIT 1", &s)) != TROVE_OK)
        return -1;
    sqlite3_bind_text(s, 1, fts, -1, SQLITE_STATIC);
    int row = step_row(st, s, "keyword search", rc);
    store_stmt_put(st, s);
    if (row <= 0)
        return row < 0 ? -1 : 2;
    /* every P one FTS5 phrase, in order: the statistics line up with p */
    if (!rank->have || (size_t)rank->n_phrase != p->n_pos + p->n_neg)
        return 0;
    rank->n_query = rank->n_phrase;
    p->hits = rank->hits;
    order_rarest_first(p);
    return 1;
}

/* The rows of the e rarest phrases, counted once per phrase: what a run
 * restricted to them reads, at most. */
static int64_t prune_hits(const prune *p, size_t e)
{
    int64_t n = 0;
    for (size_t k = 0; k < e; k++)
        n += p->hits[p->order[k]];
    return n;
}

/* The query restricted to the rows of its e rarest phrases. */
static void prune_expr(const char *fts, const prune *p, size_t e, tbuf *out)
{
    tbuf_reset(out);
    tbuf_putc(out, '(');
    for (size_t k = 0; k < e; k++) {
        const query_span *x = &p->sp[p->order[k]];
        tbuf_printf(out, "%s%.*s", k ? " OR " : "", (int)x->len, fts + x->off);
    }
    tbuf_printf(out, ") AND (%s)", fts);
}

/* The lowest score that matters, top being full: the last kept row's,
 * or, when the walk stops at its depth-th note (walk_depth: an unfiltered
 * walk of the whole list, walk_rows), the score of the row that brings
 * that note, where the note map knows every row's note till then. */
static double kept_floor(topk *top, store_nmap_reader *nmap, size_t walk_depth, trove_err *rc)
{
    double t = top->h[0].score;
    for (size_t i = 1; i < top->n; i++)
        t = fmin(t, top->h[i].score);
    if (!nmap || !walk_depth || walk_depth > top->n)
        return t;
    size_t slots = 16;
    while (slots < 2 * top->n)
        slots *= 2;
    int64_t *seen = xcalloc(slots, sizeof *seen);   /* note ids, 0: empty */
    size_t notes = 0;
    scored row;
    for (size_t i = 0; notes < walk_depth && search_topk_get(top, i, &row); i++) {
        int64_t doc;
        if (store_nmap_chunk_note(nmap, row.chunk_id, &doc, rc) <= 0 || doc <= 0)
            break;   /* unknown note (or an error): the last row's floor */
        size_t h = (size_t)(doc * 0x9E3779B97F4A7C15ull) & (slots - 1);
        while (seen[h] && seen[h] != doc)
            h = (h + 1) & (slots - 1);
        if (!seen[h]) {
            seen[h] = doc;
            if (++notes == walk_depth)
                t = row.score;
        }
    }
    free(seen);
    return t;
}

/* search_keep_best_plain(plain, fts) into top (top->cap > 0), reading only
 * rows that can be among the best top->cap; *matches is then "more than
 * kept" (SIZE_MAX) where rows were left unread. */
static trove_err keep_best_pruned(store *st, const char *plain, const char *fts,
                                  store_rank *rank, size_t walk_depth, topk *top,
                                  size_t *matches)
{
    trove_err rc = TROVE_OK;
    /* phrases OR-ed: every row scored by the statistics' own walk of each
     * phrase's rows, the query never run row by row; whatever pruning
     * would leave unread is read at less than a row's cost */
    if (search_keep_best_or(st, rank, STORE_RANK_CHUNKS, fts, top, matches, &rc))
        return rc;
    prune *p = xmalloc(sizeof *p);
    *matches = 0;
    p->n_pos = query_fts_phrases(fts, p->sp, PRUNE_MAX, &p->n_neg);
    int plan = prune_plan(st, fts, rank, p, &rc);
    tbuf expr = {0};
    size_t e = 1, runs = 0;
    /* Worth the runs it adds (a statement each: ~2-4M instructions at 100k
     * chunks) only where the whole query has many rows and the rarest
     * phrase few of them. */
    if (plan == 1 && (4 * prune_hits(p, 1) > prune_hits(p, p->n_pos) ||
                      prune_hits(p, p->n_pos) < (int64_t)(PRUNE_MIN_ROWS * top->cap)))
        plan = 0;
    while (plan == 1 && runs++ < 2) {   /* 2 (no row): nothing to prune */
        prune_expr(fts, p, e, &expr);
        top->n = top->sorted = 0;
        if ((rc = search_keep_best_plain(st, plain, tbuf_cstr(&expr), top, matches)) != TROVE_OK)
            break;
        if (top->n < top->cap)
            break;   /* no floor yet: the whole query */
        double t = kept_floor(top, rank->nmap, walk_depth, &rc), sum = 0;
        if (rc != TROVE_OK)
            break;
        size_t common = 0;   /* the commonest phrases, ruled out */
        while (common < p->n_pos - 1) {
            sum += store_rank_bound(rank, (int)p->order[p->n_pos - 1 - common]);
            if (sum * (1 + PRUNE_MARGIN) >= t)
                break;
            common++;
        }
        size_t need = p->n_pos - common;
        if (need <= e) {
            *matches = SIZE_MAX;
            plan = 3;   /* done */
            break;
        }
        if (need == p->n_pos || 10 * prune_hits(p, need) > 7 * prune_hits(p, p->n_pos))
            break;   /* the restriction would leave most rows to read anyway */
        e = need;
    }
    tbuf_free(&expr);
    free(p);
    if (rc != TROVE_OK || plan < 0 || plan >= 2)
        return rc;   /* an error, no row, or done */
    top->n = top->sorted = 0;
    return search_keep_best_plain(st, plain, fts, top, matches);
}

trove_err search_bm25_list(store *st, const char *fts, const search_filter *f, size_t depth,
                           cand_set *cs, int ch, int skip_zh)
{
    /* Several chunks of one note may be among the best, hence the margin. */
    size_t cap = depth * 4;
    /* trove_rank() is -bm25(chunks_fts, BM25_HEADING_WEIGHT,
     * BM25_BODY_WEIGHT) to the bit, cheaper per row (store_rank.h) */
    static const char plain[] = "SELECT rowid, trove_rank(chunks_fts) FROM chunks_fts"
                                " WHERE chunks_fts MATCH ?1";
    static const char joined[] = "SELECT c.id, trove_rank(chunks_fts) FROM chunks_fts"
                                 " JOIN chunks c ON c.id = chunks_fts.rowid"
                                 " JOIN docs d ON d.id = c.doc_id WHERE chunks_fts MATCH ?1";
    store_rank rank = {.nmap = f->nmap, .weight = {BM25_HEADING_WEIGHT, BM25_BODY_WEIGHT}};
    trove_err rc = store_rank_ready(st);
    if (rc)
        return rc;
    store_rank_use(st, &rank);
    /* With filters, they are checked on the rows read (the row's lookup of
     * its note, which the walk does anyway), best first, among the
     * KEEP_BEST_MARGIN times as many best rows of the unfiltered match: a
     * common word's thousands of matching chunks are then not each joined
     * with its note and the filters (docs/performance.md, --where). The
     * same rows as the joined match: at most `cap` that pass; when they
     * run out first and the match had more rows than were kept, the
     * joined match goes on where the walk stopped. */
    int filtered = f->sql.len || f->heading, late = depth && filtered;
    topk top = {.cap = late ? cap * KEEP_BEST_MARGIN : cap};
    size_t matches = 0;
    if (late || (!filtered && top.cap))
        rc = keep_best_pruned(st, plain, fts, &rank, late || skip_zh >= 0 ? 0 : depth, &top,
                              &matches);
    else
        rc = search_keep_best(st, plain, joined, NULL, fts, f, f->heading, &top);
    /* The note's row only where it decides: its language for the
     * translated query, the filters; the keyword channel's plain lookups
     * stay in the chunks table (-8% of a cold search's instructions). */
    tbuf sql = {0};
    /* --where, dates: decided in C on the note id (meta_note_ok) */
    const meta_filter *mf = late && skip_zh < 0 ? f->meta_only : NULL;
    int only_note = mf || !(late || skip_zh >= 0);   /* the note map can answer */
    if (only_note)
        tbuf_puts(&sql, "SELECT doc_id FROM chunks WHERE id = ?1");
    else
        tbuf_puts(&sql, "SELECT c.doc_id, d.lang FROM chunks c JOIN docs d ON d.id = c.doc_id"
                        " WHERE c.id = ?1");
    if (late && !mf)
        tbuf_printf(&sql, "%s%s", tbuf_cstr(&f->sql), f->heading ? SEARCH_HEADING_COND : "");
    sqlite3_stmt *s = NULL;
    if (rc == TROVE_OK && top.n)
        rc = prepare(st, sql.data, &s);
    tbuf_free(&sql);
    if (s && late && !mf) {
        search_filter_bind(s, 2, f);
        if (f->heading)
            sqlite3_bind_text(s, 2 + (int)f->n_binds, f->heading, -1, SQLITE_STATIC);
    }
    /* Notes are ranked by rank_bm25() once their link priors are known. */
    size_t notes = 0, passed = 0;
    store_nmap_reader *nmap = only_note ? f->nmap : NULL;
    if (s)
        passed = walk_rows(st, s, nmap, mf, &top, cap, depth, cs, ch, skip_zh, &notes, &rc);
    if (rc == TROVE_OK && late && notes < depth && passed < cap && matches > top.cap) {
        top.n = top.sorted = 0;
        top.cap = cap;
        rc = search_keep_best(st, plain, joined, NULL, fts, f, f->heading, &top);
        if (rc == TROVE_OK && s)
            walk_rows(st, s, nmap, mf, &top, cap, depth, cs, ch, skip_zh, &notes, &rc);
    }
    if (s)
        store_stmt_put(st, s);
    store_rank_use(st, NULL);
    if (rank.rc)
        rc = rank.rc;   /* the note map's error, under the statement's */
    store_rank_free(&rank);
    free(top.h);
    return rc;
}

/* ---- bigram view of Chinese queries ------------------------------------ */

/* The best notes by word BM25 are re-scored with the character bigrams of
 * the query (text/grams.h says why): a note's keyword score becomes
 * words / best words + bigrams / best bigrams, so both views count alike.
 * The index holds no bigram statistics, so a bigram weighs as much as the
 * rarest query word it is part of (its IDF over the chunks); bigrams made
 * of function words only weigh nothing. On DRCD, re-scoring 10, 20 or 50
 * candidates gave the same ranking to within 0.001 nDCG@10. */
#define GRAM_DEPTH 20
#define GRAM_MAX 256          /* distinct query bigrams kept */
#define GRAM_SLOTS 512        /* hash slots, a power of two > 2 * GRAM_MAX */
#define GRAM_BYTES 24         /* longest bigram kept, marks included */
#define BM25_K1 1.2           /* FTS5's bm25() constants */
#define BM25_B 0.75

typedef struct qgram {
    char g[GRAM_BYTES];
    size_t len;
    double w;
} qgram;

typedef struct gram_use {
    size_t gram, wa, wb;      /* a bigram of the query and its two words */
} gram_use;

typedef struct gram_query {
    qgram items[GRAM_MAX];
    size_t n;
    short slots[GRAM_SLOTS];  /* index + 1, 0 = empty */
    char **words;             /* the query's words, then their weights */
    double *word_w;
    size_t n_words, cap_words, base;
    gram_use *uses;
    size_t n_uses, cap_uses;
    double *tf;               /* term frequencies of the chunk being read */
    double len, tf_weight;
} gram_query;

static uint32_t gram_hash(const char *g, size_t len)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)g[i]) * 16777619u;
    return h;
}

/* Slot of bigram g: where it is, or the empty slot where it would go. */
static size_t gram_slot(const gram_query *gq, const char *g, size_t len)
{
    size_t h = gram_hash(g, len) & (GRAM_SLOTS - 1);
    while (gq->slots[h]) {
        const qgram *x = &gq->items[gq->slots[h] - 1];
        if (x->len == len && memcmp(x->g, g, len) == 0)
            break;
        h = (h + 1) & (GRAM_SLOTS - 1);
    }
    return h;
}

static double search_idf(double n_chunks, double df)
{
    double idf = log((n_chunks - df + 0.5) / (df + 0.5));
    return idf > 1e-6 ? idf : 1e-6;
}

/* A query word's IDF as FTS5's bm25() computes it (search_int.h). */
double search_word_idf(store *st, sqlite3_stmt *df_stmt, double n_chunks, const char *w,
                       trove_err *rc)
{
    /* counted already where the keyword channel's query had it: a walk
     * of a common word's rows saved (~10-18% of a cold search at 1M) */
    int64_t hits;
    double df = 0;
    if (store_rank_hits(st, w, NULL, &hits))
        return search_idf(n_chunks, (double)hits);
    tbuf phrase = {0};
    tbuf_printf(&phrase, "\"%s\"", w);   /* a token: no quote inside */
    sqlite3_reset(df_stmt);
    sqlite3_bind_text(df_stmt, 1, tbuf_cstr(&phrase), -1, SQLITE_TRANSIENT);
    if (step_row(st, df_stmt, "keyword search", rc) > 0)
        df = sqlite3_column_double(df_stmt, 0);
    tbuf_free(&phrase);
    return search_idf(n_chunks, df);
}

/* The callbacks run inside the tokenizer, which must not be re-entered
 * (the segmenter's scratch space is per thread): they only collect. */
static void on_query_word(void *ctx, size_t idx, const char *w, size_t len)
{
    gram_query *gq = ctx;
    size_t at = gq->base + idx;
    if (at != gq->n_words)
        return;   /* words come in order, numbered from 0 per term */
    xgrow(&gq->words, &gq->cap_words, at + 1, sizeof *gq->words);
    gq->words[gq->n_words++] = xstrndup(w, len);
}

static void on_query_gram(void *ctx, const char *g, size_t len, size_t wa, size_t wb)
{
    gram_query *gq = ctx;
    if (len >= GRAM_BYTES)
        return;
    size_t h = gram_slot(gq, g, len);
    if (!gq->slots[h]) {
        if (gq->n >= GRAM_MAX)
            return;
        qgram *x = &gq->items[gq->n++];
        memcpy(x->g, g, len);
        x->len = len;
        x->w = 0;
        gq->slots[h] = (short)gq->n;
    }
    xgrow(&gq->uses, &gq->cap_uses, gq->n_uses + 1, sizeof *gq->uses);
    gq->uses[gq->n_uses++] = (gram_use){(size_t)gq->slots[h] - 1, gq->base + wa, gq->base + wb};
}

static void on_chunk_gram(void *ctx, const char *g, size_t len, size_t wa, size_t wb)
{
    (void)wa, (void)wb;
    gram_query *gq = ctx;
    gq->len += 1;
    if (len >= GRAM_BYTES)
        return;
    size_t h = gram_slot(gq, g, len);
    if (gq->slots[h])
        gq->tf[gq->slots[h] - 1] += gq->tf_weight;
}

/* The query's bigrams with their weights; none when no positive term has a
 * word-segmented CJK run. */
static trove_err gram_query_build(store *st, const query_parsed *q, gram_query *gq)
{
    grams_cb cb = {gq, on_query_word, on_query_gram};
    for (size_t i = 0; i < q->n_terms; i++) {
        const query_term *t = &q->terms[i];
        if (t->negated || t->stopword)
            continue;
        gq->base += grams_run(t->text, strlen(t->text), &cb);
    }
    if (gq->n == 0)
        return TROVE_OK;
    sqlite3_stmt *df = NULL;
    trove_err rc = prepare(st, "SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH ?", &df);
    double n_chunks = 0;   /* FTS5's totals, not a walk of every chunk */
    if (rc == TROVE_OK)
        rc = store_rank_row_count(st, STORE_RANK_CHUNKS, &n_chunks);
    gq->word_w = xcalloc(gq->n_words ? gq->n_words : 1, sizeof *gq->word_w);
    for (size_t i = 0; rc == TROVE_OK && i < gq->n_words; i++)
        if (!query_zh_function_word(gq->words[i], strlen(gq->words[i])))
            gq->word_w[i] = search_word_idf(st, df, n_chunks, gq->words[i], &rc);
    for (size_t i = 0; i < gq->n_uses; i++) {
        const gram_use *u = &gq->uses[i];
        if (u->wa < gq->n_words && u->wb < gq->n_words)
            gq->items[u->gram].w = fmax(gq->items[u->gram].w,
                                        fmax(gq->word_w[u->wa], gq->word_w[u->wb]));
    }
    store_stmt_put(st, df);
    return rc;
}

static int cmp_bm25_score(const void *a, const void *b)
{
    const cand *x = *(const cand *const *)a, *y = *(const cand *const *)b;
    double sx = x->ch[SEARCH_CH_BM25].score, sy = y->ch[SEARCH_CH_BM25].score;
    if (sx != sy)
        return sx < sy ? 1 : -1;
    return x->doc_id < y->doc_id ? -1 : x->doc_id > y->doc_id;
}

/* BM25 of the bigrams of each of the first k candidates, into sb[]. Words
 * rank a note by its best chunk; bigrams read the note as a whole (its
 * anchoring chunk first, then the others in order, at most SEARCH_NOTE_CHUNKS),
 * so evidence spread over two chunks of a short note counts. A heading
 * counts twice the body, as in the word channel, once per run of chunks
 * that share it. */
static trove_err gram_scores(store *st, gram_query *gq, cand **order, size_t k, double *sb)
{
    sqlite3_stmt *s;
    trove_err rc = prepare(st,
        "SELECT heading, body FROM chunks_fts WHERE rowid IN"
        " (SELECT id FROM chunks WHERE doc_id = ?1 ORDER BY id = ?2 DESC, seq LIMIT "
        TROVE_STR(SEARCH_NOTE_CHUNKS) ")", &s);
    if (rc)
        return rc;
    double *tf = xcalloc(k * gq->n, sizeof *tf), *len = xcalloc(k, sizeof *len);
    double total = 0;
    grams_cb cb = {gq, NULL, on_chunk_gram};
    tbuf heading = {0};
    for (size_t i = 0; rc == TROVE_OK && i < k; i++) {
        gq->tf = tf + i * gq->n;
        gq->len = 0;
        tbuf_reset(&heading);
        sqlite3_reset(s);
        sqlite3_bind_int64(s, 1, order[i]->doc_id);
        sqlite3_bind_int64(s, 2, order[i]->chunk_id);
        while (step_row(st, s, "keyword search", &rc) > 0) {
            const char *h = (const char *)sqlite3_column_text(s, 0);
            size_t hl = (size_t)sqlite3_column_bytes(s, 0);
            if (h && (hl != heading.len || memcmp(h, tbuf_cstr(&heading), hl) != 0)) {
                gq->tf_weight = BM25_HEADING_WEIGHT;
                grams_run(h, hl, &cb);
                tbuf_reset(&heading);
                tbuf_append(&heading, h, hl);
            }
            const char *body = (const char *)sqlite3_column_text(s, 1);
            gq->tf_weight = BM25_BODY_WEIGHT;
            if (body)
                grams_run(body, (size_t)sqlite3_column_bytes(s, 1), &cb);
        }
        len[i] = gq->len;
        total += gq->len;
    }
    tbuf_free(&heading);
    store_stmt_put(st, s);
    /* The candidates' mean length stands in for the collection's. */
    double avg = total > 0 ? total / (double)k : 1;
    for (size_t i = 0; i < k; i++) {
        double norm = BM25_K1 * (1 - BM25_B + BM25_B * len[i] / avg);
        sb[i] = 0;
        for (size_t j = 0; j < gq->n; j++) {
            double f = tf[i * gq->n + j];
            if (f > 0)
                sb[i] += gq->items[j].w * f * (BM25_K1 + 1) / (f + norm);
        }
    }
    free(tf);
    free(len);
    return rc;
}

static trove_err rescore_bigrams(store *st, const query_parsed *q, cand_set *cs)
{
    gram_query *gq = xcalloc(1, sizeof *gq);
    trove_err rc = gram_query_build(st, q, gq);
    cand **order = NULL;
    size_t n = 0;
    if (rc == TROVE_OK && gq->n) {
        order = xmalloc((cs->n ? cs->n : 1) * sizeof *order);
        for (size_t i = 0; i < cs->n; i++)
            if (cs->items[i].has_bm25)
                order[n++] = &cs->items[i];
        if (n > 1)
            qsort(order, n, sizeof *order, cmp_bm25_score);
    }
    if (n && order[0]->ch[SEARCH_CH_BM25].score > 0) {
        size_t k = n < GRAM_DEPTH ? n : GRAM_DEPTH;
        double *sb = xcalloc(k, sizeof *sb);
        rc = gram_scores(st, gq, order, k, sb);
        double best_w = order[0]->ch[SEARCH_CH_BM25].score, best_b = 0;
        for (size_t i = 0; i < k; i++)
            best_b = fmax(best_b, sb[i]);
        if (rc == TROVE_OK && best_b > 0) {
            for (size_t i = 0; i < n; i++)
                order[i]->ch[SEARCH_CH_BM25].score /= best_w;
            for (size_t i = 0; i < k; i++)
                order[i]->ch[SEARCH_CH_BM25].score += sb[i] / best_b;
        }
        free(sb);
    }
    free(order);
    for (size_t i = 0; i < gq->n_words; i++)
        free(gq->words[i]);
    free(gq->words);
    free(gq->word_w);
    free(gq->uses);
    free(gq);
    return rc;
}

/* Run when it has a weight, and when the title channel is off (then the
 * keyword channel alone finds notes, its ranks unweighted). */
static int bm25_wanted(const search_ctx *c)
{
    const search_opts *o = c->o;
    return c->q->fts && !o->vector_only &&
           (o->weights[SEARCH_CH_BM25] > 0 || o->weights[SEARCH_CH_TITLE] <= 0);
}

static trove_err bm25_run(search_ctx *c, cand_set *cs)
{
    trove_err rc = search_bm25_list(c->st, c->q->fts, c->f, c->depth, cs, SEARCH_CH_BM25, -1);
    if (rc == TROVE_OK && c->o->weights[SEARCH_CH_BM25] > 0)
        rc = rescore_bigrams(c->st, c->q, cs);
    return rc;
}

const search_channel search_ch_bm25 = {.name = "bm25", .wanted = bm25_wanted, .run = bm25_run};
