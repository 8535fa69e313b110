"""Score formulas over summed sufficient statistics, shared by every backend.

Each function reproduces one reference tool's floating-point operations in the same
order, so that results are bit-identical to the tool (sacrebleu's design: the compiled
side only counts).
"""
from __future__ import annotations

import math
import sys
from fractions import Fraction
from typing import List, Optional, Sequence

import numpy as np

from pysynth.metrics._reference import coco_bleu, sacrebleu_bleu  # noqa: F401  (re-exported)


def seq_mean(x: np.ndarray) -> float:
    """Mean with left-to-right summation, as the reference tools' Python loops do."""
    if x.size == 0:
        return 0.0
    return float(np.add.accumulate(x)[-1] / x.size)


# ---------------------------------------------------------------------------- ROUGE


def pltrdy_prf(kind: str, s: np.ndarray):
    """rouge 0.3.2 (pltrdy) P/R/F; scalar Python floats to mirror its ``beta**2``."""
    flat = s.reshape(-1, 3).tolist()
    p = np.empty(len(flat))
    r = np.empty(len(flat))
    f = np.empty(len(flat))
    for i, (m, nh, nr) in enumerate(flat):
        if kind == "N":
            pi = 0.0 if nh == 0 else m / nh
            ri = 0.0 if nr == 0 else m / nr
            fi = 2.0 * ((pi * ri) / (pi + ri + 1e-8))
        else:
            ri = m / nr
            pi = m / nh
            beta = pi / (ri + 1e-12)
            num = (1 + (beta**2)) * ri * pi
            denom = ri + ((beta**2) * pi)
            fi = num / (denom + 1e-12)
        p[i], r[i], f[i] = pi, ri, fi
    shape = s.shape[:-1]
    return p.reshape(shape), r.reshape(shape), f.reshape(shape)


# ----------------------------------------------------------------------------- BLEU


def nltk_corpus_bleu(
    stats: np.ndarray,
    max_order: int,
    weights: Sequence[float],
    method: int,
    last_hyp: List,
    last_refs: List[List],
    epsilon: float = 0.1,
    alpha: float = 5,
    k: int = 5,
    totals: Optional[np.ndarray] = None,
) -> float:
    """``nltk.translate.bleu_score.corpus_bleu`` (nltk 3.10) from per-segment statistics.

    ``SmoothingFunction().method0..method7`` (Chen & Cherry 2014). Methods 5 and 6 read the
    *last* segment's tokens (an nltk quirk reproduced here), hence ``last_hyp``/``last_refs``.
    ``totals``: ``stats.sum(axis=0)`` when the caller has it already.
    """
    s = np.asarray(stats, dtype=np.int64)
    # One pass over the statistics instead of five (a serial NumPy tail of ~6 ms per 100k
    # segments after the threaded counting, issue 29): nltk clamps each segment's
    # denominators at 1, i.e. sum(max(d, 1)) = sum(d) + the number of zero denominators.
    t = s.sum(axis=0) if totals is None else totals
    zeros = np.count_nonzero(s[:, 2 + max_order :] == 0, axis=0)
    nums = [int(x) for x in t[2 : 2 + max_order]]
    dens = [int(x) + int(z) for x, z in zip(t[2 + max_order :], zeros)]
    hyp_lengths = int(t[0])
    ref_lengths = int(t[1])
    if hyp_lengths > ref_lengths:
        bp = 1
    elif hyp_lengths == 0:
        bp = 0
    else:
        bp = math.exp(1 - ref_lengths / hyp_lengths)
    if nums[0] == 0:
        return 0
    p_n: list = [Fraction(a, b) for a, b in zip(nums, dens)]
    # nltk reads the raw (unnormalised) numerator and denominator of each precision.
    if method == 0:
        p_n = [p if a != 0 else sys.float_info.min for p, a in zip(p_n, nums)]
    elif method == 1:
        p_n = [(a + epsilon) / b if a == 0 else p for p, a, b in zip(p_n, nums, dens)]
    elif method == 2:
        p_n = [Fraction(a + 1, b + 1) if i != 0 else p for i, (p, a, b) in enumerate(zip(p_n, nums, dens))]
    elif method == 3:
        p_n = _method3(p_n, nums, dens)
    elif method == 4:
        p_n = _method4(p_n, nums, dens, hyp_lengths or len(last_hyp), k)
    elif method == 5:
        p_n = _method5(p_n, last_hyp, last_refs)
    elif method == 6:
        p_n = _method6(p_n, nums, last_hyp, alpha)
    elif method == 7:
        p_n = _method4(p_n, nums, dens, hyp_lengths or len(last_hyp), k)
        p_n = _method5(p_n, last_hyp, last_refs)
    else:
        raise ValueError(f"nltk smoothing method must be 0..7, got {method}")
    terms = (w * math.log(p) for w, p in zip(weights, p_n) if p > 0)
    return bp * math.exp(math.fsum(terms))


def _method3(p_n, nums, dens):
    incvnt = 1
    out = list(p_n)
    for i, (a, b) in enumerate(zip(nums, dens)):
        if a == 0:
            out[i] = 1 / (2**incvnt * b)
            incvnt += 1
    return out


def _method4(p_n, nums, dens, hyp_len, k):
    incvnt = 1
    out = list(p_n)
    for i, (a, b) in enumerate(zip(nums, dens)):
        if a == 0 and hyp_len > 1:
            numerator = 1 / (2**incvnt * k / math.log(hyp_len))
            out[i] = numerator / b
            incvnt += 1
    return out


def _modified_precision(refs, hyp, n) -> Fraction:
    def grams(t):
        return [tuple(t[i : i + n]) for i in range(len(t) - n + 1)]

    from collections import Counter

    counts = Counter(grams(hyp))
    max_counts: dict = {}
    for ref in refs:
        rc = Counter(grams(ref))
        for g in counts:
            max_counts[g] = max(max_counts.get(g, 0), rc[g])
    num = sum(min(c, max_counts[g]) for g, c in counts.items())
    return Fraction(num, max(1, sum(counts.values())))


def _method5(p_n, hyp, refs):
    out = list(p_n)
    plus1 = list(p_n) + [_modified_precision(refs, hyp, 5)]
    m = {-1: out[0] + 1}
    for i, p in enumerate(list(out)):
        out[i] = (m[i - 1] + p + plus1[i + 1]) / 3
        m[i] = out[i]
    return out


def _method6(p_n, nums, hyp, alpha):
    out = list(p_n)
    # nltk asserts here (AssertionError / IndexError); a ValueError says what to change.
    if len(out) < 3:
        raise ValueError("nltk smoothing method 6 needs max_order >= 3")
    if not out[2]:
        raise ValueError(
            "nltk smoothing method 6 requires a non-zero trigram precision (nltk raises "
            "AssertionError here); use another smoothing method for this input"
        )
    for i in range(len(out)):
        if i in (0, 1):
            continue
        pi0 = 0 if out[i - 2] == 0 else out[i - 1] ** 2 / out[i - 2]
        n_grams = max(len(hyp) - i, 0)  # number of (i+1)-grams of the last hypothesis
        out[i] = (nums[i] + alpha * pi0) / (n_grams + alpha)
    return out
