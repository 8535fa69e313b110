"""Duplicate question generation (Rücklé et al. 2019, Sect. 3.2): the (body, title) training rows
with the PostLinks duplicates held out, a tiny generator trained for a few steps (torch), the
shipped int8 ONNX generator on a few bodies (no torch), evaluation and the command's errors."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pysynth.dup.dqg import (
    EXTRACT,
    TitleGenerator,
    evaluate,
    extract_title,
    rule_title,
    split_dev,
    train,
    training_rows,
)

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_pairs import write_dump  # noqa: E402

BODIES = [
    "I bought a burr grinder last week and the coffee tastes bitter. How do I adjust the grind size?",
    "My bike chain keeps slipping on the smallest cog when I pedal hard uphill. What should I check?",
    "Which neural network architecture works best for classifying short text messages with few labels?",
    "Is it safe to store an opened bottle of red wine in the fridge for a week before drinking it?",
    "We want to organise the tag wiki of the site better. Who can edit tag wikis and how are edits reviewed?",
]


def test_training_rows_hold_out_linked(tmp_path):
    d = write_dump(tmp_path)
    rows, counts = training_rows([d])
    assert counts["tiny"]["eval_holdout"] == 2 and {r["post_id"] for r in rows} == {"2", "3", "5", "8"}
    rows, counts = training_rows([d], holdout_linked=False)
    assert "eval_holdout" not in counts["tiny"] and len(rows) == 6
    tr, dev = split_dev(rows, 0.2, seed=1)
    assert len(dev) == 1 and len(tr) == 5 and (tr, dev) == split_dev(rows, 0.2, seed=1)
    with pytest.raises(ValueError, match="dev_fraction"):
        split_dev(rows, 1.0, 0)


@pytest.mark.parametrize("arch", ["copynet", "attnet"])
def test_train_tiny_generator(tmp_path, arch):
    pytest.importorskip("torch")
    d = write_dump(tmp_path)
    s = train([d], tmp_path / "run", arch=arch, minutes=0, steps=3, dev_fraction=0.25, vocab_size=200, emb_dim=8,
              enc_hidden=8, dec_hidden=16, batch_size=2, eval_every=3, log=lambda m: None)
    assert s["steps"] == 3 and (tmp_path / "run" / "model" / "meta.json").is_file()
    assert json.loads((tmp_path / "run" / "dqg_data.json").read_text())["train"] == 3
    gen = TitleGenerator(str(tmp_path / "run"), backend="torch")
    got = gen.generate(["This sentence has more than ten words in it, about coffee and nothing else.", "zzqx"], beam=1)
    assert got[1] == ("", "unreadable") and isinstance(got[0][0], str)
    with pytest.raises(ValueError, match="arch"):
        train([d], tmp_path / "x", arch="transformer")


def test_shipped_generator_on_five_bodies():
    gen = TitleGenerator(threads=1)
    got = gen.generate(BODIES, beam=2)
    assert len(got) == 5 and all(t and not r for t, r in got), got
    assert got == gen.generate(BODIES, beam=2)  # deterministic
    assert gen.generate(["", "   ", "<<>>"]) == [("", "unreadable")] * 3
    with pytest.raises(TypeError, match="bodies"):
        gen.generate("one body")


def test_evaluate_on_a_written_dump(tmp_path):
    d = write_dump(tmp_path)
    res = evaluate(None, [d], beam=1)
    assert res["questions"] == 6 and 0 <= res["bleu"] <= 100 and 0 <= res["rougeL"] <= 100
    assert evaluate(None, [d], beam=1, subset="linked")["questions"] == 2
    assert evaluate(None, [d], beam=1, subset="dev", dev_fraction=0.3)["questions"] == 1


def test_command_errors(tmp_path):
    run = [sys.executable, "-m", "pysynth.dup.dqg"]
    r = subprocess.run(run + ["eval", "--dump", str(tmp_path / "missing")], capture_output=True, text=True)
    assert r.returncode == 2 and "no such" in r.stderr and "Traceback" not in r.stderr
    r = subprocess.run(run + ["eval", "--dump", str(write_dump(tmp_path)), "--model", str(tmp_path / "nope")],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "model" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize("body, want", [
    ("I tried a burr grinder. So, how do I adjust the grind size? It is too fine.", "How do I adjust the grind size?"),
    ("My question is: which network is best for short texts?", "Which network is best for short texts?"),
    ("I was wondering if storing wine cold is safe? Thanks.", "Storing wine cold is safe?"),
    ("No question here, only a statement about the bike chain slipping on the cog. And more.",
     "No question here, only a statement about the bike chain slipping"),  # first 11 words of the first sentence
    ("Is this a very long question that keeps going with many more words than a title should have at all?",
     "Is this a very long question that keeps going with many more words than a title should have at"),  # 19
    ("", ""), ("   ", ""),
])
def test_rule_title(body, want):
    assert rule_title(body) == want


def test_extract_title_bad_input_and_the_generator_spec(tmp_path):
    with pytest.raises(TypeError, match="body"):
        extract_title(None)
    with pytest.raises(TypeError, match="body"):
        rule_title(None)
    for bad in (0, -1, 2.5, True):
        with pytest.raises(ValueError, match="max_words"):
            rule_title("x?", max_words=bad)
    gen = TitleGenerator(EXTRACT)  # no model is loaded: runs without onnxruntime or torch
    assert gen.generate(BODIES[:2] + [""]) == [("How do I adjust the grind size?", ""),
                                                ("What should I check?", ""), ("", "empty")]
    with pytest.raises(TypeError, match=r"bodies\[1\]"):
        gen.generate(["a?", 3])
    d = write_dump(tmp_path)
    res = evaluate(EXTRACT, [d])
    assert res["questions"] == 6 and res["body_word_share"] == 100.0 and res["empty"] == 0
    r = subprocess.run([sys.executable, "-m", "pysynth", "dup", "evaluate-dqg", "--model", "extract", "--in", str(d)],
                       capture_output=True, text=True)
    assert r.returncode == 0 and json.loads(r.stdout)["bleu"] == res["bleu"], r.stderr
