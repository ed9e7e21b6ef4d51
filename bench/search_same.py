#!/usr/bin/python3
"""search_same -- whether two trove binaries, each on its own copy of an
index, give the same `search --json` (md5 of stdout, exit status and
stderr): English many-word and one-word queries, Chinese, Japanese,
Korean, phrases, prefixes, exclusions, --lang/--folder/--tags/--where/
--heading filters; keyword only (--no-vector) and hybrid; cold
(--no-daemon) and through a daemon of each binary (session 32, w-kw2).

    /usr/bin/python3 bench/search_same.py OLD_BIN OLD_DIR NEW_BIN NEW_DIR [--no-daemon-pass]
        [--repeat N]

--repeat N: the daemon pass asks every case N times over (default 1), so
that the later rounds meet what a daemon keeps between searches (the note
map's rows, titles' lengths, keyword phrases' walks: store_posts.h)

DIR: a work folder with index.db, config/ (bench/default_model_bench.py's
layout; TROVE_EMBED_MODEL from the environment). Prints the cases that
differ and "N of M identical"; exit 1 when any differs."""
import hashlib
import os
import subprocess
import sys
import time

QUERIES = ["extract a tar archive", "list open network ports", "tar", "resize an image",
           "git commit", "show disk usage of a directory", "kill a process by name",
           "compress a folder", "docker run container", "ssh", "copy files to a remote host",
           "find files by name", "zstd", "print the current date", "change file permissions",
           "link", "search text in files", "network", "python virtual environment",
           "convert video to gif",
           '"extract an archive"', '"list all"', "compr*", "net* port*", "tar -gzip",
           "archive -zip -tar", "image -resize", "git -commit",
           "压缩文件", "列出 文件", "网络 端口", "解压", "显示 磁盘 使用",
           "ファイル 圧縮", "ネットワーク", "ディレクトリ 一覧",
           "파일 압축", "네트워크 포트", "디렉토리 목록",
           "Datei komprimieren", "archivo comprimido", "fichier",
           "how do I fix my car", "qwzxv nonsense",
           # the Obsidian help vault's (six languages, linked notes)
           "internal links", "graph view", "canvas", "daily notes plugin", "sync settings",
           "Vorlagen", "链接 笔记"]
FILTERS = [[], ["--lang", "en"], ["--lang", "zh"], ["--folder", "tldr/pages/common"],
           ["--tags", "x"], ["--where", "exists(title)"], ["-n", "30"], ["--heading", "tar"]]


def env_of(d, nodaemon):
    e = dict(os.environ, TROVE_INDEX=d + "/index.db", TROVE_CONFIG_DIR=d + "/config",
             XDG_CONFIG_HOME=d + "/xdg-config", XDG_RUNTIME_DIR=d + "/run",
             XDG_CACHE_HOME=d + "/cache-same", NO_COLOR="1")
    if nodaemon:
        e["TROVE_NO_DAEMON"] = "1"
    return e


def cases():
    for q in QUERIES:
        for mode in ([], ["--no-vector"]):
            yield [q] + mode
    for f in FILTERS[1:]:
        for q in QUERIES[:6] + QUERIES[28:30] + QUERIES[20:22]:
            for mode in ([], ["--no-vector"]):
                yield [q] + mode + f


def digest(b, d, args, nodaemon):
    r = subprocess.run([b, "search", "--json"] + args, capture_output=True,
                       env=env_of(d, nodaemon))
    return hashlib.md5(r.stdout + b"|%d|" % r.returncode + r.stderr).hexdigest()


def run_pass(pairs, nodaemon, repeat=1):
    daemons = []
    try:
        if not nodaemon:
            for b, d in pairs:
                os.makedirs(d + "/run", exist_ok=True)
                subprocess.run([b, "daemon", "--detach", "--idle", "600"], env=env_of(d, False),
                               capture_output=True, check=True)
                daemons.append((b, d))
            time.sleep(0.5)
        n = bad = 0
        for args in [a for _ in range(1 if nodaemon else repeat) for a in cases()]:
            outs = [digest(b, d, args, nodaemon) for b, d in pairs]
            n += 1
            if outs[0] != outs[1]:
                bad += 1
                print("DIFF %s %s" % ("cold" if nodaemon else "daemon", args))
        return n, bad
    finally:
        for b, d in daemons:
            subprocess.run([b, "daemon", "stop"], env=env_of(d, False), capture_output=True)


def main():
    argv = sys.argv[1:]
    repeat = 1
    if "--repeat" in argv:
        k = argv.index("--repeat")
        repeat = int(argv[k + 1])
        del argv[k:k + 2]
    args = [a for a in argv if a != "--no-daemon-pass"]
    unknown = [a for a in args if a.startswith("-")]
    if len(args) != 4 or unknown:
        sys.exit(__doc__.split("\n\n")[1].strip() if not unknown
                 else "search_same: unknown option %s" % unknown[0])
    ob, od, nb, nd = args
    pairs = [(os.path.abspath(ob), od), (os.path.abspath(nb), nd)]
    n = bad = 0
    for nodaemon in ([True] if "--no-daemon-pass" in sys.argv else [True, False]):
        a, b = run_pass(pairs, nodaemon, repeat)
        n += a
        bad += b
    print("%d of %d identical" % (n - bad, n))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
