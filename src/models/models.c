#include "models/models.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fetch/fetch.h"
#include "util/buf.h"
#include "util/fsutil.h"
#include "util/mem.h"

/* ---- the catalogue ----------------------------------------------------
 *
 * Revisions, sizes and SHA-256 digests are those published for the hub
 * files (LFS object ids), pinned so a pull today and a pull next year
 * fetch the same bytes. Where no public record of a digest was found the
 * entry says NULL and the pull checks the size only (or nothing, for -1).
 * docs/models.md lists the sources and explains the default. */
static const models_entry CATALOG[] = {
    {"potion-multilingual-128M", MODELS_EMBED, MODELS_MODEL2VEC,
     "minishlab/potion-multilingual-128M", "73908c3438cf03b6a01bcb9611d62b23d0726f08", 256,
     "101 languages incl. Chinese", "MIT",
     "static model2vec table: embeds 10k chunks in seconds on 2 cores (default)",
     3,
     {{"config.json", 271, "595e4cab2093732efd5dbe084fd5c1826b5eea693b73b4c1fd971672867d2e54"},
      {"tokenizer.json", 18616131,
       "19f1909063da3cfe3bd83a782381f040dccea475f4816de11116444a73e1b6a1"},
      {"model.safetensors", 512361560,
       "14b5eb39cb4ce5666da8ad1f3dc6be4346e9b2d601c073302fa0a31bf7943397"}}},
    {"potion-base-8M", MODELS_EMBED, MODELS_MODEL2VEC, "minishlab/potion-base-8M",
     "bf8b056651a2c21b8d2565580b8569da283cab23", 256, "English", "MIT",
     "static model2vec table, 31 MB: the smallest and fastest, English only",
     3,
     {{"config.json", 202, "2a6ac0e9aaa356a68a5688070db78fc3a464fefe85d2f06a1905ce3718687553"},
      {"tokenizer.json", 683666, "e67e803f624fb4d67dea1c730d06e1067e1b14d830e2c2202569e3ef0f70bb50"},
      {"model.safetensors", 30236760,
       "f65d0f325faadc1e121c319e2faa41170d3fa07d8c89abd48ca5358d9a223de2"}}},
    {"bge-small-en-v1.5", MODELS_EMBED, MODELS_GGUF, "CompendiumLabs/bge-small-en-v1.5-gguf",
     "d32f8c040ea3b516330eeb75b72bcc2d3a780ab7", 384, "English", "MIT",
     "small transformer encoder (BERT, 33M parameters, Q8_0)",
     1,
     {{"bge-small-en-v1.5-q8_0.gguf", 36806944,
       "ec38e8da142596baa913124ae50550de284b6916bf59577ef2f0cb9660c2f514"}}},
    {"multilingual-e5-small", MODELS_EMBED, MODELS_GGUF, "TwinSunsLLC/multilingual-e5-small-gguf",
     "b6cac9615d4ecce28d7f22539b7322d695fc2886", 384, "~100 languages incl. Chinese", "MIT",
     "multilingual transformer encoder (XLM-R, 118M parameters, Q8_0)",
     1,
     {{"multilingual-e5-small-q8_0.gguf", 132439008,
       "e011debc1208e31bf7b6aebee2d9fc8bd2ca11694a77ed66ac9d0c9d0a877c93"}}},
    {"bge-m3", MODELS_EMBED, MODELS_GGUF, "ggml-org/bge-m3-Q8_0-GGUF",
     "9eba04c5d75ba5a1595e45de734d36bef4e5cb98", 1024, "100+ languages incl. Chinese", "MIT",
     "large multilingual encoder (XLM-R, 568M parameters, Q8_0): best quality, slowest",
     1,
     {{"bge-m3-q8_0.gguf", 634553760,
       "aa473d51f451a22f0fcf39ba3330c14bed38a385712b1113440f69df4047a173"}}},
    {"bge-reranker-v2-m3", MODELS_RERANK, MODELS_GGUF, "gpustack/bge-reranker-v2-m3-GGUF",
     "3093af03b1a635e67b084b1d8c03c5f5e020fd05", 0, "100+ languages incl. Chinese", "Apache-2.0",
     "multilingual cross-encoder reranker (XLM-R, 568M parameters, Q8_0)",
     1,
     {{"bge-reranker-v2-m3-Q8_0.gguf", 635676416,
       "a43c7c9b11a4c1517e5bf95151960e1621d1b72f7a493364b01e386cf1aaa1d3"}}},
    {"ms-marco-MiniLM-L6-v2", MODELS_RERANK, MODELS_GGUF,
     "keisuke-miyako/ms-marco-MiniLM-L6-v2-gguf-q8_0", "main", 0, "English", "Apache-2.0",
     "small English cross-encoder reranker (BERT, 22M parameters, Q8_0); not pinned",
     1, {{"ms-marco-MiniLM-L6-v2-Q8_0.gguf", -1, NULL}}},
    {"qwen3-reranker-0.6b", MODELS_RERANK, MODELS_GGUF, "ggml-org/Qwen3-Reranker-0.6B-Q8_0-GGUF",
     "main", 0, "100+ languages incl. Chinese", "Apache-2.0",
     "LLM reranker (Qwen3 0.6B, Q8_0) for the query pipeline; the engine cannot run it yet",
     1, {{"qwen3-reranker-0.6b-q8_0.gguf", 639153184, NULL}}},
};

