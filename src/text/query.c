/* query — see query.h.
 *
 * Input is cut into chunks at whitespace (ASCII, no-break and ideographic
 * spaces). A chunk is a word, a prefix (word*), a "phrase", or one of those
 * preceded by '-' (exclusion). An unbalanced '"' makes the rest of the input
 * one phrase. Wikilink brackets are unwrapped. A trailing '*' makes a
 * prefix term when the last token before it has two or more characters
 * (otherwise the '*' is ignored). A term is kept only if the trove
 * tokenizer finds at least one token in it, and it reaches FTS5 as its raw
 * text in double quotes, so FTS5 runs the same tokenizer on it as on the
 * notes and no user input is ever FTS5 syntax.
 *
 * CJK is written without spaces, so a plain word's CJK runs are split into
 * the segmenter's units (Chinese words with the cjk/seg segmenter, bigrams
 * without it, e.g. for Japanese and Korean), each its own OR-ed term: a
 * natural-language question then matches notes sharing some of its words
 * instead of requiring the whole sentence as a phrase. A CJK run of one
 * character becomes a prefix term so it also matches the bigrams starting
 * with it. Quoted phrases and exclusions stay whole phrases. */
#include "text/query.h"

#include <stdlib.h>
#include <string.h>

#include "text/tok.h"
#include "text/tok_int.h"
#include "util/buf.h"
#include "util/mem.h"

/* Bounds on what one query can cost: a pasted page becomes at most this
 * many terms, and at most this many OR-ed FTS5 phrases. */
#define QUERY_MAX_TERMS 64
#define QUERY_MAX_UNITS 128

/* A common English stopword list, sorted for bsearch. Compared with the
 * tokens of a word (folded, unstemmed), so "What's" is "what" + "s". */
/* Inline strings, not pointers: a table of pointers is relocated (copied)
 * by the dynamic loader at every process start. */
#define STOP_MAX 16   /* the longest word's bytes and its NUL */
static const char stopwords[][STOP_MAX] = {
    "a", "about", "above", "after", "again", "against", "all", "am", "an",
    "and", "any", "are", "as", "at", "be", "because", "been", "before",
    "being", "below", "between", "both", "but", "by", "can", "could", "did",
    "do", "does", "doing", "down", "during", "each", "few", "for", "from",
    "further", "had", "has", "have", "having", "he", "her", "here", "hers",
    "herself", "him", "himself", "his", "how", "i", "if", "in", "into", "is",
    "it", "its", "itself", "just", "me", "more", "most", "my", "myself", "no",
    "nor", "not", "of", "off", "on", "once", "only", "or", "other", "our",
    "ours", "ourselves", "out", "over", "own", "s", "same", "she", "should",
    "so", "some", "such", "t", "than", "that", "the", "their", "theirs",
    "them", "themselves", "then", "there", "these", "they", "this", "those",
    "through", "to", "too", "under", "until", "up", "very", "was", "we",
    "were", "what", "when", "where", "which", "while", "who", "whom", "why",
    "will", "with", "would", "you", "your", "yours", "yourself",
    "yourselves",
};

/* Chinese function words (particles, pronouns, prepositions, question
 * words), in the simplified spelling the segmenter indexes, sorted by bytes.
 * Question words matter most: a question is full of them (何时, 哪一年,
 * 多久) while the prose that answers it hardly uses them, so their rarity in
 * the notes would otherwise give them the highest weights of the query.
 * Dropped from a CJK word's OR-ed units when other units remain: they match
 * nearly every Chinese note (的 is in almost every paragraph), so they only
 * add noise to the ranking and cost a walk over huge posting lists. */
