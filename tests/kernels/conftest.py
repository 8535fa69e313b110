"""Kernel tests: Triton kernels run on CPU under the Triton interpreter, compared to naive.py.

``TRITON_INTERPRET=1`` is set here, at import time, before anything imports triton (the
kernel modules are imported lazily by the fixtures below), unless the variable is already
set. On a CUDA machine, ``TRITON_INTERPRET=0 python -m pytest tests/kernels`` runs the same
tests compiled on the GPU (plus the GPU-only cases).

torch and triton are optional (the ``gpu`` extra): without torch every test module here is
skipped with a reason; without triton only the Triton-path tests are.
"""
from __future__ import annotations

import importlib
import importlib.util
import os
from pathlib import Path

os.environ.setdefault("TRITON_INTERPRET", "1")

import pytest  # noqa: E402

INTERPRET = os.environ.get("TRITON_INTERPRET") == "1"
HAS_TORCH = importlib.util.find_spec("torch") is not None
HAS_TRITON = importlib.util.find_spec("triton") is not None


ROOT = Path(__file__).resolve().parents[2]


def _kernels_package():
    """The kernels package of *this* checkout.

    Installed it is ``pysynth.kernels``; from a source tree on PYTHONPATH it is the top-level
    ``kernels`` package. An editable install of another checkout can map ``pysynth.kernels``
    elsewhere, so the one whose files live under this repository wins.
    """
    found = []
    for name in ("pysynth.kernels", "kernels"):
        try:
            mod = importlib.import_module(name)
        except ModuleNotFoundError:
            continue
        if hasattr(mod, "triton_available"):
            found.append(mod)
    for mod in found:
        if Path(mod.__file__).resolve().parent == ROOT / "kernels":
            return mod
    if found:
        return found[0]
    pytest.skip("pysynth.kernels is not importable (install pysynth or put the repo on PYTHONPATH)")


@pytest.fixture(scope="session")
def kernels_pkg():
    return _kernels_package()


@pytest.fixture(scope="session")
def load(kernels_pkg):
    """load("copy_attention.naive") -> that submodule of the kernels package."""

    def _load(sub: str):
        return importlib.import_module(f"{kernels_pkg.__name__}.{sub}")

    return _load


@pytest.fixture(scope="session")
def device():
    """Where the Triton tests run: CPU under the interpreter, else CUDA (or skip)."""
    if not HAS_TRITON:
        pytest.skip("triton is not installed (pip install '.[gpu]')")
    if INTERPRET:
        return "cpu"
    import torch

    if not torch.cuda.is_available():
        pytest.skip("TRITON_INTERPRET is not 1 and no CUDA device is available")
    return "cuda"


@pytest.fixture(scope="session")
def gpu(device):
    """For cases the interpreter cannot run (bf16 tl.dot, real timings)."""
    if device != "cuda":
        pytest.skip("GPU only: the Triton interpreter multiplies bf16 bit patterns in tl.dot "
                    "(triton-lang/triton#11584); run with TRITON_INTERPRET=0 on a CUDA machine")
    return device
