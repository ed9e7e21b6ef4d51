/* trove model pull|list|use — model management (dispatched from cmd_model.c):
 *   trove model pull [NAME|hf:ORG/REPO[/FILE]|URL] [--sha256 HEX] [--force] [--quiet] [--json]
 *   trove model list [--json]
 *   trove model use [NAME|PATH | --unset] [--json]
 * The work is done by models/ (catalogue, resolver, pull plans) and fetch/
 * (downloads); this file parses arguments and renders results. */
#include <dirent.h>
#include <signal.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "cli/out.h"
#include "fetch/fetch.h"
#include "models/models.h"
#include "util/mem.h"

/* A JSON string from any bytes, or null. */
static json_t *jstr(const char *raw)
{
    return raw ? out_json_str(raw) : json_null();
}

static void fmt_size(char *buf, size_t cap, int64_t n)
{
    if (n < 0)
        snprintf(buf, cap, "?");
    else if (n < 1000000)
        snprintf(buf, cap, "%.0f kB", (double)n / 1e3);
    else if (n < 1000000000)
        snprintf(buf, cap, "%.0f MB", (double)n / 1e6);
    else
        snprintf(buf, cap, "%.2f GB", (double)n / 1e9);
}

/* ---- pull ---- */

static const char PULL_USAGE[] =
    "usage: trove model pull [NAME | hf:ORG/REPO[/FILE] | URL] [--sha256 HEX] [--force]\n"
    "                        [--quiet] [--json]\n"
    "\n"
    "Downloads a model into $XDG_DATA_HOME/trove/models (default: the catalogue's\n"
    "default model; `trove model list` shows the catalogue). hf:ORG/REPO/FILE fetches\n"
    "one file of a Hugging Face repository, hf:ORG/REPO a model2vec folder\n"
    "(model.safetensors, tokenizer.json, config.json); $TROVE_HF_ENDPOINT replaces\n"
    "https://huggingface.co. An interrupted download resumes on the next run.\n"
    "--sha256 checks a single hf: or URL file against that digest; --force\n"
    "downloads files that are already there again. When no embedding model is\n"
    "configured yet, pulling a catalogue embedding model makes it the active one.\n";

static volatile sig_atomic_t pull_stop;

static void on_pull_signal(int sig)
{
    (void)sig;
    pull_stop = 1;
}

/* The pull's JSON document: what was fetched and where. */
static void pull_json(const models_plan *plan, size_t fetched, int set)
{
    json_t *root = out_json_root();
    json_object_set_new(root, "name", jstr(plan->name));
    json_object_set_new(root, "path", jstr(plan->path));
    json_object_set_new(root, "format", json_string(plan->folder ? "model2vec" : "gguf"));
    json_t *files = json_array();
    for (size_t i = 0; i < plan->n_items; i++)
        json_array_append_new(files, json_pack("{s:o, s:o, s:b}", "url", jstr(plan->items[i].url),
                                               "path", jstr(plan->items[i].dest),
                                               "sha256_checked", plan->items[i].sha256 != NULL));
    json_object_set_new(root, "files", files);
    json_object_set_new(root, "fetched", json_integer((json_int_t)fetched));
    json_object_set_new(root, "embed_model_set", json_boolean(set));
    out_json_print(stdout, root);
}

