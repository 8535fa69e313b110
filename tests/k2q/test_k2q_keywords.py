"""End-to-end keyword query generation (text + phrases + sampling); its CLI: tests/cli/test_k2q_cli.py."""

import pytest

from pysynth import sampling
from pysynth.k2q.keywords import DEFAULT_CONFIG, KeywordGenerator, make_model

CORPUS = [
    "how fast is a 2004 honda crf 230",
    "what is the top speed of a honda crf 230",
    "honda crf 230 top speed",
    "who is the author of winnie the pooh",
    "who wrote winnie the pooh",
    "when was winnie the pooh written",
] * 4


def test_generate_shapes_determinism_and_workers():
    qs = ["how fast is a honda crf 230", "who wrote winnie the pooh"]
    gen = KeywordGenerator(CORPUS, qs, groups=["a", "b"], phrases=False)
    model = make_model(**DEFAULT_CONFIG)
    a = gen.generate(model, m=5, seed=3)
    assert len(a) == 2 and all(len(k) == 5 for k in a)
    assert a == gen.generate(model, m=5, seed=3, workers=2)
    assert a != gen.generate(model, m=5, seed=4)
    for kws, q in zip(a, qs):
        for k in kws:
            assert k and set(k.split()) <= set(" ".join(CORPUS + qs).split())
            assert not {"how", "who", "what"} & set(k.split())  # question words are excluded


def test_phrases_come_out_as_words():
    # gensim's default score needs a realistic vocabulary: add filler questions of unique words
    filler = [f"what is w{i} of x{i} in y{i}" for i in range(600)]
    gen = KeywordGenerator(CORPUS * 3 + filler, ["honda crf 230 top speed"], phrases=True)
    assert any("_" in t for t in gen.question_terms(0))  # e.g. honda_crf_230 is one term
    out = gen.generate(sampling.KeywordModel("baseline", "popular", lam=0.1), m=10, seed=0)[0]
    assert all("_" not in k for k in out)


def test_bad_input():
    with pytest.raises(ValueError, match="questions"):
        KeywordGenerator(CORPUS, [])
    with pytest.raises(ValueError, match="groups"):
        KeywordGenerator(CORPUS, ["a b c"], groups=["x", "y"])


def test_table1_smoke(shared_data, tmp_path):
    from pysynth.k2q.table1 import run_table1

    res = run_table1(repeats=2, strategies=["combination"], variants=["baseline"], data=str(shared_data),
                     out_dir=str(tmp_path), progress=False)
    row = res["combination / baseline"]
    assert 0 < row["avg"] <= row["max"] <= 1
    assert len(row["chosen"]) == 5 and len(row["grid"]) == 9
    assert (tmp_path / "table1.md").exists() and (tmp_path / "fig6_grid.csv").exists()
    sig = res["_meta"]["signature"]
    assert sig["format"] == "pysynth.k2q.table1" and sig["config"] == {"repeats": 2, "folds": 5, "seed": 0}
