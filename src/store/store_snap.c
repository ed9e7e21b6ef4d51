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
#include "store/store_nmap.h"
#include "store/store_nrec.h"
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

void store_snapshot_retention(store *st, const store_retention *r)
{
    st->snap_ret = *r;
    if (st->snap_ret.last < 1)
        st->snap_ret.last = 1;   /* the current one always stays */
}

int64_t store_snapshot_now(void)
{
    const char *fake = getenv("TROVE_NOW");
    if (fake && *fake) {
        char *end;
        long long v = strtoll(fake, &end, 10);
        if (*end == '\0' && v > 0)
            return (int64_t)v;
    }
    return (int64_t)time(NULL);
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
 * ?1 with kind ?3; nothing when the id has a row there already. (Kind 2,
 * "touched only", was written by older troves; it is ignored.) */
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
    int saved = 0;
    if ((rc = save_doc(st, doc_id, 1, &saved)) != TROVE_OK || !saved)
        return rc;   /* recorded already in this snapshot: nothing more */
    return save_note_rows(st, doc_id);
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

trove_err store_snapshot_coll_conf(store *st, const char *name, const char *conf)
{
    int64_t coll_id;
    trove_err rc = store_collection_id(st, name, &coll_id);
    if (rc == TROVE_ENOENT)
        return TROVE_OK;   /* not in the index: nothing to restore later */
    if (rc == TROVE_OK)
        rc = snap_open(st);
    if (rc || st->snap_bare)
        return rc;
    sqlite3_stmt *s = store_stmt_get(st, "INSERT OR REPLACE INTO undo_conf(snap, coll_id, conf)"
                                     " VALUES (?1, ?2, ?3)");
    if (!s)
        return store_fail(st, "saving a collection's settings");
    sqlite3_bind_int64(s, 1, st->snap_id);
    sqlite3_bind_int64(s, 2, coll_id);
    sqlite3_bind_text(s, 3, conf, -1, SQLITE_STATIC);
    store_step(st, s, "saving a collection's settings", &rc);
    store_stmt_put(st, s);
    return rc;
}

trove_err snap_record_coll_created(store *st, int64_t coll_id)
{
    trove_err rc = snap_open(st);
    if (rc || st->snap_bare)
        return rc;
    return exec_ab(st, "INSERT OR IGNORE INTO undo_colls(snap, coll_id, kind) VALUES (?1, ?2, 0)",
                   st->snap_id, coll_id);
}

/* ---- commit: counts ---- */

/* Notes added, removed and modified by snapshot j against the kept one
 * before it, by (collection, path): an edited note gets a new id but is one
 * note. The "before" side is j's before-images; the "after" side is state j
 * for the recorded ids: the before-image a later snapshot saved of the id
 * (the earliest one), else the live row. For the snapshot being committed
 * that is the live row; after a merge (below) it is how the counts of a
 * kept snapshot are made again. O(notes j recorded). */
static const char changes_sql[] =
    "WITH rec AS (SELECT u.doc_id AS id, (SELECT min(v.snap) FROM undo_docs v"
    "   WHERE v.doc_id = u.doc_id AND v.snap > ?1) AS s FROM undo_docs u"
    "   WHERE u.snap = ?1 AND u.kind != 2),"
    " aft AS (SELECT v.collection_id AS c, v.path AS p, v.hash AS h FROM rec JOIN undo_docs v"
    "   ON v.snap = rec.s AND v.doc_id = rec.id WHERE v.kind != 0"
    "  UNION ALL SELECT d.collection_id, d.path, d.hash FROM rec JOIN docs d ON d.id = rec.id"
    "   WHERE rec.s IS NULL),"
    " bef AS (SELECT collection_id AS c, path AS p, hash AS h FROM undo_docs"
    "   WHERE snap = ?1 AND kind = 1)"
    " SELECT (SELECT count(*) FROM (SELECT c, p FROM aft EXCEPT SELECT c, p FROM bef)),"
    "  (SELECT count(*) FROM (SELECT c, p FROM bef EXCEPT SELECT c, p FROM aft)),"
    "  (SELECT count(*) FROM (SELECT c, p FROM aft INTERSECT SELECT c, p FROM bef))"
    "  - (SELECT count(*) FROM (SELECT c, p, h FROM aft INTERSECT SELECT c, p, h FROM bef))";

static trove_err snapshot_changes(store *st, int64_t j, store_snapshot *s)
{
    sqlite3_stmt *q = store_stmt_get(st, changes_sql);
    if (!q)
        return store_fail(st, "counting the snapshot's changes");
    sqlite3_bind_int64(q, 1, j);
    trove_err rc = TROVE_OK;
    int r = store_step(st, q, "counting the snapshot's changes", &rc);
    if (r > 0) {
        s->added = sqlite3_column_int64(q, 0);
        s->removed = sqlite3_column_int64(q, 1);
        s->modified = sqlite3_column_int64(q, 2);
    } else if (r == 0) {
        rc = store_fail(st, "counting the snapshot's changes");
    }
    store_stmt_put(st, q);
    return rc;
}

/* Counts of the new snapshot: the previous snapshot's, plus what the
 * recorded notes have now, less what they had (O(change)); a first
 * snapshot counts the tables. */
static trove_err snapshot_counts(store *st, int64_t n, store_snapshot *s)
{
    int bare = st->snap_bare;
    if (!bare) {
        /* An index whose previous snapshot row is missing (never: the
         * current one is always kept) counts the tables instead. */
        int64_t have;
        trove_err rc = query_i64(st, "SELECT count(*) FROM snapshots WHERE id = ?1", n - 1, &have);
        if (rc)
            return rc;
        bare = !have;
    }
    const char *sql = bare
        ? "SELECT (SELECT count(*) FROM docs), (SELECT count(*) FROM chunks),"
          " (SELECT count(*) FROM links)"
        : "SELECT p.docs - (SELECT count(*) FROM undo_docs WHERE snap = ?1 AND kind = 1)"
          "  + (SELECT count(*) FROM undo_docs u JOIN docs d ON d.id = u.doc_id WHERE u.snap = ?1"
          "   AND u.kind != 2),"
          " p.chunks - (SELECT count(*) FROM undo_chunks WHERE snap = ?1)"
          "  + (SELECT count(*) FROM undo_docs u JOIN chunks c ON c.doc_id = u.doc_id WHERE u.snap = ?1"
          "   AND u.kind != 2),"
          " p.links - (SELECT count(*) FROM undo_links WHERE snap = ?1)"
          "  + (SELECT count(*) FROM undo_docs u JOIN links l ON l.src_doc = u.doc_id WHERE u.snap = ?1"
          "   AND u.kind != 2)"
          " FROM snapshots p WHERE p.id = ?1 - 1";
    sqlite3_stmt *q;
    if (!(q = store_stmt_get(st, sql)))
        return store_fail(st, "counting the snapshot");
    sqlite3_bind_int64(q, 1, n);
    int r = sqlite3_step(q);
    if (r == SQLITE_ROW) {
        s->docs = sqlite3_column_int64(q, 0);
        s->chunks = sqlite3_column_int64(q, 1);
        s->links = sqlite3_column_int64(q, 2);
    }
    store_stmt_put(st, q);
    if (r != SQLITE_ROW)
        return store_fail(st, "counting the snapshot");
    if (bare) {
        s->added = s->docs;
        return TROVE_OK;
    }
    return snapshot_changes(st, n, s);
}

/* ---- commit: retention ---- */

/* The undo tables and the column naming their snapshot's rows. */
static const char *const undo_tables[] = {
    "undo_docs", "undo_chunks", "undo_names", "undo_tags", "undo_links", "undo_dst",
    "undo_vecs", "undo_colls", "undo_conf",
};

static trove_err exec_fmt_ab(store *st, const char *fmt, const char *table, int64_t a, int64_t b)
{
    char sql[256];
    snprintf(sql, sizeof sql, fmt, table);
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(store_db(st), sql, -1, &s, NULL) != SQLITE_OK)
        return store_fail(st, sql);
    sqlite3_bind_int64(s, 1, a);
    if (sqlite3_bind_parameter_count(s) >= 2)
        sqlite3_bind_int64(s, 2, b);
    int r = sqlite3_step(s);
    sqlite3_finalize(s);
    return r == SQLITE_DONE ? TROVE_OK : store_fail(st, "pruning snapshots");
}

