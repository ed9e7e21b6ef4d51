"""`trove update`: counts, incremental behaviour, ignores, index location."""
import os
import re
import shutil
import time

import pytest

from conftest import (COLLECTION, bump_mtime, expected_notes, summary_counts, trove_bin)


def ls_paths(trove, vault, extra=()):
    """The notes of the vault (every *.md on disk, ignored ones included,
    plus `extra`) that `trove ls COLLECTION` lists, as paths relative to the
    collection root. A path counts as listed when it appears on a line as a
    whole path (optionally behind "COLLECTION/" or a URI prefix)."""
    out = trove.ok("ls", COLLECTION).out
    cands = set(extra)
    for d, dirs, files in os.walk(vault):
        for f in files:
            if f.endswith(".md"):
                cands.add(os.path.relpath(os.path.join(d, f), vault)
                          .replace(os.sep, "/"))
    return {p for p in cands
            if re.search(r"(^|[\s/])%s(\s|:|$)" % re.escape(p), out, re.M)}


def update(trove):
    r = trove.ok("update")
    return r, summary_counts(r.out + "\n" + r.err)


def test_first_update_indexes_every_note(trove, vault):
    want = expected_notes(vault)
    trove.ok("collection", "add", vault, "--name", COLLECTION)
    r, counts = update(trove)
    text = r.out + r.err
    assert re.search(r"\b%d\b" % len(want), text), r
    assert ls_paths(trove, vault) == want


def test_nothing_changed(indexed):
    trove, vault = indexed
    r, counts = update(trove)
    assert counts.get("new", 0) == 0, r
    assert counts.get("changed", 0) == 0, r
    assert counts.get("deleted", 0) == 0, r
    assert ls_paths(trove, vault) == expected_notes(vault)


def test_touch_without_change_is_not_reindexed(indexed):
    trove, vault = indexed
    bump_mtime(vault / "travel" / "lisbon.md")
    r, counts = update(trove)
    assert counts.get("changed", 0) == 0, r
    assert counts.get("new", 0) == 0, r


def test_modified_file_is_reindexed(indexed):
    trove, vault = indexed
    p = vault / "travel" / "lisbon.md"
    text = p.read_text()
    p.write_text(text.replace("Tram 28", "Tram 28 and the Elevador de "
                              "Santa Justa, a wrought-iron lift ("
                              "gorblewhistle)"))
    bump_mtime(p)
    r, counts = update(trove)
    assert counts.get("changed") == 1, r
    assert counts.get("new", 0) == 0 and counts.get("deleted", 0) == 0, r
    assert [x["path"] for x in trove.search("gorblewhistle")] == [
        "travel/lisbon.md"]


def test_modified_same_size_same_second(indexed):
    trove, vault = indexed
    p = vault / "travel" / "lisbon.md"
    st = os.stat(p)
    data = p.read_bytes()
    new = data.replace(b"pickpockets", b"pickpocketz")
    assert len(new) == len(data)
    p.write_bytes(new)
    # same size; mtime moved by one nanosecond-level write is still a change
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns + 1000))
    update(trove)
    assert [x["path"] for x in trove.search("pickpocketz")] == [
        "travel/lisbon.md"]


def test_new_file(indexed):
    trove, vault = indexed
    (vault / "travel" / "porto.md").write_text(
        "---\ntitle: Porto\ntags: [travel]\n---\n\n# Porto\n\n"
        "Francesinha and port cellars across the river in Gaia.\n")
    r, counts = update(trove)
    assert counts.get("new") == 1, r
    assert trove.paths("francesinha") == ["travel/porto.md"]
    assert "travel/porto.md" in ls_paths(trove, vault)


def test_deleted_file(indexed):
    trove, vault = indexed
    (vault / "travel" / "lisbon.md").unlink()
    r, counts = update(trove)
    assert counts.get("deleted") == 1, r
    assert trove.search("pastéis") == []
    assert "travel/lisbon.md" not in ls_paths(trove, vault,
                                              extra={"travel/lisbon.md"})


