/* store_beside — a fresh index written beside its file, then renamed in.
 *
 * Why: in WAL mode every page of a fresh index is written twice (into the
 * WAL at commit, 2 system calls per 4 KiB frame, then read back and
 * written into the file by the checkpoint, each copy made durable): on
 * the 38,390 tldr pages the commit and the close took ~0.7 s of a ~3 s
 * update. An index that holds no note yet has nothing a crash could lose,
 * so its first update writes a copy of it (`PATH.build`) with no WAL and
 * no journal on disk, syncs it once and renames it over PATH: a crash
 * leaves PATH as it was (the empty index) and a stray PATH.build, which
 * the next such build replaces.
 *
 * When: store_begin() of a store opened for writing, when the index holds
 * no note, is small (BESIDE_MAX_BYTES: it is copied) and no other
 * connection, in this process or another, has it open — SQLite changes
 * the file out of WAL mode (PRAGMA journal_mode=MEMORY) only then. While
 * the build runs, the connection to PATH holds its write lock, so other
 * writers wait as they would for any update; readers read the empty
 * index. The rename happens before that lock is let go, and a writer that
 * then gets the lock finds its file moved (store_begin reopens PATH). A
 * daemon notices the new file by its inode (server.c, refresh()).
 *
 * The rows are the same as an update in place would write: the build
 * starts from a page-for-page copy of the index (sqlite3_backup) and runs
 * the same statements. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/store_int.h"
#include "util/buf.h"
#include "util/err.h"
#include "util/mem.h"

/* An empty index is ~60 pages (1 MiB of 16 KiB pages); a larger file is
 * not copied for this. */
#define BESIDE_MAX_BYTES (4 << 20)

static int64_t query_int(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *q;
    int64_t v = -1;
    if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) != SQLITE_OK)
        return -1;
    if (sqlite3_step(q) == SQLITE_ROW)
        v = sqlite3_column_int64(q, 0);
    sqlite3_finalize(q);
    return v;
}

/* PRAGMA journal_mode=MODE; 1 when the file is in MODE after it. */
static int journal_mode(sqlite3 *db, const char *mode)
{
    char sql[48];
    snprintf(sql, sizeof sql, "PRAGMA journal_mode=%s", mode);
    sqlite3_stmt *q;
    int ok = 0;
    if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) != SQLITE_OK)
        return 0;
    if (sqlite3_step(q) == SQLITE_ROW) {
        const char *m = (const char *)sqlite3_column_text(q, 0);
        ok = m && strcasecmp(m, mode) == 0;
    }
    sqlite3_finalize(q);
    return ok;
}

static void unlink_build(const char *tmp)
{
    unlink(tmp);
    store_remove_with_suffix(tmp, "-journal");
    store_remove_with_suffix(tmp, "-wal");
    store_remove_with_suffix(tmp, "-shm");
}

/* The index holds no note, is small, and PATH names it directly (a
 * rename would replace a symlink, or split a hard link). */
static int eligible(store *st)
{
    struct stat sb;
    if (lstat(st->path, &sb) != 0 || !S_ISREG(sb.st_mode) || sb.st_nlink != 1)
        return 0;
    if (query_int(st->db, "SELECT EXISTS (SELECT 1 FROM docs)") != 0)
        return 0;
    int64_t pages = query_int(st->db, "PRAGMA page_count");
    int64_t page_size = query_int(st->db, "PRAGMA page_size");
    return pages > 0 && page_size > 0 && pages * page_size <= BESIDE_MAX_BYTES;
}

/* The live connection as it was: back in WAL mode, no transaction. */
static void live_restore(store *st, sqlite3 *live)
{
    sqlite3_exec(live, "ROLLBACK", NULL, NULL, NULL);
    journal_mode(live, "WAL");
    st->db = live;
}

/* Copy the live index into the build file, opened as st->db. */
static int copy_into_build(store *st, sqlite3 *live)
{
    sqlite3_exec(st->db, "PRAGMA synchronous=OFF", NULL, NULL, NULL);
    sqlite3_exec(st->db, "PRAGMA journal_mode=MEMORY", NULL, NULL, NULL);
    sqlite3_backup *b = sqlite3_backup_init(st->db, "main", live, "main");
    if (!b)
        return 0;
    int rc = sqlite3_backup_step(b, -1);
    sqlite3_backup_finish(b);
    if (rc != SQLITE_DONE)
        return 0;
    /* No WAL, a journal in memory (a statement or the transaction can
     * still roll back), nothing synced until the build is complete. */
    return journal_mode(st->db, "MEMORY") &&
           sqlite3_exec(st->db, "PRAGMA synchronous=OFF", NULL, NULL, NULL) == SQLITE_OK;
}

