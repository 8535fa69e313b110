"""Tests of pysynth.ranking: P@k, reciprocal rank / MRR, AP / MAP and AUC(max_fpr).

Every test runs every available backend (the Python twin, and the compiled
``pysynth._core.ranking`` when it is built) and checks that they agree bit for
bit, or raise the same exception type.  Expected values of the small examples
are computed by hand in the comments; the Hypothesis properties compare with
slow, obvious oracles written here (ranks by counting, ROC areas in exact
rational arithmetic).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pysynth.ranking as R
from pysynth._dispatch import available, force

from _parity import call_all, run_all

BACKENDS = available("ranking")
NAMES = sorted(BACKENDS)


# --------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------
def _bits(x):
    a = np.ascontiguousarray(np.asarray(x, dtype=np.float64))
    return a.shape, a.view(np.int64).tolist()


def _same(a, b) -> bool:
    """Bitwise equality of floats / float arrays (tells 0.0 from -0.0)."""
    return _bits(a) == _bits(b)


def call_backends(func: str, *args, **kwargs):
    """``func`` of every backend, bitwise equal to the twin's (:func:`_parity.call_all`)."""
    return call_all("ranking", func, *args, **kwargs)


def public_all(func, *args, **kwargs):
    """A public function under every backend, bitwise equal to the twin's (:func:`_parity.run_all`)."""
    return run_all("ranking", func, *args, **kwargs)


def public_raises(exc, match, func, *args, **kwargs):
    for name in NAMES:
        with force(name, "ranking"), pytest.raises(exc, match=match):
            func(*args, **kwargs)


def flat(scores_lists, labels_lists):
    s = np.array([v for q in scores_lists for v in q], dtype=np.float64)
    lab = np.array([v for q in labels_lists for v in q], dtype=np.int8)
    off = np.zeros(len(scores_lists) + 1, dtype=np.int64)
    off[1:] = np.cumsum([len(q) for q in scores_lists])
    return s, lab, off


# --------------------------------------------------------------------------
# slow, obvious oracles
# --------------------------------------------------------------------------
def oracle_stats(s, lab, off, k):
    """Ranks by counting: rank(i) = 1 + #{j: s_j > s_i} + #{j < i: s_j == s_i}."""
    rows = []
    for q in range(len(off) - 1):
        qs = [float(x) for x in s[off[q] : off[q + 1]]]
        ql = [int(x) for x in lab[off[q] : off[q + 1]]]
        n = len(qs)
        ranks = sorted(
            1
            + sum(1 for j in range(n) if qs[j] > qs[i])
            + sum(1 for j in range(i) if qs[j] == qs[i])
            for i in range(n)
            if ql[i] == 1
        )
        cutoff = min(k, n)
        p_at_k = sum(1 for r in ranks if r <= cutoff) / cutoff if cutoff else 0.0
        rr = 1.0 / ranks[0] if ranks else 0.0
        ap = 0.0
        for i, r in enumerate(ranks, start=1):
            ap += i / r
        ap = ap / len(ranks) if ranks else 0.0
        rows.append([p_at_k, rr, ap, float(len(ranks))])
    return np.array(rows, dtype=np.float64).reshape(-1, 4)


def oracle_auc(s, lab, max_fpr):
    """Exact rational area under the ROC curve (one point per distinct threshold) up to max_fpr."""
    s = [float(x) for x in s]
    lab = [int(x) for x in lab]
    P = sum(lab)
    N = len(lab) - P
    pts = [(Fraction(0), Fraction(0))]
    for t in sorted(set(s), reverse=True):
        fp = sum(1 for x, y in zip(s, lab) if x >= t and y == 0)
        tp = sum(1 for x, y in zip(s, lab) if x >= t and y == 1)
        pts.append((Fraction(fp, N), Fraction(tp, P)))
    limit = Fraction(max_fpr)
    area = Fraction(0)
    for (x0, y0), (x1, y1) in zip(pts, pts[1:]):
        if x0 >= limit:
            break
        if x1 <= limit:
            area += (x1 - x0) * (y0 + y1) / 2
        else:
            ym = y0 + (y1 - y0) * (limit - x0) / (x1 - x0)
            area += (limit - x0) * (y0 + ym) / 2
    return area / limit


