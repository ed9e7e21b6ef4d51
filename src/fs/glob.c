/* glob — compile a glob pattern to an NFA and run it Pike-style.
 *
 * Backtracking matchers go exponential on "*a*a*a*...b" and brace
 * expansion multiplies alternatives; simulating all NFA states at once
 * visits each (path byte, instruction) pair at most once instead. */
#include "fs/glob.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fs/walk.h"
#include "util/mem.h"

enum { OP_CHAR, OP_ANY, OP_ANYALL, OP_CLASS, OP_SPLIT, OP_JMP, OP_MATCH };

/* Brace groups nested deeper than this are taken literally; it bounds the
 * compiler's recursion. */
#define GLOB_MAX_BRACE_DEPTH 32
#define NO_TARGET UINT32_MAX

typedef struct ginst {
    uint8_t op;
    uint8_t c;       /* OP_CHAR */
    uint32_t x, y;   /* OP_SPLIT: both targets; OP_JMP: x; OP_CLASS: x = class */
} ginst;

/* Shapes common enough (the default mask, gitignore lines like "*.log" or
 * "venv") to be matched with a compare instead of the NFA. */
enum { FAST_NONE, FAST_LITERAL, FAST_STAR_SUFFIX, FAST_ANY_SUFFIX, FAST_ANY_TAIL };

struct tglob {
    int fast;
    int last;        /* the byte every match ends with; -1: not one byte */
    char *lit;       /* the literal part of a FAST_ shape */
    size_t litlen;
    /* An NFA pattern's literal head (up to its first special byte): a path
     * that does not start with it cannot match, and is refused before the
     * NFA runs (a .gitignore rule "scripts/pdf/STAR.html" against every
     * note). */
    char *head;
    size_t headlen;
    ginst *code;
    size_t n;
    uint8_t (*cls)[32];
    size_t ncls;
    /* Scratch for tglob_match, sized from n at compile time. */
    uint32_t *clist, *nlist, *mark, *stack;
    uint32_t gen;
};

typedef struct gcomp {
    const char *p;
    size_t n;
    int flags;
    int32_t *brace_end; /* at a '{': index of its '}', else -1 */
    int32_t *owner;     /* at a ',': index of the '{' it separates, else -1 */
    tglob *g;
    size_t cap, capcls;
} gcomp;

static uint32_t emit(gcomp *gc, uint8_t op, uint8_t c, uint32_t x, uint32_t y)
{
    tglob *g = gc->g;
    xgrow(&g->code, &gc->cap, g->n + 1, sizeof *g->code);
    g->code[g->n] = (ginst){op, c, x, y};
    return (uint32_t)g->n++;
}

/* Index just past the ']' closing the class opened at p[i], or 0 if the
 * '[' has no closing bracket before `end` (then it is a literal). */
static size_t class_end(const char *p, size_t i, size_t end)
{
    size_t j = i + 1;
    if (j < end && (p[j] == '!' || p[j] == '^'))
        j++;
    if (j < end && p[j] == ']')
        j++;
    while (j < end && p[j] != ']')
        j += (p[j] == '\\' && j + 1 < end) ? 2 : 1;
    return j < end ? j + 1 : 0;
}

static void set_bit(uint8_t *bits, unsigned c) { bits[c >> 3] |= (uint8_t)(1u << (c & 7)); }

static void compile_class(gcomp *gc, size_t i, size_t ce)
{
    tglob *g = gc->g;
    xgrow(&g->cls, &gc->capcls, g->ncls + 1, sizeof *g->cls);
    uint8_t *bits = g->cls[g->ncls];
    memset(bits, 0, 32);
    const char *p = gc->p;
    size_t close = ce - 1, j = i + 1;
    int neg = 0;
    if (p[j] == '!' || p[j] == '^')
        neg = 1, j++;
    while (j < close) {
        if (p[j] == '\\' && j + 1 < close)
            j++;
        unsigned lo = (unsigned char)p[j++], hi = lo;
        if (j + 1 < close && p[j] == '-') {
            j++;
            if (p[j] == '\\' && j + 1 < close)
                j++;
            hi = (unsigned char)p[j++];
        }
        for (unsigned c = lo; c <= hi; c++)
            set_bit(bits, c);
    }
    if (neg)
        for (int k = 0; k < 32; k++)
            bits[k] = (uint8_t)~bits[k];
    bits['/' >> 3] &= (uint8_t)~(1u << ('/' & 7));
    emit(gc, OP_CLASS, 0, (uint32_t)g->ncls++, 0);
}

