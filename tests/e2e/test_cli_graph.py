"""`trove links` and `trove similar` on fixtures/graph-vault: meetings that
link notes, notes that name others without linking them, a note with no
links, an unresolved link, near-duplicate recipes, a guide in two languages.
Every test runs cold and through a daemon (each read compared byte for byte
with its cold twin)."""
import csv
import io
import shutil
import xml.etree.ElementTree as ET

import pytest

from conftest import REPO, daemon_both_ways

DAEMON_BOTH_WAYS = True
GRAPH_VAULT = REPO / "fixtures" / "graph-vault"
ALPHA = "g/projects/Project Alpha.md"
ANA = "g/people/Ana Silva.md"
FORMATS = ("--json", "--csv", "--md", "--xml", "--files", None)


@pytest.fixture
def graph(trove, tmp_path, trove_mode):
    v = tmp_path / "graph"
    shutil.copytree(GRAPH_VAULT, v)
    trove.ok("collection", "add", v, "--name", "g")
    trove.ok("update")
    for _ in daemon_both_ways(trove, trove_mode):
        yield trove, v


def paths(links):
    return [(x["note"]["path"] if x["note"] else None) for x in links]


def test_links_backlinks_outlinks_mentions(graph):
    t, _ = graph
    doc = t.ok("links", ALPHA, "--json").json()
    assert doc["note"]["path"] == "projects/Project Alpha.md"
    assert doc["names"][:2] == ["Project Alpha", "Alpha Launch"]
    assert paths(doc["backlinks"]) == ["meetings/2026-03-02 Standup.md",
                                       "meetings/2026-03-09 Review.md"]
    standup, review = doc["backlinks"]
    assert standup["line"] == 5 and "[[Project Alpha]] sensors" in standup["text"]
    assert review["fragment"] == "Risks" and review["line"] == 3
    assert paths(doc["outlinks"]) == ["people/Ana Silva.md"]
    assert doc["outlinks"][0]["line"] == 7
    assert doc["unresolved"] == []
    # budget.md names the project without linking it; the meetings link it.
    assert paths(doc["mentions"]) == ["notes/budget.md"]
    m = doc["mentions"][0]
    assert m["kind"] == "mention" and m["name"] == "Project Alpha" and m["line"] == 3
    assert m["text"] == "Most of the hardware money goes to Project Alpha this year."


def test_links_unresolved_and_mention_of_a_person(graph):
    t, _ = graph
    doc = t.ok("links", "g/meetings/2026-03-02 Standup.md", "--json").json()
    assert [x["target"] for x in doc["unresolved"]] == ["Budget Plan 2026"]
    assert doc["unresolved"][0]["note"] is None
    assert paths(doc["outlinks"]) == ["people/Ana Silva.md", "projects/Project Alpha.md"]
    ana = t.ok("links", ANA, "--json").json()
    assert paths(ana["mentions"]) == ["meetings/2026-03-09 Review.md"]
    assert ana["mentions"][0]["line"] == 4


def test_links_note_without_links(graph):
    t, _ = graph
    doc = t.ok("links", "g/notes/lonely.md", "--json").json()
    for k in ("backlinks", "outlinks", "unresolved", "mentions"):
        assert doc[k] == [], k
    r = t.ok("links", "g/notes/lonely.md")
    assert "backlinks (0)" in r.out and "unlinked mentions (0)" in r.out


def test_links_by_docid_and_every_format(graph):
    t, v = graph
    docid = t.ok("links", ALPHA, "--json").json()["note"]["docid"]
    assert t.ok("links", docid, "--json").json()["note"]["path"] == "projects/Project Alpha.md"
    for fmt in FORMATS:
        r = t.ok("links", ALPHA, *([fmt] if fmt else []))
        if fmt == "--csv":
            rows = list(csv.DictReader(io.StringIO(r.out)))
            assert [x["section"] for x in rows] == ["backlink", "backlink", "outlink", "mention"]
            assert rows[-1]["path"] == "notes/budget.md" and rows[-1]["line"] == "3"
        elif fmt == "--xml":
            root = ET.fromstring(r.out)
            assert [e.get("section") for e in root] == ["backlink", "backlink", "outlink",
                                                         "mention"]
        elif fmt == "--files":
            assert r.out.splitlines() == [
                str(v / "meetings/2026-03-02 Standup.md"), str(v / "meetings/2026-03-09 Review.md"),
                str(v / "people/Ana Silva.md"), str(v / "notes/budget.md")]
        elif fmt == "--md":
            assert "## Backlinks (2)" in r.out and "## Unlinked mentions (1)" in r.out
        elif fmt is None:
            assert "backlinks (2)" in r.out and 'names "Project Alpha"' in r.out


