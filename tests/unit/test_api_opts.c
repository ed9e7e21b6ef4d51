/* api_opts: the search options' defaults, config merge and bounds (api.h,
 * "search options"): what the user said wins over config.yaml, which wins
 * over the defaults; values out of bounds are refused by name. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "api/wire.h"

static void test_init_leaves_every_option_unset(void **state)
{
    (void)state;
    api_search_opts o;
    api_search_opts_init(&o);
    assert_true(o.search.limit == API_UNSET_SIZE);
    assert_true(isnan(o.search.min_score));
    for (int c = 0; c < SEARCH_N_CHANNELS; c++)
        assert_true(isnan(o.search.weights[c]));
    assert_true(isnan(o.search.graph_weight));
    assert_true(isnan(o.search.lang_bonus));
    assert_int_equal(o.search.rrf_k, API_UNSET_INT);
    assert_int_equal(o.search.with_snippet, API_UNSET_INT);
    assert_null(o.search.query);
    assert_int_equal(o.search.n_collections, 0);
    assert_null(o.model);
    /* unset options are not out of bounds: their defaults come later */
    assert_int_equal(api_search_opts_check(&o), TROVE_OK);
}

static void test_defaults(void **state)
{
    (void)state;
    api_search_opts o;
    api_search_opts_init(&o);
    api_search_opts_defaults(&o);
    assert_int_equal(o.search.limit, 10);
    assert_true(o.search.min_score == 0);
    assert_true(o.search.weights[SEARCH_CH_BM25] == 1.0);
    assert_true(o.search.weights[SEARCH_CH_TITLE] == 1.5);
    assert_true(o.search.weights[SEARCH_CH_VECTOR] == 0.5);
    assert_true(o.search.graph_weight == 0.1);
    assert_true(o.search.lang_bonus == 0.1);
    assert_int_equal(o.search.rrf_k, 60);
    assert_int_equal(o.search.with_snippet, 1);
    assert_int_equal(api_search_opts_check(&o), TROVE_OK);
    assert_true(api_search_opt("limit")->def == 10);
    assert_null(api_search_opt("no_such_option"));
}

/* Every row: a default inside its bounds, a name and a field of its own,
 * and unset → default → unchanged by a second pass. */
static void test_table_rows_are_consistent(void **state)
{
    (void)state;
    for (size_t i = 0; i < api_search_n_opts; i++) {
        const api_opt *r = &api_search_opt_table[i];
        assert_true(r->def >= r->min && r->def <= r->max);
        assert_true(r->offset < sizeof(search_opts));
        assert_ptr_equal(api_search_opt(r->name), r);
        for (size_t j = 0; j < i; j++)
            assert_true(api_search_opt_table[j].offset != r->offset);
    }
    api_search_opts a, b;
    api_search_opts_init(&a);
    api_search_opts_defaults(&a);
    b = a;
    api_search_opts_defaults(&b);
    assert_memory_equal(&a, &b, sizeof a);
}

static void test_user_beats_config_beats_default(void **state)
{
    (void)state;
    config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.weights[CONFIG_W_TITLE] = 3.0;
    cfg.has_weight[CONFIG_W_TITLE] = 1;
    cfg.weights[CONFIG_W_VECTOR] = 1.2;
    cfg.has_weight[CONFIG_W_VECTOR] = 1;
    cfg.weights[CONFIG_W_GRAPH] = 0.4;
    cfg.has_weight[CONFIG_W_GRAPH] = 1;
    cfg.weights[CONFIG_W_BM25] = 7;   /* present in the struct, not in the file */
    char *langs[] = {"de", "en"};
    cfg.languages = langs;
    cfg.n_languages = 2;

    api_search_opts o;
    api_search_opts_init(&o);
    o.search.weights[SEARCH_CH_TITLE] = 2.0;   /* the user's flag */
    o.search.graph_weight = 0;                 /* 0 is a value, not "unset" */
    assert_int_equal(api_search_opts_resolve(&o, &cfg), TROVE_OK);
    assert_true(o.search.weights[SEARCH_CH_TITLE] == 2.0);
    assert_true(o.search.graph_weight == 0);
    assert_true(o.search.weights[SEARCH_CH_VECTOR] == 1.2);   /* config */
    assert_true(o.search.weights[SEARCH_CH_BM25] == 1.0);     /* default */
    assert_int_equal(o.search.limit, 10);
    assert_int_equal(o.search.n_prefer_langs, 2);
    assert_string_equal(o.search.prefer_langs[0], "de");

    /* the reader's own languages win over the config's */
    const char *mine[] = {"fr"};
    api_search_opts_init(&o);
    o.search.prefer_langs = mine;
    o.search.n_prefer_langs = 1;
    api_search_opts_merge_config(&o, &cfg);
    assert_int_equal(o.search.n_prefer_langs, 1);
    assert_string_equal(o.search.prefer_langs[0], "fr");
    assert_true(o.search.weights[SEARCH_CH_TITLE] == 3.0);
    assert_true(isnan(o.search.weights[SEARCH_CH_BM25]));   /* merge fills no default */

    /* resolving twice changes nothing (api_query resolves, then each
     * variant's api_search again) */
    api_search_opts_defaults(&o);
    api_search_opts again = o;
    assert_int_equal(api_search_opts_resolve(&again, &cfg), TROVE_OK);
    assert_memory_equal(&again, &o, sizeof o);
}

