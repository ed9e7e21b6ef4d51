#include "config/config.h"

#include <errno.h>
#include <limits.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

#include "text/date.h"
#include "text/transl.h"
#include "util/buf.h"
#include "util/esc.h"
#include "util/str.h"
#include "util/fsutil.h"
#include "util/mem.h"

char *config_dir(void)
{
    return fs_xdg_path("TROVE_CONFIG_DIR", "XDG_CONFIG_HOME", ".config", "trove");
}

const char *const config_vec_scan_names[CONFIG_N_VEC_SCANS] = {"exact", "two-stage", "auto"};

int config_vec_scan_parse(const char *name)
{
    for (int i = 0; name && i < CONFIG_N_VEC_SCANS; i++)
        if (strcmp(name, config_vec_scan_names[i]) == 0)
            return i;
    return -1;
}

/* ---- reading --------------------------------------------------------- */

/* Strings that are not UTF-8 (a Latin-1 folder name) cannot be YAML text;
 * the writer tags them "!bytes" and writes every byte as one character
 * U+0000..U+00FF ("caf\xe9"). Decode such scalars back to their bytes, in
 * place: the result is never longer than the UTF-8 it comes from. */
#define BYTES_TAG "!bytes"

static trove_err decode_bytes_node(const char *file, yaml_node_t *n)
{
    unsigned char *v = n->data.scalar.value;
    size_t len = n->data.scalar.length, out = 0;
    uint32_t cp;
    for (size_t i = 0; i < len;) {
        size_t k = esc_utf8_decode(v + i, len - i, &cp);
        if (!k || cp > 0xFF)
            return trove_fail(TROVE_EPARSE, "%s: line %zu: a " BYTES_TAG " string holds only "
                              "characters \\x00 to \\xff", file, n->start_mark.line + 1);
        v[out++] = (unsigned char)cp;
        i += k;
    }
    v[out] = '\0';
    n->data.scalar.length = out;
    return TROVE_OK;
}

static trove_err decode_bytes_nodes(const char *file, yaml_document_t *doc)
{
    for (yaml_node_t *n = doc->nodes.start; n < doc->nodes.top; n++) {
        if (n->type == YAML_SCALAR_NODE && n->tag && strcmp((const char *)n->tag, BYTES_TAG) == 0) {
            trove_err rc = decode_bytes_node(file, n);
            if (rc)
                return rc;
        }
    }
    return TROVE_OK;
}

/* 1-based line of byte `offset` of the input. */
static size_t line_at(const char *text, size_t len, size_t offset)
{
    size_t line = 1;
    for (size_t i = 0; i < offset && i < len; i++)
        line += text[i] == '\n';
    return line;
}

/* libyaml reports encoding problems by byte offset, with an empty mark. */
static trove_err yaml_error(const char *file, const yaml_parser_t *p, const char *text, size_t len)
{
    const char *what = p->problem ? p->problem : "invalid YAML";
    if (p->error == YAML_READER_ERROR) {
        size_t line = line_at(text, len, p->problem_offset);
        if (p->problem_value < 0)
            return trove_fail(TROVE_EPARSE, "%s: line %zu: %s", file, line, what);
        if (p->problem_offset < len && (unsigned char)text[p->problem_offset] == p->problem_value)
            return trove_fail(TROVE_EPARSE, "%s: line %zu: %s (byte 0x%02x); the file must be "
                              "UTF-8", file, line, what, p->problem_value);
        return trove_fail(TROVE_EPARSE, "%s: line %zu: %s (U+%04X)", file, line, what,
                          (unsigned)p->problem_value);
    }
    return trove_fail(TROVE_EPARSE, "%s: line %zu: %s", file, p->problem_mark.line + 1, what);
}

static const char *scalar(yaml_document_t *doc, yaml_node_t *n)
{
    (void)doc;
    return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

static yaml_node_t *map_get(yaml_document_t *doc, yaml_node_t *map, const char *key)
{
    if (!map || map->type != YAML_MAPPING_NODE)
        return NULL;
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
        const char *k = scalar(doc, yaml_document_get_node(doc, p->key));
        if (k && strcmp(k, key) == 0)
            return yaml_document_get_node(doc, p->value);
    }
    return NULL;
}

/* A scalar or a sequence of scalars, as a list of strings. */
static char **string_list(yaml_document_t *doc, yaml_node_t *n, size_t *count)
{
    char **out = NULL;
    size_t cap = 0;
    *count = 0;
    if (!n)
        return NULL;
    if (n->type == YAML_SCALAR_NODE) {
        out = xmalloc(sizeof *out);
        out[0] = xstrdup(scalar(doc, n));
        *count = 1;
        return out;
    }
    if (n->type != YAML_SEQUENCE_NODE)
        return NULL;
    for (yaml_node_item_t *it = n->data.sequence.items.start; it < n->data.sequence.items.top; it++) {
        const char *s = scalar(doc, yaml_document_get_node(doc, *it));
        if (!s)
            continue;
        xgrow(&out, &cap, *count + 1, sizeof *out);
        out[(*count)++] = xstrdup(s);
    }
    return out;
}

/* `key:` with nothing after it loads as an empty scalar. */
static int is_empty(yaml_document_t *doc, yaml_node_t *n)
{
    const char *s = scalar(doc, n);
    return !n || (s && (!*s || strcmp(s, "~") == 0 || strcmp(s, "null") == 0));
}

const char *const config_weight_names[CONFIG_N_WEIGHTS] = {"bm25", "title", "graph", "vector"};

