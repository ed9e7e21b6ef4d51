"""Every output format stays valid whatever bytes notes, file names and
queries hold: invalid UTF-8, control characters, newlines and tabs in file
names (docs/cli.md, "Bytes that are not text")."""
import csv
import io
import json
import os
import random
import subprocess
import xml.etree.ElementTree as ET

import pytest

from conftest import trove_bin

FFFD = "\ufffd"
FORMATS = ("--json", "--csv", "--xml", "--md", "--files", None)


def raw(trove, *args, timeout=60):
    """Run trove with byte arguments; returns (rc, stdout bytes, stderr)."""
    argv = [bytes(trove_bin())] + [a if isinstance(a, bytes) else str(a).encode()
                                   for a in args]
    p = subprocess.run(argv, env=trove.env, stdin=subprocess.DEVNULL,
                       capture_output=True, timeout=timeout,
                       cwd=str(trove.home))
    return p.returncode, p.stdout, p.stderr.decode("utf-8", "replace")


def unquote_path(line):
    """Undo the quoting of --files / ls: "..." with C escapes -> bytes."""
    if not line.startswith(b'"'):
        return line
    assert line.endswith(b'"') and len(line) >= 2, line
    out, i, s = bytearray(), 1, line[:-1]
    simple = {ord("n"): 10, ord("t"): 9, ord("r"): 13, ord('"'): 34,
              ord("\\"): 92}
    while i < len(s):
        c = s[i]
        if c != 92:
            out.append(c)
            i += 1
        elif s[i + 1] in simple:
            out.append(simple[s[i + 1]])
            i += 2
        else:
            out.append(int(s[i + 1:i + 4], 8))
            i += 4
    return bytes(out)


def check_format(fmt, out, n_results=None):
    """Parse one output with the strict parser of its format; returns the
    number of results it holds (None when the format does not say)."""
    if fmt == "--json":
        doc = json.loads(out.decode("utf-8"))
        assert doc["version"] == 1 and isinstance(doc["results"], list), doc
        for r in doc["results"]:
            for k in ("docid", "collection", "path", "file", "title",
                      "heading_path", "line_start", "line_end", "start_byte",
                      "end_byte", "score", "snippet", "context", "tags"):
                assert k in r, (k, r)
        return len(doc["results"])
    if fmt == "--xml":
        root = ET.fromstring(out)
        return len(root.findall("result"))
    text = out.decode("utf-8")   # strict: every other format is UTF-8 text
    if fmt == "--csv":
        rows = list(csv.reader(io.StringIO(text, newline="")))
        assert rows and len(rows[0]) == 16, rows   # ... context, also_in, date, date_source, passages
        assert all(len(r) == 16 for r in rows[1:]), rows
        return len(rows) - 1
    if fmt == "--files":
        lines = out.split(b"\n")
        assert lines[-1] == b"", out
        for ln in lines[:-1]:
            assert os.path.isfile(unquote_path(ln)), ln
        return len(lines) - 1
    return None


@pytest.fixture
def odd(trove, tmp_path):
    """A collection whose names and bodies hold awkward bytes."""
    v = tmp_path / "odd"
    v.mkdir()
    files = {
        b"new\nline.md": b"# Newline name\n\nzebra in a newline file\n",
        b"tab\there.md": b"# Tab name\n\nzebra with a tab\n",
        b"caf\xe9.md": b"# Latin-1 name\n\nzebra caf\xe9 \x01\x1b[31m \xc2\x85 end\n",
        b"bad.md": b"# Bad \xff title\n\nzebra \xfe\xfd body \x0b\x0c\n",
        b"quote\".md": b"---\ntitle: \"Q\\x07\\u2028 title\"\n---\nzebra quoted\n",
    }
    for name, body in files.items():
        with open(os.path.join(bytes(v), name), "wb") as f:
            f.write(body)
    trove.ok("collection", "add", v, "--name", "odd")
    trove.ok("update")
    return trove, v, files


def test_invalid_utf8_query_json_is_not_empty(odd):
    trove, _, _ = odd
    rc, out, err = raw(trove, "search", b"\xff", "--json")
    assert rc == 0, err
    doc = json.loads(out.decode("utf-8"))
    assert doc["query"] == FFFD and doc["results"] == [], doc


def test_invalid_utf8_query_xml(odd):
    trove, _, _ = odd
    rc, out, _ = raw(trove, "search", b"zebra\xff\x01", "--xml")
    root = ET.fromstring(out)
    assert root.get("query") == "zebra" + FFFD + FFFD


def test_full_json_keeps_body_of_invalid_utf8_note(odd):
    trove, _, _ = odd
    rc, out, _ = raw(trove, "search", "zebra", "--json", "--full", "--all")
    doc = json.loads(out.decode("utf-8"))
    bad = [r for r in doc["results"] if r["path"] == "bad.md"][0]
    assert bad["body"].startswith("# Bad " + FFFD + " title"), bad
    assert "body \x0b\x0c" in bad["body"], bad


def test_full_xml_is_well_formed(odd):
    trove, _, _ = odd
    rc, out, _ = raw(trove, "search", "zebra", "--xml", "--full", "--all")
    root = ET.fromstring(out)
    bodies = [r.find("body").text for r in root.findall("result")]
    assert len(bodies) == 5 and all("zebra" in b for b in bodies), bodies


