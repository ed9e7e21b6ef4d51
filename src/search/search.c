#include "search/search.h"

#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "index/vembed.h"
#include "search/fusion.h"
#include "search/group.h"
#include "search/lang_pref.h"
#include "search/snippet.h"
#include "search/vcache.h"
#include "store/store_vec.h"
#include "text/grams.h"
#include "text/lang.h"
#include "text/query.h"
#include "text/tok.h"
#include "util/buf.h"
#include "util/mem.h"
#include "util/str.h"

const char *const search_channel_names[SEARCH_N_CHANNELS] = {"bm25", "title", "vector"};

const char search_vec_blank_why[] =
    "the query has no vector: none of its words is in the embedding model's vocabulary";

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

/* BM25 column weights of chunks_fts(heading, body). */
#define BM25_HEADING_WEIGHT 2.0
#define BM25_BODY_WEIGHT 1.0

/* A note found by at least one channel. */
typedef struct cand {
    int64_t doc_id;
    int64_t chunk_id;      /* anchoring chunk, 0 = none yet */
    int64_t vec_chunk_id;  /* the note's best chunk by the vector channel */
    int in_degree;
    int lang;              /* LANG_* of the note */
    double prior;          /* link-graph factor on the bm25 score */
    int has_bm25;          /* found by bm25, ranked once priors are known */
    search_channel_hit ch[SEARCH_N_CHANNELS];
    double fused;
    search_alt *alts;      /* its translations (search/group.h), moved into the result */
    size_t n_alts;
} cand;

typedef struct cand_set {
    cand *items;
    size_t n, cap;
    size_t *slots;         /* index+1, open addressing on doc_id */
    size_t n_slots;
} cand_set;

static cand *cand_get(cand_set *cs, int64_t doc_id, int create)
{
    if (cs->n_slots == 0 || (create && cs->n * 2 >= cs->n_slots)) {
        size_t ns = cs->n_slots ? cs->n_slots * 2 : 256;
        free(cs->slots);
        cs->slots = xcalloc(ns, sizeof *cs->slots);
        cs->n_slots = ns;
        for (size_t i = 0; i < cs->n; i++) {
            size_t h = (size_t)cs->items[i].doc_id * 0x9E3779B97F4A7C15ull & (ns - 1);
            while (cs->slots[h])
                h = (h + 1) & (ns - 1);
            cs->slots[h] = i + 1;
        }
    }
    size_t h = (size_t)doc_id * 0x9E3779B97F4A7C15ull & (cs->n_slots - 1);
    while (cs->slots[h]) {
        if (cs->items[cs->slots[h] - 1].doc_id == doc_id)
            return &cs->items[cs->slots[h] - 1];
        h = (h + 1) & (cs->n_slots - 1);
    }
    if (!create)
        return NULL;
    xgrow(&cs->items, &cs->cap, cs->n + 1, sizeof *cs->items);
    cand *c = &cs->items[cs->n];
    memset(c, 0, sizeof *c);
    c->doc_id = doc_id;
    cs->slots[h] = ++cs->n;
    return c;
}

/* Two channel scores are equal when they differ by rounding only. */
static int same_score(double a, double b)
{
    return fabs(a - b) <= 1e-9 * fmax(fabs(a), fabs(b));
}

/* The 1-based rank of item i of a list sorted best first, given the rank of
 * item i-1 and whether their scores are equal: equal scores share the best
 * rank of their group (1, 1, 3), so row order never decides between
 * equally good notes; the other channels' evidence does. */
static int shared_rank(size_t i, int prev_rank, int equal_to_prev)
{
    return i > 0 && equal_to_prev ? prev_rank : (int)i + 1;
}

/* ---- filters --------------------------------------------------------- */

/* SQL conditions on `d` (docs) for the user's filters, with their values in
 * bind order. */
typedef struct filter {
    tbuf sql;
    const char **binds;
    size_t n_binds, cap_binds;
    char **owned;
    size_t n_owned;
} filter;

static void filter_bind(filter *f, const char *value)
{
    xgrow(&f->binds, &f->cap_binds, f->n_binds + 1, sizeof *f->binds);
    f->binds[f->n_binds++] = value;
}

static const char *filter_own(filter *f, char *value)
{
    f->owned = xrealloc(f->owned, (f->n_owned + 1) * sizeof *f->owned);
    f->owned[f->n_owned++] = value;
    return value;
}

/* --folder F: notes under F inside their collection, or, as results print
 * their paths COLLECTION/PATH, under the rest of F in the collection F
 * starts with ("help/en": folder en of collection help; "help": all of it). */
static void folder_filter(filter *f, const char *start, size_t len)
{
    tbuf prefix = {0};
    tbuf_append(&prefix, start, len);
    tbuf_putc(&prefix, '/');
    /* substr() of a BLOB counts bytes (of TEXT, characters). */
    tbuf_printf(&f->sql, " AND (substr(CAST(d.path AS BLOB), 1, %zu) = CAST(? AS BLOB)",
                prefix.len);
    filter_bind(f, filter_own(f, tbuf_detach(&prefix)));
    const char *slash = memchr(start, '/', len);
    size_t coll_len = slash ? (size_t)(slash - start) : len;
    tbuf_puts(&f->sql, " OR (d.collection_id IN (SELECT id FROM collections WHERE name = ?)");
    filter_bind(f, filter_own(f, xstrndup(start, coll_len)));
    if (slash) {
        tbuf rest = {0};
        tbuf_append(&rest, slash + 1, len - coll_len - 1);
        tbuf_putc(&rest, '/');
        tbuf_printf(&f->sql, " AND substr(CAST(d.path AS BLOB), 1, %zu) = CAST(? AS BLOB)",
                    rest.len);
        filter_bind(f, filter_own(f, tbuf_detach(&rest)));
    }
    tbuf_puts(&f->sql, "))");
}

