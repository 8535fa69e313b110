"""``pysynth index build`` / ``pysynth index search`` (alias ``pysynth search``): round trips
equal to the library's :class:`Collection`, stdin/stdout, atomic output, bad input."""
from __future__ import annotations

import gzip
import io
import json
import os
import shutil
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from _docs import mixed_docs

from pysynth.retrieval.collection import Collection

_docs = mixed_docs


QUERIES = [
    {"qid": 1, "text": "honda top speed"},
    {"qid": "q2", "text": "How fast is a Honda CRF 230?"},
    {"qid": "oov1", "text": "zyzzyva honda"},
    {"qid": "oov2", "text": "crf quux speed flarp flarp"},
    {"qid": "oov3", "text": "quux flarp"},  # only unknown words: no hits
    {"qid": "empty", "text": ""},
    {"qid": "punct", "text": "?!"},
    {"qid": "one", "text": "the"},
    {"qid": "rep", "text": "speed speed top"},
    {"qid": 99, "text": "caf\u00e9 230"},
]


def _write_jsonl(path: Path, rows, gz: bool = False) -> Path:
    data = "".join(json.dumps(r) + "\n" for r in rows).encode()
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


def _read_runs(path: Path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    from pysynth.cli import main

    d = tmp_path_factory.mktemp("cli")
    docs = _write_jsonl(d / "docs.jsonl.gz", _docs(), gz=True)
    queries = _write_jsonl(d / "q.jsonl", QUERIES)
    assert main(["index", "build", "--in", str(docs), "--out", str(d / "ix")]) == 0
    return d, d / "ix", queries


PARAMS = {
    "sdm": (["--mu", "300", "--weights", "0.8,0.15,0.05"], {"mu": 300.0, "weights": (0.8, 0.15, 0.05)}),
    "bm25": (["--k1", "1.2", "--b", "0.6"], {"k1": 1.2, "b": 0.6}),
}


@pytest.mark.parametrize("model", ["sdm", "bm25"])
def test_round_trip_equals_collection_search(cli, built, tmp_path, model):
    _, ix_dir, queries = built
    extra, kw = PARAMS[model]
    out = tmp_path / "runs.jsonl"
    r = cli("index", "search", "--index", ix_dir, "--in", queries, "--retrieval", model, "--k", 7, *extra, "--out", out)
    assert r.code == 0 and r.out == ""
    runs = _read_runs(out)
    res = Collection.load(ix_dir).search([q["text"] for q in QUERIES], model=model, k=7, **kw)
    assert [r["qid"] for r in runs] == [q["qid"] for q in QUERIES]
    for run, ids, scores in zip(runs, *res):
        assert run["hits"] == [[i, s] for i, s in zip(ids, scores)]  # exact float64, via JSON
        assert all(type(h[1]) is float for h in run["hits"])
    by = {r["qid"]: r["hits"] for r in runs}
    assert by["oov3"] == by["empty"] == by["punct"] == [] and by[99][0][0] == "caf\u00e9"
    assert sum(len(h) == 7 for h in by.values()) >= 4
    # the old spellings still work: `pysynth search`, --queries, --model sdm|bm25 (one warning each)
    old = tmp_path / "old.jsonl"
    r = cli("search", "--index", ix_dir, "--queries", queries, "--model", model, "--k", 7, *extra, "--out", old)
    assert r.code == 0 and old.read_bytes() == out.read_bytes()
    assert r.err_lines[:2] == ["pysynth: warning: --queries is deprecated; use --in",
                               f"pysynth: warning: --model {model} is deprecated here; use --retrieval {model}"]


def test_workers_and_batches_do_not_change_bytes(cli, built, tmp_path):
    _, ix_dir, queries = built
    outs = []
    for workers, batch in ((1, 10000), (2, 10000), (2, 3), (-1, 1)):
        out = tmp_path / f"r{workers}_{batch}.jsonl"
        assert cli("search", "--index", ix_dir, "--in", queries, "--workers", workers, "--batch-size", batch,
                   "--out", out).code == 0
        outs.append(out.read_bytes())
    assert outs[0] and all(o == outs[0] for o in outs)


def test_build_workers_and_rebuild_replace(cli, built, tmp_path):
    _, ix_dir, _ = built
    docs = _write_jsonl(tmp_path / "docs.jsonl", _docs())
    assert cli("index", "build", "--in", docs, "--out", tmp_path / "ix", "--workers", 2).code == 0
    files = sorted(str(p.relative_to(ix_dir)) for p in ix_dir.rglob("*"))
    assert sorted(str(p.relative_to(tmp_path / "ix")) for p in (tmp_path / "ix").rglob("*")) == files
    for name in files:
        if (ix_dir / name).is_file():
            assert (tmp_path / "ix" / name).read_bytes() == (ix_dir / name).read_bytes(), name
    _write_jsonl(docs, [{"id": "x", "text": "only one doc"}])  # building again replaces the index
    assert cli("index", "build", "--in", docs, "--out", tmp_path / "ix").code == 0
    assert Collection.load(tmp_path / "ix").id_json == ['"x"']
    assert sorted(p.name for p in tmp_path.iterdir()) == ["docs.jsonl", "ix"]


def test_stdin_stdout_and_gzip(cli, built, tmp_path, monkeypatch):
    _, ix_dir, queries = built
    cli("search", "--index", ix_dir, "--in", queries, "--out", tmp_path / "a.jsonl")
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(queries.read_bytes())))
    r = cli("search", "--index", ix_dir, "--in", "-", "--out", "-")
    assert r.code == 0 and r.out == (tmp_path / "a.jsonl").read_text(encoding="utf-8")
    assert "10 queries (3 without hits)" in r.err and "q/s" in r.err
    cli("search", "--index", ix_dir, "--in", queries, "--out", tmp_path / "a.jsonl.gz")
    assert gzip.decompress((tmp_path / "a.jsonl.gz").read_bytes()) == (tmp_path / "a.jsonl").read_bytes()
    # documents from stdin too
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(gzip.decompress((built[0] / "docs.jsonl.gz").read_bytes()))))
    assert cli("index", "build", "--in", "-", "--out", tmp_path / "ix2").code == 0
    assert (tmp_path / "ix2" / "doc_ids.jsonl").read_bytes() == (ix_dir / "doc_ids.jsonl").read_bytes()


