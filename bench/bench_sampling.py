"""Benchmarks of the sampling stage (keyword query generation, Ding & Balog 2018 Alg. 1).

Workload (fixed seed, synthetic, shaped like the paper's WikiAnswers setting):
``BENCH_SAMPLING_N`` questions (default 1,000,000) over a 200,000-id Zipf(1.07)
vocabulary, 5-15 tokens each, the first token a question word (9 excluded ids); the
questions are grouped into paraphrase clusters of 1-30 questions (the cluster document is
its members concatenated, :meth:`Clusters.from_groups`), in shuffled order; cf/df/N
counted over the questions; P(s) = the seed pairs T0 on [3, 7]; m = 20 candidates per
question (Sect. 6.2).  Models: paraphrase + combination (alpha 0.5, beta 0.4: the paper's
best configuration) and baseline + combination (lambda 0.1).

Implementations (one group per model):
* ``cpp[w1]``, ``cpp[w2]``: the public call a user makes, ``model.generate(corpus, clusters,
  m=20, exclude=...)`` on a :class:`pysynth.text.Corpus` (its statistics counted once when it
  was made, not per call), compiled backend, 1 and 2 threads;
* ``cpp_ids[w1]``: the same call on plain (ids, offsets) without ``stats``: the statistics are
  counted over the questions on every call (compiled);
* ``numpy``: a vectorized NumPy implementation written here (same model, rejection rounds
  over all candidates at once, ``searchsorted`` on per-document prefix sums and on the
  collection's), on the first ``BENCH_SAMPLING_NUMPY_N`` questions (default 50,000), its
  throughput being size independent;
* ``python``: the pure-Python twin on ``BENCH_SAMPLING_TWIN_N`` questions (default 300).

Group ``sampling statistics``: counting cf/df over the 1M questions, compiled
(``collection_stats``) vs its NumPy twin (``np.bincount`` + ``np.unique``, what every
``generate`` call without ``stats`` ran before).

Run:  python -m pytest bench/bench_sampling.py --benchmark-only --benchmark-json=/tmp/sampling.json
Each benchmark records ``candidates_per_s``, ``terms_per_s`` and ``cpu_s`` (process CPU time
of one round; with one thread it is the per-core cost even on a busy machine).
"""
from __future__ import annotations

import os
import time

import numpy as np
import pytest

pytest.importorskip("pytest_benchmark")

from pysynth import _dispatch, text
from pysynth.sampling import Clusters, CollectionStats, KeywordModel
from pysynth.sampling import _reference as sampling_twin

N = int(os.environ.get("BENCH_SAMPLING_N", 1_000_000))
NUMPY_N = int(os.environ.get("BENCH_SAMPLING_NUMPY_N", 50_000))
TWIN_N = int(os.environ.get("BENCH_SAMPLING_TWIN_N", 300))
V = 200_000
M = 20
N_QWORDS = 9
MODELS = {
    "paraphrase-combination": KeywordModel("paraphrase", "combination", alpha=0.5, beta=0.4),
    "baseline-combination": KeywordModel("baseline", "combination", lam=0.1),
}


