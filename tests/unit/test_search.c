/* search: channels, weighted RRF normalisation, filters, anchoring chunk. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "chunk/chunk.h"
#include "cjk/seg.h"
#include "md/md.h"
#include "api/api.h"
#include "search/lang_pref.h"
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
static seg *zh;   /* the Chinese segmenter, when the build has its dictionary */

static int zh_segment(void *ud, const char *run, size_t len, int flags, void *ectx,
                      tok_emit_fn emit)
{
    return seg_cut(ud, run, len, flags, ectx, emit);
}

static void add(int64_t coll, const char *name, const char *path, const char *text)
{
    chunk_opts co = {40, 8};   /* small chunks: several per note */
    tu_index_note(st, coll, name, path, text, &co);
}

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/trove-test-search.XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    char path[128];
    snprintf(path, sizeof path, "%s/index.db", dir);
    int64_t a, b;
    if (store_open(path, 0, &st) || store_collection_ensure(st, "notes", "/n", &a) ||
        store_collection_ensure(st, "work", "/w", &b) || store_begin(st))
        return -1;
    add(a, "notes", "cooking/sourdough.md",
        "---\ntitle: Sourdough Bread\naliases: [levain loaf]\ntags: [baking]\n---\n"
        "# Sourdough Bread\n\nFlour, water, salt.\n\n## Bulk fermentation\n\n"
        "Bulk fermentation takes four to six hours at room temperature. Watch the dough, "
        "not the clock: it should grow by half and feel airy.\n");
    add(a, "notes", "cooking/pizza.md",
        "# Pizza\n\nA cold fermentation of the dough for two days makes a better crust. "
        "Links to [[sourdough]].\n");
    add(a, "notes", "index.md", "# Index\n\n[[Levain Loaf]] and [[pizza]] #baking\n");
    /* pizza becomes the most linked note */
    add(a, "notes", "menu.md", "# Menu\n\nFriday: [[pizza]]\n");
    add(a, "notes", "party.md", "# Party\n\nOrder [[pizza]] for twelve.\n");
    add(b, "work", "meetings/retro.md",
        "# Retro\n\nThe launch slipped because fermentation of ideas took too long.\n");
    /* Words of their own, for the ranking tests below. */
    int64_t c;
    if (store_collection_ensure(st, "lab", "/l", &c))
        return -1;
    add(c, "lab", "strong.md", "# Strong\n\nThe quokka, the wombat and the numbat live here.\n");
    add(c, "lab", "linked.md", "# Linked\n\nOnly the quokka and the wombat.\n");
    add(c, "lab", "twin-a.md", "# Twin A\n\nThe platypus and the echidna lay eggs.\n");
    add(c, "lab", "twin-b.md", "# Twin B\n\nThe platypus and the echidna lay eggs.\n");
    add(c, "lab", "hub.md", "# Hub\n\nSee [[linked]] and [[twin-b]].\n");
    /* the German page comes first in row order and matches more densely */
    add(c, "lab", "de/zip.md", "# zip\n\nErstelle ein zip Archiv: das zip Archiv ist klein.\n");
    add(c, "lab", "en/zip.md", "# zip\n\nPack the files of the current folder into a zip "
        "archive with the zip tool that most systems have.\n");
    /* A name inside a question: the note about the question's other words
     * gets the title vote, the one that only shares the name does not. */
    add(c, "lab", "axolotl.md", "# Axolotl\n\nA salamander that keeps its gills.\n");
    add(c, "lab", "tank.md", "# Tank\n\nA tank needs a filter when an axolotl lives in it.\n");
    /* Chinese: equal word evidence (the same words, as many, in notes of
     * one length); only the first holds them in the query's order. */
    const char *dict = getenv("TROVE_ZH_DICT");
    if (dict && access(dict, R_OK) == 0 && seg_open(dict, NULL, &zh) == TROVE_OK) {
        tok_segmenter ts = {zh, zh_segment, NULL, NULL};
        tok_set_cjk_segmenter(&ts);
        int64_t z;
        if (store_collection_ensure(st, "zh", "/z", &z))
            return -1;
        add(z, "zh", "scattered.md", "# 乙\n\n花园在城市，中心是湖。\n");
        add(z, "zh", "in-order.md", "# 甲\n\n城市花园中心今年开放了。\n");
    }
    if (store_links_resolve(st) || store_commit(st))
        return -1;
    memset(&cfg, 0, sizeof cfg);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    store_close(st);
    tok_set_cjk_segmenter(NULL);
    seg_free(zh);
    return tu_rm_rf(dir);
}

