"""Chinese, Japanese and Korean end to end: `trove tokenize`, agreement with
python3-jieba, search over Chinese notes, the dictionary's failure modes,
the user dictionary from config.yaml, and the upgrade of a bigram index."""
import json
import sqlite3
import subprocess
from pathlib import Path

import pytest

from conftest import REPO, mcp_search_paths, trove_bin

SHARED = REPO.parent / "shared"
PARITY = REPO / "tests" / "tools" / "zh_parity.py"


def tokens(trove, *args, text=None, env=None):
    r = trove.ok("tokenize", *args, env=env) if text is None else \
        run_stdin(trove, ["tokenize", *args, "-"], text, env=env)
    out = []
    for line in r.out.splitlines():
        tok, s, e = line.rsplit("\t", 2)
        out.append((tok, int(s), int(e)))
    return out


def run_stdin(trove, args, text, env=None):
    e = dict(trove.env)
    e.update(env or {})
    p = subprocess.run([str(trove_bin())] + args, input=text.encode(),
                       capture_output=True, env=e, timeout=120)
    assert p.returncode == 0, p.stderr.decode()

    class R:
        out = p.stdout.decode()
        err = p.stderr.decode()
    return R


def have_dict():
    return (trove_bin().parent / "trove-zh.dict").is_file()


needs_dict = pytest.mark.skipif(not have_dict(), reason="no trove-zh.dict next to the "
                                "binary (python3-jieba missing at build time)")


# ---- trove tokenize --------------------------------------------------------

@needs_dict
def test_tokenize_mixed_scripts(trove):
    text = "用Rust写的CLI工具"
    got = tokens(trove, "--query", text)
    assert [t for t, _, _ in got] == ["用", "rust", "写", "的", "cli", "工具"]
    b = text.encode()
    for tok, s, e in got:                      # exact byte offsets
        assert b[s:e].decode().lower() == tok
    got = tokens(trove, "--query", "GPT-4的上下文长度")
    assert [t for t, _, _ in got] == ["gpt", "4", "的", "上下文", "长度"]


@needs_dict
def test_tokenize_index_has_words_inside_words(trove):
    idx = tokens(trove, "中华人民共和国")
    assert ("人民", 6, 12) in idx and ("共和国", 12, 21) in idx
    assert tokens(trove, "--query", "中华人民共和国") == [("中华人民共和国", 0, 21)]


def test_tokenize_usage(trove):
    r = trove("tokenize", "--bogus")
    assert r.rc == 2
    assert trove.ok("tokenize", "--help").out.startswith("usage: trove tokenize")
    assert tokens(trove, "Running", "fast") == [("run", 0, 7), ("fast", 8, 12)]
    assert tokens(trove, "--no-stem", "Running") == [("running", 0, 7)]


@needs_dict
def test_tokenize_bad_input_is_harmless(trove):
    # invalid UTF-8, a lone surrogate (CESU-8), emoji ZWJ, and a long run of
    # one character without punctuation
    raw = (b"\xff\xfe\xed\xa0\x80\xe4\xb8\xad\xe5\x9b\xbd"
           b"\xf0\x9f\x91\xa8\xe2\x80\x8d\xf0\x9f\x91\xa9" + "啊".encode() * 200000)
    e = dict(trove.env)
    p = subprocess.run([str(trove_bin()), "tokenize", "-"], input=raw,
                       capture_output=True, env=e, timeout=120)
    assert p.returncode == 0
    first = p.stdout.split(b"\n")[0].split(b"\t")
    assert first[0].decode() == "中国" and first[1:] == [b"5", b"11"]


# ---- agreement with jieba -------------------------------------------------

def parity(*sources, extra=()):
    p = subprocess.run(["/usr/bin/python3", str(PARITY), "--trove", str(trove_bin()),
                        *extra, *map(str, sources)], capture_output=True, timeout=900)
    assert p.returncode == 0, p.stderr.decode()
    return json.loads(p.stdout)


def jieba_available():
    return subprocess.run(["/usr/bin/python3", "-c", "import jieba"],
                          capture_output=True).returncode == 0


needs_jieba = pytest.mark.skipif(not jieba_available(), reason="python3-jieba not installed")


@needs_dict
@needs_jieba
def test_jieba_parity_fixture():
    res = parity(REPO / "fixtures" / "zh" / "sample.md")
    assert res["cut"]["jieba"] > 250
    assert res["cut"]["rate"] >= 0.99, res
    assert res["search"]["rate"] >= 0.99, res


