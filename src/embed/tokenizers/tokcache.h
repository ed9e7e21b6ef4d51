/* tokcache — compiled tokenizers cached on disk, so that a cold
 * `trove search` with a static model loads ready tables (the static
 * backend stores tokjson's binary form) instead of parsing a
 * multi-megabyte tokenizer.json (jansson needs 14 ms for BERT's 30k
 * WordPiece vocabulary, 300-800 ms for 150k-260k BPE vocabularies).
 *
 * A cache entry lives in $XDG_CACHE_HOME/trove/tokenizers/ (else
 * ~/.cache/trove/tokenizers/), named by a hash of the source's real path
 * and a kind tag, and records the source's identity (size, mtime, inode,
 * device), the kind, a format version and a hash of its payload's ends
 * (tokcache.c says why not all of it). Any
 * mismatch (source edited or replaced, older format, torn or corrupt
 * file) means "no entry": the caller parses the source and stores a new
 * one. Writes go to a temporary name and are renamed, and failing to write
 * (read-only home, full disk) only costs the speed-up.
 *
 * Memory: a tokcache handle owns the mapping the payload points into;
 * tokcache_release() unmaps it. The mapping is shared with the page cache
 * (read-only, MAP_PRIVATE never written), so a payload used in place costs
 * no private memory.
 *
 * Internal to src/embed/: the rest of trove reaches the engine only through
 * embed/embed.h (the engine's unit tests and fuzz targets may include it). */
#ifndef TROVE_TOKCACHE_H
#define TROVE_TOKCACHE_H

#include <stddef.h>
#include <stdint.h>

typedef struct tokcache tokcache;

/* The cached payload for (src, kind, version), 8-byte aligned, or NULL
 * when there is no valid entry. */
tokcache *tokcache_load(const char *src, const char *kind, uint32_t version, const void **payload,
                        size_t *len);
void tokcache_release(tokcache *c); /* NULL is fine */
/* The same, shaped as tokjson_borrow()'s release: a tokjson that uses the
 * payload in place releases the entry when it is freed. */
void tokcache_release_cb(void *c);

/* Store a payload for (src, kind, version); best effort, silent. */
void tokcache_store(const char *src, const char *kind, uint32_t version, const void *payload,
                    size_t len);

/* Where entries go (xmalloc'd); for docs and tests. */
char *tokcache_dir(void);

#endif
