/* store_rank: trove_rank() gives bm25()'s scores to the bit (with the note
 * map's chunk lengths and without), its bounds hold for every row, and the
 * keyword list that leaves rows unread (ch_bm25.c, MaxScore) keeps the
 * notes and scores of a brute-force walk of bm25()'s order. On a seeded
 * vault of one-chunk and two-chunk notes with words of every frequency. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "search/search_int.h"
#include "store/store_nmap.h"
#include "store/store_rank.h"
#include "util/buf.h"
#include "testutil.h"

#define N_NOTES 2500

static char dir[64];
static store *st;

/* Words and the share of notes holding each (per mille). */
static const char *const words[] = {"mango", "kiwi", "guava", "lychee", "durian", "quince"};
static const int per_mille[] = {800, 500, 200, 60, 12, 4};
static const char *const filler[] = {"table", "river", "cloud", "stone", "paper", "light",
                                     "glass", "metal", "plant", "sound"};

static void put_words(tu_rng *r, tbuf *b, int scale)
{
    for (size_t w = 0; w < sizeof words / sizeof *words; w++)
        if ((int)(tu_rng_u32(r) % 1000) < per_mille[w] / scale) {
            int tf = 1 + (int)(tu_rng_u32(r) % 3);
            for (int k = 0; k < tf; k++)
                tbuf_printf(b, " %s", words[w]);
        }
    int n = 3 + (int)(tu_rng_u32(r) % 60);
    for (int k = 0; k < n; k++)
        tbuf_printf(b, " %s", filler[tu_rng_u32(r) % 10]);
}

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/trove-test-rank.XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    char path[128];
    snprintf(path, sizeof path, "%s/index.db", dir);
    int64_t coll;
    if (store_open(path, 0, &st) != TROVE_OK ||
        store_collection_ensure(st, "v", "/vault/v", &coll) != TROVE_OK ||
        store_begin(st) != TROVE_OK)
        return -1;
    tu_rng r = {0x9e3779b97f4a7c15ull};
    chunk_opts co = CHUNK_OPTS_DEFAULT;
    tbuf text = {0};
    for (int i = 0; i < N_NOTES; i++) {
        tbuf_reset(&text);
        tbuf_puts(&text, "# Note");
        put_words(&r, &text, 4);   /* headings: fewer words, weighed twice */
        tbuf_puts(&text, "\n\n");
        put_words(&r, &text, 1);
        if (i % 3 == 0) {   /* a second chunk */
            tbuf_puts(&text, "\n\n## More");
            put_words(&r, &text, 4);
            tbuf_puts(&text, "\n\n");
            put_words(&r, &text, 1);
        }
        tbuf_puts(&text, "\n");
        char name[32];
        snprintf(name, sizeof name, "n%04d.md", i);
        tu_index_note(st, coll, "v", name, tbuf_cstr(&text), &co);
    }
    tbuf_free(&text);
    return store_commit(st) == TROVE_OK ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    store_close(st);
    return tu_rm_rf(dir);
}

static const char *const queries[] = {
    "\"mango\"",
    "\"quince\"",
    "\"kiwi\" OR \"durian\"",
    "\"mango\" OR \"kiwi\" OR \"guava\" OR \"quince\"",
    "\"lychee\" OR \"mango\" OR \"kiwi\"",
    "\"gua\" * OR \"durian\"",
    "(\"mango\" OR \"lychee\") NOT (\"kiwi\")",
    "\"mango kiwi\" OR \"quince\"",
};
#define N_QUERIES (sizeof queries / sizeof *queries)

typedef struct rows {
    int64_t *id;
    double *score;
    size_t n;
} rows;

static void rows_free(rows *r)
{
    free(r->id);
    free(r->score);
}

/* Every row of `sql` (rowid, score) for fts, in rowid order. */
static rows run_rows(const char *sql, const char *fts)
{
    rows out = {0};
    size_t cap = 0;
    sqlite3_stmt *s;
    assert_int_equal(sqlite3_prepare_v2(store_db(st), sql, -1, &s, NULL), SQLITE_OK);
    sqlite3_bind_text(s, 1, fts, -1, SQLITE_STATIC);
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        if (out.n == cap) {
            cap = cap ? cap * 2 : 64;
            out.id = xrealloc(out.id, cap * sizeof *out.id);
            out.score = xrealloc(out.score, cap * sizeof *out.score);
        }
        out.id[out.n] = sqlite3_column_int64(s, 0);
        out.score[out.n++] = sqlite3_column_double(s, 1);
    }
    assert_int_equal(rc, SQLITE_DONE);
    sqlite3_finalize(s);
    return out;
}

