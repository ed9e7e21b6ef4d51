/* store_snap — snapshots: the undo log written as notes change, the
 * snapshot row written at commit, listing, and rollback. See store.h and
 * docs/architecture.md ("Snapshots").
 *
 * The live tables always hold the current snapshot, so readers need nothing
 * new: a reader's SQLite read transaction sees exactly one committed
 * snapshot. A write transaction that changes a note saves, at the note id's
 * first change, its rows as they were (or that it did not exist) under the
 * snapshot id the transaction will commit as; later changes of that id in
 * the same transaction save nothing. So the undo rows of snapshot k are
 * exactly what it takes to turn state k back into state k-1, and their size
 * is proportional to what k changed. */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store/store.h"
#include "store/store_int.h"
#include "store/store_vec.h"
#include "util/buf.h"
#include "util/mem.h"

/* ---- small helpers ---- */

/* ?1 = a and ?2 = b where the statement has them, for store_each. */
typedef struct ab_args {
    int64_t a, b;
    int64_t *out;   /* the first column of the (last) row, when wanted */
} ab_args;

static void bind_ab(void *ctx, sqlite3_stmt *s)
{
    const ab_args *x = ctx;
    if (sqlite3_bind_parameter_count(s) >= 1)
        sqlite3_bind_int64(s, 1, x->a);
    if (sqlite3_bind_parameter_count(s) >= 2)
        sqlite3_bind_int64(s, 2, x->b);
}

static trove_err row_i64(void *ctx, sqlite3_stmt *s)
{
    const ab_args *x = ctx;
    if (x->out)
        *x->out = sqlite3_column_int64(s, 0);
    return TROVE_OK;
}

/* Run a statement with ?1 = a and ?2 = b where it has them. */
static trove_err exec_ab(store *st, const char *sql, int64_t a, int64_t b)
{
    ab_args x = {a, b, NULL};
    return store_each(st, sql, "writing snapshot rows", bind_ab, row_i64, &x);
}

/* The first column of a one-row query as an integer (0 when no row). */
static trove_err query_i64(store *st, const char *sql, int64_t a, int64_t *out)
{
    *out = 0;
    ab_args x = {a, 0, out};
    return store_each(st, sql, "reading snapshots", bind_ab, row_i64, &x);
}

static trove_err current_id(store *st, int64_t *id)
{
    return query_i64(st, "SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'snapshot'", 0, id);
}

/* The id the open transaction commits as: one above the current snapshot. */
static trove_err snap_open(store *st)
{
    if (st->snap_id)
        return TROVE_OK;
    int64_t cur;
    trove_err rc = current_id(st, &cur);
    if (rc)
        return rc;
    st->snap_id = cur + 1;
    /* The first snapshot of an index has no predecessor to roll back to:
     * its changes are not recorded (an initial `update` of 10,000 notes
     * writes no undo rows). */
    st->snap_bare = cur == 0;
    return TROVE_OK;
}

void snap_abort(store *st)
{
    st->snap_id = 0;
    st->snap_bare = 0;
    strcpy(st->snap_kind, "update");
    free(st->snap_note);
    st->snap_note = NULL;
}

void store_snapshot_keep(store *st, int keep)
{
    st->snap_keep = keep < 1 ? 1 : keep > STORE_SNAPSHOTS_MAX ? STORE_SNAPSHOTS_MAX : keep;
}

void store_snapshot_label(store *st, const char *kind, const char *note)
{
    snprintf(st->snap_kind, sizeof st->snap_kind, "%s", kind ? kind : "update");
    free(st->snap_note);
    st->snap_note = note && *note ? xstrdup(note) : NULL;
}

/* ---- recording ---- */

/* The vectors of a note's chunks, every model, read through vec_map. A
 * vector that cannot be read is left out: vectors are a cache of (chunk
 * text, model), and `trove embed` makes a missing one again. */
