"""``pysynth dup pairs --method dqg --min-similarity S`` (issue 26): a generated title whose cosine with
its body is under S gives no DQG pair, counted as ``dqg_not_similar``; off, the bytes of before."""
from __future__ import annotations

import json

import pytest

pytest.importorskip("onnxruntime")

from test_pairs import write_dump  # noqa: E402

from pysynth.dup.pairs import make_pairs  # noqa: E402


def test_min_similarity_filters_generated_titles(tmp_path):
    d = write_dump(tmp_path)
    base = make_pairs([d], tmp_path / "a.jsonl", "dqg", beam=2, progress=False)["dumps"]["tiny"]
    s = make_pairs([d], tmp_path / "b.jsonl", "dqg", beam=2, min_similarity=-1.0, progress=False)["dumps"]["tiny"]
    assert (tmp_path / "a.jsonl").read_bytes() == (tmp_path / "b.jsonl").read_bytes()
    assert s["pairs"] == base["pairs"] and "dqg_not_similar" not in s
    c = make_pairs([d], tmp_path / "c.jsonl", "both", beam=2, min_similarity=1.0, progress=False)["dumps"]["tiny"]
    assert c["dqg_not_similar"] == base["dqg_titles"] > 0 and c["dqg_titles"] == 0
    assert {json.loads(x)["method"] for x in (tmp_path / "c.jsonl").read_text().splitlines()} == {"ws-tb"}
    meta = json.loads((tmp_path / "c.jsonl.meta.json").read_text())
    assert meta["config"]["min_similarity"] == 1.0
    with pytest.raises(ValueError, match="min_similarity: must be a cosine"):
        make_pairs([d], tmp_path / "e.jsonl", "dqg", min_similarity=2, progress=False)
