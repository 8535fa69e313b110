"""Helpers of the sampling tests: backend comparison, the chi-square tail, small corpora."""
from __future__ import annotations

import math
from typing import Dict, Optional, Sequence

import numpy as np

from pysynth import _dispatch
from pysynth.sampling import Clusters, CollectionStats

import _parity

BACKENDS = _dispatch.available("sampling")
NAMES = sorted(BACKENDS)


def core_all(func: str, *args, **kwargs):
    """``pysynth._core.sampling.<func>`` and its twin, compared (:func:`_parity.call_all`)."""
    return _parity.call_all("sampling", func, *args, **kwargs)


def api_all(fn, *args, **kwargs):
    """A public-API call under every backend, compared (:func:`_parity.run_all`)."""
    return _parity.run_all("sampling", fn, *args, **kwargs)


# ----------------------------------------------------------------------------------
# chi-square tail probability (no scipy): Q(k/2, x/2), the regularized upper gamma
# ----------------------------------------------------------------------------------
def gammaincc(a: float, x: float) -> float:
    """Regularized upper incomplete gamma Q(a, x) (series for x < a + 1, else Lentz's
    continued fraction; Numerical Recipes 6.2)."""
    if x <= 0:
        return 1.0
    lg = math.lgamma(a)
    if x < a + 1:
        term = total = 1.0 / a
        ap = a
        for _ in range(10_000):
            ap += 1
            term *= x / ap
            total += term
            if abs(term) < abs(total) * 1e-15:
                break
        return max(0.0, 1.0 - total * math.exp(-x + a * math.log(x) - lg))
    tiny = 1e-300
    b = x + 1 - a
    c = 1 / tiny
    d = 1 / b
    h = d
    for i in range(1, 10_000):
        an = -i * (i - a)
        b += 2
        d = an * d + b
        d = tiny if abs(d) < tiny else d
        c = b + an / c
        c = tiny if abs(c) < tiny else c
        d = 1 / d
        delta = d * c
        h *= delta
        if abs(delta - 1) < 1e-15:
            break
    return math.exp(-x + a * math.log(x) - lg) * h


def chi2_sf(stat: float, dof: int) -> float:
    return gammaincc(dof / 2.0, stat / 2.0)


def chi2_test(counts: np.ndarray, probs: np.ndarray, min_expected: float = 5.0):
    """Pearson's goodness-of-fit test; cells with expected count < ``min_expected`` are
    pooled into one.  Returns (statistic, dof, p-value).  Fails on an observed count in a
    zero-probability cell (the sampler drew an impossible outcome)."""
    counts = np.asarray(counts, dtype=np.float64).ravel()
    probs = np.asarray(probs, dtype=np.float64).ravel()
    n = counts.sum()
    assert np.all(counts[probs <= 0] == 0), "drew an outcome of probability 0"
    probs = probs / probs.sum()
    exp = probs * n
    big = exp >= min_expected
    obs_c = list(counts[big])
    exp_c = list(exp[big])
    rest_e = exp[~big & (probs > 0)].sum()
    if rest_e > 0:
        obs_c.append(counts[~big & (probs > 0)].sum())
        exp_c.append(rest_e)
    obs_c, exp_c = np.array(obs_c), np.array(exp_c)
    stat = float(((obs_c - exp_c) ** 2 / exp_c).sum())
    dof = max(len(obs_c) - 1, 1)
    return stat, dof, chi2_sf(stat, dof)


# ----------------------------------------------------------------------------------
# small corpora
# ----------------------------------------------------------------------------------
def ragged(rows: Sequence[Sequence[int]]):
    off = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum([len(r) for r in rows], out=off[1:])
    ids = np.array([t for r in rows for t in r], dtype=np.int32)
    return ids, off


def core_args(questions, cluster_rows=None, cluster_index=None, *, vocab_size: int,
              exclude: Optional[Sequence[int]] = None, stats: Optional[CollectionStats] = None,
              length_dist=(0.0, 0.0, 0.0, 0.2, 0.3, 0.25, 0.15, 0.1), strategy="combination",
              weights=(0.5, 0.3, 0.2), m=3, seed=1, first_index=0, max_rejections=8, workers=1) -> Dict:
    """Keyword arguments of the core ``generate`` for a small corpus (stats over questions
    and cluster rows unless given)."""
    q_ids, q_off = ragged(questions)
    cluster_rows = cluster_rows or []
    c_ids, c_off = ragged(cluster_rows)
    if cluster_index is None:
        cluster_index = [-1] * len(questions)
    if stats is None:
        stats = CollectionStats.from_documents(list(questions) + list(cluster_rows), vocab_size)
    ex = np.zeros(vocab_size, dtype=np.uint8)
    if exclude is not None:
        ex[list(exclude)] = 1
    return dict(q_ids=q_ids, q_offsets=q_off, c_ids=c_ids, c_offsets=c_off,
                cluster_index=np.asarray(cluster_index, dtype=np.int64), cf=stats.cf, df=stats.df,
                n_docs=stats.n_docs, exclude=ex, length_dist=np.asarray(length_dist, dtype=np.float64),
                strategy=strategy, w_question=weights[0], w_cluster=weights[1],
                w_collection=weights[2], m=m, seed=seed, first_index=first_index,
                max_rejections=max_rejections, workers=workers)


__all__ = ["BACKENDS", "NAMES", "core_all", "api_all", "chi2_sf", "chi2_test", "gammaincc", "ragged",
           "core_args", "Clusters", "CollectionStats"]
