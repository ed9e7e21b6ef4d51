/* lang_pref — see lang_pref.h. */
#include "search/lang_pref.h"

#include <jansson.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "util/err.h"
#include "util/mem.h"
#include "util/str.h"

#include "text/lang.h"

int langpref_vault_counts(store *st, langpref_count **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    char *v = NULL;
    if (store_meta_get(st, "lang_counts", &v) != TROVE_OK) {
        trove_errclear();
        return -1;
    }
    json_t *j = v ? json_loads(v, 0, NULL) : NULL;
    int absent = !v;
    free(v);
    if (!json_is_object(j)) {
        json_decref(j);
        return absent ? 0 : -1;
    }
    *out = xcalloc(json_object_size(j) + 1, sizeof **out);
    const char *k;
    json_t *val;
    json_object_foreach(j, k, val) {
        langpref_count *c = &(*out)[(*n)++];
        c->code = xstrdup(k);
        /* as sqlite3_column_int64 of json_each's value: integers, reals
         * truncated, anything else 0 */
        c->notes = json_is_integer(val) ? (long long)json_integer_value(val)
                   : json_is_real(val)  ? (long long)json_real_value(val)
                                        : 0;
    }
    json_decref(j);
    return 1;
}

void langpref_counts_free(langpref_count *c, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(c[i].code);
    free(c);
}

/* Candidates whose votes decide between the languages a query may be in. */
#define LANG_VOTERS 20

static int only_one(lang_set set)
{
    for (int l = 1; l < LANG_COUNT; l++)
        if (set == (lang_set)1 << l)
            return l;
    return LANG_UND;
}

static int in_set(lang_set set, int l)
{
    return l > LANG_UND && l < LANG_COUNT && (set & ((lang_set)1 << l));
}

/* The LANG_* of a preferred code ("pt-BR" is pt). */
static int preferred_lang(const char *code)
{
    char primary[4] = {0};
    size_t len = strcspn(code, "-");
    memcpy(primary, code, len < 3 ? len : 3);
    return lang_from_code(primary);
}

/* The reader's languages among those the query may be in, or all of them
 * when none is. */
static lang_set narrow_to_preferred(lang_set set, const char *const *prefer, size_t n_prefer)
{
    lang_set mine = 0;
    for (size_t i = 0; i < n_prefer; i++) {
        int l = preferred_lang(prefer[i]);
        if (in_set(set, l))
            mine |= (lang_set)1 << l;
    }
    return mine ? mine : set;
}

/* The language of `tied` the reader prefers first, else the one with the
 * most notes in the vault (ties: the first in lang.h's order). */
static int vault_majority(store *st, lang_set tied, const char *const *prefer, size_t n_prefer)
{
    for (size_t i = 0; i < n_prefer; i++) {
        int l = preferred_lang(prefer[i]);
        if (in_set(tied, l))
            return l;
    }
    long long count[LANG_COUNT] = {0};
    langpref_count *vc;
    size_t nvc;
    langpref_vault_counts(st, &vc, &nvc);
    for (size_t i = 0; i < nvc; i++) {
        int l = lang_from_code(vc[i].code);
        if (in_set(tied, l))
            count[l] = vc[i].notes;
    }
    langpref_counts_free(vc, nvc);
    int best = LANG_UND;
    for (int l = 1; l < LANG_COUNT; l++)
        if (in_set(tied, l) && (best == LANG_UND || count[l] > count[best]))
            best = l;
    return best;
}

/* Whether one line of `names` (title, aliases one per line, file name),
 * folded, is `folded`. */
static int names_equal(const char *names, const char *folded)
{
    int equal = 0;
    for (const char *p = names ? names : ""; *p && !equal;) {
        size_t len = strcspn(p, "\n");
        char *one = xstrndup(p, len);
        char *f = str_fold(one);
        equal = strcmp(f, folded) == 0;
        free(f);
        free(one);
        p += len;
        if (*p == '\n')
            p++;
    }
    return equal;
}

/* The languages (of `set`) of the candidates named exactly as the query:
 * title, an alias or the file name, folded. */
static lang_set exact_name_languages(store *st, const char *query, const langpref_vote *best,
                                     size_t n, lang_set set)
{
    sqlite3_stmt *s = NULL;
    lang_set named = 0;
    char *folded = NULL;
    for (size_t i = 0; i < n; i++) {
        if (!best[i].title_hit || !in_set(set, best[i].lang) || in_set(named, best[i].lang))
            continue;
        if (!s && !(s = store_stmt_get(st, "SELECT title, aliases, filename FROM titles_fts"
                                           " WHERE rowid = ?")))
            break;
        if (!folded)
            folded = str_fold(query);
        sqlite3_reset(s);
        sqlite3_bind_int64(s, 1, best[i].doc_id);
        if (sqlite3_step(s) != SQLITE_ROW)
            continue;
        for (int col = 0; col < 3; col++)
            if (names_equal((const char *)sqlite3_column_text(s, col), folded)) {
                named |= (lang_set)1 << best[i].lang;
                break;
            }
    }
    if (s)
        store_stmt_put(st, s);
    free(folded);
    return named;
}

int langpref_query(store *st, const char *query, const langpref_vote *best, size_t n,
                   const char *const *prefer, size_t n_prefer)
{
    lang_set set = lang_candidates(query, strlen(query));
    if (!set)
        return LANG_UND;
    set = narrow_to_preferred(set, prefer, n_prefer);
    if (only_one(set))
        return only_one(set);
    lang_set named = exact_name_languages(st, query, best, n, set);
    if (named)
        set = named;
    if (only_one(set))
        return only_one(set);
    double votes[LANG_COUNT] = {0};
    for (size_t i = 0; i < n && i < LANG_VOTERS; i++)
        if (in_set(set, best[i].lang))
            votes[best[i].lang] += best[i].score;
    int top = LANG_UND;
    for (int l = 1; l < LANG_COUNT; l++)
        if (votes[l] > votes[top])
            top = l;
    if (top == LANG_UND)
        return vault_majority(st, set, prefer, n_prefer);
    lang_set tied = 0;
    for (int l = 1; l < LANG_COUNT; l++)
        if (votes[l] > 0 && votes[l] * LANGPREF_CLEAR_LEAD >= votes[top])
            tied |= (lang_set)1 << l;
    return only_one(tied) ? top : vault_majority(st, tied, prefer, n_prefer);
}