static search_results run(search_opts *o)
{
    search_results r;
    assert_int_equal(search_run(st, &cfg, o, &r), TROVE_OK);
    for (size_t i = 0; i < r.n; i++) {
        assert_true(r.items[i].score > 0 && r.items[i].score <= 1.0 + 1e-9);
        if (i)
            assert_true(r.items[i].score <= r.items[i - 1].score);
    }
    return r;
}

static void test_exact_title_first_with_full_score(void **state)
{
    (void)state;
    search_opts o;
    default_opts(&o);
    o.query = "sourdough bread";
    search_results r = run(&o);
    assert_true(r.n >= 1);
    assert_string_equal(r.items[0].path, "cooking/sourdough.md");
    assert_int_equal(r.items[0].channel[SEARCH_CH_BM25].rank, 1);
    assert_int_equal(r.items[0].channel[SEARCH_CH_TITLE].rank, 1);
    assert_true(r.items[0].channel[SEARCH_CH_TITLE].score == 1.0);   /* exact match */
    assert_true(r.items[0].prior > 1.0);                             /* linked */
    assert_true(fabs(r.items[0].score - 1.0) < 1e-9);                /* first everywhere */
    search_results_free(&r);

    /* stopwords don't dilute how much of the question a title covers */
    o.query = "how do I bake a sourdough bread";
    r = run(&o);
    assert_string_equal(r.items[0].path, "cooking/sourdough.md");
    assert_int_equal(r.items[0].channel[SEARCH_CH_TITLE].rank, 1);
    search_results_free(&r);

    o.query = "[[Levain Loaf]]";   /* alias, wikilink brackets */
    r = run(&o);
    assert_string_equal(r.items[0].path, "cooking/sourdough.md");
    search_results_free(&r);
}

static void test_best_chunk_anchors_the_result(void **state)
{
    (void)state;
    search_opts o;
    default_opts(&o);
    /* pizza.md matches one word and is linked; sourdough.md matches three:
     * the link must not lift the weak match over the strong one */
    o.query = "how long does bulk fermentation take";
    search_results r = run(&o);
    assert_string_equal(r.items[0].path, "cooking/sourdough.md");
    assert_int_equal(r.items[0].n_heading_path, 2);
    assert_string_equal(r.items[0].heading_path[1], "Bulk fermentation");
    assert_true(r.items[0].line_start >= 9);   /* past the frontmatter and intro */
    assert_non_null(strstr(r.items[0].snippet, "\x02"));
    search_results_free(&r);
}

static void test_filters(void **state)
{
    (void)state;
    search_opts o;
    default_opts(&o);
    o.query = "fermentation";
    search_results r = run(&o);
    assert_int_equal(r.n, 3);
    search_results_free(&r);

    const char *work[] = {"work"};
    o.collections = work;
    o.n_collections = 1;
    r = run(&o);
    assert_int_equal(r.n, 1);
    assert_string_equal(r.items[0].collection, "work");
    search_results_free(&r);

    o.collections = NULL;
    o.n_collections = 0;
    o.folder = "/cooking/";
    r = run(&o);
    assert_int_equal(r.n, 2);
    search_results_free(&r);

    const char *tags[] = {"#Baking"};
    o.folder = NULL;
    o.tags = tags;
    o.n_tags = 1;
    r = run(&o);
    assert_int_equal(r.n, 1);
    assert_string_equal(r.items[0].path, "cooking/sourdough.md");
    search_results_free(&r);

    o.tags = NULL;
    o.n_tags = 0;
    o.limit = 1;
    r = run(&o);
    assert_int_equal(r.n, 1);
    search_results_free(&r);

    o.limit = 10;
    o.min_score = 2.0;   /* above any normalised score */
    r = run(&o);
    assert_int_equal(r.n, 0);
    search_results_free(&r);
}

static void test_exclusion_and_empty(void **state)
{
    (void)state;
    search_opts o;
    default_opts(&o);
    o.query = "fermentation -dough";
    search_results r = run(&o);
    assert_int_equal(r.n, 1);
    assert_string_equal(r.items[0].path, "meetings/retro.md");
    search_results_free(&r);
    static const char *const nothing[] = {"", "   ", "+++", "*", "\"", "xyzzy"};
    for (size_t i = 0; i < sizeof nothing / sizeof *nothing; i++) {
        o.query = nothing[i];
        r = run(&o);
        assert_int_equal(r.n, 0);
        search_results_free(&r);
    }
}