def test_output_to_fifo_symlink_and_progress(cli, built, tmp_path, monkeypatch):
    _, ix_dir, queries = built
    cli("search", "--index", ix_dir, "--in", queries, "--out", tmp_path / "ref.jsonl")
    expect = (tmp_path / "ref.jsonl").read_bytes()
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    got = {}
    reader = threading.Thread(target=lambda: got.setdefault("data", fifo.read_bytes()), daemon=True)
    reader.start()
    assert cli("search", "--index", ix_dir, "--in", queries, "--out", fifo).code == 0  # not replaced
    reader.join(10)
    assert stat.S_ISFIFO(os.stat(fifo).st_mode) and got.get("data") == expect
    (tmp_path / "target.jsonl").write_text("old")
    (tmp_path / "link.jsonl").symlink_to("target.jsonl")
    monkeypatch.setattr("pysynth.cli.index._PROGRESS_EVERY_S", 0.0)
    link = tmp_path / "link.jsonl"
    r = cli("search", "--index", ix_dir, "--in", queries, "--batch-size", 4, "--out", link)
    assert link.is_symlink() and (tmp_path / "target.jsonl").read_bytes() == expect
    progress = r.err_lines  # 3 batches: 3 progress lines, 1 summary
    assert len(progress) == 4 and "8 queries, " in progress[1] and "q/s" in progress[1]
    assert "10 queries" in progress[3]
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["fifo", "link.jsonl", "ref.jsonl", "target.jsonl"]  # no temp file left


