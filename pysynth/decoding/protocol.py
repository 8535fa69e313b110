"""The one interface between the searches and a model runtime (no torch, no onnxruntime here).

:mod:`pysynth.decoding.search` runs greedy, beam, diverse beam search and sampling over any
object that satisfies :class:`DecodingBackend`; the implementations are
:class:`pysynth.decoding.backends.TorchBackend` (a torch module with ``encode`` / ``step``),
:class:`pysynth.decoding.ort.OrtBackend` (exported ONNX graphs, no torch) and
:class:`pysynth.decoding.hf.HFBackend` (a local Hugging Face ``AutoModelForSeq2SeqLM``).

The special token ids come from the backend (``backend.specials``), which takes them from its
model's vocabulary or configuration: the searches hold no copy of them.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, List, NamedTuple, Optional, Protocol, Sequence, Tuple, runtime_checkable

import numpy as np

__all__ = ["SpecialIds", "SourceBatch", "DecodingBackend", "check_backend"]


class SpecialIds(NamedTuple):
    """Special token ids of a model's vocabulary.

    pad : padding id (never generated)
    unk : unknown-word id (never generated with ``ban_unk``); None when the vocabulary has none
    bos : the first decoder input (``<s>``, Hugging Face's ``decoder_start_token_id``); never
        generated unless it is also ``eos``
    eos : ends a hypothesis
    """

    pad: int
    unk: Optional[int]
    bos: int
    eos: int

    def never(self, ban_unk: bool) -> Tuple[int, ...]:
        """The ids no search generates: ``pad`` and ``bos`` (and ``unk`` with ``ban_unk``), never ``eos``."""
        ids = [self.pad, self.bos] + ([self.unk] if ban_unk and self.unk is not None else [])
        return tuple(sorted({int(i) for i in ids if i is not None and i != self.eos}))

    @classmethod
    def check(cls, value: Any, what: str = "specials") -> "SpecialIds":
        """``value`` (a SpecialIds or a 4-tuple) as SpecialIds; TypeError/ValueError naming ``what``."""
        try:
            sp = cls(*value)
        except TypeError:
            raise TypeError(f"{what}: expected SpecialIds(pad, unk, bos, eos), got {value!r}") from None
        for name, v in sp._asdict().items():
            if v is None and name == "unk":
                continue
            if not isinstance(v, (int, np.integer)) or v < 0:
                raise ValueError(f"{what}.{name}: must be an id >= 0, got {v!r}")
        return sp


@dataclass
class SourceBatch:
    """Padded source ids: what every search decodes (``make_source_batch`` in
    :mod:`pysynth.models.batching` builds one from text, :meth:`from_ids` from token ids).

    src : [B, S] int64 ids (OOV -> ``<unk>``), padded with ``<pad>``
    src_len : [B] int64 lengths (>= 1)
    src_ext : [B, S] int64 extended ids (CopyNet; equal to ``src`` otherwise)
    oovs : per row, the distinct OOV words (extended id ``V + k`` is ``oovs[row][k]``)
    n_ext : extended-vocabulary columns of the batch (max OOV count; 0 without copying)
    types : [B, S] int64 token types, optional (None: none; the warm-started encoder-decoders of
        :mod:`pysynth.models.warmstart` mark the answer with type 1)
    """

    src: np.ndarray
    src_len: np.ndarray
    src_ext: np.ndarray
    oovs: List[List[str]]
    n_ext: int
    types: Optional[np.ndarray] = None

    def __len__(self) -> int:
        return int(self.src.shape[0])

    def ext_limit(self, vocab_size: int) -> np.ndarray:
        """[B] first invalid extended id of each row (``V + len(oovs[row])``)."""
        return np.asarray([vocab_size + len(o) for o in self.oovs], dtype=np.int64)

    @classmethod
    def from_ids(cls, sequences: Sequence[Sequence[int]], pad: int,
                 types: Optional[Sequence[Sequence[int]]] = None) -> "SourceBatch":
        """Pad id sequences (no copying: ``src_ext == src``, no extended ids); for models with
        their own tokenizer (:class:`pysynth.decoding.hf.HFBackend`). ``types``: one token type
        per id (padded with 0), or None."""
        seqs = [list(map(int, q)) for q in sequences]
        for i, q in enumerate(seqs):
            if not q:
                raise ValueError(f"sequences[{i}]: empty; every source needs at least one id")
        S = max((len(q) for q in seqs), default=1)
        src = np.full((len(seqs), S), int(pad), dtype=np.int64)
        for i, q in enumerate(seqs):
            src[i, : len(q)] = q
        typ = None
        if types is not None:
            if len(types) != len(seqs) or any(len(t) != len(q) for t, q in zip(types, seqs)):
                raise ValueError("types: expected one type per id of every sequence (same lengths as sequences)")
            typ = np.zeros_like(src)
            for i, t in enumerate(types):
                typ[i, : len(t)] = list(map(int, t))
        return cls(src, np.asarray([len(q) for q in seqs], dtype=np.int64), src.copy(), [[] for _ in seqs], 0,
                   typ)

    def take(self, rows: np.ndarray) -> "SourceBatch":
        rows = np.asarray(rows, dtype=np.int64)
        oovs = [self.oovs[i] for i in rows]
        S = int(self.src_len[rows].max()) if len(rows) else 0
        return SourceBatch(self.src[rows, :S], self.src_len[rows], self.src_ext[rows, :S], oovs,
                           self.n_ext, None if self.types is None else self.types[rows, :S])



@runtime_checkable
class DecodingBackend(Protocol):
    """What every search needs from a model runtime.

    Attributes
    ----------
    vocab_size : int
        ``V``; a step returns ``V + batch.n_ext`` columns (copying models) or ``V``.
    specials : SpecialIds

    Methods
    -------
    encode(batch) -> (state, h)
        Encoder outputs for the rows of ``batch`` and the first decoder state.
    take(state, rows), take_h(h, rows)
        Gather rows (hypotheses) of the encoder state / decoder state.
    step(state, tokens, h) -> (logp, h)
        Float32 log-probabilities [rows, V + n_ext] (numpy) of the next token.

    Optional, used when present (not None):

    ``step_topk(state, tokens, h, k) -> (vals, idx, h)``: only the ``k`` best columns per row
    (lower id first among equal values at the k-th place); ``step_diverse(...)``: a diverse beam
    step with the group selection on the device (see
    :meth:`pysynth.decoding.backends.TorchBackend.step_diverse`).
    """

    vocab_size: int
    specials: SpecialIds

    def encode(self, batch) -> Tuple[Any, Any]: ...

    def take(self, state, rows: np.ndarray) -> Any: ...

    def take_h(self, h, rows: np.ndarray) -> Any: ...

    def step(self, state, tokens: np.ndarray, h) -> Tuple[np.ndarray, Any]: ...


def check_backend(backend, what: str = "backend") -> SpecialIds:
    """TypeError naming the missing members when ``backend`` is no :class:`DecodingBackend`;
    returns its checked special ids."""
    missing = [m for m in ("vocab_size", "specials", "encode", "take", "take_h", "step") if not hasattr(backend, m)]
    if missing:
        raise TypeError(f"{what}: {type(backend).__name__} is not a decoding backend (missing "
                        f"{', '.join(missing)}); use TorchBackend, OrtBackend or HFBackend")
    return SpecialIds.check(backend.specials, f"{what}.specials")
