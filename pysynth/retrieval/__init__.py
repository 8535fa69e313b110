"""Positional inverted index with SDM and BM25 retrieval, for millions of short questions.

The keyword query filter and the training data filter of Ding & Balog (2018), "Generating
Synthetic Data for Neural Keyword-to-Question Models" (ICTIR 2018, Sect. 3.2 and 6.2), rank a
question corpus with the Sequential Dependence Model (SDM, Metzler & Croft 2005) for every
candidate keyword query.  :class:`Index` builds the index from token ids, saves it in a
versioned, memory-mappable directory, and answers batches of queries with SDM or BM25.

Documents and queries are ragged lists of term ids: flat int32 ``ids`` plus int64 ``offsets``
(row ``i`` is ``ids[offsets[i]:offsets[i + 1]]``), an object with ``.values`` / ``.offsets``
(e.g. :class:`pysynth.metrics.TokenIds`), or a list of id lists.  A phrase (Ding & Balog's
keyword queries keep phrases whole, Sect. 3.1.4) is one term: give it its own id in the
vocabulary, in the documents and in the queries alike.

Scoring (exact definitions, operation by operation: :mod:`pysynth.retrieval._reference`)
----------------------------------------------------------------------------------------
SDM, Dirichlet smoothing ``f(c, cf) = log((c + mu * P) / (|D| + mu))``, ``P = cf / |C|`` (or
``0.5 / |C|`` when ``cf = 0``), query ``q_1..q_n``::

    score = l_T * mean_i f(tf(q_i))
          + l_O * mean_j f(#od:1(q_j q_j+1))
          + l_U * mean_j f(#uw:8(q_j q_j+1))            (n >= 2; n == 1: f(tf(q_1)))

with ``(l_T, l_O, l_U) = weights / sum(weights)`` (default 0.85, 0.10, 0.05) -- Indri's and
Galago's ``#weight(0.85 #combine(..) 0.10 #combine(#od:1 ..) 0.05 #combine(#uw:8 ..))``.
Window matches are counted as Galago's ``OrderedWindowIterator`` (``a`` at ``p``, ``b`` at
``p + 1``) and ``UnorderedWindowIterator`` (both within a span of 8 positions, the earlier
occurrence advancing after each check; ``#uw:8(a a)`` matches every occurrence of ``a``);
the window's collection frequency is its match count summed over all documents.

BM25 is bm25s' ``method="lucene"``: ``idf = log(1 + (N - df + 0.5) / (df + 0.5))``,
``score = sum_i idf(q_i) * tf / (k1 * (1 - b + b * |D| / avgdl) + tf)`` (k1 = 1.5, b = 0.75).

Candidates are the documents that contain at least one query term; results are ordered by
score descending, then doc id ascending.  The compiled backend prunes with MaxScore-style
upper bounds, impact-ordered postings and a relative safety margin of 1e-9, which only skips
documents proven to rank below the k-th result: its results are those of exhaustive scoring,
bit for bit equal to the Python twin's.  Per :class:`Index` (read-only arrays), it keeps what
its calls derive from the index alone -- window statistics of query pairs, #od:1 lists of
frequent pairs, rank maps of long lists, per-thread scratch -- for the next calls (at most
128 MiB, released with the index): repeated ``search`` / ``rank_of`` calls on one index, as in
the K2Q pipeline, skip that work; results never depend on it.

Index format (``FORMAT_VERSION`` 2)
-----------------------------------
A :mod:`pysynth.store` directory: ``meta.json`` (format name and version, sizes, and per array
its dtype, shape and CRC-32) and one ``.npy`` file per array (layout in
:mod:`pysynth.retrieval._reference`).
:meth:`Index.load` memory-maps the arrays and refuses (``ValueError``) a missing, truncated,
corrupt or version-mismatched index: sizes and checksums are compared with ``meta.json`` and
every array is checked for consistency before the first search.

Examples
--------
>>> import numpy as np
>>> from pysynth.retrieval import Index
>>> ix = Index.build([[0, 1, 2], [2, 3], [1, 2, 3, 1]], vocab_size=4)
>>> hits = ix.search([[1, 2]], k=2)
>>> hits.docs.tolist()
[[2, 0]]
>>> ix.search([[1, 2]], k=3, model="bm25").counts.tolist()
[3]
"""
from __future__ import annotations

