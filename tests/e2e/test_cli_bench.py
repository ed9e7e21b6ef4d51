"""The bench scripts run end to end against the real binary: a tiny BEIR set
with known answers checks beir_eval.py's vault, id mapping and metrics, and
qmd_eval.py --check holds the issue's qmd-notes target."""
import json
import subprocess
import sys

import pytest

from conftest import REPO, need_shared, trove_bin

PY = "/usr/bin/python3"


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n"
                            for r in rows))


@pytest.fixture
def tiny_beir(tmp_path):
    d = tmp_path / "tiny"
    (d / "qrels").mkdir(parents=True)
    write_jsonl(d / "corpus.jsonl", [
        {"_id": "d1", "title": "Apple orchards", "text": "Harvest time in "
         "the orchard: picking apples in late September."},
        {"_id": "d2", "title": "", "text": "A banana plantation needs heat "
         "and a lot of water."},
        {"_id": "x/y.1", "title": "Stars", "text": "A quasar is an active "
         "galactic nucleus."},
        {"_id": ".hidden-id", "title": "Tea", "text": "Oolong tea is "
         "partially oxidised."},
    ])
    write_jsonl(d / "queries.jsonl", [
        {"_id": "q1", "text": "orchard harvest"},
        {"_id": "q2", "text": "plantation"},
        {"_id": "q3", "text": "quasar"},
        {"_id": "q4", "text": "oolong"},
        {"_id": "q5", "text": "no relevant document judged"},
    ])
    (d / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n"
        "q1\td1\t1\nq2\td2\t2\nq3\tx/y.1\t1\nq4\t.hidden-id\t1\nq5\td1\t0\n")
    return d


def test_beir_eval_on_known_answers(trove, tiny_beir, tmp_path):
    # (the trove fixture fails early, with a clear message, without a binary)
    out = tmp_path / "out.json"
    p = subprocess.run([PY, str(REPO / "bench" / "beir_eval.py"),
                        str(tiny_beir), "--trove", str(trove_bin()),
                        "--work", str(tmp_path / "work"), "--json", str(out)],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    r = json.loads(out.read_text())
    assert r["documents"] == 4
    assert r["queries"] == 4
    assert r["qrels_queries_without_relevant"] == 1
    assert r["errors"] == 0 and r["queries_without_results"] == 0
    assert r["ndcg@10"] == pytest.approx(1.0)
    assert r["recall@10"] == pytest.approx(1.0)
    assert r["mrr@10"] == pytest.approx(1.0)
    assert r["latency_ms"]["p50"] > 0
    assert "nDCG@10" in p.stdout and "p95 ms" in p.stdout


def test_beir_metric_definitions():
    sys.path.insert(0, str(REPO / "bench"))
    try:
        import beir_eval as b
    finally:
        sys.path.pop(0)
    # relevant doc at rank 2 of 2: DCG 1/log2(3), ideal 1
    nd, rc, mrr = b.score_query(["a", "b"], {"b": 1}, 10)
    assert nd == pytest.approx(0.6309297535714575)
    assert (rc, mrr) == (1.0, 0.5)
    # graded: (2 + 3/log2(4)) / (3 + 2/log2(3) + 1/log2(4))
    nd, rc, mrr = b.score_query(["a", "b", "c"], {"a": 2, "c": 3, "d": 1}, 10)
    assert nd == pytest.approx(3.5 / (3 + 2 / 1.584962500721156 + 0.5))
    assert rc == pytest.approx(2 / 3) and mrr == 1.0
    # cut-off: a relevant document at rank 11 counts for nothing
    ranked = ["n%d" % i for i in range(10)] + ["r"]
    assert b.score_query(ranked, {"r": 1}, 10) == (0.0, 0.0, 0.0)
    for doc_id in ("d1", "x/y.1", ".hidden", "a b%c", "中文"):
        name = b.id_to_filename(doc_id)
        assert "/" not in name and not name.startswith(".")
        assert b.filename_to_id("sub/" + name) == doc_id


def test_qmd_eval_meets_issue_target(trove, tmp_path):
    dataset = need_shared("eval/qmd-notes")
    out = tmp_path / "qmd.json"
    p = subprocess.run([PY, str(REPO / "bench" / "qmd_eval.py"),
                        str(dataset), "--trove", str(trove_bin()), "--check",
                        "--json", str(out)],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    r = json.loads(out.read_text())
    assert r["overall"]["queries"] == 24
    assert r["overall"]["no_results"] == 0
    assert r["overall"]["hit@3"] >= 0.9