static const char zh_stopwords[][STOP_MAX] = {
    "一个", "一些", "与", "且", "个", "为", "为什么", "为何", "么", "之", "也", "了", "于",
    "什么", "什么时候", "什么样", "从", "他", "他们", "以", "任何", "但", "何", "何为", "何事",
    "何人", "何以", "何在", "何地", "何处", "何年", "何故", "何方", "何日", "何时", "何物", "何种",
    "何者", "何谓", "你", "你们", "做什么", "其", "几", "则", "即", "又", "及", "可否", "向", "吗",
    "吧", "呢", "和", "哪", "哪一", "哪个", "哪些", "啊", "因为", "在", "地", "多久", "多大",
    "多少", "多深", "多远", "多重", "多长", "多长时间", "多高", "她", "如何", "如果", "它", "对", "将",
    "就", "已", "已经", "干什么", "并", "很", "得", "怎么", "怎么办", "怎么样", "怎样", "我", "我们",
    "或", "所", "所以", "把", "是", "是不是", "是什么", "是否", "是谁", "曾", "曾经", "有没有", "由",
    "的", "的话", "着", "等", "给", "而", "能否", "被", "让", "谁", "过", "还", "这", "这个",
    "这些", "那", "那个", "那些", "都",
};

typedef struct key { const char *s; size_t len; } key;

static int cmp_stop(const void *k, const void *e)
{
    const key *a = k;
    const char *b = e;
    size_t bl = strlen(b);
    int c = memcmp(a->s, b, a->len < bl ? a->len : bl);
    if (c)
        return c;
    return (a->len > bl) - (a->len < bl);
}

static int is_stopword(const char *t, size_t len)
{
    key k = {t, len};
    return bsearch(&k, stopwords, sizeof stopwords / sizeof *stopwords,
                   sizeof *stopwords, cmp_stop) != NULL;
}

int query_is_stopword(const char *token, size_t len)
{
    return is_stopword(token, len);
}

static int starts_with(const char *t, size_t len, const char *p)
{
    size_t n = strlen(p);
    return len >= n && memcmp(t, p, n) == 0;
}

static int is_zh_stopword(const char *t, size_t len)
{
    key k = {t, len};
    if (bsearch(&k, zh_stopwords, sizeof zh_stopwords / sizeof *zh_stopwords,
                sizeof *zh_stopwords, cmp_stop))
        return 1;
    /* The open families of question words: 哪 (which, where) and 几 (how
     * many) with whatever measure word follows (哪一年, 哪所, 几十, 几个),
     * and 多少 (多少年). 哪吒 is a name (哪咤 once the segmenter has made
     * it simplified); 几何 (geometry) and 几内亚 (Guinea) are words of
     * their own. */
    if (starts_with(t, len, "哪"))
        return !starts_with(t, len, "哪吒") && !starts_with(t, len, "哪咤");
    if (starts_with(t, len, "几"))
        return !starts_with(t, len, "几何") && !starts_with(t, len, "几内亚");
    return starts_with(t, len, "多少");
}

int query_zh_function_word(const char *token, size_t len)
{
    return is_zh_stopword(token, len);
}

/* ---- term list ------------------------------------------------------------ */

typedef struct scan {
    size_t n;
    int all_stop;
    size_t last_chars;   /* characters in the last token */
} scan;

static size_t count_chars(const char *s, size_t len)
{
    size_t n = 0;
    for (size_t i = 0; i < len; i++)
        n += ((unsigned char)s[i] & 0xC0) != 0x80;
    return n;
}

static int scan_cb(void *ctx, const char *t, size_t len, size_t s, size_t e)
{
    (void)s, (void)e;
    scan *sc = ctx;
    sc->n++;
    sc->last_chars = count_chars(t, len);
    if (!is_stopword(t, len))
        sc->all_stop = 0;
    return 0;
}

/* Add a term unless it has no token. A trailing '*' (prefix) counts only
 * when the token it extends has at least two characters: "a*" would match
 * half the index. */
