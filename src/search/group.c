/* group — see group.h. */
#include "search/group.h"

#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "search/lang_pref.h"
#include "search/search_int.h"
#include "text/lang.h"
#include "text/transl.h"
#include "util/buf.h"
#include "util/mem.h"
#include "util/str.h"

/* One copy of the note being grouped. */
typedef struct member {
    int64_t doc_id;
    size_t cand;         /* index among the candidates, GROUP_NOT_CANDIDATE */
    char lang[8];        /* detected */
    char label[16];      /* the folder's code, else the detected one */
    char docid[9];
    char *path;
} member;

typedef struct members {
    member *items;
    size_t n, cap;
} members;

static void members_reset(members *m)
{
    for (size_t i = 0; i < m->n; i++)
        free(m->items[i].path);
    m->n = 0;
}

static int members_has(const members *m, int64_t doc_id)
{
    for (size_t i = 0; i < m->n; i++)
        if (m->items[i].doc_id == doc_id)
            return 1;
    return 0;
}

static void members_add(members *m, int64_t doc_id, size_t cand, const char *lang,
                        const char *path, const char *docid)
{
    xgrow(&m->items, &m->cap, m->n + 1, sizeof *m->items);
    member *x = &m->items[m->n++];
    memset(x, 0, sizeof *x);
    x->doc_id = doc_id;
    x->cand = cand;
    snprintf(x->lang, sizeof x->lang, "%s", lang ? lang : "");
    snprintf(x->docid, sizeof x->docid, "%s", docid ? docid : "");
    x->path = xstrdup(path ? path : "");
    if (!transl_path_lang(x->path, x->label, sizeof x->label))
        snprintf(x->label, sizeof x->label, "%s", x->lang);
}

/* Two copies are in different languages when their detected languages
 * differ, or, when one is unknown, their labels do. */
static int different_languages(const member *a, const member *b)
{
    if (*a->lang && *b->lang)
        return strcmp(a->lang, b->lang) != 0;
    return strcmp(a->label, b->label) != 0;
}

static int several_languages(const members *m)
{
    for (size_t i = 1; i < m->n; i++)
        if (different_languages(&m->items[0], &m->items[i]))
            return 1;
    return 0;
}

/* ---- candidate index by note id ---------------------------------------- */

typedef struct id_index {
    int64_t *ids;
    size_t *at;
    size_t n_slots;
} id_index;

static size_t id_slot(const id_index *ix, int64_t id)
{
    size_t h = (size_t)id * 0x9E3779B97F4A7C15ull & (ix->n_slots - 1);
    while (ix->at[h] && ix->ids[h] != id)
        h = (h + 1) & (ix->n_slots - 1);
    return h;
}

static void id_index_build(id_index *ix, const group_in *in, size_t n)
{
    ix->n_slots = 16;
    while (ix->n_slots < 2 * n + 2)
        ix->n_slots *= 2;
    ix->ids = xcalloc(ix->n_slots, sizeof *ix->ids);
    ix->at = xcalloc(ix->n_slots, sizeof *ix->at);
    for (size_t i = 0; i < n; i++) {
        size_t h = id_slot(ix, in[i].doc_id);
        if (!ix->at[h]) {
            ix->ids[h] = in[i].doc_id;
            ix->at[h] = i + 1;
        }
    }
}

static size_t id_index_find(const id_index *ix, int64_t id)
{
    size_t h = id_slot(ix, id);
    return ix->at[h] ? ix->at[h] - 1 : GROUP_NOT_CANDIDATE;
}

static void id_index_free(id_index *ix)
{
    free(ix->ids);
    free(ix->at);
}

/* ---- copies that name each other --------------------------------------- */

/* The best candidates whose names are compared for alias pairs. */
#define GROUP_ALIAS_CANDIDATES 100

/* Union-find over the candidates: alias links. */
static size_t uf_find(size_t *parent, size_t i)
{
    while (parent[i] != i)
        i = parent[i] = parent[parent[i]];
    return i;
}

static void uf_join(size_t *parent, size_t a, size_t b)
{
    a = uf_find(parent, a), b = uf_find(parent, b);
    if (a != b)
        parent[a > b ? a : b] = a < b ? a : b;   /* the better candidate leads */
}

typedef struct names {
    char *title;         /* folded */
    char **aliases;      /* folded */
    size_t n_aliases;
} names;

static int names_has_alias(const names *x, const char *title)
{
    for (size_t i = 0; title && i < x->n_aliases; i++)
        if (strcmp(x->aliases[i], title) == 0)
            return 1;
    return 0;
}

/* A candidate whose alias is the title of a candidate in another language
 * is a copy of it (zh/公式.md with alias "Formulas" beside en/Formulas.md). */
