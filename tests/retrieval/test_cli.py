"""``pysynth index build`` / ``pysynth search``: round trips, exactness, OOV terms, bad input."""

from __future__ import annotations

import gzip
import io
import json
import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from pysynth import text
from pysynth.cli import main
from pysynth.retrieval import Index
from pysynth.retrieval import _reference as ref
from pysynth.retrieval.cli import CLI_META, load

ROOT = Path(__file__).resolve().parents[2]
WORDS = "honda crf top speed what is the how fast a civic engine oil change car of 230 in".split()


def _docs():
    rng = np.random.default_rng(3)
    rows = []
    for i in range(60):
        n = int(rng.integers(2, 10))
        words = [WORDS[min(int(x), len(WORDS) - 1)] for x in rng.zipf(1.3, n) - 1]
        # mixed id types, echoed as given; some upper case and punctuation for the tokenizer
        rows.append(
            {"id": i * 10 if i % 3 == 0 else f"doc-{i}", "text": " ".join(words).capitalize() + "?"}
        )
    rows.append({"id": "caf\u00e9", "text": "Café crème, 230 CRF-230!"})
    rows.append({"id": "empty", "text": "--"})  # no token: indexed, never retrieved
    return rows


QUERIES = [
    {"qid": 1, "text": "honda top speed"},
    {"qid": "q2", "text": "How fast is a Honda CRF 230?"},
    {"qid": "oov1", "text": "zyzzyva honda"},  # unknown word first
    {"qid": "oov2", "text": "crf quux speed flarp flarp"},  # unknown words between / repeated
    {"qid": "oov3", "text": "quux flarp"},  # only unknown words: no hits
    {"qid": "empty", "text": ""},  # empty text: no hits
    {"qid": "punct", "text": "?!"},  # no token: no hits
    {"qid": "one", "text": "the"},
    {"qid": "rep", "text": "speed speed top"},
    {"qid": 99, "text": "caf\u00e9 230"},
]


def _write_jsonl(path: Path, rows, gz: bool = False) -> Path:
    data = "".join(json.dumps(r) + "\n" for r in rows).encode()
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


def _run(*argv) -> int:
    return main([str(a) for a in argv])


def _fails(capsys, *argv) -> str:
    """Run the CLI; it must exit with status 2 and a one-line message, no traceback."""
    with pytest.raises(SystemExit) as e:
        _run(*argv)
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    last = err.splitlines()[-1]  # the message; progress lines may come before it
    assert last.startswith("pysynth")
    return last


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    d = tmp_path_factory.mktemp("cli")
    docs = _write_jsonl(d / "docs.jsonl.gz", _docs(), gz=True)
    queries = _write_jsonl(d / "q.jsonl", QUERIES)
    assert _run("index", "build", "--in", docs, "--out", d / "ix") == 0
    return d, d / "ix", queries


