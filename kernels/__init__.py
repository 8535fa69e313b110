"""Triton GPU kernels, installed as ``pysynth.kernels``.

One folder per op (``copy_attention/``, ``diverse_beam/``), each with a readable torch
``naive.py`` reference beside the fused ``triton_*.py`` kernel and a public function that
picks Triton on CUDA and the torch path otherwise. Nothing here imports torch or triton at
package import time: ``import pysynth`` stays light.

The kernels themselves arrive with the decoding work (neural K2Q models); this package is
the skeleton the build ships today.
"""
from __future__ import annotations

import importlib.util

__all__ = ["triton_available"]


def triton_available() -> bool:
    """Whether triton is importable (it is an extra: ``pip install 'pysynth[gpu]'``)."""
    return importlib.util.find_spec("triton") is not None