static void filter_build(filter *f, const search_opts *o)
{
    if (o->n_collections) {
        tbuf_puts(&f->sql, " AND d.collection_id IN (SELECT id FROM collections WHERE name IN (");
        for (size_t i = 0; i < o->n_collections; i++) {
            tbuf_puts(&f->sql, i ? ",?" : "?");
            filter_bind(f, o->collections[i]);
        }
        tbuf_puts(&f->sql, "))");
    }
    if (o->folder && *o->folder) {
        size_t len = strlen(o->folder);
        while (len > 0 && o->folder[len - 1] == '/')
            len--;
        const char *start = o->folder;
        while (*start == '/' && len > 0)
            start++, len--;
        if (len > 0) {
            folder_filter(f, start, len);
        }
    }
    if (o->n_langs) {
        tbuf codes = {0};
        for (size_t i = 0; i < o->n_langs; i++)
            tbuf_printf(&codes, "%s%s", i ? " " : "", o->langs[i]);
        tbuf_puts(&f->sql, " AND trove_lang_in(d.lang, d.path, ?)");
        filter_bind(f, filter_own(f, tbuf_detach(&codes)));
    }
    if (o->path_prefix && *o->path_prefix) {
        tbuf_printf(&f->sql, " AND substr(CAST(d.path AS BLOB), 1, %zu) = CAST(? AS BLOB)",
                    strlen(o->path_prefix));
        filter_bind(f, o->path_prefix);
    }
    if (o->n_doc_refs) {
        /* "COLLECTION/PATH": a collection name never holds '/', so the
         * first one splits it. */
        tbuf_puts(&f->sql, " AND d.id IN (SELECT rd.id FROM docs rd JOIN collections rc"
                           " ON rc.id = rd.collection_id WHERE 0");
        for (size_t i = 0; i < o->n_doc_refs; i++) {
            const char *ref = o->doc_refs[i], *slash = strchr(ref, '/');
            if (!slash)
                continue;
            tbuf_puts(&f->sql, " OR (rc.name = ? AND rd.path = ?)");
            filter_bind(f, filter_own(f, xstrndup(ref, (size_t)(slash - ref))));
            filter_bind(f, slash + 1);
        }
        tbuf_puts(&f->sql, ")");
    }
    if (o->heading_contains && *o->heading_contains) {
        tbuf_puts(&f->sql, " AND EXISTS (SELECT 1 FROM chunks hc WHERE hc.doc_id = d.id AND"
                           " instr(lower(hc.heading), lower(?)) > 0)");
        filter_bind(f, o->heading_contains);
    }
    for (size_t i = 0; i < o->n_tags; i++) {
        const char *t = o->tags[i];
        while (*t == '#')
            t++;
        char *tag = str_fold(t);
        filter_own(f, tag);
        tbuf tagprefix = {0};
        tbuf_printf(&tagprefix, "%s/", tag);
        tbuf_printf(&f->sql, " AND EXISTS (SELECT 1 FROM tags t WHERE t.doc_id = d.id AND"
                             " (t.tag = ? OR substr(t.tag, 1, %zu) = ?))", tagprefix.len);
        filter_bind(f, tag);
        filter_bind(f, filter_own(f, tbuf_detach(&tagprefix)));
    }
}

static void filter_free(filter *f)
{
    tbuf_free(&f->sql);
    free(f->binds);
    for (size_t i = 0; i < f->n_owned; i++)
        free(f->owned[i]);
    free(f->owned);
}

static void bind_filters(sqlite3_stmt *s, int first, const filter *f)
{
    for (size_t i = 0; i < f->n_binds; i++)
        sqlite3_bind_text(s, first + (int)i, f->binds[i], -1, SQLITE_STATIC);
}

/* Statements come from the store's cache (compiled once per connection)
 * and go back with store_stmt_put(), never sqlite3_finalize(). */
static trove_err prepare(store *st, const char *sql, sqlite3_stmt **s)
{
    if (!(*s = store_stmt_get(st, sql)))
        return store_fail(st, "preparing search");
    return TROVE_OK;
}

/* Every step goes through here (store_step): 1 a row, 0 no more rows, -1
 * an error, recorded in *rc. A failed step is never "no more rows": a busy
 * or damaged index is an error, not fewer results. */
static int step_row(store *st, sqlite3_stmt *s, const char *what, trove_err *rc)
{
    return store_step(st, s, what, rc);
}

/* ---- channel: BM25 over chunks ---------------------------------------- */

typedef struct scored {
    int64_t chunk_id;   /* or doc id, for the title channel */
    double score;
} scored;

/* "a ranks below b": lower score, or equal score and later chunk. */
static int scored_below(const scored *a, const scored *b)
{
    return a->score < b->score || (a->score == b->score && a->chunk_id > b->chunk_id);
}

static void heap_sift_down(scored *h, size_t n, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < n && scored_below(&h[l], &h[m]))
            m = l;
        if (r < n && scored_below(&h[r], &h[m]))
            m = r;
        if (m == i)
            return;
        scored t = h[i];
        h[i] = h[m];
        h[m] = t;
        i = m;
    }
}