/* x* where x is OP_ANY or OP_ANYALL. */
static void emit_loop(gcomp *gc, uint8_t op)
{
    uint32_t split = emit(gc, OP_SPLIT, 0, 0, 0);
    uint32_t body = emit(gc, op, 0, 0, 0); /* emit() may move code[] */
    gc->g->code[split].x = body;
    emit(gc, OP_JMP, 0, split, 0);
    gc->g->code[split].y = (uint32_t)gc->g->n;
}

static void compile_range(gcomp *gc, size_t s, size_t e, int seg_start);

static void compile_group(gcomp *gc, size_t open, size_t close, int seg_start)
{
    uint32_t jmps = NO_TARGET; /* chain of forward jumps threaded through x */
    size_t alt = open + 1;
    for (size_t i = open + 1; i <= close; i++) {
        if (i < close && !(gc->p[i] == ',' && gc->owner[i] == (int32_t)open))
            continue;
        if (i == close) {
            compile_range(gc, alt, i, seg_start);
            break;
        }
        uint32_t split = emit(gc, OP_SPLIT, 0, 0, 0);
        gc->g->code[split].x = split + 1;
        compile_range(gc, alt, i, seg_start);
        jmps = emit(gc, OP_JMP, 0, jmps, 0);
        gc->g->code[split].y = (uint32_t)gc->g->n;
        alt = i + 1;
    }
    while (jmps != NO_TARGET) {
        uint32_t prev = gc->g->code[jmps].x;
        gc->g->code[jmps].x = (uint32_t)gc->g->n;
        jmps = prev;
    }
}

static void compile_range(gcomp *gc, size_t s, size_t e, int seg_start)
{
    const char *p = gc->p;
    size_t i = s;
    while (i < e) {
        char c = p[i];
        if (c == '\\') {
            char lit = i + 1 < e ? p[i + 1] : '\\';
            emit(gc, OP_CHAR, (uint8_t)lit, 0, 0);
            seg_start = lit == '/';
            i += i + 1 < e ? 2 : 1;
        } else if (c == '*') {
            size_t j = i;
            while (j < e && p[j] == '*')
                j++;
            if (j - i >= 2 && seg_start && j < e && p[j] == '/') {
                /* "**\/" = (.*\/)? : zero or more whole segments. */
                uint32_t skip = emit(gc, OP_SPLIT, 0, 0, 0);
                gc->g->code[skip].x = skip + 1;
                emit_loop(gc, OP_ANYALL);
                emit(gc, OP_CHAR, '/', 0, 0);
                gc->g->code[skip].y = (uint32_t)gc->g->n;
                i = j + 1;
                seg_start = 1;
                continue;
            }
            emit_loop(gc, (j - i >= 2 && seg_start && j == e) ? OP_ANYALL : OP_ANY);
            i = j;
            seg_start = 0;
        } else if (c == '?') {
            emit(gc, OP_ANY, 0, 0, 0);
            i++;
            seg_start = 0;
        } else if (c == '[' && class_end(p, i, e)) {
            size_t ce = class_end(p, i, e);
            compile_class(gc, i, ce);
            i = ce;
            seg_start = 0;
        } else if (c == '{' && gc->brace_end && gc->brace_end[i] >= 0) {
            size_t close = (size_t)gc->brace_end[i];
            compile_group(gc, i, close, seg_start);
            i = close + 1;
            seg_start = 0;
        } else {
            emit(gc, OP_CHAR, (uint8_t)c, 0, 0);
            seg_start = c == '/';
            i++;
        }
    }
}

/* Pair braces with a stack, skipping escapes and classes exactly as
 * compile_range() will, so both agree on what is structure. */
