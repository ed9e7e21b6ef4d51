/* store_pub — the reads `trove publish` needs (store_pub.c): every note
 * with its chunks' text, names, tags and fields as one document source, and
 * from the undo log, which note ids the snapshots after a given one changed
 * and which chunk ids those notes had before (for the deletes an
 * incremental publish sends). No diffing: only the rows the snapshots
 * recorded are read, so the cost follows the change.
 *
 * Strings and arrays handed out are the caller's, freed with the matching
 * *_free()/ *_clear(). Run inside store_read_begin()/store_read_end() when
 * several calls must see one snapshot. */
#ifndef TROVE_STORE_PUB_H
#define TROVE_STORE_PUB_H

#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

typedef struct store_pub_chunk {
    int64_t id;
    int seq;
    char *heading;            /* heading path, parts joined by U+001F ("" none) */
    char *body;               /* the chunk's indexed text */
    int64_t start_byte, end_byte;
    int line_start, line_end;
} store_pub_chunk;

typedef struct store_pub_doc {
    store_doc doc;            /* the note's row, as every other reader has it */
    char *lang;
    char *meta;               /* frontmatter JSON (docs.meta), "" none */
    char *aliases;            /* one per line, as written ("" none) */
    char **tags;
    size_t n_tags;
    store_pub_chunk *chunks;  /* in seq order */
    size_t n_chunks;
} store_pub_doc;

/* At most `limit` note ids greater than `after`, ascending. */
trove_err store_pub_doc_ids(store *st, int64_t after, size_t limit, int64_t **ids, size_t *n);
/* Note doc_id as it is now; *found 0 (and out zeroed) when it is gone. */
trove_err store_pub_doc_load(store *st, int64_t doc_id, store_pub_doc *out, int *found);
void store_pub_doc_clear(store_pub_doc *d);

/* What the snapshots after `since` changed. complete 0: the undo log
 * cannot say exactly (since is not a kept snapshot any more — merged or
 * pruned —, is newer than the current one, or a collection was added,
 * renamed or removed since, which changes docids without note records):
 * publish everything instead. Otherwise doc_ids are the note ids recorded
 * (created or changed, whether they exist now or not) and before_ids the
 * chunk ids "DOCID-SEQ" those notes had as of `since` (their earliest
 * before-image after it). */
typedef struct store_pub_changes {
    int complete;
    int64_t *doc_ids;
    size_t n_docs;
    char **before_ids;
    size_t n_before;
} store_pub_changes;
trove_err store_pub_changes_since(store *st, int64_t since, store_pub_changes *out);
void store_pub_changes_clear(store_pub_changes *c);

#endif