static const char bm25_sql[] = "SELECT rowid, -bm25(chunks_fts, 2.0, 1.0) FROM chunks_fts"
                               " WHERE chunks_fts MATCH ?1 ORDER BY rowid";
static const char rank_sql[] = "SELECT rowid, trove_rank(chunks_fts) FROM chunks_fts"
                               " WHERE chunks_fts MATCH ?1 ORDER BY rowid";

static void test_lengths_mapped(void **state)
{
    (void)state;
    store_nmap_reader *m = store_nmap_reader_new(st);
    sqlite3_stmt *s;
    assert_int_equal(sqlite3_prepare_v2(store_db(st), "SELECT id, sz FROM chunks_fts_docsize",
                                        -1, &s, NULL), SQLITE_OK);
    size_t n = 0;
    while (sqlite3_step(s) == SQLITE_ROW) {
        /* heading and body token counts, SQLite varints (< 2^14 here) */
        const unsigned char *sz = sqlite3_column_blob(s, 1);
        int bytes = sqlite3_column_bytes(s, 1), cols = 0;
        int64_t want = 0;
        for (int i = 0; i < bytes; i++, cols++) {
            int64_t v = sz[i] & 0x7f;
            if (sz[i] & 0x80)
                v = (v << 7) | (sz[++i] & 0x7f);
            want += v;
        }
        assert_int_equal(cols, 2);
        int64_t len = -1;
        trove_err rc = TROVE_OK;
        assert_int_equal(store_nmap_chunk_len(m, sqlite3_column_int64(s, 0), &len, &rc), 1);
        assert_int_equal(len, want);
        n++;
    }
    sqlite3_finalize(s);
    assert_true(n >= N_NOTES);
    int64_t len;
    trove_err rc = TROVE_OK;
    assert_int_equal(store_nmap_chunk_len(m, 1 << 20, &len, &rc), 0);   /* no such chunk */
    store_nmap_reader_free(m);
}

static void test_rank_is_bm25(void **state)
{
    (void)state;
    assert_int_equal(store_rank_ready(st), TROVE_OK);
    for (int mapped = 0; mapped < 2; mapped++)
        for (size_t q = 0; q < N_QUERIES; q++) {
            rows want = run_rows(bm25_sql, queries[q]);
            store_rank r = {.nmap = mapped ? store_nmap_reader_new(st) : NULL,
                            .weight = {2.0, 1.0}};
            store_rank_use(st, &r);
            rows got = run_rows(rank_sql, queries[q]);
            store_rank_use(st, NULL);
            assert_int_equal(r.rc, TROVE_OK);
            assert_true(want.n > 0);
            assert_int_equal(got.n, want.n);
            for (size_t i = 0; i < want.n; i++) {
                assert_int_equal(got.id[i], want.id[i]);
                /* the same bits, not merely close */
                assert_memory_equal(&got.score[i], &want.score[i], sizeof(double));
            }
            /* each row's score within the sum of its query's bounds; one
             * phrase's rows within that phrase's bound */
            double all = 0;
            for (int i = 0; i < r.n_phrase; i++)
                all += store_rank_bound(&r, i);
            for (size_t i = 0; i < got.n; i++) {
                assert_true(got.score[i] > 0);
                assert_true(got.score[i] < all);
                if (r.n_phrase == 1)
                    assert_true(got.score[i] < store_rank_bound(&r, 0));
            }
            store_nmap_reader_free(r.nmap);
            store_rank_free(&r);
            rows_free(&want);
            rows_free(&got);
        }
    /* without a state: an error, not a score */
    sqlite3_stmt *s;
    assert_int_equal(sqlite3_prepare_v2(store_db(st), rank_sql, -1, &s, NULL), SQLITE_OK);
    sqlite3_bind_text(s, 1, "\"mango\"", -1, SQLITE_STATIC);
    assert_int_equal(sqlite3_step(s), SQLITE_ERROR);
    sqlite3_finalize(s);
}

/* The last n phrases scored: a restriction in front changes no score. */
/* store_rank_rows: every row of an OR-shaped query, with trove_rank()'s
 * score to the bit, and the same statistics, from the phrases' walks. */
