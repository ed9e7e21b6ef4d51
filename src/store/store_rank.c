#include "store/store_rank.h"

#include <math.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "store/store_int.h"
#include "store/store_lens.h"
#include "store/store_posts.h"
#include "text/query.h"
#include "text/tok.h"
#include "util/buf.h"
#include "util/err.h"
#include "util/mem.h"


/* The row's length in tokens: the note map's, else FTS5's. */
static int row_length(const Fts5ExtensionApi *api, Fts5Context *fts, store_rank *r,
                      double *d)
{
    int64_t len;
    if (r->nmap && r->rc == TROVE_OK &&
        store_nmap_chunk_len(r->nmap, api->xRowid(fts), &len, &r->rc) > 0) {
        *d = (double)len;
        return SQLITE_OK;
    }
    if (r->rc != TROVE_OK)
        return SQLITE_ERROR;
    if (r->lens)
        return store_lens_get(r->lens, api, fts, d);
    int n_tok = 0;
    int rc = api->xColumnSize(fts, -1, &n_tok);
    *d = (double)n_tok;
    return rc;
}

/* Phrase i's part of a row's score: fts5Bm25Function's term, the same
 * double operations in the same order (rank_fn and the phrase walk add
 * these up in phrase order, so their sums are the same bits). */
static double term_score(double idf, double freq, double d, double avgdl)
{
    const double k1 = STORE_RANK_K1, b = STORE_RANK_B;
    return idf * ((freq * (k1 + 1.0)) / (freq + k1 * (1 - b + b * d / avgdl)));
}

/* Phrase `phrase`'s weighted frequency in the cursor's row: its column's
 * weight per instance, small integers: exact in any order; *len_floor, a
 * floor for the row's length that its instances set: a column holding
 * an instance at offset o has more than o tokens (FTS5's offsets count
 * the tokens its sizes count), summed over the first PHRASE_FLOOR_COLS
 * columns. */
#define PHRASE_FLOOR_COLS 4
static int phrase_freq(const Fts5ExtensionApi *api, Fts5Context *fts, const store_rank *r,
                       int phrase, double *freq, double *len_floor)
{
    Fts5PhraseIter it;
    int col, off, rc, last[PHRASE_FLOOR_COLS] = {-1, -1, -1, -1};
    *freq = 0.0;
    for (rc = api->xPhraseFirst(fts, phrase, &it, &col, &off); rc == SQLITE_OK && col >= 0;
         api->xPhraseNext(fts, &it, &col, &off)) {
        *freq += col < 2 ? r->weight[col] : 1.0;
        if (col < PHRASE_FLOOR_COLS && off > last[col])
            last[col] = off;
    }
    *len_floor = 0.0;
    for (int c = 0; c < PHRASE_FLOOR_COLS; c++)
        *len_floor += last[c] + 1;
    return rc;
}

static int rank_phrases(const Fts5ExtensionApi *api, Fts5Context *fts, store_rank *r, int first,
                        int n, int score);

static void rank_fn(const Fts5ExtensionApi *api, Fts5Context *fts, sqlite3_context *ctx,
                    int n_val, sqlite3_value **val)
{
    (void)val;
    store *st = api->xUserData(fts);
    store_rank *r = n_val == 0 ? st->rank : NULL;
    if (!r) {
        sqlite3_result_error(ctx, "trove_rank: no rank state bound", -1);
        return;
    }
    int all = api->xPhraseCount(fts), rc = SQLITE_OK;
    int n = r->n_query > 0 && r->n_query <= all ? r->n_query : all, first = all - n;
    if (!r->have || r->n_phrase != n)
        rc = rank_phrases(api, fts, r, first, n, 0);
    double d = 0;
    if (rc == SQLITE_OK)
        rc = row_length(api, fts, r, &d);
    if (r->rc != TROVE_OK) {
        /* the note map's own error (its statement's), said by this one */
        sqlite3_result_error(ctx, trove_errmsg(), -1);
        return;
    }
    if (rc != SQLITE_OK) {
        sqlite3_result_error_code(ctx, rc);
        return;
    }
    /* fts5Bm25Function's sum, term for term; per phrase is as good as
     * xInst's order (phrase_freq). */
    double score = 0.0;
    for (int i = 0; i < r->n_phrase; i++) {
        double freq, len_floor;
        if ((rc = phrase_freq(api, fts, r, first + i, &freq, &len_floor)) != SQLITE_OK) {
            sqlite3_result_error_code(ctx, rc);
            return;
        }
        score += term_score(r->idf[i], freq, d, r->avgdl);
    }
    sqlite3_result_double(ctx, score);
}

/* SQLite's varint (FTS5's records), b[*i..n): 7 bits a byte, high bit set
 * but in the 9th, which gives 8; 0 where it is cut short. */
static int store_rank_varint(const unsigned char *b, size_t n, size_t *i, uint64_t *v)
{
    *v = 0;
    for (size_t k = 0; b && *i < n; k++) {
        unsigned char c = b[(*i)++];
        if (k == 8) {
            *v = (*v << 8) | c;
            return 1;
        }
        *v = (*v << 7) | (c & 0x7f);
        if (!(c & 0x80))
            return 1;
    }
    return 0;
}

/* ---- the rows of OR-ed phrases, from a walk of each phrase's rows ------- */