def oracle_mann_whitney(s, lab):
    pos = [x for x, y in zip(s, lab) if y == 1]
    neg = [x for x, y in zip(s, lab) if y == 0]
    wins = sum((p > n) + 0.5 * (p == n) for p in pos for n in neg)
    return wins / (len(pos) * len(neg))


def oracle_qra_meter(s, lab, max_fpr):
    """The logic of darsh10/qra_code's AUCMeter.value(max_fpr), for score sets without ties."""
    s = [float(x) for x in s]
    lab = [int(x) for x in lab]
    order = sorted(range(len(s)), key=lambda i: -s[i])
    P = sum(lab)
    N = len(lab) - P
    tpr, fpr = [0.0], [0.0]
    for i in order:
        tpr.append(tpr[-1] + (lab[i] == 1))
        fpr.append(fpr[-1] + (lab[i] == 0))
    tpr = [t / P for t in tpr]
    fpr = [f / N for f in fpr]
    n = next(i for i in range(1, len(fpr)) if fpr[i] >= max_fpr)  # fpr[-1] == 1 >= max_fpr
    area = sum((fpr[i + 1] - fpr[i]) * (tpr[i] + tpr[i + 1]) / 2 for i in range(n - 1))
    return area / max_fpr


# --------------------------------------------------------------------------
# strategies
# --------------------------------------------------------------------------
@st.composite
def rankings(draw, max_queries=6, max_cands=9, tie_heavy=None):
    """Ragged queries with scores drawn from a small grid (many ties) or freely."""
    n_q = draw(st.integers(0, max_queries))
    lengths = draw(st.lists(st.integers(0, max_cands), min_size=n_q, max_size=n_q))
    n = sum(lengths)
    ties = draw(st.booleans()) if tie_heavy is None else tie_heavy
    if ties:
        elem = st.integers(-3, 3).map(lambda v: v / 2.0)
    else:
        elem = st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False)
    s = np.array(draw(st.lists(elem, min_size=n, max_size=n)), dtype=np.float64)
    lab = np.array(draw(st.lists(st.integers(0, 1), min_size=n, max_size=n)), dtype=np.int8)
    off = np.zeros(n_q + 1, dtype=np.int64)
    off[1:] = np.cumsum(lengths)
    return s, lab, off


@st.composite
def pooled_pairs(draw, max_n=40, tie_heavy=None):
    """Pooled pairs with at least one positive and one negative."""
    n = draw(st.integers(2, max_n))
    ties = draw(st.booleans()) if tie_heavy is None else tie_heavy
    if ties:
        elem = st.integers(-4, 4).map(lambda v: v / 4.0)
    else:
        elem = st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False)
    s = np.array(draw(st.lists(elem, min_size=n, max_size=n)), dtype=np.float64)
    lab = draw(
        st.lists(st.integers(0, 1), min_size=n, max_size=n).filter(lambda v: 0 < sum(v) < len(v))
    )
    return s, np.array(lab, dtype=np.int8)


FPRS = st.sampled_from([0.01, 0.05, 0.1, 0.2, 1 / 3, 0.5, 0.75, 1.0])
HSET = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# --------------------------------------------------------------------------
# the backends
# --------------------------------------------------------------------------
def test_python_backend_always_available():
    assert "python" in BACKENDS
    assert hasattr(BACKENDS["python"], "ranking_stats") and hasattr(BACKENDS["python"], "auc_at")