/* A value out of bounds is TROVE_EINVAL naming the option and the bound. */
static void expect_refused(api_search_opts *o, const char *name, const char *bound)
{
    assert_int_equal(api_search_opts_check(o), TROVE_EINVAL);
    const char *msg = trove_errmsg();
    assert_non_null(strstr(msg, name));
    assert_non_null(strstr(msg, bound));
}

static void test_bounds(void **state)
{
    (void)state;
    api_search_opts o;
    api_search_opts_init(&o);
    o.search.weights[SEARCH_CH_TITLE] = -1;
    expect_refused(&o, "title_weight", ">= 0");
    api_search_opts_init(&o);
    o.search.weights[SEARCH_CH_VECTOR] = INFINITY;
    expect_refused(&o, "vector_weight", ">= 0");
    api_search_opts_init(&o);
    o.search.graph_weight = -0.5;
    expect_refused(&o, "graph_weight", "-0.5");
    api_search_opts_init(&o);
    o.search.rrf_k = 0;
    expect_refused(&o, "rrf_k", "from 1 to");
    api_search_opts_init(&o);
    o.search.with_snippet = 2;
    expect_refused(&o, "with_snippet", "from 0 to 1");
    api_search_opts_init(&o);
    o.search.min_score = INFINITY;
    expect_refused(&o, "min_score", "finite");

    /* edges that are values */
    api_search_opts_init(&o);
    o.search.limit = 0;   /* --all */
    o.search.min_score = -1;
    o.search.weights[SEARCH_CH_BM25] = 0;
    o.search.rrf_k = 1;
    assert_int_equal(api_search_opts_check(&o), TROVE_OK);

    /* resolve checks the config's values too */
    config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.weights[CONFIG_W_BM25] = -2;
    cfg.has_weight[CONFIG_W_BM25] = 1;
    api_search_opts_init(&o);
    assert_int_equal(api_search_opts_resolve(&o, &cfg), TROVE_EINVAL);
    assert_non_null(strstr(trove_errmsg(), "bm25_weight"));
}

/* What a client leaves unset reaches the daemon unset, so the daemon's
 * config decides it as it would cold; what it set arrives as set. */
static void test_unset_travels_the_wire_unset(void **state)
{
    (void)state;
    api_search_opts o;
    api_search_opts_init(&o);
    o.search.query = "q";
    o.search.weights[SEARCH_CH_VECTOR] = 2;
    json_t *j = wire_search_opts(&o);
    char *text = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    j = json_loads(text, 0, NULL);
    free(text);
    api_search_opts back;
    wire_args hold = {0};
    assert_int_equal(wire_search_opts_parse(j, &back, &hold), TROVE_OK);
    json_decref(j);
    assert_true(back.search.weights[SEARCH_CH_VECTOR] == 2);
    assert_true(isnan(back.search.weights[SEARCH_CH_TITLE]));
    assert_true(isnan(back.search.graph_weight));
    assert_true(back.search.limit == API_UNSET_SIZE);
    assert_int_equal(back.search.rrf_k, API_UNSET_INT);
    assert_int_equal(back.search.with_snippet, API_UNSET_INT);
    config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.weights[CONFIG_W_TITLE] = 4;
    cfg.has_weight[CONFIG_W_TITLE] = 1;
    assert_int_equal(api_search_opts_resolve(&back, &cfg), TROVE_OK);
    assert_true(back.search.weights[SEARCH_CH_TITLE] == 4);
    assert_int_equal(back.search.limit, 10);
    wire_args_free(&hold);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_init_leaves_every_option_unset),
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_table_rows_are_consistent),
        cmocka_unit_test(test_user_beats_config_beats_default),
        cmocka_unit_test(test_bounds),
        cmocka_unit_test(test_unset_travels_the_wire_unset),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
