/* chunk — heading-aware chunking of a parsed note.
 *
 * The body is first cut into blocks: one per non-blank line, except that a
 * code span of md_doc.code is a single atomic block. Blocks are grouped by
 * section (the text from one heading to the next). Then:
 *   - a section that fits the target is one chunk, and following sections
 *     are merged into it while the total fits and they stay under the first
 *     section's parent heading (sections directly under the root, and the
 *     text before the first heading, are not merged with their siblings);
 *     the merged chunk's heading path is the longest common prefix of the
 *     merged sections' paths (their deepest common heading), so a chunk
 *     never claims a heading that covers only part of it;
 *   - a section over the target is split greedily at blank lines (when that
 *     keeps a piece at least half full), else at line ends; a single line
 *     over the target is split at sentence ends, else word starts, else at
 *     a character boundary; consecutive pieces overlap by up to
 *     overlap_tokens, starting the overlap at a line or sentence start;
 *   - a tiny group (under overlap_tokens, e.g. a lone "# Title" line) that
 *     precedes a section needing a split becomes the start of its first
 *     piece instead of a chunk of its own.
 * Code blocks are never cut; one over the target becomes its own chunk.
 *
 * Token counts are kept in quarter tokens internally ("units"), additive
 * over lines: a word of up to 8 letters costs 1.25 tokens (the usual ~1.3
 * tokens per English word), each further letter a quarter token (bytes/4,
 * right for identifiers, URLs and long compounds), and each CJK character
 * one token. */
#include "chunk/chunk.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/mem.h"

enum { MAX_DEPTH = 6, OVERLAP_BYTES_PER_TOKEN = 12 };

typedef struct est {
    long q;   /* quarter tokens so far */
    int wl;   /* code points in the current word */
} est;

typedef struct blk {
    size_t start, end;
    long units;
    int code;  /* an atomic code span */
    int para;  /* preceded by a blank line */
} blk;

typedef struct hpath {
    int depth;
    size_t h[MAX_DEPTH]; /* indices into md_doc.headings */
} hpath;

typedef struct section {
    size_t b0, b1;  /* block range */
    long units;
    hpath path;
} section;

typedef struct ctx {
    const char *src;
    size_t len;
    const md_doc *doc;
    long target, overlap; /* in units */
    blk *b;
    size_t nb, cap_b;
    size_t *line_starts;
    size_t n_line_starts;
    chunk_list *out;
    size_t cap_out;
} ctx;

static int is_cjk(int32_t cp)
{
    return (cp >= 0x2E80 && cp <= 0x9FFF) || (cp >= 0xAC00 && cp <= 0xD7AF) ||
           (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0xFF00 && cp <= 0xFFEF) ||
           (cp >= 0x20000 && cp <= 0x3FFFF);
}

/* Lenient decode for counting only: invalid bytes count as one letter. */
static size_t decode(const unsigned char *s, size_t n, int32_t *cp)
{
    unsigned c = s[0];
    size_t k = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
    if (k > n) {
        *cp = 0xFFFD;
        return 1;
    }
    int32_t v = (int32_t)(k == 1 ? c : c & (0x3F >> (k - 1)));
    for (size_t i = 1; i < k; i++) {
        if ((s[i] & 0xC0) != 0x80) {
            *cp = 0xFFFD;
            return 1;
        }
        v = (v << 6) | (s[i] & 0x3F);
    }
    *cp = v;
    return k;
}

