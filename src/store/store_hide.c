/* store_hide — the rule of the agent boundary (api.h, api_set_boundary):
 * which notes an agent may never see. One rule, read three ways: in C for
 * notes already listed (store_hide_globs_match, store_private_ids), and in
 * SQL for search's filters (the function trove_hide_path and
 * STORE_PRIVATE_SQL), so a note hidden from one answer is hidden from all. */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs/glob.h"
#include "store/store.h"
#include "store/store_int.h"
#include "util/buf.h"
#include "util/mem.h"

struct store_hide_globs {
    tglob **g;
    size_t n;
    tbuf scratch;
};

store_hide_globs *store_hide_globs_new(const char *const *globs, size_t n)
{
    if (n == 0)
        return NULL;
    store_hide_globs *h = xcalloc(1, sizeof *h);
    h->g = xcalloc(n, sizeof *h->g);
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(globs[i]);
        while (len > 1 && globs[i][len - 1] == '/')
            len--;   /* "journal/" names the folder, as "journal" does */
        h->g[h->n++] = tglob_compile(globs[i], len, 0);
    }
    return h;
}

/* "a\nb\n..." (the SQL function's argument) split into globs. */
static store_hide_globs *globs_from_text(const char *text)
{
    size_t n = 0, cap = 0;
    char **list = NULL;
    for (const char *p = text; p && *p;) {
        size_t len = strcspn(p, "\n");
        if (len) {
            xgrow(&list, &cap, n + 1, sizeof *list);
            list[n++] = xstrndup(p, len);
        }
        p += len + (p[len] == '\n');
    }
    store_hide_globs *h = store_hide_globs_new((const char *const *)list, n);
    for (size_t i = 0; i < n; i++)
        free(list[i]);
    free(list);
    return h;
}

void store_hide_globs_free(store_hide_globs *h)
{
    if (!h)
        return;
    for (size_t i = 0; i < h->n; i++)
        tglob_free(h->g[i]);
    free(h->g);
    tbuf_free(&h->scratch);
    free(h);
}

static int any(store_hide_globs *h, const char *s, size_t len)
{
    for (size_t i = 0; i < h->n; i++)
        if (tglob_match(h->g[i], s, len))
            return 1;
    return 0;
}

int store_hide_globs_match(store_hide_globs *h, const char *collection, const char *path)
{
    if (!h || !path)
        return 0;
    /* "COLLECTION/PATH" and PATH, and every folder of each: "journal"
     * hides journal/2024/x.md, "vault" the whole collection vault. */
    tbuf *b = &h->scratch;
    tbuf_reset(b);
    tbuf_printf(b, "%s/%s", collection ? collection : "", path);
    size_t skip = strlen(collection ? collection : "") + 1;
    for (size_t i = 0; i <= b->len; i++) {
        if (i < b->len && b->data[i] != '/')
            continue;
        if (collection && any(h, b->data, i))
            return 1;
        if (i > skip && any(h, b->data + skip, i - skip))
            return 1;
    }
    return 0;
}

static void free_globs(void *p)
{
    store_hide_globs_free(p);
}

/* trove_hide_path(GLOBS, COLLECTION, PATH): GLOBS one a line; compiled once
 * per statement (SQLite's auxiliary data on the constant argument). */
void store_sql_hide_path(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    (void)argc;
    store_hide_globs *h = sqlite3_get_auxdata(ctx, 0);
    if (!h) {
        h = globs_from_text((const char *)sqlite3_value_text(argv[0]));
        if (!h) {
            sqlite3_result_int(ctx, 0);
            return;
        }
        sqlite3_set_auxdata(ctx, 0, h, free_globs);
        /* SQLite may have freed it already when it could not keep it */
        h = sqlite3_get_auxdata(ctx, 0);
        if (!h) {
            h = globs_from_text((const char *)sqlite3_value_text(argv[0]));
            int hit = store_hide_globs_match(h, (const char *)sqlite3_value_text(argv[1]),
                                             (const char *)sqlite3_value_text(argv[2]));
            store_hide_globs_free(h);
            sqlite3_result_int(ctx, hit);
            return;
        }
    }
    sqlite3_result_int(ctx, store_hide_globs_match(h, (const char *)sqlite3_value_text(argv[1]),
                                                   (const char *)sqlite3_value_text(argv[2])));
}

