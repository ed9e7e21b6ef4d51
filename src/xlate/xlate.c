/* xlate — see xlate.h. */
#include "xlate/xlate.h"

#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "text/query.h"
#include "text/tok.h"
#include "text/tok_int.h"
#include "util/fsutil.h"
#include "util/mem.h"

/* ---- the process-wide dictionary --------------------------------------- */

static struct {
    pthread_once_t once;
    xlate_warn_fn warn;
    xdict *d;
    atomic_flag damage_told;
} g = {.once = PTHREAD_ONCE_INIT, .damage_told = ATOMIC_FLAG_INIT};

void xlate_set_warn(xlate_warn_fn warn)
{
    g.warn = warn;
}

char *xlate_default_dict_path(void)
{
    return fs_data_file("TROVE_XL_DICT", XDICT_FILE);
}

static void tell(const char *why)
{
    if (!g.warn)
        return;
    tbuf m = {0};
    tbuf_printf(&m, "%s; searching without translation (set TROVE_XL_DICT or rebuild trove)",
                why);
    g.warn(tbuf_cstr(&m));
    tbuf_free(&m);
}

static void load_once(void)
{
    char *path = xlate_default_dict_path();
    if (xdict_open(path, &g.d) != TROVE_OK)
        tell(trove_errmsg());
    free(path);
}

/* A block found damaged by a lookup (xdict_damage) is told once, like a
 * damaged file at open; the dictionary is off from then on. */
static int damaged(const xdict *d)
{
    const char *why = xdict_damage(d);
    if (why && d == g.d && !atomic_flag_test_and_set(&g.damage_told))
        tell(why);
    return why != NULL;
}

const xdict *xlate_dict(void)
{
    pthread_once(&g.once, load_once);
    return g.d && !damaged(g.d) ? g.d : NULL;
}

/* ---- English keys ------------------------------------------------------- */

typedef struct toks {
    char *t[XLATE_MAX_WORDS * 4];
    unsigned char cjk[XLATE_MAX_WORDS * 4];
    size_t n;
} toks;

static int collect(void *ctx, const char *token, size_t len, size_t start, size_t end)
{
    (void)start, (void)end;
    toks *ts = ctx;
    if (ts->n >= sizeof ts->t / sizeof *ts->t)
        return 1;   /* enough: the rest of a long query is not translated */
    ts->cjk[ts->n] = tok_has_cjk(token, len) != 0;
    ts->t[ts->n++] = xstrndup(token, len);
    return 0;
}

static void toks_free(toks *ts)
{
    for (size_t i = 0; i < ts->n; i++)
        free(ts->t[i]);
    ts->n = 0;
}

static int keep_first(void *ctx, const char *token, size_t len, size_t start, size_t end)
{
    (void)start, (void)end;
    tbuf *b = ctx;
    tbuf_append(b, token, len);
    return 1;
}

/* The tokenizer's stem of one folded word. */
static void stem_into(const char *w, tbuf *out)
{
    tok_opts so = {.stem = 1, .query = 1, .skip_cjk = 1};
    tok_run(&so, w, strlen(w), out, keep_first);
}

size_t xlate_en_key(const char *text, size_t len, tbuf *out)
{
    tbuf_reset(out);
    toks ts = {0};
    tok_opts o = {.query = 1, .skip_cjk = 1};
    tok_run(&o, text, len, &ts, collect);
    size_t words = 0;
    for (size_t i = 0; i < ts.n; i++) {
        if (query_is_stopword(ts.t[i], strlen(ts.t[i])))
            continue;
        if (words++)
            tbuf_putc(out, ' ');
        stem_into(ts.t[i], out);
    }
    toks_free(&ts);
    return words;
}

/* ---- translating a query ------------------------------------------------- */

typedef struct xq {
    const xdict *d;
    xlate_df_fn df;
    void *df_ctx;
    xlate_out *o;
    size_t cap;
    int words;   /* the query has Chinese words of two or more characters */
} xq;

static void add(xlate_out *o, size_t *cap, const char *from, const xdict_val *v)
{
    for (size_t i = 0; i < o->n; i++)
        if (strlen(o->to[i]) == v->len && memcmp(o->to[i], v->s, v->len) == 0)
            return;
    if (o->n + 1 > *cap) {
        size_t c = *cap;
        xgrow(&o->from, &c, o->n + 1, sizeof *o->from);
        xgrow(&o->to, cap, o->n + 1, sizeof *o->to);
    }
    o->from[o->n] = xstrdup(from);
    o->to[o->n++] = xstrndup(v->s, v->len);
}

