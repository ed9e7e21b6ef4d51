/* store_lens — see store_lens.h. */
#include "store/store_lens.h"

#include <stdint.h>
#include <stdlib.h>

#include "store/store_int.h"
#include "util/err.h"
#include "util/mem.h"

/* Row ids past this are asked of FTS5 every time (a dense array by id:
 * 64 MiB at most). */
#define LENS_MAX_ID ((int64_t)1 << 24)

struct store_lens {
    uint32_t *len;       /* by row id: length + 1; 0: not read yet */
    size_t cap;
    int64_t version;     /* data_version they were read at (-1: none yet) */
};

void store_lens_keep(store *st)
{
    if (!st->title_lens && sqlite3_db_readonly(st->db, "main") == 1) {
        st->title_lens = xcalloc(1, sizeof *st->title_lens);
        st->title_lens->version = -1;
    }
}

store_lens *store_lens_current(store *st)
{
    store_lens *k = st->title_lens;
    int stale = k ? store_kept_stale(st, &k->version) : -1;
    if (stale < 0)
        return NULL;   /* FTS5's lengths, as without a keeper */
    if (stale) {
        free(k->len);
        k->len = NULL;
        k->cap = 0;
    }
    return k;
}

int store_lens_get(store_lens *k, const Fts5ExtensionApi *api, Fts5Context *fts, double *d)
{
    int64_t id = api->xRowid(fts);
    if (id >= 0 && (uint64_t)id < k->cap && k->len[id]) {
        *d = (double)(k->len[id] - 1);
        return SQLITE_OK;
    }
    int n_tok = 0;
    int rc = api->xColumnSize(fts, -1, &n_tok);
    *d = (double)n_tok;
    if (rc == SQLITE_OK && id >= 0 && id < LENS_MAX_ID && n_tok >= 0) {
        xgrow_zero(&k->len, &k->cap, (size_t)id + 1, sizeof *k->len);
        k->len[id] = (uint32_t)n_tok + 1;
    }
    return rc;
}

void store_lens_free(store *st)
{
    if (st->title_lens) {
        free(st->title_lens->len);
        free(st->title_lens);
        st->title_lens = NULL;
    }
}
