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

static int x_tokenize(Fts5Tokenizer *tok, void *ctx, int flags,
                      const char *text, int n,
                      int (*token)(void *, int, const char *, int, int, int))
{
    trove_fts5_tok *t = (trove_fts5_tok *)tok;
    fts5_cb_ctx c = {ctx, token};
    if (n <= 0)
        return SQLITE_OK;
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
