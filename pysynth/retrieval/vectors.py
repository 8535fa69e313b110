"""Checks and float64 arithmetic on embedding matrices, shared by the dense index and its exact search.

No faiss and no torch here: numpy only. Rows are float32 [n, d]; scores are decided in float64
and ranked by score descending, then id ascending (the one tie-break of pysynth).
"""
from __future__ import annotations

import math
from typing import Any, Optional, Tuple

import numpy as np

from pysynth import _validate as _v

__all__ = ["as_matrix", "normalized", "optional_int", "default_nlist", "default_nprobe", "gamma", "top_k_order",
           "I32_MAX", "F32_UNIT_ROUNDOFF"]

I32_MAX = 2**31 - 1
F32_UNIT_ROUNDOFF = 2.0**-24  # unit roundoff of float32


def as_matrix(x: Any, name: str, d: Optional[int] = None, allow_empty: bool = False) -> np.ndarray:
    """``x`` as a C-contiguous float32 [n, d] array of finite values."""
    if isinstance(x, (str, bytes)):
        raise TypeError(f"{name} must be a float32 array [n, d], got {type(x).__name__}")
    try:
        a = np.asarray(x)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be a float32 array [n, d] ({exc}); build it with np.asarray(..., "
                        "dtype=np.float32)") from None
    if a.dtype.kind not in "fiu":
        raise TypeError(f"{name} must hold real numbers (a float32 array [n, d]), got dtype {a.dtype}; convert it "
                        "with np.asarray(..., dtype=np.float32)")
    if a.ndim != 2:
        hint = f"; for a single vector pass {name}[None, :]" if a.ndim == 1 else ""
        raise ValueError(f"{name} must be 2-D [n, d], got shape {a.shape}{hint}")
    if a.shape[1] < 1:
        raise ValueError(f"{name} must have at least one column (d >= 1), got shape {a.shape}")
    if d is not None and a.shape[1] != d:
        raise ValueError(f"{name} must have d = {d} columns like the indexed embeddings, got shape {a.shape}")
    if a.shape[0] < 1 and not allow_empty:
        raise ValueError(f"{name} has no rows (shape {a.shape}): pass at least one vector")
    with np.errstate(over="ignore"):
        a = np.ascontiguousarray(a, dtype=np.float32)
    bad = ~np.isfinite(a)
    if bad.any():
        i, j = (int(t) for t in np.argwhere(bad)[0])
        raise ValueError(f"{name}[{i}, {j}] is {a[i, j]} (after conversion to float32): every value must be finite; "
                         "drop or fix that row (values beyond +-3.4e38 overflow float32)")
    return a


def normalized(a: np.ndarray) -> np.ndarray:
    """Rows scaled to unit L2 norm (in float64, returned as float32); zero rows stay zero.

    In blocks of rows, so a 1M x 384 corpus needs one float32 copy, not a 3 GB float64 one.
    """
    out = np.empty(a.shape, dtype=np.float32)
    for s in range(0, a.shape[0], 1 << 16):
        x = a[s:s + (1 << 16)].astype(np.float64)
        norm = np.sqrt((x * x).sum(-1, keepdims=True))
        norm[norm == 0] = 1.0
        out[s:s + (1 << 16)] = x / norm
    return out


def optional_int(value: Any, name: str, lo: int, hi: int = I32_MAX) -> Optional[int]:
    """None, or ``value`` checked as an int in ``[lo, hi]``."""
    return None if value is None else _v.int_range(value, name, lo, hi)


def default_nlist(n: int) -> int:
    """IVF cells for ``n`` vectors when the caller gives none."""
    # about 4 sqrt(n) lists, but >= 39 training points per list (faiss's k-means minimum)
    return max(1, min(int(4 * math.sqrt(n)), n // 39))


def default_nprobe(nlist: int) -> int:
    """IVF cells visited per query when the caller gives none."""
    return min(nlist, max(8, math.ceil(math.sqrt(nlist))))


def gamma(m: int) -> float:
    """Higham's gamma_m = m u / (1 - m u): relative error bound of an m-term float32 dot product."""
    return m * F32_UNIT_ROUNDOFF / (1 - m * F32_UNIT_ROUNDOFF)


def top_k_order(ids: np.ndarray, scores: np.ndarray, k: int) -> Tuple[np.ndarray, np.ndarray]:
    """Per row: the first ``k`` of (score descending, id ascending); invalid ids (-1) last."""
    valid = ids >= 0
    key_ids = np.where(valid, ids, np.iinfo(np.int64).max)
    key_scores = np.where(valid, scores, -np.inf)
    order = np.lexsort((key_ids, -key_scores), axis=-1)[:, :k]
    return np.take_along_axis(ids, order, -1), np.take_along_axis(key_scores, order, -1)