/* weights: {bm25: 1.0, vector: 1.2, ...}: numbers >= 0 for known channels. */
static trove_err load_weights(config *cfg, yaml_document_t *doc, yaml_node_t *w)
{
    if (is_empty(doc, w))
        return TROVE_OK;
    if (w->type != YAML_MAPPING_NODE)
        return trove_fail(TROVE_EPARSE, "%s: 'weights' must map channel names to numbers", cfg->file);
    for (yaml_node_pair_t *p = w->data.mapping.pairs.start; p < w->data.mapping.pairs.top; p++) {
        const char *k = scalar(doc, yaml_document_get_node(doc, p->key));
        const char *v = scalar(doc, yaml_document_get_node(doc, p->value));
        int which = -1;
        for (int i = 0; k && i < CONFIG_N_WEIGHTS; i++)
            if (strcmp(k, config_weight_names[i]) == 0)
                which = i;
        if (which < 0)
            return trove_fail(TROVE_EPARSE, "%s: unknown channel '%s' under 'weights' (known: bm25, "
                              "title, graph, vector)", cfg->file, k ? k : "?");
        char *end = NULL;
        double d = v ? strtod(v, &end) : -1;
        if (!v || !*v || *end || !(d >= 0) || d > 1e6)
            return trove_fail(TROVE_EPARSE, "%s: weight of '%s' must be a number >= 0, not '%s'",
                              cfg->file, k, v ? v : "?");
        cfg->weights[which] = d;
        cfg->has_weight[which] = 1;
    }
    return TROVE_OK;
}

static char *config_path(const config *cfg, const char *v);

static trove_err load_collections(config *cfg, yaml_document_t *doc, yaml_node_t *cols)
{
    if (is_empty(doc, cols))
        return TROVE_OK;
    if (cols->type != YAML_MAPPING_NODE)
        return trove_fail(TROVE_EPARSE, "%s: 'collections' must be a mapping of name to settings", cfg->file);
    for (yaml_node_pair_t *p = cols->data.mapping.pairs.start; p < cols->data.mapping.pairs.top; p++) {
        const char *name = scalar(doc, yaml_document_get_node(doc, p->key));
        yaml_node_t *v = yaml_document_get_node(doc, p->value);
        const char *path = scalar(doc, map_get(doc, v, "path"));
        if (!name || !path || !*path)
            return trove_fail(TROVE_EPARSE, "%s: collection %s has no 'path'", cfg->file, name ? name : "?");
        size_t nm = 0, ne = 0;
        char **masks = string_list(doc, map_get(doc, v, "mask"), &nm);
        char **excl = string_list(doc, map_get(doc, v, "exclude"), &ne);
        /* A relative path is relative to the folder of config.yaml, never
         * to wherever trove runs: from another folder it would name other
         * notes, or none, and the update would drop the collection's. */
        char *abs = config_path(cfg, path);
        config_add_collection(cfg, name, abs, (const char *const *)masks, nm,
                              (const char *const *)excl, ne);
        free(abs);
        for (size_t i = 0; i < nm; i++)
            free(masks[i]);
        for (size_t i = 0; i < ne; i++)
            free(excl[i]);
        free(masks);
        free(excl);
    }
    return TROVE_OK;
}

static trove_err load_contexts(config *cfg, yaml_document_t *doc, yaml_node_t *ctxs)
{
    if (is_empty(doc, ctxs))
        return TROVE_OK;
    if (ctxs->type != YAML_SEQUENCE_NODE)
        return trove_fail(TROVE_EPARSE, "%s: 'contexts' must be a list", cfg->file);
    for (yaml_node_item_t *it = ctxs->data.sequence.items.start; it < ctxs->data.sequence.items.top; it++) {
        yaml_node_t *n = yaml_document_get_node(doc, *it);
        const char *target = scalar(doc, map_get(doc, n, "target"));
        const char *text = scalar(doc, map_get(doc, n, "text"));
        if (!target || !text)
            return trove_fail(TROVE_EPARSE, "%s: each context needs 'target' and 'text'", cfg->file);
        config_add_context(cfg, target, text);
    }
    return TROVE_OK;
}

/* daemon: auto|off, daemon_idle: SECONDS */
static trove_err load_daemon(config *cfg, yaml_document_t *doc, yaml_node_t *root)
{
    yaml_node_t *d = map_get(doc, root, "daemon"), *idle = map_get(doc, root, "daemon_idle");
    if (!is_empty(doc, d)) {
        const char *v = scalar(doc, d);
        if (!v || (strcmp(v, "auto") && strcmp(v, "off")))
            return trove_fail(TROVE_EPARSE, "%s: 'daemon' must be auto or off, not '%s'", cfg->file,
                              v ? v : "?");
        cfg->daemon_off = strcmp(v, "off") == 0;
        cfg->has_daemon = 1;
    }
    yaml_node_t *tr = map_get(doc, root, "translate");
    if (!is_empty(doc, tr)) {
        const char *v = scalar(doc, tr);
        if (!v || (strcmp(v, "true") && strcmp(v, "false")))
            return trove_fail(TROVE_EPARSE, "%s: 'translate' must be true or false, not '%s'",
                              cfg->file, v ? v : "?");
        cfg->no_translate = strcmp(v, "false") == 0;
        cfg->has_translate = 1;
    }
    yaml_node_t *vs = map_get(doc, root, "vector_scan");
    if (!is_empty(doc, vs)) {
        const char *v = scalar(doc, vs);
        int scan = config_vec_scan_parse(v);
        if (scan < 0)
            return trove_fail(TROVE_EPARSE, "%s: 'vector_scan' must be exact, two-stage or auto, "
                              "not '%s'", cfg->file, v ? v : "?");
        cfg->vector_scan = scan;
        cfg->has_vector_scan = 1;
    }
    if (!is_empty(doc, idle)) {
        const char *v = scalar(doc, idle);
        char *end = NULL;
        double secs = v ? strtod(v, &end) : -1;
        if (!v || !*v || *end || !(secs >= 0) || secs > 1e9)
            return trove_fail(TROVE_EPARSE, "%s: 'daemon_idle' must be seconds >= 0 (0: never), "
                              "not '%s'", cfg->file, v ? v : "?");
        cfg->daemon_idle = secs;
        cfg->has_daemon_idle = 1;
    }
    return TROVE_OK;
}

