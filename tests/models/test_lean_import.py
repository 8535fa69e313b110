"""`import pysynth` (and the torch-free parts of the model layer) must not import torch."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

CODE = """
import sys
import pysynth
import pysynth.models, pysynth.decoding, pysynth.export
from pysynth.models import Seq2SeqConfig, Vocab, tokenize
from pysynth.models.k2q import keywords_of, default_model_dir
from pysynth.decoding.search import beam_search, topk_from_parts
import pysynth.decoding._reference  # the numpy twin of pysynth._core.decoding imports torch lazily
heavy = [m for m in ("torch", "onnxruntime", "onnx", "safetensors") if m in sys.modules]
print(",".join(heavy))
"""


def test_import_pysynth_does_not_import_torch():
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    p = subprocess.run([sys.executable, "-c", CODE], cwd=str(ROOT), env=env, capture_output=True, text=True,
                       timeout=120, check=False)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "", f"heavy modules imported: {p.stdout.strip()}"
