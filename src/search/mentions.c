/* mentions: a note's names in other notes' text (search/mentions.h). */
#include "search/mentions.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text/tok.h"
#include "util/buf.h"
#include "util/mem.h"

#define NAME_TOKENS_MAX 32

typedef struct name_toks {
    char *tok[NAME_TOKENS_MAX];
    size_t n;
} name_toks;

static int on_name_token(void *ctx, const char *tok, size_t len, size_t start, size_t end)
{
    (void)start, (void)end;
    name_toks *nt = ctx;
    if (nt->n == NAME_TOKENS_MAX)
        return 1;
    nt->tok[nt->n++] = xstrndup(tok, len);
    return 0;
}

static void name_toks_free(name_toks *nt)
{
    for (size_t i = 0; i < nt->n; i++)
        free(nt->tok[i]);
    nt->n = 0;
}

static const tok_opts mention_tok = {.stem = 1, .query = 1};

/* Scan state of one line: how many of the name's tokens matched in a row. */
typedef struct line_scan {
    const name_toks *nt;
    size_t at;
    int found;
} line_scan;

static int same_tok(const char *a, const char *b, size_t len)
{
    return strlen(a) == len && memcmp(a, b, len) == 0;
}

static int on_line_token(void *ctx, const char *tok, size_t len, size_t start, size_t end)
{
    (void)start, (void)end;
    line_scan *ls = ctx;
    if (same_tok(ls->nt->tok[ls->at], tok, len))
        ls->at++;
    else
        ls->at = same_tok(ls->nt->tok[0], tok, len) ? 1 : 0;
    if (ls->at == ls->nt->n) {
        ls->found = 1;
        return 1;
    }
    return 0;
}

typedef struct find_ctx {
    const char *fts;
    const name_toks *nt;
    const char *name;
    const int64_t *skip;
    size_t n_skip;
    mention_row **out;
    size_t *n, cap;
} find_ctx;

static void bind_find(void *ctx, sqlite3_stmt *s)
{
    sqlite3_bind_text(s, 1, ((const find_ctx *)ctx)->fts, -1, SQLITE_STATIC);
}

static int skipped(const find_ctx *f, int64_t doc_id)
{
    for (size_t i = 0; i < f->n_skip; i++)
        if (f->skip[i] == doc_id)
            return 1;
    for (size_t i = 0; i < *f->n; i++)   /* another name found it first */
        if ((*f->out)[i].doc_id == doc_id)
            return 1;
    return 0;
}

static char *col_dup(sqlite3_stmt *s, int col)
{
    const char *t = (const char *)sqlite3_column_text(s, col);
    return xstrdup(t ? t : "");
}

static char *trimmed(const char *p, size_t len)
{
    while (len && (*p == ' ' || *p == '\t'))
        p++, len--;
    while (len && (p[len - 1] == ' ' || p[len - 1] == '\t' || p[len - 1] == '\r'))
        len--;
    return xstrndup(p, len);
}

/* Columns: doc_id, line_start, body, docid, collection, root, path, title. */
static trove_err row_candidate(void *ctx, sqlite3_stmt *s)
{
    find_ctx *f = ctx;
    int64_t doc_id = sqlite3_column_int64(s, 0);
    if (skipped(f, doc_id))
        return TROVE_OK;
    const char *body = (const char *)sqlite3_column_text(s, 2);
    size_t len = (size_t)sqlite3_column_bytes(s, 2);
    int line = sqlite3_column_int(s, 1);
    for (const char *p = body, *end = body ? body + len : NULL; p && p < end; line++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        line_scan ls = {f->nt, 0, 0};
        tok_run(&mention_tok, p, n, &ls, on_line_token);
        if (ls.found) {
            xgrow(f->out, &f->cap, *f->n + 1, sizeof **f->out);
            mention_row *r = &(*f->out)[(*f->n)++];
            memset(r, 0, sizeof *r);
            r->doc_id = doc_id;
            const char *docid = (const char *)sqlite3_column_text(s, 3);
            snprintf(r->docid, sizeof r->docid, "%s", docid ? docid : "");
            r->collection = col_dup(s, 4);
            r->root = col_dup(s, 5);
            r->path = col_dup(s, 6);
            r->title = col_dup(s, 7);
            r->name = xstrdup(f->name);
            r->line = line;
            r->text = trimmed(p, n);
            return TROVE_OK;   /* one line per note is enough to show it */
        }
        p += n + (nl != NULL);
    }
    return TROVE_OK;
}

static int cmp_row(const void *a, const void *b)
{
    const mention_row *x = a, *y = b;
    int c = strcmp(x->collection, y->collection);
    if (!c)
        c = strcmp(x->path, y->path);
    return c ? c : x->line - y->line;
}

trove_err mentions_find(store *st, const char *const *names, size_t n_names, const int64_t *skip,
                        size_t n_skip, mention_row **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    trove_err rc = store_read_begin(st);
    if (rc)
        return rc;
    size_t cap = 0;
    for (size_t i = 0; rc == TROVE_OK && i < n_names; i++) {
        name_toks nt = {0};
        tok_run(&mention_tok, names[i], strlen(names[i]), &nt, on_name_token);
        if (nt.n == 0 || nt.n == NAME_TOKENS_MAX) {
            name_toks_free(&nt);
            continue;
        }
        /* The name as one FTS5 phrase in the body column, quotes doubled. */
        tbuf fts = {0};
        tbuf_puts(&fts, "body : \"");
        for (const char *p = names[i]; *p; p++) {
            if (*p == '"')
                tbuf_putc(&fts, '"');
            tbuf_putc(&fts, *p);
        }
        tbuf_putc(&fts, '"');
        find_ctx f = {fts.data, &nt, names[i], skip, n_skip, out, n, cap};
        rc = store_each(st,
            "SELECT c.doc_id, c.line_start, f.body, d.docid, col.name, col.root, d.path, d.title"
            " FROM chunks_fts f JOIN chunks c ON c.id = f.rowid JOIN docs d ON d.id = c.doc_id"
            " JOIN collections col ON col.id = d.collection_id"
            " WHERE chunks_fts MATCH ?1 ORDER BY c.doc_id, c.seq",
            "finding unlinked mentions", bind_find, row_candidate, &f);
        cap = f.cap;
        tbuf_free(&fts);
        name_toks_free(&nt);
    }
    store_read_end(st);
    if (rc) {
        mention_rows_free(*out, *n);
        *out = NULL;
        *n = 0;
        return rc;
    }
    if (*n > 1)
        qsort(*out, *n, sizeof **out, cmp_row);
    return TROVE_OK;
}

void mention_rows_free(mention_row *r, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(r[i].collection);
        free(r[i].root);
        free(r[i].path);
        free(r[i].title);
        free(r[i].name);
        free(r[i].text);
    }
    free(r);
}
