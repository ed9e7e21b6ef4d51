"""`cmake --install` puts a working trove, its man page (generated from
docs/trove.1.md), the reference docs (share/doc/trove) and bash/zsh
completions under a prefix; the completions read commands, subcommands and
options from the installed binary."""
import os
import re
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


MAN_SECTIONS = ["NAME", "SYNOPSIS", "DESCRIPTION", "COMMANDS", "OPTIONS", "FILES",
                "ENVIRONMENT", "EXIT STATUS", "EXAMPLES", "SEE ALSO"]


def rendered_man(prefix):
    if not shutil.which("groff"):
        pytest.skip("groff is not installed")
    page = prefix / "share/man/man1/trove.1"
    r = subprocess.run(["groff", "-man", "-Tutf8", "-ww", "-P-cbou", str(page)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stderr == "", r.stderr  # no roff warnings
    return r.stdout.replace("\u2010", "-").replace("\u2212", "-")


def test_man_page_is_a_man_page(prefix):
    text = rendered_man(prefix)
    sh = [l[4:] for l in (prefix / "share/man/man1/trove.1").read_text().splitlines()
          if l.startswith(".SH ")]
    assert [x.strip('"') for x in sh] == MAN_SECTIONS, sh
    # NAME is the one-line summary, not the developer's preface of docs/cli.md
    name = text.split("SYNOPSIS")[0]
    assert re.search(r"trove - local-first hybrid search", name), name
    assert "src/cli" not in text and "This page covers" not in text
    # Markdown markup does not leak through.
    assert "```" not in text and "](" not in text and "<!--" not in text


def man_source_text(prefix):
    """The page's roff without its escapes (no hyphenation, no line fill):
    what to look words up in."""
    roff = (prefix / "share/man/man1/trove.1").read_text()
    return re.sub(r"\\f[BIRP]|\\&", "", roff).replace("\\-", "-")


def help_text(*args):
    r = subprocess.run([str(trove_bin())] + list(args) + ["--help"], capture_output=True,
                       text=True)
    return r.stdout + r.stderr


def commands():
    out = help_text()
    return re.findall(r"^  ([a-z][a-z-]*) ", out.split("commands:")[1], re.M)


def test_man_page_names_every_command_and_option(prefix):
    """One source of truth: every command of `trove --help` and every option
    that a command's --help prints is in the man page (and its SYNOPSIS
    names every command, --no-daemon included)."""
    rendered_man(prefix)
    text = man_source_text(prefix)
    synopsis = text.split("SYNOPSIS")[1].split("DESCRIPTION")[0]
    assert "--no-daemon" in synopsis
    for cmd in commands():
        assert re.search(r"trove %s\b" % re.escape(cmd), synopsis), cmd
    options = set(re.findall(r"--[a-z][a-z0-9-]*", help_text()))
    for cmd in commands():
        options |= set(re.findall(r"--[a-z][a-z0-9-]*", help_text(cmd)))
        for sub in ("add", "list", "rm", "pull", "use", "info", "stop", "status"):
            options |= set(re.findall(r"--[a-z][a-z0-9-]*", help_text(cmd, sub)))
    missing = sorted(o for o in options if not re.search(re.escape(o) + r"(?![a-z0-9-])", text))
    assert not missing, missing


def test_docs_are_installed_where_the_man_page_says(prefix):
    see_also = man_source_text(prefix).split("SEE ALSO")[1]
    assert "share/doc/trove" in see_also, see_also
    doc = prefix / "share/doc/trove"
    for name in re.findall(r"\b([a-z]+\.md)\b", see_also) + ["README.md"]:
        if name != "README.md":
            assert (doc / name).is_file(), name
    assert (doc / "README.md").is_file()
    for page in ("cli.md", "daemon.md", "mcp.md", "models.md"):
        assert (doc / page).read_text() == (REPO / "docs" / page).read_text()


def test_models_doc_does_not_say_the_qwen3_decoder_does_not_run():
    text = " ".join((REPO / "docs" / "models.md").read_text().split())
    assert "does not run the Qwen3 decoder" not in text
    assert "can be pulled but not used" not in text


def complete(prefix, env, *words, cwd=None):
    """Run the installed bash completion for the command line `words` (the
    last word is the one being completed) and return the candidates."""
    script = prefix / "share/bash-completion/completions/trove"
    cmd = 'source "%s"; COMP_WORDS=(%s); COMP_CWORD=%d; _trove; printf "%%s\\n" "${COMPREPLY[@]}"' % (
        script, " ".join("'%s'" % w for w in words), len(words) - 1)
    e = dict(env)
    e["PATH"] = str(prefix / "bin") + os.pathsep + e.get("PATH", "")
    r = subprocess.run(["bash", "--norc", "-c", cmd], capture_output=True, text=True, env=e,
                       cwd=cwd)
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


def test_bash_completion_global_options_and_subcommands(prefix, trove):
    env = trove.env
    assert "--no-daemon" in complete(prefix, env, "trove", "--")
    assert complete(prefix, env, "trove", "daemon", "") == ["status", "stop"]
    assert complete(prefix, env, "trove", "daemon", "s") == ["status", "stop"]
    assert complete(prefix, env, "trove", "snapshot", "") == ["list", "rollback"]
    assert {"add", "list", "remove", "rename"} == set(complete(prefix, env, "trove", "collection", ""))
    assert {"pull", "list", "use", "info", "embed", "rerank", "bench", "tokenize",
            "generate"} == \
        set(complete(prefix, env, "trove", "model", ""))
    # after a global option the command is still completed
    assert "search" in complete(prefix, env, "trove", "--no-daemon", "se")
    # a subcommand's own options
    assert "--json" in complete(prefix, env, "trove", "daemon", "status", "--")
    assert "--json" in complete(prefix, env, "trove", "collection", "list", "--j")


def test_bash_completion_offers_no_files_after_flags(prefix, trove, tmp_path):
    env = dict(trove.env)
    (trove.home / "somefile.md").write_text("x")
    # --full takes no argument: after it come query words, never files
    here = trove.home
    assert complete(prefix, env, "trove", "search", "q", "--full", "", cwd=here) == []
    assert complete(prefix, env, "trove", "search", "q", "--json", "", cwd=here) == []
    assert "somefile.md" in complete(prefix, env, "trove", "get", "--line-numbers", "", cwd=here)
    # options that take a value that is not a file
    assert complete(prefix, env, "trove", "search", "q", "-n", "", cwd=here) == []
    assert complete(prefix, env, "trove", "search", "q", "--folder", "", cwd=here) == []
    assert complete(prefix, env, "trove", "get", "a.md", "-l", "", cwd=here) == []
    # ... and those that take a file still complete files
    assert "somefile.md" in complete(prefix, env, "trove", "search", "q", "--model", "so", cwd=here)
    assert "somefile.md" in complete(prefix, env, "trove", "--index", "so", cwd=here)
    assert "somefile.md" in complete(prefix, env, "trove", "get", "so", cwd=here)
    assert complete(prefix, env, "trove", "search", "so", cwd=here) == []


def test_bash_completion_collection_names_with_spaces(prefix, trove, vault, tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    trove.ok("collection", "add", vault, "--name", "my notes")
    trove.ok("collection", "add", other, "--name", "work")
    env = trove.env
    assert sorted(complete(prefix, env, "trove", "search", "q", "-c", "")) == ["my notes", "work"]
    assert complete(prefix, env, "trove", "search", "q", "-c", "my") == ["my notes"]
    assert complete(prefix, env, "trove", "search", "q", "-c", "my\\ n") == ["my notes"]
    assert sorted(complete(prefix, env, "trove", "update", "")) == ["my notes", "work"]
    assert complete(prefix, env, "trove", "collection", "remove", "m") == ["my notes"]


def test_zsh_completion_parses(prefix):
    if not shutil.which("zsh"):
        pytest.skip("zsh is not installed")
    r = subprocess.run(["zsh", "-n", str(prefix / "share/zsh/site-functions/_trove")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_man_page_generator(tmp_path):
    """The page is generated from docs/trove.1.md at build time, so it is
    never stale; @DOCDIR@ becomes the folder the docs are installed to."""
    out = tmp_path / "trove.1"
    r = subprocess.run(["/usr/bin/python3", str(REPO / "scripts" / "md2man.py"),
                        str(REPO / "docs" / "trove.1.md"), str(out), "9.9", "/opt/x/share/doc/trove"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    roff = out.read_text()
    assert roff.startswith('.TH TROVE 1 ') and '"trove 9.9"' in roff
    sh = [l[4:].strip('"') for l in roff.splitlines() if l.startswith(".SH ")]
    assert sh == MAN_SECTIONS, sh
    assert "/opt/x/share/doc/trove" in roff and "@DOCDIR@" not in roff
    # any other markdown page still converts (a generic NAME and SEE ALSO)
    r = subprocess.run(["/usr/bin/python3", str(REPO / "scripts" / "md2man.py"),
                        str(REPO / "docs" / "cli.md"), str(out), "9.9"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    sh = [l for l in out.read_text().splitlines() if l.startswith(".SH ")]
    assert sh[0] == ".SH NAME" and sh[-1] == ".SH SEE ALSO"
