/* stem_direct — the English Snowball stemmer's own entry points, for
 * text/tok.c when libstemmer's static archive is linked (TROVE_STEM_DIRECT).
 *
 * libstemmer.h offers only sb_stemmer_new(), which links every language
 * libstemmer has: ~330 KB of tables of pointers that the dynamic loader
 * relocates at every process start (~80 copy-on-write page faults; see
 * "Start-up" in docs/performance.md). Calling the English stemmer directly
 * links its tables alone. These declarations are Snowball's (runtime/api.h,
 * stem_UTF_8_english.h; not installed by Debian's libstemmer-dev); of the
 * environment trove reads only its first fields, the current word and its
 * length. CMakeLists.txt compiles cmake/stem_direct_check.c against the
 * archive and uses this path only when it stems a word list exactly as
 * sb_stemmer_stem() does, so a libstemmer whose layout differs falls back
 * to the public API. */
#ifndef TROVE_TEXT_STEM_DIRECT_H
#define TROVE_TEXT_STEM_DIRECT_H

struct SN_env {
    unsigned char *p;   /* the word; the stemmer works on it in place */
    int c;              /* cursor */
    int l;              /* length of p */
};

/* Owned by the caller: free with english_UTF_8_close_env(). NULL: no memory. */
struct SN_env *english_UTF_8_create_env(void);
void english_UTF_8_close_env(struct SN_env *z);
/* Copies s (size bytes) into z; 0, or -1 when out of memory. */
int SN_set_current(struct SN_env *z, int size, const unsigned char *s);
/* Stems z's word in place; < 0 on error. */
int english_UTF_8_stem(struct SN_env *z);

#endif
