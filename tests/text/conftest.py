"""Fixtures of the text-stage tests: backends, the gensim golden file."""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from pysynth import _dispatch

HERE = Path(__file__).resolve().parent

GOLDEN = HERE.parent / "golden" / "phrases_gensim.json.gz"
BACKENDS = ["python", "cpp"]


@pytest.fixture(params=BACKENDS)
def text_impl(request):
    """Run the test once per backend of the text stage (cpp skipped when not built)."""
    if request.param not in _dispatch.available("text"):
        pytest.skip("compiled extension not built")
    with _dispatch.force(request.param, "text"):
        yield request.param


@pytest.fixture(scope="session")
def phrases_golden():
    if not GOLDEN.exists():
        pytest.skip("tests/golden/phrases_gensim.json.gz missing (make_phrases_golden.py)")
    with gzip.open(GOLDEN, "rt", encoding="utf-8") as f:
        return json.load(f)