/* Fold the undo rows of snapshot b into those of the older snapshot a, when
 * the snapshots between them go: afterwards a's rows turn the state of b
 * into the state before a (undo a ∘ undo b in one). Per note id (and per
 * collection, per link target), the oldest before-image wins: a's row says
 * what the id was before a, b's row only what it was between. What b keeps
 * is then rewritten where it refers to ids a changed:
 *
 * - a target saved by b for a link (undo_dst) whose id is one of a's saved
 *   links belongs to a note a rewrote: that link id is a's now, so b's row
 *   goes;
 * - a target (undo_dst, or a saved link's dst_doc) that is a note a
 *   recorded did not exist before a as that note, and a link left pointing
 *   at it from before a was dangling then (a link changes target only when
 *   its target goes, which a would have saved, or from dangling when it
 *   resolves): it becomes NULL, and the re-resolve after the undo finds
 *   nothing for it, as before a.
 *
 * The rows b keeps are of notes a did not change, so their ids (note,
 * chunk, link) are those before a and cannot collide with a's. Cost: the
 * rows of a and b. */
static trove_err absorb(store *st, int64_t a, int64_t b)
{
    static const char *const sqls[] = {
        /* touched-only rows of older troves: file times are not history */
        "DELETE FROM undo_docs WHERE snap IN (?1, ?2) AND kind = 2",
        "DELETE FROM undo_vecs WHERE snap = ?2 AND chunk_id IN (SELECT c.id FROM undo_chunks c"
        " WHERE c.snap = ?2 AND c.doc_id IN (SELECT doc_id FROM undo_docs WHERE snap = ?1))",
        "DELETE FROM undo_chunks WHERE snap = ?2 AND doc_id IN (SELECT doc_id FROM undo_docs"
        " WHERE snap = ?1)",
        "DELETE FROM undo_names WHERE snap = ?2 AND doc_id IN (SELECT doc_id FROM undo_docs"
        " WHERE snap = ?1)",
        "DELETE FROM undo_tags WHERE snap = ?2 AND doc_id IN (SELECT doc_id FROM undo_docs"
        " WHERE snap = ?1)",
        "DELETE FROM undo_links WHERE snap = ?2 AND src_doc IN (SELECT doc_id FROM undo_docs"
        " WHERE snap = ?1)",
        "DELETE FROM undo_docs WHERE snap = ?2 AND doc_id IN (SELECT doc_id FROM undo_docs"
        " WHERE snap = ?1)",
        "DELETE FROM undo_dst WHERE snap = ?2 AND (link_id IN (SELECT link_id FROM undo_dst"
        " WHERE snap = ?1) OR link_id IN (SELECT id FROM undo_links WHERE snap = ?1))",
        "UPDATE undo_dst SET dst_doc = NULL WHERE snap = ?2 AND dst_doc IN (SELECT doc_id"
        " FROM undo_docs WHERE snap = ?1)",
        "UPDATE undo_links SET dst_doc = NULL WHERE snap = ?2 AND dst_doc IN (SELECT doc_id"
        " FROM undo_docs WHERE snap = ?1)",
        "DELETE FROM undo_conf WHERE snap = ?2 AND coll_id IN (SELECT coll_id FROM undo_colls"
        " WHERE snap = ?1)",
        "DELETE FROM undo_colls WHERE snap = ?2 AND coll_id IN (SELECT coll_id FROM undo_colls"
        " WHERE snap = ?1)",
    };
    trove_err rc = TROVE_OK;
    for (size_t i = 0; rc == TROVE_OK && i < sizeof sqls / sizeof *sqls; i++)
        rc = exec_ab(st, sqls[i], a, b);
    for (size_t i = 0; rc == TROVE_OK && i < sizeof undo_tables / sizeof *undo_tables; i++)
        rc = exec_fmt_ab(st, "UPDATE %s SET snap = ?1 WHERE snap = ?2", undo_tables[i], a, b);
    return rc;
}