/* One whole number of the `snapshots:` mapping, lo..hi. */
static trove_err snapshot_key(config *cfg, const char *key, const char *v, long lo, long hi, int *out)
{
    long x;
    if (!v || !str_to_long(v, lo, hi, &x))
        return trove_fail(TROVE_EPARSE, "%s: 'snapshots.%s' must be a whole number from %ld to %ld, "
                          "not '%s'", cfg->file, key, lo, hi, v ? v : "?");
    *out = (int)x;
    return TROVE_OK;
}

/* snapshots: N (the older form: the newest N only), or
 * snapshots: {last: N, minutes: M, hourly: H, daily: D}: which snapshots
 * stay (store_retention). An unknown key is an error (a typo would
 * otherwise keep the default silently). */
static trove_err load_snapshots(config *cfg, yaml_document_t *doc, yaml_node_t *n)
{
    if (is_empty(doc, n))
        return TROVE_OK;
    if (n->type == YAML_MAPPING_NODE) {
        static const struct { const char *key; long hi; } keys[] = {
            {"last", CONFIG_SNAPSHOTS_MAX}, {"minutes", 525600}, {"hourly", 87600},
            {"daily", 36500},
        };
        int *dst[] = {&cfg->snapshots, &cfg->snap_minutes, &cfg->snap_hourly, &cfg->snap_daily};
        for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
            const char *k = scalar(doc, yaml_document_get_node(doc, p->key));
            const char *v = scalar(doc, yaml_document_get_node(doc, p->value));
            size_t i = 0;
            while (i < 4 && (!k || strcmp(k, keys[i].key) != 0))
                i++;
            if (i == 4)
                return trove_fail(TROVE_EPARSE, "%s: 'snapshots' has no key '%s' (last, minutes, "
                                  "hourly, daily)", cfg->file, k ? k : "?");
            trove_err rc = snapshot_key(cfg, keys[i].key, v, i == 0 ? 1 : 0, keys[i].hi, dst[i]);
            if (rc)
                return rc;
        }
        cfg->has_snapshots = 2;
        return TROVE_OK;
    }
    const char *v = scalar(doc, n);
    long keep;
    if (!v || !str_to_long(v, 1, CONFIG_SNAPSHOTS_MAX, &keep))
        return trove_fail(TROVE_EPARSE, "%s: 'snapshots' must be a mapping {last, minutes, hourly, "
                          "daily} or a whole number from 1 to %d (the newest N only), not '%s'",
                          cfg->file, CONFIG_SNAPSHOTS_MAX, v ? v : "?");
    cfg->snapshots = (int)keep;
    cfg->snap_minutes = cfg->snap_hourly = cfg->snap_daily = 0;
    cfg->has_snapshots = 1;
    return TROVE_OK;
}

static void free_list(char **items, size_t n);

/* languages: [de, en]: ISO 639-1 codes, optionally with a region */
static trove_err load_languages(config *cfg, yaml_document_t *doc, yaml_node_t *n)
{
    if (is_empty(doc, n))
        return TROVE_OK;
    if (n->type == YAML_MAPPING_NODE)
        return trove_fail(TROVE_EPARSE, "%s: 'languages' must be a list of language codes",
                          cfg->file);
    size_t count = 0;
    char **list = string_list(doc, n, &count);
    trove_err rc = TROVE_OK;
    for (size_t i = 0; i < count; i++) {
        char code[16];
        if (rc == TROVE_OK && !transl_code_normalise(list[i], code, sizeof code))
            rc = trove_fail(TROVE_EPARSE, "%s: '%s' under 'languages' is not a language code "
                            "(ISO 639-1, e.g. en, de, pt-BR)", cfg->file, list[i]);
        if (rc == TROVE_OK) {
            free(list[i]);
            list[i] = xstrdup(code);
        }
    }
    if (rc) {
        free_list(list, count);
        return rc;
    }
    cfg->languages = list;
    cfg->n_languages = count;
    return TROVE_OK;
}

/* 1 when k is one of `known` ("a, b, c"). */
static int key_known(const char *known, const char *k)
{
    size_t kl = strlen(k);
    for (const char *p = known; *p;) {
        size_t len = strcspn(p, ",");
        if (len == kl && strncmp(p, k, kl) == 0)
            return 1;
        p += len;
        while (*p == ',' || *p == ' ')
            p++;
    }
    return 0;
}

/* A mapping section whose only keys are `known` ("a, b"): anything else is
 * a typo. */
static trove_err only_key(config *cfg, yaml_document_t *doc, yaml_node_t *n, const char *section,
                          const char *known)
{
    for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
        const char *k = scalar(doc, yaml_document_get_node(doc, p->key));
        if (!k || !key_known(known, k))
            return trove_fail(TROVE_EPARSE, "%s: unknown key '%s' under '%s' (known: %s)",
                              cfg->file, k ? k : "?", section, known);
    }
    return TROVE_OK;
}

