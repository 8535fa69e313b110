"""The shipped duplicate detector ``dup-minilm-wstb`` (Rücklé et al. 2019): registered, small,
encodes on onnxruntime without importing torch, ranks a duplicate above an unrelated question."""
from __future__ import annotations

import subprocess
import sys

import pytest

pytest.importorskip("onnxruntime")

from pysynth.models.registry import ASSETS, models  # noqa: E402


def test_registered_and_small():
    assert "dup-minilm-wstb" in models()
    d = ASSETS / "dup-minilm-wstb"
    assert sum(f.stat().st_size for f in d.iterdir()) <= 25 * 2**20
    assert "not an unsupervised reference" in (d / "README.md").read_text()


def test_encodes_without_torch():
    code = ("import sys, numpy as np, pysynth.dup as d\n"
            "x = d.encoder().encode(['how do I brew beer at home?', 'home brewing of beer', 'my bike tire is flat'])\n"
            "assert x.dtype == np.float32 and x.shape == (3, 384)\n"
            "assert np.allclose(np.linalg.norm(x, axis=1), 1, atol=1e-5)\n"
            "s = x @ x.T\n"
            "assert s[0, 1] > s[0, 2] + 0.3, s\n"
            "assert 'torch' not in sys.modules\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
