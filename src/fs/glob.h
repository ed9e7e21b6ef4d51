/* glob — compiled glob patterns for the walker (private to src/fs/).
 *
 * A pattern is compiled once into a tiny NFA program and then run against
 * many paths with a Pike-style simulation: time is O(len(path) * len(prog))
 * and memory O(len(prog)) whatever the pattern, so adversarial patterns such
 * as "*a*a*a*a*b" or deeply nested braces cannot blow up.
 *
 * Syntax: '*' and '?' never match '/'; "**" forming a whole segment matches
 * any number of segments (zero included: "**\/x" matches "x"); [abc], [a-z],
 * [!x] / [^x] classes (never matching '/'); {a,b} alternatives (nestable,
 * not in GLOB_NOBRACE mode, which gitignore uses); '\' escapes the next
 * byte. Unbalanced '[' or '{' are literal.
 *
 * tglob_compile() returns an owned object freed by tglob_free(). A compiled
 * glob holds its own scratch space, so one object must not be matched from
 * two threads at once. */
#ifndef TROVE_FS_GLOB_H
#define TROVE_FS_GLOB_H

#include <stddef.h>

/* GLOB_NOFAST forces the NFA even for the shapes matched by plain compares
 * (a literal; a star then a literal; a globstar segment then a literal,
 * with or without a star before it);
 * tests use it to check that the two agree. */
enum { GLOB_NOBRACE = 1, GLOB_NOFAST = 2 };

typedef struct tglob tglob;

tglob *tglob_compile(const char *pat, size_t len, int flags);
int tglob_match(tglob *g, const char *s, size_t len);
void tglob_free(tglob *g);
/* The byte every string the pattern matches ends with, or -1 when that is
 * not one byte (a wildcard, a class, a brace or an escape at the end): a
 * caller with many patterns refuses a path by its last byte at once. */
int tglob_last_byte(const tglob *g);

#endif
