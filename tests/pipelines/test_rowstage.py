"""The row stage (:mod:`pysynth.pipelines.rowstage`): packing, chunks, side outputs, counters, the
row filters in one place (:class:`ScoreFilter`, list and text fields), ``OUT.meta.json``, resume after
a kill, stdout; on a toy stage without models."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from _toy_rows import ToyRowStage, toy_score

from pysynth import pipelines
from pysynth.pipelines import ScoreFilter

HERE = Path(__file__).resolve().parent
ROWS = [{"id": i, "text": t} for i, t in enumerate(["what is it", "why", "a longer question here", "ok?", "hello world",
                                                      "x", "how do i fix a flat tire", "zz", "the end"])]


def _run(tmp_path, name, chunk_size, **kw):
    out = tmp_path / f"{name}.jsonl"
    s = ToyRowStage(ROWS, out, side_out=tmp_path / f"{name}.side.jsonl", **kw).run(chunk_size=chunk_size,
                                                                                    progress=False)
    return out, s


def test_same_bytes_for_any_chunking_with_meta_and_sides(tmp_path):
    a, s = _run(tmp_path, "a", 100)
    b, t = _run(tmp_path, "b", 2)
    assert a.read_bytes() == b.read_bytes()
    assert (tmp_path / "a.side.jsonl").read_bytes() == (tmp_path / "b.side.jsonl").read_bytes()
    assert [json.loads(x)["i"] for x in (tmp_path / "b.side.jsonl").read_text().splitlines()] == [0, 3, 6]
    assert s["rows"] == t["rows"] == len(ROWS) and s["seen"] == t["seen"] == len(ROWS)
    meta = json.loads(pipelines.meta_path(b).read_text())
    assert meta["format"] == "tests.toy_rows" and meta["input"]["rows"] == len(ROWS) and "versions" in meta
    assert meta["summary"] == {"rows": 9, "seen": 9, "dropped": 0}  # no timings: the same bytes for any run
    assert pipelines.meta_path(a).read_bytes() == pipelines.meta_path(b).read_bytes()
    assert not pipelines.parts_dir(b).exists()


def test_list_filter_drops_items_and_counts(tmp_path):
    f = ScoreFilter("wellformed", 0.5, toy_score)
    out, s = _run(tmp_path, "f", 4, field="cands", filters=(f,))
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    for r, src in zip(rows, ROWS):
        full = [src["text"], src["text"][::-1], src["text"][:3]]
        assert r["cands"] == [c for c in full if toy_score([c])[0] >= 0.5]
        assert r["wellformed"] == [round(p, 4) for p in toy_score(r["cands"])]
        assert r["dropped"] == 3 - len(r["cands"])
    assert s["dropped"] == sum(r["dropped"] for r in rows) > 0


def test_text_filter_judges_rows(tmp_path):
    out, s = _run(tmp_path, "t", 3, field="out", filters=(ScoreFilter("wellformed", 0.5, toy_score, digits=2),))
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    for r in rows:
        p = toy_score([r["out"]])[0]
        assert r["wellformed"] == round(p, 2) and (r.get("reason") == "not_wellformed") == (p < 0.5)
    assert s["dropped"] == sum("reason" in r for r in rows) > 0


def test_score_filter_apply_and_validation():
    rows = [{"q": ["abcdefghij", "ab"], "s": [1, 2]}, {"q": []}, {"q": "abcdefghijkl"}, {"q": "a", "skip": True}]
    seen = []
    n = ScoreFilter("wf", 0.5, toy_score).apply(rows, "q", parallel=("s",), when=lambda r: "skip" not in r,
                                                  judge=lambda r, keep: seen.append(keep))
    assert n == 1 and rows[0] == {"q": ["abcdefghij"], "s": [1], "wf": [1.0], "dropped": 1}
    assert rows[1] == {"q": [], "s": [], "wf": [], "dropped": 0} and rows[2]["wf"] == 1.0 and seen == [True]
    assert rows[3] == {"q": "a", "skip": True}
    with pytest.raises(ValueError, match="probs: 1 values for 2 texts"):
        ScoreFilter("wf", 0.5, toy_score).apply([{"q": ["a", "b"]}], "q", probs=[0.1])
    for bad in (1.5, -0.1, True, "x", None):
        with pytest.raises(ValueError, match="min_wellformed: must be a probability"):
            ScoreFilter("wf", bad, toy_score)


def test_quality_filter_rows_is_the_row_stage_filter():
    from pysynth.quality import filter_rows

    rows = [{"questions": ["a", "b", "c"], "scores": [1, 2, 3]}]
    assert filter_rows(rows, "questions", 0.5, parallel=("scores",), probs=[0.9, 0.1, 0.5]) == 1
    assert rows == [{"questions": ["a", "c"], "scores": [1, 3], "wellformed": [0.9, 0.5], "dropped": 1}]


_KILLED = """
import json, sys
sys.path.insert(0, sys.argv[1])
from _toy_rows import ToyRowStage
ToyRowStage(json.loads(sys.argv[2]), sys.argv[3]).run(chunk_size=2, progress=False, _stop_after_chunks=2)
"""


def test_killed_run_resumes_to_the_same_bytes(tmp_path):
    ref, _ = _run(tmp_path, "ref", 100)
    out = tmp_path / "k.jsonl"
    r = subprocess.run([sys.executable, "-c", _KILLED, str(HERE), json.dumps(ROWS), str(out)], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 75 and not out.exists() and pipelines.parts_dir(out).is_dir(), r.stderr
    s = ToyRowStage(ROWS, out).run(chunk_size=2, progress=False)
    assert s["chunks_resumed"] == 2 and out.read_bytes() == ref.read_bytes()
    assert pipelines.meta_path(out).is_file() and not pipelines.parts_dir(out).exists()


def test_env_hook_stops_a_subprocess_like_a_kill(tmp_path):
    """PYSYNTH_TEST_STOP_AFTER_CHUNKS: the kill hook for commands run as subprocesses."""
    out = tmp_path / "e.jsonl"
    code = _KILLED.replace(", _stop_after_chunks=2", "")
    env = dict(os.environ, PYSYNTH_TEST_STOP_AFTER_CHUNKS="1")
    r = subprocess.run([sys.executable, "-c", code, str(HERE), json.dumps(ROWS), str(out)], capture_output=True,
                       text=True, timeout=120, env=env)
    assert r.returncode == 75 and len(list(pipelines.parts_dir(out).glob("part-*"))) == 1, r.stderr


def test_stdout_output_runs_in_a_temporary_directory(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    s = ToyRowStage(ROWS, "-").run(chunk_size=4, progress=False)
    lines = capsys.readouterr().out.splitlines()
    assert s["rows"] == len(lines) == len(ROWS) and json.loads(lines[0])["out"] == "WHAT IS IT"
    assert sorted(os.listdir(tmp_path)) == []  # no run directory, no metadata


def test_a_failing_chunk_keeps_the_finished_ones(tmp_path):
    out = tmp_path / "x.jsonl"
    with pytest.raises(RuntimeError, match="toy failure at 4"):
        ToyRowStage(ROWS, out, fail_at=4).run(chunk_size=2, progress=False)
    assert len(list(pipelines.parts_dir(out).glob("part-*"))) == 2
    s = ToyRowStage(ROWS, out).run(chunk_size=2, progress=False)
    assert s["chunks_resumed"] == 2
