/* group — translations of one note as one search result.
 *
 * Notes of one collection that share a translation key (docs.tkey, see
 * text/transl.h) and are written in at least two different languages are
 * copies of one note. Given the fused candidates best first, group_collapse
 * keeps one result per group, in the place of the group's best copy, and
 * shows the copy in the reader's language: the query's language, else the
 * first of the preferred languages (config `languages:`) the group has; a
 * copy that no channel found is shown too when it passes the filters. The
 * other copies are listed as the result's alternatives. Candidates without
 * translations pass through unchanged, so a vault with none is unaffected.
 * A second pass (group_alias_pairs) joins copies that name each other:
 * a note whose alias is the title of a candidate in another language.
 *
 * search/ owns the SQL here (read inside the caller's read transaction).
 * The caller owns the group_out array and frees it with group_out_free();
 * alternatives it takes over (setting alts to NULL) are its own. */
#ifndef TROVE_GROUP_H
#define TROVE_GROUP_H

#include <stddef.h>
#include <stdint.h>

#include "search/search.h"
#include "store/store.h"

typedef struct group_in {
    int64_t doc_id;
    int lang;            /* LANG_* detected, LANG_UND unknown */
} group_in;

#define GROUP_NOT_CANDIDATE ((size_t)-1)

typedef struct group_out {
    size_t from;         /* the candidate whose place (and score) the result takes */
    size_t shown;        /* the candidate shown, GROUP_NOT_CANDIDATE: shown_doc */
    int64_t shown_doc;   /* the note shown */
    search_alt *alts;    /* the group's other copies, by language */
    size_t n_alts;
} group_out;

/* What the reader reads: the query's language first, then the preferred
 * ones (normalised codes); a filter SQL tail on `d` with its binds, for a
 * copy that is not a candidate. */
typedef struct group_prefs {
    int query_lang;
    const char *const *langs;
    size_t n_langs;
    const char *filter_sql;
    const char *const *binds;
    size_t n_binds;
    /* the agent boundary's tail alone: copies it hides are not listed */
    const char *hide_sql;
    const char *const *hide_binds;
    size_t n_hide_binds;
} group_prefs;

/* How many times deeper the channels should look so that `limit` groups
 * remain after collapsing: the index's average copies per translation key
 * (meta.copies_per_tkey, rounded up), 1 to GROUP_DEPTH_MAX. */
#define GROUP_DEPTH_MAX 8
size_t group_depth_factor(store *st);

/* 0 when the index cannot hold translations: no translation key has two
 * notes and the notes are in one language at most (meta.copies_per_tkey,
 * meta.lang_counts); search then skips the collapse. 1 otherwise, and
 * when the index does not say. */
int group_possible(store *st);

/* Results for candidates in[0..n) (best first), at most `limit` of them
 * (0: all). */
trove_err group_collapse(store *st, const group_in *in, size_t n, size_t limit,
                         const group_prefs *p, group_out **out, size_t *n_out);
void group_out_free(group_out *o, size_t n);

#endif
