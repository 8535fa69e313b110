"""Dense (embedding) retrieval on faiss, for duplicate question detection.

Rücklé, Moosavi & Gurevych (2019), "Neural Duplicate Question Detection without Labeled
Training Data" (EMNLP-IJCNLP 2019), rank the questions of a forum for a new question by the
similarity of their embeddings.  :class:`DenseIndex` holds the embeddings of a corpus in a
faiss index (exact ``"flat"``, graph ``"hnsw"`` or inverted-file ``"ivf"``), answers batches of
query embeddings with :meth:`DenseIndex.search` in the result format of the sparse
:meth:`pysynth.retrieval.Index.search` (:class:`pysynth.retrieval.Hits`), and saves itself in a
versioned :mod:`pysynth.store` directory.  It takes vectors only: texts are embedded in the model
stack (:func:`pysynth.models.embed.encode_texts`, the offline MiniLM: L2-normalised, so
``metric="ip"`` is cosine similarity).

The parts: input checks and float64 helpers (:mod:`pysynth.retrieval.vectors`), faiss loading,
devices and threads (:mod:`pysynth.retrieval.faiss_support`), the store
(:mod:`pysynth.retrieval.dense_store`) and the exact re-scoring search
(:mod:`pysynth.retrieval.dense_exact`).

Scores and order
----------------
``metric="ip"``: ``score = <q, x>``; ``metric="l2"``: ``score = -||q - x||^2`` (negative squared
distance, so that higher is better and "best first" means score descending for both metrics).
With ``normalize=True`` the corpus and the queries are scaled to unit length first (zero
vectors stay zero), which makes ``"ip"`` the cosine and ``"l2"`` equal to ``2 * cos - 2``.

Every kind re-scores its candidates in float64 from the float32 vectors, elementwise products
summed over the last axis, ``(x.astype(f8) * q.astype(f8)).sum(-1)`` (``-((x - q) ** 2).sum(-1)``
for l2), and orders them by score descending, then doc id ascending; faiss's own float32
scores and tie order are not used.  ``"flat"`` is exact: its results equal a numpy brute force
with that rule, ties included.  faiss proposes candidates; a query is accepted only when its
k-th score beats the last candidate's faiss score by more than faiss's float32 rounding error
bound, otherwise it asks for more candidates, up to scoring the whole corpus.  ``"hnsw"`` and
``"ivf"`` are approximate: they may miss documents, but the scores and the order of what they
find follow the same rule.

Determinism: ``"ivf"`` trains its coarse quantizer with k-means seeded by ``seed`` (faiss's
``ClusteringParameters.seed``, including its subsampling); ``"hnsw"`` draws node levels from a
generator seeded by ``seed``.  Building twice with the same data, parameters and ``workers``
gives the same index.  (faiss inserts HNSW nodes in parallel when ``workers > 1``, which can
change the graph between runs; the default ``workers=1`` is reproducible.)

Store format (``FORMAT_VERSION`` 1)
-----------------------------------
A :mod:`pysynth.store` directory: ``meta.json`` (the build parameters and sizes under
``"meta"``) and one file member ``index.faiss``, the bytes of ``faiss.serialize_index``.  No
pickle is involved.  :meth:`DenseIndex.load` refuses (``ValueError`` naming the file) a missing,
truncated, corrupt (CRC-32) or version-mismatched store and a faiss index that does not match
its ``meta.json``.

GPU (``device``)
----------------
``device="auto"`` (the default of :meth:`DenseIndex.build` and :meth:`DenseIndex.load`) searches
on a CUDA GPU when the installed faiss has GPU support (``faiss-gpu``) and sees a GPU, else on
the CPU; ``"cpu"`` never uses a GPU; ``"cuda"`` raises ``ValueError`` naming the missing piece.
The index is built (and IVF's k-means trained, seeded) on the CPU, so it is the same index
either way; a GPU copy (``faiss.index_cpu_to_gpu``) of ``"flat"`` and ``"ivf"`` indexes then
proposes the candidates, while re-scoring, saving and ``faiss_index`` use the CPU index (the
vectors are held twice: host and GPU memory).  faiss has no GPU HNSW, so ``"hnsw"`` stays on
the CPU under ``"auto"`` and refuses ``"cuda"``.  Candidate requests beyond faiss's GPU limit
(``k`` or ``nprobe`` above 2048) go to the CPU index.  Results follow the rule above on either
device (the exactness bound holds for any summation order); :attr:`DenseIndex.device` says
which one searches.

faiss is imported on first use (``pip install '.[dist]'``); importing this module imports
neither faiss nor torch.

Examples
--------
>>> import numpy as np
>>> from pysynth.retrieval.dense import DenseIndex
>>> x = np.array([[1, 0], [0, 1], [1, 1]], dtype=np.float32)
>>> ix = DenseIndex.build(x)
>>> hits = ix.search(np.array([[1, 0.5]], dtype=np.float32), k=4)
>>> hits.docs.tolist(), hits.scores.tolist(), hits.counts.tolist()
([[2, 0, 1, -1]], [[1.5, 1.0, 0.5, nan]], [3])
"""
from __future__ import annotations

