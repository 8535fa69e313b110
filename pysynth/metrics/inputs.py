"""Inputs of every metric: :class:`TokenIds` (pre-tokenized segments), :func:`tokenize` and
the checks that turn hypotheses and reference streams into the backends' flat arrays."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import List, Sequence

import numpy as np

from pysynth import _validate as _v
from pysynth._dispatch import backend
from pysynth.metrics._reference import tokenize_intl


@dataclass(frozen=True)
class TokenIds:
    """Pre-tokenized segments as flat ids + offsets (segment i = ``values[offsets[i]:offsets[i+1]]``).

    Parameters
    ----------
    values : numpy.ndarray of int32
    offsets : numpy.ndarray of int64, length n + 1, starting at 0 and ending at len(values)
    """

    values: np.ndarray
    offsets: np.ndarray

    def __post_init__(self):
        v = np.asarray(self.values)
        o = np.asarray(self.offsets)
        if v.ndim != 1 or (v.size and not np.issubdtype(v.dtype, np.integer)):
            raise TypeError("TokenIds.values must be a 1-d integer array")
        if o.ndim != 1 or o.size < 1 or (o.size and not np.issubdtype(o.dtype, np.integer)):
            raise TypeError("TokenIds.offsets must be a 1-d integer array of length n + 1")
        if v.size and (v.min() < 0 or v.max() > np.iinfo(np.int32).max):
            raise ValueError("TokenIds.values must be ids in [0, 2**31)")
        _v.offsets(o, v.size, "TokenIds.offsets", "len(values)")
        object.__setattr__(self, "values", v.astype(np.int32, copy=False))
        object.__setattr__(self, "offsets", o.astype(np.int64, copy=False))

    @classmethod
    def from_lists(cls, rows: Sequence[Sequence[int]]) -> "TokenIds":
        """Build from a list of id lists."""
        lens = np.fromiter((len(r) for r in rows), dtype=np.int64, count=len(rows))
        offsets = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum(lens, out=offsets[1:])
        values = np.fromiter((t for r in rows for t in r), dtype=np.int64, count=int(offsets[-1]))
        return cls(values, offsets)

    def __len__(self) -> int:
        return int(self.offsets.shape[0] - 1)

    def row(self, i: int) -> List[int]:
        """Ids of row ``i`` (negative ``i`` counts from the end, as for a list)."""
        n = len(self)
        if not -n <= i < n:
            raise IndexError(f"row {i} is out of range for {n} rows")
        i %= n
        return self.values[self.offsets[i] : self.offsets[i + 1]].tolist()

    def take(self, index: np.ndarray) -> "TokenIds":
        """Rows ``index`` (in that order) as a new TokenIds."""
        lens = np.diff(self.offsets)[index]
        offsets = np.zeros(len(index) + 1, dtype=np.int64)
        np.cumsum(lens, out=offsets[1:])
        parts = [self.values[self.offsets[i] : self.offsets[i + 1]] for i in index]
        values = np.concatenate(parts) if parts else np.zeros(0, np.int32)
        return TokenIds(values, offsets)




def _check_workers(workers) -> int:
    return _v.workers(workers)


def _check_hyps(hyps, name: str = "hyps") -> int:
    if hyps is None:
        raise TypeError(f"{name} must be a list of str or a TokenIds, got None")
    if isinstance(hyps, (str, bytes)):
        raise TypeError(f"{name} must be a list of str, not a single string; wrap it in a list")
    if not isinstance(hyps, TokenIds) and not hasattr(hyps, "__len__"):
        raise TypeError(f"{name} must be a list of str or a TokenIds, got {type(hyps).__name__}")
    n = len(hyps)
    if n == 0:
        raise ValueError(f"{name} is empty: pass at least one segment")
    return n


def _ref_streams(refs, n: int) -> list:
    """Normalise ``refs`` to a list of streams, each aligned with the n hypotheses."""
    if refs is None:
        raise TypeError("refs must be a list of str or a list of reference streams, got None")
    if isinstance(refs, (str, bytes)):
        raise TypeError("refs must be a list of str, not a single string; wrap it in a list")
    if isinstance(refs, TokenIds):
        streams = [refs]
    else:
        try:
            if not isinstance(refs, (list, tuple)):
                refs = list(refs)
        except TypeError:
            raise TypeError(f"refs must be a list of str or of reference streams, got {type(refs).__name__}") from None
        if not refs:
            raise ValueError("refs is empty: pass one reference per hypothesis (or reference streams)")
        first = refs[0]
        if isinstance(first, (list, tuple, TokenIds)):
            streams = refs
        else:
            streams = [refs]
    for k, s in enumerate(streams):
        if not isinstance(s, (list, tuple, TokenIds)):
            raise TypeError(f"refs[{k}] must be a reference stream (list of str), got {type(s).__name__}")
        if len(s) != n:
            raise ValueError(
                f"reference stream {k} has {len(s)} segments but hyps has {n}; "
                "every stream must hold one reference per hypothesis"
            )
    return streams


def _flatten(streams: list, n: int):
    """Flat references + offsets (hypothesis i owns rows i*R .. i*R+R-1)."""
    r = len(streams)
    offsets = np.arange(0, n * r + 1, r, dtype=np.int64)
    if r == 1:
        return streams[0], offsets
    if isinstance(streams[0], TokenIds):
        if not all(isinstance(s, TokenIds) for s in streams):
            raise TypeError("refs: mix of TokenIds and str streams; use one kind")
        rows = [s.row(i) for i in range(n) for s in streams]
        return TokenIds.from_lists(rows), offsets
    return [s[i] for i in range(n) for s in streams], offsets


_REF_INDEX = re.compile(r"^refs\[(\d+)\]")


def _renamed(exc: Exception, rename) -> Exception:
    """The backend names a flattened reference ``refs[k]``; say which stream/row it was."""
    m = _REF_INDEX.match(str(exc))
    if not m:
        return exc
    new = type(exc)(rename(int(m.group(1))) + str(exc)[m.end():])
    new.__cause__ = exc
    return new


def _stats(fn, hyps, flat, offsets, n_streams, *args, ref_name=None):
    """Call a backend statistics function; errors about references name the caller's argument."""
    try:
        return fn(hyps, flat, offsets, *args)
    except (TypeError, ValueError) as exc:
        if ref_name is not None:
            raise _renamed(exc, ref_name) from None
        if n_streams > 1:
            raise _renamed(exc, lambda k: f"refs[{k % n_streams}][{k // n_streams}]") from None
        raise


def _lower(x, name):
    if isinstance(x, TokenIds):
        raise ValueError(f"lowercase=True needs strings; {name} holds token ids")
    return [s.lower() if isinstance(s, str) else s for s in x]


def tokenize(texts: Sequence[str], tokenizer: str = "13a", workers: int = 1) -> List[List[str]]:
    """Tokens of each text, as the reference tools see them.

    Parameters
    ----------
    texts : list of str
    tokenizer : {"13a", "intl", "none", "rouge", "rouge-stem"}
        sacrebleu's ``13a`` and ``intl``; ``none`` = ``str.split()``; ``rouge`` and
        ``rouge-stem`` = rouge-score's tokenizer without / with its Porter stemmer.
    workers : int
        Threads for the compiled path (``-1``: all cores).

    Examples
    --------
    >>> tokenize(["Hello, world!"], "13a")
    [['Hello', ',', 'world', '!']]
    """
    workers = _check_workers(workers)
    if tokenizer == "intl":
        return [tokenize_intl(t).split() for t in _strings_checked(texts, "texts")]
    return backend("metrics").tokenize(texts, tokenizer, workers)


def _strings_checked(texts, name):
    from pysynth.metrics._reference import _strings

    return _strings(texts, name)
