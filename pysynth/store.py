"""One versioned on-disk store for every saved object (corpora, phrase tables, indexes, search
collections, pipeline parts and run contexts, model directories).

A store is a directory::

    meta.json          written last: {"format", "format_version", "pysynth_version",
                                      "arrays": {name: {"dtype", "shape", "crc32"}},
                                      "files": {name: {"bytes", "crc32"}},
                                      "meta": {...},   # the owner's own fields
                                      "meta_crc32"}    # of this document (see meta_checksum)
    <name>.npy         one per array (``np.save``, no pickle), memory-mapped on load
    <name>             one per file (bytes: JSON, text, safetensors, ONNX, ...)

:func:`save` builds it in a temporary directory beside the target and swaps it in
(:func:`pysynth.io.atomic_dir`), so a reader sees the old store or the whole new one.
:func:`load` refuses, with a ValueError naming the path and the fix, a missing or corrupt
``meta.json``, another format, an unsupported version, and any missing, truncated or corrupt
member (dtype, shape, size and CRC-32 are checked).
"""
from __future__ import annotations

import json
import os
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Union

import numpy as np

from pysynth.io import atomic_dir

__all__ = ["META", "Stored", "save", "load", "read_meta", "crc32", "lines_to_bytes", "bytes_to_lines",
           "is_store", "meta_checksum"]

META = "meta.json"
PathLike = Union[str, "os.PathLike[str]"]


def crc32(data) -> int:
    """CRC-32 of an array's bytes (C order) or of a bytes-like object, in 64 MiB steps."""
    if isinstance(data, np.ndarray):
        data = np.ascontiguousarray(data).reshape(-1)  # 1-D: memoryview cannot cast (1, 0) shapes
    view = memoryview(data).cast("B")
    crc, step = 0, 1 << 26
    for i in range(0, len(view), step):
        crc = zlib.crc32(view[i: i + step], crc)
    return crc & 0xFFFFFFFF


_TOP_KEYS = {"format", "format_version", "pysynth_version", "arrays", "files", "meta", "meta_crc32"}


def meta_checksum(doc: Mapping[str, Any]) -> int:
    """CRC-32 of a ``meta.json`` document without its ``meta_crc32`` (canonical JSON): the
    members are checksummed in ``meta.json``, and this covers ``meta.json`` itself."""
    body = {k: v for k, v in doc.items() if k != "meta_crc32"}
    return crc32(json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode("ascii"))


def lines_to_bytes(items: Iterable[str], what: str = "item") -> bytes:
    """UTF-8, one item per line; ValueError for an item holding a newline."""
    out = []
    for s in items:
        if "\n" in s:
            raise ValueError(f"cannot save {what} {s!r}: it contains a newline")
        out.append(s + "\n")
    return "".join(out).encode("utf-8")


def bytes_to_lines(data: bytes, where: str = "file") -> List[str]:
    """Inverse of :func:`lines_to_bytes`."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{where} is corrupt: {exc}") from None
    if not text:
        return []
    if not text.endswith("\n"):
        raise ValueError(f"{where} is truncated (no final newline)")
    return text[:-1].split("\n")


@dataclass
class Stored:
    """A loaded store: its path, the owner's ``meta``, arrays (memory-mapped unless
    ``mmap=False``) and the names of its files (read with :meth:`read`)."""

    path: Path
    format: str
    format_version: int
    meta: Dict[str, Any]
    arrays: Dict[str, np.ndarray] = field(default_factory=dict)
    files: Dict[str, Dict[str, int]] = field(default_factory=dict)

    def read(self, name: str) -> bytes:
        """The bytes of file ``name``, checked against its size and CRC-32."""
        if name not in self.files:
            raise ValueError(f"{self.path}: no file {name!r} in this {self.format} store")
        p = self.path / name
        try:
            data = p.read_bytes()
        except OSError:
            raise ValueError(f"{self.path} is incomplete: {name} is missing") from None
        e = self.files[name]
        if len(data) != e["bytes"] or crc32(data) != e["crc32"]:
            raise ValueError(f"{p} is truncated or corrupt: its size/CRC-32 do not match {META}")
        return data

    def read_json(self, name: str) -> Any:
        try:
            return json.loads(self.read(name).decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
            raise ValueError(f"{self.path / name} is corrupt: {exc}") from None

    def read_lines(self, name: str) -> List[str]:
        return bytes_to_lines(self.read(name), str(self.path / name))


def format_of(path: PathLike) -> Optional[str]:
    """The ``format`` of the store at ``path`` (None when ``path`` holds no readable store)."""
    try:
        m = json.loads((Path(path) / META).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    return m.get("format") if isinstance(m, dict) and isinstance(m.get("format"), str) else None


def is_store(path: PathLike) -> bool:
    """True when ``path`` is a directory with a store's ``meta.json``."""
    p = Path(path) / META
    if not p.is_file():
        return False
    try:
        m = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return False
    return isinstance(m, dict) and "format" in m and "format_version" in m


