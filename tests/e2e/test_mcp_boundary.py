"""The agent boundary: notes kept from agents (issue 16).

config.yaml `mcp: {exclude: [GLOB], private_key: KEY}` and a frontmatter
flag (`private: true`) keep notes out of every MCP answer, while the CLI (the
owner) still finds them. Real clients (the 1.x SDK, the 2.x client pinned to
2026-07-28) try to reach the hidden notes by every tool, resource URI, glob,
#docid, backlink, mention, translation and completion, over stdio and
Streamable HTTP, cold and through a daemon; a property check then looks at
everything they got back for a marker only the hidden notes hold. The web
page under `--allow-remote` keeps the same boundary (issue 19); the owner's
local page does not.
"""
import json
import re
import urllib.parse

import pytest

from test_mcp import HttpServer, npm_install, run_sdk, sdk_dir  # noqa: F401
from test_mcp_clients import CLIENT2, run_client2
from test_web import WebServer

MARKER = "zebraquokkasecret"
COLL = "v"
TOKEN = "b0undary-token"

# path -> text. Every hidden note holds MARKER, links [[Alpha]] (a backlink
# into a visible note) and names Plans without linking it (a mention).
HIDDEN = {
    # by the folder glob `journal`
    "journal/diary.md": "# Diary\n\n%s: my zebra diary links [[Alpha]] and names Plans.\n",
    # by the COLLECTION/PATH glob `v/public/hidden-*`
    "public/hidden-plan.md": "# Hidden plan\n\nThe %s zebra plan, see [[Alpha]]; Plans too.\n",
    # by the private flag, in its spellings
    "public/flagged.md": "---\nprivate: true\n---\n# Flagged\n\n%s zebra, [[Alpha]], Plans.\n",
    "public/upper.md": "---\nPrivate: 1\n---\n# Upper\n\n%s zebra note: [[Alpha]] and Plans.\n",
    # a translation of a visible note (same path under a sibling language folder)
    "de/guide.md": "---\nprivate: yes\nlang: de\n---\n# Anleitung\n\nDie zebra Anleitung "
                   "%s [[Alpha]] und Plans.\n",
}
VISIBLE = {
    "public/alpha.md": "# Alpha\n\nAlpha is the zebra project. See [[Diary]] and [[Plans]].\n",
    "public/plans.md": "# Plans\n\nPlans for the zebra project link back to [[Alpha]].\n",
    "public/open.md": "---\nprivate: false\n---\n# Open\n\nAn open zebra note about Alpha.\n",
    "en/guide.md": "# Guide\n\nThe zebra guide, see [[Alpha]].\n",
}


def uri(rel):
    return "trove://%s/%s" % (COLL, urllib.parse.quote(rel, safe="/"))


@pytest.fixture
def bounded(trove, tmp_path):
    """A vault with hidden and visible notes, indexed, and its docids as the
    owner's CLI shows them."""
    vault = tmp_path / "vault"
    for rel, text in list(HIDDEN.items()) + list(VISIBLE.items()):
        p = vault / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text % MARKER if "%s" in text else text)
    trove.ok("collection", "add", vault, "--name", COLL)
    cfg = trove.config / "config.yaml"
    cfg.write_text(cfg.read_text() + 'mcp:\n  exclude: [journal, "%s/public/hidden-*"]\n' % COLL)
    trove.ok("update")
    # every note holds "zebra": the owner's search lists them all with their docids
    docids = {r["path"]: r["docid"].lstrip("#") for r in trove.search("zebra", "--all",
                                                                      "--each-translation")}
    assert set(docids) == set(HIDDEN) | set(VISIBLE), docids
    return trove, vault, docids


def test_the_owner_keeps_full_access(bounded):
    """The CLI is the owner's: the boundary is the agents' alone."""
    trove, _, _ = bounded
    found = {r["path"] for r in trove.search(MARKER, "--all", "--each-translation")}
    assert found == set(HIDDEN), found
    assert MARKER in trove.ok("get", "%s/journal/diary.md" % COLL).out
    back = trove.ok("links", "%s/public/alpha.md" % COLL, "--json").json()
    assert {b["note"]["path"] for b in back["backlinks"]} >= {"journal/diary.md", "public/flagged.md"}


