"""A small Transformer encoder-decoder (Vaswani et al. 2017) with an optional copy head.

The copy head is a pointer-generator (See et al. 2017, Sect. 2.2): a single-head copy
attention ``a_t`` over the encoder states and a switch
``p_gen = sigmoid(w^T [c_t; s_t; y_{t-1}] + b)`` mix generating and copying,

    P(w) = p_gen * P_vocab(w) + (1 - p_gen) * sum_{j: x_j = w} a_t[j],

over the extended vocabulary: source words outside the vocabulary get the ids ``V + k`` of the
batch's :class:`~pysynth.models.batching.SourceBatch` (as for CopyNet), so copied OOV words can
be generated. Without the copy head, ``P(w) = P_vocab(w)`` over ``V`` ids.

The decoding interface is that of the GRU :class:`pysynth.models.seq2seq.Seq2Seq`, so
:class:`pysynth.decoding.backends.TorchBackend` and the greedy / beam / diverse beam searches
drive it unchanged:

* ``encode(src, src_len)`` -> :class:`Encoded` (a NamedTuple with ``take(rows)`` and ``h0``);
* ``step(tokens, h, enc, src_ext, n_ext)`` -> ``(logp [N, V + n_ext], h_new)``;
* ``step_parts(tokens, h, memory, context, keys, copy_feats, mask, src_ext)`` ->
  ``(ls, shift, touched, h_new)`` (the CPU top-k path of the backend);
* ``vocab_size``, ``config``, ``copy`` (the copy head), ``forward`` (teacher-forced NLL for
  :mod:`pysynth.models.train`); ``has_copy`` is False (it selects the backend's fused CopyNet
  kernel, a different mixture).

The decoder state ``h`` is the self-attention cache: one tensor
``[N, layers, 2, t, d_model]`` (keys and values of the ``t`` tokens read so far, per layer), so
the backend's ``take_h`` (``index_select`` on dim 0) selects beams. The step's position is
``t``; positions are sinusoidal, so decoding has no length limit beyond memory.

Log-probabilities with the copy head are ``log(max(p, 1e-12))``, computed in log space with
CopyNet's float32 epilogue (see :mod:`pysynth.models.seq2seq`), so the backend's
``topk_from_parts`` path ranks the same values as the full rows.
"""
from __future__ import annotations

import dataclasses
import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Optional, Tuple, Union

import torch
import torch.nn as nn
import torch.nn.functional as F

from pysynth.decoding.protocol import SpecialIds

# the GRU seq2seq's encoder outputs, field for field: for this model ``context`` is empty,
# ``keys`` [N, dec_layers, 2, S, d] are the cross-attention keys/values of every decoder layer,
# ``copy_feats`` the copy attention's keys and ``h0`` [N, dec_layers, 2, 0, d] the empty cache
from pysynth.models.seq2seq import Encoded

__all__ = ["TransformerSeq2SeqConfig", "TransformerSeq2Seq", "Encoded", "ARCH", "save_pretrained", "load",
           "export_onnx", "onnx_graphs", "ONNX_GRAPHS", "LOG_EPS", "LOG_FLOOR"]

ARCH = "transformer-seq2seq"
LOG_EPS = 1e-12  # = pysynth.models.seq2seq.LOG_EPS: the searches' floor for copy log-probabilities
LOG_FLOOR = math.log(LOG_EPS)
MASK_NEG = -1e9  # finite: an all-masked row cannot give NaN