static trove_err record_vectors(store *st, int64_t doc_id)
{
    static const char list_sql[] = "SELECT m.chunk_id, m.model_id, m.seg_id, m.slot, vm.dim"
        " FROM chunks c JOIN vec_map m ON m.chunk_id = c.id JOIN vec_models vm"
        " ON vm.id = m.model_id WHERE c.doc_id = ?1";
    static const char ins_sql[] = "INSERT INTO undo_vecs(snap, chunk_id, model_id, text_hash,"
        " scale, q) VALUES (?,?,?,?,?,?)";
    sqlite3_stmt *list = store_stmt_get(st, list_sql);
    if (!list)
        return store_fail(st, "listing vectors of a note");
    sqlite3_stmt *ins = store_stmt_get(st, ins_sql);
    if (!ins) {
        store_stmt_put(st, list);
        return store_fail(st, "saving vectors of a note");
    }
    sqlite3_bind_int64(list, 1, doc_id);
    trove_err rc = TROVE_OK;
    int8_t *q = NULL;
    while (rc == TROVE_OK && store_step(st, list, "listing vectors of a note", &rc) > 0) {
        int dim = sqlite3_column_int(list, 4);
        if (dim <= 0 || dim > VEC_MAX_DIM)
            continue;
        q = xrealloc(q, (size_t)dim);
        float scale;
        uint64_t hash;
        if (store_vec_read(st, sqlite3_column_int64(list, 2), (uint32_t)sqlite3_column_int64(list, 3),
                           dim, q, &scale, &hash) != TROVE_OK)
            continue;
        sqlite3_reset(ins);
        sqlite3_bind_int64(ins, 1, st->snap_id);
        sqlite3_bind_int64(ins, 2, sqlite3_column_int64(list, 0));
        sqlite3_bind_int64(ins, 3, sqlite3_column_int64(list, 1));
        sqlite3_bind_int64(ins, 4, (int64_t)hash);
        sqlite3_bind_double(ins, 5, scale);
        sqlite3_bind_blob(ins, 6, q, dim, SQLITE_STATIC);
        if (sqlite3_step(ins) != SQLITE_DONE)
            rc = store_fail(st, "saving a vector");
    }
    free(q);
    store_stmt_put(st, list);
    store_stmt_put(st, ins);
    return rc;
}

/* The docs row (with its title row) of a note as it is, under snapshot
 * ?1 with kind ?3; nothing when the id has a row there already. */
static const char save_doc_sql[] =
    "INSERT OR IGNORE INTO undo_docs(snap, doc_id, kind, collection_id, path,"
    " path_key, stem, docid, title, size, mtime_ns, hash, meta, n_lines, in_degree, lang,"
    " t_title, t_aliases, t_filename) SELECT ?1, d.id, ?3, d.collection_id, d.path,"
    " d.path_key, d.stem, d.docid, d.title, d.size, d.mtime_ns, d.hash, d.meta, d.n_lines,"
    " d.in_degree, d.lang, (SELECT title FROM titles_fts WHERE rowid = d.id),"
    " (SELECT aliases FROM titles_fts WHERE rowid = d.id),"
    " (SELECT filename FROM titles_fts WHERE rowid = d.id) FROM docs d WHERE d.id = ?2";

static trove_err save_doc(store *st, int64_t doc_id, int kind, int *saved)
{
    sqlite3_stmt *s = store_stmt_get(st, save_doc_sql);
    if (!s)
        return store_fail(st, "saving a note");
    sqlite3_bind_int64(s, 1, st->snap_id);
    sqlite3_bind_int64(s, 2, doc_id);
    sqlite3_bind_int(s, 3, kind);
    int r = sqlite3_step(s);
    trove_err rc = r == SQLITE_DONE ? TROVE_OK : store_fail(st, "saving a note");
    store_stmt_put(st, s);
    if (rc)
        return rc;
    *saved = sqlite3_changes(store_db(st)) > 0;
    return TROVE_OK;
}

/* Everything of a note but its docs row: chunks with their text, aliases,
 * tags, links, the targets of links pointing at it, vectors. */
