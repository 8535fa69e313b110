"""Torch helpers shared by the ops in ``pysynth.kernels``: tie-exact top-k, backend choice.

Imported only by the op folders (never by ``pysynth.kernels`` itself), so importing this
module may import torch.
"""
from __future__ import annotations

import importlib.util
import os

import torch

BACKENDS = ("auto", "torch", "triton")


def topk_lowest_index(x: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Top-``k`` of each row of ``x`` (2-D), ranked by value descending, ties by lower index.

    ``torch.topk`` leaves the order of equal values unspecified; every op in this package
    uses this one rule instead (STYLE.md, "Ties and floats"), so the torch and Triton paths
    return the same indices. ``-inf`` entries take part like any other value (a row with
    fewer than ``k`` finite entries is filled with its lowest-index ``-inf`` entries). NaN
    is not supported.

    Cost: one ``torch.topk`` for the k-th value, one pass to pick the lowest-index ties at
    that value, and a stable sort of the ``k`` survivors; no full sort of the row.

    Returns ``(values, indices)``, both ``[rows, k]``; indices are int64.
    """
    rows, n = x.shape
    if not 0 <= k <= n:
        raise ValueError(f"k={k} must be in [0, {n}] (the row length)")
    if k == 0:
        return x.new_empty(rows, 0), torch.empty(rows, 0, dtype=torch.long, device=x.device)
    kth = torch.topk(x, k, dim=1).values[:, -1:]  # the k-th largest value (a set property)
    above = x > kth
    at = x == kth
    need = k - above.sum(dim=1, keepdim=True)  # how many ties at the k-th value to keep
    keep = above | (at & (torch.cumsum(at, dim=1) <= need))  # lowest-index ties first
    # Exactly k True per row; nonzero() lists them row by row in increasing column order.
    idx = keep.nonzero()[:, 1].reshape(rows, k)
    vals = x.gather(1, idx)
    # Stable sort keeps the increasing index order among equal values.
    vals, order = torch.sort(vals, dim=1, descending=True, stable=True)
    return vals, idx.gather(1, order)


def triton_importable() -> bool:
    return importlib.util.find_spec("triton") is not None


def pick_backend(backend: str, tensors, triton_supported: bool = True) -> str:
    """``"torch"`` or ``"triton"`` for ``backend`` in ``{"auto", "torch", "triton"}``.

    ``auto`` picks Triton when every tensor is on CUDA, triton is importable and the call
    is within what the Triton path supports (``triton_supported``); otherwise torch.
    ``"triton"`` is honoured as asked (CPU tensors then need ``TRITON_INTERPRET=1``, which
    the tests set). ``PYSYNTH_KERNELS_BACKEND`` overrides ``auto`` (same three values).
    """
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    if backend == "auto":
        backend = os.environ.get("PYSYNTH_KERNELS_BACKEND", "auto")
        if backend not in BACKENDS:
            raise ValueError(
                f"PYSYNTH_KERNELS_BACKEND must be one of {BACKENDS}, got {backend!r}"
            )
    if backend != "auto":
        return backend
    on_cuda = all(t.is_cuda for t in tensors if t is not None)
    return "triton" if on_cuda and triton_supported and triton_importable() else "torch"


def check_float(name: str, t: torch.Tensor, ndim: int) -> None:
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if t.dim() != ndim:
        raise ValueError(f"{name} must be {ndim}-D, got shape {tuple(t.shape)}")
    if t.dtype not in (torch.float32, torch.float16, torch.bfloat16):
        raise ValueError(f"{name} must be float32, float16 or bfloat16, got {t.dtype}")