@dataclass
class TransformerSeq2SeqConfig:
    """Architecture of :class:`TransformerSeq2Seq`.

    Parameters
    ----------
    vocab_size : int
        Maximum vocabulary size (specials included); the built vocabulary may be smaller.
    d_model, heads, ff_dim : int
        Model width, attention heads (must divide ``d_model``), feed-forward width.
    enc_layers, dec_layers : int
    dropout : float
        In [0, 1); applied in training only.
    copy : bool
        Pointer-generator copy head (See et al. 2017) over the extended vocabulary.
    tie_embeddings : bool
        Output projection = the shared source/target embedding matrix.
    max_src_len, max_tgt_len : int
        Source truncation and target length used in training / default decoding limit.
    pad_id, unk_id : int
        Ids of ``<pad>`` (ignored by the loss, zero embedding) and ``<unk>`` (read for
        extended ids); the vocabulary's (:class:`~pysynth.models.vocab.Vocab`: 0 and 1).
    bos_id, eos_id : int
        The first decoder input and the end of a hypothesis (``Vocab``: 2 and 3); with
        ``pad_id`` and ``unk_id`` they are the model's ``specials`` for the decoding backends.
    """

    vocab_size: int = 32000
    d_model: int = 256
    heads: int = 4
    enc_layers: int = 3
    dec_layers: int = 3
    ff_dim: int = 1024
    dropout: float = 0.1
    copy: bool = True
    tie_embeddings: bool = True
    max_src_len: int = 64
    max_tgt_len: int = 40
    pad_id: int = 0
    unk_id: int = 1
    bos_id: int = 2
    eos_id: int = 3
    arch = ARCH  # not a field: the registry name a model directory records

    def __post_init__(self):
        for name in ("vocab_size", "d_model", "heads", "enc_layers", "dec_layers", "ff_dim", "max_src_len",
                     "max_tgt_len"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
                raise ValueError(f"{name}: must be a positive integer, got {v!r}")
        for name in ("pad_id", "unk_id", "bos_id", "eos_id"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise ValueError(f"{name}: must be an integer >= 0, got {v!r}")
        if self.d_model % self.heads:
            raise ValueError(f"heads: must divide d_model={self.d_model}, got heads={self.heads}; "
                             f"e.g. heads={math.gcd(self.d_model, self.heads)}")
        if not isinstance(self.dropout, (int, float)) or not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout: must be in [0, 1), got {self.dropout!r}")
        for name in ("copy", "tie_embeddings"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"{name}: must be a bool, got {getattr(self, name)!r}")

    def to_dict(self) -> Dict[str, Any]:
        return dataclasses.asdict(self)

    def to_json(self) -> bytes:
        return json.dumps(self.to_dict(), indent=1).encode("utf-8")

    @classmethod
    def from_dict(cls, d: Dict[str, Any]) -> "TransformerSeq2SeqConfig":
        from pysynth.models.config import config_from_dict

        return config_from_dict(cls, d)


def _sinusoid(pos: torch.Tensor, d: int) -> torch.Tensor:
    """[P, d] sinusoidal position encodings of float positions ``pos`` [P] (Vaswani et al. Sect. 3.5)."""
    i = torch.arange(0, d, 2, dtype=torch.float32, device=pos.device)
    ang = pos.float()[:, None] * torch.exp(i * (-math.log(10000.0) / d))[None, :]
    return torch.stack([ang.sin(), ang.cos()], -1).reshape(pos.shape[0], -1)[:, :d]


class _Attention(nn.Module):
    def __init__(self, d: int, heads: int, dropout: float):
        super().__init__()
        self.h, self.dk = heads, d // heads
        self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))
        self.drop = nn.Dropout(dropout)

    def kv(self, x: torch.Tensor) -> torch.Tensor:
        """[N, 2, T, d] keys and values of ``x`` [N, T, d] (cached by the decoder)."""
        return torch.stack([self.k(x), self.v(x)], 1)

    def attend(self, x: torch.Tensor, kv: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        """Queries from ``x`` [N, Tq, d] over ``kv`` [N, 2, Tk, d]; ``bias`` broadcasts to [N, 1|H, Tq, Tk]."""
        N, Tq, d = x.shape
        q = self.q(x).view(N, Tq, self.h, self.dk).transpose(1, 2)
        k = kv[:, 0].reshape(N, -1, self.h, self.dk).transpose(1, 2)
        v = kv[:, 1].reshape(N, -1, self.h, self.dk).transpose(1, 2)
        att = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(self.dk) + bias, -1)
        return self.o((self.drop(att) @ v).transpose(1, 2).reshape(N, Tq, d))


