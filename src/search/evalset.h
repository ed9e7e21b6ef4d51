/* evalset — a test set made from the vault itself (`trove eval`).
 *
 * Queries with a known answer, read from the index (nothing is written):
 *   title        a note's title                          → that note
 *   alias        each of its aliases                     → that note
 *   link         the line a wikilink or markdown link stands on, the link
 *                replaced by its anchor text (display text, else target)
 *                                                        → the linked note
 *   description  frontmatter `description:`              → that note (the
 *                frontmatter is never in the indexed text, so the field is
 *                hidden from the keyword and vector channels by construction)
 *   heading      a heading below the note's title        → its section (the
 *                note, with a result anchored in the section's lines)
 * Each kind keeps at most `per_kind` queries, spread evenly over the
 * candidates in index order (deterministic). Items are owned by the set
 * (evalset_free). */
#ifndef TROVE_EVALSET_H
#define TROVE_EVALSET_H

#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

typedef enum evalset_kind {
    EVAL_TITLE, EVAL_ALIAS, EVAL_LINK, EVAL_DESCRIPTION, EVAL_HEADING, EVAL_N_KINDS
} evalset_kind;

extern const char *const evalset_kind_names[EVAL_N_KINDS];

typedef struct evalset_item {
    evalset_kind kind;
    char *query;
    int64_t doc_id;              /* the answer */
    char docid[9];               /* its docid (a result's also_in names copies by docid) */
    int line_start, line_end;    /* heading: the section's lines; else 0 */
} evalset_item;

typedef struct evalset {
    evalset_item *items;
    size_t n;
    size_t per_kind[EVAL_N_KINDS];   /* kept */
    size_t found[EVAL_N_KINDS];      /* candidates before sampling */
} evalset;

/* collections: only notes of these (names; none: all). */
trove_err evalset_build(store *st, size_t per_kind, const char *const *collections,
                        size_t n_collections, evalset *out);
void evalset_free(evalset *s);

/* The line with its [[links]] and [text](links) replaced by their anchor
 * text (display, else target without #fragment); caller frees. */
char *evalset_unlink_line(const char *line);

#endif
