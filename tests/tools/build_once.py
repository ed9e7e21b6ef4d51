"""build_once -- make a generated test input once, share it between test
workers and runs, hand each caller a private copy.

    from build_once import build_once
    build_once("make-models", ["make_models.py", ...], build, outdir)

`build(folder)` fills an empty folder. It runs once per key (the name,
the named files' bytes under tests/tools, numpy's and sentencepiece's
versions), under a lock, into $TROVE_MODEL_CACHE (else
$XDG_CACHE_HOME/trove-dev/models, else ~/.cache/trove-dev/models, as
scripts/glove-model.sh), and the finished folder is renamed into place: a
parallel worker asking for the same key waits for the first and reuses its
result, a killed build leaves nothing that looks finished. The files are
then copied into `outdir` (a caller may add or change files there
without touching the cache)."""
import fcntl
import hashlib
import os
import shutil
import tempfile

TOOLS = os.path.dirname(os.path.abspath(__file__))


def cache_dir():
    c = os.environ.get("TROVE_MODEL_CACHE")
    if not c:
        xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(
            os.path.expanduser("~"), ".cache")
        c = os.path.join(xdg, "trove-dev", "models")
    return c


def versions():
    """The versions of the libraries the generators lean on."""
    out = []
    for mod in ("numpy", "sentencepiece"):
        try:
            out.append("%s %s" % (mod, __import__(mod).__version__))
        except ImportError:
            out.append(mod + " absent")
    return ", ".join(out)


def key_of(name, files, extra=""):
    h = hashlib.sha256(("%s\0%s\0%s" % (name, versions(), extra)).encode())
    for f in sorted(files):
        with open(os.path.join(TOOLS, f), "rb") as fh:
            h.update(f.encode() + b"\0" + fh.read())
    return "%s-%s" % (name, h.hexdigest()[:16])


def build_once(name, files, build, outdir, extra=""):
    """Fill `outdir` with the output of build(folder), made once per key."""
    cache = cache_dir()
    os.makedirs(cache, exist_ok=True)
    dest = os.path.join(cache, key_of(name, files, extra))
    if not os.path.isdir(dest):
        with open(dest + ".lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not os.path.isdir(dest):
                tmp = tempfile.mkdtemp(prefix=".building-", dir=cache)
                try:
                    build(tmp)
                    os.rename(tmp, dest)
                except BaseException:
                    shutil.rmtree(tmp, ignore_errors=True)
                    raise
    os.makedirs(outdir, exist_ok=True)
    for f in sorted(os.listdir(dest)):
        shutil.copy2(os.path.join(dest, f), os.path.join(outdir, f))
    return outdir