/* Every wanted row among r's rows, with the same score bits. */
static void assert_scores_are(const store_rank *r, const rows *want)
{
    for (size_t i = 0; i < want->n; i++) {
        size_t k = 0;
        while (k < r->n_rows && r->row_id[k] != want->id[i])
            k++;
        assert_true(k < r->n_rows);
        assert_memory_equal(&r->row_score[k], &want->score[i], sizeof(double));
    }
}

static void test_rank_rows_are_the_query(void **state)
{
    (void)state;
    assert_int_equal(store_rank_ready(st), TROVE_OK);
    for (int mapped = 0; mapped < 2; mapped++)
        for (size_t q = 0; q < N_QUERIES; q++) {
            if (strstr(queries[q], " NOT "))
                continue;   /* not the shape it answers */
            store_rank want_r = {.nmap = mapped ? store_nmap_reader_new(st) : NULL,
                                 .weight = {2.0, 1.0}};
            store_rank_use(st, &want_r);
            rows want = run_rows(rank_sql, queries[q]);
            store_rank_use(st, NULL);
            store_rank r = {.nmap = want_r.nmap, .weight = {2.0, 1.0}};
            assert_int_equal(store_rank_rows(st, STORE_RANK_CHUNKS, queries[q], &r), TROVE_OK);
            assert_true(r.have);
            assert_int_equal(r.n_phrase, want_r.n_phrase);
            for (int i = 0; i < r.n_phrase; i++) {
                assert_int_equal(r.hits[i], want_r.hits[i]);
                assert_memory_equal(&r.idf[i], &want_r.idf[i], sizeof(double));
            }
            assert_true(want.n > 0);
            assert_int_equal(r.n_rows, want.n);
            assert_scores_are(&r, &want);
            store_nmap_reader_free(want_r.nmap);
            store_rank_free(&want_r);
            store_rank_free(&r);
            rows_free(&want);
        }
    /* titles_fts: -bm25(titles_fts, 3.0, 2.0, 1.0)'s bits */
    size_t titled = 0;
    for (size_t q = 0; q < N_QUERIES; q++) {
        if (strstr(queries[q], " NOT "))
            continue;
        rows want = run_rows("SELECT rowid, -bm25(titles_fts, 3.0, 2.0, 1.0) FROM titles_fts"
                             " WHERE titles_fts MATCH ?1 ORDER BY rowid", queries[q]);
        store_rank r = {.weight = {3.0, 2.0}};
        assert_int_equal(store_rank_rows(st, STORE_RANK_TITLES, queries[q], &r), TROVE_OK);
        assert_int_equal(r.n_rows, want.n);
        assert_scores_are(&r, &want);
        titled += want.n;
        store_rank_free(&r);
        rows_free(&want);
    }
    assert_true(titled > 0);
    /* no row: none, and no statistics needed */
    store_rank r = {.weight = {2.0, 1.0}};
    assert_int_equal(store_rank_rows(st, STORE_RANK_CHUNKS, "\"nosuchfruit\"", &r), TROVE_OK);
    assert_int_equal(r.n_rows, 0);
    store_rank_free(&r);
}

static void test_rank_restricted(void **state)
{
    (void)state;
    const char *fts = "\"mango\" OR \"kiwi\" OR \"quince\"";
    rows want = run_rows(bm25_sql, fts);
    store_rank r = {.weight = {2.0, 1.0}, .n_query = 3};
    store_rank_use(st, &r);
    rows got = run_rows(rank_sql, "(\"quince\" OR \"kiwi\") AND (\"mango\" OR \"kiwi\" OR \"quince\")");
    store_rank_use(st, NULL);
    assert_int_equal(r.n_phrase, 3);
    size_t j = 0;
    for (size_t i = 0; i < got.n; i++) {
        while (j < want.n && want.id[j] < got.id[i])
            j++;
        assert_true(j < want.n);
        assert_int_equal(want.id[j], got.id[i]);
        assert_memory_equal(&got.score[i], &want.score[j], sizeof(double));
    }
    assert_true(got.n > 0 && got.n < want.n);
    store_rank_free(&r);
    rows_free(&want);
    rows_free(&got);
}

typedef struct best {
    int64_t doc, chunk;
    double score;
} best;

static int cmp_row(const void *a, const void *b)
{
    const best *x = a, *y = b;
    if (x->score != y->score)
        return x->score < y->score ? 1 : -1;
    return x->chunk < y->chunk ? -1 : x->chunk > y->chunk;
}

