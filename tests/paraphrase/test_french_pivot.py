"""The shipped English<->French pivot (en-fr-copynet-small, fr-en-copynet-small): onnxruntime and
torch give the same pivots and paraphrases, the round trip, the default CLI."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from pysynth.paraphrase import ParaphraseConfig, Paraphraser, round_trip

QS = ["How many animals can be seen?", "What color is the keyboard?", "Is this a grocery store?"]


@pytest.fixture(scope="module")
def onnx_run():
    return Paraphraser(ParaphraseConfig(threads=1)).run(QS)


def test_pivots_and_paraphrases(onnx_run):
    for q, r in zip(QS, onnx_run):
        assert r["counts"]["pivots"] == 16 and r["paraphrases"], (q, r["reason"])
        assert all(p.endswith("?") and p[0].isupper() for p in r["paraphrases"])
        assert all(p["pivot"] != q for p in r["pivots"])


def test_torch_equals_onnxruntime(onnx_run):
    pytest.importorskip("torch")
    got = Paraphraser(ParaphraseConfig(backend="torch", threads=1)).run(QS)
    assert [[p["pivot"] for p in r["pivots"]] for r in got] == [[p["pivot"] for p in r["pivots"]] for r in onnx_run]
    assert [r["paraphrases"] for r in got] == [r["paraphrases"] for r in onnx_run]


def test_round_trip():
    out = round_trip(QS + ["zzqx qqzv"], beam=2)
    assert len(out) == 4 and out[3] == "zzqx qqzv"  # unreadable input comes back unchanged
    assert all(o and o[0].isupper() for o in out[:3])


def test_default_cli(tmp_path):
    inp = tmp_path / "q.jsonl"
    inp.write_text("".join(json.dumps({"question": q, "answer": "x"}) + "\n" for q in QS[:2]))
    r = subprocess.run([sys.executable, "-m", "pysynth", "paraphrase", "--in", str(inp), "--out",
                        str(tmp_path / "o.jsonl"), "--beams", "8", "--flat"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    rows = [json.loads(x) for x in (tmp_path / "o.jsonl").read_text().splitlines()]
    assert len(rows) == 2 + json.loads(r.stdout)["paraphrases"] and all(x["answer"] == "x" for x in rows)