# --------------------------------------------------------------------------
# hand-computed examples
# --------------------------------------------------------------------------
def test_ranking_stats_hand_example():
    # query 0: scores 0.9 0.1 0.5 0.5 0.3, labels 0 1 1 0 1
    #   order: 0.9(-) 0.5#2(+) 0.5#3(-) 0.3(+) 0.1(+)  (tie 0.5: position 2 before 3)
    #   relevant ranks 2, 4, 5 -> P@2 = 1/2, RR = 1/2, AP = (1/2 + 2/4 + 3/5) / 3 = 0.5333..
    # query 1: scores 1 2 3, labels 0 0 1 -> relevant rank 1: P@2 = 1/2, RR = 1, AP = 1
    s, lab, off = flat([[0.9, 0.1, 0.5, 0.5, 0.3], [1, 2, 3]], [[0, 1, 1, 0, 1], [0, 0, 1]])
    got = call_backends("ranking_stats", s, lab, off, 2)
    expected = np.array(
        [[0.5, 0.5, (0.5 + 0.5 + 0.6) / 3, 3.0], [0.5, 1.0, 1.0, 1.0]], dtype=np.float64
    )
    assert got.shape == (2, 4) and got.dtype == np.float64
    np.testing.assert_allclose(got, expected, rtol=1e-15)


def test_ties_broken_by_position():
    # all scores equal: the ranking is the input order
    s, lab, off = flat(
        [[0.5, 0.5, 0.5], [0.5, 0.5, 0.5], [0.0, -0.0]], [[0, 0, 1], [1, 0, 0], [0, 1]]
    )
    got = call_backends("ranking_stats", s, lab, off, 1)
    # relevant at rank 3, 1 and 2 (0.0 == -0.0 is a tie)
    assert got[:, 1].tolist() == [1 / 3, 1.0, 0.5]
    assert got[:, 0].tolist() == [0.0, 1.0, 0.0]
    assert got[:, 2].tolist() == [1 / 3, 1.0, 0.5]


def test_no_relevant_empty_and_short_queries():
    s, lab, off = flat([[0.3, 0.2], [], [0.3, 0.1], [7.0]], [[0, 0], [], [1, 0], [1]])
    got = call_backends("ranking_stats", s, lab, off, 5)
    # no relevant -> [0, 0, 0, 0]; empty query -> [0, 0, 0, 0];
    # 2 candidates with k = 5 -> P@5 = 1 / min(5, 2) = 0.5; single relevant -> P@5 = 1
    assert got.tolist() == [
        [0.0, 0.0, 0.0, 0.0],
        [0.0, 0.0, 0.0, 0.0],
        [0.5, 1.0, 1.0, 1.0],
        [1.0, 1.0, 1.0, 1.0],
    ]


def test_zero_queries():
    got = call_backends(
        "ranking_stats", np.zeros(0), np.zeros(0, np.int8), np.zeros(1, np.int64), 5
    )
    assert got.shape == (0, 4)


def test_infinite_scores_rank_normally():
    s, lab, off = flat([[-np.inf, np.inf, 0.0]], [[1, 0, 0]])
    got = call_backends("ranking_stats", s, lab, off, 3)
    assert got.tolist() == [[1 / 3, 1 / 3, 1 / 3, 1.0]]


def test_auc_hand_example():
    # pooled: 3(+) 2(-) 1(-) 0.9(-) {0.5(+), 0.5(-)} 0.3(+) 0.1(+); P = N = 4
    # ROC: (0,0) (0,.25) (.25,.25) (.5,.25) (.75,.25) (1,.5) (1,.75) (1,1)
    s = np.array([0.9, 0.1, 0.5, 0.5, 0.3, 1, 2, 3], dtype=np.float64)
    lab = np.array([0, 1, 1, 0, 1, 0, 0, 1], dtype=np.int8)
    # full area: 0.75 * 0.25 + the tie diagonal 0.25 * (0.25 + 0.5) / 2 = 0.28125
    assert call_backends("auc_at", s, lab, 1.0) == 0.28125
    # up to fpr 0.5: 0.5 * 0.25 = 0.125, / 0.5 = 0.25
    assert call_backends("auc_at", s, lab, 0.5) == 0.25
    # up to fpr 0.875 (halfway along the tie diagonal, tpr 0.375 there):
    # 0.75 * 0.25 + 0.125 * (0.25 + 0.375) / 2 = 0.2265625, / 0.875
    assert math.isclose(call_backends("auc_at", s, lab, 0.875), 0.2265625 / 0.875, rel_tol=1e-15)
    # qra_code truncation at 0.5: m = 2 negatives reach fpr 0.5, stop at fp = 1:
    # 0.25 * 0.25 = 0.0625, / 0.5 = 0.125
    assert call_backends("auc_at", s, lab, 0.5, False) == 0.125


