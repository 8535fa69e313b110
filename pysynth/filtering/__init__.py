"""Filters of synthetic keyword-question pairs: KQF (Eq. 7), TDF (Eq. 8), vocabulary coverage (Fig. 8).

Ding & Balog (2018), "Generating Synthetic Data for Neural Keyword-to-Question Models" (ICTIR
2018), Sect. 3.2 and 6.2: for each question ``q`` of the corpus, ``m = 20`` candidate keyword
queries are generated and each is run against an index of all questions (SDM, top ``N = 100``).

* **Keyword query filter** (Sect. 3.2.1, Eq. 7): keep the candidate ``k_i`` whose result list
  ranks ``q`` highest, ``k = argmax_i 1 / rank(q, R(k_i))``.  :func:`kqf` takes the result
  lists; :func:`kqf_from_ranks` takes the ranks directly (from
  :meth:`pysynth.retrieval.Index.rank_of`, much cheaper than materializing top-N lists).
  ``1 / rank`` is 0 when ``q`` is not retrieved; ties go to the first candidate; the best
  reciprocal rank is returned so that pairs whose question was never retrieved can be dropped.
* **Training data filter** (Sect. 3.2.2, Eq. 8): the quality of a pair ``(k, q)`` is the
  retrieval precision ``P(k, q) = |C_q ∩ RR(k)| / |RR(k)|``, ``C_q`` the paraphrase cluster of
  ``q`` (given as a cluster id per document) and ``RR(k)`` the retrieved top-N.
  :func:`tdf_select` keeps the ``L`` best pairs (precision descending, then pair index ascending).
* **Vocabulary coverage** (Sect. 7.x, Fig. 8): the fraction of the vocabulary of all pairs
  that the ``L`` selected ones still contain, for several ``L`` (:func:`vocabulary_coverage`).

Each function validates its input here and calls the compiled ``pysynth._core.filtering`` or
its Python twin :mod:`pysynth.filtering._reference` (``PYSYNTH_IMPL``); both give identical
results.

Examples
--------
>>> import numpy as np
>>> from pysynth import filtering
>>> # question 7 has 3 candidate queries; their result lists (best first, -1 = padding):
>>> res = filtering.kqf([7], [[3, 7, -1], [7, 3, 9], [1, 2, 3]], candidate_offsets=[0, 3])
>>> res.chosen.tolist(), res.best_rr.tolist(), res.rr.tolist()
([1], [1.0], [0.5, 1.0, 0.0])
>>> p = filtering.tdf_precision([[3, 7, 9], [1, 2]], questions=[7, 2], clusters=[0, 1, 1, 2, 0, 0, 0, 2, 0, 0])
>>> p.tolist()
[0.6666666666666666, 1.0]
>>> filtering.tdf_select(p, 1).tolist()
[1]
"""
from __future__ import annotations

import operator
from typing import Any, NamedTuple, Optional, Sequence

import numpy as np

from pysynth._dispatch import backend
from pysynth._validate import ragged as _ragged
from pysynth._validate import workers as _workers

__all__ = [
    "KqfResult",
    "kqf",
    "kqf_from_ranks",
    "tdf_precision",
    "tdf_order",
    "tdf_select",
    "vocabulary_coverage",
]

_I32_MAX = 2**31 - 1


class KqfResult(NamedTuple):
    """Keyword query filter result (unpacks as ``chosen, best_rr, rr``)."""

    chosen: np.ndarray
    """int32 per question: index of the chosen candidate among its own (0-based); -1 if none."""
    best_rr: np.ndarray
    """float64 per question: reciprocal rank of the question under the chosen candidate (0 = never retrieved)."""
    rr: np.ndarray
    """float64 per candidate: reciprocal rank of its question in its result list (0 = absent)."""




def _ints(x: Any, name: str) -> np.ndarray:
    a = np.asarray(x)
    if a.dtype == object or (a.size and a.dtype.kind not in "iu"):
        raise TypeError(f"{name} must hold integers, got dtype {a.dtype}")
    return a


