/* YAML frontmatter: title, aliases and tags become fields of md_doc, every
 * other key is kept as JSON. libyaml builds the node tree; anchors can make
 * it cyclic or exponentially large, so the walk has a depth and node budget. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <yaml.h>

#include "md/md_int.h"
#include "util/mem.h"

enum { FM_MAX_DEPTH = 32, FM_MAX_NODES = 20000 };

typedef struct fm_walk {
    yaml_document_t *doc;
    long budget;
} fm_walk;

static int key_is(const yaml_node_t *k, const char *name)
{
    size_t n = strlen(name);
    return k->type == YAML_SCALAR_NODE && k->data.scalar.length == n &&
           memcmp(k->data.scalar.value, name, n) == 0;
}

/* A plain (unquoted) scalar typed as YAML 1.2's core schema reads it: null,
 * true/false, an integer, a float; anything else (dates included: JSON has
 * none; the index recognises them, docs/schema.md) stays text. --where
 * compares by these types. */
static json_t *plain_scalar(const char *s)
{
    static const char *const nulls[] = {"", "~", "null", "Null", "NULL"};
    static const char *const trues[] = {"true", "True", "TRUE"};
    static const char *const falses[] = {"false", "False", "FALSE"};
    for (size_t i = 0; i < sizeof nulls / sizeof *nulls; i++)
        if (!strcmp(s, nulls[i]))
            return json_null();
    for (size_t i = 0; i < 3; i++) {
        if (!strcmp(s, trues[i]))
            return json_true();
        if (!strcmp(s, falses[i]))
            return json_false();
    }
    const char *p = s + (*s == '-' || *s == '+');
    size_t int_digits = strspn(p, "0123456789");
    if (int_digits && p[int_digits] == '\0' && int_digits <= 18)
        return json_integer(strtoll(s, NULL, 10));
    /* [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)? */
    const char *q = p + int_digits;
    size_t frac = 0;
    if (*q == '.')
        frac = strspn(q + 1, "0123456789"), q += 1 + frac;
    if (!int_digits && !frac)
        return json_string(s);
    if (*q == 'e' || *q == 'E') {
        const char *e = q + 1 + (q[1] == '-' || q[1] == '+');
        size_t ed = strspn(e, "0123456789");
        if (!ed)
            return json_string(s);
        q = e + ed;
    }
    if (*q != '\0')
        return json_string(s);
    double v = strtod(s, NULL);
    return isfinite(v) ? json_real(v) : json_string(s);
}

static json_t *to_json(fm_walk *w, const yaml_node_t *n, int depth)
{
    if (!n || depth > FM_MAX_DEPTH || --w->budget < 0)
        return json_null();
    switch (n->type) {
    case YAML_SCALAR_NODE: {
        char *s = md_clean_text((const char *)n->data.scalar.value, n->data.scalar.length);
        json_t *j = n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE ? plain_scalar(s) : json_string(s);
        free(s);
        return j ? j : json_null();
    }
    case YAML_SEQUENCE_NODE: {
        json_t *a = json_array();
        for (yaml_node_item_t *it = n->data.sequence.items.start;
             it < n->data.sequence.items.top; it++)
            json_array_append_new(a, to_json(w, yaml_document_get_node(w->doc, *it), depth + 1));
        return a;
    }
    case YAML_MAPPING_NODE: {
        json_t *o = json_object();
        for (yaml_node_pair_t *pr = n->data.mapping.pairs.start;
             pr < n->data.mapping.pairs.top; pr++) {
            yaml_node_t *k = yaml_document_get_node(w->doc, pr->key);
            if (!k || k->type != YAML_SCALAR_NODE)
                continue; /* JSON keys must be strings */
            char *ks = md_clean_text((const char *)k->data.scalar.value, k->data.scalar.length);
            json_object_set_new(o, ks, to_json(w, yaml_document_get_node(w->doc, pr->value), depth + 1));
            free(ks);
        }
        return o;
    }
    default:
        return json_null();
    }
}

/* "a, b c" or "#a #b": a tag string is split at commas and white space. */
static void tags_from_string(mdp *p, const char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        while (i < n && (s[i] == ',' || s[i] == ' ' || s[i] == '\t' || s[i] == '\n'))
            i++;
        size_t st = i;
        while (i < n && !(s[i] == ',' || s[i] == ' ' || s[i] == '\t' || s[i] == '\n'))
            i++;
        if (i > st)
            md_add_tag(p, s + st, i - st);
    }
}

