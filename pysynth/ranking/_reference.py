"""Pure-Python twin of ``pysynth._core.ranking`` (the specification and test oracle).

Same function names and signatures as the compiled module, and the same
floating-point operations in the same order, so both backends agree bit for
bit.  Readability over speed: every query is handled by a plain loop.

Inputs are what the public layer (:mod:`pysynth.ranking`) hands over after
validating them: ``scores`` converted to float64, ``labels`` to int8,
``offsets`` to int64.  The checks repeated here are the ones the C++ side
makes too (and both raise ``ValueError`` for them), so a direct call with bad
data fails the same way on either backend.

Definitions (see :mod:`pysynth.ranking` for the sources)
--------------------------------------------------------
Ranking (per query ``q`` with candidates ``offsets[q] .. offsets[q+1]-1``,
``n_q`` of them, ``R_q`` relevant): candidates are ranked by score descending;
equal scores are ordered by position ascending (the candidate that comes first
in the input ranks higher).  With ranks ``1..n_q``:

* ``P@k  = #(relevant among the first min(k, n_q)) / min(k, n_q)``; 0 if ``n_q == 0``;
* ``RR   = 1 / rank of the first relevant candidate``; 0 if ``R_q == 0``;
* ``AP   = (1 / R_q) * sum over relevant candidates, in rank order, of
  (#relevant at rank <= r) / r``; 0 if ``R_q == 0``;
* ``n_relevant = R_q``.

AUC: all (score, label) pairs are pooled.  The ROC curve runs through
``(fp / N, tp / P)`` after each group of equal scores (scores descending); a
tie group is one threshold step, i.e. a straight diagonal segment.  The area
under it from fpr 0 to the limit ``L`` is accumulated in count units
(twice the trapezoid area, ``sum dfp * (tp0 + tp1)``) and divided by
``2 * P * (max_fpr * N)``, i.e. normalized by ``max_fpr``.  With
``interpolate=True`` the area above the curve is accumulated too, and when it
is the smaller one the result is ``1 - above / (2 * P * max_fpr * N)``, so
that rounding never takes a perfect ranking away from exactly 1.  ``L`` is
``max_fpr * N`` (``interpolate=True``, linear interpolation inside the segment
that crosses it) or ``m - 1`` with ``m`` the smallest negative count with
``m / N >= max_fpr`` (``interpolate=False``, darsh10/qra_code's AUCMeter).
"""

from __future__ import annotations

import math
import operator

import numpy as np

from pysynth import _validate as _v

__all__ = ["auc_at", "ranking_stats"]


def _flat(scores, labels) -> tuple[np.ndarray, np.ndarray]:
    s = np.asarray(scores, dtype=np.float64)
    lab = np.asarray(labels, dtype=np.int8)
    if s.ndim != 1:
        raise ValueError(f"scores must be 1-D, got {s.ndim}-D")
    if lab.ndim != 1:
        raise ValueError(f"labels must be 1-D, got {lab.ndim}-D")
    if lab.shape[0] != s.shape[0]:
        raise ValueError(
            f"labels has {lab.shape[0]} entries but scores has {s.shape[0]}; "
            "pass one label per score"
        )
    for i in range(s.shape[0]):
        if math.isnan(s[i]):
            raise ValueError(f"scores[{i}] is NaN; remove or replace NaN scores")
        if lab[i] != 0 and lab[i] != 1:
            raise ValueError(f"labels[{i}] is {int(lab[i])}; labels must be 0 or 1")
    return s, lab


def ranking_stats(scores, labels, offsets, k: int) -> np.ndarray:
    """Per-query ``[P@k, reciprocal rank, average precision, n_relevant]``, shape (Q, 4)."""
    k = operator.index(k)
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    s, lab = _flat(scores, labels)
    off = np.asarray(offsets, dtype=np.int64)
    _v.offsets(off, s.shape[0], "offsets", "the number of scores")

    n_queries = off.shape[0] - 1
    out = np.zeros((n_queries, 4), dtype=np.float64)
    for q in range(n_queries):
        lo, hi = int(off[q]), int(off[q + 1])
        n_q = hi - lo
        qs = [float(x) for x in s[lo:hi]]
        ql = [int(x) for x in lab[lo:hi]]
        # score descending; sorted() is stable, so ties keep position order
        order = sorted(range(n_q), key=lambda i: -qs[i])
        cutoff = min(k, n_q)
        hits = 0  # relevant candidates seen so far
        top = 0  # relevant candidates within the first `cutoff` ranks
        rr = 0.0
        ap_sum = 0.0
        for rank, i in enumerate(order, start=1):
            if ql[i] == 1:
                hits += 1
                if hits == 1:
                    rr = 1.0 / float(rank)
                ap_sum += float(hits) / float(rank)
                if rank <= cutoff:
                    top += 1
        out[q, 0] = float(top) / float(cutoff) if cutoff > 0 else 0.0
        out[q, 1] = rr
        out[q, 2] = ap_sum / float(hits) if hits > 0 else 0.0
        out[q, 3] = float(hits)
    return out


def auc_at(scores, labels, max_fpr: float, interpolate: bool = True) -> float:
    """Area under the pooled ROC curve up to ``max_fpr``, divided by ``max_fpr``."""
    max_fpr = float(max_fpr)
    if not (0.0 < max_fpr <= 1.0):
        raise ValueError(f"max_fpr must be in (0, 1], got {max_fpr!r}")
    s, lab = _flat(scores, labels)
    n = s.shape[0]
    n_pos = sum(1 for i in range(n) if lab[i] == 1)
    n_neg = n - n_pos
    if n_pos == 0 or n_neg == 0:
        raise ValueError(
            f"AUC needs at least one relevant and one non-relevant pair, got "
            f"{n_pos} relevant and {n_neg} non-relevant"
        )

    cut = max_fpr * float(n_neg)  # max_fpr in units of negatives
    if interpolate:
        limit = cut
    else:
        m = 1  # smallest negative count whose fpr reaches max_fpr
        while float(m) / float(n_neg) < max_fpr:
            m += 1
        limit = float(m - 1)

    order = sorted(range(n), key=lambda i: -float(s[i]))
    # twice the area below / above the curve, in (negatives x positives) units
    below2 = 0.0
    above2 = 0.0
    two_p = 2 * n_pos
    fp = tp = 0
    i = 0
    while i < n:
        # one group of equal scores = one step of the ROC curve
        j = i
        d_fp = d_tp = 0
        while j < n and s[order[j]] == s[order[i]]:
            if lab[order[j]] == 1:
                d_tp += 1
            else:
                d_fp += 1
            j += 1
        fp1, tp1 = fp + d_fp, tp + d_tp
        if float(fp1) <= limit:
            below2 += float(d_fp) * float(tp + tp1)
            above2 += float(d_fp) * float(two_p - tp - tp1)
        else:
            # the segment crosses the limit: cut it there (linear interpolation)
            w = limit - float(fp)
            t_mid = float(tp) + float(d_tp) * w / float(d_fp)
            below2 += w * (float(tp) + t_mid)
            above2 += w * (float(two_p - tp) - t_mid)
            break
        fp, tp = fp1, tp1
        i = j
    if interpolate and above2 < below2:
        # the strip [0, max_fpr] x [0, 1] is covered: take the complement of the
        # smaller part, so that a perfect ranking gives exactly 1 (and the worst 0)
        return 1.0 - above2 / float(two_p) / cut
    return below2 / float(two_p) / cut
