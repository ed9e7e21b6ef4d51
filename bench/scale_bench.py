#!/usr/bin/env python3
"""Helper of bench/scale_bench.sh: builds a vault of N notes, times searches.

usage: scale_bench.py gen SHARED_CORPORA VAULT N [SEED [PART/PARTS]]
       scale_bench.py lat TROVE RUNS QUERIES_FILE ARGS...   (one line of JSON)
       scale_bench.py queries                                (the fixed query set)

gen: every note is made by recombining real notes of the shared corpora:
the tldr pages (every language of the tarball), the Obsidian help vault
(six languages) and the Chinese CS notes. A note draws one source note
uniformly from the pool of all of them (so languages come in the corpora's
proportions), takes its first paragraphs, then 2-5 sections (a heading and
a few paragraphs) from other source notes of the same language, and links
to 0-3 other generated notes by their names ([[NAME]]). Its title joins
two source titles and its number; file names are unique, 1,000 notes a
folder. Each note depends only on (SEED, its number), so the vault is the
same on every run and is written in one pass without holding it in memory.
PART/PARTS (e.g. 0/2 and 1/2, run side by side) writes only the folders
whose number is PART modulo PARTS: the parts together are the same vault.

lat: runs `TROVE ARGS... --json -n 10 -- QUERY` as a process for every query
of QUERIES_FILE, one warm-up pass then RUNS passes, and prints wall p50/p95,
CPU (user + system, from wait4) p50, peak RSS of the processes and how many
queries found nothing. SCALE_WARM=FILE: the warm-up pass runs FILE's
queries instead (a daemon then meets each measured query first there).
"""
import json
import os
import random
import re
import sys
import tarfile
import time
from pathlib import Path

# 20 queries: tldr tasks and commands, Obsidian help topics, Chinese CS
# notes, other languages of the corpora, and one generated title's words.
QUERIES = [
    "extract a tar archive", "git commit", "docker run", "list files sorted by size",
    "kill a process by name", "convert video to gif", "show disk usage",
    "download a file with curl", "create a python virtual environment",
    "internal links", "sync settings", "publish your site", "canvas",
    "链表", "二叉树 遍历", "斐波那契数列", "压缩文件",
    "Datei kopieren", "comprimir archivo", "ファイル",
]


def paragraphs(text):
    """Blank-line separated blocks; a fenced code block stays one block."""
    out, cur, fence = [], [], False
    for line in text.split("\n"):
        if line.lstrip().startswith(("```", "~~~")):
            fence = not fence
        if not fence and not line.strip():
            if cur:
                out.append("\n".join(cur))
            cur = []
        else:
            cur.append(line)
    if cur and not fence:
        out.append("\n".join(cur))
    return [p for p in out if p.strip()]


def split_note(text):
    """(title, first paragraphs, [(heading, paragraphs)]) of a markdown note."""
    if text.startswith("---\n"):                     # drop frontmatter
        end = text.find("\n---", 4)
        if end > 0:
            text = text[end + 4:]
    title, head, sections, cur = None, [], [], None
    for p in paragraphs(text):
        m = re.match(r"^(#{1,6})\s+(.*)", p)
        if m and "\n" not in p:
            if title is None and m.group(1) == "#":
                title = m.group(2).strip()
                continue
            cur = (m.group(2).strip(), [])
            sections.append(cur)
            continue
        (cur[1] if cur else head).append(p)
    sections = [s for s in sections if s[1]]
    return title, head, sections


def load_pool(corpora):
    """Source notes, grouped by language: {lang: [(title, head, sections)]},
    and the flat list of (lang, index) in the corpora's proportions."""
    groups = {}

    def add(lang, text, fallback):
        title, head, sections = split_note(text)
        if not head and not sections:
            return
        if not sections:                              # tldr: examples become sections
            sections = [(None, head[i:i + 2]) for i in range(1, len(head), 2)]
            head = head[:1]
        groups.setdefault(lang, []).append((title or fallback, head, sections))

    pages = []                    # read in archive order (a gzip stream), then sort
    with tarfile.open(corpora / "tldr-pages.tar.gz", "r:gz") as tf:
        for m in tf:
            parts = m.name.split("/")
            if not m.isfile() or not m.name.endswith(".md") or len(parts) < 3:
                continue
            if not parts[1].startswith("pages"):
                continue
            lang = "tldr-" + (parts[1].split(".", 1)[1] if "." in parts[1] else "en")
            pages.append((m.name, lang, tf.extractfile(m).read().decode("utf-8", "replace")))
    for name, lang, text in sorted(pages):
        add(lang, text, Path(name).stem)
    oh = corpora / "obsidian-help"
    for lang_dir in sorted(p for p in oh.iterdir() if p.is_dir()):
        for f in sorted(lang_dir.rglob("*.md")):
            add("help-" + lang_dir.name, f.read_text("utf-8", "replace"), f.stem)
    for f in sorted((corpora / "cs-notes-zh").glob("*.md")):
        add("cs-zh", f.read_text("utf-8", "replace"), f.stem)
    langs = sorted(groups)
    flat = [(lang, k) for lang in langs for k in range(len(groups[lang]))]
    return groups, flat


def safe(s):
    s = re.sub(r"[\x00-\x1f/\\\[\]#|^:*?\"<>`]", " ", s)
    return re.sub(r"\s+", " ", s).strip()[:60].strip() or "note"