def test_multi_get_json_always_has_body_or_skipped(odd):
    trove, _, _ = odd
    rc, out, _ = raw(trove, "multi-get", "odd/**", "--json")
    doc = json.loads(out.decode("utf-8"))
    assert doc["version"] == 1 and doc["glob"] == "odd/**", doc
    assert len(doc["notes"]) == 5
    for n in doc["notes"]:
        assert ("body" in n) != ("skipped" in n), n
    paths = sorted(n["path"] for n in doc["notes"])
    assert paths == sorted(["new\nline.md", "tab\there.md", "caf" + FFFD + ".md",
                            "bad.md", "quote\".md"])
    rc, out, _ = raw(trove, "multi-get", "odd/**", "--json", "--max-bytes", "1")
    assert all(n["skipped"] == "over --max-bytes"
               for n in json.loads(out)["notes"])


def test_files_ls_and_csv_keep_one_record_per_note(odd):
    trove, v, files = odd
    rc, out, _ = raw(trove, "search", "zebra", "--files", "--all")
    got = sorted(unquote_path(ln) for ln in out.splitlines())
    assert got == sorted(os.path.join(bytes(v), n) for n in files), out
    assert b'"' + bytes(v) + b'/new\\nline.md"' in out.splitlines()

    rc, out, _ = raw(trove, "ls", "odd")
    lines = out.decode("utf-8").splitlines()
    assert len(lines) == 5, lines
    assert '#' in lines[0] and '"odd/caf\\351.md"' in out.decode(), out

    rc, out, _ = raw(trove, "search", "zebra", "--csv", "--all")
    rows = list(csv.reader(io.StringIO(out.decode("utf-8"), newline="")))
    assert len(rows) == 6 and "new\nline.md" in [r[2] for r in rows], rows


def test_text_outputs_are_utf8(odd):
    trove, v, files = odd
    for args in (("search", "zebra", "--all"), ("search", "zebra", "--full"),
                 ("multi-get", "odd/**"), ("ls",), ("ls", "odd"), ("status",),
                 ("get", "odd/bad.md"), ("search", "zebra", "--md", "--full")):
        rc, out, err = raw(trove, *args)
        assert rc == 0, (args, err)
        text = out.decode("utf-8")   # strict
        if args[0] in ("ls", "status") or args == ("search", "zebra", "--all"):
            assert "\x1b" not in text, (args, text)   # no terminal escapes
    rc, out, _ = raw(trove, "get", "odd/bad.md")
    assert out.decode("utf-8").startswith("# Bad " + FFFD + " title\n")


def test_property_random_bytes(trove, tmp_path):
    """Random bytes in note bodies, file names and queries: every format
    parses with Python's strict parsers (seeded, bounded)."""
    rng = random.Random(6)
    alphabet = (list(range(1, 256)) + [ord(c) for c in "zebra #[]>`*\n\t\r"] * 8)

    def rand_bytes(n, exclude=b""):
        return bytes(b for b in (rng.choice(alphabet) for _ in range(n))
                     if b not in exclude)

    v = tmp_path / "prop"
    v.mkdir()
    names = set()
    for i in range(14):
        name = rand_bytes(rng.randint(1, 12), exclude=b"/.\x00") + b"%d.md" % i
        names.add(name)
        body = b"# " + rand_bytes(20) + b"\nzebra " + rand_bytes(rng.randint(0, 300))
        with open(os.path.join(bytes(v), name), "wb") as f:
            f.write(body)
    trove.ok("collection", "add", v, "--name", "prop")
    trove.ok("update")
    queries = [b"zebra"] + [rand_bytes(rng.randint(1, 10), exclude=b"\x00")
                            for _ in range(6)] + \
        [b"zebra " + rand_bytes(4, exclude=b"\x00") for _ in range(4)]
    for q in queries:
        counts = {}
        for fmt in FORMATS:
            args = ["search", "--all"] + ([fmt] if fmt else []) + ["--", q]
            rc, out, err = raw(trove, *args)
            assert rc == 0, (q, fmt, err)
            try:
                counts[fmt] = check_format(fmt, out)
            except Exception as e:
                raise AssertionError("query %r, format %s: %s\n%r" % (q, fmt, e, out[:2000]))
            if fmt in ("--json", "--xml", "--csv", "--files"):
                rc, out2, _ = raw(trove, *(args[:2] + [fmt, "--full", "--", q]))
                check_format(fmt, out2)
        known = {c for c in counts.values() if c is not None}
        assert len(known) == 1, (q, counts)
    assert len(names) == 14
    for args in (("multi-get", "prop/**", "--json"), ("multi-get", "prop/**"),
                 ("ls", "prop"), ("status",)):
        rc, out, err = raw(trove, *args)
        assert rc == 0, (args, err)
        if args[-1] == "--json":
            doc = json.loads(out.decode("utf-8"))
            assert len(doc["notes"]) == 14
            assert all(("body" in n) != ("skipped" in n) for n in doc["notes"])
        else:
            out.decode("utf-8")
    rc, out, _ = raw(trove, "ls", "prop")
    lines = out.split(b"\n")[:-1]
    assert len(lines) == 14, out
    rc, out, _ = raw(trove, "search", "zebra", "--all", "--files")
    assert sorted(unquote_path(ln) for ln in out.split(b"\n")[:-1]) == \
        sorted(os.path.join(bytes(v), n) for n in names)
