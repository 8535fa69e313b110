"""Pure-Python twin of ``pysynth._core.filtering``: the specification and the test oracle.

Same function names and signatures as the compiled module; plain loops.  Definitions follow
Ding & Balog (2018), "Generating Synthetic Data for Neural Keyword-to-Question Models" (ICTIR
2018), Sect. 3.2 and Fig. 8; see :mod:`pysynth.filtering` for the public API.
"""
from __future__ import annotations

import operator
from typing import Tuple

import numpy as np

from pysynth import _validate as _v
from pysynth._validate import workers as _workers

__all__ = ["kqf_select", "tdf_precision", "first_rank"]


def _vec(x, dtype, name: str) -> np.ndarray:
    a = np.asarray(x)
    if a.ndim != 1:
        raise ValueError(f"{name} must be a 1-D integer array")
    return a.astype(dtype, copy=False)


def _offsets(off: np.ndarray, total: int, name: str, what: str) -> None:
    _v.offsets(off, total, name, f"the number of {what}")


def kqf_select(
    questions, candidate_offsets, results, result_offsets, depth: int, workers: int
) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Keyword query filter (Ding & Balog 2018, Eq. 7): the best candidate query per question.

    Question ``i`` (document id ``questions[i]``) owns the candidate queries
    ``c in [candidate_offsets[i], candidate_offsets[i+1])``; candidate ``c`` retrieved the ranked
    list ``results[result_offsets[c]:result_offsets[c+1]]`` (best first).

    * ``rr[c] = 1 / rank`` where ``rank`` is the 1-based position of the first occurrence of
      ``questions[i]`` in the list (only its first ``depth`` entries when ``depth > 0``), and 0
      when the question is absent;
    * ``chosen[i]`` = the candidate (0-based index among the question's candidates) with the
      largest ``rr``; ties go to the **first** such candidate, so a question that none of its
      candidates retrieves gets candidate 0 (with ``best_rr`` 0: threshold on ``best_rr``);
      -1 for a question without candidates;
    * ``best_rr[i]`` = ``rr`` of the chosen candidate (0 when there is none).

    Returns ``(chosen int32, best_rr float64, rr float64)``.
    """
    _workers(workers)
    q = _vec(questions, np.int32, "questions")
    co = _vec(candidate_offsets, np.int64, "candidate_offsets")
    r = _vec(results, np.int32, "results")
    ro = _vec(result_offsets, np.int64, "result_offsets")
    if ro.shape[0] < 1:
        raise ValueError("result_offsets must have length n + 1 >= 1")
    if co.shape[0] != q.shape[0] + 1:
        raise ValueError(
            f"candidate_offsets must have len(questions) + 1 = {q.shape[0] + 1} entries, got {co.shape[0]}"
        )
    depth = operator.index(depth)
    if depth < 0:
        raise ValueError(f"depth must be >= 0 (0 = whole lists), got {depth}")
    n_cand = ro.shape[0] - 1
    _offsets(co, n_cand, "candidate_offsets", "candidates")
    _offsets(ro, r.shape[0], "result_offsets", "results")
    chosen = np.full(q.shape[0], -1, dtype=np.int32)
    best_rr = np.zeros(q.shape[0], dtype=np.float64)
    rr = np.zeros(n_cand, dtype=np.float64)
    for i in range(q.shape[0]):
        best, best_v = -1, 0.0
        for c in range(int(co[i]), int(co[i + 1])):
            lst = r[ro[c] : ro[c + 1]].tolist()
            if depth > 0:
                lst = lst[:depth]
            v = 0.0
            if int(q[i]) in lst:
                v = 1.0 / (lst.index(int(q[i])) + 1)
            rr[c] = v
            if best < 0 or v > best_v:
                best, best_v = c - int(co[i]), v
        chosen[i] = best
        best_rr[i] = best_v
    return chosen, best_rr, rr


def tdf_precision(
    results, result_offsets, questions, clusters, include_self: bool, workers: int
) -> np.ndarray:
    """Training data filter quality score (Ding & Balog 2018, Eq. 8) of every pair.

    Pair ``i`` is (keyword query ``k_i``, question ``questions[i]``); ``k_i`` retrieved
    ``results[result_offsets[i]:result_offsets[i+1]]`` (entries < 0 are padding and ignored;
    a repeated doc id counts once).  ``C_q`` is the paraphrase cluster of ``q``: the documents
    whose ``clusters`` id equals ``clusters[q]``, ``q`` itself included when ``include_self``.
    ``P(k, q) = |C_q ∩ RR(k)| / |RR(k)|``, 0 when nothing was retrieved.

    Returns float64, one value per pair.
    """
    _workers(workers)
    r = _vec(results, np.int32, "results")
    ro = _vec(result_offsets, np.int64, "result_offsets")
    q = _vec(questions, np.int32, "questions")
    cl = _vec(clusters, np.int64, "clusters")
    if ro.shape[0] < 1:
        raise ValueError("result_offsets must have length n + 1 >= 1")
    n = ro.shape[0] - 1
    if q.shape[0] != n:
        raise ValueError(f"questions must have one entry per result list ({n}), got {q.shape[0]}")
    _offsets(ro, r.shape[0], "result_offsets", "results")
    N = cl.shape[0]
    for i in range(n):
        if not 0 <= q[i] < N:
            raise ValueError(f"questions[{i}] = {int(q[i])} is not a document id in [0, {N}) (len(clusters))")
    for j in range(r.shape[0]):
        if r[j] >= N:
            raise ValueError(f"results[{j}] = {int(r[j])} is not a document id in [0, {N}) (len(clusters))")
    out = np.zeros(n, dtype=np.float64)
    for i in range(n):
        rr = {int(d) for d in r[ro[i] : ro[i + 1]] if d >= 0}
        qi = int(q[i])
        cq = {d for d in rr if cl[d] == cl[qi] and (include_self or d != qi)}
        out[i] = len(cq) / len(rr) if rr else 0.0
    return out


def first_rank(tokens, offsets, order, vocab_size: int) -> np.ndarray:
    """First rank position at which each term appears when rows are taken in ``order``.

    Rows ``r = tokens[offsets[r]:offsets[r+1]]`` (e.g. the questions, or keyword queries, of the
    synthetic pairs); ``order`` is a permutation of the rows, best first (e.g. by TDF score).
    ``first[t]`` is the smallest ``j`` such that row ``order[j]`` contains ``t``, -1 when no row
    does.  The vocabulary coverage of the first ``L`` rows (Ding & Balog 2018, Fig. 8) is
    ``#{t : 0 <= first[t] < L} / #{t : first[t] >= 0}``.

    Returns int64 of length ``vocab_size``.
    """
    t = _vec(tokens, np.int32, "tokens")
    off = _vec(offsets, np.int64, "offsets")
    order = _vec(order, np.int64, "order")
    vocab_size = operator.index(vocab_size)
    if vocab_size < 0:
        raise ValueError(f"vocab_size must be >= 0, got {vocab_size}")
    _offsets(off, t.shape[0], "offsets", "tokens")
    n_rows = off.shape[0] - 1
    if order.shape[0] != n_rows:
        raise ValueError(f"order must be a permutation of the {n_rows} rows, got {order.shape[0]} entries")
    rank_of = [-1] * n_rows
    for j in range(n_rows):
        row = int(order[j])
        if not 0 <= row < n_rows or rank_of[row] >= 0:
            raise ValueError(
                f"order must be a permutation of 0..{n_rows - 1}; order[{j}] = {row} is out of range or repeated"
            )
        rank_of[row] = j
    first = np.full(vocab_size, -1, dtype=np.int64)
    for row in range(n_rows):
        for j in range(int(off[row]), int(off[row + 1])):
            term = int(t[j])
            if not 0 <= term < vocab_size:
                raise ValueError(f"tokens[{j}] = {term} is outside [0, vocab_size = {vocab_size})")
            if first[term] < 0 or rank_of[row] < first[term]:
                first[term] = rank_of[row]
    return first
