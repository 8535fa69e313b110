"""Local Hugging Face model directories behind pysynth's numpy interfaces.

Every loader reads a local directory with ``local_files_only=True``: nothing is downloaded, and
a missing file is a ValueError naming the directory, not a network call.

* :class:`HFSpanModel`: ``AutoModelForQuestionAnswering`` -> ``span_scores`` like
  :meth:`pysynth.models.encoders.SpanEncoder.span_scores` (start / end logits, a SQuAD 2.0
  no-answer score ``start[CLS] + end[CLS]``; no joint head), so
  :func:`pysynth.models.encoders.predict_spans` runs on either.
* :class:`HFEmbedder`: ``AutoModel`` -> ``encode_texts`` like
  :meth:`pysynth.models.encoders.BiEncoder.encode_texts` (mean pooling, L2 normalisation).
* :func:`load_seq2seq`: ``(AutoModelForSeq2SeqLM, tokenizer)``, in eval mode; decoding with it
  is the Hugging Face step backend's job (``pysynth.decoding``).

:func:`load` picks one of them by ``task``.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Dict, Optional, Sequence, Union

import numpy as np

__all__ = ["HFSpanModel", "HFEmbedder", "load_seq2seq", "load", "is_hf_dir", "TASKS"]

PathLike = Union[str, "os.PathLike[str]"]
TASKS = ("qa", "embed", "seq2seq")


def is_hf_dir(path: PathLike) -> bool:
    """True when ``path`` is a directory with a Hugging Face ``config.json`` (has ``model_type``)."""
    cfg = Path(path) / "config.json"
    try:
        doc = json.loads(cfg.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(doc, dict) and "model_type" in doc


def _check_dir(path: PathLike, what: str = "path") -> Path:
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"{what}: must be a directory path, got {type(path).__name__}")
    p = Path(path)
    if not p.is_dir():
        raise ValueError(f"{what}: {str(p)!r} is not a directory (models are never downloaded: pass a local "
                         "Hugging Face model directory)")
    if not is_hf_dir(p):
        raise ValueError(f"{what}: {str(p)!r} is not a Hugging Face model directory (no config.json with a "
                         "model_type)")
    return p


def _tokenizer(p: Path, tokenizer):
    if tokenizer is not None:
        return tokenizer
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(p), local_files_only=True)


def _device_of(model):
    return next(model.parameters()).device


class HFSpanModel:
    """An ``AutoModelForQuestionAnswering`` from a local directory, with numpy span scores.

    Parameters
    ----------
    path : local model directory (``config.json`` + weights, and a tokenizer unless given).
    tokenizer : optional tokenizer (default: the directory's, loaded locally).
    device : optional torch device.
    """

    def __init__(self, path: PathLike, tokenizer=None, device: Optional[str] = None):
        from transformers import AutoModelForQuestionAnswering

        p = _check_dir(path)
        self.path = p
        self.model = AutoModelForQuestionAnswering.from_pretrained(str(p), local_files_only=True).eval()
        if device:
            self.model.to(device)
        self.tokenizer = _tokenizer(p, tokenizer)

    def span_scores(self, input_ids, attention_mask, token_type_ids=None) -> Dict[str, np.ndarray]:
        """``{"start_logits", "end_logits", "null_score", "joint"}`` float32 numpy arrays; padding
        positions get ``MASK_NEG``, ``joint`` is empty [B, T, 0] (no joint head)."""
        import torch

        from pysynth.models.encoders import MASK_NEG

        dev = _device_of(self.model)
        t = lambda a: torch.as_tensor(np.asarray(a, dtype=np.int64), device=dev)  # noqa: E731
        kw = {"input_ids": t(input_ids), "attention_mask": t(attention_mask)}
        if token_type_ids is not None and getattr(self.model.config, "type_vocab_size", 0):
            kw["token_type_ids"] = t(token_type_ids)
        with torch.inference_mode():
            out = self.model(**kw)
        pad = kw["attention_mask"] == 0
        s = out.start_logits.float().masked_fill(pad, MASK_NEG)
        e = out.end_logits.float().masked_fill(pad, MASK_NEG)
        null = s[:, 0] + e[:, 0]
        B, T = s.shape
        return {"start_logits": s.cpu().numpy(), "end_logits": e.cpu().numpy(), "null_score": null.cpu().numpy(),
                "joint": np.zeros((B, T, 0), dtype=np.float32)}

    def predict(self, contexts: Sequence[str], questions: Optional[Sequence[str]] = None, **kw):
        """:func:`pysynth.models.encoders.predict_spans` with this model and its tokenizer."""
        from pysynth.models.encoders import predict_spans

        return predict_spans(self, self.tokenizer, contexts, questions, **kw)


class HFEmbedder:
    """An ``AutoModel`` encoder from a local directory as a bi-encoder: mean pooling over real
    tokens, then L2 normalisation (``normalize=True``), as sentence-transformers models do."""

    def __init__(self, path: PathLike, tokenizer=None, device: Optional[str] = None, normalize: bool = True):
        from transformers import AutoModel

        p = _check_dir(path)
        self.path = p
        self.model = AutoModel.from_pretrained(str(p), local_files_only=True).eval()
        if device:
            self.model.to(device)
        self.tokenizer = _tokenizer(p, tokenizer)
        self.normalize = bool(normalize)
        self.dim = int(self.model.config.hidden_size)

    def __call__(self, input_ids, attention_mask, token_type_ids=None):
        from pysynth.models.encoders import mean_pool

        kw = {"input_ids": input_ids, "attention_mask": attention_mask}
        if token_type_ids is not None and getattr(self.model.config, "type_vocab_size", 0):
            kw["token_type_ids"] = token_type_ids
        x = mean_pool(self.model(**kw).last_hidden_state, attention_mask)
        return x / x.norm(dim=-1, keepdim=True).clamp_min(1e-12) if self.normalize else x

    # the interface _encode_texts expects of a torch module
    def eval(self):
        self.model.eval()
        return self

    def parameters(self):
        return self.model.parameters()

    def encode_texts(self, texts: Sequence[str], batch_size: int = 32, max_length: int = 128) -> np.ndarray:
        """Embeddings [len(texts), hidden] float32."""
        import torch

        from pysynth.models.encoders import _encode_texts

        with torch.inference_mode():
            return _encode_texts(self, texts, self.tokenizer, batch_size, max_length, self.dim)


def load_seq2seq(path: PathLike, device: Optional[str] = None, tokenizer=None):
    """``(AutoModelForSeq2SeqLM, tokenizer)`` from a local directory, the model in eval mode."""
    from transformers import AutoModelForSeq2SeqLM

    p = _check_dir(path)
    model = AutoModelForSeq2SeqLM.from_pretrained(str(p), local_files_only=True).eval()
    if device:
        model.to(device)
    return model, _tokenizer(p, tokenizer)


def load(path: PathLike, task: str, **kw):
    """Load a local Hugging Face directory for ``task``: ``"qa"`` -> :class:`HFSpanModel`,
    ``"embed"`` -> :class:`HFEmbedder`, ``"seq2seq"`` -> :func:`load_seq2seq`'s pair."""
    if task == "qa":
        return HFSpanModel(path, **kw)
    if task == "embed":
        return HFEmbedder(path, **kw)
    if task == "seq2seq":
        return load_seq2seq(path, **kw)
    raise ValueError(f"task: must be one of {TASKS}, got {task!r}")