/* A row's score is a sum over the phrases it holds, and phrase i adds
 * less than its bound b_i = IDF_i x (k1 + 1) (store_rank_bound). With a
 * cap (r->top), every phrase's rows are first counted (the IDFs: a walk
 * that reads no position and no length), then the phrases are walked
 * again, rarest first (MaxScore): once `top` rows are known whose scores
 * so far reach t, a row first met in the phrases still to walk, whose
 * bounds sum below t, cannot be among the best `top` and is neither
 * scored nor kept, nor is a row kept so far whose score and the bounds
 * of the phrases left sum below t. A common word's rows are then only
 * stepped over. Exact: a row left out scores strictly below `top` rows
 * kept (a margin far above a sum's rounding), and a row kept gets its
 * terms added in phrase order at the end, as rank_fn adds them.
 *
 * Lengths are read late (a seek in titles_fts_docsize per row: most of
 * the title channel at 1M, docs/performance.md session 35): a row met
 * gets, while its length is unknown, a bound for each phrase's part from
 * its frequency and the floor its instances' offsets set to its length
 * (phrase_freq; a part falls as the length grows). After a phrase, the
 * rows whose bounds are highest get their lengths (walk_prune: at
 * most RANK_RESOLVE_PER_TOP x top of them), t comes from rows whose
 * lengths are known, and a row is left out when its bound plus the
 * phrases left is below t. After the last phrase, rows are resolved,
 * highest bound first, until the next one's bound is below t; the rest
 * are left out unread. The same rows among the best `top`, the same
 * bits. */
#define RANK_PRUNE_MARGIN 1e-9
/* The count first costs a walk of every phrase's rows more (+5-15% of a
 * cold keyword search's instructions on the tldr pages' 39k chunks); it
 * pays where common words hold hundreds of thousands of rows: a table of
 * at least this many rows (docs/performance.md, session 34). */
#define RANK_PRUNE_MIN_TABLE 200000
#define RANK_RESOLVE_PER_TOP 4

/* The rows a phrase holds (row index, weighted frequency), by id unless
 * unordered. */
typedef struct phrase_rows {
    size_t *row;
    double *freq;
    size_t n, cap;
    int unordered;
} phrase_rows;

typedef struct id_row {
    int64_t id;
    size_t row;
} id_row;

/* The rows met, at their index for good (id, length or < 0 while
 * unknown, the floor of the length its instances set, score so far or
 * while the length is unknown a bound for it, left out), and the live
 * ones by id (ord): the walk of a phrase, whose rows come by id, steps
 * along ord instead of a hash lookup per row (a cache miss each at 1M
 * chunks); rows new in the phrase gather in `fresh`, by id too, and are
 * merged into ord after it. */
typedef struct row_walk {
    store_rank *r;
    store *st;
    int64_t *id;
    double *len, *lo, *part;
    unsigned char *dead;
    size_t n, cap;
    id_row *ord, *spare;      /* spare: the merge's other buffer */
    size_t n_ord, at, cap_ord, cap_spare;
    id_row *fresh;
    size_t n_fresh, cap_fresh;
    int64_t last_id;
    int unordered;            /* a phrase's rows came out of id order */
    int late;                 /* lengths read late (above) */
    phrase_rows *cur;         /* the phrase walked */
    double idf;               /* its IDF, or < 0 while unknown */
    int skip_new;             /* rows first met here cannot reach the top */
    int64_t n_hit;
    store_post *rec;          /* the phrase's walk recorded for keeping, or NULL */
    size_t n_rec, cap_rec;
} row_walk;

/* store_rank_rows's kept walks (store_posts.h): the expression's phrases
 * as they stand in it, phrase i at sp[i]. */
#define RANK_KEEP_MAX 128
typedef struct rank_keep {
    store_posts *k;
    const char *fts;
    query_span sp[RANK_KEEP_MAX];
    size_t n;
} rank_keep;

/* xQueryPhrase's callback for the statistics alone. */
static int count_row(const Fts5ExtensionApi *api, Fts5Context *fts, void *ctx)
{
    (void)api, (void)fts;
    ((row_walk *)ctx)->n_hit++;
    return SQLITE_OK;
}

static size_t walk_add(row_walk *w, int64_t id, double len)
{
    if (w->n == w->cap) {
        w->cap = w->cap ? 2 * w->cap : 1024;
        w->id = xrealloc(w->id, w->cap * sizeof *w->id);
        w->len = xrealloc(w->len, w->cap * sizeof *w->len);
        w->lo = xrealloc(w->lo, w->cap * sizeof *w->lo);
        w->part = xrealloc(w->part, w->cap * sizeof *w->part);
        w->dead = xrealloc(w->dead, w->cap * sizeof *w->dead);
    }
    w->id[w->n] = id;
    w->len[w->n] = len;
    w->lo[w->n] = 0.0;
    w->part[w->n] = 0.0;
    w->dead[w->n] = 0;
    xgrow(&w->fresh, &w->cap_fresh, w->n_fresh + 1, sizeof *w->fresh);
    w->fresh[w->n_fresh++] = (id_row){id, w->n};
    return w->n++;
}

/* A row's part for a phrase: exact once its length is known, else the
 * bound its length's floor gives (term_score falls as d grows, and each
 * rounded operation keeps that order). */
static double row_part(const row_walk *w, size_t row, double idf, double freq)
{
    double d = w->len[row] >= 0 ? w->len[row] : w->lo[row];
    return term_score(idf, freq, d, w->r->avgdl);
}

/* The walk's row of id, as the phrase's rows come (by id, else looked
 * for from the start): its index, or SIZE_MAX when the row is new. */
static size_t walk_find(row_walk *w, int64_t id)
{
    w->n_hit++;
    if (id <= w->last_id && w->n_hit > 1) {
        w->unordered = 1;   /* not by id after all: look from the start */
        w->at = 0;
    }
    w->last_id = id;
    while (w->at < w->n_ord && w->ord[w->at].id < id)
        w->at++;
    return w->at < w->n_ord && w->ord[w->at].id == id ? w->ord[w->at].row : SIZE_MAX;
}