static trove_err save_note_rows(store *st, int64_t doc_id)
{
    static const char *const sqls[] = {
        "INSERT INTO undo_chunks(snap, id, doc_id, seq, heading, start_byte, end_byte, line_start,"
        " line_end, f_heading, f_body) SELECT ?1, c.id, c.doc_id, c.seq, c.heading, c.start_byte,"
        " c.end_byte, c.line_start, c.line_end, f.heading, f.body FROM chunks c CROSS JOIN"
        " chunks_fts f ON f.rowid = c.id WHERE c.doc_id = ?2",
        "INSERT INTO undo_names(snap, doc_id, name) SELECT ?1, doc_id, name FROM names"
        " WHERE doc_id = ?2 ORDER BY rowid",
        "INSERT INTO undo_tags(snap, doc_id, tag) SELECT ?1, doc_id, tag FROM tags WHERE doc_id = ?2",
        "INSERT INTO undo_links(snap, id, src_doc, kind, target, target_key, fragment, line, dst_doc)"
        " SELECT ?1, id, src_doc, kind, target, target_key, fragment, line, dst_doc FROM links"
        " WHERE src_doc = ?2",
        /* Links of notes whose links this snapshot has not saved (not
         * recorded, or only touched) that point here: deleting this note
         * unresolves them, and they may then resolve elsewhere, so their
         * target is saved (the first value wins). */
        "INSERT OR IGNORE INTO undo_dst(snap, link_id, dst_doc) SELECT ?1, l.id, l.dst_doc"
        " FROM links l WHERE l.dst_doc = ?2 AND NOT EXISTS (SELECT 1 FROM undo_docs u"
        " WHERE u.snap = ?1 AND u.doc_id = l.src_doc AND u.kind != 2)",
    };
    trove_err rc = TROVE_OK;
    for (size_t i = 0; rc == TROVE_OK && i < sizeof sqls / sizeof *sqls; i++)
        rc = exec_ab(st, sqls[i], st->snap_id, doc_id);
    return rc ? rc : record_vectors(st, doc_id);
}

trove_err snap_record_doc(store *st, int64_t doc_id)
{
    trove_err rc = snap_open(st);
    if (rc || st->snap_bare)
        return rc;
    int saved;
    if ((rc = save_doc(st, doc_id, 1, &saved)) != TROVE_OK)
        return rc;
    if (!saved) {
        /* Recorded already: nothing more, unless only as touched (its
         * docs row as before is saved; the rest is unchanged since). */
        rc = exec_ab(st, "UPDATE undo_docs SET kind = 1 WHERE snap = ?1 AND doc_id = ?2"
                     " AND kind = 2", st->snap_id, doc_id);
        if (rc || sqlite3_changes(store_db(st)) == 0)
            return rc;
    }
    return save_note_rows(st, doc_id);
}

trove_err snap_record_doc_touch(store *st, int64_t doc_id)
{
    trove_err rc = snap_open(st);
    if (rc || st->snap_bare)
        return rc;
    int saved;
    return save_doc(st, doc_id, 2, &saved);
}

trove_err snap_record_doc_created(store *st, int64_t doc_id)
{
    trove_err rc = snap_open(st);
    if (rc || st->snap_bare)
        return rc;
    return exec_ab(st, "INSERT OR IGNORE INTO undo_docs(snap, doc_id, kind) VALUES (?1, ?2, 0)",
                   st->snap_id, doc_id);
}

trove_err snap_record_coll(store *st, int64_t coll_id)
{
    trove_err rc = snap_open(st);
    if (rc || st->snap_bare)
        return rc;
    return exec_ab(st, "INSERT OR IGNORE INTO undo_colls(snap, coll_id, kind, name, root, updated_at)"
                   " SELECT ?1, id, 1, name, root, updated_at FROM collections WHERE id = ?2",
                   st->snap_id, coll_id);
}

trove_err snap_record_coll_created(store *st, int64_t coll_id)
{
    trove_err rc = snap_open(st);
    if (rc || st->snap_bare)
        return rc;
    return exec_ab(st, "INSERT OR IGNORE INTO undo_colls(snap, coll_id, kind) VALUES (?1, ?2, 0)",
                   st->snap_id, coll_id);
}

/* ---- commit ---- */

static const char *const undo_prune[] = {
    "DELETE FROM undo_docs WHERE snap <= ?1", "DELETE FROM undo_chunks WHERE snap <= ?1",
    "DELETE FROM undo_names WHERE snap <= ?1", "DELETE FROM undo_tags WHERE snap <= ?1",
    "DELETE FROM undo_links WHERE snap <= ?1", "DELETE FROM undo_dst WHERE snap <= ?1",
    "DELETE FROM undo_vecs WHERE snap <= ?1", "DELETE FROM undo_colls WHERE snap <= ?1",
};

/* Keep the newest snap_keep snapshots listable. Rolling back to the oldest
 * kept one needs the undo rows of the newer ones only, so the undo rows of
 * every snapshot up to the oldest kept go (each row is deleted once: the
 * cost is that of the old changes, not of the index). */
static trove_err prune(store *st, int64_t current)
{
    trove_err rc = exec_ab(st, "DELETE FROM snapshots WHERE id <= ?1 - ?2", current, st->snap_keep);
    int64_t oldest;
    if (rc == TROVE_OK)
        rc = query_i64(st, "SELECT coalesce(min(id), 0) FROM snapshots", 0, &oldest);
    for (size_t i = 0; rc == TROVE_OK && i < sizeof undo_prune / sizeof *undo_prune; i++)
        rc = exec_ab(st, undo_prune[i], oldest, 0);
    return rc;
}

