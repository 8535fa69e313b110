"""``--min-similarity`` inside the paraphrase selection (issue 26): a candidate under S is never
chosen, the next best at or above S is; the column of ``--candidates-out`` and of the rows; the
summary's count; the flag and its check."""
from __future__ import annotations

import json

import pytest

from pysynth.paraphrase import pipeline as P
from pysynth.paraphrase.filters import select

ORIG = "How many animals can be seen ?"
CANDS = ["How many animals can be viewed", "How many beasts may they be viewed", "What time is it now friend",
         "How many animals can be seen"]
#: a stand-in cosine per candidate (the third drifts: many new words, another meaning)
SIMS = {CANDS[0]: 0.92, CANDS[1]: 0.75, CANDS[2]: 0.2, CANDS[3]: 1.0}


def fake_similarity(texts):
    return [SIMS[t] for t in texts]


@pytest.mark.parametrize("mode", ["augmented", "diverse"])
def test_a_candidate_under_s_is_never_chosen_the_next_best_is(mode):
    off, scored_off = select(ORIG, CANDS, mode=mode, top=1, return_scores=True)
    assert off == [CANDS[2]] and all(s.similarity is None for s in scored_off)  # most new words wins today
    on, scored = select(ORIG, CANDS, mode=mode, top=1, return_scores=True, min_similarity=0.7,
                        similarity=fake_similarity)
    assert on == [CANDS[1]]  # the next best at or above S
    by = {s.text: s for s in scored}
    assert by[CANDS[2]].similarity == 0.2 and not by[CANDS[2]].chosen
    assert by[CANDS[3]].similarity is None  # scores 0: could never be chosen, not encoded
    assert select(ORIG, CANDS, mode=mode, top=3, min_similarity=0.8, similarity=fake_similarity) == [CANDS[0]]
    assert select(ORIG, CANDS, mode=mode, top=3, min_similarity=0.99, similarity=fake_similarity) == []
    # S = -1 keeps the thesis's choice
    assert select(ORIG, CANDS, mode=mode, top=3, min_similarity=-1.0, similarity=fake_similarity) == \
        select(ORIG, CANDS, mode=mode, top=3)


def test_only_choosable_candidates_are_scored():
    asked = []
    select(ORIG, CANDS, min_similarity=0.5, similarity=lambda ts: asked.extend(ts) or [0.9] * len(ts))
    assert sorted(asked) == sorted(CANDS[:3])


@pytest.mark.parametrize("bad, err", [(1.2, ValueError), (-2, ValueError), (True, ValueError), ("0.5", ValueError)])
def test_select_checks_s(bad, err):
    with pytest.raises(err, match="min_similarity"):
        select(ORIG, CANDS, min_similarity=bad, similarity=fake_similarity)
    with pytest.raises(TypeError, match="similarity"):
        select(ORIG, CANDS, min_similarity=0.5)
    with pytest.raises(ValueError, match="min_similarity"):
        P.ParaphraseConfig(min_similarity=bad)


def test_config_off_keeps_its_settings_and_signature():
    assert "min_similarity" not in P.ParaphraseConfig().as_dict()
    assert P.ParaphraseConfig(min_similarity=0.6).as_dict()["min_similarity"] == 0.6


QS = ["What color is the keyboard?", "How many animals can be seen?", "Is this a grocery store?"]


def test_pipeline_rows_candidates_and_summary(tmp_path):
    pytest.importorskip("onnxruntime")
    from pysynth.paraphrase.jobs import run

    inp = tmp_path / "in.jsonl"
    inp.write_text("".join(json.dumps({"id": i, "question": q}) + "\n" for i, q in enumerate(QS)))
    cfg = P.ParaphraseConfig(pivot="keywords", beams=8, groups=4, threads=1)
    s0 = run(inp, tmp_path / "off.jsonl", cfg, progress=False, candidates_out=tmp_path / "c0.jsonl")
    assert "similarity" not in (tmp_path / "off.jsonl").read_text() and "below_similarity" not in s0
    assert "similarity" not in (tmp_path / "c0.jsonl").read_text()
    S = 0.8
    s = run(inp, tmp_path / "on.jsonl", cfg.replace(min_similarity=S), progress=False,
            candidates_out=tmp_path / "c.jsonl", flat=False)
    rows = [json.loads(x) for x in (tmp_path / "on.jsonl").read_text().splitlines()]
    cands = [json.loads(x) for x in (tmp_path / "c.jsonl").read_text().splitlines()]
    scored = [c for c in cands if "text" in c]
    assert scored and all("similarity" in c for c in scored)
    assert all(c["similarity"] >= S for c in scored if c["chosen"])
    assert s["below_similarity"] == len({(c["id"], c["text"]) for c in scored
                                         if c["similarity"] is not None and c["similarity"] < S}) > 0
    for r in rows:
        assert len(r["similarity"]) == len(r["paraphrases"]) and min(r["similarity"], default=1) >= S
    assert s["paraphrases"] == sum(len(r["paraphrases"]) for r in rows)
    # flat rows carry each paraphrase's cosine; the same bytes for any chunking
    run(inp, tmp_path / "flat.jsonl", cfg.replace(min_similarity=S), progress=False, flat=True, chunk_size=1)
    flat = [json.loads(x) for x in (tmp_path / "flat.jsonl").read_text().splitlines()]
    assert [x["similarity"] for x in flat if x["paraphrase_of"] is not None] == [v for r in rows for v in r["similarity"]]
    run(inp, tmp_path / "on2.jsonl", cfg.replace(min_similarity=S), progress=False, chunk_size=1)
    assert (tmp_path / "on2.jsonl").read_bytes() == (tmp_path / "on.jsonl").read_bytes()
