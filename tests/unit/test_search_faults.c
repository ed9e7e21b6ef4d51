/* search under SQL failures: a statement that fails part way through is an
 * error of the search, never "no more rows" (fewer results). Each case
 * makes SQLite itself fail the statements of one channel: a progress
 * handler, called every VM instruction, interrupts (SQLITE_INTERRUPT) while
 * a statement whose SQL holds the case's marker is running. Only that
 * statement fails; the search must then fail too, with SQLite's message.
 * The vector cases use the GloVe test model (scripts/glove-model.sh) and
 * are skipped without it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "index/vembed.h"
#include "search/search.h"
#include "store/store.h"
#include "testutil.h"

/* search_run's options as every front end starts them: the api's defaults. */
static void default_opts(search_opts *o)
{
    api_search_opts ao;
    api_search_opts_init(&ao);
    api_search_opts_defaults(&ao);
    *o = ao.search;
}

static char dir[64];
static store *st;
static config cfg;
static embed_model *model;   /* NULL: no test model here */

static void add(int64_t coll, const char *name, const char *path, const char *text)
{
    chunk_opts co = {40, 8};
    tu_index_note(st, coll, name, path, text, &co);
}

/* The GloVe model's folder, or "" when it cannot be built here. */
static void glove_dir(char *out, size_t cap)
{
    out[0] = '\0';
    const char *src = getenv("TROVE_SOURCE_DIR");
    if (!src)
        return;
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "bash '%s/scripts/glove-model.sh' 2>/dev/null", src);
    FILE *p = popen(cmd, "r");
    if (!p)
        return;
    if (!fgets(out, (int)cap, p))
        out[0] = '\0';
    pclose(p);
    out[strcspn(out, "\n")] = '\0';
}

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/trove-test-faults.XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    char path[128];
    snprintf(path, sizeof path, "%s/index.db", dir);
    int64_t a;
    if (store_open(path, 0, &st) || store_collection_ensure(st, "notes", "/n", &a) ||
        store_begin(st))
        return -1;
    add(a, "notes", "bread.md", "---\ntags: [baking]\n---\n# Sourdough Bread\n\n"
        "Sourdough bread needs flour, water and a long fermentation of the dough.\n");
    add(a, "notes", "pizza.md", "---\ntags: [baking]\n---\n# Pizza\n\n"
        "A cold fermentation of the pizza dough makes a better crust. See [[bread]].\n");
    add(a, "notes", "menu.md", "# Menu\n\nFriday: [[pizza]] and fresh bread.\n");
    /* a Chinese note the translation channel finds for "bread" (面包, a
     * word: "fermentation" has only the character 酵, found as a prefix of
     * the bigrams of a test run without the segmenter's dictionary) */
    add(a, "notes", "mianbao.md", "# 面包\n\n做面包的面团需要长时间发酵，发酵让面包更香。\n");
    if (store_links_resolve(st) || store_commit(st))
        return -1;
    char mdir[1024];
    glove_dir(mdir, sizeof mdir);
    if (mdir[0]) {
        embed_opts eo = {.threads = 1};
        trove_err e;
        model = embed_open(mdir, &eo, &e);
        vembed_opts vo = {0};
        vembed_stats vs;
        if (model && vembed_run(st, model, &vo, &vs) != TROVE_OK)
            return -1;
    }
    memset(&cfg, 0, sizeof cfg);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    store_close(st);
    embed_close(model);
    return tu_rm_rf(dir);
}

/* ---- the fault: interrupt statements whose SQL holds `marker` ---- */

static const char *marker;
static int fired;

static int interrupt_marked(void *ctx)
{
    sqlite3 *db = ctx;
    for (sqlite3_stmt *s = sqlite3_next_stmt(db, NULL); s; s = sqlite3_next_stmt(db, s)) {
        const char *sql = sqlite3_sql(s);
        /* marker "": a blob handle's statement, which has no SQL text */
        if (sqlite3_stmt_busy(s) && (sql ? *marker && strstr(sql, marker) : !*marker)) {
            fired = 1;
            return 1;
        }
    }
    return 0;
}

typedef struct fault_case {
    const char *channel;
    const char *query;
    const char *marker;
    int vector;            /* needs the model */
    int with_tag;          /* filter by tag */
    int weights_title;     /* title channel on */
    int no_links_map;      /* note_map kind 3 deleted first: the docs rows answer */
} fault_case;

/* 0 when the search failed as it should; else 1, saying what happened
 * (every case runs, so one run lists every channel that swallows errors). */