/* Snapshots from..to (rows in snaps[]) go; kept is the next kept one. Their
 * undo rows and kept's are folded into from's (absorb), then labelled as
 * kept's; kept's counts of changes are made again against the snapshot now
 * before it. */
static trove_err merge_run(store *st, const int64_t *ids, size_t n, int64_t kept)
{
    trove_err rc = TROVE_OK;
    int64_t acc = ids[0];
    for (size_t i = 1; rc == TROVE_OK && i < n; i++)
        rc = absorb(st, acc, ids[i]);
    if (rc == TROVE_OK)
        rc = absorb(st, acc, kept);
    for (size_t i = 0; rc == TROVE_OK && i < sizeof undo_tables / sizeof *undo_tables; i++)
        rc = exec_fmt_ab(st, "UPDATE %s SET snap = ?2 WHERE snap = ?1", undo_tables[i], acc, kept);
    /* A note created and deleted again inside the span is nothing to
     * undo: its "created" row goes when the id is not there in state kept
     * (the earliest later before-image of it says, else the live row).
     * So the rows stay proportional to the notes the span changed, not to
     * how often. */
    if (rc == TROVE_OK)
        rc = exec_ab(st, "DELETE FROM undo_docs WHERE snap = ?1 AND kind = 0 AND NOT coalesce("
                     "(SELECT v.kind != 0 FROM undo_docs v WHERE v.doc_id = undo_docs.doc_id"
                     " AND v.snap > ?1 ORDER BY v.snap LIMIT 1),"
                     " EXISTS (SELECT 1 FROM docs d WHERE d.id = undo_docs.doc_id))", kept, 0);
    for (size_t i = 0; rc == TROVE_OK && i < n; i++)
        rc = exec_ab(st, "DELETE FROM snapshots WHERE id = ?1", ids[i], 0);
    store_snapshot s = {0};
    if (rc == TROVE_OK)
        rc = snapshot_changes(st, kept, &s);
    if (rc == TROVE_OK) {
        sqlite3_stmt *q = store_stmt_get(st, "UPDATE snapshots SET added = ?2, removed = ?3,"
                                         " modified = ?4 WHERE id = ?1");
        if (!q)
            return store_fail(st, "recounting a snapshot");
        sqlite3_bind_int64(q, 1, kept);
        sqlite3_bind_int64(q, 2, s.added);
        sqlite3_bind_int64(q, 3, s.removed);
        sqlite3_bind_int64(q, 4, s.modified);
        store_step(st, q, "recounting a snapshot", &rc);
        store_stmt_put(st, q);
    }
    return rc;
}

