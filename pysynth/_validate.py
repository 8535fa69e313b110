"""Input checks shared by the wrappers and the Python twins of every stage.

Each check raises what the compiled bindings raise for the same input (TypeError for a wrong
type, ValueError for a wrong value, unless a stage's binding says otherwise: ``wrong_type``),
with a message that names the argument and what it must be.
"""
from __future__ import annotations

import math
import operator
import os
import sys
from typing import TYPE_CHECKING, Any, List, Optional, Sequence, Tuple, Type

if TYPE_CHECKING:  # numpy is imported by the array checks only: a one-shot CLI run may never need it
    import numpy as np

__all__ = ["sequence", "strings", "workers", "int_range", "positive_int", "choice", "offsets", "ragged",
           "threads", "max_threads", "finite", "beam", "search_budget", "distinct_outputs", "clip",
           "clip_message",
           "MAX_BEAM", "MAX_HYPOTHESES", "MAX_CANDIDATES", "MAX_DEPTH",
           "MAX_CONTEXT_CHARS", "MAX_NO_REPEAT_NGRAM"]

_I32_MAX = 2**31 - 1

#: the widest beam any search accepts: beyond it memory, not quality, is what grows (issue 27: --beam 100000
#: asked for 18-67 GiB)
MAX_BEAM = 256
#: the largest ``no_repeat_ngram`` of a search (issue 26): longer than any output, so a larger value can only
#: be a typo (here, not in pysynth.decoding, so the serving layer's request fields can name it)
MAX_NO_REPEAT_NGRAM = 1024
#: hypotheses alive at once in one decoding batch (beam x batch size): ~16k keeps the decoder's per-step
#: logits (hypotheses x vocabulary, float32) near 2 GiB for a 30k vocabulary
MAX_HYPOTHESES = 16_384
#: the most candidates drawn per input (k2q's m keyword queries per question): each costs ~4 ints per input in
#: the sampler (m = 3e9 asked for 46 GiB: issue 27); the paper uses 20
MAX_CANDIDATES = 1_000
#: the deepest ranking a filter reads (k2q's SDM depth N); 1e20 overflowed C's integers (issue 27)
MAX_DEPTH = 100_000
#: characters of qagen contexts one request (the server) or one context (``qagen generate``) may hold: 200k-400k
#: characters are minutes of span passes (about 40 ms per 256-token window on one core; issue 27)
MAX_CONTEXT_CHARS = 100_000


def sequence(obj, name: str, what: str, hint: str = "") -> list:
    """``obj`` as a list; TypeError naming ``name`` and ``what`` it must hold when it is None,
    a single string (+ ``hint``) or not iterable."""
    if obj is None:
        raise TypeError(f"{name} must be a sequence of {what}, got None")
    if isinstance(obj, (str, bytes)):
        raise TypeError(f"{name} must be a sequence of {what}, not a single string{hint}")
    try:
        return list(obj)
    except TypeError:
        raise TypeError(f"{name} must be a sequence of {what}, got {type(obj).__name__}") from None


def strings(obj, name: str) -> List[str]:
    """``obj`` as a list of str; TypeError/ValueError naming ``name`` (and the index) otherwise.

    Matches ``pysynth::bind::to_strings`` in ``csrc/bindings/intake.cpp``: None, a single
    string, a non-sequence, a non-str element and a lone surrogate are refused.
    """
    items = sequence(obj, name, "str", "; wrap it in a list")
    for i, s in enumerate(items):
        if not isinstance(s, str):
            raise TypeError(f"{name}[{i}] must be str, got {type(s).__name__}")
        try:
            s.encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError(f"{name}[{i}] is not valid Unicode (lone surrogate); clean the text first") from None
    return items


def _numpy_bool(value) -> bool:
    # a numpy value exists only once numpy is imported, so this never imports it
    np = sys.modules.get("numpy")
    return np is not None and isinstance(value, np.bool_)


