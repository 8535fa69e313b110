"""Job outputs for the export and report tests: a hand-written one (hostile text, every shape of
drop) and real ones (``k2q synthesize`` on a few questions, ``qagen generate`` on four bundled
SQuAD paragraphs with the shipped ONNX models)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)> & "quotes" \' </table></td>'


def write_fake_run(d: Path, name: str = "fake.jsonl") -> Path:
    """A qagen-shaped output with kept and discarded rows, a hostile question, mixed id types and
    a similarity list column; its OUT.meta.json names two models and the drops."""
    rows = [
        {"id": 0, "context": "The sky is blue.", "question": "what colour is the sky?", "answer_text": "blue",
         "wellformed": 0.91, "similarity": [0.8], "reason": None},
        {"id": "1-a", "context": "Paris is in France.", "question": HOSTILE, "answer_text": "France",
         "wellformed": 0.12, "similarity": [0.4], "reason": None},
        {"id": 2, "context": "Water boils at 100 C.", "question": "when does water boil?", "answer_text": "100 C",
         "wellformed": 0.77, "similarity": [0.9, 0.7], "reason": "roundtrip_mismatch"},
        {"id": 3, "context": HOSTILE, "question": "how many?", "reason": "not_wellformed", "wellformed": 0.2},
    ]
    out = d / name
    out.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    meta = {"format": "pysynth.qagen", "format_version": 1,
            "config": {"seed": 7, "decode": "greedy", "min_wellformed": 0.3},
            "input": {"contexts": 4, "sha256": "ab" * 32},
            "models": {"question": {"model": "qagen-qg-copynet", "sha256": "cd" * 32},
                       "answer": {"model": "/x/assets/qagen-span-minilm", "sha256": "ef" * 32}},
            "summary": {"contexts": 4, "kept": 2, "discarded": 2,
                        "discarded_by_reason": {"roundtrip_mismatch": 1, "not_wellformed": 1},
                        "spans_rejected": {"crosses_sentence": 3}, "rows_written": 4},
            "versions": {"pysynth": "0.1.0", "numpy": "2"}}
    out.with_name(name + ".meta.json").write_text(json.dumps(meta), encoding="utf-8")
    return out


def k2q_run(d: Path) -> Path:
    """``k2q synthesize`` on a handful of questions (seconds, no model)."""
    from pysynth.k2q.synthesize import synthesize

    qs = ["who was the 10th president of india?", "how tall is the eiffel tower?", "what is the capital of peru?",
          "when did the berlin wall fall?", "how do i change the oil in a honda civic?",
          "what is the boiling point of water?", "who wrote the novel war and peace?", "where is mount kilimanjaro?"]
    out = d / "k2q.jsonl"
    synthesize([{"id": i, "question": q} for i, q in enumerate(qs)], out, progress=False)
    return out


def qagen_run(d: Path) -> Path:
    """``qagen generate`` on four bundled SQuAD paragraphs (token-F1 roundtrip), discarded rows kept."""
    import gzip

    from pysynth.data import qagen_sample_path
    from pysynth.qagen import QAGenConfig
    from pysynth.qagen.jobs import run

    squad = json.loads(gzip.open(qagen_sample_path(), "rt", encoding="utf-8").read())
    art = squad["data"][1]  # Amazon_rainforest
    inp = d / "contexts.jsonl"
    inp.write_text("".join(json.dumps({"id": f"1-{i}", "title": art["title"], "context": p["context"]}) + "\n"
                           for i, p in enumerate(art["paragraphs"][:4])), encoding="utf-8")
    out = d / "qagen.jsonl"
    run(inp, out, QAGenConfig(match="f1:0.5"), keep_discarded=True, progress=False)  # 2 kept, 2 discarded
    return out


@pytest.fixture
def hostile():
    return HOSTILE


@pytest.fixture
def fake_run(tmp_path):
    return write_fake_run(tmp_path)


@pytest.fixture(scope="module")
def k2q_output(tmp_path_factory):
    return k2q_run(tmp_path_factory.mktemp("k2q"))


@pytest.fixture(scope="module")
def qagen_output(tmp_path_factory):
    pytest.importorskip("onnxruntime", reason="qagen generate needs onnxruntime (the [qagen] extra)")
    pytest.importorskip("transformers", reason="qagen generate needs transformers' tokenizer (the [qagen] extra)")
    return qagen_run(tmp_path_factory.mktemp("qagen"))
