"""Both backends sample the distributions of Eq. 1-6 (chi-square goodness of fit).

The analytic distributions come from :meth:`KeywordModel.term_distributions` (NumPy,
independent of the samplers) or are written out here.  Seeds are fixed, so the tests are
deterministic; the thresholds (p > 1e-3) only say how far from the model a sample may
look before we call it a bug.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from pysynth import _dispatch, sampling

from _sampling_util import NAMES, chi2_sf, chi2_test, ragged

P_MIN = 1e-3


def test_chi2_tail_known_values():
    # textbook critical values
    assert abs(chi2_sf(3.841458820694124, 1) - 0.05) < 1e-9
    assert abs(chi2_sf(18.307038053275146, 10) - 0.05) < 1e-9
    assert abs(chi2_sf(6.6348966010212145, 1) - 0.01) < 1e-9
    assert abs(chi2_sf(124.34211340400407, 100) - 0.05) < 1e-8
    assert abs(chi2_sf(2.0, 2) - math.exp(-1.0)) < 1e-12


# a small corpus with a Zipf-like collection, question words, repeats and a paraphrase cluster
VOCAB = ["what", "how", "is", "the", "author", "of", "pooh", "winnie", "creator", "who",
         "wrote", "book", "bear", "a", "milne", "story", "honda_crf_230", "fast", "2004", "x"]
QS = [
    [0, 2, 3, 4, 5, 3, 6],                  # what is the author of the pooh
    [1, 17, 2, 13, 18, 16],                 # how fast is a 2004 honda_crf_230
    [9, 10, 11, 12, 15, 3, 12],
]
CLUSTER_ROWS = [[9, 2, 7, 3, 6, 8], [9, 10, 7, 3, 6], [0, 2, 4, 5, 11, 3, 12, 15]]
CINDEX = [0, -1, 2]
EXTRA = [[3, 3, 5, 13, 13, 13, 2, 2, 19], [11, 12, 14, 14, 3, 5], [19, 19, 18, 3]]


def _setup():
    docs = QS + CLUSTER_ROWS + EXTRA
    stats = sampling.CollectionStats.from_documents(docs, len(VOCAB))
    clusters = sampling.Clusters(*ragged(CLUSTER_ROWS), np.array(CINDEX))
    return stats, clusters


CONFIGS = [
    ("baseline", "popular", dict(lam=0.3)),
    ("baseline", "discriminative", dict(lam=0.2)),
    ("baseline", "combination", dict(lam=0.5)),
    ("paraphrase", "popular", dict(alpha=0.4, beta=0.4)),
    ("paraphrase", "discriminative", dict(alpha=0.3, beta=0.5)),
    ("paraphrase", "combination", dict(alpha=0.5, beta=0.3)),
]


@pytest.mark.parametrize("impl", NAMES)
@pytest.mark.parametrize("model_name,strategy,params", CONFIGS)
def test_single_draw_frequencies(impl, model_name, strategy, params):
    """With P(s = 1) = 1 every candidate is one draw from P(t|theta_q) (Eq. 1 / Eq. 6)."""
    n_draws = 200_000 if impl == "cpp" else 40_000
    stats, clusters = _setup()
    model = sampling.KeywordModel(model_name, strategy, length_dist=[0.0, 1.0], **params)
    q = 0 if model_name == "baseline" else 2
    one_q = [QS[q]]
    one_c = sampling.Clusters(clusters.values, clusters.offsets, clusters.index[q:q + 1])
    with _dispatch.force(impl, "sampling"):
        ids, off = model.generate(one_q, one_c, stats, m=n_draws, seed=11, vocab=VOCAB)
    assert np.all(np.diff(off) == 1)
    expected = model.term_distributions(one_q, one_c, stats, vocab=VOCAB).dense(0)
    assert abs(expected.sum() - 1) < 1e-12 and expected[0] == 0 and expected[9] == 0
    stat, dof, p = chi2_test(np.bincount(ids, minlength=len(VOCAB)), expected)
    assert p > P_MIN, f"chi2 = {stat:.1f} on {dof} dof, p = {p:.2e}"


def _pairs_expected(p: np.ndarray) -> np.ndarray:
    """Joint law of the first two draws without replacement (Alg. 1 line 9)."""
    V = p.shape[0]
    out = np.zeros((V, V))
    for a in range(V):
        if p[a] > 0 and p[a] < 1:
            out[a] = p[a] * p / (1 - p[a])
            out[a, a] = 0
    return out


@pytest.mark.parametrize("impl", NAMES)
@pytest.mark.parametrize("max_rejections", [0, 1, 8])
def test_without_replacement_pairs(impl, max_rejections):
    """(t1, t2) with s = 2 follows P(a) P(b) / (1 - P(a)); max_rejections = 0 exercises the
    explicit renormalization of every component, 1 a mix of both paths."""
    n = 120_000 if impl == "cpp" else 30_000
    # tiny vocabulary, one dominant term: rejections are frequent
    V = 6
    q = [[0, 1, 1, 1, 1, 2, 3]]
    rows = [[1, 4, 4, 2]]
    stats = sampling.CollectionStats(np.array([1, 30, 4, 2, 6, 3]), np.array([1, 2, 2, 1, 1, 1]), 3)
    model = sampling.KeywordModel("paraphrase", "popular", alpha=0.5, beta=0.3,
                                  length_dist=[0.0, 0.0, 1.0], max_rejections=max_rejections)
    clusters = sampling.Clusters(*ragged(rows), np.array([0]))
    ex = np.array([1, 0, 0, 0, 0, 0], np.uint8)
    with _dispatch.force(impl, "sampling"):
        ids, off = model.generate(q, clusters, stats, m=n, seed=5, exclude=ex)
    assert np.all(np.diff(off) == 2)
    pairs = ids.reshape(-1, 2).astype(np.int64)
    counts = np.bincount(pairs[:, 0] * V + pairs[:, 1], minlength=V * V)
    p = model.term_distributions(q, clusters, stats, exclude=ex).dense(0)
    stat, dof, pv = chi2_test(counts, _pairs_expected(p))
    assert pv > P_MIN, f"chi2 = {stat:.1f} on {dof} dof, p = {pv:.2e}"


@pytest.mark.parametrize("impl", NAMES)
def test_exhausting_the_support(impl):
    """Three draws from a three-term support: all permutations, with the sequential law."""
    n = 60_000 if impl == "cpp" else 20_000
    q = [[0, 1, 2, 3, 3, 3, 2, 4]]
    stats = sampling.CollectionStats(np.array([5, 1, 1, 2, 1]), np.array([1, 1, 1, 1, 1]), 2)
    model = sampling.KeywordModel("baseline", "popular", lam=0.0, length_dist=[0, 0, 0, 1.0],
                                  max_rejections=2)
    ex = np.array([1, 1, 0, 0, 0], np.uint8)  # support {2, 3, 4}, weights 2, 3, 1
    with _dispatch.force(impl, "sampling"):
        ids, off = model.generate(q, None, stats, m=n, seed=8, exclude=ex)
    assert np.all(np.diff(off) == 3)
    trip = ids.reshape(-1, 3)
    w = {2: 2.0, 3: 3.0, 4: 1.0}
    perms = [(a, b, c) for a in w for b in w for c in w if len({a, b, c}) == 3]
    probs = []
    for a, b, c in perms:
        pa = w[a] / 6
        pb = w[b] / (6 - w[a])
        probs.append(pa * pb)
    keys = {p: i for i, p in enumerate(perms)}
    counts = np.zeros(len(perms))
    for row in map(tuple, trip.tolist()):
        counts[keys[row]] += 1
    stat, dof, pv = chi2_test(counts, np.array(probs))
    assert pv > P_MIN, f"chi2 = {stat:.1f} on {dof} dof, p = {pv:.2e}"


@pytest.mark.parametrize("impl", NAMES)
def test_length_distribution(impl):
    """s ~ P(s | 1 <= s < |q|) (Alg. 1 line 5); for |q| <= 3 with P on [3, 7]: s = |q| - 1."""
    n = 100_000 if impl == "cpp" else 20_000
    p = sampling.default_length_dist()
    V = 30
    qs = [list(range(1, 10)), list(range(1, 6)), [1, 2, 3], [1, 2], [1], list(range(1, 25))]
    stats = sampling.CollectionStats.from_documents(qs, V)
    model = sampling.KeywordModel("baseline", "popular", lam=0.5, length_dist=p)
    with _dispatch.force(impl, "sampling"):
        ids, off = model.generate(qs, None, stats, m=n, seed=3, exclude=np.zeros(V, np.uint8))
    lens = np.diff(off).reshape(len(qs), n)
    for i, q in enumerate(qs):
        L = len(q)
        cond = np.where((np.arange(p.size) >= 1) & (np.arange(p.size) < L), p, 0.0)
        if cond.sum() == 0:
            assert np.all(lens[i] == max(1, L - 1)), (L, np.unique(lens[i]))
            continue
        stat, dof, pv = chi2_test(np.bincount(lens[i], minlength=p.size)[:p.size], cond)
        assert pv > P_MIN, f"|q| = {L}: chi2 = {stat:.1f} on {dof} dof, p = {pv:.2e}"


def test_poisson_lengths_cpp_or_python():
    impl = NAMES[-1]
    n = 50_000 if impl == "cpp" else 10_000
    p = sampling.poisson_length_dist(3.2, s_min=1, s_max=12)
    V = 40
    qs = [list(range(1, 31))]
    stats = sampling.CollectionStats.from_documents(qs, V)
    model = sampling.KeywordModel("baseline", "popular", lam=0.5, length_dist=p)
    with _dispatch.force(impl, "sampling"):
        _, off = model.generate(qs, None, stats, m=n, seed=4, exclude=np.zeros(V, np.uint8))
    stat, dof, pv = chi2_test(np.bincount(np.diff(off), minlength=p.size)[:p.size], p)
    assert pv > P_MIN, f"chi2 = {stat:.1f} on {dof} dof, p = {pv:.2e}"


@pytest.mark.skipif("cpp" not in NAMES, reason="compiled extension not built")
def test_collection_alias_table_large_vocab():
    """lam = 1: draws follow P(t) (Eq. 2) exactly, over a 5,000-term Zipf vocabulary."""
    rng = np.random.default_rng(0)
    V = 5000
    cf = (1e6 / np.arange(1, V + 1) ** 1.1).astype(np.int64) + 1
    cf[rng.integers(0, V, 200)] = 0
    df = np.minimum(cf, 1000)
    stats = sampling.CollectionStats(cf, df, 1000)
    ex = np.zeros(V, np.uint8)
    ex[:3] = 1
    q = [[int(np.argmax(cf[3:] > 0)) + 3, 10]]
    model = sampling.KeywordModel("baseline", "popular", lam=1.0, length_dist=[0, 1.0])
    with _dispatch.force("cpp", "sampling"):
        ids, _ = model.generate(q, None, stats, m=400_000, seed=9, exclude=ex)
    expected = np.where(ex == 0, cf, 0).astype(np.float64)
    stat, dof, pv = chi2_test(np.bincount(ids, minlength=V), expected)
    assert pv > P_MIN, f"chi2 = {stat:.1f} on {dof} dof, p = {pv:.2e}"
