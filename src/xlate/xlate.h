/* xlate — the query side of the bilingual dictionary channel.
 *
 * xlate_query() turns a query into the words of the other language, from
 * the compiled CC-CEDICT table (xlate/xdict.h):
 *   Chinese words (the segmenter's words, simplified or traditional; no
 *   function words) -> the first English terms of their glosses;
 *   English words (folded, stopwords dropped, stemmed) -> the Chinese
 *   words whose first glosses they are; two neighbouring words are looked
 *   up as a phrase first ("forgetting curve", "spaced repetition"), and a
 *   phrase found stands for both.
 * Each source word gives at most XLATE_PER_WORD translations, and at most
 * XLATE_MAX_WORDS source words are translated (a 1 MB query costs the
 * same as a long sentence). The search runs the result as its own BM25
 * list (search/search.c, channel "translation").
 *
 * The dictionary is process-wide and loaded lazily on the first query that
 * needs it (xlate_dict): $TROVE_XL_DICT, else trove-xl.dict next to the
 * executable, else ../share/trove/ from it. A missing or damaged file is
 * reported once through the warn callback (xlate_set_warn) and the channel
 * is off; nothing else changes.
 *
 * Ownership: an xlate_out owns its strings; free it with xlate_out_free. */
#ifndef TROVE_XLATE_H
#define TROVE_XLATE_H

#include <stddef.h>

#include "util/buf.h"
#include "xlate/xdict.h"

#define XLATE_PER_WORD 2
#define XLATE_TRIES 5      /* candidates looked up in the index per source word */
#define XLATE_DF_RATIO 16  /* a candidate in 1/16 of the chunks of the word's best: dropped */
#define XLATE_RANK_COST 1.0   /* a place down the dictionary's list, in log chunks */
#define XLATE_MAX_WORDS 32

typedef struct xlate_out {
    char *text;       /* the translations joined by spaces ("" when none) */
    char **from;      /* source word of each translation (display) */
    char **to;        /* each translation */
    size_t n;
} xlate_out;

/* The process-wide dictionary, loaded on first call; NULL when it is
 * missing or damaged (warned about once). */
const xdict *xlate_dict(void);

/* Where a missing or damaged dictionary is reported (once per process). */
typedef void (*xlate_warn_fn)(const char *message);
void xlate_set_warn(xlate_warn_fn warn);

/* The dictionary path xlate_dict() uses (caller frees). */
char *xlate_default_dict_path(void);

/* How many chunks of the index hold a candidate translation, counted up
 * to XLATE_DF_CAP (0: none; the search asks the index: a word no note
 * holds finds nothing). NULL: every candidate is held, equally often. */
#define XLATE_DF_CAP 64
typedef size_t (*xlate_df_fn)(void *ctx, const char *text, size_t len);

/* Translate `query` with `d` (both directions; mixed-script queries get
 * both). Each source word keeps at most XLATE_PER_WORD of its first
 * XLATE_TRIES candidates that `df` finds in the index, the ones the vault
 * uses most among the dictionary's first senses (xlate.c, pick). Never
 * fails; out->n is 0 when no word was found. */
void xlate_query(const xdict *d, const char *query, xlate_df_fn df, void *df_ctx,
                 xlate_out *out);
void xlate_out_free(xlate_out *o);

/* The en-table key of English text: its tokens folded, stopwords dropped,
 * stemmed as the tokenizer stems them, joined by one space. Returns the
 * number of words in the key (out is reset first). */
size_t xlate_en_key(const char *text, size_t len, tbuf *out);

#endif