static void find_braces(gcomp *gc)
{
    const char *p = gc->p;
    size_t n = gc->n, depth = 0;
    size_t stack[GLOB_MAX_BRACE_DEPTH];
    gc->brace_end = xmalloc((n + 1) * sizeof *gc->brace_end);
    gc->owner = xmalloc((n + 1) * sizeof *gc->owner);
    for (size_t i = 0; i < n; i++)
        gc->brace_end[i] = gc->owner[i] = -1;
    for (size_t i = 0; i < n; i++) {
        char c = p[i];
        if (c == '\\') {
            i++;
        } else if (c == '[') {
            size_t ce = class_end(p, i, n);
            if (ce)
                i = ce - 1;
        } else if (c == '{') {
            if (depth < GLOB_MAX_BRACE_DEPTH)
                stack[depth++] = i;
        } else if (c == '}' && depth > 0) {
            size_t open = stack[--depth];
            gc->brace_end[open] = (int32_t)i;
        } else if (c == ',' && depth > 0) {
            gc->owner[i] = (int32_t)stack[depth - 1];
        }
    }
    /* A comma whose brace never closed is a literal comma. */
    for (size_t i = 0; i < n; i++)
        if (gc->owner[i] >= 0 && gc->brace_end[gc->owner[i]] < 0)
            gc->owner[i] = -1;
}

static int has_prefix(const char *s, size_t len, const char *pre)
{
    size_t n = strlen(pre);
    return len >= n && memcmp(s, pre, n) == 0;
}

/* Recognise a literal L alone, after "*", after a globstar segment, or
 * after a globstar segment and a star; L has no special byte (and, right
 * after a star, no '/'). */
static void detect_fast(tglob *g, const char *pat, size_t len)
{
    int kind = FAST_LITERAL;
    size_t skip = 0;
    if (has_prefix(pat, len, "**/*"))
        kind = FAST_ANY_SUFFIX, skip = 4;
    else if (has_prefix(pat, len, "**/"))
        kind = FAST_ANY_TAIL, skip = 3;
    else if (has_prefix(pat, len, "*"))
        kind = FAST_STAR_SUFFIX, skip = 1;
    for (size_t i = skip; i < len; i++) {
        char c = pat[i];
        if (c == '*' || c == '?' || c == '[' || c == '{' || c == '\\' || c == '\0')
            return;
        if (c == '/' && (kind == FAST_ANY_SUFFIX || kind == FAST_STAR_SUFFIX))
            return;
    }
    g->fast = kind;
    g->lit = xstrndup(pat + skip, len - skip);
    g->litlen = len - skip;
}

static int ends_with(const char *s, size_t len, const char *suf, size_t n)
{
    return len >= n && memcmp(s + len - n, suf, n) == 0;
}

static int match_fast(const tglob *g, const char *s, size_t len)
{
    const char *l = g->lit;
    size_t n = g->litlen;
    switch (g->fast) {
    case FAST_LITERAL:
        return len == n && memcmp(s, l, n) == 0;
    case FAST_STAR_SUFFIX:
        return ends_with(s, len, l, n) && !memchr(s, '/', len - n);
    case FAST_ANY_SUFFIX:
        return ends_with(s, len, l, n);
    default: /* FAST_ANY_TAIL */
        return ends_with(s, len, l, n) && (len == n || s[len - n - 1] == '/');
    }
}

/* A pattern that ends in a plain byte (not escaped, not special, not a
 * class, brace or '/') matches only strings that end in it. */
static int last_byte(const char *pat, size_t len)
{
    if (len == 0 || len > (size_t)INT32_MAX / 8)
        return -1;
    unsigned char c = (unsigned char)pat[len - 1];
    if (c == '\0' || strchr("*?[]{}\\/,", c) || (len > 1 && pat[len - 2] == '\\'))
        return -1;
    return c;
}

