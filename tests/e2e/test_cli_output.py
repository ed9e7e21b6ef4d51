"""Output formats of `trove search`: human, --csv, --xml, --md, --files,
--full, --line-numbers, colour."""
import csv
import io
import re
import xml.etree.ElementTree as ET

import pytest

from conftest import file_lines

# Every test on `indexed` also runs through a daemon, output compared byte
# for byte with the cold path (conftest.pytest_generate_tests).
DAEMON_BOTH_WAYS = True

QUERY = "bread"


@pytest.fixture
def expected(indexed):
    trove, _ = indexed
    res = trove.search(QUERY)
    assert len(res) >= 2
    return res


def test_human_output(indexed, expected):
    trove, _ = indexed
    r = trove.ok("search", QUERY)
    assert "\x1b[" not in r.out, "colour without a TTY / with NO_COLOR"
    first = next(ln for ln in r.out.splitlines() if ln.strip())
    # SCORE  PATH:LINE  TITLE
    m = re.match(r"^\s*(\d+(?:\.\d+)?)\s+(\S.*?):(\d+)\s+(.*\S)\s*$", first)
    assert m, first
    top = expected[0]
    assert m.group(2).endswith(top["path"]), (first, top)
    assert int(m.group(3)) == top["line_start"], (first, top)
    assert m.group(4) == top["title"], (first, top)
    order = [x["path"] for x in expected]
    pos = [r.out.find(p) for p in order]
    assert all(p >= 0 for p in pos) and pos == sorted(pos), (order, r)


def test_no_results_human(indexed):
    trove, _ = indexed
    r = trove("search", "xylophonequux")
    assert r.rc == 0, r


def test_csv(indexed, expected):
    trove, _ = indexed
    r = trove.ok("search", QUERY, "--csv")
    rows = list(csv.reader(io.StringIO(r.out)))
    header = [h.strip().lower() for h in rows[0]]
    assert "path" in header, header
    body = [row for row in rows[1:] if row]
    assert len(body) == len(expected), rows
    col = header.index("path")
    assert [row[col] for row in body] == [x["path"] for x in expected]
    for name in ("docid", "title", "line_start", "collection"):
        if name in header:
            i = header.index(name)
            assert [row[i] for row in body] == [str(x[name]) for x in expected]


def test_csv_quotes_awkward_fields(indexed):
    trove, vault = indexed
    (vault / "inbox" / 'odd, "quoted" name.md').write_text(
        '---\ntitle: A title, with "quotes"\n---\n\nfizzlewump line\n')
    trove.ok("update")
    r = trove.ok("search", "fizzlewump", "--csv")
    rows = [row for row in csv.reader(io.StringIO(r.out)) if row]
    header = [h.strip().lower() for h in rows[0]]
    assert len(rows) == 2, rows
    assert rows[1][header.index("path")] == 'inbox/odd, "quoted" name.md'
    if "title" in header:
        assert rows[1][header.index("title")] == 'A title, with "quotes"'


def test_xml(indexed, expected):
    trove, _ = indexed
    r = trove.ok("search", QUERY, "--xml")
    root = ET.fromstring(r.out)
    text = ET.tostring(root, encoding="unicode")
    for x in expected:
        assert x["path"] in text, x["path"]
    # one element per result: the element that directly holds each path
    holders = [el for el in root.iter()
               if any((el.get(a) == x["path"]) for x in expected
                      for a in el.keys())
               or any(ch.text == x["path"] for x in expected for ch in el)]
    assert len(holders) == len(expected), text


def test_xml_escapes(indexed):
    trove, vault = indexed
    (vault / "inbox" / "escape.md").write_text(
        "# Tags & <angles>\n\nsnarfblat uses <b>html</b> & ampersands.\n")
    trove.ok("update")
    r = trove.ok("search", "snarfblat", "--xml")
    root = ET.fromstring(r.out)
    assert "Tags & <angles>" in "".join(root.itertext()) or any(
        "Tags & <angles>" in v for el in root.iter() for v in el.attrib.values())


def test_md(indexed, expected):
    trove, _ = indexed
    r = trove.ok("search", QUERY, "--md")
    for x in expected:
        assert x["path"] in r.out
        assert x["title"] in r.out


def test_files(indexed, expected):
    trove, _ = indexed
    r = trove.ok("search", QUERY, "--files")
    lines = [ln for ln in r.out.splitlines() if ln.strip()]
    assert len(lines) == len(expected), r
    for ln, x in zip(lines, expected):
        assert x["path"] in ln, (ln, x)


def test_full_human(indexed):
    trove, _ = indexed
    short = trove.ok("search", "autolyse").out
    full = trove.ok("search", "autolyse", "--full").out
    assert "Let it cool for an hour" in full
    assert len(full) > len(short)


def test_line_numbers(indexed):
    trove, vault = indexed
    r = trove.ok("search", "autolyse", "--full", "--line-numbers")
    lines = file_lines(vault, "cooking/sourdough-bread.md")
    want = [i for i, ln in enumerate(lines) if ln and "Let it cool" in ln][0]
    assert re.search(r"(^|\s)%d\s*[:|]?\s.*Let it cool" % want, r.out,
                     re.M), r


def test_formats_with_no_results(indexed):
    trove, _ = indexed
    for fmt in ("--json", "--csv", "--xml", "--md", "--files"):
        r = trove.ok("search", "xylophonequux", fmt)
        if fmt == "--json":
            assert r.json()["results"] == []
        elif fmt == "--xml":
            ET.fromstring(r.out)
        elif fmt == "--files":
            assert r.out.strip() == ""


def run_in_pty(trove, args, env):
    """Run trove with stdout and stderr on a pseudo-terminal; return the
    text written to it."""
    import os
    import pty
    import subprocess
    from conftest import trove_bin
    master, slave = pty.openpty()
    e = dict(trove.env)
    e.update(env)
    e = {k: v for k, v in e.items() if v is not None}
    p = subprocess.Popen([str(trove_bin())] + list(args), env=e,
                         stdin=subprocess.DEVNULL, stdout=slave, stderr=slave)
    os.close(slave)
    chunks = []
    while True:
        try:
            b = os.read(master, 65536)
        except OSError:  # EIO once the child has closed the terminal
            break
        if not b:
            break
        chunks.append(b)
    os.close(master)
    assert p.wait(timeout=60) == 0
    return b"".join(chunks).decode("utf-8", "replace")


def test_colour_on_tty_and_no_color(indexed):
    trove, _ = indexed
    coloured = run_in_pty(trove, ["search", QUERY], {"NO_COLOR": None,
                                                     "TERM": "xterm"})
    assert "\x1b[" in coloured, coloured
    plain = run_in_pty(trove, ["search", QUERY], {"NO_COLOR": "1",
                                                  "TERM": "xterm"})
    assert "\x1b[" not in plain, plain
    assert "sourdough-bread.md" in plain
