"""``pysynth k2q keywords | synthesize | make-corpus | table1 | table2`` (train / generate:
test_models_cli.py): outputs, stdin/stdout, the deprecated ``--model`` spellings, errors."""
from __future__ import annotations

import gzip
import io
import json
import os
import sys

import pytest

from pysynth.data import k2q_demo

QS = [("what is the capital of france", "c1"), ("capital city of france", "c1")]


def _rows(path):
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


@pytest.fixture
def questions(tmp_path):
    inp = tmp_path / "q.jsonl"
    inp.write_text("".join(json.dumps({"question": q, "cluster_id": c}) + "\n" for q, c in QS))
    return inp


# ------------------------------------------------------------------------------ keywords

def test_keywords_roundtrip_workers_and_stdout(cli, questions, tmp_path, monkeypatch):
    out = tmp_path / "out.jsonl"
    r = cli("k2q", "keywords", "--in", questions, "--out", out, "--m", 3, "--seed", 1)
    assert r.code == 0 and "[3/3] wrote" in r.err
    rows = _rows(out)
    assert [x["cluster_id"] for x in rows] == ["c1", "c1"] and all(len(x["keywords"]) == 3 for x in rows)
    out2 = tmp_path / "out2.jsonl"
    assert cli("k2q", "keywords", "--in", questions, "--out", out2, "--m", 3, "--seed", 1, "--workers", 2).code == 0
    assert out2.read_text() == out.read_text()
    # stdin -> stdout, and the deprecated --model paraphrase (= --kqgm paraphrase, the default)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(questions.read_bytes())))
    r = cli("k2q", "keywords", "--in", "-", "--out", "-", "--m", 3, "--seed", 1, "--model", "paraphrase")
    assert r.code == 0 and r.out == out.read_text()
    assert r.err_lines[0] == "pysynth: warning: --model paraphrase is deprecated here; use --kqgm paraphrase"
    b1, b2 = tmp_path / "b1.jsonl", tmp_path / "b2.jsonl"
    assert cli("k2q", "keywords", "--in", questions, "--out", b1, "--m", 3, "--kqgm", "baseline").code == 0
    assert cli("k2q", "keywords", "--in", questions, "--out", b2, "--m", 3, "--model", "baseline").code == 0
    assert b1.read_bytes() == b2.read_bytes()


def test_keywords_bad_input(fails, questions, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "no question field"}\n')
    line = fails(1, "k2q", "keywords", "--in", bad, "--out", tmp_path / "o.jsonl")
    assert f"--in {str(bad)!r} row 1: needs a string field 'question'" in line
    line = fails(1, "k2q", "keywords", "--in", questions, "--out", tmp_path / "o.jsonl", "--alpha", 1.5,
                 only_line=False)
    assert "alpha" in line
    assert "invalid choice: 'copynet'" in fails(2, "k2q", "keywords", "--in", questions, "--out", tmp_path / "o.jsonl",
                                                "--kqgm", "copynet")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.jsonl", "q.jsonl"]


# ------------------------------------------------------------------------------ synthesize

def test_synthesize_clusters_file_and_errors(cli, fails, tmp_path):
    qs = [{"id": f"q{i}", "question": r["question"]} for i, r in enumerate(k2q_demo()[:300])]
    inp = tmp_path / "q.jsonl"
    inp.write_text("".join(json.dumps(r) + "\n" for r in qs))
    cl = tmp_path / "c.jsonl"
    cl.write_text(json.dumps({"cluster_id": "a", "ids": ["q0", "q1"]}) + "\n")
    out = tmp_path / "o.jsonl"
    r = cli("k2q", "synthesize", "--in", inp, "--clusters", cl, "--out", out, "--m", 5, "--n-results", 10,
            "--keep", 100, "--weights", "0.8,0.1,0.1")
    assert r.code == 0, r.err
    rows = {x["id"]: x for x in _rows(out)}
    assert len(rows) == 100
    meta = json.loads((tmp_path / "o.jsonl.meta.json").read_text())
    assert meta["config"]["m"] == 5 and meta["config"]["weights"] == [0.8, 0.1, 0.1]
    assert "[2/3]" in r.err and "q/s" in r.err and "ETA" in r.err
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"cluster_id": "a", "ids": ["q0", "nope"]}) + "\n")
    assert "unknown question id 'nope'" in fails(1, "k2q", "synthesize", "--in", inp, "--clusters", bad, "--out", out,
                                                 only_line=False)
    assert "--n-results: must be an integer in 1..100,000" in fails(2, "k2q", "synthesize", "--in", inp, "--out", out,
                                                                    "--n-results", 0, only_line=False)
    assert "--ray-address needs --executor ray" in fails(2, "k2q", "synthesize", "--in", inp, "--out", out,
                                                         "--ray-address", "auto")
    assert "argument --weights" in fails(2, "k2q", "synthesize", "--in", inp, "--out", out, "--weights", "1,2")
    assert "argument --out: k2q synthesize needs a file" in fails(2, "k2q", "synthesize", "--in", inp, "--out", "-")
    assert "argument --clusters: no such file" in fails(2, "k2q", "synthesize", "--in", inp, "--out", out,
                                                        "--clusters", tmp_path / "none.jsonl")