#define N_CATALOG (sizeof CATALOG / sizeof *CATALOG)

const models_entry *models_catalog(size_t *n)
{
    *n = N_CATALOG;
    return CATALOG;
}

const models_entry *models_default(void)
{
    return &CATALOG[0];
}

const models_entry *models_find(const char *name)
{
    for (size_t i = 0; i < N_CATALOG; i++)
        if (strcasecmp(CATALOG[i].name, name) == 0)
            return &CATALOG[i];
    return NULL;
}

int64_t models_entry_size(const models_entry *e)
{
    int64_t sum = 0;
    for (size_t i = 0; i < e->n_files; i++) {
        if (e->files[i].size < 0)
            return -1;
        sum += e->files[i].size;
    }
    return sum;
}

/* ---- locations --------------------------------------------------------- */

char *models_dir(void)
{
    return fs_xdg_path(NULL, "XDG_DATA_HOME", ".local/share", "trove/models");
}

char *models_entry_path(const models_entry *e)
{
    char *dir = models_dir();
    tbuf b = {0};
    tbuf_printf(&b, "%s/%s", dir, e->format == MODELS_GGUF ? e->files[0].name : e->name);
    free(dir);
    return tbuf_detach(&b);
}

static int is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

int models_entry_installed(const models_entry *e)
{
    char *path = models_entry_path(e);
    int ok = 1;
    if (e->format == MODELS_GGUF) {
        ok = is_file(path);
    } else {
        tbuf f = {0};
        for (size_t i = 0; i < e->n_files && ok; i++) {
            tbuf_reset(&f);
            tbuf_printf(&f, "%s/%s", path, e->files[i].name);
            ok = is_file(f.data);
        }
        tbuf_free(&f);
    }
    free(path);
    return ok;
}

/* ---- resolving --------------------------------------------------------- */

const char *models_source_name(models_source s)
{
    switch (s) {
    case MODELS_SRC_FLAG:
        return "--model";
    case MODELS_SRC_ENV:
        return "TROVE_EMBED_MODEL";
    case MODELS_SRC_CONFIG:
        return "config.yaml";
    default:
        return "none";
    }
}

void models_choice_free(models_choice *c)
{
    free(c->spec);
    free(c->path);
    free(c->name);
    memset(c, 0, sizeof *c);
}

/* A path must look like one: a name without '/' ("potion-base-8M",
 * "x.gguf") is never looked up in the current folder, so a folder planted
 * where trove runs cannot be taken for a model. */
