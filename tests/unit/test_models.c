/* models: the catalogue's invariants, pull plans for every spec form, the
 * resolver's precedence and spec forms, embed_model in config.yaml. */
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

#include "models/models.h"
#include "testutil.h"

static char dir[64];

static void touch(const char *path, size_t size)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    for (size_t i = 0; i < size; i++)
        fputc('x', f);
    fclose(f);
}

static char *in_dir(const char *rel)
{
    static char buf[4][256];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", dir, rel);
    return buf[k];
}

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/trove-test-models.XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    setenv("XDG_DATA_HOME", dir, 1);
    unsetenv("TROVE_EMBED_MODEL");
    unsetenv("TROVE_RERANK_MODEL");
    unsetenv("TROVE_HF_ENDPOINT");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    return tu_rm_rf(dir);
}

static int hex64(const char *s)
{
    if (strlen(s) != 64)
        return 0;
    for (; *s; s++)
        if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f')))
            return 0;
    return 1;
}

static void test_catalogue_invariants(void **state)
{
    (void)state;
    size_t n;
    const models_entry *c = models_catalog(&n);
    assert_true(n >= 6);
    int embed_zh = 0, rerank = 0, m2v = 0;
    for (size_t i = 0; i < n; i++) {
        const models_entry *e = &c[i];
        for (size_t j = 0; j < i; j++)
            assert_true(strcasecmp(c[j].name, e->name) != 0);
        assert_ptr_equal(models_find(e->name), e);
        assert_non_null(strchr(e->repo, '/'));
        assert_true(strlen(e->revision) == 40 || strcmp(e->revision, "main") == 0);
        assert_true(e->kind == MODELS_RERANK || e->dim > 0);
        assert_true(e->format == MODELS_GGUF ? e->n_files == 1 : e->n_files == 3);
        for (size_t f = 0; f < e->n_files; f++) {
            assert_true(e->files[f].size > 0 || e->files[f].size == -1);
            assert_true(!e->files[f].sha256 || hex64(e->files[f].sha256));
            /* a digest is only trusted together with a pinned revision */
            assert_true(!e->files[f].sha256 || strlen(e->revision) == 40);
        }
        if (e->format == MODELS_GGUF)
            assert_true(strstr(e->files[0].name, ".gguf") != NULL);
        embed_zh += e->kind == MODELS_EMBED && strstr(e->languages, "Chinese");
        rerank += e->kind == MODELS_RERANK;
        m2v += e->format == MODELS_MODEL2VEC;
    }
    assert_true(embed_zh >= 2 && rerank >= 2 && m2v >= 2);
    /* the default embeds Chinese with a static model (see docs/models.md) */
    const models_entry *d = models_default();
    assert_int_equal(d->kind, MODELS_EMBED);
    assert_int_equal(d->format, MODELS_MODEL2VEC);
    assert_non_null(strstr(d->languages, "Chinese"));
    assert_ptr_equal(models_find("POTION-base-8m"), models_find("potion-base-8M"));
    assert_null(models_find("nope"));
    assert_int_equal(models_entry_size(models_find("potion-base-8M")), 202 + 683666 + 30236760);
    assert_int_equal(models_entry_size(models_find("ms-marco-MiniLM-L6-v2")), -1);
}

static void test_plan_catalogue(void **state)
{
    (void)state;
    models_plan p;
    assert_int_equal(models_plan_pull("bge-small-en-v1.5", NULL, &p), TROVE_OK);
    assert_int_equal(p.n_items, 1);
    assert_false(p.folder);
    assert_string_equal(p.items[0].url, "https://huggingface.co/CompendiumLabs/bge-small-en-v1.5-gguf"
                        "/resolve/d32f8c040ea3b516330eeb75b72bcc2d3a780ab7/bge-small-en-v1.5-q8_0.gguf");
    assert_string_equal(p.items[0].dest, in_dir("trove/models/bge-small-en-v1.5-q8_0.gguf"));
    assert_string_equal(p.path, p.items[0].dest);
    assert_int_equal(p.items[0].size, 36806944);
    assert_non_null(p.items[0].sha256);
    models_plan_free(&p);

    setenv("TROVE_HF_ENDPOINT", "http://127.0.0.1:9/", 1);
    assert_int_equal(models_plan_pull("potion-base-8M", NULL, &p), TROVE_OK);
    assert_true(p.folder);
    assert_int_equal(p.n_items, 3);
    assert_string_equal(p.path, in_dir("trove/models/potion-base-8M"));
    assert_string_equal(p.items[2].dest, in_dir("trove/models/potion-base-8M/model.safetensors"));
    assert_string_equal(p.items[0].url, "http://127.0.0.1:9/minishlab/potion-base-8M/resolve/"
                        "bf8b056651a2c21b8d2565580b8569da283cab23/config.json");
    models_plan_free(&p);
    unsetenv("TROVE_HF_ENDPOINT");

    /* catalogue models carry their own digests */
    char sha[65];
    memset(sha, 'a', 64);
    sha[64] = '\0';
    assert_int_equal(models_plan_pull("bge-m3", sha, &p), TROVE_EUSAGE);
    models_plan_free(&p);
}

