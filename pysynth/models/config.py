"""Model and training configuration (dataclasses saved as JSON; no torch here)."""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Any, Dict

from pysynth.models import registry

__all__ = ["Seq2SeqConfig", "TrainConfig", "ARCHS"]

_SELF = "pysynth.models.config:Seq2SeqConfig"
#: the registered architectures configured by :class:`Seq2SeqConfig` (from the registry)
ARCHS = tuple(a for a in registry.architectures() if registry.architecture(a).config == _SELF)


def config_from_dict(cls, d: Dict[str, Any]):
    """``cls(**d)`` for a configuration dataclass; TypeError for a non-dict, ValueError naming
    unknown fields (every family's ``from_dict``)."""
    if not isinstance(d, dict):
        raise TypeError(f"d: must be a dict, got {type(d).__name__}")
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(d) - names)
    if unknown:
        raise ValueError(f"{cls.__name__}: unknown field(s) {unknown}; known: {sorted(names)}")
    return cls(**d)


@dataclass
class Seq2SeqConfig:
    """Architecture of EDNet / AttNet / CopyNet (Ding & Balog 2018, Sect. 4 and 6.3).

    Defaults are the paper's settings (Sect. 6.3): top 44K words, embeddings 100 initialised
    uniformly in [-0.1, 0.1], a 1-layer bidirectional GRU encoder of size 200 (per direction,
    so encoder states have 400 dims), a 1-layer GRU decoder of size 400, dropout 0.5.

    Parameters
    ----------
    arch : {"ednet", "attnet", "copynet"}
        EDNet: context = last encoder state (Eq. 9-12). AttNet: + additive attention (Eq. 13).
        CopyNet: + copying from the source (Eq. 14-16, Gu et al. 2016).
    vocab_size : int
        Maximum vocabulary size (specials included); the built vocabulary may be smaller.
    emb_dim, enc_hidden, dec_hidden : int
        Embedding size, encoder GRU size per direction, decoder GRU size.
    attn_dim : int
        Hidden size of the additive attention scorer (0: ``dec_hidden``).
    readout_dim : int
        Size of the layer before the output softmax (0: ``emb_dim`` if ``tie_embeddings`` else
        ``dec_hidden``).
    tie_embeddings : bool
        Output projection = the (shared source/target) embedding matrix (saves ``V x d`` weights).
    dropout : float
    emb_init : float
        Embeddings start uniform in ``[-emb_init, emb_init]``.
    max_src_len : int
        Source tokens beyond this are dropped (documented truncation of over-long input).
    max_tgt_len : int
        Longest target used in training and default decoding limit (``</s>`` excluded).
    """

    arch: str = "copynet"
    vocab_size: int = 44000
    emb_dim: int = 100
    enc_hidden: int = 200
    dec_hidden: int = 400
    attn_dim: int = 0
    readout_dim: int = 0
    tie_embeddings: bool = False
    dropout: float = 0.5
    emb_init: float = 0.1
    max_src_len: int = 32
    max_tgt_len: int = 40

    def __post_init__(self):
        if self.arch not in registry.architectures() or registry.architecture(self.arch).config != _SELF:
            archs = [a for a in registry.architectures() if registry.architecture(a).config == _SELF]
            raise ValueError(f"arch: must be one of {archs}, got {self.arch!r}")
        for name in ("vocab_size", "emb_dim", "enc_hidden", "dec_hidden", "max_src_len", "max_tgt_len"):
            if int(getattr(self, name)) <= 0:
                raise ValueError(f"{name}: must be positive, got {getattr(self, name)}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout: must be in [0, 1), got {self.dropout}")

    @property
    def options(self) -> Dict[str, Any]:
        """The architecture's capability flags (``attention``, ``copy``) from the registry."""
        return registry.architecture(self.arch).options

    @property
    def attn_size(self) -> int:
        return self.attn_dim or self.dec_hidden

    @property
    def readout_size(self) -> int:
        if self.tie_embeddings:
            return self.emb_dim
        return self.readout_dim or self.dec_hidden

    def to_dict(self) -> Dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: Dict[str, Any]) -> "Seq2SeqConfig":
        return config_from_dict(cls, d)

    def to_json(self) -> bytes:
        return json.dumps(self.to_dict(), indent=1).encode("utf-8")


@dataclass
class TrainConfig:
    """Training settings (defaults: the paper's Adam 1e-4, gradient clipping 0.1).

    Parameters
    ----------
    lr, clip_norm : float
        Adam learning rate; gradients are clipped to this total L2 norm.
    batch_size : int
        Pairs per batch; batches are drawn from length buckets of ``bucket_batches`` batches.
    max_steps, max_epochs, max_minutes : stop at whichever comes first (0 = no limit).
    eval_every : int
        Evaluate dev BLEU (greedy decoding, sacrebleu via ``pysynth.metrics``) every N steps.
    patience : int
        Early stopping: stop after this many evaluations without a better dev BLEU (0 = never).
    ckpt_every : int
        Write the resumable checkpoint every N steps (and at the end).
    log_every : int
        Progress line every N steps.
    seed : int
        Seeds data order, initialisation and dropout (deterministic on CPU).
    device : str
        ``auto`` (CUDA when present), ``cpu`` or ``cuda``.
    """

    lr: float = 1e-4
    clip_norm: float = 0.1
    batch_size: int = 64
    bucket_batches: int = 50
    max_steps: int = 0
    max_epochs: int = 10
    max_minutes: float = 0.0
    eval_every: int = 1000
    eval_max_pairs: int = 500
    patience: int = 5
    ckpt_every: int = 500
    log_every: int = 100
    seed: int = 0
    device: str = "auto"
    dev_fraction: float = 0.02
    threads: int = 0

    def to_dict(self) -> Dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: Dict[str, Any]) -> "TrainConfig":
        return config_from_dict(cls, d)