static int is_path_spec(const char *s)
{
    return strchr(s, '/') || strcmp(s, ".") == 0 || strcmp(s, "..") == 0 || strcmp(s, "~") == 0;
}

/* "~/x" -> "$HOME/x"; anything else copied. */
static char *expand_home(const char *s)
{
    const char *home = getenv("HOME");
    if (s[0] == '~' && (s[1] == '/' || s[1] == '\0') && home && *home) {
        tbuf b = {0};
        tbuf_printf(&b, "%s%s", home, s + 1);
        return tbuf_detach(&b);
    }
    return xstrdup(s);
}

static const char *last_segment(const char *path)
{
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/')
        n--;
    const char *p = path + n;
    while (p > path && p[-1] != '/')
        p--;
    return p;
}

/* An existing GGUF file or model2vec folder at `path` into out. */
static trove_err take_path(const char *path, const char *shown, models_choice *out)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return trove_fail(TROVE_ENOENT, "model %s: %s", shown, strerror(errno));
    if (S_ISDIR(st.st_mode)) {
        tbuf f = {0};
        tbuf_printf(&f, "%s/model.safetensors", path);
        int ok = is_file(f.data);
        tbuf_free(&f);
        if (!ok)
            return trove_fail(TROVE_EINVAL, "model %s is a folder but not a model2vec model "
                              "(it has no model.safetensors)", shown);
    } else if (!S_ISREG(st.st_mode)) {
        return trove_fail(TROVE_EINVAL, "model %s is neither a file nor a folder", shown);
    }
    char *abs = realpath(path, NULL);
    if (!abs)
        return trove_fail(TROVE_ENOENT, "model %s: %s", shown, strerror(errno));
    out->path = abs;
    char *seg = xstrdup(last_segment(abs));
    free(out->name);
    out->name = seg;
    return TROVE_OK;
}

int models_spec_is_path(const char *spec)
{
    return spec && is_path_spec(spec);
}

/* A path spec as a file name: "~/" expanded; a relative one under base
 * (when given). */
static char *spec_file(const char *spec, const char *base)
{
    if (base && *base && spec[0] != '/' && spec[0] != '~') {
        tbuf b = {0};
        tbuf_printf(&b, "%s/%s", base, spec);
        return tbuf_detach(&b);
    }
    return expand_home(spec);
}

static trove_err resolve_spec_at(const char *spec, const char *base, models_choice *out)
{
    memset(out, 0, sizeof *out);
    out->spec = xstrdup(spec);
    if (!*spec)
        return trove_fail(TROVE_EINVAL, "empty model name");
    if (is_path_spec(spec)) {
        char *p = spec_file(spec, base);
        trove_err rc = take_path(p, spec, out);
        free(p);
        return rc;
    }
    const models_entry *e = models_find(spec);
    if (e) {
        out->entry = e;
        out->name = xstrdup(e->name);
        if (!models_entry_installed(e)) {
            int64_t size = models_entry_size(e);
            if (size > 0)
                return trove_fail(TROVE_ENOENT, "model %s is not installed: run `trove model pull "
                                  "%s` (downloads %.0f MB)", e->name, e->name, (double)size / 1e6);
            return trove_fail(TROVE_ENOENT, "model %s is not installed: run `trove model pull %s`",
                              e->name, e->name);
        }
        out->path = models_entry_path(e);
        return TROVE_OK;
    }
    char *dir = models_dir();
    tbuf p = {0};
    tbuf_printf(&p, "%s/%s", dir, spec);
    struct stat st;
    trove_err rc;
    if (stat(p.data, &st) == 0)
        rc = take_path(p.data, spec, out);
    else
        rc = trove_fail(TROVE_ENOENT, "unknown model '%s': not in the catalogue (see `trove model "
                        "list`) and not in %s; a file or folder elsewhere is given as a path "
                        "(./%s), or `trove model pull` it first", spec, dir, spec);
    tbuf_free(&p);
    free(dir);
    return rc;
}

trove_err models_resolve_spec(const char *spec, models_choice *out)
{
    return resolve_spec_at(spec, NULL, out);
}

