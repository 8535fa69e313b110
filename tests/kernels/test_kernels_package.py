"""The kernels package stays light: importing it pulls in neither torch nor triton."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest


def test_import_does_not_pull_torch_or_triton(kernels_pkg):
    code = (
        f"import sys; import {kernels_pkg.__name__}; "
        "print(sorted(m for m, v in sys.modules.items()"
        " if v is not None and m.split('.')[0] in ('torch', 'triton')))"
    )
    repo = Path(kernels_pkg.__file__).resolve().parents[1]
    proc = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True,
                          text=True, timeout=120, cwd=str(repo))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]", f"import {kernels_pkg.__name__} pulled in {proc.stdout}"


def test_public_functions_are_lazy_attributes(kernels_pkg):
    pytest.importorskip("torch", reason="torch is not installed (pip install '.[gpu]')")
    assert kernels_pkg.copy_attention_step.__name__ == "copy_attention_step"
    assert kernels_pkg.diverse_beam_step.__name__ == "diverse_beam_step"
    with pytest.raises(AttributeError):
        _ = kernels_pkg.no_such_op
