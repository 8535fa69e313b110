"""One signature for scores, pipeline runs and tables: what produced an output.

A signature is a JSON object ``{"format", "format_version", "config", "input", "versions"}``:
the output's format, the configuration (a dict of JSON values), the input's description and
fingerprint (:func:`fingerprint`, SHA-256), and the versions of pysynth and of the libraries
that shape the result.  Two runs with equal signatures produce the same bytes; a resumed run
checks its signature against the one it left (:mod:`pysynth.pipelines`).
"""
from __future__ import annotations

import hashlib
import json
from operator import itemgetter
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence

__all__ = ["signature", "fingerprint", "versions", "Fingerprint"]


#: scalar record types whose JSON encoding one ``json.dumps`` over the whole chunk reproduces
_SCALARS = frozenset({str, int, float, bool, type(None)})
#: records per hashed buffer: bounds the memory of one buffer, not the digest (a stream)
_CHUNK = 1 << 16
# the record encoding: compact-ish JSON as json.dumps writes it by default, without ASCII escapes
_DUMPS = json.JSONEncoder(ensure_ascii=False).encode
# one item per piece: "\x00" never occurs raw in JSON (a NUL in a string is written \u0000), so the
# pieces of a column of values are exactly the values' encodings when no container in it has two items
_COLUMN = json.JSONEncoder(ensure_ascii=False, separators=("\x00", ": ")).encode
# what json.dumps(ensure_ascii=False) escapes in a string: control characters, quote, backslash
_CONTROL_BYTES = bytes(range(32))
# scalars as ``[x]`` one after another: the item separator closes one record and opens the next
_SCALAR_RUN = json.JSONEncoder(ensure_ascii=False, separators=("][", ": ")).encode


class Fingerprint:
    """Incremental SHA-256 over JSON records: a part's record count, then each record as
    compact UTF-8 JSON (``ensure_ascii=False``).  Records fed one by one with :meth:`record`
    give the same digest however the stream was chunked.

    A list or dict record is written as it is: its brackets keep it apart from the next one
    (the encoding of the K2Q run signatures, which must not change).  A scalar record is
    written as the one-element list ``[x]``, so ``1, 2`` is not ``12``.

    :meth:`part` and :meth:`columns` write the same bytes as :meth:`record` one record at a time,
    but encode a whole chunk of records with one ``json.dumps`` (or one per column) and hash it
    with one ``update``: no Python code runs per record for scalars, fixed-width rows and dicts
    with the same keys (a one-item container inside is fine; bigger ones fall back to
    :meth:`record` per record).
    """

    def __init__(self) -> None:
        self._h = hashlib.sha256()

    def part(self, records: Sequence[Any]) -> "Fingerprint":
        """Add one part: its length, then its records."""
        self._h.update(json.dumps([len(records)]).encode())
        if not isinstance(records, (list, tuple)):
            records = list(records)
        for i in range(0, len(records), _CHUNK):
            self._chunk(records[i: i + _CHUNK])
        return self

    def columns(self, *cols: Sequence[Any]) -> "Fingerprint":
        """Add one part whose records are the rows ``[cols[0][i], cols[1][i], ...]``: the same
        digest as ``part(list(zip(*cols)))`` without building the rows."""
        n = len(cols[0]) if cols else 0
        if any(len(c) != n for c in cols):
            raise ValueError(f"cols: columns of unequal lengths {[len(c) for c in cols]}; give one value per row")
        self._h.update(json.dumps([n]).encode())
        for i in range(0, n, _CHUNK):
            sl = [c[i: i + _CHUNK] for c in cols]
            if self._rows(sl, len(sl[0])) is None:
                for r in zip(*sl):
                    self.record(r)
        return self

    def record(self, record: Any) -> "Fingerprint":
        """Add one record (see the class doc for the encoding)."""
        if not isinstance(record, (list, tuple, dict)):
            record = [record]
        self._h.update(_DUMPS(record).encode())
        return self

    def hexdigest(self) -> str:
        return self._h.hexdigest()

    def _chunk(self, recs: Sequence[Any]) -> None:
        """Hash a chunk of records: scalars with one dumps, fixed-width rows and dicts with the
        same keys column by column; anything else (mixed records, rows of unequal widths) one
        record at a time."""
        types = set(map(type, recs))
        if types == {str} and recs:
            # NUL marks the record boundaries; the text has no other control character (one C pass
            # over the bytes counts them), so JSON escapes only " and \ in it
            b = "\x00".join(recs).encode()
            if len(b) - len(b.translate(None, _CONTROL_BYTES)) == len(recs) - 1:
                if b'"' in b or b"\\" in b:
                    b = b.replace(b"\\", b"\\\\").replace(b'"', b'\\"')
                self._h.update(b'["' + b.replace(b"\x00", b'"]["') + b'"]')
                return
        if types <= _SCALARS:
            if recs:
                self._h.update(_SCALAR_RUN(list(recs)).encode())
            return
        if types <= {list, tuple}:
            widths = set(map(len, recs))
            if len(widths) == 1 and self._rows(list(zip(*recs)), len(recs)) is not None:
                return
        elif types == {dict}:
            keys = set(map(tuple, recs))
            if len(keys) == 1:
                (ks,) = keys
                if set(map(type, ks)) <= {str}:
                    cols = [list(map(itemgetter(k), recs)) for k in ks]
                    if self._rows(cols, len(recs), "{", "}", [_DUMPS(k) + ": " for k in ks]) is not None:
                        return
        for r in recs:
            self.record(r)

    def _rows(self, cols: list, n: int, open: str = "[", close: str = "]",
              prefixes: Optional[List[str]] = None) -> Optional[bool]:
        """Hash ``n`` records given as columns (rows ``[v0, v1, ...]``, or dicts ``{"k0": v0, ...}``
        with ``prefixes`` the encoded keys); ``None`` (nothing hashed) where a value is a container
        of two or more items, whose separators the column encoding would change."""
        if n == 0:
            return True
        if not cols:  # records ``[]`` or ``{}``
            self._h.update((open + close).encode() * n)
            return True
        pre = prefixes or [""] * len(cols)
        pieces = []
        for c in cols:
            p = _COLUMN(list(c))[1:-1].split("\x00")
            if len(p) != n:
                return None
            pieces.append(p)
        k = len(cols)
        # one record: open pre0 v0 ", " pre1 v1 ... close; the last separator also opens the next record
        head = open + pre[0]
        seq: list = [None] * (2 * k * n)
        for j, p in enumerate(pieces):
            seq[2 * j::2 * k] = p
            seq[2 * j + 1::2 * k] = [", " + pre[j + 1] if j < k - 1 else close + head] * n
        self._h.update((head + "".join(seq)[:-len(head)]).encode())
        return True