def test_renamed_file(indexed):
    trove, vault = indexed
    os.rename(vault / "travel" / "lisbon.md", vault / "travel" / "lisboa.md")
    r, counts = update(trove)
    assert (counts.get("renamed") == 1
            or (counts.get("new") == 1 and counts.get("deleted") == 1)), r
    assert trove.paths("pasteis de nata")[0] == "travel/lisboa.md"
    paths = ls_paths(trove, vault, extra={"travel/lisbon.md"})
    assert "travel/lisboa.md" in paths and "travel/lisbon.md" not in paths


def test_rename_counts_each_new_copy_once(indexed):
    """Two identical notes deleted and one copy added: one rename, one
    deletion (no note is counted twice, no count goes negative)."""
    trove, vault = indexed
    body = "# Twin\n\nthe same text in two notes\n"
    (vault / "twin-a.md").write_text(body)
    (vault / "twin-b.md").write_text(body)
    update(trove)
    (vault / "twin-a.md").unlink()
    (vault / "twin-b.md").unlink()
    (vault / "twin-c.md").write_text(body)
    r, counts = update(trove)
    assert counts.get("renamed") == 1, r
    assert counts.get("deleted") == 1, r
    assert counts.get("new") == 0, r
    assert trove.paths("twin") == ["twin-c.md"]


def test_moved_to_new_folder(indexed):
    trove, vault = indexed
    (vault / "archive").mkdir()
    os.rename(vault / "cooking" / "knife-skills.md",
              vault / "archive" / "knife-skills.md")
    update(trove)
    assert trove.paths("whetstone") == ["archive/knife-skills.md"]


def test_update_is_idempotent_after_changes(indexed):
    trove, vault = indexed
    (vault / "travel" / "porto.md").write_text("# Porto\n\nFrancesinha.\n")
    (vault / "travel" / "lisbon.md").unlink()
    update(trove)
    r, counts = update(trove)
    assert counts.get("new", 0) == 0 and counts.get("changed", 0) == 0, r
    assert counts.get("deleted", 0) == 0, r


def test_ignored_content_not_indexed(indexed):
    trove, vault = indexed
    assert trove.search("zeppelinmarmalade") == []      # drafts/ (.gitignore)
    assert trove.search("quokkascratchpad") == []       # travel/.gitignore
    assert trove.search("obsidianconfigsentinel") == []  # .obsidian/
    assert trove.search("alwaysUpdateLinks") == []      # .obsidian/app.json
    paths = ls_paths(trove, vault)
    assert not any(p.startswith((".obsidian", "drafts/")) for p in paths)
    assert "travel/scratch.md" not in paths


def test_other_skipped_folders(indexed):
    trove, vault = indexed
    for d in (".git", ".trash", "node_modules", "sub/node_modules",
              ".hidden"):
        (vault / d).mkdir(parents=True, exist_ok=True)
        (vault / d / "note.md").write_text("# Skipped\n\nplumbusgrommet\n")
    update(trove)
    assert trove.search("plumbusgrommet") == []


def test_gitignore_change_is_honoured(indexed):
    trove, vault = indexed
    (vault / ".gitignore").write_text("*.tmp\n")   # drafts/ no longer ignored
    bump_mtime(vault / ".gitignore")
    update(trove)
    assert trove.paths("zeppelinmarmalade") == ["drafts/unfinished-idea.md"]


def test_symlink_loop_does_not_hang(indexed):
    trove, vault = indexed
    want = expected_notes(vault)
    os.symlink(vault, vault / "loop")
    os.symlink("..", vault / "programming" / "up")
    r = trove("update", timeout=60)      # a loop entered would not end in time
    assert r.rc == 0, r
    # the loops are never entered: no note is indexed twice
    assert {r["path"] for r in trove.search("related", "--all")} <= want
    assert ls_paths(trove, vault) == want


