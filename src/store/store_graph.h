/* store_graph — the reads of the link graph: one note by its key, its
 * links in and out, the names it goes by (trove links, similar).
 *
 * Rows handed out are owned by the caller and freed with the matching
 * *_free(); every step is checked (store_each), so a damaged index is
 * TROVE_ECORRUPT, never an empty list. */
#ifndef TROVE_STORE_GRAPH_H
#define TROVE_STORE_GRAPH_H

#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

/* The note `path` of `collection`; TROVE_ENOENT (with a sentence) when the
 * index has none. Release with store_doc_clear(). */
trove_err store_doc_find(store *st, const char *collection, const char *path, store_doc *out);

/* One link of the `links` table seen from a note: the other end (doc_id 0
 * and NULL strings when the link resolves to no note) and where it is
 * written (line: in the linking note). */
typedef struct store_link_row {
    int kind;             /* md_link_kind */
    char *target;         /* as written, without #fragment or |display */
    char *fragment;       /* NULL when none */
    int line;
    int64_t doc_id;       /* the other note; 0: unresolved */
    char docid[9];
    char *collection, *root, *path, *title;
} store_link_row;

/* Links into doc_id from other notes (the other end: the linking note),
 * by linking note's collection, path and line. */
trove_err store_links_to(store *st, int64_t doc_id, store_link_row **out, size_t *n);
/* Links out of doc_id, in line order (the other end: the target note,
 * doc_id 0 when unresolved). Links to itself are included. */
trove_err store_links_from(store *st, int64_t doc_id, store_link_row **out, size_t *n);
void store_link_rows_free(store_link_row *r, size_t n);

/* The names a note goes by: its title, its aliases (as written), its file
 * name without ".md"; case-insensitive duplicates dropped, empty ones
 * skipped. Free with store_names_free. */
trove_err store_doc_names(store *st, int64_t doc_id, char ***out, size_t *n);
void store_names_free(char **names, size_t n);

/* The notes that are doc_id or a translation of it (same collection and
 * translation key, docs.tkey): their ids, doc_id first. */
trove_err store_doc_translations(store *st, int64_t doc_id, int64_t **ids, size_t *n);

#endif
