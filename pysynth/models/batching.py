"""Turning token lists into padded id arrays (numpy; no torch here).

:class:`SourceBatch` itself is the decoding layer's generic container
(:mod:`pysynth.decoding.protocol`); this module fills it from a :class:`Vocab`.
"""
from __future__ import annotations

from typing import List, Sequence, Tuple

import numpy as np

from pysynth.decoding.protocol import SourceBatch
from pysynth.models.vocab import Vocab

__all__ = ["SourceBatch", "make_source_batch", "make_target_arrays"]


def make_source_batch(vocab: Vocab, sources: Sequence[Sequence[str]], copy: bool) -> SourceBatch:
    """Pad already-tokenized (and already truncated) sources; every source needs a token."""
    B = len(sources)
    S = max((len(s) for s in sources), default=0)
    src = np.full((B, max(S, 1)), vocab.pad_id, dtype=np.int64)
    src_ext = src.copy()
    lens = np.zeros(B, dtype=np.int64)
    oovs: List[List[str]] = []
    for i, toks in enumerate(sources):
        if not toks:
            raise ValueError(f"sources: row {i} is empty")
        ids, ext, oov = vocab.encode_extended(toks)
        src[i, : len(ids)] = ids
        src_ext[i, : len(ids)] = ext if copy else ids
        lens[i] = len(ids)
        oovs.append(oov if copy else [])
    n_ext = max((len(o) for o in oovs), default=0)
    return SourceBatch(src, lens, src_ext, oovs, n_ext)


def make_target_arrays(
    vocab: Vocab, targets: Sequence[Sequence[str]], oovs: Sequence[Sequence[str]], max_len: int
) -> Tuple[np.ndarray, np.ndarray]:
    """``(tgt_in, tgt_out)`` [B, T+1]: ``<s> y...`` and ``y... </s>``; OOV target words that occur
    in the row's ``oovs`` get their extended id (copied), others ``<unk>``."""
    B = len(targets)
    T = min(max((len(t) for t in targets), default=0), max_len) + 1
    tin = np.full((B, T), vocab.pad_id, dtype=np.int64)
    tout = np.full((B, T), vocab.pad_id, dtype=np.int64)
    V = len(vocab)
    for i, toks in enumerate(targets):
        toks = list(toks)[:max_len]
        pos = {w: V + k for k, w in enumerate(oovs[i])}
        ids = [vocab.stoi.get(w, pos.get(w, vocab.unk_id)) for w in toks]
        inp = [vocab.stoi.get(w, vocab.unk_id) for w in toks]
        tin[i, 0] = vocab.bos_id
        tin[i, 1 : len(inp) + 1] = inp
        tout[i, : len(ids)] = ids
        tout[i, len(ids)] = vocab.eos_id
    return tin, tout