import os
import warnings
from typing import Any, Dict, Optional, Union

import numpy as np

from pysynth import _validate as _v
from pysynth.retrieval import Hits
from pysynth.retrieval.dense_exact import ExactSearch
from pysynth.retrieval.dense_store import FORMAT, FORMAT_VERSION, INDEX_FILE, open_store, read_index, write_index
from pysynth.retrieval.faiss_support import DEVICES, KINDS, METRICS, faiss_module, omp_threads, search_device
from pysynth.retrieval.vectors import (
    I32_MAX,
    as_matrix,
    default_nlist,
    default_nprobe,
    normalized,
    optional_int,
    top_k_order,
)

__all__ = ["DenseIndex", "Hits", "FORMAT", "FORMAT_VERSION", "KINDS", "METRICS", "DEVICES", "INDEX_FILE"]

PathLike = Union[str, "os.PathLike[str]"]

_DEFAULTS = {"ef_construction": 200, "ef_search": 64}
# faiss's GPU k-selection limit (GPU_MAX_SELECTION_K), for k and nprobe
_GPU_MAX_K = 2048

#: names that moved to the model stack (issue 25: a stage keeps vectors only)
_MOVED = {"encode_texts": "pysynth.models.embed"}


def __getattr__(name: str):
    if name in _MOVED:
        raise ImportError(f"pysynth.retrieval.dense.{name} moved to {_MOVED[name]}.{name} (retrieval keeps vectors "
                          f"only); use: from {_MOVED[name]} import {name}")
    raise AttributeError(f"module 'pysynth.retrieval.dense' has no attribute {name!r}")