def _read_runs(path: Path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _token_ids(cix, texts):
    """Independent tokenization: text.tokenize + the vocabulary file; unknown -> oov_id."""
    return [[cix.terms.get(w, cix.oov_id) for w in toks] for toks in text.tokenize(texts)]


PARAMS = {
    "sdm": (
        ["--mu", "300", "--weights", "0.8,0.15,0.05"],
        dict(mu=300.0, weights=(0.8, 0.15, 0.05)),
    ),
    "bm25": (["--k1", "1.2", "--b", "0.6"], dict(k1=1.2, b=0.6)),
}


@pytest.mark.parametrize("model", ["sdm", "bm25"])
def test_round_trip_equals_index_search(built, tmp_path, model):
    _, ix_dir, queries = built
    out = tmp_path / "runs.jsonl"
    extra, kw = PARAMS[model]
    argv = ["--model", model, "--k", 7, *extra]
    assert _run("search", "--index", ix_dir, "--queries", queries, *argv, "--out", out) == 0
    runs = _read_runs(out)
    cix = load(str(ix_dir))
    docs_rows = _docs()
    ix = Index.load(ix_dir)
    qids = _token_ids(cix, [q["text"] for q in QUERIES])
    docs, scores, counts = ix.search(qids, model=model, k=7, dtype=np.float64, **kw)
    assert [r["qid"] for r in runs] == [q["qid"] for q in QUERIES]
    for i, r in enumerate(runs):
        c = int(counts[i])
        assert r["hits"] == [
            [docs_rows[d]["id"], s] for d, s in zip(docs[i, :c].tolist(), scores[i, :c].tolist())
        ]
        assert all(type(h[1]) is float for h in r["hits"])
    by = {r["qid"]: r["hits"] for r in runs}
    assert by["oov3"] == by["empty"] == by["punct"] == []
    assert by["oov1"] and by["oov2"] and by[99][0][0] == "caf\u00e9"
    assert sum(len(h) == 7 for h in by.values()) >= 4
    # ordering: score descending, then doc number ascending
    num = {r["id"]: n for n, r in enumerate(docs_rows)}
    for hits in by.values():
        keys = [(-s, num[doc]) for doc, s in hits]
        assert keys == sorted(keys)


def test_index_directory_contents(built):
    _, ix_dir, _ = built
    cix = load(str(ix_dir))
    rows = _docs()
    assert cix.tokenizer == "rouge" and cix.index.n_docs == len(rows)
    assert cix.index.vocab_size == cix.oov_id + 1 == len(cix.terms) + 1
    assert cix.index.cf[cix.oov_id] == 0 and cix.index.df[cix.oov_id] == 0
    assert [json.loads(s) for s in cix.doc_ids] == [r["id"] for r in rows]
    # queries are tokenized exactly as the documents were indexed
    a = cix.index.arrays
    for dnum, r in enumerate(rows):
        toks = a["doc_tokens"][a["doc_offsets"][dnum] : a["doc_offsets"][dnum + 1]].tolist()
        q, qo = cix.query_ids([r["text"]])
        assert q.tolist() == toks and qo.tolist() == [0, len(toks)]
    meta = json.loads((ix_dir / CLI_META).read_text())
    assert meta["format"] == "pysynth.retrieval.cli" and meta["version"] == 1
    assert not [p for p in ix_dir.parent.iterdir() if p.name.startswith(".ix.")]  # no temp dir


@pytest.mark.parametrize("model", ["sdm", "bm25"])
def test_oov_terms_score_as_never_occurring_terms(built, tmp_path, model):
    """Every unknown word maps to the one reserved id; scores equal those of the Python
    reference with a distinct never-occurring term per unknown word (float64, exactly)."""
    _, ix_dir, _ = built
    cix = load(str(ix_dir))
    qs = [
        {"qid": "a", "text": "zyzzyva honda"},
        {"qid": "b", "text": "crf quux speed flarp flarp"},
        {"qid": "c", "text": "honda quux flarp top speed zyzzyva"},
        {"qid": "d", "text": "quux"},
        {"qid": "e", "text": "the xylo"},
    ]
    out = tmp_path / "runs.jsonl"
    extra, kw = PARAMS[model]
    q = _write_jsonl(tmp_path / "q.jsonl", qs)
    _run("search", "--index", ix_dir, "--queries", q, "--model", model, "--k", 1000, *extra,
         "--out", out)
    runs = _read_runs(out)
    # the reference index over the same documents, with 3 extra ids that occur nowhere
    V = len(cix.terms)
    a = cix.index.arrays
    unseen = {"zyzzyva": V, "quux": V + 1, "flarp": V + 2, "xylo": V + 3}
    refix = ref.build_index(np.asarray(a["doc_tokens"]), np.asarray(a["doc_offsets"]), V + 4, 1)
    toks = text.tokenize([q["text"] for q in qs])
    assert all(any(w in unseen for w in t) for t in toks)
    ids = [[cix.terms[w] if w in cix.terms else unseen[w] for w in t] for t in toks]
    off = np.cumsum([0] + [len(t) for t in ids])
    p = dict(mu=2500.0, weights=(0.85, 0.10, 0.05), k1=1.5, b=0.75) | kw
    flat = np.array([t for row in ids for t in row], np.int32)
    docs, scores, counts = ref.search(
        refix, flat, off, model, 1000, p["mu"], p["weights"], p["k1"], p["b"], 1, True
    )
    n_found = 0
    for i, r in enumerate(runs):
        c = int(counts[i])
        pairs = zip(docs[i, :c].tolist(), scores[i, :c].tolist())
        expect = [[json.loads(cix.doc_ids[d]), s] for d, s in pairs]
        assert r["hits"] == expect  # exact float64 equality, via JSON
        n_found += c
    assert runs[3]["hits"] == [] and n_found > 20
    if model == "sdm":  # the unseen terms do change SDM scores (they are not dropped)
        kept = cix.index.search(
            [[cix.terms["honda"]]], k=1000, dtype=np.float64, mu=p["mu"], weights=p["weights"]
        )
        assert runs[0]["hits"][0][1] != kept.scores[0, 0]


def test_workers_and_batches_do_not_change_bytes(built, tmp_path):
    _, ix_dir, queries = built
    outs = []
    for workers, batch in ((1, 10000), (2, 10000), (2, 3), (-1, 1)):
        out = tmp_path / f"r{workers}_{batch}.jsonl"
        argv = ["--workers", workers, "--batch-size", batch, "--out", out]
        _run("search", "--index", ix_dir, "--queries", queries, *argv)
        outs.append(out.read_bytes())
    assert outs[0] and all(o == outs[0] for o in outs)


def test_build_workers_and_rebuild_replace(built, tmp_path):
    _, ix_dir, _ = built
    docs = _write_jsonl(tmp_path / "docs.jsonl", _docs())
    _run("index", "build", "--in", docs, "--out", tmp_path / "ix", "--workers", 2)
    files = sorted(p.name for p in ix_dir.iterdir())
    assert sorted(p.name for p in (tmp_path / "ix").iterdir()) == files
    for name in files:
        assert (tmp_path / "ix" / name).read_bytes() == (ix_dir / name).read_bytes(), name
    # building again over an existing index replaces it atomically
    _write_jsonl(docs, [{"id": "x", "text": "only one doc"}])
    _run("index", "build", "--in", docs, "--out", tmp_path / "ix")
    assert load(str(tmp_path / "ix")).doc_ids == ['"x"']
    assert sorted(p.name for p in tmp_path.iterdir()) == ["docs.jsonl", "ix"]


def test_stdin_stdout_and_gzip_output(built, tmp_path, monkeypatch, capsys):
    _, ix_dir, queries = built
    _run("search", "--index", ix_dir, "--queries", queries, "--out", tmp_path / "a.jsonl")
    capsys.readouterr()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(queries.read_bytes())))
    _run("search", "--index", ix_dir, "--queries", "-", "--out", "-")
    cap = capsys.readouterr()
    assert cap.out == (tmp_path / "a.jsonl").read_text(encoding="utf-8")
    assert "10 queries (3 without hits)" in cap.err and "q/s" in cap.err
    _run("search", "--index", ix_dir, "--queries", queries, "--out", tmp_path / "a.jsonl.gz")
    assert (
        gzip.decompress((tmp_path / "a.jsonl.gz").read_bytes())
        == (tmp_path / "a.jsonl").read_bytes()
    )


