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
from typing import Any, Dict, Iterable, Mapping, Sequence

__all__ = ["signature", "fingerprint", "versions", "Fingerprint"]


class Fingerprint:
    """Incremental SHA-256 over JSON records: a part's record count, then each record as
    compact UTF-8 JSON (``ensure_ascii=False``).  Records fed one by one with :meth:`record`
    give the same digest however the stream was chunked.

    A list or dict record is written as it is: its brackets keep it apart from the next one
    (the encoding of the K2Q run signatures, which must not change).  A scalar record is
    written as the one-element list ``[x]``, so ``1, 2`` is not ``12``.
    """

    def __init__(self) -> None:
        self._h = hashlib.sha256()

    def part(self, records: Sequence[Any]) -> "Fingerprint":
        """Add one part: its length, then its records."""
        self._h.update(json.dumps([len(records)]).encode())
        for r in records:
            self.record(r)
        return self

    def record(self, record: Any) -> "Fingerprint":
        """Add one record (see the class doc for the encoding)."""
        if not isinstance(record, (list, tuple, dict)):
            record = [record]
        self._h.update(json.dumps(record, ensure_ascii=False).encode())
        return self

    def hexdigest(self) -> str:
        return self._h.hexdigest()


def fingerprint(*parts: Sequence[Any]) -> str:
    """SHA-256 hex digest of one or more sequences of JSON-able records (see :class:`Fingerprint`)."""
    fp = Fingerprint()
    for p in parts:
        fp.part(p)
    return fp.hexdigest()


def versions(*extra: str) -> Dict[str, str]:
    """``{"pysynth": ..., "numpy": ...}`` plus the version of each importable module in ``extra``."""
    import numpy as np

    import pysynth

    out = {"pysynth": pysynth.__version__, "numpy": np.__version__}
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