def test_auc_tie_is_a_diagonal():
    s = np.array([1.0, 1.0])
    lab = np.array([1, 0], dtype=np.int8)
    assert call_backends("auc_at", s, lab, 1.0) == 0.5  # triangle under the diagonal
    assert call_backends("auc_at", s, lab, 0.5) == 0.25  # 0.5 * 0.5 / 2 / 0.5


def test_auc_perfect_reverse_and_qra_code_off_by_one():
    # 2 positives above 100 negatives
    s = np.concatenate([[10.0, 9.0], np.linspace(0.0, 1.0, 100)])
    lab = np.array([1, 1] + [0] * 100, dtype=np.int8)
    assert call_backends("auc_at", s, lab, 0.05) == 1.0
    assert call_backends("auc_at", s, lab, 1.0) == 1.0
    # the released AUCMeter stops at fpr 4/100 < 0.05 and still divides by 0.05
    assert math.isclose(call_backends("auc_at", s, lab, 0.05, False), 0.8, rel_tol=1e-15)
    assert math.isclose(oracle_qra_meter(s, lab, 0.05), 0.8, rel_tol=1e-15)
    # reversed: every negative above every positive
    assert call_backends("auc_at", -s, lab, 0.05) == 0.0
    assert call_backends("auc_at", -s, lab, 1.0) == 0.0


def test_public_api_hand_example():
    scores = [[0.9, 0.1, 0.3], [0.2, 0.8, 0.4], [0.5, 0.6]]
    labels = [[1, 0, 0], [1, 0, 0], [0, 0]]
    # q0: relevant rank 1; q1: relevant rank 3; q2: none
    assert public_all(R.precision_at_k, scores, labels, k=1) == 0.5
    assert public_all(R.precision_at_k, scores, labels, k=1, skip_no_relevant=False) == 1 / 3
    assert public_all(R.mean_reciprocal_rank, scores, labels) == (1 + 1 / 3) / 2
    assert public_all(R.mean_reciprocal_rank, scores, labels, skip_no_relevant=False) == (
        (1 + 1 / 3 + 0) / 3
    )
    assert public_all(R.mean_average_precision, scores, labels) == (1 + 1 / 3) / 2
    assert public_all(R.reciprocal_ranks, scores, labels).tolist() == [1.0, 1 / 3, 0.0]
    assert public_all(R.average_precisions, scores, labels).tolist() == [1.0, 1 / 3, 0.0]
    table = public_all(R.ranking_stats, scores, labels, k=2)
    assert table[:, 3].tolist() == [1.0, 1.0, 0.0]
    # AUC pooled over q0 and q1 (q2 dropped): positives 0.9, 0.2; negatives 0.1 0.3 0.8 0.4
    # full AUC = wins / (2 * 4) = (4 + 1) / 8
    res = public_all(R.evaluate_rankings, scores, labels, k=1, max_fpr=1.0)
    assert res == {"P@1": 0.5, "MRR": (1 + 1 / 3) / 2, "MAP": (1 + 1 / 3) / 2, "AUC(1)": 5 / 8}
    # keeping q2 adds negatives 0.5 and 0.6, both below 0.9: wins = (4 + 2) + 1 = 7 of 2 * 6
    res = public_all(R.evaluate_rankings, scores, labels, k=1, max_fpr=1.0, skip_no_relevant=False)
    assert math.isclose(res["AUC(1)"], 7 / 12, rel_tol=1e-15) and res["P@1"] == 1 / 3
    assert list(public_all(R.evaluate_rankings, scores, labels)) == [
        "P@5",
        "MRR",
        "MAP",
        "AUC(0.05)",
    ]