def test_output_to_fifo_symlink_and_progress(built, tmp_path, monkeypatch, capsys):
    _, ix_dir, queries = built
    _run("search", "--index", ix_dir, "--queries", queries, "--out", tmp_path / "ref.jsonl")
    expect = (tmp_path / "ref.jsonl").read_bytes()
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    got = {}
    reader = threading.Thread(target=lambda: got.setdefault("data", fifo.read_bytes()), daemon=True)
    reader.start()
    _run("search", "--index", ix_dir, "--queries", queries, "--out", fifo)  # not replaced
    reader.join(10)
    assert stat.S_ISFIFO(os.stat(fifo).st_mode) and got.get("data") == expect
    (tmp_path / "target.jsonl").write_text("old")
    (tmp_path / "link.jsonl").symlink_to("target.jsonl")
    monkeypatch.setattr("pysynth.retrieval.cli._PROGRESS_EVERY_S", 0.0)
    capsys.readouterr()
    link = tmp_path / "link.jsonl"
    _run("search", "--index", ix_dir, "--queries", queries, "--batch-size", 4, "--out", link)
    assert link.is_symlink() and (tmp_path / "target.jsonl").read_bytes() == expect
    progress = capsys.readouterr().err.splitlines()  # 3 batches: 3 progress lines, 1 summary
    assert len(progress) == 4 and "8 queries, " in progress[1] and "q/s" in progress[1]
    assert "ETA" in progress[1] and "10 queries" in progress[3]
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["fifo", "link.jsonl", "ref.jsonl", "target.jsonl"]  # no temp file left


