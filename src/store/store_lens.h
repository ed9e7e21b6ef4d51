/* store_lens — the lengths in tokens of titles_fts rows, kept by a
 * resident process's read-only store across read transactions.
 *
 * The title channel ranks notes' names by BM25 (store_rank_rows over
 * titles_fts), which needs each matching row's length: the note map keeps
 * chunks' lengths (store_nmap kind 7), but a title's length was asked of
 * FTS5 (xColumnSize: a read of titles_fts_docsize, ~3,600 instructions)
 * for every matching title of every search, ~190 per search of the tldr
 * pages. A store asked to keep them (store_lens_keep: a daemon's, MCP's,
 * serve's searches) keeps each length read, by the title's row id, while
 * its connection's data_version stays the one they were read at (a
 * read-only connection's data_version changes exactly when another
 * connection commits); a row's length is a function of its text, so a
 * kept length is the one FTS5 would give. Not a cache of answers: the
 * rows matched, their frequencies and scores are computed as before.
 * The lengths belong to the store (freed by store_lens_free at its close). */
#ifndef TROVE_STORE_LENS_H
#define TROVE_STORE_LENS_H

#include <sqlite3.h>

#include "store/store.h"

typedef struct store_lens store_lens;

/* Keep lengths on st from now on (nothing on a store that can write). */
void store_lens_keep(store *st);
/* st's kept lengths, emptied first when another connection committed
 * since they were read; NULL when st keeps none (or data_version cannot
 * be read). Call inside the read transaction the lengths are used in. */
store_lens *store_lens_current(store *st);
/* The length (all columns) of the row fts is on, as api->xColumnSize(fts,
 * -1) gives it, kept for the next ask; SQLITE_OK or its error. */
int store_lens_get(store_lens *k, const Fts5ExtensionApi *api, Fts5Context *fts, double *d);
void store_lens_free(store *st);

#endif