def test_input_layouts_agree():
    scores = [[0.9, 0.1, 0.3], [0.2, 0.8, 0.4]]
    labels = [[1, 0, 0], [0, 1, 1]]
    s, lab, off = flat(scores, labels)
    ref = public_all(R.ranking_stats, s, lab, off, k=2)
    assert _same(public_all(R.ranking_stats, scores, labels, k=2), ref)
    assert _same(public_all(R.ranking_stats, np.array(scores), np.array(labels, bool), k=2), ref)
    assert _same(public_all(R.ranking_stats, s.astype(np.float32), lab.astype(bool), off, k=2), ref)
    assert _same(public_all(R.ranking_stats, tuple(np.array(q) for q in scores), labels, k=2), ref)
    assert _same(public_all(R.auc_at, scores, labels, 0.5), public_all(R.auc_at, s, lab, 0.5))
    # float32 scores are converted exactly to float64
    s32 = np.array([0.1, 0.7, 0.3], dtype=np.float32)
    assert _same(
        public_all(R.auc_at, s32, [1, 0, 1], 1.0),
        public_all(R.auc_at, s32.astype(np.float64), [1, 0, 1], 1.0),
    )


def test_qra_code_truncation_public():
    s = np.concatenate([[10.0, 9.0], np.linspace(0.0, 1.0, 100)])
    lab = np.array([1, 1] + [0] * 100)
    assert public_all(R.auc_at, s, lab) == 1.0
    assert math.isclose(public_all(R.auc_at, s, lab, truncation="qra_code"), 0.8, rel_tol=1e-15)


@pytest.mark.parametrize("p_relevant", [0.15, 0.7])
def test_medium_random_batch_is_bitwise_identical(p_relevant):
    # p_relevant 0.7 gives many queries with > 8 relevant candidates (the
    # compiled backend sorts those instead of counting ranks)
    rng = np.random.default_rng(7)
    lengths = rng.integers(0, 30, size=3000)
    off = np.zeros(lengths.size + 1, dtype=np.int64)
    off[1:] = np.cumsum(lengths)
    n = int(off[-1])
    s = np.round(rng.normal(size=n), 1)  # rounding creates ties
    lab = (rng.random(n) < p_relevant).astype(np.int8)
    for k in (1, 5, 40):
        got = call_backends("ranking_stats", s, lab, off, k)
        if k == 5:  # the counting oracle is slow; once is enough here
            assert _same(got, oracle_stats(s, lab, off, k))
    for max_fpr in (0.001, 0.05, 0.3, 1.0):
        for interp in (True, False):
            call_backends("auc_at", s, lab, max_fpr, interp)


# --------------------------------------------------------------------------
# properties
# --------------------------------------------------------------------------
@HSET
@given(st.one_of(rankings(), rankings(max_queries=3, max_cands=24)), st.integers(1, 12))
def test_ranking_stats_match_counting_oracle(data, k):
    s, lab, off = data
    got = call_backends("ranking_stats", s, lab, off, k)
    assert _same(got, oracle_stats(s, lab, off, k))
    assert np.all((got[:, :3] >= 0) & (got[:, :3] <= 1))
    n_q = np.diff(off)
    n_rel = [int(lab[off[q] : off[q + 1]].sum()) for q in range(len(n_q))]
    assert got[:, 3].tolist() == n_rel
    # with a relevant candidate: P@k > 0 exactly when the first one is in the top min(k, n)
    rel = got[:, 3] > 0
    cutoff = np.minimum(k, n_q)
    assert np.array_equal(got[rel, 0] > 0, got[rel, 1] >= 1.0 / cutoff[rel])
    # without one: all zero
    assert np.all(got[~rel, :] == 0.0)


@HSET
@given(rankings(), st.integers(1, 12))
def test_perfect_ranking_gives_one(data, k):
    s, lab, off = data
    # relevant candidates get strictly higher scores than the others of their query
    perfect = np.where(lab == 1, 10.0, 0.0) + s * 1e-9
    got = call_backends("ranking_stats", perfect, lab, off, k)
    rel = got[:, 3] > 0
    assert np.all(got[rel, 1] == 1.0) and np.all(got[rel, 2] == 1.0)
    n_q = np.diff(off)
    expected_p = np.minimum(got[rel, 3], np.minimum(k, n_q[rel])) / np.minimum(k, n_q[rel])
    assert np.array_equal(got[rel, 0], expected_p)