class _FF(nn.Sequential):
    def __init__(self, d: int, ff: int, dropout: float):
        super().__init__(nn.Linear(d, ff), nn.GELU(), nn.Dropout(dropout), nn.Linear(ff, d))


class _EncLayer(nn.Module):
    # pre-LN: trains without warm-up at small sizes (Xiong et al. 2020)
    def __init__(self, c: TransformerSeq2SeqConfig):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(c.d_model), nn.LayerNorm(c.d_model)
        self.att = _Attention(c.d_model, c.heads, c.dropout)
        self.ff = _FF(c.d_model, c.ff_dim, c.dropout)
        self.drop = nn.Dropout(c.dropout)

    def forward(self, x, bias):
        y = self.ln1(x)
        x = x + self.drop(self.att.attend(y, self.att.kv(y), bias))
        return x + self.drop(self.ff(self.ln2(x)))


class _DecLayer(nn.Module):
    def __init__(self, c: TransformerSeq2SeqConfig):
        super().__init__()
        self.ln1, self.ln2, self.ln3 = (nn.LayerNorm(c.d_model) for _ in range(3))
        self.self_att = _Attention(c.d_model, c.heads, c.dropout)
        self.cross_att = _Attention(c.d_model, c.heads, c.dropout)
        self.ff = _FF(c.d_model, c.ff_dim, c.dropout)
        self.drop = nn.Dropout(c.dropout)

    def forward(self, x, self_kv, self_bias, cross_kv, cross_bias):
        """``self_kv`` [N, 2, T, d] covers the cached tokens and ``x``'s own (see callers)."""
        x = x + self.drop(self.self_att.attend(self.ln1(x), self_kv, self_bias))
        x = x + self.drop(self.cross_att.attend(self.ln2(x), cross_kv, cross_bias))
        return x + self.drop(self.ff(self.ln3(x)))