def _int(value, name: str, wrong_type: Type[Exception]) -> int:
    # bool is an int to Python but never a count; numpy integers are welcome
    if isinstance(value, bool) or _numpy_bool(value):
        raise wrong_type(f"{name} must be an int, got bool")
    try:
        return operator.index(value)
    except TypeError:
        raise wrong_type(f"{name} must be an int, got {type(value).__name__}") from None


def int_range(value, name: str, lo: Optional[int] = None, hi: Optional[int] = None, *,
              wrong_type: Type[Exception] = TypeError) -> int:
    """``value`` as an int in ``[lo, hi]`` (either bound may be None).

    Raises ``wrong_type`` (TypeError unless the stage's binding raises ValueError) for a bool
    or a non-integer, ValueError for a value out of range.
    """
    v = _int(value, name, wrong_type)
    if lo is not None and v < lo:
        raise ValueError(f"{name} must be >= {lo}, got {clip(v)}")
    if hi is not None and v > hi:
        raise ValueError(f"{name} must be <= {hi}, got {clip(v)}")
    return v


def positive_int(value, name: str, *, wrong_type: Type[Exception] = TypeError) -> int:
    """An int >= 1 that fits the compiled code's int32 (``k``, ``n``, ``vocab_size``...)."""
    return int_range(value, name, 1, _I32_MAX, wrong_type=wrong_type)


def workers(value, name: str = "workers", *, wrong_type: Type[Exception] = TypeError) -> int:
    """A thread count: an int >= 1, or -1 for all cores (returned as given)."""
    w = _int(value, name, wrong_type)
    if w != -1 and w < 1:
        raise ValueError(f"{name} must be >= 1 or -1 (all cores), got {clip(w)}")
    return w


def choice(value, name: str, choices: Sequence[str]) -> str:
    """``value`` when it is one of the strings ``choices``; ValueError listing them otherwise."""
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, choices))}; got {clip(value)}")
    return value


def offsets(off, total: int, name: str = "offsets", what: str = "len(ids)", hint: str = "") -> np.ndarray:
    """Check ragged-array offsets (row ``i`` is ``values[off[i]:off[i + 1]]``) and return them
    as contiguous int64.

    ``off`` must be 1-D with at least one entry, start at 0, never decrease and end at
    ``total`` (``what`` names it in the message; ``hint`` is appended).  ValueError names the
    first bad entry.  Convert the dtype before calling when the binding casts it.
    """
    import numpy as np

    a = np.asarray(off)
    if a.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {a.shape}{hint}")
    if a.shape[0] < 1:
        raise ValueError(f"{name} must have at least one entry (n + 1 for n rows, starting with 0){hint}")
    if a[0] != 0:
        raise ValueError(f"{name} must start at 0, got {name}[0] = {clip(a[0])}{hint}")
    if a.shape[0] > 1:
        bad = np.flatnonzero(a[1:] < a[:-1])
        if bad.size:
            i = int(bad[0])
            raise ValueError(f"{name} must be non-decreasing, but {name}[{i + 1}] = {clip(a[i + 1])} < "
                             f"{name}[{i}] = {clip(a[i])}{hint}")
    if a[-1] != total:
        raise ValueError(f"{name} must end at {what} = {total}, got {name}[-1] = {clip(a[-1])}{hint}")
    return np.ascontiguousarray(a, dtype=np.int64)


def _int_ids(x: Any, name: str) -> np.ndarray:
    import numpy as np

    a = np.asarray(x)
    if a.dtype == object or (a.size and a.dtype.kind not in "iu"):
        raise TypeError(f"{name} must hold integer ids, got dtype {a.dtype}")
    return a