def test_similar_excludes_itself_and_translations(graph):
    t, _ = graph
    doc = t.ok("similar", "g/en/backup-guide.md", "--json", "--explain").json()
    got = [x["path"] for x in doc["results"]]
    assert got and got[0] == "notes/gateway-snapshots.md"
    assert "en/backup-guide.md" not in got and "de/backup-guide.md" not in got
    sim = doc["similar"]
    assert sim["note"]["path"] == "en/backup-guide.md"
    terms = [x["term"] for x in sim["terms"]]
    assert "snapshots" in terms or "snapshot" in terms
    assert sim["vector"] is None   # no vectors in this index
    shared = doc["results"][0]["explain"]["shared_terms"]
    assert "checksum" in shared and "offsite" in shared


def test_similar_near_duplicates_first_and_limit(graph):
    t, _ = graph
    got = [x["path"] for x in t.ok("similar", "g/recipes/sourdough.md", "--json").json()["results"]]
    assert set(got[:2]) == {"recipes/sourdough-copy.md", "recipes/sourdough-v2.md"}
    assert len(t.ok("similar", "g/recipes/sourdough.md", "-n", "1", "--json").json()["results"]) == 1


def test_similar_every_format(graph):
    t, v = graph
    for fmt in FORMATS:
        r = t.ok("similar", "g/recipes/sourdough.md", "-n", "2", *([fmt] if fmt else []))
        if fmt == "--files":
            assert set(r.out.splitlines()) == {str(v / "recipes/sourdough-copy.md"),
                                               str(v / "recipes/sourdough-v2.md")}
        elif fmt == "--csv":
            assert len(list(csv.DictReader(io.StringIO(r.out)))) == 2
        elif fmt == "--xml":
            assert len(ET.fromstring(r.out)) == 2
        elif fmt is None:
            assert "sourdough-copy.md" in r.out
    r = t.ok("similar", "g/recipes/sourdough.md", "-n", "2", "--explain")
    assert "terms:" in r.out and "shares:" in r.out and "vectors: none" in r.out


def test_similar_with_vectors(graph, glove):
    t, _ = graph
    t.ok("embed", "--model", glove, both=False)
    doc = t.ok("similar", "g/recipes/sourdough.md", "--json", "--explain").json()
    assert doc["similar"]["vector"]["chunks"] >= 1
    assert doc["results"][0]["explain"]["vector"] is not None
    got = [x["path"] for x in doc["results"]]
    assert "recipes/sourdough.md" not in got
    assert set(got[:2]) == {"recipes/sourdough-copy.md", "recipes/sourdough-v2.md"}


@pytest.mark.parametrize("cmd", ["links", "similar"])
def test_bad_input(graph, cmd):
    t, _ = graph
    r = t(cmd, "g/no/such-note.md")
    assert r.rc == 1 and "not found" in r.err
    r = t(cmd, "#zz12")
    assert r.rc == 1 and "4 to 8 hex digits" in r.err
    # Usage errors never reach the daemon.
    r = t(cmd, both=False)
    assert r.rc == 2 and "needs a NOTE" in r.err
    r = t(cmd, ALPHA, "--bogus", both=False)
    assert r.rc == 2 and "unknown option --bogus" in r.err
    r = t(cmd, ALPHA, "another", both=False)
    assert r.rc == 2


def test_similar_unknown_collection(graph):
    t, _ = graph
    r = t("similar", ALPHA, "-c", "nope")
    assert r.rc == 1 and "no collection named 'nope'" in r.err


@pytest.mark.parametrize("cmd", ["links", "similar"])
def test_empty_vault(trove, tmp_path, cmd):
    empty = tmp_path / "empty"
    empty.mkdir()
    trove.ok("collection", "add", empty, "--name", "e")
    trove.ok("update")
    r = trove(cmd, "e/nothing.md")
    assert r.rc == 1 and "not found" in r.err
    r = trove(cmd, "#abcd")
    assert r.rc == 1 and "no note with docid" in r.err