/* The phrase's weighted frequency and length floor in the walk's row. */
static void walk_take(row_walk *w, size_t row, double freq, double len_floor)
{
    if (len_floor > w->lo[row])
        w->lo[row] = len_floor;
    phrase_rows *p = w->cur;
    if (p->n == p->cap) {
        p->cap = p->cap ? 2 * p->cap : 1024;
        p->row = xrealloc(p->row, p->cap * sizeof *p->row);
        p->freq = xrealloc(p->freq, p->cap * sizeof *p->freq);
    }
    p->row[p->n] = row;
    p->freq[p->n++] = freq;
    if (w->idf >= 0)
        w->part[row] += row_part(w, row, w->idf, freq);
}

/* xQueryPhrase's callback: one row of the phrase walked (its only phrase,
 * 0, in the cursor fts). */
static int walk_row(const Fts5ExtensionApi *api, Fts5Context *fts, void *ctx)
{
    row_walk *w = ctx;
    int64_t id = api->xRowid(fts);
    size_t row = walk_find(w, id);
    int rc;
    if (row == SIZE_MAX) {
        if (w->skip_new)
            return SQLITE_OK;
        double d = -1.0;
        if (!w->late && (rc = row_length(api, fts, w->r, &d)) != SQLITE_OK)
            return rc;
        row = walk_add(w, id, d);
    }
    double freq, len_floor;
    if ((rc = phrase_freq(api, fts, w->r, 0, &freq, &len_floor)) != SQLITE_OK)
        return rc;
    if (w->rec) {   /* every row of the phrase (skip_new is 0 while recording) */
        xgrow(&w->rec, &w->cap_rec, w->n_rec + 1, sizeof *w->rec);
        w->rec[w->n_rec++] = (store_post){id, freq, len_floor, w->len[row]};
    }
    walk_take(w, row, freq, len_floor);
    return SQLITE_OK;
}

