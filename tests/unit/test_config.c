/* config: YAML round trip, editing, and context lookup. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/config.h"
#include "testutil.h"

static char dir[64];

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/trove-test-config.XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    return tu_rm_rf(dir);
}

static char *file_in(const char *name)
{
    static char path[128];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return path;
}

static void test_missing_file_is_empty(void **state)
{
    (void)state;
    config cfg;
    assert_int_equal(config_load_file(&cfg, file_in("nope/config.yaml")), TROVE_OK);
    assert_int_equal(cfg.n_collections, 0);
    assert_int_equal(cfg.n_contexts, 0);
    config_free(&cfg);
}

static void test_round_trip_with_awkward_strings(void **state)
{
    (void)state;
    const char *path = file_in("sub/dir/config.yaml");   /* folders are created */
    config cfg;
    assert_int_equal(config_load_file(&cfg, path), TROVE_OK);
    const char *masks[] = {"**/*.md", "notes/{a,b}/*.markdown"};
    const char *excl[] = {"drafts/**"};
    config_add_collection(&cfg, "notes", "/home/u/My \"Notes\": #1/", masks, 2, excl, 1);
    config_add_collection(&cfg, "中文", "/data/笔记", NULL, 0, NULL, 0);
    config_add_context(&cfg, "notes/journal", "Daily: one file\na day\t\\ok");
    assert_int_equal(config_save(&cfg), TROVE_OK);
    config_free(&cfg);

    assert_int_equal(config_load_file(&cfg, path), TROVE_OK);
    assert_int_equal(cfg.n_collections, 2);
    config_collection *c = config_find_collection(&cfg, "notes");
    assert_non_null(c);
    assert_string_equal(c->path, "/home/u/My \"Notes\": #1");   /* trailing '/' dropped */
    assert_int_equal(c->n_masks, 2);
    assert_string_equal(c->masks[1], "notes/{a,b}/*.markdown");
    assert_int_equal(c->n_excludes, 1);
    assert_non_null(config_find_collection(&cfg, "中文"));
    assert_int_equal(cfg.n_contexts, 1);
    assert_string_equal(cfg.contexts[0].text, "Daily: one file\na day\t\\ok");
    config_free(&cfg);
}

static void test_contexts_most_general_first(void **state)
{
    (void)state;
    config cfg;
    assert_int_equal(config_load_file(&cfg, file_in("c.yaml")), TROVE_OK);
    config_add_collection(&cfg, "n", "/n", NULL, 0, NULL, 0);
    config_add_context(&cfg, "n/projects/alpha", "alpha");
    config_add_context(&cfg, "n", "all notes");
    config_add_context(&cfg, "n/projects", "projects");
    config_add_context(&cfg, "n/proj", "not a folder boundary");
    config_add_context(&cfg, "nx", "another collection");
    size_t n;
    const char **ctx = config_contexts_for(&cfg, "n", "projects/alpha/plan.md", &n);
    assert_int_equal(n, 3);
    assert_string_equal(ctx[0], "all notes");
    assert_string_equal(ctx[1], "projects");
    assert_string_equal(ctx[2], "alpha");
    free(ctx);
    ctx = config_contexts_for(&cfg, "n", "projects.md", &n);
    assert_int_equal(n, 1);
    free(ctx);
    config_add_context(&cfg, "n/projects/", "replaced");   /* same target, trailing '/' */
    ctx = config_contexts_for(&cfg, "n", "projects/x.md", &n);
    assert_int_equal(n, 2);
    assert_string_equal(ctx[1], "replaced");
    free(ctx);
    assert_int_equal(config_remove_context(&cfg, "n/projects"), 1);
    assert_int_equal(config_remove_collection(&cfg, "n"), 1);
    assert_int_equal(config_remove_collection(&cfg, "n"), 0);
    config_free(&cfg);
}

static void test_malformed_files(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "collections: [a, b]\n",                       /* not a mapping */
        "collections:\n  x:\n    mask: '*.md'\n",      /* no path */
        "contexts:\n  - target: x\n",                  /* no text */
        "- just\n- a list\n",                          /* top level */
        "collections: {\n",                            /* YAML syntax */
        "collections:\n  x:\n    path: /x\nweights:\n  vectr: 1\n",  /* unknown channel */
        "weights:\n  bm25: -1\n",                       /* negative */
        "weights:\n  title: lots\n",                    /* not a number */
        "weights: [1, 2]\n",                            /* not a mapping */
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        const char *path = file_in("bad.yaml");
        FILE *f = fopen(path, "w");
        fputs(bad[i], f);
        fclose(f);
        config cfg;
        trove_err rc = config_load_file(&cfg, path);
        if (rc != TROVE_EPARSE)
            fail_msg("case %zu: got %d, want TROVE_EPARSE", i, rc);
        assert_non_null(strstr(trove_errmsg(), "bad.yaml"));   /* names the file */
        config_free(&cfg);
    }
}

/* weights: read, kept by a save, absent ones unset. */
static void test_weights(void **state)
{
    (void)state;
    const char *path = file_in("w.yaml");
    FILE *f = fopen(path, "w");
    fputs("weights:\n  vector: 1.25\n  graph: 0\n", f);
    fclose(f);
    config cfg;
    assert_int_equal(config_load_file(&cfg, path), TROVE_OK);
    assert_true(cfg.has_weight[CONFIG_W_VECTOR] && cfg.weights[CONFIG_W_VECTOR] == 1.25);
    assert_true(cfg.has_weight[CONFIG_W_GRAPH] && cfg.weights[CONFIG_W_GRAPH] == 0);
    assert_false(cfg.has_weight[CONFIG_W_BM25] || cfg.has_weight[CONFIG_W_TITLE]);
    config_add_collection(&cfg, "n", "/n", NULL, 0, NULL, 0);
    assert_int_equal(config_save(&cfg), TROVE_OK);
    config_free(&cfg);
    assert_int_equal(config_load_file(&cfg, path), TROVE_OK);
    assert_true(cfg.has_weight[CONFIG_W_VECTOR] && cfg.weights[CONFIG_W_VECTOR] == 1.25);
    assert_true(cfg.has_weight[CONFIG_W_GRAPH]);
    assert_false(cfg.has_weight[CONFIG_W_BM25]);
    assert_int_equal(cfg.n_collections, 1);
    config_free(&cfg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_missing_file_is_empty),
        cmocka_unit_test(test_round_trip_with_awkward_strings),
        cmocka_unit_test(test_contexts_most_general_first),
        cmocka_unit_test(test_malformed_files),
        cmocka_unit_test(test_weights),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