def plan_of(docids):
    """Every way in: (name, step) pairs. Each step on a hidden note has a
    twin on a note that does not exist, whose error it must equal."""
    S = lambda name, **a: {"op": "callTool", "name": name, "arguments": a}
    tpl = {"type": "ref/resource", "uri": "trove://{collection}/{+path}"}
    steps = [
        ("tools", {"op": "listTools"}),
        ("resources", {"op": "listResources"}),
        ("templates", {"op": "listResourceTemplates"}),
        ("prompts", {"op": "listPrompts"}),
        ("search", S("search", query="zebra", top_k=50)),
        # (upper case: the answer echoes the query, and search folds case)
        ("search_marker", S("search", query=MARKER.upper(), top_k=50)),
        ("search_titles", S("search", query="diary flagged upper anleitung hidden plan",
                            top_k=50)),
        ("search_uris", S("search", query="zebra", filters={
            "doc_uris": [uri(r) for r in HIDDEN]})),
        ("search_prefix", S("search", query="zebra", filters={"doc_uri_prefix": "journal/"})),
        ("query", S("query", query="zebra diary plans", top_k=50)),
        ("multi_glob_all", S("multi_get", glob="**")),
        ("multi_glob_coll", S("multi_get", glob="%s/**" % COLL)),
        ("multi_paths", S("multi_get", paths=[uri(r) for r in HIDDEN])),
        ("get_glob_journal", S("get", path="journal/*")),
        ("get_glob_all", S("get", path="%s/*/*.md" % COLL)),
        ("links_alpha", S("links", path=uri("public/alpha.md"))),
        ("links_plans", S("links", path=uri("public/plans.md"))),
        ("similar_alpha", S("similar", path=uri("public/alpha.md"), top_k=50)),
        ("similar_guide", S("similar", path=uri("en/guide.md"), top_k=50)),
        ("complete_all", {"op": "complete", "ref": tpl,
                          "argument": {"name": "path", "value": ""},
                          "context": {"arguments": {"collection": COLL}}}),
        ("complete_j", {"op": "complete", "ref": tpl, "argument": {"name": "path",
                                                                   "value": "j"}}),
        ("complete_prompt", {"op": "complete", "ref": {"type": "ref/prompt", "name": "note"},
                             "argument": {"name": "path", "value": COLL + "/"}}),
        ("ask", {"op": "getPrompt", "name": "ask_notes", "arguments": {"question": "zebra"}}),
        ("note_links_alpha", {"op": "getPrompt", "name": "note_links",
                              "arguments": {"path": uri("public/alpha.md")}}),
        ("status", S("status")),
    ]
    ghosts = []
    for i, rel in enumerate(HIDDEN):
        ghost = "public/ghost-%d.md" % i
        g = "%08x" % (0xabcdef00 + i)
        while g[:4] in [d[:4] for d in docids.values()]:
            g = "%08x" % (int(g, 16) + 0x1000000)
        refs = [(uri(rel), uri(ghost)), ("#" + docids[rel], "#" + g)]
        if i == 0:   # every spelling of a reference once
            refs += [("%s/%s" % (COLL, rel), "%s/%s" % (COLL, ghost)), (rel, ghost),
                     ("#" + docids[rel][:4], "#" + g[:4])]
        for k, (ref, gref) in enumerate(refs):
            for tool in ("get", "links", "similar"):
                ghosts.append(("%s_%d_%d" % (tool, i, k), S(tool, path=ref),
                               S(tool, path=gref), ref, gref))
            for prompt in ("note", "note_links")[:2 if i == 0 else 1]:
                a = {"op": "getPrompt", "name": prompt, "arguments": {"path": ref}}
                b = {"op": "getPrompt", "name": prompt, "arguments": {"path": gref}}
                ghosts.append(("%s_%d_%d" % (prompt, i, k), a, b, ref, gref))
        ghosts.append(("read_%d" % i, {"op": "readResource", "uri": uri(rel)},
                       {"op": "readResource", "uri": uri(ghost)}, uri(rel), uri(ghost)))
    return steps, ghosts


def message(step):
    if "error" in step:
        return step["error"]["message"]
    r = step["result"]
    assert r.get("isError") is True, r
    return r["content"][0]["text"]