def test_subprocess_python_m_pysynth(built, tmp_path):
    _, ix_dir, queries = built
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = tmp_path / "sub.jsonl"
    argv = ["search", "--queries", str(queries), "--model", "bm25", "--k", "5", "--out"]
    cmd = [sys.executable, "-m", "pysynth", *argv]
    p = subprocess.run([*cmd, str(out), "--index", str(ix_dir)], env=env, capture_output=True,
                       text=True, cwd=tmp_path, check=False)
    assert p.returncode == 0, p.stderr
    _run(*argv, tmp_path / "inproc.jsonl", "--index", ix_dir)
    assert out.read_bytes() == (tmp_path / "inproc.jsonl").read_bytes()
    p = subprocess.run([*cmd, str(out), "--index", str(tmp_path / "nope")], env=env,
                       capture_output=True, text=True, check=False)
    assert p.returncode == 2 and p.stderr.startswith("pysynth: --index")
    assert "Traceback" not in p.stderr


# ------------------------------------------------------------------ bad input
@pytest.mark.parametrize(
    "rows, match",
    [
        (
            [{"id": "a", "text": "x"}, {"id": "b", "text": "y"}, {"id": "a", "text": "z"}],
            'line 3: duplicate id "a" (first on line 1)',
        ),
        ([{"id": "a"}], "line 1: missing field 'text'"),
        ([{"id": "a", "text": None}], "line 1: 'text' must be a string, got null"),
        ([{"id": "a", "text": ["x"]}], "'text' must be a string"),
        ([{"text": "x"}], "line 1: missing field 'id'"),
        ([{"id": 1.5, "text": "x"}], "'id' must be a string or an integer, got 1.5"),
        ([{"id": True, "text": "x"}], "'id' must be a string or an integer"),
        ([], "empty corpus (no rows)"),
        (
            [{"id": 1, "text": "?!"}, {"id": 2, "text": ""}],
            "empty corpus (none of the 2 texts has a token",
        ),
        (["not an object"], "line 1: expected a JSON object"),
    ],
)
def test_build_bad_docs(tmp_path, capsys, rows, match):
    docs = _write_jsonl(tmp_path / "d.jsonl", rows)
    err = _fails(capsys, "index", "build", "--in", docs, "--out", tmp_path / "ix")
    assert err.startswith("pysynth: --in ") and match in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.jsonl"]  # no index, no temp dir


def test_build_bad_files(tmp_path, capsys):
    (tmp_path / "bad.jsonl").write_text('{"id": 1, "text": "a"}\n{"id": 2, "text": \n')
    assert "line 2: not valid JSON" in _fails(
        capsys, "index", "build", "--in", tmp_path / "bad.jsonl", "--out", tmp_path / "ix"
    )
    assert "cannot read" in _fails(
        capsys, "index", "build", "--in", tmp_path / "missing.jsonl", "--out", tmp_path / "ix"
    )
    (tmp_path / "bad.jsonl.gz").write_bytes(gzip.compress(b'{"id": 1, "text": "a"}\n' * 50)[:-12])
    assert "--in" in _fails(
        capsys, "index", "build", "--in", tmp_path / "bad.jsonl.gz", "--out", tmp_path / "ix"
    )
    (tmp_path / "latin1.jsonl").write_bytes('{"id": 1, "text": "caf\xe9"}\n'.encode("latin-1"))
    assert "not UTF-8" in _fails(
        capsys, "index", "build", "--in", tmp_path / "latin1.jsonl", "--out", tmp_path / "ix"
    )
    good = _write_jsonl(tmp_path / "good.jsonl", [{"id": 1, "text": "a b"}])
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "keep.txt").write_text("mine")
    err = _fails(capsys, "index", "build", "--in", good, "--out", tmp_path / "other")
    assert "--out" in err and "holds no pysynth index" in err
    assert (tmp_path / "other" / "keep.txt").exists()
    err = _fails(capsys, "index", "build", "--in", good, "--out", tmp_path / "ix", "--workers", 0)
    assert "argument --workers" in err