static int cmp_id_row(const void *a, const void *b)
{
    const id_row *x = a, *y = b;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* The rows new in the phrase walked merged into ord, by id. */
static void walk_merge(row_walk *w)
{
    if (w->unordered && w->n_fresh > 1)
        qsort(w->fresh, w->n_fresh, sizeof *w->fresh, cmp_id_row);
    if (w->n_fresh) {
        xgrow(&w->spare, &w->cap_spare, w->n_ord + w->n_fresh, sizeof *w->spare);
        id_row *m = w->spare;
        size_t a = 0, b = 0, n = 0;
        while (a < w->n_ord && b < w->n_fresh)
            m[n++] = w->ord[a].id < w->fresh[b].id ? w->ord[a++] : w->fresh[b++];
        if (a < w->n_ord)   /* (ord is NULL before the first merge) */
            memcpy(m + n, w->ord + a, (w->n_ord - a) * sizeof *m);
        n += w->n_ord - a;
        memcpy(m + n, w->fresh + b, (w->n_fresh - b) * sizeof *m);
        n += w->n_fresh - b;
        w->spare = w->ord;
        w->ord = m;
        size_t c = w->cap_spare;
        w->cap_spare = w->cap_ord;
        w->cap_ord = c;
        w->n_ord = n;
    }
    w->n_fresh = 0;
    w->at = 0;
    w->unordered = 0;
    w->last_id = INT64_MIN;
}

/* v into a min-heap of the k largest values pushed (*n held, k slots). */
static void top_push(double *heap, size_t *n, size_t k, double v)
{
    size_t j;
    if (*n < k) {   /* sift up */
        for (j = (*n)++; j > 0 && heap[(j - 1) / 2] > v; j = (j - 1) / 2)
            heap[j] = heap[(j - 1) / 2];
        heap[j] = v;
        return;
    }
    if (v <= heap[0])
        return;
    for (j = 0;;) {   /* the least replaced: sift down */
        size_t c = 2 * j + 1;
        if (c >= k)
            break;
        if (c + 1 < k && heap[c + 1] < heap[c])
            c++;
        if (heap[c] >= v)
            break;
        heap[j] = heap[c];
        j = c;
    }
    heap[j] = v;
}

/* Row indexes as a max-heap by their bound (part): h[j] sifted down. */
static void bound_sift(size_t *h, size_t n, size_t j, const double *part)
{
    size_t v = h[j];
    for (;;) {
        size_t c = 2 * j + 1;
        if (c >= n)
            break;
        if (c + 1 < n && part[h[c + 1]] > part[h[c]])
            c++;
        if (part[h[c]] <= part[v])
            break;
        h[j] = h[c];
        j = c;
    }
    h[j] = v;
}

/* A row's length from its id alone, after its phrase's walk: the note
 * map's, else FTS5's docsize record (a varint per column, what
 * xColumnSize(-1) sums). */
static trove_err length_by_id(row_walk *w, int64_t id, double *d)
{
    store_rank *r = w->r;
    int64_t len;
    trove_err rc = TROVE_OK;
    if (r->nmap && store_nmap_chunk_len(r->nmap, id, &len, &rc) > 0) {
        *d = (double)len;
        return TROVE_OK;
    }
    if (rc)
        return rc;
    sqlite3_stmt *s = store_stmt_get(w->st, r->table == STORE_RANK_TITLES
                                                ? "SELECT sz FROM titles_fts_docsize WHERE id = ?1"
                                                : "SELECT sz FROM chunks_fts_docsize WHERE id = ?1");
    if (!s)
        return store_fail(w->st, "keyword search");
    sqlite3_bind_int64(s, 1, id);
    int got = store_step(w->st, s, "keyword search", &rc);
    if (got > 0) {
        const unsigned char *b = sqlite3_column_blob(s, 0);
        size_t n = (size_t)sqlite3_column_bytes(s, 0), i = 0;
        uint64_t sum = 0, v;
        while (rc == TROVE_OK && i < n)
            if (store_rank_varint(b, n, &i, &v))
                sum += v;
            else
                rc = trove_fail(TROVE_ECORRUPT, "keyword search: docsize record of row %lld",
                                (long long)id);
        *d = (double)sum;
    } else if (got == 0) {
        rc = trove_fail(TROVE_ECORRUPT, "keyword search: no docsize record for row %lld",
                        (long long)id);
    }
    store_stmt_put(w->st, s);
    return rc;
}

/* The k rows pick[] get their lengths, and their scores so far made
 * exact: their parts in the phrases walked (order[0..walked)), from one
 * pass over those phrases' rows (marked 2 in dead meanwhile). */
static trove_err resolve_rows(row_walk *w, const size_t *pick, size_t k, const phrase_rows *pr,
                              const size_t *order, int walked)
{
    trove_err rc = TROVE_OK;
    for (size_t i = 0; i < k && rc == TROVE_OK; i++) {
        size_t row = pick[i];
        rc = length_by_id(w, w->id[row], &w->len[row]);
        w->part[row] = 0.0;
        w->dead[row] = 2;
    }
    for (int j = 0; j < walked && rc == TROVE_OK; j++) {
        const phrase_rows *p = &pr[order[j]];
        double idf = w->r->idf[order[j]];
        for (size_t i = 0; i < p->n; i++)
            if (w->dead[p->row[i]] == 2)
                w->part[p->row[i]] += row_part(w, p->row[i], idf, p->freq[i]);
    }
    for (size_t i = 0; i < k; i++)
        w->dead[pick[i]] = 0;
    return rc;
}

/* After `walked` phrases of the pruned walk (their bounds left: `left`;
 * last: none): rows whose lengths are unknown resolved, highest bound
 * first, while one can still reach t, the top-th best exact score so far
 * (a floor for the top-th best in the end; at most RANK_RESOLVE_PER_TOP
 * x top of them but after the last phrase), then the live rows that
 * cannot reach t with the phrases left out of ord (after the last one,
 * every row still unknown), and whether rows first met later can. */
static trove_err walk_prune(row_walk *w, size_t top, double left, int last,
                            const phrase_rows *pr, const size_t *order, int walked)
{
    if (w->n_ord < top && !last)
        return TROVE_OK;
    double *heap = xmalloc(top * sizeof *heap);
    size_t *bounds = xmalloc((w->n_ord ? w->n_ord : 1) * sizeof *bounds);
    size_t n_heap = 0, n_b = 0;
    for (size_t i = 0; i < w->n_ord; i++) {
        size_t row = w->ord[i].row;
        if (w->len[row] >= 0)
            top_push(heap, &n_heap, top, w->part[row]);
    }
    /* the rows still unknown that can reach t as the known ones set it */
    for (size_t i = 0; i < w->n_ord; i++) {
        size_t row = w->ord[i].row;
        if (w->len[row] < 0 &&
            (n_heap < top || w->part[row] * (1 + RANK_PRUNE_MARGIN) >= heap[0]))
            bounds[n_b++] = row;
    }
    for (size_t j = n_b / 2; j-- > 0;)
        bound_sift(bounds, n_b, j, w->part);
    /* in batches (a pass over the phrases' rows each), highest bound
     * first: those that can reach t as it stands, twice as many a batch
     * after the last phrase, the budget in one batch before */
    size_t budget = last ? SIZE_MAX : RANK_RESOLVE_PER_TOP * top, batch = last ? top : budget;
    size_t *pick = xmalloc((n_b ? n_b : 1) * sizeof *pick);
    trove_err rc = TROVE_OK;
    while (n_b && budget && rc == TROVE_OK) {
        size_t k = 0;
        while (n_b && k < batch && k < budget &&
               !(n_heap == top && w->part[bounds[0]] * (1 + RANK_PRUNE_MARGIN) < heap[0])) {
            pick[k++] = bounds[0];
            bounds[0] = bounds[--n_b];
            bound_sift(bounds, n_b, 0, w->part);
        }
        if (!k)
            break;   /* none still unknown can reach t */
        rc = resolve_rows(w, pick, k, pr, order, walked);
        for (size_t i = 0; i < k; i++)
            top_push(heap, &n_heap, top, w->part[pick[i]]);
        budget -= k;
        batch *= 2;
    }
    double t = n_heap == top ? heap[0] : -INFINITY;
    free(pick);
    free(heap);
    free(bounds);
    if (rc)
        return rc;
    size_t n = 0;
    for (size_t i = 0; i < w->n_ord; i++) {
        size_t row = w->ord[i].row;
        int known = w->len[row] >= 0;
        if (last ? !known : (w->part[row] + left) * (1 + RANK_PRUNE_MARGIN) < t)
            w->dead[row] = 1;
        else
            w->ord[n++] = w->ord[i];
    }
    if (n < w->n_ord)
        w->r->cut = 1;
    w->n_ord = n;
    w->skip_new = left * (1 + RANK_PRUNE_MARGIN) < t;
    return TROVE_OK;
}

/* A kept walk of the phrase (store_posts.h) taken as walk_row takes
 * FTS5's: the same rows in the same order, the same frequencies; a new
 * row's length, where walk_row reads it, is the one kept (else asked by
 * id: the same number). */
static trove_err walk_kept(row_walk *w, const store_post *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        size_t row = walk_find(w, p[i].id);
        if (row == SIZE_MAX) {
            if (w->skip_new)
                continue;
            double d = -1.0;
            if (!w->late) {
                d = p[i].len;
                trove_err rc;
                if (d < 0 && (rc = length_by_id(w, p[i].id, &d)) != TROVE_OK)
                    return rc;
            }
            row = walk_add(w, p[i].id, d);
        }
        walk_take(w, row, p[i].freq, p[i].lo);
    }
    return TROVE_OK;
}