import os
import sys
from pathlib import Path
from types import MappingProxyType
from typing import Any, Mapping, NamedTuple, Optional, Sequence, Tuple, Union

import numpy as np

from pysynth import _validate as _v
from pysynth import store
from pysynth._dispatch import backend
from pysynth._validate import positive_int as _positive
from pysynth._validate import ragged as _ragged
from pysynth._validate import workers as _workers

#: ids above the largest one in the corpus that Index.build accepts (per-term arrays are allocated)
_MAX_UNUSED_IDS = 10_000_000

__all__ = ["Index", "Hits", "FORMAT", "FORMAT_VERSION", "ARRAYS"]

FORMAT = "pysynth.retrieval.index"
FORMAT_VERSION = 2  # 1: the layout before pysynth.store (refused: rebuild the index)
#: array name -> dtype, in file order
ARRAYS = {
    "indptr": np.dtype("<i8"),
    "doc_ids": np.dtype("<i4"),
    "tfs": np.dtype("<i4"),
    "pos_indptr": np.dtype("<i8"),
    "positions": np.dtype("<i4"),
    "doc_offsets": np.dtype("<i8"),
    "doc_tokens": np.dtype("<i4"),
    "doc_lengths": np.dtype("<i4"),
    "cf": np.dtype("<i8"),
    "max_tf": np.dtype("<i4"),
    "impact": np.dtype("<i4"),
    "hi_indptr": np.dtype("<i8"),
    "hi_doc_ids": np.dtype("<i4"),
    "hi_tfs": np.dtype("<i4"),
    "pair_terms": np.dtype("<i4"),
    "pair_cf_od": np.dtype("<i8"),
    "pair_cf_uw": np.dtype("<i8"),
    "pair_max_od": np.dtype("<i4"),
    "pair_max_uw": np.dtype("<i4"),
}
_MODELS = ("sdm", "bm25")
_I32_MAX = 2**31 - 1

PathLike = Union[str, "os.PathLike[str]"]


class Hits(NamedTuple):
    """Search results of Q queries (unpacks as ``docs, scores, counts``)."""

    docs: np.ndarray
    """int32 (Q, k): doc ids, best first; -1 after the last result."""
    scores: np.ndarray
    """float32 or float64 (Q, k): scores; NaN after the last result."""
    counts: np.ndarray
    """int32 (Q,): number of results (< k when fewer documents contain a query term)."""


# --------------------------------------------------------------------------
# input conversion
# --------------------------------------------------------------------------
def _int_array(x: Any, name: str) -> np.ndarray:
    a = np.asarray(x)
    if a.dtype == object or (a.size and a.dtype.kind not in "iu"):
        raise TypeError(f"{name} must hold integer ids, got dtype {a.dtype}")
    return a


def _model_params(model: Any, mu: Any, weights: Any, k1: Any, b: Any) -> tuple:
    _v.choice(model, "model", _MODELS)
    try:
        w = tuple(float(x) for x in weights)
    except (TypeError, ValueError):
        raise ValueError(f"weights must be 3 numbers (unigram, ordered, unordered), got {weights!r}") from None
    if len(w) != 3:
        raise ValueError(f"weights must be 3 numbers (unigram, ordered, unordered), got {len(w)}")
    if not all(np.isfinite(w)) or min(w) < 0 or sum(w) <= 0:
        raise ValueError(f"weights must be finite, >= 0 and not all 0, got {w}")
    mu, k1, b = float(mu), float(k1), float(b)
    if not (np.isfinite(mu) and mu >= sys.float_info.min):  # a denormal mu gives -inf scores
        raise ValueError(f"mu must be a finite number > 0 (at least {sys.float_info.min!r}), got {mu}")
    if not (np.isfinite(k1) and k1 >= 0):
        raise ValueError(f"k1 must be a finite number >= 0, got {k1}")
    if not 0 <= b <= 1:
        raise ValueError(f"b must be in [0, 1], got {b}")
    return model, mu, w, k1, b