static trove_err join_alias_pairs(store *st, const group_in *in, size_t n, size_t *parent)
{
    /* A note's aliases are in titles_fts and in `names`, written together
     * (store.c insert_names, the snapshots' rollback): an index without a
     * `names` row has no alias to compare, and its candidates' names need
     * not be read (100 lookups, ~6% of a cold search's instructions on
     * the tldr pages: docs/performance.md, session 31). */
    sqlite3_stmt *any = store_stmt_get(st, "SELECT 1 FROM names LIMIT 1");
    if (!any)
        return store_fail(st, "reading note names");
    trove_err rc = TROVE_OK;
    int row = store_step(st, any, "reading note names", &rc);
    store_stmt_put(st, any);
    if (row <= 0)
        return rc;   /* no alias anywhere, or an error */
    sqlite3_stmt *s = store_stmt_get(st, "SELECT d.title, t.c1 FROM docs d JOIN "
                                         SEARCH_TITLES_CONTENT " t ON t.id = d.id WHERE d.id = ?");
    if (!s)
        return store_fail(st, "reading note names");
    names *nm = xcalloc(n ? n : 1, sizeof *nm);
    size_t with_aliases = 0;
    for (size_t i = 0; i < n; i++) {
        sqlite3_reset(s);
        sqlite3_bind_int64(s, 1, in[i].doc_id);
        if (sqlite3_step(s) != SQLITE_ROW)
            continue;
        const char *title = (const char *)sqlite3_column_text(s, 0);
        const char *aliases = (const char *)sqlite3_column_text(s, 1);
        nm[i].title = str_fold(title ? title : "");
        size_t cap = 0;
        for (const char *a = aliases ? aliases : ""; *a;) {
            size_t len = strcspn(a, "\n");
            if (len) {
                char *one = xstrndup(a, len);
                xgrow(&nm[i].aliases, &cap, nm[i].n_aliases + 1, sizeof *nm[i].aliases);
                nm[i].aliases[nm[i].n_aliases++] = str_fold(one);
                free(one);
            }
            a += len;
            if (*a == '\n')
                a++;
        }
        with_aliases += nm[i].n_aliases > 0;
    }
    store_stmt_put(st, s);
    for (size_t i = 0; with_aliases && i < n; i++) {
        if (!nm[i].n_aliases || in[i].lang == LANG_UND)
            continue;
        for (size_t j = 0; j < n; j++)
            if (j != i && in[j].lang != LANG_UND && in[j].lang != in[i].lang && nm[j].title &&
                *nm[j].title && names_has_alias(&nm[i], nm[j].title))
                uf_join(parent, i, j);
    }
    for (size_t i = 0; i < n; i++) {
        free(nm[i].title);
        for (size_t k = 0; k < nm[i].n_aliases; k++)
            free(nm[i].aliases[k]);
        free(nm[i].aliases);
    }
    free(nm);
    return TROVE_OK;
}

/* ---- one group ---------------------------------------------------------- */

typedef struct stmts {
    sqlite3_stmt *key;       /* the leader's collection and key */
    sqlite3_stmt *copies;    /* every note of that key */
    sqlite3_stmt *one;       /* one note's language, path, docid */
    sqlite3_stmt *allowed;   /* whether a note passes the filters */
    sqlite3_stmt *visible;   /* whether a note lies inside the agent boundary */
} stmts;

static void add_note(stmts *q, members *m, int64_t doc_id, size_t cand)
{
    sqlite3_reset(q->one);
    sqlite3_bind_int64(q->one, 1, doc_id);
    if (sqlite3_step(q->one) == SQLITE_ROW)
        members_add(m, doc_id, cand, (const char *)sqlite3_column_text(q->one, 0),
                    (const char *)sqlite3_column_text(q->one, 1),
                    (const char *)sqlite3_column_text(q->one, 2));
}

/* The copies sharing the leader's key, when they are in several languages. */
static void add_key_copies(stmts *q, const id_index *ix, int64_t leader, members *m)
{
    sqlite3_reset(q->key);
    sqlite3_bind_int64(q->key, 1, leader);
    if (sqlite3_step(q->key) != SQLITE_ROW || sqlite3_column_type(q->key, 1) == SQLITE_NULL)
        return;
    sqlite3_reset(q->copies);
    sqlite3_bind_int64(q->copies, 1, sqlite3_column_int64(q->key, 0));
    sqlite3_bind_text(q->copies, 2, (const char *)sqlite3_column_text(q->key, 1), -1,
                      SQLITE_TRANSIENT);
    members found = {0};
    while (sqlite3_step(q->copies) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(q->copies, 0);
        members_add(&found, id, id_index_find(ix, id),
                    (const char *)sqlite3_column_text(q->copies, 1),
                    (const char *)sqlite3_column_text(q->copies, 2),
                    (const char *)sqlite3_column_text(q->copies, 3));
    }
    if (found.n > 1 && several_languages(&found)) {
        for (size_t i = 0; i < found.n; i++) {
            member *x = &found.items[i];
            if (!members_has(m, x->doc_id)) {
                xgrow(&m->items, &m->cap, m->n + 1, sizeof *m->items);
                m->items[m->n++] = *x;
                x->path = NULL;
            }
        }
    }
    for (size_t i = 0; i < found.n; i++)
        free(found.items[i].path);
    free(found.items);
}