def make_corpus(n: int, seed: int = 2018):
    """Questions (ids, offsets), Clusters, CollectionStats and the exclusion mask."""
    rng = np.random.default_rng(seed)
    p = 1.0 / np.arange(1, V - N_QWORDS + 1) ** 1.07
    cum = np.cumsum(p)
    cum /= cum[-1]
    lens = rng.integers(5, 16, n)
    off = np.zeros(n + 1, np.int64)
    np.cumsum(lens, out=off[1:])
    ids = (N_QWORDS + np.searchsorted(cum, rng.random(int(off[-1])))).astype(np.int32)
    np.minimum(ids, V - 1, out=ids)
    ids[off[:-1]] = rng.integers(0, N_QWORDS, n)  # "what", "how", ... first
    sizes = rng.integers(1, 31, n // 15 + 10)
    groups = np.repeat(np.arange(sizes.size), sizes)[:n]
    rng.shuffle(groups)
    # Clusters.from_groups, vectorized: members concatenated in question order
    order = np.argsort(groups, kind="stable")
    n_rows = int(groups.max()) + 1
    row_len = np.bincount(groups, weights=lens, minlength=n_rows).astype(np.int64)
    c_off = np.zeros(n_rows + 1, np.int64)
    np.cumsum(row_len, out=c_off[1:])
    L = lens[order]
    take = np.repeat(off[:-1][order] - np.concatenate([[0], np.cumsum(L)[:-1]]), L) + np.arange(L.sum())
    clusters = Clusters(ids[take], c_off, groups.astype(np.int64))
    stats = CollectionStats.from_documents((ids, off), V)
    exclude = np.zeros(V, np.uint8)
    exclude[:N_QWORDS] = 1
    return (ids, off), clusters, stats, exclude


def head(corpus, n: int):
    (ids, off), clusters, stats, exclude = corpus
    sub = (ids[: off[n]], off[: n + 1])
    return sub, Clusters(clusters.values, clusters.offsets, clusters.index[:n]), stats, exclude


# --------------------------------------------------------------------------
# NumPy baseline: vectorized over all candidates (written for this benchmark)
# --------------------------------------------------------------------------
def _doc_models(ids, off, exclude, weight):
    """Per-row distinct terms with prefix sums of their weights, concatenated."""
    n = off.shape[0] - 1
    Vn = exclude.shape[0]
    row = np.repeat(np.arange(n, dtype=np.int64), np.diff(off))
    keep = exclude[ids] == 0
    key, cnt = np.unique(row[keep] * Vn + ids[keep], return_counts=True)
    r, t = key // Vn, key % Vn
    w = weight(t, cnt.astype(np.float64))
    tot = np.bincount(r, weights=w, minlength=n)
    zero = tot[r] == 0  # combination: all log(N/df) = 0 -> popular
    w = np.where(zero, cnt, w)
    tot = np.bincount(r, weights=w, minlength=n)
    indptr = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(r, minlength=n), out=indptr[1:])
    cum = np.cumsum(w)
    start = np.concatenate([[0.0], cum])[indptr[:-1]]
    return indptr, t.astype(np.int32), cum, start, tot


