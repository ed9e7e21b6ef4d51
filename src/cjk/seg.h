/* seg — Chinese word segmentation for the tokenizer (jieba's algorithm).
 *
 * A CJK run handed over by tok_run is cut the way jieba cuts Chinese:
 *   1. every dictionary word starting at each character (a DAG, walked in
 *      the compiled prefix trie of seg_dict),
 *   2. the maximum-probability route through it (sum of log(freq/total),
 *      computed right to left, ties to the longer word),
 *   3. runs of single characters that are not themselves a word go through
 *      the B/M/E/S hidden Markov model (Viterbi), which joins words the
 *      dictionary lacks (names, new terms),
 *   4. in document mode each word longer than two characters is followed by
 *      the dictionary words of two and three characters inside it, marked
 *      TOK_COLOCATED (same FTS5 position), as jieba's cut_for_search does, so
 *      中华人民共和国 is found by 人民 and by 共和国.
 * Only characters U+4E00..U+9FD5 (jieba's Han range; compatibility
 * ideographs are looked up as their NFKC form) are segmented. A run holding
 * kana is Japanese and is cut into character bigrams, as are Hangul and any
 * other CJK characters (a one-character piece is emitted as itself).
 *
 * Ownership: seg_open() returns a segmenter owning its mapped dictionary and
 * user words; seg_free() releases it. A segmenter is immutable after open and
 * safe to share between threads (scratch space is thread-local).
 *
 * seg_install() plugs a lazily loaded process-wide segmenter into tok: the
 * dictionary is opened on the first CJK run, so a process that never sees
 * CJK text never touches it. If it cannot be opened, the warning callback
 * gets one message naming the file and CJK text falls back to bigrams. */
#ifndef TROVE_SEG_H
#define TROVE_SEG_H

#include <stddef.h>
#include <stdint.h>

#include "text/tok.h"
#include "util/err.h"

typedef struct seg seg;

/* File name of the compiled dictionary, looked for next to the binary and
 * in ../share/trove/ from it. */
#define SEG_DICT_FILE "trove-zh.dict"

/* Open the compiled dictionary `dict_path` and, when user_dict is not NULL,
 * add the words of that text file (one per line: "word [freq [tag]]", UTF-8;
 * without a frequency the word gets one just high enough to be cut out
 * whole, as jieba's add_word does). Errors name the file (and line). */
trove_err seg_open(const char *dict_path, const char *user_dict, seg **out);
void seg_free(seg *s);
/* The dictionary's payload checksum (seg_dict_verify): seg_open checks it;
 * the process-wide segmenter (seg_install) maps its dictionary without it
 * and checks it once, before the tokenizer's version is first asked for. */
trove_err seg_verify(const seg *s);

/* Cut one CJK run; offsets are relative to `run`. `flags` are tok's
 * TOK_SEG_*: QUERY leaves out the colocated sub-words; ASCII_BEFORE/AFTER
 * say the run touches ASCII text that jieba would keep in its block (then
 * single characters at that edge always go through the HMM, as in jieba).
 * Returns the first non-zero emit() result. */
int seg_cut(const seg *s, const char *run, size_t len, int flags,
            void *emit_ctx, tok_emit_fn emit);

/* Version string of the segmentation `s` produces (dictionary and user
 * words included), recorded in the index so a change forces re-tokenizing. */
const char *seg_version(const seg *s);

/* Where to find the dictionary: called once, on first use, and may set
 * either path (malloc'd; seg frees them). A NULL dict path means: the
 * environment variable TROVE_ZH_DICT, else next to the executable, else
 * ../share/trove/ from it. */
typedef void (*seg_paths_fn)(void *ud, char **dict_path, char **user_dict);
typedef void (*seg_warn_fn)(const char *message);

/* Install the lazily loaded segmenter into tok for the whole process. */
void seg_install(seg_paths_fn paths, void *ud, seg_warn_fn warn);

/* The dictionary path seg_install() would use without a config (caller
 * frees), for messages and `trove status`. */
char *seg_default_dict_path(void);

#endif