/* Counts of the new snapshot: the previous snapshot's, plus what the
 * recorded notes have now, less what they had (O(change)); a first
 * snapshot counts the tables. Notes added, removed and modified are by
 * (collection, path): an edited note gets a new id, but is one note. */
static trove_err snapshot_counts(store *st, int64_t n, store_snapshot *s)
{
    sqlite3_stmt *q;
    int bare = st->snap_bare;
    int64_t prev_id = n - 1;
    if (!bare) {
        /* An index whose previous snapshot row is missing (never: the
         * current one is always kept) counts the tables instead. */
        int64_t have;
        trove_err rc = query_i64(st, "SELECT count(*) FROM snapshots WHERE id = ?1", prev_id, &have);
        if (rc)
            return rc;
        bare = !have;
    }
    const char *sql = bare
        ? "SELECT (SELECT count(*) FROM docs), (SELECT count(*) FROM chunks),"
          " (SELECT count(*) FROM links), (SELECT count(*) FROM docs), 0, 0, 0"
        : "SELECT p.docs - (SELECT count(*) FROM undo_docs WHERE snap = ?1 AND kind = 1)"
          "  + (SELECT count(*) FROM undo_docs u JOIN docs d ON d.id = u.doc_id WHERE u.snap = ?1"
          "   AND u.kind != 2),"
          " p.chunks - (SELECT count(*) FROM undo_chunks WHERE snap = ?1)"
          "  + (SELECT count(*) FROM undo_docs u JOIN chunks c ON c.doc_id = u.doc_id WHERE u.snap = ?1"
          "   AND u.kind != 2),"
          " p.links - (SELECT count(*) FROM undo_links WHERE snap = ?1)"
          "  + (SELECT count(*) FROM undo_docs u JOIN links l ON l.src_doc = u.doc_id WHERE u.snap = ?1"
          "   AND u.kind != 2),"
          " (SELECT count(*) FROM (SELECT d.collection_id, d.path FROM undo_docs u JOIN docs d"
          "   ON d.id = u.doc_id WHERE u.snap = ?1 AND u.kind != 2 EXCEPT SELECT collection_id, path FROM undo_docs"
          "   WHERE snap = ?1 AND kind = 1)),"
          " (SELECT count(*) FROM (SELECT collection_id, path FROM undo_docs WHERE snap = ?1 AND"
          "   kind = 1 EXCEPT SELECT d.collection_id, d.path FROM undo_docs u JOIN docs d"
          "   ON d.id = u.doc_id WHERE u.snap = ?1 AND u.kind != 2)),"
          " (SELECT count(*) FROM (SELECT d.collection_id, d.path FROM undo_docs u JOIN docs d"
          "   ON d.id = u.doc_id WHERE u.snap = ?1 AND u.kind != 2 INTERSECT SELECT collection_id, path FROM undo_docs"
          "   WHERE snap = ?1 AND kind = 1)),"
          " (SELECT count(*) FROM (SELECT d.collection_id, d.path, d.hash FROM undo_docs u JOIN docs d"
          "   ON d.id = u.doc_id WHERE u.snap = ?1 AND u.kind != 2 INTERSECT SELECT collection_id, path, hash"
          "   FROM undo_docs WHERE snap = ?1 AND kind = 1))"
          " FROM snapshots p WHERE p.id = ?1 - 1";
    if (!(q = store_stmt_get(st, sql)))
        return store_fail(st, "counting the snapshot");
    sqlite3_bind_int64(q, 1, n);
    int r = sqlite3_step(q);
    if (r == SQLITE_ROW) {
        s->docs = sqlite3_column_int64(q, 0);
        s->chunks = sqlite3_column_int64(q, 1);
        s->links = sqlite3_column_int64(q, 2);
        s->added = sqlite3_column_int64(q, 3);
        s->removed = sqlite3_column_int64(q, 4);
        s->modified = sqlite3_column_int64(q, 5) - sqlite3_column_int64(q, 6);
    }
    store_stmt_put(st, q);
    return r == SQLITE_ROW ? TROVE_OK : store_fail(st, "counting the snapshot");
}