def test_subprocess_python_m_pysynth(cli, built, tmp_path, pysynth_cmd):
    _, ix_dir, queries = built
    py, env = pysynth_cmd
    argv = ["search", "--in", str(queries), "--retrieval", "bm25", "--k", "5", "--out"]
    p = subprocess.run([*py, *argv, "-", "--index", str(ix_dir)], env=env, capture_output=True, check=False)
    assert p.returncode == 0, p.stderr
    cli(*argv, tmp_path / "inproc.jsonl", "--index", ix_dir)
    assert p.stdout == (tmp_path / "inproc.jsonl").read_bytes()
    bad = tmp_path / "bad"
    shutil.copytree(ix_dir, bad)
    (bad / "vocab.txt").write_text("x\n")
    p = subprocess.run([*py, *argv, "-", "--index", str(bad)], env=env, capture_output=True, text=True, check=False)
    assert p.returncode == 1 and p.stderr.startswith(f"pysynth: error: --index {str(bad)!r}: ")
    assert len(p.stderr.splitlines()) == 1 and "Traceback" not in p.stderr


# ------------------------------------------------------------------ bad input
@pytest.mark.parametrize("rows, match", [
    ([{"id": "a", "text": "x"}, {"id": "b", "text": "y"}, {"id": "a", "text": "z"}], 'row 3: duplicate id "a"'),
    ([{"id": "a"}], "row 1: missing field 'text'"),
    ([{"id": "a", "text": None}], "row 1: 'text' must be a string, got null"),
    ([{"text": "x"}], "row 1: missing field 'id'"),
    ([{"id": 1.5, "text": "x"}], "'id' must be a string or an integer, got 1.5"),
    ([{"id": True, "text": "x"}], "'id' must be a string or an integer"),
    ([], "empty collection (no rows)"),
    ([{"id": 1, "text": "?!"}, {"id": 2, "text": ""}], "none of the 2 texts has a token"),
    (["not an object"], "row 1: expected a JSON object"),
])
def test_build_bad_docs_fail_with_status_1(fails, tmp_path, rows, match):
    docs = _write_jsonl(tmp_path / "d.jsonl", rows)
    line = fails(1, "index", "build", "--in", docs, "--out", tmp_path / "ix")
    assert line.startswith(f"pysynth: error: --in {str(docs)!r}") and match in line, line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.jsonl"]  # no index, no temp dir


def test_build_bad_files(fails, tmp_path):
    (tmp_path / "bad.jsonl").write_text('{"id": 1, "text": "a"}\n{"id": 2, "text": \n')
    assert "bad.jsonl:2: not valid JSON" in fails(1, "index", "build", "--in", tmp_path / "bad.jsonl", "--out", tmp_path / "ix")
    assert "argument --in: no such file" in fails(2, "index", "build", "--in", tmp_path / "missing.jsonl",
                                                  "--out", tmp_path / "ix")
    (tmp_path / "bad.jsonl.gz").write_bytes(gzip.compress(b'{"id": 1, "text": "a"}\n' * 50)[:-12])
    assert "--in" in fails(1, "index", "build", "--in", tmp_path / "bad.jsonl.gz", "--out", tmp_path / "ix")
    (tmp_path / "latin1.jsonl").write_bytes('{"id": 1, "text": "caf\xe9"}\n'.encode("latin-1"))
    assert "not UTF-8" in fails(1, "index", "build", "--in", tmp_path / "latin1.jsonl", "--out", tmp_path / "ix")
    good = _write_jsonl(tmp_path / "good.jsonl", [{"id": 1, "text": "a b"}])
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "keep.txt").write_text("mine")
    line = fails(2, "index", "build", "--in", good, "--out", tmp_path / "other")
    assert "argument --out" in line and "holds no pysynth store" in line
    assert (tmp_path / "other" / "keep.txt").exists()
    assert "argument --workers" in fails(2, "index", "build", "--in", good, "--out", tmp_path / "ix", "--workers", 0)
    assert not (tmp_path / "ix").exists()


