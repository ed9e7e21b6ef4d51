/* seg_dict — see seg_dict.h. */
#include "cjk/seg_dict.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "util/buf.h"
#include "util/esc.h"
#include "util/fmap.h"
#include "util/fsutil.h"
#include "util/mem.h"

#define BYTE_ORDER_MARK 0x01020304u
/* Longest dictionary word kept, in characters (jieba's longest is 16). */
#define MAX_WORD 64

static int han(uint32_t cp)
{
    return cp >= SEG_ROOT_BASE && cp < SEG_ROOT_BASE + SEG_ROOT_N;
}

/* Strict UTF-8 decoder for the compiler: -1 on a bad sequence. */
static long utf8_cp(const unsigned char *s, size_t len, size_t *i)
{
    unsigned c = s[*i];
    size_t n;
    uint32_t cp, min;
    if (c < 0x80) {
        (*i)++;
        return c;
    }
    if (c >= 0xC2 && c <= 0xDF)
        n = 2, cp = c & 0x1F, min = 0x80;
    else if (c >= 0xE0 && c <= 0xEF)
        n = 3, cp = c & 0x0F, min = 0x800;
    else if (c >= 0xF0 && c <= 0xF4)
        n = 4, cp = c & 0x07, min = 0x10000;
    else
        return -1;
    if (len - *i < n)
        return -1;
    for (size_t k = 1; k < n; k++) {
        if ((s[*i + k] & 0xC0) != 0x80)
            return -1;
        cp = (cp << 6) | (s[*i + k] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return -1;
    *i += n;
    return (long)cp;
}

/* ---- compiling dict.txt ------------------------------------------------ */

typedef struct entry {
    uint32_t off, len;   /* into the code point pool */
    uint32_t freq, line;
} entry;

typedef struct words {
    uint32_t *pool;
    size_t n_pool, cap_pool;
    entry *e;
    size_t n, cap;
    uint64_t total;
    uint32_t max_len;
} words;

static const uint32_t *g_sort_pool;   /* qsort has no context argument */

static int cmp_entry(const void *a, const void *b)
{
    const entry *x = a, *y = b;
    const uint32_t *p = g_sort_pool + x->off, *q = g_sort_pool + y->off;
    uint32_t n = x->len < y->len ? x->len : y->len;
    for (uint32_t k = 0; k < n; k++)
        if (p[k] != q[k])
            return p[k] < q[k] ? -1 : 1;
    if (x->len != y->len)
        return x->len < y->len ? -1 : 1;
    return x->line < y->line ? -1 : x->line > y->line;
}

/* One line: "word freq [tag]". jieba strips the line and splits on single
 * spaces; every frequency counts towards the total, but only words made of
 * Han characters enter the trie (only Han runs are ever looked up). */
static trove_err parse_line(words *w, const char *file, uint32_t lineno,
                            const unsigned char *s, size_t len)
{
    while (len && (s[len - 1] == ' ' || (s[len - 1] >= '\t' && s[len - 1] <= '\r')))
        len--;
    while (len && (*s == ' ' || (*s >= '\t' && *s <= '\r')))
        s++, len--;
    if (len == 0)
        return TROVE_OK;
    const unsigned char *sp = memchr(s, ' ', len);
    if (!sp || sp == s)
        return trove_fail(TROVE_EPARSE, "%s:%u: expected \"word frequency\"", file, lineno);
    size_t wlen = (size_t)(sp - s);
    const unsigned char *f = sp + 1, *end = s + len;
    uint64_t freq = 0;
    if (f >= end || *f < '0' || *f > '9')
        return trove_fail(TROVE_EPARSE, "%s:%u: frequency is not a number", file, lineno);
    for (; f < end && *f >= '0' && *f <= '9'; f++) {
        freq = freq * 10 + (uint64_t)(*f - '0');
        if (freq > 0xFFFFFFFFu)
            return trove_fail(TROVE_ERANGE, "%s:%u: frequency too large", file, lineno);
    }
    if (f < end && *f != ' ')
        return trove_fail(TROVE_EPARSE, "%s:%u: frequency is not a number", file, lineno);
    w->total += freq;
    uint32_t cps[MAX_WORD];
    size_t n = 0, i = 0;
    int all_han = 1;
    while (i < wlen) {
        long cp = utf8_cp(s, wlen, &i);
        if (cp < 0)
            return trove_fail(TROVE_EPARSE, "%s:%u: invalid UTF-8", file, lineno);
        if (!han((uint32_t)cp) || n == MAX_WORD) {
            all_han = 0;
            break;
        }
        cps[n++] = (uint32_t)cp;
    }
    if (!all_han)
        return TROVE_OK;
    xgrow(&w->pool, &w->cap_pool, w->n_pool + n, sizeof *w->pool);
    memcpy(w->pool + w->n_pool, cps, n * sizeof *cps);
    xgrow(&w->e, &w->cap, w->n + 1, sizeof *w->e);
    w->e[w->n++] = (entry){(uint32_t)w->n_pool, (uint32_t)n, (uint32_t)freq, lineno};
    w->n_pool += n;
    if (n > w->max_len)
        w->max_len = (uint32_t)n;
    return TROVE_OK;
}

static trove_err read_words(const char *file, words *w)
{
    char *text;
    size_t len;
    trove_err rc = fs_read_file(file, 0, &text, &len);
    if (rc)
        return rc;
    const unsigned char *s = (const unsigned char *)text;
    uint32_t lineno = 0;
    for (size_t i = 0; i < len && rc == TROVE_OK;) {
        const unsigned char *nl = memchr(s + i, '\n', len - i);
        size_t e = nl ? (size_t)(nl - s) : len;
        rc = parse_line(w, file, ++lineno, s + i, e - i);
        i = e + 1;
    }
    free(text);
    if (rc == TROVE_OK && w->n == 0)
        rc = trove_fail(TROVE_EPARSE, "%s: no Chinese words in the dictionary", file);
    if (rc)
        return rc;
    /* Sort by spelling, then line; a word listed twice keeps its last
     * frequency, as jieba's dict does. */
    g_sort_pool = w->pool;
    qsort(w->e, w->n, sizeof *w->e, cmp_entry);
    size_t o = 0;
    for (size_t k = 0; k < w->n; k++) {
        if (o && w->e[o - 1].len == w->e[k].len &&
            memcmp(w->pool + w->e[o - 1].off, w->pool + w->e[k].off,
                   w->e[k].len * sizeof *w->pool) == 0)
            w->e[o - 1] = w->e[k];
        else
            w->e[o++] = w->e[k];
    }
    w->n = o;
    return TROVE_OK;
}

/* ---- building the trie -------------------------------------------------- */

typedef struct trie {
    seg_node *nodes;
    size_t cap_nodes;
    uint32_t *edges;
    size_t n_edges, cap_edges;
} trie;

typedef struct pending {
    uint32_t lo, hi, depth, node;
} pending;

/* Breadth-first over ranges of the sorted words that share a prefix: each
 * node's children get consecutive edges, so a node is just (first, count). */
static void build_trie(const words *w, trie *t)
{
    pending *q = NULL;
    size_t cap_q = 0, head = 0, tail = 0;
    xgrow(&q, &cap_q, 1, sizeof *q);
    q[tail++] = (pending){0, (uint32_t)w->n, 0, 0};
    xgrow(&t->nodes, &t->cap_nodes, 1, sizeof *t->nodes);
    while (head < tail) {
        pending p = q[head++];
        seg_node *nd = &t->nodes[p.node];
        nd->freq = 0;
        uint32_t lo = p.lo;
        if (lo < p.hi && w->e[lo].len == p.depth)
            nd->freq = w->e[lo++].freq;
        nd->first_edge = (uint32_t)t->n_edges;
        nd->n_edges = 0;
        while (lo < p.hi) {
            uint32_t cp = w->pool[w->e[lo].off + p.depth];
            uint32_t hi = lo + 1;
            while (hi < p.hi && w->pool[w->e[hi].off + p.depth] == cp)
                hi++;
            xgrow(&t->edges, &t->cap_edges, t->n_edges + 1, sizeof *t->edges);
            uint32_t child = (uint32_t)t->n_edges + 1;
            t->edges[t->n_edges++] = cp;
            t->nodes[p.node].n_edges++;
            xgrow(&t->nodes, &t->cap_nodes, child + 1, sizeof *t->nodes);
            xgrow(&q, &cap_q, tail + 1, sizeof *q);
            q[tail++] = (pending){lo, hi, p.depth + 1, child};
            lo = hi;
        }
    }
    free(q);
}

/* ---- HMM tables: Python dict literals ----------------------------------- */

typedef struct hmm {
    double start[4];
    double trans[4][4];
    int have_start, have_trans;
    uint32_t *cp;
    double (*p)[4];
    size_t n, cap;
} hmm;

static int state_of(long cp)
{
    switch (cp) {
    case 'B': return SEG_B;
    case 'M': return SEG_M;
    case 'E': return SEG_E;
    case 'S': return SEG_S;
    default: return -1;
    }
}

static int hexval(int c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Parse a quoted one-character Python string at s[*i] (the quote). */
static long py_char(const unsigned char *s, size_t len, size_t *i)
{
    unsigned char q = s[(*i)++];
    long cp = -1;
    if (*i < len && s[*i] == '\\') {
        (*i)++;
        if (*i >= len)
            return -1;
        int digits = s[*i] == 'u' ? 4 : s[*i] == 'U' ? 8 : s[*i] == 'x' ? 2 : 0;
        if (digits) {
            (*i)++;
            cp = 0;
            for (int k = 0; k < digits; k++, (*i)++) {
                int h = *i < len ? hexval(s[*i]) : -1;
                if (h < 0)
                    return -1;
                cp = cp * 16 + h;
            }
        } else {
            cp = s[(*i)++];
        }
    } else if (*i < len) {
        cp = utf8_cp(s, len, i);
    }
    if (*i >= len || s[*i] != q || cp > 0x10FFFF)
        return -1;
    (*i)++;
    return cp;
}

typedef void (*py_value_fn)(hmm *h, long k1, long k2, double v, int depth);

/* A nested dict literal "P={'B': {'\u4e00': -3.6, ...}, ...}" of depth 1
 * or 2: each number is reported with the key(s) above it. */
static trove_err parse_pydict(const char *file, hmm *h, py_value_fn fn)
{
    char *text;
    size_t len;
    trove_err rc = fs_read_file(file, 0, &text, &len);
    if (rc)
        return rc;
    const unsigned char *s = (const unsigned char *)text;
    long keys[3] = {-1, -1, -1}, key = -1;
    int depth = 0, seen = 0;
    size_t i = 0;
    const char *bad = NULL;
    while (i < len && !bad) {
        unsigned char c = s[i];
        if (c == '#') {
            while (i < len && s[i] != '\n')
                i++;
        } else if (c == '{') {
            if (depth >= 2 || (depth > 0 && key < 0))
                bad = "unexpected '{'";
            keys[depth] = key;
            depth++;
            key = -1;
            i++;
        } else if (c == '}') {
            if (depth == 0)
                bad = "unbalanced '}'";
            depth--;
            i++;
        } else if (c == '\'' || c == '"') {
            if (depth == 0) {       /* a string outside P (a __future__ import) */
                i++;
                continue;
            }
            key = py_char(s, len, &i);
            if (key < 0)
                bad = "bad key";
        } else if (depth > 0 && (c == '-' || (c >= '0' && c <= '9'))) {
            char *e;
            double v = strtod(text + i, &e);
            if (e == text + i || key < 0)
                bad = "number without a key";
            else
                fn(h, depth == 1 ? key : keys[1], depth == 2 ? key : -1, v, depth), seen++;
            i = (size_t)(e - text) > i ? (size_t)(e - text) : i + 1;
            key = -1;
        } else {
            i++;
        }
    }
    free(text);
    if (!bad && (depth != 0 || !seen))
        bad = "no complete dict literal";
    if (bad)
        return trove_fail(TROVE_EPARSE, "%s: %s near byte %zu", file, bad, i);
    return TROVE_OK;
}

static void on_start(hmm *h, long k1, long k2, double v, int depth)
{
    (void)k2;
    int s = state_of(k1);
    if (depth == 1 && s >= 0) {
        h->start[s] = v;
        h->have_start |= 1 << s;
    }
}

static void on_trans(hmm *h, long k1, long k2, double v, int depth)
{
    int a = state_of(k1), b = state_of(k2);
    if (depth == 2 && a >= 0 && b >= 0) {
        h->trans[a][b] = v;
        h->have_trans |= 1 << a;
    }
}

static void on_emit(hmm *h, long k1, long k2, double v, int depth)
{
    int s = state_of(k1);
    if (depth != 2 || s < 0 || k2 < 0)
        return;
    /* Sorted later; for now append and let duplicates merge after. */
    size_t cap = h->cap;
    xgrow(&h->cp, &h->cap, h->n + 1, sizeof *h->cp);
    if (h->cap != cap)
        h->p = xrealloc(h->p, h->cap * sizeof *h->p);
    h->cp[h->n] = (uint32_t)k2;
    for (int k = 0; k < 4; k++)
        h->p[h->n][k] = k == s ? v : SEG_MIN_LOGP;
    h->n++;
}

static const uint32_t *g_emit_cps;

static int cmp_idx(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    if (g_emit_cps[x] != g_emit_cps[y])
        return g_emit_cps[x] < g_emit_cps[y] ? -1 : 1;
    return x < y ? -1 : x > y;
}

/* Sort the emission rows by code point and merge the rows of one code
 * point (one per state). */
static void merge_emit(hmm *h)
{
    size_t *idx = xmalloc((h->n ? h->n : 1) * sizeof *idx);
    for (size_t k = 0; k < h->n; k++)
        idx[k] = k;
    g_emit_cps = h->cp;
    qsort(idx, h->n, sizeof *idx, cmp_idx);
    uint32_t *cp = xmalloc((h->n ? h->n : 1) * sizeof *cp);
    double (*p)[4] = xmalloc((h->n ? h->n : 1) * sizeof *p);
    size_t o = 0;
    for (size_t k = 0; k < h->n; k++) {
        size_t r = idx[k];
        if (o == 0 || cp[o - 1] != h->cp[r]) {
            cp[o] = h->cp[r];
            for (int s = 0; s < 4; s++)
                p[o][s] = SEG_MIN_LOGP;
            o++;
        }
        for (int s = 0; s < 4; s++)
            if (h->p[r][s] != SEG_MIN_LOGP)
                p[o - 1][s] = h->p[r][s];
    }
    free(idx);
    free(h->cp);
    free(h->p);
    h->cp = cp;
    h->p = p;
    h->n = o;
}

static trove_err read_hmm(const char *dir, hmm *h)
{
    for (int a = 0; a < 4; a++) {
        h->start[a] = SEG_MIN_LOGP;
        for (int b = 0; b < 4; b++)
            h->trans[a][b] = SEG_MIN_LOGP;
    }
    tbuf path = {0};
    trove_err rc;
    tbuf_printf(&path, "%s/prob_start.py", dir);
    if ((rc = parse_pydict(tbuf_cstr(&path), h, on_start)) != TROVE_OK)
        goto out;
    if (h->have_start != 0xF) {
        rc = trove_fail(TROVE_EPARSE, "%s: needs the states B, M, E and S", tbuf_cstr(&path));
        goto out;
    }
    path.len = 0;
    tbuf_printf(&path, "%s/prob_trans.py", dir);
    if ((rc = parse_pydict(tbuf_cstr(&path), h, on_trans)) != TROVE_OK)
        goto out;
    path.len = 0;
    tbuf_printf(&path, "%s/prob_emit.py", dir);
    if ((rc = parse_pydict(tbuf_cstr(&path), h, on_emit)) != TROVE_OK)
        goto out;
    merge_emit(h);
out:
    tbuf_free(&path);
    return rc;
}

/* ---- traditional -> simplified pairs --------------------------------------- */

static int char_listed(uint32_t cp)
{
    return (cp >= 0x3400 && cp <= 0x4DBF) || (cp >= 0x4E00 && cp <= 0x9FFF) ||
           (cp >= 0xF900 && cp <= 0xFAFF);
}

trove_err seg_dict_write_chars(const char *out)
{
    FILE *f = fopen(out, "wb");
    if (!f)
        return trove_fail(TROVE_EIO, "%s: %s", out, strerror(errno));
    char b[8];
    for (uint32_t cp = 0x3400; cp <= 0xFAFF; cp++) {
        if (!char_listed(cp))
            continue;
        size_t n = esc_utf8_encode(cp, b);
        b[n++] = '\n';
        fwrite(b, 1, n, f);
    }
    if (fclose(f) != 0)
        return trove_fail(TROVE_EIO, "writing %s: %s", out, strerror(errno));
    return TROVE_OK;
}

/* Pair line k of `chars` with line k of its conversion; keep the lines
 * where one character became another single Han character. */
static trove_err read_t2s(const char *chars, const char *conv, uint32_t **pairs, size_t *n)
{
    char *a, *b;
    size_t la, lb, cap = 0;
    trove_err rc = fs_read_file(chars, 0, &a, &la);
    if (rc)
        return rc;
    if ((rc = fs_read_file(conv, 0, &b, &lb)) != TROVE_OK) {
        free(a);
        return rc;
    }
    *pairs = NULL;
    *n = 0;
    size_t i = 0, j = 0, line = 0;
    while (i < la && j < lb && rc == TROVE_OK) {
        const char *ea = memchr(a + i, '\n', la - i), *eb = memchr(b + j, '\n', lb - j);
        size_t na = (ea ? (size_t)(ea - a) : la) - i, nb = (eb ? (size_t)(eb - b) : lb) - j;
        line++;
        size_t pa = 0, pb = 0;
        long from = na ? utf8_cp((const unsigned char *)a + i, na, &pa) : -1;
        long to = nb ? utf8_cp((const unsigned char *)b + j, nb, &pb) : -1;
        if (from < 0 || pa != na)
            rc = trove_fail(TROVE_EPARSE, "%s:%zu: expected one character", chars, line);
        else if (to >= 0 && pb == nb && to != from && han((uint32_t)to)) {
            xgrow(pairs, &cap, 2 * (*n + 1), sizeof **pairs);
            (*pairs)[2 * *n] = (uint32_t)from;
            (*pairs)[2 * *n + 1] = (uint32_t)to;
            (*n)++;
        }
        i += na + 1;
        j += nb + 1;
    }
    if (rc == TROVE_OK && (i < la || j < lb))
        rc = trove_fail(TROVE_EPARSE, "%s and %s: line counts differ", chars, conv);
    free(a);
    free(b);
    if (rc) {
        free(*pairs);
        *pairs = NULL;
        *n = 0;
    }
    return rc;    /* pairs come out sorted: chars is written in order */
}

/* ---- writing ------------------------------------------------------------ */

static size_t align8(size_t n)
{
    return (n + 7) & ~(size_t)7;
}

trove_err seg_dict_compile(const char *dict_txt, const char *hmm_dir, const char *chars,
                           const char *t2s, const char *out)
{
    words w = {0};
    hmm h = {0};
    trie t = {0};
    unsigned char *buf = NULL;
    uint32_t *pairs = NULL;
    size_t n_pairs = 0;
    trove_err rc = read_words(dict_txt, &w);
    if (rc == TROVE_OK)
        rc = read_hmm(hmm_dir, &h);
    if (rc == TROVE_OK && chars && t2s)
        rc = read_t2s(chars, t2s, &pairs, &n_pairs);
    if (rc)
        goto done;
    build_trie(&w, &t);
    size_t n_nodes = t.n_edges + 1;
    seg_dict_hdr hdr = {0};
    memcpy(hdr.magic, SEG_DICT_MAGIC, 8);
    hdr.byte_order = BYTE_ORDER_MARK;
    hdr.version = SEG_DICT_VERSION;
    hdr.total = w.total;
    hdr.n_nodes = (uint32_t)n_nodes;
    hdr.n_emit = (uint32_t)h.n;
    hdr.max_depth = w.max_len;
    memcpy(hdr.start, h.start, sizeof hdr.start);
    memcpy(hdr.trans, h.trans, sizeof hdr.trans);
    size_t off = align8(sizeof hdr);
    hdr.off_nodes = off;
    off = align8(off + n_nodes * sizeof(seg_node));
    hdr.off_edges = off;
    off = align8(off + t.n_edges * sizeof(uint32_t));
    hdr.off_root = off;
    off = align8(off + SEG_ROOT_N * sizeof(uint32_t));
    hdr.off_emit_cp = off;
    off = align8(off + h.n * sizeof(uint32_t));
    hdr.off_emit_p = off;
    off += h.n * 4 * sizeof(double);
    off = align8(off);
    hdr.n_t2s = (uint32_t)n_pairs;
    hdr.off_t2s = off;
    off += SEG_ROOT_N * sizeof(uint32_t);
    hdr.file_size = off;
    buf = xcalloc(1, off);
    memcpy(buf + hdr.off_nodes, t.nodes, n_nodes * sizeof(seg_node));
    memcpy(buf + hdr.off_edges, t.edges, t.n_edges * sizeof(uint32_t));
    uint32_t *root = (uint32_t *)(buf + hdr.off_root);
    for (uint32_t e = t.nodes[0].first_edge; e < t.nodes[0].first_edge + t.nodes[0].n_edges; e++)
        root[t.edges[e] - SEG_ROOT_BASE] = e + 1;
    if (h.n) {
        memcpy(buf + hdr.off_emit_cp, h.cp, h.n * sizeof(uint32_t));
        memcpy(buf + hdr.off_emit_p, h.p, h.n * 4 * sizeof(double));
    }
    uint32_t *t2s_tab = (uint32_t *)(buf + hdr.off_t2s);
    for (size_t k = 0; k < n_pairs; k++)
        if (han(pairs[2 * k]))
            t2s_tab[pairs[2 * k] - SEG_ROOT_BASE] = pairs[2 * k + 1];
    hdr.payload_hash = XXH3_64bits(buf + sizeof hdr, off - sizeof hdr);
    memcpy(buf, &hdr, sizeof hdr);

    rc = fs_replace_file(out, NULL, &(fs_part){buf, off}, 1, 0666, 0);
done:
    free(buf);
    free(pairs);
    free(w.pool);
    free(w.e);
    free(h.cp);
    free(h.p);
    free(t.nodes);
    free(t.edges);
    return rc;
}

/* ---- loading ------------------------------------------------------------- */

static int section_ok(uint64_t off, uint64_t count, uint64_t size, uint64_t file)
{
    return off >= sizeof(seg_dict_hdr) && off % 8 == 0 && off <= file &&
           count <= (file - off) / size;
}

static int payload_ok(const seg_dict_hdr *h, size_t size)
{
    return XXH3_64bits((const char *)h + sizeof *h, size - sizeof *h) == h->payload_hash;
}

static trove_err open_dict(const char *path, int verify, seg_dict **out)
{
    *out = NULL;
    fmap fm;
    trove_err rc = fmap_open(path, "Chinese dictionary", &fm);
    if (rc)
        return rc;
    size_t size = fm.len;
    if (size < sizeof(seg_dict_hdr)) {
        fmap_close(&fm);
        return trove_fail(TROVE_ECORRUPT, "Chinese dictionary %s: truncated (%zu bytes); "
                          "rebuild it with trove-seg-build", path, size);
    }
    const void *m = fm.data;
    const seg_dict_hdr *h = m;
    const char *why = NULL;
    if (memcmp(h->magic, SEG_DICT_MAGIC, 8) != 0)
        why = "not a trove dictionary (bad magic)";
    else if (h->byte_order != BYTE_ORDER_MARK || h->version != SEG_DICT_VERSION)
        why = "built for another trove version or byte order";
    else if (h->file_size != size)
        why = "size does not match its header (truncated?)";
    else if (h->n_nodes == 0 ||
             !section_ok(h->off_nodes, h->n_nodes, sizeof(seg_node), size) ||
             !section_ok(h->off_edges, h->n_nodes - 1, 4, size) ||
             !section_ok(h->off_root, SEG_ROOT_N, 4, size) ||
             !section_ok(h->off_emit_cp, h->n_emit, 4, size) ||
             !section_ok(h->off_emit_p, (uint64_t)h->n_emit * 4, 8, size) ||
             !section_ok(h->off_t2s, SEG_ROOT_N, 4, size))
        why = "section out of range";
    else if (verify && !payload_ok(h, size))
        why = "checksum mismatch (damaged file)";
    if (why) {
        fmap_close(&fm);
        return trove_fail(TROVE_ECORRUPT, "Chinese dictionary %s: %s; rebuild it with "
                          "trove-seg-build", path, why);
    }
    seg_dict *d = xcalloc(1, sizeof *d);
    d->map = m;
    d->map_len = size;
    d->hdr = h;
    d->nodes = (const seg_node *)(d->map + h->off_nodes);
    d->edges = (const uint32_t *)(d->map + h->off_edges);
    d->root = (const uint32_t *)(d->map + h->off_root);
    d->emit_cp = (const uint32_t *)(d->map + h->off_emit_cp);
    d->emit_p = (const double *)(d->map + h->off_emit_p);
    d->t2s = (const uint32_t *)(d->map + h->off_t2s);
    d->n_nodes = h->n_nodes;
    d->n_emit = h->n_emit;
    d->n_t2s = h->n_t2s;
    *out = d;
    return TROVE_OK;
}

trove_err seg_dict_open(const char *path, seg_dict **out)
{
    return open_dict(path, 1, out);
}

trove_err seg_dict_map(const char *path, seg_dict **out)
{
    return open_dict(path, 0, out);
}

trove_err seg_dict_verify(const seg_dict *d, const char *path)
{
    if (payload_ok(d->hdr, d->map_len))
        return TROVE_OK;
    return trove_fail(TROVE_ECORRUPT, "Chinese dictionary %s: checksum mismatch (damaged file); "
                      "rebuild it with trove-seg-build", path);
}

void seg_dict_close(seg_dict *d)
{
    if (!d)
        return;
    fmap_close(&(fmap){d->map, d->map_len});
    free(d);
}

uint32_t seg_dict_child(const seg_dict *d, uint32_t node, uint32_t cp)
{
    if (node == 0) {
        if (cp - SEG_ROOT_BASE >= SEG_ROOT_N)
            return 0;
        uint32_t id = d->root[cp - SEG_ROOT_BASE];
        return id < d->n_nodes ? id : 0;
    }
    if (node >= d->n_nodes)
        return 0;
    const seg_node *n = &d->nodes[node];
    uint32_t lo = n->first_edge, hi;
    /* Bounds come from the file: check before trusting them. */
    if (lo >= d->n_nodes - 1 || n->n_edges > d->n_nodes - 1 - lo)
        return 0;
    hi = lo + n->n_edges;
    while (hi - lo > 8) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (d->edges[mid] <= cp)
            lo = mid;
        else
            hi = mid;
    }
    for (; lo < hi; lo++)
        if (d->edges[lo] == cp)
            return lo + 1;
    return 0;
}

uint32_t seg_dict_freq(const seg_dict *d, const uint32_t *cps, size_t n)
{
    uint32_t node = 0;
    for (size_t k = 0; k < n; k++)
        if (!(node = seg_dict_child(d, node, cps[k])))
            return 0;
    return n ? d->nodes[node].freq : 0;
}

const double *seg_dict_emit(const seg_dict *d, uint32_t cp)
{
    size_t lo = 0, hi = d->n_emit;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (d->emit_cp[mid] < cp)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < d->n_emit && d->emit_cp[lo] == cp ? d->emit_p + lo * 4 : NULL;
}

uint32_t seg_dict_t2s(const seg_dict *d, uint32_t cp)
{
    if (cp - SEG_ROOT_BASE >= SEG_ROOT_N)
        return cp;
    uint32_t s = d->t2s[cp - SEG_ROOT_BASE];
    return s - SEG_ROOT_BASE < SEG_ROOT_N ? s : cp;
}