def numpy_generate(model: KeywordModel, questions, clusters, stats, exclude, m, seed=0):
    rng = np.random.default_rng(seed)
    q_ids, q_off = questions
    cf, df, N = stats.cf, stats.df, stats.n_docs
    if model.strategy == "popular":
        weight = lambda t, c: c  # noqa: E731
    elif model.strategy == "discriminative":
        weight = lambda t, c: 1.0 / cf[t]  # noqa: E731
    else:
        with np.errstate(divide="ignore"):
            idf = np.log(N / df)
        weight = lambda t, c: c * idf[t]  # noqa: E731
    wq, wc, wb = model.weights
    qd = _doc_models(q_ids, q_off, exclude, weight)
    if wc > 0:
        # one model per cluster row; questions without a usable row use q (C_q = q)
        cd = _doc_models(clusters.values, clusters.offsets, exclude, weight)
        c_row = clusters.index
        has = (c_row >= 0) & (np.diff(cd[0])[np.maximum(c_row, 0)] > 0)
    cfb = np.where(exclude == 0, cf, 0).astype(np.float64)
    cum_b = np.cumsum(cfb)
    # lengths: P(s | 1 <= s < |q|), else max(1, |q| - 1)
    p = model.length_dist
    L = np.diff(q_off)
    Lmax = int(L.max())
    S = np.arange(p.size)
    tab = np.where((S[None, :] >= 1) & (S[None, :] < np.arange(Lmax + 1)[:, None]), p[None, :], 0.0)
    tab_cum = np.cumsum(tab, axis=1)
    Lk = np.repeat(L, m)
    tot = tab_cum[Lk, -1]
    u = rng.random(Lk.size) * tot
    s = (tab_cum[Lk] <= u[:, None]).sum(1)
    s = np.where(tot > 0, np.minimum(s, p.size - 1), np.maximum(1, Lk - 1))
    K = Lk.size
    smax = int(s.max())
    out = np.full((K, smax), -1, np.int32)
    filled = np.zeros(K, np.int64)
    act = np.arange(K)
    qrow = act // m
    for _round in range(10 * smax + 50):
        if act.size == 0:
            break
        qi = qrow[act]
        u = rng.random(act.size)
        comp = (u >= wq).astype(np.int8) + (u >= wq + wc)
        if wb == 0:
            comp = np.minimum(comp, 1 if wc > 0 else 0)
        cand = np.empty(act.size, np.int32)
        sel = comp == 0
        if sel.any():
            indptr, terms, cum, start, tot_d = qd
            r = qi[sel]
            x = start[r] + rng.random(r.size) * tot_d[r]
            j = np.clip(np.searchsorted(cum, x, "right"), indptr[r], indptr[r + 1] - 1)
            cand[sel] = terms[j]
        sel = comp == 1
        if sel.any():
            r = qi[sel]
            if wc > 0:
                hc = has[r]
                jj = np.empty(r.size, np.int64)
                for d, rows, mask in ((cd, c_row[r], hc), (qd, r, ~hc)):
                    if mask.any():
                        indptr, terms, cum, start, tot_d = d
                        rr = rows[mask]
                        x = start[rr] + rng.random(rr.size) * tot_d[rr]
                        jj[mask] = terms[np.clip(np.searchsorted(cum, x, "right"), indptr[rr], indptr[rr + 1] - 1)]
                cand[sel] = jj
            else:
                indptr, terms, cum, start, tot_d = qd
                x = start[r] + rng.random(r.size) * tot_d[r]
                cand[sel] = terms[np.clip(np.searchsorted(cum, x, "right"), indptr[r], indptr[r + 1] - 1)]
        sel = comp == 2
        if sel.any():
            cand[sel] = np.searchsorted(cum_b, rng.random(int(sel.sum())) * cum_b[-1], "right")
        dup = (out[act] == cand[:, None]).any(1)
        ok = act[~dup]
        out[ok, filled[ok]] = cand[~dup]
        filled[ok] += 1
        act = act[filled[act] < s[act]]
    offsets = np.zeros(K + 1, np.int64)
    np.cumsum(filled, out=offsets[1:])
    ids = out[np.arange(smax)[None, :] < filled[:, None]]
    return ids, offsets


# --------------------------------------------------------------------------
# benchmarks
# --------------------------------------------------------------------------
@pytest.fixture(scope="module")
def corpus():
    return make_corpus(N)


@pytest.fixture(scope="module")
def text_corpus(corpus):
    """The questions as a text.Corpus (statistics counted once, here)."""
    (ids, off), _, _, _ = corpus
    return text.Corpus(ids, off, None, None, [f"t{i}" for i in range(V)])


def _record(benchmark, n_questions, result, cpu_s):
    ids, off = result
    wall = benchmark.stats.stats.min if benchmark.stats else None
    benchmark.extra_info.update(
        questions=n_questions, candidates=n_questions * M, terms=int(ids.size), cpu_s=cpu_s,
        candidates_per_s=n_questions * M / wall if wall else None,
        terms_per_s=ids.size / wall if wall else None,
        candidates_per_cpu_s=n_questions * M / cpu_s, terms_per_cpu_s=ids.size / cpu_s)


def _timed(fn):
    holder = {}

    def run():
        c0 = time.process_time()
        holder["out"] = fn()
        holder["cpu"] = min(holder.get("cpu", 1e18), time.process_time() - c0)
        return holder["out"]

    return run, holder


def _need_cpp():
    if "cpp" not in _dispatch.available("sampling"):
        pytest.skip("compiled extension not built")