static int is_space(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

/* Feed the code point at s; returns its length in bytes. */
static size_t est_step(est *e, const unsigned char *s, size_t n)
{
    if (s[0] < 0x80) {
        if (is_space(s[0])) {
            e->wl = 0;
        } else {
            e->wl++;
            e->q += e->wl == 1 ? 5 : e->wl > 8;
        }
        return 1;
    }
    int32_t cp;
    size_t k = decode(s, n, &cp);
    if (is_cjk(cp)) {
        e->wl = 0;
        e->q += 4;
    } else {
        e->wl++;
        e->q += e->wl == 1 ? 5 : e->wl > 8;
    }
    return k;
}

/* An ASCII byte that is not white space: a letter of a word to units(). */
static inline int ascii_word_byte(unsigned char c)
{
    return c < 0x80 && c != ' ' && (unsigned)(c - '\t') > '\r' - '\t';
}

static long units(const char *s, size_t n)
{
    est e = {0, 0};
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        /* This loop is the chunker's hot spot: a run of ASCII word bytes
         * is counted at once, as est_step would byte by byte (the word's
         * first byte 5, each byte past its eighth 1). */
        unsigned char c = u[i];
        if (c >= 0x80) {
            i += est_step(&e, u + i, n - i);
        } else if (!ascii_word_byte(c)) {
            e.wl = 0;
            i++;
        } else {
            size_t j = i + 1;
            while (j < n && ascii_word_byte(u[j]))
                j++;
            int wl = e.wl + (int)(j - i);
            e.q += (e.wl == 0 ? 5 : 0) + (wl > 8 ? wl - (e.wl > 8 ? e.wl : 8) : 0);
            e.wl = wl;
            i = j;
        }
    }
    return e.q;
}

int chunk_estimate_tokens(const char *s, size_t len)
{
    long q = units(s, len);
    return (int)((q + 2) / 4);
}

/* ---- line numbers ---- */

static void index_lines(ctx *c)
{
    size_t cap = 0;
    xgrow(&c->line_starts, &cap, 1, sizeof *c->line_starts);
    c->line_starts[c->n_line_starts++] = 0;
    for (const char *q = c->src, *e = c->src + c->len; q < e; q++) {
        q = memchr(q, '\n', (size_t)(e - q));
        if (!q)
            break;
        xgrow(&c->line_starts, &cap, c->n_line_starts + 1, sizeof *c->line_starts);
        c->line_starts[c->n_line_starts++] = (size_t)(q - c->src) + 1;
    }
}

/* 1-based line holding byte `pos`. */
static int line_of(const ctx *c, size_t pos)
{
    size_t lo = 0, hi = c->n_line_starts; /* first start > pos */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (c->line_starts[mid] <= pos)
            lo = mid + 1;
        else
            hi = mid;
    }
    return (int)lo;
}

/* ---- output ---- */

/* A chunk of text [start, end); q: its units when the caller knows them,
 * else -1. */
static void emit(ctx *c, size_t start, size_t end, const hpath *p, long q)
{
    if (end <= start)
        return;
    chunk_list *o = c->out;
    xgrow(&o->items, &c->cap_out, o->n + 1, sizeof *o->items);
    chunk *ch = &o->items[o->n++];
    memset(ch, 0, sizeof *ch);
    ch->start_byte = start;
    ch->end_byte = end;
    ch->line_start = line_of(c, start);
    ch->line_end = line_of(c, end - 1);
    ch->tokens = (int)(((q >= 0 ? q : units(c->src + start, end - start)) + 2) / 4);
    if (p->depth > 0) {
        ch->heading_path = xmalloc((size_t)p->depth * sizeof *ch->heading_path);
        for (int i = 0; i < p->depth; i++)
            ch->heading_path[i] = xstrdup(c->doc->headings[p->h[i]].text);
        ch->n_heading_path = (size_t)p->depth;
    }
}

/* ---- blocks and sections ---- */

static void add_block(ctx *c, size_t a, size_t e, int code, int para)
{
    xgrow(&c->b, &c->cap_b, c->nb + 1, sizeof *c->b);
    c->b[c->nb++] = (blk){a, e, units(c->src + a, e - a), code, para};
}

static int blank_line(const char *s, size_t a, size_t e)
{
    for (; a < e; a++)
        if (!is_space((unsigned char)s[a]))
            return 0;
    return 1;
}

