"""The K2Q pipeline (KQGM -> KQF -> TDF): semantics, determinism, resume after kills, bad input."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from pysynth import filtering, sampling
from pysynth._dispatch import available, force
from pysynth.data import k2q_demo
from pysynth.k2q.keywords import KeywordGenerator
from pysynth.k2q.synthesize import PRESETS, SynthesisConfig, synthesize
from pysynth.retrieval import Index

ROOT = Path(__file__).resolve().parents[2]
DEMO = k2q_demo()
SMALL = DEMO[:1500] + [r for r in DEMO if r["cluster_id"]][:500]


def _rows(path):
    return [json.loads(line) for line in open(path, encoding="utf-8")]


def _run(tmp_path, name="out.jsonl", rows=SMALL, **kw):
    kw.setdefault("progress", False)
    return synthesize(rows, tmp_path / name, **kw)


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """One uninterrupted run of the small input (JSON Lines, default configuration)."""
    d = tmp_path_factory.mktemp("ref")
    r = synthesize(SMALL, d / "out.jsonl", chunk_size=10_000, progress=False)
    return r, (d / "out.jsonl").read_bytes(), (d / "out.jsonl.meta.json").read_bytes()


def test_output_rows_and_semantics(reference):
    res, data, meta = reference
    rows = [json.loads(x) for x in data.decode().splitlines()]
    assert len(rows) == len(SMALL) - res.meta["rows"]["no_keywords"] == res.n_rows
    assert [r["id"] for r in rows] == sorted(r["id"] for r in rows)  # input order
    ranks = sorted(r["tdf_rank"] for r in rows)
    assert ranks == list(range(len(rows)))
    by_rank = sorted(rows, key=lambda r: r["tdf_rank"])
    prec = [r["precision"] for r in by_rank]
    assert prec == sorted(prec, reverse=True)  # TDF order: precision descending
    for a, b in zip(by_rank, by_rank[1:]):
        if a["precision"] == b["precision"]:
            assert a["id"] < b["id"]  # ties: input order
    assert all(0 <= r["rr"] <= 1 and r["keywords"] for r in rows)
    m = json.loads(meta)
    assert m["format"] == "pysynth.k2q.synthetic" and m["config"] == SynthesisConfig().as_dict()
    assert m["input"]["questions"] == len(SMALL) and len(m["input"]["sha256"]) == 64
    cov = [c for _, c in m["vocabulary_coverage"]]
    assert cov == sorted(cov) and cov[-1] == 1.0


def test_kqf_and_tdf_match_the_filters_on_full_result_lists(reference):
    """Recompute Eq. 7 and Eq. 8 from exhaustive top-N lists (Index.search + filtering.kqf)."""
    _, data, _ = reference
    rows = [json.loads(x) for x in data.decode().splitlines()]
    cfg = SynthesisConfig()
    gen = KeywordGenerator([], [r["question"] for r in SMALL], None, [r["cluster_id"] for r in SMALL],
                           phrases=True)
    ix = Index.build(np.asarray(gen.corpus.ids), np.asarray(gen.corpus.offsets), len(gen.vocab))
    model = sampling.KeywordModel(model=cfg.model, strategy=cfg.strategy, lam=cfg.lam, alpha=cfg.alpha,
                                  beta=cfg.beta)
    n = 300
    assert gen.samplable(model)[:n].all()
    cands = gen.order_like_questions(gen.generate_ids(model, m=cfg.m, seed=cfg.seed, subset=np.arange(n)),
                                     np.arange(n), cfg.m)
    hits = ix.search(cands.ids, cands.offsets, k=cfg.n_results)
    res = filtering.kqf(np.arange(n), hits.docs, m=cfg.m)
    kws = gen.decode(cands)
    chosen = [kws[i * cfg.m + c] for i, c in enumerate(res.chosen.tolist())]
    got = {r["id"]: r for r in rows}
    for i in range(n):
        assert got[SMALL[i]["id"]]["keywords"] == chosen[i]
        assert got[SMALL[i]["id"]]["rr"] == res.best_rr[i]
    # TDF precision of the chosen queries
    rows_ = np.arange(n) * cfg.m + res.chosen
    q = [cands.ids[cands.offsets[j]:cands.offsets[j + 1]].tolist() for j in rows_]
    top = ix.search(q, k=cfg.n_results).docs
    cl = np.asarray(gen.cluster_rows).copy()
    cl[cl < 0] = cl.max() + 1 + np.arange((cl < 0).sum())
    p = filtering.tdf_precision(top, questions=np.arange(n), clusters=cl)
    assert [got[SMALL[i]["id"]]["precision"] for i in range(n)] == p.tolist()


def test_output_independent_of_chunks_workers_and_backend(tmp_path, reference):
    _, data, meta = reference
    _run(tmp_path, "a.jsonl", chunk_size=333, workers=2)
    assert (tmp_path / "a.jsonl").read_bytes() == data
    assert (tmp_path / "a.jsonl.meta.json").read_bytes() == meta
    assert not (tmp_path / "a.jsonl.parts").exists()
    if "cpp" in available("retrieval"):
        cfg = SynthesisConfig(m=4, n_results=20)
        with force("python"):  # the Python twins of every compiled stage (slow: keep it small)
            _run(tmp_path, "py.jsonl", rows=SMALL[:150], chunk_size=70, config=cfg)
        _run(tmp_path, "cpp.jsonl", rows=SMALL[:150], chunk_size=150, config=cfg)
        assert (tmp_path / "py.jsonl").read_bytes() == (tmp_path / "cpp.jsonl").read_bytes()


def test_resume_after_the_process_dies_at_chunk_boundaries(tmp_path, reference):
    _, data, meta = reference
    out = tmp_path / "out.jsonl"
    for stop in (1, 3):
        code = ("import json, sys; from pysynth.k2q.synthesize import synthesize; "
                f"rows = json.load(open({str(tmp_path / 'in.json')!r})); "
                f"synthesize(rows, {str(out)!r}, chunk_size=400, progress=False, _stop_after_chunks={stop})")
        (tmp_path / "in.json").write_text(json.dumps(SMALL))
        p = subprocess.run([sys.executable, "-c", code], env=_env(), capture_output=True, text=True)
        assert p.returncode == 75, p.stderr
        assert len(list((tmp_path / "out.jsonl.parts").glob("part-*"))) == stop
        assert not out.exists()
    synthesize(SMALL, out, chunk_size=400, progress=False)
    assert out.read_bytes() == data and (tmp_path / "out.jsonl.meta.json").read_bytes() == meta


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    return env


@pytest.mark.slow
def test_sigkill_at_any_point_then_resume_is_byte_identical(tmp_path):
    """Kill the CLI with SIGKILL at several moments (statistics, chunks, final write); each resumed
    run must produce exactly the output of an uninterrupted run."""
    inp = tmp_path / "in.jsonl"
    inp.write_text("".join(json.dumps(r) + "\n" for r in DEMO[:8000]))
    ref = tmp_path / "ref.jsonl"
    cmd = [sys.executable, "-m", "pysynth", "k2q", "synthesize", "--in", str(inp), "--chunk-size", "500",
           "--quiet"]
    t = time.perf_counter()
    subprocess.run(cmd + ["--out", str(ref)], env=_env(), check=True)
    full = time.perf_counter() - t
    out = tmp_path / "out.jsonl"
    killed = 0
    for frac in (0.35, 0.55, 0.75, 0.9):
        p = subprocess.Popen(cmd + ["--out", str(out)], env=_env())
        try:
            p.wait(timeout=frac * full)
        except subprocess.TimeoutExpired:
            p.send_signal(signal.SIGKILL)
            p.wait()
            killed += 1
        if out.exists():
            break
    assert killed >= 1
    subprocess.run(cmd + ["--out", str(out)], env=_env(), check=True)
    assert out.read_bytes() == ref.read_bytes()
    assert (tmp_path / "out.jsonl.meta.json").read_bytes() == (tmp_path / "ref.jsonl.meta.json").read_bytes()
    assert not list(tmp_path.glob("*.tmp*")) and not (tmp_path / "out.jsonl.parts").exists()


def test_parts_of_another_run_are_refused(tmp_path):
    out = tmp_path / "o.jsonl"
    code = ("from pysynth.data import k2q_demo; from pysynth.k2q.synthesize import synthesize; "
            f"synthesize(k2q_demo()[:900], {str(out)!r}, chunk_size=300, progress=False, _stop_after_chunks=1)")
    assert subprocess.run([sys.executable, "-c", code], env=_env()).returncode == 75
    with pytest.raises(ValueError, match="different run"):
        synthesize(DEMO[:900], out, chunk_size=300, progress=False, config=SynthesisConfig(seed=1))
    with pytest.raises(ValueError, match="different run"):
        synthesize(DEMO[:900], out, chunk_size=200, progress=False)
    synthesize(DEMO[:900], out, chunk_size=300, progress=False, config=SynthesisConfig(seed=1), resume=False)
    assert len(_rows(out)) > 0


def test_presets_express_the_fig7_ablation(tmp_path):
    assert PRESETS["par-ph-kqf-tdf"] == SynthesisConfig(strategy="combination")
    rows = DEMO[:600]
    r1 = synthesize(rows, tmp_path / "b.jsonl", preset="baseline", progress=False)
    assert r1.meta["config"]["kqf"] is False and r1.meta["config"]["model"] == "baseline"
    got = _rows(tmp_path / "b.jsonl")
    assert all(r["precision"] is None for r in got)
    ranks = [r["tdf_rank"] for r in got]
    assert sorted(ranks) == list(range(len(got))) and ranks != sorted(ranks)  # seeded random order
    r2 = synthesize(rows, tmp_path / "k.jsonl", config=PRESETS["par-ph-kqf-tdf"].replace(keep=50), progress=False)
    got = _rows(tmp_path / "k.jsonl")
    assert len(got) == 50 == r2.n_rows and sorted(r["tdf_rank"] for r in got) == list(range(50))
    # KQF picks the best of m candidates: its mean reciprocal rank is at least that of one random candidate
    r3 = synthesize(rows, tmp_path / "p.jsonl", preset="par-ph", progress=False)
    r4 = synthesize(rows, tmp_path / "q.jsonl", preset="par-ph-kqf", progress=False)
    assert r4.meta["rows"]["mean_rr"] >= r3.meta["rows"]["mean_rr"]


def test_parquet_output_with_signature(tmp_path, reference):
    pq = pytest.importorskip("pyarrow.parquet")
    _, data, _ = reference
    _run(tmp_path, "o.parquet")
    t = pq.read_table(tmp_path / "o.parquet")
    meta = json.loads(t.schema.metadata[b"pysynth"])
    assert meta["config"] == SynthesisConfig().as_dict()
    want = [json.loads(x) for x in data.decode().splitlines()]
    got = t.to_pylist()
    assert [r["keywords"] for r in got] == [r["keywords"] for r in want]
    assert [r["tdf_rank"] for r in got] == [r["tdf_rank"] for r in want]
    # Parquet input too
    import pyarrow as pa

    pq.write_table(pa.Table.from_pylist([{"id": r["id"], "question": r["question"]} for r in DEMO[:50]]),
                   tmp_path / "in.parquet")
    assert _run(tmp_path, "from_parquet.jsonl", rows=tmp_path / "in.parquet").n_rows == 50


@pytest.mark.parametrize("rows, kw, match", [
    ([], {}, "questions is empty"),
    ([{"id": 1, "question": "a b"}, {"id": 1, "question": "c d"}], {}, "duplicate id 1"),
    ([{"text": "what"}], {}, "needs a string field 'question'"),
    ([{"question": "what is x", "id": 1.5}], {}, "'id' must be"),
    ([{"question": "what is x", "id": 1}], {"clusters": {"c": [1, 2]}}, "unknown question id 2"),
    ([{"question": "what is x", "id": 1, "cluster_id": "a"}], {"clusters": {"b": [1]}}, "has cluster_id 'a'"),
    ([{"question": "what is x"}], {"config": "x"}, "config must be a SynthesisConfig"),
    ([{"question": "what is x"}], {"chunk_size": 0}, "chunk_size must be"),
    ([{"question": "what is x"}], {"workers": 0}, "workers must be"),
    ([{"question": "what is x"}], {"preset": "nope"}, "preset must be one of"),
    ([{"question": "what is x"}], {"executor": "dask"}, "executor must be 'local' or 'ray'"),
    ([{"question": "what is x"}], {"ray_address": "auto"}, "ray_address"),
    ("/nonexistent/q.jsonl", {}, "no such file"),
])
def test_bad_input(tmp_path, rows, kw, match):
    with pytest.raises((ValueError, TypeError), match=match):
        synthesize(rows, tmp_path / "o.jsonl", progress=False, **kw)
    assert not (tmp_path / "o.jsonl").exists()


@pytest.mark.parametrize("kw, match", [
    ({"n_results": 0}, "n_results must be an integer in 1..100,000"),
    ({"m": 0}, "m must be an integer in 1..1,000"),
    ({"keep": -1}, "keep must be None or an integer >= 0"),
    ({"strategy": "best"}, "strategy must be"),
    ({"weights": (1, 2)}, "weights must be 3 numbers"),
    ({"retrieval": "tfidf"}, "retrieval must be"),
])
def test_bad_config(kw, match):
    with pytest.raises(ValueError, match=match):
        SynthesisConfig(**kw)


def test_question_without_keywords_is_dropped(tmp_path):
    rows = [{"id": 0, "question": "what?"}, {"id": 1, "question": "who invented ritz crackers"},
            {"id": 2, "question": "who invented the telephone"}]
    r = _run(tmp_path, rows=rows, config=SynthesisConfig(phrases=False, m=3))
    got = _rows(tmp_path / "out.jsonl")
    assert r.meta["rows"]["no_keywords"] == 1 and [g["id"] for g in got] == [1, 2]


def test_keyword_terms_follow_question_order():
    gen = KeywordGenerator([], ["who invented ritz crackers", "what is ritz", "where are crackers made"],
                           None, ["a", "a", None], phrases=False)
    v = {t: i for i, t in enumerate(gen.vocab)}
    # candidates of question 0 (m=2): sampled orders, one with a paraphrase-only term ("made" is not in q0)
    c = sampling.Candidates(np.array([v["crackers"], v["ritz"], v["made"], v["invented"], v["crackers"]], np.int32),
                            np.array([0, 2, 5]))
    out = gen.order_like_questions(c, np.array([0]), 2)
    assert gen.decode(out) == ["ritz crackers", "invented crackers made"]
    assert SynthesisConfig().term_order == "question"
    with pytest.raises(ValueError, match="term_order"):
        SynthesisConfig(term_order="alpha")


@pytest.mark.parametrize("N", [1, 7, 100])
def test_tdf_by_ranks_equals_tdf_over_search_lists(N):
    """The pipeline's Eq. 8 (rank_of per paraphrase, postings-union sizes, search for big clusters)
    equals filtering.tdf_precision over exhaustive Index.search lists."""
    from pysynth.k2q import synthesize as S

    rng = np.random.default_rng(3)
    docs = [rng.integers(0, 60, size=rng.integers(1, 8)).tolist() for _ in range(400)]
    ix = Index.build(docs, vocab_size=60)
    sizes = [1, 2, 3, 9, 10, 15] + [5] * 14
    clusters = np.concatenate([np.repeat(np.arange(20), sizes), np.arange(1000, 1000 + 400 - sum(sizes))])
    clusters = rng.permutation(clusters).astype(np.int64)
    qs = rng.choice(400, size=150, replace=False).astype(np.int64)
    kw = [rng.choice(60, size=rng.integers(1, 5), replace=False).tolist() for _ in qs]
    kw_off = np.concatenate([[0], np.cumsum([len(k) for k in kw])]).astype(np.int64)
    kw_ids = np.concatenate([np.asarray(k, np.int32) for k in kw])
    best = ix.rank_of(kw_ids, kw_off, targets=qs, n=N).astype(np.int64)
    got = S._tdf_precision(ix, filtering, kw_ids, kw_off, qs, best, clusters, N, {"model": "sdm"}, 1)
    want = filtering.tdf_precision(ix.search(kw_ids, kw_off, k=N).docs, questions=qs, clusters=clusters)
    assert got.tolist() == want.tolist()