/* Indexes that no statement of an update reads before its end-of-update
 * passes (link resolution, in-degrees, the vault's statistics: they serve
 * those and searches). A build drops them before its load and makes each
 * once, from sorted keys, before those passes (store_beside_indexes)
 * instead of inserting a random key per note. Each keeps its place among
 * its table's indexes (an index listed here comes after those of its
 * table that stay), so SQLite plans queries as before; only their order
 * in sqlite_schema (what `.dump` lists last) changes. An index a note's
 * insert reads (names_doc, tags_doc, fields_doc: store_nrec_write) stays. */
static const char *const deferred[] = {"docs_tkey", "docs_path_key", "docs_stem", "links_dst",
                                       "links_unresolved", "fields_key"};

/* The full-text tables of a build: each gathers its new terms in a hash
 * in memory (FTS5's "hashsize", 1 MiB of position lists by default) and
 * writes it out as a segment when it is full, then merges segments four at
 * a time ("automerge"), rewriting each term's list level by level. For
 * the build the hash is BULK_FTS_HASH: in a fresh index of the tldr pages
 * (chunks_fts ~9.6 MB) the two are flushed 5 times instead of 19, merged far
 * less (FTS5's load of those texts: 4.0 G instructions → 3.0 G at 4 MiB,
 * 2.8 G at 8 MiB, which costs more in cache misses than it saves:
 * docs/performance.md). The terms, lists and positions are the same;
 * only the segments' layout differs (fewer, larger ones). The setting is
 * FTS5's own config row: removed again before the build ends, so the
 * index, once renamed in, writes with FTS5's defaults like any other. */
#define BULK_FTS_HASH (4 << 20)
static const char *const bulk_fts[] = {"chunks_fts", "titles_fts"};

static void bulk_fts_begin(store *st)
{
    for (size_t i = 0; i < sizeof bulk_fts / sizeof *bulk_fts; i++) {
        char sql[160];
        snprintf(sql, sizeof sql, "INSERT INTO %s(%s, rank) VALUES('hashsize', %d)", bulk_fts[i],
                 bulk_fts[i], BULK_FTS_HASH);
        if (sqlite3_exec(st->db, sql, NULL, NULL, NULL) == SQLITE_OK)
            st->beside_fts_bulk = 1;
    }
}

/* The default back (FTS5 writes what it holds at the commit) and the
 * config row gone, as an index built in place has none. */
static trove_err bulk_fts_end(store *st)
{
    int bulk = st->beside_fts_bulk;
    st->beside_fts_bulk = 0;
    /* a build that wrote nothing is dropped (store_beside_finish): these
     * writes would keep it */
    if (!bulk || sqlite3_total_changes64(st->db) == st->changes_at_begin)
        return TROVE_OK;
    trove_err rc = TROVE_OK;
    for (size_t i = 0; rc == TROVE_OK && i < sizeof bulk_fts / sizeof *bulk_fts; i++) {
        char sql[240];
        snprintf(sql, sizeof sql,
                 "INSERT INTO %s(%s, rank) VALUES('hashsize', %d);"
                 "DELETE FROM %s_config WHERE k = 'hashsize'",
                 bulk_fts[i], bulk_fts[i], 1 << 20, bulk_fts[i]);
        rc = store_exec(st, sql);
    }
    return rc;
}

static void drop_indexes(store *st)
{
    static const char sql_of[] = "SELECT sql FROM sqlite_schema WHERE type = 'index' AND name = ?";
    sqlite3_stmt *q;
    if (sqlite3_prepare_v2(st->db, sql_of, -1, &q, NULL) != SQLITE_OK)
        return;
    tbuf create = {0}, drop = {0};
    for (size_t i = 0; i < sizeof deferred / sizeof *deferred; i++) {
        sqlite3_bind_text(q, 1, deferred[i], -1, SQLITE_STATIC);
        if (sqlite3_step(q) == SQLITE_ROW && sqlite3_column_text(q, 0)) {
            tbuf_printf(&create, "%s;", (const char *)sqlite3_column_text(q, 0));
            tbuf_printf(&drop, "DROP INDEX \"%s\";", deferred[i]);
        }
        sqlite3_reset(q);
    }
    sqlite3_finalize(q);
    /* All or none (a build that fails later is dropped whole) */
    if (drop.len && sqlite3_exec(st->db, "SAVEPOINT defer", NULL, NULL, NULL) == SQLITE_OK) {
        if (sqlite3_exec(st->db, drop.data, NULL, NULL, NULL) == SQLITE_OK)
            st->beside_indexes = tbuf_detach(&create);
        else
            sqlite3_exec(st->db, "ROLLBACK TO defer", NULL, NULL, NULL);
        sqlite3_exec(st->db, "RELEASE defer", NULL, NULL, NULL);
    }
    tbuf_free(&create);
    tbuf_free(&drop);
}

trove_err store_beside_indexes(store *st)
{
    trove_err rc = bulk_fts_end(st);
    if (rc != TROVE_OK || !st->beside_indexes)
        return rc;
    rc = store_exec(st, st->beside_indexes);
    free(st->beside_indexes);
    st->beside_indexes = NULL;
    return rc;
}

