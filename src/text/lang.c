/* lang — see lang.h.
 *
 * One pass over the text counts letters per script and looks each word of
 * an alphabetic script up in a table of function words (word → set of
 * languages that use it), built once from the profiles below. Profiles
 * overlap on purpose ("de" is French, Spanish, Portuguese, Dutch,
 * Romanian...): every hit counts for each language that has the word, and
 * the words a language does not share decide. */
#include "text/lang.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <utf8proc.h>

#include "text/tok_int.h"

/* Text looked at: a note's opening 64 KiB say what language it is in. */
#define LANG_MAX_SCAN (64u << 10)
/* A function word is short; longer words are skipped without lookup. */
#define LANG_MAX_WORD 31
/* Japanese mixes kana into Han text; Chinese has none. */
#define LANG_KANA_SHARE 0.1
/* One Han, kana or Hangul character carries about as much as a Latin word
 * of a few letters: weigh them up when deciding the dominant script. */
#define LANG_CJK_WEIGHT 3

enum {
    SC_NONE, SC_LATIN, SC_CYRILLIC, SC_ARABIC, SC_DEVANAGARI, SC_GREEK, SC_HEBREW,
    SC_THAI, SC_HAN, SC_KANA, SC_HANGUL, SC_COUNT
};

static const char *const codes[LANG_COUNT] = {
    "", "en", "de", "fr", "es", "it", "pt", "nl", "pl", "cs", "sv", "tr", "id", "ro",
    "ru", "uk", "ar", "fa", "hi", "el", "he", "th", "zh", "ja", "ko", "da", "nb",
};

typedef struct profile {
    int lang, script;
    const char *words;   /* space-separated, lower case */
} profile;

static const profile profiles[] = {
    {LANG_EN, SC_LATIN, "the of and to a in is it that for on with as are was be this by not or "
                        "from at an you your can if which has have will but they their its these "
                        "into more when how what there been also than other one all do does"},
    {LANG_DE, SC_LATIN, "der die das und ist nicht ein eine einen einem einer eines zu den dem des "
                        "mit von sich auf für im auch es wird werden kann können oder wie als bei "
                        "aus nach wenn sie ich wir dass über zum zur sind hat noch nur diese dieser"},
    {LANG_FR, SC_LATIN, "le la les de des du et est un une en pour dans que qui pas sur ce cette au "
                        "aux par avec ne se sont vous votre vos il elle ou plus peut être comme mais "
                        "leur où l d qu a à"},
    {LANG_ES, SC_LATIN, "el la los las de del y en que es un una por con para no se su sus al lo "
                        "como más pero o está son este esta puede desde entre también hay muy"},
    {LANG_IT, SC_LATIN, "il lo la le gli i di del della dei delle e è che un una per con non si da "
                        "in al alla sono come più questo questa può anche nel nella l dell"},
    {LANG_PT, SC_LATIN, "o a os as de do da dos das e é que um uma para com não se em no na por "
                        "mais como ao pode são seu sua também você nos"},
    {LANG_NL, SC_LATIN, "de het een en van is dat op te in voor met niet zijn die er aan ook als "
                        "bij om naar kan of wordt je uw deze dit worden"},
    {LANG_PL, SC_LATIN, "i w z na nie się do to jest że o jak co ale lub oraz po dla przez od za "
                        "może są jego ten ta aby tak który która które"},
    {LANG_CS, SC_LATIN, "a v se na je to že s z o do pro jak ale jsou nebo jako by k i ve po "
                        "který která které také může tak bude"},
    {LANG_SV, SC_LATIN, "och i att det som en är av för på med till den inte har de ett om kan "
                        "eller från du ska så"},
    {LANG_DA, SC_LATIN, "og i at det en er til af på med som den for de ikke et har jeg kan der "
                        "var fra om eller skal hvordan"},
    {LANG_NB, SC_LATIN, "og i det er som på en til at av for med ikke de har kan den et jeg fra "
                        "om eller skal hvordan denne"},
    {LANG_TR, SC_LATIN, "ve bir bu da de için ile olarak gibi daha çok ne var en kadar ama veya "
                        "olan her sonra"},
    {LANG_ID, SC_LATIN, "yang dan di ke dari ini itu untuk dengan tidak ada atau pada akan dalam "
                        "adalah juga bisa oleh sebagai anda"},
    {LANG_RO, SC_LATIN, "și şi în de la cu pe o un este nu să care mai din pentru se ce sau fi "
                        "sunt ca unei unui"},
    {LANG_RU, SC_CYRILLIC, "и в не на я что с по это как а то он из к у же за для от или но все "
                           "так его только бы при если может быть"},
    {LANG_UK, SC_CYRILLIC, "і в не на що з у це як та до за від для або але так його чи ви ми він "
                           "вона є може бути"},
    {LANG_AR, SC_ARABIC, "في من على إلى أن هذا التي الذي عن مع هو ما لا ذلك كان هذه أو"},
    {LANG_FA, SC_ARABIC, "و در به از که این را با است برای یک آن می ها تا یا"},
    {LANG_HI, SC_DEVANAGARI, "है के में की और को से का एक यह हैं पर भी कर लिए"},
};
#define N_PROFILES (sizeof profiles / sizeof *profiles)