/* bm25()'s order walked to `depth` notes: each note's best chunk. */
static size_t brute_walk(const char *fts, size_t depth, best *out)
{
    rows all = run_rows(bm25_sql, fts);
    best *b = xcalloc(all.n ? all.n : 1, sizeof *b);
    for (size_t i = 0; i < all.n; i++)
        b[i] = (best){0, all.id[i], all.score[i]};
    qsort(b, all.n, sizeof *b, cmp_row);
    size_t n = 0;
    sqlite3_stmt *s;
    assert_int_equal(sqlite3_prepare_v2(store_db(st), "SELECT doc_id FROM chunks WHERE id = ?1",
                                        -1, &s, NULL), SQLITE_OK);
    for (size_t i = 0; i < all.n && i < 4 * depth && n < depth; i++) {
        sqlite3_reset(s);
        sqlite3_bind_int64(s, 1, b[i].chunk);
        assert_int_equal(sqlite3_step(s), SQLITE_ROW);
        int64_t doc = sqlite3_column_int64(s, 0);
        size_t k = 0;
        while (k < n && out[k].doc != doc)
            k++;
        if (k == n)
            out[n++] = (best){doc, b[i].chunk, b[i].score};
    }
    sqlite3_finalize(s);
    free(b);
    rows_free(&all);
    return n;
}

static void test_list_leaves_out_no_note(void **state)
{
    (void)state;
    const size_t depths[] = {1, 5, 10, 40};
    best want[40];
    for (size_t q = 0; q < N_QUERIES; q++)
        for (size_t d = 0; d < sizeof depths / sizeof *depths; d++) {
            size_t n = brute_walk(queries[q], depths[d], want);
            search_filter f = {.nmap = store_nmap_reader_new(st)};
            cand_set cs = {0};
            assert_int_equal(store_read_begin(st), TROVE_OK);
            assert_int_equal(search_bm25_list(st, queries[q], &f, depths[d], &cs,
                                              SEARCH_CH_BM25, -1), TROVE_OK);
            store_read_end(st);
            size_t got = 0;
            for (size_t i = 0; i < cs.n; i++)
                got += cs.items[i].has_bm25;
            assert_int_equal(got, n);
            for (size_t i = 0; i < n; i++) {
                cand *c = search_cand_get(&cs, want[i].doc, 0);
                assert_non_null(c);
                assert_true(c->has_bm25);
                assert_int_equal(c->chunk_id, want[i].chunk);
                assert_memory_equal(&c->ch[SEARCH_CH_BM25].score, &want[i].score,
                                    sizeof(double));
            }
            free(cs.items);
            free(cs.slots);
            store_nmap_reader_free(f.nmap);
        }
}

/* The rows a cap keeps (run_best: a buffer of twice the cap, cut to its
 * best by selection) are the best `cap` of the match, in the order of a
 * full sort, for caps that cut it many times over and none. */
static void test_keep_best_caps(void **state)
{
    (void)state;
    static const char plain[] = "SELECT rowid, -bm25(chunks_fts, 2.0, 1.0) FROM chunks_fts"
                                " WHERE chunks_fts MATCH ?1";
    const size_t caps[] = {1, 2, 3, 7, 64, 100000};
    for (size_t q = 0; q < N_QUERIES; q++) {
        rows all = run_rows(bm25_sql, queries[q]);
        best *b = xcalloc(all.n ? all.n : 1, sizeof *b);
        for (size_t i = 0; i < all.n; i++)
            b[i] = (best){0, all.id[i], all.score[i]};
        qsort(b, all.n, sizeof *b, cmp_row);
        for (size_t c = 0; c < sizeof caps / sizeof *caps; c++) {
            topk top = {.cap = caps[c]};
            size_t matches = 0;
            assert_int_equal(search_keep_best_plain(st, plain, queries[q], &top, &matches),
                             TROVE_OK);
            assert_int_equal(matches, all.n);
            size_t want = all.n < caps[c] ? all.n : caps[c];
            assert_int_equal(top.n, want);
            scored row;
            for (size_t i = 0; i < want; i++) {
                assert_true(search_topk_get(&top, i, &row));
                assert_int_equal(row.chunk_id, b[i].chunk);
                assert_memory_equal(&row.score, &b[i].score, sizeof(double));
            }
            assert_false(search_topk_get(&top, want, &row));
            free(top.h);
        }
        free(b);
        rows_free(&all);
    }
}

