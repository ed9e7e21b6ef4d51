"""`trove links`, `similar`, `dupes` and `eval` on fixtures/graph-vault: meetings that
link notes, notes that name others without linking them, a note with no
links, an unresolved link, near-duplicate recipes, a guide in two languages.
Every test runs cold and through a daemon (each read compared byte for byte
with its cold twin)."""
import csv
import hashlib
import io
import shutil
import xml.etree.ElementTree as ET

import pytest

from conftest import REPO, daemon_both_ways, index_vault
from test_cli_meta import index_meta

DAEMON_BOTH_WAYS = True
GRAPH_VAULT = REPO / "fixtures" / "graph-vault"
ALPHA = "g/projects/Project Alpha.md"
ANA = "g/people/Ana Silva.md"
FORMATS = ("--json", "--csv", "--md", "--xml", "--files", None)


@pytest.fixture
def graph(trove, tmp_path, trove_mode):
    v = tmp_path / "graph"
    shutil.copytree(GRAPH_VAULT, v)
    index_vault(trove, v, "g")        # add + update, or a template's copy
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


@pytest.fixture
def meta(trove, tmp_path, trove_mode):
    """fixtures/meta: frontmatter fields, dates, tags (test_cli_meta.py)."""
    index_meta(trove, tmp_path)
    for _ in daemon_both_ways(trove, trove_mode):
        yield trove


META_ALPHA = "m/projects/alpha.md"
DONE = {"projects/gamma.md", "meetings/2025-06-02 Planning.md"}   # and alpha itself
PLANNING = {"meetings/2025-06-02 Planning.md"}


def similar_paths(t, *args):
    doc = t.ok("similar", META_ALPHA, "-n", "50", "--json", *args).json()
    assert doc["query"] == "similar:" + META_ALPHA
    return {r["path"] for r in doc["results"]}


@pytest.mark.parametrize("args,want", [
    (["--where", "status=done"], DONE),
    (["--where", "status=done", "--where", "priority>=3"], set()),   # only alpha: excluded
    (["--where", "status!=draft", "-c", "m"], None),                 # every one but beta
    (["--since", "2025-01-01", "--until", "2025-12-31"], PLANNING),  # alpha's date too
    (["--until", "2024-12-31"], {"projects/beta.md"}),
    (["--folder", "m/meetings"], PLANNING),
    (["--tags", "meeting"], PLANNING),
    (["--heading", "risks"], PLANNING),
])
def test_similar_filters(meta, args, want):
    every = similar_paths(meta)
    assert "projects/alpha.md" not in every and {"projects/beta.md"} | DONE <= every
    if want is None:
        want = every - {"projects/beta.md"}
    got = similar_paths(meta, *args)
    assert got == want and got <= every


def test_similar_filters_every_format(meta):
    args = ["similar", META_ALPHA, "--where", "status=done", "--since", "2025-01-01",
            "--tags", "meeting", "--lang", "en"]
    for fmt in FORMATS:
        r = meta.ok(*args, *([fmt] if fmt else []))
        assert "Planning" in r.out and "gamma" not in r.out and "beta" not in r.out
    doc = meta.ok(*args, "--json").json()
    (r,) = doc["results"]
    assert (r["date"], r["date_source"]) == ("2025-06-02", "filename")


@pytest.mark.parametrize("args,rc,msg", [
    (["--where", "priority>=high"], 2, "compares numbers and dates"),
    (["--where", "status"], 2, "no operator"),
    (["--where", "nosuch=1"], 1, "no note has a field `nosuch`"),
    (["--since", "2024-02-30"], 2, "not a date"),
    (["--until", "yesterdayish"], 2, "not a date"),
    (["--where"], 2, "--where needs"),
    (["--since"], 2, "--since needs a date"),
    (["--lang", "english!"], 2, "is not a language code"),
    (["--folder"], 2, "--folder needs"),
    (["-c", "nope"], 1, "no collection named 'nope'"),
    (["--wehre", "status=done"], 2, "unknown option --wehre"),
])
def test_similar_filters_bad_input(meta, args, rc, msg):
    r = meta("similar", META_ALPHA, *args)
    assert r.rc == rc and msg in r.err, r


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


