"""``pysynth dup index`` / ``dup search`` (Rücklé et al. 2019): a forum's questions in faiss (+ BM25),
dense and hybrid duplicate search, from Python and the CLI."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytest.importorskip("faiss")
pytest.importorskip("torch")
pytest.importorskip("transformers")

from pysynth.dup.search import build, search  # noqa: E402
from pysynth.models.encoders import minilm_dir  # noqa: E402

FORUM = ["how do I install python on ubuntu?", "what is the capital of france?",
         "how to install python 3 in ubuntu 20.04", "which city is the capital of france", "how do I bake bread?"]
QUERIES = ["installing python on ubuntu", "france capital city", "bread baking at home"]


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    if minilm_dir() is None:
        pytest.skip("the offline MiniLM is not installed")
    out = tmp_path_factory.mktemp("dup") / "idx"
    info = build([{"id": f"q{i}", "question": q} for i, q in enumerate(FORUM)], out)
    assert info == {"docs": 5, "dim": 384, "kind": "flat", "model": "dup-minilm-wstb"}  # the shipped detector
    return out


@pytest.mark.parametrize("hybrid", [False, True])
def test_dense_and_hybrid_find_the_duplicates(index, hybrid):
    res = search(index, QUERIES, k=3, hybrid=hybrid)
    assert [r["query"] for r in res] == QUERIES
    assert [r["results"][0]["id"] for r in res] == ["q0", "q3", "q4"]
    for r in res:
        s = [x["score"] for x in r["results"]]
        assert len(s) == 3 and s == sorted(s, reverse=True)
        if hybrid:
            assert 0.0 <= min(s) and max(s) <= 1.0
    assert search(index, QUERIES, k=3, hybrid=hybrid) == res  # deterministic


def test_search_errors(index, tmp_path):
    with pytest.raises(ValueError, match="k"):
        search(index, QUERIES, k=0)
    with pytest.raises(ValueError, match="alpha"):
        search(index, QUERIES, hybrid=True, alpha=2.0)
    with pytest.raises(TypeError, match="queries"):
        search(index, "one query")
    with pytest.raises(ValueError, match="no non-empty 'question'"):
        build([{"question": "ok"}, {"question": " "}], tmp_path / "x")
    assert not (tmp_path / "x").exists()


def test_cli_index_and_search(index, tmp_path):
    forum, queries, out = tmp_path / "f.jsonl", tmp_path / "q.jsonl", tmp_path / "o.jsonl"
    forum.write_text("".join(json.dumps({"id": i, "question": q}) + "\n" for i, q in enumerate(FORUM)))
    queries.write_text("".join(json.dumps({"question": q}) + "\n" for q in QUERIES))
    run = lambda *a: subprocess.run([sys.executable, "-m", "pysynth", "dup", *a], capture_output=True, text=True)  # noqa: E731
    r = run("index", "--in", str(forum), "--out", str(tmp_path / "idx"))
    assert r.returncode == 0, r.stderr
    r = run("search", "--index", str(tmp_path / "idx"), "--queries", str(queries), "--out", str(out), "--k", "2",
            "--hybrid")
    assert r.returncode == 0, r.stderr
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert [x["results"][0]["id"] for x in rows] == [0, 3, 4]
    r = run("search", "--index", str(tmp_path / "nope"), "--queries", str(queries), "--out", str(out))
    assert r.returncode == 2 and "Traceback" not in r.stderr