@needs_dict
def test_traditional_segmented_like_simplified(trove):
    # fixtures/zh/simplified.md is traditional.md through OpenCC's t2s:
    # the same words at the same places, spelled the same way in the index
    d = REPO / "fixtures" / "zh"
    trad = tokens(trove, "--query", text=(d / "traditional.md").read_text())
    simp = tokens(trove, "--query", text=(d / "simplified.md").read_text())
    same = len(set(trad) & set(simp))
    assert same >= 0.9 * len(simp), (len(trad), len(simp), same)
    assert "关岛" in [t for t, _, _ in trad] and "關島" not in [t for t, _, _ in trad]


@needs_dict
@needs_jieba
@pytest.mark.skipif(not SHARED.is_dir(), reason="../shared not present")
def test_jieba_parity_shared_corpora():
    # a deterministic sample keeps jieba's share of the run to a minute
    res = parity(SHARED / "corpora" / "cs-notes-zh",
                 SHARED / "corpora" / "ruanyf-weekly-zh.tar.gz",
                 extra=("--max-files", "40", "--max-bytes", "20000"))
    assert res["cut"]["jieba"] > 50000
    assert res["cut"]["rate"] >= 0.99, res
    assert res["search"]["rate"] >= 0.99, res


# ---- search over Chinese notes ----------------------------------------------

ZH_NOTES = {
    "memory.md": "---\ntitle: 记忆与学习\naliases: [间隔重复]\ntags: [学习方法]\n---\n"
                 "# 记忆与学习\n\n如何提高记忆的保持力？间隔重复和主动回忆是最有效的方法。\n",
    "china.md": "# 中华人民共和国\n\n中华人民共和国成立于1949年，首都是北京。\n",
    "life.md": "# 生命科学\n\n研究生命的起源是生物学的核心问题之一。\n",
    "grad.md": "# 研究生院\n\n研究生们在实验室里工作到深夜。\n",
    "rust.md": "# 工具\n\n用Rust写的CLI工具越来越多。\n",
    "links.md": "# 索引\n\n参见 [[记忆与学习]] 和 [[中华人民共和国]]。\n",
}


@pytest.fixture
def zh_vault(tmp_path, trove):
    v = tmp_path / "zh"
    v.mkdir()
    for name, text in ZH_NOTES.items():
        (v / name).write_text(text, encoding="utf-8")
    trove.ok("collection", "add", v, "--name", "zh")
    trove.ok("update")
    return v


@needs_dict
def test_search_finds_words_inside_words(trove, zh_vault):
    assert trove.paths("人民")[0] == "china.md"
    assert trove.paths("共和国")[0] == "china.md"
    assert trove.paths("研究生")[0] == "grad.md"
    assert trove.paths("生命")[0] == "life.md"
    # a question is never ANDed into nothing; the note with its words wins
    assert trove.paths("如何提高记忆保持力")[0] == "memory.md"
    assert trove.paths("rust工具")[0] == "rust.md"
    # traditional query, simplified notes
    assert trove.paths("記憶與學習")[0] == "memory.md"


@needs_dict
def test_titles_tags_and_links_with_chinese_names(trove, zh_vault):
    assert trove.paths("记忆与学习")[0] == "memory.md"
    assert trove.paths("间隔重复")[0] == "memory.md"        # alias
    assert trove.paths("学习", "--tags", "学习方法") == ["memory.md"]
    out = trove.ok("ls", "zh").out
    assert "memory.md" in out
    doc = trove.search("参见")
    assert doc[0]["path"] == "links.md"


@needs_dict
def test_snippets_never_cut_a_character(trove, zh_vault):
    long = "这是一个很长的段落。" * 200 + "关键词在这里出现。" + "后面还有很多文字。" * 200
    (zh_vault / "long.md").write_text("# 长文\n\n" + long + "\n", encoding="utf-8")
    trove.ok("update")
    for res in trove.search("关键词", "-n", "1"):
        assert "\ufffd" not in res["snippet"]
    r = trove.ok("search", "关键词", "-n", "1")
    assert "\ufffd" not in r.out


# ---- the dictionary file ------------------------------------------------------