static const search_result *find(const search_results *r, const char *path)
{
    for (size_t i = 0; i < r->n; i++)
        if (strcmp(r->items[i].path, path) == 0)
            return &r->items[i];
    fail_msg("%s not among the results", path);
    return NULL;
}

/* Equal channel scores share a rank, whatever the row order. */
static void test_ties_share_a_rank(void **state)
{
    (void)state;
    search_opts o;
    default_opts(&o);
    o.graph_weight = 0;   /* twin-b's link would break the bm25 tie */
    o.query = "platypus echidna";
    search_results r = run(&o);
    assert_int_equal(r.n, 2);
    assert_int_equal(r.items[0].channel[SEARCH_CH_BM25].rank, 1);
    assert_int_equal(r.items[1].channel[SEARCH_CH_BM25].rank, 1);
    assert_true(r.items[0].score == r.items[1].score);
    search_results_free(&r);

    /* both titles "zip" cover the query equally: one title rank */
    default_opts(&o);
    o.query = "create a zip archive";
    o.each_translation = 1;   /* de/zip.md and en/zip.md are one note otherwise */
    r = run(&o);
    const search_result *de = find(&r, "de/zip.md"), *en = find(&r, "en/zip.md");
    assert_int_equal(de->channel[SEARCH_CH_TITLE].rank, 1);
    assert_int_equal(en->channel[SEARCH_CH_TITLE].rank, 1);
    assert_true(de->channel[SEARCH_CH_TITLE].score == en->channel[SEARCH_CH_TITLE].score);
    search_results_free(&r);
}

/* In-degree is a prior on keyword evidence: it breaks near-ties and never
 * lifts a clearly weaker match. */
static void test_graph_prior(void **state)
{
    (void)state;
    search_opts o;
    default_opts(&o);
    /* linked.md matches two words of three and has one inbound link;
     * strong.md matches all three and has none */
    o.query = "quokka wombat numbat";
    search_results r = run(&o);
    assert_int_equal(r.n, 2);
    assert_string_equal(r.items[0].path, "strong.md");
    assert_string_equal(r.items[1].path, "linked.md");
    assert_int_equal(r.items[1].in_degree, 1);
    assert_true(r.items[1].prior > 1.0 && r.items[1].prior < 1.05);
    assert_true(r.items[0].prior == 1.0);
    search_results_free(&r);

    /* equal evidence: the linked twin first */
    o.query = "platypus echidna";
    r = run(&o);
    assert_int_equal(r.n, 2);
    assert_string_equal(r.items[0].path, "twin-b.md");
    assert_int_equal(r.items[0].channel[SEARCH_CH_BM25].rank, 1);
    assert_int_equal(r.items[1].channel[SEARCH_CH_BM25].rank, 2);
    search_results_free(&r);
}

/* Between notes in several languages the query's language comes first. */
static void test_query_language_preferred(void **state)
{
    (void)state;
    search_opts o;
    default_opts(&o);
    o.query = "create a zip archive";
    o.lang_bonus = 0;   /* without the preference the denser German page wins */
    o.each_translation = 1;
    search_results r = run(&o);
    assert_true(r.n >= 2);
    assert_string_equal(r.items[0].path, "de/zip.md");
    assert_string_equal(r.items[0].lang, "de");
    search_results_free(&r);

    default_opts(&o);
    o.query = "create a zip archive";
    o.each_translation = 1;
    r = run(&o);
    assert_string_equal(r.lang, "en");   /* "a" is English, French...: the results decide */
    assert_string_equal(r.items[0].path, "en/zip.md");
    assert_string_equal(r.items[0].lang, "en");
    assert_string_equal(r.items[1].path, "de/zip.md");
    search_results_free(&r);

    /* the two zip pages are one note in two language folders: one result,
     * in the query's language, the other copy listed */
    o.each_translation = 0;
    r = run(&o);
    assert_string_equal(r.items[0].path, "en/zip.md");
    assert_int_equal(r.items[0].n_also_in, 1);
    assert_string_equal(r.items[0].also_in[0].lang, "de");
    assert_string_equal(r.items[0].also_in[0].path, "de/zip.md");
    for (size_t i = 0; i < r.n; i++)
        assert_string_not_equal(r.items[i].path, "de/zip.md");
    search_results_free(&r);

    o.query = "erstelle ein zip Archiv";
    r = run(&o);
    assert_string_equal(r.lang, "de");
    assert_string_equal(r.items[0].path, "de/zip.md");
    assert_int_equal(r.items[0].n_also_in, 1);
    assert_string_equal(r.items[0].also_in[0].lang, "en");
    search_results_free(&r);

    /* --lang: German notes only, by folder or detected language */
    static const char *const de_only[] = {"de"};
    o.query = "zip";
    o.langs = de_only;
    o.n_langs = 1;
    r = run(&o);
    assert_true(r.n >= 1);
    for (size_t i = 0; i < r.n; i++)
        assert_string_equal(r.items[i].lang, "de");
    search_results_free(&r);
}