/* dates: {keys: [date, created]} */
static trove_err load_dates(config *cfg, yaml_document_t *doc, yaml_node_t *n)
{
    if (is_empty(doc, n))
        return TROVE_OK;
    yaml_node_t *keys = n->type == YAML_MAPPING_NODE ? map_get(doc, n, "keys") : NULL;
    if (!keys || keys->type == YAML_MAPPING_NODE)
        return trove_fail(TROVE_EPARSE, "%s: 'dates' must be a mapping {keys: [date, created]}",
                          cfg->file);
    trove_err rc = only_key(cfg, doc, n, "dates", "keys");
    if (rc)
        return rc;
    size_t count = 0;
    char **list = string_list(doc, keys, &count);
    for (size_t i = 0; i < count; i++)
        if (!*list[i]) {
            free_list(list, count);
            return trove_fail(TROVE_EPARSE, "%s: an empty key under 'dates.keys'", cfg->file);
        }
    cfg->date_keys = list;
    cfg->n_date_keys = count;
    return TROVE_OK;
}

/* recency: {half_life: 90d} */
static trove_err load_recency(config *cfg, yaml_document_t *doc, yaml_node_t *n)
{
    if (is_empty(doc, n))
        return TROVE_OK;
    yaml_node_t *hl = n->type == YAML_MAPPING_NODE ? map_get(doc, n, "half_life") : NULL;
    const char *v = hl ? scalar(doc, hl) : NULL;
    double days;
    if (!v || !date_parse_span(v, &days))
        return trove_fail(TROVE_EPARSE, "%s: 'recency' must be a mapping {half_life: SPAN}, "
                          "SPAN as 90d, 12w, 6m or 1y, not '%s'", cfg->file, v ? v : "?");
    trove_err rc = only_key(cfg, doc, n, "recency", "half_life");
    if (rc)
        return rc;
    cfg->recency_days = days;
    cfg->recency_text = xstrdup(v);
    return TROVE_OK;
}

static trove_err load_mcp(config *cfg, yaml_document_t *doc, yaml_node_t *m)
{
    if (is_empty(doc, m))
        return TROVE_OK;
    if (m->type != YAML_MAPPING_NODE)
        return trove_fail(TROVE_EPARSE, "%s: 'mcp' must be a mapping (token, origins, exclude, "
                          "private_key)", cfg->file);
    /* a misspelt `exclude` must not quietly show an agent what it was to hide */
    trove_err krc = only_key(cfg, doc, m, "mcp", "token, origins, exclude, private_key");
    if (krc)
        return krc;
    yaml_node_t *tok = map_get(doc, m, "token");
    if (!is_empty(doc, tok)) {
        const char *t = scalar(doc, tok);
        if (!t)
            return trove_fail(TROVE_EPARSE, "%s: 'mcp.token' must be a string", cfg->file);
        cfg->mcp.token = xstrdup(t);
    }
    cfg->mcp.origins = string_list(doc, map_get(doc, m, "origins"), &cfg->mcp.n_origins);
    cfg->mcp.exclude = string_list(doc, map_get(doc, m, "exclude"), &cfg->mcp.n_exclude);
    for (size_t i = 0; i < cfg->mcp.n_exclude; i++)
        if (!cfg->mcp.exclude[i][0] || strchr(cfg->mcp.exclude[i], '\n'))
            return trove_fail(TROVE_EPARSE, "%s: 'mcp.exclude' entries must be globs on one line",
                              cfg->file);
    yaml_node_t *pk = map_get(doc, m, "private_key");
    if (!is_empty(doc, pk)) {
        const char *k = scalar(doc, pk);
        if (!k)
            return trove_fail(TROVE_EPARSE, "%s: 'mcp.private_key' must be a frontmatter key",
                              cfg->file);
        char *low = xstrdup(k);
        for (char *c = low; *c; c++)
            if (*c >= 'A' && *c <= 'Z')
                *c = (char)(*c - 'A' + 'a');
        cfg->mcp.private_key = low;
    }
    return TROVE_OK;
}

/* A path from the config: absolute, or relative to the config's folder. */
static char *config_path(const config *cfg, const char *v)
{
    if (!v || !*v)
        return NULL;
    if (v[0] == '/')
        return xstrdup(v);
    tbuf b = {0};
    const char *slash = strrchr(cfg->file, '/');
    if (slash)
        tbuf_printf(&b, "%.*s/%s", (int)(slash - cfg->file), cfg->file, v);
    else
        tbuf_puts(&b, v);
    return tbuf_detach(&b);
}

static trove_err load_chinese(config *cfg, yaml_document_t *doc, yaml_node_t *zh)
{
    if (is_empty(doc, zh))
        return TROVE_OK;
    if (zh->type != YAML_MAPPING_NODE)
        return trove_fail(TROVE_EPARSE, "%s: 'chinese' must be a mapping (dictionary, "
                          "user_dictionary)", cfg->file);
    cfg->zh_dict = config_path(cfg, scalar(doc, map_get(doc, zh, "dictionary")));
    cfg->zh_user_dict = config_path(cfg, scalar(doc, map_get(doc, zh, "user_dictionary")));
    return TROVE_OK;
}

/* A model key (`rerank_model:`, `expand_model:`) into *out. */
static trove_err load_model_key(config *cfg, yaml_document_t *doc, yaml_node_t *n,
                                const char *key, char **out)
{
    if (is_empty(doc, n))
        return TROVE_OK;
    if (n->type != YAML_SCALAR_NODE)
        return trove_fail(TROVE_EPARSE, "%s: '%s' must be a model name or path", cfg->file, key);
    /* A path (it has a '/') relative to the folder of config.yaml; a bare
     * name stays a name, which models_resolve_*() look for in the models
     * folder, never in the current one. */
    const char *v = scalar(doc, n);
    *out = v && *v && !strchr(v, '/') ? xstrdup(v) : config_path(cfg, v);
    return TROVE_OK;
}