class TransformerSeq2Seq(nn.Module):
    """Transformer encoder-decoder with a shared source/target vocabulary of ``vocab_size`` ids.

    Parameters
    ----------
    config : TransformerSeq2SeqConfig
    vocab_size : int
        Size of the built vocabulary (at most ``config.vocab_size``; more than the 4 specials).

    Notes
    -----
    Encoder and decoder are pre-LN Transformer stacks (Vaswani et al. 2017; Xiong et al. 2020)
    with sinusoidal positions. The copy head is the pointer-generator of See et al. (2017),
    Eq. 8-9 (see the module docstring). Build it with the registry's
    ``architecture("transformer-seq2seq").build(config, vocab_size)``.
    """

    def __init__(self, config: TransformerSeq2SeqConfig, vocab_size: int):
        super().__init__()
        if not isinstance(config, TransformerSeq2SeqConfig):
            raise TypeError(f"config: must be a TransformerSeq2SeqConfig, got {type(config).__name__}")
        if isinstance(vocab_size, bool) or not isinstance(vocab_size, int) or not 4 < vocab_size <= config.vocab_size:
            raise ValueError(f"vocab_size: must be an integer in (4, config.vocab_size={config.vocab_size}], "
                             f"got {vocab_size!r}")
        c = self.config = config
        if max(c.pad_id, c.unk_id, c.bos_id, c.eos_id) >= vocab_size:
            raise ValueError(f"config.pad_id / unk_id / bos_id / eos_id: must be ids below vocab_size={vocab_size}, "
                             f"got {c.pad_id} / {c.unk_id} / {c.bos_id} / {c.eos_id}")
        self.vocab_size = vocab_size
        self.copy = self.has_copy = c.copy  # has_copy: the decoding backends' capability flag
        # the fused CopyNet Triton step (one normaliser over generate and copy scores) is not
        # this mixture: the backends keep this model on self.step
        self.fused_copy_step = False
        self.specials = SpecialIds(c.pad_id, c.unk_id, c.bos_id, c.eos_id)
        d = c.d_model
        self.embedding = nn.Embedding(vocab_size, d, padding_idx=c.pad_id)
        self.enc_layers = nn.ModuleList(_EncLayer(c) for _ in range(c.enc_layers))
        self.dec_layers = nn.ModuleList(_DecLayer(c) for _ in range(c.dec_layers))
        self.enc_ln, self.dec_ln = nn.LayerNorm(d), nn.LayerNorm(d)
        self.out = None if c.tie_embeddings else nn.Linear(d, vocab_size)
        self.out_bias = nn.Parameter(torch.zeros(vocab_size)) if c.tie_embeddings else None
        if c.copy:
            self.copy_q, self.copy_k = nn.Linear(d, d), nn.Linear(d, d)
            self.p_gen = nn.Linear(3 * d, 1)  # See et al. Eq. 8: w_h* h_t* + w_s s_t + w_x x_t + b
        self.drop = nn.Dropout(c.dropout)
        with torch.no_grad():
            nn.init.normal_(self.embedding.weight, 0.0, d ** -0.5)
            self.embedding.weight[c.pad_id].zero_()

    # -- helpers ---------------------------------------------------------------------------
    def _embed(self, ids: torch.Tensor, start) -> torch.Tensor:
        """Scaled embeddings + positions ``start .. start + T - 1`` of ``ids`` [N, T] (ids >= V read as <unk>)."""
        ids = torch.where(ids < self.vocab_size, ids, torch.full_like(ids, self.config.unk_id))
        pos = torch.arange(ids.shape[1], device=ids.device) + start
        e = self.embedding(ids)
        return self.drop(e * math.sqrt(self.config.d_model) + _sinusoid(pos, self.config.d_model).to(e.dtype))

    def output_layer(self) -> Tuple[torch.Tensor, torch.Tensor]:
        """``(W_o [V, d], b_o [V])`` of the generate scores."""
        if self.out is None:
            return self.embedding.weight, self.out_bias
        return self.out.weight, self.out.bias

    # -- encoder ---------------------------------------------------------------------------
    def encode(self, src: torch.Tensor, src_len: torch.Tensor) -> Encoded:
        """Encode ``src`` [B, S] (int64, ``<pad>``-padded) of lengths ``src_len`` [B] (>= 1)."""
        B, S = src.shape
        mask = torch.arange(S, device=src.device)[None, :] < src_len[:, None]
        x = self._embed(src, 0)
        bias = torch.where(mask, 0.0, MASK_NEG)[:, None, None, :].to(x.dtype)
        for layer in self.enc_layers:
            x = layer(x, bias)
        memory = self.enc_ln(x)
        keys = torch.stack([lay.cross_att.kv(memory) for lay in self.dec_layers], 1)
        empty = memory.new_zeros(0)
        copy_feats = self.copy_k(memory) if self.copy else empty
        h0 = memory.new_zeros(B, len(self.dec_layers), 2, 0, self.config.d_model)
        return Encoded(memory, empty, keys, copy_feats, mask, h0)

    # -- decoder ---------------------------------------------------------------------------
    def _decode(self, tokens: torch.Tensor, h: torch.Tensor, keys: torch.Tensor, mask: torch.Tensor):
        """Decoder states [N, T, d] of ``tokens`` [N, T] after the cache ``h`` [N, L, 2, t, d]; new cache."""
        N, T = tokens.shape
        t = h.shape[3]
        x = self._embed(tokens, t)
        # position t + i sees the cache and new tokens 0..i (causal)
        future = torch.arange(T, device=tokens.device)[None, :] > torch.arange(T, device=tokens.device)[:, None]
        self_bias = torch.cat([x.new_zeros(T, t), torch.where(future, MASK_NEG, 0.0).to(x.dtype)], 1)
        cross_bias = torch.where(mask, 0.0, MASK_NEG)[:, None, None, :].to(x.dtype)
        new = []
        for i, layer in enumerate(self.dec_layers):
            kv = torch.cat([h[:, i], layer.self_att.kv(layer.ln1(x))], 2)
            new.append(kv)
            x = layer(x, kv, self_bias, keys[:, i], cross_bias)
        return self.dec_ln(x), torch.stack(new, 1)

    def _parts(self, s: torch.Tensor, tokens: torch.Tensor, memory, copy_feats, mask, src_ext):
        """Parts of the output distribution at decoder states ``s`` [N, T, d] (``tokens`` [N, T]
        are their inputs): ``ls`` [N, T, V], and with the copy head ``shift`` [N, T, 1] and
        ``touched`` [N, T, S] (see :meth:`step_parts`); the source tensors are per row, shared
        by the T positions (teacher forcing runs every position at once)."""
        W_o, b_o = self.output_layer()
        ls = torch.log_softmax(F.linear(self.drop(s), W_o, b_o), -1)
        if not self.copy:
            return ls, None, None
        V, T = self.vocab_size, s.shape[1]
        # copy attention a_t (See et al. Eq. 1-2; one head, keys copy_k(h_j) from encode)
        sc = torch.bmm(self.copy_q(s), copy_feats.transpose(1, 2)) / math.sqrt(s.shape[-1])  # [N, T, S]
        log_a = torch.log_softmax(sc.masked_fill(~mask.unsqueeze(1), MASK_NEG), -1)
        ctx = torch.bmm(log_a.exp(), memory)  # context vector h*_t
        inp = torch.where(tokens < V, tokens, torch.full_like(tokens, self.config.unk_id))
        g = self.p_gen(torch.cat([ctx, s, self.embedding(inp)], -1))  # [N, T, 1] logit of p_gen (Eq. 8)
        shift = F.logsigmoid(g)  # log p_gen: log P(v) = ls_v + shift
        copy_p = torch.exp(log_a + F.logsigmoid(-g))  # (1 - p_gen) a_t[j]; 0 at padding
        # per source position: P_gen(its word) + the copy mass of every position holding that word (Eq. 9)
        same = (src_ext.unsqueeze(2) == src_ext.unsqueeze(1)).to(copy_p.dtype)  # [N, S, S], symmetric
        copy_sum = torch.bmm(copy_p, same)
        in_vocab = src_ext < V
        ids = torch.where(in_vocab, src_ext, torch.zeros_like(src_ext)).unsqueeze(1).expand(-1, T, -1)
        g_at = (torch.gather(ls, 2, ids) + shift).exp()  # gather, then add: the float32 values of ls + shift
        touched = (torch.where(in_vocab.unsqueeze(1), g_at, torch.zeros_like(g_at)) + copy_sum)
        return ls, shift, touched.clamp_min(LOG_EPS).log()

    @staticmethod
    def _epilogue(ls, shift, touched, src_ext, ext_zeros):
        """Full rows ``log max(P, 1e-12)`` over ``V + n_ext`` ids from the parts (as CopyNet's):
        ``ls`` [..., V], ``shift`` [..., 1], ``touched`` / ``src_ext`` [..., S], ``ext_zeros`` [..., n_ext]."""
        base = torch.cat([(ls + shift).clamp_min(LOG_FLOOR), ext_zeros + LOG_FLOOR], -1)
        return base.scatter(-1, src_ext, touched)

    def step_parts(self, tokens, h, memory, context, keys, copy_feats, mask, src_ext):
        """One decoder step up to the vocabulary-wide epilogue: ``(ls, shift, touched, h_new)``.

        Same contract as :meth:`pysynth.models.seq2seq.Seq2Seq.step_parts` (``context`` is
        unused; ``keys`` are the cross-attention keys/values of :class:`Encoded`): ``ls`` [N, V]
        log-softmax of the generate scores; with the copy head ``shift`` [N, 1] = log p_gen and
        ``touched`` [N, S] = log max(P(src_ext[:, j]), 1e-12); otherwise both None.
        """
        s, h_new = self._decode(tokens.unsqueeze(1), h, keys, mask)
        ls, shift, touched = self._parts(s, tokens.unsqueeze(1), memory, copy_feats, mask, src_ext)
        if not self.copy:
            return ls[:, 0], None, None, h_new
        return ls[:, 0], shift[:, 0], touched[:, 0], h_new

    def step_tensors(self, tokens, h, memory, context, keys, copy_feats, mask, src_ext, ext_zeros):
        """:meth:`step` on plain tensors (the ONNX step graph); ``ext_zeros`` [N, n_ext] carries n_ext."""
        ls, shift, touched, h_new = self.step_parts(tokens, h, memory, context, keys, copy_feats, mask, src_ext)
        if not self.copy:
            return ls, h_new
        return self._epilogue(ls, shift, touched, src_ext, ext_zeros), h_new

    def step(self, tokens: torch.Tensor, h: torch.Tensor, enc: Encoded, src_ext: Optional[torch.Tensor] = None,
             n_ext: int = 0) -> Tuple[torch.Tensor, torch.Tensor]:
        """Log-probabilities of the next token and the new cache.

        Parameters
        ----------
        tokens : [N] int64 previous tokens (``<s>`` first; extended ids >= V are read as ``<unk>``)
        h : [N, dec_layers, 2, t, d] the cache (``enc.h0`` at the first step)
        enc : Encoded for the same N rows
        src_ext : [N, S] int64 extended source ids (copy head)
        n_ext : int
            Extended-vocabulary columns (copy head; the batch's largest OOV count).

        Returns
        -------
        logp : [N, V + n_ext] (copy head) or [N, V]
        h : [N, dec_layers, 2, t + 1, d]
        """
        if self.copy and src_ext is None:
            raise ValueError("src_ext: the copy head needs the extended source ids (SourceBatch.src_ext)")
        ext_zeros = h.new_zeros(h.shape[0], int(n_ext)) if self.copy else None
        return self.step_tensors(tokens, h, enc.memory, enc.context, enc.keys, enc.copy_feats, enc.mask, src_ext,
                                 ext_zeros)

    # -- training --------------------------------------------------------------------------
    def logprobs(self, src, src_len, src_ext, n_ext: int, tgt_in) -> torch.Tensor:
        """Teacher-forced log-probabilities [B, T, V (+ n_ext)] of every target position (parallel)."""
        enc = self.encode(src, src_len)
        s, _ = self._decode(tgt_in, enc.h0, enc.keys, enc.mask)
        ls, shift, touched = self._parts(s, tgt_in, enc.memory, enc.copy_feats, enc.mask, src_ext)
        if not self.copy:
            return ls
        B, T = tgt_in.shape
        return self._epilogue(ls, shift, touched, src_ext.unsqueeze(1).expand(-1, T, -1),
                              s.new_zeros(B, T, int(n_ext)))

    def forward(self, src, src_len, src_ext, n_ext: int, tgt_in, tgt_out):
        """Teacher-forced negative log-likelihood ``(sum over target tokens, token count)``,
        the contract of :meth:`pysynth.models.seq2seq.Seq2Seq.forward` (``<pad>`` targets ignored)."""
        lp = self.logprobs(src, src_len, src_ext, n_ext, tgt_in).gather(2, tgt_out.unsqueeze(-1)).squeeze(-1)
        keep = (tgt_out != self.config.pad_id).to(lp.dtype)
        return -(lp * keep).sum(), keep.sum()


