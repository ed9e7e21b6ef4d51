"""`trove model pull|list|use` against a local HTTP server (127.0.0.1 only).

The server imitates the Hugging Face hub: /ORG/REPO/resolve/REV/FILE answers
with a 302 to /cdn/..., which serves the bytes and honours Range requests
(206 + Content-Range). Per-file modes make it misbehave the ways real
downloads do: cut the connection half way, stall, ignore Range, answer a
Range with the wrong Content-Range. Stalls are bounded by
TROVE_FETCH_STALL_SECONDS=1 so every test finishes in seconds.
"""
import hashlib
import http.server
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest

from conftest import trove_bin

STALL = {"TROVE_FETCH_STALL_SECONDS": "1"}


class Hub:
    def __init__(self):
        self.files = {}      # "/org/repo/resolve/rev/file" -> bytes
        self.modes = {}      # same key -> mode name
        self.log = []        # (path, Range header or None)
        self.seen = {}       # key -> number of body requests served
        self.release = threading.Event()
        hub = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_GET(self):
                hub.log.append((self.path, self.headers.get("Range")))
                if self.path.startswith("/cdn/"):
                    return hub.serve(self, self.path[4:].split("?")[0])
                if self.path in hub.files or hub.modes.get(self.path) == "stall_headers":
                    # the hub redirects every resolve to its CDN
                    self.send_response(302)
                    self.send_header("Location", "/cdn" + self.path)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                self.send_response(404)
                self.send_header("Content-Length", "9")
                self.end_headers()
                self.wfile.write(b"not found")

        self.handler = Handler
        self.port = 0
        self.start()
        self.endpoint = "http://127.0.0.1:%d" % self.port

    def start(self):
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), self.handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def restart(self, down_s):
        """Stop listening (connections are refused), and listen again on the
        same port after down_s seconds: a server restart."""
        self.server.shutdown()
        self.server.server_close()
        self.restarted = threading.Timer(down_s, self.start)
        self.restarted.start()

    def add(self, key, data, mode="normal"):
        self.files[key] = data
        self.modes[key] = mode

    def serve(self, h, key):
        mode = self.modes.get(key, "normal")
        if mode == "stall_headers":
            self.release.wait(15)
            return
        data = self.files[key]
        n = self.seen.get(key, 0)
        self.seen[key] = n + 1
        rng = h.headers.get("Range")
        start = 0
        if rng and mode != "ignore_range":
            start = int(rng.split("=")[1].split("-")[0])
        if mode == "bad_range" and rng:
            # claims a 206 but starts at 0, not where it was asked to
            h.send_response(206)
            h.send_header("Content-Range", "bytes 0-%d/%d" % (len(data) - 1, len(data)))
            h.send_header("Content-Length", str(len(data)))
            h.end_headers()
            h.wfile.write(data)
            return
        if start >= len(data) and rng:
            h.send_response(416)
            h.send_header("Content-Range", "bytes */%d" % len(data))
            h.send_header("Content-Length", "0")
            h.end_headers()
            return
        body = data[start:]
        if start and rng:
            h.send_response(206)
            h.send_header("Content-Range", "bytes %d-%d/%d" % (start, len(data) - 1, len(data)))
        else:
            h.send_response(200)
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        first = n == 0
        if mode == "restart" and first:
            # half the body, then the server goes away for 0.3 s
            h.wfile.write(body[:len(body) // 2])
            h.wfile.flush()
            self.restart(0.3)
            h.close_connection = True
            try:
                h.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            return
        if mode == "slow":
            # a little, then nothing until released: a download to interrupt
            h.wfile.write(body[:len(body) // 4])
            h.wfile.flush()
            self.release.wait(30)
            h.close_connection = True
            return
        if (mode == "cut" and first) or mode in ("stall_once", "stall_always"):
            if mode == "stall_once" and not first:
                h.wfile.write(body)
                return
            half = len(body) // 2
            h.wfile.write(body[:half])
            h.wfile.flush()
            if mode.startswith("stall"):
                self.release.wait(15)   # hold the connection open, silent
            h.close_connection = True
            try:
                h.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            return
        h.wfile.write(body)

    def ranges(self, key):
        return [r for p, r in self.log if p == "/cdn" + key]

    def close(self):
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def hub():
    h = Hub()
    yield h
    h.close()


def gguf(n, seed=1):
    """n bytes that start as a GGUF file does: what `model pull` checks."""
    return b"GGUF\x03\x00\x00\x00" + blob(n - 8, seed)


def safetensors(n, seed=2):
    """n bytes with a safetensors header (length, then a JSON object)."""
    header = b'{"__metadata__":{}}'
    return len(header).to_bytes(8, "little") + header + blob(n - 8 - len(header), seed)


def blob(n, seed=1):
    out = bytearray()
    x = seed
    while len(out) < n:
        x = (x * 6364136223846793005 + 1442695040888963407) % (1 << 64)
        out += x.to_bytes(8, "little")
    return bytes(out[:n])


def models_dir(trove):
    return trove.home / "xdg-data" / "trove" / "models"


def pull(trove, hub, *args, env=None, timeout=60):
    e = {"TROVE_HF_ENDPOINT": hub.endpoint, **STALL}
    e.update(env or {})
    return trove("model", "pull", *args, env=e, timeout=timeout)


KEY = "/org/repo/resolve/main/m.gguf"


def test_pull_hf_file_follows_the_redirect_and_checks_sha256(trove, hub):
    data = gguf(300_000)
    hub.add(KEY, data)
    sha = hashlib.sha256(data).hexdigest()
    r = pull(trove, hub, "hf:org/repo/m.gguf", "--sha256", sha, "--json")
    assert r.rc == 0, r
    doc = r.json()
    dest = models_dir(trove) / "m.gguf"
    assert doc["path"] == str(dest) and doc["fetched"] == 1
    assert doc["files"][0]["sha256_checked"] is True
    assert dest.read_bytes() == data
    assert not Path(str(dest) + ".part").exists()
    # plain lines (stderr is not a terminal), ending at 100%
    assert "100%" in r.err.splitlines()[-1] or "100%" in r.err, r
    assert "\r" not in r.err
    # a second pull finds it there and fetches nothing
    r = pull(trove, hub, "hf:org/repo/m.gguf")
    assert r.rc == 0 and r.out.startswith("already present"), r


def test_pull_model2vec_folder_and_use_it(trove, hub):
    files = {"config.json": b'{"normalize": true}', "tokenizer.json": b"{}",
             "model.safetensors": safetensors(50_000)}
    for name, data in files.items():
        hub.add("/org/potion-x/resolve/main/" + name, data)
    r = pull(trove, hub, "hf:org/potion-x")
    assert r.rc == 0, r
    folder = models_dir(trove) / "potion-x"
    for name, data in files.items():
        assert (folder / name).read_bytes() == data
    # the folder's name is enough to select it
    trove.ok("model", "use", "potion-x")
    cfg = (trove.config / "config.yaml").read_text()
    assert 'embed_model: "potion-x"' in cfg
    doc = trove.ok("model", "use", "--json").json()
    assert doc == {"version": 1, "name": "potion-x", "path": str(folder), "spec": "potion-x",
                   "source": "config.yaml"}
    listing = trove.ok("model", "list", "--json").json()
    assert {"name": "potion-x", "path": str(folder)} in listing["other"]
    assert listing["active"]["name"] == "potion-x"


def test_hf_repo_without_model2vec_files_explains(trove, hub):
    r = pull(trove, hub, "hf:org/gguf-only")
    assert r.rc == 1
    assert "HTTP 404" in r.err and "hf:ORG/REPO/FILE.gguf" in r.err, r


def test_cut_transfer_resumes_with_range(trove, hub):
    data = gguf(400_000, 3)
    hub.add(KEY, data, "cut")
    r = pull(trove, hub, "hf:org/repo/m.gguf")
    assert r.rc == 0, r
    assert (models_dir(trove) / "m.gguf").read_bytes() == data
    ranges = hub.ranges(KEY)
    assert ranges[0] is None and ranges[1] == "bytes=%d-" % (len(data) // 2), hub.log
    assert "transfer cut" in r.err and "resuming" in r.err, r


def test_partial_file_from_an_earlier_run_is_resumed(trove, hub):
    data = gguf(200_000, 4)
    hub.add(KEY, data)
    d = models_dir(trove)
    d.mkdir(parents=True)
    (d / "m.gguf.part").write_bytes(data[:123_456])
    r = pull(trove, hub, "hf:org/repo/m.gguf", "--sha256", hashlib.sha256(data).hexdigest())
    assert r.rc == 0, r
    assert hub.ranges(KEY) == ["bytes=123456-"]
    assert (d / "m.gguf").read_bytes() == data
    assert not (d / "m.gguf.part").exists()


def test_server_ignoring_range_restarts_from_zero(trove, hub):
    data = gguf(100_000, 5)
    hub.add(KEY, data, "ignore_range")
    d = models_dir(trove)
    d.mkdir(parents=True)
    (d / "m.gguf.part").write_bytes(b"x" * 5000)   # not a prefix of the file
    r = pull(trove, hub, "hf:org/repo/m.gguf")
    assert r.rc == 0, r
    assert (d / "m.gguf").read_bytes() == data
    assert "ignored the range request" in r.err, r


def test_wrong_content_range_restarts_without_range(trove, hub):
    data = gguf(100_000, 6)
    hub.add(KEY, data, "bad_range")
    d = models_dir(trove)
    d.mkdir(parents=True)
    (d / "m.gguf.part").write_bytes(data[:40_000])
    r = pull(trove, hub, "hf:org/repo/m.gguf")
    assert r.rc == 0, r
    assert hub.ranges(KEY) == ["bytes=40000-", None]
    assert (d / "m.gguf").read_bytes() == data


def test_complete_part_of_unknown_size_gets_416_and_is_fetched_again(trove, hub):
    data = gguf(30_000, 11)
    hub.add(KEY, data)
    d = models_dir(trove)
    d.mkdir(parents=True)
    (d / "m.gguf.part").write_bytes(b"y" * len(data))   # right length, wrong bytes
    r = pull(trove, hub, "hf:org/repo/m.gguf")
    assert r.rc == 0, r
    assert hub.ranges(KEY) == ["bytes=%d-" % len(data), None]
    assert (d / "m.gguf").read_bytes() == data


def test_wrong_checksum_is_refused_and_discarded(trove, hub):
    data = blob(50_000, 7)
    hub.add(KEY, data)
    bad = hashlib.sha256(b"something else").hexdigest()
    r = pull(trove, hub, "hf:org/repo/m.gguf", "--sha256", bad)
    assert r.rc == 1
    assert "checksum mismatch" in r.err and bad in r.err
    assert hashlib.sha256(data).hexdigest() in r.err
    d = models_dir(trove)
    assert not (d / "m.gguf").exists() and not (d / "m.gguf.part").exists()


def test_catalogue_checksums_are_enforced(trove, hub):
    # same size as the real potion-base-8M config.json, other bytes
    rev = "bf8b056651a2c21b8d2565580b8569da283cab23"
    hub.add("/minishlab/potion-base-8M/resolve/%s/config.json" % rev, b"{" + b" " * 200 + b"}")
    r = pull(trove, hub, "potion-base-8M")
    assert r.rc == 1
    assert "checksum mismatch" in r.err and "2a6ac0e9aaa356a6" in r.err, r
    assert "3 of the 3 files" in r.err and "fetch them by hand" in r.err, r
    assert not (trove.config / "config.yaml").exists()   # embed_model not set
    # and a size that does not match is refused before it is written
    hub.add("/minishlab/potion-base-8M/resolve/%s/config.json" % rev, b"{}")
    r = pull(trove, hub, "potion-base-8M")
    assert r.rc == 1 and "the server has 2 bytes, expected 202" in r.err, r


def test_404_fails_at_once_and_says_what_to_fetch(trove, hub):
    r = pull(trove, hub, "hf:org/repo/missing.gguf")
    assert r.rc == 1
    url = hub.endpoint + "/org/repo/resolve/main/missing.gguf"
    dest = models_dir(trove) / "missing.gguf"
    assert "HTTP 404" in r.err and url in r.err and "save it as %s" % dest in r.err, r
    assert not dest.exists() and not Path(str(dest) + ".part").exists()


def unused_port():
    """A loopback port where nothing listens, and the socket holding it
    (bound, never listening: a connection is refused, and no parallel test
    can take the port until the caller closes it)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    return s.getsockname()[1], s


def test_offline_fails_at_once(trove):
    port, s = unused_port()
    t = time.monotonic()
    r = trove("model", "pull", "bge-small-en-v1.5",
              env={"TROVE_HF_ENDPOINT": "http://127.0.0.1:%d" % port})
    s.close()
    assert r.rc == 1
    assert "offline?" in r.err and "bge-small-en-v1.5-q8_0.gguf" in r.err, r
    assert "retrying" not in r.err
    assert time.monotonic() - t < 30


def test_stall_is_detected_and_resumed(trove, hub):
    data = gguf(80_000, 8)
    hub.add(KEY, data, "stall_once")
    r = pull(trove, hub, "hf:org/repo/m.gguf")
    assert r.rc == 0, r
    assert "stalled" in r.err, r
    assert (models_dir(trove) / "m.gguf").read_bytes() == data
    assert hub.ranges(KEY)[1] == "bytes=%d-" % (len(data) // 2)


def test_a_server_that_keeps_stalling_fails_and_keeps_the_part(trove, hub):
    data = gguf(80_000, 9)
    hub.add(KEY, data, "stall_always")
    r = pull(trove, hub, "hf:org/repo/m.gguf", env={"TROVE_FETCH_STALL_SECONDS": "1"})
    assert r.rc == 1
    assert "no data for 1 s" in r.err and "run the same command again" in r.err, r
    assert r.err.count("retrying") == 4, r   # each try made progress, then gave up
    part = models_dir(trove) / "m.gguf.part"
    kept = part.stat().st_size
    assert 0 < kept < len(data)
    assert part.read_bytes() == data[:kept]
    # the server recovers: the next run picks up where the part ends
    hub.modes[KEY] = "normal"
    r = pull(trove, hub, "hf:org/repo/m.gguf")
    assert r.rc == 0, r
    assert hub.ranges(KEY)[-1] == "bytes=%d-" % kept
    assert (models_dir(trove) / "m.gguf").read_bytes() == data


def test_a_server_that_never_answers_times_out(trove, hub):
    hub.modes[KEY] = "stall_headers"
    r = pull(trove, hub, "hf:org/repo/m.gguf", timeout=30)
    assert r.rc == 1 and "no data for 1 s" in r.err, r


def test_url_pull(trove, hub):
    data = gguf(10_000, 10)
    hub.add("/files/x.gguf", data)
    r = trove("model", "pull", hub.endpoint + "/cdn/files/x.gguf?download=true", env=STALL)
    assert r.rc == 0, r
    assert (models_dir(trove) / "x.gguf").read_bytes() == data


def test_bad_specs_are_usage_errors(trove):
    for spec in ("hf:org", "hf:org/../x", "hf:o/r/../../etc/passwd", "no-such-model",
                 "https://example.com/"):
        r = trove("model", "pull", spec)
        assert r.rc == 2, r
    r = trove("model", "pull", "hf:org/repo/m.gguf", "--sha256", "abc")
    assert r.rc == 2 and "64 hex digits" in r.err


def _install_fake(trove, entry):
    """Files of the right sizes where the catalogue entry installs (sparse)."""
    d = models_dir(trove)
    if entry["format"] == "gguf":
        p = Path(entry["path"])
        p.parent.mkdir(parents=True, exist_ok=True)
        with open(p, "wb") as f:
            f.write(gguf(64))
            f.truncate(entry["size"] or 64)
        return p
    return d


def test_list_shows_catalogue_default_installed_and_active(trove):
    doc = trove.ok("model", "list", "--json").json()
    names = [m["name"] for m in doc["models"]]
    assert doc["default"] == "potion-multilingual-128M" and names[0] == doc["default"]
    assert {"potion-base-8M", "bge-small-en-v1.5", "multilingual-e5-small", "bge-m3",
            "bge-reranker-v2-m3"} <= set(names)
    assert doc["active"] is None
    assert doc["models_dir"] == str(models_dir(trove))
    bge = next(m for m in doc["models"] if m["name"] == "bge-small-en-v1.5")
    assert bge["dim"] == 384 and bge["size"] == 36806944 and bge["sha256_pinned"]
    assert bge["installed"] is False and bge["kind"] == "embedding"
    assert any(m["kind"] == "reranker" for m in doc["models"])
    _install_fake(trove, bge)
    trove.ok("model", "use", "bge-small-en-v1.5")
    doc = trove.ok("model", "list", "--json").json()
    bge = next(m for m in doc["models"] if m["name"] == "bge-small-en-v1.5")
    assert bge["installed"] and bge["active"]
    assert doc["active"]["source"] == "config.yaml"
    text = trove.ok("model", "list").out
    assert "* potion-multilingual-128M" in text and "installed, active" in text


def test_use_precedence_and_paths(trove, tmp_path):
    gguf = tmp_path / "my model.gguf"
    gguf.write_bytes(b"GGUF\x03\x00\x00\x00")
    folder = tmp_path / "m2v"
    folder.mkdir()
    (folder / "model.safetensors").write_bytes(b"x")
    # a path is stored absolute
    trove.ok("model", "use", str(gguf))
    assert trove.ok("model", "use", "--json").json()["path"] == str(gguf)
    # the environment overrides config.yaml
    r = trove.ok("model", "use", "--json", env={"TROVE_EMBED_MODEL": str(folder)})
    assert r.json()["source"] == "TROVE_EMBED_MODEL" and r.json()["path"] == str(folder)
    # what does not exist is refused and config.yaml is left alone
    r = trove("model", "use", str(tmp_path / "nope.gguf"))
    assert r.rc == 1 and "nope.gguf" in r.err
    empty = tmp_path / "empty"
    empty.mkdir()
    r = trove("model", "use", str(empty))
    assert r.rc == 1 and "not a model2vec model" in r.err
    assert trove.ok("model", "use", "--json").json()["path"] == str(gguf)
    # a catalogue model not pulled yet is accepted with a warning
    r = trove.ok("model", "use", "potion-base-8m")
    assert "trove model pull potion-base-8M" in r.err
    r = trove("model", "use")
    assert r.rc == 1 and "not installed" in r.err and "config.yaml" in r.err
    trove.ok("model", "use", "--unset")
    assert "no embedding model configured" in trove.ok("model", "use").out


def test_pulling_the_first_embedding_model_makes_it_active(trove, hub):
    # already on disk with the catalogue's sizes: the pull has nothing to do
    d = models_dir(trove) / "potion-base-8M"
    d.mkdir(parents=True)
    for name, size in (("config.json", 202), ("tokenizer.json", 683666),
                       ("model.safetensors", 30236760)):
        with open(d / name, "wb") as f:
            f.write(safetensors(64) if name.endswith(".safetensors") else b"{}")
            f.truncate(size)
    r = pull(trove, hub, "potion-base-8M", "--json")
    assert r.rc == 0, r
    assert r.json()["fetched"] == 0 and r.json()["embed_model_set"] is True
    assert trove.ok("model", "use", "--json").json()["name"] == "potion-base-8M"
    assert hub.log == []


def test_libcurl_is_not_linked_into_every_command():
    out = subprocess.run(["ldd", str(trove_bin())], capture_output=True, text=True).stdout
    assert "libcurl" not in out, out


@pytest.fixture(scope="module")
def tiny_models(tmp_path_factory):
    from model_util import make_models
    return make_models(tmp_path_factory.mktemp("tiny-models"))


def test_embed_and_search_follow_the_configured_model(indexed, tiny_models):
    """embed/vsearch/search/status resolve the model through models_resolve():
    a name in the models folder set by `trove model use`, the environment
    over config.yaml, and the pull hint for a catalogue model not pulled."""
    import shutil
    trove, vault = indexed
    d = models_dir(trove)
    d.mkdir(parents=True)
    shutil.copy(tiny_models / "bert_f32.gguf", d / "mini.gguf")
    trove.ok("model", "use", "mini.gguf")
    r = trove.ok("embed")
    assert "embedded" in r.out, r
    # its vectors answer (a random-weight model: every note is below its
    # noise floor, so the channel's state says it, not the results)
    doc = trove.ok("vsearch", "sourdough bread", "--json", "--explain").json()
    assert doc["vector"]["state"] == "used" and doc["vector"]["floor"] is not None, doc
    assert "mini.gguf" in trove.ok("status").out
    # the environment wins over config.yaml: that model has no vectors yet
    other = {"TROVE_EMBED_MODEL": str(tiny_models / "bert256_f32.gguf")}
    r = trove("vsearch", "sourdough", env=other)
    assert r.rc == 1 and "no embeddings of this model" in r.err, r
    # a catalogue model that is not there says how to get it
    r = trove("embed", "--model", "potion-base-8M")
    assert r.rc == 1 and "trove model pull potion-base-8M" in r.err, r


# ---- what the pull checks, how it retries, what a failure leaves -------------

def test_a_server_restart_mid_transfer_is_retried_with_backoff(trove, hub):
    data = gguf(300_000, 12)
    hub.add(KEY, data, "restart")
    r = pull(trove, hub, "hf:org/repo/m.gguf")
    assert r.rc == 0, r
    assert (models_dir(trove) / "m.gguf").read_bytes() == data
    assert "retrying (1/" in r.err and "resuming" in r.err, r
    assert hub.ranges(KEY)[-1] == "bytes=%d-" % (len(data) // 2), hub.log


def test_a_wrong_sha256_downloads_once_even_after_a_resume(trove, hub):
    data = gguf(120_000, 13)
    hub.add(KEY, data)
    d = models_dir(trove)
    d.mkdir(parents=True)
    (d / "m.gguf.part").write_bytes(data[:50_000])   # left by an earlier run
    bad = hashlib.sha256(b"not it").hexdigest()
    r = pull(trove, hub, "hf:org/repo/m.gguf", "--sha256", bad)
    assert r.rc == 1 and "checksum mismatch" in r.err, r
    assert "earlier run" in r.err, r
    assert hub.seen[KEY] == 1, hub.log              # one transfer, not two
    assert not (d / "m.gguf.part").exists() and not (d / "m.gguf").exists()


def test_offline_names_every_file_and_leaves_no_folder(trove):
    port, s = unused_port()
    endpoint = "http://127.0.0.1:%d" % port
    r = trove("model", "pull", "hf:org/potion-x", env={"TROVE_HF_ENDPOINT": endpoint, **STALL})
    s.close()
    assert r.rc == 1 and "offline?" in r.err, r
    folder = models_dir(trove) / "potion-x"
    for name in ("config.json", "tokenizer.json", "model.safetensors"):
        assert "%s/org/potion-x/resolve/main/%s" % (endpoint, name) in r.err, r
        assert str(folder / name) in r.err, r
    assert "3 of the 3 files" in r.err, r
    assert not folder.exists() and not models_dir(trove).exists()


def test_a_404_in_a_folder_pull_leaves_no_empty_folder(trove, hub):
    hub.add("/org/half/resolve/main/config.json", b'{"normalize": true}')
    r = pull(trove, hub, "hf:org/half")
    assert r.rc == 1 and "HTTP 404" in r.err, r
    folder = models_dir(trove) / "half"
    # config.json arrived and stays for the next run; the two others are named
    assert (folder / "config.json").exists()
    assert "2 of the 3 files" in r.err and "tokenizer.json" in r.err, r
    r = pull(trove, hub, "hf:org/gguf-only")
    assert r.rc == 1
    assert not (models_dir(trove) / "gguf-only").exists()


@pytest.mark.parametrize("name,data,why", [
    ("model.safetensors", safetensors(40_000), "safetensors file, not a model on its own"),
    ("page.gguf", b"<!DOCTYPE html><html>sign in</html>" + b" " * 5000, "not a GGUF model"),
    ("empty.gguf", b"", "empty"),
], ids=["lone-safetensors", "html-page", "empty"])
def test_a_file_that_is_not_a_model_is_refused(trove, hub, name, data, why):
    hub.add("/files/" + name, data)
    r = trove("model", "pull", hub.endpoint + "/cdn/files/" + name, "--json", env=STALL)
    assert r.rc == 1, r
    assert why in r.err and "not a model trove can use" in r.err, r
    assert "model use" not in r.err and r.out == "", r
    assert not (models_dir(trove) / name).exists()
    assert not (models_dir(trove) / (name + ".part")).exists()


def test_a_folder_without_its_tokenizer_is_refused(trove, hub):
    hub.add("/org/broken/resolve/main/config.json", b"{}")
    hub.add("/org/broken/resolve/main/tokenizer.json", b"<html>404</html>")
    hub.add("/org/broken/resolve/main/model.safetensors", safetensors(20_000))
    r = pull(trove, hub, "hf:org/broken")
    assert r.rc == 1 and "tokenizer.json is not a tokenizer" in r.err, r
    assert not (models_dir(trove) / "broken").exists()


def test_model_use_checks_the_model(trove, tmp_path):
    lone = tmp_path / "model.safetensors"
    lone.write_bytes(safetensors(1000))
    r = trove("model", "use", str(lone))
    assert r.rc == 1 and "safetensors file, not a model on its own" in r.err, r
    folder = tmp_path / "m2v"
    folder.mkdir()
    (folder / "model.safetensors").write_bytes(safetensors(1000))
    (folder / "config.json").write_text("{}")
    r = trove("model", "use", str(folder))
    assert r.rc == 1 and "tokenizer.json: missing" in r.err, r
    assert not (trove.config / "config.yaml").exists()
    (folder / "tokenizer.json").write_text("{}")
    trove.ok("model", "use", str(folder))


def test_ctrl_c_says_what_was_kept_and_the_next_run_resumes(trove, hub):
    import signal
    data = gguf(400_000, 14)
    hub.add(KEY, data, "slow")
    part = models_dir(trove) / "m.gguf.part"
    env = dict(trove.env, TROVE_HF_ENDPOINT=hub.endpoint, **STALL)
    env["TROVE_FETCH_STALL_SECONDS"] = "20"
    p = subprocess.Popen([str(trove_bin()), "model", "pull", "hf:org/repo/m.gguf"], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=str(trove.home))
    deadline = time.monotonic() + 30
    while not (part.exists() and part.stat().st_size > 0) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert part.exists() and part.stat().st_size > 0
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=30)
    err = err.decode()
    assert p.returncode == 130, err
    kept = part.stat().st_size
    assert "interrupted" in err and str(part) in err and str(kept) in err, err
    assert "resumes" in err and "AddressSanitizer" not in err, err
    hub.release.set()
    hub.modes[KEY] = "normal"
    r = pull(trove, hub, "hf:org/repo/m.gguf")
    assert r.rc == 0, r
    assert hub.ranges(KEY)[-1] == "bytes=%d-" % kept
    assert (models_dir(trove) / "m.gguf").read_bytes() == data


def test_pull_json_is_a_versioned_document(trove, hub):
    hub.add(KEY, gguf(5000, 15))
    doc = pull(trove, hub, "hf:org/repo/m.gguf", "--json").json()
    assert doc["version"] == 1 and doc["format"] == "gguf" and doc["fetched"] == 1
    assert doc["files"][0]["url"].endswith("/org/repo/resolve/main/m.gguf")
