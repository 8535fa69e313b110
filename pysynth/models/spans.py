"""Span and similarity helpers in numpy alone (no torch): what a server needs after an ONNX
span encoder or bi-encoder ran.

* :func:`best_spans` -- the best answer spans from independent start/end logits (SQuAD-style
  extractive QA; Alberti et al. 2019, Sect. 3.1, "independent" scoring).
* :func:`best_joint_spans` -- the best spans of a joint ``[start, end]`` score table (Alberti et
  al. 2019, Sect. 3.1, joint scoring).
* :func:`cosine` -- row-wise cosine similarity of bi-encoder embeddings.
"""
from __future__ import annotations

from typing import List, Optional, Tuple

import numpy as np

__all__ = ["best_spans", "best_joint_spans", "cosine", "MASK_NEG"]

MASK_NEG = -1e9  # finite score of impossible positions / spans (ONNX-safe, no inf arithmetic)


def cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise cosine similarity of ``a`` and ``b`` ([n, d] each, or [d]); float64."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError(f"a, b: shapes differ ({a.shape} vs {b.shape})")
    na = np.linalg.norm(a, axis=-1)
    nb = np.linalg.norm(b, axis=-1)
    return (a * b).sum(-1) / np.maximum(na * nb, 1e-12)


# ------------------------------------------------------------------------------ numpy span decoding

def _check_mask(mask, T: int, what: str = "mask") -> np.ndarray:
    if mask is None:
        return np.ones(T, dtype=bool)
    m = np.asarray(mask, dtype=bool)
    if m.shape != (T,):
        raise ValueError(f"{what}: expected shape ({T},), got {m.shape}")
    return m


def _check_k_len(k, max_len) -> None:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"k: must be a positive integer, got {k!r}")
    if isinstance(max_len, bool) or not isinstance(max_len, (int, np.integer)) or max_len < 1:
        raise ValueError(f"max_len: must be a positive integer, got {max_len!r}")


def _topk_band(scores: np.ndarray, ok: np.ndarray, k: int) -> List[Tuple[int, int, float]]:
    """Top ``k`` of a [T, L] band (span ``(i, i + l)``), score descending then (start, end) ascending."""
    T, L = scores.shape
    flat = np.where(ok, scores, -np.inf).reshape(-1)
    n_ok = int(ok.sum())
    if n_ok == 0:
        return []
    k = min(k, n_ok)
    # flat index i * L + l orders spans by (start, length) = (start, end) for a fixed start
    order = np.lexsort((np.arange(flat.size), -flat))[:k]
    return [(int(j // L), int(j // L + j % L), float(flat[j])) for j in order]


def best_spans(start_logits, end_logits, max_len: int = 30, k: int = 1, mask=None) -> List[Tuple[int, int, float]]:
    """The ``k`` best spans ``(start, end, start_logits[start] + end_logits[end])`` of one sequence.

    Pure numpy. Spans satisfy ``start <= end < start + max_len`` with both ends where ``mask``
    (e.g. the context tokens) is True. Order: score descending, then ``(start, end)`` ascending.
    Fewer than ``k`` are returned when fewer spans exist.

    Parameters
    ----------
    start_logits, end_logits : [T] array-like
    max_len : int
        Longest span in tokens.
    k : int
    mask : [T] bool, optional
        Allowed positions (default: all).
    """
    s = np.asarray(start_logits, dtype=np.float64)
    e = np.asarray(end_logits, dtype=np.float64)
    if s.ndim != 1 or e.shape != s.shape:
        raise ValueError(f"start_logits, end_logits: expected two [T] arrays, got {s.shape} and {e.shape}")
    _check_k_len(k, max_len)
    T = s.shape[0]
    m = _check_mask(mask, T)
    L = int(min(max_len, T))
    idx = np.arange(T)[:, None] + np.arange(L)[None, :]  # [T, L] end positions
    inside = idx < T
    idx_c = np.minimum(idx, T - 1)
    ok = inside & m[:, None] & m[idx_c]
    return _topk_band(s[:, None] + e[idx_c], ok, int(k))


def best_joint_spans(joint, k: int = 1, mask=None, max_len: Optional[int] = None) -> List[Tuple[int, int, float]]:
    """The ``k`` best distinct spans ``(start, end, score)`` of one sequence's joint scores.

    ``joint`` [T, L] holds ``f(i, i + l)`` (:class:`SpanScores`.joint of one row; Alberti et al.
    2019, Sect. 3.1). ``mask`` [T] limits both ends (e.g. to the context); ``max_len`` (<= L)
    shortens spans further. Scores at or below ``MASK_NEG / 2`` count as impossible.
    """
    j = np.asarray(joint, dtype=np.float64)
    if j.ndim != 2:
        raise ValueError(f"joint: expected [T, L], got shape {j.shape}")
    T, L = j.shape
    _check_k_len(k, max_len if max_len is not None else max(L, 1))
    m = _check_mask(mask, T)
    if max_len is not None:
        L = min(L, int(max_len))
        j = j[:, :L]
    idx = np.arange(T)[:, None] + np.arange(L)[None, :]
    idx_c = np.minimum(idx, T - 1)
    ok = (idx < T) & m[:, None] & m[idx_c] & (j > MASK_NEG / 2)
    return _topk_band(j, ok, int(k))