def _save_npy(f, a: np.ndarray) -> None:
    """``np.save(f, a)`` (same bytes: a version 1.0 header, then the C-order data) with the data
    written by Python's ``write``: on a full disk ``np.save`` raises an OSError without errno
    ("2723 requested and 1520 written"); ``write`` raises ENOSPC, which callers can name."""
    np.lib.format.write_array_header_1_0(f, np.lib.format.header_data_from_array_1_0(a))
    f.write(memoryview(a.reshape(-1)).cast("B") if a.size else b"")


def save(path: PathLike, format: str, version: int, *, arrays: Optional[Mapping[str, np.ndarray]] = None,
         files: Optional[Mapping[str, bytes]] = None, meta: Optional[Mapping[str, Any]] = None) -> Path:
    """Write a store to directory ``path`` atomically (see the module doc).

    Parameters
    ----------
    path : directory to create or replace.  An existing directory that is not empty and not a
        pysynth store is refused (ValueError), so a wrong path never deletes a user's files.
    format, version : the format's name (``"pysynth.<module>.<Object>"``) and version.
    arrays : name -> array (saved as ``<name>.npy``, C order, native byte order).
    files : name -> bytes (saved as ``<name>``).
    meta : the owner's JSON-able fields (counts, parameters), stored under ``"meta"``.
    """
    import pysynth

    path = Path(path)
    if path.exists() and (not path.is_dir() or (any(path.iterdir()) and not is_store(path))):
        raise ValueError(f"{path} exists and is not a pysynth store: refusing to replace it; "
                         "choose a new or empty directory")
    arrays = dict(arrays or {})
    files = dict(files or {})
    clash = (set(arrays) & set(files)) | ({f"{a}.npy" for a in arrays} & set(files)) | ({META} & set(files))
    if clash:
        raise ValueError(f"store member names clash: {sorted(clash)}")
    entries: Dict[str, Any] = {}
    fentries: Dict[str, Any] = {}
    with atomic_dir(path) as tmp:
        for name, a in arrays.items():
            a = np.ascontiguousarray(a)
            if a.dtype == object:
                raise TypeError(f"array {name!r} has dtype object; stores hold numeric arrays only")
            with open(tmp / f"{name}.npy", "wb") as f:
                _save_npy(f, a)
                f.flush()
                os.fsync(f.fileno())
            entries[name] = {"dtype": a.dtype.str, "shape": list(a.shape), "crc32": crc32(a)}
        for name, data in files.items():
            data = memoryview(data).cast("B")  # not bytes(data): a second copy of a large member
            with open(tmp / name, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            fentries[name] = {"bytes": len(data), "crc32": crc32(data)}
        doc = {"format": format, "format_version": int(version), "pysynth_version": pysynth.__version__,
               "arrays": entries, "files": fentries, "meta": dict(meta or {})}
        doc["meta_crc32"] = meta_checksum(doc)
        with open(tmp / META, "w", encoding="utf-8") as f:  # last: its presence marks a whole store
            json.dump(doc, f, indent=1, sort_keys=True)
            f.flush()
            os.fsync(f.fileno())
    return path


def read_meta(path: PathLike, format: str, versions: Sequence[int] = (1,)) -> Dict[str, Any]:
    """The checked ``meta.json`` document of a store (see :func:`load` for the errors)."""
    d = Path(path)
    if not d.exists():
        raise FileNotFoundError(f"{d} does not exist")
    mp = d / META
    if not d.is_dir() or not mp.is_file():
        raise ValueError(f"{d} is not a saved {format}: {META} is missing (was the save interrupted?)")
    try:
        doc = json.loads(mp.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{mp} is corrupt: {exc}") from None
    except RecursionError:  # '[[[[...' deeper than the interpreter's stack
        raise ValueError(f"{mp} is corrupt: nested too deeply") from None
    got = doc.get("format") if isinstance(doc, dict) else None
    if got != format:
        raise ValueError(f"{mp} does not describe a {format} (format={got!r})")
    v = doc.get("format_version")
    if v not in tuple(versions):
        raise ValueError(f"{d} has {format} format version {v!r}; this pysynth reads version(s) "
                         f"{', '.join(map(str, versions))}: rebuild it with this version of pysynth")
    for key in ("arrays", "files", "meta"):
        if not isinstance(doc.get(key), dict):
            raise ValueError(f"{mp} is corrupt or incomplete: {key!r} must be an object")
    unknown = set(doc) - _TOP_KEYS
    if unknown:
        raise ValueError(f"{mp} is corrupt: unknown key(s) {sorted(unknown)}")
    # stores saved before meta_crc32 existed (e.g. the shipped models) lack it: still readable
    if "meta_crc32" in doc and doc["meta_crc32"] != meta_checksum(doc):
        raise ValueError(f"{mp} is corrupt: its content does not match its CRC-32 (meta_crc32)")
    return doc


def load(path: PathLike, format: str, versions: Sequence[int] = (1,), *, mmap: bool = True,
         verify: bool = True, expect: Optional[Mapping[str, tuple]] = None) -> Stored:
    """Open a store written by :func:`save`.

    Parameters
    ----------
    format, versions : the format expected and the versions this code reads.
    mmap : memory-map the arrays read-only (``np.load(mmap_mode="r")``).
    verify : check the CRC-32 of every array and file now (sizes, dtypes and shapes are always
        checked; :meth:`Stored.read` checks a file's CRC-32 again when it is read).
    expect : name -> ``(dtype, shape)`` the owner requires (``None`` in a shape: any length).

    Raises
    ------
    FileNotFoundError
        ``path`` does not exist.
    ValueError
        not a store of ``format``, another version, or a missing/truncated/corrupt member.
    """
    d = Path(path)
    doc = read_meta(d, format, versions)
    arrays: Dict[str, np.ndarray] = {}
    try:
        entries = {k: (np.dtype(e["dtype"]), tuple(int(x) for x in e["shape"]), int(e["crc32"]))
                   for k, e in doc["arrays"].items()}
        fentries = {k: {"bytes": int(e["bytes"]), "crc32": int(e["crc32"])} for k, e in doc["files"].items()}
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"{d / META} is corrupt or incomplete: {exc}") from None
    for name, (dt, shape) in (expect or {}).items():
        if name not in entries:
            raise ValueError(f"{d} is incomplete: array {name!r} is not in {META}")
        e_dt, e_shape, _ = entries[name]
        if e_dt != np.dtype(dt) or len(e_shape) != len(shape) or any(
                s is not None and s != es for s, es in zip(shape, e_shape)):
            raise ValueError(f"{d}: {name} is {e_dt}{list(e_shape)} in {META}, expected "
                             f"{np.dtype(dt)}{list(shape)}")
    for name, (dt, shape, crc) in entries.items():
        f = d / f"{name}.npy"
        if not f.is_file():
            raise ValueError(f"{d} is incomplete: {f.name} is missing")
        try:
            a = np.load(f, mmap_mode="r" if mmap else None, allow_pickle=False)
        except Exception as exc:  # noqa: BLE001 - numpy raises many types for broken files
            raise ValueError(f"{f} is truncated or corrupt: {exc}") from None
        if not isinstance(a, np.ndarray) or a.dtype != dt or a.shape != shape:
            raise ValueError(f"{f} holds {getattr(a, 'dtype', None)}{list(getattr(a, 'shape', []))}, expected "
                             f"{dt}{list(shape)} (truncated or from another store)")
        if verify and crc32(a) != crc:
            raise ValueError(f"{f} is corrupt: its CRC-32 does not match {META}")
        if not a.dtype.isnative:  # big-endian machine: native copy for the compiled code
            a = a.astype(a.dtype.newbyteorder("="))
        arrays[name] = a
    stored = Stored(d, format, int(doc["format_version"]), doc["meta"], arrays, fentries)
    for name, e in fentries.items():
        f = d / name
        if not f.is_file():
            raise ValueError(f"{d} is incomplete: {name} is missing")
        if f.stat().st_size != e["bytes"]:
            raise ValueError(f"{f} is truncated or corrupt: {f.stat().st_size} bytes, {META} says {e['bytes']}")
        if verify:  # every member is checked now, also those the owner reads later or never;
            # streamed, so a member of gigabytes (a faiss index) is never held in memory whole
            with open(f, "rb") as fh:
                crc = 0
                for block in iter(lambda: fh.read(1 << 24), b""):
                    crc = zlib.crc32(block, crc)
            if crc != e["crc32"]:
                raise ValueError(f"{f} is truncated or corrupt: its size/CRC-32 do not match {META}")
    return stored