def fingerprint(*parts: Sequence[Any]) -> str:
    """SHA-256 hex digest of one or more sequences of JSON-able records (see :class:`Fingerprint`)."""
    fp = Fingerprint()
    for p in parts:
        fp.part(p)
    return fp.hexdigest()


def _numpy_version() -> str:
    """``numpy.__version__`` without importing numpy when nothing has yet (~70 ms of a one-shot
    ``pysynth score --metrics meteor``): the ``version = "..."`` line of numpy's ``version.py``
    (written when numpy is built; ``numpy.__version__`` is that value)."""
    import sys

    np = sys.modules.get("numpy")
    if np is None:
        try:
            import os
            from importlib.util import find_spec

            spec = find_spec("numpy")
            with open(os.path.join(os.path.dirname(spec.origin), "version.py"), encoding="utf-8") as f:
                for line in f:
                    if line.startswith("version = "):
                        v = line[len("version = "):].strip()
                        if len(v) > 2 and v[0] == v[-1] and v[0] in "'\"" and "\\" not in v:
                            return v[1:-1]
                        break
        except (OSError, AttributeError, TypeError, ValueError, ImportError):
            pass  # not the layout expected: ask numpy itself
        import numpy as np
    return np.__version__


def versions(*extra: str) -> Dict[str, str]:
    """``{"pysynth": ..., "numpy": ...}`` plus the version of each importable module in ``extra``."""
    import pysynth

    out = {"pysynth": pysynth.__version__, "numpy": _numpy_version()}
    for name in extra:
        try:
            import importlib

            out[name] = getattr(importlib.import_module(name), "__version__", "unknown")
        except ImportError:
            out[name] = "absent"
    return out


def signature(format: str, format_version: int, config: Mapping[str, Any], input: Mapping[str, Any],
              extra_versions: Iterable[str] = (), **more: Any) -> Dict[str, Any]:
    """The signature dict (key order fixed: format, format_version, config, input, versions,
    then ``more``)."""
    sig: Dict[str, Any] = {"format": format, "format_version": int(format_version), "config": dict(config),
                           "input": dict(input), "versions": versions(*extra_versions)}
    sig.update(more)
    return sig