static void test_plan_hf_and_url(void **state)
{
    (void)state;
    models_plan p;
    assert_int_equal(models_plan_pull("hf:Org/Repo-x/sub dir/m.gguf", NULL, &p), TROVE_OK);
    assert_string_equal(p.items[0].url,
                        "https://huggingface.co/Org/Repo-x/resolve/main/sub%20dir/m.gguf");
    assert_string_equal(p.name, "m.gguf");
    assert_string_equal(p.items[0].dest, in_dir("trove/models/m.gguf"));
    assert_int_equal(p.items[0].size, -1);
    assert_null(p.items[0].sha256);
    models_plan_free(&p);

    assert_int_equal(models_plan_pull("hf:minishlab/potion-base-2M", NULL, &p), TROVE_OK);
    assert_true(p.folder);
    assert_null(p.entry);
    assert_string_equal(p.name, "potion-base-2M");
    assert_int_equal(p.n_items, 3);
    models_plan_free(&p);

    char sha[65];
    memset(sha, 'F', 64);
    sha[64] = '\0';
    assert_int_equal(models_plan_pull("https://h.example/a/b.gguf?download=1#x", sha, &p), TROVE_OK);
    assert_string_equal(p.name, "b.gguf");
    assert_string_equal(p.items[0].url, "https://h.example/a/b.gguf?download=1#x");
    assert_string_equal(p.items[0].sha256, sha);
    models_plan_free(&p);

    const char *bad[] = {"hf:", "hf:org", "hf:org/", "hf:/repo", "hf:o/r/../x", "hf:o/r/a//b",
                         "hf:o rg/r", "hf:o/r/x?y", "hf:../r/f", "https://h.example",
                         "https://h.example/", "https://h.example/a/..", "http://h/a b.gguf",
                         "nonsense", ""};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        assert_int_equal(models_plan_pull(bad[i], NULL, &p), TROVE_EUSAGE);
        models_plan_free(&p);
    }
    /* a digest is for one file, and must be one */
    assert_int_equal(models_plan_pull("hf:o/r", sha, &p), TROVE_EUSAGE);
    models_plan_free(&p);
    assert_int_equal(models_plan_pull("hf:o/r/f.gguf", "abc", &p), TROVE_EUSAGE);
    models_plan_free(&p);
}

static void test_resolve_precedence(void **state)
{
    (void)state;
    char *models = models_dir();
    assert_string_equal(models, in_dir("trove/models"));
    assert_int_equal(mkdir(in_dir("trove"), 0755), 0);
    assert_int_equal(mkdir(models, 0755), 0);
    touch(in_dir("trove/models/a.gguf"), 4);
    touch(in_dir("b.gguf"), 4);
    config cfg = {0};

    char *path = (char *)1;
    assert_int_equal(models_resolve(&cfg, NULL, &path), TROVE_OK);
    assert_null(path);   /* nothing configured: semantic search is off */
    assert_int_equal(models_resolve(NULL, "", &path), TROVE_OK);
    assert_null(path);

    config_set_embed_model(&cfg, "a.gguf");
    models_choice c;
    assert_int_equal(models_resolve_choice(&cfg, NULL, &c), TROVE_OK);
    assert_int_equal(c.source, MODELS_SRC_CONFIG);
    assert_string_equal(c.path, in_dir("trove/models/a.gguf"));
    assert_string_equal(c.name, "a.gguf");
    models_choice_free(&c);

    setenv("TROVE_EMBED_MODEL", in_dir("b.gguf"), 1);
    assert_int_equal(models_resolve_choice(&cfg, NULL, &c), TROVE_OK);
    assert_int_equal(c.source, MODELS_SRC_ENV);
    assert_string_equal(c.path, in_dir("b.gguf"));
    models_choice_free(&c);

    assert_int_equal(models_resolve_choice(&cfg, "a.gguf", &c), TROVE_OK);
    assert_int_equal(c.source, MODELS_SRC_FLAG);
    assert_string_equal(c.path, in_dir("trove/models/a.gguf"));
    models_choice_free(&c);
    unsetenv("TROVE_EMBED_MODEL");

    /* errors say where the name came from */
    config_set_embed_model(&cfg, "missing.gguf");
    cfg.file = (char *)"/x/config.yaml";
    assert_int_equal(models_resolve(&cfg, NULL, &path), TROVE_ENOENT);
    assert_null(path);
    assert_non_null(strstr(trove_errmsg(), "/x/config.yaml"));
    cfg.file = NULL;
    config_set_embed_model(&cfg, NULL);
    assert_null(cfg.embed_model);
    free(models);
}

