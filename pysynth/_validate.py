"""Input checks shared by the Python twins; they raise the same messages as the bindings."""
from __future__ import annotations

from typing import List


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

    Matches ``pysynth::bind::to_strings`` in ``csrc/bindings/metrics.cpp``: None, a single
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


def workers(value, name: str = "workers") -> int:
    """A thread count: an int >= 1, or -1 for all cores (returned as given)."""
    import operator

    if isinstance(value, bool):
        raise TypeError(f"{name} must be an int, got bool")
    try:
        w = operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be an int, got {type(value).__name__}") from None
    if w != -1 and w < 1:
        raise ValueError(f"{name} must be >= 1 or -1 (all cores), got {w}")
    return w
