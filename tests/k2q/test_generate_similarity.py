"""``pysynth k2q generate --min-similarity S`` (issue 26): questions whose cosine with their keyword query
is under S are dropped with their scores; rows get ``similarity`` and ``dropped``; the flag is checked."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytest.importorskip("onnxruntime")


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "pysynth", "k2q", "generate", *args], capture_output=True, text=True,
                          timeout=300)


def test_generate_min_similarity(tmp_path):
    inp = tmp_path / "kw.jsonl"
    inp.write_text('{"keywords": "capital australia"}\n{"keywords": "flat tire fix bike"}\n')
    base = [tmp_path / "a.jsonl", tmp_path / "b.jsonl"]
    r = _cli("--in", str(inp), "--out", str(base[0]), "--n", "4", "--backend", "onnx")
    assert r.returncode == 0, r.stderr
    r = _cli("--in", str(inp), "--out", str(base[1]), "--n", "4", "--backend", "onnx", "--min-similarity", "0.6")
    assert r.returncode == 0, r.stderr
    a = [json.loads(x) for x in base[0].read_text().splitlines()]
    b = [json.loads(x) for x in base[1].read_text().splitlines()]
    for x, y in zip(a, b):
        assert y["questions"] == [q for q in x["questions"] if q in y["questions"]]
        assert len(y["similarity"]) == len(y["questions"]) == len(y["scores"]) and min(y["similarity"], default=1) >= 0.6
        assert y["dropped"] == len(x["questions"]) - len(y["questions"])
    r = _cli("--in", str(inp), "--out", str(tmp_path / "c.jsonl"), "--min-similarity", "1.5")
    assert r.returncode == 2 and "--min-similarity" in r.stderr and "cosine" in r.stderr


def test_flags_are_in_the_cli_reference():
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "cli.md").read_text()
    assert doc.count("`--min-similarity S`") >= 4  # paraphrase generate, dup pairs, k2q generate, mqr rewrite
