#!/usr/bin/python3
"""Summarise hyperfine rounds: WORK/round1.json .. roundN.json.

    /usr/bin/python3 bench/hyperfine_rounds.py WORK ROUNDS [REFERENCE]

Prints each command's mean/median wall and CPU (user + system) per round,
then the median of the rounds; with REFERENCE (a command's name), each
command's cost as a multiple of that one's. Used by the side-by-side
scripts (cold_start_bench.sh, qmd_side_bench.sh), which alternate the
commands within a round so that load changes hit them alike.
"""
import json
import statistics
import sys


def main():
    work, rounds = sys.argv[1], int(sys.argv[2])
    ref = sys.argv[3] if len(sys.argv) > 3 else None
    rows = {}
    for r in range(1, rounds + 1):
        with open("%s/round%d.json" % (work, r)) as f:
            for res in json.load(f)["results"]:
                rows.setdefault(res["command"], []).append(
                    (res["mean"] * 1e3, res["median"] * 1e3,
                     (res["user"] + res["system"]) * 1e3))
    width = max([13] + [len(n) for n in rows])
    print("%-*s %s" % (width, "", " | ".join("round %d: mean/median wall, CPU ms" % (i + 1)
                                             for i in range(rounds))))
    for name, rs in rows.items():
        print("%-*s %s" % (width, name, " | ".join("%.1f/%.1f, %.1f" % x for x in rs)))
    med = {n: (statistics.median(x[1] for x in rs), statistics.median(x[2] for x in rs))
           for n, rs in rows.items()}
    print("median of rounds (wall median, CPU)%s:" % (", and x %s" % ref if ref else ""))
    for n, (w, c) in med.items():
        line = "  %-*s wall %7.1f ms  CPU %7.1f ms" % (width, n, w, c)
        if ref in med:
            line += "   x%.1f wall, x%.1f CPU" % (w / med[ref][0], c / med[ref][1])
        print(line)


if __name__ == "__main__":
    main()
