"""The checked-in stubs pysynth/_core/retrieval.pyi and filtering.pyi match the compiled module.

Regenerate: PYTHONPATH=. pybind11-stubgen pysynth._core -o /tmp/stubs-index and copy
retrieval.pyi and filtering.pyi into pysynth/_core/.
"""
from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

import pytest

core = pytest.importorskip("pysynth._core")
STUBS = Path(__file__).resolve().parent.parent.parent / "pysynth" / "_core"


def _functions(path: Path):
    tree = ast.parse(path.read_text())
    return {n.name: [a.arg for a in n.args.args] for n in tree.body if isinstance(n, ast.FunctionDef)}


@pytest.mark.parametrize("stage", ["retrieval", "filtering"])
def test_stub_and_twin_match_compiled(stage):
    stub = _functions(STUBS / f"{stage}.pyi")
    mod = getattr(core, stage)
    compiled = {n for n in dir(mod) if not n.startswith("_") and callable(getattr(mod, n))}
    assert set(stub) == compiled, "stubs out of date: regenerate them (see module docstring)"
    twin = importlib.import_module(f"pysynth.{stage}._reference")
    for name, params in stub.items():
        sig = getattr(mod, name).__doc__.splitlines()[0]
        for p in params:
            assert f"{p}:" in sig, f"{stage}.{name}: parameter {p} missing from the compiled signature"
        assert list(inspect.signature(getattr(twin, name)).parameters) == params, f"{stage}.{name}"
        # the compiled function carries the twin's docstring
        assert getattr(twin, name).__doc__.strip().splitlines()[0] in getattr(mod, name).__doc__
