"""The checked-in stub pysynth/_core/text.pyi matches the compiled module, and every compiled
function has a twin in pysynth.text._reference with the same parameters and docstring.

Regenerate: PYTHONPATH=. pybind11-stubgen pysynth._core -o /tmp/stubs && cp /tmp/stubs/pysynth/_core/{text,__init__}.pyi pysynth/_core/
"""
import ast
import inspect
from pathlib import Path

import pytest

core = pytest.importorskip("pysynth._core")
STUB = Path(__file__).resolve().parents[2] / "pysynth" / "_core" / "text.pyi"


def _stub_functions():
    tree = ast.parse(STUB.read_text())
    return {n.name: [a.arg for a in n.args.args] for n in tree.body if isinstance(n, ast.FunctionDef)}


def test_stub_matches_compiled_module():
    stub = _stub_functions()
    mod = core.text
    compiled = {name for name in dir(mod) if not name.startswith("_") and callable(getattr(mod, name))}
    assert set(stub) == compiled, "stubs out of date: regenerate them (see module docstring)"
    for name, params in stub.items():
        sig = getattr(mod, name).__doc__.splitlines()[0]
        for p in params:
            assert f"{p}:" in sig, f"text.{name}: parameter {p} missing from the compiled signature"


def test_twins_same_signature_and_doc():
    from pysynth.text import _reference as twin

    for name, params in _stub_functions().items():
        fn = getattr(twin, name)
        assert list(inspect.signature(fn).parameters) == params
        assert fn.__doc__.strip() in getattr(core.text, name).__doc__


def test_init_stub_lists_text():
    init = (STUB.parent / "__init__.pyi").read_text()
    assert "from . import text" in init and "'text'" in init