# ---- dupes ----

SOURDOUGH = {"recipes/sourdough.md", "recipes/sourdough-copy.md"}


def test_dupes_groups_near_duplicates(graph):
    t, _ = graph
    doc = t.ok("dupes", "--json").json()
    assert doc["unit"] == "note" and doc["threshold"] == 0.8
    assert doc["compared"] == 13 and doc["vector_model"] is None
    [g] = doc["groups"]
    assert {x["path"] for x in g["items"]} == SOURDOUGH
    assert 0.8 <= g["similarity"] <= 1 and g["cosine"] is None
    # a lower threshold takes in the second try (one number and the title differ)
    [g] = t.ok("dupes", "--threshold", "0.6", "--json").json()["groups"]
    assert {x["path"] for x in g["items"]} == SOURDOUGH | {"recipes/sourdough-v2.md"}
    r = t.ok("dupes")
    assert "2 notes, similarity >= 0.8" in r.out
    assert "1 group of near-duplicate notes among 13" in r.out


def test_dupes_every_format_and_passages(graph):
    t, v = graph
    r = t.ok("dupes", "--csv")
    rows = list(csv.DictReader(io.StringIO(r.out)))
    assert {x["path"] for x in rows} == SOURDOUGH and {x["group"] for x in rows} == {"1"}
    root = ET.fromstring(t.ok("dupes", "--xml").out)
    assert [len(g) for g in root] == [2]
    assert set(t.ok("dupes", "--files").out.splitlines()) == {str(v / p) for p in SOURDOUGH}
    assert "## 1. 2 notes" in t.ok("dupes", "--md").out
    doc = t.ok("dupes", "--passages", "--json").json()
    assert doc["unit"] == "passage"
    [g] = doc["groups"]
    assert {x["path"] for x in g["items"]} == SOURDOUGH
    assert all(x["heading"] for x in g["items"]) and g["items"][0]["line_start"] == 1


def test_dupes_with_vectors(graph, glove):
    t, _ = graph
    t.ok("embed", "--model", glove, both=False)
    doc = t.ok("dupes", "--json").json()
    assert doc["vector_model"] and doc["rejected_by_vectors"] == 0
    [g] = doc["groups"]
    assert g["cosine"] is not None and g["cosine"] >= 0.8
    assert "vectors agree" in t.ok("dupes").out


def test_dupes_bad_input(graph):
    t, _ = graph
    for bad in ("0", "1.5", "abc", "-1"):
        r = t("dupes", "--threshold", bad, both=False)
        assert r.rc == 2 and "--threshold needs a number in (0, 1]" in r.err
    r = t("dupes", "extra", both=False)
    assert r.rc == 2 and "unexpected argument" in r.err
    r = t("dupes", "-c", "nope")
    assert r.rc == 1 and "no collection named 'nope'" in r.err
    assert t.ok("dupes", "-c", "g", "--json").json()["compared"] == 13


