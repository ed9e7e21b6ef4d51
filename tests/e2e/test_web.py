"""`trove serve`: the web page and its JSON API (docs/web.md), over HTTP on
loopback, cold and through a daemon; the page in headless Chromium driven
by puppeteer-core (tests/tools/web_browser.mjs) when chromium and npm are
there (skipped, saying why, when they are not)."""
import html
import http.client
import json
import os
import re
import shutil
import signal
import subprocess
import urllib.parse
from pathlib import Path

import pytest

from conftest import COLLECTION, REPO, trove_bin

HOSTILE = """---
title: Hostile note
tags: [hostile]
---
# Hostile note

Raw HTML must stay text: <script>alert('script tag')</script>

<img src=x onerror="alert('img onerror')">

<div onclick="alert(1)">a div with a handler</div>

A [javascript link](javascript:alert(document.domain)) and a
[spaced one]( JaVaScRiPt:alert(2)), a [data link](data:text/html,<script>alert(3)</script>),
an image ![pixel](http://203.0.113.9/pixel.png) and [[Home]].

<iframe src="http://203.0.113.9/"></iframe>
"""


class WebServer:
    """`trove serve --port 0` in the background; .url once it listens."""

    def __init__(self, trove, *extra, env=None):
        e = dict(trove.env)
        e.update(env or {})
        self.proc = subprocess.Popen(
            [str(trove_bin()), "serve", "--port", "0", *extra], env=e,
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            cwd=str(trove.home))
        self.url = self.proc.stdout.readline().decode().strip()
        assert re.match(r"^http://127\.0\.0\.1:\d+/$", self.url), (
            self.url, self.proc.stderr.read() if self.proc.poll() is not None else "")
        self.host, port = self.url[len("http://"):-1].rsplit(":", 1)
        self.port = int(port)

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        _, err = self.proc.communicate(timeout=30)
        err = err.decode("utf-8", "replace")
        assert self.proc.returncode == 0, err
        assert "ERROR: AddressSanitizer" not in err and "runtime error" not in err, err
        return err

    def request(self, path, method="GET", body=None, headers=None):
        conn = http.client.HTTPConnection(self.host, self.port, timeout=60)
        h = {k: v for k, v in (headers or {}).items() if v is not None}
        conn.request(method, path, body=body, headers=h)
        resp = conn.getresponse()
        data = resp.read()
        conn.close()
        return resp.status, dict((k.lower(), v) for k, v in resp.getheaders()), data

    def get(self, path, **kw):
        st, hdrs, data = self.request(path, **kw)
        assert st == 200, (path, st, data[:500])
        return data.decode("utf-8")

    def json(self, path, **kw):
        st, hdrs, data = self.request(path, **kw)
        assert hdrs["content-type"].startswith("application/json"), hdrs
        return st, json.loads(data)


@pytest.fixture
def site(trove, vault):
    (vault / "inbox" / "hostile.md").write_text(HOSTILE)
    trove.ok("collection", "add", vault, "--name", COLLECTION)
    trove.ok("update")
    servers = []

    def start(*extra, env=None):
        s = WebServer(trove, *extra, env=env)
        servers.append(s)
        return s
    yield trove, vault, start
    for s in servers:
        if s.proc.poll() is None:
            s.stop()


@pytest.fixture(params=["cold", "daemon"])
def served(site, request):
    trove, vault, start = site
    if request.param == "daemon":
        trove.start_daemon("--no-watch", "--idle", "300")
    srv = start()
    yield trove, vault, srv
    srv.stop()
    if request.param == "daemon":
        assert trove.daemon_requests() > 0   # it really answered
        trove.stop_daemon()


def q(s):
    return urllib.parse.quote(s, safe="")


# ---- the JSON API ------------------------------------------------------------

@pytest.mark.parametrize("query,flags", [
    ("pointers", []), ("sourdough starter", ["--tags", "baking"]),
    ("斐波那契", []), ("git", ["-n", "2", "--explain"]),
])
def test_api_search_is_what_search_json_prints(served, query, flags):
    trove, _, srv = served
    params = "q=" + q(query)
    if "--tags" in flags:
        params += "&tags=" + q(flags[flags.index("--tags") + 1])
    if "-n" in flags:
        params += "&n=" + flags[flags.index("-n") + 1]
    if "--explain" in flags:
        params += "&explain=1"
    cli = trove.ok("search", query, "--json", *flags, *([] if "-n" in flags else ["-n", "20"]),
                   env={"TROVE_NO_DAEMON": "1"})
    st, got = srv.json("/api/search?" + params)
    assert st == 200
    want = json.loads(cli.out)
    if "--explain" in flags:   # timings-free, but floats of one run: same process order
        for doc in (want, got):
            doc.pop("fusion", None)
    assert got == want


