"""The checked-in stub pysynth/_core/sampling.pyi matches the compiled module and the twin
(same check as tests/test_stubs.py, which lists the other stages), and the stage is lean."""
from __future__ import annotations

import ast
import inspect
import subprocess
import sys
from pathlib import Path

import pytest

STUB = Path(__file__).resolve().parents[2] / "pysynth" / "_core" / "sampling.pyi"


def _stub_functions():
    tree = ast.parse(STUB.read_text())
    return {n.name: [a.arg for a in n.args.args] for n in tree.body if isinstance(n, ast.FunctionDef)}


def test_stub_matches_compiled_module():
    core = pytest.importorskip("pysynth._core")
    mod = core.sampling
    stub = _stub_functions()
    compiled = {name for name in dir(mod) if not name.startswith("_") and callable(getattr(mod, name))}
    assert set(stub) == compiled, "stubs out of date: regenerate them (see tests/test_stubs.py)"
    for name, params in stub.items():
        sig = getattr(mod, name).__doc__.splitlines()[0]
        for p in params:
            assert f"{p}:" in sig, f"sampling.{name}: parameter {p} missing from the compiled signature"


def test_twin_has_same_names_and_signatures():
    from pysynth.sampling import _reference

    for name, params in _stub_functions().items():
        assert list(inspect.signature(getattr(_reference, name)).parameters) == params


def test_shared_docstrings():
    core = pytest.importorskip("pysynth._core")
    from pysynth.sampling import _reference

    assert _reference.generate.__doc__.strip().splitlines()[0] in core.sampling.generate.__doc__


def test_lean_import():
    code = ("import sys, pysynth.sampling; "
            "print(any(m in sys.modules for m in ('torch', 'triton', 'scipy', 'pandas')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