def check_boundary(out, docids):
    """The property: nothing an agent got holds the marker or names a hidden
    note, and what it may see is all there."""
    steps, ghosts = plan_of(docids)
    got = dict(zip([n for n, _ in steps], out["steps"][:len(steps)]))
    rest = out["steps"][len(steps):]
    text = json.dumps(out)
    assert MARKER not in text
    hidden_names = list(HIDDEN) + [docids[r] for r in HIDDEN]
    # (multi_paths names the hidden notes it asked for: checked below)
    plain = json.dumps([{k: v for k, v in got.items() if k != "multi_paths"},
                        out.get("instructions")])
    for name in hidden_names:
        assert name not in plain, name
    # what may be seen is seen: the test could fail
    res = [r["path"] for r in got["search"]["result"]["structuredContent"]["results"]]
    assert sorted(res) == sorted(VISIBLE), res
    assert all(not r.get("also_in") for r in
               got["search"]["result"]["structuredContent"]["results"])
    assert got["search_marker"]["result"]["structuredContent"]["results"] == []
    assert got["search_uris"]["result"]["structuredContent"]["results"] == []
    assert got["search_prefix"]["result"]["structuredContent"]["results"] == []
    listed = sorted(r["uri"] for r in got["resources"]["result"]["resources"])
    assert listed == sorted(uri(r) for r in VISIBLE)
    for k in ("multi_glob_all", "multi_glob_coll"):
        notes = got[k]["result"]["structuredContent"]["notes"]
        assert sorted(n["path"] for n in notes) == sorted(VISIBLE), (k, notes)
    asked = got["multi_paths"]["result"]["structuredContent"]["notes"]
    assert [n["path"] for n in asked] == [uri(r) for r in HIDDEN], asked
    for n, rel in zip(asked, HIDDEN):
        assert set(n) == {"path", "error"}, n
        assert n["error"].startswith("%s/%s: not found in any collection" % (COLL, rel)), n
    links = got["links_alpha"]["result"]["structuredContent"]
    assert [b["doc_uri"] for b in links["backlinks"]] == [uri("en/guide.md"),
                                                          uri("public/plans.md")], links
    assert [o["doc_uri"] for o in links["outlinks"]] == [uri("public/plans.md")]
    assert [u["target"] for u in links["unresolved"]] == ["Diary"]   # it leads to no note it may see
    assert [m["doc_uri"] for m in links["mentions"]] == [uri("public/open.md")], links
    plans = got["links_plans"]["result"]["structuredContent"]
    assert [b["doc_uri"] for b in plans["backlinks"]] == [uri("public/alpha.md")]
    assert sorted(got["complete_all"]["result"]["completion"]["values"]) == sorted(VISIBLE)
    assert got["complete_j"]["result"]["completion"]["values"] == []
    assert sorted(got["complete_prompt"]["result"]["completion"]["values"]) == sorted(
        "%s/%s" % (COLL, r) for r in VISIBLE)
    st = got["status"]["result"]["structuredContent"]
    assert st["notes"] == len(VISIBLE) and st["collections"][0]["notes"] == len(VISIBLE)
    assert "added" not in (st["snapshot"] or {})
    assert "holds %d notes" % len(VISIBLE) in out["instructions"]
    assert "Languages of the notes: en (%d)" % len(VISIBLE) in out["instructions"]
    # a hidden note is "not found", worded as for a note that does not exist
    assert len(rest) == 2 * len(ghosts)
    for (name, _, _, ref, gref), a, b in zip(ghosts, rest[0::2], rest[1::2]):
        ma, mb = message(a), message(b)
        # the reference as given, and as decoded from a URI
        for x, y in ((ref, gref), (ref.replace("trove://", ""), gref.replace("trove://", ""))):
            ma = ma.replace(x, y)
        assert ma == mb, (name, ma, mb)
        assert ("error" in a) == ("error" in b), name


def full_plan(docids):
    steps, ghosts = plan_of(docids)
    plan = [s for _, s in steps]
    for _, a, b, _, _ in ghosts:
        plan += [a, b]
    return plan


@pytest.fixture(scope="session")
def client2_dir():
    return npm_install(CLIENT2, "the MCP 2.x client")


@pytest.mark.parametrize("kind", ["stdio", "http"])
@pytest.mark.parametrize("mode", ["cold", "daemon"])
def test_boundary_holds_for_the_1x_sdk(bounded, sdk_dir, tmp_path, kind, mode):
    trove, _, docids = bounded
    env = {"TROVE_NO_DAEMON": "1"} if mode == "cold" else {}
    if mode == "daemon":
        trove.start_daemon("--no-watch", "--idle", "300")
        before = trove.daemon_requests()
    srv = HttpServer(trove) if kind == "http" else None
    try:
        out = run_sdk(sdk_dir, trove, tmp_path, full_plan(docids), kind,
                      url=srv.url if srv else None, env=env)
    finally:
        if srv:
            srv.stop()
    check_boundary(out, docids)
    if mode == "daemon":
        # the daemon answered (with the boundary: an answer without it is refused)
        assert trove.daemon_requests() - before >= 20
        trove.stop_daemon()