def test_api_get_status_snapshots_and_errors(served):
    trove, vault, srv = served
    st, note = srv.json("/api/get?ref=" + q(COLLECTION + "/programming/c-pointers.md"))
    assert st == 200 and note["title"] == "Pointers in C and C++"
    assert note["text"] == (vault / "programming" / "c-pointers.md").read_text()
    st, part = srv.json("/api/get?ref=" + q("#" + note["docid"]) + "&line=2&count=1")
    assert st == 200 and part["line_start"] == 2 and part["line_end"] == 2
    st, status = srv.json("/api/status")
    assert st == 200 and status["counts"]["notes"] >= 20
    assert status["collections"][0]["name"] == COLLECTION
    st, snaps = srv.json("/api/snapshots")
    assert st == 200 and snaps["current"] == 1 and len(snaps["token"]) == 32
    for path, code in [("/api/search", 400), ("/api/search?q=x&mode=nope", 400),
                       ("/api/search?q=x&n=0", 400), ("/api/search?q=x&c=nosuch", 404),
                       ("/api/search?q=x&mode=vsearch", 400),
                       ("/api/get?ref=nosuch.md", 404), ("/api/nothing", 404)]:
        st, doc = srv.json(path)
        assert st == code and doc["error"], (path, st, doc)
    assert srv.request("/api/get?ref=" + q(COLLECTION + "/inbox"))[0] == 400


# ---- pages without JavaScript ------------------------------------------------

def test_search_url_renders_results_server_side(served):
    _, _, srv = served
    page = srv.get("/?q=pointers")
    assert '<input type="search" id="q" name="q" value="pointers"' in page
    assert re.search(r'<a href="/note\?ref=%23[0-9a-f]{8}&amp;hl=\d+-\d+#hit">Pointers in C '
                     r'and C\+\+</a>', page)
    assert "<mark>pointer</mark>" in page.lower() or "<mark>Pointers</mark>" in page
    assert "vault/programming/c-pointers.md:" in page
    # filters: the tag narrows, and the form shows it
    page = srv.get("/?q=bread&tags=baking")
    assert 'name="tags" value="baking"' in page
    titles = re.findall(r'<h2 class="title"><a [^>]*>([^<]*)</a>', page)
    assert titles and all("#baking" in blk for blk in page.split('<li class="result"')[1:])
    # the fragment the script swaps in is the result list alone
    frag = srv.get("/?q=pointers&frag=1")
    assert frag.startswith('<p class="summary"') and "<html" not in frag


def test_note_view_highlights_the_hit_and_resolves_wikilinks(served):
    _, vault, srv = served
    page = srv.get("/?q=" + q("bulk fermentation"))
    href = re.search(r'<a href="(/note\?ref=[^"]*)">', page).group(1).replace("&amp;", "&")
    note = srv.get(href.split("#")[0])
    assert '<div class="hit-passage" id="hit">' in note
    assert 'obsidian://open?vault=vault&amp;file=' in note
    home = srv.get("/note?ref=" + q(COLLECTION + "/Home.md"))
    links = dict((t, h) for h, t in re.findall(
        r'<a class="note-link" href="([^"]*)">([^<]*)</a>', home))
    assert "c-pointers" in links, links
    target = srv.get(links["c-pointers"].replace("&amp;", "&"))
    assert "<h1>Pointers in C and C++</h1>" in target
    assert '<nav class="outline"' in target
    # backlinks with their lines, the graph's container, similar notes
    back = target.split('<section class="panel backlinks"', 1)[1].split("</section>", 1)[0]
    assert ">Home</a> <span class=\"path\">Home.md:" in back and "[[c-pointers]]" in back
    assert '<div id="graph" data-ref="#' in target
    assert '<section class="panel similar"' in target