def test_dupes_empty_vault(trove, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    trove.ok("collection", "add", empty, "--name", "e")
    trove.ok("update")
    doc = trove.ok("dupes", "--json").json()
    assert doc["groups"] == [] and doc["compared"] == 0
    assert "0 groups of near-duplicate notes among 0" in trove.ok("dupes").out


# ---- eval ----

def rows_of(doc, **want):
    return [r for r in doc["results"] if all(r[k] == v for k, v in want.items())]


def test_eval_builds_its_set_from_the_vault(graph):
    t, _ = graph
    before = hashlib.sha256(t.index.read_bytes()).hexdigest()
    doc = t.ok("eval", "--json").json()
    sets = doc["sets"]
    assert sets["title"] == {"queries": 13, "candidates": 13}
    assert sets["alias"]["queries"] == 1           # "Alpha Launch"
    assert sets["description"]["queries"] == 1     # gateway-snapshots.md
    # the standup's two resolved links (not the unresolved one), the review's
    # one, Project Alpha's one
    assert sets["link"]["queries"] == 4
    assert {r["mix"] for r in doc["results"]} == {"hybrid", "bm25", "title", "query"}  # no vectors
    # query keeps search's top 10 (its search floor): it finds every answer hybrid does
    for h in rows_of(doc, mix="hybrid"):
        [qr] = rows_of(doc, kind=h["kind"], mix="query")
        assert qr["queries"] == h["queries"] and qr["recall@10"] >= h["recall@10"], (qr, h)
    [title] = rows_of(doc, kind="title", mix="title")
    assert title["queries"] == 13 and title["recall@10"] == 1.0
    [link] = rows_of(doc, kind="link", mix="title")
    assert link["recall@10"] < 1.0   # a sentence is not a name: the bias the docs name
    for r in doc["results"]:
        assert 0 <= r["mrr"] <= r["ndcg@10"] + 1e-9 <= r["recall@10"] + 2e-9 <= 1 + 2e-9
    [desc] = rows_of(doc, kind="description", mix="hybrid")
    assert desc["queries"] == 1
    # per kind, the "all" row counts every query
    [all_h] = rows_of(doc, kind="all", mix="hybrid")
    assert all_h["queries"] == sum(s["queries"] for s in sets.values())
    assert hashlib.sha256(t.index.read_bytes()).hexdigest() == before   # never writes


def test_eval_compare_and_formats(graph):
    t, _ = graph
    doc = t.ok("eval", "--compare", "title_weight=0,bm25_weight=1", "", "--json").json()
    assert {r["setting"] for r in doc["results"]} == {"title_weight=0,bm25_weight=1", ""}
    assert {r["mix"] for r in doc["results"]} == {"hybrid"}
    r = t.ok("eval", "--csv", "-n", "2")
    rows = list(csv.DictReader(io.StringIO(r.out)))
    assert rows and all(int(x["queries"]) <= 2 or x["kind"] == "all" for x in rows)
    r = t.ok("eval")
    assert r.out.startswith("queries: title 13/13") and "nDCG@10" in r.out


def test_eval_with_vectors(graph, glove):
    t, _ = graph
    t.ok("embed", "--model", glove, both=False)
    doc = t.ok("eval", "--model", glove, "--json").json()
    assert {r["mix"] for r in doc["results"]} == {"hybrid", "bm25", "title", "vector", "query"}
    doc = t.ok("eval", "--compare", "vector_weight=0.3", "vector_weight=0.7", "--model", glove,
               "--json").json()
    assert {r["setting"] for r in doc["results"]} == {"vector_weight=0.3", "vector_weight=0.7"}


def test_eval_bad_input(graph):
    t, _ = graph
    r = t("eval", "--compare", "bogus=1", "")
    assert r.rc == 1 and "no such search option" in r.err
    r = t("eval", "--compare", "title_weight=-1", "")
    assert r.rc == 1 and "title_weight" in r.err
    r = t("eval", "--compare", "title_weight", "")
    assert r.rc == 1 and "NAME=VALUE" in r.err
    r = t("eval", "--compare", "x=1", both=False)
    assert r.rc == 2 and "--compare needs two settings" in r.err
    r = t("eval", "-n", "0", both=False)
    assert r.rc == 2
    r = t("eval", "-c", "nope")
    assert r.rc == 1 and "no collection named 'nope'" in r.err


def test_eval_empty_vault(trove, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    trove.ok("collection", "add", empty, "--name", "e")
    trove.ok("update")
    assert trove.ok("eval", "--json").json()["results"] == []
    assert "no queries" in trove.ok("eval").out