/* Keep the best `cap` chunks in a min-heap (cap 0: keep all). */
typedef struct topk {
    scored *h;
    size_t n, cap, alloc;
} topk;

static void topk_push(topk *t, int64_t chunk_id, double score)
{
    scored x = {chunk_id, score};
    if (t->cap && t->n == t->cap) {
        if (!scored_below(&t->h[0], &x))
            return;
        t->h[0] = x;
        heap_sift_down(t->h, t->n, 0);
        return;
    }
    xgrow(&t->h, &t->alloc, t->n + 1, sizeof *t->h);
    size_t i = t->n++;
    t->h[i] = x;
    while (i > 0) {   /* sift up */
        size_t p = (i - 1) / 2;
        if (!scored_below(&t->h[i], &t->h[p]))
            break;
        scored tmp = t->h[i];
        t->h[i] = t->h[p];
        t->h[p] = tmp;
        i = p;
    }
}

static int cmp_scored_desc(const void *a, const void *b)
{
    const scored *x = a, *y = b;
    return scored_below(x, y) ? 1 : scored_below(y, x) ? -1 : 0;
}

/* Run a "SELECT id, score ... WHERE fts MATCH ?1" and keep the best rows in
 * C: cheaper than FTS5's ORDER BY rank, which sorts every match. Without
 * filters the FTS table is queried alone (`plain`), so no row of a common
 * word pays for a join; with filters `joined` is completed by them. */
static trove_err keep_best(store *st, const char *plain, const char *joined, const char *fts,
                           const filter *f, topk *top)
{
    tbuf sql = {0};
    if (f->sql.len == 0)
        tbuf_puts(&sql, plain);
    else
        tbuf_printf(&sql, "%s%s", joined, tbuf_cstr(&f->sql));
    sqlite3_stmt *s;
    trove_err rc = prepare(st, sql.data, &s);
    tbuf_free(&sql);
    if (rc)
        return rc;
    sqlite3_bind_text(s, 1, fts, -1, SQLITE_STATIC);
    bind_filters(s, 2, f);
    while (step_row(st, s, "keyword search", &rc) > 0)
        topk_push(top, sqlite3_column_int64(s, 0), sqlite3_column_double(s, 1));
    store_stmt_put(st, s);
    if (rc == TROVE_OK && top->n > 1)
        qsort(top->h, top->n, sizeof *top->h, cmp_scored_desc);
    return rc;
}