static void add_term(query_parsed *q, size_t *cap, query_term_kind kind,
                     int prefix, int neg, const char *s, size_t len)
{
    if (q->n_terms >= QUERY_MAX_TERMS)
        return;
    scan sc = {0, 1, 0};
    tok_opts nostem = {0};
    tok_run(&nostem, s, len, &sc, scan_cb);
    if (sc.n == 0)
        return;
    if (prefix && sc.last_chars >= 2)
        kind = QUERY_PREFIX;
    xgrow(&q->terms, cap, q->n_terms + 1, sizeof *q->terms);
    q->terms[q->n_terms++] = (query_term){
        .kind = kind,
        .negated = neg,
        .stopword = kind == QUERY_WORD && !neg && sc.all_stop,
        .text = xstrndup(s, len),
    };
}

/* ---- chunking ------------------------------------------------------------- */

static size_t space_len(const char *s)
{
    unsigned char c = (unsigned char)s[0];
    if (c == ' ' || (c >= '\t' && c <= '\r'))
        return 1;
    if (c == 0xC2 && (unsigned char)s[1] == 0xA0)
        return 2;
    if (c == 0xE3 && (unsigned char)s[1] == 0x80 && (unsigned char)s[2] == 0x80)
        return 3;
    return 0;
}

/* Copy of the input with invalid UTF-8 and control bytes turned into
 * spaces (so terms and `plain` are clean UTF-8) and wikilinks unwrapped:
 * "[[Some Note]]" becomes the words Some Note, and "-[[Some Note]]" the
 * excluded phrase -"Some Note" (excluding each word alone would drop far
 * more than the user asked for). Other "[[" / "]]" become spaces. */
static char *strip_brackets(const char *in)
{
    size_t n = strlen(in);
    char *out = xmalloc(n + 1);
    size_t o = 0;
    int in_neg_link = 0;
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)in[i];
        if (c >= 0x80) {
            /* Keep valid UTF-8; an invalid byte separates, like in tok. */
            size_t j = i;
            if (tok_utf8_next(in, n, &j) < 0) {
                out[o++] = ' ';
                i = j;
                continue;
            }
            memcpy(out + o, in + i, j - i);
            o += j - i;
            i = j;
            continue;
        }
        if (c < 0x20 || c == 0x7F) {   /* control bytes: whitespace */
            out[o++] = ' ';
            i++;
            continue;
        }
        if (in[i] == '[' && in[i + 1] == '[') {
            int neg_start = o > 0 && out[o - 1] == '-' &&
                            (o == 1 || space_len(&out[o - 2]));
            if (neg_start && !in_neg_link && strstr(in + i + 2, "]]")) {
                out[o++] = '"';
                in_neg_link = 1;
            } else {
                out[o++] = ' ';
            }
            i += 2;
            continue;
        }
        if (in[i] == ']' && in[i + 1] == ']') {
            out[o++] = in_neg_link ? '"' : ' ';
            in_neg_link = 0;
            i += 2;
            continue;
        }
        out[o++] = in[i++];
    }
    out[o] = '\0';
    return out;
}

static void parse_terms(const char *s, query_parsed *q)
{
    size_t cap = 0, i = 0, sp;
    while (s[i]) {
        if ((sp = space_len(s + i))) {
            i += sp;
            continue;
        }
        int neg = 0;
        /* "-word" excludes; "--flag" is a word (command-line flags are
         * common search terms in technical notes). */
        if (s[i] == '-' && s[i + 1] && s[i + 1] != '-' && !space_len(s + i + 1)) {
            neg = 1;
            i++;
        }
        if (s[i] == '"') {
            const char *body = s + i + 1;
            const char *close = strchr(body, '"');
            size_t blen = close ? (size_t)(close - body) : strlen(body);
            i += 1 + blen + (close ? 1 : 0);
            int prefix = close && s[i] == '*';
            while (prefix && s[i] == '*')
                i++;
            add_term(q, &cap, QUERY_PHRASE, prefix, neg, body, blen);
            continue;
        }
        size_t start = i;
        while (s[i] && !space_len(s + i))
            i++;
        size_t end = i;
        while (end > start && s[end - 1] == '*')
            end--;
        add_term(q, &cap, QUERY_WORD, end < i, neg, s + start, end - start);
    }
}