static void list_field(mdp *p, fm_walk *w, const yaml_node_t *v, int is_tags)
{
    if (!v)
        return;
    if (v->type == YAML_SCALAR_NODE) {
        const char *s = (const char *)v->data.scalar.value;
        if (is_tags)
            tags_from_string(p, s, v->data.scalar.length);
        else
            md_add_alias(p, s, v->data.scalar.length);
        return;
    }
    if (v->type != YAML_SEQUENCE_NODE)
        return;
    for (yaml_node_item_t *it = v->data.sequence.items.start;
         it < v->data.sequence.items.top && --w->budget >= 0; it++) {
        yaml_node_t *e = yaml_document_get_node(w->doc, *it);
        if (!e || e->type != YAML_SCALAR_NODE)
            continue;
        const char *s = (const char *)e->data.scalar.value;
        if (is_tags)
            md_add_tag(p, s, e->data.scalar.length);
        else
            md_add_alias(p, s, e->data.scalar.length);
    }
}

static void set_title(mdp *p, const yaml_node_t *v)
{
    if (!v || v->type != YAML_SCALAR_NODE || p->doc->title)
        return;
    const char *s = (const char *)v->data.scalar.value;
    size_t n = v->data.scalar.length;
    while (n && (*s == ' ' || *s == '\t'))
        s++, n--;
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n'))
        n--;
    if (n)
        p->doc->title = md_clean_text(s, n);
}

static void walk_root(mdp *p, yaml_document_t *doc, int first_line)
{
    yaml_node_t *root = yaml_document_get_root_node(doc);
    if (!root)
        return; /* empty frontmatter */
    if (root->type != YAML_MAPPING_NODE) {
        md_set_warning(p, "malformed frontmatter at line %d: not a key: value mapping", first_line);
        return;
    }
    fm_walk w = {doc, FM_MAX_NODES};
    json_t *meta = json_object();
    for (yaml_node_pair_t *pr = root->data.mapping.pairs.start;
         pr < root->data.mapping.pairs.top; pr++) {
        yaml_node_t *k = yaml_document_get_node(doc, pr->key);
        yaml_node_t *v = yaml_document_get_node(doc, pr->value);
        if (!k || k->type != YAML_SCALAR_NODE)
            continue;
        if (key_is(k, "title"))
            set_title(p, v);
        else if (key_is(k, "aliases") || key_is(k, "alias"))
            list_field(p, &w, v, 0);
        else if (key_is(k, "tags") || key_is(k, "tag"))
            list_field(p, &w, v, 1);
        else {
            char *ks = md_clean_text((const char *)k->data.scalar.value, k->data.scalar.length);
            json_object_set_new(meta, ks, to_json(&w, v, 1));
            free(ks);
        }
    }
    if (json_object_size(meta) > 0)
        p->doc->meta_json = json_dumps(meta, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(meta);
}

void md_frontmatter(mdp *p, const char *s, size_t n, int first_line)
{
    /* libyaml rejects invalid UTF-8 outright; cleaning first keeps the rest
     * of an otherwise good block. Cleaning never changes line numbers. */
    char *clean = md_clean_text(s, n);
    yaml_parser_t parser;
    yaml_document_t doc;
    if (!yaml_parser_initialize(&parser)) {
        free(clean);
        md_set_warning(p, "frontmatter: cannot initialise the YAML parser");
        return;
    }
    yaml_parser_set_input_string(&parser, (const unsigned char *)clean, strlen(clean));
    if (!yaml_parser_load(&parser, &doc)) {
        md_set_warning(p, "malformed frontmatter at line %d: %s",
                       first_line + (int)parser.problem_mark.line,
                       parser.problem ? parser.problem : "YAML error");
    } else {
        walk_root(p, &doc, first_line);
        yaml_document_delete(&doc);
    }
    yaml_parser_delete(&parser);
    free(clean);
}

/* Old indexes kept every scalar as text: type each text value again as if
 * it had been written plain (a quoted "2" becomes 2; the next update of
 * the note stores its real type). */
static json_t *retype(json_t *v, int depth)
{
    if (json_is_string(v))
        return plain_scalar(json_string_value(v));
    json_incref(v);
    if (depth > FM_MAX_DEPTH)
        return v;
    if (json_is_array(v)) {
        for (size_t i = 0; i < json_array_size(v); i++)
            json_array_set_new(v, i, retype(json_array_get(v, i), depth + 1));
    } else if (json_is_object(v)) {
        const char *k;
        json_t *x;
        json_object_foreach(v, k, x)
            json_object_set_new(v, k, retype(x, depth + 1));
    }
    return v;
}

char *md_meta_retype(const char *json)
{
    json_t *v = json ? json_loads(json, JSON_DECODE_ANY, NULL) : NULL;
    if (!v)
        return NULL;
    json_t *t = retype(v, 0);
    json_decref(v);
    char *out = json_dumps(t, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY);
    json_decref(t);
    return out;
}