# ------------------------------------------------------------------------------ model directories

PathLike = Union[str, "os.PathLike[str]"]


def save_pretrained(model: TransformerSeq2Seq, vocab, directory: PathLike, onnx: bool = False) -> Path:
    """Write ``model`` and its :class:`~pysynth.models.vocab.Vocab` as a pysynth model directory.

    The store (:mod:`pysynth.store`, format ``pysynth.model`` v1) holds ``config.json``,
    ``vocab.json`` and ``model.safetensors`` (no pickle), and with ``onnx=True`` also
    ``encoder.onnx`` and ``step.onnx`` (:func:`export_onnx`); ``meta`` = ``{"arch", "config",
    "vocab_size", "onnx"}`` (``onnx``: graph name -> file, with :func:`onnx_graphs`' names).
    """
    import tempfile

    from safetensors.torch import save

    from pysynth import store

    if not isinstance(model, TransformerSeq2Seq):
        raise TypeError(f"model: must be a TransformerSeq2Seq, got {type(model).__name__}")
    if len(vocab) != model.vocab_size:
        raise ValueError(f"vocab: has {len(vocab)} ids but the model has vocab_size={model.vocab_size}")
    cfg = model.config.to_dict()
    state = {k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()}
    files = {"config.json": json.dumps(cfg, indent=1).encode(),
             "vocab.json": json.dumps({"itos": vocab.itos}, ensure_ascii=False).encode(),
             "model.safetensors": save(state)}
    graphs = {}
    if onnx:
        with tempfile.TemporaryDirectory() as tmp:
            for name, path in export_onnx(model, tmp).items():
                files[path.name] = path.read_bytes()
                graphs[name] = path.name
    store.save(directory, "pysynth.model", 1, files=files,
               meta={"arch": ARCH, "config": cfg, "vocab_size": model.vocab_size, "onnx": graphs,
                     "onnx_io": onnx_graphs(model.copy) if onnx else {}})
    return Path(directory)