def test_symlinked_file_is_followed(indexed, tmp_path):
    # A symlink whose target stays inside the collection is followed; one
    # leading outside is not (tests/e2e/test_cli_inside.py).
    trove, vault = indexed
    (vault / "attachments").mkdir(exist_ok=True)
    real = vault / "attachments" / "real.txt"
    real.write_text("# Linked\n\nsnorkelwaffle lives inside the vault.\n")
    os.symlink("../attachments/real.txt", vault / "inbox" / "linked.md")
    update(trove)
    assert trove.paths("snorkelwaffle") == ["inbox/linked.md"]


def test_symlink_out_and_back_in_is_followed(indexed):
    # An absolute link, and a relative one that climbs above the vault and
    # comes back, both end inside it: followed like any other (the indexer's
    # fast read refuses them and asks the collection rule, which admits them).
    trove, vault = indexed
    (vault / "attachments").mkdir(exist_ok=True)
    real = vault / "attachments" / "real2.txt"
    real.write_text("# Linked\n\nquibblegrommet lives inside the vault.\n")
    os.symlink(real, vault / "inbox" / "absolute.md")
    os.symlink("../../%s/attachments/real2.txt" % vault.name, vault / "inbox" / "climb.md")
    update(trove)
    assert sorted(trove.paths("quibblegrommet")) == ["inbox/absolute.md", "inbox/climb.md"]


def test_nothing_written_inside_the_vault(trove, vault):
    def snapshot():
        return sorted((str(p.relative_to(vault)), p.stat().st_size,
                       p.stat().st_mtime_ns)
                      for p in vault.rglob("*"))
    before = snapshot()
    trove.ok("collection", "add", vault, "--name", COLLECTION)
    trove.ok("update")
    trove.search("autolyse")
    trove.ok("status")
    assert snapshot() == before


def test_default_index_location(trove, vault):
    env = {"TROVE_INDEX": None}
    trove.ok("collection", "add", vault, "--name", COLLECTION, env=env)
    trove.ok("update", env=env)
    default = trove.home / "xdg-cache" / "trove" / "index.db"
    assert default.is_file()
    assert not trove.index.exists()
    r = trove.ok("search", "autolyse", "--json", env=env)
    assert r.json()["results"]


def test_index_flag_overrides_env(trove, vault, tmp_path):
    other = tmp_path / "elsewhere" / "idx.db"
    other.parent.mkdir()
    trove.ok("--index", other, "collection", "add", vault, "--name",
             COLLECTION)
    trove.ok("--index", other, "update")
    assert other.is_file()
    r = trove.ok("--index", other, "search", "autolyse", "--json")
    assert r.json()["results"]
    assert not trove.index.exists()


def test_dangling_link_resolves_when_target_appears(indexed):
    trove, vault = indexed

    def graph_signal(path, query):
        res = trove.search(query, "--explain", "--all")
        hit = [r for r in res if r["path"] == path]
        assert hit, (path, res)
        r = hit[0]
        found = []

        def walk(o, key=""):
            if isinstance(o, dict):
                for k, v in o.items():
                    walk(v, k.lower())
            elif isinstance(o, list):
                for v in o:
                    walk(v, key)
            elif isinstance(o, (int, float)) and not isinstance(o, bool):
                if re.search(r"in_?degree|backlinks?|inlinks?|links_in", key):
                    found.append(o)
        walk(r)
        return found

    note = vault / "books" / "Designing Data-Intensive Applications.md"
    note.parent.mkdir()
    note.write_text("# DDIA\n\nNotes on replication and partitioning by "
                    "Kleppmann. Leaderless quorums: w + r > n.\n")
    control = vault / "books" / "Unlinked Book.md"
    control.write_text("# Unlinked Book\n\nLeaderless quorums, nobody links "
                       "to this note.\n")
    update(trove)
    signal = graph_signal("books/Designing Data-Intensive Applications.md",
                          "leaderless quorums")
    if not signal:
        pytest.skip("no in-degree/backlink count shown by search --explain")
    assert max(signal) >= 1, signal
    control = graph_signal("books/Unlinked Book.md", "leaderless quorums")
    assert not control or max(control) == 0, control