@pytest.mark.parametrize("model_name", list(MODELS))
@pytest.mark.parametrize("workers", [1, 2], ids=["w1", "w2"])
def test_cpp(benchmark, corpus, text_corpus, model_name, workers):
    """The public call on a text.Corpus: nothing but validation and sampling per call."""
    _need_cpp()
    benchmark.group = f"sampling {model_name}"
    model = MODELS[model_name]
    _, cl, st, ex = corpus
    with _dispatch.force("cpp", "sampling"):
        run, h = _timed(lambda: model.generate(text_corpus, cl, m=M, seed=1, workers=workers, exclude=ex))
        benchmark.pedantic(run, rounds=int(os.environ.get("BENCH_ROUNDS_FAST", 5)), iterations=1)
        ref = model.generate(corpus[0], cl, st, m=M, seed=1, workers=1, exclude=ex)
    assert all(np.array_equal(a, b) for a, b in zip(h["out"], ref))  # same rows, any workers
    _record(benchmark, N, h["out"], h["cpu"])


@pytest.mark.parametrize("model_name", list(MODELS))
def test_cpp_ids(benchmark, corpus, model_name):
    """The same call on plain ids without stats: counted over the questions per call."""
    _need_cpp()
    benchmark.group = f"sampling {model_name}"
    model = MODELS[model_name]
    q, cl, _, ex = corpus
    with _dispatch.force("cpp", "sampling"):
        run, h = _timed(lambda: model.generate(q, cl, m=M, seed=1, workers=1, exclude=ex))
        benchmark.pedantic(run, rounds=int(os.environ.get("BENCH_ROUNDS_FAST", 5)), iterations=1)
    _record(benchmark, N, h["out"], h["cpu"])


@pytest.mark.parametrize("impl", ["cpp", "numpy"])
def test_statistics(benchmark, corpus, impl):
    """cf/df over the 1M questions: compiled vs the NumPy twin."""
    if impl == "cpp":
        _need_cpp()
    benchmark.group = "sampling statistics"
    (ids, off), _, st, _ = corpus
    fn = (_dispatch.available("sampling")["cpp"] if impl == "cpp" else sampling_twin).collection_stats
    run, h = _timed(lambda: fn(ids, off, V))
    benchmark.pedantic(run, rounds=int(os.environ.get("BENCH_ROUNDS_FAST", 5)) if impl == "cpp" else 1,
                       iterations=1)
    cf, df = h["out"]
    assert np.array_equal(cf, st.cf) and np.array_equal(df, st.df)
    wall = benchmark.stats.stats.min if benchmark.stats else None
    benchmark.extra_info.update(questions=N, cpu_s=h["cpu"], tokens=int(ids.size),
                                tokens_per_s=ids.size / wall if wall else None)


@pytest.mark.parametrize("model_name", list(MODELS))
def test_numpy(benchmark, corpus, model_name):
    benchmark.group = f"sampling {model_name}"
    model = MODELS[model_name]
    q, cl, st, ex = head(corpus, NUMPY_N)
    run, h = _timed(lambda: numpy_generate(model, q, cl, st, ex, M, seed=1))
    benchmark.pedantic(run, rounds=int(os.environ.get("BENCH_ROUNDS_SLOW", 3)), iterations=1)
    ids, off = h["out"]
    lens = np.diff(off)
    assert lens.min() >= 1 and np.all(ex[ids] == 0)
    _record(benchmark, NUMPY_N, h["out"], h["cpu"])


@pytest.mark.parametrize("model_name", list(MODELS))
def test_python_twin(benchmark, corpus, model_name):
    benchmark.group = f"sampling {model_name}"
    model = MODELS[model_name]
    q, cl, st, ex = head(corpus, TWIN_N)
    with _dispatch.force("python", "sampling"):
        run, h = _timed(lambda: model.generate(q, cl, st, m=M, seed=1, exclude=ex))
        benchmark.pedantic(run, rounds=1, iterations=1)
    _record(benchmark, TWIN_N, h["out"], h["cpu"])
