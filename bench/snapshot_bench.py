#!/usr/bin/python3
"""Cost of index snapshots on a 10,000-note index (tldr pages).

    /usr/bin/python3 bench/snapshot_bench.py            # $TROVE_BIN or build/trove
    TROVE_BIN=build/trove BASE_BIN=../main/build/trove NOTES=10000 RUNS=7 \\
        /usr/bin/python3 bench/snapshot_bench.py

Extracts ../shared/corpora/tldr-pages.tar.gz, copies the first NOTES
(default 10,000) pages in path order into a vault, indexes it (with the
GloVe model2vec test model when scripts/glove-model.sh can build it, so the
undo log carries vectors too; NO_VECTORS=1 skips it), then measures:

  1. a one-note update (append a line to one page, `trove update`), RUNS
     times on different pages: wall time per update (median), and the undo
     rows it added: their payload bytes (sum of column lengths) and the
     growth of the undo tables' pages (SQLite dbstat);
     with BASE_BIN (a trove without snapshots, e.g. main before them) the
     same edits on its own index give the time without recording;
  2. a 500-note change (append a line to 500 pages, `trove update`) and
     `trove snapshot rollback` of it: wall times, undo payload, and that
     the rollback's counts are the index's before the change.

Prints the exact commands it times. The page cache is warm. Environment:
TROVE_BIN, BASE_BIN, NOTES, RUNS (default 7), KEEP=1 keeps the folder.
"""
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
BIN = Path(os.environ.get("TROVE_BIN") or HERE / "build" / "trove").resolve()
BASE = os.environ.get("BASE_BIN")
NOTES = int(os.environ.get("NOTES", "10000"))
RUNS = int(os.environ.get("RUNS", "7"))
TARBALL = Path(os.environ.get("TLDR_TARBALL") or HERE.parent / "shared" / "corpora" / "tldr-pages.tar.gz")

UNDO = ("undo_docs", "undo_chunks", "undo_names", "undo_tags", "undo_links", "undo_dst",
        "undo_vecs", "undo_colls")


def run(binary, env, *args):
    p = subprocess.run([str(binary)] + list(args), env=env, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("failed: trove %s\n%s%s" % (" ".join(args), p.stdout, p.stderr))
    return p.stdout


def timed(binary, env, *args):
    t0 = time.perf_counter()
    out = run(binary, env, *args)
    return time.perf_counter() - t0, out


def env_for(work, model):
    e = dict(os.environ)
    e.update({"TROVE_INDEX": str(work / "index.db"), "TROVE_CONFIG_DIR": str(work / "config"),
              "XDG_CACHE_HOME": str(work / "xdg-cache"), "XDG_CONFIG_HOME": str(work / "xdg-config"),
              "NO_COLOR": "1", "TROVE_NO_DAEMON": "1"})
    e.pop("TROVE_EMBED_MODEL", None)
    if model:
        e["TROVE_EMBED_MODEL"] = model
    return e


def undo_payload(db, snap):
    """Bytes of the undo rows of one snapshot (sum of column lengths)."""
    total, rows = 0, 0
    for t in UNDO:
        cols = [r[1] for r in db.execute("PRAGMA table_info(%s)" % t)]
        expr = " + ".join("coalesce(length(%s), 0)" % c for c in cols)
        n, b = db.execute("SELECT count(*), coalesce(sum(%s), 0) FROM %s WHERE snap = ?"
                          % (expr, t), (snap,)).fetchone()
        rows += n
        total += b
    return rows, total


def undo_pages(db):
    return db.execute("SELECT coalesce(sum(pgsize), 0) FROM dbstat WHERE name LIKE 'undo%'"
                      " OR name LIKE 'sqlite_autoindex_undo%'").fetchone()[0]


def append_line(path, i):
    with open(path, "a") as f:
        f.write("\n- bench edit %d: `trove snapshot` measures this line\n" % i)
    st = os.stat(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + (i + 1) * 10**9))