/* `remote:` a URL as written (an http(s) address, checked when used). */
static trove_err load_remote(config *cfg, yaml_document_t *doc, yaml_node_t *n)
{
    if (is_empty(doc, n))
        return TROVE_OK;
    const char *v = scalar(doc, n);
    if (!v || (strncmp(v, "http://", 7) != 0 && strncmp(v, "https://", 8) != 0))
        return trove_fail(TROVE_EPARSE, "%s: 'remote' must be the URL of a published index "
                          "(http://host:9200/INDEX)", cfg->file);
    cfg->remote = xstrdup(v);
    return TROVE_OK;
}

trove_err config_load_file(config *cfg, const char *file)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->daemon_idle = CONFIG_DAEMON_IDLE;
    cfg->snapshots = CONFIG_SNAPSHOTS;
    cfg->snap_minutes = CONFIG_SNAP_MINUTES;
    cfg->snap_hourly = CONFIG_SNAP_HOURLY;
    cfg->snap_daily = CONFIG_SNAP_DAILY;
    char *text = NULL;
    size_t len = 0;
    struct stat sb;
    if (stat(file, &sb) != 0 && errno == ENOENT) {
        cfg->file = xstrdup(file);
        return TROVE_OK;
    }
    trove_err rc = fs_read_file(file, 0, &text, &len);
    if (rc)
        return rc;
    cfg->file = xstrdup(file);
    yaml_parser_t parser;
    yaml_document_t doc;
    yaml_parser_initialize(&parser);
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    if (!yaml_parser_load(&parser, &doc)) {
        rc = yaml_error(file, &parser, text, len);
    } else {
        yaml_node_t *root = yaml_document_get_root_node(&doc);
        rc = decode_bytes_nodes(file, &doc);
        if (rc) {
            /* reported */
        } else if (root && root->type == YAML_MAPPING_NODE) {
            rc = load_collections(cfg, &doc, map_get(&doc, root, "collections"));
            if (rc == TROVE_OK)
                rc = load_contexts(cfg, &doc, map_get(&doc, root, "contexts"));
            if (rc == TROVE_OK)
                rc = load_mcp(cfg, &doc, map_get(&doc, root, "mcp"));
            if (rc == TROVE_OK)
                rc = load_chinese(cfg, &doc, map_get(&doc, root, "chinese"));
            if (rc == TROVE_OK)
                rc = load_weights(cfg, &doc, map_get(&doc, root, "weights"));
            if (rc == TROVE_OK)
                rc = load_model_key(cfg, &doc, map_get(&doc, root, "rerank_model"),
                                    "rerank_model", &cfg->rerank_model);
            if (rc == TROVE_OK)
                rc = load_model_key(cfg, &doc, map_get(&doc, root, "expand_model"),
                                    "expand_model", &cfg->expand_model);
            if (rc == TROVE_OK)
                rc = load_daemon(cfg, &doc, root);
            if (rc == TROVE_OK)
                rc = load_snapshots(cfg, &doc, map_get(&doc, root, "snapshots"));
            if (rc == TROVE_OK)
                rc = load_languages(cfg, &doc, map_get(&doc, root, "languages"));
            if (rc == TROVE_OK)
                rc = load_dates(cfg, &doc, map_get(&doc, root, "dates"));
            if (rc == TROVE_OK)
                rc = load_recency(cfg, &doc, map_get(&doc, root, "recency"));
            if (rc == TROVE_OK)
                rc = load_remote(cfg, &doc, map_get(&doc, root, "remote"));
            yaml_node_t *em = map_get(&doc, root, "embed_model");
            if (rc == TROVE_OK && em && !is_empty(&doc, em)) {
                if (!scalar(&doc, em))
                    rc = trove_fail(TROVE_EPARSE, "%s: 'embed_model' must be a model name or path", file);
                else
                    config_set_embed_model(cfg, scalar(&doc, em));
            }
        } else if (root) {
            rc = trove_fail(TROVE_EPARSE, "%s: top level must be a mapping", file);
        }
        yaml_document_delete(&doc);
    }
    yaml_parser_delete(&parser);
    free(text);
    if (rc)
        config_free(cfg);   /* a failed load leaves nothing to free */
    return rc;
}

trove_err config_load(config *cfg)
{
    char *dir = config_dir();
    tbuf b = {0};
    tbuf_printf(&b, "%s/config.yaml", dir);
    free(dir);
    trove_err rc = config_load_file(cfg, b.data);
    tbuf_free(&b);
    return rc;
}

/* ---- writing --------------------------------------------------------- */

/* Characters a YAML reader refuses raw or changes (C1 controls; U+0085,
 * U+2028 and U+2029 are line breaks that fold to a space; a BOM; the
 * non-characters U+FFFE/U+FFFF) are written as escapes. */
static int yaml_needs_escape(uint32_t cp)
{
    return cp < 0x20 || (cp >= 0x7F && cp <= 0x9F) || cp == 0x2028 || cp == 0x2029 ||
           cp == 0xFEFF || cp == 0xFFFE || cp == 0xFFFF;
}

/* Byte strings that are not UTF-8: "!bytes" and one \xNN per byte >= 0x80
 * (see decode_bytes_node). */
static void put_bytes(tbuf *b, const char *s)
{
    tbuf_puts(b, BYTES_TAG " \"");
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            tbuf_printf(b, "\\%c", *p);
        else if (*p < 0x20 || *p >= 0x7F)
            tbuf_printf(b, "\\x%02x", *p);
        else
            tbuf_putc(b, (char)*p);
    }
    tbuf_putc(b, '"');
}