/* The candidates v[0..n) of source word `from` that the index holds: at
 * most XLATE_PER_WORD of its first XLATE_TRIES (each is a look in the
 * index; later ones are rarely the word's meaning), best first by
 *   log(1 + chunks holding it) - XLATE_RANK_COST * its place in the list,
 * and none held by fewer than 1/XLATE_DF_RATIO of the chunks that hold
 * the word's most used candidate. Of a word's senses the vault's own is
 * the one it uses: mobile -> 移动, not 行动; region -> 区域, not 地区;
 * content -> 内容, and 满足 ("content" as satisfied), in two notes, would
 * outweigh it as a rare word of the BM25 list. Returns how many were
 * added. (Tuned on bench/xlang_eval.py --sets dev, docs/performance.md.) */
static size_t add_kept(xq *x, const char *from, const xdict_val *v, size_t n)
{
    if (n > XLATE_TRIES)
        n = XLATE_TRIES;
    size_t df[XLATE_TRIES], best = 0;
    double score[XLATE_TRIES];
    for (size_t k = 0; k < n; k++) {
        df[k] = x->df ? x->df(x->df_ctx, v[k].s, v[k].len) : 1;
        if (df[k] > best)
            best = df[k];
    }
    for (size_t k = 0; k < n; k++)
        score[k] = df[k] && df[k] * XLATE_DF_RATIO >= best
                       ? log(1.0 + (double)df[k]) - XLATE_RANK_COST * (double)k
                       : -INFINITY;
    size_t kept = 0;
    while (kept < XLATE_PER_WORD) {
        size_t at = n;
        for (size_t k = 0; k < n; k++)
            if (score[k] > -INFINITY && (at == n || score[k] > score[at]))
                at = k;
        if (at == n)
            break;
        add(x->o, &x->cap, from, &v[at]);
        score[at] = -INFINITY;
        kept++;
    }
    return kept;
}

/* ---- English words: the gloss's word, not only its stem ------------------ */

static int ends_with(const char *s, size_t n, const char *suffix)
{
    size_t k = strlen(suffix);
    return n >= k && memcmp(s + n - k, suffix, k) == 0;
}

/* Whether `form` is `base` inflected: +s, +es, +ed, +d, +ing, a final e
 * dropped (store -> storing), y -> ies/ied, a doubled final consonant
 * (set -> setting). Derivations are not: "important" is no form of
 * "import", "developer" none of "develop". */
static int inflected(const char *base, size_t bn, const char *form, size_t fn)
{
    if (fn <= bn || memcmp(form, base, bn) != 0) {
        if (bn > 1 && base[bn - 1] == 'e' && fn >= bn && memcmp(form, base, bn - 1) == 0)
            return (fn == bn + 2 && ends_with(form, fn, "ed")) ||
                   (fn == bn + 2 && ends_with(form, fn, "ing"));
        if (bn > 1 && base[bn - 1] == 'y' && fn == bn + 2 && memcmp(form, base, bn - 1) == 0)
            return ends_with(form, fn, "ies") || ends_with(form, fn, "ied");
        return 0;
    }
    const char *rest = form + bn;
    size_t rn = fn - bn;
    static const char *const plain[] = {"s", "es", "ed", "d", "ing"};
    for (size_t i = 0; i < sizeof plain / sizeof *plain; i++)
        if (rn == strlen(plain[i]) && memcmp(rest, plain[i], rn) == 0)
            return plain[i][0] != 'd' || base[bn - 1] == 'e';
    return rn >= 3 && rest[0] == base[bn - 1] &&
           ((rn == 3 && memcmp(rest + 1, "ed", 2) == 0) ||
            (rn == 4 && memcmp(rest + 1, "ing", 3) == 0));
}

static int same_word(const char *a, size_t an, const char *b, size_t bn)
{
    return (an == bn && memcmp(a, b, an) == 0) || inflected(a, an, b, bn) ||
           inflected(b, bn, a, an);
}

/* Whether gloss term `term` (folded) is the query's words `w[0..n)`: the
 * same content words, each the same or an inflection of the other. */