def ragged(ids: Any, off: Any, name: str) -> Tuple[np.ndarray, np.ndarray]:
    """(int32 ids, int64 offsets) of rows of ids in [0, 2**31), given as flat ``ids`` with
    offsets ``off``, an object with ``.values`` / ``.offsets`` (``off`` None, e.g.
    :class:`pysynth.metrics.TokenIds`) or a list of id lists (``off`` None).

    TypeError for non-integer ids or a non-iterable; ValueError for a flat array without
    offsets, bad offsets (:func:`offsets`) and negative ids.
    """
    import numpy as np

    if off is None:
        if hasattr(ids, "values") and hasattr(ids, "offsets") and not isinstance(ids, (list, tuple, dict)):
            ids, off = ids.values, ids.offsets
        elif isinstance(ids, np.ndarray) and ids.ndim == 1 and ids.dtype != object:
            raise ValueError(f"{name} is a flat array: pass its offsets too (row i = ids[offsets[i]:offsets[i+1]]),"
                             " or pass a list of id lists")
        else:
            try:
                rows = [np.asarray(r) for r in ids]
            except TypeError:
                raise TypeError(f"{name} must be a list of id lists, or flat ids with offsets") from None
            for i, r in enumerate(rows):
                if r.ndim != 1 or (r.size and r.dtype.kind not in "iu"):
                    raise TypeError(f"{name}[{i}] must be a 1-D sequence of integer ids")
            lens = np.fromiter((r.size for r in rows), dtype=np.int64, count=len(rows))
            off = np.zeros(len(rows) + 1, dtype=np.int64)
            np.cumsum(lens, out=off[1:])
            ids = np.concatenate(rows).astype(np.int64) if rows else np.zeros(0, np.int64)
    ids = _int_ids(ids, name)
    if ids.ndim != 1:
        raise ValueError(f"{name} must be 1-D flat ids, got shape {ids.shape}")
    off = offsets(_int_ids(off, f"{name} offsets"), ids.shape[0], f"{name} offsets")
    if ids.size and (ids.min() < 0 or ids.max() > _I32_MAX):
        raise ValueError(f"{name} ids must lie in [0, 2**31 - 1]")
    return np.ascontiguousarray(ids, dtype=np.int32), off


# ------------------------------------------------------------------------- numeric settings of commands and services

def clip(value: Any, limit: int = 40) -> str:
    """``repr(value)`` cut to about ``limit`` characters, for echoing user input in a message
    (a 10,000-digit ``--workers`` must not come back whole)."""
    r = repr(value) if isinstance(value, (str, bytes)) else str(value)  # numpy's 1, not np.int64(1)
    return r if len(r) <= limit else f"{r[:limit]}... ({len(r):,} characters)"


def clip_message(message: str, limit: int = 120) -> str:
    """``message`` with every word longer than ``limit`` characters cut as :func:`clip` cuts a
    value: the last guard of the CLI's error line, for messages that echo a value without
    clipping it (a 3,000-digit ``--seed`` reaching a library check).  Paths and sentences pass."""
    if len(message) <= limit:
        return message
    return " ".join(w if len(w) <= limit else f"{w[:40]}... ({len(w):,} characters)" for w in message.split(" "))


def max_threads() -> int:
    """The most threads a runtime may be given: 4 x the cores (more only adds contention, and
    onnxruntime crashed creating a session with ~10^5 threads)."""
    return 4 * (os.cpu_count() or 1)


def threads(value, name: str = "threads", *, wrong_type: Type[Exception] = TypeError) -> int:
    """A runtime's thread count: 0 (the runtime's default), -1 (all cores, returned as the core
    count) or 1 .. :func:`max_threads`; ValueError naming ``name`` otherwise.

    Shared by every ``--threads`` flag (:mod:`pysynth.cli`) and the server's config.
    """
    v = _int(value, name, wrong_type)
    hi = max_threads()
    if v not in (-1, 0) and not 1 <= v <= hi:
        raise ValueError(f"{name} must be an integer in 1..{hi} (4 x the cores), 0 (the runtime's default) or -1 "
                         f"(all cores), got {clip(v)}")
    return (os.cpu_count() or 1) if v == -1 else v


