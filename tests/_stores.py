"""Tamper with a saved :mod:`pysynth.store` the way a bug (not a disk) would: rewrite a member
and its entry in ``meta.json`` so sizes and checksums match, to reach the owner's own
consistency checks behind the store's integrity checks."""
from __future__ import annotations

import json

import numpy as np

from pysynth import store


def write_meta(d, doc):
    """Write ``meta.json`` with its own checksum recomputed (as a bug, not a disk, would)."""
    if "meta_crc32" in doc:
        doc["meta_crc32"] = store.meta_checksum(doc)
    (d / store.META).write_text(json.dumps(doc))


def edit_meta(d, owner: bool = True, **changes):
    """Update the owner's ``meta`` (``owner=True``) or the top-level document of ``meta.json``."""
    doc = json.loads((d / store.META).read_text())
    (doc["meta"] if owner else doc).update(changes)
    write_meta(d, doc)


def restamp_array(d, name: str, a: np.ndarray):
    """Replace array ``name`` by ``a`` and record its dtype, shape and CRC-32."""
    np.save(d / f"{name}.npy", a)
    doc = json.loads((d / store.META).read_text())
    doc["arrays"][name] = {"dtype": a.dtype.str, "shape": list(a.shape), "crc32": store.crc32(a)}
    write_meta(d, doc)


def restamp_file(d, name: str, data: bytes):
    """Replace file ``name`` by ``data`` and record its size and CRC-32."""
    (d / name).write_bytes(data)
    doc = json.loads((d / store.META).read_text())
    doc["files"][name] = {"bytes": len(data), "crc32": store.crc32(data)}
    write_meta(d, doc)