static int model_pull(const cli *c, int argc, char **argv)
{
    const char *spec = NULL, *sha = NULL;
    int force = 0, quiet = 0, json = 0;
    for (int i = 2; i < argc; i++) {
        const char *v;
        if (strcmp(argv[i], "--force") == 0 || strcmp(argv[i], "-f") == 0)
            force = 1;
        else if (strcmp(argv[i], "--quiet") == 0 || strcmp(argv[i], "-q") == 0)
            quiet = 1;
        else if (strcmp(argv[i], "--json") == 0)
            json = 1;
        else if (cli_opt_value(argc, argv, &i, "--sha256", &v)) {
            if (!v || !*v)
                return cli_usage("model pull", "--sha256 needs a hex digest");
            sha = v;
        } else if (argv[i][0] == '-')
            return cli_usage("model pull", "unknown option %s", argv[i]);
        else if (!spec)
            spec = argv[i];
        else
            return cli_usage("model pull", "one model at a time");
    }
    if (!spec)
        spec = models_default()->name;
    models_plan plan;
    trove_err rc = models_plan_pull(spec, sha, &plan);
    if (rc) {
        models_plan_free(&plan);
        return rc == TROVE_EUSAGE ? cli_usage("model pull", "%s", trove_errmsg()) : cli_error(rc);
    }
    fetch_opts o = {.size = -1, .retries = -1, .progress = !quiet, .tty = c->stderr_tty,
                    .stop = &pull_stop};
    if (!quiet) {
        int64_t total = plan.entry ? models_entry_size(plan.entry) : -1;
        char sz[32];
        fmt_size(sz, sizeof sz, total);
        fprintf(stderr, "trove: pulling %s (%zu file%s%s%s) into %s\n", plan.name, plan.n_items,
                plan.n_items == 1 ? "" : "s", total >= 0 ? ", " : "", total >= 0 ? sz : "",
                plan.path);
    }
    size_t fetched = 0;
    /* Ctrl-C stops the download and keeps what arrived, and says so */
    pull_stop = 0;
    struct sigaction sa = {.sa_handler = on_pull_signal}, old_int, old_term;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    rc = models_pull(&plan, &o, force, &fetched);
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    if (rc == TROVE_EINTR) {
        fprintf(stderr, "trove: %s\n", trove_errmsg());
        models_plan_free(&plan);
        return 130;
    }
    if (rc) {
        models_plan_free(&plan);
        return cli_error(rc);
    }
    /* The first embedding model pulled becomes the active one. */
    int set = 0;
    config cfg;
    if (plan.entry && plan.entry->kind == MODELS_EMBED && config_load(&cfg) == TROVE_OK) {
        if (!cfg.embed_model) {
            config_set_embed_model(&cfg, plan.entry->name);
            if ((rc = config_save(&cfg)) != TROVE_OK) {
                config_free(&cfg);
                models_plan_free(&plan);
                return cli_error(rc);
            }
            set = 1;
            if (!quiet)
                fprintf(stderr, "trove: embed_model set to %s in %s\n", plan.entry->name, cfg.file);
        }
        config_free(&cfg);
    }
    if (json) {
        pull_json(&plan, fetched, set);
    } else {
        printf("%s %s: %s\n", fetched ? "pulled" : "already present", plan.name, plan.path);
        if (!set && !quiet && (!plan.entry || plan.entry->kind == MODELS_EMBED))
            fprintf(stderr, "trove: make it the active embedding model with `trove model use %s`\n",
                    plan.name);
    }
    models_plan_free(&plan);
    return EXIT_OK;
}

/* ---- list ---- */

static const char LIST_USAGE[] =
    "usage: trove model list [--json]\n"
    "\n"
    "The curated catalogue (name, kind, dimensions, download size, languages,\n"
    "licence, installed or not), the default (*) and the active model, and any\n"
    "other models found in the models folder.\n";

/* Models in the folder that the catalogue does not describe. */
static char **other_models(const char *dir, size_t *n)
{
    char **out = NULL;
    *n = 0;
    DIR *d = opendir(dir);
    if (!d)
        return NULL;
    struct dirent *de;
    while ((de = readdir(d))) {
        const char *nm = de->d_name;
        if (nm[0] == '.')
            continue;
        size_t len = strlen(nm);
        size_t nc;
        const models_entry *cat = models_catalog(&nc);
        int known = 0;
        for (size_t i = 0; i < nc && !known; i++)
            known = strcmp(nm, cat[i].format == MODELS_GGUF ? cat[i].files[0].name : cat[i].name) == 0;
        if (known)
            continue;
        models_choice c;
        int ok = (len > 5 && strcmp(nm + len - 5, ".gguf") == 0) || !strchr(nm, '.');
        if (ok && models_resolve_spec(nm, &c) == TROVE_OK) {
            out = xrealloc(out, (*n + 1) * sizeof *out);
            out[(*n)++] = xstrdup(nm);
        }
        if (ok)
            models_choice_free(&c);
    }
    closedir(d);
    /* readdir order is arbitrary: sort for stable output */
    for (size_t i = 1; i < *n; i++)
        for (size_t j = i; j > 0 && strcmp(out[j - 1], out[j]) > 0; j--) {
            char *t = out[j];
            out[j] = out[j - 1];
            out[j - 1] = t;
        }
    return out;
}

