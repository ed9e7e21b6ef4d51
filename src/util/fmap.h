/* fmap — a whole file mapped read-only: the one open/fstat/mmap preamble of
 * every module that reads a file in place (the Chinese and Chinese-English
 * dictionaries, GGUF and safetensors models, the tokenizer cache).
 *
 * fmap_open() checks only that the path is a regular file it can map; what
 * the bytes mean (magic, sizes, sections, checksums) stays the caller's
 * check, with the caller's message.
 *
 * Ownership: a successful fmap_open() fills `out`, which owns the mapping
 * until fmap_close(). An empty file is mapped as data NULL, len 0 (mmap
 * refuses length 0); fmap_close() of it, or of a zeroed fmap, is a no-op. */
#ifndef TROVE_FMAP_H
#define TROVE_FMAP_H

#include <stddef.h>

#include "util/err.h"

typedef struct fmap {
    const unsigned char *data;
    size_t len;
} fmap;

/* Map `path` read-only (private, the descriptor closed at once). `what`
 * names the file in messages ("Chinese dictionary PATH: not a regular
 * file"); NULL: the path alone. Errors: TROVE_ENOENT (no such file),
 * TROVE_EACCES (not readable), TROVE_EIO (not a regular file, fstat or
 * mmap failed). */
trove_err fmap_open(const char *path, const char *what, fmap *out);
void fmap_close(fmap *m);

#endif