trove_err snap_finish(store *st)
{
    if (!st->snap_id)
        return TROVE_OK;   /* nothing but vectors changed: not a snapshot */
    int64_t n = st->snap_id;
    store_snapshot s = {0};
    trove_err rc = snapshot_counts(st, n, &s);
    if (rc)
        return rc;
    sqlite3_stmt *q;
    if (!(q = store_stmt_get(st, "INSERT INTO snapshots(id, created_at, kind, note, docs,"
                             " chunks, links, added, removed, modified) VALUES (?,?,?,?,?,?,?,?,?,?)")))
        return store_fail(st, "recording the snapshot");
    sqlite3_bind_int64(q, 1, n);
    sqlite3_bind_int64(q, 2, (int64_t)time(NULL));
    sqlite3_bind_text(q, 3, st->snap_kind, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 4, st->snap_note ? st->snap_note : "", -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 5, s.docs);
    sqlite3_bind_int64(q, 6, s.chunks);
    sqlite3_bind_int64(q, 7, s.links);
    sqlite3_bind_int64(q, 8, s.added);
    sqlite3_bind_int64(q, 9, s.removed);
    sqlite3_bind_int64(q, 10, s.modified);
    int r = sqlite3_step(q);
    store_stmt_put(st, q);
    if (r != SQLITE_DONE)
        return store_fail(st, "recording the snapshot");
    rc = exec_ab(st, "INSERT OR REPLACE INTO meta(key, value) VALUES ('snapshot', CAST(?1 AS TEXT))",
                 n, 0);
    return rc ? rc : prune(st, n);
}

trove_err snap_upgrade(store *st)
{
    trove_err rc = store_exec(st, SNAP_SCHEMA_SQL);
    if (rc == TROVE_OK)
        rc = store_exec(st, "INSERT OR IGNORE INTO snapshots(id, created_at, kind, note, docs, chunks,"
                            " links) SELECT 1, CAST(strftime('%s', 'now') AS INTEGER), 'upgrade',"
                            " 'the index as it was before snapshots', (SELECT count(*) FROM docs),"
                            " (SELECT count(*) FROM chunks), (SELECT count(*) FROM links)");
    if (rc == TROVE_OK)
        rc = store_exec(st, "INSERT OR REPLACE INTO meta(key, value) VALUES ('snapshot', '1')");
    return rc;
}

/* ---- reading ---- */

#define SNAP_COLS "id, created_at, kind, note, docs, chunks, links, added, removed, modified"

static void snap_row(sqlite3_stmt *q, store_snapshot *s)
{
    s->id = sqlite3_column_int64(q, 0);
    s->created_at = sqlite3_column_int64(q, 1);
    const char *kind = (const char *)sqlite3_column_text(q, 2);
    snprintf(s->kind, sizeof s->kind, "%s", kind ? kind : "");
    const char *note = (const char *)sqlite3_column_text(q, 3);
    s->note = xstrdup(note ? note : "");
    s->docs = sqlite3_column_int64(q, 4);
    s->chunks = sqlite3_column_int64(q, 5);
    s->links = sqlite3_column_int64(q, 6);
    s->added = sqlite3_column_int64(q, 7);
    s->removed = sqlite3_column_int64(q, 8);
    s->modified = sqlite3_column_int64(q, 9);
}

void store_snapshot_clear(store_snapshot *s)
{
    free(s->note);
    memset(s, 0, sizeof *s);
}

static trove_err row_current(void *ctx, sqlite3_stmt *q)
{
    store_snapshot *out = ctx;
    store_snapshot_clear(out);
    snap_row(q, out);
    return TROVE_OK;
}

trove_err store_snapshot_current(store *st, store_snapshot *out)
{
    memset(out, 0, sizeof *out);
    trove_err rc = store_each(st, "SELECT " SNAP_COLS " FROM snapshots WHERE id ="
                              " (SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'snapshot')",
                              "reading the current snapshot", NULL, row_current, out);
    if (rc) {
        store_snapshot_clear(out);
        return rc;
    }
    if (!out->note)
        out->note = xstrdup("");
    return TROVE_OK;
}

typedef struct snap_list {
    store_snapshot **out;
    size_t *n, cap;
    int64_t above, upto, limit;
} snap_list;

static void bind_snap_list(void *ctx, sqlite3_stmt *q)
{
    const snap_list *l = ctx;
    sqlite3_bind_int64(q, 1, l->above);
    sqlite3_bind_int64(q, 2, l->upto);
    sqlite3_bind_int64(q, 3, l->limit);
}