/* The folder of config.yaml, for its relative paths (caller frees). */
static char *config_folder(const config *cfg)
{
    const char *slash = cfg && cfg->file ? strrchr(cfg->file, '/') : NULL;
    return slash ? xstrndup(cfg->file, (size_t)(slash - cfg->file) + (slash == cfg->file)) : NULL;
}

/* One spec by precedence: the flag, the environment, the config. */
static trove_err resolve_from(const config *cfg, const char *flag, const char *flag_name,
                              const char *env_name, const char *cfg_value, models_choice *out)
{
    memset(out, 0, sizeof *out);
    const char *spec = NULL, *from = NULL;
    models_source src = MODELS_SRC_NONE;
    const char *env = getenv(env_name);
    if (flag && *flag) {
        spec = flag;
        src = MODELS_SRC_FLAG;
        from = flag_name;
    } else if (env && *env) {
        spec = env;
        src = MODELS_SRC_ENV;
        from = env_name;
    } else if (cfg_value && *cfg_value) {
        spec = cfg_value;
        src = MODELS_SRC_CONFIG;
        from = cfg->file ? cfg->file : "config.yaml";
    }
    if (!spec)
        return TROVE_OK;
    /* config.yaml's relative paths are relative to its own folder, not to
     * wherever trove happens to run */
    char *base = src == MODELS_SRC_CONFIG ? config_folder(cfg) : NULL;
    trove_err rc = resolve_spec_at(spec, base, out);
    free(base);
    out->source = src;
    if (rc) {
        /* say where the bad name came from */
        char detail[1024];
        snprintf(detail, sizeof detail, "%s", trove_errmsg());
        rc = trove_fail(rc, "%s (from %s)", detail, from);
    }
    return rc;
}

trove_err models_resolve_reranker(const config *cfg, const char *override, models_choice *out)
{
    return resolve_from(cfg, override, "--reranker", "TROVE_RERANK_MODEL",
                        cfg ? cfg->rerank_model : NULL, out);
}

trove_err models_resolve_choice(const config *cfg, const char *override, models_choice *out)
{
    return resolve_from(cfg, override, "--model", "TROVE_EMBED_MODEL",
                        cfg ? cfg->embed_model : NULL, out);
}

trove_err models_resolve(const config *cfg, const char *override, char **path_out)
{
    models_choice c;
    trove_err rc = models_resolve_choice(cfg, override, &c);
    *path_out = rc == TROVE_OK ? c.path : NULL;
    if (rc == TROVE_OK)
        c.path = NULL;
    models_choice_free(&c);
    return rc;
}

/* ---- pull plans -------------------------------------------------------- */

char *models_hf_endpoint(void)
{
    const char *e = getenv("TROVE_HF_ENDPOINT");
    if (!e || !*e)
        e = "https://huggingface.co";
    size_t n = strlen(e);
    while (n > 0 && e[n - 1] == '/')
        n--;
    return xstrndup(e, n);
}

void models_plan_free(models_plan *p)
{
    for (size_t i = 0; i < p->n_items; i++) {
        free(p->items[i].url);
        free(p->items[i].dest);
        free(p->items[i].sha256);
    }
    free(p->items);
    free(p->name);
    free(p->path);
    memset(p, 0, sizeof *p);
}

static void add_item(models_plan *p, char *url, char *dest, int64_t size, const char *sha)
{
    p->items = xrealloc(p->items, (p->n_items + 1) * sizeof *p->items);
    p->items[p->n_items++] = (models_item){url, dest, size, sha ? xstrdup(sha) : NULL};
}

/* A hub org or repo name: letters, digits, '-', '_', '.', not "." or "..". */
static int repo_part_ok(const char *s, size_t n)
{
    if (n == 0 || n > 96 || (n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.'))
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '_' || c == '.'))
            return 0;
    }
    return 1;
}

/* A file path inside a repo: segments that are not empty, "." or "..", with
 * no control characters, '\\', '?' or '#'. */
