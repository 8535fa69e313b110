"""Triton GPU kernels, installed as ``pysynth.kernels``.

One folder per op, each with a readable torch ``naive.py`` reference beside the fused
``triton_*.py`` kernel and a public function that picks Triton on CUDA and the torch path
otherwise (``backend="auto"|"torch"|"triton"``; ``PYSYNTH_KERNELS_BACKEND`` overrides auto):

- ``copy_attention.copy_attention_step``: one CopyNet decode step (attention, generation +
  copy mixture with one normalizer, top-k), Ding & Balog Eq. 13-16 / Gu et al. 2016.
- ``diverse_beam.diverse_beam_step``: one diverse-beam-search step with Hamming diversity,
  Vijayakumar et al. 2016.

Nothing here imports torch or triton at package import time: ``import pysynth`` stays
light. The two public functions are reachable as attributes (imported on first access).
"""
from __future__ import annotations

import importlib
import importlib.util

__all__ = ["copy_attention_step", "diverse_beam_step", "triton_available"]

_LAZY = {
    "copy_attention_step": "copy_attention",
    "diverse_beam_step": "diverse_beam",
}


def triton_available() -> bool:
    """Whether triton is importable (it is an extra: ``pip install '.[gpu]'``)."""
    return importlib.util.find_spec("triton") is not None


def __getattr__(name: str):
    if name in _LAZY:
        module = importlib.import_module(f"{__name__}.{_LAZY[name]}")
        return getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
