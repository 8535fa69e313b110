"""The on-disk form of a :class:`pysynth.retrieval.dense.DenseIndex`: a :mod:`pysynth.store` directory.

``meta.json`` holds the build parameters and sizes (under ``"meta"``) and lists one file member,
``index.faiss``, the bytes of ``faiss.serialize_index``; no pickle is involved. The readers
refuse (``ValueError`` naming the file) a missing, truncated, corrupt (CRC-32) or
version-mismatched store and a faiss index that does not match its ``meta.json``.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Dict, Tuple, Union

import numpy as np

from pysynth import _validate as _v
from pysynth import store
from pysynth.retrieval.faiss_support import KINDS, METRICS, faiss_module
from pysynth.retrieval.vectors import I32_MAX

__all__ = ["FORMAT", "FORMAT_VERSION", "INDEX_FILE", "FAISS_TYPES", "write_index", "open_store", "read_index",
           "check_meta", "check_index"]

FORMAT = "pysynth.retrieval.dense.DenseIndex"
FORMAT_VERSION = 1
#: the store's file member holding ``faiss.serialize_index`` bytes
INDEX_FILE = "index.faiss"
# faiss type of each (kind, metric), checked on load
FAISS_TYPES = {("flat", "ip"): "IndexFlatIP", ("flat", "l2"): "IndexFlatL2",
                ("hnsw", "ip"): "IndexHNSWFlat", ("hnsw", "l2"): "IndexHNSWFlat",
                ("ivf", "ip"): "IndexIVFFlat", ("ivf", "l2"): "IndexIVFFlat"}

PathLike = Union[str, "os.PathLike[str]"]


def write_index(path: PathLike, index: Any, config: Dict[str, Any]) -> None:
    """Write ``index`` (a faiss index) and its build ``config`` as a store at ``path`` (atomically)."""
    faiss = faiss_module()
    data = faiss.serialize_index(index)
    store.save(path, FORMAT, FORMAT_VERSION, files={INDEX_FILE: memoryview(data)},
               meta=dict(config, faiss_version=faiss.__version__))


def open_store(path: PathLike, mmap: bool = True) -> Tuple[Any, Dict[str, Any]]:
    """``(store, config)`` of an index directory: the versioned store opened (the index not read
    yet) and its build parameters checked."""
    d = Path(path)
    try:
        # verify=False: index.faiss's CRC-32 is checked by read_index, through a read-only map when mmap
        st = store.load(d, FORMAT, (FORMAT_VERSION,), mmap=mmap, verify=False)
    except FileNotFoundError:
        raise ValueError(f"{d} is not a pysynth dense index: it does not exist") from None
    config = check_meta(st.meta, d / store.META)
    if INDEX_FILE not in st.files:
        raise ValueError(f"{d} is incomplete: {INDEX_FILE} is not listed in {store.META}")
    return st, config


def read_index(st: Any, config: Dict[str, Any], mmap: bool = True) -> Any:
    """The faiss index of an opened store (:func:`open_store`), its size and CRC-32 checked and
    its type and sizes matched against ``config``."""
    faiss = faiss_module()
    f = Path(st.path) / INDEX_FILE
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
    check_index(index, config, f, faiss)
    return index


def check_meta(meta: Dict[str, Any], where: Path) -> Dict[str, Any]:
    """The build parameters in a store's ``meta``, checked (ValueError naming ``where``)."""
    try:
        kind = _v.choice(meta["kind"], "kind", KINDS)
        metric = _v.choice(meta["metric"], "metric", METRICS)
        if not isinstance(meta["normalize"], bool):
            raise ValueError(f"normalize must be a bool, got {meta['normalize']!r}")
        config: Dict[str, Any] = {"kind": kind, "metric": metric, "normalize": meta["normalize"],
                                  "n_docs": _v.int_range(meta["n_docs"], "n_docs", 1),
                                  "dim": _v.int_range(meta["dim"], "dim", 1),
                                  "seed": _v.int_range(meta["seed"], "seed", 0, I32_MAX)}
        if kind == "hnsw":
            config.update(hnsw_m=_v.int_range(meta["hnsw_m"], "hnsw_m", 2),
                          ef_construction=_v.int_range(meta["ef_construction"], "ef_construction", 1),
                          ef_search=_v.int_range(meta["ef_search"], "ef_search", 1, I32_MAX))
        elif kind == "ivf":
            config.update(nlist=_v.int_range(meta["nlist"], "nlist", 1, config["n_docs"]))
            config.update(nprobe=_v.int_range(meta["nprobe"], "nprobe", 1, config["nlist"]))
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"{where} is corrupt or incomplete: {type(exc).__name__}: {exc}") from None
    return config

def check_index(index: Any, config: Dict[str, Any], f: Path, faiss) -> None:
    """ValueError unless the faiss ``index`` read from ``f`` is the one ``config`` describes;
    sets its search parameters (efSearch / nprobe) from ``config``."""
    want = FAISS_TYPES[config["kind"], config["metric"]]
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
