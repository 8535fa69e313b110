"""Keyword query filter (Eq. 7), training data filter (Eq. 8) and vocabulary coverage (Fig. 8).

Every check runs on every backend (compiled and twin) and asserts identical results; expected
values of the small examples are worked out by hand in the comments.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pysynth import _dispatch, filtering
from pysynth.retrieval import Index

from _parity import run_all

BACKENDS = _dispatch.available("filtering")


def each_backend(fn, *args, **kwargs):
    """fn under every backend, equal to the twin's result (:func:`_parity.run_all`)."""
    return run_all("filtering", fn, *args, **kwargs)


# --------------------------------------------------------------------------
# KQF
# --------------------------------------------------------------------------
def test_kqf_by_hand():
    # question 7: candidates retrieve [3, 7] (rank 2), [7, 3, 9] (rank 1), [1, 2] (absent)
    # question 4: candidates retrieve [4] (rank 1) and [9, 4] (rank 2)
    # question 8: no candidate retrieves it -> candidate 0, best_rr 0
    results = [[3, 7], [7, 3, 9], [1, 2], [4], [9, 4], [1], [2, 3]]
    r = each_backend(filtering.kqf, [7, 4, 8], results, candidate_offsets=[0, 3, 5, 7])
    assert r.chosen.tolist() == [1, 0, 0]
    assert r.best_rr.tolist() == [1.0, 1.0, 0.0]
    assert r.rr.tolist() == [0.5, 1.0, 0.0, 1.0, 0.5, 0.0, 0.0]
    assert r.chosen.dtype == np.int32 and r.rr.dtype == np.float64


def test_kqf_ties_go_to_the_first_candidate_and_depth():
    # both candidates rank question 5 second: the first one wins
    r = each_backend(filtering.kqf, [5], [[1, 5], [2, 5, 5]], m=2)
    assert r.chosen.tolist() == [0] and r.best_rr.tolist() == [0.5]
    # depth = 1 looks at the first result only
    r = each_backend(filtering.kqf, [5], [[1, 5], [5, 2]], m=2, depth=1)
    assert r.chosen.tolist() == [1] and r.rr.tolist() == [0.0, 1.0]
    # 2-D results with -1 padding (Index.search output) and a question without candidates
    res = np.array([[1, 5, -1], [5, -1, -1]], np.int32)
    r = each_backend(filtering.kqf, [5, 6], res, candidate_offsets=[0, 2, 2])
    assert r.chosen.tolist() == [1, -1] and r.best_rr.tolist() == [1.0, 0.0]
    flat = each_backend(filtering.kqf, [5, 6], res.ravel(), candidate_offsets=[0, 2, 2],
                        result_offsets=[0, 3, 6])
    assert flat.chosen.tolist() == r.chosen.tolist()


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2**32 - 1))
def test_kqf_parity_and_ranks(seed):
    rng = np.random.default_rng(seed)
    n_q = int(rng.integers(0, 12))
    sizes = rng.integers(0, 5, n_q)
    co = np.concatenate([[0], np.cumsum(sizes)])
    n_cand = int(co[-1])
    lists = [rng.choice(15, int(rng.integers(0, 8)), replace=False).tolist() for _ in range(n_cand)]
    questions = rng.integers(0, 15, n_q)
    depth = [None, 1, 3][int(rng.integers(0, 3))]
    r = each_backend(filtering.kqf, questions, lists, candidate_offsets=co, depth=depth)
    # kqf_from_ranks agrees with kqf given the same ranks
    owner = np.repeat(np.arange(n_q), sizes)
    ranks = np.zeros(n_cand, np.int64)
    for c, lst in enumerate(lists):
        lst = lst if depth is None else lst[:depth]
        q = int(questions[owner[c]])
        ranks[c] = lst.index(q) + 1 if q in lst else 0
    r2 = filtering.kqf_from_ranks(ranks, candidate_offsets=co)
    assert r2.chosen.tolist() == r.chosen.tolist()
    assert r2.best_rr.tolist() == r.best_rr.tolist() and r2.rr.tolist() == r.rr.tolist()


def test_kqf_with_an_index():
    # the KQF loop of Ding & Balog: 3 questions, 2 candidate queries each, SDM top-N
    docs = [[10, 11, 12, 13], [10, 14, 15], [11, 12, 16, 13]]
    ix = Index.build(docs, vocab_size=20)
    cands = [[11, 13], [10], [14, 15], [10, 11], [16], [12, 13]]
    hits = ix.search(cands, k=3)
    r = filtering.kqf([0, 1, 2], hits.docs, m=2)
    ranks = ix.rank_of(cands, targets=np.repeat([0, 1, 2], 2), n=3)
    assert filtering.kqf_from_ranks(ranks, m=2).chosen.tolist() == r.chosen.tolist()
    assert r.best_rr.tolist() == [1.0, 1.0, 1.0]


def test_kqf_rejects_bad_input():
    with pytest.raises(ValueError, match="exactly one"):
        filtering.kqf([1], [[1]])
    with pytest.raises(ValueError, match="m = 2"):
        filtering.kqf([1], [[1]], m=2)
    with pytest.raises(ValueError, match="candidate_offsets"):
        filtering.kqf([1], [[1]], candidate_offsets=[0, 2])
    with pytest.raises(ValueError, match="depth"):
        filtering.kqf([1], [[1]], m=1, depth=0)
    with pytest.raises(ValueError, match="result_offsets"):
        filtering.kqf([1], [1, 2], m=1, result_offsets=[0, 3])
    with pytest.raises(TypeError):
        filtering.kqf([1.5], [[1]], m=1)
    for name, mod in BACKENDS.items():  # the compiled function and the twin refuse alike
        with pytest.raises(ValueError):
            mod.kqf_select(np.array([1], np.int32), np.array([0, 2]), np.array([1], np.int32),
                           np.array([0, 1]), 0, 1)