static void test_resolve_spec_forms(void **state)
{
    (void)state;
    assert_int_equal(mkdir(in_dir("m2v"), 0755), 0);
    assert_int_equal(mkdir(in_dir("empty"), 0755), 0);
    touch(in_dir("m2v/model.safetensors"), 1);
    models_choice c;
    /* a folder is a model2vec model only with model.safetensors */
    assert_int_equal(models_resolve_spec(in_dir("m2v/"), &c), TROVE_OK);
    assert_string_equal(c.path, in_dir("m2v"));
    assert_string_equal(c.name, "m2v");
    models_choice_free(&c);
    assert_int_equal(models_resolve_spec(in_dir("empty"), &c), TROVE_EINVAL);
    assert_non_null(strstr(trove_errmsg(), "not a model2vec model"));
    models_choice_free(&c);
    assert_int_equal(models_resolve_spec(in_dir("none.gguf"), &c), TROVE_ENOENT);
    models_choice_free(&c);

    /* ~ is the home folder */
    const char *home = getenv("HOME");
    char *saved = home ? strdup(home) : NULL;
    setenv("HOME", dir, 1);
    assert_int_equal(models_resolve_spec("~/m2v", &c), TROVE_OK);
    assert_string_equal(c.path, in_dir("m2v"));
    models_choice_free(&c);
    if (saved)
        setenv("HOME", saved, 1);
    free(saved);

    /* a catalogue model: installed or not */
    const models_entry *e = models_find("potion-base-8M");
    assert_int_equal(models_resolve_spec("potion-base-8m", &c), TROVE_ENOENT);
    assert_ptr_equal(c.entry, e);
    assert_non_null(strstr(trove_errmsg(), "trove model pull potion-base-8M"));
    models_choice_free(&c);
    assert_false(models_entry_installed(e));
    char *p = models_entry_path(e);
    assert_int_equal(mkdir(in_dir("trove"), 0755), 0);
    assert_int_equal(mkdir(in_dir("trove/models"), 0755), 0);
    assert_int_equal(mkdir(p, 0755), 0);
    touch(in_dir("trove/models/potion-base-8M/model.safetensors"), 1);
    touch(in_dir("trove/models/potion-base-8M/tokenizer.json"), 1);
    assert_false(models_entry_installed(e));   /* config.json still missing */
    touch(in_dir("trove/models/potion-base-8M/config.json"), 1);
    assert_true(models_entry_installed(e));
    assert_int_equal(models_resolve_spec("potion-base-8M", &c), TROVE_OK);
    assert_string_equal(c.path, p);
    assert_string_equal(c.name, "potion-base-8M");
    models_choice_free(&c);
    free(p);

    assert_int_equal(models_resolve_spec("no-such-model", &c), TROVE_ENOENT);
    assert_non_null(strstr(trove_errmsg(), "trove model list"));
    models_choice_free(&c);
}

static void test_config_embed_model_round_trip(void **state)
{
    (void)state;
    const char *file = in_dir("cfg/config.yaml");
    config cfg;
    assert_int_equal(config_load_file(&cfg, file), TROVE_OK);
    assert_null(cfg.embed_model);
    config_set_embed_model(&cfg, "/models/my \"odd\" model.gguf");
    assert_int_equal(config_save(&cfg), TROVE_OK);
    config_free(&cfg);
    assert_int_equal(config_load_file(&cfg, file), TROVE_OK);
    assert_string_equal(cfg.embed_model, "/models/my \"odd\" model.gguf");
    config_set_embed_model(&cfg, "");
    assert_int_equal(config_save(&cfg), TROVE_OK);
    config_free(&cfg);
    assert_int_equal(config_load_file(&cfg, file), TROVE_OK);
    assert_null(cfg.embed_model);
    config_free(&cfg);
    /* a list where a name belongs is an error naming the file */
    FILE *f = fopen(file, "w");
    fputs("embed_model: [a, b]\n", f);
    fclose(f);
    assert_int_equal(config_load_file(&cfg, file), TROVE_EPARSE);
    assert_non_null(strstr(trove_errmsg(), "embed_model"));
    config_free(&cfg);
}