#define L(x) ((lang_set)1 << LANG_##x)

/* Letters that only a few of the languages use: a word holding one counts
 * as one hit for each of them, which decides short texts with few
 * function words ("Список всех сервисов" has none). */
static const struct marker {
    int cp;
    lang_set langs;
} markers[] = {
    {0xDF, L(DE)},                               /* ß */
    {0xE4, L(DE) | L(SV)},                       /* ä */
    {0xF6, L(DE) | L(SV) | L(TR)},               /* ö */
    {0xFC, L(DE) | L(TR)},                       /* ü */
    {0xE0, L(FR) | L(IT)},                       /* à */
    {0xE8, L(FR) | L(IT)},                       /* è */
    {0xEA, L(FR) | L(PT)},                       /* ê */
    {0xE7, L(FR) | L(PT) | L(TR)},               /* ç */
    {0xF9, L(FR)}, {0xFB, L(FR)}, {0x153, L(FR)}, /* ù û œ */
    {0xF1, L(ES)},                               /* ñ */
    {0xE3, L(PT)}, {0xF5, L(PT)},                /* ã õ */
    {0x142, L(PL)}, {0x105, L(PL)}, {0x119, L(PL)}, {0x15B, L(PL)}, /* ł ą ę ś */
    {0x17A, L(PL)}, {0x17C, L(PL)}, {0x144, L(PL)},                 /* ź ż ń */
    {0x159, L(CS)}, {0x16F, L(CS)}, {0x11B, L(CS)},                 /* ř ů ě */
    {0xE5, L(SV) | L(DA) | L(NB)},               /* å */
    {0xF8, L(DA) | L(NB)}, {0xE6, L(DA) | L(NB)}, /* ø æ */
    {0x11F, L(TR)}, {0x131, L(TR)}, {0x15F, L(TR) | L(RO)}, /* ğ ı ş */
    {0x219, L(RO)}, {0x21B, L(RO)}, {0x103, L(RO)}, /* ș ț ă */
    {0x44B, L(RU)}, {0x44D, L(RU)},              /* ы э */
    {0x456, L(UK)}, {0x457, L(UK)}, {0x454, L(UK)}, {0x491, L(UK)}, /* і ї є ґ */
};

static lang_set marker_langs(int cp)
{
    for (size_t i = 0; i < sizeof markers / sizeof *markers; i++)
        if (markers[i].cp == cp)
            return markers[i].langs;
    return 0;
}

/* Scripts with one language here, and the CJK decisions. */
static int script_language(int script)
{
    switch (script) {
    case SC_GREEK: return LANG_EL;
    case SC_HEBREW: return LANG_HE;
    case SC_THAI: return LANG_TH;
    case SC_HANGUL: return LANG_KO;
    default: return LANG_UND;
    }
}

/* ---- the function word table ------------------------------------------- */