def _offsets(x: Any, n: int, total: int, name: str) -> np.ndarray:
    o = _ints(x, name)
    if o.ndim != 1 or o.shape[0] != n + 1:
        raise ValueError(f"{name} must be 1-D of length {n + 1}, got shape {o.shape}")
    if o[0] != 0 or o[-1] != total or np.any(np.diff(o) < 0):
        raise ValueError(f"{name} must start at 0, never decrease and end at {total}")
    return o.astype(np.int64)


def _lists(results: Any, result_offsets: Any, name: str):
    """(flat int32 doc ids, int64 offsets) of ranked lists: 2-D (-1 padded), flat + offsets, or lists."""
    if result_offsets is not None:
        r = _ints(results, name)
        if r.ndim != 1:
            raise ValueError(f"{name} must be 1-D when result_offsets is given, got shape {r.shape}")
        o = _ints(result_offsets, "result_offsets")
        if o.ndim != 1 or o.shape[0] < 1:
            raise ValueError("result_offsets must be 1-D of length n + 1 >= 1")
        o = _offsets(o, o.shape[0] - 1, r.shape[0], "result_offsets")
    elif isinstance(results, np.ndarray) and results.ndim == 2:
        r = _ints(results, name)
        o = np.arange(r.shape[0] + 1, dtype=np.int64) * r.shape[1]
        r = r.reshape(-1)
    else:
        try:
            rows = [np.asarray(x) for x in results]
        except TypeError:
            raise TypeError(f"{name} must be a 2-D array, flat ids with result_offsets, or a list of lists") from None
        for i, x in enumerate(rows):
            if x.ndim != 1 or (x.size and x.dtype.kind not in "iu"):
                raise TypeError(f"{name}[{i}] must be a 1-D list of doc ids")
        o = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum([x.size for x in rows], out=o[1:])
        r = np.concatenate(rows) if rows else np.zeros(0, np.int64)
    if r.size and (r.min() < -1 or r.max() > _I32_MAX):
        raise ValueError(f"{name} must hold doc ids in [0, 2**31) or -1 (padding)")
    return np.ascontiguousarray(r, dtype=np.int32), np.ascontiguousarray(o, dtype=np.int64)


def _candidate_offsets(candidate_offsets: Any, m: Optional[int], n_q: int, n_cand: int) -> np.ndarray:
    if (candidate_offsets is None) == (m is None):
        raise ValueError("pass exactly one of candidate_offsets (ragged) and m (candidates per question)")
    if m is not None:
        m = operator.index(m)
        if m < 1:
            raise ValueError(f"m must be >= 1, got {m}")
        if n_q * m != n_cand:
            raise ValueError(f"{n_q} questions x m = {m} candidates is {n_q * m}, but there are {n_cand}")
        return np.arange(n_q + 1, dtype=np.int64) * m
    return _offsets(candidate_offsets, n_q, n_cand, "candidate_offsets")


def _questions(questions: Any) -> np.ndarray:
    q = _ints(questions, "questions")
    if q.ndim != 1:
        raise ValueError(f"questions must be 1-D doc ids, got shape {q.shape}")
    if q.size and (q.min() < 0 or q.max() > _I32_MAX):
        raise ValueError("questions must be doc ids in [0, 2**31)")
    return q.astype(np.int32)