static int run_case(const fault_case *fc)
{
    search_opts o;
    default_opts(&o);
    o.query = fc->query;
    o.limit = 10;
    o.with_snippet = 1;
    o.weights[SEARCH_CH_TITLE] = fc->weights_title ? 1.5 : 0;
    const char *tags[] = {"baking"};
    if (fc->with_tag) {
        o.tags = tags;
        o.n_tags = 1;
    }
    if (fc->vector)
        o.model = model;
    if (fc->no_links_map)
        assert_int_equal(sqlite3_exec(store_db(st), "DELETE FROM note_map WHERE id % 16 = 3",
                                      NULL, NULL, NULL), SQLITE_OK);
    /* Unfaulted, the query finds notes (so the marked statement runs). */
    search_results r;
    assert_int_equal(search_run(st, &cfg, &o, &r), TROVE_OK);
    assert_true(r.n > 0);
    search_results_free(&r);

    marker = fc->marker;
    fired = 0;
    sqlite3_progress_handler(store_db(st), 1, interrupt_marked, store_db(st));
    trove_err rc = search_run(st, &cfg, &o, &r);
    sqlite3_progress_handler(store_db(st), 0, NULL, NULL);
    if (!fired) {
        print_error("%s: no statement holding \"%s\" ran\n", fc->channel, fc->marker);
        if (rc == TROVE_OK)
            search_results_free(&r);
        return 1;
    }
    if (rc == TROVE_OK) {
        print_error("%s: the search succeeded with %zu results though \"%s\" failed\n",
                    fc->channel, r.n, fc->marker);
        search_results_free(&r);
        return 1;
    }
    assert_int_equal(rc, TROVE_ESQL);
    assert_non_null(strstr(trove_errmsg(), "interrupted"));
    assert_int_equal(r.n, 0);
    assert_null(r.items);
    /* and the store is usable again */
    assert_int_equal(search_run(st, &cfg, &o, &r), TROVE_OK);
    assert_true(r.n > 0);
    search_results_free(&r);
    return 0;
}

static const fault_case keyword_cases[] = {
    {"bm25 rows", "fermentation", "trove_rank_rows(chunks_fts)", 0, 0, 0, 0},
    {"bm25 ranking", "fermentation -pizza", "trove_rank(chunks_fts)", 0, 0, 0, 0},
    {"bm25 chunk owners", "bread", "SELECT c.doc_id, d.lang FROM chunks c", 0, 0, 0, 0},
    {"translation held", "bread", "MATCH ?1 LIMIT ?2)", 0, 0, 0, 0},
    {"translation coverage", "bread", "MATCH ?1 AND rowid = ?2", 0, 0, 0, 0},
    {"title names", "pizza", "c2 FROM titles_fts_content WHERE id = ?", 0, 0, 1, 0},
    {"title rest of query", "pizza dough", "AND c.seq < 8", 0, 0, 1, 0},
    /* the note map's rows are read by a blob handle (store_nmap.c) */
    {"note map", "fermentation", "", 0, 0, 0, 0},
    {"filters", "fermentation", "FROM tags t WHERE t.doc_id", 0, 1, 0, 0},
    {"result row", "fermentation", "LEFT JOIN chunks c ON c.id", 0, 0, 0, 0},
    {"snippet", "fermentation", "SELECT c1 FROM chunks_fts_content WHERE id = ?", 0, 0, 0, 0},
    {"alias pairs", "fermentation", "SELECT 1 FROM names LIMIT 1", 0, 0, 0, 0},
    {"result tags", "fermentation", "SELECT tag FROM tags WHERE doc_id", 0, 0, 0, 0},
    /* last: the in-degrees' map rows go, the docs rows answer from here on */
    {"link prior", "fermentation", "SELECT in_degree, lang FROM docs", 0, 0, 0, 1},
};

static const fault_case vector_cases[] = {
    {"vector segments", "bread", "FROM vec_segs WHERE model_id", 1, 0, 0, 0},
    {"vector filter", "bread", "SELECT d.id FROM docs d WHERE 1", 1, 1, 0, 0},
    {"vector filter size", "bread", "coalesce(max(id), 0) FROM docs", 1, 1, 0, 0},
    {"vector coverage", "bread", "SELECT name FROM collections ORDER BY name", 1, 0, 0, 0},
};

static void test_keyword_channels_fail_loudly(void **state)
{
    (void)state;
    int failed = 0;
    for (size_t i = 0; i < sizeof keyword_cases / sizeof *keyword_cases; i++)
        failed += run_case(&keyword_cases[i]);
    assert_int_equal(failed, 0);
}

static void test_vector_channel_fails_loudly(void **state)
{
    (void)state;
    if (!model)
        skip();
    int failed = 0;
    for (size_t i = 0; i < sizeof vector_cases / sizeof *vector_cases; i++)
        failed += run_case(&vector_cases[i]);
    assert_int_equal(failed, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_keyword_channels_fail_loudly),
        cmocka_unit_test(test_vector_channel_fails_loudly),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
