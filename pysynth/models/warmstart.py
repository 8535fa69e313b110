"""A warm-started encoder–decoder with a pointer/copy head (BERT2BERT, Rothe et al. 2020).

* Encoder: a BERT encoder (``transformers.BertModel``), pretrained when built with
  :meth:`WarmStartSeq2Seq.from_bert` (e.g. the offline MiniLM of
  :func:`pysynth.models.encoders.minilm_dir`).
* Decoder: post-LN Transformer layers whose self-attention and feed-forward blocks are copied
  from the encoder's layers (Rothe et al. 2020, Sect. 2: "BERT2BERT"; the self-attention is made
  causal), with a new, randomly initialised cross-attention block after the self-attention.
  The decoder reads the encoder's embeddings (word, position, token type 0): one wordpiece
  vocabulary shared by source, target and output projection (tied weights).
* Output: ``p(w) = g * p_vocab(w) + (1 - g) * sum_{i: src_i = w} a_i`` (pointer-generator,
  See et al. 2017, Eq. 9), ``a`` a single-head copy attention over the source tokens (special
  tokens and padding masked), ``g = sigmoid(W [h; c])`` with ``c`` the copy context. The vocabulary
  is the encoder's wordpiece one, so there is no extended vocabulary: every source token has an id.

Question generation (:func:`qg_features`): the context window (up to ``max_source_len``
wordpieces centred on the answer, not only the answer sentence) with the answer's tokens marked by
token type 1 (the pretrained segment embedding; Alberti et al. 2019, Sect. 3.2 mark it alike).

Decoding (:func:`generate`): greedy or beam search (batched over rows, per-row beams), with
the degenerate-output guards of every search: no repeated n-gram (default 3), length
normalisation ``score / len ** alpha`` and a hard length cap. The shared searches of
:mod:`pysynth.decoding` (greedy, beam, diverse beam, sampling; ``SearchConfig.no_repeat_ngram``)
run on :class:`WarmStartBackend`; the ONNX export (:mod:`pysynth.export.warmstart`) runs on
:class:`pysynth.decoding.ort_warmstart.WarmStartOrtBackend` without torch, and
:class:`pysynth.models.warmstart_qg.WarmStartQG` asks questions with either. Checkpoints:
:func:`save_checkpoint` / :func:`load_checkpoint` (model + optimizer + scheduler + step + RNG
states, one atomic file) so a training run continues across sessions.

This module imports torch; nothing in ``pysynth`` imports it eagerly (the registry names it
by string).
"""
from __future__ import annotations

import dataclasses
import math
import os
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from pysynth.decoding.ort_warmstart import prefix_guards
from pysynth.decoding.protocol import SpecialIds
from pysynth.decoding.search import ngram_bans
from pysynth.models.warmstart_qg import qg_features

__all__ = ["WarmStartConfig", "WarmStartSeq2Seq", "DecoderLayer", "qg_features", "collate", "seq2seq_loss",
           "generate", "WarmStartGenerator", "WarmStartBackend", "load_qg", "save_checkpoint", "load_checkpoint", "rng_state",
           "set_rng_state", "count_parameters"]

PathLike = Union[str, "os.PathLike[str]"]
_NEG = -1e4  # additive mask value (finite: fully masked rows stay NaN-free)


