"""Cooperative cancellation of a running search, checked between decoding steps.

A caller that may give up on a search (``pysynth serve``: every request of a batch timed out)
runs it inside :func:`scope` with a ``stop()`` callable; the searches of
:mod:`pysynth.decoding.search` call :func:`checkpoint` once per step, which raises
:class:`Cancelled` when ``stop()`` is true. So a search outlives its callers by at most one step.
Outside a scope :func:`checkpoint` is one thread-local lookup and changes nothing: results are
byte-identical with or without it.
"""
from __future__ import annotations

import contextlib
import threading
from typing import Callable, Iterator, Optional

__all__ = ["Cancelled", "scope", "checkpoint"]

_local = threading.local()


class Cancelled(Exception):
    """The search was stopped between two steps: nobody waits for its result any more."""


@contextlib.contextmanager
def scope(stop: Optional[Callable[[], bool]]) -> Iterator[None]:
    """Run the searches of this thread inside the block under ``stop`` (None: never stop).

    Parameters
    ----------
    stop : callable returning True once the result is no longer wanted (called once per step;
        keep it cheap and thread-safe).
    """
    prev = getattr(_local, "stop", None)
    _local.stop = stop
    try:
        yield
    finally:
        _local.stop = prev


def checkpoint() -> None:
    """Raise :class:`Cancelled` when the current :func:`scope` says stop (a search calls this
    between steps)."""
    stop = getattr(_local, "stop", None)
    if stop is not None and stop():
        raise Cancelled("search stopped: its result is no longer wanted")