def main():
    if not BIN.exists():
        sys.exit("snapshot_bench: no trove binary at %s" % BIN)
    if not TARBALL.exists():
        sys.exit("snapshot_bench: %s not found" % TARBALL)
    model = None
    if os.environ.get("NO_VECTORS") != "1":
        p = subprocess.run(["bash", str(HERE / "scripts" / "glove-model.sh")],
                           capture_output=True, text=True)
        model = p.stdout.strip() if p.returncode == 0 else None
    work = Path(tempfile.mkdtemp(prefix="trove-snapbench."))
    try:
        src = work / "tldr"
        with tarfile.open(TARBALL) as t:
            t.extractall(src)
        pages = sorted(p for p in src.rglob("*.md")
                       if not any(part.startswith(".") for part in p.relative_to(src).parts))
        pages = pages[:NOTES]
        vault = work / "vault"
        for p in pages:
            dst = vault / p.relative_to(src)
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(p, dst)
        shutil.rmtree(src)
        notes = sorted(vault.rglob("*.md"))
        print("corpus: %d tldr pages (%.1f MB) in %s; vectors: %s" % (
            len(notes), sum(p.stat().st_size for p in notes) / 1e6, vault,
            model or "none (glove model unavailable or NO_VECTORS=1)"))

        # baseline copy before any edit
        base_vault = None
        if BASE:
            base_vault = work / "base-vault"
            shutil.copytree(vault, base_vault, copy_function=shutil.copy2)

        w = work / "snap"
        w.mkdir()
        env = env_for(w, model)
        run(BIN, env, "collection", "add", str(vault), "--name", "tldr")
        t, _ = timed(BIN, env, "update")
        size = os.path.getsize(w / "index.db")
        print("$ trove update   # first: %.2f s, index %.1f MB" % (t, size / 1e6))

        db = sqlite3.connect(str(w / "index.db"))
        if BASE:
            bw = work / "base"
            bw.mkdir()
            benv = env_for(bw, model)
            run(BASE, benv, "collection", "add", str(base_vault), "--name", "tldr")
            run(BASE, benv, "update")
            bnotes = sorted(base_vault.rglob("*.md"))
        # The same edit on both indexes, interleaved, so that machine noise
        # hits both alike.
        times, btimes, payloads, rows_l, pages_l = [], [], [], [], []
        step = max(1, len(notes) // (RUNS + 1))
        for i in range(RUNS):
            before = undo_pages(db)
            append_line(notes[(i + 1) * step], i)
            t, _ = timed(BIN, env, "update")
            snap = db.execute("SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'snapshot'").fetchone()[0]
            rows, payload = undo_payload(db, snap)
            times.append(t)
            payloads.append(payload)
            rows_l.append(rows)
            pages_l.append(undo_pages(db) - before)
            if BASE:
                append_line(bnotes[(i + 1) * step], i)
                t, _ = timed(BASE, benv, "update")
                btimes.append(t)
        print("$ trove update   # one note appended, %d runs: median %.1f ms (min %.1f)"
              % (RUNS, statistics.median(times) * 1e3, min(times) * 1e3))
        if BASE:
            print("$ BASE_BIN update   # the same edits, no snapshots, interleaved: median %.1f ms"
                  " (min %.1f)" % (statistics.median(btimes) * 1e3, min(btimes) * 1e3))
        print("  undo rows per one-note snapshot: median %d rows, %d bytes payload, "
              "+%d bytes of undo pages (dbstat)" % (statistics.median(rows_l),
                                                    statistics.median(payloads),
                                                    statistics.median(pages_l)))

        # 500-note change and its rollback
        cur = db.execute("SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'snapshot'").fetchone()[0]
        counts_before = db.execute("SELECT docs, chunks, links FROM snapshots WHERE id = ?",
                                   (cur,)).fetchone()
        big = notes[1::max(1, len(notes) // 500)][:500]
        for i, p in enumerate(big):
            append_line(p, 100 + i)
        t_up, _ = timed(BIN, env, "update")
        snap = cur + 1
        rows, payload = undo_payload(db, snap)
        print("$ trove update   # 500 notes appended: %.2f s; undo %d rows, %.1f MB payload"
              % (t_up, rows, payload / 1e6))
        t_rb, out = timed(BIN, env, "snapshot", "rollback", str(cur))
        after = db.execute("SELECT docs, chunks, links FROM snapshots WHERE id = ?",
                           (snap + 1,)).fetchone()
        print("$ trove snapshot rollback %d   # undo the 500-note change: %.2f s" % (cur, t_rb))
        print("  " + out.strip().replace("\n", "\n  "))
        assert after == counts_before, (after, counts_before)
        run(BIN, env, "check")
        print("$ trove check   # ok after the rollback")
        db.close()
    finally:
        if os.environ.get("KEEP") == "1":
            print("kept", work)
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