static trove_err row_snap_list(void *ctx, sqlite3_stmt *q)
{
    snap_list *l = ctx;
    xgrow(l->out, &l->cap, *l->n + 1, sizeof **l->out);
    snap_row(q, &(*l->out)[(*l->n)++]);
    return TROVE_OK;
}

trove_err store_snapshots(store *st, size_t limit, store_snapshot **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    int64_t cur;
    trove_err rc = current_id(st, &cur);
    if (rc)
        return rc;
    snap_list l = {out, n, 0, cur - st->snap_keep, cur, limit ? (int64_t)limit : -1};
    rc = store_each(st, "SELECT " SNAP_COLS " FROM snapshots WHERE id > ?1"
                    " AND id <= ?2 ORDER BY id DESC LIMIT ?3", "listing snapshots",
                    bind_snap_list, row_snap_list, &l);
    if (rc) {
        store_snapshots_free(*out, *n);
        *out = NULL;
        *n = 0;
    }
    return rc;
}

void store_snapshots_free(store_snapshot *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(s[i].note);
    free(s);
}

/* ---- undo and rollback ---- */

typedef struct id_list {
    int64_t k;
    int64_t **ids;
    size_t *n, cap;
} id_list;

static void bind_k(void *ctx, sqlite3_stmt *q)
{
    sqlite3_bind_int64(q, 1, ((const id_list *)ctx)->k);
}

static trove_err row_id(void *ctx, sqlite3_stmt *q)
{
    id_list *l = ctx;
    xgrow(l->ids, &l->cap, *l->n + 1, sizeof **l->ids);
    (*l->ids)[(*l->n)++] = sqlite3_column_int64(q, 0);
    return TROVE_OK;
}

static trove_err ids_of(store *st, const char *sql, int64_t k, int64_t **ids, size_t *n)
{
    *ids = NULL;
    *n = 0;
    id_list l = {k, ids, n, 0};
    trove_err rc = store_each(st, sql, "reading undo rows", bind_k, row_id, &l);
    if (rc) {
        free(*ids);
        *ids = NULL;
        *n = 0;
    }
    return rc;
}

/* Put the saved vectors of snapshot k back, as one new segment per model
 * (store_vec_add: vec_map rows, merging). A model dropped since has none. */
static trove_err restore_vectors(store *st, int64_t k)
{
    sqlite3_stmt *q;
    if (!(q = store_stmt_get(st, "SELECT u.model_id, m.dim, u.chunk_id, u.text_hash, u.scale,"
                             " u.q FROM undo_vecs u JOIN vec_models m ON m.id = u.model_id"
                             " WHERE u.snap = ?1 AND length(u.q) = m.dim ORDER BY u.model_id, u.chunk_id")))
        return store_fail(st, "reading saved vectors");
    sqlite3_bind_int64(q, 1, k);
    store_vec_entry *e = NULL;
    int8_t **bufs = NULL;
    size_t n = 0, cap = 0, cap_b = 0;
    int64_t model = 0;
    int dim = 0, r;
    trove_err rc = TROVE_OK;
    for (;;) {
        r = sqlite3_step(q);
        int64_t m = r == SQLITE_ROW ? sqlite3_column_int64(q, 0) : 0;
        if (n && (r != SQLITE_ROW || m != model)) {
            size_t added;
            rc = store_vec_add(st, model, dim, e, n, &added);
            for (size_t i = 0; i < n; i++)
                free(bufs[i]);
            n = 0;
            if (rc)
                break;
        }
        if (r != SQLITE_ROW)
            break;
        model = m;
        dim = sqlite3_column_int(q, 1);
        xgrow(&e, &cap, n + 1, sizeof *e);
        xgrow(&bufs, &cap_b, n + 1, sizeof *bufs);
        bufs[n] = xmalloc((size_t)dim);
        memcpy(bufs[n], sqlite3_column_blob(q, 5), (size_t)dim);
        e[n] = (store_vec_entry){sqlite3_column_int64(q, 2), (uint64_t)sqlite3_column_int64(q, 3),
                                 (float)sqlite3_column_double(q, 4), bufs[n]};
        n++;
    }
    for (size_t i = 0; i < n; i++)
        free(bufs[i]);
    store_stmt_put(st, q);
    free(e);
    free(bufs);
    if (rc == TROVE_OK && r != SQLITE_DONE)
        rc = store_fail(st, "reading saved vectors");
    return rc;
}

