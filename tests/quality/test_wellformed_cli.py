"""``pysynth quality wellformed`` (issue 28): plain text in (one question per line), like ``mqr
rewrite``; the progress path scores in chunks with the same bytes as one call."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytest.importorskip("onnxruntime")

QUESTIONS = ["how do i fix a flat tire?", "flat tire fix", "capital of australia", "what is the capital of france?"]


def _run(*args, stdin=None):
    return subprocess.run([sys.executable, "-m", "pysynth", "quality", "wellformed", *args], capture_output=True,
                          text=True, timeout=120, input=stdin)


def test_plain_text_and_rows_give_the_same_probabilities(tmp_path):
    txt = tmp_path / "q.txt"
    txt.write_text("\n".join(QUESTIONS) + "\n")
    rows = tmp_path / "q.jsonl"
    rows.write_text("".join(json.dumps({"question": q, "id": i}) + "\n" for i, q in enumerate(QUESTIONS)))
    a = _run("--in", str(txt), "--out", "-")
    b = _run("--in", str(rows), "--out", "-")
    c = _run("--in", "-", "--out", "-", stdin="\n".join(QUESTIONS) + "\n")
    assert a.returncode == b.returncode == c.returncode == 0, a.stderr + b.stderr + c.stderr
    plain = [json.loads(x) for x in a.stdout.splitlines()]
    assert [r["question"] for r in plain] == QUESTIONS and set(plain[0]) == {"question", "wellformed"}
    assert [r["wellformed"] for r in plain] == [json.loads(x)["wellformed"] for x in b.stdout.splitlines()]
    assert c.stdout == a.stdout
    d = _run("--in", str(txt), "--out", "-", "--field", "text")
    assert d.returncode == 0 and [json.loads(x)["text"] for x in d.stdout.splitlines()] == QUESTIONS


def test_chunked_scoring_is_one_call():
    from pysynth.cli.quality import score_texts
    from pysynth.quality import load

    texts = [("what is " + "very " * (i % 17) + f"thing number {i}?") for i in range(300)]
    m = load()
    whole = m(texts, 64)
    assert (score_texts(m, texts, 64, chunk=128) == whole).all()
    assert (score_texts(m, texts, 64, progress=True, chunk=64) == whole).all()
