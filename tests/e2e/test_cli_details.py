"""Small CLI rules: attached short-option values, `--` for leading-dash
words, warnings for contexts on missing paths, the hint when no index
exists yet."""
from conftest import COLLECTION


def test_attached_short_values(indexed):
    trove, _ = indexed
    assert len(trove.search("related", "-n3")) == 3
    assert len(trove.search("related", "-n", "3")) == 3
    assert len(trove.search("related", "-n=3")) == 3
    res = trove.search("bread", "-c" + COLLECTION)
    assert res and all(r["collection"] == COLLECTION for r in res)
    r = trove.ok("get", "%s/Home.md" % COLLECTION, "-l2")
    assert len(r.out.splitlines()) == 2, r


def test_dash_dash_passes_leading_dash_words(indexed):
    trove, vault = indexed
    # -n5 after `--` is an exclusion of the word n5, not a limit
    r = trove.ok("search", "related", "--explain", "--json", "--", "-n5")
    assert "NOT" in r.json()["fts"] and "n5" in r.json()["fts"], r
    assert len(r.json()["results"]) == 10


def test_attached_value_that_is_not_an_option_value(indexed):
    trove, _ = indexed
    r = trove("search", "bread", "-nuts")
    assert r.rc == 2 and "-n needs a positive number" in r.err and "--" in r.err, r
    r = trove("search", "bread", "-cream")
    assert r.rc == 1 and "no collection named 'ream'" in r.err, r
    assert "-- -cream" in r.err, r
    # other single-dash words are still exclusions
    trove.ok("search", "bread", "-sourdough")


def test_context_for_missing_path_warns(indexed):
    trove, vault = indexed
    r = trove.ok("context", "add", COLLECTION + "/no/such/folder", "later")
    assert "warning" in r.err and "does not exist" in r.err, r
    assert (COLLECTION + "/no/such/folder\tlater") in trove.ok("context", "list").out
    r = trove.ok("context", "add", COLLECTION + "/cooking", "food")
    assert r.err == "", r
    r = trove("context", "add", str(vault / "nope" / "x.md"), "t")
    assert r.rc == 1 and "does not exist" in r.err, r


def test_no_index_hint_after_collection_add(trove, vault):
    r = trove("search", "bread")
    assert r.rc == 1 and "trove collection add" in r.err, r
    trove.ok("collection", "add", vault, "--name", COLLECTION)
    for cmd in (("search", "bread"), ("ls",), ("multi-get", "*")):
        r = trove(*cmd)
        assert r.rc == 1, r
        assert "run `trove update`" in r.err and "collection add" not in r.err, r