@HSET
@given(rankings(), st.integers(1, 12), st.randoms(use_true_random=False))
def test_ranking_invariances(data, k, rnd):
    s, lab, off = data
    a = call_backends("ranking_stats", s, lab, off, k)
    # exact rescaling (doubling; halving could flush subnormals) keeps every order and tie
    assert _same(call_backends("ranking_stats", s * 2.0, lab, off, k), a)
    # shuffling the candidates of a query with distinct scores changes nothing
    perm = np.arange(s.size)
    for q in range(len(off) - 1):
        lo, hi = int(off[q]), int(off[q + 1])
        if len(np.unique(s[lo:hi])) == hi - lo:
            idx = list(range(lo, hi))
            rnd.shuffle(idx)
            perm[lo:hi] = idx
    b = call_backends("ranking_stats", s[perm], lab[perm], off, k)
    assert _same(b[:, [0, 1, 3]], a[:, [0, 1, 3]])
    assert np.allclose(b[:, 2], a[:, 2], rtol=0, atol=0)


@HSET
@given(pooled_pairs(), FPRS)
def test_auc_matches_exact_rational_oracle(data, max_fpr):
    s, lab = data
    got = call_backends("auc_at", s, lab, max_fpr)
    assert 0.0 <= got <= 1.0
    assert math.isclose(got, float(oracle_auc(s, lab, max_fpr)), rel_tol=1e-12, abs_tol=1e-12)


@HSET
@given(pooled_pairs())
def test_full_auc_is_mann_whitney(data):
    s, lab = data
    got = call_backends("auc_at", s, lab, 1.0)
    assert math.isclose(got, oracle_mann_whitney(s, lab), rel_tol=1e-12, abs_tol=1e-12)


@HSET
@given(pooled_pairs(), FPRS, st.randoms(use_true_random=False))
def test_auc_is_order_independent_and_bounded(data, max_fpr, rnd):
    s, lab = data
    perm = list(range(len(s)))
    rnd.shuffle(perm)
    for interp in (True, False):
        a = call_backends("auc_at", s, lab, max_fpr, interp)
        b = call_backends("auc_at", s[perm], lab[perm], max_fpr, interp)
        assert _same(a, b)
        assert 0.0 <= a <= 1.0
    # qra_code stops earlier on the same curve, with the same normalization
    assert call_backends("auc_at", s, lab, max_fpr, False) <= call_backends(
        "auc_at", s, lab, max_fpr, True
    )


@HSET
@given(pooled_pairs(), FPRS)
def test_auc_perfect_and_reversed(data, max_fpr):
    s, lab = data
    perfect = np.where(lab == 1, 10.0, 0.0) + s * 1e-6
    assert call_backends("auc_at", perfect, lab, max_fpr) == 1.0
    assert call_backends("auc_at", -perfect, lab, max_fpr) == 0.0


@HSET
@given(pooled_pairs(tie_heavy=False), FPRS)
def test_qra_code_truncation_matches_released_meter_without_ties(data, max_fpr):
    s, lab = data
    if len(np.unique(s)) != len(s):
        return  # the released meter orders ties arbitrarily
    got = call_backends("auc_at", s, lab, max_fpr, False)
    assert math.isclose(got, oracle_qra_meter(s, lab, max_fpr), rel_tol=1e-9, abs_tol=1e-12)