def load(directory: PathLike, device: Optional[str] = None):
    """``(model, vocab)`` from :func:`save_pretrained`'s directory; the model is in eval mode."""
    from pysynth import store
    from pysynth.models.io import load_model

    arch = store.read_meta(directory, "pysynth.model", (1,))["meta"].get("arch")
    if arch != ARCH:
        raise ValueError(f"directory: {str(directory)!r} holds arch {arch!r}, not {ARCH!r}")
    return load_model(directory, device=device)


# ------------------------------------------------------------------------------ ONNX

#: graphs written by :func:`export_onnx` for a model with the copy head (the registry's ``onnx`` spec)
ONNX_GRAPHS = {
    "encoder": {"inputs": ["src", "src_len"], "outputs": ["memory", "keys", "copy_feats", "mask", "h0"]},
    "step": {"inputs": ["tokens", "h", "memory", "keys", "copy_feats", "mask", "src_ext", "ext_zeros"],
             "outputs": ["logp", "h_new"]},
}


def onnx_graphs(copy: bool) -> Dict[str, Dict[str, list]]:
    """Inputs and outputs of the exported graphs; without the copy head the step reads only
    ``tokens, h, keys, mask`` (the encoder still returns ``memory``)."""
    if copy:
        return ONNX_GRAPHS
    return {"encoder": {"inputs": ["src", "src_len"], "outputs": ["memory", "keys", "mask", "h0"]},
            "step": {"inputs": ["tokens", "h", "keys", "mask"], "outputs": ["logp", "h_new"]}}


