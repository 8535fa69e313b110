"""Shared helpers of the retrieval tests: small random corpora; parity through tests/_parity.py."""
from __future__ import annotations

import numpy as np

from pysynth import _dispatch

import _parity
from _parity import assert_same  # noqa: F401 - re-exported for the retrieval tests

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
    """``func`` of every retrieval backend, compared with the twin (:func:`_parity.call_all`)."""
    return _parity.call_all("retrieval", func, *args)