/* ---- FTS5 expression ------------------------------------------------------ */

typedef struct units {
    tbuf *b;
    size_t n;
} units;

static void put_quoted(units *u, const char *s, size_t len, int prefix)
{
    if (u->n >= QUERY_MAX_UNITS)
        return;
    if (u->n++)
        tbuf_puts(u->b, " OR ");
    tbuf_putc(u->b, '"');
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '"')
            tbuf_putc(u->b, '"');
        tbuf_putc(u->b, s[i]);
    }
    tbuf_putc(u->b, '"');
    if (prefix)
        tbuf_puts(u->b, " *");
}

static int has_cjk(const char *s, size_t len)
{
    return tok_has_cjk(s, len);
}

/* Code point ending just before byte `at` (-1 at the start). */
static int cp_before(const char *s, size_t at)
{
    if (at == 0)
        return -1;
    size_t p = at - 1;
    while (p > 0 && at - p < 4 && ((unsigned char)s[p] & 0xC0) == 0x80)
        p--;
    size_t q = p;
    int cp = tok_utf8_next(s, at, &q);
    return q == at ? cp : -1;
}

typedef struct split_ctx {
    const char *w;
    size_t len;
    units *u;
    size_t grp_start, grp_end;
    int have_grp;
    int skip_stop;   /* drop Chinese function words */
} split_ctx;

static void flush_group(split_ctx *c)
{
    if (c->have_grp)
        put_quoted(c->u, c->w + c->grp_start, c->grp_end - c->grp_start, 0);
    c->have_grp = 0;
}

static int split_cb(void *ctx, const char *t, size_t tl, size_t start,
                    size_t end)
{
    split_ctx *c = ctx;
    size_t p = start;
    int cp = tok_utf8_next(c->w, c->len, &p);
    if (!tok_cjk_char(cp)) {
        /* Consecutive non-CJK tokens stay one phrase: "node.js". */
        if (!c->have_grp)
            c->grp_start = start;
        c->grp_end = end;
        c->have_grp = 1;
        return 0;
    }
    flush_group(c);
    if (c->skip_stop && is_zh_stopword(t, tl))
        return 0;
    /* A run of one character (plus marks) becomes a prefix term. */
    size_t after = end;
    int lone = !tok_cjk_char(cp_before(c->w, start)) &&
               (end >= c->len || !tok_cjk_char(tok_utf8_next(c->w, c->len, &after)));
    while (lone && p < end)
        lone = tok_is_mark(tok_utf8_next(c->w, c->len, &p));
    put_quoted(c->u, c->w + start, end - start, lone);
    return 0;
}

/* Counts the CJK tokens that are not Chinese function words. */
static int count_content_cb(void *ctx, const char *t, size_t tl, size_t s, size_t e)
{
    (void)s, (void)e;
    size_t p = 0;
    if (tok_cjk_char(tok_utf8_next(t, tl, &p)) && !is_zh_stopword(t, tl))
        (*(size_t *)ctx)++;
    return 0;
}

static void put_word(units *u, const char *w, size_t len)
{
    if (!has_cjk(w, len)) {
        put_quoted(u, w, len, 0);
        return;
    }
    split_ctx c = {.w = w, .len = len, .u = u};
    /* Query mode: the words of the query, not the words inside them (the
     * index has those at the position of their word, so 人民 still finds
     * 中华人民共和国); sub-words as extra OR terms rank worse (DRCD). */
    tok_opts nostem = {.query = 1};
    size_t content = 0;
    tok_run(&nostem, w, len, &content, count_content_cb);
    c.skip_stop = content > 0;
    tok_run(&nostem, w, len, &c, split_cb);
    flush_group(&c);
}

static void put_term(units *u, const query_term *t, int whole)
{
    size_t len = strlen(t->text);
    if (t->kind == QUERY_WORD && !whole)
        put_word(u, t->text, len);
    else
        put_quoted(u, t->text, len, t->kind == QUERY_PREFIX);
}

