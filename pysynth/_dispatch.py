"""Backend selection for compiled functions and their pure-Python twins.

Every compiled function lives in a stage submodule of ``pysynth._core``
(``pysynth._core.metrics``, ``pysynth._core.ranking``, ...) and has a
pure-Python twin with the same name and signature in
``pysynth.<stage>._reference``.  The twin is the specification, the test
oracle and the fallback.

``PYSYNTH_IMPL`` picks the backend for every stage:

* ``auto`` (default): the compiled module when it is built, else the twin;
* ``cpp``: the compiled module; raises ``ImportError`` with an install hint
  when the extension is not built;
* ``python``: always the twin.

Only a missing module means "not built": any other import error surfaces.
"""
from __future__ import annotations

import contextlib
import importlib
import os
from types import ModuleType
from typing import Dict, Iterator, Optional

#: stage -> python twin module.  The compiled side is ``pysynth._core.<stage>``.
#: A stage's twin lives in ``pysynth/<stage>/_reference.py`` by convention.
_KNOWN = ("metrics", "ranking", "text", "sampling", "retrieval", "filtering", "decoding")
_HERE = os.path.dirname(os.path.abspath(__file__))
STAGES: Dict[str, str] = {
    s: f"pysynth.{s}._reference" for s in _KNOWN if os.path.exists(os.path.join(_HERE, s, "_reference.py"))
}

_VALID = ("auto", "cpp", "python")
_forced: Dict[str, str] = {}
_core: Optional[ModuleType] = None
_core_error: Optional[BaseException] = None
_core_loaded = False

INSTALL_HINT = (
    "the compiled extension pysynth._core is not built; reinstall with "
    "`pip install -e .` (needs a C++17 compiler and cmake), or set "
    "PYSYNTH_IMPL=python to use the pure-Python implementation"
)


def _load_core() -> Optional[ModuleType]:
    global _core, _core_error, _core_loaded
    if not _core_loaded:
        try:
            _core = importlib.import_module("pysynth._core")
        except ModuleNotFoundError as exc:  # not built: fall back
            if exc.name not in ("pysynth._core", "pysynth"):
                raise
            _core, _core_error = None, exc
        _core_loaded = True
    return _core


def requested(stage: str) -> str:
    """The implementation requested for ``stage`` (``auto``, ``cpp`` or ``python``)."""
    if stage in _forced:
        return _forced[stage]
    value = os.environ.get("PYSYNTH_IMPL", "auto").strip().lower() or "auto"
    if value not in _VALID:
        raise ValueError(
            f"PYSYNTH_IMPL={value!r} is not valid; use one of {', '.join(_VALID)}"
        )
    return value


def implementation(stage: str) -> str:
    """The implementation ``stage`` resolves to now: ``cpp`` or ``python``."""
    if stage not in STAGES:
        raise KeyError(f"unknown stage {stage!r}; known: {sorted(STAGES)}")
    want = requested(stage)
    if want == "python":
        return "python"
    core = _load_core()
    if core is None or not hasattr(core, stage):
        if want == "cpp":
            raise ImportError(f"PYSYNTH_IMPL=cpp requested for {stage!r} but {INSTALL_HINT}")
        return "python"
    return "cpp"


def backend(stage: str) -> ModuleType:
    """The module implementing ``stage``: ``pysynth._core.<stage>`` or its Python twin."""
    if implementation(stage) == "cpp":
        return getattr(_load_core(), stage)
    return importlib.import_module(STAGES[stage])


def available(stage: str) -> Dict[str, ModuleType]:
    """All backends of ``stage`` that can run here, keyed by name (used by the tests)."""
    out = {"python": importlib.import_module(STAGES[stage])}
    core = _load_core()
    if core is not None and hasattr(core, stage):
        out["cpp"] = getattr(core, stage)
    return out


@contextlib.contextmanager
def force(impl: str, stage: Optional[str] = None) -> Iterator[None]:
    """Temporarily force ``impl`` for one stage (or all stages)."""
    if impl not in _VALID:
        raise ValueError(f"impl={impl!r} is not valid; use one of {', '.join(_VALID)}")
    stages = [stage] if stage else list(STAGES)
    saved = dict(_forced)
    try:
        for s in stages:
            _forced[s] = impl
        yield
    finally:
        _forced.clear()
        _forced.update(saved)


def show_config() -> Dict[str, object]:
    """Report the backend each stage uses, and why; printed and returned."""
    core = _load_core()
    info: Dict[str, object] = {
        "PYSYNTH_IMPL": os.environ.get("PYSYNTH_IMPL", "auto"),
        "compiled": core is not None,
    }
    if core is not None:
        info["compiled_build"] = getattr(core, "build_info", lambda: {})()
    elif _core_error is not None:
        info["compiled_error"] = str(_core_error)
    for stage in STAGES:
        try:
            info[stage] = implementation(stage)
        except ImportError as exc:
            info[stage] = f"unavailable: {exc}"
    for key, value in info.items():
        print(f"{key:>16}: {value}")
    return info