def kqf(
    questions: Any,
    results: Any,
    *,
    candidate_offsets: Any = None,
    m: Optional[int] = None,
    result_offsets: Any = None,
    depth: Optional[int] = None,
    workers: int = 1,
) -> KqfResult:
    """Keyword query filter (Eq. 7): the candidate query whose results rank its question highest.

    Parameters
    ----------
    questions : doc id of each question (int, length Q).
    results : the ranked result list of every candidate query (best first), candidates of
        question 0 first: a 2-D array (one row per candidate, -1 padded, e.g.
        ``Index.search(...).docs``), flat doc ids with ``result_offsets``, or a list of lists.
    candidate_offsets : question ``i`` owns candidates ``candidate_offsets[i]:candidate_offsets[i+1]``;
        or ``m``: every question has ``m`` candidates (the paper's m = 20).
    depth : look at the first ``depth`` results of each list only (the paper's N = 100); default all.
    workers : threads (-1 = all cores).

    Returns
    -------
    KqfResult
        ``chosen`` (int32, candidate index within the question, first on ties; 0 when no
        candidate retrieves the question -- check ``best_rr > 0`` -- and -1 for a question
        without candidates), ``best_rr`` (float64) and ``rr`` (float64 per candidate).

    Examples
    --------
    >>> r = kqf([5, 6], [[5, 1], [1, 5], [2, 3], [6, 2]], m=2)
    >>> r.chosen.tolist(), r.best_rr.tolist()
    ([0, 1], [1.0, 1.0])
    """
    q = _questions(questions)
    r, ro = _lists(results, result_offsets, "results")
    co = _candidate_offsets(candidate_offsets, m, q.shape[0], ro.shape[0] - 1)
    if depth is None:
        dep = 0
    else:
        dep = operator.index(depth)
        if dep < 1:
            raise ValueError(f"depth must be >= 1 (or None for whole lists), got {dep}")
    chosen, best, rr = backend("filtering").kqf_select(q, co, r, ro, dep, _workers(workers))
    return KqfResult(chosen, best, rr)


def kqf_from_ranks(ranks: Any, *, candidate_offsets: Any = None, m: Optional[int] = None) -> KqfResult:
    """Keyword query filter from the rank of each question under each of its candidates.

    ``ranks`` (int, one per candidate): 1-based rank of the candidate's question in its results,
    0 when not retrieved -- what :meth:`pysynth.retrieval.Index.rank_of` returns.  Same rules
    and result as :func:`kqf`.

    Examples
    --------
    >>> kqf_from_ranks([3, 1, 0, 0, 2], candidate_offsets=[0, 2, 5]).chosen.tolist()
    [1, 2]
    """
    rk = _ints(ranks, "ranks")
    if rk.ndim != 1:
        raise ValueError(f"ranks must be 1-D, got shape {rk.shape}")
    if rk.size and rk.min() < 0:
        raise ValueError("ranks must be >= 0 (0 = not retrieved)")
    n_cand = rk.shape[0]
    if m is not None:
        mm = operator.index(m)
        if mm < 1 or n_cand % mm:
            raise ValueError(f"m = {mm} must be >= 1 and divide the {n_cand} candidates")
        n_q = n_cand // mm
    else:
        o = _ints(candidate_offsets, "candidate_offsets")
        n_q = o.shape[0] - 1 if o.ndim == 1 else -1
    co = _candidate_offsets(candidate_offsets, m, n_q, n_cand)
    rr = np.zeros(n_cand, dtype=np.float64)
    hit = rk > 0
    rr[hit] = 1.0 / rk[hit].astype(np.float64)
    sizes = np.diff(co)
    seg = np.repeat(np.arange(n_q), sizes)
    chosen = np.full(n_q, -1, dtype=np.int32)
    best = np.zeros(n_q, dtype=np.float64)
    if n_cand:
        # per question: largest rr, first candidate on ties
        order = np.lexsort((np.arange(n_cand), -rr, seg))
        first = order[np.searchsorted(seg[order], np.arange(n_q)[sizes > 0])]
        qs = seg[first]
        chosen[qs] = (first - co[qs]).astype(np.int32)
        best[qs] = rr[first]
    return KqfResult(chosen, best, rr)