static void build(query_parsed *q)
{
    /* A query of exclusions only has nothing to exclude from: the user
     * typed something like "-rf", so search for the words instead. */
    size_t positive = 0;
    for (size_t k = 0; k < q->n_terms; k++)
        positive += !q->terms[k].negated;
    for (size_t k = 0; k < q->n_terms && positive == 0; k++)
        q->terms[k].negated = 0;
    size_t nonstop = 0;
    for (size_t k = 0; k < q->n_terms; k++)
        nonstop += !q->terms[k].negated && !q->terms[k].stopword;
    tbuf pos = {0}, neg = {0}, plain = {0};
    units up = {&pos, 0}, un = {&neg, 0};
    for (size_t k = 0; k < q->n_terms; k++) {
        query_term *t = &q->terms[k];
        if (nonstop == 0)
            t->stopword = 0;
        if (t->negated) {
            put_term(&un, t, 1);
            continue;
        }
        if (plain.len)
            tbuf_putc(&plain, ' ');
        tbuf_puts(&plain, t->text);
        if (!t->stopword)
            put_term(&up, t, 0);
    }
    if (up.n && un.n) {
        tbuf out = {0};
        tbuf_printf(&out, "(%s) NOT (%s)", tbuf_cstr(&pos), tbuf_cstr(&neg));
        q->fts = tbuf_detach(&out);
    } else if (up.n) {
        q->fts = tbuf_detach(&pos);
    }
    tbuf_free(&pos);
    tbuf_free(&neg);
    q->plain = plain.len ? tbuf_detach(&plain) : xstrdup("");
    tbuf_free(&plain);
}

void query_parse(const char *input, query_parsed *out)
{
    memset(out, 0, sizeof *out);
    char *s = strip_brackets(input ? input : "");
    parse_terms(s, out);
    free(s);
    build(out);
}

void query_free(query_parsed *q)
{
    if (!q)
        return;
    for (size_t k = 0; k < q->n_terms; k++)
        free(q->terms[k].text);
    free(q->terms);
    free(q->fts);
    free(q->plain);
    memset(q, 0, sizeof *q);
}

/* ---- reading an expression back ------------------------------------------ */

/* The phrases "P OR P ..." from fts[*i] into spans (NULL: counted only, up
 * to max either way); *i then points past the last. -1 when the text there
 * is not such a list. */
static long read_units(const char *fts, size_t *i, query_span *spans, size_t max)
{
    size_t n = 0, at = *i;
    for (;;) {
        if (fts[at] != '"' || n >= max)
            return -1;
        size_t start = at++;
        for (;;) {
            if (fts[at] == '\0')
                return -1;
            if (fts[at] == '"') {
                if (fts[at + 1] != '"')
                    break;
                at++;   /* a doubled quote */
            }
            at++;
        }
        at++;
        if (strncmp(fts + at, " *", 2) == 0)
            at += 2;
        if (spans)
            spans[n] = (query_span){start, at - start};
        n++;
        if (strncmp(fts + at, " OR ", 4) != 0)
            break;
        at += 4;
    }
    *i = at;
    return (long)n;
}

size_t query_fts_phrases(const char *fts, query_span *pos, size_t max, size_t *n_neg)
{
    *n_neg = 0;
    if (!fts)
        return 0;
    size_t i = fts[0] == '(';
    long n = read_units(fts, &i, pos, max);
    if (n <= 0)
        return 0;
    if (fts[0] != '(')
        return fts[i] == '\0' ? (size_t)n : 0;
    if (strncmp(fts + i, ") NOT (", 7) != 0)
        return 0;
    i += 7;
    long neg = read_units(fts, &i, NULL, QUERY_MAX_UNITS);
    if (neg <= 0 || strcmp(fts + i, ")") != 0)
        return 0;
    *n_neg = (size_t)neg;
    return (size_t)n;
}