/* Phrase i's kept walk: 1 with *rows, *n, else 0. */
static int kept_walk(const rank_keep *keep, const store_rank *r, int i, const store_post **rows,
                     size_t *n)
{
    return keep && store_posts_find(keep->k, r->table, r->weight, keep->fts + keep->sp[i].off,
                                    keep->sp[i].len, rows, n);
}

/* One phrase walked (xQueryPhrase, or its kept walk) into w, its rows into
 * *p; a walk of every row of it (no row skipped) kept when keep is set. */
static int walk_phrase(const Fts5ExtensionApi *api, Fts5Context *fts, row_walk *w, int phrase,
                       phrase_rows *p, double idf, const rank_keep *keep)
{
    w->cur = p;
    w->idf = idf;
    w->n_hit = 0;
    const store_post *kept;
    size_t n_kept;
    int rc = SQLITE_OK;
    if (kept_walk(keep, w->r, phrase, &kept, &n_kept)) {
        trove_err err = walk_kept(w, kept, n_kept);
        if (err && w->r->rc == TROVE_OK)
            w->r->rc = err;
        rc = err ? SQLITE_ERROR : SQLITE_OK;
    } else {
        int record = keep && !w->skip_new;
        w->n_rec = w->cap_rec = 0;
        w->rec = record ? xmalloc((w->cap_rec = 64) * sizeof *w->rec) : NULL;
        rc = api->xQueryPhrase(fts, phrase, w, walk_row);
        if (record && rc == SQLITE_OK && w->r->rc == TROVE_OK)
            store_posts_put(keep->k, w->r->table, w->r->weight, keep->fts + keep->sp[phrase].off,
                            keep->sp[phrase].len, w->rec, w->n_rec);   /* taken */
        else
            free(w->rec);
        w->rec = NULL;
    }
    if (w->skip_new && w->n_hit > (int64_t)p->n)
        w->r->cut = 1;   /* rows first met here left out (or already cut) */
    p->unordered = w->unordered;
    walk_merge(w);
    return rc;
}

/* The IDF of a phrase that `n_hit` of n_row rows hold: fts5Bm25GetData's. */
static double phrase_idf(sqlite3_int64 n_row, int64_t n_hit)
{
    double idf = log((n_row - n_hit + 0.5) / (n_hit + 0.5));
    return idf <= 0.0 ? 1e-6 : idf;
}

/* Every row of the n phrases OR-ed (or, with r->top, rows enough for the
 * best r->top, above) with its score, into r; the statistics as
 * rank_phrases computes them. */
static int rank_rows_walk(const Fts5ExtensionApi *api, Fts5Context *fts, store *st, store_rank *r,
                          int n, sqlite3_int64 n_row)
{
    row_walk w = {.r = r, .st = st, .last_id = INT64_MIN};
    const rank_keep *keep = w.st->rank_keep;
    if (keep && keep->n != (size_t)n)
        keep = NULL;   /* the phrases are not the spans (not expected) */
    phrase_rows *pr = xcalloc(n ? (size_t)n : 1, sizeof *pr);
    size_t *order = xmalloc((n ? (size_t)n : 1) * sizeof *order);
    double *left = xcalloc((size_t)n + 1, sizeof *left);
    int rc = SQLITE_OK;
    /* lengths read late with a cap; the count and the prunes between
     * phrases need more than one (one phrase's IDF is known after its
     * walk, its bounds computed then) */
    w.late = r->top > 0 && n >= 1 && (n_row >= RANK_PRUNE_MIN_TABLE || r->prune_small);
    int prune = w.late && n > 1;
    r->cut = 0;
    int known = r->known && r->n_known == (size_t)n;
    for (int i = 0; prune && rc == SQLITE_OK && i < n; i++) {
        const store_post *kept;
        size_t n_kept;
        w.n_hit = 0;
        if (kept_walk(keep, r, i, &kept, &n_kept))
            w.n_hit = (int64_t)n_kept;   /* every row of the phrase */
        else if (known && r->known[i] >= 0)
            w.n_hit = r->known[i];   /* counted before (store_rank_keep) */
        else
            rc = api->xQueryPhrase(fts, i, &w, count_row);
        r->hits[i] = w.n_hit;
        r->idf[i] = phrase_idf(n_row, w.n_hit);
    }
    /* rarest first (the largest bounds), ties in query order */
    for (int i = 0; i < n; i++) {
        size_t j = (size_t)i;
        for (; prune && j > 0 && r->hits[order[j - 1]] > r->hits[i]; j--)
            order[j] = order[j - 1];
        order[j] = (size_t)i;
    }
    for (int j = n - 1; prune && j >= 0; j--)
        left[j] = store_rank_bound(r, (int)order[j]) + left[j + 1];
    trove_err err = TROVE_OK;
    for (int j = 0; rc == SQLITE_OK && r->rc == TROVE_OK && !err && j < n; j++) {
        int i = (int)order[j];
        rc = walk_phrase(api, fts, &w, i, &pr[i], prune ? r->idf[i] : -1.0, keep);
        if (!prune) {
            r->hits[i] = w.n_hit;
            r->idf[i] = phrase_idf(n_row, w.n_hit);
            for (size_t k = 0; w.late && k < pr[i].n; k++)   /* (one phrase) */
                w.part[pr[i].row[k]] = row_part(&w, pr[i].row[k], r->idf[i], pr[i].freq[k]);
        }
        if (rc == SQLITE_OK && ((prune && j + 1 < n) || (w.late && j + 1 == n)))
            err = walk_prune(&w, r->top, left[j + 1], j + 1 == n, pr, order, j + 1);
    }
    if (err && r->rc == TROVE_OK)
        r->rc = err;
    /* the rows kept, each one's terms added in phrase order (rank_fn's
     * sum; a phrase absent from a row adds +0.0 there: the same bits) */
    if (rc == SQLITE_OK && r->rc == TROVE_OK) {
        for (size_t k = 0; k < w.n_ord; k++)
            w.part[w.ord[k].row] = 0.0;
        for (int i = 0; i < n; i++)
            for (size_t k = 0; k < pr[i].n; k++) {
                size_t row = pr[i].row[k];
                if (!w.dead[row])
                    w.part[row] += term_score(r->idf[i], pr[i].freq[k], w.len[row], r->avgdl);
            }
        r->row_id = xmalloc((w.n_ord ? w.n_ord : 1) * sizeof *r->row_id);
        r->row_score = xmalloc((w.n_ord ? w.n_ord : 1) * sizeof *r->row_score);
        for (size_t k = 0; k < w.n_ord; k++) {
            r->row_id[k] = w.ord[k].id;
            r->row_score[k] = w.part[w.ord[k].row];
        }
        r->n_rows = w.n_ord;
    }
    for (int i = 0; i < n; i++) {
        free(pr[i].row);
        free(pr[i].freq);
    }
    free(pr);
    free(order);
    free(left);
    free(w.id);
    free(w.len);
    free(w.lo);
    free(w.part);
    free(w.dead);
    free(w.ord);
    free(w.spare);
    free(w.fresh);
    return rc;
}
/* The statistics of the n phrases from `first`, as fts5Bm25GetData
 * (fts5_aux.c) computes them, the same statements in the same order: the
 * rows of each phrase walked (xQueryPhrase) and counted. With `score`,
 * the walks also give the rows of the phrases OR-ed their scores
 * (rank_rows_walk). */