/* Turn state k into state k-1 (k is the current state), recording what
 * changes under the open snapshot st->snap_id like any other write.
 *
 * Why restored ids cannot collide: the rows of state k whose ids differ
 * from state k-1 all belong to notes (and collections) that k changed, and
 * every one of those ids is in k's undo rows (a note id is recorded at its
 * first change in k, whether it was deleted, created, or both). Their
 * current rows are deleted first, so after that every remaining row is
 * unchanged since k-1, and the before-images, being rows of state k-1 too,
 * fit beside them with their original ids (note, chunk, full-text rowid,
 * link). This holds only for the newest snapshot: undo strictly one at a
 * time, newest first. */
static trove_err undo_one(store *st, int64_t k)
{
    int64_t n = st->snap_id;
    int64_t *ids;
    size_t n_ids;
    /* 1. Current rows of every recorded note, through the normal delete
     * path (its vectors go dead; the rollback snapshot records them). */
    trove_err rc = ids_of(st, "SELECT doc_id FROM undo_docs WHERE snap = ?1 AND kind != 2", k, &ids,
                          &n_ids);
    for (size_t i = 0; rc == TROVE_OK && i < n_ids; i++)
        rc = store_doc_delete(st, ids[i]);
    free(ids);
    if (rc)
        return rc;
    /* Notes k only touched (same bytes, new file time) get their file
     * size and time back, recorded as touched in the rollback snapshot. */
    rc = ids_of(st, "SELECT doc_id FROM undo_docs WHERE snap = ?1 AND kind = 2", k, &ids, &n_ids);
    for (size_t i = 0; rc == TROVE_OK && i < n_ids; i++)
        rc = snap_record_doc_touch(st, ids[i]);
    free(ids);
    if (rc == TROVE_OK)
        rc = exec_ab(st, "UPDATE docs SET size = u.size, mtime_ns = u.mtime_ns FROM undo_docs u"
                     " WHERE u.snap = ?1 AND u.kind = 2 AND docs.id = u.doc_id", k, 0);
    if (rc)
        return rc;
    /* 2. Collections: drop the recorded ones, put back those that existed. */
    rc = ids_of(st, "SELECT coll_id FROM undo_colls WHERE snap = ?1", k, &ids, &n_ids);
    for (size_t i = 0; rc == TROVE_OK && i < n_ids; i++) {
        rc = snap_record_coll(st, ids[i]);
        if (rc == TROVE_OK)
            rc = exec_ab(st, "DELETE FROM collections WHERE id = ?1", ids[i], 0);
    }
    free(ids);
    if (rc)
        return rc;
    /* 3. The before-images with their original ids; each restored note is
     * "created" in the rollback snapshot unless it had a row there. */
    static const char *const restore[] = {
        "INSERT INTO collections(id, name, root, updated_at) SELECT coll_id, name, root, updated_at"
        " FROM undo_colls WHERE snap = ?1 AND kind = 1",
        "INSERT OR IGNORE INTO undo_colls(snap, coll_id, kind) SELECT ?2, coll_id, 0 FROM undo_colls"
        " WHERE snap = ?1 AND kind = 1",
        "INSERT INTO docs(id, collection_id, path, path_key, stem, docid, title, size, mtime_ns, hash,"
        " meta, n_lines, in_degree, lang, tkey) SELECT doc_id, collection_id, path, path_key, stem,"
        " docid, title, size, mtime_ns, hash, meta, n_lines, in_degree, lang,"
        " trove_tkey(path, CASE WHEN json_valid(meta) THEN json_extract(meta, '$.permalink') END)"
        " FROM undo_docs"
        " WHERE snap = ?1 AND kind = 1",
        "INSERT OR IGNORE INTO undo_docs(snap, doc_id, kind) SELECT ?2, doc_id, 0 FROM undo_docs"
        " WHERE snap = ?1 AND kind = 1",
        "INSERT INTO titles_fts(rowid, title, aliases, filename) SELECT doc_id, t_title, t_aliases,"
        " t_filename FROM undo_docs WHERE snap = ?1 AND kind = 1",
        "INSERT INTO chunks(id, doc_id, seq, heading, start_byte, end_byte, line_start, line_end)"
        " SELECT id, doc_id, seq, heading, start_byte, end_byte, line_start, line_end"
        " FROM undo_chunks WHERE snap = ?1",
        "INSERT INTO chunks_fts(rowid, heading, body) SELECT id, f_heading, f_body FROM undo_chunks"
        " WHERE snap = ?1",
        "INSERT INTO names(doc_id, name) SELECT doc_id, name FROM undo_names WHERE snap = ?1"
        " ORDER BY rowid",
        "INSERT INTO tags(tag, doc_id) SELECT tag, doc_id FROM undo_tags WHERE snap = ?1",
        "INSERT INTO links(id, src_doc, kind, target, target_key, fragment, line, dst_doc)"
        " SELECT id, src_doc, kind, target, target_key, fragment, line, dst_doc FROM undo_links"
        " WHERE snap = ?1",
        /* 4. Targets of links of untouched notes, as they were; their
         * current targets first go to the rollback snapshot's undo rows. */
        "INSERT OR IGNORE INTO undo_dst(snap, link_id, dst_doc) SELECT ?2, l.id, l.dst_doc"
        " FROM undo_dst u JOIN links l ON l.id = u.link_id WHERE u.snap = ?1 AND NOT EXISTS"
        " (SELECT 1 FROM undo_docs d WHERE d.snap = ?2 AND d.doc_id = l.src_doc AND d.kind != 2)",
        "UPDATE links SET dst_doc = (SELECT u.dst_doc FROM undo_dst u WHERE u.snap = ?1"
        " AND u.link_id = links.id) WHERE id IN (SELECT link_id FROM undo_dst WHERE snap = ?1)",
        /* 5. A renamed collection's notes get their docids back. */
        "UPDATE docs SET docid = trove_docid((SELECT name FROM collections c"
        " WHERE c.id = docs.collection_id), path) WHERE collection_id IN (SELECT coll_id"
        " FROM undo_colls WHERE snap = ?1 AND kind = 1) AND docid != trove_docid((SELECT name"
        " FROM collections c WHERE c.id = docs.collection_id), path)",
    };
    for (size_t i = 0; rc == TROVE_OK && i < sizeof restore / sizeof *restore; i++)
        rc = exec_ab(st, restore[i], k, n);
    /* 6. Vectors, 7. links that dangle again re-resolve (only as state k-1
     * had them: a link left unresolved in a committed state has no
     * candidate in it) and in-degrees. */
    if (rc == TROVE_OK)
        rc = restore_vectors(st, k);
    if (rc == TROVE_OK)
        rc = store_links_resolve(st);
    return rc;
}

