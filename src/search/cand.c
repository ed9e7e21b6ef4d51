/* cand — the candidate set the channels share, and the best rows of an
 * FTS5 match kept in C (search_int.h). */
#include <stdlib.h>
#include <string.h>

#include "search/search_int.h"
#include "text/query.h"
#include "util/mem.h"

cand *search_cand_get(cand_set *cs, int64_t doc_id, int create)
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

void search_cand_front(cand_set *cs, cand_set *front)
{
    cand_set all = {0};
    for (size_t i = 0; i < front->n; i++) {
        const cand *f = &front->items[i];
        cand *c = search_cand_get(&all, f->doc_id, 1);
        const cand *had = search_cand_get(cs, f->doc_id, 0);
        if (had)
            *c = *had;
        for (int ch = 0; ch < SEARCH_N_CHANNELS; ch++)
            if (f->ch[ch].rank)
                c->ch[ch] = f->ch[ch];
        if (f->vec_chunk_id)
            c->vec_chunk_id = f->vec_chunk_id;
    }
    for (size_t i = 0; i < cs->n; i++) {
        size_t before = all.n;
        cand *c = search_cand_get(&all, cs->items[i].doc_id, 1);
        if (all.n > before)
            *c = cs->items[i];
    }
    free(cs->items);
    free(cs->slots);
    free(front->items);
    free(front->slots);
    *cs = all;
    *front = (cand_set){0};
}

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

void search_topk_push(topk *t, int64_t chunk_id, double score)
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

/* Lazy order: the rows not yet sorted, h[sorted .. n), are a max-heap
 * laid out backwards (heap index j at h[n - 1 - j], the best at h[n - 1]),
 * so that taking its best frees h[sorted], where the best goes. */
static scored *lazy_at(topk *t, size_t j)
{
    return &t->h[t->n - 1 - j];
}

static void lazy_sift_down(topk *t, size_t m, size_t j)
{
    for (;;) {
        size_t l = 2 * j + 1, r = l + 1, best = j;
        if (l < m && scored_below(lazy_at(t, best), lazy_at(t, l)))
            best = l;
        if (r < m && scored_below(lazy_at(t, best), lazy_at(t, r)))
            best = r;
        if (best == j)
            return;
        scored x = *lazy_at(t, j);
        *lazy_at(t, j) = *lazy_at(t, best);
        *lazy_at(t, best) = x;
        j = best;
    }
}

static void lazy_order(topk *t)
{
    t->sorted = 0;
    for (size_t j = t->n / 2; j-- > 0;)
        lazy_sift_down(t, t->n, j);
}

int search_topk_get(topk *t, size_t i, scored *out)
{
    if (i >= t->n)
        return 0;
    while (t->sorted <= i) {
        size_t m = t->n - t->sorted;   /* rows in the heap */
        scored best = *lazy_at(t, 0);
        *lazy_at(t, 0) = *lazy_at(t, m - 1);   /* h[sorted] */
        lazy_sift_down(t, m - 1, 0);
        t->h[t->sorted++] = best;
    }
    *out = t->h[i];
    return 1;
}

/* Moves the best k of h[0 .. n) (0 < k <= n) to h[0 .. k), the worst of
 * them to h[k - 1] (a selection, no order among the rest). Rows are in a
 * total order (chunk ids differ), so the best k are one set. */
static void select_best(scored *h, size_t n, size_t k)
{
    size_t lo = 0, hi = n - 1, want = k - 1;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        /* median of three as the pivot, against sorted or equal runs */
        scored a = h[lo], b = h[mid], c = h[hi], p;
        if (scored_below(&b, &a))
            p = scored_below(&c, &b) ? b : scored_below(&c, &a) ? c : a;
        else
            p = scored_below(&c, &a) ? a : scored_below(&c, &b) ? c : b;
        size_t i = lo, j = hi;
        while (i <= j) {
            while (scored_below(&p, &h[i]))
                i++;
            while (scored_below(&h[j], &p))
                j--;
            if (i <= j) {
                scored t = h[i];
                h[i] = h[j];
                h[j] = t;
                i++;
                if (j == 0)
                    break;
                j--;
            }
        }
        if (want <= j && j < hi)
            hi = j;
        else if (want >= i)
            lo = i;
        else
            break;   /* h[j + 1 .. i) equal the pivot: want is among them */
    }
}

/* Run a "SELECT id, score ... WHERE fts MATCH ?1" (its filter values from
 * ?2 on, then the heading's) and keep the best rows in C: cheaper than
 * FTS5's ORDER BY rank, which sorts every match. With a cap, rows gather
 * in a buffer of twice the cap; a full buffer keeps its best `cap`
 * (select_best), whose worst then turns away every row not above it:
 * a few comparisons a row where a heap paid ~200 instructions for each
 * row that displaced another (a common word's rows come in rowid order,
 * not by score). The same rows as a heap's, in the same order once
 * lazy_order has them. *matches: how many rows the query gave. */
