#!/usr/bin/env python3
"""test-durations: tests/e2e/durations.tsv from the times of a pytest run.

    TROVE_TEST_TIMES=/tmp/times.tsv ... pytest -n 2 --dist loadgroup tests/e2e
    python3 scripts/test-durations.py /tmp/times.tsv > tests/e2e/durations.tsv

Each line of TROVE_TEST_TIMES (tests/e2e/conftest.py) starts with a test's
wall seconds and its node id is the fourth field. The table gives each file
its tests' mean wall time, and a test its own where it is far from that mean
(a long scenario beside short checks). conftest.py queues the units of work
longest first from it; only the order depends on it, so regenerate it when
files or tests grow or shrink a lot (docs/testing.md)."""
import collections
import sys


def main(paths):
    walls = {}
    for path in paths:
        with open(path) as f:
            for ln in f:
                p = ln.rstrip("\n").split("\t")
                if len(p) >= 4:
                    walls[p[3]] = float(p[0])        # the last run of a test wins
    by_file = collections.defaultdict(list)
    for node, w in walls.items():
        by_file[node.split("::", 1)[0]].append((node, w))
    out = []
    for f, tests in by_file.items():
        mean = sum(w for _, w in tests) / len(tests)
        out.append((f, mean))
        out += [(n, w) for n, w in tests if abs(w - mean) > max(2.0, mean)]
    print("# Mean wall seconds of a file's tests, or of one test (node id), from")
    print("# TROVE_TEST_TIMES by scripts/test-durations.py; conftest.py queues the")
    print("# units of work longest first from it (docs/testing.md).")
    for key, w in sorted(out):
        print("%.2f\t%s" % (w, key))


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
