/* fingerprint — a stable identity for what a model computes, for
 * embed_info.fingerprint. Internal to src/embed/: the rest of trove reads
 * the string through embed/embed.h.
 *
 * A model file is identified by its size and an XXH3-128 hash of sampled
 * content (the first and last 64 KiB and 64 evenly spaced 4 KiB windows;
 * the whole file when it is under 1 MiB), so opening a 300 MB model costs
 * about 0.5 MB of reads, not a full pass, yet a re-quantised, fine-tuned or
 * re-tokenised model (same name, same size or not) gets another identity.
 * Path, mtime and inode are deliberately left out: a copied or re-downloaded
 * file keeps its identity. Parameters that change the vectors (prompts,
 * dim, max_tokens, normalisation) are mixed in by the caller.
 *
 * Memory: an efp owns its hash state until efp_finish(), which returns a
 * string the caller frees. */
#ifndef TROVE_EMBED_FINGERPRINT_H
#define TROVE_EMBED_FINGERPRINT_H

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

typedef struct efp efp;

efp *efp_new(void);
/* Mix in a file's identity (size + sampled content). TROVE_EIO if it
 * cannot be read; the message names the file. */
trove_err efp_add_file(efp *f, const char *path);
/* Mix in a file held in memory (same sampling as efp_add_file). */
void efp_add_mem(efp *f, const void *data, size_t size);
void efp_add_str(efp *f, const char *s); /* NULL hashes like "" plus a mark */
void efp_add_i64(efp *f, int64_t v);
/* "<kind>:<dim>:<32 hex digits>", xmalloc'd; frees f. */
char *efp_finish(efp *f, const char *kind, int64_t dim);
void efp_free(efp *f); /* without finishing; NULL is fine */

#endif
