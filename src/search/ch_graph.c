/* ch_graph — the link graph: each candidate's in-degree and language, its
 * link prior on the bm25 score, and then the bm25 ranks (by score times
 * prior). Runs after the keyword channels, over every candidate. */
#include <math.h>
#include <stdlib.h>

#include "search/search_int.h"
#include "text/lang.h"
#include "util/mem.h"

/* In-degree and language of every candidate, and its link prior. The prior
 * 1 + g * log10(1 + in-degree) multiplies the bm25 score: one inbound link
 * is worth 3% at g = 0.1, ten 10%, a hundred 20%, so links reorder only
 * notes whose keyword evidence is that close. (Ranked as an RRF list of its
 * own, in-degree 1 outranked 0 and lifted a note past better matches.)
 * The note map (kind 3) answers by an array index; the docs row, a B-tree
 * descent into the widest table (~15% of a daemon's search, a third of a
 * cold one's page faults), only where it does not say. */
static trove_err load_doc_info(store *st, store_nmap_reader *nmap, cand_set *cs,
                               double graph_weight)
{
    sqlite3_stmt *s = NULL;
    trove_err rc = TROVE_OK;
    for (size_t i = 0; rc == TROVE_OK && i < cs->n; i++) {
        cand *c = &cs->items[i];
        char code[3];
        int mapped = nmap ? store_nmap_note_links(nmap, c->doc_id, &c->in_degree, code, &rc) : 0;
        if (mapped < 0)
            break;
        if (mapped) {
            c->lang = lang_from_code(code);
        } else {
            if (!s && (rc = prepare(st, "SELECT in_degree, lang FROM docs WHERE id = ?", &s)))
                break;
            sqlite3_reset(s);
            sqlite3_bind_int64(s, 1, c->doc_id);
            if (step_row(st, s, "reading link counts", &rc) > 0) {
                c->in_degree = sqlite3_column_int(s, 0);
                c->lang = lang_from_code((const char *)sqlite3_column_text(s, 1));
            }
        }
        c->prior = 1.0 + (graph_weight > 0 ? graph_weight * log10(1.0 + c->in_degree) : 0.0);
    }
    if (s)
        store_stmt_put(st, s);
    return rc;
}

/* x before y: the higher bm25 score times prior, then the lower note id */
static inline int bm25_key_before(const cand *x, const cand *y)
{
    double kx = bm25_key(x), ky = bm25_key(y);
    if (kx != ky)
        return kx > ky;
    return x->doc_id < y->doc_id;
}

SEARCH_CAND_SORT(sort_by_bm25_key, bm25_key_before)

static void rank_bm25(cand_set *cs)
{
    cand **order = xmalloc((cs->n ? cs->n : 1) * sizeof *order);
    size_t n = 0;
    for (size_t i = 0; i < cs->n; i++)
        if (cs->items[i].has_bm25)
            order[n++] = &cs->items[i];
    sort_by_bm25_key((const cand **)order, n);
    int rank = 0;
    for (size_t i = 0; i < n; i++) {
        rank = shared_rank(i, rank, i > 0 && same_score(bm25_key(order[i]), bm25_key(order[i - 1])));
        order[i]->ch[SEARCH_CH_BM25].rank = rank;
    }
    free(order);
}

static int graph_wanted(const search_ctx *c)
{
    return c->q->fts && !c->o->vector_only;
}

static trove_err graph_run(search_ctx *c, cand_set *cs)
{
    trove_err rc = load_doc_info(c->st, c->f->nmap, cs, c->o->graph_weight);
    if (rc == TROVE_OK)
        rank_bm25(cs);
    return rc;
}

/* joins: it reads every candidate, the vector scan's too */
const search_channel search_ch_graph = {.name = "graph", .wanted = graph_wanted, .run = graph_run,
                                       .joins = 1};