def test_api_links_graph_similar(served):
    trove, _, srv = served
    ref = q(COLLECTION + "/programming/c-pointers.md")
    st, links = srv.json("/api/links?ref=" + ref)
    cli = trove.ok("links", COLLECTION + "/programming/c-pointers.md", "--json",
                   env={"TROVE_NO_DAEMON": "1"}).json()
    assert st == 200 and links["note"]["path"] == "programming/c-pointers.md"
    assert sorted((b["path"], b["line"]) for b in links["back"]) == \
        sorted((b["note"]["path"], b["line"]) for b in cli["backlinks"]), (links, cli)
    st, graph = srv.json("/api/graph?ref=" + ref)
    assert st == 200 and "Home.md" in [b["path"] for b in graph["back"]]
    assert len({b["docid"] for b in graph["back"]}) == len(graph["back"])
    st, sim = srv.json("/api/similar?ref=" + ref + "&n=3")
    assert st == 200 and 0 < len(sim["results"]) <= 3
    assert "programming/c-pointers.md" not in [r["path"] for r in sim["results"]]
    assert srv.json("/api/links?ref=nosuch.md")[0] == 404


def test_hostile_note_renders_as_text(served):
    _, _, srv = served
    page = srv.get("/note?ref=" + q(COLLECTION + "/inbox/hostile.md"))
    body = page.split('<div class="md">', 1)[1].split('<aside class="related"', 1)[0]
    # no element of the note's own, no handler attribute, no script URL
    assert not re.search(r"<(script|img|iframe|div|object|embed|svg)\b", body, re.I), body
    assert not re.search(r"<[^>]*\son\w+\s*=", body, re.I), body
    assert not re.search(r'(href|src)="\s*(javascript|data|http://203)', body, re.I), body
    assert "&lt;script&gt;" in body and "&lt;img src=x onerror=" in body
    assert body.count('class="blocked-link"') == 3, body
    # the page's only script is its own
    assert re.findall(r"<script[^>]*>", page) == ['<script src="/static/app.js" defer>']
    assert "<title>Hostile note" in page


def test_headers_csp_and_rebinding(served):
    _, _, srv = served
    st, hdrs, _ = srv.request("/")
    assert st == 200
    csp = hdrs["content-security-policy"]
    assert "default-src 'none'" in csp and "script-src 'self'" in csp
    assert "unsafe-inline" not in csp
    assert hdrs["x-content-type-options"] == "nosniff"
    for h, code in [({"Host": "evil.example"}, 403), ({"Host": "127.0.0.1.evil.example"}, 403),
                    ({"Origin": "http://evil.example"}, 403), ({"Origin": "null"}, 403),
                    ({"Host": "localhost"}, 200), ({"Origin": "http://localhost:1234"}, 200)]:
        assert srv.request("/api/status", headers=h)[0] == code, h
    st, hdrs, js = srv.request("/static/app.js")
    assert st == 200 and hdrs["content-type"].startswith("text/javascript")
    assert srv.request("/static/nope.js")[0] == 404
    assert srv.request("/", method="PUT")[0] == 405


def test_rollback_needs_post_and_the_page_token(site):
    trove, vault, start = site
    (vault / "inbox" / "new-note.md").write_text("# New\n\nzanzibar quokka\n")
    trove.ok("update")
    srv = start()
    assert "zanzibar" in srv.get("/?q=zanzibar")
    st, snaps = srv.json("/api/snapshots")
    token = snaps["token"]
    ask = srv.get("/rollback?id=1")
    assert "Roll back to snapshot 1?" in ask and 'name="csrf" value="%s"' % token in ask
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    # no token, a wrong one, a GET: nothing happens
    assert srv.request("/rollback", "POST", "id=1", form)[0] == 403
    assert srv.request("/rollback", "POST", "id=1&csrf=" + "0" * 32, form)[0] == 403
    assert srv.request("/api/rollback?id=1", "POST")[0] == 403
    assert "zanzibar" in srv.get("/?q=zanzibar")
    st, _, body = srv.request("/rollback", "POST", "id=1&csrf=" + token, form)
    assert st == 200 and b"Rolled back" in body
    assert "zanzibar quokka" not in srv.get("/?q=zanzibar")
    st, doc = srv.json("/api/rollback?id=2", method="POST", headers={"X-Trove-Token": token})
    assert st == 200 and doc["from"] == 3 and not doc["noop"]
    assert "zanzibar" in srv.get("/?q=zanzibar")


