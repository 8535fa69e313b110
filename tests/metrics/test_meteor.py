"""METEOR 1.5, the jar flavor (nlg-eval / pycocoevalcap settings) against the golden values of
``tests/golden/meteor_mqr.json`` (made with the jar) and the MQR paper's Table 6 column."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pysynth.metrics.meteor import meteor

GOLDEN = json.loads((Path(__file__).resolve().parents[1] / "golden" / "meteor_mqr.json").read_text(encoding="utf-8"))


def _jar_available() -> bool:
    try:
        from pysynth.metrics.meteor import meteor_jar

        meteor_jar()
    except ImportError:
        return False
    return shutil.which("java") is not None


need_jar = pytest.mark.skipif(not _jar_available(), reason="Java or pycocoevalcap's meteor-1.5.jar missing")


def test_golden_reproduces_the_papers_column():
    full = GOLDEN["full_test"]
    assert full["n"] == 1690
    for system, paper in full["paper"].items():
        # the shared test set is 80 % of the paper's: within 0.25 points
        assert abs(100 * full["corpus"][system] - paper) < 0.25, system


@need_jar
@pytest.mark.parametrize("system", ["ill_formed", "lstm", "transformer"])
def test_jar_flavor_equals_the_golden_values(system):
    g = GOLDEN["systems"][system]
    m = meteor(g["hyps"], GOLDEN["refs"])
    assert m.score == g["corpus"] and m.segments == g["segments"]


def test_bad_input():
    with pytest.raises(ValueError, match="flavor"):
        meteor(["a"], ["a"], flavor="java-free")
    with pytest.raises(ValueError, match=r"refs\[0\]: 1 segments but hyps has 2"):
        meteor(["a", "b"], ["a"])
    with pytest.raises(TypeError, match=r"hyps\[1\]"):
        meteor(["a", 2], ["a", "b"])
    with pytest.raises(TypeError, match="one str"):
        meteor("a", ["a"])
    assert meteor([], []).score == 0.0


@need_jar
def test_texts_that_would_break_the_protocol():
    m = meteor(["a cat ||| on\nthe mat", "the dog"], [["the cat on the mat", "a dog"], ["a cat", "the dog"]])
    assert len(m.segments) == 2 and 0 < m.score <= 1 and m.segments[1] > 0.9
