/* web_req — arguments and search requests of the web server. */
#include "web/web_req.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text/transl.h"
#include "util/mem.h"
#include "util/str.h"

const char *const web_mode_names[3] = {"search", "vsearch", "query"};

void web_args_add(web_args *a, const char *key, size_t key_len, const char *value,
                  size_t value_len)
{
    if (a->n >= WEB_MAX_ARGS)
        return;
    web_kv *kv = &a->items[a->n++];
    kv->key = xstrndup(key, key_len < WEB_MAX_ARG ? key_len : WEB_MAX_ARG);
    kv->value = xstrndup(value ? value : "", value_len < WEB_MAX_ARG ? value_len : WEB_MAX_ARG);
}

static int hexval(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                          : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* Decode [s, s+len) in place into out (room for len bytes); returns its length. */
static size_t form_decode(const char *s, size_t len, char *out)
{
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        int h, l;
        if (s[i] == '+') {
            out[o++] = ' ';
        } else if (s[i] == '%' && i + 2 < len && (h = hexval(s[i + 1])) >= 0 &&
                   (l = hexval(s[i + 2])) >= 0) {
            out[o++] = (char)(h * 16 + l);
            i += 2;
        } else {
            out[o++] = s[i];
        }
    }
    return o;
}

void web_args_parse(web_args *a, const char *s, size_t len)
{
    size_t i = 0;
    while (i < len && a->n < WEB_MAX_ARGS) {
        size_t end = i;
        while (end < len && s[end] != '&')
            end++;
        if (end > i) {
            size_t eq = i;
            while (eq < end && s[eq] != '=')
                eq++;
            char *k = xmalloc(eq - i + 1), *v = xmalloc(end - eq + 1);
            size_t kl = form_decode(s + i, eq - i, k);
            size_t vl = eq < end ? form_decode(s + eq + 1, end - eq - 1, v) : 0;
            web_args_add(a, k, kl, v, vl);
            free(k);
            free(v);
        }
        i = end + 1;
    }
}

const char *web_arg(const web_args *a, const char *key)
{
    for (size_t i = 0; i < a->n; i++)
        if (strcmp(a->items[i].key, key) == 0)
            return a->items[i].value;
    return NULL;
}

void web_args_free(web_args *a)
{
    for (size_t i = 0; i < a->n; i++) {
        free(a->items[i].key);
        free(a->items[i].value);
    }
    a->n = 0;
}

/* Every value of `key`, split at any of the bytes in `seps` (leading and
 * trailing blanks of each piece dropped), appended to list. */
static void add_split(const web_args *a, const char *key, const char *seps, char ***list,
                      size_t *n)
{
    size_t cap = *n;
    for (size_t i = 0; i < a->n; i++) {
        if (strcmp(a->items[i].key, key) != 0)
            continue;
        const char *p = a->items[i].value;
        while (*p) {
            while (*p == ' ')
                p++;
            size_t len = strcspn(p, seps);
            size_t trim = len;
            while (trim > 0 && p[trim - 1] == ' ')
                trim--;
            if (trim) {
                xgrow(list, &cap, *n + 1, sizeof **list);
                (*list)[(*n)++] = xstrndup(p, trim);
            }
            p += len;
            if (*p)
                p++;
        }
    }
}

/* Every value of `key`, split at commas and blanks, appended to list. */
static void add_all(const web_args *a, const char *key, char ***list, size_t *n)
{
    add_split(a, key, ", ", list, n);
}

int web_search_req_parse(const web_args *a, web_search_req *r, char *err, size_t err_size)
{
    memset(r, 0, sizeof *r);
    r->limit = 20;
    const char *v = web_arg(a, "q");
    r->q = xstrdup(v ? v : "");
    if ((v = web_arg(a, "mode")) && *v) {
        size_t m = 0;
        while (m < 3 && strcmp(v, web_mode_names[m]) != 0)
            m++;
        if (m == 3) {
            snprintf(err, err_size, "mode must be search, vsearch or query");
            return 0;
        }
        r->mode = (web_mode)m;
    }
    if ((v = web_arg(a, "n")) && *v && !str_to_long(v, 1, 1000, &r->limit)) {
        snprintf(err, err_size, "n must be a number from 1 to 1000");
        return 0;
    }
    if ((v = web_arg(a, "folder")) && *v)
        r->folder = xstrdup(v);
    if ((v = web_arg(a, "since")) && *v)
        r->since = xstrdup(v);
    if ((v = web_arg(a, "until")) && *v)
        r->until = xstrdup(v);
    /* a condition holds commas and blanks (author in (ana, li)): ';' parts them */
    add_split(a, "where", ";", &r->where, &r->n_where);
    v = web_arg(a, "recent");
    r->recent = v && *v && strcmp(v, "0") != 0;
    v = web_arg(a, "explain");
    r->explain = v && strcmp(v, "0") != 0;
    add_all(a, "c", &r->collections, &r->n_collections);
    add_all(a, "tags", &r->tags, &r->n_tags);
    add_all(a, "lang", &r->langs, &r->n_langs);
    char code[16];
    for (size_t i = 0; i < r->n_langs; i++) {
        if (!transl_code_normalise(r->langs[i], code, sizeof code)) {
            snprintf(err, err_size, "lang: not a language code (ISO 639-1: en, de, pt-BR, ...)");
            return 0;
        }
    }
    return 1;
}

static void free_list(char **l, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(l[i]);
    free(l);
}

void web_search_req_free(web_search_req *r)
{
    free(r->q);
    free(r->folder);
    free(r->since);
    free(r->until);
    free_list(r->where, r->n_where);
    free_list(r->collections, r->n_collections);
    free_list(r->tags, r->n_tags);
    free_list(r->langs, r->n_langs);
    memset(r, 0, sizeof *r);
}