static int file_path_ok(const char *s)
{
    if (!*s || strlen(s) > 512)
        return 0;
    const char *seg = s;
    for (const char *p = s;; p++) {
        if (*p == '/' || *p == '\0') {
            size_t n = (size_t)(p - seg);
            if (n == 0 || (n == 1 && seg[0] == '.') || (n == 2 && seg[0] == '.' && seg[1] == '.'))
                return 0;
            if (*p == '\0')
                return 1;
            seg = p + 1;
        } else if ((unsigned char)*p < 0x20 || *p == 0x7f || *p == '\\' || *p == '?' || *p == '#') {
            return 0;
        }
    }
}

/* Percent-encode what may not appear raw in a URL path. */
static void put_path(tbuf *b, const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
            strchr("-._~/", *p))
            tbuf_putc(b, (char)*p);
        else
            tbuf_printf(b, "%%%02X", *p);
    }
}

static char *hub_url(const char *endpoint, const char *repo, const char *rev, const char *file)
{
    tbuf b = {0};
    tbuf_printf(&b, "%s/%s/resolve/%s/", endpoint, repo, rev);
    put_path(&b, file);
    return tbuf_detach(&b);
}

static char *join(const char *dir, const char *name)
{
    tbuf b = {0};
    tbuf_printf(&b, "%s/%s", dir, name);
    return tbuf_detach(&b);
}

static int is_hex64(const char *s)
{
    size_t n = 0;
    for (; s[n]; n++)
        if (!((s[n] >= '0' && s[n] <= '9') || (s[n] >= 'a' && s[n] <= 'f') ||
              (s[n] >= 'A' && s[n] <= 'F')))
            return 0;
    return n == 64;
}

static const char *const M2V_FILES[] = {"config.json", "tokenizer.json", "model.safetensors"};

static trove_err plan_hf(const char *rest, const char *sha, const char *ep, const char *dir,
                         models_plan *p)
{
    const char *s1 = strchr(rest, '/');
    if (!s1 || !repo_part_ok(rest, (size_t)(s1 - rest)))
        return trove_fail(TROVE_EUSAGE, "'hf:%s' is not hf:ORG/REPO[/FILE]", rest);
    const char *repo = s1 + 1, *s2 = strchr(repo, '/');
    size_t repo_len = s2 ? (size_t)(s2 - repo) : strlen(repo);
    if (!repo_part_ok(repo, repo_len))
        return trove_fail(TROVE_EUSAGE, "'hf:%s' is not hf:ORG/REPO[/FILE]", rest);
    char *org_repo = xstrndup(rest, (size_t)(repo + repo_len - rest));
    trove_err rc = TROVE_OK;
    if (s2 && s2[1]) {
        const char *file = s2 + 1;
        if (!file_path_ok(file)) {
            rc = trove_fail(TROVE_EUSAGE, "'%s' is not a file path in a repository", file);
        } else {
            p->name = xstrdup(last_segment(file));
            p->path = join(dir, p->name);
            add_item(p, hub_url(ep, org_repo, "main", file), xstrdup(p->path), -1, sha);
        }
    } else if (sha) {
        rc = trove_fail(TROVE_EUSAGE, "--sha256 needs a single file (hf:ORG/REPO/FILE or a URL)");
    } else {
        p->folder = 1;
        p->name = xstrndup(repo, repo_len);
        p->path = join(dir, p->name);
        for (size_t i = 0; i < 3; i++)
            add_item(p, hub_url(ep, org_repo, "main", M2V_FILES[i]), join(p->path, M2V_FILES[i]), -1,
                     NULL);
    }
    free(org_repo);
    return rc;
}

