"""`trove collection add|list|remove|rename` and `trove context`."""
import re

from conftest import COLLECTION, expected_notes


def names_in(text):
    return set(re.findall(r"[A-Za-z0-9_.-]+", text))


def test_add_list_remove(trove, vault):
    trove.ok("collection", "add", vault, "--name", "kb-alpha")
    r = trove.ok("collection", "list")
    assert "kb-alpha" in names_in(r.out), r
    assert str(vault) in r.out, r
    trove.ok("update")
    assert trove.search("autolyse")
    trove.ok("collection", "remove", "kb-alpha")
    r = trove.ok("collection", "list")
    assert "kb-alpha" not in names_in(r.out), r
    # its documents are gone from the index as well
    assert trove.search("autolyse") == []


def test_default_name_is_folder_name(trove, vault):
    trove.ok("collection", "add", vault)
    r = trove.ok("collection", "list")
    assert "vault" in names_in(r.out), r
    trove.ok("update")
    res = trove.search("autolyse")
    assert res and res[0]["collection"] == "vault"


def test_rename_keeps_documents(trove, vault):
    trove.ok("collection", "add", vault, "--name", "kb-alpha")
    trove.ok("update")
    trove.ok("collection", "rename", "kb-alpha", "kb-beta")
    r = trove.ok("collection", "list")
    found = names_in(r.out)
    assert "kb-beta" in found and "kb-alpha" not in found, r
    res = trove.search("autolyse")
    assert res and res[0]["collection"] == "kb-beta", res
    assert trove.search("autolyse", "-c", "kb-beta")
    r = trove("search", "autolyse", "-c", "kb-alpha")
    assert r.rc == 1, r
    # the renamed collection keeps updating incrementally
    r = trove.ok("update")
    assert trove.search("autolyse")[0]["collection"] == "kb-beta"


def test_mask_selects_files(trove, vault):
    trove.ok("collection", "add", vault, "--name", COLLECTION,
             "--mask", "cooking/**/*.md")
    trove.ok("update")
    res = trove.search("related", "--all")
    paths = {r["path"] for r in res}
    want = {p for p in expected_notes(vault) if p.startswith("cooking/")}
    assert paths == want, paths


def test_exclude_skips_files(trove, vault):
    trove.ok("collection", "add", vault, "--name", COLLECTION,
             "--exclude", "travel/**")
    trove.ok("update")
    paths = {r["path"] for r in trove.search("related", "--all")}
    assert paths and not any(p.startswith("travel/") for p in paths), paths
    assert trove.search("Fushimi Inari") == []


def test_add_missing_path_fails(trove, tmp_path):
    missing = tmp_path / "does-not-exist"
    r = trove("collection", "add", missing, "--name", "x")
    assert r.rc == 1, r
    assert str(missing) in r.err, r


def test_add_duplicate_name_fails(trove, vault, tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    trove.ok("collection", "add", vault, "--name", "dup")
    r = trove("collection", "add", other, "--name", "dup")
    assert r.rc == 1, r
    assert "dup" in r.err, r


def test_remove_missing_collection_fails(trove, vault):
    trove.ok("collection", "add", vault, "--name", COLLECTION)
    r = trove("collection", "remove", "nosuch")
    assert r.rc == 1, r
    assert "nosuch" in r.err, r


def test_rename_missing_or_onto_existing_fails(trove, vault, tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    trove.ok("collection", "add", vault, "--name", "one")
    trove.ok("collection", "add", other, "--name", "two")
    assert trove("collection", "rename", "nosuch", "three").rc == 1
    r = trove("collection", "rename", "one", "two")
    assert r.rc == 1, r
    found = names_in(trove.ok("collection", "list").out)
    assert {"one", "two"} <= found


def test_context_most_general_first(indexed):
    trove, _ = indexed
    trove.ok("context", "add", COLLECTION, "Personal knowledge base")
    trove.ok("context", "add", COLLECTION + "/cooking",
             "Recipes I have actually cooked")
    res = trove.search("autolyse")
    assert res[0]["path"] == "cooking/sourdough-bread.md"
    assert res[0]["context"] == ["Personal knowledge base",
                                 "Recipes I have actually cooked"], res[0]
    res = trove.search("Fushimi Inari")
    assert res[0]["path"] == "travel/kyoto-2023.md"
    assert res[0]["context"] == ["Personal knowledge base"], res[0]

    r = trove.ok("context", "list")
    assert "Personal knowledge base" in r.out
    assert "Recipes I have actually cooked" in r.out

    trove.ok("context", "rm", COLLECTION + "/cooking")
    res = trove.search("autolyse")
    assert res[0]["context"] == ["Personal knowledge base"], res[0]
    r = trove.ok("context", "list")
    assert "Recipes I have actually cooked" not in r.out


def test_context_on_missing_collection_fails(indexed):
    trove, _ = indexed
    r = trove("context", "add", "nosuch", "text")
    assert r.rc == 1, r
