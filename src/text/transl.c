/* transl — see transl.h. */
#include "text/transl.h"

#include <pthread.h>
#include <string.h>

#include "util/buf.h"
#include "util/mem.h"

/* ISO 639-1 (the 184 two-letter codes), space-separated. */
static const char iso639_1[] =
    "aa ab ae af ak am an ar as av ay az ba be bg bh bi bm bn bo br bs ca ce ch co cr cs cu cv "
    "cy da de dv dz ee el en eo es et eu fa ff fi fj fo fr fy ga gd gl gn gu gv ha he hi ho hr "
    "ht hu hy hz ia id ie ig ii ik io is it iu ja jv ka kg ki kj kk kl km kn ko kr ks ku kv kw "
    "ky la lb lg li ln lo lt lu lv mg mh mi mk ml mn mr ms mt my na nb nd ne ng nl nn no nr nv "
    "ny oc oj om or os pa pi pl ps pt qu rm rn ro ru rw sa sc sd se sg si sk sl sm sn so sq sr "
    "ss st su sv sw ta te tg th ti tk tl tn to tr ts tt tw ty ug uk ur uz ve vi vo wa wo xh yi "
    "yo za zh zu";

/* The same codes by first letter: bit (second - 'a') of iso639_1_bits[first
 * - 'a'], made from the list once. A search asks per path component of
 * ~100 notes: the list's scan was ~500 instructions a miss. */
static unsigned iso639_1_bits[26];
static pthread_once_t iso639_1_once = PTHREAD_ONCE_INIT;

static void iso639_1_bits_make(void)
{
    for (size_t i = 0; i + 2 < sizeof iso639_1; i += 3)
        iso639_1_bits[iso639_1[i] - 'a'] |= 1u << (iso639_1[i + 1] - 'a');
}

static int is_iso639_1(char a, char b)
{
    if (a < 'a' || a > 'z' || b < 'a' || b > 'z')
        return 0;
    pthread_once(&iso639_1_once, iso639_1_bits_make);
    return iso639_1_bits[a - 'a'] >> (b - 'a') & 1;
}

int transl_iso639_1_check(void)
{
    for (int a = 0; a < 256; a++)
        for (int b = 0; b < 256; b++) {
            int listed = 0;
            for (size_t i = 0; i + 2 < sizeof iso639_1; i += 3)
                listed |= iso639_1[i] == (char)a && iso639_1[i + 1] == (char)b;
            if (listed != is_iso639_1((char)a, (char)b))
                return 0;
        }
    return 1;
}

static int is_alpha(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static char upper(char c)
{
    return c >= 'a' && c <= 'z' ? (char)(c - 32) : c;
}

static char lower(char c)
{
    return c >= 'A' && c <= 'Z' ? (char)(c + 32) : c;
}

/* s[0..len) a language code: "xx", "xx-RR", "xx_RR", "xx-Scri"; the
 * language part must be lower case in a path (`IT/`, `AI/` are no
 * languages) and may be any case elsewhere (fold_lang). Normalised into
 * out (cap >= 16). */
static int parse_code(const char *s, size_t len, int fold_lang, char *out, size_t cap)
{
    if (len < 2 || cap < 16)
        return 0;
    char a = fold_lang ? lower(s[0]) : s[0], b = fold_lang ? lower(s[1]) : s[1];
    if (!is_iso639_1(a, b))
        return 0;
    if (len == 2) {
        out[0] = a, out[1] = b, out[2] = '\0';
        return 1;
    }
    if ((s[2] != '-' && s[2] != '_') || (len != 5 && len != 7))
        return 0;
    for (size_t i = 3; i < len; i++)
        if (!is_alpha(s[i]))
            return 0;
    out[0] = a, out[1] = b, out[2] = '-';
    for (size_t i = 3; i < len; i++)
        out[i] = len == 5 ? upper(s[i]) : i == 3 ? upper(s[i]) : lower(s[i]);
    out[len] = '\0';
    return 1;
}

/* The first marker of the path: [*start, *end) is what leaves the key,
 * and the code goes into code. 0 when there is none. */
static int find_marker(const char *path, size_t *start, size_t *end, char *code, size_t cap)
{
    size_t n = strlen(path);
    for (size_t at = 0; at < n;) {
        const char *slash = memchr(path + at, '/', n - at);
        size_t comp_end = slash ? (size_t)(slash - path) : n;
        size_t len = comp_end - at;
        const char *comp = path + at;
        /* A file name is looked at without its extension. */
        if (!slash) {
            const char *dot = NULL;
            for (size_t i = len; i > 0; i--)
                if (comp[i - 1] == '.') {
                    dot = comp + i - 1;
                    break;
                }
            if (dot && dot > comp)
                len = (size_t)(dot - comp);
        }
        if (slash && parse_code(comp, len, 0, code, cap)) {
            *start = at;
            *end = comp_end + 1;   /* the component and its slash */
            return 1;
        }
        for (size_t i = len; i > 1; i--) {
            if (comp[i - 1] != '.')
                continue;
            if (parse_code(comp + i, len - i, 0, code, cap)) {
                *start = at + i - 1;
                *end = at + len;
                return 1;
            }
            break;   /* only the last dot */
        }
        if (!slash)
            break;
        at = comp_end + 1;
    }
    return 0;
}

char *transl_key(const char *path, const char *permalink)
{
    if (permalink && *permalink) {
        size_t len = strlen(permalink);
        while (*permalink == '/' && len)
            permalink++, len--;
        while (len && permalink[len - 1] == '/')
            len--;
        if (len) {
            tbuf k = {0};
            tbuf_puts(&k, "p:");
            tbuf_append(&k, permalink, len);
            return tbuf_detach(&k);
        }
    }
    if (!path || !*path)
        return NULL;
    tbuf k = {0};
    tbuf_puts(&k, "f:");
    size_t start, end;
    char code[16];
    if (find_marker(path, &start, &end, code, sizeof code)) {
        tbuf_append(&k, path, start);
        tbuf_puts(&k, path + end);
    } else {
        tbuf_puts(&k, path);
    }
    return tbuf_detach(&k);
}

size_t transl_path_lang(const char *path, char *out, size_t cap)
{
    size_t start, end;
    char code[16];
    if (cap)
        out[0] = '\0';
    if (!path || cap < 16 || !find_marker(path, &start, &end, code, sizeof code))
        return 0;
    size_t len = strlen(code);
    memcpy(out, code, len + 1);
    return len;
}

int transl_code_normalise(const char *code, char *out, size_t cap)
{
    return code && parse_code(code, strlen(code), 1, out, cap);
}

/* "pt" matches "pt" and "pt-BR"; "pt-BR" only "pt-BR". */
static int code_matches(const char *have, const char *want)
{
    size_t wl = strlen(want);
    return strncmp(have, want, wl) == 0 && (have[wl] == '\0' || have[wl] == '-');
}

int transl_lang_matches(const char *lang_code, const char *path, const char *want)
{
    if (!want || !*want)
        return 0;
    char folder[16];
    if (transl_path_lang(path, folder, sizeof folder) && code_matches(folder, want))
        return 1;
    return lang_code && *lang_code && code_matches(lang_code, want);
}
