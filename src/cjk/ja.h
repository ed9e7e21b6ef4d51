/* ja — Japanese word segmentation with MeCab, when the system has it.
 *
 * A CJK run holding kana is Japanese. When Debian's libmecab2 and
 * mecab-ipadic-utf8 are installed, such a run is cut into MeCab's words
 * (東京都に住む → 東京 都 に 住む); otherwise the caller falls back to
 * overlapping bigrams. libmecab.so.2 is dlopen()ed on the first Japanese run
 * a process sees (or when the tokenizer version is asked for, at `update`),
 * so a search of English or Chinese text never loads it. Setting
 * TROVE_NO_MECAB=1 forces the bigram fallback (tests run both paths).
 *
 * Only MeCab's plain C functions are used, with its "wakati" output (words
 * separated by spaces), so trove depends on no struct layout of mecab.h:
 * every word is found back in the run byte for byte, and an output that
 * does not line up makes that run fall back to bigrams.
 *
 * One MeCab tagger per thread (MeCab's taggers are not shared between
 * threads), freed when the thread exits. Nothing to free for the caller. */
#ifndef TROVE_JA_H
#define TROVE_JA_H

#include <stddef.h>

#include "text/tok.h"

/* Dictionary folder used when it exists (Debian's mecab-ipadic-utf8);
 * otherwise MeCab's own default (/etc/mecabrc). */
#define JA_IPADIC_DIR "/var/lib/mecab/dic/ipadic-utf8"

/* Version of the Japanese segmentation in force ("mecab-0.996-ipadic"), or
 * NULL when Japanese falls back to bigrams. Loads MeCab on first call. */
const char *ja_version(void);

/* Append to b what ja_version() depends on, without loading MeCab:
 * TROVE_NO_MECAB, where the dynamic loader looks (LD_LIBRARY_PATH and its
 * folders, /etc/ld.so.cache, which ldconfig rewrites when a library is
 * installed or removed), the dictionary and the mecabrc files. */
struct tbuf;
void ja_stamp(struct tbuf *b);

/* Cut the Japanese run into MeCab's words, reported through emit with
 * offsets relative to run (flags 0). Returns 1 and sets *rc to the first
 * non-zero emit() result when MeCab cut the run; returns 0 (nothing
 * emitted) when MeCab is unavailable or its output did not line up. */
int ja_cut(const char *run, size_t len, void *emit_ctx, tok_emit_fn emit, int *rc);

#endif
