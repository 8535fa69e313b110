"""``pysynth mqr rewrite --min-similarity S`` (issue 26), the row stage's pair filter: a rewrite whose
cosine with its question is under S gives the input back; with --min-wellformed both count their drops."""
from __future__ import annotations

import json

import pytest

pytest.importorskip("onnxruntime")

from pysynth.models.embed import similarity  # noqa: E402
from pysynth.mqr.jobs import rewrite_file  # noqa: E402

QS = ["install ubuntu on usb stick", "Spaghetti carbonara, mixing", "python list sort reverse",
      "what is the capital of france", "best laptop for programming", "git undo commit"]


def test_min_similarity_gives_the_input_back(tmp_path):
    plain = tmp_path / "p.jsonl"
    rewrite_file([{"question": q} for q in QS], plain, backend="onnx", threads=1, progress=False)
    ref = [json.loads(x)["rewrite"] for x in plain.read_text().splitlines()]
    raw = [float(x) for x in similarity(QS, ref)]
    sims = [round(x, 4) for x in raw]
    lo, hi = sorted(raw)[len(raw) // 2 - 1: len(raw) // 2 + 1]
    assert hi - lo > 1e-4, "two rewrites equally similar: pick other questions"
    cut = round((lo + hi) / 2, 6)  # between two scores: no rewrite sits on the cut (batches differ in padding)
    out = tmp_path / "s.jsonl"
    s = rewrite_file([{"question": q} for q in QS], out, backend="onnx", threads=1, min_similarity=cut,
                     min_wellformed=0.0, chunk_size=4, progress=False)
    got = [json.loads(x) for x in out.read_text().splitlines()]
    for g, q, o, x, r in zip(got, QS, ref, sims, raw):
        assert g["similarity"] == x and g["rewritten"] == (r >= cut) and g["rewrite"] == (o if r >= cut else q)
    assert s["dropped_similarity"] == sum(r < cut for r in raw) > 0 and s["dropped_wellformed"] == 0
    assert json.loads((tmp_path / "s.jsonl.meta.json").read_text())["config"]["min_similarity"] == cut
    with pytest.raises(ValueError, match="min_similarity: must be a cosine"):
        rewrite_file(QS, tmp_path / "x.txt", min_similarity=1.5, progress=False)
