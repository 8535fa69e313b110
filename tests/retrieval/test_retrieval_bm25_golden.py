"""BM25 parity with bm25s (method="lucene", k1 = 1.5, b = 0.75): golden scores computed by bm25s.

tests/golden/bm25s_lucene.json.gz is written by tests/golden/make_bm25_golden.py (bm25s 0.3.16,
run from /tmp/refenv).  bm25s stores float32 per-document contributions and sums them in float32;
pysynth computes in float64, so scores agree to float32 precision (~1e-7 relative) and rankings
agree wherever bm25s' own scores are not tied within that precision.
"""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from pysynth import _dispatch
from pysynth.retrieval import Index

from retrieval_helpers import BACKENDS

GOLDEN = Path(__file__).resolve().parent.parent / "golden" / "bm25s_lucene.json.gz"


@pytest.fixture(scope="module")
def golden():
    if not GOLDEN.exists():
        pytest.skip("golden file missing")
    with gzip.open(GOLDEN, "rt", encoding="utf-8") as f:
        return json.load(f)


@pytest.mark.parametrize("impl", sorted(BACKENDS))
def test_bm25_matches_bm25s(golden, impl):
    assert (golden["method"], golden["k1"], golden["b"]) == ("lucene", 1.5, 0.75)
    n = len(golden["docs"])
    queries = golden["queries"] if impl == "cpp" else golden["queries"][::4]
    expected = golden["scores"] if impl == "cpp" else golden["scores"][::4]
    with _dispatch.force(impl, "retrieval"):
        ix = Index.build(golden["docs"], vocab_size=golden["vocab_size"])
        hits = ix.search(queries, model="bm25", k=n, dtype=np.float64)  # defaults k1 = 1.5, b = 0.75
    checked = 0
    for i, exp in enumerate(expected):
        got = dict(zip(hits.docs[i, : hits.counts[i]].tolist(), hits.scores[i, : hits.counts[i]].tolist()))
        want = {int(d): s for d, s in exp}
        assert set(got) == set(want), f"query {i}: retrieved documents differ from bm25s' non-zero scores"
        for d, s in want.items():
            assert got[d] == pytest.approx(s, rel=1e-6), f"query {i}, doc {d}"
            checked += 1
        # our ranking is bm25s' ranking up to float32 ties
        ranked = hits.docs[i, : hits.counts[i]].tolist()
        for x, y in zip(ranked, ranked[1:]):
            assert want[x] >= want[y] * (1 - 1e-6)
    assert checked > 1000 if impl == "cpp" else checked > 200


def test_bm25_top_k_is_prefix(golden):
    ix = Index.build(golden["docs"], vocab_size=golden["vocab_size"])
    full = ix.search(golden["queries"], model="bm25", k=len(golden["docs"]), dtype=np.float64)
    top = ix.search(golden["queries"], model="bm25", k=10, dtype=np.float64)
    assert np.array_equal(top.docs, full.docs[:, :10])
    assert np.array_equal(top.scores, full.scores[:, :10], equal_nan=True)
