"""Ranking metrics for duplicate-question retrieval: P@k, MRR, MAP and AUC(0.05).

These are the evaluation measures of Rücklé, Moosavi & Gurevych (2019),
"Neural Duplicate Question Detection without Labeled Training Data" (EMNLP
2019): P@5 (and MAP, MRR, P@1) on AskUbuntu-Lei, following Lei et al. (2016),
and AUC(0.05) on Android / Apple / AskUbuntu / SuperUser, following Shah et
al. (2018), "Adversarial Domain Adaptation for Duplicate Question Detection"
(EMNLP 2018).  All values are fractions in [0, 1] (the papers print them
multiplied by 100).

Data layout
-----------
Q queries with ragged candidate lists are passed flat: ``scores`` (float64;
float32 and integers are converted) and ``labels`` (bool or integer 0/1,
1 = relevant / duplicate) hold all candidates of all queries back to back and
``offsets`` (int64, length Q + 1) says that query ``q`` owns
``scores[offsets[q]:offsets[q + 1]]``.  Lists of per-query lists
(``scores=[[0.3, 0.9], [0.1]]``, ``labels=[[0, 1], [1]]``, no ``offsets``)
and rectangular 2-D arrays (one row per query) are accepted too.

Definitions
-----------
Ranking.  Within a query, candidates are ranked by score, highest first;
**equal scores are ordered by position, the earlier candidate first** (one
deterministic rule, so a tie never depends on the sort algorithm).  For a
query with ``n`` candidates, ``R`` of them relevant, at ranks ``r_1 < ... < r_R``:

* ``P@k = #{i : r_i <= min(k, n)} / min(k, n)`` (0 when ``n == 0``).  The
  denominator is ``min(k, n)``, as in Lei et al.'s evaluation code that
  Rücklé et al. reuse; it is ``k`` whenever a query has at least ``k``
  candidates (AskUbuntu-Lei has 20).
* reciprocal rank ``RR = 1 / r_1``; ``0`` when ``R == 0``.
* average precision ``AP = (1 / R) * sum_i i / r_i``; ``0`` when ``R == 0``.
  ``R`` counts the relevant candidates in the list (no outside recall base).
* P@k, MRR and MAP are the means of the per-query values over the queries;
  with ``skip_no_relevant=True`` (the default, as in Lei et al.'s
  evaluation, whose data reader drops queries without a duplicate) queries
  with ``R == 0`` are left out of the mean.

AUC(max_fpr).  All (query, candidate) pairs are pooled into one set of
``P`` positive and ``N`` negative scores (Shah et al.'s evaluation feeds every
pair of a split into one ``AUCMeter``; queries play no part).  The ROC curve
joins ``(fpr, tpr) = (fp / N, tp / P)`` after each *group of equal scores*,
scores descending: **tied scores are one threshold step, so the curve goes
diagonally through a tie group** (the standard ROC definition; order
independent).  ``AUC(max_fpr)`` is the trapezoidal area under that curve for
``0 <= fpr <= max_fpr``, with linear interpolation inside the segment that
crosses ``max_fpr``, divided by ``max_fpr``: a perfect ranking scores 1, a
random one about ``max_fpr / 2``, the worst 0.  (When the area above the
curve is the smaller part, the value is computed as 1 minus it, so rounding
never moves a perfect ranking off exactly 1.)  It is *not* McClish-corrected
(unlike scikit-learn's ``roc_auc_score(max_fpr=...)``).

Relation to the released code of Shah et al. (``darsh10/qra_code``,
``utils/meter.py``, ``AUCMeter.value(max_fpr)``): it sorts all pooled scores
descending, builds the ROC curve one pair at a time (tpr and fpr as running
counts divided by ``P`` and ``N``), takes ``n`` = the first point whose fpr is
``>= max_fpr``, sums trapezoids over the points *before* ``n`` only and
divides by ``max_fpr``.  It therefore stops at ``fpr = (m - 1) / N`` (``m`` the
smallest negative count with ``m / N >= max_fpr``) and does not interpolate,
which under-counts by at most ``1 / (N * max_fpr)`` (e.g. 0.0002 for
100,000 negatives; with ``N = 100`` and ``max_fpr = 0.05`` a perfect ranking
gets 0.8), and it orders tied scores however ``torch.sort`` leaves them.
``truncation="qra_code"`` reproduces its stopping rule exactly (identical
values whenever no scores are tied, up to floating-point rounding), with this
module's tie rule.

Backends
--------
Each function validates its input here, then calls the compiled
``pysynth._core.ranking`` or its pure-Python twin
``pysynth.ranking._reference`` (chosen by :mod:`pysynth._dispatch`,
``PYSYNTH_IMPL``); both give bit-identical results.

References
----------
Shah, D., Lei, T., Moschitti, A., Romeo, S., Nakov, P. (2018). Adversarial
Domain Adaptation for Duplicate Question Detection. EMNLP 2018.

Rücklé, A., Moosavi, N. S., Gurevych, I. (2019). Neural Duplicate Question
Detection without Labeled Training Data. EMNLP-IJCNLP 2019.

Lei, T., Joshi, H., Barzilay, R., Jaakkola, T., Tymoshenko, K., Moschitti, A.,
Màrquez, L. (2016). Semi-supervised Question Retrieval with Gated
Convolutions. NAACL 2016.
"""