/* Days since 1970 of t's local calendar day. */
static int64_t local_day(int64_t t)
{
    time_t tt = (time_t)t;
    struct tm tm;
    if (!localtime_r(&tt, &tm))
        return t / 86400;
    tm.tm_hour = tm.tm_min = tm.tm_sec = 0;
    tm.tm_isdst = 0;
    return (int64_t)timegm(&tm) / 86400;
}

static int64_t floor_div(int64_t a, int64_t b)
{
    return a >= 0 ? a / b : -((-a + b - 1) / b);
}

static void retention_mark(const store_retention *r, int64_t now, const int64_t *created, size_t n,
                         unsigned char *keep)
{
    memset(keep, 0, n);
    int64_t now_h = floor_div(now, 3600), now_d = local_day(now);
    for (size_t i = 0; i < n; i++) {
        /* newest first from the end: i counts from the oldest */
        if (n - i <= (size_t)(r->last > 0 ? r->last : 1))
            keep[i] = 1;
        if (now - created[i] < (int64_t)r->minutes * 60)
            keep[i] = 1;
    }
    /* The newest of each hour and day bucket inside its window: scanning
     * from the newest, the first one seen in a bucket. */
    int64_t last_h = INT64_MIN, last_d = INT64_MIN;
    for (size_t i = n; i-- > 0;) {
        int64_t h = floor_div(created[i], 3600), d = local_day(created[i]);
        if (h != last_h && now_h - h < r->hourly)
            keep[i] = 1;
        if (d != last_d && now_d - d < r->daily)
            keep[i] = 1;
        last_h = h;
        last_d = d;
    }
    keep[n - 1] = 1;   /* the current one */
}

