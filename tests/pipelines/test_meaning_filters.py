"""The meaning filters of issue 26 (``--min-similarity S``): the pair scorer
(:func:`pysynth.models.embed.similarity`, the shipped ``dup-minilm-wstb`` on onnxruntime) and the row
filter over (source, text) pairs (:class:`pysynth.pipelines.PairScoreFilter`): keeps and drops, the
column, the reasons and counts, the threshold check, pickling, and two filters in one row stage."""
from __future__ import annotations

import functools
import json
import pickle

import pytest
from _toy_rows import ToyRowStage, toy_score

from pysynth.pipelines import PairScoreFilter, ScoreFilter


def toy_pairs(sources, texts):
    """A deterministic "cosine": 1 when the text is the source (any case), else shared characters / 10."""
    return [1.0 if s.lower() == t.lower() else min(1.0, len(set(s) & set(t)) / 10) for s, t in zip(sources, texts)]


def test_text_rows_keep_drop_column_and_reason():
    inputs = [{"body": "what is it"}, {"body": "abc"}, {"body": "zzz"}]
    rows = [{"title": "WHAT IS IT"}, {"title": "xyz"}, {"title": "", "reason": "empty"}]
    f = PairScoreFilter("similarity", 0.5, toy_pairs, source="body")
    n = f.apply(rows, "title", inputs=inputs, when=lambda r: not r.get("reason"))
    assert n == 1
    assert rows[0] == {"title": "WHAT IS IT", "similarity": 1.0}
    assert rows[1] == {"title": "xyz", "similarity": 0.0, "reason": "not_similar"}
    assert rows[2] == {"title": "", "reason": "empty"}  # not looked at


def test_list_rows_drop_items_with_their_parallel_lists():
    rows = [{"keywords": "capital australia", "questions": ["capital australia", "q", "a capital"],
             "scores": [1, 2, 3]}]
    n = PairScoreFilter("similarity", 0.5, toy_pairs, source="keywords").apply(rows, "questions",
                                                                                 parallel=("scores",))
    assert n == 1 and rows[0]["questions"] == ["capital australia", "a capital"] and rows[0]["scores"] == [1, 3]
    assert rows[0]["similarity"] == [1.0, 0.7] and rows[0]["dropped"] == 1


@pytest.mark.parametrize("bad", [1.5, -1.01, True, "x", None, float("nan")])
def test_threshold_is_a_cosine_named_by_its_flag(bad):
    with pytest.raises(ValueError, match=r"min_similarity: must be a cosine in \[-1, 1\]"):
        PairScoreFilter("similarity", bad, toy_pairs)
    with pytest.raises(ValueError, match="--min-similarity"):
        PairScoreFilter("similarity", bad, toy_pairs, flag="--min-similarity")


def test_negative_threshold_and_input_count():
    assert PairScoreFilter("similarity", -0.5, toy_pairs).threshold == -0.5
    with pytest.raises(ValueError, match="inputs: 1 input rows for 2 output rows"):
        PairScoreFilter("similarity", 0.5, toy_pairs).apply([{"q": "a"}, {"q": "b"}], "q", inputs=[{"question": "a"}])


def test_pickles_with_the_shipped_scorer():
    from pysynth.models.embed import similarity

    f = PairScoreFilter("similarity", 0.6, functools.partial(similarity, threads=1), source="body")
    g = pickle.loads(pickle.dumps(f))
    assert g.threshold == 0.6 and g.source == "body" and g.score.func is similarity


def test_two_filters_in_one_row_stage_count_their_own_drops(tmp_path):
    # the toy stage's ``out`` is its input ``text`` upper-cased: similarity 1, so only length-dropped rows
    fs = (ScoreFilter("wellformed", 0.5, toy_score), PairScoreFilter("similarity", 0.5, toy_pairs, source="text"))
    rows = [{"id": i, "text": t} for i, t in enumerate(["what is it", "why", "a longer question here"])]
    out = tmp_path / "o.jsonl"
    ToyRowStage(rows, out, field="out", filters=fs).run(chunk_size=2, progress=False)
    got = [json.loads(x) for x in out.read_text().splitlines()]
    assert [g.get("reason") for g in got] == [None, "not_wellformed", None]
    assert all(g["similarity"] == 1.0 for g in got)
    # list texts: each filter drops its own; the similarity column follows the kept texts
    out2 = tmp_path / "p.jsonl"
    ToyRowStage(rows, out2, field="cands", filters=(ScoreFilter("wellformed", 0.0, toy_score), fs[1])).run(
        chunk_size=2, progress=False)
    for g, r in zip((json.loads(x) for x in out2.read_text().splitlines()), rows):
        full = [r["text"], r["text"][::-1], r["text"][:3]]
        want = [c for c in full if toy_pairs([r["text"]], [c])[0] >= 0.5]
        assert g["cands"] == want and g["similarity"] == [round(x, 4) for x in toy_pairs([r["text"]] * len(want), want)]
        assert g["wellformed"] == [round(x, 4) for x in toy_score(want)] and g["dropped"] == 3 - len(want)


def test_shipped_scorer_ranks_paraphrases_over_drifts():
    pytest.importorskip("onnxruntime")
    from pysynth.models.embed import similarity

    q = "what is the capital of australia?"
    s = similarity([q, q, q], ["what's the capital city of australia?", "how much does it have a lot of time?", q],
                   threads=1)
    assert s.shape == (3,) and s[0] > 0.8 > 0.3 > s[1] and abs(s[2] - 1.0) < 1e-4 and s.max() <= 1.0
    assert similarity([], []).shape == (0,)
    with pytest.raises(ValueError, match="sources and texts: 1 sources for 2 texts"):
        similarity(["a"], ["a", "b"])
    with pytest.raises(TypeError, match="texts"):
        similarity(["a"], "a")
