"""The metric check of Rücklé et al. 2019 (issue 15): ranking the shared AskUbuntu dev candidates
(Lei et al. 2016) by their released BM25 scores gives MAP 52.0, MRR 66.0, P@1 51.9, P@5 42.1 over
the 189 queries with a duplicate among their 20 candidates. Skipped without the shared data."""
import gzip
import json
import os
from pathlib import Path

import pytest

import pysynth.ranking as R

DATA = Path(os.environ.get("PYSYNTH_DATA", Path(__file__).resolve().parents[3] / "shared" / "data"))
DEV = DATA / "askubuntu" / "dev.jsonl.gz"


@pytest.mark.skipif(not DEV.is_file(), reason="shared data not present")
def test_bm25_reference_numbers():
    with gzip.open(DEV, "rt", encoding="utf-8") as f:
        rows = [json.loads(x) for x in f]
    scores = [r["bm25_scores"] for r in rows]
    labels = [[int(c in set(r["similar_ids"])) for c in r["candidate_ids"]] for r in rows]
    assert len(rows) == 200 and sum(any(x) for x in labels) == 189
    got = {"MAP": R.mean_average_precision(scores, labels), "MRR": R.mean_reciprocal_rank(scores, labels),
           "P@1": R.precision_at_k(scores, labels, k=1), "P@5": R.precision_at_k(scores, labels, k=5)}
    assert {k: round(100 * v, 1) for k, v in got.items()} == {"MAP": 52.0, "MRR": 66.0, "P@1": 51.9, "P@5": 42.1}