static void build_blocks(ctx *c)
{
    const md_doc *d = c->doc;
    size_t ci = 0, at = d->body_start;
    int para = 1;
    while (at < c->len) {
        const char *nl = memchr(c->src + at, '\n', c->len - at);
        size_t next = nl ? (size_t)(nl - c->src) + 1 : c->len;
        while (ci < d->n_code && d->code[ci].end <= at)
            ci++;
        if (ci < d->n_code && d->code[ci].start < next) {
            /* The span (and any span it runs into) is one block. */
            size_t e = next;
            while (ci < d->n_code && d->code[ci].start < e) {
                if (d->code[ci].end > e)
                    e = d->code[ci].end;
                ci++;
            }
            if (e > c->len)
                e = c->len;
            add_block(c, at, e, 1, para);
            para = 0;
            at = e;
            continue;
        }
        if (blank_line(c->src, at, next)) {
            para = 1;
        } else {
            add_block(c, at, next, 0, para);
            para = 0;
        }
        at = next;
    }
}

static size_t build_sections(ctx *c, section **out)
{
    const md_doc *d = c->doc;
    size_t n = d->n_headings + 1;
    section *s = xcalloc(n, sizeof *s);
    int lv[MAX_DEPTH];
    hpath cur = {0, {0}};
    for (size_t i = 0; i < d->n_headings; i++) {
        int level = d->headings[i].level;
        level = level < 1 ? 1 : level > MAX_DEPTH ? MAX_DEPTH : level;
        while (cur.depth > 0 && lv[cur.depth - 1] >= level)
            cur.depth--;
        lv[cur.depth] = level;
        cur.h[cur.depth++] = i;
        s[i + 1].path = cur;
    }
    size_t bi = 0;
    for (size_t k = 0; k < n; k++) {
        size_t end = k < d->n_headings ? d->headings[k].start_byte : (size_t)-1;
        s[k].b0 = bi;
        while (bi < c->nb && c->b[bi].start < end) {
            s[k].units += c->b[bi].units;
            bi++;
        }
        s[k].b1 = bi;
    }
    *out = s;
    return n;
}

static int lcp(const hpath *a, const hpath *b)
{
    int n = 0;
    while (n < a->depth && n < b->depth && a->h[n] == b->h[n])
        n++;
    return n;
}

/* ---- splitting ---- */

static int cjk_stop_before(const char *s, size_t lo, size_t i)
{
    /* 。！？ end a sentence without a following space. */
    if (i < lo + 3)
        return 0;
    const char *p = s + i - 3;
    return memcmp(p, "\xE3\x80\x82", 3) == 0 || memcmp(p, "\xEF\xBC\x81", 3) == 0 ||
           memcmp(p, "\xEF\xBC\x9F", 3) == 0;
}

/* A sentence starts at i: a non-space after ". ", "! ", "? " or after a CJK
 * full stop. lo bounds the look-back. */
static int sentence_start(const char *s, size_t lo, size_t i)
{
    if (i <= lo || is_space((unsigned char)s[i]))
        return 0;
    if (cjk_stop_before(s, lo, i))
        return 1;
    size_t j = i;
    while (j > lo && (s[j - 1] == ' ' || s[j - 1] == '\t'))
        j--;
    if (j == i || j <= lo + 1)
        return 0;
    /* "1. item" numbers a list; it does not end a sentence. */
    if (s[j - 1] == '.' && s[j - 2] >= '0' && s[j - 2] <= '9')
        return 0;
    return s[j - 1] == '.' || s[j - 1] == '!' || s[j - 1] == '?';
}

/* Start of the overlap for a piece ending at hi: the earliest line start
 * in (lo, hi) with at most c->overlap units after it, else the earliest
 * such sentence start, else hi (no overlap). lo must not lie inside a code
 * block. One forward pass: candidates sit at word boundaries, where the
 * units after them are the total minus the units before them. */