class Gen:
    def __init__(self, corpora, n, seed):
        self.groups, self.flat = load_pool(Path(corpora))
        self.n, self.seed = n, seed

    def head(self, i):
        """The first draws of note i: its language, source and name."""
        rnd = random.Random(self.seed * 1000003 + i)
        lang, k = self.flat[rnd.randrange(len(self.flat))]
        g = self.groups[lang]
        other = g[rnd.randrange(len(g))]
        name = "%s %s %d" % (safe(g[k][0]), safe(other[0]), i)
        return rnd, lang, k, name

    def note(self, i):
        rnd, lang, k, name = self.head(i)
        g = self.groups[lang]
        title, head, sections = g[k]
        out = ["# %s\n" % name]
        out += head[:3]
        for _ in range(rnd.randint(2, 5)):
            st, _, ss = g[rnd.randrange(len(g))]
            h, ps = ss[rnd.randrange(len(ss))] if ss else (None, [])
            out.append("## %s" % (h or st))
            out += ps[:3]
        links = [self.head(rnd.randrange(self.n))[3] for _ in range(rnd.choice((0, 0, 1, 2, 3)))]
        if links:
            out.append("See also " + ", ".join("[[%s]]" % x for x in links) + ".")
        return "%04d/%s.md" % (i // 1000, name), "\n\n".join(out) + "\n"


def cmd_gen(corpora, vault, n, seed=1, part=0, parts=1):
    t0 = time.monotonic()
    gen = Gen(corpora, n, seed)
    vault = Path(vault)
    total = 0
    langs = {}
    mine = (i for f in range(part, (n + 999) // 1000, parts)
            for i in range(f * 1000, min(n, f * 1000 + 1000)))
    for i in mine:
        rel, text = gen.note(i)
        p = vault / rel
        if i % 1000 == 0:
            p.parent.mkdir(parents=True, exist_ok=True)
        data = text.encode("utf-8")
        with open(p, "wb") as f:
            f.write(data)
        total += len(data)
        lang = gen.head(i)[1]
        langs[lang] = langs.get(lang, 0) + 1
    top = sorted(langs.items(), key=lambda x: -x[1])[:6]
    print("generated %d notes, %.1f MB, in %.1f s; source pool %d notes in %d languages; "
          "most notes: %s" % (sum(langs.values()), total / 1e6, time.monotonic() - t0, len(gen.flat),
                              len(gen.groups), ", ".join("%s %d" % x for x in top)))


def pct(xs, p):
    xs = sorted(xs)
    x = (len(xs) - 1) * p / 100.0
    lo = int(x)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (x - lo)


def proc_cpu_ms(pid):
    """User + system CPU time of a running process (the daemon), in ms."""
    f = Path("/proc/%d/stat" % pid).read_text().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) * 1000.0 / os.sysconf("SC_CLK_TCK")


def cmd_lat(trove, runs, qfile, args):
    qs = [l.rstrip("\n") for l in open(qfile, encoding="utf-8") if l.strip()]
    # SCALE_WARM=FILE: the warm-up pass runs these queries instead, so a
    # daemon's measured pass meets each query for the first time (what it
    # keeps per phrase does not answer from the warm-up; session 36)
    warm = os.environ.get("SCALE_WARM")
    warm_qs = [l.rstrip("\n") for l in open(warm, encoding="utf-8") if l.strip()] if warm else qs
    walls, cpus, rss, empty = [], [], 0, 0
    dpid = int(os.environ.get("SCALE_DAEMON_PID") or 0)
    d0 = None
    for rep in range(runs + 1):
        if rep == 1 and dpid:
            d0 = proc_cpu_ms(dpid)
        for q in (warm_qs if rep == 0 else qs):
            rfd, wfd = os.pipe()
            fa = [(os.POSIX_SPAWN_DUP2, wfd, 1), (os.POSIX_SPAWN_CLOSE, rfd),
                  (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0)]
            argv = [trove] + args + ["--json", "-n", "10", "--", q]
            t = time.perf_counter()
            pid = os.posix_spawn(trove, argv, os.environ, file_actions=fa)
            os.close(wfd)
            chunks = []
            while True:
                c = os.read(rfd, 1 << 16)
                if not c:
                    break
                chunks.append(c)
            os.close(rfd)
            _, status, ru = os.wait4(pid, 0)
            wall = (time.perf_counter() - t) * 1000
            if status:
                sys.exit("%s: exit status %d" % (" ".join(argv), status))
            if rep == 0:                               # warm-up pass
                if not json.loads(b"".join(chunks)).get("results"):
                    empty += 1
                continue
            walls.append(wall)
            cpus.append((ru.ru_utime + ru.ru_stime) * 1000)
            rss = max(rss, ru.ru_maxrss)
    out = {"p50": round(pct(walls, 50), 1), "p95": round(pct(walls, 95), 1),
           "cpu50": round(pct(cpus, 50), 1), "rss_mb": round(rss / 1024.0, 1),
           "n": len(walls), "empty": empty}
    if d0 is not None:            # the daemon's CPU per request, mean
        out["daemon_cpu"] = round((proc_cpu_ms(dpid) - d0) / len(walls), 1)
    print(json.dumps(out))


def main():
    if len(sys.argv) >= 5 and sys.argv[1] == "gen":
        part, parts = (sys.argv[6].split("/") if len(sys.argv) > 6 else ("0", "1"))
        if not 0 <= int(part) < int(parts):
            sys.exit("scale_bench.py gen: PART/PARTS wants 0 <= PART < PARTS")
        cmd_gen(sys.argv[2], sys.argv[3], int(sys.argv[4]),
                int(sys.argv[5]) if len(sys.argv) > 5 else 1, int(part), int(parts))
    elif len(sys.argv) >= 5 and sys.argv[1] == "lat":
        cmd_lat(os.path.abspath(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5:])
    elif len(sys.argv) == 2 and sys.argv[1] == "queries":
        print("\n".join(QUERIES))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
