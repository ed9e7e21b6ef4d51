"""The daemon's vector segment cache (search/vcache.h, docs/daemon.md
Models): searches through the daemon answer byte for byte as the cold path
across every kind of change to the vectors (new segments, dead bits, tier
merges, a snapshot rollback), and the daemon's status proves that segments
are read from the index once, then served from memory."""

from conftest import glove_model, run_concurrently
from test_daemon import Client, sock_path

ASKS = [("vsearch", "pasta sauce", "--json"),
        ("vsearch", "rust error handling", "--json", "-n", "20"),
        ("vsearch", "pasta sauce", "--files", "--all"),
        ("vsearch", "temples in kyoto", "--files", "-n", "5"),
        ("search", "git undo commit", "--json", "--explain"),
        ("search", "travel food", "--csv", "--all")]


def vec_cache(trove):
    c = Client(sock_path(trove))
    try:
        return c.call("status")["result"]["daemon"]["models"]["vec_cache"]
    finally:
        c.close()


def ask_all(trove, env):
    """Every ask through the daemon and cold, compared (Trove.both_ways)."""
    outs = []
    for a in ASKS:
        r = trove(*a, env=env)
        assert r.rc == 0 and r.out, r
        outs.append(r.out)
    return outs


def test_daemon_vectors_follow_every_change(indexed):
    trove, vault = indexed
    env = {"TROVE_EMBED_MODEL": glove_model()}
    cold = dict(env, TROVE_NO_DAEMON="1")
    # One segment per chunk: four of a tier merge into one of the next.
    trove.ok("embed", "--batch", "1", "--commit-every", "0.001", env=cold, both=False)
    trove.start_daemon("--no-watch", "--idle", "300", env=env)
    trove.both_ways = True
    try:
        first = ask_all(trove, env)
        v1 = vec_cache(trove)
        assert v1["loaded"] > 0 and v1["segments"] > 0, v1
        assert v1["bytes"] > 0 and v1["max_bytes"] == 1 << 30, v1

        # Nothing changed: every segment comes from memory.
        ask_all(trove, env)
        v2 = vec_cache(trove)
        assert v2["loaded"] == v1["loaded"], (v1, v2)
        assert v2["served"] > v1["served"], (v1, v2)
        st = trove.ok("daemon", "status", both=False).out
        assert "vector segments: %d held" % v2["segments"] in st, st
        assert "%d read from the index, %d served from memory" % (
            v2["loaded"], v2["served"]) in st, st

        # A note deleted: only dead bits change, no segment is read again,
        # and its vectors are never returned (the cold twin says so).
        victim = next(p for p in sorted(vault.rglob("*.md"))
                      if "pasta" in p.read_text(errors="replace").lower())
        victim.unlink()
        trove.ok("update", env=cold, both=False)
        assert victim.name in first[2]
        outs = ask_all(trove, env)
        assert victim.name not in outs[2]
        v3 = vec_cache(trove)
        assert v3["loaded"] == v2["loaded"], (v2, v3)

        # A rollback (to before the delete) re-appends the restored vectors
        # as a new segment.
        trove.ok("snapshot", "rollback", "1", env=cold, both=False)
        outs = ask_all(trove, env)
        assert victim.name in outs[2]
        v3b = vec_cache(trove)
        assert v3b["loaded"] > v3["loaded"], (v3, v3b)

        # Edits and new notes, embedded a chunk per commit: new segments,
        # tier merges let old ones go.
        for i in range(6):
            (vault / ("new-%d.md" % i)).write_text(
                "# Sauce %d\n\nA tomato pasta sauce with basil, variant %d.\n\n"
                "## Errors\n\nRust error handling with Result, case %d.\n" % (i, i, i))
            trove.ok("update", "--no-embed", env=cold, both=False)
            trove.ok("embed", "--batch", "1", "--commit-every", "0.001", env=cold,
                     both=False)
            ask_all(trove, env)
        v4 = vec_cache(trove)
        assert v4["loaded"] > v3b["loaded"], (v3b, v4)
        assert v4["dropped"] > 0, v4                       # merged away
        assert v4["segments"] < v4["loaded"], v4


        # Many clients at once, each answer the cold one.
        trove.both_ways = False
        want = {a: trove(*a, env=cold, both=False) for a in ASKS}
        before = vec_cache(trove)
        errors = []

        def worker(k):
            try:
                for i in range(8):
                    a = ASKS[(i + k) % len(ASKS)]
                    r = trove(*a, env=env, both=False)
                    w = want[a]
                    if (r.rc, r.out, r.err) != (w.rc, w.out, w.err):
                        errors.append((a, r))
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(repr(e))
        run_concurrently(worker, 8, 120)
        assert not errors, errors[:2]
        after = vec_cache(trove)
        assert after["loaded"] == before["loaded"], (before, after)
        assert after["served"] > before["served"], (before, after)
    finally:
        trove.both_ways = False
        trove.stop_daemon()


def test_daemon_vec_cache_bound(indexed):
    """TROVE_VEC_CACHE_MB=0 keeps nothing: every search reads every segment,
    and still answers as the cold path."""
    trove, vault = indexed
    env = {"TROVE_EMBED_MODEL": glove_model()}
    cold = dict(env, TROVE_NO_DAEMON="1")
    trove.ok("embed", env=cold, both=False)
    trove.start_daemon("--no-watch", "--idle", "300", env=dict(env, TROVE_VEC_CACHE_MB="0"))
    trove.both_ways = True
    try:
        ask_all(trove, env)
        ask_all(trove, env)
        v = vec_cache(trove)
        assert v["max_bytes"] == 0 and v["segments"] == 0 and v["bytes"] == 0, v
        assert v["served"] == 0 and v["loaded"] > 0, v
    finally:
        trove.both_ways = False
        trove.stop_daemon()


def test_two_stage_scan_setting(indexed):
    """--vector-scan two-stage and config `vector_scan:` through the daemon:
    with every row a candidate the answers are the exact ones (and the
    cold twin's, which reads the same stored sketches); an unknown value is
    an error, from the flag and from config.yaml."""
    trove, vault = indexed
    env = {"TROVE_EMBED_MODEL": glove_model()}
    cold = dict(env, TROVE_NO_DAEMON="1")
    trove.ok("embed", env=cold, both=False)
    trove.start_daemon("--no-watch", "--idle", "300", env=env)
    trove.both_ways = True
    try:
        for how in ("two-stage", "auto", "exact"):
            for a in ASKS:
                r = trove(*a, "--vector-scan", how, "--vector-candidates", "4096", env=env)
                assert r.rc == 0 and r.out, r
        r = trove("vsearch", "pasta", "--vector-scan", "fast", env=env, both=False)
        assert r.rc == 2 and "--vector-scan needs exact, two-stage or auto" in r.err, r
        r = trove("search", "pasta", "--vector-candidates", "0", env=env, both=False)
        assert r.rc == 2 and "--vector-candidates" in r.err, r
        cfg = trove.config / "config.yaml"
        text = cfg.read_text() if cfg.exists() else ""
        cfg.write_text(text + "vector_scan: two-stage\n")
        for a in ASKS:
            r = trove(*a, env=env)
            assert r.rc == 0 and r.out, r
        cfg.write_text(text + "vector_scan: sometimes\n")
        r = trove("vsearch", "pasta", env=cold, both=False)
        assert r.rc != 0 and "'vector_scan' must be exact, two-stage or auto" in r.err, r
        cfg.write_text(text)
    finally:
        trove.both_ways = False
        trove.stop_daemon()