def test_remote_needs_a_token(site):
    trove, _, start = site
    r = trove("serve", "--host", "0.0.0.0", "--port", "0")
    assert r.rc == 2 and "--allow-remote" in r.err, r
    r = trove("serve", "--host", "example.invalid", "--port", "0")
    assert r.rc == 2 and "numeric" in r.err, r
    r = trove("serve", "--allow-remote", "--port", "0")
    assert r.rc == 2 and "mcp.token" in r.err, r
    cfg = trove.config / "config.yaml"
    cfg.write_text(cfg.read_text() + 'mcp:\n  token: "s3cret-token"\n')
    srv = start("--allow-remote")
    for path in ("/", "/api/search?q=pointers", "/note?ref=" + q(COLLECTION + "/Home.md"),
                 "/static/app.css"):
        st, _, body = srv.request(path)
        assert st == 401 and b"Home" not in body, path
    assert srv.request("/api/status", headers={"Authorization": "Bearer wrong"})[0] == 401
    assert srv.request("/api/status", headers={"Authorization": "Bearer s3cret-token"})[0] == 200
    st, hdrs, _ = srv.request("/?token=s3cret-token")
    assert st == 200 and "HttpOnly" in hdrs["set-cookie"]
    cookie = hdrs["set-cookie"].split(";")[0]
    assert srv.request("/?q=pointers", headers={"Cookie": cookie})[0] == 200
    assert srv.request("/?q=pointers", headers={"Cookie": "trove_token=nope"})[0] == 401


def test_help_and_unknown_option(trove):
    r = trove("serve", "--bogus")
    assert r.rc == 2 and "unknown argument --bogus" in r.err
    r = trove("serve", "--help")
    assert r.rc == 0 and "--port" in r.out and "--open" in r.out


# ---- in a real browser -------------------------------------------------------

def browser_tools():
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        pytest.skip("chromium is not installed (scripts/install-deps.sh installs it)")
    if not shutil.which("node"):
        pytest.skip("node is not installed")
    dirs = []
    for spec in ("puppeteer-core@25.16.0", "axe-core@4.14.1"):
        p = subprocess.run(["bash", str(REPO / "scripts" / "npm-install.sh"), spec],
                           capture_output=True, text=True, timeout=900)
        if p.returncode == 3:
            pytest.skip("%s unavailable: %s" % (spec, p.stderr.strip()))
        assert p.returncode == 0, p.stderr
        dirs.append(str(Path(p.stdout.strip()) / "node_modules"))
    return chromium, dirs


