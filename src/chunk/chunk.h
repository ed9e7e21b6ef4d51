/* chunk — split a parsed note into heading-aware, overlapping chunks.
 *
 * A chunk is a byte range of the raw file plus the heading path above it.
 * Chunks follow the heading tree: a section small enough becomes one chunk
 * (small neighbouring sections under the same parent may be merged up to the
 * target), a large section is split at paragraph, then line, then sentence
 * boundaries, with a small overlap between consecutive pieces of the same
 * section. A split never falls inside a code block (md_doc.code). The
 * frontmatter is never part of a chunk. A note with an empty body yields no
 * chunks. The caller owns the returned array; chunk_list_free() releases it. */
#ifndef TROVE_CHUNK_H
#define TROVE_CHUNK_H

#include <stddef.h>

#include "md/md.h"

typedef struct chunk_opts {
    int target_tokens;   /* default 400 */
    int overlap_tokens;  /* default 48 */
} chunk_opts;

#define CHUNK_OPTS_DEFAULT ((chunk_opts){400, 48})

typedef struct chunk {
    size_t start_byte, end_byte; /* [start, end) in the raw file */
    int line_start, line_end;    /* 1-based inclusive lines of the raw file */
    char **heading_path;         /* texts of the enclosing headings, outermost
                                    first (H1 > H2 > ...); may be empty. For
                                    merged sections: the deepest heading
                                    enclosing all of them */
    size_t n_heading_path;
    int tokens;                  /* estimated token count */
} chunk;

typedef struct chunk_list {
    chunk *items;
    size_t n;
} chunk_list;

/* Approximate model tokens in a UTF-8 string: about one per word piece of
 * Latin text (len/4 style) and one per CJK character. */
int chunk_estimate_tokens(const char *s, size_t len);

trove_err chunk_note(const char *src, size_t len, const md_doc *doc,
                     const chunk_opts *opts, chunk_list *out);
void chunk_list_free(chunk_list *list);

#endif
