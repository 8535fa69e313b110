"""Neural seq2seq models (EDNet, AttNet, CopyNet; Ding & Balog 2018) — PyTorch, loaded lazily.

``import pysynth.models`` does not import torch; the names below load on first use:

* :class:`Seq2SeqConfig`, :class:`TrainConfig` (``pysynth.models.config``; no torch)
* :class:`Vocab`, :func:`tokenize`, :func:`detokenize` (``pysynth.models.vocab``; no torch)
* :class:`Seq2Seq` (``pysynth.models.seq2seq``; torch)
* :func:`save_model`, :func:`load_model` (``pysynth.models.io``)
* :class:`Trainer`, :func:`train` (``pysynth.models.train``; torch)
* :class:`Generator` (``pysynth.models.generate``)
* :func:`generate_questions`, :func:`make_synthetic_pairs` (``pysynth.models.k2q``)
"""
from __future__ import annotations

import importlib

_LAZY = {
    "Seq2SeqConfig": "config", "TrainConfig": "config", "ARCHS": "config",
    "Vocab": "vocab", "tokenize": "vocab", "detokenize": "vocab",
    "Seq2Seq": "seq2seq",
    "save_model": "io", "load_model": "io",
    "Trainer": "train", "train": "train",
    "Generator": "generate", "Generation": "generate",
    "generate_questions": "k2q", "make_synthetic_pairs": "k2q", "default_model_dir": "k2q",
    "evaluate_t0": "k2q",
}
__all__ = sorted(_LAZY)


def __getattr__(name):
    mod = _LAZY.get(name)
    if mod is None:
        raise AttributeError(f"module 'pysynth.models' has no attribute {name!r}")
    return getattr(importlib.import_module(f"pysynth.models.{mod}"), name)


def __dir__():
    return sorted(list(globals()) + __all__)