def test_missing_dictionary_is_a_clear_warning(trove, zh_vault):
    env = {"TROVE_ZH_DICT": "/nonexistent/trove-zh.dict"}
    r = trove.ok("tokenize", "--query", "中华人民共和国", env=env)
    assert "/nonexistent/trove-zh.dict" in r.err
    assert [l.split("\t")[0] for l in r.out.splitlines()][:2] == ["中华", "华人"]
    # English search with translation off pays nothing and says nothing (the
    # translation channel turns English words into Chinese ones: those need
    # the dictionary, and the warning then says why they are bigrams)
    r = trove.ok("search", "hello", "--no-translate", env=env)
    assert r.err == ""


@needs_dict
def test_english_title_search_leaves_chinese_names_unsegmented(trove, tmp_path):
    """The title channel cuts a name's Chinese words only when they can
    count: for an English query, in a name that matched otherwise (its
    precision), never in one that holds no query word (that loaded the
    dictionary at every cold English search of a multilingual vault)."""
    v = tmp_path / "mixed"
    v.mkdir()
    (v / "cli.md").write_text("---\ntitle: 命令行工具\naliases: [CLI tools]\n---\n# 命令行工具\n\n"
                              "用 CLI tools 工作。\n", encoding="utf-8")
    (v / "plug.md").write_text("# Obsidian 插件\n\n插件 for Obsidian users.\n", encoding="utf-8")
    (v / "CLI tools.md").write_text("# CLI tools\n\nTools for the command line.\n")
    trove.ok("collection", "add", v, "--name", "mixed")
    trove.ok("update")
    # 命令行工具 is a candidate of the title channel (its alias matched), but
    # only the English note's snippet is made (-n 1): nothing needs the
    # dictionary, so a missing one is not even noticed
    env = {"TROVE_ZH_DICT": "/nonexistent/trove-zh.dict"}
    r = trove.ok("search", "cli tools", "-n", "1", "--no-translate", env=env)
    assert r.err == "" and "CLI tools.md" in r.out, r
    # a matching name still counts its Chinese words: obsidian + 插件, half
    # of the name is the query (0.75, not the 1.0 of a name all query)
    got = {x["path"]: x["explain"]["title"] for x in trove.search("obsidian", "--explain")}
    assert got["plug.md"]["score"] == pytest.approx(0.75), got


def test_corrupt_dictionary_is_a_clear_warning(trove, tmp_path):
    bad = tmp_path / "bad.dict"
    bad.write_bytes(b"TROVEZH1" + b"\0" * 300)
    r = trove.ok("tokenize", "中文", env={"TROVE_ZH_DICT": str(bad)})
    assert str(bad) in r.err and "rebuild" in r.err
    assert r.out.split("\t")[0] == "中文"


@needs_dict
def test_user_dictionary_from_config(trove, tmp_path):
    words = tmp_path / "words.txt"
    words.write_text("记忆保持力\n杭研大厦 5 nz\n", encoding="utf-8")
    trove.config.mkdir(parents=True, exist_ok=True)
    (trove.config / "config.yaml").write_text(
        "chinese:\n  user_dictionary: %s\n" % words, encoding="utf-8")
    got = [t for t, _, _ in tokens(trove, "--query", "如何提高记忆保持力")]
    assert got == ["如何", "提高", "记忆保持力"]
    # the section survives the config being rewritten by a command
    trove.ok("collection", "add", tmp_path, "--name", "x")
    assert "user_dictionary" in (trove.config / "config.yaml").read_text()


# ---- upgrading a bigram index ---------------------------------------------

@needs_dict
def test_bigram_index_is_upgraded_by_update(trove, tmp_path):
    v = tmp_path / "zh2"
    v.mkdir()
    (v / "a.md").write_text("# 数据\n\n关系型数据库管理系统\n", encoding="utf-8")
    (v / "b.md").write_text("# 其他\n\n库管理员\n", encoding="utf-8")
    no_dict = {"TROVE_ZH_DICT": "/nonexistent/trove-zh.dict"}
    trove.ok("collection", "add", v, "--name", "zh2", env=no_dict)
    trove.ok("update", env=no_dict)
    db = sqlite3.connect(str(trove.index))
    (ver,) = db.execute("SELECT value FROM meta WHERE key='tokenizer'").fetchone()
    db.close()
    assert "bigram" in ver
    r = trove.ok("update")
    assert "re-tokenized" in r.out
    db = sqlite3.connect(str(trove.index))
    (ver,) = db.execute("SELECT value FROM meta WHERE key='tokenizer'").fetchone()
    db.close()
    assert "jieba" in ver
    assert trove.paths("数据库") == ["a.md"]
    r = trove.ok("update")
    assert "re-tokenized" not in r.out