tglob *tglob_compile(const char *pat, size_t len, int flags)
{
    tglob *g = xcalloc(1, sizeof *g);
    g->last = last_byte(pat, len);
    if (!(flags & GLOB_NOFAST))
        detect_fast(g, pat, len);
    while (g->headlen < len && !strchr("*?[{\\", pat[g->headlen]) && pat[g->headlen])
        g->headlen++;
    g->head = xstrndup(pat, g->headlen);
    gcomp gc = {.p = pat, .n = len, .flags = flags, .g = g};
    /* Offsets are kept in int32_t; longer patterns cannot be paths anyway
     * and are matched as far as their first 1 GiB goes. */
    if (gc.n > (size_t)INT32_MAX / 8)
        gc.n = (size_t)INT32_MAX / 8;
    if (!(flags & GLOB_NOBRACE))
        find_braces(&gc);
    compile_range(&gc, 0, gc.n, 1);
    emit(&gc, OP_MATCH, 0, 0, 0);
    free(gc.brace_end);
    free(gc.owner);
    g->clist = xmalloc(g->n * sizeof *g->clist);
    g->nlist = xmalloc(g->n * sizeof *g->nlist);
    g->mark = xcalloc(g->n, sizeof *g->mark);
    g->stack = xmalloc((2 * g->n + 2) * sizeof *g->stack);
    g->gen = 0;
    return g;
}

void tglob_free(tglob *g)
{
    if (!g)
        return;
    free(g->lit);
    free(g->head);
    free(g->code);
    free(g->cls);
    free(g->clist);
    free(g->nlist);
    free(g->mark);
    free(g->stack);
    free(g);
}

static uint32_t next_gen(tglob *g)
{
    if (++g->gen == 0) {
        memset(g->mark, 0, g->n * sizeof *g->mark);
        g->gen = 1;
    }
    return g->gen;
}

/* Add pc and everything reachable from it by SPLIT/JMP to list. Each
 * instruction is marked once per generation, so a push happens at most
 * once per incoming edge: the stack never exceeds 2n + 1. */
static void add_state(tglob *g, uint32_t *list, size_t *len, uint32_t pc, uint32_t gen)
{
    size_t sp = 0;
    g->stack[sp++] = pc;
    while (sp) {
        pc = g->stack[--sp];
        if (g->mark[pc] == gen)
            continue;
        g->mark[pc] = gen;
        const ginst *in = &g->code[pc];
        if (in->op == OP_JMP) {
            g->stack[sp++] = in->x;
        } else if (in->op == OP_SPLIT) {
            g->stack[sp++] = in->y;
            g->stack[sp++] = in->x;
        } else {
            list[(*len)++] = pc;
        }
    }
}

static int step_ok(const tglob *g, const ginst *in, unsigned char c)
{
    switch (in->op) {
    case OP_CHAR: return in->c == c;
    case OP_ANY: return c != '/';
    case OP_ANYALL: return 1;
    case OP_CLASS: return (g->cls[in->x][c >> 3] >> (c & 7)) & 1;
    default: return 0;
    }
}

int tglob_match(tglob *g, const char *s, size_t len)
{
    if (g->fast)
        return match_fast(g, s, len);
    if (len < g->headlen || memcmp(s, g->head, g->headlen) != 0)
        return 0;
    uint32_t *cl = g->clist, *nl = g->nlist;
    size_t nc = 0;
    add_state(g, cl, &nc, 0, next_gen(g));
    for (size_t i = 0; i < len && nc; i++) {
        unsigned char c = (unsigned char)s[i];
        uint32_t gen = next_gen(g);
        size_t nn = 0;
        for (size_t k = 0; k < nc; k++) {
            const ginst *in = &g->code[cl[k]];
            if (step_ok(g, in, c))
                add_state(g, nl, &nn, cl[k] + 1, gen);
        }
        uint32_t *t = cl;
        cl = nl, nl = t, nc = nn;
    }
    for (size_t k = 0; k < nc; k++)
        if (g->code[cl[k]].op == OP_MATCH)
            return 1;
    return 0;
}

int tglob_last_byte(const tglob *g)
{
    return g->last;
}

int glob_match(const char *pattern, const char *path)
{
    tglob *g = tglob_compile(pattern, strlen(pattern), 0);
    int r = tglob_match(g, path, strlen(path));
    tglob_free(g);
    return r;
}