typedef struct ids_ctx {
    const char *key;
    int64_t *ids;
    size_t n, cap;
} ids_ctx;

static void bind_key(void *ctx, sqlite3_stmt *s)
{
    sqlite3_bind_text(s, 1, ((ids_ctx *)ctx)->key, -1, SQLITE_STATIC);
}

static trove_err add_id(void *ctx, sqlite3_stmt *s)
{
    ids_ctx *c = ctx;
    xgrow(&c->ids, &c->cap, c->n + 1, sizeof *c->ids);
    c->ids[c->n++] = sqlite3_column_int64(s, 0);
    return TROVE_OK;
}

trove_err store_private_ids(store *st, const char *key, int64_t **ids, size_t *n)
{
    ids_ctx c = {.key = key};
    *ids = NULL;
    *n = 0;
    if (!key || !*key)
        return TROVE_OK;
    trove_err rc = store_each(st, "SELECT DISTINCT d.id FROM docs d WHERE " STORE_PRIVATE_SQL("d.id")
                              " ORDER BY d.id", "reading private notes", bind_key, add_id, &c);
    if (rc) {
        free(c.ids);
        return rc;
    }
    *ids = c.ids;
    *n = c.n;
    return TROVE_OK;
}

typedef struct langs_ctx {
    const char *globs, *key;
    store_lang_count *items;
    size_t n, cap;
} langs_ctx;

static void bind_hide(void *ctx, sqlite3_stmt *s)
{
    langs_ctx *c = ctx;
    int i = 1;
    if (c->globs)
        sqlite3_bind_text(s, i++, c->globs, -1, SQLITE_STATIC);
    if (c->key)
        sqlite3_bind_text(s, i++, c->key, -1, SQLITE_STATIC);
}

static trove_err add_lang(void *ctx, sqlite3_stmt *s)
{
    langs_ctx *c = ctx;
    const char *lang = (const char *)sqlite3_column_text(s, 0);
    xgrow(&c->items, &c->cap, c->n + 1, sizeof *c->items);
    store_lang_count *l = &c->items[c->n++];
    snprintf(l->lang, sizeof l->lang, "%s", lang ? lang : "");
    l->notes = sqlite3_column_int64(s, 1);
    return TROVE_OK;
}

trove_err store_lang_counts(store *st, const char *hide_globs, const char *hide_key,
                            store_lang_count **out, size_t *n)
{
    langs_ctx c = {.globs = hide_globs && *hide_globs ? hide_globs : NULL,
                   .key = hide_key && *hide_key ? hide_key : NULL};
    tbuf sql = {0};
    tbuf_puts(&sql, "SELECT d.lang, count(*) FROM docs d WHERE d.lang != ''");
    if (c.globs)
        tbuf_puts(&sql, " AND NOT " STORE_HIDE_PATH_SQL("(SELECT name FROM collections WHERE"
                        " id = d.collection_id)", "d.path"));
    if (c.key)
        tbuf_puts(&sql, " AND NOT " STORE_PRIVATE_SQL("d.id"));
    tbuf_puts(&sql, " GROUP BY d.lang ORDER BY count(*) DESC, d.lang");
    trove_err rc = store_each(st, sql.data, "counting languages", bind_hide, add_lang, &c);
    tbuf_free(&sql);
    if (rc) {
        free(c.items);
        c.items = NULL;
        c.n = 0;
    }
    *out = c.items;
    *n = c.n;
    return rc;
}