# ---- Japanese: MeCab when installed, bigrams otherwise ------------------------

def have_mecab():
    import ctypes
    try:
        ctypes.CDLL("libmecab.so.2")
    except OSError:
        return False
    return Path("/var/lib/mecab/dic/ipadic-utf8/sys.dic").is_file()


needs_mecab = pytest.mark.skipif(not have_mecab(), reason="libmecab2 / "
                                 "mecab-ipadic-utf8 not installed (scripts/install-deps.sh)")
NO_MECAB = {"TROVE_NO_MECAB": "1"}


def meta_tokenizer(trove):
    db = sqlite3.connect(str(trove.index))
    (ver,) = db.execute("SELECT value FROM meta WHERE key='tokenizer'").fetchone()
    db.close()
    return ver


@needs_mecab
def test_japanese_words_with_mecab(trove):
    text = "東京都に住む。日本語の文章"
    got = tokens(trove, text)
    assert [t for t, _, _ in got] == ["東京", "都", "に", "住む", "日本語", "の", "文章"]
    raw = text.encode()
    assert all(raw[s:e].decode() == t for t, s, e in got)
    # the query side cuts the same way
    assert [t for t, _, _ in tokens(trove, "--query", "東京都に住む")] == \
        ["東京", "都", "に", "住む"]


def test_japanese_bigrams_without_mecab(trove):
    got = tokens(trove, "東京都に住む", env=NO_MECAB)
    assert got == [("東京", 0, 6), ("京都", 3, 9), ("都に", 6, 12), ("に住", 9, 15),
                   ("住む", 12, 18)]


@needs_mecab
def test_index_follows_the_japanese_segmenter(trove, tmp_path):
    v = tmp_path / "ja"
    v.mkdir()
    (v / "a.md").write_text("# 住まい\n\n東京都に住む人々の暮らし\n", encoding="utf-8")
    (v / "b.md").write_text("# 旅\n\n京都を歩く\n", encoding="utf-8")
    trove.ok("collection", "add", v, "--name", "ja", env=NO_MECAB)
    trove.ok("update", env=NO_MECAB)
    assert "ja:bigram" in meta_tokenizer(trove)
    # bigrams: 京都 is found inside 東京都
    assert sorted(trove.paths("京都", env=NO_MECAB)) == ["a.md", "b.md"]
    r = trove.ok("update")
    assert "re-tokenized" in r.out
    assert "ja:mecab" in meta_tokenizer(trove)
    # MeCab's words: 東京 / 都, so 京都 is only the note about Kyoto
    assert trove.paths("京都") == ["b.md"]
    assert "re-tokenized" not in trove.ok("update").out
    r = trove.ok("update", env=NO_MECAB)
    assert "re-tokenized" in r.out
    assert "ja:bigram" in meta_tokenizer(trove)


# ---- Obsidian help: a note's title finds the note ---------------------------

@needs_dict
@pytest.mark.skipif(not (SHARED / "corpora" / "obsidian-help").is_dir(),
                    reason="../shared not present")
@pytest.mark.parametrize("lang,mecab", [("zh", True), ("ja", True), ("ja", False)])
def test_obsidian_help_titles_find_their_note(trove, lang, mecab):
    # Japanese both ways: MeCab's words (skipped without MeCab) and bigrams.
    if mecab and lang == "ja" and not have_mecab():
        pytest.skip("libmecab2 / mecab-ipadic-utf8 not installed")
    env = None if mecab else NO_MECAB
    root = SHARED / "corpora" / "obsidian-help" / lang
    trove.ok("collection", "add", root, "--name", lang, env=env)
    trove.ok("update", env=env)
    notes = sorted(p for p in root.rglob("*.md"))
    # Every title through one `trove mcp` (the `search` tool answers
    # "exactly as trove search": the same api call), not one sanitized
    # process each (~170 a language, each loading the dictionaries); every
    # 10th title also through `trove search -n 1`, which must agree.
    top = mcp_search_paths(trove, [p.stem for p in notes], env=env)
    hits = 0
    misses = []
    for i, p in enumerate(notes):
        title = p.stem
        res = top[i]
        if i % 10 == 0:
            assert trove.paths(title, "-n", "1", env=env)[:1] == res, title
        rel = p.relative_to(root).as_posix()
        if res and res[0] == rel:
            hits += 1
        else:
            misses.append((title, res[:1]))
    rate = hits / len(notes)
    assert rate >= 0.95, (rate, misses[:10])
