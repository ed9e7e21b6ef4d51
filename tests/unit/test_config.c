/* config: YAML round trip, editing, and context lookup. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* Save, load, and expect every string back byte for byte. */
static void test_round_trip_any_bytes(void **state)
{
    (void)state;
    static const char *const values[] = {
        "/home/u/caf\xe9",                       /* Latin-1 folder name */
        "\xff",                                 /* --mask $'\xff' */
        "a\xc2\x80" "b",                        /* C1 control U+0080 */
        "x\xc2\x85y",                           /* U+0085 NEL */
        "p\xe2\x80\xa8q\xe2\x80\xa9r",          /* U+2028, U+2029 */
        "\xef\xbb\xbf" "bom \xef\xbf\xbe \xef\xbf\xbf", /* U+FEFF, U+FFFE, U+FFFF */
        "del\x7f \x01\x1b tab\t nl\n cr\r \"q\" \\",
        "  lead and trail  ",
        "mixed \xe4\xb8\xad + \xe9 + \xc3",
        "~", "null", "", "#", "- x", "!bytes", "*a", "&b", "'", "%",
    };
    size_t n = sizeof values / sizeof *values;
    const char *path = file_in("bytes/config.yaml");
    config cfg;
    assert_int_equal(config_load_file(&cfg, path), TROVE_OK);
    char all[256];
    for (int i = 1; i < 256; i++)
        all[i - 1] = (char)i;
    all[255] = '\0';
    for (size_t i = 0; i < n; i++) {
        char name[16];
        snprintf(name, sizeof name, "c%zu", i);
        const char *masks[] = {values[i], all};
        /* paths absolute: a relative one is read back under the config's folder */
        char abs[300];
        snprintf(abs, sizeof abs, "%s%s", values[i][0] == '/' ? "" : "/", values[i]);
        config_add_collection(&cfg, name, abs, masks, 2, &values[i], 1);
        config_add_context(&cfg, name, values[i]);
    }
    char all_abs[257];
    snprintf(all_abs, sizeof all_abs, "/%s", all);
    config_add_collection(&cfg, "na\xc3\xafve \xe2\x80\xa8", all_abs, NULL, 0, NULL, 0);
    assert_int_equal(config_save(&cfg), TROVE_OK);
    config_free(&cfg);

    trove_err rc = config_load_file(&cfg, path);
    if (rc)
        fail_msg("%s", trove_errmsg());
    assert_int_equal(cfg.n_collections, n + 1);
    assert_int_equal(cfg.n_contexts, n);
    for (size_t i = 0; i < n; i++) {
        const config_collection *c = &cfg.collections[i];
        assert_string_equal(c->path + (values[i][0] != '/'), values[i]);
        assert_int_equal(c->n_masks, 2);
        assert_string_equal(c->masks[0], values[i]);
        assert_string_equal(c->masks[1], all);
        assert_string_equal(c->excludes[0], values[i]);
        assert_string_equal(cfg.contexts[i].text, values[i]);
    }
    assert_string_equal(cfg.collections[n].name, "na\xc3\xafve \xe2\x80\xa8");
    assert_string_equal(cfg.collections[n].path, all_abs);
    config_free(&cfg);
}

/* libyaml leaves the mark empty for encoding errors: the line must still be
 * the one holding the bad byte. */
static void test_error_line_of_encoding_errors(void **state)
{
    (void)state;
    static const struct { const char *text; const char *want; } cases[] = {
        {"# trove\n# x\ncollections:\n  a:\n    path: /x\n    mask: [\"\xff\"]\n", "line 6: "},
        {"collections:\n  a:\n    path: \"a\xc2\x80" "b\"\n", "line 3: "},
        {"collections:\n\n\n  a: {path: \"\xe2\x82\"}\n", "line 4: "},
        {"collections:\n  a:\n    path: !bytes \"\\u0100\"\n", "line 3: "},
        {"collections: [\n", "line 2: "},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const char *path = file_in("enc.yaml");
        write_file(path, cases[i].text);
        config cfg;
        assert_int_equal(config_load_file(&cfg, path), TROVE_EPARSE);
        if (!strstr(trove_errmsg(), cases[i].want))
            fail_msg("case %zu: '%s' does not say '%s'", i, trove_errmsg(), cases[i].want);
        config_free(&cfg);
    }
}

/* A load that fails part-way has nothing left to free (the CLI returns
 * without config_free on errors; LeakSanitizer saw the partial config). */