static trove_err channel_bm25(store *st, const char *fts, const filter *f, size_t depth,
                              cand_set *cs)
{
    /* Several chunks of one note may be among the best, hence the margin. */
    topk top = {.cap = depth * 4};
    char plain[160], joined[256];
    snprintf(plain, sizeof plain, "SELECT rowid, -bm25(chunks_fts, %g, %g) FROM chunks_fts"
             " WHERE chunks_fts MATCH ?1", BM25_HEADING_WEIGHT, BM25_BODY_WEIGHT);
    snprintf(joined, sizeof joined, "SELECT c.id, -bm25(chunks_fts, %g, %g) FROM chunks_fts"
             " JOIN chunks c ON c.id = chunks_fts.rowid JOIN docs d ON d.id = c.doc_id"
             " WHERE chunks_fts MATCH ?1", BM25_HEADING_WEIGHT, BM25_BODY_WEIGHT);
    trove_err rc = keep_best(st, plain, joined, fts, f, &top);
    sqlite3_stmt *s = NULL;
    if (rc == TROVE_OK && top.n)
        rc = prepare(st, "SELECT doc_id FROM chunks WHERE id = ?", &s);
    /* Notes are ranked by rank_bm25() once their link priors are known. */
    size_t notes = 0;
    for (size_t i = 0; rc == TROVE_OK && i < top.n; i++) {
        sqlite3_reset(s);
        sqlite3_bind_int64(s, 1, top.h[i].chunk_id);
        if (step_row(st, s, "keyword search", &rc) <= 0)
            continue;
        cand *c = cand_get(cs, sqlite3_column_int64(s, 0), 1);
        if (c->has_bm25)
            continue;   /* a better chunk of this note came first */
        c->has_bm25 = 1;
        c->ch[SEARCH_CH_BM25].score = top.h[i].score;
        c->chunk_id = top.h[i].chunk_id;
        if (depth && ++notes >= depth)
            break;
    }
    store_stmt_put(st, s);
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
#define TROVE_STR_(x) #x
#define TROVE_STR(x) TROVE_STR_(x)
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

/* Inverse document frequency of a query word over the chunks, as FTS5's
 * bm25() computes it. */
static double word_idf(store *st, sqlite3_stmt *df_stmt, double n_chunks, const char *w,
                       trove_err *rc)
{
    tbuf phrase = {0};
    tbuf_printf(&phrase, "\"%s\"", w);   /* a token: no quote inside */
    double df = 0;
    sqlite3_reset(df_stmt);
    sqlite3_bind_text(df_stmt, 1, tbuf_cstr(&phrase), -1, SQLITE_TRANSIENT);
    if (step_row(st, df_stmt, "keyword search", rc) > 0)
        df = sqlite3_column_double(df_stmt, 0);
    tbuf_free(&phrase);
    double idf = log((n_chunks - df + 0.5) / (df + 0.5));
    return idf > 1e-6 ? idf : 1e-6;
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
    sqlite3_stmt *df = NULL, *n = NULL;
    trove_err rc = prepare(st, "SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH ?", &df);
    if (rc == TROVE_OK)
        rc = prepare(st, "SELECT count(*) FROM chunks", &n);
    double n_chunks = 0;
    if (rc == TROVE_OK && step_row(st, n, "keyword search", &rc) > 0)
        n_chunks = sqlite3_column_double(n, 0);
    gq->word_w = xcalloc(gq->n_words ? gq->n_words : 1, sizeof *gq->word_w);
    for (size_t i = 0; rc == TROVE_OK && i < gq->n_words; i++)
        if (!query_zh_function_word(gq->words[i], strlen(gq->words[i])))
            gq->word_w[i] = word_idf(st, df, n_chunks, gq->words[i], &rc);
    for (size_t i = 0; i < gq->n_uses; i++) {
        const gram_use *u = &gq->uses[i];
        if (u->wa < gq->n_words && u->wb < gq->n_words)
            gq->items[u->gram].w = fmax(gq->items[u->gram].w,
                                        fmax(gq->word_w[u->wa], gq->word_w[u->wb]));
    }
    store_stmt_put(st, df);
    store_stmt_put(st, n);
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
 * anchoring chunk first, then the others in order, at most GRAM_CHUNKS),
 * so evidence spread over two chunks of a short note counts. A heading
 * counts twice the body, as in the word channel, once per run of chunks
 * that share it. */
#define GRAM_CHUNKS 8
static trove_err gram_scores(store *st, gram_query *gq, cand **order, size_t k, double *sb)
{
    sqlite3_stmt *s;
    trove_err rc = prepare(st,
        "SELECT heading, body FROM chunks_fts WHERE rowid IN"
        " (SELECT id FROM chunks WHERE doc_id = ?1 ORDER BY id = ?2 DESC, seq LIMIT "
        TROVE_STR(GRAM_CHUNKS) ")", &s);
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

/* ---- channel: title / alias / file name ------------------------------- */

typedef struct token_set {
    char **items;
    size_t n, cap;
    int skip_function_words;   /* leave out Chinese function words */
    store *st;                 /* the query's set: where its notes are */
    trove_err rc;              /* ... and the first error reading them */
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

/* Whether the text of note doc_id (its first GRAM_CHUNKS chunks) holds
 * one of the query tokens the name left out. */
typedef struct rest_ctx {
    const token_set *q;
    const unsigned char *is_hit;
    int found;
} rest_ctx;

static int rest_token(void *ctx, const char *t, size_t len, size_t start, size_t end)
{
    (void)start, (void)end;
    rest_ctx *r = ctx;
    for (size_t i = 0; i < r->q->n; i++)
        if (!r->is_hit[i] && strlen(r->q->items[i]) == len && memcmp(r->q->items[i], t, len) == 0)
            return r->found = 1;
    return 0;
}

static int note_has_rest(token_set *q, const unsigned char *is_hit, int64_t doc_id)
{
    sqlite3_stmt *s;
    if (q->rc || (q->rc = prepare(q->st, "SELECT body FROM chunks_fts WHERE rowid IN (SELECT id"
                                  " FROM chunks WHERE doc_id = ? ORDER BY seq LIMIT "
                                  TROVE_STR(GRAM_CHUNKS) ")", &s)))
        return 0;
    /* A query whose other words are not CJK need not segment the note's
     * CJK text (nor load a segmenter for it). */
    tok_opts opts = {.stem = 1, .query = 1, .skip_cjk = 1};
    for (size_t i = 0; i < q->n; i++)
        if (!is_hit[i] && tok_has_cjk(q->items[i], strlen(q->items[i])))
            opts.skip_cjk = 0;
    rest_ctx r = {q, is_hit, 0};
    sqlite3_bind_int64(s, 1, doc_id);
    while (!r.found && step_row(q->st, s, "title search", &q->rc) > 0) {
        const char *body = (const char *)sqlite3_column_text(s, 0);
        if (body)
            tok_run(&opts, body, (size_t)sqlite3_column_bytes(s, 0), &r, rest_token);
    }
    store_stmt_put(q->st, s);
    return r.found;
}

/* How well one name (title, alias or file name) matches the query, in
 * [0, 1]: the share of query terms the name contains, squared so that a
 * name sharing a word or two with a long question counts little, times a
 * factor for how little else the name holds. An exact (folded) match is 1. */
static double name_score(token_set *q, const char *name, size_t len, const char *q_folded,
                         int64_t doc_id)
{
    token_set nt = {0};
    tokenize_into(&nt, name, len);
    size_t hit = 0;
    unsigned char *is_hit = xcalloc(q->n ? q->n : 1, 1);
    for (size_t i = 0; i < q->n; i++)
        if (token_set_has(&nt, q->items[i], strlen(q->items[i])))
            hit++, is_hit[i] = 1;
    double score = 0;
    if (hit && nt.n) {
        double coverage = (double)hit / (double)q->n;
        double precision = (double)hit / (double)nt.n;
        score = coverage * coverage * (0.5 + 0.5 * precision);
        /* A whole name inside the query ("tar" for "extract tar archive")
         * is good evidence even when it covers a third of the query only,
         * when the note also speaks of the rest of the query (tar.md of
         * extracting archives). A note named after one thing a question
         * mentions, that holds none of its other words, is about that
         * thing but not about the question (元世祖 for "in which year did
         * 元世祖 campaign against 占城"). */
        if (precision == 1.0 && coverage >= TITLE_WHOLE_NAME_MIN_COVERAGE - 1e-9 &&
            score < 0.5 * coverage + 0.25 && note_has_rest(q, is_hit, doc_id))
            score = 0.5 * coverage + 0.25;
    }
    free(is_hit);
    token_set_free(&nt);
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
    for (int col = 1; col <= 3; col++) {
        const char *text = (const char *)sqlite3_column_text(s, col);
        if (!text)
            continue;
        /* aliases are stored one per line */
        for (const char *line = text; *line;) {
            const char *nl = strchr(line, '\n');
            size_t len = nl ? (size_t)(nl - line) : strlen(line);
            double sc = name_score(q, line, len, q_folded, sqlite3_column_int64(s, 0));
            if (sc > best)
                best = sc;
            if (!nl)
                break;
            line = nl + 1;
        }
    }
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

static trove_err channel_title(store *st, const query_parsed *q, const filter *f, size_t depth,
                               cand_set *cs)
{
    /* Coverage counts the words that carry meaning: stopwords and Chinese
     * function words only when the query has nothing else ("The The"). */
    token_set qt = {.st = st};
    for (int pass = 0; pass < 2 && qt.n == 0; pass++) {
        qt.skip_function_words = pass == 0;
        for (size_t i = 0; i < q->n_terms; i++)
            if (!q->terms[i].negated && (pass || !q->terms[i].stopword))
                tokenize_into(&qt, q->terms[i].text, strlen(q->terms[i].text));
    }
    qt.skip_function_words = 0;
    if (qt.n == 0)
        return TROVE_OK;
    /* The best names by BM25 are re-scored by query coverage; an exact or
     * near-exact name is always among them. */
    topk top = {.cap = TITLE_CANDIDATES};
    trove_err rc = keep_best(st,
        "SELECT rowid, -bm25(titles_fts, 3.0, 2.0, 1.0) FROM titles_fts WHERE titles_fts MATCH ?1",
        "SELECT t.rowid, -bm25(titles_fts, 3.0, 2.0, 1.0) FROM titles_fts t"
        " JOIN docs d ON d.id = t.rowid WHERE titles_fts MATCH ?1", q->fts, f, &top);
    sqlite3_stmt *s = NULL;
    if (rc == TROVE_OK && top.n)
        rc = prepare(st, "SELECT rowid, title, aliases, filename FROM titles_fts WHERE rowid = ?", &s);
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
        cand *c = cand_get(cs, hits[i].doc_id, 1);
        c->ch[SEARCH_CH_TITLE].rank = rank;
        c->ch[SEARCH_CH_TITLE].score = hits[i].score;
    }
    free(hits);
    free(top.h);
    free(q_folded);
    token_set_free(&qt);
    return rc;
}

/* ---- link-graph prior and bm25 ranks --------------------------------- */

/* In-degree and language of every candidate, and its link prior. The prior
 * 1 + g * log10(1 + in-degree) multiplies the bm25 score: one inbound link
 * is worth 3% at g = 0.1, ten 10%, a hundred 20%, so links reorder only
 * notes whose keyword evidence is that close. (Ranked as an RRF list of its
 * own, in-degree 1 outranked 0 and lifted a note past better matches.) */
static trove_err load_doc_info(store *st, cand_set *cs, double graph_weight)
{
    sqlite3_stmt *s;
    trove_err rc = prepare(st, "SELECT in_degree, lang FROM docs WHERE id = ?", &s);
    if (rc)
        return rc;
    for (size_t i = 0; rc == TROVE_OK && i < cs->n; i++) {
        cand *c = &cs->items[i];
        sqlite3_reset(s);
        sqlite3_bind_int64(s, 1, c->doc_id);
        if (step_row(st, s, "reading link counts", &rc) > 0) {
            c->in_degree = sqlite3_column_int(s, 0);
            c->lang = lang_from_code((const char *)sqlite3_column_text(s, 1));
        }
        c->prior = 1.0 + (graph_weight > 0 ? graph_weight * log10(1.0 + c->in_degree) : 0.0);
    }
    store_stmt_put(st, s);
    return rc;
}

static double bm25_key(const cand *c)
{
    return c->ch[SEARCH_CH_BM25].score * c->prior;
}

static int cmp_bm25_key(const void *a, const void *b)
{
    const cand *x = *(const cand *const *)a, *y = *(const cand *const *)b;
    double kx = bm25_key(x), ky = bm25_key(y);
    if (kx != ky)
        return kx < ky ? 1 : -1;
    return x->doc_id < y->doc_id ? -1 : x->doc_id > y->doc_id;
}

static void rank_bm25(cand_set *cs)
{
    cand **order = xmalloc((cs->n ? cs->n : 1) * sizeof *order);
    size_t n = 0;
    for (size_t i = 0; i < cs->n; i++)
        if (cs->items[i].has_bm25)
            order[n++] = &cs->items[i];
    if (n > 1)
        qsort(order, n, sizeof *order, cmp_bm25_key);
    int rank = 0;
    for (size_t i = 0; i < n; i++) {
        rank = shared_rank(i, rank, i > 0 && same_score(bm25_key(order[i]), bm25_key(order[i - 1])));
        order[i]->ch[SEARCH_CH_BM25].rank = rank;
    }
    free(order);
}

/* ---- channel: vectors ------------------------------------------------- */

/* Bitmap of the note ids the filters allow (NULL when there are none). */
static trove_err allowed_docs(store *st, const filter *f, uint8_t **bits, int64_t *n_bits)
{
    *bits = NULL;
    *n_bits = 0;
    if (f->sql.len == 0)
        return TROVE_OK;
    sqlite3_stmt *s;
    trove_err rc = prepare(st, "SELECT coalesce(max(id), 0) FROM docs", &s);
    if (rc)
        return rc;
    int64_t max = step_row(st, s, "filtering notes", &rc) > 0 ? sqlite3_column_int64(s, 0) : 0;
    store_stmt_put(st, s);
    if (rc)
        return rc;
    *n_bits = max + 1;
    *bits = xcalloc((size_t)(*n_bits + 7) / 8, 1);
    tbuf sql = {0};
    tbuf_printf(&sql, "SELECT d.id FROM docs d WHERE 1%s", tbuf_cstr(&f->sql));
    rc = prepare(st, sql.data, &s);
    tbuf_free(&sql);
    if (rc)
        return rc;
    bind_filters(s, 1, f);
    while (step_row(st, s, "filtering notes", &rc) > 0) {
        int64_t id = sqlite3_column_int64(s, 0);
        if (id >= 0 && id < *n_bits)
            (*bits)[id >> 3] |= (uint8_t)(1u << (id & 7));
    }
    store_stmt_put(st, s);
    return rc;
}

/* Collections in scope without any vector of the model: the searched ones,
 * else every indexed one. */
static trove_err find_unembedded(store *st, const search_opts *o, int64_t model_id,
                                 search_results *out)
{
    const char **names = NULL;
    size_t n = 0;
    char **owned = NULL;
    sqlite3_stmt *s = NULL;
    trove_err rc = TROVE_OK;
    if (o->n_collections) {
        names = (const char **)o->collections;
        n = o->n_collections;
    } else {
        if ((rc = prepare(st, "SELECT name FROM collections ORDER BY name", &s)))
            return rc;
        size_t cap = 0;
        while (step_row(st, s, "listing collections", &rc) > 0) {
            xgrow(&owned, &cap, n + 1, sizeof *owned);
            owned[n++] = xstrdup((const char *)sqlite3_column_text(s, 0));
        }
        store_stmt_put(st, s);
        names = (const char **)owned;
    }
    for (size_t i = 0; rc == TROVE_OK && i < n; i++) {
        int has;
        rc = store_vec_collection_has(st, model_id, names[i], &has);
        if (rc == TROVE_OK && !has) {
            out->vec_missing = xrealloc(out->vec_missing, (out->n_vec_missing + 1) * sizeof(char *));
            out->vec_missing[out->n_vec_missing++] = xstrdup(names[i]);
        }
    }
    for (size_t i = 0; owned && i < n; i++)
        free(owned[i]);
    free(owned);
    return rc;
}

/* The query's vector, computed before the search's read transaction opens:
 * the model's lock may be waited for (another search, the watcher's
 * embedding), and a read transaction held meanwhile would pin the WAL.
 * NULL (and TROVE_OK) when the index holds no vector of the model: then
 * nothing is embedded. */
static trove_err embed_query(store *st, const search_opts *o, float **qf)
{
    *qf = NULL;
    char *fp = vembed_fingerprint(o->model);
    int64_t model_id;
    int dim;
    trove_err rc = store_vec_model_find(st, fp, &model_id, &dim);
    free(fp);
    if (rc || !model_id || dim != embed_dim(o->model))
        return rc;
    *qf = xmalloc((size_t)dim * sizeof **qf);
    const char *text = o->query ? o->query : "";
    if (o->model_lock)
        pthread_mutex_lock(o->model_lock);
    rc = embed_texts(o->model, &text, 1, EMBED_QUERY, *qf);
    if (o->model_lock)
        pthread_mutex_unlock(o->model_lock);
    if (rc) {
        free(*qf);
        *qf = NULL;
    }
    return rc;
}

/* Whether a query vector is zero: a static model knew none of its words. */
static int vec_blank(const float *x, int dim)
{
    double norm = 0;
    for (int i = 0; i < dim; i++)
        norm += (double)x[i] * x[i];
    return norm < 1e-12;
}

/* The lowest similarity the scan keeps: strictly above the noise floor
 * (what unrelated text reaches), and for vsearch at least --min-score. */
static float vec_min_score(const search_opts *o, const search_results *out)
{
    float min = o->vector_only ? (float)o->min_score : -INFINITY;
    if (out->vec_floor_known)
        min = fmaxf(min, nextafterf((float)out->vec_floor, INFINITY));
    return min;
}

/* qf: the query's vector (embed_query), NULL when it has none. */
static trove_err channel_vector(store *st, const search_opts *o, const float *qf, const filter *f,
                                size_t depth, cand_set *cs, search_results *out)
{
    char *fp = vembed_fingerprint(o->model);
    int64_t model_id;
    int dim;
    trove_err rc = store_vec_model_find(st, fp, &model_id, &dim);
    free(fp);
    int64_t *segs = NULL;
    size_t n_segs = 0;
    if (rc == TROVE_OK && model_id)
        rc = store_vec_segments(st, model_id, &segs, &n_segs);
    if (rc || n_segs == 0 || dim != embed_dim(o->model) || !qf) {
        free(segs);
        out->vec_state = SEARCH_VEC_NONE;
        return rc;
    }
    out->vec_state = SEARCH_VEC_USED;
    int8_t *qq = xmalloc((size_t)dim);
    float qs = 0;
    vec_quantize(qf, dim, qq, &qs);
    rc = store_vec_floor_get(st, model_id, &out->vec_floor, &(int64_t){0},
                             &out->vec_floor_known);
    /* A zero vector is as close to every note as to none: ranking by it
     * ranked the index in id order (every cosine 0). */
    if (rc == TROVE_OK && vec_blank(qf, dim)) {
        out->vec_state = SEARCH_VEC_BLANK;
        free(qq);
        free(segs);
        return find_unembedded(st, o, model_id, out);
    }
    uint8_t *allow = NULL;
    int64_t n_allow = 0;
    if (rc == TROVE_OK)
        rc = allowed_docs(st, f, &allow, &n_allow);
    vec_filter vf = {allow, n_allow, vec_min_score(o, out)};
    vec_topk *t = rc == TROVE_OK ? vec_topk_new(depth, dim, qq, qs, &vf, o->vec_threads) : NULL;
    if (rc == TROVE_OK && o->vec_cache)
        rc = vcache_scan(o->vec_cache, st, model_id, dim, t);
    for (size_t i = 0; rc == TROVE_OK && !o->vec_cache && i < n_segs; i++) {
        store_vec_seg seg;
        rc = store_vec_segment_load(st, segs[i], dim, &seg);
        if (rc == TROVE_OK)
            vec_topk_scan(t, &seg.blk);
        store_vec_segment_free(&seg);
    }
    if (rc == TROVE_OK) {
        size_t n;
        const vec_hit *h = vec_topk_results(t, &n);
        for (size_t i = 0; i < n; i++) {
            cand *c = cand_get(cs, h[i].doc_id, 1);
            c->ch[SEARCH_CH_VECTOR].rank = (int)i + 1;
            c->ch[SEARCH_CH_VECTOR].score = h[i].score;
            c->vec_chunk_id = h[i].chunk_id;
        }
    }
    if (rc == TROVE_OK)
        rc = find_unembedded(st, o, model_id, out);
    vec_topk_free(t);
    free(allow);
    free(qq);
    free(segs);
    return rc;
}

/* ---- fusion ----------------------------------------------------------- */

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

static int cmp_fused(const void *a, const void *b)
{
    const cand *x = a, *y = b;
    if (x->fused != y->fused)
        return x->fused < y->fused ? 1 : -1;
    int rx = x->ch[SEARCH_CH_BM25].rank ? x->ch[SEARCH_CH_BM25].rank : 1 << 30;
    int ry = y->ch[SEARCH_CH_BM25].rank ? y->ch[SEARCH_CH_BM25].rank : 1 << 30;
    if (rx != ry)
        return rx < ry ? -1 : 1;
    return x->doc_id < y->doc_id ? -1 : x->doc_id > y->doc_id;
}

static int cmp_fused_only(const void *a, const void *b)
{
    const cand *x = *(const cand *const *)a, *y = *(const cand *const *)b;
    if (x->fused != y->fused)
        return x->fused < y->fused ? 1 : -1;
    return x->doc_id < y->doc_id ? -1 : x->doc_id > y->doc_id;
}

/* The query's language (search/lang_pref.h), from the query and the
 * candidates best first. */
static int query_language(store *st, const cand_set *cs, const search_opts *o)
{
    const cand **order = xmalloc((cs->n ? cs->n : 1) * sizeof *order);
    for (size_t i = 0; i < cs->n; i++)
        order[i] = &cs->items[i];
    if (cs->n > 1)
        qsort(order, cs->n, sizeof *order, cmp_fused_only);
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

static void fuse(store *st, cand_set *cs, const search_opts *o, int vector_ran, char lang_out[8],
                 search_fusion *info)
{
    fusion_cand *fc = xcalloc(cs->n ? cs->n : 1, sizeof *fc);
    for (size_t i = 0; i < cs->n; i++) {
        cand *c = &cs->items[i];
        /* Anchor: the best keyword chunk, else the best vector chunk. */
        if (!c->chunk_id)
            c->chunk_id = c->vec_chunk_id;
        memcpy(fc[i].ch, c->ch, sizeof fc[i].ch);
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
    if (cs->n > 1)
        qsort(cs->items, cs->n, sizeof *cs->items, cmp_fused);
}

/* ---- translations as one result ---------------------------------------- */

/* Translations of one note become one result (search/group.h): the copy
 * in the reader's language, in the place of the group's best copy. */
static trove_err collapse_translations(store *st, cand_set *cs, const search_opts *o,
                                       const filter *f, int qlang)
{
    group_in *in = xmalloc((cs->n ? cs->n : 1) * sizeof *in);
    for (size_t i = 0; i < cs->n; i++)
        in[i] = (group_in){cs->items[i].doc_id, cs->items[i].lang};
    group_prefs p = {qlang, o->prefer_langs, o->n_prefer_langs, tbuf_cstr(&f->sql), f->binds,
                     f->n_binds};
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
        }
        kept[i].fused = cs->items[g[i].from].fused;
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

static void snip_terms_build(snip_terms *t, const query_parsed *q)
{
    static const tok_opts opts = {.stem = 1};
    for (int pass = 0; pass < 2 && t->n == 0; pass++) {
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
    if ((*rc = prepare(st, "SELECT body FROM chunks_fts WHERE rowid = ?", &s)) == TROVE_OK) {
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

static trove_err fill_result(store *st, const config *cfg, const cand *c, const search_opts *o,
                             const snip_terms *terms, search_result *r)
{
    r->also_in = c->alts;   /* taken first: the result frees them on any return */
    r->n_also_in = c->n_alts;
    sqlite3_stmt *s;
    /* The anchoring chunk: the best BM25 chunk, else the note's first. */
    trove_err rc = prepare(st,
        "SELECT d.docid, col.name, col.root, d.path, d.title, d.in_degree,"
        "       c.id, c.heading, c.start_byte, c.end_byte, c.line_start, c.line_end, d.lang"
        " FROM docs d JOIN collections col ON col.id = d.collection_id"
        " LEFT JOIN chunks c ON c.id = (CASE WHEN ?2 THEN ?2 ELSE"
        "   (SELECT id FROM chunks WHERE doc_id = d.id ORDER BY seq LIMIT 1) END)"
        " WHERE d.id = ?1", &s);
    if (rc)
        return rc;
    sqlite3_bind_int64(s, 1, c->doc_id);
    sqlite3_bind_int64(s, 2, c->chunk_id);
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
    return rc ? rc : load_tags(st, r);
}

trove_err search_run(store *st, const config *cfg, const search_opts *o, search_results *out)
{
    memset(out, 0, sizeof *out);
    query_parsed q;
    query_parse(o->query ? o->query : "", &q);
    if (q.fts)
        out->fts = xstrdup(q.fts);
    filter f = {0};
    filter_build(&f, o);
    cand_set cs = {0};
    int vector = o->model && (o->vector_only || o->weights[SEARCH_CH_VECTOR] > 0);
    float *qvec = NULL;
    trove_err rc = vector ? embed_query(st, o, &qvec) : TROVE_OK;
    /* One read transaction for every statement below: otherwise SQLite takes
     * and drops its locks and re-checks the WAL files per statement. */
    if (rc == TROVE_OK)
        rc = store_read_begin(st);
    /* Past ~100 ranks a channel's reciprocal-rank share is negligible. */
    size_t depth = o->limit ? (o->limit * 3 > 100 ? o->limit * 3 : 100) : 0;
    if (rc == TROVE_OK && depth && !o->each_translation)
        depth *= group_depth_factor(st);   /* copies of one note collapse into one */
    if (rc == TROVE_OK && vector)
        rc = channel_vector(st, o, qvec, &f, depth, &cs, out);
    if (rc == TROVE_OK && q.fts && !o->vector_only) {
        if (o->weights[SEARCH_CH_BM25] > 0 || o->weights[SEARCH_CH_TITLE] <= 0)
            rc = channel_bm25(st, q.fts, &f, depth, &cs);
        if (rc == TROVE_OK && o->weights[SEARCH_CH_BM25] > 0)
            rc = rescore_bigrams(st, &q, &cs);
        if (rc == TROVE_OK && o->weights[SEARCH_CH_TITLE] > 0)
            rc = channel_title(st, &q, &f, depth, &cs);
        if (rc == TROVE_OK)
            rc = load_doc_info(st, &cs, o->graph_weight);
        if (rc == TROVE_OK)
            rank_bm25(&cs);
    }
    int vector_ran = 0;
    if (rc == TROVE_OK) {
        /* No note above the floor: the vector has nothing to say, and the
         * keyword channels are fused as without a model. */
        vector_ran = out->vec_state == SEARCH_VEC_USED && vector_hits(&cs);
        search_opts fo = *o;
        out->vec_strength = vector_ran ? vector_strength(&cs, out) : 0;
        if (vector_ran)
            fo.weights[SEARCH_CH_VECTOR] *= out->vec_strength;
        fuse(st, &cs, &fo, vector_ran, out->lang, &out->fusion);
        if (!o->each_translation && group_possible(st))
            rc = collapse_translations(st, &cs, o, &f, lang_from_code(out->lang));
    }
    if (rc == TROVE_OK) {
        size_t keep = 0;
        while (keep < cs.n && (!o->limit || keep < o->limit) && cs.items[keep].fused >= o->min_score &&
               !(vector_ran && !o->vector_only && vector_only_noise(&cs.items[keep])))
            keep++;
        out->items = xcalloc(keep ? keep : 1, sizeof *out->items);
        snip_terms terms = {0};
        snip_terms_build(&terms, &q);
        for (size_t i = 0; i < keep && rc == TROVE_OK; i++) {
            /* counted even when it failed part way: freed with the rest */
            rc = fill_result(st, cfg, &cs.items[i], o, &terms, &out->items[i]);
            out->n++;
            cs.items[i].alts = NULL;   /* the result's now (fill_result takes them first) */
            cs.items[i].n_alts = 0;
        }
        snip_terms_free(&terms);
    }
    store_read_end(st);
    free(qvec);
    for (size_t i = 0; i < cs.n; i++)
        search_alts_free(cs.items[i].alts, cs.items[i].n_alts);
    free(cs.items);
    free(cs.slots);
    filter_free(&f);
    query_free(&q);
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

void search_results_free(search_results *r)
{
    for (size_t i = 0; i < r->n; i++) {
        search_result *x = &r->items[i];
        free(x->collection);
        free(x->root);
        free(x->path);
        free(x->title);
        for (size_t j = 0; j < x->n_heading_path; j++)
            free(x->heading_path[j]);
        free(x->heading_path);
        free(x->snippet);
        free(x->body);
        for (size_t j = 0; j < x->n_context; j++)
            free(x->context[j]);
        free(x->context);
        for (size_t j = 0; j < x->n_tags; j++)
            free(x->tags[j]);
        free(x->tags);
        search_alts_free(x->also_in, x->n_also_in);
    }
    free(r->items);
    free(r->fts);
    for (size_t i = 0; i < r->n_vec_missing; i++)
        free(r->vec_missing[i]);
    free(r->vec_missing);
    free(r->vec_error);
    memset(r, 0, sizeof *r);
}