void store_beside_try(store *st)
{
    if (st->beside || !sqlite3_get_autocommit(st->db) || !eligible(st))
        return;
    tbuf b = {0};
    tbuf_printf(&b, "%s.build", st->path);
    char *tmp = tbuf_detach(&b);
    int fd = open(tmp, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) != 0) {
        if (fd >= 0)
            close(fd);
        free(tmp);
        return;
    }
    store_remove_with_suffix(tmp, "-journal");   /* a crashed build's leftovers */
    store_remove_with_suffix(tmp, "-wal");
    store_remove_with_suffix(tmp, "-shm");
    sqlite3 *live = st->db;
    /* Another writer's build renamed in since this connection opened its
     * file (that writer let go of the build's lock after the rename): the
     * update goes to the new file, in place (store_begin reopens it). */
    if (store_file_moved(live))
        goto undo_file;
    /* Out of WAL mode only when no other connection has the file open;
     * asked without waiting (a reader open beside is no reason to). The
     * switch rewrites the header page: journaled in memory, not in a
     * PATH-journal that a kill would leave hot (a read-only `trove check`
     * or search cannot roll it back, and failed on it). The page changes
     * only in its first bytes, within one sector. */
    sqlite3_busy_timeout(live, 0);
    int alone = ftruncate(fd, 0) == 0 && journal_mode(live, "MEMORY");
    sqlite3_busy_timeout(live, 5000);
    if (!alone) {
        journal_mode(live, "WAL");
        goto undo_file;
    }
    store_stmt_clear(st);
    st->db = NULL;
    /* The copy is made before the write lock is taken (a backup reads its
     * source outside a write transaction); data_version tells whether
     * another connection committed in between. */
    int64_t version = query_int(live, "PRAGMA data_version");
    int ok = store_connect(st, tmp, STORE_BESIDE, 0) == TROVE_OK && copy_into_build(st, live) &&
             sqlite3_exec(live, "BEGIN IMMEDIATE", NULL, NULL, NULL) == SQLITE_OK &&
             query_int(live, "PRAGMA data_version") == version;
    if (!ok) {
        trove_errclear();
        sqlite3_close_v2(st->db);
        live_restore(st, live);
        st->rank_ready = 0;
        goto undo_file;
    }
    sqlite3_exec(st->db, "PRAGMA cache_size=-262144", NULL, NULL, NULL);
    drop_indexes(st);
    bulk_fts_begin(st);
    st->live = live;
    st->beside = tmp;
    st->beside_fd = fd;
    return;
undo_file:
    unlink(tmp);
    close(fd);
    free(tmp);
}

/* Drop the build and go back to the live connection. */
void store_beside_discard(store *st)
{
    if (!st->beside)
        return;
    free(st->beside_indexes);
    st->beside_indexes = NULL;
    st->beside_fts_bulk = 0;
    store_stmt_clear(st);
    sqlite3_close_v2(st->db);
    unlink_build(st->beside);
    close(st->beside_fd);
    free(st->beside);
    st->beside = NULL;
    live_restore(st, st->live);
    st->live = NULL;
    st->rank_ready = 0;
}

static int sync_folder_of(const char *path)
{
    char *copy = xstrdup(path);
    int fd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    free(copy);
    if (fd < 0)
        return -1;
    int rc = fsync(fd);
    close(fd);
    return rc;
}

trove_err store_beside_finish(store *st)
{
    if (sqlite3_total_changes64(st->db) == st->changes_at_begin) {
        store_beside_discard(st);   /* nothing written: the file stays */
        return TROVE_OK;
    }
    /* The new file in WAL mode like every index; its close checkpoints
     * nothing and removes the build's -wal and -shm. */
    int ok = journal_mode(st->db, "WAL");
    store_stmt_clear(st);
    ok = sqlite3_close_v2(st->db) == SQLITE_OK && ok;
    st->db = NULL;
    ok = ok && fdatasync(st->beside_fd) == 0;
    if (!ok || rename(st->beside, st->path) != 0) {
        int e = errno;
        store_beside_discard(st);
        return trove_fail(TROVE_EIO, "%s: cannot write the new index beside it: %s", st->path,
                          ok ? strerror(e) : "SQLite could not finish it");
    }
    sync_folder_of(st->path);
    /* Only now let go of the old file: a writer waiting for it finds it
     * moved (store_begin). */
    sqlite3_exec(st->live, "ROLLBACK", NULL, NULL, NULL);
    sqlite3_close_v2(st->live);
    st->live = NULL;
    close(st->beside_fd);
    free(st->beside);
    st->beside = NULL;
    return store_connect(st, st->path, 0, 0);
}

int store_beside_allowed(void)
{
    const char *v = getenv("TROVE_INDEX_BESIDE");
    return !v || strcmp(v, "0") != 0;
}