def tdf_precision(
    results: Any,
    *,
    questions: Any,
    clusters: Any,
    result_offsets: Any = None,
    include_self: bool = True,
    workers: int = 1,
) -> np.ndarray:
    """Training data filter quality score (Eq. 8) of every keyword-question pair.

    Parameters
    ----------
    results : the retrieved list ``RR(k)`` of each pair's keyword query: 2-D (-1 padded), flat
        with ``result_offsets``, or a list of lists.  Padding (-1) is ignored, repeats count once.
    questions : doc id of each pair's question.
    clusters : paraphrase cluster id of every document (int, length N): ``C_q`` = documents
        with ``clusters[d] == clusters[q]``.
    include_self : count ``q`` itself as a member of ``C_q`` (default, the paper's cluster).
    workers : threads (-1 = all cores).

    Returns
    -------
    numpy.ndarray of float64: ``|C_q ∩ RR(k)| / |RR(k)|`` per pair, 0 when ``RR(k)`` is empty.
    """
    r, ro = _lists(results, result_offsets, "results")
    q = _questions(questions)
    c = _ints(clusters, "clusters")
    if c.ndim != 1:
        raise ValueError(f"clusters must be 1-D (one cluster id per document), got shape {c.shape}")
    if q.shape[0] != ro.shape[0] - 1:
        raise ValueError(f"questions has {q.shape[0]} entries but there are {ro.shape[0] - 1} result lists")
    if q.size and q.max() >= c.shape[0]:
        raise ValueError(f"questions must be doc ids in [0, len(clusters) = {c.shape[0]})")
    if r.size and r.max() >= c.shape[0]:
        raise ValueError(f"results must be doc ids in [0, len(clusters) = {c.shape[0]}) or -1")
    return backend("filtering").tdf_precision(
        r, ro, q, c.astype(np.int64), bool(include_self), _workers(workers)
    )


def tdf_order(precision: Any) -> np.ndarray:
    """All pairs ranked by TDF quality: precision descending, then pair index ascending (int64)."""
    p = np.asarray(precision, dtype=np.float64)
    if p.ndim != 1:
        raise ValueError(f"precision must be 1-D, got shape {p.shape}")
    if np.isnan(p).any():
        raise ValueError("precision must not contain NaN")
    return np.lexsort((np.arange(p.shape[0]), -p)).astype(np.int64)


def tdf_select(precision: Any, L: int) -> np.ndarray:
    """Indices of the ``L`` best pairs, ``T_L`` (Eq. 8 ranking; ties to the earlier pair)."""
    L = operator.index(L)
    if L < 0:
        raise ValueError(f"L must be >= 0, got {L}")
    return tdf_order(precision)[:L]


def vocabulary_coverage(
    tokens: Any,
    order: Any,
    sizes: Sequence[int],
    *,
    offsets: Any = None,
    vocab_size: Optional[int] = None,
) -> np.ndarray:
    """Fraction of the vocabulary of all rows covered by the first ``L`` rows of ``order`` (Fig. 8).

    Parameters
    ----------
    tokens : the term ids of each pair (e.g. its question, or its keyword query, or both):
        flat with ``offsets``, an object with ``.values`` / ``.offsets``, or a list of lists.
    order : a permutation of the rows, best first (e.g. :func:`tdf_order`).
    sizes : the values of ``L``.
    vocab_size : V (default ``max id + 1``).

    Returns
    -------
    numpy.ndarray of float64, one fraction per ``L``: ``#{terms in rows order[:L]} /
    #{terms in all rows}`` (1.0 for every ``L`` when the rows hold no term at all).

    Examples
    --------
    >>> vocabulary_coverage([[0, 1], [1, 2], [3]], order=[2, 0, 1], sizes=[0, 1, 2, 3]).tolist()
    [0.0, 0.25, 0.75, 1.0]
    """
    t, o = _ragged(tokens, offsets, "tokens")
    n_rows = o.shape[0] - 1
    ordr = _ints(order, "order")
    if ordr.ndim != 1:
        raise ValueError(f"order must be 1-D, got shape {ordr.shape}")
    if vocab_size is None:
        vocab_size = int(t.max()) + 1 if t.size else 0
    vocab_size = operator.index(vocab_size)
    if t.size and t.max() >= vocab_size:
        raise ValueError(f"tokens must be ids in [0, vocab_size = {vocab_size})")
    Ls = np.asarray([operator.index(x) for x in sizes], dtype=np.int64)
    if Ls.size and Ls.min() < 0:
        raise ValueError("sizes must be >= 0")
    first = backend("filtering").first_rank(t, o, ordr.astype(np.int64), vocab_size)
    present = np.sort(first[first >= 0])
    if present.size == 0:
        return np.ones(Ls.shape[0], dtype=np.float64)
    covered = np.searchsorted(present, np.minimum(Ls, n_rows), side="left")
    return covered / present.size
