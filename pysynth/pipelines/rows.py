"""JSON rows as the numpy arrays a pipeline part holds (a UTF-8 buffer + offsets).

Stages whose items are records (questions with their labels, generated paraphrases with their
candidates) keep them in the runner's part files this way: ``pack_rows`` in ``run_chunk`` or
``prepare``, ``unpack_rows`` / ``iter_rows`` in ``finish``. Keys keep their order; the encoding is
``json.dumps(..., ensure_ascii=False)``, so a row survives a resume byte for byte.
"""
from __future__ import annotations

import json
from typing import Dict, Iterator, List, Mapping, Sequence

import numpy as np

__all__ = ["pack_rows", "unpack_rows", "iter_rows", "check_rows"]


def pack_rows(rows: Sequence[Mapping], prefix: str = "rows") -> Dict[str, np.ndarray]:
    """``{prefix: uint8 UTF-8 of the JSON rows, prefix + "_off": int64 offsets}``."""
    enc = [json.dumps(r, ensure_ascii=False, separators=(",", ":")).encode("utf-8") for r in rows]
    off = np.zeros(len(enc) + 1, dtype=np.int64)
    np.cumsum([len(e) for e in enc], out=off[1:])
    return {prefix: np.frombuffer(b"".join(enc), dtype=np.uint8).copy(), prefix + "_off": off}


def iter_rows(arrays: Mapping[str, np.ndarray], prefix: str = "rows") -> Iterator[dict]:
    buf, off = arrays[prefix], arrays[prefix + "_off"]
    raw = np.asarray(buf).tobytes()
    o = np.asarray(off).tolist()
    for a, b in zip(o[:-1], o[1:]):
        yield json.loads(raw[a:b])


def unpack_rows(arrays: Mapping[str, np.ndarray], prefix: str = "rows") -> List[dict]:
    """The rows :func:`pack_rows` packed."""
    return list(iter_rows(arrays, prefix))


def check_rows(arrays: Mapping[str, np.ndarray], n: int, prefix: str = "rows") -> bool:
    """Whether a loaded part holds ``n`` whole rows under ``prefix`` (``Kernel.check``)."""
    if prefix not in arrays or prefix + "_off" not in arrays:
        return False
    off = arrays[prefix + "_off"]
    return off.shape == (n + 1,) and int(off[0]) == 0 and int(off[-1]) == arrays[prefix].shape[0]