@pytest.mark.parametrize(
    "argv, match",
    [
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
        (["--model", "tfidf"], "argument --model"),
    ],
)
def test_search_bad_arguments(built, tmp_path, capsys, argv, match):
    _, ix_dir, queries = built
    out = tmp_path / "r.jsonl"
    err = _fails(capsys, "search", "--index", ix_dir, "--queries", queries, "--out", out, *argv)
    assert match in err, err
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize(
    "rows, line, match",
    [
        ([{"qid": 1, "text": "a"}, {"qid": 2}], 7, "missing field 'text'"),
        ([{"qid": 1, "text": 5}], 6, "'text' must be a string, got 5"),
        ([{"text": "a"}], 6, "missing field 'qid'"),
        ([{"qid": None, "text": "a"}], 6, "'qid' must be a string or an integer, got null"),
    ],
)
def test_search_bad_queries_leave_no_output(built, tmp_path, capsys, rows, line, match):
    _, ix_dir, _ = built
    good = [{"qid": i, "text": "honda speed"} for i in range(5)]
    q = _write_jsonl(tmp_path / "q.jsonl", good + rows)
    out = tmp_path / "out" / "r.jsonl"
    argv = ["--queries", q, "--batch-size", 2, "--out", out]
    err = _fails(capsys, "search", "--index", ix_dir, *argv)
    assert err.startswith("pysynth: --queries ") and f"line {line}: {match}" in err, err
    assert not list((tmp_path / "out").iterdir())  # atomic: no partial file, no temp file


def _copy_index(src: Path, dst: Path) -> Path:
    dst.mkdir()
    for p in src.iterdir():
        (dst / p.name).write_bytes(p.read_bytes())
    return dst


@pytest.mark.parametrize(
    "damage, match",
    [
        (lambda d: None, None),
        (lambda d: (d / CLI_META).unlink(), "cli.json is missing"),
        (lambda d: (d / CLI_META).write_text("{"), "cli.json is corrupt"),
        (lambda d: (d / "meta.json").unlink(), "meta.json is missing"),
        (lambda d: (d / "vocab.txt").write_text("x\n"), "vocab.txt is truncated or corrupt"),
        (
            lambda d: (d / "doc_ids.jsonl").write_bytes((d / "doc_ids.jsonl").read_bytes()[:-3]),
            "doc_ids.jsonl is truncated or corrupt",
        ),
        (
            lambda d: (d / "positions.npy").write_bytes((d / "positions.npy").read_bytes()[:-8]),
            "positions.npy is truncated or corrupt",
        ),
        (
            lambda d: _edit_json(d / CLI_META, version=2),
            "index directory format version 2; this pysynth reads version 1",
        ),
        (lambda d: _edit_json(d / "meta.json", version=7), "holds index format version 7"),
        (lambda d: _edit_json(d / CLI_META, n_terms=3, oov_id=3), "have"),
    ],
)
def test_search_missing_corrupt_or_other_version_index(built, tmp_path, capsys, damage, match):
    _, ix_dir, queries = built
    d = _copy_index(ix_dir, tmp_path / "ix")
    damage(d)
    argv = ["search", "--index", d, "--queries", queries, "--out", tmp_path / "r.jsonl"]
    if match is None:  # the undamaged copy works
        assert _run(*argv) == 0
        return
    err = _fails(capsys, *argv)
    assert err.startswith(f"pysynth: --index {str(d)!r}") and match in err, err
    assert not (tmp_path / "r.jsonl").exists()


def test_search_missing_inputs(built, tmp_path, capsys):
    _, ix_dir, queries = built
    out = tmp_path / "r.jsonl"
    err = _fails(capsys, "search", "--index", tmp_path / "no", "--queries", queries, "--out", out)
    assert "pysynth: --index" in err and "no such index directory" in err
    err = _fails(capsys, "search", "--index", ix_dir, "--queries", tmp_path / "no", "--out", out)
    assert "pysynth: --queries" in err and "cannot read" in err
    assert not list(tmp_path.iterdir())


def _edit_json(path: Path, **kw):
    meta = json.loads(path.read_text())
    meta.update(kw)
    path.write_text(json.dumps(meta))