def test_one_summary_line_without_a_tty(trove, vault):
    # The fixture is clean: no warnings, and without a TTY no progress bar,
    # just one summary line for the one collection, and the snapshot the
    # update committed.
    trove.ok("collection", "add", vault, "--name", COLLECTION)
    r = trove.ok("update")
    lines = [ln for ln in (r.out + r.err).splitlines() if ln.strip()]
    assert len(lines) == 2 and lines[1] == "snapshot 1 (`trove snapshot list`)", r
    assert "\r" not in r.out + r.err and "\x1b[" not in r.out + r.err, r


N_GENERATED = 6000


def _interrupt_update(trove, sig, delay):
    """Start `trove update`, send `sig` after `delay` seconds. Returns the
    exit status. Whenever the signal lands (even after the run finished),
    the index must be either the old one or the complete new one."""
    import subprocess
    from conftest import trove_bin
    p = subprocess.Popen([str(trove_bin()), "update"], env=trove.env,
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    time.sleep(delay)
    if p.poll() is None:
        p.send_signal(sig)
    p.communicate(timeout=60)
    return p.returncode


@pytest.mark.parametrize("signame", ["SIGINT", "SIGKILL"])
@pytest.mark.parametrize("delay", [0.02, 0.08])
def test_interrupted_update_loses_nothing(indexed, signame, delay):
    import signal
    trove, vault = indexed
    gen = vault / "generated"
    gen.mkdir()
    for i in range(N_GENERATED):
        (gen / ("note%04d.md" % i)).write_text(
            "# Generated note %d\n\nThe word florbnix appears in every "
            "generated note, with filler text number %d to give the indexer "
            "some work: lorem ipsum dolor sit amet.\n" % (i, i))
    _interrupt_update(trove, getattr(signal, signame), delay)
    # The previous index is intact and readable ...
    assert trove.paths("autolyse") == ["cooking/sourdough-bread.md"]
    # ... and the interrupted run is all or nothing.
    r = trove.ok("search", "florbnix", "--all", "--files")
    n = len([ln for ln in r.out.splitlines() if ln.strip()])
    assert n in (0, N_GENERATED), n
    # The next run completes the work.
    trove.ok("update")
    r = trove.ok("search", "florbnix", "--all", "--files")
    assert len([ln for ln in r.out.splitlines() if ln.strip()]) == N_GENERATED


@pytest.mark.parametrize("delay", [0.05, 0.3, 0.8])
def test_first_update_killed_leaves_the_empty_index(trove, tmp_path, delay):
    """The first update of an index writes it beside the file (store_beside.c)
    and renames it in: killed at any moment, the index is the empty one or
    the complete one, it passes `trove check`, and the next update completes
    it and leaves no build file behind."""
    import signal
    vault = tmp_path / "v"
    vault.mkdir()
    # The index made (schema, no note) before the update that is killed:
    # one killed while it creates the file itself leaves an empty file.
    trove.ok("collection", "add", vault, "--name", "v")
    trove.ok("update")
    for i in range(N_GENERATED):
        (vault / ("note%04d.md" % i)).write_text(
            "# Note %d\n\nThe word florbnix, filler number %d.\n" % (i, i))
    _interrupt_update(trove, signal.SIGKILL, delay)
    trove.ok("check")
    r = trove.ok("search", "florbnix", "--all", "--files")
    assert len([ln for ln in r.out.splitlines() if ln.strip()]) in (0, N_GENERATED)
    trove.ok("update")
    trove.ok("check")
    r = trove.ok("search", "florbnix", "--all", "--files")
    assert len([ln for ln in r.out.splitlines() if ln.strip()]) == N_GENERATED
    assert not os.path.exists(str(trove.index) + ".build")


def test_two_first_updates_at_once_index_once(trove, tmp_path):
    """Two `trove update`s of an empty index started together: one builds
    it beside the file, the other waits for it and finds every note
    indexed; `trove check` ok."""
    import subprocess
    vault = tmp_path / "v"
    vault.mkdir()
    trove.ok("collection", "add", vault, "--name", "v")
    trove.ok("update")
    for i in range(N_GENERATED // 2):
        (vault / ("note%04d.md" % i)).write_text("# Note %d\n\nflorbnix %d\n" % (i, i))
    procs = []
    for _ in range(2):
        procs.append(subprocess.Popen([str(trove_bin()), "update"], env=trove.env,
                                      stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True))
        time.sleep(0.1)
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    trove.ok("check")
    r = trove.ok("search", "florbnix", "--all", "--files")
    assert len([ln for ln in r.out.splitlines() if ln.strip()]) == N_GENERATED // 2
    # one of them indexed the notes, the other found them indexed
    said = "".join(o + e for o, e in outs)
    assert said.count("%d new" % (N_GENERATED // 2)) == 1, outs
    assert not os.path.exists(str(trove.index) + ".build")


# In-degree of every note of the fixture, counted by hand from its links:
# wikilinks by file name, by path and by alias (case-insensitive), with
# #heading / #^block fragments and |display text, embeds, and markdown links
# with ./, ../ and %20. Links inside code blocks do not count, and neither do
# dangling ones.
FIXTURE_IN_DEGREE = {
    "Home.md": 1,                      # markdown-syntax [[Home]]
    "travel/kyoto-2023.md": 4,         # Home, ramen |display, packing ./ md,
                                       # rail guide
    "travel/packing-list.md": 5,       # Home ![[]], kyoto ![[#h]], chengdu,
                                       # lisbon (md link), rail guide
    "programming/markdown-syntax.md": 2,   # Home, zettelkasten
    "inbox/reading-list.md": 3,        # Home, sqlite-fts5, zettelkasten (path)
    "learning/zettelkasten.md": 4,     # Home, SRS, markdown-syntax, reading
    "programming/rust/ownership.md": 3,    # Home (path|display), error-
                                           # handling #h, c-pointers |display
    "cooking/sourdough-bread.md": 2,   # Home #heading|display, kyoto #^block
    "learning/Spaced Repetition.md": 4,    # Home, git, zettelkasten, reading
                                           # (../ %20 markdown link)
    "cooking/recipes/pasta-carbonara.md": 2,   # Home, knife-skills
    "travel/chengdu.md": 2,            # Home, mapo |display
    "travel/lisbon.md": 3,             # Home, sourdough, packing (md link)
    "programming/python-decorators.md": 3,  # Home, node ([[Python-Decorators]]
                                            # case differs), fibonacci
    "cooking/knife-skills.md": 3,      # Home, sourdough, pasta
    "programming/nodejs-event-loop.md": 2,  # Home, python-decorators
    "cooking/ramen-broth.md": 3,       # Home, mapo, kyoto |display
    "programming/rust/error-handling.md": 2,   # Home, ownership
    "cooking/mapo-tofu.md": 3,         # Home (alias [[Mapo Tofu]]), chengdu,
                                       # ramen
    "programming/c-pointers.md": 1,    # Home
    "programming/sqlite-fts5.md": 2,   # Home (md link), reading-list (../)
    "programming/git-basics.md": 1,    # Home
    "travel/japan-rail-guide.md": 0,
    "programming/斐波那契数列.md": 0,
}


def in_degrees(trove):
    """{path: in-degree} from `search --explain --json` over every note, or
    None when the explain output carries no in-degree number."""
    res = trove.search("related home", "--all", "--explain")
    out = {}
    for r in res:
        found = []

        def walk(o, key=""):
            if isinstance(o, dict):
                for k, v in o.items():
                    walk(v, k.lower())
            elif isinstance(o, (int, float)) and not isinstance(o, bool):
                if re.search(r"in_?degree|backlinks?|inlinks?|links_in", key):
                    found.append(o)
        walk(r)
        if not found:
            return None
        out[r["path"]] = found[0]
    return out


def test_link_resolution_in_degree(indexed):
    trove, vault = indexed
    assert set(FIXTURE_IN_DEGREE) == expected_notes(vault)
    got = in_degrees(trove)
    if got is None:
        pytest.skip("no in-degree shown by search --explain")
    assert got == FIXTURE_IN_DEGREE


def test_in_degree_is_maintained(indexed):
    trove, vault = indexed
    if in_degrees(trove) is None:
        pytest.skip("no in-degree shown by search --explain")
    (vault / "Home.md").unlink()
    p = vault / "travel" / "chengdu.md"
    p.write_text(p.read_text().replace("[[mapo-tofu|麻婆豆腐]]", "麻婆豆腐"))
    bump_mtime(p)
    trove.ok("update")
    got = in_degrees(trove)
    assert got["cooking/mapo-tofu.md"] == 1, got        # only ramen left
    assert got["programming/git-basics.md"] == 0, got
    assert got["learning/zettelkasten.md"] == 3, got
    trove.ok("check")   # the note map's in-degrees (kind 3) followed


def test_noop_update_writes_nothing_and_loads_no_dictionary(trove, vault, tmp_path):
    """An update that finds nothing changed leaves the index file as it was,
    byte for byte and with its modification time, and opens no segmenter:
    a copy of the Chinese dictionary, damaged in place after the index was
    built (size, inode and times kept, so the recorded tokenizer stamp still
    matches), is not read, so no warning. Asking for the tokenizer's version
    is what loads both the dictionary and MeCab (cjk/seg.c lazy_version),
    so MeCab is not loaded either. Its time still shows as the last update
    (kept in the stamp file beside the index). The first update that writes
    a note checks the tokenizer, finds the damage and says so."""
    src = trove_bin().parent / "trove-zh.dict"
    if not src.is_file():
        pytest.skip("no trove-zh.dict next to the binary")
    d = tmp_path / "zh.dict"
    shutil.copyfile(src, d)
    env = {"TROVE_ZH_DICT": str(d)}
    trove.ok("collection", "add", vault, "--name", COLLECTION, env=env)
    trove.ok("update", env=env)
    before = trove.index.read_bytes()
    mtime = os.stat(trove.index).st_mtime_ns
    ds = os.stat(d)
    with open(d, "r+b") as f:
        f.seek(ds.st_size // 2)
        b = f.read(1)
        f.seek(ds.st_size // 2)
        f.write(bytes([b[0] ^ 0xFF]))
    os.utime(d, ns=(ds.st_atime_ns, ds.st_mtime_ns))
    later = 2000000000
    r = trove.ok("update", env=dict(env, TROVE_NOW=str(later)))
    assert r.err == "" and "re-tokenized" not in r.out, r
    assert summary_counts(r.out).get("unchanged") == len(expected_notes(vault)), r
    assert os.stat(trove.index).st_mtime_ns == mtime
    assert trove.index.read_bytes() == before
    assert trove.ok("status", "--json", env=env).json()["last_update"] == later
    # `trove check` finds the index sound and the dictionary damaged
    r = trove("check", env=env)
    assert "index.db: ok" in r.out and "damaged dictionary" in r.err, r
    (vault / "zh-note.md").write_text("# 数据\n\n关系型数据库\n", encoding="utf-8")
    r = trove.ok("update", env=env)
    assert str(d) in r.err and "re-tokenized" in r.out, r
    assert "index.db: ok" in trove("check", env=env).out