static int rank_phrases_of(const Fts5ExtensionApi *api, Fts5Context *fts, store *st,
                           store_rank *r, int first, int n, int score, sqlite3_int64 n_row,
                           sqlite3_int64 n_token)
{
    int rc = SQLITE_OK;
    if (n_row <= 0)
        n_row = 1;
    if (score)
        store_rank_free(r);
    free(r->idf);
    free(r->hits);
    r->idf = xcalloc(n ? (size_t)n : 1, sizeof *r->idf);
    r->hits = xcalloc(n ? (size_t)n : 1, sizeof *r->hits);
    r->n_phrase = n;
    r->avgdl = (double)n_token / (double)n_row;
    if (score) {
        rc = rank_rows_walk(api, fts, st, r, n, n_row);
    } else {
        row_walk w = {.r = r};
        for (int i = 0; rc == SQLITE_OK && i < n; i++) {
            w.n_hit = 0;
            rc = api->xQueryPhrase(fts, first + i, &w, count_row);
            r->hits[i] = w.n_hit;
            r->idf[i] = phrase_idf(n_row, w.n_hit);
        }
    }
    r->have = rc == SQLITE_OK && r->rc == TROVE_OK;
    return rc;
}

static int rank_phrases(const Fts5ExtensionApi *api, Fts5Context *fts, store_rank *r, int first,
                        int n, int score)
{
    sqlite3_int64 n_row = 0, n_token = 0;
    int rc = api->xRowCount(fts, &n_row);
    if (rc == SQLITE_OK)
        rc = api->xColumnTotalSize(fts, -1, &n_token);
    if (rc != SQLITE_OK)
        return rc;
    store *st = api->xUserData(fts);
    if (score && st->rank_keep)   /* the table's totals, for walks kept whole */
        store_posts_set_totals(st->rank_keep->k, r->table, n_row, n_token);
    return rank_phrases_of(api, fts, st, r, first, n, score, n_row, n_token);
}

/* store_rank_rows without its statement, where every phrase's walk and
 * the table's totals are kept: what the statement's one call of
 * trove_rank_rows would do, from the kept walks alone (rank_rows_walk
 * asks FTS5 nothing then). None of the phrases holding a row, the
 * statement would match none and call nothing: r stays as it is. 1 when
 * done so (*rc its error), 0 when the statement must run. */
static int rank_rows_kept(store *st, const rank_keep *keep, store_rank *r, trove_err *rc)
{
    int64_t n_row, n_token;
    size_t rows = 0;
    if (!store_posts_totals(keep->k, r->table, &n_row, &n_token))
        return 0;
    for (size_t i = 0; i < keep->n; i++) {
        const store_post *p;
        size_t n;
        if (!kept_walk(keep, r, (int)i, &p, &n))
            return 0;
        rows += n;
    }
    if (rows && rank_phrases_of(NULL, NULL, st, r, 0, (int)keep->n, 1, n_row, n_token) !=
                    SQLITE_OK && r->rc == TROVE_OK)
        *rc = trove_fail(TROVE_ESQL, "keyword search: ranking kept rows failed");
    return 1;
}

/* trove_rank_rows(TABLE), called once (LIMIT 1): rank_phrases, scoring,
 * into the bound state. */