/* A name that is a third of the query votes only for a note that also
 * holds another word of the query. */
static void test_name_inside_question(void **state)
{
    (void)state;
    search_opts o;
    default_opts(&o);
    o.query = "axolotl tank filter";
    search_results r = run(&o);
    const search_result *tank = find(&r, "tank.md"), *axo = find(&r, "axolotl.md");
    assert_int_equal(tank->channel[SEARCH_CH_TITLE].rank, 1);
    assert_int_equal(axo->channel[SEARCH_CH_TITLE].rank, 0);
    assert_string_equal(r.items[0].path, "tank.md");
    search_results_free(&r);
}

/* Chinese queries also count the character bigrams of the best notes: of
 * two notes with the same words, the one holding them in the query's order
 * (城市花园中心) comes first, whatever the row order. */
static void test_chinese_bigram_view(void **state)
{
    (void)state;
    if (!zh) {
        print_message("no compiled dictionary: skipped\n");
        skip();
    }
    search_opts o;
    default_opts(&o);
    o.query = "城市花园中心";
    const char *coll[] = {"zh"};
    o.collections = coll;
    o.n_collections = 1;
    search_results r = run(&o);
    assert_int_equal(r.n, 2);
    assert_string_equal(r.items[0].path, "in-order.md");
    assert_string_equal(r.items[1].path, "scattered.md");
    assert_true(r.items[0].channel[SEARCH_CH_BM25].score > r.items[1].channel[SEARCH_CH_BM25].score);
    search_results_free(&r);
}

/* meta.lang_counts as the search readers see it: the object's entries in
 * order, counts as json_each gave them (reals truncated, others 0); no
 * row: 0; not a JSON object: -1. Written in a transaction
 * rolled back, so the other tests see the index as it was. */
static void test_vault_lang_counts(void **state)
{
    (void)state;
    langpref_count *c;
    size_t n;
    assert_int_equal(store_begin(st), TROVE_OK);
    assert_int_equal(store_meta_set(st, "lang_counts", "{\"en\": 3, \"zh\": 0, \"de\": 2.9, "
                                    "\"fr\": \"x\"}"), TROVE_OK);
    assert_int_equal(langpref_vault_counts(st, &c, &n), 1);
    assert_int_equal(n, 4);
    const char *codes[] = {"en", "zh", "de", "fr"};
    long long notes[] = {3, 0, 2, 0};
    for (size_t i = 0; i < 4; i++) {
        assert_string_equal(c[i].code, codes[i]);
        assert_int_equal(c[i].notes, notes[i]);
    }
    langpref_counts_free(c, n);
    assert_int_equal(store_meta_set(st, "lang_counts", "{}"), TROVE_OK);
    assert_int_equal(langpref_vault_counts(st, &c, &n), 1);
    assert_int_equal(n, 0);
    langpref_counts_free(c, n);
    /* a new index has no such row */
    char path[160];
    snprintf(path, sizeof path, "%s/empty.db", dir);
    store *empty;
    assert_int_equal(store_open(path, 0, &empty), TROVE_OK);
    assert_int_equal(langpref_vault_counts(empty, &c, &n), 0);
    assert_int_equal(n, 0);
    assert_null(c);
    store_close(empty);
    const char *broken[] = {"[1, 2]", "{\"en\": ", "12"};
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(store_meta_set(st, "lang_counts", broken[i]), TROVE_OK);
        assert_int_equal(langpref_vault_counts(st, &c, &n), -1);
        assert_int_equal(n, 0);
        assert_null(c);
    }
    store_rollback(st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exact_title_first_with_full_score),
        cmocka_unit_test(test_best_chunk_anchors_the_result),
        cmocka_unit_test(test_filters),
        cmocka_unit_test(test_exclusion_and_empty),
        cmocka_unit_test(test_ties_share_a_rank),
        cmocka_unit_test(test_graph_prior),
        cmocka_unit_test(test_query_language_preferred),
        cmocka_unit_test(test_name_inside_question),
        cmocka_unit_test(test_chinese_bigram_view),
        cmocka_unit_test(test_vault_lang_counts),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
