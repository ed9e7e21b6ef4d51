/* mentions — "unlinked mentions" (`trove links`): lines of other notes that
 * name a note (its title, an alias, its file name) without linking it.
 *
 * Candidates come from FTS5 (the name as a phrase in a chunk's body, so
 * case, diacritics and stemming fold as in search); each candidate chunk's
 * lines are then tokenized to find the line where the name's tokens stand
 * together. Notes in `skip` (the note itself, the notes that link it) are
 * left out. One row per (note, line), in collection, path and line order.
 * Rows are owned by the caller (mention_rows_free). */
#ifndef TROVE_MENTIONS_H
#define TROVE_MENTIONS_H

#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

typedef struct mention_row {
    int64_t doc_id;
    char docid[9];
    char *collection, *root, *path, *title;
    char *name;      /* which of the names stands there */
    int line;        /* 1-based line of the file */
    char *text;      /* that line, trimmed */
} mention_row;

trove_err mentions_find(store *st, const char *const *names, size_t n_names, const int64_t *skip,
                        size_t n_skip, mention_row **out, size_t *n);
void mention_rows_free(mention_row *r, size_t n);

#endif
