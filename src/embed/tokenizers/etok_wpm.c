/* etok_wpm — the "bert" tokenizer: BERT's basic tokenizer, then WordPiece.
 *
 * Basic tokenizer (as HF's BertTokenizer): drop NUL, U+FFFD and control
 * characters; whitespace ends a word; every CJK ideograph is a word of its
 * own; for uncased vocabularies lower-case, decompose (NFD) and drop
 * non-spacing marks; every punctuation character (Unicode P* and the ASCII
 * symbols) is a word of its own. WordPiece: per word, repeatedly take the
 * longest vocabulary piece starting at the current position — the first
 * one spelt "\u2581"+text in GGUF, the rest bare — and give the whole word
 * [UNK] when some position has no piece or the word exceeds 100
 * characters. */
#include "embed/tokenizers/etok_int.h"

#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "util/mem.h"

#define WPM_MAX_WORD_CHARS 100
#define SPACE_MARK "\xE2\x96\x81"

typedef struct wpm {
    const etok *t;
    etok_ids *out;
    tbuf word;      /* SPACE_MARK + the word's UTF-8 */
    size_t *ends;   /* byte offset in word.data after each character */
    size_t n_chars, cap;
} wpm;

static bool is_ws(uint32_t cp) {
    if (cp == ' ' || cp == '\t' || cp == '\n' || cp == '\r') return true;
    utf8proc_category_t c = utf8proc_category((utf8proc_int32_t)cp);
    return c == UTF8PROC_CATEGORY_ZS || c == UTF8PROC_CATEGORY_ZL || c == UTF8PROC_CATEGORY_ZP;
}

static bool is_control(uint32_t cp) {
    if (cp == '\t' || cp == '\n' || cp == '\r') return false;
    switch (utf8proc_category((utf8proc_int32_t)cp)) {
    case UTF8PROC_CATEGORY_CC:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_CS:
    case UTF8PROC_CATEGORY_CO:
    case UTF8PROC_CATEGORY_CN: return true;
    default: return false;
    }
}

static bool is_punct(uint32_t cp) {
    if ((cp >= 33 && cp <= 47) || (cp >= 58 && cp <= 64) || (cp >= 91 && cp <= 96) ||
        (cp >= 123 && cp <= 126))
        return true;
    switch (utf8proc_category((utf8proc_int32_t)cp)) {
    case UTF8PROC_CATEGORY_PC:
    case UTF8PROC_CATEGORY_PD:
    case UTF8PROC_CATEGORY_PS:
    case UTF8PROC_CATEGORY_PE:
    case UTF8PROC_CATEGORY_PI:
    case UTF8PROC_CATEGORY_PF:
    case UTF8PROC_CATEGORY_PO: return true;
    default: return false;
    }
}

/* The CJK blocks BERT's tokenizer isolates (not Hangul or kana). */
static bool is_cjk(uint32_t cp) {
    return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) ||
           (cp >= 0x20000 && cp <= 0x2A6DF) || (cp >= 0x2A700 && cp <= 0x2B73F) ||
           (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B820 && cp <= 0x2CEAF) ||
           (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

/* Greedy longest-match-first over the word's characters. */
static void wordpiece(wpm *w) {
    const etok *t = w->t;
    etok_ids *out = w->out;
    if (w->n_chars > WPM_MAX_WORD_CHARS) {
        etok_ids_push(out, t->sp.unk);
        return;
    }
    size_t first = out->n;
    const char *s = w->word.data;
    size_t start_char = 0, start_byte = 0; /* the first piece includes the mark */
    while (start_char < w->n_chars) {
        int32_t id = -1;
        size_t e = w->n_chars;
        for (; e > start_char; e--) {
            size_t n = w->ends[e - 1] - start_byte;
            if (n > t->max_len) continue;
            id = etok_lookup(t, s + start_byte, n);
            if (id >= 0) break;
        }
        if (id < 0) {
            out->n = first;
            etok_ids_push(out, t->sp.unk);
            return;
        }
        etok_ids_push(out, id);
        start_byte = w->ends[e - 1];
        start_char = e;
    }
}

static void end_word(wpm *w) {
    if (w->n_chars) wordpiece(w);
    w->n_chars = 0;
    tbuf_reset(&w->word);
    tbuf_append(&w->word, SPACE_MARK, 3);
}

static void add_char(wpm *w, uint32_t cp) {
    char u[4];
    size_t k = etok_utf8_encode(cp, u);
    tbuf_append(&w->word, u, k);
    if (w->n_chars == w->cap) xgrow(&w->ends, &w->cap, w->n_chars + 1, sizeof *w->ends);
    w->ends[w->n_chars++] = w->word.len;
}

/* After cleaning: punctuation splits, everything else joins the word. */
static void put_char(wpm *w, uint32_t cp) {
    if (is_punct(cp)) {
        end_word(w);
        add_char(w, cp);
        end_word(w);
    } else {
        add_char(w, cp);
    }
}

static void put_folded(wpm *w, uint32_t cp) {
    if (!w->t->lowercase) {
        put_char(w, cp);
        return;
    }
    utf8proc_int32_t dec[32];
    int bc = 0;
    utf8proc_ssize_t n = utf8proc_decompose_char(utf8proc_tolower((utf8proc_int32_t)cp), dec, 32,
                                                 UTF8PROC_DECOMPOSE, &bc);
    if (n < 0 || n > 32) {
        put_char(w, cp);
        return;
    }
    for (utf8proc_ssize_t i = 0; i < n; i++)
        if (utf8proc_category(dec[i]) != UTF8PROC_CATEGORY_MN) put_char(w, (uint32_t)dec[i]);
}

void etok_wpm_encode(const etok *t, const char *text, size_t len, etok_ids *out) {
    wpm w = {.t = t, .out = out};
    tbuf_append(&w.word, SPACE_MARK, 3);
    const uint8_t *s = (const uint8_t *)text;
    for (size_t i = 0; i < len;) {
        uint32_t cp;
        size_t k = etok_utf8_decode(s + i, len - i, &cp);
        if (k == 0) { /* invalid byte: U+FFFD, which BERT drops */
            i++;
            continue;
        }
        i += k;
        if (cp == 0 || cp == 0xFFFD || is_control(cp)) continue;
        if (is_ws(cp)) {
            end_word(&w);
        } else if (is_cjk(cp)) {
            end_word(&w);
            put_folded(&w, cp);
            end_word(&w);
        } else {
            put_folded(&w, cp);
        }
    }
    end_word(&w);
    tbuf_free(&w.word);
    free(w.ends);
}
