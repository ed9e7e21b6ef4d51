"""Every command and subcommand rejects an option it does not know: exit 2
(usage) and a message that names the option, never a silent success; and
the listing commands have --json with the {"version": 1} envelope."""
import json

import pytest

# Each command line, with the positional arguments it needs, so that the
# unknown option is what the parser trips over.
COMMAND_LINES = [
    ("collection", "add", "."),
    ("collection", "list"),
    ("collection", "remove", "vault"),
    ("collection", "rename", "vault", "other"),
    ("context", "add", "vault", "a description"),
    ("context", "list"),
    ("context", "rm", "vault"),
    ("update",),
    ("embed",),
    ("search", "word"),
    ("vsearch", "word"),
    ("query", "word"),
    ("get", "a.md"),
    ("multi-get", "*.md"),
    ("ls",),
    ("similar", "a.md"),
    ("links", "a.md"),
    ("dupes",),
    ("eval",),
    ("status",),
    ("check",),
    ("snapshot", "list"),
    ("snapshot", "rollback", "1"),
    ("publish", "opensearch", "http://127.0.0.1:1"),
    ("mcp",),
    ("serve",),
    ("tokenize", "word"),
    ("model", "pull", "potion-base-8M"),
    ("model", "list"),
    ("model", "use", "potion-base-8M"),
    ("model", "info"),
    ("model", "tokenize", "word"),
    ("model", "embed", "word"),
    ("model", "rerank", "word", "doc"),
    ("model", "bench"),
    ("model", "generate", "word"),
    ("daemon",),
    ("daemon", "stop"),
    ("daemon", "status"),
]


@pytest.mark.parametrize("where", ["end", "after-command"])
@pytest.mark.parametrize("line", COMMAND_LINES, ids=" ".join)
def test_unknown_option_is_a_usage_error(trove, line, where):
    depth = 2 if line[0] in ("collection", "context", "snapshot", "model") or \
        line[:2] in (("daemon", "stop"), ("daemon", "status")) else 1
    args = list(line) + ["--bogus"] if where == "end" else \
        list(line[:depth]) + ["--bogus"] + list(line[depth:])
    r = trove(*args, timeout=30)
    assert r.rc == 2, r
    assert "--bogus" in r.err, r
    assert r.out == "", r


def test_every_command_of_the_help_is_covered(trove):
    """A command added to `trove --help` must be added above."""
    r = trove("--help")
    cmds = set()
    on = False
    for ln in r.out.splitlines():
        if ln.startswith("commands:"):
            on = True
        elif on and ln.startswith("  ") and ln[2] != " ":
            cmds.add(ln.split()[0])
        elif on and not ln.strip():
            break
    assert cmds and cmds <= {l[0] for l in COMMAND_LINES}, cmds


def test_collection_list_json(trove, vault):
    r = trove("collection", "list", "--json")
    assert r.rc == 0, r
    assert r.json() == {"version": 1, "collections": []}
    trove.ok("collection", "add", vault, "--name", "notes", "--exclude", "drafts/**")
    doc = trove("collection", "list", "--json").json()
    assert doc["version"] == 1
    [c] = doc["collections"]
    assert c["name"] == "notes" and c["path"] == str(vault.resolve())
    assert c["masks"] == ["**/*.md"] and c["excludes"] == ["drafts/**"]
    assert c["notes"] is None   # no index yet: not counted
    trove.ok("update")
    [c] = trove("collection", "list", "--json").json()["collections"]
    assert isinstance(c["notes"], int) and c["notes"] > 0


def test_context_list_json(trove, vault):
    trove.ok("collection", "add", vault, "--name", "notes")
    assert trove("context", "list", "--json").json() == {"version": 1, "contexts": []}
    trove.ok("context", "add", "notes", "my \"notes\"")
    doc = trove("context", "list", "--json").json()
    assert doc == {"version": 1, "contexts": [{"target": "notes", "text": "my \"notes\""}]}


def test_snapshot_list_json_has_the_envelope(indexed):
    trove, _ = indexed
    doc = trove.ok("snapshot", "list", "--json").json()
    assert doc["version"] == 1 and doc["snapshots"]


def test_an_option_without_its_value_says_so(trove):
    r = trove("status", "--model")
    assert r.rc == 2 and "--model needs a path" in r.err, r
    r = trove("status", "extra")
    assert r.rc == 2 and "unexpected argument 'extra'" in r.err, r
    r = trove("daemon", "status", "extra")
    assert r.rc == 2 and "unexpected argument 'extra'" in r.err, r
    r = trove("daemon", "bogus")
    assert r.rc == 2 and "unknown subcommand bogus (stop, status)" in r.err, r


def test_a_description_starting_with_a_dash_goes_after_double_dash(trove, vault):
    trove.ok("collection", "add", vault, "--name", "notes")
    r = trove("context", "add", "notes", "-ish notes")
    assert r.rc == 2 and "unknown option -ish" in r.err, r
    trove.ok("context", "add", "notes", "--", "-ish notes")
    trove.ok("context", "add", "notes/cooking", "- a list")   # a dash and a space: text
    doc = trove.ok("context", "list", "--json").json()
    assert {c["text"] for c in doc["contexts"]} == {"-ish notes", "- a list"}