def export_onnx(model: TransformerSeq2Seq, out_dir: PathLike, opset: int = 18,
                dynamo: bool = False) -> Dict[str, Path]:
    """Export the encoder and one decoder step to ``out_dir/encoder.onnx`` and ``out_dir/step.onnx``.

    Inputs and outputs are :func:`onnx_graphs` (``ONNX_GRAPHS`` with the copy head); batch
    (``rows``), source length, cache length and ``n_ext`` (the second axis of ``ext_zeros``)
    are dynamic.

    ``dynamo=False`` (default) uses the TorchScript exporter: this module's code traces with
    symbolic shapes and exports in well under a second; ``dynamo=True`` uses the
    ``torch.export`` exporter (onnxscript; several seconds per graph).
    """
    import warnings

    import torch.export as te

    was_training = model.training
    model = model.eval().cpu()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    copy = model.copy
    graphs = onnx_graphs(copy)

    class _Enc(nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, src, src_len):
            e = self.m.encode(src, src_len)._asdict()
            return tuple(e[k] for k in graphs["encoder"]["outputs"])

    class _Step(nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, *args):
            kw = dict(zip(graphs["step"]["inputs"], args))
            return self.m.step_tensors(kw["tokens"], kw["h"], kw.get("memory"), None, kw["keys"],
                                       kw.get("copy_feats"), kw["mask"], kw.get("src_ext"), kw.get("ext_zeros"))

    # trace inputs: a cache of length 1 and n_ext = 2, so no dynamic axis is traced at size 0 or 1
    N, S, V = 2, 5, model.vocab_size
    src = torch.randint(4, V, (N, S), generator=torch.Generator().manual_seed(0))
    src_len = torch.tensor([S, 3])
    with torch.no_grad():
        e = model.encode(src, src_len)
        _, h1 = model.step(torch.tensor([2, 2]), e.h0, e, src, 2)
    src_ext = src.clone()
    src_ext[0, 1] = V + 1
    feed = {"tokens": torch.tensor([5, V if copy else 6]), "h": h1, "memory": e.memory, "keys": e.keys,
            "copy_feats": e.copy_feats, "mask": e.mask, "src_ext": src_ext, "ext_zeros": torch.zeros(N, 2)}
    enc_in, enc_out = graphs["encoder"]["inputs"], graphs["encoder"]["outputs"]
    step_in, step_out = graphs["step"]["inputs"], graphs["step"]["outputs"]
    args = tuple(feed[k] for k in step_in)
    # dynamic axes by tensor name ("batch" of the encoder = "rows" of the step)
    axes = {"src": {0: "rows", 1: "src_len"}, "src_len": {0: "rows"}, "tokens": {0: "rows"},
            "h": {0: "rows", 3: "cache_len"}, "h0": {0: "rows"}, "memory": {0: "rows", 1: "src_len"},
            "keys": {0: "rows", 3: "src_len"}, "copy_feats": {0: "rows", 1: "src_len"},
            "mask": {0: "rows", 1: "src_len"}, "src_ext": {0: "rows", 1: "src_len"},
            "ext_zeros": {0: "rows", 1: "n_ext"}, "logp": {0: "rows", 1: "vocab_ext"},
            "h_new": {0: "rows", 3: "cache_len_new"}}
    paths = {"encoder": out / "encoder.onnx", "step": out / "step.onnx"}
    # eval-mode wrappers: the exporter restores a wrapper's mode afterwards, recursively, and a
    # new (training) wrapper would leave the model with dropout on
    jobs = [(_Enc(model).eval(), (src, src_len), enc_in, enc_out, paths["encoder"]),
            (_Step(model).eval(), args, step_in, step_out, paths["step"])]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for module, inputs, names_in, names_out, path in jobs:
            if dynamo:
                dims = {n: te.Dim(n) for n in ("rows", "src_len", "cache_len", "n_ext")}
                shapes = tuple({i: dims[d] for i, d in axes[k].items()} for k in names_in)
                torch.onnx.export(module, inputs, None, input_names=names_in, output_names=names_out,
                                  dynamic_shapes=shapes if module is jobs[0][0] else (shapes,), dynamo=True,
                                  opset_version=opset, verbose=False).save(str(path))
            else:
                torch.onnx.export(module, inputs, str(path), input_names=names_in, output_names=names_out,
                                  dynamic_axes={k: axes[k] for k in names_in + names_out}, opset_version=opset,
                                  dynamo=False)
    model.train(was_training)
    return paths
