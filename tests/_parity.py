"""The one backend-parity helper of the test suite.

Every compiled function has a pure-Python twin (:mod:`pysynth._dispatch`).  The twin is the
specification, so both helpers run every backend, assert that all agree exactly with the
twin, and return the twin's result (or raise the twin's exception, so ``pytest.raises(...,
match=...)`` sees the specification's message):

* :func:`call_all` calls a function of each backend module (``pysynth._core.<stage>`` and
  ``pysynth.<stage>._reference``) directly;
* :func:`run_all` calls a public function once per backend, forced with
  :func:`pysynth._dispatch.force`.

"Agree" (:func:`assert_same`) means: the same exception type, or results of the same type,
dtype and shape whose floats are equal bit for bit (0.0 is not -0.0; NaN matches NaN).
"""
from __future__ import annotations

import math
from typing import Any, Callable, Dict, Tuple

import numpy as np

from pysynth import _dispatch

__all__ = ["backends", "call_all", "run_all", "assert_same"]


def backends(stage: str) -> Dict[str, Any]:
    """The backend modules of ``stage`` that can run here, by name (``python`` always)."""
    return _dispatch.available(stage)


def _same_floats(a: np.ndarray, b: np.ndarray) -> bool:
    nan = np.isnan(a)
    return bool(np.array_equal(nan, np.isnan(b)) and np.array_equal(a[~nan], b[~nan])
                and np.array_equal(np.signbit(a[~nan]), np.signbit(b[~nan])))


def assert_same(a, b, path: str = "result") -> None:
    """Assert that ``a`` and ``b`` are exactly the same result (see the module doc)."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        assert isinstance(a, np.ndarray) and isinstance(b, np.ndarray), f"{path}: {type(a)} vs {type(b)}"
        assert a.dtype == b.dtype and a.shape == b.shape, f"{path}: {a.dtype}{a.shape} vs {b.dtype}{b.shape}"
        if a.dtype.kind in "fc":
            assert _same_floats(np.asarray(a), np.asarray(b)), f"{path}: arrays differ"
        else:
            assert np.array_equal(a, b), f"{path}: arrays differ"
        return
    assert type(a) is type(b), f"{path}: {type(a).__name__} vs {type(b).__name__} ({a!r} vs {b!r})"
    if isinstance(a, dict):
        assert a.keys() == b.keys(), f"{path}: keys differ: {sorted(map(str, a))} vs {sorted(map(str, b))}"
        for k in a:
            assert_same(a[k], b[k], f"{path}[{k!r}]")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), f"{path}: lengths differ ({len(a)} vs {len(b)})"
        for i, (x, y) in enumerate(zip(a, b)):
            assert_same(x, y, f"{path}[{i}]")
    elif isinstance(a, (float, np.floating)):
        same = (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
        assert same, f"{path}: {a!r} != {b!r}"
    elif hasattr(a, "__dict__") and not isinstance(a, type):
        assert_same(vars(a), vars(b), path)
    else:
        assert a == b, f"{path}: {a!r} != {b!r}"


def _compare(outcomes: Dict[str, Tuple[str, Any]], what: str):
    ref = outcomes["python"]
    for name, got in outcomes.items():
        if got[0] == "err" or ref[0] == "err":
            assert got[0] == ref[0] and type(got[1]) is type(ref[1]), (
                f"{what}: {name} -> {got[1]!r}; python -> {ref[1]!r}")
        else:
            assert_same(got[1], ref[1], f"{what}[{name}]")
    if ref[0] == "err":
        raise ref[1]
    return ref[1]


def _outcome(fn: Callable, *args, **kwargs) -> Tuple[str, Any]:
    try:
        return "ok", fn(*args, **kwargs)
    except Exception as exc:  # noqa: BLE001 - compared by _compare
        return "err", exc


def call_all(stage: str, func: str, *args, **kwargs):
    """``<backend>.func(*args, **kwargs)`` for every backend module of ``stage``; assert that
    all agree with the twin; return its result (or raise its exception)."""
    return _compare({name: _outcome(getattr(mod, func), *args, **kwargs)
                     for name, mod in backends(stage).items()}, f"{stage}.{func}")


def run_all(stage: str, fn: Callable, *args, **kwargs):
    """``fn(*args, **kwargs)`` with each backend of ``stage`` forced; assert that all agree
    with the twin; return its result (or raise its exception)."""
    outcomes = {}
    for name in backends(stage):
        with _dispatch.force(name, stage):
            outcomes[name] = _outcome(fn, *args, **kwargs)
    return _compare(outcomes, getattr(fn, "__qualname__", repr(fn)))