def test_synthesize_stdin_and_deprecated_model(cli, tmp_path, monkeypatch):
    qs = [{"id": i, "question": r["question"]} for i, r in enumerate(k2q_demo()[:200])]
    data = "".join(json.dumps(r) + "\n" for r in qs)
    (tmp_path / "q.jsonl").write_text(data)
    common = ["--m", 4, "--n-results", 10, "--quiet", "--preset", "par"]
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    assert cli("k2q", "synthesize", "--in", tmp_path / "q.jsonl", "--out", a, "--kqgm", "baseline", *common).code == 0
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data.encode())))
    r = cli("k2q", "synthesize", "--in", "-", "--out", b, "--model", "baseline", *common)
    assert r.code == 0 and r.err_lines == ["pysynth: warning: --model baseline is deprecated here; use --kqgm baseline"]
    assert a.read_bytes() == b.read_bytes()
    assert json.loads((tmp_path / "a.jsonl.meta.json").read_text())["config"]["model"] == "baseline"


# ------------------------------------------------------------------------------ make-corpus

@pytest.mark.parametrize("name", ["corpus.jsonl.gz", "corpus.jsonl"])
def test_make_corpus_writes_rows(cli, tmp_path, name):
    from pysynth.k2q.synthetic import generate_corpus, write_corpus

    out = tmp_path / "sub" / name
    assert cli("k2q", "make-corpus", "--n", 700, "--out", out, "--seed", 4).code == 0
    rows = _rows(out)
    qs, cl = generate_corpus(700, seed=4)
    assert [r["id"] for r in rows] == list(range(700))
    assert [r["question"] for r in rows] == qs
    assert [-1 if r["cluster_id"] is None else r["cluster_id"] for r in rows] == cl
    assert any(r["cluster_id"] is None for r in rows) and all(set(r) == {"id", "question", "cluster_id"} for r in rows)
    assert sorted(os.listdir(out.parent)) == [name]  # no temporary file left
    if name.endswith(".gz"):  # deterministic bytes
        before = out.read_bytes()
        write_corpus(out, 700, seed=4)
        assert out.read_bytes() == before
    else:  # stdout: the same rows
        r = cli("k2q", "make-corpus", "--n", 700, "--out", "-", "--seed", 4)
        assert r.code == 0 and [json.loads(x) for x in r.out.splitlines()] == rows


def test_make_corpus_with_profile_and_errors(cli, fails, tmp_path):
    from pysynth.k2q.synthetic import default_profile

    prof = default_profile().save(tmp_path / "p.json")
    out = tmp_path / "c.jsonl"
    assert cli("k2q", "make-corpus", "--n", 50, "--out", out, "--profile", prof).code == 0 and len(_rows(out)) == 50
    for code, argv, msg in (
        (1, ["--n", "0"], "n must be"),
        (1, ["--n", "5", "--seed", "-2"], "seed must be"),
        (2, ["--n", "5", "--profile", tmp_path / "none.json"], "argument --profile: no such file"),
        (2, ["--n", "five"], "argument --n: must be an integer"),
    ):
        assert msg in fails(code, "k2q", "make-corpus", *argv, "--out", tmp_path / "x.jsonl")
    assert not (tmp_path / "x.jsonl").exists()


# ------------------------------------------------------------------------------ tables

def test_table2_command(cli, fails, tmp_path, shared_data):
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text("".join(json.dumps({"keywords": "x", "question": q}) + "\n" for q, _ in QS * 3))
    r = cli("k2q", "table2", "--pairs", pairs, "--baselines", "sdm", "--limit", 5, "--data", shared_data,
            "--out", tmp_path / "o")
    assert r.code == 0, r.err
    assert (tmp_path / "o" / "table2.md").is_file()
    line = fails(2, "k2q", "table2", "--in", pairs, "--model", "copynet")
    assert "argument --model: 'copynet' is neither a shipped model" in line
    assert "expected [NAME=]MODEL" in fails(2, "k2q", "table2", "--in", pairs, "--model", "copynet=")


def test_table1_missing_data_is_a_usage_error(fails, tmp_path):
    line = fails(2, "k2q", "table1", "--data", tmp_path / "none", "--out", tmp_path / "o")
    assert line == f"pysynth: error: argument --data: no such data directory {str(tmp_path / 'none')!r}"