static size_t overlap_start(const ctx *c, size_t lo, size_t hi)
{
    if (c->overlap <= 0 || hi <= lo + 1)
        return hi;
    const unsigned char *u = (const unsigned char *)c->src;
    size_t bound = (size_t)(c->overlap / 4 + 1) * OVERLAP_BYTES_PER_TOKEN;
    size_t from = hi - lo > bound ? hi - bound : lo + 1;
    while (from < hi && (u[from] & 0xC0) == 0x80)
        from++;
    long total = units(c->src + from, hi - from);
    est e = {0, 0};
    size_t sent = hi;
    for (size_t i = from; i < hi;) {
        if (total - e.q <= c->overlap) {
            if (u[i - 1] == '\n' && u[i] != '\n' && u[i] != '\r')
                return i; /* whole lines read better than a sentence cut */
            if (sent == hi && sentence_start(c->src, lo, i))
                sent = i;
        }
        i += est_step(&e, u + i, hi - i);
    }
    return sent;
}

/* Split the over-long text line b into pieces, the first starting at *cur
 * (at or before b's start); emits all but the last, whose start and units
 * it returns so the caller can keep adding lines to it. */
static void split_line(ctx *c, const blk *b, size_t *cur, long *acc, const hpath **pp,
                       const hpath *rest)
{
    const unsigned char *u = (const unsigned char *)c->src;
    size_t pos = *cur, prev_cut = b->start;
    for (;;) {
        est e = {0, 0};
        size_t i = pos, sent = 0, word = 0, last = pos;
        long at_sent = 0;
        int prev_cjk = 0;
        while (i < b->end) {
            if (i > prev_cut) {
                if (sentence_start(c->src, pos, i)) {
                    sent = i;
                    at_sent = e.q;
                } else if (!is_space(u[i]) && (is_space(u[i - 1]) || prev_cjk)) {
                    word = i;
                }
            }
            int32_t cp = 0;
            if (u[i] >= 0x80)
                decode(u + i, b->end - i, &cp);
            prev_cjk = is_cjk(cp);
            last = i;
            i += est_step(&e, u + i, b->end - i);
            if (e.q > c->target)
                break;
        }
        if (e.q <= c->target) {
            *cur = pos;
            *acc = e.q;
            return;
        }
        size_t cut = sent && at_sent >= c->target / 2 ? sent : word ? word : last;
        if (cut <= prev_cut) /* one character past the target: keep it */
            cut = i;
        emit(c, pos, cut, *pp, -1);
        *pp = rest;
        /* The overlap stays inside this line: what preceded it may be a
         * code block. */
        pos = overlap_start(c, pos < b->start ? b->start - 1 : pos, cut);
        prev_cut = cut;
    }
}

/* Greedy split of blocks [b0, b1) into pieces of at most the target. */
static void split_range(ctx *c, size_t b0, size_t b1, const hpath *first, const hpath *rest)
{
    const hpath *pp = first;
    size_t cur = c->b[b0].start, j = b0, pcut = 0;
    long acc = 0;
    int taken = 0;
    while (j < b1) {
        const blk *k = &c->b[j];
        if (acc + k->units <= c->target || (taken == 0 && k->code && cur == k->start)) {
            if (taken > 0 && k->para && acc >= c->target / 2)
                pcut = j;
            acc += k->units;
            taken++;
            j++;
            continue;
        }
        if (!k->code && k->units > c->target && acc <= c->overlap) {
            /* An over-long line: split it, keeping what little is pending
             * (an overlap, a lone heading line) at the start of its first
             * piece. */
            split_line(c, k, &cur, &acc, &pp, rest);
            taken = 1;
            j++;
            continue;
        }
        if (taken == 0) { /* the overlap leaves no room: drop it */
            cur = k->start;
            acc = 0;
            continue;
        }
        size_t cut = pcut ? pcut : j;
        size_t end = c->b[cut - 1].end;
        emit(c, cur, end, pp, -1);
        pp = rest;
        /* The overlap may reach back over text lines of this piece, never
         * into a code block. */
        size_t ov = end;
        if (!c->b[cut - 1].code) {
            size_t m = cut - 1;
            while (m > b0 && !c->b[m - 1].code && c->b[m - 1].start > cur)
                m--;
            ov = overlap_start(c, c->b[m].start > cur ? c->b[m].start - 1 : cur, end);
        }
        if (ov < end) {
            cur = ov;
            acc = units(c->src + ov, end - ov);
        } else {
            cur = c->b[cut].start;
            acc = 0;
        }
        j = cut;
        taken = 0;
        pcut = 0;
    }
    if (taken > 0)
        emit(c, cur, c->b[b1 - 1].end, pp, -1);
}