static void list_json(const char *dir, const models_entry *dflt, const models_choice *act,
                      const char *act_err, const models_entry *cat, size_t n, char **other,
                      size_t n_other)
{
    json_t *root = out_json_root();
    json_object_set_new(root, "models_dir", jstr(dir));
    json_object_set_new(root, "default", jstr(dflt->name));
    json_object_set_new(root, "active",
                        act->source == MODELS_SRC_NONE
                            ? json_null()
                            : json_pack("{s:o, s:o, s:o, s:o, s:o}", "spec", jstr(act->spec),
                                        "name", jstr(act->name), "path", jstr(act->path),
                                        "source", jstr(models_source_name(act->source)),
                                        "error", jstr(act_err)));
    json_t *models = json_array();
    for (size_t i = 0; i < n; i++) {
        const models_entry *e = &cat[i];
        char *path = models_entry_path(e);
        int64_t size = models_entry_size(e);
        int pinned = 1;
        for (size_t f = 0; f < e->n_files; f++)
            pinned &= e->files[f].sha256 != NULL;
        json_t *m = json_pack("{s:o, s:s, s:s, s:o, s:o}", "name", jstr(e->name), "kind",
                              e->kind == MODELS_EMBED ? "embedding" : "reranker", "format",
                              e->format == MODELS_GGUF ? "gguf" : "model2vec", "repo",
                              jstr(e->repo), "revision", jstr(e->revision));
        json_object_set_new(m, "dim", e->dim > 0 ? json_integer(e->dim) : json_null());
        json_object_set_new(m, "size", size >= 0 ? json_integer((json_int_t)size) : json_null());
        json_object_set_new(m, "sha256_pinned", json_boolean(pinned));
        json_object_set_new(m, "languages", jstr(e->languages));
        json_object_set_new(m, "license", jstr(e->license));
        json_object_set_new(m, "note", jstr(e->note));
        json_object_set_new(m, "installed", json_boolean(models_entry_installed(e)));
        json_object_set_new(m, "default", json_boolean(e == dflt));
        json_object_set_new(m, "active", json_boolean(act->entry == e));
        json_object_set_new(m, "path", jstr(path));
        json_array_append_new(models, m);
        free(path);
    }
    json_object_set_new(root, "models", models);
    json_t *others = json_array();
    for (size_t i = 0; i < n_other; i++) {
        char *path = xmalloc(strlen(dir) + strlen(other[i]) + 2);
        sprintf(path, "%s/%s", dir, other[i]);
        json_array_append_new(others, json_pack("{s:o, s:o}", "name", jstr(other[i]), "path",
                                                jstr(path)));
        free(path);
    }
    json_object_set_new(root, "other", others);
    out_json_print(stdout, root);
}

static int model_list(int argc, char **argv)
{
    int json = 0;
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0)
            json = 1;
        else
            return cli_usage("model list", "unknown argument %s", argv[i]);
    }
    config cfg;
    int rc = cli_load_config(&cfg);
    if (rc)
        return rc;
    models_choice act;
    trove_err err = models_resolve_choice(&cfg, NULL, &act);
    char *act_err = err ? xstrdup(trove_errmsg()) : NULL;
    char *dir = models_dir();
    size_t n, n_other;
    const models_entry *cat = models_catalog(&n);
    const models_entry *dflt = models_default();
    char **other = other_models(dir, &n_other);
    if (json) {
        list_json(dir, dflt, &act, act_err, cat, n, other, n_other);
    } else {
        printf("  %-26s %-12s %5s %8s  %-29s %-11s %s\n", "NAME", "KIND", "DIM", "SIZE",
               "LANGUAGES", "LICENSE", "STATUS");
        for (size_t i = 0; i < n; i++) {
            const models_entry *e = &cat[i];
            char sz[32], dim[16], kind[32];
            fmt_size(sz, sizeof sz, models_entry_size(e));
            if (e->dim > 0)
                snprintf(dim, sizeof dim, "%d", e->dim);
            else
                snprintf(dim, sizeof dim, "-");
            snprintf(kind, sizeof kind, "%s %s", e->kind == MODELS_EMBED ? "embed" : "rerank",
                     e->format == MODELS_GGUF ? "gguf" : "static");
            printf("%c %-26s %-12s %5s %8s  %-29s %-11s %s%s\n", e == dflt ? '*' : ' ', e->name,
                   kind, dim, sz, e->languages, e->license,
                   models_entry_installed(e) ? "installed" : "-",
                   act.entry == e ? ", active" : "");
        }
        for (size_t i = 0; i < n_other; i++)
            printf("  %-26s (in the models folder, not in the catalogue)%s\n", other[i],
                   act.path && strcmp(act.name, other[i]) == 0 ? ", active" : "");
        printf("\n* default: %s (`trove model pull` with no name; docs/models.md says why)\n",
               dflt->name);
        printf("models folder: %s\n", dir);
        if (act.source == MODELS_SRC_NONE)
            printf("active embedding model: none (semantic search is off; `trove model use NAME`)\n");
        else if (act_err)
            printf("active embedding model: %s, from %s: %s\n", act.spec,
                   models_source_name(act.source), act_err);
        else
            printf("active embedding model: %s (%s), from %s\n", act.name, act.path,
                   models_source_name(act.source));
    }
    for (size_t i = 0; i < n_other; i++)
        free(other[i]);
    free(other);
    free(dir);
    free(act_err);
    models_choice_free(&act);
    config_free(&cfg);
    return EXIT_OK;
}