/* YAML double-quoted scalar that reads back to exactly `s`, whatever it
 * holds. */
static void put_quoted(tbuf *b, const char *s)
{
    size_t len = strlen(s);
    if (!esc_utf8_valid(s, len)) {
        put_bytes(b, s);
        return;
    }
    const unsigned char *p = (const unsigned char *)s;
    uint32_t cp;
    tbuf_putc(b, '"');
    for (size_t i = 0; i < len;) {
        size_t k = esc_utf8_decode(p + i, len - i, &cp);
        if (cp == '"' || cp == '\\')
            tbuf_printf(b, "\\%c", (char)cp);
        else if (cp == '\n')
            tbuf_puts(b, "\\n");
        else if (cp == '\t')
            tbuf_puts(b, "\\t");
        else if (cp <= 0xFF && yaml_needs_escape(cp))
            tbuf_printf(b, "\\x%02x", (unsigned)cp);
        else if (yaml_needs_escape(cp))
            tbuf_printf(b, "\\u%04x", (unsigned)cp);
        else
            tbuf_append(b, s + i, k);
        i += k;
    }
    tbuf_putc(b, '"');
}

static void put_list(tbuf *b, char **items, size_t n)
{
    tbuf_putc(b, '[');
    for (size_t i = 0; i < n; i++) {
        if (i)
            tbuf_puts(b, ", ");
        put_quoted(b, items[i]);
    }
    tbuf_puts(b, "]\n");
}

trove_err config_save(const config *cfg)
{
    tbuf b = {0};
    tbuf_puts(&b, "# trove configuration: maintained by `trove collection` and `trove context`,\n"
                  "# safe to edit by hand.\n");
    if (cfg->embed_model) {
        tbuf_puts(&b, "embed_model: ");
        put_quoted(&b, cfg->embed_model);
        tbuf_putc(&b, '\n');
    }
    tbuf_puts(&b, "collections:\n");
    for (size_t i = 0; i < cfg->n_collections; i++) {
        const config_collection *c = &cfg->collections[i];
        tbuf_puts(&b, "  ");
        put_quoted(&b, c->name);
        tbuf_puts(&b, ":\n    path: ");
        put_quoted(&b, c->path);
        tbuf_puts(&b, "\n    mask: ");
        put_list(&b, c->masks, c->n_masks);
        tbuf_puts(&b, "    exclude: ");
        put_list(&b, c->excludes, c->n_excludes);
    }
    tbuf_puts(&b, "contexts:\n");
    for (size_t i = 0; i < cfg->n_contexts; i++) {
        tbuf_puts(&b, "  - target: ");
        put_quoted(&b, cfg->contexts[i].target);
        tbuf_puts(&b, "\n    text: ");
        put_quoted(&b, cfg->contexts[i].text);
        tbuf_putc(&b, '\n');
    }
    if (cfg->has_daemon)
        tbuf_printf(&b, "daemon: %s\n", cfg->daemon_off ? "off" : "auto");
    if (cfg->has_daemon_idle)
        tbuf_printf(&b, "daemon_idle: %.17g\n", cfg->daemon_idle);
    if (cfg->has_snapshots == 1)
        tbuf_printf(&b, "snapshots: %d\n", cfg->snapshots);
    else if (cfg->has_snapshots)
        tbuf_printf(&b, "snapshots: {last: %d, minutes: %d, hourly: %d, daily: %d}\n",
                    cfg->snapshots, cfg->snap_minutes, cfg->snap_hourly, cfg->snap_daily);
    if (cfg->has_translate)
        tbuf_printf(&b, "translate: %s\n", cfg->no_translate ? "false" : "true");
    if (cfg->has_vector_scan)
        tbuf_printf(&b, "vector_scan: %s\n", config_vec_scan_names[cfg->vector_scan]);
    if (cfg->n_languages) {
        tbuf_puts(&b, "languages: ");
        put_list(&b, cfg->languages, cfg->n_languages);
    }
    if (cfg->n_date_keys) {
        tbuf_puts(&b, "dates:\n  keys: ");
        put_list(&b, cfg->date_keys, cfg->n_date_keys);
    }
    if (cfg->recency_text) {
        tbuf_puts(&b, "recency:\n  half_life: ");
        put_quoted(&b, cfg->recency_text);
        tbuf_putc(&b, '\n');
    }
    if (cfg->mcp.token || cfg->mcp.n_origins || cfg->mcp.n_exclude || cfg->mcp.private_key) {
        tbuf_puts(&b, "mcp:\n");
        if (cfg->mcp.token) {
            tbuf_puts(&b, "  token: ");
            put_quoted(&b, cfg->mcp.token);
            tbuf_putc(&b, '\n');
        }
        if (cfg->mcp.n_origins) {
            tbuf_puts(&b, "  origins: ");
            put_list(&b, cfg->mcp.origins, cfg->mcp.n_origins);
        }
        if (cfg->mcp.n_exclude) {
            tbuf_puts(&b, "  exclude: ");
            put_list(&b, cfg->mcp.exclude, cfg->mcp.n_exclude);
        }
        if (cfg->mcp.private_key) {
            tbuf_puts(&b, "  private_key: ");
            put_quoted(&b, cfg->mcp.private_key);
            tbuf_putc(&b, '\n');
        }
    }
    if (cfg->zh_dict || cfg->zh_user_dict) {
        tbuf_puts(&b, "chinese:\n");
        if (cfg->zh_dict) {
            tbuf_puts(&b, "  dictionary: ");
            put_quoted(&b, cfg->zh_dict);
            tbuf_putc(&b, '\n');
        }
        if (cfg->zh_user_dict) {
            tbuf_puts(&b, "  user_dictionary: ");
            put_quoted(&b, cfg->zh_user_dict);
            tbuf_putc(&b, '\n');
        }
    }
    /* keys kept as written: the models and the remote index */
    const char *const string_keys[3][2] = {{"rerank_model", cfg->rerank_model},
                                          {"expand_model", cfg->expand_model},
                                          {"remote", cfg->remote}};
    for (int k = 0; k < 3; k++)
        if (string_keys[k][1]) {
            tbuf_printf(&b, "%s: ", string_keys[k][0]);
            put_quoted(&b, string_keys[k][1]);
            tbuf_putc(&b, '\n');
        }
    int any_weight = 0;
    for (int i = 0; i < CONFIG_N_WEIGHTS; i++)
        any_weight |= cfg->has_weight[i];
    if (any_weight) {
        tbuf_puts(&b, "weights:\n");
        for (int i = 0; i < CONFIG_N_WEIGHTS; i++)
            if (cfg->has_weight[i])
                tbuf_printf(&b, "  %s: %.17g\n", config_weight_names[i], cfg->weights[i]);
    }

    trove_err rc = fs_replace_file(cfg->file, NULL, &(fs_part){b.data, b.len}, 1, 0666,
                                   FS_REPLACE_MKDIR);
    tbuf_free(&b);
    return rc;
}