static int passes_filters(stmts *q, int64_t doc_id)
{
    if (!q->allowed)
        return 1;
    sqlite3_reset(q->allowed);
    sqlite3_bind_int64(q->allowed, 1, doc_id);
    return sqlite3_step(q->allowed) == SQLITE_ROW;
}

/* The copy to show: the best candidate in the first wanted language, else
 * a copy in it that passes the filters; else the leader (index 0). */
static size_t pick_shown(stmts *q, const members *m, const group_prefs *p)
{
    const char *wanted[17];
    size_t n_wanted = 0;
    if (p->query_lang != LANG_UND)
        wanted[n_wanted++] = lang_code(p->query_lang);
    for (size_t i = 0; i < p->n_langs && n_wanted < 17; i++)
        wanted[n_wanted++] = p->langs[i];
    for (size_t w = 0; w < n_wanted; w++) {
        size_t best = GROUP_NOT_CANDIDATE, outside = GROUP_NOT_CANDIDATE;
        for (size_t i = 0; i < m->n; i++) {
            const member *x = &m->items[i];
            if (!transl_lang_matches(x->lang, x->path, wanted[w]))
                continue;
            if (x->cand != GROUP_NOT_CANDIDATE) {
                if (best == GROUP_NOT_CANDIDATE || x->cand < m->items[best].cand)
                    best = i;
            } else if (outside == GROUP_NOT_CANDIDATE && passes_filters(q, x->doc_id)) {
                outside = i;
            }
        }
        if (best != GROUP_NOT_CANDIDATE)
            return best;
        if (outside != GROUP_NOT_CANDIDATE)
            return outside;
    }
    return 0;
}

static int cmp_alt(const void *a, const void *b)
{
    const search_alt *x = a, *y = b;
    int c = strcmp(x->lang, y->lang);
    return c ? c : strcmp(x->path, y->path);
}

static int is_visible(stmts *q, int64_t doc_id)
{
    if (!q->visible)
        return 1;
    sqlite3_reset(q->visible);
    sqlite3_bind_int64(q->visible, 1, doc_id);
    return sqlite3_step(q->visible) == SQLITE_ROW;
}

static void take_alts(stmts *q, members *m, size_t shown, group_out *o)
{
    o->alts = xcalloc(m->n, sizeof *o->alts);
    for (size_t i = 0; i < m->n; i++) {
        if (i == shown || !is_visible(q, m->items[i].doc_id))
            continue;
        search_alt *a = &o->alts[o->n_alts++];
        snprintf(a->lang, sizeof a->lang, "%s", m->items[i].label);
        snprintf(a->docid, sizeof a->docid, "%s", m->items[i].docid);
        a->path = m->items[i].path;
        m->items[i].path = NULL;
    }
    if (o->n_alts > 1)
        qsort(o->alts, o->n_alts, sizeof *o->alts, cmp_alt);
}

static trove_err stmts_prepare(store *st, const group_prefs *p, stmts *q)
{
    memset(q, 0, sizeof *q);
    q->key = store_stmt_get(st, "SELECT collection_id, tkey FROM docs WHERE id = ?");
    q->copies = store_stmt_get(st, "SELECT id, lang, path, docid FROM docs"
                                   " WHERE collection_id = ? AND tkey = ? ORDER BY id");
    q->one = store_stmt_get(st, "SELECT lang, path, docid FROM docs WHERE id = ?");
    if (p->filter_sql && *p->filter_sql) {
        tbuf sql = {0};
        tbuf_printf(&sql, "SELECT 1 FROM docs d WHERE d.id = ?%s", p->filter_sql);
        q->allowed = store_stmt_get(st, tbuf_cstr(&sql));
        tbuf_free(&sql);
        for (size_t i = 0; q->allowed && i < p->n_binds; i++)
            sqlite3_bind_text(q->allowed, 2 + (int)i, p->binds[i], -1, SQLITE_STATIC);
        if (!q->allowed)
            return store_fail(st, "filtering translations");
    }
    if (p->hide_sql && *p->hide_sql) {
        tbuf sql = {0};
        tbuf_printf(&sql, "SELECT 1 FROM docs d WHERE d.id = ?%s", p->hide_sql);
        q->visible = store_stmt_get(st, tbuf_cstr(&sql));
        tbuf_free(&sql);
        for (size_t i = 0; q->visible && i < p->n_hide_binds; i++)
            sqlite3_bind_text(q->visible, 2 + (int)i, p->hide_binds[i], -1, SQLITE_STATIC);
        if (!q->visible)
            return store_fail(st, "filtering translations");
    }
    if (!q->key || !q->copies || !q->one)
        return store_fail(st, "reading translations");
    return TROVE_OK;
}

