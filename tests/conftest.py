"""Shared test fixtures: backend parametrization, golden tables, shared data."""
from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import pytest

from pysynth import _dispatch

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = Path(__file__).resolve().parent / "golden"
SHARED_DATA = Path(os.environ.get("PYSYNTH_SHARED_DATA", ROOT.parent / "shared" / "data"))


def _impls(stage: str):
    return sorted(_dispatch.available(stage))


@pytest.fixture(params=["python", "cpp"])
def impl(request):
    """Run the test once per backend (cpp skipped when the extension is not built)."""
    if request.param not in _impls("metrics"):
        pytest.skip("compiled extension not built")
    with _dispatch.force(request.param):
        yield request.param


@pytest.fixture(scope="session")
def golden():
    path = GOLDEN / "metrics_golden.json.gz"
    if not path.exists():
        pytest.skip("golden tables missing")
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return json.load(f)


@pytest.fixture(scope="session")
def shared_data():
    if not SHARED_DATA.is_dir():
        pytest.skip(f"shared data not found at {SHARED_DATA}")
    return SHARED_DATA