/* store_rank_rows with a cap (r.top): the best `top` rows of what it
 * keeps are the best `top` of bm25()'s rows (score, then id: ties
 * included), to the bit, for caps that prune and caps that keep all, on
 * queries of 1-5 phrases drawn at random (words of every frequency, a
 * prefix, a two-word phrase), over chunks and titles. */
static const char *const prune_units[] = {"\"mango\"", "\"kiwi\"", "\"guava\"", "\"lychee\"",
                                          "\"durian\"", "\"quince\"", "\"gua\" *",
                                          "\"mango kiwi\"", "\"table\"", "\"river\""};

static void assert_top_is(const store_rank *r, rows *all, size_t top)
{
    best *want = xcalloc(all->n ? all->n : 1, sizeof *want);
    for (size_t i = 0; i < all->n; i++)
        want[i] = (best){0, all->id[i], all->score[i]};
    qsort(want, all->n, sizeof *want, cmp_row);
    best *got = xcalloc(r->n_rows ? r->n_rows : 1, sizeof *got);
    for (size_t i = 0; i < r->n_rows; i++)
        got[i] = (best){0, r->row_id[i], r->row_score[i]};
    qsort(got, r->n_rows, sizeof *got, cmp_row);
    size_t n = all->n < top ? all->n : top;
    assert_true(r->n_rows >= n);
    assert_true(r->n_rows <= all->n);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(got[i].chunk, want[i].chunk);
        assert_memory_equal(&got[i].score, &want[i].score, sizeof(double));
    }
    if (!r->cut)
        assert_int_equal(r->n_rows, all->n);
    free(want);
    free(got);
}

static void test_rank_rows_top(void **state)
{
    (void)state;
    assert_int_equal(store_rank_ready(st), TROVE_OK);
    const size_t tops[] = {1, 2, 3, 10, 64, 400, 100000};
    tu_rng rng = {0x2545f4914f6cdd1dull};
    tbuf fts = {0};
    size_t cut = 0, tried = 0;
    for (int round = 0; round < 32; round++) {
        /* 1-5 distinct units, in a random order (one: no count, its
         * lengths read late all the same) */
        size_t n_units = sizeof prune_units / sizeof *prune_units, pick[5], n = 0;
        size_t want_n = 1 + tu_rng_u32(&rng) % 5;
        while (n < want_n) {
            size_t u = tu_rng_u32(&rng) % n_units, k = 0;
            while (k < n && pick[k] != u)
                k++;
            if (k == n)
                pick[n++] = u;
        }
        tbuf_reset(&fts);
        for (size_t k = 0; k < n; k++)
            tbuf_printf(&fts, "%s%s", k ? " OR " : "", prune_units[pick[k]]);
        for (int titles = 0; titles < 2; titles++) {
            rows all = run_rows(titles ? "SELECT rowid, -bm25(titles_fts, 3.0, 2.0, 1.0) FROM"
                                         " titles_fts WHERE titles_fts MATCH ?1 ORDER BY rowid"
                                       : bm25_sql, tbuf_cstr(&fts));
            for (int mapped = 0; mapped < 2 - titles; mapped++)
                for (size_t t = 0; t < sizeof tops / sizeof *tops; t++) {
                    store_rank r = {.nmap = mapped ? store_nmap_reader_new(st) : NULL,
                                    .weight = {titles ? 3.0 : 2.0, titles ? 2.0 : 1.0},
                                    .top = tops[t], .prune_small = 1};
                    assert_int_equal(store_rank_rows(st, titles ? STORE_RANK_TITLES
                                                                : STORE_RANK_CHUNKS,
                                                     tbuf_cstr(&fts), &r), TROVE_OK);
                    assert_true(r.have);
                    assert_int_equal(r.n_phrase, (int)n);
                    assert_top_is(&r, &all, tops[t]);
                    cut += r.cut;
                    tried++;
                    store_nmap_reader_free(r.nmap);
                    store_rank_free(&r);
                }
            rows_free(&all);
        }
    }
    tbuf_free(&fts);
    /* the pruning did leave rows out, and not always */
    assert_true(cut > tried / 4);
    assert_true(cut < tried);
}

