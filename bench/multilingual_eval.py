#!/usr/bin/python3
"""The reader's language first, on the six-language Obsidian help vault.

    /usr/bin/python3 bench/multilingual_eval.py ../shared/corpora/obsidian-help \
        [--trove build/trove] [--work DIR]

Indexes the vault into a fresh index (in --work, default a temporary
folder) and runs, each as its own `trove search --json -n 10 --no-vector`:

  names         every note's file name in en, de and fr as the query: the
                share whose first result lies in that language's folder
                (strict), or in another language that has a note of that
                very name, title or alias (any), the share whose first
                result is that very note, and the mean share of the top 10
                in the name's language (strict);
  descriptions  every note's frontmatter `description:` (all six
                languages) as the query: MRR@10 of the note itself.

Also prints the mean CPU time of one name search process.
Standard library only (no YAML: a note's names are its file name, its
frontmatter `title:` and its `aliases:` list, read line by line).
"""
import argparse
import json
import os
import re
import resource
import subprocess
import tempfile
import unicodedata
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def fold(s):
    return unicodedata.normalize("NFC", s).casefold()


def frontmatter(text):
    m = re.match(r"---\n(.*?)\n---\n", text, re.S)
    return m.group(1) if m else ""


def names_of(text, stem):
    names = {fold(stem)}
    fm = frontmatter(text)
    m = re.search(r"^title:\s*(.+)$", fm, re.M)
    if m:
        names.add(fold(m.group(1).strip().strip("\"'")))
    m = re.search(r"^aliases:\s*\n((?:\s+-\s*.+\n?)+)", fm, re.M)
    for a in re.findall(r"^\s+-\s*(.+)$", m.group(1), re.M) if m else []:
        names.add(fold(a.strip().strip("\"'")))
    return names


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("vault", type=Path)
    ap.add_argument("--trove", default=os.environ.get("TROVE_BIN", str(REPO / "build" / "trove")))
    ap.add_argument("--work", type=Path)
    a = ap.parse_args()
    work = a.work or Path(tempfile.mkdtemp(prefix="trove-ml-"))
    work.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, TROVE_CONFIG_DIR=str(work / "cfg"), TROVE_INDEX=str(work / "index.db"),
               TROVE_NO_DAEMON="1")
    if not (work / "index.db").exists():
        subprocess.run([a.trove, "collection", "add", str(a.vault), "--name", "help"], env=env,
                       check=True, capture_output=True)
    subprocess.run([a.trove, "update"], env=env, check=True, capture_output=True)

    def search(q):
        p = subprocess.run([a.trove, "search", q, "--json", "-n", "10", "--no-vector"], env=env,
                           capture_output=True, text=True)
        return json.loads(p.stdout)["results"] if p.returncode == 0 else []

    notes = []   # (lang, rel path, stem, names, text)
    for lang in ("en", "de", "fr", "ja", "ko", "zh"):
        for dp, _, files in os.walk(a.vault / lang):
            for f in sorted(files):
                if f.endswith(".md"):
                    p = Path(dp) / f
                    text = p.read_text(encoding="utf-8")
                    notes.append((lang, str(p.relative_to(a.vault)), f[:-3],
                                  names_of(text, f[:-3]), text))
    langs_of = {}
    for lang, _, _, names, _ in notes:
        for n in names:
            langs_of.setdefault(n, set()).add(lang)
    cpu0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    strict = first_lang = first_note = n = 0
    shares = []
    for lang, rel, stem, _, _ in notes:
        if lang not in ("en", "de", "fr"):
            continue
        res = search(stem)
        ok = langs_of[fold(stem)]
        n += 1
        if res:
            top = res[0]["path"].split("/")[0]
            strict += top == lang
            first_lang += top in ok
            first_note += fold(Path(res[0]["path"]).stem) == fold(stem)
            shares.append(sum(r["path"].split("/")[0] == lang for r in res) / len(res))
    print("names         %d: first in the language %.3f (any language with that name %.3f), "
          "that very note first %.3f, top-10 share in the language %.3f"
          % (n, strict / n, first_lang / n, first_note / n, sum(shares) / max(1, len(shares))))
    cpu1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    print("cpu           %.1f ms per name search (user + system of the search processes)"
          % ((cpu1.ru_utime - cpu0.ru_utime + cpu1.ru_stime - cpu0.ru_stime) / n * 1000))
    rr = []
    for lang, rel, _, _, text in notes:
        m = re.search(r"^description:\s*(.+)$", frontmatter(text), re.M)
        if not m:
            continue
        paths = [r["path"] for r in search(m.group(1).strip().strip("\"'"))]
        rr.append(1 / (paths.index(rel) + 1) if rel in paths else 0)
    print("descriptions  %d: MRR@10 %.3f" % (len(rr), sum(rr) / max(1, len(rr))))


if __name__ == "__main__":
    main()
