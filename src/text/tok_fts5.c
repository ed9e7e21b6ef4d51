/* tok_fts5 — the "trove" FTS5 tokenizer: tok_run behind the fts5_tokenizer
 * interface, so documents and queries are tokenized by the very same code.
 *
 * Arguments: "stem" (default) or "nostem". Query tokenizing is document
 * tokenizing without the colocated sub-words of long CJK words (those are
 * indexed at the position of their word, FTS5_TOKEN_COLOCATED, so a query
 * for the long word or for a word inside it matches, and phrases keep
 * their positions), which is what makes a quoted query term match the
 * indexed text. */
#include <sqlite3.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "text/tok.h"
#include "util/mem.h"

typedef struct trove_fts5_tok {
    tok_opts opts;
} trove_fts5_tok;

static int x_create(void *ud, const char **argv, int argc,
                    Fts5Tokenizer **out)
{
    (void)ud;
    tok_opts opts = {.stem = 1};
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "stem") == 0)
            opts.stem = 1;
        else if (strcmp(argv[i], "nostem") == 0)
            opts.stem = 0;
        else
            return SQLITE_ERROR;
    }
    trove_fts5_tok *t = xmalloc(sizeof *t);
    t->opts = opts;
    *out = (Fts5Tokenizer *)t;
    return SQLITE_OK;
}

static void x_delete(Fts5Tokenizer *t)
{
    free(t);
}

typedef struct fts5_cb_ctx {
    void *ctx;
    int (*token)(void *, int, const char *, int, int, int);
} fts5_cb_ctx;

static int on_token(void *vctx, const char *token, size_t len, size_t start,
                    size_t end, int flags)
{
    fts5_cb_ctx *c = vctx;
    return c->token(c->ctx, flags & TOK_COLOCATED ? FTS5_TOKEN_COLOCATED : 0,
                    token, (int)len, (int)start, (int)end);
}

/* ---- tapes ---- */

static const tok_opts tape_opts = {.stem = 1};
static _Thread_local const tok_tape *tl_tape;
static _Thread_local size_t tl_tape_next;   /* where the next text likely is */

static int tape_token(void *vctx, const char *token, size_t len, size_t start, size_t end,
                      int flags)
{
    tok_tape *t = vctx;
    /* a call per token only when the arrays must grow */
    if (t->n_toks == t->cap_toks)
        xgrow(&t->toks, &t->cap_toks, t->n_toks + 1, sizeof *t->toks);
    if (t->cap_bytes - t->n_bytes < len)
        xgrow(&t->bytes, &t->cap_bytes, t->n_bytes + len, 1);
    memcpy(t->bytes + t->n_bytes, token, len);
    t->toks[t->n_toks++] = (tok_tape_tok){(uint32_t)t->n_bytes, (uint32_t)len, (uint32_t)start,
                                          (uint32_t)end, flags};
    t->n_bytes += len;
    return 0;
}

void tok_tape_record(tok_tape *t, const char *text, size_t len)
{
    if (len > (size_t)INT32_MAX)
        return;   /* more than FTS5 hands a tokenizer: never offered */
    xgrow(&t->texts, &t->cap_texts, t->n_texts + 1, sizeof *t->texts);
    tok_tape_text *x = &t->texts[t->n_texts++];
    x->text = text;
    x->len = len;
    x->first = t->n_toks;
    tok_run_flags(&tape_opts, text, len, t, tape_token);
    x->n = t->n_toks - x->first;
}

void tok_tape_free(tok_tape *t)
{
    free(t->texts);
    free(t->toks);
    free(t->bytes);
    memset(t, 0, sizeof *t);
}

void tok_tape_recycle(tok_tape *t, size_t keep_bytes)
{
    size_t held = t->cap_texts * sizeof *t->texts + t->cap_toks * sizeof *t->toks + t->cap_bytes;
    if (held > keep_bytes) {
        tok_tape_free(t);
        return;
    }
    t->n_texts = t->n_toks = t->n_bytes = 0;
}

void tok_tape_offer(const tok_tape *t)
{
    tl_tape = t;
    tl_tape_next = 0;
}

/* The offered tape's text equal to text[0..n), else NULL. Columns come in
 * the order they were recorded, so the search starts after the last hit. */
static const tok_tape_text *tape_find(const char *text, size_t n)
{
    const tok_tape *t = tl_tape;
    for (size_t k = 0; k < t->n_texts; k++) {
        size_t i = (tl_tape_next + k) % t->n_texts;
        const tok_tape_text *x = &t->texts[i];
        if (x->len == n && (x->text == text || memcmp(x->text, text, n) == 0)) {
            tl_tape_next = i + 1;
            return x;
        }
    }
    return NULL;
}

static int tape_replay(const tok_tape_text *x, void *ctx,
                       int (*token)(void *, int, const char *, int, int, int))
{
    const tok_tape *t = tl_tape;
    for (size_t i = x->first; i < x->first + x->n; i++) {
        const tok_tape_tok *k = &t->toks[i];
        int rc = token(ctx, k->flags & TOK_COLOCATED ? FTS5_TOKEN_COLOCATED : 0,
                       t->bytes + k->off, (int)k->len, (int)k->start, (int)k->end);
        if (rc)
            return rc;
    }
    return SQLITE_OK;
}

static int x_tokenize(Fts5Tokenizer *tok, void *ctx, int flags,
                      const char *text, int n,
                      int (*token)(void *, int, const char *, int, int, int))
{
    trove_fts5_tok *t = (trove_fts5_tok *)tok;
    fts5_cb_ctx c = {ctx, token};
    if (n <= 0)
        return SQLITE_OK;
    if (tl_tape && (flags & FTS5_TOKENIZE_DOCUMENT) && t->opts.stem == tape_opts.stem) {
        const tok_tape_text *x = tape_find(text, (size_t)n);
        if (x)
            return tape_replay(x, ctx, token);
    }
    tok_opts o = t->opts;
    o.query = (flags & FTS5_TOKENIZE_QUERY) != 0;
    return tok_run_flags(&o, text, (size_t)n, &c, on_token);
}

void *tok_fts5_api(sqlite3 *db)
{
    fts5_api *api = NULL;
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "SELECT fts5(?1)", -1, &st, NULL) != SQLITE_OK)
        return NULL;
    sqlite3_bind_pointer(st, 1, (void *)&api, "fts5_api_ptr", NULL);
    sqlite3_step(st);
    sqlite3_finalize(st);
    return api;
}

trove_err tok_register_fts5(sqlite3 *db)
{
    fts5_api *api = tok_fts5_api(db);
    if (!api || api->iVersion < 2)
        return trove_fail(TROVE_EUNSUPPORTED,
                          "SQLite has no usable FTS5 (fts5_api missing)");
    fts5_tokenizer tk = {x_create, x_delete, x_tokenize};
    int rc = api->xCreateTokenizer(api, "trove", NULL, &tk, NULL);
    if (rc != SQLITE_OK)
        return trove_fail(TROVE_ESQL, "registering FTS5 tokenizer: %s",
                          sqlite3_errstr(rc));
    return TROVE_OK;
}
