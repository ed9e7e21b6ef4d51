#!/usr/bin/python3
"""vec_same -- whether two trove binaries give the same `--json` answers
(md5 of stdout, stderr and exit status) on the default model's tldr index
(the work folder default_model_bench.py leaves, binaries in WORK/new and
WORK/base with their dictionaries and tokenizer caches): hybrid `search`,
`vsearch` and `query`, English multi-word and one-word, Chinese, Japanese,
Korean, with filters (collection, folder, language, -n, --all,
--min-score, --passages, --explain), cold (--no-daemon) and through each
binary's own daemon.

    [TROVE_EMBED_MODEL=MODEL] /usr/bin/python3 bench/vec_same.py --work DIR [--cold-only]

MODEL: the model DIR's index was embedded with (default: what
scripts/big-m2v-model.sh names).

Prints the cases that differ and "N of M identical"."""
import argparse
import hashlib
import os
import re
import subprocess
import sys
import time

QUERIES = ["extract a tar archive", "list open network ports", "resize an image", "tar", "git",
           "docker", "kill a process by name", "show disk usage", "compress a folder with zstd",
           "ssh", "copy files to a remote host", "convert video to gif", "python virtual env",
           "\u89e3\u538b\u6587\u4ef6", "\u7f51\u7edc\u7aef\u53e3", "\u30d5\u30a1\u30a4\u30eb\u3092\u5727\u7e2e",
           "\ud30c\uc77c \uc555\ucd95", "\"open ports\"", "find -name", "zzqx nonsense words"]
MODES = [["search"], ["vsearch"], ["query"], ["search", "-n", "30"], ["search", "--all"],
         ["search", "--lang", "en"], ["search", "--folder", "pages/linux", "-c", "tldr"],
         ["vsearch", "--min-score", "0.3"], ["search", "--passages", "3"],
         ["search", "--explain", "-n", "5"], ["vsearch", "-n", "40", "--lang", "de,fr"]]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    ap.add_argument("--cold-only", action="store_true")
    a = ap.parse_args()
    # TROVE_EMBED_MODEL: the model the work folder was embedded with (the
    # script names another folder in a git worktree, where ../shared is absent)
    model = os.environ.get("TROVE_EMBED_MODEL") or subprocess.run(
        ["bash", os.path.join(os.path.dirname(__file__), "..", "scripts", "big-m2v-model.sh")],
        capture_output=True, text=True).stdout.strip()
    w = a.work
    env = dict(os.environ, TROVE_INDEX=os.path.join(w, "index.db"),
               TROVE_CONFIG_DIR=os.path.join(w, "config"),
               XDG_CONFIG_HOME=os.path.join(w, "xdg-config"),
               XDG_RUNTIME_DIR=os.path.join(w, "run"), TROVE_EMBED_MODEL=model, NO_COLOR="1")
    bins = {t: (os.path.join(w, t, "trove"), dict(env, XDG_CACHE_HOME=os.path.join(w, "cache-" + t)))
            for t in ("base", "new")}
    kinds = [("cold", ["--no-daemon"])] + ([] if a.cold_only else [("daemon", [])])
    res = {}
    for tag, (b, e) in bins.items():
        for kind, pre in kinds:
            pid = None
            if kind == "daemon":
                subprocess.run([b, "daemon", "--detach", "--idle", "600"], env=e, check=True,
                               capture_output=True)
                st = subprocess.run([b, "daemon", "status"], env=e, capture_output=True, text=True)
                m = re.search(r"^pid: (\d+)", st.stdout, re.M)
                pid = int(m.group(1)) if m else None
            try:
                for mode in MODES:
                    for q in QUERIES:
                        p = subprocess.run([b] + pre + [mode[0], q] + mode[1:] + ["--json"],
                                           env=e, capture_output=True)
                        h = hashlib.md5(p.stdout + b"\0" + p.stderr + b"\0" +
                                        str(p.returncode).encode()).hexdigest()
                        res.setdefault((kind, " ".join(mode), q), {})[tag] = h
            finally:
                if kind == "daemon":
                    subprocess.run([b, "daemon", "stop"], env=e, capture_output=True)
                    for _ in range(200):
                        if not pid or not os.path.exists("/proc/%d" % pid):
                            break
                        time.sleep(0.05)
    bad = [k for k, v in res.items() if v.get("base") != v.get("new")]
    for k in bad:
        print("DIFFERS: %s %s %r" % k)
    print("%d of %d identical" % (len(res) - len(bad), len(res)))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