from __future__ import annotations

import numbers
import operator
from typing import Any

import numpy as np

from pysynth import _validate as _v
from pysynth._dispatch import backend

__all__ = [
    "auc_at",
    "average_precisions",
    "evaluate_rankings",
    "mean_average_precision",
    "mean_reciprocal_rank",
    "precision_at_k",
    "ranking_stats",
    "reciprocal_ranks",
]

_TRUNCATIONS = ("interpolate", "qra_code")


# --------------------------------------------------------------------------
# input validation and conversion
# --------------------------------------------------------------------------
def _is_nested(x: Any) -> bool:
    """True for a list/tuple whose items are sequences (a list of per-query lists)."""
    if not isinstance(x, (list, tuple)):
        return False
    return len(x) > 0 and all(isinstance(item, (list, tuple, np.ndarray)) for item in x)


def _numeric(x: Any, name: str, hint: str) -> np.ndarray:
    try:
        arr = np.asarray(x)
    except (ValueError, TypeError) as exc:  # ragged nested input and the like
        raise TypeError(f"{name} could not be read as a numeric array ({exc}); {hint}") from None
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{name} must be numeric, got dtype {arr.dtype}; {hint}")
    return arr


def _scores_1d(x: Any, name: str = "scores") -> np.ndarray:
    arr = _numeric(x, name, "pass float64 or float32 scores")
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {arr.shape}; flatten it and pass offsets")
    arr = np.ascontiguousarray(arr, dtype=np.float64)
    bad = np.flatnonzero(np.isnan(arr))
    if bad.size:
        raise ValueError(
            f"{name}[{bad[0]}] is NaN ({bad.size} NaN scores in all); "
            "remove those candidates or replace NaN by a real score"
        )
    return arr


def _labels_1d(x: Any, n: int, name: str = "labels") -> np.ndarray:
    arr = _numeric(x, name, "pass bool or integer 0/1 labels (1 = relevant)")
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {arr.shape}; flatten it like scores")
    if arr.shape[0] != n:
        raise ValueError(
            f"{name} has {arr.shape[0]} entries but scores has {n}; pass one label per score"
        )
    bad = np.flatnonzero((arr != 0) & (arr != 1))
    if bad.size:
        raise ValueError(
            f"{name}[{bad[0]}] is {arr[bad[0]]!r}; labels must be 0 or 1 (1 = relevant)"
        )
    return np.ascontiguousarray(arr, dtype=np.int8)