@dataclass
class WarmStartConfig:
    """A BERT encoder, a decoder warm-started from it and a copy head.

    Parameters
    ----------
    vocab_size, hidden_size, num_layers, num_heads, intermediate_size, max_positions,
    type_vocab_size, layer_norm_eps, hidden_act, dropout :
        The BERT encoder (``transformers.BertConfig`` fields).
    decoder_layers : int
        Decoder depth; layer ``i`` is warm-started from encoder layer ``i * num_layers // decoder_layers``.
    copy : bool
        Pointer-generator copy head (See et al. 2017).
    max_source_len, max_target_len : int
        Source window (wordpieces, with ``[CLS]``/``[SEP]``) and longest target (with ``[SEP]``).
    pad_id, bos_id, eos_id, unk_id : int
        Special ids of the wordpiece vocabulary (BERT uncased: ``[PAD]`` 0, ``[CLS]`` 101 as
        the decoder start, ``[SEP]`` 102 as the end, ``[UNK]`` 100).
    """

    vocab_size: int = 30522
    hidden_size: int = 384
    num_layers: int = 6
    num_heads: int = 12
    intermediate_size: int = 1536
    dropout: float = 0.1
    max_positions: int = 512
    type_vocab_size: int = 2
    layer_norm_eps: float = 1e-12
    hidden_act: str = "gelu"
    decoder_layers: int = 6
    copy: bool = True
    max_source_len: int = 256
    max_target_len: int = 40
    pad_id: int = 0
    bos_id: int = 101
    eos_id: int = 102
    unk_id: int = 100

    def __post_init__(self):
        for name in ("vocab_size", "hidden_size", "num_layers", "num_heads", "intermediate_size", "max_positions",
                     "type_vocab_size", "decoder_layers", "max_source_len", "max_target_len"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
                raise ValueError(f"{name}: must be a positive integer, got {v!r}")
        if self.hidden_size % self.num_heads:
            raise ValueError(f"num_heads: must divide hidden_size={self.hidden_size}, got {self.num_heads}")
        if not isinstance(self.dropout, (int, float)) or not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout: must be in [0, 1), got {self.dropout!r}")
        if max(self.max_source_len, self.max_target_len) > self.max_positions:
            raise ValueError(f"max_source_len={self.max_source_len} / max_target_len={self.max_target_len}: "
                             f"must not exceed max_positions={self.max_positions}")
        for name in ("pad_id", "bos_id", "eos_id", "unk_id"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v < self.vocab_size:
                raise ValueError(f"{name}: must be an id in [0, vocab_size={self.vocab_size}), got {v!r}")

    def to_dict(self) -> Dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: Dict[str, Any]) -> "WarmStartConfig":
        from pysynth.models.config import config_from_dict

        return config_from_dict(cls, d)

    def bert_config(self, vocab_size: Optional[int] = None):
        """The encoder's ``transformers.BertConfig`` (eager attention)."""
        from transformers import BertConfig

        bc = BertConfig(vocab_size=vocab_size or self.vocab_size, hidden_size=self.hidden_size,
                        num_hidden_layers=self.num_layers, num_attention_heads=self.num_heads,
                        intermediate_size=self.intermediate_size, hidden_act=self.hidden_act,
                        hidden_dropout_prob=self.dropout, attention_probs_dropout_prob=self.dropout,
                        max_position_embeddings=self.max_positions, type_vocab_size=self.type_vocab_size,
                        layer_norm_eps=self.layer_norm_eps)
        bc._attn_implementation = "eager"
        return bc


# ------------------------------------------------------------------------------ modules

class _Attention(nn.Module):
    """Multi-head attention + output projection + residual + LayerNorm (BERT's post-LN block);
    ``query``/``key``/``value``/``dense`` named as in ``BertAttention`` so weights copy over."""

    def __init__(self, c: WarmStartConfig):
        super().__init__()
        h = c.hidden_size
        self.heads = c.num_heads
        self.query, self.key, self.value, self.dense = (nn.Linear(h, h) for _ in range(4))
        self.norm = nn.LayerNorm(h, eps=c.layer_norm_eps)
        self.dropout = c.dropout

    def kv(self, mem: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        """Keys and values [B, heads, S, d] of ``mem`` (computed once per source when decoding)."""
        return self._split(self.key(mem)), self._split(self.value(mem))

    def _split(self, x: torch.Tensor) -> torch.Tensor:
        B, T, H = x.shape
        return x.view(B, T, self.heads, H // self.heads).transpose(1, 2)

    def forward(self, x, kv, bias) -> torch.Tensor:
        k, v = kv
        p = self.dropout if self.training else 0.0
        ctx = F.scaled_dot_product_attention(self._split(self.query(x)), k, v, attn_mask=bias, dropout_p=p)
        ctx = ctx.transpose(1, 2).reshape(x.shape)
        return self.norm(x + F.dropout(self.dense(ctx), p, self.training))


class DecoderLayer(nn.Module):
    """Causal self-attention, cross-attention (new), feed-forward; post-LN as in BERT."""

    def __init__(self, c: WarmStartConfig):
        super().__init__()
        from transformers.activations import ACT2FN

        self.self_attn = _Attention(c)
        self.cross_attn = _Attention(c)
        self.intermediate = nn.Linear(c.hidden_size, c.intermediate_size)
        self.output = nn.Linear(c.intermediate_size, c.hidden_size)
        self.norm = nn.LayerNorm(c.hidden_size, eps=c.layer_norm_eps)
        self.act = ACT2FN[c.hidden_act]
        self.dropout = c.dropout

    def forward(self, x, self_bias, mem_kv, mem_bias) -> torch.Tensor:
        x = self.self_attn(x, self.self_attn.kv(x), self_bias)
        x = self.cross_attn(x, mem_kv, mem_bias)
        y = self.output(self.act(self.intermediate(x)))
        return self.norm(x + F.dropout(y, self.dropout, self.training))

    @torch.no_grad()
    def copy_from_bert_layer(self, layer) -> None:
        """Self-attention and feed-forward weights from a ``transformers`` ``BertLayer``
        (Rothe et al. 2020); the cross-attention keeps its random initialisation."""
        a = layer.attention
        for dst, src in ((self.self_attn.query, a.self.query), (self.self_attn.key, a.self.key),
                         (self.self_attn.value, a.self.value), (self.self_attn.dense, a.output.dense),
                         (self.self_attn.norm, a.output.LayerNorm), (self.intermediate, layer.intermediate.dense),
                         (self.output, layer.output.dense), (self.norm, layer.output.LayerNorm)):
            dst.weight.copy_(src.weight)
            dst.bias.copy_(src.bias)


def _init_bert(module: nn.Module, std: float = 0.02) -> None:
    """BERT's initialisation (normal(0, 0.02) weights, zero biases, unit LayerNorms)."""
    for m in module.modules():
        if isinstance(m, nn.Linear):
            nn.init.normal_(m.weight, std=std)
            nn.init.zeros_(m.bias)
        elif isinstance(m, nn.LayerNorm):
            nn.init.ones_(m.weight)
            nn.init.zeros_(m.bias)


class WarmStartSeq2Seq(nn.Module):
    """BERT encoder → warm-started Transformer decoder → tied vocabulary projection + copy head.

    ``forward(src, src_mask, src_types, tgt_in)`` returns log-probabilities [B, T, V] of the next
    target token (a proper distribution: vocabulary and copy mixed, then the log).
    """

    def __init__(self, config: WarmStartConfig, vocab_size: Optional[int] = None, bert=None):
        super().__init__()
        if not isinstance(config, WarmStartConfig):
            raise TypeError(f"config: must be a WarmStartConfig, got {type(config).__name__}")
        vocab_size = config.vocab_size if vocab_size is None else vocab_size
        if vocab_size != config.vocab_size:
            raise ValueError(f"vocab_size: must equal config.vocab_size={config.vocab_size} (the wordpiece "
                             f"vocabulary is the encoder's), got {vocab_size!r}")
        from transformers import BertModel

        self.config = config
        self.vocab_size = vocab_size
        self.bert = bert if bert is not None else BertModel(config.bert_config(vocab_size), add_pooling_layer=False)
        from transformers.activations import ACT2FN

        h = config.hidden_size
        self.layers = nn.ModuleList(DecoderLayer(config) for _ in range(config.decoder_layers))
        self.transform = nn.Linear(h, h)
        self.transform_act = ACT2FN[config.hidden_act]
        self.transform_norm = nn.LayerNorm(h, eps=config.layer_norm_eps)
        self.out_bias = nn.Parameter(torch.zeros(vocab_size))
        if config.copy:
            self.copy_q = nn.Linear(h, h)
            self.copy_k = nn.Linear(h, h)
            self.gate = nn.Linear(2 * h, 1)
        _init_bert(self.layers)
        _init_bert(nn.ModuleList([self.transform, self.transform_norm] +
                                 ([self.copy_q, self.copy_k, self.gate] if config.copy else [])))
        self.warm_start()

    @torch.no_grad()
    def warm_start(self) -> None:
        """Copy the encoder's layers into the decoder (self-attention + feed-forward)."""
        enc = self.bert.encoder.layer
        for i, layer in enumerate(self.layers):
            layer.copy_from_bert_layer(enc[i * len(enc) // len(self.layers)])

    @classmethod
    def from_bert(cls, path: PathLike, **fields) -> "WarmStartSeq2Seq":
        """Encoder from a local BERT directory (``local_files_only``), decoder warm-started from
        it; ``fields`` are the other :class:`WarmStartConfig` fields. Comes in train mode."""
        from transformers import BertConfig, BertModel
        from transformers.utils import logging as hf_logging

        p = Path(path)
        if not (p / "config.json").is_file():
            raise ValueError(f"path: {str(p)!r} is not a BERT model directory (no config.json)")
        bc = BertConfig.from_pretrained(str(p), local_files_only=True)
        config = WarmStartConfig(vocab_size=bc.vocab_size, hidden_size=bc.hidden_size,
                                 num_layers=bc.num_hidden_layers, num_heads=bc.num_attention_heads,
                                 intermediate_size=bc.intermediate_size, dropout=float(bc.hidden_dropout_prob),
                                 max_positions=bc.max_position_embeddings, type_vocab_size=bc.type_vocab_size,
                                 layer_norm_eps=float(bc.layer_norm_eps), hidden_act=bc.hidden_act, **fields)
        level = hf_logging.get_verbosity()
        hf_logging.set_verbosity_error()  # its load report lists the pooler we drop on purpose
        try:
            bert = BertModel.from_pretrained(str(p), local_files_only=True, add_pooling_layer=False,
                                             attn_implementation="eager")
        finally:
            hf_logging.set_verbosity(level)
        return cls(config, bc.vocab_size, bert=bert)

    # -------------------------------------------------------------- encoder / decoder

    def _embed(self, ids, types) -> torch.Tensor:
        pos = torch.arange(ids.shape[1], device=ids.device).unsqueeze(0)
        return self.bert.embeddings(input_ids=ids, token_type_ids=types, position_ids=pos)

    def encode(self, src, src_mask, src_types=None) -> torch.Tensor:
        """Encoder states [B, S, H]."""
        if src_types is None:
            src_types = torch.zeros_like(src)
        bias = (1.0 - src_mask[:, None, None, :].float()) * _NEG
        return self.bert.encoder(self._embed(src, src_types), attention_mask=bias).last_hidden_state

    def memory_kv(self, memory) -> List[Tuple[torch.Tensor, torch.Tensor]]:
        """Each decoder layer's cross-attention keys / values of ``memory`` (decoding reuses them)."""
        return [layer.cross_attn.kv(memory) for layer in self.layers]

    def decode(self, tgt_in, memory, src, src_mask, mem_kv=None, last_only: bool = False,
               copy_keys=None) -> torch.Tensor:
        """Log-probabilities [B, T, V] (or [B, V] with ``last_only``) of the next token after
        each prefix of ``tgt_in`` [B, T]; ``mem_kv`` (:meth:`memory_kv`) and ``copy_keys``
        (``copy_k(memory)``) may come precomputed."""
        T = tgt_in.shape[1]
        x = self._embed(tgt_in, torch.zeros_like(tgt_in))
        causal = torch.full((T, T), _NEG, device=x.device).triu(1)[None, None]
        mem_bias = (1.0 - src_mask[:, None, None, :].float()) * _NEG
        mem_kv = self.memory_kv(memory) if mem_kv is None else mem_kv
        for layer, kv in zip(self.layers, mem_kv):
            x = layer(x, causal, kv, mem_bias)
        if last_only:
            x = x[:, -1:]
        h = self.transform_norm(self.transform_act(self.transform(x)))
        logits = h @ self.bert.embeddings.word_embeddings.weight.T + self.out_bias
        if not self.config.copy:
            out = F.log_softmax(logits, -1)
        else:
            out = self._mix_copy(x, logits, memory, src, src_mask, copy_keys)
        return out[:, 0] if last_only else out

    def _mix_copy(self, x, logits, memory, src, src_mask, copy_keys=None) -> torch.Tensor:
        c = self.config
        ok = src_mask.bool() & (src != c.bos_id) & (src != c.eos_id) & (src != c.pad_id)
        keys = self.copy_k(memory) if copy_keys is None else copy_keys
        scores = self.copy_q(x) @ keys.transpose(1, 2) / math.sqrt(x.shape[-1])
        attn = torch.softmax(scores.masked_fill(~ok[:, None, :], _NEG), -1)  # [B, T, S]
        ctx = attn @ memory
        g = torch.sigmoid(self.gate(torch.cat([x, ctx], -1)))  # [B, T, 1]
        p = g * torch.softmax(logits, -1)
        p = p.scatter_add(2, src[:, None, :].expand(-1, x.shape[1], -1), (1.0 - g) * attn)
        return torch.log(p.clamp_min(1e-12))

    def forward(self, src, src_mask, src_types, tgt_in) -> torch.Tensor:
        memory = self.encode(src, src_mask, src_types)
        return self.decode(tgt_in, memory, src, src_mask)


def seq2seq_loss(logp: torch.Tensor, labels: torch.Tensor, pad_id: int = 0, smoothing: float = 0.0) -> torch.Tensor:
    """Mean token NLL of ``labels`` [B, T] under ``logp`` [B, T, V] (``pad_id`` ignored), with
    optional label smoothing (uniform over the vocabulary)."""
    keep = labels != pad_id
    nll = -logp.gather(-1, labels.unsqueeze(-1)).squeeze(-1)
    if smoothing:
        nll = (1.0 - smoothing) * nll - smoothing * logp.mean(-1)
    return (nll * keep).sum() / keep.sum().clamp_min(1)


def count_parameters(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


# ------------------------------------------------------------------------------ features

def collate(rows: Sequence[Dict[str, List[int]]], pad_id: int = 0, bos_id: int = 101) -> Dict[str, torch.Tensor]:
    """Padded tensors of :func:`qg_features` rows: ``src``, ``src_mask``, ``src_types`` and,
    when the rows have targets, ``tgt_in`` (``[CLS]`` + target[:-1]) and ``labels``."""
    S = max(len(r["src"]) for r in rows)
    src = torch.full((len(rows), S), pad_id, dtype=torch.long)
    types = torch.zeros((len(rows), S), dtype=torch.long)
    for i, r in enumerate(rows):
        src[i, :len(r["src"])] = torch.tensor(r["src"])
        types[i, :len(r["types"])] = torch.tensor(r["types"])
    out = {"src": src, "src_mask": (src != pad_id).long(), "src_types": types}
    if "tgt" in rows[0]:
        T = max(len(r["tgt"]) for r in rows)
        labels = torch.full((len(rows), T), pad_id, dtype=torch.long)
        tgt_in = torch.full((len(rows), T), pad_id, dtype=torch.long)
        for i, r in enumerate(rows):
            t = r["tgt"]
            labels[i, :len(t)] = torch.tensor(t)
            tgt_in[i, :len(t)] = torch.tensor([bos_id] + t[:-1])
        out.update(tgt_in=tgt_in, labels=labels)
    return out


# ------------------------------------------------------------------------------ decoding

def _banned(prefix: Sequence[int], n: int) -> List[int]:
    """Tokens that would repeat an n-gram of ``prefix`` (the shared searches' guard)."""
    return ngram_bans(prefix, n)


def _ban(logp: torch.Tensor, prefixes: Sequence[Sequence[int]], n: int, never: Sequence[int], step: int,
         min_len: int, eos: int, no_stutter: bool = True) -> torch.Tensor:
    logp[:, list(never)] = -math.inf
    if step < min_len:
        logp[:, eos] = -math.inf
    for r, pre in enumerate(prefixes):
        b = _banned(pre, n) + (pre[-1:] if no_stutter else [])
        if b:
            logp[r, b] = -math.inf
    return logp


@torch.no_grad()
def _greedy(model, memory, kv, src, mask, max_len, no_repeat, min_len, no_stutter) -> List[List[int]]:
    c = model.config
    B = src.shape[0]
    seqs = [[] for _ in range(B)]
    alive = list(range(B))
    tokens = torch.full((B, 1), c.bos_id, dtype=torch.long)
    never = (c.pad_id, c.bos_id, c.unk_id)
    for step in range(max_len):
        idx = torch.tensor(alive)
        logp = model.decode(tokens, memory[idx], src[idx], mask[idx], [(k[idx], v[idx]) for k, v in kv],
                            last_only=True)
        logp = _ban(logp, [seqs[r] for r in alive], no_repeat, never, step, min_len, c.eos_id, no_stutter)
        nxt = logp.argmax(-1).tolist()
        keep = []
        for j, (r, t) in enumerate(zip(alive, nxt)):
            if t != c.eos_id:
                seqs[r].append(t)
                keep.append(j)
        if not keep:
            break
        alive = [alive[j] for j in keep]
        tokens = torch.cat([tokens[keep], torch.tensor([[nxt[j]] for j in keep])], 1)
    return seqs


@torch.no_grad()
def _beam_one(model, memory, kv, src, mask, beam, max_len, no_repeat, min_len, alpha, no_stutter) -> List[int]:
    """Beam search for one source (memory [1, S, H]); finished hypotheses ranked by
    ``logprob / len ** alpha`` (len counts the end token)."""
    c = model.config
    never = (c.pad_id, c.bos_id, c.unk_id)
    beams: List[Tuple[float, List[int]]] = [(0.0, [])]
    done: List[Tuple[float, List[int]]] = []
    for step in range(max_len):
        K = len(beams)
        tokens = torch.tensor([[c.bos_id] + s for _, s in beams])
        logp = model.decode(tokens, memory.expand(K, -1, -1), src.expand(K, -1), mask.expand(K, -1),
                            [(k.expand(K, -1, -1, -1), v.expand(K, -1, -1, -1)) for k, v in kv], last_only=True)
        logp = _ban(logp, [s for _, s in beams], no_repeat, never, step, min_len, c.eos_id, no_stutter)
        total = logp + torch.tensor([sc for sc, _ in beams])[:, None]
        vals, flat = total.view(-1).topk(min(2 * beam, total.numel()))
        nxt: List[Tuple[float, List[int]]] = []
        for v, f in zip(vals.tolist(), flat.tolist()):
            if v == -math.inf:
                break
            b, t = divmod(f, total.shape[1])
            if t == c.eos_id:
                done.append((v / (len(beams[b][1]) + 1) ** alpha, beams[b][1]))
            else:
                nxt.append((v, beams[b][1] + [t]))
            if len(nxt) == beam:
                break
        # stop once ``beam`` hypotheses have ended (Hugging Face's early_stopping=True)
        if not nxt or len(done) >= beam:
            break
        beams = nxt
    else:
        done.extend((v / (len(s) + 1) ** alpha, s) for v, s in beams)
    if not done:
        done = [(v, s) for v, s in beams]
    return max(done, key=lambda d: d[0])[1]


@torch.no_grad()
def generate(model: WarmStartSeq2Seq, batch: Dict[str, torch.Tensor], beam: int = 1, max_len: int = 32,
             no_repeat_ngram: int = 3, min_len: int = 2, alpha: float = 1.0,
             no_stutter: bool = True) -> List[List[int]]:
    """Token ids (no ``[CLS]``/``[SEP]``) of one question per row of ``batch`` (:func:`collate`).

    Parameters
    ----------
    beam : int
        1: greedy search; > 1: beam search with that many beams per row.
    max_len : int
        Most generated tokens (the end token excluded).
    no_repeat_ngram : int
        No n-gram occurs twice in an output (0: off).
    min_len : int
        The end token is banned before this many tokens.
    alpha : float
        Length normalisation of finished beams, ``logprob / len ** alpha``.
    no_stutter : bool
        A token never directly follows itself ("ducks ducks", "##ey ##ey": copy loops that
        no n-gram guard catches before they are long).
    """
    if beam < 1 or max_len < 1:
        raise ValueError(f"beam and max_len: must be >= 1, got beam={beam}, max_len={max_len}")
    was = model.training
    model.eval()
    try:
        src, mask = batch["src"], batch["src_mask"]
        memory = model.encode(src, mask, batch.get("src_types"))
        kv = model.memory_kv(memory)
        if beam == 1:
            return _greedy(model, memory, kv, src, mask, max_len, no_repeat_ngram, min_len, no_stutter)
        return [_beam_one(model, memory[i:i + 1], [(k[i:i + 1], v[i:i + 1]) for k, v in kv], src[i:i + 1],
                          mask[i:i + 1], beam, max_len, no_repeat_ngram, min_len, alpha, no_stutter)
                for i in range(src.shape[0])]
    finally:
        model.train(was)


class WarmStartGenerator:
    """Questions from (context, answer span) pairs: ``generate(contexts, spans)`` with spans
    ``{"start", "end"}`` (character offsets), the call of :func:`pysynth.qagen.evaluate.qg_scores`."""

    def __init__(self, model: WarmStartSeq2Seq, tokenizer, beam: int = 1, batch_size: int = 16,
                 max_len: int = 32, no_repeat_ngram: int = 3, alpha: float = 1.0):
        self.model, self.tokenizer = model.eval(), tokenizer
        self.beam, self.batch_size, self.max_len = beam, batch_size, max_len
        self.no_repeat_ngram, self.alpha = no_repeat_ngram, alpha

    def generate(self, contexts: Sequence[str], spans: Sequence[Dict[str, int]]) -> List[str]:
        c = self.model.config
        out: List[str] = []
        for i in range(0, len(contexts), self.batch_size):
            rows = [qg_features(self.tokenizer, t, s["start"], s["end"], c.max_source_len)
                    for t, s in zip(contexts[i:i + self.batch_size], spans[i:i + self.batch_size])]
            ids = generate(self.model, collate(rows, c.pad_id, c.bos_id), beam=self.beam, max_len=self.max_len,
                           no_repeat_ngram=self.no_repeat_ngram, alpha=self.alpha)
            out.extend(self.tokenizer.decode(q, skip_special_tokens=True).strip() for q in ids)
        return out


class WarmStartBackend:
    """A :class:`~pysynth.decoding.protocol.DecodingBackend` over a :class:`WarmStartSeq2Seq`: the
    shared searches (:func:`pysynth.decoding.run_search`: greedy, beam, diverse beam, sampling)
    decode it.

    The encoder runs once per source (``batch.types`` marks the answer; None: all type 0) with
    every layer's cross-attention keys / values; the decoder state is the prefix (``<s>`` and
    the tokens so far), re-decoded each step as :func:`generate` does. Besides the searches'
    rules (``no_repeat_ngram`` ...), the model's guards :func:`pysynth.decoding.ort_warmstart.prefix_guards`
    apply: no end before ``min_len`` tokens, no token directly after itself (``no_stutter``);
    the defaults are :func:`generate`'s, so greedy search with ``no_repeat_ngram=3`` returns the
    ids of ``generate(beam=1)``.

    Examples
    --------
    >>> from pysynth.decoding import SearchConfig, run_search             # doctest: +SKIP
    >>> be = WarmStartBackend(model)                                       # doctest: +SKIP
    >>> hyps = run_search(be, batch, SearchConfig(decode="beam", beam=4, no_repeat_ngram=3), 32)  # doctest: +SKIP
    """

    name = "torch"
    copy = False  # one wordpiece vocabulary: no extended ids

    def __init__(self, model: WarmStartSeq2Seq, min_len: int = 2, no_stutter: bool = True):
        if not isinstance(model, WarmStartSeq2Seq):
            raise TypeError(f"model: must be a WarmStartSeq2Seq, got {type(model).__name__}")
        if isinstance(min_len, bool) or not isinstance(min_len, int) or min_len < 0:
            raise ValueError(f"min_len: must be an integer >= 0, got {min_len!r}")
        c = model.config
        self.model = model.eval()
        self.vocab_size = c.vocab_size
        self.specials = SpecialIds(c.pad_id, c.unk_id, c.bos_id, c.eos_id)
        self.min_len, self.no_stutter = min_len, bool(no_stutter)
        self.device = next(model.parameters()).device

    def _t(self, a) -> torch.Tensor:
        return torch.from_numpy(np.ascontiguousarray(a, dtype=np.int64)).to(self.device)

    def encode(self, batch):
        src = self._t(batch.src)
        mask = (torch.arange(src.shape[1], device=self.device)[None, :] < self._t(batch.src_len)[:, None]).long()
        types = None if batch.types is None else self._t(batch.types)
        with torch.inference_mode():
            memory = self.model.encode(src, mask, types)
            kv = self.model.memory_kv(memory)
            ck = self.model.copy_k(memory) if self.model.config.copy else None
        return (memory, kv, ck, src, mask), np.zeros((src.shape[0], 0), dtype=np.int64)

    def take(self, state, rows):
        r = self._t(rows)
        memory, kv, ck, src, mask = state
        return (memory.index_select(0, r), [(k.index_select(0, r), v.index_select(0, r)) for k, v in kv],
                None if ck is None else ck.index_select(0, r), src.index_select(0, r), mask.index_select(0, r))

    def take_h(self, h, rows):
        return h[np.asarray(rows, dtype=np.int64)]

    def step(self, state, tokens, h):
        """Float32 log-probabilities [rows, V] of the next token after ``h`` + ``tokens``, and
        the new prefix (numpy)."""
        memory, kv, ck, src, mask = state
        prefix = np.concatenate([h, np.asarray(tokens, dtype=np.int64)[:, None]], 1)
        with torch.inference_mode():
            logp = self.model.decode(self._t(prefix), memory, src, mask, kv, last_only=True, copy_keys=ck)
        logp = logp.float().cpu().numpy()
        return prefix_guards(logp, prefix, self.specials.eos, self.min_len, self.no_stutter), prefix


def load_qg(path: PathLike, vocab_file: Optional[PathLike] = None, max_len: int = 32, **guards):
    """A :class:`pysynth.models.warmstart_qg.WarmStartQG` on torch from a training checkpoint
    (:func:`save_checkpoint`; read only). ``vocab_file``: the encoder's ``vocab.txt`` (default the
    MiniLM's); ``guards``: ``min_len`` / ``no_stutter`` of :class:`WarmStartBackend`."""
    from pysynth.models.spans import wordpiece_tokenizer
    from pysynth.models.warmstart_qg import WarmStartQG

    if vocab_file is None:
        from pysynth.models.encoders import require_minilm

        vocab_file = require_minilm() / "vocab.txt"
    model, _ = load_checkpoint(path, restore_rng=False)
    return WarmStartQG(WarmStartBackend(model, **guards), wordpiece_tokenizer(vocab_file), model.config.max_source_len,
                       max_len, str(path))


# ------------------------------------------------------------------------------ checkpoints

def rng_state() -> Dict[str, Any]:
    """Python, numpy and torch RNG states (what a resumed run restores), as tensors and plain
    containers so that the checkpoint loads with ``torch.load(weights_only=True)``."""
    kind, keys, pos, has_gauss, gauss = np.random.get_state()
    return {"python": random.getstate(), "torch": torch.get_rng_state(),
            "numpy": [kind, torch.from_numpy(np.asarray(keys, dtype=np.int64)), int(pos), int(has_gauss), float(gauss)]}


def set_rng_state(state: Dict[str, Any]) -> None:
    random.setstate(state["python"])
    kind, keys, pos, has_gauss, gauss = state["numpy"]
    np.random.set_state((kind, np.asarray(keys, dtype=np.int64).astype(np.uint32), pos, has_gauss, gauss))
    torch.set_rng_state(state["torch"])


def save_checkpoint(path: PathLike, model: WarmStartSeq2Seq, optimizer=None, scheduler=None, step: int = 0,
                    extra: Optional[Dict[str, Any]] = None) -> Path:
    """Model + optimizer + scheduler + step + RNG states in one file, written atomically
    (a temporary file beside ``path``, fsync, rename): a crash leaves the old checkpoint whole."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    state = {"config": model.config.to_dict(), "model": model.state_dict(), "step": int(step),
             "optimizer": optimizer.state_dict() if optimizer is not None else None,
             "scheduler": scheduler.state_dict() if scheduler is not None else None,
             "rng": rng_state(), "extra": extra or {}}
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    with open(tmp, "wb") as f:
        torch.save(state, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    return path


def load_checkpoint(path: PathLike, model: Optional[WarmStartSeq2Seq] = None, optimizer=None, scheduler=None,
                    restore_rng: bool = True) -> Tuple[WarmStartSeq2Seq, Dict[str, Any]]:
    """``(model, state)`` from :func:`save_checkpoint`'s file: the weights go into ``model``
    (built from the stored config when None), the optimizer / scheduler states into those
    given, and the RNG states are restored (``restore_rng``)."""
    state = torch.load(Path(path), map_location="cpu", weights_only=True)
    if model is None:
        model = WarmStartSeq2Seq(WarmStartConfig.from_dict(state["config"]))
    model.load_state_dict(state["model"])
    if optimizer is not None and state.get("optimizer") is not None:
        optimizer.load_state_dict(state["optimizer"])
    if scheduler is not None and state.get("scheduler") is not None:
        scheduler.load_state_dict(state["scheduler"])
    if restore_rng:
        set_rng_state(state["rng"])
    return model, state