@HSET
@given(rankings(), st.integers(1, 6), FPRS, st.booleans())
def test_evaluate_rankings_consistent_with_parts(data, k, max_fpr, skip):
    s, lab, off = data
    st_ = call_backends("ranking_stats", s, lab, off, k)
    keep = st_[:, 3] > 0 if skip else np.ones(st_.shape[0], bool)
    pair_keep = keep[np.repeat(np.arange(st_.shape[0]), np.diff(off))]
    kept_lab = lab[pair_keep]
    if not keep.any() or kept_lab.sum() in (0, kept_lab.size):
        public_raises(
            ValueError,
            "needs at least one|undefined",
            R.evaluate_rankings,
            s,
            lab,
            off,
            k,
            max_fpr,
            skip,
        )
        return
    res = public_all(R.evaluate_rankings, s, lab, off, k, max_fpr, skip)
    assert res[f"P@{k}"] == float(np.mean(st_[keep, 0]))
    assert res["MRR"] == public_all(R.mean_reciprocal_rank, s, lab, off, skip)
    assert res["MAP"] == public_all(R.mean_average_precision, s, lab, off, skip)
    assert res[f"AUC({max_fpr:g})"] == public_all(R.auc_at, s[pair_keep], kept_lab, max_fpr)
    assert all(0.0 <= v <= 1.0 for v in res.values())


# --------------------------------------------------------------------------
# bad input: the public layer names the argument and the fix
# --------------------------------------------------------------------------
S3 = [0.1, 0.2, 0.3]
L3 = [0, 1, 0]


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        ({"scores": S3, "labels": [0, 1], "offsets": [0, 3]}, ValueError, "labels has 2 entries"),
        ({"scores": S3, "labels": L3, "offsets": [1, 3]}, ValueError, "offsets must start at 0"),
        ({"scores": S3, "labels": L3, "offsets": [0, 2, 1, 3]}, ValueError, "non-decreasing"),
        ({"scores": S3, "labels": L3, "offsets": [0, 2]}, ValueError, "offsets must end at len"),
        ({"scores": S3, "labels": L3, "offsets": []}, ValueError, "offsets must have at least one"),
        ({"scores": S3, "labels": L3, "offsets": [[0, 3]]}, ValueError, "offsets must be 1-D"),
        (
            {"scores": S3, "labels": L3, "offsets": [0.0, 3.0]},
            TypeError,
            "offsets must be integers",
        ),
        (
            {"scores": [0.1, np.nan, 0.3], "labels": L3, "offsets": [0, 3]},
            ValueError,
            r"scores\[1\] is NaN",
        ),
        (
            {"scores": S3, "labels": [0, 2, 0], "offsets": [0, 3]},
            ValueError,
            "labels must be 0 or 1",
        ),
        (
            {"scores": ["a", "b", "c"], "labels": L3, "offsets": [0, 3]},
            TypeError,
            "scores must be numeric",
        ),
        (
            {"scores": S3, "labels": ["x", "y", "z"], "offsets": [0, 3]},
            TypeError,
            "labels must be numeric",
        ),
        (
            {"scores": [None, 1.0, 2.0], "labels": L3, "offsets": [0, 3]},
            TypeError,
            "scores must be numeric",
        ),
        ({"scores": S3, "labels": L3}, TypeError, "offsets is missing"),
        (
            {"scores": [[0.1], [0.2]], "labels": [[0], [1]], "offsets": [0, 1, 2]},
            TypeError,
            "offsets must be omitted",
        ),
        (
            {"scores": [[0.1, 0.2], [0.3]], "labels": [[0], [1]]},
            ValueError,
            "query 0: labels has 1",
        ),
        ({"scores": [[0.1], [0.2]], "labels": [[0]]}, ValueError, "labels must be one too"),
        ({"scores": np.zeros((2, 2)), "labels": np.zeros((2, 3))}, ValueError, "labels has shape"),
        (
            {"scores": np.zeros((2, 2)), "labels": np.zeros(4), "offsets": [0, 4]},
            ValueError,
            "scores must be 1-D",
        ),
        ({"scores": S3, "labels": L3, "offsets": [0, 3], "k": 0}, ValueError, "k must be >= 1"),
        (
            {"scores": S3, "labels": L3, "offsets": [0, 3], "k": 2.0},
            TypeError,
            "k must be an integer",
        ),
        (
            {"scores": S3, "labels": L3, "offsets": [0, 3], "k": True},
            TypeError,
            "k must be an integer",
        ),
    ],
)
def test_bad_ranking_input(kwargs, exc, match):
    public_raises(exc, match, R.ranking_stats, **kwargs)
    public_raises(exc, match, R.evaluate_rankings, **kwargs)


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        ({"max_fpr": 0.0}, ValueError, r"max_fpr must be in \(0, 1\]"),
        ({"max_fpr": 1.5}, ValueError, r"max_fpr must be in \(0, 1\]"),
        ({"max_fpr": float("nan")}, ValueError, r"max_fpr must be in \(0, 1\]"),
        ({"max_fpr": "0.05"}, TypeError, "max_fpr must be a real number"),
        ({"truncation": "sklearn"}, ValueError, "truncation must be one of"),
    ],
)
def test_bad_auc_arguments(kwargs, exc, match):
    public_raises(exc, match, R.auc_at, S3, L3, **kwargs)
    public_raises(exc, match, R.evaluate_rankings, [S3], [L3], **kwargs)