/* ---- use ---- */

static const char USE_USAGE[] =
    "usage: trove model use [NAME | PATH] [--json]\n"
    "       trove model use --unset\n"
    "\n"
    "With NAME (a catalogue name or a model in the models folder) or PATH (a GGUF\n"
    "file or a model2vec folder), sets `embed_model:` in config.yaml; --unset\n"
    "removes it. Without an argument, prints the active embedding model and where\n"
    "it is set: --model, then $TROVE_EMBED_MODEL, then config.yaml.\n";

static int use_show(const config *cfg, int json)
{
    models_choice c;
    trove_err err = models_resolve_choice(cfg, NULL, &c);
    if (err) {
        models_choice_free(&c);
        return cli_error(err);
    }
    if (json) {
        json_t *root = out_json_root();
        json_object_set_new(root, "name", jstr(c.name));
        json_object_set_new(root, "path", jstr(c.path));
        json_object_set_new(root, "spec", jstr(c.spec));
        json_object_set_new(root, "source", jstr(c.source == MODELS_SRC_NONE
                                                     ? NULL : models_source_name(c.source)));
        out_json_print(stdout, root);
    } else if (c.source == MODELS_SRC_NONE) {
        printf("no embedding model configured: semantic search is off\n"
               "(`trove model pull` fetches the default, `trove model use NAME` picks one)\n");
    } else {
        printf("%s\t%s\t(from %s)\n", c.name, c.path, models_source_name(c.source));
    }
    models_choice_free(&c);
    return EXIT_OK;
}

static int model_use(int argc, char **argv)
{
    const char *spec = NULL;
    int unset = 0, json = 0;
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--unset") == 0)
            unset = 1;
        else if (strcmp(argv[i], "--json") == 0)
            json = 1;
        else if (argv[i][0] == '-' && argv[i][1])
            return cli_usage("model use", "unknown option %s", argv[i]);
        else if (!spec)
            spec = argv[i];
        else
            return cli_usage("model use", "one model only");
    }
    if (unset && spec)
        return cli_usage("model use", "--unset takes no model");
    config cfg;
    int rc = cli_load_config(&cfg);
    if (rc)
        return rc;
    if (!spec && !unset) {
        rc = use_show(&cfg, json);
        config_free(&cfg);
        return rc;
    }
    char *value = NULL;
    if (spec) {
        models_choice c;
        trove_err err = models_resolve_spec(spec, &c);
        if (err && !(err == TROVE_ENOENT && c.entry)) {
            models_choice_free(&c);
            config_free(&cfg);
            return cli_error(err);
        }
        if (err) {  /* a catalogue model not pulled yet: fine, say so */
            fprintf(stderr, "trove: warning: %s\n", trove_errmsg());
        } else if ((err = models_check(c.path)) != TROVE_OK) {
            /* what every embed would fail on later: refuse it now */
            char why[2048];
            snprintf(why, sizeof why, "%s", trove_errmsg());
            models_choice_free(&c);
            config_free(&cfg);
            return cli_error(trove_fail(err, "cannot use %s: %s", spec, why));
        }
        /* catalogue: its canonical name; a path: absolute, so any working
         * folder finds it; a models-folder name: as given */
        value = xstrdup(c.entry ? c.entry->name : models_spec_is_path(spec) ? c.path : spec);
        models_choice_free(&c);
    }
    config_set_embed_model(&cfg, value);
    trove_err err = config_save(&cfg);
    if (err) {
        free(value);
        config_free(&cfg);
        return cli_error(err);
    }
    if (value)
        printf("embed_model: %s (in %s)\n", value, cfg.file);
    else
        printf("embed_model removed from %s\n", cfg.file);
    const char *env = getenv("TROVE_EMBED_MODEL");
    if (env && *env)
        fprintf(stderr, "trove: note: TROVE_EMBED_MODEL=%s overrides config.yaml\n", env);
    free(value);
    config_free(&cfg);
    return EXIT_OK;
}

int cmd_model_manage(cli *c, int argc, char **argv)
{
    const char *usage = strcmp(argv[1], "pull") == 0   ? PULL_USAGE
                        : strcmp(argv[1], "list") == 0 ? LIST_USAGE
                                                       : USE_USAGE;
    for (int i = 2; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            fputs(usage, stdout);
            return EXIT_OK;
        }
    if (strcmp(argv[1], "pull") == 0)
        return model_pull(c, argc, argv);
    if (strcmp(argv[1], "list") == 0)
        return model_list(argc, argv);
    return model_use(argc, argv);
}