/* Apply the retention (store_retention) after the snapshot `current` was
 * written: runs of snapshots between kept ones are merged into the next
 * kept one; those before the oldest kept one go, and so do the undo rows
 * of the oldest kept one (rolling back to it needs only the newer ones).
 * Each undo row is relabelled once per merge and deleted once. */
static trove_err prune(store *st, int64_t now)
{
    sqlite3_stmt *q;
    if (sqlite3_prepare_v2(store_db(st), "SELECT id, created_at FROM snapshots ORDER BY id", -1, &q,
                           NULL) != SQLITE_OK)
        return store_fail(st, "listing snapshots");
    int64_t *ids = NULL, *created = NULL;
    size_t n = 0, cap = 0, cap2 = 0;
    int r;
    while ((r = sqlite3_step(q)) == SQLITE_ROW) {
        xgrow(&ids, &cap, n + 1, sizeof *ids);
        xgrow(&created, &cap2, n + 1, sizeof *created);
        ids[n] = sqlite3_column_int64(q, 0);
        created[n++] = sqlite3_column_int64(q, 1);
    }
    sqlite3_finalize(q);
    trove_err rc = r == SQLITE_DONE ? TROVE_OK : store_fail(st, "listing snapshots");
    unsigned char *keep = xcalloc(n ? n : 1, 1);
    if (rc == TROVE_OK && n)
        retention_mark(&st->snap_ret, now, created, n, keep);
    size_t oldest = 0;
    while (oldest < n && !keep[oldest])
        oldest++;
    for (size_t i = oldest + 1; rc == TROVE_OK && i < n;) {
        if (keep[i]) {
            i++;
            continue;
        }
        size_t j = i;
        while (!keep[j])
            j++;   /* the newest one is kept, so this stops */
        rc = merge_run(st, ids + i, j - i, ids[j]);
        i = j + 1;
    }
    if (rc == TROVE_OK && oldest < n) {
        rc = exec_ab(st, "DELETE FROM snapshots WHERE id < ?1", ids[oldest], 0);
        for (size_t i = 0; rc == TROVE_OK && i < sizeof undo_tables / sizeof *undo_tables; i++)
            rc = exec_fmt_ab(st, "DELETE FROM %s WHERE snap <= ?1", undo_tables[i], ids[oldest], 0);
    }
    free(ids);
    free(created);
    free(keep);
    return rc;
}

trove_err snap_finish(store *st)
{
    if (!st->snap_id)
        return TROVE_OK;   /* nothing but vectors (or file times) changed: not a snapshot */
    int64_t n = st->snap_id, now = store_snapshot_now();
    store_snapshot s = {0};
    trove_err rc = snapshot_counts(st, n, &s);
    if (rc)
        return rc;
    sqlite3_stmt *q;
    if (!(q = store_stmt_get(st, "INSERT INTO snapshots(id, created_at, kind, note, docs,"
                             " chunks, links, added, removed, modified) VALUES (?,?,?,?,?,?,?,?,?,?)")))
        return store_fail(st, "recording the snapshot");
    sqlite3_bind_int64(q, 1, n);
    sqlite3_bind_int64(q, 2, now);
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
    return rc ? rc : prune(st, now);
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
    snap_list l = {out, n, 0, 0, cur, limit ? (int64_t)limit : -1};
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
    /* (Rows of kind 2, notes k only touched in an older trove, are
     * ignored: file times are not history.) */
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
        STORE_FIELDS_INSERT("d.id IN (SELECT doc_id FROM undo_docs WHERE snap = ?1 AND kind = 1)"),
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
    /* the restored notes' metadata records, from the rows just restored */
    if (rc == TROVE_OK)
        rc = store_nrec_write_each(st, "SELECT doc_id FROM undo_docs WHERE snap = ?1 AND kind = 1",
                                   k);
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
    trove_err rc = ids_of(st, "SELECT id FROM snapshots WHERE id <= ?1 ORDER BY id", cur, &ids, &n);
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

void store_restored_colls_free(store_restored_coll *c, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(c[i].name);
        free(c[i].root);
        free(c[i].conf);
    }
    free(c);
}