/* The units of the text from block b0's start to block b1-1's end: the
 * sum of the blocks' when each block before the last ends a line (the
 * count starts afresh after white space, and what lies between blocks is
 * blank lines), else -1 (a code span may end inside a line). */
static long blocks_units(const ctx *c, size_t b0, size_t b1)
{
    long q = 0;
    for (size_t k = b0; k < b1; k++) {
        if (k + 1 < b1 && c->src[c->b[k].end - 1] != '\n')
            return -1;
        q += c->b[k].units;
    }
    return q;
}

static void chunk_sections(ctx *c, section *s, size_t ns)
{
    size_t i = 0;
    while (i < ns) {
        if (s[i].b0 == s[i].b1) {
            i++;
            continue;
        }
        if (s[i].units > c->target) {
            split_range(c, s[i].b0, s[i].b1, &s[i].path, &s[i].path);
            i++;
            continue;
        }
        hpath g = s[i].path;
        /* Merge only under a real common heading, never at the root. */
        int need = s[i].path.depth > 2 ? s[i].path.depth - 1 : 1;
        long acc = s[i].units;
        size_t k = i + 1, last_b1 = s[i].b1;
        for (; k < ns; k++) {
            if (s[k].b0 == s[k].b1)
                continue;
            int l = lcp(&g, &s[k].path);
            if (l < need || acc + s[k].units > c->target)
                break;
            acc += s[k].units;
            g.depth = l;
            last_b1 = s[k].b1;
        }
        if (k < ns && acc < c->overlap && s[k].units > c->target &&
            lcp(&g, &s[k].path) >= need) {
            g.depth = lcp(&g, &s[k].path);
            split_range(c, s[i].b0, s[k].b1, &g, &s[k].path);
            i = k + 1;
            continue;
        }
        emit(c, c->b[s[i].b0].start, c->b[last_b1 - 1].end, &g,
             blocks_units(c, s[i].b0, last_b1));
        i = k;
    }
}

trove_err chunk_note(const char *src, size_t len, const md_doc *doc, const chunk_opts *opts,
                     chunk_list *out)
{
    out->items = NULL;
    out->n = 0;
    chunk_opts o = opts ? *opts : CHUNK_OPTS_DEFAULT;
    if (o.target_tokens <= 0)
        o.target_tokens = CHUNK_OPTS_DEFAULT.target_tokens;
    if (o.overlap_tokens < 0)
        o.overlap_tokens = 0;
    /* An overlap over half the target could stall the greedy split. */
    if (o.overlap_tokens > o.target_tokens / 2)
        o.overlap_tokens = o.target_tokens / 2;
    if (!src || doc->body_start >= len)
        return TROVE_OK;
    ctx c = {.src = src, .len = len, .doc = doc, .out = out};
    c.target = (long)o.target_tokens * 4;
    c.overlap = (long)o.overlap_tokens * 4;
    build_blocks(&c);
    if (c.nb > 0) {
        index_lines(&c);
        section *s;
        size_t ns = build_sections(&c, &s);
        chunk_sections(&c, s, ns);
        free(s);
    }
    free(c.b);
    free(c.line_starts);
    return TROVE_OK;
}

void chunk_list_free(chunk_list *list)
{
    if (!list)
        return;
    for (size_t i = 0; i < list->n; i++) {
        for (size_t j = 0; j < list->items[i].n_heading_path; j++)
            free(list->items[i].heading_path[j]);
        free(list->items[i].heading_path);
    }
    free(list->items);
    list->items = NULL;
    list->n = 0;
}