# --------------------------------------------------------------------------
# the index
# --------------------------------------------------------------------------
class Index:
    """A positional inverted index over a corpus of short documents (questions).

    Create one with :meth:`build` or :meth:`load`; query it with :meth:`search` (top-k lists)
    or :meth:`rank_of` (the rank of one known document, e.g. the source question of a keyword
    query).  All methods take ``workers`` (threads; -1 = all cores): results never depend on it.
    """

    def __init__(self, arrays: Mapping[str, np.ndarray], *, _checked: bool = False):
        if not _checked:
            raise TypeError("use Index.build(...) or Index.load(...)")
        self._arrays = dict(arrays)
        for a in self._arrays.values():  # read-only: the compiled search then validates it only once
            a.flags.writeable = False

    # ----------------------------------------------------------------- creation
    @classmethod
    def build(
        cls,
        docs_ids: Any,
        offsets: Any = None,
        vocab_size: Optional[int] = None,
        workers: int = 1,
    ) -> "Index":
        """Index the documents ``docs_ids[offsets[d]:offsets[d+1]]``, ``d = 0..N-1``.

        Parameters
        ----------
        docs_ids : flat int32 term ids (with ``offsets``), an object with ``.values`` and
            ``.offsets``, or a list of id lists.  Document ``d`` gets doc id ``d``.
        offsets : int64 array of length N + 1, when ``docs_ids`` is flat.
        vocab_size : V, term ids lie in ``[0, V)``; default ``max id + 1``.
        workers : threads (-1 = all cores).

        Returns
        -------
        Index

        Raises
        ------
        ValueError
            for an empty corpus (no documents, or no tokens), ids outside ``[0, vocab_size)``,
            malformed offsets.

        Examples
        --------
        >>> ix = Index.build(np.array([3, 1, 3, 2], np.int32), np.array([0, 2, 4]), vocab_size=5)
        >>> (ix.n_docs, ix.vocab_size, ix.n_tokens, int(ix.cf[3]))
        (2, 5, 4, 2)
        """
        ids, off = _ragged(docs_ids, offsets, "docs_ids")
        if off.shape[0] == 1:
            raise ValueError("docs_ids is an empty corpus (no documents); pass at least one document")
        if ids.size == 0:
            raise ValueError(f"docs_ids is an empty corpus (all {off.shape[0] - 1} documents have no tokens)")
        if vocab_size is None:
            vocab_size = int(ids.max()) + 1
        vocab_size = _positive(vocab_size, "vocab_size")
        if int(ids.max()) >= vocab_size:
            bad = int(np.argmax(ids >= vocab_size))
            raise ValueError(f"docs_ids[{bad}] = {int(ids[bad])} is outside [0, vocab_size = {vocab_size})")
        # the index keeps arrays per term id: 3e8 ids that never occur took 10.6 GB before this check
        unused = vocab_size - (int(ids.max()) + 1)
        if unused > _MAX_UNUSED_IDS:
            raise ValueError(f"vocab_size = {vocab_size:,} is {unused:,} more than the largest term id + 1; the "
                             f"index allocates per term id, so pass the vocabulary's size (len(vocab)), at most "
                             f"{_MAX_UNUSED_IDS:,} ids beyond those that occur")
        arrays = backend("retrieval").build_index(ids, off, vocab_size, _workers(workers))
        return cls(arrays, _checked=True)

    def save(self, path: PathLike) -> None:
        """Write the index to directory ``path``: a :mod:`pysynth.store` (one ``.npy`` per array
        + ``meta.json`` with sizes and CRC-32 checksums), written beside ``path`` and swapped in
        atomically, so an interrupted save leaves the old index (or nothing) there.  An
        existing directory that is neither empty nor a store is refused (ValueError).
        """
        a = self._arrays
        store.save(path, FORMAT, FORMAT_VERSION,
                   arrays={name: np.ascontiguousarray(a[name], dtype=dt) for name, dt in ARRAYS.items()},
                   meta={"n_docs": self.n_docs, "vocab_size": self.vocab_size, "n_postings": self.n_postings,
                         "n_tokens": self.n_tokens, "n_pair_terms": int(a["pair_terms"].shape[0]),
                         "n_hi": int(a["hi_doc_ids"].shape[0])})

    @classmethod
    def load(cls, path: PathLike, *, mmap: bool = True, workers: int = 1) -> "Index":
        """Open an index written by :meth:`save`, memory-mapped (``mmap=True``) or read into memory.

        Raises
        ------
        ValueError
            when ``path`` is not an index directory, was written by another format version
            (rebuild it), or any file is missing, truncated or corrupt (sizes, CRC-32 checksums
            and the full consistency of the arrays are checked before returning).

        Examples
        --------
        >>> import tempfile
        >>> ix = Index.build([[0, 1], [1, 2]])
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     ix.save(tmp)
        ...     Index.load(tmp).search([[1]], k=5).docs.tolist()
        [[0, 1, -1, -1, -1]]
        """
        d = Path(path)
        try:
            meta = store.read_meta(d, FORMAT, (FORMAT_VERSION,))["meta"]
        except FileNotFoundError:
            raise ValueError(f"{d} is not a pysynth index: it does not exist") from None
        try:
            n = {k: int(meta[k]) for k in ("n_docs", "vocab_size", "n_postings", "n_tokens", "n_pair_terms", "n_hi")}
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"{d / store.META} is corrupt or incomplete: a size is missing or not an int ({exc})") from None
        pp = n["n_pair_terms"] ** 2
        length = {
            "indptr": n["vocab_size"] + 1, "doc_ids": n["n_postings"], "tfs": n["n_postings"],
            "pos_indptr": n["n_postings"] + 1, "positions": n["n_tokens"],
            "doc_offsets": n["n_docs"] + 1, "doc_tokens": n["n_tokens"],
            "doc_lengths": n["n_docs"], "cf": n["vocab_size"], "max_tf": n["vocab_size"],
            "impact": n["n_postings"], "pair_terms": n["n_pair_terms"],
            "hi_indptr": n["vocab_size"] + 1, "hi_doc_ids": n["n_hi"], "hi_tfs": n["n_hi"],
            "pair_cf_od": pp, "pair_cf_uw": pp, "pair_max_od": pp, "pair_max_uw": pp,
        }
        st = store.load(d, FORMAT, (FORMAT_VERSION,), mmap=mmap,
                        expect={name: (dt, (length[name],)) for name, dt in ARRAYS.items()})
        arrays = {name: st.arrays[name] for name in ARRAYS}
        try:
            backend("retrieval").validate_index(arrays, _workers(workers))
        except ValueError as exc:
            raise ValueError(f"{d}: inconsistent index ({exc})") from None
        return cls(arrays, _checked=True)

    # --------------------------------------------------------------- properties
    @property
    def arrays(self) -> Mapping[str, np.ndarray]:
        """The index arrays (read-only view; layout in :mod:`pysynth.retrieval._reference`)."""
        return MappingProxyType(self._arrays)

    @property
    def n_docs(self) -> int:
        """N, the number of documents."""
        return int(self._arrays["doc_lengths"].shape[0])

    @property
    def vocab_size(self) -> int:
        """V, the size of the vocabulary."""
        return int(self._arrays["cf"].shape[0])

    @property
    def n_tokens(self) -> int:
        """|C|, the number of tokens in the collection."""
        return int(self._arrays["positions"].shape[0])

    @property
    def n_postings(self) -> int:
        """Number of (term, document) pairs."""
        return int(self._arrays["doc_ids"].shape[0])

    @property
    def df(self) -> np.ndarray:
        """Document frequency of every term (int64, length V)."""
        return np.diff(self._arrays["indptr"])

    @property
    def cf(self) -> np.ndarray:
        """Collection frequency of every term (int64, length V)."""
        return self._arrays["cf"]

    @property
    def doc_lengths(self) -> np.ndarray:
        """|D| of every document (int32, length N)."""
        return self._arrays["doc_lengths"]

    def __repr__(self) -> str:
        return (
            f"Index(n_docs={self.n_docs}, vocab_size={self.vocab_size}, n_tokens={self.n_tokens}, "
            f"n_postings={self.n_postings})"
        )

    # ------------------------------------------------------------------ queries
    def _queries(self, queries: Any, offsets: Any) -> Tuple[np.ndarray, np.ndarray]:
        q, qo = _ragged(queries, offsets, "queries")
        if q.size and int(q.max()) >= self.vocab_size:
            bad = int(np.argmax(q >= self.vocab_size))
            raise ValueError(f"queries[{bad}] = {int(q[bad])} is outside [0, vocab_size = {self.vocab_size})")
        return q, qo

    def search(
        self,
        queries: Any,
        offsets: Any = None,
        *,
        model: str = "sdm",
        k: int = 100,
        mu: float = 2500.0,
        weights: Sequence[float] = (0.85, 0.10, 0.05),
        k1: float = 1.5,
        b: float = 0.75,
        workers: int = 1,
        dtype: Any = np.float32,
    ) -> Hits:
        """Top ``k`` documents of every query.

        Parameters
        ----------
        queries : flat int32 term ids (with ``offsets``), an object with ``.values`` /
            ``.offsets``, or a list of id lists.  Repeated terms count once per occurrence; an
            empty query retrieves nothing.
        offsets : int64 offsets of ``queries`` when it is flat.
        model : ``"sdm"`` (default) or ``"bm25"``.
        k : results per query (>= 1).
        mu : SDM Dirichlet prior (> 0).
        weights : SDM weights of the unigram, #od:1 and #uw:8 parts (>= 0, normalized to sum 1).
        k1, b : BM25 parameters (k1 >= 0, 0 <= b <= 1).
        workers : threads (-1 = all cores).
        dtype : ``np.float32`` (default) or ``np.float64`` scores.  Rankings are decided on the
            float64 scores either way.

        Returns
        -------
        Hits
            ``(docs, scores, counts)``: int32 (Q, k) doc ids best first (score descending, doc
            id ascending), -1 padded; scores, NaN padded; int32 number of results per query.
            Only documents containing at least one query term are retrieved.

        Examples
        --------
        >>> ix = Index.build([[5, 6, 7], [6, 7, 5], [1, 2]])
        >>> docs, scores, counts = ix.search([[6, 7], [1]], k=2)
        >>> docs.tolist(), counts.tolist()
        ([[0, 1], [2, -1]], [2, 1])
        """
        model, mu, w, k1, b = _model_params(model, mu, weights, k1, b)
        k = _positive(k, "k")
        dt = np.dtype(dtype)
        if dt not in (np.dtype(np.float32), np.dtype(np.float64)):
            raise ValueError(f"dtype must be float32 or float64, got {dt}")
        q, qo = self._queries(queries, offsets)
        docs, scores, counts = backend("retrieval").search(
            self._arrays, q, qo, model, k, mu, w, k1, b, _workers(workers), dt == np.float64
        )
        return Hits(docs, scores, counts)

    def rank_of(
        self,
        queries: Any,
        offsets: Any = None,
        *,
        targets: Any,
        n: int = 100,
        model: str = "sdm",
        mu: float = 2500.0,
        weights: Sequence[float] = (0.85, 0.10, 0.05),
        k1: float = 1.5,
        b: float = 0.75,
        workers: int = 1,
    ) -> np.ndarray:
        """1-based rank of ``targets[i]`` among the results of query ``i``; 0 if not in the top ``n``.

        Exactly the position :meth:`search` with ``k = n`` would give it, computed much faster:
        the target's own score is the pruning threshold from the start.  This is what the
        keyword query filter needs (``1 / rank`` of the question under each candidate query,
        Ding & Balog 2018, Eq. 7; see :func:`pysynth.filtering.kqf_from_ranks`).

        Examples
        --------
        >>> ix = Index.build([[1, 2], [1, 3], [1, 2, 3]])
        >>> ix.rank_of([[1, 3], [1, 3], [2]], targets=[1, 0, 1], n=10).tolist()
        [1, 3, 0]
        """
        model, mu, w, k1, b = _model_params(model, mu, weights, k1, b)
        n = _positive(n, "n")
        q, qo = self._queries(queries, offsets)
        t = _int_array(targets, "targets")
        if t.shape != (qo.shape[0] - 1,):
            raise ValueError(f"targets must have one doc id per query ({qo.shape[0] - 1}), got shape {t.shape}")
        if t.size and (t.min() < 0 or t.max() >= self.n_docs):
            raise ValueError(f"targets must be doc ids in [0, {self.n_docs})")
        return backend("retrieval").target_ranks(
            self._arrays, q, qo, t.astype(np.int32), n, model, mu, w, k1, b, _workers(workers)
        )

    def window_stats(self, a: Any, b: Any, workers: int = 1) -> Tuple[np.ndarray, np.ndarray]:
        """Collection frequencies ``(cf_od, cf_uw)`` of ``#od:1(a[i] b[i])`` and ``#uw:8(a[i] b[i])``."""
        a = _int_array(a, "a")
        b = _int_array(b, "b")
        if a.ndim != 1 or a.shape != b.shape:
            raise ValueError(f"a and b must be 1-D of the same length, got {a.shape} and {b.shape}")
        for name, x in (("a", a), ("b", b)):
            if x.size and (x.min() < 0 or x.max() >= self.vocab_size):
                raise ValueError(f"{name} must be term ids in [0, {self.vocab_size})")
        return backend("retrieval").window_stats(
            self._arrays, a.astype(np.int32), b.astype(np.int32), _workers(workers)
        )