static int is_the_term(const char *const *w, size_t n, const char *term, size_t len)
{
    size_t i = 0, at = 0;
    while (at < len) {
        size_t e = at;
        while (e < len && term[e] != ' ')
            e++;
        char word[XDICT_TERM_MAX];
        size_t wl = e - at < sizeof word - 1 ? e - at : sizeof word - 1;
        memcpy(word, term + at, wl);
        word[wl] = '\0';
        /* "plug-in" stands for "plugin" (its key was made without '-') */
        size_t k = 0;
        for (size_t j = 0; j < wl; j++)
            if (word[j] != '-')
                word[k++] = word[j];
        word[k] = '\0';
        if (k && !query_is_stopword(word, k)) {
            if (i >= n || !same_word(w[i], strlen(w[i]), word, k))
                return 0;
            i++;
        }
        at = e + 1;
    }
    return i == n;
}

/* The en values of v[0..n) whose gloss term is the query's words, as
 * Chinese words (the term cut off), in place; returns how many. */
static size_t en_matches(const char *const *w, size_t n_w, xdict_val *v, size_t n)
{
    size_t kept = 0;
    for (size_t k = 0; k < n; k++) {
        const char *sep = memchr(v[k].s, XDICT_SURFACE_SEP, v[k].len);
        if (!sep || sep == v[k].s)
            continue;
        const char *term = sep + 1;
        size_t tl = v[k].len - (size_t)(term - v[k].s);
        if (is_the_term(w, n_w, term, tl))
            v[kept++] = (xdict_val){v[k].s, (size_t)(sep - v[k].s)};
    }
    return kept;
}

/* The Chinese words v[0..n) of an English source word, added as add_kept
 * does, but single characters only when no word of two or more is held:
 * a character is a bound form of many senses (记 for "notes", 将 for
 * "commands", 以 for "using") and matches nearly every Chinese note. */
static size_t add_kept_zh(xq *x, const char *from, const xdict_val *v, size_t n)
{
    xdict_val words[XDICT_EN_VALS], chars[XDICT_EN_VALS];
    size_t nw = 0, nc = 0;
    for (size_t k = 0; k < n && k < XDICT_EN_VALS; k++) {
        size_t i = 0;
        tok_utf8_next(v[k].s, v[k].len, &i);
        if (i < v[k].len)
            words[nw++] = v[k];
        else
            chars[nc++] = v[k];
    }
    size_t kept = add_kept(x, from, words, nw);
    return kept ? kept : add_kept(x, from, chars, nc > 0);
}

/* Chinese words of every kind of text that the query's function-word list
 * (text/query.h) keeps, as they ask nothing of the notes: translated, they
 * become English words of every note ("can may", "within among", 中的
 * "hit the target"). */
static const char *const general_zh[] = {
    "一种", "上", "下", "不", "中", "中的", "也就是", "以及", "使用", "关于", "其他", "到", "可",
    "可以", "可能", "有", "来", "比如", "每个", "没有", "能够", "进行", "通过", "需要", "用", "用于",
    "所有", "时", "会", "当", "这里", "那里", "或者",
};

static int general_word(const char *w, size_t len)
{
    for (size_t i = 0; i < sizeof general_zh / sizeof *general_zh; i++)
        if (strlen(general_zh[i]) == len && memcmp(general_zh[i], w, len) == 0)
            return 1;
    return 0;
}

/* Whether Chinese text w[0..len) is worth translating: no function or
 * general word, and no single character when the query has words (a
 * character alone is a bound form with a dozen senses: 本 "root origin",
 * 更 "change or replace"). */
static int zh_translatable(const xq *x, const char *w, size_t len)
{
    size_t i = 0;
    tok_utf8_next(w, len, &i);
    return !query_zh_function_word(w, len) && !general_word(w, len) && (i < len || !x->words);
}

/* A Chinese word: its own entry, else the longest entries it is made of
 * (遗忘曲线 is one word to the segmenter, 遗忘 + 曲线 to the dictionary).
 * Returns the number of pieces translated. */
static size_t translate_zh(xq *x, const char *w)
{
    size_t len = strlen(w), pieces = 0;
    xdict_val v[XDICT_ZH_VALS];
    const xdict *d = x->d;
    if (!zh_translatable(x, w, len))
        return 0;
    size_t got = xdict_zh(d, w, len, v, XDICT_ZH_VALS);
    if (got)
        return add_kept(x, w, v, got) > 0;
    for (size_t at = 0; at < len;) {
        size_t ends[5] = {0}, n_ends = 0, i = at;
        while (i < len && n_ends < 4) {
            tok_utf8_next(w, len, &i);
            ends[++n_ends] = i;
        }
        size_t take = 0;
        for (size_t k = n_ends; k >= 1 && !take; k--) {
            size_t plen = ends[k] - at;
            if (!zh_translatable(x, w + at, plen))
                continue;
            got = xdict_zh(d, w + at, plen, v, XDICT_ZH_VALS);
            if (got) {
                char *piece = xstrndup(w + at, plen);
                pieces += add_kept(x, piece, v, got) > 0;
                free(piece);
                take = plen;
            }
        }
        at += take ? take : ends[1] - at;
    }
    return pieces;
}

