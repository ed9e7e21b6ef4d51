/* Fuzz target: query_parse must always yield an FTS5 expression that SQLite
 * accepts (with the trove tokenizer) and that query_fts_phrases reads back
 * (which stays in bounds on any text), and tok_run must report in-bounds,
 * non-overlapping-start, increasing offsets on arbitrary bytes. */
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text/query.h"
#include "text/tok.h"

static sqlite3 *db;
static sqlite3_stmt *match;

static void setup(void)
{
    if (sqlite3_open(":memory:", &db) != SQLITE_OK || tok_register_fts5(db) != TROVE_OK)
        abort();
    const char *sql =
        "CREATE VIRTUAL TABLE t USING fts5(body, tokenize='trove');"
        "INSERT INTO t(body) VALUES ('Visit the cafe near the station'),"
        "('running runs ran'), ('中文检索系统的设计'), ('Node.js and C++'),"
        "('データベース 한국어 문서'), ('Crème brûlée Straße');";
    if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK)
        abort();
    if (sqlite3_prepare_v2(db, "SELECT rowid, highlight(t, 0, '[', ']') "
                           "FROM t WHERE t MATCH ?1", -1, &match, NULL) != SQLITE_OK)
        abort();
}

typedef struct offs { size_t len, last_start, last_end; int n; } offs;

static int check_cb(void *ctx, const char *t, size_t len, size_t s, size_t e)
{
    offs *o = ctx;
    /* Words never overlap; CJK bigrams overlap by one character, so starts
     * strictly increase and ends never go back. */
    if (len == 0 || len > 64 || t == NULL || s >= e || e > o->len ||
        (o->n && (s <= o->last_start || e < o->last_end))) {
        fprintf(stderr, "bad token: len %zu, %zu-%zu (text %zu, prev %zu-%zu)\n",
                len, s, e, o->len, o->last_start, o->last_end);
        abort();
    }
    o->last_start = s;
    o->last_end = e;
    o->n++;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!db)
        setup();
    for (int stem = 0; stem <= 1; stem++) {
        offs o = {size, 0, 0, 0};
        tok_opts opts = {.stem = stem};
        tok_run(&opts, (const char *)data, size, &o, check_cb);
    }

    char *in = malloc(size + 1);
    memcpy(in, data, size);
    in[size] = '\0';
    query_parsed q;
    query_parse(in, &q);
    /* query_fts_phrases: in bounds on any text; every expression
     * query_parse builds reads back, each phrase a quoted string */
    query_span sp[128];
    size_t n_neg, n = query_fts_phrases(in, sp, 128, &n_neg);
    for (size_t i = 0; i < n; i++)
        if (sp[i].off + sp[i].len > size || in[sp[i].off] != '"')
            abort();
    free(in);
    if (q.fts) {
        size_t len = strlen(q.fts);
        n = query_fts_phrases(q.fts, sp, 128, &n_neg);
        if (n == 0) {
            fprintf(stderr, "not read back: %s\n", q.fts);
            abort();
        }
        for (size_t i = 0; i < n; i++)
            if (sp[i].off + sp[i].len > len || q.fts[sp[i].off] != '"')
                abort();
    }
    if (!q.plain)
        abort();
    if (q.fts) {
        sqlite3_bind_text(match, 1, q.fts, -1, SQLITE_STATIC);
        int rc;
        while ((rc = sqlite3_step(match)) == SQLITE_ROW)
            ;
        if (rc != SQLITE_DONE) {
            fprintf(stderr, "MATCH %s: %s\n", q.fts, sqlite3_errmsg(db));
            abort();
        }
        sqlite3_reset(match);
        sqlite3_clear_bindings(match);
    }
    query_free(&q);
    return 0;
}