/* Every collection of the state rolled back to, with the settings recorded
 * when it was removed in one of the undone snapshots (id, cur]: the oldest
 * of them, the one closest to the state restored. */
static trove_err restored_colls(store *st, int64_t id, int64_t cur, store_restored_coll **out,
                                size_t *n)
{
    *out = NULL;
    *n = 0;
    sqlite3_stmt *q;
    if (sqlite3_prepare_v2(store_db(st), "SELECT c.name, c.root, (SELECT u.conf FROM undo_conf u"
                           " WHERE u.coll_id = c.id AND u.snap > ?1 AND u.snap <= ?2 ORDER BY u.snap"
                           " LIMIT 1) FROM collections c ORDER BY c.name", -1, &q, NULL) != SQLITE_OK)
        return store_fail(st, "listing restored collections");
    sqlite3_bind_int64(q, 1, id);
    sqlite3_bind_int64(q, 2, cur);
    size_t cap = 0;
    int r;
    while ((r = sqlite3_step(q)) == SQLITE_ROW) {
        xgrow(out, &cap, *n + 1, sizeof **out);
        store_restored_coll *c = &(*out)[(*n)++];
        const char *conf = (const char *)sqlite3_column_text(q, 2);
        c->name = xstrdup((const char *)sqlite3_column_text(q, 0));
        c->root = xstrdup((const char *)sqlite3_column_text(q, 1));
        c->conf = conf ? xstrdup(conf) : NULL;
    }
    sqlite3_finalize(q);
    if (r != SQLITE_DONE) {
        store_restored_colls_free(*out, *n);
        *out = NULL;
        *n = 0;
        return store_fail(st, "listing restored collections");
    }
    return TROVE_OK;
}

trove_err store_snapshot_rollback(store *st, int64_t id, store_snapshot *made, int *noop,
                                  store_restored_coll **colls, size_t *n_colls)
{
    memset(made, 0, sizeof *made);
    *noop = 0;
    if (colls) {
        *colls = NULL;
        *n_colls = 0;
    }
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
    if (rc == TROVE_OK && (!have || id > cur))
        rc = not_kept(st, id, cur);
    int64_t *undo = NULL;
    size_t n_undo = 0;
    /* The kept snapshots after id, newest first (ids have gaps where
     * snapshots were merged; each kept one's undo rows lead to the kept one
     * before it). */
    if (rc == TROVE_OK)
        rc = ids_of(st, "SELECT id FROM snapshots WHERE id > ?1 ORDER BY id DESC", id, &undo, &n_undo);
    if (rc == TROVE_OK)
        rc = snap_open(st);
    for (size_t i = 0; rc == TROVE_OK && i < n_undo; i++)
        rc = undo_one(st, undo[i]);
    free(undo);
    if (rc == TROVE_OK && colls)
        rc = restored_colls(st, id, cur, colls, n_colls);
    if (rc == TROVE_OK) {
        char note[64];
        snprintf(note, sizeof note, "rollback to %lld", (long long)id);
        store_snapshot_label(st, "rollback", note);
        store_nmap_mark_all(st);   /* chunks and records came back by the table */
        rc = store_commit(st);
    }
    if (rc) {
        store_rollback(st);
        if (colls) {
            store_restored_colls_free(*colls, *n_colls);
            *colls = NULL;
            *n_colls = 0;
        }
        return rc;
    }
    return store_snapshot_current(st, made);
}