/* Two or three neighbouring Chinese words that are one dictionary entry
 * (间隔 + 重复 = 间隔重复 "spaced repetition"): how many were used, 0 none. */
static size_t join_zh(xq *x, const toks *ts, size_t i)
{
    for (size_t k = 3; k >= 2; k--) {
        if (i + k > ts->n)
            continue;
        tbuf b = {0};
        int ok = 1;
        for (size_t j = i; j < i + k && ok; j++) {
            ok = ts->cjk[j];
            tbuf_puts(&b, ts->t[j]);
        }
        xdict_val v[XDICT_ZH_VALS];
        size_t got = ok ? xdict_zh(x->d, b.data, b.len, v, XDICT_ZH_VALS) : 0;
        size_t kept = got ? add_kept(x, b.data, v, got) : 0;
        tbuf_free(&b);
        if (kept)
            return k;
    }
    return 0;
}

static int latin_word(const toks *ts, size_t i)
{
    const char *w = ts->t[i];
    if (ts->cjk[i] || query_is_stopword(w, strlen(w)))
        return 0;
    return strspn(w, "0123456789") < strlen(w);   /* numbers stay as they are */
}

void xlate_query(const xdict *d, const char *query, xlate_df_fn df, void *df_ctx,
                 xlate_out *out)
{
    memset(out, 0, sizeof *out);
    xq x = {d, df, df_ctx, out, 0, 0};
    toks ts = {0};
    tok_opts o = {.query = 1};
    if (d && query)
        tok_run(&o, query, strlen(query), &ts, collect);
    for (size_t i = 0; i < ts.n && !x.words; i++) {
        size_t at = 0, len = strlen(ts.t[i]);
        tok_utf8_next(ts.t[i], len, &at);
        x.words = ts.cjk[i] && at < len;
    }
    size_t done = 0;
    tbuf key = {0}, pair = {0};
    for (size_t i = 0; i < ts.n && done < XLATE_MAX_WORDS; i++) {
        xdict_val v[XDICT_EN_VALS];
        size_t got = 0;
        const char *w = ts.t[i];
        if (ts.cjk[i]) {
            size_t joined = join_zh(&x, &ts, i);
            if (joined) {
                i += joined - 1;
                done++;
            } else {
                done += translate_zh(&x, w);
            }
            continue;
        }
        if (!latin_word(&ts, i))
            continue;
        /* the next content word, skipping stopwords: "point of view" */
        size_t j = i + 1;
        while (j < ts.n && !ts.cjk[j] && query_is_stopword(ts.t[j], strlen(ts.t[j])))
            j++;
        if (j < ts.n && latin_word(&ts, j)) {
            tbuf_reset(&pair);
            tbuf_printf(&pair, "%s %s", w, ts.t[j]);
            const char *both[2] = {w, ts.t[j]};
            if (xlate_en_key(pair.data, pair.len, &key) == 2)
                got = en_matches(both, 2, v, xdict_en(d, key.data, key.len, v, XDICT_EN_VALS));
            if (got && add_kept_zh(&x, pair.data, v, got)) {
                done++;
                i = j;
                continue;
            }
            got = 0;
        }
        if (xlate_en_key(w, strlen(w), &key) == 1)
            got = en_matches(&w, 1, v, xdict_en(d, key.data, key.len, v, XDICT_EN_VALS));
        done += got && add_kept_zh(&x, w, v, got);
    }
    tbuf_free(&key);
    tbuf_free(&pair);
    toks_free(&ts);
    if (d && damaged(d))
        xlate_out_free(out);   /* what a damaged block gave is not trusted */
    tbuf text = {0};
    for (size_t i = 0; i < out->n; i++) {
        if (i)
            tbuf_putc(&text, ' ');
        tbuf_puts(&text, out->to[i]);
    }
    out->text = text.data ? tbuf_detach(&text) : xstrdup("");
}

void xlate_out_free(xlate_out *o)
{
    for (size_t i = 0; i < o->n; i++) {
        free(o->from[i]);
        free(o->to[i]);
    }
    free(o->from);
    free(o->to);
    free(o->text);
    memset(o, 0, sizeof *o);
}