@pytest.mark.parametrize("kind", ["stdio", "http"])
def test_boundary_holds_for_the_2x_client_pinned(bounded, client2_dir, tmp_path, kind):
    """2026-07-28: no session, every request stateless; through the daemon."""
    trove, _, docids = bounded
    trove.start_daemon("--no-watch", "--idle", "300")
    srv = HttpServer(trove) if kind == "http" else None
    try:
        out = run_client2(client2_dir, trove, tmp_path, full_plan(docids), "pin", kind,
                          srv.url if srv else None)
    finally:
        if srv:
            srv.stop()
        trove.stop_daemon()
    assert out["protocol_version"] == "2026-07-28"
    check_boundary(out, docids)


def test_private_key_is_configurable_and_mcp_keys_are_checked(bounded, tmp_path, sdk_dir):
    trove, vault, docids = bounded
    (vault / "public" / "secret.md").write_text("---\nsecret: on\n---\n# S\n\n%s zebra\n"
                                                % (MARKER + "x"))
    cfg = trove.config / "config.yaml"
    base = cfg.read_text()
    cfg.write_text(base.replace("\n  exclude: [journal", "\n  private_key: Secret\n  exclude: [journal"))
    trove.ok("update")
    out = run_sdk(sdk_dir, trove, tmp_path, [
        {"op": "callTool", "name": "search", "arguments": {"query": "zebra", "top_k": 50}}],
        "stdio", env={"TROVE_NO_DAEMON": "1"})
    paths = [r["path"] for r in out["steps"][0]["result"]["structuredContent"]["results"]]
    # the configured key hides secret.md; `private:` is then an ordinary field
    assert "public/secret.md" not in paths and "public/flagged.md" in paths, paths
    assert "journal/diary.md" not in paths
    # a misspelt key must not quietly show an agent what it was to hide
    cfg.write_text(base.replace("\n  exclude: [journal", "\n  exclude_globs: [x]\n  exclude: [journal"))
    r = trove("status")
    assert r.rc != 0 and "unknown key 'exclude_globs' under 'mcp'" in r.err, r


@pytest.mark.parametrize("mode", ["cold", "daemon"])
def test_web_allow_remote_keeps_the_boundary(bounded, mode):
    """`trove serve --allow-remote`: the page answers people at other
    machines, so it keeps the agents' boundary; the owner's local page shows
    everything."""
    trove, _, docids = bounded
    cfg = trove.config / "config.yaml"
    cfg.write_text(cfg.read_text().replace("\nmcp:\n", '\nmcp:\n  token: "%s"\n' % TOKEN))
    if mode == "daemon":
        trove.start_daemon("--no-watch", "--idle", "300")
    auth = {"Authorization": "Bearer " + TOKEN}
    remote = WebServer(trove, "--allow-remote")
    local = WebServer(trove)
    try:
        paths = [r["path"] for r in remote.json("/api/search?q=zebra&n=50", headers=auth)[1][
            "results"]]
        assert sorted(paths) == sorted(VISIBLE), paths
        mine = local.json("/api/search?q=%s" % MARKER)[1]["results"]
        # (the German copy is shown as its English translation, in also_in)
        assert sorted(r["path"] for r in mine) == sorted(
            set(HIDDEN) - {"de/guide.md"} | {"en/guide.md"}), mine
        assert "de/guide.md" in json.dumps(mine)
        seen = []
        for rel in HIDDEN:
            for ref in ("%s/%s" % (COLL, rel), "#" + docids[rel]):
                q = urllib.parse.quote(ref)
                for path in ("/api/get?ref=" + q, "/note?ref=" + q, "/api/links?ref=" + q,
                             "/api/similar?ref=" + q, "/?q=" + MARKER.upper(),
                             "/api/graph?ref=" + q):
                    st, _, body = remote.request(path, headers=auth)
                    assert MARKER.encode() not in body, (path, st)
                    # "not found" as for a note that is not there (the page
                    # search answers 200 with nothing found)
                    assert st == (200 if path.startswith("/?") else 404), (path, st, body[:300])
                st, _, body = local.request("/api/get?ref=" + q)
                assert st == 200 and MARKER.encode() in body
        for page in ("/", "/status", "/api/status", "/api/links?ref=" +
                     urllib.parse.quote(COLL + "/public/alpha.md"), "/api/similar?ref=" +
                     urllib.parse.quote(COLL + "/public/alpha.md")):
            st, _, body = remote.request(page, headers=auth)
            assert st == 200, (page, st)
            seen.append(body.decode("utf-8", "replace"))
        text = "\n".join(seen)
        for rel in HIDDEN:
            assert rel not in text, rel
        st = remote.json("/api/status", headers=auth)[1]
        assert re.search(r'"notes": ?%d' % len(VISIBLE), json.dumps(st)), st
    finally:
        remote.stop()
        local.stop()
        if mode == "daemon":
            trove.stop_daemon()
