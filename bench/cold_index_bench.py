#!/usr/bin/python3
"""cold_index_bench -- one binary's cold `search --json -n 20` on several
indexes of the same notes (built by different binaries or settings: a page
size, an index order), alternated: CPU and minor faults from wait4, wall;
and whether each index gave the same outputs (session 33, w-idx4).

    /usr/bin/python3 bench/cold_index_bench.py BIN ROUNDS DIR...

DIR: a work folder with index.db and config/ (bench/index_threads_bench.sh's
or a fresh `collection add` + `update` with TROVE_INDEX=DIR/index.db,
TROVE_CONFIG_DIR=DIR/config). No daemon is used."""
import os, sys, statistics, time
b, rounds, dirs = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
Q = ["extract a tar archive", "list open network ports", "tar", "resize an image", "git commit",
     "压缩文件", "ファイル 圧縮", "파일 압축", '"extract an archive"', "compr*", "archive -zip -tar", "ssh"]
cpu = {d: [] for d in dirs}; flt = {d: [] for d in dirs}; wall = {d: [] for d in dirs}; outs = {d: [] for d in dirs}
for r in range(rounds):
    for d in (dirs if r % 2 == 0 else dirs[::-1]):
        env = dict(os.environ, TROVE_INDEX=d + "/index.db", TROVE_CONFIG_DIR=d + "/config",
                   XDG_CACHE_HOME=d + "/xc", XDG_CONFIG_HOME=d + "/xcf", TROVE_NO_DAEMON="1", NO_COLOR="1")
        for q in Q:
            rfd, wfd = os.pipe()
            t0 = time.perf_counter()
            pid = os.posix_spawn(b, [b, "search", "--json", "-n", "20", q], env,
                                 file_actions=[(os.POSIX_SPAWN_DUP2, wfd, 1), (os.POSIX_SPAWN_CLOSE, rfd)])
            os.close(wfd)
            out = b""
            while True:
                c = os.read(rfd, 65536)
                if not c: break
                out += c
            os.close(rfd)
            _, st, ru = os.wait4(pid, 0)
            wall[d].append(time.perf_counter() - t0)
            cpu[d].append(ru.ru_utime + ru.ru_stime); flt[d].append(ru.ru_minflt)
            if r == 0: outs[d].append(out)
print("load", open("/proc/loadavg").read().split()[0])
for d in dirs:
    print(f"{d:24s} cpu median {statistics.median(cpu[d])*1e3:6.2f} ms mean {statistics.mean(cpu[d])*1e3:6.2f} ms  minflt median {statistics.median(flt[d]):6.0f}  wall median {statistics.median(wall[d])*1e3:6.2f} ms  (n={len(cpu[d])})")
print("outputs identical:", all(outs[d] == outs[dirs[0]] for d in dirs), len(outs[dirs[0]]), "queries")