static void stmts_put(store *st, stmts *q)
{
    sqlite3_stmt *all[] = {q->key, q->copies, q->one, q->allowed, q->visible};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        if (all[i]) {
            sqlite3_clear_bindings(all[i]);
            store_stmt_put(st, all[i]);
        }
}

int group_possible(store *st)
{
    /* group_depth_factor's statement (cached), and the languages parsed
     * in C: no json_each to compile */
    sqlite3_stmt *s = store_stmt_get(st, "SELECT value FROM meta WHERE key = 'copies_per_tkey'");
    int possible = 1;
    if (s) {
        if (sqlite3_step(s) == SQLITE_ROW && sqlite3_column_type(s, 0) != SQLITE_NULL) {
            double copies = sqlite3_column_double(s, 0);
            langpref_count *vc;
            size_t n;
            /* an unreadable or broken lang_counts: possible */
            if (langpref_vault_counts(st, &vc, &n) >= 0)
                possible = copies > 1.0 || n > 1;
            langpref_counts_free(vc, n);
        }
        store_stmt_put(st, s);
    }
    return possible;
}

size_t group_depth_factor(store *st)
{
    sqlite3_stmt *s = store_stmt_get(st, "SELECT value FROM meta WHERE key = 'copies_per_tkey'");
    double copies = 1;
    if (s) {
        if (sqlite3_step(s) == SQLITE_ROW)
            copies = sqlite3_column_double(s, 0);
        store_stmt_put(st, s);
    }
    if (!(copies > 1))
        return 1;
    return copies >= GROUP_DEPTH_MAX ? GROUP_DEPTH_MAX : (size_t)ceil(copies);
}

trove_err group_collapse(store *st, const group_in *in, size_t n, size_t limit,
                         const group_prefs *p, group_out **out, size_t *n_out)
{
    *out = xcalloc(n ? n : 1, sizeof **out);
    *n_out = 0;
    size_t *parent = xmalloc((n ? n : 1) * sizeof *parent);
    unsigned char *used = xcalloc(n ? n : 1, 1);
    for (size_t i = 0; i < n; i++)
        parent[i] = i;
    id_index ix;
    id_index_build(&ix, in, n);
    stmts q;
    trove_err rc = stmts_prepare(st, p, &q);
    /* Names are compared among the candidates that can become results. */
    if (rc == TROVE_OK)
        rc = join_alias_pairs(st, in, n < GROUP_ALIAS_CANDIDATES ? n : GROUP_ALIAS_CANDIDATES,
                              parent);
    members m = {0};
    for (size_t i = 0; rc == TROVE_OK && i < n && (!limit || *n_out < limit); i++) {
        if (used[i])
            continue;
        members_reset(&m);
        add_note(&q, &m, in[i].doc_id, i);
        add_key_copies(&q, &ix, in[i].doc_id, &m);
        for (size_t j = i + 1; j < n; j++)
            if (!used[j] && uf_find(parent, j) == uf_find(parent, i) &&
                !members_has(&m, in[j].doc_id))
                add_note(&q, &m, in[j].doc_id, j);
        group_out *o = &(*out)[(*n_out)++];
        o->from = i;
        o->shown = i;
        o->shown_doc = in[i].doc_id;
        for (size_t k = 0; k < m.n; k++)
            if (m.items[k].cand != GROUP_NOT_CANDIDATE)
                used[m.items[k].cand] = 1;
        if (m.n > 1) {
            size_t shown = pick_shown(&q, &m, p);
            o->shown = m.items[shown].cand;
            o->shown_doc = m.items[shown].doc_id;
            take_alts(&q, &m, shown, o);
        }
    }
    members_reset(&m);
    free(m.items);
    stmts_put(st, &q);
    id_index_free(&ix);
    free(used);
    free(parent);
    if (rc) {
        group_out_free(*out, *n_out);
        *out = NULL;
        *n_out = 0;
    }
    return rc;
}

void group_out_free(group_out *o, size_t n)
{
    for (size_t i = 0; o && i < n; i++) {
        for (size_t k = 0; k < o[i].n_alts; k++)
            free(o[i].alts[k].path);
        free(o[i].alts);
    }
    free(o);
}
