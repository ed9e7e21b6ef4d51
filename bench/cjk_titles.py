#!/usr/bin/python3
"""Title queries on the CJK notes of ../shared/corpora/obsidian-help: each
note's file name is the query (`trove search -n 1`); prints, per language
folder, how many notes come first (tests/e2e/test_cli_cjk.py checks >= 95 %
for zh and ja) and the misses.

    /usr/bin/python3 bench/cjk_titles.py [--trove build/trove] [zh ja ko]

Each language is indexed alone into a fresh temporary index. Environment
variables reach trove unchanged (TROVE_ZH_DICT, TROVE_NO_MECAB...).
Standard library only."""
import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("langs", nargs="*", default=["zh", "ja", "ko"])
    ap.add_argument("--trove", default=str(REPO / "build" / "trove"))
    ap.add_argument("--shared", default=str(REPO.parent / "shared"))
    ap.add_argument("-v", "--verbose", action="store_true", help="list misses")
    args = ap.parse_args()
    base = Path(args.shared) / "corpora" / "obsidian-help"
    if not base.is_dir():
        sys.exit("%s: not found" % base)
    for lang in args.langs:
        root = base / lang
        with tempfile.TemporaryDirectory() as tmp:
            env = dict(os.environ, TROVE_INDEX=tmp + "/index.db",
                       TROVE_CONFIG_DIR=tmp + "/config", NO_COLOR="1")
            run = lambda *a: subprocess.run([args.trove, *a], env=env,
                                            capture_output=True, text=True,
                                            check=True).stdout
            run("collection", "add", str(root), "--name", lang)
            run("update")
            notes = sorted(root.rglob("*.md"))
            misses = []
            for p in notes:
                out = run("search", "--files", "-n", "1", "--", p.stem)
                got = out.split("\n")[0].strip()
                want = p.relative_to(root).as_posix()
                if not got.endswith("/" + want) and got != want:
                    misses.append((p.stem, got))
            n = len(notes)
            print("%s  %d/%d = %.1f %%" % (lang, n - len(misses), n,
                                           100.0 * (n - len(misses)) / n))
            if args.verbose:
                for title, got in misses:
                    print("   miss: %s -> %s" % (title, got))


if __name__ == "__main__":
    main()
