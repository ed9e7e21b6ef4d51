/* md_int — helpers shared by the md module's source files (not public).
 *
 * The parser state (mdp) owns growing arrays that are handed to the md_doc
 * at the end; the tag set deduplicates tags in first-seen order. */
#ifndef TROVE_MD_INT_H
#define TROVE_MD_INT_H

#include <stddef.h>
#include <stdint.h>

#include "md/md.h"

typedef struct mdp {
    const char *src;
    size_t len;
    md_doc *doc;
    size_t cap_headings, cap_links, cap_code, cap_tags, cap_aliases;
    size_t *tag_slots;      /* open-addressing set: index+1 into doc->tags */
    size_t tag_slot_cap;    /* power of two, or 0 before the first tag */
    int line;               /* 1-based line being scanned */
    unsigned bt_gen;        /* generation for the per-line backtick cache */
    unsigned bt_fail[33];   /* run length n had no closer on line gen */
} mdp;

/* Decode one UTF-8 sequence of at most n (>0) bytes at s. Returns its length
 * (1 for an invalid byte) and stores the code point, or -1 when invalid. */
size_t md_utf8_decode(const unsigned char *s, size_t n, int32_t *cp);

/* Encode code point cp (valid scalar value) into out[4]; returns length. */
size_t md_utf8_encode(int32_t cp, char *out);

/* Tags, aliases and lists. */
void md_add_tag(mdp *p, const char *s, size_t n);
void md_add_alias(mdp *p, const char *s, size_t n);
void md_set_warning(mdp *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Parse the YAML between the frontmatter fences: [s, s+n) starting at
 * 1-based file line `first_line`. Fills title, aliases, tags, meta_json or
 * sets a warning; never fails. */
void md_frontmatter(mdp *p, const char *s, size_t n, int first_line);

/* Scan one line of inline text [a, b) for links and tags. */
void md_inline(mdp *p, size_t a, size_t b);

#endif