# --------------------------------------------------------------------------
# the index
# --------------------------------------------------------------------------
class DenseIndex(ExactSearch):
    """Embeddings of a corpus in a faiss index, searched by inner product or L2 distance.

    Create one with :meth:`build` or :meth:`load`; query it with :meth:`search`.  Doc ids are
    the row numbers of the embeddings given to :meth:`build`.  Methods that take ``workers``
    set faiss's process-wide OpenMP thread count for the duration of the call (-1 = all cores);
    do not run them concurrently from several Python threads with different ``workers``.
    """

    def __init__(self, index: Any, config: Dict[str, Any], *, _checked: bool = False):
        if not _checked:
            raise TypeError("use DenseIndex.build(...) or DenseIndex.load(...)")
        self._index = index
        self._config = dict(config)
        self._max_norm: Optional[float] = None
        self._gpu_res: Any = None
        self._gpu_index: Any = None

    def _place(self, faiss, device: str) -> "DenseIndex":
        """Add the GPU copy that proposes candidates when ``device`` is ``"cuda"``."""
        if device == "cuda":
            self._gpu_res = faiss.StandardGpuResources()
            self._gpu_index = faiss.index_cpu_to_gpu(self._gpu_res, 0, self._index)
        return self

    def _searcher(self, kk: int, nprobe: int = 0) -> Any:
        """The faiss index that proposes ``kk`` candidates: the GPU copy within its limits, else the CPU one."""
        if self._gpu_index is not None and kk <= _GPU_MAX_K and nprobe <= _GPU_MAX_K:
            return self._gpu_index
        return self._index

    # ----------------------------------------------------------------- creation
    @classmethod
    def build(
        cls,
        embeddings: Any,
        kind: str = "flat",
        metric: str = "ip",
        normalize: bool = False,
        hnsw_m: int = 32,
        ef_construction: Optional[int] = None,
        ef_search: Optional[int] = None,
        nlist: Optional[int] = None,
        nprobe: Optional[int] = None,
        seed: int = 0,
        workers: int = 1,
        device: str = "auto",
    ) -> "DenseIndex":
        """Index the rows of ``embeddings``; row ``i`` gets doc id ``i``.

        Parameters
        ----------
        embeddings : array_like, float32 [n, d]
            Finite values, ``n >= 1``, ``d >= 1``.  Other real dtypes are converted to float32.
        kind : {"flat", "hnsw", "ivf"}
            ``"flat"``: exact search (``IndexFlatIP`` / ``IndexFlatL2``).  ``"hnsw"``: an HNSW
            graph (``IndexHNSWFlat``).  ``"ivf"``: inverted lists over k-means cells
            (``IndexIVFFlat``).  Both approximate kinds store the full vectors.
        metric : {"ip", "l2"}
            Inner product or (negative squared) Euclidean distance; see the module notes.
        normalize : bool
            Scale rows (and, at search time, queries) to unit length: cosine similarity.
        hnsw_m : int
            HNSW neighbours per node (``M``, >= 2); ``kind="hnsw"`` only.
        ef_construction : int, optional
            HNSW build beam width (default 200); ``kind="hnsw"`` only.
        ef_search : int, optional
            HNSW search beam width (default 64; raised to the ``2 k + 16`` candidates that
            :meth:`search` asks faiss for when smaller); ``kind="hnsw"`` only.  :meth:`search`
            can override it.
        nlist : int, optional
            Number of IVF cells, ``1 <= nlist <= n`` (default ``min(4 sqrt(n), n // 39)``, at
            least 1); ``kind="ivf"`` only.  Fewer than 39 points per cell gives a warning.
        nprobe : int, optional
            IVF cells visited per query (default ``max(8, ceil(sqrt(nlist)))``; capped at
            ``nlist``); ``kind="ivf"`` only.  :meth:`search` can override it.
        seed : int
            Seed of the IVF k-means (initialisation and subsampling) and of the HNSW level
            generator, in ``[0, 2**31 - 1]``.
        workers : int
            faiss threads (-1 = all cores).
        device : {"auto", "cpu", "cuda"}
            Where :meth:`search` finds candidates (the build runs on the CPU); see the module
            notes.

        Returns
        -------
        DenseIndex

        Raises
        ------
        TypeError
            ``embeddings`` is not a real-valued array, or an integer parameter is not an int.
        ValueError
            A shape, value or parameter is out of range (the message names it), a parameter
            is given for a kind it does not apply to, or ``device="cuda"`` without a usable GPU
            faiss (or with ``kind="hnsw"``).
        ImportError
            faiss is not installed.

        Examples
        --------
        >>> rng = np.random.default_rng(0)
        >>> x = rng.standard_normal((500, 8)).astype(np.float32)
        >>> ix = DenseIndex.build(x, kind="ivf", metric="l2", nlist=8, seed=1)
        >>> ix.config["nlist"], ix.config["nprobe"], ix.n_docs, ix.dim
        (8, 8, 500, 8)
        >>> ix.search(x[:2], k=1).docs.tolist()
        [[0], [1]]
        """
        kind = _v.choice(kind, "kind", KINDS)
        metric = _v.choice(metric, "metric", METRICS)
        if not isinstance(normalize, (bool, np.bool_)):
            raise TypeError(f"normalize must be True or False, got {type(normalize).__name__}")
        x = as_matrix(embeddings, "embeddings")
        n, d = x.shape
        if n > I32_MAX:
            raise ValueError(f"embeddings has {n:,} rows; doc ids are int32, so at most {I32_MAX:,} fit in one index: "
                             "split the corpus")
        hnsw_m = _v.int_range(hnsw_m, "hnsw_m", 2, 1 << 16)
        ef_construction = optional_int(ef_construction, "ef_construction", 1)
        ef_search = optional_int(ef_search, "ef_search", 1)
        nlist_given = nlist is not None
        nlist = optional_int(nlist, "nlist", 1)
        nprobe = optional_int(nprobe, "nprobe", 1)
        seed = _v.int_range(seed, "seed", 0, I32_MAX)
        workers = _v.workers(workers)
        for name, value, owner in (("ef_construction", ef_construction, "hnsw"), ("ef_search", ef_search, "hnsw"),
                                   ("nlist", nlist, "ivf"), ("nprobe", nprobe, "ivf")):
            if value is not None and kind != owner:
                raise ValueError(f"{name} applies to kind={owner!r} only, not kind={kind!r}: leave it out")
        if nlist is not None and nlist > n:
            raise ValueError(f"nlist = {nlist} is more than the {n} embeddings: every IVF cell needs at least one "
                             f"training point; pass nlist <= {n} (or leave it out for the default "
                             f"{default_nlist(n)})")
        if normalize:
            x = normalized(x)

        faiss = faiss_module()
        where = search_device(faiss, device, kind)
        fmetric = faiss.METRIC_INNER_PRODUCT if metric == "ip" else faiss.METRIC_L2
        config: Dict[str, Any] = {"kind": kind, "metric": metric, "normalize": bool(normalize), "n_docs": n, "dim": d,
                                  "seed": seed}
        with omp_threads(faiss, workers):
            if kind == "flat":
                index = faiss.IndexFlatIP(d) if metric == "ip" else faiss.IndexFlatL2(d)
                index.add(x)
            elif kind == "hnsw":
                config.update(hnsw_m=hnsw_m, ef_construction=ef_construction or _DEFAULTS["ef_construction"],
                              ef_search=ef_search or _DEFAULTS["ef_search"])
                index = faiss.IndexHNSWFlat(d, hnsw_m, fmetric)
                index.hnsw.efConstruction = config["ef_construction"]
                index.hnsw.efSearch = config["ef_search"]
                # faiss seeds its level generator with a constant; ours makes `seed` mean something
                index.hnsw.rng = faiss.RandomGenerator(seed)
                index.add(x)
            else:
                nlist = nlist if nlist is not None else default_nlist(n)
                if nlist_given and n < 39 * nlist:
                    warnings.warn(f"nlist = {nlist} leaves {n / nlist:.1f} training points per IVF cell (faiss "
                                  "recommends >= 39): k-means cells may be poor; a smaller nlist is safer",
                                  stacklevel=2)
                config.update(nlist=nlist, nprobe=min(nlist, nprobe or default_nprobe(nlist)))
                quantizer = faiss.IndexFlatIP(d) if metric == "ip" else faiss.IndexFlatL2(d)
                index = faiss.IndexIVFFlat(quantizer, d, nlist, fmetric)
                index.cp.seed = seed
                # the Python warning above replaces faiss's stderr print about too few points per cell
                index.cp.min_points_per_centroid = 1
                index.train(x)
                index.add(x)
                index.nprobe = config["nprobe"]
                # re-scoring reads vectors by doc id
                index.make_direct_map()
        return cls(index, config, _checked=True)._place(faiss, where)

    def save(self, path: PathLike) -> None:
        """Write the index to directory ``path``, a :mod:`pysynth.store` swapped in atomically.

        ``index.faiss`` holds the ``faiss.serialize_index`` bytes, ``meta.json`` the configuration
        (:attr:`config`, plus the faiss version that wrote it).

        Parameters
        ----------
        path : str or os.PathLike
            Directory to create or replace.

        Raises
        ------
        ValueError
            ``path`` exists and is neither an empty directory nor a pysynth store.
        """
        write_index(path, self._index, self._config)

    @classmethod
    def load(cls, path: PathLike, *, mmap: bool = True, device: str = "auto") -> "DenseIndex":
        """Open an index written by :meth:`save`.

        Parameters
        ----------
        path : str or os.PathLike
            The store directory.
        mmap : bool
            Memory-map the vectors (and IVF lists) read-only (faiss's ``IO_FLAG_MMAP_IFC``) instead
            of reading them into memory.  Without that flag in the installed faiss the index is
            read into memory either way.
        device : {"auto", "cpu", "cuda"}
            Where :meth:`search` finds candidates; see the module notes (a GPU copy is read
            into GPU memory whatever ``mmap`` says).

        Returns
        -------
        DenseIndex

        Raises
        ------
        ValueError
            ``path`` is not a dense index store or does not exist, was written by another format
            version (rebuild it), ``index.faiss`` is missing, truncated or corrupt (size and
            CRC-32 against ``meta.json``), faiss cannot read it, or it disagrees with
            ``meta.json`` (kind, metric, sizes).
        ImportError
            faiss is not installed.

        Examples
        --------
        >>> import tempfile
        >>> ix = DenseIndex.build(np.eye(3, dtype=np.float32), kind="hnsw")
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     ix.save(tmp)
        ...     DenseIndex.load(tmp).search(np.eye(3, dtype=np.float32)[1:], k=1).docs.tolist()
        [[1], [2]]
        """
        st, config = open_store(path, mmap)
        where = search_device(faiss_module(), device, config["kind"])
        index = read_index(st, config, mmap)
        return cls(index, config, _checked=True)._place(faiss_module(), where)

    # --------------------------------------------------------------- properties
    @property
    def n_docs(self) -> int:
        """n, the number of indexed embeddings."""
        return int(self._config["n_docs"])

    @property
    def dim(self) -> int:
        """d, the embedding dimension."""
        return int(self._config["dim"])

    @property
    def kind(self) -> str:
        """``"flat"``, ``"hnsw"`` or ``"ivf"``."""
        return str(self._config["kind"])

    @property
    def metric(self) -> str:
        """``"ip"`` or ``"l2"``."""
        return str(self._config["metric"])

    @property
    def config(self) -> Dict[str, Any]:
        """The build parameters (a copy): kind, metric, normalize, n_docs, dim, seed and the
        kind's own (hnsw_m, ef_construction, ef_search / nlist, nprobe), defaults filled in."""
        return dict(self._config)

    @property
    def device(self) -> str:
        """``"cuda"`` when a GPU copy proposes the candidates, else ``"cpu"``."""
        return "cpu" if self._gpu_index is None else "cuda"

    @property
    def faiss_index(self) -> Any:
        """The underlying (CPU) faiss index (shared, not a copy: do not add to or reset it)."""
        return self._index

    def __repr__(self) -> str:
        extra = "".join(f", {k}={self._config[k]}" for k in ("hnsw_m", "ef_search", "nlist", "nprobe")
                        if k in self._config)
        return (f"DenseIndex(kind={self.kind!r}, metric={self.metric!r}, normalize={self._config['normalize']}, "
                f"n_docs={self.n_docs}, dim={self.dim}{extra})")

    # ------------------------------------------------------------------ queries
    def search(
        self,
        queries: Any,
        k: int = 10,
        *,
        ef_search: Optional[int] = None,
        nprobe: Optional[int] = None,
        workers: int = 1,
        dtype: Any = np.float32,
    ) -> Hits:
        """Top ``k`` documents of every query embedding.

        Parameters
        ----------
        queries : array_like, float32 [Q, d]
            Finite query embeddings (``Q`` may be 0); normalised first when the index was built
            with ``normalize=True``.
        k : int
            Results per query (>= 1); ``k > n`` pads with -1 / NaN.
        ef_search : int, optional
            HNSW beam width for this call (``kind="hnsw"`` only; at least ``min(n, 2 k + 16)``).
        nprobe : int, optional
            IVF cells visited for this call (``kind="ivf"`` only; capped at ``nlist``).
        workers : int
            faiss threads (-1 = all cores).  Results never depend on it.
        dtype : np.float32 (default) or np.float64
            dtype of the returned scores; rankings are decided on the float64 scores either way.

        Returns
        -------
        Hits
            ``(docs, scores, counts)``: int32 (Q, k) doc ids best first (score descending, doc
            id ascending), -1 padded; scores (``<q, x>``, or ``-||q - x||^2`` for l2), NaN
            padded; int32 number of results per query (``min(k, n)`` for ``"flat"``; ``"hnsw"``
            and ``"ivf"`` can find fewer).

        Examples
        --------
        >>> x = np.array([[0, 0], [3, 4], [0, 1]], dtype=np.float32)
        >>> ix = DenseIndex.build(x, metric="l2")
        >>> docs, scores, counts = ix.search(np.array([[0, 0.5]], dtype=np.float32), k=2)
        >>> docs.tolist(), scores.tolist()
        ([[0, 2]], [[-0.25, -0.25]])
        """
        k = _v.positive_int(k, "k")
        ef_search = optional_int(ef_search, "ef_search", 1)
        nprobe = optional_int(nprobe, "nprobe", 1)
        workers = _v.workers(workers)
        dt = np.dtype(dtype)
        if dt not in (np.dtype(np.float32), np.dtype(np.float64)):
            raise ValueError(f"dtype must be float32 or float64, got {dt}")
        for name, value, owner in (("ef_search", ef_search, "hnsw"), ("nprobe", nprobe, "ivf")):
            if value is not None and self.kind != owner:
                raise ValueError(f"{name} applies to kind={owner!r} indexes only, this one is {self.kind!r}")
        q = as_matrix(queries, "queries", d=self.dim, allow_empty=True)
        if self._config["normalize"]:
            q = normalized(q)
        nq = q.shape[0]
        if nq == 0:
            return Hits(np.full((0, k), -1, np.int32), np.full((0, k), np.nan, dt), np.zeros(0, np.int32))

        faiss = faiss_module()
        with omp_threads(faiss, workers):
            if self.kind == "flat":
                ids, scores = self._search_flat(faiss, q, k)
            else:
                # a few more than k, so ties at the k-th place are settled by doc id, not by faiss
                kk = self._n_candidates(k)
                npb = 0
                if self.kind == "hnsw":
                    # faiss's HNSW returns at most efSearch results
                    params = faiss.SearchParametersHNSW(efSearch=max(kk, ef_search or self._config["ef_search"]))
                else:
                    npb = min(self._config["nlist"], nprobe or self._config["nprobe"])
                    params = faiss.SearchParametersIVF(nprobe=npb)
                _, cand = self._searcher(kk, npb).search(q, kk, params=params)
                ids, scores = top_k_order(cand, self._rescore(q, cand), k)
        return self._hits(ids, scores, k, dt)

    def _hits(self, ids: np.ndarray, scores: np.ndarray, k: int, dt: np.dtype) -> Hits:
        nq, got = ids.shape
        docs = np.full((nq, k), -1, np.int32)
        out = np.full((nq, k), np.nan, dt)
        valid = ids >= 0
        docs[:, :got] = np.where(valid, ids, -1)
        out[:, :got] = np.where(valid, scores, np.nan)
        return Hits(docs, out, valid.sum(1).astype(np.int32))
