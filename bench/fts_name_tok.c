/* A SQLite extension for the sqlite3 shell: registers an FTS5 tokenizer
 * named "trove" that makes no tokens, so that the shell can open trove's
 * full-text tables (FTS5 loads a table's tokenizer by name) to read them,
 * e.g. through fts5vocab. Nothing it tokenizes is right: read, never write
 * or query with MATCH. bench/index_same.sh (FTS_LOGICAL=1) builds it:
 *   gcc -shared -fPIC -o fts_name_tok.so bench/fts_name_tok.c
 *   sqlite3 -cmd '.load ./fts_name_tok' INDEX "..." */
#include <stddef.h>

#include <sqlite3ext.h>
SQLITE_EXTENSION_INIT1

static int x_create(void *ud, const char **argv, int argc, Fts5Tokenizer **out)
{
    (void)ud, (void)argv, (void)argc;
    static int one;
    *out = (Fts5Tokenizer *)&one;
    return SQLITE_OK;
}

static void x_delete(Fts5Tokenizer *t)
{
    (void)t;
}

static int x_tokenize(Fts5Tokenizer *t, void *ctx, int flags, const char *text, int n,
                      int (*token)(void *, int, const char *, int, int, int))
{
    (void)t, (void)ctx, (void)flags, (void)text, (void)n, (void)token;
    return SQLITE_OK;
}

#ifdef _WIN32
__declspec(dllexport)
#endif
int sqlite3_ftsnametok_init(sqlite3 *db, char **err, const sqlite3_api_routines *api)
{
    (void)err;
    SQLITE_EXTENSION_INIT2(api);
    fts5_api *fts = NULL;
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "SELECT fts5(?1)", -1, &st, NULL) != SQLITE_OK)
        return SQLITE_ERROR;
    sqlite3_bind_pointer(st, 1, (void *)&fts, "fts5_api_ptr", NULL);
    sqlite3_step(st);
    sqlite3_finalize(st);
    if (!fts)
        return SQLITE_ERROR;
    fts5_tokenizer tk = {x_create, x_delete, x_tokenize};
    return fts->xCreateTokenizer(fts, "trove", NULL, &tk, NULL);
}
