"""DenseIndex's device choice: CPU fallback, clear errors without a GPU faiss, and the GPU wiring.

There is no GPU here: the wiring test stands in faiss's GPU calls with CPU clones that count their
searches, to check that candidates come from the GPU copy within faiss's GPU limits and that the
results equal the CPU index's. It measures nothing.
"""
from __future__ import annotations

import numpy as np
import pytest

from pysynth.retrieval.dense import DenseIndex

faiss = pytest.importorskip("faiss")


def _data(n=400, d=8, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, d)).astype(np.float32), rng.standard_normal((5, d)).astype(np.float32)


def _no_gpu():
    return not hasattr(faiss, "StandardGpuResources") or faiss.get_num_gpus() == 0


@pytest.mark.skipif(not _no_gpu(), reason="a GPU faiss is installed and sees a GPU")
@pytest.mark.parametrize("kind", ["flat", "hnsw", "ivf"])
def test_auto_falls_back_to_cpu_and_cuda_says_why(kind, tmp_path):
    x, q = _data()
    kw = {"nlist": 4} if kind == "ivf" else {}
    ix = DenseIndex.build(x, kind=kind, **kw)
    assert ix.device == "cpu"
    with pytest.raises(ValueError, match="faiss-gpu|GPU HNSW|no CUDA GPU"):
        DenseIndex.build(x, kind=kind, device="cuda", **kw)
    ix.save(tmp_path / "ix")
    assert DenseIndex.load(tmp_path / "ix").device == "cpu"
    with pytest.raises(ValueError, match="device='cuda'"):
        DenseIndex.load(tmp_path / "ix", device="cuda")
    with pytest.raises(ValueError, match="device"):
        DenseIndex.build(x, kind=kind, device="gpu", **kw)


class _FakeGpuIndex:
    """A CPU clone standing in for faiss.index_cpu_to_gpu's result; counts its searches."""

    def __init__(self, index):
        self.index = faiss.clone_index(index)
        self.calls = []

    def search(self, q, k, params=None):
        self.calls.append(k)
        return self.index.search(q, k, params=params) if params is not None else self.index.search(q, k)


@pytest.fixture
def fake_gpu(monkeypatch):
    made = []

    def to_gpu(res, dev, index):
        assert dev == 0 and res is not None
        made.append(_FakeGpuIndex(index))
        return made[-1]

    monkeypatch.setattr(faiss, "StandardGpuResources", object, raising=False)
    monkeypatch.setattr(faiss, "index_cpu_to_gpu", to_gpu, raising=False)
    monkeypatch.setattr(faiss, "get_num_gpus", lambda: 1)
    return made


@pytest.mark.parametrize("kind", ["flat", "ivf"])
def test_gpu_copy_proposes_candidates(fake_gpu, kind, tmp_path):
    x, q = _data()
    kw = {"nlist": 4, "nprobe": 4} if kind == "ivf" else {}
    cpu = DenseIndex.build(x, kind=kind, device="cpu", **kw)
    gpu = DenseIndex.build(x, kind=kind, device="auto", **kw)
    assert (cpu.device, gpu.device, len(fake_gpu)) == ("cpu", "cuda", 1)
    for k in (1, 10, 400):
        a, b = cpu.search(q, k), gpu.search(q, k)
        np.testing.assert_array_equal(a.docs, b.docs)
        np.testing.assert_array_equal(a.scores, b.scores)
    assert fake_gpu[0].calls, "the GPU copy was not searched"
    gpu.save(tmp_path / "ix")  # saving writes the CPU index
    back = DenseIndex.load(tmp_path / "ix", device="cuda")
    assert back.device == "cuda" and len(fake_gpu) == 2
    np.testing.assert_array_equal(back.search(q, 10).docs, cpu.search(q, 10).docs)


def test_gpu_limit_goes_to_cpu(fake_gpu, monkeypatch):
    from pysynth.retrieval import dense

    monkeypatch.setattr(dense, "_GPU_MAX_K", 20)
    x, q = _data()
    gpu = DenseIndex.build(x, device="cuda")
    np.testing.assert_array_equal(gpu.search(q, 30).docs, DenseIndex.build(x, device="cpu").search(q, 30).docs)
    assert all(k <= 20 for k in fake_gpu[0].calls)


def test_hnsw_stays_on_cpu_under_auto(fake_gpu):
    x, _ = _data()
    assert DenseIndex.build(x, kind="hnsw").device == "cpu" and not fake_gpu
    with pytest.raises(ValueError, match="no GPU HNSW"):
        DenseIndex.build(x, kind="hnsw", device="cuda")
