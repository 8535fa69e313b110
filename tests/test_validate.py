"""pysynth._validate: the shared argument checks of the wrappers and twins."""
from __future__ import annotations

import numpy as np
import pytest

from pysynth import _validate as v
from pysynth.metrics import TokenIds


def test_workers():
    assert v.workers(1) == 1 and v.workers(-1) == -1 and v.workers(np.int64(8)) == 8
    for bad in (0, -2):
        with pytest.raises(ValueError, match=r"workers must be >= 1 or -1 \(all cores\)"):
            v.workers(bad)
    for bad, kind in ((True, "bool"), (1.5, "float"), ("2", "str"), (None, "NoneType")):
        with pytest.raises(TypeError, match=f"workers must be an int, got {kind}"):
            v.workers(bad)
    with pytest.raises(ValueError, match="threads must be an int"):  # a stage whose binding raises ValueError
        v.workers("2", "threads", wrong_type=ValueError)


def test_int_ranges():
    assert v.int_range(5, "n", 0, 5) == 5 and v.int_range(-3, "n") == -3
    with pytest.raises(ValueError, match="n must be >= 1, got 0"):
        v.int_range(0, "n", 1)
    with pytest.raises(ValueError, match="n must be <= 3, got 4"):
        v.int_range(4, "n", 0, 3)
    with pytest.raises(TypeError, match="n must be an int, got float"):
        v.int_range(2.0, "n", 1)
    assert v.positive_int(2**31 - 1, "k") == 2**31 - 1
    with pytest.raises(ValueError, match="k must be <= 2147483647"):
        v.positive_int(2**31, "k")


def test_choice():
    assert v.choice("b", "mode", ("a", "b")) == "b"
    for bad in ("c", None, ["a"], 1):
        with pytest.raises(ValueError, match=r"mode must be one of 'a', 'b'; got"):
            v.choice(bad, "mode", ("a", "b"))


@pytest.mark.parametrize("off,total,match", [
    ([[0, 1]], 1, r"offsets must be 1-D, got shape \(1, 2\)"),
    ([], 0, r"offsets must have at least one entry"),
    ([1, 2], 2, r"offsets must start at 0, got offsets\[0\] = 1"),
    ([0, 3, 2, 4], 4, r"offsets must be non-decreasing, but offsets\[2\] = 2 < offsets\[1\] = 3"),
    ([0, 2], 3, r"offsets must end at len\(ids\) = 3, got offsets\[-1\] = 2"),
])
def test_offsets(off, total, match):
    with pytest.raises(ValueError, match=match):
        v.offsets(off, total)


def test_offsets_ok_and_hint():
    out = v.offsets(np.array([0, 0, 2], np.int32), 2)
    assert out.dtype == np.int64 and out.tolist() == [0, 0, 2]
    with pytest.raises(ValueError, match=r"q must end at len\(scores\) = 3, got q\[-1\] = 2; pass Q \+ 1"):
        v.offsets([0, 2], 3, "q", "len(scores)", "; pass Q + 1")


def test_ragged_forms():
    want = ([3, 1, 4, 1], [0, 2, 2, 4])
    for ids, off in (([[3, 1], [], [4, 1]], None), (np.array([3, 1, 4, 1]), [0, 2, 2, 4]),
                     (TokenIds(np.array([3, 1, 4, 1]), np.array([0, 2, 2, 4])), None)):
        i, o = v.ragged(ids, off, "docs")
        assert (i.dtype, o.dtype) == (np.int32, np.int64) and (i.tolist(), o.tolist()) == want
    assert [a.tolist() for a in v.ragged([], None, "docs")] == [[], [0]]
    with pytest.raises(ValueError, match="docs is a flat array: pass its offsets too"):
        v.ragged(np.array([1, 2]), None, "docs")
    with pytest.raises(TypeError, match=r"docs\[1\] must be a 1-D sequence of integer ids"):
        v.ragged([[1], [0.5]], None, "docs")
    with pytest.raises(TypeError, match="docs must hold integer ids, got dtype float64"):
        v.ragged(np.array([1.0]), [0, 1], "docs")
    with pytest.raises(TypeError, match="docs must be a list of id lists"):
        v.ragged(5, None, "docs")
    with pytest.raises(ValueError, match=r"docs offsets must end at len\(ids\) = 2"):
        v.ragged(np.array([1, 2]), [0, 1], "docs")
    with pytest.raises(ValueError, match=r"docs ids must lie in \[0, 2\*\*31 - 1\]"):
        v.ragged([[-1]], None, "docs")
