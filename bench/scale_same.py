#!/usr/bin/python3
"""scale_same -- the md5 of `search --json` (stdout, exit status, stderr)
for each case of search_same.py and each query of a file, from one binary
in the caller's environment (an index others must not write to: source
/work/scale1m/env.sh DIR first), cold or through a read-only daemon
(`daemon --detach --no-watch`, stopped after): run it with the old and the
new binary and compare the outputs (session 34, w-kw1m).

    /usr/bin/python3 bench/scale_same.py BIN [QUERIES_FILE] [--daemon] [--file-only] > OUT

--file-only: the file's queries alone (keyword and hybrid, -n 10 and 30),
not search_same.py's cases (a pass at 1M takes ~30 min on a loaded box).
"""
import hashlib
import os
import re
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import search_same  # noqa: E402


def main():
    args = [a for a in sys.argv[1:] if a not in ("--daemon", "--file-only")]
    if not 1 <= len(args) <= 2 or any(a.startswith("-") for a in args):
        sys.exit(__doc__.split("\n\n")[1].strip())
    b = os.path.abspath(args[0])
    extra = []
    if len(args) == 2:
        extra = [l.rstrip("\n") for l in open(args[1], encoding="utf-8") if l.strip()]
    env = dict(os.environ)
    daemon = "--daemon" in sys.argv
    pid = 0
    if daemon:
        env.pop("TROVE_NO_DAEMON", None)
        r = subprocess.run([b, "daemon", "--detach", "--no-watch", "--idle", "600"], env=env,
                           capture_output=True)
        m = re.search(rb"pid (\d+)", r.stdout + r.stderr)
        if r.returncode or not m:
            sys.exit("scale_same: no daemon of our own: %s" % (r.stdout + r.stderr).decode())
        pid = int(m.group(1))
    else:
        env["TROVE_NO_DAEMON"] = "1"
    try:
        cases = [] if "--file-only" in sys.argv else list(search_same.cases())
        for q in extra:
            for mode in ([], ["--no-vector"]):
                cases.append([q] + mode)
                cases.append([q] + mode + ["-n", "30"])
        for c in cases:
            r = subprocess.run([b, "search", "--json"] + c, capture_output=True, env=env)
            h = hashlib.md5(r.stdout + b"|%d|" % r.returncode + r.stderr).hexdigest()
            print(h, " ".join(c))
    finally:
        # killed by pid: `daemon stop` stops whichever daemon serves the
        # index, another session's too
        if pid:
            os.kill(pid, signal.SIGTERM)
            while os.path.exists("/proc/%d" % pid):
                time.sleep(0.1)


if __name__ == "__main__":
    main()