/* FTS5's totals count the rows count(*) counts. */
static void test_row_count(void **state)
{
    (void)state;
    const char *sql[] = {"SELECT count(*) FROM chunks", "SELECT count(*) FROM docs"};
    for (int t = 0; t < 2; t++) {
        sqlite3_stmt *s;
        assert_int_equal(sqlite3_prepare_v2(store_db(st), sql[t], -1, &s, NULL), SQLITE_OK);
        assert_int_equal(sqlite3_step(s), SQLITE_ROW);
        double want = sqlite3_column_double(s, 0), got = -1;
        sqlite3_finalize(s);
        assert_int_equal(store_rank_row_count(st, t ? STORE_RANK_TITLES : STORE_RANK_CHUNKS, &got),
                         TROVE_OK);
        assert_true(want > N_NOTES - 1);
        assert_true(got == want);
    }
}

/* The rows of one-token phrases, kept by store_rank_rows for the read
 * transaction: what count(*) of `"word"` gives, for a word as typed and
 * as its token; nothing for a prefix or a two-word phrase, nor after. */
static void test_rank_hits(void **state)
{
    (void)state;
    const char *fts = "\"Mangos\" OR \"kiwi\" OR \"gua\" * OR \"durian quince\"";
    assert_int_equal(store_read_begin(st), TROVE_OK);
    store_rank r = {.weight = {2.0, 1.0}, .top = 10, .prune_small = 1};
    assert_int_equal(store_rank_rows(st, STORE_RANK_CHUNKS, fts, &r), TROVE_OK);
    const char *words[] = {"mango", "Mangos", "kiwi"};
    for (size_t i = 0; i < 3; i++) {
        char q[32];
        snprintf(q, sizeof q, "\"%s\"", words[i]);
        rows all = run_rows(bm25_sql, q);
        int64_t hits = -1;
        assert_true(store_rank_hits(st, words[i], NULL, &hits));
        assert_int_equal(hits, all.n);
        rows_free(&all);
    }
    int64_t hits;
    assert_false(store_rank_hits(st, "gua", NULL, &hits));
    assert_false(store_rank_hits(st, "durian", NULL, &hits));
    assert_false(store_rank_hits(st, "lychee", NULL, &hits));
    store_read_end(st);
    assert_false(store_rank_hits(st, "kiwi", NULL, &hits));
    store_rank_free(&r);
}

static void test_fts_phrases(void **state)
{
    (void)state;
    query_span sp[8];
    size_t neg;
    const char *a = "\"a\"\"b\" OR \"c\" * OR \"d e\"";
    assert_int_equal(query_fts_phrases(a, sp, 8, &neg), 3);
    assert_int_equal(neg, 0);
    assert_int_equal(sp[0].off, 0);
    assert_int_equal(sp[0].len, 6);
    assert_int_equal(sp[1].off, 10);
    assert_int_equal(sp[1].len, 5);
    assert_int_equal(sp[2].len, 5);
    assert_int_equal(query_fts_phrases("(\"x\" OR \"y\") NOT (\"z\" OR \"w\" *)", sp, 8, &neg), 2);
    assert_int_equal(neg, 2);
    assert_int_equal(sp[1].off, 8);
    /* other shapes, cut-off text, too many: none */
    const char *bad[] = {"", "x", "\"a", "\"a\" AND \"b\"", "\"a\" OR", "(\"a\") NOT \"b\"",
                         "(\"a\") NOT (\"b\"", "(\"a\")", "\"a\" OR \"b\" OR \"c\" OR \"d\" OR"
                         " \"e\" OR \"f\" OR \"g\" OR \"h\" OR \"i\""};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        assert_int_equal(query_fts_phrases(bad[i], sp, 8, &neg), 0);
    assert_int_equal(query_fts_phrases(NULL, sp, 8, &neg), 0);
    /* what query_parse builds reads back */
    query_parsed q;
    query_parse("rotate -draft \"api keys\" key*", &q);
    assert_int_equal(query_fts_phrases(q.fts, sp, 8, &neg), 3);
    assert_int_equal(neg, 1);
    query_free(&q);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lengths_mapped),
        cmocka_unit_test(test_rank_is_bm25),
        cmocka_unit_test(test_rank_rows_are_the_query),
        cmocka_unit_test(test_rank_restricted),
        cmocka_unit_test(test_list_leaves_out_no_note),
        cmocka_unit_test(test_keep_best_caps),
        cmocka_unit_test(test_rank_rows_top),
        cmocka_unit_test(test_row_count),
        cmocka_unit_test(test_rank_hits),
        cmocka_unit_test(test_fts_phrases),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