static void rank_rows_fn(const Fts5ExtensionApi *api, Fts5Context *fts, sqlite3_context *ctx,
                         int n_val, sqlite3_value **val)
{
    (void)n_val, (void)val;
    store *st = api->xUserData(fts);
    store_rank *r = st->rank;
    if (!r) {
        sqlite3_result_error(ctx, "trove_rank_rows: no rank state bound", -1);
        return;
    }
    int rc = rank_phrases(api, fts, r, 0, api->xPhraseCount(fts), 1);
    if (r->rc != TROVE_OK)
        sqlite3_result_error(ctx, trove_errmsg(), -1);
    else if (rc != SQLITE_OK)
        sqlite3_result_error_code(ctx, rc);
    else
        sqlite3_result_int64(ctx, (sqlite3_int64)r->n_rows);
}

/* ---- rows per phrase, for counts asked again --------------------------- */

/* A phrase's rows, by key: the table's letter ('c' chunks_fts, 't'
 * titles_fts) and the phrase as the expression spells it ("tar", "ta" *),
 * or 'w' and the one token of a chunks_fts phrase (store_rank_hits). */
typedef struct store_rank_df {
    char *key;
    int64_t hits;
} store_rank_df;

/* Counts kept at most (a daemon's: dropped all at once past it; a key
 * is looked for by a linear search, ~5 ns an entry). */
#define RANK_DF_MAX 1024

typedef struct one_token {
    tbuf tok;
    int n, colocated;
} one_token;

static int take_token(void *ctx, const char *t, size_t len, size_t start, size_t end, int flags)
{
    (void)start, (void)end;
    one_token *o = ctx;
    if (o->n++ == 0)
        tbuf_append(&o->tok, t, len);
    o->colocated |= flags & TOK_COLOCATED;
    return o->n > 1;
}

/* The token FTS5 looks up for a quoted phrase's text (its tokenizer's
 * query mode, tok_fts5.c): 1 with it in o->tok when there is one alone. */
static int phrase_token(const char *text, size_t len, one_token *o)
{
    static const tok_opts opts = {.stem = 1, .query = 1};
    tbuf_reset(&o->tok);
    o->n = o->colocated = 0;
    tok_run_flags(&opts, text, len, o, take_token);
    return o->n == 1 && !o->colocated;
}

/* The text inside a phrase `"..."` ("" for a quote), when the span is that
 * alone (not a prefix `"..." *`). */
static int phrase_text(const char *p, size_t len, tbuf *out)
{
    tbuf_reset(out);
    if (len < 2 || p[0] != '"')
        return 0;
    size_t i = 1;
    for (; i < len; i++) {
        if (p[i] == '"') {
            if (i + 1 < len && p[i + 1] == '"')
                i++;
            else
                break;
        }
        tbuf_putc(out, p[i]);
    }
    return i == len - 1;
}

static void df_clear(store *st)
{
    for (size_t i = 0; i < st->n_df; i++)
        free(st->df[i].key);
    st->n_df = 0;
}

void store_rank_forget(store *st)
{
    if (!st->df_keep)
        df_clear(st);   /* a keeper's are looked at again by df_usable */
}

void store_rank_forget_all(store *st)
{
    df_clear(st);
}

void store_rank_keep(store *st)
{
    if (!st->df_keep && sqlite3_db_readonly(st->db, "main") == 1) {
        df_clear(st);
        st->df_keep = 1;
        st->df_version = -1;
    }
}

/* Whether the counts can be used and added to now: inside a read
 * transaction (one snapshot), and when kept, emptied first if another
 * connection committed since they were counted. */
static int df_usable(store *st)
{
    if (sqlite3_get_autocommit(st->db))
        return 0;
    if (!st->df_keep)
        return 1;
    int stale = store_kept_stale(st, &st->df_version);
    if (stale)
        df_clear(st);   /* -1, unknown: counted again, as without a keeper */
    if (stale < 0)
        st->df_version = -1;
    return 1;
}

static int df_find(const store *st, const char *key, int64_t *hits)
{
    for (size_t i = 0; i < st->n_df; i++)
        if (strcmp(st->df[i].key, key) == 0) {
            *hits = st->df[i].hits;
            return 1;
        }
    return 0;
}

static void df_put(store *st, const char *key, int64_t hits)
{
    int64_t known;
    if (df_find(st, key, &known))
        return;
    if (st->n_df == RANK_DF_MAX)
        df_clear(st);
    xgrow(&st->df, &st->cap_df, st->n_df + 1, sizeof *st->df);
    st->df[st->n_df++] = (store_rank_df){xstrdup(key), hits};
}

/* The key of phrase `sp` of fts in table's counts (df_find). */
static const char *phrase_key(store_rank_table table, const char *fts, query_span sp, tbuf *key)
{
    tbuf_reset(key);
    tbuf_putc(key, table == STORE_RANK_TITLES ? 't' : 'c');
    tbuf_append(key, fts + sp.off, sp.len);
    return tbuf_cstr(key);
}

#define RANK_MAX_SPANS 128

/* r->known: the rows of fts's phrases counted before, when fts has the
 * shape store_rank_rows scores (-1 for a phrase not counted yet). */
static void known_hits(store *st, store_rank_table table, const char *fts, store_rank *r)
{
    query_span sp[RANK_MAX_SPANS];
    size_t n_neg, n = query_fts_phrases(fts, sp, RANK_MAX_SPANS, &n_neg);
    if (!n || n_neg || !df_usable(st))
        return;
    tbuf key = {0};
    r->known = xmalloc(n * sizeof *r->known);
    r->n_known = n;
    for (size_t i = 0; i < n; i++)
        if (!df_find(st, phrase_key(table, fts, sp[i], &key), &r->known[i]))
            r->known[i] = -1;
    tbuf_free(&key);
}

/* The phrases of fts with their rows (r->hits) into the counts, and for
 * chunks_fts those that are one token each by their token
 * (store_rank_hits). */
