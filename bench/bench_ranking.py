"""Benchmarks of the ranking stage: compiled backend vs Python twin vs a NumPy baseline.

Workload: 100,000 queries x 20 candidates (2M scored pairs), about two
relevant candidates per query, scores rounded to 3 decimals (so ties occur).

Run:  pytest bench/bench_ranking.py --benchmark-only
      (groups: ranking_stats, auc_at_0.05; the Python twin runs one round)

The NumPy baseline is a vectorized implementation written here (no
scikit-learn); each benchmark also checks it against the backend result.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("pytest_benchmark")

from pysynth._dispatch import available

N_QUERIES = 100_000
N_CANDS = 20
K = 5
MAX_FPR = 0.05
BACKENDS = available("ranking")


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(2018)
    n = N_QUERIES * N_CANDS
    labels = (rng.random(n) < 0.1).astype(np.int8)
    scores = np.round(rng.normal(size=n) + 1.5 * labels, 3)
    offsets = np.arange(N_QUERIES + 1, dtype=np.int64) * N_CANDS
    return scores, labels, offsets


# --------------------------------------------------------------------------
# NumPy baseline (vectorized; same definitions, different operation order)
# --------------------------------------------------------------------------
def numpy_ranking_stats(scores, labels, offsets, k):
    n_q = np.diff(offsets)
    qid = np.repeat(np.arange(n_q.size), n_q)
    pos = np.arange(scores.size)
    order = np.lexsort((pos, -scores, qid))  # query, then score desc, then position
    rank = pos - offsets[qid] + 1  # rank of the item at each sorted slot
    rel = labels[order].astype(np.float64)
    hits = np.cumsum(rel)
    start = np.concatenate([[0.0], hits])[offsets[:-1]]
    hits_in_q = hits - start[qid]
    cutoff = np.minimum(k, n_q)
    top = np.bincount(qid, weights=rel * (rank <= cutoff[qid]), minlength=n_q.size)
    n_rel = np.bincount(qid, weights=rel, minlength=n_q.size)
    ap_sum = np.bincount(qid, weights=rel * hits_in_q / rank, minlength=n_q.size)
    first = np.full(n_q.size, np.inf)
    np.minimum.at(first, qid[rel > 0], rank[rel > 0])
    out = np.zeros((n_q.size, 4))
    out[:, 0] = np.divide(top, cutoff, out=np.zeros(n_q.size), where=cutoff > 0)
    out[:, 1] = np.where(np.isfinite(first), 1.0 / first, 0.0)
    out[:, 2] = np.divide(ap_sum, n_rel, out=np.zeros(n_q.size), where=n_rel > 0)
    out[:, 3] = n_rel
    return out


def numpy_auc_at(scores, labels, max_fpr):
    order = np.argsort(-scores, kind="stable")
    s = scores[order]
    lab = labels[order].astype(np.int64)
    ends = np.flatnonzero(np.diff(s) != 0)  # last index of each tie group
    ends = np.concatenate([ends, [s.size - 1]])
    tp = np.concatenate([[0], np.cumsum(lab)[ends]]).astype(np.float64)
    fp = np.concatenate([[0], np.cumsum(1 - lab)[ends]]).astype(np.float64)
    x, y = fp / fp[-1], tp / tp[-1]
    x0, x1, y0, y1 = x[:-1], x[1:], y[:-1], y[1:]
    use = x0 < max_fpr
    x0, x1, y0, y1 = x0[use], x1[use], y0[use], y1[use]
    x1c = np.minimum(x1, max_fpr)
    slope = np.divide(y1 - y0, x1 - x0, out=np.zeros_like(x0), where=x1 > x0)
    ym = np.where(x1 > max_fpr, y0 + slope * (x1c - x0), y1)
    return float(np.sum((x1c - x0) * (y0 + ym) / 2.0) / max_fpr)


# --------------------------------------------------------------------------
# benchmarks
# --------------------------------------------------------------------------
def _run(benchmark, name, fn, *args):
    if name == "python":  # pure-Python loops: one round is plenty
        return benchmark.pedantic(fn, args=args, rounds=1, iterations=1)
    return benchmark(fn, *args)


@pytest.mark.benchmark(group="ranking_stats")
@pytest.mark.parametrize("impl", ["cpp", "python", "numpy"])
def test_bench_ranking_stats(benchmark, data, impl):
    scores, labels, offsets = data
    if impl == "numpy":
        got = benchmark(numpy_ranking_stats, scores, labels, offsets, K)
    else:
        if impl not in BACKENDS:
            pytest.skip(f"{impl} backend not built")
        got = _run(benchmark, impl, BACKENDS[impl].ranking_stats, scores, labels, offsets, K)
    ref = numpy_ranking_stats(scores, labels, offsets, K)
    np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-12)


@pytest.mark.benchmark(group="auc_at_0.05")
@pytest.mark.parametrize("impl", ["cpp", "python", "numpy"])
def test_bench_auc_at(benchmark, data, impl):
    scores, labels, _ = data
    if impl == "numpy":
        got = benchmark(numpy_auc_at, scores, labels, MAX_FPR)
    else:
        if impl not in BACKENDS:
            pytest.skip(f"{impl} backend not built")
        got = _run(benchmark, impl, BACKENDS[impl].auc_at, scores, labels, MAX_FPR, True)
    assert abs(got - numpy_auc_at(scores, labels, MAX_FPR)) < 1e-9
