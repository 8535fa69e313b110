"""A bounded run of the binding fuzzer (``fuzz/`` at the top of the repository, issue 17): every binding of
``pysynth._core`` against its pure-Python twin on a few hundred seeded random inputs each, every
target in its own process (a crash is reported with its input, not taken down with pytest).

The long runs (atheris, coverage-guided, ~10^5-10^6 inputs per binding) live in
``fuzz/run.py``; their numbers are in ``bench/RESULTS_hardening.md``.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pysynth._core")

RUN = Path(__file__).resolve().parent.parent / "fuzz" / "run.py"
sys.path.insert(0, str(RUN.parent))
import targets  # noqa: E402

RUNS = 250


@pytest.mark.parametrize("family", sorted(targets.families()))
def test_fuzz_family(family, tmp_path):
    p = subprocess.run([sys.executable, str(RUN), "--family", family, "--runs", str(RUNS), "--engine", "random",
                        "--nice", "0", "--seed", "2026", "--out", str(tmp_path)],
                       capture_output=True, text=True, timeout=300)
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert set(summary) == set(targets.families()[family])
    for name, st in summary.items():
        assert not st.get("crashes"), f"{name} crashed: {st.get('crash')}"
        assert st["mismatches"] == 0, f"{name}: {st['mismatches']} mismatches, e.g. {st['mismatch_files'][:1]}\n{p.stdout}"
        assert st["runs"] == RUNS and st["ok"] > 0, st
    assert p.returncode == 0, p.stdout + p.stderr


def test_every_binding_has_a_target():
    """Listed from the module itself: every stage's functions and the top-level ones (``build_info``
    is ``core.build_info``), so a new binding without a target fails here."""
    import types

    core = pytest.importorskip("pysynth._core")
    bindings = set()
    for name in (n for n in dir(core) if not n.startswith("_")):
        obj = getattr(core, name)
        if isinstance(obj, types.ModuleType):
            bindings |= {f"{name}.{n}" for n in dir(obj) if not n.startswith("_")}
        else:
            bindings.add(f"core.{name}")
    assert "core.build_info" in bindings and len(bindings) >= 36
    missing = bindings - set(targets.TARGETS)
    assert not missing, f"bindings without a fuzz target: {sorted(missing)}"


def test_src_reads_past_the_end_deterministically():
    a, b = targets.Src(b"\x01\x02"), targets.Src(b"\x01\x02")
    assert [a.int(0, 1000) for _ in range(20)] == [b.int(0, 1000) for _ in range(20)]
