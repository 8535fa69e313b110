"""Shared helpers of the retrieval tests: small random corpora and a parity caller."""
from __future__ import annotations

import numpy as np

from pysynth import _dispatch

BACKENDS = _dispatch.available("retrieval")


def zipf_corpus(rng: np.random.Generator, n_docs: int, vocab: int, max_len: int = 12, s: float = 1.0):
    """Flat ids + offsets of n_docs documents (0..max_len tokens, Zipfian ids)."""
    lens = rng.integers(0, max_len + 1, n_docs)
    off = np.zeros(n_docs + 1, np.int64)
    np.cumsum(lens, out=off[1:])
    p = 1.0 / np.arange(1, vocab + 1) ** s
    p /= p.sum()
    ids = rng.choice(vocab, size=int(off[-1]), p=p).astype(np.int32)
    if off[-1] == 0:  # never an empty corpus
        ids = np.array([0], np.int32)
        off[1:] += 1
    return ids, off


def queries_of(rng: np.random.Generator, n: int, vocab: int, max_len: int = 7, s: float = 1.0):
    lens = rng.integers(0, max_len + 1, n)
    off = np.zeros(n + 1, np.int64)
    np.cumsum(lens, out=off[1:])
    p = 1.0 / np.arange(1, vocab + 1) ** s
    p /= p.sum()
    return rng.choice(vocab, size=int(off[-1]), p=p).astype(np.int32), off


def call_all(func: str, *args):
    """Call ``func`` of every retrieval backend; assert identical results (or the same error type)."""
    out = {}
    for name, mod in BACKENDS.items():
        try:
            out[name] = ("ok", getattr(mod, func)(*args))
        except Exception as exc:  # noqa: BLE001 - compared below
            out[name] = ("err", exc)
    ref = out["python"]
    for name, got in out.items():
        assert got[0] == ref[0], f"{func}: {name} -> {got[1]!r}, python -> {ref[1]!r}"
        if got[0] == "err":
            assert type(got[1]) is type(ref[1]), f"{func}: {name} raised {got[1]!r}, python {ref[1]!r}"
        else:
            assert_same(got[1], ref[1], f"{func}[{name}]")
    if ref[0] == "err":
        raise ref[1]
    return ref[1]


def assert_same(a, b, where="result"):
    if isinstance(a, dict):
        assert a.keys() == b.keys(), where
        for k in a:
            assert_same(a[k], b[k], f"{where}[{k!r}]")
    elif isinstance(a, (tuple, list)):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            assert_same(x, y, f"{where}[{i}]")
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape, f"{where}: {a.dtype}{a.shape} vs {b.dtype}{b.shape}"
        assert np.array_equal(a, b, equal_nan=a.dtype.kind == "f"), f"{where}: arrays differ"
    else:
        assert a == b and type(a) is type(b), f"{where}: {a!r} != {b!r}"
