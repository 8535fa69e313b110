"""Keyword query length distributions P(s) (Ding & Balog 2018, Alg. 1 line 5; Sect. 6.1)."""
from __future__ import annotations

import math
import operator
from typing import Dict, Iterable, Mapping, Optional, Sequence, Union

import numpy as np

#: Keyword query lengths (whitespace tokens) of the 800 hand-labeled pairs of the seed set
#: T0 shipped with the project (``k2q_seed_pairs/pairs.jsonl.gz``): ``{length: count}``.
#: :func:`default_length_dist` restricts them to s in [3, 7] (Sect. 6.1).
T0_KEYWORD_LENGTHS: Dict[int, int] = {2: 23, 3: 133, 4: 256, 5: 208, 6: 117, 7: 48, 8: 12, 9: 3}


def length_dist_from_counts(counts: Union[Mapping[int, float], Sequence[float]], s_min: int = 3,
                            s_max: int = 7) -> np.ndarray:
    """P(s) from a histogram of query lengths, restricted to ``s_min <= s <= s_max``.

    Parameters
    ----------
    counts : mapping ``{s: count}`` or sequence indexed by s
    s_min, s_max : int
        The range kept (Sect. 6.1 of Ding & Balog 2018: [3, 7]); ``1 <= s_min <= s_max``.

    Returns
    -------
    numpy.ndarray of float64, length ``s_max + 1``
        ``p[s]`` = P(s), 0 outside the range, summing to 1.
    """
    s_min, s_max = operator.index(s_min), operator.index(s_max)
    if not 1 <= s_min <= s_max:
        raise ValueError(f"s_min and s_max must satisfy 1 <= s_min <= s_max, got [{s_min}, {s_max}]")
    items = counts.items() if isinstance(counts, Mapping) else enumerate(counts)
    p = np.zeros(s_max + 1, dtype=np.float64)
    for s, c in items:
        s = operator.index(s)
        c = float(c)
        if not (math.isfinite(c) and c >= 0):
            raise ValueError(f"counts[{s}] must be a finite count >= 0, got {c}")
        if s_min <= s <= s_max:
            p[s] += c
    total = p.sum()
    if not total > 0:
        raise ValueError(f"no query length in the range [{s_min}, {s_max}]: "
                         "the length distribution would be empty")
    return p / total


def keyword_lengths(keywords: Iterable) -> np.ndarray:
    """Lengths (number of terms) of keyword queries: ``str`` are split on whitespace,
    sequences (id lists, token lists) are counted, integers are taken as lengths."""
    out = []
    for k in keywords:
        if isinstance(k, str):
            out.append(len(k.split()))
        elif isinstance(k, (int, np.integer)) and not isinstance(k, bool):
            out.append(int(k))
        else:
            out.append(len(k))
    return np.asarray(out, dtype=np.int64)


def estimate_length_dist(keywords: Iterable, s_min: int = 3, s_max: int = 7) -> np.ndarray:
    """Estimate P(s) from the keyword queries of seed pairs (Sect. 6.1: the hand-labeled
    set T0, restricted to ``s`` in [3, 7]).

    Parameters
    ----------
    keywords : iterable of str, of token/id sequences, or of int lengths
        The keyword queries (after phrase detection if it is used, so that a phrase counts
        as one term).
    s_min, s_max : int
        The range kept.

    Returns
    -------
    numpy.ndarray of float64, length ``s_max + 1`` (``p[s]`` = P(s)).

    Examples
    --------
    >>> estimate_length_dist(["best picture nominees 2009", "hamlet author", "a b c"]).round(2)
    array([0. , 0. , 0. , 0.5, 0.5, 0. , 0. , 0. ])
    """
    lens = keyword_lengths(keywords)
    return length_dist_from_counts(np.bincount(lens[lens >= 0]) if lens.size else [], s_min, s_max)


def poisson_length_dist(mean: float, s_min: int = 1, s_max: Optional[int] = None) -> np.ndarray:
    """Truncated Poisson P(s) (Azzopardi et al. 2007 draw the query length from a Poisson
    with the mean length of human queries): ``P(s) ~ exp(-mean) mean**s / s!`` on
    ``s_min <= s <= s_max`` (default ``s_max``: ``ceil(mean + 10 sqrt(mean) + 10)``).

    Examples
    --------
    >>> p = poisson_length_dist(4.44, s_min=1, s_max=12)
    >>> round(float(p @ np.arange(13)), 2)
    4.49
    """
    mean = float(mean)
    if not (math.isfinite(mean) and mean > 0):
        raise ValueError(f"mean must be a positive number, got {mean}")
    if s_max is None:
        s_max = int(math.ceil(mean + 10 * math.sqrt(mean) + 10))
    s_min, s_max = operator.index(s_min), operator.index(s_max)
    if not 1 <= s_min <= s_max:
        raise ValueError(f"s_min and s_max must satisfy 1 <= s_min <= s_max, got [{s_min}, {s_max}]")
    s = np.arange(s_max + 1, dtype=np.float64)
    logp = -mean + s * math.log(mean) - np.array([math.lgamma(x + 1) for x in s])
    p = np.where((s >= s_min) & (s <= s_max), np.exp(logp - logp[s_min:].max()), 0.0)
    return p / p.sum()


def default_length_dist() -> np.ndarray:
    """P(s) of the project's seed pairs T0 (:data:`T0_KEYWORD_LENGTHS`) on s in [3, 7]."""
    return length_dist_from_counts(T0_KEYWORD_LENGTHS, 3, 7)
