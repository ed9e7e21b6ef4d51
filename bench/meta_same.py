"""Whether two trove binaries give the same `search --json` (md5 of stdout, exit
status and stderr) for the queries of bench/meta_bench.sh and `zstd` x 35
filter sets (types, mismatches, a missing key, dates, globs, in/not in),
each on its own copy of the index bench/meta_bench.sh kept (META_DIR):

    /usr/bin/python3 bench/meta_same.py OLD_BIN OLD_META_DIR NEW_BIN NEW_META_DIR

Prints the cases that differ and "N of M identical"."""
import hashlib, os, subprocess, sys
ob, od, nb, nd = sys.argv[1:5]
queries = ["tar", "extract a tar archive", "git commit", "list files sorted by size",
           "docker run", "show disk usage", "kill a process by name", "compress a folder", "zstd"]
W = lambda *a: [x for e in a for x in ("--where", e)]
sets = [[], W("status=done"), W("priority>=3"), ["--since", "2023-01-01"], ["--until", "2022-06-30"],
        W("status=done", "priority>=3") + ["--since", "2021-01-01", "--until", "2023-12-31"],
        W("exists(status)"), ["--since", "2000-01-01"], ["--since", "2022-03-01", "--until", "2022-03-31"],
        W("status!=done") + ["-n", "30"], ["--since", "2023-01-01"] + W("priority<2"),
        ["--until", "2021-01-01", "-n", "50"],
        W("priority=done"), W("status>3"), W("date<2022-01-01"), W("date=2021-03-05"),
        W("date>=2023-06-01", "status=draft"), W("status in (done, x)"), W("status not in (draft)"),
        W("status~=d*"), W("status~=DR*"), W("priority!=3"), W("exists(date)"), W("!exists(status)"),
        W("priority in (1, 2)"), W("status=DONE"), W("priority='3'"), W("priority<=2.5"),
        W("priority>1", "priority<5", "status!=draft"), W("date<=2020-12-31", "priority>=4"),
        W("status=done") + ["-n", "60"], W("tags~=x*"), W("date~=2021*"), W("priority=true"),
        W("nosuch=1")]
bad = 0; n = 0
for s in sets:
    for q in queries:
        outs = []
        for b, d in ((ob, od), (nb, nd)):
            env = dict(os.environ, TROVE_INDEX=d + "/index.db", TROVE_CONFIG_DIR=d + "/config",
                       TROVE_NO_DAEMON="1", NO_COLOR="1")
            r = subprocess.run([b, "search", q, "--json"] + s, capture_output=True, env=env)
            outs.append(hashlib.md5(r.stdout + b"|%d|" % r.returncode + r.stderr).hexdigest())
        n += 1
        if outs[0] != outs[1]:
            bad += 1
            print("DIFF", q, s)
print("%d of %d identical" % (n - bad, n))
