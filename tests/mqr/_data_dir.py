"""The shared data folder for the MQR tests (skipped cleanly without it)."""
import os
from pathlib import Path

import pytest

DATA = Path(os.environ.get("PYSYNTH_DATA", Path(__file__).resolve().parents[3] / "shared" / "data"))
need_data = pytest.mark.skipif(not (DATA / "mqr").is_dir(), reason="shared data not present")
