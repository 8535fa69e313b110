"""Index a forum's questions and find duplicates: dense (faiss), sparse (BM25) or hybrid.

Rücklé et al. (2019) rank a forum's questions for a new one by the cosine of their embeddings;
:func:`build` writes a folder with the questions, their embeddings in a
:class:`pysynth.retrieval.dense.DenseIndex` (normalised, inner product = cosine) and a BM25
:class:`pysynth.retrieval.collection.Collection` over the same rows; :func:`search` answers
queries from it. ``hybrid=True`` fuses the two rankings: over the union of each one's top
``pool`` candidates, ``alpha * dense + (1 - alpha) * bm25`` with each score min-max scaled per
query (a candidate missing from one list gets that list's minimum); ties: doc number ascending.

Folder layout: ``docs/`` (a store: the rows' ids and texts, the encoder's name), ``dense/``
(:meth:`DenseIndex.save`), ``sparse/`` (:meth:`Collection.save`), written atomically.

Encoders (``model``): ``minilm`` (the offline MiniLM on torch), a trained detector (a shipped name
such as ``dup-minilm-wstb`` or a folder of ``pysynth dup train``: :class:`Encoder`, onnxruntime and
the pure-Python WordPiece tokenizer, no torch), or a local Hugging Face encoder folder.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Union

import numpy as np

from pysynth.models.embed import OnnxEncoder

__all__ = ["build", "search", "DupIndex", "FORMAT", "Encoder", "encoder", "embedder", "DEFAULT_DETECTOR"]

PathLike = Union[str, "os.PathLike[str]"]
FORMAT, FORMAT_VERSION = "pysynth.dup.Index", 1
#: the shipped duplicate detector (:mod:`pysynth.models.assets`)
DEFAULT_DETECTOR = "dup-minilm-wstb"
#: store format of a trained detector (:func:`pysynth.dup.train.save`)
DETECTOR_FORMAT, DETECTOR_FORMAT_VERSION = "pysynth.dup.encoder", 1


class Encoder(OnnxEncoder):
    """A trained duplicate detector's encoder on onnxruntime (no torch):
    :class:`pysynth.models.embed.OnnxEncoder` over a detector store.

    Parameters
    ----------
    model : a shipped detector's name (default :data:`DEFAULT_DETECTOR`) or a folder written by
        ``pysynth dup train`` / :func:`pysynth.dup.train.save`.
    threads : onnxruntime intra-op threads (0: its default).
    device : ``cpu``, ``cuda`` or ``auto`` (:func:`pysynth.decoding.ort.choose_providers`).

    :meth:`encode` gives float32 unit vectors (cosine = dot product); a text's vector does not
    depend on the other texts of its batch (float32 arithmetic, padding masked).
    """

    def __init__(self, model: Optional[PathLike] = None, threads: int = 0, device: str = "cpu"):
        from pysynth.models.registry import resolve

        r = resolve(model, default=DEFAULT_DETECTOR, what="model")
        super().__init__(r.path, threads, device, store_format=(DETECTOR_FORMAT, DETECTOR_FORMAT_VERSION))
        self.name = r.name or str(r.path)


def encoder(model: Optional[PathLike] = None, threads: int = 0) -> Encoder:
    """A cached :class:`Encoder` (one per model and thread setting):
    ``pysynth.dup.encoder(model).encode(texts)`` -> float32 unit vectors."""
    from pysynth.models.registry import cached

    return cached(Encoder, model, threads)


def is_detector(model: Any) -> bool:
    """True when ``model`` names a trained detector (a shipped name or a detector folder)."""
    from pysynth import store
    from pysynth.models.registry import models, resolve

    if not isinstance(model, (str, os.PathLike)):
        return False
    if isinstance(model, str) and model in models():
        return store.format_of(resolve(model).path) == DETECTOR_FORMAT
    return store.format_of(model) == DETECTOR_FORMAT or store.format_of(Path(model) / "model") == DETECTOR_FORMAT


def embedder(model: Any):
    """What :func:`pysynth.models.embed.encode_texts` takes for a ``model`` name: None for
    ``minilm``, an :class:`Encoder` for a trained detector, else ``model`` (a Hugging Face folder
    or an object with ``encode_texts``)."""
    if isinstance(model, str) and model == "minilm":
        return None
    if is_detector(model):
        return encoder(model)
    return model


def build(rows: Iterable[Mapping], out: PathLike, model: str = DEFAULT_DETECTOR, kind: str = "flat",
          text_field: str = "question", batch_size: int = 64, workers: int = 1) -> Dict[str, Any]:
    """Index ``rows`` (``{"id"?, text_field: str}``; id defaults to the row number) into ``out``.

    ``model``: a trained detector (name or folder; default the shipped ``dup-minilm-wstb``, run on
    onnxruntime), ``minilm`` (the offline MiniLM, on torch) or a local Hugging Face encoder folder; ``kind``:
    the faiss index (``flat`` exact, ``hnsw``, ``ivf``). Returns ``{"docs", "dim", "kind", "model"}``.
    """
    from pysynth import io, store
    from pysynth.models.embed import encode_texts
    from pysynth.retrieval.collection import Collection
    from pysynth.retrieval.dense import DenseIndex

    docs: List[Dict[str, Any]] = []
    for n, r in enumerate(rows):
        t = r.get(text_field) if isinstance(r, Mapping) else None
        if not isinstance(t, str) or not t.strip():
            raise ValueError(f"rows: row {n + 1} has no non-empty {text_field!r} string")
        docs.append({"id": r.get("id", n), "text": t})
    if not docs:
        raise ValueError(f"rows: no rows; give JSONL/Parquet rows with a {text_field!r} field")
    emb = encode_texts([d["text"] for d in docs], embedder(model), batch_size=batch_size)
    with io.atomic_dir(out) as tmp:
        store.save(tmp / "docs", FORMAT, FORMAT_VERSION,
                   files={"docs.jsonl": "".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs).encode()},
                   meta={"model": str(model), "kind": kind, "docs": len(docs), "dim": int(emb.shape[1])})
        DenseIndex.build(emb, kind=kind, metric="ip", normalize=True, workers=workers).save(tmp / "dense")
        Collection.from_rows([{"id": i, "text": d["text"]} for i, d in enumerate(docs)]).save(tmp / "sparse")
    return {"docs": len(docs), "dim": int(emb.shape[1]), "kind": kind, "model": str(model)}


def _scaled(scores: np.ndarray) -> np.ndarray:
    lo, hi = float(scores.min()), float(scores.max())
    return np.zeros_like(scores) if hi <= lo else (scores - lo) / (hi - lo)


class DupIndex:
    """A folder written by :func:`build`, loaded once and searched many times (the server keeps
    one; :func:`search` loads one per call).

    ``docs``: the indexed rows (``{"id", "text"}``); ``dense``: the
    :class:`~pysynth.retrieval.dense.DenseIndex`; ``model``: the encoder name it was built with.
    The BM25 collection (``sparse/``) is loaded on first use (hybrid search, BM25/SDM).
    """

    def __init__(self, path: PathLike):
        from pysynth import store
        from pysynth.retrieval.dense import DenseIndex

        self.path = Path(path)
        st = store.load(self.path / "docs", FORMAT, (FORMAT_VERSION,))
        self.docs = [json.loads(line) for line in st.read("docs.jsonl").decode("utf-8").splitlines()]
        self.model = st.meta["model"]
        self.dense = DenseIndex.load(self.path / "dense")
        self._sparse = None

    @classmethod
    def load(cls, path: PathLike) -> "DupIndex":
        return cls(path)

    @property
    def sparse(self):
        """The BM25/SDM :class:`~pysynth.retrieval.collection.Collection` over the same rows."""
        if self._sparse is None:
            from pysynth.retrieval.collection import Collection

            self._sparse = Collection.load(self.path / "sparse")
        return self._sparse

    def ranked(self, queries: Sequence[str], k: int = 10, hybrid: bool = False, alpha: float = 0.5,
               pool: int = 100, workers: int = 1) -> List[List[tuple]]:
        """Per query, the top ``k`` as ``(doc number, score)`` pairs, best first (dense cosine, or
        the hybrid fusion of the module doc); ties: doc number ascending."""
        from pysynth.models.embed import encode_texts

        if isinstance(queries, str):
            raise TypeError("queries: must be a sequence of strings (wrap a single query in a list)")
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ValueError(f"k: must be a positive integer, got {k!r}")
        if not 0.0 <= float(alpha) <= 1.0:
            raise ValueError(f"alpha: must be in [0, 1], got {alpha!r}")
        queries = list(queries)
        n_docs = len(self.docs)
        q = encode_texts(queries, embedder(self.model))
        depth = max(k, pool) if hybrid else k
        dh = self.dense.search(q, k=min(depth, n_docs), workers=workers, dtype=np.float64)
        if hybrid:
            sh = self.sparse.search_docs(queries, model="bm25", k=min(depth, n_docs), workers=workers)
        out = []
        for i in range(len(queries)):
            n = int(dh.counts[i])
            cand = {int(doc): float(s) for doc, s in zip(dh.docs[i, :n], dh.scores[i, :n])}
            if hybrid:
                m = int(sh.counts[i])
                sparse = {int(doc): float(s) for doc, s in zip(sh.docs[i, :m], sh.scores[i, :m])}
                ids = sorted(set(cand) | set(sparse))
                dv = np.array([cand.get(j, min(cand.values(), default=0.0)) for j in ids])
                sv = np.array([sparse.get(j, min(sparse.values(), default=0.0)) for j in ids])
                fused = alpha * _scaled(dv) + (1 - alpha) * _scaled(sv) if ids else np.zeros(0)
                cand = dict(zip(ids, fused.tolist()))
            out.append(sorted(cand.items(), key=lambda kv: (-kv[1], kv[0]))[:k])
        return out

    def search(self, queries: Sequence[str], k: int = 10, hybrid: bool = False, alpha: float = 0.5,
               pool: int = 100, workers: int = 1) -> List[Dict[str, Any]]:
        """:func:`search` on this loaded index."""
        ranked = self.ranked(queries, k=k, hybrid=hybrid, alpha=alpha, pool=pool, workers=workers)
        return [{"query": text, "results": [{"id": self.docs[j]["id"], "question": self.docs[j]["text"],
                                             "score": round(s, 6)} for j, s in best]}
                for text, best in zip(queries, ranked)]


def search(index: PathLike, queries: Sequence[str], k: int = 10, hybrid: bool = False, alpha: float = 0.5,
           pool: int = 100, workers: int = 1) -> List[Dict[str, Any]]:
    """Top ``k`` indexed questions for each query: ``[{"query", "results": [{"id", "question",
    "score"}]}]``, best first (dense cosine, or the hybrid fusion of the module doc). Loads the
    folder on every call; keep a :class:`DupIndex` to search it repeatedly."""
    if isinstance(queries, str):
        raise TypeError("queries: must be a sequence of strings (wrap a single query in a list)")
    return DupIndex.load(index).search(queries, k=k, hybrid=hybrid, alpha=alpha, pool=pool, workers=workers)
