"""config.yaml always reads back: any bytes the commands accept are written
so that the next command can load them, and a config that cannot be read
names the right line (and leaks nothing)."""
import os

from test_cli_bytes import raw

FFFD = "\ufffd"


def listed(trove):
    rc, out, err = raw(trove, "collection", "list")
    assert rc == 0, err
    return out.decode("utf-8")


def test_mask_with_invalid_utf8(trove, vault):
    rc, _, err = raw(trove, "collection", "add", bytes(vault), "--name", "v",
                     "--mask", b"\xff", "--mask", "**/*.md",
                     "--exclude", b"a\xc2\x80b")
    assert rc == 0, err
    assert 'mask="\\377"' in listed(trove)
    assert 'exclude="a\\302\\200b"' in listed(trove)
    trove.ok("update")
    assert trove.search("bread")          # every command still loads it


def test_latin1_folder(trove, tmp_path):
    folder = os.path.join(bytes(tmp_path), b"caf\xe9")
    os.mkdir(folder)
    with open(os.path.join(folder, b"n.md"), "wb") as f:
        f.write(b"# Note\n\nespresso\n")
    # The default name would be the folder's name: not UTF-8, refused
    # before anything is written.
    rc, _, err = raw(trove, "collection", "add", folder)
    assert rc == 2 and "invalid collection name" in err, err
    assert not (trove.config / "config.yaml").exists()
    rc, _, err = raw(trove, "collection", "add", folder, "--name", "cafe")
    assert rc == 0, err
    assert '"' + str(tmp_path) + '/caf\\351"' in listed(trove)
    trove.ok("update")
    res = trove.search("espresso")
    assert res and res[0]["file"].endswith("caf" + FFFD + "/n.md"), res
    rc, out, _ = raw(trove, "search", "espresso", "--files")
    assert out == b'"' + folder.replace(b"\xe9", b"\\351") + b'/n.md"\n', out


def test_names_must_be_printable_utf8(trove, vault):
    for name in (b"caf\xe9", b"a\xc2\x80b", b"x\xe2\x80\xa8y", b"tab\there"):
        rc, _, err = raw(trove, "collection", "add", bytes(vault), "--name", name)
        assert rc == 2 and "invalid collection name" in err, (name, err)
    assert not (trove.config / "config.yaml").exists()
    trove.ok("collection", "add", vault, "--name", "v")
    rc, _, err = raw(trove, "collection", "rename", "v", b"w\xff")
    assert rc == 2, err


def test_context_text_any_bytes(indexed):
    trove, _ = indexed
    text = b"caf\xe9 \xc2\x85 nel \xe2\x80\xa8 ls \xe2\x80\xa9 ps \x01 end"
    rc, _, err = raw(trove, "context", "add", "vault/cooking", text)
    assert rc == 0, err
    rc, out, err = raw(trove, "context", "list")
    assert rc == 0, err
    line = [ln for ln in out.decode("utf-8").splitlines() if ln.startswith("vault/cooking")]
    assert line == ["vault/cooking\tcaf" + FFFD + "   nel   ls   ps   end"], line
    # JSON keeps what it can: U+0085/U+2028/U+2029 come back as themselves,
    # not folded into spaces by the YAML reader.
    res = trove.search("pasta")
    ctx = [c for r in res for c in r["context"] if c.startswith("caf")]
    assert ctx and ctx[0] == "caf" + FFFD + " \x85 nel \u2028 ls \u2029 ps \x01 end", ctx
    text2 = b"a\xc2\x80b"
    rc, _, err = raw(trove, "context", "add", "vault", text2)
    assert rc == 0, err
    res = trove.search("pasta")
    assert "a\x80b" in res[0]["context"], res[0]


def test_unreadable_config_names_the_line(trove):
    trove.config.mkdir(parents=True, exist_ok=True)
    cfg = trove.config / "config.yaml"
    cfg.write_bytes(b"# trove\ncollections:\n  a:\n    path: /x\n"
                    b"    mask: [\"**/*.md\"]\n    exclude: [\"\xff\"]\n")
    r = trove("status")
    assert r.rc == 1 and "line 6:" in r.err and "0xff" in r.err, r


def test_broken_config_leaks_nothing(trove):
    """Under ASan (the test build) LeakSanitizer reports on exit."""
    trove.config.mkdir(parents=True, exist_ok=True)
    cfg = trove.config / "config.yaml"
    for text in (b"collections: [\n",
                 b"collections:\n  a:\n    path: /x\ncontexts: 5\n",
                 b"collections:\n  a: {path: /x}\ncontexts:\n  - {target: a, text: t}\n  - 1\n"):
        cfg.write_bytes(text)
        for cmd in (("status",), ("collection", "list"), ("search", "x"),
                    ("context", "add", "a", "t")):
            r = trove(*cmd)
            assert r.rc == 1, r
            assert "LeakSanitizer" not in r.err and "ERROR: " not in r.err, r
        assert cfg.read_bytes() == text   # nothing rewritten
