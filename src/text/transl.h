/* transl — which notes of a vault are translations of one another.
 *
 * A vault that ships each note in several languages marks the copies of one
 * note in one of two ways, and this module turns either into a key that the
 * copies share (stored per note as docs.tkey; search/group.h groups on it):
 *
 *   - the same `permalink:` frontmatter value (Obsidian Publish, Hugo,
 *     Jekyll): key "p:" + the permalink without its outer slashes;
 *   - the same relative path under sibling language folders: `en/A/b.md`
 *     and `de/A/b.md`, `pages/common/x.md` and `pages.de/common/x.md`
 *     (tldr), `README.md` and `README.ja.md`: key "f:" + the path with its
 *     first language marker taken out (`A/b.md`, `pages/common/x.md`,
 *     `README.md`). A path without a marker keys as itself, so the copy in
 *     the default folder (`pages/`) meets its translations.
 *
 * A marker is a path component that is an ISO 639-1 code, optionally with
 * a region or script (`en`, `pt-BR`, `zh_TW`, `zh-Hant`), or a component or
 * file name ending in "." + such a code (`pages.ko`, `README.ja.md`). A key
 * is only a candidate: two notes that share one are taken for translations
 * by search only when their languages differ (an `it/` folder of IT notes
 * beside an `ml/` one shares keys but not languages).
 *
 * Pure functions; the caller frees what transl_key() returns. */
#ifndef TROVE_TRANSL_H
#define TROVE_TRANSL_H

#include <stddef.h>

/* The translation key of a note at `path` (relative to its collection)
 * with `permalink` (NULL or "" when none). Never NULL for a non-empty path;
 * NULL for an empty one. */
char *transl_key(const char *path, const char *permalink);

/* The language code the path's first marker names, normalised ("pt-BR",
 * "zh-TW", "de"), into out (at least 16 bytes); returns its length, 0 (and
 * out = "") when the path has no marker. */
size_t transl_path_lang(const char *path, char *out, size_t cap);
/* 1 when the table the code lookups use holds exactly the ISO 639-1 list
 * (tests). */
int transl_iso639_1_check(void);

/* Whether `code` is a language code as --lang and `languages:` accept
 * (ISO 639-1, optional region or script: "de", "pt-BR", "zh_TW"), and its
 * normalised form into out (cap >= 16). */
int transl_code_normalise(const char *code, char *out, size_t cap);

/* Whether a note whose detected language is `lang_code` ("" unknown) at
 * `path` is in the language `want` (normalised, "pt" also matches "pt-BR"). */
int transl_lang_matches(const char *lang_code, const char *path, const char *want);

#endif