static void remember_hits(store *st, store_rank_table table, const char *fts, const store_rank *r)
{
    query_span sp[RANK_MAX_SPANS];
    size_t n_neg;
    size_t n = query_fts_phrases(fts, sp, RANK_MAX_SPANS, &n_neg);
    if (n_neg || n != (size_t)r->n_phrase || !df_usable(st))
        return;
    one_token o = {0};
    tbuf text = {0}, key = {0};
    for (size_t i = 0; i < n; i++) {
        df_put(st, phrase_key(table, fts, sp[i], &key), r->hits[i]);
        if (table != STORE_RANK_CHUNKS || !phrase_text(fts + sp[i].off, sp[i].len, &text) ||
            !phrase_token(tbuf_cstr(&text), text.len, &o))
            continue;
        tbuf_reset(&key);
        tbuf_putc(&key, 'w');
        tbuf_append(&key, o.tok.data, o.tok.len);
        df_put(st, tbuf_cstr(&key), r->hits[i]);
    }
    tbuf_free(&text);
    tbuf_free(&key);
    tbuf_free(&o.tok);
}

int store_rank_hits(store *st, const char *word, const char *tok, int64_t *hits)
{
    one_token o = {0};
    if (word) {
        int one = phrase_token(word, strlen(word), &o);
        tok = tbuf_cstr(&o.tok);
        if (!one)
            tok = NULL;
    }
    int found = 0;
    if (tok && df_usable(st)) {
        tbuf key = {0};
        tbuf_putc(&key, 'w');
        tbuf_append(&key, tok, strlen(tok));
        found = df_find(st, tbuf_cstr(&key), hits);
        tbuf_free(&key);
    }
    tbuf_free(&o.tok);
    return found;
}

trove_err store_rank_rows(store *st, store_rank_table table, const char *fts, store_rank *r)
{
    trove_err rc = store_rank_ready(st);
    if (rc)
        return rc;
    sqlite3_stmt *s = store_stmt_get(st, table == STORE_RANK_TITLES
                                             ? "SELECT trove_rank_rows(titles_fts) FROM titles_fts"
                                               " WHERE titles_fts MATCH ?1 LIMIT 1"
                                             : "SELECT trove_rank_rows(chunks_fts) FROM chunks_fts"
                                               " WHERE chunks_fts MATCH ?1 LIMIT 1");
    if (!s)
        return store_fail(st, "keyword search");
    store_rank *was = st->rank;
    st->rank = r;
    r->table = (int)table;
    store_rank_free(r);
    rank_keep keep = {.k = store_posts_current(st), .fts = fts};
    size_t n_neg = 0;
    if (keep.k)
        keep.n = query_fts_phrases(fts, keep.sp, RANK_KEEP_MAX, &n_neg);
    st->rank_keep = keep.n && !n_neg ? &keep : NULL;
    if (!st->rank_keep || !rank_rows_kept(st, &keep, r, &rc)) {
        known_hits(st, table, fts, r);
        sqlite3_bind_text(s, 1, fts, -1, SQLITE_STATIC);
        store_step(st, s, "keyword search", &rc);
    }
    store_stmt_put(st, s);
    st->rank_keep = NULL;
    st->rank = was;
    free(r->known);
    r->known = NULL;
    r->n_known = 0;
    if (r->rc)
        rc = r->rc;   /* the note map's error, under the statement's */
    if (rc)
        store_rank_free(r);
    else if (r->have)
        remember_hits(st, table, fts, r);
    return rc;
}

trove_err store_rank_row_count(store *st, store_rank_table table, double *n)
{
    /* FTS5's averages record (rowid 1 of its data table): a varint, the
     * rows, then each column's tokens; xRowCount reads the same */
    sqlite3_stmt *s = store_stmt_get(st, table == STORE_RANK_TITLES
                                             ? "SELECT block FROM titles_fts_data WHERE id = 1"
                                             : "SELECT block FROM chunks_fts_data WHERE id = 1");
    if (!s)
        return store_fail(st, "keyword search");
    trove_err rc = TROVE_OK;
    uint64_t v = 0;
    if (store_step(st, s, "keyword search", &rc) > 0) {
        size_t i = 0;
        if (!store_rank_varint(sqlite3_column_blob(s, 0), (size_t)sqlite3_column_bytes(s, 0),
                               &i, &v))
            rc = trove_fail(TROVE_ECORRUPT, "keyword search: FTS5 totals record cut short");
    }
    store_stmt_put(st, s);
    *n = (double)v;
    return rc;
}

trove_err store_rank_ready(store *st)
{
    if (st->rank_ready)
        return TROVE_OK;
    fts5_api *api = tok_fts5_api(st->db);
    if (!api || api->iVersion < 2)
        return trove_fail(TROVE_EUNSUPPORTED, "SQLite has no usable FTS5 (fts5_api missing)");
    int rc = api->xCreateFunction(api, "trove_rank", st, rank_fn, NULL);
    if (rc == SQLITE_OK)
        rc = api->xCreateFunction(api, "trove_rank_rows", st, rank_rows_fn, NULL);
    if (rc != SQLITE_OK)
        return trove_fail(TROVE_ESQL, "registering trove_rank: %s", sqlite3_errstr(rc));
    st->rank_ready = 1;
    return TROVE_OK;
}

void store_rank_use(store *st, store_rank *r)
{
    st->rank = r;
}

void store_rank_free(store_rank *r)
{
    free(r->idf);
    free(r->hits);
    free(r->row_id);
    free(r->row_score);
    r->idf = NULL;
    r->hits = NULL;
    r->row_id = NULL;
    r->row_score = NULL;
    r->n_rows = 0;
    r->have = 0;
}

double store_rank_bound(const store_rank *r, int i)
{
    return r->idf[i] * (STORE_RANK_K1 + 1.0);
}