def _offsets_1d(x: Any, n: int) -> np.ndarray:
    hint = "pass int64 offsets of length Q + 1 (query q owns scores[offsets[q]:offsets[q+1]])"
    arr = _numeric(x, "offsets", hint)
    if arr.size and arr.dtype.kind not in "iu":
        raise TypeError(f"offsets must be integers, got dtype {arr.dtype}; {hint}")
    return _v.offsets(arr, n, "offsets", "len(scores)", f"; {hint}")


def _flatten_nested(scores: Any, labels: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Lists of per-query lists (or 2-D arrays) -> flat scores, labels, offsets."""
    if isinstance(scores, np.ndarray) and scores.ndim == 2:
        s2 = _numeric(scores, "scores", "pass float64 or float32 scores")
        l2 = _numeric(labels, "labels", "pass bool or integer 0/1 labels (1 = relevant)")
        if l2.shape != s2.shape:
            raise ValueError(
                f"labels has shape {l2.shape} but scores has shape {s2.shape}; "
                "pass one label per score"
            )
        q, c = s2.shape
        offsets = np.arange(q + 1, dtype=np.int64) * c
        return s2.reshape(-1), l2.reshape(-1), offsets
    if not isinstance(labels, (list, tuple, np.ndarray)) or len(labels) != len(scores):
        n_lab = len(labels) if hasattr(labels, "__len__") else "no"
        raise ValueError(
            f"scores is a list of {len(scores)} per-query lists, so labels must be one too; "
            f"got {n_lab} entries"
        )
    lengths = []
    for q, (sq, lq) in enumerate(zip(scores, labels)):
        if not isinstance(sq, (list, tuple, np.ndarray)) or not isinstance(
            lq, (list, tuple, np.ndarray)
        ):
            raise TypeError(
                f"scores[{q}] and labels[{q}] must both be lists of numbers (one list per query)"
            )
        if len(sq) != len(lq):
            raise ValueError(
                f"query {q}: labels has {len(lq)} entries but scores has {len(sq)}; "
                "pass one label per score"
            )
        lengths.append(len(sq))
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    flat_s = [v for sq in scores for v in sq]
    flat_l = [v for lq in labels for v in lq]
    s = _numeric(flat_s, "scores", "pass float64 or float32 scores") if flat_s else np.zeros(0)
    lab = (
        _numeric(flat_l, "labels", "pass bool or integer 0/1 labels (1 = relevant)")
        if flat_l
        else np.zeros(0, dtype=np.int8)
    )
    return s, lab, offsets


def _prepare(scores: Any, labels: Any, offsets: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Validated (scores float64, labels int8, offsets int64), all C-contiguous."""
    if offsets is None:
        if _is_nested(scores) or (isinstance(scores, np.ndarray) and scores.ndim == 2):
            scores, labels, offsets = _flatten_nested(scores, labels)
        elif isinstance(scores, (list, tuple)) and len(scores) == 0:
            offsets = np.zeros(1, dtype=np.int64)
        else:
            raise TypeError(
                "offsets is missing: pass offsets (int64, length Q + 1) with flat scores "
                "and labels, or pass scores and labels as lists of per-query lists"
            )
    elif _is_nested(scores):
        raise TypeError(
            "scores is a list of per-query lists, so offsets must be omitted "
            "(they are derived from the list lengths); or pass flat scores with offsets"
        )
    s = _scores_1d(scores)
    lab = _labels_1d(labels, s.shape[0])
    off = _offsets_1d(offsets, s.shape[0])
    return s, lab, off


def _check_k(k: Any) -> int:
    if isinstance(k, bool):
        raise TypeError("k must be an integer >= 1, got a bool")
    try:
        k = operator.index(k)
    except TypeError:
        raise TypeError(f"k must be an integer >= 1, got {type(k).__name__} {k!r}") from None
    if k < 1:
        raise ValueError(f"k must be >= 1 (the number of top-ranked candidates), got {k}")
    return k


def _check_max_fpr(max_fpr: Any) -> float:
    if isinstance(max_fpr, bool) or not isinstance(max_fpr, numbers.Real):
        raise TypeError(
            f"max_fpr must be a real number in (0, 1], got {type(max_fpr).__name__} {max_fpr!r}"
        )
    value = float(max_fpr)
    if not (0.0 < value <= 1.0):
        raise ValueError(
            f"max_fpr must be in (0, 1] (a false-positive rate, e.g. 0.05), got {max_fpr!r}"
        )
    return value


def _check_truncation(truncation: Any) -> bool:
    return _v.choice(truncation, "truncation", _TRUNCATIONS) == "interpolate"


def _stats(scores: Any, labels: Any, offsets: Any, k: Any) -> np.ndarray:
    k = _check_k(k)
    s, lab, off = _prepare(scores, labels, offsets)
    return backend("ranking").ranking_stats(s, lab, off, k)


def _mean(values: np.ndarray, n_relevant: np.ndarray, skip_no_relevant: bool, what: str) -> float:
    keep = n_relevant > 0 if skip_no_relevant else np.ones(values.shape[0], dtype=bool)
    if not keep.any():
        why = "no query has a relevant candidate" if skip_no_relevant else "there are no queries"
        raise ValueError(f"{what} is undefined: {why}; pass at least one query with a label of 1")
    return float(np.mean(values[keep]))


# --------------------------------------------------------------------------
# public API
# --------------------------------------------------------------------------
def ranking_stats(scores: Any, labels: Any, offsets: Any | None = None, k: int = 5) -> np.ndarray:
    """Per-query ranking statistics: P@k, reciprocal rank, average precision, #relevant.

    Parameters
    ----------
    scores : array_like of float, shape (n,), or list of per-query lists
        Scores of all candidates of all queries, higher = more likely relevant.
    labels : array_like of bool or int (0/1), same layout as `scores`
        1 marks a relevant candidate (a duplicate question).
    offsets : array_like of int, shape (Q + 1,), optional
        Query ``q`` owns candidates ``offsets[q]:offsets[q + 1]``.  Omit it when
        `scores` and `labels` are lists of per-query lists or 2-D arrays.
    k : int, default 5
        Cut-off of P@k.

    Returns
    -------
    numpy.ndarray of float64, shape (Q, 4)
        Columns ``[P@k, reciprocal rank, average precision, n_relevant]``, as
        defined in the module docstring (ties by position; RR = AP = 0 for a
        query without a relevant candidate).

    Examples
    --------
    >>> ranking_stats([[0.2, 0.9, 0.4]], [[1, 0, 1]], k=2)
    array([[0.5       , 0.5       , 0.58333333, 2.        ]])
    """
    return _stats(scores, labels, offsets, k)


def precision_at_k(
    scores: Any,
    labels: Any,
    offsets: Any | None = None,
    k: int = 5,
    skip_no_relevant: bool = True,
) -> float:
    """Mean precision at ``k`` over queries (P@5 of Lei et al. 2016 / Rücklé et al. 2019).

    Per query, ``P@k = (relevant among the top min(k, n)) / min(k, n)`` with
    candidates ranked by score descending, ties by position ascending.

    Parameters
    ----------
    scores : array_like of float, shape (n,), or list of per-query lists
        Scores of all candidates of all queries, higher = more likely relevant.
    labels : array_like of bool or int (0/1), same layout as `scores`
        1 marks a relevant candidate.
    offsets : array_like of int, shape (Q + 1,), optional
        Query boundaries; omit for lists of per-query lists or 2-D arrays.
    k : int, default 5
        Number of top-ranked candidates looked at.
    skip_no_relevant : bool, default True
        Leave queries without any relevant candidate out of the mean (as
        Lei et al.'s AskUbuntu evaluation does).

    Returns
    -------
    float
        Mean P@k in [0, 1].

    Raises
    ------
    ValueError
        If no query is left to average over, or on malformed input.

    Examples
    --------
    >>> precision_at_k([[0.9, 0.8, 0.1], [0.3, 0.7]], [[1, 0, 1], [0, 1]], k=1)
    1.0
    >>> precision_at_k([[0.9, 0.8, 0.1], [0.3, 0.7]], [[1, 0, 1], [0, 1]], k=2)
    0.5
    """
    st = _stats(scores, labels, offsets, k)
    return _mean(st[:, 0], st[:, 3], skip_no_relevant, "P@k")


def reciprocal_ranks(scores: Any, labels: Any, offsets: Any | None = None) -> np.ndarray:
    """Reciprocal rank of the first relevant candidate, per query.

    Parameters
    ----------
    scores : array_like of float, shape (n,), or list of per-query lists
        Scores of all candidates of all queries, higher = more likely relevant.
    labels : array_like of bool or int (0/1), same layout as `scores`
        1 marks a relevant candidate.
    offsets : array_like of int, shape (Q + 1,), optional
        Query boundaries; omit for lists of per-query lists or 2-D arrays.

    Returns
    -------
    numpy.ndarray of float64, shape (Q,)
        ``1 / rank`` of the best-ranked relevant candidate (ranks from 1, ties
        by position); 0 for a query without a relevant candidate.

    Examples
    --------
    >>> reciprocal_ranks([[0.1, 0.5, 0.5], [1.0]], [[1, 0, 0], [0]])
    array([0.33333333, 0.        ])
    """
    return _stats(scores, labels, offsets, 1)[:, 1].copy()


def mean_reciprocal_rank(
    scores: Any, labels: Any, offsets: Any | None = None, skip_no_relevant: bool = True
) -> float:
    """Mean reciprocal rank (MRR) over queries, as reported by Rücklé et al. 2019.

    Parameters
    ----------
    scores : array_like of float, shape (n,), or list of per-query lists
        Scores of all candidates of all queries, higher = more likely relevant.
    labels : array_like of bool or int (0/1), same layout as `scores`
        1 marks a relevant candidate.
    offsets : array_like of int, shape (Q + 1,), optional
        Query boundaries; omit for lists of per-query lists or 2-D arrays.
    skip_no_relevant : bool, default True
        Leave queries without any relevant candidate out of the mean; with
        False they count as reciprocal rank 0.

    Returns
    -------
    float
        MRR in [0, 1].

    Examples
    --------
    >>> mean_reciprocal_rank([[0.9, 0.2], [0.1, 0.6]], [[1, 0], [1, 0]])
    0.75
    """
    st = _stats(scores, labels, offsets, 1)
    return _mean(st[:, 1], st[:, 3], skip_no_relevant, "MRR")


def average_precisions(scores: Any, labels: Any, offsets: Any | None = None) -> np.ndarray:
    """Average precision per query.

    ``AP = (1/R) * sum over relevant candidates of (relevant at rank <= r) / r``,
    ``R`` the number of relevant candidates of the query, ranks by score
    descending with ties by position ascending.

    Parameters
    ----------
    scores : array_like of float, shape (n,), or list of per-query lists
        Scores of all candidates of all queries, higher = more likely relevant.
    labels : array_like of bool or int (0/1), same layout as `scores`
        1 marks a relevant candidate.
    offsets : array_like of int, shape (Q + 1,), optional
        Query boundaries; omit for lists of per-query lists or 2-D arrays.

    Returns
    -------
    numpy.ndarray of float64, shape (Q,)
        AP per query; 0 for a query without a relevant candidate.

    Examples
    --------
    >>> average_precisions([[0.9, 0.8, 0.7, 0.6]], [[1, 0, 1, 0]])
    array([0.83333333])
    """
    return _stats(scores, labels, offsets, 1)[:, 2].copy()


def mean_average_precision(
    scores: Any, labels: Any, offsets: Any | None = None, skip_no_relevant: bool = True
) -> float:
    """Mean average precision (MAP) over queries, as reported by Rücklé et al. 2019.

    Parameters
    ----------
    scores : array_like of float, shape (n,), or list of per-query lists
        Scores of all candidates of all queries, higher = more likely relevant.
    labels : array_like of bool or int (0/1), same layout as `scores`
        1 marks a relevant candidate.
    offsets : array_like of int, shape (Q + 1,), optional
        Query boundaries; omit for lists of per-query lists or 2-D arrays.
    skip_no_relevant : bool, default True
        Leave queries without any relevant candidate out of the mean; with
        False they count as AP 0.

    Returns
    -------
    float
        MAP in [0, 1].

    Examples
    --------
    >>> mean_average_precision([[0.9, 0.8, 0.7, 0.6], [0.5, 0.4]], [[1, 0, 1, 0], [0, 1]])
    0.6666666666666666
    """
    st = _stats(scores, labels, offsets, 1)
    return _mean(st[:, 2], st[:, 3], skip_no_relevant, "MAP")


def auc_at(
    scores: Any, labels: Any, max_fpr: float = 0.05, *, truncation: str = "interpolate"
) -> float:
    """Normalized partial ROC AUC up to a false-positive rate: AUC(0.05) of Shah et al. 2018.

    All (score, label) pairs are pooled (queries do not matter; nested lists
    are flattened).  Tied scores are one ROC step (a diagonal segment).  The
    area under the ROC curve from fpr 0 to `max_fpr` is divided by `max_fpr`.
    See the module docstring for the exact definition and how it relates to
    Shah et al.'s released ``AUCMeter``; AUC(0.05) is the measure Rücklé et
    al. 2019 report on Android, Apple, AskUbuntu and SuperUser.

    Parameters
    ----------
    scores : array_like of float, shape (n,), or list of per-query lists
        Scores of all pairs, higher = more likely a duplicate.
    labels : array_like of bool or int (0/1), same layout as `scores`
        1 marks a positive (duplicate) pair.
    max_fpr : float, default 0.05
        Upper false-positive-rate limit, in (0, 1]; 1 gives the full ROC AUC.
    truncation : {"interpolate", "qra_code"}, default "interpolate"
        ``"interpolate"``: integrate exactly up to ``fpr = max_fpr``.
        ``"qra_code"``: stop at the last negative count ``m - 1`` below it,
        like ``darsh10/qra_code``'s ``AUCMeter.value(max_fpr)`` (smaller by at
        most ``1 / (n_negatives * max_fpr)``).

    Returns
    -------
    float
        Normalized partial AUC in [0, 1]: 1 for a perfect ranking, about
        ``max_fpr / 2`` for a random one.

    Raises
    ------
    ValueError
        If there is no positive or no negative pair, `max_fpr` is outside
        (0, 1], or the input is malformed.

    Examples
    --------
    >>> auc_at([0.9, 0.8, 0.7, 0.6], [1, 0, 1, 0], max_fpr=0.5)
    0.5
    >>> auc_at([0.9, 0.8, 0.7, 0.6], [1, 0, 1, 0], max_fpr=1.0)
    0.75
    >>> auc_at([[0.9, 0.1], [0.5, 0.4]], [[1, 0], [1, 0]], max_fpr=1.0)
    1.0
    """
    max_fpr = _check_max_fpr(max_fpr)
    interpolate = _check_truncation(truncation)
    if _is_nested(scores) or (isinstance(scores, np.ndarray) and scores.ndim == 2):
        flat_scores, flat_labels, _ = _flatten_nested(scores, labels)
    else:
        flat_scores, flat_labels = scores, labels
    s = _scores_1d(flat_scores)
    lab = _labels_1d(flat_labels, s.shape[0])
    n_pos = int(np.count_nonzero(lab))
    if n_pos == 0 or n_pos == s.shape[0]:
        raise ValueError(
            f"AUC needs at least one positive and one negative pair in labels, got "
            f"{n_pos} positive and {s.shape[0] - n_pos} negative"
        )
    return float(backend("ranking").auc_at(s, lab, max_fpr, interpolate))


def evaluate_rankings(
    scores: Any,
    labels: Any,
    offsets: Any | None = None,
    k: int = 5,
    max_fpr: float = 0.05,
    skip_no_relevant: bool = True,
    *,
    truncation: str = "interpolate",
) -> dict[str, float]:
    """P@k, MRR, MAP and AUC(max_fpr) of a batch of rankings, as fractions in [0, 1].

    The four measures of Rücklé et al. 2019 (P@5, MAP and MRR after Lei et al.
    2016; AUC(0.05) after Shah et al. 2018), computed with one pass of the
    ranking backend and one of the AUC backend.

    Parameters
    ----------
    scores : array_like of float, shape (n,), or list of per-query lists
        Scores of all candidates of all queries, higher = more likely relevant.
    labels : array_like of bool or int (0/1), same layout as `scores`
        1 marks a relevant candidate.
    offsets : array_like of int, shape (Q + 1,), optional
        Query boundaries; omit for lists of per-query lists or 2-D arrays.
    k : int, default 5
        Cut-off of P@k.
    max_fpr : float, default 0.05
        False-positive-rate limit of the partial AUC, in (0, 1].
    skip_no_relevant : bool, default True
        Drop queries without any relevant candidate from the evaluation
        altogether: from the P@k, MRR and MAP means and from the pairs pooled
        for the AUC.
    truncation : {"interpolate", "qra_code"}, default "interpolate"
        Passed to :func:`auc_at`.

    Returns
    -------
    dict
        ``{"P@<k>": ..., "MRR": ..., "MAP": ..., "AUC(<max_fpr>)": ...}``, keys
        formatted from the arguments (``"P@5"`` and ``"AUC(0.05)"`` by
        default), values as fractions in [0, 1] (not percentages).

    Raises
    ------
    ValueError
        If no query is left to evaluate, the kept pairs lack a positive or a
        negative, or the input is malformed.

    Examples
    --------
    >>> evaluate_rankings([[0.9, 0.1, 0.3], [0.2, 0.8, 0.4]], [[1, 0, 0], [1, 0, 0]],
    ...                   k=1, max_fpr=1.0)
    {'P@1': 0.5, 'MRR': 0.6666666666666666, 'MAP': 0.6666666666666666, 'AUC(1)': 0.625}
    """
    k = _check_k(k)
    max_fpr_value = _check_max_fpr(max_fpr)
    interpolate = _check_truncation(truncation)
    s, lab, off = _prepare(scores, labels, offsets)
    st = backend("ranking").ranking_stats(s, lab, off, k)
    keep = st[:, 3] > 0 if skip_no_relevant else np.ones(st.shape[0], dtype=bool)
    out = {
        f"P@{k}": _mean(st[:, 0], st[:, 3], skip_no_relevant, "P@k"),
        "MRR": _mean(st[:, 1], st[:, 3], skip_no_relevant, "MRR"),
        "MAP": _mean(st[:, 2], st[:, 3], skip_no_relevant, "MAP"),
    }
    if not keep.all():
        pair_query = np.repeat(np.arange(st.shape[0]), np.diff(off))
        mask = keep[pair_query]
        s, lab = s[mask], lab[mask]
    n_pos = int(np.count_nonzero(lab))
    if n_pos == 0 or n_pos == s.shape[0]:
        raise ValueError(
            f"AUC({max_fpr_value:g}) needs at least one positive and one negative pair among "
            f"the evaluated queries, got {n_pos} positive and {s.shape[0] - n_pos} negative"
        )
    out[f"AUC({max_fpr_value:g})"] = float(
        backend("ranking").auc_at(
            np.ascontiguousarray(s), np.ascontiguousarray(lab), max_fpr_value, interpolate
        )
    )
    return out
