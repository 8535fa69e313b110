"""Lean imports: `import pysynth` and the torch-free model layer pull no torch; onnxruntime
decoding (`pysynth.decoding.ort`) runs end to end without torch."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

CODE = """
import sys
import pysynth
import pysynth.models, pysynth.decoding, pysynth.export
from pysynth.models import Seq2SeqConfig, Vocab, tokenize
from pysynth.models.registry import resolve, architecture
from pysynth.models.io import read_config_vocab
from pysynth.k2q.neural import keywords_of, default_model_dir
from pysynth.decoding.search import beam_search, sample_search, topk_from_parts
import pysynth.decoding._reference  # the numpy twin of pysynth._core.decoding imports torch lazily
read_config_vocab(default_model_dir())
heavy = [m for m in ("torch", "onnxruntime", "onnx", "safetensors", "transformers") if m in sys.modules]
print(",".join(heavy))
"""

ORT_CODE = """
import sys
import pysynth.decoding.ort
from pysynth.decoding import search as S
from pysynth.decoding.ort import OrtBackend
from pysynth.models.registry import resolve
from pysynth.models.io import read_config_vocab
from pysynth.models.generate import Generator
d = resolve("k2q-copynet-small").path
be = OrtBackend(d / "onnx", device="cpu", threads=1)
g = Generator.load("k2q-copynet-small", backend="onnx")
out = g.generate(["capital france"], beam=3, n=1)
out += g.generate(["capital france"], method="sample", n=2, top_k=5, seed=1)
assert out[0].texts, out
print(",".join(m for m in ("torch", "transformers") if m in sys.modules))
"""


def _run(code):
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    p = subprocess.run([sys.executable, "-c", code], cwd=str(ROOT), env=env, capture_output=True, text=True,
                       timeout=120, check=False)
    assert p.returncode == 0, p.stderr
    return p.stdout.strip()


def test_import_pysynth_does_not_import_torch():
    got = _run(CODE)
    assert got == "", f"heavy modules imported: {got}"


def test_onnxruntime_decoding_does_not_import_torch():
    pytest.importorskip("onnxruntime")
    got = _run(ORT_CODE)
    assert got == "", f"heavy modules imported by an onnxruntime decode: {got}"
