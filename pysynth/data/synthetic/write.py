"""Streaming a generated corpus to a JSON Lines file (atomic, deterministic gzip bytes)."""
from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

from pysynth.data.synthetic.generate import _check_n, _check_seed, iter_corpus
from pysynth.data.synthetic.profile import PathLike, _as_profile
from pysynth.io import atomic_write


def _atomic_write(out: Path, write, gz: bool) -> None:
    def body(raw):
        if not gz:
            return write(raw)
        # mtime=0 and no file name: the same corpus gives the same bytes.  Level 1:
        # 3x faster than 6 on these rows (1.0 s vs 2.9 s per 1M), files 16% larger
        with gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=1, mtime=0) as f:
            write(f)

    atomic_write(out, body)


def write_corpus(path: PathLike, n: int, seed: int = 0, profile: Any = None) -> Path:
    """Stream a corpus to JSON Lines, ``{"id", "question", "cluster_id"}`` per row.

    Parameters
    ----------
    path : str or path
        Output file; ``.gz`` is gzip-compressed (deterministic bytes).  Written to a
        temporary file beside it and renamed, so a killed run leaves no partial file.
    n, seed, profile
        As :func:`generate_corpus`; the rows are its questions in order, ``id`` = 0..n-1,
        ``cluster_id`` = null for questions outside clusters.

    Returns
    -------
    Path
    """
    n = _check_n(n)
    seed = _check_seed(seed)
    prof = _as_profile(profile)
    out = Path(path)

    def write(f) -> None:
        i = 0
        for qs, cl in iter_corpus(n, seed, prof):
            # questions hold only [A-Za-z0-9 '?]: no JSON escaping needed
            lines = [
                f'{{"id": {i + k}, "question": "{q}", "cluster_id": {c if c >= 0 else "null"}}}\n'
                for k, (q, c) in enumerate(zip(qs, cl.tolist()))
            ]
            f.write("".join(lines).encode("ascii"))
            i += len(qs)

    _atomic_write(out, write, gz=out.suffix == ".gz")
    return out