@pytest.mark.parametrize("argv, match", [
    (["--k", "0"], "argument --k: must be an integer"),
    (["--k", "ten"], "argument --k"),
    (["--weights", "0.85,0.15"], "argument --weights: must be 3 comma-separated numbers"),
    (["--weights", "a,b,c"], "argument --weights"),
    (["--weights", "-1,1,1"], "argument --weights"),
    (["--weights", "0,0,0"], "argument --weights"),
    (["--weights", "nan,1,1"], "argument --weights"),
    (["--mu", "0"], "argument --mu: must be a finite number > 0"),
    (["--k1", "-1"], "argument --k1"),
    (["--b", "1.5"], "argument --b: must be a number in [0, 1]"),
    (["--workers", "0"], "argument --workers"),
    (["--batch-size", "0"], "argument --batch-size"),
    (["--retrieval", "tfidf"], "argument --retrieval: invalid choice"),
    (["--model", "tfidf"], "argument --model: this command takes no model; did you mean --retrieval"),
    (["--model", "sdm", "--retrieval", "bm25"], "argument --model: conflicts with --retrieval bm25"),
])
def test_search_bad_arguments(fails, built, tmp_path, argv, match):
    _, ix_dir, queries = built
    out = tmp_path / "r.jsonl"
    line = fails(2, "search", "--index", ix_dir, "--in", queries, "--out", out, *argv)
    assert match in line, line
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("rows, row, match", [
    ([{"qid": 1, "text": "a"}, {"qid": 2}], 7, "missing field 'text'"),
    ([{"qid": 1, "text": 5}], 6, "'text' must be a string, got 5"),
    ([{"text": "a"}], 6, "missing field 'qid'"),
    ([{"qid": None, "text": "a"}], 6, "'qid' must be a string or an integer, got null"),
])
def test_search_bad_queries_leave_no_output(fails, built, tmp_path, rows, row, match):
    _, ix_dir, _ = built
    good = [{"qid": i, "text": "honda speed"} for i in range(5)]
    q = _write_jsonl(tmp_path / "q.jsonl", good + rows)
    out = tmp_path / "out" / "r.jsonl"
    (tmp_path / "out").mkdir()
    line = fails(1, "search", "--index", ix_dir, "--in", q, "--batch-size", 2, "--out", out, only_line=False)
    assert line.startswith(f"pysynth: error: --in {str(q)!r} row {row}: {match}"), line
    assert not list((tmp_path / "out").iterdir())  # atomic: no partial file, no temp file


@pytest.mark.parametrize("damage, match", [
    (lambda d: None, None),
    (lambda d: (d / "meta.json").unlink(), "meta.json is missing"),
    (lambda d: (d / "vocab.txt").write_text("x\n"), "vocab.txt is truncated or corrupt"),
    (lambda d: (d / "index" / "positions.npy").write_bytes(b"x"), "positions.npy is truncated or corrupt"),
])
def test_search_corrupt_index_fails_with_status_1(cli, fails, built, tmp_path, damage, match):
    _, ix_dir, queries = built
    d = tmp_path / "ix"
    shutil.copytree(ix_dir, d)
    damage(d)
    argv = ["search", "--index", d, "--in", queries, "--out", tmp_path / "r.jsonl"]
    if match is None:
        assert cli(*argv).code == 0
        return
    line = fails(1, *argv)
    assert line.startswith(f"pysynth: error: --index {str(d)!r}: ") and match in line, line
    assert line.endswith("(rebuild it with `pysynth index build`)")
    assert not (tmp_path / "r.jsonl").exists()


def test_search_missing_inputs(fails, built, tmp_path):
    _, ix_dir, queries = built
    out = tmp_path / "r.jsonl"
    assert "argument --index: no such index directory" in fails(2, "search", "--index", tmp_path / "no", "--in", queries,
                                                                "--out", out)
    assert "argument --in: no such file" in fails(2, "search", "--index", ix_dir, "--in", tmp_path / "no",
                                                            "--out", out)
    (tmp_path / "d").mkdir()
    assert "argument --out: " in fails(2, "search", "--index", ix_dir, "--in", queries, "--out", tmp_path / "d")
    assert [p.name for p in tmp_path.iterdir()] == ["d"]
