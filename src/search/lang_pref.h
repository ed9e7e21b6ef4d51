/* lang_pref — the language a query is in, for the query-language
 * preference and for which copy of a translated note to show.
 *
 * Evidence, strongest first: the query's own script and function words
 * (lang_candidates: "how do I" is English, Hangul is Korean); when those
 * leave several languages (a single word, a note name, "PDF"), the reader's
 * preferred languages among them (config `languages:`); then the languages
 * of the notes named exactly as the query ("CSV" is the name of the German
 * copy of "Import CSV files"); then the languages
 * of the notes the query's words come from (the best matches, weighted by
 * their fused scores), when one of them clearly leads; when none does (a
 * name every translation shares: "Canvas"), the language most of the vault
 * is written in, among the near-tied ones; equal counts go to the first in
 * lang.h's order.
 *
 * Reads meta.lang_counts (notes per language, kept by every update) and
 * the candidates' names in the caller's read transaction; allocates
 * nothing the caller keeps. */
#ifndef TROVE_LANG_PREF_H
#define TROVE_LANG_PREF_H

#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

typedef struct langpref_vote {
    double score;   /* fused score */
    int lang;       /* LANG_* of the note, LANG_UND unknown */
    int title_hit;  /* the title channel found it (a name to compare) */
    int64_t doc_id;
} langpref_vote;

/* A leader must have this many times the votes of the next language to
 * decide alone. */
#define LANGPREF_CLEAR_LEAD 1.5

/* One entry of meta.lang_counts: a language code and its notes. */
typedef struct langpref_count {
    char *code;
    long long notes;
} langpref_count;

/* meta.lang_counts ({"en": 173, ...}, notes per language, kept by every
 * update) read with the store's cached metadata statement and parsed in C
 * (a json_each statement cost a cold search ~80 k instructions to compile
 * at each of its three readers). 1 with *out (the object's entries in
 * order; free with langpref_counts_free) and *n; 0 when the index has no
 * such row (*n 0); -1 when it cannot be read or is not a JSON object (*n
 * 0, the error detail cleared: each reader falls back as it says). */
int langpref_vault_counts(store *st, langpref_count **out, size_t *n);
void langpref_counts_free(langpref_count *c, size_t n);

/* The query's language (LANG_*), LANG_UND when nothing decides. best[0..n)
 * are the candidates best first; prefer (normalised codes) the reader's. */
int langpref_query(store *st, const char *query, const langpref_vote *best, size_t n,
                   const char *const *prefer, size_t n_prefer);

#endif