def finite(value, name: str, lo: Optional[float] = None, hi: Optional[float] = None, *,
           lo_open: bool = False) -> float:
    """``value`` as a finite float in ``[lo, hi]`` (``(lo, hi]`` with ``lo_open``); NaN and
    infinities are refused (a NaN penalty silently rejected every candidate: issue 27)."""
    np = sys.modules.get("numpy")  # numpy numbers exist only once numpy is imported
    numbers = (int, float) + ((np.integer, np.floating) if np is not None else ())
    if isinstance(value, bool) or _numpy_bool(value) or not isinstance(value, numbers):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    try:
        v = float(value)
    except OverflowError:  # an int past the doubles (10**400)
        v = math.inf
    if not math.isfinite(v):
        raise ValueError(f"{name} must be a finite number, got {v}")
    if lo is not None and (v <= lo if lo_open else v < lo):
        raise ValueError(f"{name} must be {'>' if lo_open else '>='} {lo}, got {v}")
    if hi is not None and v > hi:
        raise ValueError(f"{name} must be <= {hi}, got {v}")
    return v


def beam(value, name: str = "beam", *, wrong_type: Type[Exception] = TypeError) -> int:
    """A beam size: 1 .. :data:`MAX_BEAM`."""
    return int_range(value, name, 1, MAX_BEAM, wrong_type=wrong_type)


def search_budget(beam_size: int, batch_size: Optional[int] = None, groups: Optional[int] = None, *,
                  names: Tuple[str, str, str] = ("beam", "batch_size", "groups")) -> None:
    """Refuse a search that cannot fit before any work starts.

    ``beam_size`` <= :data:`MAX_BEAM`; ``groups`` (diverse beam search; None when the search is
    not diverse) must divide ``beam_size`` (each group keeps ``beam / groups`` hypotheses, so
    ``groups`` <= ``beam``); ``beam_size x batch_size`` (the hypotheses decoded at once) <=
    :data:`MAX_HYPOTHESES`.  ``names`` spell the three settings in messages (``--beam``...).
    """
    nb, nbs, ng = names
    b = beam(beam_size, nb)
    if groups is not None:
        g = int_range(groups, ng, 1)
        if g > b or b % g:
            ok = g * max(1, b // g)
            raise ValueError(f"{ng} must divide {nb} for diverse beam search (the beam must be a multiple of groups: "
                             f"each of the {g} groups keeps {nb} / {ng} hypotheses), got {nb} {b}, {ng} {g}; e.g. "
                             f"{nb} {ok} or {ng} "
                             f"{max(d for d in range(1, b + 1) if b % d == 0 and d <= g)}")
    if batch_size is not None:
        n = int_range(batch_size, nbs, 1)
        if b * n > MAX_HYPOTHESES:
            raise ValueError(f"{nb} {b} x {nbs} {clip(n)} = {f'{b * n:,}' if b * n < 10**30 else clip(b * n)} hypotheses decoded at once, over the "
                             f"{MAX_HYPOTHESES:,} that fit in memory; use {nbs} <= {max(1, MAX_HYPOTHESES // b)}")


def distinct_outputs(outputs: Sequence[Tuple[str, Any]]) -> None:
    """Refuse two outputs that are the same file: ``outputs`` is ``[(name, path or None), ...]``;
    ``-`` (stdout) counts as one file too.  Paths are compared after resolving symlinks."""
    seen: dict = {}
    for name, path in outputs:
        if path is None:
            continue
        key = "-" if str(path) == "-" else os.path.realpath(os.fspath(path))
        if key in seen:
            where = "stdout" if key == "-" else repr(str(path))
            raise ValueError(f"{name} and {seen[key]} are the same file ({where}): one would overwrite the "
                             f"other; give {name} its own path")
        seen[key] = name