/* ---- editing --------------------------------------------------------- */

static void free_list(char **items, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(items[i]);
    free(items);
}

static char **copy_list(const char *const *items, size_t n)
{
    char **out = n ? xmalloc(n * sizeof *out) : NULL;
    for (size_t i = 0; i < n; i++)
        out[i] = xstrdup(items[i]);
    return out;
}

void config_free(config *cfg)
{
    for (size_t i = 0; i < cfg->n_collections; i++) {
        config_collection *c = &cfg->collections[i];
        free(c->name);
        free(c->path);
        free_list(c->masks, c->n_masks);
        free_list(c->excludes, c->n_excludes);
    }
    free(cfg->collections);
    for (size_t i = 0; i < cfg->n_contexts; i++) {
        free(cfg->contexts[i].target);
        free(cfg->contexts[i].text);
    }
    free(cfg->contexts);
    free(cfg->embed_model);
    free(cfg->mcp.token);
    free_list(cfg->mcp.origins, cfg->mcp.n_origins);
    free_list(cfg->mcp.exclude, cfg->mcp.n_exclude);
    free(cfg->mcp.private_key);
    free_list(cfg->languages, cfg->n_languages);
    free_list(cfg->date_keys, cfg->n_date_keys);
    free(cfg->recency_text);
    free(cfg->zh_dict);
    free(cfg->rerank_model);
    free(cfg->expand_model);
    free(cfg->remote);
    free(cfg->zh_user_dict);
    free(cfg->file);
    memset(cfg, 0, sizeof *cfg);
}

config_collection *config_find_collection(const config *cfg, const char *name)
{
    for (size_t i = 0; i < cfg->n_collections; i++)
        if (strcmp(cfg->collections[i].name, name) == 0)
            return &cfg->collections[i];
    return NULL;
}

char *config_real_path(const char *path)
{
    char buf[PATH_MAX];
    return xstrdup(realpath(path, buf) ? buf : path);
}

const config_collection *config_same_folder(const config *cfg, const char *path, size_t before)
{
    char *want = config_real_path(path);
    const config_collection *hit = NULL;
    for (size_t i = 0; i < cfg->n_collections && i < before && !hit; i++) {
        char *have = config_real_path(cfg->collections[i].path);
        if (strcmp(have, want) == 0)
            hit = &cfg->collections[i];
        free(have);
    }
    free(want);
    return hit;
}

config_collection *config_add_collection(config *cfg, const char *name, const char *path,
                                         const char *const *masks, size_t n_masks,
                                         const char *const *excludes, size_t n_excludes)
{
    size_t cap = cfg->n_collections;
    xgrow(&cfg->collections, &cap, cfg->n_collections + 1, sizeof *cfg->collections);
    config_collection *c = &cfg->collections[cfg->n_collections++];
    c->name = xstrdup(name);
    size_t plen = strlen(path);
    while (plen > 1 && path[plen - 1] == '/')
        plen--;
    c->path = xstrndup(path, plen);
    c->masks = copy_list(masks, n_masks);
    c->n_masks = n_masks;
    c->excludes = copy_list(excludes, n_excludes);
    c->n_excludes = n_excludes;
    return c;
}

int config_remove_collection(config *cfg, const char *name)
{
    config_collection *c = config_find_collection(cfg, name);
    if (!c)
        return 0;
    free(c->name);
    free(c->path);
    free_list(c->masks, c->n_masks);
    free_list(c->excludes, c->n_excludes);
    size_t idx = (size_t)(c - cfg->collections);
    memmove(c, c + 1, (cfg->n_collections - idx - 1) * sizeof *c);
    cfg->n_collections--;
    return 1;
}

void config_set_embed_model(config *cfg, const char *spec)
{
    free(cfg->embed_model);
    cfg->embed_model = spec && *spec ? xstrdup(spec) : NULL;
}

void config_add_context(config *cfg, const char *target, const char *text)
{
    size_t tlen = strlen(target);
    while (tlen > 1 && target[tlen - 1] == '/')
        tlen--;
    for (size_t i = 0; i < cfg->n_contexts; i++) {
        const char *t = cfg->contexts[i].target;
        if (strlen(t) == tlen && strncmp(t, target, tlen) == 0) {
            free(cfg->contexts[i].text);
            cfg->contexts[i].text = xstrdup(text);
            return;
        }
    }
    size_t cap = cfg->n_contexts;
    xgrow(&cfg->contexts, &cap, cfg->n_contexts + 1, sizeof *cfg->contexts);
    cfg->contexts[cfg->n_contexts].target = xstrndup(target, tlen);
    cfg->contexts[cfg->n_contexts].text = xstrdup(text);
    cfg->n_contexts++;
}