static trove_err run_best(store *st, const char *sql, const char *fts, const search_filter *f,
                          const char *heading, topk *top, size_t *matches)
{
    sqlite3_stmt *s;
    trove_err rc = prepare(st, sql, &s);
    if (rc)
        return rc;
    sqlite3_bind_text(s, 1, fts, -1, SQLITE_STATIC);
    if (f)
        search_filter_bind(s, 2, f);
    if (heading)
        sqlite3_bind_text(s, 2 + (int)(f ? f->n_binds : 0), heading, -1, SQLITE_STATIC);
    *matches = 0;
    size_t full = top->cap ? 2 * top->cap : 0;
    scored floor = {0, 0};
    int have_floor = 0;
    while (step_row(st, s, "keyword search", &rc) > 0) {
        scored x = {sqlite3_column_int64(s, 0), sqlite3_column_double(s, 1)};
        ++*matches;
        if (have_floor && !scored_below(&floor, &x))
            continue;   /* cap rows already rank above it */
        xgrow(&top->h, &top->alloc, top->n + 1, sizeof *top->h);
        top->h[top->n++] = x;
        if (full && top->n >= full) {
            select_best(top->h, top->n, top->cap);
            top->n = top->cap;
            floor = top->h[top->cap - 1];
            have_floor = 1;
        }
    }
    store_stmt_put(st, s);
    if (top->cap && top->n > top->cap) {
        select_best(top->h, top->n, top->cap);
        top->n = top->cap;
    }
    lazy_order(top);
    return rc;
}

void search_topk_adopt(topk *top, const int64_t *ids, const double *scores, size_t n)
{
    xgrow(&top->h, &top->alloc, n ? n : 1, sizeof *top->h);
    for (size_t i = 0; i < n; i++)
        top->h[i] = (scored){ids[i], scores[i]};
    top->n = n;
    if (top->cap && n > top->cap) {
        select_best(top->h, n, top->cap);
        top->n = top->cap;
    }
    lazy_order(top);
}

int search_keep_best_or(store *st, store_rank *rank, store_rank_table table, const char *fts,
                        topk *top, size_t *matches, trove_err *rc)
{
    query_span sp[SEARCH_OR_MAX];
    size_t n_neg;
    if (!query_fts_phrases(fts, sp, SEARCH_OR_MAX, &n_neg) || n_neg)
        return 0;
    top->n = top->sorted = 0;
    *matches = 0;
    rank->top = top->cap;   /* rows that cannot reach the top left out */
    *rc = store_rank_rows(st, table, fts, rank);
    if (*rc == TROVE_OK) {
        search_topk_adopt(top, rank->row_id, rank->row_score, rank->n_rows);
        *matches = rank->cut ? SIZE_MAX : rank->n_rows;   /* SIZE_MAX: more than kept */
    }
    return 1;
}

/* The rows of `wide` (best first) that the filters allow, in order, into
 * top until it holds top->cap: one `check` lookup per row read. */
static trove_err keep_allowed(store *st, const char *check, const search_filter *f,
                              const char *heading, topk *wide, topk *top)
{
    /* --where, dates alone: decided in C on the note id, no SQL per row */
    const meta_filter *mf = f->meta_only;
    sqlite3_stmt *s = NULL;
    trove_err rc = TROVE_OK;
    if (!mf) {
        tbuf sql = {0};
        tbuf_printf(&sql, "%s%s%s", check, tbuf_cstr(&f->sql), heading ? SEARCH_HEADING_COND : "");
        rc = prepare(st, sql.data, &s);
        tbuf_free(&sql);
        if (rc)
            return rc;
        search_filter_bind(s, 2, f);
        if (heading)
            sqlite3_bind_text(s, 2 + (int)f->n_binds, heading, -1, SQLITE_STATIC);
    }
    scored row;
    for (size_t i = 0; rc == TROVE_OK && top->n < top->cap && search_topk_get(wide, i, &row);
         i++) {
        int ok;
        if (mf) {
            ok = meta_note_ok(st, mf, row.chunk_id, &rc) > 0;
        } else {
            sqlite3_reset(s);
            sqlite3_bind_int64(s, 1, row.chunk_id);
            ok = step_row(st, s, "filtering", &rc) > 0;
        }
        if (ok) {
            xgrow(&top->h, &top->alloc, top->n + 1, sizeof *top->h);
            top->h[top->n++] = row;
        }
    }
    top->sorted = top->n;
    if (s)
        store_stmt_put(st, s);
    return rc;
}

trove_err search_keep_best_plain(store *st, const char *plain, const char *fts, topk *top,
                                 size_t *matches)
{
    return run_best(st, plain, fts, NULL, NULL, top, matches);
}

trove_err search_keep_best(store *st, const char *plain, const char *joined, const char *check,
                           const char *fts, const search_filter *f, const char *heading,
                           topk *top)
{
    size_t matches;
    if (f->sql.len == 0 && !heading)
        return run_best(st, plain, fts, NULL, NULL, top, &matches);
    if (top->cap && check) {
        /* Filters checked on the best rows only: the unfiltered match
         * keeps KEEP_BEST_MARGIN times as many rows as wanted, read best
         * first until `cap` pass. The filters then cost a lookup per row
         * read, not a join for every matching row (docs/performance.md,
         * --where). Exact: when fewer pass, either every match was kept
         * (the answer is complete) or the joined query runs after all. */
        topk wide = {.cap = top->cap * KEEP_BEST_MARGIN};
        trove_err rc = run_best(st, plain, fts, NULL, NULL, &wide, &matches);
        if (rc == TROVE_OK)
            rc = keep_allowed(st, check, f, heading, &wide, top);
        free(wide.h);
        if (rc || top->n == top->cap || matches <= wide.cap)
            return rc;
        top->n = top->sorted = 0;
    }
    tbuf sql = {0};
    tbuf_printf(&sql, "%s%s%s", joined, tbuf_cstr(&f->sql), heading ? SEARCH_HEADING_COND : "");
    trove_err rc = run_best(st, sql.data, fts, f, heading, top, &matches);
    tbuf_free(&sql);
    return rc;
}