/* 1024 slots for the ~450 words (load under one half); an entry points at
 * its word in `profiles` rather than holding a copy, so the table is 16 KB
 * (4 pages), not 80 KB: every process that looks at a language (a search
 * detects its query's) builds it, and on a VM each fresh page it writes is
 * a page fault of tens of µs. */
#define TABLE_SLOTS 1024   /* power of two */

typedef struct entry {
    const char *word;   /* in profiles[].words, not NUL-terminated there */
    unsigned char len;
    lang_set langs;
} entry;

static entry table[TABLE_SLOTS];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;
/* Bit `len` of first_len[b]: some function word starts with byte b and is
 * len bytes long. Most words of a text ("command", "files") are no such
 * pair and skip the hash and the probe. */
static uint32_t first_len[256];

static size_t word_hash(const char *w, size_t len)
{
    uint32_t h = 2166136261u;   /* FNV-1a */
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)w[i]) * 16777619u;
    return h & (TABLE_SLOTS - 1);
}

static entry *table_slot(const char *w, size_t len)
{
    size_t h = word_hash(w, len);
    while (table[h].len && (table[h].len != len || memcmp(table[h].word, w, len) != 0))
        h = (h + 1) & (TABLE_SLOTS - 1);
    return &table[h];
}

static void table_build(void)
{
    for (size_t p = 0; p < N_PROFILES; p++) {
        for (const char *w = profiles[p].words; *w;) {
            size_t len = strcspn(w, " ");
            if (len > 0 && len <= LANG_MAX_WORD) {
                entry *e = table_slot(w, len);
                first_len[(unsigned char)w[0]] |= (uint32_t)1 << len;
                if (!e->len) {
                    e->word = w;
                    e->len = (unsigned char)len;
                }
                e->langs |= (lang_set)1 << profiles[p].lang;
            }
            w += len;
            while (*w == ' ')
                w++;
        }
    }
}

static lang_set table_lookup(const char *w, size_t len)
{
    if (!(first_len[(unsigned char)w[0]] & ((uint32_t)1 << len)))
        return 0;
    const entry *e = table_slot(w, len);
    return e->len ? e->langs : 0;
}

/* ---- one pass over the text ------------------------------------------- */

typedef struct tally {
    size_t letters[SC_COUNT];
    int hits[LANG_COUNT];
} tally;

static int script_of(int cp)
{
    if (cp < 0x80)
        return ((cp | 0x20) >= 'a' && (cp | 0x20) <= 'z') ? SC_LATIN : SC_NONE;
    if ((cp >= 0xC0 && cp <= 0x24F && cp != 0xD7 && cp != 0xF7) || (cp >= 0x1E00 && cp <= 0x1EFF))
        return SC_LATIN;
    if ((cp >= 0x370 && cp <= 0x3FF) || (cp >= 0x1F00 && cp <= 0x1FFF))
        return SC_GREEK;
    if (cp >= 0x400 && cp <= 0x52F)
        return SC_CYRILLIC;
    if (cp >= 0x590 && cp <= 0x5FF)
        return SC_HEBREW;
    if ((cp >= 0x600 && cp <= 0x6FF) || (cp >= 0x750 && cp <= 0x77F) ||
        (cp >= 0xFB50 && cp <= 0xFDFF) || (cp >= 0xFE70 && cp <= 0xFEFF))
        return SC_ARABIC;
    if (cp >= 0x900 && cp <= 0x97F)
        return SC_DEVANAGARI;
    if (cp >= 0xE00 && cp <= 0xE7F)
        return SC_THAI;
    if ((cp >= 0x1100 && cp <= 0x11FF) || (cp >= 0x3130 && cp <= 0x318F) ||
        (cp >= 0xAC00 && cp <= 0xD7AF))
        return SC_HANGUL;
    if ((cp >= 0x3041 && cp <= 0x30FF && cp != 0x30FB) || (cp >= 0x31F0 && cp <= 0x31FF) ||
        (cp >= 0xFF66 && cp <= 0xFF9F))
        return SC_KANA;
    if ((cp >= 0x3400 && cp <= 0x4DBF) || (cp >= 0x4E00 && cp <= 0x9FFF) ||
        (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x20000 && cp <= 0x2FFFF))
        return SC_HAN;
    return SC_NONE;
}

