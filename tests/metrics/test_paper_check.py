"""MQR paper check (Chu et al. 2020, Table 6) against the real tools' numbers.

``tests/golden/mqr_paper_check.json`` was produced by ``tests/golden/make_golden.py``
(``do_paper_check``) with pycocoevalcap ``Bleu(4)`` on ``.strip()``-ed texts (nlg-eval
style) and pltrdy ``rouge==0.3.2`` ``Rouge().get_scores(hyps, refs, avg=True)`` on the raw
texts. Rows: hypothesis = ``ill_formed`` or a system column of
``mqr/test_system_rewrites.jsonl.gz`` (aligned by ``row_idx`` with ``mqr/test.jsonl.gz``);
reference = ``well_formed``. Scores must be equal (``==``), under every backend.
"""
from __future__ import annotations

import gzip
import json
import time
from pathlib import Path

import pytest

from pysynth import metrics as M

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "mqr_paper_check.json"
PLTRDY = {"rouge-1": "rouge1", "rouge-2": "rouge2", "rouge-l": "rougeL"}
# The pure-Python twin scores every row in well under a second per system; should it get
# slower than this budget, the remaining python rows are skipped (the compiled side always
# runs all ten).
PYTHON_BUDGET_S = 20.0
_spent = {"python": 0.0}


def _read_jsonl(path: Path):
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


@pytest.fixture(scope="module")
def check():
    if not GOLDEN.exists():
        pytest.skip("tests/golden/mqr_paper_check.json missing")
    with open(GOLDEN, encoding="utf-8") as f:
        return json.load(f)


@pytest.fixture(scope="module")
def mqr(shared_data):
    test_path = shared_data / "mqr" / "test.jsonl.gz"
    rw_path = shared_data / "mqr" / "test_system_rewrites.jsonl.gz"
    if not (test_path.exists() and rw_path.exists()):
        pytest.skip("MQR test split or system rewrites missing from the shared data")
    test = sorted(_read_jsonl(test_path), key=lambda r: r["row_idx"])
    rewrites = {r["row_idx"]: r for r in _read_jsonl(rw_path)}
    return test, rewrites


def _systems():
    if not GOLDEN.exists():
        return []
    with open(GOLDEN, encoding="utf-8") as f:
        return [r["system"] for r in json.load(f)["rows"]]


def _inputs(mqr, system):
    test, rewrites = mqr
    refs = [t["well_formed"] for t in test]
    hyps = [t["ill_formed"] if system == "ill_formed" else rewrites[t["row_idx"]][system] for t in test]
    return hyps, refs


def test_golden_file_shape(check):
    rows = check["rows"]
    assert len(rows) == 10
    assert rows[0]["system"] == "ill_formed"
    assert "stripped" in check["notes"] and "raw" in check["notes"]


@pytest.mark.parametrize("system", _systems())
def test_paper_check_row(check, mqr, impl, system):
    row = next(r for r in check["rows"] if r["system"] == system)
    if impl == "python" and _spent["python"] > PYTHON_BUDGET_S:
        pytest.skip("python twin over its time budget; the compiled backend covers this row")
    t0 = time.perf_counter()
    hyps, refs = _inputs(mqr, system)
    assert len(hyps) == row["n"]

    # BLEU-1..4: pycocoevalcap on stripped texts (nlg-eval).
    bleu = M.corpus_bleu([h.strip() for h in hyps], [r.strip() for r in refs], flavor="coco")
    assert bleu.bleu_n == row["coco_bleu"], system
    assert bleu.score == row["coco_bleu"][-1]

    # ROUGE: pltrdy rouge 0.3.2, avg=True, raw texts.
    kw = {"types": tuple(PLTRDY.values()), "flavor": "pltrdy"}
    if row["pltrdy_error"] is not None:
        with pytest.raises(ValueError):
            M.rouge(hyps, refs, **kw)
    else:
        mean = M.rouge(hyps, refs, **kw).mean()
        for tool_name, ours in PLTRDY.items():
            assert mean[ours] == row["pltrdy"][tool_name], (system, tool_name)
    assert sum(1 for h in hyps if not h.strip()) == row["n_empty_hyps"]
    if impl == "python":
        _spent["python"] += time.perf_counter() - t0
