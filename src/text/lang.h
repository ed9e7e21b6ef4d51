/* lang — guess the natural language of a note or a query.
 *
 * Two kinds of evidence, cheapest first: the writing system (Hangul is
 * Korean; Han with kana is Japanese, Han alone Chinese; Greek, Hebrew and
 * Thai have one language each here), then, for Latin, Cyrillic, Arabic and
 * Devanagari text, a small profile of the most frequent function words per
 * language ("the", "der", "le", "и", ...) and of letters few languages use
 * (ß, ñ, ł, ы, ...) counted over the words of the text. Text between
 * backticks (inline code and ``` fences) and URLs are skipped, so English
 * identifiers in a German note's code do not vote.
 *
 * Languages are small integers (LANG_UND = 0 is "undetermined") with ISO
 * 639-1 codes; a set of them is a bit mask (bit i = language i). Nothing
 * here allocates on the caller's behalf; the word table is built once,
 * thread-safely, on first use. */
#ifndef TROVE_LANG_H
#define TROVE_LANG_H

#include <stddef.h>
#include <stdint.h>

enum {
    LANG_UND,
    LANG_EN, LANG_DE, LANG_FR, LANG_ES, LANG_IT, LANG_PT, LANG_NL, LANG_PL, LANG_CS,
    LANG_SV, LANG_TR, LANG_ID, LANG_RO,
    LANG_RU, LANG_UK,
    LANG_AR, LANG_FA, LANG_HI,
    LANG_EL, LANG_HE, LANG_TH,
    LANG_ZH, LANG_JA, LANG_KO,
    LANG_DA, LANG_NB,
    LANG_COUNT
};

typedef uint32_t lang_set;   /* bit i set = language i */

/* "en", "de", ...; "" for LANG_UND or an id out of range. */
const char *lang_code(int lang);
/* The id of an ISO 639-1 code, LANG_UND when unknown (or NULL/""). */
int lang_from_code(const char *code);

/* The language of a note's text: a single script language, or the profile
 * with the most hits if no other profile has as many; else LANG_UND. Looks at most at the first 64 KiB. */
int lang_detect(const char *text, size_t len);

/* The languages a short text (a query) may be in, for the caller to narrow
 * down with other evidence: one bit when the script or the function words
 * decide; all the profiles tied with the most hits (at least one); every
 * language of the script when no function word occurs ("tar" could be any
 * Latin-script language); 0 when the text has no letters at all. */
lang_set lang_candidates(const char *text, size_t len);

#endif