/* Part of a word: a letter or a mark (Devanagari vowel signs are marks). */
static int word_char(int cp)
{
    if (cp < 0x80)
        return ((cp | 0x20) >= 'a' && (cp | 0x20) <= 'z');
    utf8proc_category_t c = utf8proc_category(cp);
    return (c >= UTF8PROC_CATEGORY_LU && c <= UTF8PROC_CATEGORY_LO) ||
           (c >= UTF8PROC_CATEGORY_MN && c <= UTF8PROC_CATEGORY_ME);
}

/* ---- what scan() asks of a non-ASCII letter, kept per code point ------
 *
 * Below U+1000 (Latin, Greek, Cyrillic, Hebrew, Arabic, the Indic scripts,
 * Thai: every alphabetic script of the profiles) a code point's script,
 * whether it is part of a word, its lower case and its marker languages
 * are looked up once and kept: utf8proc's category and case tables and
 * the marker list cost ~100 instructions a letter, and a note in Russian
 * or Hindi is thousands of letters. Each entry is made from the very
 * functions scan() called before, on first use (a search's query touches
 * a few); 0 = not made yet. Two threads making one entry store the same
 * value; relaxed atomics, as nothing else is published through it. */
#define CP_CACHED 0x1000
#define CPI_MADE 0x80000000u
#define CPI_WORD 0x40000000u
#define CPI_SLOW 0x20000000u   /* scan() asks utf8proc */

static _Atomic uint32_t cp_info_cache[CP_CACHED];

/* bits 0-3 script, 4-9 marker index + 1 (0: none), 16-28 lower case
 * (below U+1000 lower cases stay below U+2000: else CPI_SLOW), CPI_WORD,
 * CPI_MADE */
static uint32_t cp_info_make(int cp)
{
    uint32_t v = CPI_MADE | (uint32_t)script_of(cp);
    if (word_char(cp)) {
        v |= CPI_WORD;
        int lower = utf8proc_tolower(cp);
        if (lower < 0x500)   /* every marker letter is below U+0500 */
            for (size_t i = 0; i < sizeof markers / sizeof *markers; i++)
                if (markers[i].cp == lower) {
                    v |= (uint32_t)(i + 1) << 4;
                    break;
                }
        if (lower < 0 || lower >= 0x2000)
            return CPI_MADE | CPI_SLOW;   /* none does (utf8proc 2.8) */
        v |= (uint32_t)lower << 16;
    }
    return v;
}

static uint32_t cp_info(int cp)
{
    uint32_t v = atomic_load_explicit(&cp_info_cache[cp], memory_order_relaxed);
    if (!v) {
        v = cp_info_make(cp);
        atomic_store_explicit(&cp_info_cache[cp], v, memory_order_relaxed);
    }
    return v;
}

/* A word ends: its function-word languages and its marker languages each
 * get one hit. */
static void end_word(tally *t, const char *w, size_t len, int too_long, lang_set marked)
{
    if (len == 0)
        return;
    lang_set s = marked | (too_long ? 0 : table_lookup(w, len));
    for (int l = 1; s && l < LANG_COUNT; l++)
        if (s & ((lang_set)1 << l))
            t->hits[l]++;
}

/* "https://..." and "www.": a URL's path segments ("c/en/us/td") are not
 * words of any language. Returns the index after it. */
static size_t skip_url(const char *text, size_t len, size_t i)
{
    while (i < len && text[i] != ' ' && text[i] != '\n' && text[i] != '\t' && text[i] != '>' &&
           text[i] != ')' && text[i] != ']' && text[i] != '"' && text[i] != '`')
        i++;
    return i;
}

