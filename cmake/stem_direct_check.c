/* Configure-time check for src/text/stem_direct.h (CMakeLists.txt): the
 * English stemmer called directly must stem every word here exactly as
 * libstemmer's public sb_stemmer_stem() does, or trove uses the public API.
 * Exit 0: the same. */
#include <libstemmer.h>
#include <string.h>

#include "text/stem_direct.h"

static const char *const words[] = {
    "running", "generously", "connections", "relational", "internationalization",
    "caresses", "ponies", "ties", "happily", "sky", "dying", "news", "bus",
    "a", "is", "the", "abc", "naïve", "café", "résumés", "ÉTUDES", "feed",
    "agreed", "plastered", "motoring", "sing", "conflated", "troubled", "sized",
    "hoping", "filing", "failing", "xyzzyxyzzyxyzzyxyzzyxyzzyxyzzyxyzzyxyzzyx",
};

int main(void)
{
    struct sb_stemmer *sb = sb_stemmer_new("english", NULL);
    struct SN_env *z = english_UTF_8_create_env();
    if (!sb || !z)
        return 1;
    for (size_t i = 0; i < sizeof words / sizeof *words; i++) {
        int n = (int)strlen(words[i]);
        const sb_symbol *want = sb_stemmer_stem(sb, (const sb_symbol *)words[i], n);
        int want_len = sb_stemmer_length(sb);
        if (!want || SN_set_current(z, n, (const unsigned char *)words[i]) != 0 ||
            z->l != n || memcmp(z->p, words[i], (size_t)n) != 0 || english_UTF_8_stem(z) < 0)
            return 2;
        if (z->l != want_len || memcmp(z->p, want, (size_t)want_len) != 0)
            return 3;
    }
    english_UTF_8_close_env(z);
    sb_stemmer_delete(sb);
    return 0;
}
