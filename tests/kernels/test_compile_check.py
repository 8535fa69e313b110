"""Every kernel, as launched by its launcher, compiles for sm_90 (H100/H200) without a GPU.

The interpreter tests check the numbers; this checks what only the compiler checks. It runs
``_compile_check.py`` in a subprocess because TRITON_INTERPRET is read when a kernel is
defined, and this process has it set to 1.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch", reason="torch is not installed (pip install '.[gpu]')")


def test_kernels_compile_for_sm90(kernels_pkg, device):
    # other targets by hand: python tests/kernels/_compile_check.py kernels 80
    sm = 90
    repo = Path(kernels_pkg.__file__).resolve().parents[1]
    env = dict(os.environ, TRITON_INTERPRET="0", CUDA_VISIBLE_DEVICES="")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(repo), env.get("PYTHONPATH")]))
    script = Path(__file__).with_name("_compile_check.py")
    proc = subprocess.run([sys.executable, str(script), kernels_pkg.__name__, str(sm)],
                          check=False, capture_output=True, text=True, timeout=600, env=env,
                          cwd=str(repo))
    if proc.returncode == 77:
        pytest.skip(proc.stdout.strip())
    assert proc.returncode == 0, proc.stdout + proc.stderr