int config_remove_context(config *cfg, const char *target)
{
    int removed = 0;
    size_t tlen = strlen(target);
    while (tlen > 1 && target[tlen - 1] == '/')
        tlen--;
    for (size_t i = 0; i < cfg->n_contexts;) {
        config_context *c = &cfg->contexts[i];
        if (strlen(c->target) == tlen && strncmp(c->target, target, tlen) == 0) {
            free(c->target);
            free(c->text);
            memmove(c, c + 1, (cfg->n_contexts - i - 1) * sizeof *c);
            cfg->n_contexts--;
            removed++;
        } else {
            i++;
        }
    }
    return removed;
}

/* Does context target "coll/prefix" cover document coll:path? The prefix must
 * end at a path-segment boundary ("notes/a" covers "a/x.md" and "a.md"? no:
 * only "a" itself or "a/..."). */
static int context_applies(const char *target, const char *collection, const char *path)
{
    size_t cl = strlen(collection);
    if (strncmp(target, collection, cl) != 0)
        return 0;
    if (target[cl] == '\0')
        return 1;
    if (target[cl] != '/')
        return 0;
    const char *prefix = target + cl + 1;
    size_t pl = strlen(prefix);
    if (pl == 0)
        return 1;
    return strncmp(path, prefix, pl) == 0 && (path[pl] == '\0' || path[pl] == '/');
}

const char **config_contexts_for(const config *cfg, const char *collection,
                                 const char *path, size_t *n_out)
{
    const char **out = NULL;
    size_t *lens = NULL, n = 0;
    for (size_t i = 0; i < cfg->n_contexts; i++) {
        if (!context_applies(cfg->contexts[i].target, collection, path))
            continue;
        out = xrealloc(out, (n + 1) * sizeof *out);
        lens = xrealloc(lens, (n + 1) * sizeof *lens);
        /* insertion sort by target length: most general first */
        size_t len = strlen(cfg->contexts[i].target), j = n;
        while (j > 0 && lens[j - 1] > len) {
            out[j] = out[j - 1];
            lens[j] = lens[j - 1];
            j--;
        }
        out[j] = cfg->contexts[i].text;
        lens[j] = len;
        n++;
    }
    free(lens);
    *n_out = n;
    return out;
}

/* ---- a collection's settings as one text (snapshots) ---------------- */

static json_t *json_strings(char *const *v, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(a, json_stringn_nocheck(v[i], strlen(v[i])));
    return a;
}

char *config_collection_settings(const config *cfg, const char *name)
{
    const config_collection *c = config_find_collection(cfg, name);
    if (!c)
        return NULL;
    json_t *ctx = json_array();
    size_t nl = strlen(name);
    for (size_t i = 0; i < cfg->n_contexts; i++) {
        const char *t = cfg->contexts[i].target;
        if (strncmp(t, name, nl) != 0 || (t[nl] != '\0' && t[nl] != '/'))
            continue;
        json_t *e = json_object();
        json_object_set_new(e, "target", json_stringn_nocheck(t + nl, strlen(t + nl)));
        json_object_set_new(e, "text", json_stringn_nocheck(cfg->contexts[i].text,
                                                            strlen(cfg->contexts[i].text)));
        json_array_append_new(ctx, e);
    }
    /* (Strings that are not UTF-8 do not load back: such a collection
     * comes back with the default settings.) */
    json_t *o = json_object();
    json_object_set_new(o, "mask", json_strings(c->masks, c->n_masks));
    json_object_set_new(o, "exclude", json_strings(c->excludes, c->n_excludes));
    json_object_set_new(o, "contexts", ctx);
    char *text = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(o);
    char *out = xstrdup(text);
    free(text);
    return out;
}

static char **json_to_strings(json_t *a, size_t *n)
{
    *n = 0;
    if (!json_is_array(a) || json_array_size(a) == 0)
        return NULL;
    char **out = xcalloc(json_array_size(a), sizeof *out);
    for (size_t i = 0; i < json_array_size(a); i++) {
        const char *s = json_string_value(json_array_get(a, i));
        if (s)
            out[(*n)++] = xstrdup(s);
    }
    return out;
}

static void free_strings(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

config_collection *config_collection_restore(config *cfg, const char *name, const char *path,
                                             const char *settings)
{
    json_t *o = settings ? json_loads(settings, 0, NULL) : NULL;
    size_t nm = 0, ne = 0;
    char **masks = json_to_strings(json_object_get(o, "mask"), &nm);
    char **excl = json_to_strings(json_object_get(o, "exclude"), &ne);
    config_collection *c = config_add_collection(cfg, name, path, (const char *const *)masks, nm,
                                                 (const char *const *)excl, ne);
    json_t *ctx = json_object_get(o, "contexts");
    for (size_t i = 0; json_is_array(ctx) && i < json_array_size(ctx); i++) {
        json_t *e = json_array_get(ctx, i);
        const char *suffix = json_string_value(json_object_get(e, "target"));
        const char *text = json_string_value(json_object_get(e, "text"));
        if (!suffix || !text)
            continue;
        tbuf t = {0};
        tbuf_printf(&t, "%s%s", name, suffix);
        config_add_context(cfg, t.data, text);
        tbuf_free(&t);
    }
    free_strings(masks, nm);
    free_strings(excl, ne);
    json_decref(o);
    return c;
}
