"""The one exception type of pysynth beyond the standard ones.

C++ throws ``std::invalid_argument`` (-> ``ValueError``), ``std::out_of_range``
(-> ``IndexError``), ``std::bad_alloc`` (-> ``MemoryError``), a type error
(-> ``TypeError``), or ``pysynth::Error`` (-> :class:`PysynthError`); the
translation happens in one place, ``csrc/bindings/errors.cpp``.
"""


class PysynthError(RuntimeError):
    """An internal error that is not the caller's fault (please report it)."""