static trove_err plan_url(const char *url, const char *sha, const char *dir, models_plan *p)
{
    const char *host = strstr(url, "://") + 3;
    size_t end = strcspn(host, "?#");
    const char *path = memchr(host, '/', end);
    if (!path)
        return trove_fail(TROVE_EUSAGE, "URL %s names no file", url);
    size_t plen = (size_t)(host + end - path);
    const char *name = path + plen;
    while (name > path && name[-1] != '/')
        name--;
    size_t nlen = (size_t)(path + plen - name);
    char *base = xstrndup(name, nlen);
    if (!file_path_ok(base) || strchr(base, '/') || strchr(url, ' ')) {
        trove_err rc = trove_fail(TROVE_EUSAGE, "URL %s does not end in a file name", url);
        free(base);
        return rc;
    }
    for (const char *c = url; *c; c++)
        if ((unsigned char)*c <= 0x20 || *c == 0x7f) {
            free(base);
            return trove_fail(TROVE_EUSAGE, "URL %s has control characters or spaces", url);
        }
    p->name = base;
    p->path = join(dir, base);
    add_item(p, xstrdup(url), xstrdup(p->path), -1, sha);
    return TROVE_OK;
}

trove_err models_plan_pull(const char *spec, const char *sha256, models_plan *out)
{
    memset(out, 0, sizeof *out);
    if (sha256 && !is_hex64(sha256))
        return trove_fail(TROVE_EUSAGE, "--sha256 needs 64 hex digits, not '%s'", sha256);
    char *dir = models_dir();
    char *ep = models_hf_endpoint();
    trove_err rc = TROVE_OK;
    if (strncmp(spec, "hf:", 3) == 0) {
        rc = plan_hf(spec + 3, sha256, ep, dir, out);
    } else if (strncmp(spec, "http://", 7) == 0 || strncmp(spec, "https://", 8) == 0) {
        rc = plan_url(spec, sha256, dir, out);
    } else {
        const models_entry *e = models_find(spec);
        if (!e) {
            rc = trove_fail(TROVE_EUSAGE, "unknown model '%s': `trove model list` shows the "
                            "catalogue; other models are pulled as hf:ORG/REPO[/FILE] or by URL",
                            spec);
        } else if (sha256) {
            rc = trove_fail(TROVE_EUSAGE, "--sha256 is for hf: and URL pulls; catalogue models "
                            "carry their own checksums");
        } else {
            out->entry = e;
            out->name = xstrdup(e->name);
            out->path = models_entry_path(e);
            out->folder = e->format == MODELS_MODEL2VEC;
            for (size_t i = 0; i < e->n_files; i++) {
                const models_file *f = &e->files[i];
                add_item(out, hub_url(ep, e->repo, e->revision, f->name),
                         out->folder ? join(out->path, f->name) : xstrdup(out->path), f->size,
                         f->sha256);
            }
        }
    }
    free(ep);
    free(dir);
    return rc;
}

/* ---- what was pulled: magic bytes and the files a format needs ---------- */

/* The first bytes of a file into buf; how many, or -1 when it cannot be read. */
static long read_head(const char *path, unsigned char *buf, size_t cap, int64_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, cap, f);
    struct stat st;
    *size = fstat(fileno(f), &st) == 0 ? (int64_t)st.st_size : -1;
    fclose(f);
    return (long)n;
}