static trove_err not_kept(store *st, int64_t id, int64_t cur)
{
    int64_t *ids;
    size_t n;
    trove_err rc = ids_of(st, "SELECT id FROM snapshots WHERE id > ?1 ORDER BY id", cur - st->snap_keep,
                          &ids, &n);
    if (rc)
        return rc;
    tbuf b = {0};
    for (size_t i = 0; i < n; i++)
        tbuf_printf(&b, "%s%lld", i ? ", " : "", (long long)ids[i]);
    free(ids);
    rc = trove_fail(TROVE_ENOENT, "no snapshot %lld to roll back to; the index keeps %s%s (see "
                    "`trove snapshot list`)", (long long)id, n ? "snapshots " : "none",
                    n ? b.data : "");
    tbuf_free(&b);
    return rc;
}

trove_err store_snapshot_rollback(store *st, int64_t id, store_snapshot *made, int *noop)
{
    memset(made, 0, sizeof *made);
    *noop = 0;
    trove_err rc = store_begin(st);
    if (rc)
        return rc;
    int64_t cur, have = 0;
    rc = current_id(st, &cur);
    if (rc == TROVE_OK && id == cur && cur > 0) {
        store_rollback(st);
        *noop = 1;
        return store_snapshot_current(st, made);
    }
    if (rc == TROVE_OK)
        rc = query_i64(st, "SELECT count(*) FROM snapshots WHERE id = ?1", id, &have);
    if (rc == TROVE_OK && (!have || id > cur || id <= cur - st->snap_keep))
        rc = not_kept(st, id, cur);
    if (rc == TROVE_OK)
        rc = snap_open(st);
    for (int64_t k = cur; rc == TROVE_OK && k > id; k--)
        rc = undo_one(st, k);
    if (rc == TROVE_OK) {
        char note[64];
        snprintf(note, sizeof note, "rollback to %lld", (long long)id);
        store_snapshot_label(st, "rollback", note);
        rc = store_commit(st);
    }
    if (rc) {
        store_rollback(st);
        return rc;
    }
    return store_snapshot_current(st, made);
}
