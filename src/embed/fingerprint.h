/* fingerprint — a stable identity for what a model computes, for
 * embed_info.fingerprint. Internal to src/embed/: the rest of trove reads
 * the string through embed/embed.h.
 *
 * A model file is identified by its size and an XXH3-128 hash of sampled
 * content (the first and last 64 KiB and 64 evenly spaced 4 KiB windows;
 * the whole file when it is under 1 MiB), so opening a 300 MB model costs
 * about 0.5 MB of reads, not a full pass, yet a re-quantised, fine-tuned or
 * re-tokenised model (same name, same size or not) gets another identity.
 * Path, mtime and inode are deliberately left out of the value: a copied
 * or re-downloaded file keeps its identity. Parameters that change the
 * vectors (prompts, dim, max_tokens, normalisation) are mixed in by the
 * caller.
 *
 * The finished value is memoised on disk ($XDG_CACHE_HOME/trove/
 * fingerprints/), keyed by everything that went in, files by device,
 * inode, size, mtime and ctime: an open of an unchanged model reads no
 * model bytes. The memo never changes the value (fingerprint.c says why
 * it cannot go stale).
 *
 * Memory: an efp records what is added until efp_finish(), which frees it
 * and returns a string the caller frees. */
#ifndef TROVE_EMBED_FINGERPRINT_H
#define TROVE_EMBED_FINGERPRINT_H

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

typedef struct efp efp;

efp *efp_new(void);
/* Mix in a file's identity (size + sampled content, read at
 * efp_finish()). TROVE_EIO if it cannot be found; the message names it. */
trove_err efp_add_file(efp *f, const char *path);
void efp_add_str(efp *f, const char *s); /* NULL hashes like "" plus a mark */
void efp_add_i64(efp *f, int64_t v);
/* *out = "<kind>:<dim>:<32 hex digits>", xmalloc'd; frees f. TROVE_EIO
 * (naming the file) when a file cannot be read. */
trove_err efp_finish(efp *f, const char *kind, int64_t dim, char **out);
void efp_free(efp *f); /* without finishing; NULL is fine */

#endif