static uint64_t le64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* A safetensors file: an 8-byte little-endian header length that fits in
 * the file, then the JSON header's '{'. */
static int safetensors_head(const unsigned char *b, long n, int64_t size)
{
    if (n < 9 || size < 9)
        return 0;
    uint64_t hlen = le64(b);
    return hlen >= 2 && hlen <= (uint64_t)size - 8 && b[8] == '{';
}

/* What the first bytes look like, for a message: printable ASCII as is,
 * anything else as \xNN. */
static void describe_head(const unsigned char *b, long n, char *out, size_t cap)
{
    size_t at = 0;
    out[0] = '\0';
    for (long i = 0; i < n && i < 8 && at + 5 < cap; i++)
        at += (size_t)snprintf(out + at, cap - at,
                               b[i] >= 0x20 && b[i] < 0x7f && b[i] != '\\' && b[i] != '"'
                                   ? "%c" : "\\x%02x", b[i]);
}

static trove_err check_gguf(const char *path)
{
    unsigned char b[16];
    int64_t size;
    long n = read_head(path, b, sizeof b, &size);
    if (n < 0)
        return trove_fail(TROVE_ENOENT, "%s: %s", path, strerror(errno));
    if (n >= 8 && memcmp(b, "GGUF", 4) == 0) {
        uint32_t version = (uint32_t)b[4] | (uint32_t)b[5] << 8 | (uint32_t)b[6] << 16 |
                           (uint32_t)b[7] << 24;
        if (version >= 1 && version <= 3)
            return TROVE_OK;
        return trove_fail(TROVE_EINVAL, "%s is GGUF version %u, which trove does not read "
                          "(versions 1 to 3)", path, version);
    }
    if (safetensors_head(b, n, size))
        return trove_fail(TROVE_EINVAL, "%s is a safetensors file, not a model on its own: a "
                          "model2vec model is a folder holding model.safetensors, tokenizer.json "
                          "and config.json (pull the repository as hf:ORG/REPO); a single-file "
                          "model must be GGUF", path);
    if (n == 0)
        return trove_fail(TROVE_EINVAL, "%s is empty, not a GGUF model", path);
    char head[48];
    describe_head(b, n, head, sizeof head);
    return trove_fail(TROVE_EINVAL, "%s is not a GGUF model (it starts with \"%s\"%s, not "
                      "\"GGUF\"); a single-file model must be GGUF, a model2vec model is a folder",
                      path, head, b[0] == '<' || b[0] == '{' ? ": a web page or a JSON file?" : "");
}

/* A JSON object file: its first non-blank byte is '{'. */
static trove_err check_json_object(const char *path, const char *what)
{
    unsigned char b[256];
    int64_t size;
    long n = read_head(path, b, sizeof b, &size);
    if (n < 0)
        return trove_fail(TROVE_ENOENT, "%s: missing (a model2vec folder holds model.safetensors, "
                          "tokenizer.json and config.json)", path);
    long i = 0;
    while (i < n && strchr(" \t\r\n", b[i]))
        i++;
    if (i < n && b[i] == '{')
        return TROVE_OK;
    char head[48];
    describe_head(b + i, n - i, head, sizeof head);
    return trove_fail(TROVE_EINVAL, "%s is not a %s (a JSON object): it starts with \"%s\"", path,
                      what, head);
}

static trove_err check_m2v(const char *dir)
{
    tbuf p = {0};
    tbuf_printf(&p, "%s/model.safetensors", dir);
    unsigned char b[16];
    int64_t size;
    long n = read_head(p.data, b, sizeof b, &size);
    trove_err rc = TROVE_OK;
    if (n < 0)
        rc = trove_fail(TROVE_ENOENT, "%s: missing (a model2vec folder holds model.safetensors, "
                        "tokenizer.json and config.json)", p.data);
    else if (!safetensors_head(b, n, size))
        rc = trove_fail(TROVE_EINVAL, "%s is not a safetensors file (no valid header)", p.data);
    for (int i = 0; rc == TROVE_OK && i < 2; i++) {
        tbuf_reset(&p);
        tbuf_printf(&p, "%s/%s", dir, i ? "config.json" : "tokenizer.json");
        rc = check_json_object(p.data, i ? "model config" : "tokenizer");
    }
    tbuf_free(&p);
    return rc;
}

trove_err models_check(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return trove_fail(TROVE_ENOENT, "%s: %s", path, strerror(errno));
    if (S_ISDIR(st.st_mode))
        return check_m2v(path);
    if (!S_ISREG(st.st_mode))
        return trove_fail(TROVE_EINVAL, "%s is neither a file nor a folder", path);
    return check_gguf(path);
}

/* ---- pulling ----------------------------------------------------------- */

static int64_t file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) ? (int64_t)st.st_size : -1;
}