def test_auc_needs_both_classes():
    public_raises(ValueError, "at least one positive and one negative", R.auc_at, S3, [0, 0, 0])
    public_raises(ValueError, "at least one positive and one negative", R.auc_at, S3, [1, 1, 1])
    public_raises(ValueError, "at least one positive and one negative", R.auc_at, [], [])
    public_raises(ValueError, r"scores\[0\] is NaN", R.auc_at, [np.nan, 1.0], [0, 1])


def test_means_need_a_query():
    public_raises(
        ValueError,
        "no query has a relevant candidate",
        R.mean_average_precision,
        [[0.1, 0.2]],
        [[0, 0]],
    )
    public_raises(
        ValueError, "there are no queries", R.precision_at_k, [], [], skip_no_relevant=False
    )


@pytest.mark.parametrize(
    "args",
    [
        (np.array([0.1, np.nan]), np.array([0, 1], np.int8), np.array([0, 2]), 1),
        (np.array([0.1, 0.2]), np.array([0, 3], np.int8), np.array([0, 2]), 1),
        (np.array([0.1, 0.2]), np.array([0, 1], np.int8), np.array([1, 2]), 1),
        (np.array([0.1, 0.2]), np.array([0, 1], np.int8), np.array([0, 2, 1, 2]), 1),
        (np.array([0.1, 0.2]), np.array([0, 1], np.int8), np.array([0, 3]), 1),
        (np.array([0.1, 0.2]), np.array([0, 1], np.int8), np.array([], np.int64), 1),
        (np.array([0.1, 0.2]), np.array([0], np.int8), np.array([0, 2]), 1),
        (np.array([0.1, 0.2]), np.array([0, 1], np.int8), np.array([0, 2]), 0),
        (np.zeros((1, 2)), np.array([0, 1], np.int8), np.array([0, 2]), 1),
    ],
)
def test_backends_reject_bad_input_alike(args):
    with pytest.raises(ValueError):
        call_backends("ranking_stats", *args)


@pytest.mark.parametrize(
    "args",
    [
        (np.array([0.1, 0.2]), np.array([1, 1], np.int8), 0.05),
        (np.array([0.1, 0.2]), np.array([0, 0], np.int8), 0.05),
        (np.array([0.1, 0.2]), np.array([0, 1], np.int8), 0.0),
        (np.array([0.1, 0.2]), np.array([0, 1], np.int8), 1.01),
        (np.array([0.1, 0.2]), np.array([0, 1], np.int8), float("nan")),
        (np.array([np.nan, 0.2]), np.array([0, 1], np.int8), 0.05),
        (np.array([0.1, 0.2]), np.array([0, 7], np.int8), 0.05),
        (np.array([0.1, 0.2]), np.array([0], np.int8), 0.05),
        (np.zeros(0), np.zeros(0, np.int8), 0.05),
    ],
)
def test_backends_reject_bad_auc_input_alike(args):
    with pytest.raises(ValueError):
        call_backends("auc_at", *args)


def test_backends_reject_non_integer_k_alike():
    s, lab, off = flat([[0.1, 0.2]], [[0, 1]])
    with pytest.raises(TypeError):
        call_backends("ranking_stats", s, lab, off, 2.5)