/* A bare name is never a file of the current folder: a folder planted
 * where trove runs is not parsed as a model (issue 15); "./name" is. A
 * relative path from config.yaml is relative to config.yaml's folder. */
static void test_bare_names_stay_in_the_models_folder(void **state)
{
    (void)state;
    assert_int_equal(mkdir(in_dir("here"), 0755), 0);
    assert_int_equal(mkdir(in_dir("here/potion-base-8M"), 0755), 0);
    assert_int_equal(mkdir(in_dir("here/mine"), 0755), 0);
    touch(in_dir("here/potion-base-8M/model.safetensors"), 1);
    touch(in_dir("here/mine/model.safetensors"), 1);
    touch(in_dir("here/x.gguf"), 4);
    char cwd[512];
    assert_non_null(getcwd(cwd, sizeof cwd));
    assert_int_equal(chdir(in_dir("here")), 0);
    models_choice c;
    /* a catalogue name not pulled: "not installed", never ./potion-base-8M */
    assert_int_equal(models_resolve_spec("potion-base-8M", &c), TROVE_ENOENT);
    assert_non_null(strstr(trove_errmsg(), "not installed"));
    assert_null(c.path);
    models_choice_free(&c);
    const char *bare[] = {"mine", "x.gguf", ".x.gguf"};
    for (size_t i = 0; i < sizeof bare / sizeof *bare; i++) {
        assert_int_equal(models_resolve_spec(bare[i], &c), TROVE_ENOENT);
        assert_null(c.path);
        assert_non_null(strstr(trove_errmsg(), "given as a path"));
        models_choice_free(&c);
    }
    assert_false(models_spec_is_path("mine"));
    assert_true(models_spec_is_path("./mine"));
    assert_true(models_spec_is_path("~/m"));
    assert_int_equal(models_resolve_spec("./mine", &c), TROVE_OK);
    assert_string_equal(c.path, in_dir("here/mine"));
    models_choice_free(&c);
    assert_int_equal(models_resolve_spec("./x.gguf", &c), TROVE_OK);
    models_choice_free(&c);
    /* the environment: the same rule */
    setenv("TROVE_EMBED_MODEL", "mine", 1);
    assert_int_equal(models_resolve_choice(NULL, NULL, &c), TROVE_ENOENT);
    assert_non_null(strstr(trove_errmsg(), "TROVE_EMBED_MODEL"));
    models_choice_free(&c);
    unsetenv("TROVE_EMBED_MODEL");

    /* config.yaml's "./mine" is beside config.yaml, from wherever */
    assert_int_equal(mkdir(in_dir("cfg"), 0755), 0);
    assert_int_equal(mkdir(in_dir("cfg/mine"), 0755), 0);
    touch(in_dir("cfg/mine/model.safetensors"), 1);
    config cfg = {0};
    char cfg_file[256];
    snprintf(cfg_file, sizeof cfg_file, "%s", in_dir("cfg/config.yaml"));
    cfg.file = cfg_file;
    config_set_embed_model(&cfg, "./mine");
    assert_int_equal(models_resolve_choice(&cfg, NULL, &c), TROVE_OK);
    assert_string_equal(c.path, in_dir("cfg/mine"));
    assert_int_equal(c.source, MODELS_SRC_CONFIG);
    models_choice_free(&c);
    /* ... while --model ./mine is the current folder's */
    assert_int_equal(models_resolve_choice(&cfg, "./mine", &c), TROVE_OK);
    assert_string_equal(c.path, in_dir("here/mine"));
    models_choice_free(&c);
    config_set_embed_model(&cfg, NULL);

    /* the reranker: --reranker, $TROVE_RERANK_MODEL, rerank_model: */
    assert_int_equal(models_resolve_reranker(&cfg, NULL, &c), TROVE_OK);
    assert_null(c.path);
    models_choice_free(&c);
    cfg.rerank_model = (char *)"x.gguf";
    assert_int_equal(models_resolve_reranker(&cfg, NULL, &c), TROVE_ENOENT);
    assert_non_null(strstr(trove_errmsg(), "cfg/config.yaml"));
    models_choice_free(&c);
    setenv("TROVE_RERANK_MODEL", "./x.gguf", 1);
    assert_int_equal(models_resolve_reranker(&cfg, NULL, &c), TROVE_OK);
    assert_int_equal(c.source, MODELS_SRC_ENV);
    models_choice_free(&c);
    assert_int_equal(models_resolve_reranker(&cfg, "mine", &c), TROVE_ENOENT);
    assert_non_null(strstr(trove_errmsg(), "--reranker"));
    models_choice_free(&c);
    unsetenv("TROVE_RERANK_MODEL");
    cfg.rerank_model = NULL;
    cfg.file = NULL;
    assert_int_equal(chdir(cwd), 0);
}