def run_browser(srv, tmp_path, *extra):
    """tests/tools/web_browser.mjs against srv: its report, checked (every
    step passed, no request off 127.0.0.1, no dialog or console error, no
    axe violation). Screenshots go to $TROVE_WEB_SHOTS or tmp_path/shots."""
    chromium, (puppeteer, axe) = browser_tools()
    shots = Path(os.environ.get("TROVE_WEB_SHOTS", tmp_path / "shots"))
    shots.mkdir(parents=True, exist_ok=True)
    p = subprocess.run(["node", str(REPO / "tests" / "tools" / "web_browser.mjs"),
                        "--chromium", chromium, "--url", srv.url, "--shots", str(shots),
                        "--modules", puppeteer, "--axe", axe, *extra],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout[-6000:] + p.stderr[-6000:]
    report = json.loads(p.stdout.strip().splitlines()[-1])
    assert report["ok"], json.dumps(report, indent=1)
    assert report["outside_requests"] == []
    assert report["dialogs"] == [] and report["console_errors"] == []
    assert report["axe_violations"] == {}, report["axe_violations"]
    return report


def test_in_chromium(site, tmp_path):
    trove, vault, start = site
    run_browser(start(), tmp_path)


# ---- dates and frontmatter fields (issue 18's filters on the page) -----------

META_QUERY = "crane"


@pytest.fixture(params=["cold", "daemon"])
def meta_site(trove, tmp_path, request):
    """fixtures/meta (typed frontmatter, notes dated by file name, TROVE_NOW
    fixed) served cold and through a daemon."""
    from test_cli_meta import index_meta
    index_meta(trove, tmp_path)
    if request.param == "daemon":
        trove.start_daemon("--no-watch", "--idle", "300")
    srv = WebServer(trove)
    yield trove, srv
    srv.stop()
    if request.param == "daemon":
        assert trove.daemon_requests() > 0
        trove.stop_daemon()


@pytest.mark.parametrize("params,flags", [
    ("since=2025-01-01&until=2025-12-31", ["--since", "2025-01-01", "--until", "2025-12-31"]),
    ("since=2w", ["--since", "2w"]),
    ("where=status%3Ddone", ["--where", "status=done"]),
    # several conditions in one field, ';' between them, and a repeated key
    ("where=status%3Ddone%3B+priority%3E%3D3", ["--where", "status=done", "--where",
                                                  "priority>=3"]),
    ("where=author+in+(ana,+li)&where=exists(due)", ["--where", "author in (ana, li)",
                                                     "--where", "exists(due)"]),
    ("recent=1", ["--recent"]),
    ("where=status%3Ddone&since=2025-01-01&c=m&explain=1",
     ["--where", "status=done", "--since", "2025-01-01", "-c", "m", "--explain"]),
])
def test_api_search_dates_and_where_as_the_cli(meta_site, params, flags):
    trove, srv = meta_site
    cli = trove.ok("search", META_QUERY, "--json", "-n", "20", *flags,
                   env={"TROVE_NO_DAEMON": "1"})
    st, got = srv.json("/api/search?q=%s&%s" % (META_QUERY, params))
    assert st == 200, got
    want = json.loads(cli.out)
    for doc in (want, got):
        doc.pop("fusion", None)
    assert got == want
    assert got["results"], got


def test_page_filters_dates_and_where_without_javascript(meta_site):
    _, srv = meta_site
    page = srv.get("/?q=crane&since=2025-01-01&until=2025-12-31&where=status%3Ddone&recent=1")
    # the form keeps what the URL asked, the filters stay open
    assert '<details class="filters" open>' in page
    assert 'name="since" value="2025-01-01"' in page
    assert 'name="until" value="2025-12-31"' in page
    assert 'name="where" value="status=done"' in page
    assert 'name="recent" value="1" checked' in page
    paths = re.findall(r'<span class="path">m/([^<:]*):', page)
    assert sorted(paths) == ["meetings/2025-06-02 Planning.md", "projects/alpha.md"]
    dates = re.findall(r'<span class="date" title="date from ([^"]*)"><time '
                       r'datetime="([0-9-]{10})">', page)
    assert sorted(dates) == [("filename", "2025-06-02"), ("frontmatter:date", "2025-03-10")]
    # the date of every result, also unfiltered, and where it came from
    page = srv.get("/?q=crane")
    assert '<details class="filters">' in page
    assert 'title="date from mtime"><time datetime="2026-05-18">' in page


@pytest.mark.parametrize("params,status,msg", [
    ("since=someday", 400, "someday"),
    ("until=2024-02-30", 400, "not a date"),
    ("where=priority%3E%3Dhigh", 400, "compares numbers and dates"),
    ("where=status", 400, "no operator"),
    ("where=nosuch%3D1", 404, "no note has a field"),
])
def test_bad_dates_and_conditions_are_clear_errors(meta_site, params, status, msg):
    _, srv = meta_site
    st, doc = srv.json("/api/search?q=crane&" + params)
    assert st == status and msg in doc["error"], (st, doc)
    page = srv.get("/?q=crane&" + params)   # the page says it where the results go
    assert '<p class="error" role="alert">' in page and msg in page


META_ALPHA = "m/projects/alpha.md"


@pytest.mark.parametrize("params,flags", [
    ("", []),
    ("where=status%3Ddone", ["--where", "status=done"]),
    ("where=status%3Ddone%3B+priority%3E%3D2", ["--where", "status=done", "--where",
                                                 "priority>=2"]),
    ("since=2025-01-01&until=2025-12-31", ["--since", "2025-01-01", "--until", "2025-12-31"]),
    ("until=2025-01-01", ["--until", "2025-01-01"]),
])
def test_similar_dates_and_where_as_the_cli(meta_site, params, flags):
    """/api/similar and the note page's similar panel take the search page's
    since=, until=, where= and answer as `trove similar` with the flags."""
    trove, srv = meta_site
    cli = trove.ok("similar", META_ALPHA, "--json", "-n", "5", *flags,
                   env={"TROVE_NO_DAEMON": "1"}).json()
    want = [r["path"] for r in cli["results"]]
    st, got = srv.json("/api/similar?ref=%s&n=5&%s" % (q(META_ALPHA), params))
    assert st == 200, got
    assert [r["path"] for r in got["results"]] == want
    assert [(r["date"], r["date_source"]) for r in got["results"]] == \
        [(r["date"], r["date_source"]) for r in cli["results"]]
    page = srv.get("/note?ref=%s&%s" % (q(META_ALPHA), params))
    panel = page.split('<section class="panel similar"', 1)[1].split("</section>", 1)[0]
    assert re.findall(r'<span class="path">([^<]*)</span>', panel) == want, panel
    if flags:   # the filters change the answer in this vault
        every = trove.ok("similar", META_ALPHA, "--json", "-n", "5",
                         env={"TROVE_NO_DAEMON": "1"}).json()
        assert want != [r["path"] for r in every["results"]]


@pytest.mark.parametrize("params,status,msg", [
    ("since=someday", 400, "someday"),
    ("where=priority%3E%3Dhigh", 400, "compares numbers and dates"),
    ("where=nosuch%3D1", 404, "no note has a field"),
])
def test_similar_bad_dates_and_conditions_are_clear_errors(meta_site, params, status, msg):
    _, srv = meta_site
    st, doc = srv.json("/api/similar?ref=%s&%s" % (q(META_ALPHA), params))
    assert st == status and msg in doc["error"], (st, doc)
    page = srv.get("/note?ref=%s&%s" % (q(META_ALPHA), params))   # the note still shows
    panel = page.split('<section class="panel similar"', 1)[1].split("</section>", 1)[0]
    assert '<p class="error" role="alert">' in panel and msg in panel, panel


def test_dates_and_where_in_chromium(trove, tmp_path):
    """The date and --where filters typed into the page (results follow,
    the URL holds them), the same URL with JavaScript off, a bad date said
    on the page, dark and phone screenshots, axe on the filtered page."""
    from test_cli_meta import index_meta
    index_meta(trove, tmp_path)
    srv = WebServer(trove)
    try:
        report = run_browser(srv, tmp_path, "--flow", "dates")
        assert any(s.endswith("dates-laptop-light.png") for s in report["shots"])
    finally:
        srv.stop()


# ---- search as you type: keep-alive, no stale list ---------------------------

def test_connections_are_kept_alive(served):
    """One connection carries many requests (the page's searches do not
    open a connection each): no `Connection: close`, and a second GET and a
    POST on the same socket are answered."""
    _, _, srv = served
    conn = http.client.HTTPConnection(srv.host, srv.port, timeout=60)
    try:
        for path in ("/?q=pointers&frag=1", "/api/search?q=bread", "/static/app.js"):
            conn.request("GET", path)
            resp = conn.getresponse()
            body = resp.read()
            assert resp.status == 200 and body, (path, resp.status)
            assert (resp.getheader("Connection") or "").lower() != "close", path
            assert not resp.will_close, path
        sock = conn.sock
        conn.request("POST", "/api/rollback", body="id=1",
                     headers={"Content-Type": "application/x-www-form-urlencoded"})
        resp = conn.getresponse()
        assert resp.status == 403 and b"token" in resp.read()   # answered, on the same socket
        assert conn.sock is sock or conn.sock is None
    finally:
        conn.close()


# Types queries into the page while the fragment requests are held back
# longer the shorter their query (so an older search would answer after a
# newer one), and reports every list the page showed, the URL, and how many
# searches were ever outstanding at once.
TYPING_JS = r"""
import { createRequire } from 'node:module';
import path from 'node:path';
const arg = (n) => process.argv[process.argv.indexOf('--' + n) + 1];
const require = createRequire(path.join(arg('modules'), 'x.js'));
const puppeteer = require('puppeteer-core');
const browser = await puppeteer.launch({ executablePath: arg('chromium'), headless: true,
  args: ['--no-sandbox', '--disable-gpu'] });
const page = await browser.newPage();
const errors = [];
page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
page.on('pageerror', (e) => errors.push(String(e)));
await page.setRequestInterception(true);
page.on('request', async (req) => {
  const u = new URL(req.url());
  if (!u.searchParams.get('frag')) return req.continue();
  const q = u.searchParams.get('q') || '';
  await new Promise((ok) => setTimeout(ok, Math.max(0, 600 - 60 * q.length)));
  try { await req.continue(); } catch (e) { /* the page went away */ }
});
await page.goto(arg('url'), { waitUntil: 'networkidle0' });
await page.evaluate(() => {
  performance.setResourceTimingBufferSize(10000);
  const r = document.getElementById('results');
  window.__shown = [];
  new MutationObserver(() => window.__shown.push(new URLSearchParams(r.dataset.for || '').get('q')))
    .observe(r, { attributes: true, attributeFilter: ['data-for'] });
});
const out = [];
for (const [text, back, delay] of JSON.parse(arg('cases'))) {
  await page.$eval('#q', (el) => { el.value = ''; el.focus(); });
  await page.evaluate(() => { window.__shown = []; });
  await page.type('#q', text, { delay });
  for (let i = 0; i < back; i++) await page.keyboard.press('Backspace');
  const want = text.slice(0, text.length - back);
  await page.waitForFunction((v) => new URLSearchParams(
    document.getElementById('results').dataset.for || '').get('q') === v, { timeout: 20000 }, want);
  await new Promise((ok) => setTimeout(ok, 1500));   // any late answer would land by now
  out.push(await page.evaluate((text, want) => ({
    text, want, shown: window.__shown, final: new URLSearchParams(
      document.getElementById('results').dataset.for || '').get('q'),
    url: new URL(location.href).searchParams.get('q'), input: document.getElementById('q').value,
    titles: Array.from(document.querySelectorAll('.result .title a')).map((a) => a.textContent),
    title: document.title }), text, want));
}
// the most searches outstanding at once, on the page's clock (resource timing)
const most = await page.evaluate(() => {
  const edges = [];
  for (const e of performance.getEntriesByType('resource')) {
    if (!new URL(e.name).searchParams.get('frag')) continue;
    edges.push([e.startTime, 1], [e.responseEnd, -1]);
  }
  edges.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let open = 0, top = 0;
  for (const [, d] of edges) { open += d; top = Math.max(top, open); }
  return top;
});
console.log(JSON.stringify({ cases: out, most, errors }));
await browser.close();
"""


def test_typing_fast_shows_the_last_query_only(site, tmp_path):
    """Keys typed fast (and faster than the server answers, which here
    answers an older search later than a newer one) end on the list of the
    final query, with its URL and title; no list ever goes back to an older
    query; the page never has more than one search outstanding."""
    chromium, (puppeteer, _) = browser_tools()
    trove, vault, start = site
    srv = start()
    script = tmp_path / "typing.mjs"
    script.write_text(TYPING_JS)
    cases = [["fermentation", 0, 0], ["fermentation", 0, 40], ["sourdough starter", 5, 25]]
    p = subprocess.run(["node", str(script), "--chromium", chromium, "--url", srv.url,
                        "--modules", puppeteer, "--cases", json.dumps(cases)],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout[-4000:] + p.stderr[-4000:]
    report = json.loads(p.stdout.strip().splitlines()[-1])
    assert report["errors"] == [], report
    assert report["most"] == 1, report
    for c in report["cases"]:
        want = c["want"]
        assert c["final"] == want and c["url"] == want and c["input"] == want, c
        assert c["title"] == want + " — trove", c
        # every list shown answered what was typed so far, newest last
        assert c["shown"] and c["shown"][-1] == want, c
        typed = [s for s in c["shown"] if s is not None]
        assert all(c["text"].startswith(s) for s in typed), c
        order = [len(s) for s in typed]
        peak = order.index(max(order))
        assert order[:peak + 1] == sorted(order[:peak + 1]), c   # growing while typing
        assert order[peak:] == sorted(order[peak:], reverse=True), c   # shrinking on Backspace
        # the list is the server's list for the final query
        page = srv.get("/?frag=1&q=" + q(want))
        titles = [html.unescape(t) for t in re.findall(r'<h2 class="title"><a href="[^"]*">([^<]*)</a>', page)]
        assert c["titles"] == titles and titles, (c, titles)
