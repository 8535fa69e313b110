"""Parity shim: run a callable under every available backend, assert identical results."""
from __future__ import annotations

import numpy as np

from pysynth import _dispatch


def _same(a, b, path="result"):
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        assert a.dtype == b.dtype and a.shape == b.shape, f"{path}: {a.dtype}{a.shape} vs {b.dtype}{b.shape}"
        assert np.array_equal(a, b, equal_nan=a.dtype.kind == "f"), f"{path}: arrays differ"
    elif isinstance(a, dict):
        assert a.keys() == b.keys(), f"{path}: keys differ"
        for k in a:
            _same(a[k], b[k], f"{path}[{k!r}]")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), f"{path}: lengths differ"
        for i, (x, y) in enumerate(zip(a, b)):
            _same(x, y, f"{path}[{i}]")
    elif hasattr(a, "__dict__") and not isinstance(a, type):
        _same(vars(a), vars(b), path)
    elif isinstance(a, float) and isinstance(b, float) and a != a and b != b:
        pass
    else:
        assert a == b and type(a) is type(b), f"{path}: {a!r} != {b!r}"


def run_all(stage: str, fn, *args, **kwargs):
    """Call ``fn(*args, **kwargs)`` with each backend of ``stage`` forced; assert the same
    result (or the same exception type) and return the result of the first backend."""
    outcomes = {}
    for name in sorted(_dispatch.available(stage)):
        with _dispatch.force(name, stage):
            try:
                outcomes[name] = ("ok", fn(*args, **kwargs))
            except Exception as exc:  # noqa: BLE001 - compared below
                outcomes[name] = ("err", exc)
    names = list(outcomes)
    first = outcomes[names[0]]
    for other in names[1:]:
        got = outcomes[other]
        if first[0] == "err" or got[0] == "err":
            assert first[0] == got[0] and type(first[1]) is type(got[1]), (
                f"{names[0]} -> {first[1]!r}; {other} -> {got[1]!r}"
            )
        else:
            _same(first[1], got[1])
    if first[0] == "err":
        raise first[1]
    return first[1]