static void write_bytes(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, n, f), n);
    fclose(f);
}

/* A safetensors head: the header length, then a JSON object. */
static void write_safetensors(const char *path, uint64_t hlen_claimed)
{
    unsigned char b[8 + 20] = {0};
    for (int i = 0; i < 8; i++)
        b[i] = (unsigned char)(hlen_claimed >> (8 * i));
    memcpy(b + 8, "{\"__metadata__\":{}} ", 20);
    write_bytes(path, b, sizeof b);
}

static void check_fails(const char *path, trove_err want, const char *needle)
{
    trove_err got = models_check(path);
    if (got != want)
        fail_msg("%s: %d, not %d: %s", path, got, want, trove_errmsg());
    if (!strstr(trove_errmsg(), needle))
        fail_msg("'%s' not in '%s'", needle, trove_errmsg());
}

static void test_check_what_was_pulled(void **state)
{
    (void)state;
    /* GGUF files by their magic and version */
    write_bytes(in_dir("ok.gguf"), "GGUF\x03\x00\x00\x00rest", 12);
    assert_int_equal(models_check(in_dir("ok.gguf")), TROVE_OK);
    write_bytes(in_dir("v9.gguf"), "GGUF\x09\x00\x00\x00rest", 12);
    check_fails(in_dir("v9.gguf"), TROVE_EINVAL, "version 9");
    write_bytes(in_dir("page.gguf"), "<html>hi</html>", 15);
    check_fails(in_dir("page.gguf"), TROVE_EINVAL, "starts with \"<html>hi\"");
    write_bytes(in_dir("short.gguf"), "GGU", 3);
    check_fails(in_dir("short.gguf"), TROVE_EINVAL, "not a GGUF model");
    write_bytes(in_dir("empty.gguf"), "", 0);
    check_fails(in_dir("empty.gguf"), TROVE_EINVAL, "empty");
    write_safetensors(in_dir("model.safetensors"), 20);
    check_fails(in_dir("model.safetensors"), TROVE_EINVAL, "hf:ORG/REPO");
    check_fails(in_dir("nope.gguf"), TROVE_ENOENT, "nope.gguf");

    /* a model2vec folder: its three files, each with the right head */
    char m[256];
    snprintf(m, sizeof m, "%s", in_dir("m2v"));   /* in_dir's buffers rotate */
    assert_int_equal(mkdir(m, 0755), 0);
    check_fails(m, TROVE_ENOENT, "model.safetensors: missing");
    write_safetensors(in_dir("m2v/model.safetensors"), 1000);   /* longer than the file */
    check_fails(m, TROVE_EINVAL, "not a safetensors file");
    write_safetensors(in_dir("m2v/model.safetensors"), 20);
    check_fails(m, TROVE_ENOENT, "tokenizer.json: missing");
    write_bytes(in_dir("m2v/tokenizer.json"), "  \n[1]", 6);
    check_fails(m, TROVE_EINVAL, "not a tokenizer");
    write_bytes(in_dir("m2v/tokenizer.json"), " {}", 3);
    check_fails(m, TROVE_ENOENT, "config.json: missing");
    write_bytes(in_dir("m2v/config.json"), "{}", 2);
    assert_int_equal(models_check(m), TROVE_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_catalogue_invariants),
        cmocka_unit_test_setup_teardown(test_plan_catalogue, setup, teardown),
        cmocka_unit_test_setup_teardown(test_plan_hf_and_url, setup, teardown),
        cmocka_unit_test_setup_teardown(test_resolve_precedence, setup, teardown),
        cmocka_unit_test_setup_teardown(test_resolve_spec_forms, setup, teardown),
        cmocka_unit_test_setup_teardown(test_config_embed_model_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bare_names_stay_in_the_models_folder, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_check_what_was_pulled, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