static void scan(const char *text, size_t len, tally *t)
{
    pthread_once(&table_once, table_build);
    memset(t, 0, sizeof *t);
    if (len > LANG_MAX_SCAN)
        len = LANG_MAX_SCAN;
    char word[LANG_MAX_WORD + 1];
    size_t wlen = 0;
    int too_long = 0;
    lang_set marked = 0;
    size_t code_fence = 0;   /* backticks that opened the code we are in */
    size_t i = 0;
    while (i < len) {
        if (text[i] == '`') {
            size_t run = 0;
            while (i < len && text[i] == '`')
                i++, run++;
            if (!code_fence)
                code_fence = run;
            else if (run == code_fence)
                code_fence = 0;
            end_word(t, word, wlen, too_long, marked);
            wlen = 0, too_long = 0, marked = 0;
            continue;
        }
        if (code_fence) {
            /* Inside code only a backtick, or a line end of inline code,
             * matters; neither is ever a byte of a longer character. */
            while (i < len && text[i] != '`' && text[i] != '\n')
                i++;
            if (i < len && text[i] == '\n') {
                i++;
                if (code_fence < 3)
                    code_fence = 0;   /* inline code never spans lines */
            }
            continue;
        }
        if (text[i] == ':' && len - i >= 3 && text[i + 1] == '/' && text[i + 2] == '/') {
            wlen = 0, too_long = 0, marked = 0;   /* the scheme is no word */
            i = skip_url(text, len, i);
            continue;
        }
        if (wlen == 3 && memcmp(word, "www", 3) == 0 && text[i] == '.') {
            wlen = 0, too_long = 0, marked = 0;
            i = skip_url(text, len, i);
            continue;
        }
        unsigned char c = (unsigned char)text[i];
        if (c < 0x80) {   /* the common case, without utf8proc */
            i++;
            if ((unsigned)((c | 0x20) - 'a') < 26) {
                /* the rest of the ASCII letters at once: none of them
                 * starts code, a URL or "www." */
                for (;;) {
                    t->letters[SC_LATIN]++;
                    if (wlen < LANG_MAX_WORD)
                        word[wlen++] = (char)(c | 0x20);
                    else
                        too_long = 1;
                    if (i == len || (unsigned)(((unsigned char)text[i] | 0x20) - 'a') >= 26)
                        break;
                    c = (unsigned char)text[i++];
                }
            } else {
                end_word(t, word, wlen, too_long, marked);
                wlen = 0, too_long = 0, marked = 0;
            }
            continue;
        }
        int cp = tok_utf8_next(text, len, &i);
        uint32_t info = cp >= 0 && cp < CP_CACHED ? cp_info(cp) : CPI_SLOW;
        if (!(info & CPI_SLOW)) {
            if (!(info & CPI_WORD)) {   /* no Han, kana or Hangul down here */
                end_word(t, word, wlen, too_long, marked);
                wlen = 0, too_long = 0, marked = 0;
                continue;
            }
            t->letters[info & 0xF]++;
            unsigned m = (info >> 4) & 0x3F;
            if (m)
                marked |= markers[m - 1].langs;
            unsigned lower = (info >> 16) & 0x1FFF;
            size_t n = lower < 0x80 ? 1 : lower < 0x800 ? 2 : 3;
            if (wlen + n > LANG_MAX_WORD) {
                too_long = 1;
                continue;
            }
            if (n == 1) {
                word[wlen++] = (char)lower;
            } else if (n == 2) {
                word[wlen++] = (char)(0xC0 | (lower >> 6));
                word[wlen++] = (char)(0x80 | (lower & 0x3F));
            } else {
                word[wlen++] = (char)(0xE0 | (lower >> 12));
                word[wlen++] = (char)(0x80 | ((lower >> 6) & 0x3F));
                word[wlen++] = (char)(0x80 | (lower & 0x3F));
            }
            continue;
        }
        int sc = cp < 0 ? SC_NONE : script_of(cp);
        if (sc == SC_HAN || sc == SC_KANA || sc == SC_HANGUL) {
            t->letters[sc]++;
            end_word(t, word, wlen, too_long, marked);   /* no function words in CJK */
            wlen = 0, too_long = 0, marked = 0;
            continue;
        }
        if (cp < 0 || !word_char(cp)) {
            end_word(t, word, wlen, too_long, marked);
            wlen = 0, too_long = 0, marked = 0;
            continue;
        }
        t->letters[sc]++;
        int lower = utf8proc_tolower(cp);
        if (lower < 0x500)   /* every marker letter is below U+0500 */
            marked |= marker_langs(lower);
        utf8proc_uint8_t enc[4];
        utf8proc_ssize_t n = utf8proc_encode_char(lower, enc);
        if (n <= 0 || wlen + (size_t)n > LANG_MAX_WORD) {
            too_long = 1;
            continue;
        }
        memcpy(word + wlen, enc, (size_t)n);
        wlen += (size_t)n;
    }
    end_word(t, word, wlen, too_long, marked);
}