# --------------------------------------------------------------------------
# TDF
# --------------------------------------------------------------------------
CLUSTERS = [0, 1, 1, 2, 0, 0, 0, 2, 0, 0]  # doc -> paraphrase cluster


def test_tdf_precision_by_hand():
    results = [[3, 7, 9], [1, 2], [], [7, -1, -1], [3, 3, 5]]
    questions = [7, 2, 4, 7, 3]
    # pair 0: q=7 (cluster 2), RR={3,7,9}: 3,7 in cluster 2 -> 2/3
    # pair 1: q=2 (cluster 1), RR={1,2}: both -> 1;  without q itself: {1} -> 1/2
    # pair 2: nothing retrieved -> 0
    # pair 3: padding ignored, RR={7} -> 1 (0 without q itself)
    # pair 4: repeats count once, RR={3,5}: 3 in cluster 2, 5 not -> 1/2 (0 without q)
    p = each_backend(filtering.tdf_precision, results, questions=questions, clusters=CLUSTERS)
    assert p.tolist() == [2 / 3, 1.0, 0.0, 1.0, 0.5]
    p = each_backend(filtering.tdf_precision, results, questions=questions, clusters=CLUSTERS, include_self=False)
    assert p.tolist() == [1 / 3, 0.5, 0.0, 0.0, 0.0]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2**32 - 1), st.booleans())
def test_tdf_parity(seed, include_self):
    rng = np.random.default_rng(seed)
    n_docs = int(rng.integers(1, 30))
    clusters = rng.integers(0, 6, n_docs)
    n = int(rng.integers(0, 20))
    lists = [rng.integers(-1, n_docs, int(rng.integers(0, 10))).tolist() for _ in range(n)]
    questions = rng.integers(0, n_docs, n)
    p = each_backend(filtering.tdf_precision, lists, questions=questions, clusters=clusters,
                     include_self=include_self, workers=2)
    for i, lst in enumerate(lists):  # the definition, once more
        rr = {d for d in lst if d >= 0}
        c = {d for d in rr if clusters[d] == clusters[questions[i]] and (include_self or d != questions[i])}
        assert p[i] == (len(c) / len(rr) if rr else 0.0)


def test_tdf_select_and_order():
    p = np.array([0.5, 1.0, 0.5, 0.0, 1.0])
    assert filtering.tdf_order(p).tolist() == [1, 4, 0, 2, 3]  # ties: earlier pair first
    assert filtering.tdf_select(p, 3).tolist() == [1, 4, 0]
    assert filtering.tdf_select(p, 0).tolist() == []
    with pytest.raises(ValueError):
        filtering.tdf_select(p, -1)
    with pytest.raises(ValueError, match="NaN"):
        filtering.tdf_order([0.1, float("nan")])


def test_tdf_rejects_bad_input():
    with pytest.raises(ValueError, match="len\\(clusters\\)"):
        filtering.tdf_precision([[0, 9]], questions=[0], clusters=[0, 1])
    with pytest.raises(ValueError, match="len\\(clusters\\)"):
        filtering.tdf_precision([[0]], questions=[5], clusters=[0, 1])
    with pytest.raises(ValueError, match="result lists"):
        filtering.tdf_precision([[0]], questions=[0, 1], clusters=[0, 1])
    for name, mod in BACKENDS.items():
        with pytest.raises(ValueError):
            mod.tdf_precision(np.array([3], np.int32), np.array([0, 1]), np.array([0], np.int32),
                              np.array([0, 1], np.int64), True, 1)


# --------------------------------------------------------------------------
# vocabulary coverage
# --------------------------------------------------------------------------
def test_vocabulary_coverage_by_hand():
    rows = [[0, 1], [1, 2], [3], [0]]
    # order 2, 0, 1, 3: rows {3}, {0,1}, {1,2}, {0}: coverage 1/4, 3/4, 1, 1
    cov = each_backend(filtering.vocabulary_coverage, rows, order=[2, 0, 1, 3], sizes=[0, 1, 2, 3, 4, 10])
    assert cov.tolist() == [0.0, 0.25, 0.75, 1.0, 1.0, 1.0]
    # terms that no row holds do not count (vocab_size larger than the ids used)
    cov = each_backend(filtering.vocabulary_coverage, rows, order=[3, 2, 1, 0], sizes=[1], vocab_size=100)
    assert cov.tolist() == [0.25]
    assert filtering.vocabulary_coverage([[], []], order=[1, 0], sizes=[1]).tolist() == [1.0]


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_first_rank_parity(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 15))
    rows = [rng.integers(0, 12, int(rng.integers(0, 6))).tolist() for _ in range(n)]
    order = rng.permutation(n)
    sizes = list(range(n + 2))
    cov = each_backend(filtering.vocabulary_coverage, rows, order=order, sizes=sizes, vocab_size=12)
    vocab = {t for r in rows for t in r}
    for L in sizes:
        seen = {t for j in order[:L] for t in rows[j]}
        assert cov[L] == (len(seen) / len(vocab) if vocab else 1.0)


def test_first_rank_rejects_bad_order():
    for name, mod in BACKENDS.items():
        for order in ([0, 0], [0, 2], [0]):
            with pytest.raises(ValueError):
                mod.first_rank(np.array([1, 2], np.int32), np.array([0, 1, 2]), np.array(order, np.int64), 3)
        with pytest.raises(ValueError):
            mod.first_rank(np.array([1, 5], np.int32), np.array([0, 1, 2]), np.array([0, 1], np.int64), 3)
