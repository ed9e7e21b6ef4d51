/* seg_dict — the compiled Chinese dictionary and HMM tables of the segmenter.
 *
 * Source data is Debian's python3-jieba: dict.txt (word, frequency, tag per
 * line) and finalseg/prob_{start,trans,emit}.py (the B/M/E/S hidden Markov
 * model as Python dict literals). seg_dict_compile() turns them into one
 * binary file (format below) at build or install time; seg_dict_open()
 * mmaps that file at run time, checks it (magic, byte order, sizes, every
 * offset in range, and an XXH3 checksum of the payload) and never parses
 * text. The trie is a code point trie whose children are contiguous, sorted
 * edge runs, so a lookup is a few compares per character and no pointer is
 * stored in the file.
 *
 * File layout (native little-endian, every section 8-byte aligned):
 *   seg_dict_hdr
 *   nodes  [n_nodes]  {first_edge, n_edges, freq}; node 0 is the root and
 *                     the child reached through edge e is node e + 1
 *   edges  [n_nodes-1] code point of each edge, sorted within a node
 *   root   [SEG_ROOT_N] node id of the root child for U+4E00 + i (0: none)
 *   emit_cp[n_emit]   sorted code points with HMM emission probabilities
 *   emit_p [n_emit][4] log P(char | state) for B, M, E, S (SEG_MIN_LOGP
 *                     where the model has none)
 *   t2s    [SEG_ROOT_N] simplified form of U+4E00 + i, 0 for none (from
 *                     OpenCC's t2s conversion when it was available at build
 *                     time; all 0 otherwise)
 *
 * Ownership: seg_dict_open() returns a dictionary that owns its mapping;
 * seg_dict_close() unmaps it. Lookups never allocate and are thread-safe. */
#ifndef TROVE_SEG_DICT_H
#define TROVE_SEG_DICT_H

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

#define SEG_DICT_MAGIC "TROVEZH1"
#define SEG_DICT_VERSION 3u
#define SEG_ROOT_BASE 0x4E00u
#define SEG_ROOT_N (0x9FD5u - 0x4E00u + 1u)
/* jieba's MIN_FLOAT: the log probability of anything the HMM never saw. */
#define SEG_MIN_LOGP (-3.14e100)

enum { SEG_B, SEG_M, SEG_E, SEG_S };

typedef struct seg_dict_hdr {
    char magic[8];
    uint32_t byte_order;     /* 0x01020304 as written */
    uint32_t version;
    uint64_t file_size;
    uint64_t payload_hash;   /* XXH3-64 of the bytes after the header */
    uint64_t total;          /* sum of all dictionary frequencies */
    uint32_t n_nodes, n_emit;
    uint32_t max_depth;      /* longest word, in characters */
    uint32_t n_t2s;          /* characters with a simplified form */
    uint64_t off_nodes, off_edges, off_root, off_emit_cp, off_emit_p, off_t2s;
    double start[4];         /* log P(first state) */
    double trans[4][4];      /* log P(to | from); SEG_MIN_LOGP if absent */
} seg_dict_hdr;

typedef struct seg_node {
    uint32_t first_edge, n_edges, freq;
} seg_node;

typedef struct seg_dict {
    const unsigned char *map;
    size_t map_len;
    const seg_dict_hdr *hdr;
    const seg_node *nodes;
    const uint32_t *edges;
    const uint32_t *root;
    const uint32_t *emit_cp;
    const double *emit_p;
    const uint32_t *t2s;
    uint32_t n_nodes, n_emit, n_t2s;
} seg_dict;

/* Compile jieba's dict.txt and the directory holding prob_*.py into `out`
 * (written to a temporary file and renamed). `chars`/`t2s` (both or
 * neither): the file written by seg_dict_write_chars() and the same file
 * after OpenCC's t2s conversion, line by line. Errors name the file and
 * line. */
trove_err seg_dict_compile(const char *dict_txt, const char *hmm_dir, const char *chars,
                           const char *t2s, const char *out);

/* Write every CJK ideograph the segmenter may see, one per line, as input
 * for a traditional -> simplified converter. */
trove_err seg_dict_write_chars(const char *out);

/* Map and verify a compiled dictionary. A missing, truncated, foreign or
 * damaged file is an error whose detail names the file. */
trove_err seg_dict_open(const char *path, seg_dict **out);
/* The same without the payload's checksum: every check that reads only
 * the header (magic, byte order, version, size, each section's range), so
 * opening reads no page of the 8 MB it does not use (a cold search
 * segments a few words). Lookups check every offset they follow, so a
 * damaged payload gives wrong words, never a bad read; seg_dict_verify()
 * finds it, and must run before segmenting text that is stored (seg.c:
 * the tokenizer's version, which the indexer asks for first). */
trove_err seg_dict_map(const char *path, seg_dict **out);
/* The payload's XXH3 checksum against the header's: TROVE_ECORRUPT naming
 * `path` when they differ. Reads the whole file. */
trove_err seg_dict_verify(const seg_dict *d, const char *path);
void seg_dict_close(seg_dict *d);

/* Node reached from `node` by code point cp, or 0 when there is none
 * (the root is never a child, so 0 doubles as "no node"). */
uint32_t seg_dict_child(const seg_dict *d, uint32_t node, uint32_t cp);

/* Frequency of the word spelled by cps[0..n) (0 when it is not a word). */
uint32_t seg_dict_freq(const seg_dict *d, const uint32_t *cps, size_t n);

/* Simplified form of a traditional character (cp itself when none). */
uint32_t seg_dict_t2s(const seg_dict *d, uint32_t cp);

/* The 4 emission log probabilities of cp (NULL when the model lacks it). */
const double *seg_dict_emit(const seg_dict *d, uint32_t cp);

#endif
