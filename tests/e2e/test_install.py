"""`cmake --install` puts a working trove, its man page (generated from
docs/cli.md) and bash/zsh completions under a prefix; the completions read
commands and options from the installed binary."""
import os
import shutil
import subprocess

import pytest

from conftest import REPO, trove_bin


@pytest.fixture(scope="module")
def prefix(tmp_path_factory):
    build = trove_bin().parent
    if not (build / "cmake_install.cmake").is_file():
        pytest.skip("TROVE_BIN %s is not inside a CMake build folder" % trove_bin())
    if not (build / "trove.1").is_file():
        pytest.skip("no trove.1 in %s (python3 was not found at configure time)" % build)
    dst = tmp_path_factory.mktemp("prefix")
    subprocess.run(["cmake", "--install", str(build), "--prefix", str(dst)],
                   check=True, capture_output=True)
    return dst


def test_layout(prefix):
    for rel in ("bin/trove", "share/man/man1/trove.1",
                "share/bash-completion/completions/trove",
                "share/zsh/site-functions/_trove"):
        assert (prefix / rel).is_file(), rel
    out = subprocess.run([str(prefix / "bin" / "trove"), "--version"],
                         capture_output=True, text=True, check=True).stdout
    assert out.startswith("trove ")


def test_chinese_dictionary_installed_and_found(prefix):
    if not (trove_bin().parent / "trove-zh.dict").is_file():
        pytest.skip("no Chinese dictionary in the build (python3-jieba missing)")
    assert (prefix / "share/trove/trove-zh.dict").is_file()
    env = {k: v for k, v in os.environ.items() if k != "TROVE_ZH_DICT"}
    r = subprocess.run([str(prefix / "bin" / "trove"), "tokenize", "--query", "中华人民共和国"],
                       capture_output=True, text=True, check=True, env=env)
    assert r.stdout == "中华人民共和国\t0\t21\n"
    assert r.stderr == ""


def test_man_page_renders_cleanly(prefix):
    if not shutil.which("groff"):
        pytest.skip("groff is not installed")
    page = prefix / "share/man/man1/trove.1"
    r = subprocess.run(["groff", "-man", "-Tutf8", "-ww", str(page)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stderr == "", r.stderr  # no roff warnings
    text = r.stdout
    # Every command of the CLI reference has its section in the page.
    for heading in ("trove search", "trove get", "trove update", "EXIT CODES"):
        assert heading.lower() in text.lower().replace("\u2010", "-"), heading
    # Markdown markup does not leak through.
    assert "```" not in text and "](" not in text


def complete(prefix, env, *words):
    """Run the installed bash completion for the command line `words` (the
    last word is the one being completed) and return the candidates."""
    script = prefix / "share/bash-completion/completions/trove"
    cmd = 'source "%s"; COMP_WORDS=(%s); COMP_CWORD=%d; _trove; printf "%%s\\n" "${COMPREPLY[@]}"' % (
        script, " ".join("'%s'" % w for w in words), len(words) - 1)
    e = dict(env)
    e["PATH"] = str(prefix / "bin") + os.pathsep + e.get("PATH", "")
    r = subprocess.run(["bash", "--norc", "-c", cmd], capture_output=True, text=True, env=e)
    assert r.returncode == 0, r.stderr
    return [x for x in r.stdout.splitlines() if x]


def test_bash_completion(prefix, trove, vault):
    trove.ok("collection", "add", vault, "--name", "notes")
    env = trove.env
    assert "search" in complete(prefix, env, "trove", "se")
    assert "--json" in complete(prefix, env, "trove", "search", "q", "--js")
    assert complete(prefix, env, "trove", "search", "q", "-c", "") == ["notes"]
    assert {"add", "list"} <= set(complete(prefix, env, "trove", "collection", ""))
    assert "--mask" in complete(prefix, env, "trove", "collection", "add", "--ma")


def test_zsh_completion_parses(prefix):
    if not shutil.which("zsh"):
        pytest.skip("zsh is not installed")
    r = subprocess.run(["zsh", "-n", str(prefix / "share/zsh/site-functions/_trove")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_man_page_generator(tmp_path):
    """The page is generated from docs/cli.md at build time, so it is never
    stale; every "## " section of the reference becomes a man section."""
    out = tmp_path / "trove.1"
    r = subprocess.run(["/usr/bin/python3", str(REPO / "scripts" / "md2man.py"),
                        str(REPO / "docs" / "cli.md"), str(out), "9.9"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    roff = out.read_text()
    assert roff.startswith('.TH TROVE 1 ') and '"trove 9.9"' in roff
    sections = [l[3:] for l in (REPO / "docs" / "cli.md").read_text().splitlines()
                if l.startswith("## ")]
    sh = [l for l in roff.splitlines() if l.startswith(".SH ")]
    assert len(sh) >= len(sections) + 2  # NAME, DESCRIPTION, ..., SEE ALSO