static int is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* A failed pull of several files: the fetch's first line, then every file
 * still missing with its URL, so all of them can be fetched by hand (the
 * fetch's own recipe names only the one that failed). */
static trove_err fail_plan(trove_err rc, const models_plan *p)
{
    size_t missing = 0;
    for (size_t i = 0; i < p->n_items; i++)
        missing += file_size(p->items[i].dest) < 0;
    if (p->n_items < 2 || missing < 2 || rc == TROVE_EINTR)
        return rc;
    const char *msg = trove_errmsg();
    tbuf b = {0};
    tbuf_append(&b, msg, strcspn(msg, "\n"));
    tbuf_printf(&b, "\n  %zu of the %zu files of %s are missing; to fetch them by hand, save "
                "each URL as the file under it:", missing, p->n_items, p->name);
    for (size_t i = 0; i < p->n_items; i++)
        if (file_size(p->items[i].dest) < 0)
            tbuf_printf(&b, "\n    %s\n      %s", p->items[i].url, p->items[i].dest);
    tbuf_puts(&b, "\n  e.g. curl -fL -o FILE URL for each");
    rc = trove_fail(rc, "%s", b.data);
    tbuf_free(&b);
    return rc;
}

static trove_err pull_items(const models_plan *p, const fetch_opts *base, int force,
                            unsigned char *fetched, size_t *n_fetched)
{
    for (size_t i = 0; i < p->n_items; i++) {
        const models_item *it = &p->items[i];
        int64_t have = file_size(it->dest);
        if (!force && have >= 0 && (it->size < 0 || have == it->size))
            continue;
        fetch_opts o = *base;
        o.size = it->size;
        o.sha256 = it->sha256;
        o.label = NULL;
        trove_err rc = fetch_file(it->url, it->dest, &o);
        if (rc)
            rc = fail_plan(rc, p);
        if (rc == TROVE_ENOENT && p->folder && !p->entry) {
            char *detail = xstrdup(trove_errmsg());
            rc = trove_fail(rc, "%s\n  (hf:ORG/REPO without a file pulls a model2vec folder: "
                            "config.json, tokenizer.json, model.safetensors; for a GGUF "
                            "repository name the file: hf:ORG/REPO/FILE.gguf)", detail);
            free(detail);
        }
        if (rc)
            return rc;
        fetched[i] = 1;
        (*n_fetched)++;
    }
    return TROVE_OK;
}

trove_err models_pull(const models_plan *p, const fetch_opts *base, int force, size_t *n_fetched)
{
    size_t n = 0;
    if (n_fetched)
        *n_fetched = 0;
    char *dir = models_dir();
    const char *folder = p->folder ? p->path : NULL;
    /* what this pull makes, so that a failure takes it away again */
    int made_dir = !is_dir(dir), made_folder = folder && !is_dir(folder);
    int made = folder ? fs_mkdir_p(folder) : fs_mkdir_parents(p->path);
    if (made != 0) {
        trove_err rc = trove_fail(TROVE_EIO, "cannot create the folder of %s: %s", p->path,
                                  strerror(errno));
        free(dir);
        return rc;
    }
    unsigned char *fetched = xcalloc(p->n_items ? p->n_items : 1, 1);
    trove_err rc = pull_items(p, base, force, fetched, &n);
    if (rc == TROVE_OK && (rc = models_check(p->path)) != TROVE_OK) {
        char why[2048];
        snprintf(why, sizeof why, "%s", trove_errmsg());
        for (size_t i = 0; i < p->n_items; i++)
            if (fetched[i])
                unlink(p->items[i].dest);
        rc = trove_fail(rc, "%s is not a model trove can use: %s%s", p->name, why,
                        n ? " (the download was removed)"
                          : "; `trove model pull --force` downloads it again");
    }
    if (rc) {
        /* rmdir removes only an empty folder: a partial download kept for
         * the next run keeps its folder */
        if (made_folder)
            rmdir(folder);
        if (made_dir)
            rmdir(dir);
    }
    free(fetched);
    free(dir);
    if (n_fetched)
        *n_fetched = rc ? 0 : n;
    return rc;
}