/* The writing system most of the letters belong to (SC_HAN standing for
 * Han and kana together), SC_NONE when there are no letters. */
static int dominant_script(const tally *t)
{
    size_t best = 0;
    int script = SC_NONE;
    for (int sc = SC_LATIN; sc < SC_COUNT; sc++) {
        if (sc == SC_KANA)
            continue;
        size_t w = t->letters[sc];
        if (sc == SC_HAN)
            w = (t->letters[SC_HAN] + t->letters[SC_KANA]) * LANG_CJK_WEIGHT;
        else if (sc == SC_HANGUL)
            w *= LANG_CJK_WEIGHT;
        if (w > best)
            best = w, script = sc;
    }
    return script;
}

static int han_language(const tally *t)
{
    double cjk = (double)(t->letters[SC_HAN] + t->letters[SC_KANA]);
    return (double)t->letters[SC_KANA] >= LANG_KANA_SHARE * cjk ? LANG_JA : LANG_ZH;
}

/* The profiles of `script` with the most hits (0 when no hit), and that
 * count. */
static lang_set best_profiles(const tally *t, int script, int *best)
{
    *best = 0;
    lang_set set = 0;
    for (size_t p = 0; p < N_PROFILES; p++) {
        if (profiles[p].script != script)
            continue;
        int h = t->hits[profiles[p].lang];
        if (h > *best)
            *best = h, set = 0;
        if (h == *best && h > 0)
            set |= (lang_set)1 << profiles[p].lang;
    }
    return set;
}

static lang_set script_profiles(int script)
{
    lang_set set = 0;
    for (size_t p = 0; p < N_PROFILES; p++)
        if (profiles[p].script == script)
            set |= (lang_set)1 << profiles[p].lang;
    return set;
}

int lang_detect(const char *text, size_t len)
{
    tally t;
    scan(text, len, &t);
    int script = dominant_script(&t);
    if (script == SC_NONE)
        return LANG_UND;
    if (script == SC_HAN)
        return han_language(&t);
    if (script_language(script))
        return script_language(script);
    int best;
    lang_set set = best_profiles(&t, script, &best);
    if (best < 1 || (set & (set - 1)))   /* no evidence, or a tie */
        return LANG_UND;
    for (int l = 1; l < LANG_COUNT; l++)
        if (set == (lang_set)1 << l)
            return l;
    return LANG_UND;
}

lang_set lang_candidates(const char *text, size_t len)
{
    tally t;
    scan(text, len, &t);
    int script = dominant_script(&t);
    if (script == SC_NONE)
        return 0;
    if (script == SC_HAN)
        return (lang_set)1 << han_language(&t);
    if (script_language(script))
        return (lang_set)1 << script_language(script);
    int best;
    lang_set set = best_profiles(&t, script, &best);
    return set ? set : script_profiles(script);
}

const char *lang_code(int lang)
{
    return lang > LANG_UND && lang < LANG_COUNT ? codes[lang] : "";
}

int lang_from_code(const char *code)
{
    if (!code || !*code)
        return LANG_UND;
    /* the first byte first: the graph channel asks for each of a search's
     * ~600 candidates (26 strcmp calls each were ~0.17 M instructions) */
    for (int l = 1; l < LANG_COUNT; l++)
        if (codes[l][0] == code[0] && strcmp(codes[l], code) == 0)
            return l;
    return LANG_UND;
}
