"""faiss on demand: the lazy import, where a search runs (CPU or a GPU copy), and its OpenMP threads.

faiss is imported on first use (``pip install '.[dist]'``); importing this module imports
neither faiss nor torch.
"""
from __future__ import annotations

import contextlib
import os
from typing import Any, Iterator, Optional

from pysynth import _validate as _v

__all__ = ["faiss_module", "gpu_problem", "search_device", "omp_threads", "KINDS", "METRICS", "DEVICES"]

KINDS = ("flat", "hnsw", "ivf")
METRICS = ("ip", "l2")
DEVICES = ("auto", "cpu", "cuda")


def faiss_module():
    """The faiss module, or ImportError with the install command."""
    try:
        import faiss
    except ImportError as exc:
        raise ImportError(f"pysynth.retrieval.dense needs faiss: pip install '.[dist]' ({exc})") from None
    return faiss


def gpu_problem(faiss) -> Optional[str]:
    """Why faiss cannot search on a GPU here, or None when it can."""
    if not hasattr(faiss, "StandardGpuResources") or not hasattr(faiss, "index_cpu_to_gpu"):
        return (f"the installed faiss {getattr(faiss, '__version__', '?')} has no GPU support: install faiss-gpu "
                "(e.g. pip install faiss-gpu-cu12, in place of faiss-cpu)")
    try:
        n = int(faiss.get_num_gpus())
    except Exception as exc:  # noqa: BLE001 - a broken CUDA runtime raises RuntimeError and friends
        return f"faiss cannot query CUDA ({type(exc).__name__}: {exc})"
    return None if n > 0 else "faiss has GPU support but sees no CUDA GPU (check the driver and CUDA_VISIBLE_DEVICES)"


def search_device(faiss, device: Any, kind: str) -> str:
    """``"cuda"`` or ``"cpu"``: where ``kind`` indexes search for ``device`` (one of DEVICES)."""
    device = _v.choice(device, "device", DEVICES)
    if device == "cpu":
        return "cpu"
    problem = gpu_problem(faiss)
    if device == "cuda":
        if kind == "hnsw":
            raise ValueError("device='cuda': faiss has no GPU HNSW index; use kind='flat' or 'ivf' on the GPU, or "
                             "device='cpu' (or 'auto') for HNSW")
        if problem:
            raise ValueError(f"device='cuda', but {problem}; or pass device='cpu'")
        return "cuda"
    return "cuda" if problem is None and kind != "hnsw" else "cpu"


@contextlib.contextmanager
def omp_threads(faiss, workers: int) -> Iterator[None]:
    """faiss's OpenMP thread count set to ``workers`` (-1: all cores) for a block."""
    # faiss's OpenMP thread count is process-wide: set it for the call, then put it back
    n = (os.cpu_count() or 1) if workers == -1 else workers
    old = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(n)
    try:
        yield
    finally:
        faiss.omp_set_num_threads(old)