static void test_failed_load_frees_everything(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "collections:\n  a:\n    path: /x\n    mask: [a, b]\ncontexts: 5\n",
        "collections:\n  a:\n    path: /x\ncontexts:\n  - target: a\n    text: t\n  - target: b\n",
        "collections: [\n",
        "collections:\n  a: {path: /x}\n  b: {path: !bytes \"\\u0100\"}\n",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        const char *path = file_in("partial.yaml");
        write_file(path, bad[i]);
        config cfg;
        assert_int_not_equal(config_load_file(&cfg, path), TROVE_OK);
        assert_null(cfg.file);
        assert_null(cfg.collections);
        assert_null(cfg.contexts);
        assert_int_equal(cfg.n_collections + cfg.n_contexts, 0);
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

/* The MCP token and extra origins survive a save by another command (a
 * `collection add` must not drop them). */
static void test_mcp_section_round_trip(void **state)
{
    (void)state;
    const char *path = file_in("mcp.yaml");
    FILE *f = fopen(path, "w");
    fputs("mcp:\n  token: \"s3cr\\\"et\"\n  origins: [\"https://app.example\"]\n", f);
    fclose(f);
    config cfg;
    assert_int_equal(config_load_file(&cfg, path), TROVE_OK);
    assert_string_equal(cfg.mcp.token, "s3cr\"et");
    assert_int_equal(cfg.mcp.n_origins, 1);
    config_add_collection(&cfg, "n", "/n", NULL, 0, NULL, 0);
    assert_int_equal(config_save(&cfg), TROVE_OK);
    config_free(&cfg);
    assert_int_equal(config_load_file(&cfg, path), TROVE_OK);
    assert_string_equal(cfg.mcp.token, "s3cr\"et");
    assert_int_equal(cfg.mcp.n_origins, 1);
    assert_string_equal(cfg.mcp.origins[0], "https://app.example");
    config_free(&cfg);
    f = fopen(path, "w");
    fputs("mcp: [a]\n", f);
    fclose(f);
    assert_int_equal(config_load_file(&cfg, path), TROVE_EPARSE);
    config_free(&cfg);
    /* the agent boundary's keys survive a save; a misspelt key is an error */
    f = fopen(path, "w");
    fputs("mcp:\n  exclude: [journal, \"v/**/pw-*\"]\n  private_key: Secret\n", f);
    fclose(f);
    assert_int_equal(config_load_file(&cfg, path), TROVE_OK);
    assert_int_equal(cfg.mcp.n_exclude, 2);
    assert_string_equal(cfg.mcp.private_key, "secret");
    assert_int_equal(config_save(&cfg), TROVE_OK);
    config_free(&cfg);
    assert_int_equal(config_load_file(&cfg, path), TROVE_OK);
    assert_int_equal(cfg.mcp.n_exclude, 2);
    assert_string_equal(cfg.mcp.exclude[1], "v/**/pw-*");
    assert_string_equal(cfg.mcp.private_key, "secret");
    config_free(&cfg);
    f = fopen(path, "w");
    fputs("mcp:\n  exclud: [journal]\n", f);
    fclose(f);
    assert_int_equal(config_load_file(&cfg, path), TROVE_EPARSE);
    config_free(&cfg);
}

/* `rerank_model:` is resolved against the config's folder, survives a
 * save, and must be a path. */
static void test_rerank_model(void **state)
{
    (void)state;
    const char *path = file_in("rerank.yaml");
    FILE *f = fopen(path, "w");
    fputs("rerank_model: models/rr.gguf\n", f);
    fclose(f);
    config cfg;
    assert_int_equal(config_load_file(&cfg, path), TROVE_OK);
    assert_non_null(cfg.rerank_model);
    assert_true(cfg.rerank_model[0] == '/');
    assert_non_null(strstr(cfg.rerank_model, "/models/rr.gguf"));
    char *was = strdup(cfg.rerank_model);
    config_add_collection(&cfg, "n", "/n", NULL, 0, NULL, 0);
    assert_int_equal(config_save(&cfg), TROVE_OK);
    config_free(&cfg);
    assert_int_equal(config_load_file(&cfg, path), TROVE_OK);
    assert_string_equal(cfg.rerank_model, was);
    free(was);
    config_free(&cfg);
    f = fopen(path, "w");
    fputs("rerank_model: [a]\n", f);
    fclose(f);
    assert_int_equal(config_load_file(&cfg, path), TROVE_EPARSE);
    config_free(&cfg);
}

/* `snapshots:` defaults to 5, must be 1..1000, and survives a save. */
static void test_snapshots_key(void **state)
{
    (void)state;
    const char *path = file_in("snap.yaml");
    config cfg;
    assert_int_equal(config_load_file(&cfg, path), TROVE_OK);
    assert_int_equal(cfg.snapshots, CONFIG_SNAPSHOTS);
    config_free(&cfg);
    FILE *f = fopen(path, "w");
    fputs("snapshots: 12\n", f);
    fclose(f);
    assert_int_equal(config_load_file(&cfg, path), TROVE_OK);
    assert_int_equal(cfg.snapshots, 12);
    config_add_collection(&cfg, "n", "/n", NULL, 0, NULL, 0);
    assert_int_equal(config_save(&cfg), TROVE_OK);
    config_free(&cfg);
    assert_int_equal(config_load_file(&cfg, path), TROVE_OK);
    assert_int_equal(cfg.snapshots, 12);
    config_free(&cfg);
    static const char *const bad[] = {"snapshots: 0\n", "snapshots: -1\n", "snapshots: 1001\n",
                                      "snapshots: five\n", "snapshots: [5]\n", "snapshots: 2.5\n"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        f = fopen(path, "w");
        fputs(bad[i], f);
        fclose(f);
        assert_int_equal(config_load_file(&cfg, path), TROVE_EPARSE);
        assert_non_null(strstr(trove_errmsg(), "or a whole number from 1 to 1000"));
        config_free(&cfg);
    }
}

/* A relative collection path is relative to the folder of config.yaml,
 * not to the current folder (issue 15: from another folder an update
 * deleted a collection's notes); one folder however spelt is found. */
static void test_relative_paths_and_same_folder(void **state)
{
    (void)state;
    char notes[160], link[160], here[160], cwd[512];
    snprintf(notes, sizeof notes, "%s/notes", dir);
    snprintf(link, sizeof link, "%s/link", dir);
    snprintf(here, sizeof here, "%s/here", dir);
    assert_int_equal(mkdir(notes, 0755), 0);
    assert_int_equal(mkdir(here, 0755), 0);
    assert_int_equal(symlink(notes, link), 0);
    const char *path = file_in("rel.yaml");
    FILE *f = fopen(path, "w");
    fputs("collections:\n  n:\n    path: notes\n  l:\n    path: link/\n"
          "  abs:\n    path: /elsewhere\n", f);
    fclose(f);
    assert_non_null(getcwd(cwd, sizeof cwd));
    assert_int_equal(chdir(here), 0);
    config cfg;
    assert_int_equal(config_load_file(&cfg, path), TROVE_OK);
    assert_int_equal(chdir(cwd), 0);
    assert_int_equal(cfg.n_collections, 3);
    assert_string_equal(cfg.collections[0].path, notes);
    assert_string_equal(cfg.collections[1].path, link);
    assert_string_equal(cfg.collections[2].path, "/elsewhere");
    /* "link" is the folder of "n" */
    assert_ptr_equal(config_same_folder(&cfg, link, 1), &cfg.collections[0]);
    assert_null(config_same_folder(&cfg, link, 0));
    char dotted[200];
    snprintf(dotted, sizeof dotted, "%s/./", notes);
    assert_ptr_equal(config_same_folder(&cfg, dotted, (size_t)-1), &cfg.collections[0]);
    assert_null(config_same_folder(&cfg, here, (size_t)-1));
    assert_ptr_equal(config_same_folder(&cfg, "/elsewhere", (size_t)-1), &cfg.collections[2]);
    config_free(&cfg);
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* `snapshots:` as a mapping: defaults for the keys left out, the old
 * number form has no time windows, a save writes all four keys back, and
 * unknown keys and bad values are errors naming the key. */
static void test_snapshots_retention_mapping(void **state)
{
    (void)state;
    const char *path = file_in("snapmap.yaml");
    config cfg;
    assert_int_equal(config_load_file(&cfg, path), TROVE_OK);   /* no file: defaults */
    assert_int_equal(cfg.has_snapshots, 0);
    assert_int_equal(cfg.snap_minutes, CONFIG_SNAP_MINUTES);
    assert_int_equal(cfg.snap_hourly, CONFIG_SNAP_HOURLY);
    assert_int_equal(cfg.snap_daily, CONFIG_SNAP_DAILY);
    config_free(&cfg);
    write_text(path, "snapshots: {hourly: 48, daily: 90}\n");
    assert_int_equal(config_load_file(&cfg, path), TROVE_OK);
    assert_int_equal(cfg.has_snapshots, 2);
    assert_int_equal(cfg.snapshots, CONFIG_SNAPSHOTS);
    assert_int_equal(cfg.snap_minutes, CONFIG_SNAP_MINUTES);
    assert_int_equal(cfg.snap_hourly, 48);
    assert_int_equal(cfg.snap_daily, 90);
    assert_int_equal(config_save(&cfg), TROVE_OK);
    config_free(&cfg);
    assert_int_equal(config_load_file(&cfg, path), TROVE_OK);
    assert_int_equal(cfg.has_snapshots, 2);
    assert_int_equal(cfg.snap_hourly, 48);
    assert_int_equal(cfg.snap_daily, 90);
    assert_int_equal(cfg.snap_minutes, CONFIG_SNAP_MINUTES);
    config_free(&cfg);
    write_text(path, "snapshots:\n  last: 2\n  minutes: 0\n");
    assert_int_equal(config_load_file(&cfg, path), TROVE_OK);
    assert_int_equal(cfg.snapshots, 2);
    assert_int_equal(cfg.snap_minutes, 0);
    config_free(&cfg);
    write_text(path, "snapshots: 7\n");
    assert_int_equal(config_load_file(&cfg, path), TROVE_OK);
    assert_int_equal(cfg.has_snapshots, 1);
    assert_int_equal(cfg.snapshots, 7);
    assert_int_equal(cfg.snap_minutes + cfg.snap_hourly + cfg.snap_daily, 0);
    config_free(&cfg);
    static const struct { const char *text, *msg; } bad[] = {
        {"snapshots: {weekly: 4}\n", "'snapshots' has no key 'weekly'"},
        {"snapshots: {hourly: -1}\n", "'snapshots.hourly' must be a whole number from 0"},
        {"snapshots: {last: 0}\n", "'snapshots.last' must be a whole number from 1"},
        {"snapshots: {daily: many}\n", "'snapshots.daily'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        write_text(path, bad[i].text);
        assert_int_equal(config_load_file(&cfg, path), TROVE_EPARSE);
        assert_non_null(strstr(trove_errmsg(), bad[i].msg));
        config_free(&cfg);
    }
}

/* A collection's settings round-trip through the text a snapshot keeps. */
static void test_collection_settings_roundtrip(void **state)
{
    (void)state;
    config a = {0}, b = {0};
    const char *masks[] = {"sub/*.md", "x.md"}, *excl[] = {"sub/skip*"};
    config_add_collection(&a, "work", "/w", masks, 2, excl, 1);
    config_add_collection(&a, "other", "/o", NULL, 0, NULL, 0);
    config_add_context(&a, "work", "Work notes");
    config_add_context(&a, "work/sub", "Sub \"notes\"");
    config_add_context(&a, "workshop", "not this one");
    char *text = config_collection_settings(&a, "work");
    assert_non_null(text);
    assert_null(config_collection_settings(&a, "nope"));
    config_collection *c = config_collection_restore(&b, "work", "/w", text);
    assert_string_equal(c->path, "/w");
    assert_int_equal(c->n_masks, 2);
    assert_string_equal(c->masks[1], "x.md");
    assert_int_equal(c->n_excludes, 1);
    assert_string_equal(c->excludes[0], "sub/skip*");
    assert_int_equal(b.n_contexts, 2);
    assert_string_equal(b.contexts[1].target, "work/sub");
    assert_string_equal(b.contexts[1].text, "Sub \"notes\"");
    c = config_collection_restore(&b, "plain", "/p", NULL);
    assert_int_equal(c->n_masks, 0);
    free(text);
    config_free(&a);
    config_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_missing_file_is_empty),
        cmocka_unit_test(test_round_trip_with_awkward_strings),
        cmocka_unit_test(test_contexts_most_general_first),
        cmocka_unit_test(test_malformed_files),
        cmocka_unit_test(test_round_trip_any_bytes),
        cmocka_unit_test(test_error_line_of_encoding_errors),
        cmocka_unit_test(test_failed_load_frees_everything),
        cmocka_unit_test(test_weights),
        cmocka_unit_test(test_mcp_section_round_trip),
        cmocka_unit_test(test_rerank_model),
        cmocka_unit_test(test_snapshots_key),
        cmocka_unit_test(test_relative_paths_and_same_folder),
        cmocka_unit_test(test_snapshots_retention_mapping),
        cmocka_unit_test(test_collection_settings_roundtrip),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
